/*
** check_select.c - the scan kernels of cs_select.c: cs_select_range (a
** batch's predicates, mask, count and gather in one region) and
** cs_select_rows (a list of positions gathered in one region).
**
** The reference is two kernels that are already tested against naive
** loops, used one after the other, plus naive loops: cs_pred_eval gives the
** predicates' mask (check_pred compares it with SQLite's rules), the
** caller's mask is ANDed in byte by byte, the positions are the obvious
** loop over the mask, and the values come from unit_util's ut_ref_gather
** (a binary search and a memcpy per value).  cs_select_range must agree
** with that on the mask, the count, the route it took (by_mask is exactly
** "density >= mask_gate", or no targets), the positions when it says it filled them, every
** target's first n_selected values and validity bytes, and the records
** counted; and it must write nothing past n_selected (every buffer starts
** as a sentinel and is sized exactly, so the sanitizer build catches a
** store past its end).
**
** The stores cut their rows into records four ways: irregular records of
** 1..3 rows (so most batches start, end or lie inside one-row records),
** irregular records of up to 700, uniform records of 8 (a boundary in every
** mask word) and of 64, and a single record.  Batches start and end
** mid-record, on record boundaries, at the first and the last row, and are
** one row or empty.  The record counters are checked the way the cursor
** uses them: a batch with count_from == first counts every record it
** overlaps once, and consecutive batches of a range with count_from = the
** range's start count every record of the range once, however the batches
** split the records.
**
** Threading: the same call at 1, 2 and 4 threads, on batches and lists big
** enough to be threaded, must give identical bytes in every buffer.  No
** OpenMP region runs outside a test body (Check forks each test, and GCC's
** OpenMP runtime can hang in a forked child that inherited a thread pool).
** Per-element checks use `if (...) ck_abort_msg`, never ck_assert: every
** passing ck_assert is a write() to Check's pipe.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

#define SENTINEL 0xA5
#define MAX_TARGETS 32

/* ------------------------------------------------------------- operands */

static cs_value vint(int64_t i) { return (cs_value){.kind = CS_VAL_INT, .i = i}; }
static cs_value vflt(double f) { return (cs_value){.kind = CS_VAL_FLOAT, .f = f}; }
static cs_value vnull(void) { return (cs_value){.kind = CS_VAL_NULL}; }

/* A value of numeric column col taken from a random row (so EQ and IN hit),
** retried past NULLs and NaNs; 0 if none was found. */
static cs_value pick_value(const cs_store *s, uint32_t col, ut_rng *r) {
  cs_type ty = cs_store_schema(s)->cols[col].type;
  for (int tries = 0; tries < 32; tries++) {
    ut_cell c;
    ut_store_cell(s, ut_rng_below(r, cs_store_rows(s)), col, &c);
    if (c.null) continue;
    if (cs_type_is_integer(ty)) return vint(c.i);
    if (!isnan(c.f)) return vflt(c.f);
  }
  return vint(0);
}

/* --------------------------------------------------------- predicate sets */

/* Columns of ut_fixed_cols, by name. */
enum {
  C_I8,
  C_I16,
  C_I32,
  C_I64,
  C_U8,
  C_U16,
  C_U32,
  C_F32,
  C_F64,
  C_B,
  C_T,
  C_NN_I32,
  C_NN_F64,
  C_NN_U8,
  C_NN_I16
};

enum {
  P_NONE,
  P_GT,
  P_BETWEEN,
  P_EQ,
  P_IN,
  P_ISNULL,
  P_AND3,
  P_NOTHING,
  P_EVERYTHING,
  P_BOOL,
  P_FLOATS,
  P_COUNT
};
static const char *const pset_names[] = {"no predicates",
                                         "i32 > v",
                                         "f64 BETWEEN lo AND hi",
                                         "i16 = v",
                                         "u8 IN (a, b, c, NULL, 0.5)",
                                         "i64 IS NULL",
                                         "nn_i32 > v AND f32 IS NOT NULL AND u16 <= v",
                                         "i8 > 200 (zone maps skip all)",
                                         "nn_u8 >= 0 (every row)",
                                         "b = 1",
                                         "u32 < v AND nn_f64 BETWEEN -inf AND v"};

/* One predicate set over a ut_fixed_cols store, with the IN list it points
** to. */
typedef struct pset {
  cs_pred preds[4];
  uint32_t n;
  cs_value set[5];
} pset;

static void pset_build(pset *p, int kind, const cs_store *s, ut_rng *r) {
  memset(p, 0, sizeof *p);
  cs_pred *q = p->preds;
  switch (kind) {
    case P_NONE: break;
    case P_GT: q[p->n++] = (cs_pred){.col = C_I32, .op = CS_CMP_GT, .a = pick_value(s, C_I32, r)}; break;
    case P_BETWEEN: {
      cs_value lo = pick_value(s, C_F64, r), hi = pick_value(s, C_F64, r);
      double a = lo.kind == CS_VAL_FLOAT ? lo.f : (double)lo.i,
             b = hi.kind == CS_VAL_FLOAT ? hi.f : (double)hi.i;
      q[p->n++] =
          (cs_pred){.col = C_F64, .op = CS_CMP_BETWEEN, .a = vflt(a < b ? a : b), .b = vflt(a < b ? b : a)};
      break;
    }
    case P_EQ: q[p->n++] = (cs_pred){.col = C_I16, .op = CS_CMP_EQ, .a = pick_value(s, C_I16, r)}; break;
    case P_IN:
      p->set[0] = pick_value(s, C_U8, r), p->set[1] = pick_value(s, C_U8, r),
      p->set[2] = pick_value(s, C_U8, r);
      p->set[3] = vnull(), p->set[4] = vflt(0.5);
      q[p->n++] = (cs_pred){.col = C_U8, .op = CS_CMP_IN, .set = p->set, .n_set = 5};
      break;
    case P_ISNULL: q[p->n++] = (cs_pred){.col = C_I64, .op = CS_CMP_ISNULL}; break;
    case P_AND3:
      q[p->n++] = (cs_pred){.col = C_NN_I32, .op = CS_CMP_GT, .a = pick_value(s, C_NN_I32, r)};
      q[p->n++] = (cs_pred){.col = C_F32, .op = CS_CMP_NOTNULL};
      q[p->n++] = (cs_pred){.col = C_U16, .op = CS_CMP_LE, .a = pick_value(s, C_U16, r)};
      break;
    case P_NOTHING: q[p->n++] = (cs_pred){.col = C_I8, .op = CS_CMP_GT, .a = vint(200)}; break;
    case P_EVERYTHING: q[p->n++] = (cs_pred){.col = C_NN_U8, .op = CS_CMP_GE, .a = vint(0)}; break;
    case P_BOOL: q[p->n++] = (cs_pred){.col = C_B, .op = CS_CMP_EQ, .a = vint(1)}; break;
    default:
      q[p->n++] = (cs_pred){.col = C_U32, .op = CS_CMP_LT, .a = pick_value(s, C_U32, r)};
      q[p->n++] = (cs_pred){
          .col = C_NN_F64, .op = CS_CMP_BETWEEN, .a = vflt(-INFINITY), .b = pick_value(s, C_NN_F64, r)};
      break;
  }
}

/* ----------------------------------------------------------- user masks */

enum { U_NONE, U_HALF, U_ALL, U_COUNT };
static const char *const umask_names[] = {"no user mask", "user mask density 0.6", "user mask all nonzero"};

/* A selected byte: any nonzero value. */
static uint8_t sel_byte(ut_rng *r) {
  static const uint8_t v[] = {1, 1, 0x80, 0xFF, 0x7F, 2};
  return v[ut_rng_below(r, 6)];
}

/* n bytes of kind (NULL for U_NONE); caller frees. */
static uint8_t *umask_new(int kind, uint64_t n, ut_rng *r) {
  if (kind == U_NONE) return NULL;
  uint8_t *m = malloc(n + 1);
  ck_assert_ptr_nonnull(m);
  for (uint64_t i = 0; i < n; i++) m[i] = kind == U_ALL || ut_rng_below(r, 10) < 6 ? sel_byte(r) : 0;
  return m;
}

/* -------------------------------------------------------------- buffers */

/* A batch's buffers, each sized exactly for n rows (the +1 only keeps
** malloc(0) from returning NULL), and its targets. */
typedef struct sbufs {
  uint64_t n;
  uint32_t nt;
  cs_gather_target targets[MAX_TARGETS];
  size_t w[MAX_TARGETS];
  bool valid[MAX_TARGETS];
  uint8_t *mask;
  uint64_t *rows;
  uint8_t *out[MAX_TARGETS];
  uint8_t *ov[MAX_TARGETS]; /* allocated for every target; handed over only where valid[t] */
} sbufs;

static void sbufs_new(sbufs *b, const cs_store *s, const uint32_t *cols, uint32_t nt, uint64_t n) {
  ck_assert_uint_le(nt, MAX_TARGETS);
  memset(b, 0, sizeof *b);
  b->n = n, b->nt = nt;
  b->mask = malloc(n + 1), b->rows = malloc(n * 8 + 1);
  ck_assert(b->mask && b->rows);
  for (uint32_t t = 0; t < nt; t++) {
    b->w[t] = cs_type_width(cs_store_schema(s)->cols[cols[t]].type);
    b->out[t] = malloc(n * b->w[t] + 1), b->ov[t] = malloc(n + 1);
    ck_assert(b->out[t] && b->ov[t]);
    b->targets[t].col = cols[t];
  }
}

/* Hands out_valid to the targets t with (t + parity) even, and fills
** every buffer with sentinels (the mask, which is scratch, with 0xCC),
** the spare byte too (an empty batch must leave it alone). */
static void sbufs_reset(sbufs *b, int parity) {
  memset(b->mask, 0xCC, b->n + 1);
  memset(b->rows, SENTINEL, b->n * 8 + 1);
  for (uint32_t t = 0; t < b->nt; t++) {
    b->valid[t] = (t + (uint32_t)parity) % 2 == 0;
    b->targets[t].out = b->out[t];
    b->targets[t].out_valid = b->valid[t] ? b->ov[t] : NULL;
    memset(b->out[t], SENTINEL, b->n * b->w[t] + 1);
    memset(b->ov[t], SENTINEL, b->n + 1);
  }
}

static void sbufs_free(sbufs *b) {
  free(b->mask), free(b->rows);
  for (uint32_t t = 0; t < b->nt; t++) free(b->out[t]), free(b->ov[t]);
}

static bool all_sentinel(const void *p, uint64_t n) {
  const uint8_t *q = p;
  for (uint64_t i = 0; i < n; i++)
    if (q[i] != SENTINEL) return false;
  return true;
}

/* ------------------------------------------------------------- reference */

/* What the batch should give: the mask of cs_pred_eval ANDed with the
** user mask (as 0/1), the positions, and every target's values. */
typedef struct sref {
  uint64_t n_sel;
  uint8_t *mask;
  uint64_t *rows;
  cs_pred_stats st;
  uint8_t *out[MAX_TARGETS], *ov[MAX_TARGETS];
} sref;

static void sref_compute(sref *ref, const cs_store *s, const pset *p, const uint8_t *user, uint64_t first,
                         uint64_t n, const sbufs *b) {
  memset(ref, 0, sizeof *ref);
  ref->mask = malloc(n + 1);
  ref->rows = malloc(n * 8 + 1);
  ck_assert(ref->mask && ref->rows);
  cs_pred_eval(s, p->preds, p->n, first, n, ref->mask, &ref->st);
  for (uint64_t i = 0; i < n; i++) {
    uint8_t m = (uint8_t)(ref->mask[i] != 0 && (!user || user[i] != 0));
    ref->mask[i] = m;
    if (m) ref->rows[ref->n_sel++] = first + i;
  }
  for (uint32_t t = 0; t < b->nt; t++) {
    ref->out[t] = malloc(ref->n_sel * b->w[t] + 1), ref->ov[t] = malloc(ref->n_sel + 1);
    ck_assert(ref->out[t] && ref->ov[t]);
    ut_ref_gather(s, b->targets[t].col, ref->rows, ref->n_sel, ref->out[t], ref->ov[t]);
  }
}

static void sref_free(sref *ref, uint32_t nt) {
  free(ref->mask), free(ref->rows);
  for (uint32_t t = 0; t < nt; t++) free(ref->out[t]), free(ref->ov[t]);
}

/* Records of s overlapping rows [first, first + n), found naively. */
static uint64_t records_overlapping(const cs_store *s, uint64_t first, uint64_t n) {
  return n ? ut_ref_record(s, first + n - 1) - ut_ref_record(s, first) + 1 : 0;
}

/* Checks a cs_select_range result in b (run with gate and want_rows) against
** ref.  count_records: the batch ran with count_from == first, and the
** predicate set is not empty (see test_select_range_no_predicates_...). */
static void check_result(const cs_store *s, const cs_select_batch *r, const sbufs *b, const sref *ref,
                         bool count_records, const char *ctx) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t n = b->n;
  if (r->n_selected != ref->n_sel)
    ck_abort_msg("%s: n_selected %" PRIu64 ", expected %" PRIu64, ctx, r->n_selected, ref->n_sel);
  /* the mask is the batch's only when it selected rows (colstore.h) */
  for (uint64_t i = 0; i < n && r->n_selected > 0; i++)
    if (b->mask[i] != ref->mask[i])
      ck_abort_msg("%s: mask[%" PRIu64 "] (row %" PRIu64 ") = %u, expected %u", ctx, i, r->first + i,
                   b->mask[i], ref->mask[i]);
  if (n == 0) {
    if (r->by_mask || r->rows_filled || r->records_scanned || r->records_skipped)
      ck_abort_msg("%s: empty batch: by_mask %d rows_filled %d records %" PRIu64 " + %" PRIu64, ctx,
                   r->by_mask, r->rows_filled, r->records_scanned, r->records_skipped);
  } else {
    bool want_by_mask = r->n_targets == 0 || (double)ref->n_sel >= r->mask_gate * (double)n;
    if (r->by_mask != want_by_mask)
      ck_abort_msg("%s: by_mask %d with %" PRIu64 " of %" PRIu64 " selected, gate %g", ctx, r->by_mask,
                   ref->n_sel, n, r->mask_gate);
    if (r->rows_filled != (r->want_rows || !r->by_mask))
      ck_abort_msg("%s: rows_filled %d with want_rows %d, by_mask %d", ctx, r->rows_filled, r->want_rows,
                   r->by_mask);
  }
  if (r->rows_filled)
    for (uint64_t i = 0; i < ref->n_sel; i++)
      if (b->rows[i] != ref->rows[i])
        ck_abort_msg("%s: rows[%" PRIu64 "] = %" PRIu64 ", expected %" PRIu64, ctx, i, b->rows[i],
                     ref->rows[i]);
  if (!all_sentinel(b->rows + ref->n_sel, (n - ref->n_sel) * 8))
    ck_abort_msg("%s: rows written past n_selected %" PRIu64, ctx, ref->n_sel);
  for (uint32_t t = 0; t < b->nt; t++) {
    size_t w = b->w[t];
    const char *name = sc->cols[b->targets[t].col].name;
    for (uint64_t i = 0; i < ref->n_sel; i++) {
      if (memcmp(b->out[t] + i * w, ref->out[t] + i * w, w) != 0) {
        uint64_t g = 0, e = 0;
        memcpy(&g, b->out[t] + i * w, w);
        memcpy(&e, ref->out[t] + i * w, w);
        ck_abort_msg("%s: target %u (%s): element %" PRIu64 " (row %" PRIu64 "): bytes %016" PRIx64
                     ", expected %016" PRIx64,
                     ctx, t, name, i, ref->rows[i], g, e);
      }
      if (b->valid[t] && b->ov[t][i] != ref->ov[t][i])
        ck_abort_msg("%s: target %u (%s): valid[%" PRIu64 "] (row %" PRIu64 ") = %u, expected %u", ctx, t,
                     name, i, ref->rows[i], b->ov[t][i], ref->ov[t][i]);
    }
    if (!all_sentinel(b->out[t] + ref->n_sel * w, (n - ref->n_sel) * w))
      ck_abort_msg("%s: target %u (%s): values written past n_selected %" PRIu64, ctx, t, name, ref->n_sel);
    if (!all_sentinel(b->ov[t] + (b->valid[t] ? ref->n_sel : 0), n - (b->valid[t] ? ref->n_sel : 0)))
      ck_abort_msg("%s: target %u (%s): validity written past n_selected %" PRIu64 "%s", ctx, t, name,
                   ref->n_sel, b->valid[t] ? "" : " (out_valid was NULL)");
  }
  if (count_records) {
    uint64_t want = records_overlapping(s, r->first, n);
    if (r->records_scanned + r->records_skipped != want)
      ck_abort_msg("%s: %" PRIu64 " scanned + %" PRIu64 " skipped records, but %" PRIu64 " overlap the batch",
                   ctx, r->records_scanned, r->records_skipped, want);
    if (r->records_scanned != ref->st.records_scanned || r->records_skipped != ref->st.records_skipped)
      ck_abort_msg(
          "%s: %" PRIu64 " scanned + %" PRIu64 " skipped records; cs_pred_eval says %" PRIu64 " + %" PRIu64,
          ctx, r->records_scanned, r->records_skipped, ref->st.records_scanned, ref->st.records_skipped);
  }
}

/* Runs one batch over b's buffers (reset first) and returns the result. */
static cs_select_batch run_range(const cs_selector *sel, sbufs *b, uint64_t first, const uint8_t *user,
                                 double gate, bool want_rows, uint64_t count_from, int parity) {
  sbufs_reset(b, parity);
  cs_select_batch r = {.first = first,
                       .n = b->n,
                       .user_mask = user,
                       .mask = b->mask,
                       .rows = b->rows,
                       .want_rows = want_rows,
                       .targets = b->nt ? b->targets : NULL,
                       .n_targets = b->nt,
                       .mask_gate = gate,
                       .count_from = count_from};
  /* Outputs start wrong, so a field left unwritten shows. */
  r.n_selected = 12345, r.by_mask = !want_rows, r.rows_filled = !want_rows, r.threads = -1;
  r.records_scanned = r.records_skipped = 777;
  cs_select_range(sel, &r);
  return r;
}

/* ---------------------------------------------------------------- stores */

static const ut_kshape shapes[] = {
    {701, 1500, UT_IRREGULAR, 3, 200},  /* records of 1..3 rows: many one-row records */
    {702, 2600, UT_IRREGULAR, 700, 50}, /* a few records, some large */
    {703, 1000, UT_UNIFORM, 8, 300},    /* a boundary in every mask word */
    {704, 2051, UT_UNIFORM, 64, 100},   /* the last record shorter */
    {705, 777, UT_UNIFORM, 1024, 150},  /* one record */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* Every fixed-width column of ut_fixed_cols (all but the TEXT one). */
static uint32_t fixed_targets(uint32_t *cols) {
  uint32_t nt = 0;
  for (uint32_t c = 0; c < UT_FIXED_COLS; c++)
    if (cs_type_width(ut_fixed_cols[c].type)) cols[nt++] = c;
  return nt;
}

/* A row in the middle of record rec (its first row when it has one row). */
static uint64_t mid_record(const cs_store *s, uint64_t rec, ut_rng *r) {
  uint64_t f = cs_store_record_first_row(s, rec), k = cs_store_record_rows(s, rec);
  return k > 1 ? f + 1 + ut_rng_below(r, k - 1) : f;
}

#define N_BATCHES 12

/* The batches a shape is tested with: edges first, then random ones. */
static void batch_list(const cs_store *s, ut_rng *r, uint64_t *first, uint64_t *n) {
  uint64_t N = cs_store_rows(s), R = cs_store_records(s);
  int k = 0;
  /* Everything, the first row, the last row, nothing. */
  first[k] = 0, n[k++] = N;
  first[k] = 0, n[k++] = 1;
  first[k] = N - 1, n[k++] = 1;
  first[k] = ut_rng_below(r, N), n[k++] = 0;
  /* Mid-record to mid-record (both inside one record when there is one). */
  uint64_t a = mid_record(s, R / 3, r), e = mid_record(s, R - 1 - R / 4, r);
  if (e < a) {
    uint64_t x = a;
    a = e, e = x;
  }
  first[k] = a, n[k++] = e - a + 1;
  /* One whole record, and a one-row record if there is one. */
  uint64_t rec = ut_rng_below(r, R), one = rec;
  first[k] = cs_store_record_first_row(s, rec), n[k++] = cs_store_record_rows(s, rec);
  for (uint64_t i = 0; i < R; i++)
    if (cs_store_record_rows(s, i) == 1) {
      one = i;
      if (ut_rng_below(r, 4) == 0) break;
    }
  first[k] = cs_store_record_first_row(s, one), n[k++] = cs_store_record_rows(s, one);
  /* The two rows around a record boundary. */
  uint64_t f = R > 1 ? cs_store_record_first_row(s, 1 + ut_rng_below(r, R - 1)) : N / 2;
  first[k] = f - 1, n[k++] = 2;
  /* From mid-record to the last row, then random ranges. */
  first[k] = mid_record(s, R / 2, r), n[k] = N - first[k], k++;
  while (k < N_BATCHES) {
    first[k] = ut_rng_below(r, N), n[k] = 1 + ut_rng_below(r, N - first[k]), k++;
  }
}

/* ------------------------------------------------------------ range tests */

static const double gates[] = {0.0, 0.5, 1.0};

START_TEST(test_select_range_matches_reference) {
  const ut_kshape *sh = &shapes[_i];
  ut_kstore k;
  ut_kstore_make_shape(&k, sh);
  const cs_store *s = k.s;
  uint32_t cols[MAX_TARGETS], nt = fixed_targets(cols);
  ut_rng r = ut_rng_seed(sh->seed * 7 + 1);
  uint64_t firsts[N_BATCHES], ns[N_BATCHES];
  batch_list(s, &r, firsts, ns);
  uint64_t routes[2] = {0, 0}; /* batches gathered through positions, by mask */
  for (int bi = 0; bi < N_BATCHES; bi++) {
    uint64_t first = firsts[bi], n = ns[bi];
    sbufs b;
    sbufs_new(&b, s, cols, nt, n);
    for (int pk = 0; pk < P_COUNT; pk++) {
      pset p;
      pset_build(&p, pk, s, &r);
      cs_selector *sel;
      cs_err err = {0};
      ck_assert_msg(cs_selector_new(s, p.preds, p.n, &sel, &err) == CS_OK, "selector: %s", err.msg);
      for (int uk = 0; uk < U_COUNT; uk++) {
        uint8_t *user = umask_new(uk, n, &r);
        sref ref;
        sref_compute(&ref, s, &p, user, first, n, &b);
        for (int gi = 0; gi < 3; gi++)
          for (int want_rows = 0; want_rows < 2; want_rows++) {
            char ctx[320];
            snprintf(ctx, sizeof ctx,
                     "seed %" PRIu64 " batch %d [%" PRIu64 ", +%" PRIu64 ") of %" PRIu64
                     " rows: %s, %s, gate %.1f, want_rows %d",
                     sh->seed, bi, first, n, cs_store_rows(s), pset_names[pk], umask_names[uk], gates[gi],
                     want_rows);
            cs_select_batch res =
                run_range(sel, &b, first, user, gates[gi], want_rows, first, gi + want_rows);
            if (res.threads != 1) ck_abort_msg("%s: %d threads for a small batch", ctx, res.threads);
            check_result(s, &res, &b, &ref, p.n > 0, ctx);
            if (n) routes[res.by_mask]++;
          }
        sref_free(&ref, nt);
        free(user);
      }
      cs_selector_free(sel);
    }
    sbufs_free(&b);
  }
  /* The gates and densities above must have taken both routes. */
  ck_assert_msg(routes[0] > 0 && routes[1] > 0,
                "seed %" PRIu64 ": %" PRIu64 " batches by positions, %" PRIu64 " by mask", sh->seed,
                routes[0], routes[1]);
  ut_kstore_free(&k);
}
END_TEST

START_TEST(test_select_range_consecutive_batches_count_each_record_once) {
  /* A range cut into batches of 1 to ~3 records' worth of rows, so batches
  ** split records and records fall inside batches; count_from is the
  ** range's start, as the cursor passes it. */
  const ut_kshape *sh = &shapes[_i];
  ut_kstore k;
  ut_kstore_make_shape(&k, sh);
  const cs_store *s = k.s;
  uint64_t N = cs_store_rows(s), R = cs_store_records(s);
  uint32_t cols[MAX_TARGETS], nt = fixed_targets(cols);
  ut_rng r = ut_rng_seed(sh->seed * 11 + 3);
  uint64_t avg = N / R + 1;
  static const int kinds[] = {P_GT, P_BETWEEN, P_AND3, P_NOTHING, P_EVERYTHING, P_ISNULL};
  for (int rep = 0; rep < 4; rep++) {
    uint64_t lo = rep == 0 ? 0 : mid_record(s, ut_rng_below(&r, R), &r);
    uint64_t hi = rep < 2 ? N : lo + 1 + ut_rng_below(&r, N - lo);
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
      pset p;
      pset_build(&p, kinds[ki], s, &r);
      cs_selector *sel;
      cs_err err = {0};
      ck_assert_msg(cs_selector_new(s, p.preds, p.n, &sel, &err) == CS_OK, "selector: %s", err.msg);
      uint64_t scanned = 0, skipped = 0;
      int batches = 0;
      for (uint64_t at = lo; at < hi; batches++) {
        uint64_t n = 1 + ut_rng_below(&r, 3 * avg);
        if (n > hi - at) n = hi - at;
        char ctx[320];
        snprintf(ctx, sizeof ctx,
                 "seed %" PRIu64 " range [%" PRIu64 ", %" PRIu64 ") batch %d [%" PRIu64 ", +%" PRIu64 "): %s",
                 sh->seed, lo, hi, batches, at, n, pset_names[kinds[ki]]);
        sbufs b;
        sbufs_new(&b, s, cols, nt, n);
        sref ref;
        sref_compute(&ref, s, &p, NULL, at, n, &b);
        double gate = gates[batches % 3];
        cs_select_batch res = run_range(sel, &b, at, NULL, gate, batches & 1, lo, batches);
        check_result(s, &res, &b, &ref, at == lo, ctx);
        scanned += res.records_scanned, skipped += res.records_skipped;
        sref_free(&ref, nt);
        sbufs_free(&b);
        at += n;
      }
      uint64_t want = records_overlapping(s, lo, hi - lo);
      if (scanned + skipped != want)
        ck_abort_msg("seed %" PRIu64 " range [%" PRIu64 ", %" PRIu64 ") in %d batches, %s: %" PRIu64
                     " scanned + %" PRIu64 " skipped records, but %" PRIu64 " overlap the range",
                     sh->seed, lo, hi, batches, pset_names[kinds[ki]], scanned, skipped, want);
      cs_selector_free(sel);
    }
  }
  ut_kstore_free(&k);
}
END_TEST

START_TEST(test_select_range_no_predicates_counts_each_record_once) {
  /* With no predicates (a user mask only, or nothing) every overlapping
  ** record is still counted once, as cs_pred_eval counts it (skipped: no
  ** predicate reads it). */
  ut_kstore k;
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 600, UT_IRREGULAR, 20, 100, 711);
  const cs_store *s = k.s;
  uint64_t N = cs_store_rows(s);
  uint32_t cols[1] = {C_I32};
  ut_rng r = ut_rng_seed(712);
  cs_selector *sel;
  cs_err err = {0};
  ck_assert_msg(cs_selector_new(s, NULL, 0, &sel, &err) == CS_OK, "selector: %s", err.msg);
  for (int rep = 0; rep < 6; rep++) {
    uint64_t first = rep == 0 ? 0 : ut_rng_below(&r, N), n = rep == 0 ? N : 1 + ut_rng_below(&r, N - first);
    sbufs b;
    sbufs_new(&b, s, cols, 1, n);
    uint8_t *user = umask_new(rep & 1 ? U_HALF : U_NONE, n, &r);
    cs_select_batch res = run_range(sel, &b, first, user, 0.5, false, first, 0);
    uint8_t *ref_mask = malloc(n + 1);
    ck_assert_ptr_nonnull(ref_mask);
    cs_pred_stats st;
    cs_pred_eval(s, NULL, 0, first, n, ref_mask, &st);
    uint64_t want = records_overlapping(s, first, n);
    if (res.records_scanned + res.records_skipped != want)
      ck_abort_msg("seed 711 batch [%" PRIu64 ", +%" PRIu64 "), no predicates, %s: %" PRIu64
                   " scanned + %" PRIu64 " skipped records, but %" PRIu64
                   " overlap the batch (cs_pred_eval: %" PRIu64 " + %" PRIu64 ")",
                   first, n, user ? "user mask" : "no user mask", res.records_scanned, res.records_skipped,
                   want, st.records_scanned, st.records_skipped);
    free(ref_mask);
    free(user);
    sbufs_free(&b);
  }
  cs_selector_free(sel);
  ut_kstore_free(&k);
}
END_TEST

START_TEST(test_select_range_no_targets_and_many_targets) {
  /* No targets: an evaluation and a count.  Thirty targets (every fixed
  ** column twice): many columns in one batch, each width's prefetch
  ** distance shared by several of them. */
  ut_kstore k;
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 1300, UT_IRREGULAR, 40, 150, 721);
  const cs_store *s = k.s;
  uint64_t N = cs_store_rows(s);
  uint32_t cols[MAX_TARGETS], nt = fixed_targets(cols);
  for (uint32_t t = 0; t < nt; t++) cols[nt + t] = cols[nt - 1 - t];
  cols[2 * nt] = C_F64, cols[2 * nt + 1] = C_I8;
  uint32_t many = 2 * nt + 2;
  ut_rng r = ut_rng_seed(722);
  for (int pk = 0; pk < P_COUNT; pk++) {
    pset p;
    pset_build(&p, pk, s, &r);
    cs_selector *sel;
    cs_err err = {0};
    ck_assert_msg(cs_selector_new(s, p.preds, p.n, &sel, &err) == CS_OK, "selector: %s", err.msg);
    for (int rep = 0; rep < 2; rep++) {
      uint64_t first = rep ? 0 : ut_rng_below(&r, N / 2), n = rep ? N : 1 + ut_rng_below(&r, N - first);
      for (uint32_t cnt = 0; cnt <= many; cnt += many) {
        sbufs b;
        sbufs_new(&b, s, cols, cnt, n);
        uint8_t *user = umask_new(rep ? U_HALF : U_NONE, n, &r);
        sref ref;
        sref_compute(&ref, s, &p, user, first, n, &b);
        for (int gi = 0; gi < 3; gi++) {
          char ctx[320];
          snprintf(ctx, sizeof ctx, "seed 721 [%" PRIu64 ", +%" PRIu64 "): %u targets, %s, %s, gate %.1f",
                   first, n, cnt, pset_names[pk], umask_names[rep ? U_HALF : U_NONE], gates[gi]);
          cs_select_batch res = run_range(sel, &b, first, user, gates[gi], gi == 1, first, gi);
          check_result(s, &res, &b, &ref, p.n > 0, ctx);
        }
        sref_free(&ref, cnt);
        free(user);
        sbufs_free(&b);
      }
    }
    cs_selector_free(sel);
  }
  ut_kstore_free(&k);
}
END_TEST

/* ------------------------------------------------------------- row lists */

enum { L_RANDOM, L_SORTED, L_BOUNDARIES, L_ONE_FIRST, L_ONE_LAST, L_EMPTY, L_ALL_DESC, L_ALL_ASC, L_COUNT };
static const char *const list_names[] = {"random with duplicates", "sorted distinct",     "record boundaries",
                                         "the first row",          "the last row",        "empty",
                                         "every row, descending",  "every row, ascending"};

/* A list of kind over s (*out_n rows; caller frees); *ascending says
** whether it may be passed as ascending (sorted, distinct). */
static uint64_t *list_new(const cs_store *s, int kind, ut_rng *r, uint64_t *out_n, bool *ascending) {
  uint64_t N = cs_store_rows(s), R = cs_store_records(s), n = 0;
  uint64_t cap = 2 * N + 2 * R + 8;
  uint64_t *rows = malloc(cap * 8);
  ck_assert_ptr_nonnull(rows);
  *ascending = true;
  switch (kind) {
    case L_RANDOM:
      *ascending = false;
      n = 1 + ut_rng_below(r, 2 * N);
      for (uint64_t i = 0; i < n; i++)
        rows[i] = i > 0 && ut_rng_below(r, 5) == 0 ? rows[ut_rng_below(r, i)] : ut_rng_below(r, N);
      break;
    case L_SORTED:
      for (uint64_t row = 0; row < N; row++)
        if (ut_rng_below(r, 3) == 0) rows[n++] = row;
      break;
    case L_BOUNDARIES: /* the last row of each record and the first of the next, in order */
      for (uint64_t rec = 1; rec < R; rec++) {
        uint64_t f = cs_store_record_first_row(s, rec);
        if (n == 0 || rows[n - 1] != f - 1) rows[n++] = f - 1;
        rows[n++] = f;
      }
      if (n == 0) rows[n++] = N - 1;
      break;
    case L_ONE_FIRST: rows[n++] = 0; break;
    case L_ONE_LAST: rows[n++] = N - 1; break;
    case L_EMPTY: break;
    case L_ALL_DESC:
      *ascending = false;
      for (uint64_t row = N; row-- > 0;) rows[n++] = row;
      break;
    default:
      for (uint64_t row = 0; row < N; row++) rows[n++] = row;
      break;
  }
  *out_n = n;
  return rows;
}

/* Runs cs_select_rows over b's buffers (reset first, and sized for n) and
** compares every target with the naive gather of rows. */
static int check_rows(const cs_store *s, sbufs *b, const uint64_t *rows, uint64_t n, bool ascending,
                      int parity, const char *ctx) {
  sbufs_reset(b, parity);
  uint32_t *bins = ascending ? NULL : malloc(n * sizeof *bins + 1);
  ck_assert(ascending || bins);
  int th = cs_select_rows(s, rows, n, ascending, bins, b->targets, b->nt, 0);
  free(bins);
  if (th < 1) ck_abort_msg("%s: returned %d threads", ctx, th);
  const cs_schema *sc = cs_store_schema(s);
  for (uint32_t t = 0; t < b->nt; t++) {
    size_t w = b->w[t];
    const char *name = sc->cols[b->targets[t].col].name;
    uint8_t *ref = malloc(n * w + 1), *ref_v = malloc(n + 1);
    ck_assert(ref && ref_v);
    ut_ref_gather(s, b->targets[t].col, rows, n, ref, ref_v);
    for (uint64_t i = 0; i < n; i++) {
      if (memcmp(b->out[t] + i * w, ref + i * w, w) != 0) {
        uint64_t g = 0, e = 0;
        memcpy(&g, b->out[t] + i * w, w);
        memcpy(&e, ref + i * w, w);
        ck_abort_msg("%s: target %u (%s): element %" PRIu64 " (row %" PRIu64 "): bytes %016" PRIx64
                     ", expected %016" PRIx64,
                     ctx, t, name, i, rows[i], g, e);
      }
      if (b->valid[t] && b->ov[t][i] != ref_v[i])
        ck_abort_msg("%s: target %u (%s): valid[%" PRIu64 "] (row %" PRIu64 ") = %u, expected %u", ctx, t,
                     name, i, rows[i], b->ov[t][i], ref_v[i]);
    }
    if (!b->valid[t] && !all_sentinel(b->ov[t], n))
      ck_abort_msg("%s: target %u (%s): validity written with out_valid NULL", ctx, t, name);
    free(ref), free(ref_v);
  }
  return th;
}

START_TEST(test_select_rows_matches_reference) {
  const ut_kshape *sh = &shapes[_i];
  ut_kstore k;
  ut_kstore_make_shape(&k, sh);
  const cs_store *s = k.s;
  uint32_t cols[MAX_TARGETS], nt = fixed_targets(cols);
  ut_rng r = ut_rng_seed(sh->seed * 13 + 5);
  for (int kind = 0; kind < L_COUNT; kind++) {
    uint64_t n;
    bool asc;
    uint64_t *rows = list_new(s, kind, &r, &n, &asc);
    sbufs b;
    sbufs_new(&b, s, cols, nt, n);
    /* Any list may be passed as unordered; a sorted distinct one also as
    ** ascending. */
    for (int as = 0; as <= (int)asc; as++)
      for (int parity = 0; parity < 2; parity++) {
        char ctx[256];
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 " list %s (%" PRIu64 " rows) ascending=%d parity %d",
                 sh->seed, list_names[kind], n, as, parity);
        int th = check_rows(s, &b, rows, n, as, parity, ctx);
        if (th != 1) ck_abort_msg("%s: %d threads for a small list", ctx, th);
        if (n == 0)
          for (uint32_t t = 0; t < nt; t++)
            if (!all_sentinel(b.out[t], 1) || !all_sentinel(b.ov[t], 1))
              ck_abort_msg("%s: an empty list wrote to target %u", ctx, t);
      }
    sbufs_free(&b);
    free(rows);
  }
  /* No targets at all: nothing to do, nothing to crash. */
  uint64_t one = 0;
  ck_assert_int_eq(cs_select_rows(s, &one, 1, true, NULL, NULL, 0, 0), 1);
  ut_kstore_free(&k);
}
END_TEST

/* --------------------------------------------------------------- threads */

/* Every fixed width, nullable and not. */
static const cs_column thread_cols[] = {
    {"i8", CS_TYPE_INT8, true},     {"i16", CS_TYPE_INT16, false},  {"i32", CS_TYPE_INT32, true},
    {"i64", CS_TYPE_INT64, true},   {"u8", CS_TYPE_UINT8, false},   {"u16", CS_TYPE_UINT16, true},
    {"u32", CS_TYPE_UINT32, false}, {"f32", CS_TYPE_FLOAT32, true}, {"f64", CS_TYPE_FLOAT64, true},
    {"b", CS_TYPE_BOOL, true},
};
#define N_THREAD_COLS 10u
enum { T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_F32, T_F64, T_B };

static const int thread_counts[] = {1, 2, 4};

/* The whole of every buffer after a run, for comparing thread counts. */
typedef struct snap {
  cs_select_batch res;
  uint8_t *mask;
  uint64_t *rows;
  uint8_t *out[MAX_TARGETS], *ov[MAX_TARGETS];
} snap;

static void snap_take(snap *sn, const sbufs *b, const cs_select_batch *res) {
  sn->res = *res;
  sn->mask = malloc(b->n + 1), sn->rows = malloc(b->n * 8 + 1);
  ck_assert(sn->mask && sn->rows);
  memcpy(sn->mask, b->mask, b->n), memcpy(sn->rows, b->rows, b->n * 8);
  for (uint32_t t = 0; t < b->nt; t++) {
    sn->out[t] = malloc(b->n * b->w[t] + 1), sn->ov[t] = malloc(b->n + 1);
    ck_assert(sn->out[t] && sn->ov[t]);
    memcpy(sn->out[t], b->out[t], b->n * b->w[t]), memcpy(sn->ov[t], b->ov[t], b->n);
  }
}

static void snap_free(snap *sn, uint32_t nt) {
  free(sn->mask), free(sn->rows);
  for (uint32_t t = 0; t < nt; t++) free(sn->out[t]), free(sn->ov[t]);
}

static void snap_assert_same(const snap *one, const sbufs *b, const cs_select_batch *res, const char *ctx) {
  const cs_select_batch *o = &one->res;
  if (res->n_selected != o->n_selected || res->by_mask != o->by_mask || res->rows_filled != o->rows_filled ||
      res->records_scanned != o->records_scanned || res->records_skipped != o->records_skipped)
    ck_abort_msg("%s: n_selected %" PRIu64 " by_mask %d rows_filled %d records %" PRIu64 "+%" PRIu64
                 "; 1 thread: %" PRIu64 " %d %d %" PRIu64 "+%" PRIu64,
                 ctx, res->n_selected, res->by_mask, res->rows_filled, res->records_scanned,
                 res->records_skipped, o->n_selected, o->by_mask, o->rows_filled, o->records_scanned,
                 o->records_skipped);
  if (res->n_selected > 0 && memcmp(one->mask, b->mask, b->n) != 0)
    ck_abort_msg("%s: the mask differs from 1 thread's", ctx);
  if (memcmp(one->rows, b->rows, b->n * 8) != 0) ck_abort_msg("%s: rows differ from 1 thread's", ctx);
  for (uint32_t t = 0; t < b->nt; t++)
    if (memcmp(one->out[t], b->out[t], b->n * b->w[t]) != 0 || memcmp(one->ov[t], b->ov[t], b->n) != 0)
      ck_abort_msg("%s: target %u (%s) differs from 1 thread's", ctx, t, thread_cols[b->targets[t].col].name);
}

START_TEST(test_select_range_threads_identical) {
  /* Records of up to 30000 rows, so thread spans split records.  The whole
  ** range (above 3 * CS_PARALLEL_MIN_ELEMENTS: 4 threads at a cap of 4)
  ** with count_from = first, then the same range as two batches (each
  ** threaded) with count_from = its start, the second starting mid-record. */
  uint64_t N = 3 * CS_PARALLEL_MIN_ELEMENTS + 4099;
  ut_kstore k;
  ut_kstore_make(&k, thread_cols, N_THREAD_COLS, N, UT_IRREGULAR, 30000, 80, 801);
  const cs_store *s = k.s;
  uint32_t cols[N_THREAD_COLS];
  for (uint32_t c = 0; c < N_THREAD_COLS; c++) cols[c] = c;
  ut_rng r = ut_rng_seed(802);
  cs_kernel_config saved;
  cs_kernel_config_get(&saved);
  cs_value v_i32 = pick_value(s, T_I32, &r), v_f64 = pick_value(s, T_F64, &r),
           v_f64b = pick_value(s, T_F64, &r);
  double lo = v_f64.f < v_f64b.f ? v_f64.f : v_f64b.f, hi = v_f64.f < v_f64b.f ? v_f64b.f : v_f64.f;
  /* Predicate sets: none (with a user mask), about half, a range of f64
  ** AND u16 not NULL, every row. */
  cs_pred p_half[] = {{.col = T_I32, .op = CS_CMP_GT, .a = v_i32}};
  cs_pred p_and[] = {{.col = T_F64, .op = CS_CMP_BETWEEN, .a = vflt(lo), .b = vflt(hi)},
                     {.col = T_U16, .op = CS_CMP_NOTNULL}};
  cs_pred p_all[] = {{.col = T_U8, .op = CS_CMP_GE, .a = vint(0)}};
  struct {
    const char *name;
    const cs_pred *p;
    uint32_t n;
  } sets[] = {{"no predicates", NULL, 0},
              {"i32 > v", p_half, 1},
              {"f64 BETWEEN lo AND hi AND u16 NOT NULL", p_and, 2},
              {"u8 >= 0 (every row)", p_all, 1}};
  uint64_t first = 3, n = N - 10, mid = first + n / 2 + 7;
  struct {
    uint64_t first, n;
  } batches[] = {{first, n}, {first, mid - first}, {mid, first + n - mid}};
  for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
    pset p = {.n = sets[si].n};
    if (p.n) memcpy(p.preds, sets[si].p, p.n * sizeof *p.preds);
    cs_selector *sel;
    cs_err err = {0};
    ck_assert_msg(cs_selector_new(s, p.preds, p.n, &sel, &err) == CS_OK, "selector: %s", err.msg);
    uint64_t split_records[3][3] = {{0}}; /* batches [1] and [2], per gate and thread count */
    for (size_t bi = 0; bi < 3; bi++) {
      uint64_t bf = batches[bi].first, bn = batches[bi].n;
      int uk = p.n == 0 || (si + bi) % 2 ? U_HALF : U_NONE;
      uint8_t *user = umask_new(uk, bn, &r);
      sbufs b;
      sbufs_new(&b, s, cols, N_THREAD_COLS, bn);
      sref ref;
      sref_compute(&ref, s, &p, user, bf, bn, &b);
      for (int gi = 0; gi < 3; gi++) {
        bool want_rows = (gi + bi) % 2;
        snap one;
        for (int ti = 0; ti < 3; ti++) {
          char ctx[320];
          snprintf(ctx, sizeof ctx,
                   "seed 801 batch [%" PRIu64 ", +%" PRIu64 ") count_from %" PRIu64
                   ": %s, %s, gate %.1f, want_rows %d, threads %d",
                   bf, bn, first, sets[si].name, umask_names[uk], gates[gi], want_rows, thread_counts[ti]);
          cs_kernel_config_set(&(cs_kernel_config){.threads = thread_counts[ti], .prefetch = -1});
          cs_select_batch res = run_range(sel, &b, bf, user, gates[gi], want_rows, first, gi);
          /* The whole range wants 4 threads, each half 2; helpers that
          ** wake late take no chunk (cs_team.c), so fewer may run. */
          int want_threads = thread_counts[ti] < (bi == 0 ? 4 : 2) ? thread_counts[ti] : (bi == 0 ? 4 : 2);
          if (res.threads < 1 || res.threads > want_threads)
            ck_abort_msg("%s: ran on %d threads, at most %d expected", ctx, res.threads, want_threads);
          if (ti == 0) {
            check_result(s, &res, &b, &ref, bi == 0 && p.n > 0, ctx);
            snap_take(&one, &b, &res);
          } else {
            snap_assert_same(&one, &b, &res, ctx);
          }
          if (bi > 0) split_records[gi][ti] += res.records_scanned + res.records_skipped;
        }
        snap_free(&one, N_THREAD_COLS);
      }
      sref_free(&ref, N_THREAD_COLS);
      sbufs_free(&b);
      free(user);
    }
    /* The two halves count each record of the range once, at every gate
    ** and thread count (no predicates: see the test of that case). */
    uint64_t want = records_overlapping(s, first, n);
    for (int gi = 0; gi < 3 && p.n; gi++)
      for (int ti = 0; ti < 3; ti++)
        if (split_records[gi][ti] != want)
          ck_abort_msg("seed 801 range [%" PRIu64 ", +%" PRIu64 ") in two batches split at %" PRIu64
                       ", %s, gate %.1f, threads %d: %" PRIu64 " records counted, but %" PRIu64 " overlap it",
                       first, n, mid, sets[si].name, gates[gi], thread_counts[ti], split_records[gi][ti],
                       want);
    cs_selector_free(sel);
  }
  cs_kernel_config_set(&saved);
  ut_kstore_free(&k);
}
END_TEST

START_TEST(test_select_rows_threads_identical) {
  /* Lists of ~300k rows over 10 targets: threaded at 2 and 4. */
  uint64_t N = 400000;
  ut_kstore k;
  ut_kstore_make(&k, thread_cols, N_THREAD_COLS, N, UT_IRREGULAR, 9000, 80, 811);
  const cs_store *s = k.s;
  uint32_t cols[N_THREAD_COLS];
  for (uint32_t c = 0; c < N_THREAD_COLS; c++) cols[c] = c;
  ut_rng r = ut_rng_seed(812);
  cs_kernel_config saved;
  cs_kernel_config_get(&saved);
  uint64_t n_rand = 300000;
  uint64_t *rand_rows = malloc(n_rand * 8), *sorted_rows = malloc(N * 8), n_sorted = 0;
  ck_assert(rand_rows && sorted_rows);
  for (uint64_t i = 0; i < n_rand; i++)
    rand_rows[i] = i > 0 && ut_rng_below(&r, 6) == 0 ? rand_rows[ut_rng_below(&r, i)] : ut_rng_below(&r, N);
  for (uint64_t row = 0; row < N; row++)
    if (ut_rng_below(&r, 4) != 0) sorted_rows[n_sorted++] = row;
  struct {
    const char *name;
    const uint64_t *rows;
    uint64_t n;
    bool ascending;
  } lists[] = {{"random with duplicates", rand_rows, n_rand, false},
               {"sorted distinct", sorted_rows, n_sorted, true},
               {"sorted distinct, passed unordered", sorted_rows, n_sorted, false}};
  for (size_t li = 0; li < sizeof lists / sizeof lists[0]; li++) {
    uint64_t n = lists[li].n;
    sbufs b;
    sbufs_new(&b, s, cols, N_THREAD_COLS, n);
    snap one;
    for (int ti = 0; ti < 3; ti++) {
      char ctx[256];
      snprintf(ctx, sizeof ctx, "seed 811 list %s (%" PRIu64 " rows), threads %d", lists[li].name, n,
               thread_counts[ti]);
      cs_kernel_config_set(&(cs_kernel_config){.threads = thread_counts[ti], .prefetch = -1});
      cs_select_batch fake = {0};
      int th;
      if (ti == 0) {
        th = check_rows(s, &b, lists[li].rows, n, lists[li].ascending, (int)li, ctx);
        snap_take(&one, &b, &fake);
      } else {
        sbufs_reset(&b, (int)li);
        uint32_t *bins = lists[li].ascending ? NULL : malloc(n * sizeof *bins);
        ck_assert(lists[li].ascending || bins);
        th = cs_select_rows(s, lists[li].rows, n, lists[li].ascending, bins, b.targets, b.nt, 0);
        free(bins);
        snap_assert_same(&one, &b, &fake, ctx);
      }
      if (th < 1 || th > thread_counts[ti]) ck_abort_msg("%s: ran on %d threads", ctx, th);
    }
    snap_free(&one, N_THREAD_COLS);
    sbufs_free(&b);
  }
  free(rand_rows), free(sorted_rows);
  cs_kernel_config_set(&saved);
  ut_kstore_free(&k);
}
END_TEST

static Suite *select_suite(void) {
  Suite *s = suite_create("select");
  TCase *tc = tcase_create("kernels");
  tcase_add_checked_fixture(tc, NULL, ut_kernel_config_reset);
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_select_range_matches_reference, 0, N_SHAPES);
  tcase_add_loop_test(tc, test_select_range_consecutive_batches_count_each_record_once, 0, N_SHAPES);
  tcase_add_test(tc, test_select_range_no_predicates_counts_each_record_once);
  tcase_add_test(tc, test_select_range_no_targets_and_many_targets);
  tcase_add_loop_test(tc, test_select_rows_matches_reference, 0, N_SHAPES);
  suite_add_tcase(s, tc);
  TCase *tt = tcase_create("threads");
  tcase_add_checked_fixture(tt, NULL, ut_kernel_config_reset);
  tcase_set_timeout(tt, 600);
  tcase_add_test(tt, test_select_range_threads_identical);
  tcase_add_test(tt, test_select_rows_threads_identical);
  suite_add_tcase(s, tt);
  return s;
}

int main(void) { return ut_run_suite(select_suite()); }
