/*
** colstore_vtab.c - the colstore virtual table: create, connect, rename,
** and the module's slot table.
**
** A table is a path plus a snapshot of the store's last committed state.
** The first cursor a statement opens on a table checks (two small preads
** and a stat) whether another connection or process has committed since,
** or replaced the file, and if so opens a fresh snapshot (of a dataset:
** opening only its new or changed files, cs_store_reopen); a cursor keeps
** its snapshot alive, so the values it hands to SQLite as SQLITE_STATIC
** (TEXT and BLOB straight from the mapping) stay valid however long SQLite
** holds them within the statement.  Snapshots are in colstore_snapshot.c,
** planning in colstore_plan.c, the cursor in colstore_cursor.c, writing in
** colstore_write.c.
*/
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colstore_ext.h"

/* ------------------------------------------------------- create/connect */

/* Strips one level of SQL quotes ('x', "x", `x`, [x]) into a new string. */
char *csx_unquote(const char *z, int n) {
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

/* SOURCE, unquoted and made absolute, so the table keeps naming the same
** store if the process later changes its working directory. */
char *csx_path_absolute(const char *zArg) {
  char *z = csx_unquote(zArg, (int)strlen(zArg));
  if (!z || z[0] == '/' || z[0] == 0) return z;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return z;
  char *abs =
      sqlite3_mprintf("%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, z[0] == '.' && z[1] == '/' ? z + 2 : z);
  sqlite3_free(z);
  return abs;
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
  char *zName = csx_unquote(name, name_n);
  if (!zName) return SQLITE_NOMEM;
  cs_type t = cs_type_parse(type, (size_t)(end - type));
  if (name_n == 0 || end == type || t == 0) {
    *pzErr = sqlite3_mprintf(
        "colstore: cannot read the column definition '%s': expected `name TYPE [NOT NULL]` with TYPE one of "
        "INT8 INT16 INT32 INT64 UINT8 UINT16 UINT32 FLOAT32 FLOAT64 BOOL TEXT BLOB (or INTEGER, INT, BIGINT, "
        "REAL, "
        "DOUBLE, FLOAT, BOOLEAN, VARCHAR(n), CHAR(n), STRING)",
        z);
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
  if (sqlite3_stricmp(zName, "_rows") == 0 || sqlite3_stricmp(zName, "_mask") == 0 ||
      sqlite3_stricmp(zName, "rowid") == 0) {
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
/* A regular file of no bytes (what `touch` or an aborted copy leaves). */
static bool is_empty_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

/* The store a table names is not there.  A relative path is looked up from
** the current directory, which is not the database file's: a table saved
** in a database and opened from elsewhere misses its store, so the message
** gives the path as written, where it was looked for, and suggests an
** absolute path. */
static char *missing_store_message(const csx_table *pTab, const char *zWritten, bool create) {
  char *written = csx_unquote(zWritten, (int)strlen(zWritten));
  char *where = written && written[0] != '/'
                    ? sqlite3_mprintf(
                          "'%s' (a relative path, looked for from the current directory as %s; an absolute "
                          "path opens from any directory)",
                          written, pTab->zPath)
                    : sqlite3_mprintf("%s", pTab->zPath);
  sqlite3_free(written);
  if (!where) return NULL;
  char *z = create
                ? sqlite3_mprintf(
                      "colstore: %s does not exist; give column definitions to create a new store, e.g. "
                      "colstore('%s', a FLOAT64, b INT64)",
                      where, pTab->zPath)
                : sqlite3_mprintf(
                      "colstore: the store of table %s, %s, does not exist any more; put the file back, or "
                      "DROP TABLE %s and create it again with the store's path",
                      pTab->zName, where, pTab->zName);
  sqlite3_free(where);
  return z;
}

static int schema_match(const cs_schema *have, const csx_coldefs *want, const char *zPath, char **pzErr) {
  if ((int)have->n_cols != want->n) {
    *pzErr = sqlite3_mprintf(
        "colstore: %s has %u columns but the definition gives %d; omit the column definitions to use the "
        "file's schema",
        zPath, have->n_cols, want->n);
    return SQLITE_ERROR;
  }
  for (int i = 0; i < want->n; i++) {
    const cs_column *a = &have->cols[i], *b = &want->cols[i];
    if (strcmp(a->name, b->name) != 0 || a->type != b->type || a->nullable != b->nullable) {
      *pzErr = sqlite3_mprintf("colstore: %s: column %d is %s %s%s in the file but %s %s%s in the definition",
                               zPath, i + 1, a->name, cs_type_name(a->type), a->nullable ? "" : " NOT NULL",
                               b->name, cs_type_name(b->type), b->nullable ? "" : " NOT NULL");
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

const char *csx_affinity_name(cs_type t) {
  if (cs_type_is_float(t)) return "REAL";
  if (t == CS_TYPE_TEXT) return "TEXT";
  if (t == CS_TYPE_BLOB) return "BLOB";
  return "INTEGER";
}

static int declare(sqlite3 *db, const cs_schema *schema) {
  sqlite3_str *s = sqlite3_str_new(db);
  sqlite3_str_appendall(s, "CREATE TABLE x(");
  for (uint32_t i = 0; i < schema->n_cols; i++)
    sqlite3_str_appendf(s, "\"%w\" %s%s, ", schema->cols[i].name, csx_affinity_name(schema->cols[i].type),
                        schema->cols[i].nullable ? "" : " NOT NULL");
  sqlite3_str_appendall(s, "\"_rows\" BLOB HIDDEN, \"_mask\" BLOB HIDDEN)");
  char *zSql = sqlite3_str_finish(s);
  if (!zSql) return SQLITE_NOMEM;
  int rc = sqlite3_declare_vtab(db, zSql);
  sqlite3_free(zSql);
  return rc;
}

/* argv[3] is SOURCE; then column defs and option=value, in any order. */
static int table_init(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                      char **pzErr, bool create) {
  int rc = SQLITE_OK;
  csx_table *pTab = NULL;
  csx_coldefs *defs = NULL;
  cs_store *store = NULL;
  cs_err err = {0};
  if (argc < 4) {
    *pzErr = sqlite3_mprintf(
        "colstore: give the store path: CREATE VIRTUAL TABLE t USING colstore('file.cst' [, name TYPE ...])");
    return SQLITE_ERROR;
  }
  pTab = sqlite3_malloc(sizeof *pTab);
  defs = sqlite3_malloc(sizeof *defs);
  /* Both made empty before either is checked: fail: frees what they hold. */
  if (pTab) memset(pTab, 0, sizeof *pTab);
  if (defs) defs->n = 0;
  if (!pTab || !defs) {
    rc = SQLITE_NOMEM;
    goto fail;
  }
  pTab->db = db;
  pTab->conn = pAux;
  pTab->verify = CS_VERIFY_READ;
  pTab->cache = CS_CACHE_MAP;
  csx_table_auto_knobs(pTab);
  csx_table_index_knob(pTab);
  pTab->zName = sqlite3_mprintf("%s", argv[2]);
  pTab->zPath = csx_path_absolute(argv[3]);
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
      char *key = csx_unquote(z, (int)(eq - z)), *val = csx_unquote(eq + 1, (int)strlen(eq + 1));
      if (!key || !val) {
        sqlite3_free(key);
        sqlite3_free(val);
        rc = SQLITE_NOMEM;
        goto fail;
      }
      int ok = sqlite3_stricmp(key, "verify") == 0, cache = sqlite3_stricmp(key, "cache") == 0;
      if (ok && sqlite3_stricmp(val, "header") == 0)
        pTab->verify = CS_VERIFY_HEADER;
      else if (ok && sqlite3_stricmp(val, "read") == 0)
        pTab->verify = CS_VERIFY_READ;
      else if (ok && sqlite3_stricmp(val, "full") == 0)
        pTab->verify = CS_VERIFY_FULL;
      else if (cache && sqlite3_stricmp(val, "map") == 0)
        pTab->cache = CS_CACHE_MAP;
      else if (cache && sqlite3_stricmp(val, "memory") == 0)
        pTab->cache = CS_CACHE_MEMORY;
      else if (cache && sqlite3_stricmp(val, "auto") == 0)
        pTab->cache = CS_CACHE_AUTO;
      else
        *pzErr = sqlite3_mprintf(
            "colstore: unknown option %s; the options are verify=read (the default), verify=header, "
            "verify=full, cache=map (the default), cache=memory and cache=auto",
            z);
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
  /* A directory or a pattern is a dataset: opened, never created. */
  bool dataset = cs_source_is_dataset(pTab->zPath);
  cs_rc crc = cs_store_open_source_with(pTab->zPath, pTab->verify, pTab->cache, &store, &err);
  if (dataset && crc != CS_OK) {
    *pzErr = sqlite3_mprintf("%s", err.msg);
    rc = crc == CS_ENOENT ? SQLITE_CANTOPEN : csx_rc_to_sqlite(crc);
    goto fail;
  }
  /* An empty file given with column definitions becomes the store, as
  ** SQLite makes a database of an empty file: the new file is renamed over
  ** it (taking its mode and owner), so nothing else is ever overwritten. */
  bool empty_file = crc == CS_ENOTSTORE && is_empty_file(pTab->zPath);
  if ((crc == CS_ENOENT || empty_file) && create && defs->n > 0) {
    cs_schema schema = {(uint32_t)defs->n, defs->cols};
    cs_writer_options opt = {.replace = empty_file};
    cs_writer *w = NULL;
    crc = cs_writer_create(pTab->zPath, &schema, &opt, &w, &err);
    if (crc == CS_OK) crc = cs_writer_commit(w, &err);
    if (crc == CS_OK) crc = cs_store_open_with(pTab->zPath, pTab->verify, pTab->cache, &store, &err);
  } else if (crc == CS_ENOENT) {
    *pzErr = missing_store_message(pTab, argv[3], create);
    rc = SQLITE_CANTOPEN;
    goto fail;
  }
  if (crc != CS_OK) {
    *pzErr = sqlite3_mprintf("%s", err.msg);
    rc = csx_rc_to_sqlite(crc);
    goto fail;
  }
  if (defs->n > 0 && (rc = schema_match(cs_store_schema(store), defs, pTab->zPath, pzErr)) != SQLITE_OK)
    goto fail;
  /* cache=memory that the core had to leave on the mapping (over the
  ** limit) is refused here, at the door, where the user can choose; after
  ** a later append the table keeps working and colstore_info says why. */
  cs_cache_info ci;
  cs_store_cache_info(store, &ci);
  if (ci.requested == CS_CACHE_MEMORY && ci.effective != CS_CACHE_MEMORY) {
    *pzErr = sqlite3_mprintf(
        "colstore: %s: cache=memory cannot hold it: %s; use cache=map, or raise the limit with "
        "colstore_config('cache_limit', bytes)",
        pTab->zPath, ci.why);
    rc = SQLITE_ERROR;
    goto fail;
  }
  if ((rc = declare(db, cs_store_schema(store))) != SQLITE_OK) {
    *pzErr = sqlite3_mprintf("colstore: cannot declare the table: %s", sqlite3_errmsg(db));
    goto fail;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  if (!(pTab->snap = csx_snapshot_new(store))) {
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
  /* An error whose message could not be allocated is reported as what it
  ** now is: out of memory, not SQLite's generic text for rc. */
  if (rc != SQLITE_NOMEM && !*pzErr) rc = SQLITE_NOMEM;
  cs_store_close(store);
  coldefs_free(defs);
  if (pTab) {
    sqlite3_free(pTab->zName);
    sqlite3_free(pTab->zPath);
    sqlite3_free(pTab);
  }
  return rc;
}

static int xCreate(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                   char **pzErr) {
  return table_init(db, pAux, argc, argv, ppVtab, pzErr, true);
}

static int xConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                    char **pzErr) {
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
  csx_table_auto_free(pTab);
  csx_snapshot_release(pTab->snap);
  /* an error set on the table by another module's call (colstore_agg
  ** refreshing its source) that SQLite never took over */
  sqlite3_free(pTab->base.zErrMsg);
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

sqlite3_module csx_module = {
    /* iVersion    */ 3,
    /* xCreate     */ xCreate,
    /* xConnect    */ xConnect,
    /* xBestIndex  */ csx_best_index,
    /* xDisconnect */ xDisconnect,
    /* xDestroy    */ xDisconnect,
    /* xOpen       */ csx_open,
    /* xClose      */ csx_close,
    /* xFilter     */ csx_filter,
    /* xNext       */ csx_next,
    /* xEof        */ csx_eof,
    /* xColumn     */ csx_column,
    /* xRowid      */ csx_rowid,
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
