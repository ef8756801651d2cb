/*
** cs_import.h - importing delimited text and Parquet into a store: the
** public C API.
**
** colstore_import (ext/colstore_import.c) is a thin layer over this, so the
** importer is core code: it knows nothing of SQLite, and is tested and
** benchmarked without it.  It uses only core/colstore.h's public API (a
** schema, batches, a writer), so a store it writes is exactly a store
** colstore_create or INSERT would write.
**
** One call does everything, because atomicity is easiest to keep when one
** function owns the writer from create to commit: every failure path,
** including a stop asked for by the progress callback, ends in
** cs_writer_abort, which leaves no file (create, replace) or the store
** byte-identical (append).
**
** The result owns its memory (names, file list, rejects) and is freed with
** cs_import_result_free, whatever the return code: a failed import still
** reports the files it read and the rejects it met, which is what a user
** needs to fix the input.
*/
#ifndef CS_IMPORT_H
#define CS_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colstore.h"

typedef enum cs_import_mode { CS_IMPORT_CREATE = 0, CS_IMPORT_REPLACE, CS_IMPORT_APPEND } cs_import_mode;
typedef enum cs_import_header { CS_HEADER_AUTO = 0, CS_HEADER_YES, CS_HEADER_NO } cs_import_header;
/* AUTO: from the source's name (.parquet; .arrow, .feather, .arrows; or a
** directory of them), else text. */
typedef enum cs_import_format {
  CS_FORMAT_AUTO = 0,
  CS_FORMAT_CSV,
  CS_FORMAT_PARQUET,
  CS_FORMAT_ARROW
} cs_import_format;

/* What the progress callback sees, once per input block (and once at the
** end of each pass).  bytes_total is the sum of the input files' sizes as
** stored (compressed for .gz/.zst), each pass counted once; passes is 1
** when the types are given or the first megabyte's inferred types held for
** the whole input, and 2 when a value misfit them (the import then starts
** again: a first pass types the whole input, a second writes it). */
typedef struct cs_import_progress {
  int pass, passes;
  uint64_t bytes_done; /* of this pass, as stored */
  uint64_t bytes_total;
  uint64_t rows; /* records seen in this pass */
  bool finished; /* the last call of the last pass */
} cs_import_progress;

/* Returns nonzero to stop the import: it then fails with CS_EINVAL,
** "colstore: interrupted", result.interrupted set, nothing written. */
typedef int (*cs_import_progress_fn)(void *ctx, const cs_import_progress *p);

typedef struct cs_import_options {
  cs_import_mode mode;
  cs_import_format format;
  cs_import_header header;
  char delim; /* 0: detected among , TAB ; | */
  char quote; /* 0: '"' */
  /* NULL spellings: an unquoted field equal to one of them is NULL.  When
  ** has_nulls is false the default applies: the empty unquoted field. */
  bool has_nulls;
  const char *const *nulls;
  size_t n_nulls;
  const char *columns;   /* text: "name TYPE [NOT NULL], ..."; Parquet, Arrow: "name, ..."; or NULL */
  bool skip_errors;      /* on_error=skip: reject bad lines, go on */
  uint32_t max_rejects;  /* rejects kept in the result; 0: 10 */
  uint32_t threads;      /* 0, 1: one; N: plain files are read in waves of N chunks, parsed in parallel;
                           Parquet: a row group's columns decoded by N threads */
  uint32_t chunk_bytes;  /* threads: bytes per chunk; 0: 8 MiB (tests use tiny ones) */
  uint32_t sample_bytes; /* inferred types: the sample tried for one pass; 0: 1 MiB (tests use tiny ones) */
  cs_import_progress_fn progress;
  void *progress_ctx;
} cs_import_options;

typedef struct cs_import_reject {
  char *file;
  uint64_t line;
  char *reason;
} cs_import_reject;

typedef struct cs_import_result {
  uint64_t rows;       /* rows written */
  uint64_t rejected;   /* lines rejected (on_error=skip) */
  uint64_t bytes_read; /* the input files' sizes as stored */
  uint32_t n_cols;
  cs_column *cols; /* names owned by the result */
  char **files;    /* the files read, in order */
  size_t n_files;
  cs_import_reject *rejects; /* the first max_rejects rejects */
  size_t n_rejects;
  char delim;              /* the delimiter used */
  bool header;             /* whether the first line of each file was a header */
  cs_import_format format; /* what was read: CS_FORMAT_PARQUET, CS_FORMAT_ARROW, else text */
  bool interrupted;
} cs_import_result;

/* Imports the delimited text files source names (a file, a directory: its
** files in name order, or a glob pattern) into a store at path. */
cs_rc cs_import_text(const char *path, const char *source, const cs_import_options *opt,
                     cs_import_result *res, cs_err *err);
/* Imports Parquet files (cs_import_parquet.c): their columns, or those
** opt->columns names, with the types Parquet gives them. */
cs_rc cs_import_parquet(const char *path, const char *source, const cs_import_options *opt,
                        cs_import_result *res, cs_err *err);
/* Imports Arrow IPC files and streams (cs_import_arrow.c), likewise. */
cs_rc cs_import_arrow(const char *path, const char *source, const cs_import_options *opt,
                      cs_import_result *res, cs_err *err);
/* One of them, by opt->format (AUTO: the source's name decides). */
cs_rc cs_import(const char *path, const char *source, const cs_import_options *opt, cs_import_result *res,
                cs_err *err);
void cs_import_result_free(cs_import_result *res);

#endif
