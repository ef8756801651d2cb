/*
** cs_mask.c - byte-mask kernels: count the selected bytes, turn them into
** row positions, and gather the selected rows of a column straight from
** the mask (no position array in between).
**
** A mask is one byte per row, any nonzero byte meaning "selected" (the
** predicate kernels write 0/1, but a caller's mask may hold anything).  All
** three kernels read the mask eight bytes at a time and normalise the word
** with cs__mask_norm, so a selected byte becomes 0x01 whatever its value.
** Then each word is classified, which is predictable at every density:
**
**   all zero     skipped;
**   all ones     a run: consecutive all-ones words are copied with one
**                memcpy (clipped at the record boundary);
**   mixed        compacted branchlessly: every lane is stored at the
**                output cursor and the cursor advances by the lane's 0/1,
**                so there is no per-element branch to mispredict.
**
** The kernel study measured the per-element test this replaces at
** 0.2-0.6x at mid densities, and Round 7 kept the all-ones memcpy because
** long runs regress 0.81x without it.
**
** A sparse gather (a thread's region selecting under one row in 16) goes
** another way: 64 mask bytes are packed into a bitmap word without a
** branch and only the set bits are copied (mask_segment_sparse).  At a few
** percent most 8-row words are empty and the rest hold one row, so the
** per-word classification mispredicts and the branchless store copies 8
** lanes for one; at p = 0.05 the gather went from 0.51-0.70x of the raw
** compaction loop to 1.05-1.14x (bench_kernels, docs/performance.md).
** Deciding per region, from the count every kernel makes first, keeps the
** branch out of the loop and leaves denser masks on the word path.
**
** The gather prefetches the values a few hundred rows ahead, selected or
** not (CS__MASK_LOOKAHEAD): a sparse mask touches lines too far apart for
** the hardware prefetcher to follow.
**
** The branchless store writes up to 7 lanes past the last selected one, so
** it is used only while 8 slots remain in the output region it owns; the
** last few words of a region go through an exact bit loop instead.  That is
** why every kernel counts first: the count sizes each thread's region (the
** threaded version needs per-thread offsets anyway), and the transient
** over-store never crosses into another thread's region or past the
** caller's buffer, which needs exactly cs_mask_count() elements.
*/
#include <assert.h>

#include "cs_kernels_internal.h"

/* Mask words the gather looks ahead to prefetch values (256 rows).  Every
** word's values are prefetched, selected or not: a sparse mask otherwise
** touches lines too far apart for the hardware prefetcher, each one a full
** miss, and a prefetch conditional on the word being nonzero measured
** slower at every density but the sparsest.  Measured on an 8M-row FLOAT64
** column, one thread, random masks (ms at density 0.001 / 0.01 / 0.05 /
** 0.5 / 0.95; the raw branchless compaction loop 4.0 / 4.3 / 4.5 / 5.8 /
** 6.3): this 2.3 / 3.1 / 5.9 / 6.3 / 7.1; conditional prefetch 64 words
** ahead 2.3 / 3.7 / 8.5 / 6.6 / 7.8; no prefetch - / 9.4 / 11.6 / 6.4 / 10.3.
** Lookahead 16, 64 and 128 words measured within 5% of 32. */
#define CS__MASK_LOOKAHEAD 32

/* ----------------------------------------------------------------- count */

/* Sum of the 0/1 bytes accumulated in acc (each byte <= 255). */
CS__INLINE uint64_t byte_sum(uint64_t acc) {
  const uint64_t m16 = 0x00FF00FF00FF00FFull;
  uint64_t s16 = (acc & m16) + ((acc >> 8) & m16);
  return (s16 * 0x0001000100010001ull) >> 48;
}

static uint64_t count_span(const uint8_t *mask, uint64_t n) {
  uint64_t total = 0, i = 0;
  while (n - i >= 8) {
    /* Up to 255 words per accumulator, so no byte lane overflows. */
    uint64_t words = (n - i) / 8;
    if (words > 255) words = 255;
    uint64_t acc = 0;
    const uint8_t *p = mask + i;
#pragma omp simd reduction(+ : acc)
    for (uint64_t k = 0; k < words; k++) acc += cs__mask_norm(cs__load64(p + k * 8));
    total += byte_sum(acc);
    i += words * 8;
  }
  for (; i < n; i++) total += mask[i] != 0;
  return total;
}

/* Chunks of a mask: counts per chunk live on the stack. */
#define CS__MASK_MAX_CHUNKS 256u
#define CS__MASK_MIN_CHUNK 65536u

typedef void (*span_fill)(void *ctx, uint64_t i0, uint64_t i1, uint64_t off, uint64_t count);

typedef struct mask_job {
  const uint8_t *mask;
  uint64_t n, chunk;
  uint64_t counts[CS__MASK_MAX_CHUNKS];
  uint64_t offs[CS__MASK_MAX_CHUNKS];
  span_fill fill;
  void *fill_ctx;
} mask_job;

static void mask_job_init(mask_job *j, const uint8_t *mask, uint64_t n, int threads) {
  j->mask = mask, j->n = n;
  j->chunk = cs__team_chunk(n, threads, CS__MASK_MIN_CHUNK, 64, CS__MASK_MAX_CHUNKS);
}

static uint64_t mask_chunks(const mask_job *j) { return (j->n + j->chunk - 1) / j->chunk; }

static void count_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  mask_job *j = ctx;
  uint64_t i0, i1;
  cs__team_span(c, j->chunk, j->n, &i0, &i1);
  j->counts[c] = count_span(j->mask + i0, i1 - i0);
}

static void fill_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  mask_job *j = ctx;
  uint64_t i0, i1;
  cs__team_span(c, j->chunk, j->n, &i0, &i1);
  j->fill(j->fill_ctx, i0, i1, j->offs[c], j->counts[c]);
}

uint64_t cs_mask_count(const uint8_t *mask, uint64_t n) {
  int threads = cs_kernel_threads(n);
  if (threads <= 1) return count_span(mask, n);
  mask_job j;
  mask_job_init(&j, mask, n, threads);
  uint64_t chunks = mask_chunks(&j), total = 0;
  cs__team_run(threads, chunks, count_chunk, &j);
  for (uint64_t c = 0; c < chunks; c++) total += j.counts[c];
  return total;
}

/* The mask word at i, or the last n - i < 8 bytes zero-padded. */
CS__INLINE uint64_t mask_word(const uint8_t *mask, uint64_t i, uint64_t n) {
  if (n - i >= 8) return cs__mask_norm(cs__load64(mask + i));
  uint64_t w = 0;
  memcpy(&w, mask + i, n - i);
  return cs__mask_norm(w);
}

/* ------------------------------------------------------------- positions */

/* Positions base + i of the selected bytes of mask[i0, i1) into out, which
** has exactly cap slots (the count of that span). */
static void rows_span(const uint8_t *mask, uint64_t i0, uint64_t i1, uint64_t base, uint64_t *out,
                      uint64_t cap) {
  uint64_t k = 0;
  for (uint64_t i = i0; i < i1; i += 8) {
    uint64_t y = mask_word(mask, i, i1);
    if (y == 0) continue;
    uint64_t at = base + i;
    if (y == CS__ONES8 && i1 - i >= 8) {
      for (unsigned j = 0; j < 8; j++) out[k + j] = at + j;
      k += 8;
    } else if (cap - k >= 8) {
      for (unsigned j = 0; j < 8; j++) {
        out[k] = at + j;
        k += (y >> (8 * j)) & 1;
      }
    } else {
      for (unsigned b = cs__pack8(y); b; b &= b - 1) out[k++] = at + (unsigned)__builtin_ctz(b);
    }
  }
  assert(k == cap);
}

/* The count-then-fill scaffold both compactions share: each chunk of the
** mask is counted, then fill(ctx, i0, i1, off, count) writes the chunk's
** count elements from output index off (two team runs).  Returns the
** total. */
static uint64_t count_then_fill(const uint8_t *mask, uint64_t n, span_fill fill, void *ctx) {
  int threads = cs_kernel_threads(n);
  if (threads <= 1) {
    uint64_t total = count_span(mask, n);
    fill(ctx, 0, n, 0, total);
    return total;
  }
  mask_job j;
  mask_job_init(&j, mask, n, threads);
  j.fill = fill, j.fill_ctx = ctx;
  uint64_t chunks = mask_chunks(&j), total = 0;
  cs__team_run(threads, chunks, count_chunk, &j);
  for (uint64_t c = 0; c < chunks; c++) j.offs[c] = total, total += j.counts[c];
  cs__team_run(threads, chunks, fill_chunk, &j);
  return total;
}

typedef struct rows_ctx {
  const uint8_t *mask;
  uint64_t base;
  uint64_t *out;
} rows_ctx;

static void rows_fill(void *p, uint64_t i0, uint64_t i1, uint64_t off, uint64_t count) {
  const rows_ctx *c = p;
  rows_span(c->mask, i0, i1, c->base, c->out + off, count);
}

uint64_t cs_mask_to_rows(const uint8_t *mask, uint64_t n, uint64_t base, uint64_t *out_rows) {
  if (n == 0) return 0;
  rows_ctx c = {mask, base, out_rows};
  return count_then_fill(mask, n, rows_fill, &c);
}

/* ---------------------------------------------------------------- gather */

/* One record's part of a mask span: mask[a, b) selects rows whose values
** start at src (the value of index a) and whose validity bits start at bit
** local_a of validity.  *k is the output cursor; cap the region's size. */
CS__INLINE void mask_segment(size_t W, bool V, const uint8_t *mask, uint64_t a, uint64_t b,
                             const uint8_t *src, const uint8_t *validity, uint64_t local_a,
                             uint8_t *restrict out, uint8_t *restrict ov, uint64_t *kp, uint64_t cap) {
  uint64_t k = *kp;
  uint64_t i = a;
  while (i < b) {
    /* Prefetch the values CS__MASK_LOOKAHEAD words ahead (see above). */
    uint64_t ahead = i + 8 * CS__MASK_LOOKAHEAD;
    if (b - i > 8 * CS__MASK_LOOKAHEAD + 8) {
      const uint8_t *pa = src + (ahead - a) * W;
      __builtin_prefetch(pa);
      if (W == 8) __builtin_prefetch(pa + 56);
    }
    uint64_t y = mask_word(mask, i, b);
    uint64_t len = b - i < 8 ? b - i : 8;
    const uint8_t *p = src + (i - a) * W;
    uint64_t lb = local_a + (i - a);
    if (y == 0) {
      i += len;
    } else if (y == CS__ONES8 && len == 8) {
      uint64_t e = i + 8;
      while (b - e >= 8 && cs__mask_norm(cs__load64(mask + e)) == CS__ONES8) e += 8;
      memcpy(out + k * W, p, (e - i) * W);
      if (V) cs__mask_from_bits(validity, lb, e - i, ov + k);
      k += e - i;
      i = e;
    } else if (len == 8 && cap - k >= 8) {
      for (unsigned j = 0; j < 8; j++) {
        memcpy(out + k * W, p + j * W, W);
        if (V) ov[k] = cs__valid_bit(validity, lb + j);
        k += (y >> (8 * j)) & 1;
      }
      i += 8;
    } else {
      /* Exact: near the end of the region, or a short word whose lanes
      ** past len lie outside the record. */
      for (unsigned bits = cs__pack8(y); bits; bits &= bits - 1) {
        unsigned j = (unsigned)__builtin_ctz(bits);
        memcpy(out + k * W, p + j * W, W);
        if (V) ov[k] = cs__valid_bit(validity, lb + j);
        k++;
      }
      i += len;
    }
  }
  *kp = k;
}

/* A sparse region's part of a record (the same arguments as mask_segment):
** 64 rows at a time, their mask bytes packed into one bitmap word without a
** branch, then only the selected rows copied, one per set bit.  The word
** path above classifies every 8 rows (a branch that a mask of a few percent
** mispredicts) and stores 8 lanes for a word of one row.  The values 256
** rows ahead are prefetched, every line, as above. */
CS__INLINE void mask_segment_sparse(size_t W, bool V, const uint8_t *mask, uint64_t a, uint64_t b,
                                    const uint8_t *src, const uint8_t *validity, uint64_t local_a,
                                    uint8_t *restrict out, uint8_t *restrict ov, uint64_t *kp) {
  uint64_t k = *kp;
  for (uint64_t i = a; i < b; i += 64) {
    uint64_t len = b - i < 64 ? b - i : 64;
    if (b - i > 8 * CS__MASK_LOOKAHEAD + 64)
      for (size_t l = 0; l < W; l++) __builtin_prefetch(src + (i - a + 8 * CS__MASK_LOOKAHEAD) * W + 64 * l);
    uint64_t bits = 0;
    for (unsigned w = 0; 8 * w < len; w++)
      bits |= (uint64_t)cs__pack8(mask_word(mask, i + 8 * w, b)) << (8 * w);
    for (; bits; bits &= bits - 1) {
      unsigned j = (unsigned)__builtin_ctzll(bits);
      memcpy(out + k * W, src + (i - a + j) * W, W);
      if (V) ov[k] = cs__valid_bit(validity, local_a + (i - a) + j);
      k++;
    }
  }
  *kp = k;
}

/* A region selecting fewer than one row in this many goes the sparse way
** (mask_segment_sparse). */
#define CS__MASK_SPARSE_RATIO 16

/* Mask span [i0, i1) (rows first + i) into the output region at out/ov of
** exactly cap elements. */
CS__INLINE void mask_body(const cs_store *s, uint32_t col, size_t W, bool V, const uint8_t *mask,
                          uint64_t first, uint64_t i0, uint64_t i1, uint8_t *out, uint8_t *ov, uint64_t cap) {
  if (i0 >= i1 || cap == 0) return;
  const uint64_t *fr = s->first_rows;
  uint32_t nc = s->schema.n_cols;
  uint64_t r = cs__locate(s, first + i0), k = 0, i = i0;
  bool sparse = cap < (i1 - i0) / CS__MASK_SPARSE_RATIO;
  while (i < i1 && k < cap) {
    uint64_t lo = fr[r], end = fr[r + 1] - first; /* end of the record, in mask indices */
    uint64_t b = end < i1 ? end : i1;
    const cs_chunk *ch = s->chunks + r * nc + col;
    uint64_t local = first + i - lo;
    const uint8_t *src = (const uint8_t *)ch->data + local * W;
    if (sparse)
      mask_segment_sparse(W, V, mask, i, b, src, ch->validity, local, out, ov, &k);
    else
      mask_segment(W, V, mask, i, b, src, ch->validity, local, out, ov, &k, cap);
    i = b;
    r++;
  }
  assert(k == cap);
}

static void mask_part(const cs_store *s, uint32_t col, size_t w, bool v, const uint8_t *mask, uint64_t first,
                      uint64_t i0, uint64_t i1, uint8_t *out, uint8_t *ov, uint64_t cap) {
#define MASK_CALL(W)                                                 \
  (v ? mask_body(s, col, W, true, mask, first, i0, i1, out, ov, cap) \
     : mask_body(s, col, W, false, mask, first, i0, i1, out, ov, cap))
  CS__WIDTH_SWITCH(w, MASK_CALL);
#undef MASK_CALL
}

typedef struct gather_ctx {
  const cs_store *s;
  uint32_t col;
  size_t w;
  bool v;
  const uint8_t *mask;
  uint64_t first;
  uint8_t *out, *ov;
} gather_ctx;

static void gather_fill(void *p, uint64_t i0, uint64_t i1, uint64_t off, uint64_t count) {
  const gather_ctx *c = p;
  mask_part(c->s, c->col, c->w, c->v, c->mask, c->first, i0, i1, c->out + off * c->w,
            c->v ? c->ov + off : NULL, count);
}

uint64_t cs_gather_mask(const cs_store *s, uint32_t col, const uint8_t *mask, uint64_t first, uint64_t n,
                        void *out, uint8_t *out_valid) {
  if (n == 0) return 0;
  size_t w = cs_type_width(s->cols[col].type);
  assert(w != 0 && first < s->n_rows && n <= s->n_rows - first);
  bool v = out_valid != NULL && s->cols[col].nullable;
  gather_ctx c = {s, col, w, v, mask, first, out, out_valid};
  uint64_t total = count_then_fill(mask, n, gather_fill, &c);
  if (out_valid && !v) memset(out_valid, 1, total);
  return total;
}

/* ------------------------------------------------------------ span bodies */

uint64_t cs__mask_count_span(const uint8_t *mask, uint64_t n) { return count_span(mask, n); }

void cs__mask_rows_span(const uint8_t *mask, uint64_t i0, uint64_t i1, uint64_t base, uint64_t *out,
                        uint64_t cap) {
  rows_span(mask, i0, i1, base, out, cap);
}

void cs__mask_gather_span(const cs_store *s, uint32_t col, const uint8_t *mask, uint64_t first, uint64_t i0,
                          uint64_t i1, void *out, uint8_t *ov, uint64_t cap) {
  mask_part(s, col, cs_type_width(s->cols[col].type), ov != NULL, mask, first, i0, i1, out, ov, cap);
}

/* ------------------------------------------------------ bitmap as mask */

void cs__mask_from_bits(const uint8_t *bits, uint64_t off, uint64_t n, uint8_t *out) {
  if (!bits) {
    memset(out, 1, n);
    return;
  }
  uint64_t i = 0;
  for (; i < n && ((off + i) & 7); i++) out[i] = (uint8_t)((bits[(off + i) >> 3] >> ((off + i) & 7)) & 1);
  const uint8_t *b = bits + ((off + i) >> 3);
  for (; i + 8 <= n; i += 8, b++) {
    uint64_t y = cs__spread8(*b);
    memcpy(out + i, &y, 8);
  }
  for (; i < n; i++) out[i] = (uint8_t)((bits[(off + i) >> 3] >> ((off + i) & 7)) & 1);
}
