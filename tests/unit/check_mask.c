/*
** check_mask.c - the byte-mask kernels: cs_mask_count, cs_mask_to_rows and
** cs_gather_mask.
**
** Each is compared with the obvious loop over mask bytes (a byte is
** selected when it is nonzero, whatever its value, so the masks here hold
** 0x80, 0xFF and 0x7F as well as 1).  The masks cover the cases the
** word-at-a-time kernels treat differently: all-zero and all-one words,
** mixed words, alternating bytes, long runs, tails shorter than a word,
** and, for the gather, records so small that record boundaries fall inside
** mask words.  Output buffers are allocated to exactly the selected count,
** so the sanitizer build catches the branchless compaction storing past
** the end.  Threaded runs (1, 2 and 4 threads, above
** CS_PARALLEL_MIN_ELEMENTS) must agree byte for byte.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

/* The random stores (ut_kstore over ut_fixed_cols) and the naive gather
** reference (ut_ref_gather) are unit_util's, shared with check_gather. */

/* ----------------------------------------------------------------- masks */

enum { M_ZERO, M_ONES, M_ALT01, M_ALT10, M_SPARSE, M_HALF, M_DENSE, M_RUNS, M_WORDS, M_COUNT };
static const char *const mask_names[] = {"all-zero",       "all-ones",     "alternating 01",
                                         "alternating 10", "density 0.01", "density 0.5",
                                         "density 0.99",   "runs",         "word-aligned blocks"};

/* A selected byte: any nonzero value. */
static uint8_t sel_byte(ut_rng *r) {
  static const uint8_t v[] = {1, 1, 1, 0x80, 0xFF, 0x7F, 0x40, 2};
  return v[ut_rng_below(r, 8)];
}

static void mask_fill(uint8_t *m, uint64_t n, int kind, ut_rng *r) {
  uint64_t i = 0;
  switch (kind) {
    case M_ZERO: memset(m, 0, n); break;
    case M_ONES:
      for (; i < n; i++) m[i] = sel_byte(r);
      break;
    case M_ALT01:
      for (; i < n; i++) m[i] = (i & 1) ? sel_byte(r) : 0;
      break;
    case M_ALT10:
      for (; i < n; i++) m[i] = (i & 1) ? 0 : sel_byte(r);
      break;
    case M_SPARSE:
      for (; i < n; i++) m[i] = ut_rng_below(r, 100) == 0 ? sel_byte(r) : 0;
      break;
    case M_HALF:
      for (; i < n; i++) m[i] = ut_rng_below(r, 2) ? sel_byte(r) : 0;
      break;
    case M_DENSE:
      for (; i < n; i++) m[i] = ut_rng_below(r, 100) ? sel_byte(r) : 0;
      break;
    case M_RUNS:
      while (i < n) {
        uint64_t len = 1 + ut_rng_below(r, 100);
        bool on = ut_rng_below(r, 2);
        for (uint64_t j = 0; j < len && i < n; j++, i++) m[i] = on ? sel_byte(r) : 0;
      }
      break;
    default: /* whole words of ones or zeros, then a mixed one */
      for (; i < n; i++)
        m[i] = ((i / 8) % 3 == 0)   ? sel_byte(r)
               : ((i / 8) % 3 == 1) ? 0
                                    : (uint8_t)(ut_rng_below(r, 2) ? 1 : 0);
      break;
  }
}

static uint64_t naive_count(const uint8_t *m, uint64_t n) {
  uint64_t c = 0;
  for (uint64_t i = 0; i < n; i++) c += m[i] != 0;
  return c;
}

/* ----------------------------------------------------------------- count */

START_TEST(test_mask_count_and_rows_match_naive_every_length) {
  ut_rng r = ut_rng_seed(401);
  uint8_t *m = malloc(4200);
  ck_assert_ptr_nonnull(m);
  for (int kind = 0; kind < M_COUNT; kind++) {
    for (uint64_t n = 0; n < 4200; n += (n < 80 ? 1 : 97)) {
      mask_fill(m, n, kind, &r);
      uint64_t want = naive_count(m, n);
      /* The kernels must not read past n: poison what follows. */
      uint8_t *exact = malloc(n + 1);
      ck_assert_ptr_nonnull(exact);
      memcpy(exact, m, n);
      uint64_t got = cs_mask_count(exact, n);
      if (got != want)
        ck_abort_msg("seed 401 %s n %" PRIu64 ": count %" PRIu64 ", expected %" PRIu64, mask_names[kind], n,
                     got, want);
      uint64_t base = ut_rng_below(&r, 2) ? 0 : ut_rng_u64(&r) >> 2;
      uint64_t *rows = malloc(want * 8 + 1);
      ck_assert_ptr_nonnull(rows);
      uint64_t k = cs_mask_to_rows(exact, n, base, rows);
      if (k != want)
        ck_abort_msg("seed 401 %s n %" PRIu64 ": to_rows gave %" PRIu64 ", expected %" PRIu64,
                     mask_names[kind], n, k, want);
      uint64_t j = 0;
      for (uint64_t i = 0; i < n; i++) {
        if (!exact[i]) continue;
        if (rows[j] != base + i)
          ck_abort_msg("seed 401 %s n %" PRIu64 ": rows[%" PRIu64 "] = %" PRIu64 ", expected %" PRIu64,
                       mask_names[kind], n, j, rows[j], base + i);
        j++;
      }
      free(rows);
      free(exact);
    }
  }
  free(m);
}
END_TEST

START_TEST(test_mask_count_unaligned_starts) {
  /* The mask pointer need not be aligned: every offset into a buffer. */
  ut_rng r = ut_rng_seed(402);
  uint8_t buf[1100];
  mask_fill(buf, sizeof buf, M_HALF, &r);
  for (uint64_t off = 0; off < 16; off++)
    for (uint64_t n = 0; n + off <= sizeof buf; n += 37) {
      uint64_t want = naive_count(buf + off, n), got = cs_mask_count(buf + off, n);
      if (got != want)
        ck_abort_msg("off %" PRIu64 " n %" PRIu64 ": %" PRIu64 " != %" PRIu64, off, n, got, want);
    }
}
END_TEST

/* ---------------------------------------------------------------- gather */

static void check_gather_mask(const cs_store *s, const uint8_t *mask, uint64_t first, uint64_t n,
                              const char *ctx) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t want_n = naive_count(mask, n);
  uint64_t *pos = malloc(want_n * 8 + 8);
  ck_assert_ptr_nonnull(pos);
  for (uint64_t i = 0, j = 0; i < n; i++)
    if (mask[i]) pos[j++] = first + i;
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    size_t w = cs_type_width(sc->cols[c].type);
    if (!w) continue;
    uint8_t *ref = malloc(want_n * w + 1), *ref_v = malloc(want_n + 1);
    uint8_t *out = malloc(want_n * w + 1), *ov = malloc(want_n + 1);
    ck_assert(ref && ref_v && out && ov);
    ut_ref_gather(s, c, pos, want_n, ref, ref_v);
    for (int with_valid = 0; with_valid < 2; with_valid++) {
      memset(out, 0xA5, want_n * w);
      memset(ov, 0xA5, want_n);
      uint64_t got_n = cs_gather_mask(s, c, mask, first, n, out, with_valid ? ov : NULL);
      if (got_n != want_n)
        ck_abort_msg("%s col %s: wrote %" PRIu64 ", expected %" PRIu64, ctx, sc->cols[c].name, got_n, want_n);
      for (uint64_t i = 0; i < want_n; i++) {
        if (memcmp(out + i * w, ref + i * w, w) != 0)
          ck_abort_msg("%s col %s: element %" PRIu64 " (row %" PRIu64 ") differs", ctx, sc->cols[c].name, i,
                       pos[i]);
        if (with_valid ? ov[i] != ref_v[i] : ov[i] != 0xA5)
          ck_abort_msg("%s col %s: out_valid[%" PRIu64 "] = %u, expected %u", ctx, sc->cols[c].name, i, ov[i],
                       with_valid ? ref_v[i] : 0xA5);
      }
    }
    free(ref), free(ref_v), free(out), free(ov);
  }
  free(pos);
}

static const ut_kshape shapes[] = {
    {501, 2000, UT_IRREGULAR, 13, 200}, /* boundaries inside most mask words */
    {502, 3000, UT_IRREGULAR, 700, 50}, {503, 2051, UT_UNIFORM, 64, 100},
    {504, 1000, UT_UNIFORM, 8, 300}, /* a boundary every word */
    {505, 333, UT_UNIFORM, 512, 0},  /* one record */
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

START_TEST(test_gather_mask_matches_reference) {
  const ut_kshape *sh = &shapes[_i];
  ut_kstore k;
  ut_kstore_make_shape(&k, sh);
  uint64_t N = cs_store_rows(k.s);
  ut_rng r = ut_rng_seed(sh->seed * 3);
  for (int kind = 0; kind < M_COUNT; kind++) {
    for (int rep = 0; rep < 6; rep++) {
      uint64_t first, n;
      switch (rep) {
        case 0: first = 0, n = N; break;
        case 1: first = N - 1, n = 1; break;
        case 2: first = 0, n = 0; break;
        case 3: first = ut_rng_below(&r, 9), n = N - first - ut_rng_below(&r, 9); break; /* unaligned ends */
        default: first = ut_rng_below(&r, N), n = ut_rng_below(&r, N - first + 1); break;
      }
      uint8_t *mask = malloc(n + 1);
      ck_assert_ptr_nonnull(mask);
      mask_fill(mask, n, kind, &r);
      char ctx[160];
      snprintf(ctx, sizeof ctx, "seed %" PRIu64 " mask %s first %" PRIu64 " n %" PRIu64, sh->seed,
               mask_names[kind], first, n);
      check_gather_mask(k.s, mask, first, n, ctx);
      free(mask);
    }
  }
  ut_kstore_free(&k);
}
END_TEST

START_TEST(test_gather_mask_whole_records_and_boundaries) {
  ut_kstore k;
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 1500, UT_IRREGULAR, 40, 100, 506);
  uint64_t N = cs_store_rows(k.s), R = cs_store_records(k.s);
  uint8_t *mask = calloc(N, 1);
  ck_assert_ptr_nonnull(mask);
  /* Every other whole record, then only the rows at each boundary. */
  for (uint64_t rec = 0; rec < R; rec += 2)
    memset(mask + cs_store_record_first_row(k.s, rec), 1, cs_store_record_rows(k.s, rec));
  check_gather_mask(k.s, mask, 0, N, "seed 506 alternate records");
  memset(mask, 0, N);
  for (uint64_t rec = 1; rec < R; rec++) {
    uint64_t f = cs_store_record_first_row(k.s, rec);
    mask[f - 1] = 0xFF, mask[f] = 0x10;
  }
  check_gather_mask(k.s, mask, 0, N, "seed 506 boundary rows");
  free(mask);
  ut_kstore_free(&k);
}
END_TEST

/* --------------------------------------------------------------- threads */

static const cs_column thread_cols[] = {
    {"i64", CS_TYPE_INT64, true}, {"u8", CS_TYPE_UINT8, false}, {"f32", CS_TYPE_FLOAT32, true}};

START_TEST(test_mask_kernels_threads_identical) {
  uint64_t N = 3 * CS_PARALLEL_MIN_ELEMENTS + 4099; /* 4 threads get 4 spans */
  ut_kstore k;
  ut_kstore_make(&k, thread_cols, 3, N, UT_IRREGULAR, 30000, 80, 601);
  uint64_t first = 3, n = N - 10;
  uint8_t *mask = malloc(n);
  ck_assert_ptr_nonnull(mask);
  ut_rng r = ut_rng_seed(602);
  static const int threads[] = {1, 2, 4, 3};
  for (int kind = M_ONES; kind < M_COUNT; kind++) {
    mask_fill(mask, n, kind, &r);
    uint64_t want = naive_count(mask, n);
    /* [0]: the 1-thread output, [1]: the current one. */
    uint64_t *rows[2] = {malloc(want * 8 + 8), malloc(want * 8 + 8)};
    uint8_t *out[2] = {malloc(want * 8 + 8), malloc(want * 8 + 8)},
            *ov[2] = {malloc(want + 1), malloc(want + 1)};
    ck_assert(rows[0] && rows[1] && out[0] && out[1] && ov[0] && ov[1]);
    for (int ti = 0; ti < 4; ti++) {
      ut_kernel_config_set(threads[ti], -1);
      int at = ti ? 1 : 0;
      char ctx[128];
      snprintf(ctx, sizeof ctx, "seed 602 mask %s threads %d", mask_names[kind], threads[ti]);
      uint64_t c = cs_mask_count(mask, n);
      if (c != want) ck_abort_msg("%s: count %" PRIu64 ", expected %" PRIu64, ctx, c, want);
      c = cs_mask_to_rows(mask, n, first, rows[at]);
      if (c != want) ck_abort_msg("%s: to_rows %" PRIu64 ", expected %" PRIu64, ctx, c, want);
      if (ti == 0) {
        for (uint64_t i = 0, j = 0; i < n; i++)
          if (mask[i] && rows[0][j++] != first + i)
            ck_abort_msg("%s: rows[%" PRIu64 "] is wrong", ctx, j - 1);
      } else if (memcmp(rows[0], rows[1], want * 8) != 0) {
        ck_abort_msg("%s: positions differ from the 1-thread output", ctx);
      }
    }
    for (uint32_t col = 0; col < 3; col++) {
      size_t w = cs_type_width(thread_cols[col].type);
      for (int ti = 0; ti < 4; ti++) {
        ut_kernel_config_set(threads[ti], -1);
        int at = ti ? 1 : 0;
        char ctx[128];
        snprintf(ctx, sizeof ctx, "seed 602 mask %s threads %d col %u", mask_names[kind], threads[ti], col);
        uint64_t c = cs_gather_mask(k.s, col, mask, first, n, out[at], ov[at]);
        if (c != want) ck_abort_msg("%s: gathered %" PRIu64 ", expected %" PRIu64, ctx, c, want);
        if (ti == 0) {
          uint8_t *ref = malloc(want * w + 1), *ref_v = malloc(want + 1);
          ck_assert(ref && ref_v);
          ut_ref_gather(k.s, col, rows[0], want, ref, ref_v);
          if (memcmp(ref, out[0], want * w) != 0 || memcmp(ref_v, ov[0], want) != 0)
            ck_abort_msg("%s: differs from the reference", ctx);
          free(ref), free(ref_v);
        } else if (memcmp(out[0], out[1], want * w) != 0 || memcmp(ov[0], ov[1], want) != 0) {
          ck_abort_msg("%s: differs from the 1-thread output", ctx);
        }
      }
    }
    for (int i = 0; i < 2; i++) free(rows[i]), free(out[i]), free(ov[i]);
  }
  ut_kernel_config_reset();
  free(mask);
  ut_kstore_free(&k);
}
END_TEST

static Suite *mask_suite(void) {
  Suite *s = suite_create("mask");
  TCase *tc = tcase_create("kernels");
  tcase_add_checked_fixture(tc, NULL, ut_kernel_config_reset);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_mask_count_and_rows_match_naive_every_length);
  tcase_add_test(tc, test_mask_count_unaligned_starts);
  tcase_add_loop_test(tc, test_gather_mask_matches_reference, 0, (int)N_SHAPES);
  tcase_add_test(tc, test_gather_mask_whole_records_and_boundaries);
  suite_add_tcase(s, tc);
  TCase *tt = tcase_create("threads");
  tcase_add_checked_fixture(tt, NULL, ut_kernel_config_reset);
  tcase_set_timeout(tt, 600);
  tcase_add_test(tt, test_mask_kernels_threads_identical);
  suite_add_tcase(s, tt);
  return s;
}

int main(void) { return ut_run_suite(mask_suite()); }
