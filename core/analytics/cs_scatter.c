/*
** cs_scatter.c - grouped and sorted delivery by scatter: the rows of a
** counting sort's output window, read in input order and written to their
** output slots, instead of gathered through the sorted positions.
**
** HOW IT WORKS
**
** cs_order_count gives each input row its code and each code the output
** index of its first row (starts), so the row at input index i goes to
** slot starts[code] + (the rows of its code before i): exactly the order
** cs_order_rows' counting sort delivers, ties by input index.  A call
** fills the output window [j0, j0 + n_out): it walks the input in order, a
** block at a time, keeps the rows whose slot falls in the window (a code
** outside the window's codes is one compare), gathers each column at those
** rows into a small staging block with the sorted-walk kernel
** (cs__gather_sorted_span: ascending positions read in order, prefetched
** ahead), and copies each staged value to its slot.  The window's output
** positions are written the same way, so xRowid and the TEXT columns read
** in place keep working.  The input may be a range given by its first row
** (no positions array at all: a table scan's 80 MB at 10M rows).
**
** Why: with a few thousand groups, the gather in sorted order reads every
** column at random (GROUP BY b over 10M rows: two 80 MB columns read one
** cache and TLB miss per value); the scatter reads them in position order
** (sequential when the input is ascending, the hardware prefetcher's
** case) and writes to one stream per code, which stay in cache while the
** codes are few.  The output is a function of the inputs alone: the same
** bytes for any window split and any thread count.
**
** The decision a newcomer would question: why a window, not the whole
** output at once.  A window is what the cursor's batch buffers hold: one
** pass over the input fills one batch, so memory stays that of a batch;
** a window as large as the output is one pass into a full materialization
** (rows x bytes per row).  The cursor picks the size (colstore_cursor.c,
** docs/performance.md "GROUP BY delivery by scatter" for the numbers).
**
** THREADING: on the kernel team the input is cut into chunks; a first
** pass counts each chunk's rows per code of the window, the counts are
** prefix-summed code by code, chunk by chunk (as cs_order's counting sort
** does), and each chunk then scatters from its own cursors: the slots do
** not depend on which member ran which chunk.  Windows of more than
** SCATTER_TEAM_CODES codes run on one thread (the per-chunk counts would
** leave the cache).
*/
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"

/* Input rows examined per staging block (the block's positions, slots and
** one column's values stay in L1: 1024 * (8 + 4 + 8 + 1) bytes). */
#define SCATTER_BLOCK 1024u
/* The team's per-chunk cursors: at most this many codes, this many chunks. */
#define SCATTER_TEAM_CODES 65536u
#define SCATTER_TEAM_CHUNKS 64u

/* One call's window and inputs, shared by the chunks of a team run. */
typedef struct scatter_job {
  const cs_store *s;
  const uint64_t *rows; /* NULL: first + i */
  uint64_t first;
  const uint32_t *codes;
  uint64_t n;
  uint64_t j0, n_out;     /* the window */
  uint32_t c_lo, n_codes; /* the window's codes: [c_lo, c_lo + n_codes) */
  uint64_t *out_rows;     /* window positions, or NULL */
  const cs_gather_target *targets;
  uint32_t n_targets;
  uint64_t chunk;    /* team: input rows per chunk */
  uint32_t *cursors; /* team: per chunk n_codes output cursors */
} scatter_job;

/* Copies staged values [0, m) of width W to out[slot[k]]. */
CS__INLINE void scatter_body(size_t W, const uint8_t *restrict stage, const uint32_t *restrict slot,
                             uint64_t m, uint8_t *restrict out) {
  for (uint64_t k = 0; k < m; k++) memcpy(out + (uint64_t)slot[k] * W, stage + k * W, W);
}

static void scatter_part(size_t w, const uint8_t *stage, const uint32_t *slot, uint64_t m, uint8_t *out) {
#define SCATTER_CALL(W) scatter_body(W, stage, slot, m, out)
  CS__WIDTH_SWITCH(w, SCATTER_CALL);
#undef SCATTER_CALL
}

/* Input rows [i0, i1) into the window, cur[c - c_lo] being the next output
** index of code c. */
static void scatter_span(const scatter_job *J, uint64_t i0, uint64_t i1, uint32_t *cur) {
  uint64_t sel[SCATTER_BLOCK];
  uint32_t slot[SCATTER_BLOCK];
  uint64_t stage[SCATTER_BLOCK];
  uint8_t vstage[SCATTER_BLOCK];
  for (uint64_t b0 = i0; b0 < i1; b0 += SCATTER_BLOCK) {
    uint64_t b1 = b0 + SCATTER_BLOCK < i1 ? b0 + SCATTER_BLOCK : i1, m = 0;
    for (uint64_t i = b0; i < b1; i++) {
      uint32_t c = J->codes[i] - J->c_lo;
      if (c >= J->n_codes) continue;
      uint64_t j = cur[c]++ - J->j0;
      if (j >= J->n_out) continue;
      sel[m] = J->rows ? J->rows[i] : J->first + i;
      slot[m++] = (uint32_t)j;
    }
    if (m == 0) continue;
    if (J->out_rows)
      for (uint64_t k = 0; k < m; k++) J->out_rows[slot[k]] = sel[k];
    for (uint32_t t = 0; t < J->n_targets; t++) {
      const cs_gather_target *g = &J->targets[t];
      size_t w = cs_type_width(J->s->cols[g->col].type);
      uint8_t *ov = g->out_valid;
      int pf = cs_kernel_prefetch_for(cs_regime_of(true, cs_store_rows(J->s) * w));
      cs__gather_sorted_span(J->s, g->col, pf, sel, 0, m, stage, ov ? vstage : NULL);
      scatter_part(w, (const uint8_t *)stage, slot, m, g->out);
      if (ov)
        for (uint64_t k = 0; k < m; k++) ov[slot[k]] = vstage[k];
    }
  }
}

/* Team pass one: chunk ch's rows per window code. */
static void scatter_count_chunk(void *ctx, uint64_t ch, int member) {
  (void)member;
  const scatter_job *J = ctx;
  uint32_t *h = J->cursors + ch * J->n_codes;
  uint64_t i0, i1;
  cs__team_span(ch, J->chunk, J->n, &i0, &i1);
  for (uint64_t i = i0; i < i1; i++) {
    uint32_t c = J->codes[i] - J->c_lo;
    if (c < J->n_codes) h[c]++;
  }
}

/* Team pass two: chunk ch scattered from its own cursors. */
static void scatter_chunk(void *ctx, uint64_t ch, int member) {
  (void)member;
  const scatter_job *J = ctx;
  uint64_t i0, i1;
  cs__team_span(ch, J->chunk, J->n, &i0, &i1);
  scatter_span(J, i0, i1, J->cursors + ch * J->n_codes);
}

/* The code whose output indices hold j (starts non-decreasing, j < n):
** the last code with starts[code] <= j. */
static uint32_t code_of_slot(const cs_order_counts *k, uint64_t j) {
  uint32_t lo = 0, hi = k->n_codes; /* starts[lo] <= j < starts[hi] */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (k->starts[mid] <= j)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

int cs_scatter_rows(const cs_store *s, const uint64_t *rows, uint64_t first, uint64_t n,
                    const cs_order_counts *counts, uint64_t j0, uint64_t n_out, uint64_t *out_rows,
                    const cs_gather_target *targets, uint32_t n_targets, uint32_t *scratch, int max_threads) {
  assert(j0 <= n && n_out <= n - j0 && counts->starts[counts->n_codes] == n);
  if (n_out == 0) return 1;
  scatter_job J = {.s = s,
                   .rows = rows,
                   .first = first,
                   .codes = counts->codes,
                   .n = n,
                   .j0 = j0,
                   .n_out = n_out,
                   .out_rows = out_rows,
                   .targets = targets,
                   .n_targets = n_targets};
  uint32_t c_lo = code_of_slot(counts, j0), c_hi = code_of_slot(counts, j0 + n_out - 1);
  J.c_lo = c_lo, J.n_codes = c_hi - c_lo + 1;
  int threads = cs_kernel_threads(n); /* one below CS_PARALLEL_MIN_ELEMENTS */
  if (max_threads > 0 && threads > max_threads) threads = max_threads;
  if (threads > 1 && J.n_codes <= SCATTER_TEAM_CODES) {
    J.chunk = cs__team_chunk(n, threads, 1u << 16, SCATTER_BLOCK, SCATTER_TEAM_CHUNKS);
    uint64_t n_chunks = (n + J.chunk - 1) / J.chunk;
    /* The per-chunk cursors; without them, one thread on the caller's. */
    J.cursors = cs__mem_calloc(n_chunks * J.n_codes, sizeof *J.cursors);
    if (J.cursors) {
      cs__team_run(threads, n_chunks, scatter_count_chunk, &J);
      for (uint32_t c = 0; c < J.n_codes; c++) {
        uint32_t at = counts->starts[c_lo + c];
        for (uint64_t k = 0; k < n_chunks; k++) {
          uint32_t x = J.cursors[k * J.n_codes + c];
          J.cursors[k * J.n_codes + c] = at;
          at += x;
        }
      }
      int used = cs__team_run(threads, n_chunks, scatter_chunk, &J);
      cs__mem_free(J.cursors);
      return used;
    }
  }
  memcpy(scratch, counts->starts + c_lo, J.n_codes * sizeof *scratch);
  scatter_span(&J, 0, n, scratch);
  return 1;
}
