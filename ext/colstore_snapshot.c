/*
** colstore_snapshot.c - snapshots: a store's committed state, shared by a
** table, its cursors and the aggregate tables that read it.
**
** A snapshot is a store plus a reference count: a table holds one, each
** cursor holds the one it started with, so the values a cursor hands to
** SQLite as SQLITE_STATIC stay valid while anyone may still read them.
** Refreshing replaces the table's snapshot with the store's newest
** committed state (cs_store_reopen), and only when no cursor is open.
** This file sits below the table, the cursors, writing and colstore_agg,
** which all take snapshots from it; it calls none of them.
*/
#include <string.h>

#include "colstore_ext.h"

csx_snapshot *csx_snapshot_new(cs_store *store) {
  csx_snapshot *s = sqlite3_malloc(sizeof *s);
  uint32_t n = cs_store_schema(store)->n_cols;
  signed char *sorted = sqlite3_malloc((int)n);
  if (!s || !sorted) {
    sqlite3_free(s);
    sqlite3_free(sorted);
    return NULL;
  }
  memset(sorted, -1, n);
  s->store = store;
  s->n_refs = 1;
  s->sorted = sorted;
  return s;
}

void csx_snapshot_release(csx_snapshot *s) {
  if (s && --s->n_refs == 0) {
    cs_store_close(s->store);
    sqlite3_free(s->sorted);
    sqlite3_free(s);
  }
}

bool csx_snapshot_sorted(csx_snapshot *snap, uint32_t col) {
  if (snap->sorted[col] < 0) {
    cs_column_stats st;
    cs_store_column_stats(snap->store, col, &st);
    snap->sorted[col] = st.sorted ? 1 : 0;
  }
  return snap->sorted[col] == 1;
}

bool csx_schema_equal(const cs_schema *a, const cs_schema *b) {
  if (a->n_cols != b->n_cols) return false;
  for (uint32_t i = 0; i < a->n_cols; i++)
    if (a->cols[i].type != b->cols[i].type || a->cols[i].nullable != b->cols[i].nullable ||
        strcmp(a->cols[i].name, b->cols[i].name) != 0)
      return false;
  return true;
}

int csx_table_refresh(csx_table *pTab) {
  if (pTab->n_open_cursors > 0) return SQLITE_OK;
  return csx_snapshot_refresh(&pTab->snap, &pTab->base, pTab->zPath, pTab->zName);
}

int csx_snapshot_refresh(csx_snapshot **pSnap, sqlite3_vtab *tab, const char *zPath, const char *zName) {
  csx_snapshot *snap = *pSnap;
  cs_err err = {0};
  cs_store *store = NULL;
  /* One pass: the same store back when nothing changed; else a new one.  A
  ** dataset's reopen re-expands its SOURCE (added or removed files) and
  ** opens only the files that are new or changed, sharing the others with
  ** the snapshot it replaces (which a cursor may still hold). */
  cs_rc rc = cs_store_reopen(snap->store, CS_VERIFY_HEADER, &store, &err);
  if (rc != CS_OK) return csx_vtab_error(tab, csx_rc_to_sqlite(rc), "%s", err.msg);
  if (store == snap->store) {
    cs_store_close(store);
    return SQLITE_OK;
  }
  if (!csx_schema_equal(cs_store_schema(store), cs_store_schema(snap->store))) {
    cs_store_close(store);
    return csx_vtab_error(
        tab, SQLITE_SCHEMA,
        "colstore: %s was replaced by a store with another schema; DROP TABLE %s and create it again", zPath,
        zName);
  }
  csx_snapshot *s = csx_snapshot_new(store);
  if (!s) {
    cs_store_close(store);
    return SQLITE_NOMEM;
  }
  csx_snapshot_release(snap);
  *pSnap = s;
  return SQLITE_OK;
}
