/*
** cs_index.c - the automatic index: a snapshot's live rows of one numeric
** column, their positions sorted by value, so that `col = v` and `col IN
** (...)` find their rows by binary search instead of a scan.
**
** Why it exists.  SQLite runs a join's inner table, and a correlated
** subquery, once per outer row: for a virtual table that is one xFilter
** per outer row with `col = <the outer value>`, and each filter scans the
** whole column (zone maps and predicate kernels, fast, but still every
** record whose range holds the value).  A native table gets an automatic
** index for such a loop; a virtual table gets none, so the query was
** O(outer x rows): seconds where native SQLite takes milliseconds.  This
** is the index the table builds for itself.
**
** What it is.  A permutation: the positions of the column's live, non-NULL
** (and, for a float column, non-NaN) rows, ordered by value and, among
** equal values, by position, at 4 bytes a row (a store past 2^32 - 1
** positions is not indexed).  The values are not copied: a binary search
** reads the value at perm[mid] through the store's directory (cs__locate,
** the chunk, the element), some 25 scattered reads for a lookup in ten
** million rows, microseconds, against a copy that would triple the bytes.
** Values are compared as order-preserving 64-bit keys: an integer with its
** sign bit flipped, a double (FLOAT32 widened exactly) by its bits, the
** negative ones inverted, -0.0 taken as 0.0 (SQLite's -0.0 = 0.0).
**
** Exactly the rows cs_pred selects.  The bounds of a predicate come from
** cs_pred.c's own compiler (cs__pred_numeric_range): an operand of another
** class, INT against FLOAT (`int_col = 2.5` is nothing, `real_col =
** 9007199254740993` too), clamping to the type, exact FLOAT32 bounds, NULL
** and NaN selecting nothing, all decided once, there.  So the index only
** maps a closed range of keys to a range of the permutation.  An IN list is
** the union of its members' equalities.  The rows of one equality are one
** run of the permutation, already ascending (ties are in position order);
** a wider range or a list is sorted before it is returned.  Deleted rows
** are left out at the build (a snapshot's deletions never change), and an
** UPDATE's patched chunks are what the directory names, so the values read
** are the ones cs_pred reads.  TEXT and BLOB are refused (a caller scans
** them): their order is memcmp then length, which a later step may add.
**
** The build.  One pass over the records collects (key, position) pairs,
** then an LSD radix sort, a byte a pass, skipping the bytes every key
** shares (an INT32 column of small values sorts in two or three passes);
** stable, so equal keys stay in position order.  Its scratch is 24 bytes a
** row (keys and positions, twice) in big blocks, freed before it returns;
** what stays is a copy of the positions, 4 bytes a row.  The index hangs in the store's
** CS__DERIVED_INDEX slot and dies with the snapshot: a commit gives a new
** snapshot, which builds its own when its filters ask for one.  A copy
** of the same committed state (cache=auto's swap to memory) adopts the
** snapshot's indexes instead (cs_index_adopt): the permutation is shared,
** with a reference count, and its bytes are counted once.
**
** Memory is bounded twice: the indexes of all snapshots of the process
** together may hold at most cs_index_limit() bytes (a quarter of
** cs_cache_limit(), itself half the physical memory by default), and the
** build's scratch must pass cs_cache_auto_fits (within the cache limit and
** half of the memory available now).  Refused or out of memory, the build
** returns CS_ENOMEM and the column is not tried again on this snapshot;
** the caller scans.  When to build is the caller's rule: cs_index_note
** counts the filters that could have used an index, per column and
** snapshot, and the colstore table builds after a few (its cursor file
** says how many, and docs/performance.md why).
*/
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"

#define SIGN64 (UINT64_C(1) << 63)

/* A permutation and the indexes that hold it: one after its build, more
** when a copy of the same committed state adopts it (cs_index_adopt). */
typedef struct ix_perm {
  _Atomic uint64_t refs;
  uint32_t perm[];
} ix_perm;

struct cs_index {
  const cs_store *s; /* the snapshot it belongs to */
  uint32_t col;
  cs_type type;
  uint64_t n;        /* rows indexed */
  uint64_t distinct; /* values among them */
  uint32_t *perm;    /* [n] positions ordered by (value, position): shared->perm */
  ix_perm *shared;   /* the permutation, shared by the stores that adopted it */
};

/* One column's slot on a store. */
typedef struct ix_slot {
  _Atomic uint64_t notes;  /* filters that could have used an index */
  _Atomic bool refused;    /* a build failed or was refused: not tried again */
  cs_index *_Atomic index; /* built, or NULL */
} ix_slot;

typedef struct index_cache {
  cs__derived derived; /* first: the store's slot holds it and frees it with cache_free */
  ix_slot cols[];      /* [derived.n_cols] */
} index_cache;

static _Atomic uint64_t total_bytes;
static _Atomic uint64_t limit_bytes; /* 0: a quarter of cs_cache_limit() */

uint64_t cs_index_total_bytes(void) { return atomic_load(&total_bytes); }

uint64_t cs_index_limit(void) {
  uint64_t l = atomic_load(&limit_bytes);
  return l ? l : cs_cache_limit() / 4;
}

void cs_index_limit_set(uint64_t bytes) { atomic_store(&limit_bytes, bytes); }

uint64_t cs_index_bytes(const cs_index *ix) { return ix->n * sizeof *ix->perm; }

double cs_index_rows_per_value(const cs_index *ix) {
  return ix->distinct ? (double)ix->n / (double)ix->distinct : 0;
}

/* The permutation's bytes are counted once, whoever holds it, and
** returned with its last holder. */
static void index_free(cs_index *ix) {
  if (!ix) return;
  if (atomic_fetch_sub(&ix->shared->refs, 1) == 1) {
    atomic_fetch_sub(&total_bytes, cs_index_bytes(ix));
    cs__mem_free(ix->shared);
  }
  cs__mem_free(ix);
}

static void cache_free(cs__derived *d) {
  index_cache *c = (index_cache *)d;
  for (uint32_t k = 0; k < c->derived.n_cols; k++) index_free(atomic_load(&c->cols[k].index));
  cs__mem_free(c);
}

/* The store's slots, made the first time (NULL when out of memory). */
static index_cache *cache_of(const cs_store *s) {
  return (index_cache *)cs__store_derived_make(
      s, CS__DERIVED_INDEX, sizeof(index_cache) + s->schema.n_cols * sizeof(ix_slot), cache_free);
}

/* ------------------------------------------------------------------ keys */

static inline uint64_t int_key(int64_t v) { return (uint64_t)v ^ SIGN64; }

static inline uint64_t dbl_key(double d) {
  if (d == 0) d = 0.0; /* -0.0 = 0.0 */
  uint64_t b;
  memcpy(&b, &d, 8);
  return b & SIGN64 ? ~b : b | SIGN64;
}

/* Element i of a chunk's values as a key; *nan when it is a NaN (NULL). */
static inline uint64_t value_key(cs_type t, const void *data, uint64_t i, bool *nan) {
  const uint8_t *p = data;
  switch (t) {
    case CS_TYPE_INT8: return int_key(((const int8_t *)data)[i]);
    case CS_TYPE_INT16: {
      int16_t v;
      memcpy(&v, p + i * 2, 2);
      return int_key(v);
    }
    case CS_TYPE_INT32: {
      int32_t v;
      memcpy(&v, p + i * 4, 4);
      return int_key(v);
    }
    case CS_TYPE_INT64: {
      int64_t v;
      memcpy(&v, p + i * 8, 8);
      return int_key(v);
    }
    case CS_TYPE_UINT16: {
      uint16_t v;
      memcpy(&v, p + i * 2, 2);
      return int_key(v);
    }
    case CS_TYPE_UINT32: {
      uint32_t v;
      memcpy(&v, p + i * 4, 4);
      return int_key(v);
    }
    case CS_TYPE_FLOAT32: {
      float v;
      memcpy(&v, p + i * 4, 4);
      *nan = isnan(v);
      return dbl_key(v);
    }
    case CS_TYPE_FLOAT64: {
      double v;
      memcpy(&v, p + i * 8, 8);
      *nan = isnan(v);
      return dbl_key(v);
    }
    default: return int_key(p[i]); /* UINT8, BOOL */
  }
}

/* The key of the indexed value at position row. */
static uint64_t key_at(const cs_index *ix, uint64_t row) {
  const cs_store *s = ix->s;
  uint64_t r = cs__locate(s, row);
  const cs_chunk *ch = &s->chunks[r * s->schema.n_cols + ix->col];
  bool nan = false;
  return value_key(ix->type, ch->data, row - s->first_rows[r], &nan);
}

/* ----------------------------------------------------------------- build */

/* Sorts keys[0, n) with pos alongside, stably, a byte a pass, over the
** bytes set in vary (the bytes some two keys differ in; k2, p2: scratch of
** n).  *keys and *pos end as the arrays that hold the sorted pairs. */
static void radix_sort(uint64_t **keys, uint32_t **pos, uint64_t **k2, uint32_t **p2, uint64_t n,
                       uint64_t vary) {
  uint64_t hist[256];
  for (int b = 0; b < 8; b++) {
    unsigned sh = 8u * (unsigned)b;
    if (!((vary >> sh) & 255)) continue; /* every key shares this byte */
    const uint64_t *k = *keys;
    const uint32_t *p = *pos;
    uint64_t *ko = *k2;
    uint32_t *po = *p2;
    memset(hist, 0, sizeof hist);
    for (uint64_t i = 0; i < n; i++) hist[(k[i] >> sh) & 255]++;
    uint64_t at = 0;
    for (int v = 0; v < 256; v++) {
      uint64_t c = hist[v];
      hist[v] = at;
      at += c;
    }
    for (uint64_t i = 0; i < n; i++) {
      uint64_t d = hist[(k[i] >> sh) & 255]++;
      ko[d] = k[i];
      po[d] = p[i];
    }
    uint64_t *tk = *keys;
    *keys = *k2, *k2 = tk;
    uint32_t *tp = *pos;
    *pos = *p2, *p2 = tp;
  }
}

bool cs_index_supports(const cs_store *s, const cs_pred *pr) {
  if (pr->col >= s->schema.n_cols || cs_type_is_varlen(s->cols[pr->col].type)) return false;
  return s->n_rows <= UINT32_MAX && (cs__cmp_is_range(pr->op) || pr->op == CS_CMP_IN);
}

uint64_t cs_index_note(const cs_store *s, uint32_t col) {
  index_cache *c = col < s->schema.n_cols ? cache_of(s) : NULL;
  return c ? atomic_fetch_add(&c->cols[col].notes, 1) + 1 : 0;
}

const cs_index *cs_index_find(const cs_store *s, uint32_t col) {
  index_cache *c = (index_cache *)cs__store_derived(s, CS__DERIVED_INDEX);
  return c && col < c->derived.n_cols ? atomic_load(&c->cols[col].index) : NULL;
}

/* The index's (key, position) pairs, sorted, into ix (n_rows: the store's
** positions, an upper bound of the rows).  The scratch is in big blocks
** (huge pages where the host has them): at 24 bytes a row it is mostly page
** faults otherwise (docs/performance.md). */
static cs_rc index_fill(cs_index *ix, uint64_t n_rows, cs_err *err) {
  const cs_store *s = ix->s;
  uint32_t nc = s->schema.n_cols;
  uint64_t cap = n_rows ? n_rows : 1;
  uint64_t *keys = cs_mem_big_alloc(cap * 8), *k2 = cs_mem_big_alloc(cap * 8);
  uint32_t *pos = cs_mem_big_alloc(cap * 4), *p2 = cs_mem_big_alloc(cap * 4);
  if (!keys || !k2 || !pos || !p2) {
    cs_mem_big_free(keys), cs_mem_big_free(k2), cs_mem_big_free(pos), cs_mem_big_free(p2);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory building an index of %llu rows",
                      (unsigned long long)n_rows);
  }
  uint64_t m = 0, vary = 0;
  for (uint64_t r = 0; r < s->n_records; r++) {
    const cs_chunk *ch = &s->chunks[r * nc + ix->col];
    const uint8_t *dels = cs_store_record_deletions(s, r);
    uint64_t first = s->first_rows[r], rows = s->first_rows[r + 1] - first;
    for (uint64_t i = 0; i < rows; i++) {
      if (dels && ((dels[i >> 3] >> (i & 7)) & 1)) continue;
      if (!cs__valid_bit(ch->validity, i)) continue;
      bool nan = false;
      uint64_t k = value_key(ix->type, ch->data, i, &nan);
      if (nan) continue;
      keys[m] = k;
      vary |= k ^ keys[0];
      pos[m++] = (uint32_t)(first + i);
    }
  }
  radix_sort(&keys, &pos, &k2, &p2, m, vary);
  uint64_t distinct = m > 0;
  for (uint64_t i = 1; i < m; i++) distinct += keys[i] != keys[i - 1];
  cs_mem_big_free(keys), cs_mem_big_free(k2);
  ix_perm *shared = cs__mem_malloc(sizeof *shared + (m ? m : 1) * 4);
  if (shared) memcpy(shared->perm, pos, m * 4);
  cs_mem_big_free(pos), cs_mem_big_free(p2);
  if (!shared)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory keeping an index of %llu rows",
                      (unsigned long long)m);
  atomic_init(&shared->refs, 1);
  ix->shared = shared;
  ix->perm = shared->perm;
  ix->n = m;
  ix->distinct = distinct;
  return CS_OK;
}

cs_rc cs_index_build(const cs_store *s, uint32_t col, const cs_index **out, cs_err *err) {
  *out = NULL;
  cs_pred probe = {.col = col, .op = CS_CMP_EQ};
  if (!cs_index_supports(s, &probe))
    return cs_err_set(err, CS_EINVAL, "colstore: column %u cannot be indexed (TEXT, BLOB, or 2^32 rows)",
                      col);
  index_cache *c = cache_of(s);
  if (!c) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for an index");
  ix_slot *slot = &c->cols[col];
  cs_index *have = atomic_load(&slot->index);
  if (have) {
    *out = have;
    return CS_OK;
  }
  if (atomic_load(&slot->refused))
    return cs_err_set(err, CS_ENOMEM, "colstore: the index was refused before");
  uint64_t n_rows = s->n_rows, keep = n_rows * 4;
  char why[160];
  /* the process's indexes within the limit, the scratch within what memory allows */
  uint64_t before = atomic_fetch_add(&total_bytes, keep);
  if (before + keep > cs_index_limit() || !cs_cache_auto_fits(n_rows * 24, why, sizeof why)) {
    atomic_fetch_sub(&total_bytes, keep);
    atomic_store(&slot->refused, true);
    return cs_err_set(err, CS_ENOMEM, "colstore: an index of %llu rows does not fit the memory bounds",
                      (unsigned long long)n_rows);
  }
  cs_index *ix = cs__mem_calloc(1, sizeof *ix);
  cs_rc rc = ix ? CS_OK : cs_err_set(err, CS_ENOMEM, "colstore: out of memory for an index");
  if (ix) {
    ix->s = s, ix->col = col, ix->type = s->cols[col].type;
    rc = index_fill(ix, n_rows, err);
  }
  /* what it holds counted, the reservation returned */
  if (rc == CS_OK) atomic_fetch_add(&total_bytes, cs_index_bytes(ix));
  atomic_fetch_sub(&total_bytes, keep);
  if (rc != CS_OK) {
    cs__mem_free(ix);
    atomic_store(&slot->refused, true);
    return rc;
  }
  cs_index *expected = NULL;
  if (!atomic_compare_exchange_strong(&slot->index, &expected, ix)) {
    index_free(ix); /* another builder won */
    ix = expected;
  }
  *out = ix;
  return CS_OK;
}

/* The copy holds the same committed state (the same positions, values,
** deletions), so old's permutations are copy's: each built index is shared,
** not copied (its bytes counted once), and each column's count of filters
** carries over, so the copy neither waits for a new count nor sorts again.
** A refusal does not carry over: memory may allow the copy what it did not
** allow before.  Nothing is taken when the shapes differ or copy has slots
** of its own already. */
void cs_index_adopt(const cs_store *copy, const cs_store *old) {
  index_cache *from = (index_cache *)cs__store_derived(old, CS__DERIVED_INDEX);
  if (!from || copy == old || cs__store_derived(copy, CS__DERIVED_INDEX) || copy->n_rows != old->n_rows ||
      copy->schema.n_cols != from->derived.n_cols)
    return;
  index_cache *to = cache_of(copy);
  if (!to) return;
  for (uint32_t k = 0; k < from->derived.n_cols; k++) {
    atomic_fetch_add(&to->cols[k].notes, atomic_load(&from->cols[k].notes));
    cs_index *ix = atomic_load(&from->cols[k].index), *mine;
    if (!ix || !(mine = cs__mem_malloc(sizeof *mine))) continue;
    *mine = *ix;
    mine->s = copy;
    atomic_fetch_add(&ix->shared->refs, 1);
    cs_index *expected = NULL;
    if (!atomic_compare_exchange_strong(&to->cols[k].index, &expected, mine)) index_free(mine);
  }
}

/* ---------------------------------------------------------------- lookup */

/* The first index i of the permutation whose key is above k (upper) or at
** least k. */
static uint64_t perm_bound(const cs_index *ix, uint64_t k, bool upper) {
  uint64_t a = 0, b = ix->n;
  while (a < b) {
    uint64_t mid = a + (b - a) / 2, km = key_at(ix, ix->perm[mid]);
    if (upper ? km > k : km >= k)
      b = mid;
    else
      a = mid + 1;
  }
  return a;
}

/* The first index of perm[a, b) (ascending positions) at or past row. */
static uint64_t pos_bound(const cs_index *ix, uint64_t a, uint64_t b, uint64_t row) {
  while (a < b) {
    uint64_t mid = a + (b - a) / 2;
    if (ix->perm[mid] >= row)
      b = mid;
    else
      a = mid + 1;
  }
  return a;
}

/* One range predicate's run of the permutation [*a, *b); *one_value when
** its rows are of one value (then ascending). */
static void pred_run(const cs_index *ix, const cs_pred *pr, uint64_t *a, uint64_t *b, bool *one_value) {
  cs__num_range r;
  *a = *b = 0;
  *one_value = false;
  if (!cs__pred_numeric_range(ix->s, pr, &r) || r.kind == CS__RANGE_NONE) return;
  if (r.kind == CS__RANGE_ALL) {
    *b = ix->n;
    return;
  }
  uint64_t klo = r.dbl ? dbl_key(r.dlo) : int_key(r.ilo), khi = r.dbl ? dbl_key(r.dhi) : int_key(r.ihi);
  if (klo > khi) return;
  *one_value = klo == khi;
  *a = perm_bound(ix, klo, false);
  *b = perm_bound(ix, khi, true);
}

/* Calls fn for every run pr selects (an IN list: a run per member), each
** cut to the run of also (a range op on the same column) when given: both
** are runs of one permutation, so their AND is their intersection. */
typedef void (*run_fn)(void *ctx, uint64_t a, uint64_t b, bool one_value);
static void pred_runs(const cs_index *ix, const cs_pred *pr, const cs_pred *also, run_fn fn, void *ctx) {
  uint64_t a, b, a2 = 0, b2 = ix->n;
  bool one, one2 = false;
  if (also) pred_run(ix, also, &a2, &b2, &one2);
  if (a2 >= b2) return;
  for (uint64_t k = 0; k < (pr->op == CS_CMP_IN ? pr->n_set : 1); k++) {
    cs_pred eq = {.col = pr->col, .op = CS_CMP_EQ, .a = pr->op == CS_CMP_IN ? pr->set[k] : pr->a};
    pred_run(ix, pr->op == CS_CMP_IN ? &eq : pr, &a, &b, &one);
    if (a < a2) a = a2;
    if (b > b2) b = b2;
    if (a < b) fn(ctx, a, b, one || one2);
  }
}

typedef struct run_ctx {
  const cs_index *ix;
  uint64_t lo, hi;
  uint64_t *out; /* NULL: count */
  uint64_t n;
  unsigned runs;
  bool sorted; /* every run of one value so far */
} run_ctx;

static void run_take(void *arg, uint64_t a, uint64_t b, bool one_value) {
  run_ctx *c = arg;
  const cs_index *ix = c->ix;
  c->runs++;
  if (one_value) { /* ascending: [lo, hi) by binary search */
    a = pos_bound(ix, a, b, c->lo);
    b = pos_bound(ix, a, b, c->hi);
    if (c->out)
      for (uint64_t i = a; i < b; i++) c->out[c->n + i - a] = ix->perm[i];
    c->n += b - a;
    return;
  }
  c->sorted = false;
  if (!c->out) {
    c->n += b - a;
    return;
  }
  for (uint64_t i = a; i < b; i++)
    if (ix->perm[i] >= c->lo && ix->perm[i] < c->hi) c->out[c->n++] = ix->perm[i];
}

uint64_t cs_index_count_and(const cs_index *ix, const cs_pred *pr, const cs_pred *also, uint64_t lo,
                            uint64_t hi) {
  run_ctx c = {.ix = ix, .lo = lo, .hi = hi, .sorted = true};
  pred_runs(ix, pr, also, run_take, &c);
  return c.n;
}

uint64_t cs_index_count(const cs_index *ix, const cs_pred *pr, uint64_t lo, uint64_t hi) {
  return cs_index_count_and(ix, pr, NULL, lo, hi);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

uint64_t cs_index_rows(const cs_index *ix, const cs_pred *pr, uint64_t lo, uint64_t hi, uint64_t *out) {
  return cs_index_rows_and(ix, pr, NULL, lo, hi, out);
}

uint64_t cs_index_rows_and(const cs_index *ix, const cs_pred *pr, const cs_pred *also, uint64_t lo,
                           uint64_t hi, uint64_t *out) {
  run_ctx c = {.ix = ix, .lo = lo, .hi = hi, .out = out, .sorted = true};
  pred_runs(ix, pr, also, run_take, &c);
  if (c.runs <= 1 && c.sorted) return c.n;
  /* several runs (an IN list; two members may be one value) or a wider range */
  qsort(out, c.n, sizeof *out, cmp_u64);
  uint64_t k = 0;
  for (uint64_t i = 0; i < c.n; i++)
    if (k == 0 || out[i] != out[k - 1]) out[k++] = out[i];
  return k;
}
