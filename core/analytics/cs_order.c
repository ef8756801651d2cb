/*
** cs_order.c - ordered, grouped and de-duplicated delivery: reorder a
** selection's row positions by key columns in SQLite's order (ORDER BY with
** LIMIT, GROUP BY, DISTINCT), so SQLite needs no temporary B-tree.
**
** HOW IT WORKS
**
** Every fixed-width key value becomes an unsigned integer "field" whose
** order is SQLite's order: integers with the sign bit flipped, floats with
** the IEEE trick (negative: all bits inverted, else the sign bit set) after
** -0.0 is made +0.0, so equal numbers get equal codes.  The codes are then
** compressed: the raw code minus the smallest code of the key's range, plus
** one when the key can be NULL, so field 0 is NULL (NaN too: SQLite reads it
** as NULL) and NULL sorts first.  DESC inverts the field within its range
** (fmax - field), which puts NULL last and keeps ties stable.  The fields of
** consecutive keys are concatenated into one uint64 while their bit widths
** fit ("a segment"), so a multi-column key is usually one integer, and
** GROUP BY b with b in 0..999 is a 10-bit field: one counting pass.  A key
** whose range leaves no field for NULL (INT64_MIN..INT64_MAX with NULLs: 65
** bits) is "split": its NULLs are set apart, in order, and put first or last.
**
** The range comes from the zone maps (per-record min/max, O(records), no
** pass over the rows) of the records the selection spans.  For the range
** they are a hint (the pruned top-k below also skips records by them):
** every field made is checked against the range as it is made,
** and a value outside it (stale or damaged statistics) restarts the call
** with exact bounds from one pass over the selected values.
**
** TEXT and BLOB keys are first tried as a dictionary: one hashing pass gives
** each row the id of its distinct value, the distinct values are sorted
** (memcmp, then the shorter first), and the key becomes the rank, a small
** fixed-width field like any other (several times faster than the byte sort
** below, and than qsort).  Past ORDER_DICT_CAP
** distinct values the key is "wide": a stable sort by its first eight bytes
** (big-endian, range-compressed, radix), then runs of equal prefixes refined
** by a stable merge sort on the full bytes.
**
** Then, by the shape of the key.  Each switch point was set by measuring
** bench/bench_order.c; the numbers are in docs/performance.md, "Ordering
** kernels: the measurements behind cs_order.c's switch points":
**
**   one segment of <= ORDER_COUNT_BITS (20) bits with 2^bits <= 2n: a
**     counting sort of the positions themselves (one histogram pass, one
**     scatter, no final gather); DISTINCT: the first position of each code.
**     It beats the radix sort up to about 20 bits and loses past them (the
**     count array stops fitting in cache).
**   one segment, SORT with limit * ORDER_TOPK_RATIO (32) <= n: top-k in one
**     pass: rows below a threshold go to a buffer of 2k; a full buffer is
**     cut back to the k best by quickselect and the k-th becomes the
**     threshold.  O(n) even when every row beats the threshold (input in
**     ascending key order, DESC: equal to a full sort), unlike a heap's
**     n log k.  It beats the full sort by a wide margin for small k and
**     still at k = n/32; from about n/16 it starts to lose.
**   the same top-k over a whole range (cs_order_range: ORDER BY with a
**     LIMIT on a table or a rowid range) prunes by the zone maps: records
**     are visited best bound first (by their min ASC, their max DESC) and a
**     record whose bound cannot beat the current k-th row is not read;
**     within a record the first key is compared with the threshold in the
**     column's own type (a vectorised pass into a byte mask) and only the
**     rows that pass are encoded and offered, so the range's positions are
**     never written (80 MB at 10M rows).  Out of position order, the
**     threshold is the k-th's (code, position): a later row that ties the
**     k-th code still enters when its position is smaller, and a record
**     whose bound equals the threshold is read unless all its positions
**     are larger.  NULL is field 0 ASC, so a record with a null count has
**     bound 0 ASC; DESC a NULL sorts last and changes no bound.  A float
**     record not flagged SORTED may hold a NaN (read as NULL, in no zone
**     map and no count): ASC, when its min would rule it out, it is
**     scanned for one (a vectorised pass, cheaper than reading it as a
**     candidate) and the answer is kept on the snapshot, so later queries
**     skip it unread ("NaN knowledge per record" below).  Under a WHERE
**     (cs_order_select) the same walk takes only the selected rows: a
**     record the predicates' zone maps rule out is skipped, the
**     predicates are evaluated only in the blocks of a record where some
**     row passes the threshold, and only rows that pass them are offered,
**     so the threshold is always a selected row's (a record's zone map
**     bounds its selected rows too, so skipping by it stays exact).
**     Keys that do not make one code segment but
**     whose first key is fixed-width (ORDER BY b, a: 10 + 64 bits) take
**     the pruned top-k of the first key alone for its k-th value, then
**     collect the rows whose first key is at most that value (the only
**     ones that can be among the k best) for the general sort.  Here the
**     zone maps are trusted to skip records, as the predicate kernels
**     trust them; the rows that are read are still checked against the
**     range.  A sorted column reads about one record.  DISTINCT over a
**     range with a countable key keeps only the first row of each code.
**   one segment, GROUP or DISTINCT, wider: a hash table from code to group
**     (first appearance), then a counting sort by group id.  It beats the
**     radix sort for hundreds to tens of thousands of groups and is several
**     times slower for all-distinct keys, so it gives up past
**     ORDER_HASH_CAP groups, or when after n/64 rows most rows began a
**     group (then the radix sort; the attempt costs little).
**   otherwise: a radix sort of (field, position).  When the field and the
**     position's bit width fit in 64 bits they are packed into one word (the
**     position in the low bits makes the sort stable for free), else key
**     and position are two arrays.  From ORDER_MSD_MIN elements the first
**     pass is MSD on the top digit, and each bucket is finished by LSD in
**     cache once it holds at most ORDER_CACHE_N elements (recursing while it
**     is larger), faster than LSD alone.
**     Digits of at most ORDER_DIGIT_BITS (11) bits, balanced over the
**     field's width (the fastest of the widths tried).  Every digit's
**     histogram comes from one read pass, and a digit in which all keys
**     agree is skipped.  Several segments (wide keys, keys over 64 bits
**     together) are sorted one at a time from the last to the first, each
**     pass stable, carrying a permutation.
**
** Stability is by input index everywhere: ties, DESC ties included, come out
** in input order; DISTINCT keeps the first row of each key in input order;
** GROUP keeps each group's rows in input order.
**
** Scratch comes from ord_alloc: blocks of 2 MiB and more start on a 2 MiB
** boundary and are advised MADV_HUGEPAGE: in 4 KiB pages a large sort spent
** more time faulting fresh memory than sorting.
**
** MEMORY (peak scratch beyond the caller's rows, per selected row; huge
** pages round each block up by at most 2 MiB): counting sort 12 B (4 B code
** + 8 B output) + a count array of at most 8 B/row; packed radix 16 B (two
** 8-byte arrays); two-array radix 24 B (8 + 8 B keys, 4 + 4 B positions);
** hash GROUP 12 B + O(groups); hash DISTINCT O(groups); top-k O(k); several
** segments 28 B (the 4-byte permutation beside a pass); a wide TEXT/BLOB key
** 40 B (16 B references + 24 B); a dictionary 4 B per TEXT key.  So a
** fixed-width key of one segment needs at most 24 B/row.  At most UINT32_MAX
** rows per call (4-byte positions).
**
** THREADING: the pruned top-k over a range (from ORDER_TEAM_MIN rows)
** runs on the thread team: the records in visit order are the chunks, each
** member keeps its own candidate buffer and (code, position) threshold,
** and the lowest threshold code is shared through an atomic (a row above it
** cannot be among the k best), so a member skips what another has already
** ruled out; the buffers are merged by (code, position), so the answer does
** not depend on the interleaving.  So does the counting sort of GROUP and
** SORT over positions (a histogram per chunk, prefix-summed code by code
** and chunk by chunk, so each scatter is
** stable).  The rest is single-threaded; every pass is a loop over positions whose state is a
** histogram, a hash table or a candidate buffer.  Chunks of positions can
** each build their own (histograms per chunk, prefix-summed across chunks in
** chunk order, keep every scatter stable; hash tables and candidate buffers
** merge; MSD buckets are independent tasks), so the passes split over the
** chunk-claiming scheduler without changing a byte of the output.
**
** The decision a newcomer would question: why positions are the payload and
** not the values.  The kernel returns positions (the cursor gathers every
** column in that order with the list kernels), so carrying the 4-byte input
** index beside the key, or packing it under the key, is the least data that
** gives both the order and the stability.  The exception is
** cs_order_count: for a counting-sortable key it stops before the scatter
** and hands over each row's code and each code's first output index, so
** that cs_scatter.c can move the values themselves to their places in one
** sequential pass (rather than gathering the columns through the
** positions at random); the order is the same by construction.
*/
#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"
#include "cs_order_internal.h"

/* Radix digits: at most ORDER_DIGIT_BITS bits (2^11 buckets of 4-byte
** counts stay in L1 beside the scatter's write streams). */
#define ORDER_DIGIT_BITS 11
#define ORDER_MIN_DIGIT_BITS 8
#define ORDER_MAX_DIGIT_BITS 13 /* the histograms' size: the widest a test may ask for */
#define ORDER_MAX_DIGITS 8      /* ceil(64 / ORDER_MIN_DIGIT_BITS) */
/* The switch points (cs_order_internal.h); the numbers behind each are in
** the essay above. */
#define ORDER_COUNT_BITS 20    /* counting sort up to this many bits (and 2^bits <= rows) */
#define ORDER_HASH_CAP 65536u  /* GROUP/DISTINCT hash up to this many groups */
#define ORDER_HASH_PROBE 4096u /* ... and gives up early on nearly distinct keys past this many */
#define ORDER_TOPK_RATIO 32    /* top-k when limit * ratio <= rows */
#define ORDER_DICT_CAP 65536u  /* TEXT/BLOB dictionary up to this many values */
#define ORDER_MSD_MIN 65536u   /* radix sorts of this many elements start MSD */
#define ORDER_CACHE_N 16384u   /* MSD buckets up to this size finish by LSD in cache */
#define ORDER_MSD_LEVELS 8     /* ceil(64 / ORDER_MIN_DIGIT_BITS): MSD recursion depth bound */
/* Positions encoded per step by the streaming paths. */
#define ORDER_CHUNK 1024u
/* A top-k over an implicit range of at least this many rows runs on the
** thread team. */
#define ORDER_TEAM_MIN (1u << 20)
/* The team's counting sort keeps a histogram per chunk: codes of at most
** this many bits, at most this many chunks (a 16-bit code: 16 MB). */
#define ORDER_COUNT_TEAM_BITS 16
#define ORDER_COUNT_TEAM_CHUNKS 64
/* Below this many elements the sorts use insertion sort. */
#define ORDER_SMALL 24u

#define ORDER_SIGN 0x8000000000000000ull
#define ORDER_NONE UINT32_MAX

/* Internal outcomes of a path. */
enum { ORD_OK = 0, ORD_NOMEM, ORD_REDO, ORD_ABANDON };
/* The paths, and their names for cs__order_last_path (+dict, +wide, +redo). */
enum { PATH_TOPK, PATH_COUNTING, PATH_HASH, PATH_RADIX, PATH_SEGMENTS, PATH_COUNT };
static const char *const path_names[PATH_COUNT][8] = {
#define PATH_NAMES(p) \
  { p, p "+dict", p "+wide", p "+dict+wide", p "+redo", p "+dict+redo", p "+wide+redo", p "+dict+wide+redo" }
    PATH_NAMES("topk"), PATH_NAMES("counting"), PATH_NAMES("hash"), PATH_NAMES("radix"),
    PATH_NAMES("segments")
#undef PATH_NAMES
};

static unsigned bit_width(uint64_t x) { return x ? 64u - (unsigned)__builtin_clzll(x) : 0u; }

static cs__order_tuning tune = {
    ORDER_TOPK_RATIO, ORDER_COUNT_BITS, ORDER_HASH_CAP,   ORDER_DICT_CAP, ORDER_DIGIT_BITS, 1,
    ORDER_MSD_MIN,    ORDER_CACHE_N,    ORDER_HASH_PROBE, ORDER_TEAM_MIN};

void cs__order_tuning_default(cs__order_tuning *out) {
  cs__order_tuning d = {
      ORDER_TOPK_RATIO, ORDER_COUNT_BITS, ORDER_HASH_CAP,   ORDER_DICT_CAP, ORDER_DIGIT_BITS, 1,
      ORDER_MSD_MIN,    ORDER_CACHE_N,    ORDER_HASH_PROBE, ORDER_TEAM_MIN};
  *out = d;
}

void cs__order_tuning_set(const cs__order_tuning *t) {
  if (!t) {
    cs__order_tuning_default(&tune);
    return;
  }
  tune = *t;
  if (tune.count_bits > 24) tune.count_bits = 24;
  if (tune.count_bits < -1) tune.count_bits = -1;
  if (tune.digit_bits < ORDER_MIN_DIGIT_BITS) tune.digit_bits = ORDER_MIN_DIGIT_BITS;
  if (tune.digit_bits > ORDER_MAX_DIGIT_BITS) tune.digit_bits = ORDER_MAX_DIGIT_BITS;
  if (tune.cache_n < ORDER_SMALL) tune.cache_n = ORDER_SMALL;
}

void cs__order_tuning_get(cs__order_tuning *out) { *out = tune; }

static _Thread_local const char *last_path = "none"; /* per thread: calls may run concurrently */
const char *cs__order_last_path(void) { return last_path; }

/* The allocation point of the kernel's scratch: cs__mem_big_alloc (a
** block of 2 MiB or more starts on a 2 MiB boundary and is advised
** MADV_HUGEPAGE: the first touch of fresh memory is otherwise one fault per
** 4 KiB page, and on a paravirtualised host that cost more than the sort:
** first touch of 80 MB 335 ms in 4 KiB pages, 16 ms advised; the alignment
** matters at 1M rows, where 8 MB blocks left a quarter of their pages
** unadvised).  tune.huge_pages = 0 turns the advice off, for measuring it.
** Release with ord_free. */
static void *ord_alloc(uint64_t count, size_t size) {
  if (count > UINT64_MAX / size) return NULL;
  return cs__mem_big_alloc(count * size, tune.huge_pages != 0);
}

static void ord_free(void *p) { cs_mem_big_free(p); }

/* ---------------------------------------------------------- reading keys */

/* A record cursor over one column: the record holding rows [lo, hi). */
typedef struct ocur {
  uint64_t r, lo, hi;
  const cs_chunk *ch; /* NULL until placed */
} ocur;

/* Places c on the record of row: the next record on an ascending walk,
** else a search (or a division on uniform stores). */
static void ocur_move(const cs_store *s, uint32_t col, ocur *c, uint64_t row) {
  uint64_t r;
  if (c->ch && row >= c->hi && c->r + 2 <= s->n_records && row < s->first_rows[c->r + 2])
    r = c->r + 1;
  else
    r = cs__locate(s, row);
  c->r = r;
  c->lo = s->first_rows[r];
  c->hi = s->first_rows[r + 1];
  c->ch = &s->chunks[r * s->schema.n_cols + col];
}

/* The chunk holding row and row's index in it. */
CS__INLINE const cs_chunk *ocur_at(const cs_store *s, uint32_t col, ocur *c, uint64_t row, uint64_t *local) {
  if (__builtin_expect(row - c->lo >= c->hi - c->lo, 0)) ocur_move(s, col, c, row);
  *local = row - c->lo;
  return c->ch;
}

/* Order-preserving codes: integers with the sign flipped, doubles by the
** IEEE trick with -0.0 made +0.0 first (0 == -0.0 in SQLite). */
CS__INLINE uint64_t code_i64(int64_t v) { return (uint64_t)v ^ ORDER_SIGN; }
CS__INLINE uint64_t code_f64(double x) {
  if (x == 0) x = 0.0;
  uint64_t b;
  memcpy(&b, &x, 8);
  return (b & ORDER_SIGN) ? ~b : b | ORDER_SIGN;
}

/* The code of element local of a column of type T (a constant after
** inlining); *nan is set for a NaN, which SQLite reads as NULL. */
CS__INLINE uint64_t code_at(cs_type T, const uint8_t *p, uint64_t local, bool *nan) {
  switch (T) {
    case CS_TYPE_INT8: {
      int8_t v;
      memcpy(&v, p + local, 1);
      return code_i64(v);
    }
    case CS_TYPE_INT16: {
      int16_t v;
      memcpy(&v, p + local * 2, 2);
      return code_i64(v);
    }
    case CS_TYPE_INT32: {
      int32_t v;
      memcpy(&v, p + local * 4, 4);
      return code_i64(v);
    }
    case CS_TYPE_INT64: {
      int64_t v;
      memcpy(&v, p + local * 8, 8);
      return code_i64(v);
    }
    case CS_TYPE_UINT16: {
      uint16_t v;
      memcpy(&v, p + local * 2, 2);
      return code_i64(v);
    }
    case CS_TYPE_UINT32: {
      uint32_t v;
      memcpy(&v, p + local * 4, 4);
      return code_i64(v);
    }
    case CS_TYPE_FLOAT32: {
      float v;
      memcpy(&v, p + local * 4, 4);
      *nan = v != v;
      return code_f64((double)v); /* widening is exact and keeps the order */
    }
    case CS_TYPE_FLOAT64: {
      double v;
      memcpy(&v, p + local * 8, 8);
      *nan = v != v;
      return code_f64(v);
    }
    default: return code_i64(p[local]); /* UINT8, BOOL */
  }
}

#define ORDER_TYPE_SWITCH(t, CALL)                      \
  switch (t) {                                          \
    case CS_TYPE_INT8: CALL(CS_TYPE_INT8); break;       \
    case CS_TYPE_INT16: CALL(CS_TYPE_INT16); break;     \
    case CS_TYPE_INT32: CALL(CS_TYPE_INT32); break;     \
    case CS_TYPE_INT64: CALL(CS_TYPE_INT64); break;     \
    case CS_TYPE_UINT16: CALL(CS_TYPE_UINT16); break;   \
    case CS_TYPE_UINT32: CALL(CS_TYPE_UINT32); break;   \
    case CS_TYPE_FLOAT32: CALL(CS_TYPE_FLOAT32); break; \
    case CS_TYPE_FLOAT64: CALL(CS_TYPE_FLOAT64); break; \
    default: CALL(CS_TYPE_UINT8); break;                \
  }

/* TEXT/BLOB value local of ch; offsets are clamped into the data, so a
** damaged chunk gives a wrong order, never an out-of-bounds read. */
CS__INLINE const uint8_t *bytes_at(const cs_chunk *ch, uint64_t local, uint64_t *len) {
  uint64_t db = ch->data_bytes;
  uint64_t a = (uint64_t)ch->offsets[local], b = (uint64_t)ch->offsets[local + 1];
  if (a > db) a = db;
  if (b > db) b = db;
  if (b < a) b = a;
  *len = b - a;
  return (const uint8_t *)ch->data + a;
}

/* ------------------------------------------------------------------ keys */

enum { KEY_FIXED, KEY_DICT, KEY_WIDE };

/* One key column as the kernel encodes it. */
typedef struct okey {
  uint32_t col;
  cs_type type;
  bool desc;
  int kind;           /* KEY_*; TEXT/BLOB start as KEY_DICT */
  bool nullable;      /* NULL possible: a nullable column or a float (NaN) */
  bool exact;         /* the range comes from the selected values, not zone maps */
  uint64_t min, span; /* codes of non-NULL values lie in [min, min + span] */
  uint64_t off;       /* 1 when field 0 is NULL's, else 0 */
  uint64_t fmax;      /* largest field */
  unsigned bits;      /* bit width of fmax (0: every row has the same field) */
  bool split;         /* the range leaves no field for NULL (65 bits): NULLs go apart */
  uint32_t *ids;      /* KEY_DICT: value id of input position j, ORDER_NONE = NULL; owned */
  uint32_t *rank;     /* KEY_DICT: sort rank of each id; owned */
  ocur cur;           /* reading position in the column */
} okey;

/* Sets the field layout of k for non-NULL codes in [lo, hi] (any: at least
** one non-NULL value). */
static void key_set_range(okey *k, bool any, uint64_t lo, uint64_t hi) {
  k->min = any ? lo : 0;
  k->span = any ? hi - lo : 0;
  k->off = k->nullable ? 1 : 0;
  k->split = k->nullable && k->span == UINT64_MAX;
  if (k->split) k->off = 0;
  k->fmax = k->span + k->off;
  k->bits = bit_width(k->fmax);
}

static uint64_t code_of_stat(cs_type t, cs_stat v) {
  return cs_type_is_float(t) ? code_f64(v.f) : code_i64(v.i);
}

/* The zone-map range of k over records [rec0, rec1]. */
static void key_bounds_zone(const cs_store *s, okey *k, uint64_t rec0, uint64_t rec1) {
  bool any = false;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint64_t r = rec0; r <= rec1; r++) {
    const cs_chunk *ch = &s->chunks[r * s->schema.n_cols + k->col];
    if (!(ch->flags & CS_CHUNK_HAS_MINMAX)) continue;
    uint64_t a = code_of_stat(k->type, ch->min), b = code_of_stat(k->type, ch->max);
    if (a < lo) lo = a;
    if (b > hi) hi = b;
    any = true;
  }
  if (any && lo > hi) any = false; /* nonsense statistics: the values will say */
  key_set_range(k, any, lo, hi);
  k->exact = false;
}

CS__INLINE void bounds_body(const cs_store *s, okey *k, cs_type T, const uint64_t *rows, uint64_t n,
                            bool *any, uint64_t *lo, uint64_t *hi) {
  ocur c = {0, 0, 0, NULL};
  uint64_t l = UINT64_MAX, h = 0;
  bool a = false;
  for (uint64_t j = 0; j < n; j++) {
    uint64_t local;
    const cs_chunk *ch = ocur_at(s, k->col, &c, rows[j], &local);
    bool nan = false;
    uint64_t x = code_at(T, ch->data, local, &nan);
    if (nan || !cs__valid_bit(ch->validity, local)) continue;
    l = x < l ? x : l;
    h = x > h ? x : h;
    a = true;
  }
  *any = a, *lo = l, *hi = h;
}

/* The exact range of fixed-width key k over the selected rows. */
static void key_bounds_exact(const cs_store *s, okey *k, const uint64_t *rows, uint64_t n) {
  bool any = false;
  uint64_t lo = 0, hi = 0;
#define BOUNDS_CALL(T) bounds_body(s, k, T, rows, n, &any, &lo, &hi)
  ORDER_TYPE_SWITCH(k->type, BOUNDS_CALL);
#undef BOUNDS_CALL
  key_set_range(k, any, lo, hi);
  k->exact = true;
}

/* ---------------------------------------------------------------- encode */

CS__INLINE uint64_t shl(uint64_t x, unsigned b) { return b >= 64 ? 0 : x << b; }

/* Fields of fixed key k at positions j in [j0, j1) (row rows[perm[j]], or
** rows[j] without perm) into out[j - j0]: the field alone (first) or
** appended below what out holds.  nulls (split keys): 1 where NULL.
** Returns false when a value lies outside k's range. */
CS__INLINE bool encode_body(const cs_store *s, okey *k, cs_type T, const uint64_t *rows, const uint32_t *perm,
                            uint64_t j0, uint64_t j1, uint64_t *restrict out, bool first,
                            uint8_t *restrict nulls) {
  ocur c = k->cur;
  const uint64_t min = k->min, span = k->span, off = k->off, fmax = k->fmax;
  const unsigned bits = k->bits;
  const bool desc = k->desc;
  uint64_t bad = 0;
  for (uint64_t j = j0; j < j1; j++) {
    uint64_t row = rows[perm ? perm[j] : j], local;
    const cs_chunk *ch = ocur_at(s, k->col, &c, row, &local);
    bool nan = false;
    uint64_t d = code_at(T, ch->data, local, &nan) - min;
    bool isnull = nan || !cs__valid_bit(ch->validity, local);
    uint64_t out_of_range = d > span;
    bad |= out_of_range & !isnull;
    uint64_t f = isnull ? 0 : (out_of_range ? span : d) + off;
    if (desc) f = fmax - f;
    out[j - j0] = first ? f : shl(out[j - j0], bits) | f;
    if (nulls) nulls[j - j0] = isnull;
  }
  k->cur = c;
  return bad == 0;
}

static bool key_encode(const cs_store *s, okey *k, const uint64_t *rows, const uint32_t *perm, uint64_t j0,
                       uint64_t j1, uint64_t *out, bool first, uint8_t *nulls) {
  if (k->kind == KEY_DICT) {
    for (uint64_t j = j0; j < j1; j++) {
      uint32_t id = k->ids[perm ? perm[j] : j];
      uint64_t f = id == ORDER_NONE ? 0 : k->rank[id] + k->off;
      if (k->desc) f = k->fmax - f;
      out[j - j0] = first ? f : shl(out[j - j0], k->bits) | f;
      if (nulls) nulls[j - j0] = id == ORDER_NONE;
    }
    return true;
  }
  bool ok = true;
#define ENCODE_CALL(T) ok = encode_body(s, k, T, rows, perm, j0, j1, out, first, nulls)
  ORDER_TYPE_SWITCH(k->type, ENCODE_CALL);
#undef ENCODE_CALL
  return ok;
}

/* A segment: keys [k0, k1) whose fields are concatenated into one code, or
** one wide or split key. */
typedef struct oseg {
  uint32_t k0, k1;
  unsigned bits; /* of the concatenated code */
  bool wide;     /* one KEY_WIDE key */
  bool split;    /* one split key */
} oseg;

typedef struct octx {
  const cs_store *s;
  okey *keys;
  uint32_t n_keys;
  oseg *segs;
  uint32_t n_segs;
  uint64_t *rows; /* the caller's */
  bool implicit;  /* the input is rows first .. first + n - 1, not in rows (cs_order_range) */
  uint64_t first;
  uint64_t n;
  cs_order_mode mode;
  uint64_t limit;
  uint32_t *hist;          /* (ORDER_MAX_DIGITS + ORDER_MSD_LEVELS) << ORDER_MAX_DIGIT_BITS counts */
  uint64_t n_out;          /* result */
  cs_order_counts *counts; /* cs_order_count: the counting sort's codes and starts, rows left as they are */
  uint32_t min_codes;      /* cs_order_count: ... when the key's range holds at least this many codes */
  uint64_t kth;            /* top-k: the k-th row's code, when have_kth (k rows were found) */
  bool have_kth;
  const cs__pred_set *preds; /* pruned top-k over a range: only the rows these select (NULL: all) */
} octx;

/* Puts the record cursors of segment g's keys back before the first
** record, for a walk over the positions from the start. */
static void seg_rewind(octx *c, const oseg *g) {
  for (uint32_t i = g->k0; i < g->k1; i++) c->keys[i].cur = (ocur){0, 0, 0, NULL};
}

/* Codes of segment g for positions [j0, j1) into out; false: out of range. */
static bool seg_encode(octx *c, const oseg *g, const uint32_t *perm, uint64_t j0, uint64_t j1, uint64_t *out,
                       uint8_t *nulls) {
  bool ok = true;
  for (uint32_t i = g->k0; i < g->k1; i++)
    ok &= key_encode(c->s, &c->keys[i], c->rows, perm, j0, j1, out, i == g->k0, nulls);
  return ok;
}

static void segs_plan(octx *c) {
  c->n_segs = 0;
  for (uint32_t i = 0; i < c->n_keys; i++) {
    okey *k = &c->keys[i];
    oseg *last = c->n_segs ? &c->segs[c->n_segs - 1] : NULL;
    bool alone = k->kind == KEY_WIDE || k->split;
    if (!alone && last && !last->wide && !last->split && last->bits + k->bits <= 64) {
      last->k1 = i + 1;
      last->bits += k->bits;
      continue;
    }
    oseg *g = &c->segs[c->n_segs++];
    g->k0 = i, g->k1 = i + 1;
    g->bits = k->kind == KEY_WIDE ? 64 : k->bits;
    g->wide = k->kind == KEY_WIDE;
    g->split = k->split;
  }
}

/* ------------------------------------------------------------ radix sort */

/* Keys with an optional 4-byte payload beside them (p == NULL: "packed",
** the position is in the key word's low bits). */
typedef struct rs {
  uint64_t *k;
  uint32_t *p;
} rs;

static rs rs_at(rs a, uint64_t off) {
  rs r = {a.k + off, a.p ? a.p + off : NULL};
  return r;
}

static void rs_copy(rs d, rs s, uint64_t n) {
  memcpy(d.k, s.k, n * sizeof *d.k);
  if (s.p) memcpy(d.p, s.p, n * sizeof *d.p);
}

typedef struct rplan {
  unsigned n;
  unsigned shift[ORDER_MAX_DIGITS], width[ORDER_MAX_DIGITS];
} rplan;

/* Digits over bits [lo, lo + kb), balanced, each at most D bits. */
static rplan radix_plan(unsigned lo, unsigned kb, unsigned D) {
  rplan p;
  p.n = (kb + D - 1) / D;
  unsigned at = lo;
  for (unsigned d = 0; d < p.n; d++) {
    unsigned w = kb / p.n + (d < kb % p.n);
    p.shift[d] = at, p.width[d] = w;
    at += w;
  }
  return p;
}

#define DIGIT(v, p, d) ((unsigned)((v) >> (p).shift[d]) & ((1u << (p).width[d]) - 1))
#define HIST_AT(hist, d) ((hist) + ((size_t)(d) << ORDER_MAX_DIGIT_BITS))

/* Exclusive prefix sums of a digit's histogram; false when every element
** has the same digit (the pass would not move anything). */
static bool radix_prefix(uint32_t *h, unsigned width, uint64_t n) {
  uint32_t sum = 0;
  for (uint32_t b = 0; b < (1u << width); b++) {
    if (h[b] == n) return false;
    uint32_t x = h[b];
    h[b] = sum;
    sum += x;
  }
  return true;
}

/* One stable pass: s into d by the digit of width w at shift sh; h holds
** the digit's exclusive prefix sums and ends as each bucket's end. */
static void rs_scatter(rs s, rs d, uint64_t n, unsigned sh, unsigned w, uint32_t *h) {
  const uint64_t m = ((uint64_t)1 << w) - 1;
  if (s.p) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = s.k[i];
      uint32_t o = h[(v >> sh) & m]++;
      d.k[o] = v;
      d.p[o] = s.p[i];
    }
  } else {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = s.k[i];
      d.k[h[(v >> sh) & m]++] = v;
    }
  }
}

static void rs_insertion(rs a, uint64_t n, unsigned lo) {
  for (uint64_t i = 1; i < n; i++) {
    uint64_t v = a.k[i], key = v >> lo, j = i;
    uint32_t q = a.p ? a.p[i] : 0;
    for (; j > 0 && (a.k[j - 1] >> lo) > key; j--) {
      a.k[j] = a.k[j - 1];
      if (a.p) a.p[j] = a.p[j - 1];
    }
    a.k[j] = v;
    if (a.p) a.p[j] = q;
  }
}

/* Stable LSD sort of a by bits [lo, lo + kb) (and nothing above them), t
** scratch, digits of at most D bits.  want: 0 the result in a, 1 in t, -1
** either; returns whether it is in t. */
static bool rs_lsd(rs a, rs t, uint64_t n, unsigned lo, unsigned kb, unsigned D, uint32_t *hist, int want) {
  bool in_t = false;
  if (kb && n > 1) {
    if (n <= ORDER_SMALL) {
      rs_insertion(a, n, lo);
    } else {
      rplan pl = radix_plan(lo, kb, D);
      for (unsigned d = 0; d < pl.n; d++) memset(HIST_AT(hist, d), 0, (sizeof *hist) << pl.width[d]);
      for (uint64_t i = 0; i < n; i++) {
        uint64_t v = a.k[i];
        for (unsigned d = 0; d < pl.n; d++) HIST_AT(hist, d)[DIGIT(v, pl, d)]++;
      }
      for (unsigned d = 0; d < pl.n; d++) {
        if (!radix_prefix(HIST_AT(hist, d), pl.width[d], n)) continue;
        rs_scatter(in_t ? t : a, in_t ? a : t, n, pl.shift[d], pl.width[d], HIST_AT(hist, d));
        in_t = !in_t;
      }
    }
  }
  if (want >= 0 && in_t != (want == 1)) {
    rs_copy(want == 1 ? t : a, in_t ? t : a, n);
    in_t = want == 1;
  }
  return in_t;
}

/* MSD first: one pass on the top digit into t, then every bucket sorted on
** the bits below, recursively while it is larger than tune.cache_n, by
** LSD in cache once it is not.  The result goes to a (to_t false) or t.
** level: the recursion depth, whose bucket counts live in hist's rows
** ORDER_MAX_DIGITS + level. */
static void rs_msd(rs a, rs t, uint64_t n, unsigned lo, unsigned kb, uint32_t *hist, unsigned level,
                   bool to_t) {
  unsigned D = tune.digit_bits;
  if (n <= tune.cache_n || kb <= D) {
    rs_lsd(a, t, n, lo, kb, n < 4096 ? ORDER_MIN_DIGIT_BITS : D, hist, to_t ? 1 : 0);
    return;
  }
  unsigned sh = lo + kb - D;
  uint32_t *h = HIST_AT(hist, ORDER_MAX_DIGITS + level);
  memset(h, 0, (sizeof *h) << D);
  const uint64_t m = ((uint64_t)1 << D) - 1;
  for (uint64_t i = 0; i < n; i++) h[(a.k[i] >> sh) & m]++;
  if (!radix_prefix(h, D, n)) { /* one bucket: the digit tells nothing */
    rs_msd(a, t, n, lo, kb - D, hist, level, to_t);
    return;
  }
  rs_scatter(a, t, n, sh, D, h);
  /* h[b] is now the end of bucket b; the buckets are sorted from t back into a. */
  uint64_t start = 0;
  for (uint32_t b = 0; b <= m; b++) {
    uint64_t end = h[b];
    if (end > start)
      rs_msd(rs_at(t, start), rs_at(a, start), end - start, lo, kb - D, hist, level + 1, !to_t);
    start = end;
  }
}

/* Stable sort of a by bits [lo, lo + kb); t scratch.  Returns whether the
** result is in t. */
static bool radix_sort(rs a, rs t, uint64_t n, unsigned lo, unsigned kb, uint32_t *hist) {
  if (tune.msd_min && n >= tune.msd_min && kb > tune.digit_bits) {
    rs_msd(a, t, n, lo, kb, hist, 0, false);
    return false;
  }
  return rs_lsd(a, t, n, lo, kb, tune.digit_bits, hist, -1);
}

/* ------------------------------------------------------ pairs (top-k etc) */

typedef struct opair {
  uint64_t code;
  uint64_t j; /* input position: the tie-break */
} opair;

CS__INLINE bool pair_less(opair a, opair b) { return a.code < b.code || (a.code == b.code && a.j < b.j); }

static void pairs_insertion(opair *a, uint64_t n) {
  for (uint64_t i = 1; i < n; i++) {
    opair v = a[i];
    uint64_t j = i;
    for (; j > 0 && pair_less(v, a[j - 1]); j--) a[j] = a[j - 1];
    a[j] = v;
  }
}

/* Sorts a[0, n) by (code, j): bottom-up merge sort over insertion-sorted
** runs; t: n scratch.  The pairs are distinct, so the order is total. */
static void pairs_sort(opair *a, opair *t, uint64_t n) {
  const uint64_t run = 16;
  for (uint64_t i = 0; i < n; i += run) pairs_insertion(a + i, n - i < run ? n - i : run);
  opair *src = a, *dst = t;
  for (uint64_t w = run; w < n; w *= 2) {
    for (uint64_t lo = 0; lo < n; lo += 2 * w) {
      uint64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      uint64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) dst[o++] = pair_less(src[j], src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[o++] = src[i++];
      while (j < hi) dst[o++] = src[j++];
    }
    opair *x = src;
    src = dst, dst = x;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
}

static uint64_t splitmix(uint64_t *st) {
  uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Quickselect: afterwards a[nth] is the element of rank nth, a[0, nth)
** hold the smaller ones.  Random pivots (a fixed seed: the result does not
** depend on them, the pairs being distinct). */
static void pairs_nth(opair *a, uint64_t n, uint64_t nth) {
  uint64_t lo = 0, hi = n, st = 0x5EEDull;
  while (hi - lo > ORDER_SMALL) {
    uint64_t pi = lo + splitmix(&st) % (hi - lo);
    opair pv = a[pi];
    a[pi] = a[hi - 1], a[hi - 1] = pv;
    uint64_t store = lo;
    for (uint64_t i = lo; i < hi - 1; i++)
      if (pair_less(a[i], pv)) {
        opair x = a[i];
        a[i] = a[store], a[store] = x;
        store++;
      }
    a[hi - 1] = a[store], a[store] = pv;
    if (nth == store) return;
    if (nth < store)
      hi = store;
    else
      lo = store + 1;
  }
  pairs_insertion(a + lo, hi - lo);
}

/* ----------------------------------------------- stable sort by comparator */

typedef int (*u32_cmp)(uint32_t a, uint32_t b, const void *ctx);

/* Stable merge sort of a[0, n) under cmp; t: n scratch. */
static void msort_u32(uint32_t *a, uint32_t *t, uint64_t n, u32_cmp cmp, const void *ctx) {
  if (n <= ORDER_SMALL) {
    for (uint64_t i = 1; i < n; i++) {
      uint32_t v = a[i];
      uint64_t j = i;
      for (; j > 0 && cmp(v, a[j - 1], ctx) < 0; j--) a[j] = a[j - 1];
      a[j] = v;
    }
    return;
  }
  uint64_t h = n / 2;
  msort_u32(a, t, h, cmp, ctx);
  msort_u32(a + h, t + h, n - h, cmp, ctx);
  if (cmp(a[h], a[h - 1], ctx) >= 0) return; /* already in order */
  memcpy(t, a, h * sizeof *a);
  uint64_t i = 0, j = h, o = 0;
  while (i < h && j < n) a[o++] = cmp(a[j], t[i], ctx) < 0 ? a[j++] : t[i++];
  while (i < h) a[o++] = t[i++];
}

/* ------------------------------------------------------ TEXT/BLOB values */

/* A TEXT/BLOB value in the mapping; len UINT64_MAX = NULL. */
typedef struct oref {
  const uint8_t *p;
  uint64_t len;
} oref;

#define OREF_NULL UINT64_MAX

static void refs_read(const cs_store *s, okey *k, const uint64_t *rows, const uint32_t *perm, uint64_t n,
                      oref *out) {
  ocur c = {0, 0, 0, NULL};
  for (uint64_t j = 0; j < n; j++) {
    uint64_t local;
    const cs_chunk *ch = ocur_at(s, k->col, &c, rows[perm ? perm[j] : j], &local);
    if (!cs__valid_bit(ch->validity, local)) {
      out[j].p = NULL, out[j].len = OREF_NULL;
      continue;
    }
    out[j].p = bytes_at(ch, local, &out[j].len);
  }
}

static bool refs_equal(oref a, oref b) {
  if (a.len == OREF_NULL || b.len == OREF_NULL) return a.len == b.len;
  return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

typedef struct dict_ents {
  const oref *v; /* distinct values, by id */
} dict_ents;

static int dict_cmp(uint32_t a, uint32_t b, const void *ctx) {
  const oref *v = ((const dict_ents *)ctx)->v;
  return cs__bytes_cmp(v[a].p, v[a].len, v[b].p, v[b].len);
}

/* Dictionary-encodes TEXT/BLOB key k: ids per input position and the rank
** of each distinct value.  More than ORDER_DICT_CAP distinct values leave
** k wide (ORD_ABANDON). */
static int dict_build(const cs_store *s, okey *k, const uint64_t *rows, uint64_t n) {
  int rc = ORD_NOMEM;
  uint64_t cap_slots = 1024, mask = cap_slots - 1;
  uint32_t n_vals = 0, vals_cap = 256;
  uint32_t *slots = ord_alloc(cap_slots, sizeof *slots);
  uint64_t *hashes = cs__mem_malloc(vals_cap * sizeof *hashes); /* grown by realloc */
  oref *vals = cs__mem_malloc(vals_cap * sizeof *vals);
  uint32_t *order = NULL, *tmp = NULL;
  k->ids = ord_alloc(n, sizeof *k->ids);
  if (!slots || !hashes || !vals || !k->ids) goto done;
  memset(slots, 0xFF, cap_slots * sizeof *slots);
  ocur c = {0, 0, 0, NULL};
  /* Runs of one value (clustered data) skip the hash. */
  const uint8_t *last_p = NULL;
  uint64_t last_len = OREF_NULL;
  uint32_t last_id = ORDER_NONE;
  for (uint64_t j = 0; j < n; j++) {
    uint64_t local, len;
    const cs_chunk *ch = ocur_at(s, k->col, &c, rows[j], &local);
    if (!cs__valid_bit(ch->validity, local)) {
      k->ids[j] = ORDER_NONE;
      continue;
    }
    const uint8_t *p = bytes_at(ch, local, &len);
    if (len == last_len && (len == 0 || memcmp(p, last_p, len) == 0)) {
      k->ids[j] = last_id;
      continue;
    }
    uint64_t h = cs__hash(p, len);
    uint64_t slot = h & mask;
    uint32_t id;
    for (;;) {
      id = slots[slot];
      if (id == ORDER_NONE) break;
      if (hashes[id] == h && vals[id].len == len && (len == 0 || memcmp(vals[id].p, p, len) == 0)) break;
      slot = (slot + 1) & mask;
    }
    if (id == ORDER_NONE) {
      if (n_vals >= tune.dict_cap) {
        rc = ORD_ABANDON;
        goto done;
      }
      if (n_vals == vals_cap) {
        vals_cap *= 2;
        uint64_t *h2 = cs__mem_realloc(hashes, vals_cap * sizeof *hashes);
        if (!h2) goto done;
        hashes = h2;
        oref *v2 = cs__mem_realloc(vals, vals_cap * sizeof *vals);
        if (!v2) goto done;
        vals = v2;
      }
      id = n_vals++;
      hashes[id] = h, vals[id].p = p, vals[id].len = len;
      slots[slot] = id;
      if ((uint64_t)n_vals * 2 > cap_slots) { /* keep the load under one half */
        ord_free(slots);
        cap_slots *= 2, mask = cap_slots - 1;
        slots = ord_alloc(cap_slots, sizeof *slots);
        if (!slots) goto done;
        memset(slots, 0xFF, cap_slots * sizeof *slots);
        for (uint32_t v = 0; v < n_vals; v++) {
          uint64_t sl = hashes[v] & mask;
          while (slots[sl] != ORDER_NONE) sl = (sl + 1) & mask;
          slots[sl] = v;
        }
      }
    }
    k->ids[j] = id;
    last_p = p, last_len = len, last_id = id;
  }
  order = ord_alloc(n_vals, sizeof *order);
  tmp = ord_alloc(n_vals, sizeof *tmp);
  k->rank = ord_alloc(n_vals, sizeof *k->rank);
  if (!order || !tmp || !k->rank) goto done;
  for (uint32_t v = 0; v < n_vals; v++) order[v] = v;
  dict_ents de = {vals};
  msort_u32(order, tmp, n_vals, dict_cmp, &de);
  for (uint32_t r = 0; r < n_vals; r++) k->rank[order[r]] = r;
  k->kind = KEY_DICT;
  k->nullable = k->nullable || n_vals == 0;
  key_set_range(k, n_vals > 0, 0, n_vals ? n_vals - 1 : 0);
  k->exact = true;
  rc = ORD_OK;
done:
  ord_free(slots), cs__mem_free(hashes), cs__mem_free(vals), ord_free(order), ord_free(tmp);
  if (rc != ORD_OK) {
    ord_free(k->ids), ord_free(k->rank);
    k->ids = NULL, k->rank = NULL;
    k->kind = KEY_WIDE;
  }
  return rc;
}

/* ---------------------------------------------------- sorting a segment */

/* The result of a stable sort of n positions by one segment: order[t] is
** the position (in the order sorted) of the t-th row; codes[t] its code
** (NULL for split segments).  Both point into bufs, which the caller frees. */
typedef struct osorted {
  uint32_t *order;
  uint64_t *codes;
  void *bufs[4];
} osorted;

static void sorted_free(osorted *r) {
  for (int i = 0; i < 4; i++) ord_free(r->bufs[i]);
  memset(r, 0, sizeof *r);
}

/* Stable sort of positions [0, n) (rows[perm[j]]) by code segment g. */
static int seg_sort_codes(octx *c, const oseg *g, const uint32_t *perm, osorted *out) {
  uint64_t n = c->n;
  memset(out, 0, sizeof *out);
  uint64_t *codes = ord_alloc(n, 8);
  out->bufs[0] = codes;
  if (!codes) return ORD_NOMEM;
  uint8_t *nulls = NULL;
  if (g->split) {
    nulls = ord_alloc(n, 1);
    out->bufs[1] = nulls;
    if (!nulls) return ORD_NOMEM;
  }
  seg_rewind(c, g);
  if (!seg_encode(c, g, perm, 0, n, codes, nulls)) return ORD_REDO;
  unsigned ib = bit_width(n - 1);
  if (!g->split && g->bits + ib <= 64) {
    /* One word per row: the field above the position. */
    uint64_t *t = ord_alloc(n, 8);
    out->bufs[1] = t;
    if (!t) return ORD_NOMEM;
    for (uint64_t j = 0; j < n; j++) codes[j] = shl(codes[j], ib) | j;
    rs ra = {codes, NULL}, rt = {t, NULL};
    uint64_t *res = radix_sort(ra, rt, n, ib, g->bits, c->hist) ? t : codes;
    uint32_t *order = (uint32_t *)(void *)(res == codes ? t : codes);
    uint64_t m = ((uint64_t)1 << ib) - 1;
    for (uint64_t i = 0; i < n; i++) {
      order[i] = (uint32_t)(res[i] & m);
      res[i] = ib >= 64 ? 0 : res[i] >> ib;
    }
    out->order = order, out->codes = res;
    return ORD_OK;
  }
  /* Two arrays: the code and the position. */
  uint64_t *kt = ord_alloc(n, 8);
  uint32_t *p = ord_alloc(n, 4), *pt = ord_alloc(n, 4);
  out->bufs[2] = kt, out->bufs[3] = p;
  if (!kt || !p || !pt) {
    ord_free(pt);
    return ORD_NOMEM;
  }
  uint64_t m = 0, n_null = 0;
  if (g->split) { /* NULLs apart, in order, then placed first (ASC) or last (DESC) */
    for (uint64_t j = 0; j < n; j++) {
      if (nulls[j]) {
        pt[n_null++] = (uint32_t)j;
      } else {
        codes[m] = codes[j];
        p[m++] = (uint32_t)j;
      }
    }
  } else {
    for (uint64_t j = 0; j < n; j++) p[j] = (uint32_t)j;
    m = n;
  }
  uint32_t *null_pos = NULL;
  if (n_null) { /* keep the NULL positions out of the sort's way */
    null_pos = ord_alloc(n_null, 4);
    if (!null_pos) {
      ord_free(pt);
      return ORD_NOMEM;
    }
    memcpy(null_pos, pt, n_null * 4);
  }
  rs ra = {codes, p}, rt = {kt, pt};
  bool in_t = radix_sort(ra, rt, m, 0, g->bits, c->hist);
  uint64_t *ko = in_t ? kt : codes;
  uint32_t *po = in_t ? pt : p;
  uint32_t *order = po == p ? pt : p; /* the free one */
  bool desc = c->keys[g->k0].desc;
  uint64_t at = 0;
  if (!desc)
    for (uint64_t i = 0; i < n_null; i++) order[at++] = null_pos[i];
  for (uint64_t i = 0; i < m; i++) order[at++] = po[i];
  if (desc)
    for (uint64_t i = 0; i < n_null; i++) order[at++] = null_pos[i];
  ord_free(null_pos);
  /* Keep order and the sorted codes; free the rest. */
  uint32_t *other_p = order == p ? pt : p;
  ord_free(other_p);
  out->bufs[3] = order;
  out->order = order;
  if (g->split) {
    ord_free(codes), ord_free(kt);
    out->bufs[0] = out->bufs[2] = NULL;
    out->codes = NULL;
  } else {
    uint64_t *other_k = ko == codes ? kt : codes;
    ord_free(other_k);
    out->bufs[0] = ko, out->bufs[2] = NULL;
    out->codes = ko;
  }
  return ORD_OK;
}

/* Stable sort by wide TEXT/BLOB key k: by the first eight bytes (radix),
** then runs of equal prefixes by the full bytes (merge sort). */
typedef struct wide_ctx {
  const oref *refs;
  bool desc;
} wide_ctx;

static int wide_cmp(uint32_t a, uint32_t b, const void *ctx) {
  const wide_ctx *w = ctx;
  int r = cs__bytes_cmp(w->refs[a].p, w->refs[a].len, w->refs[b].p, w->refs[b].len);
  return w->desc ? -r : r;
}

static uint64_t prefix8(oref r) {
  uint64_t v = 0;
  for (uint64_t i = 0; i < 8; i++) v = (v << 8) | (i < r.len ? r.p[i] : 0);
  return v;
}

static int seg_sort_wide(octx *c, okey *k, const uint32_t *perm, osorted *out) {
  uint64_t n = c->n;
  memset(out, 0, sizeof *out);
  int rc = ORD_NOMEM;
  oref *refs = ord_alloc(n, sizeof *refs);
  uint64_t *pre = ord_alloc(n, 8), *pre_t = ord_alloc(n, 8);
  uint32_t *p = ord_alloc(n, 4), *pt = ord_alloc(n, 4), *nul = NULL;
  if (!refs || !pre || !pre_t || !p || !pt) goto done;
  refs_read(c->s, k, c->rows, perm, n, refs);
  uint64_t m = 0, n_null = 0, lo = UINT64_MAX, hi = 0;
  for (uint64_t j = 0; j < n; j++) {
    if (refs[j].len == OREF_NULL) {
      pt[n_null++] = (uint32_t)j;
      continue;
    }
    uint64_t v = prefix8(refs[j]);
    if (k->desc) v = ~v;
    lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    pre[m] = v, p[m++] = (uint32_t)j;
  }
  nul = ord_alloc(n_null, 4);
  if (!nul) goto done;
  memcpy(nul, pt, n_null * 4);
  for (uint64_t i = 0; i < m; i++) pre[i] -= lo;
  rs ra = {pre, p}, rt = {pre_t, pt};
  bool in_t = radix_sort(ra, rt, m, 0, m ? bit_width(hi - lo) : 0, c->hist);
  uint64_t *ko = in_t ? pre_t : pre;
  uint32_t *po = in_t ? pt : p;
  /* Refine runs of equal prefixes that may still differ. */
  uint32_t *scratch = po == p ? pt : p;
  wide_ctx wc = {refs, k->desc};
  for (uint64_t i = 0; i < m;) {
    uint64_t e = i + 1;
    bool differ = refs[po[i]].len > 8;
    while (e < m && ko[e] == ko[i]) {
      if (refs[po[e]].len > 8 || refs[po[e]].len != refs[po[i]].len) differ = true;
      e++;
    }
    if (e - i > 1 && differ) msort_u32(po + i, scratch, e - i, wide_cmp, &wc);
    i = e;
  }
  uint32_t *order = scratch;
  uint64_t at = 0;
  if (!k->desc)
    for (uint64_t i = 0; i < n_null; i++) order[at++] = nul[i];
  for (uint64_t i = 0; i < m; i++) order[at++] = po[i];
  if (k->desc)
    for (uint64_t i = 0; i < n_null; i++) order[at++] = nul[i];
  out->order = order;
  out->bufs[0] = order;
  if (order == p)
    p = NULL;
  else
    pt = NULL;
  rc = ORD_OK;
done:
  ord_free(refs), ord_free(pre), ord_free(pre_t), ord_free(p), ord_free(pt);
  ord_free(nul);
  return rc;
}

/* ------------------------------------------------------------ the paths */

/* One code segment, sorted: the result walked once for every mode. */
static int path_sorted_one(octx *c) {
  osorted r;
  int rc = seg_sort_codes(c, &c->segs[0], NULL, &r);
  if (rc != ORD_OK) {
    sorted_free(&r);
    return rc;
  }
  uint64_t n = c->n, m = 0, groups = 0, *out = r.codes; /* written in place behind the reads */
  const uint32_t *order = r.order;
  if (c->mode == CS_ORDER_SORT) {
    m = n < c->limit ? n : c->limit;
    for (uint64_t t = 0; t < m; t++) out[t] = c->rows[order[t]];
  } else {
    uint64_t prev = 0;
    for (uint64_t t = 0; t < n; t++) {
      uint64_t code = r.codes[t];
      bool start = t == 0 || code != prev;
      prev = code;
      if (start && groups++ == c->limit) break;
      if (c->mode == CS_ORDER_DISTINCT && !start) continue;
      out[m++] = c->rows[order[t]];
    }
  }
  memcpy(c->rows, out, m * sizeof *out);
  c->n_out = m;
  sorted_free(&r);
  return ORD_OK;
}

/* Fields of a single fixed key k for the n rows from row0 (an implicit
** range): record by record, straight from each chunk's array, so the loop
** has no position to load and no record check per row. */
CS__INLINE bool span_body(const cs_store *s, okey *k, cs_type T, uint64_t row0, uint64_t n,
                          uint64_t *restrict out) {
  const uint64_t min = k->min, span = k->span, off = k->off, fmax = k->fmax;
  const bool desc = k->desc;
  uint64_t bad = 0;
  for (uint64_t j = 0; j < n;) {
    uint64_t local;
    const cs_chunk *ch = ocur_at(s, k->col, &k->cur, row0 + j, &local);
    uint64_t m = k->cur.hi - (row0 + j);
    if (m > n - j) m = n - j;
    const uint8_t *data = ch->data, *validity = ch->validity;
    for (uint64_t i = 0; i < m; i++) {
      bool nan = false;
      uint64_t d = code_at(T, data, local + i, &nan) - min;
      bool isnull = nan || !cs__valid_bit(validity, local + i);
      uint64_t out_of_range = d > span;
      bad |= out_of_range & !isnull;
      uint64_t f = isnull ? 0 : (out_of_range ? span : d) + off;
      out[j + i] = desc ? fmax - f : f;
    }
    j += m;
  }
  return bad == 0;
}

/* Codes of a segment for input positions [j0, j1) on a streaming pass (top-k,
** counting DISTINCT): from the
** caller's rows, or for an implicit range from a small buffer of row
** numbers (so a range never writes its positions out). */
/* The row at input position j. */
CS__INLINE uint64_t input_row(const octx *c, uint64_t j) { return c->implicit ? c->first + j : c->rows[j]; }

/* An implicit range's deleted positions in [j0, j1): live[j - j0] = 0 at
** each, and true when there is one; false at once (live untouched) for a
** store without deletions or an explicit list (the caller filtered it). */
static bool stream_deleted(const octx *c, uint64_t j0, uint64_t j1, uint8_t *live) {
  if (!c->implicit || !c->s->dels) return false;
  memset(live, 1, j1 - j0);
  return cs_store_mask_deleted(c->s, c->first + j0, j1 - j0, live) > 0;
}

static bool stream_encode(octx *c, const oseg *g, uint64_t j0, uint64_t j1, uint64_t *cbuf,
                          uint64_t *rowbuf) {
  if (!c->implicit) return seg_encode(c, g, NULL, j0, j1, cbuf, NULL);
  if (g->k1 == g->k0 + 1 && c->keys[g->k0].kind == KEY_FIXED) {
    okey *k = &c->keys[g->k0];
    bool ok = true;
#define SPAN_CALL(T) ok = span_body(c->s, k, T, c->first + j0, j1 - j0, cbuf)
    ORDER_TYPE_SWITCH(k->type, SPAN_CALL);
#undef SPAN_CALL
    return ok;
  }
  for (uint64_t j = j0; j < j1; j++) rowbuf[j - j0] = c->first + j;
  bool ok = true;
  for (uint32_t i = g->k0; i < g->k1; i++)
    ok &= key_encode(c->s, &c->keys[i], rowbuf, NULL, 0, j1 - j0, cbuf, i == g->k0, NULL);
  return ok;
}

/* One code segment of at most ORDER_COUNT_BITS bits: a counting sort of the
** positions (SORT, GROUP), or the first position of each code (DISTINCT). */
/* The counting sort on the thread team (GROUP and SORT over written
** positions): pass one encodes each chunk of positions and counts its codes
** into the chunk's own histogram; the histograms are prefix-summed code by
** code, chunk by chunk, so chunk k's rows of code v land after those of the
** chunks before it (stable, whatever ran where); pass two scatters each
** chunk into its slots.  A histogram per chunk limits it to codes of at
** most ORDER_COUNT_TEAM_BITS bits. */
typedef struct count_team {
  octx *c;
  const oseg *g;
  okey *keys; /* a copy of the keys per member (their record cursors) */
  uint64_t chunk, R, m;
  uint32_t *codes; /* per position */
  uint32_t *hist;  /* per chunk R counts, then offsets */
  uint64_t *out;
  atomic_int bad;
} count_team;

static void count_team_encode(void *ctx, uint64_t ch, int member) {
  count_team *T = ctx;
  okey *keys = T->keys + (size_t)member * T->c->n_keys;
  uint32_t *h = T->hist + ch * T->R;
  uint64_t i0, i1, cbuf[ORDER_CHUNK], rowbuf[ORDER_CHUNK];
  cs__team_span(ch, T->chunk, T->c->n, &i0, &i1);
  for (uint64_t j0 = i0; j0 < i1; j0 += ORDER_CHUNK) {
    uint64_t j1 = j0 + ORDER_CHUNK < i1 ? j0 + ORDER_CHUNK : i1;
    /* an implicit range (cs_order_count): its rows from a small buffer */
    const uint64_t *rows = T->c->rows;
    uint64_t a = j0, b = j1;
    if (T->c->implicit) {
      for (uint64_t j = j0; j < j1; j++) rowbuf[j - j0] = T->c->first + j;
      rows = rowbuf, a = 0, b = j1 - j0;
    }
    bool ok = true;
    for (uint32_t i = T->g->k0; i < T->g->k1; i++)
      ok &= key_encode(T->c->s, &keys[i], rows, NULL, a, b, cbuf, i == T->g->k0, NULL);
    if (!ok) {
      atomic_store_explicit(&T->bad, 1, memory_order_relaxed);
      return;
    }
    for (uint64_t j = j0; j < j1; j++) {
      uint32_t v = (uint32_t)cbuf[j - j0];
      T->codes[j] = v;
      h[v]++;
    }
  }
}

static void count_team_scatter(void *ctx, uint64_t ch, int member) {
  (void)member;
  count_team *T = ctx;
  uint32_t *off = T->hist + ch * T->R;
  uint64_t i0, i1;
  cs__team_span(ch, T->chunk, T->c->n, &i0, &i1);
  for (uint64_t j = i0; j < i1; j++) {
    uint32_t o = off[T->codes[j]]++;
    if (o < T->m) T->out[o] = T->c->rows[j];
  }
}

static int path_counting_team(octx *c, int threads) {
  const oseg *g = &c->segs[0];
  uint64_t n = c->n, R = (uint64_t)1 << g->bits;
  count_team T = {.c = c,
                  .g = g,
                  .R = R,
                  .chunk = cs__team_chunk(n, threads, 1u << 16, ORDER_CHUNK, ORDER_COUNT_TEAM_CHUNKS)};
  uint64_t n_chunks = (n + T.chunk - 1) / T.chunk;
  int rc = ORD_NOMEM;
  T.keys = cs__mem_malloc((size_t)threads * c->n_keys * sizeof *T.keys);
  T.hist = ord_alloc(n_chunks * R, 4);
  T.codes = ord_alloc(n, 4);
  if (!T.keys || !T.hist || !T.codes) goto done;
  for (int t = 0; t < threads; t++)
    for (uint32_t i = 0; i < c->n_keys; i++) {
      T.keys[(size_t)t * c->n_keys + i] = c->keys[i];
      T.keys[(size_t)t * c->n_keys + i].cur = (ocur){0, 0, 0, NULL};
    }
  memset(T.hist, 0, n_chunks * R * 4);
  cs__team_run(threads, n_chunks, count_team_encode, &T);
  if (atomic_load(&T.bad)) {
    rc = ORD_REDO;
    goto done;
  }
  /* Offsets, code-major then chunk; GROUP with a limit ends at the first
  ** code past its limit groups (as path_counting does). */
  uint64_t sum = 0, groups = 0, m = n;
  bool cut = c->mode == CS_ORDER_GROUP && c->limit < n;
  for (uint64_t v = 0; v < R; v++) {
    uint64_t at = sum;
    for (uint64_t k = 0; k < n_chunks; k++) {
      uint32_t x = T.hist[k * R + v];
      T.hist[k * R + v] = (uint32_t)sum;
      sum += x;
    }
    if (cut && sum > at && groups++ == c->limit) {
      m = at;
      cut = false;
    }
  }
  if (c->mode == CS_ORDER_SORT && c->limit < m) m = c->limit;
  if (c->counts) { /* chunk 0's offset of each code is the code's start */
    if (!(c->counts->starts = ord_alloc(R + 1, 4))) goto done;
    memcpy(c->counts->starts, T.hist, R * 4);
    c->counts->starts[R] = (uint32_t)n;
    c->counts->codes = T.codes, T.codes = NULL;
    c->counts->n_codes = (uint32_t)R;
    rc = ORD_OK;
    goto done;
  }
  if (!(T.out = ord_alloc(n, 8))) goto done;
  T.m = m;
  cs__team_run(threads, n_chunks, count_team_scatter, &T);
  memcpy(c->rows, T.out, m * 8);
  c->n_out = m;
  rc = ORD_OK;
done:
  cs__mem_free(T.keys), ord_free(T.hist), ord_free(T.codes), ord_free(T.out);
  return rc;
}

static int path_counting(octx *c) {
  const oseg *g = &c->segs[0];
  uint64_t n = c->n, R = (uint64_t)1 << g->bits; /* codes are < R */
  if (c->mode != CS_ORDER_DISTINCT && (!c->implicit || c->counts) && n >= tune.team_min &&
      g->bits <= ORDER_COUNT_TEAM_BITS) {
    int threads = cs_kernel_threads(n);
    if (threads > 1) return path_counting_team(c, threads);
  }
  int rc = ORD_NOMEM;
  uint64_t cbuf[ORDER_CHUNK], rowbuf[ORDER_CHUNK];
  uint8_t live[ORDER_CHUNK];
  uint32_t *cnt = ord_alloc(R + 1, 4), *codes = NULL;
  uint64_t *out = NULL;
  if (!cnt) goto done;
  seg_rewind(c, g);
  assert(!c->implicit || c->mode == CS_ORDER_DISTINCT || c->counts);
  if (c->mode == CS_ORDER_DISTINCT) {
    uint32_t *first = cnt;
    memset(first, 0xFF, (R + 1) * 4);
    for (uint64_t j0 = 0; j0 < n; j0 += ORDER_CHUNK) {
      uint64_t j1 = j0 + ORDER_CHUNK < n ? j0 + ORDER_CHUNK : n;
      if (!stream_encode(c, g, j0, j1, cbuf, rowbuf)) {
        rc = ORD_REDO;
        goto done;
      }
      if (stream_deleted(c, j0, j1, live)) {
        for (uint64_t j = j0; j < j1; j++)
          if (first[cbuf[j - j0]] == ORDER_NONE && live[j - j0]) first[cbuf[j - j0]] = (uint32_t)j;
        continue;
      }
      for (uint64_t j = j0; j < j1; j++)
        if (first[cbuf[j - j0]] == ORDER_NONE) first[cbuf[j - j0]] = (uint32_t)j;
    }
    uint64_t d = 0;
    for (uint64_t v = 0; v < R; v++) d += first[v] != ORDER_NONE;
    if (d > c->limit) d = c->limit;
    out = ord_alloc(d, 8);
    if (!out) goto done;
    uint64_t m = 0;
    for (uint64_t v = 0; v < R && m < d; v++)
      if (first[v] != ORDER_NONE) out[m++] = input_row(c, first[v]);
    memcpy(c->rows, out, m * 8);
    c->n_out = m;
    rc = ORD_OK;
    goto done;
  }
  codes = ord_alloc(n, 4);
  if (!codes) goto done;
  memset(cnt, 0, (R + 1) * 4);
  for (uint64_t j0 = 0; j0 < n; j0 += ORDER_CHUNK) {
    uint64_t j1 = j0 + ORDER_CHUNK < n ? j0 + ORDER_CHUNK : n;
    if (!stream_encode(c, g, j0, j1, cbuf, rowbuf)) {
      rc = ORD_REDO;
      goto done;
    }
    for (uint64_t j = j0; j < j1; j++) {
      uint32_t v = (uint32_t)cbuf[j - j0];
      codes[j] = v;
      cnt[v]++;
    }
  }
  /* GROUP with a limit: only the first limit codes that occur. */
  uint64_t end_code = R, groups = 0;
  if (c->mode == CS_ORDER_GROUP && c->limit < n)
    for (uint64_t v = 0; v < R; v++)
      if (cnt[v] && groups++ == c->limit) {
        end_code = v;
        break;
      }
  uint32_t sum = 0;
  for (uint64_t v = 0; v < R; v++) {
    uint32_t x = cnt[v];
    cnt[v] = sum;
    sum += x;
  }
  uint64_t m = end_code < R ? cnt[end_code] : n;
  if (c->mode == CS_ORDER_SORT && c->limit < m) m = c->limit;
  if (c->counts) {
    cnt[R] = (uint32_t)n;
    c->counts->starts = cnt, cnt = NULL;
    c->counts->codes = codes, codes = NULL;
    c->counts->n_codes = (uint32_t)R;
    rc = ORD_OK;
    goto done;
  }
  if (!(out = ord_alloc(n, 8))) goto done;
  for (uint64_t j = 0; j < n; j++) {
    uint32_t o = cnt[codes[j]]++;
    if (o < m) out[o] = c->rows[j];
  }
  memcpy(c->rows, out, m * 8);
  c->n_out = m;
  rc = ORD_OK;
done:
  ord_free(cnt), ord_free(codes), ord_free(out);
  return rc;
}

/* SORT with a small limit k over one code segment: one pass keeping
** candidates below a threshold in a buffer of 2k (at least k + 1024); a
** full buffer is cut back to the k best by quickselect, whose k-th code
** becomes the threshold.  A later row ties the k-th only with a larger
** position, so "code < threshold" is the exact test. */
/* A top-k candidate buffer: below the threshold, rows go in; a full
** buffer is cut back to the k best and its k-th becomes the threshold. */
typedef struct topk_state {
  opair *buf;
  uint64_t m, cap, thr, thr_j; /* thr_j: the k-th's position (the pruned path's tie-break) */
  bool have;                   /* thr is set */
} topk_state;

/* Cuts a full buffer back to the k best; the k-th becomes the threshold. */
static void topk_cut(topk_state *t, uint64_t k) {
  pairs_nth(t->buf, t->m, k - 1);
  t->m = k;
  t->thr = t->buf[k - 1].code, t->thr_j = t->buf[k - 1].j;
  t->have = true;
}

/* live: NULL, or 0 at the positions (deleted) that must not be offered. */
static void topk_offer(topk_state *t, uint64_t k, const uint64_t *cbuf, const uint8_t *live, uint64_t j0,
                       uint64_t j1) {
  for (uint64_t j = j0; j < j1; j++) {
    uint64_t code = cbuf[j - j0];
    if ((t->have && code >= t->thr) || (live && !live[j - j0])) continue;
    t->buf[t->m].code = code, t->buf[t->m].j = j;
    if (++t->m == t->cap) topk_cut(t, k);
  }
}

/* The k best of the candidates in buf[0, m), sorted, as rows into c. */
static int topk_finish(octx *c, opair *buf, uint64_t m) {
  uint64_t k = c->limit;
  if (m > k) {
    pairs_nth(buf, m, k - 1);
    m = k;
  }
  opair *tmp = ord_alloc(m, sizeof *tmp);
  uint64_t *out = ord_alloc(m, 8);
  int rc = ORD_NOMEM;
  if (tmp && out) {
    pairs_sort(buf, tmp, m);
    if (m == k) c->kth = buf[m - 1].code, c->have_kth = true;
    for (uint64_t t = 0; t < m; t++) out[t] = input_row(c, buf[t].j);
    memcpy(c->rows, out, m * 8);
    c->n_out = m;
    rc = ORD_OK;
  }
  ord_free(tmp), ord_free(out);
  return rc;
}

static int path_topk(octx *c) {
  const oseg *g = &c->segs[0];
  uint64_t n = c->n, k = c->limit;
  topk_state t = {.cap = k + (k > 1024 ? k : 1024)};
  uint64_t cbuf[ORDER_CHUNK], rowbuf[ORDER_CHUNK];
  uint8_t live[ORDER_CHUNK];
  int rc = ORD_NOMEM;
  if (!(t.buf = ord_alloc(t.cap, sizeof *t.buf))) return rc;
  seg_rewind(c, g);
  for (uint64_t j0 = 0; j0 < n; j0 += ORDER_CHUNK) {
    uint64_t j1 = j0 + ORDER_CHUNK < n ? j0 + ORDER_CHUNK : n;
    if (!stream_encode(c, g, j0, j1, cbuf, rowbuf)) {
      ord_free(t.buf);
      return ORD_REDO;
    }
    topk_offer(&t, k, cbuf, stream_deleted(c, j0, j1, live) ? live : NULL, j0, j1);
  }
  rc = topk_finish(c, t.buf, t.m);
  ord_free(t.buf);
  return rc;
}

/* ------------------------------------------------ pruned top-k over a range */

/* The top-k of a range (cs_order_range) visits records, not rows: each
** record's zone map bounds the first key's field of every row in it, so a
** record whose bound cannot beat the current k-th is skipped unread, and
** the records are visited best bound first (by min ASC, by max DESC) so the
** threshold is good after the first one.  Within a record the first key's
** values are compared with the threshold in the column's own type (one
** vectorisable pass into a byte mask); only the rows that pass are
** encoded and offered.  Visiting out of position order, the threshold is
** the pair (code, position) of the k-th: a later row that ties the k-th
** code still enters when its position is smaller. */

/* One record of the range. */
typedef struct orec {
  uint64_t vis;      /* visit key: the record's best first-key field (by min ASC, by max DESC) */
  uint64_t lb;       /* no code in the record is below this (its lowest first-key field, shifted) */
  uint64_t lb_clean; /* ... when it holds no NaN (differs from lb only ASC on a float record that may) */
  uint64_t r;        /* the record */
} orec;

/* --------------------------------------------- NaN knowledge per record
**
** A FLOAT record's zone map skips NaN (docs/format.md 6.5) and no count
** says whether it holds one, yet a NaN reads as NULL and sorts first
** ascending: a float record not flagged SORTED could hold the best row of
** any ASC top-k.  So the first ASC top-k that would skip such a record
** scans it for a NaN (one vectorised pass over its values, cheaper than
** reading it as a candidate) and keeps the answer on the snapshot, a byte
** per (record, column) in the store's ordering slot, set once by whoever
** comes first (any thread; the answer is the same): the later ones skip it
** as DESC does, unread.  The snapshot is immutable, so the answer never
** goes stale (a commit makes a new snapshot with its own slot).  Out of
** memory, the record is scanned each time. */
typedef struct onan_cache {
  cs__derived derived;  /* first: the store's ordering slot holds it */
  _Atomic uint8_t st[]; /* per chunk (record * n_cols + col): 0 unknown, 1 no NaN, 2 a NaN */
} onan_cache;

static void onan_free(cs__derived *d) { cs__mem_free(d); }

/* The snapshot's answers, made empty the first time (a byte per chunk, as
** the checked chunks take); NULL when out of memory. */
static onan_cache *onan_of(const cs_store *s) {
  return (onan_cache *)cs__store_derived_make(
      s, CS__DERIVED_ORDER, sizeof(onan_cache) + s->n_records * s->schema.n_cols, onan_free);
}

/* Whether record r of float column col holds a NaN (under a NULL too:
** the answer only has to be safe). */
static bool rec_has_nan(const cs_store *s, uint32_t col, cs_type t, uint64_t r) {
  onan_cache *c = onan_of(s);
  uint64_t at = r * s->schema.n_cols + col;
  uint8_t known = c ? atomic_load_explicit(&c->st[at], memory_order_relaxed) : 0;
  if (known) return known == 2;
  const cs_chunk *ch = &s->chunks[at];
  uint64_t n = s->first_rows[r + 1] - s->first_rows[r];
  /* On the bits, in eight independent lanes so that the compiler makes
  ** vector code of it at -O2: x is a NaN when its magnitude bits exceed the
  ** infinity's, that is when adding the mantissa mask carries into the
  ** sign bit (a compare per element in a serial OR chain ran at a third of
  ** the speed of reading the record as a candidate). */
  bool any = false;
  if (t == CS_TYPE_FLOAT32) {
    const uint32_t *v = ch->data;
    uint32_t acc[8] = {0}, tail = 0;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; l++) acc[l] |= (v[i + l] & 0x7FFFFFFFu) + 0x007FFFFFu;
    for (; i < n; i++) tail |= (v[i] & 0x7FFFFFFFu) + 0x007FFFFFu;
    for (int l = 0; l < 8; l++) tail |= acc[l];
    any = (tail >> 31) != 0;
  } else {
    const uint64_t *v = ch->data;
    uint64_t acc[8] = {0}, tail = 0;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; l++) acc[l] |= (v[i + l] & ~ORDER_SIGN) + 0x000FFFFFFFFFFFFFull;
    for (; i < n; i++) tail |= (v[i] & ~ORDER_SIGN) + 0x000FFFFFFFFFFFFFull;
    for (int l = 0; l < 8; l++) tail |= acc[l];
    any = (tail >> 63) != 0;
  }
  if (c) atomic_store_explicit(&c->st[at], any ? 2 : 1, memory_order_relaxed);
  return any;
}

static int orec_cmp(const void *pa, const void *pb) {
  const orec *a = pa, *b = pb;
  if (a->vis != b->vis) return a->vis < b->vis ? -1 : 1;
  return a->r < b->r ? -1 : a->r > b->r;
}

/* Record r's bounds for first key k of a segment whose code has rest bits
** below k's field.  NULL's field is 0 ASC (first) and fmax DESC (last): a
** record that may hold a NULL (a null count, or a float not flagged
** SORTED, which may hold a NaN) has the lowest bound 0 ASC; DESC it changes
** nothing.  A record without a zone map holds only NULLs (and NaNs): DESC
** fmax; otherwise it is bounded by nothing (0). */
static orec orec_make(const cs_store *s, const okey *k, unsigned rest, uint64_t r) {
  const cs_chunk *ch = &s->chunks[r * s->schema.n_cols + k->col];
  uint64_t lo_f = 0, hi_f = 0, f_vis = 0, f_lb = 0;
  bool in = false;
  if (ch->flags & CS_CHUNK_HAS_MINMAX) {
    uint64_t a = code_of_stat(k->type, ch->min), b = code_of_stat(k->type, ch->max);
    if (a >= k->min && b >= a && b - k->min <= k->span)
      lo_f = a - k->min + k->off, hi_f = b - k->min + k->off, in = true;
  }
  bool may_nan = cs_type_is_float(k->type) && !(ch->flags & CS_CHUNK_SORTED);
  uint64_t f_clean = 0;
  if (!k->desc) {
    f_vis = in ? lo_f : 0;
    f_clean = in && ch->null_count == 0 ? lo_f : 0;
    f_lb = may_nan ? 0 : f_clean;
  } else if (in) {
    f_vis = f_lb = f_clean = k->fmax - hi_f;
  } else if (!(ch->flags & CS_CHUNK_HAS_MINMAX)) {
    f_vis = f_lb = f_clean = k->fmax;
  }
  orec o = {f_vis, shl(f_lb, rest), shl(f_clean, rest), r};
  return o;
}

/* The first key's test against a threshold, in the column's type. */
enum { PR_ALL, PR_LE, PR_GE, PR_NULL };
typedef struct oprune {
  int mode; /* PR_ALL: every row; PR_LE: value <= bound or NULL (ASC); PR_GE: value >= bound, not NULL
            ** (DESC); PR_NULL: NULL rows only (ASC, the k-th is NULL) */
  int64_t bi;
  double bf;
} oprune;

/* The double whose code_f64 is x. */
static double f64_of_code(uint64_t x) {
  uint64_t b = (x & ORDER_SIGN) ? x ^ ORDER_SIGN : ~x;
  double d;
  memcpy(&d, &b, 8);
  return d;
}

/* The rows of first key k that may make a code <= thr: those whose field
** is <= thr's first field (rest bits below it). */
static oprune prune_of(const okey *k, unsigned rest, uint64_t thr) {
  uint64_t t = rest >= 64 ? 0 : thr >> rest, b;
  oprune p = {PR_ALL, 0, 0};
  if (!k->desc) {
    if (t < k->off) return p.mode = PR_NULL, p;
    if (t - k->off >= k->span) return p;
    b = k->min + (t - k->off), p.mode = PR_LE;
  } else {
    if (t >= k->fmax) return p; /* NULL's field passes: every row */
    b = k->min + (t >= k->span ? 0 : k->span - t), p.mode = PR_GE;
  }
  if (cs_type_is_float(k->type))
    p.bf = f64_of_code(b);
  else
    p.bi = (int64_t)(b ^ ORDER_SIGN);
  return p;
}

/* mask[i] = whether element local + i of a column of type T passes p
** (validity not yet applied).  A NaN passes PR_LE and PR_NULL (NULL ASC),
** never PR_GE. */
#define PRUNE_LOOP(CT, LE, GE, NUL)                              \
  do {                                                           \
    const CT *v = (const CT *)(const void *)data + local;        \
    if (p->mode == PR_LE)                                        \
      for (uint64_t i = 0; i < m; i++) mask[i] = (uint8_t)(LE);  \
    else if (p->mode == PR_GE)                                   \
      for (uint64_t i = 0; i < m; i++) mask[i] = (uint8_t)(GE);  \
    else                                                         \
      for (uint64_t i = 0; i < m; i++) mask[i] = (uint8_t)(NUL); \
  } while (0)
#define PRUNE_INT(CT) PRUNE_LOOP(CT, (int64_t)v[i] <= bi, (int64_t)v[i] >= bi, 0 * v[i])
#define PRUNE_FLT(CT, B) PRUNE_LOOP(CT, !(v[i] > B), v[i] >= B, v[i] != v[i])

static void prune_mask(cs_type t, const void *data, uint64_t local, uint64_t m, const oprune *p,
                       uint8_t *restrict mask) {
  const int64_t bi = p->bi;
  const double bf = p->bf;
  const float bf32 = (float)bf; /* exact: the bound is a FLOAT32 column's value */
  switch (t) {
    case CS_TYPE_INT8: PRUNE_INT(int8_t); break;
    case CS_TYPE_INT16: PRUNE_INT(int16_t); break;
    case CS_TYPE_INT32: PRUNE_INT(int32_t); break;
    case CS_TYPE_INT64: PRUNE_INT(int64_t); break;
    case CS_TYPE_UINT16: PRUNE_INT(uint16_t); break;
    case CS_TYPE_UINT32: PRUNE_INT(uint32_t); break;
    case CS_TYPE_FLOAT32: PRUNE_FLT(float, bf32); break;
    case CS_TYPE_FLOAT64: PRUNE_FLT(double, bf); break;
    default: PRUNE_INT(uint8_t); break; /* UINT8, BOOL */
  }
}
#undef PRUNE_FLT
#undef PRUNE_INT
#undef PRUNE_LOOP

/* What the pruned top-k shares between the members of a team. */
typedef struct topk_prune {
  octx *c;
  const oseg *g;
  unsigned rest; /* code bits below the first key's field */
  orec *recs;    /* in visit order */
  uint64_t n_recs;
  topk_state *st;         /* per member */
  okey *keys;             /* per member: a copy of the segment's keys (their record cursors) */
  uint64_t *visited;      /* per member: records read */
  _Atomic uint64_t share; /* the lowest member threshold code (UINT64_MAX: none yet) */
  _Atomic int bad;        /* a candidate's value lay outside the zone maps' range */
} topk_prune;

/* Cuts member t's buffer to the k best and lowers the shared code to its
** threshold; returns the shared code. */
static uint64_t topk_cut_share(topk_prune *P, topk_state *t) {
  topk_cut(t, P->c->limit);
  uint64_t cur = atomic_load_explicit(&P->share, memory_order_relaxed);
  while (t->thr < cur && !atomic_compare_exchange_weak(&P->share, &cur, t->thr)) {
  }
  return t->thr < cur ? t->thr : cur;
}

/* Offers rows (code, j) that passed the first key's test: in when below
** the member's threshold pair and not above the shared code.  Past the
** rows, a buffer that gained half k + 1 since its last cut is cut again:
** the threshold must follow the better rows as they come (a buffer cut
** only when full would keep the first record's threshold while the later,
** sparser candidates trickle in), and each cut costs O(m), so at most a
** few comparisons a candidate. */
static void topk_offer_at(topk_prune *P, topk_state *t, const uint64_t *codes, const uint64_t *js,
                          uint64_t n) {
  uint64_t k = P->c->limit, share = atomic_load_explicit(&P->share, memory_order_relaxed);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t code = codes[i], j = js[i];
    if (code > share || (t->have && (code > t->thr || (code == t->thr && j > t->thr_j)))) continue;
    t->buf[t->m].code = code, t->buf[t->m].j = j;
    if (++t->m == t->cap) share = topk_cut_share(P, t);
  }
  if (t->m >= k + k / 2 + 1) topk_cut_share(P, t);
}

/* Whether nothing in the positions from j of a record bounded by lb can
** enter member t's buffer. */
static bool topk_beyond(const topk_prune *P, const topk_state *t, uint64_t lb, uint64_t j) {
  if (lb > atomic_load_explicit(&P->share, memory_order_relaxed)) return true;
  return t->have && (lb > t->thr || (lb == t->thr && j > t->thr_j));
}

/* The rows [r0, r0 + m) of one record (chunk ch of first key k, the
** record's first row base) that are live, selected by c->preds when eval
** (the record's zone maps left them undecided) and whose first field may
** make a code <= thr (UINT64_MAX: every live row): rows and input positions
** into rows and js; returns how many.  The predicates are read only for a
** block where some row passes the threshold. */
static uint64_t block_candidates(const octx *c, const okey *k, const cs_chunk *ch, uint64_t base, uint64_t r0,
                                 uint64_t m, unsigned rest, uint64_t thr, bool eval, uint64_t *rows,
                                 uint64_t *js) {
  uint8_t mask[ORDER_CHUNK + 8], live[ORDER_CHUNK], sel[ORDER_CHUNK];
  uint64_t local = r0 - base, j0 = r0 - c->first;
  oprune p = thr == UINT64_MAX ? (oprune){PR_ALL, 0, 0} : prune_of(k, rest, thr);
  if (p.mode == PR_ALL)
    memset(mask, 1, m);
  else
    prune_mask(k->type, ch->data, local, m, &p, mask);
  if (ch->validity && p.mode != PR_ALL) {
    if (p.mode == PR_GE)
      for (uint64_t i = 0; i < m; i++) mask[i] &= cs__valid_bit(ch->validity, local + i);
    else
      for (uint64_t i = 0; i < m; i++) mask[i] |= !cs__valid_bit(ch->validity, local + i);
  }
  if (stream_deleted(c, j0, j0 + m, live))
    for (uint64_t i = 0; i < m; i++) mask[i] &= live[i];
  if (eval && memchr(mask, 1, m)) {
    uint64_t scanned = 0, skipped = 0;
    cs__pred_set_eval_span(c->preds, r0, 0, m, sel, UINT64_MAX, &scanned, &skipped);
    for (uint64_t i = 0; i < m; i++) mask[i] &= sel[i];
  }
  memset(mask + m, 0, 8);
  uint64_t nc = 0;
  for (uint64_t i = 0; i < m; i += 8) {
    uint64_t w;
    memcpy(&w, mask + i, 8);
    if (!w) continue;
    for (uint64_t b = i; b < i + 8 && b < m; b++) {
      rows[nc] = r0 + b, js[nc] = j0 + b;
      nc += mask[b];
    }
  }
  return nc;
}

/* Reads record P->recs[v] (the part in the range) for member `member`,
** unless its bound rules it out. */
static void topk_prune_record(void *ctx, uint64_t v, int member) {
  topk_prune *P = ctx;
  const octx *c = P->c;
  const cs_store *s = c->s;
  topk_state *t = &P->st[member];
  okey *keys = P->keys + (size_t)member * c->n_keys, *k = &keys[P->g->k0];
  const orec *o = &P->recs[v];
  uint64_t lo = s->first_rows[o->r], hi = s->first_rows[o->r + 1], end = c->first + c->n;
  lo = lo < c->first ? c->first : lo;
  hi = hi > end ? end : hi;
  if (lo >= hi) return;
  uint64_t lb = o->lb; /* a float record ruled out but for a NaN: is there one? */
  if (o->lb_clean != lb && topk_beyond(P, t, o->lb_clean, lo - c->first) &&
      !rec_has_nan(s, k->col, k->type, o->r))
    lb = o->lb_clean;
  if (topk_beyond(P, t, lb, lo - c->first)) return;
  /* the predicates' zone maps may rule the record out before any key is read */
  int dec = c->preds ? cs__pred_set_record(c->preds, o->r) : 1;
  if (dec == 0) return;
  P->visited[member]++;
  const cs_chunk *ch = &s->chunks[o->r * s->schema.n_cols + k->col];
  uint64_t base = s->first_rows[o->r];
  uint64_t cbuf[ORDER_CHUNK], rows[ORDER_CHUNK], js[ORDER_CHUNK];
  for (uint64_t r0 = lo; r0 < hi; r0 += ORDER_CHUNK) {
    uint64_t r1 = r0 + ORDER_CHUNK < hi ? r0 + ORDER_CHUNK : hi, m = r1 - r0, j0 = r0 - c->first;
    if (topk_beyond(P, t, lb, j0)) return;
    uint64_t share = atomic_load_explicit(&P->share, memory_order_relaxed);
    uint64_t thr = t->have && t->thr < share ? t->thr : share;
    uint64_t nc = block_candidates(c, k, ch, base, r0, m, P->rest, thr, dec < 0, rows, js);
    if (!nc) continue;
    bool ok = true;
    for (uint32_t i = P->g->k0; i < P->g->k1; i++)
      ok &= key_encode(s, &keys[i], rows, NULL, 0, nc, cbuf, i == P->g->k0, NULL);
    if (!ok) {
      atomic_store_explicit(&P->bad, 1, memory_order_relaxed);
      return;
    }
    topk_offer_at(P, t, cbuf, js, nc);
  }
}

/* Per thread: the records the last pruned top-k read and skipped. */
static _Thread_local uint64_t last_visited, last_skipped;
void cs__order_last_prune(uint64_t *visited, uint64_t *skipped) {
  *visited = last_visited, *skipped = last_skipped;
}

/* The top-k of an implicit range over one fixed-width code segment, records
** pruned by their zone maps; on the thread team from tune.team_min rows:
** the records in visit order are the chunks, each member keeps its own
** buffer and (code, position) threshold, and the lowest threshold code is
** shared (a row above it cannot be among the k best: the member that set
** it holds k rows below).  topk_finish picks the k best of the union by
** (code, position), the same rows for any interleaving. */
static int path_topk_pruned(octx *c) {
  const oseg *g = &c->segs[0];
  const cs_store *s = c->s;
  uint64_t k = c->limit, cap = k + (k > 1024 ? k : 1024), total = 0;
  int threads = c->n >= tune.team_min ? cs_kernel_threads(c->n) : 1, rc = ORD_NOMEM;
  if (threads < 1) threads = 1;
  uint64_t r0 = cs__locate(s, c->first), r1 = cs__locate(s, c->first + c->n - 1);
  topk_prune P = {.c = c, .g = g, .rest = g->bits - c->keys[g->k0].bits, .n_recs = r1 - r0 + 1};
  atomic_init(&P.share, UINT64_MAX);
  atomic_init(&P.bad, 0);
  opair *all = NULL;
  P.recs = cs__mem_malloc(P.n_recs * sizeof *P.recs);
  P.st = cs__mem_calloc((size_t)threads, sizeof *P.st);
  P.keys = cs__mem_calloc((size_t)threads * c->n_keys, sizeof *P.keys);
  P.visited = cs__mem_calloc((size_t)threads, sizeof *P.visited);
  if (!P.recs || !P.st || !P.keys || !P.visited) goto done;
  for (uint64_t r = r0; r <= r1; r++) P.recs[r - r0] = orec_make(s, &c->keys[g->k0], P.rest, r);
  qsort(P.recs, P.n_recs, sizeof *P.recs, orec_cmp);
  for (int i = 0; i < threads; i++) {
    if (!(P.st[i].buf = ord_alloc(cap, sizeof(opair)))) goto done;
    P.st[i].cap = cap;
    for (uint32_t q = 0; q < c->n_keys; q++) {
      P.keys[(size_t)i * c->n_keys + q] = c->keys[q];
      P.keys[(size_t)i * c->n_keys + q].cur = (ocur){0, 0, 0, NULL};
    }
  }
  if (threads > 1)
    cs__team_run(threads, P.n_recs, topk_prune_record, &P);
  else
    for (uint64_t v = 0; v < P.n_recs && !atomic_load_explicit(&P.bad, memory_order_relaxed); v++)
      topk_prune_record(&P, v, 0);
  if (atomic_load(&P.bad)) {
    rc = ORD_REDO;
    goto done;
  }
  last_visited = 0;
  for (int i = 0; i < threads; i++) {
    if (P.st[i].m > k) pairs_nth(P.st[i].buf, P.st[i].m, k - 1), P.st[i].m = k;
    total += P.st[i].m;
    last_visited += P.visited[i];
  }
  last_skipped = P.n_recs - last_visited;
  if (!(all = ord_alloc(total ? total : 1, sizeof *all))) goto done;
  uint64_t at = 0;
  for (int i = 0; i < threads; i++) {
    memcpy(all + at, P.st[i].buf, P.st[i].m * sizeof *all);
    at += P.st[i].m;
  }
  rc = topk_finish(c, all, total);
done:
  for (int i = 0; P.st && i < threads; i++) ord_free(P.st[i].buf);
  cs__mem_free(P.recs), cs__mem_free(P.st), cs__mem_free(P.keys), cs__mem_free(P.visited), ord_free(all);
  return rc;
}

/* GROUP or DISTINCT over one wide code segment by hashing: group ids by
** first appearance; ORD_ABANDON past ORDER_HASH_CAP groups. */
typedef struct ohash {
  uint64_t *key;    /* slot codes */
  uint32_t *gid;    /* slot group, ORDER_NONE = empty */
  uint64_t mask;    /* slots - 1 */
  unsigned shift;   /* 64 - log2(slots) */
  uint64_t *gcode;  /* code of each group */
  uint32_t *gfirst; /* first position of each group */
  uint32_t n_groups;
} ohash;

/* The slot a code's probe starts at (Fibonacci hashing). */
static inline uint64_t ohash_home(const ohash *h, uint64_t code) {
  return (code * 0x9E3779B97F4A7C15ull) >> h->shift;
}

static void ohash_free(ohash *h) {
  ord_free(h->key), ord_free(h->gid), cs__mem_free(h->gcode), cs__mem_free(h->gfirst);
}

/* Makes the table `slots` wide (a power of two) and the group arrays room
** for slots / 2 + 1 groups, growing with the table so that an attempt given up
** early touches little memory. */
static bool ohash_resize(ohash *h, uint64_t slots) {
  ord_free(h->key), ord_free(h->gid);
  h->key = ord_alloc(slots, 8);
  h->gid = ord_alloc(slots, 4);
  if (!h->key || !h->gid) return false;
  uint64_t *gc =
      cs__mem_realloc(h->gcode, (slots / 2 + 1) * sizeof *gc); /* + 1: written before the growth check */
  if (!gc) return false;
  h->gcode = gc;
  uint32_t *gf = cs__mem_realloc(h->gfirst, (slots / 2 + 1) * sizeof *gf);
  if (!gf) return false;
  h->gfirst = gf;
  memset(h->gid, 0xFF, slots * 4);
  h->mask = slots - 1;
  h->shift = 64 - (bit_width(slots) - 1);
  for (uint32_t g = 0; g < h->n_groups; g++) {
    uint64_t s = ohash_home(h, h->gcode[g]);
    while (h->gid[s] != ORDER_NONE) s = (s + 1) & h->mask;
    h->key[s] = h->gcode[g], h->gid[s] = g;
  }
  return true;
}

static int path_hash(octx *c) {
  const oseg *g = &c->segs[0];
  uint64_t n = c->n;
  int rc = ORD_NOMEM;
  uint64_t cbuf[ORDER_CHUNK];
  ohash h;
  memset(&h, 0, sizeof h);
  uint32_t *gids = NULL, *cnt = NULL;
  uint64_t *out = NULL;
  opair *reps = NULL, *tmp = NULL;
  if (!ohash_resize(&h, 1024)) goto done;
  bool group = c->mode == CS_ORDER_GROUP;
  if (group && !(gids = ord_alloc(n, 4))) goto done;
  seg_rewind(c, g);
  for (uint64_t j0 = 0; j0 < n; j0 += ORDER_CHUNK) {
    uint64_t j1 = j0 + ORDER_CHUNK < n ? j0 + ORDER_CHUNK : n;
    if (!seg_encode(c, g, NULL, j0, j1, cbuf, NULL)) {
      rc = ORD_REDO;
      goto done;
    }
    for (uint64_t j = j0; j < j1; j++) {
      uint64_t code = cbuf[j - j0];
      uint64_t s = ohash_home(&h, code);
      uint32_t id;
      while ((id = h.gid[s]) != ORDER_NONE && h.key[s] != code) s = (s + 1) & h.mask;
      if (id == ORDER_NONE) {
        /* Past the cap, or when most rows of the first 1/64 began a group
        ** (keys nearly distinct: the table would only grow), sort instead. */
        if (h.n_groups >= tune.hash_cap ||
            (tune.hash_probe && h.n_groups >= tune.hash_probe && h.n_groups > j / 2 && j >= n / 64)) {
          rc = ORD_ABANDON;
          goto done;
        }
        id = h.n_groups++;
        h.key[s] = code, h.gid[s] = id;
        h.gcode[id] = code, h.gfirst[id] = (uint32_t)j;
        if ((uint64_t)h.n_groups * 2 > h.mask + 1 && !ohash_resize(&h, (h.mask + 1) * 2)) goto done;
      }
      if (group) gids[j] = id;
    }
  }
  uint64_t d = h.n_groups, keep = d < c->limit ? d : c->limit;
  if (group) { /* counting sort by group id: groups in first-appearance order */
    cnt = ord_alloc(d + 1, 4);
    out = ord_alloc(n, 8);
    if (!cnt || !out) goto done;
    memset(cnt, 0, (d + 1) * 4);
    for (uint64_t j = 0; j < n; j++) cnt[gids[j]]++;
    uint32_t sum = 0;
    for (uint64_t v = 0; v <= d; v++) {
      uint32_t x = v < d ? cnt[v] : 0;
      cnt[v] = sum;
      sum += x;
    }
    uint64_t m = cnt[keep];
    for (uint64_t j = 0; j < n; j++)
      if (gids[j] < keep) out[cnt[gids[j]]++] = c->rows[j];
    memcpy(c->rows, out, m * 8);
    c->n_out = m;
  } else { /* DISTINCT: the first rows, sorted by code */
    reps = ord_alloc(d, sizeof *reps);
    tmp = ord_alloc(d, sizeof *tmp);
    out = ord_alloc(d, 8);
    if (!reps || !tmp || !out) goto done;
    for (uint64_t v = 0; v < d; v++) reps[v].code = h.gcode[v], reps[v].j = h.gfirst[v];
    pairs_sort(reps, tmp, d);
    for (uint64_t t = 0; t < keep; t++) out[t] = c->rows[reps[t].j];
    memcpy(c->rows, out, keep * 8);
    c->n_out = keep;
  }
  rc = ORD_OK;
done:
  ohash_free(&h);
  ord_free(gids), ord_free(cnt), ord_free(out), ord_free(reps), ord_free(tmp);
  return rc;
}

/* Any keys: a stable sort per segment from the last to the first, carrying
** the permutation; DISTINCT and GROUP's limit then find where key tuples
** change by re-encoding each segment in the final order. */
static int path_segments(octx *c) {
  uint64_t n = c->n;
  uint32_t *perm = NULL;
  int rc = ORD_OK;
  for (uint32_t si = c->n_segs; si-- > 0;) {
    const oseg *g = &c->segs[si];
    osorted r;
    rc = g->wide ? seg_sort_wide(c, &c->keys[g->k0], perm, &r) : seg_sort_codes(c, g, perm, &r);
    if (rc != ORD_OK) {
      sorted_free(&r);
      ord_free(perm);
      return rc;
    }
    uint32_t *order = r.order;
    if (perm)
      for (uint64_t t = 0; t < n; t++) order[t] = perm[order[t]];
    for (int b = 0; b < 4; b++)
      if (r.bufs[b] != order) ord_free(r.bufs[b]);
    ord_free(perm);
    perm = order;
  }
  uint8_t *start = NULL;
  uint64_t *codes = NULL, *out = NULL;
  uint8_t *nulls = NULL;
  oref *refs = NULL;
  rc = ORD_NOMEM;
  if (c->mode != CS_ORDER_SORT && (c->mode == CS_ORDER_DISTINCT || c->limit < n)) {
    start = ord_alloc(n, 1);
    if (!start) goto done;
    memset(start, 0, n);
    start[0] = 1;
    for (uint32_t si = 0; si < c->n_segs; si++) {
      const oseg *g = &c->segs[si];
      if (g->wide) {
        if (!refs && !(refs = ord_alloc(n, sizeof *refs))) goto done;
        refs_read(c->s, &c->keys[g->k0], c->rows, perm, n, refs);
        for (uint64_t t = 1; t < n; t++) start[t] |= !refs_equal(refs[t], refs[t - 1]);
        continue;
      }
      if (!codes && !(codes = ord_alloc(n, 8))) goto done;
      if (g->split && !nulls && !(nulls = ord_alloc(n, 1))) goto done;
      seg_rewind(c, g);
      bool ok = seg_encode(c, g, perm, 0, n, codes, g->split ? nulls : NULL);
      assert(ok); /* the sort checked the ranges already */
      (void)ok;
      for (uint64_t t = 1; t < n; t++)
        start[t] |= codes[t] != codes[t - 1] || (g->split && nulls[t] != nulls[t - 1]);
    }
  }
  ord_free(codes), ord_free(nulls), ord_free(refs);
  codes = NULL, nulls = NULL, refs = NULL;
  if (!(out = ord_alloc(n, 8))) goto done;
  uint64_t m = 0;
  if (!start) {
    m = c->mode == CS_ORDER_SORT && c->limit < n ? c->limit : n;
    for (uint64_t t = 0; t < m; t++) out[t] = c->rows[perm[t]];
  } else {
    uint64_t groups = 0;
    for (uint64_t t = 0; t < n; t++) {
      if (start[t] && groups++ == c->limit) break;
      if (c->mode == CS_ORDER_DISTINCT && !start[t]) continue;
      out[m++] = c->rows[perm[t]];
    }
  }
  memcpy(c->rows, out, m * 8);
  c->n_out = m;
  rc = ORD_OK;
done:
  ord_free(perm), ord_free(start), ord_free(codes), ord_free(nulls), ord_free(refs);
  ord_free(out);
  return rc;
}

/* The switch points order_run and range_stream share: a top-k in one pass
** for a SORT whose limit is small against the rows; counting while the
** count array has at most two entries per row (or 2^16), so that its prefix
** pass is amortised. */
static bool topk_fits(cs_order_mode mode, uint64_t limit, uint64_t n) {
  return mode == CS_ORDER_SORT && tune.topk_ratio && limit <= n / tune.topk_ratio;
}

static bool counting_fits(const oseg *g, uint64_t n) {
  return (int)g->bits <= tune.count_bits && ((uint64_t)1 << g->bits) <= 2 * (n > 32768 ? n : 32768);
}

/* Picks the path for the current key layout; *path names it. */
static int order_run(octx *c, int *path) {
  segs_plan(c);
  const oseg *g = &c->segs[0];
  if (c->counts) { /* cs_order_count: the counting sort or nothing */
    if (c->n_segs != 1 || g->wide || g->split || !counting_fits(g, c->n)) return ORD_ABANDON;
    if (((uint64_t)1 << g->bits) < c->min_codes) return ORD_ABANDON;
    return *path = PATH_COUNTING, path_counting(c);
  }
  if (c->n_segs == 1 && !g->wide && !g->split) {
    if (topk_fits(c->mode, c->limit, c->n)) return *path = PATH_TOPK, path_topk(c);
    if (counting_fits(g, c->n)) return *path = PATH_COUNTING, path_counting(c);
    if (c->mode != CS_ORDER_SORT && tune.hash_cap) {
      *path = PATH_HASH;
      int rc = path_hash(c);
      if (rc != ORD_ABANDON) return rc;
    }
    return *path = PATH_RADIX, path_sorted_one(c);
  }
  return *path = PATH_SEGMENTS, path_segments(c);
}

/* ------------------------------------------------------------------- API */

/* Key i as the caller gave it: column, type, direction, whether NULL (or
** a NaN) can occur.  Its kind and range are the caller's to set. */
static void key_init(const cs_store *s, okey *k, const cs_order_key *key) {
  k->col = key->col;
  k->type = s->cols[k->col].type;
  k->desc = key->desc;
  k->nullable = s->cols[k->col].nullable || cs_type_is_float(k->type);
}

static cs_rc order_args_check(const cs_store *s, const cs_order_key *keys, uint32_t n_keys,
                              cs_order_mode mode, uint64_t nr, cs_err *err) {
  if ((unsigned)mode > CS_ORDER_DISTINCT)
    return cs_err_set(err, CS_EINVAL, "colstore: unknown order mode %d", (int)mode);
  for (uint32_t i = 0; i < n_keys; i++)
    if (keys[i].col >= s->schema.n_cols)
      return cs_err_set(err, CS_EINVAL, "colstore: order key %u: column %u out of range (%u columns)", i,
                        keys[i].col, s->schema.n_cols);
  if (nr > UINT32_MAX)
    return cs_err_set(err, CS_EINVAL, "colstore: cannot order %llu rows at once (at most %u)",
                      (unsigned long long)nr, UINT32_MAX);
  return CS_OK;
}

/* The top-k (SORT) or the distinct rows (DISTINCT, keys of a small range)
** of rows [first, first + n) without their positions written: CS_OK with
** *done, or *done false when it does not apply here (keys that are not one
** fixed-width segment, too wide a range to count, zone maps that did not
** hold). */
static cs_rc range_stream(const cs_store *s, const cs__pred_set *preds, const cs_order_key *keys,
                          uint32_t n_keys, cs_order_mode mode, uint64_t first, uint64_t n, uint64_t limit,
                          uint64_t *rows, uint64_t *n_out, bool *done) {
  *done = false;
  octx c;
  memset(&c, 0, sizeof c);
  c.s = s, c.n_keys = n_keys, c.rows = rows, c.implicit = true, c.first = first, c.n = n, c.mode = mode;
  c.limit = limit, c.preds = preds;
  cs_rc rc = CS_ENOMEM;
  c.keys = cs__mem_calloc(n_keys, sizeof *c.keys);
  c.segs = ord_alloc(n_keys, sizeof *c.segs);
  if (!c.keys || !c.segs) goto out;
  uint64_t r0 = cs__locate(s, first), r1 = cs__locate(s, first + n - 1);
  for (uint32_t i = 0; i < n_keys; i++) {
    key_init(s, &c.keys[i], &keys[i]);
    c.keys[i].kind = KEY_FIXED;
    key_bounds_zone(s, &c.keys[i], r0, r1);
  }
  segs_plan(&c);
  rc = CS_OK;
  const oseg *g = &c.segs[0];
  if (c.n_segs != 1 || g->wide || g->split) goto out;
  if (mode == CS_ORDER_DISTINCT && !counting_fits(g, n)) goto out;
  int orc = mode == CS_ORDER_SORT ? path_topk_pruned(&c) : path_counting(&c);
  if (orc == ORD_NOMEM) rc = CS_ENOMEM;
  if (orc == ORD_OK) {
    *n_out = c.n_out;
    *done = true;
    last_path = mode == CS_ORDER_SORT ? "topk+range" : "counting+range";
  }
out:
  cs__mem_free(c.keys), ord_free(c.segs);
  return rc;
}

/* The live rows of [first, first + n) whose first key's field is at most
** thr (first key k alone, range from the zone maps), ascending, into rows
** (room for n); records whose bound exceeds thr are not read. */
static uint64_t range_collect(const octx *c, const okey *k, uint64_t thr, uint64_t *rows) {
  const cs_store *s = c->s;
  uint64_t r0 = cs__locate(s, c->first), r1 = cs__locate(s, c->first + c->n - 1), end = c->first + c->n,
           nc = 0;
  uint64_t js[ORDER_CHUNK];
  for (uint64_t r = r0; r <= r1; r++) {
    orec o = orec_make(s, k, 0, r);
    if (o.lb > thr || (o.lb_clean > thr && !rec_has_nan(s, k->col, k->type, r))) continue;
    int dec = c->preds ? cs__pred_set_record(c->preds, r) : 1;
    if (dec == 0) continue;
    const cs_chunk *ch = &s->chunks[r * s->schema.n_cols + k->col];
    uint64_t base = s->first_rows[r], lo = base < c->first ? c->first : base;
    uint64_t hi = s->first_rows[r + 1] < end ? s->first_rows[r + 1] : end;
    for (uint64_t b0 = lo; b0 < hi; b0 += ORDER_CHUNK) {
      uint64_t m = hi - b0 < ORDER_CHUNK ? hi - b0 : ORDER_CHUNK;
      nc += block_candidates(c, k, ch, base, b0, m, 0, thr, dec < 0, rows + nc, js);
    }
  }
  return nc;
}

/* A top-k by several keys whose first is fixed-width but which do not make
** one code segment (ORDER BY b, a: 10 + 64 bits): the pruned top-k by the
** first key alone finds its k-th value, and only the rows whose first key
** is at most that value can be among the k best by all keys (any other row
** has k rows before it on the first key).  Those rows, ascending, go into
** rows for cs_order_rows; *done false (rows undefined) when fewer than k
** live rows or the zone maps did not hold. */
static cs_rc range_candidates(const cs_store *s, const cs__pred_set *preds, const cs_order_key *key0,
                              uint64_t first, uint64_t n, uint64_t limit, uint64_t *rows, uint64_t *n_out,
                              bool *done) {
  *done = false;
  octx c;
  okey k;
  oseg g;
  memset(&c, 0, sizeof c);
  memset(&k, 0, sizeof k);
  c.s = s, c.keys = &k, c.segs = &g, c.n_keys = 1, c.rows = rows, c.implicit = true, c.first = first, c.n = n;
  c.mode = CS_ORDER_SORT, c.limit = limit, c.preds = preds;
  key_init(s, &k, key0);
  k.kind = KEY_FIXED;
  key_bounds_zone(s, &k, cs__locate(s, first), cs__locate(s, first + n - 1));
  segs_plan(&c);
  if (g.split) return CS_OK;
  int orc = path_topk_pruned(&c);
  if (orc == ORD_NOMEM) return CS_ENOMEM;
  if (orc != ORD_OK || !c.have_kth) return CS_OK;
  *n_out = range_collect(&c, &k, c.kth, rows);
  *done = true;
  return CS_OK;
}

/* The paths of cs_order_range and cs_order_select that read the keys
** straight from the columns: *done false when none applies (rows then
** undefined).  With preds, DISTINCT is left to the caller (the counting
** pass does not test predicates). */
static cs_rc range_paths(const cs_store *s, const cs__pred_set *preds, const cs_order_key *keys,
                         uint32_t n_keys, cs_order_mode mode, uint64_t first, uint64_t n, uint64_t *rows,
                         uint64_t *n_out, uint64_t limit, bool *done, cs_err *err) {
  *done = false;
  bool fixed = n_keys > 0;
  for (uint32_t i = 0; i < n_keys; i++) fixed &= !cs_type_is_varlen(s->cols[keys[i].col].type);
  bool topk = topk_fits(mode, limit, n);
  cs_rc rc;
  /* The streaming paths skip deleted positions chunk by chunk
  ** (stream_deleted); the others get the range written out and filtered. */
  if ((topk || (mode == CS_ORDER_DISTINCT && !preds)) && fixed && limit > 0 && n > 1) {
    if ((rc = range_stream(s, preds, keys, n_keys, mode, first, n, limit, rows, n_out, done)) != CS_OK)
      return cs_err_set(err, rc, "colstore: out of memory ordering %llu rows", (unsigned long long)n);
    if (*done) return CS_OK;
  }
  if (topk && n_keys > 1 && !cs_type_is_varlen(s->cols[keys[0].col].type) && limit > 0 && n > 1) {
    if (range_candidates(s, preds, &keys[0], first, n, limit, rows, n_out, done) != CS_OK)
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory ordering %llu rows", (unsigned long long)n);
    if (*done) return cs_order_rows(s, keys, n_keys, mode, rows, n_out, limit, err);
  }
  return CS_OK;
}

cs_rc cs_order_select(const cs_selector *sel, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                      uint64_t first, uint64_t n, uint64_t *rows, uint64_t *n_out, uint64_t limit, bool *done,
                      cs_err *err) {
  const cs_store *s = cs__selector_store(sel);
  *done = false;
  cs_rc rc = order_args_check(s, keys, n_keys, mode, 0, err);
  /* more rows than one call orders: the caller's selection may hold fewer */
  if (rc != CS_OK || mode != CS_ORDER_SORT || n > UINT32_MAX) return rc;
  if (limit == 0) {
    *n_out = 0, *done = true;
    return CS_OK;
  }
  return range_paths(s, cs__selector_preds(sel), keys, n_keys, mode, first, n, rows, n_out, limit, done, err);
}

cs_rc cs_order_range(const cs_store *s, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                     uint64_t first, uint64_t n, uint64_t *rows, uint64_t *n_out, uint64_t limit,
                     cs_err *err) {
  cs_rc rc = order_args_check(s, keys, n_keys, mode, n, err);
  if (rc != CS_OK) return rc;
  bool done;
  if ((rc = range_paths(s, NULL, keys, n_keys, mode, first, n, rows, n_out, limit, &done, err)) != CS_OK ||
      done)
    return rc;
  for (uint64_t j = 0; j < n; j++) rows[j] = first + j;
  *n_out = cs_store_filter_deleted(s, rows, n);
  return cs_order_rows(s, keys, n_keys, mode, rows, n_out, limit, err);
}

/* cs_order_rows, and with counts (cs_order_count) the counting sort's
** codes and starts instead of the reorder (rows then untouched; *done
** false when the key does not take the counting sort). */
static cs_rc order_rows(const cs_store *s, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                        uint64_t *rows, uint64_t first, uint64_t *n, uint64_t limit, cs_order_counts *counts,
                        uint32_t min_codes, bool *done, cs_err *err) {
  uint64_t nr = *n;
  cs_rc crc = order_args_check(s, keys, n_keys, mode, nr, err);
  if (crc != CS_OK) return crc;
  /* Nothing to reorder: no rows, no keys, or one row. */
  last_path = "none";
  if (nr == 0 || limit == 0) {
    *n = 0;
    return CS_OK;
  }
  if (n_keys == 0 || nr == 1) {
    if (mode == CS_ORDER_SORT)
      *n = nr < limit ? nr : limit;
    else if (mode == CS_ORDER_DISTINCT || nr == 1)
      *n = 1;
    return CS_OK;
  }
  octx c;
  memset(&c, 0, sizeof c);
  c.s = s, c.n_keys = n_keys, c.rows = rows, c.n = nr, c.mode = mode, c.limit = limit, c.counts = counts;
  c.min_codes = min_codes;
  c.implicit = rows == NULL, c.first = first; /* cs_order_count over a range: fixed-width keys only */
  cs_rc rc = CS_ENOMEM;
  int orc = ORD_NOMEM;
  c.keys = cs__mem_calloc(n_keys, sizeof *c.keys);
  c.segs = ord_alloc(n_keys, sizeof *c.segs);
  c.hist = ord_alloc((uint64_t)(ORDER_MAX_DIGITS + ORDER_MSD_LEVELS) << ORDER_MAX_DIGIT_BITS, sizeof *c.hist);
  if (!c.keys || !c.segs || !c.hist) goto done;
  /* Zone maps over the records the selection spans when it looks ascending. */
  uint64_t r0 = 0, r1 = s->n_records - 1;
  if (!rows)
    r0 = cs__locate(s, first), r1 = cs__locate(s, first + nr - 1);
  else if (rows[0] <= rows[nr - 1])
    r0 = cs__locate(s, rows[0]), r1 = cs__locate(s, rows[nr - 1]);
  for (uint32_t i = 0; i < n_keys; i++) {
    okey *k = &c.keys[i];
    key_init(s, k, &keys[i]);
    if (cs_type_is_varlen(k->type)) {
      k->kind = KEY_WIDE;
      orc = tune.dict_cap ? dict_build(s, k, rows, nr) : ORD_ABANDON;
      if (orc == ORD_NOMEM) goto done;
    } else {
      k->kind = KEY_FIXED;
      key_bounds_zone(s, k, r0, r1);
    }
  }
  int path = 0, flags = 0;
  orc = order_run(&c, &path);
  if (orc == ORD_REDO && !rows)
    orc = ORD_ABANDON;   /* over a range: the caller writes the rows and asks again */
  if (orc == ORD_REDO) { /* a zone map did not hold: exact ranges, once */
    for (uint32_t i = 0; i < n_keys; i++)
      if (c.keys[i].kind == KEY_FIXED) key_bounds_exact(s, &c.keys[i], rows, nr);
    orc = order_run(&c, &path);
    assert(orc != ORD_REDO);
    flags |= 4;
  }
  for (uint32_t i = 0; i < n_keys; i++)
    flags |= c.keys[i].kind == KEY_DICT ? 1 : c.keys[i].kind == KEY_WIDE ? 2 : 0;
  last_path = path_names[path][flags];
  if (orc == ORD_OK && !counts) *n = c.n_out;
  if (orc == ORD_OK || orc == ORD_ABANDON) rc = CS_OK;
  if (done) *done = orc == ORD_OK;
done:
  if (c.keys)
    for (uint32_t i = 0; i < n_keys; i++) ord_free(c.keys[i].ids), ord_free(c.keys[i].rank);
  cs__mem_free(c.keys), ord_free(c.segs), ord_free(c.hist);
  if (rc == CS_ENOMEM)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory ordering %llu rows", (unsigned long long)nr);
  return rc;
}

cs_rc cs_order_rows(const cs_store *s, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                    uint64_t *rows, uint64_t *n, uint64_t limit, cs_err *err) {
  return order_rows(s, keys, n_keys, mode, rows, 0, n, limit, NULL, 0, NULL, err);
}

cs_rc cs_order_count(const cs_store *s, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                     const uint64_t *rows, uint64_t first, uint64_t n, uint32_t min_codes,
                     cs_order_counts *out, bool *done, cs_err *err) {
  memset(out, 0, sizeof *out);
  *done = false;
  /* Nothing to count (the caller's cs_order_rows is then trivial), or a
  ** mode that does not deliver every row. */
  if (n < 2 || n_keys == 0 || mode == CS_ORDER_DISTINCT) return CS_OK;
  if (!rows) { /* a range: fixed-width keys (a dictionary reads rows), no deleted row in it */
    if (first > cs_store_rows(s) || n > cs_store_rows(s) - first || cs_store_deleted_in(s, first, n) > 0)
      return CS_OK;
    for (uint32_t i = 0; i < n_keys; i++)
      if (keys[i].col >= s->schema.n_cols || cs_type_is_varlen(s->cols[keys[i].col].type)) return CS_OK;
  }
  /* order_rows never writes rows when it counts. */
  uint64_t nr = n;
  cs_rc rc = order_rows(s, keys, n_keys, mode, (uint64_t *)(uintptr_t)rows, first, &nr, CS_ORDER_NO_LIMIT,
                        out, min_codes, done, err);
  if (rc != CS_OK || !*done) cs_order_counts_free(out);
  return rc;
}

void cs_order_counts_free(cs_order_counts *c) {
  ord_free(c->codes), ord_free(c->starts);
  memset(c, 0, sizeof *c);
}
