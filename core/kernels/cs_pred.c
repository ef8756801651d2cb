/*
** cs_pred.c - predicate evaluation: `col OP constant` (=, !=, <, <=, >, >=),
** BETWEEN, IN, IS NOT and IS [NOT] NULL over a row range, ANDed into a byte mask.
**
** Semantics are SQLite's, on storage classes.  A column's values are INT
** (the integer types and BOOL), FLOAT (FLOAT32/64, NaN read as NULL), TEXT
** or BLOB; the classes order NULL < numbers < TEXT < BLOB, INT and FLOAT
** compare as exact numbers, TEXT and BLOB by memcmp then length.  A NULL
** value satisfies only ISNULL (so `x != 5` excludes NULL rows), and a
** comparison with a NULL (or NaN) operand selects nothing.  IS NOT is the
** exception: `x IS NOT 5` is true for NULL rows, so it is compiled as `x =
** 5` with a negate flag, and both the data test and the zone-map decision
** of the equality are inverted.  That is exact because the equality's
** decisions are: "no row equal" (0) holds for NULL and NaN rows too, so
** its negation "every row" (1) needs no null count or NaN proof, and
** "every row equal" (1) is only decided for a chunk without NULL or NaN.
**
** HOW IT WORKS.  Each predicate is first compiled against its column's type
** into one of a few shapes: NONE (selects nothing), ALL (every non-NULL
** row), ISNULL, RANGE [lo, hi] (=, <, <=, >, >=, BETWEEN), NE, or IN.  The
** compile step does all the cross-class and exactness work once:
**
**   - an operand of another class becomes a constant: `int_col < 'abc'` is
**     ALL, `int_col = 'abc'` is NONE;
**   - INT vs FLOAT is decided exactly, never by converting an int64 to a
**     double: `int_col < 2.5` becomes the integer range [MIN, 2], and
**     `real_col <= 9007199254740993` the double range [-inf, 2^53], because
**     2^53 is the largest double below that integer;
**   - bounds are clamped to the column type (an INT8 column against 1000 is
**     NONE or ALL), and FLOAT32 columns get exact float bounds, so the inner
**     loops compare in the column's own type: lo <= x && x <= hi, with NaN
**     failing every comparison for free.
**
** The rows are then walked in pieces of at most CS_PRED_PIECE_ROWS rows
** that never cross a record (so a piece is one contiguous array, in cache).
** Per record the zone map (min, max, null count) is tried first: when it
** decides every row of the record, the piece is filled with 0 or 1 without
** reading data and the record counts as skipped.  Otherwise the first
** undecided predicate writes the piece and each later one ANDs into it,
** stopping as soon as the piece is all zero.  Pieces are independent, so
** large ranges are threaded over pieces and the mask is the same for any
** thread count.
**
** TEXT and BLOB (issue 26).  Format 1 keeps no min/max for them, and a
** row-by-row byte comparison costs about 12 ns a row.  So a TEXT/BLOB test
** that reads values (RANGE, NE, IN) asks for the record's dictionary codes
** (cs_codes.c: at most CS__CODE_VALUES distinct values and a byte per row,
** built by the first query that reads the record and cached on the
** snapshot), tests each distinct value once into a table of a byte per
** code, and decides the record from it as a zone map would (no value
** passes: skipped; every value passes and no NULL: every row) or else gives
** each row table[code].  That is exact, and better than a min/max zone map
** would be: a record of {"ATL", "ORD", "SFO"} is skipped by `= 'JFK'`.  A
** record with more distinct values is marked uncoded once and keeps the
** byte path (bench/bench_textpred.py's sweep: through the codes a record
** costs the same whatever its number of values up to 256; the limit is the
** code's byte, not a measured crossover).  The decisions and tables are
** made once per record per span (eval_span keeps them for the first
** CS_PRED_STACK predicates; later ones read bytes).  The plan feeds `LIKE
** 'p%'` here as SQLite's bounds (x >= 'p' AND x < 'q'), re-checked by
** SQLite.  Comparisons are BINARY: memcmp, then length, as value_cmp.
**
** Except a folded IN (cs_pred.fold): a TEXT/BLOB value matches a member
** when both are equal once ASCII letters are lower-cased and trailing
** spaces dropped.  It is for a caller that cannot know the collation but
** has SQLite check each row again (a colstore table's TEXT IN list, whose
** collation a subquery's COLLATE decides unseen): BINARY, NOCASE and RTRIM
** equality each imply folded equality, so the rows selected are a superset
** of the rows that match under any of the three.  It runs where the BINARY
** IN does (bytes_match, so through the codes too, once per distinct value
** of a record) and never through a zone map: folding does not keep the
** byte order.
**
** The choice a newcomer might question: FLOAT zone maps decide "every row
** true" only for chunks flagged CS_CHUNK_SORTED.  The writer's min/max skip
** NaN and its null count does not count NaN, so an unsorted float chunk may
** hold NaN rows (NULL to SQLite) that a min/max test would wrongly select;
** the sorted flag is the only stored proof that a chunk has no NaN.  "Every
** row false" needs no such proof and is decided for any chunk.
*/
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cs_kernels_internal.h"

/* Rows per piece: 16K one-byte mask entries plus up to 128 KiB of values
** stay within L2 while every predicate of the piece is applied. */
#define CS_PRED_PIECE_ROWS 16384u
/* IN sets up to this size are tested member by member (vectorised); larger
** ones are sorted once and binary-searched per row. */
#define CS_PRED_IN_LINEAR 16u
/* Predicates compiled on the stack; more take one allocation. */
#define CS_PRED_STACK 16u

enum { DOM_INT, DOM_DBL, DOM_BYTES };
enum { PK_NONE, PK_ALL, PK_ISNULL, PK_RANGE, PK_NE, PK_IN };

typedef struct bbound {
  const uint8_t *p; /* bytes of the bound; not owned */
  uint64_t n;
  bool on;   /* false: unbounded on this side */
  bool incl; /* inclusive */
} bbound;

/* One predicate compiled against its column (see the essay above). */
typedef struct pcomp {
  uint32_t col;
  cs_type type;
  int dom;             /* DOM_* of the column */
  int kind;            /* PK_* */
  bool negate;         /* IS NOT: the result of kind, inverted (NULL rows included) */
  int64_t ilo, ihi;    /* DOM_INT RANGE, clamped to the type; NE value in ilo */
  double dlo, dhi;     /* DOM_DBL RANGE (exact floats for FLOAT32); NE value in dlo */
  bbound blo, bhi;     /* DOM_BYTES RANGE; NE value in blo */
  cs_value_kind bkind; /* DOM_BYTES: the column's class (TEXT or BLOB) */
  const cs_value *set; /* IN members as given; not owned */
  uint64_t n_set;
  bool fold;                  /* DOM_BYTES IN: members compared folded (cs_pred.fold) */
  const void *sorted;         /* IN over CS_PRED_IN_LINEAR: sorted unique int64/double; owned by the caller */
  uint64_t n_sorted;          /* 0: test the members of set one by one */
  int64_t set_imin, set_imax; /* IN: range of the members that can match */
  double set_dmin, set_dmax;
  cs__codes *codes; /* DOM_BYTES RANGE, NE, IN: the column's dictionary codes on the store, or NULL */
} pcomp;

/* -------------------------------------------------------- exact numerics */

#define TWO63 9223372036854775808.0

/* Sign of i - r, exactly (r not NaN); SQLite's sqlite3IntFloatCompare. */
static int cmp_i64_f64(int64_t i, double r) {
  if (r >= TWO63) return -1;
  if (r < -TWO63) return 1;
  int64_t y = (int64_t)r; /* in range: defined, truncates toward zero */
  if (i < y) return -1;
  if (i > y) return 1;
  double d = (double)i; /* exact: i == y, which came from a double */
  return (d < r) ? -1 : (d > r) ? 1 : 0;
}

/* r is an integer in int64 range; *out gets it. */
static bool f64_to_i64_exact(double r, int64_t *out) {
  if (!(r >= -TWO63 && r < TWO63) || floor(r) != r) return false;
  *out = (int64_t)r;
  return true;
}

/* Smallest float >= d and largest float <= d (d not NaN). */
static double f32_ceil(double d) {
  if (d > FLT_MAX) return INFINITY;
  if (d < -FLT_MAX) return d == -INFINITY ? -INFINITY : -FLT_MAX;
  float f = (float)d;
  if ((double)f < d) f = nextafterf(f, INFINITY);
  return f;
}

static double f32_floor(double d) {
  if (d < -FLT_MAX) return -INFINITY;
  if (d > FLT_MAX) return d == INFINITY ? INFINITY : FLT_MAX;
  float f = (float)d;
  if ((double)f > d) f = nextafterf(f, -INFINITY);
  return f;
}

/* A NULL operand, or a NaN one (SQLite binds NaN as NULL). */
static bool value_is_null(const cs_value *v) {
  return v->kind == CS_VAL_NULL || (v->kind == CS_VAL_FLOAT && isnan(v->f)) ||
         (unsigned)v->kind > CS_VAL_BLOB;
}

/* Storage-class rank: numbers 1, TEXT 2, BLOB 3. */
static int value_class(cs_value_kind k) { return k == CS_VAL_TEXT ? 2 : k == CS_VAL_BLOB ? 3 : 1; }

/* The constant result of `x op v` when every x is above (sign > 0) or
** below (sign < 0) v, as it is across storage classes. */
static bool op_const(cs_cmp op, int sign) {
  switch (op) {
    case CS_CMP_LT:
    case CS_CMP_LE: return sign < 0;
    case CS_CMP_GT:
    case CS_CMP_GE: return sign > 0;
    default: return false; /* EQ */
  }
}

/* ----------------------------------------------------------- one value */

/* SQLite's order of two values of any class (neither NULL): numbers
** exactly, TEXT and BLOB by memcmp then length. */
static int value_cmp(const cs_value *a, const cs_value *b) {
  int ca = value_class(a->kind), cb = value_class(b->kind);
  if (ca != cb) return ca < cb ? -1 : 1;
  if (ca == 1) {
    if (a->kind == CS_VAL_INT && b->kind == CS_VAL_INT) return (a->i > b->i) - (a->i < b->i);
    if (a->kind == CS_VAL_FLOAT && b->kind == CS_VAL_FLOAT) return (a->f > b->f) - (a->f < b->f);
    return a->kind == CS_VAL_INT ? cmp_i64_f64(a->i, b->f) : -cmp_i64_f64(b->i, a->f);
  }
  uint64_t n = a->n < b->n ? a->n : b->n;
  int c = n ? memcmp(a->p, b->p, n) : 0;
  if (c) return c < 0 ? -1 : 1;
  return (a->n > b->n) - (a->n < b->n);
}

static uint8_t fold_byte(uint8_t c) { return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c; }

/* Trailing spaces (0x20) off: n less the run of them at the end of p. */
static uint64_t fold_len(const uint8_t *p, uint64_t n) {
  while (n && p[n - 1] == ' ') n--;
  return n;
}

/* Whether a and b are equal after folding (cs_pred.fold): ASCII letters to
** lower case, trailing spaces dropped.  Each of BINARY, NOCASE (which folds
** ASCII only) and RTRIM (which drops trailing 0x20 only) equates two
** strings only if this does. */
static bool fold_eq(const uint8_t *a, uint64_t na, const uint8_t *b, uint64_t nb) {
  na = fold_len(a, na), nb = fold_len(b, nb);
  if (na != nb) return false;
  for (uint64_t i = 0; i < na; i++)
    if (a[i] != b[i] && fold_byte(a[i]) != fold_byte(b[i])) return false;
  return true;
}

/* x equals the IN member m (neither NULL): as value_cmp, or folded. */
static bool in_member_eq(const cs_pred *pr, const cs_value *x, const cs_value *m) {
  if (pr->fold && x->kind == m->kind && (x->kind == CS_VAL_TEXT || x->kind == CS_VAL_BLOB))
    return fold_eq(x->p, x->n, m->p, m->n);
  return value_cmp(x, m) == 0;
}

bool cs_pred_match_value(const cs_pred *pr, const cs_value *x) {
  bool null = value_is_null(x);
  switch (pr->op) {
    case CS_CMP_ISNULL: return null;
    case CS_CMP_NOTNULL: return !null;
    case CS_CMP_ISNOT: return value_is_null(&pr->a) ? !null : null || value_cmp(x, &pr->a) != 0;
    case CS_CMP_IN:
      for (uint64_t k = 0; k < pr->n_set && !null; k++)
        if (!value_is_null(&pr->set[k]) && in_member_eq(pr, x, &pr->set[k])) return true;
      return false;
    default: break;
  }
  if (null || value_is_null(&pr->a)) return false;
  int c = value_cmp(x, &pr->a);
  switch (pr->op) {
    case CS_CMP_EQ: return c == 0;
    case CS_CMP_NE: return c != 0;
    case CS_CMP_LT: return c < 0;
    case CS_CMP_LE: return c <= 0;
    case CS_CMP_GT: return c > 0;
    case CS_CMP_GE: return c >= 0;
    case CS_CMP_BETWEEN: return c >= 0 && !value_is_null(&pr->b) && value_cmp(x, &pr->b) <= 0;
    default: return false;
  }
}

/* ------------------------------------------------------ compiling bounds */

/* Narrows the integer range [*lo, *hi] by `x op v` (v not NULL). */
static void int_apply(cs_cmp op, const cs_value *v, int64_t *lo, int64_t *hi, bool *empty) {
  int64_t l = INT64_MIN, h = INT64_MAX; /* the x satisfying x op v */
  if (v->kind == CS_VAL_INT) {
    int64_t c = v->i;
    switch (op) {
      case CS_CMP_EQ: l = h = c; break;
      case CS_CMP_LT:
        if (c == INT64_MIN) goto none;
        h = c - 1;
        break;
      case CS_CMP_LE: h = c; break;
      case CS_CMP_GT:
        if (c == INT64_MAX) goto none;
        l = c + 1;
        break;
      default: l = c; break; /* GE */
    }
  } else if (v->kind == CS_VAL_FLOAT) {
    double r = v->f;
    switch (op) {
      case CS_CMP_EQ:
        if (!f64_to_i64_exact(r, &l)) goto none;
        h = l;
        break;
      case CS_CMP_LT: /* x < r  <=>  x <= ceil(r) - 1 */
        if (r <= -TWO63) goto none;
        if (r < TWO63) h = (int64_t)ceil(r) - 1;
        break;
      case CS_CMP_LE: /* x <= floor(r) */
        if (r < -TWO63) goto none;
        if (r < TWO63) h = (int64_t)floor(r);
        break;
      case CS_CMP_GT: /* x >= floor(r) + 1 */
        if (r >= TWO63) goto none;
        if (r >= -TWO63) l = (int64_t)floor(r) + 1;
        break;
      default: /* GE: x >= ceil(r) */
        if (r >= TWO63) goto none;
        if (r > -TWO63) l = (int64_t)ceil(r);
        break;
    }
  } else {
    if (!op_const(op, -1)) goto none; /* numbers sort below TEXT and BLOB */
    return;
  }
  if (l > *lo) *lo = l;
  if (h < *hi) *hi = h;
  return;
none:
  *empty = true;
}

/* Narrows the double range [*lo, *hi] by `x op v` (v not NULL). */
static void dbl_apply(cs_cmp op, const cs_value *v, double *lo, double *hi, bool *empty) {
  double l = -INFINITY, h = INFINITY;
  if (v->kind == CS_VAL_INT) {
    double d = (double)v->i;
    int c = cmp_i64_f64(v->i, d);
    if (c != 0) {
      /* The integer lies strictly between two adjacent doubles. */
      double below = c > 0 ? d : nextafter(d, -INFINITY), above = c > 0 ? nextafter(d, INFINITY) : d;
      switch (op) {
        case CS_CMP_EQ: goto none;
        case CS_CMP_LT:
        case CS_CMP_LE: h = below; break;
        default: l = above; break;
      }
      goto narrow;
    }
    cs_value f = {.kind = CS_VAL_FLOAT, .f = d};
    dbl_apply(op, &f, lo, hi, empty);
    return;
  } else if (v->kind == CS_VAL_FLOAT) {
    double r = v->f;
    switch (op) {
      case CS_CMP_EQ: l = h = r; break;
      case CS_CMP_LT:
        if (r == -INFINITY) goto none;
        h = nextafter(r, -INFINITY);
        break;
      case CS_CMP_LE: h = r; break;
      case CS_CMP_GT:
        if (r == INFINITY) goto none;
        l = nextafter(r, INFINITY);
        break;
      default: l = r; break;
    }
  } else {
    if (!op_const(op, -1)) goto none;
    return;
  }
narrow:
  if (l > *lo) *lo = l;
  if (h < *hi) *hi = h;
  return;
none:
  *empty = true;
}

/* Narrows the byte-string bounds by `x op v` for a column of class col_kind. */
static void bytes_apply(cs_value_kind col_kind, cs_cmp op, const cs_value *v, bbound *lo, bbound *hi,
                        bool *empty) {
  int cc = value_class(col_kind), vc = value_class(v->kind);
  if (cc != vc) {
    if (!op_const(op, cc > vc ? 1 : -1)) *empty = true;
    return;
  }
  bbound b = {v->p, v->n, true, op != CS_CMP_LT && op != CS_CMP_GT};
  if (op == CS_CMP_EQ || op == CS_CMP_GT || op == CS_CMP_GE) {
    int c = lo->on ? cs__bytes_cmp(b.p, b.n, lo->p, lo->n) : 1;
    if (c > 0 || (c == 0 && !b.incl)) *lo = b;
  }
  if (op == CS_CMP_EQ || op == CS_CMP_LT || op == CS_CMP_LE) {
    int c = hi->on ? cs__bytes_cmp(b.p, b.n, hi->p, hi->n) : -1;
    if (c < 0 || (c == 0 && !b.incl)) *hi = b;
  }
}

/* Compiles `x op v` and `x BETWEEN a AND b` (ops: EQ LT LE GT GE BETWEEN). */
static void compile_range(pcomp *p, cs_cmp op, const cs_value *a, const cs_value *b) {
  bool empty = false;
  if (value_is_null(a) || (op == CS_CMP_BETWEEN && value_is_null(b))) {
    p->kind = PK_NONE;
    return;
  }
  cs_cmp op1 = op == CS_CMP_BETWEEN ? CS_CMP_GE : op;
  if (p->dom == DOM_INT) {
    int64_t lo = INT64_MIN, hi = INT64_MAX, tlo, thi;
    int_apply(op1, a, &lo, &hi, &empty);
    if (op == CS_CMP_BETWEEN) int_apply(CS_CMP_LE, b, &lo, &hi, &empty);
    cs_type_int_range(p->type, &tlo, &thi);
    if (lo < tlo) lo = tlo;
    if (hi > thi) hi = thi;
    if (empty || lo > hi)
      p->kind = PK_NONE;
    else if (lo == tlo && hi == thi)
      p->kind = PK_ALL;
    else
      p->kind = PK_RANGE, p->ilo = lo, p->ihi = hi;
  } else if (p->dom == DOM_DBL) {
    double lo = -INFINITY, hi = INFINITY;
    dbl_apply(op1, a, &lo, &hi, &empty);
    if (op == CS_CMP_BETWEEN) dbl_apply(CS_CMP_LE, b, &lo, &hi, &empty);
    if (p->type == CS_TYPE_FLOAT32 && !empty) lo = f32_ceil(lo), hi = f32_floor(hi);
    if (empty || lo > hi)
      p->kind = PK_NONE;
    else if (lo == -INFINITY && hi == INFINITY)
      p->kind = PK_ALL;
    else
      p->kind = PK_RANGE, p->dlo = lo, p->dhi = hi;
  } else {
    bbound lo = {0}, hi = {0};
    bytes_apply(p->bkind, op1, a, &lo, &hi, &empty);
    if (op == CS_CMP_BETWEEN) bytes_apply(p->bkind, CS_CMP_LE, b, &lo, &hi, &empty);
    if (!empty && lo.on && hi.on) {
      int c = cs__bytes_cmp(lo.p, lo.n, hi.p, hi.n);
      empty = c > 0 || (c == 0 && !(lo.incl && hi.incl));
    }
    if (empty)
      p->kind = PK_NONE;
    else if (!lo.on && !hi.on)
      p->kind = PK_ALL;
    else
      p->kind = PK_RANGE, p->blo = lo, p->bhi = hi;
  }
}

/* An IN member as an equality in the column's domain: false when it can
** never match a value of this column. */
static bool member_value(const pcomp *p, const cs_value *m, int64_t *out_i, double *out_d) {
  pcomp e = *p;
  compile_range(&e, CS_CMP_EQ, m, NULL);
  if (e.kind != PK_RANGE && e.kind != PK_ALL) return false;
  if (p->dom == DOM_INT) {
    /* PK_ALL only when the type has one value, which no type here has. */
    if (e.kind != PK_RANGE) return false;
    *out_i = e.ilo;
  } else {
    if (e.kind != PK_RANGE) return false;
    *out_d = e.dlo;
  }
  return true;
}

static int cmp_i64_sort(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_f64_sort(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Compiles pred against s.  An IN set over CS_PRED_IN_LINEAR members gets
** a sorted copy in *owned (the caller frees it); if that allocation fails
** the members are tested one by one instead (slower, same result). */
static void pred_compile(const cs_store *s, const cs_pred *pr, pcomp *p, void **owned) {
  memset(p, 0, sizeof *p);
  *owned = NULL;
  assert(pr->col < s->schema.n_cols);
  p->col = pr->col;
  p->type = s->cols[pr->col].type;
  p->dom = cs_type_is_varlen(p->type) ? DOM_BYTES : cs_type_is_float(p->type) ? DOM_DBL : DOM_INT;
  p->bkind = p->type == CS_TYPE_BLOB ? CS_VAL_BLOB : CS_VAL_TEXT;
  switch (pr->op) {
    case CS_CMP_ISNULL: p->kind = PK_ISNULL; return;
    case CS_CMP_NOTNULL: p->kind = PK_ALL; return;
    case CS_CMP_EQ:
    case CS_CMP_LT:
    case CS_CMP_LE:
    case CS_CMP_GT:
    case CS_CMP_GE:
    case CS_CMP_BETWEEN: compile_range(p, pr->op, &pr->a, &pr->b); return;
    case CS_CMP_ISNOT:
      if (value_is_null(&pr->a)) {
        p->kind = PK_ALL; /* IS NOT NULL */
        return;
      }
      compile_range(p, CS_CMP_EQ, &pr->a, NULL);
      p->negate = true;
      return;
    case CS_CMP_NE: {
      if (value_is_null(&pr->a)) {
        p->kind = PK_NONE;
        return;
      }
      /* x != v is every non-NULL row unless some x can equal v. */
      if (p->dom == DOM_BYTES) {
        if (pr->a.kind != p->bkind)
          p->kind = PK_ALL;
        else
          p->kind = PK_NE, p->blo = (bbound){pr->a.p, pr->a.n, true, true};
      } else {
        p->kind = member_value(p, &pr->a, &p->ilo, &p->dlo) ? PK_NE : PK_ALL;
      }
      return;
    }
    case CS_CMP_IN: {
      p->set = pr->set;
      p->n_set = pr->n_set;
      p->fold = pr->fold && p->dom == DOM_BYTES;
      uint64_t n_match = 0;
      bool first = true;
      for (uint64_t k = 0; k < pr->n_set; k++) {
        const cs_value *m = &pr->set[k];
        int64_t iv = 0;
        double dv = 0;
        if (p->dom == DOM_BYTES) {
          n_match += m->kind == p->bkind;
          continue;
        }
        if (!member_value(p, m, &iv, &dv)) continue;
        n_match++;
        if (first || iv < p->set_imin) p->set_imin = iv;
        if (first || iv > p->set_imax) p->set_imax = iv;
        if (first || dv < p->set_dmin) p->set_dmin = dv;
        if (first || dv > p->set_dmax) p->set_dmax = dv;
        first = false;
      }
      p->kind = n_match ? PK_IN : PK_NONE;
      if (p->kind == PK_NONE || p->dom == DOM_BYTES || n_match <= CS_PRED_IN_LINEAR) return;
      void *buf = cs__mem_malloc(n_match * 8);
      if (!buf) return; /* member by member */
      uint64_t n = 0;
      for (uint64_t k = 0; k < pr->n_set; k++) {
        int64_t iv;
        double dv;
        if (!member_value(p, &pr->set[k], &iv, &dv)) continue;
        if (p->dom == DOM_INT)
          ((int64_t *)buf)[n++] = iv;
        else
          ((double *)buf)[n++] = dv;
      }
      qsort(buf, n, 8, p->dom == DOM_INT ? cmp_i64_sort : cmp_f64_sort);
      uint64_t u = 0;
      for (uint64_t k = 0; k < n; k++) {
        bool dup = u > 0 && (p->dom == DOM_INT ? ((int64_t *)buf)[u - 1] == ((int64_t *)buf)[k]
                                               : ((double *)buf)[u - 1] == ((double *)buf)[k]);
        if (!dup) memcpy((uint8_t *)buf + u++ * 8, (uint8_t *)buf + k * 8, 8);
      }
      p->sorted = buf;
      p->n_sorted = u;
      *owned = buf;
      return;
    }
  }
  p->kind = PK_NONE; /* an unknown op selects nothing */
}

bool cs__pred_numeric_range(const cs_store *s, const cs_pred *pr, cs__num_range *out) {
  memset(out, 0, sizeof *out);
  if (cs_type_is_varlen(s->cols[pr->col].type) || !cs__cmp_is_range(pr->op)) return false;
  pcomp p;
  void *owned;
  pred_compile(s, pr, &p, &owned); /* a range op never allocates */
  out->dbl = p.dom == DOM_DBL;
  out->kind = p.kind == PK_NONE ? CS__RANGE_NONE : p.kind == PK_ALL ? CS__RANGE_ALL : CS__RANGE_SOME;
  out->ilo = p.ilo, out->ihi = p.ihi, out->dlo = p.dlo, out->dhi = p.dhi;
  return true;
}

/* pred_compile, and a TEXT/BLOB test that reads values gets the column's
** dictionary codes (NULL when out of memory: the bytes are read). */
static void pred_compile_codes(const cs_store *s, const cs_pred *pr, pcomp *p, void **owned) {
  pred_compile(s, pr, p, owned);
  if (p->dom == DOM_BYTES && (p->kind == PK_RANGE || p->kind == PK_NE || p->kind == PK_IN))
    p->codes = cs__codes_of(s, p->col);
}

/* -------------------------------------------------------------- zone maps */

/* Whether some IN member lies in [mn, mx] (a record's zone map). */
static bool zone_in_overlaps(const pcomp *p, int64_t imn, int64_t imx, double dmn, double dmx) {
  if (p->dom == DOM_INT ? (p->set_imax < imn || p->set_imin > imx) : (p->set_dmax < dmn || p->set_dmin > dmx))
    return false;
  if (p->n_sorted) {
    /* The first member >= the minimum, then whether it is <= the maximum. */
    uint64_t a = 0, b = p->n_sorted;
    while (a < b) {
      uint64_t mid = a + (b - a) / 2;
      bool below = p->dom == DOM_INT ? ((const int64_t *)p->sorted)[mid] < imn
                                     : ((const double *)p->sorted)[mid] < dmn;
      if (below)
        a = mid + 1;
      else
        b = mid;
    }
    if (a == p->n_sorted) return false;
    return p->dom == DOM_INT ? ((const int64_t *)p->sorted)[a] <= imx : ((const double *)p->sorted)[a] <= dmx;
  }
  for (uint64_t k = 0; k < p->n_set; k++) {
    int64_t iv = 0;
    double dv = 0;
    if (!member_value(p, &p->set[k], &iv, &dv)) continue;
    if (p->dom == DOM_INT ? (iv >= imn && iv <= imx) : (dv >= dmn && dv <= dmx)) return true;
  }
  return false;
}

static int zone_decide_kind(const pcomp *p, const cs_chunk *ch, uint64_t rows);

/* 1: every row of the record satisfies p; 0: none does; -1: read the data. */
static int zone_decide(const pcomp *p, const cs_chunk *ch, uint64_t rows) {
  int d = zone_decide_kind(p, ch, rows);
  return p->negate && d >= 0 ? !d : d;
}

static int zone_decide_kind(const pcomp *p, const cs_chunk *ch, uint64_t rows) {
  uint64_t nn = ch->null_count;
  bool mm = (ch->flags & CS_CHUNK_HAS_MINMAX) != 0;
  bool no_nan = (ch->flags & CS_CHUNK_SORTED) != 0; /* see the essay */
  switch (p->kind) {
    case PK_NONE: return 0;
    case PK_ISNULL:
      if (nn == rows) return 1;
      if (p->dom == DOM_DBL) return !mm ? 1 : no_nan ? 0 : -1;
      return nn == 0 ? 0 : -1;
    case PK_ALL:
      if (nn == rows) return 0;
      if (p->dom == DOM_DBL) return !mm ? 0 : no_nan ? 1 : -1;
      return nn == 0 ? 1 : -1;
    default: break;
  }
  if (nn == rows) return 0;
  /* No zone map for TEXT/BLOB in format 1 (see record_decide); were one
  ** added, a folded IN (cs_pred.fold) must not use it: folding does not
  ** keep the byte order ('B' < 'a' but 'b' > 'a'). */
  if (p->dom == DOM_BYTES) return -1;
  if (!mm) return 0; /* every value NULL or NaN */
  bool clean = p->dom == DOM_INT ? nn == 0 : no_nan;
  if (p->dom == DOM_INT) {
    int64_t mn = ch->min.i, mx = ch->max.i;
    switch (p->kind) {
      case PK_RANGE:
        if (mx < p->ilo || mn > p->ihi) return 0;
        return clean && p->ilo <= mn && mx <= p->ihi ? 1 : -1;
      case PK_NE:
        if (mn == mx && mn == p->ilo) return 0;
        return clean && (p->ilo < mn || p->ilo > mx) ? 1 : -1;
      default: /* IN */ return zone_in_overlaps(p, mn, mx, 0, 0) ? -1 : 0;
    }
  }
  double mn = ch->min.f, mx = ch->max.f;
  switch (p->kind) {
    case PK_RANGE:
      if (mx < p->dlo || mn > p->dhi) return 0;
      return clean && p->dlo <= mn && mx <= p->dhi ? 1 : -1;
    case PK_NE:
      if (mn == mx && mn == p->dlo) return 0;
      return clean && (p->dlo < mn || p->dlo > mx) ? 1 : -1;
    default: return zone_in_overlaps(p, 0, 0, mn, mx) ? -1 : 0;
  }
}

/* ----------------------------------------------------------- the kernels */

/* Each compare-to-byte kernel is built twice on GCC for x86-64 with glibc:
** for AVX2 and for the baseline, the loader picking one per process through
** an ifunc.  At baseline (SSE2) GCC 12 vectorises none of the double and
** int64 loops ("no vectype for stmt"), with AVX2 it does: bench_kernels'
** f64 BETWEEN went from 5.6-6.3 to 3.1-3.3 ms over 8M rows, and count(*)
** WHERE a > 0.99 at one thread 1.33x faster (docs/performance.md, "Where
** the time goes").  The cost is an indirect call per piece of up to
** CS_PRED_PIECE_ROWS rows.
** Other compilers and targets (no ifunc: musl, macOS, clang's differing
** support) get the plain functions.  The IN search below is not cloned: no
** vector form exists for it, so a clone would only add the call. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && defined(__ELF__)
#define PRED_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PRED_CLONES
#endif

/* One body per (column type x shape), stamped per element type T.  Every
** loop is branch-free and written for the vectoriser. */
#define PRED_KERNELS(NAME, T)                                                                              \
  PRED_CLONES static void NAME##_range(const T *restrict x, uint64_t n, T lo, T hi, uint8_t *restrict d) { \
    _Pragma("omp simd") for (uint64_t i = 0; i < n; i++) d[i] = (uint8_t)((x[i] >= lo) & (x[i] <= hi));    \
  }                                                                                                        \
  PRED_CLONES static void NAME##_ne(const T *restrict x, uint64_t n, T c, uint8_t *restrict d) {           \
    _Pragma("omp simd") for (uint64_t i = 0; i < n; i++) d[i] = (uint8_t)((x[i] == x[i]) & (x[i] != c));   \
  }                                                                                                        \
  PRED_CLONES static void NAME##_eq_or(const T *restrict x, uint64_t n, T c, uint8_t *restrict d) {        \
    _Pragma("omp simd") for (uint64_t i = 0; i < n; i++) d[i] |= (uint8_t)(x[i] == c);                     \
  }

/* x == x is true except for NaN, so _ne also serves the integer types
** (where the compiler drops the test). */
PRED_KERNELS(k_i8, int8_t)
PRED_KERNELS(k_i16, int16_t)
PRED_KERNELS(k_i32, int32_t)
PRED_KERNELS(k_i64, int64_t)
PRED_KERNELS(k_u8, uint8_t)
PRED_KERNELS(k_u16, uint16_t)
PRED_KERNELS(k_u32, uint32_t)
PRED_KERNELS(k_f32, float)
PRED_KERNELS(k_f64, double)

/* Floats only: d[i] = x[i] is not NaN. */
#define PRED_PRESENT(NAME, T)                                                                    \
  PRED_CLONES static void NAME##_present(const T *restrict x, uint64_t n, uint8_t *restrict d) { \
    _Pragma("omp simd") for (uint64_t i = 0; i < n; i++) d[i] = (uint8_t)(x[i] == x[i]);         \
  }
PRED_PRESENT(k_f32, float)
PRED_PRESENT(k_f64, double)

/* IN over a sorted unique set: a branchless search per row. */
#define PRED_IN_SORTED(NAME, T, S)                                                                        \
  static void NAME##_in(const T *restrict x, uint64_t n, const S *set, uint64_t k, uint8_t *restrict d) { \
    for (uint64_t i = 0; i < n; i++) {                                                                    \
      S v = (S)x[i];                                                                                      \
      const S *b = set;                                                                                   \
      for (uint64_t m = k; m > 1;) {                                                                      \
        uint64_t half = m / 2;                                                                            \
        b = (b[half] <= v) ? b + half : b;                                                                \
        m -= half;                                                                                        \
      }                                                                                                   \
      d[i] = (uint8_t)(*b == v);                                                                          \
    }                                                                                                     \
  }

PRED_IN_SORTED(k_i8, int8_t, int64_t)
PRED_IN_SORTED(k_i16, int16_t, int64_t)
PRED_IN_SORTED(k_i32, int32_t, int64_t)
PRED_IN_SORTED(k_i64, int64_t, int64_t)
PRED_IN_SORTED(k_u8, uint8_t, int64_t)
PRED_IN_SORTED(k_u16, uint16_t, int64_t)
PRED_IN_SORTED(k_u32, uint32_t, int64_t)
PRED_IN_SORTED(k_f32, float, double)
PRED_IN_SORTED(k_f64, double, double)

/* Calls CALL(name, T, domain value member) for the column's element type. */
#define PRED_TYPE_SWITCH(type, CALL)                             \
  switch (type) {                                                \
    case CS_TYPE_INT8: CALL(k_i8, int8_t, ilo, ihi); break;      \
    case CS_TYPE_INT16: CALL(k_i16, int16_t, ilo, ihi); break;   \
    case CS_TYPE_INT32: CALL(k_i32, int32_t, ilo, ihi); break;   \
    case CS_TYPE_INT64: CALL(k_i64, int64_t, ilo, ihi); break;   \
    case CS_TYPE_UINT8:                                          \
    case CS_TYPE_BOOL: CALL(k_u8, uint8_t, ilo, ihi); break;     \
    case CS_TYPE_UINT16: CALL(k_u16, uint16_t, ilo, ihi); break; \
    case CS_TYPE_UINT32: CALL(k_u32, uint32_t, ilo, ihi); break; \
    case CS_TYPE_FLOAT32: CALL(k_f32, float, dlo, dhi); break;   \
    case CS_TYPE_FLOAT64: CALL(k_f64, double, dlo, dhi); break;  \
    default: break;                                              \
  }

/* Whether the TEXT/BLOB value x[0, nx) satisfies p (RANGE, NE or IN). */
CS__INLINE bool bytes_match(const pcomp *p, const uint8_t *x, uint64_t nx) {
  if (p->kind == PK_RANGE) {
    if (p->blo.on) {
      int c = cs__bytes_cmp(x, nx, p->blo.p, p->blo.n);
      if (p->blo.incl ? c < 0 : c <= 0) return false;
    }
    if (p->bhi.on) {
      int c = cs__bytes_cmp(x, nx, p->bhi.p, p->bhi.n);
      if (p->bhi.incl ? c > 0 : c >= 0) return false;
    }
    return true;
  }
  if (p->kind == PK_NE) return cs__bytes_cmp(x, nx, p->blo.p, p->blo.n) != 0;
  for (uint64_t k = 0; k < p->n_set; k++) { /* IN */
    const cs_value *m = &p->set[k];
    if (m->kind == p->bkind && (p->fold ? fold_eq(x, nx, m->p, m->n) : cs__bytes_cmp(x, nx, m->p, m->n) == 0))
      return true;
  }
  return false;
}

/* TEXT/BLOB rows [a, a + n) of ch.  Offsets are clamped into the data, so
** a damaged chunk gives wrong answers, never an out-of-bounds read. */
static void bytes_piece(const pcomp *p, const cs_chunk *ch, uint64_t a, uint64_t n, uint8_t *restrict d) {
  const int64_t *off = ch->offsets + a;
  const uint8_t *data = ch->data;
  uint64_t db = ch->data_bytes;
  uint64_t s0 = (uint64_t)off[0] > db ? db : (uint64_t)off[0];
  for (uint64_t i = 0; i < n; i++) {
    uint64_t e = (uint64_t)off[i + 1] > db ? db : (uint64_t)off[i + 1];
    if (e < s0) e = s0;
    d[i] = bytes_match(p, data + s0, e - s0);
    s0 = e;
  }
}

/* ------------------------------------------------ through the codes
** A TEXT/BLOB predicate on a record with dictionary codes (cs_codes.c):
** its distinct values are tested once into a table of a byte per code
** (NULL's 0), which decides the record when no value or every value
** passes (an exact zone map, where format 1 stores none for TEXT/BLOB),
** and otherwise gives each row its answer by one table load. */

/* mt[v] for each value v of rc; 0 when none passes, 1 when every one does
** (NULL never does), -1 otherwise. */
static int codes_table(const pcomp *p, const cs__rcodes *rc, uint8_t *mt) {
  uint32_t n_pass = 0;
  for (uint32_t v = 0; v < rc->n_vals; v++) {
    mt[v] = v != rc->null_code && bytes_match(p, rc->vp[v], rc->vn[v]);
    n_pass += mt[v];
  }
  return n_pass == 0 ? 0 : n_pass == rc->n_vals ? 1 : -1;
}

/* What p decides for record r (its chunk ch of rows rows): the zone map's
** answer, or when that is "read the data" and the column has codes, the
** codes' (1, 0 or -1, after IS NOT's inversion).  With -1 from the codes,
** *out_rc is the record's codes and mt (room for CS__CODE_VALUES) their
** table; else *out_rc is NULL. */
static int record_decide(const cs_store *s, const pcomp *p, uint64_t r, const cs_chunk *ch, uint64_t rows,
                         uint8_t *mt, const cs__rcodes **out_rc) {
  *out_rc = NULL;
  int d = zone_decide(p, ch, rows);
  if (d >= 0 || !p->codes) return d;
  const cs__rcodes *rc = cs__codes_record(p->codes, s, p->col, r, CS__CODES_BYTES);
  if (!rc) return -1; /* too many values, over the budget or out of memory: the bytes */
  d = codes_table(p, rc, mt);
  if (d >= 0) return p->negate ? !d : d;
  *out_rc = rc;
  return -1;
}

/* piece_eval through codes: rows [a, a + n) of rc's record by the table. */
static void codes_piece(const pcomp *p, const cs__rcodes *rc, const uint8_t *mt, uint64_t a, uint64_t n,
                        uint8_t *restrict d) {
  const uint8_t *c = rc->code + a;
  uint8_t flip = p->negate;
  for (uint64_t i = 0; i < n; i++) d[i] = mt[c[i]] ^ flip;
}

/* d[i] = whether row a + i of ch satisfies p's value test, ignoring the
** validity bitmap (NaN counts as NULL here: it fails everything but
** ISNULL).  The caller applies the bitmap. */
static void piece_values(const pcomp *p, const cs_chunk *ch, uint64_t a, uint64_t n, uint8_t *restrict d) {
  const void *x0 = ch->data;
  size_t w = cs_type_width(p->type);
  const void *x = w ? (const uint8_t *)x0 + a * w : NULL;
  switch (p->kind) {
    case PK_NONE: memset(d, 0, n); return;
    case PK_ISNULL:
      if (p->type == CS_TYPE_FLOAT32) {
        k_f32_present(x, n, d);
        for (uint64_t i = 0; i < n; i++) d[i] ^= 1;
      } else if (p->type == CS_TYPE_FLOAT64) {
        k_f64_present(x, n, d);
        for (uint64_t i = 0; i < n; i++) d[i] ^= 1;
      } else {
        memset(d, 0, n);
      }
      return;
    case PK_ALL:
      if (p->type == CS_TYPE_FLOAT32)
        k_f32_present(x, n, d);
      else if (p->type == CS_TYPE_FLOAT64)
        k_f64_present(x, n, d);
      else
        memset(d, 1, n);
      return;
    default: break;
  }
  if (p->dom == DOM_BYTES) {
    bytes_piece(p, ch, a, n, d);
    return;
  }
  if (p->kind == PK_RANGE) {
#define RANGE_CALL(K, T, LO, HI) K##_range(x, n, (T)p->LO, (T)p->HI, d)
    PRED_TYPE_SWITCH(p->type, RANGE_CALL);
#undef RANGE_CALL
  } else if (p->kind == PK_NE) {
#define NE_CALL(K, T, LO, HI) K##_ne(x, n, (T)p->LO, d)
    PRED_TYPE_SWITCH(p->type, NE_CALL);
#undef NE_CALL
  } else if (p->n_sorted) {
#define IN_CALL(K, T, LO, HI) K##_in(x, n, p->sorted, p->n_sorted, d)
    PRED_TYPE_SWITCH(p->type, IN_CALL);
#undef IN_CALL
  } else {
    memset(d, 0, n);
    for (uint64_t k = 0; k < p->n_set; k++) {
      pcomp e = *p;
      if (!member_value(p, &p->set[k], &e.ilo, &e.dlo)) continue;
#define EQ_CALL(K, T, LO, HI) K##_eq_or(x, n, (T)e.LO, d)
      PRED_TYPE_SWITCH(p->type, EQ_CALL);
#undef EQ_CALL
    }
  }
}

/* d[i] &= validity bit (off + i), eight rows per bitmap byte. */
static void and_validity(uint8_t *d, const uint8_t *bits, uint64_t off, uint64_t n) {
  uint64_t i = 0;
  for (; i < n && ((off + i) & 7); i++) d[i] &= (uint8_t)((bits[(off + i) >> 3] >> ((off + i) & 7)) & 1);
  for (; i + 8 <= n; i += 8) {
    uint64_t y = cs__load64(d + i) & cs__spread8(bits[(off + i) >> 3]);
    memcpy(d + i, &y, 8);
  }
  for (; i < n; i++) d[i] &= (uint8_t)((bits[(off + i) >> 3] >> ((off + i) & 7)) & 1);
}

/* d[i] |= NOT validity bit (off + i). */
static void or_invalid(uint8_t *d, const uint8_t *bits, uint64_t off, uint64_t n) {
  uint64_t i = 0;
  for (; i < n && ((off + i) & 7); i++) d[i] |= (uint8_t)(~(bits[(off + i) >> 3] >> ((off + i) & 7)) & 1);
  for (; i + 8 <= n; i += 8) {
    uint64_t y = cs__load64(d + i) | (~cs__spread8(bits[(off + i) >> 3]) & CS__ONES8);
    memcpy(d + i, &y, 8);
  }
  for (; i < n; i++) d[i] |= (uint8_t)(~(bits[(off + i) >> 3] >> ((off + i) & 7)) & 1);
}

static void piece_eval(const pcomp *p, const cs_chunk *ch, uint64_t a, uint64_t n, uint8_t *restrict d) {
  piece_values(p, ch, a, n, d);
  if (ch->validity) {
    if (p->kind == PK_ISNULL)
      or_invalid(d, ch->validity, a, n);
    else
      and_validity(d, ch->validity, a, n);
  }
  if (p->negate) {
#pragma omp simd
    for (uint64_t i = 0; i < n; i++) d[i] ^= 1;
  }
}

static bool all_zero(const uint8_t *m, uint64_t n) {
  uint64_t acc = 0, i = 0;
  for (; i + 8 <= n; i += 8) acc |= cs__load64(m + i);
  for (; i < n; i++) acc |= m[i];
  return acc == 0;
}

/* ------------------------------------------------------------ evaluation */

/* Evaluates np compiled predicates over rows first + i, i in [i0, i1), into
** mask[i]: written when and_mode is false, ANDed into it when true; in
** pieces of at most CS_PRED_PIECE_ROWS rows (the AND of several predicates
** goes through a stack buffer of one piece).  A record is counted as
** scanned or skipped where its first row is, or at row count_from when it
** starts before that row. */
static void eval_span(const cs_store *s, const pcomp *cp, uint32_t np, uint64_t first, uint64_t i0,
                      uint64_t i1, uint8_t *mask, bool and_mode, uint64_t count_from, uint64_t *out_scanned,
                      uint64_t *out_skipped) {
  const uint64_t *fr = s->first_rows;
  uint32_t nc = s->schema.n_cols;
  uint64_t scanned = 0, skipped = 0;
  uint8_t tmp[CS_PRED_PIECE_ROWS];
  /* The current record's decision per predicate and, for the first
  ** CS_PRED_STACK, its codes and their table (the later ones get the zone
  ** map's decision and read their bytes). */
  int dk[CS_PRED_STACK];
  const cs__rcodes *rck[CS_PRED_STACK];
  uint8_t mt[CS_PRED_STACK][CS__CODE_VALUES];
  uint64_t cur = UINT64_MAX;
  int dec = 1; /* the AND of the record's decisions */
  uint64_t i = i0;
  uint64_t r = i0 < i1 ? cs__locate(s, first + i0) : 0;
  while (i < i1) {
    uint64_t lo = fr[r], rows = fr[r + 1] - lo, end = fr[r + 1] - first;
    uint64_t b = end < i1 ? end : i1;
    if (b - i > CS_PRED_PIECE_ROWS) b = i + CS_PRED_PIECE_ROWS;
    uint64_t len = b - i, local = first + i - lo;
    const cs_chunk *chs = s->chunks + r * nc;
    if (r != cur) {
      cur = r, dec = 1;
      for (uint32_t k = 0; k < np && k < CS_PRED_STACK; k++) {
        int d = record_decide(s, &cp[k], r, &chs[cp[k].col], rows, mt[k], &rck[k]);
        dk[k] = d;
        if (d == 0) {
          dec = 0;
          break;
        }
        if (d < 0) dec = -1;
      }
      for (uint32_t k = CS_PRED_STACK; k < np && dec != 0; k++) {
        int d = zone_decide(&cp[k], &chs[cp[k].col], rows);
        if (d == 0) dec = 0;
        if (d < 0) dec = -1;
      }
    }
    if (local == 0 || first + i == count_from) {
      if (dec < 0)
        scanned++;
      else
        skipped++;
    }
    uint8_t *m = mask + i;
    if (dec == 0) {
      memset(m, 0, len);
    } else if (dec == 1) {
      if (!and_mode) memset(m, 1, len);
    } else {
      bool have = and_mode;
      for (uint32_t k = 0; k < np; k++) {
        const cs_chunk *ch = &chs[cp[k].col];
        bool on_stack = k < CS_PRED_STACK;
        if ((on_stack ? dk[k] : zone_decide(&cp[k], ch, rows)) == 1) continue;
        if (have && all_zero(m, len)) break;
        uint8_t *d = have ? tmp : m;
        if (on_stack && rck[k])
          codes_piece(&cp[k], rck[k], mt[k], local, len, d);
        else
          piece_eval(&cp[k], ch, local, len, d);
        if (have) {
#pragma omp simd
          for (uint64_t j = 0; j < len; j++) m[j] &= tmp[j];
        }
        have = true;
      }
    }
    i = b;
    if (b == end) r++;
  }
  *out_scanned += scanned;
  *out_skipped += skipped;
}

typedef struct eval_job {
  const cs_store *s;
  const pcomp *cp;
  uint32_t np;
  uint64_t first, n;
  uint8_t *mask;
  bool and_mode;
  _Atomic uint64_t scanned, skipped;
} eval_job;

static void eval_chunk(void *ctx, uint64_t u, int member) {
  (void)member;
  eval_job *j = ctx;
  uint64_t i0, i1, scanned = 0, skipped = 0;
  cs__team_span(u, CS_PRED_PIECE_ROWS, j->n, &i0, &i1);
  eval_span(j->s, j->cp, j->np, j->first, i0, i1, j->mask, j->and_mode, j->first, &scanned, &skipped);
  atomic_fetch_add_explicit(&j->scanned, scanned, memory_order_relaxed);
  atomic_fetch_add_explicit(&j->skipped, skipped, memory_order_relaxed);
}

/* eval_span over rows [first, first + n), a piece per chunk of the team. */
static void eval_group(const cs_store *s, const pcomp *cp, uint32_t np, uint64_t first, uint64_t n,
                       uint8_t *mask, bool and_mode, uint64_t *out_scanned, uint64_t *out_skipped) {
  uint64_t units = (n + CS_PRED_PIECE_ROWS - 1) / CS_PRED_PIECE_ROWS;
  eval_job j = {.s = s, .cp = cp, .np = np, .first = first, .n = n, .mask = mask, .and_mode = and_mode};
  atomic_init(&j.scanned, 0);
  atomic_init(&j.skipped, 0);
  cs__team_run(cs_kernel_threads(n), units, eval_chunk, &j);
  *out_scanned += atomic_load_explicit(&j.scanned, memory_order_relaxed);
  *out_skipped += atomic_load_explicit(&j.skipped, memory_order_relaxed);
}

void cs_pred_eval(const cs_store *s, const cs_pred *preds, uint32_t n_preds, uint64_t first, uint64_t n,
                  uint8_t *mask, cs_pred_stats *stats) {
  cs_pred_stats st = {0, 0, 0};
  if (n == 0) {
    if (stats) *stats = st;
    return;
  }
  assert(first < s->n_rows && n <= s->n_rows - first);
  if (n_preds == 0) {
    memset(mask, 1, n);
    st.records_skipped = cs__locate(s, first + n - 1) - cs__locate(s, first) + 1;
    st.rows_selected = n - cs_store_mask_deleted(s, first, n, mask); /* deleted rows: never selected */
    if (stats) *stats = st;
    return;
  }
  pcomp stack_cp[CS_PRED_STACK];
  void *stack_owned[CS_PRED_STACK];
  pcomp *cp = stack_cp;
  void **owned = stack_owned;
  uint32_t group = n_preds;
  if (n_preds > CS_PRED_STACK) {
    cp = cs__mem_malloc(n_preds * sizeof *cp);
    owned = cs__mem_malloc(n_preds * sizeof *owned);
    if (!cp || !owned) {
      /* Out of memory: compile and apply the predicates in stack-sized
      ** groups, each later group ANDing into the mask. */
      cs__mem_free(cp), cs__mem_free(owned);
      cp = stack_cp, owned = stack_owned, group = CS_PRED_STACK;
    }
  }
  for (uint32_t g = 0; g < n_preds; g += group) {
    uint32_t np = n_preds - g < group ? n_preds - g : group;
    for (uint32_t k = 0; k < np; k++) pred_compile_codes(s, &preds[g + k], &cp[k], &owned[k]);
    uint64_t scanned = 0, skipped = 0;
    eval_group(s, cp, np, first, n, mask, g > 0, &scanned, &skipped);
    if (g == 0) st.records_scanned = scanned, st.records_skipped = skipped;
    for (uint32_t k = 0; k < np; k++) cs__mem_free(owned[k]);
  }
  if (cp != stack_cp) cs__mem_free(cp), cs__mem_free(owned);
  cs_store_mask_deleted(s, first, n, mask); /* deleted rows: never selected */
  if (stats) {
    st.rows_selected = cs_mask_count(mask, n);
    *stats = st;
  }
}

/* ---------------------------------------------------------- sorted range */

CS__INLINE bool sorted_above(const pcomp *p, const cs_chunk *ch, uint64_t local, bool upper) {
  const uint8_t *x = ch->data;
  if (p->dom == DOM_DBL) {
    double v;
    if (p->type == CS_TYPE_FLOAT32) {
      float f;
      memcpy(&f, x + local * 4, 4);
      v = f;
    } else {
      memcpy(&v, x + local * 8, 8);
    }
    return upper ? v > p->dhi : v >= p->dlo;
  }
  int64_t v;
  switch (p->type) {
    case CS_TYPE_INT8: {
      int8_t t;
      memcpy(&t, x + local, 1);
      v = t;
      break;
    }
    case CS_TYPE_INT16: {
      int16_t t;
      memcpy(&t, x + local * 2, 2);
      v = t;
      break;
    }
    case CS_TYPE_INT32: {
      int32_t t;
      memcpy(&t, x + local * 4, 4);
      v = t;
      break;
    }
    case CS_TYPE_UINT16: {
      uint16_t t;
      memcpy(&t, x + local * 2, 2);
      v = t;
      break;
    }
    case CS_TYPE_UINT32: {
      uint32_t t;
      memcpy(&t, x + local * 4, 4);
      v = t;
      break;
    }
    case CS_TYPE_INT64: memcpy(&v, x + local * 8, 8); break;
    default: v = x[local]; break; /* UINT8, BOOL */
  }
  return upper ? v > p->ihi : v >= p->ilo;
}

/* The first row whose value is >= lo (upper: > hi), or cs_store_rows(). */
static uint64_t sorted_first(const cs_store *s, const pcomp *p, bool upper) {
  uint32_t nc = s->schema.n_cols;
  uint64_t a = 0, b = s->n_records;
  while (a < b) { /* first record whose max qualifies */
    uint64_t mid = a + (b - a) / 2;
    const cs_chunk *ch = &s->chunks[mid * nc + p->col];
    bool q = p->dom == DOM_DBL ? (upper ? ch->max.f > p->dhi : ch->max.f >= p->dlo)
                               : (upper ? ch->max.i > p->ihi : ch->max.i >= p->ilo);
    if (q)
      b = mid;
    else
      a = mid + 1;
  }
  if (a == s->n_records) return s->n_rows;
  const cs_chunk *ch = &s->chunks[a * nc + p->col];
  uint64_t lo = 0, hi = s->first_rows[a + 1] - s->first_rows[a];
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (sorted_above(p, ch, mid, upper))
      hi = mid;
    else
      lo = mid + 1;
  }
  return s->first_rows[a] + lo;
}

bool cs__cmp_is_range(cs_cmp op) {
  switch (op) {
    case CS_CMP_EQ:
    case CS_CMP_LT:
    case CS_CMP_LE:
    case CS_CMP_GT:
    case CS_CMP_GE:
    case CS_CMP_BETWEEN: return true;
    default: return false;
  }
}

bool cs_pred_sorted_range(const cs_store *s, const cs_pred *pred, uint64_t *out_lo, uint64_t *out_hi) {
  if (!cs__cmp_is_range(pred->op)) return false;
  if (cs_type_is_varlen(s->cols[pred->col].type)) return false;
  cs_column_stats cst;
  cs_store_column_stats(s, pred->col, &cst);
  if (!cst.sorted) return false;
  pcomp p;
  void *owned;
  pred_compile(s, pred, &p, &owned); /* a range op never allocates */
  /* A sorted column has no NULL and no NaN, so ALL is every row. */
  uint64_t lo = 0, hi = 0;
  if (p.kind == PK_ALL) {
    hi = s->n_rows;
  } else if (p.kind == PK_RANGE) {
    lo = sorted_first(s, &p, false);
    hi = sorted_first(s, &p, true);
    if (hi < lo) hi = lo;
  }
  *out_lo = lo;
  *out_hi = hi;
  return true;
}

/* ------------------------------------------------------ compiled sets */

struct cs__pred_set {
  const cs_store *s;
  uint32_t n;
  pcomp *cp;
  void **owned;
};

cs_rc cs__pred_set_compile(const cs_store *s, const cs_pred *preds, uint32_t n_preds, cs__pred_set **out,
                           cs_err *err) {
  *out = NULL;
  cs__pred_set *set = cs__mem_calloc(1, sizeof *set);
  if (set) {
    set->cp = cs__mem_calloc(n_preds ? n_preds : 1, sizeof *set->cp);
    set->owned = cs__mem_calloc(n_preds ? n_preds : 1, sizeof *set->owned);
  }
  if (!set || !set->cp || !set->owned) {
    cs__pred_set_free(set);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory compiling %u predicates", n_preds);
  }
  set->s = s;
  for (uint32_t k = 0; k < n_preds; k++) pred_compile_codes(s, &preds[k], &set->cp[k], &set->owned[k]);
  set->n = n_preds;
  *out = set;
  return CS_OK;
}

void cs__pred_set_free(cs__pred_set *set) {
  if (!set) return;
  for (uint32_t k = 0; k < set->n; k++) cs__mem_free(set->owned[k]);
  cs__mem_free(set->cp), cs__mem_free(set->owned), cs__mem_free(set);
}

bool cs__pred_set_span_empty(const cs__pred_set *set, uint64_t first, uint64_t i0, uint64_t i1,
                             uint64_t count_from, uint64_t *skipped) {
  if (set->n == 0 || i0 >= i1) return false;
  const cs_store *s = set->s;
  uint32_t nc = s->schema.n_cols;
  uint64_t r0 = cs__locate(s, first + i0), r1 = cs__locate(s, first + i1 - 1);
  for (uint64_t r = r0; r <= r1; r++) {
    const cs_chunk *chs = s->chunks + r * nc;
    uint64_t rows = s->first_rows[r + 1] - s->first_rows[r];
    bool none = false;
    for (uint32_t k = 0; k < set->n && !none; k++) {
      uint8_t mt[CS__CODE_VALUES];
      const cs__rcodes *rc;
      none = record_decide(s, &set->cp[k], r, &chs[set->cp[k].col], rows, mt, &rc) == 0;
    }
    if (!none) return false;
  }
  /* counted as eval_span counts them: where a record's first row is, or at
  ** count_from */
  for (uint64_t r = r0; r <= r1; r++) {
    uint64_t lo = s->first_rows[r];
    if ((lo >= first + i0 && lo < first + i1) || (r == r0 && first + i0 == count_from)) (*skipped)++;
  }
  return true;
}

void cs__pred_set_eval_span(const cs__pred_set *set, uint64_t first, uint64_t i0, uint64_t i1, uint8_t *mask,
                            uint64_t count_from, uint64_t *scanned, uint64_t *skipped) {
  if (set->n == 0) {
    /* Every row selected, every record decided without reading it: counted
    ** as skipped, as cs_pred_eval counts them. */
    memset(mask + i0, 1, i1 - i0);
    const cs_store *s = set->s;
    for (uint64_t i = i0; i < i1;) {
      uint64_t r = cs__locate(s, first + i), lo = s->first_rows[r];
      if (lo == first + i || first + i == count_from) (*skipped)++;
      uint64_t end = s->first_rows[r + 1] - first;
      i = end < i1 ? end : i1;
    }
    return;
  }
  eval_span(set->s, set->cp, set->n, first, i0, i1, mask, false, count_from, scanned, skipped);
}

int cs__pred_set_record(const cs__pred_set *set, uint64_t rec) {
  const cs_store *s = set->s;
  const cs_chunk *chs = s->chunks + rec * s->schema.n_cols;
  uint64_t rows = s->first_rows[rec + 1] - s->first_rows[rec];
  int dec = 1;
  for (uint32_t k = 0; k < set->n; k++) {
    uint8_t mt[CS__CODE_VALUES];
    const cs__rcodes *rc;
    int d = record_decide(s, &set->cp[k], rec, &chs[set->cp[k].col], rows, mt, &rc);
    if (d == 0) return 0;
    if (d < 0) dec = -1;
  }
  return dec;
}

bool cs__pred_set_row(const cs__pred_set *set, uint64_t rec, uint64_t local) {
  const cs_store *s = set->s;
  const cs_chunk *chs = s->chunks + rec * s->schema.n_cols;
  for (uint32_t k = 0; k < set->n; k++) {
    uint8_t d;
    piece_eval(&set->cp[k], &chs[set->cp[k].col], local, 1, &d);
    if (!d) return false;
  }
  return true;
}
