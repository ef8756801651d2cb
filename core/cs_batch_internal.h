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

#endif /* CS_BATCH_INTERNAL_H */
