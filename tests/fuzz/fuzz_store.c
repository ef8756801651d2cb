/*
** fuzz_store.c - any bytes as a store file: open, read everything, verify.
**
** WHAT IT COVERS.  The reader's promise (cs_store.c) is that open trusts
** nothing in the file until checked, so that after a successful open the
** cursor and the kernels may follow every resolved pointer without checks
** of their own.  This target holds it to that: the input becomes a file
** (a memfd, else a temporary file), which is opened with each verify
** level (HEADER, FULL, READ); whatever opens is read in full through every
** public path: each chunk of each record (validity bits, fixed-width
** values, TEXT/BLOB through cs_chunk_varlen), every gather kernel (range,
** strided, sorted, by rows, binned, by mask), predicate evaluation with
** zone maps and the sorted-range search, the batch selector and the list
** gather, then cs_store_verify and cs_store_column_stats.  AddressSanitizer turns any
** read outside the mapping or the heap into a crash.
**
** ORACLES, beyond "no crash":
**   - open(FULL) is open(HEADER) followed by verify: same code, same text;
**     after a FULL open every TEXT/BLOB value reads without error;
**   - open(READ) opens as HEADER does, and its chunk checks on reading
**     (cs_store_check_rows, cs_store_check_chunks) fail only where verify
**     fails, and never after it passed;
**   - every error message starts with "colstore: ";
**   - colstore_verify's report (cs_store_verify_source) names each damaged
**     part once, is empty iff open(FULL) passes or fails for a reason that
**     is not damage, starts with open(FULL)'s error, and, where
**     open(HEADER) passed, names as checksum damage exactly the chunks
**     that a read of each chunk alone refuses;
**   - every gather kernel returns exactly what a naive read of the chunks
**     returns (values where valid, and the validity bytes);
**   - cs_store_find_record agrees with the record table;
**   - an append to a store that opened keeps its rows and adds one, and a
**     store that passed full verification still passes it afterwards;
**   - so does an update of its last position (a patch block, format 2),
**     which keeps every other row, and a failed update (a damaged chunk it
**     had to read) leaves the file byte-identical.
**
** THE ONE DECISION A NEWCOMER WOULD QUESTION: each input is run twice, as
** given and "resealed".  Every structure of the format is checksummed
** (XXH3), and a fuzzer cannot forge a checksum, so a mutated preamble,
** slot, footer or descriptor is rejected at its first check and the code
** behind it is never reached.  The resealed copy has every checksum the
** harness can find recomputed over the mutated bytes (reseal() walks the
** layout with its own, forgiving parser: records, deletion vectors, patch
** blocks, both footer layouts), so mutations of counts, offsets
** and flags reach the checks that are meant to catch them, and, with chunk
** checksums resealed too, the full-verify paths see damaged content that
** passed its checksum.
*/
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "colstore.h"
#include "cs_format.h"
#include "fuzz.h"

/* Rows the kernels are asked for at most (the file size bounds the rest). */
#define FZ_MAX_ROWS 200000u
#define FZ_LIST_ROWS 512u

/* ----------------------------------------------------------------- file */

static int g_fd = -1;     /* the file the input is written to; kept open */
static char g_path[4096]; /* its path, as cs_store_open is given it */

static void file_remove(void) { unlink(g_path); }

static void file_init(void) {
  if (g_fd >= 0) return;
  g_fd = memfd_create("fuzz_store", MFD_CLOEXEC);
  if (g_fd >= 0) {
    snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
    if (access(g_path, R_OK | W_OK) == 0) return;
    close(g_fd);
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(g_path, sizeof g_path, "%s/fuzz_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  g_fd = mkstemp(g_path);
  FZ_CHECK(g_fd >= 0, "cannot create a scratch file %s", g_path);
  atexit(file_remove);
}

static void file_put(const uint8_t *p, size_t n) {
  FZ_CHECK(ftruncate(g_fd, 0) == 0, "ftruncate");
  size_t done = 0;
  while (done < n) {
    ssize_t w = pwrite(g_fd, p + done, n - done, (off_t)done);
    FZ_CHECK(w > 0, "pwrite");
    done += (size_t)w;
  }
}

/* ---------------------------------------------------------------- reseal */

static bool in_file(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

/* Recomputes the checksums of one record at off; returns its length, or 0
** when no record header is there. */
static uint64_t reseal_record(uint8_t *f, uint64_t size, uint64_t off) {
  if (!in_file(off, sizeof(cs_disk_record), size)) return 0;
  cs_disk_record h;
  memcpy(&h, f + off, sizeof h);
  if (memcmp(h.magic, CS_MAGIC_RECORD, CS_MAGIC_BYTES) != 0) return 0;
  uint64_t desc_bytes = (uint64_t)h.n_cols * sizeof(cs_disk_chunk);
  if (h.n_cols <= CS_MAX_COLUMNS && in_file(off + sizeof h, desc_bytes, size)) {
    for (uint32_t c = 0; c < h.n_cols; c++) {
      cs_disk_chunk dc;
      uint64_t at = off + sizeof h + (uint64_t)c * sizeof dc;
      memcpy(&dc, f + at, sizeof dc);
      if (dc.chunk_offset <= size && in_file(off + dc.chunk_offset, dc.chunk_bytes, size) &&
          off + dc.chunk_offset >= off) {
        dc.checksum = cs__hash(f + off + dc.chunk_offset, dc.chunk_bytes);
        memcpy(f + at, &dc, sizeof dc);
      }
    }
    h.descriptors_checksum = cs__hash(f + off + sizeof h, desc_bytes);
  }
  h.checksum = cs__hash(&h, 56);
  memcpy(f + off, &h, sizeof h);
  return h.record_bytes;
}

/* The footer at off: chunk checksums of its entries, then its own. */
static void reseal_footer(uint8_t *f, uint64_t size, uint64_t off) {
  if (!in_file(off, sizeof(cs_disk_footer), size)) return;
  cs_disk_footer h;
  memcpy(&h, f + off, sizeof h);
  if (memcmp(h.magic, CS_MAGIC_FOOTER, CS_MAGIC_BYTES) != 0 || h.footer_bytes < sizeof h ||
      !in_file(off, h.footer_bytes, size))
    return;
  /* Layout 2: an extension after the header, and per entry the deletion
  ** vector's fields before the descriptors. */
  bool v2 = h.layout == CS_FOOTER_LAYOUT_2;
  uint64_t eb = h.entry_bytes, xb = v2 ? sizeof(cs_disk_entry_ext) : 0,
           head = v2 ? CS_FOOTER_HEAD_BYTES_V2 : sizeof h;
  if (h.n_cols <= CS_MAX_COLUMNS &&
      eb == sizeof(cs_disk_entry) + xb + (uint64_t)h.n_cols * sizeof(cs_disk_chunk)) {
    for (uint64_t at = off + head; at + eb <= off + h.footer_bytes; at += eb) {
      cs_disk_entry e;
      memcpy(&e, f + at, sizeof e);
      if (v2) {
        cs_disk_entry_ext x;
        memcpy(&x, f + at + sizeof e, sizeof x);
        if (x.dv_offset && in_file(x.dv_offset, sizeof(cs_disk_delvec), size)) {
          cs_disk_delvec dv;
          memcpy(&dv, f + x.dv_offset, sizeof dv);
          x.dv_checksum = dv.bitmap_checksum;
          memcpy(f + at + sizeof e, &x, sizeof x);
        }
      }
      for (uint32_t c = 0; c < h.n_cols; c++) {
        cs_disk_chunk dc;
        uint64_t dat = at + sizeof e + xb + (uint64_t)c * sizeof dc;
        memcpy(&dc, f + dat, sizeof dc);
        uint64_t base =
            (dc.flags & CS_CHUNK_ABSOLUTE) ? 0 : e.record_offset; /* a patch's chunk: file offsets */
        if (base <= size && dc.chunk_offset <= size - base &&
            in_file(base + dc.chunk_offset, dc.chunk_bytes, size)) {
          dc.checksum = cs__hash(f + base + dc.chunk_offset, dc.chunk_bytes);
          memcpy(f + dat, &dc, sizeof dc);
        }
      }
    }
  }
  h.checksum = cs__hash_seeded(f + off + sizeof h, h.footer_bytes - sizeof h, cs__hash(&h, 56));
  memcpy(f + off, &h, sizeof h);
}

/* Recomputes the checksums of a format-2 block at off (a deletion vector:
** bitmap and header; a patch: its chunks, its items, its header); returns
** its length, or 0 when neither is there. */
static uint64_t reseal_v2_block(uint8_t *f, uint64_t size, uint64_t off) {
  if (!in_file(off, 64, size)) return 0;
  if (memcmp(f + off, CS_MAGIC_DELVEC, CS_MAGIC_BYTES) == 0) {
    cs_disk_delvec h;
    memcpy(&h, f + off, sizeof h);
    if (h.block_bytes >= sizeof h && in_file(off, h.block_bytes, size))
      h.bitmap_checksum = cs__hash(f + off + sizeof h, h.block_bytes - sizeof h);
    h.checksum = cs__hash(&h, 56);
    memcpy(f + off, &h, sizeof h);
    return h.block_bytes;
  }
  if (memcmp(f + off, CS_MAGIC_PATCH, CS_MAGIC_BYTES) != 0) return 0;
  cs_disk_patch h;
  memcpy(&h, f + off, sizeof h);
  uint64_t items = (uint64_t)h.n_chunks * sizeof(cs_disk_patch_item);
  if (h.n_chunks <= CS_MAX_COLUMNS && in_file(off + sizeof h, items, size)) {
    for (uint32_t k = 0; k < h.n_chunks; k++) {
      cs_disk_patch_item it;
      uint64_t at = off + sizeof h + (uint64_t)k * sizeof it;
      memcpy(&it, f + at, sizeof it);
      if (in_file(it.chunk.chunk_offset, it.chunk.chunk_bytes, size)) {
        it.chunk.checksum = cs__hash(f + it.chunk.chunk_offset, it.chunk.chunk_bytes);
        memcpy(f + at, &it, sizeof it);
      }
    }
    h.descriptors_checksum = cs__hash(f + off + sizeof h, items);
  }
  h.checksum = cs__hash(&h, 56);
  memcpy(f + off, &h, sizeof h);
  return h.block_bytes;
}

static void reseal(uint8_t *f, uint64_t size) {
  if (size < sizeof(cs_disk_preamble)) return;
  cs_disk_preamble pre;
  memcpy(&pre, f, sizeof pre);
  if (in_file(pre.schema_offset, pre.schema_bytes, size))
    pre.schema_checksum = cs__hash(f + pre.schema_offset, pre.schema_bytes);
  pre.checksum = cs__hash(&pre, 56);
  memcpy(f, &pre, sizeof pre);
  /* Blocks (records, deletion vectors, patches), walked from data_offset
  ** while headers are found. */
  uint64_t off = pre.data_offset, guard = 0;
  while (off % CS_ALIGN == 0 && guard++ < 100000) {
    uint64_t rb = reseal_v2_block(f, size, off);
    if (!rb) rb = reseal_record(f, size, off);
    if (rb < sizeof(cs_disk_record) || rb % CS_ALIGN || off + rb < off) break;
    off += rb;
  }
  /* A footer where the walk stopped (a forward scan looks there), and the
  ** footers the slots name; then the slots. */
  reseal_footer(f, size, off);
  for (int k = 0; k < 2; k++) {
    uint64_t at = k ? CS_SLOT1_OFFSET : CS_SLOT0_OFFSET;
    if (!in_file(at, sizeof(cs_disk_slot), size)) continue;
    cs_disk_slot s;
    memcpy(&s, f + at, sizeof s);
    if (memcmp(s.magic, CS_MAGIC_SLOT, CS_MAGIC_BYTES) != 0) continue;
    reseal_footer(f, size, s.footer_offset);
    if (in_file(s.footer_offset, s.footer_bytes, size))
      s.footer_checksum = cs__hash(f + s.footer_offset, s.footer_bytes);
    s.checksum = cs__hash(&s, 56);
    memcpy(f + at, &s, sizeof s);
  }
}

/* ----------------------------------------------------------------- reads */

static uint64_t g_sink; /* keeps reads from being optimised away */

static bool starts_colstore(const cs_err *err) { return strncmp(err->msg, "colstore: ", 10) == 0; }

/* The record of row by a plain binary search over the public accessors. */
static uint64_t ref_record(const cs_store *s, uint64_t row) {
  uint64_t lo = 0, hi = cs_store_records(s);
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (cs_store_record_first_row(s, mid) <= row)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Value and validity of fixed-width column col at row, read in place. */
static void ref_cell(const cs_store *s, uint32_t col, uint64_t row, size_t w, uint8_t *out, uint8_t *valid) {
  uint64_t rec = ref_record(s, row), local = row - cs_store_record_first_row(s, rec);
  const cs_chunk *ch = cs_store_chunk(s, rec, col);
  *valid = cs_chunk_is_valid(ch, local) ? 1 : 0;
  memcpy(out, (const uint8_t *)ch->data + local * w, w);
}

/* Compares n gathered elements of rows[] with the naive read. */
static void check_gather(const cs_store *s, uint32_t col, size_t w, const uint64_t *rows, uint64_t n,
                         const uint8_t *out, const uint8_t *ov, const char *kernel) {
  uint8_t want[8], valid;
  for (uint64_t i = 0; i < n; i++) {
    ref_cell(s, col, rows[i], w, want, &valid);
    FZ_CHECK(ov[i] == valid, "%s: column %u row %" PRIu64 ": validity %u, expected %u", kernel, col, rows[i],
             ov[i], valid);
    if (valid)
      FZ_CHECK(memcmp(out + i * w, want, w) == 0, "%s: column %u row %" PRIu64 ": value differs", kernel, col,
               rows[i]);
  }
}

/* Every chunk read through the accessors; varlen_ok: every TEXT/BLOB
** value must read (the store passed full verification). */
static void read_chunks(const cs_store *s, bool varlen_ok) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t n_rec = cs_store_records(s), rows = 0;
  for (uint64_t r = 0; r < n_rec; r++) {
    uint64_t first = cs_store_record_first_row(s, r), n = cs_store_record_rows(s, r);
    FZ_CHECK(first == rows && n > 0, "record %" PRIu64 " starts at %" PRIu64 " with %" PRIu64 " rows", r,
             first, n);
    FZ_CHECK(cs_store_find_record(s, first) == r && cs_store_find_record(s, first + n - 1) == r,
             "find_record disagrees at record %" PRIu64, r);
    rows += n;
    for (uint32_t c = 0; c < sc->n_cols; c++) {
      const cs_chunk *ch = cs_store_chunk(s, r, c);
      uint64_t h = FZ_FNV_SEED, nulls = 0;
      for (uint64_t k = 0; k < n; k++) nulls += !cs_chunk_is_valid(ch, k);
      FZ_CHECK(ch->validity || nulls == 0, "no bitmap but NULLs");
      if (!cs_type_is_varlen(sc->cols[c].type)) {
        h = fz_fnv(h, ch->data, ch->data_bytes);
      } else {
        for (uint64_t k = 0; k < n; k++) {
          const uint8_t *p;
          uint64_t len;
          cs_err err = {0};
          cs_rc rc = cs_chunk_varlen(ch, k, &p, &len, &err);
          if (rc == CS_OK) {
            FZ_CHECK(len <= ch->data_bytes && p >= (const uint8_t *)ch->data &&
                         (uint64_t)(p - (const uint8_t *)ch->data) <= ch->data_bytes - len,
                     "varlen value outside its chunk");
            h = fz_fnv(h, p, len);
          } else {
            FZ_CHECK(rc == CS_ECORRUPT && starts_colstore(&err), "cs_chunk_varlen: %s: %s", cs_rc_name(rc),
                     err.msg);
            FZ_CHECK(!varlen_ok,
                     "record %" PRIu64 " column %u row %" PRIu64 ": unreadable after full verify: %s", r, c,
                     k, err.msg);
          }
        }
      }
      g_sink += h;
    }
  }
  FZ_CHECK(rows == cs_store_rows(s), "records hold %" PRIu64 " rows, the store says %" PRIu64, rows,
           cs_store_rows(s));
}

/* Every gather kernel against the naive read, for every fixed column. */
static void run_gathers(const cs_store *s, uint64_t *seed) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t n = cs_store_rows(s);
  if (n == 0 || n > FZ_MAX_ROWS || cs_store_records(s) > UINT32_MAX) return;
  uint64_t m = n < FZ_LIST_ROWS ? n * 2 : FZ_LIST_ROWS; /* duplicates when n is small */
  uint64_t *all = malloc(n * sizeof *all), *list = malloc(m * sizeof *list),
           *sorted = malloc(m * sizeof *sorted);
  uint64_t *mrows = malloc(n * sizeof *mrows);
  uint32_t *bins = malloc(m * sizeof *bins);
  uint64_t most = n > m ? n : m;
  uint8_t *mask = malloc(n), *out = malloc(most * 8), *ov = malloc(most);
  FZ_CHECK(all && list && sorted && mrows && bins && mask && out && ov, "out of memory");
  for (uint64_t i = 0; i < n; i++) all[i] = i, mask[i] = (fz_mix(seed) & 3) == 0;
  for (uint64_t i = 0; i < m; i++) list[i] = fz_mix(seed) % n;
  list[0] = n - 1; /* the last row, always */
  memcpy(sorted, list, m * sizeof *sorted);
  for (uint64_t i = 1; i < m; i++) /* insertion sort: m is small */
    for (uint64_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      uint64_t t = sorted[j];
      sorted[j] = sorted[j - 1], sorted[j - 1] = t;
    }
  uint64_t n_mask = cs_mask_count(mask, n);
  FZ_CHECK(cs_mask_to_rows(mask, n, 0, mrows) == n_mask, "mask_to_rows count");
  cs_bins_compute(s, list, m, bins);
  for (uint64_t i = 0; i < m; i++)
    FZ_CHECK(bins[i] == ref_record(s, list[i]), "bins_compute row %" PRIu64, list[i]);
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    size_t w = cs_type_width(sc->cols[c].type);
    if (!w) continue;
    cs_gather_range(s, c, 0, n, out, ov);
    check_gather(s, c, w, all, n, out, ov, "gather_range");
    uint64_t from = fz_mix(seed) % n;
    cs_gather_range(s, c, from, n - from, out, ov);
    check_gather(s, c, w, all + from, n - from, out, ov, "gather_range(tail)");
    cs_gather_strided(s, c, n - 1, -1, n, out, ov);
    for (uint64_t i = 0; i < n; i++) mrows[i] = n - 1 - i;
    check_gather(s, c, w, mrows, n, out, ov, "gather_strided(-1)");
    cs_gather_sorted(s, c, sorted, m, out, ov);
    check_gather(s, c, w, sorted, m, out, ov, "gather_sorted");
    cs_gather_sorted(s, c, list, m, out, ov);
    check_gather(s, c, w, list, m, out, ov, "gather_sorted(unordered)");
    cs_gather_rows(s, c, list, m, out, ov);
    check_gather(s, c, w, list, m, out, ov, "gather_rows");
    cs_gather_rows_binned(s, c, list, bins, m, out, ov);
    check_gather(s, c, w, list, m, out, ov, "gather_rows_binned");
    FZ_CHECK(cs_gather_mask(s, c, mask, 0, n, out, ov) == n_mask, "gather_mask count");
    cs_mask_to_rows(mask, n, 0, mrows);
    check_gather(s, c, w, mrows, n_mask, out, ov, "gather_mask");
  }
  free(all), free(list), free(sorted), free(mrows), free(bins), free(mask), free(out), free(ov);
}

/* A constant of every storage class, chosen by the seed. */
static cs_value some_value(uint64_t *seed, const uint8_t *bytes, size_t n_bytes) {
  cs_value v;
  memset(&v, 0, sizeof v);
  static const double specials[] = {
      0.0, -0.0, 1.5, -1e300, 1e300, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 9007199254740993.0, 4294967295.5};
  uint64_t r = fz_mix(seed);
  switch (r % 6) {
    case 0: v.kind = CS_VAL_NULL; break;
    case 1:
      v.kind = CS_VAL_INT, v.i = (int64_t)(fz_mix(seed) >> (r >> 8 & 63)) * ((r >> 14 & 1) ? -1 : 1);
      break;
    case 2: v.kind = CS_VAL_FLOAT, v.f = specials[(r >> 8) % (sizeof specials / sizeof *specials)]; break;
    case 3: {
      uint64_t bits = fz_mix(seed);
      v.kind = CS_VAL_FLOAT;
      memcpy(&v.f, &bits, 8);
      break;
    }
    default:
      v.kind = r % 6 == 4 ? CS_VAL_TEXT : CS_VAL_BLOB;
      v.p = bytes;
      v.n = n_bytes ? (r >> 8) % (n_bytes < 8 ? n_bytes + 1 : 9) : 0;
      break;
  }
  return v;
}

/* Predicates on every column through the mask evaluator, the selector
** and the sorted-range search: no reference (a damaged zone map may
** legitimately change the answer), but every path must stay in bounds. */
static void run_predicates(const cs_store *s, uint64_t *seed, const uint8_t *bytes, size_t n_bytes) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t n = cs_store_rows(s);
  if (n == 0 || n > FZ_MAX_ROWS || cs_store_records(s) > UINT32_MAX) return;
  uint8_t *mask = malloc(n), *user = malloc(n), *outs = malloc(n * 8 * 2), *ovs = malloc(n * 2);
  uint64_t *rows = malloc(n * sizeof *rows);
  FZ_CHECK(mask && user && outs && ovs && rows, "out of memory");
  for (uint64_t i = 0; i < n; i++) user[i] = (uint8_t)(fz_mix(seed) & 1);
  static const cs_cmp ops[] = {CS_CMP_EQ, CS_CMP_NE,     CS_CMP_LT,      CS_CMP_LE, CS_CMP_GT,
                               CS_CMP_GE, CS_CMP_ISNULL, CS_CMP_NOTNULL, CS_CMP_IN, CS_CMP_BETWEEN};
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    cs_value set[20];
    for (int k = 0; k < 20; k++) set[k] = some_value(seed, bytes, n_bytes);
    for (size_t round = 0; round < 3; round++) {
      size_t o = fz_mix(seed) % (sizeof ops / sizeof *ops);
      cs_pred p[2];
      memset(p, 0, sizeof p);
      p[0].col = c, p[0].op = ops[o];
      p[0].a = some_value(seed, bytes, n_bytes), p[0].b = some_value(seed, bytes, n_bytes);
      p[0].set = set, p[0].n_set = 1 + fz_mix(seed) % 20;
      p[1].col = (uint32_t)(fz_mix(seed) % sc->n_cols), p[1].op = CS_CMP_GE,
      p[1].a = some_value(seed, bytes, n_bytes);
      cs_pred_stats st;
      cs_pred_eval(s, p, 2, 0, n, mask, &st);
      for (uint64_t i = 0; i < n; i++) FZ_CHECK(mask[i] <= 1, "mask byte %u", mask[i]);
      uint64_t a = fz_mix(seed) % n;
      cs_pred_eval(s, p, 1, a, n - a, mask, NULL);
      uint64_t lo, hi;
      if (cs_pred_sorted_range(s, &p[0], &lo, &hi))
        FZ_CHECK(lo <= hi && hi <= n, "sorted range [%" PRIu64 ", %" PRIu64 ")", lo, hi);
      /* The selector: predicates, a user mask, gathers of two columns. */
      cs_selector *sel;
      cs_err err = {0};
      if (cs_selector_new(s, p, 2, &sel, &err) != CS_OK) continue;
      cs_gather_target tg[2];
      uint32_t nt = 0;
      for (uint32_t k = 0; k < sc->n_cols && nt < 2; k++)
        if (cs_type_width(sc->cols[(c + k) % sc->n_cols].type))
          tg[nt] = (cs_gather_target){(c + k) % sc->n_cols, outs + nt * n * 8, ovs + nt * n}, nt++;
      cs_select_batch b;
      memset(&b, 0, sizeof b);
      b.first = a, b.n = n - a, b.mask = mask, b.rows = rows, b.targets = tg, b.n_targets = nt;
      b.user_mask = (o & 1) ? user + a : NULL;
      b.want_rows = (o & 2) != 0;
      b.mask_gate = (double)(fz_mix(seed) % 3) / 2.0;
      b.count_from = a;
      cs_select_range(sel, &b);
      FZ_CHECK(b.n_selected <= b.n, "selected %" PRIu64 " of %" PRIu64, b.n_selected, b.n);
      if (b.rows_filled)
        for (uint64_t i = 0; i < b.n_selected; i++) {
          FZ_CHECK(rows[i] >= a && rows[i] < n && (i == 0 || rows[i - 1] < rows[i]), "selected row %" PRIu64,
                   rows[i]);
          FZ_CHECK(mask[rows[i] - a], "row %" PRIu64 " selected but not in the mask", rows[i]);
        }
      for (uint32_t t = 0; b.rows_filled && t < nt; t++)
        check_gather(s, tg[t].col, cs_type_width(sc->cols[tg[t].col].type), rows, b.n_selected, tg[t].out,
                     tg[t].out_valid, "select_range");
      cs_selector_free(sel);
      /* The list gather, ascending and not. */
      uint64_t k = n < 64 ? n : 64;
      for (uint64_t i = 0; i < k; i++) rows[i] = fz_mix(seed) % n;
      uint32_t bins[64];
      cs_select_rows(s, rows, k, false, bins, tg, nt, 1);
      for (uint32_t t = 0; t < nt; t++)
        check_gather(s, tg[t].col, cs_type_width(sc->cols[tg[t].col].type), rows, k, tg[t].out,
                     tg[t].out_valid, "select_rows");
      for (uint64_t i = 0; i < k; i++) rows[i] = i * n / k;
      cs_select_rows(s, rows, k, true, bins, tg, nt, 1);
      for (uint32_t t = 0; t < nt; t++)
        check_gather(s, tg[t].col, cs_type_width(sc->cols[tg[t].col].type), rows, k, tg[t].out,
                     tg[t].out_valid, "select_rows(ascending)");
    }
  }
  free(mask), free(user), free(outs), free(ovs), free(rows);
}

static void run_stats(const cs_store *s) {
  const cs_schema *sc = cs_store_schema(s);
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    cs_column_stats st;
    cs_store_column_stats(s, c, &st);
    g_sink += st.null_count + st.sorted + st.min.bits;
    FZ_CHECK(!st.sorted || st.null_count == 0, "sorted column with NULLs");
  }
  g_sink +=
      cs_store_generation(s) + cs_store_file_bytes(s) + cs_store_recovered(s) + cs_store_slot_damaged(s);
  g_sink += strlen(cs_store_path(s)) + cs_store_files(s) + cs_store_is_dataset(s);
}

/* verify=read opens as HEADER does; checking the chunks as they are read
** then finds exactly the checksum damage that verify finds. */
static void run_verify_read(cs_rc rh, const cs_err *eh, cs_rc rv, uint64_t *seed) {
  cs_store *s = NULL;
  cs_err er = {0};
  cs_rc rr = cs_store_open(g_path, CS_VERIFY_READ, &s, &er);
  FZ_CHECK(rr == rh && (rr == CS_OK || strcmp(er.msg, eh->msg) == 0),
           "open(READ) gave %s (%s), open(HEADER) %s (%s)", cs_rc_name(rr), er.msg, cs_rc_name(rh), eh->msg);
  if (!s) return;
  uint64_t n = cs_store_rows(s), rows[16];
  uint32_t nc = cs_store_schema(s)->n_cols;
  uint8_t *cols = malloc(nc);
  FZ_CHECK(cols != NULL, "out of memory");
  for (uint32_t c = 0; c < nc; c++) cols[c] = (uint8_t)(fz_mix(seed) & 1);
  cs_err ek = {0};
  /* Some rows of some columns first, then everything. */
  if (n) {
    for (int i = 0; i < 16; i++) rows[i] = fz_mix(seed) % n;
    cs_rc rk = cs_store_check_rows(s, rows, 16, cols, &ek);
    FZ_CHECK(rk == CS_OK || (rk == CS_ECORRUPT && starts_colstore(&ek) && rv != CS_OK), "check_rows: %s: %s",
             cs_rc_name(rk), ek.msg);
  }
  uint64_t nr = cs_store_records(s), a = nr ? fz_mix(seed) % nr : 0;
  cs_rc rk = cs_store_check_chunks(s, a, nr, cols, &ek);
  FZ_CHECK(rk == CS_OK || (rk == CS_ECORRUPT && starts_colstore(&ek) && rv != CS_OK), "check_chunks: %s: %s",
           cs_rc_name(rk), ek.msg);
  rk = cs_store_check_chunks(s, 0, nr, NULL, &ek);
  FZ_CHECK(rk == CS_OK || (rk == CS_ECORRUPT && starts_colstore(&ek) && rv != CS_OK), "check_chunks: %s: %s",
           cs_rc_name(rk), ek.msg);
  if (rv == CS_OK) FZ_CHECK(rk == CS_OK, "verify passed but check_chunks failed: %s", ek.msg);
  free(cols);
  cs_store_close(s);
}

/* colstore_verify's report (cs_store_verify_source): every part is well
** formed and named once; there is one iff the full open fails as damage
** (the first part being that open's error), a CS_DAMAGE_FILE part is the
** last (nothing of the file is checked after it); and where open(HEADER) passed, the
** checksum parts are exactly the chunks that a read (cs_store_check_chunks
** of that one chunk, verify=read) refuses. */
typedef struct report_acc {
  uint64_t n;
  uint64_t n_file;    /* CS_DAMAGE_FILE parts (the file's last one, if any) */
  uint64_t n_open;    /* parts of what open(HEADER) checks: all but RECORD and CHUNK */
  const cs_store *sh; /* the HEADER open, or NULL */
  uint64_t n_records; /* of the HEADER open, or 0 */
  uint32_t n_cols;
  uint64_t *hashes; /* of each part's message, to find one named twice */
  uint64_t cap;
  uint8_t *chunk_named; /* n_records * n_cols, capped: a checksum part for the cell */
  uint64_t n_cells;     /* cells chunk_named covers */
  char first[CS_ERR_MSG_BYTES];
} report_acc;

static void report_part(void *ctx, const cs_damage *d) {
  report_acc *a = ctx;
  FZ_CHECK(strcmp(d->path, g_path) == 0 && strncmp(d->msg, g_path, strlen(g_path)) == 0,
           "part '%s' does not name the file", d->msg);
  FZ_CHECK(d->kind >= CS_DAMAGE_FILE && d->kind <= CS_DAMAGE_PATCH, "part '%s' has kind %d", d->msg,
           (int)d->kind);
  bool whole = d->kind == CS_DAMAGE_FILE;
  FZ_CHECK(a->n_file == 0, "part '%s' after one that ends the file's checks", d->msg);
  a->n_file += whole;
  a->n_open += d->kind != CS_DAMAGE_RECORD && d->kind != CS_DAMAGE_CHUNK;
  FZ_CHECK(whole == (d->record == CS_DAMAGE_NO_RECORD) || d->kind == CS_DAMAGE_DELETIONS,
           "part '%s': record %" PRIu64, d->msg, d->record);
  if (a->n_records)
    FZ_CHECK(d->record == CS_DAMAGE_NO_RECORD || d->record < a->n_records, "part '%s': record out of range",
             d->msg);
  if (a->sh && d->record != CS_DAMAGE_NO_RECORD)
    FZ_CHECK(d->first_row == cs_store_record_first_row(a->sh, d->record) &&
                 d->n_rows == cs_store_record_rows(a->sh, d->record),
             "part '%s': rows [%" PRIu64 ", +%" PRIu64 ")", d->msg, d->first_row, d->n_rows);
  FZ_CHECK((d->record == CS_DAMAGE_NO_RECORD) == (d->n_rows == 0), "part '%s': %" PRIu64 " rows", d->msg,
           d->n_rows);
  if (a->n_cols)
    FZ_CHECK(d->column == CS_DAMAGE_NO_COLUMN || d->column < a->n_cols, "part '%s': column out of range",
             d->msg);
  FZ_CHECK(
      (d->kind == CS_DAMAGE_CHUNK || d->kind == CS_DAMAGE_DESCRIPTOR) == (d->column != CS_DAMAGE_NO_COLUMN),
      "part '%s' (kind %d) and its column %u", d->msg, (int)d->kind, d->column);
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 64;
    a->hashes = realloc(a->hashes, a->cap * sizeof *a->hashes);
    FZ_CHECK(a->hashes != NULL, "out of memory");
  }
  a->hashes[a->n] = fz_fnv(FZ_FNV_SEED, d->msg, strlen(d->msg));
  if (a->n++ == 0) snprintf(a->first, sizeof a->first, "%s", d->msg);
  if (d->kind == CS_DAMAGE_CHUNK && a->n_cols && d->record * a->n_cols + d->column < a->n_cells)
    a->chunk_named[d->record * a->n_cols + d->column]++;
}

static int u64_cmp(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static void run_verify_report(const cs_store *sh, cs_rc rh, cs_rc rf, const cs_err *ef) {
  report_acc a = {0};
  if (sh) {
    a.sh = sh, a.n_records = cs_store_records(sh), a.n_cols = cs_store_schema(sh)->n_cols;
    a.n_cells = a.n_records * a.n_cols < 4096 ? a.n_records * a.n_cols : 4096;
    a.chunk_named = calloc(a.n_cells ? a.n_cells : 1, 1);
    FZ_CHECK(a.chunk_named != NULL, "out of memory");
  }
  uint64_t n = 0;
  cs_err e = {0};
  cs_rc rc = cs_store_verify_source(g_path, report_part, &a, &n, &e);
  FZ_CHECK(n == a.n, "verify_source counted %" PRIu64 " parts but reported %" PRIu64, n, a.n);
  if (rf == CS_OK || rf == CS_ECORRUPT) {
    FZ_CHECK(rc == CS_OK, "verify_source failed with %s (%s) where open(FULL) gave %s", cs_rc_name(rc), e.msg,
             cs_rc_name(rf));
    FZ_CHECK((n > 0) == (rf == CS_ECORRUPT),
             "verify_source reported %" PRIu64 " parts where open(FULL) gave %s (%s)", n, cs_rc_name(rf),
             ef->msg);
    FZ_CHECK(n == 0 || strncmp(ef->msg + 10, a.first, strlen(a.first)) == 0,
             "first part '%s' is not the open's error '%s'", a.first, ef->msg);
  } else {
    FZ_CHECK(rc == rf && n == 0 && starts_colstore(&e),
             "verify_source gave %s (%s, %" PRIu64 " parts) where open(FULL) gave %s", cs_rc_name(rc), e.msg,
             n, cs_rc_name(rf));
  }
  FZ_CHECK(a.n_file <= 1, "%" PRIu64 " parts say the file cannot be read", a.n_file);
  FZ_CHECK(rh != CS_OK || a.n_open == 0, "a file that opens was reported damaged where open checks: %s",
           a.first);
  if (a.n > 1) qsort(a.hashes, a.n, sizeof *a.hashes, u64_cmp);
  for (uint64_t i = 1; i < a.n; i++) FZ_CHECK(a.hashes[i] != a.hashes[i - 1], "a part is reported twice");
  if (sh) {
    /* Each chunk read on its own through verify=read: refused iff named. */
    cs_store *sr = NULL;
    cs_err er = {0};
    FZ_CHECK(cs_store_open(g_path, CS_VERIFY_READ, &sr, &er) == CS_OK,
             "open(READ) failed where open(HEADER) passed: %s", er.msg);
    uint8_t *col = calloc(a.n_cols, 1);
    FZ_CHECK(col != NULL, "out of memory");
    for (uint64_t i = 0; i < a.n_cells; i++) {
      uint64_t r = i / a.n_cols;
      uint32_t c = (uint32_t)(i % a.n_cols);
      col[c] = 1;
      bool refused = cs_store_check_chunks(sr, r, r + 1, col, &er) != CS_OK;
      col[c] = 0;
      FZ_CHECK(refused == (a.chunk_named[i] == 1), "record %" PRIu64 ", column %u: read %s, named %u times",
               r, c, refused ? "refused" : "passed", a.chunk_named[i]);
    }
    free(col);
    cs_store_close(sr);
  }
  free(a.chunk_named);
  free(a.hashes);
}

/* ------------------------------------------------------------- one input */

/* One row of neutral values (NULL where allowed), committed: appended, or
** (row not NULL) given to position *row as an update. */
static cs_rc write_neutral_row(const cs_schema *sc, const uint64_t *row, cs_err *err) {
  cs_batch *b = NULL;
  cs_writer *w = NULL;
  cs_rc rc = cs_batch_new(sc, &b, err);
  for (uint32_t c = 0; rc == CS_OK && c < sc->n_cols; c++) {
    cs_type t = sc->cols[c].type;
    rc = sc->cols[c].nullable    ? cs_batch_put_null(b, c, err)
         : cs_type_is_integer(t) ? cs_batch_put_i64(b, c, 1, err)
         : cs_type_is_float(t)   ? cs_batch_put_f64(b, c, 0.5, err)
                                 : cs_batch_put_bytes(b, c, "x", 1, err);
  }
  if (rc == CS_OK) cs_batch_end_row(b);
  if (rc == CS_OK) rc = cs_writer_append(g_path, NULL, &w, err);
  if (rc == CS_OK) rc = row ? cs_writer_update(w, row, 1, b, NULL, err) : cs_writer_write(w, b, err);
  if (rc == CS_OK)
    rc = cs_writer_commit(w, err);
  else
    cs_writer_abort(w);
  cs_batch_free(b);
  return rc;
}

/* Content fingerprint of rows [0, n) of every column (varlen values that do
** not read count as a fixed marker). */
static uint64_t rows_digest(const cs_store *s, uint64_t n_rows) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t h = FZ_FNV_SEED;
  for (uint64_t r = 0; r < cs_store_records(s); r++) {
    uint64_t first = cs_store_record_first_row(s, r), n = cs_store_record_rows(s, r);
    if (first >= n_rows) break;
    if (n > n_rows - first) n = n_rows - first;
    for (uint32_t c = 0; c < sc->n_cols; c++) {
      const cs_chunk *ch = cs_store_chunk(s, r, c);
      size_t w = cs_type_width(sc->cols[c].type);
      for (uint64_t k = 0; k < n; k++) {
        uint8_t valid = cs_chunk_is_valid(ch, k);
        h = fz_fnv(h, &valid, 1);
        if (!valid) continue;
        if (w) {
          h = fz_fnv(h, (const uint8_t *)ch->data + k * w, w);
        } else {
          const uint8_t *p;
          uint64_t len;
          cs_err err;
          if (cs_chunk_varlen(ch, k, &p, &len, &err) == CS_OK)
            h = fz_fnv(fz_fnv(h, &len, 8), p, len);
          else
            h = fz_fnv(h, "?", 1);
        }
      }
    }
  }
  return h;
}

/* The file still holds exactly these bytes (a failed append left it so). */
static void file_check_unchanged(const uint8_t *data, size_t size) {
  uint8_t *now = malloc(size + 1);
  FZ_CHECK(now != NULL, "out of memory");
  ssize_t got = pread(g_fd, now, size + 1, 0);
  FZ_CHECK(got == (ssize_t)size && memcmp(now, data, size) == 0,
           "a failed append or update changed the file (%zd bytes now)", got);
  free(now);
}

static void run_one(const uint8_t *data, size_t size) {
  file_put(data, size);
  uint64_t seed = fz_fnv(FZ_FNV_SEED, data, size < 4096 ? size : 4096);
  cs_store *sh = NULL, *sf = NULL;
  cs_err eh = {0}, ef = {0};
  cs_rc rh = cs_store_open(g_path, CS_VERIFY_HEADER, &sh, &eh);
  cs_rc rf = cs_store_open(g_path, CS_VERIFY_FULL, &sf, &ef);
  FZ_CHECK(rh == CS_OK || starts_colstore(&eh), "open(HEADER) message: %s", eh.msg);
  FZ_CHECK(rf == CS_OK || starts_colstore(&ef), "open(FULL) message: %s", ef.msg);
  FZ_CHECK((rh == CS_OK) == (sh != NULL) && (rf == CS_OK) == (sf != NULL), "open result and handle disagree");
  if (rh != CS_OK) {
    FZ_CHECK(rf == rh && strcmp(ef.msg, eh.msg) == 0,
             "open(HEADER) failed with %s (%s) but open(FULL) gave %s (%s)", cs_rc_name(rh), eh.msg,
             cs_rc_name(rf), ef.msg);
    run_verify_report(NULL, rh, rf, &ef);
    return;
  }
  run_verify_report(sh, rh, rf, &ef);
  cs_err ev = {0};
  cs_rc rv = cs_store_verify(sh, &ev);
  FZ_CHECK(rv == rf && (rv == CS_OK || strcmp(ev.msg, ef.msg) == 0),
           "verify after open(HEADER) gave %s (%s), open(FULL) %s (%s)", cs_rc_name(rv), ev.msg,
           cs_rc_name(rf), ef.msg);
  if (sf) {
    FZ_CHECK(cs_store_rows(sf) == cs_store_rows(sh) && cs_store_records(sf) == cs_store_records(sh),
             "the two opens disagree");
    cs_store_close(sf);
  }
  run_verify_read(rh, &eh, rv, &seed);
  read_chunks(sh, rv == CS_OK);
  run_gathers(sh, &seed);
  run_predicates(sh, &seed, data, size);
  run_stats(sh);
  bool current = false;
  cs_err ec = {0};
  FZ_CHECK(cs_store_is_current(sh, &current, &ec) == CS_OK && current, "a fresh snapshot is not current: %s",
           ec.msg);

  /* Appending beside the open snapshot: the rows stay (in the snapshot
  ** and in the new state), one more arrives, verification still holds. */
  uint64_t rows = cs_store_rows(sh), digest = rows_digest(sh, rows);
  cs_err ea = {0};
  cs_rc ra = write_neutral_row(cs_store_schema(sh), NULL, &ea);
  if (ra != CS_OK) {
    FZ_CHECK(starts_colstore(&ea), "append message: %s", ea.msg);
    file_check_unchanged(data, size);
  } else {
    cs_store *sn = NULL;
    cs_err en = {0};
    cs_rc rn = cs_store_open(g_path, rv == CS_OK ? CS_VERIFY_FULL : CS_VERIFY_HEADER, &sn, &en);
    FZ_CHECK(rn == CS_OK, "after an append the store does not open: %s", en.msg);
    FZ_CHECK(cs_store_rows(sn) == rows + 1, "append: %" PRIu64 " rows, expected %" PRIu64, cs_store_rows(sn),
             rows + 1);
    FZ_CHECK(rows_digest(sn, rows) == digest, "append changed the old rows");
    FZ_CHECK(cs_store_is_current(sh, &current, &ec) == CS_OK && !current,
             "the old snapshot is still current");
    cs_store_close(sn);
  }
  FZ_CHECK(rows_digest(sh, rows) == digest, "the open snapshot changed under an append");
  cs_store_close(sh);

  /* Updating the last position of what the file now holds (a patch block,
  ** format 2): the other rows stay, the count stays, verification still
  ** holds; a failed update (a damaged chunk it must read) changes nothing. */
  cs_store *su = NULL;
  cs_err eu = {0};
  if (cs_store_open(g_path, CS_VERIFY_HEADER, &su, &eu) != CS_OK) return;
  uint64_t n_u = cs_store_rows(su);
  bool full_ok = cs_store_verify(su, &eu) == CS_OK;
  if (n_u == 0 || cs_store_row_deleted(su, n_u - 1)) {
    cs_store_close(su);
    return;
  }
  uint64_t digest_u = rows_digest(su, n_u - 1), size_u = cs_store_file_bytes(su);
  uint8_t *before = malloc(size_u ? size_u : 1);
  FZ_CHECK(before != NULL && pread(g_fd, before, size_u, 0) == (ssize_t)size_u, "reading the file back");
  uint64_t last = n_u - 1;
  cs_rc ru = write_neutral_row(cs_store_schema(su), &last, &eu);
  if (ru != CS_OK) {
    FZ_CHECK(starts_colstore(&eu), "update message: %s", eu.msg);
    file_check_unchanged(before, size_u);
  } else {
    cs_store *sn = NULL;
    cs_err en = {0};
    cs_rc rn = cs_store_open(g_path, full_ok ? CS_VERIFY_FULL : CS_VERIFY_HEADER, &sn, &en);
    FZ_CHECK(rn == CS_OK, "after an update the store does not open: %s", en.msg);
    FZ_CHECK(cs_store_rows(sn) == n_u, "update: %" PRIu64 " rows, expected %" PRIu64, cs_store_rows(sn), n_u);
    FZ_CHECK(rows_digest(sn, n_u - 1) == digest_u, "update changed other rows");
    cs_store_close(sn);
  }
  FZ_CHECK(rows_digest(su, n_u - 1) == digest_u, "the open snapshot changed under an update");
  free(before);
  cs_store_close(su);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  file_init();
  run_one(data, size);
  uint8_t *copy = malloc(size ? size : 1);
  FZ_CHECK(copy != NULL, "out of memory");
  memcpy(copy, data, size);
  reseal(copy, size);
  /* COLSTORE_FUZZ_RESEALED=path keeps the resealed copy, to study a failure
  ** of the second run with other tools. */
  const char *keep = getenv("COLSTORE_FUZZ_RESEALED");
  if (keep && *keep) {
    FILE *f = fopen(keep, "wb");
    if (f) fwrite(copy, 1, size, f), fclose(f);
  }
  if (memcmp(copy, data, size) != 0) run_one(copy, size);
  free(copy);
  return 0;
}
