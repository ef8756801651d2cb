/*
** check_order.c - cs_order_rows (core/analytics/cs_order.c): ORDER BY with LIMIT,
** GROUP BY and DISTINCT over a list of positions, in SQLite's order.
**
** The reference is the obvious program: read every key cell through the
** public accessors (unit_util's ut_store_cell), qsort the input indices with
** a comparator that spells out SQLite's rules (NULL and NaN first, -0.0 ==
** 0.0, integers and floats by value, TEXT and BLOB by memcmp then length,
** DESC negated, the input index breaking ties), and read the answers off
** that order: SORT is its first `limit` rows; DISTINCT the first row of each
** run of equal keys (the smallest index, so the first in input order); GROUP
** is checked as a property, because the order of groups is unspecified: the
** output is made of whole groups, each group once, each group's rows
** exactly the input's rows of that group in input order, and `limit` of
** them (or all).
**
** Stores hold every column type, some columns drawn from a small palette so
** keys repeat (every integer type's extremes, -0.0 and 0.0, NaN, the
** infinities, "" beside NULL, "a" beside "a\0", strings sharing their first
** eight bytes), some from ut_cell_random (edges of every kind), one INT64
** column of only INT64_MIN, INT64_MAX and NULL (a key whose codes need 65
** bits).  Inputs are every row ascending, a random ascending subset,
** shuffled draws with duplicates, descending, and tiny lists (0, 1, 2, ...
** rows).  Limits are 0, 1, small, a third, n - 1, n, past n and none.
**
** The kernel has several paths (counting sort, top-k, hashing, dictionary,
** radix sort of one segment or of several, wide TEXT) chosen by switch
** points; the loop tests run everything under four tuning profiles
** (cs_order_internal.h) that move the switch points so every path meets
** every shape, and a test asserts each path was reached.  Seeds are in
** every failure message.  Per-element checks use `if (...) ck_abort_msg`.
*/
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"
#include "cs_order_internal.h"
#include "unit_util.h"

/* --------------------------------------------------------------- columns */

typedef enum { FL_FULL, FL_LOW, FL_RANGE, FL_PREFIX, FL_EXTREME } flavor;

typedef struct ocol {
  const char *name;
  cs_type type;
  bool nullable;
  flavor fl;
  int64_t lo, hi; /* FL_RANGE */
} ocol;

static const ocol mixed_cols[] = {
    {"i8", CS_TYPE_INT8, true, FL_FULL, 0, 0},       {"i16", CS_TYPE_INT16, true, FL_LOW, 0, 0},
    {"i32", CS_TYPE_INT32, true, FL_RANGE, 0, 999},  {"i64", CS_TYPE_INT64, true, FL_FULL, 0, 0},
    {"u8", CS_TYPE_UINT8, true, FL_FULL, 0, 0},      {"u16", CS_TYPE_UINT16, true, FL_LOW, 0, 0},
    {"u32", CS_TYPE_UINT32, true, FL_FULL, 0, 0},    {"f32", CS_TYPE_FLOAT32, true, FL_FULL, 0, 0},
    {"f64", CS_TYPE_FLOAT64, true, FL_FULL, 0, 0},   {"f64l", CS_TYPE_FLOAT64, true, FL_LOW, 0, 0},
    {"f32l", CS_TYPE_FLOAT32, true, FL_LOW, 0, 0},   {"b", CS_TYPE_BOOL, true, FL_FULL, 0, 0},
    {"t", CS_TYPE_TEXT, true, FL_LOW, 0, 0},         {"tf", CS_TYPE_TEXT, true, FL_FULL, 0, 0},
    {"bl", CS_TYPE_BLOB, true, FL_LOW, 0, 0},        {"bp", CS_TYPE_BLOB, true, FL_PREFIX, 0, 0},
    {"nn_i64", CS_TYPE_INT64, false, FL_LOW, 0, 0},  {"nn_f64", CS_TYPE_FLOAT64, false, FL_FULL, 0, 0},
    {"nn_t", CS_TYPE_TEXT, false, FL_PREFIX, 0, 0},  {"x64", CS_TYPE_INT64, true, FL_EXTREME, 0, 0},
    {"nn_u8", CS_TYPE_UINT8, false, FL_RANGE, 0, 3},
};
#define N_MIXED (sizeof mixed_cols / sizeof mixed_cols[0])

static const struct {
  const char *p;
  uint64_t n;
} text_palette[] = {
    {"", 0},
    {"a", 1},
    {"a\0", 2},
    {"a\0b", 3},
    {"ab", 2},
    {"abcdefgh", 8},
    {"abcdefgh\0", 9},
    {"abcdefghi", 9},
    {"abcdefghij", 10},
    {"b", 1},
    {"\xff", 1},
    {"\xc3\xa9t\xc3\xa9", 6},
    {"abcdefg", 7},
    {"abcdefgh\x01", 9},
};
#define N_TEXT_PALETTE (sizeof text_palette / sizeof text_palette[0])

static void gen_cell(ut_rng *r, const ocol *c, unsigned null_permille, ut_cell *cell) {
  if (c->nullable && ut_rng_below(r, 1000) < null_permille) {
    free(cell->bytes);
    memset(cell, 0, sizeof *cell);
    cell->null = true;
    return;
  }
  int64_t lo, hi;
  switch (c->fl) {
    case FL_FULL:
      free(cell->bytes);
      memset(cell, 0, sizeof *cell);
      ut_cell_random(r, c->type, false, 0, cell);
      return;
    case FL_RANGE:
      ut_cell_set_int(cell, c->lo + (int64_t)ut_rng_below(r, (uint64_t)(c->hi - c->lo) + 1));
      return;
    case FL_EXTREME: {
      const int64_t picks[] = {INT64_MIN, INT64_MAX, INT64_MIN, 0};
      ut_cell_set_int(cell, picks[ut_rng_below(r, 4)]);
      return;
    }
    case FL_PREFIX: {
      uint8_t buf[32];
      memcpy(buf, "0123456789abcdef-", 17);
      uint64_t k = ut_rng_below(r, 5);
      for (uint64_t i = 0; i < k; i++) buf[17 + i] = "ab\0"[ut_rng_below(r, 3)];
      /* now and then a value that is a prefix of the shared part */
      uint64_t len = ut_rng_below(r, 10) == 0 ? ut_rng_below(r, 17) : 17 + k;
      ut_cell_set_bytes(cell, buf, len);
      return;
    }
    default: break; /* FL_LOW */
  }
  if (cs_type_is_integer(c->type)) {
    cs_type_int_range(c->type, &lo, &hi);
    const int64_t picks[] = {lo, hi, -2, -1, 0, 1, 2, 3};
    int64_t v = picks[ut_rng_below(r, 8)];
    ut_cell_set_int(cell, v < lo ? lo : v > hi ? hi : v);
  } else if (cs_type_is_float(c->type)) {
    const double picks[] = {0.0, -0.0, 1.5, -1.5, INFINITY, -INFINITY, NAN, 1e300, -1e-300, 2.0, -0.0, 0.0};
    ut_cell_set_float(cell, c->type, picks[ut_rng_below(r, 12)]);
  } else {
    uint64_t i = ut_rng_below(r, N_TEXT_PALETTE);
    ut_cell_set_bytes(cell, text_palette[i].p, text_palette[i].n);
  }
}

/* A store of n random rows of cols; records of `rec` rows, or (rec == 0)
** irregular records of 1..64 rows. */
typedef struct ostore {
  ut_scratch sc;
  cs_store *s;
} ostore;

static cs_rc put_cell(cs_batch *b, uint32_t col, cs_type type, const ut_cell *c, cs_err *err) {
  if (c->null) return cs_batch_put_null(b, col, err);
  if (cs_type_is_integer(type)) return cs_batch_put_i64(b, col, c->i, err);
  if (type == CS_TYPE_FLOAT32) return cs_batch_put_f64(b, col, (double)c->f32, err);
  if (type == CS_TYPE_FLOAT64) return cs_batch_put_f64(b, col, c->f, err);
  return cs_batch_put_bytes(b, col, c->bytes, c->len, err);
}

static void ostore_make(ostore *o, const ocol *cols, uint32_t nc, uint64_t n, uint64_t rec,
                        unsigned null_permille, uint64_t seed) {
  o->sc = ut_scratch_new();
  cs_column cc[32];
  ck_assert(nc <= 32);
  for (uint32_t c = 0; c < nc; c++) cc[c] = (cs_column){cols[c].name, cols[c].type, cols[c].nullable};
  cs_schema schema = {nc, cc};
  cs_writer_options opt = {.record_rows = rec ? rec : (uint64_t)1 << 30};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(o->sc.path, &schema, &opt, &w, &err) == CS_OK, "create: %s", err.msg);
  ut_rng rng = ut_rng_seed(seed);
  ut_cell cells[32];
  memset(cells, 0, sizeof cells);
  cs_batch *b;
  ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
  for (uint64_t done = 0; done < n;) {
    uint64_t want = rec ? 65536 : 1 + ut_rng_below(&rng, 64);
    if (want > n - done) want = n - done;
    cs_batch_clear(b);
    for (uint64_t i = 0; i < want; i++) {
      for (uint32_t c = 0; c < nc; c++) {
        gen_cell(&rng, &cols[c], null_permille, &cells[c]);
        if (put_cell(b, c, cols[c].type, &cells[c], &err) != CS_OK) ck_abort_msg("put: %s", err.msg);
      }
      cs_batch_end_row(b);
    }
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "write: %s", err.msg);
    done += want;
  }
  cs_batch_free(b);
  for (uint32_t c = 0; c < nc; c++) free(cells[c].bytes);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "commit: %s", err.msg);
  o->s = ut_open_ok(o->sc.path, CS_VERIFY_FULL, "order store");
  ck_assert_uint_eq(cs_store_rows(o->s), n);
}

static void ostore_free(ostore *o) {
  cs_store_close(o->s);
  ut_scratch_free(&o->sc);
}

/* ------------------------------------------------------------- reference */

/* SQLite's comparison of two values of one column type. */
static int ref_cmp_value(cs_type t, const ut_cell *a, const ut_cell *b) {
  bool na = a->null || (cs_type_is_float(t) && isnan(a->f));
  bool nb = b->null || (cs_type_is_float(t) && isnan(b->f));
  if (na || nb) return (int)nb - (int)na;
  if (cs_type_is_integer(t)) return (a->i > b->i) - (a->i < b->i);
  if (cs_type_is_float(t)) return (a->f > b->f) - (a->f < b->f);
  uint64_t m = a->len < b->len ? a->len : b->len;
  int c = m ? memcmp(a->bytes, b->bytes, m) : 0;
  return c ? (c > 0) - (c < 0) : (a->len > b->len) - (a->len < b->len);
}

typedef struct ref {
  const cs_store *s;
  const cs_order_key *keys;
  uint32_t nk;
  const uint64_t *rows;
  uint64_t n;
  ut_cell *cells;   /* n * nk: key k of input i at [i * nk + k] */
  uint32_t *sorted; /* input indices in SQLite's order, ties by index */
  uint32_t *group;  /* group number (in sorted order) of input index i */
  uint64_t n_groups;
  uint32_t *row_group; /* group of each store row that occurs in the input */
  uint64_t
      *grp_start;     /* n_groups + 1: group g's input indices are grp_list[grp_start[g], grp_start[g + 1]) */
  uint32_t *grp_list; /* input indices by group, each group in input order */
} ref;

static const ref *cmp_ref; /* qsort has no context argument */

static int ref_cmp_tuple(const ref *r, uint32_t i, uint32_t j) {
  for (uint32_t k = 0; k < r->nk; k++) {
    cs_type t = cs_store_schema(r->s)->cols[r->keys[k].col].type;
    int c = ref_cmp_value(t, &r->cells[(uint64_t)i * r->nk + k], &r->cells[(uint64_t)j * r->nk + k]);
    if (c) return r->keys[k].desc ? -c : c;
  }
  return 0;
}

static int ref_qsort_cmp(const void *pa, const void *pb) {
  uint32_t i = *(const uint32_t *)pa, j = *(const uint32_t *)pb;
  int c = ref_cmp_tuple(cmp_ref, i, j);
  return c ? c : (i > j) - (i < j);
}

static void ref_build(ref *r, const cs_store *s, const cs_order_key *keys, uint32_t nk, const uint64_t *rows,
                      uint64_t n) {
  memset(r, 0, sizeof *r);
  r->s = s, r->keys = keys, r->nk = nk, r->rows = rows, r->n = n;
  r->cells = calloc(n * nk + 1, sizeof *r->cells);
  r->sorted = malloc((n + 1) * sizeof *r->sorted);
  r->group = malloc((n + 1) * sizeof *r->group);
  r->row_group = malloc((cs_store_rows(s) + 1) * sizeof *r->row_group);
  ck_assert(r->cells && r->sorted && r->group && r->row_group);
  for (uint64_t i = 0; i < n; i++) {
    for (uint32_t k = 0; k < nk; k++) ut_store_cell(s, rows[i], keys[k].col, &r->cells[i * nk + k]);
    r->sorted[i] = (uint32_t)i;
  }
  cmp_ref = r;
  qsort(r->sorted, n, sizeof *r->sorted, ref_qsort_cmp);
  for (uint64_t t = 0; t < n; t++) {
    if (t == 0 || ref_cmp_tuple(r, r->sorted[t - 1], r->sorted[t]) != 0) r->n_groups++;
    r->group[r->sorted[t]] = (uint32_t)(r->n_groups - 1);
    r->row_group[rows[r->sorted[t]]] = (uint32_t)(r->n_groups - 1);
  }
  r->grp_start = calloc(r->n_groups + 2, sizeof *r->grp_start);
  r->grp_list = malloc((n + 1) * sizeof *r->grp_list);
  ck_assert(r->grp_start && r->grp_list);
  for (uint64_t i = 0; i < n; i++) r->grp_start[r->group[i] + 1]++;
  for (uint64_t g = 0; g < r->n_groups; g++) r->grp_start[g + 1] += r->grp_start[g];
  uint64_t *fill = malloc((r->n_groups + 1) * sizeof *fill);
  ck_assert_ptr_nonnull(fill);
  memcpy(fill, r->grp_start, r->n_groups * sizeof *fill);
  for (uint64_t i = 0; i < n; i++) r->grp_list[fill[r->group[i]]++] = (uint32_t)i;
  free(fill);
}

static void ref_free(ref *r) {
  free(r->cells), free(r->sorted), free(r->group), free(r->row_group), free(r->grp_start), free(r->grp_list);
}

/* Runs cs_order_rows on a copy of the input and checks it against r. */
static void check_one(const ref *r, cs_order_mode mode, uint64_t limit, const char *ctx) {
  uint64_t n = r->n;
  uint64_t *got = malloc((n + 1) * 8);
  ck_assert_ptr_nonnull(got);
  if (n) memcpy(got, r->rows, n * 8);
  uint64_t m = n;
  cs_err err = {0};
  cs_rc rc = cs_order_rows(r->s, r->keys, r->nk, mode, got, &m, limit, &err);
  const char *mname = mode == CS_ORDER_SORT ? "SORT" : mode == CS_ORDER_GROUP ? "GROUP" : "DISTINCT";
  if (rc != CS_OK)
    ck_abort_msg("%s %s limit %" PRIu64 ": %s: %s", ctx, mname, limit, cs_rc_name(rc), err.msg);
  const char *path = cs__order_last_path();
  if (mode == CS_ORDER_SORT) {
    uint64_t want = n < limit ? n : limit;
    if (m != want)
      ck_abort_msg("%s SORT limit %" PRIu64 " (%s): %" PRIu64 " rows, expected %" PRIu64, ctx, limit, path, m,
                   want);
    for (uint64_t t = 0; t < m; t++)
      if (got[t] != r->rows[r->sorted[t]])
        ck_abort_msg("%s SORT limit %" PRIu64 " (%s): position %" PRIu64 " holds row %" PRIu64
                     ", expected %" PRIu64,
                     ctx, limit, path, t, got[t], r->rows[r->sorted[t]]);
  } else if (mode == CS_ORDER_DISTINCT) {
    uint64_t want = r->n_groups < limit ? r->n_groups : limit;
    if (m != want)
      ck_abort_msg("%s DISTINCT limit %" PRIu64 " (%s): %" PRIu64 " rows, expected %" PRIu64, ctx, limit,
                   path, m, want);
    uint64_t g = 0;
    for (uint64_t t = 0; t < n && g < m; t++) {
      if (t > 0 && r->group[r->sorted[t]] == r->group[r->sorted[t - 1]]) continue;
      if (got[g] != r->rows[r->sorted[t]])
        ck_abort_msg("%s DISTINCT limit %" PRIu64 " (%s): group %" PRIu64 " is row %" PRIu64
                     ", expected %" PRIu64,
                     ctx, limit, path, g, got[g], r->rows[r->sorted[t]]);
      g++;
    }
  } else {
    /* Whole groups, each once, each exactly its input rows in input order. */
    uint64_t want_groups = r->n_groups < limit ? r->n_groups : limit;
    uint8_t *seen = calloc(r->n_groups + 1, 1);
    ck_assert_ptr_nonnull(seen);
    uint64_t runs = 0, pos = 0, end = 0;
    uint32_t g = 0;
    for (uint64_t t = 0; t < m; t++) {
      if (t == 0 || pos == end) { /* the previous group is complete: a new one starts */
        g = r->row_group[got[t]];
        if (seen[g])
          ck_abort_msg("%s GROUP (%s): group %u appears twice (position %" PRIu64 ")", ctx, path, g, t);
        seen[g] = 1;
        runs++;
        pos = r->grp_start[g], end = r->grp_start[g + 1];
      }
      if (got[t] != r->rows[r->grp_list[pos]])
        ck_abort_msg("%s GROUP limit %" PRIu64 " (%s): position %" PRIu64 " holds row %" PRIu64
                     ", expected row %" PRIu64 ", the next input row of group %u",
                     ctx, limit, path, t, got[t], r->rows[r->grp_list[pos]], g);
      pos++;
    }
    if (pos != end || runs != want_groups)
      ck_abort_msg("%s GROUP limit %" PRIu64 " (%s): %" PRIu64 " rows in %" PRIu64
                   " groups, expected %" PRIu64 " whole groups",
                   ctx, limit, path, m, runs, want_groups);
    free(seen);
  }
  free(got);
}

/* Every mode at every interesting limit. */
static void check_all(const cs_store *s, const cs_order_key *keys, uint32_t nk, const uint64_t *rows,
                      uint64_t n, const char *ctx) {
  ref r;
  ref_build(&r, s, keys, nk, rows, n);
  const uint64_t limits[] = {CS_ORDER_NO_LIMIT, 0, 1, 7, n / 3, n / 20 + 1, n ? n - 1 : 0, n, n + 5};
  for (int mode = 0; mode < 3; mode++)
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++)
      check_one(&r, (cs_order_mode)mode, limits[l], ctx);
  ref_free(&r);
}

/* ------------------------------------------------------------ input sets */

enum { IN_ALL, IN_SUBSET, IN_SHUFFLED, IN_DESC, IN_TINY, IN_COUNT };
static const char *const in_names[] = {"ascending", "ascending subset", "shuffled with duplicates",
                                       "descending", "tiny"};

/* Input set `which` over N store rows into rows (room for N + 100); returns n. */
static uint64_t make_input(int which, uint64_t N, ut_rng *rng, uint64_t *rows) {
  uint64_t n = 0;
  switch (which) {
    case IN_ALL:
      for (uint64_t i = 0; i < N; i++) rows[n++] = i;
      break;
    case IN_SUBSET:
      for (uint64_t i = 0; i < N; i++)
        if (ut_rng_below(rng, 2)) rows[n++] = i;
      break;
    case IN_SHUFFLED:
      n = N / 2 + ut_rng_below(rng, N / 2 + 1);
      for (uint64_t i = 0; i < n; i++) rows[i] = ut_rng_below(rng, N);
      break;
    case IN_DESC:
      for (uint64_t i = 0; i < N; i++) rows[n++] = N - 1 - i;
      break;
    default: {
      static const uint64_t sizes[] = {0, 1, 2, 3, 5, 24, 25, 26};
      n = sizes[ut_rng_below(rng, 8)];
      if (n > N) n = N;
      for (uint64_t i = 0; i < n; i++) rows[i] = ut_rng_below(rng, N);
      break;
    }
  }
  return n;
}

/* ------------------------------------------------------------- profiles */

enum { PROF_DEFAULT, PROF_SORT_ONLY, PROF_SMALL_CAPS, PROF_BIG_CAPS, PROF_COUNT };
static const char *const prof_names[] = {"defaults", "LSD radix only, wide text",
                                         "small caps, MSD from 64 rows", "big caps, MSD from 200 rows"};

static void profile_set(int p) {
  cs__order_tuning t;
  cs__order_tuning_default(&t);
  switch (p) {
    case PROF_SORT_ONLY: t = (cs__order_tuning){0, -1, 0, 0, 8, 0, 0, 16384, 0, 1u << 20}; break;
    case PROF_SMALL_CAPS: t = (cs__order_tuning){2, 4, 3, 5, 11, 1, 64, 30, 2, 1u << 20}; break;
    case PROF_BIG_CAPS:
      t = (cs__order_tuning){1, 12, 1u << 20, 1u << 20, 13, 1, 200, 100, 0, 1u << 20};
      break;
    default: break;
  }
  cs__order_tuning_set(&t);
}

static void profile_reset(void) { cs__order_tuning_set(NULL); }

/* -------------------------------------------------------------- the tests */

#define MIXED_ROWS 1500

/* Each column alone, ASC and DESC, on every input set. */
START_TEST(test_order_single_key_matches_reference) {
  int prof = _i;
  profile_set(prof);
  uint64_t seed = 0x0DE5 + (uint64_t)prof;
  ostore o;
  ostore_make(&o, mixed_cols, N_MIXED, MIXED_ROWS, prof == PROF_BIG_CAPS ? 64 : 0, 120, seed);
  uint64_t *rows = malloc((MIXED_ROWS + 100) * 8);
  ck_assert_ptr_nonnull(rows);
  ut_rng rng = ut_rng_seed(seed * 31);
  for (int in = 0; in < IN_COUNT; in++) {
    uint64_t n = make_input(in, MIXED_ROWS, &rng, rows);
    for (uint32_t col = 0; col < N_MIXED; col++)
      for (int desc = 0; desc < 2; desc++) {
        cs_order_key key = {col, desc != 0};
        char ctx[256];
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 ", %s, %s, %" PRIu64 " rows, key %s %s", seed,
                 prof_names[prof], in_names[in], n, mixed_cols[col].name, desc ? "DESC" : "ASC");
        check_all(o.s, &key, 1, rows, n, ctx);
      }
  }
  free(rows);
  ostore_free(&o);
}
END_TEST

/* Random lists of 2..4 keys, mixed ASC and DESC. */
START_TEST(test_order_multi_key_mixed_directions_match_reference) {
  int prof = _i;
  profile_set(prof);
  uint64_t seed = 0x3A7E + (uint64_t)prof;
  ostore o;
  ostore_make(&o, mixed_cols, N_MIXED, MIXED_ROWS, 0, 150, seed);
  uint64_t *rows = malloc((MIXED_ROWS + 100) * 8);
  ck_assert_ptr_nonnull(rows);
  ut_rng rng = ut_rng_seed(seed * 17);
  for (int in = 0; in < IN_COUNT; in++) {
    for (int trial = 0; trial < 24; trial++) {
      uint64_t n = make_input(in, MIXED_ROWS, &rng, rows);
      cs_order_key keys[4];
      uint32_t nk = 2 + (uint32_t)ut_rng_below(&rng, 3);
      char names[128] = "";
      for (uint32_t k = 0; k < nk; k++) {
        keys[k].col = (uint32_t)ut_rng_below(&rng, N_MIXED);
        keys[k].desc = ut_rng_below(&rng, 2) != 0;
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s%s", k ? ", " : "", mixed_cols[keys[k].col].name,
                 keys[k].desc ? " DESC" : "");
      }
      char ctx[320];
      snprintf(ctx, sizeof ctx, "seed %" PRIu64 ", %s, %s, trial %d, %" PRIu64 " rows, keys (%s)", seed,
               prof_names[prof], in_names[in], trial, n, names);
      check_all(o.s, keys, nk, rows, n, ctx);
    }
  }
  free(rows);
  ostore_free(&o);
}
END_TEST

/* Two columns whose values are given, one row each. */
static void small_store(ostore *o, const ocol *col, const ut_cell *cells, uint64_t n) {
  o->sc = ut_scratch_new();
  cs_column cc = {col->name, col->type, col->nullable};
  cs_schema schema = {1, &cc};
  cs_writer *w;
  cs_err err = {0};
  cs_writer_options opt = {.record_rows = 8};
  ck_assert(cs_writer_create(o->sc.path, &schema, &opt, &w, &err) == CS_OK);
  cs_batch *b;
  ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
  for (uint64_t i = 0; i < n; i++) {
    ck_assert(put_cell(b, 0, col->type, &cells[i], &err) == CS_OK);
    cs_batch_end_row(b);
  }
  ck_assert(cs_writer_write(w, b, &err) == CS_OK);
  cs_batch_free(b);
  ck_assert(cs_writer_commit(w, &err) == CS_OK);
  o->s = ut_open_ok(o->sc.path, CS_VERIFY_FULL, "small store");
}

static void expect_order(const cs_store *s, bool desc, cs_order_mode mode, uint64_t n, const uint64_t *want,
                         uint64_t n_want, const char *what) {
  uint64_t rows[64], m = n;
  for (uint64_t i = 0; i < n; i++) rows[i] = i;
  cs_order_key key = {0, desc};
  cs_err err = {0};
  ck_assert_msg(cs_order_rows(s, &key, 1, mode, rows, &m, CS_ORDER_NO_LIMIT, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(m == n_want, "%s: %" PRIu64 " rows, expected %" PRIu64, what, m, n_want);
  for (uint64_t i = 0; i < m; i++)
    ck_assert_msg(rows[i] == want[i], "%s (%s): position %" PRIu64 " is row %" PRIu64 ", expected %" PRIu64,
                  what, cs__order_last_path(), i, rows[i], want[i]);
}

/* NaN is NULL, -0.0 ties 0.0 (input order kept), infinities at the ends. */
START_TEST(test_order_floats_nan_is_null_and_negative_zero_ties_zero) {
  int prof = _i;
  profile_set(prof);
  const double v[] = {NAN, -0.0, 0.0, 0.0 /* NULL */, 1.0, -INFINITY, INFINITY, -1.0, 0.0, -0.0, -NAN};
  const bool null[] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  const cs_type types[] = {CS_TYPE_FLOAT64, CS_TYPE_FLOAT32};
  for (int ti = 0; ti < 2; ti++) {
    ut_cell cells[11];
    memset(cells, 0, sizeof cells);
    for (int i = 0; i < 11; i++) {
      if (null[i])
        ut_cell_set_null(&cells[i]);
      else
        ut_cell_set_float(&cells[i], types[ti], v[i]);
    }
    ocol col = {"f", types[ti], true, FL_FULL, 0, 0};
    ostore o;
    small_store(&o, &col, cells, 11);
    const uint64_t asc[] = {0, 3, 10, 5, 7, 1, 2, 8, 9, 4, 6};
    const uint64_t desc[] = {6, 4, 1, 2, 8, 9, 7, 5, 0, 3, 10};
    const uint64_t dist[] = {0, 5, 7, 1, 4, 6};
    const uint64_t dist_desc[] = {6, 4, 1, 7, 5, 0};
    expect_order(o.s, false, CS_ORDER_SORT, 11, asc, 11, "float ASC");
    expect_order(o.s, true, CS_ORDER_SORT, 11, desc, 11, "float DESC");
    expect_order(o.s, false, CS_ORDER_DISTINCT, 11, dist, 6, "float DISTINCT");
    expect_order(o.s, true, CS_ORDER_DISTINCT, 11, dist_desc, 6, "float DISTINCT DESC");
    ostore_free(&o);
  }
}
END_TEST

/* NULL before "", "a" before "a\0" before "ab"; DESC puts NULL last. */
START_TEST(test_order_text_empty_and_null_and_embedded_zero_bytes) {
  int prof = _i;
  profile_set(prof);
  const char *v[] = {"b", NULL, "", "a\0", "a", "", "ab", NULL, "a"};
  const uint64_t len[] = {1, 0, 0, 2, 1, 0, 2, 0, 1};
  const cs_type types[] = {CS_TYPE_TEXT, CS_TYPE_BLOB};
  for (int ti = 0; ti < 2; ti++) {
    ut_cell cells[9];
    memset(cells, 0, sizeof cells);
    for (int i = 0; i < 9; i++) {
      if (!v[i])
        ut_cell_set_null(&cells[i]);
      else
        ut_cell_set_bytes(&cells[i], v[i], len[i]);
    }
    ocol col = {"t", types[ti], true, FL_FULL, 0, 0};
    ostore o;
    small_store(&o, &col, cells, 9);
    const uint64_t asc[] = {1, 7, 2, 5, 4, 8, 3, 6, 0};
    const uint64_t desc[] = {0, 6, 3, 4, 8, 2, 5, 1, 7};
    const uint64_t dist[] = {1, 2, 4, 3, 6, 0};
    expect_order(o.s, false, CS_ORDER_SORT, 9, asc, 9, "text ASC");
    expect_order(o.s, true, CS_ORDER_SORT, 9, desc, 9, "text DESC");
    expect_order(o.s, false, CS_ORDER_DISTINCT, 9, dist, 6, "text DISTINCT");
    for (int i = 0; i < 9; i++) free(cells[i].bytes);
    ostore_free(&o);
  }
}
END_TEST

/* An INT64 key holding INT64_MIN, INT64_MAX and NULL needs 65 bits. */
START_TEST(test_order_int64_full_range_with_nulls) {
  int prof = _i;
  profile_set(prof);
  const int64_t v[] = {INT64_MAX, 0, INT64_MIN, 0, 0, INT64_MIN, -1};
  const bool null[] = {0, 1, 0, 0, 1, 0, 0};
  ut_cell cells[7];
  memset(cells, 0, sizeof cells);
  for (int i = 0; i < 7; i++) {
    if (null[i])
      ut_cell_set_null(&cells[i]);
    else
      ut_cell_set_int(&cells[i], v[i]);
  }
  ocol col = {"x", CS_TYPE_INT64, true, FL_FULL, 0, 0};
  ostore o;
  small_store(&o, &col, cells, 7);
  const uint64_t asc[] = {1, 4, 2, 5, 6, 3, 0};
  const uint64_t desc[] = {0, 3, 6, 2, 5, 1, 4};
  const uint64_t dist[] = {1, 2, 6, 3, 0};
  expect_order(o.s, false, CS_ORDER_SORT, 7, asc, 7, "int64 ASC");
  expect_order(o.s, true, CS_ORDER_SORT, 7, desc, 7, "int64 DESC");
  expect_order(o.s, false, CS_ORDER_DISTINCT, 7, dist, 5, "int64 DISTINCT");
  ostore_free(&o);
}
END_TEST

/* No keys, no rows, one row, limit 0, bad arguments. */
START_TEST(test_order_edges_and_bad_arguments) {
  ostore o;
  ostore_make(&o, mixed_cols, N_MIXED, 50, 0, 100, 5);
  uint64_t rows[50], m;
  for (int i = 0; i < 50; i++) rows[i] = (uint64_t)(49 - i);
  cs_order_key key = {2, false};
  cs_err err = {0};
  m = 50;
  ck_assert(cs_order_rows(o.s, NULL, 0, CS_ORDER_SORT, rows, &m, 10, &err) == CS_OK);
  ck_assert_uint_eq(m, 10);
  ck_assert_uint_eq(rows[0], 49);
  m = 50;
  ck_assert(cs_order_rows(o.s, NULL, 0, CS_ORDER_GROUP, rows, &m, 3, &err) == CS_OK);
  ck_assert_uint_eq(m, 50);
  m = 50;
  ck_assert(cs_order_rows(o.s, NULL, 0, CS_ORDER_DISTINCT, rows, &m, CS_ORDER_NO_LIMIT, &err) == CS_OK);
  ck_assert_uint_eq(m, 1);
  ck_assert_uint_eq(rows[0], 49);
  m = 0;
  ck_assert(cs_order_rows(o.s, &key, 1, CS_ORDER_SORT, rows, &m, 5, &err) == CS_OK);
  ck_assert_uint_eq(m, 0);
  m = 50;
  ck_assert(cs_order_rows(o.s, &key, 1, CS_ORDER_DISTINCT, rows, &m, 0, &err) == CS_OK);
  ck_assert_uint_eq(m, 0);
  m = 1;
  ck_assert(cs_order_rows(o.s, &key, 1, CS_ORDER_GROUP, rows, &m, 1, &err) == CS_OK);
  ck_assert_uint_eq(m, 1);
  cs_order_key bad = {N_MIXED, false};
  m = 50;
  ck_assert(cs_order_rows(o.s, &bad, 1, CS_ORDER_SORT, rows, &m, 5, &err) == CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "colstore: order key 0: column") == err.msg, "%s", err.msg);
  ck_assert_uint_eq(m, 50);
  m = (uint64_t)UINT32_MAX + 1;
  ck_assert(cs_order_rows(o.s, &key, 1, CS_ORDER_SORT, rows, &m, 5, &err) == CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "colstore: cannot order") == err.msg, "%s", err.msg);
  m = 50;
  ck_assert(cs_order_rows(o.s, &key, 1, (cs_order_mode)7, rows, &m, 5, &err) == CS_EINVAL);
  ostore_free(&o);
}
END_TEST

/* Zone maps that lie (narrower than the values) change nothing: the kernel
** finds a value outside them and redoes the call with exact bounds. */
START_TEST(test_order_wrong_zone_maps_are_caught) {
  ocol cols[] = {{"k", CS_TYPE_INT32, true, FL_RANGE, -500, 5000},
                 {"f", CS_TYPE_FLOAT64, true, FL_FULL, 0, 0}};
  ostore o;
  ostore_make(&o, cols, 2, 3000, 64, 50, 77);
  cs_store_close(o.s);
  ut_layout l;
  ut_layout_read(o.sc.path, &l);
  for (uint64_t rec = 0; rec < l.n_records; rec++)
    for (uint32_t col = 0; col < 2; col++) {
      cs_disk_chunk dc = *ut_layout_chunk(&l, rec, col);
      cs_stat lo, hi;
      if (col == 0)
        lo.i = 10, hi.i = 12;
      else
        lo.f = 0.25, hi.f = 0.5;
      dc.min_bits = lo.bits, dc.max_bits = hi.bits;
      dc.flags |= CS_CHUNK_HAS_MINMAX;
      ut_layout_set_chunk(o.sc.path, &l, rec, col, &dc);
    }
  ut_layout_free(&l);
  o.s = ut_open_ok(o.sc.path, CS_VERIFY_HEADER, "lying zone maps");
  uint64_t rows[3000];
  for (int i = 0; i < 3000; i++) rows[i] = (uint64_t)i;
  for (uint32_t col = 0; col < 2; col++)
    for (int desc = 0; desc < 2; desc++) {
      cs_order_key key = {col, desc != 0};
      char ctx[64];
      snprintf(ctx, sizeof ctx, "lying zone maps, column %u %s", col, desc ? "DESC" : "ASC");
      check_all(o.s, &key, 1, rows, 3000, ctx);
    }
  cs_order_key key = {0, false};
  uint64_t m = 3000;
  ck_assert(cs_order_rows(o.s, &key, 1, CS_ORDER_SORT, rows, &m, CS_ORDER_NO_LIMIT, NULL) == CS_OK);
  ck_assert_msg(strstr(cs__order_last_path(), "+redo") != NULL, "path %s", cs__order_last_path());
  ostore_free(&o);
}
END_TEST

/* A large store: the shapes of the benchmark at 1M rows, shuffled too. */
START_TEST(test_order_large_matches_reference) {
  const ocol cols[] = {{"a", CS_TYPE_FLOAT64, true, FL_FULL, 0, 0},
                       {"b", CS_TYPE_INT64, false, FL_RANGE, 0, 999},
                       {"t", CS_TYPE_TEXT, true, FL_LOW, 0, 0},
                       {"d", CS_TYPE_INT32, true, FL_RANGE, -70000, 70000}};
  const uint64_t N = 1000000, seed = 0xB16;
  ostore o;
  ostore_make(&o, cols, 4, N, 0, 10, seed);
  uint64_t *rows = malloc((N + 100) * 8);
  ck_assert_ptr_nonnull(rows);
  ut_rng rng = ut_rng_seed(seed);
  const cs_order_key keysets[][2] = {
      {{0, false}},           {{0, true}}, {{1, false}}, {{2, true}}, {{3, false}}, {{1, true}, {0, false}},
      {{2, false}, {1, true}}};
  const uint32_t nks[] = {1, 1, 1, 1, 1, 2, 2};
  for (int in = 0; in < 3; in += 2) { /* ascending, shuffled */
    uint64_t n = make_input(in, N, &rng, rows);
    for (size_t ks = 0; ks < sizeof nks / sizeof nks[0]; ks++) {
      ref r;
      ref_build(&r, o.s, keysets[ks], nks[ks], rows, n);
      char ctx[160];
      snprintf(ctx, sizeof ctx, "seed %" PRIu64 ", %s, %" PRIu64 " rows, keyset %zu", seed, in_names[in], n,
               ks);
      const uint64_t sort_limits[] = {CS_ORDER_NO_LIMIT, 10, 100010},
                     group_limits[] = {CS_ORDER_NO_LIMIT, 500};
      for (int l = 0; l < 3; l++) check_one(&r, CS_ORDER_SORT, sort_limits[l], ctx);
      for (int l = 0; l < 2; l++) check_one(&r, CS_ORDER_GROUP, group_limits[l], ctx);
      for (int l = 0; l < 2; l++) check_one(&r, CS_ORDER_DISTINCT, group_limits[l], ctx);
      ref_free(&r);
    }
  }
  free(rows);
  ostore_free(&o);
}
END_TEST

/* More distinct TEXT values than the dictionary takes, with the defaults. */
START_TEST(test_order_text_past_dictionary_cap) {
  const ocol cols[] = {{"tf", CS_TYPE_TEXT, true, FL_FULL, 0, 0},
                       {"bp", CS_TYPE_BLOB, true, FL_PREFIX, 0, 0}};
  const uint64_t N = 150000, seed = 0x7E47;
  ostore o;
  ostore_make(&o, cols, 2, N, 0, 30, seed);
  uint64_t *rows = malloc((N + 100) * 8);
  ck_assert_ptr_nonnull(rows);
  ut_rng rng = ut_rng_seed(seed);
  uint64_t n = make_input(IN_SHUFFLED, N, &rng, rows);
  const cs_order_key k1[] = {{0, false}}, k2[] = {{0, true}}, k3[] = {{1, false}, {0, true}};
  check_all(o.s, k1, 1, rows, n, "text past the dictionary cap, ASC");
  check_all(o.s, k2, 1, rows, n, "text past the dictionary cap, DESC");
  n = make_input(IN_ALL, N, &rng, rows); /* ~110,000 distinct values */
  check_all(o.s, k2, 1, rows, n, "text past the dictionary cap, all rows, DESC");
  uint64_t m = n;
  ck_assert(cs_order_rows(o.s, k1, 1, CS_ORDER_SORT, rows, &m, CS_ORDER_NO_LIMIT, NULL) == CS_OK);
  ck_assert_msg(strstr(cs__order_last_path(), "wide") != NULL, "path %s", cs__order_last_path());
  n = make_input(IN_ALL, N, &rng, rows);
  check_all(o.s, k3, 2, rows, n, "prefix blob then text DESC");
  free(rows);
  ostore_free(&o);
}
END_TEST

/* Every path is reached by some profile and shape. */
START_TEST(test_order_every_path_is_reached) {
  ostore o;
  ostore_make(&o, mixed_cols, N_MIXED, 2000, 0, 100, 99);
  uint64_t rows[2000];
  const struct {
    int prof;
    uint32_t col;
    cs_order_mode mode;
    uint64_t limit;
    const char *path;
  } cases[] = {
      {PROF_DEFAULT, 2, CS_ORDER_SORT, 10, "topk"},
      {PROF_DEFAULT, 2, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, "counting"},
      {PROF_DEFAULT, 2, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, "counting"},
      {PROF_DEFAULT, 8, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, "radix"},
      {PROF_DEFAULT, 9, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, "hash"},
      {PROF_DEFAULT, 9, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, "hash"},
      {PROF_DEFAULT, 8, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, "hash"},
      {PROF_SMALL_CAPS, 8, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, "radix"},
      {PROF_DEFAULT, 12, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, "counting+dict"},
      {PROF_SORT_ONLY, 12, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, "segments+wide"},
      {PROF_DEFAULT, 19, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, "segments"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    profile_set(cases[i].prof);
    for (int r = 0; r < 2000; r++) rows[r] = (uint64_t)r;
    uint64_t m = 2000;
    cs_order_key key = {cases[i].col, false};
    ck_assert(cs_order_rows(o.s, &key, 1, cases[i].mode, rows, &m, cases[i].limit, NULL) == CS_OK);
    ck_assert_msg(strcmp(cs__order_last_path(), cases[i].path) == 0, "case %zu: path %s, expected %s", i,
                  cs__order_last_path(), cases[i].path);
  }
  ostore_free(&o);
}
END_TEST

/* cs_order_range over sub-ranges gives exactly cs_order_rows over the same
** rows written out, for every column, both directions, limits that take
** the top-k path (written positions: only the limit) and ones that do not,
** and every mode; multi-record stores, so zone maps span several records. */
START_TEST(test_order_range_matches_rows) {
  uint64_t seed = 0x7A9E;
  ostore o;
  ostore_make(&o, mixed_cols, N_MIXED, 3000, 0, 120, seed);
  uint64_t *want = malloc(3000 * 8), *got = malloc(3000 * 8);
  ck_assert(want && got);
  ut_rng rng = ut_rng_seed(seed);
  const uint64_t limits[] = {1, 7, 50, 400, CS_ORDER_NO_LIMIT};
  for (int trial = 0; trial < 40; trial++) {
    uint64_t first = ut_rng_below(&rng, 2500), n = 1 + ut_rng_below(&rng, 3000 - first);
    cs_order_key keys[2] = {{(uint32_t)ut_rng_below(&rng, N_MIXED), ut_rng_below(&rng, 2) != 0},
                            {(uint32_t)ut_rng_below(&rng, N_MIXED), ut_rng_below(&rng, 2) != 0}};
    uint32_t nk = 1 + (uint32_t)ut_rng_below(&rng, 2);
    for (int mode = 0; mode < 3; mode++)
      for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        uint64_t nw = n, ng = 0;
        for (uint64_t j = 0; j < n; j++) want[j] = first + j;
        memset(got, 0xAB, 3000 * 8);
        ck_assert(cs_order_rows(o.s, keys, nk, (cs_order_mode)mode, want, &nw, limits[l], NULL) == CS_OK);
        ck_assert(cs_order_range(o.s, keys, nk, (cs_order_mode)mode, first, n, got, &ng, limits[l], NULL) ==
                  CS_OK);
        const char *path = cs__order_last_path();
        if (ng != nw || memcmp(got, want, nw * 8) != 0)
          ck_abort_msg("seed %" PRIu64 " trial %d: rows [%" PRIu64 ", +%" PRIu64
                       "), keys %s%s %s, mode %d, limit %" PRIu64 ": %" PRIu64
                       " rows (path %s), cs_order_rows %" PRIu64,
                       seed, trial, first, n, mixed_cols[keys[0].col].name, keys[0].desc ? " DESC" : "",
                       nk > 1 ? mixed_cols[keys[1].col].name : "", mode, limits[l], ng, path, nw);
        /* the top-k path writes the limit rows and nothing past them */
        if (strcmp(path, "topk+range") == 0 && ng < n && got[ng] != 0xABABABABABABABABull)
          ck_abort_msg("trial %d: top-k over a range wrote past its %" PRIu64 " rows", trial, ng);
      }
  }
  /* the path is taken where it applies: one fixed-width key, a small limit */
  cs_order_key key = {2, true};
  uint64_t ng = 0;
  ck_assert(cs_order_range(o.s, &key, 1, CS_ORDER_SORT, 10, 2900, got, &ng, 10, NULL) == CS_OK);
  ck_assert_str_eq(cs__order_last_path(), "topk+range");
  ck_assert_uint_eq(ng, 10);
  ck_assert(cs_order_range(o.s, &key, 1, CS_ORDER_DISTINCT, 10, 2900, got, &ng, CS_ORDER_NO_LIMIT, NULL) ==
            CS_OK);
  ck_assert_str_eq(cs__order_last_path(), "counting+range");
  free(want);
  free(got);
  ostore_free(&o);
}
END_TEST

/* The range top-k on the thread team (team_min lowered to 2^16 rows; the
** threads policy splits from 262,144 rows): 1, 2 and 4 threads give
** exactly the one-pass answer over written positions, ties (a key of few
** values) included. */
START_TEST(test_order_range_topk_threads_match) {
  static const ocol cols[] = {{"f64", CS_TYPE_FLOAT64, true, FL_FULL, 0, 0},
                              {"few", CS_TYPE_INT32, true, FL_RANGE, 0, 3}};
  uint64_t N = 600000, seed = 0x70B;
  cs__order_tuning tuning;
  cs__order_tuning_default(&tuning);
  tuning.team_min = 1u << 16;
  cs__order_tuning_set(&tuning);
  ostore o;
  ostore_make(&o, cols, 2, N, 65536, 50, seed);
  uint64_t *want = malloc(N * 8), *got = malloc(N * 8);
  ck_assert(want && got);
  cs_kernel_config saved;
  cs_kernel_config_get(&saved);
  const uint64_t limits[] = {10, 5000};
  for (uint32_t col = 0; col < 2; col++)
    for (int desc = 0; desc < 2; desc++)
      for (size_t l = 0; l < 2; l++) {
        cs_order_key key = {col, desc != 0};
        uint64_t nw = N - 3;
        for (uint64_t j = 0; j < nw; j++) want[j] = 3 + j;
        ck_assert(cs_order_rows(o.s, &key, 1, CS_ORDER_SORT, want, &nw, limits[l], NULL) == CS_OK);
        for (int threads = 1; threads <= 4; threads *= 2) {
          cs_kernel_config_set(&(cs_kernel_config){.threads = threads, .prefetch = -1});
          uint64_t ng = 0, runs0, runs1, helped, alone;
          cs__team_stats(&runs0, &helped, &alone);
          ck_assert(cs_order_range(o.s, &key, 1, CS_ORDER_SORT, 3, N - 3, got, &ng, limits[l], NULL) ==
                    CS_OK);
          cs__team_stats(&runs1, &helped, &alone);
          ck_assert_str_eq(cs__order_last_path(), "topk+range");
          if (threads > 1)
            ck_assert_msg(runs1 > runs0, "%d threads: the top-k did not run on the team", threads);
          if (ng != nw || memcmp(got, want, nw * 8) != 0)
            ck_abort_msg("seed %" PRIu64 ": key %s%s, limit %" PRIu64
                         ", %d threads: differs from cs_order_rows",
                         seed, cols[col].name, desc ? " DESC" : "", limits[l], threads);
        }
      }
  cs_kernel_config_set(&saved);
  free(want);
  free(got);
  ostore_free(&o);
}
END_TEST

/* The counting sort on the thread team (team_min lowered to 2^16 rows):
** GROUP and SORT over positions in a shuffled order with repeats, one key
** and two keys in one code, with and without a limit, give with 2 and 4
** threads exactly the one-thread answer (stability included: each group's
** rows in input order). */
START_TEST(test_order_counting_threads_match) {
  static const ocol cols[] = {{"few", CS_TYPE_INT32, true, FL_RANGE, 0, 3},
                              {"k", CS_TYPE_INT16, true, FL_RANGE, 0, 999}};
  uint64_t N = 400000, seed = 0xC0C;
  cs__order_tuning tuning;
  cs__order_tuning_default(&tuning);
  tuning.team_min = 1u << 16;
  cs__order_tuning_set(&tuning);
  ostore o;
  ostore_make(&o, cols, 2, N, 65536, 50, seed);
  uint64_t n_in = N + N / 4, *in = malloc(n_in * 8), *want = malloc(n_in * 8), *got = malloc(n_in * 8);
  ck_assert(in && want && got);
  ut_rng rng = ut_rng_seed(seed);
  for (uint64_t j = 0; j < n_in; j++) in[j] = j < N ? j : ut_rng_below(&rng, N); /* every row, then repeats */
  for (uint64_t j = n_in - 1; j > 0; j--) {
    uint64_t r = ut_rng_below(&rng, j + 1), t = in[j];
    in[j] = in[r], in[r] = t;
  }
  cs_kernel_config saved;
  cs_kernel_config_get(&saved);
  const cs_order_key one[] = {{1, false}}, two[] = {{0, true}, {1, false}};
  const struct {
    const cs_order_key *keys;
    uint32_t n_keys;
    cs_order_mode mode;
    uint64_t limit;
  } cases[] = {{one, 1, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT},
               {two, 2, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT},
               {one, 1, CS_ORDER_GROUP, 37},
               {one, 1, CS_ORDER_SORT, CS_ORDER_NO_LIMIT},
               {two, 2, CS_ORDER_SORT, 300000}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    uint64_t nw = n_in, ng;
    memcpy(want, in, n_in * 8);
    cs_kernel_config_set(&(cs_kernel_config){.threads = 1, .prefetch = -1});
    ck_assert(cs_order_rows(o.s, cases[k].keys, cases[k].n_keys, cases[k].mode, want, &nw, cases[k].limit,
                            NULL) == CS_OK);
    ck_assert_str_eq(cs__order_last_path(), "counting");
    for (int threads = 2; threads <= 4; threads *= 2) {
      cs_kernel_config_set(&(cs_kernel_config){.threads = threads, .prefetch = -1});
      uint64_t runs0, runs1, helped, alone;
      cs__team_stats(&runs0, &helped, &alone);
      memcpy(got, in, n_in * 8);
      ng = n_in;
      ck_assert(cs_order_rows(o.s, cases[k].keys, cases[k].n_keys, cases[k].mode, got, &ng, cases[k].limit,
                              NULL) == CS_OK);
      cs__team_stats(&runs1, &helped, &alone);
      ck_assert_str_eq(cs__order_last_path(), "counting");
      ck_assert_msg(runs1 > runs0, "case %zu, %d threads: the counting sort did not run on the team", k,
                    threads);
      if (ng != nw || memcmp(got, want, nw * 8) != 0)
        ck_abort_msg("seed %" PRIu64 ": case %zu, %d threads: %" PRIu64 " rows, one thread %" PRIu64
                     "; differs",
                     seed, k, threads, ng, nw);
    }
  }
  cs_kernel_config_set(&saved);
  cs__order_tuning_default(&tuning);
  cs__order_tuning_set(&tuning);
  free(in), free(want), free(got);
  ostore_free(&o);
}
END_TEST

/* Deletes about permille/1000 of the store's rows, some whole runs too:
** committed through the writer (commit true, the store reopened), or as a
** view of pending deletions (cs_store_with_deletions), which is what o->s
** then is (the base closed with it). */
static void ostore_delete(ostore *o, unsigned permille, uint64_t seed, bool commit) {
  uint64_t n = cs_store_rows(o->s), k = 0;
  uint64_t *rows = malloc((n ? n : 1) * 8);
  ck_assert(rows);
  ut_rng rng = ut_rng_seed(seed);
  uint64_t run0 = ut_rng_below(&rng, n), run1 = run0 + ut_rng_below(&rng, 3000);
  for (uint64_t r = 0; r < n; r++)
    if (ut_rng_below(&rng, 1000) < permille || (r >= run0 && r < run1)) rows[k++] = r;
  cs_err err = {0};
  cs_store *next = NULL;
  if (commit) {
    cs_writer *w;
    ck_assert_msg(cs_writer_append(o->sc.path, NULL, &w, &err) == CS_OK, "%s", err.msg);
    ck_assert_msg(cs_writer_delete(w, rows, k, NULL, &err) == CS_OK, "%s", err.msg);
    ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
    next = ut_open_ok(o->sc.path, CS_VERIFY_FULL, "order store with deletions");
  } else {
    ck_assert_msg(cs_store_with_deletions(o->s, rows, k, &next, &err) == CS_OK, "%s", err.msg);
  }
  cs_store_close(o->s);
  o->s = next;
  ck_assert_uint_eq(cs_store_live_rows(o->s), n - k);
  free(rows);
}

/* Deleted positions are never delivered, by any path of cs_order_range
** (the streaming top-k and DISTINCT skip them chunk by chunk, on 1, 2 and
** 4 threads; the others filter): exactly cs_order_rows over the live
** positions, committed deletions and a pending view alike. */
START_TEST(test_order_range_skips_deleted_positions) {
  uint64_t seed = 0xDE1 + (uint64_t)_i;
  cs__order_tuning tuning;
  cs__order_tuning_default(&tuning);
  tuning.team_min = 1u << 16;
  cs__order_tuning_set(&tuning);
  cs_kernel_config saved;
  cs_kernel_config_get(&saved);
  static const ocol cols[] = {{"f64", CS_TYPE_FLOAT64, true, FL_FULL, 0, 0},
                              {"few", CS_TYPE_INT32, true, FL_RANGE, 0, 3},
                              {"i16", CS_TYPE_INT16, true, FL_FULL, 0, 0}};
  uint64_t N = 300000;
  ostore o;
  ostore_make(&o, cols, 3, N, 65536, 50, seed);
  ostore_delete(&o, _i == 0 ? 100 : 900, seed + 1, _i != 1);
  uint64_t *want = malloc(N * 8), *got = malloc(N * 8);
  ck_assert(want && got);
  ut_rng rng = ut_rng_seed(seed);
  const uint64_t limits[] = {1, 10, 5000, CS_ORDER_NO_LIMIT};
  for (int trial = 0; trial < 12; trial++) {
    uint64_t first = trial < 4 ? 0 : ut_rng_below(&rng, N / 2),
             n = trial < 4 ? N : 1 + ut_rng_below(&rng, N - first);
    cs_order_key key = {(uint32_t)ut_rng_below(&rng, 3), ut_rng_below(&rng, 2) != 0};
    for (int mode = 0; mode < 3; mode++)
      for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++)
        for (int threads = 1; threads <= 4; threads *= 2) {
          cs_kernel_config_set(&(cs_kernel_config){.threads = threads, .prefetch = -1});
          uint64_t nw = 0, ng = 0;
          for (uint64_t j = 0; j < n; j++)
            if (!cs_store_row_deleted(o.s, first + j)) want[nw++] = first + j;
          ck_assert(cs_order_rows(o.s, &key, 1, (cs_order_mode)mode, want, &nw, limits[l], NULL) == CS_OK);
          ck_assert(cs_order_range(o.s, &key, 1, (cs_order_mode)mode, first, n, got, &ng, limits[l], NULL) ==
                    CS_OK);
          if (ng != nw || memcmp(got, want, nw * 8) != 0)
            ck_abort_msg("seed %" PRIu64 " trial %d: rows [%" PRIu64 ", +%" PRIu64
                         "), key %s%s, mode %d, limit %" PRIu64 ", %d threads: %" PRIu64
                         " rows (path %s), cs_order_rows over the live rows %" PRIu64,
                         seed, trial, first, n, cols[key.col].name, key.desc ? " DESC" : "", mode, limits[l],
                         threads, ng, cs__order_last_path(), nw);
        }
  }
  cs_kernel_config_set(&saved);
  cs__order_tuning_default(&tuning);
  cs__order_tuning_set(&tuning);
  free(want);
  free(got);
  ostore_free(&o);
}
END_TEST

/* ------------------------------------------- the pruned top-k of a range */

/* A store whose records are drawn to make zone maps overlap, interleave and
** tie: records of `rec` rows, each column of each record in its own style
** (a few values, an ascending or descending run, one constant, all NULL,
** one value and NULLs, random; floats sprinkle NaNs, which read as NULL
** but leave the zone map and null count alone). */
static const ocol prune_cols[] = {{"k32", CS_TYPE_INT32, true, FL_RANGE, -40, 40},
                                  {"f64", CS_TYPE_FLOAT64, true, FL_RANGE, -40, 40},
                                  {"u8", CS_TYPE_UINT8, false, FL_RANGE, 0, 30},
                                  {"i64", CS_TYPE_INT64, true, FL_RANGE, -3, 3},
                                  {"f32", CS_TYPE_FLOAT32, true, FL_RANGE, -40, 40}};
#define N_PRUNE (sizeof prune_cols / sizeof prune_cols[0])

static void prune_cell(ut_rng *g, const ocol *c, int style, int64_t v0, uint64_t i, uint64_t rec,
                       ut_cell *cell) {
  int64_t span = c->hi - c->lo, v;
  bool null = false;
  switch (style) {
    case 0: v = v0 + (int64_t)ut_rng_below(g, 3); break;                      /* a few values */
    case 1: v = c->lo + (int64_t)((uint64_t)span * i / rec); break;           /* ascending run */
    case 2: v = c->hi - (int64_t)((uint64_t)span * i / rec); break;           /* descending run */
    case 3: v = v0; break;                                                    /* constant */
    case 4: v = 0, null = c->nullable; break;                                 /* all NULL */
    case 5: v = v0, null = c->nullable && ut_rng_below(g, 4) == 0; break;     /* one value and NULLs */
    default: v = c->lo + (int64_t)ut_rng_below(g, (uint64_t)span + 1); break; /* random */
  }
  if (v > c->hi) v = c->hi;
  if (null) {
    free(cell->bytes);
    memset(cell, 0, sizeof *cell);
    cell->null = true;
  } else if (cs_type_is_float(c->type)) {
    double x = style == 6 && ut_rng_below(g, 50) == 0 ? NAN : (double)v / 4;
    ut_cell_set_float(cell, c->type, x);
  } else {
    ut_cell_set_int(cell, v);
  }
}

static void prune_store(ostore *o, uint64_t n_recs, uint64_t rec, uint64_t seed) {
  o->sc = ut_scratch_new();
  cs_column cc[N_PRUNE];
  for (uint32_t c = 0; c < N_PRUNE; c++)
    cc[c] = (cs_column){prune_cols[c].name, prune_cols[c].type, prune_cols[c].nullable};
  cs_schema schema = {N_PRUNE, cc};
  cs_writer_options opt = {.record_rows = rec};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(o->sc.path, &schema, &opt, &w, &err) == CS_OK, "create: %s", err.msg);
  ut_rng g = ut_rng_seed(seed);
  ut_cell cells[N_PRUNE];
  memset(cells, 0, sizeof cells);
  cs_batch *b;
  ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
  for (uint64_t r = 0; r < n_recs; r++) {
    int style[N_PRUNE];
    int64_t v0[N_PRUNE];
    for (uint32_t c = 0; c < N_PRUNE; c++) {
      style[c] = (int)ut_rng_below(&g, 8);
      v0[c] =
          prune_cols[c].lo + (int64_t)ut_rng_below(&g, (uint64_t)(prune_cols[c].hi - prune_cols[c].lo) + 1);
    }
    cs_batch_clear(b);
    for (uint64_t i = 0; i < rec; i++) {
      for (uint32_t c = 0; c < N_PRUNE; c++) {
        prune_cell(&g, &prune_cols[c], style[c], v0[c], i, rec, &cells[c]);
        if (put_cell(b, c, prune_cols[c].type, &cells[c], &err) != CS_OK) ck_abort_msg("put: %s", err.msg);
      }
      cs_batch_end_row(b);
    }
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "write: %s", err.msg);
  }
  cs_batch_free(b);
  for (uint32_t c = 0; c < N_PRUNE; c++) free(cells[c].bytes);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "commit: %s", err.msg);
  o->s = ut_open_ok(o->sc.path, CS_VERIFY_FULL, "prune store");
}

/* The reference tests' setup: the thread team from 2^14 rows, the kernel
** configuration kept in saved, prune_store's store with deletions (del 0:
** none, 1: committed, 2: pending).  Undone by prune_teardown. */
static void prune_setup(ostore *o, uint64_t n_recs, uint64_t rec, uint64_t seed, int del,
                        cs_kernel_config *saved) {
  cs__order_tuning tuning;
  cs__order_tuning_default(&tuning);
  tuning.team_min = 1u << 14;
  cs__order_tuning_set(&tuning);
  cs_kernel_config_get(saved);
  prune_store(o, n_recs, rec, seed);
  if (del > 0) ostore_delete(o, 200, seed + 1, del == 1);
}

static void prune_teardown(ostore *o, const cs_kernel_config *saved) {
  cs_kernel_config_set(saved);
  cs__order_tuning_set(NULL);
  ostore_free(o);
}

/* A trial's range [*first, + *n) (the whole store in the first four) and
** keys (one or two, returned). */
static uint32_t prune_trial(ut_rng *rng, uint64_t N, int trial, uint64_t *first, uint64_t *n,
                            cs_order_key keys[2]) {
  *first = trial < 4 ? 0 : ut_rng_below(rng, N / 2);
  *n = trial < 4 ? N : N / 8 + ut_rng_below(rng, N - *first - N / 8);
  for (int i = 0; i < 2; i++) {
    keys[i].col = (uint32_t)ut_rng_below(rng, N_PRUNE);
    keys[i].desc = ut_rng_below(rng, 2) != 0;
  }
  return 1 + (uint32_t)ut_rng_below(rng, 2);
}

/* Fails unless got[0, ng) are the reference's first min(nl, limit) rows. */
static void prune_check(const uint64_t *got, uint64_t ng, const uint64_t *live, uint64_t nl, const ref *r,
                        uint64_t limit, const cs_order_key *keys, uint32_t nk, const char *what) {
  uint64_t want = nl < limit ? nl : limit;
  bool bad = ng != want;
  for (uint64_t t = 0; t < want && !bad; t++) bad = got[t] != live[r->sorted[t]];
  if (bad)
    ck_abort_msg("%s, keys %s%s %s%s, limit %" PRIu64 " (path %s): differs from the reference", what,
                 prune_cols[keys[0].col].name, keys[0].desc ? " DESC" : "",
                 nk > 1 ? prune_cols[keys[1].col].name : "", nk > 1 && keys[1].desc ? " DESC" : "", limit,
                 cs__order_last_path());
}

/* cs_order_range's pruned top-k against the naive reference (qsort of the
** live rows by SQLite's rules, ties by position): one and two keys (the
** first prunes; two keys of one code), ASC and DESC, limits from 1 to
** n / 32, sub-ranges that start and end inside records, on 1, 2 and 4
** threads (team_min lowered), committed and pending deletions (_i 1, 2). */
START_TEST(test_order_range_pruned_topk_matches_reference) {
  uint64_t seed = 0x26A + (uint64_t)_i, rec = 8192, n_recs = 40,
           N = rec * n_recs; /* threads from 262,144 rows */
  cs_kernel_config saved;
  ostore o;
  prune_setup(&o, n_recs, rec, seed, _i, &saved);
  uint64_t *live = malloc(N * 8), *got = malloc(N * 8);
  ck_assert(live && got);
  ut_rng rng = ut_rng_seed(seed);
  for (int trial = 0; trial < 12; trial++) {
    uint64_t first, n;
    cs_order_key keys[2];
    uint32_t nk = prune_trial(&rng, N, trial, &first, &n, keys);
    uint64_t nl = 0;
    for (uint64_t j = 0; j < n; j++)
      if (!cs_store_row_deleted(o.s, first + j)) live[nl++] = first + j;
    ref r;
    ref_build(&r, o.s, keys, nk, live, nl);
    const uint64_t limits[] = {1, 3, 10, 100, n / 32};
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++)
      for (int threads = 1; threads <= 4; threads *= 2) {
        cs_kernel_config_set(&(cs_kernel_config){.threads = threads, .prefetch = -1});
        uint64_t ng = 0, runs0, runs1, helped, alone;
        cs__team_stats(&runs0, &helped, &alone);
        ck_assert(cs_order_range(o.s, keys, nk, CS_ORDER_SORT, first, n, got, &ng, limits[l], NULL) == CS_OK);
        cs__team_stats(&runs1, &helped, &alone);
        if (threads > 1 && trial < 4 && runs1 == runs0)
          ck_abort_msg("trial %d, %d threads: the pruned top-k did not run on the team", trial, threads);
        char what[160];
        snprintf(what, sizeof what, "seed %" PRIu64 " trial %d: rows [%" PRIu64 ", +%" PRIu64 "), %d threads",
                 seed, trial, first, n, threads);
        prune_check(got, ng, live, nl, &r, limits[l], keys, nk, what);
      }
    ref_free(&r);
  }
  prune_teardown(&o, &saved);
  free(live), free(got);
}
END_TEST

/* cs_order_select (the pruned top-k under predicates) against the
** reference over the rows cs_pred_eval selects: range, IN, IS NULL and NOT
** NULL predicates on the key and on other columns (one, two or none
** undecided by the zone maps), one and two keys ASC and DESC, limits from
** 1 to n / 32, sub-ranges, 1 and 2 threads, committed deletions (_i 1). */
START_TEST(test_order_select_pruned_topk_matches_reference) {
  uint64_t seed = 0x26B + (uint64_t)_i, rec = 4096, n_recs = 48, N = rec * n_recs;
  cs_kernel_config saved;
  ostore o;
  prune_setup(&o, n_recs, rec, seed, _i, &saved);
  uint64_t *live = malloc(N * 8), *got = malloc(N * 8);
  uint8_t *mask = malloc(N);
  ck_assert(live && got && mask);
  ut_rng rng = ut_rng_seed(seed);
  for (int trial = 0; trial < 16; trial++) {
    uint64_t first, n;
    cs_order_key keys[2];
    uint32_t nk = prune_trial(&rng, N, trial, &first, &n, keys);
    cs_value set[3];
    cs_pred preds[2];
    uint32_t np = 1 + (uint32_t)ut_rng_below(&rng, 2);
    for (uint32_t q = 0; q < np; q++) {
      uint32_t col = q == 0 && ut_rng_below(&rng, 2) ? keys[0].col : (uint32_t)ut_rng_below(&rng, N_PRUNE);
      int64_t v = (int64_t)ut_rng_below(&rng, 61) - 30;
      cs_pred *pr = &preds[q];
      memset(pr, 0, sizeof *pr);
      pr->col = col;
      pr->a = (cs_value){.kind = CS_VAL_INT, .i = v};
      pr->b = (cs_value){.kind = CS_VAL_INT, .i = v + (int64_t)ut_rng_below(&rng, 20)};
      switch (ut_rng_below(&rng, 6)) {
        case 0: pr->op = CS_CMP_LT; break;
        case 1: pr->op = CS_CMP_GE; break;
        case 2: pr->op = CS_CMP_BETWEEN; break;
        case 3:
          pr->op = CS_CMP_IN, pr->set = set, pr->n_set = 3;
          for (int m = 0; m < 3; m++) set[m] = (cs_value){.kind = CS_VAL_INT, .i = v + m * 3};
          break;
        case 4: pr->op = CS_CMP_NOTNULL; break;
        default: pr->op = CS_CMP_NE; break;
      }
    }
    cs_selector *sel;
    ck_assert(cs_selector_new(o.s, preds, np, &sel, NULL) == CS_OK);
    cs_pred_eval(o.s, preds, np, first, n, mask, NULL);
    uint64_t nl = 0;
    for (uint64_t j = 0; j < n; j++)
      if (mask[j] && !cs_store_row_deleted(o.s, first + j)) live[nl++] = first + j;
    ref r;
    ref_build(&r, o.s, keys, nk, live, nl);
    const uint64_t limits[] = {1, 3, 10, 100, n / 32};
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++)
      for (int threads = 1; threads <= 2; threads++) {
        cs_kernel_config_set(&(cs_kernel_config){.threads = threads, .prefetch = -1});
        uint64_t ng = 0;
        bool done = false;
        ck_assert(cs_order_select(sel, keys, nk, CS_ORDER_SORT, first, n, got, &ng, limits[l], &done, NULL) ==
                  CS_OK);
        if (!done) { /* the caller's way: the selection, then cs_order_rows */
          memcpy(got, live, nl * 8);
          ng = nl;
          ck_assert(cs_order_rows(o.s, keys, nk, CS_ORDER_SORT, got, &ng, limits[l], NULL) == CS_OK);
        }
        ck_assert_msg(done || limits[l] > n / 32 || (nk > 1 && nl < limits[l]),
                      "trial %d: limit %" PRIu64 " not taken (%u keys, %" PRIu64 " rows selected)", trial,
                      limits[l], nk, nl);
        char what[160];
        snprintf(what, sizeof what,
                 "seed %" PRIu64 " trial %d: rows [%" PRIu64 ", +%" PRIu64
                 "), %u preds (op %d on %s), %d threads",
                 seed, trial, first, n, np, (int)preds[0].op, prune_cols[preds[0].col].name, threads);
        prune_check(got, ng, live, nl, &r, limits[l], keys, nk, what);
      }
    ref_free(&r);
    cs_selector_free(sel);
  }
  prune_teardown(&o, &saved);
  free(live), free(got), free(mask);
}
END_TEST

/* Pruning reads few records where the zone maps allow: a sorted key (ASC
** and DESC) reads the record holding the answer and at most the next one
** whose bound ties it; a uniform key DESC reads a small share; so does a
** float key ASC (a record that may hold a NaN, read as NULL, is scanned for
** one the first time its min would rule it out, and the answer is kept on
** the snapshot), until a NaN is there: then its record is read and its row
** comes first; under a predicate, the records it rules out by their zone
** maps are not read. */
START_TEST(test_order_range_pruned_topk_skips_records) {
  uint64_t N = 64 * 4096, k = 10;
  ostore o;
  o.sc = ut_scratch_new();
  cs_column cc[3] = {{"s", CS_TYPE_INT64, false}, {"u", CS_TYPE_INT32, false}, {"f", CS_TYPE_FLOAT64, false}};
  cs_schema schema = {3, cc};
  cs_writer_options opt = {.record_rows = 4096};
  cs_writer *w;
  cs_err err = {0};
  ck_assert(cs_writer_create(o.sc.path, &schema, &opt, &w, &err) == CS_OK);
  cs_batch *b;
  ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
  ut_rng g = ut_rng_seed(0x5EC);
  for (uint64_t i = 0; i < N; i++) {
    ck_assert(cs_batch_put_i64(b, 0, (int64_t)(i / 3), &err) == CS_OK);
    ck_assert(cs_batch_put_i64(b, 1, (int64_t)ut_rng_below(&g, (uint64_t)1 << 30), &err) == CS_OK);
    ck_assert(cs_batch_put_f64(b, 2, (double)ut_rng_below(&g, 1000000) / 7, &err) == CS_OK);
    cs_batch_end_row(b);
  }
  ck_assert(cs_writer_write(w, b, &err) == CS_OK);
  ck_assert(cs_writer_commit(w, &err) == CS_OK);
  cs_batch_free(b);
  o.s = ut_open_ok(o.sc.path, CS_VERIFY_FULL, "skip store");
  uint64_t *rows = malloc(N * 8), visited, skipped;
  ck_assert_ptr_nonnull(rows);
  const struct {
    uint32_t col;
    bool desc;
    uint64_t most;
  } cases[] = {{0, false, 2}, {0, true, 2}, {1, true, 16}, {1, false, 16}, {2, false, 16}, {2, false, 16}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    cs_order_key key = {cases[c].col, cases[c].desc};
    uint64_t ng = 0;
    ck_assert(cs_order_range(o.s, &key, 1, CS_ORDER_SORT, 0, N, rows, &ng, k, NULL) == CS_OK);
    ck_assert_str_eq(cs__order_last_path(), "topk+range");
    cs__order_last_prune(&visited, &skipped);
    ck_assert_uint_eq(visited + skipped, 64);
    ck_assert_msg(visited <= cases[c].most,
                  "case %zu: %" PRIu64 " records read, at most %" PRIu64 " expected", c, visited,
                  cases[c].most);
    if (cases[c].col == 0) { /* the sorted key: its first or last k rows, ties (three a value) by position */
      uint64_t t = 0;
      for (uint64_t v = (N - 1) / 3 + 1; cases[c].desc && v-- > 0 && t < k;)
        for (uint64_t row = 3 * v; row < 3 * v + 3 && row < N && t < k; row++, t++)
          ck_assert_uint_eq(rows[t], row);
      for (; t < k; t++) ck_assert_uint_eq(rows[t], t);
    }
  }
  /* under s < 1000 (rows 0 .. 2999: the first records), f DESC: the zone
  ** maps of s rule out all but the first record or so */
  cs_pred lt = {.col = 0, .op = CS_CMP_LT, .a = {.kind = CS_VAL_INT, .i = 1000}};
  cs_selector *sel;
  ck_assert(cs_selector_new(o.s, &lt, 1, &sel, NULL) == CS_OK);
  cs_order_key fd = {2, true};
  uint64_t ng = 0;
  bool done = false;
  ck_assert(cs_order_select(sel, &fd, 1, CS_ORDER_SORT, 0, N, rows, &ng, k, &done, NULL) == CS_OK);
  ck_assert(done && ng == k);
  for (uint64_t t = 0; t < k; t++) ck_assert_uint_lt(rows[t], 3000);
  cs__order_last_prune(&visited, &skipped);
  ck_assert_msg(visited <= 1, "%" PRIu64 " records read under the predicate", visited);
  cs_selector_free(sel);
  ostore_free(&o);
  /* a NaN in record 40 (row 40 * 4096 + 7): first ASC, and its record read */
  o.sc = ut_scratch_new();
  ck_assert(cs_writer_create(o.sc.path, &schema, &opt, &w, &err) == CS_OK);
  ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
  for (uint64_t i = 0; i < N; i++) {
    ck_assert(cs_batch_put_i64(b, 0, (int64_t)(i / 3), &err) == CS_OK);
    ck_assert(cs_batch_put_i64(b, 1, 0, &err) == CS_OK);
    ck_assert(cs_batch_put_f64(b, 2, i == 40 * 4096 + 7 ? NAN : (double)ut_rng_below(&g, 1000000) / 7,
                               &err) == CS_OK);
    cs_batch_end_row(b);
  }
  ck_assert(cs_writer_write(w, b, &err) == CS_OK);
  ck_assert(cs_writer_commit(w, &err) == CS_OK);
  cs_batch_free(b);
  o.s = ut_open_ok(o.sc.path, CS_VERIFY_FULL, "nan store");
  for (int again = 0; again < 2; again++) {
    cs_order_key fa = {2, false};
    ck_assert(cs_order_range(o.s, &fa, 1, CS_ORDER_SORT, 0, N, rows, &ng, k, NULL) == CS_OK);
    ck_assert_uint_eq(ng, k);
    ck_assert_uint_eq(rows[0], 40 * 4096 + 7);
    cs__order_last_prune(&visited, &skipped);
    ck_assert_msg(visited <= 16, "%" PRIu64 " records read with one NaN", visited);
  }
  free(rows);
  ostore_free(&o);
}
END_TEST

/* Each allocation fails in turn: CS_ENOMEM with a message, the rows and
** the count untouched, nothing left allocated; then the same answer. */
START_TEST(test_order_allocation_failures_leave_rows_unchanged) {
  int prof = _i;
  profile_set(prof);
  ostore o;
  ostore_make(&o, mixed_cols, N_MIXED, 400, 0, 100, 31);
  const cs_order_key keysets[][2] = {{{2, false}},
                                     {{8, true}},
                                     {{12, false}},
                                     {{13, false}},
                                     {{9, false}, {19, true}},
                                     {{15, true}, {13, false}}};
  const uint32_t nks[] = {1, 1, 1, 1, 2, 2};
  const uint64_t limits[] = {CS_ORDER_NO_LIMIT, 5};
  uint64_t base[400], want[400], got[400];
  for (int i = 0; i < 400; i++) base[i] = (uint64_t)((i * 7) % 400);
  for (size_t ks = 0; ks < sizeof nks / sizeof nks[0]; ks++)
    for (int mode = 0; mode < 3; mode++)
      for (int l = 0; l < 2; l++) {
        uint64_t wm = 400;
        memcpy(want, base, sizeof base);
        ck_assert(cs_order_rows(o.s, keysets[ks], nks[ks], (cs_order_mode)mode, want, &wm, limits[l], NULL) ==
                  CS_OK);
        /* The clean run's allocations, then each one failing in turn. */
        memcpy(got, base, sizeof base);
        uint64_t m = 400;
        cs_mem_fail_after(-1, false);
        ck_assert(cs_order_rows(o.s, keysets[ks], nks[ks], (cs_order_mode)mode, got, &m, limits[l], NULL) ==
                  CS_OK);
        long n_allocs = cs_mem_count(), live = cs_mem_live();
        for (long k = 1; k <= n_allocs; k++)
          for (int sticky = 0; sticky < 2; sticky++) {
            memcpy(got, base, sizeof base);
            m = 400;
            cs_err err = {0};
            cs_mem_fail_after(k, sticky != 0);
            cs_rc rc =
                cs_order_rows(o.s, keysets[ks], nks[ks], (cs_order_mode)mode, got, &m, limits[l], &err);
            cs_mem_fail_after(-1, false);
            if (cs_mem_live() != live)
              ck_abort_msg("keyset %zu mode %d: allocation %ld of %ld failing leaks %ld blocks", ks, mode, k,
                           n_allocs, cs_mem_live() - live);
            if (rc == CS_OK) { /* an allocation the kernel can do without (none yet) */
              if (m != wm || memcmp(got, want, m * 8) != 0)
                ck_abort_msg("keyset %zu mode %d: allocation %ld failing changed the answer", ks, mode, k);
              continue;
            }
            if (rc != CS_ENOMEM || strncmp(err.msg, "colstore: ", 10) != 0)
              ck_abort_msg("keyset %zu mode %d: allocation %ld failing gave %s: %s", ks, mode, k,
                           cs_rc_name(rc), err.msg);
            if (m != 400 || memcmp(got, base, sizeof base) != 0)
              ck_abort_msg("keyset %zu mode %d: allocation %ld failing changed the rows", ks, mode, k);
          }
      }
  ostore_free(&o);
}
END_TEST

int main(void) {
  Suite *s = suite_create("order");
  TCase *tc = tcase_create("order");
  tcase_add_checked_fixture(tc, NULL, profile_reset);
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_order_single_key_matches_reference, 0, PROF_COUNT);
  tcase_add_loop_test(tc, test_order_multi_key_mixed_directions_match_reference, 0, PROF_COUNT);
  tcase_add_loop_test(tc, test_order_floats_nan_is_null_and_negative_zero_ties_zero, 0, PROF_COUNT);
  tcase_add_loop_test(tc, test_order_text_empty_and_null_and_embedded_zero_bytes, 0, PROF_COUNT);
  tcase_add_loop_test(tc, test_order_int64_full_range_with_nulls, 0, PROF_COUNT);
  tcase_add_test(tc, test_order_edges_and_bad_arguments);
  tcase_add_test(tc, test_order_wrong_zone_maps_are_caught);
  tcase_add_test(tc, test_order_every_path_is_reached);
  tcase_add_test(tc, test_order_range_matches_rows);
  tcase_add_loop_test(tc, test_order_allocation_failures_leave_rows_unchanged, 0, PROF_COUNT);
  suite_add_tcase(s, tc);
  TCase *tl = tcase_create("large");
  tcase_add_checked_fixture(tl, NULL, profile_reset);
  tcase_set_timeout(tl, 900);
  tcase_add_test(tl, test_order_large_matches_reference);
  tcase_add_test(tl, test_order_text_past_dictionary_cap);
  tcase_add_test(tl, test_order_range_topk_threads_match);
  tcase_add_test(tl, test_order_counting_threads_match);
  tcase_add_loop_test(tl, test_order_range_skips_deleted_positions, 0, 3);
  suite_add_tcase(s, tl);
  TCase *tp = tcase_create("prune");
  tcase_add_checked_fixture(tp, NULL, profile_reset);
  tcase_set_timeout(tp, 600);
  tcase_add_loop_test(tp, test_order_range_pruned_topk_matches_reference, 0, 3);
  tcase_add_test(tp, test_order_range_pruned_topk_skips_records);
  tcase_add_loop_test(tp, test_order_select_pruned_topk_matches_reference, 0, 2);
  suite_add_tcase(s, tp);
  return ut_run_suite(s);
}
