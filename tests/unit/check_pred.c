/*
** check_pred.c - predicate evaluation (cs_pred_eval), one value against a
** predicate (cs_pred_match_value) and sorted ranges (cs_pred_sorted_range).
**
** The reference here implements SQLite's comparison rules directly and
** simply, one row at a time, from the reference table's cells: a NULL or
** NaN value is NULL; classes order NULL < numbers < TEXT < BLOB; an INT and
** a FLOAT compare as exact numbers, done here in long double, whose 64-bit
** mantissa holds every int64 (a different method from the core's, which
** must not widen); TEXT and BLOB compare by memcmp, then length.  A NULL
** value satisfies only IS NULL, and a NULL (or NaN) operand satisfies
** nothing.
**
** Every op is run against every column type with operands of every kind
** (values drawn from the column itself, so equalities hit, and edges: the
** int64 extremes, doubles around 2^53 and 2^63, infinities, -0.0, NaN,
** fractions at each integer type's limits, strings and blobs), on random
** stores and on clustered stores whose zone maps decide most records.  The
** zone-map counters, the thread count and the sorted-range search are
** checked on stores built so the right answer is known.
*/
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"
#include "unit_util.h"

_Static_assert(LDBL_MANT_DIG >= 64, "the reference compares int64 with double in long double");

/* ------------------------------------------------------------- reference */

static bool cell_is_null(cs_type t, const ut_cell *c) {
  if (c->null) return true;
  if (t == CS_TYPE_FLOAT32) return isnan(c->f32);
  if (t == CS_TYPE_FLOAT64) return isnan(c->f);
  return false;
}

static bool value_null(const cs_value *v) {
  return v->kind == CS_VAL_NULL || (v->kind == CS_VAL_FLOAT && isnan(v->f));
}

static int tolower_ascii(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

static int cls(cs_value_kind k) { return k == CS_VAL_TEXT ? 2 : k == CS_VAL_BLOB ? 3 : 1; }

/* A non-NULL cell as a value of its storage class. */
static cs_value cell_value(cs_type t, const ut_cell *c) {
  cs_value v = {0};
  if (cs_type_is_integer(t))
    v.kind = CS_VAL_INT, v.i = c->i;
  else if (t == CS_TYPE_FLOAT32)
    v.kind = CS_VAL_FLOAT, v.f = (double)c->f32;
  else if (t == CS_TYPE_FLOAT64)
    v.kind = CS_VAL_FLOAT, v.f = c->f;
  else
    v.kind = t == CS_TYPE_TEXT ? CS_VAL_TEXT : CS_VAL_BLOB, v.p = c->bytes, v.n = c->len;
  return v;
}

/* Sign of x - v for two non-NULL values, by SQLite's rules. */
static int ref_cmp(const cs_value *x, const cs_value *v) {
  int cx = cls(x->kind), cv = cls(v->kind);
  if (cx != cv) return cx < cv ? -1 : 1;
  if (cx == 1) {
    long double a = x->kind == CS_VAL_INT ? (long double)x->i : (long double)x->f;
    long double b = v->kind == CS_VAL_INT ? (long double)v->i : (long double)v->f;
    return (a > b) - (a < b);
  }
  uint64_t m = x->n < v->n ? x->n : v->n;
  int c = m ? memcmp(x->p, v->p, m) : 0;
  if (c) return c < 0 ? -1 : 1;
  return (x->n > v->n) - (x->n < v->n);
}

/* Folded equality (cs_pred.fold), the naive way: both strings copied
** with 'A'-'Z' lower-cased and trailing spaces cut, then compared. */
static bool ref_fold_eq(const cs_value *x, const cs_value *v) {
  uint8_t *a = malloc(x->n + 1), *b = malloc(v->n + 1);
  ck_assert(a && b);
  uint64_t na = 0, nb = 0;
  for (uint64_t i = 0; i < x->n; i++) a[na++] = (uint8_t)tolower_ascii(x->p[i]);
  for (uint64_t i = 0; i < v->n; i++) b[nb++] = (uint8_t)tolower_ascii(v->p[i]);
  while (na && a[na - 1] == ' ') na--;
  while (nb && b[nb - 1] == ' ') nb--;
  bool eq = na == nb && (na == 0 || memcmp(a, b, na) == 0);
  free(a);
  free(b);
  return eq;
}

static bool ref_pred(const cs_pred *p, cs_type t, const ut_cell *c) {
  bool null = cell_is_null(t, c);
  if (p->op == CS_CMP_ISNULL) return null;
  if (p->op == CS_CMP_NOTNULL) return !null;
  if (p->op == CS_CMP_ISNOT) {
    /* x IS NOT a: NULL IS NOT NULL is false, NULL IS NOT 5 true */
    if (value_null(&p->a)) return !null;
    if (null) return true;
    cs_value x = cell_value(t, c);
    return ref_cmp(&x, &p->a) != 0;
  }
  if (null) return false;
  cs_value x = cell_value(t, c);
  switch (p->op) {
    case CS_CMP_IN:
      for (uint64_t k = 0; k < p->n_set; k++) {
        const cs_value *m = &p->set[k];
        if (value_null(m)) continue;
        if (p->fold && cls(x.kind) >= 2 && x.kind == m->kind ? ref_fold_eq(&x, m) : ref_cmp(&x, m) == 0)
          return true;
      }
      return false;
    case CS_CMP_BETWEEN:
      if (value_null(&p->a) || value_null(&p->b)) return false;
      return ref_cmp(&x, &p->a) >= 0 && ref_cmp(&x, &p->b) <= 0;
    default: break;
  }
  if (value_null(&p->a)) return false;
  int r = ref_cmp(&x, &p->a);
  switch (p->op) {
    case CS_CMP_EQ: return r == 0;
    case CS_CMP_NE: return r != 0;
    case CS_CMP_LT: return r < 0;
    case CS_CMP_LE: return r <= 0;
    case CS_CMP_GT: return r > 0;
    default: return r >= 0;
  }
}

static const char *const op_names[] = {"EQ",     "NE",      "LT", "LE",      "GT",   "GE",
                                       "ISNULL", "NOTNULL", "IN", "BETWEEN", "ISNOT"};

static void describe_value(const cs_value *v, char *buf, size_t n) {
  switch (v->kind) {
    case CS_VAL_NULL: snprintf(buf, n, "NULL"); break;
    case CS_VAL_INT: snprintf(buf, n, "INT %" PRId64, v->i); break;
    case CS_VAL_FLOAT: snprintf(buf, n, "FLOAT %.17g (%a)", v->f, v->f); break;
    default:
      snprintf(buf, n, "%s of %" PRIu64 " bytes", v->kind == CS_VAL_TEXT ? "TEXT" : "BLOB", v->n);
      break;
  }
}

static void describe_pred(const cs_pred *p, const ut_table *t, char *buf, size_t n) {
  char a[96], b[96];
  describe_value(&p->a, a, sizeof a);
  describe_value(&p->b, b, sizeof b);
  snprintf(buf, n, "%s (%s) %s%s a=[%s] b=[%s] n_set=%" PRIu64, t->cols[p->col].name,
           cs_type_name(t->cols[p->col].type), op_names[p->op], p->fold ? " folded" : "", a, b, p->n_set);
}

/* Runs cs_pred_eval on rows [first, first + n) of s and compares the mask
** (and the stats' totals) with the reference over t. */
static void check_preds(const cs_store *s, const ut_table *t, const cs_pred *preds, uint32_t np,
                        uint64_t first, uint64_t n, const char *ctx) {
  uint8_t *mask = malloc(n + 1);
  ck_assert_ptr_nonnull(mask);
  memset(mask, 0xCC, n);
  cs_pred_stats st;
  cs_pred_eval(s, preds, np, first, n, mask, &st);
  uint64_t selected = 0;
  for (uint64_t i = 0; i < n; i++) {
    bool want = true;
    for (uint32_t k = 0; k < np && want; k++)
      want = ref_pred(&preds[k], t->cols[preds[k].col].type, ut_table_cell(t, first + i, preds[k].col));
    selected += want;
    /* the same answer for the cell's value alone (cs_pred_match_value,
    ** which colstore_agg uses to find the value SQLite re-checks) */
    for (uint32_t k = 0; k < np; k++) {
      cs_type ty = t->cols[preds[k].col].type;
      const ut_cell *c = ut_table_cell(t, first + i, preds[k].col);
      cs_value x = cell_is_null(ty, c) ? (cs_value){.kind = CS_VAL_NULL} : cell_value(ty, c);
      if (cs_pred_match_value(&preds[k], &x) != ref_pred(&preds[k], ty, c)) {
        char line[300], cell[160];
        describe_pred(&preds[k], t, line, sizeof line);
        ut_cell_describe(ty, c, cell, sizeof cell);
        ck_abort_msg("%s: cs_pred_match_value(%s) of %s is %d", ctx, line, cell, !ref_pred(&preds[k], ty, c));
      }
    }
    if (mask[i] != (uint8_t)want) {
      /* Name the predicate that failed for this row (or the first one). */
      uint32_t bad = 0;
      for (uint32_t k = 0; k < np; k++)
        if (!ref_pred(&preds[k], t->cols[preds[k].col].type, ut_table_cell(t, first + i, preds[k].col))) {
          bad = k;
          break;
        }
      char line[300] = "(none)", cell[160] = "";
      if (np) {
        describe_pred(&preds[bad], t, line, sizeof line);
        ut_cell_describe(t->cols[preds[bad].col].type, ut_table_cell(t, first + i, preds[bad].col), cell,
                         sizeof cell);
      }
      ck_abort_msg("%s: rows [%" PRIu64 ", +%" PRIu64 "): row %" PRIu64
                   ": mask %u, expected %d; predicate %u of %u: %s; value %s",
                   ctx, first, n, first + i, mask[i], want, bad, np, line, cell);
    }
  }
  ck_assert_msg(st.rows_selected == selected, "%s: rows_selected %" PRIu64 ", expected %" PRIu64, ctx,
                st.rows_selected, selected);
  if (n) {
    uint64_t overlapped = cs_store_find_record(s, first + n - 1) - cs_store_find_record(s, first) + 1;
    ck_assert_msg(st.records_scanned + st.records_skipped == overlapped,
                  "%s: %" PRIu64 " scanned + %" PRIu64 " skipped records, but %" PRIu64 " overlap the range",
                  ctx, st.records_scanned, st.records_skipped, overlapped);
  }
  free(mask);
}

/* ---------------------------------------------------------------- stores */

static const cs_column all_cols[] = {
    {"i8", CS_TYPE_INT8, true},       {"i16", CS_TYPE_INT16, true},       {"i32", CS_TYPE_INT32, true},
    {"i64", CS_TYPE_INT64, true},     {"u8", CS_TYPE_UINT8, true},        {"u16", CS_TYPE_UINT16, true},
    {"u32", CS_TYPE_UINT32, true},    {"f32", CS_TYPE_FLOAT32, true},     {"f64", CS_TYPE_FLOAT64, true},
    {"b", CS_TYPE_BOOL, true},        {"t", CS_TYPE_TEXT, true},          {"bl", CS_TYPE_BLOB, true},
    {"nn_i64", CS_TYPE_INT64, false}, {"nn_f64", CS_TYPE_FLOAT64, false}, {"nn_t", CS_TYPE_TEXT, false},
};
#define N_ALL_COLS ((uint32_t)(sizeof all_cols / sizeof all_cols[0]))

typedef struct pstore {
  ut_scratch sc;
  ut_table *t;
  cs_store *s;
} pstore;

/* Writes t to a new store in writes of 1..max_write rows (each write one
** record, so the record sizes are irregular); max_write 0 = one record per
** `uniform` rows. */
static void pstore_write(pstore *p, uint64_t max_write, uint64_t uniform, uint64_t seed) {
  p->sc = ut_scratch_new();
  cs_writer_options opt = {.record_rows = uniform ? uniform : (uint64_t)1 << 30};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(p->sc.path, &p->t->schema, &opt, &w, &err) == CS_OK, "create: %s", err.msg);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t at = 0; at < p->t->n_rows;) {
    uint64_t k = uniform ? p->t->n_rows : 1 + ut_rng_below(&r, max_write);
    if (k > p->t->n_rows - at) k = p->t->n_rows - at;
    cs_batch *b = ut_table_batch(p->t, at, k);
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "write: %s", err.msg);
    cs_batch_free(b);
    at += k;
  }
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "commit: %s", err.msg);
  p->s = ut_open_ok(p->sc.path, CS_VERIFY_FULL, "pstore");
}

static void pstore_free(pstore *p) {
  cs_store_close(p->s);
  ut_table_free(p->t);
  ut_scratch_free(&p->sc);
}

static const int64_t edge_ints[] = {INT64_MIN,
                                    INT64_MIN + 1,
                                    INT64_MAX,
                                    INT64_MAX - 1,
                                    0,
                                    1,
                                    -1,
                                    9007199254740993,
                                    9007199254740992,
                                    -9007199254740993,
                                    16777217,
                                    127,
                                    128,
                                    -128,
                                    -129,
                                    255,
                                    256,
                                    32767,
                                    65535,
                                    65536,
                                    2147483647,
                                    4294967295,
                                    4294967296,
                                    9223372036854774784};

/* A random store of every type: random cells (with NaN, infinities, -0.0,
** the type limits), plus a share of edge values and repeats. */
static void pstore_random(pstore *p, uint64_t rows, uint64_t max_write, uint64_t seed) {
  cs_schema schema = {N_ALL_COLS, all_cols};
  p->t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t row = 0; row < rows; row++) {
    ut_table_add_row(p->t);
    for (uint32_t c = 0; c < N_ALL_COLS; c++) {
      ut_cell *cell = ut_table_cell(p->t, row, c);
      cs_type ty = all_cols[c].type;
      uint64_t pick = ut_rng_below(&r, 10);
      if (pick == 0 && row > 0) {
        /* Repeat an earlier value, so equalities and IN hit. */
        const ut_cell *o = ut_table_cell(p->t, ut_rng_below(&r, row), c);
        if (o->null)
          ut_cell_set_null(cell);
        else if (cs_type_is_varlen(ty))
          ut_cell_set_bytes(cell, o->bytes, o->len);
        else
          *cell = *o;
      } else if (pick == 1 && ty == CS_TYPE_INT64) {
        ut_cell_set_int(cell, edge_ints[ut_rng_below(&r, sizeof edge_ints / sizeof edge_ints[0])]);
      } else if (pick == 1 && cs_type_is_float(ty)) {
        static const double e[] = {9007199254740992.0,
                                   9223372036854775808.0,
                                   -9223372036854775808.0,
                                   9223372036854774784.0,
                                   16777216.0,
                                   16777218.0,
                                   0.5,
                                   -0.5,
                                   127.5,
                                   1e300};
        ut_cell_set_float(cell, ty, e[ut_rng_below(&r, sizeof e / sizeof e[0])]);
      } else {
        ut_cell_random(&r, ty, all_cols[c].nullable, 120, cell);
      }
    }
  }
  pstore_write(p, max_write, 0, seed + 1);
}

/* A clustered store: record k holds numbers near k * 1000 (clamped to each
** type), so zone maps decide most records; some records are all NULL,
** some hold NaN, some are sorted (no NaN, no NULL). */
static void pstore_clustered(pstore *p, uint64_t n_records, uint64_t per, uint64_t seed) {
  cs_schema schema = {N_ALL_COLS, all_cols};
  p->t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t rec = 0; rec < n_records; rec++) {
    bool all_null = rec % 7 == 3, some_null = rec % 3 == 1, nan = rec % 4 == 2, sorted = rec % 5 == 0;
    for (uint64_t i = 0; i < per; i++) {
      ut_table_add_row(p->t);
      uint64_t row = rec * per + i;
      for (uint32_t c = 0; c < N_ALL_COLS; c++) {
        ut_cell *cell = ut_table_cell(p->t, row, c);
        cs_type ty = all_cols[c].type;
        bool nullable = all_cols[c].nullable;
        if (nullable && (all_null || (some_null && ut_rng_below(&r, 5) == 0))) {
          ut_cell_set_null(cell);
          continue;
        }
        int64_t base = (int64_t)rec * 1000 - 20000;
        int64_t v = base + (sorted ? (int64_t)i * 3 : (int64_t)ut_rng_below(&r, 900));
        if (cs_type_is_integer(ty)) {
          int64_t lo = INT64_MIN, hi = INT64_MAX;
          switch (ty) {
            case CS_TYPE_INT8: lo = INT8_MIN, hi = INT8_MAX, v /= 256; break;
            case CS_TYPE_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
            case CS_TYPE_UINT8: lo = 0, hi = UINT8_MAX, v = v / 256 + 100; break;
            case CS_TYPE_UINT16: lo = 0, hi = UINT16_MAX, v += 20000; break;
            case CS_TYPE_UINT32: lo = 0, hi = UINT32_MAX, v += 20000; break;
            case CS_TYPE_BOOL: lo = 0, hi = 1, v = (int64_t)(rec & 1); break;
            case CS_TYPE_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
            default: break;
          }
          ut_cell_set_int(cell, v < lo ? lo : v > hi ? hi : v);
        } else if (cs_type_is_float(ty)) {
          double d = (double)v + (sorted ? 0.25 : ut_rng_unit(&r));
          if (nan && ut_rng_below(&r, 4) == 0) d = NAN;
          ut_cell_set_float(cell, ty, d);
        } else {
          char buf[32];
          int len =
              snprintf(buf, sizeof buf, "k%03" PRIu64 "-%03" PRIu64, rec, sorted ? i : ut_rng_below(&r, 900));
          ut_cell_set_bytes(cell, buf, (uint64_t)len);
        }
      }
    }
  }
  pstore_write(p, 0, per, seed + 1);
}

/* -------------------------------------------------------------- operands */

static cs_value vint(int64_t i) { return (cs_value){.kind = CS_VAL_INT, .i = i}; }
static cs_value vflt(double f) { return (cs_value){.kind = CS_VAL_FLOAT, .f = f}; }
static cs_value vtext(const char *s) {
  return (cs_value){.kind = CS_VAL_TEXT, .p = (const uint8_t *)s, .n = strlen(s)};
}
static cs_value vblob(const void *p, uint64_t n) { return (cs_value){.kind = CS_VAL_BLOB, .p = p, .n = n}; }
static cs_value vnull(void) { return (cs_value){.kind = CS_VAL_NULL}; }

#define POOL_MAX 160

/* Operands for column col: values from the column (as themselves and as
** the other numeric kind), every edge, and one of every other kind. */
static int operand_pool(const ut_table *t, uint32_t col, ut_rng *r, cs_value *pool) {
  static const uint8_t blob_bytes[] = {0, 1, 2, 0xFF};
  static const double edge_floats[] = {9007199254740992.0,
                                       9007199254740994.0,
                                       9223372036854775808.0,
                                       -9223372036854775808.0,
                                       9223372036854774784.0,
                                       18446744073709551616.0,
                                       INFINITY,
                                       -INFINITY,
                                       -0.0,
                                       0.0,
                                       0.5,
                                       -0.5,
                                       127.5,
                                       128.0,
                                       -128.5,
                                       -129.0,
                                       255.5,
                                       256.0,
                                       65535.5,
                                       4294967295.5,
                                       4294967296.0,
                                       FLT_MAX,
                                       -FLT_MAX,
                                       (double)FLT_MAX * 2,
                                       16777217.0,
                                       1.0000001,
                                       0.1,
                                       DBL_MAX,
                                       4.9e-324,
                                       NAN};
  cs_type ty = t->cols[col].type;
  int n = 0;
  pool[n++] = vnull();
  pool[n++] = vtext("");
  pool[n++] = vtext("abc");
  pool[n++] = vblob(blob_bytes, sizeof blob_bytes);
  pool[n++] = vblob(blob_bytes, 0);
  for (size_t i = 0; i < sizeof edge_ints / sizeof edge_ints[0]; i++) pool[n++] = vint(edge_ints[i]);
  for (size_t i = 0; i < sizeof edge_floats / sizeof edge_floats[0]; i++) pool[n++] = vflt(edge_floats[i]);
  for (int k = 0; k < 40 && t->n_rows; k++) {
    const ut_cell *c = ut_table_cell(t, ut_rng_below(r, t->n_rows), col);
    if (c->null) continue;
    cs_value v = cell_value(ty, c);
    pool[n++] = v;
    if (v.kind == CS_VAL_INT)
      pool[n++] = k & 1 ? vflt((double)v.i) : vflt((double)v.i + 0.5);
    else if (v.kind == CS_VAL_FLOAT && isfinite(v.f) && fabs(v.f) < 9e18)
      pool[n++] = vint((int64_t)v.f);
    else if (v.kind == CS_VAL_TEXT || v.kind == CS_VAL_BLOB) {
      cs_value pre = v;
      pre.n = v.n / 2; /* a prefix sorts just below */
      pool[n++] = pre;
    }
  }
  ck_assert_int_le(n, POOL_MAX);
  return n;
}

/* Every op x every operand of the pool, on every column of p, over the
** whole store and over one random sub-range. */
static void check_all_ops(const pstore *p, uint64_t seed) {
  ut_rng r = ut_rng_seed(seed);
  cs_value pool[POOL_MAX], set[48];
  uint64_t N = p->t->n_rows;
  for (uint32_t col = 0; col < N_ALL_COLS; col++) {
    int np = operand_pool(p->t, col, &r, pool);
    for (int op = CS_CMP_EQ; op <= CS_CMP_ISNOT; op++) {
      int reps = (op == CS_CMP_ISNULL || op == CS_CMP_NOTNULL) ? 1 : op == CS_CMP_IN ? 40 : np;
      for (int k = 0; k < reps; k++) {
        cs_pred pr = {.col = col, .op = (cs_cmp)op};
        if (op == CS_CMP_BETWEEN) {
          pr.a = pool[k];
          pr.b = pool[ut_rng_below(&r, (uint64_t)np)];
          /* A third of them a narrow range above a, so BETWEEN often hits. */
          if (k % 3 == 0 && pr.a.kind == CS_VAL_INT && pr.a.i < INT64_MAX - 1000)
            pr.b = vint(pr.a.i + (int64_t)ut_rng_below(&r, 1000));
        } else if (op == CS_CMP_IN) {
          /* Mixed kinds, NULLs and repeats; both sides of the linear limit. */
          uint64_t m = k < 5 ? (uint64_t)k : ut_rng_below(&r, 48);
          for (uint64_t j = 0; j < m; j++) set[j] = pool[ut_rng_below(&r, (uint64_t)np)];
          pr.set = set;
          pr.n_set = m;
        } else {
          pr.a = pool[k];
        }
        char ctx[96];
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 " col %s op %s operand #%d", seed, all_cols[col].name,
                 op_names[op], k);
        check_preds(p->s, p->t, &pr, 1, 0, N, ctx);
        uint64_t first = ut_rng_below(&r, N);
        check_preds(p->s, p->t, &pr, 1, first, ut_rng_below(&r, N - first + 1), ctx);
      }
    }
  }
}

/* TEXT/BLOB values for the dictionary codes (kernels/cs_codes.c): few per
** record, so that cs_pred.c tests each once and maps the rows through their
** codes; they include the empty value, values that are prefixes of each
** other, non-ASCII UTF-8, a DEL byte and embedded NUL bytes. */
static const char *const few_vals[] = {
    "",      "a",    "ab",  "abc", "abd", "b", "ORD", "ORE", "\xc3\xa9t\xc3\xa9", "\xe6\x97\xa5",
    "z\x7f", "a\0b", "a\0", "\0"};
static const uint64_t few_lens[] = {0, 1, 2, 3, 3, 1, 3, 3, 6, 3, 2, 3, 2, 1};

/* Records of `per` rows whose TEXT/BLOB columns hold few distinct values
** (a record's own subset of few_vals, so zone decisions by the codes happen:
** records where no value or every value passes) except every third record,
** which holds more than a record's codes do (the byte path beside). */
static void pstore_text_of(pstore *p, const char *const *vals, const uint64_t *lens, uint64_t nf,
                           uint64_t n_records, uint64_t per, uint64_t seed) {
  cs_schema schema = {N_ALL_COLS, all_cols};
  p->t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t rec = 0; rec < n_records; rec++) {
    uint64_t lo = ut_rng_below(&r, nf), span = 1 + ut_rng_below(&r, rec % 4 == 1 ? 1 : nf);
    bool many = rec % 3 == 2, nulls = rec % 2 == 0;
    for (uint64_t i = 0; i < per; i++) {
      uint64_t row = p->t->n_rows;
      ut_table_add_row(p->t);
      for (uint32_t c = 0; c < N_ALL_COLS; c++) {
        cs_type ty = all_cols[c].type;
        ut_cell *cell = ut_table_cell(p->t, row, c);
        if (!cs_type_is_varlen(ty)) {
          ut_cell_random(&r, ty, all_cols[c].nullable, 100, cell);
          continue;
        }
        if (all_cols[c].nullable && nulls && ut_rng_below(&r, 6) == 0) {
          ut_cell_set_null(cell);
        } else if (many) {
          char buf[16];
          int len = snprintf(buf, sizeof buf, "m%03u", (unsigned)ut_rng_below(&r, 600));
          ut_cell_set_bytes(cell, buf, (uint64_t)len);
        } else {
          uint64_t k = (lo + ut_rng_below(&r, span)) % nf;
          ut_cell_set_bytes(cell, vals[k], lens[k]);
        }
      }
    }
  }
  pstore_write(p, 0, per, seed);
}

static void pstore_few_text(pstore *p, uint64_t n_records, uint64_t per, uint64_t seed) {
  pstore_text_of(p, few_vals, few_lens, sizeof few_vals / sizeof few_vals[0], n_records, per, seed);
}

START_TEST(test_pred_text_blob_through_codes) {
  /* Twice over the same store: first the codes are built inside the
  ** evaluation, then read from the snapshot's cache. */
  pstore p;
  pstore_few_text(&p, 9, 700, 731);
  check_all_ops(&p, 731);
  /* the codes were built: the 6 records of few values, and the column
  ** caches (the records of many values are marked uncoded, no block) */
  ck_assert_int_ge(cs__codes_cache_blocks(p.s), 1 + 3 + 3 * 6);
  check_all_ops(&p, 732);
  /* two TEXT/BLOB predicates ANDed, one through codes and one not */
  ut_rng r = ut_rng_seed(733);
  cs_value pool[POOL_MAX];
  int np = operand_pool(p.t, 10, &r, pool);
  for (int k = 0; k < np; k++) {
    cs_pred prs[] = {{.col = 10, .op = CS_CMP_GE, .a = pool[k]},
                     {.col = 11, .op = CS_CMP_NE, .a = vblob("a\0", 2)},
                     {.col = 14, .op = CS_CMP_LT, .a = pool[(k + 7) % np]}};
    check_preds(p.s, p.t, prs, 3, 0, p.t->n_rows, "seed 733 text AND");
    uint64_t first = ut_rng_below(&r, p.t->n_rows);
    check_preds(p.s, p.t, prs, 3, first, ut_rng_below(&r, p.t->n_rows - first + 1),
                "seed 733 text AND range");
  }
  pstore_free(&p);
}
END_TEST

/* Values that folding equates and must not: case variants, trailing
** spaces (and a tab and NUL, which are not dropped), letters next to the
** ASCII range ('@', '[', '`', '{'), and non-ASCII UTF-8 (not folded). */
static const char *const fold_vals[] = {
    "abc", "ABC", "Abc ", "abc  ", "abc\t", "abc\0",    "ab",       "@",           "`",    "[",    "{",
    "",    "  ",  " abc", "ORD",   "ord ",  "\xc3\xa9", "\xc3\x89", "ORD\xc3\x89", "m001", "M001 "};
static const uint64_t fold_lens[] = {3, 3, 4, 5, 4, 4, 2, 1, 1, 1, 1, 0, 2, 4, 3, 4, 2, 2, 5, 4, 5};

START_TEST(test_pred_folded_in) {
  /* A folded IN on the TEXT and BLOB columns, through the codes (records
  ** of few values) and the bytes (the others), against ref_fold_eq; and
  ** never fewer rows than the BINARY IN of the same members. */
  _Static_assert(sizeof fold_vals / sizeof fold_vals[0] == sizeof fold_lens / sizeof fold_lens[0], "lens");
  uint64_t nf = sizeof fold_vals / sizeof fold_vals[0];
  pstore p;
  pstore_text_of(&p, fold_vals, fold_lens, nf, 9, 700, 741);
  ut_rng r = ut_rng_seed(742);
  cs_value set[8];
  static const uint32_t cols[] = {10, 11, 14};
  uint8_t *bin = malloc(p.t->n_rows), *fold = malloc(p.t->n_rows);
  ck_assert(bin && fold);
  for (int k = 0; k < 300; k++) {
    uint32_t col = cols[k % 3];
    uint64_t m = ut_rng_below(&r, 8);
    for (uint64_t j = 0; j < m; j++) {
      uint64_t v = ut_rng_below(&r, nf + 2);
      if (v == nf)
        set[j] = (cs_value){.kind = CS_VAL_NULL};
      else if (v == nf + 1)
        set[j] = vint((int64_t)ut_rng_below(&r, 3));
      else
        set[j] = (cs_value){.kind = ut_rng_below(&r, 4) ? (col == 11 ? CS_VAL_BLOB : CS_VAL_TEXT)
                                                        : (col == 11 ? CS_VAL_TEXT : CS_VAL_BLOB),
                            .p = (const uint8_t *)fold_vals[v],
                            .n = fold_lens[v]};
    }
    cs_pred pr = {.col = col, .op = CS_CMP_IN, .set = set, .n_set = m, .fold = true};
    char ctx[64];
    snprintf(ctx, sizeof ctx, "seed 741 folded IN #%d", k);
    check_preds(p.s, p.t, &pr, 1, 0, p.t->n_rows, ctx);
    uint64_t first = ut_rng_below(&r, p.t->n_rows);
    check_preds(p.s, p.t, &pr, 1, first, ut_rng_below(&r, p.t->n_rows - first + 1), ctx);
    cs_pred_eval(p.s, &pr, 1, 0, p.t->n_rows, fold, NULL);
    pr.fold = false;
    cs_pred_eval(p.s, &pr, 1, 0, p.t->n_rows, bin, NULL);
    for (uint64_t i = 0; i < p.t->n_rows; i++)
      ck_assert_msg(fold[i] >= bin[i], "%s: row %" PRIu64 " in the BINARY IN but not the folded", ctx, i);
  }
  free(bin);
  free(fold);
  pstore_free(&p);
}
END_TEST

START_TEST(test_pred_every_op_type_and_operand_kind_random) {
  static const uint64_t seeds[] = {701, 702, 703};
  pstore p;
  pstore_random(&p, _i == 2 ? 40 : 1500, _i == 1 ? 7 : 200, seeds[_i]);
  check_all_ops(&p, seeds[_i]);
  pstore_free(&p);
}
END_TEST

START_TEST(test_pred_every_op_clustered_zone_maps) {
  pstore p;
  pstore_clustered(&p, 40, 64, 711);
  check_all_ops(&p, 711);
  /* Clustered bounds that cut through records. */
  for (int64_t lo = -25000; lo < 25000; lo += 1750) {
    cs_value a = vint(lo), b = vint(lo + 2600), fa = vflt((double)lo + 0.5);
    for (uint32_t col = 0; col < N_ALL_COLS; col++) {
      cs_pred prs[] = {{.col = col, .op = CS_CMP_BETWEEN, .a = a, .b = b},
                       {.col = col, .op = CS_CMP_GE, .a = fa},
                       {.col = col, .op = CS_CMP_LT, .a = b},
                       {.col = col, .op = CS_CMP_NE, .a = a},
                       {.col = col, .op = CS_CMP_ISNOT, .a = a}};
      for (int k = 0; k < 5; k++) check_preds(p.s, p.t, &prs[k], 1, 0, p.t->n_rows, "seed 711 clustered");
    }
  }
  pstore_free(&p);
}
END_TEST

START_TEST(test_pred_and_of_several) {
  pstore p;
  if (_i == 0)
    pstore_random(&p, 2000, 150, 721);
  else
    pstore_clustered(&p, 30, 72, 722);
  ut_rng r = ut_rng_seed(723 + (uint64_t)_i);
  cs_value pools[N_ALL_COLS][POOL_MAX];
  int np[N_ALL_COLS];
  for (uint32_t c = 0; c < N_ALL_COLS; c++) np[c] = operand_pool(p.t, c, &r, pools[c]);
  cs_value sets[20][20];
  for (int rep = 0; rep < 400; rep++) {
    cs_pred prs[20];
    uint32_t n_preds = 1 + (uint32_t)ut_rng_below(&r, rep < 390 ? 4 : 20); /* a few over the stack limit */
    for (uint32_t k = 0; k < n_preds; k++) {
      uint32_t col = (uint32_t)ut_rng_below(&r, N_ALL_COLS);
      cs_cmp op = (cs_cmp)ut_rng_below(&r, 10);
      prs[k] = (cs_pred){.col = col,
                         .op = op,
                         .a = pools[col][ut_rng_below(&r, (uint64_t)np[col])],
                         .b = pools[col][ut_rng_below(&r, (uint64_t)np[col])]};
      if (op == CS_CMP_IN) {
        uint64_t m = 1 + ut_rng_below(&r, 20);
        for (uint64_t j = 0; j < m; j++) sets[k][j] = pools[col][ut_rng_below(&r, (uint64_t)np[col])];
        prs[k].set = sets[k], prs[k].n_set = m;
      }
    }
    uint64_t first = ut_rng_below(&r, p.t->n_rows);
    char ctx[64];
    snprintf(ctx, sizeof ctx, "seed %d rep %d (%u preds)", 723 + _i, rep, n_preds);
    check_preds(p.s, p.t, prs, n_preds, first, p.t->n_rows - first, ctx);
  }
  pstore_free(&p);
}
END_TEST

START_TEST(test_pred_no_predicates_selects_every_row) {
  pstore p;
  pstore_random(&p, 300, 40, 731);
  check_preds(p.s, p.t, NULL, 0, 0, 300, "no predicates");
  check_preds(p.s, p.t, NULL, 0, 17, 100, "no predicates, sub-range");
  uint8_t m = 7;
  cs_pred_stats st;
  cs_pred pr = {.col = 0, .op = CS_CMP_ISNULL};
  cs_pred_eval(p.s, &pr, 1, 5, 0, &m, &st);
  ck_assert_uint_eq(m, 7); /* n = 0 writes nothing */
  ck_assert_uint_eq(st.rows_selected + st.records_scanned + st.records_skipped, 0);
  pstore_free(&p);
}
END_TEST

/* ------------------------------------------------ exactness, NaN, extremes */

/* One INT64 and one FLOAT64 column holding the values that break a naive
** int-to-double comparison. */
static void pstore_extremes(pstore *p) {
  static const cs_column cols[] = {{"i", CS_TYPE_INT64, true}, {"f", CS_TYPE_FLOAT64, true}};
  static const int64_t is[] = {
      9007199254740993, 9007199254740992, INT64_MAX, INT64_MIN, 0, 9223372036854774784, -1};
  static const double fs[] = {9007199254740992.0,
                              9223372036854775808.0,
                              -9223372036854775808.0,
                              9223372036854774784.0,
                              NAN,
                              -0.0,
                              INFINITY};
  cs_schema schema = {2, cols};
  p->t = ut_table_new(&schema);
  for (int k = 0; k < 8; k++) {
    ut_cell *row = ut_table_add_row(p->t);
    if (k < 7)
      ut_cell_set_int(&row[0], is[k]);
    else
      ut_cell_set_null(&row[0]);
    if (k < 7)
      ut_cell_set_float(&row[1], CS_TYPE_FLOAT64, fs[k]);
    else
      ut_cell_set_null(&row[1]);
  }
  pstore_write(p, 3, 0, 741);
}

/* Rows selected by one predicate, as a bit set. */
static unsigned selected_rows(const pstore *p, cs_pred pr) {
  uint8_t mask[8];
  cs_pred_eval(p->s, &pr, 1, 0, 8, mask, NULL);
  unsigned bits = 0;
  for (int k = 0; k < 8; k++) bits |= (unsigned)(mask[k] != 0) << k;
  check_preds(p->s, p->t, &pr, 1, 0, 8, "extremes");
  return bits;
}

START_TEST(test_pred_int_float_comparison_is_exact) {
  pstore p;
  pstore_extremes(&p);
  /* i: 0:2^53+1 1:2^53 2:INT64_MAX 3:INT64_MIN 4:0 5:2^63-1024 6:-1 7:NULL */
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_EQ, .a = vflt(9007199254740992.0)}),
                    1u << 1);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_GT, .a = vflt(9007199254740992.0)}),
                    1u << 0 | 1u << 2 | 1u << 5);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_LT, .a = vflt(9223372036854775808.0)}),
                    0x7Fu);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_EQ, .a = vflt(9223372036854775808.0)}),
                    0u);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_GE, .a = vflt(9223372036854775808.0)}),
                    0u);
  ck_assert_uint_eq(
      selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_EQ, .a = vflt(-9223372036854775808.0)}), 1u << 3);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_GT, .a = vflt(9223372036854774784.0)}),
                    1u << 2);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_LE, .a = vflt(-0.5)}),
                    1u << 3 | 1u << 6);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_NE, .a = vflt(0.5)}), 0x7Fu);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_NE, .a = vint(0)}),
                    0x7Fu & ~(1u << 4));
  /* f: 0:2^53 1:2^63 2:-2^63 3:2^63-1024 4:NaN 5:-0.0 6:inf 7:NULL */
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_EQ, .a = vint(9007199254740993)}), 0u);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_LT, .a = vint(9007199254740993)}),
                    1u << 0 | 1u << 2 | 1u << 5);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_GT, .a = vint(INT64_MAX)}),
                    1u << 1 | 1u << 6);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_EQ, .a = vint(INT64_MIN)}), 1u << 2);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_EQ, .a = vint(9223372036854774784)}),
                    1u << 3);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_LE, .a = vint(INT64_MAX)}),
                    1u << 0 | 1u << 2 | 1u << 3 | 1u << 5);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_EQ, .a = vint(0)}),
                    1u << 5); /* -0.0 == 0 */
  pstore_free(&p);
}
END_TEST

START_TEST(test_pred_nan_is_null) {
  pstore p;
  pstore_extremes(&p);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_ISNULL}), 1u << 4 | 1u << 7);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_NOTNULL}), 0x7Fu & ~(1u << 4));
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_NE, .a = vflt(1.0)}),
                    0x7Fu & ~(1u << 4));
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_LE, .a = vflt(INFINITY)}),
                    0x7Fu & ~(1u << 4));
  /* IS NOT: the NaN and NULL rows are not 1.0 (or -0.0); a NaN or NULL
  ** operand is IS NOT NULL. */
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_ISNOT, .a = vflt(1.0)}), 0xFFu);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_ISNOT, .a = vint(0)}),
                    0xFFu & ~(1u << 5));
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_ISNOT, .a = vflt(NAN)}),
                    0x7Fu & ~(1u << 4));
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_ISNOT, .a = vnull()}),
                    0x7Fu & ~(1u << 4));
  /* A NaN or NULL operand selects nothing, for every op that takes one. */
  for (int op = CS_CMP_EQ; op <= CS_CMP_GE; op++) {
    ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = (cs_cmp)op, .a = vflt(NAN)}), 0u);
    ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = (cs_cmp)op, .a = vnull()}), 0u);
  }
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_BETWEEN, .a = vnull(), .b = vint(5)}),
                    0u);
  ck_assert_uint_eq(
      selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_BETWEEN, .a = vint(-5), .b = vflt(NAN)}), 0u);
  cs_value set[] = {vnull(), vflt(NAN), vint(0), vtext("0")};
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_IN, .set = set, .n_set = 4}), 1u << 4);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 1, .op = CS_CMP_IN, .set = set, .n_set = 4}), 1u << 5);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_IN, .set = set, .n_set = 2}), 0u);
  /* Across classes: numbers sort below TEXT, TEXT below BLOB. */
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_LT, .a = vtext("")}), 0x7Fu);
  ck_assert_uint_eq(selected_rows(&p, (cs_pred){.col = 0, .op = CS_CMP_EQ, .a = vtext("0")}), 0u);
  pstore_free(&p);
}
END_TEST

/* ------------------------------------------------------------- zone maps */

/* Record k (of 20, 1000 rows each) holds x = k*1000 + i ascending, y the
** same as a double, z NULL when k % 3 == 0 else k. */
static void pstore_disjoint(pstore *p) {
  static const cs_column cols[] = {
      {"x", CS_TYPE_INT64, false}, {"y", CS_TYPE_FLOAT64, false}, {"z", CS_TYPE_INT32, true}};
  cs_schema schema = {3, cols};
  p->t = ut_table_new(&schema);
  for (int64_t row = 0; row < 20000; row++) {
    ut_cell *c = ut_table_add_row(p->t);
    ut_cell_set_int(&c[0], row);
    ut_cell_set_float(&c[1], CS_TYPE_FLOAT64, (double)row);
    if ((row / 1000) % 3 == 0)
      ut_cell_set_null(&c[2]);
    else
      ut_cell_set_int(&c[2], row / 1000);
  }
  pstore_write(p, 0, 1000, 751);
  ck_assert_uint_eq(cs_store_records(p->s), 20);
}

static cs_pred_stats stats_of(const pstore *p, const cs_pred *prs, uint32_t np, uint64_t first, uint64_t n) {
  check_preds(p->s, p->t, prs, np, first, n, "disjoint");
  uint8_t *mask = malloc(n);
  ck_assert_ptr_nonnull(mask);
  cs_pred_stats st;
  cs_pred_eval(p->s, prs, np, first, n, mask, &st);
  free(mask);
  return st;
}

START_TEST(test_pred_zone_maps_skip_records_outside_the_range) {
  pstore p;
  pstore_disjoint(&p);
  cs_pred_stats st;
  cs_pred x1 = {.col = 0, .op = CS_CMP_EQ, .a = vint(5500)};
  st = stats_of(&p, &x1, 1, 0, 20000);
  ck_assert_uint_eq(st.records_scanned, 1);
  ck_assert_uint_eq(st.records_skipped, 19);
  ck_assert_uint_eq(st.rows_selected, 1);
  /* A whole record in range is decided too: nothing is read. */
  cs_pred x2 = {.col = 0, .op = CS_CMP_BETWEEN, .a = vint(5000), .b = vflt(5999.5)};
  st = stats_of(&p, &x2, 1, 0, 20000);
  ck_assert_uint_eq(st.records_scanned, 0);
  ck_assert_uint_eq(st.records_skipped, 20);
  ck_assert_uint_eq(st.rows_selected, 1000);
  /* Sorted float chunks prove they hold no NaN, so they decide both ways. */
  cs_pred y1 = {.col = 1, .op = CS_CMP_GE, .a = vint(7000)};
  st = stats_of(&p, &y1, 1, 0, 20000);
  ck_assert_uint_eq(st.records_scanned, 0);
  ck_assert_uint_eq(st.rows_selected, 13000);
  cs_pred y2 = {.col = 1, .op = CS_CMP_LT, .a = vflt(7000.5)};
  st = stats_of(&p, &y2, 1, 0, 20000);
  ck_assert_uint_eq(st.records_scanned, 1);
  ck_assert_uint_eq(st.records_skipped, 19);
  /* Null counts decide IS NULL; an IN set outside a record's range skips it. */
  cs_pred z1 = {.col = 2, .op = CS_CMP_ISNULL};
  st = stats_of(&p, &z1, 1, 0, 20000);
  ck_assert_uint_eq(st.records_scanned, 0);
  ck_assert_uint_eq(st.rows_selected, 7000);
  cs_value set[] = {vint(12345), vflt(3000.0), vtext("x")};
  cs_pred x3 = {.col = 0, .op = CS_CMP_IN, .set = set, .n_set = 3};
  st = stats_of(&p, &x3, 1, 0, 20000);
  ck_assert_uint_eq(st.records_scanned, 2);
  ck_assert_uint_eq(st.rows_selected, 2);
  /* AND: one predicate deciding 0 skips the record whatever the others say. */
  cs_pred both[] = {{.col = 2, .op = CS_CMP_NOTNULL}, {.col = 0, .op = CS_CMP_NE, .a = vint(4321)}};
  st = stats_of(&p, both, 2, 0, 20000);
  ck_assert_uint_eq(st.records_scanned, 1);
  ck_assert_uint_eq(st.rows_selected, 13000 - 1);
  /* A sub-range counts only the records it overlaps. */
  st = stats_of(&p, &x1, 1, 4500, 2000);
  ck_assert_uint_eq(st.records_scanned + st.records_skipped, 3);
  ck_assert_uint_eq(st.records_scanned, 1);
  pstore_free(&p);
}
END_TEST

/* --------------------------------------------------------------- threads */

START_TEST(test_pred_threads_identical) {
  static const cs_column cols[] = {
      {"a", CS_TYPE_INT32, true}, {"f", CS_TYPE_FLOAT32, true}, {"t", CS_TYPE_TEXT, false}};
  cs_schema schema = {3, cols};
  pstore p;
  p.t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(761);
  uint64_t N = 3 * CS_PARALLEL_MIN_ELEMENTS + 5000;
  for (uint64_t row = 0; row < N; row++) {
    ut_cell *c = ut_table_add_row(p.t);
    if (ut_rng_below(&r, 20) == 0)
      ut_cell_set_null(&c[0]);
    else
      ut_cell_set_int(&c[0], (int64_t)(row / 1000) * 10 + (int64_t)ut_rng_below(&r, 40)); /* clustered */
    ut_cell_set_float(&c[1], CS_TYPE_FLOAT32, ut_rng_below(&r, 50) == 0 ? NAN : ut_rng_unit(&r) * 100);
    char buf[8];
    int len =
        snprintf(buf, sizeof buf, "%c%c", 'a' + (int)ut_rng_below(&r, 26), 'a' + (int)ut_rng_below(&r, 26));
    ut_cell_set_bytes(&c[2], buf, (uint64_t)len);
  }
  pstore_write(&p, 40000, 0, 762);
  cs_pred sets[][2] = {
      {{.col = 0, .op = CS_CMP_BETWEEN, .a = vint(3000), .b = vint(20000)},
       {.col = 1, .op = CS_CMP_LT, .a = vflt(50)}},
      {{.col = 1, .op = CS_CMP_ISNULL}, {.col = 0, .op = CS_CMP_NOTNULL}},
      {{.col = 2, .op = CS_CMP_GE, .a = vtext("m")}, {.col = 0, .op = CS_CMP_NE, .a = vint(12)}},
  };
  uint64_t first = 11, n = N - 20;
  uint8_t *m1 = malloc(n), *m2 = malloc(n);
  ck_assert(m1 && m2);
  for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
    ut_kernel_config_set(1, -1);
    cs_pred_stats s1, s2;
    cs_pred_eval(p.s, sets[k], 2, first, n, m1, &s1);
    check_preds(p.s, p.t, sets[k], 2, first, n, "threads 1");
    static const int threads[] = {2, 4, 3};
    for (int ti = 0; ti < 3; ti++) {
      ut_kernel_config_set(threads[ti], -1);
      cs_pred_eval(p.s, sets[k], 2, first, n, m2, &s2);
      ck_assert_msg(memcmp(m1, m2, n) == 0, "set %zu: mask at %d threads differs from 1 thread", k,
                    threads[ti]);
      ck_assert_msg(memcmp(&s1, &s2, sizeof s1) == 0, "set %zu: stats at %d threads differ", k, threads[ti]);
    }
  }
  ut_kernel_config_reset();
  free(m1), free(m2);
  pstore_free(&p);
}
END_TEST

/* ---------------------------------------------------------- sorted range */

START_TEST(test_pred_sorted_range_matches_mask) {
  static const cs_column cols[] = {{"i", CS_TYPE_INT64, false},  {"f", CS_TYPE_FLOAT64, false},
                                   {"s", CS_TYPE_INT8, false},   {"u", CS_TYPE_INT32, false},
                                   {"t", CS_TYPE_TEXT, false},   {"n", CS_TYPE_INT32, true},
                                   {"g", CS_TYPE_FLOAT32, false}};
  cs_schema schema = {7, cols};
  pstore p;
  p.t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(771);
  int64_t v = -5000;
  for (uint64_t row = 0; row < 3000; row++) {
    ut_cell *c = ut_table_add_row(p.t);
    v += (int64_t)ut_rng_below(&r, 4); /* non-decreasing, with runs of equal values */
    ut_cell_set_int(&c[0], v);
    ut_cell_set_float(&c[1], CS_TYPE_FLOAT64, (double)v / 4);
    ut_cell_set_int(&c[2], v / 100);
    ut_cell_set_int(&c[3], (int64_t)ut_rng_below(&r, 1000)); /* unsorted */
    ut_cell_set_bytes(&c[4], "x", 1);
    if (row == 1500)
      ut_cell_set_null(&c[5]); /* sorted but for one NULL */
    else
      ut_cell_set_int(&c[5], (int64_t)row);
    ut_cell_set_float(&c[6], CS_TYPE_FLOAT32, (double)v / 8);
  }
  pstore_write(&p, 300, 0, 772);
  cs_value pool[POOL_MAX];
  int np = 0;
  for (uint32_t col = 0; col < 7; col++) {
    np = operand_pool(p.t, col, &r, pool);
    for (int op = CS_CMP_EQ; op <= CS_CMP_ISNOT; op++) {
      for (int k = 0; k < np; k++) {
        cs_pred pr = {.col = col, .op = (cs_cmp)op, .a = pool[k], .b = pool[ut_rng_below(&r, (uint64_t)np)]};
        uint64_t lo = 7, hi = 7;
        bool ok = cs_pred_sorted_range(p.s, &pr, &lo, &hi);
        bool range_op = op != CS_CMP_NE && op != CS_CMP_ISNULL && op != CS_CMP_NOTNULL && op != CS_CMP_IN &&
                        op != CS_CMP_ISNOT;
        bool sorted_col = col == 0 || col == 1 || col == 2 || col == 6;
        char d[300];
        describe_pred(&pr, p.t, d, sizeof d);
        ck_assert_msg(ok == (range_op && sorted_col), "%s: answered %d", d, ok);
        if (!ok) continue;
        ck_assert_msg(lo <= hi && hi <= 3000, "%s: range [%" PRIu64 ", %" PRIu64 ")", d, lo, hi);
        for (uint64_t row = 0; row < 3000; row++) {
          bool want = ref_pred(&pr, cols[col].type, ut_table_cell(p.t, row, col));
          if (want != (row >= lo && row < hi))
            ck_abort_msg("%s: range [%" PRIu64 ", %" PRIu64 ") but row %" PRIu64 " satisfies=%d", d, lo, hi,
                         row, want);
        }
      }
    }
  }
  pstore_free(&p);
}
END_TEST

static Suite *pred_suite(void) {
  Suite *s = suite_create("pred");
  TCase *tc = tcase_create("semantics");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_pred_every_op_type_and_operand_kind_random, 0, 3);
  tcase_add_test(tc, test_pred_every_op_clustered_zone_maps);
  tcase_add_test(tc, test_pred_text_blob_through_codes);
  tcase_add_test(tc, test_pred_folded_in);
  tcase_add_loop_test(tc, test_pred_and_of_several, 0, 2);
  tcase_add_test(tc, test_pred_no_predicates_selects_every_row);
  tcase_add_test(tc, test_pred_int_float_comparison_is_exact);
  tcase_add_test(tc, test_pred_nan_is_null);
  tcase_add_test(tc, test_pred_zone_maps_skip_records_outside_the_range);
  tcase_add_test(tc, test_pred_sorted_range_matches_mask);
  suite_add_tcase(s, tc);
  TCase *tt = tcase_create("threads");
  tcase_add_checked_fixture(tt, NULL, ut_kernel_config_reset);
  tcase_set_timeout(tt, 600);
  tcase_add_test(tt, test_pred_threads_identical);
  suite_add_tcase(s, tt);
  return s;
}

int main(void) { return ut_run_suite(pred_suite()); }
