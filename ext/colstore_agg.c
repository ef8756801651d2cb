/*
** colstore_agg.c - the colstore_agg virtual table: counts, sums, averages,
** minima and maxima of a colstore table, grouped or not, computed by the
** core's aggregation kernels instead of SQLite's row loop.
**
** SQLite never hands an aggregate to a virtual table: `SELECT sum(a) FROM
** t` steps every row through xColumn.  So the aggregates are made the rows
** of a second table (SQL-CONTRACT.md, "Aggregate tables"):
**
**   CREATE VIRTUAL TABLE temp.ev_kind USING colstore_agg(ev, kind);
**   SELECT kind, count, sum_energy FROM ev_kind WHERE energy > 10;
**
** Its columns are the keys, `count`, then count_X, sum_X, avg_X, min_X,
** max_X per source column X; behind them HIDDEN filter columns, one per
** source column that is not a key, plus _rows and _mask.  A WHERE
** condition on a filter column is not a condition on the output rows but
** on the source rows: xBestIndex must take every one of them, through the
** same slots and the same reading of the arguments as the colstore table
** (csx_plan_take_pred, csx_selection_build), so `energy > 10` means here
** exactly what it means there.  The danger is a condition SQLite cannot
** hand over (an OR across columns, a function of the column, a comparison
** of two columns): SQLite would then evaluate it on the output rows, by
** reading the filter column, and silently drop or keep whole groups.  So
** every such shape fails loudly instead:
**
**   - offered but not takeable (an operator the core lacks, a right-hand
**     side SQLite gives its own affinity, a join operand not yet known,
**     more than CSX_AGG_MAX_CONDITIONS): the plan costs 1e18 and names the
**     column (slot X), and xFilter refuses it if SQLite still picks it;
**   - never offered (OR, functions): SQLite reads the column, and xColumn
**     refuses.  One exception is forced by SQLite 3.40, which re-checks
**     `X IS NOT NULL` on every output row even after the table took it
**     with omit set: a filter column whose conditions were taken reads as
**     the integer 1, never as data.
**
** Conditions on a key column select source rows too (a group's key is its
** rows' value); one that cannot be taken is left to SQLite, which then
** filters whole groups by their key: the same answer.  Conditions on the
** outputs (`count > 5`) are ordinary ones on the result rows.
**
** The source is a colstore table of this connection, looked up by name at
** every scan (so its snapshot, verification and refresh are the table's),
** or a SOURCE opened here.  The schema the columns were declared from is
** kept; a source whose schema changed since is an error, never a silent
** shift of the columns.
*/
#include <string.h>

#include "colstore_ext.h"

/* Conditions on the source rows one aggregate table takes at most. */
#define CSX_AGG_MAX_CONDITIONS 16
#define CSX_AGG_MAX_KEYS 16

typedef enum agg_kind {
  AGG_KEY, AGG_COUNT, AGG_COUNT_X, AGG_SUM, AGG_AVG, AGG_MIN, AGG_MAX, /* outputs */
  AGG_FILTER, AGG_ROWS, AGG_MASK                                       /* HIDDEN inputs */
} agg_kind;

typedef struct agg_col {
  agg_kind kind;
  uint32_t src;   /* the source column (KEY, *_X, FILTER) */
  uint32_t key;   /* KEY: its index among the keys */
  char *name;     /* as declared */
} agg_col;

typedef struct csx_agg_table {
  sqlite3_vtab base;   /* must be first */
  csx_conn *conn;
  char *zName;
  char *zSource;       /* the colstore table's name, or NULL for a SOURCE */
  char *zPath;         /* SOURCE, absolute; for a table, a copy of its path */
  csx_snapshot *snap;  /* SOURCE: the snapshot this table keeps; else NULL */
  bool broken;         /* the source could not be found at connect */
  cs_column *src_cols; /* the source schema the columns were declared from */
  uint32_t n_src;
  uint32_t keys[CSX_AGG_MAX_KEYS];
  uint32_t n_keys;
  agg_col *cols;
  int n_cols;
} csx_agg_table;

typedef struct csx_agg_cursor {
  sqlite3_vtab_cursor base;  /* must be first */
  csx_snapshot *snap;        /* held while the results point into it */
  cs_agg *agg;
  uint64_t g, n_groups;
  csx_selection sel;
  cs_selector *selector;
  uint8_t *taken;            /* per table column: a filter whose conditions were taken */
  csx_scan_stats stats;
  char *zPlan;               /* idxStr words, for colstore_last_plan */
} csx_agg_cursor;

/* ------------------------------------------------------------ the table */

static void agg_table_free(csx_agg_table *t) {
  if (!t) return;
  for (int i = 0; i < t->n_cols; i++) sqlite3_free(t->cols[i].name);
  sqlite3_free(t->cols);
  for (uint32_t i = 0; i < t->n_src; i++) sqlite3_free((char *)t->src_cols[i].name);
  sqlite3_free(t->src_cols);
  csx_snapshot_release(t->snap);
  sqlite3_free(t->zName);
  sqlite3_free(t->zSource);
  sqlite3_free(t->zPath);
  sqlite3_free(t);
}

static bool has_sum(cs_type t) { return !cs_type_is_varlen(t); }

/* What column i is, in words, for the name clash error. */
static char *describe(const csx_agg_table *t, int i) {
  const agg_col *c = &t->cols[i];
  const char *x = c->kind == AGG_COUNT || c->kind >= AGG_ROWS ? "" : t->src_cols[c->src].name;
  switch (c->kind) {
    case AGG_KEY: return sqlite3_mprintf("the key column %s", x);
    case AGG_COUNT: return sqlite3_mprintf("the row count");
    case AGG_COUNT_X: return sqlite3_mprintf("the count of column %s", x);
    case AGG_SUM: return sqlite3_mprintf("the sum of column %s", x);
    case AGG_AVG: return sqlite3_mprintf("the average of column %s", x);
    case AGG_MIN: return sqlite3_mprintf("the minimum of column %s", x);
    case AGG_MAX: return sqlite3_mprintf("the maximum of column %s", x);
    case AGG_FILTER: return sqlite3_mprintf("the filter column %s", x);
    default: return sqlite3_mprintf("the hidden column %s", c->name);
  }
}

static int add_col(csx_agg_table *t, agg_kind kind, uint32_t src, uint32_t key, char *name) {
  if (!name) return SQLITE_NOMEM;
  agg_col *c = &t->cols[t->n_cols++];
  c->kind = kind, c->src = src, c->key = key, c->name = name;
  return SQLITE_OK;
}

/* The table's columns from the source schema and the keys. */
static int layout(csx_agg_table *t, char **pzErr) {
  uint32_t n = t->n_src;
  t->cols = sqlite3_malloc64(sizeof *t->cols * (7 * (uint64_t)n + 4));
  if (!t->cols) return SQLITE_NOMEM;
  int rc = SQLITE_OK;
  for (uint32_t k = 0; k < t->n_keys && rc == SQLITE_OK; k++)
    rc = add_col(t, AGG_KEY, t->keys[k], k, sqlite3_mprintf("%s", t->src_cols[t->keys[k]].name));
  if (rc == SQLITE_OK) rc = add_col(t, AGG_COUNT, 0, 0, sqlite3_mprintf("count"));
  for (uint32_t x = 0; x < n && rc == SQLITE_OK; x++) {
    const char *nm = t->src_cols[x].name;
    rc = add_col(t, AGG_COUNT_X, x, 0, sqlite3_mprintf("count_%s", nm));
    if (rc == SQLITE_OK && has_sum(t->src_cols[x].type)) {
      rc = add_col(t, AGG_SUM, x, 0, sqlite3_mprintf("sum_%s", nm));
      if (rc == SQLITE_OK) rc = add_col(t, AGG_AVG, x, 0, sqlite3_mprintf("avg_%s", nm));
    }
    if (rc == SQLITE_OK) rc = add_col(t, AGG_MIN, x, 0, sqlite3_mprintf("min_%s", nm));
    if (rc == SQLITE_OK) rc = add_col(t, AGG_MAX, x, 0, sqlite3_mprintf("max_%s", nm));
  }
  for (uint32_t x = 0; x < n && rc == SQLITE_OK; x++) {
    bool key = false;
    for (uint32_t k = 0; k < t->n_keys; k++) key |= t->keys[k] == x;
    if (!key) rc = add_col(t, AGG_FILTER, x, 0, sqlite3_mprintf("%s", t->src_cols[x].name));
  }
  if (rc == SQLITE_OK) rc = add_col(t, AGG_ROWS, 0, 0, sqlite3_mprintf("_rows"));
  if (rc == SQLITE_OK) rc = add_col(t, AGG_MASK, 0, 0, sqlite3_mprintf("_mask"));
  if (rc != SQLITE_OK) return rc;
  /* Two columns of one name: SQLite would take the first, silently. */
  for (int i = 0; i < t->n_cols; i++)
    for (int j = i + 1; j < t->n_cols; j++)
      if (sqlite3_stricmp(t->cols[i].name, t->cols[j].name) == 0) {
        char *a = describe(t, i), *b = describe(t, j);
        *pzErr = sqlite3_mprintf("colstore: aggregate table %s would have two columns named %s: %s and %s; rename the "
                                 "store's column (colstore_create with AS) or group by other columns",
                                 t->zName, t->cols[i].name, a ? a : "?", b ? b : "?");
        sqlite3_free(a);
        sqlite3_free(b);
        return SQLITE_ERROR;
      }
  return SQLITE_OK;
}

static const char *out_type(const csx_agg_table *t, const agg_col *c) {
  cs_type st = t->src_cols[c->src].type;
  switch (c->kind) {
    case AGG_COUNT: case AGG_COUNT_X: return "INTEGER";
    case AGG_SUM: return cs_type_is_float(st) ? "REAL" : "INTEGER";
    case AGG_AVG: return "REAL";
    case AGG_ROWS: case AGG_MASK: return "BLOB HIDDEN";
    case AGG_FILTER:
      return cs_type_is_float(st) ? "REAL HIDDEN" : st == CS_TYPE_TEXT ? "TEXT HIDDEN" : st == CS_TYPE_BLOB ? "BLOB HIDDEN" : "INTEGER HIDDEN";
    default: return csx_affinity_name(st);
  }
}

static int declare(sqlite3 *db, const csx_agg_table *t) {
  sqlite3_str *s = sqlite3_str_new(db);
  sqlite3_str_appendall(s, "CREATE TABLE x(");
  for (int i = 0; i < t->n_cols; i++)
    sqlite3_str_appendf(s, "%s\"%w\" %s", i ? ", " : "", t->cols[i].name, out_type(t, &t->cols[i]));
  sqlite3_str_appendall(s, ")");
  char *zSql = sqlite3_str_finish(s);
  if (!zSql) return SQLITE_NOMEM;
  int rc = sqlite3_declare_vtab(db, zSql);
  sqlite3_free(zSql);
  return rc;
}

/* The colstore table named zName on this connection, connecting it first
** if SQLite has not yet (a table is connected at its first use). */
static csx_table *source_table(sqlite3 *db, csx_conn *conn, const char *zName) {
  csx_table *p = csx_conn_find(conn, zName);
  if (p) return p;
  char *zSql = sqlite3_mprintf("SELECT 0 FROM \"%w\" LIMIT 0", zName);
  sqlite3_stmt *st = NULL;
  if (zSql && sqlite3_prepare_v2(db, zSql, -1, &st, NULL) == SQLITE_OK) sqlite3_finalize(st);
  sqlite3_free(zSql);
  return csx_conn_find(conn, zName);
}

/* A copy of schema, names included. */
static int keep_schema(csx_agg_table *t, const cs_schema *schema) {
  t->src_cols = sqlite3_malloc64(sizeof *t->src_cols * (schema->n_cols ? schema->n_cols : 1));
  if (!t->src_cols) return SQLITE_NOMEM;
  for (uint32_t i = 0; i < schema->n_cols; i++) {
    t->src_cols[i] = schema->cols[i];
    if (!(t->src_cols[i].name = sqlite3_mprintf("%s", schema->cols[i].name))) return SQLITE_NOMEM;
    t->n_src = i + 1;
  }
  return SQLITE_OK;
}

/* argv[3]: a colstore table's name or a SOURCE; argv[4...]: key columns. */
static int agg_init(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab, char **pzErr,
                    bool create) {
  if (argc < 4) {
    *pzErr = sqlite3_mprintf("colstore: give the source: CREATE VIRTUAL TABLE t USING colstore_agg(table_or_source [, key, ...])");
    return SQLITE_ERROR;
  }
  if (argc - 4 > CSX_AGG_MAX_KEYS) {
    *pzErr = sqlite3_mprintf("colstore: at most %d key columns, %d given", CSX_AGG_MAX_KEYS, argc - 4);
    return SQLITE_ERROR;
  }
  csx_agg_table *t = sqlite3_malloc(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  t->conn = pAux;
  int rc = SQLITE_OK;
  char *zArg = csx_unquote(argv[3], (int)strlen(argv[3]));
  t->zName = sqlite3_mprintf("%s", argv[2]);
  if (!zArg || !t->zName) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  const cs_schema *schema = NULL;
  csx_table *src = zArg[0] ? source_table(db, t->conn, zArg) : NULL;
  if (src) {
    t->zSource = zArg, zArg = NULL;
    t->zPath = sqlite3_mprintf("%s", src->zPath);
    if (!t->zPath) {
      rc = SQLITE_NOMEM;
      goto fail;
    }
    schema = cs_store_schema(src->snap->store);
  } else {
    cs_err err = {0};
    cs_store *store = NULL;
    t->zPath = csx_path_absolute(argv[3]);
    if (!t->zPath) {
      rc = SQLITE_NOMEM;
      goto fail;
    }
    cs_rc crc = t->zPath[0] ? cs_store_open_source(t->zPath, CS_VERIFY_READ, &store, &err) : CS_ENOENT;
    if (crc == CS_ENOENT && create) {
      *pzErr = sqlite3_mprintf("colstore: %s is neither a colstore table of this connection nor a store (%s); "
                               "give a table name or a SOURCE as colstore takes it", argv[3], err.msg[0] ? err.msg : "not found");
      rc = SQLITE_CANTOPEN;
      goto fail;
    }
    if (crc == CS_ENOENT) {
      /* The source went away since: declared anyway, so that the table can
      ** at least be dropped (DROP TABLE connects it first). */
      t->broken = true;
      if (sqlite3_declare_vtab(db, "CREATE TABLE x(count INTEGER)") != SQLITE_OK) {
        rc = SQLITE_NOMEM;
        goto fail;
      }
      *ppVtab = &t->base;
      sqlite3_free(zArg);
      return SQLITE_OK;
    }
    if (crc != CS_OK) {
      *pzErr = sqlite3_mprintf("%s", err.msg);
      rc = csx_rc_to_sqlite(crc);
      goto fail;
    }
    if (!(t->snap = csx_snapshot_new(store))) {
      cs_store_close(store);
      rc = SQLITE_NOMEM;
      goto fail;
    }
    schema = cs_store_schema(store);
  }
  if ((rc = keep_schema(t, schema)) != SQLITE_OK) goto fail;
  for (int i = 4; i < argc; i++) {
    char *zKey = csx_unquote(argv[i], (int)strlen(argv[i]));
    if (!zKey) {
      rc = SQLITE_NOMEM;
      goto fail;
    }
    uint32_t c = 0;
    while (c < t->n_src && sqlite3_stricmp(t->src_cols[c].name, zKey) != 0) c++;
    bool twice = false;
    for (uint32_t k = 0; k < t->n_keys && c < t->n_src; k++) twice |= t->keys[k] == c;
    if (c == t->n_src || twice) {
      *pzErr = twice ? sqlite3_mprintf("colstore: key column %s is given twice", zKey)
                     : sqlite3_mprintf("colstore: %s has no column %s to group by", argv[3], zKey);
      sqlite3_free(zKey);
      rc = SQLITE_ERROR;
      goto fail;
    }
    sqlite3_free(zKey);
    t->keys[t->n_keys++] = c;
  }
  if ((rc = layout(t, pzErr)) != SQLITE_OK) goto fail;
  if ((rc = declare(db, t)) != SQLITE_OK) {
    *pzErr = sqlite3_mprintf("colstore: cannot declare aggregate table %s: %s", t->zName, sqlite3_errmsg(db));
    goto fail;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  sqlite3_free(zArg);
  *ppVtab = &t->base;
  return SQLITE_OK;
fail:
  if (rc == SQLITE_OK) rc = SQLITE_ERROR;
  if (rc != SQLITE_NOMEM && !*pzErr) *pzErr = sqlite3_mprintf("colstore: cannot create aggregate table %s", argv[2]);
  sqlite3_free(zArg);
  agg_table_free(t);
  return rc;
}

static int agg_create(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab, char **pzErr) {
  return agg_init(db, pAux, argc, argv, ppVtab, pzErr, true);
}

static int agg_connect(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab, char **pzErr) {
  return agg_init(db, pAux, argc, argv, ppVtab, pzErr, false);
}

static int agg_disconnect(sqlite3_vtab *pVtab) {
  agg_table_free((csx_agg_table *)pVtab);
  return SQLITE_OK;
}

/* -------------------------------------------------------------- planning */

/* Every condition on a source column is taken (see the essay), else the
** plan is refused: X<column> names the first column it could not take. */
static int agg_best_index(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  csx_agg_table *t = (csx_agg_table *)pVtab;
  if (t->broken) {
    pInfo->estimatedCost = 1e18;
    return SQLITE_OK;
  }
  bool in_ok = sqlite3_libversion_number() >= 3038000;
  sqlite3_str *words = sqlite3_str_new(NULL), *slots = sqlite3_str_new(NULL), *inputs = sqlite3_str_new(NULL);
  sqlite3_str_appendall(words, "aggregate");
  if (t->n_keys) {
    sqlite3_str_appendall(words, " by(");
    for (uint32_t k = 0; k < t->n_keys; k++) sqlite3_str_appendf(words, "%s%s", k ? "," : "", t->src_cols[t->keys[k]].name);
    sqlite3_str_appendall(words, ")");
  }
  int argv_i = 0, n_taken = 0, refuse = -1;
  bool any_pred = false, rows_taken = false, mask_taken = false;
  double rows = 1;
  for (int i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if (c->iColumn < 0 || c->iColumn >= t->n_cols) continue;
    if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT || c->op == SQLITE_INDEX_CONSTRAINT_OFFSET) continue;
    const agg_col *col = &t->cols[c->iColumn];
    if (col->kind == AGG_ROWS || col->kind == AGG_MASK) {
      bool *done = col->kind == AGG_ROWS ? &rows_taken : &mask_taken;
      if (c->usable && c->op == SQLITE_INDEX_CONSTRAINT_EQ && !*done && !(in_ok && sqlite3_vtab_in(pInfo, i, -1))) {
        pInfo->aConstraintUsage[i].argvIndex = ++argv_i;
        pInfo->aConstraintUsage[i].omit = 1;
        sqlite3_str_appendall(slots, col->kind == AGG_ROWS ? "R;" : "M;");
        sqlite3_str_appendall(inputs, col->kind == AGG_ROWS ? " rows(_rows)" : " mask(_mask)");
        *done = true;
      } else if (refuse < 0) {
        refuse = c->iColumn;
      }
      continue;
    }
    if (col->kind != AGG_KEY && col->kind != AGG_FILTER) continue; /* an output: SQLite filters the result */
    bool taken = c->usable && n_taken < CSX_AGG_MAX_CONDITIONS &&
                 csx_plan_take_pred(pInfo, i, t->src_cols[col->src].type, (int)col->src, t->src_cols[col->src].name,
                                    &argv_i, slots, words, any_pred, &rows, true);
    if (taken) {
      any_pred = true;
      n_taken++;
    } else if (col->kind == AGG_FILTER && refuse < 0) {
      refuse = c->iColumn;
    }
  }
  if (any_pred) sqlite3_str_appendall(words, ")");
  char *zInputs = sqlite3_str_finish(inputs);
  if (zInputs) sqlite3_str_appendall(words, zInputs);
  sqlite3_free(zInputs);
  sqlite3_str_appendf(slots, "U%llu;", (unsigned long long)pInfo->colUsed);
  if (refuse >= 0) {
    sqlite3_str_appendf(slots, "X%d;", refuse);
    sqlite3_str_appendall(words, " refused");
  }
  pInfo->estimatedRows = t->n_keys ? 1000 : 1;
  pInfo->estimatedCost = refuse >= 0 ? 1e18 : 1000.0 - (double)n_taken;
  int n_words = sqlite3_str_length(words), n_slots = sqlite3_str_length(slots);
  char *zWords = sqlite3_str_finish(words), *zSlots = sqlite3_str_finish(slots);
  char *z = (zWords && zSlots) ? sqlite3_malloc(n_words + n_slots + 2) : NULL;
  if (z) {
    memcpy(z, zWords, (size_t)n_words + 1);
    memcpy(z + n_words + 1, zSlots, (size_t)n_slots + 1);
  }
  sqlite3_free(zWords);
  sqlite3_free(zSlots);
  pInfo->idxStr = z;
  pInfo->needToFreeIdxStr = 1;
  return z ? SQLITE_OK : SQLITE_NOMEM;
}

/* ---------------------------------------------------------------- cursor */

static int agg_open(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  (void)pVtab;
  csx_agg_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *ppCursor = &c->base;
  return SQLITE_OK;
}

static void cursor_reset(csx_agg_cursor *c) {
  cs_agg_free(c->agg);
  c->agg = NULL;
  cs_selector_free(c->selector);
  c->selector = NULL;
  csx_selection_clear(&c->sel);
  csx_snapshot_release(c->snap);
  c->snap = NULL;
  c->g = c->n_groups = 0;
}

static int agg_close(sqlite3_vtab_cursor *cur) {
  csx_agg_cursor *c = (csx_agg_cursor *)cur;
  csx_agg_table *t = (csx_agg_table *)cur->pVtab;
  if (c->stats.shape) {
    c->stats.idx = c->zPlan;
    csx_conn_record_scan(t->conn, t->zName, t->zPath, c->snap ? c->snap->store : NULL, &c->stats);
  }
  cursor_reset(c);
  sqlite3_free(c->taken);
  sqlite3_free(c->zPlan);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* The snapshot to aggregate: the source table's, refreshed, or this
** table's own; *verify its chunk checking. */
static int source_snapshot(csx_agg_table *t, csx_snapshot **out, cs_verify *verify) {
  if (t->broken)
    return csx_vtab_error(&t->base, SQLITE_ERROR, "colstore: the source of aggregate table %s is neither a colstore table "
                          "of this connection nor a store any more; create it again, or DROP TABLE %s", t->zName, t->zName);
  csx_snapshot *snap;
  if (t->zSource) {
    csx_table *src = csx_conn_find(t->conn, t->zSource);
    if (!src)
      return csx_vtab_error(&t->base, SQLITE_ERROR, "colstore: table %s, the source of aggregate table %s, does not exist "
                            "any more; create it again, or DROP TABLE %s", t->zSource, t->zName, t->zName);
    /* the source's rows as its own cursors would read them now, this
    ** transaction's deletions included */
    int rc = csx_table_read_snapshot(src, &snap);
    if (rc != SQLITE_OK) {
      /* the error was set on the source table, which SQLite is not
      ** calling: move it to this one */
      rc = csx_vtab_error(&t->base, rc, "%s", src->base.zErrMsg ? src->base.zErrMsg : "colstore: cannot refresh the source");
      sqlite3_free(src->base.zErrMsg);
      src->base.zErrMsg = NULL;
      return rc;
    }
    *verify = src->verify;
  } else {
    int rc = csx_snapshot_refresh(&t->snap, &t->base, t->zPath, t->zName);
    if (rc != SQLITE_OK) return rc;
    snap = t->snap;
    snap->n_refs++;
    *verify = CS_VERIFY_READ;
  }
  cs_schema declared = {t->n_src, t->src_cols};
  if (!csx_schema_equal(cs_store_schema(snap->store), &declared)) {
    csx_snapshot_release(snap);
    return csx_vtab_error(&t->base, SQLITE_SCHEMA, "colstore: the columns of %s changed since aggregate table %s was "
                          "created; DROP TABLE %s and create it again", t->zSource ? t->zSource : t->zPath, t->zName, t->zName);
  }
  *out = snap;
  return SQLITE_OK;
}

/* The aggregates colUsed asks for, per source column. */
static void wanted(const csx_agg_table *t, uint64_t col_used, unsigned *what) {
  memset(what, 0, sizeof *what * t->n_src);
  for (int i = 0; i < t->n_cols; i++) {
    if (!((col_used >> (i < 63 ? i : 63)) & 1)) continue;
    const agg_col *c = &t->cols[i];
    switch (c->kind) {
      case AGG_COUNT_X: what[c->src] |= CS_AGG_COUNT; break;
      case AGG_SUM: case AGG_AVG: what[c->src] |= CS_AGG_SUM | CS_AGG_COUNT; break;
      case AGG_MIN: what[c->src] |= CS_AGG_MIN; break;
      case AGG_MAX: what[c->src] |= CS_AGG_MAX; break;
      default: break;
    }
  }
}

/* Aggregates the selection: a _rows list, or the range [lo, hi) under the
** predicates and the _mask; chunks checked first when verify says so. */
static int run(csx_agg_cursor *c, csx_agg_table *t, const uint8_t *check_cols) {
  const cs_store *store = c->snap->store;
  csx_selection *sel = &c->sel;
  cs_err err = {0};
  cs_rc crc = CS_OK;
  if (sel->n_preds && cs_selector_new(store, sel->preds, sel->n_preds, &c->selector, &err) != CS_OK) return SQLITE_NOMEM;
  if (sel->never || sel->hi <= sel->lo) return SQLITE_OK;
  uint64_t t0 = csx_mono_ns();
  if (sel->rows_blob) {
    uint64_t *rows = sqlite3_malloc64(sel->user_rows_bytes + 8), n = 0;
    if (!rows) return SQLITE_NOMEM;
    int rc = csx_selection_rows(sel, &t->base, t->zName, cs_store_rows(store), NULL, 0, rows, &n);
    if (rc == SQLITE_OK && sel->user_mask) {
      uint64_t k = 0;
      for (uint64_t i = 0; i < n; i++)
        if (sel->user_mask[rows[i]]) rows[k++] = rows[i];
      n = k;
    }
    if (rc == SQLITE_OK && check_cols) crc = cs_store_check_rows(store, rows, n, check_cols, &err);
    if (rc == SQLITE_OK && crc == CS_OK) crc = cs_agg_add_rows(c->agg, c->selector, rows, n, &err);
    sqlite3_free(rows);
    if (rc != SQLITE_OK) return rc;
    c->stats.shape = "aggregate list";
    c->stats.rows_scanned = n;
  } else {
    if (check_cols)
      crc = cs_store_check_chunks(store, cs_store_find_record(store, sel->lo), cs_store_find_record(store, sel->hi - 1) + 1,
                                  check_cols, &err);
    if (crc == CS_OK)
      crc = cs_agg_add_range(c->agg, c->selector, sel->lo, sel->hi - sel->lo, sel->user_mask ? sel->user_mask + sel->lo : NULL,
                             &err);
    c->stats.shape = "aggregate range";
    c->stats.rows_scanned = sel->hi - sel->lo;
  }
  c->stats.kernel_ns = csx_mono_ns() - t0;
  if (crc != CS_OK) return csx_vtab_error(&t->base, crc == CS_ECORRUPT ? SQLITE_CORRUPT : csx_rc_to_sqlite(crc), "%s", err.msg);
  return SQLITE_OK;
}

static int agg_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  csx_agg_cursor *c = (csx_agg_cursor *)cur;
  csx_agg_table *t = (csx_agg_table *)cur->pVtab;
  (void)idxNum;
  cursor_reset(c);
  memset(&c->stats, 0, sizeof c->stats);
  csx_plan plan;
  int rc = csx_plan_decode(idxStr, &plan);
  if (rc != SQLITE_OK) return rc;
  if (plan.refuse) {
    const agg_col *col = &t->cols[plan.refuse - 1];
    if (col->kind == AGG_ROWS || col->kind == AGG_MASK)
      return csx_vtab_error(&t->base, SQLITE_ERROR, "colstore: %s of aggregate table %s selects rows only as `%s = ?` ANDed "
                            "with the rest of the WHERE clause (given once)", col->name, t->zName, col->name);
    return csx_vtab_error(&t->base, SQLITE_ERROR,
                          "colstore: a condition on %s of aggregate table %s cannot be handed to colstore_agg (an OR across "
                          "columns, a function of the column, a comparison of two columns, an operator it does not take, "
                          "or more than %d conditions); rewrite it as `%s OP value` with =, !=, <, <=, >, >=, IS, IS NOT, "
                          "IS NULL, IS NOT NULL, IN or BETWEEN, ANDed with the rest of the WHERE clause",
                          col->name, t->zName, CSX_AGG_MAX_CONDITIONS, col->name);
  }
  cs_verify verify = CS_VERIFY_READ;
  if ((rc = source_snapshot(t, &c->snap, &verify)) != SQLITE_OK) return rc;
  sqlite3_free(c->zPlan);
  c->zPlan = sqlite3_mprintf("%s", idxStr ? idxStr : "");
  if (!c->taken && !(c->taken = sqlite3_malloc(t->n_cols))) return SQLITE_NOMEM;
  memset(c->taken, 0, (size_t)t->n_cols);
  /* what the plan took, per table column: filters and the hidden inputs */
  uint8_t *check_cols = sqlite3_malloc(t->n_src ? (int)t->n_src : 1);
  unsigned *what = sqlite3_malloc64(sizeof *what * (t->n_src ? t->n_src : 1));
  if (!check_cols || !what) {
    sqlite3_free(check_cols);
    sqlite3_free(what);
    return SQLITE_NOMEM;
  }
  wanted(t, plan.col_used, what);
  for (uint32_t x = 0; x < t->n_src; x++) check_cols[x] = what[x] != 0;
  for (uint32_t k = 0; k < t->n_keys; k++) check_cols[t->keys[k]] = 1;
  for (int s = 0; s < plan.n_slots; s++) {
    const csx_slot *sl = &plan.slots[s];
    for (int i = 0; i < t->n_cols; i++) {
      const agg_col *col = &t->cols[i];
      if ((sl->kind == 'P' || sl->kind == 'Q') && col->kind == AGG_FILTER && (int)col->src == sl->col) c->taken[i] = 1;
      if ((sl->kind == 'R' && col->kind == AGG_ROWS) || (sl->kind == 'M' && col->kind == AGG_MASK)) c->taken[i] = 1;
    }
    if (sl->kind == 'P' || sl->kind == 'Q') check_cols[sl->col] = 1;
  }
  rc = csx_selection_build(&c->sel, &t->base, t->zName, c->snap, &plan, argc, argv,
                           verify != CS_VERIFY_HEADER ? check_cols : NULL);
  if (rc == SQLITE_OK) {
    cs_err err = {0};
    cs_agg_spec spec = {.keys = t->keys, .n_keys = t->n_keys, .what = what, .max_threads = 0};
    cs_rc crc = cs_agg_new(c->snap->store, &spec, &c->agg, &err);
    if (crc != CS_OK) rc = csx_vtab_error(&t->base, csx_rc_to_sqlite(crc), "%s", err.msg);
  }
  if (rc == SQLITE_OK) rc = run(c, t, verify != CS_VERIFY_HEADER ? check_cols : NULL);
  sqlite3_free(check_cols);
  sqlite3_free(what);
  if (rc != SQLITE_OK) return rc;
  cs_agg_stats st;
  cs_agg_stats_get(c->agg, &st);
  c->stats.kernels = st.kernel;
  c->stats.threads = st.threads;
  c->stats.n_preds = c->sel.n_preds;
  c->stats.sorted_ranges = c->sel.sorted_ranges;
  c->stats.rows_selected = st.rows_selected;
  c->stats.records_scanned = st.records_scanned;
  c->stats.records_skipped = st.records_skipped;
  c->stats.records_coded = st.records_coded;
  c->n_groups = cs_agg_groups(c->agg);
  c->g = 0;
  return SQLITE_OK;
}

static int agg_next(sqlite3_vtab_cursor *cur) {
  ((csx_agg_cursor *)cur)->g++;
  return SQLITE_OK;
}

static int agg_eof(sqlite3_vtab_cursor *cur) {
  const csx_agg_cursor *c = (const csx_agg_cursor *)cur;
  return c->g >= c->n_groups;
}

static void result_value(sqlite3_context *ctx, const cs_value *v) {
  switch (v->kind) {
    case CS_VAL_INT: sqlite3_result_int64(ctx, v->i); break;
    case CS_VAL_FLOAT: sqlite3_result_double(ctx, v->f); break;
    case CS_VAL_TEXT: sqlite3_result_text64(ctx, (const char *)v->p, v->n, SQLITE_TRANSIENT, SQLITE_UTF8); break;
    case CS_VAL_BLOB: sqlite3_result_blob64(ctx, v->p, v->n, SQLITE_TRANSIENT); break;
    default: sqlite3_result_null(ctx); break;
  }
}

static int refuse_read(sqlite3_context *ctx, const csx_agg_table *t, const agg_col *col) {
  char *z = col->kind == AGG_FILTER
                ? sqlite3_mprintf("colstore: %s of aggregate table %s only selects source rows: use it as `%s OP value` "
                                  "(=, !=, <, <=, >, >=, IS, IS NOT, IS NULL, IS NOT NULL, IN, BETWEEN) ANDed with the rest "
                                  "of the WHERE clause; it cannot be read, and a condition on it under OR, in a function or "
                                  "against another column must be rewritten that way",
                                  col->name, t->zName, col->name)
                : sqlite3_mprintf("colstore: %s of aggregate table %s is an input, not a value: use it only as `%s = ?` "
                                  "ANDed with the rest of the WHERE clause", col->name, t->zName, col->name);
  sqlite3_result_error(ctx, z ? z : "colstore: a filter column cannot be read", -1);
  sqlite3_free(z);
  return SQLITE_ERROR;
}

static int agg_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
  csx_agg_cursor *c = (csx_agg_cursor *)cur;
  const csx_agg_table *t = (const csx_agg_table *)cur->pVtab;
  const agg_col *col = &t->cols[i];
  cs_value v;
  cs_agg_result r;
  switch (col->kind) {
    case AGG_KEY:
      cs_agg_key(c->agg, c->g, col->key, &v);
      result_value(ctx, &v);
      return SQLITE_OK;
    case AGG_COUNT: sqlite3_result_int64(ctx, (sqlite3_int64)cs_agg_count(c->agg, c->g)); return SQLITE_OK;
    case AGG_FILTER:
      /* SQLite 3.40 re-checks `X IS NOT NULL` after the table took it */
      if (c->taken[i]) sqlite3_result_int(ctx, 1);
      return c->taken[i] ? SQLITE_OK : refuse_read(ctx, t, col);
    case AGG_ROWS: case AGG_MASK: {
      const uint8_t *p = col->kind == AGG_ROWS ? c->sel.user_rows : c->sel.user_mask;
      uint64_t n = col->kind == AGG_ROWS ? c->sel.user_rows_bytes : c->sel.user_mask_bytes;
      if (!c->taken[i]) return refuse_read(ctx, t, col);
      if (p) sqlite3_result_blob64(ctx, p, n, SQLITE_STATIC);
      return SQLITE_OK;
    }
    default: break;
  }
  cs_agg_result_get(c->agg, c->g, col->src, &r);
  switch (col->kind) {
    case AGG_COUNT_X: sqlite3_result_int64(ctx, (sqlite3_int64)r.count); break;
    case AGG_SUM:
      if (r.count && r.sum_overflow) {
        char *z = sqlite3_mprintf("colstore: integer overflow in %s of %s (SQLite's sum() fails the same way; "
                                  "avg_%s is exact enough, or store the column as FLOAT64)",
                                  col->name, t->zName, t->src_cols[col->src].name);
        sqlite3_result_error(ctx, z ? z : "integer overflow", -1);
        sqlite3_free(z);
        return SQLITE_ERROR;
      }
      if (r.count) result_value(ctx, &r.sum);
      break;
    case AGG_AVG:
      if (r.count) sqlite3_result_double(ctx, r.avg);
      break;
    case AGG_MIN: if (r.count) result_value(ctx, &r.min); break;
    case AGG_MAX: if (r.count) result_value(ctx, &r.max); break;
    default: break;
  }
  return SQLITE_OK;
}

static int agg_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid) {
  *pRowid = (sqlite3_int64)((csx_agg_cursor *)cur)->g;
  return SQLITE_OK;
}

static int agg_rename(sqlite3_vtab *pVtab, const char *zNew) {
  csx_agg_table *t = (csx_agg_table *)pVtab;
  char *z = sqlite3_mprintf("%s", zNew);
  if (!z) return SQLITE_NOMEM;
  sqlite3_free(t->zName);
  t->zName = z;
  return SQLITE_OK;
}

sqlite3_module csx_agg_module = {
    /* iVersion    */ 1,
    /* xCreate     */ agg_create,
    /* xConnect    */ agg_connect,
    /* xBestIndex  */ agg_best_index,
    /* xDisconnect */ agg_disconnect,
    /* xDestroy    */ agg_disconnect,
    /* xOpen       */ agg_open,
    /* xClose      */ agg_close,
    /* xFilter     */ agg_filter,
    /* xNext       */ agg_next,
    /* xEof        */ agg_eof,
    /* xColumn     */ agg_column,
    /* xRowid      */ agg_rowid,
    /* xUpdate     */ NULL,
    /* xBegin      */ NULL,
    /* xSync       */ NULL,
    /* xCommit     */ NULL,
    /* xRollback   */ NULL,
    /* xFindFunction */ NULL,
    /* xRename     */ agg_rename,
    /* xSavepoint  */ NULL,
    /* xRelease    */ NULL,
    /* xRollbackTo */ NULL,
    /* xShadowName */ NULL,
};
