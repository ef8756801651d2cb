/*
** colstore_agg.c - the colstore_agg virtual table: counts, sums, averages,
** minima and maxima of a colstore table, grouped or not, computed by the
** core's aggregation kernels instead of SQLite's row loop.
**
** SQLite never hands an aggregate to a virtual table: `SELECT sum(a) FROM
** t` steps every row through xColumn.  So the aggregates are made the rows
** of a second table (docs/sql.md, "Aggregate tables"):
**
**   CREATE VIRTUAL TABLE temp.ev_kind USING colstore_agg(ev, kind);
**   SELECT kind, count, sum_energy FROM ev_kind WHERE energy > 10;
**
** Its columns are the keys, `count`, then count_X, sum_X, avg_X, min_X,
** max_X per source column X; behind them HIDDEN filter columns, one per
** source column that is not a key, plus _rows and _mask.  A WHERE
** condition on a filter column is not a condition on the output rows but
** on the source rows: xBestIndex must take every one of them, with the
** same plan builder, slots and reading of the arguments as the colstore
** table (colstore_plan.c, csx_selection_build), so `energy > 10` means here
** exactly what it means there, with one difference: the colstore table
** leaves to SQLite what the core would compare otherwise (a literal of
** another class, a BLOB column), but here nothing can be left to SQLite,
** so every operand of every class is taken (CSX_TAKE_AGG_FILTER) and compared by
** the core with SQLite's rules.  The danger is a condition SQLite cannot
** hand over (an OR across columns, a function of the column, a comparison
** of two columns): SQLite would then evaluate it on the output rows, by
** reading the filter column, and silently drop or keep whole groups.  So
** every such shape fails loudly instead, and the same way whatever the
** data:
**
**   - offered but not takeable (an operator the core lacks, TEXT under
**     another collation, a join operand not yet known, an IN list past
**     SQLite's 32-bit masks): the plan costs 1e18 and names the column
**     and the reason (slot X<c>:<why>), and xFilter refuses it if SQLite
**     still picks it;
**   - never offered (OR, NOT, functions): SQLite reads the column, which
**     colUsed shows at planning: a filter column read with no condition
**     on it taken is refused the same way (X<c>:REFUSE_READ).  Where the
**     column also has a condition the table took, colUsed cannot tell the
**     two apart, and xColumn refuses the read (see agg_column);
**   - SQLite answering an OR branch by branch (a MULTI-INDEX OR plan)
**     would merge aggregates of the branches: such plans cost more than
**     the refused scan, and xRowid, which they need, refuses.
**
** One more reading is SQLite's own: it checks some taken conditions again
** on the output rows (those past the 16th constraint, whose omit bit its
** 16-bit mask cannot hold, and, in 3.40, `X IS NOT NULL`).  The column
** then reads as a witness: a value that satisfies every such condition,
** found from the conditions themselves (the integer 1 for IS NOT NULL),
** never data; a read beyond those re-checks is refused.  One that comes
** first on a row and rejects it cannot be told from a re-check: the limit
** docs/sql.md names (`NOT (s > 0) AND s IS NOT NULL`).
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
#include <math.h>
#include <string.h>

#include "colstore_ext.h"

#define CSX_AGG_MAX_KEYS 16

typedef enum agg_kind {
  AGG_KEY,
  AGG_COUNT,
  AGG_COUNT_X,
  AGG_SUM,
  AGG_AVG,
  AGG_MIN,
  AGG_MAX, /* outputs */
  AGG_FILTER,
  AGG_ROWS,
  AGG_MASK /* HIDDEN inputs */
} agg_kind;

typedef struct agg_col {
  agg_kind kind;
  uint32_t src; /* the source column (KEY, *_X, FILTER) */
  uint32_t key; /* KEY: its index among the keys */
  char *name;   /* as declared */
} agg_col;

typedef struct csx_agg_table {
  sqlite3_vtab base; /* must be first */
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
  sqlite3_vtab_cursor base; /* must be first */
  csx_snapshot *snap;       /* held while the results point into it */
  cs_agg *agg;
  uint64_t g, n_groups;
  csx_selection sel;
  cs_selector *selector;
  uint8_t *taken;       /* per table column: TAKEN_* (filters and the hidden inputs) */
  cs_value *witness;    /* per table column: what a TAKEN_RECHECK column reads as */
  uint32_t *rechecks;   /* ... how many of its conditions SQLite may check again */
  uint32_t *reads;      /* ... how many times SQLite read it on this row */
  uint8_t *has_witness; /* ... whether one was found */
  void **witness_held;  /* the witnesses' bytes; sqlite3_free */
  int n_witness_held;
  csx_scan_stats stats;
  char *zPlan; /* idxStr words, for colstore_last_plan */
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

/* The table's columns from the source schema and the keys.  The HIDDEN
** inputs come first: colUsed names only columns 0..62 one by one, and the
** planner must know exactly which filter columns a query reads (see
** agg_best_index); HIDDEN columns are not in `SELECT *`, so the visible
** columns keep the contract's order. */
static int layout(csx_agg_table *t, char **pzErr) {
  uint32_t n = t->n_src;
  t->cols = sqlite3_malloc64(sizeof *t->cols * (7 * (uint64_t)n + 4));
  if (!t->cols) return SQLITE_NOMEM;
  int rc = SQLITE_OK;
  for (uint32_t x = 0; x < n && rc == SQLITE_OK; x++) {
    bool key = false;
    for (uint32_t k = 0; k < t->n_keys; k++) key |= t->keys[k] == x;
    if (!key) rc = add_col(t, AGG_FILTER, x, 0, sqlite3_mprintf("%s", t->src_cols[x].name));
  }
  if (rc == SQLITE_OK) rc = add_col(t, AGG_ROWS, 0, 0, sqlite3_mprintf("_rows"));
  if (rc == SQLITE_OK) rc = add_col(t, AGG_MASK, 0, 0, sqlite3_mprintf("_mask"));
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
  if (rc != SQLITE_OK) return rc;
  /* Two columns of one name: SQLite would take the first, silently. */
  for (int i = 0; i < t->n_cols; i++)
    for (int j = i + 1; j < t->n_cols; j++)
      if (sqlite3_stricmp(t->cols[i].name, t->cols[j].name) == 0) {
        char *a = describe(t, i), *b = describe(t, j);
        *pzErr = sqlite3_mprintf(
            "colstore: aggregate table %s would have two columns named %s: %s and %s; rename the "
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
    case AGG_COUNT:
    case AGG_COUNT_X: return "INTEGER";
    case AGG_SUM: return cs_type_is_float(st) ? "REAL" : "INTEGER";
    case AGG_AVG: return "REAL";
    case AGG_ROWS:
    case AGG_MASK: return "BLOB HIDDEN";
    case AGG_FILTER:
      return cs_type_is_float(st) ? "REAL HIDDEN"
             : st == CS_TYPE_TEXT ? "TEXT HIDDEN"
             : st == CS_TYPE_BLOB ? "BLOB HIDDEN"
                                  : "INTEGER HIDDEN";
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
static int agg_init(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                    char **pzErr, bool create) {
  if (argc < 4) {
    *pzErr = sqlite3_mprintf(
        "colstore: give the source: CREATE VIRTUAL TABLE t USING colstore_agg(table_or_source [, key, ...])");
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
      *pzErr = sqlite3_mprintf(
          "colstore: %s is neither a colstore table of this connection nor a store (%s); "
          "give a table name or a SOURCE as colstore takes it",
          argv[3], err.msg[0] ? err.msg : "not found");
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
  if (rc != SQLITE_NOMEM && !*pzErr)
    *pzErr = sqlite3_mprintf("colstore: cannot create aggregate table %s", argv[2]);
  sqlite3_free(zArg);
  agg_table_free(t);
  return rc;
}

static int agg_create(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                      char **pzErr) {
  return agg_init(db, pAux, argc, argv, ppVtab, pzErr, true);
}

static int agg_connect(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                       char **pzErr) {
  return agg_init(db, pAux, argc, argv, ppVtab, pzErr, false);
}

static int agg_disconnect(sqlite3_vtab *pVtab) {
  agg_table_free((csx_agg_table *)pVtab);
  return SQLITE_OK;
}

/* -------------------------------------------------------------- planning */

/* Why a plan was refused: the code after X<c>: in idxStr, a CSX_DECLINE_*
** for a condition offered on the column that could not be taken,
** CSX_REFUSE_INPUT for _rows/_mask other than `= ?`, or: */
enum {
  REFUSE_UNUSABLE = CSX_N_WHY, /* its operand is another table's column, not known in this join order */
  REFUSE_READ,                 /* the query reads the column, and no condition on it was taken */
  REFUSE_TOO_MANY,             /* more conditions than idxStr has slots for */
  REFUSE_N_WHY
};

/* SQLite omits its own check of a taken condition only for the first 16
** constraints and argv positions (where.c keeps a 16-bit omit mask), and
** 3.40 checks `X IS NOT NULL` again whatever the mask says: such a
** condition SQLite checks by reading the filter column (see agg_column). */
static bool may_recheck(int i_cons, int argv_pos, int op) {
  return i_cons >= 16 || argv_pos >= 16 || op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL;
}

/* Takes `_rows = ?` or `_mask = ?` (constraint i on input column ci), or
** refuses the plan: an input has no other meaning here, and one that may
** be an IN list (past constraint 31) would be aggregated BLOB by BLOB. */
static void plan_input(csx_plan_builder *b, const csx_agg_table *t, int i, int ci, uint8_t *col_taken) {
  if (b->argv_i < CSX_MAX_SLOTS && csx_plan_input_ok(b->info, i) && csx_plan_eq_unknown(b->info, i)) {
    csx_plan_refuse(b, ci, CSX_DECLINE_IN_UNKNOWN);
  } else if (b->argv_i < CSX_MAX_SLOTS && csx_plan_input_ok(b->info, i)) {
    csx_plan_take_input(b, i, t->cols[ci].kind == AGG_ROWS ? CSX_HIDDEN_ROWS : CSX_HIDDEN_MASK);
    col_taken[ci] = 1;
  } else {
    csx_plan_refuse(b, ci, CSX_REFUSE_INPUT);
  }
}

/* Takes a condition on a key or filter column ci as a predicate; one on a
** filter column that cannot be taken refuses the plan (one on a key is
** left to SQLite, which checks it on the group's key).  True when taken. */
static bool plan_condition(csx_plan_builder *b, const csx_agg_table *t, int i, int ci, uint8_t *col_taken) {
  const struct sqlite3_index_constraint *c = &b->info->aConstraint[i];
  const agg_col *col = &t->cols[ci];
  int why = CSX_DECLINE_INEXACT;
  int pos = b->argv_i;
  bool room = b->argv_i < CSX_MAX_SLOTS;
  bool taken = c->usable && room &&
               csx_plan_take_pred(b, i, t->src_cols[col->src].type, (int)col->src, t->src_cols[col->src].name,
                                  col->kind == AGG_KEY ? CSX_TAKE_AGG_KEY : CSX_TAKE_AGG_FILTER, &why);
  if (taken) {
    if (may_recheck(i, pos, c->op)) sqlite3_str_appendall(b->slots, "C;");
    col_taken[ci] = 1;
  } else if (col->kind == AGG_FILTER) {
    csx_plan_refuse(b, ci, !room ? REFUSE_TOO_MANY : !c->usable ? REFUSE_UNUSABLE : why);
  }
  return taken;
}

/* Every condition on a source column is taken (see the essay), else the
** plan is refused: X<c>:<why> names the first column it could not answer
** for.  Three passes put argv positions where SQLite honours them: first
** the constraints 0..15 (the only ones SQLite can omit), then the IN lists
** of constraints 16..31 (still at argv positions below 32, where an IN
** list is handed over whole), then the rest. */
static int agg_best_index(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  csx_agg_table *t = (csx_agg_table *)pVtab;
  if (t->broken) {
    pInfo->estimatedCost = 1e18;
    return SQLITE_OK;
  }
  /* per table column: a condition on it was taken */
  uint8_t *col_taken = sqlite3_malloc(t->n_cols ? t->n_cols : 1);
  if (!col_taken) return SQLITE_NOMEM;
  memset(col_taken, 0, (size_t)(t->n_cols ? t->n_cols : 1));
  csx_plan_builder b;
  csx_plan_begin(&b, pInfo, 1);
  csx_plan_say(&b, "aggregate");
  for (uint32_t k = 0; k < t->n_keys; k++) {
    if (k == 0) csx_plan_say(&b, "by(");
    sqlite3_str_appendf(b.words, "%s%s%s", k ? "," : "", t->src_cols[t->keys[k]].name,
                        k + 1 == t->n_keys ? ")" : "");
  }
  int n_taken = 0;
  for (int pass = 0; pass < 3; pass++) {
    for (int i = 0; i < pInfo->nConstraint; i++) {
      const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
      if (c->iColumn < 0 || c->iColumn >= t->n_cols) continue;
      if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT || c->op == SQLITE_INDEX_CONSTRAINT_OFFSET) continue;
      if (pInfo->aConstraintUsage[i].argvIndex > 0) continue;
      bool is_list = csx_plan_is_list(pInfo, i);
      if ((pass == 0) != (i < 16) || (pass == 1 && !is_list) || (pass == 2 && is_list)) continue;
      agg_kind kind = t->cols[c->iColumn].kind;
      if (kind == AGG_ROWS || kind == AGG_MASK)
        plan_input(&b, t, i, c->iColumn, col_taken);
      else if (kind == AGG_KEY || kind == AGG_FILTER)
        n_taken += plan_condition(&b, t, i, c->iColumn, col_taken);
      /* else an output: SQLite filters the result */
    }
  }
  /* A filter column (or input) the query reads with no condition on it
  ** taken: SQLite would evaluate something on it over the output rows (an
  ** OR, NOT, a function, another column, the SELECT list).  Known here
  ** from colUsed, so the query fails the same way whatever the data. */
  for (int ci = 0; ci < t->n_cols && ci < 63; ci++) {
    agg_kind k = t->cols[ci].kind;
    if ((k == AGG_FILTER || k == AGG_ROWS || k == AGG_MASK) && ((pInfo->colUsed >> ci) & 1) && !col_taken[ci])
      csx_plan_refuse(&b, ci, REFUSE_READ);
  }
  sqlite3_free(col_taken);
  csx_plan_say_terms(&b);
  pInfo->estimatedRows = t->n_keys ? 1000 : 1;
  /* More conditions taken is cheaper, but never below 999.  A MULTI-INDEX
  ** OR plan (one run per branch, its rows merged by rowid; aggregates of
  ** the branches are not those of the OR) costs the sum of two or more
  ** branches, each offered only its own terms.  So a plan refused because
  ** the query reads a filter column costs 1500: more than any scan taken
  ** whole (a branch offered without the terms ANDed beside the OR reads
  ** them, and must not make the OR plan cheap), less than two branches
  ** taken (`v = 1 OR v > 5` must meet the refused scan, not the OR plan).
  ** A plan refused for a condition it cannot take costs most: SQLite
  ** looks for another (a join order in which the operand is known). */
  pInfo->estimatedCost = b.refuse_col < 0              ? 1000.0 - (double)n_taken / (n_taken + 1.0)
                         : b.refuse_why == REFUSE_READ ? 1500.0
                                                       : 1e18;
  return csx_plan_finish(&b);
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
  for (int i = 0; i < c->n_witness_held; i++) sqlite3_free(c->witness_held[i]);
  sqlite3_free(c->witness_held);
  c->witness_held = NULL;
  c->n_witness_held = 0;
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
  sqlite3_free(c->has_witness);
  sqlite3_free(c->witness);
  sqlite3_free(c->rechecks);
  sqlite3_free(c->reads);
  sqlite3_free(c->zPlan);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* The snapshot to aggregate: the source table's, refreshed, or this
** table's own; *verify its chunk checking. */
static int source_snapshot(csx_agg_table *t, csx_snapshot **out, cs_verify *verify) {
  if (t->broken)
    return csx_vtab_error(&t->base, SQLITE_ERROR,
                          "colstore: the source of aggregate table %s is neither a colstore table "
                          "of this connection nor a store any more; create it again, or DROP TABLE %s",
                          t->zName, t->zName);
  csx_snapshot *snap;
  if (t->zSource) {
    csx_table *src = csx_conn_find(t->conn, t->zSource);
    if (!src)
      return csx_vtab_error(&t->base, SQLITE_ERROR,
                            "colstore: table %s, the source of aggregate table %s, does not exist "
                            "any more; create it again, or DROP TABLE %s",
                            t->zSource, t->zName, t->zName);
    /* the source's rows as its own cursors would read them now, this
    ** transaction's deletions included */
    int rc = csx_table_read_snapshot(src, &snap);
    if (rc != SQLITE_OK) {
      /* the error was set on the source table, which SQLite is not
      ** calling: move it to this one */
      rc = csx_vtab_error(&t->base, rc, "%s",
                          src->base.zErrMsg ? src->base.zErrMsg : "colstore: cannot refresh the source");
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
    return csx_vtab_error(&t->base, SQLITE_SCHEMA,
                          "colstore: the columns of %s changed since aggregate table %s was "
                          "created; DROP TABLE %s and create it again",
                          t->zSource ? t->zSource : t->zPath, t->zName, t->zName);
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
      case AGG_SUM:
      case AGG_AVG: what[c->src] |= CS_AGG_SUM | CS_AGG_COUNT; break;
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
  if (sel->n_preds && cs_selector_new(store, sel->preds, sel->n_preds, &c->selector, &err) != CS_OK)
    return SQLITE_NOMEM;
  /* _rows positions are checked whatever else selects nothing (a source
  ** of 0 positions, x = NULL): the same error for the same arguments */
  if (!sel->rows_blob && (sel->never || sel->hi <= sel->lo)) return SQLITE_OK;
  uint64_t t0 = csx_mono_ns();
  if (sel->rows_blob) {
    uint64_t *rows = sqlite3_malloc64(sel->user_rows_bytes + 8), n = 0;
    if (!rows) return SQLITE_NOMEM;
    int rc = csx_selection_list(sel, &t->base, t->zName, cs_store_rows(store), rows, &n);
    if (rc == SQLITE_OK && check_cols) crc = cs_store_check_rows(store, rows, n, check_cols, &err);
    if (rc == SQLITE_OK && crc == CS_OK) crc = cs_agg_add_rows(c->agg, c->selector, rows, n, &err);
    sqlite3_free(rows);
    if (rc != SQLITE_OK) return rc;
    c->stats.shape = "aggregate list";
    c->stats.rows_scanned = n;
  } else {
    if (check_cols)
      crc = cs_store_check_chunks(store, cs_store_find_record(store, sel->lo),
                                  cs_store_find_record(store, sel->hi - 1) + 1, check_cols, &err);
    if (crc == CS_OK)
      crc = cs_agg_add_range(c->agg, c->selector, sel->lo, sel->hi - sel->lo,
                             sel->user_mask ? sel->user_mask + sel->lo : NULL, &err);
    c->stats.shape = "aggregate range";
    c->stats.rows_scanned = sel->hi - sel->lo;
  }
  c->stats.kernel_ns = csx_mono_ns() - t0;
  if (crc != CS_OK)
    return csx_vtab_error(&t->base, crc == CS_ECORRUPT ? SQLITE_CORRUPT : csx_rc_to_sqlite(crc), "%s",
                          err.msg);
  return SQLITE_OK;
}

/* What the plan took, per table column (the cursor's taken[]). */
enum {
  TAKEN_NONE,   /* no condition taken: reading it is an error */
  TAKEN,        /* conditions taken, none of which SQLite checks again: reading it is an error */
  TAKEN_RECHECK /* ... some of which SQLite may check again: it reads as the witness */
};

/* --------------------------------------------------------------- witness
**
** SQLite checks some taken conditions again on the output rows, reading
** the filter column (may_recheck).  The value it reads must satisfy every
** such condition, or SQLite drops the row; it must not be data, since a
** group has no one value.  So it is found from the conditions themselves:
** the integer 1 (which the contract promises where only IS NOT NULL is
** checked again), NULL, each operand, and values just beside the operands
** and between two of them, each tried with the core's own semantics
** (cs_pred_match_value).  A group exists only when some row satisfied all
** of them, so they can be satisfied and one of these is found; when none
** is (the conditions contradict each other), reading the column is an
** error rather than a silently dropped row. */

typedef struct witness_search {
  const cs_pred *preds;
  int n_preds;
  uint8_t *buf; /* scratch bytes for an operand plus one byte */
  uint64_t buf_cap;
} witness_search;

static bool witness_try(const witness_search *w, const cs_value *v) {
  if (v->kind == CS_VAL_FLOAT && isnan(v->f)) return false;
  for (int k = 0; k < w->n_preds; k++)
    if (!cs_pred_match_value(&w->preds[k], v)) return false;
  return true;
}

/* Tries operand o and the values beside it; true with *out set on success
** (its bytes in w->buf). */
static bool witness_near(witness_search *w, const cs_value *o, cs_value *out) {
  cs_value v = *o;
  if (o->kind == CS_VAL_NULL) return false;
  if (witness_try(w, &v)) return *out = v, true;
  if (o->kind == CS_VAL_INT || o->kind == CS_VAL_FLOAT) {
    double d = o->kind == CS_VAL_INT ? (double)o->i : o->f;
    if (o->kind == CS_VAL_INT) {
      int64_t steps[2] = {o->i < INT64_MAX ? o->i + 1 : o->i, o->i > INT64_MIN ? o->i - 1 : o->i};
      for (int k = 0; k < 2; k++) {
        v = (cs_value){.kind = CS_VAL_INT, .i = steps[k]};
        if (witness_try(w, &v)) return *out = v, true;
      }
    }
    double near[6] = {d + 0.5, d - 0.5, d + 1, d - 1, nextafter(d, INFINITY), nextafter(d, -INFINITY)};
    for (int k = 0; k < 6; k++) {
      v = (cs_value){.kind = CS_VAL_FLOAT, .f = near[k]};
      if (witness_try(w, &v)) return *out = v, true;
    }
    return false;
  }
  /* TEXT or BLOB: the empty value of its class, and the operand with one
  ** more byte (just above it) */
  v = (cs_value){.kind = o->kind, .p = (const uint8_t *)"", .n = 0};
  if (witness_try(w, &v)) return *out = v, true;
  if (o->n + 1 > w->buf_cap) {
    uint8_t *b = sqlite3_realloc64(w->buf, o->n + 1);
    if (!b) return false;
    w->buf = b, w->buf_cap = o->n + 1;
  }
  if (o->n) memcpy(w->buf, o->p, o->n);
  w->buf[o->n] = 1;
  v = (cs_value){.kind = o->kind, .p = w->buf, .n = o->n + 1};
  if (witness_try(w, &v)) return *out = v, true;
  return false;
}

/* A value satisfying preds[0..n), or false. */
static bool witness_find(witness_search *w, cs_value *out) {
  cs_value v = {.kind = CS_VAL_INT, .i = 1};
  if (witness_try(w, &v)) return *out = v, true;
  v = (cs_value){.kind = CS_VAL_NULL};
  if (witness_try(w, &v)) return *out = v, true;
  for (int k = 0; k < w->n_preds; k++) {
    const cs_pred *pr = &w->preds[k];
    if (witness_near(w, &pr->a, out)) return true;
    for (uint64_t m = 0; m < pr->n_set; m++)
      if (witness_near(w, &pr->set[m], out)) return true;
  }
  /* between two numeric bounds */
  for (int a = 0; a < w->n_preds; a++)
    for (int b = a + 1; b < w->n_preds; b++) {
      const cs_value *x = &w->preds[a].a, *y = &w->preds[b].a;
      bool nx = x->kind == CS_VAL_INT || x->kind == CS_VAL_FLOAT,
           ny = y->kind == CS_VAL_INT || y->kind == CS_VAL_FLOAT;
      if (!nx || !ny) continue;
      double dx = x->kind == CS_VAL_INT ? (double)x->i : x->f,
             dy = y->kind == CS_VAL_INT ? (double)y->i : y->f;
      v = (cs_value){.kind = CS_VAL_FLOAT, .f = dx / 2 + dy / 2};
      if (witness_try(w, &v)) return *out = v, true;
    }
  return false;
}

/* The witness of each TAKEN_RECHECK filter column, from the conditions on
** it that SQLite may check again (slots marked C). */
static int witnesses_build(csx_agg_cursor *c, const csx_agg_table *t, const csx_plan *plan, int argc,
                           sqlite3_value **argv) {
  int rc = SQLITE_OK;
  bool any = false;
  for (int s = 0; s < plan->n_slots && !any; s++) any = plan->slots[s].recheck;
  if (!any) return SQLITE_OK;
  cs_pred *preds = sqlite3_malloc64(sizeof *preds * (uint64_t)(plan->n_slots ? plan->n_slots : 1));
  void **held = sqlite3_malloc64(sizeof *held * (uint64_t)(plan->n_slots ? plan->n_slots : 1));
  uint64_t n_vals = 0;
  for (int s = 0; s < plan->n_slots && s < argc; s++)
    if (plan->slots[s].kind == 'Q' && plan->slots[s].recheck) {
      sqlite3_value *v = NULL;
      for (int r = sqlite3_vtab_in_first(argv[s], &v); r == SQLITE_OK && v;
           r = sqlite3_vtab_in_next(argv[s], &v))
        n_vals++;
    }
  cs_value *vals = sqlite3_malloc64(sizeof *vals * (n_vals ? n_vals : 1));
  void **vals_held = sqlite3_malloc64(sizeof *vals_held * (n_vals ? n_vals : 1));
  witness_search w = {0};
  int n_held = 0;
  uint64_t n_vals_held = 0;
  if (!preds || !held || !vals || !vals_held) {
    rc = SQLITE_NOMEM;
    goto done;
  }
  for (int ci = 0; ci < t->n_cols && rc == SQLITE_OK; ci++) {
    if (c->taken[ci] != TAKEN_RECHECK || t->cols[ci].kind != AGG_FILTER) continue;
    cs_type type = t->src_cols[t->cols[ci].src].type;
    int n = 0;
    bool never = false;
    uint64_t m = 0;
    for (int s = 0; s < plan->n_slots && s < argc && rc == SQLITE_OK; s++) {
      const csx_slot *sl = &plan->slots[s];
      if (!sl->recheck || sl->col != (int)t->cols[ci].src || (sl->kind != 'P' && sl->kind != 'Q')) continue;
      cs_pred *pr = &preds[n++];
      memset(pr, 0, sizeof *pr);
      if (sl->kind == 'P') {
        bool nv = false;
        held[n_held] = NULL;
        rc = csx_pred_from_value(pr, sl->op, type, argv[s], &held[n_held], &nv);
        if (held[n_held]) n_held++;
        never |= nv;
        continue;
      }
      pr->op = CS_CMP_IN;
      pr->set = vals + m;
      sqlite3_value *v = NULL;
      for (int r = sqlite3_vtab_in_first(argv[s], &v); r == SQLITE_OK && v && rc == SQLITE_OK;
           r = sqlite3_vtab_in_next(argv[s], &v)) {
        void *h = NULL;
        rc = csx_value_for_column(type, v, &vals[m++], &h);
        if (h) vals_held[n_vals_held++] = h;
        pr->n_set++;
      }
    }
    w.preds = preds, w.n_preds = n;
    cs_value found;
    if (rc != SQLITE_OK || never || !witness_find(&w, &found)) continue;
    /* the bytes must outlive the operands they may point into */
    if (found.kind == CS_VAL_TEXT || found.kind == CS_VAL_BLOB) {
      void **h = sqlite3_realloc64(c->witness_held, sizeof *h * (uint64_t)(c->n_witness_held + 1));
      uint8_t *b = sqlite3_malloc64(found.n ? found.n : 1);
      if (h) c->witness_held = h;
      if (!h || !b) {
        sqlite3_free(b);
        rc = SQLITE_NOMEM;
        continue;
      }
      if (found.n) memcpy(b, found.p, found.n);
      c->witness_held[c->n_witness_held++] = b;
      found.p = b;
    }
    c->witness[ci] = found;
    c->has_witness[ci] = 1;
  }
done:
  for (int k = 0; k < n_held; k++) sqlite3_free(held[k]);
  for (uint64_t k = 0; k < n_vals_held; k++) sqlite3_free(vals_held[k]);
  sqlite3_free(held);
  sqlite3_free(vals_held);
  sqlite3_free(preds);
  sqlite3_free(vals);
  sqlite3_free(w.buf);
  return rc;
}

/* The refusal of a plan, in words that name the cause and the rewrite. */
static int refuse_plan(csx_agg_table *t, const csx_plan *plan) {
  const agg_col *col = &t->cols[plan->refuse - 1];
  const char *ops = "=, !=, <, <=, >, >=, IS, IS NOT, IS NULL, IS NOT NULL, IN or BETWEEN";
  if ((col->kind == AGG_ROWS || col->kind == AGG_MASK) && plan->refuse_why == CSX_DECLINE_IN_UNKNOWN)
    return csx_vtab_error(
        &t->base, SQLITE_ERROR,
        "colstore: `%s = ?` of aggregate table %s is past the 32nd condition "
        "of the WHERE clause, where SQLite cannot tell it from an IN list, whose BLOBs it would hand "
        "over one at a time (each aggregated apart); put it among the first 32 conditions",
        col->name, t->zName);
  if (col->kind == AGG_ROWS || col->kind == AGG_MASK)
    return csx_plan_refuse_input(&t->base, "aggregate table", t->zName);
  switch (plan->refuse_why) {
    case REFUSE_READ:
      return csx_vtab_error(
          &t->base, SQLITE_ERROR,
          "colstore: the query reads %s of aggregate table %s, which only selects "
          "source rows: an aggregate table's rows are groups, so a condition on %s under OR, NOT, in a "
          "function, against another column, or %s in the SELECT list cannot be answered; write each "
          "condition on %s as `%s OP value` (%s) ANDed with the rest of the WHERE clause (an OR of "
          "values of one column as IN)",
          col->name, t->zName, col->name, col->name, col->name, col->name, ops);
    case REFUSE_TOO_MANY:
      return csx_vtab_error(
          &t->base, SQLITE_ERROR,
          "colstore: aggregate table %s takes at most %d conditions, and the "
          "condition on %s is past them; combine conditions (an IN list, a BETWEEN) or pass the "
          "selection as `_rows = ?`",
          t->zName, CSX_MAX_SLOTS - 2, col->name);
    case REFUSE_UNUSABLE:
      return csx_vtab_error(
          &t->base, SQLITE_ERROR,
          "colstore: a condition on %s of aggregate table %s compares it with "
          "a value SQLite does not know when it reads the table (another table's column in this join "
          "order, or another column of the table); compare it with a value or a parameter, `%s OP "
          "value` (%s), or join the aggregate table last",
          col->name, t->zName, col->name, ops);
    default:
      return csx_vtab_error(
          &t->base, SQLITE_ERROR,
          "colstore: a condition on %s of aggregate table %s cannot be handed to "
          "colstore_agg: %s; rewrite it as `%s OP value` (%s), ANDed with the rest of the WHERE "
          "clause",
          col->name, t->zName, csx_decline_words(plan->refuse_why), col->name, ops);
  }
}

static int agg_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                      sqlite3_value **argv) {
  csx_agg_cursor *c = (csx_agg_cursor *)cur;
  csx_agg_table *t = (csx_agg_table *)cur->pVtab;
  (void)idxNum;
  cursor_reset(c);
  memset(&c->stats, 0, sizeof c->stats);
  csx_plan plan;
  int rc = csx_plan_decode(idxStr, &plan);
  if (rc != SQLITE_OK) return rc;
  if (plan.refuse) return refuse_plan(t, &plan);
  cs_verify verify = CS_VERIFY_READ;
  if ((rc = source_snapshot(t, &c->snap, &verify)) != SQLITE_OK) return rc;
  sqlite3_free(c->zPlan);
  c->zPlan = sqlite3_mprintf("%s", idxStr ? idxStr : "");
  /* per table column, for the cursor's life (a failed one is tried again) */
  if (!c->taken) c->taken = sqlite3_malloc(t->n_cols);
  if (!c->has_witness) c->has_witness = sqlite3_malloc(t->n_cols);
  if (!c->witness) c->witness = sqlite3_malloc64(sizeof *c->witness * (uint64_t)t->n_cols);
  if (!c->rechecks) c->rechecks = sqlite3_malloc64(sizeof *c->rechecks * (uint64_t)t->n_cols);
  if (!c->reads) c->reads = sqlite3_malloc64(sizeof *c->reads * (uint64_t)t->n_cols);
  if (!c->taken || !c->has_witness || !c->witness || !c->rechecks || !c->reads) return SQLITE_NOMEM;
  memset(c->taken, TAKEN_NONE, (size_t)t->n_cols);
  memset(c->has_witness, 0, (size_t)t->n_cols);
  memset(c->rechecks, 0, sizeof *c->rechecks * (size_t)t->n_cols);
  memset(c->reads, 0, sizeof *c->reads * (size_t)t->n_cols);
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
      if ((sl->kind == 'P' || sl->kind == 'Q') && col->kind == AGG_FILTER && (int)col->src == sl->col &&
          c->taken[i] != TAKEN_RECHECK)
        c->taken[i] = sl->recheck ? TAKEN_RECHECK : TAKEN;
      if ((sl->kind == 'P' || sl->kind == 'Q') && col->kind == AGG_FILTER && (int)col->src == sl->col &&
          sl->recheck)
        c->rechecks[i]++;
      /* an input reads back as the BLOB it was given: a re-check holds */
      if ((sl->kind == 'R' && col->kind == AGG_ROWS) || (sl->kind == 'M' && col->kind == AGG_MASK))
        c->taken[i] = TAKEN_RECHECK;
    }
    if (sl->kind == 'P' || sl->kind == 'Q') check_cols[sl->col] = 1;
  }
  rc = csx_selection_build(&c->sel, &t->base, NULL, t->zName, c->snap, &plan, argc, argv,
                           verify != CS_VERIFY_HEADER ? check_cols : NULL);
  if (rc == SQLITE_OK) rc = witnesses_build(c, t, &plan, argc, argv);
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
  csx_agg_cursor *c = (csx_agg_cursor *)cur;
  const csx_agg_table *t = (const csx_agg_table *)cur->pVtab;
  c->g++;
  if (c->reads) memset(c->reads, 0, sizeof *c->reads * (size_t)t->n_cols);
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
    case CS_VAL_TEXT:
      sqlite3_result_text64(ctx, (const char *)v->p, v->n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case CS_VAL_BLOB: sqlite3_result_blob64(ctx, v->p, v->n, SQLITE_TRANSIENT); break;
    default: sqlite3_result_null(ctx); break;
  }
}

static int refuse_read(sqlite3_context *ctx, const csx_agg_table *t, const agg_col *col) {
  if (col->kind != AGG_FILTER) {
    csx_selection_input_read_error(ctx, "aggregate table", t->zName, col->name);
    return SQLITE_ERROR;
  }
  char *z = sqlite3_mprintf(
      "colstore: the query reads %s of aggregate table %s, which only selects source rows "
      "(a condition on it under OR, NOT, in a function or against another column, beside "
      "one the table took): write each condition on %s as `%s OP value` (=, !=, <, <=, >, "
      ">=, IS, IS NOT, IS NULL, IS NOT NULL, IN, BETWEEN) ANDed with the rest of the WHERE "
      "clause (an OR of values of one column as IN)",
      col->name, t->zName, col->name, col->name);
  sqlite3_result_error(ctx, z ? z : "colstore: a filter column cannot be read", -1);
  sqlite3_free(z);
  return SQLITE_ERROR;
}

static int refuse_contradiction(sqlite3_context *ctx, const csx_agg_table *t, const agg_col *col) {
  char *z = sqlite3_mprintf(
      "colstore: SQLite checks conditions on %s of aggregate table %s again itself, on the output "
      "rows (those past the 16th condition of the WHERE clause, and IS NOT NULL), and no value "
      "satisfies them all, so it would drop the row that says no source row matched; remove the "
      "conditions on %s that contradict each other, or give at most 16 conditions",
      col->name, t->zName, col->name);
  sqlite3_result_error(ctx, z ? z : "colstore: contradictory conditions", -1);
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
      /* SQLite checks a taken condition again (may_recheck): the witness,
      ** once per such condition and row; a read beyond them is for
      ** something else (an OR, a function) and fails before the row is
      ** given out */
      if (c->taken[i] != TAKEN_RECHECK || ++c->reads[i] > c->rechecks[i]) return refuse_read(ctx, t, col);
      if (!c->has_witness[i]) return refuse_contradiction(ctx, t, col);
      result_value(ctx, &c->witness[i]);
      return SQLITE_OK;
    case AGG_ROWS:
    case AGG_MASK: {
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
        char *z = sqlite3_mprintf(
            "colstore: integer overflow in %s of %s (SQLite's sum() fails the same way; "
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
    case AGG_MIN:
      if (r.count) result_value(ctx, &r.min);
      break;
    case AGG_MAX:
      if (r.count) result_value(ctx, &r.max);
      break;
    default: break;
  }
  return SQLITE_OK;
}

/* SQLite asks for the rowid of a row when it answers an OR branch by
** branch (a MULTI-INDEX OR plan merges the branches' rows by rowid); the
** planner keeps such plans dearer than the one refused scan, and this
** refuses what remains: aggregates of the branches are not those of the
** OR.  The group number is no rowid a query could use anyway. */
static int agg_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid) {
  csx_agg_table *t = (csx_agg_table *)cur->pVtab;
  (void)pRowid;
  return csx_vtab_error(
      &t->base, SQLITE_ERROR,
      "colstore: aggregate table %s has no rowid (its rows are groups), and "
      "an OR of conditions on its filter columns cannot be answered branch by branch; write the "
      "conditions as `column OP value` ANDed together (an OR of values of one column as IN)",
      t->zName);
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
