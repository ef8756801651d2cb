/*
** colstore_cursor.c - xFilter builds the selection, xNext walks it, xColumn
** hands SQLite one value at a time.
**
** A selection is one of three shapes, chosen by the plan:
**
**   RANGE     rows lo..hi-1, ascending or descending, no filtering: the
**             cursor just counts and reads values in place, from the
**             mapping (the full-scan and rowid-range path: zero-copy),
**             stepping over deleted positions with a bit test in records
**             that have any (one pointer test per row in those that
**             have none);
**   FILTERED  the same range in batches: one kernel call per batch
**             (cs_select_range) evaluates the predicates with zone maps,
**             ANDs a _mask, and gathers the selected rows of the
**             fixed-width columns the query reads into buffers, by the
**             mask or through positions as the mask gate decides;
**   LIST      an explicit list of positions: a rowid IN list (sorted,
**             distinct) or a _rows BLOB (the user's order, duplicates
**             kept), filtered by any rowid bounds and _mask; gathered in
**             batches into the same buffers (cs_select_rows).
**
** A FILTERED selection with an `=`, IN list or range (one bound or a
** window's two) on an unsorted numeric column may be a LIST instead, by
** the snapshot's automatic index of that column (core/kernels/cs_index.c):
** the rows of that predicate, ascending, by binary search, then the other
** predicates and _mask row by row (cs_selector_keep_rows); a range only
** when it selects at most CSX_AUTOINDEX_RANGE_PPM of the positions (its
** rows are sorted back into position order, which past that costs more
** than the scan).  It is for the inner loop of a join or a correlated
** subquery (`x = o.k`, `t BETWEEN o.t0 AND o.t1`), which SQLite filters
** once per outer row: each scan was a pass over the column.  Ranges count
** toward the build as `=` does.  The index is built at the filter that makes
** the table's autoindex_after-th (CSX_AUTOINDEX_AFTER, or the environment's
** COLSTORE_AUTOINDEX_AFTER; 0: never) on the column within the snapshot,
** never at the first (a single query must not pay a sort), and dies with
** the snapshot.  A build refused by the memory bounds or out of memory,
** and a list that finds no memory, leave the filter to the scan.
**
** Why buffers for scattered rows and not reads in place: SQLite asks for
** one value at a time, so a scattered read in place takes its cache and
** TLB misses one after another, between SQLite's own work; the kernels
** overlap the misses of many rows and columns (85 ns a row for three
** columns of 10,000 random rows against 433 in place, docs/performance.md),
** and then xColumn is a load from a small hot buffer.  A contiguous range
** has no misses to overlap, so RANGE stays zero-copy.  TEXT and BLOB
** values are always read in place (their bytes stay in the mapping; SQLite
** gets them SQLITE_STATIC).
**
** Ordered delivery (ORDER BY, GROUP BY, DISTINCT) is a LIST over the
** positions cs_order_rows sorted, except by scatter: for a key the
** counting sort takes over at least CSX_SCATTER_MIN_CODES codes, with the
** positions ascending and the whole selection's buffers within
** colstore_config('scatter_bytes'), the positions stay in row order and
** one batch holds the whole selection, filled by cs_scatter_rows in one
** pass that reads every column in row order and writes each value to its
** place (the same rows in the same order as the gather).  Its positions
** are scattered only when xRowid or an in-place column asks for them.
** Why one pass and not a batch-sized window per pass: each window is a
** pass over the whole selection, and 15 of them cost more than the
** random gather they replace (docs/performance.md).
**
** Batches are sized by colstore_config('batch_bytes') across the mask, the
** positions and the buffers; every buffer is allocated once per cursor
** and grown only when a later filter needs more, never per batch.  A
** FILTERED batch's mask and positions share the buffers' block, a big
** block that the next query gets back without a page fault (cs_alloc.c's
** kept blocks): as separate mallocs they were fresh memory every query,
** and writing the mask faulted every 4 KiB page of it (75% of a sparse
** query's page faults, docs/performance.md).  The
** positions of a mask-gathered batch are compacted only if someone asks
** for them (xRowid, or a column read in place), so `count(*) WHERE ...`
** never computes them.  OFFSET skips and LIMIT stops on the rows produced,
** after every filter.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "colstore_ext.h"

/* Rows per batch: batch_bytes over the bytes a row costs there (mask byte,
** position, record number, the buffered values and validity), at least
** this many. */
#define CSX_MIN_BATCH_ROWS 4096u
/* The smallest batch of a pipelined list (a list is pipelined only when it
** fills more than one batch; then it goes in eight or more pieces). */
#define CSX_LIST_PIECE_ROWS 1024u
/* Ordered delivery by scatter for keys of at least this many codes: with
** fewer, the gather through sorted positions walks as few ascending
** streams, overlapped with SQLite (GROUP BY d, 2 groups: gather 0.78-0.86x
** of the floor, scatter 0.96-1.03x; GROUP BY b, 1,000: gather 1.60-2.27x,
** scatter 1.22-1.45x; docs/performance.md). */
#define CSX_SCATTER_MIN_CODES 64u

typedef enum { SEL_RANGE, SEL_FILTERED, SEL_LIST } sel_shape;

/* One batch's memory and the kernel call that fills it.  FILTERED keeps
** two, so the worker can select the next batch into one while SQLite reads
** the other; LIST uses the first one's buffers. */
typedef struct csx_batch_buf {
  uint8_t *mask;                 /* FILTERED: the batch's mask (in mem) */
  uint64_t *pos;                 /* FILTERED: the batch's positions, once computed (in mem) */
  cs_gather_target *targets;     /* n_cols slots; n_targets used: a buffer per column read */
  cs_gather_target *job_targets; /* n_cols slots: the ones the kernel fills */
  uint8_t *mem;                  /* every buffer, in one block */
  uint64_t mem_bytes;
  const cs_selector *selector;
  cs_select_batch job; /* the call's inputs and results */
  uint64_t kernel_ns;  /* how long the call took */
  /* LIST: the batch is pos[list_base, + job.n), gathered by cs_select_rows */
  bool is_list;
  const cs_store *store;
  const uint64_t *list_rows;
  bool ascending;
  uint64_t list_base;
  uint32_t *bins; /* unsorted lists: the batch's record numbers */
  uint64_t bins_cap;
  /* LIST by scatter: the output window pos'[list_base, + job.n) of the
  ** order counts describes over list_rows[0, n_list), scattered into the
  ** buffers and its positions into pos (cs_scatter_rows) */
  const cs_order_counts *counts;
  uint64_t n_list;
  uint64_t list_first;       /* by scatter, list_rows NULL: the rows list_first .. + n_list - 1 */
  uint64_t *scatter_pos;     /* the window's positions: in mem, after the buffers; written only
                              ** when xRowid or a column read in place asks (rows_ready) */
  uint32_t *scatter_scratch; /* counts->n_codes cursors */
  uint64_t scratch_cap;
} csx_batch_buf;

typedef struct csx_cursor {
  sqlite3_vtab_cursor base; /* must be first */
  csx_snapshot *snap;       /* one ref held while open */
  const cs_store *store;    /* snap->store */
  const cs_column *cols;    /* the store's columns */
  uint32_t n_cols;
  sel_shape shape;
  bool desc; /* walk from the top */
  bool eof;
  uint64_t row;      /* RANGE: the current row; others: set by current_row() */
  uint64_t lo, hi;   /* RANGE: rows [lo, hi) still to visit; FILTERED: not yet batched */
  uint64_t range_lo; /* FILTERED: the whole range's first row (for record statistics) */
  /* LIST: the positions, where the batches are in them */
  uint64_t *pos; /* sqlite3_malloc'd; reused across filters */
  uint64_t n_pos, pos_cap;
  bool list_sorted; /* positions non-decreasing */
  /* Delivery by scatter (ordered, counting-sortable keys, ascending
  ** positions): pos[0, n_pos) stays the selection in row order and each
  ** batch is a window of the order, scattered from it (cs_scatter_rows),
  ** its positions in bufs[].pos. */
  bool scatter;
  bool scatter_range; /* ... over the range order_lo .. + n_pos - 1, pos never written */
  cs_order_counts counts;
  uint64_t list_next; /* ascending: the next index to batch; descending: the end of the rest */
  /* the current batch */
  csx_batch_buf bufs[2];
  int cur;            /* bufs[cur] is the current batch */
  bool pending;       /* bufs[1 - cur] holds or is getting the next batch */
  bool pipeline;      /* may select the next batch on the worker */
  uint64_t handed_ns; /* when the current batch was handed to SQLite (0: none yet) */
  double sql_row_ns;  /* SQLite's time per row of the last batch, measured */
  cs_worker *worker;  /* started at the first pipelined batch; kept for the cursor's life */
  uint64_t n_batch;   /* selected rows in the batch */
  uint64_t at;        /* the current row's index in the batch */
  bool rows_ready; /* FILTERED: bufs[cur].pos[0, n_batch) hold the batch's rows; by scatter: .scatter_pos */
  uint64_t batch_rows;       /* the most rows one batch holds */
  uint64_t batch_next;       /* FILTERED: rows of the next batch; doubles up to batch_rows */
  uint32_t n_targets;        /* the fixed-width columns the query reads */
  int32_t *col_target;       /* per column: its index in bufs[].targets, or -1 */
  uint8_t *col_lazy;         /* per column: gathered only once xColumn asks (see below) */
  const uint8_t **col_buf;   /* per column: its buffer in the current batch, or NULL = in place */
  const uint8_t **col_valid; /* per column: validity bytes, or NULL = no NULLs */
  double mask_gate;
  bool used_mask_route, used_rows_route;
  /* The selection's inputs (colstore_selection.c). */
  csx_selection sel;
  /* An UPDATE through _rows: SQLite hands xUpdate every row the scan
  ** delivers, so a position the BLOB repeats would be written (and counted
  ** in changes()) once per copy.  The cursor learns that it feeds an
  ** UPDATE at the first xColumn SQLite calls with the nochange flag (every
  ** UPDATE does, for _rows and _mask at least), and from then on steps
  ** over a list entry whose position an earlier entry had. */
  bool rows_list;        /* LIST: pos[] is the _rows BLOB's order, duplicates kept */
  bool updating;         /* an UPDATE reads this cursor (nochange seen) */
  uint8_t *repeat;       /* per pos[] index: 1 = an earlier index has the position; NULL: none repeats */
  cs_selector *selector; /* sel.preds compiled against the store */
  /* Ordered delivery under a LIMIT SQLite did not hand over (K<n>): the
  ** first n in order were selected; if SQLite asks for more (it filters
  ** after us), the selection is made again and ordered whole.  A list is
  ** kept here for that (its order was the user's); a range or a filtered
  ** selection over [order_lo, order_hi) is simply made again. */
  bool order_more;
  /* DISTINCT de-duplicated on an SQLite that may still read the rowid for
  ** a condition it applies after us (colstore_plan.c, W): at the first
  ** xRowid every remaining row is delivered instead (distinct_fall_back). */
  bool distinct_watch;
  uint64_t *order_rest;
  uint64_t n_order_rest;
  uint64_t order_lo, order_hi;
  bool order_range;  /* pos[0, n_pos) is order_lo.. implicitly, not yet written (cs_order_range) */
  bool order_select; /* the selection over [order_lo, order_hi) is not made yet (cs_order_select) */
  uint64_t order_col_used;
  cs_order_key order_keys[CSX_MAX_ORDER_KEYS];
  uint32_t n_order_keys;
  cs_order_mode order_mode;
  uint64_t skip; /* OFFSET rows still to skip */
  uint64_t left; /* LIMIT rows still to return; UINT64_MAX = no limit */
  /* the record of `row`, for reads in place */
  uint64_t rec, rec_first, rec_end;
  const cs_chunk *chunks;
  const uint8_t *rec_dels; /* its deletion bitmap (1 = deleted), NULL when it has none */
  /* Chunks are checked against their checksums the first time the
  ** process reads them (cs_verified.c), unless the table says verify=header:
  ** RANGE as it enters a record, FILTERED and LIST as they plan a batch. */
  bool check;
  uint8_t *check_cols; /* per column: read by the query (colUsed) */
  int check_rc;        /* SQLITE_CORRUPT once a check failed: the scan ends with it */
  /* what colstore_last_plan reports */
  csx_scan_stats stats;
} csx_cursor;

/* ---------------------------------------------------------------- cursor */

int csx_open(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  (void)pVtab;
  csx_cursor *pCur = sqlite3_malloc(sizeof *pCur);
  if (!pCur) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof *pCur);
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static void cursor_clear_filter(csx_cursor *pCur) {
  csx_selection_clear(&pCur->sel);
  cs_selector_free(pCur->selector);
  pCur->selector = NULL;
  cs_mem_big_free(pCur->order_rest);
  pCur->order_rest = NULL, pCur->n_order_rest = 0;
  cs_order_counts_free(&pCur->counts);
  pCur->scatter = pCur->scatter_range = false;
  pCur->order_more = false;
  pCur->order_range = pCur->order_select = false;
  pCur->distinct_watch = false;
  sqlite3_free(pCur->repeat);
  pCur->repeat = NULL;
  pCur->rows_list = pCur->updating = false;
}

int csx_close(sqlite3_vtab_cursor *cur) {
  csx_cursor *pCur = (csx_cursor *)cur;
  csx_table *pTab = (csx_table *)cur->pVtab;
  if (pCur->snap) {
    csx_conn_record_scan(pTab->conn, pTab->zName, pTab->zPath, pCur->snap->store, &pCur->stats);
    pTab->n_open_cursors--;
    csx_snapshot_release(pCur->snap);
  }
  cs_worker_release(pCur->worker); /* waits for a batch in flight */
  cursor_clear_filter(pCur);
  cs_mem_big_free(pCur->pos);
  for (int i = 0; i < 2; i++) {
    sqlite3_free(pCur->bufs[i].targets);
    sqlite3_free(pCur->bufs[i].job_targets);
    sqlite3_free(pCur->bufs[i].bins);
    sqlite3_free(pCur->bufs[i].scatter_scratch);
    cs_mem_big_free(pCur->bufs[i].mem);
  }
  sqlite3_free(pCur->col_buf);
  sqlite3_free(pCur->col_valid);
  sqlite3_free(pCur->col_target);
  sqlite3_free(pCur->col_lazy);
  sqlite3_free(pCur->check_cols);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

static void seek_record(csx_cursor *pCur, uint64_t row) {
  if (row >= pCur->rec_first && row < pCur->rec_end) return;
  const cs_store *s = pCur->store;
  pCur->rec = cs_store_find_record(s, row);
  pCur->rec_first = cs_store_record_first_row(s, pCur->rec);
  pCur->rec_end = cs_store_record_first_row(s, pCur->rec + 1);
  pCur->chunks = cs_store_chunk(s, pCur->rec, 0);
  pCur->rec_dels = cs_store_record_deletions(s, pCur->rec);
}

/* The outcome of a chunk check: on damage the scan ends (eof) and xFilter
** or xNext return the error. */
static bool check_outcome(csx_cursor *pCur, cs_rc rc, const cs_err *err) {
  if (rc == CS_OK) return true;
  pCur->check_rc = csx_vtab_error(pCur->base.pVtab, SQLITE_CORRUPT, "%s", err->msg);
  pCur->eof = true;
  return false;
}

/* Checks the chunks of records [rec_first, rec_end) that the query reads. */
static bool records_ok(csx_cursor *pCur, uint64_t rec_first, uint64_t rec_end) {
  if (!pCur->check) return true;
  cs_err err;
  return check_outcome(pCur, cs_store_check_chunks(pCur->store, rec_first, rec_end, pCur->check_cols, &err),
                       &err);
}

/* RANGE: seek_record, and the check of a record it enters. */
static void range_seek(csx_cursor *pCur, uint64_t row) {
  uint64_t rec = pCur->rec;
  bool same = row >= pCur->rec_first && row < pCur->rec_end;
  seek_record(pCur, row);
  if (!same || pCur->rec != rec) records_ok(pCur, pCur->rec, pCur->rec + 1);
}

/* Room for n positions, keeping the first n_pos: a big block (huge pages,
** cs_mem_big_alloc), since a 10M-row ORDER BY needs 80 MB of them. */
static int pos_reserve(csx_cursor *pCur, uint64_t n) {
  if (n <= pCur->pos_cap) return SQLITE_OK;
  uint64_t *p = n <= UINT64_MAX / sizeof *p ? cs_mem_big_alloc(n * sizeof *p) : NULL;
  if (!p) return SQLITE_NOMEM;
  if (pCur->n_pos) memcpy(p, pCur->pos, pCur->n_pos * sizeof *p);
  cs_mem_big_free(pCur->pos);
  pCur->pos = p;
  pCur->pos_cap = n;
  return SQLITE_OK;
}

/* Points xColumn at the buffers of b the kernel filled (n of them at
** filled); the other columns read are gathered when first asked for. */
static void buffers_select(csx_cursor *pCur, const cs_gather_target *filled, uint32_t n) {
  for (uint32_t t = 0; t < pCur->n_targets; t++) pCur->col_buf[pCur->bufs[0].targets[t].col] = NULL;
  for (uint32_t t = 0; t < n; t++) {
    pCur->col_buf[filled[t].col] = filled[t].out;
    pCur->col_valid[filled[t].col] = filled[t].out_valid;
  }
}

/* What the FILTERED batches so far ran, in words. */
static const char *filtered_kernels(const csx_cursor *pCur) {
  static const char *const words[2][4] = {
      {"mask", "mask, mask-native gather into buffers", "mask, mask compaction, sorted gather into buffers",
       "mask, mask-native and sorted gathers into buffers"},
      {"zone maps, predicate masks", "zone maps, predicate masks, mask-native gather into buffers",
       "zone maps, predicate masks, mask compaction, sorted gather into buffers",
       "zone maps, predicate masks, mask-native and sorted gathers into buffers"}};
  int route = pCur->used_mask_route + 2 * pCur->used_rows_route;
  return words[pCur->sel.n_preds > 0][route];
}

/* The batch job: one kernel call, timed.  Runs on the worker when
** pipelined, so it touches nothing but b. */
static void batch_job(void *arg) {
  csx_batch_buf *b = arg;
  uint64_t t0 = csx_mono_ns();
  if (b->counts)
    b->job.threads =
        cs_scatter_rows(b->store, b->list_rows, b->list_first, b->n_list, b->counts, b->list_base, b->job.n,
                        NULL, b->job.targets, b->job.n_targets, b->scatter_scratch, b->job.max_threads);
  else if (b->is_list)
    b->job.threads = cs_select_rows(b->store, b->list_rows + b->list_base, b->job.n, b->ascending, b->bins,
                                    b->job.targets, b->job.n_targets, b->job.max_threads);
  else
    cs_select_range(b->selector, &b->job);
  b->kernel_ns = csx_mono_ns() - t0;
}

/* FILTERED: carves the next batch of the range into b's job; false at the
** end of the range.  background: the job will run beside SQLite's own
** thread, so it leaves that thread's core to it. */
static bool filtered_plan(csx_cursor *pCur, csx_batch_buf *b, bool background) {
  if (pCur->lo >= pCur->hi) return false;
  uint64_t cap = pCur->batch_next < pCur->batch_rows ? pCur->batch_next : pCur->batch_rows;
  if (pCur->batch_next < pCur->batch_rows) pCur->batch_next *= 2;
  uint64_t n = pCur->hi - pCur->lo < cap ? pCur->hi - pCur->lo : cap;
  uint64_t first = pCur->desc ? pCur->hi - n : pCur->lo;
  if (pCur->desc)
    pCur->hi -= n;
  else
    pCur->lo += n;
  if (pCur->check && !records_ok(pCur, cs_store_find_record(pCur->store, first),
                                 cs_store_find_record(pCur->store, first + n - 1) + 1))
    return false;
  int threads = background ? cs_kernel_threads(n) - 1 : 0;
  uint32_t n_job = 0;
  for (uint32_t t = 0; t < pCur->n_targets; t++)
    if (!pCur->col_lazy[b->targets[t].col]) b->job_targets[n_job++] = b->targets[t];
  b->selector = pCur->selector;
  b->job = (cs_select_batch){.first = first,
                             .n = n,
                             .user_mask = pCur->sel.user_mask ? pCur->sel.user_mask + first : NULL,
                             .mask = b->mask,
                             .rows = b->pos,
                             .targets = b->job_targets,
                             .n_targets = n_job,
                             .mask_gate = pCur->mask_gate,
                             .count_from = pCur->range_lo,
                             .max_threads = background ? (threads < 1 ? 1 : threads) : 0};
  return true;
}

/* LIST: carves the next batch of the list into b; false at its end.
** Under a LIMIT no more rows than OFFSET + LIMIT are gathered. */
static bool order_resume(csx_cursor *pCur);

static bool list_plan(csx_cursor *pCur, csx_batch_buf *b, bool background) {
  uint64_t rest = pCur->desc ? pCur->list_next : pCur->n_pos - pCur->list_next;
  if (rest == 0 && pCur->order_more && order_resume(pCur)) rest = pCur->n_pos - pCur->list_next;
  if (rest == 0) return false;
  uint64_t k = rest < pCur->batch_rows ? rest : pCur->batch_rows;
  if (pCur->left != UINT64_MAX && pCur->skip + pCur->left < k) k = pCur->skip + pCur->left;
  if (k == 0) k = 1;
  b->list_base = pCur->desc ? pCur->list_next - k : pCur->list_next;
  pCur->list_next = pCur->desc ? pCur->list_next - k : pCur->list_next + k;
  /* A scattered batch reads rows all over the selection: every one was
  ** checked as the selection was made (csx_filter, order_positions). */
  cs_err err;
  if (pCur->check && !pCur->scatter &&
      !check_outcome(
          pCur, cs_store_check_rows(pCur->store, pCur->pos + b->list_base, k, pCur->check_cols, &err), &err))
    return false;
  int threads = background ? cs_kernel_threads(pCur->scatter ? pCur->n_pos : k * 32) - 1 : 0;
  b->is_list = true;
  b->store = pCur->store;
  b->list_rows = pCur->scatter_range ? NULL : pCur->pos;
  b->ascending = pCur->list_sorted;
  b->counts = pCur->scatter ? &pCur->counts : NULL;
  b->n_list = pCur->n_pos;
  b->list_first = pCur->order_lo;
  b->job = (cs_select_batch){.n = k,
                             .n_selected = k,
                             .targets = b->targets,
                             .n_targets = pCur->n_targets,
                             .max_threads = background ? (threads < 1 ? 1 : threads) : 0};
  return true;
}

static bool plan_next(csx_cursor *pCur, csx_batch_buf *b, bool background) {
  return pCur->shape == SEL_LIST ? list_plan(pCur, b, background) : filtered_plan(pCur, b, background);
}

/* Whether selecting the batch after j on the worker, while SQLite reads
** j's rows, beats selecting it afterwards with every thread.  With p
** threads allowed, a kernel of K thread-nanoseconds and SQLite's S for
** j's rows: afterwards costs K/p + S; overlapped, the worker has p - 1
** threads (SQLite's thread holds a core) and costs max(K/(p-1), S).  So
** overlap pays when SQLite's share is large (sum(b) WHERE a > 0.9: 100,000
** rows a batch), not when few rows reach SQLite (count(*) WHERE a > 0.99,
** where halving the kernel's threads costs more than it hides). */
static bool overlap_pays(const csx_cursor *pCur, const csx_batch_buf *j) {
  int p = cs_kernel_threads(UINT64_C(1) << 40); /* the threads this host gives a big kernel now */
  if (p < 2) return false;                      /* one core for both: nothing to overlap */
  double k = (double)j->kernel_ns * (j->job.threads > 0 ? j->job.threads : 1);
  double sql = (double)j->job.n_selected * pCur->sql_row_ns;
  double overlapped = k / (p - 1) > sql ? k / (p - 1) : sql;
  return overlapped < k / p + sql;
}

/* Makes bufs[cur] the next batch that has any selected row, and, when it
** pays (overlap_pays), starts selecting the one after it on the worker. */
static int next_batch(csx_cursor *pCur) {
  if (pCur->handed_ns && pCur->n_batch)
    pCur->sql_row_ns = (double)(csx_mono_ns() - pCur->handed_ns) / (double)pCur->n_batch;
  for (;;) {
    if (pCur->pending) {
      /* A worker that has not started the batch yet gives it back, and it
      ** runs here: never a wait for a thread still waking (cs_worker.c). */
      uint64_t back = cs_worker_taken_back(pCur->worker);
      cs_worker_wait(pCur->worker);
      pCur->stats.taken_back += cs_worker_taken_back(pCur->worker) != back;
      pCur->cur = 1 - pCur->cur;
      pCur->pending = false;
    } else {
      if (!plan_next(pCur, &pCur->bufs[pCur->cur], false)) return 0;
      /* The batch before a pipelined one runs on this thread alone: an
      ** OpenMP team's idle worker spins for milliseconds after its region
      ** (docs/performance.md), on the core the worker then needs. */
      if (pCur->pipeline && pCur->bufs[pCur->cur].job.n_targets) pCur->bufs[pCur->cur].job.max_threads = 1;
      batch_job(&pCur->bufs[pCur->cur]);
    }
    csx_batch_buf *b = &pCur->bufs[pCur->cur];
    if (pCur->pipeline && overlap_pays(pCur, b) && plan_next(pCur, &pCur->bufs[1 - pCur->cur], true)) {
      if (!cs_worker_submit(pCur->worker, batch_job, &pCur->bufs[1 - pCur->cur]))
        batch_job(&pCur->bufs[1 - pCur->cur]); /* no thread: select it here */
      pCur->pending = true;
      pCur->stats.overlapped++;
    }
    const cs_select_batch *j = &b->job;
    pCur->stats.kernel_ns += b->kernel_ns;
    if (!b->is_list) pCur->stats.rows_scanned += j->n;
    pCur->stats.records_scanned += j->records_scanned;
    pCur->stats.records_skipped += j->records_skipped;
    pCur->stats.batches++;
    if (j->threads > pCur->stats.threads) pCur->stats.threads = j->threads;
    pCur->n_batch = j->n_selected;
    pCur->rows_ready = j->rows_filled;
    if (pCur->n_batch) {
      if (!b->is_list) {
        if (j->n_targets && j->by_mask) pCur->used_mask_route = true;
        if (j->n_targets && !j->by_mask) pCur->used_rows_route = true;
        pCur->stats.kernels = filtered_kernels(pCur);
      }
      buffers_select(pCur, j->targets, j->n_targets);
      pCur->at = pCur->desc ? pCur->n_batch - 1 : 0;
      pCur->handed_ns = csx_mono_ns();
      return 1;
    }
  }
}

/* The current row's position. */
static uint64_t current_row(csx_cursor *pCur) {
  switch (pCur->shape) {
    case SEL_RANGE: break;
    case SEL_LIST:
      if (!pCur->scatter) {
        pCur->row = pCur->pos[pCur->bufs[pCur->cur].list_base + pCur->at];
        break;
      }
      if (!pCur->rows_ready) { /* one more pass, positions only: most GROUP BYs never ask */
        csx_batch_buf *w = &pCur->bufs[pCur->cur];
        cs_scatter_rows(w->store, w->list_rows, w->list_first, w->n_list, w->counts, w->list_base, w->job.n,
                        w->scatter_pos, NULL, 0, w->scatter_scratch, 0);
        pCur->rows_ready = true;
      }
      pCur->row = pCur->bufs[pCur->cur].scatter_pos[pCur->at];
      break;
    case SEL_FILTERED:
      if (!pCur->rows_ready) {
        const csx_batch_buf *b = &pCur->bufs[pCur->cur];
        cs_mask_to_rows(b->mask, b->job.n, b->job.first, b->pos);
        pCur->rows_ready = true;
      }
      pCur->row = pCur->bufs[pCur->cur].pos[pCur->at];
      break;
  }
  return pCur->row;
}

/* RANGE: whether the current position is deleted (rec_dels set). */
static inline bool range_deleted(const csx_cursor *pCur) {
  uint64_t local = pCur->row - pCur->rec_first;
  return (pCur->rec_dels[local >> 3] >> (local & 7)) & 1;
}

/* RANGE: one position on in the walk's direction; false at the end. */
static bool range_move(csx_cursor *pCur) {
  if (pCur->desc) {
    if (pCur->row == pCur->lo) return false;
    pCur->row--;
  } else if (++pCur->row >= pCur->hi) {
    return false;
  }
  if (pCur->row < pCur->rec_first || pCur->row >= pCur->rec_end) range_seek(pCur, pCur->row);
  return true;
}

/* RANGE: on from a deleted position to the next live one (eof if none). */
static void range_live(csx_cursor *pCur) {
  while (!pCur->eof && pCur->rec_dels && range_deleted(pCur))
    if (!range_move(pCur)) pCur->eof = true;
}

/* RANGE: skips OFFSET live rows from the current one, a record at a time
** where the record's live count says the skip passes it whole. */
static void range_skip(csx_cursor *pCur) {
  const cs_store *s = pCur->store;
  while (pCur->skip > 0 && !pCur->eof) {
    /* the rest of the record in the walk's direction: [a, b) */
    uint64_t a = pCur->desc ? (pCur->rec_first > pCur->lo ? pCur->rec_first : pCur->lo) : pCur->row;
    uint64_t b = pCur->desc ? pCur->row + 1 : (pCur->rec_end < pCur->hi ? pCur->rec_end : pCur->hi);
    uint64_t live = (b - a) - (pCur->rec_dels ? cs_store_deleted_in(s, a, b - a) : 0);
    if (live <= pCur->skip) {
      pCur->skip -= live;
      if (pCur->desc ? a == pCur->lo : b == pCur->hi) {
        pCur->eof = true;
        return;
      }
      pCur->row = pCur->desc ? a - 1 : b;
      range_seek(pCur, pCur->row);
      continue;
    }
    for (range_live(pCur); pCur->skip > 0 && !pCur->eof; pCur->skip--) {
      if (!range_move(pCur)) pCur->eof = true;
      range_live(pCur);
    }
  }
  range_live(pCur);
}

/* Moves to the next row of the selection, ignoring OFFSET/LIMIT. */
static void step(csx_cursor *pCur) {
  if (pCur->shape == SEL_RANGE) {
    if (!range_move(pCur))
      pCur->eof = true;
    else
      range_live(pCur);
    return;
  }
  bool more = pCur->desc ? pCur->at-- > 0 : ++pCur->at < pCur->n_batch;
  if (!more && !next_batch(pCur)) pCur->eof = true;
}

/* Positions the cursor on the first row of the selection. */
static void start(csx_cursor *pCur) {
  pCur->eof = false;
  pCur->rec_first = pCur->rec_end = 0;
  switch (pCur->shape) {
    case SEL_RANGE:
      if (pCur->lo >= pCur->hi) {
        pCur->eof = true;
        return;
      }
      /* OFFSET on a plain range is a jump, not a walk (with deletions, a
      ** jump over whole records by their live counts). */
      if (cs_store_live_rows(pCur->store) == cs_store_rows(pCur->store)) {
        if (pCur->skip >= pCur->hi - pCur->lo) {
          pCur->eof = true;
          return;
        }
        if (pCur->desc)
          pCur->hi -= pCur->skip;
        else
          pCur->lo += pCur->skip;
        pCur->skip = 0;
      }
      pCur->row = pCur->desc ? pCur->hi - 1 : pCur->lo;
      range_seek(pCur, pCur->row);
      range_skip(pCur);
      return;
    case SEL_FILTERED:
    case SEL_LIST:
      pCur->list_next = pCur->desc ? pCur->n_pos : 0;
      if (!next_batch(pCur)) {
        pCur->eof = true;
        return;
      }
      break;
  }
  while (!pCur->eof && pCur->skip > 0) {
    pCur->skip--;
    step(pCur);
  }
}

/* Lays out b's buffers for the fixed-width columns in col_used, batches of
** batch_rows rows (one block, each buffer 64-byte aligned), growing the
** block only when it is too small; FILTERED also gets a mask and
** positions. */
static int buffers_prepare(csx_cursor *pCur, csx_batch_buf *b, uint64_t col_used, uint64_t batch_rows) {
  uint32_t n_cols = pCur->n_cols ? pCur->n_cols : 1;
  if (!b->targets && !(b->targets = sqlite3_malloc64(n_cols * sizeof *b->targets))) return SQLITE_NOMEM;
  if (!b->job_targets && !(b->job_targets = sqlite3_malloc64(n_cols * sizeof *b->job_targets)))
    return SQLITE_NOMEM;
  uint64_t bytes = 0;
  uint32_t n = 0;
  for (uint32_t c = 0; c < pCur->n_cols; c++) {
    size_t w = cs_type_width(pCur->cols[c].type);
    if (!w || !((col_used >> (c < 63 ? c : 63)) & 1)) continue;
    bytes += (batch_rows * w + 63) & ~(uint64_t)63;
    if (pCur->cols[c].nullable) bytes += (batch_rows + 63) & ~(uint64_t)63;
    pCur->col_target[c] = (int32_t)n;
    b->targets[n++] = (cs_gather_target){.col = c};
  }
  if (pCur->scatter)
    bytes += batch_rows * sizeof *b->scatter_pos; /* huge pages: a whole selection's may be 80 MB */
  /* FILTERED: the mask and positions in the same block, so that a kept
  ** block serves them too (see the essay above, on batches). */
  bool filtered = pCur->shape == SEL_FILTERED;
  if (filtered) bytes += ((batch_rows + 63) & ~(uint64_t)63) + batch_rows * sizeof *b->pos;
  pCur->n_targets = n;
  if (bytes + 64 > b->mem_bytes) {
    cs_mem_big_free(b->mem);
    b->mem = cs_mem_big_alloc(bytes + 64);
    b->mem_bytes = b->mem ? bytes + 64 : 0;
    if (!b->mem) return SQLITE_NOMEM;
  }
  uint8_t *p = (uint8_t *)(((uintptr_t)b->mem + 63) & ~(uintptr_t)63);
  for (uint32_t t = 0; t < n; t++) {
    cs_gather_target *g = &b->targets[t];
    g->out = p;
    p += (batch_rows * cs_type_width(pCur->cols[g->col].type) + 63) & ~(uint64_t)63;
    g->out_valid = NULL;
    if (pCur->cols[g->col].nullable) {
      g->out_valid = p;
      p += (batch_rows + 63) & ~(uint64_t)63;
    }
  }
  b->is_list = false;
  b->counts = NULL;
  b->mask = filtered ? p : NULL;
  b->pos = filtered ? (uint64_t *)(void *)(p + ((batch_rows + 63) & ~(uint64_t)63)) : NULL;
  b->scatter_pos = pCur->scatter ? (uint64_t *)p : NULL;
  if (pCur->scatter)
    return csx_grow((void **)&b->scatter_scratch, &b->scratch_cap, pCur->counts.n_codes,
                    sizeof *b->scatter_scratch);
  if (pCur->shape == SEL_LIST && !pCur->list_sorted)
    return csx_grow((void **)&b->bins, &b->bins_cap, batch_rows, sizeof *b->bins);
  return SQLITE_OK;
}

/* Bytes a row of a batch costs: its position, mask byte, record number
** and buffered values. */
static uint64_t batch_row_bytes(const csx_cursor *pCur, uint64_t col_used) {
  uint64_t bytes =
      8 + (pCur->shape == SEL_FILTERED) + (pCur->shape == SEL_LIST && !pCur->list_sorted ? 4 : 0);
  for (uint32_t c = 0; c < pCur->n_cols; c++) {
    size_t w = cs_type_width(pCur->cols[c].type);
    if (w && ((col_used >> (c < 63 ? c : 63)) & 1)) bytes += w + pCur->cols[c].nullable;
  }
  return bytes;
}

/* COLSTORE_PIPELINE=0 in the environment turns the background selection
** of the next batch off (for measuring it; read once). */
static bool pipeline_enabled(void) {
  static _Atomic int on = -1;
  int v = atomic_load_explicit(&on, memory_order_relaxed);
  if (v < 0) {
    const char *e = getenv("COLSTORE_PIPELINE");
    v = !(e && e[0] == '0');
    atomic_store_explicit(&on, v, memory_order_relaxed);
  }
  return v;
}

/* Sizes the batches of a FILTERED or LIST selection over `rows` rows and
** makes room for them.  A range of more than one batch may be pipelined:
** two buffer sets share batch_bytes.  A list of at least two pieces of
** CSX_LIST_PIECE_ROWS goes in eight batches or more, so SQLite can read
** one while the worker gathers the next (a list's rows cost SQLite ~165 ns
** each for three columns, the kernels ~75: docs/performance.md). */
static int batches_prepare(csx_cursor *pCur, uint64_t col_used, uint64_t rows) {
  uint64_t budget = csx_config_batch_bytes(), row_bytes = batch_row_bytes(pCur, col_used);
  bool list = pCur->shape == SEL_LIST;
  /* Delivery by scatter: the whole selection is one batch, filled in one
  ** pass (order_count saw it fit colstore_config('scatter_bytes')). */
  bool whole = pCur->scatter;
  /* Overlap only a selection that fills more than one batch: on a list of
  ** 10,000-100,000 rows the hand-offs cost more than the kernel they hide
  ** (docs/performance.md, "Small lists run in one batch"). */
  pCur->pipeline = !whole && pipeline_enabled() && rows > budget / row_bytes;
  if (pCur->pipeline) budget /= 2;
  uint64_t want = budget / row_bytes;
  want = want < CSX_MIN_BATCH_ROWS ? CSX_MIN_BATCH_ROWS : want & ~(uint64_t)63;
  if (list && pCur->pipeline) {
    uint64_t piece = (rows / 8 + 63) & ~(uint64_t)63;
    if (piece < CSX_LIST_PIECE_ROWS) piece = CSX_LIST_PIECE_ROWS;
    if (piece < want) want = piece;
  }
  pCur->batch_rows = whole || rows < want ? (rows ? rows : 1) : want;
  /* Each one made if missing: after a failed filter some may exist. */
  uint32_t n_slots = pCur->n_cols ? pCur->n_cols : 1;
  if (!pCur->col_buf) pCur->col_buf = sqlite3_malloc64(n_slots * sizeof *pCur->col_buf);
  if (!pCur->col_valid) pCur->col_valid = sqlite3_malloc64(n_slots * sizeof *pCur->col_valid);
  if (!pCur->col_target) pCur->col_target = sqlite3_malloc64(n_slots * sizeof *pCur->col_target);
  if (!pCur->col_lazy) pCur->col_lazy = sqlite3_malloc64(n_slots);
  if (!pCur->col_buf || !pCur->col_valid || !pCur->col_target || !pCur->col_lazy) return SQLITE_NOMEM;
  for (uint32_t c = 0; c < pCur->n_cols; c++) {
    pCur->col_buf[c] = pCur->col_valid[c] = NULL;
    pCur->col_target[c] = -1;
    pCur->col_lazy[c] = 0;
  }
  int rc = SQLITE_OK;
  for (int i = 0; i < (pCur->pipeline ? 2 : 1) && rc == SQLITE_OK; i++)
    rc = buffers_prepare(pCur, &pCur->bufs[i], col_used, pCur->batch_rows);
  if (rc != SQLITE_OK) return rc;
  pCur->cur = 0;
  pCur->pending = false;
  pCur->handed_ns = 0;
  /* SQLite's time per row until measured: its least (~25 ns) and ~20 ns
  ** per column read (docs/performance.md). */
  pCur->sql_row_ns = 25 + 20.0 * pCur->n_targets;
  if (pCur->pipeline && !pCur->worker && !(pCur->worker = cs_worker_acquire())) pCur->pipeline = false;
  return rc;
}

/* --------------------------------------------------------------- filter */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* rowid IN list: every value that names a row in [lo, hi), sorted, distinct. */
static int collect_in_rows(csx_cursor *pCur, sqlite3_value *list, uint64_t lo, uint64_t hi) {
  uint64_t n = cs_store_rows(pCur->store);
  sqlite3_value *v = NULL;
  int rc;
  pCur->n_pos = 0;
  for (rc = sqlite3_vtab_in_first(list, &v); rc == SQLITE_OK && v; rc = sqlite3_vtab_in_next(list, &v)) {
    uint64_t a = 0, b = n;
    csx_bound_apply(v, SQLITE_INDEX_CONSTRAINT_EQ, n, &a, &b);
    if (a < b && a >= lo && a < hi) {
      if (pCur->n_pos == pCur->pos_cap &&
          pos_reserve(pCur, pCur->pos_cap ? 2 * pCur->pos_cap : 64) != SQLITE_OK)
        return SQLITE_NOMEM;
      pCur->pos[pCur->n_pos++] = a;
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_DONE) return rc;
  /* SQLite hands the list over sorted in practice; check before sorting. */
  bool sorted = true;
  for (uint64_t i = 1; sorted && i < pCur->n_pos; i++) sorted = pCur->pos[i - 1] <= pCur->pos[i];
  if (!sorted) qsort(pCur->pos, pCur->n_pos, sizeof *pCur->pos, cmp_u64);
  uint64_t k = 0;
  for (uint64_t i = 0; i < pCur->n_pos; i++)
    if (k == 0 || pCur->pos[i] != pCur->pos[k - 1]) pCur->pos[k++] = pCur->pos[i];
  pCur->n_pos = k;
  return SQLITE_OK;
}

/* LIST: the batches over pos[0, n_pos), in its order. */
static int list_ready(csx_cursor *pCur, uint64_t col_used, bool ordered) {
  pCur->list_sorted = true; /* by scatter: ascending (order_count), perhaps never written */
  for (uint64_t i = 1; !pCur->scatter && pCur->list_sorted && i < pCur->n_pos; i++)
    pCur->list_sorted = pCur->pos[i - 1] <= pCur->pos[i];
  /* Under a hint the rest may come later (order_resume), and replace the
  ** positions: never while a batch of them is in flight, so no pipeline. */
  if (pCur->distinct_watch) pCur->list_sorted = false;
  uint64_t whole = pCur->order_rest ? pCur->n_order_rest : pCur->order_hi - pCur->order_lo;
  int rc = batches_prepare(pCur, col_used, pCur->distinct_watch ? whole : pCur->n_pos);
  if (rc != SQLITE_OK) return rc;
  if (pCur->order_more || pCur->distinct_watch) pCur->pipeline = false;
  if (pCur->scatter)
    pCur->stats.kernels = "order keys, counting, scatter into buffers";
  else if (ordered)
    pCur->stats.kernels = pCur->order_mode == CS_ORDER_DISTINCT
                              ? "order keys, distinct, binned gather into buffers"
                          : pCur->order_more ? "order keys, top-k, binned gather into buffers"
                                             : "order keys, sort, binned gather into buffers";
  else
    pCur->stats.kernels = pCur->n_targets == 0 ? "positions"
                          : pCur->list_sorted  ? "sorted cursor gather into buffers"
                                               : "record bins, binned gather into buffers";
  return SQLITE_OK;
}

/* ------------------------------------------------------ ordered delivery */

/* Rows a FILTERED selection is made in when all of it is wanted at once
** (ordered delivery): the mask of one step. */
#define CSX_ORDER_SELECT_ROWS (1u << 20)

/* The rows of the FILTERED selection over [lo, hi), in row order, into
** pCur->pos (checked record by record as they are read). */
static int filtered_positions(csx_cursor *pCur, uint64_t lo, uint64_t hi) {
  uint64_t n = hi - lo, step = n < CSX_ORDER_SELECT_ROWS ? n : CSX_ORDER_SELECT_ROWS;
  pCur->n_pos = 0;
  if (n == 0) return SQLITE_OK;
  uint8_t *mask = sqlite3_malloc64(step);
  if (!mask) return SQLITE_NOMEM;
  int rc = SQLITE_OK;
  for (uint64_t first = lo; first < hi; first += step) {
    uint64_t k = hi - first < step ? hi - first : step;
    if (pCur->check && !records_ok(pCur, cs_store_find_record(pCur->store, first),
                                   cs_store_find_record(pCur->store, first + k - 1) + 1)) {
      rc = pCur->check_rc;
      break;
    }
    uint64_t want = pCur->n_pos + k;
    if (want > pCur->pos_cap &&
        (rc = pos_reserve(pCur, want > 2 * pCur->pos_cap ? want : 2 * pCur->pos_cap)) != SQLITE_OK)
      break;
    cs_select_batch job = {.first = first,
                           .n = k,
                           .user_mask = pCur->sel.user_mask ? pCur->sel.user_mask + first : NULL,
                           .mask = mask,
                           .rows = pCur->pos + pCur->n_pos,
                           .want_rows = true,
                           .mask_gate = pCur->mask_gate,
                           .count_from = lo};
    uint64_t t0 = csx_mono_ns();
    cs_select_range(pCur->selector, &job);
    pCur->stats.kernel_ns += csx_mono_ns() - t0;
    pCur->n_pos += job.n_selected;
    pCur->stats.records_scanned += job.records_scanned;
    pCur->stats.records_skipped += job.records_skipped;
    pCur->stats.batches++;
    if (job.threads > pCur->stats.threads) pCur->stats.threads = job.threads;
  }
  pCur->stats.rows_scanned = n;
  sqlite3_free(mask);
  return rc;
}

/* cs_order_rows over pos[0, n_pos) with the cursor's keys, timed. */
/* An ordering kernel's outcome as xFilter returns it, its time since t0
** counted as kernel time. */
static int order_outcome(csx_cursor *pCur, cs_rc rc, uint64_t t0, const cs_err *err) {
  pCur->stats.kernel_ns += csx_mono_ns() - t0;
  if (rc == CS_OK) return SQLITE_OK;
  return rc == CS_ENOMEM ? SQLITE_NOMEM : csx_vtab_error(pCur->base.pVtab, SQLITE_ERROR, "%s", err->msg);
}

static int order_run(csx_cursor *pCur, uint64_t limit) {
  cs_err err;
  uint64_t t0 = csx_mono_ns();
  cs_rc rc = pCur->order_range
                 ? cs_order_range(pCur->store, pCur->order_keys, pCur->n_order_keys, pCur->order_mode,
                                  pCur->order_lo, pCur->n_pos, pCur->pos, &pCur->n_pos, limit, &err)
                 : cs_order_rows(pCur->store, pCur->order_keys, pCur->n_order_keys, pCur->order_mode,
                                 pCur->pos, &pCur->n_pos, limit, &err);
  pCur->order_range = false;
  return order_outcome(pCur, rc, t0, &err);
}

/* cs_order_select over [order_lo, order_hi) into pos, timed; *done false
** when it does not apply (nothing delivered). */
static int order_select_run(csx_cursor *pCur, uint64_t limit, bool *done) {
  cs_err err;
  uint64_t t0 = csx_mono_ns();
  uint64_t n = 0;
  cs_rc rc =
      cs_order_select(pCur->selector, pCur->order_keys, pCur->n_order_keys, pCur->order_mode, pCur->order_lo,
                      pCur->order_hi - pCur->order_lo, pCur->pos, &n, limit, done, &err);
  if (rc == CS_OK && *done) pCur->n_pos = n;
  return order_outcome(pCur, rc, t0, &err);
}

/* cs_order_count over the positions, or (rows NULL) over the range
** order_lo .. + n_pos - 1. */
static int order_count_run(csx_cursor *pCur, const uint64_t *rows, bool *done) {
  cs_err err;
  uint64_t t0 = csx_mono_ns();
  cs_rc rc = cs_order_count(pCur->store, pCur->order_keys, pCur->n_order_keys, pCur->order_mode, rows,
                            rows ? 0 : pCur->order_lo, pCur->n_pos, CSX_SCATTER_MIN_CODES, &pCur->counts,
                            done, &err);
  return order_outcome(pCur, rc, t0, &err);
}

/* Delivery by scatter (docs/performance.md, "GROUP BY delivery by
** scatter"): taken when the mode delivers every row (SORT or GROUP
** without a limit), the keys take the counting sort over a range of at
** least CSX_SCATTER_MIN_CODES codes, the positions ascend (the scatter
** then reads every column in row order; an unsorted _rows list would read
** them at random as the gather does, and keeps the gather), and the
** selection's buffers fit in colstore_config('scatter_bytes'): the
** counting sort's codes in pCur->counts, the positions left in row order
** (an implicit range written out), *done set.  Else nothing changes but
** that a range may be written (cs_order_rows then orders it as
** cs_order_range would). */
static int order_count(csx_cursor *pCur, bool *done) {
  *done = false;
  pCur->list_sorted = true; /* as it will be if taken: no record bins in the row's bytes */
  uint64_t budget = csx_config_scatter_bytes(), row_bytes = batch_row_bytes(pCur, pCur->order_col_used);
  if (pCur->order_mode == CS_ORDER_DISTINCT || pCur->n_pos > budget / row_bytes) return SQLITE_OK;
  if (pCur->order_range) {
    /* A range is counted without its positions written (80 MB at 10M
    ** rows, and the faults of fresh memory) when it has no deleted row and
    ** its keys are fixed-width; cs_order_count says. */
    int rc = order_count_run(pCur, NULL, done);
    if (rc != SQLITE_OK) return rc;
    if (*done) {
      pCur->scatter = pCur->scatter_range = true;
      pCur->order_range = false;
      return SQLITE_OK;
    }
    for (uint64_t j = 0; j < pCur->n_pos; j++) pCur->pos[j] = pCur->order_lo + j;
    pCur->n_pos = cs_store_filter_deleted(pCur->store, pCur->pos, pCur->n_pos);
    pCur->order_range = false;
  }
  for (uint64_t i = 1; i < pCur->n_pos; i++)
    if (pCur->pos[i - 1] > pCur->pos[i]) return SQLITE_OK;
  int rc = order_count_run(pCur, pCur->pos, done);
  pCur->scatter = *done;
  return rc;
}

/* Sorts, groups or de-duplicates the selection in pos[0, n_pos) by the
** plan's keys.  Under a LIMIT SQLite handed over, only LIMIT + OFFSET rows
** are ordered (top-k); under a LIMIT it applies itself (the hint), the
** same, but every row is kept for order_resume. */
static int order_positions(csx_cursor *pCur, const csx_plan *plan, bool list_input) {
  pCur->n_order_keys = (uint32_t)plan->n_keys;
  pCur->order_mode = (cs_order_mode)plan->order_mode;
  for (int k = 0; k < plan->n_keys; k++)
    pCur->order_keys[k] = (cs_order_key){.col = (uint32_t)plan->key_col[k], .desc = plan->key_desc[k] != 0};
  /* Every key of every selected row is read now: check those chunks (a
  ** range or a filtered selection was checked record by record as it was
  ** made; a list is checked here). */
  cs_err err;
  if (pCur->check && pCur->n_pos && list_input && !pCur->order_select &&
      !check_outcome(pCur, cs_store_check_rows(pCur->store, pCur->pos, pCur->n_pos, pCur->check_cols, &err),
                     &err))
    return pCur->check_rc;
  uint64_t limit = CS_ORDER_NO_LIMIT;
  pCur->order_col_used = plan->col_used;
  pCur->distinct_watch = plan->distinct_watch && pCur->order_mode == CS_ORDER_DISTINCT;
  if (pCur->order_mode == CS_ORDER_SORT && !plan->group_by) {
    if (pCur->left != UINT64_MAX) {
      limit = pCur->skip + pCur->left >= pCur->skip ? pCur->skip + pCur->left : CS_ORDER_NO_LIMIT;
    } else if (plan->limit_hint > 0 && plan->limit_hint < pCur->n_pos) {
      pCur->order_more = true;
      limit = plan->limit_hint;
    }
  }
  /* A filtered selection under a small limit: the pruned top-k evaluates
  ** the predicates only in the records it reads; else the selection is
  ** made here. */
  if (pCur->order_select) {
    pCur->order_select = false;
    if (limit != CS_ORDER_NO_LIMIT) {
      bool done = false;
      int rc = order_select_run(pCur, limit, &done);
      if (rc != SQLITE_OK || done) return rc;
    }
    int rc = filtered_positions(pCur, pCur->order_lo, pCur->order_hi);
    if (rc != SQLITE_OK) return rc;
  }
  /* When the selection may have to be ordered again (order_remake), a list
  ** is kept, in its order; a range or filtered selection is made again. */
  if ((pCur->order_more || pCur->distinct_watch) && list_input) {
    if (!(pCur->order_rest = cs_mem_big_alloc((pCur->n_pos ? pCur->n_pos : 1) * sizeof *pCur->order_rest)))
      return SQLITE_NOMEM;
    memcpy(pCur->order_rest, pCur->pos, pCur->n_pos * sizeof *pCur->pos);
    pCur->n_order_rest = pCur->n_pos;
  }
  if (limit == CS_ORDER_NO_LIMIT && !pCur->order_more && !pCur->distinct_watch) {
    bool done;
    int rc = order_count(pCur, &done);
    if (rc != SQLITE_OK || done) return rc;
  }
  return order_run(pCur, limit);
}

/* The first rows in order were all delivered and SQLite wants more: order
** every row and go on after them.  False (the scan ends, with the error
** in check_rc) when that fails. */
/* The selection made again (a kept list, or the range or filtered
** selection over [order_lo, order_hi)) and ordered whole in mode, into
** pos[0, n_pos). */
static int order_remake(csx_cursor *pCur, cs_order_mode mode) {
  int rc = SQLITE_OK;
  if (pCur->order_rest) {
    cs_mem_big_free(pCur->pos);
    pCur->pos = pCur->order_rest, pCur->n_pos = pCur->pos_cap = pCur->n_order_rest;
    pCur->order_rest = NULL, pCur->n_order_rest = 0;
  } else if (pCur->selector) {
    rc = filtered_positions(pCur, pCur->order_lo, pCur->order_hi);
  } else {
    uint64_t lo = pCur->order_lo, hi = pCur->order_hi;
    pCur->n_pos = 0;
    if ((rc = pos_reserve(pCur, hi - lo)) == SQLITE_OK) {
      pCur->order_range = true;
      pCur->n_pos = hi - lo;
    }
  }
  pCur->order_mode = mode;
  return rc == SQLITE_OK ? order_run(pCur, CS_ORDER_NO_LIMIT) : rc;
}

static bool order_resume(csx_cursor *pCur) {
  uint64_t delivered = pCur->n_pos;
  pCur->order_more = false;
  int rc = order_remake(pCur, pCur->order_mode);
  /* at a batch boundary, with no batch in flight (list_ready); unsorted,
  ** so the batches get record bins */
  pCur->list_sorted = false;
  if (rc == SQLITE_OK) rc = batches_prepare(pCur, pCur->order_col_used, pCur->n_pos);
  if (rc != SQLITE_OK) {
    if (!pCur->check_rc) pCur->check_rc = rc;
    pCur->eof = true;
    return false;
  }
  pCur->list_next = delivered;
  return true;
}

/* SQLite asked a de-duplicated DISTINCT cursor for a rowid: a condition on
** the rowid is still to be applied, and it may reject the one row kept of
** a group.  Until now every condition SQLite applied read only the
** DISTINCT columns (colUsed held nothing else), so it judged all rows of a
** group alike and keeping one was right; from the current row on, every
** row is delivered: the selection is sorted whole (stably, so the current
** row, the first of its group, is the first of its group there too) and
** the walk goes on right after it.  No batch is in flight (no pipeline
** under the watch). */
static int distinct_fall_back(csx_cursor *pCur) {
  uint64_t r = current_row(pCur);
  pCur->distinct_watch = false;
  int rc = order_remake(pCur, CS_ORDER_SORT);
  if (rc != SQLITE_OK) return rc;
  uint64_t j = 0;
  while (j < pCur->n_pos && pCur->pos[j] != r) j++;
  if (j == pCur->n_pos || j < pCur->at) return SQLITE_INTERNAL;
  csx_batch_buf *b = &pCur->bufs[pCur->cur];
  b->list_base = j - pCur->at; /* the current row reads as pos[j] */
  b->list_rows = pCur->pos;
  pCur->n_batch = pCur->at + 1; /* its batch ends with it */
  pCur->list_next = j + 1;
  pCur->list_sorted = false;
  return SQLITE_OK;
}

/* LIST: a rowid IN list or a _rows BLOB (under rowid bounds and _mask),
** ordered when the plan has keys. */
static int select_list(csx_cursor *pCur, const csx_plan *plan, bool ordered) {
  csx_table *pTab = (csx_table *)pCur->base.pVtab;
  const csx_selection *sel = &pCur->sel;
  int rc;
  pCur->shape = SEL_LIST;
  if (sel->in_list && (rc = collect_in_rows(pCur, sel->in_list, sel->lo, sel->hi)) != SQLITE_OK) return rc;
  if (sel->rows_blob && (rc = pos_reserve(pCur, pCur->n_pos + sel->user_rows_bytes / 8 + 1)) != SQLITE_OK)
    return rc;
  rc = csx_selection_list(sel, &pTab->base, pTab->zName, cs_store_rows(pCur->store), pCur->pos, &pCur->n_pos);
  if (rc != SQLITE_OK) return rc;
  /* a deleted position yields no row (a NULL test without deletions) */
  pCur->n_pos = cs_store_filter_deleted(pCur->store, pCur->pos, pCur->n_pos);
  pCur->rows_list = sel->rows_blob && !ordered;
  pCur->stats.rows_scanned = pCur->n_pos;
  if (ordered && (rc = order_positions(pCur, plan, true)) != SQLITE_OK) return rc;
  return list_ready(pCur, plan->col_used, ordered);
}

/* The selector for the predicates (and _mask), and the mask gate. */
static int selector_ready(csx_cursor *pCur) {
  cs_err err;
  if (cs_selector_new(pCur->store, pCur->sel.preds, pCur->sel.n_preds, &pCur->selector, &err) != CS_OK)
    return SQLITE_NOMEM;
  pCur->mask_gate = csx_config_mask_gate(NULL);
  return SQLITE_OK;
}

/* A range op the index answers: one or two bounds of a window. */
static bool index_range_op(cs_cmp op) {
  return op == CS_CMP_LT || op == CS_CMP_LE || op == CS_CMP_GT || op == CS_CMP_GE || op == CS_CMP_BETWEEN;
}

/* The predicate an automatic index could answer: an `=` or IN list (not a
** folded TEXT one) or a range on a column cs_index_supports, by
** preference an `=`/IN whose column has an index already, then a range
** whose column has one, then the first `=`/IN, then the first range; -1 if
** none.  *also: another range on the same column (the window's other
** bound), or -1.  A sorted column's ranges never get here: the selection
** made them a row range already (colstore_selection.c). */
static int index_pred(const csx_cursor *pCur, int *also) {
  const csx_selection *sel = &pCur->sel;
  int best = -1, best_rank = 4;
  *also = -1;
  for (uint32_t k = 0; k < sel->n_preds; k++) {
    const cs_pred *pr = &sel->preds[k];
    bool eq = pr->op == CS_CMP_EQ || (pr->op == CS_CMP_IN && !pr->fold);
    if (!(eq || index_range_op(pr->op)) || !cs_index_supports(pCur->store, pr)) continue;
    int rank = (cs_index_find(pCur->store, pr->col) ? 0 : 2) + !eq;
    if (rank < best_rank) best = (int)k, best_rank = rank;
  }
  for (uint32_t k = 0; best >= 0 && k < sel->n_preds; k++)
    if ((int)k != best && sel->preds[k].col == sel->preds[best].col && index_range_op(sel->preds[k].op)) {
      *also = (int)k;
      break;
    }
  return best;
}

/* The column's index on the cursor's snapshot: the one built, or one built
** now when this filter is the table's autoindex_after-th on the column;
** NULL (scan) otherwise, and when the build is refused or fails.  A build
** reads the whole column, so its chunks are checked first. */
static const cs_index *index_for(csx_cursor *pCur, uint32_t col, int *rc) {
  csx_table *pTab = (csx_table *)pCur->base.pVtab;
  const cs_index *ix = cs_index_find(pCur->store, col);
  *rc = SQLITE_OK;
  if (ix || pTab->autoindex_after == 0 || cs_index_note(pCur->store, col) < pTab->autoindex_after) return ix;
  cs_err err;
  if (pCur->check) {
    uint8_t *only = sqlite3_malloc64(pCur->n_cols);
    if (!only) return NULL;
    memset(only, 0, pCur->n_cols);
    only[col] = 1;
    cs_rc crc = cs_store_check_chunks(pCur->store, 0, cs_store_records(pCur->store), only, &err);
    sqlite3_free(only);
    if (!check_outcome(pCur, crc, &err)) {
      *rc = pCur->check_rc;
      return NULL;
    }
  }
  return cs_index_build(pCur->store, col, &ix, &err) == CS_OK ? ix : NULL;
}

/* LIST by the automatic index (core/kernels/cs_index.c): the rows of one
** `=`, IN list or range (with its other bound, when the window has one),
** ascending, within [lo, hi), then the other predicates and _mask row by
** row; ordered when the plan has keys.  *done false: scan (no index, a
** range wider than the table's autoindex_range_ppm of [lo, hi), or no
** memory for the list).  Why the width rule: an `=` is one run of the
** index, already in position order, but a range's rows come in value
** order and are sorted back into position order, which costs more per row
** than the scan's pass over the column beyond some fraction of it. */
static int select_indexed(csx_cursor *pCur, const csx_plan *plan, bool ordered, bool *done) {
  const csx_selection *sel = &pCur->sel;
  csx_table *pTab = (csx_table *)pCur->base.pVtab;
  *done = false;
  int also_k, k = index_pred(pCur, &also_k), rc;
  if (k < 0) return SQLITE_OK;
  const cs_pred *pr = &sel->preds[k], *also = also_k >= 0 ? &sel->preds[also_k] : NULL;
  const cs_index *ix = index_for(pCur, pr->col, &rc);
  if (!ix) return rc;
  uint64_t n = cs_index_count_and(ix, pr, also, sel->lo, sel->hi);
  if (index_range_op(pr->op) &&
      (double)n > (double)(sel->hi - sel->lo) * (double)pTab->autoindex_range_ppm / 1e6)
    return SQLITE_OK;
  if (n > pCur->pos_cap && pos_reserve(pCur, n) != SQLITE_OK) return SQLITE_OK;
  pCur->n_pos = cs_index_rows_and(ix, pr, also, sel->lo, sel->hi, pCur->pos);
  *done = true;
  pCur->shape = SEL_LIST;
  cs_err err;
  if (pCur->check && pCur->n_pos &&
      !check_outcome(pCur, cs_store_check_rows(pCur->store, pCur->pos, pCur->n_pos, pCur->check_cols, &err),
                     &err))
    return pCur->check_rc;
  if (sel->n_preds > 1 || sel->user_mask) {
    if ((rc = selector_ready(pCur)) != SQLITE_OK) return rc;
    pCur->n_pos = cs_selector_keep_rows(pCur->selector, sel->user_mask, pCur->pos, pCur->n_pos);
  }
  pCur->stats.rows_scanned = pCur->n_pos;
  if (ordered && (rc = order_positions(pCur, plan, true)) != SQLITE_OK) return rc;
  if ((rc = list_ready(pCur, plan->col_used, ordered)) != SQLITE_OK) return rc;
  pCur->stats.kernels = pCur->scatter     ? "automatic index, order keys, counting, scatter into buffers"
                        : ordered         ? "automatic index, order keys, binned gather into buffers"
                        : pCur->n_targets ? "automatic index, sorted cursor gather into buffers"
                                          : "automatic index, positions";
  return SQLITE_OK;
}

/* ORDER BY, GROUP BY, DISTINCT over [lo, hi): the whole selection as
** positions, ordered, then delivered as a list. */
static int select_ordered(csx_cursor *pCur, const csx_plan *plan, uint64_t lo, uint64_t hi) {
  int rc;
  if (pCur->sel.n_preds && !pCur->sel.user_mask && plan->order_mode == CS_ORDER_SORT && !plan->group_by &&
      hi > lo) {
    /* made by order_positions: under a small limit, only in the records
    ** the pruned top-k reads (checked here, as a range is) */
    if ((rc = selector_ready(pCur)) != SQLITE_OK) return rc;
    if (pCur->check && !records_ok(pCur, cs_store_find_record(pCur->store, lo),
                                   cs_store_find_record(pCur->store, hi - 1) + 1))
      return pCur->check_rc;
    if (hi - lo > pCur->pos_cap && (rc = pos_reserve(pCur, hi - lo)) != SQLITE_OK) return rc;
    pCur->order_select = true;
    pCur->n_pos = hi - lo;
    pCur->stats.rows_scanned = hi - lo;
  } else if (pCur->sel.n_preds || pCur->sel.user_mask) {
    if ((rc = selector_ready(pCur)) != SQLITE_OK) return rc;
    if ((rc = filtered_positions(pCur, lo, hi)) != SQLITE_OK) return rc;
  } else {
    if (hi > lo && pCur->check &&
        !records_ok(pCur, cs_store_find_record(pCur->store, lo),
                    cs_store_find_record(pCur->store, hi - 1) + 1))
      return pCur->check_rc;
    if (hi - lo > pCur->pos_cap && (rc = pos_reserve(pCur, hi - lo)) != SQLITE_OK) return rc;
    pCur->order_range = true; /* the positions are lo..hi-1, not written (order_run) */
    pCur->n_pos = hi - lo;
    pCur->stats.rows_scanned = hi - lo;
  }
  pCur->shape = SEL_LIST;
  pCur->order_lo = lo, pCur->order_hi = hi;
  if ((rc = order_positions(pCur, plan, false)) != SQLITE_OK) return rc;
  return list_ready(pCur, plan->col_used, true);
}

/* FILTERED: [lo, hi) in batches under the predicates and _mask. */
static int select_filtered(csx_cursor *pCur, const csx_plan *plan, uint64_t lo, uint64_t hi) {
  int rc;
  pCur->shape = SEL_FILTERED;
  pCur->lo = pCur->range_lo = lo, pCur->hi = hi;
  if ((rc = selector_ready(pCur)) != SQLITE_OK) return rc;
  if ((rc = batches_prepare(pCur, plan->col_used, hi - lo)) != SQLITE_OK) return rc;
  pCur->batch_next = plan->may_stop_early ? CSX_MIN_BATCH_ROWS : pCur->batch_rows;
  /* A column named by a consumed predicate is in colUsed whether or not
  ** the query reads it: gather it only when xColumn asks. */
  for (int i = 0; i < plan->n_slots; i++)
    if (plan->slots[i].kind == 'P' || plan->slots[i].kind == 'Q') pCur->col_lazy[plan->slots[i].col] = 1;
  pCur->stats.kernels = pCur->sel.n_preds ? "zone maps, predicate masks" : "mask";
  return SQLITE_OK;
}

/* RANGE: rows [lo, hi), walked in place. */
static void select_range(csx_cursor *pCur, uint64_t lo, uint64_t hi) {
  pCur->shape = SEL_RANGE;
  pCur->lo = lo, pCur->hi = hi;
  /* the rows the walk will visit: OFFSET + LIMIT of them at most */
  pCur->stats.rows_scanned = hi - lo;
  if (pCur->left != UINT64_MAX && pCur->skip + pCur->left < hi - lo)
    pCur->stats.rows_scanned = pCur->skip + pCur->left;
  pCur->stats.kernels = pCur->desc ? "reverse range walk (zero-copy)" : "range walk (zero-copy)";
}

/* The LIMIT and OFFSET the plan took (T and O slots). */
static void limit_offset(csx_cursor *pCur, const csx_plan *plan, int argc, sqlite3_value **argv) {
  pCur->skip = 0;
  pCur->left = UINT64_MAX;
  for (int i = 0; i < plan->n_slots && i < argc; i++) {
    if (plan->slots[i].kind == 'T') {
      sqlite3_int64 l = sqlite3_value_int64(argv[i]);
      if (l >= 0) pCur->left = (uint64_t)l;
    } else if (plan->slots[i].kind == 'O') {
      sqlite3_int64 o = sqlite3_value_int64(argv[i]);
      if (o > 0) pCur->skip = (uint64_t)o;
    }
  }
}

/* The snapshot (kept across re-filters), no batch in flight, the filter's
** state cleared, and which columns to check. */
static int filter_reset(csx_cursor *pCur, csx_table *pTab, const csx_plan *plan) {
  /* A cursor keeps its first snapshot across re-filters (the inner loop of
  ** a join filters once per outer row), so one statement sees one state. */
  if (!pCur->snap) {
    int rc = csx_table_read_snapshot(pTab, &pCur->snap);
    if (rc != SQLITE_OK) return rc;
    pTab->n_open_cursors++;
    pCur->store = pCur->snap->store;
    pCur->cols = cs_store_schema(pCur->store)->cols;
    pCur->n_cols = cs_store_schema(pCur->store)->n_cols;
  }
  /* A batch of the previous filter may still be in flight on the worker. */
  cs_worker_wait(pCur->worker);
  pCur->pending = false;
  cursor_clear_filter(pCur);
  pCur->check_rc = SQLITE_OK;
  pCur->check = pTab->verify != CS_VERIFY_HEADER;
  if (pCur->check) {
    if (!pCur->check_cols && !(pCur->check_cols = sqlite3_malloc64(pCur->n_cols ? pCur->n_cols : 1)))
      return SQLITE_NOMEM;
    for (uint32_t c = 0; c < pCur->n_cols; c++)
      pCur->check_cols[c] = (plan->col_used >> (c < 63 ? c : 63)) & 1;
  }
  return SQLITE_OK;
}

int csx_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  csx_cursor *pCur = (csx_cursor *)cur;
  csx_table *pTab = (csx_table *)cur->pVtab;
  (void)idxNum;
  csx_plan plan;
  int rc = csx_plan_decode(idxStr, &plan);
  if (rc == SQLITE_OK) rc = filter_reset(pCur, pTab, &plan);
  if (rc != SQLITE_OK) return rc;
  /* a _rows/_mask term the plan could not take (colstore_plan.c) */
  if (plan.refuse) return csx_plan_refuse_input(&pTab->base, "table", pTab->zName);
  memset(&pCur->stats, 0, sizeof pCur->stats);
  csx_selection *sel = &pCur->sel;
  rc = csx_selection_build(sel, &pTab->base, pTab->db, pTab->zName, pCur->snap, &plan, argc, argv,
                           pCur->check ? pCur->check_cols : NULL);
  if (rc != SQLITE_OK) return rc;
  pCur->stats.sorted_ranges = sel->sorted_ranges;
  limit_offset(pCur, &plan, argc, argv);
  pCur->desc = plan.desc;
  pCur->n_pos = 0;
  pCur->used_mask_route = pCur->used_rows_route = false;
  /* The selection's shape. */
  bool ordered = plan.n_keys > 0, indexed = false;
  if (!sel->in_list && !sel->rows_blob && sel->n_preds && !sel->never &&
      (rc = select_indexed(pCur, &plan, ordered, &indexed)) != SQLITE_OK)
    return rc;
  if (indexed)
    ;
  else if (sel->in_list || sel->rows_blob)
    rc = select_list(pCur, &plan, ordered);
  else if (ordered)
    rc = select_ordered(pCur, &plan, sel->lo, sel->hi);
  else if (sel->n_preds || sel->user_mask)
    rc = select_filtered(pCur, &plan, sel->lo, sel->hi);
  else
    select_range(pCur, sel->lo, sel->hi);
  if (rc != SQLITE_OK) return rc;
  pCur->stats.shape = pCur->shape == SEL_RANGE ? "range" : pCur->shape == SEL_FILTERED ? "filtered" : "list";
  pCur->stats.n_preds = sel->n_preds;
  pCur->stats.idx = idxStr;
  if (pCur->left == 0) {
    pCur->eof = true;
    return SQLITE_OK;
  }
  start(pCur);
  if (pCur->check_rc) return pCur->check_rc;
  if (!pCur->eof) pCur->stats.rows_selected++;
  return SQLITE_OK;
}

int csx_next(sqlite3_vtab_cursor *cur) {
  csx_cursor *pCur = (csx_cursor *)cur;
  if (pCur->left != UINT64_MAX && --pCur->left == 0) {
    pCur->eof = true;
    return SQLITE_OK;
  }
  if (pCur->shape == SEL_RANGE && !pCur->desc) {
    /* the full-scan path, kept to a compare and an increment */
    if (++pCur->row >= pCur->hi) {
      pCur->eof = true;
      return SQLITE_OK;
    }
    if (pCur->row >= pCur->rec_end) range_seek(pCur, pCur->row);
    if (pCur->rec_dels && range_deleted(pCur)) range_live(pCur);
  } else {
    step(pCur);
    while (pCur->repeat && !pCur->eof && pCur->repeat[pCur->bufs[pCur->cur].list_base + pCur->at]) step(pCur);
  }
  if (pCur->check_rc) return pCur->check_rc;
  pCur->stats.rows_selected += !pCur->eof;
  return SQLITE_OK;
}

int csx_eof(sqlite3_vtab_cursor *cur) { return ((const csx_cursor *)cur)->eof; }

/* Element k of an array of fixed-width type t, as SQLite's value. */
static void result_fixed(sqlite3_context *ctx, cs_type t, const void *d, uint64_t k) {
  switch (t) {
    case CS_TYPE_FLOAT64: sqlite3_result_double(ctx, ((const double *)d)[k]); break;
    case CS_TYPE_INT64: sqlite3_result_int64(ctx, ((const int64_t *)d)[k]); break;
    case CS_TYPE_INT32: sqlite3_result_int64(ctx, ((const int32_t *)d)[k]); break;
    case CS_TYPE_FLOAT32: sqlite3_result_double(ctx, ((const float *)d)[k]); break;
    case CS_TYPE_INT16: sqlite3_result_int64(ctx, ((const int16_t *)d)[k]); break;
    case CS_TYPE_INT8: sqlite3_result_int64(ctx, ((const int8_t *)d)[k]); break;
    case CS_TYPE_UINT32: sqlite3_result_int64(ctx, ((const uint32_t *)d)[k]); break;
    case CS_TYPE_UINT16: sqlite3_result_int64(ctx, ((const uint16_t *)d)[k]); break;
    case CS_TYPE_UINT8: sqlite3_result_int64(ctx, ((const uint8_t *)d)[k]); break;
    case CS_TYPE_BOOL: sqlite3_result_int64(ctx, ((const uint8_t *)d)[k] != 0); break;
    default: break;
  }
}

/* A FILTERED batch's column that the kernel did not fill because the query
** only seemed to need it for a predicate colstore consumed (SQLite sets
** colUsed for every column the statement names, WHERE included):
** gathered now, through the batch's positions, and by the kernel from the
** next batch the cursor plans. */
static const uint8_t *gather_on_demand(csx_cursor *pCur, uint32_t col) {
  current_row(pCur); /* the batch's positions */
  const cs_gather_target *g = &pCur->bufs[pCur->cur].targets[pCur->col_target[col]];
  cs_gather_sorted(pCur->store, col, pCur->bufs[pCur->cur].pos, pCur->n_batch, g->out, g->out_valid);
  pCur->col_buf[col] = g->out;
  pCur->col_valid[col] = g->out_valid;
  pCur->col_lazy[col] = 0;
  pCur->used_rows_route = true;
  pCur->stats.kernels = filtered_kernels(pCur);
  return g->out;
}

struct pos_at {
  uint64_t row, i; /* pos[i] == row */
};

static int cmp_pos_at(const void *a, const void *b) {
  const struct pos_at *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* xColumn was called with the nochange flag: an UPDATE reads this cursor.
** A _rows list marks its repeated positions (an earlier entry has the
** same one), which xNext then steps over: the entries before the current
** one were delivered already, and a repeat of one that SQLite's own
** conditions rejected would be rejected as well. */
static int updating_start(csx_cursor *pCur) {
  pCur->updating = true;
  if (!pCur->rows_list || pCur->n_pos < 2) return SQLITE_OK;
  struct pos_at *a = sqlite3_malloc64(pCur->n_pos * sizeof *a);
  if (!a) return SQLITE_NOMEM;
  for (uint64_t i = 0; i < pCur->n_pos; i++) a[i] = (struct pos_at){pCur->pos[i], i};
  qsort(a, pCur->n_pos, sizeof *a, cmp_pos_at);
  int rc = SQLITE_OK;
  for (uint64_t k = 1; k < pCur->n_pos && rc == SQLITE_OK; k++) {
    if (a[k].row != a[k - 1].row) continue;
    if (!pCur->repeat) {
      if (!(pCur->repeat = sqlite3_malloc64(pCur->n_pos))) {
        rc = SQLITE_NOMEM;
        break;
      }
      memset(pCur->repeat, 0, pCur->n_pos);
    }
    pCur->repeat[a[k].i] = 1;
  }
  sqlite3_free(a);
  return rc;
}

/* _rows and _mask read as the BLOB this cursor was filtered by, so that
** SQLite's re-check of `_rows = ?` (a MULTI-INDEX OR plan makes one after
** each branch's row) is true exactly for the rows the cursor produced.  A
** cursor not filtered by the column has no value to give: that is an
** error, never a NULL that would make the re-check drop every row
** (colstore_plan.c keeps such plans out of reach). */
static int hidden_column(csx_cursor *pCur, sqlite3_context *ctx, int h) {
  /* An UPDATE that leaves it be (every UPDATE: SET _rows is refused by
  ** xUpdate), first, so that xUpdate sees the column unchanged rather than
  ** the BLOB the rows were selected by. */
  if (sqlite3_vtab_nochange(ctx)) return pCur->updating ? SQLITE_OK : updating_start(pCur);
  const uint8_t *p = h == CSX_HIDDEN_ROWS ? pCur->sel.user_rows : pCur->sel.user_mask;
  uint64_t n = h == CSX_HIDDEN_ROWS ? pCur->sel.user_rows_bytes : pCur->sel.user_mask_bytes;
  if (p) {
    sqlite3_result_blob64(ctx, p, n, SQLITE_STATIC);
    return SQLITE_OK;
  }
  csx_selection_input_read_error(ctx, "table", ((csx_table *)pCur->base.pVtab)->zName,
                                 h == CSX_HIDDEN_ROWS ? "_rows" : "_mask");
  return SQLITE_ERROR;
}

int csx_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
  csx_cursor *pCur = (csx_cursor *)cur;
  if ((uint32_t)i >= pCur->n_cols) return hidden_column(pCur, ctx, i - (int)pCur->n_cols);
  /* An UPDATE that does not SET the column: no value is read, and xUpdate
  ** sees it unchanged (checked only in a writing transaction, so reads pay
  ** one load). */
  if (((const csx_table *)cur->pVtab)->in_write && sqlite3_vtab_nochange(ctx))
    return pCur->updating ? SQLITE_OK : updating_start(pCur);
  cs_type t = pCur->cols[i].type;
  if (pCur->shape != SEL_RANGE) {
    const uint8_t *buf = pCur->col_buf[i];
    if (!buf && pCur->col_target[i] >= 0) buf = gather_on_demand(pCur, (uint32_t)i);
    if (buf) {
      const uint8_t *valid = pCur->col_valid[i];
      if (!valid || valid[pCur->at]) result_fixed(ctx, t, buf, pCur->at);
      return SQLITE_OK;
    }
    seek_record(pCur, current_row(pCur)); /* TEXT, BLOB: in place */
  }
  const cs_chunk *ch = &pCur->chunks[i];
  uint64_t k = pCur->row - pCur->rec_first;
  if (!cs_chunk_is_valid(ch, k)) return SQLITE_OK;
  if (t != CS_TYPE_TEXT && t != CS_TYPE_BLOB) {
    result_fixed(ctx, t, ch->data, k);
    return SQLITE_OK;
  }
  const uint8_t *p;
  uint64_t len;
  cs_err err;
  if (cs_chunk_varlen(ch, k, &p, &len, &err) != CS_OK) {
    sqlite3_result_error(ctx, err.msg, -1);
    sqlite3_result_error_code(ctx, SQLITE_CORRUPT);
    return SQLITE_CORRUPT;
  }
  if (t == CS_TYPE_TEXT)
    sqlite3_result_text64(ctx, (const char *)p, len, SQLITE_STATIC, SQLITE_UTF8);
  else
    sqlite3_result_blob64(ctx, p, len, SQLITE_STATIC);
  return SQLITE_OK;
}

int csx_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid) {
  csx_cursor *pCur = (csx_cursor *)cur;
  if (pCur->distinct_watch) {
    int rc = distinct_fall_back(pCur);
    if (rc != SQLITE_OK) return rc;
  }
  *pRowid = (sqlite3_int64)current_row(pCur);
  return SQLITE_OK;
}
