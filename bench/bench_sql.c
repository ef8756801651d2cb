/*
** bench_sql.c - what a SQL user pays: store open time, colstore_create
** throughput and file overhead, scan queries, and the queries the planner
** pushes down (column predicates, rowid IN lists, _rows, ORDER BY rowid
** DESC LIMIT) on a colstore table against a native SQLite table holding
** the same rows.
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
**   1. checks: every variant of every query must give the answer computed
**      in C from the generated rows, and the variants of a query must agree
**      with one another (floating sums bit for bit; multi-row results by
**      row count and an order-independent digest of every cell), before
**      anything is timed; then the plan of every SQL variant (EXPLAIN QUERY
**      PLAN) and colstore_last_plan() of each push-down query are printed;
**   2. open: cs_store_open+cs_store_close (core), and CREATE VIRTUAL TABLE
**      + the first query (SQL), at three row counts, interleaved;
**   3. colstore_create throughput, interleaved with a scan of the source;
**   4. the queries, every variant interleaved (A B C A B C ...) over the
**      rounds, each run preceded by writing through a buffer of twice the
**      last-level cache (untimed; --no-evict turns it off), so no run finds
**      the cache lines the previous variant touched (the list queries read
**      the same 10,000 rows; without it the second of two variants ran
**      from cache); every timed run re-checks its answer;
**   5. kernel threads: the two predicate queries with colstore_config(
**      'threads', 1) and 2, each setting in fresh processes (the bench
**      re-executes itself with --child-threads), settings alternating;
**   6. optionally, a record-size sweep (file overhead and scan time per
**      record size), written through the core writer;
**   7. tables of medians with min/max (wall clock, CLOCK_MONOTONIC), the
**      median CPU time of the calling thread and of the whole process
**      beside them (on a shared machine, wall minus CPU is time spent
**      preempted; the process time includes kernel worker threads), the
**      kernel time colstore_last_plan() reports, ratios of medians from
**      this run, and the targets with PASS/FAIL.  The exit status is 0
**      whether or not a target is met: this reports, it does not test.  It
**      is nonzero only when the variants disagree (then nothing is worth
**      timing) or when something cannot be set up.
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
** The list queries use 10,000 distinct random positions in random order:
** as literal `rowid IN (...)` text (0-based for colstore, 1-based for
** native), as a _rows BLOB, and as a JSON array for native's json_each.
** Their anchors: the prepare alone (SQLite's parse of the literal list,
** the floor both tables share), `_rows` over 10,000 shuffled rows of one
** contiguous block (what the same SQL work costs without cache and TLB
** misses), and the core kernels gathering the same cells into buffers
** (cs_bins_compute + cs_gather_rows_binned).
**
** --profile X sets everything up, then runs only X once inside
** profile_target(), for callgrind (bench/profile_sql.sh drives it).
**
** The choices a reader might question: the scan statements are prepared
** once and reset between runs, so preparation is not in their times (the
** open measurement is where preparation is counted); the literal IN-list
** queries and `_rows` are prepared, run and finalized every time, because
** parsing the list is the cost a bound BLOB avoids ("colstore, prepared
** once" shows the short statement's own prepare).  All data is page-cache
** warm: the checks read every file before any timing.
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
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "colstore.h"

#define BENCH_GEN_VERSION 1 /* bump when the data generator changes */
#define BENCH_MAX_ROUNDS 1000
#define BENCH_MAX_VARIANTS 40
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
  bool evict;          /* push the CPU caches clean before every timed query run */
  const char *profile; /* run only this (under callgrind), e.g. "sum(a)/colstore" */
  /* internal: a child process measuring one kernel thread setting */
  int child_threads; /* -1: not a child */
  int child_runs;
  long long child_expect;
  char child_store[4096];
} bench_opts;

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--quick] [--rows N] [--rounds N] [--create-rounds N] [--open-reps N]\n"
          "          [--sql-open-reps N] [--seed S] [--dir DIR] [--module PATH] [--no-sweep] [--no-evict] "
          "[--keep] "
          "[--profile X]\n"
          "  --quick       1M rows, 3 rounds (a smoke run, not for decisions)\n"
          "  --dir         work directory for the native DB and stores (default: bench-data beside\n"
          "                this executable, i.e. build/bench-data)\n"
          "  --module      colstore.so to load (default: colstore.so beside this executable)\n"
          "  --no-sweep    skip the record-size sweep\n"
          "  --no-evict    do not write through a buffer of 2x the last-level cache before each timed\n"
          "                query run (by default each run starts with caches holding none of its data)\n"
          "  --profile X   set up, then run only X once inside profile_target() and exit, for\n"
          "                valgrind --tool=callgrind --toggle-collect=profile_target (see profile_sql.sh);\n"
          "                X is QUERY/VARIANT as in the results table (\"sum(a)/colstore\",\n"
          "                \"count a>.99/colstore\", \"_rows a,b,c/native IN (literal)\"), or\n"
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
                    .sweep = true,
                    .evict = true,
                    .child_threads = -1};
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
    else if (strcmp(a, "--no-evict") == 0)
      o->evict = false;
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
    else if (strcmp(a, "--child-threads") == 0)
      o->child_threads = atoi(ARG_VALUE());
    else if (strcmp(a, "--child-runs") == 0)
      o->child_runs = atoi(ARG_VALUE());
    else if (strcmp(a, "--child-expect") == 0)
      o->child_expect = strtoll(ARG_VALUE(), NULL, 10);
    else if (strcmp(a, "--child-store") == 0)
      bench_path(o->child_store, sizeof o->child_store, "%s", ARG_VALUE());
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

/* What a variant returned: one value (a sum or a count), or, for a query
** that returns many rows, the row count and an order-independent digest
** of every cell (type and bits), so two tables that return the same rows
** in different orders agree and any differing cell disagrees. */
typedef struct bench_value {
  bool is_float;
  double f;
  int64_t i;  /* an integer value, or the digest of a multi-row result */
  bool multi; /* a multi-row result: n_rows and the digest in i */
  int64_t n_rows;
} bench_value;

static bench_value value_int(int64_t i) { return (bench_value){.i = i}; }
static bench_value value_float(double f) { return (bench_value){.is_float = true, .f = f}; }

static bool value_same(bench_value x, bench_value y) {
  if (x.is_float != y.is_float || x.multi != y.multi) return false;
  if (x.multi) return x.n_rows == y.n_rows && x.i == y.i;
  if (!x.is_float) return x.i == y.i;
  return memcmp(&x.f, &y.f, sizeof x.f) == 0; /* bit for bit */
}

static void value_print(FILE *f, bench_value v) {
  if (v.multi)
    fprintf(f, "%lld rows, digest %016llx", (long long)v.n_rows, (unsigned long long)v.i);
  else if (v.is_float)
    fprintf(f, "%.17g (bits %016llx)", v.f,
            (unsigned long long)(union {
              double d;
              uint64_t u;
            }){v.f}
                .u);
  else
    fprintf(f, "%lld", (long long)v.i);
}

/* The digest: each row hashes its cells in column order (SQLite type and
** value bits); the rows' hashes are added, so the sum does not depend on
** the row order. */
#define DIGEST_ROW_SEED 0x243F6A8885A308D3ull
static uint64_t digest_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t digest_cell(uint64_t h, int sqlite_type, uint64_t bits) {
  return digest_mix(h ^ (bits + (uint64_t)sqlite_type * 0x9E3779B97F4A7C15ull));
}
static uint64_t digest_f64(uint64_t h, double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  return digest_cell(h, SQLITE_FLOAT, bits);
}
static uint64_t digest_i64(uint64_t h, int64_t i) { return digest_cell(h, SQLITE_INTEGER, (uint64_t)i); }

typedef enum variant_kind {
  V_SQL,      /* a statement prepared once; bound (if it has a BLOB/TEXT) and reset per run */
  V_SQL_TEXT, /* SQL text prepared, run and finalized per run: the parse is part of the cost */
  V_PREPARE,  /* SQL text prepared and finalized, never run: the parse alone (no result) */
  V_RAW_SUM,  /* the C loop over the mapped records */
  V_GATHER    /* core kernels: cs_bins_compute + cs_gather_rows_binned of columns a, b, c */
} variant_kind;

/* One thing to time. */
typedef struct variant {
  const char *group; /* the query, e.g. "sum(a)" */
  const char *name;  /* e.g. "colstore" */
  const char *what;  /* SQL text or a description, for the report */
  variant_kind kind;
  sqlite3 *db;           /* V_SQL_TEXT: the connection; V_SQL: its statement's */
  sqlite3_stmt *st;      /* V_SQL */
  bool multi;            /* step every row and digest every cell (else: one value) */
  const void *bind_blob; /* bound as ?1 (SQLITE_STATIC) before each run, when set */
  int bind_blob_bytes;
  const char *bind_text; /* bound as ?1 (SQLITE_STATIC) before each run, when set */
  int reps;              /* runs per timing (a fast query); the time is per run */
  bool plan;             /* colstore: read kernel_us from colstore_last_plan() after each run */
  const cs_store *store; /* V_RAW_SUM: sums column col in row order; V_GATHER: the store */
  uint32_t col;
  const uint64_t *positions; /* V_GATHER: rows to gather, n_positions of them */
  uint64_t n_positions;
  uint32_t *bins;      /* V_GATHER: scratch */
  void *gather_out[3]; /* V_GATHER: columns a, b, c */
  uint64_t rows;       /* rows the query visits, for ns/row */
  bool own_rows;       /* returns other rows than its group by design: checked only against ref */
  bench_value ref;     /* the answer computed in C from the generated data */
  bench_value ref_alt; /* floating sums: the Kahan-Babuska-Neumaier sum (SQLite >= 3.43) */
  bool has_ref;
  bench_value expect;                 /* the checked answer; every timed run must match */
  double ms[BENCH_MAX_ROUNDS];        /* wall clock (CLOCK_MONOTONIC) per round */
  double cpu_ms[BENCH_MAX_ROUNDS];    /* this thread's CPU time per round */
  double pcpu_ms[BENCH_MAX_ROUNDS];   /* the process's CPU time per round (all threads) */
  double kernel_ms[BENCH_MAX_ROUNDS]; /* plan: kernel_us of the run / 1000 */
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

/* Runs a statement to completion: its one value, or every row digested. */
static bench_value stmt_result(sqlite3_stmt *st, bool multi, const char *what) {
  bench_value out = {0};
  int rc;
  if (!multi) {
    if (sqlite3_step(st) != SQLITE_ROW) die_db(sqlite3_db_handle(st), what);
    out.is_float = sqlite3_column_type(st, 0) == SQLITE_FLOAT;
    if (out.is_float)
      out.f = sqlite3_column_double(st, 0);
    else
      out.i = sqlite3_column_int64(st, 0);
    return out;
  }
  out.multi = true;
  int nc = sqlite3_column_count(st);
  uint64_t digest = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    uint64_t h = DIGEST_ROW_SEED;
    for (int j = 0; j < nc; j++) {
      int t = sqlite3_column_type(st, j);
      if (t == SQLITE_FLOAT)
        h = digest_f64(h, sqlite3_column_double(st, j));
      else if (t == SQLITE_INTEGER)
        h = digest_i64(h, sqlite3_column_int64(st, j));
      else
        h = digest_cell(h, t, 0);
    }
    digest += h;
    out.n_rows++;
  }
  if (rc != SQLITE_DONE) die_db(sqlite3_db_handle(st), what);
  out.i = (int64_t)digest;
  return out;
}

static void stmt_bind(variant *v, sqlite3_stmt *st) {
  int rc = SQLITE_OK;
  if (v->bind_blob) rc = sqlite3_bind_blob(st, 1, v->bind_blob, v->bind_blob_bytes, SQLITE_STATIC);
  if (v->bind_text) rc = sqlite3_bind_text(st, 1, v->bind_text, -1, SQLITE_STATIC);
  if (rc != SQLITE_OK) die_db(sqlite3_db_handle(st), "bind");
}

/* The rows of columns a (FLOAT64), b (INT64), c (FLOAT64) at the positions,
** through the core kernels, as a SQL scan of `SELECT a, b, c` would need
** them if the cursor gathered into buffers instead of reading in place. */
static void gather_abc(variant *v) {
  cs_bins_compute(v->store, v->positions, v->n_positions, v->bins);
  for (uint32_t c = 0; c < 3; c++)
    cs_gather_rows_binned(v->store, c, v->positions, v->bins, v->n_positions, v->gather_out[c], NULL);
}

static bench_value gather_digest(const variant *v) {
  const double *a = v->gather_out[0], *c = v->gather_out[2];
  const int64_t *b = v->gather_out[1];
  uint64_t digest = 0;
  for (uint64_t i = 0; i < v->n_positions; i++)
    digest += digest_f64(digest_i64(digest_f64(DIGEST_ROW_SEED, a[i]), b[i]), c[i]);
  return (bench_value){.multi = true, .n_rows = (int64_t)v->n_positions, .i = (int64_t)digest};
}

/* kernel_us of the last finished colstore scan on db, or -1. */
static double last_plan_kernel_ms(sqlite3 *db) {
  double ms = -1;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT colstore_last_plan()", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    const char *z = (const char *)sqlite3_column_text(st, 0);
    const char *k = z ? strstr(z, "\"kernel_us\":") : NULL;
    if (k) ms = strtod(k + 12, NULL) / 1e3;
  }
  sqlite3_finalize(st);
  return ms;
}

typedef struct run_times {
  double ms, cpu_ms, pcpu_ms, kernel_ms;
} run_times;

/* One timing of v (v->reps runs, time per run); out may be NULL. */
static bench_value variant_run(variant *v, run_times *out) {
  bench_value res = {0};
  int reps = v->reps > 0 ? v->reps : 1;
  uint64_t p0 = bench_process_cpu_ns();
  uint64_t c0 = bench_thread_cpu_ns();
  uint64_t t0 = bench_now_ns();
  for (int k = 0; k < reps; k++) {
    switch (v->kind) {
      case V_RAW_SUM: res = value_float(raw_sum_f64(v->store, v->col)); break;
      case V_GATHER: gather_abc(v); break;
      case V_SQL:
        stmt_bind(v, v->st);
        res = stmt_result(v->st, v->multi, v->what);
        sqlite3_reset(v->st);
        break;
      case V_PREPARE: {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(v->db, v->what, -1, &st, NULL) != SQLITE_OK) die_db(v->db, "prepare");
        sqlite3_finalize(st);
        break;
      }
      case V_SQL_TEXT: {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(v->db, v->what, -1, &st, NULL) != SQLITE_OK) die_db(v->db, "prepare");
        stmt_bind(v, st);
        res = stmt_result(st, v->multi, v->what);
        sqlite3_finalize(st);
        break;
      }
    }
  }
  uint64_t t1 = bench_now_ns();
  uint64_t c1 = bench_thread_cpu_ns();
  uint64_t p1 = bench_process_cpu_ns();
  if (v->kind == V_GATHER) res = gather_digest(v); /* outside the timing */
  if (out) {
    out->ms = (double)(t1 - t0) / 1e6 / reps;
    out->cpu_ms = (double)(c1 - c0) / 1e6 / reps;
    out->pcpu_ms = (double)(p1 - p0) / 1e6 / reps;
    out->kernel_ms = v->plan ? last_plan_kernel_ms(v->kind == V_SQL ? sqlite3_db_handle(v->st) : v->db) : -1;
  }
  return res;
}

/* The next free entry of vs (BENCH_MAX_VARIANTS of them). */
static variant *variant_slot(variant *vs, int *nv) {
  if (*nv >= BENCH_MAX_VARIANTS) die("too many variants; raise BENCH_MAX_VARIANTS");
  return &vs[(*nv)++];
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

/* x[at[0]] + x[at[1]] + ... in that order (at == NULL: rows lo..hi-1). */
static double sum_kbn_at(const double *x, const uint64_t *at, uint64_t lo, uint64_t hi) {
  volatile double s = 0.0, e = 0.0;
  for (uint64_t i = lo; i < hi; i++) {
    volatile double r = x[at ? at[i] : i], t = s + r;
    if (fabs(s) > fabs(r))
      e += (s - t) + r;
    else
      e += (r - t) + s;
    s = t;
  }
  return s + e;
}

static double sum_kbn(const double *x, uint64_t lo, uint64_t hi) { return sum_kbn_at(x, NULL, lo, hi); }

static double sum_naive_at(const double *x, const uint64_t *at, uint64_t n) {
  double s = 0.0;
  for (uint64_t i = 0; i < n; i++) s += x[at[i]];
  return s;
}

/* ------------------------------------------------------- list queries */

/* Group names of the push-down queries (also --profile names). */
#define G_COUNT99 "count a>.99"
#define G_SUMB90 "sum(b) a>.9"
#define G_INSUM "IN sum(a)"
#define G_ROWS "_rows a,b,c"
#define G_DESC "desc limit 10"

#define BENCH_LIST_ROWS 10000 /* positions in the list queries */
#define BENCH_FAST_REPS 200   /* runs per timing of the LIMIT 10 queries (microseconds each) */

/* One random selection of distinct positions, in every form a query takes. */
typedef struct bench_selection {
  uint64_t n;
  uint64_t *rows;      /* 0-based, random order */
  uint64_t *sorted;    /* the same, ascending */
  int64_t *blob;       /* the _rows BLOB: little-endian int64 (the host order here: x86-64, aarch64) */
  int64_t *blob_local; /* n positions of one contiguous block (n/2 ..), shuffled: cache-resident rows */
  char *in_sum_cs;     /* SELECT sum(a) FROM temp.cs WHERE rowid IN (0-based list) */
  char *in_sum_nat;    /* ... FROM native ... (1-based list) */
  char *in_abc_cs;     /* SELECT a, b, c FROM temp.cs WHERE rowid IN (...) */
  char *in_abc_nat;
  char *json_nat; /* [1-based list] for json_each */
} bench_selection;

static int cmp_u64(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return (a > b) - (a < b);
}

static char *list_sql(const char *head, const uint64_t *rows, uint64_t n, uint64_t add, const char *open,
                      const char *close) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendf(s, "%s%s", head, open);
  for (uint64_t i = 0; i < n; i++)
    sqlite3_str_appendf(s, "%s%llu", i ? "," : "", (unsigned long long)(rows[i] + add));
  sqlite3_str_appendall(s, close);
  char *z = sqlite3_str_finish(s);
  if (!z) die("out of memory");
  return z;
}

static void selection_make(bench_selection *sel, uint64_t n_rows, uint64_t k, uint64_t seed) {
  memset(sel, 0, sizeof *sel);
  sel->n = k;
  sel->rows = malloc(k * sizeof *sel->rows);
  sel->sorted = malloc(k * sizeof *sel->sorted);
  sel->blob = malloc(k * sizeof *sel->blob);
  sel->blob_local = malloc(k * sizeof *sel->blob_local);
  uint8_t *seen = calloc(n_rows / 8 + 1, 1);
  if (!sel->rows || !sel->sorted || !sel->blob || !sel->blob_local || !seen) die("out of memory");
  uint64_t st = seed ^ 0x5E1EC7105E1EC710ull;
  for (uint64_t i = 0; i < k;) {
    uint64_t r = (uint64_t)(((unsigned __int128)bench_splitmix64(&st) * n_rows) >> 64);
    if (seen[r >> 3] >> (r & 7) & 1) continue;
    seen[r >> 3] |= (uint8_t)(1u << (r & 7));
    sel->rows[i] = r, sel->blob[i] = (int64_t)r;
    i++;
  }
  free(seen);
  for (uint64_t i = 0; i < k; i++) sel->blob_local[i] = (int64_t)(n_rows / 2 + i);
  for (uint64_t i = k - 1; i > 0; i--) { /* Fisher-Yates */
    uint64_t j = bench_splitmix64(&st) % (i + 1);
    int64_t t = sel->blob_local[i];
    sel->blob_local[i] = sel->blob_local[j], sel->blob_local[j] = t;
  }
  memcpy(sel->sorted, sel->rows, k * sizeof *sel->rows);
  qsort(sel->sorted, k, sizeof *sel->sorted, cmp_u64);
  sel->in_sum_cs = list_sql("SELECT sum(a) FROM temp.cs WHERE rowid IN ", sel->rows, k, 0, "(", ")");
  sel->in_sum_nat = list_sql("SELECT sum(a) FROM native WHERE rowid IN ", sel->rows, k, 1, "(", ")");
  sel->in_abc_cs = list_sql("SELECT a, b, c FROM temp.cs WHERE rowid IN ", sel->rows, k, 0, "(", ")");
  sel->in_abc_nat = list_sql("SELECT a, b, c FROM native WHERE rowid IN ", sel->rows, k, 1, "(", ")");
  sel->json_nat = list_sql("", sel->rows, k, 1, "[", "]");
}

static void selection_free(bench_selection *sel) {
  free(sel->rows), free(sel->sorted), free(sel->blob), free(sel->blob_local);
  sqlite3_free(sel->in_sum_cs), sqlite3_free(sel->in_sum_nat), sqlite3_free(sel->in_abc_cs);
  sqlite3_free(sel->in_abc_nat), sqlite3_free(sel->json_nat);
}

/* EXPLAIN QUERY PLAN's detail lines, joined with " | ". */
static void query_plan(sqlite3 *db, const char *sql, char *out, size_t out_bytes) {
  char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st = NULL;
  size_t at = 0;
  out[0] = 0;
  if (q && sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK)
    while (sqlite3_step(st) == SQLITE_ROW && at + 1 < out_bytes) {
      int w = snprintf(out + at, out_bytes - at, "%s%s", at ? " | " : "",
                       (const char *)sqlite3_column_text(st, 3));
      if (w < 0) break;
      at += (size_t)w;
    }
  sqlite3_finalize(st);
  sqlite3_free(q);
}

/* ----------------------------------------------------------- reporting */

typedef enum target_status { T_FAIL, T_PASS, T_INFO } target_status;

typedef struct target_line {
  char text[384];
  target_status status;
} target_line;

static target_line g_targets[32];
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

/* ------------------------------------------------------ kernel threads */

/* colstore_config('threads') is process-wide, and so is the OpenMP thread
** pool behind it, so each setting is measured in a fresh process
** (bench/README.md, the rules): this bench re-executes itself with
** --child-threads; the child opens the store on a :memory: connection,
** sets the thread cap, runs each push-down query once to warm up (that
** run also faults the mapping's pages into the new process), then
** --child-runs rounds of the queries, each run preceded by the same cache
** eviction as the main loop (which also gives the OpenMP workers time to
** go to sleep between queries, as they do in the main loop and in real
** use), printing one line per run.  Settings alternate per round. */

#define BENCH_CHILD_RUNS 3
#define BENCH_CHILD_QUERIES 2
static const char *const child_groups[BENCH_CHILD_QUERIES] = {G_COUNT99, G_SUMB90};
static const char *const child_sql[BENCH_CHILD_QUERIES] = {"SELECT count(*) FROM temp.cs WHERE a > 0.99",
                                                           "SELECT sum(b) FROM temp.cs WHERE a > 0.9"};

/* The number after "key": in a colstore_last_plan() JSON text, or -1. */
static double plan_number(const char *json, const char *key) {
  const char *k = json ? strstr(json, key) : NULL;
  return k ? strtod(k + strlen(key), NULL) : -1;
}

static size_t evict_bytes_default(void) {
  long long llc = bench_llc_bytes();
  return (size_t)(2 * llc > (64 << 20) ? 2 * llc : (64 << 20));
}

static int child_main(const bench_opts *o) {
  floor_source src = {0};
  sqlite3 *db = connect_or_die(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, o, &src);
  char *sql = sqlite3_mprintf(
      "CREATE VIRTUAL TABLE temp.cs USING colstore(%Q); SELECT colstore_config('threads', %d);",
      o->child_store, o->child_threads);
  exec_or_die(db, sql);
  sqlite3_free(sql);
  sqlite3_stmt *q[BENCH_CHILD_QUERIES];
  for (int k = 0; k < BENCH_CHILD_QUERIES; k++) q[k] = prepare_or_die(db, child_sql[k]);
  sqlite3_stmt *plan = prepare_or_die(db, "SELECT colstore_last_plan()");
  size_t evict = evict_bytes_default();
  long long first = 0;
  for (int r = -1; r < o->child_runs; r++)
    for (int k = 0; k < BENCH_CHILD_QUERIES; k++) {
      bench_evict_caches(evict);
      uint64_t p0 = bench_process_cpu_ns(), c0 = bench_thread_cpu_ns(), t0 = bench_now_ns();
      if (sqlite3_step(q[k]) != SQLITE_ROW) die_db(db, "child query");
      long long got = sqlite3_column_int64(q[k], 0);
      sqlite3_reset(q[k]);
      uint64_t t1 = bench_now_ns(), c1 = bench_thread_cpu_ns(), p1 = bench_process_cpu_ns();
      if (k == 0 && got != o->child_expect) {
        printf("mismatch %lld %lld\n", got, o->child_expect);
        return 2;
      }
      if (r < 0 && k == 1) first = got;
      if (k == 1 && got != first) {
        printf("mismatch: the second query changed its answer\n");
        return 2;
      }
      if (sqlite3_step(plan) != SQLITE_ROW) die_db(db, "colstore_last_plan");
      const char *z = (const char *)sqlite3_column_text(plan, 0);
      double kernel_us = plan_number(z, "\"kernel_us\":"), threads = plan_number(z, "\"threads\":");
      if (r >= 0)
        printf("run %d %.6f %.6f %.6f %.6f %d %lld\n", k, (double)(t1 - t0) / 1e6, (double)(c1 - c0) / 1e6,
               (double)(p1 - p0) / 1e6, kernel_us / 1e3, (int)threads, got);
      sqlite3_reset(plan);
    }
  for (int k = 0; k < BENCH_CHILD_QUERIES; k++) sqlite3_finalize(q[k]);
  sqlite3_finalize(plan);
  sqlite3_close(db);
  return 0;
}

#define BENCH_CHILD_SAMPLES (BENCH_MAX_ROUNDS * BENCH_CHILD_RUNS)
typedef struct thread_samples {
  double ms[BENCH_CHILD_SAMPLES], cpu[BENCH_CHILD_SAMPLES], pcpu[BENCH_CHILD_SAMPLES],
      kern[BENCH_CHILD_SAMPLES];
  int n;
  int threads_seen; /* the most threads colstore_last_plan() reported */
  long long answer;
} thread_samples;

/* Runs one child with the given thread cap and adds its runs to out[query]. */
static void child_spawn(const char *exe, const bench_opts *o, const char *store, int threads,
                        long long expect, thread_samples *out) {
  char th[32], runs[32], ex[32];
  snprintf(th, sizeof th, "%d", threads);
  snprintf(runs, sizeof runs, "%d", BENCH_CHILD_RUNS);
  snprintf(ex, sizeof ex, "%lld", expect);
  char *argv[] = {(char *)exe,
                  "--child-threads",
                  th,
                  "--child-runs",
                  runs,
                  "--child-store",
                  (char *)store,
                  "--child-expect",
                  ex,
                  "--module",
                  (char *)o->module,
                  NULL};
  int fd[2];
  if (pipe(fd) != 0) die("pipe");
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    close(fd[0]);
    if (dup2(fd[1], 1) < 0) _exit(127);
    close(fd[1]);
    execv(exe, argv);
    _exit(127);
  }
  close(fd[1]);
  FILE *f = fdopen(fd[0], "r");
  if (!f) die("fdopen");
  char line[256];
  while (fgets(line, sizeof line, f)) {
    double ms, cpu, pcpu, kern;
    int k, t;
    long long got;
    if (sscanf(line, "run %d %lf %lf %lf %lf %d %lld", &k, &ms, &cpu, &pcpu, &kern, &t, &got) == 7 &&
        k >= 0 && k < BENCH_CHILD_QUERIES && out[k].n < BENCH_CHILD_SAMPLES) {
      thread_samples *s = &out[k];
      s->ms[s->n] = ms, s->cpu[s->n] = cpu, s->pcpu[s->n] = pcpu, s->kern[s->n] = kern;
      s->n++;
      if (t > s->threads_seen) s->threads_seen = t;
      s->answer = got;
    } else {
      fprintf(stderr, "bench_sql: child (threads %d): %s", threads, line);
    }
  }
  fclose(f);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("a --child-threads process failed (its answer disagreed or it could not start)");
}

/* expect: the checked answers of the child queries; native_ms,
** native_cpu_ms: native's wall and thread-CPU medians of the same queries
** in the main loop (for a cross-process ratio, labelled as such). */
static void part_threads(const bench_opts *o, const bench_paths *p, const long long *expect,
                         const double *native_ms, const double *native_cpu_ms) {
  static const int cfg[2] = {1, 2};
  static thread_samples s[2][BENCH_CHILD_QUERIES];
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) {
    printf("\n(kernel threads: /proc/self/exe is not readable; skipped)\n");
    return;
  }
  exe[len] = 0;
  printf(
      "\n== Kernel threads: colstore_config('threads', 1) vs 2, one fresh process per setting and round (%d "
      "rounds x %d runs of each query after a warm-up run, caches pushed clean before each run, settings "
      "alternating) ==\n",
      o->rounds, BENCH_CHILD_RUNS);
  memset(s, 0, sizeof s);
  for (int r = 0; r < o->rounds; r++)
    for (int j = 0; j < 2; j++) {
      int k = (r & 1) ? 1 - j : j;
      child_spawn(exe, o, p->store, cfg[k], expect[0], s[k]);
    }
  printf("\n| %-13s | %-17s | %10s | %10s | %10s | %9s | %9s | %-27s | %-14s | %-21s |\n", "query",
         "setting (seen)", "median ms", "min ms", "max ms", "cpu ms", "proc cpu",
         "kernel ms median (min..max)", "native / this", "native cpu / proc cpu");
  printf(
      "|---------------|-------------------|------------|------------|------------|-----------|-----------|--"
      "----"
      "-----------------------|----------------|-----------------------|\n");
  for (int q = 0; q < BENCH_CHILD_QUERIES; q++) {
    bench_stats w[2], kn[2];
    double cpu_ratio[2];
    for (int k = 0; k < 2; k++) {
      thread_samples *t = &s[k][q];
      if (t->answer != expect[q]) die("a --child-threads process gave another answer than the checked one");
      w[k] = bench_stats_of(t->ms, t->n), kn[k] = bench_stats_of(t->kern, t->n);
      bench_stats c = bench_stats_of(t->cpu, t->n), pc = bench_stats_of(t->pcpu, t->n);
      char label[64], kern[80], nat[64] = "", natc[64] = "";
      snprintf(label, sizeof label, "threads=%d (%d)", cfg[k], t->threads_seen);
      snprintf(kern, sizeof kern, "%.3f (%.3f..%.3f)", kn[k].median, kn[k].min, kn[k].max);
      if (native_ms[q] > 0) snprintf(nat, sizeof nat, "%.2fx", native_ms[q] / w[k].median);
      if (native_cpu_ms[q] > 0) snprintf(natc, sizeof natc, "%.2fx", native_cpu_ms[q] / pc.median);
      cpu_ratio[k] = native_cpu_ms[q] / pc.median;
      printf("| %-13s | %-17s | %10.3f | %10.3f | %10.3f | %9.3f | %9.3f | %-27s | %-14s | %-21s |\n",
             child_groups[q], label, w[k].median, w[k].min, w[k].max, c.median, pc.median, kern, nat, natc);
    }
    printf(
        "  %s: threads=1 / threads=2 = %.2f wall (mins %.2f), kernel time %.2f (> 1: two threads are "
        "faster)\n",
        child_groups[q], w[0].median / w[1].median, w[0].min / w[1].min, kn[0].median / kn[1].median);
    target_add(
        T_INFO,
        "%s in fresh processes: threads=1 %.3f ms (kernel %.3f), threads=2 %.3f ms (kernel %.3f); "
        "native (main loop) / colstore = %.2fx wall, %.2fx CPU at 1 thread, %.2fx wall, %.2fx CPU at 2 "
        "(cross-process); no target",
        child_groups[q], w[0].median, kn[0].median, w[1].median, kn[1].median, native_ms[q] / w[0].median,
        cpu_ratio[0], native_ms[q] / w[1].median, cpu_ratio[1]);
  }
  printf(
      "(native / this: native's wall median from the main loop of this run over this setting's median; "
      "native "
      "cpu / proc cpu: native's thread-CPU median over this setting's process-CPU median, which counts the "
      "worker "
      "thread: ratios across processes, so read them beside the in-process ratios above)\n");
}

/* ------------------------------------------------------------- profile */

/* The one function callgrind collects in (--toggle-collect=profile_target):
** one run of a variant, or one open of the store at path.  noinline keeps
** it a real function the tool can see. */
__attribute__((noinline)) static void profile_target(variant *v, sqlite3 *db, const char *open_mode,
                                                     const char *path) {
  if (v) {
    variant_run(v, NULL);
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
  variant_run(v, NULL); /* warm, outside the collected function */
  profile_target(v, db, NULL, NULL);
  int reps = v->reps > 0 ? v->reps : 1;
  printf(
      "profile: ran %s once (%d run%s of the query); rows visited %llu (divide the collected Ir by this)\n",
      o->profile, reps, reps > 1 ? "s" : "", (unsigned long long)v->rows * (unsigned long long)reps);
  return 0;
}

/* ----------------------------------------------------------------- main */

int main(int argc, char **argv) {
  bench_opts o;
  opts_parse(argc, argv, &o);
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (o.child_threads >= 0) return child_main(&o);

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
  /* The selection for the list queries: distinct random positions in
  ** random order, the same ones as a _rows BLOB (0-based), as literal IN
  ** lists (0-based for colstore, 1-based for native) and as a JSON array
  ** (1-based, for native's bound-list reference). */
  bench_selection sel;
  selection_make(&sel, n, n / 2 < BENCH_LIST_ROWS ? n / 2 : BENCH_LIST_ROWS, o.seed);
  uint64_t k_list = sel.n;
  static variant vs[BENCH_MAX_VARIANTS];
  int nv = 0;
#define ADD_SQL(G, NAME, DB, SQLTEXT, ROWS)                             \
  *variant_slot(vs, &nv) = (variant){.group = G,                        \
                                     .name = NAME,                      \
                                     .what = SQLTEXT,                   \
                                     .kind = V_SQL,                     \
                                     .db = DB,                          \
                                     .st = prepare_or_die(DB, SQLTEXT), \
                                     .rows = ROWS}
#define ADD_TEXT(G, NAME, DB, SQLTEXT, ROWS)                                              \
  *variant_slot(vs, &nv) = (variant) {                                                    \
    .group = G, .name = NAME, .what = SQLTEXT, .kind = V_SQL_TEXT, .db = DB, .rows = ROWS \
  }
  *variant_slot(vs, &nv) = (variant){.group = "sum(a)",
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
  /* Push-down: column predicates (zone maps, masks, positions). */
  ADD_SQL(G_COUNT99, "colstore", db, "SELECT count(*) FROM temp.cs WHERE a > 0.99", n);
  vs[nv - 1].plan = true;
  ADD_SQL(G_COUNT99, "native", db, "SELECT count(*) FROM native WHERE a > 0.99", n);
  ADD_SQL(G_SUMB90, "colstore", db, "SELECT sum(b) FROM temp.cs WHERE a > 0.9", n);
  vs[nv - 1].plan = true;
  ADD_SQL(G_SUMB90, "native", db, "SELECT sum(b) FROM native WHERE a > 0.9", n);
  /* rowid IN (literal list): prepared, run and finalized every time. */
  ADD_TEXT(G_INSUM, "colstore", db, sel.in_sum_cs, k_list);
  vs[nv - 1].plan = true;
  ADD_TEXT(G_INSUM, "native", db, sel.in_sum_nat, k_list);
  *variant_slot(vs, &nv) = (variant){.group = G_INSUM,
                                     .name = "prepare only (colstore)",
                                     .what = sel.in_sum_cs,
                                     .kind = V_PREPARE,
                                     .db = db,
                                     .rows = k_list};
  *variant_slot(vs, &nv) = (variant){.group = G_INSUM,
                                     .name = "prepare only (native)",
                                     .what = sel.in_sum_nat,
                                     .kind = V_PREPARE,
                                     .db = db,
                                     .rows = k_list};
  /* _rows = ? against the ways to hand a list to a native table. */
  ADD_TEXT(G_ROWS, "colstore", db, "SELECT a, b, c FROM temp.cs WHERE _rows = ?1", k_list);
  vs[nv - 1].bind_blob = sel.blob, vs[nv - 1].bind_blob_bytes = (int)(8 * sel.n), vs[nv - 1].plan = true;
  ADD_SQL(G_ROWS, "colstore, prepared once", db, "SELECT a, b, c FROM temp.cs WHERE _rows = ?1", k_list);
  vs[nv - 1].bind_blob = sel.blob, vs[nv - 1].bind_blob_bytes = (int)(8 * sel.n);
  ADD_SQL(G_ROWS, "colstore, one 10k-row block", db, "SELECT a, b, c FROM temp.cs WHERE _rows = ?1", k_list);
  vs[nv - 1].bind_blob = sel.blob_local, vs[nv - 1].bind_blob_bytes = (int)(8 * sel.n),
          vs[nv - 1].own_rows = true;
  ADD_TEXT(G_ROWS, "colstore IN (literal)", db, sel.in_abc_cs, k_list);
  ADD_TEXT(G_ROWS, "native IN (literal)", db, sel.in_abc_nat, k_list);
  ADD_TEXT(G_ROWS, "native IN json_each(?)", db,
           "SELECT a, b, c FROM native WHERE rowid IN (SELECT value FROM json_each(?1))", k_list);
  vs[nv - 1].bind_text = sel.json_nat;
  uint32_t *gather_bins = malloc(k_list * sizeof *gather_bins);
  void *gather_out = malloc(3 * k_list * 8);
  if (!gather_bins || !gather_out) die("out of memory");
  *variant_slot(vs, &nv) =
      (variant){.group = G_ROWS,
                .name = "core gather (bins + 3 cols)",
                .what = "cs_bins_compute + cs_gather_rows_binned for a, b, c (one thread)",
                .kind = V_GATHER,
                .store = store,
                .positions = sel.rows,
                .n_positions = k_list,
                .bins = gather_bins,
                .gather_out = {gather_out, (char *)gather_out + 8 * k_list, (char *)gather_out + 16 * k_list},
                .rows = k_list};
  /* ORDER BY rowid DESC LIMIT: the walk from the top, cut by colstore. */
  ADD_SQL(G_DESC, "colstore", db, "SELECT a FROM temp.cs ORDER BY rowid DESC LIMIT 10", 10);
  vs[nv - 1].multi = true, vs[nv - 1].reps = BENCH_FAST_REPS;
  ADD_SQL(G_DESC, "native", db, "SELECT a FROM native ORDER BY rowid DESC LIMIT 10", 10);
  vs[nv - 1].multi = true, vs[nv - 1].reps = BENCH_FAST_REPS;
  for (int i = 0; i < nv; i++)
    if (strcmp(vs[i].group, G_ROWS) == 0) vs[i].multi = true;
#undef ADD_SQL
#undef ADD_TEXT

  /* ---- the answers, computed in C from the generated rows */
  double ref_a = sum_naive(data.a, 0, n);
  {
    double ref_a_kbn = sum_kbn(data.a, 0, n);
    double ref_r = sum_naive(data.a, lo, hi + 1), ref_r_kbn = sum_kbn(data.a, lo, hi + 1);
    double ref_in = sum_naive_at(data.a, sel.sorted, sel.n),
           ref_in_kbn = sum_kbn_at(data.a, sel.sorted, 0, sel.n);
    int64_t ref_b = 0, ref_b90 = 0, ref_c99 = 0;
    for (uint64_t i = 0; i < n; i++) {
      ref_b += data.b[i];
      ref_b90 += data.a[i] > 0.9 ? data.b[i] : 0;
      ref_c99 += data.a[i] > 0.99;
    }
    uint64_t dig_abc = 0, dig_local = 0, dig_desc = 0;
    for (uint64_t i = 0; i < sel.n; i++) {
      uint64_t r = sel.rows[i], l = (uint64_t)sel.blob_local[i];
      dig_abc += digest_f64(digest_i64(digest_f64(DIGEST_ROW_SEED, data.a[r]), data.b[r]), data.c[r]);
      dig_local += digest_f64(digest_i64(digest_f64(DIGEST_ROW_SEED, data.a[l]), data.b[l]), data.c[l]);
    }
    for (uint64_t i = n - 10; i < n; i++) dig_desc += digest_f64(DIGEST_ROW_SEED, data.a[i]);
    for (int i = 0; i < nv; i++) {
      variant *v = &vs[i];
      bench_value x = {0}, y = {0};
      const char *g = v->group;
      if (v->kind == V_PREPARE) continue; /* returns nothing */
      if (v->own_rows && strcmp(g, G_ROWS) == 0)
        x = y = (bench_value){.multi = true, .n_rows = (int64_t)sel.n, .i = (int64_t)dig_local};
      else if (strcmp(g, "sum(a)") == 0)
        x = value_float(ref_a), y = value_float(ref_a_kbn);
      else if (strcmp(g, "range sum(a)") == 0)
        x = value_float(ref_r), y = value_float(ref_r_kbn);
      else if (strcmp(g, G_INSUM) == 0)
        x = value_float(ref_in), y = value_float(ref_in_kbn);
      else if (strcmp(g, "sum(b)") == 0)
        x = y = value_int(ref_b);
      else if (strcmp(g, "count(*)") == 0)
        x = y = value_int((int64_t)n);
      else if (strcmp(g, G_COUNT99) == 0)
        x = y = value_int(ref_c99);
      else if (strcmp(g, G_SUMB90) == 0)
        x = y = value_int(ref_b90);
      else if (strcmp(g, G_ROWS) == 0)
        x = y = (bench_value){.multi = true, .n_rows = (int64_t)sel.n, .i = (int64_t)dig_abc};
      else if (strcmp(g, G_DESC) == 0)
        x = y = (bench_value){.multi = true, .n_rows = 10, .i = (int64_t)dig_desc};
      else
        die("a variant's group has no reference answer");
      v->ref = x, v->ref_alt = y, v->has_ref = true;
    }
  }

  if (o.profile) return profile_run(&o, vs, nv, db, &p);

  /* ---- checks: before any timing, every variant must agree */
  printf("\n== Checks (every variant must agree before anything is timed) ==\n");
  printf("  list queries: %llu distinct random positions (seed %llu), in random order\n",
         (unsigned long long)sel.n, (unsigned long long)o.seed);
  bool bad = false;
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    bench_value got = variant_run(v, NULL);
    if (!v->has_ref) {
      printf("  %-13s %-28s   (prepare + finalize only; returns nothing)\n", v->group, v->name);
      v->expect = got;
      continue;
    }
    const char *how = value_same(got, v->ref)
                          ? (v->ref.multi      ? "same rows as the generated data (order-independent digest)"
                             : v->ref.is_float ? "bit-identical to the in-order C sum"
                                               : "exact")
                      : value_same(got, v->ref_alt)
                          ? "bit-identical to the in-order Kahan-Babuska-Neumaier sum (SQLite >= 3.43)"
                          : NULL;
    printf("  %-13s %-28s = ", v->group, v->name);
    value_print(stdout, got);
    printf("  %s\n", how ? how : "MISMATCH");
    if (!how) bad = true;
    v->expect = got;
  }
  /* Within a group, every variant but the C loop must agree exactly. */
  for (int i = 0; i < nv; i++)
    for (int j = 0; j < nv; j++)
      if (vs[i].kind != V_RAW_SUM && vs[j].kind != V_RAW_SUM && vs[i].has_ref && vs[j].has_ref &&
          !vs[i].own_rows && !vs[j].own_rows && strcmp(vs[i].group, vs[j].group) == 0 &&
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
      printf("  %-13s %-28s = %.17g, %lld  %s\n", "sum(c), sum(d)", k ? "native" : "colstore", c,
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

  /* What each SQL variant runs, and how SQLite plans it. */
  printf("\n== Plans (EXPLAIN QUERY PLAN; list SQL shortened) ==\n");
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    if (v->kind != V_SQL && v->kind != V_SQL_TEXT) continue;
    if (v->own_rows) continue; /* same statement as another variant */
    char plan[512];
    query_plan(v->db, v->what, plan, sizeof plan);
    size_t len = strlen(v->what);
    printf("  %-13s %-28s %.*s%s\n  %-42s -> %s\n", v->group, v->name, len > 90 ? 70 : (int)len, v->what,
           len > 90 ? " ...)" : "", "", plan);
  }
  printf("\ncolstore_last_plan() after each push-down query's check run:\n");
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    if (!v->plan) continue;
    variant_run(v, NULL);
    sqlite3_stmt *st = prepare_or_die(db, "SELECT colstore_last_plan()");
    if (sqlite3_step(st) == SQLITE_ROW)
      printf("  %s:\n    %s\n", v->group, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }

  /* ---- open, create */
  part_open(&o, &p, &src);
  part_create(&o, &p, db);

  /* ---- queries, interleaved */
  long long llc = bench_llc_bytes();
  size_t evict_bytes = evict_bytes_default();
  printf("\n== Queries (%d rounds; in each round every variant runs once, in this order; %s) ==\n", o.rounds,
         o.evict ? "before each run the CPU caches are pushed clean"
                 : "--no-evict: caches as the last run left them");
  if (o.evict)
    printf(
        "  (eviction: one write per cache line of a %zu MiB buffer, 2x the last-level cache of %lld KiB or "
        "64 MiB, untimed)\n",
        evict_bytes >> 20, llc >> 10);
  for (int r = 0; r < o.rounds; r++) {
    for (int i = 0; i < nv; i++) {
      variant *v = &vs[i];
      run_times t;
      if (o.evict) bench_evict_caches(evict_bytes);
      bench_value got = variant_run(v, &t);
      if (!value_same(got, v->expect)) {
        printf("bench_sql: %s / %s changed its answer in round %d\n", v->group, v->name, r);
        return 2;
      }
      v->cpu_ms[v->n] = t.cpu_ms;
      v->pcpu_ms[v->n] = t.pcpu_ms;
      v->kernel_ms[v->n] = t.kernel_ms;
      v->ms[v->n++] = t.ms;
    }
    printf("  round %d/%d done\n", r + 1, o.rounds);
  }
  printf("\n| %-13s | %-28s | %10s | %10s | %10s | %9s | %-17s | %9s | %9s | %7s | %-16s |\n", "query",
         "variant", "median ms", "min ms", "max ms", "ns/row", "time / colstore's", "cpu ms", "proc cpu",
         "off-cpu", "kernel ms (share)");
  printf(
      "|---------------|------------------------------|------------|------------|------------|-----------|---"
      "----------------|-----------|-----------|---------|------------------|\n");
  bench_stats st[BENCH_MAX_VARIANTS], cst[BENCH_MAX_VARIANTS], pst[BENCH_MAX_VARIANTS];
  double worst_off = 0;
  for (int i = 0; i < nv; i++)
    st[i] = bench_stats_of(vs[i].ms, vs[i].n), cst[i] = bench_stats_of(vs[i].cpu_ms, vs[i].n),
    pst[i] = bench_stats_of(vs[i].pcpu_ms, vs[i].n);
  for (int i = 0; i < nv; i++) {
    variant *v = &vs[i];
    variant *cs = find_variant(vs, nv, v->group, "colstore");
    char ratio[64] = "", kern[64] = "";
    if (cs && cs != v) snprintf(ratio, sizeof ratio, "%.2fx", st[i].median / st[cs - vs].median);
    if (v->plan) {
      bench_stats ks = bench_stats_of(v->kernel_ms, v->n);
      snprintf(kern, sizeof kern, "%.3f (%.0f%%)", ks.median, 100.0 * ks.median / st[i].median);
    }
    double off = st[i].median > 0 && cst[i].median < st[i].median ? 1.0 - cst[i].median / st[i].median : 0;
    if (off > worst_off) worst_off = off;
    printf("| %-13s | %-28s | %10.3f | %10.3f | %10.3f | %9.2f | %-17s | %9.3f | %9.3f | %6.1f%% | %-16s |\n",
           v->group, v->name, st[i].median, st[i].min, st[i].max, st[i].median * 1e6 / (double)v->rows, ratio,
           cst[i].median, pst[i].median, 100.0 * off, kern);
  }
  printf(
      "(cpu ms: median CPU time of the calling thread; proc cpu: of the whole process, worker threads "
      "included; off-cpu: 1 - cpu/wall of the medians, the share spent preempted or, for a threaded kernel, "
      "waiting for its workers; kernel ms: colstore_last_plan()'s kernel_us, median, and its share of the "
      "wall median.%s)\n",
      worst_off > 0.05
          ? " WARNING: some variant was off the CPU > 5% of its time: a busy machine; prefer the "
            "ratios of CPU medians below"
          : "");

  /* Ratios of medians, plus the range of the per-round ratios (paired within a round). */
  printf(
      "\nratios (wall median of A / of B, this run; [min..max] of the per-round A/B; ratio of the wall mins; "
      "ratio of the thread-CPU medians; ratio of the process-CPU medians):\n");
  struct {
    const char *g, *a, *b;
    double target; /* a floor for the median ratio; 0 = information only */
    const char *meaning;
  } rq[] = {
      {"sum(a)", "native", "colstore", 1.2, "colstore speed-up over native"},
      {"sum(a)", "native, mmap_size=4G", "colstore", 0, "colstore speed-up over native with mmap"},
      {"sum(a)", "colstore", "bench_floor(map)", 0,
       "colstore cost over the per-row floor reading the same mapping"},
      {"sum(a)", "colstore", "bench_floor(array)", 0,
       "colstore cost over the per-row floor on a malloc'd array"},
      {"sum(a)", "bench_floor(copy)", "bench_floor(map)", 0,
       "copying each record into a buffer vs reading the mapping"},
      {"sum(a)", "colstore", "C loop over mapped records", 0, "SQLite's per-row cost over a plain C loop"},
      {"sum(b)", "native", "colstore", 0, "colstore speed-up over native"},
      {"count(*)", "native", "colstore", 0, "colstore speed-up over native"},
      {"range sum(a)", "native", "colstore", 1.5,
       "colstore speed-up over native (rowid BETWEEN, 10% of rows)"},
      {G_COUNT99, "native", "colstore", 40,
       "colstore speed-up over native (predicate push-down, 1% selected)"},
      {G_SUMB90, "native", "colstore", 10,
       "colstore speed-up over native (predicate push-down, 10% selected)"},
      {G_INSUM, "native", "colstore", 2.5, "colstore speed-up over native (literal IN list, prepare + run)"},
      {G_INSUM, "prepare only (colstore)", "colstore", 0,
       "share of colstore's time that is the prepare alone"},
      {G_INSUM, "prepare only (native)", "native", 0, "share of native's time that is the prepare alone"},
      {G_ROWS, "native IN (literal)", "colstore", 10,
       "_rows = ? (prepare + bind + run) over native's literal IN list (prepare + run)"},
      {G_ROWS, "native IN json_each(?)", "colstore", 0, "_rows = ? over native with a bound JSON list"},
      {G_ROWS, "native IN (literal)", "colstore IN (literal)", 0, "the same literal list on both tables"},
      {G_ROWS, "colstore IN (literal)", "colstore", 0, "a literal list over a bound BLOB, same table"},
      {G_ROWS, "colstore", "colstore, prepared once", 0, "what preparing the short statement adds"},
      {G_ROWS, "colstore, prepared once", "colstore, one 10k-row block", 0,
       "random rows over the same count from one contiguous block (shuffled): cache and TLB misses of "
       "reading in place"},
      {G_ROWS, "colstore, prepared once", "core gather (bins + 3 cols)", 0,
       "SQL row delivery over the kernels gathering the same cells into buffers"},
      {G_DESC, "native", "colstore", 0, "colstore speed-up over native"},
  };
  for (size_t k = 0; k < sizeof rq / sizeof rq[0]; k++) {
    variant *a = find_variant(vs, nv, rq[k].g, rq[k].a), *b = find_variant(vs, nv, rq[k].g, rq[k].b);
    if (!a || !b) continue;
    double per_round[BENCH_MAX_ROUNDS];
    for (int r = 0; r < a->n; r++) per_round[r] = a->ms[r] / b->ms[r];
    bench_stats pr = bench_stats_of(per_round, a->n);
    double ratio = st[a - vs].median / st[b - vs].median;
    double tcpu = cst[a - vs].median / cst[b - vs].median, pcpu = pst[a - vs].median / pst[b - vs].median;
    printf("  %-13s %-24s / %-27s = %7.2f  [%.2f..%.2f]  mins %.2f  cpu %.2f  proc %.2f  %s%s\n", rq[k].g,
           rq[k].a, rq[k].b, ratio, pr.min, pr.max, st[a - vs].min / st[b - vs].min, tcpu, pcpu,
           rq[k].meaning, rq[k].target > 0 ? " [target]" : "");
    if (rq[k].target <= 0) continue;
    char miss[160] = "";
    if (ratio < rq[k].target)
      snprintf(miss, sizeof miss, "; missed by %.0f%%: colstore would need %.3f ms, takes %.3f ms",
               100.0 * (1.0 - ratio / rq[k].target), st[a - vs].median / rq[k].target, st[b - vs].median);
    else if (pr.min < rq[k].target)
      snprintf(miss, sizeof miss, "; met at the median, some rounds below");
    target_add(
        ratio >= rq[k].target ? T_PASS : T_FAIL,
        "%s: %s / %s = %.2fx (per-round %.2f..%.2f; thread-CPU %.2fx, process-CPU %.2fx); target >= %gx%s",
        rq[k].g, rq[k].a, rq[k].b, ratio, pr.min, pr.max, tcpu, pcpu, rq[k].target, miss);
  }
  free(gather_bins);
  free(gather_out);

  /* ---- kernel threads: one fresh process per setting */
  {
    long long expect[BENCH_CHILD_QUERIES];
    double native_ms[BENCH_CHILD_QUERIES], native_cpu_ms[BENCH_CHILD_QUERIES];
    for (int q = 0; q < BENCH_CHILD_QUERIES; q++) {
      expect[q] = (long long)find_variant(vs, nv, child_groups[q], "colstore")->expect.i;
      native_ms[q] = st[find_variant(vs, nv, child_groups[q], "native") - vs].median;
      native_cpu_ms[q] = cst[find_variant(vs, nv, child_groups[q], "native") - vs].median;
    }
    part_threads(&o, &p, expect, native_ms, native_cpu_ms);
  }

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
  selection_free(&sel);
  data_free(&data);
  return 0;
}
