/*
** cs_gather.c - the gather kernels: copy the values of selected rows of one
** fixed-width column into a caller-owned buffer.
**
** A store is a list of records, each holding every column as one array
** (s->chunks[rec * n_cols + col].data), and s->first_rows[] is the segment
** table that maps a row to its record.  Each selection shape gets the
** kernel the kernel study measured best for it:
**
**   cs_gather_range     rows [first, first + n): one memcpy per record,
**                       serial, because memcpy is already bandwidth-bound.
**   cs_gather_strided   first + i * step: positions computed, a record
**                       cursor moving in the step direction, no index array.
**   cs_gather_sorted    a record cursor walk, O(n + records) on sorted input;
**                       any other order stays correct (a backward step or a
**                       far jump re-locates by search), so sortedness is a
**                       speed hint, never a safety condition.
**   cs_gather_rows      any order: each row located by the branchless search
**                       over first_rows, or by a multiply-high when the
**                       records are uniform (cs__store_uniform_init, store/cs_store.c).
**   cs_bins_compute +   the record of each row found once and reused by
**   cs_gather_rows_binned  every column of a multi-column read.
**
** Every kernel that threads splits the output into contiguous ranges, one
** per thread, and each thread locates its own first row; the values written
** do not depend on the split, so the output is byte-identical for any
** thread count.  NULLs are not special here: a NULL slot holds whatever
** bytes the writer stored there (zeros), and out_valid says which it is.
**
** Two helpers a newcomer might question.  The scattered kernels (rows,
** binned) build a per-call table of record base addresses, base[r] + row *
** width, when the call has at least as many elements as the store has
** records: the table is O(records) to build, and per element it replaces
** a load from a 64-byte cs_chunk at a stride of n_cols and a multiply with
** one load from a compact array, which took an 8M-row uniform gather from
** 0.71x to 1.0x of a raw random-load loop over a flat array.  And the
** sorted walk runs a second cursor `prefetch` elements ahead of the first,
** because with small records the walk crosses a record boundary every few
** rows and the hardware prefetcher loses the stream at each one (1.4x on
** records of 16-48 rows; see cs_kernels_internal.h for the distances).
** With prefetch "auto", each gather asks cs_kernel_prefetch_for() for the
** distance of its regime (column bytes against the LLC, sorted or not):
** the calibrated one, else those defaults.
*/
#include <assert.h>
#include <stdlib.h>

#include "cs_kernels_internal.h"

/* ---------------------------------------------------------------- layout */

/* Magic-number division (Granlund-Montgomery, round-up variant): for rows
** below 2^N and d = uniform_rows with 2^(l-1) < d <= 2^l, any p >= N + l
** and M = ceil(2^p / d) give floor(row * M / 2^p) == row / d exactly, since
** M * d - 2^p < d <= 2^(p - N).  Taking p >= 64 makes the quotient the high
** word of one 64x64-bit multiply, shifted right by p - 64; the layout is
** used only when M fits in 64 bits (not for d = 1, which no writer makes). */
/* The store's segment table, copied into locals once per call so the inner
** loops keep it in registers (stores through uint8_t pointers may alias
** anything, so fields read through s would be reloaded every element). */
typedef struct seg_table {
  const uint64_t *first_rows; /* n_records + 1 entries */
  uint64_t n_records;
  uint64_t per, magic; /* uniform layout (per == 0: irregular) */
  uint32_t shift;
  const cs_chunk *cc; /* &chunks[col]; record r's chunk is cc[r * nc] */
  uint32_t nc;
  const uintptr_t *bases; /* optional: bases[r] + row * width addresses row (in record r) */
} seg_table;

static seg_table seg_table_of(const cs_store *s, uint32_t col) {
  seg_table t = {s->first_rows,    s->n_records,    s->uniform_rows,  s->uniform_magic,
                 s->uniform_shift, s->chunks + col, s->schema.n_cols, NULL};
  return t;
}

/* A per-call table of record base addresses, so that base[r] + row * w is
** the address of row's value: the scattered kernels then load one word per
** element from a compact table instead of a cs_chunk field at a stride of
** n_cols * 64 bytes, and skip the rebasing multiply.  Built only when the
** call has at least as many elements as the store has records (O(records)
** to build) and NULL if that allocation fails (the kernels then read the
** chunks).  The addresses are integers, so the rebased base of a record
** that is not the first may point outside any object without that ever
** being a C pointer. */
static uintptr_t *record_bases(seg_table t, size_t w, uint64_t n) {
  if (n < t.n_records) return NULL;
  uintptr_t *b = cs__mem_malloc(t.n_records * sizeof *b);
  if (!b) return NULL;
  for (uint64_t r = 0; r < t.n_records; r++)
    b[r] = (uintptr_t)(t.cc + r * t.nc)->data - (uintptr_t)(t.first_rows[r] * w);
  return b;
}

CS__INLINE uint64_t seg_find(seg_table t, uint64_t row) {
  return cs__find_record(t.first_rows, t.n_records, row);
}

CS__INLINE uint64_t seg_divide(seg_table t, uint64_t row) {
  return (uint64_t)(((cs__u128)row * t.magic) >> 64) >> t.shift;
}

/* A record cursor: the state of the record the walk is in, hoisted out of
** the per-element loop. */
typedef struct seg_cursor {
  uint64_t r, lo, hi;      /* record r holds rows [lo, hi) */
  const uint8_t *data;     /* its values */
  const uint8_t *validity; /* its bitmap, or NULL */
} seg_cursor;

CS__INLINE void cursor_set(seg_cursor *c, seg_table t, uint64_t r) {
  const cs_chunk *ch = t.cc + r * t.nc;
  c->r = r;
  c->lo = t.first_rows[r];
  c->hi = t.first_rows[r + 1];
  c->data = ch->data;
  c->validity = ch->validity;
}

/* The record of row, starting from record r that does not hold it.  Forward:
** the next record (the common case of a sorted walk), else a galloping
** search, so a jump over g records costs O(log g), not O(g), and a sorted
** walk stays O(n + records).  Backward: the previous record, else a binary
** search over the records before r. */
static uint64_t cursor_relocate(seg_table t, uint64_t r, uint64_t row) {
  const uint64_t *fr = t.first_rows;
  if (row >= fr[r + 1]) {
    uint64_t a = r + 1; /* fr[a] <= row, and a < n_records because row < fr[n_records] */
    uint64_t b = a + 1, step = 1;
    while (b < t.n_records && fr[b] <= row) {
      a = b;
      step *= 2;
      b = (t.n_records - a > step) ? a + step : t.n_records;
    }
    return a + cs__find_record(fr + a, b - a, row);
  }
  if (r > 0 && row >= fr[r - 1]) return r - 1;
  return cs__find_record(fr, r, row);
}

static size_t gather_width(const cs_store *s, uint32_t col) {
  size_t w = cs_type_width(s->cols[col].type);
  assert(col < s->schema.n_cols && w != 0);
  return w;
}

/* out_valid is needed per element only when it was asked for and the
** column can hold NULLs; otherwise it is filled with ones up front. */
static bool want_validity(const cs_store *s, uint32_t col, uint8_t *out_valid, uint64_t n) {
  if (!out_valid) return false;
  if (s->cols[col].nullable) return true;
  memset(out_valid, 1, n);
  return false;
}

/* What one gather call hands each span of its output: the column's record
** table, width, whether validity is written, the prefetch distance, and the
** call's own inputs. */
typedef struct gather_args {
  seg_table t;
  size_t w;
  bool v;
  int pf;
  uint64_t first;       /* strided */
  int64_t step;         /* strided */
  const uint64_t *rows; /* sorted, rows, binned */
  const uint32_t *bins; /* binned; bins output for cs_bins_compute */
  uint32_t *bins_out;
  uint8_t *out, *ov;
} gather_args;

/* The column-dependent part of a gather's arguments; bases: build the
** record base table (freed by gather_args_done). */
static gather_args gather_args_of(const cs_store *s, uint32_t col, uint8_t *out_valid, uint64_t n,
                                  bool sorted, bool bases, void *out) {
  gather_args a;
  memset(&a, 0, sizeof a);
  a.w = gather_width(s, col);
  a.v = want_validity(s, col, out_valid, n);
  a.t = seg_table_of(s, col);
  if (bases && !a.v) a.t.bases = record_bases(a.t, a.w, n);
  a.pf = cs_kernel_prefetch_for(cs_regime_of(sorted, s->n_rows * a.w));
  a.out = out, a.ov = out_valid;
  return a;
}

static void gather_args_done(gather_args *a) { cs__mem_free((void *)a->t.bases); }

/* Runs span(a, i0, i1) over [0, n) on the kernel's team (cs_team.c), in
** chunks whose boundaries are multiples of 64, the width switch inside
** span (see cs_kernels_internal.h). */
typedef void (*gather_span)(const gather_args *a, uint64_t i0, uint64_t i1);

typedef struct spans_job {
  gather_span span;
  const gather_args *a;
  uint64_t n, chunk;
} spans_job;

static void spans_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  const spans_job *j = ctx;
  uint64_t i0, i1;
  cs__team_span(c, j->chunk, j->n, &i0, &i1);
  j->span(j->a, i0, i1);
}

static void parallel_spans(uint64_t n, gather_span span, const gather_args *a) {
  int threads = cs_kernel_threads(n);
  if (threads <= 1) {
    span(a, 0, n);
    return;
  }
  spans_job j = {span, a, n, cs__team_chunk(n, threads, 16384, 64, 0)};
  cs__team_run(threads, (n + j.chunk - 1) / j.chunk, spans_chunk, &j);
}

/* ----------------------------------------------------------------- range */

void cs_gather_range(const cs_store *s, uint32_t col, uint64_t first, uint64_t n, void *out,
                     uint8_t *out_valid) {
  if (n == 0) return;
  size_t w = gather_width(s, col);
  assert(first < s->n_rows && n <= s->n_rows - first);
  seg_table t = seg_table_of(s, col);
  uint8_t *o = out;
  uint64_t r = cs__locate(s, first), row = first, done = 0;
  while (done < n) {
    const cs_chunk *ch = t.cc + r * t.nc;
    uint64_t local = row - t.first_rows[r], take = t.first_rows[r + 1] - row;
    if (take > n - done) take = n - done;
    memcpy(o + done * w, (const uint8_t *)ch->data + local * w, take * w);
    if (out_valid) cs__mask_from_bits(ch->validity, local, take, out_valid + done);
    done += take, row += take, r++;
  }
}

/* --------------------------------------------------------------- strided */

CS__INLINE void strided_body(seg_table t, size_t W, bool V, uint64_t first, int64_t step, uint64_t i0,
                             uint64_t i1, uint8_t *restrict out, uint8_t *restrict ov) {
  if (i0 >= i1) return;
  uint64_t pos =
      first + i0 * (uint64_t)step; /* exact in wrapping arithmetic: the true value is a valid row */
  seg_cursor c;
  cursor_set(&c, t, t.per ? seg_divide(t, pos) : seg_find(t, pos));
  uint64_t i = i0;
  if (step == 0) {
    const uint8_t *src = c.data + (pos - c.lo) * W;
    uint8_t v = V ? cs__valid_bit(c.validity, pos - c.lo) : 1;
    for (; i < i1; i++) {
      memcpy(out + i * W, src, W);
      if (V) ov[i] = v;
    }
    return;
  }
  uint64_t st = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
  for (;;) {
    /* k: how many of the remaining positions fall in this record. */
    uint64_t local = pos - c.lo;
    uint64_t k = step > 0 ? (c.hi - pos + st - 1) / st : local / st + 1;
    if (k > i1 - i) k = i1 - i;
    if (step > 0) {
      for (uint64_t j = 0; j < k; j++) {
        memcpy(out + (i + j) * W, c.data + (local + j * st) * W, W);
        if (V) ov[i + j] = cs__valid_bit(c.validity, local + j * st);
      }
      pos += k * st;
    } else {
      for (uint64_t j = 0; j < k; j++) {
        memcpy(out + (i + j) * W, c.data + (local - j * st) * W, W);
        if (V) ov[i + j] = cs__valid_bit(c.validity, local - j * st);
      }
      pos -= k * st;
    }
    i += k;
    if (i >= i1) break;
    cursor_set(&c, t, cursor_relocate(t, c.r, pos));
  }
}

static void strided_part(seg_table t, size_t w, bool v, uint64_t first, int64_t step, uint64_t i0,
                         uint64_t i1, uint8_t *out, uint8_t *ov) {
#define STRIDED_CALL(W)                                       \
  (v ? strided_body(t, W, true, first, step, i0, i1, out, ov) \
     : strided_body(t, W, false, first, step, i0, i1, out, ov))
  CS__WIDTH_SWITCH(w, STRIDED_CALL);
#undef STRIDED_CALL
}

static void strided_span(const gather_args *a, uint64_t i0, uint64_t i1) {
  strided_part(a->t, a->w, a->v, a->first, a->step, i0, i1, a->out, a->ov);
}

void cs_gather_strided(const cs_store *s, uint32_t col, uint64_t first, int64_t step, uint64_t n, void *out,
                       uint8_t *out_valid) {
  if (n == 0) return;
  if (step == 1) { /* contiguous: one memcpy per record */
    cs_gather_range(s, col, first, n, out, out_valid);
    return;
  }
  assert(first < s->n_rows);
  gather_args a = gather_args_of(s, col, out_valid, n, true, false, out);
  a.first = first, a.step = step;
  parallel_spans(n, strided_span, &a);
}

/* ---------------------------------------------------------------- sorted */

CS__INLINE void sorted_one(seg_table t, seg_cursor *c, size_t W, bool V, uint64_t row, uint8_t *restrict o,
                           uint8_t *restrict ov) {
  /* One unsigned compare tests lo <= row < hi (row < lo wraps to huge). */
  if (__builtin_expect(row - c->lo >= c->hi - c->lo, 0)) cursor_set(c, t, cursor_relocate(t, c->r, row));
  uint64_t local = row - c->lo;
  memcpy(o, c->data + local * W, W);
  if (V) *ov = cs__valid_bit(c->validity, local);
}

CS__INLINE void sorted_body(seg_table t, size_t W, bool V, int pf, const uint64_t *rows, uint64_t i0,
                            uint64_t i1, uint8_t *restrict out, uint8_t *restrict ov) {
  if (i0 >= i1) return;
  seg_cursor c;
  cursor_set(&c, t, t.per ? seg_divide(t, rows[i0]) : seg_find(t, rows[i0]));
  uint64_t i = i0;
  uint64_t split = (pf > 0 && i1 - i0 > (uint64_t)pf) ? i1 - (uint64_t)pf : i0;
  if (split > i) {
    /* A second cursor walks pf elements ahead and prefetches exactly the
    ** value the first will read: a sorted walk crosses a record boundary
    ** every few rows when records are small, and the hardware prefetcher
    ** loses the stream at each one. */
    seg_cursor ca;
    cursor_set(&ca, t, t.per ? seg_divide(t, rows[i + (uint64_t)pf]) : seg_find(t, rows[i + (uint64_t)pf]));
    for (; i < split; i++) {
      uint64_t ahead = rows[i + (uint64_t)pf];
      if (__builtin_expect(ahead - ca.lo >= ca.hi - ca.lo, 0))
        cursor_set(&ca, t, cursor_relocate(t, ca.r, ahead));
      __builtin_prefetch(ca.data + (ahead - ca.lo) * W);
      sorted_one(t, &c, W, V, rows[i], out + i * W, V ? ov + i : NULL);
    }
  }
  for (; i < i1; i++) sorted_one(t, &c, W, V, rows[i], out + i * W, V ? ov + i : NULL);
}

static void sorted_part(seg_table t, size_t w, bool v, int pf, const uint64_t *rows, uint64_t i0, uint64_t i1,
                        uint8_t *out, uint8_t *ov) {
#define SORTED_CALL(W)                                    \
  (v ? sorted_body(t, W, true, pf, rows, i0, i1, out, ov) \
     : sorted_body(t, W, false, pf, rows, i0, i1, out, ov))
  CS__WIDTH_SWITCH(w, SORTED_CALL);
#undef SORTED_CALL
}

static void sorted_span(const gather_args *a, uint64_t i0, uint64_t i1) {
  sorted_part(a->t, a->w, a->v, a->pf, a->rows, i0, i1, a->out, a->ov);
}

void cs_gather_sorted(const cs_store *s, uint32_t col, const uint64_t *rows, uint64_t n, void *out,
                      uint8_t *out_valid) {
  if (n == 0) return;
  gather_args a = gather_args_of(s, col, out_valid, n, true, false, out);
  a.rows = rows;
  parallel_spans(n, sorted_span, &a);
}

/* ------------------------------------------------------------------ rows */

/* The address of row's value and its record's bitmap; U: uniform layout. */
CS__INLINE const uint8_t *rows_addr(seg_table t, size_t W, bool U, uint64_t row, const uint8_t **validity,
                                    uint64_t *local) {
  uint64_t r = U ? seg_divide(t, row) : seg_find(t, row);
  const cs_chunk *ch = t.cc + r * t.nc;
  *local = row - (U ? r * t.per : t.first_rows[r]);
  *validity = ch->validity;
  return (const uint8_t *)ch->data + *local * W;
}

CS__INLINE void rows_loop(seg_table t, size_t W, bool V, bool U, int pf, const uint64_t *rows, uint64_t i0,
                          uint64_t i1, uint8_t *restrict out, uint8_t *restrict ov) {
  uint64_t i = i0;
  uint64_t split = (pf > 0 && i1 - i0 > (uint64_t)pf) ? i1 - (uint64_t)pf : i0;
  const uint8_t *vb;
  uint64_t local;
  for (; i < split; i++) {
    /* Prefetch costs a second search per element; off by default
    ** (the kernel study measured it 20-29% slower on unsorted input). */
    __builtin_prefetch(rows_addr(t, W, U, rows[i + (uint64_t)pf], &vb, &local));
    memcpy(out + i * W, rows_addr(t, W, U, rows[i], &vb, &local), W);
    if (V) ov[i] = cs__valid_bit(vb, local);
  }
  for (; i < i1; i++) {
    memcpy(out + i * W, rows_addr(t, W, U, rows[i], &vb, &local), W);
    if (V) ov[i] = cs__valid_bit(vb, local);
  }
}

/* The same without validity, through the record base table. */
CS__INLINE void rows_loop_based(seg_table t, size_t W, bool U, int pf, const uint64_t *rows, uint64_t i0,
                                uint64_t i1, uint8_t *restrict out) {
  uint64_t i = i0;
  uint64_t split = (pf > 0 && i1 - i0 > (uint64_t)pf) ? i1 - (uint64_t)pf : i0;
  for (; i < split; i++) {
    uint64_t ahead = rows[i + (uint64_t)pf];
    __builtin_prefetch((const void *)(t.bases[U ? seg_divide(t, ahead) : seg_find(t, ahead)] + ahead * W));
    uint64_t row = rows[i];
    memcpy(out + i * W, (const void *)(t.bases[U ? seg_divide(t, row) : seg_find(t, row)] + row * W), W);
  }
  for (; i < i1; i++) {
    uint64_t row = rows[i];
    memcpy(out + i * W, (const void *)(t.bases[U ? seg_divide(t, row) : seg_find(t, row)] + row * W), W);
  }
}

CS__INLINE void rows_body(seg_table t, size_t W, bool V, int pf, const uint64_t *rows, uint64_t i0,
                          uint64_t i1, uint8_t *out, uint8_t *ov) {
  if (!V && t.bases) {
    if (t.per)
      rows_loop_based(t, W, true, pf, rows, i0, i1, out);
    else
      rows_loop_based(t, W, false, pf, rows, i0, i1, out);
  } else if (t.per) {
    rows_loop(t, W, V, true, pf, rows, i0, i1, out, ov);
  } else {
    rows_loop(t, W, V, false, pf, rows, i0, i1, out, ov);
  }
}

static void rows_part(seg_table t, size_t w, bool v, int pf, const uint64_t *rows, uint64_t i0, uint64_t i1,
                      uint8_t *out, uint8_t *ov) {
#define ROWS_CALL(W) \
  (v ? rows_body(t, W, true, pf, rows, i0, i1, out, ov) : rows_body(t, W, false, pf, rows, i0, i1, out, ov))
  CS__WIDTH_SWITCH(w, ROWS_CALL);
#undef ROWS_CALL
}

static void rows_span(const gather_args *a, uint64_t i0, uint64_t i1) {
  rows_part(a->t, a->w, a->v, a->pf, a->rows, i0, i1, a->out, a->ov);
}

void cs_gather_rows(const cs_store *s, uint32_t col, const uint64_t *rows, uint64_t n, void *out,
                    uint8_t *out_valid) {
  if (n == 0) return;
  gather_args a = gather_args_of(s, col, out_valid, n, false, true, out);
  a.rows = rows;
  parallel_spans(n, rows_span, &a);
  gather_args_done(&a);
}

/* ------------------------------------------------------------------ bins */

CS__INLINE void bins_loop(seg_table t, bool U, const uint64_t *rows, uint64_t i0, uint64_t i1,
                          uint32_t *out) {
  for (uint64_t i = i0; i < i1; i++) out[i] = (uint32_t)(U ? seg_divide(t, rows[i]) : seg_find(t, rows[i]));
}

static void bins_span(const gather_args *a, uint64_t i0, uint64_t i1) {
  if (a->t.per)
    bins_loop(a->t, true, a->rows, i0, i1, a->bins_out);
  else
    bins_loop(a->t, false, a->rows, i0, i1, a->bins_out);
}

void cs_bins_compute(const cs_store *s, const uint64_t *rows, uint64_t n, uint32_t *out_bins) {
  if (n == 0) return;
  assert(s->n_records <= UINT32_MAX);
  gather_args a;
  memset(&a, 0, sizeof a);
  a.t = seg_table_of(s, 0);
  a.rows = rows, a.bins_out = out_bins;
  parallel_spans(n, bins_span, &a);
}

CS__INLINE const uint8_t *binned_addr(seg_table t, size_t W, uint64_t row, uint32_t r,
                                      const uint8_t **validity, uint64_t *local) {
  const cs_chunk *ch = t.cc + (uint64_t)r * t.nc;
  *local = row - t.first_rows[r];
  *validity = ch->validity;
  return (const uint8_t *)ch->data + *local * W;
}

CS__INLINE void binned_body(seg_table t, size_t W, bool V, int pf, const uint64_t *rows, const uint32_t *bins,
                            uint64_t i0, uint64_t i1, uint8_t *restrict out, uint8_t *restrict ov) {
  uint64_t i = i0;
  uint64_t split = (pf > 0 && i1 - i0 > (uint64_t)pf) ? i1 - (uint64_t)pf : i0;
  const uint8_t *vb;
  uint64_t local;
  if (!V && t.bases) {
    for (; i < split; i++) {
      uint64_t k = i + (uint64_t)pf;
      __builtin_prefetch((const void *)(t.bases[bins[k]] + rows[k] * W));
      memcpy(out + i * W, (const void *)(t.bases[bins[i]] + rows[i] * W), W);
    }
    for (; i < i1; i++) memcpy(out + i * W, (const void *)(t.bases[bins[i]] + rows[i] * W), W);
    return;
  }
  for (; i < split; i++) {
    uint64_t k = i + (uint64_t)pf;
    __builtin_prefetch(binned_addr(t, W, rows[k], bins[k], &vb, &local));
    memcpy(out + i * W, binned_addr(t, W, rows[i], bins[i], &vb, &local), W);
    if (V) ov[i] = cs__valid_bit(vb, local);
  }
  for (; i < i1; i++) {
    memcpy(out + i * W, binned_addr(t, W, rows[i], bins[i], &vb, &local), W);
    if (V) ov[i] = cs__valid_bit(vb, local);
  }
}

static void binned_part(seg_table t, size_t w, bool v, int pf, const uint64_t *rows, const uint32_t *bins,
                        uint64_t i0, uint64_t i1, uint8_t *out, uint8_t *ov) {
#define BINNED_CALL(W)                                          \
  (v ? binned_body(t, W, true, pf, rows, bins, i0, i1, out, ov) \
     : binned_body(t, W, false, pf, rows, bins, i0, i1, out, ov))
  CS__WIDTH_SWITCH(w, BINNED_CALL);
#undef BINNED_CALL
}

static void binned_span(const gather_args *a, uint64_t i0, uint64_t i1) {
  binned_part(a->t, a->w, a->v, a->pf, a->rows, a->bins, i0, i1, a->out, a->ov);
}

void cs_gather_rows_binned(const cs_store *s, uint32_t col, const uint64_t *rows, const uint32_t *bins,
                           uint64_t n, void *out, uint8_t *out_valid) {
  if (n == 0) return;
  gather_args a = gather_args_of(s, col, out_valid, n, false, true, out);
  a.rows = rows, a.bins = bins;
  parallel_spans(n, binned_span, &a);
  gather_args_done(&a);
}

/* ------------------------------------------------------------ span bodies */

void cs__gather_sorted_span(const cs_store *s, uint32_t col, int pf, const uint64_t *rows, uint64_t i0,
                            uint64_t i1, void *out, uint8_t *ov) {
  if (i0 < i1) sorted_part(seg_table_of(s, col), gather_width(s, col), ov != NULL, pf, rows, i0, i1, out, ov);
}

void cs__bins_span(const cs_store *s, const uint64_t *rows, uint64_t i0, uint64_t i1, uint32_t *bins) {
  seg_table t = seg_table_of(s, 0);
  if (t.per)
    bins_loop(t, true, rows, i0, i1, bins);
  else
    bins_loop(t, false, rows, i0, i1, bins);
}

void cs__gather_binned_span(const cs_store *s, uint32_t col, int pf, const uint64_t *rows,
                            const uint32_t *bins, uint64_t i0, uint64_t i1, void *out, uint8_t *ov) {
  if (i0 < i1)
    binned_part(seg_table_of(s, col), gather_width(s, col), ov != NULL, pf, rows, bins, i0, i1, out, ov);
}
