/*
** make_golden.c - writes the golden stores in tests/data/valid and
** tests/data/corrupt, and their EXPECTED lists.  Not built by CMake.
**
** HOW TO REBUILD THE FILES (from the project root):
**
**   gcc -std=c11 -D_GNU_SOURCE -O1 -fopenmp -Icore -Itests/unit core/cs_*.c \
**       tests/unit/unit_util.c tests/data/make_golden.c \
**       $(pkg-config --cflags --libs check) -lpthread -lm -o /tmp/make_golden
**   /tmp/make_golden tests/data
**
** To see whether the current writer still produces the committed bytes
** without touching them, give it an empty directory instead and compare:
**   mkdir /tmp/gold && /tmp/make_golden /tmp/gold && diff -r -x make_golden.c /tmp/gold tests/data
**
** Output is deterministic (fixed seeds, no timestamps, no temp names in the
** files), so running it twice gives identical bytes; `git status` then shows
** nothing.  Do NOT regenerate the files just because the writer changed:
** golden files exist to prove that files written by an older build still
** open.  Add new files (and lines in EXPECTED) instead; regenerate only for
** a deliberate format version change, and say so in the commit.
**
** Why a Check test: the generator reuses unit_util (reference tables, the
** layout reader, the content digest), whose helpers fail through Check's
** assertions, and srunner turns such a failure into a clear message.  Every
** file is checked as it is made: a valid file must open with
** CS_VERIFY_FULL and hold exactly its reference rows before its digest goes
** into valid/EXPECTED; a corrupt file must fail with the code written next to
** it in corrupt/EXPECTED, so the lists record intent, not whatever the
** reader happened to do.
*/
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit_util.h"

static const char *data_dir;

static char *out_path(const char *sub, const char *name) {
  char *d = ut_join(data_dir, sub), *p = ut_join(d, name);
  free(d);
  return p;
}

/* --------------------------------------------------------- valid stores */

static const cs_column all_cols[] = {
    {"id", CS_TYPE_INT64, false},   {"i8", CS_TYPE_INT8, true},    {"i16", CS_TYPE_INT16, true},
    {"i32", CS_TYPE_INT32, true},   {"i64", CS_TYPE_INT64, true},  {"u8", CS_TYPE_UINT8, true},
    {"u16", CS_TYPE_UINT16, true},  {"u32", CS_TYPE_UINT32, true}, {"f32", CS_TYPE_FLOAT32, true},
    {"f64", CS_TYPE_FLOAT64, true}, {"b", CS_TYPE_BOOL, true},     {"t", CS_TYPE_TEXT, true},
    {"bl", CS_TYPE_BLOB, true},
};
static const cs_schema all_schema = {13, all_cols};

/* The rows check_golden.c spot-checks: 0 minima, 1 maxima, 2 NULLs,
** 3 special floats and multi-byte text; then seeded random rows. */
static ut_table *all_types_table(void) {
  ut_table *t = ut_table_new(&all_schema);
  ut_cell *c = ut_table_add_row(t);
  const int64_t lo[] = {0, INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN, 0, 0, 0};
  const int64_t hi[] = {1, INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX, UINT8_MAX, UINT16_MAX, UINT32_MAX};
  for (int k = 0; k < 8; k++) ut_cell_set_int(&c[k], lo[k]);
  ut_cell_set_float(&c[8], CS_TYPE_FLOAT32, -FLT_MAX);
  ut_cell_set_float(&c[9], CS_TYPE_FLOAT64, -DBL_MAX);
  ut_cell_set_int(&c[10], 0);
  ut_cell_set_bytes(&c[11], "", 0);
  ut_cell_set_bytes(&c[12], "", 0);
  c = ut_table_add_row(t);
  for (int k = 0; k < 8; k++) ut_cell_set_int(&c[k], hi[k]);
  ut_cell_set_float(&c[8], CS_TYPE_FLOAT32, FLT_MAX);
  ut_cell_set_float(&c[9], CS_TYPE_FLOAT64, DBL_MAX);
  ut_cell_set_int(&c[10], 1);
  const char *uni = "h\xC3\xA9llo w\xC3\xB6rld \xE2\x82\xAC \xF0\x9F\x98\x80"; /* héllo wörld € 😀 */
  ut_cell_set_bytes(&c[11], uni, strlen(uni));
  ut_cell_set_bytes(&c[12], "\0\x01\0", 3);
  c = ut_table_add_row(t);
  ut_cell_set_int(&c[0], 2);
  for (int k = 1; k < 13; k++) ut_cell_set_null(&c[k]);
  c = ut_table_add_row(t);
  ut_cell_set_int(&c[0], 3);
  for (int k = 1; k < 8; k++) ut_cell_set_int(&c[k], k);
  ut_cell_set_float(&c[8], CS_TYPE_FLOAT32, -0.0);
  ut_cell_set_float(&c[9], CS_TYPE_FLOAT64, 4.9406564584124654e-324);
  ut_cell_set_null(&c[10]);
  ut_cell_set_bytes(&c[11], "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", 9); /* 日本語 */
  ut_cell_set_null(&c[12]);
  ut_rng r = ut_rng_seed(2024);
  for (int row = 4; row < 40; row++) {
    c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], row);
    for (int k = 1; k < 13; k++) ut_cell_random(&r, all_cols[k].type, true, 200, &c[k]);
  }
  return t;
}

static const cs_column misc_cols[] = {
    {"k", CS_TYPE_INT64, false}, {"v", CS_TYPE_FLOAT32, true}, {"s", CS_TYPE_TEXT, true}};
static const cs_schema misc_schema = {3, misc_cols};

static ut_table *misc_table(uint64_t n, uint64_t seed) {
  ut_table *t = ut_table_new(&misc_schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t row = 0; row < n; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], (int64_t)row);
    ut_cell_random(&r, CS_TYPE_FLOAT32, true, 100, &c[1]);
    if (row % 5 == 4)
      ut_cell_set_null(&c[2]);
    else
      ut_cell_random(&r, CS_TYPE_TEXT, false, 0, &c[2]);
  }
  return t;
}

/* A store of misc rows committed in the given slices: the first in records
** of 8 rows, each append as one record (default record_rows). */
static ut_table *misc_store(const char *path, const uint64_t *slices, int n_slices, uint64_t seed) {
  uint64_t total = 0;
  for (int k = 0; k < n_slices; k++) total += slices[k];
  ut_table *t = misc_table(total, seed);
  unlink(path);
  ut_table_create_store(t, path, slices[0], 8, 0);
  uint64_t at = slices[0];
  for (int k = 1; k < n_slices; k++) ut_table_append_store(t, path, at, slices[k]), at += slices[k];
  return t;
}

typedef struct valid_file {
  const char *name;
  ut_table *table; /* the reference rows */
  uint64_t rows;   /* how many of them the file must show */
} valid_file;

static void record_valid(FILE *list, const valid_file *v) {
  char *path = out_path("valid", v->name);
  cs_store *s = ut_open_ok(path, CS_VERIFY_FULL, v->name);
  ut_assert_store_equals(s, v->table, v->rows, v->name);
  cs_err err = {0};
  ck_assert_msg(cs_store_verify(s, &err) == CS_OK, "%s: %s", v->name, err.msg);
  ck_assert_msg(ut_file_bytes(path) < 64 * 1024, "%s is %" PRIu64 " bytes", v->name, ut_file_bytes(path));
  fprintf(list, "%s %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %016" PRIx64 "\n", v->name, cs_store_rows(s),
          cs_store_records(s), cs_store_generation(s), cs_store_recovered(s) ? 1 : 0, ut_store_digest(s));
  cs_store_close(s);
  free(path);
}

static void crash_after_prepare(const char *path, const ut_table *t, uint64_t first, uint64_t n) {
  cs_batch *b = ut_table_batch(t, first, n);
  pid_t pid = fork();
  ck_assert(pid >= 0);
  if (pid == 0) {
    cs_writer *w;
    cs_err err;
    if (cs_writer_append(path, &(cs_writer_options){.record_rows = 8}, &w, &err) != CS_OK) _exit(2);
    if (cs_writer_write(w, b, &err) != CS_OK || cs_writer_prepare(w, &err) != CS_OK) _exit(3);
    _exit(0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  cs_batch_free(b);
}

/* Deletes rows[0, n) in one committed transaction (format 2). */
static void delete_rows(const char *path, const uint64_t *rows, uint64_t n) {
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_append(path, NULL, &w, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(cs_writer_delete(w, rows, n, NULL, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
}

/* The format-2 store of the golden set: 3 commits of rows, then deletions
** in two transactions, the second superseding a vector of the first. */
static ut_table *deleted_store(const char *path, uint64_t seed) {
  static const uint64_t slices[] = {20, 9, 11};
  static const uint64_t first[] = {0, 3, 17, 21}, second[] = {4, 5, 30, 39, 3};
  ut_table *t = misc_store(path, slices, 3, seed);
  delete_rows(path, first, 4);
  delete_rows(path, second, 5);
  return t;
}

/* The UPDATE store of the golden set (format 2): 3 commits of rows, an
** update of two columns over three records, a deletion, then an update
** that replaces some of the first patches' chunks (one patch left with no
** live chunk, one with some) and puts a NULL into a chunk that had none. */
static ut_table *patched_store(const char *path, uint64_t seed) {
  static const uint64_t slices[] = {20, 9, 11};
  static const uint64_t first[] = {1, 9, 20, 35, 9}, dead[] = {6, 30}, second[] = {2, 20, 39};
  static const uint8_t v_s[] = {0, 1, 1}, v_only[] = {0, 1, 0};
  ut_table *t = misc_store(path, slices, 3, seed);
  ut_table *u = misc_table(5, seed + 100);
  ut_cell_set_float(ut_table_cell(u, 1, 1), CS_TYPE_FLOAT32, -1e30);
  ut_update_commit(path, t, first, 5, u, v_s);
  delete_rows(path, dead, 2);
  ut_cell_set_null(ut_table_cell(u, 2, 1));
  ut_update_commit(path, t, second, 3, u, v_only);
  ut_table_free(u);
  return t;
}

static cs_rc golden_update_txn(cs_writer *w, void *arg, cs_err *err) {
  static const uint64_t rows[] = {0, 13, 21};
  return ut_update_call(w, rows, 3, arg, NULL, err);
}

/* Three stores of make (seeds seed, seed + 1, seed + 2) as v[n, n + 3):
** intact, with a damaged footer (a bounded scan), with both slots zeroed
** (an unbounded scan; the seal proves the last commit).  Returns n + 3. */
static int v2_trio(valid_file *v, int n, const char *const names[3],
                   ut_table *(*make)(const char *, uint64_t), uint64_t seed) {
  static const uint8_t zero[64] = {0};
  for (int k = 0; k < 3; k++, n++) {
    char *p = out_path("valid", names[k]);
    v[n] = (valid_file){names[k], make(p, seed + (uint64_t)k), 40};
    ut_layout l;
    if (k == 1) {
      ut_layout_read(p, &l);
      ut_xor_byte(p, l.slot[l.newest].footer_offset + l.slot[l.newest].footer_bytes / 2, 0xFF);
      ut_layout_free(&l);
    }
    if (k == 2) ut_pwrite(p, CS_SLOT0_OFFSET, zero, 64), ut_pwrite(p, CS_SLOT1_OFFSET, zero, 64);
    free(p);
  }
  return n;
}

static void make_valid(void) {
  valid_file v[32];
  int n = 0;
  char *p;

  p = out_path("valid", "all_types.cst");
  v[n] = (valid_file){"all_types.cst", all_types_table(), 40};
  unlink(p);
  ut_table_create_store(v[n].table, p, 40, 16, 0);
  free(p), n++;

  p = out_path("valid", "empty.cst");
  v[n] = (valid_file){"empty.cst", misc_table(0, 1), 0};
  unlink(p);
  ut_table_create_store(v[n].table, p, 0, 0, 0);
  free(p), n++;

  p = out_path("valid", "one_row.cst");
  v[n] = (valid_file){"one_row.cst", all_types_table(), 1};
  unlink(p);
  ut_table_create_store(v[n].table, p, 1, 0, 0);
  free(p), n++;

  p = out_path("valid", "multi_record.cst");
  v[n] = (valid_file){"multi_record.cst", misc_table(200, 2), 200};
  unlink(p);
  ut_table_create_store(v[n].table, p, 200, 8, 37); /* 8-row records, cut at every write */
  free(p), n++;

  static const uint64_t appended[] = {5, 3, 7, 1, 12};
  p = out_path("valid", "appended.cst");
  v[n] = (valid_file){"appended.cst", misc_store(p, appended, 5, 3), 28};
  free(p), n++;

  /* Footer gone: the file ends at the committed data_end. */
  static const uint64_t two[] = {12, 10};
  p = out_path("valid", "recovered_no_footer.cst");
  v[n] = (valid_file){"recovered_no_footer.cst", misc_store(p, two, 2, 4), 22};
  ut_layout l;
  ut_layout_read(p, &l);
  ut_truncate(p, l.slot[l.newest].data_end);
  ut_layout_free(&l);
  free(p), n++;

  /* Footer damaged in place. */
  p = out_path("valid", "recovered_damaged_footer.cst");
  v[n] = (valid_file){"recovered_damaged_footer.cst", misc_store(p, two, 2, 5), 22};
  ut_layout_read(p, &l);
  ut_xor_byte(p, l.slot[l.newest].footer_offset + l.slot[l.newest].footer_bytes / 2, 0xFF);
  ut_layout_free(&l);
  free(p), n++;

  /* Garbage after the footer, beginning like a record. */
  p = out_path("valid", "torn_tail.cst");
  v[n] = (valid_file){"torn_tail.cst", misc_store(p, two, 2, 6), 22};
  uint8_t junk[200];
  for (int k = 0; k < 200; k++) junk[k] = (uint8_t)(k * 73 + 11);
  memcpy(junk, CS_MAGIC_RECORD, CS_MAGIC_BYTES);
  ut_append_bytes(p, junk, sizeof junk);
  free(p), n++;

  /* A writer died after prepare: records and footer complete, no commit. */
  p = out_path("valid", "uncommitted_tail.cst");
  static const uint64_t one[] = {12};
  v[n] = (valid_file){"uncommitted_tail.cst", misc_store(p, one, 1, 7), 12};
  ut_table *ghost = misc_table(20, 99);
  crash_after_prepare(p, ghost, 0, 20);
  ut_table_free(ghost);
  free(p), n++;

  /* Newest slot damaged: the previous generation is what opens. */
  static const uint64_t three[] = {10, 6, 9};
  p = out_path("valid", "previous_generation.cst");
  v[n] = (valid_file){"previous_generation.cst", misc_store(p, three, 3, 8), 16};
  ut_layout_read(p, &l);
  ut_xor_byte(p, l.slot_offset + 16, 0x01);
  ut_layout_free(&l);
  free(p), n++;

  /* Both slots zeroed: the records are found by a forward scan. */
  p = out_path("valid", "both_slots_damaged.cst");
  v[n] = (valid_file){"both_slots_damaged.cst", misc_store(p, three, 3, 9), 25};
  uint8_t zero[64] = {0};
  ut_pwrite(p, CS_SLOT0_OFFSET, zero, 64);
  ut_pwrite(p, CS_SLOT1_OFFSET, zero, 64);
  free(p), n++;

  /* Format 2: deleted rows, read from the footer, a bounded scan (footer
  ** damaged) and an unbounded scan (both slots gone, the seal proves the
  ** last deleting commit). */
  static const char *const deleted[] = {"deleted_rows.cst", "deleted_recovered.cst", "deleted_no_slots.cst"};
  n = v2_trio(v, n, deleted, deleted_store, 11);

  /* A version-1 store whose first deleting transaction crashed after
  ** prepare: version-2 preamble, no deletion committed. */
  static const uint64_t gone[] = {1, 2, 13};
  p = out_path("valid", "delete_uncommitted.cst");
  v[n] = (valid_file){"delete_uncommitted.cst", misc_store(p, two, 2, 14), 22};
  ut_delete_prepare_in_child(p, gone, 3);
  free(p), n++;

  /* Format 2: updated values (patch blocks), the same three ways; and a
  ** version-1 store whose first updating transaction crashed after
  ** prepare. */
  static const char *const patched[] = {"patched_rows.cst", "patched_recovered.cst", "patched_no_slots.cst"};
  n = v2_trio(v, n, patched, patched_store, 15);

  p = out_path("valid", "update_uncommitted.cst");
  v[n] = (valid_file){"update_uncommitted.cst", misc_store(p, two, 2, 18), 22};
  ut_table *ghost_vals = misc_table(3, 19);
  ut_txn_prepare_in_child(p, golden_update_txn, ghost_vals);
  ut_table_free(ghost_vals);
  free(p), n++;

  char *list_path = out_path("valid", "EXPECTED");
  FILE *list = fopen(list_path, "w");
  ck_assert_ptr_nonnull(list);
  fprintf(list, "# Written by tests/data/make_golden.c; checked by tests/unit/check_golden.c.\n");
  fprintf(list, "# Each file must open with CS_VERIFY_FULL and show exactly this.\n");
  fprintf(list, "# file rows records generation recovered content-digest\n");
  for (int k = 0; k < n; k++) {
    record_valid(list, &v[k]);
    ut_table_free(v[k].table);
  }
  fclose(list);
  free(list_path);
}

/* -------------------------------------------------------- corrupt stores */

typedef struct corrupt_file {
  const char *name;
  cs_rc code;
  const char *why;
} corrupt_file;

/* Every corrupt file starts as this store: 2 commits, 30 rows, 3 records. */
static char *corrupt_base(const char *name, ut_layout *l) {
  char *p = out_path("corrupt", name);
  static const uint64_t two[] = {14, 16};
  ut_table_free(misc_store(p, two, 2, 10));
  ut_layout_read(p, l);
  return p;
}

static void make_corrupt(void) {
  static const corrupt_file files[] = {
      {"truncated.cst", CS_ECORRUPT, "cut inside the committed records"},
      {"bad_magic.cst", CS_ENOTSTORE, "first byte changed"},
      {"not_a_store.cst", CS_ENOTSTORE, "a text file"},
      {"empty_file.cst", CS_ENOTSTORE, "zero bytes"},
      {"crlf_damaged.cst", CS_ENOTSTORE, "\\r\\n in the magic turned into \\n"},
      {"flipped_checksum.cst", CS_ECORRUPT, "one data byte flipped"},
      {"future_version.cst", CS_EVERSION,
       "version 3 (one past what this build reads), preamble checksum recomputed"},
      {"damaged_deletion_vector.cst", CS_ECORRUPT,
       "a byte of a deletion vector's bitmap flipped, footer intact"},
      {"damaged_patch_block.cst", CS_ECORRUPT, "a byte of a patch block's item flipped, footer intact"},
      {"flipped_patched_chunk.cst", CS_ECORRUPT, "one data byte of a patch's chunk flipped"},
      {"footer_past_end.cst", CS_ECORRUPT, "slot data_end/footer_offset past the end, slot resealed"},
      {"damaged_preamble.cst", CS_ECORRUPT, "preamble byte flipped"},
      {"damaged_schema.cst", CS_ECORRUPT, "schema byte flipped"},
      {"damaged_record_header.cst", CS_ECORRUPT, "record header byte flipped, footer intact"},
      {"damaged_footer_and_record.cst", CS_ECORRUPT,
       "footer and a record header damaged: nothing to recover from"},
      {"descriptor_outside_record.cst", CS_ECORRUPT,
       "chunk descriptor points past its record, all checksums resealed"},
      {"text_offsets_out_of_bounds.cst", CS_ECORRUPT, "TEXT offset past the data, chunk checksum resealed"},
  };
  ut_layout l;
  char *p;

  p = corrupt_base("truncated.cst", &l);
  ut_truncate(p, l.entries[2].record_offset + 100);
  ut_layout_free(&l), free(p);

  p = corrupt_base("bad_magic.cst", &l);
  ut_xor_byte(p, 0, 0xFF);
  ut_layout_free(&l), free(p);

  p = out_path("corrupt", "not_a_store.cst");
  ut_write_all(p, "this is not a colstore file\n", 28);
  free(p);

  p = out_path("corrupt", "empty_file.cst");
  ut_write_all(p, "", 0);
  free(p);

  p = corrupt_base("crlf_damaged.cst", &l);
  size_t n;
  uint8_t *all = ut_read_all(p, &n);
  memmove(all + 4, all + 5, n - 5);
  ut_write_all(p, all, n - 1);
  free(all);
  ut_layout_free(&l), free(p);

  p = corrupt_base("flipped_checksum.cst", &l);
  ut_xor_byte(p, ut_layout_data_offset(&l, 1, 0) + 3, 0x01);
  ut_layout_free(&l), free(p);

  p = corrupt_base("future_version.cst", &l);
  l.pre.version = CS_FORMAT_VERSION_MAX + 1;
  ut_preamble_reseal(&l.pre);
  ut_pwrite(p, 0, &l.pre, sizeof l.pre);
  ut_layout_free(&l), free(p);

  p = corrupt_base("damaged_deletion_vector.cst", &l);
  ut_layout_free(&l);
  static const uint64_t dead[] = {2, 20};
  delete_rows(p, dead, 2);
  ut_layout_read(p, &l);
  ck_assert(l.ext[0].dv_offset != 0);
  ut_xor_byte(p, l.ext[0].dv_offset + sizeof(cs_disk_delvec), 0x01);
  ut_layout_free(&l), free(p);

  static const uint64_t changed[] = {3, 17};
  p = corrupt_base("damaged_patch_block.cst", &l);
  ut_layout_free(&l);
  ut_table *vals = misc_table(2, 21);
  ut_update_commit(p, NULL, changed, 2, vals, NULL);
  ut_layout_read(p, &l);
  const cs_disk_chunk *pc = ut_layout_chunk(&l, 0, 1);
  ck_assert(pc->flags & CS_CHUNK_ABSOLUTE);
  ut_xor_byte(p, pc->chunk_offset - pc->patch_back * 64ull + sizeof(cs_disk_patch) + 8,
              0x01); /* item 0's chunk_offset */
  ut_layout_free(&l), free(p);

  p = corrupt_base("flipped_patched_chunk.cst", &l);
  ut_layout_free(&l);
  ut_update_commit(p, NULL, changed, 2, vals, NULL);
  ut_layout_read(p, &l);
  ck_assert(ut_layout_chunk(&l, 2, 0)->flags & CS_CHUNK_ABSOLUTE);
  ut_xor_byte(p, ut_layout_data_offset(&l, 2, 0) + 1, 0x01);
  ut_table_free(vals);
  ut_layout_free(&l), free(p);

  p = corrupt_base("footer_past_end.cst", &l);
  cs_disk_slot s = l.slot[l.newest];
  s.data_end = s.footer_offset = l.file_bytes + 4096;
  ut_slot_reseal(&s);
  ut_pwrite(p, l.slot_offset, &s, sizeof s);
  ut_layout_free(&l), free(p);

  p = corrupt_base("damaged_preamble.cst", &l);
  ut_xor_byte(p, 24, 0x01); /* schema_bytes */
  ut_layout_free(&l), free(p);

  p = corrupt_base("damaged_schema.cst", &l);
  ut_xor_byte(p, l.pre.schema_offset + 9, 0x01); /* a nullable flag */
  ut_layout_free(&l), free(p);

  p = corrupt_base("damaged_record_header.cst", &l);
  ut_xor_byte(p, l.entries[1].record_offset + 16, 0x01); /* n_rows */
  ut_layout_free(&l), free(p);

  p = corrupt_base("damaged_footer_and_record.cst", &l);
  ut_xor_byte(p, l.entries[1].record_offset, 0x01);
  ut_xor_byte(p, l.slot[l.newest].footer_offset + 1, 0x01);
  ut_layout_free(&l), free(p);

  p = corrupt_base("descriptor_outside_record.cst", &l);
  cs_disk_chunk dc = *ut_layout_chunk(&l, 2, 1);
  dc.chunk_offset = l.entries[2].record_bytes;
  ut_layout_set_chunk(p, &l, 2, 1, &dc);
  ut_layout_free(&l), free(p);

  p = corrupt_base("text_offsets_out_of_bounds.cst", &l);
  int64_t big = 1 << 20;
  ut_pwrite(p, ut_layout_offsets_offset(&l, 0, 2) + 8 * 3, &big, 8);
  dc = *ut_layout_chunk(&l, 0, 2);
  uint8_t *span = malloc(dc.chunk_bytes);
  ck_assert_ptr_nonnull(span);
  ut_pread(p, l.entries[0].record_offset + dc.chunk_offset, span, dc.chunk_bytes);
  dc.checksum = cs__hash(span, dc.chunk_bytes);
  free(span);
  ut_layout_set_chunk(p, &l, 0, 2, &dc);
  ut_layout_free(&l), free(p);

  char *list_path = out_path("corrupt", "EXPECTED");
  FILE *list = fopen(list_path, "w");
  ck_assert_ptr_nonnull(list);
  fprintf(list, "# Written by tests/data/make_golden.c; checked by tests/unit/check_golden.c.\n");
  fprintf(list, "# Each file must fail cs_store_open(CS_VERIFY_FULL) with exactly this code.\n");
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    char *path = out_path("corrupt", files[k].name);
    cs_err err = {0};
    cs_rc rc = ut_open_rc(path, CS_VERIFY_FULL, &err);
    ck_assert_msg(rc == files[k].code, "%s: open gave %s (%s), intended %s", files[k].name, cs_rc_name(rc),
                  err.msg, cs_rc_name(files[k].code));
    ck_assert_msg(ut_file_bytes(path) < 64 * 1024, "%s is too big", files[k].name);
    fprintf(list, "%s %s\n", files[k].name, cs_rc_name(files[k].code));
    free(path);
  }
  fclose(list);
  free(list_path);
}

START_TEST(make_golden_files) {
  char *valid = ut_join(data_dir, "valid"), *corrupt = ut_join(data_dir, "corrupt");
  ck_assert_msg(mkdir(valid, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", valid, strerror(errno));
  ck_assert_msg(mkdir(corrupt, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", corrupt, strerror(errno));
  free(valid);
  free(corrupt);
  make_valid();
  make_corrupt();
}
END_TEST

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR   (normally tests/data)\n", argv[0]);
    return 2;
  }
  data_dir = argv[1];
  Suite *s = suite_create("make_golden");
  TCase *tc = tcase_create("make");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, make_golden_files);
  suite_add_tcase(s, tc);
  return ut_run_suite(s);
}
