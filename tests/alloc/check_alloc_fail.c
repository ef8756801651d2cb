/*
** check_alloc_fail.c - every allocation a statement makes fails in turn, and
** colstore survives each one.
**
** HOW IT WORKS.  One countdown (core/base/cs_alloc.c, cs_mem_fail_after) decides
** which allocation fails.  The core's allocations go through it directly;
** SQLite's go through it because this program installs its own SQLite
** allocator (SQLITE_CONFIG_MALLOC, before sqlite3_initialize) whose malloc and
** realloc ask cs_mem_tick() first.  The extension is compiled into this
** program (the ext/ sources with -DSQLITE_CORE, registered by sqlite3_auto_extension),
** so its sqlite3_malloc64 calls are SQLite's and count on the same countdown.
**
** Each scenario is a statement or a short script: opening a table (a store,
** a dataset directory, a pattern, a store recovered by scanning its records,
** a damaged store), scans of every shape the cursor has (and after another
** connection's commit, so the snapshot is refreshed), INSERT and
** transactions (DELETE and UPDATE read back before COMMIT among them),
** colstore_create, and aggregate tables (colstore_agg:
** totals from per-record statistics, grouped with predicates, _rows and
** _mask, one over a SOURCE); a few more call the core's API for
** the allocations no SQL reaches (a dataset from a list of paths, the
** gather's base table, cs_pred_eval past its stack, the worker pool,
** calibration).  It runs first with nothing failing,
** counting its allocations N and recording what it returns; then once for
** every k in 1..N plus a margin with the k-th allocation failing, once with
** only that one failing ("transient") and once with every later one failing
** too ("sticky": the error paths that allocate fail as well).  Every run must
**
**   - end with SQLITE_OK, SQLITE_NOMEM, or an error whose message starts with
**     "colstore:", and that error only if the clean run gives it too (an
**     out-of-memory reported as "corrupt" or "unknown option" is a bug);
**     an OK scan must return exactly the rows of the clean run, and an OK
**     open must give a table that reads all its rows;
**   - leave nothing behind: after the connection closes, SQLite's memory in
**     use and the core's live allocations (cs_mem_live) are what they were
**     before the run; no temporary store file is left; ASan's leak checker
**     (its own ctest entry, detect_leaks=1) sees the whole process;
**   - leave the stores as they were: a read must leave every file byte for
**     byte unchanged; a write must leave, seen from a new connection with
**     the allocator restored, either the old rows or the old rows plus the
**     whole transaction (a checksum of every value) and colstore_verify 'ok',
**     and when it is the old rows the file is byte for byte the old file
**     (an aborted append restores it); colstore_create either makes the
**     whole store or no file at all.
**
** Why in-process and not a shell or Python loop: the countdown must span
** SQLite's allocator and the core's, which only a program that configures
** SQLite itself can do; and a run costs milliseconds, so every allocation of
** every scenario is tried instead of a sample.
**
** What it cannot reach: allocations inside libc (opendir, glob, fopen,
** pthread_create, qsort's buffer) and inside the OpenMP runtime do not go
** through either allocator, and SQLite's lookaside slots are served without
** calling it (lookaside is turned off here so that SQLite's small
** allocations are counted too).
**
** Usage: check_alloc_fail [SUBSTRING]   runs the scenarios whose name
** contains SUBSTRING; ALLOC_FAIL_VERBOSE=1 prints every run.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "colstore.h"
#include "cs_format.h" /* the commit slots' offsets, to damage them */
#include "cs_import.h" /* the importer's threads, which no small SQL file reaches */

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

int sqlite3_colstore_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

/* Rows of the test store; more than two of the cursor's smallest batches
** (4096 rows at the smallest batch_bytes) so that a filtered scan is
** pipelined on the worker. */
#define N_ROWS 10000
/* Runs past the clean run's count: a run may allocate a little more than
** the clean one (a path taken only on failure). */
#define K_MARGIN 20

static char g_root[1024], g_pristine[1100], g_work[1100], g_expect[1100];
static char g_where[512]; /* the run in progress, for a crash report */
static bool g_verbose;
static bool g_warmup; /* the first clean run: makes what lives for the process */
static long g_failures;

/* ---------------------------------------------------------------- report */

static void crash_report(void) {
  static const char head[] = "\ncheck_alloc_fail: crashed during ";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, g_where, strlen(g_where));
  (void)!write(2, "\n", 1);
}

static void on_signal(int sig) {
  crash_report();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "check_alloc_fail: setup failed: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(2);
}

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (g_failures < 40) {
    fprintf(stderr, "FAIL %s: ", g_where);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
  }
  va_end(ap);
  g_failures++;
}

/* ------------------------------------------------------------- allocator */

static sqlite3_mem_methods host_mem;

static void *fm_malloc(int n) { return cs_mem_tick() ? NULL : host_mem.xMalloc(n); }
static void fm_free(void *p) { host_mem.xFree(p); }
static void *fm_realloc(void *p, int n) { return cs_mem_tick() ? NULL : host_mem.xRealloc(p, n); }
static int fm_size(void *p) { return host_mem.xSize(p); }
static int fm_roundup(int n) { return host_mem.xRoundup(n); }
static int fm_init(void *p) { return host_mem.xInit(p); }
static void fm_shutdown(void *p) { host_mem.xShutdown(p); }

static void allocator_install(void) {
  if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &host_mem) != SQLITE_OK) die("SQLITE_CONFIG_GETMALLOC");
  static sqlite3_mem_methods m;
  m = (sqlite3_mem_methods){fm_malloc, fm_free, fm_realloc, fm_size, fm_roundup, fm_init, fm_shutdown, NULL};
  m.pAppData = host_mem.pAppData;
  if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK) die("SQLITE_CONFIG_MALLOC");
  if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1) != SQLITE_OK) die("SQLITE_CONFIG_MEMSTATUS");
  if (sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0) != SQLITE_OK) die("SQLITE_CONFIG_LOOKASIDE");
  if (sqlite3_initialize() != SQLITE_OK) die("sqlite3_initialize");
  if (sqlite3_auto_extension((void (*)(void))sqlite3_colstore_init) != SQLITE_OK)
    die("sqlite3_auto_extension");
}

static void disarm(void) { cs_mem_fail_after(-1, false); }

/* ------------------------------------------------------------------ files */

static void path_join(char *out, size_t cap, const char *a, const char *b) {
  if ((size_t)snprintf(out, cap, "%s/%s", a, b) >= cap) die("path too long: %s/%s", a, b);
}

static void copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in < 0 || out < 0) die("copy %s to %s: %s", from, to, strerror(errno));
  char buf[1 << 16];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) die("write %s: %s", to, strerror(errno));
  if (n < 0) die("read %s: %s", from, strerror(errno));
  close(in);
  close(out);
}

/* Removes every file under dir (one level of subdirectories), keeping dir. */
static void dir_empty(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) die("opendir %s: %s", dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char p[2048];
    path_join(p, sizeof p, dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      dir_empty(p);
      rmdir(p);
    } else {
      unlink(p);
    }
  }
  closedir(d);
}

/* Copies the files of from into to (one level of subdirectories). */
static void dir_copy(const char *from, const char *to) {
  DIR *d = opendir(from);
  if (!d) die("opendir %s: %s", from, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char a[2048], b[2048];
    path_join(a, sizeof a, from, e->d_name);
    path_join(b, sizeof b, to, e->d_name);
    struct stat st;
    if (stat(a, &st) == 0 && S_ISDIR(st.st_mode)) {
      mkdir(b, 0755);
      dir_copy(a, b);
    } else {
      copy_file(a, b);
    }
  }
  closedir(d);
}

static bool file_exists(const char *p) { return access(p, F_OK) == 0; }

static bool files_equal(const char *a, const char *b) {
  FILE *x = fopen(a, "rb"), *y = fopen(b, "rb");
  bool same = x && y;
  while (same) {
    char p[1 << 14], q[1 << 14];
    size_t n = fread(p, 1, sizeof p, x), m = fread(q, 1, sizeof q, y);
    if (n != m || memcmp(p, q, n) != 0) same = false;
    if (n == 0) break;
  }
  if (x) fclose(x);
  if (y) fclose(y);
  return same;
}

/* Whether every file of the pristine copy is byte-identical in work, and
** work has no file pristine lacks (a temporary store left behind). */
static bool tree_same(const char *pristine, const char *work, char *why, size_t cap) {
  DIR *d = opendir(work);
  if (!d) die("opendir %s", work);
  struct dirent *e;
  bool same = true;
  while (same && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char a[2048], b[2048];
    path_join(a, sizeof a, pristine, e->d_name);
    path_join(b, sizeof b, work, e->d_name);
    struct stat st;
    if (stat(b, &st) == 0 && S_ISDIR(st.st_mode)) {
      same = tree_same(a, b, why, cap);
    } else if (!file_exists(a)) {
      snprintf(why, cap, "%s was left behind", b), same = false;
    } else if (!files_equal(a, b)) {
      snprintf(why, cap, "%s changed", b), same = false;
    }
  }
  closedir(d);
  return same;
}

/* Any file in dir (one level down too) whose name holds ".tmp.": a
** temporary store the writer should have removed. */
static bool temp_left(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return false;
  struct dirent *e;
  bool found = false;
  while (!found && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[2048];
    path_join(p, sizeof p, dir, e->d_name);
    struct stat st;
    if (strstr(e->d_name, ".tmp."))
      snprintf(out, cap, "%s", p), found = true;
    else if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
      found = temp_left(p, out, cap);
  }
  closedir(d);
  return found;
}

/* ------------------------------------------------------------------- SQL */

static sqlite3 *db_open(void) {
  sqlite3 *db = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK)
    die("sqlite3_open: %s", db ? sqlite3_errmsg(db) : "no memory");
  return db;
}

static void db_close(sqlite3 *db) {
  int rc = sqlite3_close(db);
  if (rc != SQLITE_OK) {
    fail("sqlite3_close returned %d (%s): a statement was left unfinalized", rc, sqlite3_errmsg(db));
    sqlite3_close_v2(db);
  }
}

static void exec_ok(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
    die("%s: %s", sql, err ? err : sqlite3_errmsg(db));
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

/* A file's bytes hashed (0 when it does not exist). */
static uint64_t file_hash(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  uint64_t h = 0xcbf29ce484222325ULL;
  char buf[1 << 14];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = fnv(h, buf, n);
  fclose(f);
  return h;
}

/* What a statement or script ended with: the first failure. */
typedef struct outcome {
  int rc;        /* SQLITE_OK, or the first error code */
  char msg[512]; /* its message */
  uint64_t hash; /* of every row returned, in order */
  uint64_t rows;
} outcome;

static void outcome_set(outcome *o, sqlite3 *db, int rc) {
  if (o->rc != SQLITE_OK) return;
  o->rc = rc;
  snprintf(o->msg, sizeof o->msg, "%s", sqlite3_errmsg(db));
}

/* SQLite's generic text for the code: what SQLite reports when it cannot
** copy the extension's message (its own allocation failed after colstore
** returned the code and the message). */
static bool outcome_generic(const outcome *o) { return strcmp(o->msg, sqlite3_errstr(o->rc)) == 0; }

static bool outcome_acceptable(const outcome *o) {
  return o->rc == SQLITE_OK || (o->rc & 0xff) == SQLITE_NOMEM || strncmp(o->msg, "colstore:", 9) == 0 ||
         outcome_generic(o);
}

/* Runs one statement to the end, hashing its rows; blob (if any) bound to ?1. */
static int stmt_run(sqlite3 *db, const char *sql, const void *blob, int blob_bytes, outcome *o) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    outcome_set(o, db, rc);
    return rc;
  }
  if (blob && (rc = sqlite3_bind_blob(st, 1, blob, blob_bytes, SQLITE_TRANSIENT)) != SQLITE_OK) {
    outcome_set(o, db, rc);
    sqlite3_finalize(st);
    return rc;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int n = sqlite3_column_count(st);
    for (int c = 0; c < n; c++) {
      int t = sqlite3_column_type(st, c);
      uint8_t tag = (uint8_t)t;
      o->hash = fnv(o->hash, &tag, 1);
      if (t == SQLITE_INTEGER) {
        sqlite3_int64 v = sqlite3_column_int64(st, c);
        o->hash = fnv(o->hash, &v, sizeof v);
      } else if (t == SQLITE_FLOAT) {
        double v = sqlite3_column_double(st, c);
        o->hash = fnv(o->hash, &v, sizeof v);
      } else if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
        /* _blob, not _text: no terminator to add, so no allocation */
        const void *p = sqlite3_column_blob(st, c);
        int bytes = sqlite3_column_bytes(st, c);
        if (!p && bytes > 0) {
          rc = SQLITE_NOMEM;
          break;
        }
        o->hash = fnv(o->hash, &bytes, sizeof bytes);
        if (bytes) o->hash = fnv(o->hash, p, (size_t)bytes);
      }
    }
    if (rc != SQLITE_ROW) break;
    o->rows++;
  }
  if (rc != SQLITE_DONE) {
    if (rc == SQLITE_NOMEM) {
      o->rc = o->rc ? o->rc : SQLITE_NOMEM;
    } else {
      rc = sqlite3_reset(st); /* prepare_v2 gave the code; this the message */
      outcome_set(o, db, rc ? rc : SQLITE_ERROR);
    }
  }
  sqlite3_finalize(st);
  return o->rc;
}

/* Every value of a store, hashed, from a connection of its own with the
** allocator restored; and colstore_verify's word.  false if unreadable. */
static bool store_check(const char *path, uint64_t *out_hash, uint64_t *out_rows, char *verify, size_t cap) {
  sqlite3 *db = db_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE temp.chk USING colstore(%Q)", path);
  bool ok = sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
  sqlite3_free(sql);
  outcome o = {0};
  if (ok) ok = stmt_run(db, "SELECT * FROM temp.chk", NULL, 0, &o) == SQLITE_OK;
  *out_hash = o.hash;
  *out_rows = o.rows;
  snprintf(verify, cap, "%s", ok ? "" : o.msg[0] ? o.msg : sqlite3_errmsg(db));
  if (ok) {
    sqlite3_stmt *st = NULL;
    sql = sqlite3_mprintf("SELECT colstore_verify(%Q)", path);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      snprintf(verify, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    else
      snprintf(verify, cap, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_free(sql);
  }
  sqlite3_close(db);
  return ok;
}

/* ------------------------------------------------------------- scenarios */

typedef enum { K_OPEN, K_SCAN, K_WRITE, K_CREATE, K_COMPACT, K_EXPORT } kind;

/* Statements a scenario may run (all of them: a script cut short would
** never reach its COMMIT). */
#define SCENARIO_MAX_SQL 12

typedef struct scenario {
  const char *name;
  kind kind;
  /* K_OPEN: the CREATE VIRTUAL TABLE; then `check` must count check_rows
  ** rows of it (0: as many as after the clean run).
  ** K_SCAN: one query (?1 bound to blob).  K_WRITE: statements, in order.
  ** K_CREATE: one query calling colstore_create on `target`.
  ** K_COMPACT: one query calling colstore_compact on `target`, whose rows
  ** must read the same after it whatever happens, and whose file must be
  ** byte for byte the old one when it fails. */
  const char *sql[SCENARIO_MAX_SQL];
  const char *check;   /* K_OPEN: a count(*) query run clean after an OK open */
  uint64_t check_rows; /* ... and the count it must give */
  const char *target;  /* K_CREATE: the file made, relative to work */
  int blob;            /* K_SCAN: 1 = _rows positions, 2 = _mask bytes */
  bool error;          /* the clean run fails too: the failing runs must fail with its message or NOMEM */
  /* SQL run clean on a second connection after the setup, before the armed
  ** part: another connection's commit, which the statement must see by
  ** refreshing its table's snapshot.  The files are then held to the state
  ** the clean run left, not to the pristine copy. */
  const char *pre;
} scenario;

/* The store of every scenario: N_ROWS rows in three records, every type
** the cursor reads in place or gathers, NULLs in each nullable column; s
** and b repeat (212 and 98 values, NULL one) so that a GROUP BY on them
** builds the dictionary codes of kernels/cs_codes.c. */
#define NATIVE_SQL                                                                                          \
  "CREATE TABLE n(i INT64 NOT NULL, f FLOAT64, s TEXT, b BLOB, k INT32);"                                   \
  "WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 9999) "                         \
  "INSERT INTO n SELECT x, CASE WHEN x % 7 = 0 THEN NULL ELSE x * 0.5 END, "                                \
  "CASE WHEN x % 11 = 0 THEN NULL ELSE 'str' || (x % 211) END, "                                            \
  "CASE WHEN x % 13 = 0 THEN NULL ELSE CAST(printf('%08x', ((x % 97) * 2654435761) % 4294967296) AS BLOB) " \
  "END, "                                                                                                   \
  "(x * 37) % 100 FROM c;"

#define INS_A "INSERT INTO t VALUES (10000, 1.5, 'x', x'0102', 1), (10001, NULL, NULL, NULL, NULL)"
#define INS_B "INSERT INTO t VALUES (10002, 2.5, '', x'', 3)"
#define INS_C \
  "INSERT INTO t VALUES (10003, -1.0, 'a longer text value, to grow a batch buffer', zeroblob(100), 4)"

/* One scenario a line or two: a table read across, which clang-format would
** stretch to a field a line. */
/* clang-format off */
static const scenario scenarios[] = {
    /* open */
    {"open store", K_OPEN, {"CREATE VIRTUAL TABLE t USING colstore('@/store.cst')"}, "SELECT count(*) FROM t", N_ROWS, NULL, 0, false, NULL},
    {"open store with definitions", K_OPEN,
     {"CREATE VIRTUAL TABLE t USING colstore('@/store.cst', i INT64 NOT NULL, f FLOAT64, s TEXT, b BLOB, k INT32, verify=full)"},
     "SELECT count(*) FROM t", N_ROWS, NULL, 0, false, NULL},
    {"open dataset directory", K_OPEN, {"CREATE VIRTUAL TABLE d USING colstore('@/ds')"}, "SELECT count(*) FROM d", 5000, NULL, 0, false, NULL},
    {"open store cache=memory", K_OPEN,
     {"CREATE VIRTUAL TABLE t USING colstore('@/store.cst', cache=memory, verify=full)"}, "SELECT count(*) FROM t", N_ROWS, NULL, 0, false, NULL},
    {"open dataset cache=memory", K_OPEN, {"CREATE VIRTUAL TABLE d USING colstore('@/ds', cache=memory)"}, "SELECT count(*) FROM d", 5000, NULL, 0,
     false, NULL},
    {"open dataset pattern", K_OPEN, {"CREATE VIRTUAL TABLE d USING colstore('@/ds/*.cst')"}, "SELECT count(*) FROM d", 5000, NULL, 0, false, NULL},
    /* recovery: the forward scan of the records (no slot, damaged footer) */
    {"open recovered, no footer", K_OPEN, {"CREATE VIRTUAL TABLE t USING colstore('@/recovered_no_footer.cst')"},
     "SELECT count(*) FROM t", 0, NULL, 0, false, NULL},
    {"open recovered, damaged footer", K_OPEN, {"CREATE VIRTUAL TABLE t USING colstore('@/recovered_damaged_footer.cst')"},
     "SELECT count(*) FROM t", 0, NULL, 0, false, NULL},
    {"open recovered, 25 records, no slot", K_OPEN, {"CREATE VIRTUAL TABLE t USING colstore('@/many_recovered.cst')"},
     "SELECT count(*) FROM t", 200, NULL, 0, false, NULL},
    /* damaged stores: out of memory must not change the diagnosis */
    {"open damaged footer and record", K_OPEN, {"CREATE VIRTUAL TABLE t USING colstore('@/damaged_footer_and_record.cst')"},
     NULL, 0, NULL, 0, true, NULL},
    {"open truncated", K_OPEN, {"CREATE VIRTUAL TABLE t USING colstore('@/truncated.cst')"}, NULL, 0, NULL, 0, true, NULL},
    /* scans: every shape of the cursor */
    {"scan full", K_SCAN, {"SELECT * FROM t"}, NULL, 0, NULL, 0, false, NULL},
    {"scan predicate", K_SCAN, {"SELECT i, f, s FROM t WHERE k = 7 AND f > 100"}, NULL, 0, NULL, 0, false, NULL},
    {"scan predicate IN", K_SCAN,
     {"SELECT i, b FROM t WHERE k IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 4, 6, 9, 10, 11, 12, 14, 15, 16, 17)"}, NULL, 0, NULL, 0, false, NULL},
    {"scan sorted range", K_SCAN, {"SELECT count(*), sum(f) FROM t WHERE i BETWEEN 1000 AND 8999"}, NULL, 0, NULL, 0, false, NULL},
    {"scan _rows", K_SCAN, {"SELECT i, f, s FROM t WHERE _rows = ?1"}, NULL, 0, NULL, 1, false, NULL},
    {"scan _mask", K_SCAN, {"SELECT i, k FROM t WHERE _mask = ?1 AND k < 90"}, NULL, 0, NULL, 2, false, NULL},
    {"scan rowid IN", K_SCAN, {"SELECT i, s FROM t WHERE rowid IN (5, 17, 4000, 9999, 3, 8001, 5)"}, NULL, 0, NULL, 0, false, NULL},
    {"scan ORDER BY rowid DESC", K_SCAN, {"SELECT i, s, b FROM t WHERE rowid > 2000 ORDER BY rowid DESC"}, NULL, 0, NULL, 0, false, NULL},
    {"scan LIMIT", K_SCAN, {"SELECT i, f FROM t WHERE k > 50 LIMIT 10 OFFSET 5"}, NULL, 0, NULL, 0, false, NULL},
    {"scan join re-filter", K_SCAN,
     {"SELECT a.i, b.f FROM t AS a JOIN t AS b ON b.rowid = a.rowid + 1 WHERE a.k = 3 AND a.i < 3000"}, NULL, 0, NULL, 0, false, NULL},
    /* the automatic index (kernels/cs_index.c): built at the 32nd filter of b.k, then used */
    {"scan correlated automatic index", K_SCAN,
     {"SELECT a.i, (SELECT count(*) FROM t AS b WHERE b.k = a.k), (SELECT sum(b.f) FROM t AS b WHERE b.k IN (a.k, 7) AND b.f > 10) FROM t AS a WHERE a.i < 40"},
     NULL, 0, NULL, 0, false, NULL},
    {"scan dataset", K_SCAN, {"SELECT * FROM d WHERE k < 10"}, NULL, 0, NULL, 0, false, NULL},
    {"scan after another commit", K_SCAN, {"SELECT count(*), sum(i), max(s) FROM t WHERE k < 50"}, NULL, 0, NULL, 0, false,
     "CREATE VIRTUAL TABLE temp.t2 USING colstore('@/store.cst');"
     "INSERT INTO temp.t2 VALUES (20000, 1.0, 'p', x'00', 5), (20001, NULL, 'q', NULL, 6)"},
    {"scan memory after another commit", K_SCAN, {"SELECT count(*), sum(i), max(s), max(b) FROM m WHERE k < 50"}, NULL, 0, NULL, 0, false,
     "CREATE VIRTUAL TABLE temp.t2 USING colstore('@/store.cst');"
     "INSERT INTO temp.t2 VALUES (20000, 1.0, 'p', x'00', 5), (20001, NULL, 'q', NULL, 6)"},
    {"scan dataset after files change", K_SCAN, {"SELECT count(*), sum(k), max(s) FROM d"}, NULL, 0, NULL, 0, false,
     "SELECT colstore_create('@/ds/c.cst', 'SELECT * FROM n WHERE i >= 5000 AND i < 6000');"
     "CREATE VIRTUAL TABLE temp.a2 USING colstore('@/ds/a.cst');"
     "INSERT INTO temp.a2 VALUES (20000, 1.0, 'p', x'00', 5)"},
    {"aggregate totals (per-record statistics)", K_SCAN, {"SELECT count, sum_i, min_f, max_f, max_s FROM at"}, NULL, 0, NULL, 0,
     false, NULL},
    {"aggregate by k, predicates", K_SCAN,
     {"SELECT k, count, sum_i, count_f, min_s, max_b FROM ak WHERE f > 100 AND s IS NOT 'str5' ORDER BY k"}, NULL, 0, NULL, 0,
     false, NULL},
    {"aggregate by TEXT (dictionary codes built)", K_SCAN,
     {"SELECT s, count, sum_i, max_b FROM as1 WHERE k < 70 ORDER BY s"}, NULL, 0, NULL, 0, false, NULL},
    {"aggregate by BLOB (dictionary codes built)", K_SCAN, {"SELECT b, count, min_s FROM ab ORDER BY b"}, NULL, 0, NULL,
     0, false, NULL},
    {"aggregate by TEXT after another connection's UPDATE", K_SCAN, {"SELECT s, count, sum_i FROM as1 ORDER BY s"}, NULL,
     0, NULL, 0, false,
     "CREATE VIRTUAL TABLE temp.t2 USING colstore('@/store.cst');"
     "UPDATE temp.t2 SET s = 'changed' || (k % 3) WHERE k % 4 = 0"},
    {"aggregate by TEXT and k over _rows", K_SCAN, {"SELECT s, k, count, sum_i FROM as2 WHERE _rows = ?1 ORDER BY s, k"}, NULL, 0,
     NULL, 1, false, NULL},
    {"aggregate by k over _mask", K_SCAN, {"SELECT k, count, max_i FROM ak WHERE _mask = ?1 AND i > 10 ORDER BY k"}, NULL, 0,
     NULL, 2, false, NULL},
    {"open aggregate table over a SOURCE", K_OPEN, {"CREATE VIRTUAL TABLE temp.a USING colstore_agg('@/store.cst', k)"},
     "SELECT count(*) FROM a", 100, NULL, 0, false, NULL},
    {"scan after another connection's DELETE", K_SCAN,
     {"SELECT count(*), sum(i), max(s) FROM t WHERE rowid BETWEEN 100 AND 9000 AND k < 60"}, NULL, 0, NULL, 0, false,
     "CREATE VIRTUAL TABLE temp.t2 USING colstore('@/store.cst');"
     "DELETE FROM temp.t2 WHERE k % 3 = 0 OR rowid BETWEEN 5000 AND 5100"},
    {"aggregate after another connection's DELETE", K_SCAN, {"SELECT k, count, sum_i, max_s FROM ak WHERE f > 100 ORDER BY k"},
     NULL, 0, NULL, 0, false,
     "CREATE VIRTUAL TABLE temp.t2 USING colstore('@/store.cst');"
     "DELETE FROM temp.t2 WHERE k % 3 = 0 OR rowid BETWEEN 5000 AND 5100"},
    /* cache=auto starts its copy in the background at a table's second
    ** statement (the gap rule is 0 ms in this program) and the third waits
    ** for it (COLSTORE_CACHE_AUTO_WAIT), so the copy's allocations are
    ** counted in every run: one that fails leaves the table reading the
    ** mapping, with the clean run's rows, and fails no statement */
    {"scan cache=auto, copy fails", K_SCAN,
     {"CREATE VIRTUAL TABLE au USING colstore('@/store.cst', cache=auto)", "SELECT count(*) FROM au",
      "SELECT i, f, s, b FROM au WHERE k < 50", "SELECT count(*), sum(f) FROM au"}, NULL, 0, NULL, 0, false, NULL},
    {"scan info and verify", K_SCAN, {"SELECT colstore_info('t'), colstore_verify('t'), colstore_info('d')"}, NULL, 0, NULL, 0, false, NULL},
    /* writes */
    {"insert autocommit", K_WRITE, {INS_A ", (10002, 2.5, '', x'', 3)"}, NULL, 0, NULL, 0, false, NULL},
    {"insert select", K_WRITE, {"INSERT INTO t SELECT i + 10000, f, s, b, k FROM n WHERE i < 3000"}, NULL, 0, NULL, 0, false, NULL},
    {"commit explicit", K_WRITE, {"BEGIN", INS_A, INS_B, INS_C, "COMMIT"}, NULL, 0, NULL, 0, false, NULL},
    {"commit after savepoint rollback", K_WRITE,
     {"BEGIN", INS_A, "SAVEPOINT s1", INS_B, "ROLLBACK TO s1", "RELEASE s1", INS_C, "COMMIT"}, NULL, 0, NULL, 0, false, NULL},
    {"delete autocommit", K_WRITE, {"DELETE FROM t WHERE k = 7 OR rowid < 10"}, NULL, 0, NULL, 0, false, NULL},
    {"delete, read own deletions, savepoint, insert", K_WRITE,
     {"BEGIN", "DELETE FROM t WHERE k < 20", "SELECT count(*), sum(i) FROM t WHERE rowid IN (1, 2, 3, 500, 9999)",
      "SAVEPOINT s1", "DELETE FROM t WHERE i > 9000", "ROLLBACK TO s1", INS_A,
      "SELECT max(i), count(*) FROM t WHERE f > 10", "COMMIT"},
     NULL, 0, NULL, 0, false, NULL},
    {"update, read own updates, savepoint, delete", K_WRITE,
     {"BEGIN", "UPDATE t SET f = f + 1, s = 'u' || i WHERE k = 1 AND rowid % 4 = 0", "SELECT count(*), sum(f), max(s) FROM t WHERE f > 100",
      "UPDATE t SET f = f * 2, b = x'' WHERE rowid IN (1, 2, 3, 9999)", "SAVEPOINT s1", "UPDATE t SET k = 99 WHERE i > 9990",
      "SELECT count(*) FROM t WHERE k = 99", "ROLLBACK TO s1", "DELETE FROM t WHERE k = 3",
      "SELECT count(*), sum(f), min(b), max(s) FROM t WHERE k IN (1, 3, 99)", "COMMIT"},
     NULL, 0, NULL, 0, false, NULL},
    {"insert, read own rows, update and delete them", K_WRITE,
     {"BEGIN", INS_A, INS_B, "SELECT count(*), sum(i), max(s) FROM t WHERE i >= 10000 OR rowid < 3",
      "UPDATE t SET s = 'u', f = 9.5 WHERE i = 10001", "DELETE FROM t WHERE i = 10000",
      "SELECT count(*), max(s), sum(f) FROM t WHERE rowid >= 9990", "COMMIT"},
     NULL, 0, NULL, 0, false, NULL},
    {"insert into recovered store", K_WRITE,
     {"CREATE VIRTUAL TABLE r USING colstore('@/many_recovered.cst')", "INSERT INTO r SELECT * FROM r WHERE rowid % 50 = 7"},
     NULL, 0, "many_recovered.cst", 0, false, NULL},
    /* colstore_create */
    {"create declared", K_CREATE, {"SELECT colstore_create('@/new.cst', 'SELECT * FROM n WHERE i < 3000')"}, NULL, 0, "new.cst", 0, false, NULL},
    {"create inferred", K_CREATE,
     {"SELECT colstore_create('@/new.cst', 'SELECT i + 0 AS a, CASE WHEN i % 3 = 0 THEN f ELSE i END AS b, "
      "CASE WHEN i % 5 = 0 THEN i ELSE s END AS c FROM n WHERE i < 2000')"},
     NULL, 0, "new.cst", 0, false, NULL},
    {"create from colstore", K_CREATE, {"SELECT colstore_create('@/new.cst', 'SELECT * FROM t WHERE k < 5')"}, NULL, 0, "new.cst", 0, false, NULL},
    /* colstore_import: the store is compared with the clean run's; the JSON
    ** is not (its ms differ, and taking it apart would allocate after the
    ** commit, where a failure is the query's, not the import's) */
    {"import inferred, quoted, rejects skipped", K_CREATE,
     {"SELECT colstore_import('@/new.cst', '@/imp.csv', 'on_error=skip', 'progress=off') IS NOT NULL"}, NULL, 0, "new.cst", 0, false, NULL},
    {"import columns=, NOT NULL", K_CREATE,
     {"SELECT colstore_import('@/new.cst', '@/imp.csv', 'columns=a INT64 NOT NULL, b FLOAT64, c TEXT, d TEXT', "
      "'on_error=skip', 'progress=off') IS NOT NULL"}, NULL, 0, "new.cst", 0, false, NULL},
    {"import a late misfit (sample, then two passes)", K_CREATE,
     {"SELECT colstore_import('@/new.cst', '@/late.csv', 'progress=off') IS NOT NULL"}, NULL, 0, "new.cst", 0, false, NULL},
    {"import parquet, 3 row groups, threads=2", K_CREATE,
     {"SELECT colstore_import('@/new.cst', '@/imp.parquet', 'threads=2', 'progress=off') IS NOT NULL"}, NULL, 0, "new.cst", 0, false, NULL},
    {"import arrow stream, zstd, columns=", K_CREATE,
     {"SELECT colstore_import('@/new.cst', '@/imp.arrows', 'columns=s,i,b', 'progress=off') IS NOT NULL"}, NULL, 0, "new.cst", 0, false, NULL},
    /* mode=append: one transaction on the store, the old file byte for
    ** byte when it fails */
    {"import append, rejects skipped", K_WRITE,
     {"SELECT colstore_import('@/store.cst', '@/app.csv', 'mode=append', 'on_error=skip', 'progress=off') IS NOT NULL"},
     NULL, 0, "store.cst", 0, false, NULL},
    /* colstore_export: the file is compared byte for byte with the clean
    ** run's (the JSON is made after the link, where a failure leaves the
    ** whole file: allowed, counted) */
    {"export table with deletions to parquet", K_EXPORT,
     {"DELETE FROM t WHERE k = 7", "SELECT colstore_export('t', '@/out.parquet', 'row_group_rows=3000', 'compression=zstd', 'progress=off') IS NOT NULL"},
     NULL, 0, "out.parquet", 0, false, NULL},
    {"export query to parquet", K_EXPORT,
     {"SELECT colstore_export('SELECT i, s, i * 0.5 AS h FROM n WHERE i < 3000', '@/out.parquet', 'progress=off') IS NOT NULL"},
     NULL, 0, "out.parquet", 0, false, NULL},
    {"export store to csv", K_EXPORT, {"SELECT colstore_export('@/store.cst', '@/out.csv', 'progress=off') IS NOT NULL"},
     NULL, 0, "out.csv", 0, false, NULL},
    /* a store's chunks hashed as the Arrow writer's bytes pass the sink */
    {"export store to arrow", K_EXPORT, {"SELECT colstore_export('@/store.cst', '@/out.arrow', 'progress=off') IS NOT NULL"},
     NULL, 0, "out.arrow", 0, false, NULL},
    /* colstore_compact */
    {"compact small records", K_COMPACT, {"SELECT colstore_compact('@/store.cst')"}, NULL, 0, "store.cst", 0, false, NULL},
    {"compact deleted and updated", K_COMPACT, {"SELECT colstore_compact('@/changed.cst')"}, NULL, 0, "changed.cst", 0, false, NULL},
    {"compact renumber", K_COMPACT, {"SELECT colstore_compact('@/changed.cst', 'renumber')"}, NULL, 0, "changed.cst", 0, false, NULL},
};
/* clang-format on */

/* The scenario's SQL with @ replaced by the work directory. */
static char *sql_for(const char *tmpl) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  for (const char *p = tmpl; *p; p++) {
    if (*p == '@')
      sqlite3_str_appendall(s, g_work);
    else
      sqlite3_str_appendchar(s, 1, *p);
  }
  char *z = sqlite3_str_finish(s);
  if (!z) die("out of memory");
  return z;
}

static uint8_t g_rows_blob[8 * 64];
static uint8_t g_mask_blob[N_ROWS];

static void blobs_make(void) {
  uint64_t x = 12345;
  for (int i = 0; i < 64; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t r = (int64_t)((x >> 33) % (2 * N_ROWS)) - N_ROWS; /* negatives count from the end */
    memcpy(g_rows_blob + 8 * i, &r, 8);
  }
  for (int i = 0; i < N_ROWS; i++) g_mask_blob[i] = (uint8_t)((i * 7) % 3 == 0);
}

/* The connection a scenario starts from, made with nothing failing. */
static char g_native[1100]; /* a database file holding table n, attached */

static sqlite3 *scenario_db(const scenario *sc) {
  sqlite3 *db = db_open();
  char *att = sqlite3_mprintf("ATTACH %Q AS nat", g_native);
  exec_ok(db, att);
  sqlite3_free(att);
  /* the smallest batches, so a filtered scan takes several, pipelined */
  exec_ok(db, "SELECT colstore_config('batch_bytes', 65536)");
  if (sc->kind != K_OPEN) {
    char *sql = sql_for(
        "CREATE VIRTUAL TABLE t USING colstore('@/store.cst');"
        "CREATE VIRTUAL TABLE d USING colstore('@/ds');"
        "CREATE VIRTUAL TABLE m USING colstore('@/store.cst', cache=memory);"
        "CREATE VIRTUAL TABLE temp.at USING colstore_agg(t);"
        "CREATE VIRTUAL TABLE temp.ak USING colstore_agg(t, k);"
        "CREATE VIRTUAL TABLE temp.as2 USING colstore_agg(t, s, k);"
        "CREATE VIRTUAL TABLE temp.as1 USING colstore_agg(t, s);"
        "CREATE VIRTUAL TABLE temp.ab USING colstore_agg(t, b)");
    exec_ok(db, sql);
    sqlite3_free(sql);
  }
  return db;
}

/* The script, armed: stops at the first failure and rolls back what it
** began (again with nothing failing if that rollback fails too). */
static void scenario_body(const scenario *sc, sqlite3 *db, char *const *sql, outcome *o) {
  for (int i = 0; i < SCENARIO_MAX_SQL && sql[i]; i++) {
    const void *blob = sc->blob == 1 ? g_rows_blob : sc->blob == 2 ? g_mask_blob : NULL;
    int bytes = sc->blob == 1 ? (int)sizeof g_rows_blob : (int)sizeof g_mask_blob;
    if (stmt_run(db, sql[i], blob, bytes, o) != SQLITE_OK) break;
  }
  if (!sqlite3_get_autocommit(db) && sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK) {
    disarm();
    if (sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
      fail("ROLLBACK failed: %s", sqlite3_errmsg(db));
  }
}

/* What the clean run established, for the failing runs to be held to. */
typedef struct expect {
  long n_allocs;
  outcome clean;     /* the clean run's result */
  uint64_t old_hash; /* the store before */
  uint64_t new_hash; /* K_WRITE: after the whole transaction; K_CREATE: the new store */
  uint64_t new_rows;
  uint64_t n_rows_opened; /* K_OPEN: the rows the clean run's table shows */
} expect;

typedef struct tally {
  long runs, ok, nomem, error;
  char errors[4][160];   /* the distinct colstore errors seen, first four */
  long failed_committed; /* K_WRITE: a failure reported after the commit took effect */
  long background;       /* transient runs whose one failure hit a background copy */
} tally;

/* One run with the k-th allocation failing (k = 0: none).  Returns the
** allocations counted. */
static long run_once(const scenario *sc, long k, bool sticky, const expect *ex, expect *out_clean, tally *t) {
  snprintf(g_where, sizeof g_where, "scenario '%s', k = %ld%s", sc->name, k,
           k ? (sticky ? " (sticky)" : " (transient)") : " (clean)");
  if (g_verbose) fprintf(stderr, "run %s\n", g_where);
  dir_empty(g_work);
  dir_copy(g_pristine, g_work);
  sqlite3_int64 sqlite_before = sqlite3_memory_used();
  long live_before = cs_mem_live();
  sqlite3 *db = scenario_db(sc);
  if (sc->pre) {
    sqlite3 *db2 = scenario_db(&(scenario){.kind = K_OPEN});
    char *pre = sql_for(sc->pre);
    exec_ok(db2, pre);
    sqlite3_free(pre);
    sqlite3_close(db2);
  }
  char *sql[SCENARIO_MAX_SQL + 1] = {0}; /* made before arming: the harness's own allocations never fail */
  for (int i = 0; i < SCENARIO_MAX_SQL && sc->sql[i]; i++) sql[i] = sql_for(sc->sql[i]);
  outcome o = {0};
  o.hash = 0xcbf29ce484222325ULL;
  if (k > 0)
    cs_mem_fail_after(k, sticky);
  else
    disarm();
  scenario_body(sc, db, sql, &o);
  long n = cs_mem_count(), background = cs_mem_failed_background();
  disarm();
  for (int i = 0; i < SCENARIO_MAX_SQL; i++) sqlite3_free(sql[i]);
  t->runs++;
  if (o.rc == SQLITE_OK)
    t->ok++;
  else if ((o.rc & 0xff) == SQLITE_NOMEM)
    t->nomem++;
  else {
    t->error++;
    for (int i = 0; i < 4; i++) {
      if (strncmp(t->errors[i], o.msg, sizeof t->errors[i] - 1) == 0) break;
      if (!t->errors[i][0]) {
        snprintf(t->errors[i], sizeof t->errors[i], "%.150s", o.msg);
        break;
      }
    }
  }
  if (g_verbose)
    fprintf(stderr, "  -> rc %d %s after %ld allocations, %llu rows, hash %016llx\n", o.rc, o.rc ? o.msg : "",
            n, (unsigned long long)o.rows, (unsigned long long)o.hash);
  if (!outcome_acceptable(&o) ||
      ((o.rc & 0xff) != SQLITE_NOMEM && o.rc && outcome_generic(&o) && o.rc != ex->clean.rc))
    fail("ended with code %d and a message that is not colstore's: %s", o.rc, o.msg);
  if (k == 0 && (o.rc != SQLITE_OK) != sc->error)
    die("%s: the clean run %s: %s", sc->name, sc->error ? "did not fail" : "failed", o.msg);
  /* An injected failure surfaces as out of memory, or not at all: any
  ** other error is a misdiagnosis (an OOM reported as "corrupt", "unknown
  ** option", ...), unless it is the error the clean run gives too. */
  if (k > 0 && o.rc != SQLITE_OK && (o.rc & 0xff) != SQLITE_NOMEM &&
      (ex->clean.rc == SQLITE_OK || o.rc != ex->clean.rc ||
       (strcmp(o.msg, ex->clean.msg) != 0 && !outcome_generic(&o))))
    fail("out of memory reported as another error: code %d: %s", o.rc, o.msg);
  if (k > 0 && sc->error && o.rc == SQLITE_OK) fail("a damaged store opened when an allocation failed");
  /* A copy nobody waits on failing is no statement's failure. */
  if (k > 0 && !sticky && background > 0) {
    t->background++;
    if (o.rc != SQLITE_OK) fail("an allocation of the background copy failed a statement: %s", o.msg);
  }

  /* The result of an OK run is the clean run's. */
  if (k > 0 && o.rc == SQLITE_OK && (sc->kind == K_SCAN || sc->kind == K_CREATE) &&
      (o.hash != ex->clean.hash || o.rows != ex->clean.rows))
    fail("returned OK with different rows (%llu rows, hash %016llx; clean: %llu rows, hash %016llx)",
         (unsigned long long)o.rows, (unsigned long long)o.hash, (unsigned long long)ex->clean.rows,
         (unsigned long long)ex->clean.hash);
  if (sc->kind == K_OPEN && o.rc == SQLITE_OK) {
    outcome c = {0};
    if (stmt_run(db, sc->check, NULL, 0, &c) != SQLITE_OK)
      fail("the table opened but cannot be read: %s", c.msg);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, sc->check, -1, &st, NULL);
    uint64_t want = sc->check_rows ? sc->check_rows : (k ? ex->n_rows_opened : 0), got = UINT64_MAX;
    if (st && sqlite3_step(st) == SQLITE_ROW) got = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (k == 0 && out_clean) out_clean->n_rows_opened = got;
    if ((k || sc->check_rows) && got != want)
      fail("the table opened with %lld rows, not %llu", (long long)got, (unsigned long long)want);
  }
  db_close(db);

  /* Nothing left allocated by the run (the warm-up run may leave the
  ** worker pool's thread and SQLite's first-use state). */
  if (g_warmup) sqlite_before = sqlite3_memory_used(), live_before = cs_mem_live();
  if (sqlite3_memory_used() != sqlite_before)
    fail(
        "SQLite memory in use went from %lld to %lld bytes: something allocated with sqlite3_malloc was not "
        "freed",
        (long long)sqlite_before, (long long)sqlite3_memory_used());
  if (cs_mem_live() != live_before)
    fail("the core holds %ld allocations more than before the run", cs_mem_live() - live_before);
  char why[2300];
  if (temp_left(g_work, why, sizeof why)) fail("a temporary store was left behind: %s", why);

  /* The stores as they must be. */
  if (sc->kind == K_OPEN || sc->kind == K_SCAN) {
    if (!(k == 0 && sc->pre) && !tree_same(sc->pre ? g_expect : g_pristine, g_work, why, sizeof why))
      fail("a read changed the files: %s", why);
  } else if (sc->kind == K_WRITE) {
    uint64_t h, rows;
    char verify[600];
    char target[2048];
    path_join(target, sizeof target, g_work, sc->target ? sc->target : "store.cst");
    if (!store_check(target, &h, &rows, verify, sizeof verify))
      fail("the store cannot be read afterwards: %s", verify);
    else if (strcmp(verify, "ok") != 0)
      fail("colstore_verify says: %s", verify);
    else if (k == 0)
      out_clean->new_hash = h, out_clean->new_rows = rows;
    else if (h != ex->old_hash && h != ex->new_hash)
      fail("committed data is neither the old state nor the old state plus the transaction (%llu rows)",
           (unsigned long long)rows);
    else if (o.rc == SQLITE_OK && h != ex->new_hash)
      fail("the script succeeded but the transaction is not in the store");
    else if (o.rc != SQLITE_OK && h == ex->new_hash)
      t->failed_committed++; /* reported failed, yet committed whole: allowed, counted */
    if (k > 0 && h == ex->old_hash) {
      /* An aborted append restores the file byte for byte (cs_writer.c). */
      char before[2048];
      path_join(before, sizeof before, g_pristine, sc->target ? sc->target : "store.cst");
      if (!files_equal(before, target))
        fail("a failed write left the store's file changed (its rows are intact)");
    }
  } else if (sc->kind == K_COMPACT) {
    uint64_t h, rows;
    char verify[600], target[2048], before[2048];
    path_join(target, sizeof target, g_work, sc->target);
    path_join(before, sizeof before, g_pristine, sc->target);
    if (!store_check(target, &h, &rows, verify, sizeof verify))
      fail("the store cannot be read afterwards: %s", verify);
    else if (strcmp(verify, "ok") != 0)
      fail("colstore_verify says: %s", verify);
    else if (h != ex->old_hash)
      fail("compaction changed the rows (%llu rows)", (unsigned long long)rows);
    /* Failed before the rename: the old file, byte for byte.  After it
    ** (the JSON result could not be made), the new file, whole, with the
    ** same rows (checked above): allowed, counted. */
    if (k > 0 && o.rc != SQLITE_OK && !files_equal(before, target)) t->failed_committed++;
  } else if (sc->kind == K_CREATE) {
    char target[2048];
    path_join(target, sizeof target, g_work, sc->target);
    if (o.rc != SQLITE_OK && file_exists(target)) {
      /* Only a failure after the rename may leave the file: then whole. */
      uint64_t h, rows;
      char verify[600];
      if (!store_check(target, &h, &rows, verify, sizeof verify) || strcmp(verify, "ok") != 0 ||
          h != ex->new_hash)
        fail("colstore_create failed (%s) and left a partial store", o.msg);
      else
        fail("colstore_create failed (%s) after making the store", o.msg);
    } else if (o.rc == SQLITE_OK) {
      uint64_t h, rows;
      char verify[600];
      if (!store_check(target, &h, &rows, verify, sizeof verify))
        fail("the new store cannot be read: %s", verify);
      else if (strcmp(verify, "ok") != 0)
        fail("colstore_verify of the new store says: %s", verify);
      else if (k == 0)
        out_clean->new_hash = h, out_clean->new_rows = rows;
      else if (h != ex->new_hash)
        fail("the new store differs from the clean run's");
    }
    char source[2048];
    path_join(source, sizeof source, g_work, "store.cst");
    char psource[2048];
    path_join(psource, sizeof psource, g_pristine, "store.cst");
    if (!files_equal(source, psource)) fail("colstore_create changed the store it read");
  } else if (sc->kind == K_EXPORT) {
    char target[2048];
    path_join(target, sizeof target, g_work, sc->target);
    uint64_t h = file_hash(target);
    if (k == 0)
      out_clean->new_hash = h;
    else if (file_exists(target) && h != ex->new_hash)
      fail("colstore_export left a file that differs from the clean run's (%s)", o.msg);
    else if (o.rc != SQLITE_OK && file_exists(target))
      t->failed_committed++; /* the file whole; the JSON after it failed */
  }
  if (k == 0) out_clean->clean = o;
  return n;
}

static void scenario_run(const scenario *sc, long *total_runs) {
  expect ex = {0};
  tally t = {0};
  if (sc->kind == K_WRITE || sc->kind == K_COMPACT) {
    char p[2048], verify[600];
    uint64_t rows;
    path_join(p, sizeof p, g_pristine, sc->target ? sc->target : "store.cst");
    if (!store_check(p, &ex.old_hash, &rows, verify, sizeof verify)) die("%s: %s", p, verify);
  }
  /* Twice clean: the first warms what is made once per process (the worker
  ** pool, SQLite's first-use state), the second is the reference. */
  g_warmup = true;
  run_once(sc, 0, false, &ex, &ex, &t);
  g_warmup = false;
  ex.n_allocs = run_once(sc, 0, false, &ex, &ex, &t);
  if (sc->pre) {
    dir_empty(g_expect);
    dir_copy(g_work, g_expect);
  }
  long failures_before = g_failures;
  for (int sticky = 0; sticky < 2; sticky++)
    for (long k = 1; k <= ex.n_allocs + K_MARGIN; k++) run_once(sc, k, sticky, &ex, NULL, &t);
  printf("%-34s N = %5ld  runs = %5ld  ok = %5ld  nomem = %5ld  colstore error = %4ld", sc->name, ex.n_allocs,
         t.runs, t.ok, t.nomem, t.error);
  if (t.failed_committed) printf("  failed-but-committed = %ld", t.failed_committed);
  if (t.background) printf("  background copy failed = %ld", t.background);
  /* A scenario with a cache=auto table makes a copy in the background:
  ** some failing runs must have hit it, or the above proved nothing. */
  if (strstr(sc->sql[0], "cache=auto") && t.background == 0) fail("no failing run hit the background copy");
  printf("  %s\n", g_failures == failures_before ? "pass" : "FAIL");
  for (int i = 0; i < 4 && t.errors[i][0]; i++) printf("    error seen: %s\n", t.errors[i]);
  fflush(stdout);
  *total_runs += t.runs;
#if defined(__SANITIZE_ADDRESS__)
  /* A leak is pinned to its scenario (the exit-time check sees them all). */
  extern int __lsan_do_recoverable_leak_check(void);
  if (__lsan_do_recoverable_leak_check()) fail("LeakSanitizer found leaks after this scenario");
#endif
}

/* -------------------------------------------------------- core scenarios */

/* Allocation sites SQL does not reach, swept through the core's API:
** each returns CS_OK or CS_ENOMEM, hashing what it computed into *hash. */
typedef cs_rc (*core_fn)(uint64_t *hash);

static cs_rc core_dataset_reopen(uint64_t *hash) {
  /* Opened from a list of paths, so a reopen copies the list. */
  char a[1200], b[1200];
  path_join(a, sizeof a, g_pristine, "ds/a.cst");
  path_join(b, sizeof b, g_pristine, "ds/b.cst");
  const char *paths[2] = {a, b};
  cs_store *s = NULL, *s2 = NULL;
  cs_err err;
  cs_rc rc = cs_store_open_dataset(paths, 2, CS_VERIFY_HEADER, &s, &err);
  if (rc == CS_OK) rc = cs_store_reopen(s, CS_VERIFY_HEADER, &s2, &err);
  if (rc == CS_OK) {
    uint64_t n = cs_store_rows(s2);
    *hash = fnv(*hash, &n, sizeof n);
    *hash = fnv(*hash, &(bool){s2 == s}, 1);
  }
  cs_store_close(s2);
  cs_store_close(s);
  return rc;
}

static cs_rc core_gather_and_preds(uint64_t *hash) {
  char p[1200];
  path_join(p, sizeof p, g_pristine, "store.cst");
  cs_store *s = NULL;
  cs_err err;
  cs_rc rc = cs_store_open(p, CS_VERIFY_HEADER, &s, &err);
  if (rc != CS_OK) return rc;
  /* cs_gather_rows with more rows than records builds its base table
  ** (a failure falls back to reading the chunks: same output). */
  static uint64_t rows[1000];
  static int64_t out[1000];
  for (int i = 0; i < 1000; i++) rows[i] = (uint64_t)(i * 7919) % N_ROWS;
  cs_gather_rows(s, 0, rows, 1000, out, NULL);
  *hash = fnv(*hash, out, sizeof out);
  /* cs_pred_eval over more predicates than its stack holds (a failure
  ** evaluates them in stack-sized groups), one an IN list long enough to
  ** be sorted (a failure tests it member by member). */
  static cs_value members[24];
  static cs_pred preds[20];
  static uint8_t mask[N_ROWS];
  for (int i = 0; i < 24; i++) members[i] = (cs_value){.kind = CS_VAL_INT, .i = i * 3};
  for (int i = 0; i < 19; i++)
    preds[i] = (cs_pred){.col = 4, .op = CS_CMP_GE, .a = {.kind = CS_VAL_INT, .i = i}};
  preds[19] = (cs_pred){.col = 4, .op = CS_CMP_IN, .set = members, .n_set = 24};
  cs_pred_eval(s, preds, 20, 0, N_ROWS, mask, NULL);
  *hash = fnv(*hash, mask, sizeof mask);
  cs_store_close(s);
  return CS_OK;
}

/* More workers than the pool keeps (8), so fresh ones are allocated in
** every run, not only in the first; a worker that cannot be made is NULL
** (the cursor then selects on its own thread), and one is used. */
static void worker_job(void *arg) { *(int *)arg += 1; }

static cs_rc core_workers(uint64_t *hash) {
  (void)hash; /* how many could be made is not compared */
  cs_worker *w[12];
  int done = 0;
  for (int i = 0; i < 12; i++) w[i] = cs_worker_acquire();
  for (int i = 0; i < 12; i++)
    if (w[i] && !cs_worker_submit(w[i], worker_job, &done)) worker_job(&done);
  for (int i = 0; i < 12; i++) cs_worker_release(w[i]); /* waits for the job */
  return CS_OK;
}

static cs_rc core_calibrate(uint64_t *hash) {
  (void)hash; /* timings: nothing to compare but the code */
  /* The median of more than 64 samples copies them; without memory it is
  ** one sample (documented), so its value is not compared. */
  static double samples[100];
  for (int i = 0; i < 100; i++) samples[i] = (i * 37) % 100;
  (void)cs_calibrate_median(samples, 100);
  /* resident_rows: a cache-resident run repeats to 1M elements, so not tiny */
  cs_calibrate_options opt = {
      .rounds = 1, .dram_rows = 8192, .resident_rows = 1u << 17, .max_threads = 2, .scratch_dir = g_work};
  static cs_calibrate_report rep;
  cs_err err;
  /* The mask target alone reaches every allocation of cs_calibrate (its
  ** buffers, the positions, each sweep's copies) in a third of the time. */
  return cs_calibrate(CS_CALIB_MASK, &opt, &rep, &err);
}

/* threads=2 over chunks of 4 KiB: the parallel pass's buffers, chunk
** records and sinks (a file of 8 MiB chunks is too big to fail at every
** allocation).  A failure must leave no store. */
static cs_rc core_import_threads(uint64_t *hash) {
  char src[1200], dst[1200];
  path_join(src, sizeof src, g_pristine, "imp_big.csv");
  path_join(dst, sizeof dst, g_work, "threads.cst");
  cs_import_options opt = {.threads = 2, .chunk_bytes = 4096, .skip_errors = true};
  cs_import_result res;
  cs_err err;
  cs_rc rc = cs_import_text(dst, src, &opt, &res, &err);
  if (rc == CS_OK) {
    *hash = fnv(*hash, &res.rows, sizeof res.rows);
    *hash = fnv(*hash, &res.rejected, sizeof res.rejected);
    for (uint32_t i = 0; i < res.n_cols; i++) *hash = fnv(*hash, &res.cols[i].type, sizeof res.cols[i].type);
    /* (the store is not read here: that would allocate under the armed
    ** countdown; the SQL scenarios above read theirs) */
    if (!file_exists(dst)) fail("the import returned CS_OK and made no store");
    unlink(dst);
  } else if (file_exists(dst)) {
    fail("a failed import (%s) left %s", err.msg, dst);
  }
  cs_import_result_free(&res);
  return rc;
}

static void core_run(const char *name, core_fn fn, long *total_runs) {
  uint64_t clean_hash = 0;
  long n_allocs = 0, runs = 0, ok = 0, nomem = 0, failures_before = g_failures;
  for (int pass = 0; pass < 2; pass++) { /* the first warms the process */
    snprintf(g_where, sizeof g_where, "core scenario '%s', clean", name);
    disarm();
    clean_hash = 0xcbf29ce484222325ULL;
    if (fn(&clean_hash) != CS_OK) die("%s: the clean run failed", name);
    n_allocs = cs_mem_count();
  }
  for (int sticky = 0; sticky < 2; sticky++)
    for (long k = 1; k <= n_allocs + K_MARGIN; k++) {
      snprintf(g_where, sizeof g_where, "core scenario '%s', k = %ld (%s)", name, k,
               sticky ? "sticky" : "transient");
      long live_before = cs_mem_live();
      uint64_t h = 0xcbf29ce484222325ULL;
      cs_mem_fail_after(k, sticky);
      cs_rc rc = fn(&h);
      disarm();
      runs++;
      if (rc == CS_OK)
        ok++;
      else if (rc == CS_ENOMEM)
        nomem++;
      else
        fail("returned %s, not CS_OK or CS_ENOMEM", cs_rc_name(rc));
      if (rc == CS_OK && h != clean_hash) fail("returned CS_OK with a different result");
      if (cs_mem_live() != live_before)
        fail("the core holds %ld allocations more than before the run", cs_mem_live() - live_before);
      char why[2300];
      if (temp_left(g_work, why, sizeof why)) fail("a temporary file was left behind: %s", why);
      DIR *d = opendir(g_work);
      struct dirent *e;
      while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, "colstore-calibrate")) fail("calibration left %s behind", e->d_name);
      if (d) closedir(d);
    }
  printf("%-34s N = %5ld  runs = %5ld  ok = %5ld  CS_ENOMEM = %5ld  %s\n", name, n_allocs, runs, ok, nomem,
         g_failures == failures_before ? "pass" : "FAIL");
  fflush(stdout);
  *total_runs += runs;
}

/* ------------------------------------------------------------------ main */

static void golden_copy(const char *sub, const char *name, const char *as) {
  char from[2048], to[2048];
  snprintf(from, sizeof from, "%s/%s/%s", COLSTORE_TEST_DATA, sub, name);
  path_join(to, sizeof to, g_pristine, as);
  copy_file(from, to);
}

static void byte_flip(const char *path, long off) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  uint8_t b;
  if (fd < 0 || pread(fd, &b, 1, off) != 1) die("flip %s", path);
  b ^= 0xFF;
  if (pwrite(fd, &b, 1, off) != 1) die("flip %s", path);
  close(fd);
}

/* A store of 200 rows in records of 8, written by the core's writer. */
static void many_records_make(const char *path) {
  static const cs_column col = {"x", CS_TYPE_INT64, true};
  const cs_schema schema = {1, &col};
  cs_writer_options opt = {.record_rows = 8};
  cs_writer *w = NULL;
  cs_batch *b = NULL;
  cs_err err;
  if (cs_writer_create(path, &schema, &opt, &w, &err) != CS_OK || cs_batch_new(&schema, &b, &err) != CS_OK)
    die("%s", err.msg);
  for (int i = 0; i < 200; i++) {
    cs_rc rc = i % 9 == 4 ? cs_batch_put_null(b, 0, &err) : cs_batch_put_i64(b, 0, i * 3, &err);
    if (rc != CS_OK) die("%s", err.msg);
    cs_batch_end_row(b);
  }
  if (cs_writer_write(w, b, &err) != CS_OK || cs_writer_commit(w, &err) != CS_OK) die("%s", err.msg);
  cs_batch_free(b);
}

/* The importer's inputs: imp.csv, small, with every tokenizer path (quoted
** fields with delimiters, doubled quotes and newlines, CRLF, NULLs, a
** ragged line, UTF-8); imp_big.csv, the same lines repeated to several
** 4 KiB chunks; late.csv, past the 1 MiB sample, whose last line holds a
** text in an integer column (the speculative pass aborted, two passes). */
static void import_inputs_make(void) {
  static const char *const lines[] = {"1,2.5,plain,\"x, y\"\n",
                                      "2,,\"say \"\"hi\"\"\",\n",
                                      "3,1e5,\"two\nlines\",caf\xc3\xa9\r\n",
                                      "4,-0.125,,\"\"\n",
                                      "5,6,7\n",
                                      "6,123456789.123456789,tail,z\n"};
  static const struct {
    const char *name;
    int repeats;
  } files[] = {{"imp.csv", 5}, {"imp_big.csv", 300}};
  char p[1200];
  FILE *f;
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    path_join(p, sizeof p, g_pristine, files[k].name);
    if (!(f = fopen(p, "w"))) die("fopen %s", p);
    fputs("a,b,c,d\n", f);
    for (int r = 0; r < files[k].repeats; r++)
      for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) fputs(lines[i], f);
    fclose(f);
  }
  path_join(p, sizeof p, g_pristine, "late.csv");
  if (!(f = fopen(p, "w"))) die("fopen %s", p);
  fputs("id,x,note\n", f);
  char note[1001];
  memset(note, 'n', 1000);
  note[1000] = 0;
  for (int r = 0; r < 1100; r++) fprintf(f, "%d,%d.5,%s\n", r, r, note);
  fputs("late,1,z\n", f);
  fclose(f);
  /* app.csv: rows for store.cst's schema (i, f, s, b, k), a NULL in each
  ** nullable column, a quoted field, and one line past k's INT32 range
  ** that on_error=skip rejects. */
  path_join(p, sizeof p, g_pristine, "app.csv");
  if (!(f = fopen(p, "w"))) die("fopen %s", p);
  fputs("i,f,s,b,k\n", f);
  for (int r = 0; r < 300; r++)
    fprintf(f, "%d,%s,%s,%s,%d\n", 20000 + r, r % 5 ? "1.25" : "", r % 7 ? "\"a, b\"" : "",
            r % 3 ? "bytes" : "", r % 100);
  fputs("20300,1,s,b,4294967296\n", f);
  fclose(f);
}

static void fixtures_make(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(g_root, sizeof g_root, "%s/colstore-alloc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_root)) die("mkdtemp: %s", strerror(errno));
  path_join(g_pristine, sizeof g_pristine, g_root, "pristine");
  path_join(g_work, sizeof g_work, g_root, "work");
  path_join(g_expect, sizeof g_expect, g_root, "expect");
  mkdir(g_pristine, 0755);
  mkdir(g_work, 0755);
  mkdir(g_expect, 0755);
  char ds[1200];
  path_join(ds, sizeof ds, g_pristine, "ds");
  mkdir(ds, 0755);
  path_join(g_native, sizeof g_native, g_root, "native.db");
  sqlite3 *db = NULL;
  if (sqlite3_open(g_native, &db) != SQLITE_OK) die("open %s", g_native);
  exec_ok(db, NATIVE_SQL);
  char *sql = sqlite3_mprintf(
      "CREATE VIRTUAL TABLE t USING colstore('%q/store.cst', i INT64 NOT NULL, f FLOAT64, s TEXT, b BLOB, k "
      "INT32);"
      "INSERT INTO t SELECT * FROM n WHERE i < 4000;"
      "INSERT INTO t SELECT * FROM n WHERE i >= 4000 AND i < 8000;"
      "INSERT INTO t SELECT * FROM n WHERE i >= 8000;"
      "SELECT colstore_create('%q/ds/a.cst', 'SELECT * FROM n WHERE i < 3000');"
      "SELECT colstore_create('%q/ds/b.cst', 'SELECT * FROM n WHERE i >= 3000 AND i < 5000');"
      "CREATE VIRTUAL TABLE c USING colstore('%q/changed.cst', i INT64 NOT NULL, f FLOAT64, s TEXT, b BLOB, "
      "k INT32);"
      "INSERT INTO c SELECT * FROM n;"
      "DELETE FROM c WHERE k %% 3 = 0;"
      "UPDATE c SET s = 'u' || i, f = NULL WHERE i %% 7 = 1;"
      /* the Parquet and Arrow importers' inputs: colstore's own writers */
      "SELECT colstore_export('%q/store.cst', '%q/imp.parquet', 'row_group_rows=4000', 'progress=off');"
      "SELECT colstore_export('%q/store.cst', '%q/imp.arrows', 'compression=zstd', 'progress=off');",
      g_pristine, g_pristine, g_pristine, g_pristine, g_pristine, g_pristine, g_pristine, g_pristine);
  exec_ok(db, sql);
  sqlite3_free(sql);
  sqlite3_close(db);
  golden_copy("valid", "recovered_no_footer.cst", "recovered_no_footer.cst");
  golden_copy("valid", "recovered_damaged_footer.cst", "recovered_damaged_footer.cst");
  golden_copy("corrupt", "damaged_footer_and_record.cst", "damaged_footer_and_record.cst");
  golden_copy("corrupt", "truncated.cst", "truncated.cst");
  /* 25 records and both commit slots damaged: the forward scan grows its
  ** directory past its first 16 entries. */
  char many[1200];
  path_join(many, sizeof many, g_pristine, "many_recovered.cst");
  many_records_make(many);
  import_inputs_make();
  byte_flip(many, CS_SLOT0_OFFSET + 8);
  byte_flip(many, CS_SLOT1_OFFSET + 8);
}

static void fixtures_remove(void) {
  dir_empty(g_root);
  rmdir(g_root);
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  g_verbose = getenv("ALLOC_FAIL_VERBOSE") && *getenv("ALLOC_FAIL_VERBOSE") == '1';
  snprintf(g_where, sizeof g_where, "setup");
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_set_death_callback(crash_report);
#else
  signal(SIGSEGV, on_signal);
  signal(SIGBUS, on_signal);
  signal(SIGFPE, on_signal);
#endif
  signal(SIGABRT, on_signal);
  allocator_install();
  setenv("COLSTORE_CACHE_AUTO_GAP_MS", "0", 1); /* cache=auto copies at a table's second statement */
  setenv("COLSTORE_CACHE_AUTO_WAIT", "1", 1);   /* ... and the next one waits for the copy */
  blobs_make();
  fixtures_make();
  uint64_t old_hash, old_rows;
  char verify[600];
  char pstore[1200];
  path_join(pstore, sizeof pstore, g_pristine, "store.cst");
  if (!store_check(pstore, &old_hash, &old_rows, verify, sizeof verify) || strcmp(verify, "ok") != 0 ||
      old_rows != N_ROWS)
    die("the test store is not right: %s, %llu rows", verify, (unsigned long long)old_rows);
  path_join(pstore, sizeof pstore, g_pristine, "many_recovered.cst");
  if (!store_check(pstore, &old_hash, &old_rows, verify, sizeof verify) || old_rows != 200 ||
      strcmp(verify, "ok") != 0)
    die("many_recovered.cst is not right: %s, %llu rows", verify, (unsigned long long)old_rows);
  long total = 0;
  int n_run = 0;
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
    if (only && !strstr(scenarios[i].name, only)) continue;
    scenario_run(&scenarios[i], &total);
    n_run++;
  }
  static const struct {
    const char *name;
    core_fn fn;
  } cores[] = {
      {"core: dataset from paths, reopen", core_dataset_reopen},
      {"core: gather rows, 20 predicates", core_gather_and_preds},
      {"core: worker pool", core_workers},
      {"core: calibrate (small)", core_calibrate},
      {"core: import, threads=2, small chunks", core_import_threads},
  };
  dir_empty(g_work);
  for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
    if (only && !strstr(cores[i].name, only)) continue;
    core_run(cores[i].name, cores[i].fn, &total);
    n_run++;
  }
  snprintf(g_where, sizeof g_where, "teardown");
  fixtures_remove();
  printf("%d scenarios, %ld runs, %ld failures\n", n_run, total, g_failures);
  return g_failures ? 1 : 0;
}
