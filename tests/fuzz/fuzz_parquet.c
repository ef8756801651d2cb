/*
** fuzz_parquet.c - any bytes as a Parquet file: the footer, then every
** column chunk of every row group decoded.
**
** WHAT IT COVERS.  interchange/'s promise (cs_interchange_internal.h) is
** that a crafted file gives a "colstore:" error, never a crash, a read
** past the bytes given, or an allocation of what a length field claims.
** An input that ends like a Parquet file ("PAR1" after a 4-byte length)
** is taken as one: its metadata is parsed (cs_pq_parse_metadata, what
** cs_pq_open calls after its two preads) and each chunk whose byte range
** lies inside the file is decoded from exactly those bytes, as
** cs_pq_read_column does after its pread.  Any other input is parsed as
** metadata alone, which lets the fuzzer walk the footer parser without
** first building a file around it.  The Thrift cursor's skip and the
** RLE/bit-packed decoder also run over the raw bytes.
**
** ORACLES, beyond "no crash": every error message starts "colstore: " and
** a decode error names the file, row group and column; a decoded column has
** exactly its row group's rows, at most that many NULLs and the validity
** bitmap agreeing with its count; TEXT/BLOB offsets start at 0, never
** decrease and end at the bytes decoded.
**
** Row groups of more than 2^16 rows are skipped: their output is
** legitimately that large (an RLE run of NULLs is a few bytes for any
** count), so they would measure the fuzzer's memory limit, not the code.
** The seeds (tests/fuzz/regressions/parquet/) are small files DuckDB wrote
** with each codec and page version, so mutations start from real pages.
*/
#include "fuzz_columns.h"

#define MAX_ROWS (1u << 16)

static void check_error(const cs_err *err, const char *what) {
  FZ_CHECK(strncmp(err->msg, "colstore: ", 10) == 0, "%s: message '%s'", what, err->msg);
}

static void check_column(const cs_pq_file *f, uint32_t rg, uint32_t col, const cs_pq_values *v) {
  uint64_t rows = (uint64_t)f->row_groups[rg].num_rows, nulls = 0;
  FZ_CHECK(v->n_rows == rows, "row group %u column %u: %llu rows of %llu", rg, col,
           (unsigned long long)v->n_rows, (unsigned long long)rows);
  for (uint64_t r = 0; r < rows; r++) nulls += !((v->validity[r >> 3] >> (r & 7)) & 1);
  FZ_CHECK(nulls == v->null_count, "row group %u column %u: %llu NULL bits, count %llu", rg, col,
           (unsigned long long)nulls, (unsigned long long)v->null_count);
  fz_check_layout(v, f->cols[col].type, rows);
}

static void decode_all(const cs_pq_file *f, const uint8_t *data, size_t body) {
  cs_pq_values v = {0};
  for (uint32_t rg = 0; rg < f->n_row_groups; rg++) {
    if ((uint64_t)f->row_groups[rg].num_rows > MAX_ROWS) continue;
    for (uint32_t col = 0; col < f->n_cols; col++) {
      const cs_pq_chunk_meta *m = &f->row_groups[rg].chunks[col];
      if (m->start < 0 || m->n_bytes < 0 || (uint64_t)m->start > body ||
          (uint64_t)m->n_bytes > body - (uint64_t)m->start)
        continue;
      /* An exact copy, so ASan sees a read past the chunk's bytes. */
      uint8_t *chunk = malloc((size_t)m->n_bytes + 1);
      memcpy(chunk, data + m->start, (size_t)m->n_bytes);
      cs_err err = {0};
      if (cs_pq_decode_chunk(f, rg, col, chunk, (size_t)m->n_bytes, &v, &err) == CS_OK) {
        check_column(f, rg, col, &v);
      } else {
        check_error(&err, "decode");
        char where[64];
        snprintf(where, sizeof where, "row group %u, column ", rg);
        FZ_CHECK(strstr(err.msg, where) || err.code == CS_ENOMEM || strstr(err.msg, "does not import"),
                 "decode error does not name the row group: '%s'", err.msg);
      }
      free(chunk);
    }
  }
  cs_pq_values_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cs_thrift t;
  cs_thrift_init(&t, data, size);
  (void)cs_thrift_skip(&t, CS_THRIFT_STRUCT);
  if (size > 1) {
    uint32_t out[256];
    (void)cs_pq_rle_decode(data + 1, data + size, data[0] % 34, out, 256);
  }
  cs_pq_file *f = NULL;
  cs_err err = {0};
  if (size >= 12 && memcmp(data + size - 4, "PAR1", 4) == 0) {
    uint32_t meta_n = (uint32_t)data[size - 8] | (uint32_t)data[size - 7] << 8 |
                      (uint32_t)data[size - 6] << 16 | (uint32_t)data[size - 5] << 24;
    if (meta_n > size - 8) return 0;
    size_t body = size - 8 - meta_n;
    uint8_t *meta = malloc(meta_n ? meta_n : 1);
    memcpy(meta, data + body, meta_n);
    cs_rc rc = cs_pq_parse_metadata(meta, meta_n, "fuzz.parquet", &f, &err);
    free(meta);
    if (rc != CS_OK) {
      check_error(&err, "metadata");
      return 0;
    }
    decode_all(f, data, body);
  } else {
    uint8_t *meta = malloc(size ? size : 1);
    memcpy(meta, data, size);
    cs_rc rc = cs_pq_parse_metadata(meta, size, "fuzz.parquet", &f, &err);
    free(meta);
    if (rc != CS_OK) {
      check_error(&err, "metadata");
      return 0;
    }
  }
  for (uint32_t i = 0; i < f->n_cols; i++)
    if (cs_pq_column_supported(f, i, &err) != CS_OK) check_error(&err, "column");
  cs_pq_close(f);
  return 0;
}
