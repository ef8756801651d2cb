/*
** check_format.c - what goes into a store comes back out, bit for bit.
**
** Every test here writes a reference table (unit_util.h's ut_table) through
** the public writer and reads it back through the public reader, cell by
** cell: every type with and without NULLs, the extremes of each width,
** floats by their bits (-0.0, subnormals, infinities, NaN payloads), empty
** and multi-byte strings, blobs with zero bytes, empty and one-row stores,
** and random tables under fixed seeds.  The derived metadata is checked the
** same way, against a naive recomputation from the reference: zone maps per
** chunk, whole-column statistics (the "sorted" flag that turns a range
** predicate into a binary search), record boundaries (cs_store_find_record
** against a linear scan), and the 64-byte alignment the kernels rely on.
**
** Why so much randomness on top of hand-picked edges: the writer slices
** batches into records at record_rows and rebases offsets and bitmaps per
** slice, so the bugs worth fearing live where a NULL, an empty string or an
** extreme value meets a record boundary.  Small record sizes (8, 13 -> 16)
** and irregular write sizes put many boundaries under every seed.  A failing
** random test prints its seed; rerun it by changing the loop range.
*/
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit_util.h"

#define N_TYPES 12

static const cs_type all_types[N_TYPES] = {
    CS_TYPE_INT8,   CS_TYPE_INT16,   CS_TYPE_INT32,   CS_TYPE_INT64, CS_TYPE_UINT8, CS_TYPE_UINT16,
    CS_TYPE_UINT32, CS_TYPE_FLOAT32, CS_TYPE_FLOAT64, CS_TYPE_BOOL,  CS_TYPE_TEXT,  CS_TYPE_BLOB,
};

/* Every type twice: nullable columns first, then NOT NULL ones. */
static const cs_column every_type_cols[2 * N_TYPES] = {
    {"i8", CS_TYPE_INT8, true},        {"i16", CS_TYPE_INT16, true},       {"i32", CS_TYPE_INT32, true},
    {"i64", CS_TYPE_INT64, true},      {"u8", CS_TYPE_UINT8, true},        {"u16", CS_TYPE_UINT16, true},
    {"u32", CS_TYPE_UINT32, true},     {"f32", CS_TYPE_FLOAT32, true},     {"f64", CS_TYPE_FLOAT64, true},
    {"b", CS_TYPE_BOOL, true},         {"t", CS_TYPE_TEXT, true},          {"bl", CS_TYPE_BLOB, true},
    {"i8_nn", CS_TYPE_INT8, false},    {"i16_nn", CS_TYPE_INT16, false},   {"i32_nn", CS_TYPE_INT32, false},
    {"i64_nn", CS_TYPE_INT64, false},  {"u8_nn", CS_TYPE_UINT8, false},    {"u16_nn", CS_TYPE_UINT16, false},
    {"u32_nn", CS_TYPE_UINT32, false}, {"f32_nn", CS_TYPE_FLOAT32, false}, {"f64_nn", CS_TYPE_FLOAT64, false},
    {"b_nn", CS_TYPE_BOOL, false},     {"t_nn", CS_TYPE_TEXT, false},      {"bl_nn", CS_TYPE_BLOB, false},
};
static const cs_schema every_type_schema = {2 * N_TYPES, every_type_cols};

/* ---------------------------------------------- naive derived metadata */

typedef struct naive_stats {
  uint64_t null_count;
  bool any;    /* at least one non-NULL, non-NaN value */
  bool sorted; /* no NULLs, no NaN, non-decreasing */
  int64_t min_i, max_i;
  double min_f, max_f;
} naive_stats;

static void naive_compute(const ut_table *t, uint32_t col, uint64_t first, uint64_t n, naive_stats *out) {
  cs_type type = t->cols[col].type;
  bool is_float = cs_type_is_float(type);
  memset(out, 0, sizeof *out);
  out->sorted = true;
  bool have_prev = false;
  int64_t prev_i = 0;
  double prev_f = 0;
  for (uint64_t row = first; row < first + n; row++) {
    const ut_cell *c = ut_table_cell(t, row, col);
    if (c->null) {
      out->null_count++;
      out->sorted = false;
      continue;
    }
    if (cs_type_is_varlen(type)) continue;
    if (is_float && isnan(c->f)) {
      out->sorted = false;
      continue;
    }
    if (is_float) {
      if (!out->any || c->f < out->min_f) out->min_f = c->f;
      if (!out->any || c->f > out->max_f) out->max_f = c->f;
      if (have_prev && c->f < prev_f) out->sorted = false;
      prev_f = c->f;
    } else {
      if (!out->any || c->i < out->min_i) out->min_i = c->i;
      if (!out->any || c->i > out->max_i) out->max_i = c->i;
      if (have_prev && c->i < prev_i) out->sorted = false;
      prev_i = c->i;
    }
    out->any = true;
    have_prev = true;
  }
}

/* Zone maps of every chunk agree with a naive recomputation. */
static void check_zone_maps(const cs_store *s, const ut_table *t, const char *ctx) {
  for (uint64_t rec = 0; rec < cs_store_records(s); rec++) {
    uint64_t first = cs_store_record_first_row(s, rec), n = cs_store_record_rows(s, rec);
    for (uint32_t col = 0; col < t->schema.n_cols; col++) {
      cs_type type = t->cols[col].type;
      const cs_chunk *ch = cs_store_chunk(s, rec, col);
      naive_stats nv;
      naive_compute(t, col, first, n, &nv);
      ck_assert_msg(ch->null_count == nv.null_count,
                    "%s: record %" PRIu64 " column %s: null_count %" PRIu64 ", expected %" PRIu64, ctx, rec,
                    t->cols[col].name, ch->null_count, nv.null_count);
      if (cs_type_is_varlen(type)) {
        ck_assert_msg(!(ch->flags & CS_CHUNK_HAS_MINMAX),
                      "%s: record %" PRIu64 " %s column %s claims a zone map", ctx, rec, cs_type_name(type),
                      t->cols[col].name);
        continue;
      }
      ck_assert_msg(!!(ch->flags & CS_CHUNK_HAS_MINMAX) == nv.any,
                    "%s: record %" PRIu64 " column %s: HAS_MINMAX=%d, expected %d", ctx, rec,
                    t->cols[col].name, !!(ch->flags & CS_CHUNK_HAS_MINMAX), nv.any);
      ck_assert_msg(!!(ch->flags & CS_CHUNK_SORTED) == nv.sorted,
                    "%s: record %" PRIu64 " column %s: SORTED=%d, expected %d", ctx, rec, t->cols[col].name,
                    !!(ch->flags & CS_CHUNK_SORTED), nv.sorted);
      if (!nv.any) continue;
      if (cs_type_is_float(type)) {
        ck_assert_msg(ch->min.f == nv.min_f && ch->max.f == nv.max_f,
                      "%s: record %" PRIu64 " column %s: min/max %a/%a, expected %a/%a", ctx, rec,
                      t->cols[col].name, ch->min.f, ch->max.f, nv.min_f, nv.max_f);
      } else {
        ck_assert_msg(ch->min.i == nv.min_i && ch->max.i == nv.max_i,
                      "%s: record %" PRIu64 " column %s: min/max %" PRId64 "/%" PRId64 ", expected %" PRId64
                      "/%" PRId64,
                      ctx, rec, t->cols[col].name, ch->min.i, ch->max.i, nv.min_i, nv.max_i);
      }
    }
  }
}

/* Whole-column statistics agree with a naive pass over all rows. */
static void check_column_stats(const cs_store *s, const ut_table *t, const char *ctx) {
  for (uint32_t col = 0; col < t->schema.n_cols; col++) {
    cs_type type = t->cols[col].type;
    cs_column_stats st;
    naive_stats nv;
    cs_store_column_stats(s, col, &st);
    naive_compute(t, col, 0, cs_store_rows(s), &nv);
    ck_assert_msg(st.null_count == nv.null_count, "%s: column %s: null_count %" PRIu64 ", expected %" PRIu64,
                  ctx, t->cols[col].name, st.null_count, nv.null_count);
    if (cs_type_is_varlen(type)) {
      ck_assert_msg(!st.has_minmax, "%s: %s column %s claims min/max", ctx, cs_type_name(type),
                    t->cols[col].name);
      continue;
    }
    ck_assert_msg(st.has_minmax == nv.any, "%s: column %s: has_minmax=%d, expected %d", ctx,
                  t->cols[col].name, st.has_minmax, nv.any);
    if (cs_store_rows(s) > 0)
      ck_assert_msg(st.sorted == nv.sorted, "%s: column %s: sorted=%d, expected %d", ctx, t->cols[col].name,
                    st.sorted, nv.sorted);
    if (!nv.any) continue;
    if (cs_type_is_float(type))
      ck_assert_msg(st.min.f == nv.min_f && st.max.f == nv.max_f,
                    "%s: column %s: min/max %a/%a, expected %a/%a", ctx, t->cols[col].name, st.min.f,
                    st.max.f, nv.min_f, nv.max_f);
    else
      ck_assert_msg(st.min.i == nv.min_i && st.max.i == nv.max_i,
                    "%s: column %s: min/max %" PRId64 "/%" PRId64 ", expected %" PRId64 "/%" PRId64, ctx,
                    t->cols[col].name, st.min.i, st.max.i, nv.min_i, nv.max_i);
  }
}

/* Record boundaries: rows partition exactly, and find_record agrees with a
** linear search for every row. */
static void check_records(const cs_store *s, const char *ctx) {
  uint64_t n_rec = cs_store_records(s), rows = 0;
  for (uint64_t rec = 0; rec < n_rec; rec++) {
    ck_assert_msg(cs_store_record_first_row(s, rec) == rows,
                  "%s: record %" PRIu64 " starts at row %" PRIu64 ", expected %" PRIu64, ctx, rec,
                  cs_store_record_first_row(s, rec), rows);
    ck_assert_msg(cs_store_record_rows(s, rec) > 0, "%s: record %" PRIu64 " is empty", ctx, rec);
    rows += cs_store_record_rows(s, rec);
  }
  ck_assert_msg(rows == cs_store_rows(s), "%s: records hold %" PRIu64 " rows, store says %" PRIu64, ctx, rows,
                cs_store_rows(s));
  ck_assert_msg(cs_store_record_first_row(s, n_rec) == rows, "%s: first_row(n_records) != rows", ctx);
  uint64_t linear = 0;
  for (uint64_t row = 0; row < rows; row++) {
    while (row >= cs_store_record_first_row(s, linear) + cs_store_record_rows(s, linear)) linear++;
    uint64_t got = cs_store_find_record(s, row);
    ck_assert_msg(got == linear, "%s: find_record(%" PRIu64 ") = %" PRIu64 ", linear search says %" PRIu64,
                  ctx, row, got, linear);
  }
}

/* Buffers are Arrow-shaped: 64-byte aligned, bitmap only with NULLs,
** offsets only for TEXT/BLOB, starting at 0 and ending at data_bytes. */
static void check_chunk_shapes(const cs_store *s, const char *ctx) {
  const cs_schema *sc = cs_store_schema(s);
  for (uint64_t rec = 0; rec < cs_store_records(s); rec++) {
    uint64_t n = cs_store_record_rows(s, rec);
    for (uint32_t col = 0; col < sc->n_cols; col++) {
      const cs_chunk *ch = cs_store_chunk(s, rec, col);
      cs_type type = sc->cols[col].type;
      const char *name = sc->cols[col].name;
      ck_assert_msg((uintptr_t)ch->data % 64 == 0, "%s: record %" PRIu64 " column %s: data at %p", ctx, rec,
                    name, ch->data);
      ck_assert_msg((ch->validity != NULL) == (ch->null_count > 0),
                    "%s: record %" PRIu64 " column %s: bitmap %p with %" PRIu64 " NULLs", ctx, rec, name,
                    (const void *)ch->validity, ch->null_count);
      if (ch->validity) {
        ck_assert_msg((uintptr_t)ch->validity % 64 == 0, "%s: record %" PRIu64 " column %s: validity at %p",
                      ctx, rec, name, (const void *)ch->validity);
        /* Bits past the last row are zero, not the next record's rows:
        ** kernels count and test validity a byte or a word at a time. */
        if (n & 7)
          ck_assert_msg((ch->validity[n >> 3] >> (n & 7)) == 0,
                        "%s: record %" PRIu64 " column %s: bitmap bits past row %" PRIu64 " are set", ctx,
                        rec, name, n);
      }
      if (cs_type_is_varlen(type)) {
        ck_assert_msg(ch->offsets != NULL, "%s: record %" PRIu64 " column %s has no offsets", ctx, rec, name);
        ck_assert_msg((uintptr_t)ch->offsets % 64 == 0, "%s: record %" PRIu64 " column %s: offsets at %p",
                      ctx, rec, name, (const void *)ch->offsets);
        ck_assert_msg(ch->offsets[0] == 0 && (uint64_t)ch->offsets[n] == ch->data_bytes,
                      "%s: record %" PRIu64 " column %s: offsets run %" PRId64 "..%" PRId64 " over %" PRIu64
                      " bytes",
                      ctx, rec, name, ch->offsets[0], ch->offsets[n], ch->data_bytes);
      } else {
        ck_assert_msg(ch->offsets == NULL,
                      "%s: record %" PRIu64 " column %s: fixed-width column with offsets", ctx, rec, name);
        ck_assert_msg(ch->data_bytes == n * cs_type_width(type),
                      "%s: record %" PRIu64 " column %s: %" PRIu64 " data bytes for %" PRIu64 " rows", ctx,
                      rec, name, ch->data_bytes, n);
      }
    }
  }
}

/* Everything above, on one store. */
static void check_store(const char *path, const ut_table *t, uint64_t n_rows, const char *ctx) {
  cs_store *s = ut_open_ok(path, CS_VERIFY_FULL, ctx);
  cs_err err = {0};
  ck_assert_msg(cs_store_verify(s, &err) == CS_OK, "%s: verify: %s", ctx, err.msg);
  ck_assert_msg(!cs_store_recovered(s), "%s: a clean store was opened by recovery", ctx);
  ut_assert_store_equals(s, t, n_rows, ctx);
  check_records(s, ctx);
  check_zone_maps(s, t, ctx);
  check_column_stats(s, t, ctx);
  check_chunk_shapes(s, ctx);
  cs_store_close(s);
}

/* Writes all of t to a new store at path in one commit (records of
** record_rows rows, writes of per_write rows, as ut_table_create_store
** takes them) and checks everything above on it. */
static void round_trip(const char *path, const ut_table *t, uint64_t record_rows, uint64_t per_write,
                       const char *ctx) {
  ut_table_create_store(t, path, t->n_rows, record_rows, per_write);
  check_store(path, t, t->n_rows, ctx);
}

/* n_rows rows of random cells of schema (ut_cell_random from seed, NULL
** with probability null_permille/1000 where nullable). */
static ut_table *random_table(const cs_schema *schema, uint64_t n_rows, unsigned null_permille,
                              uint64_t seed) {
  ut_table *t = ut_table_new(schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t row = 0; row < n_rows; row++) {
    ut_cell *c = ut_table_add_row(t);
    for (uint32_t col = 0; col < t->schema.n_cols; col++)
      ut_cell_random(&r, t->cols[col].type, t->cols[col].nullable, null_permille, &c[col]);
  }
  return t;
}

/* ------------------------------------------------------------ type names */

START_TEST(test_type_parse_accepts_every_canonical_name_in_any_case) {
  for (int k = 0; k < N_TYPES; k++) {
    cs_type t = all_types[k];
    const char *name = cs_type_name(t);
    ck_assert_ptr_nonnull(name);
    char lower[16], mixed[16];
    size_t n = strlen(name);
    for (size_t i = 0; i <= n; i++) {
      lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
      mixed[i] = (i & 1) ? lower[i] : name[i];
    }
    ck_assert_msg(cs_type_parse(name, n) == t, "%s", name);
    ck_assert_msg(cs_type_parse(lower, n) == t, "%s", lower);
    ck_assert_msg(cs_type_parse(mixed, n) == t, "%s", mixed);
  }
}
END_TEST

START_TEST(test_type_parse_maps_aliases_to_their_types) {
  static const struct {
    const char *s;
    cs_type t;
  } cases[] = {
      {"INTEGER", CS_TYPE_INT64},       {"integer", CS_TYPE_INT64},
      {"INT", CS_TYPE_INT64},           {"Int", CS_TYPE_INT64},
      {"BIGINT", CS_TYPE_INT64},        {"bigint", CS_TYPE_INT64},
      {"REAL", CS_TYPE_FLOAT64},        {"real", CS_TYPE_FLOAT64},
      {"DOUBLE", CS_TYPE_FLOAT64},      {"Double", CS_TYPE_FLOAT64},
      {"FLOAT", CS_TYPE_FLOAT64},       {"float", CS_TYPE_FLOAT64},
      {"BOOLEAN", CS_TYPE_BOOL},        {"boolean", CS_TYPE_BOOL},
      {"VARCHAR(30)", CS_TYPE_TEXT},    {"varchar(30)", CS_TYPE_TEXT},
      {"VARCHAR", CS_TYPE_TEXT},        {"VARCHAR (255)", CS_TYPE_TEXT},
      {"CHAR(10)", CS_TYPE_TEXT},       {"char(1)", CS_TYPE_TEXT},
      {"CHAR", CS_TYPE_TEXT},           {"STRING", CS_TYPE_TEXT},
      {"string", CS_TYPE_TEXT},         {"  INT32  ", CS_TYPE_INT32},
      {"\tfloat32\n", CS_TYPE_FLOAT32}, {"DOUBLE PRECISION", CS_TYPE_FLOAT64},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cs_type got = cs_type_parse(cases[k].s, strlen(cases[k].s));
    ck_assert_msg(got == cases[k].t, "'%s' parsed as %d, expected %d", cases[k].s, got, cases[k].t);
  }
  /* Only the first n bytes count. */
  ck_assert_int_eq(cs_type_parse("INT8garbage", 4), CS_TYPE_INT8);
  ck_assert_int_eq(cs_type_parse("INT64", 3), CS_TYPE_INT64); /* "INT" */
  ck_assert_int_eq(cs_type_parse("INT64", 4), 0);             /* "INT6" */
}
END_TEST

START_TEST(test_type_parse_rejects_junk) {
  static const char *junk[] = {
      "",           "   ",      "INT65",       "INT128",         "UINT64",   "FLOAT16",
      "TEXTS",      "BLOBS",    "INT8X",       "8INT",           "VARCHAR(", "VARCHAR(30",
      "VARCHAR(x)", "CHAR(-1)", "VARCHAR)30(", "BLOB(10)",       "INT(4)",   "INT 8",
      "DOUBLE X",   "NUMBER",   "DATE",        "INT64 NOT NULL", "BOOL;",    "REAL PRECISION"};
  for (size_t k = 0; k < sizeof junk / sizeof junk[0]; k++)
    ck_assert_msg(cs_type_parse(junk[k], strlen(junk[k])) == 0, "'%s' was accepted as %d", junk[k],
                  cs_type_parse(junk[k], strlen(junk[k])));
  ck_assert_int_eq(cs_type_parse("INT64", 0), 0);
}
END_TEST

START_TEST(test_type_name_and_width_cover_every_type_and_nothing_else) {
  static const size_t widths[N_TYPES] = {1, 2, 4, 8, 1, 2, 4, 4, 8, 1, 0, 0};
  static const char *names[N_TYPES] = {"INT8",   "INT16",   "INT32",   "INT64", "UINT8", "UINT16",
                                       "UINT32", "FLOAT32", "FLOAT64", "BOOL",  "TEXT",  "BLOB"};
  for (int k = 0; k < N_TYPES; k++) {
    ck_assert_str_eq(cs_type_name(all_types[k]), names[k]);
    ck_assert_uint_eq(cs_type_width(all_types[k]), widths[k]);
    ck_assert(cs_type_is_varlen(all_types[k]) == (widths[k] == 0));
  }
  ck_assert_ptr_null(cs_type_name((cs_type)0));
  ck_assert_ptr_null(cs_type_name((cs_type)(CS_TYPE_MAX + 1)));
  ck_assert_uint_eq(cs_type_width((cs_type)0), 0);
}
END_TEST

START_TEST(test_rc_names_and_err_set_fill_a_bounded_message) {
  ck_assert_str_eq(cs_rc_name(CS_OK), "CS_OK");
  ck_assert_str_eq(cs_rc_name(CS_ECORRUPT), "CS_ECORRUPT");
  ck_assert_str_eq(cs_rc_name(CS_ENOTSTORE), "CS_ENOTSTORE");
  ck_assert_str_eq(cs_rc_name(CS_EVERSION), "CS_EVERSION");
  ck_assert_str_eq(cs_rc_name(CS_ERANGE), "CS_ERANGE");
  ck_assert_str_eq(cs_rc_name((cs_rc)CS_RC_COUNT), "CS_UNKNOWN");
  cs_err err = {0};
  ck_assert_int_eq(cs_err_set(&err, CS_EIO, "x=%d", 42), CS_EIO);
  ck_assert_int_eq(err.code, CS_EIO);
  ck_assert_str_eq(err.msg, "x=42");
  char big[2 * CS_ERR_MSG_BYTES];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  ck_assert_int_eq(cs_err_set(&err, CS_EINVAL, "%s", big), CS_EINVAL);
  ck_assert_uint_eq(strlen(err.msg), CS_ERR_MSG_BYTES - 1);
  ck_assert_int_eq(cs_err_set(NULL, CS_ENOMEM, "ignored"), CS_ENOMEM);
}
END_TEST

/* ------------------------------------------------------------ round trips */

START_TEST(test_round_trip_every_type_with_nulls) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&every_type_schema);
  ut_rng r = ut_rng_seed(1001);
  for (uint64_t row = 0; row < 300; row++) {
    ut_cell *c = ut_table_add_row(t);
    for (uint32_t col = 0; col < t->schema.n_cols; col++) {
      bool nullable = t->cols[col].nullable;
      if (row % 7 == 3 && nullable)
        ut_cell_set_null(&c[col]); /* a whole row of NULLs */
      else
        ut_cell_random(&r, t->cols[col].type, nullable, 200, &c[col]);
    }
  }
  round_trip(sc.path, t, 64, 0, "every type, seed 1001");
  /* The nullable columns really hold NULLs, and the NOT NULL ones none. */
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_HEADER, "reopen");
  for (uint32_t col = 0; col < t->schema.n_cols; col++) {
    cs_column_stats st;
    cs_store_column_stats(s, col, &st);
    if (t->cols[col].nullable)
      ck_assert_msg(st.null_count >= 300 / 7, "column %s: %" PRIu64 " NULLs", t->cols[col].name,
                    st.null_count);
    else
      ck_assert_msg(st.null_count == 0, "NOT NULL column %s has NULLs", t->cols[col].name);
  }
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_round_trip_integer_extremes_of_each_width) {
  static const cs_column cols[] = {
      {"i8", CS_TYPE_INT8, false},    {"i16", CS_TYPE_INT16, false}, {"i32", CS_TYPE_INT32, false},
      {"i64", CS_TYPE_INT64, false},  {"u8", CS_TYPE_UINT8, false},  {"u16", CS_TYPE_UINT16, false},
      {"u32", CS_TYPE_UINT32, false}, {"b", CS_TYPE_BOOL, false},
  };
  static const cs_schema schema = {8, cols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  for (int pick = 0; pick < 6; pick++) {
    ut_cell *c = ut_table_add_row(t);
    for (uint32_t col = 0; col < schema.n_cols; col++) {
      int64_t lo, hi;
      cs_type_int_range(cols[col].type, &lo, &hi);
      const int64_t v[6] = {lo, hi, 0, lo + 1, hi - 1, hi / 2};
      ut_cell_set_int(&c[col], v[pick]);
    }
  }
  round_trip(sc.path, t, 0, 0, "integer extremes");
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "integer extremes");
  for (uint32_t col = 0; col < schema.n_cols; col++) {
    int64_t lo, hi;
    cs_type_int_range(cols[col].type, &lo, &hi);
    const cs_chunk *ch = cs_store_chunk(s, 0, col);
    ck_assert_msg(ch->min.i == lo && ch->max.i == hi,
                  "%s: zone map %" PRId64 "..%" PRId64 ", expected %" PRId64 "..%" PRId64, cols[col].name,
                  ch->min.i, ch->max.i, lo, hi);
  }
  /* Spot checks independent of the helpers: the widest values, in place. */
  int64_t i64;
  memcpy(&i64, (const uint8_t *)cs_store_chunk(s, 0, 3)->data + 8, 8);
  ck_assert(i64 == INT64_MAX);
  uint32_t u32;
  memcpy(&u32, (const uint8_t *)cs_store_chunk(s, 0, 6)->data + 4, 4);
  ck_assert_uint_eq(u32, UINT32_MAX);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

static double from_bits(uint64_t b) {
  double d;
  memcpy(&d, &b, 8);
  return d;
}

START_TEST(test_round_trip_floats_bit_exact) {
  static const cs_column cols[] = {{"f64", CS_TYPE_FLOAT64, true}, {"f32", CS_TYPE_FLOAT32, true}};
  static const cs_schema schema = {2, cols};
  const double v64[] = {-0.0,
                        0.0,
                        4.9406564584124654e-324, /* smallest subnormal */
                        -4.9406564584124654e-324,
                        DBL_MIN / 3, /* a subnormal with more bits */
                        DBL_MIN,
                        DBL_MAX,
                        -DBL_MAX,
                        INFINITY,
                        -INFINITY,
                        1e300,
                        -1.7976931348623155e308,
                        from_bits(0x7FF8000000000123ull), /* quiet NaN with a payload */
                        from_bits(0xFFF8000000000000ull), /* negative NaN */
                        from_bits(0x7FF0000000000001ull), /* signalling NaN */
                        0.1,
                        -3.5};
  const float v32[] = {-0.0f,    0.0f,     1.40129846e-45f, -1.40129846e-45f, FLT_MIN / 3, FLT_MIN, FLT_MAX,
                       -FLT_MAX, INFINITY, -INFINITY,       3.0e38f,          1e-40f,      NAN,     -NAN,
                       0.1f,     -3.5f,    16777217.0f};
  size_t n = sizeof v64 / sizeof v64[0];
  ck_assert_uint_eq(n, sizeof v32 / sizeof v32[0]);
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  for (size_t k = 0; k < n; k++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_float(&c[0], CS_TYPE_FLOAT64, v64[k]);
    ut_cell_set_float(&c[1], CS_TYPE_FLOAT32, (double)v32[k]);
  }
  ut_cell_set_null(&ut_table_add_row(t)[0]); /* and a NULL beside a value */
  ut_cell_set_float(ut_table_cell(t, n, 1), CS_TYPE_FLOAT32, -0.0);
  round_trip(sc.path, t, 8, 0, "float extremes");
  /* The sign of zero, explicitly. */
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "floats");
  ut_cell a, b;
  ut_store_cell(s, 0, 0, &a);
  ut_store_cell(s, 0, 1, &b);
  ck_assert_msg(a.f == 0.0 && signbit(a.f), "FLOAT64 -0.0 came back as %a", a.f);
  ck_assert_msg(b.f32 == 0.0f && signbit(b.f32), "FLOAT32 -0.0 came back as %a", (double)b.f32);
  ut_store_cell(s, 1, 0, &a);
  ck_assert_msg(a.f == 0.0 && !signbit(a.f), "FLOAT64 +0.0 came back as %a", a.f);
  ut_store_cell(s, 2, 0, &a);
  ck_assert_msg(fpclassify(a.f) == FP_SUBNORMAL, "the subnormal came back as %a", a.f);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_round_trip_keeps_empty_strings_and_blobs_apart_from_null) {
  static const cs_column cols[] = {
      {"t", CS_TYPE_TEXT, true}, {"b", CS_TYPE_BLOB, true}, {"t_nn", CS_TYPE_TEXT, false}};
  static const cs_schema schema = {3, cols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  /* Records of 8 rows: the first record holds only empty values (zero data
  ** bytes), the second alternates empty and NULL, the third mixes in data. */
  for (int row = 0; row < 24; row++) {
    ut_cell *c = ut_table_add_row(t);
    bool null = row >= 8 && row % 2 == 1;
    bool data = row >= 16 && row % 3 == 0;
    for (uint32_t col = 0; col < 3; col++) {
      if (null && col < 2)
        ut_cell_set_null(&c[col]);
      else if (data)
        ut_cell_set_bytes(&c[col], "x\0y", col == 1 ? 3 : 1);
      else
        ut_cell_set_bytes(&c[col], "", 0);
    }
  }
  round_trip(sc.path, t, 8, 0, "empty strings");
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "empty strings");
  ck_assert_uint_eq(cs_store_records(s), 3);
  for (uint32_t col = 0; col < 3; col++) ck_assert_uint_eq(cs_store_chunk(s, 0, col)->data_bytes, 0);
  ut_cell c;
  ut_store_cell(s, 8, 0, &c);
  ck_assert_msg(!c.null && c.len == 0, "row 8 should be an empty, non-NULL string");
  ut_store_cell(s, 9, 0, &c);
  ck_assert_msg(c.null, "row 9 should be NULL");
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_round_trip_unicode_text_and_blobs_with_zero_bytes) {
  static const cs_column cols[] = {{"t", CS_TYPE_TEXT, false}, {"b", CS_TYPE_BLOB, false}};
  static const cs_schema schema = {2, cols};
  static const char *texts[] = {"h\xC3\xA9llo w\xC3\xB6rld",            /* héllo wörld */
                                "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", /* 日本語 */
                                "\xF0\x9F\x98\x80 \xE2\x82\xAC",        /* 😀 € */
                                "\xF4\x8F\xBF\xBF",                     /* U+10FFFF */
                                "e\xCC\x81",                            /* e + combining acute */
                                "plain ascii",
                                ""};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  uint8_t all_bytes[256];
  for (int k = 0; k < 256; k++) all_bytes[k] = (uint8_t)k;
  for (int row = 0; row < 70; row++) {
    ut_cell *c = ut_table_add_row(t);
    const char *s = texts[row % 7];
    ut_cell_set_bytes(&c[0], s, strlen(s));
    switch (row % 5) {
      case 0: ut_cell_set_bytes(&c[1], "\0\0\0", 3); break;
      case 1: ut_cell_set_bytes(&c[1], "a\0b", 3); break;
      case 2: ut_cell_set_bytes(&c[1], all_bytes, 256); break;
      case 3: ut_cell_set_bytes(&c[1], "\0", 1); break;
      default: ut_cell_set_bytes(&c[1], all_bytes + 200, 56); break;
    }
  }
  round_trip(sc.path, t, 16, 23, "unicode");
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_empty_store_has_no_rows_and_no_records) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&every_type_schema);
  ut_table_create_store(t, sc.path, 0, 0, 0);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "empty");
  ck_assert_uint_eq(cs_store_rows(s), 0);
  ck_assert_uint_eq(cs_store_records(s), 0);
  ck_assert_uint_eq(cs_store_record_first_row(s, 0), 0);
  ck_assert_uint_eq(cs_store_generation(s), 1);
  ck_assert(!cs_store_recovered(s));
  ck_assert_uint_eq(cs_store_file_bytes(s), ut_file_bytes(sc.path));
  ck_assert_str_eq(cs_store_path(s), sc.path);
  ut_assert_schema_equals(cs_store_schema(s), &every_type_schema, "empty");
  for (uint32_t col = 0; col < every_type_schema.n_cols; col++) {
    cs_column_stats st;
    cs_store_column_stats(s, col, &st);
    ck_assert(st.null_count == 0 && !st.has_minmax);
  }
  cs_err err = {0};
  ck_assert_int_eq(cs_store_verify(s, &err), CS_OK);
  cs_store_close(s);
  /* An empty batch written and committed is still an empty store. */
  cs_writer *w;
  ck_assert_int_eq(cs_writer_create(sc.path, &t->schema, &(cs_writer_options){.replace = true}, &w, &err),
                   CS_OK);
  cs_batch *b = ut_table_batch(t, 0, 0);
  ck_assert_int_eq(cs_writer_write(w, b, &err), CS_OK);
  ck_assert_uint_eq(cs_writer_rows(w), 0);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  cs_batch_free(b);
  s = ut_open_ok(sc.path, CS_VERIFY_FULL, "empty batch");
  ck_assert_uint_eq(cs_store_rows(s), 0);
  ck_assert_uint_eq(cs_store_records(s), 0);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_one_row_store_round_trips) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(&every_type_schema, 1, 500, 7);
  round_trip(sc.path, t, 0, 0, "one row, seed 7");
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "one row");
  ck_assert_uint_eq(cs_store_records(s), 1);
  ck_assert_uint_eq(cs_store_find_record(s, 0), 0);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ------------------------------------------------------- records, search */

START_TEST(test_record_rows_round_up_to_a_multiple_of_8) {
  static const cs_column cols[] = {{"k", CS_TYPE_INT64, false}, {"s", CS_TYPE_TEXT, true}};
  static const cs_schema schema = {2, cols};
  static const struct {
    uint64_t asked, used;
  } cases[] = {{1, 8}, {8, 8}, {13, 16}, {16, 16}, {17, 24}, {0, CS_DEFAULT_RECORD_ROWS}};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(13);
  for (int row = 0; row < 1000; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], row);
    ut_cell_random(&r, CS_TYPE_TEXT, true, 100, &c[1]);
  }
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "record_rows %" PRIu64, cases[k].asked);
    unlink(sc.path);
    ut_table_create_store(t, sc.path, t->n_rows, cases[k].asked, 0);
    cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, ctx);
    uint64_t want = (1000 + cases[k].used - 1) / cases[k].used;
    ck_assert_msg(cs_store_records(s) == want, "%s: %" PRIu64 " records, expected %" PRIu64, ctx,
                  cs_store_records(s), want);
    for (uint64_t rec = 0; rec + 1 < cs_store_records(s); rec++)
      ck_assert_msg(cs_store_record_rows(s, rec) == cases[k].used,
                    "%s: record %" PRIu64 " has %" PRIu64 " rows", ctx, rec, cs_store_record_rows(s, rec));
    cs_store_close(s);
    check_store(sc.path, t, t->n_rows, ctx);
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_find_record_matches_linear_search_for_every_row) {
  static const cs_column cols[] = {{"k", CS_TYPE_INT32, false}, {"v", CS_TYPE_FLOAT64, true}};
  static const cs_schema schema = {2, cols};
  const uint64_t seed = 0xF1ED;
  ut_rng r = ut_rng_seed(seed);
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  for (int row = 0; row < 5000; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], row);
    ut_cell_random(&r, CS_TYPE_FLOAT64, true, 100, &c[1]);
  }
  /* Writes of irregular sizes give records of irregular sizes (a record
  ** never spans two writes), over several commits. */
  cs_err err = {0};
  cs_writer *w;
  ck_assert_int_eq(cs_writer_create(sc.path, &schema, &(cs_writer_options){.record_rows = 13}, &w, &err),
                   CS_OK);
  uint64_t at = 0, commits = 0;
  while (at < t->n_rows) {
    uint64_t n = 1 + ut_rng_below(&r, 60);
    if (n > t->n_rows - at) n = t->n_rows - at;
    cs_batch *b = ut_table_batch(t, at, n);
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "seed %" PRIu64 ": %s", seed, err.msg);
    cs_batch_free(b);
    at += n;
    ck_assert_uint_eq(cs_writer_rows(w), at);
    if (ut_rng_below(&r, 20) == 0 || at == t->n_rows) {
      ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "seed %" PRIu64 ": %s", seed, err.msg);
      commits++;
      if (at < t->n_rows) {
        cs_writer_options opt = {.record_rows = 13};
        ck_assert_int_eq(cs_writer_append(sc.path, &opt, &w, &err), CS_OK);
      }
    }
  }
  char ctx[96];
  snprintf(ctx, sizeof ctx, "seed %" PRIu64, seed);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, ctx);
  ck_assert_msg(cs_store_records(s) > 5000 / 16, "%s: only %" PRIu64 " records", ctx, cs_store_records(s));
  ck_assert_uint_eq(cs_store_generation(s), commits);
  /* Record sizes vary, so a division could not stand in for the search. */
  bool uneven = false;
  for (uint64_t rec = 1; rec + 1 < cs_store_records(s); rec++)
    uneven |= cs_store_record_rows(s, rec) != cs_store_record_rows(s, 0);
  ck_assert_msg(uneven, "%s: records came out uniform; the test lost its point", ctx);
  cs_store_close(s);
  check_store(sc.path, t, t->n_rows, ctx);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* A savepoint rollback truncates a batch mid-byte; the bitmap bits of the
** dropped rows are still set in the batch and must not reach the store. */
START_TEST(test_batch_truncated_mid_byte_writes_only_its_remaining_rows) {
  static const cs_column cols[] = {{"v", CS_TYPE_INT16, true}, {"s", CS_TYPE_TEXT, true}};
  static const cs_schema schema = {2, cols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  for (int row = 0; row < 24; row++) {
    ut_cell *c = ut_table_add_row(t);
    if (row % 4 == 1)
      ut_cell_set_null(&c[0]), ut_cell_set_null(&c[1]);
    else
      ut_cell_set_int(&c[0], row * 100), ut_cell_set_bytes(&c[1], "abc", (uint64_t)(row % 4));
  }
  for (uint64_t keep = 0; keep < 24; keep++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "truncated to %" PRIu64 " rows", keep);
    cs_batch *b = ut_table_batch(t, 0, 24);
    cs_batch_truncate(b, keep);
    ck_assert_uint_eq(cs_batch_rows(b), keep);
    cs_writer *w;
    cs_err err = {0};
    unlink(sc.path);
    ck_assert_int_eq(cs_writer_create(sc.path, &schema, &(cs_writer_options){.record_rows = 8}, &w, &err),
                     CS_OK);
    ck_assert_int_eq(cs_writer_write(w, b, &err), CS_OK);
    ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
    cs_batch_free(b);
    check_store(sc.path, t, keep, ctx);
  }
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------------- random tables */

static const uint64_t record_row_choices[] = {8, 13, 16, 40, 1000, 0};
static const unsigned null_choices[] = {0, 30, 500, 1000};

START_TEST(test_random_tables_round_trip_with_correct_metadata) {
  const uint64_t seed = 0xC0157000ull + (uint64_t)_i;
  char ctx[96];
  snprintf(ctx, sizeof ctx, "seed %" PRIu64, seed);
  ut_rng r = ut_rng_seed(seed);
  uint32_t n_cols = 1 + (uint32_t)ut_rng_below(&r, 9);
  cs_column cols[10];
  char names[10][16];
  unsigned nulls[10];
  for (uint32_t c = 0; c < n_cols; c++) {
    snprintf(names[c], sizeof names[c], "c%u", c);
    cols[c] = (cs_column){names[c], all_types[ut_rng_below(&r, N_TYPES)], ut_rng_below(&r, 2) == 0};
    nulls[c] = null_choices[ut_rng_below(&r, 4)];
  }
  cs_schema schema = {n_cols, cols};
  uint64_t n_rows = ut_rng_below(&r, 3) == 0 ? ut_rng_below(&r, 20) : ut_rng_below(&r, 2500);
  uint64_t record_rows = record_row_choices[ut_rng_below(&r, 6)];
  ut_table *t = ut_table_new(&schema);
  /* Some columns are made non-decreasing, so SORTED has both answers. */
  bool ascending[10];
  for (uint32_t c = 0; c < n_cols; c++) ascending[c] = ut_rng_below(&r, 3) == 0;
  for (uint64_t row = 0; row < n_rows; row++) {
    ut_cell *c = ut_table_add_row(t);
    for (uint32_t col = 0; col < n_cols; col++) {
      cs_type type = cols[col].type;
      if (ascending[col] && cs_type_is_integer(type) && type != CS_TYPE_BOOL) {
        int64_t lo, hi;
        cs_type_int_range(type, &lo, &hi);
        int64_t step = (int64_t)ut_rng_below(&r, 3);
        int64_t prev = row ? ut_table_cell(t, row - 1, col)->i : lo;
        ut_cell_set_int(&c[col], prev > hi - step ? hi : prev + step);
      } else if (ascending[col] && cs_type_is_float(type)) {
        ut_cell_set_float(&c[col], type, (double)(row / 3) * 0.5 - 100.0);
      } else {
        ut_cell_random(&r, type, cols[col].nullable, nulls[col], &c[col]);
      }
    }
  }
  ut_scratch sc = ut_scratch_new();
  /* One to three commits, each through writes of random sizes. */
  uint64_t split1 = n_rows ? ut_rng_below(&r, n_rows + 1) : 0, split2 = split1 + (n_rows - split1) / 2;
  uint64_t per_write = ut_rng_below(&r, 2) ? 0 : 1 + ut_rng_below(&r, 300);
  ut_table_create_store(t, sc.path, split1, record_rows, per_write);
  check_store(sc.path, t, split1, ctx);
  if (ut_rng_below(&r, 2)) {
    ut_table_append_store(t, sc.path, split1, split2 - split1);
    ut_table_append_store(t, sc.path, split2, n_rows - split2);
  } else {
    ut_table_append_store(t, sc.path, split1, n_rows - split1);
  }
  check_store(sc.path, t, n_rows, ctx);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* --------------------------------------------------- zone maps and stats */

static const cs_column stats_cols[] = {
    {"k", CS_TYPE_INT64, true}, {"f", CS_TYPE_FLOAT64, true}, {"u", CS_TYPE_UINT16, false}};
static const cs_schema stats_schema = {3, stats_cols};

/* Writes rows k = f = u = values[row] with record_rows 8 and returns the
** column statistics of each column. */
static void stats_of(const int64_t *values, size_t n, int null_row, double nan_row_value, int nan_row,
                     cs_column_stats out[3]) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&stats_schema);
  for (size_t row = 0; row < n; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], values[row]);
    ut_cell_set_float(&c[1], CS_TYPE_FLOAT64, (double)values[row]);
    ut_cell_set_int(&c[2], values[row]);
    if ((int)row == null_row) ut_cell_set_null(&c[0]), ut_cell_set_null(&c[1]);
    if ((int)row == nan_row) ut_cell_set_float(&c[1], CS_TYPE_FLOAT64, nan_row_value);
  }
  round_trip(sc.path, t, 8, 0, "stats");
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "stats");
  ck_assert_uint_ge(cs_store_records(s), 3);
  for (uint32_t c = 0; c < 3; c++) cs_store_column_stats(s, c, &out[c]);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}

START_TEST(test_column_stats_sorted_for_non_decreasing_column_across_records) {
  int64_t v[40];
  for (int i = 0; i < 40; i++) v[i] = i / 3; /* repeats, also across record boundaries */
  cs_column_stats st[3];
  stats_of(v, 40, -1, 0, -1, st);
  for (int c = 0; c < 3; c++) ck_assert_msg(st[c].sorted, "column %d should be sorted", c);
  ck_assert(st[0].has_minmax && st[0].min.i == 0 && st[0].max.i == 13);
  ck_assert(st[1].min.f == 0.0 && st[1].max.f == 13.0);
  ck_assert_uint_eq(st[0].null_count, 0);
}
END_TEST

START_TEST(test_column_stats_not_sorted_when_a_record_starts_below_the_previous_end) {
  /* Every record is sorted on its own; only the boundary 16 goes down. */
  int64_t v[40];
  for (int i = 0; i < 40; i++) v[i] = i < 16 ? i : i - 10;
  cs_column_stats st[3];
  stats_of(v, 40, -1, 0, -1, st);
  for (int c = 0; c < 3; c++)
    ck_assert_msg(!st[c].sorted, "column %d: a drop at a record boundary went unnoticed", c);
}
END_TEST

START_TEST(test_column_stats_not_sorted_when_a_record_goes_down_inside) {
  int64_t v[40];
  for (int i = 0; i < 40; i++) v[i] = i;
  v[21] = 5;
  cs_column_stats st[3];
  stats_of(v, 40, -1, 0, -1, st);
  for (int c = 0; c < 3; c++)
    ck_assert_msg(!st[c].sorted, "column %d: a drop inside a record went unnoticed", c);
}
END_TEST

START_TEST(test_column_stats_not_sorted_with_a_null_or_nan) {
  int64_t v[40];
  for (int i = 0; i < 40; i++) v[i] = i;
  cs_column_stats st[3];
  stats_of(v, 40, 30, 0, -1, st);
  ck_assert_msg(!st[0].sorted && !st[1].sorted, "a NULL must make a column unsorted");
  ck_assert_msg(st[2].sorted, "the NOT NULL column stays sorted");
  ck_assert_uint_eq(st[0].null_count, 1);
  stats_of(v, 40, -1, NAN, 25, st);
  ck_assert_msg(st[0].sorted && !st[1].sorted, "a NaN must make a float column unsorted");
  ck_assert_msg(st[1].has_minmax && st[1].min.f == 0.0 && st[1].max.f == 39.0,
                "NaN must stay out of min/max");
}
END_TEST

START_TEST(test_zone_maps_skip_nulls_and_nan_and_all_null_chunks_have_none) {
  static const cs_column cols[] = {{"f", CS_TYPE_FLOAT32, true}, {"i", CS_TYPE_INT8, true}};
  static const cs_schema schema = {2, cols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&schema);
  for (int row = 0; row < 24; row++) {
    ut_cell *c = ut_table_add_row(t);
    if (row < 8) { /* record 0: all NULL */
      ut_cell_set_null(&c[0]), ut_cell_set_null(&c[1]);
    } else if (row < 16) { /* record 1: NaN only, and one value among NULLs */
      ut_cell_set_float(&c[0], CS_TYPE_FLOAT32, NAN);
      if (row == 12)
        ut_cell_set_int(&c[1], -7);
      else
        ut_cell_set_null(&c[1]);
    } else { /* record 2: values around NaN and NULL */
      ut_cell_set_float(&c[0], CS_TYPE_FLOAT32, row == 17 ? NAN : -(double)row);
      ut_cell_set_int(&c[1], row);
      if (row == 20) ut_cell_set_null(&c[0]);
    }
  }
  round_trip(sc.path, t, 8, 0, "zone map edges");
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "zone map edges");
  ck_assert(!(cs_store_chunk(s, 0, 0)->flags & CS_CHUNK_HAS_MINMAX));
  ck_assert_uint_eq(cs_store_chunk(s, 0, 0)->null_count, 8);
  ck_assert(!(cs_store_chunk(s, 1, 0)->flags & CS_CHUNK_HAS_MINMAX));
  const cs_chunk *ch = cs_store_chunk(s, 1, 1);
  ck_assert(ch->null_count == 7 && ch->min.i == -7 && ch->max.i == -7);
  ch = cs_store_chunk(s, 2, 0);
  ck_assert_msg(ch->min.f == -23.0 && ch->max.f == -16.0, "min/max %a/%a", ch->min.f, ch->max.f);
  cs_store_close(s);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------------------- schema */

START_TEST(test_schema_round_trips_names_types_and_nullability) {
  char long_name[CS_NAME_MAX_BYTES + 1];
  memset(long_name, 'n', CS_NAME_MAX_BYTES);
  long_name[CS_NAME_MAX_BYTES] = 0;
  cs_column cols[2 * N_TYPES + 2];
  memcpy(cols, every_type_cols, sizeof every_type_cols);
  cols[2 * N_TYPES] = (cs_column){long_name, CS_TYPE_UINT16, true};
  cols[2 * N_TYPES + 1] = (cs_column){"\xC3\xA9t\xC3\xA9 \xE2\x82\xAC", CS_TYPE_TEXT, false}; /* "été €" */
  cs_schema schema = {2 * N_TYPES + 2, cols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(&schema, 3, 300, 99);
  round_trip(sc.path, t, 0, 0, "schema, seed 99");
  /* The writer's own view of an existing store says the same. */
  cs_writer *w;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w, &err), CS_OK);
  ut_assert_schema_equals(cs_writer_schema(w), &schema, "writer schema");
  ck_assert_uint_eq(cs_writer_rows(w), 3);
  cs_writer_abort(w);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_schema_with_the_maximum_column_count_round_trips) {
  cs_column *cols = calloc(CS_MAX_COLUMNS, sizeof *cols);
  char(*names)[12] = calloc(CS_MAX_COLUMNS, sizeof *names);
  ck_assert(cols && names);
  for (uint32_t c = 0; c < CS_MAX_COLUMNS; c++) {
    snprintf(names[c], sizeof names[c], "col%u", c);
    cols[c] = (cs_column){names[c], all_types[c % N_TYPES], (c & 1) != 0};
  }
  cs_schema schema = {CS_MAX_COLUMNS, cols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(&schema, 3, 300, 2000);
  round_trip(sc.path, t, 0, 0, "2000 columns, seed 2000");
  ut_table_free(t);
  ut_scratch_free(&sc);
  free(cols);
  free(names);
}
END_TEST

START_TEST(test_writer_rejects_invalid_schemas_and_creates_nothing) {
  char long_name[CS_NAME_MAX_BYTES + 2];
  memset(long_name, 'n', CS_NAME_MAX_BYTES + 1);
  long_name[CS_NAME_MAX_BYTES + 1] = 0;
  cs_column dup[] = {{"a", CS_TYPE_INT8, true}, {"A", CS_TYPE_INT16, true}};
  cs_column empty_name[] = {{"", CS_TYPE_INT8, true}};
  cs_column too_long[] = {{long_name, CS_TYPE_INT8, true}};
  cs_column bad_type0[] = {{"a", (cs_type)0, true}};
  cs_column bad_type13[] = {{"a", (cs_type)(CS_TYPE_MAX + 1), true}};
  cs_column *many = calloc(CS_MAX_COLUMNS + 1, sizeof *many);
  ck_assert_ptr_nonnull(many);
  char(*names)[12] = calloc(CS_MAX_COLUMNS + 1, sizeof *names);
  ck_assert_ptr_nonnull(names);
  for (uint32_t c = 0; c <= CS_MAX_COLUMNS; c++) {
    snprintf(names[c], sizeof names[c], "c%u", c);
    many[c] = (cs_column){names[c], CS_TYPE_INT8, true};
  }
  const cs_schema bad[] = {{0, dup},       {2, dup},        {1, empty_name},           {1, too_long},
                           {1, bad_type0}, {1, bad_type13}, {CS_MAX_COLUMNS + 1, many}};
  ut_scratch sc = ut_scratch_new();
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    cs_writer *w = (cs_writer *)1;
    cs_err err = {0};
    cs_rc rc = cs_writer_create(sc.path, &bad[k], NULL, &w, &err);
    ck_assert_msg(rc == CS_EINVAL, "schema %zu: %s (%s)", k, cs_rc_name(rc), err.msg);
    ck_assert_ptr_null(w);
    ck_assert_msg(strncmp(err.msg, "colstore: ", 10) == 0, "schema %zu: message '%s'", k, err.msg);
    ck_assert_int_eq(ut_dir_entries(sc.dir), 0);
  }
  ut_scratch_free(&sc);
  free(many);
  free(names);
}
END_TEST

/* ------------------------------------------------------------------ main */

static Suite *format_suite(void) {
  Suite *s = suite_create("format");
  TCase *tc = tcase_create("types");
  tcase_add_test(tc, test_type_parse_accepts_every_canonical_name_in_any_case);
  tcase_add_test(tc, test_type_parse_maps_aliases_to_their_types);
  tcase_add_test(tc, test_type_parse_rejects_junk);
  tcase_add_test(tc, test_type_name_and_width_cover_every_type_and_nothing_else);
  tcase_add_test(tc, test_rc_names_and_err_set_fill_a_bounded_message);
  suite_add_tcase(s, tc);

  tc = tcase_create("round_trip");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_round_trip_every_type_with_nulls);
  tcase_add_test(tc, test_round_trip_integer_extremes_of_each_width);
  tcase_add_test(tc, test_round_trip_floats_bit_exact);
  tcase_add_test(tc, test_round_trip_keeps_empty_strings_and_blobs_apart_from_null);
  tcase_add_test(tc, test_round_trip_unicode_text_and_blobs_with_zero_bytes);
  tcase_add_test(tc, test_empty_store_has_no_rows_and_no_records);
  tcase_add_test(tc, test_one_row_store_round_trips);
  tcase_add_test(tc, test_record_rows_round_up_to_a_multiple_of_8);
  tcase_add_test(tc, test_find_record_matches_linear_search_for_every_row);
  tcase_add_test(tc, test_batch_truncated_mid_byte_writes_only_its_remaining_rows);
  tcase_add_loop_test(tc, test_random_tables_round_trip_with_correct_metadata, 0, 40);
  suite_add_tcase(s, tc);

  tc = tcase_create("stats");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_column_stats_sorted_for_non_decreasing_column_across_records);
  tcase_add_test(tc, test_column_stats_not_sorted_when_a_record_starts_below_the_previous_end);
  tcase_add_test(tc, test_column_stats_not_sorted_when_a_record_goes_down_inside);
  tcase_add_test(tc, test_column_stats_not_sorted_with_a_null_or_nan);
  tcase_add_test(tc, test_zone_maps_skip_nulls_and_nan_and_all_null_chunks_have_none);
  suite_add_tcase(s, tc);

  tc = tcase_create("schema");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_schema_round_trips_names_types_and_nullability);
  tcase_add_test(tc, test_schema_with_the_maximum_column_count_round_trips);
  tcase_add_test(tc, test_writer_rejects_invalid_schemas_and_creates_nothing);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(format_suite()); }
