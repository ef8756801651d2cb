/*
** check_verify.c - cs_store_verify_source, the check behind
** colstore_verify(), names every damaged part exactly once.
**
** Each test damages a store at places it chooses with a fixed seed (bytes
** overwritten at random offsets inside chunks, deletion vectors, patch
** blocks, record headers, descriptors resealed so that only their content
** is wrong), and compares what verify reports with the set it damaged:
** every damaged part named once, with its file, record, column and kind,
** and no intact part named.  Where the places are found comes from
** ut_layout, which reads the format with its own code, not the reader's.
** The limit on the parts listed and the count of the rest are the SQL
** function's (tests/sql/test_checksums.py); core reports every part.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "unit_util.h"

static const cs_column cols[] = {
    {"id", CS_TYPE_INT64, false},
    {"f", CS_TYPE_FLOAT64, true},
    {"s", CS_TYPE_TEXT, true},
};
static const cs_schema schema = {3, cols};
enum { NC = 3 };

/* ------------------------------------------------------ what was found */

typedef struct found_part {
  char path[256];
  cs_damage_kind kind;
  uint64_t record;
  uint32_t column;
  uint64_t first_row, n_rows;
  char msg[512];
} found_part;

typedef struct found {
  found_part *parts;
  uint64_t n, cap;
} found;

static void found_add(void *ctx, const cs_damage *d) {
  found *f = ctx;
  if (f->n == f->cap) {
    f->cap = f->cap ? f->cap * 2 : 16;
    f->parts = realloc(f->parts, f->cap * sizeof *f->parts);
    ck_assert(f->parts != NULL);
  }
  found_part *p = &f->parts[f->n++];
  snprintf(p->path, sizeof p->path, "%s", d->path);
  snprintf(p->msg, sizeof p->msg, "%s", d->msg);
  p->kind = d->kind, p->record = d->record, p->column = d->column;
  p->first_row = d->first_row, p->n_rows = d->n_rows;
}

/* Verifies source; every part the callback saw is in *out (free parts). */
static found verify_all(const char *source, cs_rc want_rc, const char *ctx) {
  found f = {0};
  uint64_t n = 12345;
  cs_err err = {0};
  cs_rc rc = cs_store_verify_source(source, found_add, &f, &n, &err);
  ck_assert_msg(rc == want_rc, "%s: verify gave %s (%s)", ctx, cs_rc_name(rc), err.msg);
  ck_assert_msg(n == f.n, "%s: %" PRIu64 " parts counted but %" PRIu64 " reported", ctx, n, f.n);
  for (uint64_t i = 0; i < f.n; i++)
    ck_assert_msg(strncmp(f.parts[i].msg, "colstore: ", 10) != 0 &&
                      strstr(f.parts[i].msg, f.parts[i].path) == f.parts[i].msg,
                  "%s: part '%s' does not start with its file", ctx, f.parts[i].msg);
  return f;
}

/* The parts f found are exactly the want[0, n) given (path, kind,
** record, column), each once, and each message names its record and
** column. */
typedef struct want_part {
  const char *path;
  cs_damage_kind kind;
  uint64_t record;
  uint32_t column;
} want_part;

static void assert_found_exactly(const found *f, const want_part *want, uint64_t n, const char *ctx) {
  ck_assert_msg(f->n == n, "%s: %" PRIu64 " parts reported, %" PRIu64 " damaged (first: '%s')", ctx, f->n, n,
                f->n ? f->parts[0].msg : "");
  bool *seen = calloc(n ? n : 1, 1);
  for (uint64_t i = 0; i < f->n; i++) {
    const found_part *p = &f->parts[i];
    uint64_t k = 0;
    while (k < n && (strcmp(want[k].path, p->path) || want[k].kind != p->kind ||
                     want[k].record != p->record || want[k].column != p->column))
      k++;
    ck_assert_msg(k < n, "%s: reported a part that is not damaged: '%s' (kind %d)", ctx, p->msg, p->kind);
    ck_assert_msg(!seen[k], "%s: '%s' reported twice", ctx, p->msg);
    seen[k] = true;
    char name[96];
    /* Every store here has records of 8 rows. */
    ck_assert_msg(p->record == CS_DAMAGE_NO_RECORD ? p->first_row == 0 && p->n_rows == 0
                                                   : p->first_row == p->record * 8 && p->n_rows == 8,
                  "%s: '%s' gives rows [%" PRIu64 ", +%" PRIu64 ")", ctx, p->msg, p->first_row, p->n_rows);
    if (p->record != CS_DAMAGE_NO_RECORD) {
      snprintf(name, sizeof name, "record %" PRIu64, p->record);
      ck_assert_msg(strstr(p->msg, name) != NULL, "%s: '%s' does not name %s", ctx, p->msg, name);
    }
    if (p->column != CS_DAMAGE_NO_COLUMN) {
      snprintf(name, sizeof name, "column %s", cols[p->column].name);
      ck_assert_msg(strstr(p->msg, name) != NULL, "%s: '%s' does not name %s", ctx, p->msg, name);
    }
  }
  free(seen);
}

/* ------------------------------------------------------------- damage */

/* n_records records of 8 rows (the writer's smallest). */
static ut_table *make_store(const char *path, uint64_t n_records, uint64_t seed) {
  ut_table *t = ut_random_table(&schema, n_records * 8, 100, seed);
  ut_table_create_store(t, path, n_records * 8, 8, 0);
  return t;
}

/* File offset and size of chunk (rec, col): in its record, or in its
** patch block for an UPDATE's chunk. */
static uint64_t chunk_file_offset(const ut_layout *l, uint64_t rec, uint32_t col) {
  const cs_disk_chunk *dc = ut_layout_chunk(l, rec, col);
  return (dc->flags & CS_CHUNK_ABSOLUTE) ? dc->chunk_offset
                                         : l->entries[rec].record_offset + dc->chunk_offset;
}

/* Overwrites one byte at a random offset inside chunk (rec, col) with a
** different value. */
static void chunk_damage(const char *path, const ut_layout *l, uint64_t rec, uint32_t col, ut_rng *r) {
  const cs_disk_chunk *dc = ut_layout_chunk(l, rec, col);
  ut_xor_byte(path, chunk_file_offset(l, rec, col) + ut_rng_below(r, dc->chunk_bytes),
              (uint8_t)(1 + ut_rng_below(r, 255)));
}

/* k distinct chunks of n_cells, chosen with r (a partial Fisher-Yates). */
static uint64_t *choose_cells(ut_rng *r, uint64_t n_cells, uint64_t k) {
  uint64_t *all = malloc(n_cells * sizeof *all);
  for (uint64_t i = 0; i < n_cells; i++) all[i] = i;
  for (uint64_t i = 0; i < k; i++) {
    uint64_t j = i + ut_rng_below(r, n_cells - i), x = all[i];
    all[i] = all[j], all[j] = x;
  }
  return all;
}

/* ------------------------------------------------------------- chunks */

START_TEST(test_intact_store_reports_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = make_store(sc.path, 8, 1);
  found f = verify_all(sc.path, CS_OK, "intact");
  ck_assert_uint_eq(f.n, 0);
  free(f.parts);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* 1, 2, a few and more than colstore_verify lists (100): each damaged chunk
** named once as a checksum failure, no other. */
START_TEST(test_every_damaged_chunk_is_named_once) {
  static const uint64_t counts[] = {1, 2, 7, 150, 240};
  for (uint64_t seed = 1; seed <= 3; seed++)
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
      uint64_t k = counts[ci];
      char ctx[64];
      snprintf(ctx, sizeof ctx, "seed %" PRIu64 ", %" PRIu64 " chunks", seed, k);
      ut_scratch sc = ut_scratch_new();
      ut_table *t = make_store(sc.path, 80, seed);
      ut_layout l;
      ut_layout_read(sc.path, &l);
      ut_rng r = ut_rng_seed(seed * 1000 + k);
      uint64_t *cells = choose_cells(&r, l.n_records * NC, k);
      want_part *want = calloc(k, sizeof *want);
      for (uint64_t i = 0; i < k; i++) {
        chunk_damage(sc.path, &l, cells[i] / NC, (uint32_t)(cells[i] % NC), &r);
        want[i] = (want_part){sc.path, CS_DAMAGE_CHUNK, cells[i] / NC, (uint32_t)(cells[i] % NC)};
      }
      found f = verify_all(sc.path, CS_OK, ctx);
      assert_found_exactly(&f, want, k, ctx);
      for (uint64_t i = 0; i < f.n; i++)
        ck_assert_msg(
            strstr(f.parts[i].msg, "checksum mismatch") && !strstr(f.parts[i].msg, "colstore_verify()"),
            "%s: '%s'", ctx, f.parts[i].msg);
      /* The first-failure check still stops at the first, with a read's advice. */
      cs_err err = {0};
      ck_assert_int_eq(ut_open_rc(sc.path, CS_VERIFY_FULL, &err), CS_ECORRUPT);
      ck_assert_msg(
          strstr(err.msg, f.parts[0].msg + strlen(sc.path)) && strstr(err.msg, "restore it from a copy"),
          "%s: '%s'", ctx, err.msg);
      free(f.parts);
      free(want);
      free(cells);
      ut_layout_free(&l);
      ut_table_free(t);
      ut_scratch_free(&sc);
    }
}
END_TEST

/* A damaged record header is one part, and the chunks of that record are
** still hashed: an intact one is not named, a damaged one is. */
START_TEST(test_damaged_record_header_hides_no_chunk) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = make_store(sc.path, 6, 4);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  ut_rng r = ut_rng_seed(4);
  ut_xor_byte(sc.path, l.entries[2].record_offset + 20, 0x40); /* header field, under its checksum */
  ut_xor_byte(sc.path, l.entries[4].record_offset + 64 + 5 * 8,
              0x01); /* a descriptor byte: descriptors checksum */
  chunk_damage(sc.path, &l, 2, 1, &r);
  chunk_damage(sc.path, &l, 5, 2, &r);
  const want_part want[] = {{sc.path, CS_DAMAGE_RECORD, 2, CS_DAMAGE_NO_COLUMN},
                            {sc.path, CS_DAMAGE_RECORD, 4, CS_DAMAGE_NO_COLUMN},
                            {sc.path, CS_DAMAGE_CHUNK, 2, 1},
                            {sc.path, CS_DAMAGE_CHUNK, 5, 2}};
  found f = verify_all(sc.path, CS_OK, "headers");
  assert_found_exactly(&f, want, 4, "headers");
  free(f.parts);
  ut_layout_free(&l);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* Descriptors that break 6.4 (resealed, so only their content is wrong)
** are each a part; their chunks are not hashed (their bytes cannot be
** found), every other chunk is. */
START_TEST(test_every_bad_descriptor_is_named_and_the_rest_still_hashed) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = make_store(sc.path, 6, 5);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  ut_rng r = ut_rng_seed(5);
  chunk_damage(sc.path, &l, 0, 0, &r);
  chunk_damage(sc.path, &l, 3, 2, &r);
  cs_disk_chunk dc = *ut_layout_chunk(&l, 1, 0);
  dc.data_bytes += 8; /* no longer the row count */
  ut_layout_set_chunk(sc.path, &l, 1, 0, &dc);
  dc = *ut_layout_chunk(&l, 4, 2);
  dc.chunk_offset += 64 * 1024; /* outside its record */
  ut_layout_set_chunk(sc.path, &l, 4, 2, &dc);
  const want_part want[] = {{sc.path, CS_DAMAGE_DESCRIPTOR, 1, 0},
                            {sc.path, CS_DAMAGE_DESCRIPTOR, 4, 2},
                            {sc.path, CS_DAMAGE_CHUNK, 0, 0},
                            {sc.path, CS_DAMAGE_CHUNK, 3, 2}};
  found f = verify_all(sc.path, CS_OK, "descriptors");
  assert_found_exactly(&f, want, 4, "descriptors");
  free(f.parts);
  ut_layout_free(&l);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------------ format 2 */

/* Two damaged deletion vectors (a bitmap byte, a header byte) are two
** parts; the chunks beside them are still hashed. */
START_TEST(test_every_damaged_deletion_vector_is_named) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    char ctx[32];
    snprintf(ctx, sizeof ctx, "seed %" PRIu64, seed);
    ut_scratch sc = ut_scratch_new();
    ut_table *t = make_store(sc.path, 10, seed);
    static const uint64_t rows[] = {1, 17, 26, 41, 58, 70};
    ut_delete_commit(sc.path, rows, 6); /* records 0, 2, 3, 5, 7, 8 */
    ut_layout l;
    ut_layout_read(sc.path, &l);
    ut_rng r = ut_rng_seed(seed);
    uint64_t a = ut_rng_below(&r, 3), b = 3 + ut_rng_below(&r, 3); /* of the six records with vectors */
    static const uint64_t recs[] = {0, 2, 3, 5, 7, 8};
    uint64_t ra = recs[a], rb = recs[b];
    ck_assert(l.ext[ra].dv_offset && l.ext[rb].dv_offset);
    ut_xor_byte(sc.path, l.ext[ra].dv_offset + 64 + ut_rng_below(&r, 8), 0x80); /* bitmap */
    ut_xor_byte(sc.path, l.ext[rb].dv_offset + 8 + ut_rng_below(&r, 48), 0x04); /* header */
    chunk_damage(sc.path, &l, 9, 1, &r);
    const want_part want[] = {{sc.path, CS_DAMAGE_DELETIONS, ra, CS_DAMAGE_NO_COLUMN},
                              {sc.path, CS_DAMAGE_DELETIONS, rb, CS_DAMAGE_NO_COLUMN},
                              {sc.path, CS_DAMAGE_CHUNK, 9, 1}};
    found f = verify_all(sc.path, CS_OK, ctx);
    assert_found_exactly(&f, want, 3, ctx);
    for (uint64_t i = 0; i < 2; i++)
      ck_assert_msg(strstr(f.parts[i].msg, "deletion vector"), "%s: '%s'", ctx, f.parts[i].msg);
    free(f.parts);
    ut_layout_free(&l);
    ut_table_free(t);
    ut_scratch_free(&sc);
  }
}
END_TEST

/* Two damaged patch blocks are a part each, however many live columns they
** hold; a damaged byte in an intact block's chunk is that chunk's part. */
START_TEST(test_every_damaged_patch_block_is_named_once) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = make_store(sc.path, 6, 6);
  ut_table *u = ut_random_table(&schema, 3, 0, 7);
  static const uint64_t rows[] = {1, 17, 33}; /* records 0, 2, 4 */
  static const uint8_t two[] = {0, 1, 1};
  ut_update_commit(sc.path, t, rows, 3, u, two);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  for (uint64_t rec = 0; rec <= 4; rec += 2)
    for (uint32_t c = 1; c < NC; c++) ck_assert(ut_layout_chunk(&l, rec, c)->flags & CS_CHUNK_ABSOLUTE);
  const cs_disk_chunk *p0 = ut_layout_chunk(&l, 0, 1), *p2 = ut_layout_chunk(&l, 2, 2);
  ut_xor_byte(sc.path, p0->chunk_offset - (uint64_t)p0->patch_back * 64 + 24, 0x10);      /* block header */
  ut_xor_byte(sc.path, p2->chunk_offset - (uint64_t)p2->patch_back * 64 + 64 + 40, 0x10); /* an item */
  ut_rng r = ut_rng_seed(6);
  chunk_damage(sc.path, &l, 4, 2, &r); /* in record 4's intact block */
  chunk_damage(sc.path, &l, 3, 1, &r); /* a record's own chunk */
  const want_part want[] = {{sc.path, CS_DAMAGE_PATCH, 0, CS_DAMAGE_NO_COLUMN},
                            {sc.path, CS_DAMAGE_PATCH, 2, CS_DAMAGE_NO_COLUMN},
                            {sc.path, CS_DAMAGE_CHUNK, 4, 2},
                            {sc.path, CS_DAMAGE_CHUNK, 3, 1}};
  found f = verify_all(sc.path, CS_OK, "patches");
  assert_found_exactly(&f, want, 4, "patches");
  for (uint64_t i = 0; i < 2; i++)
    ck_assert_msg(strstr(f.parts[i].msg, "patch block"), "'%s'", f.parts[i].msg);
  free(f.parts);
  ut_layout_free(&l);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------- what stops a file */

/* A damaged preamble or schema makes the file unreadable: one part, what it
** is, and nothing else of that file (its chunks cannot be found). */
START_TEST(test_unreadable_file_is_one_part_saying_what) {
  static const struct {
    uint64_t off;
    const char *says;
  } cases[] = {{20, "header checksum"}, {1536 + 4, "schema block is damaged"}};
  for (size_t i = 0; i < 2; i++) {
    ut_scratch sc = ut_scratch_new();
    ut_table *t = make_store(sc.path, 4, 8);
    ut_layout l;
    ut_layout_read(sc.path, &l);
    ut_rng r = ut_rng_seed(8);
    chunk_damage(sc.path, &l, 1, 1, &r);
    ut_xor_byte(sc.path, cases[i].off, 0x01);
    const want_part want[] = {{sc.path, CS_DAMAGE_FILE, CS_DAMAGE_NO_RECORD, CS_DAMAGE_NO_COLUMN}};
    found f = verify_all(sc.path, CS_OK, cases[i].says);
    assert_found_exactly(&f, want, 1, cases[i].says);
    ck_assert_msg(strstr(f.parts[0].msg, cases[i].says), "'%s'", f.parts[0].msg);
    free(f.parts);
    ut_layout_free(&l);
    ut_table_free(t);
    ut_scratch_free(&sc);
  }
}
END_TEST

START_TEST(test_what_is_not_damage_is_an_error) {
  ut_scratch sc = ut_scratch_new();
  found f = verify_all(sc.path, CS_ENOENT, "missing");
  ck_assert_uint_eq(f.n, 0);
  ut_write_all(sc.path, "hello, not a store at all, but long enough to have a preamble's room ......", 76);
  f = verify_all(sc.path, CS_ENOTSTORE, "not a store");
  ck_assert_uint_eq(f.n, 0);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------------- datasets */

/* Every member file is verified: damage in the first and the last is
** named with each file's path; an intact dataset reports nothing, and
** intact files of different schemas are CS_ESCHEMA. */
START_TEST(test_dataset_names_every_damaged_file) {
  ut_scratch sc = ut_scratch_new();
  char *paths[3];
  ut_table *ts[3];
  ut_layout ls[3];
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "p%d.cst", i);
    paths[i] = ut_join(sc.dir, name);
    ts[i] = make_store(paths[i], 5, 20 + (uint64_t)i);
    ut_layout_read(paths[i], &ls[i]);
  }
  found f = verify_all(sc.dir, CS_OK, "intact dataset");
  ck_assert_uint_eq(f.n, 0);
  ut_rng r = ut_rng_seed(20);
  chunk_damage(paths[0], &ls[0], 1, 0, &r);
  chunk_damage(paths[0], &ls[0], 4, 2, &r);
  chunk_damage(paths[2], &ls[2], 0, 1, &r);
  const want_part want[] = {{paths[0], CS_DAMAGE_CHUNK, 1, 0},
                            {paths[0], CS_DAMAGE_CHUNK, 4, 2},
                            {paths[2], CS_DAMAGE_CHUNK, 0, 1}};
  f = verify_all(sc.dir, CS_OK, "dataset");
  assert_found_exactly(&f, want, 3, "dataset");
  free(f.parts);
  /* A pattern names the same files. */
  char *pattern = ut_join(sc.dir, "p*.cst");
  f = verify_all(pattern, CS_OK, "pattern");
  assert_found_exactly(&f, want, 3, "pattern");
  free(f.parts);
  free(pattern);
  /* Intact files that are not one dataset. */
  static const cs_column other_cols[] = {{"x", CS_TYPE_INT32, false}};
  static const cs_schema other = {1, other_cols};
  ut_table *o = ut_random_table(&other, 4, 0, 9);
  char *odir = ut_join(sc.dir, "other");
  ck_assert_int_eq(mkdir(odir, 0700), 0);
  char *a = ut_join(odir, "a.cst"), *b = ut_join(odir, "b.cst");
  ut_copy_file(paths[1], a);
  ut_table_create_store(o, b, 4, 4, 0);
  f = verify_all(odir, CS_ESCHEMA, "schemas differ");
  ck_assert_uint_eq(f.n, 0);
  free(a), free(b), free(odir);
  ut_table_free(o);
  for (int i = 0; i < 3; i++) {
    ut_layout_free(&ls[i]);
    ut_table_free(ts[i]);
    free(paths[i]);
  }
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------------------ main */

static Suite *verify_suite(void) {
  Suite *s = suite_create("verify");
  TCase *tc = tcase_create("report");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_intact_store_reports_nothing);
  tcase_add_test(tc, test_every_damaged_chunk_is_named_once);
  tcase_add_test(tc, test_damaged_record_header_hides_no_chunk);
  tcase_add_test(tc, test_every_bad_descriptor_is_named_and_the_rest_still_hashed);
  tcase_add_test(tc, test_every_damaged_deletion_vector_is_named);
  tcase_add_test(tc, test_every_damaged_patch_block_is_named_once);
  tcase_add_test(tc, test_unreadable_file_is_one_part_saying_what);
  tcase_add_test(tc, test_what_is_not_damage_is_an_error);
  tcase_add_test(tc, test_dataset_names_every_damaged_file);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(verify_suite()); }
