/*
** cs_export.c - a store, or a caller's batches, out to a file of another
** format, atomically (cs_export.h says what is promised).
**
** The format comes from the path's extension through one table (formats
** below): each entry names a format writer (cs_format_writer_ops) and the
** codecs it takes, the first its default.  A new format is one line here.
**
** A store is read record by record into one reused buffer with pread
** (cs__record_read, store/cs_record_read.c, compaction's reader), each of
** its chunks compared with its checksum there and its TEXT/BLOB offsets
** checked before the writer indexes by them; the writer then gets the
** record's chunks from that buffer, every column of the record as one
** slice.  A record with deleted rows has its live rows' runs
** (cs__dels_live_run, compaction's walk too) copied from the buffer into a
** scratch batch (cs__batch_put_run, compaction's own copy) and the batch's
** columns are the slice.  A caller's batch is handed
** over the same way, so a writer sees one kind of slice.
**
** Why pread and not the mapping, which needs no copy.  The export reads a
** whole store once, and the first reader of each page of a fresh mapping
** takes a fault, which on the hosts measured costs more than the kernel's
** copy out of the page cache: hashing a 320 MB store took 236-261 ms
** through a fresh mapping and 79-83 ms by pread into a reused buffer.  So
** the check hashes bytes that pread has just put in the cache, and the
** writer copies them into the file from there (docs/performance.md,
** "colstore_export by pread": this replaced a check fused into the sink,
** which hashed the mapping's bytes as they passed to write(2)).  Every
** chunk is checked before the commit, so a mismatch fails the export with
** the read's error and leaves no file; chunks this process has checked
** already (this snapshot or another of the file) are read but not hashed,
** and the ones the export hashed count as checked for a later query.
** Memory is one record's chunks (the largest record's, reused), a scratch
** batch for a record with deletions, and what the writer holds.
**
** The file: a temporary beside path (path.tmp.XXXXXX, created O_EXCL),
** written through a sink that loops over write(2); at commit, fsync, then
** link() to path (create: fails if path exists, even if it appeared
** during the export) or rename() over it (replace), and an fsync of the
** directory.  Every other way out unlinks the temporary.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cs_base_internal.h"
#include "cs_export_internal.h"
#include "cs_store_internal.h"
#include "cs_write_internal.h"

/* ------------------------------------------------------------- formats */

typedef struct export_format {
  const char *ext; /* the path's ending, compared without case */
  const cs_format_writer_ops *ops;
  const char *codecs; /* accepted compression= values, the default first */
} export_format;

static const export_format formats[] = {
    {".parquet", &cs_parquet_writer_ops, "snappy,zstd,gzip,lz4,none"},
    {".arrow", &cs_arrow_file_writer_ops, "none,zstd,lz4"},
    {".feather", &cs_arrow_file_writer_ops, "none,zstd,lz4"},
    {".arrows", &cs_arrow_stream_writer_ops, "none,zstd,lz4"},
    {".csv", &cs_csv_writer_ops, "none"},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static const struct {
  const char *name;
  cs_out_codec codec;
} codec_names[] = {{"none", CS_OUT_NONE},
                   {"snappy", CS_OUT_SNAPPY},
                   {"zstd", CS_OUT_ZSTD},
                   {"gzip", CS_OUT_GZIP},
                   {"lz4", CS_OUT_LZ4}};

static const export_format *format_of(const char *path) {
  size_t n = strlen(path);
  for (size_t i = 0; i < N_FORMATS; i++) {
    size_t k = strlen(formats[i].ext);
    if (n > k && strcasecmp(path + n - k, formats[i].ext) == 0) return &formats[i];
  }
  return NULL;
}

/* Whether name is one of the comma-separated list. */
static bool in_list(const char *list, const char *name) {
  size_t k = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == k && strncasecmp(p, name, n) == 0) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

static cs_rc format_resolve(const char *path, const cs_export_options *opt, const export_format **out_f,
                            cs_out_codec *out_codec, cs_err *err) {
  const export_format *f = format_of(path);
  if (!f) {
    char list[128] = "";
    for (size_t i = 0; i < N_FORMATS; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", formats[i].ext);
    return cs_err_set(err, CS_EINVAL, "colstore: cannot tell the format of %s from its name: end it in %s",
                      path, list);
  }
  const char *name = opt && opt->compression ? opt->compression : NULL;
  size_t def = strcspn(f->codecs, ",");
  char first[16];
  snprintf(first, sizeof first, "%.*s", (int)def, f->codecs);
  if (!name) name = first;
  if (!in_list(f->codecs, name))
    return cs_err_set(err, CS_EINVAL, "colstore: compression=%s: %s takes compression=%s (default %s)", name,
                      f->ops->name, f->codecs, first);
  for (size_t i = 0; i < sizeof codec_names / sizeof codec_names[0]; i++)
    if (strcasecmp(codec_names[i].name, name) == 0) *out_codec = codec_names[i].codec;
  *out_f = f;
  return CS_OK;
}

cs_rc cs_export_format_check(const char *path, const cs_export_options *opt, const char **out_format,
                             cs_err *err) {
  const export_format *f;
  cs_out_codec codec;
  cs_rc rc = format_resolve(path, opt, &f, &codec, err);
  if (!rc && out_format) *out_format = f->ops->name;
  return rc;
}

/* ------------------------------------------------------------ the file */

struct cs_exporter {
  char *path, *tmp_path;
  int fd;
  bool replace;
  uint64_t bytes, rows, rows_total;
  const cs_format_writer_ops *ops;
  cs_format_writer *fw;
  const cs_export_options *opt;
  uint32_t n_cols;
  cs_chunk *slice;   /* n_cols: a batch's columns (a store's whole record goes as rd.chunks) */
  cs_batch *scratch; /* a record's live rows, when it has deletions */
  bool interrupted;
  cs__record_reader rd; /* a store's record being written (cs_export) */
};

static cs_rc sink_write(void *ctx, const void *p, size_t n, cs_err *err) {
  cs_exporter *x = ctx;
  const uint8_t *b = p;
  while (n) {
    ssize_t k = write(x->fd, b, n > (1u << 30) ? (1u << 30) : n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return cs_err_set(err, CS_EIO, "colstore: cannot write %s: %s", x->tmp_path, strerror(errno));
    b += k, n -= (size_t)k, x->bytes += (uint64_t)k;
  }
  return CS_OK;
}

/* path.tmp.XXXXXX with O_EXCL, the X's from the clock, pid and a counter;
** 0644 less the umask, like any file the process creates. */
static cs_rc temp_create(cs_exporter *x, cs_err *err) {
  static _Atomic uint64_t counter;
  size_t n = strlen(x->path) + sizeof ".tmp.XXXXXX";
  if (!(x->tmp_path = cs__mem_malloc(n))) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  for (int attempt = 0; attempt < 100; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed[3] = {(uint64_t)ts.tv_nsec, (uint64_t)getpid(), atomic_fetch_add(&counter, 1)};
    uint64_t h = cs__hash(seed, sizeof seed);
    snprintf(x->tmp_path, n, "%s.tmp.%06llx", x->path, (unsigned long long)(h & 0xffffff));
    x->fd = open(x->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (x->fd >= 0) return CS_OK;
    if (errno != EEXIST) break;
  }
  cs_rc rc = cs_err_set(err, errno == ENOENT ? CS_ENOENT : CS_EIO,
                        "colstore: cannot create a file beside %s: %s", x->path, strerror(errno));
  cs__mem_free(x->tmp_path), x->tmp_path = NULL;
  return rc;
}

void cs_export_abort(cs_exporter *x) {
  if (!x) return;
  if (x->fw) x->ops->free(x->fw);
  if (x->fd >= 0) close(x->fd);
  if (x->tmp_path) unlink(x->tmp_path);
  cs__mem_free(x->tmp_path);
  cs__mem_free(x->path);
  cs__mem_free(x->slice);
  cs__record_reader_free(&x->rd);
  cs_batch_free(x->scratch);
  cs__mem_free(x);
}

cs_rc cs_export_begin(const char *path, const cs_schema *schema, const cs_export_options *opt,
                      cs_exporter **out, cs_err *err) {
  *out = NULL;
  const export_format *f;
  cs_out_options oo = {.row_group_rows = opt ? opt->row_group_rows : 0, .threads = opt ? opt->threads : 0};
  cs_rc rc = format_resolve(path, opt, &f, &oo.codec, err);
  if (rc) return rc;
  bool replace = opt && opt->mode == CS_EXPORT_REPLACE;
  if (!replace && access(path, F_OK) == 0)
    return cs_err_set(err, CS_EEXIST, "colstore: %s already exists; pass 'mode=replace' to overwrite it",
                      path);
  cs_exporter *x = cs__mem_calloc(1, sizeof *x);
  if (!x) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  x->fd = -1;
  x->replace = replace;
  x->ops = f->ops;
  x->opt = opt;
  x->n_cols = schema->n_cols;
  if (!(x->path = cs__mem_strdup(path)) ||
      !(x->slice = cs__mem_calloc(schema->n_cols ? schema->n_cols : 1, sizeof *x->slice))) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    goto fail;
  }
  if ((rc = temp_create(x, err))) goto fail;
  if ((rc = x->ops->open(schema, &oo, (cs_sink){sink_write, x}, &x->fw, err))) goto fail;
  *out = x;
  return CS_OK;
fail:
  cs_export_abort(x);
  return rc;
}

/* Reports progress; CS_EINVAL when the callback says to stop. */
static cs_rc report(cs_exporter *x, bool finished, cs_err *err) {
  if (!x->opt || !x->opt->progress) return CS_OK;
  cs_export_progress p = {x->rows, x->rows_total, x->bytes, finished};
  if (x->opt->progress(x->opt->progress_ctx, &p) == 0) return CS_OK;
  x->interrupted = true;
  return cs_err_set(err, CS_EINVAL, "colstore: interrupted; colstore_export wrote nothing");
}

/* The batch's columns as one slice (cs_export.h: a chunk's layout). */
static void batch_slice(cs_exporter *x, const cs_batch *b) {
  for (uint32_t i = 0; i < x->n_cols; i++) {
    const cs_batch_column *c = &b->cols[i];
    x->slice[i] = (cs_chunk){.validity = c->n_nulls ? c->validity : NULL,
                             .offsets = c->width ? NULL : c->offsets,
                             .data = c->data,
                             .data_bytes = c->data_bytes,
                             .null_count = c->n_nulls};
  }
}

cs_rc cs_export_batch(cs_exporter *x, const cs_batch *b, cs_err *err) {
  uint64_t n = cs_batch_rows(b);
  if (!n) return CS_OK;
  batch_slice(x, b);
  cs_rc rc = x->ops->write(x->fw, n, x->slice, err);
  if (rc) return rc;
  x->rows += n;
  return report(x, false, err);
}

cs_rc cs_export_commit(cs_exporter *x, cs_export_result *res, cs_err *err) {
  uint64_t groups = 0;
  cs_rc rc = report(x, true, err);
  if (!rc) rc = x->ops->finish(x->fw, &groups, err);
  if (!rc && fsync(x->fd) != 0)
    rc = cs_err_set(err, CS_EIO, "colstore: cannot sync %s: %s", x->tmp_path, strerror(errno));
  if (!rc && x->replace && rename(x->tmp_path, x->path) != 0)
    rc = cs_err_set(err, CS_EIO, "colstore: cannot rename into %s: %s", x->path, strerror(errno));
  if (!rc && !x->replace && link(x->tmp_path, x->path) != 0)
    rc = cs_err_set(err, errno == EEXIST ? CS_EEXIST : CS_EIO, "colstore: cannot create %s: %s", x->path,
                    strerror(errno));
  if (res) {
    res->rows = x->rows;
    res->bytes = x->bytes;
    res->groups = groups;
    res->format = x->ops->name;
    res->interrupted = x->interrupted;
  }
  if (rc) {
    cs_export_abort(x);
    return rc;
  }
  if (!x->replace) unlink(x->tmp_path);
  cs__mem_free(x->tmp_path), x->tmp_path = NULL;
  rc = cs__dir_sync(x->path, err);
  cs_export_abort(x); /* frees; nothing left to remove */
  return rc;
}

/* ------------------------------------------------------------ a store */

/* The live rows of record rec, read into x->rd, into x->scratch, its
** columns the slice. */
static cs_rc record_compact(cs_exporter *x, const cs_store *s, uint64_t rec, const uint8_t *del,
                            cs_err *err) {
  uint64_t n = cs_store_record_rows(s, rec);
  cs_batch_clear(x->scratch);
  for (uint64_t at = 0, from; cs__dels_live_run(del, n, &at, &from);) {
    for (uint32_t c = 0; c < x->n_cols; c++) {
      cs_rc rc = cs__batch_put_run(x->scratch, c, &x->rd.chunks[c], from, at - from, err);
      if (rc) return rc;
    }
    cs__batch_end_rows(x->scratch, at - from);
  }
  batch_slice(x, x->scratch);
  return CS_OK;
}

cs_rc cs_export(const char *path, const char *source, const cs_export_options *opt, cs_export_result *res,
                cs_err *err) {
  if (res) *res = (cs_export_result){0};
  cs_store *s = NULL;
  cs_exporter *x = NULL;
  const export_format *f;
  cs_out_codec codec;
  cs_rc rc = format_resolve(path, opt, &f, &codec, err);
  if (rc) return rc;
  if ((rc = cs_store_open_source(source, CS_VERIFY_HEADER, &s, err))) return rc;
  const cs_schema *schema = cs_store_schema(s);
  if ((rc = cs_export_begin(path, schema, opt, &x, err))) goto done;
  x->rows_total = cs_store_live_rows(s);
  if ((rc = report(x, false, err))) goto done;
  for (uint64_t rec = 0; rec < cs_store_records(s); rec++) {
    uint64_t n = cs_store_record_rows(s, rec);
    uint64_t dead = cs_store_record_deleted(s, rec);
    if (n == dead) continue;
    const uint8_t *del = dead ? cs_store_record_deletions(s, rec) : NULL;
    if ((rc = cs__record_read(&x->rd, s, rec, CS__READ_CHECK_ONCE, err))) goto done;
    /* A whole record is its chunks as read; one with deletions, the
    ** scratch batch of its live rows. */
    const cs_chunk *slice = x->rd.chunks;
    if (del) {
      if (!x->scratch && (rc = cs_batch_new(schema, &x->scratch, err))) goto done;
      if ((rc = record_compact(x, s, rec, del, err))) goto done;
      slice = x->slice;
    }
    if ((rc = x->ops->write(x->fw, n - dead, slice, err))) goto done;
    x->rows += n - dead;
    if ((rc = report(x, false, err))) goto done;
  }
  rc = cs_export_commit(x, res, err);
  x = NULL;
done:
  if (x) {
    if (res) res->interrupted = x->interrupted, res->rows = x->rows;
    cs_export_abort(x);
  }
  cs_store_close(s);
  return rc;
}
