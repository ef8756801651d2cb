/*
** colstore_selection.c - a selection's inputs, read from xFilter's
** arguments: rowid bounds, a rowid IN list, the _rows and _mask BLOBs and
** the column predicates; and the list of positions both cursors walk when
** the rows are given as a list (csx_selection_list).
**
** Two cursors select rows of a store the same way: the colstore table's
** (which then delivers the rows) and the colstore_agg table's (which
** aggregates them).  Both get a plan in idxStr (colstore_plan.c lists the
** slots) and argv; what the arguments mean must not differ between them,
** so it is read here once: the same affinity for operands, the same errors
** for a bad _rows or _mask, the same turning of a range predicate on a
** sorted column into a row range, the same stepping through a _rows BLOB
** and _mask over a list.  What each cursor then does with the selection
** (batches, or aggregation) stays in its own file.
**
** Everything the selection points into (copies of the BLOBs, TEXT
** operands) is held in `held` and freed by csx_selection_clear, so the
** values stay valid for the cursor's whole scan and for xColumn, which may
** hand a _rows BLOB back to SQLite.
*/
#include <stdlib.h>
#include <string.h>

#include "colstore_ext.h"

void csx_selection_clear(csx_selection *s) {
  for (int i = 0; i < s->n_held; i++) sqlite3_free(s->held[i]);
  sqlite3_free(s->held);
  sqlite3_free(s->preds);
  sqlite3_free(s->vals);
  uint8_t other_colls = s->other_colls; /* the connection's, not the filter's */
  memset(s, 0, sizeof *s);
  s->other_colls = other_colls;
}

/* A copy of n bytes at p, held until the selection is cleared. */
static int hold_copy(csx_selection *s, const void *p, uint64_t n, const uint8_t **out) {
  void **h = sqlite3_realloc64(s->held, sizeof *h * (sqlite3_uint64)(s->n_held + 1));
  if (!h) return SQLITE_NOMEM;
  s->held = h;
  uint8_t *c = sqlite3_malloc64(n ? n : 1);
  if (!c) return SQLITE_NOMEM;
  if (n) memcpy(c, p, n);
  s->held[s->n_held++] = c;
  *out = c;
  return SQLITE_OK;
}

/* Whether db may have a collation other than SQLite's built-in BINARY,
** NOCASE and RTRIM (true too when the list cannot be read: the caller then
** narrows less, never wrongly).  Every collation a statement names has
** been registered by the time it runs (sqlite3_collation_needed is called
** at prepare), so the list holds any the IN list may compare under. */
static bool other_collations(sqlite3 *db) {
  sqlite3_stmt *st = NULL;
  if (!db || sqlite3_prepare_v2(db, "PRAGMA collation_list", -1, &st, NULL) != SQLITE_OK) return true;
  bool other = false;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 1);
    if (!name || (sqlite3_stricmp(name, "BINARY") && sqlite3_stricmp(name, "NOCASE") &&
                  sqlite3_stricmp(name, "RTRIM")))
      other = true;
  }
  sqlite3_finalize(st);
  return other || rc != SQLITE_DONE;
}

/* Whether a colstore table's TEXT IN list (an F slot; colstore_plan.c's
** essay) may narrow the rows SQLite checks again folded: when every member
** is TEXT or NULL and the connection compares under no collation but the
** built-in ones.  Else it narrows to the non-NULL rows: a number may bring
** NUMERIC affinity, a BLOB is left alone, and an application's collation
** may equate any two strings. */
static bool may_fold(csx_selection *s, sqlite3 *db, sqlite3_value *arg) {
  sqlite3_value *v = NULL;
  for (int r = sqlite3_vtab_in_first(arg, &v); r == SQLITE_OK && v; r = sqlite3_vtab_in_next(arg, &v))
    if (sqlite3_value_type(v) != SQLITE_TEXT && sqlite3_value_type(v) != SQLITE_NULL) return false;
  /* read once per cursor: a join filters once per outer row */
  if (!s->other_colls) s->other_colls = other_collations(db) ? 2 : 1;
  return s->other_colls == 1;
}

/* The operands of predicate slot i (a P or Q slot) into pr; *never when
** no row can match (x = NULL, an empty IN list). */
static int pred_from_slot(csx_selection *s, sqlite3 *db, const csx_slot *slot, sqlite3_value *arg,
                          cs_type type, cs_pred *pr, uint64_t *m, bool *never) {
  memset(pr, 0, sizeof *pr);
  pr->col = (uint32_t)slot->col;
  if (slot->kind == 'P') {
    int rc = csx_pred_from_value(pr, slot->op, type, arg, &s->held[s->n_held], never);
    if (s->held[s->n_held]) s->n_held++;
    return rc;
  }
  pr->op = CS_CMP_IN;
  pr->set = s->vals + *m;
  if (slot->fold && !(pr->fold = may_fold(s, db, arg))) {
    pr->op = CS_CMP_NOTNULL;
    return SQLITE_OK;
  }
  sqlite3_value *v = NULL;
  for (int r = sqlite3_vtab_in_first(arg, &v); r == SQLITE_OK && v; r = sqlite3_vtab_in_next(arg, &v)) {
    void *held = NULL;
    int rc = csx_value_for_column(type, v, &s->vals[*m], &held);
    if (held) s->held[s->n_held++] = held;
    if (rc != SQLITE_OK) return rc;
    (*m)++;
    pr->n_set++;
  }
  *never = pr->n_set == 0;
  return SQLITE_OK;
}

/* On a sorted column a range predicate is a row range: a binary search
** narrows [lo, hi) and the predicate needs no evaluation at all.  The
** search read values of the records at its two ends, which are checked
** first when check_cols is given. */
static int pred_to_range(csx_selection *s, sqlite3_vtab *tab, const cs_store *store, const cs_pred *pr,
                         const uint8_t *check_cols, bool *done) {
  uint64_t a, b, n = cs_store_rows(store);
  *done = false;
  if (!cs_pred_sorted_range(store, pr, &a, &b)) return SQLITE_OK;
  uint64_t ends[4] = {a ? a - 1 : a, a, b ? b - 1 : b, b};
  for (int e = 0; e < 4 && check_cols; e++) {
    uint64_t rec = ends[e] < n ? cs_store_find_record(store, ends[e]) : UINT64_MAX;
    cs_err err;
    if (rec != UINT64_MAX && cs_store_check_chunks(store, rec, rec + 1, check_cols, &err) != CS_OK)
      return csx_vtab_error(tab, SQLITE_CORRUPT, "%s", err.msg);
  }
  if (a > s->lo) s->lo = a;
  if (b < s->hi) s->hi = b;
  if (s->hi < s->lo) s->hi = s->lo;
  s->sorted_ranges++;
  *done = true;
  return SQLITE_OK;
}

int csx_selection_build(csx_selection *s, sqlite3_vtab *tab, sqlite3 *db, const char *zTable,
                        csx_snapshot *snap, const csx_plan *plan, int argc, sqlite3_value **argv,
                        const uint8_t *check_cols) {
  const cs_store *store = snap->store;
  const cs_column *cols = cs_store_schema(store)->cols;
  uint64_t n = cs_store_rows(store);
  csx_selection_clear(s);
  s->lo = 0, s->hi = n;
  sqlite3_value *mask_blob = NULL;
  int n_pred_slots = 0;
  uint64_t n_members = 0;
  for (int i = 0; i < plan->n_slots && i < argc; i++) {
    const csx_slot *sl = &plan->slots[i];
    switch (sl->kind) {
      case 'E': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_EQ, n, &s->lo, &s->hi); break;
      case 'G': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_GT, n, &s->lo, &s->hi); break;
      case 'g': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_GE, n, &s->lo, &s->hi); break;
      case 'L': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_LT, n, &s->lo, &s->hi); break;
      case 'l': csx_bound_apply(argv[i], SQLITE_INDEX_CONSTRAINT_LE, n, &s->lo, &s->hi); break;
      case 'I': s->in_list = argv[i]; break;
      case 'R':
        if (s->rows_blob)
          return csx_vtab_error(tab, SQLITE_ERROR,
                                "colstore: _rows = ? is given twice for table %s; pass one BLOB of positions "
                                "(combine the lists yourself)",
                                zTable);
        s->rows_blob = argv[i];
        break;
      case 'M':
        if (mask_blob)
          return csx_vtab_error(
              tab, SQLITE_ERROR,
              "colstore: _mask = ? is given twice for table %s; pass one mask (AND the masks yourself)",
              zTable);
        mask_blob = argv[i];
        break;
      case 'P': n_pred_slots++; break;
      case 'Q': {
        n_pred_slots++;
        sqlite3_value *v = NULL;
        int r;
        for (r = sqlite3_vtab_in_first(argv[i], &v); r == SQLITE_OK && v;
             r = sqlite3_vtab_in_next(argv[i], &v)) {
          n_members++;
          /* A TEXT IN list of colstore_agg (the table's, an F slot, SQLite
          ** checks again: colstore_plan.c's essay).  A number among its
          ** members came from a subquery (TEXT affinity makes a literal's
          ** or a parameter's member text), whose column may bring NUMERIC
          ** affinity ('1.0' IN (SELECT 1) is true) or none (then it is
          ** false): which one, SQLite does not tell, and the agg cannot
          ** leave the condition to it. */
          if (cols[sl->col].type == CS_TYPE_TEXT && !sl->fold &&
              (sqlite3_value_type(v) == SQLITE_INTEGER || sqlite3_value_type(v) == SQLITE_FLOAT))
            return csx_vtab_error(
                tab, SQLITE_MISMATCH,
                "colstore: the IN list on TEXT column %s of table %s holds a number, which a "
                "subquery's numeric column brings; colstore cannot tell whether SQLite would "
                "compare it as a number; CAST the subquery's column AS TEXT, or give the values "
                "as literals",
                cols[sl->col].name, zTable);
        }
        /* never an empty answer for a list that did not arrive as one */
        if (r != SQLITE_OK && r != SQLITE_DONE)
          return csx_vtab_error(
              tab, SQLITE_INTERNAL,
              "colstore: the IN list on column %s of table %s did not arrive as a list (SQLite %s); "
              "please report the query",
              cols[sl->col].name, zTable, sqlite3_libversion());
        break;
      }
      case 'T':
      case 'O': break; /* the cursor's */
      default: return SQLITE_INTERNAL;
    }
  }
  if (s->hi < s->lo) s->hi = s->lo;
  int rc;
  if (mask_blob) {
    if (sqlite3_value_type(mask_blob) != SQLITE_BLOB && sqlite3_value_type(mask_blob) != SQLITE_NULL)
      return csx_vtab_error(tab, SQLITE_MISMATCH, "colstore: _mask takes a BLOB with one byte per row");
    uint64_t bytes = (uint64_t)sqlite3_value_bytes(mask_blob);
    uint64_t live = cs_store_live_rows(store);
    if (bytes != n && live == n)
      return csx_vtab_error(
          tab, SQLITE_MISMATCH,
          "colstore: _mask has %llu bytes but table %s has %llu rows; give one byte per row",
          (unsigned long long)bytes, zTable, (unsigned long long)n);
    if (bytes != n)
      return csx_vtab_error(
          tab, SQLITE_MISMATCH,
          "colstore: _mask has %llu bytes but table %s has %llu row positions (%llu rows and %llu deleted); "
          "give one byte per position (colstore_info: positions)",
          (unsigned long long)bytes, zTable, (unsigned long long)n, (unsigned long long)live,
          (unsigned long long)(n - live));
    if ((rc = hold_copy(s, sqlite3_value_blob(mask_blob), bytes, &s->user_mask)) != SQLITE_OK) return rc;
    s->user_mask_bytes = bytes;
  }
  /* kept for xColumn(_rows): SQLite may re-check the term */
  if (s->rows_blob && sqlite3_value_type(s->rows_blob) == SQLITE_BLOB) {
    s->user_rows_bytes = (uint64_t)sqlite3_value_bytes(s->rows_blob);
    if ((rc = hold_copy(s, sqlite3_value_blob(s->rows_blob), s->user_rows_bytes, &s->user_rows)) != SQLITE_OK)
      return rc;
  }
  if (!n_pred_slots) return SQLITE_OK;
  /* Predicates: operands converted with the column's affinity. */
  s->preds = sqlite3_malloc64(sizeof *s->preds * (sqlite3_uint64)n_pred_slots);
  s->vals = sqlite3_malloc64(sizeof *s->vals * (n_members ? n_members : 1));
  void **h = sqlite3_realloc64(s->held, sizeof *h * (sqlite3_uint64)(s->n_held + n_pred_slots + n_members));
  if (h) s->held = h;
  if (!s->preds || !s->vals || !h) return SQLITE_NOMEM;
  uint64_t m = 0;
  for (int i = 0; i < plan->n_slots && i < argc; i++) {
    const csx_slot *sl = &plan->slots[i];
    if (sl->kind != 'P' && sl->kind != 'Q') continue;
    cs_pred *pr = &s->preds[s->n_preds];
    bool never = false, done = false;
    if ((rc = pred_from_slot(s, db, sl, argv[i], cols[sl->col].type, pr, &m, &never)) != SQLITE_OK) return rc;
    if (never) {
      s->never = true;
      s->hi = s->lo; /* e.g. x = NULL: no row can match */
    }
    if (!never && pr->op != CS_CMP_NE && pr->op != CS_CMP_IN && csx_snapshot_sorted(snap, pr->col) &&
        (rc = pred_to_range(s, tab, store, pr, check_cols, &done)) != SQLITE_OK)
      return rc;
    if (!done) s->n_preds++;
  }
  return SQLITE_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The _rows positions in BLOB order (negatives from the end), keeping those
** in [lo, hi) and, when in_rows is given, in it (sorted; must not overlap
** out); out has room for user_rows_bytes / 8. */
static int rows_step(const csx_selection *s, sqlite3_vtab *tab, const char *zTable, uint64_t n_rows,
                     const uint64_t *in_rows, uint64_t n_in, uint64_t *out, uint64_t *n_out) {
  sqlite3_value *v = s->rows_blob;
  *n_out = 0;
  if (sqlite3_value_type(v) != SQLITE_BLOB && sqlite3_value_type(v) != SQLITE_NULL)
    return csx_vtab_error(tab, SQLITE_MISMATCH,
                          "colstore: _rows takes a BLOB of little-endian int64 positions, not %s",
                          sqlite3_value_type(v) == SQLITE_TEXT ? "TEXT" : "a number");
  const uint8_t *p = s->user_rows;
  uint64_t bytes = p ? s->user_rows_bytes : 0;
  if (bytes % 8 != 0)
    return csx_vtab_error(
        tab, SQLITE_MISMATCH,
        "colstore: _rows must be a BLOB of int64 positions (a multiple of 8 bytes), got %llu bytes",
        (unsigned long long)bytes);
  uint64_t k = bytes / 8, m = 0;
  for (uint64_t i = 0; i < k; i++) {
    int64_t x;
    memcpy(&x, p + 8 * i, 8);
    int64_t r = x < 0 ? x + (int64_t)n_rows : x;
    if ((r < 0 || (uint64_t)r >= n_rows) && n_rows == 0)
      return csx_vtab_error(tab, SQLITE_RANGE,
                            "colstore: _rows position %lld (at index %llu) is out of range for table %s, "
                            "which has no row positions; pass an empty BLOB",
                            (long long)x, (unsigned long long)i, zTable);
    if (r < 0 || (uint64_t)r >= n_rows)
      return csx_vtab_error(tab, SQLITE_RANGE,
                            "colstore: _rows position %lld (at index %llu) is out of range for table %s of "
                            "%llu row positions (valid: -%llu to %llu)",
                            (long long)x, (unsigned long long)i, zTable, (unsigned long long)n_rows,
                            (unsigned long long)n_rows, (unsigned long long)(n_rows ? n_rows - 1 : 0));
    uint64_t row = (uint64_t)r;
    if (row < s->lo || row >= s->hi) continue;
    if (in_rows && !bsearch(&row, in_rows, n_in, sizeof *in_rows, cmp_u64)) continue;
    out[m++] = row;
  }
  *n_out = m;
  return SQLITE_OK;
}

int csx_selection_list(const csx_selection *s, sqlite3_vtab *tab, const char *zTable, uint64_t n_rows,
                       uint64_t *pos, uint64_t *n_pos) {
  if (s->rows_blob) {
    /* the rowid IN list's positions, which the _rows ones are kept in,
    ** are overwritten by them: a copy */
    uint64_t *in_rows = NULL, n_in = s->in_list ? *n_pos : 0;
    if (s->in_list) {
      if (!(in_rows = sqlite3_malloc64(n_in ? n_in * sizeof *in_rows : 1))) return SQLITE_NOMEM;
      if (n_in) memcpy(in_rows, pos, n_in * sizeof *in_rows);
    }
    int rc = rows_step(s, tab, zTable, n_rows, in_rows, n_in, pos, n_pos);
    sqlite3_free(in_rows);
    if (rc != SQLITE_OK) return rc;
  }
  if (s->never) *n_pos = 0;
  if (s->user_mask) {
    uint64_t k = 0;
    for (uint64_t i = 0; i < *n_pos; i++)
      if (s->user_mask[pos[i]]) pos[k++] = pos[i];
    *n_pos = k;
  }
  return SQLITE_OK;
}

void csx_selection_input_read_error(sqlite3_context *ctx, const char *zKind, const char *zTable,
                                    const char *zHidden) {
  char *z = sqlite3_mprintf(
      "colstore: %s of %s %s is an input, not a value: use it only as `%s = ?` ANDed with the "
      "rest of the WHERE clause",
      zHidden, zKind, zTable, zHidden);
  sqlite3_result_error(ctx, z ? z : "colstore: _rows and _mask are inputs, not values", -1);
  sqlite3_free(z);
}
