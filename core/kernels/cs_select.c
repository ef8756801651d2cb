/*
** cs_select.c - a scan cursor's batch as one kernel: predicates to a mask,
** the mask counted, the selected rows of the used columns gathered into
** buffers, chunk by chunk on the kernels' team.
**
** WHY ONE KERNEL.  The cursor used to call the kernels one after another
** for every batch: cs_pred_eval, cs_mask_count, cs_mask_to_rows, each a
** parallel region of its own, and then read the values in place, row by
** row, as SQLite asked for them.  Three forks and joins per batch, and each
** join waits for the slowest thread.  Here the batch is cut into chunks
** (cs_team.c) and everything is done chunk by chunk in two team runs:
** evaluate and count every chunk; then, with each chunk's place in the
** output known from the counts before it, compact and gather every chunk's
** rows into place.  The calling thread starts both at once and a helper
** that wakes late only takes what is left (docs/performance.md, "Helpers
** slow to wake"), so no step waits for a thread the scheduler has not run.
**
** MASK OR POSITIONS.  Between the two runs the caller knows the batch's
** density and takes one decision for every chunk: at or above the mask
** gate (the calibrated density from which mask-native wins, colstore_config
** 'mask_gate', default 0 = always) each column is gathered straight from
** the mask, word at a time (cs_mask.c); below it, the span's positions are
** compacted first and each column walked with the sorted cursor
** (cs_gather.c), which touches only the cache lines that hold selected
** rows.  Positions are also compacted when the caller wants them (for the
** rowid, or for TEXT columns read in place); otherwise, with the mask
** route, they are never computed at all: `count(*) WHERE a > 0.99` is an
** evaluation and a count.
**
** Lists of positions (rowid IN, _rows) have no mask; cs_select_rows gathers
** them in one region too, finding each row's record once (bins) for all the
** columns when the list is unordered.  A scattered row costs a cache miss
** or more per column, some fifty times the work of a row in a sequential
** scan, so a list is threaded at a proportionally smaller size
** (CS__SCATTER_WEIGHT).
**
** Both write only the targets' first n_selected elements, in row order (the
** list's order for cs_select_rows), byte-identical for any thread count.
*/
#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"

/* A scattered (list) element against a sequential one, for the thread
** count: a DRAM miss (~80 ns here, ~30 with the misses overlapped) against
** ~1 ns per element of a scan.  For cache-resident columns the miss is
** cheap and the list is weighted like a scan. */
#define CS__SCATTER_WEIGHT 32u

struct cs_selector {
  const cs_store *s;
  cs__pred_set *preds;
};

cs_rc cs_selector_new(const cs_store *s, const cs_pred *preds, uint32_t n_preds, cs_selector **out,
                      cs_err *err) {
  *out = NULL;
  cs_selector *sel = cs__mem_calloc(1, sizeof *sel);
  if (!sel) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a selector");
  sel->s = s;
  cs_rc rc = cs__pred_set_compile(s, preds, n_preds, &sel->preds, err);
  if (rc != CS_OK) {
    cs__mem_free(sel);
    return rc;
  }
  *out = sel;
  return CS_OK;
}

void cs_selector_free(cs_selector *sel) {
  if (!sel) return;
  cs__pred_set_free(sel->preds);
  cs__mem_free(sel);
}

const cs__pred_set *cs__selector_preds(const cs_selector *sel) { return sel->preds; }
const cs_store *cs__selector_store(const cs_selector *sel) { return sel->s; }

uint64_t cs_selector_keep_rows(const cs_selector *sel, const uint8_t *user_mask, uint64_t *rows, uint64_t n) {
  const cs_store *s = sel->s;
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t row = rows[i], r = cs__locate(s, row);
    if ((!user_mask || user_mask[row]) && cs__pred_set_row(sel->preds, r, row - s->first_rows[r]))
      rows[k++] = row;
  }
  return k;
}

/* The prefetch distances for walking a column through sorted positions,
** by element width (1, 2, 4, 8 bytes -> index 0..3): the regime depends on
** the column's bytes, so on its width alone within one store.  Read on the
** calling thread, like every kernel setting, and without allocating. */
typedef struct width_prefetch {
  int pf[4];
} width_prefetch;

static width_prefetch sorted_prefetch(const cs_store *s) {
  width_prefetch p;
  for (int k = 0; k < 4; k++) p.pf[k] = cs_kernel_prefetch_for(cs_regime_of(true, s->n_rows << k));
  return p;
}

static int width_index(size_t w) { return w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : 3; }

/* Everything one thread does for its span [i0, i1) of the batch, after
** the counts of all spans are known: off is where its output starts. */
static void select_fill(const cs_selector *sel, cs_select_batch *b, const width_prefetch *pf, bool by_mask,
                        uint64_t i0, uint64_t i1, uint64_t off, uint64_t count) {
  if (count == 0) return;
  const cs_store *s = sel->s;
  bool rows = !by_mask || b->want_rows;
  if (rows) cs__mask_rows_span(b->mask, i0, i1, b->first, b->rows + off, count);
  for (uint32_t t = 0; t < b->n_targets; t++) {
    const cs_gather_target *g = &b->targets[t];
    size_t w = cs_type_width(s->cols[g->col].type);
    uint8_t *ov = g->out_valid ? g->out_valid + off : NULL;
    if (by_mask)
      cs__mask_gather_span(s, g->col, b->mask, b->first, i0, i1, (uint8_t *)g->out + off * w, ov, count);
    else
      cs__gather_sorted_span(s, g->col, pf->pf[width_index(w)], b->rows + off, 0, count,
                             (uint8_t *)g->out + off * w, ov);
  }
}

/* The span's mask: predicates, then the caller's mask ANDed in.  When the
** zone maps rule out the whole span, the mask is not written at all (*bare
** set): at 10M rows `a > 2` cost 3.7 ms of memset for nothing selected. */
static uint64_t select_eval(const cs_selector *sel, cs_select_batch *b, uint64_t i0, uint64_t i1,
                            uint64_t *scanned, uint64_t *skipped, bool *bare) {
  *bare = cs__pred_set_span_empty(sel->preds, b->first, i0, i1, b->count_from, skipped);
  if (*bare) return 0;
  cs__pred_set_eval_span(sel->preds, b->first, i0, i1, b->mask, b->count_from, scanned, skipped);
  if (b->user_mask)
    for (uint64_t i = i0; i < i1; i++) b->mask[i] = (uint8_t)(b->mask[i] && b->user_mask[i]);
  /* Deleted positions are never selected (a NULL test when none). */
  cs_store_mask_deleted(sel->s, b->first + i0, i1 - i0, b->mask + i0);
  return cs__mask_count_span(b->mask + i0, i1 - i0);
}

/* The mask route: at or above the gate's density, or when there is
** nothing to gather (then positions are made only if wanted). */
static bool gate_passed(const cs_select_batch *b, uint64_t total) {
  return b->n_targets == 0 || (double)total >= b->mask_gate * (double)b->n;
}

/* Chunks of a batch: counts per chunk live on the stack. */
#define CS__SELECT_MAX_CHUNKS 1024u
/* The smallest chunk: ~20 us of evaluation, against one claim. */
#define CS__SELECT_MIN_CHUNK 32768u

typedef struct range_job {
  const cs_selector *sel;
  cs_select_batch *b;
  const width_prefetch *pf;
  uint64_t chunk;
  uint64_t counts[CS__SELECT_MAX_CHUNKS]; /* selected rows per chunk */
  bool bare[CS__SELECT_MAX_CHUNKS];       /* ruled out by the zone maps, mask not written */
  uint64_t offs[CS__SELECT_MAX_CHUNKS];   /* where each chunk's output starts */
  bool by_mask;
  _Atomic uint64_t scanned, skipped;
} range_job;

static void range_eval_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  range_job *j = ctx;
  uint64_t i0, i1, scanned = 0, skipped = 0;
  cs__team_span(c, j->chunk, j->b->n, &i0, &i1);
  j->counts[c] = select_eval(j->sel, j->b, i0, i1, &scanned, &skipped, &j->bare[c]);
  if (scanned) atomic_fetch_add_explicit(&j->scanned, scanned, memory_order_relaxed);
  if (skipped) atomic_fetch_add_explicit(&j->skipped, skipped, memory_order_relaxed);
}

static void range_fill_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  range_job *j = ctx;
  uint64_t i0, i1;
  cs__team_span(c, j->chunk, j->b->n, &i0, &i1);
  select_fill(j->sel, j->b, j->pf, j->by_mask, i0, i1, j->offs[c], j->counts[c]);
}

void cs_select_range(const cs_selector *sel, cs_select_batch *b) {
  const cs_store *s = sel->s;
  b->n_selected = 0, b->by_mask = false, b->rows_filled = false, b->threads = 1;
  b->records_scanned = b->records_skipped = 0;
  if (b->n == 0) return;
  assert(b->first < s->n_rows && b->n <= s->n_rows - b->first);
  width_prefetch pfw = sorted_prefetch(s), *pf = &pfw;
  int threads = cs_kernel_threads(b->n);
  if (b->max_threads > 0 && threads > b->max_threads) threads = b->max_threads;
  uint64_t total = 0;
  bool by_mask;
  /* Counts per chunk; out of memory for them, one thread needs none. */
  range_job *j = threads > 1 ? cs__mem_malloc(sizeof *j) : NULL;
  bool bare = false;
  if (!j) {
    total = select_eval(sel, b, 0, b->n, &b->records_scanned, &b->records_skipped, &bare);
    by_mask = gate_passed(b, total);
    select_fill(sel, b, pf, by_mask, 0, b->n, 0, total);
  } else {
    /* Two team runs: evaluate and count each chunk; then, with every
    ** chunk's place known, compact and gather each into place. */
    j->sel = sel, j->b = b, j->pf = pf;
    j->chunk = cs__team_chunk(b->n, threads, CS__SELECT_MIN_CHUNK, 64, CS__SELECT_MAX_CHUNKS);
    atomic_init(&j->scanned, 0);
    atomic_init(&j->skipped, 0);
    uint64_t n_chunks = (b->n + j->chunk - 1) / j->chunk;
    int used = cs__team_run(threads, n_chunks, range_eval_chunk, j);
    for (uint64_t c = 0; c < n_chunks; c++) j->offs[c] = total, total += j->counts[c];
    /* With rows selected the caller may read the whole mask (positions
    ** made later): the chunks left bare get their zeros now. */
    for (uint64_t c = 0; total > 0 && c < n_chunks; c++)
      if (j->bare[c]) {
        uint64_t i0, i1;
        cs__team_span(c, j->chunk, b->n, &i0, &i1);
        memset(b->mask + i0, 0, i1 - i0);
      }
    by_mask = j->by_mask = gate_passed(b, total);
    bool fill = b->n_targets > 0 || !by_mask || b->want_rows;
    int used2 = fill && total > 0 ? cs__team_run(threads, n_chunks, range_fill_chunk, j) : 1;
    b->records_scanned = atomic_load_explicit(&j->scanned, memory_order_relaxed);
    b->records_skipped = atomic_load_explicit(&j->skipped, memory_order_relaxed);
    b->threads = used > used2 ? used : used2;
    cs__mem_free(j);
  }
  b->n_selected = total, b->by_mask = by_mask, b->rows_filled = !by_mask || b->want_rows;
}

/* ------------------------------------------------------------------ lists */

/* pf: the prefetch distance (read on the calling thread, like every
** kernel's settings). */
static void rows_fill(const cs_store *s, const uint64_t *rows, uint64_t i0, uint64_t i1, bool ascending,
                      int pf, uint32_t *bins, const cs_gather_target *targets, uint32_t n_targets) {
  if (i0 >= i1) return;
  if (!ascending) cs__bins_span(s, rows, i0, i1, bins);
  for (uint32_t t = 0; t < n_targets; t++) {
    const cs_gather_target *g = &targets[t];
    if (ascending)
      cs__gather_sorted_span(s, g->col, pf, rows, i0, i1, g->out, g->out_valid);
    else
      cs__gather_binned_span(s, g->col, pf, rows, bins, i0, i1, g->out, g->out_valid);
  }
}

/* The smallest chunk of a list: a few microseconds of cache misses. */
#define CS__ROWS_MIN_CHUNK 1024u

typedef struct rows_job {
  const cs_store *s;
  const uint64_t *rows;
  uint64_t n;
  bool ascending;
  int pf;
  uint32_t *bins;
  const cs_gather_target *targets;
  uint32_t n_targets;
  uint64_t chunk;
} rows_job;

static void rows_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  const rows_job *j = ctx;
  uint64_t i0, i1;
  cs__team_span(c, j->chunk, j->n, &i0, &i1);
  rows_fill(j->s, j->rows, i0, i1, j->ascending, j->pf, j->bins, j->targets, j->n_targets);
}

int cs_select_rows(const cs_store *s, const uint64_t *rows, uint64_t n, bool ascending, uint32_t *bins,
                   const cs_gather_target *targets, uint32_t n_targets, int max_threads) {
  if (n == 0 || n_targets == 0) return 1;
  assert(s->n_records <= UINT32_MAX);
  uint64_t widest = 0;
  for (uint32_t t = 0; t < n_targets; t++) {
    uint64_t bytes = s->n_rows * cs_type_width(s->cols[targets[t].col].type);
    if (bytes > widest) widest = bytes;
  }
  int pf = cs_kernel_prefetch_for(cs_regime_of(ascending, widest));
  uint64_t weight = widest > cs_fingerprint_llc_bytes() ? CS__SCATTER_WEIGHT : 1;
  int threads = cs_kernel_threads(n * n_targets * weight);
  if (max_threads > 0 && threads > max_threads) threads = max_threads;
  if (threads <= 1) {
    rows_fill(s, rows, 0, n, ascending, pf, bins, targets, n_targets);
    return 1;
  }
  rows_job j = {s,         rows,      n,
                ascending, pf,        bins,
                targets,   n_targets, cs__team_chunk(n, threads, CS__ROWS_MIN_CHUNK, 64, 0)};
  int used = cs__team_run(threads, (n + j.chunk - 1) / j.chunk, rows_chunk, &j);
  return used;
}
