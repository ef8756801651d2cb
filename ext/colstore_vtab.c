/*
** colstore_vtab.c - the colstore virtual table: connect, plan, scan.
**
** A table is a path plus a snapshot of the store's last committed state.
** Each statement that opens the first cursor on a table checks (two small
** preads) whether another connection or process has committed since, and
** if so opens a fresh snapshot; a cursor keeps its snapshot alive, so the
** values it hands to SQLite as SQLITE_STATIC (TEXT and BLOB straight from
** the mapping) stay valid however long SQLite holds them within the
** statement.
**
** The plan (xBestIndex -> xFilter contract), argv in this order:
**
**   idxNum bit        meaning                         argv
**   CSX_PLAN_EQ       rowid = ?                       [eq]
**   CSX_PLAN_LO       rowid > ? (or >= with _LO_INC)  [lo]
**   CSX_PLAN_HI       rowid < ? (or <= with _HI_INC)  [hi]
**   CSX_PLAN_ORDERED  ORDER BY rowid ASC consumed     -
**
** idxStr is the plan in words for EXPLAIN QUERY PLAN, e.g.
** "range(rowid) cols(a,b)"; it is not parsed back.  Constraints on other
** columns are left to SQLite in this version (it evaluates them on the rows
** we return); the hidden _rows and _mask columns are declared now and
** refused with a clear error until their kernels exist.
**
** rowid constraints are omitted (SQLite does not re-check them) because
** xFilter implements SQLite's comparison exactly: the right-hand side gets
** INTEGER affinity first (so '5' means 5), a REAL bound rounds the right
** way, NULL matches nothing, and a TEXT or BLOB that is not a number sorts
** above every integer.
*/
#include <math.h>
#include <string.h>

#include "colstore_ext.h"

#define CSX_PLAN_EQ 0x01
#define CSX_PLAN_LO 0x02
#define CSX_PLAN_LO_INC 0x04
#define CSX_PLAN_HI 0x08
#define CSX_PLAN_HI_INC 0x10
#define CSX_PLAN_ORDERED 0x20

typedef struct csx_cursor {
  sqlite3_vtab_cursor base;  /* must be first */
  csx_snapshot *snap;        /* one ref held while open */
  const cs_store *store;     /* snap->store */
  uint64_t row;              /* current row */
  uint64_t end;              /* one past the last row to return */
  uint64_t rec;              /* record holding row */
  uint64_t rec_first;        /* first row of rec */
  uint64_t rec_end;          /* one past the last row of rec */
  const cs_chunk *chunks;    /* rec's chunks, one per column */
  const cs_column *cols;     /* the store's columns (types), for xColumn */
  uint32_t n_cols;
} csx_cursor;

/* ------------------------------------------------------------ snapshots */

static csx_snapshot *snapshot_new(cs_store *store) {
  csx_snapshot *s = sqlite3_malloc(sizeof *s);
  if (!s) return NULL;
  s->store = store;
  s->n_refs = 1;
  return s;
}

void csx_snapshot_release(csx_snapshot *s) {
  if (s && --s->n_refs == 0) {
    cs_store_close(s->store);
    sqlite3_free(s);
  }
}

bool csx_schema_equal(const cs_schema *a, const cs_schema *b) {
  if (a->n_cols != b->n_cols) return false;
  for (uint32_t i = 0; i < a->n_cols; i++)
    if (a->cols[i].type != b->cols[i].type || a->cols[i].nullable != b->cols[i].nullable || strcmp(a->cols[i].name, b->cols[i].name) != 0)
      return false;
  return true;
}

int csx_table_refresh(csx_table *pTab) {
  if (pTab->n_open_cursors > 0) return SQLITE_OK;
  cs_err err = {0};
  bool current = true;
  cs_rc rc = cs_store_is_current(pTab->snap->store, &current, &err);
  if (rc == CS_OK && current) return SQLITE_OK;
  cs_store *store = NULL;
  if (rc == CS_OK) rc = cs_store_open(pTab->zPath, CS_VERIFY_HEADER, &store, &err);
  if (rc != CS_OK) return csx_vtab_error(&pTab->base, csx_rc_to_sqlite(rc), "%s", err.msg);
  if (!csx_schema_equal(cs_store_schema(store), cs_store_schema(pTab->snap->store))) {
    cs_store_close(store);
    return csx_vtab_error(&pTab->base, SQLITE_SCHEMA,
                          "colstore: %s was replaced by a store with another schema; DROP TABLE %s and create it again", pTab->zPath,
                          pTab->zName);
  }
  csx_snapshot *s = snapshot_new(store);
  if (!s) {
    cs_store_close(store);
    return SQLITE_NOMEM;
  }
  csx_snapshot_release(pTab->snap);
  pTab->snap = s;
  return SQLITE_OK;
}

/* ------------------------------------------------------- create/connect */

/* Strips one level of SQL quotes ('x', "x", `x`, [x]) into a new string. */
static char *unquote(const char *z, int n) {
  while (n > 0 && (*z == ' ' || *z == '\t' || *z == '\n')) z++, n--;
  while (n > 0 && (z[n - 1] == ' ' || z[n - 1] == '\t' || z[n - 1] == '\n')) n--;
  char q = n >= 2 ? z[0] : 0;
  char close = q == '[' ? ']' : q;
  if ((q == '\'' || q == '"' || q == '`' || q == '[') && z[n - 1] == close) {
    char *out = sqlite3_malloc(n);
    if (!out) return NULL;
    int j = 0;
    for (int i = 1; i < n - 1; i++) {
      out[j++] = z[i];
      if (z[i] == close && i + 1 < n - 1 && z[i + 1] == close) i++;
    }
    out[j] = 0;
    return out;
  }
  return sqlite3_mprintf("%.*s", n, z);
}

typedef struct csx_coldefs {
  int n;
  cs_column cols[CS_MAX_COLUMNS];
  char *names[CS_MAX_COLUMNS];
} csx_coldefs;

static void coldefs_free(csx_coldefs *d) {
  if (!d) return;
  for (int i = 0; i < d->n; i++) sqlite3_free(d->names[i]);
  sqlite3_free(d);
}

static int is_word(const char *z, int n, const char *w) {
  return (int)strlen(w) == n && sqlite3_strnicmp(z, w, n) == 0;
}

/* Parses "name TYPE [NOT NULL]"; the name may be quoted. */
static int coldef_parse(const char *z, csx_coldefs *d, char **pzErr) {
  const char *p = z;
  while (*p == ' ' || *p == '\t' || *p == '\n') p++;
  const char *name = p;
  if (*p == '"' || *p == '`' || *p == '[' || *p == '\'') {
    char close = *p == '[' ? ']' : *p;
    p++;
    while (*p && !(*p == close && p[1] != close)) p += (*p == close) ? 2 : 1;
    if (*p) p++;
  } else {
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
  }
  int name_n = (int)(p - name);
  while (*p == ' ' || *p == '\t' || *p == '\n') p++;
  const char *type = p;
  const char *end = p + strlen(p);
  while (end > type && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n')) end--;
  bool not_null = false;
  /* A trailing NOT NULL, with any spacing. */
  const char *q = end;
  while (q > type && q[-1] != ' ' && q[-1] != '\t') q--;
  if (is_word(q, (int)(end - q), "NULL")) {
    const char *r = q;
    while (r > type && (r[-1] == ' ' || r[-1] == '\t')) r--;
    const char *s = r;
    while (s > type && s[-1] != ' ' && s[-1] != '\t') s--;
    if (is_word(s, (int)(r - s), "NOT")) {
      not_null = true;
      end = s;
      while (end > type && (end[-1] == ' ' || end[-1] == '\t')) end--;
    }
  }
  char *zName = unquote(name, name_n);
  if (!zName) return SQLITE_NOMEM;
  cs_type t = cs_type_parse(type, (size_t)(end - type));
  if (name_n == 0 || end == type || t == 0) {
    *pzErr = sqlite3_mprintf("colstore: cannot read the column definition '%s': expected `name TYPE [NOT NULL]` with TYPE one of "
                             "INT8 INT16 INT32 INT64 UINT8 UINT16 UINT32 FLOAT32 FLOAT64 BOOL TEXT BLOB (or INTEGER, INT, BIGINT, REAL, "
                             "DOUBLE, FLOAT, BOOLEAN, VARCHAR(n), CHAR(n), STRING)", z);
    sqlite3_free(zName);
    return SQLITE_ERROR;
  }
  if (d->n >= CS_MAX_COLUMNS) {
    sqlite3_free(zName);
    *pzErr = sqlite3_mprintf("colstore: too many columns (at most %d)", CS_MAX_COLUMNS);
    return SQLITE_ERROR;
  }
  for (int i = 0; i < d->n; i++)
    if (sqlite3_stricmp(d->names[i], zName) == 0) {
      *pzErr = sqlite3_mprintf("colstore: column %s is defined twice", zName);
      sqlite3_free(zName);
      return SQLITE_ERROR;
    }
  if (sqlite3_stricmp(zName, "_rows") == 0 || sqlite3_stricmp(zName, "_mask") == 0 || sqlite3_stricmp(zName, "rowid") == 0) {
    *pzErr = sqlite3_mprintf("colstore: column name %s is reserved; choose another name", zName);
    sqlite3_free(zName);
    return SQLITE_ERROR;
  }
  d->names[d->n] = zName;
  d->cols[d->n] = (cs_column){zName, t, !not_null};
  d->n++;
  return SQLITE_OK;
}

/* Compares the definitions a user gave with the store's schema. */
static int schema_match(const cs_schema *have, const csx_coldefs *want, const char *zPath, char **pzErr) {
  if ((int)have->n_cols != want->n) {
    *pzErr = sqlite3_mprintf("colstore: %s has %u columns but the definition gives %d; omit the column definitions to use the file's schema",
                             zPath, have->n_cols, want->n);
    return SQLITE_ERROR;
  }
  for (int i = 0; i < want->n; i++) {
    const cs_column *a = &have->cols[i], *b = &want->cols[i];
    if (strcmp(a->name, b->name) != 0 || a->type != b->type || a->nullable != b->nullable) {
      *pzErr = sqlite3_mprintf("colstore: %s: column %d is %s %s%s in the file but %s %s%s in the definition", zPath, i + 1, a->name,
                               cs_type_name(a->type), a->nullable ? "" : " NOT NULL", b->name, cs_type_name(b->type),
                               b->nullable ? "" : " NOT NULL");
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

static const char *affinity_name(cs_type t) {
  if (cs_type_is_float(t)) return "REAL";
  if (t == CS_TYPE_TEXT) return "TEXT";
  if (t == CS_TYPE_BLOB) return "BLOB";
  return "INTEGER";
}

static int declare(sqlite3 *db, const cs_schema *schema) {
  sqlite3_str *s = sqlite3_str_new(db);
  sqlite3_str_appendall(s, "CREATE TABLE x(");
  for (uint32_t i = 0; i < schema->n_cols; i++)
    sqlite3_str_appendf(s, "\"%w\" %s, ", schema->cols[i].name, affinity_name(schema->cols[i].type));
  sqlite3_str_appendall(s, "\"_rows\" BLOB HIDDEN, \"_mask\" BLOB HIDDEN)");
  char *zSql = sqlite3_str_finish(s);
  if (!zSql) return SQLITE_NOMEM;
  int rc = sqlite3_declare_vtab(db, zSql);
  sqlite3_free(zSql);
  return rc;
}

/* argv[3] is SOURCE; then column defs and option=value, in any order. */
static int table_init(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab, char **pzErr,
                      bool create) {
  int rc = SQLITE_OK;
  csx_table *pTab = NULL;
  csx_coldefs *defs = NULL;
  cs_store *store = NULL;
  cs_err err = {0};
  if (argc < 4) {
    *pzErr = sqlite3_mprintf("colstore: give the store path: CREATE VIRTUAL TABLE t USING colstore('file.cst' [, name TYPE ...])");
    return SQLITE_ERROR;
  }
  pTab = sqlite3_malloc(sizeof *pTab);
  defs = sqlite3_malloc(sizeof *defs);
  if (!pTab || !defs) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  memset(pTab, 0, sizeof *pTab);
  defs->n = 0;
  pTab->db = db;
  pTab->conn = pAux;
  pTab->verify = CS_VERIFY_HEADER;
  pTab->zName = sqlite3_mprintf("%s", argv[2]);
  pTab->zPath = unquote(argv[3], (int)strlen(argv[3]));
  if (!pTab->zName || !pTab->zPath) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  if (pTab->zPath[0] == 0) {
    *pzErr = sqlite3_mprintf("colstore: the store path is empty");
    rc = SQLITE_ERROR;
    goto fail;
  }
  for (int i = 4; i < argc; i++) {
    const char *z = argv[i];
    const char *eq = strchr(z, '=');
    const char *sp = z + strcspn(z, " \t\n");
    if (eq && eq < sp + 1 + strspn(sp, " \t\n")) {
      char *key = unquote(z, (int)(eq - z)), *val = unquote(eq + 1, (int)strlen(eq + 1));
      int ok = key && val && sqlite3_stricmp(key, "verify") == 0;
      if (ok && sqlite3_stricmp(val, "header") == 0) pTab->verify = CS_VERIFY_HEADER;
      else if (ok && sqlite3_stricmp(val, "full") == 0) pTab->verify = CS_VERIFY_FULL;
      else *pzErr = sqlite3_mprintf("colstore: unknown option %s; the options are verify=header and verify=full", z);
      sqlite3_free(key);
      sqlite3_free(val);
      if (*pzErr) {
        rc = SQLITE_ERROR;
        goto fail;
      }
      continue;
    }
    if ((rc = coldef_parse(z, defs, pzErr)) != SQLITE_OK) goto fail;
  }
  cs_rc crc = cs_store_open(pTab->zPath, pTab->verify, &store, &err);
  if (crc == CS_ENOENT && create && defs->n > 0) {
    cs_schema schema = {(uint32_t)defs->n, defs->cols};
    cs_writer *w = NULL;
    crc = cs_writer_create(pTab->zPath, &schema, NULL, &w, &err);
    if (crc == CS_OK) crc = cs_writer_commit(w, &err);
    if (crc == CS_OK) crc = cs_store_open(pTab->zPath, pTab->verify, &store, &err);
  } else if (crc == CS_ENOENT) {
    *pzErr = create ? sqlite3_mprintf("colstore: %s does not exist; give column definitions to create a new store, e.g. "
                                      "colstore('%s', a FLOAT64, b INT64)", pTab->zPath, pTab->zPath)
                    : sqlite3_mprintf("colstore: %s does not exist any more; table %s cannot be read", pTab->zPath, pTab->zName);
    rc = SQLITE_CANTOPEN;
    goto fail;
  }
  if (crc != CS_OK) {
    *pzErr = sqlite3_mprintf("%s", err.msg);
    rc = csx_rc_to_sqlite(crc);
    goto fail;
  }
  if (defs->n > 0 && (rc = schema_match(cs_store_schema(store), defs, pTab->zPath, pzErr)) != SQLITE_OK) goto fail;
  if ((rc = declare(db, cs_store_schema(store))) != SQLITE_OK) {
    *pzErr = sqlite3_mprintf("colstore: cannot declare the table: %s", sqlite3_errmsg(db));
    goto fail;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  if (!(pTab->snap = snapshot_new(store))) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  store = NULL;
  pTab->next = pTab->conn->tables;
  pTab->conn->tables = pTab;
  coldefs_free(defs);
  *ppVtab = &pTab->base;
  return SQLITE_OK;
fail:
  cs_store_close(store);
  coldefs_free(defs);
  if (pTab) {
    sqlite3_free(pTab->zName);
    sqlite3_free(pTab->zPath);
    sqlite3_free(pTab);
  }
  return rc;
}

static int xCreate(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab, char **pzErr) {
  return table_init(db, pAux, argc, argv, ppVtab, pzErr, true);
}

static int xConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab, char **pzErr) {
  return table_init(db, pAux, argc, argv, ppVtab, pzErr, false);
}

/* DROP TABLE never touches the store file: xDestroy is xDisconnect. */
static int xDisconnect(sqlite3_vtab *pVtab) {
  csx_table *pTab = (csx_table *)pVtab;
  for (csx_table **pp = &pTab->conn->tables; *pp; pp = &(*pp)->next)
    if (*pp == pTab) {
      *pp = pTab->next;
      break;
    }
  csx_table_write_free(pTab);
  csx_snapshot_release(pTab->snap);
  sqlite3_free(pTab->zName);
  sqlite3_free(pTab->zPath);
  sqlite3_free(pTab);
  return SQLITE_OK;
}

static int xRename(sqlite3_vtab *pVtab, const char *zNew) {
  csx_table *pTab = (csx_table *)pVtab;
  char *z = sqlite3_mprintf("%s", zNew);
  if (!z) return SQLITE_NOMEM;
  sqlite3_free(pTab->zName);
  pTab->zName = z;
  return SQLITE_OK;
}

/* ----------------------------------------------------------------- plan */

/* Row bounds [lo, hi) for one rowid comparison, per SQLite's rules. */
static void bound_apply(sqlite3_value *v, int op, uint64_t n_rows, uint64_t *lo, uint64_t *hi) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
    sqlite3_value *dup = sqlite3_value_dup(v);
    if (dup) {
      /* rowid has INTEGER affinity: numeric-looking text compares as a number. */
      int nt = t == SQLITE_TEXT ? sqlite3_value_numeric_type(dup) : SQLITE_BLOB;
      if (nt == SQLITE_INTEGER || nt == SQLITE_FLOAT) {
        bound_apply(dup, op, n_rows, lo, hi);
        sqlite3_value_free(dup);
        return;
      }
      sqlite3_value_free(dup);
    }
    /* Every integer sorts below any TEXT or BLOB. */
    if (op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE) return;
    *hi = 0;
    return;
  }
  if (t == SQLITE_NULL) {
    *hi = 0;
    return;
  }
  /* Integer bounds as doubles are exact only below 2^53; work in the
  ** integer domain where the value is an integer, else round. */
  double d = sqlite3_value_double(v);
  bool is_int = t == SQLITE_INTEGER;
  sqlite3_int64 i = sqlite3_value_int64(v);
  sqlite3_int64 lo_i, hi_i; /* candidate [lo_i, hi_i) in signed space, clamped below */
  const double two63 = 9223372036854775808.0;
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      if (!is_int) {
        if (!(d >= -two63 && d < two63) || d != floor(d)) {
          *hi = 0;
          return;
        }
        i = (sqlite3_int64)d;
      }
      lo_i = i;
      hi_i = i == INT64_MAX ? i : i + 1;
      if (i == INT64_MAX) { *hi = 0; return; }
      break;
    case SQLITE_INDEX_CONSTRAINT_GT:
    case SQLITE_INDEX_CONSTRAINT_GE: {
      bool inc = op == SQLITE_INDEX_CONSTRAINT_GE;
      if (!is_int) {
        if (d >= two63) { *hi = 0; return; }
        if (d < -two63) return;
        double f = inc ? ceil(d) : floor(d) + 1.0;
        if (f >= two63) { *hi = 0; return; }
        lo_i = (sqlite3_int64)f;
      } else {
        if (!inc && i == INT64_MAX) { *hi = 0; return; }
        lo_i = inc ? i : i + 1;
      }
      if (lo_i > 0 && (uint64_t)lo_i > *lo) *lo = (uint64_t)lo_i;
      return;
    }
    default: { /* LT, LE */
      bool inc = op == SQLITE_INDEX_CONSTRAINT_LE;
      if (!is_int) {
        if (d >= two63) return;
        if (d < -two63) { *hi = 0; return; }
        double f = inc ? floor(d) + 1.0 : ceil(d);
        if (f >= two63) return;
        hi_i = (sqlite3_int64)f;
      } else {
        if (inc && i == INT64_MAX) return;
        hi_i = inc ? i + 1 : i;
      }
      if (hi_i <= 0) *hi = 0;
      else if ((uint64_t)hi_i < *hi) *hi = (uint64_t)hi_i;
      return;
    }
  }
  /* EQ */
  if (lo_i < 0 || (uint64_t)lo_i >= n_rows) {
    *hi = 0;
    return;
  }
  if ((uint64_t)lo_i > *lo) *lo = (uint64_t)lo_i;
  if ((uint64_t)hi_i < *hi) *hi = (uint64_t)hi_i;
}

static int xBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  csx_table *pTab = (csx_table *)pVtab;
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  int n_cols = (int)schema->n_cols;
  int i_eq = -1, i_lo = -1, i_hi = -1;
  for (int i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if (c->iColumn >= n_cols)
      return csx_vtab_error(pVtab, SQLITE_ERROR, "colstore: selecting rows with %s is not yet supported by this build; use rowid ranges instead",
                            c->iColumn == n_cols + CSX_HIDDEN_ROWS ? "_rows" : "_mask");
    if (!c->usable || c->iColumn != -1) continue;
    switch (c->op) {
      case SQLITE_INDEX_CONSTRAINT_EQ: if (i_eq < 0) i_eq = i; break;
      case SQLITE_INDEX_CONSTRAINT_GT: case SQLITE_INDEX_CONSTRAINT_GE: if (i_lo < 0) i_lo = i; break;
      case SQLITE_INDEX_CONSTRAINT_LT: case SQLITE_INDEX_CONSTRAINT_LE: if (i_hi < 0) i_hi = i; break;
      default: break;
    }
  }
  int idxNum = 0, argv_i = 0;
  double n = (double)cs_store_rows(pTab->snap->store), rows = n;
  if (i_eq >= 0) {
    idxNum |= CSX_PLAN_EQ;
    pInfo->aConstraintUsage[i_eq].argvIndex = ++argv_i;
    pInfo->aConstraintUsage[i_eq].omit = 1;
    pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
    rows = 1;
    i_lo = i_hi = -1; /* SQLite re-checks the rest; the one row is cheap */
  }
  uint64_t est_lo = 0, est_hi = (uint64_t)n;
  if (i_lo >= 0) {
    int op = pInfo->aConstraint[i_lo].op;
    idxNum |= CSX_PLAN_LO | (op == SQLITE_INDEX_CONSTRAINT_GE ? CSX_PLAN_LO_INC : 0);
    pInfo->aConstraintUsage[i_lo].argvIndex = ++argv_i;
    pInfo->aConstraintUsage[i_lo].omit = 1;
    sqlite3_value *v = NULL;
    if (sqlite3_libversion_number() >= 3038000 && sqlite3_vtab_rhs_value(pInfo, i_lo, &v) == SQLITE_OK && v)
      bound_apply(v, op, (uint64_t)n, &est_lo, &est_hi);
    else
      est_lo = (uint64_t)(n * 0.75);
  }
  if (i_hi >= 0) {
    int op = pInfo->aConstraint[i_hi].op;
    idxNum |= CSX_PLAN_HI | (op == SQLITE_INDEX_CONSTRAINT_LE ? CSX_PLAN_HI_INC : 0);
    pInfo->aConstraintUsage[i_hi].argvIndex = ++argv_i;
    pInfo->aConstraintUsage[i_hi].omit = 1;
    sqlite3_value *v = NULL;
    if (sqlite3_libversion_number() >= 3038000 && sqlite3_vtab_rhs_value(pInfo, i_hi, &v) == SQLITE_OK && v)
      bound_apply(v, op, (uint64_t)n, &est_lo, &est_hi);
    else
      est_hi = est_lo + (est_hi - est_lo) / 4;
  }
  if (!(idxNum & CSX_PLAN_EQ)) rows = est_hi > est_lo ? (double)(est_hi - est_lo) : 0;
  if (pInfo->nOrderBy == 1 && pInfo->aOrderBy[0].iColumn == -1 && !pInfo->aOrderBy[0].desc) {
    idxNum |= CSX_PLAN_ORDERED;
    pInfo->orderByConsumed = 1;
  }
  /* Cost: a fixed start-up plus a per-row cost that grows with the columns
  ** read, so SQLite prefers the narrowest and most selective plan. */
  int n_used = 0;
  for (int c = 0; c < n_cols && c < 63; c++) n_used += (pInfo->colUsed >> c) & 1;
  if (n_cols >= 63 && (pInfo->colUsed >> 63)) n_used += n_cols - 63;
  pInfo->estimatedRows = (sqlite3_int64)(rows < 1 && (idxNum & CSX_PLAN_EQ) ? 1 : rows);
  pInfo->estimatedCost = 10.0 + rows * (1.0 + 0.1 * n_used);
  pInfo->idxNum = idxNum;

  sqlite3_str *s = sqlite3_str_new(NULL);
  if (idxNum & CSX_PLAN_EQ) sqlite3_str_appendall(s, "eq(rowid)");
  else if (idxNum & (CSX_PLAN_LO | CSX_PLAN_HI)) sqlite3_str_appendall(s, "range(rowid)");
  else sqlite3_str_appendall(s, "scan");
  if (idxNum & CSX_PLAN_ORDERED) sqlite3_str_appendall(s, " order(rowid)");
  sqlite3_str_appendall(s, " cols(");
  for (int c = 0, first = 1; c < n_cols; c++)
    if ((pInfo->colUsed >> (c < 63 ? c : 63)) & 1) {
      sqlite3_str_appendf(s, "%s%s", first ? "" : ",", schema->cols[c].name);
      first = 0;
    }
  sqlite3_str_appendall(s, ")");
  pInfo->idxStr = sqlite3_str_finish(s);
  pInfo->needToFreeIdxStr = 1;
  return pInfo->idxStr ? SQLITE_OK : SQLITE_NOMEM;
}

/* --------------------------------------------------------------- cursor */

static int xOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  (void)pVtab;
  csx_cursor *pCur = sqlite3_malloc(sizeof *pCur);
  if (!pCur) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof *pCur);
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static void cursor_release(csx_cursor *pCur) {
  if (pCur->snap) {
    csx_table *pTab = (csx_table *)pCur->base.pVtab;
    pTab->n_open_cursors--;
    csx_snapshot_release(pCur->snap);
    pCur->snap = NULL;
  }
}

static int xClose(sqlite3_vtab_cursor *cur) {
  csx_cursor *pCur = (csx_cursor *)cur;
  cursor_release(pCur);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

static void cursor_seek_record(csx_cursor *pCur) {
  const cs_store *s = pCur->store;
  pCur->rec = cs_store_find_record(s, pCur->row);
  pCur->rec_first = cs_store_record_first_row(s, pCur->rec);
  pCur->rec_end = cs_store_record_first_row(s, pCur->rec + 1);
  pCur->chunks = cs_store_chunk(s, pCur->rec, 0);
}

static int xFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  csx_cursor *pCur = (csx_cursor *)cur;
  csx_table *pTab = (csx_table *)cur->pVtab;
  (void)idxStr;
  /* A cursor keeps its first snapshot across re-filters (the inner loop of
  ** a join filters once per outer row), so one statement sees one state. */
  if (!pCur->snap) {
    int rc = csx_table_refresh(pTab);
    if (rc != SQLITE_OK) return rc;
    pCur->snap = pTab->snap;
    pCur->snap->n_refs++;
    pTab->n_open_cursors++;
    pCur->store = pCur->snap->store;
    pCur->cols = cs_store_schema(pCur->store)->cols;
    pCur->n_cols = cs_store_schema(pCur->store)->n_cols;
  }
  uint64_t n = cs_store_rows(pCur->store), lo = 0, hi = n;
  int a = 0;
  if ((idxNum & CSX_PLAN_EQ) && a < argc) bound_apply(argv[a++], SQLITE_INDEX_CONSTRAINT_EQ, n, &lo, &hi);
  if ((idxNum & CSX_PLAN_LO) && a < argc)
    bound_apply(argv[a++], (idxNum & CSX_PLAN_LO_INC) ? SQLITE_INDEX_CONSTRAINT_GE : SQLITE_INDEX_CONSTRAINT_GT, n, &lo, &hi);
  if ((idxNum & CSX_PLAN_HI) && a < argc)
    bound_apply(argv[a++], (idxNum & CSX_PLAN_HI_INC) ? SQLITE_INDEX_CONSTRAINT_LE : SQLITE_INDEX_CONSTRAINT_LT, n, &lo, &hi);
  pCur->row = lo;
  pCur->end = hi > lo ? hi : lo;
  if (pCur->row < pCur->end) cursor_seek_record(pCur);
  return SQLITE_OK;
}

static int xNext(sqlite3_vtab_cursor *cur) {
  csx_cursor *pCur = (csx_cursor *)cur;
  if (++pCur->row >= pCur->rec_end && pCur->row < pCur->end) cursor_seek_record(pCur);
  return SQLITE_OK;
}

static int xEof(sqlite3_vtab_cursor *cur) {
  const csx_cursor *pCur = (const csx_cursor *)cur;
  return pCur->row >= pCur->end;
}

static int xColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
  csx_cursor *pCur = (csx_cursor *)cur;
  if ((uint32_t)i >= pCur->n_cols) return SQLITE_OK; /* hidden columns read as NULL */
  const cs_chunk *ch = &pCur->chunks[i];
  uint64_t k = pCur->row - pCur->rec_first;
  if (!cs_chunk_is_valid(ch, k)) return SQLITE_OK;
  const void *d = ch->data;
  switch (pCur->cols[i].type) {
    case CS_TYPE_FLOAT64: sqlite3_result_double(ctx, ((const double *)d)[k]); break;
    case CS_TYPE_INT64: sqlite3_result_int64(ctx, ((const int64_t *)d)[k]); break;
    case CS_TYPE_INT32: sqlite3_result_int64(ctx, ((const int32_t *)d)[k]); break;
    case CS_TYPE_FLOAT32: sqlite3_result_double(ctx, ((const float *)d)[k]); break;
    case CS_TYPE_INT16: sqlite3_result_int64(ctx, ((const int16_t *)d)[k]); break;
    case CS_TYPE_INT8: sqlite3_result_int64(ctx, ((const int8_t *)d)[k]); break;
    case CS_TYPE_UINT32: sqlite3_result_int64(ctx, ((const uint32_t *)d)[k]); break;
    case CS_TYPE_UINT16: sqlite3_result_int64(ctx, ((const uint16_t *)d)[k]); break;
    case CS_TYPE_UINT8: sqlite3_result_int64(ctx, ((const uint8_t *)d)[k]); break;
    case CS_TYPE_BOOL: sqlite3_result_int64(ctx, ((const uint8_t *)d)[k] != 0); break;
    case CS_TYPE_TEXT:
    case CS_TYPE_BLOB: {
      const uint8_t *p;
      uint64_t len;
      cs_err err;
      if (cs_chunk_varlen(ch, k, &p, &len, &err) != CS_OK) {
        sqlite3_result_error(ctx, err.msg, -1);
        sqlite3_result_error_code(ctx, SQLITE_CORRUPT);
        return SQLITE_CORRUPT;
      }
      if (pCur->cols[i].type == CS_TYPE_TEXT)
        sqlite3_result_text64(ctx, (const char *)p, len, SQLITE_STATIC, SQLITE_UTF8);
      else
        sqlite3_result_blob64(ctx, p, len, SQLITE_STATIC);
      break;
    }
  }
  return SQLITE_OK;
}

static int xRowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid) {
  *pRowid = (sqlite3_int64)((csx_cursor *)cur)->row;
  return SQLITE_OK;
}

sqlite3_module csx_module = {
    /* iVersion    */ 3,
    /* xCreate     */ xCreate,
    /* xConnect    */ xConnect,
    /* xBestIndex  */ xBestIndex,
    /* xDisconnect */ xDisconnect,
    /* xDestroy    */ xDisconnect,
    /* xOpen       */ xOpen,
    /* xClose      */ xClose,
    /* xFilter     */ xFilter,
    /* xNext       */ xNext,
    /* xEof        */ xEof,
    /* xColumn     */ xColumn,
    /* xRowid      */ xRowid,
    /* xUpdate     */ csx_update,
    /* xBegin      */ csx_begin,
    /* xSync       */ csx_sync,
    /* xCommit     */ csx_commit,
    /* xRollback   */ csx_rollback,
    /* xFindFunction */ NULL,
    /* xRename     */ xRename,
    /* xSavepoint  */ csx_savepoint,
    /* xRelease    */ csx_release,
    /* xRollbackTo */ csx_rollback_to,
    /* xShadowName */ NULL,
};
