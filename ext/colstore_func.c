/*
** colstore_func.c - the SQL functions: colstore_version, colstore_create,
** colstore_info and colstore_verify.
**
** colstore_compact rewrites a store through core's cs_compact, after
** making sure no table of this connection has uncommitted changes to it
** (they would be lost or refused at COMMIT against the new file).
**
** colstore_create runs a query on the calling connection and streams its
** rows into a new store through the same value conversion INSERT uses;
** colstore_query.c reads and types the query (colstore_export of a SELECT
** shares it), this file writes the batches it hands over.
** The file appears atomically (cs_writer_create's temp file and rename).
** The query's own steps call SQLite's progress handler and stop at an
** interrupt; besides, every record's worth of rows reports progress and
** checks for a stop (ext/colstore_progress.c), so the writing is
** interruptible too, and a stop aborts the writer: nothing at path, or
** (replace) the old store as it was.  colstore_compact reports and
** checks the same way from core's callback, once per old record.
**
** Every function that touches the filesystem is SQLITE_DIRECTONLY, so a
** schema's trigger or view cannot make a connection read or write files.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colstore_array.h"
#include "colstore_export.h"
#include "colstore_ext.h"
#include "colstore_import.h"
#include "colstore_progress.h"
#include "colstore_query.h"

static void result_cs_error(sqlite3_context *ctx, cs_rc rc, const cs_err *err) {
  sqlite3_result_error(ctx, err->msg, -1);
  sqlite3_result_error_code(ctx, csx_rc_to_sqlite(rc));
}

static void result_error(sqlite3_context *ctx, int rc, const char *zMsg) {
  sqlite3_result_error(ctx, zMsg ? zMsg : "colstore: out of memory", -1);
  sqlite3_result_error_code(ctx, zMsg ? rc : SQLITE_NOMEM);
}

#define CS_STR_(x) #x
#define CS_STR(x) CS_STR_(x)

static void fn_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc, (void)argv;
  /* Which formats this build reads and writes (docs/format.md 14.2). */
  sqlite3_result_text(
      ctx,
      "colstore " CS_VERSION_STRING
      " (format " CS_STR(CS_FORMAT_VERSION) "-" CS_STR(CS_FORMAT_VERSION_MAX) ": reads both; writes " CS_STR(
          CS_FORMAT_VERSION) ", and " CS_STR(CS_FORMAT_VERSION_MAX) " once rows are deleted or updated)",
      -1, SQLITE_STATIC);
}

/* A table name of this connection, else a path. */
static const char *resolve_path(sqlite3_context *ctx, sqlite3_value *v) {
  const char *z = (const char *)sqlite3_value_text(v);
  if (!z) return NULL;
  csx_table *pTab = csx_conn_find(sqlite3_user_data(ctx), z);
  return pTab ? pTab->zPath : z;
}

/* ------------------------------------------------------ colstore_create */

/* colstore_query.c types and reads the query; this writes its batches. */
typedef struct create_job {
  const char *zPath;
  bool replace;
  cs_writer *writer;
  csx_progress *prog; /* the line on stderr, and the interrupt check */
} create_job;

#define CREATE_INTERRUPTED \
  "colstore: interrupted; colstore_create wrote nothing (an existing store is as it was)"

static int create_begin(void *ctx, const cs_schema *schema, char **pzErr) {
  create_job *j = ctx;
  cs_err err = {0};
  cs_writer_options opt = {.replace = j->replace};
  cs_rc crc = cs_writer_create(j->zPath, schema, &opt, &j->writer, &err);
  if (crc == CS_OK) return SQLITE_OK;
  const char *hint = crc == CS_EEXIST ? "; pass 'replace' as the third argument to overwrite it" : "";
  *pzErr = sqlite3_mprintf("%s%s", err.msg, hint);
  return csx_rc_to_sqlite(crc);
}

static int create_flush(void *ctx, const cs_batch *batch, char **pzErr) {
  create_job *j = ctx;
  cs_err err = {0};
  cs_rc rc = cs_writer_write(j->writer, batch, &err);
  if (rc == CS_OK) return SQLITE_OK;
  *pzErr = sqlite3_mprintf("%s", err.msg);
  return csx_rc_to_sqlite(rc);
}

/* Reports the rows read and the bytes written; SQLITE_INTERRUPT when the
** progress handler or sqlite3_interrupt says to stop. */
static int create_progress(void *ctx, uint64_t rows, bool finished, char **pzErr) {
  create_job *j = ctx;
  csx_progress_report r = {.bytes = j->writer ? cs_writer_file_bytes(j->writer) : 0,
                           .rows = rows,
                           .has_rows = true,
                           .finished = finished};
  if (!csx_progress_tick(j->prog, &r)) return SQLITE_OK;
  if (j->prog->rc == SQLITE_INTERRUPT)
    *pzErr = sqlite3_mprintf(CREATE_INTERRUPTED);
  else if (j->prog->rc != SQLITE_NOMEM)
    *pzErr = sqlite3_mprintf("colstore: %s", sqlite3_errstr(j->prog->rc));
  return j->prog->rc;
}

static const csx_query_ops create_ops = {create_begin, create_flush, create_progress, CREATE_INTERRUPTED};

static void fn_create(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  csx_progress_mode mode = CSX_PROGRESS_AUTO;
  if (csx_progress_arg(ctx, &argc, argv, 2, &mode) != SQLITE_OK) return;
  const char *zPath = (const char *)sqlite3_value_text(argv[0]);
  const char *zSql = (const char *)sqlite3_value_text(argv[1]);
  if (!zPath || !zSql || !*zPath || argc > 3) {
    result_error(
        ctx, SQLITE_MISUSE,
        "colstore: usage: colstore_create(path, select_sql [, 'replace'] [, 'progress=auto|on|off'])");
    return;
  }
  bool replace = false;
  if (argc == 3) {
    const char *z = (const char *)sqlite3_value_text(argv[2]);
    if (!z || sqlite3_stricmp(z, "replace") != 0) {
      result_error(ctx, SQLITE_MISUSE, "colstore: the third argument of colstore_create must be 'replace'");
      return;
    }
    replace = true;
  }
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  csx_progress prog;
  create_job j = {.zPath = zPath, .replace = replace, .prog = &prog};
  char *zErr = NULL;
  uint64_t rows = 0;
  int rc = csx_progress_begin(&prog, db, "colstore_create", mode);
  if (rc != SQLITE_OK) {
    zErr = sqlite3_mprintf("colstore: cannot prepare the interrupt probe: %s", sqlite3_errmsg(db));
  } else if (!replace && access(zPath, F_OK) == 0) { /* before the query runs, not after */
    rc = SQLITE_ERROR;
    zErr = sqlite3_mprintf(
        "colstore: %s already exists; pass 'replace' as the third argument to overwrite it", zPath);
  } else if ((rc = csx_query_run(db, zSql, "colstore_create", &create_ops, &j, &rows, &zErr)) == SQLITE_OK) {
    cs_err err = {0};
    cs_rc crc = cs_writer_commit(j.writer, &err);
    j.writer = NULL;
    if (crc != CS_OK) rc = csx_rc_to_sqlite(crc), zErr = sqlite3_mprintf("%s", err.msg);
  }
  if (j.writer) cs_writer_abort(j.writer);
  csx_progress_end(&prog);
  if (rc == SQLITE_OK)
    sqlite3_result_int64(ctx, (sqlite3_int64)rows);
  else
    result_error(ctx, rc, zErr);
  sqlite3_free(zErr);
}

/* -------------------------------------------------- colstore_info/verify */

static void json_stat(sqlite3_str *s, cs_type t, bool has, cs_stat v) {
  if (!has)
    sqlite3_str_appendall(s, "null");
  else if (!cs_type_is_float(t))
    sqlite3_str_appendf(s, "%lld", (long long)v.i);
  else if (v.f != v.f || v.f - v.f != 0)
    sqlite3_str_appendall(s, "null"); /* JSON has no inf/nan */
  else {
    /* the C library's %.17g round-trips every double; SQLite 3.40's
    ** printf is one ulp off for some (DBL_MAX prints ...155e+308) */
    char buf[32];
    snprintf(buf, sizeof buf, "%.17g", v.f);
    for (char *p = buf; *p; p++)
      if (*p == ',') *p = '.'; /* a host's LC_NUMERIC must not break the JSON */
    sqlite3_str_appendall(s, buf);
    if (!strpbrk(buf, ".e")) sqlite3_str_appendall(s, ".0"); /* still a REAL when read back: 2.0, not 2 */
  }
}

/* Appends z as a JSON string, quotes included (%w would escape for SQL). */
static void json_string(sqlite3_str *s, const char *z) {
  sqlite3_str_appendchar(s, 1, '"');
  for (const unsigned char *p = (const unsigned char *)z; *p; p++) {
    if (*p == '"' || *p == '\\')
      sqlite3_str_appendf(s, "\\%c", *p);
    else if (*p < 0x20)
      sqlite3_str_appendf(s, "\\u%04x", *p);
    else
      sqlite3_str_appendchar(s, 1, (char)*p);
  }
  sqlite3_str_appendchar(s, 1, '"');
}

static void fn_info(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  const char *zPath = resolve_path(ctx, argv[0]);
  if (!zPath) {
    result_error(ctx, SQLITE_MISUSE, "colstore: usage: colstore_info(path_or_table)");
    return;
  }
  cs_store *store = NULL;
  cs_err err = {0};
  cs_rc rc = cs_store_open_source(zPath, CS_VERIFY_HEADER, &store, &err);
  if (rc != CS_OK) {
    result_cs_error(ctx, rc, &err);
    return;
  }
  const cs_schema *schema = cs_store_schema(store);
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  /* rows: live rows; positions: rowids handed out (rows + deleted), the
  ** _rows range and the _mask length; the version the file is in. */
  sqlite3_str_appendf(s,
                      "{\"format_version\":%u,\"rows\":%llu,\"positions\":%llu,\"records\":%llu,\"files\":[",
                      cs_store_format_version(store), (unsigned long long)cs_store_live_rows(store),
                      (unsigned long long)cs_store_rows(store), (unsigned long long)cs_store_records(store));
  /* A dataset lists every file; rows, records and bytes are totals. */
  for (uint32_t f = 0; f < cs_store_files(store); f++) {
    if (f) sqlite3_str_appendall(s, ",");
    json_string(s, cs_store_is_dataset(store) ? cs_store_file_path(store, f) : zPath);
  }
  sqlite3_str_appendall(s, "],\"file_rows\":[");
  for (uint32_t f = 0; f < cs_store_files(store); f++)
    sqlite3_str_appendf(s, "%s%llu", f ? "," : "", (unsigned long long)cs_store_file_rows(store, f));
  sqlite3_str_appendf(s, "],\"dataset\":%s", cs_store_is_dataset(store) ? "true" : "false");
  sqlite3_str_appendf(s, ",\"bytes\":%llu,\"generation\":%llu,\"recovered\":%s,\"columns\":[",
                      (unsigned long long)cs_store_file_bytes(store),
                      (unsigned long long)cs_store_generation(store),
                      cs_store_recovered(store) ? "true" : "false");
  for (uint32_t c = 0; c < schema->n_cols; c++) {
    cs_column_stats st;
    cs_store_column_stats(store, c, &st);
    sqlite3_str_appendf(s, "%s{\"name\":", c ? "," : "");
    json_string(s, schema->cols[c].name);
    sqlite3_str_appendf(s, ",\"type\":\"%s\",\"nullable\":%s,\"null_count\":%llu,\"min\":",
                        cs_type_name(schema->cols[c].type), schema->cols[c].nullable ? "true" : "false",
                        (unsigned long long)st.null_count);
    json_stat(s, schema->cols[c].type, st.has_minmax, st.min);
    sqlite3_str_appendall(s, ",\"max\":");
    json_stat(s, schema->cols[c].type, st.has_minmax, st.max);
    sqlite3_str_appendf(s, ",\"sorted\":%s}", st.sorted ? "true" : "false");
  }
  const char *notes = cs_diag_notes();
  sqlite3_str_appendall(s, "],\"warnings\":[");
  int n_warn = 0;
  if (*notes) json_string(s, notes), n_warn++;
  if (cs_store_slot_damaged(store)) {
    if (n_warn++) sqlite3_str_appendall(s, ",");
    json_string(s,
                "a commit slot is torn or damaged: a commit was interrupted by a crash, or the newest commit "
                "is hidden by damage; "
                "the store shows the last intact commit");
  }
  if (cs_store_recovered(store)) {
    if (n_warn++) sqlite3_str_appendall(s, ",");
    json_string(s,
                "the footer was missing or damaged: the record directory was rebuilt by scanning the "
                "records; the next commit writes a new footer");
  }
  sqlite3_str_appendall(s, "]");
  /* The cache: a table's is its snapshot's (a path opened here is a map). */
  const char *zArg = (const char *)sqlite3_value_text(argv[0]);
  csx_table *pTab = zArg ? csx_conn_find(sqlite3_user_data(ctx), zArg) : NULL;
  cs_cache_info ci;
  cs_store_cache_info(pTab ? pTab->snap->store : store, &ci);
  char words[sizeof((csx_conn *)0)->last_names.cache];
  csx_cache_words(pTab ? pTab->snap->store : store, words, sizeof words);
  sqlite3_str_appendf(s, ",\"cache\":{\"requested\":\"%s\",\"effective\":", cs_cache_name(ci.requested));
  json_string(s, words);
  sqlite3_str_appendf(s, ",\"bytes\":%llu,\"read_bytes\":%llu,\"copy_ms\":%.3f,\"copy_gb_per_s\":%.2f}}",
                      (unsigned long long)ci.bytes, (unsigned long long)ci.read_bytes,
                      (double)ci.copy_ns / 1e6, ci.copy_ns ? (double)ci.bytes / (double)ci.copy_ns : 0.0);
  cs_store_close(store);
  char *z = sqlite3_str_finish(s);
  if (z)
    sqlite3_result_text(ctx, z, -1, sqlite3_free);
  else
    sqlite3_result_error_nomem(ctx);
}

/* colstore_verify's error lists at most this many damaged parts, one a
** line, and counts the rest (docs/sql.md). */
#define CSX_VERIFY_LIST_MAX 100

typedef struct verify_list {
  sqlite3_str *lines; /* the listed parts, one a line */
  uint64_t n;         /* parts reported */
  bool salvage;       /* every part is a chunk's or a record header's: the file
                              ** still opens, and DELETE + compaction can drop them */
} verify_list;

static void verify_part(void *pCtx, const cs_damage *part) {
  verify_list *p = pCtx;
  p->salvage = p->salvage && (part->kind == CS_DAMAGE_CHUNK || part->kind == CS_DAMAGE_RECORD);
  if (p->n++ >= CSX_VERIFY_LIST_MAX) return;
  sqlite3_str_appendf(p->lines, "\n%s", part->msg);
  if (part->n_rows)
    sqlite3_str_appendf(p->lines, " (rowids %llu to %llu of this file)", (unsigned long long)part->first_row,
                        (unsigned long long)(part->first_row + part->n_rows - 1));
  if (part->kind == CS_DAMAGE_FILE)
    sqlite3_str_appendall(p->lines, " (nothing after it in this file can be read or checked)");
}

/* TEXT 'ok', or SQLITE_CORRUPT whose message says how many parts are
** damaged and what to do on its first line, then one part a line: core
** reports every part (cs_store_verify_source) and this formats them.
** What to do depends on the parts: damage only in chunks and record
** headers leaves a file that opens, whose damaged records a DELETE and a
** renumbering compaction can drop (the compaction does not read a record
** with no live row); anything else keeps the file from opening. */
static void fn_verify(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  const char *zPath = resolve_path(ctx, argv[0]);
  if (!zPath) {
    result_error(ctx, SQLITE_MISUSE, "colstore: usage: colstore_verify(path_or_table)");
    return;
  }
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  verify_list list = {sqlite3_str_new(db), 0, true};
  uint64_t nDamaged = 0;
  cs_err err = {0};
  cs_rc rc = cs_store_verify_source(zPath, verify_part, &list, &nDamaged, &err);
  char *zList = sqlite3_str_finish(list.lines);
  if (rc != CS_OK) {
    result_cs_error(ctx, rc, &err);
  } else if (nDamaged == 0) {
    sqlite3_result_text(ctx, "ok", -1, SQLITE_STATIC);
  } else {
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_str_appendf(s,
                        "colstore: colstore_verify found %llu damaged part%s in %s; restore each file named "
                        "below from a backup",
                        (unsigned long long)nDamaged, nDamaged == 1 ? "" : "s", zPath);
    sqlite3_str_appendall(
        s, list.salvage
               ? ", or keep the rest of a file: DELETE the rowids given below from a table over that file, "
                 "then colstore_compact(table, 'renumber') drops those records unread (rowids then change)"
               : " (damage of this kind keeps the file from opening: neither DELETE nor colstore_compact "
                 "can salvage the rest)");
    sqlite3_str_appendall(s, zList ? zList : "");
    if (nDamaged > CSX_VERIFY_LIST_MAX)
      sqlite3_str_appendf(s, "\nand %llu more damaged parts (only the first %d are listed)",
                          (unsigned long long)(nDamaged - CSX_VERIFY_LIST_MAX), CSX_VERIFY_LIST_MAX);
    char *z = sqlite3_str_finish(s);
    result_error(ctx, SQLITE_CORRUPT, zList ? z : NULL);
    sqlite3_free(z);
  }
  sqlite3_free(zList);
}

/* ----------------------------------------------------- colstore_compact */

static void json_counts(sqlite3_str *s, const char *name, const cs_compact_counts *c) {
  sqlite3_str_appendf(
      s, "\"%s\":{\"rows\":%llu,\"positions\":%llu,\"records\":%llu,\"bytes\":%llu,\"free_bytes\":%llu}",
      name, (unsigned long long)c->rows, (unsigned long long)c->positions, (unsigned long long)c->records,
      (unsigned long long)c->bytes, (unsigned long long)c->free_bytes);
}

/* Reports the old records copied, their bytes and positions. */
static int compact_on_progress(void *ctx, const cs_compact_progress *p) {
  csx_progress_report r = {.bytes = p->bytes,
                           .bytes_total = p->bytes_total,
                           .rows = p->positions,
                           .has_rows = true,
                           .done = (double)p->bytes,
                           .total = (double)p->bytes_total,
                           .finished = p->finished};
  return csx_progress_tick(ctx, &r);
}

static void fn_compact(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  csx_progress_mode mode = CSX_PROGRESS_AUTO;
  if (csx_progress_arg(ctx, &argc, argv, 1, &mode) != SQLITE_OK) return;
  const char *zPath = resolve_path(ctx, argv[0]);
  const char *zMode = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  if (!zPath || argc > 2 || (argc > 1 && (!zMode || sqlite3_stricmp(zMode, "renumber") != 0))) {
    result_error(
        ctx, SQLITE_MISUSE,
        "colstore: usage: colstore_compact(path_or_table [, 'renumber'] [, 'progress=auto|on|off'])");
    return;
  }
  csx_conn *conn = sqlite3_user_data(ctx);
  /* Tables over the same file, however their paths are spelled. */
  char *real = realpath(zPath, NULL);
  for (csx_table *t = conn->tables; t; t = t->next) {
    if (!csx_table_has_pending(t)) continue;
    char *other = real ? realpath(t->zPath, NULL) : NULL;
    bool same = other ? strcmp(other, real) == 0 : strcmp(t->zPath, zPath) == 0;
    free(other);
    if (!same) continue;
    free(real);
    char *z = sqlite3_mprintf(
        "colstore: %s has uncommitted changes in this transaction; COMMIT or ROLLBACK before "
        "colstore_compact",
        t->zName);
    result_error(ctx, SQLITE_BUSY, z);
    sqlite3_free(z);
    return;
  }
  free(real);
  struct stat st;
  if (stat(zPath, &st) == 0 && !S_ISREG(st.st_mode)) {
    char *z = sqlite3_mprintf(
        "colstore: %s is not a store file (a dataset?); colstore_compact rewrites one file: compact each of "
        "its files",
        zPath);
    result_error(ctx, SQLITE_MISUSE, z);
    sqlite3_free(z);
    return;
  }
  csx_progress prog;
  if (csx_progress_begin(&prog, sqlite3_context_db_handle(ctx), "colstore_compact", mode) != SQLITE_OK) {
    csx_progress_end(&prog);
    result_error(ctx, SQLITE_ERROR, "colstore: cannot prepare the interrupt probe");
    return;
  }
  cs_compact_options opt = {.renumber = argc > 1,
                            .lock_timeout_ms = CSX_LOCK_TIMEOUT_MS,
                            .on_progress = compact_on_progress,
                            .progress_ctx = &prog};
  cs_compact_report rep;
  cs_err err = {0};
  cs_rc rc = cs_compact(zPath, &opt, &rep, &err);
  csx_progress_end(&prog);
  if (rc != CS_OK) {
    if (prog.stopped)
      csx_progress_result(&prog, ctx, err.msg);
    else
      result_cs_error(ctx, rc, &err);
    return;
  }
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  sqlite3_str_appendall(s, "{\"path\":");
  json_string(s, zPath);
  sqlite3_str_appendf(s, ",\"renumbered\":%s,", argc > 1 ? "true" : "false");
  json_counts(s, "before", &rep.before);
  sqlite3_str_appendall(s, ",");
  json_counts(s, "after", &rep.after);
  double secs = (double)rep.ns / 1e9;
  sqlite3_str_appendf(s, ",\"records_copied\":%llu,\"generation\":%llu,\"ms\":%.3f,\"gb_per_s\":%.2f}",
                      (unsigned long long)rep.records_copied, (unsigned long long)rep.generation, secs * 1e3,
                      secs > 0 ? (double)rep.before.bytes / 1e9 / secs : 0.0);
  char *z = sqlite3_str_finish(s);
  if (z)
    sqlite3_result_text(ctx, z, -1, sqlite3_free);
  else
    sqlite3_result_error_nomem(ctx);
}

static void fn_last_plan(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc, (void)argv;
  csx_conn *conn = sqlite3_user_data(ctx);
  if (!conn->has_last) {
    sqlite3_result_text(ctx, "{}", -1, SQLITE_STATIC);
    return;
  }
  const csx_scan_stats *st = conn->last;
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  sqlite3_str_appendall(s, "{\"table\":");
  json_string(s, conn->last_names.table);
  sqlite3_str_appendall(s, ",\"files\":[");
  json_string(s, conn->last_names.path);
  sqlite3_str_appendall(s, "],\"plan\":");
  json_string(s, conn->last_names.plan);
  sqlite3_str_appendall(s, ",\"cache\":");
  json_string(s, conn->last_names.cache);
  sqlite3_str_appendf(
      s,
      ",\"access\":\"%s\",\"kernels\":\"%s\",\"predicates\":%u,\"sorted_ranges\":%u,\"rows_selected\":%llu,"
      "\"rows_scanned\":%llu,\"records_scanned\":%llu,\"records_skipped\":%llu,\"records_coded\":%llu,"
      "\"threads\":%d,"
      "\"kernel_us\":%.1f,"
      "\"batches\":%u,\"batches_overlapped\":%u,\"batches_taken_back\":%u,",
      st->shape ? st->shape : "none", st->kernels ? st->kernels : "", st->n_preds, st->sorted_ranges,
      (unsigned long long)st->rows_selected, (unsigned long long)st->rows_scanned,
      (unsigned long long)st->records_scanned, (unsigned long long)st->records_skipped,
      (unsigned long long)st->records_coded, st->threads ? st->threads : 1, (double)st->kernel_ns / 1000.0,
      st->batches, st->overlapped, st->taken_back);
  csx_config_json(s);
  sqlite3_str_appendall(s, "}");
  char *z = sqlite3_str_finish(s);
  if (z)
    sqlite3_result_text(ctx, z, -1, sqlite3_free);
  else
    sqlite3_result_error_nomem(ctx);
}

int csx_register_functions(sqlite3 *db, csx_conn *conn) {
  static const struct {
    const char *zName;
    int nArg;
    int flags;
    void (*xFunc)(sqlite3_context *, int, sqlite3_value **);
  } fns[] = {
      {"colstore_version", 0, SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, fn_version},
      {"colstore_create", 2, SQLITE_DIRECTONLY, fn_create},
      {"colstore_create", 3, SQLITE_DIRECTONLY, fn_create},
      {"colstore_create", 4, SQLITE_DIRECTONLY, fn_create},
      {"colstore_info", 1, SQLITE_DIRECTONLY, fn_info},
      {"colstore_verify", 1, SQLITE_DIRECTONLY, fn_verify},
      {"colstore_compact", 1, SQLITE_DIRECTONLY, fn_compact},
      {"colstore_compact", 2, SQLITE_DIRECTONLY, fn_compact},
      {"colstore_compact", 3, SQLITE_DIRECTONLY, fn_compact},
      {"colstore_last_plan", 0, SQLITE_DIRECTONLY, fn_last_plan},
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    int rc = sqlite3_create_function_v2(db, fns[i].zName, fns[i].nArg, SQLITE_UTF8 | fns[i].flags, conn,
                                        fns[i].xFunc, NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
  }
  int rc = csx_register_import(db);
  if (rc == SQLITE_OK) rc = csx_register_export(db, conn);
  return rc == SQLITE_OK ? csx_register_arrays(db, conn) : rc;
}
