/*
** colstore_query.c - a query's rows as batches of colstore columns, typed
** as colstore_create types them: what colstore_create and colstore_export
** of a SELECT share (colstore_query.h).
**
** Column types come from the result's declared types when there are any
** (a colstore name or alias, else SQLite's affinity rules); a column
** without one (an expression) is inferred from its values, which is why
** such a query is buffered whole in the batch before its caller sees a
** row: a later REAL or TEXT can widen an INTEGER column it started as
** (never narrowing: NULLs to anything, INT64 to FLOAT64, numbers to TEXT,
** as SQLite would print them; BLOB mixed with anything else is an error).
** With every type declared the rows stream: the caller gets the schema
** before the first row and a batch every record's worth of rows.
**
** The query's own steps call SQLite's progress handler and stop at an
** interrupt; between records the caller's progress callback runs too.
*/
#include <string.h>

#include "colstore_query.h"

/* Type for a declared type: a colstore name or alias, else SQLite's
** affinity rules; 0 means "infer from the values". */
static cs_type decltype_map(const char *z) {
  if (!z || !*z) return 0;
  cs_type t = cs_type_parse(z, strlen(z));
  if (t) return t;
  char up[64];
  size_t n = strlen(z);
  if (n >= sizeof up) n = sizeof up - 1;
  for (size_t i = 0; i < n; i++) up[i] = (char)((z[i] >= 'a' && z[i] <= 'z') ? z[i] - 32 : z[i]);
  up[n] = 0;
  if (strstr(up, "INT")) return CS_TYPE_INT64;
  if (strstr(up, "CHAR") || strstr(up, "CLOB") || strstr(up, "TEXT")) return CS_TYPE_TEXT;
  if (strstr(up, "BLOB")) return CS_TYPE_BLOB;
  if (strstr(up, "REAL") || strstr(up, "FLOA") || strstr(up, "DOUB")) return CS_TYPE_FLOAT64;
  return 0; /* NUMERIC affinity and friends: the values decide */
}

typedef struct query_job {
  sqlite3 *db;
  sqlite3_stmt *pStmt;   /* the user's query */
  sqlite3_stmt *pToText; /* SELECT CAST(?1 AS TEXT), for widening */
  const char *zFunc;     /* the calling function, for messages */
  int nCol;
  cs_column *cols; /* current types; names point into names[] */
  char **names;
  bool *inferred; /* type comes from values */
  bool *seen;     /* inferred column has had a non-NULL value */
  cs_batch *batch;
  bool begun; /* ops->begin was called */
  uint64_t rows;
  const csx_query_ops *ops;
  void *ctx;
  char *zErr; /* sqlite3_malloc'd */
  int rc;
} query_job;

static int job_fail(query_job *j, int rc, char *zErr) {
  j->rc = zErr ? rc : SQLITE_NOMEM;
  sqlite3_free(j->zErr);
  j->zErr = zErr;
  return j->rc;
}

/* A callback's result: its message, or SQLITE_NOMEM without one. */
static int job_callback(query_job *j, int rc, char *zErr) {
  return rc == SQLITE_OK ? SQLITE_OK : job_fail(j, zErr || rc == SQLITE_NOMEM ? rc : SQLITE_NOMEM, zErr);
}

/* Re-puts the rows of column c converted to type to (only widening:
** NULLs to anything, INT64 to FLOAT64, numbers to TEXT). */
static int job_widen(query_job *j, int c, cs_type to) {
  uint64_t n = cs_batch_rows(j->batch);
  cs_type from = j->cols[c].type;
  cs_err err;
  cs_stat *vals = NULL;
  bool *valid = NULL;
  if (n) {
    vals = sqlite3_malloc64(n * sizeof *vals);
    valid = sqlite3_malloc64(n * sizeof *valid);
    if (!vals || !valid) {
      sqlite3_free(vals), sqlite3_free(valid);
      return job_fail(j, SQLITE_NOMEM, NULL);
    }
  }
  for (uint64_t r = 0; r < n; r++) valid[r] = j->seen[c] && cs_batch_get(j->batch, (uint32_t)c, r, &vals[r]);
  cs_batch_column_reset(j->batch, (uint32_t)c, to);
  j->cols[c].type = to;
  int rc = SQLITE_OK;
  for (uint64_t r = 0; r < n && rc == SQLITE_OK; r++) {
    cs_rc crc;
    if (!valid[r]) {
      crc = cs_batch_put_null(j->batch, (uint32_t)c, &err);
    } else if (to == CS_TYPE_FLOAT64) {
      crc = cs_batch_put_f64(j->batch, (uint32_t)c, from == CS_TYPE_FLOAT64 ? vals[r].f : (double)vals[r].i,
                             &err);
    } else { /* TEXT: exactly the text SQLite would give the number */
      if (!j->pToText &&
          sqlite3_prepare_v2(j->db, "SELECT CAST(?1 AS TEXT)", -1, &j->pToText, NULL) != SQLITE_OK) {
        rc = job_fail(j, SQLITE_ERROR, sqlite3_mprintf("colstore: %s", sqlite3_errmsg(j->db)));
        break;
      }
      if (from == CS_TYPE_FLOAT64)
        sqlite3_bind_double(j->pToText, 1, vals[r].f);
      else
        sqlite3_bind_int64(j->pToText, 1, vals[r].i);
      sqlite3_step(j->pToText);
      const unsigned char *z = sqlite3_column_text(j->pToText, 0);
      crc = z ? cs_batch_put_bytes(j->batch, (uint32_t)c, z, (uint64_t)sqlite3_column_bytes(j->pToText, 0),
                                   &err)
              : CS_ENOMEM;
      sqlite3_reset(j->pToText);
    }
    if (crc != CS_OK) rc = job_fail(j, SQLITE_NOMEM, NULL);
  }
  sqlite3_free(vals);
  sqlite3_free(valid);
  return rc;
}

/* Chooses or widens an inferred column's type for value v. */
static int job_infer(query_job *j, int c, sqlite3_value *v) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return SQLITE_OK;
  cs_type want = t == SQLITE_INTEGER ? CS_TYPE_INT64
                 : t == SQLITE_FLOAT ? CS_TYPE_FLOAT64
                 : t == SQLITE_TEXT  ? CS_TYPE_TEXT
                                     : CS_TYPE_BLOB;
  cs_type have = j->cols[c].type;
  if (!j->seen[c]) {
    int rc = have == want ? SQLITE_OK : job_widen(j, c, want);
    j->seen[c] = true;
    return rc;
  }
  if (have == want || (have == CS_TYPE_TEXT && want != CS_TYPE_BLOB) ||
      (have == CS_TYPE_FLOAT64 && want == CS_TYPE_INT64))
    return SQLITE_OK;
  if (have == CS_TYPE_BLOB || want == CS_TYPE_BLOB)
    return job_fail(
        j, SQLITE_MISMATCH,
        sqlite3_mprintf(
            "colstore: column %s mixes BLOB values with other values; give it a declared type, or CAST it",
            j->cols[c].name));
  return job_widen(j, c, want == CS_TYPE_TEXT ? CS_TYPE_TEXT : CS_TYPE_FLOAT64);
}

static int job_begin(query_job *j) {
  char *zErr = NULL;
  cs_schema schema = {(uint32_t)j->nCol, j->cols};
  j->begun = true;
  int rc = j->ops->begin(j->ctx, &schema, &zErr); /* before zErr is read: argument order is unspecified */
  return job_callback(j, rc, zErr);
}

static int job_progress(query_job *j, bool finished) {
  char *zErr = NULL;
  int rc = j->ops->progress(j->ctx, j->rows, finished, &zErr);
  return job_callback(j, rc, zErr);
}

/* The batch to the caller, then emptied, and a report. */
static int job_flush(query_job *j) {
  char *zErr = NULL;
  int rc = j->ops->flush(j->ctx, j->batch, &zErr);
  rc = job_callback(j, rc, zErr);
  if (rc != SQLITE_OK) return rc;
  cs_batch_clear(j->batch);
  return job_progress(j, false);
}

static int job_run(query_job *j, const char *zSql) {
  const char *zTail = NULL;
  if (sqlite3_prepare_v2(j->db, zSql, -1, &j->pStmt, &zTail) != SQLITE_OK)
    return job_fail(j, SQLITE_ERROR,
                    sqlite3_mprintf("colstore: cannot prepare the query: %s", sqlite3_errmsg(j->db)));
  while (zTail && (*zTail == ' ' || *zTail == '\t' || *zTail == '\n' || *zTail == '\r' || *zTail == ';'))
    zTail++;
  if (!j->pStmt || (zTail && *zTail))
    return job_fail(j, SQLITE_ERROR,
                    sqlite3_mprintf("colstore: %s takes exactly one SELECT statement", j->zFunc));
  j->nCol = sqlite3_column_count(j->pStmt);
  if (j->nCol == 0 || !sqlite3_stmt_readonly(j->pStmt))
    return job_fail(j, SQLITE_ERROR,
                    sqlite3_mprintf("colstore: %s needs a query that returns rows (a SELECT)", j->zFunc));
  if (j->nCol > CS_MAX_COLUMNS)
    return job_fail(j, SQLITE_ERROR, sqlite3_mprintf("colstore: too many columns (%d)", j->nCol));
  j->cols = sqlite3_malloc64((sqlite3_uint64)j->nCol * sizeof *j->cols);
  j->names = sqlite3_malloc64((sqlite3_uint64)j->nCol * sizeof *j->names);
  j->inferred = sqlite3_malloc64((sqlite3_uint64)j->nCol * sizeof *j->inferred);
  j->seen = sqlite3_malloc64((sqlite3_uint64)j->nCol * sizeof *j->seen);
  /* Emptied before the check: csx_query_run frees every name, on failure too. */
  if (j->names) memset(j->names, 0, (size_t)j->nCol * sizeof *j->names);
  if (!j->cols || !j->names || !j->inferred || !j->seen) return job_fail(j, SQLITE_NOMEM, NULL);
  bool any_inferred = false;
  for (int c = 0; c < j->nCol; c++) {
    const char *zName = sqlite3_column_name(j->pStmt, c);
    if (!(j->names[c] = sqlite3_mprintf("%s", zName ? zName : ""))) return job_fail(j, SQLITE_NOMEM, NULL);
    for (int k = 0; k < c; k++)
      if (sqlite3_stricmp(j->names[k], j->names[c]) == 0)
        return job_fail(
            j, SQLITE_ERROR,
            sqlite3_mprintf("colstore: the query returns two columns named %s; rename one with AS",
                            j->names[c]));
    cs_type t = decltype_map(sqlite3_column_decltype(j->pStmt, c));
    j->inferred[c] = t == 0;
    j->seen[c] = false;
    any_inferred |= t == 0;
    j->cols[c] = (cs_column){j->names[c], t ? t : CS_TYPE_INT64, true};
  }
  cs_err err = {0};
  cs_schema schema = {(uint32_t)j->nCol, j->cols};
  if (cs_batch_new(&schema, &j->batch, &err) != CS_OK) return job_fail(j, SQLITE_NOMEM, NULL);
  int rc;
  /* Streaming needs the final types up front; inferred columns wait. */
  if (!any_inferred && (rc = job_begin(j)) != SQLITE_OK) return rc;
  while ((rc = sqlite3_step(j->pStmt)) == SQLITE_ROW) {
    for (int c = 0; c < j->nCol; c++) {
      sqlite3_value *v = sqlite3_column_value(j->pStmt, c);
      if (j->inferred[c] && (rc = job_infer(j, c, v)) != SQLITE_OK) return rc;
      char *zErr = NULL;
      rc = csx_value_put(j->batch, (uint32_t)c, &j->cols[c], NULL, v, &zErr);
      if (rc != SQLITE_OK) {
        char *z = zErr ? sqlite3_mprintf("%s (row %llu of the query)", zErr, (unsigned long long)j->rows + 1)
                       : NULL;
        sqlite3_free(zErr);
        return job_fail(j, rc, z);
      }
    }
    cs_batch_end_row(j->batch);
    j->rows++;
    if (cs_batch_rows(j->batch) % CS_DEFAULT_RECORD_ROWS) continue;
    /* A record's worth: handed over when the types are known, and a report */
    if ((rc = j->begun ? job_flush(j) : job_progress(j, false)) != SQLITE_OK) return rc;
  }
  if (rc == SQLITE_INTERRUPT)
    return job_fail(j, SQLITE_INTERRUPT, sqlite3_mprintf("%s", j->ops->zInterrupted));
  if (rc != SQLITE_DONE)
    return job_fail(j, rc, sqlite3_mprintf("colstore: the query failed: %s", sqlite3_errmsg(j->db)));
  if (!j->begun && (rc = job_begin(j)) != SQLITE_OK) return rc;
  if (cs_batch_rows(j->batch) && (rc = job_flush(j)) != SQLITE_OK) return rc;
  return job_progress(j, true);
}

int csx_query_run(sqlite3 *db, const char *zSql, const char *zFunc, const csx_query_ops *ops, void *ctx,
                  uint64_t *pRows, char **pzErr) {
  query_job j = {.db = db, .zFunc = zFunc, .ops = ops, .ctx = ctx};
  int rc = job_run(&j, zSql);
  sqlite3_finalize(j.pStmt);
  sqlite3_finalize(j.pToText);
  cs_batch_free(j.batch);
  if (j.names)
    for (int c = 0; c < j.nCol; c++) sqlite3_free(j.names[c]);
  sqlite3_free(j.names);
  sqlite3_free(j.cols);
  sqlite3_free(j.inferred);
  sqlite3_free(j.seen);
  *pRows = j.rows;
  *pzErr = j.zErr;
  return rc;
}
