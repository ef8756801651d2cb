/*
** colstore_snapshot.c - snapshots: a store's committed state, shared by a
** table, its cursors and the aggregate tables that read it.
**
** A snapshot is a store plus a reference count: a table holds one, each
** cursor holds the one it started with, so the values a cursor hands to
** SQLite as SQLITE_STATIC stay valid while anyone may still read them.
** Refreshing replaces the table's snapshot with the store's newest
** committed state (cs_store_reopen), and only when no cursor is open.
** This file sits below the table, the cursors, writing and colstore_agg,
** which all take snapshots from it; it calls none of them.
**
** cache=auto (core/store/cs_cache.c has the why): a snapshot counts the
** statements that read it and when the last one started.  At a
** statement's start, a table on auto whose snapshot on the mapping was
** read by a statement before (COLSTORE_CACHE_AUTO_READS, default 1) that
** started at least COLSTORE_CACHE_AUTO_GAP_MS (default 200) ms ago (both
** read once, when the table is connected), with no cursor open, no write
** pending and no copy in flight, starts a copy of the same committed state
** on a background thread (cs_cache_copy_start) and reads the mapping.  Why
** these: a process that asks one question never copies (the copy would be
** its whole cost), a table refreshed before each statement by another
** connection's appends never reads one snapshot twice, and the gap is the
** idle time after which this VM's mapped pages were measured to have gone
** cold (200 ms: docs/performance.md, "What else slows a query after a
** pause"), so a script that runs statements back to back, which the
** mapping serves at full speed, does not pay for a copy either.
**
** The copy in flight is looked at only at later statements' starts, the
** same points where refresh and the rule above run (no cursor open, no
** write pending: nothing reads pTab->snap then, so it can be replaced):
** finished and the table still on the snapshot it copied (pointer equal:
** the table holds a reference to it, copy_of, so the address cannot be
** reused), the copy becomes the table's snapshot; the table moved to
** another state meanwhile (a commit, its own or another connection's), the
** copy is cancelled and dropped when finished; unfinished, the statement
** reads the mapping and nothing waits (COLSTORE_CACHE_AUTO_WAIT=1, for
** tests, makes that statement wait, so the swap lands at a known
** statement).  The swap hands the copy the old snapshot's automatic
** indexes and their filter counts (cs_index_adopt: the same committed
** state, so the same positions), which a loop would otherwise rebuild
** after as many filters again.  References are taken and dropped only here, on the
** connection's thread (they are not atomic); the thread sees no snapshot
** and no SQLite.  A copy that fails (out of memory, a read error, the size
** rule, a commit meanwhile) is not an error: the table reads the mapping,
** and the snapshot is not tried again; its successor after a refresh may
** be.  Disconnect (DROP TABLE, connection close) cancels and joins it.
*/
#include <stdlib.h>
#include <string.h>

#include "colstore_ext.h"

csx_snapshot *csx_snapshot_new(cs_store *store) {
  csx_snapshot *s = sqlite3_malloc(sizeof *s);
  uint32_t n = cs_store_schema(store)->n_cols;
  signed char *sorted = sqlite3_malloc((int)n);
  if (!s || !sorted) {
    sqlite3_free(s);
    sqlite3_free(sorted);
    return NULL;
  }
  memset(sorted, -1, n);
  s->store = store;
  s->n_refs = 1;
  s->sorted = sorted;
  s->n_reads = 0;
  s->last_read_ns = 0;
  s->promote_tried = false;
  return s;
}

void csx_snapshot_release(csx_snapshot *s) {
  if (s && --s->n_refs == 0) {
    cs_store_close(s->store);
    sqlite3_free(s->sorted);
    sqlite3_free(s);
  }
}

bool csx_snapshot_sorted(csx_snapshot *snap, uint32_t col) {
  if (snap->sorted[col] < 0) {
    cs_column_stats st;
    cs_store_column_stats(snap->store, col, &st);
    snap->sorted[col] = st.sorted ? 1 : 0;
  }
  return snap->sorted[col] == 1;
}

bool csx_schema_equal(const cs_schema *a, const cs_schema *b) {
  if (a->n_cols != b->n_cols) return false;
  for (uint32_t i = 0; i < a->n_cols; i++)
    if (a->cols[i].type != b->cols[i].type || a->cols[i].nullable != b->cols[i].nullable ||
        strcmp(a->cols[i].name, b->cols[i].name) != 0)
      return false;
  return true;
}

static uint64_t env_or(const char *name, uint64_t dflt) {
  const char *z = getenv(name);
  char *end;
  unsigned long long v = z && *z ? strtoull(z, &end, 10) : 0;
  return z && *z && !*end ? (uint64_t)v : dflt;
}

void csx_table_auto_knobs(csx_table *pTab) {
  pTab->auto_reads = env_or("COLSTORE_CACHE_AUTO_READS", 1);
  pTab->auto_gap_ns = env_or("COLSTORE_CACHE_AUTO_GAP_MS", 200) * 1000000u;
  pTab->auto_wait = env_or("COLSTORE_CACHE_AUTO_WAIT", 0) != 0;
}

/* Ends the copy in flight: frees the job and drops its snapshot. */
static void auto_end(csx_table *pTab) {
  cs_cache_copy_free(pTab->copy);
  csx_snapshot_release(pTab->copy_of);
  pTab->copy = NULL;
  pTab->copy_of = NULL;
}

/* The copy in flight at a statement's start.  may_swap: no cursor open and
** no write pending.  Never waits (but under COLSTORE_CACHE_AUTO_WAIT). */
static void auto_collect(csx_table *pTab, bool may_swap) {
  bool current = pTab->copy_of == pTab->snap;
  if (!current)
    cs_cache_copy_cancel(pTab->copy); /* the table moved on: stop at the next piece */
  else if (pTab->auto_wait && may_swap)
    cs_cache_copy_wait(pTab->copy);
  if (!cs_cache_copy_done(pTab->copy) || (current && !may_swap)) return;
  char why[192];
  cs_store *store = cs_cache_copy_take(pTab->copy, why, sizeof why);
  csx_snapshot *s = NULL;
  if (store && current && (s = csx_snapshot_new(store))) {
    csx_snapshot *snap = pTab->snap;
    memcpy(s->sorted, snap->sorted, cs_store_schema(store)->n_cols);
    s->n_reads = snap->n_reads;
    s->last_read_ns = snap->last_read_ns;
    s->promote_tried = true;
    cs_index_adopt(store, snap->store); /* the same state: the same automatic indexes */
    csx_snapshot_release(snap);
    pTab->snap = s;
  } else
    cs_store_close(store);
  auto_end(pTab);
}

void csx_table_index_knob(csx_table *pTab) {
  pTab->autoindex_after = env_or("COLSTORE_AUTOINDEX_AFTER", CSX_AUTOINDEX_AFTER);
  pTab->autoindex_range_ppm = env_or("COLSTORE_AUTOINDEX_RANGE_PPM", CSX_AUTOINDEX_RANGE_PPM);
}

void csx_table_auto_cache(csx_table *pTab, bool writes_pending) {
  bool may_swap = pTab->n_open_cursors == 0 && !writes_pending;
  if (pTab->copy) auto_collect(pTab, may_swap);
  csx_snapshot *snap = pTab->snap;
  uint64_t now = csx_mono_ns();
  if (pTab->cache == CS_CACHE_AUTO && !pTab->copy && !snap->promote_tried && may_swap &&
      snap->n_reads >= pTab->auto_reads && now - snap->last_read_ns >= pTab->auto_gap_ns) {
    snap->promote_tried = true;
    cs_err err = {0};
    char why[192];
    if (cs_cache_copy_start(snap->store, &pTab->copy, why, sizeof why, &err) == CS_OK && pTab->copy) {
      pTab->copy_of = snap;
      snap->n_refs++;
    }
  }
  snap->n_reads++;
  snap->last_read_ns = now;
}

void csx_table_auto_free(csx_table *pTab) {
  if (pTab->copy) auto_end(pTab);
}

int csx_table_refresh(csx_table *pTab) {
  if (pTab->n_open_cursors > 0) return SQLITE_OK;
  return csx_snapshot_refresh(&pTab->snap, &pTab->base, pTab->zPath, pTab->zName);
}

int csx_snapshot_refresh(csx_snapshot **pSnap, sqlite3_vtab *tab, const char *zPath, const char *zName) {
  csx_snapshot *snap = *pSnap;
  cs_err err = {0};
  cs_store *store = NULL;
  /* One pass: the same store back when nothing changed; else a new one.  A
  ** dataset's reopen re-expands its SOURCE (added or removed files) and
  ** opens only the files that are new or changed, sharing the others with
  ** the snapshot it replaces (which a cursor may still hold). */
  cs_rc rc = cs_store_reopen(snap->store, CS_VERIFY_HEADER, &store, &err);
  if (rc != CS_OK) return csx_vtab_error(tab, csx_rc_to_sqlite(rc), "%s", err.msg);
  if (store == snap->store) {
    cs_store_close(store);
    return SQLITE_OK;
  }
  if (!csx_schema_equal(cs_store_schema(store), cs_store_schema(snap->store))) {
    cs_store_close(store);
    return csx_vtab_error(
        tab, SQLITE_SCHEMA,
        "colstore: %s was replaced by a store with another schema; DROP TABLE %s and create it again", zPath,
        zName);
  }
  csx_snapshot *s = csx_snapshot_new(store);
  if (!s) {
    cs_store_close(store);
    return SQLITE_NOMEM;
  }
  csx_snapshot_release(snap);
  *pSnap = s;
  return SQLITE_OK;
}
