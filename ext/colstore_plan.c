/*
** colstore_plan.c - xBestIndex: which constraints colstore takes, and the
** plan it hands to xFilter.
**
** The plan travels in idxStr, in two parts separated by a NUL byte: first
** the words EXPLAIN QUERY PLAN shows (SQLite prints up to the NUL), then
** the machine part xFilter decodes, one slot per argv entry in argv order:
**
**   slot      constraint                      argv value
**   E         rowid = ?                       the value
**   G / g     rowid > ? / rowid >= ?          the bound
**   L / l     rowid < ? / rowid <= ?          the bound
**   I         rowid IN (...), all at once     the IN list (sqlite3_vtab_in)
**   P<c>:<op> column c OP ?                   the operand
**   Q<c>      column c IN (...), all at once  the IN list
**   R         _rows = ?                       BLOB of int64 positions
**   M         _mask = ?                       BLOB, one byte per row
**   T / O     LIMIT ? / OFFSET ?              the count
**
** (colstore_agg.c plans with the same P, Q, R and M slots, over the source
** table's columns, and adds X<c>:<why>: its column c that it could not
** answer for, which xFilter refuses, and C after a slot that SQLite may
** check again itself by reading the column.)
**
** followed by flags: A (ORDER BY rowid ASC consumed), D (DESC consumed),
** and U<colUsed> (the columns the query reads, for the cursor's prefetch).
** The IN slots are recorded here because asking sqlite3_vtab_in_first about
** an argument that was not opted in is undefined on SQLite 3.40.
**
** What is omitted (left unchecked by SQLite) is exactly what the cursor
** evaluates with SQLite's own semantics (see csx_pred_from_value): rowid
** bounds and lists always; a column comparison when the column is numeric
** (the right-hand side then always gets numeric affinity, so the cursor
** can apply it), or TEXT with BINARY collation and a right-hand side that
** SQLite gives no affinity of its own (a literal or a parameter: then TEXT
** affinity applies).  Everything else is left to SQLite.
**
** Except a numeric column compared with a literal TEXT or BLOB: SQLite's
** LIKE/GLOB optimization turns `x LIKE 'in%'` into the terms `x >= 'IN'
** AND x < 'in'` and offers them like written ones, assuming (where.c's
** isLikeOrGlob) that a number's text never starts with a non-numeric
** prefix.  Infinity's does ("Inf", "-Inf"), so taking the terms (a number
** is below any text, as SQLite compares) dropped the rows whose LIKE is
** true (fuzz_sql seed 11: a FLOAT32 infinity).  Such terms are declined:
** SQLite then checks a written one itself and ignores a LIKE's, which
** exist only to drive an index (colstore_agg refuses a declined filter
** condition loudly, as any other).  A bound parameter is not known at
** planning and is taken: only a literal can come from a LIKE.  LIMIT and OFFSET
** are taken only when every other constraint is taken and any ORDER BY is
** consumed, since otherwise SQLite filters or sorts after us and the rows
** we would cut are not the ones it would; and only from SQLite 3.46 on
** (limit_offer_is_whole).
**
** When a selection of positions is given (rowid IN, _rows), column
** comparisons are left to SQLite: the list is short or the user chose the
** rows, and SQLite's per-row check costs no more than ours would.
**
** _rows and _mask are inputs, never values.  SQLite may check a term a
** second time by reading the column (a MULTI-INDEX OR plan evaluates the
** terms beside the OR after each branch's row), so a cursor filtered by
** `_rows = X` reads X from _rows, which makes the re-check true for the
** rows it produced and for no other.  A cursor that was not filtered by
** the column has no per-row value to give, so xColumn fails with a
** `colstore:` message rather than answer NULL (which would silently drop
** every row).  The planner keeps such plans out of reach:
**
**   - a `_rows`/`_mask` term offered but not takeable here (another
**     operator, an IN list, which is also what SQLite makes of
**     `_rows = ?1 OR _rows = ?2`, or a join operand not yet available):
**     the term is ANDed
**     to the table's WHERE and SQLite would re-check it, so the plan
**     costs 1e18 and xFilter refuses it (flag H);
**   - colUsed names the column but no term on it is offered: either a
**     branch of a MULTI-INDEX OR whose own terms do not involve it (fine:
**     nothing re-checks it) or a scan that must evaluate it under OR, NOT
**     or a function (which xColumn refuses).  Both cost 1000 times more,
**     so SQLite prefers an OR plan whose other branches take the column.
**     (Past 62 columns colUsed cannot tell, and xColumn alone guards.)
**
** Two `_rows = ?` (or two `_mask = ?`) terms are both taken, and xFilter
** refuses them, since the re-check would compare one BLOB with the other.
**
** A plan that takes _rows or _mask costs what its selection costs and
** nothing less for the other terms it takes: so the sum over the branches
** of any OR plan is more than one plan with the OR left to SQLite, and
** SQLite never answers `_rows = ? AND (a OR b)` branch by branch, which
** would de-duplicate the rows by rowid and lose the order and the
** duplicates that _rows promises (tests/sql/test_plan_shapes.py).
**
** For the same reason no `=` that may be an IN list is taken beside
** _rows.  An IN list taken as `=` (a second rowid IN, the first being the
** I slot; or any list where sqlite3_vtab_in cannot tell, see
** eq_may_be_list) makes SQLite call xFilter once per list value, and the
** rows then come in the list's order, each value's rows together.  Beside
** _rows such a term is left to SQLite's per-row check; elsewhere it is
** taken (the answer is a set, and one seek per value is cheap).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colstore_ext.h"

/* Which SQLite ops a column comparison can take, and their kernel op. */
static int pred_op_supported(int op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
    case SQLITE_INDEX_CONSTRAINT_NE:
    case SQLITE_INDEX_CONSTRAINT_LT:
    case SQLITE_INDEX_CONSTRAINT_LE:
    case SQLITE_INDEX_CONSTRAINT_GT:
    case SQLITE_INDEX_CONSTRAINT_GE:
    case SQLITE_INDEX_CONSTRAINT_IS:
    case SQLITE_INDEX_CONSTRAINT_ISNOT:
    case SQLITE_INDEX_CONSTRAINT_ISNULL:
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL:
      return 1;
    default:
      return 0;
  }
}

static const char *op_text(int op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: return "=";
    case SQLITE_INDEX_CONSTRAINT_NE: return "!=";
    case SQLITE_INDEX_CONSTRAINT_LT: return "<";
    case SQLITE_INDEX_CONSTRAINT_LE: return "<=";
    case SQLITE_INDEX_CONSTRAINT_GT: return ">";
    case SQLITE_INDEX_CONSTRAINT_GE: return ">=";
    case SQLITE_INDEX_CONSTRAINT_IS: return " IS ";
    case SQLITE_INDEX_CONSTRAINT_ISNOT: return " IS NOT ";
    case SQLITE_INDEX_CONSTRAINT_ISNULL: return " IS NULL";
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return " IS NOT NULL";
    default: return "?";
  }
}

/* Can the right-hand side of constraint i be taken without changing the
** comparison's meaning?  See the essay above.  A colstore_agg filter
** column, which has no fallback, takes every class of operand on numeric
** and BLOB columns: the core orders the classes as SQLite does, collation
** never applies to them, and a LIKE's bounds do no harm there (the LIKE
** itself is refused, or reads the column, which fails).  A colstore_agg
** key declines them as the table does: there SQLite checks the LIKE on
** the group's key, which the bounds must not have filtered. */
static int pred_exact(sqlite3_index_info *pInfo, int i, cs_type type, csx_take_mode mode, int *why) {
  int op = pInfo->aConstraint[i].op;
  if (op == SQLITE_INDEX_CONSTRAINT_ISNULL || op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL) return 1;
  sqlite3_value *v = NULL;
  bool known = sqlite3_libversion_number() >= 3038000 && sqlite3_vtab_rhs_value(pInfo, i, &v) == SQLITE_OK && v;
  if (type != CS_TYPE_TEXT) {
    /* A case-insensitive LIKE's bounds come with NOCASE: SQLite drops the
    ** LIKE (ESCAPE keeps it from being offered) once both are taken, and
    ** its answer for infinity ('Inf' LIKE 'in%') is not theirs. */
    const char *coll = sqlite3_vtab_collation(pInfo, i);
    bool text = known && (sqlite3_value_type(v) == SQLITE_TEXT || sqlite3_value_type(v) == SQLITE_BLOB);
    if (mode == CSX_TAKE_AGG_FILTER && text && coll && sqlite3_stricmp(coll, "BINARY") != 0) {
      if (why) *why = CSX_DECLINE_COLLATION;
      return 0;
    }
    if (mode == CSX_TAKE_AGG_FILTER) return 1;
    if (type == CS_TYPE_BLOB) return 0;
    /* a literal TEXT/BLOB may be a LIKE's bound: see the essay */
    return !known || (sqlite3_value_type(v) != SQLITE_TEXT && sqlite3_value_type(v) != SQLITE_BLOB);
  }
  const char *coll = sqlite3_vtab_collation(pInfo, i);
  if (coll && sqlite3_stricmp(coll, "BINARY") != 0) {
    if (why) *why = CSX_DECLINE_COLLATION;
    return 0;
  }
  /* A known constant (literal) has no affinity: TEXT affinity applies. */
  return mode != CSX_TAKE_TABLE || known;
}

/* May the `=` constraint i be an IN list that SQLite would walk value by
** value, calling xFilter once per value?  sqlite3_vtab_in tells only for
** constraints 0..31 from SQLite 3.38 on (it keeps IN in a 32-bit mask);
** past them, or before 3.38, only a known right-hand side (a literal) is
** surely not a list: an IN term has none. */
static bool eq_may_be_list(sqlite3_index_info *pInfo, int i) {
  if (sqlite3_libversion_number() < 3038000) return true;
  sqlite3_value *rhs = NULL;
  return i >= 32 && !(sqlite3_vtab_rhs_value(pInfo, i, &rhs) == SQLITE_OK && rhs);
}

static double selectivity(int op);

const char *csx_decline_words(int why) {
  switch (why) {
    case CSX_DECLINE_OPERATOR: return "an operator it does not take (LIKE, GLOB, REGEXP, MATCH, a function's)";
    case CSX_DECLINE_COLLATION: return "a TEXT comparison under another collation than BINARY (COLLATE NOCASE, RTRIM)";
    case CSX_DECLINE_IN_UNKNOWN:
      return "an IN list or `= ?` past the 32nd condition of the WHERE clause, where SQLite cannot tell an IN list "
             "from `= ?` nor hand the list over whole (put IN lists and `= ?` among the first 32 conditions)";
    default: return "a right-hand side it cannot compare as SQLite would";
  }
}

bool csx_plan_take_pred(sqlite3_index_info *pInfo, int i, cs_type t, int src_col, const char *name, int *argv_i,
                        sqlite3_str *slots, sqlite3_str *words, bool more, double *rows, csx_take_mode mode,
                        int *why) {
  int op = pInfo->aConstraint[i].op;
  bool in_ok = sqlite3_libversion_number() >= 3038000;
  bool in_list = op == SQLITE_INDEX_CONSTRAINT_EQ && in_ok && sqlite3_vtab_in(pInfo, i, -1);
  /* Past constraint 31 sqlite3_vtab_in cannot tell an IN list from `=`
  ** (SQLite keeps IN in a 32-bit mask): taking it as `=` would make
  ** SQLite call xFilter once per member, nested for several lists.  So
  ** there only an `=` with a known right-hand side (a literal) is taken. */
  bool in_unknown = i >= 32 && op == SQLITE_INDEX_CONSTRAINT_EQ && eq_may_be_list(pInfo, i);
  /* SQLite hands an IN over as a list only at argv positions 0..31 (a
  ** 32-bit mask by argv position); later it would pass one member at a
  ** time, so a list there is left to SQLite. */
  bool in_fits = !in_list || *argv_i < 32;
  if (why) *why = CSX_DECLINE_INEXACT;
  if (in_unknown || !in_fits) {
    if (why) *why = CSX_DECLINE_IN_UNKNOWN;
    return false;
  }
  if (!(pred_op_supported(op) || in_list)) {
    if (why) *why = CSX_DECLINE_OPERATOR;
    return false;
  }
  if (!pred_exact(pInfo, i, t, mode, why)) return false;
  if (in_list) {
    sqlite3_vtab_in(pInfo, i, 1);
    sqlite3_str_appendf(slots, "Q%d;", src_col);
  } else {
    sqlite3_str_appendf(slots, "P%d:%d;", src_col, op);
  }
  pInfo->aConstraintUsage[i].argvIndex = ++*argv_i;
  pInfo->aConstraintUsage[i].omit = 1;
  sqlite3_str_appendf(words, "%s%s", more ? "," : (sqlite3_str_length(words) ? " pred(" : "pred("), name);
  if (in_list) sqlite3_str_appendall(words, " IN ?");
  else sqlite3_str_appendf(words, "%s%s", op_text(op),
                           op == SQLITE_INDEX_CONSTRAINT_ISNULL || op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL ? "" : "?");
  *rows *= in_list ? 0.05 : selectivity(op);
  return true;
}


/* Does colUsed name column c?  Past 62 it only says "some column from 63
** on"; *exact tells whether the answer is certain. */
static bool col_used(sqlite3_uint64 col_used_mask, int c, bool *exact) {
  *exact = c < 63;
  return (col_used_mask >> (c < 63 ? c : 63)) & 1;
}

/* Whether SQLite offers LIMIT/OFFSET only when it hands over every WHERE
** term.  Before 3.46 it also offered them beside a term comparing two
** columns of the table (`a > b`, `a = b + 1`), which it never offers as a
** constraint: taking LIMIT there cut rows before SQLite's check (and for
** `a = b` SQLite then skipped the check altogether), so `WHERE a > b LIMIT
** 1` answered wrong.  Nothing in sqlite3_index_info shows such a term, so
** older SQLite (Debian 12 ships 3.40) gets no LIMIT/OFFSET pushdown: SQLite
** stops reading after LIMIT rows itself, and steps over OFFSET rows. */
static bool limit_offer_is_whole(void) { return sqlite3_libversion_number() >= 3046000; }

static double selectivity(int op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
    case SQLITE_INDEX_CONSTRAINT_IS: return 0.01;
    case SQLITE_INDEX_CONSTRAINT_ISNULL: return 0.1;
    case SQLITE_INDEX_CONSTRAINT_NE:
    case SQLITE_INDEX_CONSTRAINT_ISNOT:
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return 0.9;
    default: return 0.33;
  }
}

/* Can the ORDER BY (or GROUP BY, or DISTINCT list) SQLite hands over be
** delivered here?  Only columns of the table reach aOrderBy, each with
** its own collation (BINARY here), and only when no term asks for NULLS
** FIRST/LAST against the default (SQLite's allocateIndexInfo); the rowid
** and the hidden columns are declined (the rowid alone is the ORDER BY
** rowid case above). */
static bool order_keys_ok(const sqlite3_index_info *pInfo, int n_cols) {
  if (pInfo->nOrderBy < 1 || pInfo->nOrderBy > CSX_MAX_ORDER_KEYS) return false;
  for (int k = 0; k < pInfo->nOrderBy; k++)
    if (pInfo->aOrderBy[k].iColumn < 0 || pInfo->aOrderBy[k].iColumn >= n_cols) return false;
  return true;
}

/* May rows that repeat the DISTINCT columns be dropped here?  Only when
** the DISTINCT columns are every column SQLite reads from this table: a
** column read beyond them may be for a condition SQLite applies after us
** (a term it cannot hand over, `a > b`), which could reject the one row
** kept of a group while accepting another.  colUsed does not show the
** rowid: older SQLite (3.40 among them) asks for DISTINCT while a
** condition on the rowid is still to come.  Where the running library
** does (colstore_probe.c asks it), *watch is set: the cursor
** de-duplicates, and at the first xRowid SQLite asks for it delivers every
** remaining row (colstore_cursor.c, distinct_fall_back). */
static bool dedupe_is_safe(const sqlite3_index_info *pInfo, int n_cols, bool *watch) {
  *watch = !csx_distinct_excludes_rowid_use();
  if (n_cols > 62) return false;
  sqlite3_uint64 keys = 0;
  for (int k = 0; k < pInfo->nOrderBy; k++) keys |= (sqlite3_uint64)1 << pInfo->aOrderBy[k].iColumn;
  return (pInfo->colUsed & ~keys) == 0;
}

int csx_best_index(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  csx_table *pTab = (csx_table *)pVtab;
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  int n_cols = (int)schema->n_cols;
  int n_cons = pInfo->nConstraint;
  double n = (double)cs_store_rows(pTab->snap->store);
  int i_eq = -1, i_lo = -1, i_hi = -1, i_in = -1, i_rows = -1, i_mask = -1, i_limit = -1, i_offset = -1;
  int i_rows2 = -1, i_mask2 = -1, i_eq_list = -1;
  bool all_taken = true;
  bool in_ok = sqlite3_libversion_number() >= 3038000;

  /* Pass 1: the selection constraints (rowid, _rows, _mask). */
  bool hidden_offered[CSX_N_HIDDEN] = {false, false};
  for (int i = 0; i < n_cons; i++) {
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if (c->iColumn >= n_cols && c->iColumn < n_cols + CSX_N_HIDDEN) hidden_offered[c->iColumn - n_cols] = true;
    if (!c->usable) continue;
    int op = c->op;
    if (c->iColumn == -1) {
      bool in_list = op == SQLITE_INDEX_CONSTRAINT_EQ && in_ok && sqlite3_vtab_in(pInfo, i, -1);
      if (in_list && i_in < 0) i_in = i;
      else if (op == SQLITE_INDEX_CONSTRAINT_EQ && !in_list && !eq_may_be_list(pInfo, i) && i_eq < 0) i_eq = i;
      else if (op == SQLITE_INDEX_CONSTRAINT_EQ && i_eq_list < 0) i_eq_list = i;
      else if ((op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE) && i_lo < 0) i_lo = i;
      else if ((op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE) && i_hi < 0) i_hi = i;
    } else if (c->iColumn >= n_cols && c->iColumn < n_cols + CSX_N_HIDDEN) {
      /* `_rows IN (...)`, which is also what SQLite makes of
      ** `_rows = ?1 OR _rows = ?2`, is not taken: refused below */
      if (op != SQLITE_INDEX_CONSTRAINT_EQ || (in_ok && sqlite3_vtab_in(pInfo, i, -1))) continue;
      int *first = c->iColumn == n_cols + CSX_HIDDEN_ROWS ? &i_rows : &i_mask;
      int *second = c->iColumn == n_cols + CSX_HIDDEN_ROWS ? &i_rows2 : &i_mask2;
      if (*first < 0) *first = i;
      else if (*second < 0) *second = i;
    } else if (op == SQLITE_INDEX_CONSTRAINT_LIMIT && i_limit < 0) {
      i_limit = i;
    } else if (op == SQLITE_INDEX_CONSTRAINT_OFFSET && i_offset < 0) {
      i_offset = i;
    }
  }
  /* An `=` that is, or may be, a list SQLite walks value by value (a
  ** second rowid IN): taken only when no _rows order is at stake. */
  if (i_eq < 0 && i_rows < 0) i_eq = i_eq_list;
  /* A rowid = beats a rowid IN; one exact row needs nothing else. */
  if (i_eq >= 0) i_in = -1;
  bool positions = i_in >= 0 || i_rows >= 0;

  sqlite3_str *words = sqlite3_str_new(NULL);
  sqlite3_str *slots = sqlite3_str_new(NULL);
  int argv_i = 0;
  double rows = n;
#define TAKE(i, letter)                                     \
  do {                                                      \
    pInfo->aConstraintUsage[i].argvIndex = ++argv_i;        \
    pInfo->aConstraintUsage[i].omit = 1;                    \
    sqlite3_str_appendall(slots, letter);                   \
  } while (0)

  if (i_eq >= 0) {
    TAKE(i_eq, "E;");
    pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
    sqlite3_str_appendall(words, "eq(rowid)");
    rows = 1;
  }
  uint64_t est_lo = 0, est_hi = (uint64_t)n;
  if (i_lo >= 0) {
    int op = pInfo->aConstraint[i_lo].op;
    TAKE(i_lo, op == SQLITE_INDEX_CONSTRAINT_GE ? "g;" : "G;");
    sqlite3_value *v = NULL;
    if (in_ok && sqlite3_vtab_rhs_value(pInfo, i_lo, &v) == SQLITE_OK && v) csx_bound_apply(v, op, (uint64_t)n, &est_lo, &est_hi);
    else est_lo = est_hi - (est_hi - est_lo) / 3;
  }
  if (i_hi >= 0) {
    int op = pInfo->aConstraint[i_hi].op;
    TAKE(i_hi, op == SQLITE_INDEX_CONSTRAINT_LE ? "l;" : "L;");
    sqlite3_value *v = NULL;
    if (in_ok && sqlite3_vtab_rhs_value(pInfo, i_hi, &v) == SQLITE_OK && v) csx_bound_apply(v, op, (uint64_t)n, &est_lo, &est_hi);
    else est_hi = est_lo + (est_hi - est_lo) / 3;
  }
  if (i_eq < 0) {
    rows = est_hi > est_lo ? (double)(est_hi - est_lo) : 0;
    if (i_lo >= 0 || i_hi >= 0) sqlite3_str_appendall(words, "range(rowid)");
  }
  if (i_in >= 0) {
    sqlite3_vtab_in(pInfo, i_in, 1);
    TAKE(i_in, "I;");
    sqlite3_str_appendall(words, sqlite3_str_length(words) ? " in(rowid)" : "in(rowid)");
    if (rows > 10) rows = 10;
  }
  if (i_rows >= 0) {
    TAKE(i_rows, "R;");
    if (i_rows2 >= 0) TAKE(i_rows2, "R;"); /* refused by xFilter, see above */
    sqlite3_str_appendall(words, sqlite3_str_length(words) ? " rows(_rows)" : "rows(_rows)");
    if (rows > 1000) rows = 1000;
  }
  if (i_mask >= 0) {
    TAKE(i_mask, "M;");
    if (i_mask2 >= 0) TAKE(i_mask2, "M;");
    sqlite3_str_appendall(words, sqlite3_str_length(words) ? " mask(_mask)" : "mask(_mask)");
    rows *= 0.5;
  }
  /* What a _rows or _mask plan costs, whatever else it takes (see above). */
  double selection_rows = i_rows >= 0 ? (n < 1000 ? n : 1000) : i_mask >= 0 ? n * 0.5 : -1;
  /* The scan itself: what a full or ranged pass costs before filtering. */
  double scanned = rows;

  /* Pass 2: column comparisons. */
  bool any_pred = false;
  for (int i = 0; i < n_cons; i++) {
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if (pInfo->aConstraintUsage[i].argvIndex > 0) continue;
    if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT || c->op == SQLITE_INDEX_CONSTRAINT_OFFSET) continue;
    /* An unusable constraint is still a condition SQLite applies after us
    ** (a = b of this same table is offered only as unusable), so LIMIT and
    ** OFFSET cannot be taken beside it. */
    if (!c->usable) {
      all_taken = false;
      continue;
    }
    bool taken = false;
    /* argv slots are bounded (CSX_MAX_SLOTS); keep room for LIMIT/OFFSET */
    if (c->iColumn >= 0 && c->iColumn < n_cols && !positions && i_eq < 0 && argv_i < CSX_MAX_SLOTS - 4) {
      const cs_column *col = &schema->cols[c->iColumn];
      if (csx_plan_take_pred(pInfo, i, col->type, c->iColumn, col->name, &argv_i, slots, words, any_pred, &rows,
                             CSX_TAKE_TABLE, NULL)) {
        any_pred = true;
        taken = true;
      }
    }
    if (!taken) all_taken = false;
  }
  if (any_pred) sqlite3_str_appendall(words, ")");

  /* ORDER BY rowid, either direction, when nothing else orders. */
  bool order_ok = pInfo->nOrderBy == 0;
  double order_cost = 0;
  bool order_by_rows = true; /* LIMIT counts rows of the order (not groups) */
  bool keys_taken = false;   /* ORDER BY columns taken: a LIMIT makes it a top-k */
  if (pInfo->nOrderBy == 1 && pInfo->aOrderBy[0].iColumn == -1 && i_rows < 0) {
    pInfo->orderByConsumed = 1;
    order_ok = true;
    sqlite3_str_appendall(slots, pInfo->aOrderBy[0].desc ? "D;" : "A;");
    sqlite3_str_appendall(words, pInfo->aOrderBy[0].desc ? " order(rowid desc)" : " order(rowid)");
  } else if (order_keys_ok(pInfo, n_cols)) {
    /* ORDER BY, GROUP BY or DISTINCT on columns: sorted, grouped or
    ** de-duplicated here (see the essay above). */
    int distinct = sqlite3_libversion_number() >= 3038000 ? sqlite3_vtab_distinct(pInfo) : 0;
    bool watch = false;
    bool dedupe = (distinct == 2 || distinct == 3) && dedupe_is_safe(pInfo, n_cols, &watch);
    /* A DISTINCT without ORDER BY that may not be de-duplicated here (a
    ** column beyond the DISTINCT ones is read) is not taken: SQLite keeps
    ** its own B-tree for it whatever order the rows come in, so sorting
    ** them would gain nothing. */
    if (distinct != 2 || dedupe) {
      /* GROUP BY gets the rows sorted, not only grouped: SQLite's own
      ** GROUP BY sorts, and users read its groups in key order; for a
      ** small key range (GROUP BY b) the sort is one counting pass. */
      bool group = distinct == 1;
      cs_order_mode mode = dedupe ? CS_ORDER_DISTINCT : CS_ORDER_SORT;
      order_by_rows = mode == CS_ORDER_SORT && !group;
      keys_taken = true;
      pInfo->orderByConsumed = 1;
      order_ok = true;
      sqlite3_str_appendall(words, mode == CS_ORDER_DISTINCT ? " distinct(" : group ? " group(" : " order(");
      for (int k = 0; k < pInfo->nOrderBy; k++) {
        int c = pInfo->aOrderBy[k].iColumn;
        /* Kept for GROUP BY too: SQLite hands over GROUP BY x ORDER BY x
        ** DESC as one descending key and relies on the order for both. */
        bool desc = pInfo->aOrderBy[k].desc;
        sqlite3_str_appendf(slots, "S%d:%d;", c, desc ? 1 : 0);
        sqlite3_str_appendf(words, "%s%s%s", k ? "," : "", schema->cols[c].name, desc ? " DESC" : "");
      }
      sqlite3_str_appendall(words, ")");
      sqlite3_str_appendf(slots, "Y%d;", (int)mode);
      if (mode == CS_ORDER_DISTINCT && watch) sqlite3_str_appendall(slots, "W;");
      if (group) sqlite3_str_appendall(slots, "Z;");
      /* Reading the keys and sorting them: a little per selected row,
      ** always less than SQLite's sorter, which costs more than a row's
      ** delivery. */
      order_cost = rows * 0.2;
      if (mode == CS_ORDER_DISTINCT) rows = rows > 1000 ? rows / 100 : rows;
    }
  }
  /* SQLite stops after LIMIT rows unless it filters them after us: the
  ** cursor may select the first LIMIT (+ OFFSET) in order first (K<n>). */
  uint64_t limit_hint = 0;
  if (i_limit >= 0 && in_ok) {
    sqlite3_value *lv = NULL, *ov = NULL;
    if (sqlite3_vtab_rhs_value(pInfo, i_limit, &lv) == SQLITE_OK && lv && sqlite3_value_type(lv) == SQLITE_INTEGER &&
        sqlite3_value_int64(lv) >= 0) {
      limit_hint = (uint64_t)sqlite3_value_int64(lv);
      if (i_offset >= 0) {
        if (sqlite3_vtab_rhs_value(pInfo, i_offset, &ov) == SQLITE_OK && ov && sqlite3_value_type(ov) == SQLITE_INTEGER)
          limit_hint += sqlite3_value_int64(ov) > 0 ? (uint64_t)sqlite3_value_int64(ov) : 0;
        else
          limit_hint = 0;
      }
    }
  }
  if (all_taken && order_ok && order_by_rows && limit_offer_is_whole()) {
    if (i_limit >= 0) {
      TAKE(i_limit, "T;");
      sqlite3_str_appendall(words, " limit");
    }
    if (i_offset >= 0) {
      TAKE(i_offset, "O;");
      sqlite3_str_appendall(words, " offset");
    }
  } else if (i_limit >= 0) {
    /* Not taken, but SQLite may stop early: the cursor starts with small
    ** batches and doubles them, so `WHERE a > 0.5 LIMIT 10` does not
    ** select a whole batch of millions of rows for ten (flag K), and
    ** ordered delivery selects the first LIMIT + OFFSET rows first. */
    if (limit_hint > 0) sqlite3_str_appendf(slots, "K%llu;", (unsigned long long)limit_hint);
    else sqlite3_str_appendall(slots, "K;");
    if (keys_taken && order_by_rows && limit_hint > 0) sqlite3_str_appendall(words, " limit");
  }
#undef TAKE
  if (sqlite3_str_length(words) == 0) sqlite3_str_appendall(words, "scan");

  int n_used = 0;
  sqlite3_str_appendall(words, " cols(");
  for (int c = 0; c < n_cols; c++)
    if ((pInfo->colUsed >> (c < 63 ? c : 63)) & 1) {
      sqlite3_str_appendf(words, "%s%s", n_used ? "," : "", schema->cols[c].name);
      n_used++;
    }
  sqlite3_str_appendall(words, ")");
  sqlite3_str_appendf(slots, "U%llu;", (unsigned long long)pInfo->colUsed);

  /* Cost: a fixed start-up, a vectorised pass over the scanned rows when
  ** predicates are evaluated, and SQLite's per-row cost for the rows
  ** returned, growing with the columns read. */
  if (rows < 1 && i_eq >= 0) rows = 1;
  pInfo->estimatedRows = (sqlite3_int64)rows;
  pInfo->estimatedCost = 10.0 + (any_pred ? scanned * 0.05 : 0) + rows * (1.0 + 0.1 * n_used) + order_cost;
  if (selection_rows >= 0) pInfo->estimatedCost = 10.0 + selection_rows * (1.0 + 0.1 * n_used);
  /* A plan that reads _rows or _mask without taking it (see above). */
  bool exact_rows, exact_mask;
  bool reads_rows = col_used(pInfo->colUsed, n_cols + CSX_HIDDEN_ROWS, &exact_rows) && exact_rows && i_rows < 0;
  bool reads_mask = col_used(pInfo->colUsed, n_cols + CSX_HIDDEN_MASK, &exact_mask) && exact_mask && i_mask < 0;
  if ((i_rows < 0 && hidden_offered[CSX_HIDDEN_ROWS]) || (i_mask < 0 && hidden_offered[CSX_HIDDEN_MASK])) {
    /* the term is ANDed to this table's WHERE and cannot be taken here */
    sqlite3_str_appendall(slots, "H;");
    sqlite3_str_appendall(words, " unusable(_rows/_mask)");
    pInfo->estimatedCost = 1e18;
  } else if (reads_rows || reads_mask) {
    /* a branch of an OR that never needs the column, or a scan that does */
    pInfo->estimatedCost *= 1000;
  }

  int n_words = sqlite3_str_length(words), n_slots = sqlite3_str_length(slots);
  char *zWords = sqlite3_str_finish(words), *zSlots = sqlite3_str_finish(slots);
  /* Both strings or neither: slots always holds at least "U...;", and
  ** without it xFilter would ignore constraints marked omitted above. */
  char *z = (zWords && zSlots) ? sqlite3_malloc(n_words + n_slots + 2) : NULL;
  /* Words are appended with a leading space; the first one needs none. */
  int skip = (zWords && zWords[0] == ' ') ? 1 : 0;
  if (z) {
    memcpy(z, zWords + skip, (size_t)(n_words - skip) + 1);
    n_words -= skip;
    memcpy(z + n_words + 1, zSlots, (size_t)n_slots + 1);
  }
  sqlite3_free(zWords);
  sqlite3_free(zSlots);
  pInfo->idxStr = z;
  pInfo->needToFreeIdxStr = 1;
  pInfo->idxNum = argv_i;
  return z ? SQLITE_OK : SQLITE_NOMEM;
}

int csx_plan_decode(const char *idxStr, csx_plan *out) {
  memset(out, 0, sizeof *out);
  if (!idxStr) return SQLITE_OK;
  const char *p = idxStr + strlen(idxStr) + 1;
  while (*p) {
    csx_slot s = {.kind = *p++, .col = -1, .op = 0};
    /* the slot's numbers, if it has any */
    switch (s.kind) {
      case 'P':
        s.col = (int)strtol(p, (char **)&p, 10);
        if (*p == ':') p++;
        s.op = (int)strtol(p, (char **)&p, 10);
        break;
      case 'Q': s.col = (int)strtol(p, (char **)&p, 10); break;
      case 'U': out->col_used = strtoull(p, (char **)&p, 10); break;
      case 'Y': out->order_mode = (int)strtol(p, (char **)&p, 10); break;
      case 'K': out->limit_hint = strtoull(p, (char **)&p, 10); break; /* "K;": 0, unknown */
      case 'X':
        out->refuse = (int)strtol(p, (char **)&p, 10) + 1;
        if (*p == ':') out->refuse_why = (int)strtol(p + 1, (char **)&p, 10);
        break;
      case 'C': if (out->n_slots) out->slots[out->n_slots - 1].recheck = 1; break;
      case 'S':
        if (out->n_keys >= CSX_MAX_ORDER_KEYS) return SQLITE_INTERNAL;
        out->key_col[out->n_keys] = (int)strtol(p, (char **)&p, 10);
        if (*p == ':') p++;
        out->key_desc[out->n_keys++] = (int)strtol(p, (char **)&p, 10);
        break;
      default: break;
    }
    if (*p == ';') p++;
    switch (s.kind) {
      case 'U': case 'Y': case 'S': case 'X': case 'C': break;
      case 'K': out->may_stop_early = 1; break;
      case 'A': out->ordered = 1; break;
      case 'D': out->ordered = out->desc = 1; break;
      case 'H': out->hidden_unusable = 1; break;
      case 'W': out->distinct_watch = 1; break;
      case 'Z': out->group_by = 1; break;
      default:
        if (out->n_slots >= CSX_MAX_SLOTS) return SQLITE_INTERNAL;
        out->slots[out->n_slots++] = s;
    }
  }
  return SQLITE_OK;
}
