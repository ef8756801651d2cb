/*
** colstore_progress.h - progress and clean interruption for the functions
** that run for minutes: colstore_create, colstore_import, colstore_compact
** and colstore_calibrate (ext/colstore_progress.c).
**
** A header of its own, like colstore_import.h, because it is used by those
** functions only, and each of them follows the same three steps: parse the
** `progress=auto|on|off` argument (csx_progress_option), open a csx_progress
** on the calling connection (csx_progress_begin), then, from the core's
** callback or between rows, report how far it is and ask whether to stop
** (csx_progress_tick, which also calls SQLite's progress handler); finally
** csx_progress_end.
*/
#ifndef COLSTORE_PROGRESS_H
#define COLSTORE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "colstore_ext.h"

/* progress=: off, on, or auto (on when stderr is a terminal; the default). */
typedef enum csx_progress_mode { CSX_PROGRESS_OFF = 0, CSX_PROGRESS_ON, CSX_PROGRESS_AUTO } csx_progress_mode;

/* One call's progress: the stderr line's state and the interrupt probe.
** Lives on the caller's stack from csx_progress_begin to csx_progress_end. */
typedef struct csx_progress {
  sqlite3 *db;         /* the calling connection */
  sqlite3_stmt *probe; /* a few hundred VDBE steps that let SQLite interrupt us; owned */
  const char *zName;   /* the function, first on the line; static */
  bool show;           /* print the line on stderr */
  bool printed;        /* a line is on stderr (the end adds its newline) */
  bool stopped;        /* the call must stop: see rc */
  /* Why: SQLITE_INTERRUPT (an interrupt, or the progress handler), else
  ** the probe's own failure (SQLITE_NOMEM). */
  int rc;
  uint64_t started_ns; /* CLOCK_MONOTONIC at csx_progress_begin */
  uint64_t last_print_ns;
} csx_progress;

/* How far a call is.  Only what is known is printed: bytes when bytes or
** bytes_total is nonzero, rows when has_rows, the time left when total is
** nonzero (done and total in any unit that grows evenly with the time). */
typedef struct csx_progress_report {
  const char *phase; /* printed after the name, e.g. "pass 1/2"; NULL: none */
  uint64_t bytes, bytes_total;
  uint64_t rows;
  bool has_rows;
  double done, total;
  bool finished; /* the last report: printed whatever the time, and ended with a newline */
} csx_progress_report;

/* If z is a `progress=...` argument: true, with *out set, or *pzErr set
** (sqlite3_malloc'd, listing the valid values) for a bad value.  Any other
** text: false. */
bool csx_progress_option(const char *z, csx_progress_mode *out, char **pzErr);

/* When the last of argv[0, *pArgc) (at an index >= first) is a text
** `progress=...` argument: parses it into *out and drops it from *pArgc.
** SQLITE_OK, or SQLITE_ERROR with the error set on ctx. */
int csx_progress_arg(sqlite3_context *ctx, int *pArgc, sqlite3_value **argv, int first,
                     csx_progress_mode *out);

/* Prepares the probe; SQLITE_OK, or an SQLite error code (the message is
** the connection's). */
int csx_progress_begin(csx_progress *p, sqlite3 *db, const char *zName, csx_progress_mode mode);

/* Reports r (printed at most ten times a second, and the finished one
** always), calls SQLite's progress handler and looks at the interrupt
** flag.  Nonzero (and p->stopped set) when the call must stop. */
int csx_progress_tick(csx_progress *p, const csx_progress_report *r);

/* Sets the error of a call that tick stopped on ctx: SQLITE_INTERRUPT with
** zInterrupted (NULL: "colstore: interrupted"), else the probe's error. */
void csx_progress_result(const csx_progress *p, sqlite3_context *ctx, const char *zInterrupted);

/* Milliseconds since csx_progress_begin. */
double csx_progress_ms(const csx_progress *p);

/* Ends the line on stderr if one is left open, frees the probe. */
void csx_progress_end(csx_progress *p);

#endif
