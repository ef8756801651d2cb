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
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "colstore_ext.h"

char *csx_value_describe(sqlite3_value *v) {
  int t = sqlite3_value_type(v);
  switch (t) {
    case SQLITE_INTEGER: return sqlite3_mprintf("INTEGER %lld", sqlite3_value_int64(v));
    case SQLITE_FLOAT: return sqlite3_mprintf("REAL %!.17g", sqlite3_value_double(v));
    case SQLITE_TEXT: {
      const char *z = (const char *)sqlite3_value_text(v);
      int n = sqlite3_value_bytes(v);
      return sqlite3_mprintf("TEXT '%.*q'%s", n > 40 ? 40 : n, z ? z : "", n > 40 ? "..." : "");
    }
    case SQLITE_BLOB: return sqlite3_mprintf("BLOB of %d bytes", sqlite3_value_bytes(v));
    default: return sqlite3_mprintf("NULL");
  }
}

static int mismatch(const cs_column *col, const char *zTable, sqlite3_value *v, const char *why,
                    char **pzErr) {
  char *d = csx_value_describe(v);
  *pzErr = sqlite3_mprintf("colstore: cannot store %s in column %s%s%s of type %s: %s", d ? d : "a value",
                           zTable ? zTable : "", zTable ? "." : "", col->name, cs_type_name(col->type), why);
  sqlite3_free(d);
  return SQLITE_MISMATCH;
}

/* SQLite's numeric affinity on text, without asking SQLite to convert a
** value in place (argv registers may be shared constants) or a copy (newer
** SQLite asserts that a converted value belongs to a connection): optional
** whitespace, a sign, digits with an optional point and exponent, optional
** whitespace, nothing else.  An integer literal that fits is INT, any other
** number FLOAT; hex, inf and nan are not numbers. */
static bool text_number(const unsigned char *z, int n, cs_value *out) {
  int i = 0, end = n;
  while (i < end && (z[i] == ' ' || z[i] == '\t' || z[i] == '\n' || z[i] == '\f' || z[i] == '\r')) i++;
  while (end > i && (z[end - 1] == ' ' || z[end - 1] == '\t' || z[end - 1] == '\n' || z[end - 1] == '\f' ||
                     z[end - 1] == '\r'))
    end--;
  int start = i, digits = 0;
  bool is_int = true;
  if (i < end && (z[i] == '+' || z[i] == '-')) i++;
  while (i < end && z[i] >= '0' && z[i] <= '9') i++, digits++;
  if (i < end && z[i] == '.') {
    is_int = false;
    i++;
    while (i < end && z[i] >= '0' && z[i] <= '9') i++, digits++;
  }
  if (digits == 0) return false;
  if (i < end && (z[i] == 'e' || z[i] == 'E')) {
    is_int = false;
    i++;
    if (i < end && (z[i] == '+' || z[i] == '-')) i++;
    int exp_digits = 0;
    while (i < end && z[i] >= '0' && z[i] <= '9') i++, exp_digits++;
    if (exp_digits == 0) return false;
  }
  if (i != end) return false;
  char buf[400];
  int len = end - start;
  if (len >= (int)sizeof buf) return false; /* no literal this long is a number SQLite keeps exactly */
  memcpy(buf, z + start, (size_t)len);
  buf[len] = 0;
  if (is_int) {
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == 0) {
      out->kind = CS_VAL_INT;
      out->i = v;
      return true;
    }
  }
  out->kind = CS_VAL_FLOAT;
  out->f = strtod(buf, NULL);
  return true;
}

void csx_value_number(sqlite3_value *v, cs_value *out) {
  memset(out, 0, sizeof *out);
  switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER: out->kind = CS_VAL_INT, out->i = sqlite3_value_int64(v); break;
    case SQLITE_FLOAT: out->kind = CS_VAL_FLOAT, out->f = sqlite3_value_double(v); break;
    case SQLITE_TEXT: {
      const unsigned char *z = sqlite3_value_text(v);
      if (!z || !text_number(z, sqlite3_value_bytes(v), out)) out->kind = CS_VAL_TEXT;
      /* The digits as SQLite's own parser reads them (sqlite3AtoF, which
      ** affinity and CAST use): for some 16-17 digit texts it is one ulp
      ** from strtod's nearest double, and a native column holds its value. */
      else if (out->kind == CS_VAL_FLOAT)
        out->f = sqlite3_value_double(v);
      break;
    }
    case SQLITE_BLOB: out->kind = CS_VAL_BLOB; break;
    default: out->kind = CS_VAL_NULL; break;
  }
}

static int put_integer(cs_batch *b, uint32_t iCol, const cs_column *col, const char *zTable, sqlite3_value *v,
                       const cs_value *num, char **pzErr) {
  sqlite3_int64 i;
  if (num->kind == CS_VAL_INT) {
    i = num->i;
  } else if (num->kind == CS_VAL_FLOAT) {
    double d = num->f;
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d))
      return mismatch(col, zTable, v, "it is not an integer", pzErr);
    i = (sqlite3_int64)d;
  } else {
    return mismatch(col, zTable, v, num->kind == CS_VAL_TEXT ? "it is not a number" : "only integers fit",
                    pzErr);
  }
  if (!cs_type_int_fits(col->type, i))
    return mismatch(col, zTable, v,
                    col->type == CS_TYPE_BOOL ? "a BOOL holds 0 or 1" : "it is out of the type's range",
                    pzErr);
  cs_err err;
  return cs_batch_put_i64(b, iCol, i, &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
}

static int put_float(cs_batch *b, uint32_t iCol, const cs_column *col, const char *zTable, sqlite3_value *v,
                     const cs_value *num, char **pzErr) {
  if (num->kind != CS_VAL_INT && num->kind != CS_VAL_FLOAT)
    return mismatch(col, zTable, v, num->kind == CS_VAL_TEXT ? "it is not a number" : "only numbers fit",
                    pzErr);
  double d = num->kind == CS_VAL_INT ? (double)num->i : num->f;
  /* A native REAL column stores an integral value as an integer, so -0.0
  ** reads back as 0.0; do the same. */
  if (d == 0.0) d = 0.0;
  /* FLOAT32 rounds to the nearest float; a value beyond its range, or a
  ** nonzero value that would become zero, does not fit. */
  if (col->type == CS_TYPE_FLOAT32 && isfinite(d) && (fabs(d) > FLT_MAX || (d != 0 && (float)d == 0)))
    return mismatch(col, zTable, v, "it is out of FLOAT32's range", pzErr);
  cs_err err;
  return cs_batch_put_f64(b, iCol, d, &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
}

int csx_value_put(cs_batch *b, uint32_t iCol, const cs_column *col, const char *zTable, sqlite3_value *v,
                  char **pzErr) {
  cs_err err;
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) {
    if (!col->nullable) {
      *pzErr = sqlite3_mprintf("colstore: NOT NULL constraint failed: %s%s%s", zTable ? zTable : "",
                               zTable ? "." : "", col->name);
      return SQLITE_CONSTRAINT_NOTNULL;
    }
    return cs_batch_put_null(b, iCol, &err) == CS_OK ? SQLITE_OK : SQLITE_NOMEM;
  }
  if (col->type == CS_TYPE_TEXT) {
    if (t == SQLITE_BLOB) return mismatch(col, zTable, v, "a BLOB does not fit a TEXT column", pzErr);
    const unsigned char *z = sqlite3_value_text(v); /* numbers take their SQLite text form */
    if (!z) return SQLITE_NOMEM;
    return cs_batch_put_bytes(b, iCol, z, (uint64_t)sqlite3_value_bytes(v), &err) == CS_OK ? SQLITE_OK
                                                                                           : SQLITE_NOMEM;
  }
  if (col->type == CS_TYPE_BLOB) {
    if (t != SQLITE_BLOB)
      return mismatch(col, zTable, v, "only BLOBs fit a BLOB column; use a TEXT column for text", pzErr);
    const void *p = sqlite3_value_blob(v);
    return cs_batch_put_bytes(b, iCol, p, (uint64_t)sqlite3_value_bytes(v), &err) == CS_OK ? SQLITE_OK
                                                                                           : SQLITE_NOMEM;
  }
  /* Numeric columns: TEXT that looks like a number converts, as affinity would. */
  cs_value num;
  csx_value_number(v, &num);
  return cs_type_is_float(col->type) ? put_float(b, iCol, col, zTable, v, &num, pzErr)
                                     : put_integer(b, iCol, col, zTable, v, &num, pzErr);
}

/* --------------------------------------------------------- rowid bounds */

/* Row bounds [lo, hi) for one rowid comparison, per SQLite's rules. */
void csx_bound_apply(sqlite3_value *v, int op, uint64_t n_rows, uint64_t *lo, uint64_t *hi) {
  /* rowid has INTEGER affinity: numeric-looking text compares as a number. */
  cs_value num;
  csx_value_number(v, &num);
  if (num.kind == CS_VAL_TEXT || num.kind == CS_VAL_BLOB) {
    /* Every integer sorts below any TEXT or BLOB. */
    if (op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE) return;
    *hi = 0;
    return;
  }
  if (num.kind == CS_VAL_NULL) {
    *hi = 0;
    return;
  }
  /* Integer bounds as doubles are exact only below 2^53; work in the
  ** integer domain where the value is an integer, else round. */
  bool is_int = num.kind == CS_VAL_INT;
  double d = is_int ? (double)num.i : num.f;
  sqlite3_int64 i = num.i;
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
      if (i == INT64_MAX) {
        *hi = 0;
        return;
      }
      break;
    case SQLITE_INDEX_CONSTRAINT_GT:
    case SQLITE_INDEX_CONSTRAINT_GE: {
      bool inc = op == SQLITE_INDEX_CONSTRAINT_GE;
      if (!is_int) {
        if (d >= two63) {
          *hi = 0;
          return;
        }
        if (d < -two63) return;
        double f = inc ? ceil(d) : floor(d) + 1.0;
        if (f >= two63) {
          *hi = 0;
          return;
        }
        lo_i = (sqlite3_int64)f;
      } else {
        if (!inc && i == INT64_MAX) {
          *hi = 0;
          return;
        }
        lo_i = inc ? i : i + 1;
      }
      if (lo_i > 0 && (uint64_t)lo_i > *lo) *lo = (uint64_t)lo_i;
      return;
    }
    default: { /* LT, LE */
      bool inc = op == SQLITE_INDEX_CONSTRAINT_LE;
      if (!is_int) {
        if (d >= two63) return;
        if (d < -two63) {
          *hi = 0;
          return;
        }
        double f = inc ? floor(d) + 1.0 : ceil(d);
        if (f >= two63) return;
        hi_i = (sqlite3_int64)f;
      } else {
        if (inc && i == INT64_MAX) return;
        hi_i = inc ? i + 1 : i;
      }
      if (hi_i <= 0)
        *hi = 0;
      else if ((uint64_t)hi_i < *hi)
        *hi = (uint64_t)hi_i;
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

/* ------------------------------------------------------ kernel operands */

/* A private copy of n bytes, so an operand outlives the argv value. */
static int bytes_hold(const void *p, uint64_t n, void **held, const uint8_t **out) {
  uint8_t *c = sqlite3_malloc64(n ? n : 1);
  if (!c) return SQLITE_NOMEM;
  if (n) memcpy(c, p, n);
  *held = c;
  *out = c;
  return SQLITE_OK;
}

int csx_value_for_column(cs_type t, sqlite3_value *v, cs_value *out, void **held) {
  memset(out, 0, sizeof *out);
  *held = NULL;
  int vt = sqlite3_value_type(v);
  if (vt == SQLITE_NULL) return SQLITE_OK;
  if (vt == SQLITE_BLOB) {
    out->kind = CS_VAL_BLOB;
    out->n = (uint64_t)sqlite3_value_bytes(v);
    return bytes_hold(sqlite3_value_blob(v), out->n, held, &out->p);
  }
  if (t == CS_TYPE_BLOB && vt == SQLITE_TEXT) {
    /* BLOB affinity converts nothing: the text stays text (below a BLOB) */
    out->kind = CS_VAL_TEXT;
    out->n = (uint64_t)sqlite3_value_bytes(v);
    return bytes_hold(sqlite3_value_text(v), out->n, held, &out->p);
  }
  if (t == CS_TYPE_TEXT) {
    /* Only a right-hand side without affinity is taken for TEXT columns:
    ** TEXT affinity turns a number into its SQLite text. */
    const unsigned char *z = sqlite3_value_text(v);
    if (!z) return SQLITE_NOMEM;
    out->kind = CS_VAL_TEXT;
    out->n = (uint64_t)sqlite3_value_bytes(v);
    return bytes_hold(z, out->n, held, &out->p);
  }
  csx_value_number(v, out); /* numeric affinity */
  if (out->kind == CS_VAL_TEXT) {
    out->n = (uint64_t)sqlite3_value_bytes(v);
    return bytes_hold(sqlite3_value_text(v), out->n, held, &out->p);
  }
  return SQLITE_OK;
}

int csx_pred_from_value(cs_pred *pr, int op, cs_type t, sqlite3_value *v, void **held, bool *never) {
  *held = NULL;
  *never = false;
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_ISNULL: pr->op = CS_CMP_ISNULL; return SQLITE_OK;
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: pr->op = CS_CMP_NOTNULL; return SQLITE_OK;
    case SQLITE_INDEX_CONSTRAINT_IS:
    case SQLITE_INDEX_CONSTRAINT_ISNOT: {
      /* x IS NULL / x IS NOT NULL; else x = v, or x IS NOT v (true for NULL rows) */
      bool is = op == SQLITE_INDEX_CONSTRAINT_IS;
      if (sqlite3_value_type(v) == SQLITE_NULL) {
        pr->op = is ? CS_CMP_ISNULL : CS_CMP_NOTNULL;
        return SQLITE_OK;
      }
      pr->op = is ? CS_CMP_EQ : CS_CMP_ISNOT;
      break;
    }
    case SQLITE_INDEX_CONSTRAINT_EQ: pr->op = CS_CMP_EQ; break;
    case SQLITE_INDEX_CONSTRAINT_NE: pr->op = CS_CMP_NE; break;
    case SQLITE_INDEX_CONSTRAINT_LT: pr->op = CS_CMP_LT; break;
    case SQLITE_INDEX_CONSTRAINT_LE: pr->op = CS_CMP_LE; break;
    case SQLITE_INDEX_CONSTRAINT_GT: pr->op = CS_CMP_GT; break;
    case SQLITE_INDEX_CONSTRAINT_GE: pr->op = CS_CMP_GE; break;
    default: return SQLITE_INTERNAL;
  }
  if (sqlite3_value_type(v) == SQLITE_NULL) {
    *never = true; /* a comparison with NULL is never true */
    return SQLITE_OK;
  }
  return csx_value_for_column(t, v, &pr->a, held);
}
