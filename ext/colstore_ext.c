/*
** colstore_ext.c - the entry point: registers the colstore and
** colstore_agg modules and the SQL functions on one connection.
**
** The entry point is the only exported symbol of build/colstore.so (the
** rest is hidden), so two extensions linking different cores cannot clash.
** Each connection gets its own csx_conn (the module's client data), which
** SQLite frees when the connection closes; the registry in it lets the SQL
** functions accept a table name wherever they accept a path.
**
** This file is the top of ext/: it names every module and every group of
** functions, and nothing calls back up into it.  What all the files share
** (error codes and messages, growing arrays, the clock, the connection's
** registry and last scan) is in colstore_util.c, at the bottom.
*/
#include <string.h>

#include "colstore_ext.h"

static void conn_free(void *p) {
  csx_conn *conn = p;
  sqlite3_free(conn->last);
  sqlite3_free(conn);
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
    int sqlite3_colstore_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  if (sqlite3_libversion_number() < 3032000) {
    *pzErrMsg = sqlite3_mprintf("colstore: needs SQLite 3.32.0 or later, this is %s", sqlite3_libversion());
    return SQLITE_ERROR;
  }
  csx_conn *conn = sqlite3_malloc(sizeof *conn);
  if (!conn) return SQLITE_NOMEM;
  memset(conn, 0, sizeof *conn);
  conn->db = db;
  int rc = sqlite3_create_module_v2(db, "colstore", &csx_module, conn, conn_free);
  if (rc != SQLITE_OK) {
    *pzErrMsg = sqlite3_mprintf("colstore: cannot register the module: %s", sqlite3_errmsg(db));
    return rc;
  }
  rc = sqlite3_create_module_v2(db, "colstore_agg", &csx_agg_module, conn, NULL);
  if (rc != SQLITE_OK) {
    *pzErrMsg = sqlite3_mprintf("colstore: cannot register the module colstore_agg: %s", sqlite3_errmsg(db));
    return rc;
  }
  rc = csx_register_functions(db, conn);
  if (rc == SQLITE_OK) rc = csx_register_config(db);
  if (rc == SQLITE_OK) rc = csx_register_calibrate(db);
  if (rc != SQLITE_OK)
    *pzErrMsg = sqlite3_mprintf("colstore: cannot register functions: %s", sqlite3_errmsg(db));
  return rc;
}
