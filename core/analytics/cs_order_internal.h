/*
** cs_order_internal.h - the switch points of cs_order.c, as knobs that the
** unit tests and bench/bench_order.c turn; nothing else does.
**
** The ordering kernel picks a path by the shape of the key (counting sort,
** top-k, hashing, dictionary, radix sort); each switch point was chosen by
** measurement and is a constant in production.  The tests lower them to
** reach every path with a few hundred rows (a 65,537-value dictionary is
** not a unit test), and the benchmark sets them to force one path against
** another on the same input.  Process-wide and unsynchronised: set them
** only while no ordering kernel runs.
*/
#ifndef CS_ORDER_INTERNAL_H
#define CS_ORDER_INTERNAL_H

#include <stdint.h>

typedef struct cs__order_tuning {
  uint64_t topk_ratio; /* top-k in one pass when limit * topk_ratio <= rows; 0 = never */
  int count_bits;      /* counting sort for one segment of at most this many bits; -1 = never */
  uint32_t hash_cap;   /* GROUP/DISTINCT hash up to this many groups; 0 = never */
  uint32_t dict_cap;   /* TEXT/BLOB dictionary up to this many values; 0 = never */
  unsigned digit_bits; /* radix digit width, 8..13 */
  int huge_pages;      /* 1: advise transparent huge pages on large scratch blocks; 0: do not */
  uint64_t msd_min;    /* radix sorts of at least this many elements start MSD; 0 = never */
  uint64_t cache_n;    /* MSD buckets of at most this many elements finish by LSD */
  uint32_t hash_probe; /* hashing gives up on nearly distinct keys past this many groups; 0 = never */
  uint64_t team_min;   /* a top-k over a range of at least this many rows runs on the thread team */
} cs__order_tuning;

/* The compiled defaults. */
void cs__order_tuning_default(cs__order_tuning *out);
/* Sets the knobs (NULL: the defaults); out-of-range values are clamped. */
void cs__order_tuning_set(const cs__order_tuning *t);
void cs__order_tuning_get(cs__order_tuning *out);

/* The path the last cs_order_rows call on this thread took, for tests and
** the benchmark: "none" (nothing to reorder), "topk", "counting",
** "hash", "radix" (one segment), "segments"; with "+dict" or "+wide" when
** a TEXT/BLOB key was dictionary-encoded or sorted by its bytes, and
** "+redo" when the zone maps did not hold.  A static string. */
const char *cs__order_last_path(void);
/* The records the last pruned top-k over a range (cs_order_range, path
** "topk+range") on this thread read and skipped by their zone maps. */
void cs__order_last_prune(uint64_t *visited, uint64_t *skipped);

#endif /* CS_ORDER_INTERNAL_H */
