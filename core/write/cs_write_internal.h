/*
** cs_write_internal.h - what the files of write/ share: the batch's
** buffers (for the writer and the view that slice them), the writer's
** hooks for compaction, and automatic compaction's rule.
**
** write/ sits on store/: a writer loads the committed state with the
** reader's own loader (cs__store_load), so one set of checks decides what
** "committed" means, and it writes records with format/'s chunk layout.
** Nothing below write/ knows a writer exists; compaction is a writer
** copying records from a store, so it lives here too.
*/
#ifndef CS_WRITE_INTERNAL_H
#define CS_WRITE_INTERNAL_H

#include "cs_store_internal.h"

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
  uint64_t n_rows;       /* complete rows */
  cs_batch_column *cols; /* n_cols; owned */
};

/* Appends rows [from, from + n) of a stored chunk of the column's type
** (offsets already checked, as cs_store_check_chunks checks them) to column
** col: bitmap bits, values or bytes and rebased offsets copied in bulk.
** CS_ENOMEM changes nothing.  Once every column got the same n rows,
** cs__batch_end_rows completes them (compaction, cs_compact.c). */
cs_rc cs__batch_put_run(cs_batch *batch, uint32_t col, const cs_chunk *ch, uint64_t from, uint64_t n,
                        cs_err *err);
void cs__batch_end_rows(cs_batch *batch, uint64_t n);

/* Rows [first, first + n) of a batch column (first a multiple of 8) laid
** out as one chunk by cs__chunk_lay at offset at: the null count, a
** masked copy of the bitmap and rebased TEXT/BLOB offsets made here, in
** scratch (cs__batch_lay_scratch(n) bytes, which must outlive the iov).
** The writer's records and a view's pending rows (cs_view.c) are made by
** this one function, so their chunks and statistics are the same
** (cs_batch.c, over format/cs_chunk.c). */
static inline uint64_t cs__batch_lay_scratch(uint64_t n) {
  return (((n + 7) / 8 + 63) & ~(uint64_t)63) + (n + 1) * 8;
}
uint64_t cs__batch_lay_rows(const cs_batch_column *col, uint64_t first, uint64_t n, uint8_t *scratch,
                            uint64_t at, struct iovec *iov, int *n_iov, cs_disk_chunk *dc);

/* For cs_compact.c: the records a writer has (committed + written), and
** the generation a new file's writer commits (set before its first
** record: the compacted file continues the numbering of the file it
** replaces). */
uint64_t cs__writer_records(const cs_writer *w);
void cs__writer_set_generation(cs_writer *w, uint64_t generation);
/* Writes record rec of the single-file store s into w unchanged: its
** chunks, checked by the caller, are in body back to back in column order
** (patched ones are rebased into the record; cs_writer.c). */
cs_rc cs__writer_copy_record(cs_writer *w, const cs_store *s, uint64_t rec, const uint8_t *body, cs_err *err);
/* Automatic compaction after a commit (cs_compact.c; docs/performance.md,
** "Small transactions").  A record of fewer than SMALL_ROWS rows is small;
** a commit that leaves at least MIN_RECORDS small records compacts when
** the bytes a compaction wins back (the small records, their footer
** entries, the superseded blocks) are at least 1/ratio of the file. */
#define CS_AUTO_COMPACT_SMALL_ROWS 1024u
#define CS_AUTO_COMPACT_MIN_RECORDS 8u
typedef struct cs_compact_tail {
  uint64_t n_small;     /* records of fewer than CS_AUTO_COMPACT_SMALL_ROWS rows */
  uint64_t small_bytes; /* their record bytes and footer entries */
  uint64_t free_bytes;  /* superseded deletion vectors and patch blocks */
  uint64_t file_bytes;  /* the file as the commit left it */
} cs_compact_tail;
bool cs__compact_due(const cs_compact_tail *t, uint32_t ratio);
/* Compacts the store at path (keeping positions) while lock, a committed
** writer on it, still holds its flock; lets go of nothing. */
cs_rc cs__compact_held(cs_writer *lock, const char *path, cs_compact_report *out, cs_err *err);
#ifdef COLSTORE_TESTING
/* Tests only: the step hook of automatic compactions (cs_compact_options
** on_step, with ctx NULL); NULL, the default, calls nothing. */
extern void (*cs__compact_auto_step)(void *ctx, const char *step);
#endif

#endif /* CS_WRITE_INTERNAL_H */
