/*
** check_delete.c - deleted rows (format 2, docs/format.md 14): the writer's
** cs_writer_delete and its commit, the reader's vectors and counts, the
** upgrade of a version-1 file, crash and rollback, damage, and every core
** read kernel over a store with deletions.
**
** The reference for the kernels is the store before the deletions: its
** snapshot stays open and valid after the deleting commit (committed bytes
** are never rewritten), holds the same values at the same positions, and
** has no deleted row, so "the kernel on the new snapshot" must equal "the
** same kernel on the old snapshot, with the deleted positions dropped".
** The deleted set is kept as a plain bool per position.
**
** Crash points are made the way check_writer makes them: a forked child
** runs the writer up to a point and _exits, so nothing after that point
** ever reaches the file; torn writes are made by writing part of a
** structure by hand.  No OpenMP region runs outside a test body.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit_util.h"

/* --------------------------------------------------------------- helpers */

static const cs_column del_cols[] = {
    {"k", CS_TYPE_INT64, false}, {"v", CS_TYPE_INT32, true}, {"s", CS_TYPE_TEXT, true}};
static const cs_schema del_schema = {3, del_cols};

static ut_table *del_table(uint64_t n, uint64_t seed) {
  ut_table *t = ut_table_new(&del_schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t row = 0; row < n; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], (int64_t)row);
    ut_cell_random(&r, CS_TYPE_INT32, true, 100, &c[1]);
    ut_cell_random(&r, CS_TYPE_TEXT, true, 100, &c[2]);
  }
  return t;
}

/* ------------------------------------------------ writing and reopening */

START_TEST(test_delete_in_several_transactions_keeps_positions_and_counts) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(100, 1);
  ut_table_create_store(t, sc.path, 60, 16, 0);
  ut_table_append_store(t, sc.path, 60, 40);
  ck_assert_uint_eq(ut_file_version(sc.path), 1); /* appends alone stay version 1 */
  bool del[100] = {0};
  static const uint64_t a[] = {0, 15, 16, 17, 99, 15};
  ck_assert_uint_eq(ut_delete_commit(sc.path, a, 6), 5);
  for (int i = 0; i < 6; i++) del[a[i]] = true;
  ck_assert_uint_eq(ut_file_version(sc.path), 2); /* the first delete upgrades */
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "after one delete");
  ut_assert_deleted(s, del, 100, "after one delete");
  ck_assert_uint_eq(cs_store_format_version(s), 2);
  ck_assert_uint_eq(cs_store_free_bytes(s), 0);
  ut_assert_store_equals(s, t, 100, "values of every position stay");
  cs_store_close(s);
  /* A second delete in a record that has a vector supersedes it; an
  ** append after the upgrade writes layout-2 footers. */
  static const uint64_t b[] = {1, 2, 3, 50, 0};
  ck_assert_uint_eq(ut_delete_commit(sc.path, b, 5), 4);
  for (int i = 0; i < 5; i++) del[b[i]] = true;
  ut_table *t2 = del_table(130, 1);
  ut_table_append_store(t2, sc.path, 100, 30);
  s = ut_open_ok(sc.path, CS_VERIFY_FULL, "after two deletes and an append");
  bool del2[130] = {0};
  memcpy(del2, del, sizeof del);
  ut_assert_deleted(s, del2, 130, "after two deletes and an append");
  ck_assert_uint_eq(cs_store_free_bytes(s), cs__delvec_block_bytes(16));
  ut_layout l;
  ut_layout_read(sc.path, &l);
  ck_assert_uint_eq(l.footer.layout, CS_FOOTER_LAYOUT_2);
  ck_assert_uint_eq(l.footer_ext.n_deleted, 9);
  ut_layout_free(&l);
  cs_store_close(s);
  ut_table_free(t), ut_table_free(t2);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_delete_rows_written_in_the_same_transaction) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(40, 2);
  cs_writer *w;
  cs_err err = {0};
  ck_assert(cs_writer_create(sc.path, &del_schema, &(cs_writer_options){.record_rows = 8}, &w, &err) ==
            CS_OK);
  cs_batch *bt = ut_table_batch(t, 0, 40);
  ck_assert(cs_writer_write(w, bt, &err) == CS_OK);
  static const uint64_t rows[] = {39, 7, 8};
  uint64_t fresh = 0;
  ck_assert_msg(cs_writer_delete(w, rows, 3, &fresh, &err) == CS_OK, "%s", err.msg);
  ck_assert_uint_eq(fresh, 3);
  ck_assert_uint_eq(cs_writer_live_rows(w), 37);
  ck_assert_uint_eq(cs_writer_rows(w), 40);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
  cs_batch_free(bt);
  bool del[40] = {0};
  del[39] = del[7] = del[8] = true;
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "created with deletions");
  ut_assert_deleted(s, del, 40, "created with deletions");
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_delete_past_the_end_deletes_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(20, 3);
  ut_table_create_store(t, sc.path, 20, 8, 0);
  cs_writer *w;
  cs_err err = {0};
  ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
  static const uint64_t rows[] = {1, 20};
  ck_assert_int_eq(cs_writer_delete(w, rows, 2, NULL, &err), CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "row 20") && strstr(err.msg, "20 positions"), "%s", err.msg);
  ck_assert_uint_eq(cs_writer_live_rows(w), 20);
  ck_assert(cs_writer_commit(w, &err) == CS_OK);
  ck_assert_uint_eq(ut_file_version(sc.path), 1); /* nothing was written */
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_deleting_deleted_rows_writes_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(20, 4);
  ut_table_create_store(t, sc.path, 20, 8, 0);
  static const uint64_t rows[] = {3};
  ut_delete_commit(sc.path, rows, 1);
  size_t n1, n2;
  uint8_t *before = ut_read_all(sc.path, &n1);
  ck_assert_uint_eq(ut_delete_commit(sc.path, rows, 1), 0);
  uint8_t *after = ut_read_all(sc.path, &n2);
  ck_assert(n1 == n2 && memcmp(before, after, n1) == 0);
  free(before), free(after);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------ crash, rollback */

START_TEST(test_abort_after_prepare_leaves_the_file_byte_identical) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(50, 5);
  ut_table_create_store(t, sc.path, 50, 16, 0);
  for (int round = 0; round < 2; round++) { /* a version-1 file, then a version-2 one */
    size_t n1, n2;
    uint8_t *before = ut_read_all(sc.path, &n1);
    cs_writer *w;
    cs_err err = {0};
    ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
    static const uint64_t rows[] = {4, 5, 33};
    ck_assert(cs_writer_delete(w, rows, 3, NULL, &err) == CS_OK);
    ck_assert_msg(cs_writer_prepare(w, &err) == CS_OK, "%s", err.msg);
    cs_writer_abort(w);
    uint8_t *after = ut_read_all(sc.path, &n2);
    ck_assert_msg(n1 == n2 && memcmp(before, after, n1) == 0, "round %d: abort changed the file", round);
    free(before), free(after);
    static const uint64_t other[] = {0};
    ut_delete_commit(sc.path, other, 1);
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* A child deletes, prepares and dies: the store shows the last committed
** state, and a version-1 file is left version 2 but still whole. */
START_TEST(test_crash_between_prepare_and_commit_keeps_the_last_committed_state) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(50, 6);
  ut_table_create_store(t, sc.path, 50, 16, 0);
  static const uint64_t first[] = {10};
  bool del[50] = {0};
  for (int round = 0; round < 2; round++) {
    static const uint64_t rows[] = {1, 2, 40};
    ut_delete_prepare_in_child(sc.path, rows, 3);
    ck_assert_uint_eq(ut_file_version(sc.path), 2);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "after the crash");
    ut_assert_deleted(s, del, 50, "after the crash");
    cs_store_close(s);
    /* The next writer takes over the file as it is. */
    ut_delete_commit(sc.path, first, 1);
    del[10] = true;
    s = ut_open_ok(sc.path, CS_VERIFY_FULL, "after the next commit");
    ut_assert_deleted(s, del, 50, "after the next commit");
    cs_store_close(s);
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* The footer of a deleting commit torn or gone: the bounded scan finds the
** vectors; both slots gone: the unbounded scan keeps the sealed commit,
** and drops the deletions of a prepared one. */
START_TEST(test_damaged_v2_footer_recovers_the_last_committed_deletions) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(60, 7);
  ut_table_create_store(t, sc.path, 60, 16, 0);
  static const uint64_t a[] = {0, 20, 21}, b[] = {22, 59};
  ut_delete_commit(sc.path, a, 3);
  ut_delete_commit(sc.path, b, 2);
  bool del[60] = {0};
  del[0] = del[20] = del[21] = del[22] = del[59] = true;
  ut_layout l;
  ut_layout_read(sc.path, &l);
  uint64_t fo = l.slot[l.newest].footer_offset, fb = l.slot[l.newest].footer_bytes;
  ut_layout_free(&l);
  ut_copy_file(sc.path, sc.copy);
  ut_xor_byte(sc.copy, fo + fb - 3, 0x40); /* torn footer */
  cs_store *s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "torn v2 footer");
  ck_assert(cs_store_recovered(s));
  ut_assert_deleted(s, del, 60, "torn v2 footer");
  ck_assert_uint_eq(cs_store_free_bytes(s), cs__delvec_block_bytes(16)); /* record 1's first vector */
  cs_store_close(s);
  ut_copy_file(sc.path, sc.copy);
  ut_truncate(sc.copy, fo); /* footer gone */
  s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "no v2 footer");
  ut_assert_deleted(s, del, 60, "no v2 footer");
  cs_store_close(s);
  static const uint8_t zero[64] = {0};
  ut_copy_file(sc.path, sc.copy);
  ut_pwrite(sc.copy, CS_SLOT0_OFFSET, zero, 64);
  ut_pwrite(sc.copy, CS_SLOT1_OFFSET, zero, 64);
  s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "no slots");
  ck_assert(cs_store_recovered(s));
  ut_assert_deleted(s, del, 60, "no slots");
  ck_assert_uint_eq(cs_store_generation(s), 3);
  cs_store_close(s);
  /* Without the seal the newest deletions were only prepared. */
  ut_pwrite(sc.copy, fo + fb, zero, 64);
  s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "no slots, no seal");
  del[22] = del[59] = false;
  ut_assert_deleted(s, del, 60, "no slots, no seal");
  ck_assert_uint_eq(cs_store_generation(s), 2);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* The upgrade's preamble write torn: each byte old or new still opens (as
** version 2), anything else is corrupt. */
START_TEST(test_torn_preamble_upgrade_opens_and_other_damage_does_not) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(30, 8);
  ut_table_create_store(t, sc.path, 30, 16, 0);
  cs_disk_preamble v1, v2, torn;
  ut_pread(sc.path, 0, &v1, sizeof v1);
  v2 = v1;
  v2.version = 2;
  ut_preamble_reseal(&v2);
  ut_rng r = ut_rng_seed(88);
  for (int k = 0; k < 40; k++) {
    uint8_t *p = (uint8_t *)&torn;
    for (size_t i = 0; i < sizeof torn; i++)
      p[i] = ut_rng_below(&r, 2) ? ((uint8_t *)&v1)[i] : ((uint8_t *)&v2)[i];
    ut_copy_file(sc.path, sc.copy);
    ut_pwrite(sc.copy, 0, &torn, sizeof torn);
    cs_store *s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "torn preamble");
    bool clean1 = memcmp(&torn, &v1, sizeof torn) == 0;
    ck_assert_uint_eq(cs_store_format_version(s), clean1 ? 1 : 2);
    cs_store_close(s);
  }
  /* The next deleting writer writes the clean version-2 form. */
  ut_pwrite(sc.copy, 56, &v2.checksum, 4);
  static const uint64_t rows[] = {3};
  ut_delete_commit(sc.copy, rows, 1);
  cs_disk_preamble now;
  ut_pread(sc.copy, 0, &now, sizeof now);
  ck_assert(memcmp(&now, &v2, sizeof now) == 0);
  /* A flip outside the version and checksum bytes is damage. */
  ut_copy_file(sc.path, sc.copy);
  ut_xor_byte(sc.copy, 20, 0x01);
  cs_err err = {0};
  ck_assert_int_eq(ut_open_rc(sc.copy, CS_VERIFY_HEADER, &err), CS_ECORRUPT);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_newer_version_says_upgrade_colstore) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(5, 9);
  ut_table_create_store(t, sc.path, 5, 0, 0);
  cs_disk_preamble pre;
  ut_pread(sc.path, 0, &pre, sizeof pre);
  pre.version = CS_FORMAT_VERSION_MAX + 1;
  ut_preamble_reseal(&pre);
  ut_pwrite(sc.path, 0, &pre, sizeof pre);
  cs_err err = {0};
  ck_assert_int_eq(ut_open_rc(sc.path, CS_VERIFY_HEADER, &err), CS_EVERSION);
  ck_assert_msg(strncmp(err.msg, "colstore: ", 10) == 0 && strstr(err.msg, "upgrade colstore"), "%s",
                err.msg);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ----------------------------------------------------------------- damage */

START_TEST(test_damaged_deletion_vector_is_corrupt) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(40, 10);
  ut_table_create_store(t, sc.path, 40, 16, 0);
  static const uint64_t rows[] = {5, 30};
  ut_delete_commit(sc.path, rows, 2);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  uint64_t dv = l.ext[0].dv_offset;
  ck_assert(dv != 0 && l.ext[1].dv_offset != 0 && l.ext[2].dv_offset == 0);
  ut_layout_free(&l);
  /* bitmap bit, bitmap padding, header field, header checksum: each fails */
  const uint64_t at[] = {dv + 64, dv + 64 + 40, dv + 32, dv + 60};
  for (int k = 0; k < 4; k++) {
    ut_copy_file(sc.path, sc.copy);
    ut_xor_byte(sc.copy, at[k], 0x10);
    cs_err err = {0};
    ck_assert_msg(ut_open_rc(sc.copy, CS_VERIFY_HEADER, &err) == CS_ECORRUPT, "damage %d opened", k);
    ck_assert_msg(strstr(err.msg, "deletion vector"), "damage %d: %s", k, err.msg);
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------- cache and datasets */

START_TEST(test_cache_memory_and_datasets_see_deletions) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(50, 11);
  ut_table_create_store(t, sc.path, 50, 16, 0);
  ut_table_create_store(t, sc.copy, 30, 8, 0);
  static const uint64_t a[] = {1, 49}, b[] = {0, 29};
  ut_delete_commit(sc.path, a, 2);
  bool del[80] = {0};
  del[1] = del[49] = true;
  cs_store *m;
  cs_err err = {0};
  ck_assert_msg(cs_store_open_with(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY, &m, &err) == CS_OK, "%s",
                err.msg);
  ut_assert_deleted(m, del, 50, "cache=memory");
  /* A reopen after another delete reuses the copy and sees the new vector. */
  static const uint64_t c[] = {2};
  ut_delete_commit(sc.path, c, 1);
  del[2] = true;
  cs_store *m2;
  ck_assert_msg(cs_store_reopen(m, CS_VERIFY_HEADER, &m2, &err) == CS_OK, "%s", err.msg);
  ut_assert_deleted(m2, del, 50, "cache=memory reopened");
  cs_store_close(m2), cs_store_close(m);
  ut_delete_commit(sc.copy, b, 2);
  del[50] = del[79] = true;
  const char *paths[] = {sc.path, sc.copy};
  cs_store *d;
  ck_assert_msg(cs_store_open_dataset(paths, 2, CS_VERIFY_FULL, &d, &err) == CS_OK, "%s", err.msg);
  ut_assert_deleted(d, del, 80, "dataset");
  ck_assert_uint_eq(cs_store_format_version(d), 2);
  cs_store_close(d);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------- allocation failures */

/* Every allocation of a deleting transaction, and of opening the store it
** leaves, fails in turn (once, and from then on): the transaction either
** commits whole or fails with CS_ENOMEM leaving the file byte-identical,
** an open either works or fails with CS_ENOMEM, and nothing leaks. */
START_TEST(test_every_allocation_failure_leaves_the_old_or_the_new_state) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = del_table(80, 12);
  ut_table_create_store(t, sc.path, 80, 16, 0);
  static const uint64_t first[] = {3, 40};
  ut_delete_commit(sc.path, first, 2); /* a version-2 file with a vector to supersede */
  static const uint64_t rows[] = {4, 41, 79, 0};
  bool del[80] = {0};
  del[3] = del[40] = true;
  bool done[80];
  memcpy(done, del, sizeof del);
  for (int i = 0; i < 4; i++) done[rows[i]] = true;
  for (int sticky = 0; sticky < 2; sticky++) {
    for (long k = 1;; k++) {
      ut_copy_file(sc.path, sc.copy);
      size_t n0, n1;
      uint8_t *before = ut_read_all(sc.copy, &n0);
      long live = cs_mem_live();
      cs_writer *w = NULL;
      cs_err err = {0};
      cs_mem_fail_after(k, sticky);
      cs_rc rc = cs_writer_append(sc.copy, NULL, &w, &err);
      if (rc == CS_OK) rc = cs_writer_delete(w, rows, 4, NULL, &err);
      if (rc == CS_OK)
        rc = cs_writer_commit(w, &err);
      else
        cs_writer_abort(w);
      bool failed_any = cs_mem_count() >= k;
      cs_mem_fail_after(-1, false);
      ck_assert_msg(rc == CS_OK || rc == CS_ENOMEM, "k=%ld: %s", k, err.msg);
      ck_assert_msg(cs_mem_live() == live, "k=%ld: %ld blocks leaked", k, cs_mem_live() - live);
      uint8_t *after = ut_read_all(sc.copy, &n1);
      cs_store *s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "after a failed allocation");
      if (rc == CS_OK)
        ut_assert_deleted(s, done, 80, "committed");
      else
        ck_assert_msg(n0 == n1 && memcmp(before, after, n0) == 0, "k=%ld: a failed delete changed the file",
                      k);
      cs_store_close(s);
      free(before), free(after);
      /* Opening the store with deletions under the same failure. */
      cs_mem_fail_after(k, sticky);
      rc = cs_store_open(sc.copy, CS_VERIFY_FULL, &s, &err);
      cs_mem_fail_after(-1, false);
      ck_assert_msg(rc == CS_OK || rc == CS_ENOMEM, "open k=%ld: %s", k, err.msg);
      cs_store_close(s);
      ck_assert_msg(cs_mem_live() == live, "open k=%ld: leaked", k);
      if (!failed_any && rc == CS_OK) break;
    }
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* --------------------------------------------------------------- kernels */

/* Deletes about 1 row in 8, every row of one record, and the last row. */
static bool *kernel_deletions(const char *path, const cs_store *s, uint64_t seed) {
  uint64_t n = cs_store_rows(s), k = 0;
  bool *del = calloc(n, 1);
  uint64_t *rows = malloc(n * sizeof *rows);
  ck_assert(del && rows);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t i = 0; i < n; i++)
    if (ut_rng_below(&r, 8) == 0) rows[k++] = i;
  uint64_t rec = cs_store_records(s) / 2;
  for (uint64_t i = cs_store_record_first_row(s, rec); i < cs_store_record_first_row(s, rec + 1); i++)
    rows[k++] = i;
  rows[k++] = n - 1;
  for (uint64_t i = 0; i < k; i++) del[rows[i]] = true;
  ut_delete_commit(path, rows, k);
  free(rows);
  return del;
}

START_TEST(test_kernels_never_select_deleted_rows) {
  static const ut_kshape shapes[] = {
      {31, 3000, UT_IRREGULAR, 300, 100}, {32, 2100, UT_UNIFORM, 64, 50}, {33, 700, UT_UNIFORM, 8, 0}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
    ut_kstore k;
    ut_kstore_make_shape(&k, &shapes[sh]);
    cs_store *old = k.s;
    bool *del = kernel_deletions(cs_store_path(old), old, 40 + sh);
    cs_store *s = ut_open_ok(cs_store_path(old), CS_VERIFY_FULL, "kernels");
    uint64_t n = cs_store_rows(s);
    uint8_t *want = malloc(n), *got = malloc(n), *user = malloc(n), *valid = malloc(n);
    uint64_t *rows = malloc(n * sizeof *rows), *ref = malloc(n * sizeof *ref);
    int64_t *vals = malloc(n * 8), *ref_vals = malloc(n * 8);
    ck_assert(want && got && user && valid && rows && ref && vals && ref_vals);
    /* cs_store_mask_deleted and cs_store_filter_deleted */
    for (uint64_t first = 0; first < n; first += 97) {
      uint64_t len = n - first < 500 ? n - first : 500, dead = 0;
      memset(got, 1, len);
      if (len < n)
        memset(got + len, 7, n - len < 16 ? n - len : 16); /* bytes past the range stay untouched */
      uint64_t c = cs_store_mask_deleted(s, first, len, got);
      for (uint64_t i = 0; i < len; i++) {
        dead += del[first + i];
        if (got[i] != !del[first + i]) ck_abort_msg("mask_deleted: row %" PRIu64, first + i);
      }
      for (uint64_t i = len; i < n && i < len + 16; i++)
        if (got[i] != 7)
          ck_abort_msg("mask_deleted [%" PRIu64 ", +%" PRIu64 ") wrote past its range", first, len);
      ck_assert_uint_eq(c, dead);
      ck_assert_uint_eq(cs_store_deleted_in(s, first, len), dead);
    }
    ut_rng r = ut_rng_seed(sh);
    uint64_t m = 0, kept = 0;
    for (uint64_t i = 0; i < n; i++) rows[m++] = ut_rng_below(&r, n);
    for (uint64_t i = 0; i < m; i++)
      if (!del[rows[i]]) ref[kept++] = rows[i];
    ck_assert_uint_eq(cs_store_filter_deleted(s, rows, m), kept);
    ck_assert(memcmp(rows, ref, kept * sizeof *rows) == 0);
    /* cs_pred_eval, with and without predicates, against the old snapshot */
    cs_pred preds[2] = {{.col = 2, .op = CS_CMP_GT, .a = {.kind = CS_VAL_INT, .i = 0}},
                        {.col = 3, .op = CS_CMP_NOTNULL}};
    for (uint32_t np = 0; np <= 2; np++) {
      cs_pred_stats st;
      cs_pred_eval(old, preds, np, 0, n, want, NULL);
      cs_pred_eval(s, preds, np, 0, n, got, &st);
      uint64_t sel = 0;
      for (uint64_t i = 0; i < n; i++) {
        uint8_t w = (uint8_t)(want[i] && !del[i]);
        sel += w;
        if (got[i] != w)
          ck_abort_msg("pred_eval (%u preds): row %" PRIu64 " got %u want %u", np, i, got[i], w);
      }
      ck_assert_uint_eq(st.rows_selected, sel);
    }
    /* cs_select_range, 1 and 2 threads, with a caller's mask */
    for (uint64_t i = 0; i < n; i++) user[i] = (uint8_t)(ut_rng_below(&r, 4) != 0);
    for (int threads = 1; threads <= 2; threads++) {
      ut_kernel_config_set(threads, -1);
      for (uint32_t np = 0; np <= 1; np++) {
        cs_selector *sel;
        cs_err err = {0};
        ck_assert(cs_selector_new(s, preds, np, &sel, &err) == CS_OK);
        cs_gather_target tg = {3, vals, NULL};
        cs_select_batch b = {.first = 1,
                             .n = n - 1,
                             .user_mask = user + 1,
                             .mask = got,
                             .rows = rows,
                             .want_rows = true,
                             .targets = &tg,
                             .n_targets = 1,
                             .mask_gate = threads == 1 ? 0.0 : 2.0,
                             .count_from = 1,
                             .max_threads = threads};
        cs_select_range(sel, &b);
        cs_pred_eval(old, preds, np, 1, n - 1, want, NULL);
        uint64_t cnt = 0;
        for (uint64_t i = 0; i < n - 1; i++)
          if (want[i] && user[i + 1] && !del[i + 1]) ref[cnt++] = i + 1;
        ck_assert_msg(b.n_selected == cnt, "select_range: %" PRIu64 " selected, expected %" PRIu64,
                      b.n_selected, cnt);
        ck_assert(b.rows_filled && memcmp(rows, ref, cnt * sizeof *ref) == 0);
        ut_ref_gather(old, 3, ref, cnt, (uint8_t *)ref_vals, valid);
        ck_assert(memcmp(vals, ref_vals, cnt * 8) == 0);
        cs_selector_free(sel);
      }
    }
    ut_kernel_config_reset();
    /* cs_order_range: top-k, DISTINCT and a full sort deliver no deleted
    ** row, and equal cs_order_rows over the live positions. */
    cs_order_key key = {2, false};
    const struct {
      cs_order_mode mode;
      uint64_t limit;
    } cases[] = {{CS_ORDER_SORT, 5}, {CS_ORDER_DISTINCT, 50}, {CS_ORDER_SORT, CS_ORDER_NO_LIMIT}};
    for (int c = 0; c < 3; c++) {
      uint64_t first = 3, len = n - 3, got_n = 0, ref_n = 0;
      cs_err err = {0};
      ck_assert(cs_order_range(s, &key, 1, cases[c].mode, first, len, rows, &got_n, cases[c].limit, &err) ==
                CS_OK);
      for (uint64_t i = first; i < n; i++)
        if (!del[i]) ref[ref_n++] = i;
      ck_assert(cs_order_rows(old, &key, 1, cases[c].mode, ref, &ref_n, cases[c].limit, &err) == CS_OK);
      ck_assert_msg(got_n == ref_n, "order case %d: %" PRIu64 " rows, expected %" PRIu64, c, got_n, ref_n);
      ck_assert_msg(memcmp(rows, ref, got_n * sizeof *rows) == 0, "order case %d differs", c);
    }
    free(want), free(got), free(user), free(valid), free(rows), free(ref), free(vals), free(ref_vals),
        free(del);
    cs_store_close(s);
    ut_kstore_free(&k);
  }
}
END_TEST

int main(void) {
  Suite *suite = suite_create("delete");
  TCase *tc = tcase_create("delete");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_delete_in_several_transactions_keeps_positions_and_counts);
  tcase_add_test(tc, test_delete_rows_written_in_the_same_transaction);
  tcase_add_test(tc, test_delete_past_the_end_deletes_nothing);
  tcase_add_test(tc, test_deleting_deleted_rows_writes_nothing);
  tcase_add_test(tc, test_abort_after_prepare_leaves_the_file_byte_identical);
  tcase_add_test(tc, test_crash_between_prepare_and_commit_keeps_the_last_committed_state);
  tcase_add_test(tc, test_damaged_v2_footer_recovers_the_last_committed_deletions);
  tcase_add_test(tc, test_torn_preamble_upgrade_opens_and_other_damage_does_not);
  tcase_add_test(tc, test_newer_version_says_upgrade_colstore);
  tcase_add_test(tc, test_damaged_deletion_vector_is_corrupt);
  tcase_add_test(tc, test_cache_memory_and_datasets_see_deletions);
  tcase_add_test(tc, test_kernels_never_select_deleted_rows);
  tcase_add_test(tc, test_every_allocation_failure_leaves_the_old_or_the_new_state);
  suite_add_tcase(suite, tc);
  return ut_run_suite(suite);
}
