/*
** cs_view.c - a snapshot seen through deletions not yet committed.
**
** SQL-CONTRACT: a connection's own DELETE reads as done from its next
** statement on, although the store changes only at COMMIT.  Every read
** path already drops the positions a store's deletion vectors name
** (cs_delete.c), so the cheapest way to make them drop the transaction's
** pending deletions too is to hand them a store whose vectors include
** those: a view.  The view shares everything of its base (mapping or
** cache=memory copy, chunk checksums checked, the file's identity) by
** holding it as its only part, the way a dataset holds its files, and owns
** only a copy of the directory (first rows and chunk descriptors, tens of
** bytes per record) and one bitmap per record the transaction touched, the
** base's bits ORed with the pending ones.  Nothing in a kernel changes and
** nothing is written: the writer gets the same positions at COMMIT.
**
** Cost: O(records + pending deletions) per view, made once per change of
** the pending set (the SQL layer keeps it between statements), never per
** row; a record the transaction does not touch keeps the base's vector
** pointer (or none).
*/
#include <stdlib.h>
#include <string.h>

#include "cs_internal.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Bytes of a record's bitmap as readers expect it (docs/format.md 14.3:
** whole 64-byte lines, zero past the rows): a vector block less its header. */
static uint64_t bitmap_bytes(uint64_t n_rows) { return cs__delvec_block_bytes(n_rows) - sizeof(cs_disk_delvec); }

cs_rc cs_store_with_deletions(const cs_store *base, const uint64_t *rows, uint64_t n, cs_store **out, cs_err *err) {
  *out = NULL;
  for (uint64_t i = 0; i < n; i++)
    if (rows[i] >= base->n_rows)
      return cs_err_set(err, CS_EINVAL, "colstore: %s: cannot delete position %llu of %llu", base->path,
                        (unsigned long long)rows[i], (unsigned long long)base->n_rows);
  uint64_t *sorted = NULL;
  cs_rc rc;
  cs_store *v = cs__mem_calloc(1, sizeof *v);
  if (!v) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s", base->path);
  atomic_init(&v->n_refs, 1);
  v->fd = -1;
  v->view = true;
  if (!(v->parts = cs__mem_malloc(sizeof *v->parts))) goto nomem;
  atomic_fetch_add(&((cs_store *)base)->n_refs, 1); /* the part's reference (n_refs is the one mutable field) */
  v->parts[0] = (cs_store *)base;
  v->n_parts = 1;
  uint32_t nc = base->schema.n_cols;
  uint64_t nr = base->n_records;
  v->part_first_record = cs__mem_calloc(2, sizeof *v->part_first_record);
  v->path = cs__mem_strdup(base->path);
  v->first_rows = cs__mem_malloc((nr + 1) * sizeof *v->first_rows);
  v->chunks = cs__mem_malloc((nr ? nr * nc : 1) * sizeof *v->chunks);
  if (!v->part_first_record || !v->path || !v->first_rows || !v->chunks) goto nomem;
  if ((rc = cs__schema_copy(v, base, err)) != CS_OK) goto fail;
  v->part_first_record[1] = nr;
  memcpy(v->first_rows, base->first_rows, (nr + 1) * sizeof *v->first_rows);
  if (nr) memcpy(v->chunks, base->chunks, nr * nc * sizeof *v->chunks);
  v->n_records = nr, v->n_rows = base->n_rows;
  v->map_bytes = base->map_bytes, v->generation = base->generation;
  v->format_version = base->format_version, v->free_bytes = base->free_bytes;
  v->recovered = base->recovered, v->slot_damaged = base->slot_damaged;
  v->cache_req = base->cache_req;
  memcpy(v->cache_why, base->cache_why, sizeof v->cache_why);
  v->n_deleted = base->n_deleted;
  if (n == 0 && !base->dels) goto done;

  /* The touched records, in order: their bitmaps go in one block. */
  if (!(sorted = cs__mem_malloc((n ? n : 1) * sizeof *sorted))) goto nomem;
  memcpy(sorted, rows, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, cmp_u64);
  if (!(v->dels = cs__mem_calloc(nr ? nr : 1, sizeof *v->dels))) goto nomem;
  if (base->dels) memcpy(v->dels, base->dels, nr * sizeof *v->dels);
  uint64_t block = 0;
  for (uint64_t i = 0, rec = 0; i < n;) {
    rec = cs__first_rows_find(base->first_rows + rec, nr - rec, sorted[i]) + rec;
    block += bitmap_bytes(base->first_rows[rec + 1] - base->first_rows[rec]);
    while (i < n && sorted[i] < base->first_rows[rec + 1]) i++;
  }
  if (block) {
    if (!(v->dels_block = cs__mem_calloc(1, block + 64))) goto nomem;
    uint8_t *at = (uint8_t *)(((uintptr_t)v->dels_block + 63) & ~(uintptr_t)63);
    for (uint64_t i = 0, rec = 0; i < n;) {
      rec = cs__first_rows_find(base->first_rows + rec, nr - rec, sorted[i]) + rec;
      uint64_t first = base->first_rows[rec], rec_rows = base->first_rows[rec + 1] - first, bytes = bitmap_bytes(rec_rows);
      if (v->dels[rec].bits) memcpy(at, v->dels[rec].bits, bytes);
      uint64_t added = 0;
      for (; i < n && sorted[i] < first + rec_rows; i++) {
        uint64_t local = sorted[i] - first;
        uint8_t bit = (uint8_t)(1u << (local & 7));
        added += !(at[local >> 3] & bit);
        at[local >> 3] |= bit;
      }
      v->dels[rec].bits = at;
      v->dels[rec].n_deleted += added;
      v->n_deleted += added;
      at += bytes;
    }
  }
  if (v->n_deleted == 0) {
    cs__mem_free(v->dels);
    v->dels = NULL;
  }
done:
  cs__mem_free(sorted);
  cs__uniform_init(v);
  *out = v;
  return CS_OK;
nomem:
  rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s with %llu pending deletions", base->path,
             (unsigned long long)n);
fail:
  cs__mem_free(sorted);
  cs_store_close(v);
  return rc;
}
