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

/* The values a range predicate (EQ, LT, LE, GT, GE, BETWEEN) on a numeric
** column selects, compiled exactly as cs_pred_eval compiles it (operand of
** another class or type, INT against FLOAT, bounds clamped to the type,
** FLOAT32 bounds made exact): none, every non-NULL (and non-NaN) value, or
** the closed range [ilo, ihi] (an integer column) or [dlo, dhi] (a float
** column, compared as doubles).  False for another op or a TEXT/BLOB
** column.  The automatic index (cs_index.c) searches these bounds. */
enum { CS__RANGE_NONE, CS__RANGE_ALL, CS__RANGE_SOME };
typedef struct cs__num_range {
  int kind; /* CS__RANGE_* */
  bool dbl; /* the bounds are dlo, dhi; else ilo, ihi */
  int64_t ilo, ihi;
  double dlo, dhi;
} cs__num_range;
bool cs__pred_numeric_range(const cs_store *s, const cs_pred *pr, cs__num_range *out);
/* Whether op compiles to a range of values: EQ, LT, LE, GT, GE, BETWEEN. */
bool cs__cmp_is_range(cs_cmp op);

/* ------------------------------------------------- dictionary codes
** (cs_codes.c): a TEXT/BLOB column's values record by record as a list of
** its distinct values and a one-byte code per position, built the first
** time a record is asked for and cached on the snapshot (its kernels'
** derived slot).  The predicates (cs_pred.c) test a record's distinct
** values once and map its rows through their codes; aggregation
** (analytics/cs_agg.c) maps the codes to its groups. */

/* Keys of up to 16 bytes as two words (cs_codes.c's build and cs_agg.c's
** dictionary per record share them).  The bytes of the first and second
** word a key of n bytes keeps, by min(n, 16): a table, because computing
** them branched on n. */
extern const uint64_t cs__key_keep[17][2];

/* A key below 16 bytes keeps its length in the last byte of its second
** word (a padding byte there), so that a slot's hash tells "a" from "a\0";
** a key of 16 bytes or more is told apart by its full length. */
CS__INLINE uint64_t cs__key_w1(uint64_t n, uint64_t w1) { return n < 16 ? w1 | (n << 56) : w1; }

/* The slot of a key of two words in a table of 2^bits slots: one multiply. */
CS__INLINE uint64_t cs__key_home(uint64_t w0, uint64_t w1, unsigned bits) {
  return ((w0 ^ ((w1 << 29) | (w1 >> 35))) * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

/* Most distinct values (NULL one of them) a record may have to be coded:
** a code is one byte. */
#define CS__CODE_VALUES 256u
/* null_code of a record without NULL. */
#define CS__CODE_NO_NULL UINT32_MAX
/* The most bytes the codes of one store column may hold by default (about
** 1.06 bytes a row, so some 250 million rows). */
#define CS__CODES_BYTES (256ull << 20)

/* One record's codes of one TEXT/BLOB column; immutable once published. */
typedef struct cs__rcodes {
  const uint8_t *code; /* [the record's rows] each position's value index; in this block */
  const uint8_t *
      *vp;      /* [n_vals] each value's first byte, into the store's data (NULL for NULL); in this block */
  uint64_t *vn; /* [n_vals] each value's length in bytes; in this block */
  uint32_t n_vals;    /* distinct values, NULL included, <= CS__CODE_VALUES */
  uint32_t null_code; /* NULL's index, or CS__CODE_NO_NULL */
} cs__rcodes;

/* A store column's codes, record by record; opaque. */
typedef struct cs__codes cs__codes;

/* TEXT/BLOB column col's codes on s, made empty the first time (NULL when
** out of memory: the caller reads the bytes).  Thread-safe. */
cs__codes *cs__codes_of(const cs_store *s, uint32_t col);
/* Record r's codes of TEXT/BLOB column col of s, built the first time it
** is asked for and kept in c (which must be cs__codes_of(s, col)); NULL
** when the record has more than CS__CODE_VALUES distinct values, when c
** would hold more than max_bytes with it, or when out of memory.
** Thread-safe: racing builders both build, one copy is kept. */
const cs__rcodes *cs__codes_record(cs__codes *c, const cs_store *s, uint32_t col, uint64_t r,
                                   uint64_t max_bytes);
/* Bytes c holds (its records' codes and values). */
uint64_t cs__codes_bytes(const cs__codes *c);
/* Blocks the codes cached on s hold (0 before any), for the tests' leak
** accounting: they belong to the store and are freed with it. */
long cs__codes_cache_blocks(const cs_store *s);

#endif /* CS_KERNELS_INTERNAL_H */
