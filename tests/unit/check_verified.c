/*
** check_verified.c - store/cs_verified.c: damage is found, named, and never read past.
**
** The format trusts nothing it has not checked: the preamble, schema, slots
** and footer by their checksums at every open; each chunk descriptor by
** bounds at open; the data by per-chunk XXH3 checksums under CS_VERIFY_FULL
** or cs_store_verify(); TEXT/BLOB offsets by cs_chunk_varlen on every read.
** These tests damage a real store at known places (found with unit_util's
** own layout reader, not the reader under test) and check the exact code
** and that the message names the record and the column.
**
** Two exhaustive tests close the gaps between hand-picked places: every
** single-byte flip and every truncation of a small two-generation store
** must either be reported (CS_ECORRUPT, or CS_ENOTSTORE in the magic) or be
** harmless, meaning the store opens to exactly one of its committed states.
** "Harmless" is real: bytes no checksum covers (gaps between the fixed
** areas, padding after a record's descriptors) and the commit slots (a
** damaged slot falls back) are allowed to change nothing.  Under ASan these
** also prove that no damaged offset is ever followed out of bounds.
**
** A damaged descriptor or offset array is also written with every checksum
** over it recomputed ("resealed"), so the test reaches the check that
** looks at the content, not the checksum that would have caught it first.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_base_internal.h"
#include "unit_util.h"

static const cs_column cols[] = {
    {"id", CS_TYPE_INT64, false},
    {"victim", CS_TYPE_FLOAT64, true},
    {"txt", CS_TYPE_TEXT, true},
    {"raw", CS_TYPE_BLOB, false},
};
static const cs_schema schema = {4, cols};
enum { COL_ID, COL_VICTIM, COL_TXT, COL_RAW };

/* 64 rows in 4 records of 16, NULLs in victim and txt. */
static ut_table *make_store(const char *path) {
  ut_table *t = ut_table_new(&schema);
  ut_rng r = ut_rng_seed(4242);
  for (int row = 0; row < 64; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[COL_ID], row);
    if (row % 5 == 2)
      ut_cell_set_null(&c[COL_VICTIM]);
    else
      ut_cell_set_float(&c[COL_VICTIM], CS_TYPE_FLOAT64, row * 1.5);
    if (row % 6 == 1) {
      ut_cell_set_null(&c[COL_TXT]);
    } else {
      char s[32];
      int n = snprintf(s, sizeof s, "text %d %.*s", row, row % 9, "abcdefghi");
      ut_cell_set_bytes(&c[COL_TXT], s, (uint64_t)n);
    }
    ut_cell_random(&r, CS_TYPE_BLOB, false, 0, &c[COL_RAW]);
  }
  ut_table_create_store(t, path, 64, 16, 0);
  return t;
}

/* A damage test's starting point: make_store()'s rows at sc.path (sc.copy is
** free for a damaged copy), t the rows it holds, and l its layout as
** written. */
typedef struct victim {
  ut_scratch sc;
  ut_table *t;
  ut_layout l;
} victim;

static victim victim_new(void) {
  victim v;
  v.sc = ut_scratch_new();
  v.t = make_store(v.sc.path);
  ut_layout_read(v.sc.path, &v.l);
  return v;
}

static void victim_free(victim *v) {
  ut_layout_free(&v->l);
  ut_table_free(v->t);
  ut_scratch_free(&v->sc);
}

static void assert_open_fails(const char *path, cs_verify verify, cs_rc want, const char *ctx) {
  cs_err err = {0};
  cs_rc rc = ut_open_rc(path, verify, &err);
  ck_assert_msg(rc == want, "%s: open gave %s (%s), expected %s", ctx, cs_rc_name(rc), err.msg,
                cs_rc_name(want));
  ck_assert_msg(err.code == want && strncmp(err.msg, "colstore: ", 10) == 0, "%s: message '%s'", ctx,
                err.msg);
}

/* The failure message names the record and the column ("record 2, column victim"). */
static void assert_names(const cs_err *err, const char *path, uint64_t rec, const char *col,
                         const char *ctx) {
  char want[96];
  snprintf(want, sizeof want, "record %" PRIu64 ", column %s", rec, col);
  ck_assert_msg(strstr(err->msg, want) != NULL, "%s: message '%s' does not name '%s'", ctx, err->msg, want);
  ck_assert_msg(strstr(err->msg, path) != NULL, "%s: message '%s' does not name the file", ctx, err->msg);
}

/* s, opened with CS_VERIFY_HEADER over a damaged chunk, fails
** cs_store_verify naming record rec, column col and the file; then s is
** closed, and a CS_VERIFY_FULL open of path fails too. */
static void assert_verify_and_full_open_fail(cs_store *s, const char *path, uint64_t rec, uint32_t col,
                                             const char *ctx) {
  cs_err err = {0};
  ck_assert_msg(cs_store_verify(s, &err) == CS_ECORRUPT, "%s: verify missed it", ctx);
  assert_names(&err, path, rec, cols[col].name, ctx);
  cs_store_close(s);
  assert_open_fails(path, CS_VERIFY_FULL, CS_ECORRUPT, ctx);
}

/* Damages one byte of a chunk and checks both verify paths. */
static void chunk_damage_case(uint64_t (*where)(const ut_layout *, uint64_t, uint32_t), uint64_t rec,
                              uint32_t col, uint64_t delta, const char *ctx) {
  victim v = victim_new();
  ut_xor_byte(v.sc.path, where(&v.l, rec, col) + delta, 0x10);
  cs_store *s = ut_open_ok(v.sc.path, CS_VERIFY_HEADER, ctx);
  cs_err err = {0};
  ck_assert_msg(cs_store_verify(s, &err) == CS_ECORRUPT, "%s: verify missed the damage", ctx);
  assert_names(&err, v.sc.path, rec, cols[col].name, ctx);
  /* The records before the damage still read back. */
  for (uint64_t row = 0; row < cs_store_record_first_row(s, rec); row++)
    for (uint32_t c = 0; c < schema.n_cols; c++) {
      ut_cell got;
      ut_store_cell(s, row, c, &got);
      ck_assert(ut_cell_equal(cols[c].type, &got, ut_table_cell(v.t, row, c)));
    }
  cs_store_close(s);
  cs_err err2 = {0};
  ck_assert_int_eq(ut_open_rc(v.sc.path, CS_VERIFY_FULL, &err2), CS_ECORRUPT);
  ck_assert_str_eq(err2.msg, err.msg);
  victim_free(&v);
}

static uint64_t chunk_padding_offset(const ut_layout *l, uint64_t rec, uint32_t col) {
  const cs_disk_chunk *dc = ut_layout_chunk(l, rec, col);
  uint64_t data_end = dc->data_offset + dc->data_bytes, chunk_end = dc->chunk_offset + dc->chunk_bytes;
  ck_assert_msg(chunk_end > data_end, "record %" PRIu64 " column %u has no padding after its data", rec, col);
  return l->entries[rec].record_offset + data_end;
}

START_TEST(test_flipped_data_byte_opens_with_header_verify_and_verify_names_record_and_column) {
  chunk_damage_case(ut_layout_data_offset, 2, COL_VICTIM, 5, "data byte");
}
END_TEST

START_TEST(test_flipped_text_byte_is_caught_by_the_chunk_checksum) {
  chunk_damage_case(ut_layout_data_offset, 3, COL_TXT, 0, "text byte");
}
END_TEST

START_TEST(test_flipped_validity_byte_is_caught_by_the_chunk_checksum) {
  chunk_damage_case(ut_layout_validity_offset, 1, COL_VICTIM, 1, "validity byte");
}
END_TEST

START_TEST(test_flipped_offsets_byte_is_caught_by_the_chunk_checksum) {
  chunk_damage_case(ut_layout_offsets_offset, 0, COL_TXT, 8 * 3 + 1, "offsets byte");
}
END_TEST

START_TEST(test_flipped_padding_byte_is_caught_by_the_chunk_checksum) {
  /* After a 2-byte bitmap, 62 bytes of padding precede the data. */
  chunk_damage_case(ut_layout_validity_offset, 1, COL_VICTIM, 40, "padding after the bitmap");
  chunk_damage_case(chunk_padding_offset, 1, COL_TXT, 0, "padding after the text");
}
END_TEST

/* ---------------------------------------------------------- fixed areas */

START_TEST(test_every_preamble_byte_after_the_magic_is_covered_by_its_checksum) {
  victim v = victim_new();
  for (uint64_t off = 0; off < sizeof(cs_disk_preamble); off++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "preamble byte %" PRIu64, off);
    ut_copy_file(v.sc.path, v.sc.copy);
    ut_xor_byte(v.sc.copy, off, 0x04);
    assert_open_fails(v.sc.copy, CS_VERIFY_HEADER, off < CS_MAGIC_BYTES ? CS_ENOTSTORE : CS_ECORRUPT, ctx);
  }
  victim_free(&v);
}
END_TEST

START_TEST(test_every_schema_byte_is_covered_by_its_checksum) {
  victim v = victim_new();
  ck_assert_uint_gt(v.l.pre.schema_bytes, 8);
  for (uint64_t k = 0; k < v.l.pre.schema_bytes; k++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "schema byte %" PRIu64, k);
    ut_copy_file(v.sc.path, v.sc.copy);
    ut_xor_byte(v.sc.copy, v.l.pre.schema_offset + k, 0x20);
    assert_open_fails(v.sc.copy, CS_VERIFY_HEADER, CS_ECORRUPT, ctx);
  }
  victim_free(&v);
}
END_TEST

START_TEST(test_files_that_are_not_stores_are_enotstore) {
  victim v = victim_new();
  ut_write_all(v.sc.copy, "", 0);
  assert_open_fails(v.sc.copy, CS_VERIFY_HEADER, CS_ENOTSTORE, "empty file");
  ut_write_all(v.sc.copy, "id,name\n1,hello\n", 16);
  assert_open_fails(v.sc.copy, CS_VERIFY_HEADER, CS_ENOTSTORE, "csv file");
  char sqlite_header[4096] = "SQLite format 3";
  ut_write_all(v.sc.copy, sqlite_header, sizeof sqlite_header);
  assert_open_fails(v.sc.copy, CS_VERIFY_FULL, CS_ENOTSTORE, "sqlite database");
  /* Too short to hold the magic: not recognisable as a store. */
  uint8_t head[64];
  ut_pread(v.sc.path, 0, head, sizeof head);
  ut_write_all(v.sc.copy, head, CS_MAGIC_BYTES - 1);
  assert_open_fails(v.sc.copy, CS_VERIFY_HEADER, CS_ENOTSTORE, "7-byte prefix");
  /* The magic, then the file ends inside the preamble: a truncated store. */
  ut_write_all(v.sc.copy, head, 63);
  assert_open_fails(v.sc.copy, CS_VERIFY_HEADER, CS_ECORRUPT, "63-byte prefix");
  /* Text-mode damage turns \r\n into \n: the PNG-style magic catches it. */
  size_t n;
  uint8_t *all = ut_read_all(v.sc.path, &n);
  memmove(all + 4, all + 5, n - 5);
  ut_write_all(v.sc.copy, all, n - 1);
  assert_open_fails(v.sc.copy, CS_VERIFY_HEADER, CS_ENOTSTORE, "CRLF -> LF");
  free(all);
  assert_open_fails(v.sc.dir, CS_VERIFY_HEADER, CS_ENOTSTORE, "a directory");
  victim_free(&v);
}
END_TEST

START_TEST(test_future_version_with_a_valid_checksum_is_eversion) {
  victim v = victim_new();
  /* Version 2 is readable since deletions (docs/format.md 14); the next one is not. */
  const uint32_t versions[] = {CS_FORMAT_VERSION_MAX + 1, 0, 0xFFFFFFFFu};
  for (size_t k = 0; k < 3; k++) {
    cs_disk_preamble pre;
    ut_pread(v.sc.path, 0, &pre, sizeof pre);
    pre.version = versions[k];
    ut_preamble_reseal(&pre);
    ut_pwrite(v.sc.path, 0, &pre, sizeof pre);
    char ctx[96];
    snprintf(ctx, sizeof ctx, "version %u", versions[k]);
    cs_err err = {0};
    ck_assert_msg(ut_open_rc(v.sc.path, CS_VERIFY_FULL, &err) == CS_EVERSION, "%s: %s", ctx, err.msg);
    char want[48];
    snprintf(want, sizeof want, "version %u", versions[k]);
    ck_assert_msg(strstr(err.msg, want) != NULL, "%s: message '%s' does not name the version", ctx, err.msg);
  }
  victim_free(&v);
}
END_TEST

/* ------------------------------------------------------------ record headers */

START_TEST(test_damaged_record_header_fails_verify_and_full_open) {
  victim v = victim_new();
  /* The magic, n_rows, the header checksum, a byte inside descriptor 2. */
  const uint64_t spots[] = {0, 16, 56, sizeof(cs_disk_record) + 2 * sizeof(cs_disk_chunk) + 40};
  for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "record 1 header byte %" PRIu64, spots[k]);
    ut_copy_file(v.sc.path, v.sc.copy);
    ut_xor_byte(v.sc.copy, v.l.entries[1].record_offset + spots[k], 0x02);
    cs_store *s = ut_open_ok(v.sc.copy, CS_VERIFY_HEADER, ctx); /* the footer is intact */
    ut_assert_store_equals(s, v.t, 64, ctx);
    cs_err err = {0};
    ck_assert_msg(cs_store_verify(s, &err) == CS_ECORRUPT, "%s: verify missed it", ctx);
    ck_assert_msg(strstr(err.msg, "record 1 ") != NULL, "%s: message '%s' does not name record 1", ctx,
                  err.msg);
    cs_store_close(s);
    assert_open_fails(v.sc.copy, CS_VERIFY_FULL, CS_ECORRUPT, ctx);
  }
  victim_free(&v);
}
END_TEST

/* Resealed descriptors whose content is impossible are refused at open,
** with a message naming record and column. */
START_TEST(test_descriptors_outside_their_record_or_type_are_refused_at_open) {
  victim v = victim_new();
  const uint64_t rec = 1;
  const uint64_t record_bytes = v.l.entries[rec].record_bytes;
  for (int k = 0; k < 15; k++) {
    uint32_t col = COL_VICTIM;
    cs_disk_chunk dc = *ut_layout_chunk(&v.l, rec, col);
    const char *what = NULL;
    switch (k) {
      case 0:
        what = "chunk starts at the record end";
        dc.chunk_offset = record_bytes;
        break;
      case 1:
        what = "chunk span overflows";
        dc.chunk_bytes = UINT64_MAX - 32;
        break;
      case 2:
        what = "chunk inside the record header";
        dc.chunk_offset = 0;
        break;
      case 3:
        what = "data misaligned";
        dc.data_offset += 8;
        dc.data_bytes -= 8;
        break;
      case 4:
        what = "data size not rows * width";
        dc.data_bytes += 8;
        break;
      case 5:
        what = "nulls without a bitmap";
        dc.validity_offset = 0;
        break;
      case 6:
        what = "more nulls than rows";
        dc.null_count = 17;
        break;
      case 7:
        what = "unknown flags";
        dc.flags |= 0x80;
        break;
      case 8:
        what = "offsets on a fixed-width column";
        dc.offsets_offset = dc.data_offset;
        break;
      case 9:
        what = "data past the chunk";
        dc.data_offset = dc.chunk_offset + dc.chunk_bytes;
        break;
      case 10:
        col = COL_ID, dc = *ut_layout_chunk(&v.l, rec, col);
        what = "nulls in a NOT NULL column";
        dc.null_count = 1, dc.validity_offset = dc.data_offset;
        break;
      case 11:
        col = COL_TXT, dc = *ut_layout_chunk(&v.l, rec, col);
        what = "TEXT without offsets";
        dc.offsets_offset = 0;
        break;
      case 12:
        col = COL_TXT, dc = *ut_layout_chunk(&v.l, rec, col);
        what = "TEXT data past the chunk";
        dc.data_bytes = dc.chunk_bytes;
        break;
      case 13:
        col = COL_RAW, dc = *ut_layout_chunk(&v.l, rec, col);
        what = "offsets past the chunk";
        dc.offsets_offset = dc.chunk_offset + dc.chunk_bytes - 64;
        break;
      case 14:
        what = "bitmap misaligned";
        dc.validity_offset += 8;
        break;
      default: ck_abort_msg("no case %d", k);
    }
    ut_copy_file(v.sc.path, v.sc.copy);
    ut_layout lc;
    ut_layout_read(v.sc.copy, &lc);
    ut_layout_set_chunk(v.sc.copy, &lc, rec, col, &dc);
    ut_layout_free(&lc);
    cs_err err = {0};
    cs_rc rc = ut_open_rc(v.sc.copy, CS_VERIFY_HEADER, &err);
    ck_assert_msg(rc == CS_ECORRUPT, "%s: open gave %s (%s)", what, cs_rc_name(rc), err.msg);
    assert_names(&err, v.sc.copy, rec, cols[col].name, what);
  }
  victim_free(&v);
}
END_TEST

/* ------------------------------------------------------ TEXT/BLOB offsets */

/* Rewrites offsets[k] of (rec, col); reseals the chunk checksum when asked. */
static void offsets_set(const char *path, uint64_t rec, uint32_t col, uint64_t k, int64_t value,
                        bool reseal) {
  ut_layout l;
  ut_layout_read(path, &l);
  ut_pwrite(path, ut_layout_offsets_offset(&l, rec, col) + 8 * k, &value, 8);
  if (reseal) {
    cs_disk_chunk dc = *ut_layout_chunk(&l, rec, col);
    uint8_t *span = malloc(dc.chunk_bytes);
    ck_assert_ptr_nonnull(span);
    ut_pread(path, l.entries[rec].record_offset + dc.chunk_offset, span, dc.chunk_bytes);
    dc.checksum = cs__hash(span, dc.chunk_bytes);
    free(span);
    ut_layout_set_chunk(path, &l, rec, col, &dc);
  }
  ut_layout_free(&l);
}

/* Reads every value of (rec, col) through cs_chunk_varlen; returns how many
** were refused.  Values it returns lie inside the chunk's data. */
static int varlen_refusals(const cs_store *s, uint64_t rec, uint32_t col) {
  const cs_chunk *ch = cs_store_chunk(s, rec, col);
  int refused = 0;
  for (uint64_t i = 0; i < cs_store_record_rows(s, rec); i++) {
    const uint8_t *p = NULL;
    uint64_t len = 0;
    cs_err err = {0};
    cs_rc rc = cs_chunk_varlen(ch, i, &p, &len, &err);
    if (rc == CS_ECORRUPT) {
      refused++;
      ck_assert_msg(strstr(err.msg, "colstore: ") == err.msg, "message '%s'", err.msg);
      continue;
    }
    ck_assert_int_eq(rc, CS_OK);
    const uint8_t *lo = ch->data, *hi = lo + ch->data_bytes;
    ck_assert_msg(p >= lo && p <= hi && len <= (uint64_t)(hi - p), "row %" PRIu64 ": value outside the data",
                  i);
    volatile uint8_t sink = 0;
    for (uint64_t b = 0; b < len; b++) sink ^= p[b]; /* ASan would flag a stray read */
    (void)sink;
  }
  return refused;
}

START_TEST(test_text_offset_past_the_data_is_refused_by_varlen_without_reading_it) {
  const int64_t bad_values[] = {1000000, INT64_MAX, -1, INT64_MIN};
  for (size_t k = 0; k < 4; k++) {
    for (int reseal = 0; reseal < 2; reseal++) {
      char ctx[96];
      snprintf(ctx, sizeof ctx, "offset %" PRId64 ", resealed %d", bad_values[k], reseal);
      victim v = victim_new();
      offsets_set(v.sc.path, 2, COL_TXT, 5, bad_values[k], reseal);
      cs_store *s = ut_open_ok(v.sc.path, CS_VERIFY_HEADER, ctx);
      /* Rows 4 and 5 use offsets[5]; they, and only they, are refused. */
      ck_assert_msg(varlen_refusals(s, 2, COL_TXT) == 2, "%s: %d refusals", ctx,
                    varlen_refusals(s, 2, COL_TXT));
      const uint8_t *p;
      uint64_t len;
      cs_err err = {0};
      ck_assert_int_eq(cs_chunk_varlen(cs_store_chunk(s, 2, COL_TXT), 5, &p, &len, &err), CS_ECORRUPT);
      ck_assert_int_eq(cs_chunk_varlen(cs_store_chunk(s, 2, COL_TXT), 6, &p, &len, &err), CS_OK);
      assert_verify_and_full_open_fail(s, v.sc.path, 2, COL_TXT, ctx);
      victim_free(&v);
    }
  }
}
END_TEST

START_TEST(test_resealed_offsets_that_break_arrow_rules_fail_verify) {
  /* offsets[0] != 0, decreasing, and an end short of data_bytes: each is in
  ** bounds for cs_chunk_varlen, so only verify can object. */
  for (int k = 0; k < 3; k++) {
    victim v = victim_new();
    const cs_disk_chunk *dc = ut_layout_chunk(&v.l, 1, COL_RAW);
    int64_t o[17];
    ut_pread(v.sc.path, ut_layout_offsets_offset(&v.l, 1, COL_RAW), o, sizeof o);
    ck_assert(o[16] == (int64_t)dc->data_bytes && o[9] > o[8]);
    const char *what = k == 0 ? "nonzero start" : k == 1 ? "decreasing" : "short end";
    if (k == 0)
      offsets_set(v.sc.path, 1, COL_RAW, 0, 1, true);
    else if (k == 1)
      offsets_set(v.sc.path, 1, COL_RAW, 8, o[9] + 1, true);
    else
      offsets_set(v.sc.path, 1, COL_RAW, 16, o[16] - 1, true);
    cs_store *s = ut_open_ok(v.sc.path, CS_VERIFY_HEADER, what);
    varlen_refusals(s, 1, COL_RAW); /* whatever it refuses, it reads nothing outside */
    assert_verify_and_full_open_fail(s, v.sc.path, 1, COL_RAW, what);
    victim_free(&v);
  }
}
END_TEST

/* ------------------------------------------------------------ exhaustive */

static const cs_column small_cols[] = {
    {"id", CS_TYPE_INT64, false}, {"s", CS_TYPE_TEXT, true}, {"f", CS_TYPE_FLOAT32, true}};
static const cs_schema small_schema = {3, small_cols};

/* Two commits: 10 rows, then 10 more; records of 8. */
static ut_table *make_small_store(const char *path) {
  ut_table *t = ut_table_new(&small_schema);
  ut_rng r = ut_rng_seed(31337);
  for (int row = 0; row < 20; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], row);
    ut_cell_random(&r, CS_TYPE_TEXT, true, 200, &c[1]);
    ut_cell_random(&r, CS_TYPE_FLOAT32, true, 200, &c[2]);
  }
  ut_table_create_store(t, path, 10, 8, 0);
  ut_table_append_store(t, path, 10, 10);
  return t;
}

/* True when the store holds exactly rows [0, n) of t. */
static bool store_holds(const cs_store *s, const ut_table *t, uint64_t n) {
  if (cs_store_rows(s) != n) return false;
  for (uint64_t row = 0; row < n; row++)
    for (uint32_t c = 0; c < t->schema.n_cols; c++) {
      ut_cell got;
      ut_store_cell(s, row, c, &got);
      if (!ut_cell_equal(t->cols[c].type, &got, ut_table_cell(t, row, c))) return false;
    }
  return true;
}

/* Opens a damaged file both ways; returns true when it was reported. */
static bool damaged_outcome(const char *path, const ut_table *t, bool magic_hit, const char *ctx) {
  cs_store *s = NULL;
  cs_err err = {0};
  cs_rc rc = cs_store_open(path, CS_VERIFY_FULL, &s, &err);
  bool reported = rc != CS_OK;
  if (reported) {
    ck_assert_msg(rc == CS_ECORRUPT || (magic_hit && rc == CS_ENOTSTORE), "%s: full open gave %s: %s", ctx,
                  cs_rc_name(rc), err.msg);
  } else {
    ck_assert_msg(store_holds(s, t, cs_store_rows(s)) && (cs_store_rows(s) == 10 || cs_store_rows(s) == 20),
                  "%s: opened with %" PRIu64 " rows that are not a committed state", ctx, cs_store_rows(s));
    cs_store_close(s);
  }
  /* Header-only open must never crash, whatever it reads. */
  rc = cs_store_open(path, CS_VERIFY_HEADER, &s, &err);
  if (rc == CS_OK) {
    for (uint64_t rec = 0; rec < cs_store_records(s); rec++) varlen_refusals(s, rec, 1);
    bool verified = cs_store_verify(s, &err) == CS_OK;
    ck_assert_msg(!verified || (store_holds(s, t, cs_store_rows(s)) &&
                                (cs_store_rows(s) == 10 || cs_store_rows(s) == 20)),
                  "%s: verify passed a store that is not a committed state", ctx);
    cs_store_close(s);
  }
  return reported;
}

START_TEST(test_every_single_byte_flip_is_reported_or_harmless) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = make_small_store(sc.path);
  size_t n;
  uint8_t *orig = ut_read_all(sc.path, &n);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  size_t reported = 0, data_bytes = 0, data_reported = 0;
  for (size_t off = 0; off < n; off++) {
    const uint8_t masks[2] = {0x01, 0x80};
    bool in_data = false;
    for (uint64_t rec = 0; rec < l.n_records; rec++)
      for (uint32_t c = 0; c < l.n_cols; c++) {
        const cs_disk_chunk *dc = ut_layout_chunk(&l, rec, c);
        uint64_t lo = l.entries[rec].record_offset + dc->chunk_offset;
        in_data |= off >= lo && off < lo + dc->chunk_bytes;
      }
    for (int m = 0; m < 2; m++) {
      char ctx[96];
      snprintf(ctx, sizeof ctx, "byte %zu ^ 0x%02x", off, masks[m]);
      orig[off] ^= masks[m];
      ut_write_all(sc.copy, orig, n);
      orig[off] ^= masks[m];
      bool r = damaged_outcome(sc.copy, t, off < CS_MAGIC_BYTES, ctx);
      reported += r;
      if (in_data) data_bytes++, data_reported += r;
    }
  }
  /* Every flip inside a column chunk is reported by the full verify. */
  ck_assert_msg(data_reported == data_bytes, "%zu of %zu chunk-byte flips went unreported",
                data_bytes - data_reported, data_bytes);
  ck_assert_msg(reported > n / 2, "only %zu of %zu flips reported: the test lost its point", reported, 2 * n);
  ut_layout_free(&l);
  free(orig);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_every_truncation_is_reported_or_harmless) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = make_small_store(sc.path);
  size_t n;
  uint8_t *orig = ut_read_all(sc.path, &n);
  size_t opened = 0;
  for (size_t len = 0; len < n; len++) {
    char ctx[96];
    snprintf(ctx, sizeof ctx, "truncated to %zu of %zu", len, n);
    ut_write_all(sc.copy, orig, len);
    if (len < CS_MAGIC_BYTES) {
      cs_err err = {0};
      ck_assert_msg(ut_open_rc(sc.copy, CS_VERIFY_HEADER, &err) == CS_ENOTSTORE, "%s: %s", ctx, err.msg);
    } else {
      opened += !damaged_outcome(sc.copy, t, false, ctx);
    }
  }
  /* Only cuts inside the footer can be harmless: the records survive. */
  ck_assert_msg(opened > 0 && opened < n / 2, "%zu of %zu truncations opened", opened, n);
  free(orig);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* A cut at a page boundary leaves nothing mapped after it, so a reader that
** trusted the slot's data_end over the file size would fault, not report. */
START_TEST(test_truncation_at_page_boundaries_inside_the_data_is_ecorrupt) {
  static const cs_column tcols[] = {{"id", CS_TYPE_INT64, false}, {"s", CS_TYPE_TEXT, true}};
  static const cs_schema tschema = {2, tcols};
  ut_scratch sc = ut_scratch_new();
  ut_table *t = ut_table_new(&tschema);
  ut_rng r = ut_rng_seed(4096);
  for (int row = 0; row < 600; row++) {
    ut_cell *c = ut_table_add_row(t);
    ut_cell_set_int(&c[0], row);
    ut_cell_random(&r, CS_TYPE_TEXT, true, 100, &c[1]);
  }
  ut_table_create_store(t, sc.path, 600, 40, 0);
  ut_layout l;
  ut_layout_read(sc.path, &l);
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), data_end = l.slot[l.newest].data_end, cuts = 0;
  size_t n;
  uint8_t *orig = ut_read_all(sc.path, &n);
  for (uint64_t len = page; len < data_end; len += page) {
    for (int64_t delta = -64; delta <= 64; delta += 64) {
      char ctx[96];
      snprintf(ctx, sizeof ctx, "cut at %" PRIu64 " of %zu", len + (uint64_t)delta, n);
      ut_write_all(sc.copy, orig, len + (uint64_t)delta);
      assert_open_fails(sc.copy, CS_VERIFY_HEADER, CS_ECORRUPT, ctx);
      assert_open_fails(sc.copy, CS_VERIFY_FULL, CS_ECORRUPT, ctx);
      cuts++;
    }
  }
  ck_assert_msg(cuts >= 9, "the store spans only %" PRIu64 " pages", data_end / page);
  free(orig);
  ut_layout_free(&l);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* ---------------------------------------------------------- the hash */

/* cs__hash's two builds of XXH3 (SSE2, and AVX2 where the CPU has it:
** cs_hash_avx2.c) and the streamed hash give one value: XXH3-64's known
** value of no bytes, and of every size around the builds' switch points,
** from unaligned starts, streamed in uneven pieces. */
START_TEST(test_hash_builds_and_streaming_agree) {
  ck_assert_uint_eq(cs__hash("", 0), 0x2D06800538D394C2ull); /* XXH3_64bits of no bytes */
  size_t cap = (1u << 20) + 64;
  uint8_t *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < cap; i++)
    x = x * 6364136223846793005ull + 1442695040888963407ull, buf[i] = (uint8_t)(x >> 56);
  static const size_t sizes[] = {1, 17, 240, 241, 1024, 1025, 4096, 65549, 1u << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (size_t at = 0; at < 3; at++) {
      const uint8_t *p = buf + at * 7;
      size_t n = sizes[k];
      cs__hash_no_avx2 = true;
      uint64_t sse2 = cs__hash(p, n);
      cs__hash_no_avx2 = false;
      uint64_t best = cs__hash(p, n);
      ck_assert_msg(best == sse2, "size %zu at %zu: %016llx vs %016llx", n, at, (unsigned long long)best,
                    (unsigned long long)sse2);
      cs__hash_state h;
      cs__hash_reset(&h);
      for (size_t done = 0, piece = 1; done < n; piece = piece * 3 + 5) {
        size_t m = piece < n - done ? piece : n - done;
        cs__hash_no_avx2 = (piece & 1) != 0; /* both builds on one state */
        cs__hash_update(&h, p + done, m);
        done += m;
      }
      cs__hash_no_avx2 = false;
      ck_assert_uint_eq(cs__hash_digest(&h), sse2);
    }
  free(buf);
}
END_TEST

/* ------------------------------------------------------------------ main */

static Suite *checksum_suite(void) {
  Suite *s = suite_create("verified");
  TCase *tc = tcase_create("chunks");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_flipped_data_byte_opens_with_header_verify_and_verify_names_record_and_column);
  tcase_add_test(tc, test_flipped_text_byte_is_caught_by_the_chunk_checksum);
  tcase_add_test(tc, test_flipped_validity_byte_is_caught_by_the_chunk_checksum);
  tcase_add_test(tc, test_flipped_offsets_byte_is_caught_by_the_chunk_checksum);
  tcase_add_test(tc, test_flipped_padding_byte_is_caught_by_the_chunk_checksum);
  tcase_add_test(tc, test_hash_builds_and_streaming_agree);
  suite_add_tcase(s, tc);

  tc = tcase_create("fixed_areas");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_every_preamble_byte_after_the_magic_is_covered_by_its_checksum);
  tcase_add_test(tc, test_every_schema_byte_is_covered_by_its_checksum);
  tcase_add_test(tc, test_files_that_are_not_stores_are_enotstore);
  tcase_add_test(tc, test_future_version_with_a_valid_checksum_is_eversion);
  tcase_add_test(tc, test_damaged_record_header_fails_verify_and_full_open);
  tcase_add_test(tc, test_descriptors_outside_their_record_or_type_are_refused_at_open);
  suite_add_tcase(s, tc);

  tc = tcase_create("offsets");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_text_offset_past_the_data_is_refused_by_varlen_without_reading_it);
  tcase_add_test(tc, test_resealed_offsets_that_break_arrow_rules_fail_verify);
  suite_add_tcase(s, tc);

  tc = tcase_create("exhaustive");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_every_single_byte_flip_is_reported_or_harmless);
  tcase_add_test(tc, test_every_truncation_is_reported_or_harmless);
  tcase_add_test(tc, test_truncation_at_page_boundaries_inside_the_data_is_ecorrupt);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(checksum_suite()); }
