/*
** check_writer.c - the writer keeps its promises: atomic, durable-looking,
** byte-exact on abort, linear in size, and never visible before commit.
**
** The promises come from colstore.h and cs_format.h: a new store appears at
** its path only at commit; abort leaves a file byte-identical; many small
** commits grow the file linearly; a second writer waits or gets CS_EBUSY; a
** reader's snapshot never changes under it.  And the crash rules: whatever
** instant a writer dies at, the next open shows exactly the last committed
** rows, even when newer records (and their footer) are complete on disk;
** a lost or damaged footer is rebuilt from the record headers; a torn tail
** is ignored; a damaged newest commit slot falls back to the generation
** before it.
**
** How a crash is simulated: a forked child appends and then calls _exit()
** at the chosen point, without commit or abort, which is what the file sees
** when a process is killed (the page cache keeps what it wrote; a power cut
** is out of reach of a unit test).  Damage is done with pwrite at offsets
** read from the file with unit_util's own layout reader.
**
** The >2^31-row test writes a 2 GiB file and is skipped (with a printed
** reason) under sanitizers (COLSTORE_ASAN) or when the temp directory has
** less than 8 GiB free.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit_util.h"

static const cs_column two_cols[] = {{"id", CS_TYPE_INT64, false}, {"s", CS_TYPE_TEXT, true}};
static const cs_schema two_schema = {2, two_cols};

/* Rows id = base + row and a short string that names the row, NULL every
** seventh row: easy to tell apart from rows of another table. */
static ut_table *numbered_table(uint64_t n, int64_t base) {
  ut_table *t = ut_table_new(&two_schema);
  for (uint64_t row = 0; row < n; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], base + (int64_t)row);
    if (row % 7 == 6) {
      ut_cell_set_null(&c[1]);
    } else {
      char s[40];
      int len = snprintf(s, sizeof s, "row %" PRId64 " \xE2\x82\xAC", base + (int64_t)row);
      ut_cell_set_bytes(&c[1], s, (uint64_t)len);
    }
  }
  return t;
}

static void assert_store(const char *path, cs_verify verify, const ut_table *t, uint64_t rows,
                         const char *ctx) {
  cs_store *s = ut_open_ok(path, verify, ctx);
  ut_assert_store_equals(s, t, rows, ctx);
  cs_err err = {0};
  ck_assert_msg(cs_store_verify(s, &err) == CS_OK, "%s: verify: %s", ctx, err.msg);
  cs_store_close(s);
}

static uint64_t generation_of(const char *path) {
  cs_store *s = ut_open_ok(path, CS_VERIFY_HEADER, "generation");
  uint64_t g = cs_store_generation(s);
  cs_store_close(s);
  return g;
}

/* The file ends with the newest footer and its commit seal: what a crash
** or a torn tail left after them is cut off by the next commit, so garbage
** never accumulates. */
static void assert_ends_with_its_footer(const char *path, const char *ctx) {
  ut_layout l;
  ut_layout_read(path, &l);
  ck_assert_msg(l.file_bytes == l.slot[l.newest].data_end + l.slot[l.newest].footer_bytes + CS_SEAL_BYTES,
                "%s: file is %" PRIu64 " bytes, its footer and seal end at %" PRIu64, ctx, l.file_bytes,
                l.slot[l.newest].data_end + l.slot[l.newest].footer_bytes + CS_SEAL_BYTES);
  ut_layout_free(&l);
}

static bool recovered_at_open(const char *path) {
  cs_store *s = ut_open_ok(path, CS_VERIFY_HEADER, "recovered");
  bool r = cs_store_recovered(s);
  cs_store_close(s);
  return r;
}

static void assert_same_bytes(const uint8_t *a, size_t na, const char *path, const char *ctx) {
  size_t nb;
  uint8_t *b = ut_read_all(path, &nb);
  ck_assert_msg(na == nb, "%s: file is %zu bytes, was %zu", ctx, nb, na);
  for (size_t i = 0; i < na; i++)
    ck_assert_msg(a[i] == b[i], "%s: byte %zu changed from %02x to %02x", ctx, i, a[i], b[i]);
  free(b);
}

/* Opens path with CS_VERIFY_FULL and asserts whether the open had to recover
** (rebuild the footer or scan for records), that it opened generation
** (0: any), and that the store holds exactly rows [0, rows) of t. */
static void assert_reopens(const char *path, bool recovered, uint64_t generation, const ut_table *t,
                           uint64_t rows, const char *ctx) {
  cs_store *s = ut_open_ok(path, CS_VERIFY_FULL, ctx);
  ck_assert_msg(cs_store_recovered(s) == recovered, "%s: recovered=%d, expected %d", ctx,
                cs_store_recovered(s), recovered);
  if (generation)
    ck_assert_msg(cs_store_generation(s) == generation, "%s: generation %" PRIu64 ", expected %" PRIu64, ctx,
                  cs_store_generation(s), generation);
  ut_assert_store_equals(s, t, rows, ctx);
  cs_store_close(s);
}

/* Writes rows [first, first + n) of t through w, as one batch. */
static void write_rows(cs_writer *w, const ut_table *t, uint64_t first, uint64_t n) {
  cs_err err = {0};
  cs_batch *b = ut_table_batch(t, first, n);
  ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "cs_writer_write: %s", err.msg);
  cs_batch_free(b);
}

/* Overwrites the commit slot at offset with zeros, as if never written. */
static void zero_slot(const char *path, uint64_t offset) {
  uint8_t zero[64] = {0};
  ut_pwrite(path, offset, zero, sizeof zero);
}

/* ------------------------------------------------------------ many commits */

START_TEST(test_many_single_row_commits_grow_the_file_linearly) {
  enum { COMMITS = 200 };
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(COMMITS, 1000);
  ut_table_create_store(t, sc.path, 1, 0, 0);
  /* The most one single-row commit may add: one record (header, and per
  ** column at most a bitmap, offsets and data, each padded to 64 bytes, the
  ** strings here being shorter than 64) plus one footer entry. */
  uint64_t step_bound = cs__record_header_bytes(2) + 5 * 64 + cs__footer_entry_bytes(2);
  uint64_t prev_bytes = ut_file_bytes(sc.path), first_bytes = prev_bytes;
  for (uint64_t k = 1; k < COMMITS; k++) {
    ut_table_append_store(t, sc.path, k, 1);
    uint64_t bytes = ut_file_bytes(sc.path);
    ck_assert_msg(bytes > prev_bytes && bytes - prev_bytes <= step_bound,
                  "commit %" PRIu64 " grew the file by %" PRIu64 " bytes (bound %" PRIu64 ")", k,
                  bytes - prev_bytes, step_bound);
    prev_bytes = bytes;
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_HEADER, "commit");
    ck_assert_uint_eq(cs_store_generation(s), k + 1);
    ck_assert_uint_eq(cs_store_rows(s), k + 1);
    ck_assert_uint_eq(cs_store_records(s), k + 1);
    ck_assert(!cs_store_recovered(s));
    cs_store_close(s);
  }
  ck_assert_msg(prev_bytes <= first_bytes + (COMMITS - 1) * step_bound, "file is %" PRIu64 " bytes",
                prev_bytes);
  /* Exactly one footer (and its seal) remains, right after the records. */
  ut_layout l;
  ut_layout_read(sc.path, &l);
  ck_assert_uint_eq(l.file_bytes, l.slot[l.newest].data_end + l.slot[l.newest].footer_bytes + CS_SEAL_BYTES);
  ck_assert_uint_eq(l.n_records, COMMITS);
  ck_assert_uint_eq(l.entries[COMMITS - 1].record_offset + l.entries[COMMITS - 1].record_bytes,
                    l.slot[l.newest].data_end);
  ut_layout_free(&l);
  assert_store(sc.path, CS_VERIFY_FULL, t, COMMITS, "after 200 commits");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_writer_rows_counts_committed_and_written_rows) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(50, 0);
  ut_table_create_store(t, sc.path, 20, 8, 0);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w, &err), CS_OK);
  ck_assert_uint_eq(cs_writer_rows(w), 20);
  uint64_t bytes = cs_writer_file_bytes(w);
  ck_assert_uint_eq(bytes, ut_file_bytes(sc.path)); /* the appended store's size */
  cs_batch *b = ut_table_batch(t, 20, 30);
  ck_assert_int_eq(cs_writer_write(w, b, &err), CS_OK);
  ck_assert_uint_eq(cs_writer_rows(w), 50);
  ck_assert_uint_gt(cs_writer_file_bytes(w), bytes); /* the written record counts */
  ck_assert_uint_eq(cs_writer_file_bytes(w), ut_file_bytes(sc.path));
  ck_assert_uint_eq(cs_batch_rows(b), 30); /* the batch is not consumed */
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  cs_batch_free(b);
  assert_store(sc.path, CS_VERIFY_FULL, t, 50, "writer rows");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_append_that_writes_nothing_changes_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(10, 0);
  ut_table_create_store(t, sc.path, 10, 0, 0);
  size_t n;
  uint8_t *before = ut_read_all(sc.path, &n);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w, &err), CS_OK);
  write_rows(w, t, 0, 0);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  assert_same_bytes(before, n, sc.path, "empty append");
  ck_assert_uint_eq(generation_of(sc.path), 1);
  free(before);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------------------ abort */

/* Appends rows [first, first + n) and aborts, after write or after prepare. */
static void append_then_abort(const char *path, const ut_table *t, uint64_t first, uint64_t n, bool prepare) {
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_append(path, &(cs_writer_options){.record_rows = 16}, &w, &err), CS_OK);
  write_rows(w, t, first, n);
  if (prepare) ck_assert_msg(cs_writer_prepare(w, &err) == CS_OK, "%s", err.msg);
  cs_writer_abort(w);
}

START_TEST(test_abort_of_append_leaves_the_file_byte_identical) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(400, 0);
  ut_table_create_store(t, sc.path, 30, 16, 0);
  ut_table_append_store(t, sc.path, 30, 20);
  for (int prepare = 0; prepare < 2; prepare++) {
    size_t n;
    uint8_t *before = ut_read_all(sc.path, &n);
    /* Far more than the old footer's size, so the file grew and must shrink. */
    append_then_abort(sc.path, t, 50, 350, prepare);
    assert_same_bytes(before, n, sc.path, prepare ? "abort after prepare" : "abort after write");
    /* And a few bytes only, which overwrite part of the old footer. */
    append_then_abort(sc.path, t, 50, 1, prepare);
    assert_same_bytes(before, n, sc.path, prepare ? "small abort after prepare" : "small abort after write");
    free(before);
  }
  assert_store(sc.path, CS_VERIFY_FULL, t, 50, "after aborts");
  ck_assert(!recovered_at_open(sc.path));
  /* The store still takes appends. */
  ut_table_append_store(t, sc.path, 50, 350);
  assert_store(sc.path, CS_VERIFY_FULL, t, 400, "append after aborts");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_abort_of_append_restores_a_torn_tail_too) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(100, 0);
  ut_table_create_store(t, sc.path, 40, 16, 0);
  uint8_t junk[333];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 37 + 1);
  ut_append_bytes(sc.path, junk, sizeof junk);
  size_t n;
  uint8_t *before = ut_read_all(sc.path, &n);
  append_then_abort(sc.path, t, 40, 60, true);
  assert_same_bytes(before, n, sc.path, "abort over a torn tail");
  free(before);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_abort_of_create_leaves_no_file_and_no_temp_file) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(100, 0);
  for (int prepare = 0; prepare < 2; prepare++) {
    cs_writer *w;
    cs_err err = {0};
    ck_assert_int_eq(
        cs_writer_create(sc.path, &two_schema, &(cs_writer_options){.record_rows = 16}, &w, &err), CS_OK);
    write_rows(w, t, 0, 100);
    if (prepare) ck_assert_int_eq(cs_writer_prepare(w, &err), CS_OK);
    ck_assert_msg(ut_dir_entries(sc.dir) == 1, "the writer works in one temporary file");
    cs_writer_abort(w);
    ck_assert_msg(!ut_exists(sc.path), "abort left a file at the path");
    ck_assert_msg(ut_dir_entries(sc.dir) == 0, "abort left %d files in the directory",
                  ut_dir_entries(sc.dir));
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_abort_of_replacing_create_leaves_the_old_file_byte_identical) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(100, 0);
  ut_table_create_store(t, sc.path, 10, 0, 0);
  size_t n;
  uint8_t *before = ut_read_all(sc.path, &n);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_create(sc.path, &two_schema, &(cs_writer_options){.replace = true}, &w, &err),
                   CS_OK);
  write_rows(w, t, 0, 100);
  ck_assert_int_eq(cs_writer_prepare(w, &err), CS_OK);
  assert_same_bytes(before, n, sc.path, "replacing create, before commit");
  cs_writer_abort(w);
  assert_same_bytes(before, n, sc.path, "replacing create, after abort");
  ck_assert_int_eq(ut_dir_entries(sc.dir), 1);
  free(before);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ----------------------------------------------------------- atomic create */

START_TEST(test_create_is_invisible_until_commit) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(100, 0);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_create(sc.path, &two_schema, NULL, &w, &err), CS_OK);
  ck_assert(!ut_exists(sc.path));
  write_rows(w, t, 0, 100);
  ck_assert(!ut_exists(sc.path));
  ck_assert_int_eq(cs_store_open(sc.path, CS_VERIFY_HEADER, &(cs_store *){NULL}, &err), CS_ENOENT);
  ck_assert_int_eq(cs_writer_prepare(w, &err), CS_OK);
  ck_assert(!ut_exists(sc.path));
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  ck_assert(ut_exists(sc.path));
  ck_assert_msg(ut_dir_entries(sc.dir) == 1, "commit left a temporary file");
  assert_store(sc.path, CS_VERIFY_FULL, t, 100, "created");
  ck_assert_uint_eq(generation_of(sc.path), 1);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_create_refuses_an_existing_path_without_replace) {
  ut_scratch sc = ut_scratch_new();
  ut_write_all(sc.path, "not a store, but mine", 21);
  cs_writer *w = (cs_writer *)1;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_create(sc.path, &two_schema, NULL, &w, &err), CS_EEXIST);
  ck_assert_ptr_null(w);
  ck_assert_msg(strstr(err.msg, sc.path) != NULL, "message '%s' does not name the path", err.msg);
  assert_same_bytes((const uint8_t *)"not a store, but mine", 21, sc.path, "refused create");
  ck_assert_int_eq(ut_dir_entries(sc.dir), 1);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_create_with_replace_replaces_an_existing_store) {
  ut_scratch sc = ut_scratch_new();
  ut_table *old = numbered_table(30, 0);
  ut_table_create_store(old, sc.path, 30, 0, 0);
  static const cs_column cols[] = {{"x", CS_TYPE_FLOAT32, true}};
  static const cs_schema schema = {1, cols};
  ut_table *t = ut_table_new(&schema);
  for (int i = 0; i < 5; i++) ut_cell_set_float(ut_table_add_row(t), CS_TYPE_FLOAT32, i * 0.25);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_create(sc.path, &schema, &(cs_writer_options){.replace = true}, &w, &err),
                   CS_OK);
  write_rows(w, t, 0, 5);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  assert_store(sc.path, CS_VERIFY_FULL, t, 5, "replaced");
  ck_assert_uint_eq(generation_of(sc.path), 1);
  ck_assert_int_eq(ut_dir_entries(sc.dir), 1);
  ut_table_free(t);
  ut_table_free(old);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------ mode, owner and group */

/* docs/security.md 5: a new store's mode is 0644 less the umask; a store
** that replaces a file takes that file's mode, owner and group, and its
** temporary file never has more than owner permissions on the way.  The
** owner parts need root (CI runs as root); elsewhere they say SKIP. */
#define UT_NOBODY 65534u /* nobody and nogroup on Debian */

static struct stat stat_ok(const char *path) {
  struct stat st;
  ck_assert_msg(stat(path, &st) == 0, "stat(%s): %s", path, strerror(errno));
  return st;
}

static void replace_with_rows(const char *path, uint64_t n) {
  ut_table *t = numbered_table(n, 7);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(path, &two_schema, &(cs_writer_options){.replace = true}, &w, &err) == CS_OK,
                "%s", err.msg);
  write_rows(w, t, 0, n);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
  assert_store(path, CS_VERIFY_FULL, t, n, "replaced");
  ut_table_free(t);
}

START_TEST(test_new_store_mode_is_0644_less_the_umask) {
  static const mode_t masks[] = {022, 027, 077, 0};
  for (int k = 0; k < 4; k++) {
    ut_scratch sc = ut_scratch_new();
    mode_t was = umask(masks[k]);
    replace_with_rows(sc.path, 3); /* replace, but nothing to replace */
    umask(was);
    ck_assert_uint_eq(stat_ok(sc.path).st_mode & 07777, 0644 & ~masks[k]);
    ut_scratch_free(&sc);
  }
}
END_TEST

START_TEST(test_replace_keeps_the_mode_owner_and_group_of_the_file_it_replaces) {
  static const mode_t modes[] = {0600, 0640, 0444, 0664};
  bool root = geteuid() == 0;
  if (!root) fprintf(stderr, "SKIP (not root): replace keeps owner nobody:nogroup; the mode part runs\n");
  for (int k = 0; k < 4; k++) {
    ut_scratch sc = ut_scratch_new();
    replace_with_rows(sc.path, 5);
    ck_assert(chmod(sc.path, modes[k]) == 0);
    if (root) ck_assert(chown(sc.path, UT_NOBODY, UT_NOBODY) == 0);
    struct stat before = stat_ok(sc.path);
    replace_with_rows(sc.path, 9);
    struct stat after = stat_ok(sc.path);
    ck_assert_uint_ne(after.st_ino, before.st_ino); /* really replaced */
    ck_assert_uint_eq(after.st_mode & 07777, modes[k]);
    ck_assert_uint_eq(after.st_uid, before.st_uid);
    ck_assert_uint_eq(after.st_gid, before.st_gid);
    ck_assert_int_eq(ut_dir_entries(sc.dir), 1);
    ut_scratch_free(&sc);
  }
}
END_TEST

/* A user who may not give the new file the old one's owner or group is
** refused before the rename: the old file stays as it was, byte for byte,
** with no temporary file left.  Run as root, by a child that drops to
** nobody:nogroup in a directory everyone may write: replacing root's file,
** and its own file whose group (root's) it is no member of, both fail;
** its own file with its own group succeeds and keeps the mode. */
START_TEST(test_replace_that_cannot_keep_the_owner_fails_before_the_rename) {
  if (geteuid() != 0) {
    fprintf(stderr, "SKIP (not root): a non-root user refused a replace that would change the owner\n");
    return;
  }
  static const struct {
    uid_t uid;
    gid_t gid;
    bool ok;
  } cases[] = {{0, 0, false}, {UT_NOBODY, 0, false}, {UT_NOBODY, UT_NOBODY, true}};
  for (int k = 0; k < 3; k++) {
    ut_scratch sc = ut_scratch_new();
    ck_assert(chmod(sc.dir, 0777) == 0);
    replace_with_rows(sc.path, 5);
    ck_assert(chmod(sc.path, 0640) == 0 && chown(sc.path, cases[k].uid, cases[k].gid) == 0);
    size_t n_before;
    uint8_t *bytes_before = ut_read_all(sc.path, &n_before);
    struct stat before = stat_ok(sc.path);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
      if (setgroups(0, NULL) != 0 || setgid(UT_NOBODY) != 0 || setuid(UT_NOBODY) != 0) _exit(3);
      ut_table *t = numbered_table(9, 7);
      cs_writer *w;
      cs_err err = {0};
      cs_rc rc = cs_writer_create(sc.path, &two_schema, &(cs_writer_options){.replace = true}, &w, &err);
      if (rc == CS_OK) {
        write_rows(w, t, 0, 9);
        rc = cs_writer_commit(w, &err);
      }
      if (rc != CS_OK && strncmp(err.msg, "colstore: cannot give the new", 29) != 0) _exit(4);
      _exit(rc == CS_OK ? 0 : 1);
    }
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    ck_assert_msg(WEXITSTATUS(status) == (cases[k].ok ? 0 : 1), "case %d: child exit %d", k,
                  WEXITSTATUS(status));
    struct stat after = stat_ok(sc.path);
    ck_assert_uint_eq(after.st_uid, cases[k].uid);
    ck_assert_uint_eq(after.st_gid, cases[k].gid);
    ck_assert_uint_eq(after.st_mode & 07777, 0640);
    if (!cases[k].ok) {
      ck_assert_uint_eq(after.st_ino, before.st_ino);
      size_t n_after;
      uint8_t *bytes_after = ut_read_all(sc.path, &n_after);
      ck_assert(n_after == n_before && memcmp(bytes_after, bytes_before, n_before) == 0);
      free(bytes_after);
    } else {
      ck_assert_uint_ne(after.st_ino, before.st_ino);
    }
    ck_assert_int_eq(ut_dir_entries(sc.dir), 1);
    free(bytes_before);
    ut_scratch_free(&sc);
  }
}
END_TEST

START_TEST(test_create_fails_with_eexist_when_the_path_appears_before_commit) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(10, 0);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_create(sc.path, &two_schema, NULL, &w, &err), CS_OK);
  write_rows(w, t, 0, 10);
  ut_write_all(sc.path, "someone else's", 14);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_EEXIST);
  assert_same_bytes((const uint8_t *)"someone else's", 14, sc.path, "raced create");
  ck_assert_msg(ut_dir_entries(sc.dir) == 1, "a failed commit left its temporary file");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_missing_paths_and_non_stores_are_refused_for_append) {
  char *dir = ut_tmpdir(), *path = ut_join(dir, "missing.cst"), *junk = ut_join(dir, "junk.cst");
  cs_writer *w = (cs_writer *)1;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_append(path, NULL, &w, &err), CS_ENOENT);
  ck_assert_ptr_null(w);
  ck_assert_int_eq(ut_open_rc(path, CS_VERIFY_HEADER, &err), CS_ENOENT);
  ck_assert(!ut_exists(path));
  char text[200];
  memset(text, 'x', sizeof text);
  ut_write_all(junk, text, sizeof text);
  w = (cs_writer *)1;
  ck_assert_int_eq(cs_writer_append(junk, NULL, &w, &err), CS_ENOTSTORE);
  ck_assert_ptr_null(w);
  assert_same_bytes((const uint8_t *)text, sizeof text, junk, "refused append");
  char *sub = ut_join(dir, "no/such/dir/t.cst");
  ck_assert_int_eq(cs_writer_create(sub, &two_schema, NULL, &w, &err), CS_ENOENT);
  free(sub);
  free(junk);
  free(path);
  ut_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_write_refuses_a_batch_of_another_schema_and_after_prepare) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(10, 0);
  ut_table_create_store(t, sc.path, 10, 0, 0);
  size_t n;
  uint8_t *before = ut_read_all(sc.path, &n);
  static const cs_column other_type[] = {{"id", CS_TYPE_INT32, false}, {"s", CS_TYPE_TEXT, true}};
  static const cs_column other_count[] = {{"id", CS_TYPE_INT64, false}};
  cs_schema s1 = {2, other_type}, s2 = {1, other_count};
  cs_batch *b1, *b2;
  cs_err err = {0};
  ck_assert_int_eq(cs_batch_new(&s1, &b1, &err), CS_OK);
  ck_assert_int_eq(cs_batch_new(&s2, &b2, &err), CS_OK);
  cs_writer *w;
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w, &err), CS_OK);
  ck_assert_int_eq(cs_writer_write(w, b1, &err), CS_ESCHEMA);
  ck_assert_int_eq(cs_writer_write(w, b2, &err), CS_EINVAL);
  cs_batch *good = ut_table_batch(t, 0, 3);
  ck_assert_int_eq(cs_writer_write(w, good, &err), CS_OK);
  ck_assert_int_eq(cs_writer_prepare(w, &err), CS_OK);
  ck_assert_int_eq(cs_writer_write(w, good, &err), CS_EINVAL);
  cs_writer_abort(w);
  assert_same_bytes(before, n, sc.path, "refused writes");
  cs_batch_free(good);
  cs_batch_free(b1);
  cs_batch_free(b2);
  free(before);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------------------- crashes */

enum crash_point { CRASH_AFTER_WRITE, CRASH_AFTER_PREPARE };

/* A child appends the whole batch and dies at the given point. */
static void crash_append(const char *path, const cs_batch *b, enum crash_point at) {
  pid_t pid = fork();
  ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    cs_writer *w;
    cs_err err;
    if (cs_writer_append(path, &(cs_writer_options){.record_rows = 8}, &w, &err) != CS_OK) _exit(2);
    if (cs_writer_write(w, b, &err) != CS_OK) _exit(3);
    if (at == CRASH_AFTER_PREPARE && cs_writer_prepare(w, &err) != CS_OK) _exit(4);
    _exit(0); /* no commit, no abort, no atexit */
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "crashing child failed early: status %d",
                status);
}

static void crash_case(enum crash_point at) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(120, 0);
  ut_table *ghost = numbered_table(200, -1000000); /* rows that must never appear */
  ut_table_create_store(t, sc.path, 40, 16, 0);
  ut_table_append_store(t, sc.path, 40, 20);
  uint64_t bytes_before = ut_file_bytes(sc.path);
  cs_batch *b = ut_table_batch(ghost, 0, 200);
  crash_append(sc.path, b, at);
  cs_batch_free(b);
  ck_assert_msg(ut_file_bytes(sc.path) > bytes_before, "the child wrote nothing; the test lost its point");
  /* The uncommitted records are complete on disk, and invisible. */
  assert_store(sc.path, CS_VERIFY_FULL, t, 60, "after the crash");
  ck_assert_uint_eq(generation_of(sc.path), 2);
  /* The next writer starts from the committed state. */
  ut_table_append_store(t, sc.path, 60, 10); /* far smaller than what the crash left */
  assert_store(sc.path, CS_VERIFY_FULL, t, 70, "append after the crash");
  assert_ends_with_its_footer(sc.path, "append after the crash");
  ut_table_append_store(t, sc.path, 70, 50);
  assert_store(sc.path, CS_VERIFY_FULL, t, 120, "second append after the crash");
  ck_assert_uint_eq(generation_of(sc.path), 4);
  ck_assert(!recovered_at_open(sc.path));
  ut_table_free(ghost);
  ut_table_free(t);
  ut_scratch_free(&sc);
}

START_TEST(test_crash_after_write_shows_exactly_the_last_commit) { crash_case(CRASH_AFTER_WRITE); }
END_TEST

START_TEST(test_crash_after_prepare_shows_exactly_the_last_commit) { crash_case(CRASH_AFTER_PREPARE); }
END_TEST

START_TEST(test_crash_during_create_leaves_no_file_at_the_path) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(50, 0);
  cs_batch *b = ut_table_batch(t, 0, 50);
  pid_t pid = fork();
  ck_assert(pid >= 0);
  if (pid == 0) {
    cs_writer *w;
    cs_err err;
    if (cs_writer_create(sc.path, &two_schema, NULL, &w, &err) != CS_OK) _exit(2);
    if (cs_writer_write(w, b, &err) != CS_OK) _exit(3);
    if (cs_writer_prepare(w, &err) != CS_OK) _exit(4);
    _exit(0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ck_assert_msg(!ut_exists(sc.path), "a crashed create left a file at the path");
  cs_batch_free(b);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------------------- recovery */

/* A store of 3 commits (60 rows, several records each) for damage tests. */
static ut_table *three_commits(const char *path) {
  ut_table *t = numbered_table(100, 0);
  ut_table_create_store(t, path, 20, 8, 0);
  ut_table_append_store(t, path, 20, 25);
  ut_table_append_store(t, path, 45, 15);
  return t;
}

START_TEST(test_damaged_footer_is_rebuilt_from_record_headers) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = three_commits(sc.path);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  const cs_disk_slot *slot = &l.slot[l.newest];
  /* The magic, the header checksum, the middle, the last byte. */
  uint64_t spots[] = {0, 56, slot->footer_bytes / 2, slot->footer_bytes - 1};
  for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "footer byte %" PRIu64, spots[k]);
    ut_copy_file(sc.path, sc.copy);
    ut_xor_byte(sc.copy, slot->footer_offset + spots[k], 0x40);
    assert_reopens(sc.copy, true, 3, t, 60, ctx);
  }
  /* A recovered store takes appends, which write a fresh footer. */
  ut_table_append_store(t, sc.copy, 60, 40);
  assert_store(sc.copy, CS_VERIFY_FULL, t, 100, "append after recovery");
  ck_assert(!recovered_at_open(sc.copy));
  ut_layout_free(&l);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_footer_cut_off_by_truncation_is_recovered) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = three_commits(sc.path);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  uint64_t data_end = l.slot[l.newest].data_end;
  ut_layout_free(&l);
  ut_truncate(sc.path, data_end + 10); /* a torn footer */
  assert_reopens(sc.path, true, 0, t, 60, "torn footer");
  ut_truncate(sc.path, data_end); /* no footer at all */
  assert_reopens(sc.path, true, 0, t, 60, "no footer");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_torn_tail_after_the_footer_is_ignored) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = three_commits(sc.path);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  /* The nastiest garbage: a copy of a real record, then random bytes. */
  uint8_t *rec = malloc(l.entries[0].record_bytes);
  ck_assert_ptr_nonnull(rec);
  ut_pread(sc.path, l.entries[0].record_offset, rec, l.entries[0].record_bytes);
  ut_append_bytes(sc.path, rec, l.entries[0].record_bytes);
  ut_rng r = ut_rng_seed(77);
  uint8_t junk[1000];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)ut_rng_u64(&r);
  ut_append_bytes(sc.path, junk, sizeof junk);
  assert_reopens(sc.path, false, 3, t, 60, "torn tail");
  ut_table_append_store(t, sc.path, 60, 1);
  assert_store(sc.path, CS_VERIFY_FULL, t, 61, "append over a torn tail");
  assert_ends_with_its_footer(sc.path, "append over a torn tail");
  free(rec);
  ut_layout_free(&l);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_damaged_newest_slot_falls_back_to_the_previous_generation) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = three_commits(sc.path); /* generations 1, 2, 3: 20, 45, 60 rows */
  ut_layout l;
  ut_layout_read(sc.path, &l);
  ck_assert_uint_eq(l.slot[l.newest].generation, 3);
  ck_assert(l.slot_valid[!l.newest]);
  ck_assert_uint_eq(l.slot[!l.newest].generation, 2);
  /* Damage in the magic, the generation, data_end, the checksum. */
  const uint64_t spots[] = {0, 8, 16, 56};
  for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "newest slot byte %" PRIu64, spots[k]);
    ut_copy_file(sc.path, sc.copy);
    ut_xor_byte(sc.copy, l.slot_offset + spots[k], 0x01);
    cs_store *s = ut_open_ok(sc.copy, CS_VERIFY_FULL, ctx);
    ck_assert_msg(cs_store_generation(s) == 2, "%s: generation %" PRIu64, ctx, cs_store_generation(s));
    ut_assert_store_equals(s, t, 45, ctx);
    cs_store_close(s);
  }
  /* Damage to the older slot changes nothing. */
  ut_copy_file(sc.path, sc.copy);
  ut_xor_byte(sc.copy, (l.newest ? CS_SLOT0_OFFSET : CS_SLOT1_OFFSET) + 20, 0x01);
  assert_reopens(sc.copy, false, 3, t, 60, "older slot");
  ut_layout_free(&l);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_store_with_both_slots_damaged_is_recovered_by_a_scan) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = three_commits(sc.path);
  zero_slot(sc.path, CS_SLOT0_OFFSET);
  zero_slot(sc.path, CS_SLOT1_OFFSET);
  assert_reopens(sc.path, true, 0, t, 60, "no slots");
  ut_table_append_store(t, sc.path, 60, 40);
  assert_store(sc.path, CS_VERIFY_FULL, t, 100, "append after a slot scan");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* Two commits of t's first 25 rows, then a writer of 30 ghost rows that
** dies at `at`, then both commit slots lost: the double fault. */
static void two_commits_a_crash_and_no_slots(const char *path, const ut_table *t, enum crash_point at) {
  ut_table *ghost = numbered_table(30, -1000000);
  ut_table_create_store(t, path, 12, 8, 0);
  ut_table_append_store(t, path, 12, 13);
  cs_batch *b = ut_table_batch(ghost, 0, 30);
  crash_append(path, b, at);
  cs_batch_free(b);
  ut_table_free(ghost);
  zero_slot(path, CS_SLOT0_OFFSET);
  zero_slot(path, CS_SLOT1_OFFSET);
}

/* With no valid slot the scan cannot ask a slot what was committed: records
** of the newest generation count only if their footer follows them, so a
** writer that died before prepare is not resurrected. */
START_TEST(test_scan_without_slots_drops_records_a_crash_left_unsealed) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(40, 0);
  two_commits_a_crash_and_no_slots(sc.path, t, CRASH_AFTER_WRITE);
  assert_reopens(sc.path, true, 2, t, 25, "unsealed generation dropped");
  ut_table_append_store(t, sc.path, 25, 15);
  assert_store(sc.path, CS_VERIFY_FULL, t, 40, "append after the scan");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* The double fault the seal closes: a transaction prepared (records and
** footer written and synced) but never committed, then both slots lost.
** The footer is complete, but only the commit seal proves a commit, so the
** scan opens the last committed generation; and a committed one, whose
** seal is there, survives the same loss. */
START_TEST(test_scan_without_slots_never_resurrects_a_prepared_transaction) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(60, 0);
  two_commits_a_crash_and_no_slots(sc.path, t, CRASH_AFTER_PREPARE);
  assert_reopens(sc.path, true, 2, t, 25, "prepared, never committed, both slots lost");
  /* commit 3 for real, then lose both slots again: it is kept */
  ut_table_append_store(t, sc.path, 25, 15);
  zero_slot(sc.path, CS_SLOT0_OFFSET);
  zero_slot(sc.path, CS_SLOT1_OFFSET);
  assert_reopens(sc.path, true, 3, t, 40, "committed, both slots lost");
  /* and a seal damaged with them leaves only what the records prove */
  ut_xor_byte(sc.path, ut_file_bytes(sc.path) - CS_SEAL_BYTES + 8, 0x01);
  assert_reopens(sc.path, true, 2, t, 25, "committed, slots and seal lost");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* Regression: with no valid slot and no record to recover, open once left
** data_end at 0, and the next append wrote its record over the preamble. */
START_TEST(test_append_to_an_empty_store_with_a_damaged_slot_keeps_the_preamble) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(5, 0);
  ut_table_create_store(t, sc.path, 0, 0, 0);
  zero_slot(sc.path, CS_SLOT1_OFFSET);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "empty, no slot");
  ck_assert_uint_eq(cs_store_rows(s), 0);
  cs_store_close(s);
  ut_table_append_store(t, sc.path, 0, 5);
  assert_store(sc.path, CS_VERIFY_FULL, t, 5, "append to an empty store without slots");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------- locks, snapshots */

START_TEST(test_second_writer_gets_ebusy_while_the_first_holds_the_lock) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(20, 0);
  ut_table_create_store(t, sc.path, 10, 0, 0);
  cs_writer *w1, *w2 = (cs_writer *)1;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w1, &err), CS_OK);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  ck_assert_int_eq(cs_writer_append(sc.path, &(cs_writer_options){.lock_timeout_ms = 40}, &w2, &err),
                   CS_EBUSY);
  clock_gettime(CLOCK_MONOTONIC, &b);
  ck_assert_ptr_null(w2);
  ck_assert_msg(strstr(err.msg, sc.path) != NULL, "message '%s' does not name the path", err.msg);
  double waited_ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
  ck_assert_msg(waited_ms >= 30, "gave up after %.1f ms instead of waiting 40", waited_ms);
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w2, &err), CS_EBUSY); /* timeout 0: at once */
  /* Once the first commits, the second gets in and sees its rows. */
  write_rows(w1, t, 10, 5);
  ck_assert_int_eq(cs_writer_commit(w1, &err), CS_OK);
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w2, &err), CS_OK);
  ck_assert_uint_eq(cs_writer_rows(w2), 15);
  cs_writer_abort(w2);
  /* An aborted writer releases the lock too. */
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w2, &err), CS_OK);
  cs_writer_abort(w2);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_writer_waits_for_a_lock_held_by_another_process) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(30, 0);
  ut_table_create_store(t, sc.path, 10, 0, 0);
  cs_batch *b = ut_table_batch(t, 10, 10);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert(pid >= 0);
  if (pid == 0) {
    cs_writer *w;
    cs_err err;
    close(fds[0]);
    if (cs_writer_append(sc.path, NULL, &w, &err) != CS_OK) _exit(2);
    if (write(fds[1], "L", 1) != 1) _exit(3); /* holding the lock now */
    nanosleep(&(struct timespec){0, 150 * 1000 * 1000}, NULL);
    if (cs_writer_write(w, b, &err) != CS_OK || cs_writer_commit(w, &err) != CS_OK) _exit(4);
    _exit(0);
  }
  close(fds[1]);
  char c;
  ck_assert_int_eq(read(fds[0], &c, 1), 1);
  close(fds[0]);
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w, &err), CS_EBUSY);
  ck_assert_msg(cs_writer_append(sc.path, &(cs_writer_options){.lock_timeout_ms = 10000}, &w, &err) == CS_OK,
                "%s", err.msg);
  ck_assert_uint_eq(cs_writer_rows(w), 20); /* it waited for the commit */
  write_rows(w, t, 20, 10);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_store(sc.path, CS_VERIFY_FULL, t, 30, "two processes");
  cs_batch_free(b);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_open_snapshot_keeps_its_rows_while_appends_commit) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = numbered_table(300, 0);
  ut_table_create_store(t, sc.path, 50, 16, 0);
  cs_store *old = ut_open_ok(sc.path, CS_VERIFY_FULL, "snapshot");
  cs_err err = {0};
  bool current = false;
  ck_assert_int_eq(cs_store_is_current(old, &current, &err), CS_OK);
  ck_assert(current);
  cs_writer *w;
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w, &err), CS_OK);
  write_rows(w, t, 50, 100);
  ck_assert_int_eq(cs_writer_prepare(w, &err), CS_OK);
  ck_assert_int_eq(cs_store_is_current(old, &current, &err), CS_OK);
  ck_assert_msg(current, "a prepared but uncommitted append made the snapshot stale");
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  ck_assert_int_eq(cs_store_is_current(old, &current, &err), CS_OK);
  ck_assert_msg(!current, "the snapshot did not notice the commit");
  ut_assert_store_equals(old, t, 50, "old snapshot after one append");
  ck_assert_int_eq(cs_store_verify(old, &err), CS_OK);
  /* A second append overwrites the footer the old snapshot was read from. */
  ut_table_append_store(t, sc.path, 150, 150);
  ut_assert_store_equals(old, t, 50, "old snapshot after two appends");
  ck_assert_uint_eq(cs_store_generation(old), 1);
  cs_store *fresh = ut_open_ok(sc.path, CS_VERIFY_FULL, "fresh");
  ut_assert_store_equals(fresh, t, 300, "fresh snapshot");
  ck_assert_int_eq(cs_store_is_current(fresh, &current, &err), CS_OK);
  ck_assert(current);
  cs_store_close(fresh);
  cs_store_close(old);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------ beyond 2^31 rows */

START_TEST(test_store_beyond_2_pow_31_rows_reads_back_at_the_end) {
  if (getenv("COLSTORE_ASAN")) {
    printf(
        "check_writer: skipped test_store_beyond_2_pow_31_rows_reads_back_at_the_end: COLSTORE_ASAN is "
        "set\n");
    return;
  }
  ut_scratch sc = ut_scratch_new();
  struct statvfs vfs;
  ck_assert_int_eq(statvfs(sc.dir, &vfs), 0);
  uint64_t free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
  if (free_bytes < (8ull << 30)) {
    printf("check_writer: skipped test_store_beyond_2_pow_31_rows_reads_back_at_the_end: only %" PRIu64
           " MiB free in %s\n",
           free_bytes >> 20, sc.dir);
    ut_scratch_free(&sc);
    return;
  }
  const uint64_t big = 1ull << 26, repeats = 32, tail = 8;
  static const cs_column cols[] = {{"v", CS_TYPE_UINT8, false}};
  static const cs_schema schema = {1, cols};
  cs_batch *b, *small;
  cs_err err = {0};
  ck_assert_int_eq(cs_batch_new(&schema, &b, &err), CS_OK);
  ck_assert_int_eq(cs_batch_new(&schema, &small, &err), CS_OK);
  for (uint64_t i = 0; i < big; i++) {
    cs_batch_put_i64(b, 0, (int64_t)((i * 131 + 7) & 0xFF), &err);
    cs_batch_end_row(b);
  }
  for (uint64_t i = 0; i < tail; i++) {
    cs_batch_put_i64(small, 0, (int64_t)(200 + i), &err);
    cs_batch_end_row(small);
  }
  cs_writer *w;
  ck_assert_int_eq(cs_writer_create(sc.path, &schema, &(cs_writer_options){.record_rows = big}, &w, &err),
                   CS_OK);
  for (uint64_t k = 0; k < repeats; k++)
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "write %" PRIu64 ": %s", k, err.msg);
  ck_assert_int_eq(cs_writer_write(w, small, &err), CS_OK);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
  cs_batch_free(b);
  cs_batch_free(small);

  const uint64_t two31 = 1ull << 31;
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_HEADER, "big");
  ck_assert_uint_eq(cs_store_rows(s), two31 + tail);
  ck_assert_uint_eq(cs_store_records(s), repeats + 1);
  ck_assert_msg(cs_store_file_bytes(s) > two31, "file is only %" PRIu64 " bytes", cs_store_file_bytes(s));
  ck_assert_uint_eq(cs_store_find_record(s, two31 + 3), repeats);
  ck_assert_uint_eq(cs_store_find_record(s, two31 + tail - 1), repeats);
  ck_assert_uint_eq(cs_store_find_record(s, two31 - 1), repeats - 1);
  ck_assert_uint_eq(cs_store_find_record(s, two31 - big), repeats - 1);
  ck_assert_uint_eq(cs_store_find_record(s, two31 - big - 1), repeats - 2);
  ck_assert_uint_eq(cs_store_record_first_row(s, repeats), two31);
  ut_cell c;
  ut_store_cell(s, two31 + 3, 0, &c);
  ck_assert_int_eq(c.i, 203);
  ut_store_cell(s, two31 - 1, 0, &c);
  ck_assert_int_eq(c.i, (int64_t)(((big - 1) * 131 + 7) & 0xFF));
  ut_store_cell(s, 17 * big + 12345, 0, &c);
  ck_assert_int_eq(c.i, (12345 * 131 + 7) & 0xFF);
  ck_assert_msg(cs_store_verify(s, &err) == CS_OK, "%s", err.msg);
  cs_column_stats st;
  cs_store_column_stats(s, 0, &st);
  ck_assert(st.has_minmax && st.min.i == 0 && st.max.i == 255 && !st.sorted);
  cs_store_close(s);
  ck_assert_int_eq(unlink(sc.path), 0);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------------------ main */

static Suite *writer_suite(void) {
  Suite *s = suite_create("writer");
  TCase *tc = tcase_create("commits");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_many_single_row_commits_grow_the_file_linearly);
  tcase_add_test(tc, test_writer_rows_counts_committed_and_written_rows);
  tcase_add_test(tc, test_append_that_writes_nothing_changes_nothing);
  tcase_add_test(tc, test_abort_of_append_leaves_the_file_byte_identical);
  tcase_add_test(tc, test_abort_of_append_restores_a_torn_tail_too);
  tcase_add_test(tc, test_abort_of_create_leaves_no_file_and_no_temp_file);
  tcase_add_test(tc, test_abort_of_replacing_create_leaves_the_old_file_byte_identical);
  tcase_add_test(tc, test_create_is_invisible_until_commit);
  tcase_add_test(tc, test_create_refuses_an_existing_path_without_replace);
  tcase_add_test(tc, test_create_with_replace_replaces_an_existing_store);
  tcase_add_test(tc, test_create_fails_with_eexist_when_the_path_appears_before_commit);
  tcase_add_test(tc, test_new_store_mode_is_0644_less_the_umask);
  tcase_add_test(tc, test_replace_keeps_the_mode_owner_and_group_of_the_file_it_replaces);
  tcase_add_test(tc, test_replace_that_cannot_keep_the_owner_fails_before_the_rename);
  tcase_add_test(tc, test_missing_paths_and_non_stores_are_refused_for_append);
  tcase_add_test(tc, test_write_refuses_a_batch_of_another_schema_and_after_prepare);
  suite_add_tcase(s, tc);

  tc = tcase_create("crash");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_crash_after_write_shows_exactly_the_last_commit);
  tcase_add_test(tc, test_crash_after_prepare_shows_exactly_the_last_commit);
  tcase_add_test(tc, test_crash_during_create_leaves_no_file_at_the_path);
  tcase_add_test(tc, test_damaged_footer_is_rebuilt_from_record_headers);
  tcase_add_test(tc, test_footer_cut_off_by_truncation_is_recovered);
  tcase_add_test(tc, test_torn_tail_after_the_footer_is_ignored);
  tcase_add_test(tc, test_damaged_newest_slot_falls_back_to_the_previous_generation);
  tcase_add_test(tc, test_store_with_both_slots_damaged_is_recovered_by_a_scan);
  tcase_add_test(tc, test_scan_without_slots_drops_records_a_crash_left_unsealed);
  tcase_add_test(tc, test_scan_without_slots_never_resurrects_a_prepared_transaction);
  tcase_add_test(tc, test_append_to_an_empty_store_with_a_damaged_slot_keeps_the_preamble);
  suite_add_tcase(s, tc);

  tc = tcase_create("concurrency");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_second_writer_gets_ebusy_while_the_first_holds_the_lock);
  tcase_add_test(tc, test_writer_waits_for_a_lock_held_by_another_process);
  tcase_add_test(tc, test_open_snapshot_keeps_its_rows_while_appends_commit);
  suite_add_tcase(s, tc);

  tc = tcase_create("large");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, test_store_beyond_2_pow_31_rows_reads_back_at_the_end);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(writer_suite()); }
