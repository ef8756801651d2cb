/*
** cs_chunk.c - one column chunk laid out, fresh or with some of its values
** replaced by an update.
**
** Three places make chunks: the writer's records (cs_writer.c), the
** writer's patch blocks (an UPDATE at prepare), and the view that shows a
** transaction its own pending updates before they are written
** (cs_view.c).  All three must give the same chunk for the same values:
** the readers trust a chunk's zone map and sorted flag (a predicate skips
** a record on its min/max, a range search bisects a column whose chunks
** say SORTED), so a chunk whose statistics were computed by a second,
** slightly different piece of code would make a query skip a row it
** should return.  So the layout (bitmap, offsets, data, each 64-byte
** aligned and zero padded), the statistics and the checksum are made by
** cs__chunk_lay alone, and the values of a patched chunk (a live chunk's
** values with the winners of an update in place) by cs__chunk_merge
** alone, whoever then writes or holds the result.
**
** Which value wins is decided here too.  An update is a list of calls,
** each changing some columns of some positions; a position named twice,
** in one call or in several, takes its last value in each column the
** later call changes.  Sorting the items (row, call, index) puts every
** position's changes in order and groups them by record; cs__chunk_upd_winners
** then picks, per column, the last item of each position whose call
** changes that column.
**
** The choice a newcomer might question: cs__chunk_merge always builds
** whole new buffers for the chunk instead of copying the old chunk and
** patching it in place.  For fixed-width values that is what it does, but a
** TEXT or BLOB value of another length moves every value after it; one
** walk that copies runs of old values between the winners costs the same
** as a copy and handles both.
*/
#include <string.h>
#include <sys/uio.h>

#include "cs_format_internal.h"

static const uint8_t zero_pad[CS_ALIGN];

/* ----------------------------------------------------------------- stats */

/* Min, max and sortedness of one fixed-width slice, skipping NULLs (and NaN,
** which SQLite reads as NULL).  One body, stamped out per element type.
** Without NULLs the loop has no branch on the data: on random values a
** "went down" branch mispredicts every other row, and laying out re-laid
** records (compaction) spent 18% of its time here (docs/performance.md). */
#define STATS_BODY(T, FIELD, IS_NAN)                        \
  do {                                                      \
    const T *v = (const T *)(const void *)data;             \
    bool any = false, sorted = (validity == NULL);          \
    T lo = 0, hi = 0, prev = 0;                             \
    if (!validity) {                                        \
      uint64_t i = 0;                                       \
      while (i < n && IS_NAN(v[i])) i++;                    \
      if (i > 0) sorted = false;                            \
      if (i < n) {                                          \
        bool nan = false, down = false;                     \
        any = true, lo = hi = prev = v[i];                  \
        for (i++; i < n; i++) {                             \
          T x = v[i];                                       \
          nan |= IS_NAN(x);                                 \
          lo = x < lo ? x : lo;                             \
          hi = x > hi ? x : hi;                             \
          down |= x < prev;                                 \
          prev = x;                                         \
        }                                                   \
        if (nan || down) sorted = false;                    \
      }                                                     \
    } else {                                                \
      for (uint64_t i = 0; i < n; i++) {                    \
        if (!((validity[i >> 3] >> (i & 7)) & 1)) continue; \
        T x = v[i];                                         \
        if (IS_NAN(x)) {                                    \
          sorted = false;                                   \
          continue;                                         \
        }                                                   \
        if (!any)                                           \
          lo = hi = x, any = true;                          \
        else {                                              \
          if (x < lo) lo = x;                               \
          if (x > hi) hi = x;                               \
          if (x < prev) sorted = false;                     \
        }                                                   \
        prev = x;                                           \
      }                                                     \
    }                                                       \
    if (any) {                                              \
      dc->min_bits = 0;                                     \
      dc->max_bits = 0;                                     \
      cs_stat a, b;                                         \
      a.FIELD = lo;                                         \
      b.FIELD = hi;                                         \
      dc->min_bits = a.bits;                                \
      dc->max_bits = b.bits;                                \
      dc->flags |= CS_CHUNK_HAS_MINMAX;                     \
    }                                                       \
    if (sorted) dc->flags |= CS_CHUNK_SORTED;               \
  } while (0)

#define NOT_NAN(x) 0
#define IS_NAN_F(x) ((x) != (x))

static void chunk_stats(cs_type t, const uint8_t *data, const uint8_t *validity, uint64_t n,
                        cs_disk_chunk *dc) {
  switch (t) {
    case CS_TYPE_INT8: STATS_BODY(int8_t, i, NOT_NAN); break;
    case CS_TYPE_INT16: STATS_BODY(int16_t, i, NOT_NAN); break;
    case CS_TYPE_INT32: STATS_BODY(int32_t, i, NOT_NAN); break;
    case CS_TYPE_INT64: STATS_BODY(int64_t, i, NOT_NAN); break;
    case CS_TYPE_UINT8:
    case CS_TYPE_BOOL: STATS_BODY(uint8_t, i, NOT_NAN); break;
    case CS_TYPE_UINT16: STATS_BODY(uint16_t, i, NOT_NAN); break;
    case CS_TYPE_UINT32: STATS_BODY(uint32_t, i, NOT_NAN); break;
    case CS_TYPE_FLOAT32: STATS_BODY(float, f, IS_NAN_F); break;
    case CS_TYPE_FLOAT64: STATS_BODY(double, f, IS_NAN_F); break;
    default: break; /* TEXT/BLOB carry no zone map in format 1 */
  }
}

/* ---------------------------------------------------------------- layout */

static void pad_push(struct iovec *iov, int *n, uint64_t bytes) {
  uint64_t pad = cs__align64(bytes) - bytes;
  if (pad) iov[(*n)++] = (struct iovec){(void *)zero_pad, pad};
}

uint64_t cs__chunk_lay(cs_type type, uint64_t n, const uint8_t *bitmap, const int64_t *offsets,
                       const uint8_t *data, uint64_t data_bytes, uint64_t at, struct iovec *iov, int *n_iov,
                       cs_disk_chunk *dc) {
  int first = *n_iov;
  dc->chunk_offset = at;
  if (bitmap) {
    uint64_t vb = (n + 7) / 8;
    dc->validity_offset = at;
    iov[(*n_iov)++] = (struct iovec){(void *)bitmap, vb};
    pad_push(iov, n_iov, vb);
    at += cs__align64(vb);
  }
  if (offsets) {
    dc->offsets_offset = at;
    iov[(*n_iov)++] = (struct iovec){(void *)offsets, (n + 1) * 8};
    pad_push(iov, n_iov, (n + 1) * 8);
    at += cs__align64((n + 1) * 8);
  }
  dc->data_offset = at;
  dc->data_bytes = data_bytes;
  if (data_bytes) iov[(*n_iov)++] = (struct iovec){(void *)data, data_bytes};
  pad_push(iov, n_iov, data_bytes);
  at += cs__align64(data_bytes);
  dc->chunk_bytes = at - dc->chunk_offset;
  dc->checksum = cs__hash_iov(&iov[first], *n_iov - first);
  chunk_stats(type, data, bitmap, n, dc);
  return at;
}

/* --------------------------------------------------------------- updates */

int cs__chunk_upd_cmp(const void *pa, const void *pb) {
  const cs__upd_item *a = pa, *b = pb;
  if (a->row != b->row) return a->row < b->row ? -1 : 1;
  if (a->call != b->call) return a->call < b->call ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* The values call changes in column col, or NULL. */
static const cs__upd_values *call_values(const cs__upd_call *call, uint32_t col) {
  uint32_t lo = 0, hi = call->n_sel;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (call->sel[mid] < col)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < call->n_sel && call->sel[lo] == col ? &call->vals[lo] : NULL;
}

uint64_t cs__chunk_upd_winners(const cs__upd_call *const *calls, uint64_t first_row, const cs__upd_item *it,
                               uint64_t n, uint32_t col, cs__upd_win *out) {
  uint64_t k = 0;
  for (uint64_t a = 0, b; a < n; a = b) {
    for (b = a + 1; b < n && it[b].row == it[a].row;) b++;
    for (uint64_t j = b; j-- > a;) {
      const cs__upd_values *v = call_values(calls[it[j].call], col);
      if (v) {
        out[k++] = (cs__upd_win){it[j].row - first_row, it[j].index, v};
        break;
      }
    }
  }
  return k;
}

static bool bit_get(const uint8_t *bits, uint64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
static void bit_put(uint8_t *bits, uint64_t i, bool v) {
  bits[i >> 3] = (uint8_t)((bits[i >> 3] & ~(1u << (i & 7))) | ((unsigned)v << (i & 7)));
}

void cs__chunk_merged_free(cs__merged *m) {
  cs__mem_free(m->bits), cs__mem_free(m->offsets), cs__mem_free(m->data);
  memset(m, 0, sizeof *m);
}

cs_rc cs__chunk_merge(const cs_column *column, uint64_t n, const cs_chunk *old, const cs__upd_win *win,
                      uint64_t n_win, const char *path, uint64_t rec, cs__merged *out, cs_err *err) {
  memset(out, 0, sizeof *out);
  uint64_t vb = (n + 7) / 8, width = cs_type_width(column->type), data_bytes = n * width;
  const uint8_t *odata = old->data;
  if (!(out->bits = cs__mem_malloc(vb ? vb : 1))) goto nomem;
  if (old->validity)
    memcpy(out->bits, old->validity, vb);
  else
    memset(out->bits, 0xFF, vb);
  if (n & 7) out->bits[vb - 1] &= (uint8_t)((1u << (n & 7)) - 1);
  for (uint64_t k = 0; k < n_win; k++)
    bit_put(out->bits, win[k].local, bit_get(win[k].v->validity, win[k].index));
  if (width) {
    if (!(out->data = cs__mem_malloc(data_bytes ? data_bytes : 1))) goto nomem;
    memcpy(out->data, odata, data_bytes);
    for (uint64_t k = 0; k < n_win; k++)
      memcpy(out->data + win[k].local * width, win[k].v->data + win[k].index * width, width);
  } else {
    /* The old offsets are proven before any is used to copy bytes: a
    ** damaged one would read outside the chunk. */
    const int64_t *oo = old->offsets;
    bool ok = oo[0] == 0 && (uint64_t)oo[n] == old->data_bytes;
    for (uint64_t i = 0; ok && i < n; i++) ok = oo[i + 1] >= oo[i];
    if (!ok) {
      cs__chunk_merged_free(out);
      return cs_err_set(err, CS_ECORRUPT,
                        "colstore: %s: record %llu, column %s: TEXT/BLOB offsets are damaged", path,
                        (unsigned long long)rec, column->name);
    }
    data_bytes = old->data_bytes;
    for (uint64_t k = 0; k < n_win; k++) {
      const int64_t *no = win[k].v->offsets;
      data_bytes += (uint64_t)(no[win[k].index + 1] - no[win[k].index]) -
                    (uint64_t)(oo[win[k].local + 1] - oo[win[k].local]);
    }
    out->offsets = cs__mem_malloc((n + 1) * 8);
    out->data = cs__mem_malloc(data_bytes ? data_bytes : 1);
    if (!out->offsets || !out->data) goto nomem;
    /* Runs of old values between the winners, each winner's new value. */
    int64_t *offs = out->offsets;
    uint64_t put = 0, i = 0;
    offs[0] = 0;
    for (uint64_t k = 0; k <= n_win; k++) {
      uint64_t end = k < n_win ? win[k].local : n, run = (uint64_t)(oo[end] - oo[i]);
      if (run) memcpy(out->data + put, odata + oo[i], run);
      for (; i < end; i++) offs[i + 1] = offs[i] + (oo[i + 1] - oo[i]);
      put += run;
      if (k == n_win) break;
      const int64_t *no = win[k].v->offsets;
      uint64_t len = (uint64_t)(no[win[k].index + 1] - no[win[k].index]);
      if (len) memcpy(out->data + put, win[k].v->data + no[win[k].index], len);
      put += len;
      offs[i + 1] = offs[i] + (int64_t)len;
      i++;
    }
  }
  uint64_t valid = 0;
  for (uint64_t i = 0; i < vb; i++) valid += (uint64_t)__builtin_popcount(out->bits[i]);
  out->data_bytes = data_bytes;
  out->null_count = n - valid;
  return CS_OK;
nomem:
  cs__chunk_merged_free(out);
  return cs_err_set(err, CS_ENOMEM, "colstore: out of memory updating a chunk of %llu rows",
                    (unsigned long long)n);
}

/* ------------------------------------------------------------- checked */

cs_rc cs__chunk_check(const cs_disk_chunk *dc, const cs_column *col, uint64_t n_rows, uint64_t lo_bound,
                      uint64_t hi_bound, bool absolute, const char *path, uint64_t rec, cs_err *err) {
  const char *why = NULL;
  size_t width = cs_type_width(col->type);
  uint64_t lo = dc->chunk_offset, hi;
  if (!cs__span_in(dc->chunk_offset, dc->chunk_bytes, lo_bound, hi_bound) || (lo % CS_ALIGN) != 0) {
    why = absolute ? "chunk lies outside its patch block" : "chunk lies outside its record";
    goto bad;
  }
  hi = lo + dc->chunk_bytes;
  if (dc->null_count > n_rows || (dc->null_count > 0 && !col->nullable)) {
    why = "null count is impossible";
    goto bad;
  }
  if ((dc->null_count > 0) != (dc->validity_offset != 0)) {
    why = "validity bitmap and null count disagree";
    goto bad;
  }
  if (dc->validity_offset &&
      (!cs__span_in(dc->validity_offset, (n_rows + 7) / 8, lo, hi) || dc->validity_offset % CS_ALIGN)) {
    why = "validity bitmap lies outside its chunk";
    goto bad;
  }
  if (!cs__span_in(dc->data_offset, dc->data_bytes, lo, hi) || dc->data_offset % CS_ALIGN) {
    why = "data lies outside its chunk";
    goto bad;
  }
  if (width) {
    if (dc->offsets_offset != 0 || n_rows > UINT64_MAX / width || dc->data_bytes != n_rows * width) {
      why = "data size does not match the row count";
      goto bad;
    }
  } else {
    if (dc->offsets_offset == 0 || n_rows >= UINT64_MAX / 8 ||
        !cs__span_in(dc->offsets_offset, (n_rows + 1) * 8, lo, hi) || dc->offsets_offset % CS_ALIGN) {
      why = "offsets lie outside their chunk";
      goto bad;
    }
  }
  /* CS_CHUNK_ABSOLUTE exactly where the caller expects a patch's chunk. */
  uint32_t known = CS_CHUNK_SORTED | CS_CHUNK_HAS_MINMAX | (absolute ? CS_CHUNK_ABSOLUTE : 0);
  if ((dc->flags & ~known) || absolute != ((dc->flags & CS_CHUNK_ABSOLUTE) != 0)) {
    why = "unknown chunk flags";
    goto bad;
  }
  return CS_OK;
bad:
  return cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu, column %s: %s", path,
                    (unsigned long long)rec, col->name, why);
}
