/*
** colstore_progress.c - progress and clean interruption for the long
** functions (colstore_create, colstore_import, colstore_compact,
** colstore_calibrate; docs/sql.md, "Progress and interruption").
**
** Two jobs.  The first is a line on stderr, `progress=on` (or `auto`, the
** default, when stderr is a terminal), rewritten in place with CR: what
** the call knows of bytes, rows, rate and time left.  It is printed at most
** ten times a second, however often the work reports, so a fast loop pays
** a clock read per report and nothing more; the last report is always
** printed and ends the line.  A polite guest prints nothing unless asked,
** and `auto` asks only where a person is watching.
**
** The second is stopping, which SQLite does not make easy from inside a
** function.  sqlite3_interrupt (the shell's Ctrl-C) and a progress handler
** returning nonzero both act on the VDBE, and a function runs inside one
** VDBE instruction.  sqlite3_is_interrupted, which would let a function
** ask, only exists from SQLite 3.41 (Debian 12 ships 3.40).  What works on
** every version is a statement of our own: a function may run statements
** on its connection (colstore_create runs the user's query that way), and
** a statement stepped while the connection is interrupted returns
** SQLITE_INTERRUPT at once; stepping it also runs the VDBE's
** progress-handler check, so the user's handler is called while the work
** runs, and its nonzero return makes the step return SQLITE_INTERRUPT too.
** So every tick steps a small prepared probe, a recursive count of
** PROBE_STEPS rows (a few hundred VDBE instructions, a few microseconds),
** which calls a handler registered with N up to a few hundred at least
** once a tick.  Where sqlite3_is_interrupted exists it is asked first.
** The callers tick once per unit of work big enough to make that cost
** invisible (an import block, a compacted record, a calibration round, a
** record of colstore_create's rows) and abort their writer when told to
** stop: no partial store, or the store as it was.
*/
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colstore_progress.h"

#define PROBE_STEPS 100
#define PRINT_EVERY_NS 100000000u /* ten lines a second at most */

static uint64_t progress_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool csx_progress_option(const char *z, csx_progress_mode *out, char **pzErr) {
  *pzErr = NULL;
  if (!z || sqlite3_strnicmp(z, "progress=", 9) != 0) return false;
  const char *v = z + 9;
  if (sqlite3_stricmp(v, "on") == 0)
    *out = CSX_PROGRESS_ON;
  else if (sqlite3_stricmp(v, "off") == 0)
    *out = CSX_PROGRESS_OFF;
  else if (sqlite3_stricmp(v, "auto") == 0)
    *out = CSX_PROGRESS_AUTO;
  else
    *pzErr = sqlite3_mprintf(
        "colstore: progress=%s: progress is auto (a line on stderr when it is a terminal), on or off", v);
  return true;
}

int csx_progress_arg(sqlite3_context *ctx, int *pArgc, sqlite3_value **argv, int first,
                     csx_progress_mode *out) {
  int last = *pArgc - 1;
  if (last < first || sqlite3_value_type(argv[last]) != SQLITE_TEXT) return SQLITE_OK;
  char *zErr;
  if (!csx_progress_option((const char *)sqlite3_value_text(argv[last]), out, &zErr)) return SQLITE_OK;
  if (zErr) {
    sqlite3_result_error(ctx, zErr, -1);
    sqlite3_free(zErr);
    return SQLITE_ERROR;
  }
  *pArgc = last;
  return SQLITE_OK;
}

int csx_progress_begin(csx_progress *p, sqlite3 *db, const char *zName, csx_progress_mode mode) {
  static const char probe_sql[] =
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT count(*) FROM n";
  _Static_assert(PROBE_STEPS == 100, "probe_sql counts PROBE_STEPS rows");
  memset(p, 0, sizeof *p);
  p->db = db;
  p->zName = zName;
  p->show = mode == CSX_PROGRESS_ON || (mode == CSX_PROGRESS_AUTO && isatty(2));
  p->started_ns = progress_now_ns();
  return sqlite3_prepare_v2(db, probe_sql, -1, &p->probe, NULL);
}

static void progress_print(csx_progress *p, const csx_progress_report *r, uint64_t now) {
  double secs = (double)(now - p->started_ns) / 1e9;
  char line[256];
  size_t n = 0;
#define ADD(...)                                                                     \
  do {                                                                               \
    int k_ = snprintf(line + n, sizeof line - n, __VA_ARGS__);                       \
    if (k_ > 0) n = (size_t)k_ < sizeof line - n ? n + (size_t)k_ : sizeof line - 1; \
  } while (0)
  ADD("\r%s: ", p->zName);
  if (r->phase) ADD("%s  ", r->phase);
  if (r->bytes_total)
    ADD("%.1f of %.1f MB  ", (double)r->bytes / 1e6, (double)r->bytes_total / 1e6);
  else if (r->bytes)
    ADD("%.1f MB  ", (double)r->bytes / 1e6);
  if (r->has_rows) ADD("%llu rows  ", (unsigned long long)r->rows);
  if (r->bytes || r->bytes_total)
    ADD("%.1f MB/s  ", secs > 0 ? (double)r->bytes / 1e6 / secs : 0.0);
  else if (r->has_rows)
    ADD("%.0f rows/s  ", secs > 0 ? (double)r->rows / secs : 0.0);
  if (r->finished)
    ADD("0s left   ");
  else if (r->total > 0 && r->done > 0)
    ADD("%.0fs left   ", (r->total - r->done) / (r->done / secs));
  else if (r->total > 0)
    ADD("? left   ");
#undef ADD
  fputs(line, stderr);
  if (r->finished) fputc('\n', stderr);
  fflush(stderr);
  p->printed = !r->finished;
}

int csx_progress_tick(csx_progress *p, const csx_progress_report *r) {
  if (p->show && r) {
    uint64_t now = progress_now_ns();
    if (r->finished || !p->last_print_ns || now - p->last_print_ns >= PRINT_EVERY_NS) {
      p->last_print_ns = now;
      progress_print(p, r, now);
    }
  }
  if (p->stopped) return 1;
  int rc = SQLITE_DONE;
#if SQLITE_VERSION_NUMBER >= 3041000
  if (sqlite3_libversion_number() >= 3041000 && sqlite3_is_interrupted(p->db)) rc = SQLITE_INTERRUPT;
#endif
  if (rc == SQLITE_DONE) {
    while ((rc = sqlite3_step(p->probe)) == SQLITE_ROW) {
    }
    sqlite3_reset(p->probe);
  }
  /* A probe that failed otherwise (out of memory) stops the call too: the
  ** connection's failed allocation would fail the calling statement
  ** anyway, after the call had written its store. */
  if (rc != SQLITE_DONE) p->stopped = true, p->rc = rc;
  return p->stopped;
}

void csx_progress_result(const csx_progress *p, sqlite3_context *ctx, const char *zInterrupted) {
  if (p->rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (p->rc == SQLITE_INTERRUPT) {
    sqlite3_result_error(ctx, zInterrupted ? zInterrupted : "colstore: interrupted", -1);
  } else {
    char *z = sqlite3_mprintf("colstore: %s", sqlite3_errstr(p->rc));
    sqlite3_result_error(ctx, z ? z : "colstore: out of memory", -1);
    sqlite3_free(z);
  }
  sqlite3_result_error_code(ctx, p->rc);
}

double csx_progress_ms(const csx_progress *p) { return (double)(progress_now_ns() - p->started_ns) / 1e6; }

void csx_progress_end(csx_progress *p) {
  if (p->show && p->printed) {
    fputc('\n', stderr);
    fflush(stderr);
  }
  p->printed = false;
  sqlite3_finalize(p->probe);
  p->probe = NULL;
}
