/*
** colstore_ext.h - what the files of the SQLite glue share.
**
** ext/ is only glue: it turns SQL into calls on core/colstore.h and core
** results into SQLite values and errors.  The pieces are split by role,
** and calls run only downward, from the entry point at the top to the
** shared helpers at the bottom (no file calls one above it):
**
**   colstore_ext.c        the entry point: registers everything below
**   colstore_agg.c        the colstore_agg table (its plan policy, cursor)
**   colstore_vtab.c       the colstore table: create, connect, module
**   colstore_cursor.c     its cursor: xFilter, xNext, xColumn
**   colstore_func.c       the SQL functions; colstore_calibrate.c;
**                         colstore_import.c (CSV into a store);
**                         colstore_export.c (out to Parquet, CSV);
**                         colstore_query.c (a SELECT as batches, for
**                         colstore_create and colstore_export)
**                         colstore_array.c (whole columns in and out)
**   colstore_write.c      INSERT, DELETE, UPDATE and the transaction hooks
**   colstore_selection.c  a selection's inputs, read from xFilter's
**                         arguments, and the list both cursors walk
**   colstore_plan.c       the plan builder both xBestIndex use, the
**                         colstore table's policy, the idxStr decoder
**   colstore_snapshot.c   snapshots of a store, shared and refreshed
**   colstore_config.c     process-wide settings; colstore_probe.c
**   colstore_value.c      SQLite values as column values and operands
**   colstore_util.c       what all of them share (errors, arrays, clock)
*/
#ifndef COLSTORE_EXT_H
#define COLSTORE_EXT_H

#include <sqlite3ext.h>

#include "colstore.h"

#ifndef SQLITE_CORE
extern const sqlite3_api_routines *sqlite3_api;
#endif

/* An immutable snapshot of a store, shared by a table and its cursors. */
typedef struct csx_snapshot {
  cs_store *store;     /* owned */
  int n_refs;          /* table + open cursors; freed at 0 */
  signed char *sorted; /* per column: 1 sorted, 0 not, -1 not yet known; owned */
  /* cache=auto (colstore_snapshot.c): statements that read this snapshot,
  ** when the last of them started, and whether a copy was tried. */
  uint32_t n_reads;
  uint64_t last_read_ns;
  bool promote_tried;
} csx_snapshot;

/* Whether column col of the snapshot is non-decreasing with no NULLs
** (computed once per snapshot from the zone maps; colstore_snapshot.c). */
bool csx_snapshot_sorted(csx_snapshot *snap, uint32_t col);

typedef struct csx_table csx_table;

/* Per-connection state: the registry of colstore tables by name, so the
** functions can take a table name where they take a path. */
typedef struct csx_scan_stats csx_scan_stats;

typedef struct csx_conn {
  sqlite3 *db;
  csx_table *tables; /* linked through csx_table.next */
  /* The last finished scan, kept raw and turned into JSON only when
  ** colstore_last_plan() asks: formatting at every cursor close cost half
  ** the instructions of a LIMIT 10 query. */
  bool has_last;
  struct csx_scan_stats_copy {
    char table[256]; /* truncated copies; the table may be gone by then */
    char path[1024];
    char plan[1024];
    char cache[256]; /* the table's cache in effect, as colstore_info words it */
  } last_names;
  csx_scan_stats *last; /* the stats themselves; sqlite3_malloc'd once */
} csx_conn;

struct csx_table {
  sqlite3_vtab base; /* must be first */
  sqlite3 *db;
  csx_conn *conn;  /* not owned */
  csx_table *next; /* registry link */
  char *zName;     /* table name; sqlite3_malloc'd */
  char *zPath;     /* store path; sqlite3_malloc'd */
  cs_verify verify;
  cs_cache cache; /* cache= option: where snapshots read the bytes */
  /* cache=auto's knobs, read from the environment once when the table is
  ** connected (csx_table_auto_knobs), not on every statement; and its copy
  ** in flight (colstore_snapshot.c): the job, and the snapshot it copies
  ** (one reference held, so the pointer names that state until the job is
  ** collected). */
  uint64_t auto_reads, auto_gap_ns;
  bool auto_wait;
  cs_cache_copy *copy;
  csx_snapshot *copy_of;
  /* the automatic index: built at the filter that makes this many on one
  ** column of one snapshot (COLSTORE_AUTOINDEX_AFTER; 0: never) */
  uint64_t autoindex_after;
  /* a range goes through the index when it selects at most this many rows
  ** per million of the filter's [lo, hi) (COLSTORE_AUTOINDEX_RANGE_PPM) */
  uint64_t autoindex_range_ppm;
  csx_snapshot *snap; /* current committed snapshot; one ref held */
  int n_open_cursors; /* a refresh waits until no cursor is open */
  /* Writing: rows buffered per transaction, positions deleted by it (in
  ** the order they came), savepoint marks, the writer between xSync and
  ** xCommit. */
  cs_batch *pending; /* NULL until the first INSERT */
  uint64_t *dels;    /* sqlite3_malloc'd; n_dels used */
  uint64_t n_dels, dels_cap;
  /* UPDATE: the changed rows in segments, one per run of statements that
  ** SET the same columns (cs_writer_update takes one column set a call):
  ** positions, and a batch row of new values each (placeholders in the
  ** columns not SET). */
  struct csx_update_seg {
    uint8_t *cols; /* n_cols bytes: 1 = SET by these statements */
    uint64_t *rows;
    uint64_t n, cap;
    cs_batch *vals;
    bool ins; /* rows are positions of rows this transaction inserted (applied to pending at xSync) */
  } * segs;
  int n_segs, segs_cap;
  bool in_write;         /* between xBegin and the transaction's end: xColumn honours nochange */
  csx_snapshot *wr_from; /* the snapshot the first pending DELETE/UPDATE position came from (one ref): the
                            ** file must still be that one at xSync (cs_writer_same_file) */
  struct csx_mark {
    uint64_t rows, dels; /* pending rows and deletions at the savepoint */
    int segs;            /* update segments ... */
    uint64_t seg_n;      /* ... and the last one's rows */
  } * marks;             /* marks[i]: savepoint i */
  int n_marks;
  cs_writer *writer;
  /* What this connection's readers see while insertions, deletions or
  ** updates are pending: snap with them applied (cs_store_with_pending),
  ** made for view_of holding view_n_ins inserted rows, view_n_dels
  ** deletions and view_n_upd updated rows; one ref each; NULL when none
  ** was made. */
  csx_snapshot *view, *view_of;
  uint64_t view_n_dels, view_n_upd, view_n_ins;
};

/* The plan xBestIndex encodes in idxStr (colstore_plan.c explains it). */
#define CSX_MAX_SLOTS 256
/* ORDER BY / GROUP BY / DISTINCT columns colstore takes at most. */
#define CSX_MAX_ORDER_KEYS 16
typedef struct csx_slot {
  char kind;   /* E G g L l I P Q R M T O (colstore_plan.c) */
  int col;     /* P, Q: the column */
  int op;      /* P: the SQLITE_INDEX_CONSTRAINT_* op */
  int recheck; /* C: SQLite may check the condition again itself (colstore_agg) */
  int fold;    /* F: a TEXT IN list SQLite checks again, narrowed folded (colstore_plan.c) */
} csx_slot;
typedef struct csx_plan {
  int n_slots;
  csx_slot slots[CSX_MAX_SLOTS]; /* in argv order */
  int ordered;                   /* ORDER BY rowid consumed */
  int may_stop_early;            /* a LIMIT SQLite applies itself: grow batches from small */
  int desc;                      /* ... descending */
  uint64_t col_used;             /* sqlite3_index_info.colUsed */
  /* Ordered delivery (S and Y slots): rows sorted, grouped or de-duplicated
  ** by these columns before SQLite sees them (ORDER BY, GROUP BY,
  ** DISTINCT). */
  int n_keys;
  int key_col[CSX_MAX_ORDER_KEYS];
  int key_desc[CSX_MAX_ORDER_KEYS];
  int order_mode;      /* cs_order_mode */
  int group_by;        /* Z: the order serves a GROUP BY (LIMIT counts groups) */
  int distinct_watch;  /* W: DISTINCT de-duplicated until SQLite asks for a rowid */
  uint64_t limit_hint; /* K<n>: SQLite stops after n rows unless it filters (0 = unknown) */
  int refuse;          /* X<c>: the plan cannot answer for the table's column c (c + 1; 0 = none) */
  int refuse_why;      /* ... X<c>:<why>: CSX_DECLINE_*, CSX_REFUSE_INPUT or colstore_agg's own */
} csx_plan;

/* A selection's inputs, read from xFilter's arguments once for every
** cursor that selects rows (colstore_selection.c). */
typedef struct csx_selection {
  uint64_t lo, hi;          /* rows [lo, hi): rowid bounds, sorted-column ranges */
  bool never;               /* a predicate no row can match (x = NULL, IN ()) */
  sqlite3_value *in_list;   /* rowid IN (...), or NULL */
  sqlite3_value *rows_blob; /* the _rows argument, or NULL */
  const uint8_t *user_rows; /* its bytes (a held copy) when it is a BLOB, else NULL */
  uint64_t user_rows_bytes;
  const uint8_t *user_mask; /* _mask bytes (a held copy), or NULL */
  uint64_t user_mask_bytes;
  cs_pred *preds; /* column predicates still to evaluate */
  uint32_t n_preds;
  cs_value *vals;         /* the IN members of all predicates */
  uint32_t sorted_ranges; /* predicates turned into row ranges instead */
  void **held;            /* what the above point into; sqlite3_free */
  int n_held;
  /* Whether the connection has a collation besides BINARY, NOCASE and
  ** RTRIM, as this cursor first read it (0 not read yet, 1 no, 2 yes):
  ** kept across the cursor's filters, since a statement compares only
  ** under collations registered before it was prepared. */
  uint8_t other_colls;
} csx_selection;

/* What one scan did, for colstore_last_plan(). */
struct csx_scan_stats {
  const char *shape;      /* "range", "filtered", "list" (static) */
  const char *kernels;    /* the kernels that ran, words (static) */
  int threads;            /* most threads a kernel used */
  const char *idx;        /* the plan's words; valid while the cursor is */
  uint32_t n_preds;       /* predicates evaluated as masks */
  uint32_t sorted_ranges; /* predicates turned into row ranges */
  uint64_t rows_selected;
  uint64_t rows_scanned;
  uint64_t records_scanned;
  uint64_t records_skipped;
  uint64_t records_coded; /* aggregate by one TEXT/BLOB key: records read through dictionary codes */
  uint64_t kernel_ns;
  uint32_t batches;    /* FILTERED: batches selected */
  uint32_t overlapped; /* ... of them given to the worker, beside SQLite */
  uint32_t taken_back; /* ... of those the worker had not started when they were needed */
};

/* Hidden columns follow the store's columns. */
#define CSX_HIDDEN_ROWS 0
#define CSX_HIDDEN_MASK 1
#define CSX_N_HIDDEN 2

/* colstore_selection.c */
/* Reads the plan's E G g L l I R M P Q slots from argv into s (cleared
** first): rowid bounds, the IN list, the _rows and _mask BLOBs (checked and
** held), the predicates with operands converted to the columns' types; a
** range predicate on a sorted column narrows [lo, hi) instead, after the
** chunks its binary search read are checked (when check_cols is given).
** db is the connection whose collations a folded IN list (an F slot)
** depends on; NULL for a plan without one (such a list then narrows to
** IS NOT NULL). */
int csx_selection_build(csx_selection *s, sqlite3_vtab *tab, sqlite3 *db, const char *zTable,
                        csx_snapshot *snap, const csx_plan *plan, int argc, sqlite3_value **argv,
                        const uint8_t *check_cols);
/* The positions of a selection given as a list, in the order they are
** walked: the _rows positions in BLOB order (negatives from the end; each
** checked), kept in [lo, hi) and, when there is a rowid IN list, in it;
** else the rowid IN list itself; then those the _mask selects.  On entry
** pos[0, *n_pos) holds the rowid IN list's positions (sorted, distinct),
** if any, and pos has room for user_rows_bytes / 8 more than that. */
int csx_selection_list(const csx_selection *s, sqlite3_vtab *tab, const char *zTable, uint64_t n_rows,
                       uint64_t *pos, uint64_t *n_pos);
void csx_selection_clear(csx_selection *s);
/* xColumn's error for a read of _rows or _mask (zHidden) of zKind zTable
** ("table", "aggregate table") that no `= ?` gave a value. */
void csx_selection_input_read_error(sqlite3_context *ctx, const char *zKind, const char *zTable,
                                    const char *zHidden);

/* colstore_ext.c: the entry point */
int sqlite3_colstore_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

/* colstore_util.c */
int csx_rc_to_sqlite(cs_rc rc);
/* CLOCK_MONOTONIC in nanoseconds: kernel times for colstore_last_plan. */
uint64_t csx_mono_ns(void);
/* Grows *p (sqlite3_malloc'd, *cap elements of `size` bytes) to at least n
** elements, keeping its contents; SQLITE_NOMEM leaves it as it was. */
int csx_grow(void **p, uint64_t *cap, uint64_t n, size_t size);
/* Sets pVtab->zErrMsg from a printf format (the one place that does). */
int csx_vtab_error(sqlite3_vtab *pVtab, int rc, const char *zFmt, ...);
csx_table *csx_conn_find(csx_conn *conn, const char *zName);
/* The cache a store reads through, in words: "memory", "map", or
** "map (cache=memory: <why>)" when memory was asked for but not had. */
void csx_cache_words(const cs_store *store, char *out, size_t cap);
/* Remembers a finished scan as colstore_last_plan()'s JSON. */
void csx_conn_record_scan(csx_conn *conn, const char *zTable, const char *zPath, const cs_store *store,
                          const csx_scan_stats *st);

/* colstore_vtab.c */
extern sqlite3_module csx_module;
/* colstore_agg.c */
extern sqlite3_module csx_agg_module;

/* colstore_snapshot.c */
void csx_snapshot_release(csx_snapshot *snap);
bool csx_schema_equal(const cs_schema *a, const cs_schema *b);
/* Makes pTab->snap the newest committed state if no cursor is open. */
int csx_table_refresh(csx_table *pTab);
/* cache=auto: at a statement's start (after csx_table_refresh), counts a
** read of pTab->snap and, when the table has proved long-lived, swaps it
** for a copy of the same state; a failed copy leaves it as it was. */
void csx_table_auto_knobs(csx_table *pTab);
/* The filters on one column of one snapshot that an automatic index could
** serve, after which the table builds it (colstore_cursor.c's essay;
** measured in docs/performance.md). */
#define CSX_AUTOINDEX_AFTER 32
/* A range (`x > ?`, `x BETWEEN ? AND ?`) is listed by the index when its
** rows are at most this many per million of the positions it filters;
** wider, the scan is faster than sorting the rows into position order
** (colstore_cursor.c; the crossover measured in docs/performance.md). */
#define CSX_AUTOINDEX_RANGE_PPM 5000
/* Reads COLSTORE_AUTOINDEX_AFTER and COLSTORE_AUTOINDEX_RANGE_PPM into pTab
** once, when it is connected. */
void csx_table_index_knob(csx_table *pTab);
void csx_table_auto_cache(csx_table *pTab, bool writes_pending);
/* Stops and frees the table's copy in flight, if any (table disconnect). */
void csx_table_auto_free(csx_table *pTab);
/* A snapshot of a new store (one ref), NULL when out of memory. */
csx_snapshot *csx_snapshot_new(cs_store *store);
/* Replaces *pSnap with the store's last committed state when another
** connection committed since; errors go to tab naming zPath and zName. */
int csx_snapshot_refresh(csx_snapshot **pSnap, sqlite3_vtab *tab, const char *zPath, const char *zName);

/* colstore_vtab.c: helpers colstore_agg declares its table with too. */
/* One level of SQL quotes stripped ('x', "x", `x`, [x]) into a new string. */
char *csx_unquote(const char *z, int n);
/* SOURCE unquoted and made absolute (a new string). */
char *csx_path_absolute(const char *zArg);
/* The declared type that gives a column of type t its affinity. */
const char *csx_affinity_name(cs_type t);

/* colstore_plan.c: the plan builder both xBestIndex functions use, each
** with its own policy; the colstore table's xBestIndex; the decoder. */
int csx_best_index(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo);
int csx_plan_decode(const char *idxStr, csx_plan *out);

/* Why a condition was not taken (csx_plan_take_pred), and why a plan was
** refused: the <why> of slot X<c>:<why>.  colstore_agg
** numbers its own reasons from CSX_N_WHY on. */
enum {
  CSX_DECLINE_INEXACT,    /* a right-hand side SQLite compares otherwise than the core would */
  CSX_DECLINE_OPERATOR,   /* LIKE, GLOB, MATCH, REGEXP, a function */
  CSX_DECLINE_COLLATION,  /* TEXT under a collation other than BINARY */
  CSX_DECLINE_IN_UNKNOWN, /* an IN list or `= ?` past SQLite's 32-bit IN masks */
  CSX_REFUSE_INPUT,       /* _rows/_mask used otherwise than as `= ?` ANDed to the WHERE clause */
  CSX_N_WHY
};
/* The reason a condition was not taken, in words, for an error message. */
const char *csx_decline_words(int why);

/* Who takes a comparison, which decides what may be left to SQLite. */
typedef enum csx_take_mode {
  CSX_TAKE_TABLE,     /* the colstore table: SQLite checks what it leaves */
  CSX_TAKE_AGG_KEY,   /* a colstore_agg key: SQLite checks what it leaves, on the group's key */
  CSX_TAKE_AGG_FILTER /* a colstore_agg filter column: nothing can be left */
} csx_take_mode;

/* A plan being built.  An xBestIndex begins one, takes constraints into
** it (each gets the next argv position and its slot), may refuse the plan
** (the first refusal is kept), says its own words around the terms, and
** finishes it into idxStr.  Which constraints to take, in what order, and
** what the plan costs is the caller's policy. */
typedef struct csx_plan_builder {
  sqlite3_index_info *info;
  sqlite3_str *words;         /* the caller's words, with the terms where it says them */
  sqlite3_str *sel_words;     /* the selection taken: eq(rowid) ... rows(_rows) mask(_mask) */
  sqlite3_str *pred_words;    /* the predicates taken, for pred(...) */
  sqlite3_str *slots;         /* the machine part, in argv order */
  int argv_i;                 /* argv positions handed out */
  unsigned inputs_said;       /* bit h: the words name hidden column h */
  int refuse_col, refuse_why; /* the first refusal (X slot); refuse_col -1: none */
  double rows;                /* rows the plan selects, estimated; the predicates shrink it */
} csx_plan_builder;

void csx_plan_begin(csx_plan_builder *b, sqlite3_index_info *info, double rows);
/* Appends words (printf format) to the caller's words, after a space. */
void csx_plan_say(csx_plan_builder *b, const char *fmt, ...);
/* Appends words to the selection's words, after a space. */
void csx_plan_say_selection(csx_plan_builder *b, const char *word);
/* Appends the terms taken so far: the selection's words, then pred(...). */
void csx_plan_say_terms(csx_plan_builder *b);
/* Takes constraint i as the next argv entry, omitted by SQLite, with slot
** text `slot` ("E;", "R;"). */
void csx_plan_take(csx_plan_builder *b, int i, const char *slot);
/* Whether constraint i is an IN list SQLite can hand over whole. */
bool csx_plan_is_list(sqlite3_index_info *info, int i);
/* Takes the IN list constraint i whole (sqlite3_vtab_in) with slot text
** `slot`; false, with nothing taken, past argv position 31, where SQLite
** would hand over one member at a time. */
bool csx_plan_take_list(csx_plan_builder *b, int i, const char *slot);
/* Whether constraint i is an `=` whose right-hand side surely arrives as
** one value: not an IN list, and not one SQLite may walk member by
** member unseen (past constraint 31, see eq_may_be_list). */
bool csx_plan_eq_is_value(sqlite3_index_info *info, int i);
/* Whether constraint i is an `=` past constraint 31 that SQLite cannot
** tell from an IN list (it would then call xFilter once per member). */
bool csx_plan_eq_unknown(sqlite3_index_info *info, int i);
/* Whether constraint i (on _rows or _mask) can be taken as a selection:
** a usable `=` that is not an IN list (past constraint 31 too, for the
** colstore table: see the essay of colstore_plan.c).  Anything else on
** them is refused (CSX_REFUSE_INPUT). */
bool csx_plan_input_ok(sqlite3_index_info *info, int i);
/* Takes `_rows = ?` (hidden CSX_HIDDEN_ROWS) or `_mask = ?` (constraint
** i; csx_plan_input_ok said yes): slot R or M, words rows(_rows) or
** mask(_mask) once however often it is taken (xFilter refuses two). */
void csx_plan_take_input(csx_plan_builder *b, int i, int hidden);
/* Takes constraint i (on a column of type t, the store's column src_col)
** as a predicate when the core can evaluate it exactly as SQLite would:
** slot P or Q, its words inside pred(...), b->rows shrunk by its
** selectivity.  False, with nothing changed, when it must be left to
** SQLite.  A TEXT comparison whose right-hand side SQLite does not know at
** planning (a bound parameter, or a column of another table) is taken
** only for colstore_agg, as a parameter (TEXT affinity) would compare; a
** filter column of colstore_agg also takes operands of every class on
** numeric and BLOB columns.  *why (when given) gets the reason a
** condition was not taken (CSX_DECLINE_*). */
bool csx_plan_take_pred(csx_plan_builder *b, int i, cs_type t, int src_col, const char *name,
                        csx_take_mode mode, int *why);
/* Refuses the plan for the caller's column col (X<col>:<why>), unless it
** was refused already: xFilter fails with the first reason. */
void csx_plan_refuse(csx_plan_builder *b, int col, int why);
/* Writes idxStr (words, NUL, slots, U<colUsed>, X when refused; the words
** end in " refused" then), idxNum (the argv entries) and frees the rest;
** SQLITE_NOMEM when out of memory. */
int csx_plan_finish(csx_plan_builder *b);
/* xFilter's error for a plan refused for _rows or _mask of zKind zTable
** ("table", "aggregate table"): CSX_REFUSE_INPUT, the same words for both. */
int csx_plan_refuse_input(sqlite3_vtab *tab, const char *zKind, const char *zTable);

/* colstore_cursor.c */
int csx_open(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor);
int csx_close(sqlite3_vtab_cursor *cur);
int csx_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv);
int csx_next(sqlite3_vtab_cursor *cur);
int csx_eof(sqlite3_vtab_cursor *cur);
int csx_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i);
int csx_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid);

/* colstore_write.c */
int csx_update(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv, sqlite_int64 *pRowid);
int csx_begin(sqlite3_vtab *pVtab);
int csx_sync(sqlite3_vtab *pVtab);
int csx_commit(sqlite3_vtab *pVtab);
int csx_rollback(sqlite3_vtab *pVtab);
int csx_savepoint(sqlite3_vtab *pVtab, int iSavepoint);
int csx_release(sqlite3_vtab *pVtab, int iSavepoint);
int csx_rollback_to(sqlite3_vtab *pVtab, int iSavepoint);
void csx_table_write_free(csx_table *pTab);
/* Whether the open transaction has INSERTed, DELETEd or UPDATEd rows of
** pTab that are not committed yet. */
bool csx_table_has_pending(const csx_table *pTab);
/* colstore_append's rows on their way into a table's transaction
** (colstore_array.c): the function checks its arguments, then runs
** `INSERT INTO t(_rows) VALUES (?1)` with this bound as a pointer of type
** CSX_APPEND_POINTER, so SQLite enrols the table in the transaction as for
** any INSERT, and xUpdate appends the arrays to the pending batch in one
** call (csx_update).  Only this pointer type reaches that path; a BLOB or
** anything else in _rows is still refused. */
#define CSX_APPEND_POINTER "colstore_append"
typedef struct csx_append {
  csx_table *table;     /* the table the function resolved; xUpdate refuses another */
  uint32_t n_cols;      /* the schema's column count when the arrays were matched to it */
  const cs_array *cols; /* one per column (data NULL: all NULL) */
  uint64_t n;           /* rows */
} csx_append;
/* How long a writer waits for a store's lock before SQLITE_BUSY. */
#define CSX_LOCK_TIMEOUT_MS 5000
/* The snapshot this connection's next statement reads (one ref for the
** caller): the newest committed state (csx_table_refresh) with the
** transaction's pending deletions and updates applied.  Errors go to pTab. */
int csx_table_read_snapshot(csx_table *pTab, csx_snapshot **out);

/* colstore_value.c: puts v into column iCol of the batch, converting as a
** native column of that affinity would.  On failure returns SQLITE_MISMATCH
** or SQLITE_CONSTRAINT_NOTNULL (or SQLITE_NOMEM) and *pzErr holds a
** sqlite3_malloc'd message; the batch's current row is left for the caller
** to cancel. */
int csx_value_put(cs_batch *b, uint32_t iCol, const cs_column *col, const char *zTable, sqlite3_value *v,
                  char **pzErr);
/* Renders a value for an error message ("TEXT 'abc'", "INTEGER 300"). */
char *csx_value_describe(sqlite3_value *v);
/* Narrows [*lo, *hi) to the rows where `rowid OP v` holds, with SQLite's
** comparison rules (INTEGER affinity on v, REAL bounds rounded, NULL
** matches nothing, TEXT/BLOB above every integer). */
void csx_bound_apply(sqlite3_value *v, int op, uint64_t n_rows, uint64_t *lo, uint64_t *hi);
/* v as a number the way numeric affinity sees it: INT or FLOAT, else
** TEXT (not numeric), BLOB or NULL (no bytes are filled in). */
void csx_value_number(sqlite3_value *v, cs_value *out);
/* v as a kernel operand for a column of type t, affinity applied; bytes
** are copied into *held (sqlite3_free it). */
int csx_value_for_column(cs_type t, sqlite3_value *v, cs_value *out, void **held);
/* A kernel predicate for `column OP v` (SQLITE_INDEX_CONSTRAINT_* op);
** *never is set when no row can match (v is NULL). */
int csx_pred_from_value(cs_pred *pr, int op, cs_type t, sqlite3_value *v, void **held, bool *never);

/* colstore_config.c: process-wide settings (colstore_config). */
uint64_t csx_config_batch_bytes(void);
/* Ordered delivery by scatter (colstore_cursor.c): 0 = off, the gather
** through sorted positions; else the most bytes a one-pass
** materialization of the selection may take (larger ones take the
** gather). */
uint64_t csx_config_scatter_bytes(void);
uint32_t csx_config_auto_compact(void); /* colstore_config('auto_compact'): 0 = off */
/* Appends the settings, requested and effective, as JSON members. */
void csx_config_json(sqlite3_str *s);
int csx_register_config(sqlite3 *db);
/* The mask gate in effect and where it came from ("colstore_config",
** "calibration" or "default"). */
double csx_config_mask_gate(const char **out_from);

/* colstore_calibrate.c: colstore_calibrate() and colstore_calibration();
** the first call in the process reads the calibration cache. */
int csx_register_calibrate(sqlite3 *db);

/* colstore_func.c */
int csx_register_functions(sqlite3 *db, csx_conn *conn);

/* Whether this SQLite withholds DISTINCT from a virtual table when the
** query reads the rowid beyond the DISTINCT list (colstore_probe.c; asked
** once per process). */
bool csx_distinct_excludes_rowid_use(void);

#endif /* COLSTORE_EXT_H */
