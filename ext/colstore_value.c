/*
** colstore_value.c - SQLite values into typed column values.
**
** INSERT and colstore_create() both store values through csx_value_put, so
** a value converts the same way whichever door it comes in by, and the way
** a native column of the same affinity would convert it: an integer into a
** FLOAT column becomes a float, an integral REAL or numeric TEXT into an
** integer column becomes an integer, a number into a TEXT column becomes
** its SQLite text.  What a native column would keep in another storage
** class (TEXT 'abc' in an INTEGER column) cannot be kept in a typed array,
** so it is an error naming the column, the type and the value, rather than
** a silent change.
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "colstore_ext.h"

char *csx_value_describe(sqlite3_value *v) {
  int t = sqlite3_value_type(v);
  switch (t) {
    case SQLITE_INTEGER: return sqlite3_mprintf("INTEGER %lld", sqlite3_value_int64(v));
    case SQLITE_FLOAT: return sqlite3_mprintf("REAL %!.15g", sqlite3_value_double(v));
    case SQLITE_TEXT: {
      const char *z = (const char *)sqlite3_value_text(v);
      int n = sqlite3_value_bytes(v);
      return sqlite3_mprintf("TEXT '%.*q'%s", n > 40 ? 40 : n, z ? z : "", n > 40 ? "..." : "");
    }
    case SQLITE_BLOB: return sqlite3_mprintf("BLOB of %d bytes", sqlite3_value_bytes(v));
    default: return sqlite3_mprintf("NULL");
  }
}

static int mismatch(const cs_column *col, const char *zTable, sqlite3_value *v, const char *why, char **pzErr) {
  char *d = csx_value_describe(v);
  *pzErr = sqlite3_mprintf("colstore: cannot store %s in column %s%s%s of type %s: %s", d ? d : "a value", zTable ? zTable : "",
                           zTable ? "." : "", col->name, cs_type_name(col->type), why);
  sqlite3_free(d);
  return SQLITE_MISMATCH;
}

static bool int_fits(cs_type t, sqlite3_int64 i) {
  switch (t) {
    case CS_TYPE_INT8: return i >= INT8_MIN && i <= INT8_MAX;
    case CS_TYPE_INT16: return i >= INT16_MIN && i <= INT16_MAX;
    case CS_TYPE_INT32: return i >= INT32_MIN && i <= INT32_MAX;
    case CS_TYPE_UINT8: return i >= 0 && i <= UINT8_MAX;
    case CS_TYPE_UINT16: return i >= 0 && i <= UINT16_MAX;
    case CS_TYPE_UINT32: return i >= 0 && i <= (sqlite3_int64)UINT32_MAX;
    case CS_TYPE_BOOL: return i == 0 || i == 1;
    default: return true;
  }
}

static int put_integer(cs_batch *b, uint32_t iCol, const cs_column *col, const char *zTable, sqlite3_value *orig,
                       sqlite3_value *v, char **pzErr) {
  int t = sqlite3_value_type(v);
  sqlite3_int64 i;
  if (t == SQLITE_INTEGER) {
    i = sqlite3_value_int64(v);
  } else if (t == SQLITE_FLOAT) {
    double d = sqlite3_value_double(v);
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d))
      return mismatch(col, zTable, orig, "it is not an integer", pzErr);
    i = (sqlite3_int64)d;
  } else {
    return mismatch(col, zTable, orig, t == SQLITE_TEXT ? "it is not a number" : "only integers fit", pzErr);
  }
  if (!int_fits(col->type, i))
    return mismatch(col, zTable, orig, col->type == CS_TYPE_BOOL ? "a BOOL holds 0 or 1" : "it is out of the type's range", pzErr);
  cs_err err;
  return cs_batch_put_i64(b, iCol, i, &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
}

static int put_float(cs_batch *b, uint32_t iCol, const cs_column *col, const char *zTable, sqlite3_value *orig,
                     sqlite3_value *v, char **pzErr) {
  int t = sqlite3_value_type(v);
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT)
    return mismatch(col, zTable, orig, t == SQLITE_TEXT ? "it is not a number" : "only numbers fit", pzErr);
  double d = sqlite3_value_double(v);
  if (col->type == CS_TYPE_FLOAT32 && isfinite(d) && fabs(d) > FLT_MAX)
    return mismatch(col, zTable, orig, "it is out of FLOAT32's range", pzErr);
  cs_err err;
  return cs_batch_put_f64(b, iCol, d, &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
}

int csx_value_put(cs_batch *b, uint32_t iCol, const cs_column *col, const char *zTable, sqlite3_value *v, char **pzErr) {
  cs_err err;
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) {
    if (!col->nullable) {
      *pzErr = sqlite3_mprintf("colstore: NOT NULL constraint failed: %s%s%s", zTable ? zTable : "", zTable ? "." : "", col->name);
      return SQLITE_CONSTRAINT_NOTNULL;
    }
    return cs_batch_put_null(b, iCol, &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
  }
  if (col->type == CS_TYPE_TEXT) {
    if (t == SQLITE_BLOB) return mismatch(col, zTable, v, "a BLOB does not fit a TEXT column", pzErr);
    const unsigned char *z = sqlite3_value_text(v); /* numbers take their SQLite text form */
    if (!z) return SQLITE_NOMEM;
    return cs_batch_put_bytes(b, iCol, z, (uint64_t)sqlite3_value_bytes(v), &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
  }
  if (col->type == CS_TYPE_BLOB) {
    if (t != SQLITE_BLOB) return mismatch(col, zTable, v, "only BLOBs fit a BLOB column; use a TEXT column for text", pzErr);
    const void *p = sqlite3_value_blob(v);
    return cs_batch_put_bytes(b, iCol, p, (uint64_t)sqlite3_value_bytes(v), &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
  }
  /* Numeric columns: TEXT that looks like a number converts, as affinity would. */
  sqlite3_value *num = v;
  if (t == SQLITE_TEXT) {
    if (!(num = sqlite3_value_dup(v))) return SQLITE_NOMEM;
    sqlite3_value_numeric_type(num);
  }
  int rc = cs_type_is_float(col->type) ? put_float(b, iCol, col, zTable, v, num, pzErr)
                                       : put_integer(b, iCol, col, zTable, v, num, pzErr);
  if (num != v) sqlite3_value_free(num);
  return rc;
}
