/*
** colstore_util.c - what every file of ext/ shares: core results as SQLite
** codes, the one place a table's error message is set, growing an array,
** the clock colstore_last_plan reports in, and the connection's registry
** of tables and its record of the last scan.
**
** It sits at the bottom of ext/: every other file may call it, and it
** calls none of them (only SQLite and core/colstore.h), so the entry point
** above and the tables, cursors and functions between form no circle.  It
** also holds the SQLite API pointer a loadable extension reaches SQLite
** through (SQLITE_EXTENSION_INIT1); the entry point fills it in.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "colstore_ext.h"

SQLITE_EXTENSION_INIT1

int csx_rc_to_sqlite(cs_rc rc) {
  switch (rc) {
    case CS_OK: return SQLITE_OK;
    case CS_ENOMEM: return SQLITE_NOMEM;
    case CS_ENOTSTORE:
    case CS_EVERSION: return SQLITE_NOTADB;
    case CS_ECORRUPT: return SQLITE_CORRUPT;
    case CS_EIO: return SQLITE_IOERR;
    case CS_EBUSY: return SQLITE_BUSY;
    case CS_ENOENT: return SQLITE_CANTOPEN;
    case CS_ERANGE: return SQLITE_MISMATCH;
    default: return SQLITE_ERROR;
  }
}

int csx_vtab_error(sqlite3_vtab *pVtab, int rc, const char *zFmt, ...) {
  va_list ap;
  va_start(ap, zFmt);
  sqlite3_free(pVtab->zErrMsg);
  pVtab->zErrMsg = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  /* No room for the message: say out of memory, not SQLite's text for rc. */
  return pVtab->zErrMsg || rc == SQLITE_OK ? rc : SQLITE_NOMEM;
}

int csx_grow(void **p, uint64_t *cap, uint64_t n, size_t size) {
  if (n <= *cap) return SQLITE_OK;
  void *q = sqlite3_realloc64(*p, n * size);
  if (!q) return SQLITE_NOMEM;
  *p = q;
  *cap = n;
  return SQLITE_OK;
}

uint64_t csx_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

csx_table *csx_conn_find(csx_conn *conn, const char *zName) {
  for (csx_table *p = conn->tables; p; p = p->next)
    if (sqlite3_stricmp(p->zName, zName) == 0) return p;
  return NULL;
}

static void copy_trunc(char *dst, size_t cap, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(dst, src, n);
  dst[n] = 0;
}

void csx_cache_words(const cs_store *store, char *out, size_t cap) {
  if (!store) {
    copy_trunc(out, cap, "map");
    return;
  }
  cs_cache_info ci;
  cs_store_cache_info(store, &ci);
  if (ci.requested == CS_CACHE_MEMORY && ci.effective != CS_CACHE_MEMORY)
    snprintf(out, cap, "map (cache=memory: %s)", ci.why);
  else
    copy_trunc(out, cap, cs_cache_name(ci.effective));
}

void csx_conn_record_scan(csx_conn *conn, const char *zTable, const char *zPath, const cs_store *store,
                          const csx_scan_stats *st) {
  if (!conn->last && !(conn->last = sqlite3_malloc(sizeof *conn->last))) return;
  *conn->last = *st;
  conn->last->idx = NULL; /* points into a statement that may be gone */
  copy_trunc(conn->last_names.table, sizeof conn->last_names.table, zTable);
  copy_trunc(conn->last_names.path, sizeof conn->last_names.path, zPath);
  copy_trunc(conn->last_names.plan, sizeof conn->last_names.plan, st->idx);
  csx_cache_words(store, conn->last_names.cache, sizeof conn->last_names.cache);
  conn->has_last = true;
}
