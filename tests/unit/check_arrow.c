/*
** check_arrow.c - Arrow IPC's parts (core/interchange/): the flatbuffers
** reader and builder (cs_flatbuf.c), and the IPC writer (cs_arrow_write.c)
** read back by the reader (cs_arrow.c).
**
** The flatbuffer reader's promise is that no input crashes it or makes it
** allocate: tables built by the builder must read back field by field,
** every prefix of one must fail cleanly or read only what lies inside it,
** and hostile offsets (a vtable outside the buffer, a field past its
** table's inline size, a vector count of 2^31 in a few bytes, nesting past
** the bound) must set failed without reading past the bytes given.  Run
** under ASan (make test-asan) that is what "cleanly" means.
**
** The writer is checked through the reader on random tables of every
** colstore type, NULL densities from none to all, slices whose TEXT
** offsets do not start at 0, every codec, the file and the stream format;
** every truncation of a written file must be refused.  apache-arrow (npm)
** is the end-to-end oracle in both directions (tests/sql/test_arrow.py),
** which runs this program as its converter: `check_arrow --convert IN OUT
** [none|zstd|lz4] [stream]` reads an Arrow file with cs_arrow.c and writes
** it with cs_arrow_write.c.  The seed is COLSTORE_SEED's, printed on
** failure.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_interchange_internal.h"
#include "unit_util.h"

static uint64_t test_seed(void) {
  const char *s = getenv("COLSTORE_SEED");
  return s && *s ? strtoull(s, NULL, 0) : 0xa770a770ull;
}

/* ----------------------------------------------------------- flatbuffers */

/* A root table: 0 int16 -7, 1 a string, 2 a vector of int64, 3 a child
** table (0: int32 42), 4 a vector of 2 tables, 5 a bool true. */
static const uint8_t *build_sample(cs_fbb *b, size_t *n) {
  int64_t v[3] = {1, -2, INT64_MAX};
  uint32_t vec = cs_fbb_vector(b, v, 3, 8, 8);
  uint32_t str = cs_fbb_string(b, "flat", 4);
  cs_fbb_table_begin(b);
  cs_fbb_add_int(b, 0, 42, 4);
  uint32_t child = cs_fbb_table_end(b);
  uint32_t kids[2];
  for (int i = 0; i < 2; i++) {
    cs_fbb_table_begin(b);
    cs_fbb_add_int(b, 0, 100 + i, 8);
    kids[i] = cs_fbb_table_end(b);
  }
  uint32_t kv = cs_fbb_vector_refs(b, kids, 2);
  cs_fbb_table_begin(b);
  cs_fbb_add_ref(b, 1, str);
  cs_fbb_add_ref(b, 2, vec);
  cs_fbb_add_ref(b, 3, child);
  cs_fbb_add_ref(b, 4, kv);
  cs_fbb_add_int(b, 0, -7, 2);
  cs_fbb_add_int(b, 5, 1, 1);
  uint32_t root = cs_fbb_table_end(b);
  const uint8_t *p;
  ck_assert(cs_fbb_finish(b, root, &p, n));
  ck_assert_uint_eq(*n % 8, 0);
  return p;
}

/* Reads the sample; true when every field read back as built. */
static bool read_sample(cs_fb *fb) {
  cs_fb_table t, c, k;
  cs_fb_vec v, kv;
  const char *s;
  uint32_t sn;
  if (!cs_fb_root(fb, &t)) return false;
  bool ok = cs_fb_int(&t, 0, 2, true, 0) == -7 && cs_fb_int(&t, 5, 1, false, 0) == 1 &&
            cs_fb_int(&t, 9, 4, true, 77) == 77 && cs_fb_string(&t, 1, &s, &sn) && sn == 4 &&
            memcmp(s, "flat", 4) == 0 && cs_fb_vector(&t, 2, 8, &v) && v.n == 3 &&
            cs_fb_table_field(&t, 3, &c) && cs_fb_int(&c, 0, 4, true, 0) == 42 &&
            cs_fb_vector(&t, 4, 4, &kv) && kv.n == 2 && cs_fb_vec_table(&kv, 1, &k) &&
            cs_fb_int(&k, 0, 8, true, 0) == 101;
  if (ok) {
    int64_t x;
    memcpy(&x, cs_fb_vec_elem(&v, 2), 8);
    ok = x == INT64_MAX;
  }
  return ok && !fb->failed;
}

START_TEST(flatbuf_round_trip) {
  cs_fbb b = {0};
  size_t n;
  const uint8_t *p = build_sample(&b, &n);
  cs_fb fb = {.p = p, .n = n};
  ck_assert(read_sample(&fb));
  /* Every prefix: refused or read inside it, never past (ASan). */
  for (size_t k = 0; k < n; k++) {
    uint8_t *copy = malloc(k ? k : 1);
    memcpy(copy, p, k);
    cs_fb f2 = {.p = copy, .n = k};
    ck_assert_msg(!read_sample(&f2), "a %zu-byte prefix of %zu read as whole", k, n);
    free(copy);
  }
  cs_fbb_free(&b);
}
END_TEST

START_TEST(flatbuf_hostile_offsets) {
  cs_fbb b = {0};
  size_t n;
  const uint8_t *p = build_sample(&b, &n);
  uint8_t *bytes = malloc(n);
  /* Each 4-byte word set to hostile values in turn: never a crash, and a
  ** vector count that claims more than the buffer is refused. */
  static const uint32_t hostile[] = {0xFFFFFFFFu, 0x7FFFFFFFu, 0x80000000u, 0, 1, 0xFFFF, 0x10000};
  for (size_t w = 0; w + 4 <= n; w += 2)
    for (size_t h = 0; h < sizeof hostile / sizeof *hostile; h++) {
      memcpy(bytes, p, n);
      memcpy(bytes + w, &hostile[h], 4);
      cs_fb fb = {.p = bytes, .n = n};
      (void)read_sample(&fb);
    }
  /* A vector count of 2^31 in place of 3. */
  cs_fb fb = {.p = p, .n = n};
  cs_fb_table t;
  cs_fb_vec v;
  ck_assert(cs_fb_root(&fb, &t) && cs_fb_vector(&t, 2, 8, &v));
  memcpy(bytes, p, n);
  uint32_t big = 0x80000000u;
  memcpy(bytes + v.pos - 4, &big, 4);
  cs_fb bad = {.p = bytes, .n = n};
  ck_assert(cs_fb_root(&bad, &t));
  ck_assert(!cs_fb_vector(&t, 2, 8, &v));
  ck_assert(bad.failed);
  free(bytes);
  cs_fbb_free(&b);
}
END_TEST

START_TEST(flatbuf_depth_bound) {
  /* A chain of tables, each field 0 the next: past CS_FB_MAX_DEPTH the
  ** reader refuses. */
  cs_fbb b = {0};
  uint32_t ref = 0;
  for (int i = 0; i < CS_FB_MAX_DEPTH + 5; i++) {
    cs_fbb_table_begin(&b);
    if (ref) cs_fbb_add_ref(&b, 0, ref);
    cs_fbb_add_int(&b, 1, i, 4);
    ref = cs_fbb_table_end(&b);
  }
  const uint8_t *p;
  size_t n;
  ck_assert(cs_fbb_finish(&b, ref, &p, &n));
  cs_fb fb = {.p = p, .n = n};
  cs_fb_table t, next;
  ck_assert(cs_fb_root(&fb, &t));
  int depth = 0;
  while (cs_fb_table_field(&t, 0, &next)) t = next, depth++;
  ck_assert_int_eq(depth, CS_FB_MAX_DEPTH);
  ck_assert(fb.failed);
  cs_fbb_free(&b);
}
END_TEST

/* --------------------------------------------------- the writer, read back */

/* A cell's value at its type's width, and back. */
static void cell_store(cs_type type, const ut_cell *x, uint8_t *p) {
  if (type == CS_TYPE_FLOAT32)
    memcpy(p, &x->f32, 4);
  else if (type == CS_TYPE_FLOAT64)
    memcpy(p, &x->f, 8);
  else
    memcpy(p, &x->i, cs_type_width(type)); /* little-endian: the low bytes */
}

static void cell_load(cs_type type, const uint8_t *p, ut_cell *x) {
  if (type == CS_TYPE_FLOAT32) {
    memcpy(&x->f32, p, 4);
    x->f = x->f32;
    return;
  }
  if (type == CS_TYPE_FLOAT64) {
    memcpy(&x->f, p, 8);
    return;
  }
  int64_t lo, hi;
  cs_type_int_range(type, &lo, &hi);
  uint64_t u = 0;
  memcpy(&u, p, cs_type_width(type));
  size_t bits = 8 * cs_type_width(type);
  x->i = lo < 0 && bits < 64 && (u >> (bits - 1) & 1) ? (int64_t)(u | (~0ull << bits)) : (int64_t)u;
}

static const cs_type ALL_TYPES[] = {CS_TYPE_INT8,    CS_TYPE_INT16,  CS_TYPE_INT32,  CS_TYPE_INT64,
                                    CS_TYPE_UINT8,   CS_TYPE_UINT16, CS_TYPE_UINT32, CS_TYPE_FLOAT32,
                                    CS_TYPE_FLOAT64, CS_TYPE_BOOL,   CS_TYPE_TEXT,   CS_TYPE_BLOB};
#define N_TYPES (sizeof ALL_TYPES / sizeof *ALL_TYPES)

/* Column c of rows [from, from + n) of t in a chunk's layout (buffers
** appended to owned, freed by the caller); TEXT/BLOB offsets start at
** `skew`, not 0, as a slice of a record's may. */
static cs_chunk slice_of(const ut_table *t, uint32_t c, uint64_t from, uint64_t n, uint64_t skew,
                         void **owned) {
  cs_type type = t->schema.cols[c].type;
  size_t w = cs_type_is_varlen(type) ? 0 : cs_type_width(type);
  uint8_t *valid = calloc((n + 7) / 8 + 1, 1);
  int64_t *off = cs_type_is_varlen(type) ? malloc((n + 1) * 8) : NULL;
  uint64_t bytes = skew;
  for (uint64_t r = 0; r < n; r++) {
    const ut_cell *x = ut_table_cell(t, from + r, c);
    if (cs_type_is_varlen(type) && !x->null) bytes += x->len;
  }
  uint8_t *data = calloc(w ? n * w + 1 : bytes + 1, 1);
  uint64_t nulls = 0, at = skew;
  if (off) off[0] = (int64_t)skew;
  for (uint64_t r = 0; r < n; r++) {
    const ut_cell *x = ut_table_cell(t, from + r, c);
    if (x->null)
      nulls++;
    else
      valid[r >> 3] |= (uint8_t)(1u << (r & 7));
    if (off) {
      if (!x->null) memcpy(data + at, x->bytes, x->len), at += x->len;
      off[r + 1] = (int64_t)at;
    } else if (!x->null) {
      cell_store(type, x, data + r * w);
    }
  }
  owned[0] = valid, owned[1] = off, owned[2] = data;
  return (cs_chunk){.validity = nulls ? valid : NULL,
                    .offsets = off,
                    .data = data,
                    .data_bytes = w ? n * w : at,
                    .null_count = nulls};
}

/* Writes t with ops/codec in slices of `slice` rows; reads the bytes back
** and compares every value. */
static void round_trip(const ut_table *t, const cs_format_writer_ops *ops, cs_out_codec codec, uint64_t slice,
                       uint64_t seed) {
  ut_membuf m = {0};
  cs_err err = {0};
  cs_format_writer *w;
  cs_out_options opt = {.codec = codec};
  ck_assert_msg(ops->open(&t->schema, &opt, (cs_sink){ut_membuf_write, &m}, &w, &err) == CS_OK, "%s",
                err.msg);
  uint32_t nc = t->schema.n_cols;
  for (uint64_t from = 0; from < t->n_rows; from += slice) {
    uint64_t n = t->n_rows - from < slice ? t->n_rows - from : slice;
    cs_chunk ch[N_TYPES];
    void *owned[N_TYPES][3];
    for (uint32_t c = 0; c < nc; c++) ch[c] = slice_of(t, c, from, n, from % 5, owned[c]);
    ck_assert_msg(ops->write(w, n, ch, &err) == CS_OK, "%s", err.msg);
    for (uint32_t c = 0; c < nc; c++)
      for (int k = 0; k < 3; k++) free(owned[c][k]);
  }
  uint64_t groups;
  ck_assert_msg(ops->finish(w, &groups, &err) == CS_OK, "%s", err.msg);
  ops->free(w);
  ck_assert_uint_eq(groups, (t->n_rows + slice - 1) / slice);

  cs_arrow_file *f;
  ck_assert_msg(cs_arrow_open_mem(m.p, m.n, "mem", &f, &err) == CS_OK, "seed %llu: %s",
                (unsigned long long)seed, err.msg);
  ck_assert_uint_eq(f->n_cols, nc);
  uint64_t row = 0;
  cs_pq_values v = {0};
  for (;;) {
    bool have;
    uint64_t rows;
    ck_assert_msg(cs_arrow_next_batch(f, &have, &rows, &err) == CS_OK, "%s", err.msg);
    if (!have) break;
    for (uint32_t c = 0; c < nc; c++) {
      cs_type type = t->schema.cols[c].type;
      ck_assert_int_eq(f->cols[c].type, type);
      ck_assert_msg(cs_arrow_read_column(f, c, &v, &err) == CS_OK, "%s", err.msg);
      ck_assert_uint_eq(v.n_rows, rows);
      for (uint64_t r = 0; r < rows; r++) {
        const ut_cell *want = ut_table_cell(t, row + r, c);
        bool null = v.null_count && !(v.validity[r >> 3] >> (r & 7) & 1);
        ck_assert_msg(null == want->null, "seed %llu: column %u row %llu: NULL %d, want %d",
                      (unsigned long long)seed, c, (unsigned long long)(row + r), null, want->null);
        if (null) continue;
        ut_cell got = {0};
        if (cs_type_is_varlen(type))
          ut_cell_set_bytes(&got, v.data + v.offsets[r], (uint64_t)(v.offsets[r + 1] - v.offsets[r]));
        else
          cell_load(type, v.data + r * cs_type_width(type), &got);
        ck_assert_msg(ut_cell_equal(type, &got, want), "seed %llu: column %u (%s) row %llu differs",
                      (unsigned long long)seed, c, cs_type_name(type), (unsigned long long)(row + r));
        free(got.bytes);
      }
    }
    row += rows;
  }
  ck_assert_uint_eq(row, t->n_rows);
  cs_pq_values_free(&v);
  cs_arrow_close(f);
  /* Every truncation is refused or reads fewer rows, never a crash. */
  for (size_t k = 0; k < m.n; k += m.n / 97 + 1) {
    if (cs_arrow_open_mem(m.p, k, "cut", &f, &err) != CS_OK) continue;
    bool have = true;
    uint64_t rows;
    while (have && cs_arrow_next_batch(f, &have, &rows, &err) == CS_OK && have)
      for (uint32_t c = 0; c < nc; c++) (void)cs_arrow_read_column(f, c, &v, &err);
    cs_pq_values_free(&v);
    cs_arrow_close(f);
  }
  free(m.p);
}

START_TEST(writer_reads_back) {
  uint64_t seed = test_seed();
  ut_rng rng = ut_rng_seed(seed);
  cs_column cols[N_TYPES];
  char names[N_TYPES][8];
  for (uint32_t c = 0; c < N_TYPES; c++) {
    snprintf(names[c], sizeof names[c], "c%u", c);
    cols[c] = (cs_column){names[c], ALL_TYPES[c], true};
  }
  cs_schema schema = {N_TYPES, cols};
  static const unsigned density[] = {0, 100, 900, 1000};
  for (size_t d = 0; d < 4; d++) {
    ut_table *t = ut_table_new(&schema);
    for (int r = 0; r < 1000; r++) {
      ut_cell *row = ut_table_add_row(t);
      for (uint32_t c = 0; c < N_TYPES; c++) ut_cell_random(&rng, ALL_TYPES[c], true, density[d], &row[c]);
    }
    const cs_format_writer_ops *ops[] = {&cs_arrow_file_writer_ops, &cs_arrow_stream_writer_ops};
    const cs_out_codec codecs[] = {CS_OUT_NONE, CS_OUT_ZSTD, CS_OUT_LZ4};
    for (int o = 0; o < 2; o++)
      for (int k = 0; k < 3; k++) round_trip(t, ops[o], codecs[k], d == 1 ? 333 : 1000, seed);
    ut_table_free(t);
  }
}
END_TEST

START_TEST(writer_refuses_codec) {
  cs_column col = {"x", CS_TYPE_INT32, true};
  cs_schema schema = {1, &col};
  ut_membuf m = {0};
  cs_err err = {0};
  cs_format_writer *w;
  cs_out_options opt = {.codec = CS_OUT_SNAPPY};
  ck_assert(cs_arrow_file_writer_ops.open(&schema, &opt, (cs_sink){ut_membuf_write, &m}, &w, &err) ==
            CS_EINVAL);
  ck_assert(strstr(err.msg, "zstd or lz4"));
  free(m.p);
}
END_TEST

/* ------------------------------------------------------- the converter */

static cs_rc file_write(void *ctx, const void *p, size_t n, cs_err *err) {
  if (fwrite(p, 1, n, ctx) != n) return cs_err_set(err, CS_EIO, "colstore: write failed");
  return CS_OK;
}

static int convert(const char *in, const char *out, const char *codec, bool stream) {
  cs_err err = {0};
  cs_arrow_file *f;
  if (cs_arrow_open(in, &f, &err) != CS_OK) return fprintf(stderr, "%s\n", err.msg), 1;
  cs_column *cols = calloc(f->n_cols, sizeof *cols);
  cs_pq_values *v = calloc(f->n_cols, sizeof *v);
  cs_chunk *ch = calloc(f->n_cols, sizeof *ch);
  for (uint32_t c = 0; c < f->n_cols; c++)
    cols[c] = (cs_column){f->cols[c].name, f->cols[c].type, f->cols[c].nullable};
  cs_schema schema = {f->n_cols, cols};
  cs_out_options opt = {.codec = strcmp(codec, "zstd") == 0  ? CS_OUT_ZSTD
                                 : strcmp(codec, "lz4") == 0 ? CS_OUT_LZ4
                                                             : CS_OUT_NONE};
  const cs_format_writer_ops *ops = stream ? &cs_arrow_stream_writer_ops : &cs_arrow_file_writer_ops;
  FILE *fp = fopen(out, "wb");
  cs_format_writer *w = NULL;
  cs_rc rc = fp ? ops->open(&schema, &opt, (cs_sink){file_write, fp}, &w, &err) : CS_EIO;
  for (;;) {
    bool have = false;
    uint64_t rows = 0;
    if (rc == CS_OK) rc = cs_arrow_next_batch(f, &have, &rows, &err);
    if (rc != CS_OK || !have) break;
    for (uint32_t c = 0; c < f->n_cols && rc == CS_OK; c++) {
      rc = cs_arrow_read_column(f, c, &v[c], &err);
      ch[c] = (cs_chunk){.validity = v[c].null_count ? v[c].validity : NULL,
                         .offsets = cs_type_is_varlen(cols[c].type) ? v[c].offsets : NULL,
                         .data = v[c].data,
                         .data_bytes = v[c].data_bytes,
                         .null_count = v[c].null_count};
    }
    if (rc == CS_OK) rc = ops->write(w, rows, ch, &err);
  }
  if (rc == CS_OK) rc = ops->finish(w, NULL, &err);
  if (w) ops->free(w);
  if (fp) fclose(fp);
  for (uint32_t c = 0; c < f->n_cols; c++) cs_pq_values_free(&v[c]);
  free(v), free(ch), free(cols);
  cs_arrow_close(f);
  if (rc != CS_OK) fprintf(stderr, "%s\n", err.msg[0] ? err.msg : "colstore: cannot write");
  return rc != CS_OK;
}

static Suite *arrow_suite(void) {
  Suite *s = suite_create("arrow");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, flatbuf_round_trip);
  tcase_add_test(tc, flatbuf_hostile_offsets);
  tcase_add_test(tc, flatbuf_depth_bound);
  tcase_add_test(tc, writer_reads_back);
  tcase_add_test(tc, writer_refuses_codec);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "--convert") == 0)
    return convert(argv[2], argv[3], argc > 4 ? argv[4] : "none", argc > 5 && strcmp(argv[5], "stream") == 0);
  return ut_run_suite(arrow_suite());
}
