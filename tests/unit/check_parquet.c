/*
** check_parquet.c - the Parquet reader's parts (core/interchange/): the
** Thrift compact protocol, the footer's schema mapping, the RLE/bit-packed
** hybrid, and a hand-built column chunk decoded.
**
** The Thrift cursor is checked on bytes built here by the writer half of
** cs_thrift.c and, where the writer could share a mistake with the
** reader, on bytes written out by hand from the protocol's description
** (field header nibbles, zigzag varints).  Its promise is that no input
** crashes it or makes it allocate: every prefix of a valid struct must
** fail cleanly, and hostile counts (a list of 2^31 elements in three
** bytes, a string longer than the buffer, nesting past the bound, an
** eleven-byte varint) must fail without reading past the bytes given.
** Run under ASan (make test-asan) that is what "cleanly" means.
**
** The hybrid decoder is compared with a naive reference: random values are
** encoded here by a straightforward encoder (runs chosen at random between
** RLE and bit-packed, the bits packed one at a time) and must decode to
** themselves, at every bit width from 0 to 32; a truncated encoding must
** be refused.  The seed is COLSTORE_SEED's when set, printed on failure.
**
** DuckDB-written files are the end-to-end oracle (tests/sql/test_parquet.py);
** here chunks are built by hand for what DuckDB does not write: PLAIN pages
** with definition levels split across two pages, a REQUIRED column (DuckDB
** marks every column OPTIONAL), and DELTA_BYTE_ARRAY strings, with a naive
** DELTA_BINARY_PACKED encoder written here (bits one at a time) that the
** decoder must agree with on integers that wrap at both extremes.
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

/* ------------------------------------------------------------ thrift */

/* A struct of every field kind the reader knows, written by the writer. */
static void write_sample(cs_thrift_out *o) {
  cs_thrift_put_i64(o, 1, CS_THRIFT_I32, -123456);
  cs_thrift_put_i64(o, 2, CS_THRIFT_I64, INT64_MIN);
  cs_thrift_put_binary(o, 3, "hello", 5);
  cs_thrift_put_list(o, 4, CS_THRIFT_I32, 20);
  for (int i = 0; i < 20; i++) cs_thrift_put_varint(o, (uint64_t)(i * 2)); /* zigzag of i */
  cs_thrift_put_struct_begin(o, 40); /* a long-form field id (delta > 15) */
  cs_thrift_put_i64(o, 1, CS_THRIFT_I16, 7);
  cs_thrift_put_field(o, 2, CS_THRIFT_TRUE);
  cs_thrift_put_struct_end(o);
  cs_thrift_put_field(o, 41, CS_THRIFT_FALSE);
  cs_thrift_put_struct_end(o);
}

START_TEST(thrift_round_trip) {
  cs_thrift_out o = {0};
  write_sample(&o);
  ck_assert(!o.failed);
  cs_thrift t;
  cs_thrift_init(&t, o.buf, o.n);
  ck_assert(cs_thrift_begin(&t, CS_THRIFT_STRUCT));
  int16_t last = 0, id;
  uint8_t ft;
  int seen = 0;
  while (cs_thrift_next(&t, &last, &id, &ft)) {
    int64_t v;
    int32_t v32;
    const uint8_t *p;
    uint32_t n;
    bool b;
    switch (id) {
      case 1: ck_assert(cs_thrift_i32(&t, ft, &v32) && v32 == -123456); break;
      case 2: ck_assert(cs_thrift_i64(&t, ft, &v) && v == INT64_MIN); break;
      case 3: ck_assert(cs_thrift_binary(&t, ft, &p, &n) && n == 5 && memcmp(p, "hello", 5) == 0); break;
      case 4: {
        uint8_t elem;
        ck_assert(cs_thrift_list(&t, ft, &elem, &n) && elem == CS_THRIFT_I32 && n == 20);
        for (uint32_t i = 0; i < n; i++) ck_assert(cs_thrift_i32(&t, elem, &v32) && v32 == (int32_t)i);
        break;
      }
      case 40: {
        ck_assert(cs_thrift_begin(&t, ft));
        int16_t l2 = 0, id2;
        uint8_t f2;
        int inner = 0;
        while (cs_thrift_next(&t, &l2, &id2, &f2)) {
          if (id2 == 1) ck_assert(cs_thrift_i64(&t, f2, &v) && v == 7);
          if (id2 == 2) ck_assert(cs_thrift_bool(&t, f2, &b) && b);
          inner++;
        }
        ck_assert(!t.failed && inner == 2);
        break;
      }
      case 41: ck_assert(cs_thrift_bool(&t, ft, &b) && !b); break;
      default: ck_abort_msg("unexpected field %d", id);
    }
    seen++;
  }
  ck_assert(!t.failed && seen == 6 && t.p == t.end && t.depth == 0);
  cs_thrift_out_free(&o);
}
END_TEST

/* Bytes from the protocol's description, not from the writer: field 1 i32
** = -1 (0x15, zigzag 1), field 2 binary "ab" (0x18 0x02 'a' 'b'), field 20
** (long form: type byte 0x05, zigzag 40) i32 = 3 (6), stop. */
START_TEST(thrift_reads_hand_bytes) {
  static const uint8_t bytes[] = {0x15, 0x01, 0x18, 0x02, 'a', 'b', 0x05, 40, 0x06, 0x00};
  cs_thrift t;
  cs_thrift_init(&t, bytes, sizeof bytes);
  ck_assert(cs_thrift_begin(&t, CS_THRIFT_STRUCT));
  int16_t last = 0, id;
  uint8_t ft;
  int32_t v;
  const uint8_t *p;
  uint32_t n;
  ck_assert(cs_thrift_next(&t, &last, &id, &ft) && id == 1 && cs_thrift_i32(&t, ft, &v) && v == -1);
  ck_assert(cs_thrift_next(&t, &last, &id, &ft) && id == 2 && cs_thrift_binary(&t, ft, &p, &n) && n == 2);
  ck_assert(cs_thrift_next(&t, &last, &id, &ft) && id == 20 && cs_thrift_i32(&t, ft, &v) && v == 3);
  ck_assert(!cs_thrift_next(&t, &last, &id, &ft) && !t.failed && t.p == t.end);
  /* The writer produces the same bytes. */
  cs_thrift_out o = {0};
  cs_thrift_put_i64(&o, 1, CS_THRIFT_I32, -1);
  cs_thrift_put_binary(&o, 2, "ab", 2);
  cs_thrift_put_i64(&o, 20, CS_THRIFT_I32, 3);
  cs_thrift_put_struct_end(&o);
  ck_assert(o.n == sizeof bytes && memcmp(o.buf, bytes, sizeof bytes) == 0);
  cs_thrift_out_free(&o);
}
END_TEST

START_TEST(thrift_every_prefix_fails) {
  cs_thrift_out o = {0};
  write_sample(&o);
  for (size_t n = 0; n <= o.n; n++) {
    uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past them */
    memcpy(copy, o.buf, n);
    cs_thrift t;
    cs_thrift_init(&t, copy, n);
    bool ok = cs_thrift_skip(&t, CS_THRIFT_STRUCT);
    ck_assert_msg(ok == (n == o.n), "prefix of %zu of %zu bytes: skip gave %d", n, o.n, ok);
    free(copy);
  }
  cs_thrift_out_free(&o);
}
END_TEST

START_TEST(thrift_hostile_lengths) {
  cs_thrift t;
  uint8_t elem;
  uint32_t n;
  const uint8_t *p;
  /* A list header claiming 2^31 i32 elements, with none present. */
  static const uint8_t big_list[] = {0xf5, 0x80, 0x80, 0x80, 0x80, 0x08};
  cs_thrift_init(&t, big_list, sizeof big_list);
  ck_assert(!cs_thrift_list(&t, CS_THRIFT_LIST, &elem, &n));
  /* A string of 1000 bytes in a buffer of 4. */
  static const uint8_t big_str[] = {0xe8, 0x07, 'a', 'b'};
  cs_thrift_init(&t, big_str, sizeof big_str);
  ck_assert(!cs_thrift_binary(&t, CS_THRIFT_BINARY, &p, &n));
  /* A varint of eleven continuation bytes. */
  static const uint8_t long_varint[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  uint64_t u;
  cs_thrift_init(&t, long_varint, sizeof long_varint);
  ck_assert(!cs_thrift_varint(&t, &u));
  /* Structs nested 100 deep: field 1 of type struct, again and again. */
  uint8_t deep[101];
  memset(deep, 0x1c, 100);
  deep[100] = 0;
  cs_thrift_init(&t, deep, sizeof deep);
  ck_assert(!cs_thrift_skip(&t, CS_THRIFT_STRUCT));
  /* A map of 2^30 entries in a handful of bytes. */
  static const uint8_t big_map[] = {0x1b, 0x80, 0x80, 0x80, 0x80, 0x04, 0x55, 0x00};
  cs_thrift_init(&t, big_map, sizeof big_map);
  ck_assert(!cs_thrift_skip(&t, CS_THRIFT_STRUCT));
  /* Once failed, every read fails. */
  ck_assert(!cs_thrift_varint(&t, &u));
}
END_TEST

START_TEST(thrift_random_bytes_never_crash) {
  uint64_t seed = test_seed();
  ut_rng r = ut_rng_seed(seed);
  for (int round = 0; round < 20000; round++) {
    size_t n = (size_t)ut_rng_below(&r, 64);
    uint8_t *buf = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)ut_rng_u64(&r);
    cs_thrift t;
    cs_thrift_init(&t, buf, n);
    if (cs_thrift_skip(&t, CS_THRIFT_STRUCT))
      ck_assert_msg(t.p <= t.end && t.depth == 0, "seed %llx round %d", (unsigned long long)seed, round);
    free(buf);
  }
}
END_TEST

/* ------------------------------------------------------------ footer */

typedef struct leaf {
  const char *name;
  int type, repetition, converted;   /* converted -1: none */
  int logical, bit_width, is_signed; /* logical 0: none; INTEGER = 10, DECIMAL = 5 */
  int children;
} leaf;

/* FileMetaData of one row group of rows rows over the leaves given. */
static void write_footer_rows(cs_thrift_out *o, const leaf *leaves, int n, int64_t rows) {
  cs_thrift_put_i64(o, 1, CS_THRIFT_I32, 1);
  cs_thrift_put_list(o, 2, CS_THRIFT_STRUCT, (uint32_t)n + 1);
  cs_thrift_put_struct_begin(o, 0);
  cs_thrift_put_binary(o, 4, "schema", 6);
  cs_thrift_put_i64(o, 5, CS_THRIFT_I32, n);
  cs_thrift_put_struct_end(o);
  for (int i = 0; i < n; i++) {
    const leaf *l = &leaves[i];
    cs_thrift_put_struct_begin(o, 0);
    if (!l->children) cs_thrift_put_i64(o, 1, CS_THRIFT_I32, l->type);
    cs_thrift_put_i64(o, 3, CS_THRIFT_I32, l->repetition);
    cs_thrift_put_binary(o, 4, l->name, (uint32_t)strlen(l->name));
    if (l->children) cs_thrift_put_i64(o, 5, CS_THRIFT_I32, l->children);
    if (l->converted >= 0) cs_thrift_put_i64(o, 6, CS_THRIFT_I32, l->converted);
    if (l->logical) {
      cs_thrift_put_struct_begin(o, 10);
      cs_thrift_put_struct_begin(o, (int16_t)l->logical);
      if (l->logical == 10) {
        cs_thrift_put_i64(o, 1, CS_THRIFT_I8, l->bit_width);
        cs_thrift_put_field(o, 2, l->is_signed ? CS_THRIFT_TRUE : CS_THRIFT_FALSE);
      } else if (l->logical == 5) {
        cs_thrift_put_i64(o, 1, CS_THRIFT_I32, 2);
        cs_thrift_put_i64(o, 2, CS_THRIFT_I32, 10);
      }
      cs_thrift_put_struct_end(o);
      cs_thrift_put_struct_end(o);
    }
    cs_thrift_put_struct_end(o);
  }
  cs_thrift_put_i64(o, 3, CS_THRIFT_I64, rows);
  cs_thrift_put_list(o, 4, CS_THRIFT_STRUCT, 1);
  cs_thrift_put_struct_begin(o, 0);
  cs_thrift_put_list(o, 1, CS_THRIFT_STRUCT, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    cs_thrift_put_struct_begin(o, 0);
    cs_thrift_put_i64(o, 2, CS_THRIFT_I64, 4);
    cs_thrift_put_struct_begin(o, 3);
    cs_thrift_put_i64(o, 1, CS_THRIFT_I32, leaves[i].type);
    cs_thrift_put_list(o, 2, CS_THRIFT_I32, 0);
    cs_thrift_put_list(o, 3, CS_THRIFT_BINARY, 0);
    cs_thrift_put_i64(o, 4, CS_THRIFT_I32, 0);
    cs_thrift_put_i64(o, 5, CS_THRIFT_I64, 10);
    cs_thrift_put_i64(o, 6, CS_THRIFT_I64, 100);
    cs_thrift_put_i64(o, 7, CS_THRIFT_I64, 100);
    cs_thrift_put_i64(o, 9, CS_THRIFT_I64, 4);
    cs_thrift_put_struct_end(o);
    cs_thrift_put_struct_end(o);
  }
  cs_thrift_put_i64(o, 2, CS_THRIFT_I64, 100);
  cs_thrift_put_i64(o, 3, CS_THRIFT_I64, rows);
  cs_thrift_put_struct_end(o);
  cs_thrift_put_struct_end(o);
}

static void write_footer(cs_thrift_out *o, const leaf *leaves, int n) { write_footer_rows(o, leaves, n, 10); }

START_TEST(footer_maps_types) {
  static const leaf leaves[] = {
      {"i8", PQ_INT32, 0, -1, 10, 8, 1, 0},    {"u16", PQ_INT32, 1, -1, 10, 16, 0, 0},
      {"u64", PQ_INT64, 1, 14, 0, 0, 0, 0},    {"s", PQ_BYTE_ARRAY, 1, 0, 0, 0, 0, 0},
      {"b", PQ_BYTE_ARRAY, 1, -1, 0, 0, 0, 0}, {"f", PQ_FLOAT, 0, -1, 0, 0, 0, 0},
      {"day", PQ_INT32, 1, 6, 0, 0, 0, 0},     {"ms", PQ_INT32, 1, 7, 0, 0, 0, 0},
      {"dec", PQ_INT64, 1, -1, 5, 0, 0, 0},    {"i96", PQ_INT96, 1, -1, 0, 0, 0, 0},
      {"fixed", PQ_FLBA, 1, -1, 0, 0, 0, 0},   {"flag", PQ_BOOLEAN, 0, -1, 0, 0, 0, 0},
  };
  static const cs_type want[] = {CS_TYPE_INT8,
                                 CS_TYPE_UINT16,
                                 CS_TYPE_INT64,
                                 CS_TYPE_TEXT,
                                 CS_TYPE_BLOB,
                                 CS_TYPE_FLOAT32,
                                 CS_TYPE_INT32,
                                 CS_TYPE_INT64,
                                 0,
                                 0,
                                 CS_TYPE_BLOB,
                                 CS_TYPE_BOOL};
  int n = (int)(sizeof leaves / sizeof *leaves);
  cs_thrift_out o = {0};
  write_footer(&o, leaves, n);
  cs_pq_file *f;
  cs_err err = {0};
  ck_assert_msg(cs_pq_parse_metadata(o.buf, o.n, "t.parquet", &f, &err) == CS_OK, "%s", err.msg);
  ck_assert_uint_eq(f->n_cols, (unsigned)n);
  ck_assert_uint_eq(f->n_row_groups, 1);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(f->cols[i].type == want[i], "column %s: type %d, want %d (%s)", leaves[i].name,
                  f->cols[i].type, want[i], f->cols[i].logical);
    ck_assert(f->cols[i].optional == (leaves[i].repetition == 1));
  }
  ck_assert(f->cols[2].conv == PQ_CONV_U64 && f->cols[7].conv == PQ_CONV_WIDEN &&
            f->cols[0].conv == PQ_CONV_NARROW);
  ck_assert(cs_pq_column_supported(f, 8, &err) == CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "column dec") && strstr(err.msg, "DECIMAL(10, 2)"), "%s", err.msg);
  ck_assert(cs_pq_column_supported(f, 9, &err) == CS_EINVAL && strstr(err.msg, "INT96"));
  cs_pq_close(f);
  /* Every prefix of the footer is an error, never a crash. */
  for (size_t k = 0; k < o.n; k++) {
    uint8_t *copy = malloc(k ? k : 1);
    memcpy(copy, o.buf, k);
    ck_assert_msg(cs_pq_parse_metadata(copy, k, "t.parquet", &f, &err) != CS_OK, "prefix %zu parsed", k);
    ck_assert_msg(strncmp(err.msg, "colstore: t.parquet", 19) == 0, "%s", err.msg);
    free(copy);
  }
  cs_thrift_out_free(&o);
}
END_TEST

START_TEST(footer_refuses_nested) {
  static const leaf leaves[] = {{"id", PQ_INT64, 0, -1, 0, 0, 0, 0}, {"tags", 0, 1, 3, 0, 0, 0, 1}};
  cs_thrift_out o = {0};
  write_footer(&o, leaves, 2);
  cs_pq_file *f;
  cs_err err = {0};
  ck_assert(cs_pq_parse_metadata(o.buf, o.n, "n.parquet", &f, &err) == CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "column tags") && strstr(err.msg, "nested"), "%s", err.msg);
  cs_thrift_out_free(&o);
}
END_TEST

/* ------------------------------------------------------- RLE/bit-packed */

typedef struct bitbuf {
  uint8_t *b;
  size_t n, cap;
} bitbuf;

static void bb_byte(bitbuf *bb, uint8_t v) {
  if (bb->n == bb->cap) {
    bb->cap = bb->cap ? bb->cap * 2 : 256;
    bb->b = realloc(bb->b, bb->cap);
  }
  bb->b[bb->n++] = v;
}

static void bb_varint(bitbuf *bb, uint64_t v) {
  do {
    bb_byte(bb, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    v >>= 7;
  } while (v);
}

/* The naive encoder: runs of random kind and length, bits one at a time. */
static void naive_encode(bitbuf *bb, const uint32_t *v, uint32_t n, int w, ut_rng *r) {
  uint32_t i = 0;
  while (i < n) {
    if (ut_rng_below(r, 2)) { /* RLE: as many equal values as follow */
      uint32_t k = 1;
      while (i + k < n && v[i + k] == v[i] && k < 1000) k++;
      bb_varint(bb, (uint64_t)k << 1);
      for (int b = 0; b < (w + 7) / 8; b++) bb_byte(bb, (uint8_t)(v[i] >> (8 * b)));
      i += k;
    } else { /* bit-packed: 1..4 groups of 8, padded with zeros */
      uint32_t groups = 1 + (uint32_t)ut_rng_below(r, 4);
      bb_varint(bb, (uint64_t)groups << 1 | 1);
      size_t start = bb->n, bits = (size_t)groups * 8 * (size_t)w;
      for (size_t k = 0; k < (bits + 7) / 8; k++) bb_byte(bb, 0);
      for (uint32_t k = 0; k < groups * 8; k++) {
        uint32_t x = i + k < n ? v[i + k] : 0;
        for (int b = 0; b < w; b++)
          if (x >> b & 1) {
            size_t bit = (size_t)k * (size_t)w + (size_t)b;
            bb->b[start + bit / 8] |= (uint8_t)(1u << (bit % 8));
          }
      }
      i += groups * 8;
    }
  }
}

START_TEST(rle_matches_naive_encoder) {
  uint64_t seed = test_seed();
  ut_rng r = ut_rng_seed(seed);
  for (int w = 0; w <= 32; w++) {
    for (int round = 0; round < 20; round++) {
      uint32_t n = 1 + (uint32_t)ut_rng_below(&r, 3000);
      uint32_t *v = malloc(n * sizeof *v), *got = malloc(n * sizeof *got);
      uint64_t mask = w == 32 ? 0xffffffffu : (1ull << w) - 1;
      for (uint32_t i = 0; i < n; i++)
        v[i] = i && ut_rng_below(&r, 3) ? v[i - 1] : (uint32_t)(ut_rng_u64(&r) & mask); /* runs */
      bitbuf bb = {0};
      naive_encode(&bb, v, n, w, &r);
      uint8_t *exact = malloc(bb.n ? bb.n : 1);
      memcpy(exact, bb.b, bb.n);
      ck_assert_msg(cs_pq_rle_decode(exact, exact + bb.n, w, got, n), "seed %llx width %d round %d: refused",
                    (unsigned long long)seed, w, round);
      for (uint32_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == v[i], "seed %llx width %d round %d: value %u is %u, want %u",
                      (unsigned long long)seed, w, round, i, got[i], v[i]);
      /* The encoding without its last byte cannot give all n values
      ** unless the last run was padding only. */
      if (bb.n > 0 && w > 0 && n > 1) {
        bool ok = cs_pq_rle_decode(exact, exact + bb.n - 1, w, got, n);
        if (ok)
          for (uint32_t i = 0; i < n; i++) ck_assert(got[i] == v[i]);
      }
      free(exact);
      free(bb.b);
      free(v);
      free(got);
    }
  }
  uint32_t one;
  static const uint8_t empty[1] = {0};
  ck_assert(!cs_pq_rle_decode(empty, empty, 1, &one, 1));
  ck_assert(!cs_pq_rle_decode(empty, empty + 1, 33, &one, 1));
}
END_TEST

/* ------------------------------------------------------ a chunk by hand */

static void put_u32(bitbuf *bb, uint32_t v) {
  for (int i = 0; i < 4; i++) bb_byte(bb, (uint8_t)(v >> (8 * i)));
}

/* A v1 data page header of n values of encoding enc, then its body. */
static void page_with_body(bitbuf *bb, const bitbuf *body, uint32_t n, int enc) {
  cs_thrift_out h = {0};
  cs_pq_put_page_header(&h, PQ_PAGE_DATA, body->n, body->n, (int32_t)n, enc);
  for (size_t i = 0; i < h.n; i++) bb_byte(bb, h.buf[i]);
  for (size_t i = 0; i < body->n; i++) bb_byte(bb, body->b[i]);
  cs_thrift_out_free(&h);
}

/* A v1 page of PLAIN INT32 values: levels (RLE, length-prefixed; valid
** NULL: a REQUIRED column, no levels), values. */
static void plain_page(bitbuf *bb, const int32_t *v, const uint8_t *valid, uint32_t n) {
  static const uint8_t all_valid[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  bool required = !valid;
  if (required) valid = all_valid;
  bitbuf body = {0};
  bitbuf lv = {0};
  bb_varint(&lv, (uint64_t)1 << 1 | 1); /* one bit-packed group of 8 */
  uint8_t bits = 0;
  for (uint32_t i = 0; i < n; i++) bits |= (uint8_t)(valid[i] << i);
  bb_byte(&lv, bits);
  if (!required) {
    put_u32(&body, (uint32_t)lv.n);
    for (size_t i = 0; i < lv.n; i++) bb_byte(&body, lv.b[i]);
  }
  for (uint32_t i = 0; i < n; i++)
    if (valid[i]) put_u32(&body, (uint32_t)v[i]);
  page_with_body(bb, &body, n, PQ_PLAIN);
  free(body.b);
  free(lv.b);
}

START_TEST(chunk_by_hand) {
  static const leaf leaves[] = {{"x", PQ_INT32, 1, -1, 10, 16, 1, 0}};
  cs_thrift_out o = {0};
  write_footer(&o, leaves, 1);
  cs_pq_file *f;
  cs_err err = {0};
  ck_assert(cs_pq_parse_metadata(o.buf, o.n, "h.parquet", &f, &err) == CS_OK);
  static const int32_t v[10] = {1, -2, 3, 0, 5, -32768, 7, 32767, 9, 10};
  static const uint8_t valid[10] = {1, 1, 0, 1, 1, 1, 0, 1, 1, 1};
  bitbuf chunk = {0};
  plain_page(&chunk, v, valid, 6);
  plain_page(&chunk, v + 6, valid + 6, 4);
  cs_pq_values out = {0};
  ck_assert_msg(cs_pq_decode_chunk(f, 0, 0, chunk.b, chunk.n, &out, &err) == CS_OK, "%s", err.msg);
  ck_assert_uint_eq(out.n_rows, 10);
  ck_assert_uint_eq(out.null_count, 2);
  for (int i = 0; i < 10; i++) {
    int16_t got;
    memcpy(&got, out.data + i * 2, 2);
    ck_assert_int_eq((out.validity[i / 8] >> (i % 8)) & 1, valid[i]);
    ck_assert_int_eq(got, valid[i] ? v[i] : 0);
  }
  /* Every truncation of the chunk is an error naming the column. */
  for (size_t k = 0; k < chunk.n; k++) {
    uint8_t *copy = malloc(k ? k : 1);
    memcpy(copy, chunk.b, k);
    ck_assert_msg(cs_pq_decode_chunk(f, 0, 0, copy, k, &out, &err) != CS_OK, "prefix %zu decoded", k);
    ck_assert_msg(strstr(err.msg, "row group 0, column x"), "%s", err.msg);
    free(copy);
  }
  /* A value outside INT(16): the error names it. */
  static const int32_t wide[6] = {1, 2, 40000, 4, 5, 6};
  static const uint8_t all[6] = {1, 1, 1, 1, 1, 1};
  bitbuf bad = {0};
  plain_page(&bad, wide, all, 6);
  plain_page(&bad, v + 6, valid + 6, 4);
  ck_assert(cs_pq_decode_chunk(f, 0, 0, bad.b, bad.n, &out, &err) == CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "40000") && strstr(err.msg, "INT16"), "%s", err.msg);
  cs_pq_values_free(&out);
  free(bad.b);
  free(chunk.b);
  cs_pq_close(f);
  cs_thrift_out_free(&o);
}
END_TEST

START_TEST(required_chunk_has_no_levels) {
  static const leaf leaves[] = {{"r", PQ_INT32, 0, -1, 0, 0, 0, 0}};
  cs_thrift_out o = {0};
  write_footer(&o, leaves, 1);
  cs_pq_file *f;
  cs_err err = {0};
  ck_assert(cs_pq_parse_metadata(o.buf, o.n, "r.parquet", &f, &err) == CS_OK);
  ck_assert(!f->cols[0].optional && f->cols[0].type == CS_TYPE_INT32);
  static const int32_t v[10] = {5, -6, 7, INT32_MIN, INT32_MAX, 0, 1, 2, 3, 4};
  bitbuf chunk = {0};
  plain_page(&chunk, v, NULL, 3);
  plain_page(&chunk, v + 3, NULL, 7);
  cs_pq_values out = {0};
  ck_assert_msg(cs_pq_decode_chunk(f, 0, 0, chunk.b, chunk.n, &out, &err) == CS_OK, "%s", err.msg);
  ck_assert_uint_eq(out.n_rows, 10);
  ck_assert_uint_eq(out.null_count, 0);
  ck_assert(memcmp(out.data, v, sizeof v) == 0);
  cs_pq_values_free(&out);
  free(chunk.b);
  cs_pq_close(f);
  cs_thrift_out_free(&o);
}
END_TEST

/* DELTA_BINARY_PACKED, naively: blocks of 128 values in 4 miniblocks, the
** bits packed one at a time, unneeded miniblocks of the last block left
** without data (as the format allows). */
static uint64_t zz(int64_t x) { return (uint64_t)x << 1 ^ (uint64_t)(x >> 63); }

static void delta_encode(bitbuf *bb, const int64_t *v, uint32_t n) {
  bb_varint(bb, 128);
  bb_varint(bb, 4);
  bb_varint(bb, n);
  bb_varint(bb, zz(n ? v[0] : 0));
  for (uint32_t start = 1; start < n; start += 128) {
    uint32_t m = n - start < 128 ? n - start : 128;
    uint64_t d[128];
    int64_t min = INT64_MAX;
    for (uint32_t k = 0; k < m; k++) {
      d[k] = (uint64_t)v[start + k] - (uint64_t)v[start + k - 1];
      if ((int64_t)d[k] < min) min = (int64_t)d[k];
    }
    bb_varint(bb, zz(min));
    int widths[4] = {0, 0, 0, 0};
    for (uint32_t k = 0; k < m; k++) {
      uint64_t x = d[k] - (uint64_t)min;
      while (widths[k / 32] < 64 && (x >> widths[k / 32])) widths[k / 32]++;
    }
    for (int mb = 0; mb < 4; mb++) bb_byte(bb, (uint8_t)widths[mb]);
    for (uint32_t mb = 0; mb < 4 && mb * 32 < m; mb++) {
      size_t at = bb->n, w = (size_t)widths[mb];
      for (size_t k = 0; k < 32 * w / 8; k++) bb_byte(bb, 0);
      for (uint32_t k = 0; k < 32; k++) {
        uint32_t idx = mb * 32 + k;
        uint64_t x = idx < m ? d[idx] - (uint64_t)min : 0;
        for (size_t b = 0; b < w; b++)
          if (x >> b & 1) bb->b[at + (k * w + b) / 8] |= (uint8_t)(1u << ((k * w + b) % 8));
      }
    }
  }
}

/* DELTA_BINARY_PACKED integers and DELTA_BYTE_ARRAY strings (which DuckDB
** does not write) from the naive encoder above, over several blocks. */
START_TEST(delta_encodings_by_hand) {
  uint64_t seed = test_seed();
  ut_rng r = ut_rng_seed(seed);
  enum { N = 1000 };
  static const leaf leaves[] = {{"n", PQ_INT64, 0, -1, 0, 0, 0, 0}, {"s", PQ_BYTE_ARRAY, 0, 0, 0, 0, 0, 0}};
  cs_thrift_out o = {0};
  write_footer_rows(&o, leaves, 2, N);
  cs_pq_file *f;
  cs_err err = {0};
  ck_assert(cs_pq_parse_metadata(o.buf, o.n, "d.parquet", &f, &err) == CS_OK);
  ck_assert(f->cols[1].type == CS_TYPE_TEXT);
  /* Integers: runs, jumps and both extremes (deltas that wrap). */
  int64_t v[N];
  for (int i = 0; i < N; i++) {
    uint64_t k = ut_rng_below(&r, 10);
    v[i] = k == 0   ? INT64_MIN
           : k == 1 ? INT64_MAX
           : k < 5  ? (int64_t)ut_rng_u64(&r)
                    : (int64_t)((uint64_t)(i ? v[i - 1] : 0) + 3);
  }
  bitbuf body = {0}, chunk = {0};
  delta_encode(&body, v, N);
  page_with_body(&chunk, &body, N, PQ_DELTA_BINARY_PACKED);
  cs_pq_values out = {0};
  ck_assert_msg(cs_pq_decode_chunk(f, 0, 0, chunk.b, chunk.n, &out, &err) == CS_OK, "seed %llx: %s",
                (unsigned long long)seed, err.msg);
  ck_assert_msg(memcmp(out.data, v, sizeof v) == 0, "seed %llx: DELTA_BINARY_PACKED values differ",
                (unsigned long long)seed);
  /* Strings sharing prefixes: prefix lengths, suffix lengths, suffixes. */
  char str[N][12];
  int64_t pre[N], suf[N];
  bitbuf bytes = {0};
  for (int i = 0; i < N; i++) {
    int len = (int)ut_rng_below(&r, 11);
    int keep = i ? (int)ut_rng_below(&r, 12) : 0;
    if (i && keep > (int)strlen(str[i - 1])) keep = (int)strlen(str[i - 1]);
    if (keep > len) len = keep;
    if (i) memcpy(str[i], str[i - 1], (size_t)keep);
    for (int k = keep; k < len; k++) str[i][k] = (char)('a' + ut_rng_below(&r, 3));
    str[i][len] = 0;
    pre[i] = keep;
    suf[i] = len - keep;
    for (int k = keep; k < len; k++) bb_byte(&bytes, (uint8_t)str[i][k]);
  }
  bitbuf sbody = {0}, schunk = {0};
  delta_encode(&sbody, pre, N);
  delta_encode(&sbody, suf, N);
  for (size_t i = 0; i < bytes.n; i++) bb_byte(&sbody, bytes.b[i]);
  page_with_body(&schunk, &sbody, N, PQ_DELTA_BYTE_ARRAY);
  ck_assert_msg(cs_pq_decode_chunk(f, 0, 1, schunk.b, schunk.n, &out, &err) == CS_OK, "seed %llx: %s",
                (unsigned long long)seed, err.msg);
  for (int i = 0; i < N; i++) {
    size_t len = (size_t)(out.offsets[i + 1] - out.offsets[i]);
    ck_assert_msg(len == strlen(str[i]) && memcmp(out.data + out.offsets[i], str[i], len) == 0,
                  "seed %llx: string %d is '%.*s', want '%s'", (unsigned long long)seed, i, (int)len,
                  (const char *)out.data + out.offsets[i], str[i]);
  }
  /* A prefix longer than the value before it is damage. */
  pre[5] = 100;
  bitbuf bad = {0}, bchunk = {0};
  delta_encode(&bad, pre, N);
  delta_encode(&bad, suf, N);
  for (size_t i = 0; i < bytes.n; i++) bb_byte(&bad, bytes.b[i]);
  page_with_body(&bchunk, &bad, N, PQ_DELTA_BYTE_ARRAY);
  ck_assert(cs_pq_decode_chunk(f, 0, 1, bchunk.b, bchunk.n, &out, &err) == CS_ECORRUPT);
  ck_assert_msg(strstr(err.msg, "column s") && strstr(err.msg, "prefix"), "%s", err.msg);
  cs_pq_values_free(&out);
  free(body.b), free(chunk.b), free(bytes.b), free(sbody.b), free(schunk.b), free(bad.b), free(bchunk.b);
  cs_pq_close(f);
  cs_thrift_out_free(&o);
}
END_TEST

static Suite *parquet_suite(void) {
  Suite *s = suite_create("parquet");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, thrift_round_trip);
  tcase_add_test(tc, thrift_reads_hand_bytes);
  tcase_add_test(tc, thrift_every_prefix_fails);
  tcase_add_test(tc, thrift_hostile_lengths);
  tcase_add_test(tc, thrift_random_bytes_never_crash);
  tcase_add_test(tc, footer_maps_types);
  tcase_add_test(tc, footer_refuses_nested);
  tcase_add_test(tc, rle_matches_naive_encoder);
  tcase_add_test(tc, chunk_by_hand);
  tcase_add_test(tc, required_chunk_has_no_levels);
  tcase_add_test(tc, delta_encodings_by_hand);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(parquet_suite()); }
