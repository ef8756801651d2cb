/*
** cs_view.c - a snapshot seen through deletions and updates not yet
** committed.
**
** docs/sql.md ("Writing"): a connection's own DELETE and UPDATE read as done from its
** next statement on, although the store changes only at COMMIT.  Every
** read path already drops the positions a store's deletion vectors name
** (cs_delete.c) and reads values through the resolved chunk table
** (s->chunks), trusting each chunk's zone map and sorted flag.  So the
** cheapest way to make them see the transaction's pending changes is to
** hand them a store whose vectors include the pending deletions and whose
** chunk table points, for every (record, column) an update touches, at a
** chunk holding the new values: a view.  The view shares everything of its
** base (mapping or cache=memory copy, chunk checksums checked, the file's
** identity) by holding it as its only part, the way a dataset holds its
** files, and owns only a copy of the directory (first rows and chunk
** pointers, tens of bytes per record), one bitmap per record a deletion
** touches (the base's bits ORed with the pending ones), and one chunk per
** record and column an update changes.  Nothing in a kernel changes and
** nothing is written: the writer gets the same positions and values at
** COMMIT.
**
** An updated chunk is made by the code that makes the writer's patched
** chunk (cs_chunk.c): the base's live chunk with the winners in place
** (the last update of a position that changes the column), laid out with
** 64-byte aligned, zero-padded parts, a null count, zone map and sorted
** flag recomputed over all its values.  So the view's chunk is the one
** the patch block will hold, and every kernel that skips records on a zone
** map, bisects a sorted column or answers an aggregate from statistics
** sees the truth.  Its checksum is never checked: checks of a view go to
** its part (cs_store_check_chunks on a store with parts), so reading an
** updated chunk checks the base chunk it was made from, which is where its
** other values came from; the view's own bytes never were on disk.
**
** A transaction's inserted rows (cs_store_with_pending) become records of
** the view after base's last one, laid out in blocks of their own by the
** function that lays out the writer's records (cs__batch_lay_rows), so
** they read exactly as they will once written.  Updates of them are
** applied to a copy of their batch first (cs_batch_with_updates, the same
** call the SQL layer makes before writing them), and deletions set bits in
** bitmaps of the view's own, as for base's records.  The part still holds
** only base's records: chunk checks stop there, the rest never were on
** disk.
**
** Cost: O(records + pending deletions) for the directory and the bitmaps,
** plus, for updates, a sort of one 24-byte item per pending updated row and
** one merge of every touched record's chunk of every column it changes
** (its rows' values copied once more to lay it out).  Memory follows the
** touched records: one chunk per (record, changed column).  Inserted rows
** cost one laid-out copy (and one more while updates of them are applied).
** A view is made
** once per change of the pending lists (the SQL layer keeps it between
** statements), never per row; a record the transaction does not touch keeps
** the base's vector pointer and chunks.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "cs_write_internal.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------ deletions */

/* ORs rows[0, n) into v's bitmaps (v's dels start as base's; v's
** directory, which may have records after base's, says where rows are). */
static cs_rc view_delete(cs_store *v, const cs_store *base, const uint64_t *rows, uint64_t n, cs_err *err) {
  uint64_t nr = v->n_records;
  const uint64_t *first_rows = v->first_rows;
  if (n == 0 && !base->dels) return CS_OK;
  /* The touched records, in order: their bitmaps go in one block. */
  uint64_t *sorted = cs__mem_malloc((n ? n : 1) * sizeof *sorted);
  if (!sorted) goto nomem;
  memcpy(sorted, rows, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, cmp_u64);
  if (!(v->dels = cs__mem_calloc(nr ? nr : 1, sizeof *v->dels))) goto nomem;
  if (base->dels) memcpy(v->dels, base->dels, base->n_records * sizeof *v->dels);
  uint64_t block = 0;
  for (uint64_t i = 0, rec = 0; i < n;) {
    rec = cs__find_record(first_rows + rec, nr - rec, sorted[i]) + rec;
    block += cs__delvec_bitmap_bytes(first_rows[rec + 1] - first_rows[rec]);
    while (i < n && sorted[i] < first_rows[rec + 1]) i++;
  }
  if (block) {
    if (!(v->dels_block = cs__mem_calloc(1, block + 64))) goto nomem;
    uint8_t *at = (uint8_t *)(((uintptr_t)v->dels_block + 63) & ~(uintptr_t)63);
    for (uint64_t i = 0, rec = 0; i < n;) {
      rec = cs__find_record(first_rows + rec, nr - rec, sorted[i]) + rec;
      uint64_t first = first_rows[rec], rec_rows = first_rows[rec + 1] - first,
               bytes = cs__delvec_bitmap_bytes(rec_rows);
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
  cs__mem_free(sorted);
  return CS_OK;
nomem:
  cs__mem_free(sorted);
  return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s with %llu pending deletions",
                    base->path, (unsigned long long)n);
}

/* -------------------------------------------------------------- updates */

/* What cs_writer_update would refuse of upd, refused the same way; every
** position must be < limit. */
static cs_rc updates_check(const cs_store *base, uint64_t limit, const cs_update *upd, uint64_t n_upd,
                           cs_err *err) {
  uint32_t nc = base->schema.n_cols;
  for (uint64_t k = 0; k < n_upd; k++) {
    const cs_update *u = &upd[k];
    if (u->n == 0) continue;
    const cs_batch *b = u->values;
    if (b->n_cols != nc)
      return cs_err_set(err, CS_EINVAL, "colstore: %s: update batch has %u columns, store has %u", base->path,
                        b->n_cols, nc);
    if (b->n_rows < u->n)
      return cs_err_set(err, CS_EINVAL, "colstore: %s: update batch has %llu rows for %llu positions",
                        base->path, (unsigned long long)b->n_rows, (unsigned long long)u->n);
    for (uint32_t c = 0; c < nc; c++) {
      const cs_batch_column *bc = &b->cols[c];
      if (bc->type != base->cols[c].type)
        return cs_err_set(err, CS_ESCHEMA, "colstore: %s: column %s: update batch type differs", base->path,
                          base->cols[c].name);
      for (uint64_t i = 0; (!u->cols || u->cols[c]) && !base->cols[c].nullable && bc->n_nulls && i < u->n;
           i++)
        if (!((bc->validity[i >> 3] >> (i & 7)) & 1))
          return cs_err_set(err, CS_EINVAL,
                            "colstore: %s: column %s is NOT NULL but row %llu of the update batch is NULL",
                            base->path, base->cols[c].name, (unsigned long long)i);
    }
    for (uint64_t i = 0; i < u->n; i++)
      if (u->rows[i] >= limit)
        return cs_err_set(err, CS_EINVAL, "colstore: %s: cannot update position %llu of %llu", base->path,
                          (unsigned long long)u->rows[i], (unsigned long long)limit);
  }
  return CS_OK;
}

/* Column col of record rec of v: the base's chunk with win[0, n_win) in
** place, in a block of its own that v keeps. */
static cs_rc view_chunk(cs_store *v, const cs_store *base, uint64_t rec, uint32_t col, const cs__upd_win *win,
                        uint64_t n_win, cs_err *err) {
  uint32_t nc = base->schema.n_cols;
  uint64_t n = base->first_rows[rec + 1] - base->first_rows[rec];
  const cs_column *column = &base->cols[col];
  cs__merged m;
  cs_rc rc = cs__chunk_merge(column, n, &base->chunks[rec * nc + col], win, n_win, base->path, rec, &m, err);
  if (rc) return rc;
  /* Laid out at offset 64, not 0: a descriptor's offset 0 means "no
  ** bitmap".  Only the offsets from chunk_offset matter to the resolution. */
  cs_disk_chunk dc = {.null_count = m.null_count};
  struct iovec iov[CS__CHUNK_MAX_IOV];
  int n_iov = 0;
  uint64_t bytes = cs__chunk_lay(column->type, n, m.null_count ? m.bits : NULL, m.offsets, m.data,
                                 m.data_bytes, CS_ALIGN, iov, &n_iov, &dc) -
                   CS_ALIGN;
  uint8_t *raw = cs__mem_malloc(bytes + 63);
  if (!raw) {
    cs__chunk_merged_free(&m);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s: a chunk of %llu bytes",
                      base->path, (unsigned long long)bytes);
  }
  uint8_t *start = (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63), *at = start;
  for (int i = 0; i < n_iov; i++) {
    memcpy(at, iov[i].iov_base, iov[i].iov_len);
    at += iov[i].iov_len;
  }
  cs__chunk_merged_free(&m);
  v->own_chunks[v->n_own_chunks++] = raw;
  cs__chunk_resolve(start, &dc, &v->chunks[rec * nc + col]);
  return CS_OK;
}

/* The end of the items of the record holding it[a].row, and that record. */
static uint64_t record_items(const cs_store *base, const cs__upd_item *it, uint64_t a, uint64_t n,
                             uint64_t *out_rec) {
  uint64_t rec = cs_store_find_record(base, it[a].row), end = base->first_rows[rec + 1], b = a + 1;
  while (b < n && it[b].row < end) b++;
  *out_rec = rec;
  return b;
}

/* The columns the calls of it[0, n) change, into touched; returns how many. */
static uint32_t touched_cols(const cs__upd_call *calls, const cs__upd_item *it, uint64_t n, uint32_t nc,
                             uint8_t *touched) {
  uint32_t count = 0;
  memset(touched, 0, nc);
  for (uint64_t k = 0; k < n; k++) {
    const cs__upd_call *call = &calls[it[k].call];
    for (uint32_t j = 0; j < call->n_sel; j++) count += !touched[call->sel[j]], touched[call->sel[j]] = 1;
  }
  return count;
}

/* The updates of upd[0, n_upd) to positions in [lo, hi) as the writer's
** calls, pointing into the batches, and their items sorted. */
typedef struct upd_plan {
  cs__upd_call *calls;
  const cs__upd_call **callp;
  uint32_t *sel;
  cs__upd_values *vals;
  cs__upd_item *items;
  uint64_t n_items;
} upd_plan;

static void plan_free(upd_plan *p) {
  cs__mem_free(p->calls), cs__mem_free(p->callp), cs__mem_free(p->sel), cs__mem_free(p->vals),
      cs__mem_free(p->items);
  memset(p, 0, sizeof *p);
}

/* False when out of memory (p then holds nothing). */
static bool plan_make(const cs_update *upd, uint64_t n_upd, uint32_t nc, uint64_t lo, uint64_t hi,
                      upd_plan *p) {
  memset(p, 0, sizeof *p);
  uint64_t n_items = 0;
  for (uint64_t k = 0; k < n_upd; k++) {
    bool any = !upd[k].cols;
    for (uint32_t c = 0; !any && c < nc; c++) any = upd[k].cols[c] != 0;
    for (uint64_t i = 0; any && i < upd[k].n; i++) n_items += upd[k].rows[i] >= lo && upd[k].rows[i] < hi;
  }
  if (n_items == 0) return true;
  p->calls = cs__mem_calloc(n_upd, sizeof *p->calls);
  p->callp = cs__mem_malloc(n_upd * sizeof *p->callp);
  p->sel = cs__mem_malloc(n_upd * (nc ? nc : 1) * sizeof *p->sel);
  p->vals = cs__mem_malloc(n_upd * (nc ? nc : 1) * sizeof *p->vals);
  p->items = cs__mem_malloc(n_items * sizeof *p->items);
  if (!p->calls || !p->callp || !p->sel || !p->vals || !p->items) {
    plan_free(p);
    return false;
  }
  uint64_t m = 0;
  for (uint64_t k = 0; k < n_upd; k++) {
    const cs_update *u = &upd[k];
    uint32_t j = 0;
    for (uint32_t c = 0; u->n && c < nc; c++) {
      if (u->cols && !u->cols[c]) continue;
      const cs_batch_column *bc = &u->values->cols[c];
      p->sel[k * nc + j] = c;
      p->vals[k * nc + j] = (cs__upd_values){bc->validity, bc->offsets, bc->data};
      j++;
    }
    p->calls[k] = (cs__upd_call){u->n, j, p->sel + k * nc, p->vals + k * nc};
    p->callp[k] = &p->calls[k];
    for (uint64_t i = 0; j && i < u->n; i++)
      if (u->rows[i] >= lo && u->rows[i] < hi) p->items[m++] = (cs__upd_item){u->rows[i], k, i};
  }
  p->n_items = m;
  qsort(p->items, m, sizeof *p->items, cs__chunk_upd_cmp);
  return true;
}

/* Gives v a chunk of its own for every (record, column) of base upd
** changes (positions past base's rows are left to view_insert), with
** room for reserve more own chunks. */
static cs_rc view_update(cs_store *v, const cs_store *base, const cs_update *upd, uint64_t n_upd,
                         uint64_t reserve, cs_err *err) {
  uint32_t nc = base->schema.n_cols;
  upd_plan p;
  uint8_t *touched = NULL;
  cs__upd_win *win = NULL;
  cs_rc rc = CS_OK;
  if (!plan_make(upd, n_upd, nc, 0, base->n_rows, &p) || !(touched = cs__mem_malloc(nc ? nc : 1))) goto nomem;
  /* Room first: the chunks to make and the most items of one record. */
  uint64_t n_chunks = 0, most = 0, rec;
  for (uint64_t a = 0, b; a < p.n_items; a = b) {
    b = record_items(base, p.items, a, p.n_items, &rec);
    if (b - a > most) most = b - a;
    n_chunks += touched_cols(p.calls, p.items + a, b - a, nc, touched);
  }
  if (n_chunks + reserve && !(v->own_chunks = cs__mem_calloc(n_chunks + reserve, sizeof *v->own_chunks)))
    goto nomem;
  if (most && !(win = cs__mem_malloc(most * sizeof *win))) goto nomem;
  for (uint64_t a = 0, b; rc == CS_OK && a < p.n_items; a = b) {
    b = record_items(base, p.items, a, p.n_items, &rec);
    touched_cols(p.calls, p.items + a, b - a, nc, touched);
    for (uint32_t c = 0; rc == CS_OK && c < nc; c++) {
      if (!touched[c]) continue;
      uint64_t n_win = cs__chunk_upd_winners(p.callp, base->first_rows[rec], p.items + a, b - a, c, win);
      rc = view_chunk(v, base, rec, c, win, n_win, err);
    }
  }
  goto done;
nomem:
  rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s with %llu pending updated rows",
                  base->path, (unsigned long long)p.n_items);
done:
  plan_free(&p);
  cs__mem_free(touched), cs__mem_free(win);
  return rc;
}

/* -------------------------------------------------------------- inserts */

cs_rc cs_batch_with_updates(const cs_batch *b, const cs_schema *schema, uint64_t first, const cs_update *upd,
                            uint64_t n_upd, cs_batch **out, cs_err *err) {
  *out = NULL;
  uint32_t nc = schema->n_cols;
  uint64_t n = b->n_rows;
  if (b->n_cols != nc)
    return cs_err_set(err, CS_EINVAL, "colstore: a batch of %u columns for a schema of %u", b->n_cols, nc);
  for (uint64_t k = 0; k < n_upd; k++)
    if (upd[k].n && (upd[k].values->n_cols != nc || upd[k].values->n_rows < upd[k].n))
      return cs_err_set(err, CS_EINVAL, "colstore: update %llu does not fit the batch's schema",
                        (unsigned long long)k);
  upd_plan p;
  if (!plan_make(upd, n_upd, nc, first, first + n, &p)) goto nomem;
  if (p.n_items == 0) return CS_OK;
  cs__upd_win *win = cs__mem_malloc(p.n_items * sizeof *win);
  cs_batch *nb = NULL;
  cs_rc rc = win ? cs_batch_new(schema, &nb, err) : CS_ENOMEM;
  for (uint32_t c = 0; rc == CS_OK && c < nc; c++) {
    const cs_batch_column *bc = &b->cols[c];
    cs_chunk old = {
        .validity = bc->validity, .offsets = bc->offsets, .data = bc->data, .data_bytes = bc->data_bytes};
    uint64_t n_win = cs__chunk_upd_winners(p.callp, first, p.items, p.n_items, c, win);
    if (n_win == 0) {
      rc = cs__batch_put_run(nb, c, &old, 0, n, err);
      continue;
    }
    cs__merged m;
    if ((rc = cs__chunk_merge(&schema->cols[c], n, &old, win, n_win, "a transaction's rows", 0, &m, err)) !=
        CS_OK)
      break;
    cs_chunk merged = {.validity = m.bits, .offsets = m.offsets, .data = m.data, .data_bytes = m.data_bytes};
    rc = cs__batch_put_run(nb, c, &merged, 0, n, err);
    cs__chunk_merged_free(&m);
  }
  plan_free(&p);
  cs__mem_free(win);
  if (rc == CS_ENOMEM && !win) goto nomem;
  if (rc != CS_OK) {
    cs_batch_free(nb);
    return rc;
  }
  cs__batch_end_rows(nb, n);
  *out = nb;
  return CS_OK;
nomem:
  return cs_err_set(err, CS_ENOMEM, "colstore: out of memory applying updates to %llu rows of a batch",
                    (unsigned long long)n);
}

/* Rows in one of the view's records of pending rows: the writer's default
** (the SQL layer's writer uses it), so the view's records are the ones
** COMMIT will write. */
#define VIEW_RECORD_ROWS CS_DEFAULT_RECORD_ROWS

static uint64_t insert_records(const cs_batch *ins) {
  return ins ? (ins->n_rows + VIEW_RECORD_ROWS - 1) / VIEW_RECORD_ROWS : 0;
}

/* Lays out the rows of ins as v's records after base's, each in a block of
** its own (v->own_chunks has room for them). */
static cs_rc view_insert(cs_store *v, const cs_store *base, const cs_batch *ins, cs_err *err) {
  uint32_t nc = base->schema.n_cols;
  uint64_t nr = base->n_records, n = ins ? ins->n_rows : 0, n_recs = insert_records(ins);
  if (n == 0) return CS_OK;
  uint64_t per_col = cs__batch_lay_scratch(n < VIEW_RECORD_ROWS ? n : VIEW_RECORD_ROWS);
  uint8_t *scratch = cs__mem_malloc(per_col * (nc ? nc : 1));
  struct iovec *iov = cs__mem_malloc((size_t)CS__CHUNK_MAX_IOV * (nc ? nc : 1) * sizeof *iov);
  cs_disk_chunk *dcs = cs__mem_malloc((nc ? nc : 1) * sizeof *dcs);
  cs_rc rc = CS_OK;
  if (!scratch || !iov || !dcs) goto nomem;
  for (uint64_t j = 0; j < n_recs; j++) {
    uint64_t a = j * VIEW_RECORD_ROWS, m = n - a < VIEW_RECORD_ROWS ? n - a : VIEW_RECORD_ROWS;
    /* Laid out from offset 64 (an offset 0 means "no bitmap"), as view_chunk does. */
    uint64_t at = CS_ALIGN;
    int n_iov = 0;
    memset(dcs, 0, (nc ? nc : 1) * sizeof *dcs);
    for (uint32_t c = 0; c < nc; c++)
      at = cs__batch_lay_rows(&ins->cols[c], a, m, scratch + per_col * c, at, iov, &n_iov, &dcs[c]);
    uint8_t *raw = cs__mem_malloc(at - CS_ALIGN + 63);
    if (!raw) goto nomem;
    uint8_t *start = (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63), *put = start;
    for (int i = 0; i < n_iov; i++) {
      memcpy(put, iov[i].iov_base, iov[i].iov_len);
      put += iov[i].iov_len;
    }
    v->own_chunks[v->n_own_chunks++] = raw;
    for (uint32_t c = 0; c < nc; c++)
      cs__chunk_resolve(start + (dcs[c].chunk_offset - CS_ALIGN), &dcs[c], &v->chunks[(nr + j) * nc + c]);
    v->first_rows[nr + j] = base->n_rows + a;
  }
  goto done;
nomem:
  rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s with %llu pending inserted rows",
                  base->path, (unsigned long long)n);
done:
  cs__mem_free(scratch), cs__mem_free(iov), cs__mem_free(dcs);
  return rc;
}

/* ----------------------------------------------------------------- view */

/* A view holds its snapshot as its one part: freed, kept current,
** reopened and verified as a dataset of that part is. */
static const cs__store_ops view_ops = {"view", cs__dataset_release, cs__dataset_is_current,
                                       cs__dataset_reopen, cs__dataset_verify};

cs_rc cs_store_with_pending(const cs_store *base, const cs_batch *ins, const uint64_t *del_rows,
                            uint64_t n_del, const cs_update *upd, uint64_t n_upd, cs_store **out,
                            cs_err *err) {
  *out = NULL;
  if (base->parts)
    return cs_err_set(err, CS_EINVAL,
                      "colstore: %s: a view of pending changes is made of one file's snapshot, not of a %s",
                      base->path, base->view ? "view" : "dataset");
  if (ins && ins->n_cols != base->schema.n_cols)
    return cs_err_set(err, CS_EINVAL, "colstore: %s: inserted batch has %u columns, store has %u", base->path,
                      ins->n_cols, base->schema.n_cols);
  for (uint32_t c = 0; ins && c < ins->n_cols; c++)
    if (ins->cols[c].type != base->cols[c].type)
      return cs_err_set(err, CS_ESCHEMA, "colstore: %s: column %s: inserted batch type differs", base->path,
                        base->cols[c].name);
  uint64_t n_ins = ins ? ins->n_rows : 0, limit = base->n_rows + n_ins;
  for (uint64_t i = 0; i < n_del; i++)
    if (del_rows[i] >= limit)
      return cs_err_set(err, CS_EINVAL, "colstore: %s: cannot delete position %llu of %llu", base->path,
                        (unsigned long long)del_rows[i], (unsigned long long)limit);
  cs_rc rc = updates_check(base, limit, upd, n_upd, err);
  if (rc) return rc;
  /* The inserted rows as they read now: with their own updates applied. */
  cs_batch *updated = NULL;
  if (n_ins &&
      (rc = cs_batch_with_updates(ins, &base->schema, base->n_rows, upd, n_upd, &updated, err)) != CS_OK)
    return rc;
  if (updated) ins = updated;
  cs_store *v = cs__mem_calloc(1, sizeof *v);
  if (!v) {
    cs_batch_free(updated);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s", base->path);
  }
  v->ops = &view_ops;
  atomic_init(&v->n_refs, 1);
  v->fd = -1;
  v->view = true;
  if (!(v->parts = cs__mem_malloc(sizeof *v->parts))) goto nomem;
  atomic_fetch_add(&((cs_store *)base)->n_refs,
                   1); /* the part's reference (n_refs is the one mutable field) */
  v->parts[0] = (cs_store *)base;
  v->n_parts = 1;
  uint32_t nc = base->schema.n_cols;
  uint64_t nr = base->n_records, n_recs = nr + insert_records(ins);
  v->part_first_record = cs__mem_calloc(2, sizeof *v->part_first_record);
  v->path = cs__mem_strdup(base->path);
  v->first_rows = cs__mem_malloc((n_recs + 1) * sizeof *v->first_rows);
  v->chunks = cs__mem_malloc((n_recs ? n_recs * nc : 1) * sizeof *v->chunks);
  if (!v->part_first_record || !v->path || !v->first_rows || !v->chunks) goto nomem;
  if ((rc = cs__schema_copy(v, base, err)) != CS_OK) goto fail;
  /* The part holds base's records; the view's own follow them. */
  v->part_first_record[1] = nr;
  memcpy(v->first_rows, base->first_rows, (nr + 1) * sizeof *v->first_rows);
  if (nr) memcpy(v->chunks, base->chunks, nr * nc * sizeof *v->chunks);
  v->n_records = n_recs, v->n_rows = limit;
  v->first_rows[n_recs] = limit;
  v->map_bytes = base->map_bytes, v->generation = base->generation;
  v->format_version = base->format_version, v->free_bytes = base->free_bytes;
  v->recovered = base->recovered, v->slot_damaged = base->slot_damaged;
  v->cache_req = base->cache_req;
  memcpy(v->cache_why, base->cache_why, sizeof v->cache_why);
  v->n_deleted = base->n_deleted;
  if ((rc = view_update(v, base, upd, n_upd, n_recs - nr, err)) != CS_OK) goto fail;
  if ((rc = view_insert(v, base, ins, err)) != CS_OK) goto fail;
  if ((rc = view_delete(v, base, del_rows, n_del, err)) != CS_OK) goto fail;
  cs_batch_free(updated);
  cs__store_uniform_init(v);
  *out = v;
  return CS_OK;
nomem:
  rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a view of %s", base->path);
fail:
  cs_batch_free(updated);
  cs_store_close(v);
  return rc;
}

cs_rc cs_store_with_changes(const cs_store *base, const uint64_t *del_rows, uint64_t n_del,
                            const cs_update *upd, uint64_t n_upd, cs_store **out, cs_err *err) {
  return cs_store_with_pending(base, NULL, del_rows, n_del, upd, n_upd, out, err);
}

cs_rc cs_store_with_deletions(const cs_store *base, const uint64_t *rows, uint64_t n, cs_store **out,
                              cs_err *err) {
  return cs_store_with_changes(base, rows, n, NULL, 0, out, err);
}
