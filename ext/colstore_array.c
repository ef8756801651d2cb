/*
** colstore_array.c - whole columns in and out as BLOBs: colstore_append()
** and colstore_array() (docs/sql.md "Arrays").
**
** Any binding can pass a BLOB and take one back, so a column as a BLOB in
** Arrow's layout (values at their width, a byte of validity a row, int64
** offsets for TEXT/BLOB) is the one interface that lets numpy, Node's
** typed arrays or a C caller move ten million values in one call instead
** of ten million INSERT rows or xColumn calls.
**
** colstore_append must behave as INSERT does in a transaction: pending until
** COMMIT, gone at ROLLBACK, committed at once in autocommit.  A function is
** not a statement that writes a virtual table, so SQLite would never call
** the table's xBegin/xSync/xCommit for it.  The function therefore checks
** its arguments here (names, BLOB lengths, one row count for all), then
** runs one nested `INSERT INTO t(_rows) VALUES (?1)` with the arrays bound
** as a pointer (sqlite3_bind_pointer, type CSX_APPEND_POINTER, which no SQL
** text can forge).  SQLite enrols the table in the transaction as for any
** INSERT; xUpdate (colstore_write.c) sees the pointer and hands the arrays
** to the core's cs_batch_append_arrays, which checks the contents (offsets,
** NOT NULL, BOOL bytes) and copies them into the pending batch in bulk, all
** or nothing.  In autocommit the nested statement commits when it ends,
** inside this call.  The BLOBs are not copied here: SQLite keeps them valid
** for the duration of the call, and the core copies them once.
**
** colstore_array reads the snapshot this connection's next statement
** would (its own pending changes included), turns a `_rows` or `_mask`
** BLOB into positions with the same code and errors as the table's own
** hidden columns (colstore_selection.c), drops deleted positions, checks
** the chunks it reads when the table verifies on read, and has the core
** write the part into a cs_mem_big_alloc block that becomes the result
** BLOB without another copy.
*/
#include <string.h>

#include "colstore_array.h"

static void result_msg(sqlite3_context *ctx, int rc, char *zMsg) {
  sqlite3_result_error(ctx, zMsg ? zMsg : "colstore: out of memory", -1);
  sqlite3_result_error_code(ctx, zMsg ? rc : SQLITE_NOMEM);
  sqlite3_free(zMsg);
}

/* The table named by argument v on this connection, else an error. */
static csx_table *table_arg(sqlite3_context *ctx, const char *zFunc, sqlite3_value *v) {
  const char *z = (const char *)sqlite3_value_text(v);
  csx_table *pTab = z ? csx_conn_find(sqlite3_user_data(ctx), z) : NULL;
  if (!pTab)
    result_msg(ctx, SQLITE_ERROR,
               sqlite3_mprintf("colstore: %s: no colstore table named %Q on this connection; create it with "
                               "CREATE VIRTUAL TABLE name USING colstore(...) first",
                               zFunc, z ? z : "NULL"));
  return pTab;
}

/* A name argument: a column, optionally with the suffix :valid or
** :offsets, as its index and the part it names; else an error. */
static bool name_arg(sqlite3_context *ctx, const char *zFunc, const csx_table *pTab, const cs_schema *schema,
                     sqlite3_value *v, uint32_t *col, cs_array_part *part) {
  const char *z = (const char *)sqlite3_value_text(v);
  if (sqlite3_value_type(v) != SQLITE_TEXT || !z) {
    result_msg(
        ctx, SQLITE_MISMATCH,
        sqlite3_mprintf("colstore: %s: a column name must be TEXT ('name', 'name:valid' or 'name:offsets')",
                        zFunc));
    return false;
  }
  size_t n = strlen(z);
  *part = CS_ARRAY_VALUES;
  const char *colon = strrchr(z, ':');
  if (colon && sqlite3_stricmp(colon, ":valid") == 0)
    *part = CS_ARRAY_VALID, n = (size_t)(colon - z);
  else if (colon && sqlite3_stricmp(colon, ":offsets") == 0)
    *part = CS_ARRAY_OFFSETS, n = (size_t)(colon - z);
  for (uint32_t c = 0; c < schema->n_cols; c++)
    if (strlen(schema->cols[c].name) == n && sqlite3_strnicmp(schema->cols[c].name, z, (int)n) == 0) {
      *col = c;
      if (*part == CS_ARRAY_OFFSETS && !cs_type_is_varlen(schema->cols[c].type)) {
        result_msg(
            ctx, SQLITE_ERROR,
            sqlite3_mprintf("colstore: %s: column %s of table %s is %s, which has no offsets (only TEXT "
                            "and BLOB columns take name:offsets)",
                            zFunc, schema->cols[c].name, pTab->zName, cs_type_name(schema->cols[c].type)));
        return false;
      }
      return true;
    }
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendf(s, "colstore: %s: table %s has no column %Q; its columns are", zFunc, pTab->zName, z);
  for (uint32_t c = 0; c < schema->n_cols; c++)
    sqlite3_str_appendf(s, "%s %s", c ? "," : "", schema->cols[c].name);
  sqlite3_str_appendall(s, " (add :valid or :offsets for the NULLs and TEXT/BLOB offsets)");
  result_msg(ctx, SQLITE_ERROR, sqlite3_str_finish(s));
  return false;
}

/* ------------------------------------------------------- colstore_append */

/* The row count argument i gives (its BLOB's length in rows), or -1 when
** it gives none (the bytes of a TEXT/BLOB column); *zWhy when the length
** cannot be a whole number of rows. */
static int64_t rows_of(const cs_column *col, cs_array_part part, uint64_t bytes, const char **zWhy) {
  *zWhy = NULL;
  if (part == CS_ARRAY_VALID) return (int64_t)bytes;
  if (part == CS_ARRAY_OFFSETS) {
    if (bytes % 8 || bytes == 0) *zWhy = "is not a whole number (at least 1) of int64 offsets";
    return bytes >= 8 ? (int64_t)(bytes / 8 - 1) : 0;
  }
  size_t w = cs_type_width(col->type);
  if (!w) return -1;
  if (bytes % w) *zWhy = "is not a whole number of values";
  return (int64_t)(bytes / w);
}

static const char *part_suffix(cs_array_part p) {
  return p == CS_ARRAY_VALID ? ":valid" : p == CS_ARRAY_OFFSETS ? ":offsets" : "";
}

/* The error for arguments that give different row counts: every one with
** its length. */
static void lengths_error(sqlite3_context *ctx, const cs_schema *schema, const char *zTable, int argc,
                          sqlite3_value **argv, const uint32_t *cols, const cs_array_part *parts) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendf(s, "colstore: colstore_append(%s): the arrays give different row counts:", zTable);
  for (int i = 1, k = 0; i + 1 < argc; i += 2, k++) {
    const cs_column *c = &schema->cols[cols[k]];
    const char *zWhy;
    uint64_t bytes = (uint64_t)sqlite3_value_bytes(argv[i + 1]);
    int64_t n = rows_of(c, parts[k], bytes, &zWhy);
    if (n < 0) continue;
    sqlite3_str_appendf(s, "%s %s%s %lld rows (%llu bytes)", k ? "," : "", c->name, part_suffix(parts[k]),
                        (long long)n, (unsigned long long)bytes);
  }
  sqlite3_str_appendall(s, "; give every array the same number of rows");
  result_msg(ctx, SQLITE_MISMATCH, sqlite3_str_finish(s));
}

/* Runs the nested INSERT that carries the arrays into the table's
** transaction; its error becomes the function's. */
static void append_run(sqlite3_context *ctx, csx_table *pTab, const csx_append *a) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  char *zSql = sqlite3_mprintf("INSERT INTO \"%w\"(_rows) VALUES (?1)", pTab->zName);
  sqlite3_stmt *pStmt = NULL;
  int rc = zSql ? sqlite3_prepare_v2(db, zSql, -1, &pStmt, NULL) : SQLITE_NOMEM;
  sqlite3_free(zSql);
  if (rc == SQLITE_OK) rc = sqlite3_bind_pointer(pStmt, 1, (void *)a, CSX_APPEND_POINTER, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  if (rc == SQLITE_DONE) {
    sqlite3_finalize(pStmt);
    sqlite3_result_int64(ctx, (sqlite3_int64)a->n);
    return;
  }
  rc = sqlite3_extended_errcode(db);
  result_msg(ctx, rc, sqlite3_mprintf("%s", sqlite3_errmsg(db)));
  sqlite3_finalize(pStmt);
}

static void fn_append(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (argc < 3 || argc % 2 == 0) {
    result_msg(
        ctx, SQLITE_MISUSE,
        sqlite3_mprintf("colstore: usage: colstore_append(table, name, blob [, name, blob ...]): a table "
                        "and pairs of a name and a BLOB, got %d arguments",
                        argc));
    return;
  }
  csx_table *pTab = table_arg(ctx, "colstore_append", argv[0]);
  if (!pTab) return;
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  int n_pairs = (argc - 1) / 2;
  cs_array *arr = sqlite3_malloc64(sizeof *arr * (schema->n_cols ? schema->n_cols : 1));
  uint32_t *cols = sqlite3_malloc64(sizeof *cols * (sqlite3_uint64)n_pairs);
  cs_array_part *parts = sqlite3_malloc64(sizeof *parts * (sqlite3_uint64)n_pairs);
  uint8_t *given = sqlite3_malloc64(3 * (schema->n_cols ? schema->n_cols : 1)); /* col * 3 + part */
  if (!arr || !cols || !parts || !given) {
    sqlite3_result_error_nomem(ctx);
    goto done;
  }
  memset(arr, 0, sizeof *arr * schema->n_cols);
  memset(given, 0, 3 * schema->n_cols);
  int64_t n = -1;
  bool differ = false;
  for (int k = 0; k < n_pairs; k++) {
    sqlite3_value *name = argv[1 + 2 * k], *blob = argv[2 + 2 * k];
    if (!name_arg(ctx, "colstore_append", pTab, schema, name, &cols[k], &parts[k])) goto done;
    const cs_column *c = &schema->cols[cols[k]];
    if (given[cols[k] * 3 + parts[k]]++) {
      result_msg(ctx, SQLITE_ERROR,
                 sqlite3_mprintf("colstore: colstore_append(%s): %s%s is given twice; give each array once",
                                 pTab->zName, c->name, part_suffix(parts[k])));
      goto done;
    }
    if (sqlite3_value_type(blob) != SQLITE_BLOB) {
      static const char *const kinds[] = {"", "INTEGER", "REAL", "TEXT", "BLOB", "NULL"};
      result_msg(
          ctx, SQLITE_MISMATCH,
          sqlite3_mprintf("colstore: colstore_append(%s): %s%s takes a BLOB, not %s; pass the array's "
                          "bytes (numpy: arr.tobytes() or memoryview(arr))",
                          pTab->zName, c->name, part_suffix(parts[k]), kinds[sqlite3_value_type(blob)]));
      goto done;
    }
    uint64_t bytes = (uint64_t)sqlite3_value_bytes(blob);
    const void *p = sqlite3_value_blob(blob);
    if (!p) p = ""; /* an empty BLOB: present, with no bytes */
    cs_array *a = &arr[cols[k]];
    if (parts[k] == CS_ARRAY_VALID)
      a->valid = p;
    else if (parts[k] == CS_ARRAY_OFFSETS)
      a->offsets = p;
    else
      a->data = p, a->data_bytes = bytes;
    const char *zWhy;
    int64_t m = rows_of(c, parts[k], bytes, &zWhy);
    if (zWhy) {
      result_msg(ctx, SQLITE_MISMATCH,
                 sqlite3_mprintf(
                     "colstore: colstore_append(%s): %s%s has %llu bytes, which %s (%s: %s)", pTab->zName,
                     c->name, part_suffix(parts[k]), (unsigned long long)bytes, zWhy, c->name,
                     parts[k] == CS_ARRAY_OFFSETS ? "n + 1 int64 offsets" : cs_type_name(c->type)));
      goto done;
    }
    if (m >= 0 && n >= 0 && m != n) differ = true;
    if (m >= 0 && n < 0) n = m;
  }
  if (differ) {
    lengths_error(ctx, schema, pTab->zName, argc, argv, cols, parts);
    goto done;
  }
  /* Each array's parts belong together: no validity or offsets without
  ** the values, no TEXT/BLOB values without their offsets. */
  for (uint32_t c = 0; c < schema->n_cols; c++) {
    const char *zMissing = NULL, *zFor = NULL;
    if ((given[c * 3 + CS_ARRAY_VALID] || given[c * 3 + CS_ARRAY_OFFSETS]) && !given[c * 3 + CS_ARRAY_VALUES])
      zMissing = "", zFor = given[c * 3 + CS_ARRAY_VALID] ? ":valid" : ":offsets";
    else if (given[c * 3 + CS_ARRAY_VALUES] && cs_type_is_varlen(schema->cols[c].type) &&
             !given[c * 3 + CS_ARRAY_OFFSETS])
      zMissing = ":offsets", zFor = "";
    if (zMissing) {
      result_msg(ctx, SQLITE_ERROR,
                 sqlite3_mprintf("colstore: colstore_append(%s): %s%s is given without %s%s; give both",
                                 pTab->zName, schema->cols[c].name, zFor, schema->cols[c].name, zMissing));
      goto done;
    }
  }
  if (n <= 0) {
    /* no rows: nothing to append, nothing to enrol in a transaction */
    sqlite3_result_int64(ctx, 0);
    goto done;
  }
  csx_append a = {pTab, schema->n_cols, arr, (uint64_t)n};
  append_run(ctx, pTab, &a);
done:
  sqlite3_free(arr);
  sqlite3_free(cols);
  sqlite3_free(parts);
  sqlite3_free(given);
}

/* -------------------------------------------------------- colstore_array */

/* The positions a `_rows` or `_mask` BLOB selects in snap, deleted ones
** dropped, as the table's hidden columns select them (*rows NULL when
** there is no selection); errors go to ctx. */
static bool selection_rows(sqlite3_context *ctx, csx_table *pTab, csx_snapshot *snap, int argc,
                           sqlite3_value **argv, uint64_t **rows, uint64_t *n) {
  *rows = NULL, *n = 0;
  if (argc < 4) return true;
  const char *zKind = (const char *)sqlite3_value_text(argv[2]);
  bool by_rows = zKind && sqlite3_stricmp(zKind, "_rows") == 0;
  if (!by_rows && !(zKind && sqlite3_stricmp(zKind, "_mask") == 0)) {
    result_msg(ctx, SQLITE_ERROR,
               sqlite3_mprintf("colstore: colstore_array: the third argument is '_rows' or '_mask', not %Q",
                               zKind ? zKind : "NULL"));
    return false;
  }
  const cs_store *store = snap->store;
  csx_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.n_slots = 1;
  plan.slots[0].kind = by_rows ? 'R' : 'M';
  csx_selection sel;
  memset(&sel, 0, sizeof sel);
  uint64_t positions = cs_store_rows(store);
  int rc = csx_selection_build(&sel, &pTab->base, NULL, pTab->zName, snap, &plan, 1, &argv[3], NULL);
  uint64_t *pos = NULL;
  if (rc == SQLITE_OK && by_rows) {
    if (!(pos = sqlite3_malloc64(sel.user_rows_bytes + 8)))
      rc = SQLITE_NOMEM;
    else if ((rc = csx_selection_list(&sel, &pTab->base, pTab->zName, positions, pos, n)) == SQLITE_OK)
      *n = cs_store_filter_deleted(store, pos, *n);
  } else if (rc == SQLITE_OK) {
    uint8_t *mask = sqlite3_malloc64(positions + 1);
    if (!mask) {
      rc = SQLITE_NOMEM;
    } else {
      if (positions) memcpy(mask, sel.user_mask, positions);
      cs_store_mask_deleted(store, 0, positions, mask);
      if (!(pos = sqlite3_malloc64(cs_mask_count(mask, positions) * 8 + 8)))
        rc = SQLITE_NOMEM;
      else
        *n = cs_mask_to_rows(mask, positions, 0, pos);
      sqlite3_free(mask);
    }
  }
  csx_selection_clear(&sel);
  if (rc != SQLITE_OK) {
    sqlite3_free(pos);
    result_msg(ctx, rc,
               sqlite3_mprintf("%s", pTab->base.zErrMsg ? pTab->base.zErrMsg : "colstore: out of memory"));
    sqlite3_free(pTab->base.zErrMsg);
    pTab->base.zErrMsg = NULL;
    return false;
  }
  *rows = pos;
  return true;
}

static void fn_array(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  csx_table *pTab = table_arg(ctx, "colstore_array", argv[0]);
  if (!pTab) return;
  csx_snapshot *snap = NULL;
  if (csx_table_read_snapshot(pTab, &snap) != SQLITE_OK) {
    result_msg(ctx, SQLITE_ERROR,
               sqlite3_mprintf("%s", pTab->base.zErrMsg ? pTab->base.zErrMsg : "colstore: out of memory"));
    sqlite3_free(pTab->base.zErrMsg);
    pTab->base.zErrMsg = NULL;
    return;
  }
  const cs_store *store = snap->store;
  const cs_schema *schema = cs_store_schema(store);
  uint32_t col;
  cs_array_part part;
  uint64_t *rows = NULL, n = 0, bytes = 0;
  uint8_t *out = NULL, *check = NULL;
  if (!name_arg(ctx, "colstore_array", pTab, schema, argv[1], &col, &part) ||
      !selection_rows(ctx, pTab, snap, argc, argv, &rows, &n))
    goto done;
  cs_err err = {0};
  cs_rc crc = CS_OK;
  /* the chunks read are checked first, as a query's are */
  if (pTab->verify != CS_VERIFY_HEADER) {
    if (!(check = sqlite3_malloc64(schema->n_cols)))
      crc = cs_err_set(&err, CS_ENOMEM, "colstore: out of memory");
    if (check) memset(check, 0, schema->n_cols), check[col] = 1;
    if (crc == CS_OK)
      crc = rows ? cs_store_check_rows(store, rows, n, check, &err)
                 : cs_store_check_chunks(store, 0, cs_store_records(store), check, &err);
  }
  if (crc == CS_OK) crc = cs_array_size(store, col, part, rows, n, &bytes, &err);
  if (crc == CS_OK && !(out = cs_mem_big_alloc(bytes ? bytes : 1)))
    crc = cs_err_set(&err, CS_ENOMEM, "colstore: out of memory for %llu bytes of column %s",
                     (unsigned long long)bytes, schema->cols[col].name);
  if (crc == CS_OK) crc = cs_array_read(store, col, part, rows, n, out, bytes, &err);
  if (crc != CS_OK) {
    cs_mem_big_free(out);
    result_msg(ctx, csx_rc_to_sqlite(crc), sqlite3_mprintf("%s", err.msg));
    goto done;
  }
  sqlite3_result_blob64(ctx, out, bytes, cs_mem_big_free);
done:
  sqlite3_free(rows);
  sqlite3_free(check);
  csx_snapshot_release(snap);
}

int csx_register_arrays(sqlite3 *db, csx_conn *conn) {
  int rc = sqlite3_create_function_v2(db, "colstore_append", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, conn,
                                      fn_append, NULL, NULL, NULL);
  for (int n = 2; rc == SQLITE_OK && n <= 4; n += 2)
    rc = sqlite3_create_function_v2(db, "colstore_array", n, SQLITE_UTF8 | SQLITE_DIRECTONLY, conn, fn_array,
                                    NULL, NULL, NULL);
  return rc;
}
