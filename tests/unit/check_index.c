/*
** check_index.c - the automatic index (cs_index.c) against the predicate
** kernel it stands in for.
**
** The oracle is cs_pred_eval over the whole store, ANDed with the store's
** own deletions: the rows the scan would select.  cs_pred is itself checked
** against a reference of SQLite's rules in check_pred.c, so the index is
** right when it agrees with the scan row for row, for every operator it
** takes, every numeric type, and operands of every class (integers and
** doubles at the edges of each type, fractions, 2^53 + 1, -0.0, NaN,
** infinities, TEXT, BLOB, NULL), within random position ranges [lo, hi).
**
** The stores are built to make an index's mistakes show: values drawn from
** a few per column, so most rows tie with many others (the order among
** ties is the position order the rows must come back in); NULLs and NaNs,
** which the index leaves out; rows deleted after the write, and rows
** UPDATEd in a later commit (patched chunks), so the values read are the
** live ones.  The seed comes from COLSTORE_SEED and is in every message.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

static uint64_t test_seed(void) {
  const char *s = getenv("COLSTORE_SEED");
  return s && *s ? strtoull(s, NULL, 0) : 0x1de8ull;
}

static const cs_column cols[] = {
    {"i8", CS_TYPE_INT8, true},     {"i16", CS_TYPE_INT16, true},   {"i32", CS_TYPE_INT32, true},
    {"i64", CS_TYPE_INT64, true},   {"u8", CS_TYPE_UINT8, true},    {"u16", CS_TYPE_UINT16, true},
    {"u32", CS_TYPE_UINT32, true},  {"f32", CS_TYPE_FLOAT32, true}, {"f64", CS_TYPE_FLOAT64, true},
    {"b", CS_TYPE_BOOL, true},      {"t", CS_TYPE_TEXT, true},      {"nn", CS_TYPE_INT64, false},
    {"nnf", CS_TYPE_FLOAT64, false}};
#define N_COLS (sizeof cols / sizeof cols[0])

static const int64_t int_pool[] = {0,         1,         -1,
                                   2,         7,         100,
                                   127,       -128,      255,
                                   65535,     -32768,    4294967295ll,
                                   INT64_MIN, INT64_MAX, 9007199254740993ll};
static const double dbl_pool[] = {0.0, -0.0, 1.5, -2.0, 3.0, 1e-310, 9007199254740992.0, 1e300};

/* A cell from the column's small pool (many ties), NULL or NaN sometimes. */
static void pool_cell(ut_rng *r, cs_type t, bool nullable, ut_cell *c) {
  if (nullable && ut_rng_below(r, 10) == 0) {
    ut_cell_set_null(c);
    return;
  }
  if (t == CS_TYPE_TEXT) {
    ut_cell_set_bytes(c, "x", 1);
  } else if (cs_type_is_float(t)) {
    uint64_t k = ut_rng_below(r, 12);
    double v = k < 8 ? dbl_pool[k] : k == 8 ? INFINITY : k == 9 ? -INFINITY : k == 10 && nullable ? NAN : 3.0;
    ut_cell_set_float(c, t, v);
  } else {
    int64_t lo, hi;
    cs_type_int_range(t, &lo, &hi);
    int64_t v = int_pool[ut_rng_below(r, sizeof int_pool / sizeof int_pool[0])];
    ut_cell_set_int(c, v < lo ? lo : v > hi ? hi : v);
  }
}

/* An operand of any class: from the pools (as INT and as FLOAT), edges,
** fractions, TEXT, BLOB, NULL. */
static cs_value operand(ut_rng *r) {
  cs_value v = {0};
  switch (ut_rng_below(r, 8)) {
    case 0:
    case 1: v.kind = CS_VAL_INT, v.i = int_pool[ut_rng_below(r, sizeof int_pool / sizeof int_pool[0])]; break;
    case 2:
    case 3:
      v.kind = CS_VAL_FLOAT, v.f = dbl_pool[ut_rng_below(r, sizeof dbl_pool / sizeof dbl_pool[0])];
      break;
    case 4: {
      static const double odd[] = {2.5, 7.0, -1.0, 100.0000001, INFINITY, -INFINITY, NAN, 255.0, 1.0};
      v.kind = CS_VAL_FLOAT, v.f = odd[ut_rng_below(r, sizeof odd / sizeof odd[0])];
      break;
    }
    case 5: v.kind = CS_VAL_TEXT, v.p = (const uint8_t *)"7", v.n = 1; break;
    case 6: v.kind = CS_VAL_BLOB, v.p = (const uint8_t *)"\x01", v.n = 1; break;
    default: v.kind = CS_VAL_NULL; break;
  }
  return v;
}

/* The scan's rows of the n_pr predicates pr (ANDed) in [lo, hi):
** cs_pred_eval less the deletions. */
static uint64_t scan_rows(const cs_store *s, const cs_pred *pr, uint32_t n_pr, uint64_t lo, uint64_t hi,
                          uint64_t *out) {
  uint64_t n = hi - lo, k = 0;
  uint8_t *mask = malloc(n ? n : 1);
  cs_pred_eval(s, pr, n_pr, lo, n, mask, NULL);
  for (uint64_t i = 0; i < n; i++)
    if (mask[i] && !cs_store_row_deleted(s, lo + i)) out[k++] = lo + i;
  free(mask);
  return k;
}

/* A store of pool values, some rows deleted and some updated. */
static cs_store *pool_store(ut_scratch *sc, uint64_t n, uint64_t seed) {
  cs_schema schema = {N_COLS, cols};
  ut_table *t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t row = 0; row < n; row++) {
    ut_cell *c = ut_table_add_row(t);
    for (uint32_t k = 0; k < N_COLS; k++) pool_cell(&r, cols[k].type, cols[k].nullable, &c[k]);
  }
  ut_table_create_store(t, sc->path, n, 512, 0);
  /* UPDATE some rows in a later commit (patched chunks) ... */
  uint64_t n_up = n / 10;
  uint64_t *rows = malloc(sizeof *rows * n_up);
  ut_table *vals = ut_table_new(&schema);
  for (uint64_t i = 0; i < n_up; i++) {
    rows[i] = ut_rng_below(&r, n);
    ut_cell *c = ut_table_add_row(vals);
    for (uint32_t k = 0; k < N_COLS; k++) pool_cell(&r, cols[k].type, cols[k].nullable, &c[k]);
  }
  ut_update_commit(sc->path, t, rows, n_up, vals, NULL);
  /* ... and delete some */
  for (uint64_t i = 0; i < n_up; i++) rows[i] = ut_rng_below(&r, n);
  ut_delete_commit(sc->path, rows, n_up);
  free(rows);
  ut_table_free(vals);
  ut_table_free(t);
  return ut_open_ok(sc->path, CS_VERIFY_FULL, "pool store");
}

START_TEST(test_index_matches_scan) {
  uint64_t seed = test_seed() + (uint64_t)_i;
  ut_scratch sc = ut_scratch_new();
  uint64_t n = 3000 + (uint64_t)_i * 17;
  cs_store *s = pool_store(&sc, n, seed);
  ut_rng r = ut_rng_seed(seed ^ 0x5eed);
  uint64_t *want = malloc(sizeof *want * n), *got = NULL;
  cs_value set[6];
  for (uint32_t col = 0; col < N_COLS; col++) {
    cs_pred probe = {.col = col, .op = CS_CMP_EQ};
    const cs_index *ix = NULL;
    cs_err err = {0};
    if (cols[col].type == CS_TYPE_TEXT) {
      ck_assert_msg(!cs_index_supports(s, &probe), "seed %llu: TEXT is not indexed",
                    (unsigned long long)seed);
      ck_assert_int_eq(cs_index_build(s, col, &ix, &err), CS_EINVAL);
      continue;
    }
    ck_assert_msg(cs_index_find(s, col) == NULL, "seed %llu: no index before the build",
                  (unsigned long long)seed);
    ck_assert_msg(cs_index_build(s, col, &ix, &err) == CS_OK, "seed %llu: %s", (unsigned long long)seed,
                  err.msg);
    ck_assert_ptr_eq(cs_index_find(s, col), ix);
    for (int q = 0; q < 300; q++) {
      static const cs_cmp ops[] = {CS_CMP_EQ, CS_CMP_EQ, CS_CMP_IN, CS_CMP_LT,
                                   CS_CMP_LE, CS_CMP_GT, CS_CMP_GE, CS_CMP_BETWEEN};
      cs_pred pr = {.col = col, .op = ops[ut_rng_below(&r, sizeof ops / sizeof ops[0])]};
      pr.a = operand(&r), pr.b = operand(&r);
      /* a second bound on the column, a third of the time (EQ .. BETWEEN) */
      cs_pred two[2] = {{0},
                        {.col = col, .op = ops[3 + ut_rng_below(&r, 5)], .a = operand(&r), .b = operand(&r)}};
      if (ut_rng_below(&r, 5) == 0) two[1].op = CS_CMP_EQ;
      const cs_pred *also = ut_rng_below(&r, 3) == 0 ? &two[1] : NULL;
      if (pr.op == CS_CMP_IN) {
        pr.n_set = 1 + ut_rng_below(&r, 6);
        for (uint64_t k = 0; k < pr.n_set; k++) set[k] = operand(&r);
        pr.set = set;
      }
      ck_assert(cs_index_supports(s, &pr));
      uint64_t lo = ut_rng_below(&r, 4) ? 0 : ut_rng_below(&r, n), hi = ut_rng_below(&r, 4) ? n : lo;
      if (hi == lo) hi = lo + ut_rng_below(&r, n - lo + 1);
      two[0] = pr;
      uint64_t nw = scan_rows(s, two, also ? 2 : 1, lo, hi, want);
      uint64_t cap = cs_index_count_and(ix, &pr, also, lo, hi);
      ck_assert_msg(cap >= nw, "seed %llu col %s op %d: count %llu below the %llu rows",
                    (unsigned long long)seed, cols[col].name, (int)pr.op, (unsigned long long)cap,
                    (unsigned long long)nw);
      got = realloc(got, sizeof *got * (cap ? cap : 1)); /* an IN's members may repeat a value */
      uint64_t ng =
          also ? cs_index_rows_and(ix, &pr, also, lo, hi, got) : cs_index_rows(ix, &pr, lo, hi, got);
      ck_assert_msg(ng <= cap, "seed %llu: rows past the count", (unsigned long long)seed);
      bool same = ng == nw && (nw == 0 || memcmp(want, got, nw * sizeof *got) == 0);
      if (!same) {
        char d[64] = "";
        if (pr.a.kind == CS_VAL_INT) snprintf(d, sizeof d, "int %lld", (long long)pr.a.i);
        if (pr.a.kind == CS_VAL_FLOAT) snprintf(d, sizeof d, "float %.17g", pr.a.f);
        ck_abort_msg(
            "seed %llu (COLSTORE_SEED) col %s op %d (and op %d) a=%s kind %d in [%llu,%llu): index %llu "
            "rows, "
            "scan %llu",
            (unsigned long long)seed, cols[col].name, (int)pr.op, also ? (int)also->op : -1, d,
            (int)pr.a.kind, (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)ng,
            (unsigned long long)nw);
      }
    }
    /* the other operators are refused */
    cs_pred ne = {.col = col, .op = CS_CMP_NE};
    ck_assert(!cs_index_supports(s, &ne));
  }
  ck_assert_uint_gt(cs_index_total_bytes(), 0);
  free(want), free(got);
  cs_store_close(s);
  ck_assert_uint_eq(cs_index_total_bytes(), 0); /* the indexes die with their snapshot */
  ut_scratch_free(&sc);
}
END_TEST

/* The memory bound refuses a build, and the refusal is kept; notes count. */
START_TEST(test_index_limit_and_notes) {
  ut_scratch sc = ut_scratch_new();
  cs_store *s = pool_store(&sc, 2000, test_seed());
  ck_assert_uint_eq(cs_index_note(s, 3), 1);
  ck_assert_uint_eq(cs_index_note(s, 3), 2);
  ck_assert_uint_eq(cs_index_note(s, 2), 1);
  const cs_index *ix = NULL;
  cs_err err = {0};
  cs_index_limit_set(100); /* below 2000 rows' 8000 bytes */
  ck_assert_int_eq(cs_index_build(s, 3, &ix, &err), CS_ENOMEM);
  ck_assert_ptr_null(ix);
  cs_index_limit_set(0);
  ck_assert_int_eq(cs_index_build(s, 3, &ix, &err), CS_ENOMEM); /* not tried again on this snapshot */
  ck_assert_int_eq(cs_index_build(s, 2, &ix, &err), CS_OK);
  ck_assert_uint_le(cs_index_bytes(ix), 2000 * 4);
  ck_assert_uint_eq(cs_index_total_bytes(), cs_index_bytes(ix));
  cs_store_close(s);
  ck_assert_uint_eq(cs_index_total_bytes(), 0);
  ut_scratch_free(&sc);
}
END_TEST

/* A second store of the same committed state (what cache=auto's memory
** copy is) adopts the first's indexes and filter counts: the same rows for
** every predicate, the permutation's bytes counted once, returned when the
** last of the two closes, in either order. */
START_TEST(test_index_adopt) {
  ut_scratch sc = ut_scratch_new();
  uint64_t n = 2500;
  cs_store *s = pool_store(&sc, n, test_seed());
  cs_store *copy = ut_open_ok(sc.path, CS_VERIFY_FULL, "the same state again");
  const cs_index *ix = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_index_build(s, 3, &ix, &err), CS_OK);
  for (int k = 0; k < 5; k++) cs_index_note(s, 2);
  uint64_t bytes = cs_index_total_bytes();
  ck_assert_uint_eq(bytes, cs_index_bytes(ix));
  cs_index_adopt(copy, s);
  const cs_index *mine = cs_index_find(copy, 3);
  ck_assert_ptr_nonnull(mine);
  ck_assert_ptr_ne(mine, ix);
  ck_assert_ptr_null(cs_index_find(copy, 2));
  ck_assert_uint_eq(cs_index_note(copy, 2), 6); /* the count carried over */
  ck_assert_uint_eq(cs_index_total_bytes(), bytes);
  cs_index_adopt(copy, s); /* a second time: the copy has its own already */
  ck_assert_ptr_eq(cs_index_find(copy, 3), mine);
  if (_i) { /* the original closes first: the copy's index still reads its own store */
    cs_store_close(s);
    s = NULL;
    ck_assert_uint_eq(cs_index_total_bytes(), bytes);
  }
  uint64_t *want = malloc(sizeof *want * n), *got = malloc(sizeof *got * n);
  ut_rng r = ut_rng_seed(test_seed() ^ 0xad0);
  for (int q = 0; q < 200; q++) {
    cs_pred pr = {.col = 3, .op = q % 2 ? CS_CMP_EQ : CS_CMP_BETWEEN, .a = operand(&r), .b = operand(&r)};
    uint64_t nw = scan_rows(copy, &pr, 1, 0, n, want);
    uint64_t ng = cs_index_rows(mine, &pr, 0, n, got);
    ck_assert_msg(ng == nw && (nw == 0 || memcmp(want, got, nw * sizeof *got) == 0),
                  "seed %llu (COLSTORE_SEED) query %d: adopted index %llu rows, scan %llu",
                  (unsigned long long)test_seed(), q, (unsigned long long)ng, (unsigned long long)nw);
  }
  free(want), free(got);
  if (s) {
    cs_store_close(s);
    ck_assert_uint_eq(cs_index_total_bytes(), bytes);
  }
  cs_store_close(copy);
  ck_assert_uint_eq(cs_index_total_bytes(), 0);
  ut_scratch_free(&sc);
}
END_TEST

static Suite *index_suite(void) {
  Suite *s = suite_create("index");
  TCase *tc = tcase_create("index");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_index_matches_scan, 0, 4);
  tcase_add_test(tc, test_index_limit_and_notes);
  tcase_add_loop_test(tc, test_index_adopt, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(index_suite()); }
