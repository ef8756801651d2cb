/*
** check_scatter.c - delivery by scatter (cs_order_count + cs_scatter_rows,
** core/analytics/cs_scatter.c) against the delivery it replaces: cs_order_rows'
** order gathered with cs_select_rows.
**
** The reference is the old path itself, because the promise is byte
** identity with it: the same positions in the same order and the same
** bytes in every buffer (values, NULL slots and validity), whatever the
** window split and the thread count.  Stores hold every fixed-width type
** with NULLs (ut_fixed_cols), in irregular and uniform records, with and
** without deletions; keys are the small-range columns (BOOL, INT8, UINT8,
** NOT NULL INT16 and pairs of them), ASC and DESC, GROUP and SORT; inputs are every
** live row ascending, a random ascending subset, and shuffled draws with
** duplicates (a _rows list), and ranges given as first and count with no
** positions written (which must equal the same range written out).  Seeds
** are in every failure message.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"
#include "unit_util.h"

/* The fixed-width columns of ut_fixed_cols, as targets (every one, each
** with validity where nullable) into buffers of n rows. */
typedef struct tset {
  cs_gather_target t[UT_FIXED_COLS];
  uint32_t n;
} tset;

static void tset_make(tset *ts, const cs_store *s, uint64_t n) {
  ts->n = 0;
  for (uint32_t c = 0; c < UT_FIXED_COLS; c++) {
    size_t w = cs_type_width(ut_fixed_cols[c].type);
    if (!w) continue;
    cs_gather_target *g = &ts->t[ts->n++];
    g->col = c;
    g->out = calloc(n ? n : 1, w);
    g->out_valid = ut_fixed_cols[c].nullable ? calloc(n ? n : 1, 1) : NULL;
    ck_assert(g->out && (g->out_valid || !ut_fixed_cols[c].nullable));
  }
  (void)s;
}

static void tset_free(tset *ts) {
  for (uint32_t i = 0; i < ts->n; i++) free(ts->t[i].out), free(ts->t[i].out_valid);
}

/* The targets of ts moved on by j rows. */
static void tset_at(const tset *ts, uint64_t j, cs_gather_target *out) {
  for (uint32_t i = 0; i < ts->n; i++) {
    size_t w = cs_type_width(ut_fixed_cols[ts->t[i].col].type);
    out[i] = ts->t[i];
    out[i].out = (uint8_t *)ts->t[i].out + j * w;
    out[i].out_valid = ts->t[i].out_valid ? ts->t[i].out_valid + j : NULL;
  }
}

static void tset_expect_equal(const tset *want, const tset *got, uint64_t n, const char *ctx) {
  for (uint32_t i = 0; i < want->n; i++) {
    size_t w = cs_type_width(ut_fixed_cols[want->t[i].col].type);
    if (memcmp(want->t[i].out, got->t[i].out, n * w) != 0)
      ck_abort_msg("%s: column %s: values differ from the gather", ctx, ut_fixed_cols[want->t[i].col].name);
    if (want->t[i].out_valid && memcmp(want->t[i].out_valid, got->t[i].out_valid, n) != 0)
      ck_abort_msg("%s: column %s: validity differs from the gather", ctx,
                   ut_fixed_cols[want->t[i].col].name);
  }
}

/* Keys the counting sort takes: small-range columns, alone or in pairs. */
static const uint32_t key_cols[][2] = {{9, UINT32_MAX}, {0, UINT32_MAX}, {4, UINT32_MAX}, {13, UINT32_MAX},
                                       {9, 0},          {13, 9},         {14, UINT32_MAX}};
#define N_KEYSETS (sizeof key_cols / sizeof key_cols[0])

/* Random keys (a key set, directions) and mode, and their description. */
static void draw_keys(ut_rng *rng, cs_order_key keys[2], uint32_t *nk, cs_order_mode *mode, char *what,
                      size_t cap) {
  const uint32_t *kc = key_cols[ut_rng_below(rng, N_KEYSETS)];
  keys[0] = (cs_order_key){kc[0], ut_rng_below(rng, 2) != 0};
  keys[1] = (cs_order_key){kc[1], ut_rng_below(rng, 2) != 0};
  *nk = kc[1] == UINT32_MAX ? 1 : 2;
  *mode = ut_rng_below(rng, 2) ? CS_ORDER_GROUP : CS_ORDER_SORT;
  snprintf(what, cap, "keys %s%s%s%s%s, %s", ut_fixed_cols[keys[0].col].name, keys[0].desc ? " DESC" : "",
           *nk > 1 ? ", " : "", *nk > 1 ? ut_fixed_cols[keys[1].col].name : "",
           *nk > 1 && keys[1].desc ? " DESC" : "", *mode == CS_ORDER_GROUP ? "GROUP" : "SORT");
}

enum { IN_LIVE, IN_SUBSET, IN_SHUFFLED, IN_COUNT };
static const char *const in_names[] = {"every live row", "ascending subset", "shuffled with duplicates"};

static uint64_t make_input(int which, const cs_store *s, ut_rng *rng, uint64_t *rows) {
  uint64_t N = cs_store_rows(s), n = 0;
  if (which == IN_SHUFFLED) {
    uint64_t k = N / 2 + ut_rng_below(rng, N / 2 + 1);
    for (uint64_t i = 0; i < k; i++) rows[i] = ut_rng_below(rng, N);
    return cs_store_filter_deleted(s, rows, k);
  }
  for (uint64_t r = 0; r < N; r++)
    if (which == IN_LIVE || ut_rng_below(rng, 3)) rows[n++] = r;
  return cs_store_filter_deleted(s, rows, n);
}

/* One comparison: keys, mode, input; the scatter in random windows (or
** whole) on `threads` threads against the old delivery. */
static void compare_one(const cs_store *s, const cs_order_key *keys, uint32_t nk, cs_order_mode mode,
                        const uint64_t *in, uint64_t n, int threads, ut_rng *rng, const char *ctx) {
  cs_err err = {0};
  cs_order_counts counts;
  bool done;
  ck_assert_msg(cs_order_count(s, keys, nk, mode, in, 0, n, 0, &counts, &done, &err) == CS_OK, "%s: %s", ctx,
                err.msg);
  if (n < 2) {
    ck_assert_msg(!done, "%s: counted %" PRIu64 " rows", ctx, n);
    return;
  }
  ck_assert_msg(done, "%s: the key did not take the counting sort", ctx);
  uint64_t *perm = malloc(n * 8), *got_rows = malloc(n * 8), m = n;
  ck_assert(perm && got_rows);
  memcpy(perm, in, n * 8);
  ck_assert(cs_order_rows(s, keys, nk, mode, perm, &m, CS_ORDER_NO_LIMIT, &err) == CS_OK);
  ck_assert_uint_eq(m, n);
  tset want, got;
  tset_make(&want, s, n);
  tset_make(&got, s, n);
  uint32_t *bins = malloc(n * 4);
  ck_assert(bins);
  cs_select_rows(s, perm, n, false, bins, want.t, want.n, 1);
  uint32_t *scratch = malloc((uint64_t)counts.n_codes * 4);
  ck_assert(scratch);
  cs_kernel_config saved;
  cs_kernel_config_get(&saved);
  cs_kernel_config_set(&(cs_kernel_config){.threads = threads, .prefetch = -1});
  /* windows: the whole output, or random sizes (some of one row) */
  bool whole = ut_rng_below(rng, 3) == 0;
  cs_gather_target at[UT_FIXED_COLS];
  for (uint64_t j = 0; j < n;) {
    uint64_t k = whole ? n : ut_rng_below(rng, 4) == 0 ? 1 : 1 + ut_rng_below(rng, n / 3 + 1);
    if (k > n - j) k = n - j;
    tset_at(&got, j, at);
    cs_scatter_rows(s, in, 0, n, &counts, j, k, got_rows + j, at, got.n, scratch, 0);
    j += k;
  }
  cs_kernel_config_set(&saved);
  char buf[256];
  snprintf(buf, sizeof buf, "%s, %d threads, %s windows", ctx, threads, whole ? "whole" : "random");
  for (uint64_t j = 0; j < n; j++)
    if (got_rows[j] != perm[j])
      ck_abort_msg("%s: output %" PRIu64 ": row %" PRIu64 ", the order says %" PRIu64, buf, j, got_rows[j],
                   perm[j]);
  tset_expect_equal(&want, &got, n, buf);
  tset_free(&want), tset_free(&got);
  free(perm), free(got_rows), free(bins), free(scratch);
  cs_order_counts_free(&counts);
}

/* Over a range without deletions: cs_order_count and cs_scatter_rows with
** no positions (rows NULL) give what they give over the range written out
** (which compare_one holds to the gather). */
static void compare_range(const cs_store *s, const cs_order_key *keys, uint32_t nk, cs_order_mode mode,
                          uint64_t first, uint64_t n, int threads, ut_rng *rng, const char *ctx) {
  uint64_t *in = malloc((n ? n : 1) * 8);
  ck_assert(in);
  for (uint64_t i = 0; i < n; i++) in[i] = first + i;
  compare_one(s, keys, nk, mode, in, n, threads, rng, ctx);
  cs_order_counts want, got;
  bool dw, dg;
  cs_kernel_config saved;
  cs_kernel_config_get(&saved);
  cs_kernel_config_set(&(cs_kernel_config){.threads = threads, .prefetch = -1});
  ck_assert(cs_order_count(s, keys, nk, mode, in, 0, n, 0, &want, &dw, NULL) == CS_OK);
  ck_assert(cs_order_count(s, keys, nk, mode, NULL, first, n, 0, &got, &dg, NULL) == CS_OK);
  ck_assert_msg(dw == dg, "%s: over the range %s", ctx, dg ? "counted" : "not counted");
  if (dw) {
    ck_assert_uint_eq(got.n_codes, want.n_codes);
    if (memcmp(got.codes, want.codes, n * 4) != 0 ||
        memcmp(got.starts, want.starts, ((uint64_t)want.n_codes + 1) * 4) != 0)
      ck_abort_msg("%s: the range's codes or starts differ from its written rows'", ctx);
    tset a, b;
    tset_make(&a, s, n), tset_make(&b, s, n);
    uint64_t *ra = malloc(n * 8), *rb = malloc(n * 8);
    uint32_t *scratch = malloc((uint64_t)want.n_codes * 4);
    ck_assert(ra && rb && scratch);
    cs_scatter_rows(s, in, 0, n, &want, 0, n, ra, a.t, a.n, scratch, 0);
    cs_scatter_rows(s, NULL, first, n, &got, 0, n, rb, b.t, b.n, scratch, 0);
    if (memcmp(ra, rb, n * 8) != 0) ck_abort_msg("%s: the range's positions differ", ctx);
    tset_expect_equal(&a, &b, n, ctx);
    tset_free(&a), tset_free(&b);
    free(ra), free(rb), free(scratch);
  }
  cs_kernel_config_set(&saved);
  cs_order_counts_free(&want), cs_order_counts_free(&got);
  free(in);
}

/* trials of random keys over s: inputs drawn by make_input (compare_one),
** or (ranges) row ranges with no positions (compare_range), each on every
** thread count in threads. */
static void run_store(const cs_store *s, uint64_t seed, int trials, const int *threads, int n_threads,
                      bool ranges) {
  uint64_t N = cs_store_rows(s);
  uint64_t *in = malloc((N ? N : 1) * 8);
  ck_assert(in);
  ut_rng rng = ut_rng_seed(seed);
  for (int trial = 0; trial < trials; trial++) {
    int which = trial % IN_COUNT;
    uint64_t first = trial == 0 ? 0 : ut_rng_below(&rng, N / 2);
    uint64_t n = !ranges      ? make_input(which, s, &rng, in)
                 : trial == 0 ? N
                              : 2 + ut_rng_below(&rng, N - first - 1);
    cs_order_key keys[2];
    uint32_t nk;
    cs_order_mode mode;
    char what[80], input[80];
    draw_keys(&rng, keys, &nk, &mode, what, sizeof what);
    if (ranges)
      snprintf(input, sizeof input, "rows [%" PRIu64 ", +%" PRIu64 ")", first, n);
    else
      snprintf(input, sizeof input, "%s (%" PRIu64 " rows)", in_names[which], n);
    for (int t = 0; t < n_threads; t++) {
      char ctx[240];
      snprintf(ctx, sizeof ctx, "seed %" PRIu64 " trial %d: %s, %s, %d threads", seed, trial, input, what,
               threads[t]);
      if (ranges)
        compare_range(s, keys, nk, mode, first, n, threads[t], &rng, ctx);
      else
        compare_one(s, keys, nk, mode, in, n, threads[t], &rng, ctx);
    }
  }
  free(in);
}

/* Deletes about permille/1000 of path's rows and reopens it. */
static cs_store *delete_some(ut_kstore *k, unsigned permille, uint64_t seed) {
  uint64_t N = cs_store_rows(k->s), n = 0, *rows = malloc(N * 8);
  ck_assert(rows);
  ut_rng rng = ut_rng_seed(seed);
  for (uint64_t r = 0; r < N; r++)
    if (ut_rng_below(&rng, 1000) < permille) rows[n++] = r;
  ut_delete_commit(k->sc.path, rows, n);
  free(rows);
  cs_store_close(k->s);
  return k->s = ut_open_ok(k->sc.path, CS_VERIFY_FULL, "scatter store with deletions");
}

/* _i: layout (irregular / uniform) x deletions (none / some). */
START_TEST(test_scatter_equals_gather_of_the_order) {
  uint64_t seed = 0x5CA7 + (uint64_t)_i;
  ut_kstore k;
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 40000, _i & 1 ? UT_UNIFORM : UT_IRREGULAR,
                 _i & 1 ? 4096 : 3000, 100, seed);
  if (_i & 2) delete_some(&k, 200, seed + 1);
  static const int one[] = {1};
  run_store(k.s, seed, 24, one, 1, false);
  if (!(_i & 2)) run_store(k.s, seed, 6, one, 1, true);
  if (_i & 2) { /* a range with deleted rows is not counted without its positions */
    cs_order_counts counts;
    bool done = true;
    cs_order_key key = {9, false};
    ck_assert(cs_order_count(k.s, &key, 1, CS_ORDER_GROUP, NULL, 0, cs_store_rows(k.s), 0, &counts, &done,
                             NULL) == CS_OK);
    ck_assert(!done && !counts.codes);
  }
  ut_kstore_free(&k);
}
END_TEST

/* Tiny inputs: no rows, one row (nothing to count), two, a few. */
START_TEST(test_scatter_tiny_inputs) {
  uint64_t seed = 0x717;
  ut_kstore k;
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 300, UT_IRREGULAR, 40, 100, seed);
  ut_rng rng = ut_rng_seed(seed);
  uint64_t in[40];
  for (uint64_t n = 0; n < 40; n += 1 + n / 4) {
    for (uint64_t i = 0; i < n; i++) in[i] = ut_rng_below(&rng, 300);
    cs_order_key key = {9, ut_rng_below(&rng, 2) != 0};
    char ctx[80];
    snprintf(ctx, sizeof ctx, "seed %" PRIu64 ": %" PRIu64 " rows", seed, n);
    compare_one(k.s, &key, 1, CS_ORDER_GROUP, in, n, 1, &rng, ctx);
  }
  ut_kstore_free(&k);
}
END_TEST

/* A key the counting sort does not take (a full-range INT64), DISTINCT,
** and a range of fewer codes than asked for: not done, nothing to free. */
START_TEST(test_scatter_count_declines_other_paths) {
  ut_kstore k;
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 5000, UT_IRREGULAR, 300, 10, 0xDEC);
  uint64_t *in = malloc(5000 * 8);
  ck_assert(in);
  for (uint64_t i = 0; i < 5000; i++) in[i] = i;
  cs_order_counts counts;
  bool done = true;
  cs_order_key wide = {3, false}, small = {9, false};
  ck_assert(cs_order_count(k.s, &wide, 1, CS_ORDER_GROUP, in, 0, 5000, 0, &counts, &done, NULL) == CS_OK);
  ck_assert(!done && !counts.codes && !counts.starts);
  done = true;
  ck_assert(cs_order_count(k.s, &small, 1, CS_ORDER_DISTINCT, in, 0, 5000, 0, &counts, &done, NULL) == CS_OK);
  ck_assert(!done && !counts.codes);
  /* over a range: not a TEXT key, not past the end */
  cs_order_key text = {10, false};
  ck_assert(cs_order_count(k.s, &text, 1, CS_ORDER_GROUP, NULL, 0, 5000, 0, &counts, &done, NULL) == CS_OK);
  ck_assert(!done && !counts.codes);
  ck_assert(cs_order_count(k.s, &small, 1, CS_ORDER_GROUP, NULL, 1, 5000, 0, &counts, &done, NULL) == CS_OK);
  ck_assert(!done && !counts.codes);
  /* BOOL with NULLs: three codes in a range of four; declined from five */
  ck_assert(cs_order_count(k.s, &small, 1, CS_ORDER_GROUP, in, 0, 5000, 5, &counts, &done, NULL) == CS_OK);
  ck_assert(!done && !counts.codes);
  ck_assert(cs_order_count(k.s, &small, 1, CS_ORDER_GROUP, in, 0, 5000, 4, &counts, &done, NULL) == CS_OK);
  ck_assert(done && counts.n_codes == 4);
  cs_order_counts_free(&counts);
  free(in);
  ut_kstore_free(&k);
}
END_TEST

/* On the team (2 and 4 threads, input past CS_PARALLEL_MIN_ELEMENTS): the
** same bytes as the gather, so as one thread. */
START_TEST(test_scatter_threads_match) {
  uint64_t seed = 0x7EA + (uint64_t)_i;
  ut_kstore k;
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 300000, UT_UNIFORM, 65536, 50, seed);
  static const int threads[] = {1, 2, 4};
  if (!_i) run_store(k.s, seed, 3, threads, 3, true);
  if (_i) delete_some(&k, 100, seed + 1);
  run_store(k.s, seed, 6, threads, 3, false);
  ut_kstore_free(&k);
}
END_TEST

int main(void) {
  Suite *s = suite_create("scatter");
  TCase *tc = tcase_create("scatter");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_scatter_equals_gather_of_the_order, 0, 4);
  tcase_add_test(tc, test_scatter_tiny_inputs);
  tcase_add_test(tc, test_scatter_count_declines_other_paths);
  suite_add_tcase(s, tc);
  TCase *tl = tcase_create("large");
  tcase_set_timeout(tl, 900);
  tcase_add_loop_test(tl, test_scatter_threads_match, 0, 2);
  suite_add_tcase(s, tl);
  return ut_run_suite(s);
}
