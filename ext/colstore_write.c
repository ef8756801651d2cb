/*
** colstore_write.c - INSERT, DELETE, UPDATE and the transaction hooks.
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
** kernels drop them exactly as they drop committed ones.
**
** Rows the transaction inserted read the same way, from the statement
** after the INSERT: the view lays the pending batch out as records after
** the snapshot's last one (cs_store_with_pending), so they are positions
** snapshot_rows + i, the rowids xUpdate reported.  To keep those numbers,
** the snapshot is held still while inserted rows are pending (refreshed at
** the transaction's first INSERT so that it holds every committed row).
** A DELETE of such a row joins the one list of positions; an UPDATE of one
** goes to segments of its own (`ins`), because cs_writer_update changes
** committed rows only: at xSync they are applied to a copy of the batch
** (cs_batch_with_updates) before it is written, and the positions of the
** deleted ones move by however many rows another process appended
** meanwhile (the rows land at the file's end then).  Savepoints need
** nothing new: every list only grows, and a mark holds every count.
**
** UPDATE is buffered the same way: each changed row's position and its
** new values, converted as INSERT converts them, in segments of statements
** that SET the same columns (the others are marked unchanged by SQLite's
** nochange protocol, so xColumn never reads them and cs_writer_update
** patches only the columns that change).  At xSync cs_writer_update writes
** a patch block per touched record (docs/format.md 14.4).  The connection
** reads its own updates through the same view as its deletions
** (cs_store_with_changes): the records they touch get chunks of their own,
** built as the patch will be, so a second `SET b = b + 1` adds to the
** first.  The view is made when a statement starts reading and the
** pending lists changed since the last one, which is known from their
** counts alone because the lists only grow between two reads; a savepoint
** rollback that shrinks them drops it.
**
** An UPDATE through `_rows` or `_mask` selects with them like a SELECT;
** SQLite then hands xUpdate every column, and a selection column not in
** the SET list comes as nochange (its xColumn gives nothing to an UPDATE,
** though it reads back its BLOB otherwise), so any other value means the
** statement SETs it, which is refused.  A position the BLOB repeats is
** delivered once to an UPDATE (colstore_cursor.c), so it is written and
** counted once, as a DELETE's are (SQLite's RowSet drops repeated rowids).
**
** At xSync the updates go to the writer before the deletions: a row a
** transaction updated and then deleted is a legal sequence (the update
** read it before it was deleted), while the writer refuses to update a row
** already deleted.
*/
#include <string.h>

#include "colstore_ext.h"

/* The readers' view of the pending changes, dropped when a list shrinks
** (a rollback): its counts alone would no longer say what it shows. */
static void view_drop(csx_table *pTab) {
  csx_snapshot_release(pTab->view);
  csx_snapshot_release(pTab->view_of);
  pTab->view = pTab->view_of = NULL;
}

static void updates_free(csx_table *pTab) {
  for (int i = 0; i < pTab->segs_cap; i++) {
    sqlite3_free(pTab->segs[i].cols);
    sqlite3_free(pTab->segs[i].rows);
    cs_batch_free(pTab->segs[i].vals);
  }
  sqlite3_free(pTab->segs);
  pTab->segs = NULL;
  pTab->n_segs = pTab->segs_cap = 0;
}

void csx_table_write_free(csx_table *pTab) {
  if (pTab->writer) cs_writer_abort(pTab->writer);
  pTab->writer = NULL;
  csx_snapshot_release(pTab->wr_from);
  pTab->wr_from = NULL;
  cs_batch_free(pTab->pending);
  pTab->pending = NULL;
  sqlite3_free(pTab->dels);
  pTab->dels = NULL;
  pTab->n_dels = pTab->dels_cap = 0;
  sqlite3_free(pTab->marks);
  pTab->marks = NULL;
  pTab->n_marks = 0;
  updates_free(pTab);
  view_drop(pTab);
}

/* Drops the update segments past k (k == 0: all), keeping their memory
** for the next transaction except the batches' contents. */
static void updates_truncate(csx_table *pTab, int k, uint64_t last_n) {
  for (int i = k; i < pTab->n_segs; i++) {
    pTab->segs[i].n = 0;
    if (pTab->segs[i].vals) cs_batch_clear(pTab->segs[i].vals);
  }
  if (k > pTab->n_segs) k = pTab->n_segs;
  pTab->n_segs = k;
  if (k > 0 && last_n < pTab->segs[k - 1].n) {
    pTab->segs[k - 1].n = last_n;
    cs_batch_truncate(pTab->segs[k - 1].vals, last_n);
  }
}

static uint64_t updates_pending(const csx_table *pTab) {
  uint64_t n = 0;
  for (int i = 0; i < pTab->n_segs; i++) n += pTab->segs[i].n;
  return n;
}

/* Rows this transaction inserted; they read as positions
** cs_store_rows(pTab->snap->store) + i, snap being held still meanwhile
** (csx_table_read_snapshot). */
static uint64_t inserts_pending(const csx_table *pTab) {
  return pTab->pending ? cs_batch_rows(pTab->pending) : 0;
}

/* Positions a DELETE or UPDATE may name: the snapshot's and the inserted rows'. */
static uint64_t positions_now(const csx_table *pTab) {
  return cs_store_rows(pTab->snap->store) + inserts_pending(pTab);
}

bool csx_table_has_pending(const csx_table *pTab) {
  return (pTab->pending && cs_batch_rows(pTab->pending)) || pTab->n_dels || updates_pending(pTab);
}

/* Positions are being taken from pTab->snap: the first time in a
** transaction, its file is pinned for xSync to compare. */
static void positions_pin(csx_table *pTab) {
  if (pTab->wr_from) return;
  pTab->wr_from = pTab->snap;
  pTab->wr_from->n_refs++;
}

/* The transaction is over: nothing pending, no marks. */
static void transaction_clear(csx_table *pTab) {
  csx_snapshot_release(pTab->wr_from);
  pTab->wr_from = NULL;
  if (pTab->pending) cs_batch_clear(pTab->pending);
  pTab->n_dels = 0;
  updates_truncate(pTab, 0, 0);
  pTab->n_marks = 0;
  pTab->in_write = false;
  view_drop(pTab);
}

static int dataset_read_only(csx_table *pTab, const char *what) {
  return csx_vtab_error(
      &pTab->base, SQLITE_READONLY,
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
  if (r < 0 || (uint64_t)r >= positions_now(pTab))
    return csx_vtab_error(&pTab->base, SQLITE_ERROR, "colstore: table %s has no row %lld to delete",
                          pTab->zName, (long long)r);
  if (pTab->n_dels == pTab->dels_cap &&
      csx_grow((void **)&pTab->dels, &pTab->dels_cap, pTab->dels_cap ? 2 * pTab->dels_cap : 1024,
               sizeof *pTab->dels))
    return SQLITE_NOMEM;
  pTab->dels[pTab->n_dels++] = (uint64_t)r;
  positions_pin(pTab);
  return SQLITE_OK;
}

/* A value for a column the statement does not SET: never written (the
** segment's column set leaves it out), but the batch wants one per column. */
static cs_rc put_placeholder(cs_batch *b, uint32_t c, cs_type t, cs_err *err) {
  if (t == CS_TYPE_TEXT || t == CS_TYPE_BLOB) return cs_batch_put_bytes(b, c, "", 0, err);
  if (cs_type_is_float(t)) return cs_batch_put_f64(b, c, 0.0, err);
  return cs_batch_put_i64(b, c, 0, err);
}

/* The segment an UPDATE row with column set `set` goes to: the last one if
** it has the same set and kind (ins: a row this transaction inserted),
** else a new one. */
static struct csx_update_seg *update_segment(csx_table *pTab, const cs_schema *schema, const uint8_t *set,
                                             bool ins) {
  uint32_t nc = schema->n_cols;
  if (pTab->n_segs > 0 && pTab->segs[pTab->n_segs - 1].ins == ins &&
      memcmp(pTab->segs[pTab->n_segs - 1].cols, set, nc) == 0)
    return &pTab->segs[pTab->n_segs - 1];
  if (pTab->n_segs == pTab->segs_cap) {
    int cap = pTab->segs_cap ? 2 * pTab->segs_cap : 4;
    struct csx_update_seg *s = sqlite3_realloc64(pTab->segs, (sqlite3_uint64)cap * sizeof *s);
    if (!s) return NULL;
    memset(s + pTab->segs_cap, 0, (size_t)(cap - pTab->segs_cap) * sizeof *s);
    pTab->segs = s, pTab->segs_cap = cap;
  }
  struct csx_update_seg *g = &pTab->segs[pTab->n_segs];
  cs_err err;
  if (!g->cols && !(g->cols = sqlite3_malloc64(nc ? nc : 1))) return NULL;
  if (!g->vals && cs_batch_new(schema, &g->vals, &err) != CS_OK) return NULL;
  memcpy(g->cols, set, nc);
  g->n = 0;
  g->ins = ins;
  pTab->n_segs++;
  return g;
}

/* UPDATE of one row: argv[0] its rowid, argv[1] the rowid it is given,
** argv[2 + c] column c's new value, or nochange. */
static int update_row(csx_table *pTab, int argc, sqlite3_value **argv) {
  sqlite3_vtab *pVtab = &pTab->base;
  if (cs_store_is_dataset(pTab->snap->store)) return dataset_read_only(pTab, "UPDATE");
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  if ((uint32_t)argc != 2 + schema->n_cols + CSX_N_HIDDEN) return SQLITE_ERROR;
  sqlite3_int64 r = sqlite3_value_int64(argv[0]);
  if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER || sqlite3_value_int64(argv[1]) != r)
    return csx_vtab_error(
        pVtab, SQLITE_ERROR,
        "colstore: the rowid of table %s is the row's position and cannot be SET; DELETE the row and INSERT "
        "it again to give it a new one",
        pTab->zName);
  if (r < 0 || (uint64_t)r >= positions_now(pTab))
    return csx_vtab_error(pVtab, SQLITE_ERROR, "colstore: table %s has no row %lld to update", pTab->zName,
                          (long long)r);
  bool ins = (uint64_t)r >= cs_store_rows(pTab->snap->store);
  /* A selection column the statement does not SET comes as nochange: its
  ** xColumn answers nothing to an UPDATE (colstore_cursor.c), whatever the
  ** cursor was filtered by.  Anything else, NULL and the very BLOB the rows
  ** were selected by included, was written in the SET list. */
  for (int h = 0; h < CSX_N_HIDDEN; h++)
    if (!sqlite3_value_nochange(argv[2 + schema->n_cols + h]))
      return csx_vtab_error(
          pVtab, SQLITE_ERROR,
          "colstore: %s is a selection column of table %s and cannot be SET; use it in the WHERE clause "
          "(WHERE %s = ?) to choose the rows to update, and SET only the table's own columns",
          h == CSX_HIDDEN_ROWS ? "_rows" : "_mask", pTab->zName, h == CSX_HIDDEN_ROWS ? "_rows" : "_mask");
  uint8_t set[256], *setp = schema->n_cols <= sizeof set ? set : sqlite3_malloc64(schema->n_cols);
  if (!setp) return SQLITE_NOMEM;
  bool any = false;
  for (uint32_t c = 0; c < schema->n_cols; c++) any |= (setp[c] = !sqlite3_value_nochange(argv[2 + c])) != 0;
  int rc = SQLITE_OK;
  struct csx_update_seg *g = any ? update_segment(pTab, schema, setp, ins) : NULL;
  if (any && !g) rc = SQLITE_NOMEM;
  if (g && g->n == g->cap && csx_grow((void **)&g->rows, &g->cap, g->cap ? 2 * g->cap : 256, sizeof *g->rows))
    rc = SQLITE_NOMEM;
  for (uint32_t c = 0; g && rc == SQLITE_OK && c < schema->n_cols; c++) {
    if (!setp[c]) {
      cs_err err;
      if (put_placeholder(g->vals, c, schema->cols[c].type, &err) != CS_OK) rc = SQLITE_NOMEM;
      continue;
    }
    char *zErr = NULL;
    rc = csx_value_put(g->vals, c, &schema->cols[c], pTab->zName, argv[2 + c], &zErr);
    if (rc != SQLITE_OK) {
      sqlite3_free(pVtab->zErrMsg);
      pVtab->zErrMsg = zErr;
      if (!zErr) rc = SQLITE_NOMEM; /* the message itself found no memory */
    }
  }
  if (g && rc != SQLITE_OK) cs_batch_cancel_row(g->vals);
  if (g && rc == SQLITE_OK) {
    cs_batch_end_row(g->vals);
    g->rows[g->n++] = (uint64_t)r;
    positions_pin(pTab);
  }
  if (setp != set) sqlite3_free(setp);
  return rc;
}

/* The pending batch, made on the transaction's first inserted row, when
** the snapshot is refreshed: its rows are numbered from the snapshot's
** end, so it must hold every committed row, this connection's last COMMIT
** included (a snapshot is otherwise refreshed only when a statement starts
** reading).  Cursors read their own. */
static int pending_ready(csx_table *pTab) {
  if (!pTab->pending) {
    cs_err err;
    if (cs_batch_new(cs_store_schema(pTab->snap->store), &pTab->pending, &err) != CS_OK) return SQLITE_NOMEM;
  }
  if (cs_batch_rows(pTab->pending) == 0)
    return csx_snapshot_refresh(&pTab->snap, &pTab->base, pTab->zPath, pTab->zName);
  return SQLITE_OK;
}

/* colstore_append's rows (csx_append, colstore_array.c): checked and
** copied into the pending batch by the core in one call, all or none. */
static int append_arrays(csx_table *pTab, const csx_append *a, sqlite_int64 *pRowid) {
  if (a->table != pTab)
    return csx_vtab_error(&pTab->base, SQLITE_ERROR,
                          "colstore: colstore_append's arrays were matched to another table than %s; call "
                          "it with the table's name",
                          pTab->zName);
  int rc = pending_ready(pTab);
  if (rc != SQLITE_OK) return rc;
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  if (schema->n_cols != a->n_cols)
    return csx_vtab_error(&pTab->base, SQLITE_ERROR,
                          "colstore: %s was replaced by a store with another schema; reconnect the table",
                          pTab->zPath);
  cs_err err = {0};
  cs_rc crc = cs_batch_append_arrays(pTab->pending, schema, a->cols, a->n, &err);
  if (crc != CS_OK)
    return csx_vtab_error(&pTab->base, crc == CS_EINVAL ? SQLITE_MISMATCH : csx_rc_to_sqlite(crc), "%s",
                          err.msg);
  *pRowid = (sqlite_int64)(cs_store_rows(pTab->snap->store) + cs_batch_rows(pTab->pending) - 1);
  return SQLITE_OK;
}

int csx_update(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv, sqlite_int64 *pRowid) {
  csx_table *pTab = (csx_table *)pVtab;
  if (argc == 1) return delete_row(pTab, argv[0]);
  if (sqlite3_value_type(argv[0]) != SQLITE_NULL) return update_row(pTab, argc, argv);
  if (sqlite3_value_type(argv[1]) != SQLITE_NULL)
    return csx_vtab_error(
        pVtab, SQLITE_ERROR,
        "colstore: the rowid of table %s is the row position, given at INSERT; omit the rowid in INSERT",
        pTab->zName);
  if (cs_store_is_dataset(pTab->snap->store)) return dataset_read_only(pTab, "INSERT into");
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  if ((uint32_t)argc != 2 + schema->n_cols + CSX_N_HIDDEN) return SQLITE_ERROR;
  const csx_append *arrays =
      sqlite3_value_pointer(argv[2 + schema->n_cols + CSX_HIDDEN_ROWS], CSX_APPEND_POINTER);
  if (arrays) return append_arrays(pTab, arrays, pRowid);
  for (int h = 0; h < CSX_N_HIDDEN; h++)
    if (sqlite3_value_type(argv[2 + schema->n_cols + h]) != SQLITE_NULL)
      return csx_vtab_error(pVtab, SQLITE_ERROR,
                            "colstore: %s is a selection column of table %s; it cannot be inserted",
                            h == CSX_HIDDEN_ROWS ? "_rows" : "_mask", pTab->zName);
  int prc = pending_ready(pTab);
  if (prc != SQLITE_OK) return prc;
  schema = cs_store_schema(pTab->snap->store);
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
  ((csx_table *)pVtab)->in_write = true;
  return SQLITE_OK;
}

/* The UPDATE segments of one kind (ins: of rows this transaction
** inserted) as cs_update calls, in order, into upd; returns how many. */
static int updates_list(const csx_table *pTab, int kind, cs_update *upd) {
  int n = 0;
  for (int i = 0; i < pTab->n_segs; i++)
    if (pTab->segs[i].n && (kind < 0 || pTab->segs[i].ins == (kind == 1)))
      upd[n++] = (cs_update){pTab->segs[i].rows, pTab->segs[i].n, pTab->segs[i].vals, pTab->segs[i].cols};
  return n;
}

int csx_sync(sqlite3_vtab *pVtab) {
  csx_table *pTab = (csx_table *)pVtab;
  uint64_t rows = inserts_pending(pTab);
  if (rows == 0 && pTab->n_dels == 0 && updates_pending(pTab) == 0) return SQLITE_OK;
  cs_err err = {0};
  cs_writer_options opt = {.lock_timeout_ms = CSX_LOCK_TIMEOUT_MS, .auto_compact = csx_config_auto_compact()};
  cs_writer *w = NULL;
  cs_batch *updated = NULL;
  cs_update *upd = NULL;
  uint64_t *dels = pTab->dels;
  cs_rc rc = CS_OK;
  if (pTab->n_segs && !(upd = sqlite3_malloc64((sqlite3_uint64)pTab->n_segs * sizeof *upd)))
    rc = cs_err_set(&err, CS_ENOMEM, "colstore: out of memory committing to %s", pTab->zPath);
  if (rc == CS_OK) rc = cs_writer_append(pTab->zPath, &opt, &w, &err);
  if (rc == CS_OK) {
    /* The file might have been replaced by a different store meanwhile. */
    if (!csx_schema_equal(cs_writer_schema(w), cs_store_schema(pTab->snap->store)))
      rc = cs_err_set(&err, CS_ESCHEMA,
                      "colstore: %s was replaced by a store with another schema; reconnect the table",
                      pTab->zPath);
    /* Positions of rows to delete or update name rows of the file they were
    ** read from: a file renamed over the path since may number them otherwise. */
    else if (pTab->wr_from && (pTab->n_dels || updates_pending(pTab)) &&
             !cs_writer_same_file(w, pTab->wr_from->store))
      rc = cs_err_set(
          &err, CS_EBUSY,
          "colstore: %s was replaced by another file after this transaction's DELETE or UPDATE read "
          "its rows, whose positions may name other rows there; ROLLBACK and run the statements again",
          pTab->zPath);
  }
  /* The rows this transaction inserted read as positions from origin (the
  ** snapshot held still while they are pending); they land at the file's
  ** end, start, which is further on if another connection appended
  ** meanwhile.  Their updates change the batch (the writer updates only
  ** committed rows); their deletions move with them. */
  uint64_t origin = cs_store_rows(pTab->snap->store), start = w ? cs_writer_rows(w) : 0;
  int n = 0;
  if (rc == CS_OK && (n = updates_list(pTab, 0, upd)) > 0)
    for (int i = 0; rc == CS_OK && i < n; i++)
      rc = cs_writer_update(w, upd[i].rows, upd[i].n, upd[i].values, upd[i].cols, &err);
  if (rc == CS_OK && rows && (n = updates_list(pTab, 1, upd)) > 0)
    rc = cs_batch_with_updates(pTab->pending, cs_store_schema(pTab->snap->store), origin, upd, (uint64_t)n,
                               &updated, &err);
  if (rc == CS_OK && rows) rc = cs_writer_write(w, updated ? updated : pTab->pending, &err);
  if (rc == CS_OK && pTab->n_dels && rows && start != origin) {
    if (!(dels = sqlite3_malloc64(pTab->n_dels * sizeof *dels)))
      rc = cs_err_set(&err, CS_ENOMEM, "colstore: out of memory committing to %s", pTab->zPath);
    for (uint64_t i = 0; rc == CS_OK && i < pTab->n_dels; i++)
      dels[i] = pTab->dels[i] >= origin ? pTab->dels[i] - origin + start : pTab->dels[i];
  }
  if (rc == CS_OK && pTab->n_dels) rc = cs_writer_delete(w, dels, pTab->n_dels, NULL, &err);
  if (rc == CS_OK) rc = cs_writer_prepare(w, &err);
  if (dels != pTab->dels) sqlite3_free(dels);
  cs_batch_free(updated);
  sqlite3_free(upd);
  if (rc != CS_OK) {
    if (w) cs_writer_abort(w);
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
  struct csx_mark now = {pTab->pending ? cs_batch_rows(pTab->pending) : 0, pTab->n_dels, pTab->n_segs,
                         pTab->n_segs ? pTab->segs[pTab->n_segs - 1].n : 0};
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
    uint64_t n_ins = inserts_pending(pTab), n_upd = updates_pending(pTab);
    if (pTab->pending) cs_batch_truncate(pTab->pending, pTab->marks[iSavepoint].rows);
    pTab->n_dels = pTab->marks[iSavepoint].dels;
    updates_truncate(pTab, pTab->marks[iSavepoint].segs, pTab->marks[iSavepoint].seg_n);
    if (pTab->n_dels != pTab->view_n_dels || updates_pending(pTab) != n_upd || inserts_pending(pTab) != n_ins)
      view_drop(pTab);
    pTab->n_marks = iSavepoint + 1;
  }
  return SQLITE_OK;
}

/* ------------------------------------------------------------- reading */

/* A view of pTab->snap with the pending insertions, deletions and updates
** (n_upd rows), made afresh; errors go to pTab. */
static int view_make(csx_table *pTab, uint64_t n_upd) {
  cs_update *upd = NULL;
  if (pTab->n_segs > 0 && !(upd = sqlite3_malloc64((sqlite3_uint64)pTab->n_segs * sizeof *upd)))
    return SQLITE_NOMEM;
  int n = updates_list(pTab, -1, upd);
  cs_err err = {0};
  cs_store *v = NULL;
  uint64_t n_ins = inserts_pending(pTab);
  cs_rc crc = cs_store_with_pending(pTab->snap->store, n_ins ? pTab->pending : NULL, pTab->dels, pTab->n_dels,
                                    upd, (uint64_t)n, &v, &err);
  sqlite3_free(upd);
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
  pTab->view_n_upd = n_upd;
  pTab->view_n_ins = n_ins;
  return SQLITE_OK;
}

int csx_table_read_snapshot(csx_table *pTab, csx_snapshot **out) {
  uint64_t n_ins = inserts_pending(pTab);
  /* While rows inserted by this transaction are pending, the snapshot is
  ** held still: they read as the positions after its last row, and the
  ** rowids SQLite was given for them (last_insert_rowid) and the positions
  ** a DELETE or UPDATE of them takes must keep naming the same rows.  Rows
  ** other connections append meanwhile show after COMMIT. */
  int rc = n_ins ? SQLITE_OK : csx_table_refresh(pTab);
  if (rc != SQLITE_OK) return rc;
  uint64_t n_upd = updates_pending(pTab);
  csx_table_auto_cache(pTab, n_ins > 0 || pTab->n_dels > 0 || n_upd > 0);
  csx_snapshot *snap = pTab->snap;
  if (n_ins > 0 || pTab->n_dels > 0 || n_upd > 0) {
    /* The lists grow between views (a rollback that shrinks one drops the
    ** view), so the counts and the snapshot say whether the view is current. */
    if (!pTab->view || pTab->view_of != pTab->snap || pTab->view_n_dels != pTab->n_dels ||
        pTab->view_n_upd != n_upd || pTab->view_n_ins != n_ins) {
      if ((rc = view_make(pTab, n_upd)) != SQLITE_OK) return rc;
    }
    snap = pTab->view;
  }
  snap->n_refs++;
  *out = snap;
  return SQLITE_OK;
}
