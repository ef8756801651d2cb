/*
** colstore_query.h - a SELECT's rows as colstore batches
** (ext/colstore_query.c), for colstore_create and colstore_export.
*/
#ifndef COLSTORE_QUERY_H
#define COLSTORE_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "colstore_ext.h"

/* What the caller does with the rows.  Each callback returns SQLITE_OK or
** an error code with *pzErr (sqlite3_malloc'd; NULL means out of memory). */
typedef struct csx_query_ops {
  /* The types are final: before the first row when every column has a
  ** declared type, else after the last (the rows are then buffered). */
  int (*begin)(void *ctx, const cs_schema *schema, char **pzErr);
  /* A record's worth of rows (CS_DEFAULT_RECORD_ROWS), or the last ones;
  ** the batch is emptied after. */
  int (*flush)(void *ctx, const cs_batch *batch, char **pzErr);
  /* After every record's worth of rows read, and once at the end
  ** (finished): SQLITE_OK to go on. */
  int (*progress)(void *ctx, uint64_t rows, bool finished, char **pzErr);
  const char *zInterrupted; /* the message when the query's steps are interrupted */
} csx_query_ops;

/* Runs zSql (exactly one read-only statement returning rows) on db; zFunc
** names the calling function in messages.  *pRows: the rows read; *pzErr
** the message of a failure (sqlite3_malloc'd), or NULL. */
int csx_query_run(sqlite3 *db, const char *zSql, const char *zFunc, const csx_query_ops *ops, void *ctx,
                  uint64_t *pRows, char **pzErr);

#endif
