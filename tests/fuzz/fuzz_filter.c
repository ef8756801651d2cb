/*
** fuzz_filter.c - what SQL can hand the virtual table: xBestIndex's
** constraints and xFilter's arguments, from arbitrary inputs.
**
** WHAT IT COVERS.  The extension is compiled into this binary with
** -DSQLITE_CORE (sqlite3ext.h then maps to direct calls) and registered on
** one in-memory connection by calling sqlite3_colstore_init.  Two stores
** are made once per process: t, 64 rows of every storage class in eight
** columns (INT64 NOT NULL and sorted, FLOAT64 with infinities, TEXT with
** numeric-looking and empty strings, BLOB, UINT8, FLOAT32, INT16, BOOL,
** NULLs in all but the first) in four commits, so four records; and w,
** 10,000 rows in three commits, enough for several batches, so the
** pipelined FILTERED cursor and the worker run.  Each input is decoded into
** a few statements: SELECTs whose WHERE clauses are built from the input
** (rowid and column comparisons with every operator, IN lists, BETWEEN,
** IS [NOT] NULL, OR, `_rows = ?` and `_mask = ?` BLOBs, constants of every
** storage class as literals and as bound parameters: integers at the
** int64 edges, floats including infinities, NaN (which binds as NULL) and
** -0.0, TEXT with NULs and invalid UTF-8, BLOBs, NULL), ORDER BY rowid,
** LIMIT and OFFSET of any value; INSERTs of fuzzed values inside a
** transaction that is always rolled back; and colstore's SQL functions.
**
** ORACLES.  Any SQLite error is acceptable, but an error colstore raises
** must say so ("colstore: ..."); one that does not must be SQLite's own,
** which the same statement on a native table then raises too.  Every SELECT
** without a hidden column is also run on native tables nt and nw that hold
** the same rows with the same rowids (the README's promise: the same
** results and errors as a native table); the results must be equal, in
** order when ORDER BY rowid is given, as a multiset otherwise, and by row
** count when LIMIT cuts an unordered result (column-to-column terms
** beside LIMIT included: see run_query).  After every rollback the
** tables hold exactly their rows again.  ASan, UBSan and LeakSanitizer
** watch everything else.
**
** The one decision a newcomer would question: the connection and the stores
** outlive the inputs.  Opening them per input would cost more than the
** queries, and nothing an input does can change them: writes are rolled
** back, and every setting an input may change (the mask gate) is set by
** every input before its first query.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colstore_ext.h"
#include "fuzz.h"

#define FF_T_ROWS 64
#define FF_W_ROWS 10000
#define FF_MAX_STATEMENTS 4
#define FF_MAX_TERMS 5
#define FF_MAX_PARAMS 40

static sqlite3 *g_db;
static char g_dir[4096];

/* ------------------------------------------------------------------ setup */

static void exec_ok(const char *sql) {
  char *err = NULL;
  int rc = sqlite3_exec(g_db, sql, NULL, NULL, &err);
  FZ_CHECK(rc == SQLITE_OK, "setup: %s: %s", sql, err ? err : "?");
}

static const char *const t_texts[] = {"",   "a",   "abc", "10", "2.5", " 7 ", "zz", "h\xc3\xa9llo",
                                      "-3", "1e3", "B"};
static const double t_floats[] = {
    0.0, 1.5, -2.25, 1e300, -1e300, 1.0 / 0.0, -1.0 / 0.0, 3.0, 0.1, 9007199254740993.0, -7.0};
static const int16_t t_shorts[] = {0, 1, -1, 32767, -32768, 300, -300, 7};

static void make_t(void) {
  char sql[8192];
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE t USING colstore('%s/t.cst', i INT64 NOT NULL, f FLOAT64, s TEXT, b BLOB, u "
           "UINT8, g FLOAT32, "
           "h INT16, o BOOL)",
           g_dir);
  exec_ok(sql);
  sqlite3_stmt *st;
  FZ_CHECK(sqlite3_prepare_v2(g_db, "INSERT INTO t VALUES (?,?,?,?,?,?,?,?)", -1, &st, NULL) == SQLITE_OK,
           "prepare insert");
  static const int commits[] = {0, 10, 25, 40, FF_T_ROWS};
  for (int c = 0; c < 4; c++) {
    exec_ok("BEGIN");
    for (int r = commits[c]; r < commits[c + 1]; r++) {
      sqlite3_bind_int64(st, 1, (sqlite3_int64)r * 3 - 50);
      if (r % 5 == 4)
        sqlite3_bind_null(st, 2);
      else
        sqlite3_bind_double(st, 2, t_floats[r % 11] + (r % 3));
      if (r % 7 == 3)
        sqlite3_bind_null(st, 3);
      else
        sqlite3_bind_text(st, 3, t_texts[r % 11], -1, SQLITE_STATIC);
      if (r % 6 == 5)
        sqlite3_bind_null(st, 4);
      else
        sqlite3_bind_blob(st, 4, "\x00\x01\xff\x02", r % 5, SQLITE_STATIC);
      if (r % 9 == 8)
        sqlite3_bind_null(st, 5);
      else
        sqlite3_bind_int(st, 5, (r * 37) % 256);
      if (r % 4 == 1)
        sqlite3_bind_null(st, 6);
      else
        sqlite3_bind_double(st, 6, (double)(float)(r * 0.1 - 2.0));
      if (r % 8 == 6)
        sqlite3_bind_null(st, 7);
      else
        sqlite3_bind_int(st, 7, t_shorts[r % 8]);
      if (r % 3 == 2)
        sqlite3_bind_null(st, 8);
      else
        sqlite3_bind_int(st, 8, r % 2);
      FZ_CHECK(sqlite3_step(st) == SQLITE_DONE, "insert into t: %s", sqlite3_errmsg(g_db));
      sqlite3_reset(st);
    }
    exec_ok("COMMIT");
  }
  sqlite3_finalize(st);
  exec_ok(
      "CREATE TABLE nt(i INTEGER, f REAL, s TEXT, b BLOB, u INTEGER, g REAL, h INTEGER, o INTEGER);"
      "INSERT INTO nt(rowid, i, f, s, b, u, g, h, o) SELECT rowid, i, f, s, b, u, g, h, o FROM t");
}

static void make_w(void) {
  char sql[8192];
  snprintf(sql, sizeof sql,
           "CREATE VIRTUAL TABLE w USING colstore('%s/w.cst', x INT32 NOT NULL, y FLOAT64, z TEXT)", g_dir);
  exec_ok(sql);
  static const int commits[] = {0, 4000, 7000, FF_W_ROWS};
  for (int c = 0; c < 3; c++) {
    snprintf(
        sql, sizeof sql,
        "INSERT INTO w WITH RECURSIVE n(v) AS (SELECT %d UNION ALL SELECT v + 1 FROM n WHERE v + 1 < %d) "
        "SELECT v, CASE WHEN v %% 7 = 0 THEN NULL ELSE v * 0.25 END, CASE WHEN v %% 11 = 0 THEN NULL ELSE "
        "'k' || (v %% 100) END FROM n",
        commits[c], commits[c + 1]);
    exec_ok(sql);
  }
  exec_ok(
      "CREATE TABLE nw(x INTEGER, y REAL, z TEXT); INSERT INTO nw(rowid, x, y, z) SELECT rowid, x, y, z FROM "
      "w");
}

/* At exit: the connection closed, the stores and their directory gone. */
static void teardown(void) {
  if (g_db) sqlite3_close(g_db), g_db = NULL;
  char p[4200];
  snprintf(p, sizeof p, "%s/t.cst", g_dir), unlink(p);
  snprintf(p, sizeof p, "%s/w.cst", g_dir), unlink(p);
  rmdir(g_dir);
}

static void setup(void) {
  if (g_db) return;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/fuzz_filter.XXXXXX", base && *base ? base : "/tmp");
  FZ_CHECK(mkdtemp(g_dir) != NULL, "mkdtemp: %s", strerror(errno));
  atexit(teardown);
  FZ_CHECK(sqlite3_open(":memory:", &g_db) == SQLITE_OK, "sqlite3_open");
  char *err = NULL;
  FZ_CHECK(sqlite3_colstore_init(g_db, &err, NULL) == SQLITE_OK, "sqlite3_colstore_init: %s",
           err ? err : "?");
  make_t();
  make_w();
  /* The smallest batches, so w's 10,000 rows take several. */
  exec_ok("SELECT colstore_config('batch_bytes', 65536)");
}

/* ------------------------------------------------------------ statements */

typedef struct ff_param {
  int kind; /* 0 NULL, 1 int, 2 double, 3 text, 4 blob, 5 zeroblob */
  sqlite3_int64 i;
  double d;
  const uint8_t *p; /* into the input */
  size_t n;
} ff_param;

typedef struct ff_query {
  sqlite3_str *cs, *nat; /* the statement on colstore's table and on the native one */
  ff_param params[FF_MAX_PARAMS];
  int n_params;
  bool hidden;  /* uses _rows or _mask: no native twin */
  bool ordered; /* ORDER BY rowid: results compare in order */
  bool limited; /* LIMIT without ORDER BY: compare row counts */
  bool is_w;
  uint8_t *owned[8]; /* _rows and _mask blobs built here */
  int n_owned;
} ff_query;

static void both(ff_query *q, const char *z) {
  sqlite3_str_appendall(q->cs, z);
  sqlite3_str_appendall(q->nat, z);
}

static int param_add(ff_query *q, ff_param p) {
  if (q->n_params == FF_MAX_PARAMS) return 0;
  q->params[q->n_params] = p;
  return ++q->n_params;
}

static ff_param param_decode(fz_in *in) {
  ff_param p;
  memset(&p, 0, sizeof p);
  static const sqlite3_int64 ints[] = {0,     1,         -1,        63,  64,  65,  -64,   -65,   9999,
                                       10000, INT64_MAX, INT64_MIN, 255, 256, -50, 32767, -32768};
  static const double dbls[] = {0.0,
                                -0.0,
                                0.5,
                                -0.5,
                                1e300,
                                -1e300,
                                1.0 / 0.0,
                                -1.0 / 0.0,
                                0.0 / 0.0,
                                63.5,
                                9.2233720368547758e18,
                                -9.2233720368547758e18,
                                4e-320,
                                1.5,
                                2.25};
  uint8_t k = fz_u8(in);
  switch (k % 9) {
    case 0: p.kind = 0; break;
    case 1: p.kind = 1, p.i = ints[fz_u8(in) % (sizeof ints / sizeof *ints)]; break;
    case 2: p.kind = 1, p.i = (int8_t)fz_u8(in); break;
    case 3: p.kind = 1, p.i = (sqlite3_int64)fz_u64(in); break;
    case 4: p.kind = 2, p.d = dbls[fz_u8(in) % (sizeof dbls / sizeof *dbls)]; break;
    case 5: p.kind = 2, p.d = fz_f64_bits(in); break;
    case 6: p.kind = 3, p.p = fz_bytes(in, fz_u8(in) % 12, &p.n); break;
    case 7: p.kind = 4, p.p = fz_bytes(in, fz_u8(in) % 12, &p.n); break;
    default: p.kind = 5, p.n = fz_u8(in) % 4; break;
  }
  return p;
}

/* A literal of any storage class (its SQL text), or a parameter. */
static void value_emit(ff_query *q, fz_in *in) {
  uint8_t k = fz_u8(in);
  char buf[128];
  if (k & 1) {
    int n = param_add(q, param_decode(in));
    snprintf(buf, sizeof buf, n ? "?%d" : "NULL", n);
    both(q, buf);
    return;
  }
  switch ((k >> 1) % 8) {
    case 0: both(q, "NULL"); break;
    case 1:
      snprintf(buf, sizeof buf, "%d", (int8_t)fz_u8(in));
      both(q, buf);
      break;
    case 2:
      snprintf(buf, sizeof buf, "%" PRId64, (int64_t)fz_u64(in));
      both(q, buf);
      break;
    case 3: {
      double d = (double)(int16_t)fz_u16(in) / 8.0;
      snprintf(buf, sizeof buf, "%.17g", d);
      if (!strpbrk(buf, ".en")) strcat(buf, ".0");
      both(q, buf);
      break;
    }
    case 4: both(q, fz_u8(in) & 1 ? "1e999" : "-1e999"); break;
    case 5: { /* TEXT literal: printable bytes, quotes doubled */
      size_t n;
      const uint8_t *p = fz_bytes(in, fz_u8(in) % 8, &n);
      both(q, "'");
      for (size_t i = 0; i < n; i++) {
        char c = (char)(p[i] < 32 || p[i] > 126 ? 'a' + p[i] % 26 : p[i]);
        char s[3] = {c, c == '\'' ? '\'' : 0, 0};
        both(q, s);
      }
      both(q, "'");
      break;
    }
    case 6: { /* BLOB literal */
      size_t n;
      const uint8_t *p = fz_bytes(in, fz_u8(in) % 6, &n);
      both(q, "x'");
      for (size_t i = 0; i < n; i++) snprintf(buf, sizeof buf, "%02x", p[i]), both(q, buf);
      both(q, "'");
      break;
    }
    default: both(q, "'7'"); break;
  }
}

/* _rows: int64 positions (small, negative from the end, or raw), or a
** value of the wrong shape. */
static void rows_param(ff_query *q, fz_in *in, uint64_t n_rows) {
  uint8_t k = fz_u8(in);
  ff_param p = {.kind = 4};
  if (k % 8 == 7) {
    p = param_decode(in); /* TEXT, a number, NULL... */
  } else if (k % 8 == 6) {
    p.p = fz_bytes(in, fz_u8(in) % 40, &p.n); /* raw, any length */
  } else if (q->n_owned < 8) {
    size_t n = fz_u8(in) % 24;
    int64_t *v = malloc((n ? n : 1) * 8);
    FZ_CHECK(v != NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
      uint8_t b = fz_u8(in);
      v[i] = b < 200   ? (int64_t)(b % (n_rows + 8)) - 4
             : b < 250 ? (int64_t)n_rows - 1 - (b - 200)
                       : (int64_t)fz_u64(in);
    }
    q->owned[q->n_owned++] = (uint8_t *)v;
    p.p = (const uint8_t *)v, p.n = n * 8;
  }
  int idx = param_add(q, p);
  char buf[32];
  snprintf(buf, sizeof buf, "_rows = %s%d", idx ? "?" : "NULL+", idx);
  sqlite3_str_appendall(q->cs, buf);
  sqlite3_str_appendall(q->nat, "1");
}

/* _mask: one byte per row (the right length most of the time). */
static void mask_param(ff_query *q, fz_in *in, uint64_t n_rows) {
  uint8_t k = fz_u8(in);
  ff_param p = {.kind = 4};
  if (k % 8 == 7) {
    p = param_decode(in);
  } else if (q->n_owned < 8) {
    uint64_t n = k % 8 == 6 ? n_rows + (fz_u8(in) % 3) - 1 : n_rows;
    uint8_t *m = malloc(n ? n : 1);
    FZ_CHECK(m != NULL, "out of memory");
    uint8_t density = fz_u8(in), seed = fz_u8(in);
    uint64_t st = seed;
    for (uint64_t i = 0; i < n; i++) m[i] = (uint8_t)((fz_mix(&st) & 255) < density ? 1 + (i & 1) : 0);
    q->owned[q->n_owned++] = m;
    p.p = m, p.n = n;
  }
  int idx = param_add(q, p);
  char buf[32];
  snprintf(buf, sizeof buf, "_mask = %s%d", idx ? "?" : "NULL+", idx);
  sqlite3_str_appendall(q->cs, buf);
  sqlite3_str_appendall(q->nat, "1");
}

static const char *const t_cols[] = {"i", "f", "s", "b", "u", "g", "h", "o"};
static const char *const w_cols[] = {"x", "y", "z"};
static const char *const ops[] = {"=", "==", "!=", "<>", "<", "<=", ">", ">=", " IS ", " IS NOT "};

static void term_emit(ff_query *q, fz_in *in, int depth) {
  const char *const *cols = q->is_w ? w_cols : t_cols;
  int n_cols = q->is_w ? 3 : 8;
  uint64_t n_rows = q->is_w ? FF_W_ROWS : FF_T_ROWS;
  uint8_t k = fz_u8(in);
  uint8_t c = fz_u8(in);
  const char *x = c % (n_cols + 2) >= (uint8_t)n_cols ? "rowid" : cols[c % (n_cols + 2)];
  switch (k % 12) {
    case 0:
    case 1:
    case 2: both(q, x), both(q, ops[fz_u8(in) % 10]), value_emit(q, in); break;
    case 3: value_emit(q, in), both(q, ops[fz_u8(in) % 10]), both(q, x); break;
    case 4:
    case 5: {
      both(q, x), both(q, fz_u8(in) & 1 ? " NOT IN (" : " IN (");
      int n = 1 + fz_u8(in) % 5;
      for (int i = 0; i < n; i++) {
        if (i) both(q, ",");
        value_emit(q, in);
      }
      both(q, ")");
      break;
    }
    case 6: both(q, x), both(q, fz_u8(in) & 1 ? " IS NULL" : " IS NOT NULL"); break;
    case 7: both(q, x), both(q, " BETWEEN "), value_emit(q, in), both(q, " AND "), value_emit(q, in); break;
    case 8:
      q->hidden = true;
      rows_param(q, in, n_rows);
      break;
    case 9:
      q->hidden = true;
      mask_param(q, in, n_rows);
      break;
    case 10:
      if (depth < 2) {
        both(q, "("), term_emit(q, in, depth + 1), both(q, " OR "), term_emit(q, in, depth + 1), both(q, ")");
      } else {
        both(q, x), both(q, " > "), value_emit(q, in);
      }
      break;
    default: /* two columns: never pushed down */
      both(q, x), both(q, ops[fz_u8(in) % 8]), both(q, cols[fz_u8(in) % n_cols]);
      break;
  }
}

static void query_build(ff_query *q, fz_in *in) {
  uint8_t k = fz_u8(in);
  q->is_w = k % 8 == 7;
  const char *tab = q->is_w ? "w" : "t", *ntab = q->is_w ? "nw" : "nt";
  const char *const *cols = q->is_w ? w_cols : t_cols;
  int n_cols = q->is_w ? 3 : 8;
  uint8_t sel = fz_u8(in);
  both(q, "SELECT ");
  switch (sel % 4) {
    case 0: both(q, "count(*)"); break;
    case 1: both(q, "rowid, *"); break;
    case 2: both(q, "rowid"); break;
    default: {
      both(q, "rowid");
      for (int c = 0; c < n_cols; c++)
        if ((sel >> (2 + c % 6)) & 1) both(q, ", "), both(q, cols[c]);
      break;
    }
  }
  sqlite3_str_appendf(q->cs, " FROM %s", tab);
  sqlite3_str_appendf(q->nat, " FROM %s", ntab);
  int n_terms = fz_u8(in) % (FF_MAX_TERMS + 1);
  for (int i = 0; i < n_terms; i++) {
    both(q, i ? " AND " : " WHERE ");
    term_emit(q, in, 0);
  }
  uint8_t tail = fz_u8(in);
  bool count = sel % 4 == 0;
  if (tail & 1 && !count) {
    both(q, tail & 2 ? " ORDER BY rowid DESC" : " ORDER BY rowid");
    q->ordered = true;
  }
  if (tail & 4 && !count) {
    both(q, " LIMIT "), value_emit(q, in);
    if (tail & 8) both(q, " OFFSET "), value_emit(q, in);
    q->limited = !q->ordered;
  }
}

/* ---------------------------------------------------------------- running */

typedef struct ff_result {
  int rc; /* SQLITE_DONE or the error */
  char msg[512];
  uint64_t *rows; /* a fingerprint per row; owned */
  uint64_t n, cap;
} ff_result;

static void bind_all(sqlite3_stmt *st, const ff_query *q) {
  for (int i = 0; i < q->n_params; i++) {
    const ff_param *p = &q->params[i];
    switch (p->kind) {
      case 0: sqlite3_bind_null(st, i + 1); break;
      case 1: sqlite3_bind_int64(st, i + 1, p->i); break;
      case 2: sqlite3_bind_double(st, i + 1, p->d); break;
      case 3: sqlite3_bind_text(st, i + 1, (const char *)p->p, (int)p->n, SQLITE_TRANSIENT); break;
      case 4:
        sqlite3_bind_blob(st, i + 1, p->n ? (const void *)p->p : "", (int)p->n, SQLITE_TRANSIENT);
        break;
      default: sqlite3_bind_zeroblob(st, i + 1, (int)p->n); break;
    }
  }
}

static uint64_t row_fingerprint(sqlite3_stmt *st) {
  uint64_t h = FZ_FNV_SEED;
  int n = sqlite3_column_count(st);
  for (int c = 0; c < n; c++) {
    int t = sqlite3_column_type(st, c);
    h = fz_fnv(h, &t, sizeof t);
    if (t == SQLITE_INTEGER) {
      sqlite3_int64 v = sqlite3_column_int64(st, c);
      h = fz_fnv(h, &v, 8);
    } else if (t == SQLITE_FLOAT) {
      double d = sqlite3_column_double(st, c);
      if (d == 0) d = 0; /* -0.0 and 0.0 are one value to SQL */
      h = fz_fnv(h, &d, 8);
    } else if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
      const void *p =
          t == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, c) : sqlite3_column_blob(st, c);
      int len = sqlite3_column_bytes(st, c);
      h = fz_fnv(h, &len, sizeof len);
      if (p && len) h = fz_fnv(h, p, (size_t)len);
    }
  }
  return h;
}

static void run_sql(const char *sql, const ff_query *q, ff_result *out) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(g_db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK && st) {
    if (q) bind_all(st, q);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->rows = realloc(out->rows, out->cap * sizeof *out->rows);
        FZ_CHECK(out->rows != NULL, "out of memory");
      }
      out->rows[out->n++] = row_fingerprint(st);
    }
  }
  out->rc = rc;
  if (rc != SQLITE_DONE && rc != SQLITE_OK) snprintf(out->msg, sizeof out->msg, "%s", sqlite3_errmsg(g_db));
  sqlite3_finalize(st);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static bool is_colstore_msg(const char *m) { return strncmp(m, "colstore: ", 10) == 0; }

static void run_query(fz_in *in) {
  ff_query q;
  memset(&q, 0, sizeof q);
  q.cs = sqlite3_str_new(NULL);
  q.nat = sqlite3_str_new(NULL);
  query_build(&q, in);
  char *zc = sqlite3_str_finish(q.cs), *zn = sqlite3_str_finish(q.nat);
  FZ_CHECK(zc && zn, "out of memory");
  ff_result rc_cs, rc_nat;
  run_sql(zc, &q, &rc_cs);
  bool cs_ok = rc_cs.rc == SQLITE_DONE || rc_cs.rc == SQLITE_OK;
  bool need_native = !q.hidden || (!cs_ok && !is_colstore_msg(rc_cs.msg));
  if (need_native) {
    run_sql(zn, &q, &rc_nat);
    bool nat_ok = rc_nat.rc == SQLITE_DONE || rc_nat.rc == SQLITE_OK;
    if (!cs_ok && !is_colstore_msg(rc_cs.msg))
      FZ_CHECK(!nat_ok && strcmp(rc_cs.msg, rc_nat.msg) == 0,
               "%s\n  failed with '%s', which is not colstore's, but natively %s", zc, rc_cs.msg,
               nat_ok ? "it succeeds" : rc_nat.msg);
    /* Column-to-column terms beside LIMIT are compared too: SQLite before
    ** 3.46 offers LIMIT beside a term it hides from the table, so colstore
    ** declines LIMIT there (colstore_plan.c, limit_offer_is_whole). */
    if (!q.hidden) {
      FZ_CHECK(cs_ok == nat_ok, "%s\n  colstore: %s; native: %s", zc, cs_ok ? "ok" : rc_cs.msg,
               nat_ok ? "ok" : rc_nat.msg);
      if (cs_ok && q.limited) {
        FZ_CHECK(rc_cs.n == rc_nat.n, "%s\n  %" PRIu64 " rows, native %" PRIu64, zc, rc_cs.n, rc_nat.n);
      } else if (cs_ok) {
        if (!q.ordered && rc_cs.n > 1) qsort(rc_cs.rows, rc_cs.n, sizeof *rc_cs.rows, cmp_u64);
        if (!q.ordered && rc_nat.n > 1) qsort(rc_nat.rows, rc_nat.n, sizeof *rc_nat.rows, cmp_u64);
        FZ_CHECK(rc_cs.n == rc_nat.n && (rc_cs.n == 0 || memcmp(rc_cs.rows, rc_nat.rows, rc_cs.n * 8) == 0),
                 "%s\n  results differ from the native table's (%" PRIu64 " rows, native %" PRIu64 ")", zc,
                 rc_cs.n, rc_nat.n);
      }
    }
    free(rc_nat.rows);
  }
  free(rc_cs.rows);
  for (int i = 0; i < q.n_owned; i++) free(q.owned[i]);
  sqlite3_free(zc);
  sqlite3_free(zn);
}

static sqlite3_int64 count_of(const char *tab) {
  char sql[64];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", tab);
  sqlite3_stmt *st;
  FZ_CHECK(sqlite3_prepare_v2(g_db, sql, -1, &st, NULL) == SQLITE_OK, "prepare count");
  FZ_CHECK(sqlite3_step(st) == SQLITE_ROW, "count(*) of %s: %s", tab, sqlite3_errmsg(g_db));
  sqlite3_int64 n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* Statements that must fail, if they fail, with colstore's own words. */
static void expect_colstore_error(const char *sql, const ff_query *q) {
  ff_result r;
  run_sql(sql, q, &r);
  if (r.rc != SQLITE_DONE && r.rc != SQLITE_OK)
    FZ_CHECK(is_colstore_msg(r.msg), "%s\n  failed with '%s'", sql, r.msg);
  free(r.rows);
}

/* INSERTs (and a DELETE) in a transaction that is always rolled back. */
static void run_write(fz_in *in) {
  exec_ok("BEGIN");
  int n_stmts = 1 + fz_u8(in) % 3;
  for (int s = 0; s < n_stmts; s++) {
    /* A failed statement must not have ended the transaction: a write
    ** outside it would commit. */
    FZ_CHECK(!sqlite3_get_autocommit(g_db), "the transaction ended under a failed statement");
    ff_query q;
    memset(&q, 0, sizeof q);
    q.cs = sqlite3_str_new(NULL);
    q.nat = sqlite3_str_new(NULL);
    uint8_t k = fz_u8(in);
    if (k % 8 == 7) {
      both(&q, "DELETE FROM t WHERE rowid = "), value_emit(&q, in);
    } else if (k % 8 == 6) {
      both(&q, "SAVEPOINT sp");
    } else if (k % 8 == 5) {
      both(&q, "ROLLBACK TO sp");
    } else {
      bool w = k & 0x80;
      both(&q, w ? "INSERT INTO w VALUES " : "INSERT INTO t VALUES ");
      int n_rows = 1 + fz_u8(in) % 3, n_cols = w ? 3 : 8;
      for (int r = 0; r < n_rows; r++) {
        both(&q, r ? ",(" : "(");
        for (int c = 0; c < n_cols; c++) {
          if (c) both(&q, ",");
          value_emit(&q, in);
        }
        both(&q, ")");
      }
    }
    char *zc = sqlite3_str_finish(q.cs), *zn = sqlite3_str_finish(q.nat);
    FZ_CHECK(zc && zn, "out of memory");
    ff_result r;
    run_sql(zc, &q, &r);
    /* ROLLBACK TO a savepoint that was never set is SQLite's error. */
    if (r.rc != SQLITE_DONE && r.rc != SQLITE_OK && strncmp(zc, "ROLLBACK TO", 11) != 0)
      FZ_CHECK(is_colstore_msg(r.msg), "%s\n  failed with '%s'", zc, r.msg);
    free(r.rows);
    sqlite3_free(zc);
    sqlite3_free(zn);
    if (fz_u8(in) & 1) run_query(in); /* reads inside the transaction */
  }
  if (!sqlite3_get_autocommit(g_db)) exec_ok("ROLLBACK");
  FZ_CHECK(count_of("t") == FF_T_ROWS && count_of("w") == FF_W_ROWS, "a rolled-back transaction left rows");
}

static void run_function(fz_in *in) {
  static const char *const fns[] = {"SELECT colstore_last_plan()", "SELECT colstore_info('t')",
                                    "SELECT colstore_verify('t')", "SELECT colstore_info('w')",
                                    "SELECT colstore_info(?1)",    "SELECT colstore_verify(?1)",
                                    "SELECT colstore_version()"};
  ff_query q;
  memset(&q, 0, sizeof q);
  uint8_t k = fz_u8(in) % (sizeof fns / sizeof *fns);
  if (k == 4 || k == 5) param_add(&q, param_decode(in));
  expect_colstore_error(fns[k], &q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup();
  fz_in in = fz_in_make(data, size);
  /* The mask gate decides mask-native or positions; every input sets it. */
  static const char *const gates[] = {"SELECT colstore_config('mask_gate', 0)",
                                      "SELECT colstore_config('mask_gate', 0.5)",
                                      "SELECT colstore_config('mask_gate', 1)"};
  exec_ok(gates[fz_u8(&in) % 3]);
  for (int s = 0; s < FF_MAX_STATEMENTS && in.n > 0; s++) {
    uint8_t k = fz_u8(&in);
    if (k % 16 == 15)
      run_write(&in);
    else if (k % 16 == 14)
      run_function(&in);
    else
      run_query(&in);
  }
  FZ_CHECK(sqlite3_get_autocommit(g_db), "a transaction was left open");
  return 0;
}
