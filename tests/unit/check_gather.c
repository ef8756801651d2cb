/*
** check_gather.c - the gather kernels and the kernel thread policy.
**
** Every gather (range, strided, sorted, rows, bins + binned) is compared,
** byte for byte, with a naive scalar reference (unit_util's ut_ref_gather)
** that locates each row by a plain binary search through the public API and
** copies one value at a time.  The stores are random (fixed seeds, printed
** in every failure) and come in two layouts, because the kernels take
** different routes through them: irregular records of random sizes
** (searched) and uniform records (divided).  Every fixed-width type is
** gathered, nullable and not.
**
** Threading is checked the way xxHash checks its variants: the same call at
** 1, 2 and 4 threads, on selections above CS_PARALLEL_MIN_ELEMENTS, must
** give identical bytes.  No OpenMP region runs outside a test body: Check
** forks each test and GCC's OpenMP runtime can hang in a forked child that
** inherited a thread pool.  Per-element checks use `if (...) ck_abort_msg`,
** never ck_assert: every passing ck_assert is a write() to Check's pipe.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_write_internal.h"
#include "unit_util.h"

/* ------------------------------------------------------------- reference */

/* The random stores (ut_kstore over ut_fixed_cols) and the naive reference
** (ut_ref_gather, ut_ref_record) are unit_util's, shared with check_mask. */

static void assert_same(const char *what, const uint8_t *got, const uint8_t *got_valid, const uint8_t *want,
                        const uint8_t *want_valid, uint64_t n, size_t w, const char *ctx) {
  for (uint64_t i = 0; i < n; i++) {
    if (memcmp(got + i * w, want + i * w, w) != 0) {
      uint64_t g = 0, e = 0;
      memcpy(&g, got + i * w, w);
      memcpy(&e, want + i * w, w);
      ck_abort_msg("%s: %s: element %" PRIu64 " of %" PRIu64 ": got bytes %016" PRIx64
                   ", expected %016" PRIx64,
                   ctx, what, i, n, g, e);
    }
    if (got_valid && got_valid[i] != want_valid[i])
      ck_abort_msg("%s: %s: element %" PRIu64 ": valid=%u, expected %u", ctx, what, i, got_valid[i],
                   want_valid[i]);
  }
}

/* Buffers sized exactly (so AddressSanitizer sees any overrun). */
typedef struct bufs {
  uint8_t *out, *ov, *ref, *ref_ov;
} bufs;

static bufs bufs_new(uint64_t n, size_t w) {
  bufs b = {malloc(n * w + 1), malloc(n + 1), malloc(n * w + 1), malloc(n + 1)};
  ck_assert(b.out && b.ov && b.ref && b.ref_ov);
  /* +1 only so malloc(0) is not NULL; the kernels never reach it. */
  return b;
}

static void bufs_free(bufs *b) { free(b->out), free(b->ov), free(b->ref), free(b->ref_ov); }

enum kernel { K_RANGE, K_STRIDED, K_SORTED, K_ROWS, K_BINNED };
static const char *const kernel_names[] = {"cs_gather_range", "cs_gather_strided", "cs_gather_sorted",
                                           "cs_gather_rows", "cs_gather_rows_binned"};

/* Runs kernel k on column col of s for the selection rows[0..n) (for range
** and strided also described by first/step) and checks it against the
** reference, with and without out_valid. */
static void check_kernel(const cs_store *s, enum kernel k, uint32_t col, const uint64_t *rows, uint64_t n,
                         uint64_t first, int64_t step, const char *ctx) {
  size_t w = cs_type_width(cs_store_schema(s)->cols[col].type);
  bufs b = bufs_new(n, w);
  ut_ref_gather(s, col, rows, n, b.ref, b.ref_ov);
  uint32_t *bins = malloc(n * sizeof *bins + 1);
  ck_assert_ptr_nonnull(bins);
  for (int with_valid = 0; with_valid < 2; with_valid++) {
    uint8_t *ov = with_valid ? b.ov : NULL;
    memset(b.out, 0xA5, n * w);
    memset(b.ov, 0xA5, n);
    switch (k) {
      case K_RANGE: cs_gather_range(s, col, first, n, b.out, ov); break;
      case K_STRIDED: cs_gather_strided(s, col, first, step, n, b.out, ov); break;
      case K_SORTED: cs_gather_sorted(s, col, rows, n, b.out, ov); break;
      case K_ROWS: cs_gather_rows(s, col, rows, n, b.out, ov); break;
      case K_BINNED:
        cs_bins_compute(s, rows, n, bins);
        for (uint64_t i = 0; i < n; i++)
          if (bins[i] != ut_ref_record(s, rows[i]))
            ck_abort_msg("%s: bins[%" PRIu64 "] = %u, row %" PRIu64 " is in record %" PRIu64, ctx, i, bins[i],
                         rows[i], ut_ref_record(s, rows[i]));
        cs_gather_rows_binned(s, col, rows, bins, n, b.out, ov);
        break;
    }
    char what[160];
    snprintf(what, sizeof what, "%s col %s%s", kernel_names[k], cs_store_schema(s)->cols[col].name,
             with_valid ? " with out_valid" : "");
    assert_same(what, b.out, ov, b.ref, b.ref_ov, n, w, ctx);
    if (!with_valid)
      for (uint64_t i = 0; i < n; i++)
        if (b.ov[i] != 0xA5) ck_abort_msg("%s: %s wrote out_valid it was not given", ctx, what);
  }
  free(bins);
  bufs_free(&b);
}

/* Every fixed-width column of s. */
static void check_all_columns(const cs_store *s, enum kernel k, const uint64_t *rows, uint64_t n,
                              uint64_t first, int64_t step, const char *ctx) {
  const cs_schema *sc = cs_store_schema(s);
  for (uint32_t c = 0; c < sc->n_cols; c++)
    if (!cs_type_is_varlen(sc->cols[c].type)) check_kernel(s, k, c, rows, n, first, step, ctx);
}

static uint64_t *rows_alloc(uint64_t n) {
  uint64_t *r = malloc(n * sizeof *r + 8);
  ck_assert_ptr_nonnull(r);
  return r;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Seeds and layouts every random test runs over. */
static const ut_kshape shapes[] = {
    {101, 3000, UT_IRREGULAR, 60, 150}, /* many small irregular records */
    {102, 4000, UT_IRREGULAR, 900, 30}, /* few large irregular records */
    {103, 3001, UT_UNIFORM, 64, 100},   /* uniform, short last record */
    {104, 2048, UT_UNIFORM, 256, 0},    /* uniform, exact multiple, no NULLs */
    {105, 37, UT_IRREGULAR, 5, 500},    /* tiny records, half NULL */
    {106, 500, UT_UNIFORM, 1024, 200},  /* one record */
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* ----------------------------------------------------------------- range */

START_TEST(test_gather_range_matches_reference) {
  const ut_kshape *sh = &shapes[_i];
  ut_kstore k;
  ut_kstore_make_shape(&k, sh);
  uint64_t N = cs_store_rows(k.s), R = cs_store_records(k.s);
  ut_rng rng = ut_rng_seed(sh->seed * 7);
  uint64_t *rows = rows_alloc(N);
  uint64_t cases[40][2] = {{0, 0}, {0, 1}, {N - 1, 1}, {0, N}, {N / 2, N - N / 2}};
  int nc = 5;
  /* Exactly one record, and a pair straddling each of a few boundaries. */
  for (uint64_t r = 0; r < R && nc < 20; r += 1 + R / 8) {
    cases[nc][0] = cs_store_record_first_row(k.s, r), cases[nc++][1] = cs_store_record_rows(k.s, r);
    if (r > 0) cases[nc][0] = cs_store_record_first_row(k.s, r) - 1, cases[nc++][1] = 2;
  }
  while (nc < 40) {
    uint64_t f = ut_rng_below(&rng, N);
    cases[nc][0] = f, cases[nc++][1] = ut_rng_below(&rng, N - f + 1);
  }
  for (int c = 0; c < nc; c++) {
    uint64_t first = cases[c][0], n = cases[c][1];
    for (uint64_t i = 0; i < n; i++) rows[i] = first + i;
    char ctx[128];
    snprintf(ctx, sizeof ctx, "seed %" PRIu64 " range [%" PRIu64 ", +%" PRIu64 ")", sh->seed, first, n);
    check_all_columns(k.s, K_RANGE, rows, n, first, 1, ctx);
  }
  free(rows);
  ut_kstore_free(&k);
}
END_TEST

/* --------------------------------------------------------------- strided */

START_TEST(test_gather_strided_any_step_matches_reference) {
  const ut_kshape *sh = &shapes[_i];
  ut_kstore k;
  ut_kstore_make_shape(&k, sh);
  uint64_t N = cs_store_rows(k.s);
  ut_rng rng = ut_rng_seed(sh->seed * 11);
  int64_t steps[] = {
      1,         2,        3, 7, 8, 63, 1000, -1, -2, -3, -8, -999, 0, (int64_t)N - 1, -((int64_t)N - 1),
      INT64_MAX, INT64_MIN};
  uint64_t *rows = rows_alloc(N + 64);
  for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++) {
    int64_t step = steps[si];
    for (int rep = 0; rep < 4; rep++) {
      uint64_t first = rep == 0 ? 0 : rep == 1 ? N - 1 : ut_rng_below(&rng, N);
      uint64_t st = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
      uint64_t max_n = step == 0 ? 50 : step > 0 ? (N - 1 - first) / st + 1 : first / st + 1;
      uint64_t n = rep == 3 ? ut_rng_below(&rng, max_n + 1) : max_n;
      for (uint64_t i = 0; i < n; i++) rows[i] = first + i * (uint64_t)step;
      char ctx[128];
      snprintf(ctx, sizeof ctx, "seed %" PRIu64 " first %" PRIu64 " step %" PRId64 " n %" PRIu64, sh->seed,
               first, step, n);
      check_all_columns(k.s, K_STRIDED, rows, n, first, step, ctx);
    }
  }
  free(rows);
  ut_kstore_free(&k);
}
END_TEST

/* ---------------------------------------------------------- sorted, rows */

/* Selection shapes for the position kernels; returns n. */
static uint64_t make_selection(int kind, ut_rng *rng, const cs_store *s, uint64_t *rows) {
  uint64_t N = cs_store_rows(s), n = 0;
  switch (kind) {
    case 0: return 0;                  /* empty */
    case 1: rows[0] = N - 1; return 1; /* the last row */
    case 2: rows[0] = 0; return 1;
    case 3:
      for (n = 0; n < N; n++) rows[n] = n;
      return n; /* all rows */
    case 4:     /* sorted with duplicates */
      n = 1 + ut_rng_below(rng, N);
      for (uint64_t i = 0; i < n; i++) rows[i] = ut_rng_below(rng, N);
      qsort(rows, n, 8, cmp_u64);
      return n;
    case 5: /* sparse sorted: a few rows, large jumps over many records */
      n = 1 + ut_rng_below(rng, 12);
      for (uint64_t i = 0; i < n; i++) rows[i] = ut_rng_below(rng, N);
      qsort(rows, n, 8, cmp_u64);
      return n;
    case 6: /* unsorted */
      n = 1 + ut_rng_below(rng, N);
      for (uint64_t i = 0; i < n; i++) rows[i] = ut_rng_below(rng, N);
      return n;
    case 7: /* descending */
      for (n = 0; n < N; n++) rows[n] = N - 1 - n;
      return n;
    case 8: /* sawtooth: ascending runs that jump back */
      for (n = 0; n < N; n++) rows[n] = (n * 7919) % N;
      return n;
    case 9: /* alternating ends: a far jump at every element */
      for (n = 0; n < 2 * (N < 300 ? N : 300); n++) rows[n] = (n & 1) ? N - 1 - n / 2 : n / 2;
      return n;
    default: /* every record boundary, both sides */
      for (uint64_t r = 1; r < cs_store_records(s); r++) {
        uint64_t f = cs_store_record_first_row(s, r);
        rows[n++] = f - 1;
        rows[n++] = f;
      }
      return n;
  }
}
#define N_SELECTIONS 11

static void check_positions(enum kernel k, const ut_kshape *sh) {
  ut_kstore kst;
  ut_kstore_make_shape(&kst, sh);
  uint64_t N = cs_store_rows(kst.s);
  ut_rng rng = ut_rng_seed(sh->seed * 13 + (uint64_t)k);
  uint64_t *rows = rows_alloc(2 * N + 600);
  for (int sel = 0; sel < N_SELECTIONS; sel++) {
    uint64_t n = make_selection(sel, &rng, kst.s, rows);
    char ctx[128];
    snprintf(ctx, sizeof ctx, "seed %" PRIu64 " selection %d (n %" PRIu64 ")", sh->seed, sel, n);
    check_all_columns(kst.s, k, rows, n, 0, 0, ctx);
  }
  free(rows);
  ut_kstore_free(&kst);
}

START_TEST(test_gather_sorted_any_order_matches_reference) { check_positions(K_SORTED, &shapes[_i]); }
END_TEST

START_TEST(test_gather_rows_matches_reference) { check_positions(K_ROWS, &shapes[_i]); }
END_TEST

START_TEST(test_gather_binned_matches_reference) { check_positions(K_BINNED, &shapes[_i]); }
END_TEST

/* Every row of a uniform store, in order and reversed: the division must be
** exact at every record boundary. */
START_TEST(test_gather_rows_uniform_division_exact_at_every_row) {
  static const uint64_t sizes[] = {8, 24, 64, 1000, 4096};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    ut_kstore k;
    uint64_t n = sizes[si] * 5 + 3;
    ut_kstore_make(&k, ut_fixed_cols + 3, 1, n, UT_UNIFORM, sizes[si], 100, 200 + si); /* i64 */
    ck_assert_msg(k.s->uniform_rows == sizes[si], "records of %" PRIu64 " rows: uniform_rows %" PRIu64,
                  sizes[si], k.s->uniform_rows);
    uint64_t *rows = rows_alloc(n);
    for (uint64_t i = 0; i < n; i++) rows[i] = n - 1 - i;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "uniform %" PRIu64, sizes[si]);
    check_kernel(k.s, K_ROWS, 0, rows, n, 0, 0, ctx);
    check_kernel(k.s, K_BINNED, 0, rows, n, 0, 0, ctx);
    free(rows);
    ut_kstore_free(&k);
  }
}
END_TEST

/* Writes records of the given sizes (each a separate write) and returns the
** store's uniform_rows. */
static uint64_t uniform_rows_of(const uint64_t *sizes, int n_sizes) {
  ut_scratch sc = ut_scratch_new();
  cs_schema schema = {1, ut_fixed_cols + 2}; /* i32 */
  cs_writer_options opt = {.record_rows = 1u << 20};
  cs_writer *w;
  cs_err err = {0};
  ck_assert(cs_writer_create(sc.path, &schema, &opt, &w, &err) == CS_OK);
  for (int i = 0; i < n_sizes; i++) {
    cs_batch *b;
    ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
    for (uint64_t r = 0; r < sizes[i]; r++) {
      ck_assert(cs_batch_put_i64(b, 0, (int64_t)r, &err) == CS_OK);
      cs_batch_end_row(b);
    }
    ck_assert(cs_writer_write(w, b, &err) == CS_OK);
    cs_batch_free(b);
  }
  ck_assert(cs_writer_commit(w, &err) == CS_OK);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_HEADER, "uniform");
  uint64_t u = s->uniform_rows;
  cs_store_close(s);
  ut_scratch_free(&sc);
  return u;
}

START_TEST(test_uniform_layout_detected_only_when_division_is_exact) {
  const uint64_t a[] = {16, 16, 16}, b[] = {16, 16, 8}, c[] = {16, 8, 16}, d[] = {16, 16, 17}, e[] = {5},
                 f[] = {8, 16}, g[] = {1, 1, 1}, h[] = {16, 16, 8, 16};
  ck_assert_uint_eq(uniform_rows_of(a, 3), 16);
  ck_assert_uint_eq(uniform_rows_of(b, 3), 16);
  ck_assert_uint_eq(uniform_rows_of(c, 3), 0);
  ck_assert_uint_eq(uniform_rows_of(d, 3), 0); /* the last record is larger */
  ck_assert_uint_eq(uniform_rows_of(e, 1), 5);
  ck_assert_uint_eq(uniform_rows_of(f, 2), 0);
  ck_assert_uint_eq(uniform_rows_of(g, 3), 0); /* d = 1: the magic number needs 65 bits; searched */
  ck_assert_uint_eq(uniform_rows_of(h, 4), 0); /* a short record in the middle */
}
END_TEST

/* --------------------------------------------------------------- threads */

static const cs_column thread_cols[] = {{"i64", CS_TYPE_INT64, true},
                                        {"f32", CS_TYPE_FLOAT32, true},
                                        {"i8", CS_TYPE_INT8, false},
                                        {"u16", CS_TYPE_UINT16, true}};

/* The same call at 1, 2 and 4 threads (and under every prefetch setting)
** gives the same bytes, and the 1-thread bytes match the reference. */
static void check_threads(ut_kstore_layout lay, uint64_t size, uint64_t seed) {
  ut_kstore k;
  uint64_t N = 3 * CS_PARALLEL_MIN_ELEMENTS + 20077; /* 4 threads get 4 spans */
  ut_kstore_make(&k, thread_cols, 4, N, lay, size, 50, seed);
  uint64_t n = N - 5;
  uint64_t *sorted = rows_alloc(n), *unsorted = rows_alloc(n);
  ut_rng rng = ut_rng_seed(seed);
  for (uint64_t i = 0; i < n; i++) sorted[i] = ut_rng_below(&rng, N), unsorted[i] = ut_rng_below(&rng, N);
  qsort(sorted, n, 8, cmp_u64);
  uint32_t *bins = malloc(n * sizeof *bins);
  uint8_t *want = malloc(n * 8), *want_v = malloc(n), *got = malloc(n * 8), *got_v = malloc(n);
  uint32_t *bins2 = malloc(n * sizeof *bins2);
  ck_assert(bins && want && want_v && got && got_v && bins2);
  for (uint32_t col = 0; col < 4; col++) {
    size_t w = cs_type_width(thread_cols[col].type);
    for (int kern = 0; kern < 5; kern++) {
      const uint64_t *rows = kern == K_SORTED ? sorted : unsorted;
      int64_t step = kern == K_STRIDED ? -1 : 1;
      uint64_t first = kern == K_STRIDED ? n + 2 : 3;
      for (int ti = 0; ti < 6; ti++) {
        static const int threads[] = {1, 2, 4, 2, 2, 4}, prefetch[] = {0, 0, 0, 8, 64, -1};
        ut_kernel_config_set(threads[ti], prefetch[ti]);
        uint8_t *o = ti == 0 ? want : got, *ov = ti == 0 ? want_v : got_v;
        switch (kern) {
          case K_RANGE: cs_gather_range(k.s, col, first, n, o, ov); break;
          case K_STRIDED: cs_gather_strided(k.s, col, first, step, n, o, ov); break;
          case K_SORTED: cs_gather_sorted(k.s, col, rows, n, o, ov); break;
          case K_ROWS: cs_gather_rows(k.s, col, rows, n, o, ov); break;
          default:
            cs_bins_compute(k.s, rows, n, ti == 0 ? bins : bins2);
            if (ti)
              ck_assert_msg(memcmp(bins, bins2, n * sizeof *bins) == 0,
                            "seed %" PRIu64 ": bins differ at %d threads", seed, threads[ti]);
            cs_gather_rows_binned(k.s, col, rows, bins, n, o, ov);
            break;
        }
        char ctx[128];
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 " threads %d prefetch %d", seed, threads[ti], prefetch[ti]);
        if (ti == 0) {
          /* Against the reference once, on a sample of positions. */
          uint64_t *pos = rows_alloc(n);
          for (uint64_t i = 0; i < n; i++)
            pos[i] = kern == K_RANGE ? first + i : kern == K_STRIDED ? first - i : rows[i];
          uint8_t *ref = malloc(n * w), *ref_v = malloc(n);
          ck_assert(ref && ref_v);
          ut_ref_gather(k.s, col, pos, n, ref, ref_v);
          assert_same(kernel_names[kern], o, ov, ref, ref_v, n, w, ctx);
          free(ref), free(ref_v), free(pos);
        } else {
          ck_assert_msg(memcmp(want, got, n * w) == 0 && memcmp(want_v, got_v, n) == 0,
                        "%s: %s col %u: output differs from the 1-thread output", ctx, kernel_names[kern],
                        col);
        }
      }
    }
  }
  ut_kernel_config_reset();
  free(bins), free(bins2), free(want), free(want_v), free(got), free(got_v), free(sorted), free(unsorted);
  ut_kstore_free(&k);
}

START_TEST(test_gather_threads_identical_irregular) { check_threads(UT_IRREGULAR, 20000, 301); }
END_TEST

START_TEST(test_gather_threads_identical_uniform) { check_threads(UT_UNIFORM, 4096, 302); }
END_TEST

/* ---------------------------------------------------------------- config */

/* cs_kernel_config_get reads back threads and prefetch. */
static void assert_config(int threads, int prefetch) {
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  ck_assert_int_eq(cfg.threads, threads);
  ck_assert_int_eq(cfg.prefetch, prefetch);
}

START_TEST(test_kernel_config_round_trips_and_clamps) {
  assert_config(0, -1); /* the defaults */
  ut_kernel_config_set(3, 128);
  assert_config(3, 128);
  ut_kernel_config_set(-5, -7);
  assert_config(0, -1); /* negatives clamp to the defaults */
  ut_kernel_config_set(1, 0);
  assert_config(1, 0);
  ut_kernel_config_reset();
}
END_TEST

START_TEST(test_kernel_threads_is_work_proportional) {
  const uint64_t M = CS_PARALLEL_MIN_ELEMENTS;
  ut_kernel_config_set(8, -1);
  ck_assert_int_eq(cs_kernel_threads(0), 1);
  ck_assert_int_eq(cs_kernel_threads(M - 1), 1);
  ck_assert_int_eq(cs_kernel_threads(M), 2); /* at least 2 past the threshold */
  ck_assert_int_eq(cs_kernel_threads(2 * M), 2);
  ck_assert_int_eq(cs_kernel_threads(2 * M + 1), 3); /* rounds up */
  ck_assert_int_eq(cs_kernel_threads(5 * M), 5);
  ck_assert_int_eq(cs_kernel_threads(100 * M), 8); /* capped */
  ut_kernel_config_set(1, -1);
  ck_assert_int_eq(cs_kernel_threads(100 * M), 1);
  ut_kernel_config_set(2, -1);
  ck_assert_int_eq(cs_kernel_threads(M), 2);
  ck_assert_int_eq(cs_kernel_threads(100 * M), 2);
  ut_kernel_config_set(100000, -1);
  ck_assert_int_le(cs_kernel_threads(UINT64_MAX / 2), 1024);
  ut_kernel_config_reset();
  ck_assert_int_ge(cs_kernel_threads(100 * M), 1);
  ck_assert_int_eq(cs_kernel_threads(M - 1), 1);
}
END_TEST

static Suite *gather_suite(void) {
  Suite *s = suite_create("gather");
  TCase *tc = tcase_create("kernels");
  tcase_add_checked_fixture(tc, NULL, ut_kernel_config_reset);
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_gather_range_matches_reference, 0, (int)N_SHAPES);
  tcase_add_loop_test(tc, test_gather_strided_any_step_matches_reference, 0, (int)N_SHAPES);
  tcase_add_loop_test(tc, test_gather_sorted_any_order_matches_reference, 0, (int)N_SHAPES);
  tcase_add_loop_test(tc, test_gather_rows_matches_reference, 0, (int)N_SHAPES);
  tcase_add_loop_test(tc, test_gather_binned_matches_reference, 0, (int)N_SHAPES);
  tcase_add_test(tc, test_gather_rows_uniform_division_exact_at_every_row);
  tcase_add_test(tc, test_uniform_layout_detected_only_when_division_is_exact);
  suite_add_tcase(s, tc);
  TCase *tt = tcase_create("threads");
  tcase_add_checked_fixture(tt, NULL, ut_kernel_config_reset);
  tcase_set_timeout(tt, 600);
  tcase_add_test(tt, test_gather_threads_identical_irregular);
  tcase_add_test(tt, test_gather_threads_identical_uniform);
  suite_add_tcase(s, tt);
  TCase *tcfg = tcase_create("config");
  tcase_add_checked_fixture(tcfg, NULL, ut_kernel_config_reset);
  tcase_add_test(tcfg, test_kernel_config_round_trips_and_clamps);
  tcase_add_test(tcfg, test_kernel_threads_is_work_proportional);
  suite_add_tcase(s, tcfg);
  return s;
}

int main(void) { return ut_run_suite(gather_suite()); }
