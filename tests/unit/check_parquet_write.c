/*
** check_parquet_write.c - the Parquet writer (core/interchange/
** cs_parquet_write.c) read back by the Parquet reader beside it.
**
** DuckDB is the end-to-end oracle (tests/sql/test_export.py); this test
** is the fast one that runs without node: random columns of every type,
** with NULLs at several densities, a NOT NULL column, columns of few
** distinct values (dictionary pages, whose indices and levels go through
** the RLE/bit-packed encoder) and of many (plain), handed over in slices
** of odd sizes that straddle row groups, in every codec.  The file is
** parsed (footer, schema types, row groups of row_group_rows) and every
** column chunk decoded by cs_pq_decode_chunk must give back the values
** and the validity put in.  The seed is COLSTORE_SEED's when set, printed
** on failure.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_interchange_internal.h"
#include "unit_util.h"

static uint64_t test_seed(void) {
  const char *s = getenv("COLSTORE_SEED");
  return s && *s ? strtoull(s, NULL, 0) : 0x5eedf00dull;
}

#define N_COLS 14
static const cs_column cols[N_COLS] = {
    {"id", CS_TYPE_INT64, false},   {"i8", CS_TYPE_INT8, true},    {"i16", CS_TYPE_INT16, true},
    {"i32", CS_TYPE_INT32, true},   {"i64", CS_TYPE_INT64, true},  {"u8", CS_TYPE_UINT8, true},
    {"u16", CS_TYPE_UINT16, true},  {"u32", CS_TYPE_UINT32, true}, {"f32", CS_TYPE_FLOAT32, true},
    {"f64", CS_TYPE_FLOAT64, true}, {"flag", CS_TYPE_BOOL, true},  {"s_low", CS_TYPE_TEXT, true},
    {"s_high", CS_TYPE_TEXT, true}, {"bin", CS_TYPE_BLOB, true}};

/* The whole table as one chunk per column. */
typedef struct table {
  uint64_t rows;
  uint8_t *valid[N_COLS];
  uint8_t *data[N_COLS];
  int64_t *offs[N_COLS];
} table;

static void table_fill(table *t, uint64_t rows, int null_pct, ut_rng *r) {
  t->rows = rows;
  for (int c = 0; c < N_COLS; c++) {
    cs_type ty = cols[c].type;
    t->valid[c] = calloc((rows + 7) / 8 + 8, 1);
    size_t w = cs_type_width(ty);
    t->data[c] = calloc(w ? rows * w + 8 : rows * 24 + 8, 1);
    if (!w) t->offs[c] = calloc(rows + 1, sizeof(int64_t));
    int64_t at = 0;
    for (uint64_t i = 0; i < rows; i++) {
      bool valid = !cols[c].nullable || (int)ut_rng_below(r, 100) >= null_pct;
      if (valid) t->valid[c][i / 8] |= (uint8_t)(1u << (i % 8));
      int64_t lo, hi;
      cs_type_int_range(ty, &lo, &hi);
      uint64_t bits = ut_rng_u64(r);
      if (cs_type_is_integer(ty) && valid) {
        int64_t v = c == 0                ? (int64_t)i
                    : ty == CS_TYPE_INT64 ? (int64_t)bits
                                          : lo + (int64_t)(bits % (uint64_t)(hi - lo + 1));
        if (ut_rng_below(r, 10) == 0) v = ut_rng_below(r, 2) ? lo : hi;
        if (c == 4 && ut_rng_below(r, 2)) v = (int64_t)ut_rng_below(r, 5); /* runs of few values */
        memcpy(t->data[c] + i * w, &v, w);
      } else if (ty == CS_TYPE_FLOAT32 && valid) {
        float f = (float)(ut_rng_unit(r) * 2e6 - 1e6);
        memcpy(t->data[c] + i * 4, &f, 4);
      } else if (ty == CS_TYPE_FLOAT64 && valid) {
        double d = ut_rng_unit(r) * 2e12 - 1e12;
        memcpy(t->data[c] + i * 8, &d, 8);
      } else if (!w) {
        if (valid) {
          int n = c == 11   ? snprintf((char *)t->data[c] + at, 24, "k%d", (int)(bits % 9))
                  : c == 12 ? snprintf((char *)t->data[c] + at, 24, "%llx", (unsigned long long)bits)
                            : (int)(bits % 9);
          if (c == 13)
            for (int k = 0; k < n; k++) t->data[c][at + k] = (uint8_t)ut_rng_u64(r);
          at += n;
        }
        t->offs[c][i + 1] = at;
      }
    }
  }
}

static void table_free(table *t) {
  for (int c = 0; c < N_COLS; c++) free(t->valid[c]), free(t->data[c]), free(t->offs[c]);
}

/* Rows [from, from + n) of t as a slice: from a multiple of 8 for the
** bitmap, or n rows copied to a fresh bitmap otherwise. */
static void slice_of(const table *t, uint64_t from, uint64_t n, cs_chunk *out, uint8_t **bits) {
  for (int c = 0; c < N_COLS; c++) {
    size_t w = cs_type_width(cols[c].type);
    bits[c] = calloc((n + 7) / 8 + 8, 1);
    uint64_t nulls = 0;
    for (uint64_t i = 0; i < n; i++) {
      bool v = (t->valid[c][(from + i) / 8] >> ((from + i) % 8)) & 1;
      if (v) bits[c][i / 8] |= (uint8_t)(1u << (i % 8));
      nulls += !v;
    }
    out[c] = (cs_chunk){.validity = nulls ? bits[c] : NULL, .null_count = nulls};
    if (w) {
      out[c].data = t->data[c] + from * w;
    } else {
      out[c].data = t->data[c];
      out[c].offsets = t->offs[c] + from;
    }
  }
}

static void check_round_trip(cs_out_codec codec, int null_pct, uint64_t rows, uint64_t group_rows,
                             uint64_t seed) {
  ut_rng r = ut_rng_seed(seed);
  table t = {0};
  table_fill(&t, rows, null_pct, &r);
  ut_membuf m = {0};
  cs_schema schema = {N_COLS, cols};
  cs_out_options opt = {.codec = codec, .row_group_rows = group_rows, .threads = (uint32_t)(seed % 3)};
  cs_format_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_parquet_writer_ops.open(&schema, &opt, (cs_sink){ut_membuf_write, &m}, &w, &err) == CS_OK,
                "%s", err.msg);
  for (uint64_t from = 0; from < rows;) {
    uint64_t n = 1 + ut_rng_below(&r, group_rows + group_rows / 2);
    if (n > rows - from) n = rows - from;
    cs_chunk slice[N_COLS];
    uint8_t *bits[N_COLS];
    slice_of(&t, from, n, slice, bits);
    ck_assert_msg(cs_parquet_writer_ops.write(w, n, slice, &err) == CS_OK, "%s", err.msg);
    for (int c = 0; c < N_COLS; c++) free(bits[c]);
    from += n;
  }
  uint64_t groups = 0;
  ck_assert_msg(cs_parquet_writer_ops.finish(w, &groups, &err) == CS_OK, "%s", err.msg);
  cs_parquet_writer_ops.free(w);
  ck_assert_uint_eq(groups, (rows + group_rows - 1) / group_rows);
  ck_assert(m.n > 12 && memcmp(m.p, "PAR1", 4) == 0 && memcmp(m.p + m.n - 4, "PAR1", 4) == 0);
  uint32_t meta;
  memcpy(&meta, m.p + m.n - 8, 4);
  cs_pq_file *f;
  ck_assert_msg(cs_pq_parse_metadata(m.p + m.n - 8 - meta, meta, "w.parquet", &f, &err) == CS_OK, "%s",
                err.msg);
  ck_assert_uint_eq((uint64_t)f->num_rows, rows);
  ck_assert_uint_eq(f->n_row_groups, groups);
  for (int c = 0; c < N_COLS; c++) {
    ck_assert_str_eq(f->cols[c].name, cols[c].name);
    ck_assert_int_eq(f->cols[c].type, cols[c].type);
    ck_assert_int_eq(f->cols[c].optional, cols[c].nullable);
  }
  cs_pq_values v = {0};
  uint64_t base = 0;
  for (uint32_t g = 0; g < f->n_row_groups; g++) {
    uint64_t n = (uint64_t)f->row_groups[g].num_rows;
    for (int c = 0; c < N_COLS; c++) {
      const cs_pq_chunk_meta *cm = &f->row_groups[g].chunks[c];
      ck_assert(cm->start >= 4 && (uint64_t)(cm->start + cm->n_bytes) <= m.n);
      ck_assert_msg(
          cs_pq_decode_chunk(f, g, (uint32_t)c, m.p + cm->start, (size_t)cm->n_bytes, &v, &err) == CS_OK,
          "%s (seed %llu)", err.msg, (unsigned long long)seed);
      ck_assert_uint_eq(v.n_rows, n);
      size_t width = cs_type_width(cols[c].type);
      for (uint64_t i = 0; i < n; i++) {
        uint64_t s = base + i;
        bool want = (t.valid[c][s / 8] >> (s % 8)) & 1;
        bool got = !v.validity || ((v.validity[i / 8] >> (i % 8)) & 1);
        ck_assert_msg(got == want, "group %u column %s row %llu: validity (seed %llu)", g, cols[c].name,
                      (unsigned long long)i, (unsigned long long)seed);
        if (!want) continue;
        if (width) {
          ck_assert_msg(memcmp(v.data + i * width, t.data[c] + s * width, width) == 0,
                        "group %u column %s row %llu (seed %llu)", g, cols[c].name, (unsigned long long)i,
                        (unsigned long long)seed);
        } else {
          int64_t len = t.offs[c][s + 1] - t.offs[c][s];
          ck_assert_int_eq(v.offsets[i + 1] - v.offsets[i], len);
          ck_assert(memcmp(v.data + v.offsets[i], t.data[c] + t.offs[c][s], (size_t)len) == 0);
        }
      }
    }
    base += n;
  }
  cs_pq_values_free(&v);
  cs_pq_close(f);
  free(m.p);
  table_free(&t);
}

START_TEST(round_trip_every_codec) {
  uint64_t seed = test_seed();
  static const cs_out_codec codecs[] = {CS_OUT_NONE, CS_OUT_SNAPPY, CS_OUT_ZSTD, CS_OUT_GZIP, CS_OUT_LZ4};
  static const int densities[] = {0, 10, 50, 95, 100};
  for (int k = 0; k < 5; k++) check_round_trip(codecs[k], densities[k], 7000, 2500, seed + (uint64_t)k);
}
END_TEST

START_TEST(round_trip_small_groups) {
  uint64_t seed = test_seed();
  check_round_trip(CS_OUT_SNAPPY, 30, 200, 7, seed);
  check_round_trip(CS_OUT_ZSTD, 0, 1, 1, seed + 1);
}
END_TEST

START_TEST(empty_file_has_no_row_group) {
  ut_membuf m = {0};
  cs_schema schema = {N_COLS, cols};
  cs_format_writer *w;
  cs_err err = {0};
  ck_assert(cs_parquet_writer_ops.open(&schema, NULL, (cs_sink){ut_membuf_write, &m}, &w, &err) == CS_OK);
  uint64_t groups = 9;
  ck_assert(cs_parquet_writer_ops.finish(w, &groups, &err) == CS_OK);
  cs_parquet_writer_ops.free(w);
  ck_assert_uint_eq(groups, 0);
  uint32_t meta;
  memcpy(&meta, m.p + m.n - 8, 4);
  cs_pq_file *f;
  ck_assert_msg(cs_pq_parse_metadata(m.p + m.n - 8 - meta, meta, "e.parquet", &f, &err) == CS_OK, "%s",
                err.msg);
  ck_assert_int_eq(f->num_rows, 0);
  ck_assert_uint_eq(f->n_cols, N_COLS);
  cs_pq_close(f);
  free(m.p);
}
END_TEST

static Suite *parquet_write_suite(void) {
  Suite *s = suite_create("parquet_write");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, round_trip_every_codec);
  tcase_add_test(tc, round_trip_small_groups);
  tcase_add_test(tc, empty_file_has_no_row_group);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(parquet_write_suite()); }
