/*
** cs_agg.c - aggregation: counts, sums, averages, minima and maxima of a
** store's columns over the rows a selection picks, grouped by key columns
** or not, for the colstore_agg module (issue 10).
**
** HOW IT WORKS.  The rows are walked record by record.  A record's zone
** maps decide it first (cs__pred_set_record): ruled out, it is skipped
** without touching data; proven true for every row, and the aggregate
** ungrouped and the record wholly inside the call with no caller mask and
** no deleted row, it is answered from per-record statistics; otherwise its
** rows are read in pieces of AGG_PIECE rows that stay in L1/L2: the
** predicates write a byte mask of the piece (the selector's own code), the
** caller's mask is ANDed in, the record's deleted positions are cleared,
** and every aggregate is computed from that mask directly.  Positions are
** never made.  Ungrouped, each column is reduced by a branch-free loop
** over the piece (`#pragma omp simd`, and an AVX2 clone like cs_pred.c's
** kernels): masked-out values become the reduction's identity.  Grouped,
** the piece's rows first get a group id each (gid), then each column is
** scattered into its group's accumulator ("cell"), again masked, so every
** kind of key shares the accumulation loops:
**
**   direct index: integer/BOOL keys whose ranges in the store's zone maps
**     pack into at most AGG_DIRECT_MAX codes (and not many more than the
**     rows added): each key's field is key - min, or one field past its
**     range for NULL, and the fields are mixed-radix digits of one code
**     (as cs_order.c packs its keys, but with radix range + 1, so GROUP BY
**     b, d with b in 0..999 and d in 0..1 is 1001 * 3 codes); gid = code.
**     No hashing, no probing; a group exists when its slot has rows.  A
**     value outside the zone maps (a damaged store) is counted in its
**     key's NULL field, never written out of bounds.
**   packed hash: the same codes when there are more of them (up to 2^64):
**     an open-addressing table of group ids keyed by the code itself, which
**     is its own hash (Fibonacci-hashed to a slot); one integer compare per
**     probe, keys decoded from the code at the end.
**   bytes hash: one TEXT/BLOB key.  Up to 16 bytes a key is exactly its
**     length and its bytes zero-padded into two words (two loads, masked:
**     no branch on the length), hashed by two multiplies and compared as
**     three integers; longer keys are XXH3-hashed and memcmp-compared.
**     The table is the dictionary of the distinct values, and the id it
**     gives a row is the row's group, so no tuple is built.  Read in place
**     (a range, not a list), the table is fronted by a dictionary per
**     record (piece_gids_dict): each team member keeps, for the record it
**     reads, the keys it met there and their group ids, in 2,048 slots of
**     32 bytes; a row whose key is in it costs one multiply, one probe and
**     three compares, with no pointer or length made for it (the key column
**     is read straight from its offsets when nothing else reads it), and
**     only the first row of each distinct key of a record goes to the
**     table.  The dictionary maps to the table's group ids, not to codes of
**     its own: the ids stay valid for the whole call, so the rows are
**     accumulated straight into the table and nothing is merged at the end
**     of a record.  Its bound is 1,024 keys a record; a record with more
**     stops adding, and once it misses more rows than it finds, the rest of
**     it goes to the table row by row, as before (bounded memory, no
**     quadratic case; docs/performance.md has the high-cardinality numbers).
**     In front of both, over ranges, the dictionary codes of the key
**     column, cached on the snapshot (kernels/cs_codes.c): a record with at
**     most 256 distinct values (NULL one of them) has a code per row and
**     the list of its values, built the first time a query reads it.  Its
**     values' groups are looked up in the member's table the first time a
**     selected row has them (codes_group), into a map of the record's
**     codes (sc->cmap); then a row's group is cmap[code]: a byte load and a
**     4-byte load, the key's bytes not read (piece_gids_codes).  A record
**     with more values, over the budget, or a list, takes the dictionary.
**   hash: any other key (floats with NaN as NULL and -0.0 as 0.0, tuples of
**     up to 16 columns mixing types): each key cell hashed with XXH3, the
**     row's hash chained over the key columns; the table's groups keep
**     their key cells.
**   In every hash table (linear probing, load <= 1/2) group 0 is a sink:
**     unselected rows point at it with a zero mask, so the scatter loops
**     need no branch.
**
** DELETIONS.  A deleted position yields no row (colstore.h, "deletions"):
** it is never aggregated, on any path.  A range clears a record's deleted
** positions from each piece's mask (cs_store_mask_deleted; a piece with
** neither predicates nor a caller's mask then gets a mask of its own
** instead of the all-ones one), a list clears the mask bytes of its
** deleted rows (a duplicate of a live row still counts each time), and a
** record whose every row is deleted is skipped like one the zone maps rule
** out.  A record with deletions is never answered from the per-record
** statistics: they, and the chunks' null counts and min/max, describe
** every position, deleted or not; it is read instead (subtracting the
** deleted values would need their sum, min and max all the same).  Zone
** maps still skip records: they are bounds, widened at worst by deleted
** values.  A record without deletions pays one NULL test, and a store
** without any one test per record and per piece of a list.
**
** PER GROUP.  With few groups (AGG_FEW_GROUPS) a piece is accumulated by
** one masked, vectorised pass per group, as if ungrouped; else each row is
** scattered into its group's cells.  The passes cost one pass per group,
** so few groups that share the rows evenly (at least three holding rows,
** none more than a third, by the member's counts so far) are scattered
** instead, into four copies of each group's cells (row i into copy i % 4,
** the copies merged after the piece: piece_lanes), which cuts the chain
** a plain scatter makes through one group's cells in memory.  A group that
** takes most rows (d's 90% zeros) keeps the passes: there the lanes lost.
**
** THE NUMBERS.  Every switch point above (direct index against packed
** hash, masked passes against scatter, the dictionary per record, the
** lanes, the dictionary codes) was chosen by bench/bench_agg.c; the
** measurements are in docs/performance.md, "Aggregation: the measurements
** behind cs_agg.c's switch points".
**
** SUMS.  Integer sums are exact in 128 bits.  The ungrouped loops stay
** vectorisable by summing 64-bit lanes: narrow types directly (a piece of
** 4096 values of at most 32 bits cannot overflow int64), INT64 as the sum
** of its high and low 32-bit halves after flipping the sign bit (unsigned,
** no overflow, recombined in 128 bits).  Float sums are Neumaier
** (Kahan-Babuska) compensated, in 8 independent lanes per piece, so they
** vectorise too; an infinite total keeps no compensation (it would be NaN).
**
** PER-RECORD STATISTICS AND CODES.  The format stores min, max and a null count per
** chunk, but no sum, and its null count does not count NaN, which SQLite
** reads as NULL (the writer's zone maps skip NaN).  So the exact count,
** sum, min and max of every record of a column are computed here, the
** first time an aggregate needs them, with the same piece kernels, and
** cached on the store object (its derived-data slot, set by compare-and-swap: two
** racing aggregates may both compute, one keeps its copy).  A store is an
** immutable snapshot, so the cache never goes stale: a deletion commits a
** new snapshot, with a cache of its own, and the statistics of a record
** with deletions (computed over all its positions, like the format's) are
** never used (see DELETIONS).  Persisting these statistics in the format
** is for a later format version.  Integer columns need the cache only for
** sums: their count is rows - null_count and their min/max the zone maps
** (exact: the writer computes them over the valid values).  A TEXT/BLOB
** column's dictionary codes are the kernels' (kernels/cs_codes.c, the
** snapshot's kernels slot, shared with the predicates): per snapshot for
** the same reason, so an update's patched chunks, which only a new
** snapshot (or a view, a snapshot of its own) shows, are never read
** through old codes.
**
** DETERMINISM.  The work is cut into chunks of AGG_CHUNK_ROWS rows of the
** call, a fixed size (never a function of the thread count), and each
** record is processed whole by the chunk holding its first row (or the
** call's first row).  A record's partial is the sequential merge of its
** pieces' partials, pieces starting at the record's first row; the cache
** computes a whole record exactly so.  Ungrouped partials are kept per
** chunk and merged in chunk order.  Ungrouped results are therefore
** bit-identical for any thread count, and whether a record came from the
** cache or from its data (deletions included: what a record gives depends
** on the record alone).  Grouped, each team member fills its own table
** and the tables are merged at the end: integers exact, floats may differ
** in the last bits with the thread count, and the order of groups varies.
**
** The choice a newcomer might question: one record is never split between
** team members.  With the default 65,536-row records a 10M-row store has
** 153 of them, plenty for any thread count; a store written with huge
** records aggregates each on one thread.  In exchange, the per-record
** statistics and the data path give identical answers (see above).
*/
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cs_agg_internal.h"
#include "cs_kernels_internal.h"

/* xxhash.h inlined here as in cs_util.c (XXH_INLINE_ALL makes every XXH
** function static, so nothing leaks): key hashing sits in the per-row loop,
** where a call per key cell would cost as much as the hash. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Rows per piece: a mask, a group id per row, validity bytes and the
** values of a piece stay in L1/L2 while every column is accumulated. */
#define AGG_PIECE 4096u
/* Rows of the call per team chunk (a fixed size: see DETERMINISM). */
#define AGG_CHUNK_ROWS 65536u
/* Entries of a row list per team chunk. */
#define AGG_CHUNK_LIST 16384u
/* Direct indexing up to this many key values (see agg_direct_ok). */
#define AGG_DIRECT_MAX (1u << 16)
/* Up to this many groups (direct slots, or hash groups so far), a piece is
** accumulated by one masked pass per group instead of a scatter. */
#define AGG_FEW_GROUPS 8u
/* First hash table: groups and slots. */
#define AGG_HASH_FIRST 256u
/* A record's dictionary of one TEXT/BLOB key (see piece_gids_dict): at most
** AGG_DICT_MAX distinct keys in 2 * AGG_DICT_MAX slots (load <= 1/2). */
#define AGG_DICT_BITS 11u
#define AGG_DICT_SLOTS (1u << AGG_DICT_BITS)
#define AGG_DICT_MAX (AGG_DICT_SLOTS / 2)
/* The scatter into lanes (piece_lanes): copies of each group's cells, and
** the most groups it can serve (the knob's limit; by default it serves up
** to AGG_FEW_GROUPS, the groups it competes for with the masked passes). */
#define AGG_LANES 4u
#define AGG_LANE_GROUPS 64u
/* The most bytes the dictionary codes of one store column may hold
** (kernels/cs_codes.c: about 1.06 bytes a row, so some 250 million rows). */
#define AGG_CODES_BYTES CS__CODES_BYTES

#define AGG_MINMAX (CS_AGG_MIN | CS_AGG_MAX)

__extension__ typedef __int128 agg_i128;

enum { DOM_INT, DOM_DBL, DOM_BYTES };
/* The kinds of aggregate; from K_PACKED on, the groups live in a hash table. */
enum { K_NONE, K_UNGROUPED, K_DIRECT, K_PACKED, K_BYTES, K_HASH };

static bool kind_hashed(int kind) { return kind >= K_PACKED; }

static cs__agg_tuning tune = {AGG_DIRECT_MAX, AGG_FEW_GROUPS, AGG_DICT_MAX, AGG_FEW_GROUPS, AGG_CODES_BYTES};

void cs__agg_tuning_default(cs__agg_tuning *out) {
  cs__agg_tuning d = {AGG_DIRECT_MAX, AGG_FEW_GROUPS, AGG_DICT_MAX, AGG_FEW_GROUPS, AGG_CODES_BYTES};
  *out = d;
}

void cs__agg_tuning_set(const cs__agg_tuning *t) {
  if (t)
    tune = *t;
  else
    cs__agg_tuning_default(&tune);
  if (tune.dict_max > AGG_DICT_MAX) tune.dict_max = AGG_DICT_MAX;
  if (tune.lane_groups > AGG_LANE_GROUPS) tune.lane_groups = AGG_LANE_GROUPS;
}

void cs__agg_tuning_get(cs__agg_tuning *out) { *out = tune; }

/* One column's accumulator in one group (or one record's statistics). */
typedef struct agg_cell {
  uint64_t cnt; /* non-NULL (and non-NaN) values */
  union {
    struct {
      uint64_t lo;
      uint64_t hi;
    } i; /* integer sum, 128-bit two's complement */
    struct {
      double s, c;
    } f; /* Neumaier sum and its compensation */
    struct {
      uint64_t min_n, max_n;
    } n; /* TEXT/BLOB: the lengths of min and max */
  } u;
  union {
    int64_t i;        /* integers: sentinel INT64_MAX / INT64_MIN while empty */
    double f;         /* floats: +inf / -inf while empty */
    const uint8_t *p; /* bytes: valid when cnt > 0; into the mapping */
  } min, max;
} agg_cell;

/* A column the aggregate reads (a key, a value, or both). */
typedef struct agg_col {
  uint32_t col;
  cs_type type;
  int dom;
  size_t width; /* 0 for TEXT/BLOB */
  bool
      lazy; /* the bytes kernel's key and nothing else: read through its offsets, no pointers and lengths made */
} agg_col;

/* A value column: what to compute, and where its reading lives. */
typedef struct agg_val {
  uint32_t col;
  uint32_t u; /* index in ucols */
  cs_type type;
  int dom;
  unsigned what;
} agg_val;

/* One column over one piece: fixed-width values in place (or gathered),
** validity as bytes, TEXT/BLOB as pointers and lengths. */
typedef struct agg_view {
  const void *x;
  const uint8_t *valid; /* 1 = not NULL; NULL = no NULLs */
  const uint8_t **bp;
  uint64_t *bn;
  const uint8_t
      *end; /* TEXT/BLOB in place: the end of the chunk's bytes (reads up to it are safe); else NULL */
  const int64_t *off;  /* TEXT/BLOB in place: the piece's n + 1 offsets (unclamped); else NULL */
  const uint8_t *data; /* TEXT/BLOB in place: the chunk's bytes */
  uint64_t db;         /* TEXT/BLOB in place: bytes at data */
} agg_view;

/* A key tuple, for probing and merging. */
typedef struct agg_tuple {
  uint64_t v[CS_AGG_MAX_KEYS]; /* integer, canonical double bits, or byte length */
  const uint8_t *p[CS_AGG_MAX_KEYS];
  uint8_t null[CS_AGG_MAX_KEYS];
} agg_tuple;

/* Groups and their cells.  Direct: slot = packed code, n = cap = codes.
** Hashed kinds: ids 1..n-1 (0 the sink), slots of ids; a packed key's
** ghash is the code itself, a TEXT/BLOB key's first 16 bytes are kw. */
typedef struct agg_table {
  uint64_t cap;                        /* groups with room */
  uint64_t n;                          /* groups in use (hash: including the sink) */
  uint64_t *rows;                      /* [cap] rows per group */
  agg_cell *cells;                     /* [cap * nv], group-major */
  uint64_t *ghash;                     /* hash: [cap] */
  uint64_t *kv[CS_AGG_MAX_KEYS];       /* hash: [cap] per key */
  const uint8_t **kp[CS_AGG_MAX_KEYS]; /* hash, TEXT/BLOB keys: [cap] */
  uint8_t *kn[CS_AGG_MAX_KEYS];        /* hash: [cap] NULL flags */
  uint64_t *kw[2];                     /* bytes: [cap] the key's bytes 0..7 and 8..15, zero-padded */
  uint32_t *slots;                     /* hashed kinds: [n_slots] group ids, 0 = empty */
  uint64_t n_slots;                    /* a power of two */
  unsigned shift;                      /* 64 - log2(n_slots) */
  bool dirty;                          /* a member's table holding rows not yet merged */
} agg_table;

/* One key of a record's dictionary: its first 16 bytes zero-padded as two
** words (dict_w1), its length, and its group in the member's table. */
typedef struct agg_dent {
  uint64_t w0, w1;
  uint64_t ng;  /* group << 32 | min(length, UINT32_MAX); 0 = empty slot (group 0 is the sink) */
  uint64_t pad; /* 32-byte entries: one cache line holds two */
} agg_dent;

/* The keys one member met in the record it reads (piece_gids_dict). */
typedef struct agg_dict {
  agg_dent *ent;         /* [AGG_DICT_SLOTS] open addressing on the key's hash */
  uint16_t *used;        /* [AGG_DICT_MAX] the slots in use, to empty them */
  uint32_t n;            /* keys held */
  uint32_t null_gid;     /* the NULL key's group once met in this record, else 0 */
  uint64_t hits, misses; /* rows of this record found / not found */
  bool bypass;           /* full and missing more than it finds: the rest of the record goes to the table */
} agg_dict;

/* What one team member works in; owned by the aggregate, reused by calls. */
typedef struct agg_scratch {
  uint8_t *mask, *eff, *ones; /* [AGG_PIECE] */
  uint8_t *mask2;             /* [AGG_PIECE] one group's rows */
  uint32_t *gid;              /* [AGG_PIECE] */
  uint64_t *hash;             /* [AGG_PIECE] */
  uint8_t *valid;             /* [nu * AGG_PIECE] */
  uint8_t *xbuf;              /* [nu * AGG_PIECE * 8] values gathered from a row list */
  const uint8_t **bp;         /* [nu * AGG_PIECE] */
  uint64_t *bn;               /* [nu * AGG_PIECE] */
  uint64_t *recs, *locs;      /* [AGG_PIECE] a list's records and rows within them */
  uint64_t *kv;               /* [nk * AGG_PIECE] */
  const uint8_t **kp;         /* [nk * AGG_PIECE] */
  uint8_t *kn;                /* [nk * AGG_PIECE] */
  agg_view *views;            /* [nu] */
  agg_cell *rcell;            /* [nv] one record's partial */
  agg_dict dict;              /* bytes kernel: the record's keys */
  uint32_t *gid2;             /* grouped: [AGG_PIECE] each row's lane cell (piece_lanes) */
  uint64_t *lrows;            /* grouped: [AGG_LANE_GROUPS * AGG_LANES] rows per lane cell */
  agg_cell *lcells;           /* grouped: [AGG_LANE_GROUPS * AGG_LANES * nv], initialised between pieces */
  agg_table table;            /* members >= 1: their own groups */
  const cs__rcodes
      *rcodes;     /* bytes kernel, ranges: the codes of the record read (piece_gids_codes), or NULL */
  uint64_t rlocal; /* the piece's first row within that record */
  uint32_t *cmap;  /* bytes kernel: [CS__CODE_VALUES] the record's codes' groups, 0 = not looked up */
} agg_scratch;

struct cs_agg {
  const cs_store *s; /* not owned */
  uint32_t nk, nu, nv;
  uint32_t key_u[CS_AGG_MAX_KEYS]; /* ucols index of each key */
  agg_col *ucols;                  /* [nu] owned */
  agg_val *vals;                   /* [nv] owned */
  int max_threads;
  int kind; /* K_* (grouped: decided at the first add) */
  /* Direct and packed: key k's field is value - kmin[k] for values in
  ** [kmin, kmin + kspan), kspan[k] for NULL; the code is the sum of
  ** field * kmult[k] (mixed radix, kspan[k] + 1 fields per key). */
  int64_t kmin[CS_AGG_MAX_KEYS];
  uint64_t kspan[CS_AGG_MAX_KEYS];
  uint64_t kmult[CS_AGG_MAX_KEYS];
  uint64_t ncodes; /* direct: codes (the table's slots) */
  uint32_t
      dict_max; /* bytes: keys a record's dictionary holds (tune.dict_max when chosen); 0 = no dictionary */
  cs__codes *codes;   /* bytes, ranges: the key column's codes on the store (not owned), or NULL */
  uint64_t codes_max; /* their cap (tune.codes_bytes when taken) */
  agg_table table;    /* the groups; ungrouped: group 0 */
  agg_scratch **scr;  /* [n_scr] per team member */
  int n_scr;
  uint64_t *out;  /* direct: group -> slot; owned */
  uint64_t n_out; /* groups */
  cs_agg_stats st;
};

/* The per-store cache of per-record statistics (see the essay). */
typedef struct agg_cache {
  cs__derived derived;      /* first: the store's analytics slot holds it, and frees it with agg_cache_free */
  agg_cell *_Atomic cols[]; /* [derived.n_cols]: n_records cells, or NULL */
} agg_cache;

/* ----------------------------------------------------------------- cells */

static int dom_of(cs_type t) {
  return cs_type_is_varlen(t) ? DOM_BYTES : cs_type_is_float(t) ? DOM_DBL : DOM_INT;
}

static void cell_init(int dom, agg_cell *c) {
  memset(c, 0, sizeof *c);
  if (dom == DOM_INT)
    c->min.i = INT64_MAX, c->max.i = INT64_MIN;
  else if (dom == DOM_DBL)
    c->min.f = INFINITY, c->max.f = -INFINITY;
}

/* nv cells per group for count groups, each initialised for its column. */
static void cells_init(const cs_agg *a, agg_cell *cells, uint64_t count) {
  for (uint64_t g = 0; g < count; g++)
    for (uint32_t j = 0; j < a->nv; j++) cell_init(a->vals[j].dom, &cells[g * a->nv + j]);
}

static inline agg_i128 cell_sum_i(const agg_cell *c) {
  return (agg_i128)(((cs__u128)c->u.i.hi << 64) | c->u.i.lo);
}

static inline void cell_add_i128(agg_cell *c, agg_i128 v) {
  cs__u128 t = (((cs__u128)c->u.i.hi << 64) | c->u.i.lo) + (cs__u128)v;
  c->u.i.lo = (uint64_t)t, c->u.i.hi = (uint64_t)(t >> 64);
}

/* Adds an int64 to the 128-bit sum: add, carry, sign. */
static inline void cell_add_i64(agg_cell *c, int64_t v) {
  uint64_t lo = c->u.i.lo + (uint64_t)v;
  c->u.i.hi += (lo < (uint64_t)v) - ((uint64_t)v >> 63);
  c->u.i.lo = lo;
}

/* One Neumaier step: s + v with the rounding error added to *c. */
static inline void kbn(double *s, double *c, double v) {
  double t = *s + v;
  *c += fabs(*s) >= fabs(v) ? (*s - t) + v : (v - t) + *s;
  *s = t;
}

/* A TEXT/BLOB value into a cell's min/max; call before cnt counts it. */
static inline void cell_bytes_minmax(agg_cell *c, const uint8_t *p, uint64_t n) {
  if (c->cnt == 0 || cs__bytes_cmp(p, n, c->min.p, c->u.n.min_n) < 0) c->min.p = p, c->u.n.min_n = n;
  if (c->cnt == 0 || cs__bytes_cmp(p, n, c->max.p, c->u.n.max_n) > 0) c->max.p = p, c->u.n.max_n = n;
}

/* dst += src, in that order (float sums are not associative). */
static void cell_merge(int dom, agg_cell *dst, const agg_cell *src) {
  if (src->cnt == 0) return;
  switch (dom) {
    case DOM_INT:
      cell_add_i128(dst, cell_sum_i(src));
      if (src->min.i < dst->min.i) dst->min.i = src->min.i;
      if (src->max.i > dst->max.i) dst->max.i = src->max.i;
      break;
    case DOM_DBL:
      kbn(&dst->u.f.s, &dst->u.f.c, src->u.f.s);
      dst->u.f.c += src->u.f.c;
      if (src->min.f < dst->min.f) dst->min.f = src->min.f;
      if (src->max.f > dst->max.f) dst->max.f = src->max.f;
      break;
    default:
      if (dst->cnt == 0 || cs__bytes_cmp(src->min.p, src->u.n.min_n, dst->min.p, dst->u.n.min_n) < 0)
        dst->min.p = src->min.p, dst->u.n.min_n = src->u.n.min_n;
      if (dst->cnt == 0 || cs__bytes_cmp(src->max.p, src->u.n.max_n, dst->max.p, dst->u.n.max_n) > 0)
        dst->max.p = src->max.p, dst->u.n.max_n = src->u.n.max_n;
      break;
  }
  dst->cnt += src->cnt;
}

/* --------------------------------------------------------------- kernels */

/* Built for AVX2 and the baseline on GCC/x86-64/glibc, as cs_pred.c's
** kernels are (its essay has the measurements): at baseline GCC does not
** vectorise the int64 and double loops. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && defined(__ELF__)
#define AGG_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AGG_CLONES
#endif

#define AGG_SIGN 0x8000000000000000ull

typedef double agg_v4d __attribute__((vector_size(32)));
typedef int64_t agg_v4l __attribute__((vector_size(32)));
#define AGG_ABS4 ((agg_v4l){INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX})

/* The min and max of the values x[i] with e[i] set (and not NaN: v == v
** is true for every integer, so one body serves both) into cell c's FIELD,
** masked-out values replaced by the reduction's identity. */
#define AGG_UG_MINMAX(VT, HIGHEST, LOWEST, FIELD)                                                  \
  do {                                                                                             \
    VT mn = HIGHEST, mx = LOWEST;                                                                  \
    _Pragma("omp simd reduction(min : mn) reduction(max : mx)") for (uint64_t i = 0; i < n; i++) { \
      VT v = (VT)x[i];                                                                             \
      int b = e[i] && v == v;                                                                      \
      VT lo = b ? v : HIGHEST, hi = b ? v : LOWEST;                                                \
      mn = lo < mn ? lo : mn;                                                                      \
      mx = hi > mx ? hi : mx;                                                                      \
    }                                                                                              \
    if (mn < c->min.FIELD) c->min.FIELD = mn;                                                      \
    if (mx > c->max.FIELD) c->max.FIELD = mx;                                                      \
  } while (0)

/* Ungrouped, integer element type T: e[i] (0/1) says which x[i] count. */
#define AGG_UG_INT(NAME, T)                                                                    \
  AGG_CLONES static void ug_##NAME(const T *restrict x, const uint8_t *restrict e, uint64_t n, \
                                   unsigned what, agg_cell *c) {                               \
    uint64_t cnt = 0;                                                                          \
    if (what & CS_AGG_SUM) {                                                                   \
      if (sizeof(T) < 8) {                                                                     \
        int64_t s = 0;                                                                         \
        _Pragma("omp simd reduction(+ : cnt, s)") for (uint64_t i = 0; i < n; i++) {           \
          cnt += e[i];                                                                         \
          s += (int64_t)x[i] & -(int64_t)e[i];                                                 \
        }                                                                                      \
        cell_add_i64(c, s);                                                                    \
      } else {                                                                                 \
        uint64_t lo = 0, hi = 0;                                                               \
        _Pragma("omp simd reduction(+ : cnt, lo, hi)") for (uint64_t i = 0; i < n; i++) {      \
          uint64_t u = ((uint64_t)(int64_t)x[i] & (0 - (uint64_t)e[i])) ^ AGG_SIGN;            \
          cnt += e[i];                                                                         \
          lo += u & 0xFFFFFFFFu;                                                               \
          hi += u >> 32;                                                                       \
        }                                                                                      \
        cell_add_i128(c, (agg_i128)(((cs__u128)hi << 32) + lo) - ((agg_i128)n << 63));         \
      }                                                                                        \
    } else {                                                                                   \
      _Pragma("omp simd reduction(+ : cnt)") for (uint64_t i = 0; i < n; i++) cnt += e[i];     \
    }                                                                                          \
    if ((what & AGG_MINMAX) && cnt) AGG_UG_MINMAX(int64_t, INT64_MAX, INT64_MIN, i);           \
    c->cnt += cnt;                                                                             \
  }

/* Ungrouped, float element type T: NaN is NULL.  The sum runs in 8
** Neumaier lanes (lane l takes the values at i % 8 == l), folded into the
** cell in lane order.  The lanes are two GCC vectors of four doubles held in
** named variables: written as arrays (of scalars, or of vectors) GCC 12 kept
** them on the stack, so every step waited on a store-to-load forward
** (ug_f64 was 36% of `GROUP BY d WHERE a > 0.5` under perf, ~6 ns a value);
** in named vectors it is 23 AVX2 instructions per 8 values, all in
** registers.  The comparison selects by bit masks, so every lane does the
** same work. */
#define AGG_KBN4(T, S, K, OFF)                                                                           \
  do {                                                                                                   \
    const T *xp = x + i + (OFF);                                                                         \
    const uint8_t *ep = e + i + (OFF);                                                                   \
    typedef T agg_v4t __attribute__((vector_size(4 * sizeof(T))));                                       \
    agg_v4t raw;                                                                                         \
    memcpy(&raw, xp, sizeof raw);                                                                        \
    agg_v4d v = __builtin_convertvector(raw, agg_v4d); /* an initializer list of float crashes GCC 12 */ \
    agg_v4l on = {ep[0], ep[1], ep[2], ep[3]};                                                           \
    agg_v4l keep = (v == v) & (on != 0);                                                                 \
    v = (agg_v4d)((agg_v4l)v & keep); /* +0.0 where masked out or NaN */                                 \
    agg_v4d t = S + v;                                                                                   \
    agg_v4l ge = (agg_v4d)((agg_v4l)S & AGG_ABS4) >= (agg_v4d)((agg_v4l)v & AGG_ABS4);                   \
    agg_v4l c1 = (agg_v4l)((S - t) + v), c2 = (agg_v4l)((v - t) + S);                                    \
    K += (agg_v4d)((c1 & ge) | (c2 & ~ge));                                                              \
    S = t;                                                                                               \
  } while (0)
#define AGG_UG_FLT(NAME, T)                                                                               \
  AGG_CLONES static void ug_##NAME(const T *restrict x, const uint8_t *restrict e, uint64_t n,            \
                                   unsigned what, agg_cell *c) {                                          \
    uint64_t cnt = 0;                                                                                     \
    _Pragma("omp simd reduction(+ : cnt)") for (uint64_t i = 0; i < n; i++) cnt += e[i] & (x[i] == x[i]); \
    if (cnt == 0) return;                                                                                 \
    if (what & CS_AGG_SUM) {                                                                              \
      agg_v4d s0 = {0}, s1 = {0}, k0 = {0}, k1 = {0};                                                     \
      uint64_t i = 0;                                                                                     \
      for (; i + 8 <= n; i += 8) {                                                                        \
        AGG_KBN4(T, s0, k0, 0);                                                                           \
        AGG_KBN4(T, s1, k1, 4);                                                                           \
      }                                                                                                   \
      double sl[8], kl[8];                                                                                \
      memcpy(sl, &s0, 32), memcpy(sl + 4, &s1, 32), memcpy(kl, &k0, 32), memcpy(kl + 4, &k1, 32);         \
      for (; i < n; i++) {                                                                                \
        double v = (double)x[i];                                                                          \
        if (e[i] && v == v) kbn(&sl[0], &kl[0], v);                                                       \
      }                                                                                                   \
      for (int j = 0; j < 8; j++) {                                                                       \
        kbn(&c->u.f.s, &c->u.f.c, sl[j]);                                                                 \
        c->u.f.c += kl[j];                                                                                \
      }                                                                                                   \
    }                                                                                                     \
    if (what & AGG_MINMAX) AGG_UG_MINMAX(double, INFINITY, -INFINITY, f);                                 \
    c->cnt += cnt;                                                                                        \
  }

/* Grouped: row i goes to cells[gid[i] * nv] (the caller offsets cells to
** its column).  A zero mask byte adds the identity, so no branch. */
#define AGG_GS_INT(NAME, T)                                                                           \
  static void gs_##NAME(const T *restrict x, const uint8_t *restrict e, const uint32_t *restrict gid, \
                        uint64_t n, unsigned what, agg_cell *cells, uint32_t nv) {                    \
    if (what & CS_AGG_SUM) {                                                                          \
      for (uint64_t i = 0; i < n; i++) {                                                              \
        agg_cell *c = &cells[(uint64_t)gid[i] * nv];                                                  \
        c->cnt += e[i];                                                                               \
        cell_add_i64(c, (int64_t)x[i] & -(int64_t)e[i]);                                              \
      }                                                                                               \
    } else {                                                                                          \
      for (uint64_t i = 0; i < n; i++) cells[(uint64_t)gid[i] * nv].cnt += e[i];                      \
    }                                                                                                 \
    if (what & AGG_MINMAX) {                                                                          \
      for (uint64_t i = 0; i < n; i++) {                                                              \
        agg_cell *c = &cells[(uint64_t)gid[i] * nv];                                                  \
        int64_t v = (int64_t)x[i];                                                                    \
        int64_t lo = e[i] ? v : INT64_MAX, hi = e[i] ? v : INT64_MIN;                                 \
        c->min.i = lo < c->min.i ? lo : c->min.i;                                                     \
        c->max.i = hi > c->max.i ? hi : c->max.i;                                                     \
      }                                                                                               \
    }                                                                                                 \
  }

/* Floats: the sum, and min/max, in separate loops (GCC 12 does not take
** the `what` tests out of one loop at -O2). */
#define AGG_GS_FLT(NAME, T)                                                                           \
  static void gs_##NAME(const T *restrict x, const uint8_t *restrict e, const uint32_t *restrict gid, \
                        uint64_t n, unsigned what, agg_cell *cells, uint32_t nv) {                    \
    if (what & CS_AGG_SUM) {                                                                          \
      for (uint64_t i = 0; i < n; i++) {                                                              \
        agg_cell *c = &cells[(uint64_t)gid[i] * nv];                                                  \
        double v = (double)x[i];                                                                      \
        int b = e[i] && v == v;                                                                       \
        c->cnt += (uint64_t)b;                                                                        \
        kbn(&c->u.f.s, &c->u.f.c, b ? v : 0.0);                                                       \
      }                                                                                               \
    } else {                                                                                          \
      for (uint64_t i = 0; i < n; i++) {                                                              \
        double v = (double)x[i];                                                                      \
        cells[(uint64_t)gid[i] * nv].cnt += (uint64_t)(e[i] && v == v);                               \
      }                                                                                               \
    }                                                                                                 \
    if (what & AGG_MINMAX) {                                                                          \
      for (uint64_t i = 0; i < n; i++) {                                                              \
        agg_cell *c = &cells[(uint64_t)gid[i] * nv];                                                  \
        double v = (double)x[i];                                                                      \
        int b = e[i] && v == v;                                                                       \
        double lo = b ? v : INFINITY, hi = b ? v : -INFINITY;                                         \
        c->min.f = lo < c->min.f ? lo : c->min.f;                                                     \
        c->max.f = hi > c->max.f ? hi : c->max.f;                                                     \
      }                                                                                               \
    }                                                                                                 \
  }

/* A packed key's field into the code: key - kmin when in [kmin, kmin +
** span), else span (NULL, or outside the zone maps); code = field (first
** key) or code + field * mult.  Four loops so that each vectorises. */
#define AGG_PACK_LOOP(VALID, FIRST)                        \
  _Pragma("omp simd") for (uint64_t i = 0; i < n; i++) {   \
    uint64_t d = (uint64_t)(int64_t)x[i] - (uint64_t)kmin; \
    uint64_t f = ((VALID) && d < span) ? d : span;         \
    code[i] = (FIRST) ? f : code[i] + f * mult;            \
  }
#define AGG_PACK(NAME, T)                                                                            \
  AGG_CLONES static void pack_##NAME(const T *restrict x, const uint8_t *restrict valid, uint64_t n, \
                                     int64_t kmin, uint64_t span, uint64_t mult, bool first,         \
                                     uint64_t *restrict code) {                                      \
    if (valid && first)                                                                              \
      AGG_PACK_LOOP(valid[i], 1)                                                                     \
    else if (valid)                                                                                  \
      AGG_PACK_LOOP(valid[i], 0)                                                                     \
    else if (first)                                                                                  \
      AGG_PACK_LOOP(1, 1)                                                                            \
    else                                                                                             \
      AGG_PACK_LOOP(1, 0)                                                                            \
  }

/* A key column's canonical cells: integers as int64, floats as the bits of
** the double with -0.0 made 0.0 and NaN made NULL. */
#define AGG_KEYS_INT(NAME, T)                                                                        \
  static void keys_##NAME(const T *restrict x, const uint8_t *restrict valid, uint64_t n,            \
                          uint64_t *restrict kv, uint8_t *restrict kn) {                             \
    for (uint64_t i = 0; i < n; i++) kv[i] = (uint64_t)(int64_t)x[i], kn[i] = valid ? !valid[i] : 0; \
  }
#define AGG_KEYS_FLT(NAME, T)                                                             \
  static void keys_##NAME(const T *restrict x, const uint8_t *restrict valid, uint64_t n, \
                          uint64_t *restrict kv, uint8_t *restrict kn) {                  \
    for (uint64_t i = 0; i < n; i++) {                                                    \
      double d = (double)x[i];                                                            \
      kn[i] = (valid && !valid[i]) || d != d;                                             \
      d = d == 0.0 ? 0.0 : d;                                                             \
      memcpy(&kv[i], &d, 8);                                                              \
    }                                                                                     \
  }

#define AGG_INT_TYPES(X) \
  X(i8, int8_t)          \
  X(i16, int16_t) X(i32, int32_t) X(i64, int64_t) X(u8, uint8_t) X(u16, uint16_t) X(u32, uint32_t)
#define AGG_FLT_TYPES(X) X(f32, float) X(f64, double)

AGG_INT_TYPES(AGG_UG_INT)
AGG_FLT_TYPES(AGG_UG_FLT)
AGG_INT_TYPES(AGG_GS_INT)
AGG_FLT_TYPES(AGG_GS_FLT)
AGG_INT_TYPES(AGG_PACK)
AGG_INT_TYPES(AGG_KEYS_INT)
AGG_FLT_TYPES(AGG_KEYS_FLT)

/* Calls CALL(name, T) for the column's element type. */
#define AGG_TYPE_SWITCH(type, CALL)                  \
  switch (type) {                                    \
    case CS_TYPE_INT8: CALL(i8, int8_t); break;      \
    case CS_TYPE_INT16: CALL(i16, int16_t); break;   \
    case CS_TYPE_INT32: CALL(i32, int32_t); break;   \
    case CS_TYPE_INT64: CALL(i64, int64_t); break;   \
    case CS_TYPE_UINT8:                              \
    case CS_TYPE_BOOL: CALL(u8, uint8_t); break;     \
    case CS_TYPE_UINT16: CALL(u16, uint16_t); break; \
    case CS_TYPE_UINT32: CALL(u32, uint32_t); break; \
    case CS_TYPE_FLOAT32: CALL(f32, float); break;   \
    case CS_TYPE_FLOAT64: CALL(f64, double); break;  \
    default: break;                                  \
  }

/* The mask a column counts with: m AND its validity (into eff). */
static const uint8_t *col_mask(const agg_view *v, const uint8_t *m, uint8_t *eff, uint64_t n) {
  if (!v->valid) return m;
#pragma omp simd
  for (uint64_t i = 0; i < n; i++) eff[i] = m[i] & v->valid[i];
  return eff;
}

/* One column of one piece into one cell (ungrouped). */
static void col_piece_ug(cs_type type, const agg_view *v, const uint8_t *m, uint8_t *eff, uint64_t n,
                         unsigned what, agg_cell *c) {
  const uint8_t *e = col_mask(v, m, eff, n);
  if (cs_type_is_varlen(type)) {
    if (!(what & AGG_MINMAX)) {
      uint64_t cnt = 0;
      for (uint64_t i = 0; i < n; i++) cnt += e[i];
      c->cnt += cnt;
      return;
    }
    for (uint64_t i = 0; i < n; i++)
      if (e[i]) {
        cell_bytes_minmax(c, v->bp[i], v->bn[i]);
        c->cnt++;
      }
    return;
  }
#define UG_CALL(NAME, T) ug_##NAME((const T *)v->x, e, n, what, c)
  AGG_TYPE_SWITCH(type, UG_CALL);
#undef UG_CALL
}

/* One column of one piece scattered into its groups' cells. */
static void col_piece_gs(cs_type type, const agg_view *v, const uint8_t *m, uint8_t *eff, const uint32_t *gid,
                         uint64_t n, unsigned what, agg_cell *cells, uint32_t nv) {
  const uint8_t *e = col_mask(v, m, eff, n);
  if (cs_type_is_varlen(type)) {
    for (uint64_t i = 0; i < n; i++) {
      if (!e[i]) continue;
      agg_cell *c = &cells[(uint64_t)gid[i] * nv];
      if (what & AGG_MINMAX) cell_bytes_minmax(c, v->bp[i], v->bn[i]);
      c->cnt++;
    }
    return;
  }
#define GS_CALL(NAME, T) gs_##NAME((const T *)v->x, e, gid, n, what, cells, nv)
  AGG_TYPE_SWITCH(type, GS_CALL);
#undef GS_CALL
}

/* ------------------------------------------------------------ bytes keys */

/* A TEXT/BLOB key as the bytes kernel probes with it.  Up to 16 bytes the
** key is exactly (n, w0, w1): its bytes zero-padded to 16, read as two
** words, so equality is three integer compares and the hash a multiply;
** longer keys are hashed with XXH3 and compared with memcmp after their
** first 16 bytes agree. */
typedef struct agg_bkey {
  uint64_t h, n, w0, w1;
  const uint8_t *p;
  uint8_t null;
} agg_bkey;

#define AGG_NULL_HASH 0x9E3779B97F4A7C15ull

/* Key of the n bytes at p; reads up to end are safe (end NULL: only the
** n bytes are read). */
CS__INLINE void bytes_key(const uint8_t *p, uint64_t n, const uint8_t *end, agg_bkey *k) {
  k->p = p, k->n = n, k->null = 0;
  if (end && (uint64_t)(end - p) >= 16) {
    /* the common case: two loads and two masks, no branch on the length */
    const uint64_t *keep = cs__key_keep[n < 16 ? n : 16];
    k->w0 = cs__load64(p) & keep[0], k->w1 = cs__load64(p + 8) & keep[1];
  } else {
    uint8_t b[16] = {0};
    memcpy(b, p, n < 16 ? n : 16);
    memcpy(&k->w0, b, 8), memcpy(&k->w1, b + 8, 8);
  }
  if (n > 16) {
    k->h = XXH3_64bits(p, n);
  } else {
    uint64_t h = (k->w0 ^ 0xC2B2AE3D27D4EB4Full) * 0x9FB21C651E98DF25ull;
    h ^= (k->w1 + n) * 0xBF58476D1CE4E5B9ull;
    k->h = h ^ (h >> 31);
  }
}

/* ----------------------------------------------------------------- views */

/* Offsets clamped into the data, as cs_pred.c reads them: a damaged
** chunk gives wrong values, never an out-of-bounds read.  The start of
** the first value, then each end from the one before. */
CS__INLINE uint64_t bytes_start(const int64_t *off, uint64_t db) {
  return (uint64_t)off[0] > db ? db : (uint64_t)off[0];
}
CS__INLINE uint64_t bytes_end(const int64_t *off, uint64_t i, uint64_t s0, uint64_t db) {
  uint64_t e = (uint64_t)off[i + 1] > db ? db : (uint64_t)off[i + 1];
  return e < s0 ? s0 : e;
}

/* Rows [local, local + n) of record r, column col, in place. */
static void view_range(const cs_store *s, const agg_col *uc, uint64_t r, uint64_t local, uint64_t n,
                       agg_view *v, uint8_t *vbuf, const uint8_t **bp, uint64_t *bn) {
  const cs_chunk *ch = &s->chunks[r * s->schema.n_cols + uc->col];
  v->valid = NULL;
  v->end = NULL;
  v->off = NULL;
  if (ch->validity) {
    cs__mask_from_bits(ch->validity, local, n, vbuf);
    v->valid = vbuf;
  }
  if (uc->width) {
    v->x = (const uint8_t *)ch->data + local * uc->width;
    return;
  }
  const int64_t *off = ch->offsets + local;
  const uint8_t *data = ch->data ? (const uint8_t *)ch->data : (const uint8_t *)"";
  uint64_t db = ch->data ? ch->data_bytes : 0;
  v->off = off, v->data = data, v->db = db;
  v->end = data + db;
  v->bp = NULL, v->bn = NULL;
  if (uc->lazy) return; /* piece_gids_dict reads the offsets itself */
  uint64_t s0 = bytes_start(off, db);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t e = bytes_end(off, i, s0, db);
    bp[i] = data + s0, bn[i] = e - s0;
    s0 = e;
  }
  v->bp = bp, v->bn = bn;
}

/* The values of a list's rows (record recs[i], row locs[i]), gathered. */
static void view_rows(const cs_store *s, const agg_col *uc, const uint64_t *recs, const uint64_t *locs,
                      uint64_t n, agg_view *v, uint8_t *xbuf, uint8_t *vbuf, const uint8_t **bp,
                      uint64_t *bn) {
  uint32_t nc = s->schema.n_cols;
  bool any_null = false;
  for (uint64_t i = 0; i < n; i++) {
    const cs_chunk *ch = &s->chunks[recs[i] * nc + uc->col];
    uint64_t l = locs[i];
    vbuf[i] = cs__valid_bit(ch->validity, l);
    any_null |= !vbuf[i];
    if (uc->width) {
      memcpy(xbuf + i * uc->width, (const uint8_t *)ch->data + l * uc->width, uc->width);
      continue;
    }
    const uint8_t *data = ch->data ? (const uint8_t *)ch->data : (const uint8_t *)"";
    uint64_t db = ch->data ? ch->data_bytes : 0;
    uint64_t s0 = (uint64_t)ch->offsets[l] > db ? db : (uint64_t)ch->offsets[l];
    uint64_t e = (uint64_t)ch->offsets[l + 1] > db ? db : (uint64_t)ch->offsets[l + 1];
    if (e < s0) e = s0;
    bp[i] = data + s0, bn[i] = e - s0;
  }
  v->x = xbuf;
  v->valid = any_null ? vbuf : NULL;
  v->bp = bp, v->bn = bn;
  v->end = NULL; /* rows of several chunks */
  v->off = NULL;
}

/* ---------------------------------------------------------------- tables */

static void table_free(const cs_agg *a, agg_table *t) {
  cs__mem_free(t->rows), cs__mem_free(t->cells), cs__mem_free(t->ghash), cs__mem_free(t->slots);
  cs__mem_free(t->kw[0]), cs__mem_free(t->kw[1]);
  for (uint32_t k = 0; k < a->nk; k++)
    cs__mem_free(t->kv[k]), cs__mem_free((void *)t->kp[k]), cs__mem_free(t->kn[k]);
  memset(t, 0, sizeof *t);
}

/* Grows t's group arrays to cap groups (contents kept); false when out of
** memory (t then still valid at its old capacity). */
static bool table_grow(const cs_agg *a, agg_table *t, uint64_t cap) {
  void *p;
#define GROW(field, elt)                                                    \
  do {                                                                      \
    if (!(p = cs__mem_realloc((void *)(field), cap * (elt)))) return false; \
    (field) = p;                                                            \
  } while (0)
  GROW(t->rows, sizeof(uint64_t));
  GROW(t->cells, (uint64_t)a->nv * sizeof(agg_cell) + (a->nv == 0)); /* never 0 bytes */
  if (kind_hashed(a->kind)) GROW(t->ghash, sizeof(uint64_t));
  if (a->kind == K_BYTES) {
    GROW(t->kw[0], sizeof(uint64_t));
    GROW(t->kw[1], sizeof(uint64_t));
  }
  if (a->kind == K_HASH || a->kind == K_BYTES) {
    for (uint32_t k = 0; k < a->nk; k++) {
      GROW(t->kv[k], sizeof(uint64_t));
      GROW(t->kn[k], 1);
      if (a->ucols[a->key_u[k]].dom == DOM_BYTES) GROW(t->kp[k], sizeof(const uint8_t *));
    }
  }
#undef GROW
  memset(t->rows + t->cap, 0, (cap - t->cap) * sizeof *t->rows);
  cells_init(a, t->cells + t->cap * a->nv, cap - t->cap);
  t->cap = cap;
  return true;
}

static unsigned log2_pow2(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

/* A fresh table: the one group of an ungrouped aggregate, every slot of a
** direct one, or a hash table holding only its sink. */
static bool table_make(const cs_agg *a, agg_table *t) {
  memset(t, 0, sizeof *t);
  bool hashed = kind_hashed(a->kind);
  uint64_t cap = a->kind == K_DIRECT ? a->ncodes : hashed ? AGG_HASH_FIRST : 1;
  if (!table_grow(a, t, cap)) goto fail;
  t->n = hashed ? 1 : cap;
  if (hashed) {
    t->n_slots = 2 * AGG_HASH_FIRST;
    t->shift = 64 - log2_pow2(t->n_slots);
    if (!(t->slots = cs__mem_calloc(t->n_slots, sizeof *t->slots))) goto fail;
  }
  return true;
fail:
  table_free(a, t);
  return false;
}

/* Empties a member's table after its groups were merged. */
static void table_reset(const cs_agg *a, agg_table *t) {
  uint64_t used = kind_hashed(a->kind) ? t->n : t->cap;
  memset(t->rows, 0, used * sizeof *t->rows);
  cells_init(a, t->cells, used);
  if (kind_hashed(a->kind)) {
    memset(t->slots, 0, t->n_slots * sizeof *t->slots);
    t->n = 1;
  }
  t->dirty = false;
}

/* The slot a hash's probe starts at: Fibonacci hashing, so that a packed
** code (which is its own hash) spreads as well as an XXH3 value. */
static inline uint64_t table_home(const agg_table *t, uint64_t h) {
  return (h * 0x9E3779B97F4A7C15ull) >> t->shift;
}

static bool tuple_eq(const cs_agg *a, const agg_table *t, uint64_t g, const agg_tuple *k) {
  for (uint32_t c = 0; c < a->nk; c++) {
    if (k->null[c] != t->kn[c][g]) return false;
    if (k->null[c]) continue;
    if (k->v[c] != t->kv[c][g]) return false;
    if (t->kp[c] && k->v[c] && memcmp(k->p[c], t->kp[c][g], k->v[c]) != 0) return false;
  }
  return true;
}

static bool table_rehash(agg_table *t, uint64_t n_slots) {
  uint32_t *slots = cs__mem_calloc(n_slots, sizeof *slots);
  if (!slots) return false;
  unsigned shift = 64 - log2_pow2(n_slots);
  for (uint64_t g = 1; g < t->n; g++) {
    uint64_t i = (t->ghash[g] * 0x9E3779B97F4A7C15ull) >> shift;
    while (slots[i]) i = (i + 1) & (n_slots - 1);
    slots[i] = (uint32_t)g;
  }
  cs__mem_free(t->slots);
  t->slots = slots, t->n_slots = n_slots, t->shift = shift;
  return true;
}

/* A new group with hash h in the empty slot i (the caller then writes its
** key); 0 when the table cannot grow (out of memory, or 2^32 - 1 groups). */
static uint32_t table_add(const cs_agg *a, agg_table *t, uint64_t i, uint64_t h) {
  if (t->n >= UINT32_MAX) return 0;
  if (t->n == t->cap && !table_grow(a, t, 2 * t->cap)) return 0;
  uint64_t g = t->n++;
  t->ghash[g] = h;
  t->slots[i] = (uint32_t)g;
  if (2 * t->n > t->n_slots && !table_rehash(t, 2 * t->n_slots)) {
    t->slots[i] = 0, t->n--; /* undo, so the table stays consistent */
    return 0;
  }
  return (uint32_t)g;
}

/* The group of key tuple k (hash h), added when new; 0 when the table
** cannot grow. */
static uint32_t table_find_or_add(const cs_agg *a, agg_table *t, uint64_t h, const agg_tuple *k) {
  uint64_t mask = t->n_slots - 1, i = table_home(t, h);
  for (uint32_t g; (g = t->slots[i]) != 0; i = (i + 1) & mask)
    if (t->ghash[g] == h && tuple_eq(a, t, g, k)) return g;
  uint32_t g = table_add(a, t, i, h);
  for (uint32_t c = 0; g && c < a->nk; c++) {
    t->kn[c][g] = k->null[c];
    t->kv[c][g] = k->null[c] ? 0 : k->v[c];
    if (t->kp[c]) t->kp[c][g] = k->null[c] ? NULL : k->p[c];
  }
  return g;
}

/* The group of packed code `code` (its own hash), added when new. */
static inline uint32_t packed_find_or_add(const cs_agg *a, agg_table *t, uint64_t code) {
  uint64_t mask = t->n_slots - 1, i = table_home(t, code);
  for (uint32_t g; (g = t->slots[i]) != 0; i = (i + 1) & mask)
    if (t->ghash[g] == code) return g;
  return table_add(a, t, i, code);
}

/* The group of TEXT/BLOB key k, added when new. */
static inline uint32_t bytes_find_or_add(const cs_agg *a, agg_table *t, const agg_bkey *k) {
  uint64_t mask = t->n_slots - 1, i = table_home(t, k->h);
  for (uint32_t g; (g = t->slots[i]) != 0; i = (i + 1) & mask)
    if (t->ghash[g] == k->h && t->kv[0][g] == k->n && t->kw[0][g] == k->w0 && t->kw[1][g] == k->w1 &&
        t->kn[0][g] == k->null && (k->n <= 16 || memcmp(t->kp[0][g], k->p, k->n) == 0))
      return g;
  uint32_t g = table_add(a, t, i, k->h);
  if (g) {
    t->kv[0][g] = k->n, t->kw[0][g] = k->w0, t->kw[1][g] = k->w1;
    t->kn[0][g] = k->null, t->kp[0][g] = k->null ? NULL : k->p;
  }
  return g;
}

/* ------------------------------------------------- a record's dictionary */

/* Empties the dictionary for the next record: only the slots in use. */
static void dict_reset(agg_dict *d) {
  for (uint32_t i = 0; i < d->n; i++) d->ent[d->used[i]].ng = 0;
  d->n = 0, d->null_gid = 0, d->hits = d->misses = 0, d->bypass = false;
}

/* A record's dictionary holds a key as two words, its first 16 bytes
** zero-padded, with a key below 16 bytes keeping its length in the last
** byte (a padding byte there) so that the slot's hash tells "a" from
** "a\0", and its length beside.  A key of 16 bytes or more is told from a
** shorter one by that length alone (its last byte may equal a short key's
** length: "abcde" and "abcde", ten zero bytes, byte 5), and from a longer
** one by its full length and a memcmp of its tail against the group's
** copy. */
CS__INLINE uint64_t dict_w1(uint64_t n, uint64_t w1) { return cs__key_w1(n, w1); }
CS__INLINE uint64_t dict_ng(uint32_t g, uint64_t n) {
  return (uint64_t)g << 32 | (n < UINT32_MAX ? n : UINT32_MAX);
}

/* The dictionary's slot of a key of two words: one multiply (the table's
** hash, two multiplies and a shift, is computed only for the keys new to
** the record). */
CS__INLINE uint64_t dict_home(uint64_t w0, uint64_t w1) { return cs__key_home(w0, w1, AGG_DICT_BITS); }

/* A key missing from the dictionary, probe ended at empty slot j: the
** member's table gives its group (0 when the table cannot grow), kept in
** the dictionary while it has room.  Out of line: the rows that come here
** are few, and inlined it would crowd the registers of the loop. */
__attribute__((noinline)) static uint32_t dict_miss(const cs_agg *a, agg_dict *d, agg_table *t, uint64_t j,
                                                    const agg_bkey *k) {
  uint32_t g = bytes_find_or_add(a, t, k);
  if (g && d->n < a->dict_max) {
    agg_dent *de = &d->ent[j];
    de->w0 = k->w0, de->w1 = dict_w1(k->n, k->w1), de->ng = dict_ng(g, k->n);
    d->used[d->n++] = (uint16_t)j;
  }
  return g;
}

/* The group of a row the loop below does not take: NULL, a key of 16
** bytes or more, or one too near the end of the chunk's bytes for two
** loads; 0 for an unselected row that misses, UINT32_MAX when the table
** cannot grow.  Long keys go through the dictionary too, on their XXH3
** hash. */
__attribute__((noinline)) static uint32_t dict_slow(const cs_agg *a, agg_dict *d, agg_table *t,
                                                    const uint8_t *p, uint64_t len, const uint8_t *end,
                                                    bool null, bool sel) {
  agg_bkey k;
  if (null) {
    if (!sel) return 0;
    if (!d->null_gid) {
      k = (agg_bkey){AGG_NULL_HASH, 0, 0, 0, NULL, 1};
      if (!(d->null_gid = bytes_find_or_add(a, t, &k))) return UINT32_MAX;
    }
    return d->null_gid;
  }
  bytes_key(p, len, end, &k);
  uint64_t w1 = dict_w1(len, k.w1);
  uint64_t j = len > 16 ? k.h >> (64 - AGG_DICT_BITS) : dict_home(k.w0, w1);
  for (;; j = (j + 1) & (AGG_DICT_SLOTS - 1)) {
    const agg_dent *de = &d->ent[j];
    if (!de->ng) break;
    uint32_t g = (uint32_t)(de->ng >> 32);
    if (de->w0 == k.w0 && de->w1 == w1 && (uint32_t)de->ng == (uint32_t)dict_ng(0, len) &&
        (len <= 16 || (t->kv[0][g] == len && memcmp(t->kp[0][g] + 16, p + 16, len - 16) == 0)))
      return g;
  }
  d->misses++;
  if (!sel) return 0;
  uint32_t g = dict_miss(a, d, t, j, &k);
  return g ? g : UINT32_MAX;
}

/* A record that met more distinct keys than its dictionary holds, and
** missed more rows than it found: row by row to the member's table, as
** before the dictionary. */
static bool piece_gids_bypass(const cs_agg *a, agg_table *t, const agg_view *v, const uint8_t *m, uint64_t n,
                              uint32_t *gid) {
  uint64_t s0 = bytes_start(v->off, v->db);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t e = bytes_end(v->off, i, s0, v->db);
    agg_bkey k;
    if (v->valid && !v->valid[i])
      k = (agg_bkey){AGG_NULL_HASH, 0, 0, 0, NULL, 1};
    else
      bytes_key(v->data + s0, e - s0, v->end, &k);
    s0 = e;
    if (!m[i])
      gid[i] = 0;
    else if (!(gid[i] = bytes_find_or_add(a, t, &k)))
      return false;
  }
  return true;
}

/* The dictionary loop, stamped out with and without a validity mask. */
CS__INLINE bool dict_loop(const cs_agg *a, agg_dict *d, agg_table *t, const agg_view *v, const uint8_t *m,
                          uint64_t n, uint32_t *restrict gid, const uint8_t *valid) {
  const int64_t *off = v->off;
  const uint8_t *data = v->data, *end = v->end;
  const agg_dent *ent = d->ent;
  uint64_t db = v->db, last = db >= 16 ? db - 16 : 0; /* two loads from a start <= last stay inside */
  uint64_t s0 = bytes_start(off, db), misses = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t e = bytes_end(off, i, s0, db);
    const uint8_t *p = data + s0;
    uint64_t len = e - s0;
    bool slow = (len >= 16) | (s0 > last) | (db < 16) | (valid && !valid[i]);
    s0 = e;
    if (__builtin_expect(slow, 0)) {
      uint64_t before = d->misses;
      uint32_t g = dict_slow(a, d, t, p, len, end, valid && !valid[i], m[i] != 0);
      if (g == UINT32_MAX) return false;
      misses += d->misses - before, d->misses = before;
      gid[i] = g;
      continue;
    }
    const uint64_t *keep = cs__key_keep[len];
    uint64_t w0 = cs__load64(p) & keep[0], w1 = (cs__load64(p + 8) & keep[1]) | (len << 56);
    uint64_t j = dict_home(w0, w1);
    const agg_dent *de = &ent[j];
    while (de->ng && ((de->w0 ^ w0) | (de->w1 ^ w1) | ((uint32_t)de->ng ^ len)))
      j = (j + 1) & (AGG_DICT_SLOTS - 1), de = &ent[j];
    if (__builtin_expect(de->ng != 0, 1)) {
      gid[i] = (uint32_t)(de->ng >> 32);
      continue;
    }
    misses++;
    if (!m[i]) {
      gid[i] = 0;
      continue;
    }
    agg_bkey k;
    bytes_key(p, len, end, &k);
    if (!(gid[i] = dict_miss(a, d, t, j, &k))) return false;
  }
  d->misses += misses, d->hits += n - misses;
  return true;
}

/* The group of every row of a piece of one TEXT/BLOB key read in place
** (v->off set), through the record's dictionary: a key of up to 15 bytes
** met before in the record is found by one multiply, one probe of a table
** of 32-byte entries and three integer compares, with no branch on its
** length; only a key new to the record goes to the member's table
** (dict_miss).  Unselected rows that miss get the sink and add nothing;
** those that hit keep their group (their mask byte is 0, so they add
** nothing either).  A record with more distinct keys than the dictionary
** holds stops adding to it; once it then misses more rows than it finds,
** the rest of the record goes to the table row by row (bypass), as before
** the dictionary.  False when the table cannot grow. */
static bool piece_gids_dict(const cs_agg *a, agg_scratch *sc, agg_table *t, const agg_view *v,
                            const uint8_t *m, uint64_t n) {
  agg_dict *d = &sc->dict;
  if (!d->bypass && d->n >= a->dict_max && d->misses > d->hits) d->bypass = true;
  if (d->bypass) return piece_gids_bypass(a, t, v, m, n, sc->gid);
  return v->valid ? dict_loop(a, d, t, v, m, n, sc->gid, v->valid)
                  : dict_loop(a, d, t, v, m, n, sc->gid, NULL);
}

/* The group of a record's value number c (kernels/cs_codes.c), added when
** new; 0 when the table cannot grow. */
__attribute__((noinline)) static uint32_t codes_group(const cs_agg *a, agg_table *t, const cs__rcodes *rc,
                                                      uint32_t c) {
  agg_bkey k;
  if (c == rc->null_code)
    k = (agg_bkey){AGG_NULL_HASH, 0, 0, 0, NULL, 1};
  else
    bytes_key(rc->vp[c], rc->vn[c], NULL, &k);
  return bytes_find_or_add(a, t, &k);
}

/* The group of every row of a piece of a record that has dictionary codes
** (sc->rcodes, the piece from its row sc->rlocal): the code's group from
** the record's map (sc->cmap), a byte load and a 4-byte load a row, no
** key read.  A code is looked up in the member's table the first time a
** selected row has it in the record, so no group is made for a value no
** selected row has; until then its rows get the sink (they are
** unselected).  False when the table cannot grow. */
static bool piece_gids_codes(const cs_agg *a, agg_scratch *sc, agg_table *t, const uint8_t *m, uint64_t n) {
  const cs__rcodes *rc = sc->rcodes;
  const uint8_t *restrict code = rc->code + sc->rlocal;
  uint32_t *restrict cmap = sc->cmap, *restrict gid = sc->gid;
  uint32_t missing = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint32_t g = cmap[code[i]];
    gid[i] = g;
    missing |= (uint32_t)(g == 0) & m[i];
  }
  if (__builtin_expect(!missing, 1)) return true;
  for (uint64_t i = 0; i < n; i++) {
    if (gid[i] || !m[i]) continue;
    uint32_t c = code[i];
    if (!cmap[c] && !(cmap[c] = codes_group(a, t, rc, c))) return false;
    gid[i] = cmap[c];
  }
  return true;
}

/* dst += src, group by group; false when dst cannot grow. */
static bool table_merge(const cs_agg *a, agg_table *dst, const agg_table *src) {
  uint32_t nv = a->nv;
  for (uint64_t g = kind_hashed(a->kind) ? 1 : 0; g < src->n; g++) {
    if (!src->rows[g]) continue;
    uint64_t d = g;
    if (a->kind == K_PACKED) {
      if (!(d = packed_find_or_add(a, dst, src->ghash[g]))) return false;
    } else if (a->kind == K_BYTES) {
      agg_bkey k = {src->ghash[g], src->kv[0][g], src->kw[0][g], src->kw[1][g], src->kp[0][g], src->kn[0][g]};
      if (!(d = bytes_find_or_add(a, dst, &k))) return false;
    } else if (a->kind == K_HASH) {
      agg_tuple k;
      for (uint32_t c = 0; c < a->nk; c++) {
        k.null[c] = src->kn[c][g], k.v[c] = src->kv[c][g];
        k.p[c] = src->kp[c] ? src->kp[c][g] : NULL;
      }
      if (!(d = table_find_or_add(a, dst, src->ghash[g], &k))) return false;
    }
    dst->rows[d] += src->rows[g];
    for (uint32_t j = 0; j < nv; j++)
      cell_merge(a->vals[j].dom, &dst->cells[d * nv + j], &src->cells[g * nv + j]);
  }
  return true;
}

/* ------------------------------------------------------------ the pieces */

/* The key cells of a piece, and each row's hash, for the hash kernel. */
static void piece_hashes(const cs_agg *a, agg_scratch *sc, uint64_t n) {
  for (uint32_t c = 0; c < a->nk; c++) {
    const agg_col *uc = &a->ucols[a->key_u[c]];
    const agg_view *v = &sc->views[a->key_u[c]];
    uint64_t *kv = sc->kv + (uint64_t)c * AGG_PIECE;
    uint8_t *kn = sc->kn + (uint64_t)c * AGG_PIECE;
    if (uc->dom == DOM_BYTES) {
      const uint8_t **kp = sc->kp + (uint64_t)c * AGG_PIECE;
      for (uint64_t i = 0; i < n; i++) {
        kn[i] = v->valid ? !v->valid[i] : 0;
        kv[i] = v->bn[i], kp[i] = v->bp[i];
      }
    } else {
#define KEYS_CALL(NAME, T) keys_##NAME((const T *)v->x, v->valid, n, kv, kn)
      AGG_TYPE_SWITCH(uc->type, KEYS_CALL);
#undef KEYS_CALL
    }
    /* Each key cell hashed with the key's index as seed; the row's hash
    ** chains them (a NULL hashes as a constant of its own). */
    for (uint64_t i = 0; i < n; i++) {
      uint64_t hk = kn[i] ? 0x9E3779B97F4A7C15ull * (c + 1)
                    : uc->dom == DOM_BYTES
                        ? XXH3_64bits_withSeed(sc->kp[(uint64_t)c * AGG_PIECE + i], kv[i], c)
                        : XXH3_64bits_withSeed(&kv[i], 8, c);
      sc->hash[i] = c == 0 ? hk : (sc->hash[i] ^ (sc->hash[i] >> 29)) * 0xBF58476D1CE4E5B9ull + hk;
    }
  }
}

/* The group of every selected row of the piece (unselected: the sink, or
** any slot for direct); false when a hash table cannot grow. */
static bool piece_gids(const cs_agg *a, agg_scratch *sc, agg_table *t, const uint8_t *m, uint64_t n) {
  uint32_t *gid = sc->gid;
  if (a->kind == K_DIRECT || a->kind == K_PACKED) {
    uint64_t *code = sc->kv;
    for (uint32_t k = 0; k < a->nk; k++) {
      const agg_view *v = &sc->views[a->key_u[k]];
      int64_t kmin = a->kmin[k];
      uint64_t span = a->kspan[k], mult = a->kmult[k];
      bool first = k == 0;
#define PACK_CALL(NAME, T) pack_##NAME((const T *)v->x, v->valid, n, kmin, span, mult, first, code)
      switch (a->ucols[a->key_u[k]].type) {
        case CS_TYPE_INT8: PACK_CALL(i8, int8_t); break;
        case CS_TYPE_INT16: PACK_CALL(i16, int16_t); break;
        case CS_TYPE_INT32: PACK_CALL(i32, int32_t); break;
        case CS_TYPE_INT64: PACK_CALL(i64, int64_t); break;
        case CS_TYPE_UINT16: PACK_CALL(u16, uint16_t); break;
        case CS_TYPE_UINT32: PACK_CALL(u32, uint32_t); break;
        default: PACK_CALL(u8, uint8_t); break; /* UINT8, BOOL */
      }
#undef PACK_CALL
    }
    if (a->kind == K_DIRECT) {
#pragma omp simd
      for (uint64_t i = 0; i < n; i++) gid[i] = (uint32_t)code[i];
      return true;
    }
    for (uint64_t i = 0; i < n; i++) {
      if (!m[i]) {
        gid[i] = 0;
        continue;
      }
      if (!(gid[i] = packed_find_or_add(a, t, code[i]))) return false;
    }
    return true;
  }
  if (a->kind == K_BYTES) {
    const agg_view *v = &sc->views[a->key_u[0]];
    if (sc->rcodes) return piece_gids_codes(a, sc, t, m, n);
    if (v->off && a->dict_max) return piece_gids_dict(a, sc, t, v, m, n);
    for (uint64_t i = 0; i < n; i++) {
      if (!m[i]) {
        gid[i] = 0;
        continue;
      }
      agg_bkey k;
      if (v->valid && !v->valid[i])
        k = (agg_bkey){AGG_NULL_HASH, 0, 0, 0, NULL, 1};
      else
        bytes_key(v->bp[i], v->bn[i], v->end, &k);
      if (!(gid[i] = bytes_find_or_add(a, t, &k))) return false;
    }
    return true;
  }
  piece_hashes(a, sc, n);
  agg_tuple k;
  for (uint64_t i = 0; i < n; i++) {
    if (!m[i]) {
      gid[i] = 0;
      continue;
    }
    for (uint32_t c = 0; c < a->nk; c++) {
      uint64_t at = (uint64_t)c * AGG_PIECE + i;
      k.null[c] = sc->kn[at], k.v[c] = sc->kv[at];
      k.p[c] = a->ucols[a->key_u[c]].dom == DOM_BYTES ? sc->kp[at] : NULL;
    }
    if (!(gid[i] = table_find_or_add(a, t, sc->hash[i], &k))) return false;
  }
  return true;
}

static uint64_t mask_count(const uint8_t *m, uint64_t n) {
  uint64_t c = 0;
#pragma omp simd reduction(+ : c)
  for (uint64_t i = 0; i < n; i++) c += m[i];
  return c;
}

/* Groups [g0, g1) of a piece (gids made), few: scattered into AGG_LANES
** copies of each group's cells, row i into copy i % AGG_LANES, then the
** copies merged into the table.  A plain scatter chains the rows of one
** group through one cell in memory (load, add, store, the next row's load
** waiting on the store), which is slow when one group takes most rows;
** the copies cut each chain in AGG_LANES. */
static void piece_lanes(const cs_agg *a, agg_scratch *sc, agg_table *t, const uint8_t *m, uint64_t n,
                        uint64_t g0, uint64_t g1) {
  const uint32_t *gid = sc->gid;
  uint32_t *g2 = sc->gid2, nv = a->nv;
  uint64_t *lrows = sc->lrows;
  uint32_t base = (uint32_t)g0;
#pragma omp simd
  for (uint64_t i = 0; i < n; i++) g2[i] = (gid[i] - base) * AGG_LANES + (uint32_t)(i % AGG_LANES);
  /* unselected rows of a hashed table point at the sink, below g0: give
  ** them lane cell 0 (their mask byte adds nothing) */
  if (g0)
    for (uint64_t i = 0; i < n; i++) g2[i] = gid[i] ? g2[i] : 0;
  for (uint64_t i = 0; i < n; i++) lrows[g2[i]] += m[i];
  for (uint32_t j = 0; j < nv; j++) {
    const agg_val *v = &a->vals[j];
    col_piece_gs(v->type, &sc->views[v->u], m, sc->eff, g2, n, v->what, sc->lcells + j, nv);
  }
  for (uint64_t g = g0; g < g1; g++)
    for (uint64_t l = 0; l < AGG_LANES; l++) {
      uint64_t c = (g - g0) * AGG_LANES + l;
      if (!lrows[c]) continue;
      t->rows[g] += lrows[c], lrows[c] = 0;
      for (uint32_t j = 0; j < nv; j++) {
        cell_merge(a->vals[j].dom, &t->cells[g * nv + j], &sc->lcells[c * nv + j]);
        cell_init(a->vals[j].dom, &sc->lcells[c * nv + j]);
      }
    }
}

/* Whether few groups [g0, g1) are scattered into lanes rather than passed
** over one by one: when at least three groups hold rows and none holds
** more than a third of them, by the member's counts so far (the first
** piece of a call takes the passes).  The passes cost one vectorised pass
** per group; the lanes a scatter whose cost grows with the rows one group
** takes (bench_agg, 4M rows: five equal TEXT groups 24.1 ms in lanes vs
** 33.7 in passes; 90%/10% groups, integer or TEXT, 2.2x and 1.7x slower
** in lanes). */
static bool lanes_pay(const agg_table *t, uint64_t g0, uint64_t g1) {
  uint64_t total = 0, most = 0, active = 0;
  for (uint64_t g = g0; g < g1; g++) {
    total += t->rows[g], active += t->rows[g] != 0;
    most = t->rows[g] > most ? t->rows[g] : most;
  }
  return active >= 3 && 3 * most <= total;
}

/* A piece (views filled, m its 0/1 row mask) into table t; false when a
** hash table cannot grow. */
static bool piece_grouped(const cs_agg *a, agg_scratch *sc, agg_table *t, const uint8_t *m, uint64_t n) {
  if (!piece_gids(a, sc, t, m, n)) return false;
  t->dirty = true;
  const uint32_t *gid = sc->gid;
  uint64_t *rows = t->rows;
  /* Few groups: one vectorised pass per group with the group's own mask.
  ** Scattering would chain every row through the same few accumulators in
  ** memory (a load, an add and a store per row and column). */
  uint64_t g0 = kind_hashed(a->kind) ? 1 : 0, g1 = kind_hashed(a->kind) ? t->n : t->cap;
  if (g1 - g0 <= tune.few_groups && g1 - g0 <= tune.lane_groups && lanes_pay(t, g0, g1)) {
    piece_lanes(a, sc, t, m, n, g0, g1);
    return true;
  }
  if (g1 - g0 <= tune.few_groups) {
    uint8_t *mg = sc->mask2;
    for (uint64_t g = g0; g < g1; g++) {
      uint32_t g32 = (uint32_t)g;
#pragma omp simd
      for (uint64_t i = 0; i < n; i++) mg[i] = m[i] & (uint8_t)(gid[i] == g32);
      uint64_t cnt = mask_count(mg, n);
      if (!cnt) continue;
      rows[g] += cnt;
      for (uint32_t j = 0; j < a->nv; j++) {
        const agg_val *v = &a->vals[j];
        col_piece_ug(v->type, &sc->views[v->u], mg, sc->eff, n, v->what, &t->cells[g * a->nv + j]);
      }
    }
    return true;
  }
  for (uint64_t i = 0; i < n; i++) rows[gid[i]] += m[i];
  for (uint32_t j = 0; j < a->nv; j++) {
    const agg_val *v = &a->vals[j];
    col_piece_gs(v->type, &sc->views[v->u], m, sc->eff, gid, n, v->what, t->cells + j, a->nv);
  }
  return true;
}

static void piece_ungrouped(const cs_agg *a, agg_scratch *sc, const uint8_t *m, uint64_t n, agg_cell *cells) {
  for (uint32_t j = 0; j < a->nv; j++) {
    const agg_val *v = &a->vals[j];
    col_piece_ug(v->type, &sc->views[v->u], m, sc->eff, n, v->what, &cells[j]);
  }
}

/* ------------------------------------------------- per-record statistics */

static void agg_cache_free(cs__derived *d) {
  agg_cache *c = (agg_cache *)d;
  for (uint32_t k = 0; k < c->derived.n_cols; k++) cs__mem_free(atomic_load(&c->cols[k]));
  cs__mem_free(c);
}

long cs__agg_cache_blocks(const cs_store *s) {
  agg_cache *c = (agg_cache *)cs__store_derived(s, CS__DERIVED_ANALYTICS);
  long n = cs__codes_cache_blocks(s);
  if (!c) return n;
  n++;
  for (uint32_t k = 0; k < c->derived.n_cols; k++) n += atomic_load(&c->cols[k]) != NULL;
  return n;
}

/* The store's cache, made empty the first time (NULL when out of memory). */
static agg_cache *cache_of(const cs_store *s) {
  return (agg_cache *)cs__store_derived_make(
      s, CS__DERIVED_ANALYTICS, sizeof(agg_cache) + s->schema.n_cols * sizeof(agg_cell *), agg_cache_free);
}

/* Record r's statistics of column uc: the record's pieces from its first
** row, each with every bit, merged in order (exactly as the data path
** computes a wholly selected record, so the two agree bit for bit). */
typedef struct cache_job {
  const cs_store *s;
  agg_col uc;
  agg_cell *cells;
  uint64_t chunk; /* records per team chunk */
  _Atomic bool oom;
} cache_job;

static void cache_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  cache_job *j = ctx;
  const cs_store *s = j->s;
  uint8_t *buf = cs__mem_malloc(AGG_PIECE * (3 + 2 * sizeof(uint64_t)));
  if (!buf) {
    atomic_store(&j->oom, true);
    return;
  }
  uint8_t *ones = buf, *eff = buf + AGG_PIECE, *vbuf = buf + 2 * AGG_PIECE;
  const uint8_t **bp = (const uint8_t **)(void *)(buf + 3 * AGG_PIECE);
  uint64_t *bn = (uint64_t *)(void *)(buf + 3 * AGG_PIECE + AGG_PIECE * sizeof(uint64_t));
  memset(ones, 1, AGG_PIECE);
  uint64_t r0 = c * j->chunk, r1 = r0 + j->chunk < s->n_records ? r0 + j->chunk : s->n_records;
  for (uint64_t r = r0; r < r1; r++) {
    agg_cell *cell = &j->cells[r];
    cell_init(j->uc.dom, cell);
    uint64_t rows = s->first_rows[r + 1] - s->first_rows[r];
    for (uint64_t p = 0; p < rows; p += AGG_PIECE) {
      uint64_t len = rows - p < AGG_PIECE ? rows - p : AGG_PIECE;
      agg_view v;
      view_range(s, &j->uc, r, p, len, &v, vbuf, bp, bn);
      agg_cell pc;
      cell_init(j->uc.dom, &pc);
      col_piece_ug(j->uc.type, &v, ones, eff, len, CS_AGG_COUNT | CS_AGG_SUM | AGG_MINMAX, &pc);
      cell_merge(j->uc.dom, cell, &pc);
    }
  }
  cs__mem_free(buf);
}

/* The statistics of every record of column uc, computed once per store. */
static cs_rc cache_get(const cs_store *s, const agg_col *uc, int max_threads, const agg_cell **out,
                       cs_err *err) {
  agg_cache *c = cache_of(s);
  if (!c) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for aggregate statistics");
  agg_cell *cells = atomic_load(&c->cols[uc->col]);
  if (cells) {
    *out = cells;
    return CS_OK;
  }
  cells = cs__mem_malloc((s->n_records ? s->n_records : 1) * sizeof *cells);
  if (!cells) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for aggregate statistics");
  int threads = cs_kernel_threads(s->n_rows);
  if (max_threads > 0 && threads > max_threads) threads = max_threads;
  cache_job j = {.s = s, .uc = *uc, .cells = cells};
  atomic_init(&j.oom, false);
  j.chunk = s->n_records / (8 * (uint64_t)threads) + 1;
  cs__team_run(threads, (s->n_records + j.chunk - 1) / j.chunk, cache_chunk, &j);
  if (atomic_load(&j.oom)) {
    cs__mem_free(cells);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory computing aggregate statistics");
  }
  agg_cell *expected = NULL;
  if (!atomic_compare_exchange_strong(&c->cols[uc->col], &expected, cells)) {
    cs__mem_free(cells); /* another aggregate finished first: the same numbers */
    cells = expected;
  }
  *out = cells;
  return CS_OK;
}

/* Whether value column v of record r can be answered from the chunk's own
** statistics (integers without a sum), and the cell if so. */
static bool meta_cell(const cs_store *s, const agg_val *v, uint64_t r, agg_cell *out) {
  if (v->dom != DOM_INT || (v->what & CS_AGG_SUM)) return false;
  const cs_chunk *ch = &s->chunks[r * s->schema.n_cols + v->col];
  uint64_t rows = s->first_rows[r + 1] - s->first_rows[r];
  cell_init(DOM_INT, out);
  out->cnt = rows - (ch->null_count < rows ? ch->null_count : rows);
  if (out->cnt == 0) return true;
  if (!(ch->flags & CS_CHUNK_HAS_MINMAX)) return false;
  out->min.i = ch->min.i, out->max.i = ch->max.i;
  return true;
}

/* -------------------------------------------------------------- scratch */

static void scratch_free(const cs_agg *a, agg_scratch *sc) {
  if (!sc) return;
  cs__mem_free(sc->mask2), cs__mem_free(sc->mask), cs__mem_free(sc->eff), cs__mem_free(sc->ones),
      cs__mem_free(sc->gid);
  cs__mem_free(sc->hash), cs__mem_free(sc->valid), cs__mem_free(sc->xbuf), cs__mem_free((void *)sc->bp);
  cs__mem_free(sc->bn), cs__mem_free(sc->recs), cs__mem_free(sc->locs), cs__mem_free(sc->kv);
  cs__mem_free((void *)sc->kp), cs__mem_free(sc->kn), cs__mem_free(sc->views), cs__mem_free(sc->rcell);
  cs__mem_free(sc->dict.ent), cs__mem_free(sc->dict.used), cs__mem_free(sc->cmap);
  cs__mem_free(sc->gid2), cs__mem_free(sc->lrows), cs__mem_free(sc->lcells);
  table_free(a, &sc->table);
  cs__mem_free(sc);
}

static agg_scratch *scratch_new(const cs_agg *a, bool own_table) {
  agg_scratch *sc = cs__mem_calloc(1, sizeof *sc);
  if (!sc) return NULL;
  uint64_t P = AGG_PIECE, nu = a->nu ? a->nu : 1, nk = a->nk ? a->nk : 1;
  sc->mask2 = cs__mem_malloc(P);
  sc->mask = cs__mem_malloc(P), sc->eff = cs__mem_malloc(P), sc->ones = cs__mem_malloc(P);
  sc->gid = cs__mem_malloc(P * sizeof *sc->gid), sc->hash = cs__mem_malloc(P * sizeof *sc->hash);
  sc->valid = cs__mem_malloc(nu * P), sc->xbuf = cs__mem_malloc(nu * P * 8);
  sc->bp = cs__mem_malloc(nu * P * sizeof *sc->bp), sc->bn = cs__mem_malloc(nu * P * sizeof *sc->bn);
  sc->recs = cs__mem_malloc(P * 8), sc->locs = cs__mem_malloc(P * 8);
  sc->kv = cs__mem_malloc(nk * P * 8), sc->kp = cs__mem_malloc(nk * P * sizeof *sc->kp),
  sc->kn = cs__mem_malloc(nk * P);
  sc->views = cs__mem_calloc(nu, sizeof *sc->views);
  sc->rcell = cs__mem_malloc((a->nv ? a->nv : 1) * sizeof *sc->rcell);
  bool ok = sc->mask2 && sc->mask && sc->eff && sc->ones && sc->gid && sc->hash && sc->valid && sc->xbuf &&
            sc->bp && sc->bn && sc->recs && sc->locs && sc->kv && sc->kp && sc->kn && sc->views && sc->rcell;
  if (ok && a->kind != K_UNGROUPED) {
    uint64_t lanes = (uint64_t)AGG_LANE_GROUPS * AGG_LANES;
    sc->gid2 = cs__mem_malloc(P * sizeof *sc->gid2);
    sc->lrows = cs__mem_calloc(lanes, sizeof *sc->lrows);
    sc->lcells = cs__mem_malloc(lanes * (a->nv ? a->nv : 1) * sizeof *sc->lcells);
    ok = sc->gid2 && sc->lrows && sc->lcells;
    if (ok) cells_init(a, sc->lcells, lanes);
  }
  if (ok && a->kind == K_BYTES) {
    sc->dict.ent = cs__mem_calloc(AGG_DICT_SLOTS, sizeof *sc->dict.ent);
    sc->dict.used = cs__mem_malloc(AGG_DICT_MAX * sizeof *sc->dict.used);
    sc->cmap = cs__mem_malloc(CS__CODE_VALUES * sizeof *sc->cmap);
    ok = sc->dict.ent && sc->dict.used && sc->cmap;
  }
  if (ok && own_table) ok = table_make(a, &sc->table);
  if (!ok) {
    scratch_free(a, sc);
    return NULL;
  }
  memset(sc->ones, 1, P);
  return sc;
}

/* Scratch for members [0, threads); returns the threads it has scratch
** for (0: none, out of memory). */
static int scratch_ensure(cs_agg *a, int threads) {
  if (threads > a->n_scr) {
    agg_scratch **p = cs__mem_realloc(a->scr, (size_t)threads * sizeof *p);
    if (!p) return a->n_scr;
    a->scr = p;
    for (; a->n_scr < threads; a->n_scr++)
      if (!(a->scr[a->n_scr] = scratch_new(a, a->n_scr > 0 && a->kind != K_UNGROUPED))) break;
  }
  return threads < a->n_scr ? threads : a->n_scr;
}

/* ------------------------------------------------------------- the API */

cs_rc cs_agg_new(const cs_store *s, const cs_agg_spec *spec, cs_agg **out, cs_err *err) {
  *out = NULL;
  uint32_t nc = s->schema.n_cols;
  if (spec->n_keys > CS_AGG_MAX_KEYS)
    return cs_err_set(err, CS_EINVAL, "colstore: at most %u grouping keys, not %u", CS_AGG_MAX_KEYS,
                      spec->n_keys);
  for (uint32_t k = 0; k < spec->n_keys; k++)
    if (spec->keys[k] >= nc)
      return cs_err_set(err, CS_EINVAL, "colstore: grouping key column %u out of range (%u columns)",
                        spec->keys[k], nc);
  for (uint32_t c = 0; spec->what && c < nc; c++)
    if ((spec->what[c] & CS_AGG_SUM) && cs_type_is_varlen(s->cols[c].type))
      return cs_err_set(err, CS_EINVAL, "colstore: no sum of %s column %s", cs_type_name(s->cols[c].type),
                        s->cols[c].name);
  cs_agg *a = cs__mem_calloc(1, sizeof *a);
  if (!a) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for an aggregate");
  a->s = s;
  a->max_threads = spec->max_threads;
  a->nk = spec->n_keys;
  uint32_t nv = 0;
  for (uint32_t c = 0; spec->what && c < nc; c++)
    nv += (spec->what[c] & (CS_AGG_COUNT | CS_AGG_SUM | AGG_MINMAX)) != 0;
  a->ucols = cs__mem_calloc(nv + a->nk + 1, sizeof *a->ucols);
  a->vals = cs__mem_calloc(nv + 1, sizeof *a->vals);
  if (!a->ucols || !a->vals) goto oom;
  /* The columns read, each once: keys first, then values. */
  for (uint32_t k = 0; k <= a->nk + nc; k++) {
    bool key = k < a->nk;
    uint32_t col = key ? spec->keys[k] : k - a->nk;
    if (!key && (col >= nc || !spec->what || !(spec->what[col] & (CS_AGG_COUNT | CS_AGG_SUM | AGG_MINMAX))))
      continue;
    uint32_t u = 0;
    while (u < a->nu && a->ucols[u].col != col) u++;
    if (u == a->nu) {
      cs_type t = s->cols[col].type;
      a->ucols[a->nu++] = (agg_col){col, t, dom_of(t), cs_type_width(t), false};
    }
    if (key) {
      a->key_u[k] = u;
    } else {
      agg_val *v = &a->vals[a->nv++];
      v->col = col, v->u = u, v->type = s->cols[col].type, v->dom = dom_of(v->type);
      v->what = spec->what[col] & (CS_AGG_COUNT | CS_AGG_SUM | AGG_MINMAX);
    }
  }
  a->kind = a->nk ? K_NONE : K_UNGROUPED;
  if (a->kind == K_UNGROUPED) {
    if (!table_make(a, &a->table)) goto oom;
    a->n_out = 1;
  }
  a->st.kernel = a->kind == K_UNGROUPED ? "ungrouped" : "none";
  *out = a;
  return CS_OK;
oom:
  cs_agg_free(a);
  return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for an aggregate");
}

void cs_agg_free(cs_agg *a) {
  if (!a) return;
  for (int m = 0; m < a->n_scr; m++) scratch_free(a, a->scr[m]);
  cs__mem_free(a->scr);
  table_free(a, &a->table);
  cs__mem_free(a->out), cs__mem_free(a->ucols), cs__mem_free(a->vals);
  cs__mem_free(a);
}

/* Direct indexing pays O(codes) per call and per member (a table to clear
** and to scan for its groups) and saves the hashing of every row: it is
** taken when the codes are at most tune.direct_max and not much more than
** the rows the call adds.  The sweep behind AGG_DIRECT_MAX is in the essay. */
static bool agg_direct_ok(uint64_t codes, uint64_t n) {
  return codes <= tune.direct_max && codes <= n + AGG_PIECE;
}

/* Whether every key is an integer (or BOOL) whose zone-map range packs,
** with a field for NULL per key, into one 64-bit code; sets the layout. */
static bool agg_pack(cs_agg *a) {
  uint64_t mult = 1;
  for (uint32_t k = 0; k < a->nk; k++) {
    const agg_col *uc = &a->ucols[a->key_u[k]];
    if (uc->dom != DOM_INT) return false;
    cs_column_stats cst;
    cs_store_column_stats(a->s, uc->col, &cst);
    /* no min/max: no non-NULL value (or statistics we do not read): NULL only */
    uint64_t span = cst.has_minmax ? (uint64_t)cst.max.i - (uint64_t)cst.min.i + 1 : 0;
    if (cst.has_minmax && (span == 0 || cst.max.i < cst.min.i)) return false; /* 2^64 values */
    a->kmin[k] = cst.has_minmax ? cst.min.i : 0;
    a->kspan[k] = span;
    a->kmult[k] = mult;
    if (span == UINT64_MAX || __builtin_mul_overflow(mult, span + 1, &mult)) return false;
  }
  a->ncodes = mult;
  return true;
}

/* The kernel of a grouped aggregate, at its first add of n rows. */
static cs_rc agg_choose(cs_agg *a, uint64_t n, cs_err *err) {
  if (a->kind != K_NONE) return CS_OK;
  if (agg_pack(a))
    a->kind = agg_direct_ok(a->ncodes, n) ? K_DIRECT : K_PACKED;
  else
    a->kind = a->nk == 1 && a->ucols[a->key_u[0]].dom == DOM_BYTES ? K_BYTES : K_HASH;
  if (!table_make(a, &a->table)) {
    a->kind = K_NONE;
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a group table");
  }
  if (a->kind == K_BYTES && tune.dict_max) {
    /* a key that is no value column needs no pointers and lengths */
    a->dict_max = tune.dict_max;
    uint32_t u = a->key_u[0];
    bool value = false;
    for (uint32_t v = 0; v < a->nv; v++) value |= a->vals[v].u == u;
    a->ucols[u].lazy = !value;
  }
  static const char *const names[] = {"none",        "ungrouped",  "direct index",
                                      "packed hash", "bytes hash", "hash"};
  a->st.kernel = names[a->kind];
  return CS_OK;
}

/* After an add: merge the members' tables into the aggregate's and list
** the groups. */
static cs_rc agg_finish(cs_agg *a, int used, cs_err *err) {
  if (a->kind == K_UNGROUPED) return CS_OK;
  for (int m = 1; m < used && m < a->n_scr; m++) {
    agg_table *t = &a->scr[m]->table;
    if (!t->dirty) continue;
    if (!table_merge(a, &a->table, t))
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory merging %" PRIu64 " groups", t->n);
    table_reset(a, t);
  }
  if (kind_hashed(a->kind)) {
    a->n_out = a->table.n - 1;
    return CS_OK;
  }
  uint64_t n = 0;
  for (uint64_t g = 0; g < a->table.cap; g++) n += a->table.rows[g] != 0;
  uint64_t *p = cs__mem_realloc(a->out, (n ? n : 1) * sizeof *p);
  if (!p) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory listing %" PRIu64 " groups", n);
  a->out = p;
  n = 0;
  for (uint64_t g = 0; g < a->table.cap; g++)
    if (a->table.rows[g]) a->out[n++] = g;
  a->n_out = n;
  return CS_OK;
}

/* Ungrouped: a partial (nv cells and a row count) per chunk of a call,
** merged in chunk order at its end; grouped: nothing. */
static cs_rc parts_alloc(const cs_agg *a, uint64_t n_chunks, agg_cell **cells, uint64_t **rows, cs_err *err) {
  if (a->kind != K_UNGROUPED) return CS_OK;
  *cells = cs__mem_malloc(n_chunks * (a->nv ? a->nv : 1) * sizeof **cells);
  *rows = cs__mem_calloc(n_chunks, sizeof **rows);
  if (!*cells || !*rows)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for %" PRIu64 " partial aggregates", n_chunks);
  cells_init(a, *cells, n_chunks);
  return CS_OK;
}

/* The end of an add call: the partials merged in chunk order (the same bits
** for any thread count), the members' tables merged, the groups listed. */
static cs_rc call_end(cs_agg *a, uint64_t n_chunks, const agg_cell *part, const uint64_t *part_rows, int used,
                      bool oom, cs_err *err) {
  if (a->kind == K_UNGROUPED)
    for (uint64_t c = 0; c < n_chunks; c++) {
      a->table.rows[0] += part_rows[c];
      for (uint32_t v = 0; v < a->nv; v++)
        cell_merge(a->vals[v].dom, &a->table.cells[v], &part[c * a->nv + v]);
    }
  if (oom) {
    agg_finish(a, used, NULL);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory growing a group table");
  }
  return agg_finish(a, used, err);
}

/* --------------------------------------------------------------- ranges */

typedef struct range_job {
  cs_agg *a;
  const cs__pred_set *preds; /* or NULL */
  uint64_t first, n;
  const uint8_t *user;
  bool use_stats;
  const agg_cell **stats; /* [nv]: per-record cells, or NULL where meta_cell answers */
  agg_cell *part;         /* ungrouped: [n_chunks * nv] */
  uint64_t *part_rows;    /* ungrouped: [n_chunks] */
  _Atomic uint64_t scanned, skipped, from_stats, selected, coded;
  _Atomic bool oom;
} range_job;

/* What record r can give: 0 when no row of it can be selected (the zone
** maps rule it out, or every row of it is deleted), 1 when the zone maps
** prove every predicate true for every row, -1 when the data decides.  A
** store without deletions pays one NULL test. */
static int record_decide(const cs_store *s, const cs__pred_set *preds, uint64_t r) {
  if (s->dels && s->dels[r].n_deleted >= s->first_rows[r + 1] - s->first_rows[r]) return 0;
  return preds ? cs__pred_set_record(preds, r) : 1;
}

/* Whether record r, decided dec, its rows [rlo, rhi) in the call, is
** answered from the per-record statistics: the whole record, every row
** selected, and none deleted (the statistics describe every position). */
static bool record_by_stats(const range_job *j, uint64_t r, int dec, uint64_t rlo, uint64_t rhi) {
  const cs_store *s = j->a->s;
  return j->use_stats && dec == 1 && rlo == s->first_rows[r] && rhi == s->first_rows[r + 1] &&
         !(s->dels && s->dels[r].bits);
}

/* Record r answered from statistics into rc (nv cells). */
static void record_from_stats(const range_job *j, uint64_t r, agg_cell *rc) {
  const cs_agg *a = j->a;
  for (uint32_t v = 0; v < a->nv; v++) {
    agg_cell meta;
    if (meta_cell(a->s, &a->vals[v], r, &meta))
      cell_merge(a->vals[v].dom, &rc[v], &meta);
    else
      cell_merge(a->vals[v].dom, &rc[v], &j->stats[v][r]);
  }
}

static void range_chunk(void *ctx, uint64_t c, int member) {
  range_job *j = ctx;
  cs_agg *a = j->a;
  const cs_store *s = a->s;
  const uint64_t *fr = s->first_rows;
  agg_scratch *sc = a->scr[member];
  agg_table *t = member == 0 ? &a->table : &sc->table;
  bool grouped = a->kind != K_UNGROUPED;
  uint32_t nv = a->nv;
  if (atomic_load_explicit(&j->oom, memory_order_relaxed)) return;
  uint64_t lo_row = j->first + c * AGG_CHUNK_ROWS, end_row = j->first + j->n;
  uint64_t hi_row = lo_row + AGG_CHUNK_ROWS < end_row ? lo_row + AGG_CHUNK_ROWS : end_row;
  uint64_t r = cs__locate(s, lo_row);
  if (fr[r] < lo_row && lo_row != j->first) r++; /* that record is its first chunk's */
  agg_cell *pc = grouped ? NULL : j->part + c * nv;
  uint64_t scanned = 0, skipped = 0, from_stats = 0, selected = 0, coded = 0;
  for (; r < s->n_records; r++) {
    uint64_t rlo = fr[r] > j->first ? fr[r] : j->first, rhi = fr[r + 1] < end_row ? fr[r + 1] : end_row;
    if (rlo >= hi_row) break;
    int dec = record_decide(s, j->preds, r);
    if (dec == 0) {
      skipped++;
      continue;
    }
    const uint8_t *dv = s->dels ? s->dels[r].bits : NULL; /* deleted positions of r, or NULL */
    if (sc->dict.ent)
      dict_reset(&sc->dict); /* group ids hold for the call; the keys' bytes are the record's */
    sc->rcodes = NULL;
    if (a->codes && rhi > rlo &&
        (sc->rcodes = cs__codes_record(a->codes, s, a->ucols[a->key_u[0]].col, r, a->codes_max))) {
      memset(sc->cmap, 0,
             sc->rcodes->n_vals * sizeof *sc->cmap); /* codes are the record's, groups the call's */
      coded++;
    }
    agg_cell *rc = sc->rcell;
    if (!grouped)
      for (uint32_t v = 0; v < nv; v++) cell_init(a->vals[v].dom, &rc[v]);
    if (record_by_stats(j, r, dec, rlo, rhi)) {
      from_stats++;
      selected += rhi - rlo;
      record_from_stats(j, r, rc);
    } else {
      scanned++;
      for (uint64_t p = rlo; p < rhi; p += AGG_PIECE) {
        uint64_t len = rhi - p < AGG_PIECE ? rhi - p : AGG_PIECE;
        const uint8_t *m = sc->ones;
        uint64_t nsel = len;
        if (dec != 1 || j->user || dv) {
          uint8_t *mm = sc->mask;
          if (dec != 1) {
            uint64_t d1 = 0, d2 = 0;
            cs__pred_set_eval_span(j->preds, p, 0, len, mm, UINT64_MAX, &d1, &d2);
            if (j->user) {
              const uint8_t *u = j->user + (p - j->first);
              for (uint64_t i = 0; i < len; i++) mm[i] &= u[i] != 0;
            }
          } else if (j->user) {
            const uint8_t *u = j->user + (p - j->first);
            for (uint64_t i = 0; i < len; i++) mm[i] = u[i] != 0;
          } else {
            memset(mm, 1, len);
          }
          if (dv) cs_store_mask_deleted(s, p, len, mm); /* a deleted position yields no row */
          m = mm;
          nsel = mask_count(mm, len);
          if (nsel == 0) continue;
        }
        for (uint32_t u = 0; u < a->nu; u++)
          view_range(s, &a->ucols[u], r, p - fr[r], len, &sc->views[u], sc->valid + (uint64_t)u * AGG_PIECE,
                     sc->bp + (uint64_t)u * AGG_PIECE, sc->bn + (uint64_t)u * AGG_PIECE);
        selected += nsel;
        sc->rlocal = p - fr[r];
        if (!grouped) {
          piece_ungrouped(a, sc, m, len, rc); /* pieces merge into the record's partial */
        } else if (!piece_grouped(a, sc, t, m, len)) {
          atomic_store(&j->oom, true);
          return;
        }
      }
    }
    if (!grouped)
      for (uint32_t v = 0; v < nv; v++) cell_merge(a->vals[v].dom, &pc[v], &rc[v]);
  }
  if (!grouped) j->part_rows[c] = selected;
  atomic_fetch_add_explicit(&j->scanned, scanned, memory_order_relaxed);
  atomic_fetch_add_explicit(&j->skipped, skipped, memory_order_relaxed);
  atomic_fetch_add_explicit(&j->from_stats, from_stats, memory_order_relaxed);
  atomic_fetch_add_explicit(&j->selected, selected, memory_order_relaxed);
  atomic_fetch_add_explicit(&j->coded, coded, memory_order_relaxed);
}

static int agg_threads(const cs_agg *a, uint64_t work) {
  int threads = cs_kernel_threads(work);
  if (a->max_threads > 0 && threads > a->max_threads) threads = a->max_threads;
  return threads < 1 ? 1 : threads;
}

static void stats_add(cs_agg *a, uint64_t selected, uint64_t scanned, uint64_t skipped, uint64_t from_stats,
                      uint64_t coded, int used) {
  a->st.rows_selected += selected;
  a->st.records_coded += coded;
  a->st.records_scanned += scanned;
  a->st.records_skipped += skipped;
  a->st.records_from_stats += from_stats;
  if (used > a->st.threads) a->st.threads = used;
}

cs_rc cs_agg_add_range(cs_agg *a, const cs_selector *sel, uint64_t first, uint64_t n,
                       const uint8_t *user_mask, cs_err *err) {
  const cs_store *s = a->s;
  if (first > s->n_rows || n > s->n_rows - first)
    return cs_err_set(err, CS_EINVAL, "colstore: rows %" PRIu64 "..+%" PRIu64 " outside the %" PRIu64 " rows",
                      first, n, s->n_rows);
  if (sel && cs__selector_store(sel) != s)
    return cs_err_set(err, CS_EINVAL, "colstore: the selector was made for another store");
  cs_rc rc = agg_choose(a, n, err);
  if (rc != CS_OK || n == 0) return rc;
  if (a->kind == K_BYTES && tune.codes_bytes && !a->codes) {
    a->codes = cs__codes_of(s, a->ucols[a->key_u[0]].col); /* NULL when out of memory: the old way */
    a->codes_max = tune.codes_bytes;
  }
  const cs__pred_set *preds = sel ? cs__selector_preds(sel) : NULL;
  range_job j = {.a = a, .preds = preds, .first = first, .n = n, .user = user_mask};
  j.use_stats = a->kind == K_UNGROUPED && !user_mask;
  /* Which records will be read, and whether any is answered from the
  ** statistics: the threads follow the rows read, not the rows covered. */
  uint64_t work = 0;
  bool any_stats = false;
  for (uint64_t r = cs__locate(s, first); r < s->n_records && s->first_rows[r] < first + n; r++) {
    uint64_t rlo = s->first_rows[r] > first ? s->first_rows[r] : first;
    uint64_t rhi = s->first_rows[r + 1] < first + n ? s->first_rows[r + 1] : first + n;
    int dec = record_decide(s, preds, r);
    if (dec == 0) continue;
    if (record_by_stats(&j, r, dec, rlo, rhi))
      any_stats = true;
    else
      work += rhi - rlo;
  }
  const agg_cell *stats_stack[16] = {0};
  j.stats = a->nv <= 16 ? stats_stack : cs__mem_calloc(a->nv, sizeof *j.stats);
  if (!j.stats) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for an aggregate");
  uint64_t n_chunks = (n + AGG_CHUNK_ROWS - 1) / AGG_CHUNK_ROWS;
  int threads = agg_threads(a, work), used = 1;
  for (uint32_t v = 0; v < a->nv && any_stats; v++) {
    /* Integers without a sum are answered by the chunks' own statistics,
    ** unless a chunk with values lacks min/max (not our writer's). */
    bool need = !(a->vals[v].dom == DOM_INT && !(a->vals[v].what & CS_AGG_SUM));
    agg_cell meta;
    for (uint64_t r = 0; r < s->n_records && !need; r++) need = !meta_cell(s, &a->vals[v], r, &meta);
    if (need && (rc = cache_get(s, &a->ucols[a->vals[v].u], a->max_threads, &j.stats[v], err)) != CS_OK)
      goto done;
  }
  if (!(threads = scratch_ensure(a, threads))) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory for aggregate scratch");
    goto done;
  }
  if ((rc = parts_alloc(a, n_chunks, &j.part, &j.part_rows, err)) != CS_OK) goto done;
  atomic_init(&j.scanned, 0), atomic_init(&j.skipped, 0), atomic_init(&j.from_stats, 0),
      atomic_init(&j.selected, 0);
  atomic_init(&j.coded, 0);
  atomic_init(&j.oom, false);
  used = cs__team_run(threads, n_chunks, range_chunk, &j);
  if ((rc = call_end(a, n_chunks, j.part, j.part_rows, used, atomic_load(&j.oom), err)) != CS_OK) goto done;
  stats_add(a, atomic_load(&j.selected), atomic_load(&j.scanned), atomic_load(&j.skipped),
            atomic_load(&j.from_stats), atomic_load(&j.coded), used);
done:
  cs__mem_free(j.part), cs__mem_free(j.part_rows);
  if (j.stats != stats_stack) cs__mem_free((void *)j.stats);
  return rc;
}

/* ---------------------------------------------------------------- lists */

typedef struct rows_job {
  cs_agg *a;
  const cs__pred_set *preds;
  const uint64_t *rows;
  uint64_t n;
  agg_cell *part;
  uint64_t *part_rows;
  _Atomic uint64_t selected;
  _Atomic bool oom;
} rows_job;

/* Clears m[i] where a list's row (record recs[i], row locs[i]) is deleted. */
static void list_mask_deleted(const cs_store *s, const uint64_t *recs, const uint64_t *locs, uint64_t n,
                              uint8_t *m) {
  for (uint64_t i = 0; i < n; i++) {
    const uint8_t *bits = s->dels[recs[i]].bits;
    uint64_t l = locs[i];
    if (bits && ((bits[l >> 3] >> (l & 7)) & 1)) m[i] = 0;
  }
}

static void rows_chunk(void *ctx, uint64_t c, int member) {
  rows_job *j = ctx;
  cs_agg *a = j->a;
  const cs_store *s = a->s;
  agg_scratch *sc = a->scr[member];
  agg_table *t = member == 0 ? &a->table : &sc->table;
  bool grouped = a->kind != K_UNGROUPED;
  if (atomic_load_explicit(&j->oom, memory_order_relaxed)) return;
  uint64_t i0 = c * AGG_CHUNK_LIST, i1 = i0 + AGG_CHUNK_LIST < j->n ? i0 + AGG_CHUNK_LIST : j->n;
  uint64_t selected = 0, last_rec = UINT64_MAX;
  int dec = 1;
  sc->rcodes = NULL; /* a list's rows come from many records: no codes */
  for (uint64_t p = i0; p < i1; p += AGG_PIECE) {
    uint64_t len = i1 - p < AGG_PIECE ? i1 - p : AGG_PIECE;
    uint8_t *m = sc->mask;
    for (uint64_t i = 0; i < len; i++) {
      uint64_t row = j->rows[p + i], r = cs__locate(s, row);
      sc->recs[i] = r, sc->locs[i] = row - s->first_rows[r];
      if (j->preds && r != last_rec) dec = cs__pred_set_record(j->preds, r), last_rec = r;
      m[i] = dec == 1 ? 1 : dec == 0 ? 0 : cs__pred_set_row(j->preds, r, sc->locs[i]);
    }
    if (s->dels) list_mask_deleted(s, sc->recs, sc->locs, len, m);
    uint64_t nsel = mask_count(m, len);
    if (nsel == 0) continue;
    for (uint32_t u = 0; u < a->nu; u++)
      view_rows(s, &a->ucols[u], sc->recs, sc->locs, len, &sc->views[u],
                sc->xbuf + (uint64_t)u * AGG_PIECE * 8, sc->valid + (uint64_t)u * AGG_PIECE,
                sc->bp + (uint64_t)u * AGG_PIECE, sc->bn + (uint64_t)u * AGG_PIECE);
    selected += nsel;
    if (!grouped) {
      piece_ungrouped(a, sc, m, len, j->part + c * a->nv);
    } else if (!piece_grouped(a, sc, t, m, len)) {
      atomic_store(&j->oom, true);
      return;
    }
  }
  if (!grouped) j->part_rows[c] = selected;
  atomic_fetch_add_explicit(&j->selected, selected, memory_order_relaxed);
}

cs_rc cs_agg_add_rows(cs_agg *a, const cs_selector *sel, const uint64_t *rows, uint64_t n, cs_err *err) {
  const cs_store *s = a->s;
  for (uint64_t i = 0; i < n; i++)
    if (rows[i] >= s->n_rows)
      return cs_err_set(err, CS_EINVAL, "colstore: row %" PRIu64 " outside the %" PRIu64 " rows", rows[i],
                        s->n_rows);
  if (sel && cs__selector_store(sel) != s)
    return cs_err_set(err, CS_EINVAL, "colstore: the selector was made for another store");
  cs_rc rc = agg_choose(a, n, err);
  if (rc != CS_OK || n == 0) return rc;
  rows_job j = {.a = a, .preds = sel ? cs__selector_preds(sel) : NULL, .rows = rows, .n = n};
  uint64_t n_chunks = (n + AGG_CHUNK_LIST - 1) / AGG_CHUNK_LIST;
  int threads = scratch_ensure(a, agg_threads(a, n)), used = 1;
  if (!threads) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for aggregate scratch");
  if ((rc = parts_alloc(a, n_chunks, &j.part, &j.part_rows, err)) != CS_OK) goto done;
  atomic_init(&j.selected, 0), atomic_init(&j.oom, false);
  used = cs__team_run(threads, n_chunks, rows_chunk, &j);
  if ((rc = call_end(a, n_chunks, j.part, j.part_rows, used, atomic_load(&j.oom), err)) != CS_OK) goto done;
  stats_add(a, atomic_load(&j.selected), 0, 0, 0, 0, used);
done:
  cs__mem_free(j.part), cs__mem_free(j.part_rows);
  return rc;
}

/* -------------------------------------------------------------- results */

void cs_agg_stats_get(const cs_agg *a, cs_agg_stats *out) { *out = a->st; }

uint64_t cs_agg_groups(const cs_agg *a) { return a->n_out; }

/* The table slot of group g. */
static uint64_t agg_slot(const cs_agg *a, uint64_t g) {
  assert(g < a->n_out);
  return a->kind == K_DIRECT ? a->out[g] : kind_hashed(a->kind) ? g + 1 : 0;
}

void cs_agg_key(const cs_agg *a, uint64_t g, uint32_t k, cs_value *out) {
  memset(out, 0, sizeof *out);
  assert(k < a->nk);
  uint64_t slot = agg_slot(a, g);
  const agg_col *uc = &a->ucols[a->key_u[k]];
  const agg_table *t = &a->table;
  if (a->kind == K_DIRECT || a->kind == K_PACKED) {
    uint64_t code = a->kind == K_DIRECT ? slot : t->ghash[slot];
    uint64_t f = code / a->kmult[k] % (a->kspan[k] + 1);
    if (f < a->kspan[k]) out->kind = CS_VAL_INT, out->i = (int64_t)((uint64_t)a->kmin[k] + f);
    return;
  }
  if (t->kn[k][slot]) return;
  uint64_t v = t->kv[k][slot];
  switch (uc->dom) {
    case DOM_INT: out->kind = CS_VAL_INT, out->i = (int64_t)v; break;
    case DOM_DBL: out->kind = CS_VAL_FLOAT, memcpy(&out->f, &v, 8); break;
    default:
      out->kind = uc->type == CS_TYPE_BLOB ? CS_VAL_BLOB : CS_VAL_TEXT;
      out->p = t->kp[k][slot], out->n = v;
      break;
  }
}

uint64_t cs_agg_count(const cs_agg *a, uint64_t g) { return a->table.rows[agg_slot(a, g)]; }

void cs_agg_result_get(const cs_agg *a, uint64_t g, uint32_t col, cs_agg_result *out) {
  memset(out, 0, sizeof *out);
  uint32_t j = 0;
  while (j < a->nv && a->vals[j].col != col) j++;
  if (j == a->nv) return;
  const agg_val *v = &a->vals[j];
  const agg_cell *c = &a->table.cells[agg_slot(a, g) * a->nv + j];
  out->count = c->cnt;
  if (c->cnt == 0) return;
  switch (v->dom) {
    case DOM_INT: {
      agg_i128 sum = cell_sum_i(c);
      if (sum >= INT64_MIN && sum <= INT64_MAX)
        out->sum.kind = CS_VAL_INT, out->sum.i = (int64_t)sum;
      else
        out->sum_overflow = true, out->sum.kind = CS_VAL_FLOAT, out->sum.f = (double)sum;
      out->avg = (double)sum / (double)c->cnt;
      out->min.kind = out->max.kind = CS_VAL_INT;
      out->min.i = c->min.i, out->max.i = c->max.i;
      break;
    }
    case DOM_DBL: {
      /* an infinite or NaN total carries no meaningful compensation */
      double sum = isfinite(c->u.f.s) && isfinite(c->u.f.c) ? c->u.f.s + c->u.f.c : c->u.f.s;
      out->sum.kind = CS_VAL_FLOAT, out->sum.f = sum == 0.0 ? 0.0 : sum;
      out->avg = sum / (double)c->cnt;
      out->min.kind = out->max.kind = CS_VAL_FLOAT;
      out->min.f = c->min.f == 0.0 ? 0.0 : c->min.f; /* -0.0 is delivered as 0.0 */
      out->max.f = c->max.f == 0.0 ? 0.0 : c->max.f;
      break;
    }
    default:
      out->min.kind = out->max.kind = v->type == CS_TYPE_BLOB ? CS_VAL_BLOB : CS_VAL_TEXT;
      out->min.p = c->min.p, out->min.n = c->u.n.min_n;
      out->max.p = c->max.p, out->max.n = c->u.n.max_n;
      break;
  }
}
