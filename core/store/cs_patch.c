/*
** cs_patch.c - patch blocks (format 2, docs/format.md 14.4) as the readers
** see them: the checks of a block, of a footer's descriptor that points
** into one, and the free-space rule both the writer and the forward scan
** apply when a patch replaces chunks.
**
** An UPDATE never rewrites a record: it appends, per record it touches, a
** block of new chunks for the changed columns, and the footer entry names
** each column's live chunk, the record's own or a patch's.  A patch's
** descriptor (CS_CHUNK_ABSOLUTE) holds file offsets, so the cursor and
** the kernels resolve it like any other chunk and never know it is one;
** its patch_back field leads from the chunk back to the block's header.
**
** Why open checks the block and not only the chunk's bounds: a footer
** descriptor whose chunk lies in the data region but outside any block,
** or in a block of another record, would pass bounds checks and read
** bytes that were never that column's values.  So open follows patch_back
** to the block, checks its header (magic, checksums, record, rows) and
** every item's chunk against the block's span, as 6.4 checks a record's,
** and requires the footer's descriptor to be the block's item for that
** column byte for byte (the footer copies it), which is what verify=full
** asks of a record's own descriptors.  The cost is a header and its items
** per patch block of the committed state, read once per open (a block is
** checked once however many of its columns are live); the chunk data is
** left to the checksums of verify=full and verify=read, as for records.
*/
#include <string.h>

#include "cs_store_internal.h"

cs_rc cs__patch_check(const cs_store *s, uint64_t off, uint64_t limit, const cs_disk_entry *e, uint64_t rec,
                      cs_err *err) {
  uint32_t nc = s->schema.n_cols;
  const char *why;
  if (off % CS_ALIGN || off < e->record_offset + e->record_bytes ||
      !cs__span_in(off, sizeof(cs_disk_patch), s->data_offset, limit)) {
    why = "lies outside the committed data";
    goto bad;
  }
  const cs_disk_patch *h = (const cs_disk_patch *)(const void *)(s->map + off);
  if (memcmp(h->magic, CS_MAGIC_PATCH, CS_MAGIC_BYTES) != 0 || h->checksum != cs__hash(h, 56)) {
    why = "has a damaged header";
    goto bad;
  }
  if (h->n_chunks == 0 || h->n_chunks > nc || h->header_bytes != cs__patch_header_bytes(h->n_chunks) ||
      h->block_bytes % CS_ALIGN || h->block_bytes < h->header_bytes ||
      !cs__span_in(off, h->block_bytes, s->data_offset, limit)) {
    why = "has impossible sizes";
    goto bad;
  }
  const cs_disk_patch_item *items = (const cs_disk_patch_item *)(const void *)(h + 1);
  if (h->descriptors_checksum != cs__hash(items, (size_t)h->n_chunks * sizeof *items)) {
    why = "has damaged descriptors";
    goto bad;
  }
  if (h->record_offset != e->record_offset || h->n_rows != e->n_rows) {
    why = "does not match its record";
    goto bad;
  }
  for (uint32_t k = 0; k < h->n_chunks; k++) {
    const cs_disk_patch_item *it = &items[k];
    if (it->column >= nc || (k && it->column <= items[k - 1].column) || it->reserved ||
        cs__patch_block_of(&it->chunk) != off) {
      why = "has a damaged item";
      goto bad;
    }
    cs_rc rc = cs__chunk_check(&it->chunk, &s->cols[it->column], e->n_rows, off + h->header_bytes,
                               off + h->block_bytes, true, s->path, rec, err);
    if (rc) return rc;
  }
  return CS_OK;
bad:
  return cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu: the patch block at offset %llu %s", s->path,
                    (unsigned long long)rec, (unsigned long long)off, why);
}

const cs_disk_patch_item *cs__patch_item(const uint8_t *block, uint32_t col) {
  const cs_disk_patch *h = (const cs_disk_patch *)(const void *)block;
  const cs_disk_patch_item *items = (const cs_disk_patch_item *)(const void *)(h + 1);
  uint32_t lo = 0, hi = h->n_chunks; /* columns increase: a binary search */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (items[mid].column < col)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < h->n_chunks && items[lo].column == col ? &items[lo] : NULL;
}

cs_rc cs__patched_chunk_check(const cs_store *s, uint64_t rec, uint32_t col, uint64_t limit,
                              uint64_t *checked, uint32_t *n_checked, bool *out_block_bad, cs_err *err) {
  const cs_disk_chunk *dc = &s->disk_chunks[rec * s->schema.n_cols + col];
  const char *why;
  *out_block_bad = false;
  if (s->footer_layout != 2) {
    why = "is a patched chunk in a layout-1 footer";
    goto bad;
  }
  uint64_t off = cs__patch_block_of(dc);
  bool done = false;
  for (uint32_t i = 0; i < *n_checked && !done; i++) done = checked[i] == off;
  if (!done) {
    cs_rc rc = cs__patch_check(s, off == UINT64_MAX ? 0 : off, limit, &s->entries[rec], rec, err);
    if (rc) {
      *out_block_bad = true;
      return rc;
    }
    checked[(*n_checked)++] = off;
  }
  const cs_disk_patch_item *it = cs__patch_item(s->map + off, col);
  if (!it || memcmp(&it->chunk, dc, sizeof *dc) != 0) {
    why = "does not match its patch block";
    goto bad;
  }
  return CS_OK;
bad:
  return cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu, column %s: the footer's chunk %s", s->path,
                    (unsigned long long)rec, s->cols[col].name, why);
}

uint32_t cs__patch_orphans(const cs_disk_chunk *old, uint32_t n, const cs_disk_chunk *live, uint32_t n_cols,
                           uint64_t *out) {
  uint32_t n_out = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!(old[i].flags & CS_CHUNK_ABSOLUTE)) continue;
    uint64_t b = cs__patch_block_of(&old[i]);
    bool seen = false;
    for (uint32_t k = 0; k < n_out && !seen; k++) seen = out[k] == b;
    for (uint32_t c = 0; c < n_cols && !seen; c++)
      seen = (live[c].flags & CS_CHUNK_ABSOLUTE) && cs__patch_block_of(&live[c]) == b;
    if (!seen) out[n_out++] = b;
  }
  return n_out;
}
