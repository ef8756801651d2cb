/*
** check_live_run.c - store/cs_delete.c's cs__dels_live_run: the runs of a
** record's live rows, the one walk compaction and colstore_export copy a
** record with deletions by.
**
** The reference is the walk both callers had before, a bit at a time: skip
** the deleted bits, take the live ones up to the next deleted bit or the
** record's end.  The walk under test reads the vector a 64-bit word at a
** time, so what can go wrong is at the words' edges: a run that crosses a
** word, a record that ends inside a word (the bits past the rows are zero,
** which reads as live), a start inside a word.  So the bitmaps are the
** edges on purpose (all live, all deleted, alternating both ways, one bit
** of each kind at every place of the first words, runs of every length
** around 64) and random ones of every density and of random run lengths,
** over record sizes on and off word and line boundaries.  Each bitmap is
** allocated exactly as the format lays it out (cs__delvec_bitmap_bytes:
** whole 64-byte lines, zero past the rows), so under ASan a read past the
** vector is an error.  The walk is also resumed from every position of
** small records, which the contract allows.  The seed is COLSTORE_SEED's
** when set, printed on failure.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_store_internal.h"
#include "unit_util.h"

static uint64_t test_seed(void) {
  const char *s = getenv("COLSTORE_SEED");
  uint64_t seed = s && *s ? strtoull(s, NULL, 0) : 0x11e5u;
  return seed ? seed : 1; /* 0 means a fixed pattern to compare_walks */
}

/* A zeroed bitmap of n rows, laid out as the format lays it out. */
static uint8_t *bitmap_new(uint64_t n) {
  uint8_t *b = calloc(1, cs__delvec_bitmap_bytes(n));
  ck_assert_ptr_nonnull(b);
  return b;
}

static bool bit(const uint8_t *b, uint64_t i) { return (b[i >> 3] >> (i & 7)) & 1; }
static void set_bit(uint8_t *b, uint64_t i) { b[i >> 3] |= (uint8_t)(1u << (i & 7)); }

/* The reference: the bit-at-a-time walk, from row at; the next run as
** [*from, *end), false when none is left.  NULL: nothing deleted. */
static bool naive_run(const uint8_t *b, uint64_t n, uint64_t at, uint64_t *from, uint64_t *end) {
  uint64_t i = at;
  while (i < n && b && bit(b, i)) i++;
  if (i >= n) return false;
  *from = i;
  while (i < n && !(b && bit(b, i))) i++;
  *end = i;
  return true;
}

/* Walks bitmap b of n rows from row start with both walks and fails at the
** first difference, naming what and the seed (0: a fixed pattern, none).
** Returns the runs seen. */
static uint64_t compare_walks(const uint8_t *b, uint64_t n, uint64_t start, const char *what, uint64_t seed) {
  char tag[48] = "";
  if (seed) snprintf(tag, sizeof tag, " (COLSTORE_SEED=%llu)", (unsigned long long)seed);
  uint64_t at = start, from = 0, ref_at = start, ref_from = 0, ref_end = 0, runs = 0, live = 0;
  for (;;) {
    bool ref = naive_run(b, n, ref_at, &ref_from, &ref_end);
    bool got = cs__dels_live_run(b, n, &at, &from);
    ck_assert_msg(got == ref, "%s, n=%llu, from row %llu, run %llu: walk says %s, reference %s%s", what,
                  (unsigned long long)n, (unsigned long long)start, (unsigned long long)runs,
                  got ? "another run" : "no more", ref ? "another run" : "no more", tag);
    if (!ref) break;
    ck_assert_msg(from == ref_from && at == ref_end,
                  "%s, n=%llu, from row %llu, run %llu: walk [%llu, %llu), reference [%llu, %llu)%s", what,
                  (unsigned long long)n, (unsigned long long)start, (unsigned long long)runs,
                  (unsigned long long)from, (unsigned long long)at, (unsigned long long)ref_from,
                  (unsigned long long)ref_end, tag);
    live += at - from;
    ref_at = ref_end, runs++;
  }
  /* The reference itself against a count of the clear bits. */
  uint64_t want = 0;
  for (uint64_t i = start; i < n; i++) want += !(b && bit(b, i));
  ck_assert_msg(live == want, "%s, n=%llu: the runs hold %llu rows, %llu are live%s", what,
                (unsigned long long)n, (unsigned long long)live, (unsigned long long)want, tag);
  return runs;
}

/* Record sizes around the word (64 rows) and line (512 rows) edges. */
static const uint64_t sizes[] = {0,   1,   2,   7,   8,   9,   63,  64,   65,   127,  128,
                                 129, 191, 200, 511, 512, 513, 640, 1000, 1023, 4097, 70000};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

START_TEST(test_fixed_patterns_match_the_bitwise_walk) {
  for (size_t k = 0; k < N_SIZES; k++) {
    uint64_t n = sizes[k];
    /* No vector: one run, the whole record (none when it is empty). */
    ck_assert_uint_eq(compare_walks(NULL, n, 0, "no vector", 0), n ? 1 : 0);
    uint8_t *b = bitmap_new(n);
    ck_assert_uint_eq(compare_walks(b, n, 0, "all live", 0), n ? 1 : 0);
    for (uint64_t i = 0; i < n; i++) set_bit(b, i);
    ck_assert_uint_eq(compare_walks(b, n, 0, "all deleted", 0), 0);
    for (int odd = 0; odd < 2; odd++) {
      memset(b, 0, cs__delvec_bitmap_bytes(n));
      for (uint64_t i = (uint64_t)odd; i < n; i += 2) set_bit(b, i);
      compare_walks(b, n, 0, odd ? "alternating, odd rows deleted" : "alternating, even rows deleted", 0);
    }
    /* One deleted row, then one live row among deleted ones, at every
    ** place of the first three words and the record's last rows. */
    for (uint64_t p = 0; p < n; p++) {
      if (p >= 192 && p + 130 < n) continue;
      memset(b, 0, cs__delvec_bitmap_bytes(n));
      set_bit(b, p);
      compare_walks(b, n, 0, "one deleted row", 0);
      for (uint64_t i = 0; i < n; i++) set_bit(b, i);
      b[p >> 3] &= (uint8_t) ~(1u << (p & 7));
      ck_assert_uint_eq(compare_walks(b, n, 0, "one live row", 0), 1);
    }
    /* Runs of every length around a word, alternating deleted and live, so
    ** they start and end at every offset within the words they cross. */
    for (uint64_t len = 1; len <= 130 && n; len += (len < 70 ? 1 : 13)) {
      memset(b, 0, cs__delvec_bitmap_bytes(n));
      for (uint64_t i = 0; i < n; i++)
        if ((i / len) & 1) set_bit(b, i);
      compare_walks(b, n, 0, "runs of one length", 0);
    }
    free(b);
  }
}
END_TEST

START_TEST(test_random_bitmaps_match_the_bitwise_walk) {
  uint64_t seed = test_seed();
  ut_rng r = ut_rng_seed(seed);
  for (int trial = 0; trial < 3000; trial++) {
    uint64_t n = ut_rng_below(&r, 3) ? ut_rng_below(&r, 1500) : sizes[ut_rng_below(&r, N_SIZES)];
    uint8_t *b = bitmap_new(n);
    const char *what;
    if (trial % 2) {
      /* Independent bits at a density from 0 to 1. */
      double p = ut_rng_unit(&r);
      for (uint64_t i = 0; i < n; i++)
        if (ut_rng_unit(&r) < p) set_bit(b, i);
      what = "random bits";
    } else {
      /* Runs of random lengths up to a few words, deleted and live in turn. */
      bool dead = ut_rng_below(&r, 2);
      for (uint64_t i = 0; i < n; dead = !dead) {
        uint64_t len = 1 + ut_rng_below(&r, ut_rng_below(&r, 2) ? 8 : 300);
        for (uint64_t j = i; j < i + len && j < n; j++)
          if (dead) set_bit(b, j);
        i += len;
      }
      what = "random runs";
    }
    compare_walks(b, n, 0, what, seed);
    /* Resumed inside the record, as a caller may. */
    if (n) compare_walks(b, n, ut_rng_below(&r, n + 1), what, seed);
    if (n <= 200)
      for (uint64_t start = 0; start <= n; start++) compare_walks(b, n, start, what, seed);
    free(b);
  }
}
END_TEST

static Suite *live_run_suite(void) {
  Suite *s = suite_create("live_run");
  TCase *tc = tcase_create("walk");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fixed_patterns_match_the_bitwise_walk);
  tcase_add_test(tc, test_random_bitmaps_match_the_bitwise_walk);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(live_run_suite()); }
