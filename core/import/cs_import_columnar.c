/*
** cs_import_columnar.c - colstore_import of columnar files (Parquet, Arrow
** IPC): the driver that takes decoded columns from interchange/ and writes
** them as a store.  Each format is a small cs_columnar_ops
** (cs_import_parquet.c, cs_import_arrow.c): open a file, name its columns,
** step through its groups (row groups, record batches), decode a column
** of the current group.
**
** The format is interchange/'s business (cs_parquet*.c, cs_arrow.c); this
** file decides what to read and writes it the way the text importer does,
** through the public writer, so the store, its atomicity (a failure
** or an interrupt ends in cs_writer_abort: no file for create and replace,
** the store byte-identical for append) and its result are the same.
**
** Each file's footer is read, its columns checked against the first
** file's (names, types and nullability of the columns imported: a
** difference is an error naming file and column), then its groups one at
** a time (Parquet's words below; Arrow's record batches alike): the
** chunks of the imported columns alone are read (a
** projection reads nothing of the other columns), decoded to colstore's
** column layout and appended to the batch in bulk (cs__batch_put_run, the
** copy compaction uses).  The batch is written once it holds a record's
** rows, so memory is a row group's decoded columns plus one record, not
** the file.  With threads=N the columns of a row group are decoded by N
** threads at once; the writer stays on the calling thread.
**
** The file's own types decide the store's (docs/sql.md, "Parquet types",
** "Arrow types"): no inference pass, so one pass reads every file once.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs_base_internal.h"
#include "cs_import_internal.h"
#include "cs_write_internal.h"

#define MAX_THREADS 64

typedef struct column_job {
  uint32_t src; /* the column's index in the current file */
  cs_pq_values values;
  cs_err err;
  cs_rc rc;
} column_job;

typedef struct pq_import {
  const cs_columnar_ops *ops;
  const char *path;
  const cs_import_options *opt;
  cs_import_result *res;
  cs_err *err;
  uint32_t n_cols;
  cs_column *cols;  /* names owned by res->cols */
  column_job *jobs; /* one per imported column */
  void *file;       /* the file being read (the format's own) */
  uint32_t rg;      /* the group being decoded */
  const char *file_path;
  atomic_uint next; /* the next job a decoding thread takes */
  uint32_t threads;
  cs_writer *writer;
  cs_batch *batch;
  uint64_t bytes_total, bytes_done, rows;
} pq_import;

static int64_t column_index(const pq_import *im, void *f, const char *name, size_t n) {
  uint32_t cols = im->ops->n_cols(f);
  for (uint32_t i = 0; i < cols; i++) {
    cs_columnar_col c;
    im->ops->column(f, i, &c);
    if (strlen(c.name) == n && memcmp(c.name, name, n) == 0) return i;
  }
  return -1;
}

/* The columns to import: columns= (names, in the order given) or all. */
static cs_rc plan_columns(pq_import *im, void *f) {
  uint32_t want[CS_MAX_COLUMNS];
  uint32_t n = 0;
  const char *spec = im->opt->columns;
  if (spec) {
    for (const char *s = spec;;) {
      const char *comma = strchr(s, ',');
      const char *e = comma ? comma : s + strlen(s);
      while (s < e && (*s == ' ' || *s == '\t')) s++;
      while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
      if (s == e)
        return cs__import_fail(im->err, CS_EINVAL, "colstore: columns=%s: an empty column name", spec);
      int64_t i = column_index(im, f, s, (size_t)(e - s));
      if (i < 0)
        return cs__import_fail(
            im->err, CS_EINVAL,
            "colstore: columns=: %s has no column %.*s; columns= names the columns to read", im->file_path,
            (int)(e - s), s);
      for (uint32_t k = 0; k < n; k++)
        if (want[k] == (uint32_t)i)
          return cs__import_fail(im->err, CS_EINVAL, "colstore: columns=: %.*s is named twice", (int)(e - s),
                                 s);
      if (n == CS_MAX_COLUMNS)
        return cs__import_fail(im->err, CS_EINVAL, "colstore: columns=: too many columns");
      want[n++] = (uint32_t)i;
      if (!comma) break;
      s = comma + 1;
    }
  } else {
    uint32_t cols = im->ops->n_cols(f);
    for (uint32_t i = 0; i < cols && i < CS_MAX_COLUMNS; i++) want[n++] = i;
  }
  if (n == 0) return cs__import_fail(im->err, CS_EINVAL, "colstore: %s has no columns", im->file_path);
  /* The result owns the columns from here, so a failure below frees them. */
  if ((im->res->cols = im->cols = cs__mem_calloc(n, sizeof *im->cols)) == NULL ||
      !(im->jobs = cs__mem_calloc(n, sizeof *im->jobs)))
    return cs__import_fail(im->err, CS_ENOMEM, "colstore: out of memory");
  for (uint32_t k = 0; k < n; k++) {
    cs_columnar_col c;
    im->ops->column(f, want[k], &c);
    cs_rc rc = im->ops->supported(f, want[k], im->err);
    if (rc != CS_OK) return rc;
    if (!(im->cols[k].name = cs__mem_strdup(c.name)))
      return cs__import_fail(im->err, CS_ENOMEM, "colstore: out of memory");
    im->res->n_cols = ++im->n_cols;
    im->cols[k].type = c.type;
    im->cols[k].nullable = c.nullable;
    im->jobs[k].src = want[k];
  }
  return CS_OK;
}

/* A later file: the imported columns by name, with the first file's types. */
static cs_rc match_file(pq_import *im, void *f) {
  for (uint32_t k = 0; k < im->n_cols; k++) {
    const cs_column *want = &im->cols[k];
    int64_t i = column_index(im, f, want->name, strlen(want->name));
    if (i < 0)
      return cs__import_fail(
          im->err, CS_ESCHEMA,
          "colstore: %s has no column %s, which %s has; the files of one import share their "
          "columns",
          im->file_path, want->name, im->res->files[0]);
    cs_columnar_col c;
    im->ops->column(f, (uint32_t)i, &c);
    cs_rc rc = im->ops->supported(f, (uint32_t)i, im->err);
    if (rc != CS_OK) return rc;
    if (c.type != want->type || (c.nullable && !want->nullable))
      return cs__import_fail(im->err, CS_ESCHEMA,
                             "colstore: %s: column %s is %s%s, but %s in %s; the files of one import share "
                             "their column types",
                             im->file_path, c.name, c.desc, c.nullable ? " (nullable)" : "",
                             cs_type_name(want->type), im->res->files[0]);
    im->jobs[k].src = (uint32_t)i;
  }
  return CS_OK;
}

/* An existing store's columns must be the imported ones. */
static cs_rc match_store(pq_import *im, const cs_schema *s) {
  if (s->n_cols != im->n_cols)
    return cs__import_fail(im->err, CS_ESCHEMA,
                           "colstore: %s has %u columns but the %s input %u; name the columns to read "
                           "with columns=",
                           im->path, s->n_cols, im->ops->name, im->n_cols);
  for (uint32_t k = 0; k < s->n_cols; k++) {
    const cs_column *a = &s->cols[k], *b = &im->cols[k];
    if (strcmp(a->name, b->name) != 0 || a->type != b->type || (b->nullable && !a->nullable))
      return cs__import_fail(im->err, CS_ESCHEMA,
                             "colstore: column %u of %s is %s %s%s but the %s input has %s %s%s", k + 1,
                             im->path, a->name, cs_type_name(a->type), a->nullable ? "" : " NOT NULL",
                             im->ops->name, b->name, cs_type_name(b->type), b->nullable ? "" : " NOT NULL");
  }
  return CS_OK;
}

static void *decode_thread(void *arg) {
  pq_import *im = arg;
  for (;;) {
    uint32_t k = atomic_fetch_add(&im->next, 1);
    if (k >= im->n_cols) break;
    column_job *j = &im->jobs[k];
    j->rc = im->ops->read_column(im->file, j->src, &j->values, &j->err);
  }
  return NULL;
}

/* Decodes the imported columns of the current group, on im->threads threads. */
static cs_rc decode_row_group(pq_import *im) {
  atomic_store(&im->next, 0);
  pthread_t tid[MAX_THREADS];
  uint32_t started = 0, want = im->threads < im->n_cols ? im->threads : im->n_cols;
  for (uint32_t t = 1; t < want; t++)
    if (pthread_create(&tid[started], NULL, decode_thread, im) == 0) started++;
  decode_thread(im);
  for (uint32_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
  for (uint32_t k = 0; k < im->n_cols; k++)
    if (im->jobs[k].rc != CS_OK) {
      *im->err = im->jobs[k].err;
      return im->jobs[k].rc;
    }
  return CS_OK;
}

/* TEXT must be UTF-8, as it must be from a CSV file. */
static cs_rc check_text(pq_import *im, uint32_t k, uint64_t rows) {
  const cs_pq_values *v = &im->jobs[k].values;
  for (uint64_t r = 0; r < rows; r++) {
    const uint8_t *s = v->data + v->offsets[r];
    if (!cs_utf8_valid(s, (size_t)(v->offsets[r + 1] - v->offsets[r])))
      return cs__import_fail(im->err, CS_EINVAL,
                             "colstore: %s: %s %u, column %s: row %llu of the %s is not valid UTF-8; a "
                             "%s column must be",
                             im->file_path, im->ops->group, im->rg, im->cols[k].name,
                             (unsigned long long)r + 1, im->ops->group, im->ops->text_type);
  }
  return CS_OK;
}

static cs_rc write_batch(pq_import *im) {
  if (cs_batch_rows(im->batch) == 0) return CS_OK;
  cs_rc rc = cs_writer_write(im->writer, im->batch, im->err);
  cs_batch_clear(im->batch);
  return rc;
}

static bool report(pq_import *im, bool finished) {
  if (!im->opt->progress) return true;
  cs_import_progress p = {.pass = 1,
                          .passes = 1,
                          .bytes_done = im->bytes_done,
                          .bytes_total = im->bytes_total,
                          .rows = im->rows,
                          .finished = finished};
  if (im->opt->progress(im->opt->progress_ctx, &p) == 0) return true;
  im->res->interrupted = true;
  cs__import_fail(im->err, CS_EINVAL, "colstore: interrupted");
  return false;
}

static cs_rc import_file(pq_import *im) {
  void *f = im->file;
  for (im->rg = 0;; im->rg++) {
    bool have;
    uint64_t rows, bytes;
    cs_rc rc = im->ops->next_group(f, &have, &rows, &bytes, im->err);
    if (rc != CS_OK || !have) return rc;
    if ((rc = decode_row_group(im)) != CS_OK) return rc;
    for (uint32_t k = 0; k < im->n_cols; k++) {
      cs_pq_values *v = &im->jobs[k].values;
      if (v->n_rows != rows)
        return cs__import_fail(im->err, CS_ECORRUPT,
                               "colstore: %s: %s %u, column %s: %llu rows where the %s has %llu",
                               im->file_path, im->ops->group, im->rg, im->cols[k].name,
                               (unsigned long long)v->n_rows, im->ops->group, (unsigned long long)rows);
      if (v->null_count && !im->cols[k].nullable)
        return cs__import_fail(im->err, CS_ECORRUPT,
                               "colstore: %s: %s %u, column %s: NULLs in a required column", im->file_path,
                               im->ops->group, im->rg, im->cols[k].name);
      if (im->cols[k].type == CS_TYPE_TEXT && (rc = check_text(im, k, rows)) != CS_OK) return rc;
      cs_chunk ch = {.validity = v->null_count ? v->validity : NULL,
                     .offsets = cs_type_is_varlen(im->cols[k].type) ? v->offsets : NULL,
                     .data = v->data,
                     .data_bytes = v->data_bytes,
                     .null_count = v->null_count};
      if ((rc = cs__batch_put_run(im->batch, k, &ch, 0, rows, im->err)) != CS_OK) return rc;
    }
    im->bytes_done += bytes;
    cs__batch_end_rows(im->batch, rows);
    im->rows += rows;
    if (cs_batch_rows(im->batch) >= CS_DEFAULT_RECORD_ROWS && (rc = write_batch(im)) != CS_OK) return rc;
    if (!report(im, false)) return im->err->code;
  }
}

static cs_rc open_file(pq_import *im, size_t i) {
  im->file_path = im->res->files[i];
  if (im->file) im->ops->close(im->file);
  im->file = NULL;
  return im->ops->open(im->file_path, &im->file, im->err);
}

cs_rc cs__import_columnar(const cs_columnar_ops *ops, const char *path, const char *source,
                          const cs_import_options *opt, cs_import_result *res, cs_err *err) {
  memset(res, 0, sizeof *res);
  *err = (cs_err){0};
  cs_import_options defaults = {0};
  if (!opt) opt = &defaults;
  pq_import im = {.ops = ops, .path = path, .opt = opt, .res = res, .err = err};
  im.threads = opt->threads > 1 ? (opt->threads < MAX_THREADS ? opt->threads : MAX_THREADS) : 1;
  res->format = ops->format;
  const char *text_only = opt->header != CS_HEADER_AUTO ? "header="
                          : opt->delim                  ? "delim="
                          : opt->quote                  ? "quote="
                          : opt->has_nulls              ? "nulls="
                          : opt->skip_errors            ? "on_error=skip"
                                                        : NULL;
  if (text_only)
    return cs__import_fail(im.err, CS_EINVAL,
                           "colstore: %s applies to delimited text only; %s is %s (leave it out)", text_only,
                           source, ops->name);
  if (opt->mode == CS_IMPORT_CREATE && access(path, F_OK) == 0)
    return cs__import_fail(
        im.err, CS_EEXIST,
        "colstore: %s already exists; use mode=replace to overwrite it or mode=append to add to it", path);
  cs_rc rc = cs__import_list_files(source, res, &im.bytes_total, err);
  res->bytes_read = im.bytes_total;
  if (rc != CS_OK) return rc;
  if ((rc = open_file(&im, 0)) != CS_OK) goto done;
  if ((rc = plan_columns(&im, im.file)) != CS_OK) goto done;
  cs_schema schema = {im.n_cols, im.cols};
  cs_writer_options wopt = {.replace = opt->mode == CS_IMPORT_REPLACE, .lock_timeout_ms = 10000};
  if (opt->mode == CS_IMPORT_APPEND) {
    if ((rc = cs_writer_append(path, &wopt, &im.writer, err)) != CS_OK) goto done;
    if ((rc = match_store(&im, cs_writer_schema(im.writer))) != CS_OK) goto done;
    /* The store's own nullability: a NOT NULL column stays NOT NULL. */
    for (uint32_t k = 0; k < im.n_cols; k++)
      im.cols[k].nullable = cs_writer_schema(im.writer)->cols[k].nullable;
  } else if ((rc = cs_writer_create(path, &schema, &wopt, &im.writer, err)) != CS_OK) {
    goto done;
  }
  if ((rc = cs_batch_new(&schema, &im.batch, err)) != CS_OK) goto done;
  for (size_t i = 0; i < res->n_files; i++) {
    if (i > 0) {
      if ((rc = open_file(&im, i)) != CS_OK) goto done;
      if ((rc = match_file(&im, im.file)) != CS_OK) goto done;
    }
    if ((rc = import_file(&im)) != CS_OK) goto done;
  }
  if ((rc = write_batch(&im)) != CS_OK) goto done;
  im.bytes_done = im.bytes_total;
  if (!report(&im, true)) {
    rc = err->code;
    goto done;
  }
  res->rows = im.rows;
  rc = cs_writer_commit(im.writer, err);
  im.writer = NULL;
done:
  if (im.writer) cs_writer_abort(im.writer);
  cs_batch_free(im.batch);
  if (im.file) ops->close(im.file);
  for (uint32_t k = 0; im.jobs && k < im.n_cols; k++) cs_pq_values_free(&im.jobs[k].values);
  cs__mem_free(im.jobs);
  if (rc != CS_OK && err->code == CS_OK) cs_err_set(err, rc, "colstore: import failed (%s)", cs_rc_name(rc));
  return rc;
}
