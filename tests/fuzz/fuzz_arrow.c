/*
** fuzz_arrow.c - any bytes as an Arrow IPC file or stream: the footer or
** the message prefixes, every dictionary and record batch, every column.
**
** WHAT IT COVERS.  interchange/'s promise (cs_interchange_internal.h) is
** that a crafted file gives a "colstore:" error, never a crash, a read
** past the bytes given, or an allocation of what a length field claims.
** The input is copied to an allocation of exactly its size (so ASan sees
** any read past it) and opened as cs_arrow_open does after its mmap: an
** input starting "ARROW1" is the file format (footer, blocks), any other
** the stream format (messages to the end-of-stream marker).  Then every
** record batch is stepped to (decoding its dictionary batches, deltas
** appended) and every column of it decoded, compressed bodies included.
** The flatbuffer reader also walks the raw bytes as a root table.
**
** ORACLES, beyond "no crash": every error message starts "colstore: "; a
** decoded column has exactly its batch's rows, a validity bitmap agreeing
** with its NULL count, TEXT/BLOB offsets from 0 that never decrease and
** end at the bytes decoded, fixed-width values at the type's width.
**
** The seeds (tests/fuzz/regressions/arrow/) are small files apache-arrow
** and colstore's writer wrote (file and stream, dictionaries, zstd and
** lz4 bodies), so mutations start from real messages.
*/
#include "fuzz_columns.h"

static void check_error(const cs_err *err, const char *what) {
  FZ_CHECK(strncmp(err->msg, "colstore: ", 10) == 0, "%s: message '%s'", what, err->msg);
}

static void check_column(const cs_arrow_file *f, uint32_t col, uint64_t rows, const cs_pq_values *v) {
  FZ_CHECK(v->n_rows == rows, "column %u: %llu rows of %llu", col, (unsigned long long)v->n_rows,
           (unsigned long long)rows);
  if (v->null_count) {
    uint64_t nulls = 0;
    for (uint64_t r = 0; r < rows; r++) nulls += !((v->validity[r >> 3] >> (r & 7)) & 1);
    FZ_CHECK(nulls == v->null_count, "column %u: %llu NULL bits, count %llu", col, (unsigned long long)nulls,
             (unsigned long long)v->null_count);
  }
  fz_check_layout(v, f->cols[col].type, rows);
}

/* Any bytes as a flatbuffer: the root's fields as every kind. */
static void walk_flatbuffer(const uint8_t *data, size_t size) {
  cs_fb fb = {.p = data, .n = size};
  cs_fb_table t, sub;
  cs_fb_vec v;
  const char *s;
  uint32_t n;
  if (!cs_fb_root(&fb, &t)) return;
  for (int id = 0; id < 8; id++) {
    (void)cs_fb_int(&t, id, 8, true, 0);
    (void)cs_fb_string(&t, id, &s, &n);
    if (cs_fb_vector(&t, id, 4, &v))
      for (uint32_t i = 0; i < v.n && i < 64; i++) (void)cs_fb_vec_table(&v, i, &sub);
    if (cs_fb_table_field(&t, id, &sub)) (void)cs_fb_int(&sub, 0, 4, true, 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *copy = malloc(size ? size : 1);
  memcpy(copy, data, size);
  walk_flatbuffer(copy, size);
  cs_arrow_file *f = NULL;
  cs_err err = {0};
  if (cs_arrow_open_mem(copy, size, "fuzz.arrow", &f, &err) != CS_OK) {
    check_error(&err, "open");
    free(copy);
    return 0;
  }
  cs_pq_values v = {0};
  for (int batches = 0; batches < 64; batches++) {
    bool have;
    uint64_t rows;
    err = (cs_err){0};
    if (cs_arrow_next_batch(f, &have, &rows, &err) != CS_OK) {
      check_error(&err, "batch");
      break;
    }
    if (!have) break;
    for (uint32_t c = 0; c < f->n_cols; c++) {
      err = (cs_err){0};
      if (cs_arrow_read_column(f, c, &v, &err) == CS_OK)
        check_column(f, c, rows, &v);
      else
        check_error(&err, "column");
    }
  }
  cs_pq_values_free(&v);
  cs_arrow_close(f);
  free(copy);
  return 0;
}
