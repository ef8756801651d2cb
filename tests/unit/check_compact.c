/*
** check_compact.c - cs_compact: a store rewritten without its dead bytes,
** every value and every deleted position kept (or, renumbered, every live
** row in order), crash-safe, and safe beside writers and readers.
**
** The reference is a ut_table model given the same inserts, deletions and
** updates as the store (ut_update_commit changes both).  After compaction
** the store must hold the model cell by cell, with exactly the model's
** deletions (without renumber) or exactly its live rows renumbered, in the
** record boundaries the options ask for; and each chunk must describe its
** values as a freshly written chunk of the same values does
** (ut_assert_chunks_like_fresh), whether compaction re-laid it or copied it
** byte for byte.  Random stores mix small records (many INSERT commits),
** patched chunks and deletions, from fixed seeds that every failure names.
**
** Crashes are made with the step hook: a forked child compacts and _exits
** at a step, and the store must then be the old state or the new one,
** whole.  The lock is tested both ways: a compaction waits for a writer,
** and a writer that opened the file before the rename and waited for the
** lock ends up appending to the new file, not the unlinked old one.
*/
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cs_write_internal.h"
#include "unit_util.h"

static const cs_column cols[] = {
    {"id", CS_TYPE_INT64, false},    {"i32", CS_TYPE_INT32, true}, {"f64", CS_TYPE_FLOAT64, true},
    {"f32", CS_TYPE_FLOAT32, false}, {"b", CS_TYPE_BOOL, true},    {"t", CS_TYPE_TEXT, true},
    {"bl", CS_TYPE_BLOB, true},
};
static const cs_schema schema = {7, cols};

static cs_compact_report compact_ok(const char *path, bool renumber, uint64_t record_rows, const char *ctx) {
  cs_compact_options opt = {.renumber = renumber, .record_rows = record_rows};
  cs_compact_report rep;
  cs_err err = {0};
  cs_rc rc = cs_compact(path, &opt, &rep, &err);
  ck_assert_msg(rc == CS_OK, "%s: cs_compact gave %s: %s", ctx, cs_rc_name(rc), err.msg);
  return rep;
}

/* The model's live rows, in order. */
static ut_table *live_rows(const ut_table *t, const bool *del) {
  ut_table *l = ut_table_new(&t->schema);
  for (uint64_t row = 0; row < t->n_rows; row++) {
    if (del[row]) continue;
    ut_cell *c = ut_table_add_row(l);
    for (uint32_t k = 0; k < t->schema.n_cols; k++) {
      const ut_cell *src = ut_table_cell(t, row, k);
      if (src->null)
        ut_cell_set_null(&c[k]);
      else if (src->bytes || t->schema.cols[k].type == CS_TYPE_TEXT || t->schema.cols[k].type == CS_TYPE_BLOB)
        ut_cell_set_bytes(&c[k], src->bytes, src->len);
      else
        c[k] = *src;
    }
  }
  return l;
}

static uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* A store of n rows at path in records of rr rows, appended in several
** commits (small records), then deleted from and updated at random; t and
** del are the model. */
static ut_table *random_store(const char *path, uint64_t n, uint64_t rr, bool **out_del, ut_rng *r) {
  ut_table *t = ut_random_table(&schema, n, 100, ut_rng_u64(r));
  uint64_t first = n / 2;
  ut_table_create_store(t, path, first, rr, 0);
  while (first < n) {
    uint64_t k = 1 + ut_rng_below(r, 40);
    if (k > n - first) k = n - first;
    ut_table_append_store(t, path, first, k);
    first += k;
  }
  bool *del = calloc(n ? n : 1, 1);
  ck_assert_ptr_nonnull(del);
  for (int txn = 0; txn < 3 && n; txn++) {
    uint64_t k = ut_rng_below(r, n / 4 + 1), *rows = malloc((k ? k : 1) * sizeof *rows);
    for (uint64_t i = 0; i < k; i++) rows[i] = ut_rng_below(r, n), del[rows[i]] = true;
    ut_delete_commit(path, rows, k);
    free(rows);
    /* An update of live rows, some columns. */
    uint64_t m = ut_rng_below(r, n / 5 + 1), got = 0;
    uint64_t *up = malloc((m ? m : 1) * sizeof *up);
    for (uint64_t i = 0; i < m; i++) {
      uint64_t row = ut_rng_below(r, n);
      if (!del[row]) up[got++] = row;
    }
    ut_table *vals = ut_random_table(&schema, got ? got : 1, 100, ut_rng_u64(r));
    for (uint64_t i = 0; i < got; i++)
      ut_cell_set_int(ut_table_cell(vals, i, 0), (int64_t)up[i]); /* id stays sorted */
    uint8_t set[7];
    for (int c = 0; c < 7; c++) set[c] = (uint8_t)ut_rng_below(r, 2);
    if (got) ut_update_commit(path, t, up, got, vals, set);
    ut_table_free(vals);
    free(up);
  }
  *out_del = del;
  return t;
}

/* ------------------------------------------------------------- contents */

START_TEST(test_compact_random_stores_keep_every_value_and_position) {
  static const uint64_t pers[] = {0, 16, 24, 64, 1000};
  for (uint64_t seed = 1; seed <= 24; seed++) {
    char ctx[128];
    ut_rng r = ut_rng_seed(seed * 7919);
    uint64_t n = ut_rng_below(&r, 700), rr = 8 * (1 + ut_rng_below(&r, 8));
    uint64_t per = pers[seed % 5] ? pers[seed % 5] : 0;
    if (seed % 3 == 0) per = rr; /* whole records go across byte for byte */
    uint64_t want_per = per ? (per + 7) / 8 * 8 : CS_DEFAULT_RECORD_ROWS;
    snprintf(ctx, sizeof ctx,
             "seed %" PRIu64 " (rows %" PRIu64 ", records of %" PRIu64 ", compacted to %" PRIu64 ")", seed, n,
             rr, want_per);
    ut_scratch sc = ut_scratch_new();
    bool *del;
    ut_table *t = random_store(sc.path, n, rr, &del, &r);
    ut_copy_file(sc.path, sc.copy);
    cs_store *old = ut_open_ok(sc.path, CS_VERIFY_FULL, ctx);
    uint64_t dead = n - cs_store_live_rows(old), gen = cs_store_generation(old);

    /* Positions kept. */
    cs_compact_report rep = compact_ok(sc.path, false, per, ctx);
    ck_assert_msg(rep.before.positions == n && rep.before.rows == n - dead &&
                      rep.before.records == cs_store_records(old) &&
                      rep.before.bytes == cs_store_file_bytes(old) &&
                      rep.before.free_bytes == cs_store_free_bytes(old),
                  "%s: report before", ctx);
    ck_assert_msg(rep.after.positions == n && rep.after.rows == n - dead &&
                      rep.after.records == div_up(n, want_per) && rep.after.free_bytes == 0 &&
                      rep.after.bytes == ut_file_bytes(sc.path) && rep.generation == gen + 1,
                  "%s: report after: %" PRIu64 " positions %" PRIu64 " rows %" PRIu64 " records", ctx,
                  rep.after.positions, rep.after.rows, rep.after.records);
    if (per == rr && n >= rr) ck_assert_msg(rep.records_copied > 0, "%s: no record went across whole", ctx);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, ctx);
    ut_assert_store_equals(s, t, n, ctx);
    ut_assert_deleted(s, del, n, ctx);
    ck_assert_uint_eq(cs_store_free_bytes(s), 0);
    ck_assert_uint_eq(cs_store_generation(s), gen + 1);
    ck_assert_uint_eq(ut_file_version(sc.path), dead ? 2 : 1);
    ut_assert_chunks_like_fresh(s, t, del, ctx);
    for (uint64_t rec = 0; rec + 1 < cs_store_records(s); rec++)
      ck_assert_uint_eq(cs_store_record_rows(s, rec), want_per);
    cs_store_close(s);

    /* Renumbered, from the same input. */
    rep = compact_ok(sc.copy, true, per, ctx);
    ut_table *l = live_rows(t, del);
    ck_assert_msg(rep.after.positions == n - dead && rep.after.rows == n - dead &&
                      rep.after.records == div_up(n - dead, want_per),
                  "%s: renumbered report", ctx);
    s = ut_open_ok(sc.copy, CS_VERIFY_FULL, ctx);
    ut_assert_store_equals(s, l, l->n_rows, ctx);
    ck_assert_uint_eq(cs_store_rows(s), n - dead);
    ck_assert_uint_eq(cs_store_live_rows(s), n - dead);
    ck_assert_uint_eq(ut_file_version(sc.copy), 1); /* nothing deleted or patched: an older reader reads it */
    ut_assert_chunks_like_fresh(s, l, NULL, ctx);
    cs_store_close(s);

    /* The compacted files take appends and deletions as any store does. */
    ut_table_append_store(t, sc.path, 0, 1);
    uint64_t last = n;
    ck_assert_uint_eq(ut_delete_commit(sc.path, &last, 1), 1);
    cs_store_close(old);
    ut_table_free(l);
    ut_table_free(t);
    free(del);
    ut_scratch_free(&sc);
  }
}
END_TEST

/* on_progress: once per old record, in order, its counts growing to the
** totals, then once finished; a nonzero return stops the compaction with
** the file byte-identical and no temporary file left. */
typedef struct progress_seen {
  int calls, finished, stop_at;
  cs_compact_progress last;
} progress_seen;

static int on_progress(void *ctx, const cs_compact_progress *p) {
  progress_seen *seen = ctx;
  ck_assert(p->records >= seen->last.records && p->positions >= seen->last.positions &&
            p->bytes >= seen->last.bytes);
  ck_assert(p->records <= p->records_total && p->positions <= p->positions_total &&
            p->bytes <= p->bytes_total);
  seen->calls++;
  seen->finished += p->finished;
  seen->last = *p;
  return seen->stop_at && seen->calls >= seen->stop_at;
}

START_TEST(test_compact_progress_reports_every_record_and_stops) {
  for (int renumber = 0; renumber <= 1; renumber++) {
    ut_rng r = ut_rng_seed(4242 + (uint64_t)renumber);
    ut_scratch sc = ut_scratch_new();
    bool *del;
    ut_table *t = random_store(sc.path, 600, 16, &del, &r);
    ut_copy_file(sc.path, sc.copy);
    cs_store *old = ut_open_ok(sc.path, CS_VERIFY_HEADER, "progress");
    uint64_t records = cs_store_records(old), positions = cs_store_rows(old);
    cs_store_close(old);
    ck_assert_uint_gt(records, 4);

    progress_seen seen = {0, 0, 3, {0}};
    cs_compact_options opt = {.renumber = renumber, .on_progress = on_progress, .progress_ctx = &seen};
    cs_compact_report rep;
    cs_err err = {0};
    ck_assert_int_eq(cs_compact(sc.path, &opt, &rep, &err), CS_EINVAL);
    ck_assert_msg(strstr(err.msg, "interrupted") != NULL, "%s", err.msg);
    ck_assert_int_eq(seen.calls, 3);
    ck_assert_int_eq(seen.finished, 0);
    ck_assert(ut_files_equal(sc.path, sc.copy));
    ck_assert_int_eq(ut_dir_entries(sc.dir), 2); /* the store and its copy: no temporary file */

    memset(&seen, 0, sizeof seen);
    ck_assert_msg(cs_compact(sc.path, &opt, &rep, &err) == CS_OK, "%s", err.msg);
    ck_assert_int_eq(seen.calls, (int)records + 1);
    ck_assert_int_eq(seen.finished, 1);
    ck_assert_uint_eq(seen.last.records, records);
    ck_assert_uint_eq(seen.last.records_total, records);
    ck_assert_uint_eq(seen.last.positions, positions);
    ck_assert_uint_gt(seen.last.bytes_total, 0);
    ck_assert_uint_eq(seen.last.bytes, seen.last.bytes_total);
    free(del);
    ut_table_free(t);
    ut_scratch_free(&sc);
  }
}
END_TEST

START_TEST(test_compact_empty_and_wholly_deleted_stores) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&schema, 40, 100, 5);
  ut_table_create_store(t, sc.path, 0, 16, 0);
  cs_compact_report rep = compact_ok(sc.path, false, 0, "empty");
  ck_assert_uint_eq(rep.after.records, 0);
  ck_assert_uint_eq(rep.after.positions, 0);
  ut_table_append_store(t, sc.path, 0, 40);
  uint64_t all[40];
  for (uint64_t i = 0; i < 40; i++) all[i] = i;
  ut_delete_commit(sc.path, all, 40);
  ut_copy_file(sc.path, sc.copy);
  rep = compact_ok(sc.path, false, 16, "all deleted");
  ck_assert_uint_eq(rep.after.positions, 40);
  ck_assert_uint_eq(rep.after.rows, 0);
  ck_assert_uint_eq(rep.after.records, 3);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "all deleted");
  ck_assert_uint_eq(cs_store_live_rows(s), 0);
  cs_store_close(s);
  rep = compact_ok(sc.copy, true, 16, "all deleted, renumbered");
  ck_assert_uint_eq(rep.after.positions, 0);
  ck_assert_uint_eq(rep.after.records, 0);
  /* Appends restart at rowid 0 after renumbering. */
  ut_table_append_store(t, sc.copy, 0, 5);
  s = ut_open_ok(sc.copy, CS_VERIFY_FULL, "appended after");
  ut_assert_store_equals(s, t, 5, "appended after");
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------ damage and locks */

START_TEST(test_compact_refuses_a_damaged_chunk_and_changes_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&schema, 200, 100, 9);
  ut_table_create_store(t, sc.path, 200, 64, 0);
  uint64_t rows[] = {3, 70, 150};
  ut_delete_commit(sc.path, rows, 3);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  ut_xor_byte(sc.path, ut_layout_data_offset(&l, 1, 2) + 5, 0x10); /* f64 of record 1 */
  ut_layout_free(&l);
  ut_copy_file(sc.path, sc.copy);
  int entries = ut_dir_entries(sc.dir);
  for (int renumber = 0; renumber < 2; renumber++) {
    cs_compact_report rep;
    cs_err err = {0};
    cs_rc rc = cs_compact(sc.path, &(cs_compact_options){.renumber = renumber}, &rep, &err);
    ck_assert_msg(rc == CS_ECORRUPT, "gave %s: %s", cs_rc_name(rc), err.msg);
    ck_assert_msg(strstr(err.msg, "record 1, column f64") && strstr(err.msg, "checksum mismatch"), "%s",
                  err.msg);
    ck_assert(ut_files_equal(sc.path, sc.copy));
    ck_assert_int_eq(ut_dir_entries(sc.dir), entries); /* the temporary file is gone */
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_compact_waits_for_a_writer) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&schema, 50, 100, 11);
  ut_table_create_store(t, sc.path, 50, 16, 0);
  cs_writer *w;
  cs_err err = {0};
  ck_assert(cs_writer_append(sc.path, NULL, &w, &err) == CS_OK);
  ut_copy_file(sc.path, sc.copy);
  cs_compact_report rep;
  cs_rc rc = cs_compact(sc.path, &(cs_compact_options){.lock_timeout_ms = 30}, &rep, &err);
  ck_assert_msg(rc == CS_EBUSY, "gave %s: %s", cs_rc_name(rc), err.msg);
  ck_assert(ut_files_equal(sc.path, sc.copy));
  cs_writer_abort(w);
  compact_ok(sc.path, false, 0, "after the writer");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* At "synced" (new file durable, not yet renamed, old file locked): a
** thread starts an append, which opens the old file and waits for its lock.
** A thread, not a forked child: a child would inherit the descriptor that
** holds the lock and keep it held after compaction closes its own copy. */
typedef struct race {
  const char *path;
  const ut_table *t;
  pthread_t thread;
  bool started;
  cs_rc rc;
  char msg[sizeof((cs_err *)0)->msg];
} race;

static void *append_seven(void *arg) {
  race *ra = arg;
  cs_writer *w;
  cs_err err = {0};
  ra->rc = cs_writer_append(ra->path, &(cs_writer_options){.lock_timeout_ms = 20000}, &w, &err);
  if (ra->rc == CS_OK) {
    cs_batch *b = ut_table_batch(ra->t, 0, 7);
    ra->rc = cs_writer_write(w, b, &err);
    if (ra->rc == CS_OK)
      ra->rc = cs_writer_commit(w, &err);
    else
      cs_writer_abort(w);
    cs_batch_free(b);
  }
  snprintf(ra->msg, sizeof ra->msg, "%s", err.msg);
  return NULL;
}

static void start_writer(void *ctx, const char *step) {
  race *ra = ctx;
  if (strcmp(step, "synced") != 0) return;
  ck_assert(pthread_create(&ra->thread, NULL, append_seven, ra) == 0);
  ra->started = true;
  usleep(200 * 1000); /* let it open the old file and block on the lock */
}

START_TEST(test_compact_a_waiting_writer_appends_to_the_new_file) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&schema, 100, 100, 13);
  ut_table_create_store(t, sc.path, 100, 16, 0);
  uint64_t rows[] = {1, 2, 3, 50};
  ut_delete_commit(sc.path, rows, 4);
  race ra = {.path = sc.path, .t = t};
  cs_compact_report rep;
  cs_err err = {0};
  ck_assert(cs_compact(sc.path,
                       &(cs_compact_options){.renumber = true, .on_step = start_writer, .step_ctx = &ra},
                       &rep, &err) == CS_OK);
  ck_assert(ra.started && pthread_join(ra.thread, NULL) == 0);
  ck_assert_msg(ra.rc == CS_OK, "the writer failed: %s: %s", cs_rc_name(ra.rc), ra.msg);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "after the race");
  ck_assert_uint_eq(cs_store_rows(s), 96 + 7); /* the renumbered rows, then the append */
  ck_assert_uint_eq(cs_store_live_rows(s), 96 + 7);
  ut_cell c;
  ut_store_cell(s, 96, 0, &c);
  ck_assert_int_eq(c.i, 0); /* row 0 of the model, appended */
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------------------- crashes */

/* The directory read as a dataset has one member: a temporary file a
** crash left is none. */
static void assert_one_member(const char *dir, const char *ctx) {
  cs_store *ds = NULL;
  cs_err err = {0};
  ck_assert_msg(cs_store_open_source(dir, CS_VERIFY_HEADER, &ds, &err) == CS_OK, "%s: %s", ctx, err.msg);
  ck_assert_uint_eq(cs_store_files(ds), 1);
  cs_store_close(ds);
}

static const char *crash_step;
static void crash_at(void *ctx, const char *step) {
  (void)ctx;
  if (strcmp(step, crash_step) == 0) _exit(0);
}

START_TEST(test_compact_crash_at_every_step_leaves_old_or_new) {
  static const char *steps[] = {"locked", "written", "synced", "renamed"};
  for (int k = 0; k < 4; k++) {
    ut_scratch sc = ut_scratch_new();
    ut_rng r = ut_rng_seed(100 + (uint64_t)k);
    bool *del;
    ut_table *t = random_store(sc.path, 300, 16, &del, &r);
    cs_store *before = ut_open_ok(sc.path, CS_VERIFY_FULL, steps[k]);
    uint64_t live = cs_store_live_rows(before);
    cs_store_close(before);
    crash_step = steps[k];
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
      cs_compact_report rep;
      cs_err err;
      (void)cs_compact(sc.path, &(cs_compact_options){.renumber = true, .on_step = crash_at}, &rep, &err);
      _exit(1);
    }
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, steps[k]);
    if (k < 3) { /* not renamed yet: the old store, whole */
      ut_assert_store_equals(s, t, t->n_rows, steps[k]);
      ut_assert_deleted(s, del, t->n_rows, steps[k]);
    } else { /* renamed: the new one */
      ut_table *l = live_rows(t, del);
      ut_assert_store_equals(s, l, live, steps[k]);
      ck_assert_uint_eq(cs_store_rows(s), live);
      ut_table_free(l);
    }
    cs_store_close(s);
    /* A temporary file left by the crash is no member of the directory. */
    assert_one_member(sc.dir, steps[k]);
    /* And the store compacts again from there. */
    compact_ok(sc.path, false, 0, steps[k]);
    ut_table_free(t);
    free(del);
    ut_scratch_free(&sc);
  }
}
END_TEST

/* ------------------------------------------------ mode, owner and group */

/* A compaction keeps the store's mode, owner and group (docs/security.md 5),
** and its temporary file is never wider than the store on the way: the
** step hook stats it once it holds every row ("written"), which is the
** longest a temporary file lives.  The owner part needs root (CI runs as
** root); elsewhere it says SKIP and the mode part runs. */
typedef struct temp_seen {
  const char *dir;
  int files;      /* temporary files found at "written" */
  struct stat st; /* the one found */
} temp_seen;

static void stat_temp(void *ctx, const char *step) {
  temp_seen *ts = ctx;
  if (strcmp(step, "written") != 0) return;
  DIR *d = opendir(ts->dir);
  ck_assert(d != NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strstr(e->d_name, ".tmp.")) continue;
    char *p = ut_join(ts->dir, e->d_name);
    ck_assert(stat(p, &ts->st) == 0);
    ts->files++;
    free(p);
  }
  closedir(d);
}

START_TEST(test_compact_keeps_mode_owner_and_group_and_its_temp_is_never_wider) {
  static const mode_t modes[] = {0600, 0640, 0400, 0644};
  bool root = geteuid() == 0;
  if (!root) fprintf(stderr, "SKIP (not root): compaction keeps owner nobody:nogroup; the mode part runs\n");
  for (int k = 0; k < 4; k++) {
    ut_scratch sc = ut_scratch_new();
    ut_table *t = ut_random_table(&schema, 120, 100, 31 + (uint64_t)k);
    ut_table_create_store(t, sc.path, 60, 16, 0);
    ut_table_append_store(t, sc.path, 60, 60);
    ck_assert(chmod(sc.path, modes[k]) == 0);
    if (root) ck_assert(chown(sc.path, 65534, 65534) == 0);
    struct stat before;
    ck_assert(stat(sc.path, &before) == 0);
    temp_seen ts = {.dir = sc.dir};
    cs_compact_report rep;
    cs_err err = {0};
    ck_assert_msg(cs_compact(sc.path, &(cs_compact_options){.on_step = stat_temp, .step_ctx = &ts}, &rep,
                             &err) == CS_OK,
                  "%s", err.msg);
    ck_assert_int_eq(ts.files, 1);
    ck_assert_msg((ts.st.st_mode & 07777 & ~before.st_mode) == 0, "mode %o: the temporary file had %o",
                  modes[k], ts.st.st_mode & 07777);
    ck_assert_uint_eq(ts.st.st_uid, before.st_uid);
    ck_assert_uint_eq(ts.st.st_gid, before.st_gid);
    struct stat after;
    ck_assert(stat(sc.path, &after) == 0);
    ck_assert_uint_ne(after.st_ino, before.st_ino);
    ck_assert_uint_eq(after.st_mode & 07777, modes[k]);
    ck_assert_uint_eq(after.st_uid, before.st_uid);
    ck_assert_uint_eq(after.st_gid, before.st_gid);
    ck_assert_uint_eq(rep.after.records, 1);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "compacted");
    ut_assert_store_equals(s, t, 120, "compacted");
    cs_store_close(s);
    ut_table_free(t);
    ut_scratch_free(&sc);
  }
}
END_TEST

/* ----------------------------------------------------------------- readers */

START_TEST(test_compact_readers_keep_their_snapshot) {
  ut_scratch sc = ut_scratch_new();
  ut_rng r = ut_rng_seed(77);
  bool *del;
  ut_table *t = random_store(sc.path, 400, 32, &del, &r);
  cs_store *old = ut_open_ok(sc.path, CS_VERIFY_READ, "old");
  compact_ok(sc.path, true, 64, "renumber");
  ut_assert_store_equals(old, t, t->n_rows, "old snapshot after compaction");
  ut_assert_deleted(old, del, t->n_rows, "old snapshot after compaction");
  bool current = true;
  cs_err err = {0};
  ck_assert(cs_store_is_current(old, &current, &err) == CS_OK);
  ck_assert(!current);
  cs_store *now = NULL;
  ck_assert(cs_store_reopen(old, CS_VERIFY_FULL, &now, &err) == CS_OK);
  ut_table *l = live_rows(t, del);
  ut_assert_store_equals(now, l, l->n_rows, "reopened");
  cs_store_close(now);
  cs_store_close(old);
  ut_table_free(l);
  ut_table_free(t);
  free(del);
  ut_scratch_free(&sc);
}
END_TEST

/* Through a symbolic link: the file it names is compacted, the link stays. */
START_TEST(test_compact_through_a_symlink_rewrites_the_file) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&schema, 120, 100, 21);
  ut_table_create_store(t, sc.path, 60, 16, 0);
  ut_table_append_store(t, sc.path, 60, 60);
  char *link = ut_join(sc.dir, "link.cst");
  ck_assert(symlink(sc.path, link) == 0);
  cs_compact_report rep = compact_ok(link, false, 0, "symlink");
  ck_assert_uint_eq(rep.after.records, 1);
  struct stat st;
  ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "the file the link names");
  ck_assert_uint_eq(cs_store_records(s), 1);
  ut_assert_store_equals(s, t, 120, "the file the link names");
  cs_store_close(s);
  ck_assert_int_eq(ut_dir_entries(sc.dir), 2);
  free(link);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------- automatic compaction */

/* cs_writer_options.auto_compact (docs/performance.md, "Small
** transactions"): after a commit that leaves many small records, the
** writer compacts under the lock it still holds, positions kept.  The
** model is the same ut_table with its deletions; the crash test exits a
** child at each step of the first automatic compaction, through the test
** hook cs__compact_auto_step, and the commit that triggered it must be
** there whatever step the crash hit, since it was durable before the
** compaction began. */

START_TEST(test_auto_compact_policy) {
  cs_compact_tail t = {
      .n_small = CS_AUTO_COMPACT_MIN_RECORDS, .small_bytes = 250, .free_bytes = 0, .file_bytes = 1000};
  ck_assert(cs__compact_due(&t, 4));  /* wins back a quarter: rewrite at most 4x */
  ck_assert(!cs__compact_due(&t, 3)); /* 333 needed */
  ck_assert(!cs__compact_due(&t, 0)); /* off */
  t.n_small--;
  ck_assert(!cs__compact_due(&t, 1000)); /* too few small records, whatever the ratio */
  t.n_small++, t.small_bytes = 100, t.free_bytes = 150;
  ck_assert(cs__compact_due(&t, 4)); /* superseded blocks count too */
  t = (cs_compact_tail){.n_small = 2000, .small_bytes = 1200000, .file_bytes = 161000000};
  ck_assert(!cs__compact_due(&t, 4)); /* 2,000 tiny records on a 161 MB store: not worth a rewrite yet */
}
END_TEST

/* Commits k rows [first, first + k) of t with auto_compact, and deletes
** the positions dels[0, n_dels) in the same transaction. */
static void auto_commit(const char *path, const ut_table *t, uint64_t first, uint64_t k, const uint64_t *dels,
                        uint64_t n_dels, uint32_t ratio) {
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_append(path, &(cs_writer_options){.auto_compact = ratio}, &w, &err) == CS_OK, "%s",
                err.msg);
  if (k) {
    cs_batch *b = ut_table_batch(t, first, k);
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "%s", err.msg);
    cs_batch_free(b);
  }
  if (n_dels) ck_assert_msg(cs_writer_delete(w, dels, n_dels, NULL, &err) == CS_OK, "%s", err.msg);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
}

START_TEST(test_auto_compact_keeps_every_value_and_position) {
  static const uint32_t ratios[] = {4, 1000000};
  for (int k = 0; k < 2; k++) {
    ut_scratch sc = ut_scratch_new();
    ut_rng r = ut_rng_seed(500 + (uint64_t)k);
    ut_table *t = ut_random_table(&schema, 600, 150, 600 + (uint64_t)k);
    bool *del = calloc(t->n_rows, sizeof *del);
    ut_table_create_store(t, sc.path, 0, 0, 0);
    struct stat st;
    ck_assert(stat(sc.path, &st) == 0);
    ino_t ino = st.st_ino;
    int renames = 0;
    uint64_t rows = 0, commits = 0, most_records = 0;
    while (rows < t->n_rows) {
      uint64_t n = 1 + ut_rng_below(&r, 3);
      if (n > t->n_rows - rows) n = t->n_rows - rows;
      uint64_t d = rows && ut_rng_below(&r, 5) == 0 ? ut_rng_below(&r, rows) : UINT64_MAX;
      auto_commit(sc.path, t, rows, n, &d, d != UINT64_MAX, ratios[k]);
      if (d != UINT64_MAX) del[d] = true;
      rows += n, commits++;
      ck_assert(stat(sc.path, &st) == 0);
      if (st.st_ino != ino) renames++, ino = st.st_ino;
      cs_store *s = ut_open_ok(sc.path, CS_VERIFY_HEADER, "auto");
      ck_assert_uint_eq(cs_store_rows(s), rows); /* no renumber, ever */
      if (cs_store_records(s) > most_records) most_records = cs_store_records(s);
      cs_store_close(s);
    }
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "auto");
    ut_assert_store_equals(s, t, t->n_rows, "auto");
    ut_assert_deleted(s, del, t->n_rows, "auto");
    cs_store_close(s);
    ck_assert_msg(renames > 0, "ratio %u: %" PRIu64 " commits and no automatic compaction", ratios[k],
                  commits);
    ck_assert_msg(most_records < commits / 4, "ratio %u: %" PRIu64 " records after %" PRIu64 " commits",
                  ratios[k], most_records, commits);
    ck_assert_int_eq(ut_dir_entries(sc.dir), 1);
    free(del);
    ut_table_free(t);
    ut_scratch_free(&sc);
  }
}
END_TEST

START_TEST(test_auto_compact_off_leaves_a_record_per_commit) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_random_table(&schema, 40, 100, 41);
  ut_table_create_store(t, sc.path, 0, 0, 0);
  for (uint64_t i = 0; i < 40; i++) auto_commit(sc.path, t, i, 1, NULL, 0, 0);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "off");
  ck_assert_uint_eq(cs_store_records(s), 40);
  ut_assert_store_equals(s, t, 40, "off");
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_auto_compact_crash_at_every_step_keeps_every_commit) {
  static const char *steps[] = {"locked", "written", "synced", "renamed"};
  for (int k = 0; k < 4; k++) {
    ut_scratch sc = ut_scratch_new();
    ut_table *t = ut_random_table(&schema, 200, 100, 70 + (uint64_t)k);
    ut_table_create_store(t, sc.path, 0, 0, 0);
    int fds[2];
    ck_assert(pipe(fds) == 0);
    crash_step = steps[k];
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      cs__compact_auto_step = crash_at;
      for (uint64_t i = 0; i < t->n_rows; i++) {
        if (write(fds[1], &i, sizeof i) != sizeof i) _exit(2); /* about to commit row i */
        auto_commit(sc.path, t, i, 1, NULL, 0, 1000000);
      }
      _exit(1); /* never compacted */
    }
    close(fds[1]);
    uint64_t last = UINT64_MAX, i;
    while (read(fds[0], &i, sizeof i) == sizeof i) last = i;
    close(fds[0]);
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    ck_assert_msg(WEXITSTATUS(status) == 0, "%s: child exit %d", steps[k], WEXITSTATUS(status));
    ck_assert_uint_ge(last, CS_AUTO_COMPACT_MIN_RECORDS - 1);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, steps[k]);
    ck_assert_uint_eq(cs_store_rows(s), last + 1); /* the commit that started the compaction is there */
    ut_assert_store_equals(s, t, last + 1, steps[k]);
    ck_assert_uint_eq(cs_store_records(s), k == 3 ? 1 : last + 1);
    cs_store_close(s);
    /* A temporary file left by the crash is no member of the directory,
    ** and the next commits (and their compactions) go on from there. */
    assert_one_member(sc.dir, steps[k]);
    for (uint64_t j = last + 1; j < last + 1 + 2 * CS_AUTO_COMPACT_MIN_RECORDS; j++)
      auto_commit(sc.path, t, j, 1, NULL, 0, 1000000);
    s = ut_open_ok(sc.path, CS_VERIFY_FULL, steps[k]);
    ut_assert_store_equals(s, t, last + 1 + 2 * CS_AUTO_COMPACT_MIN_RECORDS, steps[k]);
    ck_assert_uint_lt(cs_store_records(s), CS_AUTO_COMPACT_MIN_RECORDS);
    cs_store_close(s);
    ut_table_free(t);
    ut_scratch_free(&sc);
  }
}
END_TEST

static Suite *compact_suite(void) {
  Suite *s = suite_create("compact");
  TCase *tc = tcase_create("compact");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_compact_random_stores_keep_every_value_and_position);
  tcase_add_test(tc, test_compact_empty_and_wholly_deleted_stores);
  tcase_add_test(tc, test_compact_progress_reports_every_record_and_stops);
  tcase_add_test(tc, test_compact_refuses_a_damaged_chunk_and_changes_nothing);
  tcase_add_test(tc, test_compact_waits_for_a_writer);
  tcase_add_test(tc, test_compact_a_waiting_writer_appends_to_the_new_file);
  tcase_add_test(tc, test_compact_crash_at_every_step_leaves_old_or_new);
  tcase_add_test(tc, test_compact_readers_keep_their_snapshot);
  tcase_add_test(tc, test_compact_keeps_mode_owner_and_group_and_its_temp_is_never_wider);
  tcase_add_test(tc, test_compact_through_a_symlink_rewrites_the_file);
  suite_add_tcase(s, tc);
  tc = tcase_create("auto");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_auto_compact_policy);
  tcase_add_test(tc, test_auto_compact_keeps_every_value_and_position);
  tcase_add_test(tc, test_auto_compact_off_leaves_a_record_per_commit);
  tcase_add_test(tc, test_auto_compact_crash_at_every_step_keeps_every_commit);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(compact_suite()); }
