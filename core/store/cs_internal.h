/*
** cs_internal.h - what the reader and the writer share, and nobody else.
**
** The writer appends to the state a reader would see, so it loads the store
** with the same code (cs__store_load) and keeps the loaded directory to
** write the next footer from.  Keeping one loader means one set of checks
** decides what "committed" means.
*/
#ifndef CS_INTERNAL_H
#define CS_INTERNAL_H

#include <stdatomic.h>

#include "colstore.h"
#include "cs_format.h"

typedef struct cs__file_checks cs__file_checks;

/* A record's deletions as the readers use them (cs_delete.c). */
typedef struct cs__dels {
  const uint8_t *bits;        /* the vector's bitmap in the mapping (or copy), 1 = deleted; NULL = none */
  uint64_t n_deleted;         /* bits set */
} cs__dels;

struct cs_store {
  /* References: 1 from open; cs_store_reopen adds one to a snapshot it
  ** returns unchanged, and a dataset holds one on each of its parts, which
  ** it may share with the datasets reopened from it.  cs_store_close drops
  ** one and frees the store with the last.  Atomic so that snapshots
  ** sharing a part may be closed from different threads. */
  atomic_uint n_refs;
  char *path;                 /* owned copy of the open path */
  int fd;                     /* read-only descriptor, for pread of slots */
  const uint8_t *map;         /* whole-file mapping; owned; NULL if empty */
  uint64_t map_bytes;         /* file size at open */
  uint64_t file_ino, file_dev; /* the open file's identity (fstat at open), for cs_store_is_current */
  cs_schema schema;           /* cols and names owned by the store */
  cs_column *cols;
  char *names;                /* all column names, NUL-separated */
  uint64_t data_offset;       /* first record */
  uint64_t data_end;          /* end of the last committed record */
  uint64_t generation;        /* committed generation this snapshot shows */
  uint64_t n_rows;
  uint64_t n_records;
  uint64_t *first_rows;       /* n_records + 1 entries; first_rows[n] = n_rows */
  cs_disk_entry *entries;     /* n_records, copied from the footer */
  cs_disk_chunk *disk_chunks; /* n_records * n_cols, copied from the footer */
  cs_chunk *chunks;           /* n_records * n_cols, resolved into map */
  /* Format 2 (docs/format.md 14).  ext is a copy of the layout-2 entry
  ** extensions (all zero from a layout-1 footer), which the writer carries
  ** into its next footer; dels the resolved vectors, NULL when the store
  ** has no deleted row (the test every read path makes first). */
  uint32_t format_version;    /* preamble version: 1 or 2 (a torn upgrade reads as 2) */
  uint32_t footer_layout;     /* 1 or 2: the layout of the footer loaded (a scan: 2) */
  bool preamble_torn;         /* the preamble is a torn upgrade (format.md 14.2) */
  cs_disk_entry_ext *ext;     /* n_records; owned; NULL for a dataset */
  cs__dels *dels;             /* n_records; owned; NULL when n_deleted == 0 */
  uint64_t n_deleted;         /* deleted positions */
  uint64_t free_bytes;        /* from the footer extension (a scan: recounted) */
  bool recovered;             /* directory rebuilt by a forward scan */
  bool slot_damaged;          /* the other commit slot is torn or damaged */
  /* Uniform layout (a uniform record layout turns a row into its record by division), set by cs__uniform_init at open:
  ** when every record but the last has uniform_rows rows and the last no
  ** more, the record of a row is row / uniform_rows, computed as the high
  ** word of row * uniform_magic shifted right by uniform_shift.  0 = irregular. */
  uint64_t uniform_rows;      /* rows per record, or 0 */
  uint64_t uniform_magic;     /* ceil(2^(64 + uniform_shift) / uniform_rows) */
  uint32_t uniform_shift;     /* bits, 0..63 */
  /* A dataset (cs_dataset.c): several files read as one store.  The
  ** directory above (first_rows, chunks) spans every file in order, its
  ** chunk pointers resolved into each file's own mapping; entries and
  ** disk_chunks stay NULL, fd is -1 and map NULL.  Each part is that file's
  ** own store (path, fd, mapping, generation), held by reference: datasets
  ** reopened from this one share the parts whose files did not change
  ** (cs_store_reopen).  n_parts == 0 for a single-file store. */
  cs_store **parts;           /* a reference each (see n_refs) */
  uint32_t n_parts;
  uint64_t *part_first_record; /* n_parts + 1 entries */
  char *source;               /* directory or pattern to re-expand; or NULL */
  /* A view (cs_view.c): one part, the snapshot it shows, with deletions of
  ** its own in dels (dels_block, owned, holds the bitmaps it made) and
  ** chunks of its own where updates are pending (own_chunks). */
  bool view;
  void *dels_block;
  /* A view's pending updates (cs_store_with_changes): the blocks its own
  ** chunks live in, one per (record, changed column), each chunk 64-byte
  ** aligned inside its block; chunks[] points at them.  Owned. */
  void **own_chunks;
  uint64_t n_own_chunks;
  /* Chunks this snapshot knows are checked against their checksums
  ** (cs_verified.c): a byte per chunk (n_records * n_cols) and a count per
  ** column; owned; NULL for a dataset, which asks its parts. */
  _Atomic uint8_t *chunk_checked;
  _Atomic uint64_t *col_checked;
  cs__file_checks *checks;    /* the process's entry for this file; a reference */
  /* Per-record aggregate statistics (sums, exact counts, min/max) that the
  ** format does not store, computed by cs_agg.c the first time an aggregate
  ** needs them and kept for the snapshot's life (it is immutable, so they
  ** never go stale).  Set once by compare-and-swap; owned; freed by
  ** cs_store_close through cs__agg_cache_free.  NULL until first needed. */
  void *_Atomic agg_cache;
  /* cache=memory (cs_cache.c).  With a copy, map points at it (the file
  ** offsets [0, data_end) of it are the file's committed bytes) and the
  ** file's mapping is gone, so every reader, checksums included, reads the
  ** copy.  A dataset holds no copy: its parts do. */
  cs_cache cache_req;         /* what the open asked for; a reopen asks the same */
  uint8_t *copy;              /* cs__mem_big_alloc block of data_end bytes; owned; or NULL */
  uint64_t copy_read_bytes;   /* of the copy, read from the file (the rest from the previous snapshot's) */
  uint64_t copy_ns;           /* the copy's wall time */
  char cache_why[192];        /* asked for memory, reads the mapping: why; else "" */
  /* Set only while cs_store_verify_source loads the file: the checks of
  ** open report there and go on where they would have stopped. */
  struct cs__damage_sink *damage;
};

/* One chunk descriptor resolved into pointers, start being the chunk's
** first byte (in the mapping, a cache=memory copy, or a view's own block). */
static inline void cs__chunk_resolve(const uint8_t *start, const cs_disk_chunk *dc, cs_chunk *ch) {
  ch->validity = dc->validity_offset ? start + (dc->validity_offset - dc->chunk_offset) : NULL;
  ch->offsets = dc->offsets_offset ? (const int64_t *)(const void *)(start + (dc->offsets_offset - dc->chunk_offset)) : NULL;
  ch->data = start + (dc->data_offset - dc->chunk_offset);
  ch->data_bytes = dc->data_bytes;
  ch->null_count = dc->null_count;
  ch->min.bits = dc->min_bits;
  ch->max.bits = dc->max_bits;
  ch->flags = dc->flags & (CS_CHUNK_SORTED | CS_CHUNK_HAS_MINMAX);
}

/* Chunks laid out and updated (cs_chunk.c).  cs__chunk_lay lays out one
** chunk of n rows at offset at (a record offset, a file offset for a patch,
** 0 for a block of its own): the bitmap (given only when the chunk has a
** NULL, its bits past n clear), the offsets (TEXT/BLOB, from 0), then the
** data, each padded to 64 bytes (format.md 6.3).  It appends the pieces to
** iov (from *n_iov; at most CS__CHUNK_MAX_IOV), fills dc's offsets, sizes,
** checksum, zone map and sorted flag (dc zeroed by the caller, null_count
** the caller's), and returns the chunk's end. */
#define CS__CHUNK_MAX_IOV 6
struct iovec;
uint64_t cs__chunk_lay(cs_type type, uint64_t n, const uint8_t *bitmap, const int64_t *offsets, const uint8_t *data,
                       uint64_t data_bytes, uint64_t at, struct iovec *iov, int *n_iov, cs_disk_chunk *dc);
/* An update's values as cs_writer_update takes them: per call the columns
** it changes (sel, increasing) and, for each, rows [0, n) of its values. */
typedef struct cs__upd_values {
  const uint8_t *validity;    /* (n + 7) / 8 bytes, 1 = valid */
  const int64_t *offsets;     /* TEXT/BLOB: n + 1, from 0 */
  const uint8_t *data;        /* n * width bytes, or the TEXT/BLOB bytes */
} cs__upd_values;
typedef struct cs__upd_call {
  uint64_t n;
  uint32_t n_sel;
  const uint32_t *sel;        /* the columns the call changes */
  const cs__upd_values *vals; /* n_sel, in sel's order */
} cs__upd_call;
/* Position row takes the values of row index of call call; sorted with
** cs__upd_item_cmp (by all three), so the last item of a row that changes
** a column wins. */
typedef struct cs__upd_item {
  uint64_t row, call, index;
} cs__upd_item;
/* A position's new value in one column: row local of the record takes row
** index of v. */
typedef struct cs__upd_win {
  uint64_t local, index;
  const cs__upd_values *v;
} cs__upd_win;
int cs__upd_item_cmp(const void *a, const void *b);
/* The winners of column col among it[0, n) (one record's, sorted), the
** record starting at first_row: per position, the last item whose call
** changes col, in position order.  Returns how many. */
uint64_t cs__upd_winners(const cs__upd_call *const *calls, uint64_t first_row, const cs__upd_item *it, uint64_t n, uint32_t col,
                         cs__upd_win *out);
/* A chunk's values with some replaced: owned buffers for cs__chunk_lay. */
typedef struct cs__merged {
  uint8_t *bits;              /* (n + 7) / 8 bytes, bits past n clear; give it to cs__chunk_lay only when null_count */
  int64_t *offsets;           /* TEXT/BLOB: n + 1; else NULL */
  uint8_t *data;
  uint64_t data_bytes;
  uint64_t null_count;
} cs__merged;
/* The n values of old (a live chunk of column, record rec of path, for the
** messages) with win[0, n_win) in place; TEXT/BLOB offsets of old are
** checked first (CS_ECORRUPT).  CS_ENOMEM.  On failure *out holds nothing. */
cs_rc cs__chunk_merge(const cs_column *column, uint64_t n, const cs_chunk *old, const cs__upd_win *win, uint64_t n_win,
                      const char *path, uint64_t rec, cs__merged *out, cs_err *err);
void cs__merged_free(cs__merged *m);

/* Loads the committed state of an open descriptor (takes ownership of fd:
** it is closed on failure and by cs_store_close). */
cs_rc cs__store_load(int fd, const char *path, cs_verify verify, cs_store **out, cs_err *err);
/* cs__store_load with a cache; base (or NULL) is an older snapshot of the
** same path whose copy may stand for the bytes both hold (cs_cache.c). */
cs_rc cs__store_load_cached(int fd, const char *path, cs_verify verify, cs_cache cache, const cs_store *base, cs_store **out,
                            cs_err *err);
/* Opens path as cs_store_open_with does, base as in cs__store_load_cached. */
cs_rc cs__store_open_path(const char *path, cs_verify verify, cs_cache cache, const cs_store *base, cs_store **out, cs_err *err);
/* The clear bits among bits [first, first + n) of an LSB-first bitmap (a
** validity bitmap's NULLs), a 64-bit word at a time between the ends. */
uint64_t cs__bits_zeros(const uint8_t *bits, uint64_t first, uint64_t n);
/* Reads n bytes at off, whole (EINTR retried); CS_EIO, or CS_ECORRUPT when
** the file ends first. */
cs_rc cs__pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, cs_err *err);
/* cache=memory (cs_cache.c): once a loading store's data_end is known, makes
** its copy (or, over the limit, leaves it on the mapping with cache_why set);
** s->map then points at the copy.  CS_ENOMEM or CS_EIO with err set. */
cs_rc cs__cache_copy(cs_store *s, const cs_store *base, cs_err *err);
/* Releases what cs__cache_copy made, or the mapping (cs_store_close). */
void cs__cache_release(cs_store *s);
/* Reads both commit slots; *out_slot is the valid one with the highest
** generation, *out_damaged (if not NULL) whether the other one is written
** but invalid.  CS_ECORRUPT when neither is valid. */
cs_rc cs__slots_read(int fd, const char *path, cs_disk_slot *out_slot, bool *out_damaged, cs_err *err);
/* Serialises a schema block; caller frees *out. */
cs_rc cs__schema_encode(const cs_schema *schema, uint8_t **out, uint64_t *out_bytes, cs_err *err);
/* [off, off + len) lies inside [lo, hi), without overflow. */
static inline bool cs__span_in(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi) {
  return off >= lo && off <= hi && len <= hi - off;
}
/* Checks one chunk descriptor against its column type and the span
** [lo, hi) its parts must lie in: for a record's own chunk (absolute false)
** record offsets [header_bytes, record_bytes); for a patch's (absolute
** true, CS_CHUNK_ABSOLUTE required) the file offsets of the patch block's
** chunk area.  rec names the record in the message. */
cs_rc cs__chunk_check(const cs_disk_chunk *dc, const cs_column *col, uint64_t n_rows, uint64_t lo, uint64_t hi, bool absolute,
                      const char *path, uint64_t rec, cs_err *err);
/* Patch blocks (cs_patch.c, format.md 14.4).  cs__patch_check checks the
** block at off, of record rec (entry e), in [data_offset, limit): header,
** items and every item's chunk against the block.  cs__patch_item: the item
** of column col in a checked block, or NULL.  cs__patched_chunk_check
** checks a footer's CS_CHUNK_ABSOLUTE descriptor of (rec, col): its block
** (checked once per record: checked[0, *n_checked) holds the blocks done,
** room for n_cols) and its identity with the block's item; *out_block_bad
** says whether a failure is the block's (every column it holds fails with
** it) rather than this descriptor's. */
cs_rc cs__patch_check(const cs_store *s, uint64_t off, uint64_t limit, const cs_disk_entry *e, uint64_t rec, cs_err *err);
const cs_disk_patch_item *cs__patch_item(const uint8_t *block, uint32_t col);
cs_rc cs__patched_chunk_check(const cs_store *s, uint64_t rec, uint32_t col, uint64_t limit, uint64_t *checked,
                              uint32_t *n_checked, bool *out_block_bad, cs_err *err);
/* The file offset of the patch block of a CS_CHUNK_ABSOLUTE descriptor
** (UINT64_MAX when patch_back points before the file). */
static inline uint64_t cs__patch_block_of(const cs_disk_chunk *dc) {
  uint64_t back = (uint64_t)dc->patch_back * CS_ALIGN;
  return back <= dc->chunk_offset ? dc->chunk_offset - back : UINT64_MAX;
}
/* Of the patch blocks the replaced descriptors old[0, n) lived in, the
** ones no descriptor of live[0, n_cols) points into any more (their
** headers become free space, format.md 14.5): written to out (room for n),
** each once; returns how many. */
uint32_t cs__patch_orphans(const cs_disk_chunk *old, uint32_t n, const cs_disk_chunk *live, uint32_t n_cols, uint64_t *out);
/* Detects the uniform layout from first_rows and fills s->uniform_*
** (cs_gather.c); called at the end of directory resolution. */
void cs__uniform_init(cs_store *s);
/* Copies from's schema into s (a dataset or a view); CS_ENOMEM. */
cs_rc cs__schema_copy(cs_store *s, const cs_store *from, cs_err *err);
/* Dataset halves of cs_store_close, cs_store_is_current and
** cs_store_verify (cs_dataset.c). */
void cs__dataset_free(cs_store *s);
cs_rc cs__dataset_is_current(const cs_store *s, bool *out_current, cs_err *err);
cs_rc cs__dataset_verify(const cs_store *s, cs_err *err);
cs_rc cs__dataset_reopen(cs_store *s, cs_verify verify, cs_store **out, cs_err *err);
/* True when a file name (no directory part) is one the writer gives the
** temporary file of a store it is creating (cs_writer.c), which a dataset
** must never take as a member. */
bool cs__writer_is_temp_name(const char *name);
/* For cs_compact.c: the records a writer has (committed + written), the
** size of its file now, and the generation a new file's writer commits
** (set before its first record: the compacted file continues the
** numbering of the file it replaces). */
uint64_t cs__writer_records(const cs_writer *w);
uint64_t cs__writer_file_bytes(const cs_writer *w);
void cs__writer_set_generation(cs_writer *w, uint64_t generation);
/* Writes record rec of the single-file store s into w unchanged: its
** chunks, checked by the caller, are in body back to back in column order
** (patched ones are rebased into the record; cs_writer.c). */
cs_rc cs__writer_copy_record(cs_writer *w, const cs_store *s, uint64_t rec, const uint8_t *body, cs_err *err);
/* Automatic compaction after a commit (cs_compact.c; docs/performance.md,
** "Small transactions").  A record of fewer than SMALL_ROWS rows is small;
** a commit that leaves at least MIN_RECORDS small records compacts when
** the bytes a compaction wins back (the small records, their footer
** entries, the superseded blocks) are at least 1/ratio of the file. */
#define CS_AUTO_COMPACT_SMALL_ROWS 1024u
#define CS_AUTO_COMPACT_MIN_RECORDS 8u
typedef struct cs_compact_tail {
  uint64_t n_small;     /* records of fewer than CS_AUTO_COMPACT_SMALL_ROWS rows */
  uint64_t small_bytes; /* their record bytes and footer entries */
  uint64_t free_bytes;  /* superseded deletion vectors and patch blocks */
  uint64_t file_bytes;  /* the file as the commit left it */
} cs_compact_tail;
bool cs__compact_due(const cs_compact_tail *t, uint32_t ratio);
/* Compacts the store at path (keeping positions) while lock, a committed
** writer on it, still holds its flock; lets go of nothing. */
cs_rc cs__compact_held(cs_writer *lock, const char *path, cs_compact_report *out, cs_err *err);
/* Tests only: the step hook of automatic compactions (cs_compact_options
** on_step, with ctx NULL); NULL, the default, calls nothing. */
extern void (*cs__compact_auto_step)(void *ctx, const char *step);
/* Checked chunks (cs_verified.c): the per-snapshot bits, allocated once
** the directory is resolved and freed by cs_store_close; every chunk
** marked checked (after a full verify); one chunk hashed and its offsets
** checked, with the error a read gives (advise: with what to do, for a
** message that stands alone) or one of colstore_verify's list (not). */
cs_rc cs__verified_init(cs_store *s);
void cs__verified_free(cs_store *s);
void cs__verified_mark_all(const cs_store *s);
cs_rc cs__chunk_verify(const cs_store *s, uint64_t rec, uint32_t col, bool advise, cs_err *err);
/* The same checks on a copy of the chunk's bytes at span (compaction reads
** chunks with pread rather than through the mapping). */
cs_rc cs__chunk_bytes_verify(const cs_store *s, uint64_t rec, uint32_t col, const uint8_t *span, cs_err *err);
/* A verify that reports every damaged part (cs_store_verify_source).  A
** check that finds damage with a sink to report to notes the part and goes
** on; without one (every other caller) the damage is the error. */
typedef struct cs__damage_sink {
  cs_damage_fn fn;
  void *ctx;
  uint64_t n;                 /* parts reported */
  uint8_t *skip;              /* n_records * n_cols of the file being checked: 1 = its
                              ** descriptor or patch block failed, so its bytes are not
                              ** hashed; owned by the sink's user; or NULL */
} cs__damage_sink;
/* Reports the damage e describes (its message, less "colstore: ") as one
** part of s's file; s's directory is resolved up to record rec. */
void cs__damage_note(cs__damage_sink *sink, const cs_store *s, cs_damage_kind kind, uint64_t rec, uint32_t col, const cs_err *e);
/* The same for a file that did not load (rec and col: none). */
void cs__damage_note_file(cs__damage_sink *sink, const char *path, const cs_err *e);
/* Frees a store's per-record aggregate statistics (cs_agg.c); NULL is fine. */
void cs__agg_cache_free(void *cache);
/* Deletion vectors (cs_delete.c).  Checks the vector of record rec named by
** e/x in [data_offset, limit) against its record and entry; CS_ECORRUPT with
** err set.  cs__dels_resolve checks and resolves every record's vector
** (directory resolution, after the cache copy) and fills s->dels. */
cs_rc cs__delvec_check(const cs_store *s, uint64_t rec, const cs_disk_entry *e, const cs_disk_entry_ext *x, uint64_t limit,
                       cs_err *err);
cs_rc cs__dels_resolve(cs_store *s, uint64_t limit, cs_err *err);
/* Whether the preamble at p passes its checksum, or is a torn upgrade
** (format.md 14.2, *out_torn set, read as version 2); *out_version is the
** version to check (any value: a future one is refused by the caller). */
bool cs__preamble_version(const cs_disk_preamble *p, uint32_t *out_version, bool *out_torn);
/* A clean preamble: p's bytes [0, 56) with version v and its checksum. */
void cs__preamble_with_version(const cs_disk_preamble *p, uint32_t v, cs_disk_preamble *out);
/* The record of row: the last index of first_rows[0, n) whose value is
** <= row (cs_store_find_record; the writer's delete search). */
uint64_t cs__first_rows_find(const uint64_t *first_rows, uint64_t n, uint64_t row);
/* Records a process-wide diagnostic note once. */
void cs__diag_note(const char *note);
/* NUMA (cs_numa.c): interleaves a fresh mapping when the effective policy
** is interleave (cs__store_load); pins the calling thread when binding is
** on, restores it when binding is back off (each member of a kernel's team
** calls it as it starts its chunks, cs_team.c). */
void cs__numa_apply(void *map, uint64_t bytes);
void cs__bind_thread(int tid, int n_threads);
/* The thread policy of cs_kernel_threads() as a pure function
** (cs_kernel_config.c): threads for n elements under cap, limited to
** max(1, ncpu - others) when others >= 0 (the runnable threads of other
** processes on ncpu online processors; -1 = no load limit). */
int cs__threads_policy(uint64_t n, int cap, int ncpu, int others);
/* The runnable count R of /proc/loadavg's "R/T" field, or -1. */
int cs__loadavg_runnable(const char *text);

/* cs_worker.c marks its thread busy around each job, so the load-aware
** thread count does not take colstore's own background work for another
** process's (cs_kernel_config.c). */
void cs__own_thread_busy(bool busy);

/* The one allocation point of core (cs_alloc.c): the C library's
** functions behind the fault injector of cs_mem_fail_after.  They behave as
** their libc namesakes (cs__mem_realloc leaves p intact when it fails, and
** is never asked for 0 bytes); memory from them may be released with
** free(), which only leaves cs_mem_live high. */
void *cs__mem_malloc(size_t n);
/* cs_mem_big_alloc with the huge-page advice optional (huge = false: plain
** 4 KiB pages, for measuring what the advice buys); cs_mem_big_free. */
void *cs__mem_big_alloc(uint64_t bytes, bool huge);
void *cs__mem_calloc(size_t count, size_t size);
void *cs__mem_realloc(void *p, size_t n);
char *cs__mem_strdup(const char *s);
void cs__mem_free(void *p);

#endif /* CS_INTERNAL_H */
