/*
** colstore_probe.c - what the running SQLite does, asked of SQLite itself
** where its version number cannot tell.
**
** DISTINCT AND THE ROWID.  sqlite3_vtab_distinct() returning 2 or 3 lets a
** virtual table drop rows that repeat the DISTINCT columns.  That is only
** right when nothing else SQLite reads from the row can reject the one row
** kept of a group.  colUsed shows every column SQLite reads (so the planner
** drops rows only when colUsed holds the DISTINCT columns alone), except
** the rowid: `SELECT DISTINCT b FROM t WHERE rowid % 2 = 0` reads the rowid
** for a condition SQLite cannot hand over.  Newer SQLite stops asking for
** DISTINCT when the rowid is used; older releases (3.40, which Debian 12
** ships, among them) ask anyway, and which release changed it is not in
** the documentation.  So the first plan that could drop rows asks the
** running library: a one-column eponymous probe table in a private
** in-memory connection, the rowid query prepared (never run), and what its
** xBestIndex was told recorded.  The answer is kept for the process.
*/
#include <stdatomic.h>
#include <string.h>

#include "colstore_ext.h"

static _Atomic int probe_distinct_seen = -1; /* what xBestIndex was told, for the query prepared */

static int probe_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                         char **err) {
  (void)aux, (void)argc, (void)argv, (void)err;
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(v)");
  if (rc != SQLITE_OK) return rc;
  sqlite3_vtab *t = sqlite3_malloc(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  *out = t;
  return SQLITE_OK;
}

static int probe_disconnect(sqlite3_vtab *t) {
  sqlite3_free(t);
  return SQLITE_OK;
}

static int probe_best_index(sqlite3_vtab *t, sqlite3_index_info *info) {
  (void)t;
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == 0)
    atomic_store(&probe_distinct_seen, sqlite3_vtab_distinct(info));
  info->estimatedCost = 1e6;
  return SQLITE_OK;
}

/* The probe is prepared, never stepped: a cursor is never opened. */
static int probe_open(sqlite3_vtab *t, sqlite3_vtab_cursor **out) {
  (void)t, (void)out;
  return SQLITE_MISUSE;
}

static const sqlite3_module probe_module = {
    .iVersion = 0,
    .xConnect = probe_connect,
    .xBestIndex = probe_best_index,
    .xDisconnect = probe_disconnect,
    .xOpen = probe_open,
};

/* What xBestIndex is told for sql (-1: the probe could not run). */
static int distinct_told(sqlite3 *db, const char *sql) {
  atomic_store(&probe_distinct_seen, -1);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
  sqlite3_finalize(st);
  return atomic_load(&probe_distinct_seen);
}

bool csx_distinct_excludes_rowid_use(void) {
  static _Atomic int answer = -1;
  int a = atomic_load(&answer);
  if (a >= 0) return a;
  a = 0;
  sqlite3 *db = NULL;
  if (sqlite3_libversion_number() >= 3038000 &&
      sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY,
                      NULL) == SQLITE_OK &&
      sqlite3_create_module(db, "colstore_probe", &probe_module, NULL) == SQLITE_OK) {
    /* The control must see DISTINCT, the rowid query must not. */
    int control = distinct_told(db, "SELECT DISTINCT v FROM colstore_probe");
    int with_rowid = distinct_told(db, "SELECT DISTINCT v FROM colstore_probe WHERE rowid % 2 = 0");
    a = control >= 2 && with_rowid >= 0 && with_rowid < 2;
  }
  sqlite3_close(db);
  atomic_store(&answer, a);
  return a;
}
