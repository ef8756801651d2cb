/*
** cs_kernels_internal.h - what the kernels (kernels/: cs_gather.c,
** cs_mask.c, cs_pred.c, cs_select.c) share with each other and with the
** analytics above them (analytics/: ordering, scattering, aggregation):
** the inline pieces of every inner loop, the span bodies of the public
** kernels, and compiled predicates.
**
** The pieces here sit in every kernel's inner loop, so they are static
** inline and branch-free: the record search is the conditional-move form
** (a std-style upper_bound measured ~5x slower in the kernel study), uniform
** stores divide by a precomputed reciprocal instead of searching (Stage 9),
** and mask bytes are classified eight at a time (Stage 12).  The record
** search itself is format/'s cs__find_record, the one the store uses.
**
** Width stamping: a kernel body is written once as an always_inline
** function whose element width W is a parameter, and CS__WIDTH_SWITCH calls
** it with the literal 1, 2, 4 or 8, so each case is compiled with W
** constant and memcpy(dst, src, W) becomes one load and one store.  The
** switch sits inside each span body (never around a team run), because a
** chunk function is called through a pointer and would otherwise get W as a
** run-time value.
*/
#ifndef CS_KERNELS_INTERNAL_H
#define CS_KERNELS_INTERNAL_H

#include <string.h>

#include "cs_store_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the kernels read mask words and bitmaps as little-endian integers"
#endif

/* Calls CALL(W) with the literal width matching w (1, 2, 4 or 8). */
#define CS__WIDTH_SWITCH(w, CALL) \
  do {                            \
    switch (w) {                  \
      case 1: CALL(1); break;     \
      case 2: CALL(2); break;     \
      case 4: CALL(4); break;     \
      default: CALL(8); break;    \
    }                             \
  } while (0)

/* row / uniform_rows for a uniform store (s->uniform_rows != 0), as a
** multiply-high and a shift; exact for every row < cs_store_rows(). */
CS__INLINE uint64_t cs__uniform_record(const cs_store *s, uint64_t row) {
  return (uint64_t)(((cs__u128)row * s->uniform_magic) >> 64) >> s->uniform_shift;
}

/* The record holding row, by division on uniform stores, else by search. */
CS__INLINE uint64_t cs__locate(const cs_store *s, uint64_t row) {
  return s->uniform_rows ? cs__uniform_record(s, row) : cs__find_record(s->first_rows, s->n_records, row);
}

/* Bit local of an LSB-first validity bitmap (NULL = all valid). */
CS__INLINE uint8_t cs__valid_bit(const uint8_t *validity, uint64_t local) {
  return validity ? (uint8_t)((validity[local >> 3] >> (local & 7)) & 1) : 1;
}

#define CS__ONES8 0x0101010101010101ull

/* Each byte of w becomes 0x01 if it was nonzero, else 0x00: the low seven
** bits are added to 0x7F (which sets bit 7 when any of them is set, with no
** carry out of the byte), OR-ed with the byte itself, and bit 7 moved down. */
CS__INLINE uint64_t cs__mask_norm(uint64_t w) {
  const uint64_t lo7 = 0x7F7F7F7F7F7F7F7Full;
  return ((((w & lo7) + lo7) | w) >> 7) & CS__ONES8;
}

/* Bytes of y (each 0 or 1) packed into the low 8 bits, byte j -> bit j. */
CS__INLINE unsigned cs__pack8(uint64_t y) { return (unsigned)((y * 0x0102040810204080ull) >> 56); }

/* The 8 bits of b spread over 8 bytes (bit j -> byte j, 0 or 1). */
CS__INLINE uint64_t cs__spread8(unsigned b) {
  uint64_t x = ((uint64_t)b * CS__ONES8) & 0x8040201008040201ull;
  return ((x + 0x7F7F7F7F7F7F7F7Full) >> 7) & CS__ONES8;
}

/* Output range [i0, i1) of thread id out of nt over n elements, with every
** boundary but n a multiple of align (a power of two). */
CS__INLINE void cs__thread_span(uint64_t n, int id, int nt, uint64_t align, uint64_t *i0, uint64_t *i1) {
  uint64_t per = (n + (uint64_t)nt - 1) / (uint64_t)nt;
  per = (per + align - 1) & ~(align - 1);
  uint64_t a = per * (uint64_t)id, b = a + per;
  *i0 = a < n ? a : n;
  *i1 = b < n ? b : n;
}

CS__INLINE uint64_t cs__load64(const void *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

/* out[i] = bit (off + i) of bits, as 0/1 bytes, for i < n; bits == NULL
** means all valid (cs_mask.c: a validity bitmap as a mask). */
void cs__mask_from_bits(const uint8_t *bits, uint64_t off, uint64_t n, uint8_t *out);

/* ------------------------------------------------------------ span bodies
** The serial bodies of the public kernels over one span of their input,
** for a kernel that runs several of them on each chunk of one team run
** (cs_select.c: evaluate and count a batch's chunks, then compact and
** gather them, instead of one parallel kernel per step).  ov is the validity
** output, one byte per element, or NULL when the column has no NULLs. */

/* Nonzero bytes of mask[0, n). */
uint64_t cs__mask_count_span(const uint8_t *mask, uint64_t n);
/* Positions base + i of the selected bytes of mask[i0, i1) into out, which
** has exactly cap slots (the span's count). */
void cs__mask_rows_span(const uint8_t *mask, uint64_t i0, uint64_t i1, uint64_t base, uint64_t *out,
                        uint64_t cap);
/* Column col at rows first + i selected by mask[i0, i1) into out/ov, which
** have exactly cap elements (the span's count). */
void cs__mask_gather_span(const cs_store *s, uint32_t col, const uint8_t *mask, uint64_t first, uint64_t i0,
                          uint64_t i1, void *out, uint8_t *ov, uint64_t cap);
/* Column col at rows[i] into out[i] (and ov[i]) for i in [i0, i1); rows
** ascending is the fast case, any order is correct; pf: prefetch distance. */
void cs__gather_sorted_span(const cs_store *s, uint32_t col, int pf, const uint64_t *rows, uint64_t i0,
                            uint64_t i1, void *out, uint8_t *ov);
/* bins[i] = the record of rows[i], i in [i0, i1). */
void cs__bins_span(const cs_store *s, const uint64_t *rows, uint64_t i0, uint64_t i1, uint32_t *bins);
/* Column col at rows[i] (in record bins[i]) into out[i] (and ov[i]). */
void cs__gather_binned_span(const cs_store *s, uint32_t col, int pf, const uint64_t *rows,
                            const uint32_t *bins, uint64_t i0, uint64_t i1, void *out, uint8_t *ov);

/* Predicates compiled once against a store (cs_pred.c), evaluated span by
** span.  The members of IN sets stay where the caller's cs_pred points. */
typedef struct cs__pred_set cs__pred_set;
cs_rc cs__pred_set_compile(const cs_store *s, const cs_pred *preds, uint32_t n_preds, cs__pred_set **out,
                           cs_err *err);
void cs__pred_set_free(cs__pred_set *set);
/* True when the zone maps rule out every row of [first + i0, first + i1)
** (nothing is read but per-record statistics, and the mask is not
** written); the records are then counted as skipped, as eval_span counts
** them.  False (nothing counted) otherwise, and always without predicates. */
bool cs__pred_set_span_empty(const cs__pred_set *set, uint64_t first, uint64_t i0, uint64_t i1,
                             uint64_t count_from, uint64_t *skipped);
/* mask[i] for rows first + i, i in [i0, i1).  Records are counted (scanned
** or skipped by zone maps) once: in the span holding their first row, or
** at row count_from when they start before it. */
void cs__pred_set_eval_span(const cs__pred_set *set, uint64_t first, uint64_t i0, uint64_t i1, uint8_t *mask,
                            uint64_t count_from, uint64_t *scanned, uint64_t *skipped);

/* For aggregation (cs_agg.c), which reads the data itself and decides per
** record: 1 when the zone maps prove every predicate true for every row of
** record rec, 0 when they rule out every row, -1 when the data must be read
** (always 1 without predicates).  Nothing is counted. */
int cs__pred_set_record(const cs__pred_set *set, uint64_t rec);
/* Whether row `local` of record rec satisfies every predicate. */
bool cs__pred_set_row(const cs__pred_set *set, uint64_t rec, uint64_t local);
/* The compiled predicates of a selector and the store it was made for
** (cs_select.c). */
const cs__pred_set *cs__selector_preds(const cs_selector *sel);
const cs_store *cs__selector_store(const cs_selector *sel);

#endif /* CS_KERNELS_INTERNAL_H */
