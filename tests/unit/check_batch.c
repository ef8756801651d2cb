/*
** check_batch.c - the batch that INSERT and colstore_create fill before a
** write: truncation (savepoint rollback), cancelled rows, retyping.
**
** A batch only moves counters back when rows are dropped, so the tests here
** put values into slots that held something else before and check that
** nothing of the old value (above all its validity bit) shows through,
** both in the batch and in the store written from it.
*/
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

static const cs_column one_int[] = {{"a", CS_TYPE_INT64, true}};
static const cs_schema one_int_schema = {1, one_int};

static cs_batch *batch_new(const cs_schema *schema) {
  cs_batch *b = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_batch_new(schema, &b, &err), CS_OK);
  return b;
}

/* Writes b as a new store at path and opens it with CS_VERIFY_FULL. */
static cs_store *store_from(const char *path, const cs_schema *schema, const cs_batch *b, const char *ctx) {
  cs_writer *w = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_create(path, schema, NULL, &w, &err), CS_OK);
  ck_assert_int_eq(cs_writer_write(w, b, &err), CS_OK);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  return ut_open_ok(path, CS_VERIFY_FULL, ctx);
}

START_TEST(test_batch_null_put_after_cancelled_row_is_null) {
  cs_batch *b = batch_new(&one_int_schema);
  cs_err err;
  cs_stat v;
  cs_batch_put_i64(b, 0, 7, &err), cs_batch_end_row(b);
  cs_batch_put_i64(b, 0, 8, &err);
  cs_batch_cancel_row(b);
  cs_batch_put_null(b, 0, &err), cs_batch_end_row(b);
  ck_assert_uint_eq(cs_batch_rows(b), 2);
  ck_assert(cs_batch_get(b, 0, 0, &v) && v.i == 7);
  ck_assert_msg(!cs_batch_get(b, 0, 1, &v), "row 1 must read as NULL after the cancelled row's value");

  ut_scratch sc = ut_scratch_new();
  cs_store *s = store_from(sc.path, &one_int_schema, b, "cancelled row");
  const cs_chunk *ch = cs_store_chunk(s, 0, 0);
  ck_assert_uint_eq(ch->null_count, 1);
  ck_assert(cs_chunk_is_valid(ch, 0));
  ck_assert(!cs_chunk_is_valid(ch, 1));
  cs_store_close(s);
  cs_batch_free(b);
  ut_scratch_free(&sc);
}
END_TEST

/* Truncate back into the middle of a bitmap byte, then refill with NULLs
** and values alternating: every bit must be what was put last. */
START_TEST(test_batch_truncate_then_refill_keeps_exact_validity) {
  cs_batch *b = batch_new(&one_int_schema);
  cs_err err;
  cs_stat v;
  for (int i = 0; i < 21; i++) cs_batch_put_i64(b, 0, i, &err), cs_batch_end_row(b);
  cs_batch_truncate(b, 11);
  ck_assert_uint_eq(cs_batch_rows(b), 11);
  for (int i = 11; i < 30; i++) {
    if (i % 2)
      cs_batch_put_null(b, 0, &err);
    else
      cs_batch_put_i64(b, 0, 100 + i, &err);
    cs_batch_end_row(b);
  }
  for (int i = 0; i < 30; i++) {
    bool valid = cs_batch_get(b, 0, (uint64_t)i, &v);
    if (i < 11)
      ck_assert_msg(valid && v.i == i, "row %d", i);
    else if (i % 2)
      ck_assert_msg(!valid, "row %d must be NULL", i);
    else
      ck_assert_msg(valid && v.i == 100 + i, "row %d", i);
  }
  cs_batch_free(b);
}
END_TEST

START_TEST(test_batch_text_truncate_drops_bytes) {
  static const cs_column cols[] = {{"s", CS_TYPE_TEXT, true}};
  static const cs_schema schema = {1, cols};
  cs_batch *b = batch_new(&schema);
  cs_err err;
  cs_batch_put_bytes(b, 0, "keep", 4, &err), cs_batch_end_row(b);
  cs_batch_put_bytes(b, 0, "dropped", 7, &err), cs_batch_end_row(b);
  cs_batch_truncate(b, 1);
  cs_batch_put_bytes(b, 0, "new", 3, &err), cs_batch_end_row(b);
  ut_scratch sc = ut_scratch_new();
  cs_store *s = store_from(sc.path, &schema, b, "text truncate");
  const cs_chunk *ch = cs_store_chunk(s, 0, 0);
  const uint8_t *p;
  uint64_t n;
  ck_assert_int_eq(cs_chunk_varlen(ch, 1, &p, &n, &err), CS_OK);
  ck_assert_uint_eq(n, 3);
  ck_assert(memcmp(p, "new", 3) == 0);
  ck_assert_uint_eq(ch->data_bytes, 7);
  cs_store_close(s);
  cs_batch_free(b);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_batch_column_reset_retypes_values) {
  cs_batch *b = batch_new(&one_int_schema);
  cs_err err;
  cs_stat v;
  cs_batch_put_i64(b, 0, 3, &err), cs_batch_end_row(b);
  cs_batch_put_null(b, 0, &err), cs_batch_end_row(b);
  cs_batch_column_reset(b, 0, CS_TYPE_FLOAT64);
  cs_batch_put_f64(b, 0, 3.0, &err);
  cs_batch_put_null(b, 0, &err);
  ck_assert(cs_batch_get(b, 0, 0, &v) && v.f == 3.0);
  ck_assert(!cs_batch_get(b, 0, 1, &v));
  ck_assert_int_eq(cs_batch_put_i64(b, 0, 1, &err), CS_EINVAL); /* a FLOAT64 column now */
  cs_batch_free(b);
}
END_TEST

static Suite *batch_suite(void) {
  Suite *s = suite_create("batch");
  TCase *tc = tcase_create("batch");
  tcase_add_test(tc, test_batch_null_put_after_cancelled_row_is_null);
  tcase_add_test(tc, test_batch_truncate_then_refill_keeps_exact_validity);
  tcase_add_test(tc, test_batch_text_truncate_drops_bytes);
  tcase_add_test(tc, test_batch_column_reset_retypes_values);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(batch_suite()); }
