/*
** colstore_write.c - INSERT, DELETE and the transaction hooks.
**
** Rows are buffered per transaction in a cs_batch (column form, already in
** storage types) and reach the file only at commit, in SQLite's two phases:
** xSync writes the records and the new footer and fsyncs (nothing visible
** yet), xCommit writes the commit slot.  A rollback after xSync aborts the
** writer, which restores the file byte for byte.  Savepoints are marks in
** the batch's row count: a failed statement inside a transaction rolls back
** to its statement savepoint, so none of its rows survive.
**
** Why buffer instead of writing records as rows arrive: a savepoint
** rollback must be able to drop any suffix of the transaction's rows, and
** the store's records are immutable once written.  The cost is memory equal
** to the transaction's raw column bytes (docs/sql.md says so);
** colstore_create() streams instead, because it has no savepoints.
**
** DELETE is a list of positions, for the same reason: a savepoint rollback
** truncates it, and xSync hands it whole to cs_writer_delete, which writes
** one deletion vector per touched record (docs/format.md 14).  SQLite finds
** the rows with our own scan and calls xUpdate once per rowid, so a delete
** costs the scan plus 8 bytes per row until COMMIT.  The contract wants a
** connection to read its own deletions from its next statement on: its
** readers get a view of the snapshot with the pending positions deleted as
** well (cs_store_with_deletions), made once per change of the list, so the
** kernels drop them exactly as they drop committed ones.  Rows inserted by
** the transaction still show only at COMMIT (docs/sql.md), so a DELETE
** never sees them.
*/
#include <string.h>

#include "colstore_ext.h"

#define CSX_LOCK_TIMEOUT_MS 5000

/* The readers' view of the pending deletions, dropped when the list
** shrinks (a rollback): its count alone would no longer say what it shows. */
static void view_drop(csx_table *pTab) {
  csx_snapshot_release(pTab->view);
  csx_snapshot_release(pTab->view_of);
  pTab->view = pTab->view_of = NULL;
}

void csx_table_write_free(csx_table *pTab) {
  if (pTab->writer) cs_writer_abort(pTab->writer);
  pTab->writer = NULL;
  cs_batch_free(pTab->pending);
  pTab->pending = NULL;
  sqlite3_free(pTab->dels);
  pTab->dels = NULL;
  pTab->n_dels = pTab->dels_cap = 0;
  sqlite3_free(pTab->marks);
  pTab->marks = NULL;
  pTab->n_marks = 0;
  view_drop(pTab);
}

/* The transaction is over: nothing pending, no marks. */
static void transaction_clear(csx_table *pTab) {
  if (pTab->pending) cs_batch_clear(pTab->pending);
  pTab->n_dels = 0;
  pTab->n_marks = 0;
  view_drop(pTab);
}

static int dataset_read_only(csx_table *pTab, const char *what) {
  return csx_vtab_error(&pTab->base, SQLITE_READONLY,
                        "colstore: table %s is a dataset of %u files and datasets are read-only; %s one of its files as "
                        "its own table",
                        pTab->zName, cs_store_files(pTab->snap->store), what);
}

/* DELETE of one row: its position joins the transaction's list. */
static int delete_row(csx_table *pTab, sqlite3_value *vRowid) {
  if (cs_store_is_dataset(pTab->snap->store)) return dataset_read_only(pTab, "DELETE from");
  sqlite3_int64 r = sqlite3_value_int64(vRowid);
  /* SQLite passes rowids our scan produced: of the snapshot read, which is
  ** pTab->snap or older (a refresh only adds rows). */
  if (r < 0 || (uint64_t)r >= cs_store_rows(pTab->snap->store))
    return csx_vtab_error(&pTab->base, SQLITE_ERROR, "colstore: table %s has no row %lld to delete", pTab->zName, (long long)r);
  if (pTab->n_dels == pTab->dels_cap) {
    uint64_t cap = pTab->dels_cap ? 2 * pTab->dels_cap : 1024;
    uint64_t *d = sqlite3_realloc64(pTab->dels, cap * sizeof *d);
    if (!d) return SQLITE_NOMEM;
    pTab->dels = d, pTab->dels_cap = cap;
  }
  pTab->dels[pTab->n_dels++] = (uint64_t)r;
  return SQLITE_OK;
}

int csx_update(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv, sqlite_int64 *pRowid) {
  csx_table *pTab = (csx_table *)pVtab;
  if (argc == 1) return delete_row(pTab, argv[0]);
  if (sqlite3_value_type(argv[0]) != SQLITE_NULL)
    return csx_vtab_error(pVtab, SQLITE_ERROR,
                          "colstore: UPDATE of table %s is not supported yet; DELETE the rows and INSERT them again (they get "
                          "new rowids), or write a new store with colstore_create(path, 'SELECT ...')",
                          pTab->zName);
  if (sqlite3_value_type(argv[1]) != SQLITE_NULL)
    return csx_vtab_error(pVtab, SQLITE_ERROR,
                          "colstore: the rowid of table %s is the row position, given at INSERT; omit the rowid in INSERT", pTab->zName);
  if (cs_store_is_dataset(pTab->snap->store)) return dataset_read_only(pTab, "INSERT into");
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  if ((uint32_t)argc != 2 + schema->n_cols + CSX_N_HIDDEN) return SQLITE_ERROR;
  for (int h = 0; h < CSX_N_HIDDEN; h++)
    if (sqlite3_value_type(argv[2 + schema->n_cols + h]) != SQLITE_NULL)
      return csx_vtab_error(pVtab, SQLITE_ERROR, "colstore: %s is a selection column of table %s; it cannot be inserted",
                            h == CSX_HIDDEN_ROWS ? "_rows" : "_mask", pTab->zName);
  if (!pTab->pending) {
    cs_err err;
    if (cs_batch_new(schema, &pTab->pending, &err) != CS_OK) return SQLITE_NOMEM;
  }
  for (uint32_t c = 0; c < schema->n_cols; c++) {
    char *zErr = NULL;
    int rc = csx_value_put(pTab->pending, c, &schema->cols[c], pTab->zName, argv[2 + c], &zErr);
    if (rc != SQLITE_OK) {
      cs_batch_cancel_row(pTab->pending);
      sqlite3_free(pVtab->zErrMsg);
      pVtab->zErrMsg = zErr;
      return zErr ? rc : SQLITE_NOMEM; /* the message itself found no memory */
    }
  }
  cs_batch_end_row(pTab->pending);
  *pRowid = (sqlite_int64)(cs_store_rows(pTab->snap->store) + cs_batch_rows(pTab->pending) - 1);
  return SQLITE_OK;
}

int csx_begin(sqlite3_vtab *pVtab) {
  transaction_clear((csx_table *)pVtab);
  return SQLITE_OK;
}

int csx_sync(sqlite3_vtab *pVtab) {
  csx_table *pTab = (csx_table *)pVtab;
  uint64_t rows = pTab->pending ? cs_batch_rows(pTab->pending) : 0;
  if (rows == 0 && pTab->n_dels == 0) return SQLITE_OK;
  cs_err err = {0};
  cs_writer_options opt = {.lock_timeout_ms = CSX_LOCK_TIMEOUT_MS};
  cs_writer *w = NULL;
  cs_rc rc = cs_writer_append(pTab->zPath, &opt, &w, &err);
  if (rc == CS_OK) {
    /* The file might have been replaced by a different store meanwhile. */
    if (!csx_schema_equal(cs_writer_schema(w), cs_store_schema(pTab->snap->store))) rc = cs_err_set(&err, CS_ESCHEMA, "colstore: %s was replaced by a store with another schema; reconnect the table", pTab->zPath);
  }
  if (rc == CS_OK && pTab->n_dels) rc = cs_writer_delete(w, pTab->dels, pTab->n_dels, NULL, &err);
  if (rc == CS_OK && rows) rc = cs_writer_write(w, pTab->pending, &err);
  if (rc == CS_OK) rc = cs_writer_prepare(w, &err);
  if (rc != CS_OK) {
    cs_writer_abort(w);
    return csx_vtab_error(pVtab, csx_rc_to_sqlite(rc), "%s", err.msg);
  }
  pTab->writer = w;
  return SQLITE_OK;
}

int csx_commit(sqlite3_vtab *pVtab) {
  csx_table *pTab = (csx_table *)pVtab;
  int rc = SQLITE_OK;
  if (pTab->writer) {
    cs_err err = {0};
    cs_rc crc = cs_writer_commit(pTab->writer, &err);
    pTab->writer = NULL;
    if (crc != CS_OK) rc = csx_vtab_error(pVtab, csx_rc_to_sqlite(crc), "%s", err.msg);
  }
  transaction_clear(pTab);
  return rc;
}

int csx_rollback(sqlite3_vtab *pVtab) {
  csx_table *pTab = (csx_table *)pVtab;
  if (pTab->writer) cs_writer_abort(pTab->writer);
  pTab->writer = NULL;
  transaction_clear(pTab);
  return SQLITE_OK;
}

int csx_savepoint(sqlite3_vtab *pVtab, int iSavepoint) {
  csx_table *pTab = (csx_table *)pVtab;
  if (iSavepoint < 0) return SQLITE_OK;
  struct csx_mark now = {pTab->pending ? cs_batch_rows(pTab->pending) : 0, pTab->n_dels};
  if (iSavepoint >= pTab->n_marks) {
    struct csx_mark *m = sqlite3_realloc64(pTab->marks, (sqlite3_uint64)(iSavepoint + 1) * sizeof *m);
    if (!m) return SQLITE_NOMEM;
    pTab->marks = m;
    for (int i = pTab->n_marks; i <= iSavepoint; i++) m[i] = now;
  }
  pTab->marks[iSavepoint] = now;
  pTab->n_marks = iSavepoint + 1;
  return SQLITE_OK;
}

int csx_release(sqlite3_vtab *pVtab, int iSavepoint) {
  csx_table *pTab = (csx_table *)pVtab;
  if (iSavepoint < pTab->n_marks) pTab->n_marks = iSavepoint < 0 ? 0 : iSavepoint;
  return SQLITE_OK;
}

int csx_rollback_to(sqlite3_vtab *pVtab, int iSavepoint) {
  csx_table *pTab = (csx_table *)pVtab;
  /* -1 is the SAVEPOINT that opened the transaction (SQLite does not count
  ** it in nSavepoint): ROLLBACK TO it drops every row of the transaction. */
  if (iSavepoint < 0) {
    transaction_clear(pTab);
    return SQLITE_OK;
  }
  if (iSavepoint < pTab->n_marks) {
    if (pTab->pending) cs_batch_truncate(pTab->pending, pTab->marks[iSavepoint].rows);
    if (pTab->n_dels != pTab->marks[iSavepoint].dels) view_drop(pTab);
    pTab->n_dels = pTab->marks[iSavepoint].dels;
    pTab->n_marks = iSavepoint + 1;
  }
  return SQLITE_OK;
}

/* ------------------------------------------------------------- reading */

int csx_table_read_snapshot(csx_table *pTab, csx_snapshot **out) {
  int rc = csx_table_refresh(pTab);
  if (rc != SQLITE_OK) return rc;
  csx_snapshot *snap = pTab->snap;
  if (pTab->n_dels > 0) {
    /* The list grows between views (a rollback that shrinks it drops the
    ** view), so the count and the snapshot say whether the view is current. */
    if (!pTab->view || pTab->view_of != pTab->snap || pTab->view_n_dels != pTab->n_dels) {
      cs_err err = {0};
      cs_store *v = NULL;
      cs_rc crc = cs_store_with_deletions(pTab->snap->store, pTab->dels, pTab->n_dels, &v, &err);
      if (crc != CS_OK) return csx_vtab_error(&pTab->base, csx_rc_to_sqlite(crc), "%s", err.msg);
      csx_snapshot *vs = csx_snapshot_new(v);
      if (!vs) {
        cs_store_close(v);
        return SQLITE_NOMEM;
      }
      view_drop(pTab);
      pTab->view = vs;
      pTab->view_of = pTab->snap;
      pTab->view_of->n_refs++;
      pTab->view_n_dels = pTab->n_dels;
    }
    snap = pTab->view;
  }
  snap->n_refs++;
  *out = snap;
  return SQLITE_OK;
}
