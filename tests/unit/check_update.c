/*
** check_update.c - values changed in place (format 2, docs/format.md 14.4):
** cs_writer_update and its patch blocks, the reader's patched chunks (from
** the footer, a bounded scan and an unbounded scan), crash and rollback,
** damage, the upgrade of a version-1 file, and every core read kernel over
** a patched store.
**
** Two references.  The values: a ut_table model, updated by hand the way
** the API says (each named column of each named position takes the batch
** row's value, the last call and the last duplicate winning), compared
** cell by cell.  The chunks: a store written fresh, by the same writer,
** with the model's values in the same record boundaries (and the same
** deletions); every patched chunk's null count, zone map, sorted flag and
** data size must equal that fresh chunk's, and every kernel must give the
** same answer on both.  So a stale zone map (a record skipped although a
** new value matches) or a stale sorted flag shows as a difference.
**
** Free space has its own, independent count: every byte of the data
** region is a record, a deletion vector or a patch (header and chunks), so
** what no live descriptor or vector uses must be the footer's free_bytes;
** assert_free_bytes adds the live parts up from the layout, read with the
** test's own parser.
**
** Crash points are made as check_delete makes them (a forked child that
** prepares and _exits).  No OpenMP region runs outside a test body.
*/
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit_util.h"

/* --------------------------------------------------------------- helpers */

static const cs_column all_cols[] = {
    {"id", CS_TYPE_INT64, false},   {"i8", CS_TYPE_INT8, true},    {"i16", CS_TYPE_INT16, true},
    {"i32", CS_TYPE_INT32, true},   {"i64", CS_TYPE_INT64, true},  {"u8", CS_TYPE_UINT8, true},
    {"u16", CS_TYPE_UINT16, true},  {"u32", CS_TYPE_UINT32, true}, {"f32", CS_TYPE_FLOAT32, true},
    {"f64", CS_TYPE_FLOAT64, true}, {"b", CS_TYPE_BOOL, true},     {"t", CS_TYPE_TEXT, true},
    {"bl", CS_TYPE_BLOB, true},     {"nn_t", CS_TYPE_TEXT, false}, {"nn_f32", CS_TYPE_FLOAT32, false},
};
#define ALL_COLS 15
static const cs_schema all_schema = {ALL_COLS, all_cols};

static const cs_column small_cols[] = {
    {"k", CS_TYPE_INT64, false}, {"v", CS_TYPE_INT32, true}, {"s", CS_TYPE_TEXT, true}};
static const cs_schema small_schema = {3, small_cols};

/* The footer's free_bytes against the test's own count: the data region
** less every byte a live descriptor, a live vector or a live patch header
** uses (records are their header plus their own chunks, back to back). */
static void assert_free_bytes(const char *path, const char *ctx) {
  ut_layout l;
  ut_layout_read(path, &l);
  uint32_t nc = l.n_cols;
  uint64_t used = 0, *blocks = calloc(l.n_records * nc + 1, sizeof *blocks), n_blocks = 0;
  cs_disk_chunk *own = calloc(nc, sizeof *own);
  ck_assert(blocks && own);
  for (uint64_t r = 0; r < l.n_records; r++) {
    used += l.entries[r].record_bytes;
    ut_pread(path, l.entries[r].record_offset + sizeof(cs_disk_record), own, nc * sizeof *own);
    for (uint32_t c = 0; c < nc; c++) {
      const cs_disk_chunk *dc = ut_layout_chunk(&l, r, c);
      if (!(dc->flags & CS_CHUNK_ABSOLUTE)) continue;
      used += dc->chunk_bytes - own[c].chunk_bytes;
      uint64_t b = dc->chunk_offset - (uint64_t)dc->patch_back * 64, k = 0;
      while (k < n_blocks && blocks[k] != b) k++;
      if (k == n_blocks) blocks[n_blocks++] = b;
    }
    if (l.ext[r].dv_offset) used += cs__delvec_block_bytes(l.entries[r].n_rows);
  }
  for (uint64_t k = 0; k < n_blocks; k++) {
    cs_disk_patch h;
    ut_pread(path, blocks[k], &h, sizeof h);
    ck_assert_msg(memcmp(h.magic, CS_MAGIC_PATCH, 8) == 0, "%s: no patch block at %" PRIu64, ctx, blocks[k]);
    used += h.header_bytes;
  }
  uint64_t region = l.slot[l.newest].data_end - l.pre.data_offset;
  ck_assert_msg(used <= region, "%s: %" PRIu64 " bytes used in a region of %" PRIu64, ctx, used, region);
  ck_assert_msg(l.footer_ext.free_bytes == region - used, "%s: free_bytes %" PRIu64 ", counted %" PRIu64, ctx,
                l.footer_ext.free_bytes, region - used);
  free(blocks), free(own);
  ut_layout_free(&l);
}

/* The store at path holds t's rows (with deletions del, or none), verifies
** in full, counts its free space right, and its chunks are those of a
** fresh store of the same values. */
static void assert_state(const char *path, const ut_table *t, const bool *del, const char *ctx) {
  cs_store *s = ut_open_ok(path, CS_VERIFY_FULL, ctx);
  ut_assert_store_equals(s, t, t->n_rows, ctx);
  for (uint64_t row = 0; row < t->n_rows; row++)
    if (cs_store_row_deleted(s, row) != (del && del[row]))
      ck_abort_msg("%s: row %" PRIu64 " deleted differs", ctx, row);
  char *fp =
      ut_join(getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", "check_update_fresh.cst");
  char pid_path[512];
  snprintf(pid_path, sizeof pid_path, "%s.%d", fp, (int)getpid());
  cs_store *f = ut_store_fresh_like(s, t, del, pid_path);
  ut_assert_chunks_like(s, f, ctx);
  cs_store_close(f);
  unlink(pid_path);
  free(fp);
  ck_assert_uint_eq(cs_store_format_version(s), 2);
  cs_store_close(s);
  assert_free_bytes(path, ctx);
}

/* ------------------------------------------------------------ every type */

/* Row i of a values table: the edges of every type. */
static ut_table *edge_values(void) {
  ut_table *u = ut_table_new(&all_schema);
  static const double fl[] = {
      -0.0, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, FLT_MAX, -DBL_MAX, 4.9406564584124654e-324, 0.5};
  char *long_text = malloc(5000);
  ck_assert_ptr_nonnull(long_text);
  for (int k = 0; k < 5000; k++) long_text[k] = (char)('a' + k % 26);
  for (int row = 0; row < 8; row++) {
    ut_cell *c = ut_table_add_row(u);
    ut_cell_set_int(&c[0], 1000 + row);
    for (int k = 1; k <= 7; k++) {
      int64_t lo, hi;
      cs_type_int_range(all_cols[k].type, &lo, &hi);
      if (row == 0)
        ut_cell_set_int(&c[k], lo);
      else if (row == 1)
        ut_cell_set_int(&c[k], hi);
      else if (row == 2)
        ut_cell_set_null(&c[k]);
      else
        ut_cell_set_int(&c[k], row % 2 ? lo + row : hi - row);
    }
    ut_cell_set_float(&c[8], CS_TYPE_FLOAT32, fl[row]);
    ut_cell_set_float(&c[9], CS_TYPE_FLOAT64, fl[7 - row]);
    if (row == 2) ut_cell_set_null(&c[8]), ut_cell_set_null(&c[9]);
    if (row == 4)
      ut_cell_set_null(&c[10]);
    else
      ut_cell_set_int(&c[10], row & 1);
    if (row == 0)
      ut_cell_set_bytes(&c[11], "", 0);
    else if (row == 1)
      ut_cell_set_bytes(&c[11], long_text, 5000);
    else if (row == 2)
      ut_cell_set_null(&c[11]);
    else
      ut_cell_set_bytes(&c[11], "h\xC3\xA9llo \xF0\x9F\x98\x80", 10);
    if (row == 3)
      ut_cell_set_null(&c[12]);
    else
      ut_cell_set_bytes(&c[12], "\0\x01\0\xff", (uint64_t)row % 5);
    ut_cell_set_bytes(&c[13], row == 5 ? "" : long_text, row == 5 ? 0 : 100 + (uint64_t)row);
    ut_cell_set_float(&c[14], CS_TYPE_FLOAT32, fl[row]);
  }
  free(long_text);
  return u;
}

START_TEST(test_update_every_type_with_its_edges) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&all_schema, 60, 100, 1);
  ut_table_create_store(t, sc.path, 60, 16, 0);
  ck_assert_uint_eq(ut_file_version(sc.path), 1);
  ut_table *u = edge_values();
  /* Spread over three of the four records; rows 17 and 40 twice (the
  ** second time wins). */
  static const uint64_t rows[] = {0, 15, 17, 31, 40, 59, 17, 40};
  ut_update_commit(sc.path, t, rows, 8, u, NULL);
  ck_assert_uint_eq(ut_file_version(sc.path), 2); /* the first update upgrades */
  assert_state(sc.path, t, NULL, "every type");
  /* Only some columns: the others keep their values. */
  ut_table *u2 = ut_random_table(&all_schema, 5, 300, 2);
  static const uint64_t rows2[] = {16, 1, 2, 47, 17};
  static const uint8_t some[ALL_COLS] = {0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 0};
  ut_update_commit(sc.path, t, rows2, 5, u2, some);
  assert_state(sc.path, t, NULL, "some columns");
  ut_table_free(u2);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* A NULL into a chunk that had none gives it a bitmap; the last NULL of a
** chunk replaced by a value takes it away (6.3: no all-ones bitmap). */
START_TEST(test_nulls_come_and_go_with_their_bitmap) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 24, 0, 3);
  ut_cell_set_null(ut_table_cell(t, 9, 1));
  ut_table_create_store(t, sc.path, 24, 8, 0);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  ck_assert(ut_layout_chunk(&l, 0, 1)->validity_offset == 0 &&
            ut_layout_chunk(&l, 1, 1)->validity_offset != 0);
  ut_layout_free(&l);
  ut_table *u = ut_random_table(&small_schema, 2, 0, 4);
  ut_cell_set_null(ut_table_cell(u, 0, 1)), ut_cell_set_null(ut_table_cell(u, 0, 2));
  static const uint64_t rows[] = {3, 9};
  static const uint8_t cols[] = {0, 1, 1};
  ut_update_commit(sc.path, t, rows, 2, u, cols);
  assert_state(sc.path, t, NULL, "nulls");
  ut_layout_read(sc.path, &l);
  const cs_disk_chunk *a = ut_layout_chunk(&l, 0, 1), *b = ut_layout_chunk(&l, 1, 1);
  ck_assert(a->flags & CS_CHUNK_ABSOLUTE && b->flags & CS_CHUNK_ABSOLUTE);
  ck_assert(a->validity_offset != 0 && a->null_count == 1);
  ck_assert(b->validity_offset == 0 && b->null_count == 0);
  ck_assert(!(ut_layout_chunk(&l, 0, 0)->flags & CS_CHUNK_ABSOLUTE)); /* column k untouched */
  ck_assert(!(ut_layout_chunk(&l, 2, 1)->flags & CS_CHUNK_ABSOLUTE)); /* record 2 untouched */
  ut_layout_free(&l);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------- random updates, repeated */

/* Random calls over random positions and column subsets, several per
** transaction, over several transactions (each its own check), then a
** delete and an append in the same transaction as updates. */
START_TEST(test_random_updates_match_the_model) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&all_schema, 150, 80, 5);
  ut_table_create_store(t, sc.path, 100, 24, 0);
  ut_table_append_store(t, sc.path, 100, 50);                 /* irregular records */
  ut_table *extra = ut_random_table(&all_schema, 30, 80, 55); /* appended later */
  ut_rng r = ut_rng_seed(6);
  bool del[180] = {0};
  for (int txn = 0; txn < 6; txn++) {
    cs_writer *w;
    cs_err err = {0};
    ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
    int calls = 1 + (int)ut_rng_below(&r, 3);
    for (int k = 0; k < calls; k++) {
      uint64_t n = 1 + ut_rng_below(&r, 40), rows[40];
      for (uint64_t i = 0; i < n; i++) {
        do rows[i] = ut_rng_below(&r, 150);
        while (del[rows[i]]);
      }
      uint8_t cols[ALL_COLS];
      for (int c = 0; c < ALL_COLS; c++) cols[c] = ut_rng_below(&r, 3) == 0;
      ut_table *u = ut_random_table(&all_schema, n, 150, 100 + (uint64_t)txn * 10 + (uint64_t)k);
      ck_assert_msg(ut_update_call(w, rows, n, u, cols, &err) == CS_OK, "%s", err.msg);
      ut_table_update(t, rows, n, u, cols);
      ut_table_free(u);
    }
    if (txn == 4) {
      /* Update, delete and append in one transaction: a row updated then
      ** deleted ends deleted, the appended rows are new. */
      uint64_t dead[3] = {7, 60, 149};
      for (int i = 0; i < 3; i++) del[dead[i]] = true;
      ck_assert(cs_writer_delete(w, dead, 3, NULL, &err) == CS_OK);
      cs_batch *b = ut_table_batch(extra, 0, 30);
      ck_assert(cs_writer_write(w, b, &err) == CS_OK);
      cs_batch_free(b);
      uint64_t at[30];
      for (uint64_t i = 0; i < 30; i++) at[i] = t->n_rows, ut_table_add_row(t);
      ut_table_update(t, at, 30, extra, NULL);
    }
    ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
    char ctx[64];
    snprintf(ctx, sizeof ctx, "transaction %d", txn);
    assert_state(sc.path, t, del, ctx);
  }
  ut_table_free(extra);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* The same record patched again and again: each patch starts from the live
** chunk (the previous patch's), the replaced chunks and the emptied patch
** headers are free space, and a patch that keeps a live chunk keeps its
** header. */
START_TEST(test_repeated_updates_of_one_record_count_their_free_space) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 16, 100, 7);
  ut_table_create_store(t, sc.path, 16, 16, 0);
  static const uint8_t v_only[] = {0, 1, 0}, s_only[] = {0, 0, 1}, both[] = {0, 1, 1};
  const uint8_t *cols[] = {both, v_only, v_only, s_only, both, NULL};
  uint64_t free_before = 0;
  for (int k = 0; k < 6; k++) {
    ut_table *u = ut_random_table(&small_schema, 3, 200, 20 + (uint64_t)k);
    uint64_t rows[3] = {(uint64_t)k, 15 - (uint64_t)k, (uint64_t)k};
    ut_update_commit(sc.path, t, rows, 3, u, cols[k]);
    ut_table_free(u);
    char ctx[32];
    snprintf(ctx, sizeof ctx, "round %d", k);
    assert_state(sc.path, t, NULL, ctx);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_HEADER, ctx);
    ck_assert_msg(cs_store_free_bytes(s) > free_before || k == 0, "%s: free space did not grow", ctx);
    free_before = cs_store_free_bytes(s);
    cs_store_close(s);
  }
  /* Several calls in one transaction: one patch block, the last values. */
  cs_writer *w;
  cs_err err = {0};
  ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
  for (int k = 0; k < 4; k++) {
    ut_table *u = ut_random_table(&small_schema, 2, 300, 40 + (uint64_t)k);
    uint64_t rows[2] = {5, (uint64_t)k};
    ck_assert(ut_update_call(w, rows, 2, u, k & 1 ? v_only : both, &err) == CS_OK);
    ut_table_update(t, rows, 2, u, k & 1 ? v_only : both);
    ut_table_free(u);
  }
  uint64_t end_before = ut_file_bytes(sc.path);
  ck_assert(cs_writer_commit(w, &err) == CS_OK);
  assert_state(sc.path, t, NULL, "one transaction");
  ut_layout l;
  ut_layout_read(sc.path, &l);
  cs_disk_patch h;
  ut_pread(sc.path, ut_layout_chunk(&l, 0, 1)->chunk_offset - ut_layout_chunk(&l, 0, 1)->patch_back * 64ull,
           &h, sizeof h);
  ck_assert_uint_eq(h.n_chunks, 2);
  ck_assert_uint_eq(h.generation, 8);
  ut_layout_free(&l);
  ck_assert(ut_file_bytes(sc.path) > end_before);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_calls_with_no_column_write_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 20, 100, 8);
  ut_table_create_store(t, sc.path, 20, 8, 0);
  ut_copy_file(sc.path, sc.copy);
  ut_table *u = ut_random_table(&small_schema, 2, 0, 9);
  static const uint64_t rows[] = {1, 19};
  static const uint8_t none[] = {0, 0, 0};
  ut_update_commit(sc.path, NULL, rows, 2, u, none);
  ut_update_commit(sc.path, NULL, rows, 0, u, NULL);
  ck_assert(ut_files_equal(sc.path, sc.copy));
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------------ invalid */

START_TEST(test_invalid_updates_change_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 30, 100, 10);
  ut_table_create_store(t, sc.path, 30, 8, 0);
  static const uint64_t dead[] = {4};
  ut_delete_commit(sc.path, dead, 1);
  ut_copy_file(sc.path, sc.copy);
  ut_table *u = ut_random_table(&small_schema, 3, 0, 11);
  cs_writer *w;
  cs_err err = {0};
  ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
  cs_batch *more = ut_table_batch(t, 0, 5);
  ck_assert(cs_writer_write(w, more, &err) == CS_OK); /* positions 30..34, this transaction's */
  cs_batch_free(more);
  static const uint64_t del_row[] = {1, 4}, past[] = {2, 30}, far[] = {UINT64_MAX}, fresh_del[] = {9};
  ck_assert_int_eq(ut_update_call(w, del_row, 2, u, NULL, &err), CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "row 4") && strstr(err.msg, "deleted"), "%s", err.msg);
  ck_assert_int_eq(ut_update_call(w, past, 2, u, NULL, &err), CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "row 30") && strstr(err.msg, "30 committed"), "%s", err.msg);
  ck_assert_int_eq(ut_update_call(w, far, 1, u, NULL, &err), CS_EINVAL);
  ck_assert(cs_writer_delete(w, fresh_del, 1, NULL, &err) == CS_OK);
  ck_assert_int_eq(ut_update_call(w, fresh_del, 1, u, NULL, &err),
                   CS_EINVAL); /* deleted by this transaction */
  /* A batch of another schema, too short, a NULL for a NOT NULL column. */
  cs_batch *b;
  static const cs_column two_cols[] = {{"k", CS_TYPE_INT64, false}, {"v", CS_TYPE_INT32, true}};
  ck_assert(cs_batch_new(&(cs_schema){2, two_cols}, &b, &err) == CS_OK);
  static const uint64_t one[] = {2};
  ck_assert_int_eq(cs_writer_update(w, one, 1, b, NULL, &err), CS_EINVAL);
  cs_batch_free(b);
  static const cs_column other_type[] = {
      {"k", CS_TYPE_INT64, false}, {"v", CS_TYPE_FLOAT64, true}, {"s", CS_TYPE_TEXT, true}};
  ck_assert(cs_batch_new(&(cs_schema){3, other_type}, &b, &err) == CS_OK);
  ck_assert_int_eq(cs_writer_update(w, one, 1, b, NULL, &err), CS_ESCHEMA);
  cs_batch_free(b);
  b = ut_table_batch(u, 0, 1);
  static const uint64_t two[] = {2, 3};
  ck_assert_int_eq(cs_writer_update(w, two, 2, b, NULL, &err), CS_EINVAL);
  cs_batch_free(b);
  cs_batch *nb;
  ck_assert(cs_batch_new(&small_schema, &nb, &err) == CS_OK);
  ck_assert(cs_batch_put_null(nb, 0, &err) == CS_OK && cs_batch_put_i64(nb, 1, 5, &err) == CS_OK);
  ck_assert(cs_batch_put_bytes(nb, 2, "x", 1, &err) == CS_OK);
  cs_batch_end_row(nb);
  ck_assert_int_eq(cs_writer_update(w, one, 1, nb, NULL, &err), CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "NOT NULL"), "%s", err.msg);
  static const uint8_t not_k[] = {0, 1, 1};
  ck_assert_msg(cs_writer_update(w, one, 1, nb, not_k, &err) == CS_OK, "%s", err.msg); /* k is not changed */
  cs_batch_free(nb);
  cs_writer_abort(w);
  ck_assert(ut_files_equal(sc.path, sc.copy));
  /* After prepare nothing more is taken. */
  ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
  ck_assert(cs_writer_prepare(w, &err) == CS_OK);
  ck_assert_int_eq(ut_update_call(w, one, 1, u, NULL, &err), CS_EINVAL);
  cs_writer_abort(w);
  /* A new store has no committed rows to update. */
  ck_assert(cs_writer_create(sc.copy, &small_schema, &(cs_writer_options){.replace = true}, &w, &err) ==
            CS_OK);
  b = ut_table_batch(t, 0, 3);
  ck_assert(cs_writer_write(w, b, &err) == CS_OK);
  cs_batch_free(b);
  ck_assert_int_eq(ut_update_call(w, one, 1, u, NULL, &err), CS_EINVAL);
  cs_writer_abort(w);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------ crash, rollback */

START_TEST(test_abort_after_prepare_leaves_the_file_byte_identical) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 40, 100, 13);
  ut_table_create_store(t, sc.path, 40, 16, 0);
  ut_table *u = ut_random_table(&small_schema, 3, 100, 14);
  for (int round = 0; round < 2; round++) { /* a version-1 file, then a version-2 one */
    ut_copy_file(sc.path, sc.copy);
    cs_writer *w;
    cs_err err = {0};
    ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
    static const uint64_t rows[] = {4, 20, 39};
    ck_assert(ut_update_call(w, rows, 3, u, NULL, &err) == CS_OK);
    ck_assert_msg(cs_writer_prepare(w, &err) == CS_OK, "%s", err.msg);
    cs_writer_abort(w);
    ck_assert_msg(ut_files_equal(sc.path, sc.copy), "round %d: abort changed the file", round);
    static const uint64_t other[] = {0};
    ut_update_commit(sc.path, t, other, 1, u, NULL);
  }
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

typedef struct update_arg {
  const uint64_t *rows;
  uint64_t n;
  const ut_table *vals;
} update_arg;

static cs_rc update_txn(cs_writer *w, void *arg, cs_err *err) {
  const update_arg *a = arg;
  return ut_update_call(w, a->rows, a->n, a->vals, NULL, err);
}

/* A child updates, prepares and dies: the last committed values stay, a
** version-1 file is left version 2 but whole, the next writer goes on. */
START_TEST(test_crash_between_prepare_and_commit_keeps_the_last_committed_values) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 40, 100, 15);
  ut_table_create_store(t, sc.path, 40, 16, 0);
  ut_table *u = ut_random_table(&small_schema, 3, 100, 16);
  for (int round = 0; round < 2; round++) {
    static const uint64_t rows[] = {1, 2, 33};
    ut_txn_prepare_in_child(sc.path, update_txn, &(update_arg){rows, 3, u});
    ck_assert_uint_eq(ut_file_version(sc.path), 2);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "after the crash");
    ut_assert_store_equals(s, t, 40, "after the crash");
    cs_store_close(s);
    const uint64_t next[] = {(uint64_t)round + 10};
    ut_update_commit(sc.path, t, next, 1, u, NULL);
    assert_state(sc.path, t, NULL, "after the next commit");
  }
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* The footer of updating commits torn or gone: the bounded scan finds the
** patches and counts the same free space; both slots gone: the unbounded
** scan keeps the sealed commit, and drops the patch of a prepared one. */
START_TEST(test_forward_scans_rebuild_the_patched_state) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&all_schema, 48, 100, 17);
  ut_table_create_store(t, sc.path, 48, 16, 0);
  ut_table *before = ut_random_table(&all_schema, 48, 100, 17);
  static const uint64_t a[] = {0, 20, 21, 47}, b[] = {22, 0, 5}, dead[] = {30};
  ut_table *u = ut_random_table(&all_schema, 4, 200, 18);
  static const uint8_t some[ALL_COLS] = {1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1};
  ut_update_commit(sc.path, t, a, 4, u, some);
  ut_delete_commit(sc.path, dead, 1);
  ut_table_update(before, a, 4, u, some);
  ut_update_commit(sc.path, t, b, 3, u, NULL);
  bool del[48] = {0};
  del[30] = true;
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "intact");
  uint64_t free_bytes = cs_store_free_bytes(s), digest = ut_store_digest(s);
  cs_store_close(s);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  uint64_t fo = l.slot[l.newest].footer_offset, fb = l.slot[l.newest].footer_bytes;
  ut_layout_free(&l);
  for (int how = 0; how < 3; how++) {
    static const uint8_t zero[64] = {0};
    ut_copy_file(sc.path, sc.copy);
    if (how == 0) ut_xor_byte(sc.copy, fo + fb - 3, 0x40); /* torn footer */
    if (how == 1) ut_truncate(sc.copy, fo);                /* footer gone */
    if (how == 2)
      ut_pwrite(sc.copy, CS_SLOT0_OFFSET, zero, 64), ut_pwrite(sc.copy, CS_SLOT1_OFFSET, zero, 64);
    s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "recovered");
    ck_assert(cs_store_recovered(s));
    ut_assert_store_equals(s, t, 48, "recovered");
    ck_assert_msg(cs_store_free_bytes(s) == free_bytes, "how %d: free %" PRIu64 ", expected %" PRIu64, how,
                  cs_store_free_bytes(s), free_bytes);
    ck_assert_uint_eq(ut_store_digest(s), digest);
    ck_assert(cs_store_row_deleted(s, 30));
    ck_assert_uint_eq(cs_store_generation(s), 4);
    cs_store_close(s);
    if (how == 2) {
      /* Without the seal the newest patch was only prepared. */
      ut_pwrite(sc.copy, fo + fb, zero, 64);
      s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "no slots, no seal");
      ut_assert_store_equals(s, before, 48, "no slots, no seal");
      ck_assert_uint_eq(cs_store_generation(s), 3);
      cs_store_close(s);
    }
  }
  /* A writer on the recovered copy goes on from the scanned state. */
  ut_copy_file(sc.path, sc.copy);
  ut_truncate(sc.copy, fo);
  static const uint64_t c[] = {21};
  ut_update_commit(sc.copy, t, c, 1, u, some);
  assert_state(sc.copy, t, del, "after recovery");
  ut_table_free(u);
  ut_table_free(before);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* A version-1 preamble over a layout-2 footer with patches (which a
** version-2 reader accepts, 14.5): the next writer keeps layout 2, and
** writes the version-2 preamble, instead of a layout-1 footer that cannot
** hold the patched descriptors (found by fuzz_store). */
START_TEST(test_a_version_1_preamble_over_a_patched_footer_stays_layout_2) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 25, 100, 40);
  ut_table_create_store(t, sc.path, 20, 8, 0);
  ut_table *u = ut_random_table(&small_schema, 1, 0, 41);
  static const uint64_t rows[] = {3};
  ut_update_commit(sc.path, t, rows, 1, u, NULL);
  cs_disk_preamble pre;
  ut_pread(sc.path, 0, &pre, sizeof pre);
  pre.version = 1;
  ut_preamble_reseal(&pre);
  ut_pwrite(sc.path, 0, &pre, sizeof pre);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "version-1 preamble");
  ck_assert_uint_eq(cs_store_format_version(s), 1);
  ut_assert_store_equals(s, t, 20, "version-1 preamble");
  cs_store_close(s);
  ut_table_append_store(t, sc.path, 20, 5);
  ck_assert_uint_eq(ut_file_version(sc.path), 2);
  s = ut_open_ok(sc.path, CS_VERIFY_FULL, "after an append");
  ut_assert_store_equals(s, t, 25, "after an append");
  cs_store_close(s);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ----------------------------------------------------------------- damage */

START_TEST(test_damaged_patches_are_corrupt) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 40, 100, 19);
  ut_table_create_store(t, sc.path, 40, 16, 0);
  ut_table *u = ut_random_table(&small_schema, 2, 0, 20);
  static const uint64_t rows[] = {5, 6};
  ut_update_commit(sc.path, t, rows, 2, u, NULL);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  const cs_disk_chunk *dc = ut_layout_chunk(&l, 0, 2);
  uint64_t block = dc->chunk_offset - dc->patch_back * 64ull, data = ut_layout_data_offset(&l, 0, 1);
  /* Header field, header checksum, an item's descriptor: open fails. */
  const uint64_t at[] = {block + 24, block + 60, block + 64 + 96 + 8 + 40};
  for (int k = 0; k < 3; k++) {
    ut_copy_file(sc.path, sc.copy);
    ut_xor_byte(sc.copy, at[k], 0x10);
    cs_err err = {0};
    ck_assert_msg(ut_open_rc(sc.copy, CS_VERIFY_HEADER, &err) == CS_ECORRUPT, "damage %d opened", k);
    ck_assert_msg(strstr(err.msg, "patch"), "damage %d: %s", k, err.msg);
  }
  /* A patched chunk's data: header-level opens, full verification names it,
  ** and an update that must read it refuses. */
  ut_copy_file(sc.path, sc.copy);
  ut_xor_byte(sc.copy, data, 0x01);
  cs_err err = {0};
  ck_assert_int_eq(ut_open_rc(sc.copy, CS_VERIFY_HEADER, &err), CS_OK);
  ck_assert_int_eq(ut_open_rc(sc.copy, CS_VERIFY_FULL, &err), CS_ECORRUPT);
  ck_assert_msg(strstr(err.msg, "column v") && strstr(err.msg, "checksum"), "%s", err.msg);
  cs_store *s = ut_open_ok(sc.copy, CS_VERIFY_READ, "verify=read");
  ck_assert_int_eq(cs_store_check_rows(s, rows, 1, NULL, &err), CS_ECORRUPT);
  cs_store_close(s);
  cs_writer *w;
  ck_assert(cs_writer_append(sc.copy, NULL, &w, &err) == CS_OK);
  ck_assert(ut_update_call(w, rows, 1, u, NULL, &err) == CS_OK);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_ECORRUPT);
  /* A footer descriptor that leads to the wrong place, resealed. */
  for (int k = 0; k < 2; k++) {
    ut_copy_file(sc.path, sc.copy);
    ut_layout l2;
    ut_layout_read(sc.copy, &l2);
    cs_disk_chunk bad = *ut_layout_chunk(&l2, 0, 1);
    if (k == 0)
      bad.patch_back += 1;
    else
      bad.flags &= ~CS_CHUNK_ABSOLUTE; /* file offsets read as record offsets */
    uint32_t nc = l2.n_cols;
    uint8_t *f = malloc(l2.slot[l2.newest].footer_bytes);
    ck_assert_ptr_nonnull(f);
    cs_disk_slot slot = l2.slot[l2.newest];
    ut_pread(sc.copy, slot.footer_offset, f, slot.footer_bytes);
    memcpy(f + ut_layout_head_bytes(&l2) + sizeof(cs_disk_entry) + sizeof(cs_disk_entry_ext) +
               1 * sizeof(cs_disk_chunk),
           &bad, sizeof bad);
    (void)nc;
    cs_disk_footer *fh = (cs_disk_footer *)(void *)f;
    fh->checksum = cs__hash_seeded(f + sizeof *fh, slot.footer_bytes - sizeof *fh, cs__hash(fh, 56));
    slot.footer_checksum = cs__hash(f, slot.footer_bytes);
    ut_slot_reseal(&slot);
    ut_pwrite(sc.copy, slot.footer_offset, f, slot.footer_bytes);
    ut_pwrite(sc.copy, l2.slot_offset, &slot, sizeof slot);
    free(f);
    ut_layout_free(&l2);
    ck_assert_msg(ut_open_rc(sc.copy, CS_VERIFY_HEADER, &err) == CS_ECORRUPT, "bad descriptor %d opened", k);
  }
  ut_layout_free(&l);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ----------------------------------------- snapshots, cache and datasets */

START_TEST(test_snapshots_cache_and_datasets) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 50, 100, 21),
           *old = ut_random_table(&small_schema, 50, 100, 21);
  ut_table_create_store(t, sc.path, 50, 16, 0);
  ut_table *t2 = ut_random_table(&small_schema, 30, 100, 22);
  ut_table_create_store(t2, sc.copy, 30, 8, 0);
  cs_store *snap = ut_open_ok(sc.path, CS_VERIFY_HEADER, "snapshot"), *m;
  cs_err err = {0};
  ck_assert_msg(cs_store_open_with(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY, &m, &err) == CS_OK, "%s",
                err.msg);
  ut_table *u = ut_random_table(&small_schema, 3, 100, 23);
  static const uint64_t rows[] = {2, 17, 49};
  ut_update_commit(sc.path, t, rows, 3, u, NULL);
  /* The snapshot opened before keeps its values. */
  ut_assert_store_equals(snap, old, 50, "old snapshot");
  bool current = true;
  ck_assert(cs_store_is_current(snap, &current, &err) == CS_OK && !current);
  cs_store_close(snap);
  /* cache=memory: reopened after the update, it reuses its copy and reads
  ** the patches from the new bytes. */
  cs_store *m2;
  ck_assert_msg(cs_store_reopen(m, CS_VERIFY_FULL, &m2, &err) == CS_OK, "%s", err.msg);
  ut_assert_store_equals(m, old, 50, "cache=memory before");
  ut_assert_store_equals(m2, t, 50, "cache=memory after");
  cs_store_close(m2), cs_store_close(m);
  ck_assert_msg(cs_store_open_with(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY, &m, &err) == CS_OK, "%s",
                err.msg);
  ut_assert_store_equals(m, t, 50, "cache=memory");
  cs_store_close(m);
  /* A dataset of a patched and a plain file. */
  static const uint64_t rows2[] = {29};
  ut_update_commit(sc.copy, t2, rows2, 1, u, NULL);
  const char *paths[] = {sc.path, sc.copy};
  cs_store *d;
  ck_assert_msg(cs_store_open_dataset(paths, 2, CS_VERIFY_FULL, &d, &err) == CS_OK, "%s", err.msg);
  ck_assert_uint_eq(cs_store_rows(d), 80);
  for (uint64_t row = 0; row < 80; row++)
    for (uint32_t c = 0; c < 3; c++) {
      ut_cell got;
      ut_store_cell(d, row, c, &got);
      const ut_cell *want = row < 50 ? ut_table_cell(t, row, c) : ut_table_cell(t2, row - 50, c);
      if (!ut_cell_equal(small_cols[c].type, &got, want))
        ck_abort_msg("dataset row %" PRIu64 " column %u differs", row, c);
    }
  ck_assert_msg(cs_store_check_chunks(d, 0, cs_store_records(d), NULL, &err) == CS_OK, "%s", err.msg);
  cs_store_close(d);
  ut_table_free(u);
  ut_table_free(t), ut_table_free(old), ut_table_free(t2);
  ut_scratch_free(&sc);
}
END_TEST

/* --------------------------------------------------------------- kernels */

/* A value far above every other: a record whose zone map was not updated
** would be skipped by a predicate only it satisfies. */
START_TEST(test_zone_maps_see_the_new_values) {
  ut_scratch sc = ut_scratch_new();
  static const cs_column cols[] = {
      {"k", CS_TYPE_INT64, false}, {"x", CS_TYPE_INT32, true}, {"f", CS_TYPE_FLOAT64, false}};
  const cs_schema schema = {3, cols};
  ut_table *t = ut_table_new(&schema);
  for (int row = 0; row < 64; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], row), ut_cell_set_int(&c[1], row % 100),
        ut_cell_set_float(&c[2], CS_TYPE_FLOAT64, row * 0.5);
  }
  ut_table_create_store(t, sc.path, 64, 16, 0);
  ut_table *u = ut_table_new(&schema);
  ut_cell *c = ut_table_add_row(u);
  ut_cell_set_int(&c[0], -1), ut_cell_set_int(&c[1], 1000000),
      ut_cell_set_float(&c[2], CS_TYPE_FLOAT64, -5.0);
  static const uint64_t rows[] = {37};
  ut_update_commit(sc.path, t, rows, 1, u, NULL);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "zone maps");
  cs_pred p = {.col = 1, .op = CS_CMP_GT, .a = {.kind = CS_VAL_INT, .i = 500000}};
  uint8_t mask[64];
  cs_pred_stats st;
  cs_pred_eval(s, &p, 1, 0, 64, mask, &st);
  ck_assert_uint_eq(st.rows_selected, 1);
  ck_assert(mask[37]);
  ck_assert_uint_eq(st.records_skipped, 3);
  /* k and f were sorted; record 2 is not any more, nor the column. */
  ck_assert(!(cs_store_chunk(s, 2, 0)->flags & CS_CHUNK_SORTED) &&
            (cs_store_chunk(s, 1, 0)->flags & CS_CHUNK_SORTED));
  cs_column_stats cst;
  cs_store_column_stats(s, 0, &cst);
  ck_assert(!cst.sorted);
  ck_assert_int_eq(cst.min.i, -1);
  cs_store_column_stats(s, 2, &cst);
  ck_assert(cst.min.f == -5.0);
  uint64_t lo, hi;
  cs_pred q = {.col = 0, .op = CS_CMP_LT, .a = {.kind = CS_VAL_INT, .i = 0}};
  ck_assert(!cs_pred_sorted_range(s, &q, &lo, &hi)); /* not sorted: no binary search over it */
  cs_pred_eval(s, &q, 1, 0, 64, mask, &st);
  ck_assert_uint_eq(st.rows_selected, 1);
  cs_store_close(s);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* Every kernel over s (a store of ut_fixed_cols) equals the same kernel
** over f, a store written fresh with its values and deletions: gathers, a
** predicate per column, the selector, ordering, DISTINCT and aggregates
** (random lists and masks from seed). */
static void assert_kernels_like(const cs_store *s, const cs_store *f, uint64_t seed) {
  ut_rng r = ut_rng_seed(seed);
  uint64_t n = cs_store_rows(s);
  uint8_t *m1 = malloc(n), *m2 = malloc(n), *v1 = malloc(n), *v2 = malloc(n), *user = malloc(n);
  uint64_t *r1 = malloc(n * sizeof *r1), *r2 = malloc(n * sizeof *r2), *list = malloc(n * sizeof *list);
  int64_t *o1 = malloc(n * 8), *o2 = malloc(n * 8);
  ck_assert(m1 && m2 && v1 && v2 && user && r1 && r2 && list && o1 && o2);
  for (uint64_t i = 0; i < n; i++) list[i] = ut_rng_below(&r, n), user[i] = ut_rng_below(&r, 3) != 0;
  for (uint32_t c = 0; c < UT_FIXED_COLS; c++) {
    if (cs_type_is_varlen(ut_fixed_cols[c].type)) continue;
    size_t w = cs_type_width(ut_fixed_cols[c].type);
    cs_gather_range(s, c, 0, n, o1, v1);
    cs_gather_range(f, c, 0, n, o2, v2);
    ck_assert_msg(memcmp(o1, o2, n * w) == 0 && memcmp(v1, v2, n) == 0, "gather_range column %u", c);
    cs_gather_rows(s, c, list, n, o1, v1);
    cs_gather_rows(f, c, list, n, o2, v2);
    ck_assert_msg(memcmp(o1, o2, n * w) == 0 && memcmp(v1, v2, n) == 0, "gather_rows column %u", c);
    /* A predicate per column at a value in its range, zone maps in play. */
    ut_cell probe;
    ut_store_cell(f, n / 3, c, &probe);
    cs_pred p = {.col = c, .op = CS_CMP_GE};
    if (probe.null)
      p.op = CS_CMP_NOTNULL;
    else if (cs_type_is_float(ut_fixed_cols[c].type))
      p.a = (cs_value){.kind = CS_VAL_FLOAT, .f = probe.f};
    else
      p.a = (cs_value){.kind = CS_VAL_INT, .i = probe.i};
    cs_pred_stats s1, s2;
    cs_pred_eval(s, &p, 1, 0, n, m1, &s1);
    cs_pred_eval(f, &p, 1, 0, n, m2, &s2);
    ck_assert_msg(memcmp(m1, m2, n) == 0 && s1.rows_selected == s2.rows_selected &&
                      s1.records_skipped == s2.records_skipped,
                  "pred_eval column %u", c);
    /* The selector with a gather of the column and a user mask. */
    cs_selector *q1, *q2;
    cs_err err = {0};
    ck_assert(cs_selector_new(s, &p, 1, &q1, &err) == CS_OK && cs_selector_new(f, &p, 1, &q2, &err) == CS_OK);
    cs_gather_target g1 = {c, o1, v1}, g2 = {c, o2, v2};
    cs_select_batch b1 = {.first = 0,
                          .n = n,
                          .user_mask = user,
                          .mask = m1,
                          .rows = r1,
                          .want_rows = true,
                          .targets = &g1,
                          .n_targets = 1,
                          .max_threads = 1};
    cs_select_batch b2 = b1;
    b2.mask = m2, b2.rows = r2, b2.targets = &g2;
    cs_select_range(q1, &b1);
    cs_select_range(q2, &b2);
    ck_assert_msg(b1.n_selected == b2.n_selected && memcmp(r1, r2, b1.n_selected * 8) == 0 &&
                      memcmp(o1, o2, b1.n_selected * w) == 0,
                  "select_range column %u", c);
    cs_selector_free(q1), cs_selector_free(q2);
    /* Ordering and DISTINCT over the column. */
    cs_order_key key = {c, c & 1};
    uint64_t k1 = 0, k2 = 0;
    ck_assert(cs_order_range(s, &key, 1, CS_ORDER_SORT, 0, n, r1, &k1, 20, &err) == CS_OK);
    ck_assert(cs_order_range(f, &key, 1, CS_ORDER_SORT, 0, n, r2, &k2, 20, &err) == CS_OK);
    ck_assert_msg(k1 == k2 && memcmp(r1, r2, k1 * 8) == 0, "order_range column %u", c);
    memcpy(r1, list, n * 8), memcpy(r2, list, n * 8);
    k1 = k2 = cs_store_filter_deleted(s, r1, n);
    ck_assert_uint_eq(cs_store_filter_deleted(f, r2, n), k1);
    ck_assert(cs_order_rows(s, &key, 1, CS_ORDER_DISTINCT, r1, &k1, CS_ORDER_NO_LIMIT, &err) == CS_OK);
    ck_assert(cs_order_rows(f, &key, 1, CS_ORDER_DISTINCT, r2, &k2, CS_ORDER_NO_LIMIT, &err) == CS_OK);
    ck_assert_msg(k1 == k2 && memcmp(r1, r2, k1 * 8) == 0, "order_rows column %u", c);
    /* Aggregates: count, sum, min, max of the column, grouped by BOOL. */
    unsigned what[UT_FIXED_COLS] = {0};
    what[c] = CS_AGG_COUNT | CS_AGG_SUM | CS_AGG_MIN | CS_AGG_MAX;
    uint32_t keys[] = {9};
    cs_agg_spec spec = {keys, 1, what, 1};
    cs_agg *a1, *a2;
    ck_assert(cs_agg_new(s, &spec, &a1, &err) == CS_OK && cs_agg_new(f, &spec, &a2, &err) == CS_OK);
    ck_assert(cs_agg_add_range(a1, NULL, 0, n, user, &err) == CS_OK &&
              cs_agg_add_range(a2, NULL, 0, n, user, &err) == CS_OK);
    ck_assert_uint_eq(cs_agg_groups(a1), cs_agg_groups(a2));
    for (uint64_t gi = 0; gi < cs_agg_groups(a1); gi++) {
      cs_value key1;
      cs_agg_key(a1, gi, 0, &key1);
      uint64_t g2i = 0;
      for (; g2i < cs_agg_groups(a2); g2i++) {
        cs_value key2;
        cs_agg_key(a2, g2i, 0, &key2);
        if (key2.kind == key1.kind && key2.i == key1.i) break;
      }
      ck_assert(g2i < cs_agg_groups(a2));
      cs_agg_result x, y;
      cs_agg_result_get(a1, gi, c, &x);
      cs_agg_result_get(a2, g2i, c, &y);
      ck_assert_msg(x.count == y.count && x.sum.kind == y.sum.kind && x.min.kind == y.min.kind &&
                        x.max.kind == y.max.kind,
                    "agg column %u", c);
      if (x.count && x.sum.kind == CS_VAL_INT)
        ck_assert(x.sum.i == y.sum.i && x.min.i == y.min.i && x.max.i == y.max.i);
      if (x.count && x.sum.kind == CS_VAL_FLOAT) ck_assert(x.min.f == y.min.f && x.max.f == y.max.f);
      ck_assert_uint_eq(cs_agg_count(a1, gi), cs_agg_count(a2, g2i));
    }
    cs_agg_free(a1), cs_agg_free(a2);
  }
  /* Every column's totals over all rows, no mask: records without deletions
  ** are answered from per-record statistics and zone maps. */
  unsigned what[UT_FIXED_COLS];
  for (uint32_t c = 0; c < UT_FIXED_COLS; c++)
    what[c] =
        CS_AGG_COUNT | CS_AGG_MIN | CS_AGG_MAX | (cs_type_is_varlen(ut_fixed_cols[c].type) ? 0 : CS_AGG_SUM);
  cs_agg_spec spec = {NULL, 0, what, 1};
  cs_agg *a1, *a2;
  cs_err err = {0};
  ck_assert(cs_agg_new(s, &spec, &a1, &err) == CS_OK && cs_agg_new(f, &spec, &a2, &err) == CS_OK);
  ck_assert(cs_agg_add_range(a1, NULL, 0, n, NULL, &err) == CS_OK &&
            cs_agg_add_range(a2, NULL, 0, n, NULL, &err) == CS_OK);
  for (uint32_t c = 0; c < UT_FIXED_COLS; c++) {
    cs_agg_result x, y;
    cs_agg_result_get(a1, 0, c, &x);
    cs_agg_result_get(a2, 0, c, &y);
    ck_assert_msg(x.count == y.count && x.min.kind == y.min.kind && x.max.kind == y.max.kind,
                  "totals column %u", c);
    if (!x.count) continue;
    if (x.min.kind == CS_VAL_INT)
      ck_assert_msg(x.min.i == y.min.i && x.max.i == y.max.i, "totals column %u", c);
    if (x.min.kind == CS_VAL_FLOAT)
      ck_assert_msg(x.min.f == y.min.f && x.max.f == y.max.f, "totals column %u", c);
    if (x.min.kind == CS_VAL_TEXT || x.min.kind == CS_VAL_BLOB)
      ck_assert_msg(x.min.n == y.min.n && x.max.n == y.max.n &&
                        (!x.min.n || memcmp(x.min.p, y.min.p, x.min.n) == 0) &&
                        (!x.max.n || memcmp(x.max.p, y.max.p, x.max.n) == 0),
                    "totals column %u", c);
    if (x.sum.kind == CS_VAL_INT) ck_assert_msg(x.sum.i == y.sum.i, "totals column %u", c);
  }
  cs_agg_free(a1), cs_agg_free(a2);
  free(m1), free(m2), free(v1), free(v2), free(user), free(r1), free(r2), free(list), free(o1), free(o2);
}

/* Every kernel over a patched store (with deletions) equals the same kernel
** over a store written fresh with its values and deletions. */
START_TEST(test_kernels_read_the_new_values) {
  const cs_schema fixed = {UT_FIXED_COLS, ut_fixed_cols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&fixed, 700, 80, 24);
  ut_table_create_store(t, sc.path, 700, 64, 0);
  ut_rng r = ut_rng_seed(25);
  bool del[700] = {0};
  for (int txn = 0; txn < 3; txn++) {
    uint64_t n = 150, rows[150];
    for (uint64_t i = 0; i < n; i++) rows[i] = ut_rng_below(&r, 700);
    uint8_t cols[UT_FIXED_COLS];
    for (int c = 0; c < UT_FIXED_COLS; c++) cols[c] = ut_rng_below(&r, 2);
    ut_table *u = ut_random_table(&fixed, n, 100, 30 + (uint64_t)txn);
    ut_update_commit(sc.path, t, rows, n, u, cols);
    ut_table_free(u);
  }
  uint64_t dead[40];
  for (int i = 0; i < 40; i++) dead[i] = ut_rng_below(&r, 700), del[dead[i]] = true;
  ut_delete_commit(sc.path, dead, 40);
  assert_state(sc.path, t, del, "kernels");
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "kernels"), *f = ut_store_fresh_like(s, t, del, sc.copy);
  assert_kernels_like(s, f, 26);
  cs_store_close(f), cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* --------------------------------------------- the view of pending changes */

/* A copy of t (cells and bytes its own). */
static ut_table *table_copy(const ut_table *t) {
  ut_table *c = ut_table_new(&t->schema);
  for (uint64_t row = 0; row < t->n_rows; row++) {
    ut_cell *dst = ut_table_add_row(c);
    for (uint32_t k = 0; k < t->schema.n_cols; k++) {
      const ut_cell *src = ut_table_cell(t, row, k);
      if (src->null)
        ut_cell_set_null(&dst[k]);
      else if (cs_type_is_varlen(t->cols[k].type))
        ut_cell_set_bytes(&dst[k], src->bytes, src->len);
      else
        dst[k] = (ut_cell){.i = src->i, .f = src->f, .f32 = src->f32};
    }
  }
  return c;
}

/* One transaction's pending changes, kept as the SQL layer keeps them:
** update calls (positions, a batch of values, a column set) and deleted
** positions. */
#define VIEW_MAX_CALLS 6
typedef struct pending {
  uint64_t n_calls;
  uint64_t rows[VIEW_MAX_CALLS][64];
  cs_batch *vals[VIEW_MAX_CALLS];
  uint8_t cols[VIEW_MAX_CALLS][ALL_COLS];
  cs_update upd[VIEW_MAX_CALLS];
  uint64_t dels[32], n_dels;
} pending;

/* Random pending changes to t (the model, changed as they say) whose rows
** [0, n) del marks deleted (committed ones: never updated, as the writer
** refuses), pend_del the pending deletions on return.  The first call may be
** given (first, n_first rows, every column); duplicates and rows updated
** then deleted are common. */
static void pending_make(pending *p, ut_table *t, uint64_t n_committed, const bool *committed_del,
                         bool *pend_del, const ut_table *first, uint64_t n_first, uint64_t seed) {
  ut_rng r = ut_rng_seed(seed);
  uint32_t nc = t->schema.n_cols;
  uint64_t n = t->n_rows;
  memset(p, 0, sizeof *p);
  p->n_calls = 2 + ut_rng_below(&r, VIEW_MAX_CALLS - 1);
  for (uint64_t k = 0; k < p->n_calls; k++) {
    uint64_t m = k == 0 && first ? n_first : 1 + ut_rng_below(&r, 64);
    /* With rows inserted after n_committed, odd calls change those, even
    ** calls committed ones (COMMIT applies them to different places). */
    uint64_t lo = n_committed < n && (k & 1) ? n_committed : 0,
             hi = n_committed < n && !(k & 1) ? n_committed : n;
    for (uint64_t i = 0; i < m; i++) {
      /* a run of neighbours or a duplicate of an earlier one, else anywhere */
      uint64_t x = ut_rng_below(&r, 4);
      uint64_t row = i && x == 0       ? p->rows[k][i - 1] + 1
                     : i > 1 && x == 1 ? p->rows[k][ut_rng_below(&r, i)]
                                       : lo + ut_rng_below(&r, hi - lo);
      if (row >= hi) row = hi - 1;
      while (committed_del[row]) row = row + 1 < hi ? row + 1 : lo;
      p->rows[k][i] = row;
    }
    ut_table *u = k == 0 && first ? NULL : ut_random_table(&t->schema, m, 200, seed * 100 + k);
    const ut_table *vals = u ? u : first;
    bool every = k == 0 && first;
    for (uint32_t c = 0; c < nc; c++) p->cols[k][c] = every || ut_rng_below(&r, 3) == 0;
    if (!every && k == 1) p->cols[k][ut_rng_below(&r, nc)] = 1;
    p->vals[k] = ut_table_batch(vals, 0, m);
    p->upd[k] = (cs_update){p->rows[k], m, p->vals[k], every && ut_rng_below(&r, 2) ? NULL : p->cols[k]};
    ut_table_update(t, p->rows[k], m, vals, p->upd[k].cols);
    ut_table_free(u);
  }
  p->n_dels = 1 + ut_rng_below(&r, 32);
  for (uint64_t i = 0; i < p->n_dels; i++) {
    /* half of them rows an update just changed */
    uint64_t k = ut_rng_below(&r, p->n_calls);
    p->dels[i] = ut_rng_below(&r, 2) ? p->rows[k][ut_rng_below(&r, p->upd[k].n)] : ut_rng_below(&r, n);
    pend_del[p->dels[i]] = true;
  }
}

static void pending_free(pending *p) {
  for (uint64_t k = 0; k < p->n_calls; k++) cs_batch_free(p->vals[k]);
}

/* Commits p through the writer, as the SQL layer does at COMMIT: every
** update call in order, then the deletions. */
static void pending_commit(const char *path, const pending *p, const cs_batch *ins, uint64_t n_committed) {
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_append(path, NULL, &w, &err) == CS_OK, "%s", err.msg);
  /* Inserted rows go out with their updates applied (the writer updates
  ** only committed rows); the calls that change them are the odd ones. */
  if (ins) {
    cs_update odd[VIEW_MAX_CALLS];
    uint64_t n_odd = 0;
    for (uint64_t k = 1; k < p->n_calls; k += 2) odd[n_odd++] = p->upd[k];
    cs_batch *changed = NULL;
    ck_assert_msg(
        cs_batch_with_updates(ins, cs_writer_schema(w), n_committed, odd, n_odd, &changed, &err) == CS_OK,
        "%s", err.msg);
    ck_assert_msg(cs_writer_write(w, changed ? changed : ins, &err) == CS_OK, "%s", err.msg);
    cs_batch_free(changed);
  }
  for (uint64_t k = 0; k < p->n_calls; k += ins ? 2 : 1)
    ck_assert_msg(cs_writer_update(w, p->upd[k].rows, p->upd[k].n, p->vals[k], p->upd[k].cols, &err) == CS_OK,
                  "%s", err.msg);
  ck_assert_msg(cs_writer_delete(w, p->dels, p->n_dels, NULL, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
}

/* A store (with patches and deletions committed before) and pending
** changes over it: the view reads as the model cell by cell, shows exactly
** the committed and pending deletions, its chunks (null counts, zone maps,
** sorted flags, sizes) are those of a store written fresh with its values,
** every kernel agrees with that store (for ut_fixed_cols), its chunks check
** clean, and the base is unchanged.  Then the same changes are committed:
** the committed store equals the view, chunk for chunk. */
static void view_matches(const cs_schema *schema, cs_cache cache, uint64_t n_committed, uint64_t record_rows,
                         bool edges, uint64_t n_ins, uint64_t seed) {
  char ctx[96];
  snprintf(ctx, sizeof ctx, "view seed %" PRIu64 " cache %s, %" PRIu64 " inserted", seed,
           cs_cache_name(cache), n_ins);
  ut_scratch sc = ut_scratch_new();
  /* The model holds the committed rows, then the inserted ones. */
  uint64_t n_rows = n_committed + n_ins;
  ut_table *t = ut_random_table(schema, n_rows, 80, seed);
  ut_table_create_store(t, sc.path, n_committed, record_rows, 0);
  cs_batch *ins = n_ins ? ut_table_batch(t, n_committed, n_ins) : NULL;
  ut_rng r = ut_rng_seed(seed + 1);
  bool *del = calloc(n_rows, 1), *all_del = calloc(n_rows, 1);
  ck_assert(del && all_del);
  {
    /* committed first: a patch and some deletions */
    uint64_t rows[20], dead[10];
    for (int i = 0; i < 20; i++) rows[i] = ut_rng_below(&r, n_committed);
    ut_table *u = ut_random_table(schema, 20, 100, seed + 2);
    ut_update_commit(sc.path, t, rows, 20, u, NULL);
    ut_table_free(u);
    for (int i = 0; i < 10; i++)
      dead[i] = ut_rng_below(&r, n_committed), del[dead[i]] = all_del[dead[i]] = true;
    ut_delete_commit(sc.path, dead, 10);
  }
  ut_table *before = table_copy(t);
  ut_table *first = edges ? edge_values() : NULL;
  pending p;
  pending_make(&p, t, n_committed, del, all_del, first, first ? first->n_rows : 0, seed + 3);
  cs_store *base, *v = NULL;
  cs_err err = {0};
  ck_assert_msg(cs_store_open_with(sc.path, CS_VERIFY_READ, cache, &base, &err) == CS_OK, "%s", err.msg);
  if (ins)
    ck_assert_msg(cs_store_with_pending(base, ins, p.dels, p.n_dels, p.upd, p.n_calls, &v, &err) == CS_OK,
                  "%s: %s", ctx, err.msg);
  else
    ck_assert_msg(cs_store_with_changes(base, p.dels, p.n_dels, p.upd, p.n_calls, &v, &err) == CS_OK,
                  "%s: %s", ctx, err.msg);
  ck_assert_uint_eq(cs_store_rows(v), n_rows);
  ut_assert_store_equals(v, t, n_rows, ctx);
  uint64_t live = 0;
  for (uint64_t row = 0; row < n_rows; row++) {
    live += !all_del[row];
    if (cs_store_row_deleted(v, row) != all_del[row])
      ck_abort_msg("%s: row %" PRIu64 " deleted differs", ctx, row);
  }
  ck_assert_uint_eq(cs_store_live_rows(v), live);
  ck_assert_uint_eq(cs_store_files(v), 1);
  ck_assert(!cs_store_is_dataset(v));
  ck_assert_msg(cs_store_check_chunks(v, 0, cs_store_records(v), NULL, &err) == CS_OK, "%s: %s", ctx,
                err.msg);
  cs_store *f = ut_store_fresh_like(v, t, all_del, sc.copy);
  ut_assert_chunks_like(v, f, ctx);
  if (schema->cols == ut_fixed_cols) assert_kernels_like(v, f, seed + 4);
  for (uint32_t c = 0; c < schema->n_cols; c++) {
    cs_column_stats a, b;
    cs_store_column_stats(v, c, &a), cs_store_column_stats(f, c, &b);
    ck_assert_msg(a.sorted == b.sorted && a.null_count == b.null_count && a.has_minmax == b.has_minmax &&
                      (!a.has_minmax || (a.min.bits == b.min.bits && a.max.bits == b.max.bits)),
                  "%s: column %u stats", ctx, c);
  }
  cs_store_close(f);
  ut_assert_store_equals(base, before, n_committed, "the base is unchanged");
  /* What COMMIT writes is what the view showed. */
  pending_commit(sc.path, &p, ins, n_committed);
  cs_store *done = ut_open_ok(sc.path, CS_VERIFY_FULL, ctx);
  ut_assert_store_equals(done, t, n_rows, ctx);
  ut_assert_chunks_like(done, v, ctx);
  for (uint64_t row = 0; row < n_rows; row++)
    if (cs_store_row_deleted(done, row) != all_del[row])
      ck_abort_msg("%s: committed row %" PRIu64 " deleted differs", ctx, row);
  cs_store_close(done);
  cs_store_close(v);
  ut_assert_store_equals(base, before, n_committed, "the base outlives its view");
  cs_store_close(base);
  pending_free(&p);
  cs_batch_free(ins);
  ut_table_free(first);
  ut_table_free(before);
  ut_table_free(t);
  free(del), free(all_del);
  ut_scratch_free(&sc);
}

START_TEST(test_view_of_pending_changes_reads_as_the_commit_will) {
  const cs_schema fixed = {UT_FIXED_COLS, ut_fixed_cols};
  static const struct {
    bool fixed;
    cs_cache cache;
    uint64_t rows, record_rows;
    bool edges;
    uint64_t ins;
  } runs[] = {
      {true, CS_CACHE_MAP, 700, 64, false, 0},
      {true, CS_CACHE_MEMORY, 700, 64, false, 0},
      {true, CS_CACHE_MAP, 300, 1000, false, 0},
      {false, CS_CACHE_MAP, 120, 16, true, 0},
      {false, CS_CACHE_MEMORY, 90, 24, true, 0},
      /* with rows the transaction inserted (one record of them, or more) */
      {true, CS_CACHE_MAP, 700, 64, false, 150},
      {false, CS_CACHE_MEMORY, 120, 16, true, 80},
      {true, CS_CACHE_MAP, 200, 64, false, CS_DEFAULT_RECORD_ROWS + 40},
  };
  view_matches(runs[_i].fixed ? &fixed : &all_schema, runs[_i].cache, runs[_i].rows, runs[_i].record_rows,
               runs[_i].edges, runs[_i].ins, 40 + (uint64_t)_i * 10);
}
END_TEST

/* A value moved across a record's zone-map bounds, a sorted column made
** unsorted and back, and a chunk's last NULL replaced: the view's
** statistics say so, and predicates and range searches over it follow. */
START_TEST(test_view_zone_maps_and_sorted_flags_follow_the_pending_values) {
  ut_scratch sc = ut_scratch_new();
  static const cs_column cols[] = {{"k", CS_TYPE_INT64, false}, {"x", CS_TYPE_INT32, true}};
  const cs_schema schema = {2, cols};
  ut_table *t = ut_table_new(&schema);
  for (int row = 0; row < 64; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], row);
    if (row == 20)
      ut_cell_set_null(&c[1]);
    else
      ut_cell_set_int(&c[1], row % 10);
  }
  ut_table_create_store(t, sc.path, 64, 16, 0);
  cs_store *base = ut_open_ok(sc.path, CS_VERIFY_READ, "zone maps");
  ut_table *u = ut_table_new(&schema);
  ut_cell *c = ut_table_add_row(u);
  ut_cell_set_int(&c[0], -1), ut_cell_set_int(&c[1], 1000000);
  c = ut_table_add_row(u);
  ut_cell_set_int(&c[0], 20), ut_cell_set_int(&c[1], 5);
  cs_batch *b = ut_table_batch(u, 0, 2);
  static const uint64_t rows[] = {37, 20};
  cs_update upd = {rows, 2, b, NULL};
  cs_store *v;
  cs_err err = {0};
  ck_assert_msg(cs_store_with_changes(base, NULL, 0, &upd, 1, &v, &err) == CS_OK, "%s", err.msg);
  cs_pred p = {.col = 1, .op = CS_CMP_GT, .a = {.kind = CS_VAL_INT, .i = 500000}};
  uint8_t mask[64];
  cs_pred_stats st;
  cs_pred_eval(base, &p, 1, 0, 64, mask, &st);
  ck_assert_uint_eq(st.rows_selected, 0);
  cs_pred_eval(v, &p, 1, 0, 64, mask, &st);
  ck_assert_uint_eq(st.rows_selected, 1);
  ck_assert(mask[37]);
  ck_assert_uint_eq(st.records_skipped, 3);
  ck_assert_int_eq(cs_store_chunk(v, 2, 1)->max.i, 1000000);
  ck_assert_int_eq(cs_store_chunk(base, 2, 1)->max.i, 9);
  /* record 1 lost its only NULL: no bitmap, as a fresh chunk */
  ck_assert(cs_store_chunk(base, 1, 1)->validity != NULL && cs_store_chunk(v, 1, 1)->validity == NULL);
  ck_assert_uint_eq(cs_store_chunk(v, 1, 1)->null_count, 0);
  /* k: record 2 is no longer sorted, record 1 still is (20 in place of 20) */
  ck_assert(!(cs_store_chunk(v, 2, 0)->flags & CS_CHUNK_SORTED) &&
            (cs_store_chunk(v, 1, 0)->flags & CS_CHUNK_SORTED));
  ck_assert(cs_store_chunk(v, 0, 0) == cs_store_chunk(v, 0, 0) &&
            cs_store_chunk(v, 0, 0)->data == cs_store_chunk(base, 0, 0)->data);
  cs_column_stats cst;
  cs_store_column_stats(v, 0, &cst);
  ck_assert(!cst.sorted);
  ck_assert_int_eq(cst.min.i, -1);
  uint64_t lo, hi;
  cs_pred q = {.col = 0, .op = CS_CMP_LT, .a = {.kind = CS_VAL_INT, .i = 0}};
  ck_assert(cs_pred_sorted_range(base, &q, &lo, &hi));
  ck_assert(!cs_pred_sorted_range(v, &q, &lo, &hi));
  cs_pred_eval(v, &q, 1, 0, 64, mask, &st);
  ck_assert_uint_eq(st.rows_selected, 1);
  /* Setting row 37 back to 37 makes k sorted again. */
  ut_cell_set_int(ut_table_cell(u, 0, 0), 37);
  cs_batch *b2 = ut_table_batch(u, 0, 1);
  static const uint8_t k_only[] = {1, 0};
  cs_update two[] = {{rows, 2, b, NULL}, {rows, 1, b2, k_only}};
  cs_store *v2;
  ck_assert_msg(cs_store_with_changes(base, NULL, 0, two, 2, &v2, &err) == CS_OK, "%s", err.msg);
  cs_store_column_stats(v2, 0, &cst);
  ck_assert(cst.sorted);
  ck_assert_int_eq(cs_store_chunk(v2, 2, 1)->max.i, 1000000); /* x keeps the first call's value */
  cs_store_close(v2);
  cs_store_close(v);
  cs_store_close(base);
  cs_batch_free(b2);
  cs_batch_free(b);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* What cs_writer_update refuses, the view refuses the same way; a view of
** a view is refused; nothing is left behind. */
START_TEST(test_view_refuses_what_the_writer_would) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 40, 100, 60);
  ut_table_create_store(t, sc.path, 40, 16, 0);
  cs_store *base = ut_open_ok(sc.path, CS_VERIFY_READ, "refusals"), *v = NULL;
  ut_table *u = ut_random_table(&small_schema, 2, 0, 61);
  cs_batch *b = ut_table_batch(u, 0, 2);
  cs_err err = {0};
  static const uint64_t ok_rows[] = {1, 2}, bad_rows[] = {1, 40};
  cs_update out_of_range = {bad_rows, 2, b, NULL}, too_many = {ok_rows, 3, b, NULL};
  ck_assert_int_eq(cs_store_with_changes(base, NULL, 0, &out_of_range, 1, &v, &err), CS_EINVAL);
  ck_assert_ptr_null(v);
  ck_assert_int_eq(cs_store_with_changes(base, NULL, 0, &too_many, 1, &v, &err), CS_EINVAL);
  ck_assert_int_eq(cs_store_with_changes(base, bad_rows, 2, NULL, 0, &v, &err), CS_EINVAL);
  /* NULL into the NOT NULL column k: refused only when k is set */
  ut_table *nul = ut_random_table(&small_schema, 2, 0, 62);
  ut_cell_set_null(ut_table_cell(nul, 1, 0));
  cs_batch *bn = ut_table_batch(nul, 0, 2);
  static const uint8_t k_set[] = {1, 0, 0}, v_set[] = {0, 1, 0};
  cs_update null_k = {ok_rows, 2, bn, k_set}, null_v = {ok_rows, 2, bn, v_set};
  ck_assert_int_eq(cs_store_with_changes(base, NULL, 0, &null_k, 1, &v, &err), CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "NOT NULL") != NULL, "%s", err.msg);
  /* another schema */
  static const cs_column other_cols[] = {
      {"k", CS_TYPE_INT32, false}, {"v", CS_TYPE_INT32, true}, {"s", CS_TYPE_TEXT, true}};
  const cs_schema other = {3, other_cols};
  ut_table *o = ut_random_table(&other, 2, 0, 63);
  cs_batch *bo = ut_table_batch(o, 0, 2);
  cs_update typed = {ok_rows, 2, bo, NULL};
  long live = cs_mem_live();
  ck_assert_int_eq(cs_store_with_changes(base, NULL, 0, &typed, 1, &v, &err), CS_ESCHEMA);
  ck_assert_int_eq(cs_store_with_changes(base, NULL, 0, &out_of_range, 1, &v, &err), CS_EINVAL);
  ck_assert_int_eq(cs_mem_live(), live);
  /* the NULL where it is allowed, then a view of that view */
  ck_assert_msg(cs_store_with_changes(base, NULL, 0, &null_v, 1, &v, &err) == CS_OK, "%s", err.msg);
  cs_store *vv = NULL;
  ck_assert_int_eq(cs_store_with_changes(v, NULL, 0, &null_v, 1, &vv, &err), CS_EINVAL);
  ck_assert_ptr_null(vv);
  cs_store_close(v);
  ck_assert_int_eq(cs_mem_live(), live);
  cs_batch_free(bo), cs_batch_free(bn), cs_batch_free(b);
  ut_table_free(o), ut_table_free(nul), ut_table_free(u), ut_table_free(t);
  cs_store_close(base);
  ut_scratch_free(&sc);
}
END_TEST

/* A TEXT chunk with damaged offsets (opened with verify=header, so open
** does not hash it) cannot take pending updates: CS_ECORRUPT naming it,
** never a read outside the chunk; its record's other columns still can. */
START_TEST(test_view_of_damaged_text_offsets_is_corrupt) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 32, 0, 64);
  ut_table_create_store(t, sc.path, 32, 16, 0);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  uint64_t at = ut_layout_offsets_offset(&l, 1, 2) + 8 * 5;
  ut_layout_free(&l);
  int64_t huge = (int64_t)1 << 40;
  ut_pwrite(sc.path, at, &huge, sizeof huge);
  cs_store *base = ut_open_ok(sc.path, CS_VERIFY_HEADER, "damaged offsets"), *v = NULL;
  ut_table *u = ut_random_table(&small_schema, 1, 0, 65);
  cs_batch *b = ut_table_batch(u, 0, 1);
  static const uint64_t row[] = {20};
  static const uint8_t s_set[] = {0, 0, 1}, v_set[] = {0, 1, 0};
  cs_update on_s = {row, 1, b, s_set}, on_v = {row, 1, b, v_set};
  cs_err err = {0};
  long live = cs_mem_live();
  ck_assert_int_eq(cs_store_with_changes(base, NULL, 0, &on_s, 1, &v, &err), CS_ECORRUPT);
  ck_assert_msg(strstr(err.msg, "record 1, column s: TEXT/BLOB offsets are damaged") != NULL, "%s", err.msg);
  ck_assert_ptr_null(v);
  ck_assert_int_eq(cs_mem_live(), live);
  ck_assert_msg(cs_store_with_changes(base, NULL, 0, &on_v, 1, &v, &err) == CS_OK, "%s", err.msg);
  cs_store_close(v);
  cs_store_close(base);
  cs_batch_free(b);
  ut_table_free(u), ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* Every allocation of making a view of pending updates and deletions fails
** in turn (once, and from then on): CS_ENOMEM and nothing held, or the
** whole view. */
START_TEST(test_view_every_allocation_failure_is_clean) {
  /* _i = 0: updates and deletions; 1: over 20 inserted rows as well */
  uint64_t n_ins = _i ? 20 : 0, n = 48 + n_ins;
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, n, 100, 66);
  ut_table_create_store(t, sc.path, 48, 16, 0);
  cs_batch *ins = n_ins ? ut_table_batch(t, 48, n_ins) : NULL;
  bool del[68] = {0}, all_del[68] = {0};
  pending p;
  pending_make(&p, t, 48, del, all_del, NULL, 0, 67);
  cs_store *base = ut_open_ok(sc.path, CS_VERIFY_READ, "allocation failures");
  for (int sticky = 0; sticky < 2; sticky++) {
    for (long k = 1;; k++) {
      long live = cs_mem_live();
      cs_store *v = NULL;
      cs_err err = {0};
      cs_mem_fail_after(k, sticky);
      cs_rc rc = ins ? cs_store_with_pending(base, ins, p.dels, p.n_dels, p.upd, p.n_calls, &v, &err)
                     : cs_store_with_changes(base, p.dels, p.n_dels, p.upd, p.n_calls, &v, &err);
      bool failed_any = cs_mem_count() >= k;
      cs_mem_fail_after(-1, false);
      ck_assert_msg(rc == CS_OK || rc == CS_ENOMEM, "k=%ld: %s", k, err.msg);
      if (rc == CS_OK) {
        ut_assert_store_equals(v, t, n, "a view made under failures");
        cs_store_close(v);
      } else {
        ck_assert_ptr_null(v);
      }
      ck_assert_msg(cs_mem_live() == live, "k=%ld: %ld blocks leaked", k, cs_mem_live() - live);
      if (!failed_any && rc == CS_OK) break;
    }
  }
  cs_store_close(base);
  pending_free(&p);
  cs_batch_free(ins);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------- allocation failures */

/* Every allocation of an updating transaction (with a delete beside it),
** and of opening the store it leaves, fails in turn (once, and from then
** on): the transaction commits whole or fails with CS_ENOMEM leaving the
** file byte-identical, an open works or fails with CS_ENOMEM, nothing
** leaks. */
START_TEST(test_every_allocation_failure_leaves_the_old_or_the_new_state) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&small_schema, 48, 100, 26);
  ut_table_create_store(t, sc.path, 48, 16, 0);
  ut_table *u = ut_random_table(&small_schema, 4, 100, 27);
  static const uint64_t first[] = {3, 40}, rows[] = {4, 41, 47, 3}, dead[] = {20};
  static const uint8_t v_only[] = {0, 1, 0};
  ut_update_commit(sc.path, t, first, 2, u, v_only); /* a version-2 file with a patch to replace */
  ut_table *done = ut_random_table(&small_schema, 48, 100, 26);
  ut_table_update(done, first, 2, u, v_only);
  ut_table_update(done, rows, 4, u, NULL);
  cs_batch *b = ut_table_batch(u, 0, 4);
  for (int sticky = 0; sticky < 2; sticky++) {
    for (long k = 1;; k++) {
      ut_copy_file(sc.path, sc.copy);
      long live = cs_mem_live();
      cs_writer *w = NULL;
      cs_err err = {0};
      cs_mem_fail_after(k, sticky);
      cs_rc rc = cs_writer_append(sc.copy, NULL, &w, &err);
      if (rc == CS_OK) rc = cs_writer_update(w, rows, 4, b, NULL, &err);
      if (rc == CS_OK) rc = cs_writer_delete(w, dead, 1, NULL, &err);
      if (rc == CS_OK)
        rc = cs_writer_commit(w, &err);
      else
        cs_writer_abort(w);
      bool failed_any = cs_mem_count() >= k;
      cs_mem_fail_after(-1, false);
      ck_assert_msg(rc == CS_OK || rc == CS_ENOMEM, "k=%ld: %s", k, err.msg);
      ck_assert_msg(cs_mem_live() == live, "k=%ld: %ld blocks leaked", k, cs_mem_live() - live);
      cs_store *s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "after a failed allocation");
      if (rc == CS_OK) {
        ut_assert_store_equals(s, done, 48, "committed");
        ck_assert(cs_store_row_deleted(s, 20));
      } else {
        ck_assert_msg(ut_files_equal(sc.path, sc.copy), "k=%ld: a failed update changed the file", k);
      }
      cs_store_close(s);
      /* Opening the patched store under the same failure. */
      cs_mem_fail_after(k, sticky);
      rc = cs_store_open(sc.copy, CS_VERIFY_FULL, &s, &err);
      cs_mem_fail_after(-1, false);
      ck_assert_msg(rc == CS_OK || rc == CS_ENOMEM, "open k=%ld: %s", k, err.msg);
      cs_store_close(s);
      ck_assert_msg(cs_mem_live() == live, "open k=%ld: leaked", k);
      if (!failed_any && rc == CS_OK) break;
    }
  }
  cs_batch_free(b);
  ut_table_free(done);
  ut_table_free(u);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

int main(void) {
  Suite *suite = suite_create("update");
  TCase *tc = tcase_create("update");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_update_every_type_with_its_edges);
  tcase_add_test(tc, test_nulls_come_and_go_with_their_bitmap);
  tcase_add_test(tc, test_random_updates_match_the_model);
  tcase_add_test(tc, test_repeated_updates_of_one_record_count_their_free_space);
  tcase_add_test(tc, test_calls_with_no_column_write_nothing);
  tcase_add_test(tc, test_invalid_updates_change_nothing);
  tcase_add_test(tc, test_abort_after_prepare_leaves_the_file_byte_identical);
  tcase_add_test(tc, test_crash_between_prepare_and_commit_keeps_the_last_committed_values);
  tcase_add_test(tc, test_forward_scans_rebuild_the_patched_state);
  tcase_add_test(tc, test_a_version_1_preamble_over_a_patched_footer_stays_layout_2);
  tcase_add_test(tc, test_damaged_patches_are_corrupt);
  tcase_add_test(tc, test_snapshots_cache_and_datasets);
  tcase_add_test(tc, test_zone_maps_see_the_new_values);
  tcase_add_test(tc, test_kernels_read_the_new_values);
  tcase_add_test(tc, test_every_allocation_failure_leaves_the_old_or_the_new_state);
  tcase_add_loop_test(tc, test_view_of_pending_changes_reads_as_the_commit_will, 0, 8);
  tcase_add_test(tc, test_view_zone_maps_and_sorted_flags_follow_the_pending_values);
  tcase_add_test(tc, test_view_refuses_what_the_writer_would);
  tcase_add_test(tc, test_view_of_damaged_text_offsets_is_corrupt);
  tcase_add_loop_test(tc, test_view_every_allocation_failure_is_clean, 0, 2);
  suite_add_tcase(suite, tc);
  return ut_run_suite(suite);
}
