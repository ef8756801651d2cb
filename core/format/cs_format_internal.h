/*
** cs_format_internal.h - the file format's rules as code: a chunk laid out,
** merged with an update, checked and resolved; the preamble's version; the
** writer's temporary file names; the record of a row.
**
** format/ sits on base/ and under everything that reads or writes a file.
** cs_format.h is the layout (structs and sizes, docs/format.md); this
** header is what is computed from it.  Keeping these here rather than in
** the store or the writer is what lets the reader (store/), the writer
** (write/) and the kernels share one definition of each without calling
** one another: a chunk the writer lays out is checked by the same rule
** the reader applies, and the record search the kernels inline is the one
** the store answers cs_store_find_record with.
*/
#ifndef CS_FORMAT_INTERNAL_H
#define CS_FORMAT_INTERNAL_H

#include "cs_base_internal.h"
#include "cs_format.h"

/* One chunk descriptor resolved into pointers, start being the chunk's
** first byte (in the mapping, a cache=memory copy, or a view's own block). */
static inline void cs__chunk_resolve(const uint8_t *start, const cs_disk_chunk *dc, cs_chunk *ch) {
  ch->validity = dc->validity_offset ? start + (dc->validity_offset - dc->chunk_offset) : NULL;
  ch->offsets = dc->offsets_offset
                    ? (const int64_t *)(const void *)(start + (dc->offsets_offset - dc->chunk_offset))
                    : NULL;
  ch->data = start + (dc->data_offset - dc->chunk_offset);
  ch->data_bytes = dc->data_bytes;
  ch->null_count = dc->null_count;
  ch->min.bits = dc->min_bits;
  ch->max.bits = dc->max_bits;
  ch->flags = dc->flags & (CS_CHUNK_SORTED | CS_CHUNK_HAS_MINMAX);
}

/* Chunks laid out and updated (cs_chunk.c).  cs__chunk_lay lays out one
** chunk of n rows at offset at (a record offset, a file offset for a patch,
** 0 for a block of its own): the bitmap (given only when the chunk has a
** NULL, its bits past n clear), the offsets (TEXT/BLOB, from 0), then the
** data, each padded to 64 bytes (format.md 6.3).  It appends the pieces to
** iov (from *n_iov; at most CS__CHUNK_MAX_IOV), fills dc's offsets, sizes,
** checksum, zone map and sorted flag (dc zeroed by the caller, null_count
** the caller's), and returns the chunk's end. */
#define CS__CHUNK_MAX_IOV 6
struct iovec;
uint64_t cs__chunk_lay(cs_type type, uint64_t n, const uint8_t *bitmap, const int64_t *offsets,
                       const uint8_t *data, uint64_t data_bytes, uint64_t at, struct iovec *iov, int *n_iov,
                       cs_disk_chunk *dc);
/* An update's values as cs_writer_update takes them: per call the columns
** it changes (sel, increasing) and, for each, rows [0, n) of its values. */
typedef struct cs__upd_values {
  const uint8_t *validity; /* (n + 7) / 8 bytes, 1 = valid */
  const int64_t *offsets;  /* TEXT/BLOB: n + 1, from 0 */
  const uint8_t *data;     /* n * width bytes, or the TEXT/BLOB bytes */
} cs__upd_values;
typedef struct cs__upd_call {
  uint64_t n;
  uint32_t n_sel;
  const uint32_t *sel;        /* the columns the call changes */
  const cs__upd_values *vals; /* n_sel, in sel's order */
} cs__upd_call;
/* Position row takes the values of row index of call call; sorted with
** cs__chunk_upd_cmp (by all three), so the last item of a row that changes
** a column wins. */
typedef struct cs__upd_item {
  uint64_t row, call, index;
} cs__upd_item;
/* A position's new value in one column: row local of the record takes row
** index of v. */
typedef struct cs__upd_win {
  uint64_t local, index;
  const cs__upd_values *v;
} cs__upd_win;
int cs__chunk_upd_cmp(const void *a, const void *b);
/* The winners of column col among it[0, n) (one record's, sorted), the
** record starting at first_row: per position, the last item whose call
** changes col, in position order.  Returns how many. */
uint64_t cs__chunk_upd_winners(const cs__upd_call *const *calls, uint64_t first_row, const cs__upd_item *it,
                               uint64_t n, uint32_t col, cs__upd_win *out);
/* A chunk's values with some replaced: owned buffers for cs__chunk_lay. */
typedef struct cs__merged {
  uint8_t *bits;    /* (n + 7) / 8 bytes, bits past n clear; give it to cs__chunk_lay only when null_count */
  int64_t *offsets; /* TEXT/BLOB: n + 1; else NULL */
  uint8_t *data;
  uint64_t data_bytes;
  uint64_t null_count;
} cs__merged;
/* The n values of old (a live chunk of column, record rec of path, for the
** messages) with win[0, n_win) in place; TEXT/BLOB offsets of old are
** checked first (CS_ECORRUPT).  CS_ENOMEM.  On failure *out holds nothing. */
cs_rc cs__chunk_merge(const cs_column *column, uint64_t n, const cs_chunk *old, const cs__upd_win *win,
                      uint64_t n_win, const char *path, uint64_t rec, cs__merged *out, cs_err *err);
void cs__chunk_merged_free(cs__merged *m);

/* Checks one chunk descriptor against its column type and the span
** [lo, hi) its parts must lie in: for a record's own chunk (absolute false)
** record offsets [header_bytes, record_bytes); for a patch's (absolute
** true, CS_CHUNK_ABSOLUTE required) the file offsets of the patch block's
** chunk area.  rec names the record in the message. */
cs_rc cs__chunk_check(const cs_disk_chunk *dc, const cs_column *col, uint64_t n_rows, uint64_t lo,
                      uint64_t hi, bool absolute, const char *path, uint64_t rec, cs_err *err);

/* The file offset of the patch block of a CS_CHUNK_ABSOLUTE descriptor
** (UINT64_MAX when patch_back points before the file). */
static inline uint64_t cs__patch_block_of(const cs_disk_chunk *dc) {
  uint64_t back = (uint64_t)dc->patch_back * CS_ALIGN;
  return back <= dc->chunk_offset ? dc->chunk_offset - back : UINT64_MAX;
}

/* Whether the preamble at p passes its checksum, or is a torn upgrade
** (format.md 14.2, *out_torn set, read as version 2); *out_version is the
** version to check (any value: a future one is refused by the caller). */
bool cs__preamble_version(const cs_disk_preamble *p, uint32_t *out_version, bool *out_torn);
/* A clean preamble: p's bytes [0, 56) with version v and its checksum. */
void cs__preamble_with_version(const cs_disk_preamble *p, uint32_t v, cs_disk_preamble *out);

/* True when a file name (no directory part) is one the writer gives the
** temporary file of a store it is creating (cs_format.c), which a dataset
** must never take as a member. */
bool cs__format_is_temp_name(const char *name);

/* The suffix of such a name: <path>.tmp.XXXXXX, the Xs replaced by six
** random letters or digits. */
#define CS__TEMP_SUFFIX ".tmp.XXXXXX"
#define CS__TEMP_RANDOM 6 /* the Xs: mkstemp(3) needs exactly six */

/* The last record whose first row is <= row, over first_rows[0, n_records)
** (first_rows[0] <= row): the one record search of core/, for
** cs_store_find_record, the writer's deletes and every kernel.
** Branchless: the compiler turns the select into a cmov, so the loop runs
** exactly ceil(log2 n) steps with no mispredictions (a std-style
** upper_bound measured ~5x slower in the kernel study). */
CS__INLINE uint64_t cs__find_record(const uint64_t *first_rows, uint64_t n_records, uint64_t row) {
  const uint64_t *base = first_rows;
  uint64_t n = n_records;
  while (n > 1) {
    uint64_t half = n / 2;
    base = (base[half] <= row) ? base + half : base;
    n -= half;
  }
  return (uint64_t)(base - first_rows);
}

#endif /* CS_FORMAT_INTERNAL_H */
