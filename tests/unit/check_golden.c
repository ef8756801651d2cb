/*
** check_golden.c - files written by earlier builds still mean what they meant.
**
** tests/data/valid/ holds small stores that must open with CS_VERIFY_FULL
** and show exactly the rows, records, generation, recovery flag and content
** digest listed in valid/EXPECTED; tests/data/corrupt/ holds damaged files
** that must fail with exactly the code listed in corrupt/EXPECTED (zstd's
** golden decompression tests).  tests/data/make_golden.c wrote them and says
** how; the files are committed, so a reader change that misreads an old
** file, or accepts a damaged one, fails here even if every round-trip test
** (which writes and reads with the same build) still passes.
**
** The directory comes from $COLSTORE_TEST_DATA (ctest sets it), else from
** this source file's location.  The lists and the directories must agree
** both ways: an unlisted file, or a listed one that is missing, fails, so a
** new golden file cannot be added without saying what it must do.  A fixed
** bug adds a file and a line.
*/
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "unit_util.h"

static char *data_dir(void) {
  const char *env = getenv("COLSTORE_TEST_DATA");
  char *dir;
  if (env && *env) {
    dir = strdup(env);
  } else {
    /* This file is tests/unit/check_golden.c; the data is tests/data. */
    dir = malloc(strlen(__FILE__) + 16);
    ck_assert_ptr_nonnull(dir);
    strcpy(dir, __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash)
      strcpy(slash, "/../data");
    else
      strcpy(dir, "../data");
  }
  ck_assert_ptr_nonnull(dir);
  struct stat st;
  ck_assert_msg(stat(dir, &st) == 0 && S_ISDIR(st.st_mode),
                "golden data directory %s not found; set COLSTORE_TEST_DATA", dir);
  return dir;
}

/* ---------------------------------------------------------------- EXPECTED */

typedef struct expected_line {
  char name[128];
  char code[32]; /* corrupt: CS_... */
  uint64_t rows, records, generation, digest;
  int recovered;
} expected_line;

/* Reads sub/EXPECTED; valid lines have six fields, corrupt ones two. */
static expected_line *expected_read(const char *sub, bool valid, int *out_n) {
  char *dir = data_dir(), *d = ut_join(dir, sub), *path = ut_join(d, "EXPECTED");
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot read %s", path);
  expected_line *lines = calloc(256, sizeof *lines);
  ck_assert_ptr_nonnull(lines);
  int n = 0;
  char buf[512];
  while (fgets(buf, sizeof buf, f)) {
    if (buf[0] == '#' || buf[0] == '\n') continue;
    ck_assert_msg(n < 256, "%s: too many lines", path);
    expected_line *e = &lines[n];
    int got;
    if (valid)
      got = sscanf(buf, "%127s %" SCNu64 " %" SCNu64 " %" SCNu64 " %d %" SCNx64, e->name, &e->rows,
                   &e->records, &e->generation, &e->recovered, &e->digest);
    else
      got = sscanf(buf, "%127s %31s", e->name, e->code);
    ck_assert_msg(got == (valid ? 6 : 2), "%s: cannot parse line '%s'", path, buf);
    for (int k = 0; k < n; k++)
      ck_assert_msg(strcmp(lines[k].name, e->name) != 0, "%s lists %s twice", path, e->name);
    n++;
  }
  fclose(f);
  free(path);
  free(d);
  free(dir);
  *out_n = n;
  return lines;
}

static cs_rc code_from_name(const char *name) {
  for (int rc = 0; rc < CS_RC_COUNT; rc++)
    if (strcmp(cs_rc_name((cs_rc)rc), name) == 0) return (cs_rc)rc;
  ck_abort_msg("corrupt/EXPECTED names an unknown code %s", name);
  return CS_OK;
}

static char *golden_path(const char *sub, const char *name) {
  char *dir = data_dir(), *d = ut_join(dir, sub), *p = ut_join(d, name);
  free(dir);
  free(d);
  return p;
}

/* Every file in sub/ except EXPECTED is listed, and every listed one exists. */
static void assert_lists_match(const char *sub, const expected_line *lines, int n) {
  char *dir = data_dir(), *d = ut_join(dir, sub);
  DIR *dh = opendir(d);
  ck_assert_msg(dh != NULL, "cannot list %s", d);
  struct dirent *e;
  int files = 0;
  while ((e = readdir(dh)) != NULL) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "EXPECTED") == 0) continue;
    bool listed = false;
    for (int k = 0; k < n; k++) listed |= strcmp(lines[k].name, e->d_name) == 0;
    ck_assert_msg(listed, "%s/%s is not listed in %s/EXPECTED", sub, e->d_name, sub);
    files++;
  }
  closedir(dh);
  ck_assert_msg(files == n, "%s/EXPECTED lists %d files but %s/ holds %d", sub, n, sub, files);
  free(d);
  free(dir);
}

/* ------------------------------------------------------------------ tests */

START_TEST(test_golden_directories_hold_exactly_the_listed_files) {
  int nv, nc;
  expected_line *v = expected_read("valid", true, &nv), *c = expected_read("corrupt", false, &nc);
  ck_assert_msg(nv >= 5 && nc >= 5, "only %d valid and %d corrupt golden files", nv, nc);
  assert_lists_match("valid", v, nv);
  assert_lists_match("corrupt", c, nc);
  for (int k = 0; k < nv; k++) {
    char *p = golden_path("valid", v[k].name);
    ck_assert_msg(ut_file_bytes(p) < 64 * 1024, "%s is %" PRIu64 " bytes; keep golden files small", v[k].name,
                  ut_file_bytes(p));
    free(p);
  }
  for (int k = 0; k < nc; k++) {
    char *p = golden_path("corrupt", c[k].name);
    ck_assert_msg(ut_file_bytes(p) < 64 * 1024, "%s is %" PRIu64 " bytes; keep golden files small", c[k].name,
                  ut_file_bytes(p));
    free(p);
  }
  free(v);
  free(c);
}
END_TEST

/* What cs_store_verify_source (colstore_verify) reports of path: its first
** part's message in first (the open's error less "colstore: " starts with
** it), every part naming path; returns the number of parts. */
typedef struct golden_parts {
  const char *path;
  uint64_t n;
  char first[CS_ERR_MSG_BYTES];
} golden_parts;

static void golden_part(void *ctx, const cs_damage *d) {
  golden_parts *g = ctx;
  ck_assert_msg(strcmp(d->path, g->path) == 0 && strstr(d->msg, g->path) == d->msg,
                "part '%s' does not start with %s", d->msg, g->path);
  if (g->n++ == 0) snprintf(g->first, sizeof g->first, "%s", d->msg);
}

static uint64_t golden_verify_parts(const char *path, cs_rc want_rc, golden_parts *g) {
  *g = (golden_parts){path, 0, ""};
  uint64_t n = 0;
  cs_err err = {0};
  cs_rc rc = cs_store_verify_source(path, golden_part, g, &n, &err);
  ck_assert_msg(rc == want_rc, "%s: verify_source gave %s (%s), expected %s", path, cs_rc_name(rc), err.msg,
                cs_rc_name(want_rc));
  ck_assert_uint_eq(n, g->n);
  return n;
}

START_TEST(test_every_valid_golden_file_opens_with_full_verify_as_expected) {
  int n;
  expected_line *v = expected_read("valid", true, &n);
  for (int k = 0; k < n; k++) {
    char *p = golden_path("valid", v[k].name);
    cs_store *s = ut_open_ok(p, CS_VERIFY_FULL, v[k].name);
    cs_err err = {0};
    ck_assert_msg(cs_store_verify(s, &err) == CS_OK, "%s: %s", v[k].name, err.msg);
    golden_parts g;
    ck_assert_msg(golden_verify_parts(p, CS_OK, &g) == 0, "%s: colstore_verify reports '%s'", v[k].name,
                  g.first);
    ck_assert_msg(cs_store_rows(s) == v[k].rows, "%s: %" PRIu64 " rows, expected %" PRIu64, v[k].name,
                  cs_store_rows(s), v[k].rows);
    ck_assert_msg(cs_store_records(s) == v[k].records, "%s: %" PRIu64 " records, expected %" PRIu64,
                  v[k].name, cs_store_records(s), v[k].records);
    ck_assert_msg(cs_store_generation(s) == v[k].generation, "%s: generation %" PRIu64 ", expected %" PRIu64,
                  v[k].name, cs_store_generation(s), v[k].generation);
    ck_assert_msg(cs_store_recovered(s) == (v[k].recovered != 0), "%s: recovered=%d, expected %d", v[k].name,
                  cs_store_recovered(s), v[k].recovered);
    uint64_t d = ut_store_digest(s);
    ck_assert_msg(d == v[k].digest, "%s: content digest %016" PRIx64 ", expected %016" PRIx64, v[k].name, d,
                  v[k].digest);
    cs_store_close(s);
    /* Header-only open agrees. */
    s = ut_open_ok(p, CS_VERIFY_HEADER, v[k].name);
    ck_assert_uint_eq(cs_store_rows(s), v[k].rows);
    ck_assert_uint_eq(ut_store_digest(s), v[k].digest);
    cs_store_close(s);
    free(p);
  }
  free(v);
}
END_TEST

START_TEST(test_every_corrupt_golden_file_fails_with_its_expected_code) {
  int n;
  expected_line *c = expected_read("corrupt", false, &n);
  for (int k = 0; k < n; k++) {
    char *p = golden_path("corrupt", c[k].name);
    cs_rc want = code_from_name(c[k].code);
    ck_assert_msg(want != CS_OK, "%s is listed as corrupt with CS_OK", c[k].name);
    cs_err err = {0};
    cs_rc rc = ut_open_rc(p, CS_VERIFY_FULL, &err);
    ck_assert_msg(rc == want, "%s: open gave %s (%s), expected %s", c[k].name, cs_rc_name(rc), err.msg,
                  c[k].code);
    ck_assert_msg(strncmp(err.msg, "colstore: ", 10) == 0 && strstr(err.msg, p) != NULL,
                  "%s: message '%s' should start with 'colstore: ' and name the file", c[k].name, err.msg);
    /* colstore_verify reports damage where a full open finds it, the same
    ** first; what is not damage is its error. */
    golden_parts g;
    uint64_t n_parts = golden_verify_parts(p, want == CS_ECORRUPT ? CS_OK : want, &g);
    ck_assert_msg((n_parts > 0) == (want == CS_ECORRUPT), "%s: %" PRIu64 " damaged parts reported", c[k].name,
                  n_parts);
    ck_assert_msg(want != CS_ECORRUPT || strncmp(err.msg + 10, g.first, strlen(g.first)) == 0,
                  "%s: first part '%s' is not the open's error '%s'", c[k].name, g.first, err.msg);
    /* A header-only open may succeed only if verify then finds the damage. */
    cs_store *s = NULL;
    if (cs_store_open(p, CS_VERIFY_HEADER, &s, &err) == CS_OK) {
      ck_assert_msg(cs_store_verify(s, &err) == CS_ECORRUPT, "%s: header open and verify both passed",
                    c[k].name);
      cs_store_close(s);
    }
    free(p);
  }
  free(c);
}
END_TEST

START_TEST(test_all_types_golden_file_holds_its_known_values) {
  char *p = golden_path("valid", "all_types.cst");
  cs_store *s = ut_open_ok(p, CS_VERIFY_FULL, "all_types");
  const cs_schema *sc = cs_store_schema(s);
  static const char *names[] = {"id",  "i8",  "i16", "i32", "i64", "u8", "u16",
                                "u32", "f32", "f64", "b",   "t",   "bl"};
  static const cs_type types[] = {CS_TYPE_INT64,   CS_TYPE_INT8,    CS_TYPE_INT16,  CS_TYPE_INT32,
                                  CS_TYPE_INT64,   CS_TYPE_UINT8,   CS_TYPE_UINT16, CS_TYPE_UINT32,
                                  CS_TYPE_FLOAT32, CS_TYPE_FLOAT64, CS_TYPE_BOOL,   CS_TYPE_TEXT,
                                  CS_TYPE_BLOB};
  ck_assert_uint_eq(sc->n_cols, 13);
  for (uint32_t c = 0; c < 13; c++) {
    ck_assert_str_eq(sc->cols[c].name, names[c]);
    ck_assert_int_eq(sc->cols[c].type, types[c]);
    ck_assert(sc->cols[c].nullable == (c != 0));
  }
  ck_assert_uint_eq(cs_store_rows(s), 40);
  ut_cell v;
  /* Row 0: minima. */
  const int64_t lo[] = {0, INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN, 0, 0, 0};
  for (uint32_t c = 0; c < 8; c++) {
    ut_store_cell(s, 0, c, &v);
    ck_assert_msg(!v.null && v.i == lo[c], "row 0 %s = %" PRId64, names[c], v.i);
  }
  ut_store_cell(s, 0, 11, &v);
  ck_assert(!v.null && v.len == 0);
  /* Row 1: maxima, unicode text, a blob with zero bytes. */
  const int64_t hi[] = {1, INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX, UINT8_MAX, UINT16_MAX, UINT32_MAX};
  for (uint32_t c = 0; c < 8; c++) {
    ut_store_cell(s, 1, c, &v);
    ck_assert_msg(!v.null && v.i == hi[c], "row 1 %s = %" PRId64, names[c], v.i);
  }
  ut_store_cell(s, 1, 11, &v);
  const char *uni = "h\xC3\xA9llo w\xC3\xB6rld \xE2\x82\xAC \xF0\x9F\x98\x80";
  ck_assert(v.len == strlen(uni) && memcmp(v.bytes, uni, v.len) == 0);
  ut_store_cell(s, 1, 12, &v);
  ck_assert(v.len == 3 && memcmp(v.bytes, "\0\x01\0", 3) == 0);
  /* Row 2: every nullable column NULL. */
  for (uint32_t c = 1; c < 13; c++) {
    ut_store_cell(s, 2, c, &v);
    ck_assert_msg(v.null, "row 2 %s is not NULL", names[c]);
  }
  /* Row 3: -0.0f keeps its sign, the smallest subnormal double survives. */
  ut_store_cell(s, 3, 8, &v);
  uint32_t f32_bits;
  memcpy(&f32_bits, &v.f32, 4);
  ck_assert_uint_eq(f32_bits, 0x80000000u);
  ut_store_cell(s, 3, 9, &v);
  uint64_t f64_bits;
  memcpy(&f64_bits, &v.f, 8);
  ck_assert_uint_eq(f64_bits, 1);
  cs_store_close(s);
  free(p);
}
END_TEST

/* Old files take new appends: the writer reads what older builds wrote. */
START_TEST(test_every_valid_golden_file_accepts_an_append_and_keeps_its_rows) {
  int n;
  expected_line *v = expected_read("valid", true, &n);
  char *dir = ut_tmpdir();
  for (int k = 0; k < n; k++) {
    char *src = golden_path("valid", v[k].name), *copy = ut_join(dir, v[k].name);
    ut_copy_file(src, copy);
    cs_store *before = ut_open_ok(src, CS_VERIFY_FULL, v[k].name);
    const cs_schema *sc = cs_store_schema(before);
    cs_batch *b;
    cs_err err = {0};
    ck_assert_int_eq(cs_batch_new(sc, &b, &err), CS_OK);
    for (uint32_t c = 0; c < sc->n_cols; c++) {
      cs_type t = sc->cols[c].type;
      cs_rc rc = sc->cols[c].nullable    ? cs_batch_put_null(b, c, &err)
                 : cs_type_is_integer(t) ? cs_batch_put_i64(b, c, 1, &err)
                 : cs_type_is_float(t)   ? cs_batch_put_f64(b, c, 1.0, &err)
                                         : cs_batch_put_bytes(b, c, "x", 1, &err);
      ck_assert_int_eq(rc, CS_OK);
    }
    cs_batch_end_row(b);
    cs_writer *w;
    ck_assert_msg(cs_writer_append(copy, NULL, &w, &err) == CS_OK, "%s: %s", v[k].name, err.msg);
    ck_assert_int_eq(cs_writer_write(w, b, &err), CS_OK);
    ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s: %s", v[k].name, err.msg);
    cs_batch_free(b);
    cs_store *after = ut_open_ok(copy, CS_VERIFY_FULL, v[k].name);
    ck_assert_uint_eq(cs_store_rows(after), v[k].rows + 1);
    ck_assert_uint_eq(cs_store_generation(after), v[k].generation + 1);
    for (uint64_t row = 0; row < v[k].rows; row++)
      for (uint32_t c = 0; c < sc->n_cols; c++) {
        ut_cell x, y;
        ut_store_cell(before, row, c, &x);
        ut_store_cell(after, row, c, &y);
        ck_assert_msg(ut_cell_equal(sc->cols[c].type, &x, &y), "%s: row %" PRIu64 " column %s changed",
                      v[k].name, row, sc->cols[c].name);
      }
    ut_cell last;
    ut_store_cell(after, v[k].rows, 0, &last);
    ck_assert(last.null == sc->cols[0].nullable);
    cs_store_close(after);
    cs_store_close(before);
    free(copy);
    free(src);
  }
  ut_tmpdir_remove(dir);
  free(v);
}
END_TEST

/* Files with patch blocks (format 2): the footer names patched chunks, the
** replaced ones are free space, and the writer patches them again (rows 10
** and 11 take the values of rows 20 and 21) from the chunks older builds
** wrote. */
START_TEST(test_patched_golden_files_take_another_update) {
  static const char *names[] = {"patched_rows.cst", "patched_recovered.cst", "patched_no_slots.cst"};
  char *dir = ut_tmpdir();
  for (int k = 0; k < 3; k++) {
    char *src = golden_path("valid", names[k]), *copy = ut_join(dir, names[k]);
    ut_copy_file(src, copy);
    cs_store *before = ut_open_ok(src, CS_VERIFY_FULL, names[k]);
    ck_assert_uint_eq(cs_store_format_version(before), 2);
    ck_assert_msg(cs_store_free_bytes(before) > 0, "%s: no free space", names[k]);
    const cs_schema *sc = cs_store_schema(before);
    ut_table *vals = ut_table_new(sc);
    for (uint64_t row = 20; row < 22; row++) {
      ut_cell *c = ut_table_add_row(vals);
      for (uint32_t col = 0; col < sc->n_cols; col++) {
        ut_cell x;
        ut_store_cell(before, row, col, &x);
        if (x.null)
          ut_cell_set_null(&c[col]);
        else if (cs_type_is_varlen(sc->cols[col].type))
          ut_cell_set_bytes(&c[col], x.bytes, x.len);
        else
          c[col] = (ut_cell){.i = x.i, .f = x.f, .f32 = x.f32};
      }
    }
    static const uint64_t rows[] = {10, 11};
    ut_update_commit(copy, NULL, rows, 2, vals, NULL);
    cs_store *after = ut_open_ok(copy, CS_VERIFY_FULL, names[k]);
    ck_assert_uint_eq(cs_store_generation(after), cs_store_generation(before) + 1);
    ck_assert(cs_store_free_bytes(after) > cs_store_free_bytes(before));
    for (uint64_t row = 0; row < cs_store_rows(before); row++)
      for (uint32_t c = 0; c < sc->n_cols; c++) {
        ut_cell x, y;
        ut_store_cell(before, row == 10 || row == 11 ? row + 10 : row, c, &x);
        ut_store_cell(after, row, c, &y);
        ck_assert_msg(ut_cell_equal(sc->cols[c].type, &x, &y), "%s: row %" PRIu64 " column %s", names[k], row,
                      sc->cols[c].name);
      }
    ut_layout l;
    ut_layout_read(copy, &l);
    bool patched = false;
    for (uint64_t r = 0; r < l.n_records; r++)
      for (uint32_t c = 0; c < l.n_cols; c++)
        patched |= (ut_layout_chunk(&l, r, c)->flags & CS_CHUNK_ABSOLUTE) != 0;
    ck_assert(patched);
    ut_layout_free(&l);
    cs_store_close(after);
    cs_store_close(before);
    ut_table_free(vals);
    free(copy);
    free(src);
  }
  ut_tmpdir_remove(dir);
}
END_TEST

static Suite *golden_suite(void) {
  Suite *s = suite_create("golden");
  TCase *tc = tcase_create("golden");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_golden_directories_hold_exactly_the_listed_files);
  tcase_add_test(tc, test_every_valid_golden_file_opens_with_full_verify_as_expected);
  tcase_add_test(tc, test_every_corrupt_golden_file_fails_with_its_expected_code);
  tcase_add_test(tc, test_all_types_golden_file_holds_its_known_values);
  tcase_add_test(tc, test_every_valid_golden_file_accepts_an_append_and_keeps_its_rows);
  tcase_add_test(tc, test_patched_golden_files_take_another_update);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(golden_suite()); }
