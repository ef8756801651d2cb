/*
** check_array.c - columns appended and read whole: cs_batch_append_arrays
** (write/cs_batch.c) and cs_array_size/cs_array_read (kernels/cs_array.c).
**
** The oracle for the append is the row-by-row path every INSERT takes: the
** same values put one at a time (cs_batch_put_*) must give a store whose
** chunks hold the same bytes, validity bits and offsets, including when
** the arrays start in the middle of a bitmap byte.  The oracle for the
** read is a plain loop over the store's chunks (cs_chunk_is_valid,
** cs_chunk_varlen) skipping deleted positions.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit_util.h"

static const cs_column cols[] = {
    {"i", CS_TYPE_INT32, true}, {"s", CS_TYPE_TEXT, true}, {"k", CS_TYPE_INT8, false}};
static const cs_schema schema = {3, cols};

#define N 3000

static int32_t ival(uint64_t r) { return (int32_t)(r * 2654435761u); }
static bool ivalid(uint64_t r) { return r % 7 != 3; }
static bool svalid(uint64_t r) { return r % 5 != 1; }
static int slen(uint64_t r) { return (int)(r % 9); }

/* Rows [from, to) put one at a time. */
static void put_rows(cs_batch *b, uint64_t from, uint64_t to) {
  cs_err err;
  char buf[16];
  for (uint64_t r = from; r < to; r++) {
    if (ivalid(r))
      cs_batch_put_i64(b, 0, ival(r), &err);
    else
      cs_batch_put_null(b, 0, &err);
    memset(buf, 'a' + (int)(r % 26), sizeof buf);
    if (svalid(r))
      cs_batch_put_bytes(b, 1, buf, (uint64_t)slen(r), &err);
    else
      cs_batch_put_null(b, 1, &err);
    cs_batch_put_i64(b, 2, (int64_t)(r % 100), &err);
    cs_batch_end_row(b);
  }
}

/* Rows [from, to) as arrays, with junk under the NULLs (a value, bytes)
** that the append must not keep. */
static cs_rc append_rows(cs_batch *b, uint64_t from, uint64_t to, cs_err *err) {
  uint64_t n = to - from;
  int32_t *iv = malloc(n * 4 + 1);
  uint8_t *ok = malloc(n + 1), *sok = malloc(n + 1), *kv = malloc(n + 1);
  int64_t *offs = malloc((n + 1) * 8);
  char *bytes = malloc(n * 16 + 1);
  uint64_t at = 0;
  offs[0] = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = from + i;
    iv[i] = ivalid(r) ? ival(r) : 12345;
    ok[i] = ivalid(r) ? (uint8_t)(1 + r % 3) : 0; /* any nonzero byte is valid */
    sok[i] = svalid(r);
    int len = svalid(r) ? slen(r) : 4;
    memset(bytes + at, 'a' + (int)(r % 26), (size_t)len);
    at += (uint64_t)len;
    offs[i + 1] = (int64_t)at;
    kv[i] = (uint8_t)(r % 100);
  }
  cs_array a[3] = {{iv, n * 4, NULL, ok}, {bytes, at, offs, sok}, {kv, n, NULL, NULL}};
  cs_rc rc = cs_batch_append_arrays(b, &schema, a, n, err);
  free(iv), free(ok), free(sok), free(kv), free(offs), free(bytes);
  return rc;
}

static cs_store *write_store(const char *path, const cs_batch *b) {
  cs_writer *w = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_writer_create(path, &schema, NULL, &w, &err), CS_OK);
  ck_assert_int_eq(cs_writer_write(w, b, &err), CS_OK);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  return ut_open_ok(path, CS_VERIFY_FULL, path);
}

START_TEST(test_append_matches_row_puts) {
  cs_batch *rows = NULL, *arrays = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_batch_new(&schema, &rows, &err), CS_OK);
  ck_assert_int_eq(cs_batch_new(&schema, &arrays, &err), CS_OK);
  put_rows(rows, 0, N);
  /* 5 rows put one at a time, so the arrays start mid-byte, then two calls */
  put_rows(arrays, 0, 5);
  ck_assert_int_eq(append_rows(arrays, 5, 1001, &err), CS_OK);
  ck_assert_int_eq(append_rows(arrays, 1001, N, &err), CS_OK);
  ck_assert_uint_eq(cs_batch_rows(arrays), N);
  ut_scratch sc = ut_scratch_new();
  char p2[4096];
  snprintf(p2, sizeof p2, "%s.2", sc.path);
  cs_store *a = write_store(sc.path, rows), *b = write_store(p2, arrays);
  for (uint32_t c = 0; c < 3; c++) {
    const cs_chunk *x = cs_store_chunk(a, 0, c), *y = cs_store_chunk(b, 0, c);
    ck_assert_uint_eq(x->null_count, y->null_count);
    ck_assert_uint_eq(x->data_bytes, y->data_bytes);
    ck_assert_msg(memcmp(x->data, y->data, x->data_bytes) == 0, "column %u values differ", c);
    ck_assert_int_eq(!x->validity, !y->validity);
    if (x->validity) ck_assert(memcmp(x->validity, y->validity, N / 8) == 0);
    if (x->offsets) ck_assert(memcmp(x->offsets, y->offsets, (N + 1) * 8) == 0);
    ck_assert(x->min.bits == y->min.bits && x->max.bits == y->max.bits && x->flags == y->flags);
  }
  cs_store_close(a), cs_store_close(b);
  unlink(p2);
  ut_scratch_free(&sc);
  cs_batch_free(rows), cs_batch_free(arrays);
}
END_TEST

START_TEST(test_append_failure_changes_nothing) {
  cs_batch *b = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_batch_new(&schema, &b, &err), CS_OK);
  put_rows(b, 0, 3);
  int32_t iv[2] = {1, 2};
  uint8_t kv[2] = {1, 2}, bad_ok[2] = {1, 0};
  int64_t offs[3] = {0, 2, 1}; /* decreasing */
  cs_array a[3] = {{iv, 8, NULL, NULL}, {"abc", 3, offs, NULL}, {kv, 2, NULL, NULL}};
  ck_assert_int_eq(cs_batch_append_arrays(b, &schema, a, 2, &err), CS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "s:offsets[2]"));
  a[1] = (cs_array){NULL, 0, NULL, NULL};
  a[2].valid = bad_ok; /* a NULL in the NOT NULL column k */
  ck_assert_int_eq(cs_batch_append_arrays(b, &schema, a, 2, &err), CS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "k is NOT NULL"));
  a[2] = (cs_array){kv, 1, NULL, NULL}; /* one byte for two rows */
  ck_assert_int_eq(cs_batch_append_arrays(b, &schema, a, 2, &err), CS_EINVAL);
  ck_assert_uint_eq(cs_batch_rows(b), 3);
  /* the batch goes on as if nothing happened */
  put_rows(b, 3, 10);
  cs_stat v;
  for (uint64_t r = 0; r < 10; r++)
    ck_assert(cs_batch_get(b, 0, r, &v) == ivalid(r) && (!ivalid(r) || v.i == ival(r)));
  cs_batch_free(b);
}
END_TEST

START_TEST(test_read_live_rows_and_lists) {
  cs_batch *b = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_batch_new(&schema, &b, &err), CS_OK);
  put_rows(b, 0, N);
  ut_scratch sc = ut_scratch_new();
  cs_store *s0 = write_store(sc.path, b);
  cs_store_close(s0);
  /* delete every 3rd position and a whole run */
  cs_writer *w = NULL;
  ck_assert_int_eq(cs_writer_append(sc.path, NULL, &w, &err), CS_OK);
  uint64_t dels[N], nd = 0;
  for (uint64_t r = 0; r < N; r++)
    if (r % 3 == 0 || (r >= 600 && r < 700)) dels[nd++] = r;
  ck_assert_int_eq(cs_writer_delete(w, dels, nd, NULL, &err), CS_OK);
  ck_assert_int_eq(cs_writer_prepare(w, &err), CS_OK);
  ck_assert_int_eq(cs_writer_commit(w, &err), CS_OK);
  cs_store *s = ut_open_ok(sc.path, CS_VERIFY_FULL, "deleted");
  uint64_t live[N], nl = 0;
  for (uint64_t r = 0; r < N; r++)
    if (!cs_store_row_deleted(s, r)) live[nl++] = r;
  ck_assert_uint_eq(nl, cs_store_live_rows(s));
  /* a list: live rows backwards, with a duplicate */
  uint64_t list[N + 1], nlist = 0;
  for (uint64_t i = nl; i-- > 0;) list[nlist++] = live[i];
  list[nlist++] = live[0];
  for (int mode = 0; mode < 2; mode++) {
    const uint64_t *rows = mode ? list : NULL, *want_rows = mode ? list : live;
    uint64_t n = mode ? nlist : nl, bytes;
    /* INT32 values, 0 where NULL */
    ck_assert_int_eq(cs_array_size(s, 0, CS_ARRAY_VALUES, rows, n, &bytes, &err), CS_OK);
    ck_assert_uint_eq(bytes, n * 4);
    int32_t *iv = malloc(bytes);
    ck_assert_int_eq(cs_array_read(s, 0, CS_ARRAY_VALUES, rows, n, iv, bytes, &err), CS_OK);
    uint8_t *ok = malloc(n);
    ck_assert_int_eq(cs_array_read(s, 0, CS_ARRAY_VALID, rows, n, ok, n, &err), CS_OK);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = want_rows[i];
      ck_assert_msg(ok[i] == ivalid(r) && iv[i] == (ivalid(r) ? ival(r) : 0), "mode %d row %llu", mode,
                    (unsigned long long)r);
    }
    /* TEXT: offsets from 0, NULLs empty */
    ck_assert_int_eq(cs_array_size(s, 1, CS_ARRAY_OFFSETS, rows, n, &bytes, &err), CS_OK);
    ck_assert_uint_eq(bytes, (n + 1) * 8);
    int64_t *offs = malloc(bytes);
    ck_assert_int_eq(cs_array_read(s, 1, CS_ARRAY_OFFSETS, rows, n, offs, bytes, &err), CS_OK);
    ck_assert_int_eq(cs_array_size(s, 1, CS_ARRAY_VALUES, rows, n, &bytes, &err), CS_OK);
    ck_assert_uint_eq(bytes, (uint64_t)offs[n]);
    char *txt = malloc(bytes + 1);
    ck_assert_int_eq(cs_array_read(s, 1, CS_ARRAY_VALUES, rows, n, txt, bytes, &err), CS_OK);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = want_rows[i];
      int64_t len = offs[i + 1] - offs[i];
      ck_assert_int_eq(len, svalid(r) ? slen(r) : 0);
      for (int64_t k = 0; k < len; k++) ck_assert_int_eq(txt[offs[i] + k], 'a' + (int)(r % 26));
    }
    /* too small a buffer: an error, never a write past it */
    if (bytes > 1)
      ck_assert_int_eq(cs_array_read(s, 1, CS_ARRAY_VALUES, rows, n, txt, bytes - 1, &err), CS_ECORRUPT);
    ck_assert_int_eq(cs_array_size(s, 0, CS_ARRAY_OFFSETS, rows, n, &bytes, &err), CS_EINVAL);
    free(iv), free(ok), free(offs), free(txt);
  }
  cs_store_close(s);
  ut_scratch_free(&sc);
  cs_batch_free(b);
}
END_TEST

static Suite *array_suite(void) {
  Suite *s = suite_create("array");
  TCase *tc = tcase_create("array");
  tcase_add_test(tc, test_append_matches_row_puts);
  tcase_add_test(tc, test_append_failure_changes_nothing);
  tcase_add_test(tc, test_read_live_rows_and_lists);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(array_suite()); }
