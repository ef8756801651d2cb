/*
** check_keep.c - kept big blocks (cs_alloc.c): a freed block on huge pages
** is kept, its pages advised MADV_FREE, and handed to the next request it
** fits, so a query's scratch does not fault in fresh pages every time.
**
** What must hold, and is checked here: a kept block comes back for a
** request of its size (same address, counted in `reused`), never for one
** it would waste more than half of; the byte limit and the sixteen slots are
** never exceeded, the oldest block going first; a limit of 0 lets go of
** everything at once and keeps nothing after; small blocks and blocks not
** on huge pages are never kept; an injected allocation failure on a reuse
** is a NULL with the block still kept; cs_mem_live counts kept blocks as
** freed, so the leak checks of the other suites keep their meaning; and
** threads taking and returning blocks at once never share one (each fills
** its block with its own pattern and finds it intact before freeing).
** A reused block's contents are undefined: each test writes what it reads.
*/
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_write_internal.h"
#include "unit_util.h"

#define MIB ((uint64_t)1 << 20)

static cs_mem_keep state(void) {
  cs_mem_keep k;
  cs_mem_keep_state(&k);
  return k;
}

/* Each test starts from an empty keep with the given limit. */
static void keep_reset(uint64_t limit) {
  cs_mem_keep_bytes(0);
  cs_mem_keep_bytes(limit);
  cs_mem_keep k = state();
  ck_assert_uint_eq(k.blocks, 0);
  ck_assert_uint_eq(k.bytes, 0);
  ck_assert_uint_eq(k.limit, limit);
}

/* Writes every page of p's n bytes, then checks them. */
static void fill_and_check(uint8_t *p, uint64_t n, uint8_t tag) {
  for (uint64_t i = 0; i < n; i += 4096) p[i] = (uint8_t)(tag + i / 4096);
  p[n - 1] = tag;
  for (uint64_t i = 0; i < n; i += 4096) ck_assert_uint_eq(p[i], (uint8_t)(tag + i / 4096));
  ck_assert_uint_eq(p[n - 1], tag);
}

START_TEST(test_a_freed_block_comes_back_for_its_size) {
  keep_reset(512 * MIB);
  long live = cs_mem_live();
  uint8_t *p = cs_mem_big_alloc(8 * MIB);
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq((uintptr_t)p % (2 * MIB), 0);
  fill_and_check(p, 8 * MIB, 1);
  cs_mem_big_free(p);
  ck_assert_int_eq(cs_mem_live(), live);
  cs_mem_keep k = state();
  ck_assert_uint_eq(k.blocks, 1);
  ck_assert_uint_eq(k.bytes, 8 * MIB);
  uint64_t reused = k.reused;
  /* 7 MiB + 1 rounds up to the same 8 MiB span. */
  uint8_t *q = cs_mem_big_alloc(7 * MIB + 1);
  ck_assert_ptr_eq(q, p);
  ck_assert_int_eq(cs_mem_live(), live + 1);
  k = state();
  ck_assert_uint_eq(k.blocks, 0);
  ck_assert_uint_eq(k.bytes, 0);
  ck_assert_uint_eq(k.reused, reused + 1);
  fill_and_check(q, 7 * MIB + 1, 7);
  cs_mem_big_free(q);
  ck_assert_int_eq(cs_mem_live(), live);
  cs_mem_keep_bytes(0);
}
END_TEST

START_TEST(test_a_block_is_not_lent_for_less_than_half_its_size) {
  keep_reset(512 * MIB);
  uint8_t *big = cs_mem_big_alloc(64 * MIB);
  ck_assert_ptr_nonnull(big);
  cs_mem_big_free(big);
  uint8_t *small = cs_mem_big_alloc(4 * MIB);
  ck_assert_ptr_ne(small, big);
  ck_assert_uint_eq(state().blocks, 1);
  uint8_t *half = cs_mem_big_alloc(32 * MIB);
  ck_assert_ptr_eq(half, big);
  /* Larger than any kept block: fresh. */
  cs_mem_big_free(small);
  uint8_t *larger = cs_mem_big_alloc(6 * MIB);
  ck_assert_ptr_ne(larger, small);
  ck_assert_uint_eq(state().blocks, 1);
  cs_mem_big_free(half);
  cs_mem_big_free(larger);
  ck_assert_uint_eq(state().blocks, 3);
  ck_assert_uint_eq(state().bytes, (64 + 4 + 6) * MIB);
  cs_mem_keep_bytes(0);
}
END_TEST

START_TEST(test_the_limit_and_the_slots_hold_and_the_oldest_goes_first) {
  keep_reset(16 * MIB);
  uint8_t *b[3];
  for (int i = 0; i < 3; i++) ck_assert_ptr_nonnull(b[i] = cs_mem_big_alloc(8 * MIB));
  for (int i = 0; i < 3; i++) {
    cs_mem_big_free(b[i]);
    ck_assert_uint_le(state().bytes, 16 * MIB);
  }
  cs_mem_keep k = state();
  ck_assert_uint_eq(k.blocks, 2);
  /* b[0] went first: the two kept are b[1] and b[2]. */
  uint8_t *x = cs_mem_big_alloc(8 * MIB), *y = cs_mem_big_alloc(8 * MIB);
  ck_assert((x == b[1] && y == b[2]) || (x == b[2] && y == b[1]));
  cs_mem_big_free(x);
  cs_mem_big_free(y);
  /* A block over the limit is freed, not kept, and leaves the others. */
  uint8_t *huge = cs_mem_big_alloc(32 * MIB);
  cs_mem_big_free(huge);
  ck_assert_uint_eq(state().blocks, 2);

  keep_reset(512 * MIB);
  uint8_t *c[18];
  for (int i = 0; i < 18; i++) ck_assert_ptr_nonnull(c[i] = cs_mem_big_alloc(2 * MIB));
  for (int i = 0; i < 18; i++) cs_mem_big_free(c[i]);
  k = state();
  ck_assert_uint_eq(k.blocks, 16);
  ck_assert_uint_eq(k.bytes, 32 * MIB);
  /* Lowering the limit lets go of the oldest down to it. */
  cs_mem_keep_bytes(5 * MIB);
  k = state();
  ck_assert_uint_eq(k.blocks, 2);
  ck_assert_uint_eq(k.bytes, 4 * MIB);
  uint8_t *d0 = cs_mem_big_alloc(2 * MIB), *d1 = cs_mem_big_alloc(2 * MIB);
  ck_assert((d0 == c[16] && d1 == c[17]) || (d0 == c[17] && d1 == c[16]));
  cs_mem_big_free(d0);
  cs_mem_big_free(d1);
  cs_mem_keep_bytes(0);
}
END_TEST

START_TEST(test_a_limit_of_zero_keeps_nothing) {
  keep_reset(512 * MIB);
  uint8_t *p = cs_mem_big_alloc(4 * MIB);
  cs_mem_big_free(p);
  ck_assert_uint_eq(state().blocks, 1);
  cs_mem_keep_bytes(0);
  cs_mem_keep k = state();
  ck_assert_uint_eq(k.blocks, 0);
  ck_assert_uint_eq(k.bytes, 0);
  uint64_t reused = k.reused;
  long live = cs_mem_live();
  for (int i = 0; i < 3; i++) {
    uint8_t *q = cs_mem_big_alloc(4 * MIB);
    ck_assert_ptr_nonnull(q);
    fill_and_check(q, 4 * MIB, 3);
    cs_mem_big_free(q);
  }
  ck_assert_uint_eq(state().blocks, 0);
  ck_assert_uint_eq(state().reused, reused);
  ck_assert_int_eq(cs_mem_live(), live);
}
END_TEST

START_TEST(test_small_blocks_and_blocks_off_huge_pages_are_never_kept) {
  keep_reset(512 * MIB);
  long live = cs_mem_live();
  uint8_t *small = cs_mem_big_alloc(2 * MIB - 1);
  uint8_t *plain = cs__mem_big_alloc(8 * MIB, false);
  ck_assert_ptr_nonnull(small);
  ck_assert_ptr_nonnull(plain);
  fill_and_check(small, 2 * MIB - 1, 5);
  fill_and_check(plain, 8 * MIB, 9);
  cs_mem_big_free(small);
  cs_mem_big_free(plain);
  ck_assert_uint_eq(state().blocks, 0);
  ck_assert_int_eq(cs_mem_live(), live);
  cs_mem_big_free(NULL);
  cs_mem_keep_bytes(0);
}
END_TEST

START_TEST(test_a_failed_reuse_is_null_and_the_block_stays_kept) {
  keep_reset(512 * MIB);
  uint8_t *p = cs_mem_big_alloc(4 * MIB);
  cs_mem_big_free(p);
  long live = cs_mem_live();
  cs_mem_fail_after(1, false);
  uint8_t *q = cs_mem_big_alloc(4 * MIB);
  cs_mem_fail_after(0, false);
  ck_assert_ptr_null(q);
  ck_assert_int_eq(cs_mem_live(), live);
  ck_assert_uint_eq(state().blocks, 1);
  q = cs_mem_big_alloc(4 * MIB);
  ck_assert_ptr_eq(q, p);
  cs_mem_big_free(q);
  /* A fresh block's failure (nothing kept fits) is a NULL too. */
  cs_mem_fail_after(1, false);
  ck_assert_ptr_null(cs_mem_big_alloc(64 * MIB));
  cs_mem_fail_after(0, false);
  ck_assert_int_eq(cs_mem_live(), live);
  cs_mem_keep_bytes(0);
}
END_TEST

/* Threads taking and returning blocks at once. */
typedef struct churn_arg {
  uint32_t seed;
  int failures;
} churn_arg;

static void *churn(void *v) {
  churn_arg *a = v;
  ut_rng r = ut_rng_seed(a->seed);
  uint8_t *held[3] = {NULL, NULL, NULL};
  uint64_t size[3] = {0, 0, 0};
  uint8_t tag[3] = {0, 0, 0};
  for (int it = 0; it < 300; it++) {
    int i = (int)(ut_rng_below(&r, 3));
    if (held[i]) {
      for (uint64_t off = 0; off < size[i]; off += 4096)
        if (held[i][off] != (uint8_t)(tag[i] + off / 4096)) a->failures++;
      cs_mem_big_free(held[i]);
      held[i] = NULL;
    } else {
      size[i] = (2 + ut_rng_below(&r, 7)) * MIB + ut_rng_below(&r, 4096);
      tag[i] = (uint8_t)ut_rng_u64(&r);
      if (!(held[i] = cs_mem_big_alloc(size[i]))) {
        a->failures++;
        continue;
      }
      for (uint64_t off = 0; off < size[i]; off += 4096) held[i][off] = (uint8_t)(tag[i] + off / 4096);
    }
  }
  for (int i = 0; i < 3; i++) cs_mem_big_free(held[i]);
  return NULL;
}

START_TEST(test_threads_never_share_a_block) {
  keep_reset(64 * MIB);
  long live = cs_mem_live();
  uint64_t reused = state().reused;
  enum { N = 4 };
  pthread_t th[N];
  churn_arg args[N];
  for (int i = 0; i < N; i++) {
    args[i] = (churn_arg){(uint32_t)(4100 + i), 0};
    ck_assert_int_eq(pthread_create(&th[i], NULL, churn, &args[i]), 0);
  }
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(args[i].failures == 0, "thread %d (seed %u): %d blocks changed by another holder", i,
                  (unsigned)args[i].seed, args[i].failures);
  }
  ck_assert_int_eq(cs_mem_live(), live);
  cs_mem_keep k = state();
  ck_assert_uint_le(k.bytes, 64 * MIB);
  ck_assert_uint_le(k.blocks, 16);
  ck_assert_uint_gt(k.reused, reused);
  cs_mem_keep_bytes(0);
}
END_TEST

static Suite *keep_suite(void) {
  Suite *s = suite_create("keep");
  TCase *tc = tcase_create("kept blocks");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_a_freed_block_comes_back_for_its_size);
  tcase_add_test(tc, test_a_block_is_not_lent_for_less_than_half_its_size);
  tcase_add_test(tc, test_the_limit_and_the_slots_hold_and_the_oldest_goes_first);
  tcase_add_test(tc, test_a_limit_of_zero_keeps_nothing);
  tcase_add_test(tc, test_small_blocks_and_blocks_off_huge_pages_are_never_kept);
  tcase_add_test(tc, test_a_failed_reuse_is_null_and_the_block_stays_kept);
  tcase_add_test(tc, test_threads_never_share_a_block);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(keep_suite()); }
