/*
** check_agg.c - aggregation (core/analytics/cs_agg.c): counts, sums, averages, minima
** and maxima, grouped or not, over ranges with predicates and masks and over
** lists of rows.
**
** The reference is the obvious program: the selected rows are decided by
** cs_pred_eval (the predicate kernel, checked by its own suite against its
** own reference) and the caller's mask; then every selected row's cells,
** taken from the test's own table model (unit_util's ut_table, which knows
** nothing of records or bitmaps), go to the group whose key tuple equals
** theirs (a linear search under SQLite's rules: NULL and NaN one group,
** -0.0 equal to 0.0, bytes by memcmp and length), and each column's count,
** exact 128-bit integer sum, Neumaier float sum, min and max are computed
** one row at a time.  The aggregate must give the same groups (in any
** order), the same counts, integer sums and min/max exactly, and float sums
** within a relative 1e-12 of the sum of magnitudes.
**
** Stores hold every column type (nullable, values drawn from palettes that
** repeat, the integers' extremes, NaN, -0.0) plus a sorted row number for
** predicates that skip records, prove them true or cut them; records are
** small (64 or 200 rows, or irregular) so one store has dozens.  Seeds are
** in every failure message.
**
** Deletions (format 2): the same stores after one deleting commit
** (astore_delete: per record none, one in the middle, random, sparse,
** whole, all but one).  The reference then evaluates the predicates on the
** snapshot before the deletions, which stays open and holds the same
** values at the same positions, and drops the deleted rows by the test's
** own list of them, so it shares nothing with the deletion code under
** test.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_agg_internal.h"
#include "cs_kernels_internal.h"
#include "unit_util.h"

__extension__ typedef __int128 i128;

/* --------------------------------------------------------------- stores */

enum {
  C_ID,
  C_I8,
  C_I16,
  C_I32,
  C_I64,
  C_U8,
  C_U16,
  C_U32,
  C_F32,
  C_F64,
  C_BO,
  C_T,
  C_BL,
  C_K8,
  C_KF,
  C_KT,
  C_NF,
  N_COLS
};

static const cs_column cols[N_COLS] = {
    {"id", CS_TYPE_INT64, false},   {"i8", CS_TYPE_INT8, true},     {"i16", CS_TYPE_INT16, true},
    {"i32", CS_TYPE_INT32, true},   {"i64", CS_TYPE_INT64, true},   {"u8", CS_TYPE_UINT8, true},
    {"u16", CS_TYPE_UINT16, true},  {"u32", CS_TYPE_UINT32, true},  {"f32", CS_TYPE_FLOAT32, true},
    {"f64", CS_TYPE_FLOAT64, true}, {"bo", CS_TYPE_BOOL, true},     {"t", CS_TYPE_TEXT, true},
    {"bl", CS_TYPE_BLOB, true},     {"k8", CS_TYPE_INT32, true},    {"kf", CS_TYPE_FLOAT64, true},
    {"kt", CS_TYPE_TEXT, true},     {"nf", CS_TYPE_FLOAT64, false},
};

/* Short words, and words around the 16 bytes the bytes kernel compares
** as two words (the last two share their first 16 bytes). */
static const char *const words[] = {"",
                                    "a",
                                    "a\0",
                                    "ab",
                                    "abcdefgh",
                                    "abcdefgh\0",
                                    "abcdefghi",
                                    "b",
                                    "\xff",
                                    "zz",
                                    "abcdefghijklmno\0",
                                    "abcdefghijklmnop",
                                    "abcdefghijklmnopq",
                                    "abcdefghijklmnopQ"};
static const uint64_t word_len[] = {0, 1, 2, 2, 8, 9, 9, 1, 1, 2, 16, 16, 17, 17};
#define N_WORDS 14

static void gen_cell(ut_rng *r, uint32_t c, uint64_t row, ut_cell *cell) {
  cs_type t = cols[c].type;
  if (c == C_ID) {
    ut_cell_set_int(cell, (int64_t)row);
    return;
  }
  if (cols[c].nullable && ut_rng_below(r, 10) == 0) {
    ut_cell_set_null(cell);
    return;
  }
  if (c == C_K8) {
    ut_cell_set_int(cell, (int64_t)ut_rng_below(r, 10) - 3);
  } else if (c == C_KF) {
    const double p[] = {0.0, -0.0, 1.5, NAN, -2.0, 1e300};
    ut_cell_set_float(cell, t, p[ut_rng_below(r, 6)]);
  } else if (cs_type_is_integer(t)) {
    int64_t lo, hi;
    cs_type_int_range(t, &lo, &hi);
    uint64_t k = ut_rng_below(r, 8);
    int64_t v = k == 0   ? lo
                : k == 1 ? hi
                : k < 4  ? (int64_t)ut_rng_below(r, 5) - 2
                         : (int64_t)((uint64_t)lo + ut_rng_u64(r) % (((uint64_t)hi - (uint64_t)lo + 1) |
                                                                    (t == CS_TYPE_INT64)));
    if (t == CS_TYPE_INT64 && k >= 4) v = (int64_t)ut_rng_u64(r);
    ut_cell_set_int(cell, v < lo ? lo : v > hi ? hi : v);
  } else if (cs_type_is_float(t)) {
    const double p[] = {0.0, -0.0, 1.5, -2.25, 1e6, -1e-3, NAN};
    double v = ut_rng_below(r, 3) ? ut_rng_unit(r) * 2000.0 - 1000.0 : p[ut_rng_below(r, 7)];
    if (c == C_NF && isnan(v)) v = 0.5;
    ut_cell_set_float(cell, t, c == C_NF && ut_rng_below(r, 50) == 0 ? NAN : v);
  } else {
    uint64_t w = ut_rng_below(r, N_WORDS);
    ut_cell_set_bytes(cell, words[w], word_len[w]);
  }
}

typedef struct astore {
  ut_scratch sc;
  ut_table *t;
  cs_store *s;
  cs_store *s0; /* the snapshot before any deletion (s itself when none) */
  bool *del;    /* [rows] deleted positions of s; NULL when none */
  uint64_t del_seed;
} astore;

/* n rows; records of rec rows (a multiple of 8), or irregular (rec 0). */
static void astore_make(astore *a, uint64_t n, uint64_t rec, uint64_t seed) {
  a->sc = ut_scratch_new();
  cs_schema schema = {N_COLS, cols};
  a->t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t i = 0; i < n; i++) {
    ut_table_add_row(a->t);
    for (uint32_t c = 0; c < N_COLS; c++) gen_cell(&r, c, i, ut_table_cell(a->t, i, c));
  }
  ut_table_create_store(a->t, a->sc.path, n, rec ? rec : 64, rec ? 0 : 37);
  a->s = a->s0 = ut_open_ok(a->sc.path, CS_VERIFY_FULL, "agg store");
  a->del = NULL;
  a->del_seed = 0;
}

/* What astore_delete does to a record.  The last two leave nothing to
** read: a record without deletions may be answered from its statistics,
** a wholly deleted one is skipped. */
enum { DEL_ONE_MIDDLE, DEL_RANDOM, DEL_ALL_BUT_ONE, DEL_SPARSE, DEL_NONE, DEL_WHOLE, N_DEL_PATTERNS };

/* Deletes, record by record, by the patterns above (and the store's last
** row), in one committed transaction; a->s is the new snapshot, a->s0 keeps
** the old one (the same values at the same positions, none deleted), a->del
** the deleted positions.  Records [0, mixed) take the patterns in turn
** (rotated by seed), so every one is among the first six and the record
** deleted in its middle lies where no predicate, or the sorted id's cut, is
** proven true by the zone maps: the statistics path would be tempted there.
** Records from mixed on take the first four only, and are all read. */
static void astore_delete(astore *a, uint64_t seed, uint64_t mixed) {
  uint64_t n = cs_store_rows(a->s), k = 0;
  a->del = calloc(n, 1);
  uint64_t *rows = malloc(n * sizeof *rows);
  ck_assert(a->del && rows);
  a->del_seed = seed;
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t rec = 0; rec < cs_store_records(a->s); rec++) {
    uint64_t lo = cs_store_record_first_row(a->s, rec), len = cs_store_record_rows(a->s, rec);
    uint64_t keep = lo + ut_rng_below(&r, len);
    for (uint64_t i = lo; i < lo + len; i++) {
      bool d;
      switch ((rec + seed) % (rec < mixed ? N_DEL_PATTERNS : DEL_NONE)) {
        case DEL_ONE_MIDDLE: d = i == lo + len / 2; break;
        case DEL_RANDOM: d = ut_rng_below(&r, 3) == 0; break;
        case DEL_ALL_BUT_ONE: d = i != keep; break;
        case DEL_SPARSE: d = ut_rng_below(&r, 40) == 0; break;
        case DEL_WHOLE: d = true; break;
        default: d = false; break;
      }
      if (d || i == n - 1) rows[k++] = i, a->del[i] = true;
    }
  }
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_append(a->sc.path, NULL, &w, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(cs_writer_delete(w, rows, k, NULL, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
  free(rows);
  a->s = ut_open_ok(a->sc.path, CS_VERIFY_FULL, "agg store with deletions");
  uint64_t dead = 0;
  for (uint64_t i = 0; i < n; i++) dead += a->del[i];
  ck_assert_msg(cs_store_live_rows(a->s) == n - dead,
                "deletion seed %" PRIu64 ": %" PRIu64 " live rows, want %" PRIu64, seed,
                cs_store_live_rows(a->s), n - dead);
}

static bool astore_deleted(const astore *a, uint64_t row) { return a->del && a->del[row]; }

static void astore_free(astore *a) {
  if (a->s0 != a->s) cs_store_close(a->s0);
  cs_store_close(a->s);
  free(a->del);
  ut_table_free(a->t);
  ut_scratch_free(&a->sc);
}

/* ------------------------------------------------------------- reference */

static bool cell_null(cs_type t, const ut_cell *c) { return c->null || (cs_type_is_float(t) && isnan(c->f)); }

static int cell_cmp(cs_type t, const ut_cell *a, const ut_cell *b) {
  if (cs_type_is_integer(t)) return (a->i > b->i) - (a->i < b->i);
  if (cs_type_is_float(t)) return (a->f > b->f) - (a->f < b->f);
  uint64_t m = a->len < b->len ? a->len : b->len;
  int c = m ? memcmp(a->bytes, b->bytes, m) : 0;
  return c ? (c > 0) - (c < 0) : (a->len > b->len) - (a->len < b->len);
}

typedef struct rcol {
  uint64_t cnt;
  i128 isum;
  double s, c, mag;
  const ut_cell *min, *max;
} rcol;

typedef struct rgroup {
  uint64_t row; /* a row holding the key */
  uint64_t rows;
  rcol col[N_COLS];
} rgroup;

typedef struct rref {
  rgroup *g;
  uint64_t n, cap;
} rref;

static bool keys_equal(const ut_table *t, const uint32_t *keys, uint32_t nk, uint64_t a, uint64_t b) {
  for (uint32_t k = 0; k < nk; k++) {
    cs_type ty = cols[keys[k]].type;
    const ut_cell *x = ut_table_cell(t, a, keys[k]), *y = ut_table_cell(t, b, keys[k]);
    bool nx = cell_null(ty, x), ny = cell_null(ty, y);
    if (nx != ny) return false;
    if (!nx && cell_cmp(ty, x, y) != 0) return false;
  }
  return true;
}

static void ref_add(rref *R, const ut_table *t, const uint32_t *keys, uint32_t nk, uint64_t row) {
  uint64_t g = 0;
  while (g < R->n && !keys_equal(t, keys, nk, R->g[g].row, row)) g++;
  if (g == R->n) {
    if (R->n == R->cap) {
      R->cap = R->cap ? 2 * R->cap : 16;
      R->g = realloc(R->g, R->cap * sizeof *R->g);
      ck_assert_ptr_nonnull(R->g);
    }
    memset(&R->g[g], 0, sizeof R->g[g]);
    R->g[g].row = row;
    R->n++;
  }
  rgroup *G = &R->g[g];
  G->rows++;
  for (uint32_t c = 0; c < N_COLS; c++) {
    cs_type ty = cols[c].type;
    const ut_cell *x = ut_table_cell(t, row, c);
    if (cell_null(ty, x)) continue;
    rcol *rc = &G->col[c];
    rc->cnt++;
    if (cs_type_is_integer(ty)) rc->isum += x->i;
    if (cs_type_is_float(ty)) {
      double v = x->f, u = rc->s + v;
      rc->c += fabs(rc->s) >= fabs(v) ? (rc->s - u) + v : (v - u) + rc->s;
      rc->s = u;
      rc->mag += fabs(v);
    }
    if (!rc->min || cell_cmp(ty, x, rc->min) < 0) rc->min = x;
    if (!rc->max || cell_cmp(ty, x, rc->max) > 0) rc->max = x;
  }
}

/* ----------------------------------------------------------- comparison */

static unsigned what_all[N_COLS];

static void what_init(void) {
  for (uint32_t c = 0; c < N_COLS; c++)
    what_all[c] = CS_AGG_COUNT | CS_AGG_MIN | CS_AGG_MAX | (cs_type_is_varlen(cols[c].type) ? 0 : CS_AGG_SUM);
}

/* Counts, minima and maxima only: integer columns are then answered from
** the chunks' own statistics (null count, zone maps) on the stats path. */
static void what_no_sums(void) {
  what_init();
  for (uint32_t c = 0; c < N_COLS; c++) what_all[c] &= ~CS_AGG_SUM;
}

static bool value_is_cell(cs_type t, const cs_value *v, const ut_cell *c) {
  if (cell_null(t, c)) return v->kind == CS_VAL_NULL;
  if (cs_type_is_integer(t)) return v->kind == CS_VAL_INT && v->i == c->i;
  if (cs_type_is_float(t)) return v->kind == CS_VAL_FLOAT && v->f == c->f && !(v->f == 0 && signbit(v->f));
  cs_value_kind want = t == CS_TYPE_BLOB ? CS_VAL_BLOB : CS_VAL_TEXT;
  return v->kind == want && v->n == c->len && (c->len == 0 || memcmp(v->p, c->bytes, c->len) == 0);
}

/* Groups are matched by sorting both sides by key (SQLite's order, NULL
** first) and walking them in step. */
static const ut_table *sort_t;
static const uint32_t *sort_keys;
static uint32_t sort_nk;
static const cs_agg *sort_ag;

static int ref_group_cmp(const void *pa, const void *pb) {
  const rgroup *a = pa, *b = pb;
  for (uint32_t k = 0; k < sort_nk; k++) {
    cs_type ty = cols[sort_keys[k]].type;
    const ut_cell *x = ut_table_cell(sort_t, a->row, sort_keys[k]),
                  *y = ut_table_cell(sort_t, b->row, sort_keys[k]);
    bool nx = cell_null(ty, x), ny = cell_null(ty, y);
    int c = nx || ny ? (int)ny - (int)nx : cell_cmp(ty, x, y);
    if (c) return c;
  }
  return 0;
}

static int value_cmp(const cs_value *x, const cs_value *y) {
  if (x->kind == CS_VAL_NULL || y->kind == CS_VAL_NULL)
    return (y->kind == CS_VAL_NULL) - (x->kind == CS_VAL_NULL);
  if (x->kind == CS_VAL_INT) return (x->i > y->i) - (x->i < y->i);
  if (x->kind == CS_VAL_FLOAT) return (x->f > y->f) - (x->f < y->f);
  uint64_t m = x->n < y->n ? x->n : y->n;
  int c = m ? memcmp(x->p, y->p, m) : 0;
  return c ? (c > 0) - (c < 0) : (x->n > y->n) - (x->n < y->n);
}

static int agg_group_cmp(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  for (uint32_t k = 0; k < sort_nk; k++) {
    cs_value x, y;
    cs_agg_key(sort_ag, a, k, &x), cs_agg_key(sort_ag, b, k, &y);
    int c = value_cmp(&x, &y);
    if (c) return c;
  }
  return 0;
}

static void check_against(const cs_agg *ag, const rref *R, const ut_table *t, const uint32_t *keys,
                          uint32_t nk, const char *ctx) {
  if (nk == 0) {
    ck_assert_msg(cs_agg_groups(ag) == 1, "%s: no keys, %" PRIu64 " groups", ctx, cs_agg_groups(ag));
  } else {
    ck_assert_msg(cs_agg_groups(ag) == R->n, "%s: %" PRIu64 " groups, want %" PRIu64, ctx, cs_agg_groups(ag),
                  R->n);
  }
  rgroup empty;
  memset(&empty, 0, sizeof empty);
  uint64_t *order = malloc((R->n + 1) * sizeof *order);
  ck_assert_ptr_nonnull(order);
  sort_t = t, sort_keys = keys, sort_nk = nk, sort_ag = ag;
  if (nk && R->n) {
    qsort(R->g, R->n, sizeof *R->g, ref_group_cmp);
    for (uint64_t g = 0; g < R->n; g++) order[g] = g;
    qsort(order, R->n, sizeof *order, agg_group_cmp);
  }
  for (uint64_t i = 0; i < (nk ? R->n : 1); i++) {
    const rgroup *G = R->n ? &R->g[i] : &empty;
    uint64_t g = nk ? order[i] : 0;
    for (uint32_t k = 0; k < nk; k++) {
      cs_value v;
      cs_agg_key(ag, g, k, &v);
      if (!value_is_cell(cols[keys[k]].type, &v, ut_table_cell(t, G->row, keys[k])))
        ck_abort_msg("%s: group %" PRIu64 " (row %" PRIu64 "): key %u differs", ctx, i, G->row, k);
    }
    if (cs_agg_count(ag, g) != G->rows)
      ck_abort_msg("%s: group %" PRIu64 ": count %" PRIu64 " want %" PRIu64, ctx, i, cs_agg_count(ag, g),
                   G->rows);
    for (uint32_t c = 0; c < N_COLS; c++) {
      cs_type ty = cols[c].type;
      const rcol *rc = &G->col[c];
      cs_agg_result res;
      cs_agg_result_get(ag, g, c, &res);
      if (res.count != rc->cnt)
        ck_abort_msg("%s: group %" PRIu64 " col %s: count %" PRIu64 " want %" PRIu64, ctx, i, cols[c].name,
                     res.count, rc->cnt);
      if (rc->cnt == 0) {
        if (res.min.kind != CS_VAL_NULL || res.max.kind != CS_VAL_NULL || res.sum.kind != CS_VAL_NULL)
          ck_abort_msg("%s: col %s: empty group must give NULLs", ctx, cols[c].name);
        continue;
      }
      if (!value_is_cell(ty, &res.min, rc->min) || !value_is_cell(ty, &res.max, rc->max))
        ck_abort_msg("%s: group %" PRIu64 " col %s: min/max differ", ctx, i, cols[c].name);
      if (!(what_all[c] & CS_AGG_SUM)) continue; /* sums not asked for */
      if (cs_type_is_integer(ty)) {
        bool over = rc->isum < INT64_MIN || rc->isum > INT64_MAX;
        if (res.sum_overflow != over)
          ck_abort_msg("%s: col %s: overflow %d want %d", ctx, cols[c].name, res.sum_overflow, over);
        if (!over && (res.sum.kind != CS_VAL_INT || res.sum.i != (int64_t)rc->isum))
          ck_abort_msg("%s: group %" PRIu64 " col %s: sum %" PRId64 " want %" PRId64, ctx, i, cols[c].name,
                       res.sum.i, (int64_t)rc->isum);
        if (res.avg != (double)rc->isum / (double)rc->cnt) ck_abort_msg("%s: col %s: avg", ctx, cols[c].name);
      } else if (cs_type_is_float(ty)) {
        double want = rc->s + rc->c;
        if (res.sum.kind != CS_VAL_FLOAT || !(fabs(res.sum.f - want) <= 1e-12 * rc->mag))
          ck_abort_msg("%s: group %" PRIu64 " col %s: sum %.17g want %.17g", ctx, i, cols[c].name, res.sum.f,
                       want);
        if (!(fabs(res.avg - want / (double)rc->cnt) <= 1e-12 * rc->mag / (double)rc->cnt))
          ck_abort_msg("%s: col %s: avg %.17g", ctx, cols[c].name, res.avg);
      }
    }
  }
  free(order);
}

/* The selection: rows [first, first + n) passing preds and mask, less
** the deleted ones.  The predicates are evaluated on the snapshot before
** the deletions (A->s0), and deleted rows dropped by the test's own list. */
static void ref_range(rref *R, const astore *A, const cs_pred *preds, uint32_t np, uint64_t first, uint64_t n,
                      const uint8_t *mask, const uint32_t *keys, uint32_t nk) {
  uint8_t *pm = malloc(n + 1);
  ck_assert_ptr_nonnull(pm);
  cs_pred_eval(A->s0, preds, np, first, n, pm, NULL);
  for (uint64_t i = 0; i < n; i++)
    if (pm[i] && (!mask || mask[i]) && !astore_deleted(A, first + i)) ref_add(R, A->t, keys, nk, first + i);
  free(pm);
}

static cs_agg *agg_make(const cs_store *s, const uint32_t *keys, uint32_t nk, int threads) {
  cs_agg_spec spec = {keys, nk, what_all, threads};
  cs_agg *ag;
  cs_err err = {0};
  ck_assert_msg(cs_agg_new(s, &spec, &ag, &err) == CS_OK, "cs_agg_new: %s", err.msg);
  return ag;
}

static cs_selector *sel_make(const cs_store *s, const cs_pred *preds, uint32_t np) {
  cs_selector *sel;
  cs_err err = {0};
  ck_assert_msg(cs_selector_new(s, preds, np, &sel, &err) == CS_OK, "selector: %s", err.msg);
  return sel;
}

static void add_range_ok(cs_agg *ag, const cs_selector *sel, uint64_t first, uint64_t n,
                         const uint8_t *mask) {
  cs_err err = {0};
  ck_assert_msg(cs_agg_add_range(ag, sel, first, n, mask, &err) == CS_OK, "add_range: %s", err.msg);
}

/* ----------------------------------------------------------------- tests */

/* Predicate sets: none; a cut of the sorted id (skips, proves true, cuts
** one record); an integer range; a float range; an IN on TEXT. */
static int preds_for(int k, uint64_t rows, cs_pred *p) {
  cs_value v1 = {.kind = CS_VAL_INT, .i = (int64_t)(rows * 2 / 5) + 3};
  cs_value v2 = {.kind = CS_VAL_INT, .i = (int64_t)(rows / 5)};
  switch (k) {
    case 0: return 0;
    case 1: p[0] = (cs_pred){.col = C_ID, .op = CS_CMP_LT, .a = v1}; return 1;
    case 2:
      p[0] = (cs_pred){.col = C_ID, .op = CS_CMP_BETWEEN, .a = v2, .b = v1};
      p[1] = (cs_pred){.col = C_I16, .op = CS_CMP_GE, .a = {.kind = CS_VAL_INT, .i = -1}};
      return 2;
    case 3: p[0] = (cs_pred){.col = C_F64, .op = CS_CMP_GT, .a = {.kind = CS_VAL_FLOAT, .f = 0.0}}; return 1;
    default: p[0] = (cs_pred){.col = C_KT, .op = CS_CMP_NOTNULL}; return 1;
  }
}
#define N_PRED_SETS 5

/* Single keys of every type; integer pairs and triples that pack into a
** direct index ({k8, bo}, {bo, u8}) or a packed hash ({k8, i8, bo}: 8,481
** codes for ~2,000 rows; {u16, u32}), one whose range does not pack
** ({i64, k8}), and tuples with floats and TEXT. */
static const uint32_t key_sets[][3] = {
    {0},
    {C_K8},
    {C_I8},
    {C_I16},
    {C_I32},
    {C_I64},
    {C_U8},
    {C_U16},
    {C_U32},
    {C_F32},
    {C_F64},
    {C_BO},
    {C_T},
    {C_BL},
    {C_KF},
    {C_KT},
    {C_K8, C_KT},
    {C_KF, C_BO, C_KT},
    {C_K8, C_BO},
    {C_BO, C_U8},
    {C_K8, C_I8, C_BO},
    {C_U16, C_U32},
    {C_I64, C_K8},
};
static const uint32_t key_counts[] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 2, 2, 3, 2, 2};
#define N_KEY_SETS (sizeof key_counts / sizeof key_counts[0])

/* deletions: on a store with deletions (astore_delete, seed printed). */
static void range_matches_reference(int _i, bool deletions) {
  what_init();
  uint64_t seed = 1000 + (uint64_t)_i;
  astore A;
  uint64_t n = 1500 + (uint64_t)_i * 311;
  astore_make(&A, n, _i % 3 == 0 ? 0 : _i % 3 == 1 ? 64 : 200, seed);
  if (deletions) astore_delete(&A, seed + 5, UINT64_MAX);
  ut_rng r = ut_rng_seed(seed ^ 77);
  for (uint32_t ks = 0; ks < N_KEY_SETS; ks++) {
    for (int ps = 0; ps < N_PRED_SETS; ps++) {
      cs_pred preds[2];
      int np = preds_for(ps, n, preds);
      uint64_t first = ut_rng_below(&r, 3) == 0 ? ut_rng_below(&r, n / 3) : 0;
      uint64_t cnt = ut_rng_below(&r, 3) == 0 ? ut_rng_below(&r, n - first + 1) : n - first;
      uint8_t *mask = NULL;
      if (ut_rng_below(&r, 3) == 0) {
        mask = malloc(cnt + 1);
        for (uint64_t i = 0; i < cnt; i++)
          mask[i] = ut_rng_below(&r, 3) == 0 ? 0 : (uint8_t)(1 + ut_rng_below(&r, 9));
      }
      rref R = {0};
      ref_range(&R, &A, preds, (uint32_t)np, first, cnt, mask, key_sets[ks], key_counts[ks]);
      cs_selector *sel = np ? sel_make(A.s, preds, (uint32_t)np) : NULL;
      cs_agg *ag = agg_make(A.s, key_sets[ks], key_counts[ks], 1 + (int)(ks % 3));
      /* in two calls, so adds accumulate */
      uint64_t half = cnt / 2;
      add_range_ok(ag, sel, first, half, mask);
      add_range_ok(ag, sel, first + half, cnt - half, mask ? mask + half : NULL);
      char ctx[160];
      snprintf(ctx, sizeof ctx,
               "seed %" PRIu64 " deletion seed %" PRIu64 " keys %u preds %d rows %" PRIu64 "+%" PRIu64
               " mask %d",
               seed, A.del_seed, ks, ps, first, cnt, mask != NULL);
      check_against(ag, &R, A.t, key_sets[ks], key_counts[ks], ctx);
      cs_agg_stats st;
      cs_agg_stats_get(ag, &st);
      uint64_t want_rows = 0;
      for (uint64_t g = 0; g < R.n; g++) want_rows += R.g[g].rows;
      ck_assert_uint_eq(st.rows_selected, want_rows);
      cs_agg_free(ag);
      cs_selector_free(sel);
      free(R.g);
      free(mask);
    }
  }
  astore_free(&A);
}

START_TEST(test_agg_range_every_key_and_type_matches_reference) { range_matches_reference(_i, false); }
END_TEST

/* A deleted position is never aggregated, whatever the path. */
START_TEST(test_agg_range_with_deletions_matches_reference) { range_matches_reference(_i, true); }
END_TEST

/* The same with the switch points moved: no direct index and a scatter
** for every group count; then a direct index wherever the codes are at
** most the rows and a masked pass per group for up to 64 groups (or, for
** _i 4, up to 64 groups scattered into lanes when none dominates).  A TEXT
** key's dictionary per record: the default, two keys (full at once), none. */
START_TEST(test_agg_forced_paths_match_reference) {
  cs__agg_tuning t;
  cs__agg_tuning_default(&t);
  t.direct_max = _i < 3 ? 0 : UINT64_MAX;
  t.few_groups = _i < 3 ? 0 : 64;
  if (_i % 3) t.dict_max = _i % 3 == 1 ? 2 : 0;
  if (_i == 4) t.lane_groups = 64;
  cs__agg_tuning_set(&t);
  range_matches_reference(_i % 3, false);
  cs__agg_tuning_set(NULL);
}
END_TEST

/* With deletions, both settings: a scatter everywhere (and a dictionary of
** two keys), then direct indexes and masked passes per group (or lanes). */
START_TEST(test_agg_forced_paths_with_deletions_match_reference) {
  cs__agg_tuning t;
  cs__agg_tuning_default(&t);
  t.direct_max = _i == 0 ? 0 : UINT64_MAX;
  t.few_groups = _i == 0 ? 0 : 64;
  if (_i == 0) t.dict_max = 2;
  if (_i == 1) t.lane_groups = 64;
  cs__agg_tuning_set(&t);
  range_matches_reference(1 + _i, true);
  cs__agg_tuning_set(NULL);
}
END_TEST

/* The selection of a list: rows[0, m) (each time it appears) passing the
** predicates on the snapshot before the deletions, less the deleted ones. */
static void ref_rows(rref *R, const astore *A, const cs_pred *preds, uint32_t np, const uint64_t *rows,
                     uint64_t m, const uint32_t *keys, uint32_t nk) {
  uint64_t n = cs_store_rows(A->s0);
  uint8_t *pm = malloc(n);
  ck_assert_ptr_nonnull(pm);
  cs_pred_eval(A->s0, preds, np, 0, n, pm, NULL);
  for (uint64_t i = 0; i < m; i++)
    if (pm[rows[i]] && !astore_deleted(A, rows[i])) ref_add(R, A->t, keys, nk, rows[i]);
  free(pm);
}

/* m random rows of A: duplicates, and (with deletions) deleted positions
** and duplicates of live rows, all present. */
static uint64_t *random_rows(const astore *A, uint64_t m, uint64_t seed) {
  uint64_t n = cs_store_rows(A->s);
  uint64_t *rows = malloc(m * sizeof *rows);
  ck_assert_ptr_nonnull(rows);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t i = 0; i < m; i++) rows[i] = ut_rng_below(&r, n);
  if (A->del) {
    uint64_t dead = 0, live_twice = 0;
    uint8_t *seen = calloc(n, 1);
    ck_assert_ptr_nonnull(seen);
    for (uint64_t i = 0; i < m; i++) {
      dead += A->del[rows[i]];
      live_twice += !A->del[rows[i]] && seen[rows[i]];
      seen[rows[i]] = 1;
    }
    free(seen);
    ck_assert_msg(dead > 0 && live_twice > 0,
                  "list seed %" PRIu64 ": %" PRIu64 " deleted, %" PRIu64 " live repeats", seed, dead,
                  live_twice);
  }
  return rows;
}

static void rows_match_reference(int _i, bool deletions) {
  what_init();
  uint64_t seed = 2000 + (uint64_t)_i;
  astore A;
  uint64_t n = 1200;
  astore_make(&A, n, _i ? 64 : 0, seed);
  if (deletions) astore_delete(&A, seed + 7, UINT64_MAX);
  uint64_t m = 3000;
  uint64_t *rows = random_rows(&A, m, seed);
  for (uint32_t ks = 0; ks < N_KEY_SETS; ks++) {
    for (int ps = 0; ps < N_PRED_SETS; ps++) {
      cs_pred preds[2];
      int np = preds_for(ps, n, preds);
      rref R = {0};
      ref_rows(&R, &A, preds, (uint32_t)np, rows, m, key_sets[ks], key_counts[ks]);
      cs_selector *sel = np ? sel_make(A.s, preds, (uint32_t)np) : NULL;
      cs_agg *ag = agg_make(A.s, key_sets[ks], key_counts[ks], 0);
      cs_err err = {0};
      ck_assert(cs_agg_add_rows(ag, sel, rows, m, &err) == CS_OK);
      char ctx[128];
      snprintf(ctx, sizeof ctx, "rows seed %" PRIu64 " deletion seed %" PRIu64 " keys %u preds %d", seed,
               A.del_seed, ks, ps);
      check_against(ag, &R, A.t, key_sets[ks], key_counts[ks], ctx);
      cs_agg_stats st;
      cs_agg_stats_get(ag, &st);
      uint64_t want_rows = 0;
      for (uint64_t g = 0; g < R.n; g++) want_rows += R.g[g].rows;
      ck_assert_msg(st.rows_selected == want_rows, "%s: %" PRIu64 " rows selected, want %" PRIu64, ctx,
                    st.rows_selected, want_rows);
      cs_agg_free(ag);
      cs_selector_free(sel);
      free(R.g);
    }
  }
  free(rows);
  astore_free(&A);
}

START_TEST(test_agg_rows_any_order_and_duplicates_match_reference) { rows_match_reference(_i, false); }
END_TEST

/* Deleted positions in a list are not aggregated; live duplicates count
** each time. */
START_TEST(test_agg_rows_with_deletions_and_duplicates_match_reference) { rows_match_reference(_i, true); }
END_TEST

START_TEST(test_agg_empty_selection_one_group_without_keys_none_with) {
  what_init();
  astore A;
  astore_make(&A, 300, 64, 5);
  cs_pred p = {.col = C_ID, .op = CS_CMP_LT, .a = {.kind = CS_VAL_INT, .i = -5}};
  cs_selector *sel = sel_make(A.s, &p, 1);
  uint32_t key = C_K8;
  cs_agg *a0 = agg_make(A.s, NULL, 0, 0), *a1 = agg_make(A.s, &key, 1, 0);
  ck_assert_uint_eq(cs_agg_groups(a0), 1);
  ck_assert_uint_eq(cs_agg_groups(a1), 0);
  add_range_ok(a0, sel, 0, 300, NULL);
  add_range_ok(a1, sel, 0, 300, NULL);
  add_range_ok(a0, NULL, 10, 0, NULL);
  ck_assert_uint_eq(cs_agg_groups(a0), 1);
  ck_assert_uint_eq(cs_agg_count(a0, 0), 0);
  ck_assert_uint_eq(cs_agg_groups(a1), 0);
  cs_agg_result res;
  cs_agg_result_get(a0, 0, C_I64, &res);
  ck_assert_uint_eq(res.count, 0);
  ck_assert_int_eq(res.sum.kind, CS_VAL_NULL);
  ck_assert_int_eq(res.min.kind, CS_VAL_NULL);
  cs_agg_stats st;
  cs_agg_stats_get(a0, &st);
  ck_assert_uint_eq(st.records_skipped, cs_store_records(A.s));
  ck_assert_uint_eq(st.records_scanned, 0);
  cs_agg_free(a0), cs_agg_free(a1);
  cs_selector_free(sel);
  astore_free(&A);
}
END_TEST

/* A small store of one INT64 and one FLOAT64 column. */
static cs_store *small_store(ut_scratch *sc, const int64_t *iv, const double *fv, uint64_t n, uint64_t rec) {
  static const cs_column c2[2] = {{"i", CS_TYPE_INT64, true}, {"f", CS_TYPE_FLOAT64, true}};
  cs_schema schema = {2, c2};
  ut_table *t = ut_table_new(&schema);
  for (uint64_t i = 0; i < n; i++) {
    ut_table_add_row(t);
    ut_cell_set_int(ut_table_cell(t, i, 0), iv[i]);
    ut_cell_set_float(ut_table_cell(t, i, 1), CS_TYPE_FLOAT64, fv[i]);
  }
  *sc = ut_scratch_new();
  ut_table_create_store(t, sc->path, n, rec, 0);
  ut_table_free(t);
  return ut_open_ok(sc->path, CS_VERIFY_FULL, "small");
}

START_TEST(test_agg_int64_sum_overflow_is_flagged_and_exact_when_back_in_range) {
  int64_t iv[] = {INT64_MAX, 1, INT64_MAX, -1, INT64_MIN, INT64_MIN};
  double fv[] = {NAN, -0.0, 0.0, NAN, INFINITY, 1.0};
  ut_scratch sc;
  cs_store *s = small_store(&sc, iv, fv, 6, 8);
  unsigned what[2] = {CS_AGG_COUNT | CS_AGG_SUM | CS_AGG_MIN | CS_AGG_MAX,
                      CS_AGG_COUNT | CS_AGG_SUM | CS_AGG_MIN | CS_AGG_MAX};
  cs_agg_spec spec = {NULL, 0, what, 1};
  cs_err err = {0};
  struct {
    uint64_t first, n;
    bool over;
    int64_t sum;
  } cases[] = {
      {0, 2, true, 0}, {0, 4, true, 0}, {1, 3, false, INT64_MAX}, {2, 3, false, INT64_MAX - 1 + INT64_MIN},
      {3, 3, true, 0}, {4, 2, true, 0}, {0, 1, false, INT64_MAX}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cs_agg *a;
    ck_assert(cs_agg_new(s, &spec, &a, &err) == CS_OK);
    add_range_ok(a, NULL, cases[k].first, cases[k].n, NULL);
    cs_agg_result res;
    cs_agg_result_get(a, 0, 0, &res);
    ck_assert_msg(res.sum_overflow == cases[k].over, "case %u", k);
    if (!cases[k].over) ck_assert_int_eq(res.sum.i, cases[k].sum);
    i128 exact = 0;
    for (uint64_t i = cases[k].first; i < cases[k].first + cases[k].n; i++) exact += iv[i];
    ck_assert_msg(res.avg == (double)exact / (double)cases[k].n, "case %u avg", k);
    cs_agg_free(a);
  }
  /* floats: NaN is NULL, -0.0 min delivered as 0.0, inf sums to inf */
  cs_agg *a;
  ck_assert(cs_agg_new(s, &spec, &a, &err) == CS_OK);
  add_range_ok(a, NULL, 0, 4, NULL);
  cs_agg_result res;
  cs_agg_result_get(a, 0, 1, &res);
  ck_assert_uint_eq(res.count, 2);
  ck_assert(res.min.f == 0.0 && !signbit(res.min.f) && !signbit(res.max.f) && !signbit(res.sum.f));
  add_range_ok(a, NULL, 4, 2, NULL);
  cs_agg_result_get(a, 0, 1, &res);
  ck_assert(isinf(res.sum.f) && res.sum.f > 0 && isinf(res.max.f));
  cs_agg_free(a);
  cs_store_close(s);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_agg_float_keys_nan_is_null_and_negative_zero_is_zero) {
  int64_t iv[] = {1, 2, 3, 4, 5, 6, 7};
  double fv[] = {-0.0, 0.0, NAN, 2.5, -0.0, NAN, 2.5};
  ut_scratch sc;
  cs_store *s = small_store(&sc, iv, fv, 7, 8);
  /* NULL f: the writer stores a NULL when told; make one by a second store is
  ** not needed: NaN already reads as NULL */
  unsigned what[2] = {CS_AGG_COUNT | CS_AGG_SUM, 0};
  uint32_t key = 1;
  cs_agg_spec spec = {&key, 1, what, 1};
  cs_agg *a;
  cs_err err = {0};
  ck_assert(cs_agg_new(s, &spec, &a, &err) == CS_OK);
  add_range_ok(a, NULL, 0, 7, NULL);
  ck_assert_uint_eq(cs_agg_groups(a), 3);
  bool seen[3] = {0};
  for (uint64_t g = 0; g < 3; g++) {
    cs_value v;
    cs_agg_key(a, g, 0, &v);
    cs_agg_result res;
    cs_agg_result_get(a, g, 0, &res);
    if (v.kind == CS_VAL_NULL) {
      ck_assert_int_eq(res.sum.i, 3 + 6);
      seen[0] = true;
    } else if (v.f == 0.0) {
      ck_assert(!signbit(v.f));
      ck_assert_int_eq(res.sum.i, 1 + 2 + 5);
      seen[1] = true;
    } else {
      ck_assert(v.f == 2.5);
      ck_assert_int_eq(res.sum.i, 4 + 7);
      seen[2] = true;
    }
  }
  ck_assert(seen[0] && seen[1] && seen[2]);
  cs_agg_free(a);
  cs_store_close(s);
  ut_scratch_free(&sc);
}
END_TEST

/* Whether column c of two ungrouped aggregates is the same, bit for bit
** (sums and averages only where what_all asks for them). */
static bool results_identical(const cs_agg *a, const cs_agg *b, uint32_t c) {
  cs_agg_result x, y;
  cs_agg_result_get(a, 0, c, &x), cs_agg_result_get(b, 0, c, &y);
  bool sums =
      !(what_all[c] & CS_AGG_SUM) || (x.sum.kind == y.sum.kind && x.sum.i == y.sum.i &&
                                      memcmp(&x.sum.f, &y.sum.f, 8) == 0 && memcmp(&x.avg, &y.avg, 8) == 0);
  return sums && x.count == y.count && x.min.i == y.min.i && memcmp(&x.min.f, &y.min.f, 8) == 0 &&
         x.max.i == y.max.i && memcmp(&x.max.f, &y.max.f, 8) == 0 && x.min.n == y.min.n && x.max.n == y.max.n;
}

/* Ungrouped, unfiltered: every record from the per-record statistics; with
** an all-ones mask: every record from its data.  The same bits. */
START_TEST(test_agg_record_statistics_equal_the_data_path) {
  what_init();
  astore A;
  astore_make(&A, 5000, _i ? 200 : 0, 31 + (uint64_t)_i);
  uint8_t *ones = malloc(5000);
  memset(ones, 1, 5000);
  for (int round = 0; round < 2; round++) { /* the second finds the cache */
    cs_agg *st = agg_make(A.s, NULL, 0, 1), *dp = agg_make(A.s, NULL, 0, 1);
    add_range_ok(st, NULL, 0, 5000, NULL);
    add_range_ok(dp, NULL, 0, 5000, ones);
    cs_agg_stats s1, s2;
    cs_agg_stats_get(st, &s1), cs_agg_stats_get(dp, &s2);
    ck_assert_uint_eq(s1.records_from_stats, cs_store_records(A.s));
    ck_assert_uint_eq(s2.records_from_stats, 0);
    ck_assert_uint_eq(s2.records_scanned, cs_store_records(A.s));
    for (uint32_t c = 0; c < N_COLS; c++)
      ck_assert_msg(results_identical(st, dp, c), "col %s differs between statistics and data", cols[c].name);
    rref R = {0};
    ref_range(&R, &A, NULL, 0, 0, 5000, NULL, NULL, 0);
    check_against(st, &R, A.t, NULL, 0, "stats path");
    free(R.g);
    cs_agg_free(st), cs_agg_free(dp);
  }
  free(ones);
  astore_free(&A);
}
END_TEST

/* With deletions, ungrouped and whole: a record without deletions is
** answered from its statistics, a wholly deleted one skipped, every other
** read (its statistics count the deleted values); the answers equal the
** reference and, bit for bit, the data path's (an all-ones mask).  With
** and without sums (integers without sums take the chunks' statistics),
** with no predicate and with the sorted id's cut. */
START_TEST(test_agg_deletions_never_answered_from_record_statistics) {
  astore A;
  uint64_t n = 5000;
  astore_make(&A, n, _i ? 200 : 0, 41 + (uint64_t)_i);
  astore_delete(&A, 43 + (uint64_t)_i, UINT64_MAX);
  uint8_t *ones = malloc(n);
  ck_assert_ptr_nonnull(ones);
  memset(ones, 1, n);
  for (int variant = 0; variant < 4; variant++) {
    if (variant & 1)
      what_no_sums();
    else
      what_init();
    cs_pred preds[2];
    int np = preds_for(variant < 2 ? 0 : 1, n, preds);
    cs_selector *sel = np ? sel_make(A.s, preds, (uint32_t)np) : NULL;
    /* what each record should take: statistics, skipped, or read */
    uint64_t want_stats = 0, want_skip = 0, want_read = 0;
    for (uint64_t rec = 0; rec < cs_store_records(A.s); rec++) {
      uint64_t lo = cs_store_record_first_row(A.s, rec), len = cs_store_record_rows(A.s, rec), dead = 0;
      for (uint64_t i = lo; i < lo + len; i++) dead += A.del[i];
      bool below = !np || lo + len - 1 < (uint64_t)preds[0].a.i; /* proven true */
      bool above = np && lo >= (uint64_t)preds[0].a.i;           /* ruled out */
      if (above || dead == len)
        want_skip++;
      else if (below && dead == 0)
        want_stats++;
      else
        want_read++;
    }
    ck_assert(want_stats > 0 && want_read > 0 && want_skip > 0);
    for (int round = 0; round < 2; round++) { /* the second finds the cache */
      cs_agg *st = agg_make(A.s, NULL, 0, 1), *dp = agg_make(A.s, NULL, 0, 1);
      add_range_ok(st, sel, 0, n, NULL);
      add_range_ok(dp, sel, 0, n, ones);
      cs_agg_stats s1, s2;
      cs_agg_stats_get(st, &s1), cs_agg_stats_get(dp, &s2);
      char ctx[128];
      snprintf(ctx, sizeof ctx, "deletion seed %" PRIu64 " variant %d round %d", A.del_seed, variant, round);
      ck_assert_msg(s1.records_from_stats == want_stats && s1.records_skipped == want_skip &&
                        s1.records_scanned == want_read,
                    "%s: %" PRIu64 " from statistics, %" PRIu64 " skipped, %" PRIu64 " read; want %" PRIu64
                    ", %" PRIu64 ", %" PRIu64,
                    ctx, s1.records_from_stats, s1.records_skipped, s1.records_scanned, want_stats, want_skip,
                    want_read);
      ck_assert_uint_eq(s2.records_from_stats, 0);
      for (uint32_t c = 0; c < N_COLS; c++)
        ck_assert_msg(results_identical(st, dp, c), "%s: col %s differs between statistics and data", ctx,
                      cols[c].name);
      rref R = {0};
      ref_range(&R, &A, preds, (uint32_t)np, 0, n, NULL, NULL, 0);
      check_against(st, &R, A.t, NULL, 0, ctx);
      ck_assert_uint_eq(s1.rows_selected, R.n ? R.g[0].rows : 0);
      free(R.g);
      cs_agg_free(st), cs_agg_free(dp);
    }
    cs_selector_free(sel);
  }
  what_init();
  free(ones);
  astore_free(&A);
}
END_TEST

/* With deletions, on enough rows for the team (a kernel takes a second
** thread from CS_PARALLEL_MIN_ELEMENTS rows read: past the first 12
** records of 4096 rows every record is read, and a call has several
** chunks): ungrouped, direct index, float hash and TEXT key, over ranges
** (predicates, a caller's mask) and a list of 270,000 rows, at 1 and 2
** threads; each against the reference. */
START_TEST(test_agg_deletions_with_threads_match_reference) {
  what_init();
  astore A;
  uint64_t n = 300000, seed = 51;
  astore_make(&A, n, 4096, seed);
  astore_delete(&A, seed + 1, 12);
  uint8_t *mask = malloc(n);
  ck_assert_ptr_nonnull(mask);
  ut_rng r = ut_rng_seed(seed + 2);
  for (uint64_t i = 0; i < n; i++) mask[i] = ut_rng_below(&r, 4) != 0;
  uint64_t m = 270000;
  uint64_t *rows = random_rows(&A, m, seed + 3);
  static const uint32_t keys[][1] = {{0}, {C_K8}, {C_KF}, {C_KT}};
  static const uint32_t nks[] = {0, 1, 1, 1};
  /* preds set, mask or not, list or range */
  static const struct {
    int ps;
    bool mask, list;
  } cases[] = {{0, false, false}, {3, true, false}, {1, false, true}, {3, false, true}};
  for (unsigned ks = 0; ks < sizeof nks / sizeof nks[0]; ks++) {
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      cs_pred preds[2];
      uint32_t np = (uint32_t)preds_for(cases[k].ps, n, preds);
      const uint8_t *um = cases[k].mask ? mask : NULL;
      rref R = {0};
      if (cases[k].list)
        ref_rows(&R, &A, preds, np, rows, m, keys[ks], nks[ks]);
      else
        ref_range(&R, &A, preds, np, 0, n, um, keys[ks], nks[ks]);
      cs_selector *sel = np ? sel_make(A.s, preds, np) : NULL;
      for (int threads = 1; threads <= 2; threads++) {
        ut_kernel_config_set(threads, -1);
        cs_agg *ag = agg_make(A.s, keys[ks], nks[ks], threads);
        cs_err err = {0};
        if (cases[k].list)
          ck_assert(cs_agg_add_rows(ag, sel, rows, m, &err) == CS_OK);
        else
          add_range_ok(ag, sel, 0, n, um);
        char ctx[128];
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 " deletion seed %" PRIu64 " keys %u case %u threads %d",
                 seed, A.del_seed, ks, k, threads);
        check_against(ag, &R, A.t, keys[ks], nks[ks], ctx);
        cs_agg_stats st;
        cs_agg_stats_get(ag, &st);
        ck_assert_msg(st.threads >= 1 && st.threads <= threads, "%s: %d threads", ctx, st.threads);
        cs_agg_free(ag);
      }
      ut_kernel_config_reset();
      cs_selector_free(sel);
      free(R.g);
    }
  }
  free(rows);
  free(mask);
  astore_free(&A);
}
END_TEST

/* A store large enough for the team: 1, 2 and 4 threads agree (integers
** exactly, ungrouped floats too; grouped floats within rounding). */
START_TEST(test_agg_threads_agree) {
  uint64_t n = 700000;
  static const cs_column c3[3] = {
      {"k", CS_TYPE_INT32, true}, {"v", CS_TYPE_INT64, true}, {"f", CS_TYPE_FLOAT64, true}};
  cs_schema schema = {3, c3};
  ut_table *t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(99);
  for (uint64_t i = 0; i < n; i++) {
    ut_table_add_row(t);
    ut_cell *c = ut_table_cell(t, i, 0);
    if (ut_rng_below(&r, 20) == 0)
      ut_cell_set_null(c);
    else
      ut_cell_set_int(c, (int64_t)ut_rng_below(&r, 100000));
    ut_cell_set_int(ut_table_cell(t, i, 1), (int64_t)ut_rng_u64(&r));
    ut_cell_set_float(ut_table_cell(t, i, 2), CS_TYPE_FLOAT64, ut_rng_unit(&r) - 0.5);
  }
  ut_scratch sc = ut_scratch_new();
  ut_table_create_store(t, sc.path, n, 0, 0);
  ut_table_free(t);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_HEADER, "threads");
  unsigned what[3] = {CS_AGG_COUNT, CS_AGG_COUNT | CS_AGG_SUM | CS_AGG_MIN | CS_AGG_MAX,
                      CS_AGG_COUNT | CS_AGG_SUM};
  cs_pred p = {.col = 2, .op = CS_CMP_GT, .a = {.kind = CS_VAL_FLOAT, .f = -0.3}};
  cs_selector *sel = sel_make(s, &p, 1);
  for (uint32_t nk = 0; nk <= 1; nk++) {
    uint32_t key = 0;
    cs_agg *ag[3];
    for (int k = 0; k < 3; k++) {
      cs_agg_spec spec = {&key, nk, what, 1 << k};
      cs_err err = {0};
      ck_assert(cs_agg_new(s, &spec, &ag[k], &err) == CS_OK);
      add_range_ok(ag[k], sel, 0, n, NULL);
    }
    cs_agg_stats st;
    cs_agg_stats_get(ag[2], &st);
    ck_assert_msg(st.threads >= 1, "threads");
    ck_assert_uint_eq(cs_agg_groups(ag[0]), cs_agg_groups(ag[1]));
    ck_assert_uint_eq(cs_agg_groups(ag[0]), cs_agg_groups(ag[2]));
    /* group of each key (0..99999, NULL at 100000) in each aggregate */
    static uint64_t at[3][100001];
    for (int k = 0; k < 3 && nk; k++) {
      for (uint64_t h = 0; h <= 100000; h++) at[k][h] = UINT64_MAX;
      for (uint64_t h = 0; h < cs_agg_groups(ag[k]); h++) {
        cs_value kk;
        cs_agg_key(ag[k], h, 0, &kk);
        at[k][kk.kind == CS_VAL_NULL ? 100000 : kk.i] = h;
      }
    }
    for (uint64_t g = 0; g < cs_agg_groups(ag[0]); g++) {
      cs_value k0;
      if (nk) cs_agg_key(ag[0], g, 0, &k0);
      cs_agg_result x0, f0;
      cs_agg_result_get(ag[0], g, 1, &x0), cs_agg_result_get(ag[0], g, 2, &f0);
      for (int k = 1; k < 3; k++) {
        uint64_t h = nk ? at[k][k0.kind == CS_VAL_NULL ? 100000 : k0.i] : g;
        ck_assert(h < cs_agg_groups(ag[k]));
        cs_agg_result x, f;
        cs_agg_result_get(ag[k], h, 1, &x), cs_agg_result_get(ag[k], h, 2, &f);
        ck_assert_uint_eq(cs_agg_count(ag[k], h), cs_agg_count(ag[0], g));
        ck_assert(x.count == x0.count && x.sum_overflow == x0.sum_overflow && x.sum.i == x0.sum.i &&
                  memcmp(&x.sum.f, &x0.sum.f, 8) == 0 && x.min.i == x0.min.i && x.max.i == x0.max.i);
        if (nk == 0)
          ck_assert(memcmp(&f.sum.f, &f0.sum.f, 8) == 0);
        else
          ck_assert(fabs(f.sum.f - f0.sum.f) <= 1e-9);
      }
    }
    for (int k = 0; k < 3; k++) cs_agg_free(ag[k]);
  }
  cs_selector_free(sel);
  cs_store_close(s);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_agg_direct_index_and_hash_are_chosen_by_range) {
  what_init();
  astore A;
  astore_make(&A, 2000, 64, 8);
  struct {
    uint32_t col;
    const char *kernel;
  } cases[] = {{C_K8, "direct index"}, {C_BO, "direct index"}, {C_U8, "direct index"}, {C_I64, "hash"},
               {C_U32, "packed hash"}, {C_KT, "bytes hash"},   {C_KF, "hash"}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cs_agg *ag = agg_make(A.s, &cases[k].col, 1, 1);
    add_range_ok(ag, NULL, 0, 2000, NULL);
    cs_agg_stats st;
    cs_agg_stats_get(ag, &st);
    ck_assert_msg(strcmp(st.kernel, cases[k].kernel) == 0, "col %s: %s", cols[cases[k].col].name, st.kernel);
    cs_agg_free(ag);
  }
  astore_free(&A);
}
END_TEST

START_TEST(test_agg_bad_arguments) {
  what_init();
  astore A;
  astore_make(&A, 100, 64, 9);
  cs_err err = {0};
  cs_agg *ag;
  uint32_t bad = N_COLS;
  cs_agg_spec spec = {&bad, 1, what_all, 0};
  ck_assert_int_eq(cs_agg_new(A.s, &spec, &ag, &err), CS_EINVAL);
  ck_assert_ptr_null(ag);
  unsigned w[N_COLS] = {0};
  w[C_T] = CS_AGG_SUM;
  cs_agg_spec spec2 = {NULL, 0, w, 0};
  ck_assert_int_eq(cs_agg_new(A.s, &spec2, &ag, &err), CS_EINVAL);
  uint32_t many[17] = {0};
  cs_agg_spec spec3 = {many, 17, NULL, 0};
  ck_assert_int_eq(cs_agg_new(A.s, &spec3, &ag, &err), CS_EINVAL);
  ag = agg_make(A.s, NULL, 0, 0);
  ck_assert_int_eq(cs_agg_add_range(ag, NULL, 50, 51, NULL, &err), CS_EINVAL);
  uint64_t rows[2] = {3, 100};
  ck_assert_int_eq(cs_agg_add_rows(ag, NULL, rows, 2, &err), CS_EINVAL);
  ck_assert_uint_eq(cs_agg_count(ag, 0), 0);
  cs_agg_free(ag);
  astore_free(&A);
}
END_TEST

/* Every allocation of a grouped and an ungrouped run fails in turn: the
** call reports CS_ENOMEM with a message, or succeeds with the right answer,
** and nothing leaks but what the store's aggregate cache holds (per-record
** statistics, dictionary codes: the store's, freed with it, counted
** exactly).  A failed allocation the aggregate can do without (a record's
** codes) gives a success, so the runs go on until three never reach their
** failing allocation. */
START_TEST(test_agg_allocation_failures_are_reported_and_leak_nothing) {
  what_init();
  astore A;
  astore_make(&A, 3000, 64, 12);
  /* ungrouped, bytes hash, tuple hash, direct index, packed hash */
  static const uint32_t key_lists[][3] = {{0}, {C_KT}, {C_KT, C_I16}, {C_K8}, {C_K8, C_I8, C_BO}};
  static const uint32_t key_ns[] = {0, 1, 2, 1, 3};
  for (unsigned ks = 0; ks < sizeof key_ns / sizeof key_ns[0]; ks++) {
    const uint32_t *keys = key_lists[ks];
    uint32_t nk = key_ns[ks];
    rref R = {0};
    ref_range(&R, &A, NULL, 0, 0, 3000, NULL, keys, nk);
    int ok_runs = 0, unreached = 0;
    for (long k = 1; k < 1000 && unreached < 3; k++) {
      long live = cs_mem_live() - cs__agg_cache_blocks(A.s);
      cs_mem_fail_after(k, k & 1);
      cs_agg_spec spec = {keys, nk, what_all, 1};
      cs_agg *ag = NULL;
      cs_err err = {0};
      cs_rc rc = cs_agg_new(A.s, &spec, &ag, &err);
      if (rc == CS_OK) rc = cs_agg_add_range(ag, NULL, 0, 3000, NULL, &err);
      unreached += cs_mem_count() < k;
      cs_mem_fail_after(-1, false);
      if (rc == CS_OK) {
        ok_runs++;
        check_against(ag, &R, A.t, keys, nk, "after failures");
      } else {
        ck_assert_int_eq(rc, CS_ENOMEM);
        ck_assert_msg(strncmp(err.msg, "colstore:", 9) == 0, "message: %s", err.msg);
      }
      cs_agg_free(ag);
      long now = cs_mem_live() - cs__agg_cache_blocks(A.s);
      ck_assert_msg(now == live, "k %ld: %ld blocks leaked", k, now - live);
    }
    ck_assert(ok_runs > 0);
    free(R.g);
  }
  astore_free(&A);
}
END_TEST

/* ------------------------------------------- one TEXT key, many shapes */

/* A store of one TEXT key k (nullable), an INT64 v and a FLOAT64 f, in
** segments of a few hundred rows, each with its own shape of keys: few
** distinct words (the empty string, zero bytes, lengths 8, 9, 15, 16, 17),
** runs of one value, keys unique to their row, long keys that share their
** first 16 bytes and their length, and a mix.  Records of 4,096 rows (or
** irregular ones), so one record holds many segments and many records hold
** more distinct keys than the dictionary does.  The reference sorts the
** selected rows by key (NULL first, then bytes and length) and groups runs
** of equal keys: it shares no code, and no hashing, with the kernel. */
enum { TK_ID, TK_K, TK_V, TK_F, TK_COLS };
static const cs_column tk_cols[TK_COLS] = {{"id", CS_TYPE_INT64, false},
                                           {"k", CS_TYPE_TEXT, true},
                                           {"v", CS_TYPE_INT64, true},
                                           {"f", CS_TYPE_FLOAT64, true}};
/* The same with a BLOB key (the dictionary codes' tests). */
static const cs_column tk_cols_blob[TK_COLS] = {{"id", CS_TYPE_INT64, false},
                                                {"k", CS_TYPE_BLOB, true},
                                                {"v", CS_TYPE_INT64, true},
                                                {"f", CS_TYPE_FLOAT64, true}};
/* The key's type in the store under test (tk_check reads it). */
static cs_type tk_type = CS_TYPE_TEXT;

static void tk_key(ut_rng *r, int shape, uint64_t row, ut_cell *c) {
  /* the last two: a 16-byte key whose bytes 5..14 are zero and whose last
  ** byte is 5, and the 5-byte key with its first five bytes (a key below 16
  ** bytes keeps its length in the byte where this one keeps its last) */
  static const char *const few[] = {"",
                                    "\0",
                                    "a\0b",
                                    "abcdefgh",
                                    "abcdefgh\0",
                                    "abcdefghijklmno",
                                    "abcdefghijklmnop",
                                    "abcdefghijklmnopq",
                                    "muon",
                                    "electron",
                                    "abcde\0\0\0\0\0\0\0\0\0\0\5",
                                    "abcde"};
  static const uint64_t few_len[] = {0, 1, 3, 8, 9, 15, 16, 17, 4, 8, 16, 5};
  char buf[64];
  int n;
  if (ut_rng_below(r, 12) == 0) {
    ut_cell_set_null(c);
    return;
  }
  switch (shape) {
    case 0: { /* few */
      uint64_t w = ut_rng_below(r, 12);
      ut_cell_set_bytes(c, few[w], few_len[w]);
      return;
    }
    case 1: /* runs of 37 equal keys */ n = snprintf(buf, sizeof buf, "run-%" PRIu64, row / 37); break;
    case 2: /* unique to the row, lengths 1..22 */
      n = snprintf(buf, sizeof buf, "%.*s%" PRIu64, (int)ut_rng_below(r, 16), "uuuuuuuuuuuuuuuu", row);
      break;
    case 3: /* 24 bytes, the same first 16, a zero byte inside */
      n = snprintf(buf, sizeof buf, "0123456789abcdef%07" PRIu64, ut_rng_below(r, 300));
      buf[20] = '\0';
      break;
    default: /* a mix of the above and of 2,000 short keys */
      if (ut_rng_below(r, 2)) {
        tk_key(r, (int)ut_rng_below(r, 4), row, c);
        return;
      }
      n = snprintf(buf, sizeof buf, "m%" PRIu64, ut_rng_below(r, 2000));
      break;
  }
  ut_cell_set_bytes(c, buf, (uint64_t)n);
}

static ut_table *tk_table(uint64_t n, uint64_t seed) {
  cs_schema schema = {TK_COLS, tk_cols};
  ut_table *t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(seed);
  int shape = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (i % 500 == 0) shape = (int)ut_rng_below(&r, 5);
    ut_table_add_row(t);
    ut_cell_set_int(ut_table_cell(t, i, TK_ID), (int64_t)i);
    tk_key(&r, shape, i, ut_table_cell(t, i, TK_K));
    ut_cell *v = ut_table_cell(t, i, TK_V), *f = ut_table_cell(t, i, TK_F);
    if (ut_rng_below(&r, 9) == 0)
      ut_cell_set_null(v);
    else
      ut_cell_set_int(v, (int64_t)ut_rng_u64(&r) >> 20);
    ut_cell_set_float(f, CS_TYPE_FLOAT64, ut_rng_unit(&r) - 0.5);
  }
  return t;
}

static const ut_table *tk_sort_t;

static int tk_row_cmp(const void *pa, const void *pb) {
  const ut_cell *x = ut_table_cell(tk_sort_t, *(const uint64_t *)pa, TK_K);
  const ut_cell *y = ut_table_cell(tk_sort_t, *(const uint64_t *)pb, TK_K);
  if (x->null || y->null) return (int)y->null - (int)x->null;
  return cell_cmp(tk_type, x, y);
}

/* The aggregate against the sorted reference over the selected rows sel[0, m). */
static void tk_check(const cs_agg *ag, const ut_table *t, uint64_t *sel, uint64_t m, bool key_is_value,
                     const char *ctx) {
  tk_sort_t = t;
  qsort(sel, m, sizeof *sel, tk_row_cmp);
  uint64_t n_groups = cs_agg_groups(ag);
  uint64_t *order = malloc((n_groups + 1) * sizeof *order);
  ck_assert_ptr_nonnull(order);
  for (uint64_t g = 0; g < n_groups; g++) order[g] = g;
  static const uint32_t key1 = TK_K;
  sort_keys = &key1, sort_nk = 1, sort_ag = ag;
  qsort(order, n_groups, sizeof *order, agg_group_cmp);
  uint64_t g = 0;
  for (uint64_t i = 0; i < m; g++) {
    uint64_t j = i + 1;
    while (j < m && tk_row_cmp(&sel[i], &sel[j]) == 0) j++;
    ck_assert_msg(g < n_groups, "%s: more groups than %" PRIu64, ctx, n_groups);
    cs_value kv;
    cs_agg_key(ag, order[g], 0, &kv);
    const ut_cell *kc = ut_table_cell(t, sel[i], TK_K);
    ck_assert_msg(value_is_cell(tk_type, &kv, kc), "%s: group %" PRIu64 " (row %" PRIu64 "): key differs",
                  ctx, g, sel[i]);
    ck_assert_msg(cs_agg_count(ag, order[g]) == j - i,
                  "%s: group %" PRIu64 ": %" PRIu64 " rows, want %" PRIu64, ctx, g,
                  cs_agg_count(ag, order[g]), j - i);
    i128 vs = 0;
    uint64_t vn = 0;
    double fs = 0, fmag = 0;
    for (uint64_t x = i; x < j; x++) {
      const ut_cell *v = ut_table_cell(t, sel[x], TK_V), *f = ut_table_cell(t, sel[x], TK_F);
      if (!v->null) vs += v->i, vn++;
      fs += f->f, fmag += fabs(f->f);
    }
    cs_agg_result res;
    cs_agg_result_get(ag, order[g], TK_V, &res);
    ck_assert_msg(res.count == vn && (vn == 0 || (res.sum.kind == CS_VAL_INT && res.sum.i == (int64_t)vs)),
                  "%s: group %" PRIu64 ": count or sum of v differs", ctx, g);
    cs_agg_result_get(ag, order[g], TK_F, &res);
    ck_assert_msg(res.count == j - i && fabs(res.sum.f - fs) <= 1e-12 * fmag + 1e-300,
                  "%s: group %" PRIu64 ": f", ctx, g);
    if (key_is_value) {
      cs_agg_result_get(ag, order[g], TK_K, &res);
      ck_assert_msg(res.count == (kc->null ? 0 : j - i), "%s: group %" PRIu64 ": count of k", ctx, g);
      if (!kc->null)
        ck_assert_msg(value_is_cell(tk_type, &res.min, kc) && value_is_cell(tk_type, &res.max, kc),
                      "%s: group %" PRIu64 ": min/max of k", ctx, g);
    }
    i = j;
  }
  ck_assert_msg(g == n_groups, "%s: %" PRIu64 " groups, want %" PRIu64, ctx, n_groups, g);
  free(order);
}

/* One query of the TEXT-key tests on s, checked against the reference
** over t (del: deleted positions): case c is the key alone (0), the key
** also a value (1), the predicate psel, id in [lo, hi] (2), the mask (3),
** the list (4).  Ranges are added in two calls, the second starting inside
** a record.  Returns the records read through dictionary codes. */
typedef struct tk_case {
  const cs_store *s;
  const ut_table *t;
  const bool *del;
  uint64_t n;
  const uint8_t *mask;
  const uint64_t *list;
  uint64_t m_list;
  const cs_selector *psel;
  uint64_t lo, hi;
} tk_case;

static uint64_t tk_run(const tk_case *Q, int threads, int c, uint64_t *sel, const char *ctx) {
  bool key_is_value = c == 1;
  unsigned what[TK_COLS] = {0, key_is_value ? CS_AGG_COUNT | CS_AGG_MIN | CS_AGG_MAX : 0,
                            CS_AGG_COUNT | CS_AGG_SUM, CS_AGG_COUNT | CS_AGG_SUM};
  uint32_t key = TK_K;
  cs_agg_spec spec = {&key, 1, what, threads};
  cs_agg *ag;
  cs_err err = {0};
  ut_kernel_config_set(threads, -1);
  ck_assert(cs_agg_new(Q->s, &spec, &ag, &err) == CS_OK);
  uint64_t m = 0, n = Q->n;
  if (c == 4) {
    ck_assert_msg(cs_agg_add_rows(ag, NULL, Q->list, Q->m_list, &err) == CS_OK, "%s", err.msg);
    for (uint64_t i = 0; i < Q->m_list; i++)
      if (!Q->del[Q->list[i]]) sel[m++] = Q->list[i];
  } else {
    const cs_selector *use = c == 2 ? Q->psel : NULL;
    const uint8_t *um = c == 3 ? Q->mask : NULL;
    uint64_t half = n / 2 + 123;
    add_range_ok(ag, use, 0, half, um);
    add_range_ok(ag, use, half, n - half, um ? um + half : NULL);
    for (uint64_t i = 0; i < n; i++)
      if (!Q->del[i] && (c != 2 || (i >= Q->lo && i <= Q->hi)) && (c != 3 || Q->mask[i])) sel[m++] = i;
  }
  ut_kernel_config_reset();
  cs_agg_stats st;
  cs_agg_stats_get(ag, &st);
  ck_assert_msg(strcmp(st.kernel, "bytes hash") == 0, "%s: kernel %s", ctx, st.kernel);
  ck_assert_msg(st.rows_selected == m, "%s: %" PRIu64 " rows selected, want %" PRIu64, ctx, st.rows_selected,
                m);
  tk_check(ag, Q->t, sel, m, key_is_value, ctx);
  cs_agg_free(ag);
  return st.records_coded;
}

/* The dictionary (default size, a tiny one that overflows in every record,
** none), threads 1, 2 and 4, the key alone or also a value column, a
** predicate, a caller's mask, a list, deletions. */
START_TEST(test_agg_text_key_dictionary_matches_sorted_reference) {
  uint64_t n = 120000 + (uint64_t)_i * 7001, seed = 3000 + (uint64_t)_i;
  ut_table *t = tk_table(n, seed);
  ut_scratch sc = ut_scratch_new();
  ut_table_create_store(t, sc.path, n, _i == 1 ? 0 : 4096, _i == 1 ? 1777 : 0);
  bool *del = calloc(n, 1);
  ck_assert_ptr_nonnull(del);
  ut_rng r = ut_rng_seed(seed ^ 0x55);
  if (_i != 2) {
    /* every seventh row, a whole stretch, and the last row */
    uint64_t *rows = malloc(n * sizeof *rows), k = 0;
    ck_assert_ptr_nonnull(rows);
    for (uint64_t i = 0; i < n; i++)
      if (ut_rng_below(&r, 7) == 0 || (i >= 9000 && i < 13100) || i == n - 1) rows[k++] = i, del[i] = true;
    cs_writer *w;
    cs_err err = {0};
    ck_assert_msg(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK, "%s", err.msg);
    ck_assert_msg(cs_writer_delete(w, rows, k, NULL, &err) == CS_OK, "%s", err.msg);
    ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
    free(rows);
  }
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "text key store");
  uint8_t *mask = malloc(n);
  uint64_t *sel = malloc(n * sizeof *sel), m_list = n / 2;
  uint64_t *list = malloc(m_list * sizeof *list);
  ck_assert(mask && sel && list);
  for (uint64_t i = 0; i < n; i++) mask[i] = ut_rng_below(&r, 5) != 0;
  for (uint64_t i = 0; i < m_list; i++) list[i] = ut_rng_below(&r, n);
  cs_pred p = {.col = TK_ID,
               .op = CS_CMP_BETWEEN,
               .a = {.kind = CS_VAL_INT, .i = 1000},
               .b = {.kind = CS_VAL_INT, .i = (int64_t)(n - 3000)}};
  cs_selector *psel = sel_make(s, &p, 1);
  static const uint32_t dict_sizes[] = {1024, 3, 0};
  for (unsigned ds = 0; ds < 3; ds++) {
    cs__agg_tuning tu;
    cs__agg_tuning_default(&tu);
    tu.dict_max = dict_sizes[ds];
    cs__agg_tuning_set(&tu);
    for (int threads = 1; threads <= 4; threads *= 2) {
      for (int c = 0; c < 5; c++) {
        char ctx[160];
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 " dict %u threads %d case %d", seed, dict_sizes[ds],
                 threads, c);
        tk_case Q = {s, t, del, n, mask, list, m_list, psel, 1000, n - 3000};
        tk_run(&Q, threads, c, sel, ctx);
      }
    }
  }
  cs__agg_tuning_set(NULL);
  cs_selector_free(psel);
  free(mask), free(sel), free(list), free(del);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------- dictionary codes on the store */

/* A key of the codes tests: value v of a palette (NULL one in ten rows).
** The shapes sit on the edges of the build's two words: the empty string,
** a zero byte, keys of 15, 16 and 17 bytes, 24-byte keys that share their
** first 16 bytes and differ past them, the 16-byte key whose last byte
** equals a 5-byte prefix's length. */
static void cw_key(ut_rng *r, uint64_t v, ut_cell *c) {
  char buf[64];
  int n;
  if (ut_rng_below(r, 10) == 0) {
    ut_cell_set_null(c);
    return;
  }
  switch (v % 8) {
    case 0: n = snprintf(buf, sizeof buf, "w%" PRIu64, v); break;
    case 1: n = snprintf(buf, sizeof buf, "fifteen-bytes%02" PRIu64, v % 100); break;
    case 2: n = snprintf(buf, sizeof buf, "sixteen--bytes%02" PRIu64, v % 100); break;
    case 3: n = snprintf(buf, sizeof buf, "0123456789abcdef%c", (char)('A' + v % 50)); break;
    case 4: n = snprintf(buf, sizeof buf, "0123456789abcdef-%06" PRIu64, v); break;
    case 5:
      if (v == 5) {
        ut_cell_set_bytes(c, "", 0);
        return;
      }
      n = snprintf(buf, sizeof buf, "z%" PRIu64, v), buf[0] = '\0'; /* a zero byte first */
      break;
    case 6:
      if (v < 16) {
        ut_cell_set_bytes(c, "abcde\0\0\0\0\0\0\0\0\0\0\5", 16);
        return;
      }
      n = snprintf(buf, sizeof buf, "%" PRIu64, v);
      break;
    default:
      if (v < 16) {
        ut_cell_set_bytes(c, "abcde", 5);
        return;
      }
      n = snprintf(buf, sizeof buf, "seven%" PRIu64 "\xff", v);
      break;
  }
  ut_cell_set_bytes(c, buf, (uint64_t)n);
}

/* Rows [first, first + n) of t: blocks of 700 rows each drawing from a
** palette of its own size (1, 2, 5, 40, 255, 256 or 257 values with NULL
** the 256th or 257th: the codes' limit, or 600), from offset off. */
static void cw_rows(ut_table *t, ut_rng *r, uint64_t first, uint64_t n, uint64_t off) {
  static const uint64_t pal[] = {1, 2, 5, 40, 255, 256, 257, 600};
  uint64_t p = 1;
  for (uint64_t i = first; i < first + n; i++) {
    if (i % 700 == 0) p = pal[ut_rng_below(r, 8)];
    ut_table_add_row(t);
    ut_cell_set_int(ut_table_cell(t, i, TK_ID), (int64_t)i);
    cw_key(r, off + ut_rng_below(r, p), ut_table_cell(t, i, TK_K));
    ut_cell *v = ut_table_cell(t, i, TK_V), *f = ut_table_cell(t, i, TK_F);
    if (ut_rng_below(r, 9) == 0)
      ut_cell_set_null(v);
    else
      ut_cell_set_int(v, (int64_t)ut_rng_u64(r) >> 20);
    ut_cell_set_float(f, CS_TYPE_FLOAT64, ut_rng_unit(r) - 0.5);
  }
}

/* Every case of tk_run on s at 1, 2 and 3 threads, the first query
** building the codes and the others reading them; wants some records read
** through codes in ranges (want_coded) and none in lists.  The same on the
** path without codes (codes_bytes 0). */
static void cw_check_all(tk_case *Q, uint64_t *sel, bool want_coded, const char *what) {
  uint64_t n = Q->n;
  uint8_t *mask = malloc(n);
  uint64_t *list = malloc((n / 3 + 1) * sizeof *list);
  ck_assert(mask && list);
  ut_rng r = ut_rng_seed(n ^ 0x77);
  for (uint64_t i = 0; i < n; i++) mask[i] = ut_rng_below(&r, 4) != 0;
  for (uint64_t i = 0; i < n / 3; i++) list[i] = ut_rng_below(&r, n);
  cs_pred p = {.col = TK_ID,
               .op = CS_CMP_BETWEEN,
               .a = {.kind = CS_VAL_INT, .i = 777},
               .b = {.kind = CS_VAL_INT, .i = (int64_t)(n - 2500)}};
  Q->psel = sel_make(Q->s, &p, 1), Q->lo = 777, Q->hi = n - 2500;
  Q->mask = mask, Q->list = list, Q->m_list = n / 3;
  for (int codes = 1; codes >= 0; codes--) {
    cs__agg_tuning tu;
    cs__agg_tuning_default(&tu);
    if (!codes) tu.codes_bytes = 0;
    cs__agg_tuning_set(&tu);
    for (int threads = 1; threads <= 3; threads++)
      for (int c = 0; c < 5; c++) {
        char ctx[200];
        snprintf(ctx, sizeof ctx, "%s: codes %d threads %d case %d", what, codes, threads, c);
        uint64_t coded = tk_run(Q, threads, c, sel, ctx);
        if (c == 4 || !codes)
          ck_assert_msg(coded == 0, "%s: %" PRIu64 " records coded", ctx, coded);
        else if (want_coded)
          ck_assert_msg(coded > 0, "%s: no record coded", ctx);
      }
  }
  cs__agg_tuning_set(NULL);
  cs_selector_free((cs_selector *)Q->psel);
  free(mask), free(list);
}

/* The dictionary codes (kernels/cs_codes.c) against the sorted reference: a
** TEXT (or BLOB) key whose records have few or too many distinct values;
** then an older snapshot after an update (patched chunks), a deletion and
** an append each commit a new one (each with codes of its own, the old
** still right), a cache=memory copy, a view with pending changes, and a
** budget that codes only a few records. */
START_TEST(test_agg_text_key_codes_match_sorted_reference) {
  uint64_t n = 15000 + (uint64_t)_i * 1301, seed = 7100 + (uint64_t)_i, more = 2000;
  tk_type = _i % 2 ? CS_TYPE_BLOB : CS_TYPE_TEXT;
  cs_schema schema = {TK_COLS, _i % 2 ? tk_cols_blob : tk_cols};
  ut_table *t = ut_table_new(&schema), *t0 = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(seed), r0 = ut_rng_seed(seed);
  cw_rows(t, &r, 0, n, 0);
  cw_rows(t0, &r0, 0, n, 0); /* the first snapshot's rows, kept */
  ut_scratch sc = ut_scratch_new();
  ut_table_create_store(t, sc.path, n, 512, _i >= 2 ? 389 : 0); /* records of 512 rows, or irregular */
  bool *del = calloc(n + more, 1);
  uint64_t *sel = malloc((n + more) * sizeof *sel), *rows = malloc(n * sizeof *rows);
  ck_assert(del && sel && rows);
  char what[120];
  snprintf(what, sizeof what, "seed %" PRIu64 " %s", seed, _i % 2 ? "BLOB" : "TEXT");

  cs_store *s1 = ut_open_ok(sc.path, CS_VERIFY_FULL, "codes store");
  tk_case Q = {.s = s1, .t = t0, .del = del, .n = n};
  cw_check_all(&Q, sel, true, what);

  /* an update: record 0 gets 300 new values (too many to code), a few
  ** rows elsewhere new values, some NULL */
  schema.n_cols = TK_COLS;
  ut_table *u = ut_table_new(&schema);
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++)
    if (i < 300 || ut_rng_below(&r, 40) == 0) {
      ut_table_add_row(u);
      rows[k] = i;
      ut_cell_set_int(ut_table_cell(u, k, TK_ID), (int64_t)i);
      cw_key(&r, 1000 + (i < 300 ? i : ut_rng_below(&r, 3)), ut_table_cell(u, k, TK_K));
      k++;
    }
  uint8_t key_only[TK_COLS] = {0, 1, 0, 0};
  ut_update_commit(sc.path, t, rows, k, u, key_only);
  ut_table_free(u);
  cs_store *s2 = ut_open_ok(sc.path, CS_VERIFY_FULL, "codes store, updated");
  Q.s = s2, Q.t = t;
  strcat(what, ", updated");
  cw_check_all(&Q, sel, true, what);
  Q.s = s1, Q.t = t0;
  cw_check_all(&Q, sel, true, "the snapshot before the update");

  /* a deletion */
  k = 0;
  for (uint64_t i = 0; i < n; i++)
    if (ut_rng_below(&r, 6) == 0 || (i >= 2000 && i < 2600)) rows[k++] = i, del[i] = true;
  ut_delete_commit(sc.path, rows, k);
  cs_store *s3 = ut_open_ok(sc.path, CS_VERIFY_FULL, "codes store, deleted");
  Q.s = s3, Q.t = t;
  strcat(what, ", deleted");
  cw_check_all(&Q, sel, true, what);

  /* an append of rows with values of their own */
  cw_rows(t, &r, n, more, 5000);
  ut_table_append_store(t, sc.path, n, more);
  cs_store *s4 = ut_open_ok(sc.path, CS_VERIFY_FULL, "codes store, appended");
  Q.s = s4, Q.n = n + more;
  strcat(what, ", appended");
  cw_check_all(&Q, sel, true, what);

  /* the same rows from a cache=memory copy */
  cs_store *s5;
  cs_err err = {0};
  ck_assert_msg(cs_store_open_with(sc.path, CS_VERIFY_HEADER, CS_CACHE_MEMORY, &s5, &err) == CS_OK, "%s",
                err.msg);
  Q.s = s5;
  cw_check_all(&Q, sel, true, "cache=memory");
  cs_store_close(s5);

  /* a budget of three records' codes on a fresh snapshot: some records
  ** coded, the rest read the old way, the same answers */
  cs_store *s6 = ut_open_ok(sc.path, CS_VERIFY_HEADER, "codes store, budget");
  cs__agg_tuning tu;
  cs__agg_tuning_default(&tu);
  tu.codes_bytes = 3 * (sizeof(cs__rcodes) + CS__CODE_VALUES * 16 + 512) + 100;
  cs__agg_tuning_set(&tu);
  Q.s = s6;
  for (int threads = 1; threads <= 2; threads++) {
    uint64_t coded = tk_run(&Q, threads, 0, sel, "budget");
    ck_assert_msg(coded >= 1 && coded <= 3, "budget: %" PRIu64 " records coded", coded);
  }
  cs__agg_tuning_set(NULL);
  cs_store_close(s6);

  /* a view: pending deletions and updates of the key over s4 */
  uint64_t vdel[3] = {1, 700, n + 5};
  for (int i = 0; i < 3; i++) del[vdel[i]] = true;
  u = ut_table_new(&schema);
  uint64_t vrows[40];
  for (uint64_t i = 0; i < 40; i++) {
    ut_table_add_row(u);
    vrows[i] = i * 97 + 3;
    cw_key(&r, 2000 + i % 3, ut_table_cell(u, i, TK_K));
  }
  cs_update upd = {vrows, 40, ut_table_batch(u, 0, 40), key_only};
  cs_store *v;
  err = (cs_err){0};
  ck_assert_msg(cs_store_with_changes(s4, vdel, 3, &upd, 1, &v, &err) == CS_OK, "%s", err.msg);
  ut_table_update(t, vrows, 40, u, key_only);
  Q.s = v;
  cw_check_all(&Q, sel, true, "a view with pending changes");
  cs_store_close(v);
  cs_batch_free((cs_batch *)upd.values);
  ut_table_free(u);

  cs_store_close(s4), cs_store_close(s3), cs_store_close(s2), cs_store_close(s1);
  free(del), free(sel), free(rows);
  ut_table_free(t), ut_table_free(t0);
  ut_scratch_free(&sc);
  tk_type = CS_TYPE_TEXT;
}
END_TEST

int main(void) {
  Suite *s = suite_create("agg");
  TCase *tc = tcase_create("agg");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_agg_range_every_key_and_type_matches_reference, 0, 3);
  tcase_add_loop_test(tc, test_agg_forced_paths_match_reference, 0, 6);
  tcase_add_loop_test(tc, test_agg_rows_any_order_and_duplicates_match_reference, 0, 2);
  tcase_add_loop_test(tc, test_agg_range_with_deletions_matches_reference, 0, 3);
  tcase_add_loop_test(tc, test_agg_forced_paths_with_deletions_match_reference, 0, 2);
  tcase_add_loop_test(tc, test_agg_rows_with_deletions_and_duplicates_match_reference, 0, 2);
  tcase_add_loop_test(tc, test_agg_deletions_never_answered_from_record_statistics, 0, 2);
  tcase_add_test(tc, test_agg_deletions_with_threads_match_reference);
  tcase_add_test(tc, test_agg_empty_selection_one_group_without_keys_none_with);
  tcase_add_test(tc, test_agg_int64_sum_overflow_is_flagged_and_exact_when_back_in_range);
  tcase_add_test(tc, test_agg_float_keys_nan_is_null_and_negative_zero_is_zero);
  tcase_add_loop_test(tc, test_agg_record_statistics_equal_the_data_path, 0, 2);
  tcase_add_test(tc, test_agg_threads_agree);
  tcase_add_test(tc, test_agg_direct_index_and_hash_are_chosen_by_range);
  tcase_add_test(tc, test_agg_bad_arguments);
  tcase_add_test(tc, test_agg_allocation_failures_are_reported_and_leak_nothing);
  tcase_add_loop_test(tc, test_agg_text_key_dictionary_matches_sorted_reference, 0, 3);
  tcase_add_loop_test(tc, test_agg_text_key_codes_match_sorted_reference, 0, 4);
  suite_add_tcase(s, tc);
  return ut_run_suite(s);
}
