/*
** check_mask.c - the byte-mask kernels: cs_mask_count, cs_mask_to_rows and
** cs_gather_mask.
**
** Each is compared with the obvious loop over mask bytes (a byte is
** selected when it is nonzero, whatever its value, so the masks here hold
** 0x80, 0xFF and 0x7F as well as 1).  The masks cover the cases the
** word-at-a-time kernels treat differently: all-zero and all-one words,
** mixed words, alternating bytes, long runs, tails shorter than a word,
** and, for the gather, records so small that record boundaries fall inside
** mask words.  Output buffers are allocated to exactly the selected count,
** so the sanitizer build catches the branchless compaction storing past
** the end.  Threaded runs (1, 2 and 4 threads, above
** CS_PARALLEL_MIN_ELEMENTS) must agree byte for byte.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

/* ---------------------------------------------------------------- stores */

static const cs_column fixed_cols[] = {
    {"i8", CS_TYPE_INT8, true},         {"i16", CS_TYPE_INT16, true},    {"i32", CS_TYPE_INT32, true},
    {"i64", CS_TYPE_INT64, true},       {"u8", CS_TYPE_UINT8, true},     {"u16", CS_TYPE_UINT16, true},
    {"u32", CS_TYPE_UINT32, true},      {"f32", CS_TYPE_FLOAT32, true},  {"f64", CS_TYPE_FLOAT64, true},
    {"b", CS_TYPE_BOOL, true},          {"t", CS_TYPE_TEXT, true},       {"nn_i32", CS_TYPE_INT32, false},
    {"nn_f64", CS_TYPE_FLOAT64, false}, {"nn_u8", CS_TYPE_UINT8, false}, {"nn_i16", CS_TYPE_INT16, false},
};
#define N_FIXED_COLS (sizeof fixed_cols / sizeof fixed_cols[0])

typedef enum layout { IRREGULAR, UNIFORM } layout;

typedef struct kstore {
  char *dir;
  char *path;
  cs_store *s;
} kstore;

/* Appends one random row of every column to b. */
static void put_random_row(cs_batch *b, const cs_column *cols, uint32_t nc, ut_rng *rng,
                           unsigned null_permille, ut_cell *cells) {
  cs_err err = {0};
  for (uint32_t c = 0; c < nc; c++) {
    ut_cell *cell = &cells[c];
    ut_cell_random(rng, cols[c].type, cols[c].nullable, null_permille, cell);
    cs_rc rc;
    if (cell->null)
      rc = cs_batch_put_null(b, c, &err);
    else if (cs_type_is_integer(cols[c].type))
      rc = cs_batch_put_i64(b, c, cell->i, &err);
    else if (cols[c].type == CS_TYPE_FLOAT32)
      rc = cs_batch_put_f64(b, c, (double)cell->f32, &err);
    else if (cols[c].type == CS_TYPE_FLOAT64)
      rc = cs_batch_put_f64(b, c, cell->f, &err);
    else
      rc = cs_batch_put_bytes(b, c, cell->bytes, cell->len, &err);
    if (rc != CS_OK) ck_abort_msg("put: %s", err.msg);
  }
  cs_batch_end_row(b);
}

/* A store of n_rows random rows.  IRREGULAR: records of 1..size rows, each
** size drawn at random; UNIFORM: records of size rows (a multiple of 8, as
** the writer requires), the last one shorter. */
static void kstore_make(kstore *k, const cs_column *cols, uint32_t nc, uint64_t n_rows, layout lay,
                        uint64_t size, unsigned null_permille, uint64_t seed) {
  k->dir = ut_tmpdir();
  k->path = ut_join(k->dir, "k.cst");
  cs_schema schema = {nc, cols};
  cs_writer_options opt = {.record_rows = lay == UNIFORM ? size : (uint64_t)1 << 30};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(k->path, &schema, &opt, &w, &err) == CS_OK, "create: %s", err.msg);
  ut_rng rng = ut_rng_seed(seed);
  ut_cell *cells = calloc(nc, sizeof *cells);
  ck_assert_ptr_nonnull(cells);
  for (uint64_t done = 0; done < n_rows;) {
    uint64_t want = lay == UNIFORM ? size * 16 : 1 + ut_rng_below(&rng, size);
    if (want > n_rows - done) want = n_rows - done;
    cs_batch *b;
    ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
    for (uint64_t i = 0; i < want; i++) put_random_row(b, cols, nc, &rng, null_permille, cells);
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "write: %s", err.msg);
    cs_batch_free(b);
    done += want;
  }
  for (uint32_t c = 0; c < nc; c++) free(cells[c].bytes);
  free(cells);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "commit: %s", err.msg);
  k->s = ut_open_ok(k->path, CS_VERIFY_FULL, "kstore");
  ck_assert_uint_eq(cs_store_rows(k->s), n_rows);
}

static void kstore_free(kstore *k) {
  cs_store_close(k->s);
  free(k->path);
  ut_tmpdir_remove(k->dir);
}

/* ------------------------------------------------------------- reference */

/* The record of row by a plain binary search over the public accessors. */
static uint64_t ref_record(const cs_store *s, uint64_t row) {
  uint64_t lo = 0, hi = cs_store_records(s);
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (cs_store_record_first_row(s, mid) <= row)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

static void ref_gather(const cs_store *s, uint32_t col, const uint64_t *rows, uint64_t n, uint8_t *out,
                       uint8_t *ov) {
  size_t w = cs_type_width(cs_store_schema(s)->cols[col].type);
  for (uint64_t i = 0; i < n; i++) {
    if (rows[i] >= cs_store_rows(s)) ck_abort_msg("reference: row %" PRIu64 " out of range", rows[i]);
    uint64_t rec = ref_record(s, rows[i]);
    uint64_t local = rows[i] - cs_store_record_first_row(s, rec);
    const cs_chunk *ch = cs_store_chunk(s, rec, col);
    memcpy(out + i * w, (const uint8_t *)ch->data + local * w, w);
    ov[i] = cs_chunk_is_valid(ch, local) ? 1 : 0;
  }
}

static void reset_config(void) {
  cs_kernel_config cfg = {0, -1};
  cs_kernel_config_set(&cfg);
}

static void set_threads(int threads) {
  cs_kernel_config cfg = {threads, -1};
  cs_kernel_config_set(&cfg);
}

/* ----------------------------------------------------------------- masks */

enum { M_ZERO, M_ONES, M_ALT01, M_ALT10, M_SPARSE, M_HALF, M_DENSE, M_RUNS, M_WORDS, M_COUNT };
static const char *const mask_names[] = {"all-zero",       "all-ones",     "alternating 01",
                                         "alternating 10", "density 0.01", "density 0.5",
                                         "density 0.99",   "runs",         "word-aligned blocks"};

/* A selected byte: any nonzero value. */
static uint8_t sel_byte(ut_rng *r) {
  static const uint8_t v[] = {1, 1, 1, 0x80, 0xFF, 0x7F, 0x40, 2};
  return v[ut_rng_below(r, 8)];
}

static void mask_fill(uint8_t *m, uint64_t n, int kind, ut_rng *r) {
  uint64_t i = 0;
  switch (kind) {
    case M_ZERO: memset(m, 0, n); break;
    case M_ONES:
      for (; i < n; i++) m[i] = sel_byte(r);
      break;
    case M_ALT01:
      for (; i < n; i++) m[i] = (i & 1) ? sel_byte(r) : 0;
      break;
    case M_ALT10:
      for (; i < n; i++) m[i] = (i & 1) ? 0 : sel_byte(r);
      break;
    case M_SPARSE:
      for (; i < n; i++) m[i] = ut_rng_below(r, 100) == 0 ? sel_byte(r) : 0;
      break;
    case M_HALF:
      for (; i < n; i++) m[i] = ut_rng_below(r, 2) ? sel_byte(r) : 0;
      break;
    case M_DENSE:
      for (; i < n; i++) m[i] = ut_rng_below(r, 100) ? sel_byte(r) : 0;
      break;
    case M_RUNS:
      while (i < n) {
        uint64_t len = 1 + ut_rng_below(r, 100);
        bool on = ut_rng_below(r, 2);
        for (uint64_t j = 0; j < len && i < n; j++, i++) m[i] = on ? sel_byte(r) : 0;
      }
      break;
    default: /* whole words of ones or zeros, then a mixed one */
      for (; i < n; i++)
        m[i] = ((i / 8) % 3 == 0)   ? sel_byte(r)
               : ((i / 8) % 3 == 1) ? 0
                                    : (uint8_t)(ut_rng_below(r, 2) ? 1 : 0);
      break;
  }
}

static uint64_t naive_count(const uint8_t *m, uint64_t n) {
  uint64_t c = 0;
  for (uint64_t i = 0; i < n; i++) c += m[i] != 0;
  return c;
}

/* ----------------------------------------------------------------- count */

START_TEST(test_mask_count_and_rows_match_naive_every_length) {
  ut_rng r = ut_rng_seed(401);
  uint8_t *m = malloc(4200);
  ck_assert_ptr_nonnull(m);
  for (int kind = 0; kind < M_COUNT; kind++) {
    for (uint64_t n = 0; n < 4200; n += (n < 80 ? 1 : 97)) {
      mask_fill(m, n, kind, &r);
      uint64_t want = naive_count(m, n);
      /* The kernels must not read past n: poison what follows. */
      uint8_t *exact = malloc(n + 1);
      ck_assert_ptr_nonnull(exact);
      memcpy(exact, m, n);
      uint64_t got = cs_mask_count(exact, n);
      if (got != want)
        ck_abort_msg("seed 401 %s n %" PRIu64 ": count %" PRIu64 ", expected %" PRIu64, mask_names[kind], n,
                     got, want);
      uint64_t base = ut_rng_below(&r, 2) ? 0 : ut_rng_u64(&r) >> 2;
      uint64_t *rows = malloc(want * 8 + 1);
      ck_assert_ptr_nonnull(rows);
      uint64_t k = cs_mask_to_rows(exact, n, base, rows);
      if (k != want)
        ck_abort_msg("seed 401 %s n %" PRIu64 ": to_rows gave %" PRIu64 ", expected %" PRIu64,
                     mask_names[kind], n, k, want);
      uint64_t j = 0;
      for (uint64_t i = 0; i < n; i++) {
        if (!exact[i]) continue;
        if (rows[j] != base + i)
          ck_abort_msg("seed 401 %s n %" PRIu64 ": rows[%" PRIu64 "] = %" PRIu64 ", expected %" PRIu64,
                       mask_names[kind], n, j, rows[j], base + i);
        j++;
      }
      free(rows);
      free(exact);
    }
  }
  free(m);
}
END_TEST

START_TEST(test_mask_count_unaligned_starts) {
  /* The mask pointer need not be aligned: every offset into a buffer. */
  ut_rng r = ut_rng_seed(402);
  uint8_t buf[1100];
  mask_fill(buf, sizeof buf, M_HALF, &r);
  for (uint64_t off = 0; off < 16; off++)
    for (uint64_t n = 0; n + off <= sizeof buf; n += 37) {
      uint64_t want = naive_count(buf + off, n), got = cs_mask_count(buf + off, n);
      if (got != want)
        ck_abort_msg("off %" PRIu64 " n %" PRIu64 ": %" PRIu64 " != %" PRIu64, off, n, got, want);
    }
}
END_TEST

/* ---------------------------------------------------------------- gather */

static void check_gather_mask(const cs_store *s, const uint8_t *mask, uint64_t first, uint64_t n,
                              const char *ctx) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t want_n = naive_count(mask, n);
  uint64_t *pos = malloc(want_n * 8 + 8);
  ck_assert_ptr_nonnull(pos);
  for (uint64_t i = 0, j = 0; i < n; i++)
    if (mask[i]) pos[j++] = first + i;
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    size_t w = cs_type_width(sc->cols[c].type);
    if (!w) continue;
    uint8_t *ref = malloc(want_n * w + 1), *ref_v = malloc(want_n + 1);
    uint8_t *out = malloc(want_n * w + 1), *ov = malloc(want_n + 1);
    ck_assert(ref && ref_v && out && ov);
    ref_gather(s, c, pos, want_n, ref, ref_v);
    for (int with_valid = 0; with_valid < 2; with_valid++) {
      memset(out, 0xA5, want_n * w);
      memset(ov, 0xA5, want_n);
      uint64_t got_n = cs_gather_mask(s, c, mask, first, n, out, with_valid ? ov : NULL);
      if (got_n != want_n)
        ck_abort_msg("%s col %s: wrote %" PRIu64 ", expected %" PRIu64, ctx, sc->cols[c].name, got_n, want_n);
      for (uint64_t i = 0; i < want_n; i++) {
        if (memcmp(out + i * w, ref + i * w, w) != 0)
          ck_abort_msg("%s col %s: element %" PRIu64 " (row %" PRIu64 ") differs", ctx, sc->cols[c].name, i,
                       pos[i]);
        if (with_valid ? ov[i] != ref_v[i] : ov[i] != 0xA5)
          ck_abort_msg("%s col %s: out_valid[%" PRIu64 "] = %u, expected %u", ctx, sc->cols[c].name, i, ov[i],
                       with_valid ? ref_v[i] : 0xA5);
      }
    }
    free(ref), free(ref_v), free(out), free(ov);
  }
  free(pos);
}

typedef struct shape {
  uint64_t seed, rows;
  layout lay;
  uint64_t size;
  unsigned null_permille;
} shape;

static const shape shapes[] = {
    {501, 2000, IRREGULAR, 13, 200}, /* boundaries inside most mask words */
    {502, 3000, IRREGULAR, 700, 50}, {503, 2051, UNIFORM, 64, 100},
    {504, 1000, UNIFORM, 8, 300}, /* a boundary every word */
    {505, 333, UNIFORM, 512, 0},  /* one record */
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

START_TEST(test_gather_mask_matches_reference) {
  const shape *sh = &shapes[_i];
  kstore k;
  kstore_make(&k, fixed_cols, (uint32_t)N_FIXED_COLS, sh->rows, sh->lay, sh->size, sh->null_permille,
              sh->seed);
  uint64_t N = cs_store_rows(k.s);
  ut_rng r = ut_rng_seed(sh->seed * 3);
  for (int kind = 0; kind < M_COUNT; kind++) {
    for (int rep = 0; rep < 6; rep++) {
      uint64_t first, n;
      switch (rep) {
        case 0: first = 0, n = N; break;
        case 1: first = N - 1, n = 1; break;
        case 2: first = 0, n = 0; break;
        case 3: first = ut_rng_below(&r, 9), n = N - first - ut_rng_below(&r, 9); break; /* unaligned ends */
        default: first = ut_rng_below(&r, N), n = ut_rng_below(&r, N - first + 1); break;
      }
      uint8_t *mask = malloc(n + 1);
      ck_assert_ptr_nonnull(mask);
      mask_fill(mask, n, kind, &r);
      char ctx[160];
      snprintf(ctx, sizeof ctx, "seed %" PRIu64 " mask %s first %" PRIu64 " n %" PRIu64, sh->seed,
               mask_names[kind], first, n);
      check_gather_mask(k.s, mask, first, n, ctx);
      free(mask);
    }
  }
  kstore_free(&k);
}
END_TEST

START_TEST(test_gather_mask_whole_records_and_boundaries) {
  kstore k;
  kstore_make(&k, fixed_cols, (uint32_t)N_FIXED_COLS, 1500, IRREGULAR, 40, 100, 506);
  uint64_t N = cs_store_rows(k.s), R = cs_store_records(k.s);
  uint8_t *mask = calloc(N, 1);
  ck_assert_ptr_nonnull(mask);
  /* Every other whole record, then only the rows at each boundary. */
  for (uint64_t rec = 0; rec < R; rec += 2)
    memset(mask + cs_store_record_first_row(k.s, rec), 1, cs_store_record_rows(k.s, rec));
  check_gather_mask(k.s, mask, 0, N, "seed 506 alternate records");
  memset(mask, 0, N);
  for (uint64_t rec = 1; rec < R; rec++) {
    uint64_t f = cs_store_record_first_row(k.s, rec);
    mask[f - 1] = 0xFF, mask[f] = 0x10;
  }
  check_gather_mask(k.s, mask, 0, N, "seed 506 boundary rows");
  free(mask);
  kstore_free(&k);
}
END_TEST

/* --------------------------------------------------------------- threads */

static const cs_column thread_cols[] = {
    {"i64", CS_TYPE_INT64, true}, {"u8", CS_TYPE_UINT8, false}, {"f32", CS_TYPE_FLOAT32, true}};

START_TEST(test_mask_kernels_threads_identical) {
  uint64_t N = 3 * CS_PARALLEL_MIN_ELEMENTS + 4099; /* 4 threads get 4 spans */
  kstore k;
  kstore_make(&k, thread_cols, 3, N, IRREGULAR, 30000, 80, 601);
  uint64_t first = 3, n = N - 10;
  uint8_t *mask = malloc(n);
  ck_assert_ptr_nonnull(mask);
  ut_rng r = ut_rng_seed(602);
  static const int threads[] = {1, 2, 4, 3};
  for (int kind = M_ONES; kind < M_COUNT; kind++) {
    mask_fill(mask, n, kind, &r);
    uint64_t want = naive_count(mask, n);
    /* [0]: the 1-thread output, [1]: the current one. */
    uint64_t *rows[2] = {malloc(want * 8 + 8), malloc(want * 8 + 8)};
    uint8_t *out[2] = {malloc(want * 8 + 8), malloc(want * 8 + 8)},
            *ov[2] = {malloc(want + 1), malloc(want + 1)};
    ck_assert(rows[0] && rows[1] && out[0] && out[1] && ov[0] && ov[1]);
    for (int ti = 0; ti < 4; ti++) {
      set_threads(threads[ti]);
      int at = ti ? 1 : 0;
      char ctx[128];
      snprintf(ctx, sizeof ctx, "seed 602 mask %s threads %d", mask_names[kind], threads[ti]);
      uint64_t c = cs_mask_count(mask, n);
      if (c != want) ck_abort_msg("%s: count %" PRIu64 ", expected %" PRIu64, ctx, c, want);
      c = cs_mask_to_rows(mask, n, first, rows[at]);
      if (c != want) ck_abort_msg("%s: to_rows %" PRIu64 ", expected %" PRIu64, ctx, c, want);
      if (ti == 0) {
        for (uint64_t i = 0, j = 0; i < n; i++)
          if (mask[i] && rows[0][j++] != first + i)
            ck_abort_msg("%s: rows[%" PRIu64 "] is wrong", ctx, j - 1);
      } else if (memcmp(rows[0], rows[1], want * 8) != 0) {
        ck_abort_msg("%s: positions differ from the 1-thread output", ctx);
      }
    }
    for (uint32_t col = 0; col < 3; col++) {
      size_t w = cs_type_width(thread_cols[col].type);
      for (int ti = 0; ti < 4; ti++) {
        set_threads(threads[ti]);
        int at = ti ? 1 : 0;
        char ctx[128];
        snprintf(ctx, sizeof ctx, "seed 602 mask %s threads %d col %u", mask_names[kind], threads[ti], col);
        uint64_t c = cs_gather_mask(k.s, col, mask, first, n, out[at], ov[at]);
        if (c != want) ck_abort_msg("%s: gathered %" PRIu64 ", expected %" PRIu64, ctx, c, want);
        if (ti == 0) {
          uint8_t *ref = malloc(want * w + 1), *ref_v = malloc(want + 1);
          ck_assert(ref && ref_v);
          ref_gather(k.s, col, rows[0], want, ref, ref_v);
          if (memcmp(ref, out[0], want * w) != 0 || memcmp(ref_v, ov[0], want) != 0)
            ck_abort_msg("%s: differs from the reference", ctx);
          free(ref), free(ref_v);
        } else if (memcmp(out[0], out[1], want * w) != 0 || memcmp(ov[0], ov[1], want) != 0) {
          ck_abort_msg("%s: differs from the 1-thread output", ctx);
        }
      }
    }
    for (int i = 0; i < 2; i++) free(rows[i]), free(out[i]), free(ov[i]);
  }
  reset_config();
  free(mask);
  kstore_free(&k);
}
END_TEST

static Suite *mask_suite(void) {
  Suite *s = suite_create("mask");
  TCase *tc = tcase_create("kernels");
  tcase_add_checked_fixture(tc, NULL, reset_config);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_mask_count_and_rows_match_naive_every_length);
  tcase_add_test(tc, test_mask_count_unaligned_starts);
  tcase_add_loop_test(tc, test_gather_mask_matches_reference, 0, (int)N_SHAPES);
  tcase_add_test(tc, test_gather_mask_whole_records_and_boundaries);
  suite_add_tcase(s, tc);
  TCase *tt = tcase_create("threads");
  tcase_add_checked_fixture(tt, NULL, reset_config);
  tcase_set_timeout(tt, 600);
  tcase_add_test(tt, test_mask_kernels_threads_identical);
  suite_add_tcase(s, tt);
  return s;
}

int main(void) { return ut_run_suite(mask_suite()); }
