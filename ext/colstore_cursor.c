/*
** colstore_cursor.c - xFilter builds the selection, xNext walks it, xColumn
** reads values straight from the mapping.
**
** A selection is one of three shapes, chosen by the plan:
**
**   RANGE     rows lo..hi-1, ascending or descending, no filtering: the
**             cursor just counts (the full-scan and rowid-range path);
**   FILTERED  the same range in batches of rows whose predicate mask
**             (cs_pred_eval, zone maps first) and _mask are compacted to
**             positions (cs_mask_to_rows); the cursor walks the positions;
**   LIST      an explicit list of positions: a rowid IN list (sorted,
**             distinct) or a _rows BLOB (the user's order, duplicates
**             kept), filtered by any rowid bounds and _mask.
**
** OFFSET skips and LIMIT stops on the rows produced, after every filter.
** Values are read in place: the record of the current row is kept and only
** re-located when the row leaves it (a sorted walk re-locates once per
** record).  Nothing is allocated per row; FILTERED reuses one mask and one
** positions buffer for every batch.
**
** Why positions and not gathered value buffers: SQLite takes one value per
** xColumn call, so a value read in place from the mapping costs the same
** as one read from a buffer the kernels filled, without the fill.
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "colstore_ext.h"

/* Rows per predicate batch: batch_bytes over the bytes a row costs there
** (one mask byte, one 8-byte position), at least this many. */
#define CSX_MIN_BATCH_ROWS 4096u

typedef enum { SEL_RANGE, SEL_FILTERED, SEL_LIST } sel_shape;

#define CSX_LIST_PREFETCH 8
#define CSX_MAX_PREFETCH_COLS 8

typedef struct csx_cursor {
  sqlite3_vtab_cursor base;  /* must be first */
  csx_snapshot *snap;        /* one ref held while open */
  const cs_store *store;     /* snap->store */
  const cs_column *cols;     /* the store's columns */
  uint32_t n_cols;
  sel_shape shape;
  bool desc;                 /* walk from the top */
  bool eof;
  uint64_t row;              /* current row */
  uint64_t lo, hi;           /* RANGE/FILTERED: rows [lo, hi) still to visit */
  /* FILTERED and LIST: positions and where the walk is in them */
  uint64_t *pos;             /* sqlite3_malloc'd; reused across batches */
  uint64_t n_pos, pos_cap, at;
  uint8_t *mask;             /* FILTERED: one batch of predicate mask */
  uint64_t mask_cap;         /* bytes at mask */
  uint64_t batch_rows;       /* FILTERED: rows per batch */
  const uint8_t *user_mask;  /* _mask BLOB bytes, in a held copy, or NULL */
  cs_pred *preds;            /* FILTERED predicates; members in pred_vals */
  uint32_t n_preds;
  cs_value *pred_vals;       /* IN members of all predicates */
  void **held;               /* bytes the operands point into; sqlite3_free */
  int n_held;
  uint64_t skip;             /* OFFSET rows still to skip */
  uint64_t left;             /* LIMIT rows still to return; UINT64_MAX = no limit */
  /* LIST walks prefetch the cells of the row CSX_LIST_PREFETCH ahead, for
  ** the fixed-width columns the query reads (a random _rows read spends
  ** most of its time in cache misses: 1.5x measured with it). */
  uint32_t prefetch_cols[CSX_MAX_PREFETCH_COLS];
  uint32_t n_prefetch_cols;
  /* current record */
  uint64_t rec, rec_first, rec_end;
  const cs_chunk *chunks;
  /* what colstore_last_plan reports */
  csx_scan_stats stats;
} csx_cursor;

/* ---------------------------------------------------------------- cursor */

int csx_open(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  (void)pVtab;
  csx_cursor *pCur = sqlite3_malloc(sizeof *pCur);
  if (!pCur) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof *pCur);
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static void cursor_clear_filter(csx_cursor *pCur) {
  for (int i = 0; i < pCur->n_held; i++) sqlite3_free(pCur->held[i]);
  sqlite3_free(pCur->held);
  sqlite3_free(pCur->preds);
  sqlite3_free(pCur->pred_vals);
  pCur->held = NULL, pCur->n_held = 0;
  pCur->preds = NULL, pCur->n_preds = 0;
  pCur->pred_vals = NULL;
  pCur->user_mask = NULL;
}

int csx_close(sqlite3_vtab_cursor *cur) {
  csx_cursor *pCur = (csx_cursor *)cur;
  csx_table *pTab = (csx_table *)cur->pVtab;
  if (pCur->snap) {
    csx_conn_record_scan(pTab->conn, pTab, &pCur->stats);
    pTab->n_open_cursors--;
    csx_snapshot_release(pCur->snap);
  }
  cursor_clear_filter(pCur);
  sqlite3_free(pCur->pos);
  sqlite3_free(pCur->mask);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

static void seek_record(csx_cursor *pCur, uint64_t row) {
  if (row >= pCur->rec_first && row < pCur->rec_end) return;
  const cs_store *s = pCur->store;
  pCur->rec = cs_store_find_record(s, row);
  pCur->rec_first = cs_store_record_first_row(s, pCur->rec);
  pCur->rec_end = cs_store_record_first_row(s, pCur->rec + 1);
  pCur->chunks = cs_store_chunk(s, pCur->rec, 0);
}

static int pos_reserve(csx_cursor *pCur, uint64_t n) {
  if (n <= pCur->pos_cap) return SQLITE_OK;
  uint64_t *p = sqlite3_realloc64(pCur->pos, n * sizeof *p);
  if (!p) return SQLITE_NOMEM;
  pCur->pos = p;
  pCur->pos_cap = n;
  return SQLITE_OK;
}

/* FILTERED: fills pos with the next batch that has any selected row. */
static int next_batch(csx_cursor *pCur) {
  while (pCur->lo < pCur->hi) {
    uint64_t n = pCur->hi - pCur->lo < pCur->batch_rows ? pCur->hi - pCur->lo : pCur->batch_rows;
    uint64_t first = pCur->desc ? pCur->hi - n : pCur->lo;
    if (pCur->desc) pCur->hi -= n;
    else pCur->lo += n;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (pCur->n_preds) {
      cs_pred_stats st = {0};
      int th = cs_kernel_threads(n);
      if (th > pCur->stats.threads) pCur->stats.threads = th;
      cs_pred_eval(pCur->store, pCur->preds, pCur->n_preds, first, n, pCur->mask, &st);
      pCur->stats.records_scanned += st.records_scanned;
      pCur->stats.records_skipped += st.records_skipped;
      if (pCur->user_mask)
        for (uint64_t i = 0; i < n; i++) pCur->mask[i] = (uint8_t)(pCur->mask[i] && pCur->user_mask[first + i]);
    } else {
      memcpy(pCur->mask, pCur->user_mask + first, n);
    }
    pCur->stats.rows_scanned += n;
    pCur->n_pos = cs_mask_to_rows(pCur->mask, n, first, pCur->pos);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pCur->stats.kernel_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    if (pCur->n_pos) {
      pCur->at = pCur->desc ? pCur->n_pos - 1 : 0;
      return 1;
    }
  }
  return 0;
}

static void list_prefetch(const csx_cursor *pCur) {
  uint64_t j = pCur->desc ? pCur->at - CSX_LIST_PREFETCH : pCur->at + CSX_LIST_PREFETCH;
  if (pCur->desc ? pCur->at < CSX_LIST_PREFETCH : j >= pCur->n_pos) return;
  uint64_t row = pCur->pos[j], rec = cs_store_find_record(pCur->store, row);
  uint64_t k = row - cs_store_record_first_row(pCur->store, rec);
  const cs_chunk *chunks = cs_store_chunk(pCur->store, rec, 0);
  for (uint32_t i = 0; i < pCur->n_prefetch_cols; i++) {
    uint32_t c = pCur->prefetch_cols[i];
    __builtin_prefetch((const char *)chunks[c].data + k * cs_type_width(pCur->cols[c].type));
  }
}

/* Moves to the next row of the selection, ignoring OFFSET/LIMIT. */
static void step(csx_cursor *pCur) {
  switch (pCur->shape) {
    case SEL_RANGE:
      if (pCur->desc) {
        if (pCur->row == pCur->lo) { pCur->eof = true; return; }
        pCur->row--;
      } else if (++pCur->row >= pCur->hi) {
        pCur->eof = true;
        return;
      }
      break;
    case SEL_FILTERED:
    case SEL_LIST: {
      bool more = pCur->desc ? pCur->at-- > 0 : ++pCur->at < pCur->n_pos;
      if (!more) {
        if (pCur->shape == SEL_LIST || !next_batch(pCur)) {
          pCur->eof = true;
          return;
        }
      }
      pCur->row = pCur->pos[pCur->at];
      if (pCur->shape == SEL_LIST && pCur->n_prefetch_cols) list_prefetch(pCur);
      break;
    }
  }
  seek_record(pCur, pCur->row);
}

/* Positions the cursor on the first row of the selection. */
static void start(csx_cursor *pCur) {
  pCur->eof = false;
  pCur->rec_first = pCur->rec_end = 0;
  switch (pCur->shape) {
    case SEL_RANGE:
      if (pCur->lo >= pCur->hi) { pCur->eof = true; return; }
      /* OFFSET on a plain range is a jump, not a walk. */
      if (pCur->skip >= pCur->hi - pCur->lo) { pCur->eof = true; return; }
      if (pCur->desc) pCur->hi -= pCur->skip;
      else pCur->lo += pCur->skip;
      pCur->skip = 0;
      pCur->row = pCur->desc ? pCur->hi - 1 : pCur->lo;
      break;
    case SEL_FILTERED:
      if (!next_batch(pCur)) { pCur->eof = true; return; }
      pCur->row = pCur->pos[pCur->at];
      break;
    case SEL_LIST:
      if (pCur->n_pos == 0) { pCur->eof = true; return; }
      pCur->at = pCur->desc ? pCur->n_pos - 1 : 0;
      pCur->row = pCur->pos[pCur->at];
      break;
  }
  seek_record(pCur, pCur->row);
  while (!pCur->eof && pCur->skip > 0) {
    pCur->skip--;
    step(pCur);
  }
}

/* --------------------------------------------------------------- filter */

static int bytes_copy(const void *p, uint64_t n, void **out) {
  uint8_t *c = sqlite3_malloc64(n ? n : 1);
  if (!c) return SQLITE_NOMEM;
  if (n) memcpy(c, p, n);
  *out = c;
  return SQLITE_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* rowid IN list: every value that names a row in [lo, hi), sorted, distinct. */
static int collect_in_rows(csx_cursor *pCur, sqlite3_value *list, uint64_t lo, uint64_t hi) {
  uint64_t n = cs_store_rows(pCur->store);
  sqlite3_value *v = NULL;
  int rc;
  pCur->n_pos = 0;
  for (rc = sqlite3_vtab_in_first(list, &v); rc == SQLITE_OK && v; rc = sqlite3_vtab_in_next(list, &v)) {
    uint64_t a = 0, b = n;
    csx_bound_apply(v, SQLITE_INDEX_CONSTRAINT_EQ, n, &a, &b);
    if (a < b && a >= lo && a < hi) {
      if (pCur->n_pos == pCur->pos_cap && pos_reserve(pCur, pCur->pos_cap ? 2 * pCur->pos_cap : 64) != SQLITE_OK) return SQLITE_NOMEM;
      pCur->pos[pCur->n_pos++] = a;
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_DONE) return rc;
  /* SQLite hands the list over sorted in practice; check before sorting. */
  bool sorted = true;
  for (uint64_t i = 1; sorted && i < pCur->n_pos; i++) sorted = pCur->pos[i - 1] <= pCur->pos[i];
  if (!sorted) qsort(pCur->pos, pCur->n_pos, sizeof *pCur->pos, cmp_u64);
  uint64_t k = 0;
  for (uint64_t i = 0; i < pCur->n_pos; i++)
    if (k == 0 || pCur->pos[i] != pCur->pos[k - 1]) pCur->pos[k++] = pCur->pos[i];
  pCur->n_pos = k;
  return SQLITE_OK;
}

/* _rows BLOB: int64 positions, negatives from the end; in blob order. */
static int decode_rows_blob(csx_cursor *pCur, sqlite3_value *v, uint64_t lo, uint64_t hi, const uint64_t *in_rows,
                            uint64_t n_in) {
  csx_table *pTab = (csx_table *)pCur->base.pVtab;
  uint64_t n = cs_store_rows(pCur->store);
  if (sqlite3_value_type(v) != SQLITE_BLOB && sqlite3_value_type(v) != SQLITE_NULL)
    return csx_vtab_error(&pTab->base, SQLITE_MISMATCH, "colstore: _rows takes a BLOB of little-endian int64 positions, not %s",
                          sqlite3_value_type(v) == SQLITE_TEXT ? "TEXT" : "a number");
  const uint8_t *p = sqlite3_value_blob(v);
  uint64_t bytes = (uint64_t)sqlite3_value_bytes(v);
  if (bytes % 8 != 0)
    return csx_vtab_error(&pTab->base, SQLITE_MISMATCH, "colstore: _rows must be a BLOB of int64 positions (a multiple of 8 bytes), got %llu bytes",
                          (unsigned long long)bytes);
  uint64_t k = bytes / 8;
  uint64_t *tmp = NULL;
  if (in_rows) {
    tmp = sqlite3_malloc64(n_in ? n_in * sizeof *tmp : 1);
    if (!tmp) return SQLITE_NOMEM;
    if (n_in) memcpy(tmp, in_rows, n_in * sizeof *tmp);
  }
  int rc = pos_reserve(pCur, k ? k : 1);
  uint64_t m = 0;
  for (uint64_t i = 0; rc == SQLITE_OK && i < k; i++) {
    int64_t x;
    memcpy(&x, p + 8 * i, 8);
    int64_t r = x < 0 ? x + (int64_t)n : x;
    if (r < 0 || (uint64_t)r >= n) {
      rc = csx_vtab_error(&pTab->base, SQLITE_RANGE, "colstore: _rows position %lld (at index %llu) is out of range for table %s of %llu rows (valid: -%llu to %llu)",
                          (long long)x, (unsigned long long)i, pTab->zName, (unsigned long long)n, (unsigned long long)n,
                          (unsigned long long)(n ? n - 1 : 0));
      break;
    }
    uint64_t row = (uint64_t)r;
    if (row < lo || row >= hi) continue;
    if (tmp && !bsearch(&row, tmp, n_in, sizeof *tmp, cmp_u64)) continue;
    pCur->pos[m++] = row;
  }
  sqlite3_free(tmp);
  pCur->n_pos = m;
  return rc;
}

int csx_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  csx_cursor *pCur = (csx_cursor *)cur;
  csx_table *pTab = (csx_table *)cur->pVtab;
  (void)idxNum;
  csx_plan plan;
  int rc = csx_plan_decode(idxStr, &plan);
  if (rc != SQLITE_OK) return rc;
  /* A cursor keeps its first snapshot across re-filters (the inner loop of
  ** a join filters once per outer row), so one statement sees one state. */
  if (!pCur->snap) {
    if ((rc = csx_table_refresh(pTab)) != SQLITE_OK) return rc;
    pCur->snap = pTab->snap;
    pCur->snap->n_refs++;
    pTab->n_open_cursors++;
    pCur->store = pCur->snap->store;
    pCur->cols = cs_store_schema(pCur->store)->cols;
    pCur->n_cols = cs_store_schema(pCur->store)->n_cols;
  }
  cursor_clear_filter(pCur);
  uint64_t n = cs_store_rows(pCur->store), lo = 0, hi = n;
  sqlite3_value *in_list = NULL, *rows_blob = NULL, *mask_blob = NULL;
  pCur->skip = 0;
  pCur->left = UINT64_MAX;
  pCur->desc = plan.desc;
  pCur->n_pos = 0;
  pCur->n_prefetch_cols = 0;
  for (uint32_t c = 0; c < pCur->n_cols && pCur->n_prefetch_cols < CSX_MAX_PREFETCH_COLS; c++)
    if (((plan.col_used >> (c < 63 ? c : 63)) & 1) && cs_type_width(pCur->cols[c].type))
      pCur->prefetch_cols[pCur->n_prefetch_cols++] = c;
  int n_pred_slots = 0;
  uint64_t n_members = 0;
  for (int i = 0; i < plan.n_slots && i < argc; i++) {
    const csx_slot *s = &plan.slots[i];
    switch (s->kind) {
      case 'E': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_EQ, n, &lo, &hi); break;
      case 'G': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_GT, n, &lo, &hi); break;
      case 'g': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_GE, n, &lo, &hi); break;
      case 'L': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_LT, n, &lo, &hi); break;
      case 'l': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_LE, n, &lo, &hi); break;
      case 'I': in_list = argv[i]; break;
      case 'R': rows_blob = argv[i]; break;
      case 'M': mask_blob = argv[i]; break;
      case 'T': {
        sqlite3_int64 l = sqlite3_value_int64(argv[i]);
        if (l >= 0) pCur->left = (uint64_t)l;
        break;
      }
      case 'O': {
        sqlite3_int64 o = sqlite3_value_int64(argv[i]);
        if (o > 0) pCur->skip = (uint64_t)o;
        break;
      }
      case 'P': n_pred_slots++; break;
      case 'Q': {
        n_pred_slots++;
        sqlite3_value *v = NULL;
        for (int r = sqlite3_vtab_in_first(argv[i], &v); r == SQLITE_OK && v; r = sqlite3_vtab_in_next(argv[i], &v)) n_members++;
        break;
      }
      default: return SQLITE_INTERNAL;
    }
  }
  if (hi < lo) hi = lo;
  memset(&pCur->stats, 0, sizeof pCur->stats);
  if (mask_blob) {
    if (sqlite3_value_type(mask_blob) != SQLITE_BLOB && sqlite3_value_type(mask_blob) != SQLITE_NULL)
      return csx_vtab_error(&pTab->base, SQLITE_MISMATCH, "colstore: _mask takes a BLOB with one byte per row");
    uint64_t bytes = (uint64_t)sqlite3_value_bytes(mask_blob);
    if (bytes != n)
      return csx_vtab_error(&pTab->base, SQLITE_MISMATCH, "colstore: _mask has %llu bytes but table %s has %llu rows; give one byte per row",
                            (unsigned long long)bytes, pTab->zName, (unsigned long long)n);
    void **h = sqlite3_realloc64(pCur->held, sizeof *h * (sqlite3_uint64)(pCur->n_held + 1));
    if (!h) return SQLITE_NOMEM;
    pCur->held = h;
    if (bytes_copy(sqlite3_value_blob(mask_blob), bytes, &pCur->held[pCur->n_held]) != SQLITE_OK) return SQLITE_NOMEM;
    pCur->user_mask = pCur->held[pCur->n_held++];
  }
  /* Predicates: operands converted with the column's affinity. */
  if (n_pred_slots) {
    pCur->preds = sqlite3_malloc64(sizeof *pCur->preds * (sqlite3_uint64)n_pred_slots);
    pCur->pred_vals = sqlite3_malloc64(sizeof *pCur->pred_vals * (n_members ? n_members : 1));
    void **h = sqlite3_realloc64(pCur->held, sizeof *h * (sqlite3_uint64)(pCur->n_held + n_pred_slots + n_members));
    if (h) pCur->held = h;
    if (!pCur->preds || !pCur->pred_vals || !h) return SQLITE_NOMEM;
    uint64_t m = 0;
    for (int i = 0; i < plan.n_slots && i < argc; i++) {
      const csx_slot *s = &plan.slots[i];
      if (s->kind != 'P' && s->kind != 'Q') continue;
      cs_pred *pr = &pCur->preds[pCur->n_preds];
      memset(pr, 0, sizeof *pr);
      pr->col = (uint32_t)s->col;
      bool never = false;
      if (s->kind == 'P') {
        rc = csx_pred_from_value(pr, s->op, pCur->cols[s->col].type, argv[i], &pCur->held[pCur->n_held], &never);
        if (pCur->held[pCur->n_held]) pCur->n_held++;
      } else {
        pr->op = CS_CMP_IN;
        pr->set = pCur->pred_vals + m;
        sqlite3_value *v = NULL;
        for (int r = sqlite3_vtab_in_first(argv[i], &v); r == SQLITE_OK && v; r = sqlite3_vtab_in_next(argv[i], &v)) {
          void *held = NULL;
          rc = csx_value_for_column(pCur->cols[s->col].type, v, &pCur->pred_vals[m], &held);
          if (held) pCur->held[pCur->n_held++] = held;
          if (rc != SQLITE_OK) break;
          m++;
          pr->n_set++;
        }
        never = pr->n_set == 0;
      }
      if (rc != SQLITE_OK) return rc;
      if (never) hi = lo; /* e.g. x = NULL: no row can match */
      /* On a sorted column a range predicate is a row range: binary search
      ** narrows [lo, hi) and the predicate needs no evaluation at all. */
      uint64_t a, b;
      if (!never && pr->op != CS_CMP_NE && pr->op != CS_CMP_IN && csx_snapshot_sorted(pCur->snap, pr->col) &&
          cs_pred_sorted_range(pCur->store, pr, &a, &b)) {
        if (a > lo) lo = a;
        if (b < hi) hi = b;
        if (hi < lo) hi = lo;
        pCur->stats.sorted_ranges++;
        continue;
      }
      pCur->n_preds++;
    }
  }
  /* The selection's shape. */
  if (in_list || rows_blob) {
    pCur->shape = SEL_LIST;
    if (in_list && (rc = collect_in_rows(pCur, in_list, lo, hi)) != SQLITE_OK) return rc;
    if (rows_blob) {
      uint64_t *in_rows = NULL, n_in = 0;
      if (in_list) {
        n_in = pCur->n_pos;
        in_rows = sqlite3_malloc64(n_in ? n_in * sizeof *in_rows : 1);
        if (!in_rows) return SQLITE_NOMEM;
        if (n_in) memcpy(in_rows, pCur->pos, n_in * sizeof *in_rows);
      }
      rc = decode_rows_blob(pCur, rows_blob, lo, hi, in_rows, n_in);
      sqlite3_free(in_rows);
      if (rc != SQLITE_OK) return rc;
    }
    if (pCur->user_mask) {
      uint64_t k = 0;
      for (uint64_t i = 0; i < pCur->n_pos; i++)
        if (pCur->user_mask[pCur->pos[i]]) pCur->pos[k++] = pCur->pos[i];
      pCur->n_pos = k;
    }
    pCur->stats.rows_scanned = pCur->n_pos;
  } else if (pCur->n_preds || pCur->user_mask) {
    pCur->shape = SEL_FILTERED;
    pCur->lo = lo, pCur->hi = hi;
    uint64_t want = csx_config_batch_bytes() / 9;
    want = want < CSX_MIN_BATCH_ROWS ? CSX_MIN_BATCH_ROWS : want & ~(uint64_t)63;
    pCur->batch_rows = hi - lo < want ? (hi - lo ? hi - lo : 1) : want;
    if (pCur->batch_rows > pCur->mask_cap) {
      uint8_t *m = sqlite3_realloc64(pCur->mask, pCur->batch_rows);
      if (!m) return SQLITE_NOMEM;
      pCur->mask = m;
      pCur->mask_cap = pCur->batch_rows;
    }
    if ((rc = pos_reserve(pCur, pCur->batch_rows)) != SQLITE_OK) return rc;
  } else {
    pCur->shape = SEL_RANGE;
    pCur->lo = lo, pCur->hi = hi;
    pCur->stats.rows_scanned = hi - lo;
  }
  pCur->stats.shape = pCur->shape == SEL_RANGE ? "range" : pCur->shape == SEL_FILTERED ? "filtered" : "list";
  pCur->stats.kernels = pCur->shape == SEL_RANGE    ? (pCur->desc ? "reverse range walk (zero-copy)" : "range walk (zero-copy)")
                        : pCur->shape == SEL_LIST   ? (rows_blob ? "positions (record located per row)" : "sorted cursor")
                        : pCur->n_preds             ? "zone maps, predicate masks, mask compaction"
                                                    : "mask compaction";
  pCur->stats.n_preds = pCur->n_preds;
  pCur->stats.idx = idxStr;
  if (pCur->left == 0) {
    pCur->eof = true;
    return SQLITE_OK;
  }
  start(pCur);
  if (!pCur->eof) pCur->stats.rows_selected++;
  return SQLITE_OK;
}

int csx_next(sqlite3_vtab_cursor *cur) {
  csx_cursor *pCur = (csx_cursor *)cur;
  if (pCur->left != UINT64_MAX && --pCur->left == 0) {
    pCur->eof = true;
    return SQLITE_OK;
  }
  if (pCur->shape == SEL_RANGE && !pCur->desc) {
    /* the full-scan path, kept to a compare and an increment */
    if (++pCur->row >= pCur->hi) {
      pCur->eof = true;
      return SQLITE_OK;
    }
    if (pCur->row >= pCur->rec_end) seek_record(pCur, pCur->row);
  } else {
    step(pCur);
  }
  pCur->stats.rows_selected += !pCur->eof;
  return SQLITE_OK;
}

int csx_eof(sqlite3_vtab_cursor *cur) { return ((const csx_cursor *)cur)->eof; }

int csx_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i) {
  csx_cursor *pCur = (csx_cursor *)cur;
  if ((uint32_t)i >= pCur->n_cols) return SQLITE_OK; /* hidden columns read as NULL */
  const cs_chunk *ch = &pCur->chunks[i];
  uint64_t k = pCur->row - pCur->rec_first;
  if (!cs_chunk_is_valid(ch, k)) return SQLITE_OK;
  const void *d = ch->data;
  switch (pCur->cols[i].type) {
    case CS_TYPE_FLOAT64: sqlite3_result_double(ctx, ((const double *)d)[k]); break;
    case CS_TYPE_INT64: sqlite3_result_int64(ctx, ((const int64_t *)d)[k]); break;
    case CS_TYPE_INT32: sqlite3_result_int64(ctx, ((const int32_t *)d)[k]); break;
    case CS_TYPE_FLOAT32: sqlite3_result_double(ctx, ((const float *)d)[k]); break;
    case CS_TYPE_INT16: sqlite3_result_int64(ctx, ((const int16_t *)d)[k]); break;
    case CS_TYPE_INT8: sqlite3_result_int64(ctx, ((const int8_t *)d)[k]); break;
    case CS_TYPE_UINT32: sqlite3_result_int64(ctx, ((const uint32_t *)d)[k]); break;
    case CS_TYPE_UINT16: sqlite3_result_int64(ctx, ((const uint16_t *)d)[k]); break;
    case CS_TYPE_UINT8: sqlite3_result_int64(ctx, ((const uint8_t *)d)[k]); break;
    case CS_TYPE_BOOL: sqlite3_result_int64(ctx, ((const uint8_t *)d)[k] != 0); break;
    case CS_TYPE_TEXT:
    case CS_TYPE_BLOB: {
      const uint8_t *p;
      uint64_t len;
      cs_err err;
      if (cs_chunk_varlen(ch, k, &p, &len, &err) != CS_OK) {
        sqlite3_result_error(ctx, err.msg, -1);
        sqlite3_result_error_code(ctx, SQLITE_CORRUPT);
        return SQLITE_CORRUPT;
      }
      if (pCur->cols[i].type == CS_TYPE_TEXT) sqlite3_result_text64(ctx, (const char *)p, len, SQLITE_STATIC, SQLITE_UTF8);
      else sqlite3_result_blob64(ctx, p, len, SQLITE_STATIC);
      break;
    }
  }
  return SQLITE_OK;
}

int csx_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid) {
  *pRowid = (sqlite3_int64)((csx_cursor *)cur)->row;
  return SQLITE_OK;
}
