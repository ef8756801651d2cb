/*
** cs_compact.c - rewriting a store without its dead bytes (colstore_compact).
**
** DELETE and UPDATE never reclaim anything in place (docs/format.md 14): a
** deleted row keeps its bytes, an updated chunk leaves the old one behind,
** and every deleting transaction supersedes a vector.  Small INSERT
** transactions leave many small records, each with its own header and zone
** map.  Compaction writes the live state into a new file and renames it
** over the old one, so its crash safety is the create path's (temporary
** file, fsync, rename, directory fsync): a crash leaves the old file or the
** new one, whole, and readers holding the old file keep their snapshot,
** because a mapping outlives the rename.
**
** Commits must not be lost to the rename: a transaction committed to the
** old file after compaction read it would vanish with the old inode.  So
** compaction first takes the old file's writer lock the way an append does
** (cs_writer_append, which also checks that the locked file is still the
** one the path names) and holds it until the new file is in place; a
** writer waiting on it then finds the path naming another file, and opens
** that one.  The snapshot compaction reads is opened under the lock, so it
** is the newest commit and nothing can follow it.
**
** The rows travel through a batch, record by record, in bulk runs: a
** record's chunks are appended to the batch (whole, or only the live rows
** when renumbering), and every time the batch holds a record's worth the
** writer lays it out exactly as any record is laid out, zone maps, sorted
** flags and checksums computed afresh.  That one path merges small records,
** drops deleted rows and turns patched chunks into ordinary ones; its costs
** are one copy into the batch and the writer's own pass (stats and hash),
** measured against a raw chunk copy in docs/performance.md.  Because fresh
** checksums would seal damage into the new file, every chunk is checked
** against its old checksum before it is read.  Without renumber the deleted
** positions are copied too (their rowids must stay) and deleted again in
** the new file, which gives each record with deletions one vector; memory
** holds one record's chunks, one batch and one record's deleted positions,
** never a list over the whole store.
**
** A compaction of a large store runs for a while, so on_progress hears of
** every old record copied and may stop it (colstore_compact's interrupt):
** the stop is an ordinary failure, the new file aborted before its rename.
**
** The same compaction runs automatically after a commit that leaves many
** small records (cs__compact_held, docs/format.md 12.1): the committing
** writer still holds the lock, so it is the lock here, and the commit is
** already durable, so a crash anywhere in the compaction loses nothing.
** Whether to run is cs__compact_due's amortized rule, which keeps a large
** store from being rewritten for a few small INSERTs.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cs_write_internal.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void step(const cs_compact_options *opt, const char *name) {
  if (opt && opt->on_step) opt->on_step(opt->step_ctx, name);
}

static void counts_of(const cs_store *s, cs_compact_counts *out) {
  out->rows = cs_store_live_rows(s);
  out->positions = cs_store_rows(s);
  out->records = cs_store_records(s);
  out->bytes = cs_store_file_bytes(s);
  out->free_bytes = cs_store_free_bytes(s);
}

/* Rows per record of the new file. */
static uint64_t target_rows(const cs_store *s, const cs_compact_options *opt) {
  if (opt && opt->record_rows) return opt->record_rows;
  uint64_t most = CS_DEFAULT_RECORD_ROWS;
  for (uint64_t r = 0; r < cs_store_records(s); r++)
    if (cs_store_record_rows(s, r) > most) most = cs_store_record_rows(s, r);
  return most;
}

/* The copy: one record's chunks read into the reader (pread into one
** reused buffer, each chunk checked: cs_record_read.c) and a batch filled
** a run at a time and written when it holds a record's worth (per rows). */
typedef struct compact_copy {
  const cs_store *s;
  cs_writer *w;
  cs_batch *batch;
  uint64_t per;            /* rows per new record */
  cs__record_reader rd;    /* the record being copied; owned */
  uint64_t records_copied; /* records written as they were (no re-lay) */
  const cs_compact_options *opt;
  cs_compact_progress progress; /* for opt->on_progress */
} compact_copy;

/* Appends rows [from, from + n) of the record in cp->rd, flushing
** full records. */
static cs_rc copy_run(compact_copy *cp, uint64_t from, uint64_t n, cs_err *err) {
  uint32_t nc = cs_store_schema(cp->s)->n_cols;
  while (n > 0) {
    uint64_t room = cp->per - cs_batch_rows(cp->batch), m = n < room ? n : room;
    for (uint32_t c = 0; c < nc; c++) {
      cs_rc rc = cs__batch_put_run(cp->batch, c, &cp->rd.chunks[c], from, m, err);
      if (rc) return rc;
    }
    cs__batch_end_rows(cp->batch, m);
    if (cs_batch_rows(cp->batch) == cp->per) {
      cs_rc rc = cs_writer_write(cp->w, cp->batch, err);
      if (rc) return rc;
      cs_batch_clear(cp->batch);
    }
    from += m, n -= m;
  }
  return CS_OK;
}

/* Copies record rec: its live runs (renumber) or all of it. */
static cs_rc copy_record(compact_copy *cp, uint64_t rec, bool renumber, cs_err *err) {
  uint64_t n = cs_store_record_rows(cp->s, rec);
  /* Without renumber the deleted rows are copied too (deletions_copy
  ** deletes them again), so the whole record is one run. */
  const uint8_t *dead = renumber ? cs_store_record_deletions(cp->s, rec) : NULL;
  /* Every chunk hashed, whatever this process checked before: damage must
  ** fail here, not be sealed under a fresh checksum. */
  cs_rc rc = cs__record_read(&cp->rd, cp->s, rec, CS__READ_CHECK_EVERY, err);
  if (rc) return rc;
  /* A whole record on a record boundary goes across as it is. */
  if (!dead && n == cp->per && cs_batch_rows(cp->batch) == 0) {
    cp->records_copied++;
    return cs__writer_copy_record(cp->w, cp->s, rec, cp->rd.buf, err);
  }
  for (uint64_t at = 0, from; cs__dels_live_run(dead, n, &at, &from);)
    if ((rc = copy_run(cp, from, at - from, err))) return rc;
  return CS_OK;
}

/* Without renumber: every deleted position deleted again in the new file,
** once all its rows are written, an old record at a time (so the list
** never holds more than one record's positions, however many are deleted;
** the new file's own bitmaps are the writer's). */
static cs_rc deletions_copy(compact_copy *cp, cs_err *err) {
  const cs_store *s = cp->s;
  uint64_t *rows = NULL, cap = 0;
  cs_rc rc = CS_OK;
  for (uint64_t r = 0; rc == CS_OK && r < cs_store_records(s); r++) {
    const uint8_t *dead = cs_store_record_deletions(s, r);
    if (!dead) continue;
    uint64_t n = cs_store_record_rows(s, r), first = cs_store_record_first_row(s, r), k = 0;
    if (n > cap) {
      uint64_t *p = cs__mem_realloc(rows, n * sizeof *rows);
      if (!p) {
        cs__mem_free(rows);
        return cs_err_set(err, CS_ENOMEM, "colstore: out of memory copying the deletions of %s", s->path);
      }
      rows = p, cap = n;
    }
    /* A word of the vector at a time (it is zero past the record's rows). */
    for (uint64_t w = 0; w < (n + 63) / 64; w++) {
      uint64_t bits;
      memcpy(&bits, dead + 8 * w, 8);
      for (; bits; bits &= bits - 1) rows[k++] = first + 64 * w + (uint64_t)__builtin_ctzll(bits);
    }
    rc = cs_writer_delete(cp->w, rows, k, NULL, err);
  }
  cs__mem_free(rows);
  return rc;
}

/* A record's chunk bytes as stored: what cs__record_read reads of it. */
static uint64_t record_bytes(const cs_store *s, uint64_t rec) {
  uint32_t nc = s->schema.n_cols;
  uint64_t total = 0;
  for (uint32_t c = 0; c < nc; c++) total += s->disk_chunks[rec * nc + c].chunk_bytes;
  return total;
}

static bool record_skipped(const cs_store *s, uint64_t rec, bool renumber) {
  return renumber && cs_store_record_deleted(s, rec) == cs_store_record_rows(s, rec);
}

/* Reports record rec handled (UINT64_MAX: all of them, finished);
** CS_EINVAL when on_progress asks to stop. */
static cs_rc copy_progress(compact_copy *cp, uint64_t rec, cs_err *err) {
  cs_compact_progress *p = &cp->progress;
  if (!cp->opt || !cp->opt->on_progress) return CS_OK;
  if (rec == UINT64_MAX) {
    p->records = p->records_total, p->positions = p->positions_total, p->bytes = p->bytes_total;
    p->finished = true;
  } else {
    p->records++;
    p->positions += cs_store_record_rows(cp->s, rec);
    if (!record_skipped(cp->s, rec, cp->opt->renumber)) p->bytes += record_bytes(cp->s, rec);
  }
  if (cp->opt->on_progress(cp->opt->progress_ctx, p) == 0) return CS_OK;
  return cs_err_set(err, CS_EINVAL, "colstore: compaction of %s interrupted; the store is as it was",
                    cp->s->path);
}

static cs_rc copy_all(compact_copy *cp, bool renumber, cs_err *err) {
  const cs_store *s = cp->s;
  if (cp->opt && cp->opt->on_progress) {
    cp->progress.records_total = cs_store_records(s);
    cp->progress.positions_total = cs_store_rows(s);
    for (uint64_t r = 0; r < cs_store_records(s); r++)
      if (!record_skipped(s, r, renumber)) cp->progress.bytes_total += record_bytes(s, r);
  }
  for (uint64_t r = 0; r < cs_store_records(s); r++) {
    cs_rc rc = record_skipped(s, r, renumber) ? CS_OK : copy_record(cp, r, renumber, err);
    if (rc == CS_OK) rc = copy_progress(cp, r, err);
    if (rc) return rc;
  }
  if (cs_batch_rows(cp->batch)) {
    cs_rc rc = cs_writer_write(cp->w, cp->batch, err);
    if (rc) return rc;
  }
  cs_rc rc = renumber ? CS_OK : deletions_copy(cp, err);
  return rc ? rc : copy_progress(cp, UINT64_MAX, err);
}

/* Compacts path (no symbolic link) while lock, a writer on it, holds its
** flock; lets go of nothing. */
static cs_rc compact_locked(const char *path, cs_writer *lock, const cs_compact_options *opt,
                            cs_compact_report *out, cs_err *err) {
  memset(out, 0, sizeof *out);
  bool renumber = opt && opt->renumber;
  cs_store *s = NULL;
  compact_copy cp = {0};
  cs_rc rc;
  uint64_t t0 = now_ns();
  step(opt, "locked");
  if ((rc = cs_store_open(path, CS_VERIFY_HEADER, &s, err))) goto done;
  if (!cs_writer_same_file(lock, s)) {
    rc = cs_err_set(err, CS_EBUSY, "colstore: %s was replaced while compaction opened it; retry", path);
    goto done;
  }
  counts_of(s, &out->before);
  cp.s = s;
  cp.opt = opt;
  cp.per = target_rows(s, opt);
  cs_writer_options new_opt = {.record_rows = cp.per, .replace = true};
  if ((rc = cs_batch_new(&s->schema, &cp.batch, err))) goto done;
  if ((rc = cs_writer_create(path, &s->schema, &new_opt, &cp.w, err))) goto done;
  cs__writer_set_generation(cp.w, s->generation + 1);
  if ((rc = copy_all(&cp, renumber, err))) goto done;
  out->after.positions = cs_writer_rows(cp.w);
  out->after.rows = cs_writer_live_rows(cp.w);
  out->after.records = cs__writer_records(cp.w);
  out->generation = s->generation + 1;
  out->records_copied = cp.records_copied;
  step(opt, "written");
  if ((rc = cs_writer_prepare(cp.w, err))) goto done;
  out->after.bytes = cs_writer_file_bytes(cp.w);
  step(opt, "synced");
  rc = cs_writer_commit(cp.w, err);
  cp.w = NULL; /* commit frees it, whatever the result */
  if (rc) goto done;
  step(opt, "renamed");
  out->ns = now_ns() - t0;
done:
  cs_writer_abort(cp.w);
  cs_batch_free(cp.batch);
  cs__record_reader_free(&cp.rd);
  cs_store_close(s);
  return rc;
}

/* The file itself, not a symbolic link to it: the new file is made beside
** the old one and renamed over it, which over a link would replace the
** link and leave the file it named as it was. */
static cs_rc real_path(const char *given, char **out, cs_err *err) {
  if ((*out = realpath(given, NULL))) return CS_OK;
  return cs_err_set(err, errno == ENOENT ? CS_ENOENT : CS_EIO, "colstore: cannot compact %s: %s", given,
                    strerror(errno));
}

cs_rc cs_compact(const char *given, const cs_compact_options *opt, cs_compact_report *out, cs_err *err) {
  memset(out, 0, sizeof *out);
  cs_writer_options lock_opt = {.lock_timeout_ms = opt ? opt->lock_timeout_ms : 0};
  cs_writer *lock = NULL;
  char *path;
  cs_rc rc = real_path(given, &path, err);
  if (rc) return rc;
  rc = cs_writer_append(path, &lock_opt, &lock, err);
  if (rc == CS_OK) rc = compact_locked(path, lock, opt, out, err);
  cs_writer_abort(lock); /* wrote nothing: only lets go of the old file and its lock */
  free(path);
  return rc;
}

/* ------------------------------------------------- automatic compaction */

bool cs__compact_due(const cs_compact_tail *t, uint32_t ratio) {
  if (ratio == 0 || t->n_small < CS_AUTO_COMPACT_MIN_RECORDS) return false;
  /* Amortized: the rewrite (file_bytes) costs at most ratio times the
  ** bytes it wins back, which the small commits themselves wrote. */
  uint64_t fixed = t->small_bytes + t->free_bytes;
  return fixed >= t->file_bytes / ratio;
}

void (*cs__compact_auto_step)(void *ctx, const char *step);

cs_rc cs__compact_held(cs_writer *lock, const char *given, cs_compact_report *out, cs_err *err) {
  char *path;
  cs_rc rc = real_path(given, &path, err);
  if (rc) return rc;
  cs_compact_options opt = {.on_step = cs__compact_auto_step};
  rc = compact_locked(path, lock, &opt, out, err);
  free(path);
  return rc;
}
