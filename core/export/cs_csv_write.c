/*
** cs_csv_write.c - colstore columns out as RFC 4180 text: the format
** writer colstore_export uses for ".csv" (cs_csv_writer_ops).
**
** What the text says is chosen so that a CSV reader (Python's csv module,
** DuckDB's read_csv, colstore_import itself) gets every value back:
**   - a header line of the column names; lines end in CRLF (RFC 4180);
**   - a field is quoted (with '"', a '"' inside doubled) when it holds a
**     comma, a quote, CR or LF, or is empty; so NULL, the empty unquoted
**     field, differs from the empty TEXT, which is written "" (colstore_
**     import's rule: a quoted field is never NULL; DuckDB's read_csv needs
**     allow_quoted_nulls=false to see it so);
**   - integers in decimal; BOOL as 0 and 1, the values SQLite shows;
**   - FLOAT64 as the shortest of %.15g, %.16g, %.17g that reads back as
**     the same double (SQLite's own rule for printing a REAL), or, for a
**     value of at most 15 fraction digits between 1e-6 and 1e15 that is
**     exactly its decimal divided as IEEE divides, that decimal in plain
**     notation (fmt_decimal: no printf, no strtod), FLOAT32 the
**     same way with %.6g ... %.9g read back as the same float; NaN and
**     infinities as nan, inf, -inf (what strtod, Python and DuckDB read);
**   - BLOB as its bytes in upper-case hex, as SQLite's hex() writes them
**     (CSV has no binary; a reader unhex()es the column).
**
** Rows are formatted a row at a time into a 1 MiB buffer handed to the
** sink when full; a value longer than the buffer grows it.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_base_internal.h"
#include "cs_export_internal.h"

#define OUT_BYTES (1u << 20)

struct cs_format_writer {
  cs_sink sink;
  uint32_t n_cols;
  cs_type *types;
  uint8_t *buf;
  size_t n, cap;
};

static cs_rc flush(cs_format_writer *w, cs_err *err) {
  if (!w->n) return CS_OK;
  cs_rc rc = w->sink.write(w->sink.ctx, w->buf, w->n, err);
  w->n = 0;
  return rc;
}

/* Room for more bytes: flushes first, grows only for a value larger than
** the buffer. */
static cs_rc room(cs_format_writer *w, size_t more, cs_err *err) {
  if (w->n + more <= w->cap) return CS_OK;
  cs_rc rc = flush(w, err);
  if (rc || more <= w->cap) return rc;
  uint8_t *p = cs__mem_realloc(w->buf, more);
  if (!p) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing CSV");
  w->buf = p, w->cap = more;
  return CS_OK;
}

static bool needs_quote(const uint8_t *s, size_t n) {
  if (n == 0) return true;
  for (size_t i = 0; i < n; i++)
    if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') return true;
  return false;
}

/* A TEXT value or a name; room for 2n + 2 bytes reserved by the caller. */
static void put_text(cs_format_writer *w, const uint8_t *s, size_t n) {
  if (!needs_quote(s, n)) {
    memcpy(w->buf + w->n, s, n);
    w->n += n;
    return;
  }
  uint8_t *o = w->buf + w->n;
  *o++ = '"';
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"') *o++ = '"';
    *o++ = s[i];
  }
  *o++ = '"';
  w->n = (size_t)(o - w->buf);
}

static size_t fmt_i64(char *out, int64_t v) {
  char tmp[24];
  size_t n = 0;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do tmp[n++] = (char)('0' + u % 10), u /= 10;
  while (u);
  size_t k = 0;
  if (v < 0) out[k++] = '-';
  while (n) out[k++] = tmp[--n];
  return k;
}

/* A double that is m / 10^k exactly as IEEE divides, for an integer m
** below 2^53 and the least such k <= 15: m with a decimal point k digits
** from its right.  strtod reads that decimal to the double nearest to it,
** which is m / 10^k rounded, which is v: it round-trips, in the fewest
** fraction digits, without printf's and strtod's cost (most values of a
** table that came from decimal text).  0 when v is not such a number. */
static size_t fmt_decimal(char *out, double v) {
  static const double p10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  double a = fabs(v);
  if (!(a >= 1e-6 && a < 1e15)) return 0; /* %g's exponent form, and zero, take the slow path */
  for (int k = 0; k < 16; k++) {
    double m = nearbyint(a * p10[k]);
    if (m >= 9007199254740992.0) return 0;
    if (m / p10[k] != a) continue;
    char digits[24];
    size_t n = 0;
    for (uint64_t u = (uint64_t)m; u || n <= (size_t)k; u /= 10) digits[n++] = (char)('0' + u % 10);
    size_t o = 0;
    if (v < 0) out[o++] = '-';
    while (n > (size_t)k) out[o++] = digits[--n];
    if (k) out[o++] = '.';
    while (n) out[o++] = digits[--n];
    return o;
  }
  return 0;
}

/* The shortest %.Ng (N from lo to hi) that reads back as v (as a float
** when single); a double of few decimals through fmt_decimal. */
static size_t fmt_float(char *out, double v, bool single) {
  if (isnan(v)) return (size_t)snprintf(out, 32, "nan");
  if (isinf(v)) return (size_t)snprintf(out, 32, v < 0 ? "-inf" : "inf");
  size_t d = single ? 0 : fmt_decimal(out, v);
  if (d) return d;
  int lo = single ? 6 : 15, hi = single ? 9 : 17;
  for (int p = lo;; p++) {
    int n = snprintf(out, 32, "%.*g", p, v);
    if (p == hi) return (size_t)n;
    double back = strtod(out, NULL);
    if (single ? (float)back == (float)v : back == v) return (size_t)n;
  }
}

static cs_rc csv_open(const cs_schema *schema, const cs_out_options *opt, cs_sink sink,
                      cs_format_writer **out, cs_err *err) {
  (void)opt;
  *out = NULL;
  cs_format_writer *w = cs__mem_calloc(1, sizeof *w);
  if (w) w->types = cs__mem_malloc((schema->n_cols ? schema->n_cols : 1) * sizeof *w->types);
  if (w && w->types) w->buf = cs__mem_malloc(OUT_BYTES);
  if (!w || !w->types || !w->buf) {
    if (w) cs__mem_free(w->types), cs__mem_free(w);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing CSV");
  }
  w->sink = sink;
  w->cap = OUT_BYTES;
  w->n_cols = schema->n_cols;
  cs_rc rc = CS_OK;
  for (uint32_t i = 0; i < schema->n_cols && !rc; i++) {
    const char *name = schema->cols[i].name;
    w->types[i] = schema->cols[i].type;
    if (!(rc = room(w, 2 * strlen(name) + 4, err))) {
      if (i) w->buf[w->n++] = ',';
      put_text(w, (const uint8_t *)name, strlen(name));
    }
  }
  if (!rc && !(rc = room(w, 2, err))) w->buf[w->n++] = '\r', w->buf[w->n++] = '\n';
  if (rc) {
    cs__mem_free(w->buf), cs__mem_free(w->types), cs__mem_free(w);
    return rc;
  }
  *out = w;
  return CS_OK;
}

static cs_rc csv_write(cs_format_writer *w, uint64_t n_rows, const cs_chunk *cols, cs_err *err) {
  static const char hex[] = "0123456789ABCDEF";
  for (uint64_t r = 0; r < n_rows; r++) {
    for (uint32_t c = 0; c < w->n_cols; c++) {
      const cs_chunk *ch = &cols[c];
      cs_type t = w->types[c];
      cs_rc rc = room(w, 48, err);
      if (rc) return rc;
      if (c) w->buf[w->n++] = ',';
      if (!cs_chunk_is_valid(ch, r)) continue;
      char *o = (char *)w->buf + w->n;
      switch (t) {
        case CS_TYPE_INT8: w->n += fmt_i64(o, ((const int8_t *)ch->data)[r]); break;
        case CS_TYPE_INT16: w->n += fmt_i64(o, ((const int16_t *)ch->data)[r]); break;
        case CS_TYPE_INT32: w->n += fmt_i64(o, ((const int32_t *)ch->data)[r]); break;
        case CS_TYPE_INT64: w->n += fmt_i64(o, ((const int64_t *)ch->data)[r]); break;
        case CS_TYPE_UINT8:
        case CS_TYPE_BOOL: w->n += fmt_i64(o, ((const uint8_t *)ch->data)[r]); break;
        case CS_TYPE_UINT16: w->n += fmt_i64(o, ((const uint16_t *)ch->data)[r]); break;
        case CS_TYPE_UINT32: w->n += fmt_i64(o, ((const uint32_t *)ch->data)[r]); break;
        case CS_TYPE_FLOAT32: w->n += fmt_float(o, ((const float *)ch->data)[r], true); break;
        case CS_TYPE_FLOAT64: w->n += fmt_float(o, ((const double *)ch->data)[r], false); break;
        default: {
          const uint8_t *s = (const uint8_t *)ch->data + ch->offsets[r];
          size_t n = (size_t)(ch->offsets[r + 1] - ch->offsets[r]);
          if ((rc = room(w, 2 * n + 2, err))) return rc;
          if (t == CS_TYPE_TEXT) {
            put_text(w, s, n);
          } else if (n == 0) {
            w->buf[w->n++] = '"', w->buf[w->n++] = '"';
          } else {
            for (size_t i = 0; i < n; i++)
              w->buf[w->n++] = (uint8_t)hex[s[i] >> 4], w->buf[w->n++] = (uint8_t)hex[s[i] & 15];
          }
        }
      }
    }
    cs_rc rc = room(w, 2, err);
    if (rc) return rc;
    w->buf[w->n++] = '\r', w->buf[w->n++] = '\n';
  }
  return CS_OK;
}

static cs_rc csv_finish(cs_format_writer *w, uint64_t *out_groups, cs_err *err) {
  if (out_groups) *out_groups = 0;
  return flush(w, err);
}

static void csv_free(cs_format_writer *w) {
  if (!w) return;
  cs__mem_free(w->buf);
  cs__mem_free(w->types);
  cs__mem_free(w);
}

const cs_format_writer_ops cs_csv_writer_ops = {"csv", csv_open, csv_write, csv_finish, csv_free};
