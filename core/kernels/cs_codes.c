/*
** cs_codes.c - dictionary codes of a TEXT/BLOB column, record by record,
** computed the first time a query reads a record and kept on the snapshot,
** so that later queries on the column read a byte per row instead of its
** bytes: GROUP BY on a TEXT key (issue 10, "a TEXT key within 2x of the
** integer key", analytics/cs_agg.c) and TEXT/BLOB predicates (issue 26,
** cs_pred.c: a record's distinct values are tested once, its rows mapped
** through their codes).  They live here, in kernels, because both the
** predicates and the aggregation above them read them: one build, one
** cache.
**
** HOW IT WORKS.  A record whose column has at most CS__CODE_VALUES
** distinct values (NULL one of them) gets one block: the list of its values
** (pointers into the store's data and lengths, in the order first met) and
** a code per position, the index of its value in that list.  Values are
** compared byte for byte (their length and every byte: no collation), as
** the bytes hash compares them.  Codes are per position, so whatever
** selects rows (predicates, a caller's mask, deletions) applies to them
** unchanged.
**
** The build reads each key as cs_agg.c's dictionary does: a key below 16
** bytes is two masked word loads with its length tagged into the second
** (cs__key_keep, cs__key_w1), one multiply to a slot of a table of 512
** entries, and three integer compares; longer keys, or keys too near the
** end of the chunk's bytes for two loads, are copied into 16 bytes, longer
** ones hashed by XXH3 and compared by memcmp past their first 16 bytes.  A
** record that meets a 257th value stops and is marked uncoded (the caller
** reads its bytes); that costs the rows read until then.
**
** MEMORY.  One byte a row of the coded records plus 16 bytes a value and a
** 40-byte header a record: about 1.06 bytes a row for 65,536-row records.
** The caller passes a cap (CS__CODES_BYTES a column, or aggregation's
** knob); a record that would take the column's codes past it is not coded
** (and is asked again by a later query, so nothing but time is lost).  Out
** of memory is the same: the record is read the old way, no error.
**
** VALIDITY.  The codes belong to one snapshot (cs_store), as the
** per-record statistics do: its chunks never change, so the codes never go
** stale.  An append, a deletion or an update commits a new snapshot with
** codes of its own, and a view with pending updates is a snapshot of its
** own too (own chunks, own cache); a dataset's codes are its own.  The
** cache hangs in the snapshot's kernels slot (CS__DERIVED_KERNELS): one
** cs__codes per column, made by compare-and-swap, each record's block
** published by compare-and-swap, so any number of threads may ask.
**
** The choice a newcomer might question: the build is lazy per record,
** inside the query that first reads the record, and not a pass over the
** whole column up front.  A query that reads a few records (zone maps, a
** rowid range) then pays for those alone, the build runs on the query's
** threads, and a record read by no query costs nothing.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"

/* The bytes of the first and second word a key of n bytes keeps, by
** min(n, 16): a table, because computing them branched on n (GCC 12), and
** that branch mispredicts on every row when the keys' lengths vary.
** Defined here, below cs_agg.c, which shares it (cs_kernels_internal.h). */
#define AGG_KEEP0(n) ((n) >= 8 ? ~0ull : (1ull << (8 * ((n)&7))) - 1)
#define AGG_KEEP1(n) ((n) >= 16 ? ~0ull : (n) <= 8 ? 0ull : (1ull << (8 * (((n)-8) & 7))) - 1)
#define AGG_KEEP(n) \
  { AGG_KEEP0(n), AGG_KEEP1(n) }
const uint64_t cs__key_keep[17][2] = {AGG_KEEP(0),  AGG_KEEP(1),  AGG_KEEP(2),  AGG_KEEP(3),  AGG_KEEP(4),
                                      AGG_KEEP(5),  AGG_KEEP(6),  AGG_KEEP(7),  AGG_KEEP(8),  AGG_KEEP(9),
                                      AGG_KEEP(10), AGG_KEEP(11), AGG_KEEP(12), AGG_KEEP(13), AGG_KEEP(14),
                                      AGG_KEEP(15), AGG_KEEP(16)};

/* XXH3 inlined as in analytics/cs_agg.c (static: nothing leaks). */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* The build's table of a record's values: 2 * CS__CODE_VALUES slots. */
#define CODES_BITS 9u
#define CODES_SLOTS (1u << CODES_BITS)
_Static_assert(CODES_SLOTS == 2 * CS__CODE_VALUES, "load <= 1/2");

struct cs__codes {
  uint64_t n_records;
  _Atomic uint64_t bytes;    /* held by the published blocks */
  cs__rcodes *_Atomic rec[]; /* [n_records]: a block, &codes_none (uncoded), or NULL (not built yet) */
};

/* The mark of a record with too many distinct values. */
static cs__rcodes codes_none;

/* One value in the build's table: its two words (cs__key_w1), length, and
** index + 1 (0 = empty slot). */
typedef struct codes_slot {
  uint64_t w0, w1, n;
  uint32_t code1;
  uint32_t pad;
} codes_slot;

static cs__codes *codes_new(uint64_t n_records) {
  cs__codes *c = cs__mem_calloc(1, sizeof *c + (n_records ? n_records : 1) * sizeof c->rec[0]);
  if (!c) return NULL;
  c->n_records = n_records;
  atomic_init(&c->bytes, 0);
  for (uint64_t r = 0; r < n_records; r++) atomic_init(&c->rec[r], NULL);
  return c;
}

static void codes_free(cs__codes *c) {
  if (!c) return;
  for (uint64_t r = 0; r < c->n_records; r++) {
    cs__rcodes *rc = atomic_load(&c->rec[r]);
    if (rc != &codes_none) cs__mem_free(rc);
  }
  cs__mem_free(c);
}

uint64_t cs__codes_bytes(const cs__codes *c) { return c ? atomic_load(&((cs__codes *)c)->bytes) : 0; }

static long codes_blocks(const cs__codes *c) {
  long n = 1;
  for (uint64_t r = 0; r < c->n_records; r++) {
    const cs__rcodes *rc = atomic_load(&((cs__codes *)c)->rec[r]);
    n += rc && rc != &codes_none;
  }
  return n;
}

/* Block bytes of a record of n rows: header, values, codes. */
static uint64_t codes_block_bytes(uint64_t n) {
  return sizeof(cs__rcodes) + CS__CODE_VALUES * (sizeof(const uint8_t *) + sizeof(uint64_t)) + (n ? n : 1);
}

/* The codes of the n rows of chunk ch into rc (its arrays laid out); false
** when the chunk has more than CS__CODE_VALUES distinct values.
** Offsets are clamped into the data, as cs_agg.c reads them: a damaged
** chunk gives wrong codes, never an out-of-bounds read. */
static bool codes_build(const cs_chunk *ch, uint64_t n, cs__rcodes *rc) {
  codes_slot tab[CODES_SLOTS];
  memset(tab, 0, sizeof tab);
  uint8_t *code = (uint8_t *)rc->code;
  const int64_t *off = ch->offsets;
  const uint8_t *data = ch->data ? (const uint8_t *)ch->data : (const uint8_t *)"";
  uint64_t db = ch->data ? ch->data_bytes : 0, last = db >= 16 ? db - 16 : 0;
  uint64_t s0 = (uint64_t)off[0] > db ? db : (uint64_t)off[0];
  uint32_t nv = 0;
  rc->null_code = CS__CODE_NO_NULL;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t e = (uint64_t)off[i + 1] > db ? db : (uint64_t)off[i + 1];
    e = e < s0 ? s0 : e;
    const uint8_t *p = data + s0;
    uint64_t len = e - s0, at = s0;
    s0 = e;
    if (!cs__valid_bit(ch->validity, i)) {
      if (rc->null_code == CS__CODE_NO_NULL) {
        if (nv == CS__CODE_VALUES) return false;
        rc->vp[nv] = NULL, rc->vn[nv] = 0, rc->null_code = nv++;
      }
      code[i] = (uint8_t)rc->null_code;
      continue;
    }
    uint64_t w0, w1;
    if (len < 16 && at <= last && db >= 16) {
      const uint64_t *keep = cs__key_keep[len];
      w0 = cs__load64(p) & keep[0], w1 = cs__load64(p + 8) & keep[1];
    } else {
      uint8_t b[16] = {0};
      memcpy(b, p, len < 16 ? len : 16);
      memcpy(&w0, b, 8), memcpy(&w1, b + 8, 8);
    }
    w1 = cs__key_w1(len, w1);
    uint64_t j = len > 16 ? XXH3_64bits(p, len) >> (64 - CODES_BITS) : cs__key_home(w0, w1, CODES_BITS);
    for (;; j = (j + 1) & (CODES_SLOTS - 1)) {
      const codes_slot *t = &tab[j];
      if (!t->code1) break;
      if (t->w0 == w0 && t->w1 == w1 && t->n == len &&
          (len <= 16 || memcmp(rc->vp[t->code1 - 1] + 16, p + 16, len - 16) == 0))
        break;
    }
    if (!tab[j].code1) {
      if (nv == CS__CODE_VALUES) return false;
      tab[j] = (codes_slot){w0, w1, len, nv + 1, 0};
      rc->vp[nv] = p, rc->vn[nv] = len, nv++;
    }
    code[i] = (uint8_t)(tab[j].code1 - 1);
  }
  rc->n_vals = nv;
  return true;
}

const cs__rcodes *cs__codes_record(cs__codes *c, const cs_store *s, uint32_t col, uint64_t r,
                                   uint64_t max_bytes) {
  cs__rcodes *rc = atomic_load_explicit(&c->rec[r], memory_order_acquire);
  if (rc) return rc == &codes_none ? NULL : rc;
  uint64_t n = s->first_rows[r + 1] - s->first_rows[r], need = codes_block_bytes(n);
  if (atomic_fetch_add(&c->bytes, need) + need > max_bytes) {
    atomic_fetch_sub(&c->bytes, need); /* over the budget: read the old way */
    return NULL;
  }
  uint8_t *block = cs__mem_malloc(need);
  if (!block) {
    atomic_fetch_sub(&c->bytes, need);
    return NULL;
  }
  rc = (cs__rcodes *)(void *)block;
  rc->vp = (const uint8_t **)(void *)(rc + 1);
  rc->vn = (uint64_t *)(void *)(rc->vp + CS__CODE_VALUES);
  rc->code = (const uint8_t *)(rc->vn + CS__CODE_VALUES);
  cs__rcodes *keep = rc;
  if (!codes_build(&s->chunks[r * s->schema.n_cols + col], n, rc)) {
    cs__mem_free(block);
    atomic_fetch_sub(&c->bytes, need);
    keep = &codes_none;
  }
  cs__rcodes *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&c->rec[r], &expected, keep, memory_order_acq_rel,
                                               memory_order_acquire)) {
    if (keep != &codes_none) cs__mem_free(block), atomic_fetch_sub(&c->bytes, need); /* another builder won */
    keep = expected;
  }
  return keep == &codes_none ? NULL : keep;
}

/* ------------------------------------------------- the cache on a store */

/* The store's codes, a column each; hangs in its kernels slot. */
typedef struct codes_cache {
  cs__derived derived;       /* first: the store's slot holds it and frees it with codes_cache_free */
  cs__codes *_Atomic cols[]; /* [derived.n_cols] a TEXT/BLOB column's codes, or NULL */
} codes_cache;

static void codes_cache_free(cs__derived *d) {
  codes_cache *c = (codes_cache *)d;
  for (uint32_t k = 0; k < c->derived.n_cols; k++) codes_free(atomic_load(&c->cols[k]));
  cs__mem_free(c);
}

long cs__codes_cache_blocks(const cs_store *s) {
  codes_cache *c = (codes_cache *)cs__store_derived(s, CS__DERIVED_KERNELS);
  if (!c) return 0;
  long n = 1;
  for (uint32_t k = 0; k < c->derived.n_cols; k++) {
    cs__codes *codes = atomic_load(&c->cols[k]);
    if (codes) n += codes_blocks(codes);
  }
  return n;
}

cs__codes *cs__codes_of(const cs_store *s, uint32_t col) {
  codes_cache *c = (codes_cache *)cs__store_derived_make(
      s, CS__DERIVED_KERNELS, sizeof(codes_cache) + s->schema.n_cols * sizeof(cs__codes *), codes_cache_free);
  if (!c) return NULL;
  cs__codes *codes = atomic_load(&c->cols[col]);
  if (codes) return codes;
  cs__codes *fresh = codes_new(s->n_records);
  if (!fresh) return NULL;
  cs__codes *expected = NULL;
  if (atomic_compare_exchange_strong(&c->cols[col], &expected, fresh)) return fresh;
  codes_free(fresh);
  return expected;
}
