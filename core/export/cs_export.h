/*
** cs_export.h - writing a store, or rows given in batches, to a file of
** another format (Parquet, CSV): the public C API of colstore_export.
**
** colstore_export (ext/colstore_export.c) is a thin layer over this, so the
** exporter is core code: it knows nothing of SQLite and is tested and
** benchmarked without it.  It reads a store's records with the store
** layer's record reader (pread, each chunk checked) and its deletion
** vectors through core/colstore.h, and writes through the
** format writers of core/interchange (cs_format_writer_ops), chosen by the
** path's extension from one small table in cs_export.c.
**
** Atomicity is this layer's, not the formats': the file is written to a
** temporary beside path, fsynced, and only then linked (mode create: an
** existing path is never overwritten, even one that appeared meanwhile)
** or renamed (mode replace) into place, and the directory fsynced.  Every
** way out that is not the commit (an error, the progress callback asking
** to stop) removes the temporary: the file appears whole or not at all.
**
** Two ways in, one path out:
**   cs_export          a store (a path or a dataset source, as
**                      cs_store_open_source takes it), read record by
**                      record, column by column, its deleted rows left out;
**   cs_export_begin    rows the caller has (colstore_export of a SELECT):
**   ..._batch, _commit batches of a schema, then the commit, or _abort.
*/
#ifndef CS_EXPORT_H
#define CS_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colstore.h"

typedef enum cs_export_mode { CS_EXPORT_CREATE = 0, CS_EXPORT_REPLACE } cs_export_mode;

/* What the progress callback sees, after each slice written (a store's
** record, a caller's batch) and once at the end. */
typedef struct cs_export_progress {
  uint64_t rows;       /* rows written so far */
  uint64_t rows_total; /* the rows to write; 0 when unknown (batches) */
  uint64_t bytes;      /* bytes written to the file so far */
  bool finished;       /* the last call, before the commit */
} cs_export_progress;

/* Returns nonzero to stop: the export then fails with CS_EINVAL,
** "colstore: interrupted ...", result.interrupted set, no file written. */
typedef int (*cs_export_progress_fn)(void *ctx, const cs_export_progress *p);

typedef struct cs_export_options {
  cs_export_mode mode;
  /* The codec's name, one the format takes (cs_export_format_check);
  ** NULL: the format's default (Parquet snappy, others none). */
  const char *compression;
  uint64_t row_group_rows; /* Parquet; 0: the writer's default */
  uint32_t threads;        /* 0, 1: one; N: a writer may encode on N threads */
  cs_export_progress_fn progress;
  void *progress_ctx;
} cs_export_options;

typedef struct cs_export_result {
  uint64_t rows;      /* rows written */
  uint64_t bytes;     /* the file's size */
  uint64_t groups;    /* Parquet row groups (Arrow record batches); 0 for CSV */
  const char *format; /* "parquet", "csv", ...: static */
  bool interrupted;   /* the progress callback stopped it */
} cs_export_result;

/* Checks that path's extension names a format this build writes and that
** opt's compression is one it takes: CS_EINVAL with a "colstore:" message
** listing what is accepted.  *out_format: the format's name. */
cs_rc cs_export_format_check(const char *path, const cs_export_options *opt, const char **out_format,
                             cs_err *err);

/* Writes the live rows of the store source names to path. */
cs_rc cs_export(const char *path, const char *source, const cs_export_options *opt, cs_export_result *res,
                cs_err *err);

typedef struct cs_exporter cs_exporter;
/* Starts a file of schema's columns at path (its temporary, that is). */
cs_rc cs_export_begin(const char *path, const cs_schema *schema, const cs_export_options *opt,
                      cs_exporter **out, cs_err *err);
/* Writes every row of batch (a batch of begin's schema). */
cs_rc cs_export_batch(cs_exporter *x, const cs_batch *batch, cs_err *err);
/* Finishes the file and puts it into place; frees x whatever the result
** (a failure leaves no file). */
cs_rc cs_export_commit(cs_exporter *x, cs_export_result *res, cs_err *err);
/* Removes the temporary and frees x. */
void cs_export_abort(cs_exporter *x);

#endif
