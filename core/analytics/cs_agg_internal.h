/*
** cs_agg_internal.h - what cs_agg.c shares with cs_agg_codes.c (the
** dictionary codes of a TEXT/BLOB column, cached on the snapshot), and the
** switch points of cs_agg.c, as knobs that the unit tests and
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

/* ---- keys of up to 16 bytes as two words (cs_agg.c's dictionary per
** record and cs_agg_codes.c's per-record build share them) */

/* The bytes of the first and second word a key of n bytes keeps, by
** min(n, 16) (cs_agg_codes.c): a table, because computing them branched on n. */
extern const uint64_t cs__agg_keep[17][2];

/* A key below 16 bytes keeps its length in the last byte of its second
** word (a padding byte there), so that a slot's hash tells "a" from "a\0";
** a key of 16 bytes or more is told apart by its full length. */
static inline uint64_t cs__agg_w1(uint64_t n, uint64_t w1) { return n < 16 ? w1 | (n << 56) : w1; }

/* The slot of a key of two words in a table of 2^bits slots: one multiply. */
static inline uint64_t cs__agg_home(uint64_t w0, uint64_t w1, unsigned bits) {
  return ((w0 ^ ((w1 << 29) | (w1 >> 35))) * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

/* ---- dictionary codes (cs_agg_codes.c) */

/* Most distinct values (NULL one of them) a record may have to be coded:
** a code is one byte. */
#define CS__AGG_CODE_VALUES 256u
/* null_code of a record without NULL. */
#define CS__AGG_CODE_NO_NULL UINT32_MAX

/* One record's codes of one TEXT/BLOB column; immutable once published. */
typedef struct cs__agg_rcodes {
  const uint8_t *code; /* [the record's rows] each position's value index; in this block */
  const uint8_t *
      *vp;      /* [n_vals] each value's first byte, into the store's data (NULL for NULL); in this block */
  uint64_t *vn; /* [n_vals] each value's length in bytes; in this block */
  uint32_t n_vals;    /* distinct values, NULL included, <= CS__AGG_CODE_VALUES */
  uint32_t null_code; /* NULL's index, or CS__AGG_CODE_NO_NULL */
} cs__agg_rcodes;

/* A store column's codes, record by record; opaque. */
typedef struct cs__agg_codes cs__agg_codes;

/* An empty set of codes for a store of n_records records (NULL when out
** of memory). */
cs__agg_codes *cs__agg_codes_new(uint64_t n_records);
void cs__agg_codes_free(cs__agg_codes *c);
/* Record r's codes of TEXT/BLOB column col of s, built the first time it
** is asked for and kept in c (which must belong to s); NULL when the
** record has more than CS__AGG_CODE_VALUES distinct values, when c would
** hold more than max_bytes with it, or when out of memory.  Thread-safe:
** racing builders both build, one copy is kept. */
const cs__agg_rcodes *cs__agg_codes_record(cs__agg_codes *c, const cs_store *s, uint32_t col, uint64_t r,
                                           uint64_t max_bytes);
/* Bytes c holds (its records' codes and values). */
uint64_t cs__agg_codes_bytes(const cs__agg_codes *c);
/* Blocks c holds, itself included (for the tests' leak accounting). */
long cs__agg_codes_blocks(const cs__agg_codes *c);
/* Blocks the aggregate cache of s holds (per-record statistics and
** dictionary codes; 0 before any): they belong to the store, not to an
** aggregate, and are freed with it.  For the tests' leak accounting. */
long cs__agg_cache_blocks(const cs_store *s);

#endif /* CS_AGG_INTERNAL_H */
