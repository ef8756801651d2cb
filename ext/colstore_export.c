/*
** colstore_export.c - colstore_export(source, path [, 'option=value' ...]):
** a table, a store or a query's result out to a Parquet or CSV file.
**
** The work is core's (core/export/cs_export.c): this file turns the SQL
** arguments into cs_export_options, the result into the contract's JSON
** (docs/sql.md, "Getting data out"), and gives SQLite a way to stop it.
**
** The source is, in this order: a query when it starts with SELECT, WITH
** or VALUES (colstore_query.c reads and types it as colstore_create
** would, and its batches go to cs_export_batch); a colstore table of this
** connection (its store's committed rows: the table's uncommitted changes
** are not its store's yet); else a store path or dataset source.  The
** first two read nothing from disk that a table name could shadow, and a
** table name never needs quoting as a path.
**
** Progress and stopping are ext/colstore_progress.c's, shared with the
** other long functions: core's callback, once per record or batch,
** reports the rows and bytes written and asks whether to stop; told to,
** the export removes its temporary file: no file at path.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colstore_export.h"
#include "colstore_progress.h"
#include "colstore_query.h"
#include "cs_export.h"

#define EXPORT_INTERRUPTED "colstore: interrupted; colstore_export wrote nothing"

typedef struct export_call {
  csx_progress prog;
  const char *zPath;
  cs_export_options opt;
  cs_exporter *x; /* a query's exporter */
} export_call;

static int on_progress(void *ctx, const cs_export_progress *p) {
  export_call *call = ctx;
  csx_progress_report r = {.bytes = p->bytes,
                           .rows = p->rows,
                           .has_rows = true,
                           .done = (double)p->rows,
                           .total = (double)p->rows_total,
                           .finished = p->finished};
  return csx_progress_tick(&call->prog, &r);
}

/* --------------------------------------------------------------- options */

static char *parse_option(export_call *call, const char *arg, csx_progress_mode *progress) {
  const char *eq = strchr(arg, '=');
  if (!eq) return sqlite3_mprintf("colstore: colstore_export option '%s' is not name=value", arg);
  size_t klen = (size_t)(eq - arg);
  const char *v = eq + 1;
#define IS(name) (klen == strlen(name) && sqlite3_strnicmp(arg, name, (int)klen) == 0)
  cs_export_options *o = &call->opt;
  if (IS("mode")) {
    if (sqlite3_stricmp(v, "create") == 0)
      o->mode = CS_EXPORT_CREATE;
    else if (sqlite3_stricmp(v, "replace") == 0)
      o->mode = CS_EXPORT_REPLACE;
    else
      return sqlite3_mprintf("colstore: mode=%s: mode is create or replace", v);
  } else if (IS("compression")) {
    o->compression = v;
  } else if (IS("row_group_rows")) {
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*v == 0 || *end || n < 1 || n > (1ll << 28))
      return sqlite3_mprintf("colstore: row_group_rows=%s: row_group_rows is a number from 1 to 268435456",
                             v);
    o->row_group_rows = (uint64_t)n;
  } else if (IS("threads")) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*v == 0 || *end || n < 1 || n > 1024)
      return sqlite3_mprintf("colstore: threads=%s: threads is a number from 1 to 1024", v);
    o->threads = (uint32_t)n;
  } else if (IS("progress")) {
    char *zErr;
    csx_progress_option(arg, progress, &zErr);
    return zErr;
  } else {
    return sqlite3_mprintf(
        "colstore: unknown colstore_export option '%.*s' (mode, compression, row_group_rows, threads, "
        "progress)",
        (int)klen, arg);
  }
#undef IS
  return NULL;
}

/* ----------------------------------------------------------- a query */

static int query_begin(void *ctx, const cs_schema *schema, char **pzErr) {
  export_call *call = ctx;
  cs_err err = {0};
  cs_rc rc = cs_export_begin(call->zPath, schema, &call->opt, &call->x, &err);
  if (rc == CS_OK) return SQLITE_OK;
  *pzErr = sqlite3_mprintf("%s", err.msg);
  return csx_rc_to_sqlite(rc);
}

static int query_flush(void *ctx, const cs_batch *batch, char **pzErr) {
  export_call *call = ctx;
  cs_err err = {0};
  cs_rc rc = cs_export_batch(call->x, batch, &err);
  if (rc == CS_OK) return SQLITE_OK;
  if (call->prog.stopped) return call->prog.rc; /* the report said stop */
  *pzErr = sqlite3_mprintf("%s", err.msg);
  return csx_rc_to_sqlite(rc);
}

static int query_progress(void *ctx, uint64_t rows, bool finished, char **pzErr) {
  export_call *call = ctx;
  (void)finished, (void)pzErr; /* the commit's report is the finished one; fn_export words a stop */
  csx_progress_report r = {.rows = rows, .has_rows = true};
  return csx_progress_tick(&call->prog, &r) ? call->prog.rc : SQLITE_OK;
}

static const csx_query_ops export_query_ops = {query_begin, query_flush, query_progress, EXPORT_INTERRUPTED};

static bool is_query(const char *z) {
  while (*z == ' ' || *z == '\t' || *z == '\n' || *z == '\r' || *z == '(') z++;
  return sqlite3_strnicmp(z, "SELECT", 6) == 0 || sqlite3_strnicmp(z, "WITH", 4) == 0 ||
         sqlite3_strnicmp(z, "VALUES", 6) == 0;
}

/* -------------------------------------------------------------- function */

static char *result_json(sqlite3 *db, const cs_export_result *res, double ms) {
  sqlite3_str *s = sqlite3_str_new(db);
  double mb_per_s = ms > 0 ? (double)res->bytes / 1e6 / (ms / 1000.0) : 0;
  sqlite3_str_appendf(s, "{\"rows\":%llu,\"bytes\":%llu,\"ms\":%.1f,\"mb_per_s\":%.1f",
                      (unsigned long long)res->rows, (unsigned long long)res->bytes, ms, mb_per_s);
  if (strcmp(res->format, "parquet") == 0)
    sqlite3_str_appendf(s, ",\"row_groups\":%llu", (unsigned long long)res->groups);
  sqlite3_str_appendchar(s, 1, '}');
  return sqlite3_str_finish(s);
}

static void fn_export(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *zSource = argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
  const char *zPath = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  if (argc < 2 || !zPath || !*zPath || !zSource || !*zSource) {
    sqlite3_result_error(ctx, "colstore: usage: colstore_export(source, path [, 'option=value' ...])", -1);
    sqlite3_result_error_code(ctx, SQLITE_MISUSE);
    return;
  }
  export_call call = {.zPath = zPath};
  csx_progress_mode progress = CSX_PROGRESS_AUTO;
  for (int i = 2; i < argc; i++) {
    const char *arg = (const char *)sqlite3_value_text(argv[i]);
    char *zErr = arg ? parse_option(&call, arg, &progress)
                     : sqlite3_mprintf("colstore: colstore_export options are 'name=value' text");
    if (zErr) {
      sqlite3_result_error(ctx, zErr, -1);
      sqlite3_free(zErr);
      return;
    }
  }
  cs_err err = {0};
  cs_rc crc = cs_export_format_check(zPath, &call.opt, NULL, &err);
  if (crc != CS_OK) {
    sqlite3_result_error(ctx, err.msg, -1);
    return;
  }
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  if (csx_progress_begin(&call.prog, db, "colstore_export", progress) != SQLITE_OK) {
    sqlite3_result_error(ctx, "colstore: cannot prepare the interrupt probe", -1);
    csx_progress_end(&call.prog);
    return;
  }
  call.opt.progress = on_progress;
  call.opt.progress_ctx = &call;
  cs_export_result res = {0};
  char *zErr = NULL;
  int rc = SQLITE_OK;
  if (is_query(zSource)) {
    uint64_t rows;
    rc = csx_query_run(db, zSource, "colstore_export", &export_query_ops, &call, &rows, &zErr);
    if (rc == SQLITE_OK) {
      crc = cs_export_commit(call.x, &res, &err);
      call.x = NULL;
    }
    if (call.x) cs_export_abort(call.x);
  } else {
    csx_table *pTab = csx_conn_find(sqlite3_user_data(ctx), zSource);
    crc = cs_export(zPath, pTab ? pTab->zPath : zSource, &call.opt, &res, &err);
  }
  double ms = csx_progress_ms(&call.prog);
  csx_progress_end(&call.prog);
  if (call.prog.stopped) {
    csx_progress_result(&call.prog, ctx, EXPORT_INTERRUPTED);
  } else if (rc == SQLITE_NOMEM || (rc == SQLITE_OK && crc == CS_ENOMEM)) {
    sqlite3_result_error_nomem(ctx);
  } else if (rc != SQLITE_OK) {
    sqlite3_result_error(ctx, zErr ? zErr : "colstore: out of memory", -1);
    sqlite3_result_error_code(ctx, zErr ? rc : SQLITE_NOMEM);
  } else if (crc != CS_OK) {
    sqlite3_result_error(ctx, err.msg, -1);
    sqlite3_result_error_code(ctx, csx_rc_to_sqlite(crc));
  } else {
    char *z = result_json(db, &res, ms);
    if (z)
      sqlite3_result_text(ctx, z, -1, sqlite3_free);
    else
      sqlite3_result_error_nomem(ctx);
  }
  sqlite3_free(zErr);
}

int csx_register_export(sqlite3 *db, csx_conn *conn) {
  return sqlite3_create_function_v2(db, "colstore_export", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, conn,
                                    fn_export, NULL, NULL, NULL);
}
