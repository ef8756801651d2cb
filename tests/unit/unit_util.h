/*
** unit_util.h - what the Check suites share: temporary directories, file
** surgery, seeded randomness, a reference table model, an independent
** reading of the on-disk layout, and the random stores and naive gather
** reference the kernel suites (gather, mask) compare against.
**
** Every suite compares the core against something simpler than itself.  The
** reference model (ut_table) is a plain row-major array of cells that knows
** nothing of records, bitmaps or offsets; a store is correct when reading
** it back cell by cell gives the same cells, bit for bit.  The layout reader
** (ut_layout) parses cs_format.h's structures with its own code rather than
** the reader's, so a test that damages a file, or checks where a chunk sits,
** does not trust the code it is testing to tell it where to look.
**
** Helpers fail through Check's assertions, so a test reads as a sequence of
** steps; a helper that is handed a context string puts it (usually the
** random seed) into every failure message it writes.
*/
#ifndef UNIT_UTIL_H
#define UNIT_UTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colstore.h"
#include "cs_format.h"

/* ------------------------------------------------- directories and files */

/* A fresh directory under $TMPDIR (or /tmp); remove it with ut_tmpdir_remove. */
char *ut_tmpdir(void);
/* Removes dir and everything in it, and frees the string. */
void ut_tmpdir_remove(char *dir);
/* dir + "/" + name; caller frees. */
char *ut_join(const char *dir, const char *name);
bool ut_exists(const char *path);
uint64_t ut_file_bytes(const char *path);
/* Number of entries in dir, "." and ".." excluded. */
int ut_dir_entries(const char *dir);
/* The whole file; caller frees.  *out_bytes may be NULL. */
uint8_t *ut_read_all(const char *path, size_t *out_bytes);
/* Creates or replaces path with exactly these bytes. */
void ut_write_all(const char *path, const void *p, size_t n);
void ut_copy_file(const char *from, const char *to);
void ut_pread(const char *path, uint64_t off, void *p, size_t n);
void ut_pwrite(const char *path, uint64_t off, const void *p, size_t n);
void ut_xor_byte(const char *path, uint64_t off, uint8_t mask);
void ut_truncate(const char *path, uint64_t bytes);
void ut_append_bytes(const char *path, const void *p, size_t n);

/* A fresh temporary directory and two names in it, neither created: path
** ("t.cst") for the store a test writes, copy ("c.cst") for a damaged or
** replacing copy of it.  ut_scratch_free removes the directory and all in
** it and frees the names. */
typedef struct ut_scratch {
  char *dir;
  char *path;
  char *copy;
} ut_scratch;

ut_scratch ut_scratch_new(void);
void ut_scratch_free(ut_scratch *sc);

/* ----------------------------------------------------- seeded randomness */

/* splitmix64: tiny, seedable, and the same sequence on every platform. */
typedef struct ut_rng {
  uint64_t state;
} ut_rng;

ut_rng ut_rng_seed(uint64_t seed);
uint64_t ut_rng_u64(ut_rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t ut_rng_below(ut_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double ut_rng_unit(ut_rng *r);

/* ------------------------------------------------------ reference table */

/* One value as the API sees it.  Integers and BOOL in i; FLOAT64 in f;
** FLOAT32 in f32 (f holds the same value widened, for ordering); TEXT and
** BLOB in bytes/len (owned by the table, or pointing into a mapping when
** read back from a store). */
typedef struct ut_cell {
  bool null;
  int64_t i;
  double f;
  float f32;
  uint8_t *bytes;
  uint64_t len;
} ut_cell;

typedef struct ut_table {
  cs_schema schema; /* cols and names owned by the table */
  cs_column *cols;
  char *names;
  uint64_t n_rows;
  uint64_t cap_rows;
  ut_cell *cells; /* n_rows * n_cols, row-major; owned */
} ut_table;

ut_table *ut_table_new(const cs_schema *schema);
void ut_table_free(ut_table *t);
/* Appends a row of non-NULL zero cells and returns its first cell. */
ut_cell *ut_table_add_row(ut_table *t);
ut_cell *ut_table_cell(const ut_table *t, uint64_t row, uint32_t col);

/* Setters that keep a cell exactly as the writer will store it. */
void ut_cell_set_null(ut_cell *c);
void ut_cell_set_int(ut_cell *c, int64_t v);
/* FLOAT32 cells get (float)v, FLOAT64 cells v. */
void ut_cell_set_float(ut_cell *c, cs_type type, double v);
/* Copies n bytes (TEXT/BLOB). */
void ut_cell_set_bytes(ut_cell *c, const void *p, uint64_t n);
/* A random value of type, NULL with probability null_permille/1000 when
** nullable; about one value in six is an edge of the type (min, max, -0.0,
** infinities, subnormals, NaN, empty string, multi-byte UTF-8, zero bytes). */
void ut_cell_random(ut_rng *r, cs_type type, bool nullable, unsigned null_permille, ut_cell *c);
/* Bit-exact comparison: floats by their stored bits. */
bool ut_cell_equal(cs_type type, const ut_cell *a, const ut_cell *b);
/* A short printable rendering for failure messages. */
void ut_cell_describe(cs_type type, const ut_cell *c, char *buf, size_t n);

/* Rows [first, first + n) of t as a batch; caller frees. */
cs_batch *ut_table_batch(const ut_table *t, uint64_t first, uint64_t n);
/* Creates path holding rows [0, n) of t in one commit, written through
** cs_writer_write calls of per_write rows each (0 = a single call). */
void ut_table_create_store(const ut_table *t, const char *path, uint64_t n, uint64_t record_rows,
                           uint64_t per_write);
/* Appends rows [first, first + n) of t to path in one commit. */
void ut_table_append_store(const ut_table *t, const char *path, uint64_t first, uint64_t n);

/* Updates (format 2): ut_table_update changes t as cs_writer_update
** changes a store: position rows[i] takes row i of vals in every column
** cols names (NULL: all), later calls and duplicates winning.
** ut_update_call is cs_writer_update with rows [0, n) of vals as the batch;
** ut_update_commit runs it as one committed transaction and, when t is not
** NULL, updates t the same way. */
void ut_table_update(ut_table *t, const uint64_t *rows, uint64_t n, const ut_table *vals,
                     const uint8_t *cols);
cs_rc ut_update_call(cs_writer *w, const uint64_t *rows, uint64_t n, const ut_table *vals,
                     const uint8_t *cols, cs_err *err);
void ut_update_commit(const char *path, ut_table *t, const uint64_t *rows, uint64_t n, const ut_table *vals,
                      const uint8_t *cols);

/* n random rows of sc (ut_cell_random, NULLs at null_permille where
** nullable); an INT64 NOT NULL first column counts up instead, so it is
** sorted. */
ut_table *ut_random_table(const cs_schema *sc, uint64_t n, unsigned null_permille, uint64_t seed);
/* Deletes rows[0, n) of path in one committed transaction; returns how many
** were newly deleted. */
uint64_t ut_delete_commit(const char *path, const uint64_t *rows, uint64_t n);
/* The format version in path's preamble, as written. */
uint32_t ut_file_version(const char *path);
bool ut_files_equal(const char *a, const char *b);
/* s has n positions, of which exactly those with del[row] are deleted,
** through every accessor (per row, per record, the counts). */
void ut_assert_deleted(const cs_store *s, const bool *del, uint64_t n, const char *ctx);
/* Every chunk of s describes its values (null count, zone map, sorted flag,
** sizes) exactly as the chunks of a store written fresh, by the same
** writer, with rows [0, n) of t in s's record boundaries and the deletions
** del (NULL: none) do: so a stale zone map or sorted flag shows. */
void ut_assert_chunks_like_fresh(const cs_store *s, const ut_table *t, const bool *del, const char *ctx);
/* Its parts: the fresh store (written to path, opened; close it), and
** every chunk of s described as f's is. */
cs_store *ut_store_fresh_like(const cs_store *s, const ut_table *t, const bool *del, const char *path);
void ut_assert_chunks_like(const cs_store *s, const cs_store *f, const char *ctx);

/* --------------------------------------------------------- reading back */

/* Opens path and fails the test (naming context) unless it opens. */
cs_store *ut_open_ok(const char *path, cs_verify verify, const char *context);
/* Opens and closes path; returns the code and fills err. */
cs_rc ut_open_rc(const char *path, cs_verify verify, cs_err *err);
/* Reads one cell through the public API (find_record, chunk, validity,
** cs_chunk_varlen); bytes point into the store's mapping. */
void ut_store_cell(const cs_store *s, uint64_t row, uint32_t col, ut_cell *out);
/* Asserts the store's schema equals t's. */
void ut_assert_schema_equals(const cs_schema *got, const cs_schema *want, const char *context);
/* Asserts the store holds exactly rows [0, n_rows) of t, cell by cell. */
void ut_assert_store_equals(const cs_store *s, const ut_table *t, uint64_t n_rows, const char *context);
/* FNV-1a over the schema and every cell in a canonical form: a content
** fingerprint that golden files pin (tests/data/valid/EXPECTED). */
uint64_t ut_store_digest(const cs_store *s);

/* --------------------------------------------- the layout, read directly */

typedef struct ut_layout {
  uint64_t file_bytes;
  cs_disk_preamble pre;
  uint32_t n_cols;               /* from the schema block */
  cs_disk_slot slot[2];          /* as read at 512 and 1024 */
  bool slot_valid[2];            /* magic, checksum and generation > 0 */
  int newest;                    /* index of the newest valid slot, or -1 */
  uint64_t slot_offset;          /* file offset of the newest slot */
  cs_disk_footer footer;         /* the footer the newest slot names */
  cs_disk_footer_ext footer_ext; /* layout 2: the extension; else zero */
  uint64_t n_records;
  cs_disk_entry *entries; /* n_records; owned */
  cs_disk_entry_ext *ext; /* n_records (zero from a layout-1 footer); owned */
  cs_disk_chunk *chunks;  /* n_records * n_cols, from the footer; owned */
} ut_layout;

/* Parses path; fails the test unless the newest slot and its footer are
** intact (damage a copy after reading the layout of the original). */
void ut_layout_read(const char *path, ut_layout *out);
void ut_layout_free(ut_layout *l);
/* The footer's entry and header (+ extension) sizes, by its layout. */
uint64_t ut_layout_entry_bytes(const ut_layout *l);
uint64_t ut_layout_head_bytes(const ut_layout *l);
const cs_disk_chunk *ut_layout_chunk(const ut_layout *l, uint64_t rec, uint32_t col);
/* Absolute file offset of a chunk's data (or offsets, validity) buffer,
** in its record or, for a patched chunk (CS_CHUNK_ABSOLUTE), its patch. */
uint64_t ut_layout_data_offset(const ut_layout *l, uint64_t rec, uint32_t col);
uint64_t ut_layout_offsets_offset(const ut_layout *l, uint64_t rec, uint32_t col);
uint64_t ut_layout_validity_offset(const ut_layout *l, uint64_t rec, uint32_t col);
/* Replaces one chunk descriptor in both the record header and the footer
** and reseals every checksum over it (descriptors, record header, footer,
** slot), so only the descriptor's own content can be found wrong. */
void ut_layout_set_chunk(const char *path, ut_layout *l, uint64_t rec, uint32_t col, const cs_disk_chunk *dc);
/* A forked child opens a writer on path, runs fn(w, arg) (deletions,
** updates, writes), prepares and _exits: a crash between prepare and
** commit (its blocks, footer and, on a version-1 file, the upgraded
** preamble durable; no slot written).  ut_delete_prepare_in_child deletes
** rows[0, n) that way. */
typedef cs_rc (*ut_txn_fn)(cs_writer *w, void *arg, cs_err *err);
void ut_txn_prepare_in_child(const char *path, ut_txn_fn fn, void *arg);
void ut_delete_prepare_in_child(const char *path, const uint64_t *rows, uint64_t n);
/* Recomputes a slot's (or preamble's) checksum over its first 56 bytes. */
void ut_slot_reseal(cs_disk_slot *slot);
void ut_preamble_reseal(cs_disk_preamble *pre);

/* ------------------------------------------------- kernel suites' stores */

/* Every fixed-width type, nullable, a TEXT column (never gathered; it puts
** variable-length data in the records) and four NOT NULL columns: what the
** gather and mask suites gather from.  [2] is INT32 "i32", [3] INT64 "i64". */
#define UT_FIXED_COLS 15
extern const cs_column ut_fixed_cols[UT_FIXED_COLS];

/* How a kernel store's rows are cut into records: IRREGULAR, one record per
** write of a random 1..size rows (found by searching); UNIFORM, records of
** exactly size rows (found by division), the last one shorter. */
typedef enum ut_kstore_layout { UT_IRREGULAR, UT_UNIFORM } ut_kstore_layout;

/* A store of random rows, opened with CS_VERIFY_FULL. */
typedef struct ut_kstore {
  ut_scratch sc;
  cs_store *s;
} ut_kstore;

/* Writes n_rows random rows of cols (ut_cell_random, NULL with probability
** null_permille/1000 where nullable) from seed.  For UNIFORM, size should be
** a multiple of 8: the writer rounds record_rows up to one. */
void ut_kstore_make(ut_kstore *k, const cs_column *cols, uint32_t nc, uint64_t n_rows, ut_kstore_layout lay,
                    uint64_t size, unsigned null_permille, uint64_t seed);
void ut_kstore_free(ut_kstore *k);

/* One random store a table-driven kernel test loops over: ut_kstore_make of
** rows rows of every ut_fixed_cols column, as the other fields say. */
typedef struct ut_kshape {
  uint64_t seed;
  uint64_t rows;
  ut_kstore_layout lay;
  uint64_t size;
  unsigned null_permille;
} ut_kshape;

void ut_kstore_make_shape(ut_kstore *k, const ut_kshape *sh);

/* The naive reference: the record of row by a plain binary search over the
** public accessors, and a gather of rows[0..n) of fixed-width column col one
** value at a time (out: n * width bytes; ov: n validity bytes, 1 or 0). */
uint64_t ut_ref_record(const cs_store *s, uint64_t row);
void ut_ref_gather(const cs_store *s, uint32_t col, const uint64_t *rows, uint64_t n, uint8_t *out,
                   uint8_t *ov);

/* Sets the kernels' thread count and prefetch distance; reset restores the
** defaults ({0, -1}) and doubles as a checked teardown. */
void ut_kernel_config_set(int threads, int prefetch);
void ut_kernel_config_reset(void);

/* A format writer's sink into memory (the writer tests read the bytes
** back): ut_membuf_write appends, growing p; free(m.p) after. */
typedef struct ut_membuf {
  uint8_t *p;
  size_t n, cap;
} ut_membuf;
cs_rc ut_membuf_write(void *ctx, const void *p, size_t n, cs_err *err);

/* ------------------------------------------------------------- running */

/* Runs the suite with srunner and returns the process exit status. */
int ut_run_suite(Suite *suite);

#endif /* UNIT_UTIL_H */
