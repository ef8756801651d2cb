/*
** check_dataset.c - several store files read as one store (cs_dataset.c).
**
** A dataset's rows are its files' rows concatenated, so it is checked
** against a reference table holding exactly that concatenation: every cell
** through the public accessors (find_record across file boundaries), and
** every kernel (gather range/strided/sorted/rows/binned/mask, predicates)
** against the naive reference of unit_util, over irregular records (random
** write sizes, an empty file in the middle) and uniform records (the
** division path, which must still apply when every file holds whole
** records).  Predicates are also compared with the same predicates run on
** each file opened on its own.  Then the edges: schema mismatch naming the
** file, no files, verify naming the file, source expansion and freshness.
** Fixed seeds, printed in every failure.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_write_internal.h"
#include "unit_util.h"

/* ------------------------------------------------------------- datasets */

typedef struct ds {
  char *dir;
  char *paths[8];
  uint32_t n_files;
  ut_table *all;     /* the concatenation of every file's rows */
  uint64_t first[9]; /* first[i]: dataset row where file i starts */
  cs_store *s;
} ds;

static const cs_schema fixed_schema = {UT_FIXED_COLS, ut_fixed_cols};

/* Writes rows [first, first + n) of t to a new store at path, through
** writes of random 1..record_rows rows (irregular) or one write (uniform). */
static void write_file(const ut_table *t, const char *path, uint64_t first, uint64_t n, uint64_t record_rows,
                       bool irregular, ut_rng *rng) {
  cs_writer_options opt = {.record_rows = record_rows};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(path, &t->schema, &opt, &w, &err) == CS_OK, "create %s: %s", path, err.msg);
  uint64_t at = 0;
  while (at < n) {
    uint64_t k = irregular ? 1 + ut_rng_below(rng, record_rows) : n;
    if (k > n - at) k = n - at;
    cs_batch *b = ut_table_batch(t, first + at, k);
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "write %s: %s", path, err.msg);
    cs_batch_free(b);
    at += k;
  }
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "commit %s: %s", path, err.msg);
}

static void ds_make(ds *d, const uint64_t *rows, uint32_t n_files, uint64_t record_rows, bool irregular,
                    uint64_t seed) {
  memset(d, 0, sizeof *d);
  ck_assert(n_files <= 8);
  d->dir = ut_tmpdir();
  d->n_files = n_files;
  d->all = ut_table_new(&fixed_schema);
  ut_rng rng = ut_rng_seed(seed);
  uint64_t total = 0;
  for (uint32_t i = 0; i < n_files; i++) total += rows[i];
  for (uint64_t r = 0; r < total; r++) {
    ut_cell *cells = ut_table_add_row(d->all);
    for (uint32_t c = 0; c < UT_FIXED_COLS; c++)
      ut_cell_random(&rng, ut_fixed_cols[c].type, ut_fixed_cols[c].nullable, 150, &cells[c]);
  }
  uint64_t at = 0;
  for (uint32_t i = 0; i < n_files; i++) {
    char name[32];
    snprintf(name, sizeof name, "part-%02u.cst", i);
    d->paths[i] = ut_join(d->dir, name);
    d->first[i] = at;
    write_file(d->all, d->paths[i], at, rows[i], record_rows, irregular, &rng);
    at += rows[i];
  }
  d->first[n_files] = at;
  cs_err err = {0};
  cs_rc rc = cs_store_open_dataset((const char *const *)d->paths, n_files, CS_VERIFY_FULL, &d->s, &err);
  ck_assert_msg(rc == CS_OK, "seed %" PRIu64 ": cs_store_open_dataset gave %s: %s", seed, cs_rc_name(rc),
                err.msg);
}

static void ds_free(ds *d) {
  cs_store_close(d->s);
  ut_table_free(d->all);
  for (uint32_t i = 0; i < d->n_files; i++) free(d->paths[i]);
  ut_tmpdir_remove(d->dir);
}

/* ------------------------------------------------------------- reference */

static void assert_same(const char *what, const uint8_t *got, const uint8_t *gv, const uint8_t *want,
                        const uint8_t *wv, uint64_t n, size_t w, const char *ctx) {
  for (uint64_t i = 0; i < n; i++) {
    if (memcmp(got + i * w, want + i * w, w) != 0)
      ck_abort_msg("%s: %s: element %" PRIu64 " of %" PRIu64 " differs", ctx, what, i, n);
    if (gv && gv[i] != wv[i])
      ck_abort_msg("%s: %s: element %" PRIu64 ": valid=%u, expected %u", ctx, what, i, gv[i], wv[i]);
  }
}

/* Every gather kernel on every fixed-width column for the selection rows
** (and, for range, [first, first + n_range)). */
static void check_gathers(const cs_store *s, const uint64_t *rows, uint64_t n, uint64_t first,
                          uint64_t n_range, const char *ctx) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t *sorted = malloc(n * sizeof *sorted + 8), *range_rows = malloc(n_range * sizeof *range_rows + 8);
  uint32_t *bins = malloc(n * sizeof *bins + 8);
  ck_assert(sorted && range_rows && bins);
  memcpy(sorted, rows, n * sizeof *rows);
  /* Non-decreasing with a few backward steps, as cs_gather_sorted allows. */
  for (uint64_t i = 1; i < n; i++)
    for (uint64_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      uint64_t x = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = x;
    }
  if (n > 10) sorted[n / 2] = sorted[0];
  for (uint64_t i = 0; i < n_range; i++) range_rows[i] = first + i;
  uint64_t m = n > n_range ? n : n_range;
  uint8_t *out = malloc(m * 8 + 1), *ov = malloc(m + 1), *ref = malloc(m * 8 + 1), *rv = malloc(m + 1);
  ck_assert(out && ov && ref && rv);
  cs_bins_compute(s, rows, n, bins);
  for (uint64_t i = 0; i < n; i++)
    if (bins[i] != ut_ref_record(s, rows[i]))
      ck_abort_msg("%s: bins[%" PRIu64 "] = %u for row %" PRIu64, ctx, i, bins[i], rows[i]);
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    if (cs_type_is_varlen(sc->cols[c].type)) continue;
    size_t w = cs_type_width(sc->cols[c].type);
    char what[96];
    snprintf(what, sizeof what, "column %s", sc->cols[c].name);
    ut_ref_gather(s, c, rows, n, ref, rv);
    cs_gather_rows(s, c, rows, n, out, ov);
    assert_same("cs_gather_rows", out, ov, ref, rv, n, w, what);
    cs_gather_rows_binned(s, c, rows, bins, n, out, ov);
    assert_same("cs_gather_rows_binned", out, ov, ref, rv, n, w, what);
    ut_ref_gather(s, c, sorted, n, ref, rv);
    cs_gather_sorted(s, c, sorted, n, out, ov);
    assert_same("cs_gather_sorted", out, ov, ref, rv, n, w, what);
    ut_ref_gather(s, c, range_rows, n_range, ref, rv);
    cs_gather_range(s, c, first, n_range, out, ov);
    assert_same("cs_gather_range", out, ov, ref, rv, n_range, w, what);
    /* Strided backwards over the same rows. */
    if (n_range > 0) {
      for (uint64_t i = 0; i < n_range; i++) range_rows[i] = first + n_range - 1 - i;
      ut_ref_gather(s, c, range_rows, n_range, ref, rv);
      cs_gather_strided(s, c, first + n_range - 1, -1, n_range, out, ov);
      assert_same("cs_gather_strided", out, ov, ref, rv, n_range, w, what);
      for (uint64_t i = 0; i < n_range; i++) range_rows[i] = first + i;
    }
    (void)ctx;
  }
  free(out), free(ov), free(ref), free(rv), free(sorted), free(range_rows), free(bins);
}

/* cs_gather_mask over [first, first + n) with a random mask. */
static void check_mask(const cs_store *s, ut_rng *rng, uint64_t first, uint64_t n, const char *ctx) {
  const cs_schema *sc = cs_store_schema(s);
  uint8_t *mask = malloc(n + 1);
  uint64_t *rows = malloc(n * sizeof *rows + 8);
  ck_assert(mask && rows);
  for (uint64_t i = 0; i < n; i++)
    mask[i] = ut_rng_below(rng, 3) == 0 ? (uint8_t)(1 + ut_rng_below(rng, 255)) : 0;
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++)
    if (mask[i]) rows[k++] = first + i;
  ck_assert_uint_eq(cs_mask_count(mask, n), k);
  uint8_t *out = malloc(k * 8 + 1), *ov = malloc(k + 1), *ref = malloc(k * 8 + 1), *rv = malloc(k + 1);
  ck_assert(out && ov && ref && rv);
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    if (cs_type_is_varlen(sc->cols[c].type)) continue;
    ut_ref_gather(s, c, rows, k, ref, rv);
    uint64_t got = cs_gather_mask(s, c, mask, first, n, out, ov);
    if (got != k) ck_abort_msg("%s: cs_gather_mask wrote %" PRIu64 ", expected %" PRIu64, ctx, got, k);
    assert_same("cs_gather_mask", out, ov, ref, rv, k, cs_type_width(sc->cols[c].type), ctx);
  }
  free(out), free(ov), free(ref), free(rv), free(mask), free(rows);
}

/* cs_pred_eval over [first, first + n) of the dataset equals the same
** predicates run on each file's own store over the matching pieces, and a
** per-row check against the reference table for one simple predicate. */
static void check_preds(const ds *d, uint64_t first, uint64_t n, const char *ctx) {
  const cs_store *s = d->s;
  uint64_t total = cs_store_rows(s);
  if (total == 0) return;
  int64_t pivot = ut_table_cell(d->all, total / 2, 3)->null ? 0 : ut_table_cell(d->all, total / 2, 3)->i;
  cs_pred sets[4][2];
  uint32_t n_sets[4] = {1, 1, 2, 1};
  memset(sets, 0, sizeof sets);
  sets[0][0] = (cs_pred){.col = 3, .op = CS_CMP_GT, .a = {.kind = CS_VAL_INT, .i = pivot}};
  sets[1][0] = (cs_pred){.col = 2, .op = CS_CMP_ISNULL};
  sets[2][0] = (cs_pred){.col = 9, .op = CS_CMP_EQ, .a = {.kind = CS_VAL_INT, .i = 1}};
  sets[2][1] = (cs_pred){.col = 12, .op = CS_CMP_LT, .a = {.kind = CS_VAL_FLOAT, .f = 0.0}};
  sets[3][0] = (cs_pred){.col = 13,
                         .op = CS_CMP_BETWEEN,
                         .a = {.kind = CS_VAL_INT, .i = 20},
                         .b = {.kind = CS_VAL_INT, .i = 200}};
  uint8_t *mask = malloc(n + 1), *want = malloc(n + 1);
  ck_assert(mask && want);
  for (int k = 0; k < 4; k++) {
    cs_pred_stats st = {0};
    cs_pred_eval(s, sets[k], n_sets[k], first, n, mask, &st);
    uint64_t selected = 0;
    for (uint32_t f = 0; f < d->n_files; f++) {
      uint64_t lo = d->first[f] > first ? d->first[f] : first;
      uint64_t hi = d->first[f + 1] < first + n ? d->first[f + 1] : first + n;
      if (lo >= hi) continue;
      cs_store *p = ut_open_ok(d->paths[f], CS_VERIFY_HEADER, ctx);
      cs_pred_stats pst = {0};
      cs_pred_eval(p, sets[k], n_sets[k], lo - d->first[f], hi - lo, want + (lo - first), &pst);
      selected += pst.rows_selected;
      cs_store_close(p);
    }
    for (uint64_t i = 0; i < n; i++)
      if (mask[i] != want[i])
        ck_abort_msg("%s: predicate set %d: row %" PRIu64 ": mask %u, per-file %u", ctx, k, first + i,
                     mask[i], want[i]);
    if (st.rows_selected != selected)
      ck_abort_msg("%s: predicate set %d selected %" PRIu64 ", per-file %" PRIu64, ctx, k, st.rows_selected,
                   selected);
  }
  /* i64 > pivot against the reference table directly. */
  cs_pred_eval(s, sets[0], 1, first, n, mask, NULL);
  for (uint64_t i = 0; i < n; i++) {
    const ut_cell *c = ut_table_cell(d->all, first + i, 3);
    uint8_t e = !c->null && c->i > pivot;
    if (mask[i] != e)
      ck_abort_msg("%s: i64 > %" PRId64 " at row %" PRIu64 ": mask %u, expected %u", ctx, pivot, first + i,
                   mask[i], e);
  }
  free(mask), free(want);
}

/* Everything above on one dataset. */
static void check_dataset(ds *d, uint64_t seed) {
  char ctx[96];
  snprintf(ctx, sizeof ctx, "seed %" PRIu64, seed);
  const cs_store *s = d->s;
  uint64_t total = d->first[d->n_files];
  ck_assert_uint_eq(cs_store_rows(s), total);
  ck_assert(cs_store_is_dataset(s));
  ck_assert_uint_eq(cs_store_files(s), d->n_files);
  for (uint32_t f = 0; f < d->n_files; f++) {
    ck_assert_str_eq(cs_store_file_path(s, f), d->paths[f]);
    ck_assert_uint_eq(cs_store_file_rows(s, f), d->first[f + 1] - d->first[f]);
    ck_assert_uint_eq(cs_store_file_first_row(s, f), d->first[f]);
  }
  ck_assert_str_eq(cs_store_path(s), d->paths[0]);
  ut_assert_schema_equals(cs_store_schema(s), &fixed_schema, ctx);
  /* Every cell, through find_record and the chunks. */
  ut_assert_store_equals(s, d->all, total, ctx);
  uint64_t recs = cs_store_records(s), sum = 0;
  for (uint32_t f = 0; f < d->n_files; f++) {
    cs_store *p = ut_open_ok(d->paths[f], CS_VERIFY_HEADER, ctx);
    sum += cs_store_records(p);
    cs_store_close(p);
  }
  ck_assert_uint_eq(recs, sum);
  for (uint64_t row = 0; row < total; row++) {
    uint64_t r = cs_store_find_record(s, row), e = ut_ref_record(s, row);
    if (r != e) ck_abort_msg("%s: find_record(%" PRIu64 ") = %" PRIu64 ", expected %" PRIu64, ctx, row, r, e);
    if (row < cs_store_record_first_row(s, r) || row >= cs_store_record_first_row(s, r + 1))
      ck_abort_msg("%s: row %" PRIu64 " outside its record", ctx, row);
  }
  ut_rng rng = ut_rng_seed(seed ^ 0x5eedu);
  uint64_t n = 1500;
  uint64_t *rows = malloc(n * sizeof *rows);
  ck_assert(rows);
  for (uint64_t i = 0; i < n; i++) rows[i] = ut_rng_below(&rng, total);
  /* Rows near every file boundary. */
  for (uint32_t f = 1; f < d->n_files && 4 * f + 3 < n; f++)
    for (int k = 0; k < 4; k++) {
      uint64_t b = d->first[f] + (uint64_t)k;
      rows[4 * f + (uint64_t)k] = (b >= 2 ? b - 2 : 0) < total ? (b >= 2 ? b - 2 : 0) : total - 1;
    }
  /* Whole table, and a range from inside the first file to inside the last. */
  check_gathers(s, rows, n, 0, total, ctx);
  uint64_t lo = total / 7, hi = total - total / 5;
  check_gathers(s, rows, n / 3, lo, hi - lo, ctx);
  check_mask(s, &rng, 0, total, ctx);
  check_mask(s, &rng, lo, hi - lo, ctx);
  check_preds(d, 0, total, ctx);
  check_preds(d, lo, hi - lo, ctx);
  free(rows);
}

START_TEST(t_irregular) {
  static const uint64_t rows[][5] = {{137, 0, 1, 500, 263}, {40, 41, 1, 2, 300}, {1, 1, 1, 1, 1}};
  for (int k = 0; k < 3; k++) {
    ds d;
    uint64_t seed = 1000u + (uint64_t)k;
    ds_make(&d, rows[k], 5, 64, true, seed);
    ck_assert_msg(d.s->uniform_rows == 0 || k == 2, "seed %" PRIu64 ": irregular records taken as uniform",
                  seed);
    check_dataset(&d, seed);
    ds_free(&d);
  }
}
END_TEST

START_TEST(t_uniform) {
  /* Every file a whole number of 64-row records, the last file shorter:
  ** the division path applies across the files. */
  static const uint64_t rows[] = {128, 256, 64, 192, 100};
  ds d;
  ds_make(&d, rows, 5, 64, false, 2001);
  ck_assert_msg(d.s->uniform_rows == 64, "uniform_rows = %" PRIu64 ", expected 64", d.s->uniform_rows);
  check_dataset(&d, 2001);
  ds_free(&d);
  /* A short file in the middle: irregular, still correct. */
  static const uint64_t rows2[] = {128, 100, 64, 64};
  ds_make(&d, rows2, 4, 64, false, 2002);
  ck_assert_uint_eq(d.s->uniform_rows, 0);
  check_dataset(&d, 2002);
  ds_free(&d);
  /* Three files, a single record each, of equal size. */
  static const uint64_t rows3[] = {64, 64, 64};
  ds_make(&d, rows3, 3, 64, false, 2003);
  ck_assert_uint_eq(d.s->uniform_rows, 64);
  check_dataset(&d, 2003);
  ds_free(&d);
}
END_TEST

/* --------------------------------------------------------------- schemas */

static void make_store(const char *path, const cs_column *cols, uint32_t nc) {
  cs_schema sc = {nc, cols};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(path, &sc, NULL, &w, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
}

static void expect_schema_error(const char *const *paths, uint32_t n, const char *bad, const char *first,
                                const char *detail) {
  cs_store *s = NULL;
  cs_err err = {0};
  cs_rc rc = cs_store_open_dataset(paths, n, CS_VERIFY_HEADER, &s, &err);
  ck_assert_msg(rc == CS_ESCHEMA, "expected CS_ESCHEMA, got %s: %s", cs_rc_name(rc), err.msg);
  ck_assert_ptr_null(s);
  char want[1024];
  snprintf(want, sizeof want, "colstore: %s: schema differs from %s: %s", bad, first, detail);
  ck_assert_msg(strcmp(err.msg, want) == 0, "message\n  %s\nexpected\n  %s", err.msg, want);
}

START_TEST(t_schema_mismatch) {
  char *dir = ut_tmpdir();
  static const cs_column base[] = {{"a", CS_TYPE_INT64, true}, {"b", CS_TYPE_INT64, true}};
  static const cs_column type[] = {{"a", CS_TYPE_INT64, true}, {"b", CS_TYPE_INT32, true}};
  static const cs_column nn[] = {{"a", CS_TYPE_INT64, false}, {"b", CS_TYPE_INT64, true}};
  static const cs_column name[] = {{"a", CS_TYPE_INT64, true}, {"c", CS_TYPE_INT64, true}};
  static const cs_column more[] = {
      {"a", CS_TYPE_INT64, true}, {"b", CS_TYPE_INT64, true}, {"x", CS_TYPE_TEXT, true}};
  char *p0 = ut_join(dir, "0.cst"), *p1 = ut_join(dir, "1.cst"), *p2 = ut_join(dir, "2.cst"),
       *p3 = ut_join(dir, "3.cst");
  make_store(p0, base, 2);
  make_store(p1, base, 2);
  make_store(p2, type, 2);
  make_store(p3, nn, 2);
  const char *paths[] = {p0, p1, p2, p3};
  /* The first differing file is named (2.cst), though 3.cst differs too. */
  expect_schema_error(paths, 4, p2, p0, "column 2 is b INT32 here but b INT64 there");
  const char *paths2[] = {p0, p3};
  expect_schema_error(paths2, 2, p3, p0, "column 1 is a INT64 NOT NULL here but a INT64 there");
  unlink(p3);
  make_store(p3, name, 2);
  expect_schema_error(paths2, 2, p3, p0, "column 2 is c INT64 here but b INT64 there");
  unlink(p3);
  make_store(p3, more, 3);
  expect_schema_error(paths2, 2, p3, p0, "it has 3 columns here but 2 there");
  /* The same through a directory SOURCE. */
  cs_store *s = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_store_open_source(dir, CS_VERIFY_HEADER, &s, &err), CS_ESCHEMA);
  ck_assert_msg(strstr(err.msg, p2) != NULL, "%s", err.msg);
  free(p0), free(p1), free(p2), free(p3);
  ut_tmpdir_remove(dir);
}
END_TEST

START_TEST(t_zero_files) {
  char *dir = ut_tmpdir();
  cs_store *s = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_store_open_dataset(NULL, 0, CS_VERIFY_HEADER, &s, &err), CS_ENOENT);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(cs_store_open_source(dir, CS_VERIFY_HEADER, &s, &err), CS_ENOENT);
  char want[600];
  snprintf(want, sizeof want, "colstore: no store files match %s/*.cst", dir);
  ck_assert_str_eq(err.msg, want);
  char *pat = ut_join(dir, "*.cst");
  ck_assert_int_eq(cs_store_open_source(pat, CS_VERIFY_HEADER, &s, &err), CS_ENOENT);
  snprintf(want, sizeof want, "colstore: no store files match %s", pat);
  ck_assert_str_eq(err.msg, want);
  ck_assert_ptr_null(s);
  free(pat);
  ut_tmpdir_remove(dir);
}
END_TEST

/* ---------------------------------------------------------------- verify */

START_TEST(t_verify_names_file) {
  static const uint64_t rows[] = {100, 300, 200};
  ds d;
  ds_make(&d, rows, 3, 64, true, 3001);
  cs_err err = {0};
  ck_assert_int_eq(cs_store_verify(d.s, &err), CS_OK);
  ut_layout l;
  ut_layout_read(d.paths[1], &l);
  ck_assert_uint_ge(l.n_records, 2);
  ut_xor_byte(d.paths[1], ut_layout_data_offset(&l, 1, 3), 0x10);
  ut_layout_free(&l);
  ck_assert_int_eq(cs_store_verify(d.s, &err), CS_ECORRUPT);
  char want[600];
  snprintf(want, sizeof want, "colstore: %s: record 1, column i64: checksum mismatch", d.paths[1]);
  ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "message %s\nexpected it to start %s", err.msg,
                want);
  cs_store *s = NULL;
  ck_assert_int_eq(cs_store_open_dataset((const char *const *)d.paths, 3, CS_VERIFY_FULL, &s, &err),
                   CS_ECORRUPT);
  ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
  ck_assert_ptr_null(s);
  ds_free(&d);
}
END_TEST

/* -------------------------------------------------- sources and freshness */

static bool current(const cs_store *s) {
  bool cur = false;
  cs_err err = {0};
  ck_assert_msg(cs_store_is_current(s, &cur, &err) == CS_OK, "%s", err.msg);
  return cur;
}

START_TEST(t_source_and_freshness) {
  static const uint64_t rows[] = {10, 20, 30};
  ds d;
  ds_make(&d, rows, 3, 64, true, 4001);
  ut_rng rng = ut_rng_seed(4002);
  /* Not stores, or not regular: left out of a directory SOURCE. */
  char *txt = ut_join(d.dir, "notes.txt"), *sub = ut_join(d.dir, "sub.cst"),
       *hidden = ut_join(d.dir, ".h.cst");
  ut_write_all(txt, "x", 1);
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  ut_write_all(hidden, "x", 1);
  ck_assert(cs_source_is_dataset(d.dir));
  ck_assert(!cs_source_is_dataset(d.paths[0]));
  char *pat = ut_join(d.dir, "part-0?.cst");
  ck_assert(cs_source_is_dataset(pat));
  char **paths = NULL;
  uint32_t n = 0;
  cs_err err = {0};
  ck_assert_int_eq(cs_dataset_expand(d.dir, &paths, &n, &err), CS_OK);
  ck_assert_uint_eq(n, 3);
  for (uint32_t i = 0; i < n; i++) ck_assert_str_eq(paths[i], d.paths[i]);
  cs_paths_free(paths, n);
  cs_store *s = NULL;
  ck_assert_int_eq(cs_store_open_source(pat, CS_VERIFY_HEADER, &s, &err), CS_OK);
  ck_assert_str_eq(cs_store_path(s), pat);
  ck_assert_uint_eq(cs_store_rows(s), 60);
  ck_assert(current(s));
  /* An append to one file. */
  ut_table_append_store(d.all, d.paths[1], 0, 5);
  ck_assert(!current(s));
  cs_store_close(s);
  ck_assert_int_eq(cs_store_open_source(d.dir, CS_VERIFY_HEADER, &s, &err), CS_OK);
  ck_assert_uint_eq(cs_store_rows(s), 65);
  ck_assert_uint_eq(cs_store_file_first_row(s, 2), 35);
  ck_assert(current(s));
  /* A new file sorting first: a new set of files. */
  char *p = ut_join(d.dir, "part-00a.cst"), *early = ut_join(d.dir, "a.cst");
  write_file(d.all, early, 0, 7, 64, true, &rng);
  ck_assert(!current(s));
  cs_store_close(s);
  ck_assert_int_eq(cs_store_open_source(d.dir, CS_VERIFY_HEADER, &s, &err), CS_OK);
  ck_assert_uint_eq(cs_store_files(s), 4);
  ck_assert_str_eq(cs_store_file_path(s, 0), early);
  ck_assert_uint_eq(cs_store_rows(s), 72);
  ck_assert(current(s));
  /* The pattern does not match a.cst, so it is still current for it. */
  cs_store *g = NULL;
  ck_assert_int_eq(cs_store_open_source(pat, CS_VERIFY_HEADER, &g, &err), CS_OK);
  write_file(d.all, p, 0, 3, 64, true, &rng); /* part-00a.cst: not ?-matched */
  ck_assert(current(g));
  cs_store_close(g);
  /* A removed file. */
  ck_assert(!current(s));
  cs_store_close(s);
  ck_assert_int_eq(cs_store_open_source(d.dir, CS_VERIFY_HEADER, &s, &err), CS_OK);
  ck_assert(current(s));
  ck_assert_int_eq(unlink(early), 0);
  ck_assert(!current(s));
  cs_store_close(s);
  /* A file replaced by another (rename): a new inode. */
  ck_assert_int_eq(cs_store_open_source(d.dir, CS_VERIFY_HEADER, &s, &err), CS_OK);
  write_file(d.all, early, 0, 4, 64, true, &rng);
  ck_assert_int_eq(rename(early, p), 0);
  ck_assert(!current(s));
  cs_store_close(s);
  free(p), free(early), free(pat), free(txt), free(sub), free(hidden);
  ds_free(&d);
}
END_TEST

/* The rows of every cell of a and b are equal (rows, records, digest). */
static void assert_same_store(const cs_store *a, const cs_store *b, const char *ctx) {
  ck_assert_msg(cs_store_rows(a) == cs_store_rows(b), "%s: %" PRIu64 " rows, expected %" PRIu64, ctx,
                cs_store_rows(a), cs_store_rows(b));
  ck_assert_msg(cs_store_records(a) == cs_store_records(b), "%s: records differ", ctx);
  ck_assert_msg(cs_store_files(a) == cs_store_files(b), "%s: files differ", ctx);
  for (uint64_t r = 0; r <= cs_store_records(a); r++)
    ck_assert_msg(cs_store_record_first_row(a, r) == cs_store_record_first_row(b, r),
                  "%s: record %" PRIu64 " starts elsewhere", ctx, r);
  ck_assert_msg(ut_store_digest(a) == ut_store_digest(b), "%s: contents differ", ctx);
  ck_assert_uint_eq(a->uniform_rows, b->uniform_rows);
  ck_assert_uint_eq(cs_store_generation(a), cs_store_generation(b));
  ck_assert_uint_eq(cs_store_file_bytes(a), cs_store_file_bytes(b));
}

/* Opens source from scratch and compares s with it. */
static void assert_fresh(const cs_store *s, const char *source, const char *ctx) {
  cs_store *f = NULL;
  cs_err err = {0};
  ck_assert_msg(cs_store_open_source(source, CS_VERIFY_HEADER, &f, &err) == CS_OK, "%s: %s", ctx, err.msg);
  assert_same_store(s, f, ctx);
  cs_store_close(f);
}

static cs_store *reopen_ok(cs_store *s, const char *ctx) {
  cs_store *n = NULL;
  cs_err err = {0};
  cs_rc rc = cs_store_reopen(s, CS_VERIFY_HEADER, &n, &err);
  ck_assert_msg(rc == CS_OK, "%s: cs_store_reopen gave %s: %s", ctx, cs_rc_name(rc), err.msg);
  ck_assert_ptr_nonnull(n);
  return n;
}

START_TEST(t_writer_temp_files_are_not_members) {
  static const uint64_t rows[] = {30, 40};
  ds d;
  ds_make(&d, rows, 2, 64, true, 6001);
  /* What a writer leaves beside its destination while it creates it: a
  ** complete store under the temporary name, and garbage. */
  char *copy = ut_join(d.dir, "part-00.cst.tmp.Ab3xZ9"), *junk = ut_join(d.dir, "part-01.cst.tmp.q1W2e3");
  ut_copy_file(d.paths[0], copy);
  ut_write_all(junk, "not a store", 11);
  /* And a real writer, mid-create. */
  char *late = ut_join(d.dir, "part-02.cst");
  cs_writer *w = NULL;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(late, &fixed_schema, NULL, &w, &err) == CS_OK, "%s", err.msg);
  ck_assert_int_eq(ut_dir_entries(d.dir), 5);
  /* Names that merely look alike stay members. */
  char *like = ut_join(d.dir, "part-01.tmp.cst");
  ut_copy_file(d.paths[1], like);
  char *all = ut_join(d.dir, "*"), *cst = ut_join(d.dir, "*.cst*");
  const char *sources[] = {d.dir, all, cst};
  for (int k = 0; k < 3; k++) {
    char **paths = NULL;
    uint32_t n = 0;
    ck_assert_int_eq(cs_dataset_expand(sources[k], &paths, &n, &err), CS_OK);
    ck_assert_msg(n == 3, "%s: %u files", sources[k], n);
    ck_assert_str_eq(paths[0], d.paths[0]);
    ck_assert_str_eq(paths[1], d.paths[1]);
    ck_assert_str_eq(paths[2], like);
    cs_paths_free(paths, n);
    cs_store *s = NULL;
    ck_assert_msg(cs_store_open_source(sources[k], CS_VERIFY_FULL, &s, &err) == CS_OK, "%s: %s", sources[k],
                  err.msg);
    ck_assert_uint_eq(cs_store_rows(s), 30 + 40 + 40);
    ck_assert(current(s));
    cs_store_close(s);
  }
  ck_assert(cs__format_is_temp_name("x.cst.tmp.AZaz09"));
  ck_assert(cs__format_is_temp_name("x.tmp.000000"));
  ck_assert(!cs__format_is_temp_name("x.tmp.00000"));
  ck_assert(!cs__format_is_temp_name("x.tmp.0000000"));
  ck_assert(!cs__format_is_temp_name("x.tmp.abc-12"));
  ck_assert(!cs__format_is_temp_name("x.tmp.abc.cst"));
  ck_assert(!cs__format_is_temp_name("x.tmpXabcdef"));
  cs_writer_abort(w);
  free(copy), free(junk), free(late), free(like), free(all), free(cst);
  ds_free(&d);
}
END_TEST

START_TEST(t_reopen_shares_unchanged_files) {
  static const uint64_t rows[] = {10, 20, 30, 40, 50};
  ds d;
  ds_make(&d, rows, 5, 64, true, 7001);
  cs_store *s = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_store_open_source(d.dir, CS_VERIFY_HEADER, &s, &err), CS_OK);
  /* Nothing changed: the same snapshot, one more reference. */
  cs_store *same = reopen_ok(s, "unchanged");
  ck_assert_ptr_eq(same, s);
  cs_store_close(same);
  /* An append to one file: that file alone is opened again. */
  ut_table_append_store(d.all, d.paths[2], 0, 7);
  cs_store *n = reopen_ok(s, "append");
  ck_assert_ptr_ne(n, s);
  ck_assert_uint_eq(n->n_parts, 5);
  for (uint32_t i = 0; i < 5; i++) {
    if (i == 2) {
      ck_assert_ptr_ne(n->parts[i], s->parts[i]);
      ck_assert_ptr_ne(n->parts[i]->map, s->parts[i]->map);
    } else {
      ck_assert_msg(n->parts[i] == s->parts[i], "file %u opened again", i);
    }
  }
  ck_assert_uint_eq(cs_store_rows(n), 157);
  ck_assert_str_eq(cs_store_path(n), d.dir);
  assert_fresh(n, d.dir, "after an append");
  /* The old snapshot is untouched, and outlives the new one... */
  ut_assert_store_equals(s, d.all, 150, "old snapshot");
  cs_store *keep = reopen_ok(n, "again");
  ck_assert_ptr_eq(keep, n);
  cs_store_close(keep);
  cs_store_close(n);
  ut_assert_store_equals(s, d.all, 150, "old snapshot after the new one closed");
  /* ...or is closed first while the new one keeps the shared files. */
  n = reopen_ok(s, "append, again");
  cs_store_close(s);
  assert_fresh(n, d.dir, "new snapshot after the old one closed");
  s = n;
  /* A file added (sorting first), one removed, one replaced by rename:
  ** only the new and the replaced file are opened. */
  ut_rng rng = ut_rng_seed(7002);
  char *early = ut_join(d.dir, "a.cst"), *repl = ut_join(d.dir, "tmp-part.cst");
  write_file(d.all, early, 0, 5, 64, true, &rng);
  ck_assert_int_eq(unlink(d.paths[4]), 0);
  write_file(d.all, repl, 3, 9, 64, true, &rng);
  ck_assert_int_eq(rename(repl, d.paths[3]), 0);
  n = reopen_ok(s, "add, remove, replace");
  ck_assert_uint_eq(n->n_parts, 5);
  ck_assert_str_eq(n->parts[0]->path, early);
  ck_assert_ptr_eq(n->parts[1], s->parts[0]);
  ck_assert_ptr_eq(n->parts[2], s->parts[1]);
  ck_assert_ptr_eq(n->parts[3], s->parts[2]);
  ck_assert_ptr_ne(n->parts[4], s->parts[3]);
  ck_assert_uint_eq(cs_store_rows(n), 5 + 10 + 20 + 37 + 9);
  assert_fresh(n, d.dir, "after add, remove, replace");
  cs_store_close(s);
  cs_store_close(n);
  /* A pattern source, and a list given by paths, reopen the same way. */
  char *pat = ut_join(d.dir, "part-0?.cst");
  ck_assert_int_eq(cs_store_open_source(pat, CS_VERIFY_HEADER, &s, &err), CS_OK);
  ck_assert_uint_eq(s->n_parts, 4);
  ut_table_append_store(d.all, d.paths[0], 0, 3);
  cs_store *g = reopen_ok(s, "pattern");
  ck_assert_ptr_ne(g->parts[0], s->parts[0]);
  for (uint32_t i = 1; i < 4; i++) ck_assert_ptr_eq(g->parts[i], s->parts[i]);
  ck_assert_str_eq(cs_store_path(g), pat);
  assert_fresh(g, pat, "pattern");
  cs_store_close(s);
  cs_store_close(g);
  const char *list[] = {d.paths[1], d.paths[0]};
  ck_assert_int_eq(cs_store_open_dataset(list, 2, CS_VERIFY_HEADER, &s, &err), CS_OK);
  ut_table_append_store(d.all, d.paths[0], 0, 2);
  g = reopen_ok(s, "list");
  ck_assert_ptr_eq(g->parts[0], s->parts[0]);
  ck_assert_ptr_ne(g->parts[1], s->parts[1]);
  ck_assert_str_eq(cs_store_path(g), d.paths[1]);
  ck_assert_uint_eq(cs_store_rows(g), 20 + 15);
  ck_assert(!current(s));
  ck_assert(current(g));
  cs_store_close(g);
  cs_store_close(s);
  /* A single store reopens as cs_store_open would. */
  s = ut_open_ok(d.paths[1], CS_VERIFY_HEADER, "single");
  g = reopen_ok(s, "single, unchanged");
  ck_assert_ptr_eq(g, s);
  cs_store_close(g);
  ut_table_append_store(d.all, d.paths[1], 0, 1);
  g = reopen_ok(s, "single, appended");
  ck_assert_ptr_ne(g, s);
  ck_assert_uint_eq(cs_store_rows(g), 21);
  ck_assert_uint_eq(cs_store_rows(s), 20);
  cs_store_close(s);
  cs_store_close(g);
  /* The source gone: the error a fresh open gives. */
  ck_assert_int_eq(cs_store_open_source(d.dir, CS_VERIFY_HEADER, &s, &err), CS_OK);
  char moved[600];
  snprintf(moved, sizeof moved, "%s-moved", d.dir);
  ck_assert_int_eq(rename(d.dir, moved), 0);
  g = NULL;
  ck_assert_int_eq(cs_store_reopen(s, CS_VERIFY_HEADER, &g, &err), CS_ENOENT);
  ck_assert_ptr_null(g);
  ck_assert_int_eq(rename(moved, d.dir), 0);
  cs_store_close(s);
  free(early), free(repl), free(pat);
  ds_free(&d);
}
END_TEST

START_TEST(t_single_file_accessors) {
  static const uint64_t rows[] = {50};
  ds d;
  ds_make(&d, rows, 1, 64, true, 5001);
  cs_store *s = ut_open_ok(d.paths[0], CS_VERIFY_HEADER, "single");
  ck_assert(!cs_store_is_dataset(s));
  ck_assert_uint_eq(cs_store_files(s), 1);
  ck_assert_str_eq(cs_store_file_path(s, 0), d.paths[0]);
  ck_assert_uint_eq(cs_store_file_rows(s, 0), 50);
  ck_assert_uint_eq(cs_store_file_first_row(s, 0), 0);
  ck_assert_ptr_null(cs_store_file_path(s, 1));
  cs_store_close(s);
  /* A dataset of one file is still a dataset. */
  ck_assert(cs_store_is_dataset(d.s));
  ck_assert_uint_eq(cs_store_file_bytes(d.s), ut_file_bytes(d.paths[0]));
  ds_free(&d);
}
END_TEST

static Suite *dataset_suite(void) {
  Suite *s = suite_create("dataset");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, t_irregular);
  tcase_add_test(tc, t_uniform);
  tcase_set_timeout(tc, 120);
  suite_add_tcase(s, tc);
  tc = tcase_create("edges");
  tcase_add_test(tc, t_schema_mismatch);
  tcase_add_test(tc, t_zero_files);
  tcase_add_test(tc, t_verify_names_file);
  tcase_add_test(tc, t_source_and_freshness);
  tcase_add_test(tc, t_single_file_accessors);
  tcase_add_test(tc, t_writer_temp_files_are_not_members);
  tcase_add_test(tc, t_reopen_shares_unchanged_files);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(dataset_suite()); }
