/*
** cs_store.c - opening a store: commit slots, footer, recovery, verification.
**
** Open maps the whole file read-only and trusts nothing in it until checked:
** the preamble and schema by their checksums, the newest valid commit slot,
** then the footer that slot names.  Every chunk descriptor is bounds-checked
** against its record and column type here, at the door, so the cursor and
** the kernels can use the resolved pointers without checks of their own.
** What open does not read (the data itself) is covered by the per-chunk
** checksums that verify=full and colstore_verify() check.
**
** Open is O(records) in memory work but O(1) in I/O and in the data size:
** it copies the footer's directory into the heap, because a later commit
** rewrites the bytes where this footer lives (see cs_format.h); committed
** records themselves are never rewritten, so pointers into them stay valid
** for the life of the snapshot.
**
** cache=memory (cs_cache.c): once the committed extent is known, the
** mapping is swapped for a private copy of [0, data_end) before the chunk
** pointers are resolved, so everything after that point reads the copy.
**
** Recovery: when the slot's footer is missing or fails its checksum, the
** record headers are walked forward from data_offset to the slot's
** data_end; each carries its own checksum and a copy of its descriptors.
** If neither slot is valid, the walk runs to the end of the file and keeps
** the records proven committed: every generation below the highest seen
** (a transaction starts only after the previous one committed), and the
** highest only if a valid footer of that generation follows it.
**
** A single file is one of a store's variants: its is-current, reopen and
** verify are file_ops, at the end, and cs_store_is_current/reopen/verify
** and cs_store_close dispatch through s->ops, so this file never names a
** dataset's or a view's functions (cs_dataset.c, write/cs_view.c bring
** their own tables).
**
** colstore_verify (cs__store_verify_file, for cs_store_verify_source in
** cs_dataset.c, which expands a dataset into its files): the same load
** and checks with a damage sink (cs_store_internal.h), through which each check
** that fails reports its part and goes on instead of failing the open;
** a descriptor or patch block that fails marks its chunks skipped, so the
** hashing that follows never follows a pointer that was not checked.  The
** store such a load returns is only verified and closed.
**
** Format 2 (docs/format.md 14).  The data region also holds deletion
** vectors and patch blocks, each after its record.  A footer descriptor may
** be a patch's (CS_CHUNK_ABSOLUTE, an UPDATE's new chunk): it is checked
** against its patch block (cs_patch.c) instead of its record, and resolved
** into the mapping from the file's start instead of the record's, after
** which nothing downstream can tell it from a record's own chunk.  The
** forward scan reads both kinds of block between the records, keeps them
** under the same generation rules, and applies them in file order,
** counting the bytes they supersede as the writer does.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_store_internal.h"

static const cs__store_ops file_ops; /* a single file's operations, at the end of the file */

static bool slot_valid(const cs_disk_slot *s) {
  return memcmp(s->magic, CS_MAGIC_SLOT, CS_MAGIC_BYTES) == 0 && s->checksum == cs__hash(s, 56) &&
         s->generation > 0;
}

/* cs__slots_read for a file of file_bytes bytes (a caller that has just
** fstat'ed the descriptor saves a system call per freshness check). */
static cs_rc slots_read_sized(int fd, uint64_t file_bytes, const char *path, cs_disk_slot *out,
                              bool *out_damaged, cs_err *err) {
  cs_disk_slot s[2];
  memset(s, 0, sizeof s);
  /* A short file may hold only one slot; a missing slot is simply invalid. */
  if (file_bytes >= CS_SLOT0_OFFSET + sizeof s[0]) {
    cs_rc rc = cs__pread_full(fd, &s[0], sizeof s[0], CS_SLOT0_OFFSET, path, err);
    if (rc) return rc;
  }
  if (file_bytes >= CS_SLOT1_OFFSET + sizeof s[1]) {
    cs_rc rc = cs__pread_full(fd, &s[1], sizeof s[1], CS_SLOT1_OFFSET, path, err);
    if (rc) return rc;
  }
  bool v0 = slot_valid(&s[0]), v1 = slot_valid(&s[1]);
  if (!v0 && !v1) return cs_err_set(err, CS_ECORRUPT, "colstore: %s: both commit slots are damaged", path);
  *out = (v0 && (!v1 || s[0].generation > s[1].generation)) ? s[0] : s[1];
  /* A slot that was never written is all zeros; any other invalid slot is
  ** a torn commit (a crash) or damage, which open cannot tell apart. */
  static const cs_disk_slot zero;
  if (out_damaged)
    out_damaged[0] =
        (!v0 && memcmp(&s[0], &zero, sizeof zero) != 0) || (!v1 && memcmp(&s[1], &zero, sizeof zero) != 0);
  return CS_OK;
}

cs_rc cs__slots_read(int fd, const char *path, cs_disk_slot *out, bool *out_damaged, cs_err *err) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return cs_err_set(err, CS_EIO, "colstore: %s: stat failed: %s", path, strerror(errno));
  return slots_read_sized(fd, (uint64_t)st.st_size, path, out, out_damaged, err);
}

/* ---------------------------------------------------------------- schema */

cs_rc cs__schema_encode(const cs_schema *schema, uint8_t **out, uint64_t *out_bytes, cs_err *err) {
  uint64_t n = CS_SCHEMA_HEAD_BYTES;
  for (uint32_t i = 0; i < schema->n_cols; i++) n += CS_SCHEMA_COL_HEAD_BYTES + strlen(schema->cols[i].name);
  uint8_t *p = cs__mem_calloc(1, n);
  if (!p) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory encoding a schema");
  uint32_t n_cols = schema->n_cols;
  memcpy(p, &n_cols, 4);
  uint64_t at = CS_SCHEMA_HEAD_BYTES;
  for (uint32_t i = 0; i < n_cols; i++) {
    uint16_t len = (uint16_t)strlen(schema->cols[i].name);
    p[at] = (uint8_t)schema->cols[i].type;
    p[at + 1] = schema->cols[i].nullable ? 1 : 0;
    memcpy(p + at + 2, &len, 2);
    memcpy(p + at + 4, schema->cols[i].name, len);
    at += CS_SCHEMA_COL_HEAD_BYTES + len;
  }
  *out = p;
  *out_bytes = n;
  return CS_OK;
}

static cs_rc schema_decode(cs_store *s, const uint8_t *p, uint64_t n, cs_err *err) {
  uint32_t n_cols;
  if (n < CS_SCHEMA_HEAD_BYTES) goto bad;
  memcpy(&n_cols, p, 4);
  if (n_cols == 0 || n_cols > CS_MAX_COLUMNS) goto bad;
  s->cols = cs__mem_calloc(n_cols, sizeof *s->cols);
  s->names = cs__mem_malloc(n); /* names are shorter than the block holding them */
  if (!s->cols || !s->names) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory reading a schema");
  uint64_t at = CS_SCHEMA_HEAD_BYTES, name_at = 0;
  for (uint32_t i = 0; i < n_cols; i++) {
    if (n - at < CS_SCHEMA_COL_HEAD_BYTES) goto bad;
    uint16_t len;
    memcpy(&len, p + at + 2, 2);
    if (p[at] < 1 || p[at] > CS_TYPE_MAX || p[at + 1] > 1 || len == 0 ||
        n - at - CS_SCHEMA_COL_HEAD_BYTES < len)
      goto bad;
    s->cols[i].type = (cs_type)p[at];
    s->cols[i].nullable = p[at + 1];
    memcpy(s->names + name_at, p + at + 4, len);
    s->names[name_at + len] = 0;
    s->cols[i].name = s->names + name_at;
    name_at += len + 1u;
    at += CS_SCHEMA_COL_HEAD_BYTES + len;
  }
  if (at != n) goto bad;
  s->schema.n_cols = n_cols;
  s->schema.cols = s->cols;
  return CS_OK;
bad:
  return cs_err_set(err, CS_ECORRUPT, "colstore: %s: schema block is malformed", s->path);
}

/* Checks a record header at off (inside [data_offset, limit)) against the
** schema; on success *out_hdr points at it in the mapping. */
static cs_rc record_header_check(const cs_store *s, uint64_t off, uint64_t limit, uint64_t rec,
                                 const cs_disk_record **out_hdr, cs_err *err) {
  if (!cs__span_in(off, sizeof(cs_disk_record), s->data_offset, limit))
    return cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu header lies past the committed data",
                      s->path, (unsigned long long)rec);
  const cs_disk_record *h = (const cs_disk_record *)(s->map + off);
  uint64_t hb = cs__record_header_bytes(s->schema.n_cols);
  if (memcmp(h->magic, CS_MAGIC_RECORD, CS_MAGIC_BYTES) != 0 || h->checksum != cs__hash(h, 56) ||
      h->n_cols != s->schema.n_cols || h->header_bytes != hb || h->record_bytes % CS_ALIGN ||
      !cs__span_in(off, h->record_bytes, s->data_offset, limit) || h->record_bytes < hb)
    return cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu at offset %llu has a damaged header",
                      s->path, (unsigned long long)rec, (unsigned long long)off);
  if (h->descriptors_checksum != cs__hash(h + 1, (size_t)h->n_cols * sizeof(cs_disk_chunk)))
    return cs_err_set(err, CS_ECORRUPT,
                      "colstore: %s: record %llu at offset %llu has damaged column descriptors", s->path,
                      (unsigned long long)rec, (unsigned long long)off);
  *out_hdr = h;
  return CS_OK;
}

/* ------------------------------------------------------------- directory */

static cs_rc directory_alloc(cs_store *s, uint64_t n_records, cs_err *err) {
  uint32_t nc = s->schema.n_cols;
  s->n_records = n_records;
  /* Every element is written before it is read: malloc, not calloc
  ** (zeroing was a quarter of open's instructions).  n_records is bounded
  ** by the footer or file size, so the products cannot overflow. */
  uint64_t cells = n_records ? n_records * nc : 1;
  s->first_rows = cs__mem_malloc((n_records + 1) * sizeof *s->first_rows);
  s->entries = cs__mem_malloc((n_records ? n_records : 1) * sizeof *s->entries);
  s->ext = cs__mem_malloc((n_records ? n_records : 1) * sizeof *s->ext);
  s->disk_chunks = cs__mem_malloc(cells * sizeof *s->disk_chunks);
  s->chunks = cs__mem_malloc(cells * sizeof *s->chunks);
  if (!s->first_rows || !s->entries || !s->ext || !s->disk_chunks || !s->chunks)
    return cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory for a directory of %llu records", s->path,
                      (unsigned long long)n_records);
  return CS_OK;
}

/* Resolves and checks every entry once entries/disk_chunks are filled.  A
** record's own chunks are checked against the record; a patch's chunk
** (CS_CHUNK_ABSOLUTE, layout 2 only) against its patch block, which is
** checked once per record (blocks[0, n_cols): the ones done, allocated at
** the first; blocks[n_cols, 2 n_cols): the ones that failed).  With a sink
** (cs_store_verify_source) a chunk that fails is reported, marked skip and
** left unresolved, and the rest are checked: a damaged patch block once,
** the chunks it holds skipped with it.  An entry that fails stops the
** directory either way (the caller reports the file). */
static cs_rc directory_resolve(cs_store *s, uint64_t limit, cs_err *err) {
  cs__damage_sink *sink = s->damage;
  uint32_t nc = s->schema.n_cols, n_blocks = 0, n_bad = 0;
  uint64_t hb = cs__record_header_bytes(nc), prev_end = s->data_offset, rows = 0, *blocks = NULL;
  cs_rc rc = CS_OK;
  if (sink && !(sink->skip = cs__mem_calloc(s->n_records ? s->n_records * nc : 1, 1)))
    return cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory for a directory of %llu records", s->path,
                      (unsigned long long)s->n_records);
  for (uint64_t r = 0; r < s->n_records && rc == CS_OK; r++) {
    const cs_disk_entry *e = &s->entries[r];
    if (e->record_offset < prev_end || e->record_offset % CS_ALIGN || e->record_bytes < hb ||
        !cs__span_in(e->record_offset, e->record_bytes, s->data_offset, limit) || e->n_rows == 0 ||
        rows + e->n_rows < rows) {
      rc = cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu lies outside the committed data", s->path,
                      (unsigned long long)r);
      break;
    }
    prev_end = e->record_offset + e->record_bytes;
    s->first_rows[r] = rows;
    rows += e->n_rows;
    n_blocks = n_bad = 0;
    for (uint32_t c = 0; c < nc && rc == CS_OK; c++) {
      const cs_disk_chunk *dc = &s->disk_chunks[r * nc + c];
      bool block_bad = false;
      if (!(dc->flags & CS_CHUNK_ABSOLUTE)) {
        rc = cs__chunk_check(dc, &s->cols[c], e->n_rows, hb, e->record_bytes, false, s->path, r, err);
      } else if (!blocks && !(blocks = cs__mem_malloc(2 * nc * sizeof *blocks))) {
        rc = cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory checking patched chunks", s->path);
      } else {
        for (uint32_t i = 0; i < n_bad && !block_bad; i++)
          block_bad = blocks[nc + i] == cs__patch_block_of(dc);
        if (block_bad)
          rc = CS_ECORRUPT; /* reported with the block's first column */
        else if ((rc = cs__patched_chunk_check(s, r, c, limit, blocks, &n_blocks, &block_bad, err)) ==
                     CS_ECORRUPT &&
                 sink) {
          if (block_bad) blocks[nc + n_bad++] = cs__patch_block_of(dc);
          cs__damage_note(sink, s, block_bad ? CS_DAMAGE_PATCH : CS_DAMAGE_DESCRIPTOR, r,
                          block_bad ? CS_DAMAGE_NO_COLUMN : c, err);
        }
      }
      if (rc == CS_ECORRUPT && sink) {
        if (!(dc->flags & CS_CHUNK_ABSOLUTE)) cs__damage_note(sink, s, CS_DAMAGE_DESCRIPTOR, r, c, err);
        sink->skip[r * nc + c] = 1;
        memset(&s->chunks[r * nc + c], 0, sizeof s->chunks[r * nc + c]);
        rc = CS_OK;
        continue;
      }
      if (rc) break;
      cs__chunk_resolve(s->map + cs__chunk_base(e, dc) + dc->chunk_offset, dc, &s->chunks[r * nc + c]);
    }
  }
  cs__mem_free(blocks);
  if (rc) return rc;
  s->first_rows[s->n_records] = rows;
  s->n_rows = rows;
  cs__store_uniform_init(s);
  return cs__dels_resolve(s, limit, err);
}

static cs_rc footer_parse(cs_store *s, const cs_disk_slot *slot, const uint8_t *bytes, cs_err *err);

static cs_rc footer_load(cs_store *s, const cs_disk_slot *slot, cs_err *err) {
  if (!cs__span_in(slot->footer_offset, slot->footer_bytes, s->data_offset, s->map_bytes) ||
      slot->footer_bytes < sizeof(cs_disk_footer))
    return CS_ECORRUPT;
  /* A concurrent append overwrites this footer in place, so it is read once
  ** into private memory (pread: no page faults on the fresh mapping) and
  ** checked and parsed only there. */
  uint8_t *copy = cs__mem_malloc(slot->footer_bytes);
  if (!copy)
    return cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory for a footer of %llu bytes", s->path,
                      (unsigned long long)slot->footer_bytes);
  cs_err ignored;
  cs_rc rc = cs__pread_full(s->fd, copy, slot->footer_bytes, slot->footer_offset, s->path, &ignored);
  if (rc == CS_OK)
    rc = footer_parse(s, slot, copy, err);
  else if (rc == CS_ECORRUPT)
    rc = CS_ECORRUPT; /* shorter than the slot says: recover */
  else
    rc = cs_err_set(err, rc, "%s", ignored.msg);
  cs__mem_free(copy);
  return rc;
}

static cs_rc footer_parse(cs_store *s, const cs_disk_slot *slot, const uint8_t *bytes, cs_err *err) {
  uint32_t nc = s->schema.n_cols;
  const cs_disk_footer *f = (const cs_disk_footer *)(const void *)bytes;
  /* Layout 1 (v1 files, and a v2 file whose upgrade crashed before its
  ** commit) or layout 2: an extension after the header, longer entries. */
  bool v2 = f->layout == CS_FOOTER_LAYOUT_2;
  uint64_t eb = v2 ? cs__footer_entry_bytes_v2(nc) : cs__footer_entry_bytes(nc);
  uint64_t head = v2 ? CS_FOOTER_HEAD_BYTES_V2 : sizeof *f;
  if (memcmp(f->magic, CS_MAGIC_FOOTER, CS_MAGIC_BYTES) != 0 || f->generation != slot->generation ||
      f->n_cols != nc || (f->layout != 0 && !v2) || f->entry_bytes != eb ||
      f->footer_bytes != slot->footer_bytes || slot->footer_bytes < head ||
      f->n_records > (slot->footer_bytes - head) / eb || head + f->n_records * eb != slot->footer_bytes ||
      cs__hash(f, slot->footer_bytes) != slot->footer_checksum)
    /* The slot's checksum covers the whole footer; the footer's own
    ** checksum is for a forward scan that finds it without a slot. */
    return CS_ECORRUPT;
  cs_rc rc = directory_alloc(s, f->n_records, err);
  if (rc) return rc;
  const uint8_t *p = bytes + head;
  size_t xb = v2 ? sizeof(cs_disk_entry_ext) : 0;
  for (uint64_t r = 0; r < f->n_records; r++, p += eb) {
    memcpy(&s->entries[r], p, sizeof(cs_disk_entry));
    if (v2)
      memcpy(&s->ext[r], p + sizeof(cs_disk_entry), xb);
    else
      memset(&s->ext[r], 0, sizeof s->ext[r]);
    memcpy(&s->disk_chunks[r * nc], p + sizeof(cs_disk_entry) + xb, nc * sizeof(cs_disk_chunk));
  }
  if (v2) {
    const cs_disk_footer_ext *fx = (const cs_disk_footer_ext *)(const void *)(f + 1);
    s->n_deleted = fx->n_deleted;
    s->free_bytes = fx->free_bytes;
  }
  s->footer_layout = v2 ? 2 : 1;
  if (f->n_rows != slot->n_rows) return CS_ECORRUPT;
  return CS_OK;
}

/* A deletion vector or a patch the scan found (format 2): applied once the
** scan knows which generations it keeps.  x is a vector's entry extension;
** a patch is read again at off. */
typedef struct scan_block {
  uint64_t rec, generation, off;
  bool patch;
  cs_disk_entry_ext x;
} scan_block;

/* The scanned record at offset off among entries[0, n) (increasing
** offsets), or n. */
static uint64_t scan_find_record(const cs_disk_entry *entries, uint64_t n, uint64_t off) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (entries[mid].record_offset < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && entries[lo].record_offset == off ? lo : n;
}

/* The block of a kind format 2 adds at off: a deletion vector or a patch,
** checked as open checks one a footer names, its record found among
** entries[0, n) (scanned before it).  *out filled; false when it fails
** (the scan stops there as at a damaged record). */
static bool scan_v2_block(const cs_store *s, uint64_t off, uint64_t limit, const cs_disk_entry *entries,
                          uint64_t n, scan_block *out) {
  cs_err scratch;
  const cs_disk_delvec *dv = (const cs_disk_delvec *)(const void *)(s->map + off);
  const cs_disk_patch *ph = (const cs_disk_patch *)(const void *)(s->map + off);
  out->off = off;
  out->patch = memcmp(ph->magic, CS_MAGIC_PATCH, CS_MAGIC_BYTES) == 0;
  /* The two headers share magic, generation and record_offset, and end
  ** with their checksum. */
  if (dv->checksum != cs__hash(dv, 56)) return false;
  out->generation = dv->generation;
  out->rec = scan_find_record(entries, n, dv->record_offset);
  if (out->rec == n) return false;
  if (out->patch) return cs__patch_check(s, off, limit, &entries[out->rec], out->rec, &scratch) == CS_OK;
  out->x = (cs_disk_entry_ext){off, dv->n_deleted, dv->bitmap_checksum, 0};
  return cs__delvec_check(s, out->rec, &entries[out->rec], &out->x, limit, &scratch) == CS_OK;
}

/* Applies the patch at off to record rec of s's directory: each item
** replaces its column's descriptor; the replaced chunks, and the headers of
** earlier patches left with no live chunk, become free space (the rule the
** writer applies, cs_writer.c).  old and orphans: room for n_cols. */
static void scan_patch_apply(cs_store *s, uint64_t rec, uint64_t off, cs_disk_chunk *old, uint64_t *orphans) {
  uint32_t nc = s->schema.n_cols;
  const cs_disk_patch *h = (const cs_disk_patch *)(const void *)(s->map + off);
  const cs_disk_patch_item *items = (const cs_disk_patch_item *)(const void *)(h + 1);
  cs_disk_chunk *live = &s->disk_chunks[rec * nc];
  for (uint32_t k = 0; k < h->n_chunks; k++) {
    old[k] = live[items[k].column];
    s->free_bytes += old[k].chunk_bytes;
    live[items[k].column] = items[k].chunk;
  }
  uint32_t n_orphans = cs__patch_orphans(old, h->n_chunks, live, nc, orphans);
  for (uint32_t k = 0; k < n_orphans; k++)
    s->free_bytes += ((const cs_disk_patch *)(const void *)(s->map + orphans[k]))->header_bytes;
}

/* Forward scan over the blocks (records, deletion vectors, patches) in
** [data_offset, limit). */
static cs_rc directory_scan(cs_store *s, uint64_t limit, bool bounded, cs_err *err) {
  uint32_t nc = s->schema.n_cols;
  uint64_t cap = 16, n = 0, off = s->data_offset, max_gen = 0, n_blk = 0, cap_blk = 0, n_patches = 0;
  uint64_t newest_off = s->data_offset; /* where the newest generation's first block starts */
  bool newest_sealing = false;          /* the newest generation's writer seals its commits */
  cs_disk_entry *entries = cs__mem_malloc(cap * sizeof *entries);
  cs_disk_chunk *dcs = cs__mem_malloc(cap * nc * sizeof *dcs), *old = NULL;
  scan_block *blks = NULL;
  uint64_t *orphans = NULL;
  cs_rc rc = CS_OK;
  if (!entries || !dcs) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory scanning records", s->path);
    goto done;
  }
  while (off < limit) {
    const cs_disk_record *h;
    cs_err scratch;
    const char *kind = (const char *)(s->map + off);
    if (cs__span_in(off, sizeof *h, s->data_offset, limit) &&
        (memcmp(kind, CS_MAGIC_DELVEC, CS_MAGIC_BYTES) == 0 ||
         memcmp(kind, CS_MAGIC_PATCH, CS_MAGIC_BYTES) == 0)) {
      scan_block b;
      if (!scan_v2_block(s, off, limit, entries, n, &b)) break;
      if (n_blk == cap_blk) {
        cap_blk = cap_blk ? cap_blk * 2 : 16;
        scan_block *b2 = cs__mem_realloc(blks, cap_blk * sizeof *blks);
        if (!b2) {
          rc = cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory scanning records", s->path);
          goto done;
        }
        blks = b2;
      }
      blks[n_blk++] = b;
      n_patches += b.patch;
      if (b.generation > max_gen) newest_off = off;
      if (b.generation >= max_gen) newest_sealing = true; /* only sealing writers write vectors and patches */
      if (b.generation > max_gen) max_gen = b.generation;
      off += b.patch ? ((const cs_disk_patch *)(const void *)kind)->block_bytes
                     : ((const cs_disk_delvec *)(const void *)kind)->block_bytes;
      continue;
    }
    if (record_header_check(s, off, limit, n, &h, &scratch) != CS_OK) break;
    const cs_disk_chunk *dc = (const cs_disk_chunk *)(h + 1);
    if (h->n_rows == 0) break;
    bool ok = true;
    for (uint32_t c = 0; c < nc && ok; c++)
      ok = cs__chunk_check(&dc[c], &s->cols[c], h->n_rows, h->header_bytes, h->record_bytes, false, s->path,
                           n, &scratch) == CS_OK;
    if (!ok) break;
    if (n == cap) {
      cap *= 2;
      cs_disk_entry *e2 = cs__mem_realloc(entries, cap * sizeof *entries);
      if (e2) entries = e2;
      cs_disk_chunk *d2 = e2 ? cs__mem_realloc(dcs, cap * nc * sizeof *dcs) : NULL;
      if (d2) dcs = d2;
      if (!e2 || !d2) {
        rc = cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory scanning records", s->path);
        goto done;
      }
    }
    entries[n] = (cs_disk_entry){off, h->n_rows, h->record_bytes, h->generation};
    memcpy(&dcs[n * nc], dc, nc * sizeof *dcs);
    if (h->generation > max_gen) newest_off = off;
    if (h->generation >= max_gen) newest_sealing = (h->flags & CS_RECORD_SEALED) != 0;
    if (h->generation > max_gen) max_gen = h->generation;
    n++;
    off += h->record_bytes;
  }
  if (bounded && off != limit) {
    rc = cs_err_set(err, CS_ECORRUPT,
                    "colstore: %s: footer is damaged and record %llu at offset %llu cannot be recovered",
                    s->path, (unsigned long long)n, (unsigned long long)off);
    goto done;
  }
  if (!bounded) {
    /* Keep the newest generation only if its footer follows it intact and
    ** its commit seal follows the footer: a footer alone is written by
    ** prepare, before the commit point (cs_format.h). */
    const cs_disk_footer *f = (const cs_disk_footer *)(s->map + off);
    bool sealed = cs__span_in(off, sizeof *f, s->data_offset, s->map_bytes) &&
                  memcmp(f->magic, CS_MAGIC_FOOTER, CS_MAGIC_BYTES) == 0 && f->generation == max_gen &&
                  cs__span_in(off, f->footer_bytes, s->data_offset, s->map_bytes) &&
                  f->footer_bytes >= sizeof *f &&
                  f->checksum == cs__hash_seeded(f + 1, f->footer_bytes - sizeof *f, cs__hash(f, 56));
    if (sealed && newest_sealing) {
      const cs_disk_slot *seal = (const cs_disk_slot *)(const void *)(s->map + off + f->footer_bytes);
      sealed = cs__span_in(off + f->footer_bytes, sizeof *seal, s->data_offset, s->map_bytes) &&
               memcmp(seal->magic, CS_MAGIC_SEAL, CS_MAGIC_BYTES) == 0 &&
               seal->checksum == cs__hash(seal, 56) && seal->generation == max_gen &&
               seal->footer_offset == off && seal->data_end == off && seal->footer_bytes == f->footer_bytes &&
               seal->footer_checksum == cs__hash(f, f->footer_bytes);
    }
    if (!sealed)
      while (n > 0 && entries[n - 1].generation == max_gen) n--;
    /* A transaction writes all its blocks at the previous data end, so
    ** the newest generation's blocks are the tail from newest_off on. */
    s->data_end = sealed ? off : newest_off;
    s->generation = sealed ? max_gen : (max_gen ? max_gen - 1 : 0);
  }
  rc = directory_alloc(s, n, err);
  if (rc) goto done;
  if (n_patches &&
      (!(old = cs__mem_malloc(nc * sizeof *old)) || !(orphans = cs__mem_malloc(nc * sizeof *orphans)))) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory scanning records", s->path);
    goto done;
  }
  memcpy(s->entries, entries, n * sizeof *entries);
  if (n) memcpy(s->disk_chunks, dcs, n * nc * sizeof *dcs);
  memset(s->ext, 0, (n ? n : 1) * sizeof *s->ext);
  /* The blocks of the kept generations, in file order: a vector replaces
  ** the record's previous one, a patch the chunks of its columns; what they
  ** replace becomes free space. */
  s->n_deleted = s->free_bytes = 0;
  for (uint64_t k = 0; k < n_blk; k++) {
    const scan_block *d = &blks[k];
    if (d->generation > s->generation || d->rec >= n) continue;
    if (d->patch) {
      scan_patch_apply(s, d->rec, d->off, old, orphans);
      continue;
    }
    cs_disk_entry_ext *x = &s->ext[d->rec];
    if (x->dv_offset)
      s->free_bytes += cs__delvec_block_bytes(entries[d->rec].n_rows), s->n_deleted -= x->n_deleted;
    *x = d->x;
    s->n_deleted += x->n_deleted;
  }
  s->footer_layout = n_blk ? 2 : 1;
  s->recovered = true;
done:
  cs__mem_free(entries);
  cs__mem_free(dcs);
  cs__mem_free(blks);
  cs__mem_free(old);
  cs__mem_free(orphans);
  return rc;
}

/* ------------------------------------------------------------------ open */

cs_rc cs__store_load(int fd, const char *path, cs_verify verify, cs_store **out, cs_err *err) {
  return cs__store_load_cached(fd, path, verify, CS_CACHE_MAP, NULL, out, err);
}

static cs_rc store_check_all(const cs_store *s, cs__damage_sink *sink, cs_err *err);

/* cs__store_load_cached, with a sink for cs_store_verify_source (else
** NULL): the store it returns may then hold chunks whose descriptors
** failed (sink->skip), and is only verified and closed. */
static cs_rc store_load(int fd, const char *path, cs_verify verify, cs_cache cache, const cs_store *base,
                        cs__damage_sink *sink, cs_store **out, cs_err *err) {
  cs_rc rc;
  *out = NULL;
  cs_store *s = cs__mem_calloc(1, sizeof *s);
  if (!s || !(s->path = cs__mem_strdup(path))) {
    cs__mem_free(s);
    close(fd);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening %s", path);
  }
  s->ops = &file_ops;
  atomic_init(&s->n_refs, 1);
  s->damage = sink;
  s->fd = fd;
  s->cache_req = cache;
  /* Slots first, size second: committed data never shrinks, so a file
  ** stat'ed after reading a slot holds everything that slot names. */
  cs_disk_slot slot;
  cs_err slot_err = {0};
  bool have_slot = cs__slots_read(fd, path, &slot, &s->slot_damaged, &slot_err) == CS_OK;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    rc = cs_err_set(err, CS_EIO, "colstore: %s: stat failed: %s", path, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = cs_err_set(err, CS_ENOTSTORE, "colstore: %s is not a regular file; give the path of a .cst store",
                    path);
    goto fail;
  }
  s->map_bytes = (uint64_t)st.st_size;
  s->file_ino = (uint64_t)st.st_ino;
  s->file_dev = (uint64_t)st.st_dev;
  if (s->map_bytes < sizeof(cs_disk_preamble)) {
    char magic[CS_MAGIC_BYTES];
    if (s->map_bytes >= CS_MAGIC_BYTES && pread(fd, magic, CS_MAGIC_BYTES, 0) == CS_MAGIC_BYTES &&
        memcmp(magic, CS_MAGIC_FILE, CS_MAGIC_BYTES) == 0) {
      rc = cs_err_set(err, CS_ECORRUPT, "colstore: %s is truncated inside its header (%llu bytes)", path,
                      (unsigned long long)s->map_bytes);
      goto fail;
    }
    rc = cs_err_set(err, CS_ENOTSTORE,
                    "colstore: %s is not a colstore file (only %llu bytes); create one with "
                    "colstore_create() or CREATE VIRTUAL TABLE with column definitions",
                    path, (unsigned long long)s->map_bytes);
    goto fail;
  }
  void *m = mmap(NULL, s->map_bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    rc = cs_err_set(err, CS_EIO, "colstore: %s: mmap failed: %s", path, strerror(errno));
    goto fail;
  }
  s->map = m;
  cs__numa_apply(m, s->map_bytes);

  const cs_disk_preamble *pre = (const cs_disk_preamble *)s->map;
  if (memcmp(pre->magic, CS_MAGIC_FILE, CS_MAGIC_BYTES) != 0) {
    rc = cs_err_set(err, CS_ENOTSTORE,
                    "colstore: %s is not a colstore file (bad magic); create one with colstore_create() or "
                    "CREATE VIRTUAL TABLE with column definitions",
                    path);
    goto fail;
  }
  uint32_t version;
  if (!cs__preamble_version(pre, &version, &s->preamble_torn)) {
    rc = cs_err_set(err, CS_ECORRUPT, "colstore: %s: file header checksum mismatch", path);
    goto fail;
  }
  if (version < CS_FORMAT_VERSION || version > CS_FORMAT_VERSION_MAX) {
    rc = cs_err_set(
        err, CS_EVERSION,
        "colstore: %s uses format version %u but this build reads versions %d to %d; upgrade colstore", path,
        version, CS_FORMAT_VERSION, CS_FORMAT_VERSION_MAX);
    goto fail;
  }
  s->format_version = version;
  if (pre->schema_offset != CS_SCHEMA_OFFSET ||
      !cs__span_in(pre->schema_offset, pre->schema_bytes, 0, s->map_bytes) ||
      pre->data_offset < pre->schema_offset + pre->schema_bytes || pre->data_offset % CS_ALIGN ||
      pre->data_offset > s->map_bytes ||
      cs__hash(s->map + pre->schema_offset, pre->schema_bytes) != pre->schema_checksum) {
    rc = cs_err_set(err, CS_ECORRUPT, "colstore: %s: schema block is damaged", path);
    goto fail;
  }
  s->data_offset = pre->data_offset;
  if ((rc = schema_decode(s, s->map + pre->schema_offset, pre->schema_bytes, err))) goto fail;

  if (have_slot) {
    if (slot.data_end > s->map_bytes || slot.data_end < s->data_offset) {
      rc = cs_err_set(err, CS_ECORRUPT,
                      "colstore: %s is truncated: committed data ends at %llu but the file has %llu bytes",
                      path, (unsigned long long)slot.data_end, (unsigned long long)s->map_bytes);
      goto fail;
    }
    /* The footer starts where the data ends, on a record boundary (version
    ** 1): the next append writes its record there, which must be one an
    ** open accepts. */
    if (slot.footer_offset != slot.data_end || slot.data_end % CS_ALIGN) {
      rc = cs_err_set(err, CS_ECORRUPT,
                      "colstore: %s: the commit slot puts the footer at %llu but the data end at %llu", path,
                      (unsigned long long)slot.footer_offset, (unsigned long long)slot.data_end);
      goto fail;
    }
    s->data_end = slot.data_end;
    s->generation = slot.generation;
    rc = footer_load(s, &slot, err);
    if (rc == CS_ECORRUPT) {
      cs__mem_free(s->first_rows), cs__mem_free(s->entries), cs__mem_free(s->disk_chunks),
          cs__mem_free(s->chunks);
      cs__mem_free(s->ext);
      s->first_rows = NULL, s->entries = NULL, s->disk_chunks = NULL, s->chunks = NULL, s->ext = NULL;
      s->n_deleted = s->free_bytes = 0;
      rc = directory_scan(s, s->data_end, true, err);
    }
    if (rc) goto fail;
  } else {
    if ((rc = directory_scan(s, s->map_bytes, false, err))) goto fail;
  }
  /* The committed extent is known and nothing past it is read again: a
  ** cache=memory store swaps the mapping for its copy here, so the chunk
  ** pointers resolve into the copy and verify=full below hashes it. */
  if (cache == CS_CACHE_MEMORY && (rc = cs__cache_copy(s, base, err))) goto fail;
  if ((rc = directory_resolve(s, s->data_end, err))) goto fail;
  if (cs__verified_init(s) != CS_OK) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory for a directory of %llu records", path,
                    (unsigned long long)s->n_records);
    goto fail;
  }

  if (verify == CS_VERIFY_FULL) {
    if ((rc = store_check_all(s, sink, err))) goto fail;
    if (!sink) cs__verified_mark_all(s);
  }
  *out = s;
  return CS_OK;
fail:
  cs_store_close(s);
  return rc;
}

cs_rc cs__store_load_cached(int fd, const char *path, cs_verify verify, cs_cache cache, const cs_store *base,
                            cs_store **out, cs_err *err) {
  return store_load(fd, path, verify, cache, base, NULL, out, err);
}

static cs_rc path_load(const char *path, cs_verify verify, cs_cache cache, const cs_store *base,
                       cs__damage_sink *sink, cs_store **out, cs_err *err) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return cs_err_set(err, CS_ENOENT, "colstore: %s does not exist", path);
    return cs_err_set(err, CS_EIO, "colstore: cannot open %s: %s", path, strerror(errno));
  }
  return store_load(fd, path, verify, cache, base, sink, out, err);
}

cs_rc cs__store_open_path(const char *path, cs_verify verify, cs_cache cache, const cs_store *base,
                          cs_store **out, cs_err *err) {
  return path_load(path, verify, cache, base, NULL, out, err);
}

cs_rc cs_store_open(const char *path, cs_verify verify, cs_store **out, cs_err *err) {
  return cs__store_open_path(path, verify, CS_CACHE_MAP, NULL, out, err);
}

cs_rc cs_store_open_with(const char *path, cs_verify verify, cs_cache cache, cs_store **out, cs_err *err) {
  return cs__store_open_path(path, verify, cache, NULL, out, err);
}

void cs_store_close(cs_store *s) {
  if (!s || atomic_fetch_sub(&s->n_refs, 1) != 1) return;
  s->ops->release(s);
  cs__cache_release(s);
  if (s->fd >= 0) close(s->fd);
  cs__mem_free(s->first_rows);
  cs__mem_free(s->entries);
  cs__mem_free(s->ext);
  cs__mem_free(s->dels);
  cs__mem_free(s->dels_block);
  for (uint64_t i = 0; i < s->n_own_chunks; i++) cs__mem_free(s->own_chunks[i]);
  cs__mem_free(s->own_chunks);
  cs__mem_free(s->disk_chunks);
  cs__mem_free(s->chunks);
  cs__verified_free(s);
  for (int k = 0; k < CS__DERIVED_SLOTS; k++) {
    cs__derived *derived = cs__store_derived(s, k);
    if (derived) derived->free(derived);
  }
  cs__mem_free(s->cols);
  cs__mem_free(s->names);
  cs__mem_free(s->path);
  cs__mem_free(s);
}

/* -------------------------------------------------------------- accessors */

const char *cs_store_path(const cs_store *s) { return s->path; }
const cs_schema *cs_store_schema(const cs_store *s) { return &s->schema; }
uint64_t cs_store_rows(const cs_store *s) { return s->n_rows; }
uint64_t cs_store_records(const cs_store *s) { return s->n_records; }
uint64_t cs_store_generation(const cs_store *s) { return s->generation; }
uint64_t cs_store_file_bytes(const cs_store *s) { return s->map_bytes; }
bool cs_store_recovered(const cs_store *s) { return s->recovered; }
bool cs_store_slot_damaged(const cs_store *s) { return s->slot_damaged; }
uint64_t cs_store_record_first_row(const cs_store *s, uint64_t rec) { return s->first_rows[rec]; }
uint64_t cs_store_record_rows(const cs_store *s, uint64_t rec) {
  return s->first_rows[rec + 1] - s->first_rows[rec];
}
const cs_chunk *cs_store_chunk(const cs_store *s, uint64_t rec, uint32_t col) {
  return &s->chunks[rec * s->schema.n_cols + col];
}

/* The uniform layout (cs_store_internal.h): every record but the last has
** per rows and the last no more, so row / per is the record, computed as
** the high word of row * magic shifted right.  Set for every variant (a
** file, a dataset, a view) when its directory is complete. */
void cs__store_uniform_init(cs_store *s) {
  s->uniform_rows = 0;
  s->uniform_magic = 0;
  s->uniform_shift = 0;
  uint64_t R = s->n_records;
  if (R == 0) return;
  uint64_t per = s->first_rows[1] - s->first_rows[0];
  for (uint64_t r = 1; r + 1 < R; r++)
    if (s->first_rows[r + 1] - s->first_rows[r] != per) return;
  if (R > 1 && s->first_rows[R] - s->first_rows[R - 1] > per) return;
  uint32_t N = 1;
  while (N < 64 && (s->n_rows - 1) >> N) N++;
  uint32_t l = 0;
  while (l < 64 && ((uint64_t)1 << l) < per) l++;
  uint32_t p = N + l < 64 ? 64 : N + l;
  if (N > 62 || p > 127) return;
  cs__u128 m = (((cs__u128)1 << p) + per - 1) / per;
  if (m >> 64) return;
  s->uniform_rows = per;
  s->uniform_magic = (uint64_t)m;
  s->uniform_shift = p - 64;
}

uint64_t cs_store_find_record(const cs_store *s, uint64_t row) {
  return cs__find_record(s->first_rows, s->n_records, row);
}

void cs_store_column_stats(const cs_store *s, uint32_t col, cs_column_stats *out) {
  memset(out, 0, sizeof *out);
  cs_type t = s->cols[col].type;
  bool is_float = cs_type_is_float(t), sorted = !cs_type_is_varlen(t);
  for (uint64_t r = 0; r < s->n_records; r++) {
    const cs_chunk *ch = cs_store_chunk(s, r, col);
    out->null_count += ch->null_count;
    if (!(ch->flags & CS_CHUNK_SORTED)) sorted = false;
    if (!(ch->flags & CS_CHUNK_HAS_MINMAX)) continue;
    if (sorted && out->has_minmax && (is_float ? ch->min.f < out->max.f : ch->min.i < out->max.i))
      sorted = false;
    if (!out->has_minmax) {
      out->min = ch->min, out->max = ch->max, out->has_minmax = true;
    } else if (is_float) {
      if (ch->min.f < out->min.f) out->min = ch->min;
      if (ch->max.f > out->max.f) out->max = ch->max;
    } else {
      if (ch->min.i < out->min.i) out->min = ch->min;
      if (ch->max.i > out->max.i) out->max = ch->max;
    }
  }
  out->sorted = sorted && out->null_count == 0;
}

cs_rc cs_store_is_current(const cs_store *s, bool *out_current, cs_err *err) {
  return s->ops->is_current(s, out_current, err);
}

static cs_rc file_is_current(const cs_store *s, bool *out_current, cs_err *err) {
  /* A store replaced by rename (colstore_create 'replace') is a new inode. */
  struct stat now;
  if (stat(s->path, &now) != 0 || (uint64_t)now.st_ino != s->file_ino ||
      (uint64_t)now.st_dev != s->file_dev) {
    *out_current = false;
    return CS_OK;
  }
  /* The path names our inode, so its size is our file's: one stat and two
  ** preads per check, which a dataset pays per file per statement. */
  cs_disk_slot slot;
  cs_err scratch;
  cs_rc rc = slots_read_sized(s->fd, (uint64_t)now.st_size, s->path, &slot, NULL, &scratch);
  /* No valid slot (a store open recovered by a forward scan): nothing was
  ** committed since, as every commit writes a valid slot; the snapshot is
  ** the newest state there is. */
  if (rc == CS_ECORRUPT) {
    *out_current = true;
    return CS_OK;
  }
  if (rc) return cs_err_set(err, rc, "%s", scratch.msg);
  *out_current = slot.generation == s->generation;
  return CS_OK;
}

cs_rc cs_store_reopen(cs_store *s, cs_verify verify, cs_store **out, cs_err *err) {
  *out = NULL;
  return s->ops->reopen(s, verify, out, err);
}

static cs_rc file_reopen(cs_store *s, cs_verify verify, cs_store **out, cs_err *err) {
  bool current = false;
  cs_rc rc = cs_store_is_current(s, &current, err);
  if (rc) return rc;
  if (!current) return cs__store_open_path(s->path, verify, s->cache_req, s, out, err);
  atomic_fetch_add(&s->n_refs, 1);
  *out = s;
  return CS_OK;
}

cs_rc cs_chunk_varlen(const cs_chunk *ch, uint64_t local, const uint8_t **out_bytes, uint64_t *out_len,
                      cs_err *err) {
  int64_t a = ch->offsets[local], b = ch->offsets[local + 1];
  if (a < 0 || b < a || (uint64_t)b > ch->data_bytes)
    return cs_err_set(
        err, CS_ECORRUPT,
        "colstore: damaged TEXT/BLOB offsets at row %llu of a record; run colstore_verify() for details",
        (unsigned long long)local);
  *out_bytes = (const uint8_t *)ch->data + a;
  *out_len = (uint64_t)(b - a);
  return CS_OK;
}

/* ---------------------------------------------------------------- verify */

/* Every record header against the footer, then every chunk of the record
** against its checksum.  Without a sink the first damage is the error;
** with one (cs_store_verify_source) each is reported and the walk goes
** on: a record whose header is damaged still has its chunks hashed (the
** footer's descriptors, checked at open, say where they are), and only
** the chunks whose descriptors failed at open (sink->skip) are passed. */
static cs_rc store_check_all(const cs_store *s, cs__damage_sink *sink, cs_err *err) {
  uint32_t nc = s->schema.n_cols;
  for (uint64_t r = 0; r < s->n_records; r++) {
    const cs_disk_entry *e = &s->entries[r];
    const cs_disk_record *h;
    cs_rc rc = record_header_check(s, e->record_offset, s->data_end, r, &h, err);
    if (rc == CS_OK) {
      /* The footer copies the record's descriptors, except those a patch
      ** replaced (open compared those with their patch block's). */
      bool same = h->n_rows == e->n_rows && h->record_bytes == e->record_bytes;
      const cs_disk_chunk *own = (const cs_disk_chunk *)(h + 1);
      for (uint32_t c = 0; c < nc && same; c++) {
        const cs_disk_chunk *dc = &s->disk_chunks[r * nc + c];
        same = (dc->flags & CS_CHUNK_ABSOLUTE) || memcmp(&own[c], dc, sizeof *dc) == 0;
      }
      if (!same)
        rc = cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu header does not match the footer",
                        s->path, (unsigned long long)r);
    }
    if (rc && !sink) return rc;
    if (rc) cs__damage_note(sink, s, CS_DAMAGE_RECORD, r, CS_DAMAGE_NO_COLUMN, err);
    for (uint32_t c = 0; c < nc; c++) {
      if (sink && sink->skip[r * nc + c]) continue;
      if ((rc = cs__verified_check_chunk(s, r, c, !sink, err)) && !sink) return rc;
      if (rc) cs__damage_note(sink, s, CS_DAMAGE_CHUNK, r, c, err);
    }
  }
  return CS_OK;
}

cs_rc cs_store_verify(const cs_store *s, cs_err *err) { return s->ops->verify(s, err); }

static cs_rc file_verify(const cs_store *s, cs_err *err) { return store_check_all(s, NULL, err); }

/* A single file owns nothing beyond the common fields. */
static void file_release(cs_store *s) { (void)s; }

static const cs__store_ops file_ops = {"file", file_release, file_is_current, file_reopen, file_verify};

/* One file of cs_store_verify_source.  A verify=full load with the sink
** reports each part and goes on; damage that stops the load (the
** preamble, the schema, the slots and footer when no scan recovers the
** records, a directory entry) is then the file's last part, after any that
** directory resolution found in the records before it. */
cs_rc cs__store_verify_file(const char *path, cs__damage_sink *sink, cs_err *err) {
  cs_store *s = NULL;
  cs_err e = {0};
  cs_rc rc = path_load(path, CS_VERIFY_FULL, CS_CACHE_MAP, NULL, sink, &s, &e);
  cs_store_close(s);
  cs__mem_free(sink->skip);
  sink->skip = NULL;
  if (rc == CS_ECORRUPT) {
    cs__damage_note_file(sink, path, &e);
    return CS_OK;
  }
  return rc ? cs_err_set(err, rc, "%s", e.msg) : CS_OK;
}
