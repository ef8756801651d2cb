/*
** bench_sql.c - what a SQL user pays: store open time, colstore_create
** throughput and file overhead, and scan queries on a colstore table
** against a native SQLite table holding the same rows.
**
** HOW IT WORKS
**
** The data (fixed seed, default 10M rows): a FLOAT64 uniform in [0, 1),
** b INT64 uniform in 0..999, c FLOAT64 standard normal (Box-Muller), d INT32
** 1 for 10% of the rows else 0.  Each row draws exactly five numbers from
** one splitmix64 stream, so a smaller run's rows are a prefix of a larger
** one's.  The rows go into a native table `native(a REAL, b INTEGER, c
** REAL, d INT32)` in the work directory; the colstore stores are made from
** it with colstore_create (the declared type INT32 makes d an INT32
** column).  Files are named by row count, seed and generator version and
** reused when present, so a rerun times instead of generating.
**
** Then, in this order:
**   1. checks: every variant of every query must give the same answer
**      (floating sums compared bit for bit) before anything is timed;
**   2. open: cs_store_open+cs_store_close (core), and CREATE VIRTUAL TABLE
**      + the first query (SQL), at three row counts, interleaved;
**   3. colstore_create throughput, interleaved with a scan of the source;
**   4. the queries, every variant interleaved (A B C A B C ...) over the
**      rounds; every timed run re-checks its answer;
**   5. optionally, a record-size sweep (file overhead and scan time per
**      record size), written through the core writer;
**   6. tables of medians with min/max (wall clock, CLOCK_MONOTONIC) and the
**      median thread CPU time beside them (on a shared machine, wall minus
**      CPU is time spent preempted), ratios of medians from this run, and
**      the targets with PASS/FAIL.  The exit status is 0 whether or not
**      a target is met: this reports, it does not test.  It is nonzero only
**      when the variants disagree (then nothing is worth timing) or when
**      something cannot be set up.
**
** The anchors for sum(a): a C loop over the store's mapped record arrays
** (plain C, same summation order, so bound by the add latency chain), and
** `bench_floor`, a minimal row-at-a-time virtual table defined here that
** hands SQLite one double per xColumn call: SQLite's own per-row cost with
** no store logic.
** It serves the values three ways: from one malloc'd array, straight from
** the store's mapping, or copied record by record into a reused buffer, so
** the cost of copying against reading the mapping is measured like for
** like.
**
** --profile X sets everything up, then runs only X once inside
** profile_target(), for callgrind (bench/profile_sql.sh drives it).
**
** The one choice a reader might question: the timed statements are
** prepared once and reset between runs, so preparation is not in the query
** times (the open measurement is where preparation is counted).  All data
** is page-cache warm: the checks read every file before any timing.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "colstore.h"

#define BENCH_GEN_VERSION 1 /* bump when the data generator changes */
#define BENCH_MAX_ROUNDS 1000
#define BENCH_MAX_VARIANTS 32
#define BENCH_RAW_ROW_BYTES (8 + 8 + 8 + 4)

/* ------------------------------------------------------------ options */

typedef struct bench_opts {
  uint64_t rows;     /* rows in the big store and the native table */
  int rounds;        /* interleaved rounds for the queries */
  int create_rounds; /* rounds of colstore_create */
  int open_reps;     /* core open+close repeats per row count */
  int sql_open_reps; /* CREATE VIRTUAL TABLE + first query repeats */
  uint64_t seed;
  char dir[4096];    /* work directory */
  char module[4096]; /* path of colstore.so */
  bool sweep;        /* run the record-size sweep */
  bool keep;         /* keep the sweep's files */
  bool quick;
  const char *profile; /* run only this (under callgrind), e.g. "sum(a)/colstore" */
} bench_opts;

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--quick] [--rows N] [--rounds N] [--create-rounds N] [--open-reps N]\n"
          "          [--sql-open-reps N] [--seed S] [--dir DIR] [--module PATH] [--no-sweep] [--keep] "
          "[--profile X]\n"
          "  --quick       1M rows, 3 rounds (a smoke run, not for decisions)\n"
          "  --dir         work directory for the native DB and stores (default: bench-data beside\n"
          "                this executable, i.e. build/bench-data)\n"
          "  --module      colstore.so to load (default: colstore.so beside this executable)\n"
          "  --no-sweep    skip the record-size sweep\n"
          "  --profile X   set up, then run only X once inside profile_target() and exit, for\n"
          "                valgrind --tool=callgrind --toggle-collect=profile_target (see profile_sql.sh);\n"
          "                X is QUERY/VARIANT as in the results table (\"sum(a)/colstore\"), or\n"
          "                open/core or open/sql (one open of the largest store), or\n"
          "                create/colstore (one colstore_create of the whole native table)\n"
          "  --keep        keep the sweep's store files\n",
          argv0);
}

static void opts_parse(int argc, char **argv, bench_opts *o) {
  char exe_dir[4096];
  bench_path(exe_dir, sizeof exe_dir, "%s", argv[0]);
  char *slash = strrchr(exe_dir, '/');
  if (slash)
    *slash = 0;
  else
    bench_path(exe_dir, sizeof exe_dir, ".");
  *o = (bench_opts){.rows = 10000000,
                    .rounds = 7,
                    .create_rounds = 3,
                    .open_reps = 1000,
                    .sql_open_reps = 200,
                    .seed = 20240601,
                    .sweep = true};
  bench_path(o->dir, sizeof o->dir, "%s/bench-data", exe_dir);
  bench_path(o->module, sizeof o->module, "%s/colstore.so", exe_dir);
  bool rows_set = false, rounds_set = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
/* The option's value (and step past it), or usage and exit when it is missing. */
#define ARG_VALUE() (v ? (i++, v) : (usage(argv[0]), exit(2), (const char *)NULL))
    if (strcmp(a, "--quick") == 0)
      o->quick = true;
    else if (strcmp(a, "--no-sweep") == 0)
      o->sweep = false;
    else if (strcmp(a, "--keep") == 0)
      o->keep = true;
    else if (strcmp(a, "--rows") == 0)
      o->rows = strtoull(ARG_VALUE(), NULL, 10), rows_set = true;
    else if (strcmp(a, "--rounds") == 0)
      o->rounds = atoi(ARG_VALUE()), rounds_set = true;
    else if (strcmp(a, "--create-rounds") == 0)
      o->create_rounds = atoi(ARG_VALUE());
    else if (strcmp(a, "--open-reps") == 0)
      o->open_reps = atoi(ARG_VALUE());
    else if (strcmp(a, "--sql-open-reps") == 0)
      o->sql_open_reps = atoi(ARG_VALUE());
    else if (strcmp(a, "--seed") == 0)
      o->seed = strtoull(ARG_VALUE(), NULL, 0);
    else if (strcmp(a, "--dir") == 0)
      bench_path(o->dir, sizeof o->dir, "%s", ARG_VALUE());
    else if (strcmp(a, "--profile") == 0)
      o->profile = ARG_VALUE();
    else if (strcmp(a, "--module") == 0)
      bench_path(o->module, sizeof o->module, "%s", ARG_VALUE());
    else {
      usage(argv[0]);
      exit(strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 ? 0 : 2);
    }
#undef ARG_VALUE
  }
  if (o->quick) {
    if (!rows_set) o->rows = 1000000;
    if (!rounds_set) o->rounds = 3;
  }
  if (o->rows < 1000) o->rows = 1000; /* the open sweep uses rows/100 */
  if (o->rounds < 1) o->rounds = 1;
  if (o->rounds > BENCH_MAX_ROUNDS) o->rounds = BENCH_MAX_ROUNDS;
  if (o->create_rounds < 1) o->create_rounds = 1;
  if (o->create_rounds > BENCH_MAX_ROUNDS) o->create_rounds = BENCH_MAX_ROUNDS;
  if (o->open_reps < 1) o->open_reps = 1;
  if (o->sql_open_reps < 1) o->sql_open_reps = 1;
}

/* --------------------------------------------------------------- errors */

static void die(const char *what) {
  fprintf(stderr, "bench_sql: %s\n", what);
  exit(1);
}

static void die_db(sqlite3 *db, const char *what) {
  fprintf(stderr, "bench_sql: %s: %s\n", what, db ? sqlite3_errmsg(db) : "(no connection)");
  exit(1);
}

static void exec_or_die(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "bench_sql: %s\n  in: %s\n", err ? err : sqlite3_errmsg(db), sql);
    exit(1);
  }
}

static sqlite3_stmt *prepare_or_die(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_sql: cannot prepare: %s\n  in: %s\n", sqlite3_errmsg(db), sql);
    exit(1);
  }
  return st;
}

/* ----------------------------------------------------------------- data */

typedef struct bench_data {
  uint64_t n_rows;
  double *a;  /* uniform [0, 1) */
  int64_t *b; /* uniform 0..999 */
  double *c;  /* standard normal */
  int32_t *d; /* 1 with probability 0.1, else 0 */
} bench_data;

static void data_generate(bench_data *d, uint64_t n, uint64_t seed) {
  d->n_rows = n;
  d->a = malloc(n * sizeof *d->a);
  d->b = malloc(n * sizeof *d->b);
  d->c = malloc(n * sizeof *d->c);
  d->d = malloc(n * sizeof *d->d);
  if (!d->a || !d->b || !d->c || !d->d) die("out of memory for the generated columns");
  uint64_t st = seed;
  const double two_pi = 6.283185307179586476925286766559;
  for (uint64_t i = 0; i < n; i++) {
    d->a[i] = bench_unit_double(bench_splitmix64(&st));
    d->b[i] = (int64_t)(((bench_splitmix64(&st) >> 32) * 1000u) >> 32);
    double u1 = ((double)(bench_splitmix64(&st) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1]: log is finite */
    double u2 = bench_unit_double(bench_splitmix64(&st));
    d->c[i] = sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
    d->d[i] = bench_unit_double(bench_splitmix64(&st)) < 0.1 ? 1 : 0;
  }
}

static void data_free(bench_data *d) { free(d->a), free(d->b), free(d->c), free(d->d); }

/* --------------------------------------------------------- native table */

/* True when the native DB at path holds this generator's rows for (rows, seed). */
static bool native_matches(const char *path, uint64_t rows, uint64_t seed) {
  if (bench_file_bytes(path) < 0) return false;
  sqlite3 *db = NULL;
  bool ok = false;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT rows, seed, gen, (SELECT max(rowid) FROM native) FROM bench_params",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
      ok = (uint64_t)sqlite3_column_int64(st, 0) == rows && (uint64_t)sqlite3_column_int64(st, 1) == seed &&
           sqlite3_column_int64(st, 2) == BENCH_GEN_VERSION && (uint64_t)sqlite3_column_int64(st, 3) == rows;
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return ok;
}

/* Writes the rows into a new DB beside path, then renames it into place,
** so an interrupted build is never mistaken for a finished one. */
static void native_build(const char *path, const bench_data *d, uint64_t seed) {
  char tmp[4200];
  bench_path(tmp, sizeof tmp, "%s.tmp", path);
  unlink(tmp);
  sqlite3 *db = NULL;
  if (sqlite3_open(tmp, &db) != SQLITE_OK) die_db(db, "cannot create the native DB");
  exec_or_die(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-262144;");
  exec_or_die(db,
              "CREATE TABLE native(a REAL, b INTEGER, c REAL, d INT32);"
              "CREATE TABLE bench_params(rows INTEGER, seed INTEGER, gen INTEGER);");
  exec_or_die(db, "BEGIN");
  sqlite3_stmt *ins = prepare_or_die(db, "INSERT INTO native(rowid, a, b, c, d) VALUES (?1, ?2, ?3, ?4, ?5)");
  for (uint64_t i = 0; i < d->n_rows; i++) {
    sqlite3_bind_int64(ins, 1, (sqlite3_int64)i + 1); /* native rowids are 1-based */
    sqlite3_bind_double(ins, 2, d->a[i]);
    sqlite3_bind_int64(ins, 3, d->b[i]);
    sqlite3_bind_double(ins, 4, d->c[i]);
    sqlite3_bind_int64(ins, 5, d->d[i]);
    if (sqlite3_step(ins) != SQLITE_DONE) die_db(db, "insert into the native table");
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  char *sql = sqlite3_mprintf("INSERT INTO bench_params VALUES (%lld, %lld, %d)", (long long)d->n_rows,
                              (long long)seed, BENCH_GEN_VERSION);
  exec_or_die(db, sql);
  sqlite3_free(sql);
  exec_or_die(db, "COMMIT");
  if (sqlite3_close(db) != SQLITE_OK) die("cannot close the native DB");
  if (rename(tmp, path) != 0) die("cannot rename the native DB into place");
}

/* ----------------------------------------------------- the floor vtab */

/* bench_floor: the least a row-at-a-time virtual table can do.  One column
** `a REAL`; rowid is the 0-based row; `rowid = ?` is served directly (the
** open measurement's query), anything else is a full scan.  The argument
** picks where values come from: array (one malloc'd array), map (the
** store's mapping, record by record, as colstore reads it) or copy (each
** record memcpy'd into one reused buffer, then served from there). */

typedef enum floor_mode { FLOOR_ARRAY, FLOOR_MAP, FLOOR_COPY } floor_mode;

typedef struct floor_source {
  const double *array; /* n_rows values; owned by main */
  uint64_t n_rows;
  const cs_store *store; /* column col holds the same values; owned by main */
  uint32_t col;
} floor_source;

typedef struct floor_vtab {
  sqlite3_vtab base; /* must be first */
  const floor_source *src;
  floor_mode mode;
} floor_vtab;

typedef struct floor_cursor {
  sqlite3_vtab_cursor base; /* must be first */
  uint64_t row, end;        /* current row; one past the last to return */
  const double *vals;       /* values of rows [vals_first, vals_end) */
  uint64_t vals_first, vals_end;
  double *buf;       /* FLOOR_COPY: one record's values, reused */
  uint64_t buf_rows; /* capacity of buf in rows */
} floor_cursor;

static int floor_connect(sqlite3 *db, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                         char **pzErr) {
  floor_mode mode = FLOOR_ARRAY;
  if (argc > 3) {
    if (strcmp(argv[3], "map") == 0)
      mode = FLOOR_MAP;
    else if (strcmp(argv[3], "copy") == 0)
      mode = FLOOR_COPY;
    else if (strcmp(argv[3], "array") != 0) {
      *pzErr = sqlite3_mprintf("bench_floor: the argument is array, map or copy");
      return SQLITE_ERROR;
    }
  }
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(a REAL)");
  if (rc != SQLITE_OK) return rc;
  floor_vtab *t = sqlite3_malloc(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  t->src = pAux;
  t->mode = mode;
  *ppVtab = &t->base;
  return SQLITE_OK;
}

static int floor_disconnect(sqlite3_vtab *pVtab) {
  sqlite3_free(pVtab);
  return SQLITE_OK;
}

static int floor_best_index(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  const floor_vtab *t = (const floor_vtab *)pVtab;
  for (int i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if (c->usable && c->iColumn == -1 && c->op == SQLITE_INDEX_CONSTRAINT_EQ) {
      pInfo->idxNum = 1;
      pInfo->aConstraintUsage[i].argvIndex = 1;
      pInfo->aConstraintUsage[i].omit = 1;
      pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
      pInfo->estimatedCost = 1.0;
      pInfo->estimatedRows = 1;
      return SQLITE_OK;
    }
  }
  pInfo->idxNum = 0;
  pInfo->estimatedCost = (double)t->src->n_rows;
  pInfo->estimatedRows = (sqlite3_int64)t->src->n_rows;
  return SQLITE_OK;
}

static int floor_open(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  (void)pVtab;
  floor_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *ppCursor = &c->base;
  return SQLITE_OK;
}

static int floor_close(sqlite3_vtab_cursor *cur) {
  floor_cursor *c = (floor_cursor *)cur;
  sqlite3_free(c->buf);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* Points vals at the values around c->row. */
static int floor_load(floor_cursor *c) {
  const floor_vtab *t = (const floor_vtab *)c->base.pVtab;
  const floor_source *src = t->src;
  if (t->mode == FLOOR_ARRAY) {
    c->vals = src->array, c->vals_first = 0, c->vals_end = src->n_rows;
    return SQLITE_OK;
  }
  uint64_t rec = cs_store_find_record(src->store, c->row);
  uint64_t n = cs_store_record_rows(src->store, rec);
  const cs_chunk *ch = cs_store_chunk(src->store, rec, src->col);
  c->vals_first = cs_store_record_first_row(src->store, rec);
  c->vals_end = c->vals_first + n;
  if (t->mode == FLOOR_MAP) {
    c->vals = ch->data;
    return SQLITE_OK;
  }
  if (c->buf_rows < n) {
    sqlite3_free(c->buf);
    if (!(c->buf = sqlite3_malloc64(n * sizeof *c->buf))) return SQLITE_NOMEM;
    c->buf_rows = n;
  }
  memcpy(c->buf, ch->data, n * sizeof *c->buf);
  c->vals = c->buf;
  return SQLITE_OK;
}

static int floor_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                        sqlite3_value **argv) {
  floor_cursor *c = (floor_cursor *)cur;
  const floor_vtab *t = (const floor_vtab *)cur->pVtab;
  (void)idxStr;
  c->row = 0, c->end = t->src->n_rows;
  if (idxNum == 1 && argc == 1) {
    sqlite3_int64 r = sqlite3_value_int64(argv[0]);
    if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER && r >= 0 && (uint64_t)r < t->src->n_rows)
      c->row = (uint64_t)r, c->end = (uint64_t)r + 1;
    else
      c->end = 0;
  }
  return c->row < c->end ? floor_load(c) : SQLITE_OK;
}

static int floor_next(sqlite3_vtab_cursor *cur) {
  floor_cursor *c = (floor_cursor *)cur;
  if (++c->row >= c->vals_end && c->row < c->end) return floor_load(c);
  return SQLITE_OK;
}

static int floor_eof(sqlite3_vtab_cursor *cur) {
  const floor_cursor *c = (const floor_cursor *)cur;
  return c->row >= c->end;
}

static int floor_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
  const floor_cursor *c = (const floor_cursor *)cur;
  (void)i;
  sqlite3_result_double(ctx, c->vals[c->row - c->vals_first]);
  return SQLITE_OK;
}

static int floor_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid) {
  *pRowid = (sqlite3_int64)((const floor_cursor *)cur)->row;
  return SQLITE_OK;
}

static sqlite3_module floor_module = {
    /* iVersion    */ 0,
    /* xCreate     */ floor_connect,
    /* xConnect    */ floor_connect,
    /* xBestIndex  */ floor_best_index,
    /* xDisconnect */ floor_disconnect,
    /* xDestroy    */ floor_disconnect,
    /* xOpen       */ floor_open,
    /* xClose      */ floor_close,
    /* xFilter     */ floor_filter,
    /* xNext       */ floor_next,
    /* xEof        */ floor_eof,
    /* xColumn     */ floor_column,
    /* xRowid      */ floor_rowid,
    /* xUpdate     */ NULL,
    /* xBegin      */ NULL,
    /* xSync       */ NULL,
    /* xCommit     */ NULL,
    /* xRollback   */ NULL,
    /* xFindFunction */ NULL,
    /* xRename     */ NULL,
    /* xSavepoint  */ NULL,
    /* xRelease    */ NULL,
    /* xRollbackTo */ NULL,
    /* xShadowName */ NULL,
};

/* ------------------------------------------------------- connections */

static sqlite3 *connect_or_die(const char *path, int flags, const bench_opts *o, const floor_source *src) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) die_db(db, "cannot open a connection");
  sqlite3_enable_load_extension(db, 1);
  char *err = NULL;
  if (sqlite3_load_extension(db, o->module, "sqlite3_colstore_init", &err) != SQLITE_OK) {
    fprintf(stderr, "bench_sql: cannot load %s: %s\n", o->module, err ? err : "?");
    exit(1);
  }
  if (sqlite3_create_module(db, "bench_floor", &floor_module, (void *)src) != SQLITE_OK)
    die_db(db, "cannot register bench_floor");
  return db;
}

/* Makes the store at path from the first n rows of the native table,
** unless a store with exactly n rows is already there. */
static void store_ensure(sqlite3 *db, const char *path, uint64_t n, uint64_t n_native, bool fresh_native) {
  cs_store *s = NULL;
  cs_err err = {0};
  if (!fresh_native && cs_store_open(path, CS_VERIFY_HEADER, &s, &err) == CS_OK) {
    bool ok = cs_store_rows(s) == n;
    cs_store_close(s);
    if (ok) {
      printf("  reusing %s\n", path);
      return;
    }
  }
  char *query = n == n_native
                    ? sqlite3_mprintf("SELECT * FROM native")
                    : sqlite3_mprintf("SELECT * FROM native WHERE rowid <= %llu", (unsigned long long)n);
  char *sql = sqlite3_mprintf("SELECT colstore_create(%Q, %Q, 'replace')", path, query);
  printf("  making %s (%llu rows) with colstore_create\n", path, (unsigned long long)n);
  fflush(stdout);
  sqlite3_stmt *st = prepare_or_die(db, sql);
  if (sqlite3_step(st) != SQLITE_ROW || (uint64_t)sqlite3_column_int64(st, 0) != n)
    die_db(db, "colstore_create");
  sqlite3_finalize(st);
  sqlite3_free(sql);
  sqlite3_free(query);
}

/* ------------------------------------------------------------ variants */

typedef struct bench_value {
  bool is_float;
  double f;
  int64_t i;
} bench_value;

static bool value_same(bench_value x, bench_value y) {
  if (x.is_float != y.is_float) return false;
  if (!x.is_float) return x.i == y.i;
  return memcmp(&x.f, &y.f, sizeof x.f) == 0; /* bit for bit */
}

static void value_print(FILE *f, bench_value v) {
  if (v.is_float)
    fprintf(f, "%.17g (bits %016llx)", v.f,
            (unsigned long long)(union {
              double d;
              uint64_t u;
            }){v.f}
                .u);
  else
    fprintf(f, "%lld", (long long)v.i);
}

typedef enum variant_kind { V_SQL, V_RAW_SUM } variant_kind;

/* One thing to time: a prepared one-row statement, or the C loop. */
typedef struct variant {
  const char *group; /* the query, e.g. "sum(a)" */
  const char *name;  /* e.g. "colstore" */
  const char *what;  /* SQL text or a description, for the report */
  variant_kind kind;
  sqlite3_stmt *st;      /* V_SQL */
  const cs_store *store; /* V_RAW_SUM: sums column col in row order */
  uint32_t col;
  uint64_t rows;                   /* rows the query visits, for ns/row */
  bench_value expect;              /* the checked answer; every timed run must match */
  double ms[BENCH_MAX_ROUNDS];     /* wall clock (CLOCK_MONOTONIC) per round */
  double cpu_ms[BENCH_MAX_ROUNDS]; /* this thread's CPU time per round */
  int n;
} variant;

static double raw_sum_f64(const cs_store *s, uint32_t col) {
  double sum = 0.0;
  uint64_t n_rec = cs_store_records(s);
  for (uint64_t r = 0; r < n_rec; r++) {
    const double *x = cs_store_chunk(s, r, col)->data;
    uint64_t n = cs_store_record_rows(s, r);
    for (uint64_t i = 0; i < n; i++) sum += x[i];
  }
  return sum;
}

static bench_value variant_run(variant *v, double *out_ms, double *out_cpu_ms) {
  bench_value out = {0};
  uint64_t c0 = bench_thread_cpu_ns();
  uint64_t t0 = bench_now_ns();
  if (v->kind == V_RAW_SUM) {
    out.is_float = true;
    out.f = raw_sum_f64(v->store, v->col);
  } else {
    if (sqlite3_step(v->st) != SQLITE_ROW) die_db(sqlite3_db_handle(v->st), v->what);
    out.is_float = sqlite3_column_type(v->st, 0) == SQLITE_FLOAT;
    if (out.is_float)
      out.f = sqlite3_column_double(v->st, 0);
    else
      out.i = sqlite3_column_int64(v->st, 0);
    sqlite3_reset(v->st);
  }
  uint64_t t1 = bench_now_ns();
  uint64_t c1 = bench_thread_cpu_ns();
  if (out_ms) *out_ms = (double)(t1 - t0) / 1e6;
  if (out_cpu_ms) *out_cpu_ms = (double)(c1 - c0) / 1e6;
  return out;
}

static variant *find_variant(variant *vs, int n, const char *group, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(vs[i].group, group) == 0 && strcmp(vs[i].name, name) == 0) return &vs[i];
  return NULL;
}

/* ------------------------------------------------------------ summing */

/* SQLite before 3.43 sums REAL values with a plain `+=` in row order; 3.43
** and later use Kahan-Babuska-Neumaier.  Both references are computed, so
** a mismatch can say which rule the library follows. */
static double sum_naive(const double *x, uint64_t lo, uint64_t hi) {
  double s = 0.0;
  for (uint64_t i = lo; i < hi; i++) s += x[i];
  return s;
}

static double sum_kbn(const double *x, uint64_t lo, uint64_t hi) {
  volatile double s = 0.0, e = 0.0;
  for (uint64_t i = lo; i < hi; i++) {
    volatile double r = x[i], t = s + r;
    if (fabs(s) > fabs(r))
      e += (s - t) + r;
    else
      e += (r - t) + s;
    s = t;
  }
  return s + e;
}

/* ----------------------------------------------------------- reporting */

typedef enum target_status { T_FAIL, T_PASS, T_INFO } target_status;

typedef struct target_line {
  char text[256];
  target_status status;
} target_line;

static target_line g_targets[16];
static int g_n_targets;

static void target_add(target_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void target_add(target_status status, const char *fmt, ...) {
  if (g_n_targets >= (int)(sizeof g_targets / sizeof g_targets[0])) return;
  target_line *t = &g_targets[g_n_targets++];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->text, sizeof t->text, fmt, ap);
  va_end(ap);
  t->status = status;
}

static void print_stats_row(const char *label, bench_stats s, const char *unit, double scale) {
  printf("| %-48s | %10.4g | %10.4g | %10.4g | %-4s |\n", label, s.median * scale, s.min * scale,
         s.max * scale, unit);
}

/* ------------------------------------------------------------ the parts */

typedef struct bench_paths {
  char native[4200];
  char store[4200];         /* the big store */
  char open_store[3][4200]; /* rows/100, rows/10, rows */
  uint64_t open_rows[3];
  char create_tmp[4200];
} bench_paths;

static void part_open(const bench_opts *o, const bench_paths *p, const floor_source *src) {
  printf("\n== Open time (page-cache warm; %d core repeats, %d SQL repeats per size, sizes interleaved) ==\n",
         o->open_reps, o->sql_open_reps);
  double *core_us[3], *sql_us[3], *floor_us;
  for (int k = 0; k < 3; k++) {
    core_us[k] = malloc((size_t)o->open_reps * sizeof(double));
    sql_us[k] = malloc((size_t)o->sql_open_reps * sizeof(double));
    if (!core_us[k] || !sql_us[k]) die("out of memory");
  }
  floor_us = malloc((size_t)o->sql_open_reps * sizeof(double));
  if (!floor_us) die("out of memory");
  uint64_t n_records[3];
  for (int k = 0; k < 3; k++) { /* warm-up, and the record counts */
    cs_store *s = NULL;
    cs_err err = {0};
    if (cs_store_open(p->open_store[k], CS_VERIFY_HEADER, &s, &err) != CS_OK) die(err.msg);
    n_records[k] = cs_store_records(s);
    cs_store_close(s);
  }
  for (int r = 0; r < o->open_reps; r++)
    for (int k = 0; k < 3; k++) {
      cs_store *s = NULL;
      cs_err err = {0};
      uint64_t t0 = bench_now_ns();
      cs_rc rc = cs_store_open(p->open_store[k], CS_VERIFY_HEADER, &s, &err);
      cs_store_close(s);
      uint64_t t1 = bench_now_ns();
      if (rc != CS_OK) die(err.msg);
      core_us[k][r] = (double)(t1 - t0) / 1e3;
    }

  /* SQL: a fresh in-memory connection, so the DDL writes no file. */
  sqlite3 *db = connect_or_die(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, o, src);
  for (int r = -3; r < o->sql_open_reps; r++) /* three warm-up rounds */
    for (int k = 0; k <= 3; k++) {
      char *ddl = k < 3 ? sqlite3_mprintf("CREATE VIRTUAL TABLE t USING colstore(%Q)", p->open_store[k])
                        : sqlite3_mprintf("CREATE VIRTUAL TABLE t USING bench_floor(array)");
      uint64_t t0 = bench_now_ns();
      exec_or_die(db, ddl);
      sqlite3_stmt *st = prepare_or_die(db, "SELECT count(*) FROM t WHERE rowid = 0");
      if (sqlite3_step(st) != SQLITE_ROW) die_db(db, "first query");
      sqlite3_int64 got = sqlite3_column_int64(st, 0);
      sqlite3_finalize(st);
      uint64_t t1 = bench_now_ns();
      if (got != 1) die("the first query after CREATE VIRTUAL TABLE did not count 1 row");
      exec_or_die(db, "DROP TABLE t");
      sqlite3_free(ddl);
      if (r < 0) continue;
      if (k < 3)
        sql_us[k][r] = (double)(t1 - t0) / 1e3;
      else
        floor_us[r] = (double)(t1 - t0) / 1e3;
    }
  sqlite3_close(db);

  printf("\n| %-48s | %10s | %10s | %10s | %-4s |\n", "open variant (rows, records)", "median", "min", "max",
         "unit");
  printf("|%s|%s|%s|%s|%s|\n", "--------------------------------------------------", "------------",
         "------------", "------------", "------");
  bench_stats core[3], sql[3];
  for (int k = 0; k < 3; k++) {
    char label[128];
    core[k] = bench_stats_of(core_us[k], o->open_reps);
    snprintf(label, sizeof label, "cs_store_open+close (%llu, %llu)", (unsigned long long)p->open_rows[k],
             (unsigned long long)n_records[k]);
    print_stats_row(label, core[k], "us", 1.0);
  }
  for (int k = 0; k < 3; k++) {
    char label[128];
    sql[k] = bench_stats_of(sql_us[k], o->sql_open_reps);
    snprintf(label, sizeof label, "CREATE VT colstore + 1st query (%llu, %llu)",
             (unsigned long long)p->open_rows[k], (unsigned long long)n_records[k]);
    print_stats_row(label, sql[k], "us", 1.0);
  }
  bench_stats fl = bench_stats_of(floor_us, o->sql_open_reps);
  print_stats_row("anchor: CREATE VT bench_floor + 1st query", fl, "us", 1.0);

  double core_flat = core[2].median / core[0].median, sql_flat = sql[2].median / sql[0].median;
  printf("\nflatness: median at %llu rows / median at %llu rows = %.2f (core), %.2f (SQL)\n",
         (unsigned long long)p->open_rows[2], (unsigned long long)p->open_rows[0], core_flat, sql_flat);
  /* Open reads the footer's directory, so its cost grows with the record
  ** count; the slope says how far the 1 ms target reaches. */
  double per_rec_ns = 1e3 * (core[2].median - core[0].median) / (double)(n_records[2] - n_records[0]);
  double sql_per_rec_ns = 1e3 * (sql[2].median - sql[0].median) / (double)(n_records[2] - n_records[0]);
  double rows_per_rec = (double)p->open_rows[2] / (double)n_records[2];
  if (per_rec_ns > 0)
    printf(
        "slope: %.0f ns per record (core), %.0f ns per record (SQL); at that slope the core open reaches 1 "
        "ms at "
        "~%.0f records (~%.2g rows at %.0f rows/record)\n",
        per_rec_ns, sql_per_rec_ns, (double)n_records[0] + (1000.0 - core[0].median) * 1e3 / per_rec_ns,
        ((double)n_records[0] + (1000.0 - core[0].median) * 1e3 / per_rec_ns) * rows_per_rec, rows_per_rec);
  printf("SQL open minus the bench_floor anchor (colstore's own share) at %llu rows: %.1f us\n",
         (unsigned long long)p->open_rows[2], sql[2].median - fl.median);
  bool core_ok = true, sql_ok = true;
  for (int k = 0; k < 3; k++) core_ok &= core[k].median < 1000.0, sql_ok &= sql[k].median < 1000.0;
  target_add(core_ok ? T_PASS : T_FAIL,
             "open, core cs_store_open+close: median %.1f / %.1f / %.1f us at %llu / %llu / %llu rows; "
             "target < 1 ms",
             core[0].median, core[1].median, core[2].median, (unsigned long long)p->open_rows[0],
             (unsigned long long)p->open_rows[1], (unsigned long long)p->open_rows[2]);
  target_add(sql_ok ? T_PASS : T_FAIL,
             "open, SQL CREATE VIRTUAL TABLE + first query: median %.1f / %.1f / %.1f us; target < 1 ms",
             sql[0].median, sql[1].median, sql[2].median);
  target_add(
      core_flat <= 1.5 && sql_flat <= 1.5 ? T_PASS : T_FAIL,
      "open is flat in rows: median(%llux rows)/median(1x) = %.2f core, %.2f SQL (counted flat if <= 1.5); "
      "slope %.0f ns/record",
      (unsigned long long)(p->open_rows[2] / p->open_rows[0]), core_flat, sql_flat, per_rec_ns);
  for (int k = 0; k < 3; k++) free(core_us[k]), free(sql_us[k]);
  free(floor_us);
}

static void part_create(const bench_opts *o, const bench_paths *p, sqlite3 *db) {
  printf("\n== colstore_create throughput (%d rounds, interleaved with a scan of the source) ==\n",
         o->create_rounds);
  char *sql = sqlite3_mprintf("SELECT colstore_create(%Q, 'SELECT * FROM native', 'replace')", p->create_tmp);
  sqlite3_stmt *create = prepare_or_die(db, sql);
  sqlite3_free(sql);
  sqlite3_stmt *scan = prepare_or_die(db, "SELECT sum(a), sum(b), sum(c), sum(d) FROM native");
  double *create_ms = malloc((size_t)o->create_rounds * sizeof(double));
  double *scan_ms = malloc((size_t)o->create_rounds * sizeof(double));
  if (!create_ms || !scan_ms) die("out of memory");
  for (int r = 0; r < o->create_rounds; r++) {
    uint64_t t0 = bench_now_ns();
    if (sqlite3_step(create) != SQLITE_ROW || (uint64_t)sqlite3_column_int64(create, 0) != o->rows)
      die_db(db, "colstore_create");
    sqlite3_reset(create);
    uint64_t t1 = bench_now_ns();
    if (sqlite3_step(scan) != SQLITE_ROW) die_db(db, "source scan");
    sqlite3_reset(scan);
    uint64_t t2 = bench_now_ns();
    create_ms[r] = (double)(t1 - t0) / 1e6;
    scan_ms[r] = (double)(t2 - t1) / 1e6;
  }
  sqlite3_finalize(create);
  sqlite3_finalize(scan);
  bench_stats cs = bench_stats_of(create_ms, o->create_rounds),
              ss = bench_stats_of(scan_ms, o->create_rounds);
  double n = (double)o->rows;
  printf("\n| %-48s | %10s | %10s | %10s | %-4s |\n", "variant", "median", "min", "max", "unit");
  printf("|%s|%s|%s|%s|%s|\n", "--------------------------------------------------", "------------",
         "------------", "------------", "------");
  print_stats_row("colstore_create('x', 'SELECT * FROM native')", cs, "ms", 1.0);
  print_stats_row("anchor: SELECT sum(a..d) FROM native", ss, "ms", 1.0);
  /* rows/s: best is n / min time, worst is n / max time. */
  printf(
      "\ncolstore_create: %.3g rows/s median (%.3g .. %.3g), %.1f ns/row; the source scan alone: %.1f ns/row "
      "(%.0f%% of create)\n",
      n / (cs.median / 1e3), n / (cs.max / 1e3), n / (cs.min / 1e3), cs.median * 1e6 / n, ss.median * 1e6 / n,
      100.0 * ss.median / cs.median);
  long long bytes = bench_file_bytes(p->create_tmp), big = bench_file_bytes(p->store);
  double raw = n * BENCH_RAW_ROW_BYTES;
  double ratio = (double)bytes / raw;
  cs_store *s = NULL;
  cs_err err = {0};
  if (cs_store_open(p->create_tmp, CS_VERIFY_HEADER, &s, &err) != CS_OK) die(err.msg);
  uint64_t n_rec = cs_store_records(s);
  cs_store_close(s);
  printf(
      "file: %lld bytes; raw column bytes %llu x %d = %.0f; ratio %.5f; overhead %lld bytes = %.0f bytes per "
      "record (%llu records)\n",
      bytes, (unsigned long long)o->rows, BENCH_RAW_ROW_BYTES, raw, ratio, bytes - (long long)raw,
      ((double)bytes - raw) / (double)n_rec, (unsigned long long)n_rec);
  if (big != bytes)
    printf("note: the reused store %s is %lld bytes, the fresh one %lld\n", p->store, big, bytes);
  target_add(T_INFO, "colstore_create: %.3g rows/s median (%.3g .. %.3g); no numeric target (reported)",
             n / (cs.median / 1e3), n / (cs.max / 1e3), n / (cs.min / 1e3));
  target_add(ratio <= 1.02 ? T_PASS : T_FAIL, "file size / raw column bytes = %.5f; target <= 1.02", ratio);
  unlink(p->create_tmp);
  free(create_ms);
  free(scan_ms);
}

/* The record-size sweep: the same rows written through the core writer at
** several record sizes; file overhead and SQL sum(a) time per size. */
static void part_sweep(const bench_opts *o, const bench_data *d, sqlite3 *db, double expect_sum_a) {
  static const uint64_t sizes[] = {4096, 16384, 65536, 262144, 1048576};
  enum { N_SIZES = sizeof sizes / sizeof sizes[0] };
  printf("\n== Record-size sweep (%llu rows, core writer; sum(a) via SQL, %d rounds interleaved) ==\n",
         (unsigned long long)d->n_rows, o->rounds);
  static const cs_column cols[4] = {{"a", CS_TYPE_FLOAT64, true},
                                    {"b", CS_TYPE_INT64, true},
                                    {"c", CS_TYPE_FLOAT64, true},
                                    {"d", CS_TYPE_INT32, true}};
  cs_schema schema = {4, cols};
  char paths[N_SIZES][4200];
  double write_ms[N_SIZES];
  long long bytes[N_SIZES];
  uint64_t recs[N_SIZES];
  sqlite3_stmt *st[N_SIZES];
  static double ms[N_SIZES][BENCH_MAX_ROUNDS];
  for (int k = 0; k < N_SIZES; k++) {
    bench_path(paths[k], sizeof paths[k], "%s/sweep_%llu.cst", o->dir, (unsigned long long)sizes[k]);
    cs_err err = {0};
    cs_batch *batch = NULL;
    cs_writer *w = NULL;
    cs_writer_options wo = {.record_rows = sizes[k], .replace = true};
    uint64_t t0 = bench_now_ns();
    if (cs_batch_new(&schema, &batch, &err) != CS_OK ||
        cs_writer_create(paths[k], &schema, &wo, &w, &err) != CS_OK)
      die(err.msg);
    uint64_t step = sizes[k] > 1048576 ? sizes[k] : 1048576; /* a multiple of every record size */
    for (uint64_t first = 0; first < d->n_rows; first += step) {
      uint64_t end = first + step < d->n_rows ? first + step : d->n_rows;
      for (uint64_t i = first; i < end; i++) {
        cs_batch_put_f64(batch, 0, d->a[i], NULL);
        cs_batch_put_i64(batch, 1, d->b[i], NULL);
        cs_batch_put_f64(batch, 2, d->c[i], NULL);
        cs_batch_put_i64(batch, 3, d->d[i], NULL);
        cs_batch_end_row(batch);
      }
      if (cs_writer_write(w, batch, &err) != CS_OK) die(err.msg);
      cs_batch_clear(batch);
    }
    if (cs_writer_commit(w, &err) != CS_OK) die(err.msg);
    cs_batch_free(batch);
    write_ms[k] = (double)(bench_now_ns() - t0) / 1e6;
    bytes[k] = bench_file_bytes(paths[k]);
    cs_store *s = NULL;
    if (cs_store_open(paths[k], CS_VERIFY_HEADER, &s, &err) != CS_OK) die(err.msg);
    recs[k] = cs_store_records(s);
    cs_store_close(s);
    char *sql = sqlite3_mprintf(
        "DROP TABLE IF EXISTS temp.sw%d; CREATE VIRTUAL TABLE temp.sw%d USING colstore(%Q)", k, k, paths[k]);
    exec_or_die(db, sql);
    sqlite3_free(sql);
    sql = sqlite3_mprintf("SELECT sum(a) FROM temp.sw%d", k);
    st[k] = prepare_or_die(db, sql);
    sqlite3_free(sql);
    /* check (and warm) before timing */
    if (sqlite3_step(st[k]) != SQLITE_ROW) die_db(db, "sweep sum(a)");
    double got = sqlite3_column_double(st[k], 0);
    sqlite3_reset(st[k]);
    if (memcmp(&got, &expect_sum_a, sizeof got) != 0) {
      fprintf(stderr, "bench_sql: sweep store with %llu-row records gives sum(a) %.17g, expected %.17g\n",
              (unsigned long long)sizes[k], got, expect_sum_a);
      exit(2);
    }
  }
  /* Open time per record size: the directory grows with the record count. */
  int open_reps = o->open_reps < 300 ? o->open_reps : 300;
  double *open_us[N_SIZES];
  for (int k = 0; k < N_SIZES; k++)
    if (!(open_us[k] = malloc((size_t)open_reps * sizeof(double)))) die("out of memory");
  for (int r = 0; r < open_reps; r++)
    for (int k = 0; k < N_SIZES; k++) {
      cs_store *s = NULL;
      cs_err err = {0};
      uint64_t t0 = bench_now_ns();
      cs_rc rc = cs_store_open(paths[k], CS_VERIFY_HEADER, &s, &err);
      cs_store_close(s);
      open_us[k][r] = (double)(bench_now_ns() - t0) / 1e3;
      if (rc != CS_OK) die(err.msg);
    }
  for (int r = 0; r < o->rounds; r++)
    for (int k = 0; k < N_SIZES; k++) {
      uint64_t t0 = bench_now_ns();
      if (sqlite3_step(st[k]) != SQLITE_ROW) die_db(db, "sweep sum(a)");
      double got = sqlite3_column_double(st[k], 0);
      sqlite3_reset(st[k]);
      ms[k][r] = (double)(bench_now_ns() - t0) / 1e6;
      if (memcmp(&got, &expect_sum_a, sizeof got) != 0) die("sweep: a timed run changed its answer");
    }
  double raw = (double)d->n_rows * BENCH_RAW_ROW_BYTES;
  printf(
      "\n| record rows | records | file bytes | file/raw | overhead B/record | write ms (1 run) | open+close "
      "us "
      "median (min..max), %d reps | sum(a) ms median (min..max) | ns/row |\n",
      open_reps);
  printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int k = 0; k < N_SIZES; k++) {
    bench_stats s = bench_stats_of(ms[k], o->rounds), os = bench_stats_of(open_us[k], open_reps);
    printf("| %llu | %llu | %lld | %.5f | %.0f | %.0f | %.1f (%.1f..%.1f) | %.2f (%.2f..%.2f) | %.2f |\n",
           (unsigned long long)sizes[k], (unsigned long long)recs[k], bytes[k], (double)bytes[k] / raw,
           ((double)bytes[k] - raw) / (double)recs[k], write_ms[k], os.median, os.min, os.max, s.median,
           s.min, s.max, s.median * 1e6 / (double)d->n_rows);
    free(open_us[k]);
    sqlite3_finalize(st[k]);
    char *sql = sqlite3_mprintf("DROP TABLE temp.sw%d", k);
    exec_or_die(db, sql);
    sqlite3_free(sql);
    if (!o->keep) unlink(paths[k]);
  }
}

/* ------------------------------------------------------------- profile */

/* The one function callgrind collects in (--toggle-collect=profile_target):
** one run of a variant, or one open of the store at path.  noinline keeps
** it a real function the tool can see. */
__attribute__((noinline)) static void profile_target(variant *v, sqlite3 *db, const char *open_mode,
                                                     const char *path) {
  if (v) {
    variant_run(v, NULL, NULL);
    return;
  }
  if (strcmp(open_mode, "create") == 0) { /* path is the file to write */
    char *sql = sqlite3_mprintf("SELECT colstore_create(%Q, 'SELECT * FROM native', 'replace')", path);
    sqlite3_stmt *st = prepare_or_die(db, sql);
    if (sqlite3_step(st) != SQLITE_ROW) die_db(db, "colstore_create");
    sqlite3_finalize(st);
    sqlite3_free(sql);
    return;
  }
  if (strcmp(open_mode, "core") == 0) {
    cs_store *s = NULL;
    cs_err err = {0};
    if (cs_store_open(path, CS_VERIFY_HEADER, &s, &err) != CS_OK) die(err.msg);
    cs_store_close(s);
    return;
  }
  char *ddl = sqlite3_mprintf("CREATE VIRTUAL TABLE temp.t_open USING colstore(%Q)", path);
  exec_or_die(db, ddl);
  sqlite3_free(ddl);
  sqlite3_stmt *st = prepare_or_die(db, "SELECT count(*) FROM temp.t_open WHERE rowid = 0");
  if (sqlite3_step(st) != SQLITE_ROW) die_db(db, "first query");
  sqlite3_finalize(st);
}

static int profile_run(const bench_opts *o, variant *vs, int nv, sqlite3 *db, const bench_paths *p) {
  const char *store_path = p->store;
  char group[128];
  const char *slash = strchr(o->profile, '/');
  if (!slash || (size_t)(slash - o->profile) >= sizeof group)
    die("--profile wants QUERY/VARIANT, e.g. sum(a)/colstore");
  memcpy(group, o->profile, (size_t)(slash - o->profile));
  group[slash - o->profile] = 0;
  if (strcmp(group, "open") == 0) {
    if (strcmp(slash + 1, "core") != 0 && strcmp(slash + 1, "sql") != 0)
      die("--profile open/core or open/sql");
    profile_target(NULL, db, slash + 1, store_path);
    printf("profile: ran %s once on %s\n", o->profile, store_path);
    return 0;
  }
  if (strcmp(o->profile, "create/colstore") == 0) {
    profile_target(NULL, db, "create", p->create_tmp);
    unlink(p->create_tmp);
    printf("profile: ran %s once; rows visited %llu (divide the collected Ir by this)\n", o->profile,
           (unsigned long long)o->rows);
    return 0;
  }
  variant *v = find_variant(vs, nv, group, slash + 1);
  if (!v) {
    fprintf(stderr, "bench_sql: no variant %s; the variants are:\n", o->profile);
    for (int i = 0; i < nv; i++) fprintf(stderr, "  %s/%s\n", vs[i].group, vs[i].name);
    return 2;
  }
  variant_run(v, NULL, NULL); /* warm, outside the collected function */
  profile_target(v, db, NULL, NULL);
  printf("profile: ran %s once; rows visited %llu (divide the collected Ir by this)\n", o->profile,
         (unsigned long long)v->rows);
  return 0;
}

/* ----------------------------------------------------------------- main */

int main(int argc, char **argv) {
  bench_opts o;
  opts_parse(argc, argv, &o);
  setvbuf(stdout, NULL, _IOLBF, 0);

  char cpu[256];
  bench_cpu_model(cpu, sizeof cpu);
  printf("bench_sql: colstore %s, SQLite %s (library), %ld CPUs online, CPU model: %s\n", CS_VERSION_STRING,
         sqlite3_libversion(), bench_nproc(), cpu);
  printf("rows %llu, seed %llu, rounds %d, create rounds %d, work dir %s, module %s%s\n",
         (unsigned long long)o.rows, (unsigned long long)o.seed, o.rounds, o.create_rounds, o.dir, o.module,
         o.quick ? " (--quick)" : "");
  printf(
      "all timings are page-cache warm (every file is read by the checks before timing); clock: "
      "CLOCK_MONOTONIC\n");
  printf("load average (1 min) at start: %.2f\n", bench_loadavg());
  if (bench_mkdir_p(o.dir) != 0) die("cannot create the work directory");

  bench_paths p;
  memset(&p, 0, sizeof p);
  bench_path(p.native, sizeof p.native, "%s/native_%llu_s%llu_g%d.db", o.dir, (unsigned long long)o.rows,
             (unsigned long long)o.seed, BENCH_GEN_VERSION);
  p.open_rows[0] = o.rows / 100, p.open_rows[1] = o.rows / 10, p.open_rows[2] = o.rows;
  for (int k = 0; k < 3; k++)
    bench_path(p.open_store[k], sizeof p.open_store[k], "%s/store_%llu_s%llu_g%d_%llu.cst", o.dir,
               (unsigned long long)o.rows, (unsigned long long)o.seed, BENCH_GEN_VERSION,
               (unsigned long long)p.open_rows[k]);
  bench_path(p.store, sizeof p.store, "%s", p.open_store[2]);
  bench_path(p.create_tmp, sizeof p.create_tmp, "%s/create_tmp.cst", o.dir);

  /* ---- data */
  bench_data data;
  uint64_t t0 = bench_now_ns();
  data_generate(&data, o.rows, o.seed);
  printf("\n== Data ==\ngenerated %llu rows in memory in %.0f ms (seed %llu)\n", (unsigned long long)o.rows,
         (double)(bench_now_ns() - t0) / 1e6, (unsigned long long)o.seed);
  bool fresh_native = false;
  if (native_matches(p.native, o.rows, o.seed)) {
    printf("  reusing %s\n", p.native);
  } else {
    fresh_native = true;
    printf("  making %s ...\n", p.native);
    t0 = bench_now_ns();
    native_build(p.native, &data, o.seed);
    printf("  native table built in %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
  }
  printf("  native DB: %lld bytes (%.3f x raw column bytes)\n", bench_file_bytes(p.native),
         (double)bench_file_bytes(p.native) / ((double)o.rows * BENCH_RAW_ROW_BYTES));

  /* ---- the main connection: native table in main, colstore and floors in temp */
  floor_source src = {data.a, o.rows, NULL, 0};
  sqlite3 *db = connect_or_die(p.native, SQLITE_OPEN_READWRITE, &o, &src);
  for (int k = 2; k >= 0; k--) store_ensure(db, p.open_store[k], p.open_rows[k], o.rows, fresh_native);
  cs_store *store = NULL;
  cs_err err = {0};
  if (cs_store_open(p.store, CS_VERIFY_HEADER, &store, &err) != CS_OK) die(err.msg);
  src.store = store;
  const cs_schema *schema = cs_store_schema(store);
  printf("  store: %llu rows in %llu records; columns:", (unsigned long long)cs_store_rows(store),
         (unsigned long long)cs_store_records(store));
  for (uint32_t i = 0; i < schema->n_cols; i++)
    printf(" %s %s", schema->cols[i].name, cs_type_name(schema->cols[i].type));
  printf("\n");
  static const cs_type want_types[4] = {CS_TYPE_FLOAT64, CS_TYPE_INT64, CS_TYPE_FLOAT64, CS_TYPE_INT32};
  if (schema->n_cols != 4) die("the store does not have 4 columns");
  for (uint32_t i = 0; i < 4; i++)
    if (schema->cols[i].type != want_types[i])
      printf("WARNING: column %s is %s, expected %s\n", schema->cols[i].name,
             cs_type_name(schema->cols[i].type), cs_type_name(want_types[i]));
  char *sql = sqlite3_mprintf(
      "CREATE VIRTUAL TABLE temp.cs USING colstore(%Q);"
      "CREATE VIRTUAL TABLE temp.floor_array USING bench_floor(array);"
      "CREATE VIRTUAL TABLE temp.floor_map USING bench_floor(map);"
      "CREATE VIRTUAL TABLE temp.floor_copy USING bench_floor(copy);",
      p.store);
  exec_or_die(db, sql);
  sqlite3_free(sql);

  /* A second connection on the native DB with memory-mapped I/O on: the
  ** native table with its fastest read path, as an extra reference. */
  sqlite3 *db_mmap = connect_or_die(p.native, SQLITE_OPEN_READONLY, &o, &src);
  exec_or_die(db_mmap, "PRAGMA mmap_size=4294967296");
  sqlite3_int64 mmap_eff = 0;
  {
    sqlite3_stmt *st = prepare_or_die(db_mmap, "PRAGMA mmap_size");
    if (sqlite3_step(st) == SQLITE_ROW) mmap_eff = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  long long native_bytes = bench_file_bytes(p.native);
  printf("  native-mmap connection: PRAGMA mmap_size effective %lld bytes%s\n", (long long)mmap_eff,
         mmap_eff < native_bytes ? " (WARNING: smaller than the DB; part of it is read with read())" : "");
  {
    sqlite3_stmt *st = prepare_or_die(db, "PRAGMA cache_size");
    if (sqlite3_step(st) == SQLITE_ROW)
      printf("  native connection: default page cache (PRAGMA cache_size = %lld), no mmap\n",
             (long long)sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
  }

  /* ---- variants */
  uint64_t n = o.rows, lo = n / 10, hi = 2 * (n / 10) - 1; /* colstore rowids [lo, hi], 0-based */
  char range_cs[256], range_nat[256];
  snprintf(range_cs, sizeof range_cs, "SELECT sum(a) FROM temp.cs WHERE rowid BETWEEN %llu AND %llu",
           (unsigned long long)lo, (unsigned long long)hi);
  snprintf(range_nat, sizeof range_nat, "SELECT sum(a) FROM native WHERE rowid BETWEEN %llu AND %llu",
           (unsigned long long)lo + 1, (unsigned long long)hi + 1);
  static variant vs[BENCH_MAX_VARIANTS];
  int nv = 0;
#define ADD_SQL(G, NAME, DB, SQLTEXT, ROWS)               \
  vs[nv++] = (variant){.group = G,                        \
                       .name = NAME,                      \
                       .what = SQLTEXT,                   \
                       .kind = V_SQL,                     \
                       .st = prepare_or_die(DB, SQLTEXT), \
                       .rows = ROWS}
  vs[nv++] = (variant){.group = "sum(a)",
                       .name = "C loop over mapped records",
                       .what = "raw C loop",
                       .kind = V_RAW_SUM,
                       .store = store,
                       .col = 0,
                       .rows = n};
  ADD_SQL("sum(a)", "bench_floor(array)", db, "SELECT sum(a) FROM temp.floor_array", n);
  ADD_SQL("sum(a)", "bench_floor(map)", db, "SELECT sum(a) FROM temp.floor_map", n);
  ADD_SQL("sum(a)", "bench_floor(copy)", db, "SELECT sum(a) FROM temp.floor_copy", n);
  ADD_SQL("sum(a)", "colstore", db, "SELECT sum(a) FROM temp.cs", n);
  ADD_SQL("sum(a)", "native", db, "SELECT sum(a) FROM native", n);
  ADD_SQL("sum(a)", "native, mmap_size=4G", db_mmap, "SELECT sum(a) FROM native", n);
  ADD_SQL("sum(b)", "colstore", db, "SELECT sum(b) FROM temp.cs", n);
  ADD_SQL("sum(b)", "native", db, "SELECT sum(b) FROM native", n);
  ADD_SQL("count(*)", "colstore", db, "SELECT count(*) FROM temp.cs", n);
  ADD_SQL("count(*)", "native", db, "SELECT count(*) FROM native", n);
  ADD_SQL("range sum(a)", "colstore", db, range_cs, hi - lo + 1);
  ADD_SQL("range sum(a)", "native", db, range_nat, hi - lo + 1);
#undef ADD_SQL

  if (o.profile) return profile_run(&o, vs, nv, db, &p);

  /* ---- checks: before any timing, every variant must agree */
  printf("\n== Checks (every variant must agree before anything is timed) ==\n");
  double ref_a = sum_naive(data.a, 0, n), ref_a_kbn = sum_kbn(data.a, 0, n);
  double ref_r = sum_naive(data.a, lo, hi + 1), ref_r_kbn = sum_kbn(data.a, lo, hi + 1);
  int64_t ref_b = 0;
  for (uint64_t i = 0; i < n; i++) ref_b += data.b[i];
  bool bad = false;
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    bench_value got = variant_run(v, NULL, NULL);
    bench_value naive = {0}, kbn = {0};
    if (strcmp(v->group, "sum(a)") == 0)
      naive = (bench_value){true, ref_a, 0}, kbn = (bench_value){true, ref_a_kbn, 0};
    else if (strcmp(v->group, "range sum(a)") == 0)
      naive = (bench_value){true, ref_r, 0}, kbn = (bench_value){true, ref_r_kbn, 0};
    else if (strcmp(v->group, "sum(b)") == 0)
      naive = kbn = (bench_value){false, 0, ref_b};
    else
      naive = kbn = (bench_value){false, 0, (int64_t)n};
    const char *how =
        value_same(got, naive) ? (naive.is_float ? "bit-identical to the in-order C sum" : "exact")
        : value_same(got, kbn) ? "bit-identical to the in-order Kahan-Babuska-Neumaier sum (SQLite >= 3.43)"
                               : NULL;
    printf("  %-12s %-28s = ", v->group, v->name);
    value_print(stdout, got);
    printf("  %s\n", how ? how : "MISMATCH");
    if (!how) bad = true;
    v->expect = got;
  }
  /* Within a group, the SQL variants must agree with one another exactly. */
  for (int i = 0; i < nv; i++)
    for (int j = 0; j < nv; j++)
      if (vs[i].kind == V_SQL && vs[j].kind == V_SQL && strcmp(vs[i].group, vs[j].group) == 0 &&
          !value_same(vs[i].expect, vs[j].expect)) {
        printf("  MISMATCH: %s: %s and %s differ\n", vs[i].group, vs[i].name, vs[j].name);
        bad = true;
      }
  /* The other columns, untimed: the stores and the native table hold the same rows. */
  {
    double ref_c = sum_naive(data.c, 0, n);
    int64_t ref_d = 0;
    for (uint64_t i = 0; i < n; i++) ref_d += data.d[i];
    const char *q[2] = {"SELECT sum(c), sum(d), typeof(sum(d)) FROM temp.cs",
                        "SELECT sum(c), sum(d), typeof(sum(d)) FROM native"};
    for (int k = 0; k < 2; k++) {
      sqlite3_stmt *st = prepare_or_die(db, q[k]);
      if (sqlite3_step(st) != SQLITE_ROW) die_db(db, q[k]);
      double c = sqlite3_column_double(st, 0);
      int64_t dd = sqlite3_column_int64(st, 1);
      bool ok = memcmp(&c, &ref_c, sizeof c) == 0 && dd == ref_d;
      printf("  %-12s %-28s = %.17g, %lld  %s\n", "sum(c), sum(d)", k ? "native" : "colstore", c,
             (long long)dd, ok ? "bit-identical / exact" : "MISMATCH");
      bad |= !ok;
      sqlite3_finalize(st);
    }
  }
  if (bad) {
    printf("\nbench_sql: the variants disagree; nothing is timed.\n");
    return 2;
  }
  printf("  all variants agree.\n");

  /* ---- open, create */
  part_open(&o, &p, &src);
  part_create(&o, &p, db);

  /* ---- queries, interleaved */
  printf("\n== Queries (%d rounds; in each round every variant runs once, in this order) ==\n", o.rounds);
  for (int r = 0; r < o.rounds; r++) {
    for (int i = 0; i < nv; i++) {
      variant *v = &vs[i];
      double ms = 0, cpu_ms = 0;
      bench_value got = variant_run(v, &ms, &cpu_ms);
      if (!value_same(got, v->expect)) {
        printf("bench_sql: %s / %s changed its answer in round %d\n", v->group, v->name, r);
        return 2;
      }
      v->cpu_ms[v->n] = cpu_ms;
      v->ms[v->n++] = ms;
    }
    printf("  round %d/%d done\n", r + 1, o.rounds);
  }
  printf("\n| %-12s | %-28s | %10s | %10s | %10s | %8s | %-22s | %9s | %7s |\n", "query", "variant",
         "median ms", "min ms", "max ms", "ns/row", "time / colstore's", "cpu ms", "off-cpu");
  printf(
      "|--------------|------------------------------|------------|------------|------------|----------|-----"
      "-------"
      "------------|-----------|---------|\n");
  bench_stats st[BENCH_MAX_VARIANTS], cst[BENCH_MAX_VARIANTS];
  double worst_off = 0;
  for (int i = 0; i < nv; i++)
    st[i] = bench_stats_of(vs[i].ms, vs[i].n), cst[i] = bench_stats_of(vs[i].cpu_ms, vs[i].n);
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    variant *cs = find_variant(vs, nv, v->group, "colstore");
    char ratio[64] = "";
    if (cs && cs != v) snprintf(ratio, sizeof ratio, "%.2fx", st[i].median / st[cs - vs].median);
    double off = st[i].median > 0 && cst[i].median < st[i].median ? 1.0 - cst[i].median / st[i].median : 0;
    if (off > worst_off) worst_off = off;
    printf("| %-12s | %-28s | %10.2f | %10.2f | %10.2f | %8.2f | %-22s | %9.2f | %6.1f%% |\n", v->group,
           v->name, st[i].median, st[i].min, st[i].max, st[i].median * 1e6 / (double)v->rows, ratio,
           cst[i].median, 100.0 * off);
  }
  printf(
      "(cpu ms: median thread CPU time; off-cpu: 1 - cpu/wall of the medians, the share spent "
      "preempted.%s)\n",
      worst_off > 0.05
          ? " WARNING: some variant was off the CPU > 5% of its time: a busy machine; prefer the "
            "ratios of CPU medians below"
          : "");

  /* Ratios of medians, plus the range of the per-round ratios (paired within a round). */
  printf(
      "\nratios (wall median of A / of B, this run; [min..max] of the per-round A/B; ratio of the wall mins; "
      "ratio of the CPU-time medians):\n");
  struct {
    const char *g, *a, *b, *meaning;
  } rq[] = {
      {"sum(a)", "native", "colstore", "colstore speed-up over native (target >= 1.2)"},
      {"sum(a)", "native, mmap_size=4G", "colstore", "colstore speed-up over native with mmap"},
      {"sum(a)", "colstore", "bench_floor(map)",
       "colstore cost over the per-row floor reading the same mapping"},
      {"sum(a)", "colstore", "bench_floor(array)",
       "colstore cost over the per-row floor on a malloc'd array"},
      {"sum(a)", "bench_floor(copy)", "bench_floor(map)",
       "copying each record into a buffer vs reading the mapping"},
      {"sum(a)", "colstore", "C loop over mapped records", "SQLite's per-row cost over a plain C loop"},
      {"sum(b)", "native", "colstore", "colstore speed-up over native"},
      {"count(*)", "native", "colstore", "colstore speed-up over native"},
      {"range sum(a)", "native", "colstore", "colstore speed-up over native"},
  };
  double speedup_a = 0, speedup_a_lo = 0, speedup_a_hi = 0;
  for (size_t k = 0; k < sizeof rq / sizeof rq[0]; k++) {
    variant *a = find_variant(vs, nv, rq[k].g, rq[k].a), *b = find_variant(vs, nv, rq[k].g, rq[k].b);
    if (!a || !b) continue;
    double per_round[BENCH_MAX_ROUNDS];
    for (int r = 0; r < a->n; r++) per_round[r] = a->ms[r] / b->ms[r];
    bench_stats pr = bench_stats_of(per_round, a->n);
    double ratio = st[a - vs].median / st[b - vs].median;
    printf("  %-12s %-26s / %-26s = %6.2f  [%.2f..%.2f]  mins %.2f  cpu %.2f  %s\n", rq[k].g, rq[k].a,
           rq[k].b, ratio, pr.min, pr.max, st[a - vs].min / st[b - vs].min,
           cst[a - vs].median / cst[b - vs].median, rq[k].meaning);
    if (k == 0) speedup_a = ratio, speedup_a_lo = pr.min, speedup_a_hi = pr.max;
  }
  target_add(speedup_a >= 1.2 ? T_PASS : T_FAIL,
             "sum(a): native / colstore = %.2fx (per-round %.2fx..%.2fx); target >= 1.2x%s", speedup_a,
             speedup_a_lo, speedup_a_hi,
             speedup_a >= 1.2 && speedup_a_lo < 1.2 ? " (met at the median; some rounds below)" : "");

  /* ---- record-size sweep */
  if (o.sweep) part_sweep(&o, &data, db, ref_a);

  /* ---- summary */
  printf("\n== Targets (this run; %llu rows; page-cache warm; load average now %.2f on %ld CPUs) ==\n",
         (unsigned long long)o.rows, bench_loadavg(), bench_nproc());
  int n_fail = 0, n_targets = 0;
  for (int i = 0; i < g_n_targets; i++) {
    static const char *const words[] = {"FAIL", "PASS", "INFO"};
    printf("  %s  %s\n", words[g_targets[i].status], g_targets[i].text);
    n_fail += g_targets[i].status == T_FAIL;
    n_targets += g_targets[i].status != T_INFO;
  }
  printf("%d of %d targets met%s\n", n_targets - n_fail, n_targets,
         n_fail ? " (the benchmark reports; it exits 0 either way)" : "");

  for (int i = 0; i < nv; i++) sqlite3_finalize(vs[i].st);
  sqlite3_close(db_mmap);
  sqlite3_close(db);
  cs_store_close(store);
  data_free(&data);
  return 0;
}
