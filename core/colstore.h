/*
** colstore.h - the public face of the colstore core.
**
** The core is a column store that knows nothing of SQLite: it opens a store
** file read-only through one mmap (or, with cache=memory, reads it into a
** private copy), exposes each record's column buffers as pointers into that
** mapping (or copy), and writes new records through a writer that
** never touches committed bytes.  ext/ (the SQLite glue) and the tests and
** benchmarks use only what is declared here.
**
** Why a snapshot model: a cs_store is an immutable view of one committed
** generation of the file.  Appends never rewrite committed records, so a
** snapshot stays valid (and its pointers stable) for as long as it is open,
** even while another connection or process commits; deletions and updates
** (format 2) are new blocks too, never changes to old ones.  A reader that wants the
** newer rows asks cs_store_is_current() and opens a fresh snapshot; that is
** cheap because open reads only the commit slots and the footer.
**
** Errors: every function that can fail returns a cs_rc and fills an optional
** cs_err with a message written where the problem was found.
*/
#ifndef COLSTORE_H
#define COLSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CS_VERSION_STRING "0.1.0"
#define CS_FORMAT_VERSION 1
/* The newest format this build reads: version 2 adds deletion vectors and
** patch blocks (docs/format.md 14).  New files are written in
** CS_FORMAT_VERSION and upgraded to 2 by their first deleting or updating
** transaction. */
#define CS_FORMAT_VERSION_MAX 2

/* ---------------------------------------------------------------- errors */

/* One table yields the enum and its names (libuv's UV_ERRNO_MAP habit). */
#define CS_RC_MAP(X)                            \
  X(OK, "ok")                                   \
  X(EIO, "I/O error")                           \
  X(ENOMEM, "out of memory")                    \
  X(ENOTSTORE, "not a colstore file")           \
  X(EVERSION, "unsupported format version")     \
  X(ECORRUPT, "corrupt store")                  \
  X(ESCHEMA, "schema mismatch")                 \
  X(EINVAL, "invalid argument")                 \
  X(EEXIST, "file exists")                      \
  X(ENOENT, "no such file")                     \
  X(EBUSY, "store is locked by another writer") \
  X(ERANGE, "value out of range")

/* clang-format would indent CS_RC_COUNT as a continuation of the macro
** call before it. */
/* clang-format off */
typedef enum cs_rc {
#define CS_RC_ENUM(name, text) CS_##name,
  CS_RC_MAP(CS_RC_ENUM)
#undef CS_RC_ENUM
  CS_RC_COUNT
} cs_rc;
/* clang-format on */

#define CS_ERR_MSG_BYTES 512

/* A fixed-size error holder: no allocation on the failure path. */
typedef struct cs_err {
  cs_rc code;                 /* CS_OK until something fails */
  char msg[CS_ERR_MSG_BYTES]; /* NUL-terminated; "" when code == CS_OK */
} cs_err;

const char *cs_rc_name(cs_rc rc);
/* Fills err (when not NULL) and returns code, so callers can
** `return cs_err_set(err, CS_ECORRUPT, "...", ...);` on one line. */
cs_rc cs_err_set(cs_err *err, cs_rc code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ----------------------------------------------------------------- types */

typedef enum cs_type {
  CS_TYPE_INT8 = 1,
  CS_TYPE_INT16 = 2,
  CS_TYPE_INT32 = 3,
  CS_TYPE_INT64 = 4,
  CS_TYPE_UINT8 = 5,
  CS_TYPE_UINT16 = 6,
  CS_TYPE_UINT32 = 7,
  CS_TYPE_FLOAT32 = 8,
  CS_TYPE_FLOAT64 = 9,
  CS_TYPE_BOOL = 10, /* one byte per row, 0 or 1 */
  CS_TYPE_TEXT = 11, /* int64 offsets (n_rows + 1) + UTF-8 bytes */
  CS_TYPE_BLOB = 12  /* int64 offsets (n_rows + 1) + bytes */
} cs_type;

#define CS_TYPE_MAX 12

/* Canonical name ("INT32"); NULL for an unknown type. */
const char *cs_type_name(cs_type type);
/* Parses a canonical name or an alias (INTEGER, REAL, VARCHAR(30), ...),
** case-insensitively, over the first n bytes of s; returns 0 if unknown. */
cs_type cs_type_parse(const char *s, size_t n);
/* Bytes per value for fixed-width types; 0 for TEXT and BLOB. */
size_t cs_type_width(cs_type type);
static inline bool cs_type_is_varlen(cs_type t) { return t == CS_TYPE_TEXT || t == CS_TYPE_BLOB; }
static inline bool cs_type_is_float(cs_type t) { return t == CS_TYPE_FLOAT32 || t == CS_TYPE_FLOAT64; }
static inline bool cs_type_is_integer(cs_type t) { return !cs_type_is_varlen(t) && !cs_type_is_float(t); }

/* The values an integer column of type t holds (BOOL: 0 and 1); the whole
** int64 range for INT64 and for the types that are not integers. */
static inline void cs_type_int_range(cs_type t, int64_t *lo, int64_t *hi) {
  switch (t) {
    case CS_TYPE_INT8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case CS_TYPE_INT16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case CS_TYPE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case CS_TYPE_UINT8: *lo = 0, *hi = UINT8_MAX; break;
    case CS_TYPE_UINT16: *lo = 0, *hi = UINT16_MAX; break;
    case CS_TYPE_UINT32: *lo = 0, *hi = UINT32_MAX; break;
    case CS_TYPE_BOOL: *lo = 0, *hi = 1; break;
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
  }
}

/* Whether v fits a column of type t (cs_type_int_range). */
static inline bool cs_type_int_fits(cs_type t, int64_t v) {
  int64_t lo, hi;
  cs_type_int_range(t, &lo, &hi);
  return v >= lo && v <= hi;
}

#define CS_NAME_MAX_BYTES 255 /* longest column name, in bytes */
#define CS_MAX_COLUMNS 2000   /* SQLite's default SQLITE_MAX_COLUMN */

typedef struct cs_column {
  const char *name; /* NUL-terminated; owned by whoever owns the schema */
  cs_type type;
  bool nullable;
} cs_column;

typedef struct cs_schema {
  uint32_t n_cols;
  const cs_column *cols; /* n_cols entries */
} cs_schema;

/* ------------------------------------------------------------ statistics */

/* Zone-map value: integers (and BOOL) as i64, floats as f64. */
typedef union cs_stat {
  int64_t i;
  double f;
  uint64_t bits;
} cs_stat;

#define CS_CHUNK_SORTED 1u     /* values non-decreasing, no NULLs */
#define CS_CHUNK_HAS_MINMAX 2u /* min/max hold at least one non-NULL value */

/* One column of one record, resolved to pointers into the mapping. */
typedef struct cs_chunk {
  const uint8_t *validity; /* LSB-first bitmap, 1 = valid; NULL = no NULLs */
  const int64_t *offsets;  /* TEXT/BLOB: n_rows + 1 byte offsets; else NULL */
  const void *data;        /* values, or the bytes of TEXT/BLOB */
  uint64_t data_bytes;     /* bytes at data */
  uint64_t null_count;
  cs_stat min, max; /* valid when flags & CS_CHUNK_HAS_MINMAX */
  uint32_t flags;   /* CS_CHUNK_* */
} cs_chunk;

/* ----------------------------------------------------------------- store */

/* How much open checks.  Data chunks are not read at open unless FULL;
** readers check each chunk the first time the process reads it through
** cs_store_check_chunks (what the SQL table does unless verify=header). */
typedef enum cs_verify {
  CS_VERIFY_HEADER = 0, /* check header, commit slot and footer checksums */
  CS_VERIFY_FULL = 1,   /* also every record header and data checksum */
  CS_VERIFY_READ = 2    /* open as HEADER; the reader checks chunks as it reads */
} cs_verify;

typedef struct cs_store cs_store;

/* Where a snapshot reads the store's bytes from (cs_cache.c explains why).
** MAP reads them through a shared mapping of the file: nothing is copied
** and the page cache is shared with every other reader.  MEMORY copies the
** committed bytes at open (pread, into anonymous memory in 2 MiB blocks)
** and reads only the copy: open costs a read of the whole store and the
** process holds it, but the reads do not pay what a host charges for file
** pages that went cold (docs/performance.md, "What else slows a query
** after a pause").  A store whose committed bytes exceed cs_cache_limit()
** is read through the mapping even when MEMORY is asked for, and
** cs_store_cache_info says so and why.  AUTO opens and refreshes as MAP;
** the caller, which knows when a statement starts and how long the table
** has lived, starts a MEMORY copy of the same committed state in the
** background once the table has proved long-lived (cs_cache_copy_start)
** and swaps it in at a later statement (cs_cache.c). */
typedef enum cs_cache { CS_CACHE_MAP = 0, CS_CACHE_MEMORY = 1, CS_CACHE_AUTO = 2 } cs_cache;

/* Opens the last committed state of the store at path.  CS_ENOENT when the
** path does not exist, CS_ENOTSTORE when its first bytes are not a store,
** CS_EVERSION for a future format, CS_ECORRUPT for damage found. */
cs_rc cs_store_open(const char *path, cs_verify verify, cs_store **out, cs_err *err);
/* cs_store_open reading the bytes as cache says (cs_store_open is
** cs_store_open_with(..., CS_CACHE_MAP, ...)).  MEMORY checks everything
** open checks, then copies the committed bytes; verify=full and the
** per-chunk checks of cs_store_check_chunks hash the copy, the bytes the
** kernels will read.  CS_ENOMEM when the copy cannot be allocated, CS_EIO
** when it cannot be read. */
cs_rc cs_store_open_with(const char *path, cs_verify verify, cs_cache cache, cs_store **out, cs_err *err);

/* What a snapshot's cache is (for a dataset: over all its files). */
typedef struct cs_cache_info {
  cs_cache requested;  /* what the open asked for */
  cs_cache effective;  /* MEMORY when every byte is read from a copy */
  uint64_t bytes;      /* bytes held in copies (committed bytes of the files) */
  uint64_t read_bytes; /* of them read from the files when the copies were made; the
                        ** rest came from the previous snapshot's copy (cs_store_reopen) */
  uint64_t copy_ns;    /* wall time the copies took, nanoseconds */
  char why[192];       /* requested MEMORY but effective MAP: why; else "" */
} cs_cache_info;
void cs_store_cache_info(const cs_store *store, cs_cache_info *out);
/* The most committed bytes a store (a dataset: all its files together) may
** have for a MEMORY open to copy it: set by cs_cache_limit_set (0 restores
** the default, half of the physical memory sysconf reports).  Process-wide;
** applies to opens and reopens from the next one. */
void cs_cache_limit_set(uint64_t bytes);
uint64_t cs_cache_limit(void);
/* The cache's name: "map", "memory" or "auto". */
const char *cs_cache_name(cs_cache cache);
/* cache=auto's size rule: whether a copy of bytes fits comfortably, i.e.
** within cs_cache_limit() and within half of the memory the kernel reports
** available now (MemAvailable of /proc/meminfo, else sysconf's available
** pages).  When not, why says so. */
bool cs_cache_auto_fits(uint64_t bytes, char *why, size_t cap);
/* cache=auto's copy, made on a thread of its own (cs_cache.c).
** cs_cache_copy_start starts copying store's committed state and returns at
** once: *out is the copy in flight, or NULL with why set (and CS_OK) when
** the store is not a single file on its mapping, fails cs_cache_auto_fits,
** or no thread could be started.  The thread never touches store (it
** copies its path and identity at the start), and calls nothing but core.
** cs_cache_copy_done says, without waiting, whether the copy has finished
** (always true in a process forked after the start: its thread is not
** there, and the copy counts as failed); cs_cache_copy_wait waits for it
** (for tests; not in a forked child); cs_cache_copy_cancel asks it to stop
** at its next 16 MiB piece and returns at once.  cs_cache_copy_take, once
** done: a snapshot of exactly the state started from (same file,
** generation and extent) that reads a private copy (a new reference, cache
** requested AUTO, so its reopen after a commit is on the mapping again), or
** NULL with why (out of memory, a read error, a commit meanwhile,
** cancelled).  cs_cache_copy_free cancels, waits for the thread and frees
** (a copy not taken is closed); in a forked child it waits for nothing and
** leaves an unfinished copy's memory alone.  One thread at a time calls
** these for a given copy. */
typedef struct cs_cache_copy cs_cache_copy;
cs_rc cs_cache_copy_start(const cs_store *store, cs_cache_copy **out, char *why, size_t cap, cs_err *err);
bool cs_cache_copy_done(const cs_cache_copy *copy);
void cs_cache_copy_wait(cs_cache_copy *copy);
void cs_cache_copy_cancel(cs_cache_copy *copy);
cs_store *cs_cache_copy_take(cs_cache_copy *copy, char *why, size_t cap);
void cs_cache_copy_free(cs_cache_copy *copy);
/* Releases a reference: the one from an open, or one cs_store_reopen gave. */
void cs_store_close(cs_store *store);

const char *cs_store_path(const cs_store *store);
const cs_schema *cs_store_schema(const cs_store *store);
uint64_t cs_store_rows(const cs_store *store);
uint64_t cs_store_records(const cs_store *store);
uint64_t cs_store_generation(const cs_store *store);
uint64_t cs_store_file_bytes(const cs_store *store);
/* True when open had to rebuild the record directory by a forward scan
** because the footer was missing or damaged. */
bool cs_store_recovered(const cs_store *store);
/* True when the commit slot not in use is written but invalid: a commit
** torn by a crash, or damage that may have hidden the newest commit.  The
** store opens at the older generation; colstore_info reports it. */
bool cs_store_slot_damaged(const cs_store *store);

/* First row of record rec; rec == cs_store_records() gives the row count. */
uint64_t cs_store_record_first_row(const cs_store *store, uint64_t rec);
uint64_t cs_store_record_rows(const cs_store *store, uint64_t rec);
/* The record holding row (row < cs_store_rows()). */
uint64_t cs_store_find_record(const cs_store *store, uint64_t row);
const cs_chunk *cs_store_chunk(const cs_store *store, uint64_t rec, uint32_t col);

/* ----------------------------------------------------------- deletions */

/* Deleted rows (format 2, docs/format.md 14).  A deleted row keeps its
** position as a gap: cs_store_rows() stays the POSITION count (rowids, the
** _rows range and the _mask length), and cs_store_live_rows() is the rows a
** query can see.  THE RULE FOR EVERY READ PATH: a deleted position yields
** no row.  cs_pred_eval and cs_select_range clear deleted positions from
** their masks themselves (zone maps may still skip records: they are
** bounds, widened at worst by deleted values), and cs_order_range never
** delivers one.  The gathers (cs_gather_*, cs_select_rows) and
** cs_pred_sorted_range work on positions and do NOT filter: a caller with
** an explicit list (rowid =, IN, _rows) drops deleted positions first with
** cs_store_filter_deleted, a caller with its own mask clears them with
** cs_store_mask_deleted.  The aggregates (cs_agg_add_range, cs_agg_add_rows)
** skip deleted positions themselves.  Column stats (null counts, min/max,
** sorted) still describe every position, live or not. */
uint64_t cs_store_live_rows(const cs_store *store);
/* The format version of the file (a dataset: the highest of its files). */
uint32_t cs_store_format_version(const cs_store *store);
/* Bytes of the data region no record uses any more (superseded deletion
** vectors, chunks replaced by updates, emptied patch headers), which a
** compaction reclaims besides the deleted rows. */
uint64_t cs_store_free_bytes(const cs_store *store);
/* Deleted positions of record rec, and its bitmap: bit i & 7 of byte i >> 3
** is position i of the record, 1 = deleted, 64-byte aligned and zero past
** the record's rows to a multiple of 64 bytes (read it a word at a time);
** NULL when the record has no deletions. */
uint64_t cs_store_record_deleted(const cs_store *store, uint64_t rec);
const uint8_t *cs_store_record_deletions(const cs_store *store, uint64_t rec);
/* Whether position row (< cs_store_rows()) is deleted. */
bool cs_store_row_deleted(const cs_store *store, uint64_t row);
/* Drops the deleted positions from rows[0, n) in place, keeping the order
** of the others; returns how many are left.  Rows must be < cs_store_rows(). */
uint64_t cs_store_filter_deleted(const cs_store *store, uint64_t *rows, uint64_t n);
/* Sets mask[i] = 0 for every deleted position first + i, i < n; returns the
** deleted positions in [first, first + n).  A word of the vector at a time;
** a record without deletions costs nothing. */
uint64_t cs_store_mask_deleted(const cs_store *store, uint64_t first, uint64_t n, uint8_t *mask);
/* Deleted positions in [first, first + n), a word at a time. */
uint64_t cs_store_deleted_in(const cs_store *store, uint64_t first, uint64_t n);
/* A view of base with rows[0, n) (any order, duplicates and deleted
** positions allowed, each < cs_store_rows(base)) deleted as well, for
** reading a transaction's deletions before they are committed (cs_view.c).
** It holds a reference to base and shares its data; every reader treats it
** as base with more deletions (cs_store_is_dataset is false; it is never
** reopened or written).  Close it with cs_store_close.  base is one file's
** snapshot (not a dataset or a view).  CS_EINVAL for a row out of range or
** another base, CS_ENOMEM.  It is cs_store_with_changes with no updates. */
cs_rc cs_store_with_deletions(const cs_store *base, const uint64_t *rows, uint64_t n, cs_store **out,
                              cs_err *err);
/* Pending updates, as cs_writer_update takes them: position rows[i] takes
** row i of values in every column c with cols[c] != 0 (cols NULL: every
** column). */
typedef struct cs_update {
  const uint64_t *rows;
  uint64_t n;
  const struct cs_batch *values; /* a batch of the store's schema with at least n rows */
  const uint8_t *cols;           /* n_cols flags, or NULL */
} cs_update;
/* cs_store_with_deletions that also shows upd[0, n_upd) applied in order
** (a position given twice takes its last value in each column a later
** update changes, as cs_writer_update does), for reading a transaction's
** updates before they are committed.  A record an update touches gets, for
** each changed column, a chunk of its own in memory holding the record's
** values with the new ones in place, laid out, with zone map, null count
** and sorted flag, as the writer will write it (cs_chunk.c); every other
** chunk is base's.  Nothing of upd is kept.  base must be one file's
** snapshot (not a dataset or a view): else CS_EINVAL, as for a row out of
** range, a batch of another schema (CS_ESCHEMA for its types), or a NULL
** for a NOT NULL column; CS_ECORRUPT when a TEXT/BLOB chunk to update has
** damaged offsets; CS_ENOMEM.  Chunk checks (cs_store_check_chunks) of the
** view check base's chunks, including the ones an updated chunk was made
** from. */
cs_rc cs_store_with_changes(const cs_store *base, const uint64_t *del_rows, uint64_t n_del,
                            const cs_update *upd, uint64_t n_upd, cs_store **out, cs_err *err);
/* cs_store_with_changes of base and, after its last position, the rows of
** ins (NULL: none) as positions cs_store_rows(base) + i, for reading a
** transaction's inserted rows before they are written.  del_rows and upd
** may name those positions too: a deleted one reads as deleted, an updated
** one with its new values (cs_batch_with_updates).  The inserted rows are
** laid out in memory as records of CS_DEFAULT_RECORD_ROWS rows, each
** chunk made by the writer's own code (zone map, null count, sorted flag),
** so every reader treats them as committed records.  Nothing of ins or upd
** is kept.  CS_EINVAL / CS_ESCHEMA for a batch of another schema, as for a
** position past the inserted rows; CS_ENOMEM. */
cs_rc cs_store_with_pending(const cs_store *base, const struct cs_batch *ins, const uint64_t *del_rows,
                            uint64_t n_del, const cs_update *upd, uint64_t n_upd, cs_store **out,
                            cs_err *err);
/* A new batch (*out) holding b's rows with upd[0, n_upd) applied to the
** positions [first, first + cs_batch_rows(b)) as cs_writer_update would
** apply them (row i of b is position first + i; positions outside are
** ignored), for writing rows a transaction inserted and then updated,
** which cs_writer_update cannot change.  *out is NULL when no update
** touches b.  Free it with cs_batch_free.  CS_EINVAL, CS_ENOMEM. */
cs_rc cs_batch_with_updates(const struct cs_batch *b, const cs_schema *schema, uint64_t first,
                            const cs_update *upd, uint64_t n_upd, struct cs_batch **out, cs_err *err);

/* Whole-column summary derived from the chunks. */
typedef struct cs_column_stats {
  uint64_t null_count;
  bool has_minmax;
  cs_stat min, max;
  bool sorted; /* non-decreasing across the whole column, no NULLs */
} cs_column_stats;
void cs_store_column_stats(const cs_store *store, uint32_t col, cs_column_stats *out);

/* Checks whether this snapshot is still the newest committed generation
** (reads the commit slots with pread; no mapping).  *out_current = false
** means a newer commit exists and a new cs_store_open will see it. */
cs_rc cs_store_is_current(const cs_store *store, bool *out_current, cs_err *err);
/* The newest committed state of what store was opened from, sharing all
** that did not change: when store is current, *out is store itself with one
** more reference; else a new snapshot, which for a dataset re-expands its
** SOURCE (or takes the same list of paths) and opens only the files that are
** new or changed, sharing with store every file still at the same path,
** inode and generation.  Either way store is unchanged and stays valid, and
** each is closed with cs_store_close.  Errors are those of cs_store_is_current
** and of a fresh open (cs_store_open, cs_store_open_source); verify applies
** to the files opened, and the cache the store was opened with applies
** again (a MEMORY snapshot of a file that only grew copies the bytes it
** already holds from its own copy and reads only what is new). */
cs_rc cs_store_reopen(cs_store *store, cs_verify verify, cs_store **out, cs_err *err);

/* Verifies every data checksum and every TEXT/BLOB offset array; the error
** names the file, record and column of the first failure. */
cs_rc cs_store_verify(const cs_store *store, cs_err *err);

/* What a damaged part is (cs_store_verify_source). */
typedef enum cs_damage_kind {
  CS_DAMAGE_FILE = 1,       /* the file cannot be read past it: preamble, schema, commit
                            ** slots, footer and record directory; the file's last part,
                            ** nothing after it is checked */
  CS_DAMAGE_RECORD = 2,     /* a record header or its descriptors (damaged, or not the footer's) */
  CS_DAMAGE_DESCRIPTOR = 3, /* a chunk descriptor that breaks the rules of format.md 6.4 */
  CS_DAMAGE_CHUNK = 4,      /* a chunk's checksum, or its TEXT/BLOB offsets */
  CS_DAMAGE_DELETIONS = 5,  /* a deletion vector, or the deleted counts */
  CS_DAMAGE_PATCH = 6       /* a patch block (an UPDATE's chunks) */
} cs_damage_kind;

#define CS_DAMAGE_NO_RECORD UINT64_MAX /* cs_damage.record of a part that is no record's */
#define CS_DAMAGE_NO_COLUMN UINT32_MAX /* cs_damage.column of a part that is no column's */

/* One damaged part; every pointer is valid only during the callback. */
typedef struct cs_damage {
  const char *path; /* the file */
  cs_damage_kind kind;
  uint64_t record;    /* index within the file, or CS_DAMAGE_NO_RECORD */
  uint32_t column;    /* schema index, or CS_DAMAGE_NO_COLUMN */
  uint64_t first_row; /* the record's positions in its file: [first_row, */
  uint64_t n_rows;    /* first_row + n_rows); 0 and 0 without a record */
  const char *msg;    /* "path: record 3, column x: checksum mismatch (...)", no "colstore: " */
} cs_damage;
typedef void (*cs_damage_fn)(void *ctx, const cs_damage *part);

/* Checks everything cs_store_verify and a verify=full open check, in every
** file of source (a store path, or a dataset source as cs_store_open_source
** takes it), without stopping at the first damage: fn is called once per
** damaged part, in file order and within a file in the order found, and
** *out_n_damaged is their number (0: the source is intact).  A damaged part
** hides nothing beside it: a chunk's bytes are hashed whatever happened to
** its record's header, and only a part that makes the rest of its file
** unreadable (CS_DAMAGE_FILE, then that file's last part) ends its checks.
** The return is an error other than damage (CS_ENOENT, CS_ENOTSTORE, CS_EVERSION, CS_EIO,
** CS_ENOMEM; CS_ESCHEMA when the intact files of a dataset differ). */
cs_rc cs_store_verify_source(const char *source, cs_damage_fn fn, void *ctx, uint64_t *out_n_damaged,
                             cs_err *err);

/* Checks the chunks of records [rec_first, rec_end) in the columns cols
** flags (n_cols bytes; NULL = every column) against their checksums,
** each the first time this process reads it (cs_verified.c); CS_ECORRUPT
** names the file, record and column.  O(columns) once they are checked.
** cs_store_check_rows does the same for the records holding rows[0, n). */
cs_rc cs_store_check_chunks(const cs_store *store, uint64_t rec_first, uint64_t rec_end, const uint8_t *cols,
                            cs_err *err);
cs_rc cs_store_check_rows(const cs_store *store, const uint64_t *rows, uint64_t n, const uint8_t *cols,
                          cs_err *err);

/* -------------------------------------------------------------- datasets */

/* A dataset is several store files of one schema read as ONE store whose
** rows are the files' rows concatenated, in the order given.  Its record
** directory spans the files (record r of the dataset is some record of some
** file, its chunks pointing into that file's own mapping), so every kernel,
** cs_store_find_record and the accessors above work across file boundaries
** unchanged.  A dataset is read-only (no writer opens one).  On a dataset:
** cs_store_path is the SOURCE (directory or pattern) it was opened from,
** cs_store_file_bytes the total of the files, cs_store_generation the sum of
** the files' generations, cs_store_recovered/slot_damaged true if any file's
** is; cs_store_is_current is false when any file has a newer commit or was
** replaced, and (when opened by cs_store_open_source) when the set of files
** the SOURCE matches changed; cs_store_verify verifies every file, its error
** naming the file, the record (its index within that file) and the column. */

/* True when source names a dataset: an existing directory (meaning the
** `*.cst` files inside it) or a path containing `*` or `?` (a glob(3)
** pattern).  Anything else is a single store file. */
bool cs_source_is_dataset(const char *source);
/* The regular files a dataset source matches, sorted by name (strcmp);
** none is not an error here (*out_n = 0).  A writer's temporary file (a name
** ending in ".tmp." and six letters or digits: the file cs_writer_create
** writes before it renames it into place) is never one of them.  Free with
** cs_paths_free. */
cs_rc cs_dataset_expand(const char *source, char ***out_paths, uint32_t *out_n, cs_err *err);
void cs_paths_free(char **paths, uint32_t n);
/* Opens every file and builds one store over them.  Every file's schema
** must equal the first's (names, types, nullability), else CS_ESCHEMA naming
** the first file that differs and its first differing column.  n_paths == 0
** is CS_ENOENT.  cs_store_path is paths[0]. */
cs_rc cs_store_open_dataset(const char *const *paths, uint32_t n_paths, cs_verify verify, cs_store **out,
                            cs_err *err);
/* Opens source: a dataset (cs_source_is_dataset: expanded now, and again by
** cs_store_is_current) or else a single store (cs_store_open).  A dataset
** source that matches no file is CS_ENOENT "colstore: no store files match
** <pattern>". */
cs_rc cs_store_open_source(const char *source, cs_verify verify, cs_store **out, cs_err *err);
/* cs_store_open_source with a cache (cs_store_open_with); a dataset copies
** every file when their committed bytes together are within the limit. */
cs_rc cs_store_open_source_with(const char *source, cs_verify verify, cs_cache cache, cs_store **out,
                                cs_err *err);
/* True for a store opened as a dataset (even one of a single file). */
bool cs_store_is_dataset(const cs_store *store);
/* The files of a store (1 for a single-file store), in row order. */
uint32_t cs_store_files(const cs_store *store);
const char *cs_store_file_path(const cs_store *store, uint32_t i);
uint64_t cs_store_file_rows(const cs_store *store, uint32_t i);
/* The dataset row where file i's rows start. */
uint64_t cs_store_file_first_row(const cs_store *store, uint32_t i);

/* Bounds-checked access to one TEXT/BLOB value: CS_ECORRUPT if the offsets
** are damaged.  local is the row within the record. */
cs_rc cs_chunk_varlen(const cs_chunk *chunk, uint64_t local, const uint8_t **out_bytes, uint64_t *out_len,
                      cs_err *err);

static inline bool cs_chunk_is_valid(const cs_chunk *chunk, uint64_t local) {
  return chunk->validity == NULL || ((chunk->validity[local >> 3] >> (local & 7)) & 1);
}

/* ----------------------------------------------------------------- batch */

/* A batch of rows in column form, built row by row or column by column.
** It owns growable buffers; cs_batch_truncate() drops rows from the end (a
** savepoint rollback), cs_batch_clear() keeps the capacity for reuse. */
typedef struct cs_batch cs_batch;

cs_rc cs_batch_new(const cs_schema *schema, cs_batch **out, cs_err *err);
void cs_batch_free(cs_batch *batch);
uint64_t cs_batch_rows(const cs_batch *batch);
void cs_batch_truncate(cs_batch *batch, uint64_t n_rows);
void cs_batch_clear(cs_batch *batch);
/* Appends to column col; a row is complete when every column got a value.
** Callers append one value per column per row, in any column order. */
cs_rc cs_batch_put_null(cs_batch *batch, uint32_t col, cs_err *err);
cs_rc cs_batch_put_i64(cs_batch *batch, uint32_t col, int64_t v, cs_err *err); /* range-checked by caller */
cs_rc cs_batch_put_f64(cs_batch *batch, uint32_t col, double v, cs_err *err);
cs_rc cs_batch_put_bytes(cs_batch *batch, uint32_t col, const void *p, uint64_t n, cs_err *err);
/* Completes the current row (checks every column got exactly one value). */
void cs_batch_end_row(cs_batch *batch);
/* Drops the values of the current, incomplete row (a row that failed). */
void cs_batch_cancel_row(cs_batch *batch);
/* Reads back value row of fixed-width column col (for retyping); returns
** false for NULL.  Integers and BOOL come back in out->i, floats in out->f. */
bool cs_batch_get(const cs_batch *batch, uint32_t col, uint64_t row, cs_stat *out);
/* Empties column col and gives it a new type, so its values can be put
** again converted; the caller must re-put exactly cs_batch_rows() values. */
void cs_batch_column_reset(cs_batch *batch, uint32_t col, cs_type type);

/* One column of n rows given whole (colstore_append): the layout of
** docs/sql.md "Arrays".  A fixed-width column: data holds n little-endian
** values at the type's width (BOOL one byte, 0 or 1).  TEXT and BLOB: data
** holds the bytes and offsets n + 1 little-endian int64 offsets into them,
** non-decreasing and within [0, data_bytes] (Arrow's large-string layout;
** offsets[0] need not be 0).  valid: n bytes, 0 = NULL, or NULL when every
** value is present.  data NULL and data_bytes 0 with n > 0 (and no
** offsets): the column is all NULL.  Neither offsets nor values need any
** alignment. */
typedef struct cs_array {
  const void *data;
  uint64_t data_bytes;
  const void *offsets; /* TEXT/BLOB only */
  const uint8_t *valid;
} cs_array;
/* Appends n rows given as one cs_array per column of schema (the batch's
** schema; cols[c].data NULL makes column c all NULL).  Everything is
** checked before a byte is appended: a length that does not match n, an
** offset out of order or out of range, a BOOL byte other than 0 or 1, a
** NULL in a NOT NULL column are CS_EINVAL naming the column (and the row
** or offset); CS_ENOMEM.  A failure leaves the batch as it was.  Nothing
** is converted: values are copied in bulk, NULL slots stored as zeros
** (fixed width) or empty (TEXT/BLOB) whatever the arrays held there. */
cs_rc cs_batch_append_arrays(cs_batch *batch, const cs_schema *schema, const cs_array *cols, uint64_t n,
                             cs_err *err);

/* ---------------------------------------------------------------- writer */

typedef struct cs_writer cs_writer;

typedef struct cs_writer_options {
  uint64_t record_rows; /* rows per record; 0 = CS_DEFAULT_RECORD_ROWS */
  bool replace;         /* create: overwrite an existing file */
  int lock_timeout_ms;  /* append: wait this long for the lock, then CS_EBUSY */
  /* append: after a commit that leaves the store with many small records,
  ** compact it (positions kept) under the lock still held, when that
  ** rewrite costs at most this many times the bytes it wins back; 0 = never
  ** (docs/performance.md, "Small transactions").  A failed compaction
  ** leaves the commit as it is and notes why (cs_diag_notes). */
  uint32_t auto_compact;
} cs_writer_options;

#define CS_DEFAULT_RECORD_ROWS 65536u

/* Creates a new store: everything goes to a temporary file beside path,
** which cs_writer_commit() fsyncs and renames into place (then fsyncs the
** directory), so a crash leaves either no file or a complete one. */
cs_rc cs_writer_create(const char *path, const cs_schema *schema, const cs_writer_options *opt,
                       cs_writer **out, cs_err *err);
/* Opens an existing store for appending: takes an exclusive flock (waiting
** up to lock_timeout_ms) and reads the last committed state. */
cs_rc cs_writer_append(const char *path, const cs_writer_options *opt, cs_writer **out, cs_err *err);
const cs_schema *cs_writer_schema(const cs_writer *w);
/* Rows already committed plus rows written by this writer so far. */
uint64_t cs_writer_rows(const cs_writer *w);
/* The size of the writer's file now (a new store's temporary file, or the
** appended store): the bytes written so far, for progress reports. */
uint64_t cs_writer_file_bytes(const cs_writer *w);
/* Committed plus written positions less the deleted ones, this
** transaction's deletions included. */
uint64_t cs_writer_live_rows(const cs_writer *w);
/* Deletes positions rows[0, n) (any order, duplicates and already deleted
** positions allowed) in this transaction: rows written by it too.  Every
** row must be < cs_writer_rows() (else CS_EINVAL and nothing is deleted);
** CS_ENOMEM also deletes nothing.  *out_deleted (may be NULL): positions
** newly deleted.  Prepare writes a deletion vector per touched record and
** upgrades a version-1 file to version 2 (docs/format.md 14.2, 14.8). */
cs_rc cs_writer_delete(cs_writer *w, const uint64_t *rows, uint64_t n, uint64_t *out_deleted, cs_err *err);
/* Changes values in place (format 2, docs/format.md 14.4): position
** rows[i] takes the values of row i of values (a batch of the store's
** schema holding at least n rows) in every column c with cols[c] != 0
** (cols NULL: every column); the other columns keep their values.  Every
** row must be < the positions committed when the writer opened (not a row
** this transaction wrote) and not deleted, committed or by this
** transaction: else CS_EINVAL and nothing changes; so does a NULL for a
** NOT NULL column, or a batch with other columns (CS_EINVAL) or types
** (CS_ESCHEMA).  CS_ENOMEM changes nothing.  Calls accumulate; a position
** given twice (in one call or in several) takes its last values in each
** column the later call changes.  Only a copy of the changed columns' n
** values is kept until prepare, which writes, per touched record, one
** patch block holding a new chunk for each changed column (the record's
** live values with the new ones in place, zone map, sorted flag and
** checksums recomputed; the live chunk is read back and must pass its
** checksum, else CS_ECORRUPT), and upgrades a version-1 file to version 2
** as cs_writer_delete does.  Calls whose cols are all 0 write nothing. */
cs_rc cs_writer_update(cs_writer *w, const uint64_t *rows, uint64_t n, const cs_batch *values,
                       const uint8_t *cols, cs_err *err);
/* Whether the writer's file is the file a snapshot was read from (same
** device and inode; a view or dataset: its first file).  Positions a caller
** took from the snapshot mean the same rows in the writer only then: a file
** replaced meanwhile (by a rename over the path) may number them otherwise. */
bool cs_writer_same_file(const cs_writer *w, const cs_store *snapshot);
/* Writes the batch's rows as records (split at record_rows); the batch is
** not modified.  Written records stay invisible until commit. */
cs_rc cs_writer_write(cs_writer *w, const cs_batch *batch, cs_err *err);
/* Phase one: writes the footer and fsyncs; nothing is visible yet. */
cs_rc cs_writer_prepare(cs_writer *w, cs_err *err);
/* Phase two: makes the new records visible (commit slot + fsync, or rename
** for a new file) and frees the writer, whatever the result. */
cs_rc cs_writer_commit(cs_writer *w, cs_err *err);
/* Abandons the writer; the file is left byte-identical to before. */
void cs_writer_abort(cs_writer *w);

/* ------------------------------------------------------------ compaction */

/* colstore_compact (cs_compact.c, docs/format.md 14.9): rewrites a store
** file into a new one holding only live chunks, in as few records as fit,
** and renames it over the path; the replaced chunks of updates and the
** superseded deletion vectors are gone.  Without renumber every position
** keeps its rowid (deleted ones stay gaps, in deletion vectors of the new
** file); with it the deleted rows are dropped and the rest renumbered
** 0..rows-1.  It holds the store's writer lock throughout (waiting
** lock_timeout_ms for it, then CS_EBUSY), so no commit is lost; readers
** keep the snapshot they have (the old file stays mapped) and see the new
** file when they next check for changes.  Every chunk copied is checked
** against its checksum first (CS_ECORRUPT, nothing changed).  A crash
** leaves the old file or the new one, whole (and at worst a temporary file
** beside it, which readers ignore).
**
** How far a compaction's copy is, for on_progress: old records, positions
** and chunk bytes (as stored) handled, of those to handle. */
typedef struct cs_compact_progress {
  uint64_t records, records_total;
  uint64_t positions, positions_total;
  uint64_t bytes, bytes_total;
  bool finished;
} cs_compact_progress;

typedef struct cs_compact_options {
  bool renumber;
  uint64_t record_rows; /* 0: the larger of CS_DEFAULT_RECORD_ROWS and the store's largest record */
  int lock_timeout_ms;
  /* Called at each step ("locked", "written", "synced", "renamed") with
  ** ctx; tests crash a child there.  NULL: none. */
  void (*on_step)(void *ctx, const char *step);
  void *step_ctx;
  /* Called after each old record is copied and once when all are
  ** (finished), before the new file is synced; nonzero stops the
  ** compaction: it fails with CS_EINVAL, "colstore: compaction of PATH
  ** interrupted", and the store is left as it was.  NULL: none. */
  int (*on_progress)(void *ctx, const cs_compact_progress *p);
  void *progress_ctx;
} cs_compact_options;

typedef struct cs_compact_counts {
  uint64_t rows;      /* live rows */
  uint64_t positions; /* rowids handed out (rows + deleted) */
  uint64_t records;
  uint64_t bytes;      /* file size */
  uint64_t free_bytes; /* data-region bytes no record used */
} cs_compact_counts;

typedef struct cs_compact_report {
  cs_compact_counts before, after;
  uint64_t generation;     /* the new file's commit generation */
  uint64_t records_copied; /* records that went across whole, byte for byte (the rest were re-laid) */
  uint64_t ns;             /* wall time, lock wait excluded */
} cs_compact_report;

cs_rc cs_compact(const char *path, const cs_compact_options *opt, cs_compact_report *out, cs_err *err);

/* --------------------------------------------------------------- kernels */

/* Kernels fill caller-owned buffers and cannot fail: their arguments are
** validated at the door (xFilter) and they carry only debug asserts.  A
** gather takes a fixed-width column (TEXT and BLOB values are read in place
** with cs_store_find_record and cs_chunk_varlen), writes n elements of the
** column's storage width to out and, when out_valid is not
** NULL, one byte per element (1 = valid, 0 = NULL).  All rows must be
** < cs_store_rows().  Threaded kernels give byte-identical output for any
** thread count.  Gathers read positions, deleted or not: filter first
** (see "deletions" above). */

/* Process-wide kernel settings (colstore_config). */
typedef struct cs_kernel_config {
  int threads;  /* thread cap; 0 = auto (the host's cores) */
  int prefetch; /* prefetch distance in elements; 0 = off; -1 = auto */
} cs_kernel_config;
void cs_kernel_config_get(cs_kernel_config *out);
void cs_kernel_config_set(const cs_kernel_config *cfg);
/* Below this many elements a kernel runs on one thread. */
#define CS_PARALLEL_MIN_ELEMENTS 262144u
/* Threads a kernel over n elements uses under the current config.  An
** automatic cap (threads 0) is also limited to the processors other
** processes leave idle (docs/tuning.md, "Threads on a busy host"). */
int cs_kernel_threads(uint64_t n);
/* The cap in effect before the load limit: explicit, else calibrated, else
** every processor; 1..1024. */
int cs_kernel_threads_cap(void);
/* Processors not running another process's thread at the latest load
** sample (at most 10 ms old), or -1 when load awareness is off
** (COLSTORE_LOAD_AWARE=0) or /proc/loadavg cannot be read. */
int cs_kernel_idle_cpus(void);

/* Rows [first, first + n): one memcpy per overlapping record, serial. */
void cs_gather_range(const cs_store *s, uint32_t col, uint64_t first, uint64_t n, void *out,
                     uint8_t *out_valid);
/* Rows first, first + step, ... (n of them; step may be negative). */
void cs_gather_strided(const cs_store *s, uint32_t col, uint64_t first, int64_t step, uint64_t n, void *out,
                       uint8_t *out_valid);
/* Rows in any order, walked with a record cursor: O(n + records) when
** rows are non-decreasing; a backward step re-locates by binary search. */
void cs_gather_sorted(const cs_store *s, uint32_t col, const uint64_t *rows, uint64_t n, void *out,
                      uint8_t *out_valid);
/* Rows in any order, each located by a branchless binary search over the
** record table (or a division when records are uniform). */
void cs_gather_rows(const cs_store *s, uint32_t col, const uint64_t *rows, uint64_t n, void *out,
                    uint8_t *out_valid);
/* The record of each row, found once and reused by every column. */
void cs_bins_compute(const cs_store *s, const uint64_t *rows, uint64_t n, uint32_t *out_bins);
void cs_gather_rows_binned(const cs_store *s, uint32_t col, const uint64_t *rows, const uint32_t *bins,
                           uint64_t n, void *out, uint8_t *out_valid);
/* Rows first + i where mask[i] != 0, i < n; returns the number written.
** out (and out_valid) need room for exactly cs_mask_count(mask, n)
** elements; nothing is written past them. */
uint64_t cs_gather_mask(const cs_store *s, uint32_t col, const uint8_t *mask, uint64_t first, uint64_t n,
                        void *out, uint8_t *out_valid);
/* Mask helpers: count of nonzero bytes; positions base + i of nonzero bytes
** (out_rows needs room for cs_mask_count(mask, n) of them). */
uint64_t cs_mask_count(const uint8_t *mask, uint64_t n);
uint64_t cs_mask_to_rows(const uint8_t *mask, uint64_t n, uint64_t base, uint64_t *out_rows);

/* A column handed out whole (colstore_array, docs/sql.md "Arrays"), one
** part at a time, for the rows given (rows[0, n), any order, duplicates
** allowed, each a live position < cs_store_rows(): drop deleted ones
** first) or, with rows NULL, for every live row in position order.  VALUES:
** the values at the column's width, 0 where NULL; for TEXT/BLOB the bytes
** of the values back to back (none for a NULL).  VALID: one byte a row, 1
** = present, 0 = NULL.  OFFSETS (TEXT/BLOB only): n + 1 int64 offsets into
** VALUES, from 0.  Fixed-width values are copied a record's run at a time,
** or through the gathers for a list. */
typedef enum cs_array_part { CS_ARRAY_VALUES, CS_ARRAY_VALID, CS_ARRAY_OFFSETS } cs_array_part;
/* The bytes cs_array_read writes.  CS_EINVAL for OFFSETS of a fixed-width
** column; CS_ECORRUPT when TEXT/BLOB offsets in the store are damaged. */
cs_rc cs_array_size(const cs_store *s, uint32_t col, cs_array_part part, const uint64_t *rows, uint64_t n,
                    uint64_t *out_bytes, cs_err *err);
/* Writes the part into out, which has cap bytes (cs_array_size's answer):
** CS_ECORRUPT rather than writing past cap, CS_ENOMEM. */
cs_rc cs_array_read(const cs_store *s, uint32_t col, cs_array_part part, const uint64_t *rows, uint64_t n,
                    void *out, uint64_t cap, cs_err *err);

/* ------------------------------------------------------------ predicates */

/* A constant in SQLite's storage classes; they order NULL < numbers (INT and
** FLOAT compared exactly as numbers) < TEXT < BLOB, TEXT and BLOB by memcmp
** (BINARY collation).  The caller applies column affinity first. */
typedef enum cs_value_kind {
  CS_VAL_NULL = 0,
  CS_VAL_INT,
  CS_VAL_FLOAT,
  CS_VAL_TEXT,
  CS_VAL_BLOB
} cs_value_kind;
typedef struct cs_value {
  cs_value_kind kind;
  int64_t i;        /* CS_VAL_INT */
  double f;         /* CS_VAL_FLOAT */
  const uint8_t *p; /* CS_VAL_TEXT/BLOB bytes; not owned */
  uint64_t n;       /* their length */
} cs_value;

typedef enum cs_cmp {
  CS_CMP_EQ,
  CS_CMP_NE,
  CS_CMP_LT,
  CS_CMP_LE,
  CS_CMP_GT,
  CS_CMP_GE,
  CS_CMP_ISNULL,
  CS_CMP_NOTNULL,
  CS_CMP_IN,      /* set/n_set; NULL members never match */
  CS_CMP_BETWEEN, /* lo <= x AND x <= hi */
  CS_CMP_ISNOT    /* x IS NOT a: NULL (and NaN) rows and values not equal to a; a NULL: IS NOT NULL */
} cs_cmp;

typedef struct cs_pred {
  uint32_t col;
  cs_cmp op;
  cs_value a, b;       /* operand; BETWEEN: a = lo, b = hi */
  const cs_value *set; /* CS_CMP_IN members; not owned */
  uint64_t n_set;
  /* CS_CMP_IN on a TEXT/BLOB column: a value matches a member of its class
  ** when the two are equal after folding ASCII 'A'-'Z' to 'a'-'z' and
  ** dropping trailing spaces (0x20): a superset of the values equal to it
  ** under SQLite's BINARY, NOCASE and RTRIM, for a caller that checks each
  ** selected row again.  Ignored for other columns and ops. */
  bool fold;
} cs_pred;

typedef struct cs_pred_stats {
  uint64_t records_scanned;
  uint64_t records_skipped; /* by zone maps (min/max, null count) */
  uint64_t rows_selected;
} cs_pred_stats;

/* mask[i] = 1 if row first + i satisfies every predicate (AND), else 0, for
** i < n.  A NULL value (and a NaN, which SQLite reads as NULL) satisfies only
** ISNULL.  Whole records are decided from zone maps when they can be.
** stats may be NULL; with n_preds == 0 every row is selected. */
void cs_pred_eval(const cs_store *s, const cs_pred *preds, uint32_t n_preds, uint64_t first, uint64_t n,
                  uint8_t *mask, cs_pred_stats *stats);
/* Does the single value x satisfy pr (its operands already converted as for
** cs_pred_eval)?  The same semantics on storage classes, for a caller that
** must know what SQLite would answer for one value: colstore_agg, whose
** filter columns SQLite may read back to check a condition again. */
bool cs_pred_match_value(const cs_pred *pr, const cs_value *x);
/* When column col is sorted (cs_column_stats.sorted), the row range [lo, hi)
** where a range predicate holds, by binary search; false if it cannot be
** answered that way (op not a range, column not sorted). */
bool cs_pred_sorted_range(const cs_store *s, const cs_pred *pred, uint64_t *out_lo, uint64_t *out_hi);

/* -------------------------------------------------------- automatic index */

/* A snapshot's index of one numeric column (cs_index.c explains why): its
** live, non-NULL rows' positions sorted by value, built on request and
** kept on the snapshot until it closes.  It answers a predicate with
** exactly the rows cs_pred_eval selects for it, ascending. */
typedef struct cs_index cs_index;
/* Whether an index can answer pr: EQ, LT, LE, GT, GE, BETWEEN or IN on a
** numeric (integer, BOOL or float) column of a store of at most 2^32 - 1
** positions.  Other ops and TEXT/BLOB columns are refused: scan them. */
bool cs_index_supports(const cs_store *s, const cs_pred *pr);
/* Counts one filter of s by column col that an index could have served and
** returns the count so far (this one included; 0 when out of memory), for
** the caller's rule of when an index pays for its build. */
uint64_t cs_index_note(const cs_store *s, uint32_t col);
/* The index of col on s when built, else NULL; never builds. */
const cs_index *cs_index_find(const cs_store *s, uint32_t col);
/* The index of col on s, built now if it is not: CS_ENOMEM when memory
** fails or the bounds refuse it (its bytes beyond cs_index_limit() across
** the process, or the build's scratch beyond what cs_cache_auto_fits
** allows), CS_EINVAL for a column it cannot index.  A refusal is kept: the
** column is not tried again on this snapshot. */
cs_rc cs_index_build(const cs_store *s, uint32_t col, const cs_index **out, cs_err *err);
/* Bytes an index holds (4 a row it indexes). */
uint64_t cs_index_bytes(const cs_index *ix);
/* The rows it indexes over their distinct values (0 when none): what an
** `=` selects on average, for a planner's estimate. */
double cs_index_rows_per_value(const cs_index *ix);
/* Bytes all open indexes hold, across the process, and the most they may:
** a quarter of cs_cache_limit() unless set (0 restores that). */
uint64_t cs_index_total_bytes(void);
uint64_t cs_index_limit(void);
void cs_index_limit_set(uint64_t bytes);
/* The rows pr (cs_index_supports) selects among positions [lo, hi): at most
** cs_index_count's answer of them, ascending and distinct, into out;
** returns how many. */
uint64_t cs_index_count(const cs_index *ix, const cs_pred *pr, uint64_t lo, uint64_t hi);
/* Hands old's indexes and filter counts to copy, a store of the same
** committed state (cache=auto's memory copy of a mapped snapshot): the
** built permutations are shared, their bytes counted once.  Does nothing
** when copy already has indexes or counts, or the shapes differ. */
void cs_index_adopt(const cs_store *copy, const cs_store *old);
uint64_t cs_index_rows(const cs_index *ix, const cs_pred *pr, uint64_t lo, uint64_t hi, uint64_t *out);
/* The same for pr AND also, also a range op (EQ, LT, LE, GT, GE, BETWEEN)
** on pr's column or NULL: a window's two bounds, `x > ? AND x < ?`, taken
** in one search each.  cs_index_count_and's answer is the size of the runs
** the bounds select, from binary searches alone (a wide range's rows are
** not visited), so a caller can weigh the list against a scan first. */
uint64_t cs_index_count_and(const cs_index *ix, const cs_pred *pr, const cs_pred *also, uint64_t lo,
                            uint64_t hi);
uint64_t cs_index_rows_and(const cs_index *ix, const cs_pred *pr, const cs_pred *also, uint64_t lo,
                           uint64_t hi, uint64_t *out);

/* ------------------------------------------------------------- selection */

/* What a scan cursor does per batch, as one kernel: evaluate the
** predicates (and a caller's mask), count, and gather the selected rows of
** the columns it reads into buffers, in one kernel (cs_select.c explains
** why).  A target is one fixed-width column and its output: out
** has room for every row of the batch, out_valid (one byte per row, 1 =
** not NULL) is NULL when the caller does not want validity. */
typedef struct cs_gather_target {
  uint32_t col;
  void *out;
  uint8_t *out_valid;
} cs_gather_target;

/* Predicates compiled once against a store, for every batch of a scan. */
typedef struct cs_selector cs_selector;
cs_rc cs_selector_new(const cs_store *s, const cs_pred *preds, uint32_t n_preds, cs_selector **out,
                      cs_err *err);
void cs_selector_free(cs_selector *sel);
/* Keeps, in order, the rows[0, n) whose row satisfies every predicate and,
** when user_mask is given, whose user_mask[row] is nonzero (a list's check,
** row by row: the rows an index found); returns how many are left. */
uint64_t cs_selector_keep_rows(const cs_selector *sel, const uint8_t *user_mask, uint64_t *rows, uint64_t n);

typedef struct cs_select_batch {
  /* in */
  uint64_t first, n;        /* rows [first, first + n) */
  const uint8_t *user_mask; /* n bytes ANDed into the predicates (a _mask), or NULL */
  uint8_t *mask;            /* n bytes of scratch; the batch's mask afterwards */
  uint64_t *rows;           /* room for n positions */
  bool want_rows;           /* fill rows even when gathering by mask */
  const cs_gather_target *targets;
  uint32_t n_targets;
  double mask_gate;    /* density (selected / n) from which to gather by mask */
  uint64_t count_from; /* records starting before this row are counted at it */
  int max_threads;     /* at most this many threads (0 = as cs_kernel_threads says) */
  /* out */
  uint64_t n_selected;
  bool by_mask;     /* gathered by the mask, not through positions */
  bool rows_filled; /* rows[0, n_selected) hold the positions */
  int threads;
  uint64_t records_scanned, records_skipped;
} cs_select_batch;

/* One batch: b->mask, b->n_selected, the targets' first n_selected
** elements, and b->rows when b->rows_filled.  The mask holds the batch's
** rows only when n_selected > 0: a batch the zone maps rule out entirely
** leaves it unwritten. */
void cs_select_range(const cs_selector *sel, cs_select_batch *b);

/* The targets at rows[0, n) (any order, duplicates allowed; ascending is
** the fast case), bins: scratch for n record numbers (unused when
** ascending), on at most max_threads threads (0 = as cs_kernel_threads
** says).  Returns the threads used. */
int cs_select_rows(const cs_store *s, const uint64_t *rows, uint64_t n, bool ascending, uint32_t *bins,
                   const cs_gather_target *targets, uint32_t n_targets, int max_threads);

/* One background thread running one job at a time (cs_worker.c): a scan
** selects its next batch there while SQLite consumes the current one.
** cs_worker_submit waits for the job in flight first; it returns false
** when the thread cannot be started (run the job yourself).  The job must
** not touch what the submitter uses until cs_worker_wait returns; the job
** runs exactly once, on the worker or, when the worker has not claimed it
** by then, inside cs_worker_wait on the caller's thread.
** cs_worker_taken_back counts the jobs that ran that way. */
typedef struct cs_worker cs_worker;
cs_rc cs_worker_new(cs_worker **out, cs_err *err);
bool cs_worker_submit(cs_worker *w, void (*fn)(void *), void *arg);
void cs_worker_wait(cs_worker *w);
void cs_worker_free(cs_worker *w);
uint64_t cs_worker_taken_back(cs_worker *w);
/* A worker from the process-wide pool (NULL when none can be made), and
** back into it after waiting for its job. */
cs_worker *cs_worker_acquire(void);
void cs_worker_release(cs_worker *w);

/* ------------------------------------------------------------------ numa */

/* Memory placement and thread binding (docs/tuning.md, "NUMA and
** binding").  Both are process-wide settings (atomics) that the core reads:
** the NUMA policy when a store is opened (the mapping is interleaved over
** all nodes when the effective policy is interleave), the binding at the
** start of every threaded kernel region.  Each has a requested value and an
** effective one, which says what this host and build actually do. */
typedef enum cs_numa_policy {
  CS_NUMA_AUTO = 0,
  CS_NUMA_INTERLEAVE,
  CS_NUMA_LOCAL,
  CS_NUMA_OFF
} cs_numa_policy;
typedef enum cs_binding { CS_BINDING_OFF = 0, CS_BINDING_CLOSE, CS_BINDING_SPREAD } cs_binding;

#define CS_NUMA_MAX_NODES 64
#define CS_NUMA_MAX_CPUS 1024
/* The host as libnuma reports it, restricted to the cpus this process may
** run on.  Without libnuma (or when numa_available() < 0) it is one node
** holding the process's cpus. */
typedef struct cs_numa_topology {
  bool libnuma;                     /* built with libnuma */
  bool available;                   /* numa_available() >= 0 */
  int nodes;                        /* configured nodes, >= 1 */
  int node_cpus[CS_NUMA_MAX_NODES]; /* cpus of node i (may be 0) */
  int cpus;                         /* total, sum of node_cpus */
  int cpu[CS_NUMA_MAX_CPUS];        /* cpu ids, node 0's first, then node 1's, ... */
} cs_numa_topology;

/* This host's topology (read once), or the injected one. */
void cs_numa_topology_get(cs_numa_topology *out);
/* (cs_numa_topology_override, which injects a topology, is a testing hook:
** see the end of this header.) */

/* Pure decisions.  The effective NUMA placement for a request on topology
** t: "interleave", "local", "off", "none (single node)", "none (built
** without libnuma)", "none (NUMA not available)"; *out_interleave is set
** when the mapping is to be interleaved.  A static string. */
const char *cs_numa_decide(const cs_numa_topology *t, cs_numa_policy req, bool *out_interleave);
/* The effective binding: "off", "close", "spread", "off (single cpu)",
** "spread (single node: same as close)". */
const char *cs_binding_decide(const cs_numa_topology *t, cs_binding req);
/* The cpu thread tid of n_threads is pinned to under binding b (close:
** consecutive cpus in node order; spread: round-robin across the nodes that
** have cpus); -1 when b is off or t has no cpus. */
int cs_binding_cpu(const cs_numa_topology *t, cs_binding b, int tid, int n_threads);

/* Process-wide settings (colstore_config 'numa' and 'binding'). */
void cs_numa_set(cs_numa_policy p);
cs_numa_policy cs_numa_get(void);
void cs_binding_set(cs_binding b);
cs_binding cs_binding_get(void);
const char *cs_numa_policy_name(cs_numa_policy p);
const char *cs_binding_name(cs_binding b);
/* The effective values now, on this host: the decision, or why it could not
** be applied (e.g. "none (mbind failed: ...)", "off (sched_setaffinity
** failed: ...)"). */
void cs_numa_effective(char *out, size_t n);
void cs_binding_effective(char *out, size_t n);

/* ----------------------------------------------------------- calibration */

/* Per-host measurements of the kernel knobs (docs/tuning.md).  The core
** holds one process-wide calibration; the kernels consult it only where the
** explicit setting (cs_kernel_config) is "auto", so the precedence is
** explicit setting > calibration > compiled default.  Everything here is
** silent (no printing); cs_calibrate() measures, cs_fingerprint_* names the
** host, cs_calibration_save/load keep results in one cache file. */

/* Access regimes of the gathers' prefetch distance: source column bytes
** within the last-level cache ("resident") or not ("dram"), rows sorted
** (cs_gather_sorted) or not (cs_gather_rows, cs_gather_rows_binned). */
typedef enum cs_regime {
  CS_REGIME_RESIDENT_UNSORTED = 0,
  CS_REGIME_RESIDENT_SORTED = 1,
  CS_REGIME_DRAM_UNSORTED = 2,
  CS_REGIME_DRAM_SORTED = 3,
  CS_REGIME_COUNT = 4
} cs_regime;
/* "resident_unsorted", ...; NULL for an unknown regime. */
const char *cs_regime_name(cs_regime r);
/* The regime of a gather over a column of source_bytes bytes. */
cs_regime cs_regime_of(bool sorted, uint64_t source_bytes);
/* The prefetch distance a gather in regime r uses: the explicit setting
** when it is >= 0, else the calibrated distance, else the compiled default
** (0 unsorted, 128 sorted). */
int cs_kernel_prefetch_for(cs_regime r);

/* Calibrated values; a field that was not measured holds -1. */
typedef struct cs_calibration {
  int threads;                   /* thread cap, >= 1, or -1 */
  int prefetch[CS_REGIME_COUNT]; /* distance in elements, >= 0, or -1 */
  double mask_gate;              /* mask density 0..1 from which the mask-native
                                  ** gather wins (0 = always, 1 = never), or -1 */
} cs_calibration;
/* All fields -1. */
void cs_calibration_init(cs_calibration *cal);
/* Makes cal the process-wide calibration (NULL = none); kernels use it from
** their next call.  cs_kernel_threads() takes the calibrated cap when the
** explicit cap is 0 (auto). */
void cs_calibration_apply(const cs_calibration *cal);
void cs_calibration_current(cs_calibration *out);

/* The hardware fingerprint a cache is keyed by. */
typedef struct cs_fingerprint {
  char cpu_model[128]; /* /proc/cpuinfo "model name" (or "unknown") */
  int cores;           /* online processors */
  int sockets;         /* distinct "physical id" values; 1 if none */
  int numa_nodes;      /* /sys/devices/system/node/node*; 1 if none */
  uint64_t llc_bytes;  /* largest cache of cpu0 (sysfs, else sysconf); 0 unknown */
  uint64_t page_bytes; /* sysconf(_SC_PAGESIZE) */
} cs_fingerprint;
#define CS_FINGERPRINT_TEXT_BYTES 256
void cs_fingerprint_get(cs_fingerprint *out);
/* One line, "cpu=<model>;cores=2;sockets=1;numa_nodes=1;llc_bytes=...;
** page_bytes=4096"; two hosts match when these strings are equal. */
void cs_fingerprint_text(const cs_fingerprint *fp, char out[CS_FINGERPRINT_TEXT_BYTES]);
/* This host's LLC bytes, read once and cached (32 MiB when unknown). */
uint64_t cs_fingerprint_llc_bytes(void);

/* The cache directory: $COLSTORE_CACHE_DIR, else $XDG_CACHE_HOME/colstore,
** else $HOME/.cache/colstore (CS_EINVAL when none is set). */
cs_rc cs_calibration_cache_dir(char *out, size_t n, cs_err *err);
#define CS_CALIBRATION_FILE "calibration.txt"
/* Writes cal under fingerprint to path atomically (a temporary file beside
** it, fsync, rename, fsync of the directory), creating the directory. */
cs_rc cs_calibration_save(const char *path, const char *fingerprint, const cs_calibration *cal, cs_err *err);
/* Reads path: CS_ENOENT if absent, CS_ECORRUPT (the message naming the
** line) if it is not a complete cache file.  The fingerprint is returned,
** not checked: the caller compares it with this host's. */
cs_rc cs_calibration_load(const char *path, char out_fingerprint[CS_FINGERPRINT_TEXT_BYTES],
                          cs_calibration *out, cs_err *err);
/* Removes path; *out_removed says whether there was one (may be NULL). */
cs_rc cs_calibration_clear(const char *path, bool *out_removed, cs_err *err);

/* Measurement.  A sweep times every candidate once per round (interleaved,
** so drifting background load hits every candidate alike), after checking
** that every candidate's output equals the first's byte for byte. */
#define CS_CALIB_MAX_CAND 8
#define CS_CALIB_DEFAULT_ROUNDS 11
#define CS_CALIB_MAX_ROUNDS 1000
/* Two medians closer than this fraction are a tie, won by the candidate
** listed first (fewest threads, no prefetch, positions before mask). */
#define CS_CALIB_TOLERANCE 0.05

typedef struct cs_calibrate_sweep {
  char name[32]; /* family, regime or density */
  uint32_t n_cand;
  double value[CS_CALIB_MAX_CAND];     /* threads, distance; mask: 0 positions, 1 mask-native */
  double median_us[CS_CALIB_MAX_CAND]; /* per call, over all rounds */
  double min_us[CS_CALIB_MAX_CAND], max_us[CS_CALIB_MAX_CAND];
  double half_median_us[2][CS_CALIB_MAX_CAND]; /* first and second half of the rounds */
  uint32_t pick;                               /* index: the first within tolerance of the best */
  uint32_t half_pick[2];
  int halves_agree; /* 1 or 0; -1 with fewer than 2 rounds */
} cs_calibrate_sweep;

/* times[round * n_cand + cand], microseconds: fills out's statistics, pick
** and halves (the first n_rounds / 2 rounds against the rest).  Pure. */
void cs_calibrate_summarize(const double *times, uint32_t n_rounds, uint32_t n_cand, double tol,
                            cs_calibrate_sweep *out);
/* The first candidate whose median is within (1 + tol) of the smallest. */
uint32_t cs_calibrate_pick(const double *medians, uint32_t n_cand, double tol);
/* Median of n values (mean of the middle two when n is even); sorts a copy. */
double cs_calibrate_median(const double *v, uint32_t n);

/* A generic sweep: run(ctx, cand) runs candidate cand once and returns its
** output (*out_bytes bytes, valid until the next call).  Outputs are
** compared before timing: CS_EINVAL names the first candidate that differs. */
typedef const void *(*cs_calibrate_run_fn)(void *ctx, uint32_t cand, size_t *out_bytes);
cs_rc cs_calibrate_sweep_run(cs_calibrate_run_fn run, void *ctx, uint32_t n_cand, uint32_t rounds,
                             double per_call_div, cs_calibrate_sweep *out, cs_err *err);

#define CS_CALIB_THREADS 1u
#define CS_CALIB_PREFETCH 2u
#define CS_CALIB_MASK 4u
#define CS_CALIB_ALL 7u

typedef struct cs_calibrate_options {
  uint32_t rounds;         /* 1..CS_CALIB_MAX_ROUNDS; 0 = default */
  uint64_t dram_rows;      /* FLOAT64 rows of the DRAM store; 0 = max(64 MiB, 2 x LLC) up to 128 MiB */
  uint64_t resident_rows;  /* rows of the cache-resident store; 0 = 1 MiB of them */
  int max_threads;         /* thread candidates 1..max; 0 = the online cpus this process may use
                            ** (at most 8); never more than those */
  const char *scratch_dir; /* where the temporary stores go; NULL = $TMPDIR or /tmp */
  /* Called before each sweep and after each of its rounds (step names the
  ** target and the family, regime or density; done of total rounds, over
  ** all sweeps), and once at the end with done == total, e.g. to show
  ** progress.  Nonzero stops the run: cs_calibrate fails with CS_EINVAL,
  ** "calibration interrupted".  NULL: none. */
  int (*progress)(void *arg, const char *step, int done, int total);
  void *progress_arg;
} cs_calibrate_options;

#define CS_CALIB_MASK_DENSITIES 7
typedef struct cs_calibrate_report {
  unsigned targets; /* CS_CALIB_* measured */
  uint32_t rounds;
  uint64_t dram_bytes, resident_bytes;
  uint32_t n_threads; /* thread sweeps: one per kernel family */
  cs_calibrate_sweep threads[4];
  int threads_pick;                             /* the cap: least total normalized time, ties to fewer */
  int threads_halves_agree;                     /* 0: result.threads is left -1 (the default stays) */
  int cpus;                                     /* online cpus this process may use: the most threads tried */
  cs_calibrate_sweep prefetch[CS_REGIME_COUNT]; /* valid with CS_CALIB_PREFETCH */
  cs_calibrate_sweep mask[CS_CALIB_MASK_DENSITIES]; /* name = density */
  double mask_gate;      /* lowest density from which mask-native wins throughout; 1 = never */
  int mask_halves_agree; /* the gate from each half agrees */
  cs_calibration result; /* the picks; -1 where unmeasured or where the two halves
                                     ** of the rounds picked differently (too noisy to act on) */
  double seconds;        /* wall time of the run */
} cs_calibrate_report;

/* Measures targets (CS_CALIB_* bits) on this host.  Kernel settings are
** overridden for the calling thread only while it runs; the process-wide
** calibration is not changed (cs_calibration_apply the result for that). */
cs_rc cs_calibrate(unsigned targets, const cs_calibrate_options *opt, cs_calibrate_report *out, cs_err *err);

/* -------------------------------------------- ordering (ORDER/GROUP/DISTINCT) */

/* Ordered, grouped and de-duplicated delivery (issue 9; cs_order.c): the
** positions of a selection are reordered (and, for DISTINCT and LIMIT,
** filtered) by key columns so the cursor can gather them in delivery order
** and SQLite needs no temporary B-tree.  The order is exactly SQLite's on
** the values it is handed: NULL first ascending and last descending, a NaN
** in a FLOAT column (delivered as NULL) is NULL, -0.0 equals 0.0, numbers
** by value, TEXT and BLOB by memcmp over the shorter length and then the
** shorter first (BINARY collation).  Keys compare left to right, each ASC
** or DESC; rows whose keys all compare equal are "ties". */
typedef struct cs_order_key {
  uint32_t col; /* column index, < n_cols */
  bool desc;    /* descending (NULLs last) */
} cs_order_key;

typedef enum cs_order_mode {
  CS_ORDER_SORT = 0,    /* ORDER BY: sorted, ties in input order (stable) */
  CS_ORDER_GROUP = 1,   /* GROUP BY: rows with equal keys adjacent, each group's rows in input
                         ** order; the order of the groups is unspecified (sorted or first seen) */
  CS_ORDER_DISTINCT = 2 /* DISTINCT: one row per distinct key tuple, the first in input order,
                         ** the groups sorted by key (so DISTINCT ... ORDER BY the keys holds too) */
} cs_order_mode;

/* No limit. */
#define CS_ORDER_NO_LIMIT UINT64_MAX

/* Reorders rows[0, *n) by keys[0, n_keys) in place and sets *n to the rows
** delivered.  limit counts what the mode delivers: rows for SORT (the first
** limit rows of the sorted order: top-k in one pass when limit is small
** against *n), distinct rows for DISTINCT, whole groups for GROUP (all rows
** of limit groups).  OFFSET is the caller's: ask for offset + limit and skip
** offset.  Every row must be < cs_store_rows(s); any order and duplicates
** are allowed (ascending is the fast case: keys are read with a record
** cursor).  With no keys every row ties (SORT keeps the input, GROUP is one
** group, DISTINCT keeps the first row).  Single-threaded for now.
** Returns CS_OK; CS_EINVAL for a key column out of range or more than
** UINT32_MAX rows; CS_ENOMEM with err set when scratch memory (at most 24
** bytes per row for fixed-width keys; see cs_order.c) cannot be had; rows
** and *n are then unchanged. */
cs_rc cs_order_rows(const cs_store *s, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                    uint64_t *rows, uint64_t *n, uint64_t limit, cs_err *err);
/* cs_order_rows over the rows [first, first + n) in ascending order, into
** rows (room for n; *n_out set to the rows delivered).  A SORT with a small
** limit (top-k), and a DISTINCT over fixed-width keys of a small range, read
** the keys straight from the columns and write only the rows delivered,
** never all n positions; otherwise the range is written into rows and
** ordered as cs_order_rows does.  Deleted positions of the range are never
** delivered: the streaming paths skip them chunk by chunk (a chunk of
** records without deletions pays one pointer test), the others filter the
** written range (cs_store_filter_deleted).  cs_order_rows orders the
** positions it is given: filter them first. */
cs_rc cs_order_range(const cs_store *s, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                     uint64_t first, uint64_t n, uint64_t *rows, uint64_t *n_out, uint64_t limit,
                     cs_err *err);
/* cs_order_range over the rows of [first, first + n) that sel's predicates
** select (ORDER BY ... LIMIT under a WHERE): a SORT with a small limit
** takes the pruned top-k, records visited best zone-map bound first, a
** record skipped when its bound cannot beat the k-th selected row or the
** predicates' zone maps rule it out, and the predicates read only for the
** rows that pass the threshold; *done then set and rows[0, *n_out) the
** rows delivered (rows: room for n).  *done false (CS_OK, rows undefined)
** when it does not apply (another mode, too large a limit, keys that do
** not take it, zone maps that did not hold): the caller makes the
** selection (cs_select_range) and calls cs_order_rows.  Errors as
** cs_order_rows. */
cs_rc cs_order_select(const cs_selector *sel, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                      uint64_t first, uint64_t n, uint64_t *rows, uint64_t *n_out, uint64_t limit, bool *done,
                      cs_err *err);

/* The counting sort's plan instead of its reorder, for delivery by scatter
** (cs_scatter.c): when cs_order_rows would order rows[0, n) (or, rows NULL,
** the rows first .. first + n - 1, fixed-width keys only and none of them
** deleted, else *done false: no positions written for a range) (SORT or GROUP,
** no limit) by the counting sort of one small-range code, *done is set and
** out holds each row's code and each code's first output index, so that
** the row at input index i is delivered at output index starts[codes[i]] +
** (the rows of its code before i): exactly cs_order_rows' order.  rows are
** not changed.  *done is false (out empty, CS_OK) when the key takes
** another path or its range holds fewer than min_codes codes (known from
** the zone maps before any row is read), for DISTINCT, and for fewer than
** two rows or no keys.  Costs
** 4 bytes per row (codes) and 4 per code beyond what cs_order_rows' counting
** sort needs; errors as cs_order_rows.  Free out with cs_order_counts_free. */
typedef struct cs_order_counts {
  uint32_t *codes;  /* n: the code of rows[i], < n_codes; owned */
  uint32_t *starts; /* n_codes + 1: the output index of each code's first row; starts[n_codes] = n; owned */
  uint32_t n_codes;
} cs_order_counts;
cs_rc cs_order_count(const cs_store *s, const cs_order_key *keys, uint32_t n_keys, cs_order_mode mode,
                     const uint64_t *rows, uint64_t first, uint64_t n, uint32_t min_codes,
                     cs_order_counts *out, bool *done, cs_err *err);
void cs_order_counts_free(cs_order_counts *c);
/* Delivery by scatter (cs_scatter.c): the output window [j0, j0 + n_out)
** of the order counts describes over rows[0, n) (rows NULL: the rows first
** .. first + n - 1) (cs_order_count on the same rows): out_rows[j - j0] (when not NULL) and each target's out[j -
** j0] (and out_valid[j - j0], 1 = not NULL, when not NULL) for every output
** index j of the window, as cs_order_rows' order gathered with cs_select_rows
** would give them, byte for byte.  rows ascending is the fast case (every
** column read in position order); any order is correct.  scratch: room for
** counts->n_codes cursors.  On at most max_threads threads (0 = as
** cs_kernel_threads says); returns the threads used. */
int cs_scatter_rows(const cs_store *s, const uint64_t *rows, uint64_t first, uint64_t n,
                    const cs_order_counts *counts, uint64_t j0, uint64_t n_out, uint64_t *out_rows,
                    const cs_gather_target *targets, uint32_t n_targets, uint32_t *scratch, int max_threads);

/* ----------------------------------------------------------- aggregation */

/* Counts, sums, averages, minima and maxima of a store's columns, grouped
** by key columns or not, over the rows a selection picks (issue 10;
** cs_agg.c).  The values are SQLite's aggregates over the rows as colstore
** delivers them: a NaN in a FLOAT column is NULL (not counted, not summed; a
** NULL key), -0.0 equals 0.0 (one group, delivered as 0.0), NULL keys form
** one group, BOOL is an integer 0/1.  Integer sums are exact; float sums
** compensated (Neumaier), in an unspecified order.  Groups come in no
** particular order.  An aggregate is filled by any number of add calls and
** read when they are done; it is not safe to share between threads. */
#define CS_AGG_COUNT 1u /* non-NULL values of the column */
#define CS_AGG_SUM 2u   /* numeric and BOOL columns: sum and avg */
#define CS_AGG_MIN 4u
#define CS_AGG_MAX 8u
#define CS_AGG_MAX_KEYS 16u

typedef struct cs_agg_spec {
  const uint32_t *keys; /* group key columns, any type incl. TEXT/BLOB; n_keys 0 = exactly one group */
  uint32_t n_keys;      /* at most CS_AGG_MAX_KEYS */
  const unsigned *what; /* n_cols entries (one per store column): CS_AGG_* bits wanted; NULL = none */
  int max_threads;      /* 0 = as cs_kernel_threads says */
} cs_agg_spec;

typedef struct cs_agg cs_agg;
/* CS_EINVAL for a key column out of range, more than CS_AGG_MAX_KEYS keys,
** or CS_AGG_SUM asked of a TEXT or BLOB column; CS_ENOMEM.  The aggregate
** keeps a pointer to s (which must outlive it), not to spec. */
cs_rc cs_agg_new(const cs_store *s, const cs_agg_spec *spec, cs_agg **out, cs_err *err);
void cs_agg_free(cs_agg *a);

/* Adds the rows of [first, first + n) that satisfy sel's predicates (sel NULL: every row) and
** user_mask (NULL: every row; else n bytes, nonzero selects).  Deleted
** positions are never added (see "deletions"): a record holding any is
** read, never answered from per-record statistics.  sel must have
** been made for the aggregate's store; first + n <= cs_store_rows (else
** CS_EINVAL).  CS_ENOMEM with err set when group tables cannot grow; the
** aggregate then holds an unspecified part of the call's rows (free it). */
cs_rc cs_agg_add_range(cs_agg *a, const cs_selector *sel, uint64_t first, uint64_t n,
                       const uint8_t *user_mask, cs_err *err);
/* Adds rows[0, n) (any order; a duplicate counts each time it appears) that satisfy sel's predicates (NULL: all).
** Deleted positions in the list are skipped (the caller need not filter).
** Every row < cs_store_rows (else CS_EINVAL, nothing added). */
cs_rc cs_agg_add_rows(cs_agg *a, const cs_selector *sel, const uint64_t *rows, uint64_t n, cs_err *err);

typedef struct cs_agg_stats {
  uint64_t rows_selected;   /* rows aggregated */
  uint64_t records_scanned; /* records whose data was read */
  uint64_t records_skipped; /* ruled out by zone maps, or every row deleted */
  uint64_t
      records_from_stats; /* answered from per-record statistics, data untouched (never one with deletions) */
  uint64_t
      records_coded; /* one TEXT/BLOB key: records read through their dictionary codes (cached on the store) */
  int threads;       /* most threads used by one call */
  const char *kernel; /* static string: "ungrouped", "direct index", "hash" ("none" before any add) */
} cs_agg_stats;
void cs_agg_stats_get(const cs_agg *a, cs_agg_stats *out);

uint64_t cs_agg_groups(const cs_agg *a); /* no keys: always 1, even when no row was added */
/* Key k of group g: NULL, INT, FLOAT or TEXT/BLOB (bytes valid while a and its store live). */
void cs_agg_key(const cs_agg *a, uint64_t g, uint32_t k, cs_value *out);
uint64_t cs_agg_count(const cs_agg *a, uint64_t g); /* rows in the group */

typedef struct cs_agg_result {
  uint64_t count; /* non-NULL values of the column in the group */
  cs_value
      sum; /* integer/BOOL column: CS_VAL_INT (exact); float column: CS_VAL_FLOAT; CS_VAL_NULL when count == 0;
                      ** with sum_overflow: CS_VAL_FLOAT, the exact total rounded to a double */
  bool sum_overflow; /* integer sum outside int64 (SQLite's sum raises "integer overflow") */
  double avg;        /* sum / count as SQLite's avg gives it; valid when count > 0 */
  cs_value min, max; /* CS_VAL_NULL when count == 0; TEXT/BLOB: BINARY (memcmp, shorter first) order */
} cs_agg_result;
/* Only the bits asked for in spec.what[col] are defined. */
void cs_agg_result_get(const cs_agg *a, uint64_t g, uint32_t col, cs_agg_result *out);

/* ----------------------------------------------------------- diagnostics */

/* Process-wide notes the core could not report through a return code, such
** as "flock is not supported on this filesystem; appends are unlocked".
** Each distinct note is recorded once.  Returns "" when there is none. */
const char *cs_diag_notes(void);

/* ------------------------------------------------------------ allocation */

/* A block for a large array (positions, batch buffers): from 2 MiB up it
** starts on a 2 MiB boundary and is advised MADV_HUGEPAGE, so its first
** touch faults once per 2 MiB instead of once per 4 KiB.  Contents are
** undefined; release with cs_mem_big_free (NULL is fine).  NULL when out
** of memory. */
void *cs_mem_big_alloc(uint64_t bytes);
void cs_mem_big_free(void *p);

/* Freed big blocks on huge pages are kept for the next query, their pages
** advised MADV_FREE (the kernel takes them back under memory pressure;
** until then a reuse costs no page fault): at most 16 blocks and `bytes`
** in all (default 1 GiB; 0 keeps none and lets go of every kept block
** now).  cs_mem_keep_state reports the limit, what is kept, and how many
** blocks were handed out again since the process started. */
typedef struct cs_mem_keep {
  uint64_t limit, bytes, blocks, reused;
} cs_mem_keep;
void cs_mem_keep_bytes(uint64_t bytes);
void cs_mem_keep_state(cs_mem_keep *out);

/* ------------------------------------------------------- testing hooks */

/* Declared only where COLSTORE_TESTING is defined: the tests (and the core
** that defines them; CMakeLists.txt) see them, the module's glue and the
** benchmarks do not.  They are compiled into the core either way, inert
** until a test arms them, so a test build runs the very same code. */
#ifdef COLSTORE_TESTING
/* Every core allocation goes through one place (core/base/cs_alloc.c),
** which can be told to fail on purpose so tests can prove each failure is
** handled.
** cs_mem_fail_after(k, sticky): the k-th allocation from now fails (k = 1:
** the next one), and with sticky every later one too; k < 1 (use -1)
** disarms.  Either way the count restarts at 0.  cs_mem_count: allocations
** counted since then.  cs_mem_live: blocks allocated and not yet freed.
** cs_mem_tick: counts one allocation made by another allocator (a test's
** SQLite allocator) on the same countdown and says whether it must fail.
** cs_mem_failed_background: of the failures injected since the arming,
** those on a thread whose work no statement waits on (cache=auto's copy).
** Thread-safe; for tests, never armed in production. */
void cs_mem_fail_after(long k, bool sticky);
long cs_mem_count(void);
long cs_mem_failed_background(void);
long cs_mem_live(void);
bool cs_mem_tick(void);

/* Injects a NUMA topology (decisions and binding use it); NULL restores
** the host's. */
void cs_numa_topology_override(const cs_numa_topology *t);
#endif /* COLSTORE_TESTING */

#ifdef __cplusplus
}
#endif

#endif /* COLSTORE_H */
