/*
** colstore_plan.c - xBestIndex: which constraints colstore takes, and the
** plan it hands to xFilter.
**
** One planner serves both modules.  The builder below (csx_plan_begin,
** _take, _take_list, _take_input, _take_pred, _refuse, _finish) is what a
** plan is made of: it hands out argv positions, writes each slot and the
** words, knows which `=` may secretly be an IN list and where SQLite hands
** a list over whole, and writes idxStr.  Each xBestIndex keeps only its
** policy: the colstore table (csx_best_index, at the end of this file)
** takes what it can and leaves the rest to SQLite; colstore_agg
** (colstore_agg.c) must take every condition on a filter column or refuse
** the plan.  csx_best_index runs in phases, as SQLite's own planner
** analyses the WHERE clause, costs the plans and then generates code:
** analysis (which constraint is which term), taking the selection, the
** predicates, the order and the LIMIT, costing, and writing idxStr.
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
**   Q<c>      column c IN (...), all at once  the IN list (then F: a TEXT
**                                             list narrowed, checked again)
**   R         _rows = ?                       BLOB of int64 positions
**   M         _mask = ?                       BLOB, one byte per row
**   T / O     LIMIT ? / OFFSET ?              the count
**
** (colstore_agg.c plans with the same P, Q, R and M slots, over the source
** table's columns, and adds C after a slot that SQLite may check again
** itself by reading the column.)
**
** followed by flags: A (ORDER BY rowid ASC consumed), D (DESC consumed),
** S<c>:<desc> and Y<mode> (ORDER BY, GROUP BY or DISTINCT on columns
** consumed: the keys and cs_order_mode), W (DISTINCT watched, see
** dedupe_is_safe), Z (the order serves a GROUP BY), K<n> (a LIMIT SQLite
** applies itself), U<colUsed> (the columns the query reads, for the
** cursor's prefetch) and X<c>:<why> (the plan cannot answer for the
** table's column c, for reason `why`: xFilter refuses it).
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
** A TEXT IN list is the exception to "omitted": SQLite gives an IN term no
** right-hand value at planning, so a literal list cannot be told from a
** subquery, and a subquery decides two things the table cannot see: NUMERIC
** comparison affinity when its column is numeric ('1.0' IN (SELECT 1) is
** true), and the collation of an explicit COLLATE on its result (`x IN
** (SELECT y COLLATE NOCASE ...)` compares under NOCASE, while
** sqlite3_vtab_collation reports the column's BINARY: where.c asks the
** IN's left operand alone).  So the table takes the list with omit off
** (SQLite checks every row it gets again, and LIMIT and OFFSET are not
** taken beside it), marked F, and the cursor only narrows the rows to a
** superset of those that match (colstore_selection.c):
**
**   - folded, when every member arrived as TEXT (or NULL, which matches
**     nothing) and the connection has no collation but BINARY, NOCASE and
**     RTRIM: a row is kept when it equals a member after ASCII case
**     folding and dropping trailing spaces (cs_pred.fold).  Equality
**     under each of the three implies that one, so whichever collation
**     the IN compares under (the left operand's, the column's, or a
**     subquery's COLLATE), no matching row is lost.  With every member
**     TEXT the affinity loses none either: a row that NUMERIC affinity
**     turns into a number equals no TEXT member, and one it leaves text
**     is compared as text;
**   - to the non-NULL rows otherwise: a member that arrives as a number
**     came from a subquery whose affinity the table cannot know, a BLOB
**     member is left alone, and a collation the application registered
**     (by the time xFilter runs every collation the statement names is
**     registered, even through sqlite3_collation_needed) may equate any
**     two strings.
**
** A left operand with another collation than those three is declined.
** Redefining BINARY, NOCASE or RTRIM themselves is outside what any of the
** table's TEXT conditions assume.  colstore_agg, which cannot leave a
** condition to SQLite, takes TEXT IN lists as the core compares them
** (BINARY, the members as they arrive): exact for literal lists and
** parameters; a member that arrives as a number (a numeric subquery) is
** refused at xFilter (colstore_selection.c); a subquery with an explicit
** COLLATE is not detected there, an open defect of the agg.
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
**     the term is ANDed to the table's WHERE and SQLite would re-check
**     it, so the plan costs 1e18 and xFilter refuses it (X<c>:<why>,
**     the one refusal both modules write: colstore_agg refuses the same
**     terms the same way, with the same message);
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
** taken (the answer is a set, and one seek per value is cheap).  The
** `_rows = ?` and `_mask = ?` themselves are taken past constraint 31 as
** well by the colstore table, where SQLite cannot say whether they are IN
** lists (tests/sql/test_plan_shapes.py): walked member by member, an IN
** list there gives each BLOB's rows in turn.  colstore_agg cannot: it
** would aggregate each BLOB apart, so it refuses them there as it refuses
** any condition that may be such a list (csx_plan_eq_unknown).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colstore_ext.h"

/* ---------------------------------------------------- comparisons taken */

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
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return 1;
    default: return 0;
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
  bool known =
      sqlite3_libversion_number() >= 3038000 && sqlite3_vtab_rhs_value(pInfo, i, &v) == SQLITE_OK && v;
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

/* Past constraint 31 sqlite3_vtab_in cannot tell an IN list from `=`
** (SQLite keeps IN in a 32-bit mask): taking it as `=` would make SQLite
** call xFilter once per member, nested for several lists.  So there only
** an `=` with a known right-hand side (a literal) is surely one value. */
bool csx_plan_eq_unknown(sqlite3_index_info *info, int i) {
  return i >= 32 && info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ && eq_may_be_list(info, i);
}

const char *csx_decline_words(int why) {
  switch (why) {
    case CSX_DECLINE_OPERATOR:
      return "an operator it does not take (LIKE, GLOB, REGEXP, MATCH, a function's)";
    case CSX_DECLINE_COLLATION:
      return "a TEXT comparison under another collation than BINARY (COLLATE NOCASE, RTRIM)";
    case CSX_DECLINE_IN_UNKNOWN:
      return "an IN list or `= ?` past the 32nd condition of the WHERE clause, where SQLite cannot tell an "
             "IN list "
             "from `= ?` nor hand the list over whole (put IN lists and `= ?` among the first 32 conditions)";
    default: return "a right-hand side it cannot compare as SQLite would";
  }
}

/* ---------------------------------------------------------- the builder */

void csx_plan_begin(csx_plan_builder *b, sqlite3_index_info *info, double rows) {
  memset(b, 0, sizeof *b);
  b->info = info;
  b->words = sqlite3_str_new(NULL);
  b->sel_words = sqlite3_str_new(NULL);
  b->pred_words = sqlite3_str_new(NULL);
  b->slots = sqlite3_str_new(NULL);
  b->refuse_col = -1;
  b->rows = rows;
}

/* A space before the next word, unless it is the first. */
static void word_space(sqlite3_str *s) {
  if (sqlite3_str_length(s)) sqlite3_str_appendchar(s, 1, ' ');
}

void csx_plan_say(csx_plan_builder *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  word_space(b->words);
  sqlite3_str_vappendf(b->words, fmt, ap);
  va_end(ap);
}

void csx_plan_say_selection(csx_plan_builder *b, const char *word) {
  word_space(b->sel_words);
  sqlite3_str_appendall(b->sel_words, word);
}

void csx_plan_say_terms(csx_plan_builder *b) {
  if (sqlite3_str_length(b->sel_words)) {
    word_space(b->words);
    sqlite3_str_appendall(b->words, sqlite3_str_value(b->sel_words));
    sqlite3_str_reset(b->sel_words);
  }
  if (sqlite3_str_length(b->pred_words)) {
    csx_plan_say(b, "pred(%s)", sqlite3_str_value(b->pred_words));
    sqlite3_str_reset(b->pred_words);
  }
}

void csx_plan_take(csx_plan_builder *b, int i, const char *slot) {
  b->info->aConstraintUsage[i].argvIndex = ++b->argv_i;
  b->info->aConstraintUsage[i].omit = 1;
  sqlite3_str_appendall(b->slots, slot);
}

bool csx_plan_is_list(sqlite3_index_info *info, int i) {
  return info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_libversion_number() >= 3038000 &&
         sqlite3_vtab_in(info, i, -1);
}

/* SQLite hands an IN over as a list only at argv positions 0..31 (a
** 32-bit mask by argv position); later it would pass one member at a
** time, so a list there is left to the caller's policy. */
bool csx_plan_take_list(csx_plan_builder *b, int i, const char *slot) {
  if (b->argv_i >= 32) return false;
  sqlite3_vtab_in(b->info, i, 1);
  csx_plan_take(b, i, slot);
  return true;
}

bool csx_plan_eq_is_value(sqlite3_index_info *info, int i) {
  return info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ && !csx_plan_is_list(info, i) &&
         !eq_may_be_list(info, i);
}

bool csx_plan_input_ok(sqlite3_index_info *info, int i) {
  return info->aConstraint[i].usable && info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ &&
         !csx_plan_is_list(info, i);
}

void csx_plan_take_input(csx_plan_builder *b, int i, int hidden) {
  csx_plan_take(b, i, hidden == CSX_HIDDEN_ROWS ? "R;" : "M;");
  if (b->inputs_said & (1u << hidden)) return;
  b->inputs_said |= 1u << hidden;
  csx_plan_say_selection(b, hidden == CSX_HIDDEN_ROWS ? "rows(_rows)" : "mask(_mask)");
}

bool csx_plan_take_pred(csx_plan_builder *b, int i, cs_type t, int src_col, const char *name,
                        csx_take_mode mode, int *why) {
  sqlite3_index_info *pInfo = b->info;
  int op = pInfo->aConstraint[i].op;
  bool in_list = csx_plan_is_list(pInfo, i);
  if (why) *why = CSX_DECLINE_INEXACT;
  /* a list SQLite would hand over one member at a time (see take_list) */
  if (csx_plan_eq_unknown(pInfo, i) || (in_list && b->argv_i >= 32)) {
    if (why) *why = CSX_DECLINE_IN_UNKNOWN;
    return false;
  }
  if (!(pred_op_supported(op) || in_list)) {
    if (why) *why = CSX_DECLINE_OPERATOR;
    return false;
  }
  bool fold = false;
  if (!pred_exact(pInfo, i, t, mode, why)) {
    /* A TEXT IN list of the table: taken to narrow the rows folded, and
    ** checked again by SQLite (see the essay). */
    const char *coll = sqlite3_vtab_collation(pInfo, i);
    if (!(in_list && t == CS_TYPE_TEXT && mode == CSX_TAKE_TABLE &&
          (!coll || !sqlite3_stricmp(coll, "BINARY") || !sqlite3_stricmp(coll, "NOCASE") ||
           !sqlite3_stricmp(coll, "RTRIM"))))
      return false;
    fold = true;
  }
  char slot[32];
  if (in_list) {
    snprintf(slot, sizeof slot, "Q%d;%s", src_col, fold ? "F;" : "");
    csx_plan_take_list(b, i, slot);
    if (fold) pInfo->aConstraintUsage[i].omit = 0;
  } else {
    snprintf(slot, sizeof slot, "P%d:%d;", src_col, op);
    csx_plan_take(b, i, slot);
  }
  sqlite3_str_appendf(b->pred_words, "%s%s", sqlite3_str_length(b->pred_words) ? "," : "", name);
  if (in_list)
    sqlite3_str_appendall(b->pred_words, " IN ?");
  else
    sqlite3_str_appendf(
        b->pred_words, "%s%s", op_text(op),
        op == SQLITE_INDEX_CONSTRAINT_ISNULL || op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL ? "" : "?");
  b->rows *= in_list ? 0.05 : selectivity(op);
  return true;
}

void csx_plan_refuse(csx_plan_builder *b, int col, int why) {
  if (b->refuse_col >= 0) return;
  b->refuse_col = col;
  b->refuse_why = why;
}

int csx_plan_finish(csx_plan_builder *b) {
  sqlite3_index_info *pInfo = b->info;
  csx_plan_say_terms(b); /* any the caller did not say */
  sqlite3_str_appendf(b->slots, "U%llu;", (unsigned long long)pInfo->colUsed);
  if (b->refuse_col >= 0) {
    sqlite3_str_appendf(b->slots, "X%d:%d;", b->refuse_col, b->refuse_why);
    csx_plan_say(b, "refused");
  }
  /* Both strings or neither: slots always holds at least "U...;", and
  ** without it xFilter would ignore constraints marked omitted. */
  bool ok = !sqlite3_str_errcode(b->words) && !sqlite3_str_errcode(b->slots) &&
            !sqlite3_str_errcode(b->sel_words) && !sqlite3_str_errcode(b->pred_words);
  int n_words = sqlite3_str_length(b->words), n_slots = sqlite3_str_length(b->slots);
  char *zWords = sqlite3_str_finish(b->words), *zSlots = sqlite3_str_finish(b->slots);
  sqlite3_free(sqlite3_str_finish(b->sel_words));
  sqlite3_free(sqlite3_str_finish(b->pred_words));
  char *z = ok && zSlots ? sqlite3_malloc(n_words + n_slots + 2) : NULL;
  if (z) {
    if (n_words) memcpy(z, zWords, (size_t)n_words);
    z[n_words] = 0;
    memcpy(z + n_words + 1, zSlots, (size_t)n_slots + 1);
  }
  sqlite3_free(zWords);
  sqlite3_free(zSlots);
  pInfo->idxStr = z;
  pInfo->needToFreeIdxStr = 1;
  pInfo->idxNum = b->argv_i;
  return z ? SQLITE_OK : SQLITE_NOMEM;
}

int csx_plan_refuse_input(sqlite3_vtab *tab, const char *zKind, const char *zTable) {
  return csx_vtab_error(
      tab, SQLITE_ERROR,
      "colstore: _rows and _mask of %s %s select rows only as `_rows = ?` or `_mask = ?` "
      "ANDed with the rest of the WHERE clause; they cannot be read, or used under OR, NOT, IN "
      "or another operator (filter the BLOB before binding it instead)",
      zKind, zTable);
}

/* ------------------------------------------- the colstore table's policy */

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

/* Can the ORDER BY (or GROUP BY, or DISTINCT list) SQLite hands over be
** delivered here?  Only columns of the table reach aOrderBy, each with
** its own collation (BINARY here), and only when no term asks for NULLS
** FIRST/LAST against the default (SQLite's allocateIndexInfo); the rowid
** and the hidden columns are declined (the rowid alone is the ORDER BY
** rowid case of take_order). */
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

/* Analysis: which constraint is which term of the plan (-1: none). */
typedef struct table_terms {
  int eq;                     /* rowid = value */
  int eq_list;                /* rowid = that is, or may be, a list SQLite walks (a second rowid IN) */
  int lo, hi;                 /* rowid > / >=, rowid < / <= */
  int in;                     /* rowid IN (...), handed over whole */
  int input[CSX_N_HIDDEN][2]; /* _rows = ?, _mask = ?: the first two of each */
  bool offered[CSX_N_HIDDEN]; /* a term on _rows / _mask was offered, usable or not */
  int limit, offset;
} table_terms;

static void analyse_terms(sqlite3_index_info *pInfo, int n_cols, table_terms *t) {
  memset(t, -1, sizeof *t);
  for (int h = 0; h < CSX_N_HIDDEN; h++) t->offered[h] = false;
  for (int i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    int h = c->iColumn - n_cols; /* a hidden column's number, when it is one */
    bool hidden = c->iColumn >= n_cols && h < CSX_N_HIDDEN;
    if (hidden) t->offered[h] = true;
    if (!c->usable) continue;
    int op = c->op;
    if (c->iColumn == -1) {
      bool in_list = csx_plan_is_list(pInfo, i);
      if (in_list && t->in < 0)
        t->in = i;
      else if (csx_plan_eq_is_value(pInfo, i) && t->eq < 0)
        t->eq = i;
      else if (op == SQLITE_INDEX_CONSTRAINT_EQ && t->eq_list < 0)
        t->eq_list = i;
      else if ((op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE) && t->lo < 0)
        t->lo = i;
      else if ((op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE) && t->hi < 0)
        t->hi = i;
    } else if (hidden) {
      /* `_rows IN (...)`, which is also what SQLite makes of
      ** `_rows = ?1 OR _rows = ?2`, is not taken: refused (take_cost) */
      if (!csx_plan_input_ok(pInfo, i)) continue;
      int *slot = t->input[h][0] < 0 ? &t->input[h][0] : &t->input[h][1];
      if (*slot < 0) *slot = i;
    } else if (op == SQLITE_INDEX_CONSTRAINT_LIMIT && t->limit < 0) {
      t->limit = i;
    } else if (op == SQLITE_INDEX_CONSTRAINT_OFFSET && t->offset < 0) {
      t->offset = i;
    }
  }
  /* An `=` that is, or may be, a list SQLite walks value by value (a
  ** second rowid IN): taken only when no _rows order is at stake. */
  if (t->eq < 0 && t->input[CSX_HIDDEN_ROWS][0] < 0) t->eq = t->eq_list;
  /* A rowid = beats a rowid IN; one exact row needs nothing else. */
  if (t->eq >= 0) t->in = -1;
}

/* A rowid bound: its slot, and the range [*lo, *hi) of n it leaves. */
static void take_bound(csx_plan_builder *b, int i, const char *slot, uint64_t n, uint64_t *lo, uint64_t *hi) {
  int op = b->info->aConstraint[i].op;
  csx_plan_take(b, i, slot);
  sqlite3_value *v = NULL;
  bool lower = op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE;
  if (sqlite3_libversion_number() >= 3038000 && sqlite3_vtab_rhs_value(b->info, i, &v) == SQLITE_OK && v)
    csx_bound_apply(v, op, n, lo, hi);
  else if (lower)
    *lo = *hi - (*hi - *lo) / 3;
  else
    *hi = *lo + (*hi - *lo) / 3;
}

/* Takes the selection: rowid =, bounds, IN; _rows; _mask.  b->rows
** becomes the rows selected; the result is what a _rows or _mask plan
** costs whatever else it takes (see the essay), or -1. */
static double take_selection(csx_plan_builder *b, const table_terms *t, double n) {
  sqlite3_index_info *pInfo = b->info;
  if (t->eq >= 0) {
    csx_plan_take(b, t->eq, "E;");
    pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
    csx_plan_say_selection(b, "eq(rowid)");
    b->rows = 1;
  }
  uint64_t est_lo = 0, est_hi = (uint64_t)n;
  if (t->lo >= 0)
    take_bound(b, t->lo, pInfo->aConstraint[t->lo].op == SQLITE_INDEX_CONSTRAINT_GE ? "g;" : "G;",
               (uint64_t)n, &est_lo, &est_hi);
  if (t->hi >= 0)
    take_bound(b, t->hi, pInfo->aConstraint[t->hi].op == SQLITE_INDEX_CONSTRAINT_LE ? "l;" : "L;",
               (uint64_t)n, &est_lo, &est_hi);
  if (t->eq < 0) {
    b->rows = est_hi > est_lo ? (double)(est_hi - est_lo) : 0;
    if (t->lo >= 0 || t->hi >= 0) csx_plan_say_selection(b, "range(rowid)");
  }
  if (t->in >= 0 && csx_plan_take_list(b, t->in, "I;")) {
    csx_plan_say_selection(b, "in(rowid)");
    if (b->rows > 10) b->rows = 10;
  }
  /* a second `_rows = ?` (or `_mask = ?`) too: refused by xFilter, see above */
  for (int k = 0; k < 2; k++)
    if (t->input[CSX_HIDDEN_ROWS][k] >= 0)
      csx_plan_take_input(b, t->input[CSX_HIDDEN_ROWS][k], CSX_HIDDEN_ROWS);
  if (t->input[CSX_HIDDEN_ROWS][0] >= 0 && b->rows > 1000) b->rows = 1000;
  for (int k = 0; k < 2; k++)
    if (t->input[CSX_HIDDEN_MASK][k] >= 0)
      csx_plan_take_input(b, t->input[CSX_HIDDEN_MASK][k], CSX_HIDDEN_MASK);
  if (t->input[CSX_HIDDEN_MASK][0] >= 0) b->rows *= 0.5;
  return t->input[CSX_HIDDEN_ROWS][0] >= 0   ? (n < 1000 ? n : 1000)
         : t->input[CSX_HIDDEN_MASK][0] >= 0 ? n * 0.5
                                             : -1;
}

/* Takes the column comparisons the core evaluates exactly, unless a list
** of positions is given (see the essay) or the plan is one row; true when
** every constraint but LIMIT/OFFSET was taken.  *any: some predicate was. */
static bool take_preds(csx_plan_builder *b, const cs_store *store, bool positions, bool *any, bool *indexed) {
  sqlite3_index_info *pInfo = b->info;
  const cs_schema *schema = cs_store_schema(store);
  int n_cols = (int)schema->n_cols;
  bool all_taken = true;
  *any = *indexed = false;
  for (int i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if (pInfo->aConstraintUsage[i].argvIndex > 0) continue;
    if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT || c->op == SQLITE_INDEX_CONSTRAINT_OFFSET) continue;
    /* An unusable constraint is still a condition SQLite applies after us
    ** (a = b of this same table is offered only as unusable), so LIMIT and
    ** OFFSET cannot be taken beside it. */
    bool taken = false;
    /* argv slots are bounded (CSX_MAX_SLOTS); keep room for LIMIT/OFFSET */
    if (c->usable && c->iColumn >= 0 && c->iColumn < n_cols && !positions && b->argv_i < CSX_MAX_SLOTS - 4) {
      const cs_column *col = &schema->cols[c->iColumn];
      double rows_before = b->rows;
      bool list = csx_plan_is_list(pInfo, i);
      taken = csx_plan_take_pred(b, i, col->type, c->iColumn, col->name, CSX_TAKE_TABLE, NULL);
      *any |= taken;
      /* An `=` or IN the snapshot's automatic index answers (colstore_cursor.c):
      ** its rows are the values' average count, as SQLite's own estimate
      ** for an index is, not a fraction of the table. */
      const cs_index *ix = taken && c->op == SQLITE_INDEX_CONSTRAINT_EQ && pInfo->aConstraintUsage[i].omit
                               ? cs_index_find(store, (uint32_t)c->iColumn)
                               : NULL;
      if (ix) {
        double n = (double)cs_store_rows(store), per = cs_index_rows_per_value(ix) * (list ? 5 : 1);
        double est = n > 0 ? rows_before * per / n : 0;
        if (est < b->rows) b->rows = est;
        *indexed = true;
      }
      taken = taken && pInfo->aConstraintUsage[i].omit; /* a TEXT IN list SQLite checks again */
    }
    if (!taken) all_taken = false;
  }
  return all_taken;
}

/* What taking the ORDER BY decided. */
typedef struct order_taken {
  bool ok;      /* no order left for SQLite to make */
  bool by_rows; /* LIMIT counts rows of the order (not groups) */
  bool keys;    /* ORDER BY columns taken: a LIMIT makes it a top-k */
  double cost;
} order_taken;

/* ORDER BY, GROUP BY or DISTINCT on columns: sorted, grouped or
** de-duplicated here (see dedupe_is_safe); false when not taken. */
static bool take_order_keys(csx_plan_builder *b, const cs_schema *schema, order_taken *o) {
  sqlite3_index_info *pInfo = b->info;
  int distinct = sqlite3_libversion_number() >= 3038000 ? sqlite3_vtab_distinct(pInfo) : 0;
  bool watch = false;
  bool dedupe = (distinct == 2 || distinct == 3) && dedupe_is_safe(pInfo, (int)schema->n_cols, &watch);
  /* A DISTINCT without ORDER BY that may not be de-duplicated here (a
  ** column beyond the DISTINCT ones is read) is not taken: SQLite keeps
  ** its own B-tree for it whatever order the rows come in, so sorting
  ** them would gain nothing. */
  if (distinct == 2 && !dedupe) return false;
  /* GROUP BY gets the rows sorted, not only grouped: SQLite's own GROUP BY
  ** sorts, and users read its groups in key order; for a small key range
  ** (GROUP BY b) the sort is one counting pass. */
  bool group = distinct == 1;
  cs_order_mode mode = dedupe ? CS_ORDER_DISTINCT : CS_ORDER_SORT;
  o->by_rows = mode == CS_ORDER_SORT && !group;
  o->keys = o->ok = true;
  pInfo->orderByConsumed = 1;
  csx_plan_say(b, "%s(", mode == CS_ORDER_DISTINCT ? "distinct" : group ? "group" : "order");
  for (int k = 0; k < pInfo->nOrderBy; k++) {
    int c = pInfo->aOrderBy[k].iColumn;
    /* Kept for GROUP BY too: SQLite hands over GROUP BY x ORDER BY x DESC
    ** as one descending key and relies on the order for both. */
    bool desc = pInfo->aOrderBy[k].desc;
    sqlite3_str_appendf(b->slots, "S%d:%d;", c, desc ? 1 : 0);
    sqlite3_str_appendf(b->words, "%s%s%s", k ? "," : "", schema->cols[c].name, desc ? " DESC" : "");
  }
  sqlite3_str_appendall(b->words, ")");
  sqlite3_str_appendf(b->slots, "Y%d;", (int)mode);
  if (mode == CS_ORDER_DISTINCT && watch) sqlite3_str_appendall(b->slots, "W;");
  if (group) sqlite3_str_appendall(b->slots, "Z;");
  /* Reading the keys and sorting them: a little per selected row, always
  ** less than SQLite's sorter, which costs more than a row's delivery. */
  o->cost = b->rows * 0.2;
  if (mode == CS_ORDER_DISTINCT) b->rows = b->rows > 1000 ? b->rows / 100 : b->rows;
  return true;
}

/* ORDER BY rowid, either direction, when nothing else orders; or the
** ORDER BY, GROUP BY or DISTINCT columns. */
static order_taken take_order(csx_plan_builder *b, const cs_schema *schema, const table_terms *t) {
  sqlite3_index_info *pInfo = b->info;
  order_taken o = {.ok = pInfo->nOrderBy == 0, .by_rows = true, .keys = false, .cost = 0};
  if (pInfo->nOrderBy == 1 && pInfo->aOrderBy[0].iColumn == -1 && t->input[CSX_HIDDEN_ROWS][0] < 0) {
    pInfo->orderByConsumed = 1;
    o.ok = true;
    sqlite3_str_appendall(b->slots, pInfo->aOrderBy[0].desc ? "D;" : "A;");
    csx_plan_say(b, pInfo->aOrderBy[0].desc ? "order(rowid desc)" : "order(rowid)");
  } else if (order_keys_ok(pInfo, (int)schema->n_cols)) {
    take_order_keys(b, schema, &o);
  }
  return o;
}

/* LIMIT + OFFSET when both are known integers (0: unknown). */
static uint64_t limit_hint(sqlite3_index_info *pInfo, const table_terms *t) {
  sqlite3_value *lv = NULL, *ov = NULL;
  if (t->limit < 0 || sqlite3_libversion_number() < 3038000) return 0;
  if (!(sqlite3_vtab_rhs_value(pInfo, t->limit, &lv) == SQLITE_OK && lv &&
        sqlite3_value_type(lv) == SQLITE_INTEGER && sqlite3_value_int64(lv) >= 0))
    return 0;
  uint64_t hint = (uint64_t)sqlite3_value_int64(lv);
  if (t->offset < 0) return hint;
  if (!(sqlite3_vtab_rhs_value(pInfo, t->offset, &ov) == SQLITE_OK && ov &&
        sqlite3_value_type(ov) == SQLITE_INTEGER))
    return 0;
  return hint + (sqlite3_value_int64(ov) > 0 ? (uint64_t)sqlite3_value_int64(ov) : 0);
}

/* LIMIT and OFFSET: taken only when SQLite neither filters nor sorts after
** us; else SQLite may stop early all the same, and the cursor selects the
** first LIMIT (+ OFFSET) in order first (K<n>). */
static void take_limit(csx_plan_builder *b, const table_terms *t, bool all_taken, const order_taken *o) {
  if (all_taken && o->ok && o->by_rows && limit_offer_is_whole()) {
    if (t->limit >= 0) {
      csx_plan_take(b, t->limit, "T;");
      csx_plan_say(b, "limit");
    }
    if (t->offset >= 0) {
      csx_plan_take(b, t->offset, "O;");
      csx_plan_say(b, "offset");
    }
  } else if (t->limit >= 0) {
    /* Not taken, but SQLite may stop early: the cursor starts with small
    ** batches and doubles them, so `WHERE a > 0.5 LIMIT 10` does not
    ** select a whole batch of millions of rows for ten (flag K), and
    ** ordered delivery selects the first LIMIT + OFFSET rows first. */
    uint64_t hint = limit_hint(b->info, t);
    if (hint > 0)
      sqlite3_str_appendf(b->slots, "K%llu;", (unsigned long long)hint);
    else
      sqlite3_str_appendall(b->slots, "K;");
    if (o->keys && o->by_rows && hint > 0) csx_plan_say(b, "limit");
  }
}

/* The columns read, in words; how many. */
static int say_columns(csx_plan_builder *b, const cs_schema *schema) {
  int n_used = 0;
  csx_plan_say(b, "cols(");
  for (int c = 0; c < (int)schema->n_cols; c++)
    if ((b->info->colUsed >> (c < 63 ? c : 63)) & 1) {
      sqlite3_str_appendf(b->words, "%s%s", n_used ? "," : "", schema->cols[c].name);
      n_used++;
    }
  sqlite3_str_appendall(b->words, ")");
  return n_used;
}

/* Cost: a fixed start-up, a vectorised pass over the scanned rows when
** predicates are evaluated (a binary search instead when an `=` or IN is
** answered by the snapshot's automatic index: then SQLite orders a join
** as it would for a native table with an index), and SQLite's per-row
** cost for the rows returned, growing with the columns read; a _rows or
** _mask plan costs its selection.  A plan that reads _rows or _mask without taking it (see
** the essay) is refused, or costs 1000 times more. */
static void take_cost(csx_plan_builder *b, const table_terms *t, int n_cols, double filter_cost,
                      double selection_rows, double order_cost, int n_used) {
  sqlite3_index_info *pInfo = b->info;
  double rows = b->rows;
  if (rows < 1 && t->eq >= 0) rows = 1;
  pInfo->estimatedRows = (sqlite3_int64)rows;
  pInfo->estimatedCost = 10.0 + filter_cost + rows * (1.0 + 0.1 * n_used) + order_cost;
  if (selection_rows >= 0) pInfo->estimatedCost = 10.0 + selection_rows * (1.0 + 0.1 * n_used);
  bool reads = false;
  for (int h = 0; h < CSX_N_HIDDEN; h++) {
    bool exact, used = col_used(pInfo->colUsed, n_cols + h, &exact) && exact;
    if (t->input[h][0] >= 0) continue;
    /* the term is ANDed to this table's WHERE and cannot be taken here */
    if (t->offered[h]) csx_plan_refuse(b, n_cols + h, CSX_REFUSE_INPUT);
    /* a branch of an OR that never needs the column, or a scan that does */
    reads |= used;
  }
  if (b->refuse_col >= 0)
    pInfo->estimatedCost = 1e18;
  else if (reads)
    pInfo->estimatedCost *= 1000;
}

int csx_best_index(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  csx_table *pTab = (csx_table *)pVtab;
  const cs_schema *schema = cs_store_schema(pTab->snap->store);
  double n = (double)cs_store_rows(pTab->snap->store);
  table_terms t;
  analyse_terms(pInfo, (int)schema->n_cols, &t);
  csx_plan_builder b;
  csx_plan_begin(&b, pInfo, n);
  double selection_rows = take_selection(&b, &t, n);
  double scanned = b.rows; /* what a full or ranged pass reads before filtering */
  bool positions = t.in >= 0 || t.input[CSX_HIDDEN_ROWS][0] >= 0, any_pred, indexed;
  bool all_taken = take_preds(&b, pTab->snap->store, positions || t.eq >= 0, &any_pred, &indexed);
  double filter_cost = !any_pred ? 0 : indexed ? 2.0 * log2(scanned + 2) : scanned * 0.05;
  csx_plan_say_terms(&b);
  order_taken o = take_order(&b, schema, &t);
  take_limit(&b, &t, all_taken, &o);
  if (sqlite3_str_length(b.words) == 0) csx_plan_say(&b, "scan");
  int n_used = say_columns(&b, schema);
  take_cost(&b, &t, (int)schema->n_cols, filter_cost, selection_rows, o.cost, n_used);
  return csx_plan_finish(&b);
}

/* ------------------------------------------------------------- decoding */

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
      case 'C':
        if (out->n_slots) out->slots[out->n_slots - 1].recheck = 1;
        break;
      case 'F':
        if (out->n_slots) out->slots[out->n_slots - 1].fold = 1;
        break;
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
      case 'U':
      case 'Y':
      case 'S':
      case 'X':
      case 'C':
      case 'F': break;
      case 'K': out->may_stop_early = 1; break;
      case 'A': out->ordered = 1; break;
      case 'D': out->ordered = out->desc = 1; break;
      case 'W': out->distinct_watch = 1; break;
      case 'Z': out->group_by = 1; break;
      default:
        if (out->n_slots >= CSX_MAX_SLOTS) return SQLITE_INTERNAL;
        out->slots[out->n_slots++] = s;
    }
  }
  return SQLITE_OK;
}
