/*
** colstore_import.c - colstore_import(path, source [, 'option=value' ...]):
** delimited text or Parquet files into a new store, or appended to one.
**
** The work is core's (core/import/cs_import.c); this file turns the SQL
** arguments into cs_import_options, the result into the contract's JSON
** (docs/sql.md, "Getting data in"), and gives SQLite a way to stop it.
**
** Progress and stopping are ext/colstore_progress.c's, shared with the
** other long functions: the importer's callback, once per input block
** (1 MiB), reports how far it is (the bytes read of the whole work, both
** passes when types are inferred) and asks whether to stop; told to, the
** import aborts its writer: no partial store, or the store as it was.
**
** The JSON result is made once before the commit, in the callback's last
** call (the import's figures are final then), and again after it with the
** time the commit took: if that second one finds no memory the first is
** returned, so an allocation that fails can never fail the call after the
** store was committed; one that fails in the first makes the import stop,
** leaving nothing, with SQLITE_NOMEM.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colstore_import.h"
#include "colstore_progress.h"
#include "cs_import.h"

#define MAX_OPTION_NULLS 64

typedef struct import_call {
  csx_progress prog;
  sqlite3 *db;
  const cs_import_result *res; /* filled by the import as it runs */
  char *ready_json;            /* the result, made before the commit */
  bool nomem;                  /* making it failed: the import stopped */
} import_call;

static char *result_json(sqlite3 *db, const cs_import_result *res, double ms);

static int on_progress(void *ctx, const cs_import_progress *p) {
  import_call *call = ctx;
  double total = (double)p->bytes_total * p->passes;
  double done = (double)p->bytes_total * (p->pass - 1) + (double)p->bytes_done;
  char phase[32];
  snprintf(phase, sizeof phase, "pass %d/%d", p->pass, p->passes);
  csx_progress_report r = {phase, (uint64_t)done, (uint64_t)total, p->rows, true, done, total, p->finished};
  int stop = csx_progress_tick(&call->prog, &r);
  if (stop) return stop;
  if (p->finished && p->pass == p->passes &&
      !(call->ready_json = result_json(call->db, call->res, csx_progress_ms(&call->prog)))) {
    call->nomem = true;
    return 1;
  }
  return 0;
}

/* --------------------------------------------------------------- options */

typedef struct parsed_options {
  cs_import_options opt;
  char *nulls_text; /* nulls= split in place */
  const char *nulls[MAX_OPTION_NULLS];
  csx_progress_mode progress;
} parsed_options;

static char *option_error(const char *fmt, const char *a) { return sqlite3_mprintf(fmt, a); }

/* One 'name=value' argument; an error message (sqlite3_malloc'd) or NULL. */
static char *parse_option(parsed_options *po, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (!eq) return option_error("colstore: colstore_import option '%s' is not name=value", arg);
  size_t klen = (size_t)(eq - arg);
  const char *v = eq + 1;
#define IS(name) (klen == strlen(name) && sqlite3_strnicmp(arg, name, (int)klen) == 0)
  cs_import_options *o = &po->opt;
  if (IS("mode")) {
    if (sqlite3_stricmp(v, "create") == 0)
      o->mode = CS_IMPORT_CREATE;
    else if (sqlite3_stricmp(v, "replace") == 0)
      o->mode = CS_IMPORT_REPLACE;
    else if (sqlite3_stricmp(v, "append") == 0)
      o->mode = CS_IMPORT_APPEND;
    else
      return option_error("colstore: mode=%s: mode is create, replace or append", v);
  } else if (IS("header")) {
    if (sqlite3_stricmp(v, "auto") == 0)
      o->header = CS_HEADER_AUTO;
    else if (sqlite3_stricmp(v, "true") == 0 || strcmp(v, "1") == 0 || sqlite3_stricmp(v, "on") == 0)
      o->header = CS_HEADER_YES;
    else if (sqlite3_stricmp(v, "false") == 0 || strcmp(v, "0") == 0 || sqlite3_stricmp(v, "off") == 0)
      o->header = CS_HEADER_NO;
    else
      return option_error("colstore: header=%s: header is auto, true or false", v);
  } else if (IS("delim")) {
    if (strcmp(v, "\\t") == 0 || sqlite3_stricmp(v, "tab") == 0)
      o->delim = '\t';
    else if (strlen(v) == 1 && v[0] != '\n' && v[0] != '\r')
      o->delim = v[0];
    else
      return option_error("colstore: delim=%s: the delimiter is one character (or tab)", v);
  } else if (IS("quote")) {
    if (strlen(v) != 1 || v[0] == '\n' || v[0] == '\r')
      return option_error("colstore: quote=%s: the quote is one character", v);
    o->quote = v[0];
  } else if (IS("nulls")) {
    sqlite3_free(po->nulls_text);
    if (!(po->nulls_text = sqlite3_mprintf("%s", v))) return NULL;
    o->has_nulls = true;
    o->n_nulls = 0;
    for (char *s = po->nulls_text;;) {
      if (o->n_nulls == MAX_OPTION_NULLS) return option_error("colstore: nulls=%s: at most 64 spellings", v);
      po->nulls[o->n_nulls++] = s;
      char *comma = strchr(s, ',');
      if (!comma) break;
      *comma = 0;
      s = comma + 1;
    }
    o->nulls = po->nulls;
  } else if (IS("columns")) {
    o->columns = v;
  } else if (IS("on_error")) {
    if (sqlite3_stricmp(v, "fail") == 0)
      o->skip_errors = false;
    else if (sqlite3_stricmp(v, "skip") == 0)
      o->skip_errors = true;
    else
      return option_error("colstore: on_error=%s: on_error is fail or skip", v);
  } else if (IS("threads")) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*v == 0 || *end || n < 1 || n > 1024)
      return option_error("colstore: threads=%s: threads is a number from 1 to 1024", v);
    o->threads = (uint32_t)n;
  } else if (IS("progress")) {
    char *zErr;
    csx_progress_option(arg, &po->progress, &zErr);
    return zErr;
  } else if (IS("format")) {
    if (sqlite3_stricmp(v, "csv") == 0)
      o->format = CS_FORMAT_CSV;
    else if (sqlite3_stricmp(v, "parquet") == 0)
      o->format = CS_FORMAT_PARQUET;
    else if (sqlite3_stricmp(v, "arrow") == 0)
      o->format = CS_FORMAT_ARROW;
    else
      return option_error("colstore: format=%s: format is csv, parquet or arrow", v);
  } else {
    return sqlite3_mprintf(
        "colstore: unknown colstore_import option '%.*s' (mode, columns, header, delim, quote, nulls, "
        "on_error, threads, progress, format)",
        (int)klen, arg);
  }
#undef IS
  return NULL;
}

/* ------------------------------------------------------------------ JSON */

static void append_json_text(sqlite3_str *s, const char *z) {
  sqlite3_str_appendchar(s, 1, '"');
  for (; *z; z++) {
    unsigned char c = (unsigned char)*z;
    if (c == '"' || c == '\\')
      sqlite3_str_appendf(s, "\\%c", c);
    else if (c < 0x20)
      sqlite3_str_appendf(s, "\\u%04x", c);
    else
      sqlite3_str_appendchar(s, 1, (char)c);
  }
  sqlite3_str_appendchar(s, 1, '"');
}

static char *result_json(sqlite3 *db, const cs_import_result *res, double ms) {
  sqlite3_str *s = sqlite3_str_new(db);
  sqlite3_str_appendf(s, "{\"rows\":%llu,\"rejected\":%llu,\"columns\":[", (unsigned long long)res->rows,
                      (unsigned long long)res->rejected);
  for (uint32_t i = 0; i < res->n_cols; i++) {
    sqlite3_str_appendall(s, i ? ",{\"name\":" : "{\"name\":");
    append_json_text(s, res->cols[i].name);
    sqlite3_str_appendf(s, ",\"type\":\"%s\",\"nullable\":%s}", cs_type_name(res->cols[i].type),
                        res->cols[i].nullable ? "true" : "false");
  }
  sqlite3_str_appendall(s, "],\"files\":[");
  for (size_t i = 0; i < res->n_files; i++) {
    if (i) sqlite3_str_appendchar(s, 1, ',');
    append_json_text(s, res->files[i]);
  }
  double mb_per_s = ms > 0 ? (double)res->bytes_read / 1e6 / (ms / 1000.0) : 0;
  sqlite3_str_appendf(s, "],\"bytes_read\":%llu,\"ms\":%.1f,\"mb_per_s\":%.1f,\"rejects\":[",
                      (unsigned long long)res->bytes_read, ms, mb_per_s);
  for (size_t i = 0; i < res->n_rejects; i++) {
    sqlite3_str_appendall(s, i ? ",{\"file\":" : "{\"file\":");
    append_json_text(s, res->rejects[i].file);
    sqlite3_str_appendf(s, ",\"line\":%llu,\"reason\":", (unsigned long long)res->rejects[i].line);
    append_json_text(s, res->rejects[i].reason);
    sqlite3_str_appendchar(s, 1, '}');
  }
  sqlite3_str_appendchar(s, 1, ']');
  if (res->format != CS_FORMAT_PARQUET && res->format != CS_FORMAT_ARROW) { /* what text detection decided */
    char delim[2] = {res->delim, 0};
    sqlite3_str_appendall(s, ",\"delim\":");
    append_json_text(s, delim);
    sqlite3_str_appendf(s, ",\"header\":%s", res->header ? "true" : "false");
  }
  sqlite3_str_appendchar(s, 1, '}');
  return sqlite3_str_finish(s);
}

/* -------------------------------------------------------------- function */

static void fn_import(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *zPath = (const char *)sqlite3_value_text(argv[0]);
  const char *zSource = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  if (argc < 2 || !zPath || !*zPath || !zSource || !*zSource) {
    sqlite3_result_error(ctx, "colstore: usage: colstore_import(path, source [, 'option=value' ...])", -1);
    sqlite3_result_error_code(ctx, SQLITE_MISUSE);
    return;
  }
  parsed_options po = {.progress = CSX_PROGRESS_AUTO};
  for (int i = 2; i < argc; i++) {
    const char *arg = (const char *)sqlite3_value_text(argv[i]);
    char *zErr = arg ? parse_option(&po, arg)
                     : sqlite3_mprintf("colstore: colstore_import options are 'name=value' text");
    if (zErr || (arg && po.opt.has_nulls && !po.nulls_text)) {
      if (zErr)
        sqlite3_result_error(ctx, zErr, -1);
      else
        sqlite3_result_error_nomem(ctx);
      sqlite3_free(zErr);
      sqlite3_free(po.nulls_text);
      return;
    }
  }
  cs_import_result res;
  import_call call = {.db = sqlite3_context_db_handle(ctx), .res = &res};
  if (csx_progress_begin(&call.prog, call.db, "colstore_import", po.progress) != SQLITE_OK) {
    sqlite3_result_error(ctx, "colstore: cannot prepare the interrupt probe", -1);
    csx_progress_end(&call.prog);
    sqlite3_free(po.nulls_text);
    return;
  }
  po.opt.progress = on_progress;
  po.opt.progress_ctx = &call;
  cs_err err;
  cs_rc rc = cs_import(zPath, zSource, &po.opt, &res, &err);
  double ms = csx_progress_ms(&call.prog);
  csx_progress_end(&call.prog);
  sqlite3_free(po.nulls_text);
  if (rc != CS_OK && call.nomem) {
    sqlite3_result_error_nomem(ctx);
  } else if (rc != CS_OK && call.prog.stopped) {
    csx_progress_result(&call.prog, ctx, err.msg);
  } else if (rc != CS_OK) {
    sqlite3_result_error(ctx, err.msg, -1);
    sqlite3_result_error_code(ctx, csx_rc_to_sqlite(rc));
  } else {
    char *z = result_json(call.db, &res, ms);
    if (!z) z = call.ready_json, call.ready_json = NULL;
    sqlite3_result_text(ctx, z, -1, sqlite3_free);
  }
  sqlite3_free(call.ready_json);
  cs_import_result_free(&res);
}

int csx_register_import(sqlite3 *db) {
  return sqlite3_create_function_v2(db, "colstore_import", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                    fn_import, NULL, NULL, NULL);
}
