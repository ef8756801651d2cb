/*
** cs_writer.c - creating stores and appending records, crash-safely.
**
** Two ways in, one way out.  cs_writer_create() writes a whole new file
** beside its destination and renames it into place at commit;
** cs_writer_append() takes the store's flock, loads its committed state with
** the reader's own loader, and writes new records at data_end, over the old
** footer.  Either way the commit is two-phase (cs_format.h explains why it
** is safe): prepare writes the new footer and fsyncs; commit makes it
** visible with one commit-slot write (or the rename) and fsyncs again.
**
** Each record goes out with pwritev: the header and descriptors from one
** buffer, then every column buffer straight from the batch, with shared
** zero padding in between, so a record costs one system call per IOV_MAX
** pieces however many columns it has.
**
** Abort must leave the file byte-identical, yet an append overwrites the
** old footer; so the bytes from data_end to the old end of file are saved
** before the first write and put back (and the file truncated) on abort.
**
** Deletions (format 2, docs/format.md 14.8) are bitmaps in memory until
** prepare, one per touched record, started from the record's committed
** vector: prepare writes them as deletion-vector blocks after the
** transaction's records, so a vector always follows its record and the
** same footer-then-slot commit seals them.  The first deleting transaction
** of a version-1 file also rewrites the preamble's version, before the
** fsync that precedes the slot (so an older reader refuses the file from
** the moment the deletions can be committed), and abort writes the saved
** preamble back.
**
** Updates (format.md 14.4) never touch a record either: prepare writes, per
** touched record, a patch block holding a whole new chunk for each changed
** column, and the footer entry names it.  What an update call keeps until
** then is only what it was given: a copy of the changed columns' values
** and an item (row, call, batch row) per position, so memory follows the
** updated rows, not the records they fall in.  Prepare sorts the items,
** which groups them by record and puts each position's calls in order (the
** last call changing a column wins), then builds one record's chunks at a
** time from its live chunks, read back with pread and checked against
** their checksums first: a damaged byte must not be sealed into a chunk
** with a fresh checksum.  The new values are merged in (cs__chunk_merge)
** and the chunk is laid out, checksummed and given its zone map
** (cs__chunk_lay) by cs_chunk.c, the code that lays out a record's chunks
** and the chunks a view shows for pending updates, so the bytes of a
** patched chunk are those a fresh record of the same values would hold.
**
** A new file that replaces another (compaction, 'replace') takes the
** old one's mode, owner and group before it holds a byte and again before
** the rename, or fails (perms_take): a rewrite must never widen who may
** read a store.  And an append committed with auto_compact set compacts the
** store right after its commit, under the lock it still holds, when its
** small records make that worth it (auto_compact; cs_compact.c).
*/
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cs_write_internal.h"

struct cs_writer {
  char *path;            /* destination; owned */
  char *tmp_path;        /* create: the temporary file; owned; else NULL */
  int fd;                /* read-write descriptor */
  bool replace;          /* create: may overwrite path */
  uint32_t auto_compact; /* append: cs_writer_options.auto_compact */
  bool locked;           /* append: holds the flock */
  bool touched;          /* append: bytes past old_data_end were written */
  bool prepared;         /* footer written and synced */
  cs_schema schema;      /* cols/names owned */
  cs_column *cols;
  char *names;
  uint64_t record_rows;    /* rows per record, a multiple of 8 */
  uint64_t generation;     /* the generation this writer commits */
  uint64_t pos;            /* next record goes here */
  uint64_t n_rows;         /* committed + written rows */
  uint64_t old_data_end;   /* append: committed data_end at load */
  uint64_t old_file_bytes; /* append: file size at load */
  uint8_t *saved_tail;     /* append: bytes [old_data_end, old_file_bytes); owned */
  cs_disk_entry *entries;  /* directory: committed + new records; owned */
  cs_disk_chunk *dchunks;  /* n_records * n_cols; owned */
  uint64_t n_records, cap_records;
  uint8_t *header;  /* scratch for one record header; owned */
  uint8_t *scratch; /* scratch for bitmaps and rebased offsets; owned */
  uint64_t scratch_bytes;
  cs_disk_slot slot; /* the slot prepare computed */
  /* Format 2.  ext parallels entries (cap_records); dv one bitmap per
  ** record this transaction deletes from, else NULL. */
  uint32_t version;          /* the file's committed format version (a torn upgrade: 2) */
  bool layout2;              /* the committed footer has layout 2 (whatever the preamble says) */
  cs_disk_preamble preamble; /* the preamble bytes as they were at load */
  bool preamble_written;     /* prepare rewrote the preamble (abort puts it back) */
  cs_disk_entry_ext *ext;    /* owned */
  uint8_t **dv;              /* cap_records pointers; owned, each owned; or NULL */
  uint64_t *first_rows;      /* n_first + 1 entries for the delete search; owned */
  uint64_t n_first;          /* records first_rows covers */
  uint64_t n_deleted;        /* committed + this transaction's deleted positions */
  uint64_t free_bytes;       /* committed free bytes + the vectors this one supersedes */
  bool deleted;              /* cs_writer_delete deleted something new */
  /* UPDATE (format 2, docs/format.md 14.4): each cs_writer_update call keeps
  ** a copy of the values it was given for the columns it changes (calls),
  ** and an item (row, call, index) per position; prepare sorts the items
  ** and writes one patch block per touched record. */
  uint64_t committed_rows; /* positions committed at load: the ones an update may change */
  cs__upd_call **calls;    /* n_calls; each one owned block (call_copy) */
  uint64_t n_calls, cap_calls;
  cs__upd_item *items; /* n_items; owned */
  uint64_t n_items, cap_items;
  bool patched;        /* prepare wrote a patch block */
  uint64_t flushed_to; /* writeback started for bytes below this (kick_writeback) */
};

/* -------------------------------------------------------------- plumbing */

static cs_rc write_iov(cs_writer *w, struct iovec *iov, int n, uint64_t off, cs_err *err) {
  while (n > 0) {
    int batch = n < IOV_MAX ? n : IOV_MAX;
    ssize_t put = pwritev(w->fd, iov, batch, (off_t)off);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0)
      return cs_err_set(err, CS_EIO, "colstore: %s: write failed at offset %llu: %s", w->path,
                        (unsigned long long)off, strerror(errno));
    off += (uint64_t)put;
    /* Skip what was written, resuming mid-buffer after a partial write. */
    size_t left = (size_t)put;
    while (n > 0 && left >= iov->iov_len) left -= iov->iov_len, iov++, n--;
    if (n > 0 && left) {
      iov->iov_base = (uint8_t *)iov->iov_base + left;
      iov->iov_len -= left;
    }
  }
  return CS_OK;
}

static cs_rc write_at(cs_writer *w, const void *p, size_t n, uint64_t off, cs_err *err) {
  struct iovec v = {(void *)p, n};
  return write_iov(w, &v, 1, off, err);
}

static cs_rc sync_fd(cs_writer *w, cs_err *err) {
  if (fsync(w->fd) != 0)
    return cs_err_set(err, CS_EIO, "colstore: %s: fsync failed: %s", w->path, strerror(errno));
  return CS_OK;
}

static cs_rc schema_copy(cs_writer *w, const cs_schema *schema, cs_err *err) {
  size_t names = 0;
  for (uint32_t i = 0; i < schema->n_cols; i++) names += strlen(schema->cols[i].name) + 1;
  w->cols = cs__mem_calloc(schema->n_cols, sizeof *w->cols);
  w->names = cs__mem_malloc(names ? names : 1);
  if (!w->cols || !w->names) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory copying a schema");
  char *p = w->names;
  for (uint32_t i = 0; i < schema->n_cols; i++) {
    size_t len = strlen(schema->cols[i].name) + 1;
    memcpy(p, schema->cols[i].name, len);
    w->cols[i] = schema->cols[i];
    w->cols[i].name = p;
    p += len;
  }
  w->schema.n_cols = schema->n_cols;
  w->schema.cols = w->cols;
  w->header = cs__mem_calloc(1, cs__record_header_bytes(schema->n_cols));
  if (!w->header) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a record header");
  return CS_OK;
}

static cs_rc schema_check(const cs_schema *schema, cs_err *err) {
  if (schema->n_cols == 0 || schema->n_cols > CS_MAX_COLUMNS)
    return cs_err_set(err, CS_EINVAL, "colstore: a store needs 1 to %d columns, not %u", CS_MAX_COLUMNS,
                      schema->n_cols);
  for (uint32_t i = 0; i < schema->n_cols; i++) {
    size_t len = strlen(schema->cols[i].name);
    if (len == 0 || len > CS_NAME_MAX_BYTES)
      return cs_err_set(err, CS_EINVAL, "colstore: column %u: a name must have 1 to %d bytes", i + 1,
                        CS_NAME_MAX_BYTES);
    if (!cs_type_name(schema->cols[i].type))
      return cs_err_set(err, CS_EINVAL, "colstore: column %s: unknown type", schema->cols[i].name);
    for (uint32_t j = 0; j < i; j++)
      if (strcasecmp(schema->cols[i].name, schema->cols[j].name) == 0)
        return cs_err_set(err, CS_EINVAL, "colstore: column name %s appears twice", schema->cols[i].name);
  }
  return CS_OK;
}

static void update_forget(cs_writer *w);

static void writer_free(cs_writer *w) {
  if (!w) return;
  if (w->fd >= 0) close(w->fd); /* also drops the flock */
  cs__mem_free(w->path);
  cs__mem_free(w->tmp_path);
  cs__mem_free(w->cols);
  cs__mem_free(w->names);
  cs__mem_free(w->saved_tail);
  cs__mem_free(w->entries);
  cs__mem_free(w->dchunks);
  cs__mem_free(w->header);
  cs__mem_free(w->scratch);
  for (uint64_t r = 0; w->dv && r < w->n_records; r++) cs__mem_free(w->dv[r]);
  cs__mem_free(w->dv);
  cs__mem_free(w->ext);
  cs__mem_free(w->first_rows);
  update_forget(w);
  cs__mem_free(w);
}

static cs_writer *writer_new(const char *path, const cs_writer_options *opt) {
  cs_writer *w = cs__mem_calloc(1, sizeof *w);
  if (!w) return NULL;
  w->fd = -1;
  w->path = cs__mem_strdup(path);
  uint64_t rr = opt && opt->record_rows ? opt->record_rows : CS_DEFAULT_RECORD_ROWS;
  /* Slices start on bitmap byte boundaries; rounding up must not wrap the
  ** largest values to 0 (a write would then loop forever). */
  w->record_rows = rr > UINT64_MAX - 7 ? ~(uint64_t)7 : (rr + 7) & ~(uint64_t)7;
  w->replace = opt && opt->replace;
  w->auto_compact = opt ? opt->auto_compact : 0;
  if (!w->path) {
    cs__mem_free(w);
    return NULL;
  }
  return w;
}

/* ---------------------------------------------------------------- create */

/* The file a new store replaces lends it its mode, owner and group
** (docs/security.md 5, docs/format.md 10.1): a compaction or a 'replace'
** must not turn a private store into a world-readable one, nor hand it to
** whoever ran it.  fchown asks only for what differs, so a user replacing
** their own file changes nothing (chown to one's own uid is a no-op) and a
** group change is tried only when the group differs (permitted for a
** member of the group, else EPERM); what cannot be kept is an error here,
** before anything is renamed, never a wider file.  Run at create, on the
** empty temporary file, and again just before the rename, so a chmod or
** chown of the original in between is not undone. */
static cs_rc perms_take(cs_writer *w, cs_err *err) {
  struct stat orig, mine;
  if (!w->replace || stat(w->path, &orig) != 0 || !S_ISREG(orig.st_mode)) return CS_OK;
  if (fstat(w->fd, &mine) != 0)
    return cs_err_set(err, CS_EIO, "colstore: %s: fstat failed: %s", w->tmp_path, strerror(errno));
  if (mine.st_uid != orig.st_uid || mine.st_gid != orig.st_gid) {
    uid_t uid = mine.st_uid != orig.st_uid ? orig.st_uid : (uid_t)-1;
    gid_t gid = mine.st_gid != orig.st_gid ? orig.st_gid : (gid_t)-1;
    if (fchown(w->fd, uid, gid) != 0)
      return cs_err_set(err, CS_EIO,
                        "colstore: cannot give the new %s the owner and group of the file it replaces (uid "
                        "%u, gid %u): %s; "
                        "run this as the file's owner and a member of its group, or as root",
                        w->path, (unsigned)orig.st_uid, (unsigned)orig.st_gid, strerror(errno));
  }
  /* After fchown, which may clear set-id bits. */
  if ((mine.st_mode & 07777) != (orig.st_mode & 07777) || mine.st_uid != orig.st_uid ||
      mine.st_gid != orig.st_gid)
    if (fchmod(w->fd, orig.st_mode & 07777) != 0)
      return cs_err_set(err, CS_EIO,
                        "colstore: cannot give the new %s the mode %04o of the file it replaces: %s", w->path,
                        (unsigned)(orig.st_mode & 07777), strerror(errno));
  return CS_OK;
}

/* Creates w->tmp_path (its last six characters replaced) with O_EXCL.  Not
** mkstemp: its mode is always 0600, and a new store with no file to take
** its mode from gets 0644 less the umask, as any file the process creates
** (the kernel applies the umask; reading it would race with other threads).
** A file to be replaced starts at 0600, no more than owner permissions,
** and takes the original's in perms_take. */
static cs_rc temp_open(cs_writer *w, cs_err *err) {
  static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static _Atomic uint64_t counter;
  struct stat orig;
  bool has_orig = w->replace && stat(w->path, &orig) == 0 && S_ISREG(orig.st_mode);
  char *x = w->tmp_path + strlen(w->tmp_path) - CS__TEMP_RANDOM;
  for (int attempt = 0; attempt < 100; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed[3] = {(uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30), (uint64_t)getpid(),
                        atomic_fetch_add(&counter, 1)};
    uint64_t h = cs__hash(seed, sizeof seed);
    for (int i = 0; i < CS__TEMP_RANDOM; i++, h /= 62) x[i] = alnum[h % 62];
    w->fd = open(w->tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, has_orig ? 0600 : 0644);
    if (w->fd >= 0) break;
    if (errno != EEXIST)
      return cs_err_set(err, errno == ENOENT ? CS_ENOENT : CS_EIO,
                        "colstore: cannot create a file beside %s: %s", w->path, strerror(errno));
  }
  if (w->fd < 0)
    return cs_err_set(
        err, CS_EIO, "colstore: cannot create a file beside %s: 100 names taken; remove stale %s.tmp.* files",
        w->path, w->path);
  cs_rc rc = perms_take(w, err);
  if (rc) {
    close(w->fd), w->fd = -1;
    unlink(w->tmp_path);
  }
  return rc;
}

cs_rc cs_writer_create(const char *path, const cs_schema *schema, const cs_writer_options *opt,
                       cs_writer **out, cs_err *err) {
  *out = NULL;
  cs_rc rc = schema_check(schema, err);
  if (rc) return rc;
  if (!(opt && opt->replace) && access(path, F_OK) == 0)
    return cs_err_set(err, CS_EEXIST, "colstore: %s already exists", path);
  cs_writer *w = writer_new(path, opt);
  if (!w) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory creating %s", path);
  uint8_t *schema_block = NULL, *head = NULL;
  uint64_t schema_bytes = 0;
  if ((rc = schema_copy(w, schema, err))) goto fail;
  size_t tl = strlen(path) + sizeof CS__TEMP_SUFFIX;
  if (!(w->tmp_path = cs__mem_malloc(tl))) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    goto fail;
  }
  snprintf(w->tmp_path, tl, "%s" CS__TEMP_SUFFIX, path);
  if ((rc = temp_open(w, err))) {
    cs__mem_free(w->tmp_path), w->tmp_path = NULL;
    goto fail;
  }
  if ((rc = cs__schema_encode(schema, &schema_block, &schema_bytes, err))) goto fail;
  uint64_t data_offset = cs__align64(CS_SCHEMA_OFFSET + schema_bytes);
  if (!(head = cs__mem_calloc(1, data_offset))) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    goto fail;
  }
  cs_disk_preamble pre = {.version = CS_FORMAT_VERSION,
                          .schema_offset = CS_SCHEMA_OFFSET,
                          .schema_bytes = schema_bytes,
                          .data_offset = data_offset};
  memcpy(pre.magic, CS_MAGIC_FILE, CS_MAGIC_BYTES);
  pre.schema_checksum = cs__hash(schema_block, schema_bytes);
  pre.checksum = cs__hash(&pre, 56);
  memcpy(head, &pre, sizeof pre);
  memcpy(head + CS_SCHEMA_OFFSET, schema_block, schema_bytes);
  if ((rc = write_at(w, head, data_offset, 0, err))) goto fail;
  w->version = CS_FORMAT_VERSION;
  w->preamble = pre;
  w->pos = data_offset;
  w->old_data_end = data_offset;
  w->generation = 1;
  cs__mem_free(schema_block);
  cs__mem_free(head);
  *out = w;
  return CS_OK;
fail:
  cs__mem_free(schema_block);
  cs__mem_free(head);
  cs_writer_abort(w);
  return rc;
}

/* ---------------------------------------------------------------- append */

static cs_rc lock_take(cs_writer *w, int timeout_ms, cs_err *err) {
  struct timespec nap = {0, 5 * 1000 * 1000};
  for (int waited = 0;; waited += 5) {
    if (flock(w->fd, LOCK_EX | LOCK_NB) == 0) {
      w->locked = true;
      return CS_OK;
    }
    if (errno == ENOTSUP || errno == EOPNOTSUPP || errno == ENOLCK) {
      cs__diag_note(
          "flock is not supported on this filesystem: appends are not protected against concurrent writers");
      return CS_OK;
    }
    if (errno != EWOULDBLOCK && errno != EINTR)
      return cs_err_set(err, CS_EIO, "colstore: %s: flock failed: %s", w->path, strerror(errno));
    if (waited >= timeout_ms)
      return cs_err_set(
          err, CS_EBUSY,
          "colstore: %s is being written by another connection or process; retry, or raise the busy timeout",
          w->path);
    nanosleep(&nap, NULL);
  }
}

/* Opens w->path read-write and takes its lock, then makes sure the locked
** file is still the one the path names.  colstore_compact renames a new
** file over the path while it holds the old file's lock; a writer that
** opened the old file before the rename and waited for the lock would
** otherwise append to an unlinked inode and lose its commit.  Such a
** writer lets go and opens the path again.  Each retry means a whole
** compaction finished meanwhile, which the automatic compaction after
** small commits makes common on a small store with several writers: so
** the retries go on for as long as the lock wait may (timeout_ms in all),
** and at least 8 times. */
static cs_rc open_locked(cs_writer *w, int timeout_ms, cs_err *err) {
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int attempt = 0;; attempt++) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t spent = (int64_t)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
    int left = spent >= timeout_ms ? 0 : (int)(timeout_ms - spent);
    w->fd = open(w->path, O_RDWR | O_CLOEXEC);
    if (w->fd < 0) {
      int e = errno;
      if (e == EACCES || e == EPERM || e == EROFS)
        return cs_err_set(
            err, CS_EIO,
            "colstore: cannot write to %s: %s; INSERT, UPDATE, DELETE and colstore_compact need write "
            "permission on the store file (check its owner and mode, or query a copy you can write)",
            w->path, strerror(e));
      return cs_err_set(err, e == ENOENT ? CS_ENOENT : CS_EIO, "colstore: cannot open %s for writing: %s",
                        w->path, strerror(e));
    }
    cs_rc rc = lock_take(w, left, err);
    if (rc) return rc;
    struct stat held, named;
    if (fstat(w->fd, &held) != 0)
      return cs_err_set(err, CS_EIO, "colstore: %s: fstat failed: %s", w->path, strerror(errno));
    if (stat(w->path, &named) == 0 && named.st_ino == held.st_ino && named.st_dev == held.st_dev)
      return CS_OK;
    close(w->fd); /* drops the lock on the replaced file */
    w->fd = -1;
    w->locked = false;
    if (attempt >= 8 && left == 0)
      return cs_err_set(
          err, CS_EBUSY,
          "colstore: %s keeps being replaced while waiting to write it; retry, or raise the busy timeout",
          w->path);
  }
}

uint64_t cs__writer_records(const cs_writer *w) { return w->n_records; }

uint64_t cs_writer_file_bytes(const cs_writer *w) {
  struct stat st;
  return fstat(w->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

void cs__writer_set_generation(cs_writer *w, uint64_t generation) {
  if (w->tmp_path && w->n_records == 0) w->generation = generation;
}

bool cs_writer_same_file(const cs_writer *w, const cs_store *s) {
  while (s->parts) s = s->parts[0];
  struct stat st;
  return fstat(w->fd, &st) == 0 && (uint64_t)st.st_ino == s->file_ino && (uint64_t)st.st_dev == s->file_dev;
}

cs_rc cs_writer_append(const char *path, const cs_writer_options *opt, cs_writer **out, cs_err *err) {
  *out = NULL;
  cs_writer *w = writer_new(path, opt);
  if (!w) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening %s", path);
  cs_store *base = NULL;
  cs_rc rc;
  if ((rc = open_locked(w, opt ? opt->lock_timeout_ms : 0, err))) goto fail;
  int fd2 = dup(w->fd);
  if (fd2 < 0) {
    rc = cs_err_set(err, CS_EIO, "colstore: %s: dup failed: %s", path, strerror(errno));
    goto fail;
  }
  if ((rc = cs__store_load(fd2, path, CS_VERIFY_HEADER, &base, err))) goto fail;
  if ((rc = schema_copy(w, &base->schema, err))) goto fail;
  uint32_t nc = base->schema.n_cols;
  w->n_records = w->cap_records = base->n_records;
  w->entries = cs__mem_malloc((base->n_records ? base->n_records : 1) * sizeof *w->entries);
  w->ext = cs__mem_malloc((base->n_records ? base->n_records : 1) * sizeof *w->ext);
  w->dchunks = cs__mem_malloc((base->n_records ? base->n_records * nc : 1) * sizeof *w->dchunks);
  if (!w->entries || !w->ext || !w->dchunks) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    goto fail;
  }
  memcpy(w->entries, base->entries, base->n_records * sizeof *w->entries);
  memcpy(w->ext, base->ext, base->n_records * sizeof *w->ext);
  memcpy(&w->preamble, base->map, sizeof w->preamble);
  w->version = base->format_version;
  w->layout2 = base->footer_layout == 2;
  w->n_deleted = base->n_deleted;
  w->free_bytes = base->free_bytes;
  memcpy(w->dchunks, base->disk_chunks, base->n_records * nc * sizeof *w->dchunks);
  w->pos = w->old_data_end = base->data_end;
  w->old_file_bytes = base->map_bytes;
  w->generation = base->generation + 1;
  w->n_rows = w->committed_rows = base->n_rows;
  cs_store_close(base);
  *out = w;
  return CS_OK;
fail:
  cs_store_close(base);
  writer_free(w);
  return rc;
}

const cs_schema *cs_writer_schema(const cs_writer *w) { return &w->schema; }
uint64_t cs_writer_rows(const cs_writer *w) { return w->n_rows; }

/* Saves the bytes an append is about to overwrite, for a byte-exact abort. */
static cs_rc tail_save(cs_writer *w, cs_err *err) {
  if (w->touched || w->tmp_path) return CS_OK;
  uint64_t n = w->old_file_bytes - w->old_data_end;
  if (n) {
    if (!w->saved_tail && !(w->saved_tail = cs__mem_malloc(n)))
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory saving the old footer");
    uint64_t got = 0;
    while (got < n) {
      ssize_t r = pread(w->fd, w->saved_tail + got, n - got, (off_t)(w->old_data_end + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        return cs_err_set(err, CS_EIO, "colstore: %s: cannot read the old footer: %s", w->path,
                          r ? strerror(errno) : "short read");
      got += (uint64_t)r;
    }
  }
  w->touched = true;
  return CS_OK;
}

/* ---------------------------------------------------------------- record */

static cs_rc scratch_reserve(cs_writer *w, uint64_t bytes, cs_err *err) {
  if (bytes <= w->scratch_bytes) return CS_OK;
  uint8_t *p = cs__mem_realloc(w->scratch, bytes);
  if (!p) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing a record");
  w->scratch = p;
  w->scratch_bytes = bytes;
  return CS_OK;
}

static cs_rc directory_push(cs_writer *w, cs_err *err) {
  uint32_t nc = w->schema.n_cols;
  if (w->n_records < w->cap_records) return CS_OK;
  uint64_t cap = w->cap_records ? w->cap_records * 2 : 16;
  cs_disk_entry *e = cs__mem_realloc(w->entries, cap * sizeof *e);
  if (e) w->entries = e;
  cs_disk_chunk *d = e ? cs__mem_realloc(w->dchunks, cap * nc * sizeof *d) : NULL;
  if (d) w->dchunks = d;
  cs_disk_entry_ext *x = d ? cs__mem_realloc(w->ext, cap * sizeof *x) : NULL;
  if (x) w->ext = x;
  uint8_t **dv = x && w->dv ? cs__mem_realloc(w->dv, cap * sizeof *dv) : NULL;
  if (dv) w->dv = dv;
  if (!e || !d || !x || (w->dv && !dv))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory growing the record directory");
  w->cap_records = cap;
  return CS_OK;
}

/* Starts the device writing what the records wrote so far, a few MiB at a
** time, without waiting: the fsync at prepare then finds most of a large
** transaction already on its way instead of starting it all (a compaction
** or a big colstore_create: docs/performance.md, "Compaction").  Only a
** hint; where sync_file_range is missing, the fsync does it all. */
#define WRITEBACK_BYTES ((uint64_t)8 << 20)
static void kick_writeback(cs_writer *w) {
  if (w->flushed_to < w->old_data_end) w->flushed_to = w->old_data_end;
  if (w->pos - w->flushed_to < WRITEBACK_BYTES) return;
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  (void)sync_file_range(w->fd, (off_t)w->flushed_to, (off_t)(w->pos - w->flushed_to), SYNC_FILE_RANGE_WRITE);
#endif
  w->flushed_to = w->pos;
}

/* Seals the record header in w->header (its descriptors filled), writes
** the record (iov[0] is the header) at w->pos and adds it to the directory.
** The directory has room (directory_push). */
static cs_rc record_emit(cs_writer *w, uint64_t n, uint64_t record_bytes, struct iovec *iov, int n_iov,
                         cs_err *err) {
  uint32_t nc = w->schema.n_cols;
  cs_disk_record *h = (cs_disk_record *)(void *)w->header;
  cs_disk_chunk *dcs = (cs_disk_chunk *)(void *)(h + 1);
  memcpy(h->magic, CS_MAGIC_RECORD, CS_MAGIC_BYTES);
  h->generation = w->generation;
  h->n_rows = n;
  h->record_bytes = record_bytes;
  h->n_cols = nc;
  h->header_bytes = (uint32_t)cs__record_header_bytes(nc);
  h->descriptors_checksum = cs__hash(dcs, nc * sizeof *dcs);
  h->flags = CS_RECORD_SEALED;
  h->checksum = cs__hash(h, 56);
  cs_rc rc = tail_save(w, err);
  if (rc == CS_OK) rc = write_iov(w, iov, n_iov, w->pos, err);
  if (rc) return rc;
  w->entries[w->n_records] = (cs_disk_entry){w->pos, n, record_bytes, w->generation};
  w->ext[w->n_records] = (cs_disk_entry_ext){0, 0, 0, 0};
  if (w->dv) w->dv[w->n_records] = NULL;
  memcpy(&w->dchunks[w->n_records * nc], dcs, nc * sizeof *dcs);
  w->n_records++;
  w->pos += record_bytes;
  w->n_rows += n;
  kick_writeback(w);
  return CS_OK;
}

/* Writes rows [first, first + n) of the batch as one record at w->pos. */
static cs_rc record_write(cs_writer *w, const cs_batch *b, uint64_t first, uint64_t n, cs_err *err) {
  uint32_t nc = w->schema.n_cols;
  uint64_t hb = cs__record_header_bytes(nc);
  cs_rc rc = directory_push(w, err);
  if (rc) return rc;
  /* Scratch: per column a masked bitmap copy and rebased offsets. */
  uint64_t per_col = cs__batch_lay_scratch(n);
  if ((rc = scratch_reserve(w, per_col * nc, err))) return rc;
  int max_iov = 1 + CS__CHUNK_MAX_IOV * (int)nc, n_iov = 0;
  struct iovec *iov = cs__mem_malloc((size_t)max_iov * sizeof *iov);
  if (!iov) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing a record");
  memset(w->header, 0, hb);
  cs_disk_record *h = (cs_disk_record *)(void *)w->header;
  cs_disk_chunk *dcs = (cs_disk_chunk *)(void *)(h + 1);
  iov[n_iov++] = (struct iovec){w->header, hb};
  uint64_t at = hb;
  for (uint32_t c = 0; c < nc; c++)
    at = cs__batch_lay_rows(&b->cols[c], first, n, w->scratch + per_col * c, at, iov, &n_iov, &dcs[c]);
  rc = record_emit(w, n, at, iov, n_iov, err);
  cs__mem_free(iov);
  return rc;
}

cs_rc cs_writer_write(cs_writer *w, const cs_batch *b, cs_err *err) {
  if (w->prepared) return cs_err_set(err, CS_EINVAL, "colstore: %s: write after prepare", w->path);
  if (b->n_cols != w->schema.n_cols)
    return cs_err_set(err, CS_EINVAL, "colstore: %s: batch has %u columns, store has %u", w->path, b->n_cols,
                      w->schema.n_cols);
  for (uint32_t c = 0; c < b->n_cols; c++) {
    if (b->cols[c].type != w->cols[c].type)
      return cs_err_set(err, CS_ESCHEMA, "colstore: %s: column %s: batch type differs", w->path,
                        w->cols[c].name);
    /* The batch does not know nullability; a NULL in a NOT NULL column
    ** would commit a record no open accepts.  n_nulls also counts a partial
    ** row's value, so the bits of the complete rows decide. */
    const cs_batch_column *bc = &b->cols[c];
    for (uint64_t i = 0; !w->cols[c].nullable && bc->n_nulls && i < b->n_rows; i++)
      if (!((bc->validity[i >> 3] >> (i & 7)) & 1))
        return cs_err_set(err, CS_EINVAL,
                          "colstore: %s: column %s is NOT NULL but row %llu of the batch is NULL", w->path,
                          w->cols[c].name, (unsigned long long)i);
  }
  for (uint64_t first = 0; first < b->n_rows; first += w->record_rows) {
    uint64_t n = b->n_rows - first < w->record_rows ? b->n_rows - first : w->record_rows;
    cs_rc rc = record_write(w, b, first, n, err);
    if (rc) return rc;
  }
  return CS_OK;
}

/* Compaction (cs_compact.c): record rec of s written again as it is, its
** chunks taken from body, where the caller read them back to back in
** column order.  The header is rebuilt around the same chunk bytes; a chunk
** an update replaced (CS_CHUNK_ABSOLUTE) came from its patch block and
** becomes an ordinary chunk of the record.  Checksums, zone maps and flags
** cover the chunk's own span, so they carry over and nothing is
** recomputed; the caller has checked the bytes against them. */
cs_rc cs__writer_copy_record(cs_writer *w, const cs_store *s, uint64_t rec, const uint8_t *body,
                             cs_err *err) {
  uint32_t nc = w->schema.n_cols;
  uint64_t hb = cs__record_header_bytes(nc);
  cs_rc rc = directory_push(w, err);
  if (rc) return rc;
  memset(w->header, 0, hb);
  cs_disk_chunk *dcs = (cs_disk_chunk *)(void *)((cs_disk_record *)(void *)w->header + 1);
  const cs_disk_entry *e = &s->entries[rec];
  uint64_t at = hb;
  for (uint32_t c = 0; c < nc; c++) {
    const cs_disk_chunk *src = &s->disk_chunks[rec * nc + c];
    cs_disk_chunk d = *src;
    /* Unsigned wrap-around keeps the rebase exact in either direction. */
    uint64_t shift = at - src->chunk_offset;
    d.chunk_offset = at;
    if (d.validity_offset) d.validity_offset += shift;
    if (d.offsets_offset) d.offsets_offset += shift;
    d.data_offset += shift;
    d.flags &= ~CS_CHUNK_ABSOLUTE;
    d.patch_back = 0;
    dcs[c] = d;
    at += src->chunk_bytes;
  }
  struct iovec iov[2] = {{w->header, hb}, {(void *)body, at - hb}};
  return record_emit(w, e->n_rows, at, iov, at > hb ? 2 : 1, err);
}

/* ------------------------------------------------------------- deletions */

uint64_t cs_writer_live_rows(const cs_writer *w) { return w->n_rows - w->n_deleted; }

/* first_rows over every record written so far, for the record search. */
static cs_rc delete_index(cs_writer *w, cs_err *err) {
  if (w->first_rows && w->n_first == w->n_records) return CS_OK;
  uint64_t *f = cs__mem_realloc(w->first_rows, (w->n_records + 1) * sizeof *f);
  if (!f) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a deletion");
  w->first_rows = f;
  uint64_t rows = 0;
  for (uint64_t r = 0; r < w->n_records; r++) f[r] = rows, rows += w->entries[r].n_rows;
  f[w->n_records] = rows;
  w->n_first = w->n_records;
  if (!w->dv) {
    if (!(w->dv = cs__mem_calloc(w->cap_records ? w->cap_records : 1, sizeof *w->dv)))
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a deletion");
  }
  return CS_OK;
}

/* The record of row; hint, a record the caller found last, is tried first:
** positions usually come in order (a scan's, a compaction's), and a row in
** the hint's record or the next one needs no search. */
static uint64_t delete_find(const cs_writer *w, uint64_t row, uint64_t hint) {
  const uint64_t *f = w->first_rows;
  if (hint < w->n_records && f[hint] <= row) {
    if (row < f[hint + 1]) return hint;
    if (hint + 1 < w->n_records && row < f[hint + 2]) return hint + 1;
  }
  return cs__find_record(f, w->n_records, row);
}

/* The in-memory bitmap of record r, started from its committed vector
** (read from the file: the writer holds the lock, and the vector lies below
** the committed data end, never rewritten). */
static cs_rc delete_bitmap(cs_writer *w, uint64_t r, cs_err *err) {
  if (w->dv[r]) return CS_OK;
  uint64_t bytes = cs__delvec_bitmap_bytes(w->entries[r].n_rows);
  uint8_t *b = cs__mem_calloc(1, bytes);
  if (!b) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a deletion vector");
  if (w->ext[r].dv_offset) {
    cs_rc rc = cs__pread_full(w->fd, b, bytes, w->ext[r].dv_offset + sizeof(cs_disk_delvec), w->path, err);
    if (rc) {
      cs__mem_free(b);
      return rc;
    }
  }
  w->dv[r] = b;
  return CS_OK;
}

cs_rc cs_writer_delete(cs_writer *w, const uint64_t *rows, uint64_t n, uint64_t *out_deleted, cs_err *err) {
  if (out_deleted) *out_deleted = 0;
  if (w->prepared) return cs_err_set(err, CS_EINVAL, "colstore: %s: delete after prepare", w->path);
  for (uint64_t i = 0; i < n; i++)
    if (rows[i] >= w->n_rows)
      return cs_err_set(err, CS_EINVAL, "colstore: %s: cannot delete row %llu: the store has %llu positions",
                        w->path, (unsigned long long)rows[i], (unsigned long long)w->n_rows);
  if (n == 0) return CS_OK;
  /* Every bitmap first, then the bits: a failure deletes nothing (a bitmap
  ** made but not changed equals the committed vector). */
  cs_rc rc = delete_index(w, err);
  uint64_t r = 0;
  for (uint64_t i = 0; rc == CS_OK && i < n; i++) {
    r = delete_find(w, rows[i], r);
    rc = delete_bitmap(w, r, err);
  }
  if (rc) return rc;
  uint64_t fresh = 0;
  for (uint64_t i = 0; i < n; i++) {
    r = delete_find(w, rows[i], r);
    uint64_t local = rows[i] - w->first_rows[r];
    uint8_t bit = (uint8_t)(1u << (local & 7)), *byte = &w->dv[r][local >> 3];
    fresh += !(*byte & bit);
    *byte |= bit;
  }
  w->n_deleted += fresh;
  if (fresh) w->deleted = true;
  if (out_deleted) *out_deleted = fresh;
  return CS_OK;
}

/* Writes a deletion-vector block for every record whose bitmap gained
** bits, at w->pos, and points its entry at it. */
static cs_rc delete_write(cs_writer *w, cs_err *err) {
  for (uint64_t r = 0; w->deleted && r < w->n_records; r++) {
    const uint8_t *b = w->dv[r];
    if (!b) continue;
    uint64_t n_rows = w->entries[r].n_rows, bytes = cs__delvec_bitmap_bytes(n_rows), count = 0;
    for (uint64_t i = 0; i < bytes; i++) count += (uint64_t)__builtin_popcount(b[i]);
    if (count == w->ext[r].n_deleted) continue; /* nothing new in this record */
    cs_disk_delvec h = {.generation = w->generation,
                        .record_offset = w->entries[r].record_offset,
                        .n_rows = n_rows,
                        .n_deleted = count,
                        .block_bytes = sizeof h + bytes,
                        .bitmap_checksum = cs__hash(b, bytes)};
    memcpy(h.magic, CS_MAGIC_DELVEC, CS_MAGIC_BYTES);
    h.checksum = cs__hash(&h, 56);
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)b, bytes}};
    cs_rc rc = tail_save(w, err);
    if (!rc) rc = write_iov(w, iov, 2, w->pos, err);
    if (rc) return rc;
    if (w->ext[r].dv_offset) w->free_bytes += sizeof h + bytes;
    w->ext[r] = (cs_disk_entry_ext){w->pos, count, h.bitmap_checksum, 0};
    w->pos += sizeof h + bytes;
  }
  return CS_OK;
}

/* --------------------------------------------------------------- updates */

/* A cs_writer_update call's values (cs__upd_call) live in one block: the
** struct, sel, vals, then for each column it changes a copy of rows [0, n)
** of the batch's column.  Its items (cs__upd_item) say which position takes
** which of its rows. */
static void update_forget(cs_writer *w) {
  for (uint64_t k = 0; k < w->n_calls; k++) cs__mem_free(w->calls[k]);
  cs__mem_free(w->calls);
  cs__mem_free(w->items);
  w->calls = NULL, w->items = NULL;
  w->n_calls = w->cap_calls = w->n_items = w->cap_items = 0;
}

static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* Bytes the batch's column holds for its rows [0, n). */
static uint64_t values_bytes(const cs_batch_column *bc, uint64_t n) {
  uint64_t b = align8((n + 7) / 8);
  return b + (bc->width ? align8(n * bc->width) : align8((n + 1) * 8) + align8((uint64_t)bc->offsets[n]));
}

/* The call's block: the struct, sel, vals, then each column's copy. */
static cs__upd_call *call_copy(const cs_batch *b, uint64_t n, const uint8_t *cols, uint32_t n_sel) {
  uint64_t bytes = sizeof(cs__upd_call) + align8(n_sel * sizeof(uint32_t)) + n_sel * sizeof(cs__upd_values);
  for (uint32_t c = 0; c < b->n_cols; c++)
    if (!cols || cols[c]) bytes += values_bytes(&b->cols[c], n);
  uint8_t *p = cs__mem_malloc(bytes);
  if (!p) return NULL;
  cs__upd_call *call = (cs__upd_call *)(void *)p;
  uint32_t *sel = (uint32_t *)(void *)(p + sizeof *call);
  cs__upd_values *vals = (cs__upd_values *)(void *)(p + sizeof *call + align8(n_sel * sizeof(uint32_t)));
  uint8_t *at = (uint8_t *)(vals + n_sel);
  *call = (cs__upd_call){n, n_sel, sel, vals};
  uint32_t k = 0;
  for (uint32_t c = 0; c < b->n_cols; c++) {
    if (cols && !cols[c]) continue;
    const cs_batch_column *bc = &b->cols[c];
    sel[k] = c;
    memcpy(at, bc->validity, (n + 7) / 8);
    vals[k].validity = at;
    at += align8((n + 7) / 8);
    uint64_t data_bytes = n * bc->width;
    if (!bc->width) { /* a batch's offsets start at 0 */
      memcpy(at, bc->offsets, (n + 1) * 8);
      vals[k].offsets = (const int64_t *)(void *)at;
      at += align8((n + 1) * 8);
      data_bytes = (uint64_t)bc->offsets[n];
    }
    if (data_bytes) memcpy(at, bc->data, data_bytes);
    vals[k].data = at;
    at += align8(data_bytes);
    k++;
  }
  return call;
}

/* Whether position row (of a committed record) is deleted, committed or in
** this transaction; loads the record's committed vector when it has one. */
static cs_rc row_deleted(cs_writer *w, uint64_t row, bool *out, cs_err *err) {
  uint64_t r = delete_find(w, row, 0), local = row - w->first_rows[r];
  *out = false;
  if (!w->dv[r] && !w->ext[r].dv_offset) return CS_OK;
  cs_rc rc = delete_bitmap(w, r, err);
  if (rc == CS_OK) *out = (w->dv[r][local >> 3] >> (local & 7)) & 1;
  return rc;
}

cs_rc cs_writer_update(cs_writer *w, const uint64_t *rows, uint64_t n, const cs_batch *values,
                       const uint8_t *cols, cs_err *err) {
  if (w->prepared) return cs_err_set(err, CS_EINVAL, "colstore: %s: update after prepare", w->path);
  uint32_t nc = w->schema.n_cols, n_sel = 0;
  if (values->n_cols != nc)
    return cs_err_set(err, CS_EINVAL, "colstore: %s: update batch has %u columns, store has %u", w->path,
                      values->n_cols, nc);
  for (uint32_t c = 0; c < nc; c++) {
    if (values->cols[c].type != w->cols[c].type)
      return cs_err_set(err, CS_ESCHEMA, "colstore: %s: column %s: update batch type differs", w->path,
                        w->cols[c].name);
    n_sel += !cols || cols[c];
  }
  if (values->n_rows < n)
    return cs_err_set(err, CS_EINVAL, "colstore: %s: update batch has %llu rows for %llu positions", w->path,
                      (unsigned long long)values->n_rows, (unsigned long long)n);
  for (uint32_t c = 0; c < nc; c++) {
    const cs_batch_column *bc = &values->cols[c];
    for (uint64_t i = 0; (!cols || cols[c]) && !w->cols[c].nullable && bc->n_nulls && i < n; i++)
      if (!((bc->validity[i >> 3] >> (i & 7)) & 1))
        return cs_err_set(err, CS_EINVAL,
                          "colstore: %s: column %s is NOT NULL but row %llu of the update batch is NULL",
                          w->path, w->cols[c].name, (unsigned long long)i);
  }
  for (uint64_t i = 0; i < n; i++)
    if (rows[i] >= w->committed_rows)
      return cs_err_set(err, CS_EINVAL,
                        "colstore: %s: cannot update row %llu: the store had %llu committed positions when "
                        "this transaction began",
                        w->path, (unsigned long long)rows[i], (unsigned long long)w->committed_rows);
  if (n == 0) return CS_OK;
  cs_rc rc = delete_index(w, err);
  for (uint64_t i = 0; rc == CS_OK && i < n; i++) {
    bool dead;
    rc = row_deleted(w, rows[i], &dead, err);
    if (rc == CS_OK && dead)
      return cs_err_set(err, CS_EINVAL, "colstore: %s: cannot update row %llu: it is deleted", w->path,
                        (unsigned long long)rows[i]);
  }
  if (rc || n_sel == 0) return rc;
  /* Room first, then the copy, then the items: a failure changes nothing. */
  if (w->n_calls == w->cap_calls) {
    uint64_t cap = w->cap_calls ? w->cap_calls * 2 : 8;
    cs__upd_call **c2 = cs__mem_realloc(w->calls, cap * sizeof *c2);
    if (!c2) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for an update");
    w->calls = c2, w->cap_calls = cap;
  }
  if (w->n_items + n > w->cap_items) {
    uint64_t cap = w->cap_items ? w->cap_items : 64;
    while (cap < w->n_items + n) cap *= 2;
    cs__upd_item *i2 = cs__mem_realloc(w->items, cap * sizeof *i2);
    if (!i2)
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for an update of %llu rows",
                        (unsigned long long)n);
    w->items = i2, w->cap_items = cap;
  }
  cs__upd_call *call = call_copy(values, n, cols, n_sel);
  if (!call)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory copying an update of %llu rows",
                      (unsigned long long)n);
  for (uint64_t i = 0; i < n; i++) w->items[w->n_items + i] = (cs__upd_item){rows[i], w->n_calls, i};
  w->n_items += n;
  w->calls[w->n_calls++] = call;
  return CS_OK;
}

/* The new chunk of column col of record r (its live chunk, read back and
** checked against its checksum, with the winners' values in place), written
** at file offset at inside the patch block at block; *dc describes it. */
static cs_rc patch_chunk(cs_writer *w, uint64_t r, uint32_t col, const cs__upd_win *win, uint64_t n_win,
                         uint64_t block, uint64_t at, cs_disk_chunk *dc, cs_err *err) {
  const cs_disk_chunk *od = &w->dchunks[r * w->schema.n_cols + col];
  const cs_column *column = &w->cols[col];
  uint64_t n = w->entries[r].n_rows;
  uint8_t *old = cs__mem_malloc(od->chunk_bytes ? od->chunk_bytes : 1);
  cs__merged m = {0};
  cs_rc rc = CS_OK;
  if (!old)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory updating a chunk of %llu rows",
                      (unsigned long long)n);
  if ((rc = cs__pread_full(w->fd, old, od->chunk_bytes, cs__chunk_base(&w->entries[r], od) + od->chunk_offset,
                           w->path, err)))
    goto done;
  /* The old values go into a chunk with a fresh checksum, so they are
  ** proven first (a damaged byte would otherwise become a valid one). */
  if (cs__hash(old, od->chunk_bytes) != od->checksum) {
    rc = cs_err_set(
        err, CS_ECORRUPT,
        "colstore: %s: record %llu, column %s: checksum mismatch; the update cannot read the old values",
        w->path, (unsigned long long)r, column->name);
    goto done;
  }
  cs_chunk live;
  cs__chunk_resolve(old, od, &live);
  if ((rc = cs__chunk_merge(column, n, &live, win, n_win, w->path, r, &m, err))) goto done;
  memset(dc, 0, sizeof *dc);
  dc->null_count = m.null_count;
  struct iovec iov[CS__CHUNK_MAX_IOV];
  int n_iov = 0;
  uint64_t end = cs__chunk_lay(column->type, n, m.null_count ? m.bits : NULL, m.offsets, m.data, m.data_bytes,
                               at, iov, &n_iov, dc);
  dc->flags |= CS_CHUNK_ABSOLUTE;
  if ((end - block) / CS_ALIGN > UINT32_MAX) {
    rc = cs_err_set(err, CS_ERANGE, "colstore: %s: record %llu: a patch block over 256 GiB", w->path,
                    (unsigned long long)r);
    goto done;
  }
  dc->patch_back = (uint32_t)((at - block) / CS_ALIGN);
  rc = write_iov(w, iov, n_iov, at, err);
done:
  cs__mem_free(old);
  cs__chunk_merged_free(&m);
  return rc;
}

/* Scratch of update_write, room for one record's worth of n_cols columns. */
typedef struct upd_scratch {
  uint8_t *header;    /* cs__patch_header_bytes(n_cols) */
  uint8_t *touched;   /* n_cols */
  cs_disk_chunk *old; /* the replaced descriptors */
  uint64_t *orphans;
  cs__upd_win *win; /* the most items of one record */
} upd_scratch;

/* The patch block of record r, whose sorted items are it[0, n), at w->pos:
** a new chunk per changed column, then the header; the replaced chunks, and
** the headers of earlier patches left without a live chunk, are free space
** (format.md 14.5; the forward scan counts them the same way, cs_store.c). */
static cs_rc patch_write(cs_writer *w, uint64_t r, const cs__upd_item *it, uint64_t n, upd_scratch *sc,
                         cs_err *err) {
  uint32_t nc = w->schema.n_cols, n_chunks = 0;
  memset(sc->touched, 0, nc);
  for (uint64_t k = 0; k < n; k++) {
    const cs__upd_call *call = w->calls[it[k].call];
    for (uint32_t j = 0; j < call->n_sel; j++) sc->touched[call->sel[j]] = 1;
  }
  for (uint32_t c = 0; c < nc; c++) n_chunks += sc->touched[c];
  uint64_t block = w->pos, hb = cs__patch_header_bytes(n_chunks), at = block + hb;
  memset(sc->header, 0, hb);
  cs_disk_patch *h = (cs_disk_patch *)(void *)sc->header;
  cs_disk_patch_item *items = (cs_disk_patch_item *)(void *)(h + 1);
  cs_rc rc = tail_save(w, err);
  for (uint32_t c = 0, k = 0; rc == CS_OK && c < nc; c++) {
    if (!sc->touched[c]) continue;
    uint64_t n_win =
        cs__chunk_upd_winners((const cs__upd_call *const *)w->calls, w->first_rows[r], it, n, c, sc->win);
    items[k].column = c;
    rc = patch_chunk(w, r, c, sc->win, n_win, block, at, &items[k].chunk, err);
    if (rc) break;
    at += items[k].chunk.chunk_bytes;
    sc->old[k] = w->dchunks[r * nc + c];
    k++;
  }
  if (rc) return rc;
  memcpy(h->magic, CS_MAGIC_PATCH, CS_MAGIC_BYTES);
  h->generation = w->generation;
  h->record_offset = w->entries[r].record_offset;
  h->n_rows = w->entries[r].n_rows;
  h->n_chunks = n_chunks;
  h->header_bytes = (uint32_t)hb;
  h->block_bytes = at - block;
  h->descriptors_checksum = cs__hash(items, n_chunks * sizeof *items);
  h->checksum = cs__hash(h, 56);
  if ((rc = write_at(w, sc->header, hb, block, err))) return rc;
  /* The directory from here: read the orphans' headers before anything
  ** changes, so a failed read leaves the counts as they were. */
  cs_disk_chunk *live = &w->dchunks[r * nc];
  for (uint32_t k = 0; k < n_chunks; k++) live[items[k].column] = items[k].chunk;
  uint32_t n_orphans = cs__patch_orphans(sc->old, n_chunks, live, nc, sc->orphans);
  uint64_t freed = 0;
  for (uint32_t k = 0; k < n_chunks; k++) freed += sc->old[k].chunk_bytes;
  for (uint32_t k = 0; rc == CS_OK && k < n_orphans; k++) {
    cs_disk_patch ph;
    rc = cs__pread_full(w->fd, &ph, sizeof ph, sc->orphans[k], w->path, err);
    freed += ph.header_bytes;
  }
  if (rc) return rc;
  w->free_bytes += freed;
  w->pos = at;
  w->patched = true;
  return CS_OK;
}

/* Writes the patch blocks of the transaction's updates at w->pos, one per
** touched record in record order, and forgets the updates. */
static cs_rc update_write(cs_writer *w, cs_err *err) {
  if (w->n_items == 0) return CS_OK;
  uint32_t nc = w->schema.n_cols;
  cs_rc rc = delete_index(w, err);
  if (rc) return rc;
  qsort(w->items, w->n_items, sizeof *w->items, cs__chunk_upd_cmp);
  uint64_t most = 0;
  for (uint64_t a = 0, b; a < w->n_items; a = b) {
    uint64_t end = w->first_rows[delete_find(w, w->items[a].row, 0) + 1];
    for (b = a + 1; b < w->n_items && w->items[b].row < end;) b++;
    if (b - a > most) most = b - a;
  }
  upd_scratch sc = {cs__mem_calloc(1, cs__patch_header_bytes(nc)), cs__mem_malloc(nc),
                    cs__mem_malloc(nc * sizeof *sc.old), cs__mem_malloc(nc * sizeof *sc.orphans),
                    cs__mem_malloc(most * sizeof *sc.win)};
  if (!sc.header || !sc.touched || !sc.old || !sc.orphans || !sc.win)
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing an update");
  for (uint64_t a = 0, b; rc == CS_OK && a < w->n_items; a = b) {
    uint64_t r = delete_find(w, w->items[a].row, 0), end = w->first_rows[r + 1];
    for (b = a + 1; b < w->n_items && w->items[b].row < end;) b++;
    rc = patch_write(w, r, &w->items[a], b - a, &sc, err);
  }
  cs__mem_free(sc.header), cs__mem_free(sc.touched), cs__mem_free(sc.old), cs__mem_free(sc.orphans),
      cs__mem_free(sc.win);
  if (rc == CS_OK) update_forget(w); /* written: a second prepare must not write them again */
  return rc;
}

/* ---------------------------------------------------------------- commit */

/* The commit seal: the slot again, after the footer, as CSSEALED. */
static cs_rc seal_write(cs_writer *w, cs_err *err) {
  cs_disk_slot seal = w->slot;
  memcpy(seal.magic, CS_MAGIC_SEAL, CS_MAGIC_BYTES);
  seal.checksum = cs__hash(&seal, 56);
  return write_at(w, &seal, sizeof seal, w->slot.footer_offset + w->slot.footer_bytes, err);
}

cs_rc cs_writer_prepare(cs_writer *w, cs_err *err) {
  if (w->prepared) return CS_OK;
  cs_rc rc = update_write(w, err);
  if (rc == CS_OK) rc = delete_write(w, err);
  if (rc) return rc;
  bool nothing_new = !w->tmp_path && !w->touched;
  if (nothing_new) {
    w->prepared = true;
    return CS_OK;
  }
  uint32_t nc = w->schema.n_cols;
  /* Layout 2 once the file is (or becomes) version 2, or once its footer
  ** has layout 2 (a version-1 preamble over one: the upgrade is written
  ** again, rather than a layout-1 footer losing what the entries point at);
  ** version-1 files stay readable by older builds until their first
  ** deletion or update. */
  bool v2 = w->version >= 2 || w->layout2 || w->n_deleted > 0 || w->patched;
  uint64_t eb = v2 ? cs__footer_entry_bytes_v2(nc) : cs__footer_entry_bytes(nc);
  uint64_t head = v2 ? CS_FOOTER_HEAD_BYTES_V2 : sizeof(cs_disk_footer), fb = head + w->n_records * eb;
  uint8_t *f = cs__mem_calloc(1, fb);
  if (!f)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a footer of %llu records",
                      (unsigned long long)w->n_records);
  cs_disk_footer *fh = (cs_disk_footer *)(void *)f;
  memcpy(fh->magic, CS_MAGIC_FOOTER, CS_MAGIC_BYTES);
  fh->generation = w->generation;
  fh->n_records = w->n_records;
  fh->n_rows = w->n_rows;
  fh->n_cols = nc;
  fh->entry_bytes = (uint32_t)eb;
  fh->footer_bytes = fb;
  fh->layout = v2 ? CS_FOOTER_LAYOUT_2 : 0;
  if (v2) {
    cs_disk_footer_ext *fx = (cs_disk_footer_ext *)(void *)(fh + 1);
    fx->n_deleted = w->n_deleted;
    fx->free_bytes = w->free_bytes;
  }
  uint8_t *p = f + head;
  size_t xb = v2 ? sizeof(cs_disk_entry_ext) : 0;
  for (uint64_t r = 0; r < w->n_records; r++, p += eb) {
    memcpy(p, &w->entries[r], sizeof(cs_disk_entry));
    if (v2) memcpy(p + sizeof(cs_disk_entry), &w->ext[r], xb);
    memcpy(p + sizeof(cs_disk_entry) + xb, &w->dchunks[r * nc], nc * sizeof(cs_disk_chunk));
  }
  fh->checksum = cs__hash_seeded(f + sizeof *fh, fb - sizeof *fh, cs__hash(fh, 56));
  cs_disk_slot *s = &w->slot;
  memcpy(s->magic, CS_MAGIC_SLOT, CS_MAGIC_BYTES);
  s->generation = w->generation;
  s->data_end = w->pos;
  s->footer_offset = w->pos;
  s->footer_bytes = fb;
  s->footer_checksum = cs__hash(f, fb);
  s->n_rows = w->n_rows;
  s->checksum = cs__hash(s, 56);
  rc = tail_save(w, err);
  if (!rc) rc = write_at(w, f, fb, w->pos, err);
  cs__mem_free(f);
  if (rc) return rc;
  /* The upgrade (format.md 14.2): the version-2 preamble goes out before
  ** the fsync below, so it is durable before the slot can commit anything
  ** an older reader would misread.  A torn preamble is rewritten whole. */
  cs_disk_preamble pre2;
  cs__preamble_with_version(&w->preamble, 2, &pre2);
  if (v2 && memcmp(&pre2, &w->preamble, sizeof pre2) != 0) {
    w->preamble_written = true;
    if ((rc = write_at(w, &pre2, sizeof pre2, 0, err))) return rc;
  }
  if (ftruncate(w->fd, (off_t)(w->pos + fb)) != 0)
    return cs_err_set(err, CS_EIO, "colstore: %s: truncate failed: %s", w->path, strerror(errno));
  /* A new file carries its slot and seal already; the rename is its commit
  ** point.  An append seals at commit (cs_format.h). */
  if (w->tmp_path && (rc = write_at(w, s, sizeof *s, CS_SLOT1_OFFSET, err))) return rc;
  if (w->tmp_path && (rc = seal_write(w, err))) return rc;
  if ((rc = sync_fd(w, err))) return rc;
  w->prepared = true;
  return CS_OK;
}

/* After a durable commit, still holding the lock: compacts the store when
** its small records make that worth it (cs__compact_due).  The commit
** stands whatever happens here; a compaction that fails (a full disk, an
** owner the process cannot give the new file) leaves the file as it was
** and notes why. */
static void auto_compact(cs_writer *w) {
  cs_compact_tail t = {.free_bytes = w->free_bytes,
                       .file_bytes = w->slot.footer_offset + w->slot.footer_bytes + sizeof w->slot};
  uint64_t eb = w->slot.footer_bytes / (w->n_records ? w->n_records : 1);
  for (uint64_t r = 0; r < w->n_records; r++)
    if (w->entries[r].n_rows < CS_AUTO_COMPACT_SMALL_ROWS)
      t.n_small++, t.small_bytes += w->entries[r].record_bytes + eb;
  if (!cs__compact_due(&t, w->auto_compact)) return;
  cs_compact_report rep;
  cs_err err = {0};
  if (cs__compact_held(w, w->path, &rep, &err) != CS_OK) {
    char note[sizeof err.msg + 64];
    snprintf(note, sizeof note, "automatic compaction skipped: %s", err.msg);
    cs__diag_note(note);
  }
}

cs_rc cs_writer_commit(cs_writer *w, cs_err *err) {
  cs_rc rc = cs_writer_prepare(w, err);
  if (rc) goto fail;
  if (w->tmp_path) {
    if (!w->replace) {
      /* link() fails if path appeared meanwhile: no silent overwrite. */
      if (link(w->tmp_path, w->path) != 0) {
        rc = cs_err_set(err, errno == EEXIST ? CS_EEXIST : CS_EIO, "colstore: cannot create %s: %s", w->path,
                        strerror(errno));
        goto fail;
      }
      unlink(w->tmp_path);
    } else if ((rc = perms_take(w, err))) {
      goto fail;
    } else if (rename(w->tmp_path, w->path) != 0) {
      rc = cs_err_set(err, CS_EIO, "colstore: cannot rename into %s: %s", w->path, strerror(errno));
      goto fail;
    }
    cs__mem_free(w->tmp_path);
    w->tmp_path = NULL;
    rc = cs__dir_sync(w->path, err);
    writer_free(w);
    return rc;
  }
  if (w->touched) {
    uint64_t off = (w->generation & 1) ? CS_SLOT1_OFFSET : CS_SLOT0_OFFSET;
    if ((rc = write_at(w, &w->slot, sizeof w->slot, off, err))) goto fail;
    /* The seal after the footer, under the same fsync: the proof of this
    ** commit should both slots ever be lost (cs_format.h).  The slot is
    ** written, so from here the file is left as it is on failure. */
    if ((rc = seal_write(w, err))) {
      writer_free(w);
      return rc;
    }
    /* Once the slot is written the new state may be the visible one, so a
    ** failed fsync must not restore the old tail under it: the file stays
    ** consistent either way, and the error says durability is unknown. */
    rc = sync_fd(w, err);
    if (rc == CS_OK && w->auto_compact) auto_compact(w);
  }
  writer_free(w);
  return rc;
fail:
  cs_writer_abort(w);
  return rc;
}

void cs_writer_abort(cs_writer *w) {
  if (!w) return;
  if (w->tmp_path) {
    unlink(w->tmp_path);
  } else if (w->touched && w->fd >= 0) {
    /* Best effort: on failure the slots still name the old state. */
    cs_err ignored;
    if (w->preamble_written) (void)write_at(w, &w->preamble, sizeof w->preamble, 0, &ignored);
    uint64_t n = w->old_file_bytes - w->old_data_end;
    if (n == 0 || write_at(w, w->saved_tail, n, w->old_data_end, &ignored) == CS_OK)
      if (ftruncate(w->fd, (off_t)w->old_file_bytes) == 0) (void)fsync(w->fd);
  }
  writer_free(w);
}
