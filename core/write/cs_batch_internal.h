/*
** cs_batch_internal.h - the batch's buffers, for the writer that slices them.
*/
#ifndef CS_BATCH_INTERNAL_H
#define CS_BATCH_INTERNAL_H

#include "colstore.h"

typedef struct cs_batch_column {
  cs_type type;
  size_t width;          /* bytes per value; 0 for TEXT/BLOB */
  uint8_t *data;         /* values, or the bytes of TEXT/BLOB; owned */
  uint64_t data_bytes;   /* bytes used */
  uint64_t data_cap;     /* bytes allocated */
  int64_t *offsets;      /* TEXT/BLOB: n_rows + 1 entries, offsets[0] = 0; owned */
  uint64_t offsets_cap;  /* entries allocated */
  uint8_t *validity;     /* LSB-first bitmap, 1 = valid; owned */
  uint64_t validity_cap; /* bytes allocated */
  uint64_t n_values;     /* values appended (== rows, or rows + 1 mid-row) */
  uint64_t n_nulls;
} cs_batch_column;

struct cs_batch {
  uint32_t n_cols;
  uint64_t n_rows;        /* complete rows */
  cs_batch_column *cols;  /* n_cols; owned */
};

/* Appends rows [from, from + n) of a stored chunk of the column's type
** (offsets already checked, as cs_store_check_chunks checks them) to column
** col: bitmap bits, values or bytes and rebased offsets copied in bulk.
** CS_ENOMEM changes nothing.  Once every column got the same n rows,
** cs__batch_end_rows completes them (compaction, cs_compact.c). */
cs_rc cs__batch_put_run(cs_batch *batch, uint32_t col, const cs_chunk *ch, uint64_t from, uint64_t n, cs_err *err);
void cs__batch_end_rows(cs_batch *batch, uint64_t n);

/* Rows [first, first + n) of a batch column (first a multiple of 8) laid
** out as one chunk by cs__chunk_lay at offset at: the null count, a
** masked copy of the bitmap and rebased TEXT/BLOB offsets made here, in
** scratch (cs__chunk_rows_scratch(n) bytes, which must outlive the iov).
** The writer's records and a view's pending rows (cs_view.c) are made by
** this one function, so their chunks and statistics are the same
** (cs_chunk.c). */
struct iovec;
struct cs_disk_chunk;
static inline uint64_t cs__chunk_rows_scratch(uint64_t n) { return (((n + 7) / 8 + 63) & ~(uint64_t)63) + (n + 1) * 8; }
uint64_t cs__chunk_lay_rows(const cs_batch_column *col, uint64_t first, uint64_t n, uint8_t *scratch, uint64_t at,
                           struct iovec *iov, int *n_iov, struct cs_disk_chunk *dc);

#endif /* CS_BATCH_INTERNAL_H */
