/*
** cs_store_internal.h - a snapshot (struct cs_store) and what the files
** of store/ share: loading and checking a file, its deletions, patches,
** checked chunks and cache=memory copy, datasets of several files.
**
** Every layer above reads a store through this struct (the kernels walk
** its directory inline), so it is the one place that says what a
** snapshot holds.  Two things keep store/ from knowing who sits on it.
** A store's variants (one file, a dataset of files, a view of pending
** changes) each bring a small table of operations (cs__store_ops, as
** SQLite's sqlite3_io_methods do for files), so cs_store.c dispatches
** through s->ops instead of naming the dataset's or the view's functions.
** And data derived from a snapshot by a layer above (the kernels'
** dictionary codes, aggregation's per-record statistics) hangs in an
** opaque slot per deriving layer, each with its own destructor
** (cs__derived), so closing a store frees it without naming it.
*/
#ifndef CS_STORE_INTERNAL_H
#define CS_STORE_INTERNAL_H

#include <stdatomic.h>

#include "cs_format_internal.h"
#include "cs_runtime_internal.h"

typedef struct cs__file_checks cs__file_checks;

/* What a store variant does its own way (file: cs_store.c; dataset:
** cs_dataset.c; view: write/cs_view.c).  release frees what the variant
** owns beyond the common fields (cs_store_close frees those); the others
** are cs_store_is_current, cs_store_reopen and cs_store_verify. */
typedef struct cs__store_ops {
  const char *name; /* "file", "dataset", "view" */
  void (*release)(cs_store *s);
  cs_rc (*is_current)(const cs_store *s, bool *out_current, cs_err *err);
  cs_rc (*reopen)(cs_store *s, cs_verify verify, cs_store **out, cs_err *err);
  cs_rc (*verify)(const cs_store *s, cs_err *err);
} cs__store_ops;

/* Data a layer above derives from a snapshot and keeps for its life (it
** is immutable, so the data never goes stale): embedded as the first
** member of the deriver's own struct, whose free the store calls when it
** is freed.  Made by cs__store_derived_make. */
typedef struct cs__derived cs__derived;
struct cs__derived {
  void (*free)(cs__derived *self);
  uint32_t n_cols; /* the store's columns, for a deriver's per-column array */
};
/* The slots, one per layer that derives: a layer owns its slot, so two
** layers never contend for one (kernels: cs_codes.c; analytics: cs_agg.c;
** ordering's NaN knowledge per record: analytics/cs_order.c; the
** automatic indexes of the kernels: kernels/cs_index.c). */
enum { CS__DERIVED_KERNELS, CS__DERIVED_ANALYTICS, CS__DERIVED_ORDER, CS__DERIVED_INDEX, CS__DERIVED_SLOTS };

/* A record's deletions as the readers use them (cs_delete.c). */
typedef struct cs__dels {
  const uint8_t *bits; /* the vector's bitmap in the mapping (or copy), 1 = deleted; NULL = none */
  uint64_t n_deleted;  /* bits set */
} cs__dels;
/* The next run of live rows at or after *at of a record of n_rows rows
** whose deletion bitmap is bits (as cs_store_record_deletions gives it: 1 =
** deleted, zero past the rows to whole 64-byte lines; NULL: none deleted):
** true with the run [*out_from, *at), *at moved to its end; false when no
** live row is left.  The one walk over a record's live rows, for the
** readers that copy them a run at a time (compaction, colstore_export):
**   for (uint64_t at = 0, from; cs__dels_live_run(bits, n, &at, &from);)
**     copy rows [from, at); */
bool cs__dels_live_run(const uint8_t *bits, uint64_t n_rows, uint64_t *at, uint64_t *out_from);

struct cs_store {
  const cs__store_ops *ops; /* the variant's operations; never NULL */
  /* References: 1 from open; cs_store_reopen adds one to a snapshot it
  ** returns unchanged, and a dataset holds one on each of its parts, which
  ** it may share with the datasets reopened from it.  cs_store_close drops
  ** one and frees the store with the last.  Atomic so that snapshots
  ** sharing a part may be closed from different threads. */
  atomic_uint n_refs;
  char *path;                  /* owned copy of the open path */
  int fd;                      /* read-only descriptor, for pread of slots */
  const uint8_t *map;          /* whole-file mapping; owned; NULL if empty */
  uint64_t map_bytes;          /* file size at open */
  uint64_t file_ino, file_dev; /* the open file's identity (fstat at open), for cs_store_is_current */
  cs_schema schema;            /* cols and names owned by the store */
  cs_column *cols;
  char *names;          /* all column names, NUL-separated */
  uint64_t data_offset; /* first record */
  uint64_t data_end;    /* end of the last committed record */
  uint64_t generation;  /* committed generation this snapshot shows */
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
  uint32_t format_version; /* preamble version: 1 or 2 (a torn upgrade reads as 2) */
  uint32_t footer_layout;  /* 1 or 2: the layout of the footer loaded (a scan: 2) */
  bool preamble_torn;      /* the preamble is a torn upgrade (format.md 14.2) */
  cs_disk_entry_ext *ext;  /* n_records; owned; NULL for a dataset */
  cs__dels *dels;          /* n_records; owned; NULL when n_deleted == 0 */
  uint64_t n_deleted;      /* deleted positions */
  uint64_t free_bytes;     /* from the footer extension (a scan: recounted) */
  bool recovered;          /* directory rebuilt by a forward scan */
  bool slot_damaged;       /* the other commit slot is torn or damaged */
  /* Uniform layout (a uniform record layout turns a row into its record by division), set by cs__store_uniform_init at open:
  ** when every record but the last has uniform_rows rows and the last no
  ** more, the record of a row is row / uniform_rows, computed as the high
  ** word of row * uniform_magic shifted right by uniform_shift.  0 = irregular. */
  uint64_t uniform_rows;  /* rows per record, or 0 */
  uint64_t uniform_magic; /* ceil(2^(64 + uniform_shift) / uniform_rows) */
  uint32_t uniform_shift; /* bits, 0..63 */
  /* A dataset (cs_dataset.c): several files read as one store.  The
  ** directory above (first_rows, chunks) spans every file in order, its
  ** chunk pointers resolved into each file's own mapping; entries and
  ** disk_chunks stay NULL, fd is -1 and map NULL.  Each part is that file's
  ** own store (path, fd, mapping, generation), held by reference: datasets
  ** reopened from this one share the parts whose files did not change
  ** (cs_store_reopen).  n_parts == 0 for a single-file store. */
  cs_store **parts; /* a reference each (see n_refs) */
  uint32_t n_parts;
  uint64_t *part_first_record; /* n_parts + 1 entries */
  char *source;                /* directory or pattern to re-expand; or NULL */
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
  cs__file_checks *checks; /* the process's entry for this file; a reference */
  /* Data derived from the snapshot by the layers above (a slot each:
  ** the kernels' dictionary codes, kernels/cs_codes.c; aggregation's
  ** per-record statistics, analytics/cs_agg.c), made the first time it is
  ** needed and kept for the snapshot's life.  Each set once by
  ** compare-and-swap (cs__store_derived_install); owned; freed by
  ** cs_store_close through its own free.  NULL until first needed. */
  cs__derived *_Atomic derived[CS__DERIVED_SLOTS];
  /* cache=memory (cs_cache.c).  With a copy, map points at it (the file
  ** offsets [0, data_end) of it are the file's committed bytes) and the
  ** file's mapping is gone, so every reader, checksums included, reads the
  ** copy.  A dataset holds no copy: its parts do. */
  cs_cache cache_req;       /* what the open asked for; a reopen asks the same */
  uint8_t *copy;            /* cs__mem_big_alloc block of data_end bytes; owned; or NULL */
  uint64_t copy_read_bytes; /* of the copy, read from the file (the rest from the previous snapshot's) */
  uint64_t copy_ns;         /* the copy's wall time */
  char cache_why[192];      /* asked for memory, reads the mapping: why; else "" */
  /* Set only while cs_store_verify_source loads the file: the checks of
  ** open report there and go on where they would have stopped. */
  struct cs__damage_sink *damage;
};

/* Loads the committed state of an open descriptor (takes ownership of fd:
** it is closed on failure and by cs_store_close). */
cs_rc cs__store_load(int fd, const char *path, cs_verify verify, cs_store **out, cs_err *err);
/* cs__store_load with a cache; base (or NULL) is an older snapshot of the
** same path whose copy may stand for the bytes both hold (cs_cache.c). */
cs_rc cs__store_load_cached(int fd, const char *path, cs_verify verify, cs_cache cache, const cs_store *base,
                            cs_store **out, cs_err *err);
/* Opens path as cs_store_open_with does, base as in cs__store_load_cached. */
cs_rc cs__store_open_path(const char *path, cs_verify verify, cs_cache cache, const cs_store *base,
                          cs_store **out, cs_err *err);
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
/* Patch blocks (cs_patch.c, format.md 14.4).  cs__patch_check checks the
** block at off, of record rec (entry e), in [data_offset, limit): header,
** items and every item's chunk against the block.  cs__patch_item: the item
** of column col in a checked block, or NULL.  cs__patched_chunk_check
** checks a footer's CS_CHUNK_ABSOLUTE descriptor of (rec, col): its block
** (checked once per record: checked[0, *n_checked) holds the blocks done,
** room for n_cols) and its identity with the block's item; *out_block_bad
** says whether a failure is the block's (every column it holds fails with
** it) rather than this descriptor's. */
cs_rc cs__patch_check(const cs_store *s, uint64_t off, uint64_t limit, const cs_disk_entry *e, uint64_t rec,
                      cs_err *err);
const cs_disk_patch_item *cs__patch_item(const uint8_t *block, uint32_t col);
cs_rc cs__patched_chunk_check(const cs_store *s, uint64_t rec, uint32_t col, uint64_t limit,
                              uint64_t *checked, uint32_t *n_checked, bool *out_block_bad, cs_err *err);
/* Of the patch blocks the replaced descriptors old[0, n) lived in, the
** ones no descriptor of live[0, n_cols) points into any more (their
** headers become free space, format.md 14.5): written to out (room for n),
** each once; returns how many. */
uint32_t cs__patch_orphans(const cs_disk_chunk *old, uint32_t n, const cs_disk_chunk *live, uint32_t n_cols,
                           uint64_t *out);
/* Detects the uniform layout from first_rows and fills s->uniform_*
** (cs_store.c); called at the end of directory resolution by every variant. */
void cs__store_uniform_init(cs_store *s);
/* The variants' operations.  A single file's (cs_store.c) are set by the
** loader; a dataset's (cs_dataset.c) by its open.  A view (write/cs_view.c)
** holds its snapshot as its one part and, as a dataset of that part, is
** current, reopened and verified through the dataset's functions. */
extern const cs__store_ops cs__dataset_ops;
void cs__dataset_release(cs_store *s);
/* One file of cs_store_verify_source: loads path verify=full with the sink
** (every damaged part reported) and closes it (cs_store.c). */
cs_rc cs__store_verify_file(const char *path, struct cs__damage_sink *sink, cs_err *err);
/* Derived-data slot `slot` (CS__DERIVED_*): what is installed, or NULL;
** installs d when the slot is empty and returns d, else returns what
** another thread installed first (the caller then frees d). */
static inline cs__derived *cs__store_derived(const cs_store *s, int slot) {
  return atomic_load(&((cs_store *)s)->derived[slot]);
}
static inline cs__derived *cs__store_derived_install(const cs_store *s, int slot, cs__derived *d) {
  cs__derived *expected = NULL;
  /* Logically part of the immutable snapshot (a lazily filled field),
  ** hence the cast: only the atomic pointer changes. */
  if (atomic_compare_exchange_strong(&((cs_store *)s)->derived[slot], &expected, d)) return d;
  return expected;
}
/* Slot `slot`'s derived data, made the first time: size bytes, zeroed, with
** free_fn and the store's column count set before it is installed (a
** thread that finds it sees it whole); a thread that loses the race to
** install frees its own and takes the winner's.  NULL when out of memory. */
static inline cs__derived *cs__store_derived_make(const cs_store *s, int slot, size_t size,
                                                  void (*free_fn)(cs__derived *)) {
  cs__derived *d = cs__store_derived(s, slot);
  if (d) return d;
  cs__derived *fresh = cs__mem_calloc(1, size);
  if (!fresh) return NULL;
  fresh->free = free_fn;
  fresh->n_cols = s->schema.n_cols;
  d = cs__store_derived_install(s, slot, fresh);
  if (d != fresh) cs__mem_free(fresh);
  return d;
}
/* Copies from's schema into s (a dataset or a view); CS_ENOMEM. */
cs_rc cs__schema_copy(cs_store *s, const cs_store *from, cs_err *err);
/* Dataset halves of cs_store_is_current, cs_store_reopen and
** cs_store_verify (cs_dataset.c), in cs__dataset_ops. */
cs_rc cs__dataset_is_current(const cs_store *s, bool *out_current, cs_err *err);
cs_rc cs__dataset_verify(const cs_store *s, cs_err *err);
cs_rc cs__dataset_reopen(cs_store *s, cs_verify verify, cs_store **out, cs_err *err);
/* Checked chunks (cs_verified.c): the per-snapshot bits, allocated once
** the directory is resolved and freed by cs_store_close; every chunk
** marked checked (after a full verify); one chunk hashed and its offsets
** checked, with the error a read gives (advise: with what to do, for a
** message that stands alone) or one of colstore_verify's list (not). */
cs_rc cs__verified_init(cs_store *s);
void cs__verified_free(cs_store *s);
void cs__verified_mark_all(const cs_store *s);
cs_rc cs__verified_check_chunk(const cs_store *s, uint64_t rec, uint32_t col, bool advise, cs_err *err);
/* The same checks on a copy of the chunk's bytes at span (cs_record_read.c
** reads chunks with pread rather than through the mapping). */
cs_rc cs__verified_check_bytes(const cs_store *s, uint64_t rec, uint32_t col, const uint8_t *span,
                               cs_err *err);
/* Whether chunk (rec, col) of a single-file store needs no check (this
** snapshot or another of the file checked it; then it is marked here
** too), and remembering that it was checked (cs_record_read.c). */
bool cs__verified_known(const cs_store *s, uint64_t rec, uint32_t col);
void cs__verified_remember(const cs_store *s, uint64_t rec, uint32_t col);
/* A record's chunks read with pread into one reused buffer, each checked
** before the caller sees it (cs_record_read.c): compaction and
** colstore_export, which read every byte of a store once.  Zeroed to
** start; cs__record_reader_free frees it.  cs__record_read reads record
** rec of s (a file or a dataset): chunks[0, n_cols) then point into buf
** until the next read; CS_ENOMEM, CS_EIO, or CS_ECORRUPT with a read's
** error.  check: every chunk hashed and nothing remembered (compaction,
** which seals what it reads under fresh checksums), or only the chunks
** this process has not checked, remembered as checked (the export). */
typedef enum cs__read_check { CS__READ_CHECK_EVERY, CS__READ_CHECK_ONCE } cs__read_check;
typedef struct cs__record_reader {
  uint8_t *buf; /* the record's chunks, back to back in column order */
  uint64_t cap;
  cs_chunk *chunks; /* n_cols, into buf */
  uint32_t n_cols;
} cs__record_reader;
cs_rc cs__record_read(cs__record_reader *rd, const cs_store *s, uint64_t rec, cs__read_check check,
                      cs_err *err);
void cs__record_reader_free(cs__record_reader *rd);
/* A verify that reports every damaged part (cs_store_verify_source).  A
** check that finds damage with a sink to report to notes the part and goes
** on; without one (every other caller) the damage is the error. */
typedef struct cs__damage_sink {
  cs_damage_fn fn;
  void *ctx;
  uint64_t n;    /* parts reported */
  uint8_t *skip; /* n_records * n_cols of the file being checked: 1 = its
                              ** descriptor or patch block failed, so its bytes are not
                              ** hashed; owned by the sink's user; or NULL */
} cs__damage_sink;
/* Reports the damage e describes (its message, less "colstore: ") as one
** part of s's file; s's directory is resolved up to record rec. */
void cs__damage_note(cs__damage_sink *sink, const cs_store *s, cs_damage_kind kind, uint64_t rec,
                     uint32_t col, const cs_err *e);
/* The same for a file that did not load (rec and col: none). */
void cs__damage_note_file(cs__damage_sink *sink, const char *path, const cs_err *e);
/* Deletion vectors (cs_delete.c).  Checks the vector of record rec named by
** e/x in [data_offset, limit) against its record and entry; CS_ECORRUPT with
** err set.  cs__dels_resolve checks and resolves every record's vector
** (directory resolution, after the cache copy) and fills s->dels. */
cs_rc cs__delvec_check(const cs_store *s, uint64_t rec, const cs_disk_entry *e, const cs_disk_entry_ext *x,
                       uint64_t limit, cs_err *err);
cs_rc cs__dels_resolve(cs_store *s, uint64_t limit, cs_err *err);

#endif /* CS_STORE_INTERNAL_H */
