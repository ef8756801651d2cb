/*
** cs_verified.c - every chunk is checked against its checksum the first
** time this process reads it.
**
** Open checks the structure (preamble, slots, footer, descriptors) but not
** the data: hashing a 100 GB file at every open is not an option, and a
** changed byte inside a column chunk would otherwise be returned as data.
** So the readers (the cursor, and anything else that reads values) call
** cs_store_check_chunks for the records and columns they are about to
** read, and each chunk is hashed (XXH3-64, as written) once per process.
**
** What a check is remembered by.  Committed records are never rewritten
** in place, so a chunk is the bytes at one offset of one file, named by
** (file offset, expected checksum) within the file's entry, which is
** found by (device, inode): the same bytes in the next snapshot after an
** append, or opened by another connection, or by another dataset sharing
** the file, are the same key and pay nothing.  An entry lives while some
** snapshot holds the file open, because only then is its inode number
** surely its own: once the last one closes, a replaced file (colstore_create
** 'replace', a restored copy, a later compaction) may reuse the number, so
** the entry is dropped and the next open checks again.  An UPDATE's chunk
** lives in a patch block and is named the same way, by its own file offset:
** after an update only the new chunks are hashed again.  The keys cost 16
** bytes a chunk (0.003% of a store of 64 Ki-row f64 chunks), under one
** mutex, consulted only for chunks a snapshot has not seen yet: each
** single-file snapshot keeps a byte per chunk and a count per column, so
** a query over checked columns costs one comparison per column
** (all_checked, the fast path), whatever the file size.  A dataset keeps
** no bits of its own: it asks its parts, which other snapshots of the
** dataset share.
**
** A reader that reads every byte of a store anyway (compaction, the
** export) reads each record with pread into a buffer of its own and checks
** the chunks there (cs_record_read.c, with cs__verified_check_bytes): the
** bytes it checks are then the bytes it uses, and the export's check is
** remembered like any other (cs__verified_known, cs__verified_remember).
**
** What it does not do: catch a byte changed in place, by something other
** than colstore, after this process checked the chunk (verify=full at
** open, or colstore_verify(), re-hash everything).  And it checks only
** chunks that are read: records the zone maps skip are not read, so are
** not checked (their zone maps are in the checksummed directory).
*/
#include <pthread.h>
#include <string.h>

#include "cs_store_internal.h"

/* ------------------------------------------------ the process's files */

typedef struct chunk_key {
  uint64_t offset, checksum; /* offset 0 never names a chunk: an empty slot */
} chunk_key;

/* One open file's checked chunks: open addressing, linear probing, cap a
** power of two; held by every open snapshot of the file (refs). */
struct cs__file_checks {
  uint64_t dev, ino;
  uint32_t refs;
  chunk_key *keys;
  uint64_t cap, n;
  struct cs__file_checks *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* the list and every set */
static cs__file_checks *g_files;

static cs__file_checks *files_acquire(uint64_t dev, uint64_t ino) {
  pthread_mutex_lock(&g_lock);
  cs__file_checks *f = g_files;
  while (f && (f->dev != dev || f->ino != ino)) f = f->next;
  if (!f && (f = cs__mem_calloc(1, sizeof *f))) {
    f->dev = dev, f->ino = ino;
    f->next = g_files;
    g_files = f;
  }
  if (f) f->refs++;
  pthread_mutex_unlock(&g_lock);
  return f;
}

/* The last snapshot of a file is closed: its inode number may now name
** another file, so what was checked under it is forgotten. */
static void files_release(cs__file_checks *f) {
  if (!f) return;
  pthread_mutex_lock(&g_lock);
  if (--f->refs == 0) {
    cs__file_checks **pp = &g_files;
    while (*pp != f) pp = &(*pp)->next;
    *pp = f->next;
    cs__mem_free(f->keys);
    cs__mem_free(f);
  }
  pthread_mutex_unlock(&g_lock);
}

static bool key_eq(const chunk_key *a, const chunk_key *b) {
  return a->offset == b->offset && a->checksum == b->checksum;
}

/* Caller holds g_lock.  The slot holding k, or the empty one it would take. */
static chunk_key *set_slot(chunk_key *keys, uint64_t cap, const chunk_key *k) {
  uint64_t i = cs__hash(k, sizeof *k) & (cap - 1);
  while (keys[i].offset != 0 && !key_eq(&keys[i], k)) i = (i + 1) & (cap - 1);
  return &keys[i];
}

static bool set_has(cs__file_checks *f, const chunk_key *k) {
  pthread_mutex_lock(&g_lock);
  bool found = f->cap && set_slot(f->keys, f->cap, k)->offset != 0;
  pthread_mutex_unlock(&g_lock);
  return found;
}

/* Remembers k; forgetting it for want of memory only costs a second hash. */
static void set_add(cs__file_checks *f, const chunk_key *k) {
  pthread_mutex_lock(&g_lock);
  if ((f->n + 1) * 2 > f->cap) {
    uint64_t cap = f->cap ? f->cap * 2 : 256;
    chunk_key *keys = cs__mem_calloc(cap, sizeof *keys);
    if (!keys) goto done;
    for (uint64_t i = 0; i < f->cap; i++)
      if (f->keys[i].offset) *set_slot(keys, cap, &f->keys[i]) = f->keys[i];
    cs__mem_free(f->keys);
    f->keys = keys, f->cap = cap;
  }
  chunk_key *slot = set_slot(f->keys, f->cap, k);
  if (slot->offset == 0) {
    *slot = *k;
    f->n++;
  }
done:
  pthread_mutex_unlock(&g_lock);
}

/* ------------------------------------------------------- one file's chunks */

cs_rc cs__verified_init(cs_store *s) {
  uint64_t cells = s->n_records * s->schema.n_cols;
  s->chunk_checked = cs__mem_calloc(cells ? cells : 1, sizeof *s->chunk_checked);
  s->col_checked = cs__mem_calloc(s->schema.n_cols, sizeof *s->col_checked);
  s->checks = files_acquire(s->file_dev, s->file_ino);
  return s->chunk_checked && s->col_checked && s->checks ? CS_OK : CS_ENOMEM;
}

void cs__verified_free(cs_store *s) {
  files_release(s->checks);
  cs__mem_free((void *)s->chunk_checked);
  cs__mem_free((void *)s->col_checked);
}

static chunk_key key_of(const cs_store *s, uint64_t rec, uint32_t col) {
  const cs_disk_chunk *dc = &s->disk_chunks[rec * s->schema.n_cols + col];
  return (chunk_key){cs__chunk_base(&s->entries[rec], dc) + dc->chunk_offset, dc->checksum};
}

static void mark(const cs_store *s, uint64_t rec, uint32_t col) {
  uint8_t was =
      atomic_exchange_explicit(&s->chunk_checked[rec * s->schema.n_cols + col], 1, memory_order_relaxed);
  if (!was) atomic_fetch_add_explicit(&s->col_checked[col], 1, memory_order_release);
}

/* got, the hash of chunk (rec, col)'s span, against its checksum; advise
** adds what to do to a failure (a read's error stands alone; a line of
** colstore_verify's list does not repeat it). */
static cs_rc checksum_compare(const cs_store *s, uint64_t rec, uint32_t col, uint64_t got, bool advise,
                              cs_err *err) {
  const cs_disk_chunk *dc = &s->disk_chunks[rec * s->schema.n_cols + col];
  if (got == dc->checksum) return CS_OK;
  return cs_err_set(
      err, CS_ECORRUPT,
      "colstore: %s: record %llu, column %s: checksum mismatch (expected %016llx, found %016llx)%s", s->path,
      (unsigned long long)rec, s->cols[col].name, (unsigned long long)dc->checksum, (unsigned long long)got,
      advise ? ": the file is damaged there; restore it from a copy (colstore_verify() names every damaged "
               "part)"
             : "");
}

/* The TEXT/BLOB offsets of chunk (rec, col), whose span is at span: from
** 0, never decreasing, ending at the data's size (nothing for a fixed-width
** chunk), so that no reader indexes past the chunk. */
static cs_rc offsets_check(const cs_store *s, uint64_t rec, uint32_t col, const uint8_t *span, cs_err *err) {
  const cs_disk_chunk *dc = &s->disk_chunks[rec * s->schema.n_cols + col];
  if (dc->offsets_offset) {
    const int64_t *offsets = (const int64_t *)(const void *)(span + (dc->offsets_offset - dc->chunk_offset));
    uint64_t n = s->entries[rec].n_rows;
    int64_t prev = 0;
    bool ok = offsets[0] == 0;
    for (uint64_t i = 1; ok && i <= n; i++) ok = offsets[i] >= prev && (prev = offsets[i], true);
    if (!ok || (uint64_t)prev != dc->data_bytes)
      return cs_err_set(err, CS_ECORRUPT,
                        "colstore: %s: record %llu, column %s: TEXT/BLOB offsets are damaged", s->path,
                        (unsigned long long)rec, s->cols[col].name);
  }
  return CS_OK;
}

/* Hashes chunk (rec, col) of a single-file store and checks its TEXT/BLOB
** offsets, as cs_store_verify does. */
static cs_rc chunk_bytes_check(const cs_store *s, uint64_t rec, uint32_t col, const uint8_t *span,
                               bool advise, cs_err *err) {
  const cs_disk_chunk *dc = &s->disk_chunks[rec * s->schema.n_cols + col];
  cs_rc rc = checksum_compare(s, rec, col, cs__hash(span, dc->chunk_bytes), advise, err);
  return rc ? rc : offsets_check(s, rec, col, span, err);
}

cs_rc cs__verified_check_bytes(const cs_store *s, uint64_t rec, uint32_t col, const uint8_t *span,
                               cs_err *err) {
  return chunk_bytes_check(s, rec, col, span, true, err);
}

/* Where chunk (rec, col) of a single-file store lies in its mapping. */
static const uint8_t *chunk_span(const cs_store *s, uint64_t rec, uint32_t col) {
  const cs_disk_chunk *dc = &s->disk_chunks[rec * s->schema.n_cols + col];
  return s->map + cs__chunk_base(&s->entries[rec], dc) + dc->chunk_offset;
}

cs_rc cs__verified_check_chunk(const cs_store *s, uint64_t rec, uint32_t col, bool advise, cs_err *err) {
  return chunk_bytes_check(s, rec, col, chunk_span(s, rec, col), advise, err);
}

static void damage_put(cs__damage_sink *sink, cs_damage *part, const cs_err *e) {
  part->msg = e->msg;
  if (strncmp(part->msg, "colstore: ", 10) == 0) part->msg += 10;
  sink->n++;
  if (sink->fn) sink->fn(sink->ctx, part);
}

void cs__damage_note(cs__damage_sink *sink, const cs_store *s, cs_damage_kind kind, uint64_t rec,
                     uint32_t col, const cs_err *e) {
  cs_damage part = {s->path, kind, rec, col, 0, 0, NULL};
  if (rec != CS_DAMAGE_NO_RECORD) part.first_row = s->first_rows[rec], part.n_rows = s->entries[rec].n_rows;
  damage_put(sink, &part, e);
}

void cs__damage_note_file(cs__damage_sink *sink, const char *path, const cs_err *e) {
  cs_damage part = {path, CS_DAMAGE_FILE, CS_DAMAGE_NO_RECORD, CS_DAMAGE_NO_COLUMN, 0, 0, NULL};
  damage_put(sink, &part, e);
}

/* Chunk (r, c) was checked here: in the file's set and marked. */
void cs__verified_remember(const cs_store *s, uint64_t r, uint32_t c) {
  chunk_key k = key_of(s, r, c);
  set_add(s->checks, &k);
  mark(s, r, c);
}

/* Whether chunk (r, c) needs no check: marked, or checked by another
** snapshot of the file (then marked here too). */
bool cs__verified_known(const cs_store *s, uint64_t r, uint32_t c) {
  if (atomic_load_explicit(&s->chunk_checked[r * s->schema.n_cols + c], memory_order_relaxed)) return true;
  chunk_key k = key_of(s, r, c);
  if (!set_has(s->checks, &k)) return false;
  mark(s, r, c);
  return true;
}

void cs__verified_mark_all(const cs_store *s) {
  for (uint64_t r = 0; r < s->n_records; r++)
    for (uint32_t c = 0; c < s->schema.n_cols; c++) cs__verified_remember(s, r, c);
}

/* Whether every chunk of the columns cols names (NULL: all) is checked. */
static bool all_checked(const cs_store *s, const uint8_t *cols) {
  for (uint32_t c = 0; c < s->schema.n_cols; c++)
    if ((!cols || cols[c]) && atomic_load_explicit(&s->col_checked[c], memory_order_acquire) != s->n_records)
      return false;
  return true;
}

static cs_rc file_check(const cs_store *s, uint64_t rec_first, uint64_t rec_end, const uint8_t *cols,
                        cs_err *err) {
  if (all_checked(s, cols)) return CS_OK;
  uint32_t nc = s->schema.n_cols;
  for (uint64_t r = rec_first; r < rec_end; r++)
    for (uint32_t c = 0; c < nc; c++) {
      if ((cols && !cols[c]) || cs__verified_known(s, r, c)) continue;
      cs_rc rc = cs__verified_check_chunk(s, r, c, true, err);
      if (rc) return rc;
      cs__verified_remember(s, r, c);
    }
  return CS_OK;
}

/* ------------------------------------------------------------------ public */

cs_rc cs_store_check_chunks(const cs_store *s, uint64_t rec_first, uint64_t rec_end, const uint8_t *cols,
                            cs_err *err) {
  if (rec_end > s->n_records) rec_end = s->n_records;
  if (rec_first >= rec_end) return CS_OK;
  if (!s->parts) return file_check(s, rec_first, rec_end, cols, err);
  /* A dataset: each part checks its own records. */
  for (uint32_t i = 0; i < s->n_parts; i++) {
    uint64_t a = s->part_first_record[i], b = s->part_first_record[i + 1];
    if (b <= rec_first || a >= rec_end) continue;
    cs_rc rc = file_check(s->parts[i], (rec_first > a ? rec_first : a) - a, (rec_end < b ? rec_end : b) - a,
                          cols, err);
    if (rc) return rc;
  }
  return CS_OK;
}

cs_rc cs_store_check_rows(const cs_store *s, const uint64_t *rows, uint64_t n, const uint8_t *cols,
                          cs_err *err) {
  if (n == 0) return CS_OK;
  if (!s->parts && all_checked(s, cols)) return CS_OK;
  if (s->parts) {
    bool done = true;
    for (uint32_t i = 0; i < s->n_parts && done; i++) done = all_checked(s->parts[i], cols);
    if (done) return CS_OK;
  }
  uint64_t rec = UINT64_MAX; /* the record of the previous row */
  for (uint64_t i = 0; i < n; i++) {
    if (rec != UINT64_MAX && rows[i] >= s->first_rows[rec] && rows[i] < s->first_rows[rec + 1]) continue;
    rec = cs__find_record(s->first_rows, s->n_records, rows[i]);
    cs_rc rc = cs_store_check_chunks(s, rec, rec + 1, cols, err);
    if (rc) return rc;
  }
  return CS_OK;
}
