/*
** cs_agg_internal.h - the switch points of cs_agg.c, as knobs that the unit tests and
** bench/bench_agg.c turn; nothing else does.
**
** The grouped aggregation picks a kernel by the keys (direct index over
** packed integer keys, a hash of the packed code, a hash of one TEXT/BLOB
** key fronted by a dictionary per record, a hash of key tuples) and, per
** piece of rows, a masked pass per group or a scatter.  Each switch point was chosen by measurement (the
** numbers are in docs/performance.md) and is a constant in production.  The
** tests move them to reach every path with a few thousand rows, and the
** benchmark to time one path against another on the same input.
** Process-wide and unsynchronised: set them only while no aggregate runs.
*/
#ifndef CS_AGG_INTERNAL_H
#define CS_AGG_INTERNAL_H

#include <stdint.h>

typedef struct cs_store cs_store;

typedef struct cs__agg_tuning {
  uint64_t
      direct_max; /* direct index up to this many packed key codes (and not far above the rows); 0 = never */
  uint32_t few_groups; /* one masked pass per group up to this many groups, else a scatter; 0 = never */
  uint32_t
      dict_max; /* one TEXT/BLOB key: distinct keys a record's dictionary holds (<= AGG_DICT_MAX); 0 = none */
  uint32_t
      lane_groups; /* few groups, up to this many (<= AGG_LANE_GROUPS), may be scattered into lanes; 0 = never */
  uint64_t
      codes_bytes; /* one TEXT/BLOB key: a store column's dictionary codes hold at most this many bytes; 0 = none */
} cs__agg_tuning;

/* The compiled defaults. */
void cs__agg_tuning_default(cs__agg_tuning *out);
/* Sets the knobs (NULL: the defaults). */
void cs__agg_tuning_set(const cs__agg_tuning *t);
void cs__agg_tuning_get(cs__agg_tuning *out);

/* Blocks the aggregate cache of s holds (per-record statistics, and the
** kernels' dictionary codes, kernels/cs_codes.c; 0 before any): they
** belong to the store, not to an aggregate, and are freed with it.  For
** the tests' leak accounting. */
long cs__agg_cache_blocks(const cs_store *s);

#endif /* CS_AGG_INTERNAL_H */
