/*
** cs_batch.c - rows gathered in column form before they are written.
**
** INSERT buffers a transaction's rows here and colstore_create() streams a
** query's rows through it, so both write exactly the same bytes.  The
** buffers are already shaped like a record's column chunks (values packed
** at their storage width, an LSB-first validity bitmap, int64 offsets for
** TEXT/BLOB), which lets the writer emit slices of them with writev without
** another copy.  Truncation is O(columns): a savepoint rollback only moves
** the counters back.
**
** Rows of a batch column become one chunk here (cs__batch_lay_rows), for
** the writer's records and the view's pending rows alike, through
** format/'s cs__chunk_lay: the batch knows its buffers, the format the
** layout.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "cs_write_internal.h"

/* A buffer of `bytes`: from BATCH_BIG_BYTES up a big block (cs_mem_big_alloc:
** huge pages advised, and a block another query freed reused warm), so a
** column appended whole (cs_batch_append_arrays) does not pay a page fault
** every 4 KiB on its first touch; below, the C library's.  Which it is
** follows from the capacity, so buf_free needs no flag. */
#define BATCH_BIG_BYTES ((uint64_t)2 << 20) /* where cs_mem_big_alloc starts advising huge pages */

static void *buf_alloc(uint64_t bytes) {
  return bytes >= BATCH_BIG_BYTES ? cs_mem_big_alloc(bytes) : cs__mem_malloc((size_t)bytes);
}

static void buf_free(void *p, uint64_t bytes) {
  if (bytes >= BATCH_BIG_BYTES)
    cs_mem_big_free(p);
  else
    cs__mem_free(p);
}

/* Growth out of line, its test inline: every put asks it up to three
** times, and the call was 11% of an import's CPU (docs/performance.md, "CSV
** import: the fast path"). */
static cs_rc grow_to(void **p, uint64_t *cap, uint64_t need, size_t unit, cs_err *err)
    __attribute__((noinline));

static inline cs_rc grow(void **p, uint64_t *cap, uint64_t need, size_t unit, cs_err *err) {
  return need <= *cap ? CS_OK : grow_to(p, cap, need, unit, err);
}

static cs_rc grow_to(void **p, uint64_t *cap, uint64_t need, size_t unit, cs_err *err) {
  uint64_t n = *cap ? *cap : 1024;
  while (n < need) n *= 2;
  void *q = n * unit >= BATCH_BIG_BYTES ? buf_alloc(n * unit) : cs__mem_realloc(*p, n * unit);
  if (!q)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory growing a batch to %llu values",
                      (unsigned long long)need);
  if (n * unit >= BATCH_BIG_BYTES) {
    /* a new block: the old one's contents moved over by hand */
    if (*cap) memcpy(q, *p, *cap * unit);
    buf_free(*p, *cap * unit);
  }
  *p = q;
  *cap = n;
  return CS_OK;
}

cs_rc cs_batch_new(const cs_schema *schema, cs_batch **out, cs_err *err) {
  *out = NULL;
  /* On lines of their own: the importer fills a batch per thread, and each
  ** put writes the counters here (cs__mem_calloc_lines). */
  cs_batch *b = cs__mem_calloc_lines(1, sizeof *b);
  if (!b || !(b->cols = cs__mem_calloc_lines(schema->n_cols ? schema->n_cols : 1, sizeof *b->cols))) {
    cs__mem_free(b);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory creating a batch");
  }
  b->n_cols = schema->n_cols;
  for (uint32_t i = 0; i < schema->n_cols; i++) {
    b->cols[i].type = schema->cols[i].type;
    b->cols[i].width = cs_type_width(schema->cols[i].type);
  }
  *out = b;
  return CS_OK;
}

void cs_batch_free(cs_batch *b) {
  if (!b) return;
  for (uint32_t i = 0; i < b->n_cols; i++) {
    buf_free(b->cols[i].data, b->cols[i].data_cap);
    buf_free(b->cols[i].offsets, b->cols[i].offsets_cap * sizeof(int64_t));
    buf_free(b->cols[i].validity, b->cols[i].validity_cap);
  }
  cs__mem_free(b->cols);
  cs__mem_free(b);
}

uint64_t cs_batch_rows(const cs_batch *b) { return b->n_rows; }

void cs_batch_truncate(cs_batch *b, uint64_t n_rows) {
  if (n_rows > b->n_rows) return;
  for (uint32_t i = 0; i < b->n_cols; i++) {
    cs_batch_column *c = &b->cols[i];
    c->n_values = n_rows;
    c->data_bytes = c->width ? n_rows * c->width : (n_rows ? (uint64_t)c->offsets[n_rows] : 0);
    c->n_nulls = c->validity ? cs__bits_zeros(c->validity, 0, n_rows) : 0;
  }
  b->n_rows = n_rows;
}

void cs_batch_clear(cs_batch *b) { cs_batch_truncate(b, 0); }

/* Reserves room for one more value and records its validity. */
static cs_rc put_begin(cs_batch *b, uint32_t col, bool valid, uint64_t bytes, cs_err *err) {
  cs_batch_column *c = &b->cols[col];
  uint64_t k = c->n_values;
  /* Every buffer is grown before anything is written, so a failed put
  ** changes nothing (a grown buffer is only spare capacity). */
  cs_rc rc = grow((void **)&c->validity, &c->validity_cap, (k >> 3) + 1, 1, err);
  if (!rc && c->width == 0) rc = grow((void **)&c->offsets, &c->offsets_cap, k + 2, sizeof(int64_t), err);
  if (!rc) rc = grow((void **)&c->data, &c->data_cap, c->data_bytes + bytes, 1, err);
  if (rc) return rc;
  /* Clear the bit (and any above it, left by a cancelled or truncated row)
  ** before setting it: truncation only moves the counters back. */
  c->validity[k >> 3] &= (uint8_t)((1u << (k & 7)) - 1);
  c->validity[k >> 3] |= (uint8_t)((valid ? 1u : 0u) << (k & 7));
  if (!valid) c->n_nulls++;
  if (c->width == 0) c->offsets[0] = 0;
  return CS_OK;
}

static void put_end(cs_batch_column *c, uint64_t bytes) {
  c->data_bytes += bytes;
  c->n_values++;
  if (c->width == 0) c->offsets[c->n_values] = (int64_t)c->data_bytes;
}

cs_rc cs_batch_put_null(cs_batch *b, uint32_t col, cs_err *err) {
  cs_batch_column *c = &b->cols[col];
  uint64_t bytes = c->width;
  cs_rc rc = put_begin(b, col, false, bytes, err);
  if (rc) return rc;
  if (bytes) memset(c->data + c->data_bytes, 0, bytes);
  put_end(c, bytes);
  return CS_OK;
}

cs_rc cs_batch_put_i64(cs_batch *b, uint32_t col, int64_t v, cs_err *err) {
  cs_batch_column *c = &b->cols[col];
  if (!cs_type_is_integer(c->type))
    return cs_err_set(err, CS_EINVAL, "colstore: integer put into a %s column", cs_type_name(c->type));
  cs_rc rc = put_begin(b, col, true, c->width, err);
  if (rc) return rc;
  uint8_t *p = c->data + c->data_bytes;
  switch (c->type) {
    case CS_TYPE_INT8: {
      int8_t x = (int8_t)v;
      memcpy(p, &x, 1);
      break;
    }
    case CS_TYPE_UINT8:
    case CS_TYPE_BOOL: {
      uint8_t x = (uint8_t)v;
      memcpy(p, &x, 1);
      break;
    }
    case CS_TYPE_INT16: {
      int16_t x = (int16_t)v;
      memcpy(p, &x, 2);
      break;
    }
    case CS_TYPE_UINT16: {
      uint16_t x = (uint16_t)v;
      memcpy(p, &x, 2);
      break;
    }
    case CS_TYPE_INT32: {
      int32_t x = (int32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    case CS_TYPE_UINT32: {
      uint32_t x = (uint32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    default: memcpy(p, &v, 8); break;
  }
  put_end(c, c->width);
  return CS_OK;
}

cs_rc cs_batch_put_f64(cs_batch *b, uint32_t col, double v, cs_err *err) {
  cs_batch_column *c = &b->cols[col];
  if (!cs_type_is_float(c->type))
    return cs_err_set(err, CS_EINVAL, "colstore: float put into a %s column", cs_type_name(c->type));
  cs_rc rc = put_begin(b, col, true, c->width, err);
  if (rc) return rc;
  if (c->type == CS_TYPE_FLOAT32) {
    float f = (float)v;
    memcpy(c->data + c->data_bytes, &f, 4);
  } else {
    memcpy(c->data + c->data_bytes, &v, 8);
  }
  put_end(c, c->width);
  return CS_OK;
}

cs_rc cs_batch_put_bytes(cs_batch *b, uint32_t col, const void *p, uint64_t n, cs_err *err) {
  cs_batch_column *c = &b->cols[col];
  if (c->width != 0)
    return cs_err_set(err, CS_EINVAL, "colstore: bytes put into a %s column", cs_type_name(c->type));
  cs_rc rc = put_begin(b, col, true, n, err);
  if (rc) return rc;
  if (n) memcpy(c->data + c->data_bytes, p, n);
  put_end(c, n);
  return CS_OK;
}

/* Bits [s0, s0 + n) of src (NULL: all 1) to bits [d0, d0 + n) of dst,
** whose bytes from d0 on may hold stale bits.  A bit at a time only up to
** dst's next byte boundary and after the last whole byte; between, a byte
** of dst per step, from a 16-bit window of src (compaction drops deleted
** rows, so its runs start anywhere). */
static void bits_copy(uint8_t *dst, uint64_t d0, const uint8_t *src, uint64_t s0, uint64_t n) {
  uint64_t i = 0;
  for (; i < n && ((d0 + i) & 7); i++) {
    uint64_t d = d0 + i, s = s0 + i;
    unsigned bit = src ? (src[s >> 3] >> (s & 7)) & 1u : 1u;
    dst[d >> 3] = (uint8_t)((dst[d >> 3] & ~(1u << (d & 7))) | (bit << (d & 7)));
  }
  uint64_t whole = (n - i) >> 3;
  uint8_t *out = dst + ((d0 + i) >> 3);
  if (!src) {
    memset(out, 0xff, whole);
  } else if (((s0 + i) & 7) == 0) {
    memcpy(out, src + ((s0 + i) >> 3), whole);
  } else {
    const uint8_t *in = src + ((s0 + i) >> 3);
    unsigned shift = (unsigned)((s0 + i) & 7);
    /* The window's second byte lies inside src: it holds bit s0 + i + 8k + 7. */
    for (uint64_t k = 0; k < whole; k++) out[k] = (uint8_t)((in[k] | ((unsigned)in[k + 1] << 8)) >> shift);
  }
  for (i += whole * 8; i < n; i++) {
    uint64_t d = d0 + i, s = s0 + i;
    unsigned bit = src ? (src[s >> 3] >> (s & 7)) & 1u : 1u;
    dst[d >> 3] = (uint8_t)((dst[d >> 3] & ~(1u << (d & 7))) | (bit << (d & 7)));
  }
}

cs_rc cs__batch_put_run(cs_batch *b, uint32_t col, const cs_chunk *ch, uint64_t from, uint64_t n,
                        cs_err *err) {
  cs_batch_column *c = &b->cols[col];
  uint64_t k = c->n_values, bytes;
  int64_t s0 = 0;
  if (c->width) {
    bytes = n * c->width;
  } else {
    s0 = ch->offsets[from];
    bytes = (uint64_t)(ch->offsets[from + n] - s0);
  }
  /* Grown first, as put_begin does: a failure changes nothing. */
  cs_rc rc = grow((void **)&c->validity, &c->validity_cap, ((k + n) >> 3) + 1, 1, err);
  if (!rc && c->width == 0) rc = grow((void **)&c->offsets, &c->offsets_cap, k + n + 2, sizeof(int64_t), err);
  if (!rc) rc = grow((void **)&c->data, &c->data_cap, c->data_bytes + bytes + 1, 1, err);
  if (rc) return rc;
  bits_copy(c->validity, k, ch->validity, from, n);
  if (ch->validity) c->n_nulls += cs__bits_zeros(ch->validity, from, n);
  if (c->width) {
    memcpy(c->data + c->data_bytes, (const uint8_t *)ch->data + from * c->width, bytes);
  } else {
    if (k == 0) c->offsets[0] = 0;
    if (bytes) memcpy(c->data + c->data_bytes, (const uint8_t *)ch->data + s0, bytes);
    int64_t base = (int64_t)c->data_bytes - s0;
    for (uint64_t i = 1; i <= n; i++) c->offsets[k + i] = ch->offsets[from + i] + base;
  }
  c->data_bytes += bytes;
  c->n_values += n;
  return CS_OK;
}

void cs__batch_end_rows(cs_batch *b, uint64_t n) {
  b->n_rows += n;
#ifndef NDEBUG
  for (uint32_t i = 0; i < b->n_cols; i++)
    if (b->cols[i].n_values != b->n_rows) abort(); /* a caller skipped or doubled a column */
#endif
}

void cs_batch_end_row(cs_batch *b) {
  b->n_rows++;
#ifndef NDEBUG
  for (uint32_t i = 0; i < b->n_cols; i++)
    if (b->cols[i].n_values != b->n_rows) abort(); /* a caller skipped or doubled a column */
#endif
}

void cs_batch_cancel_row(cs_batch *b) { cs_batch_truncate(b, b->n_rows); }

bool cs_batch_get(const cs_batch *b, uint32_t col, uint64_t row, cs_stat *out) {
  const cs_batch_column *c = &b->cols[col];
  out->bits = 0;
  if (!((c->validity[row >> 3] >> (row & 7)) & 1)) return false;
  const uint8_t *p = c->data + row * c->width;
  switch (c->type) {
    case CS_TYPE_INT8: {
      int8_t x;
      memcpy(&x, p, 1);
      out->i = x;
      break;
    }
    case CS_TYPE_UINT8:
    case CS_TYPE_BOOL: out->i = *p; break;
    case CS_TYPE_INT16: {
      int16_t x;
      memcpy(&x, p, 2);
      out->i = x;
      break;
    }
    case CS_TYPE_UINT16: {
      uint16_t x;
      memcpy(&x, p, 2);
      out->i = x;
      break;
    }
    case CS_TYPE_INT32: {
      int32_t x;
      memcpy(&x, p, 4);
      out->i = x;
      break;
    }
    case CS_TYPE_UINT32: {
      uint32_t x;
      memcpy(&x, p, 4);
      out->i = x;
      break;
    }
    case CS_TYPE_FLOAT32: {
      float x;
      memcpy(&x, p, 4);
      out->f = x;
      break;
    }
    case CS_TYPE_FLOAT64: memcpy(&out->f, p, 8); break;
    case CS_TYPE_INT64: memcpy(&out->i, p, 8); break;
    default: break;
  }
  return true;
}

void cs_batch_column_reset(cs_batch *b, uint32_t col, cs_type type) {
  cs_batch_column *c = &b->cols[col];
  c->type = type;
  c->width = cs_type_width(type);
  c->n_values = 0;
  c->data_bytes = 0;
  c->n_nulls = 0;
}

/* ------------------------------------------------------- rows as a chunk */

uint64_t cs__batch_lay_rows(const cs_batch_column *col, uint64_t first, uint64_t n, uint8_t *scratch,
                            uint64_t at, struct iovec *iov, int *n_iov, cs_disk_chunk *dc) {
  uint64_t bitmap_bytes = (n + 7) / 8;
  const uint8_t *validity = col->validity + first / 8;
  uint64_t nulls = col->n_nulls ? cs__bits_zeros(validity, 0, n) : 0; /* else every bit is set */
  if (nulls) {
    memcpy(scratch, validity, bitmap_bytes);
    if (n & 7) scratch[bitmap_bytes - 1] &= (uint8_t)((1u << (n & 7)) - 1);
  }
  const uint8_t *data;
  const int64_t *offs = NULL;
  uint64_t data_bytes;
  if (col->width) {
    data = col->data + first * col->width;
    data_bytes = n * col->width;
  } else {
    int64_t base = col->offsets[first];
    int64_t *rebased = (int64_t *)(void *)(scratch + cs__align64(bitmap_bytes));
    for (uint64_t i = 0; i <= n; i++) rebased[i] = col->offsets[first + i] - base;
    offs = rebased;
    data_bytes = (uint64_t)(col->offsets[first + n] - base);
    data = data_bytes ? col->data + base : NULL; /* only '' and NULLs: the batch may hold no buffer */
  }
  dc->null_count = nulls;
  return cs__chunk_lay(col->type, n, nulls ? scratch : NULL, offs, data, data_bytes, at, iov, n_iov, dc);
}

/* ------------------------------------------------------ columns as arrays */

static int64_t load_i64(const void *p, uint64_t i) {
  int64_t x;
  memcpy(&x, (const uint8_t *)p + 8 * i, 8);
  return x;
}

/* Checks column c's array against n rows and its column; *null_spans is
** set when a NULL TEXT/BLOB value spans bytes (they are dropped). */
static cs_rc array_check(const cs_column *col, const cs_array *a, uint64_t n, bool *null_spans, cs_err *err) {
  size_t w = cs_type_width(col->type);
  *null_spans = false;
  if (!a->data && !a->offsets && a->data_bytes == 0) {
    if (!col->nullable && n)
      return cs_err_set(err, CS_EINVAL, "colstore: column %s is NOT NULL; give its values (%llu rows)",
                        col->name, (unsigned long long)n);
    return CS_OK;
  }
  if (w) {
    if (a->data_bytes != n * w)
      return cs_err_set(err, CS_EINVAL,
                        "colstore: column %s (%s) takes %llu bytes for %llu rows (%zu a value), got %llu",
                        col->name, cs_type_name(col->type), (unsigned long long)(n * w),
                        (unsigned long long)n, w, (unsigned long long)a->data_bytes);
    if (col->type == CS_TYPE_BOOL) {
      const uint8_t *v = a->data;
      for (uint64_t i = 0; i < n; i++)
        if (v[i] > 1 && (!a->valid || a->valid[i]))
          return cs_err_set(err, CS_EINVAL,
                            "colstore: column %s (BOOL) holds byte %u at row %llu; give 0 or 1", col->name,
                            v[i], (unsigned long long)i);
    }
  } else {
    if (!a->offsets)
      return cs_err_set(err, CS_EINVAL, "colstore: column %s (%s) needs %s:offsets (%llu int64 offsets)",
                        col->name, cs_type_name(col->type), col->name, (unsigned long long)(n + 1));
    int64_t prev = load_i64(a->offsets, 0);
    if (prev < 0 || (uint64_t)prev > a->data_bytes)
      return cs_err_set(
          err, CS_EINVAL,
          "colstore: %s:offsets[0] is %lld, outside the %llu bytes of %s; offsets point into them", col->name,
          (long long)prev, (unsigned long long)a->data_bytes, col->name);
    for (uint64_t i = 1; i <= n; i++) {
      int64_t x = load_i64(a->offsets, i);
      if (x < prev || (uint64_t)x > a->data_bytes)
        return cs_err_set(err, CS_EINVAL,
                          "colstore: %s:offsets[%llu] is %lld after %lld; offsets must not decrease and "
                          "stay within the %llu bytes of %s",
                          col->name, (unsigned long long)i, (long long)x, (long long)prev,
                          (unsigned long long)a->data_bytes, col->name);
      if (x != prev && a->valid && !a->valid[i - 1]) *null_spans = true;
      prev = x;
    }
  }
  if (a->valid && !col->nullable) {
    const uint8_t *z = memchr(a->valid, 0, n);
    if (z)
      return cs_err_set(err, CS_EINVAL, "colstore: column %s is NOT NULL but %s:valid marks row %llu NULL",
                        col->name, col->name, (unsigned long long)(z - a->valid));
  }
  return CS_OK;
}

/* Bits [d0, d0 + n) of dst from the bytes valid[0, n) (nonzero = 1), eight
** at a time between dst's byte boundaries: each byte normalized to 0/1
** (its low seven bits added to 0x7F set bit 7 when any is set) and the
** eight packed by one multiply (byte j -> bit j). */
static void bits_from_bytes(uint8_t *dst, uint64_t d0, const uint8_t *valid, uint64_t n) {
  uint64_t i = 0;
  for (; i < n && ((d0 + i) & 7); i++) {
    uint64_t d = d0 + i;
    dst[d >> 3] = (uint8_t)((dst[d >> 3] & ~(1u << (d & 7))) | ((valid[i] != 0) << (d & 7)));
  }
  uint8_t *out = dst + ((d0 + i) >> 3);
  const uint64_t lo7 = 0x7F7F7F7F7F7F7F7Full, ones = 0x0101010101010101ull;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    memcpy(&x, valid + i, 8);
    x = ((((x & lo7) + lo7) | x) >> 7) & ones;
    *out++ = (uint8_t)((x * 0x0102040810204080ull) >> 56);
  }
  for (; i < n; i++) {
    uint64_t d = d0 + i;
    dst[d >> 3] = (uint8_t)((dst[d >> 3] & ~(1u << (d & 7))) | ((valid[i] != 0) << (d & 7)));
  }
}

/* Copies a checked array (n rows) onto the end of batch column c, whose
** buffers were grown for it. */
static void array_copy(cs_batch_column *c, const cs_array *a, uint64_t n, bool null_spans) {
  uint64_t k = c->n_values;
  bool all_null = !a->data && !a->offsets && a->data_bytes == 0;
  if (all_null) {
    /* bits [k, k + n) cleared: the rest of k's byte, then whole bytes */
    c->validity[k >> 3] &= (uint8_t)((1u << (k & 7)) - 1);
    uint64_t from = (k >> 3) + 1, to = (k + n + 7) >> 3;
    if (to > from) memset(c->validity + from, 0, to - from);
    c->n_nulls += n;
  } else if (a->valid) {
    bits_from_bytes(c->validity, k, a->valid, n);
    c->n_nulls += cs__bits_zeros(c->validity, k, n);
  } else {
    bits_copy(c->validity, k, NULL, 0, n);
  }
  if (c->width) {
    uint8_t *dst = c->data + c->data_bytes;
    if (all_null)
      memset(dst, 0, n * c->width);
    else
      memcpy(dst, a->data, n * c->width);
    if (a->valid && !all_null)
      for (uint64_t i = 0; i < n; i++)
        if (!a->valid[i]) memset(dst + i * c->width, 0, c->width);
    c->data_bytes += n * c->width;
  } else {
    if (k == 0) c->offsets[0] = 0;
    int64_t at = (int64_t)c->data_bytes;
    if (all_null) {
      for (uint64_t i = 1; i <= n; i++) c->offsets[k + i] = at;
    } else if (!null_spans) {
      int64_t o0 = load_i64(a->offsets, 0), on = load_i64(a->offsets, n);
      if (on > o0) memcpy(c->data + at, (const uint8_t *)a->data + o0, (size_t)(on - o0));
      for (uint64_t i = 1; i <= n; i++) c->offsets[k + i] = at + load_i64(a->offsets, i) - o0;
      at += on - o0;
    } else {
      for (uint64_t i = 0; i < n; i++) {
        int64_t s = load_i64(a->offsets, i), e = load_i64(a->offsets, i + 1);
        if (a->valid[i] && e > s) {
          memcpy(c->data + at, (const uint8_t *)a->data + s, (size_t)(e - s));
          at += e - s;
        }
        c->offsets[k + i + 1] = at;
      }
    }
    c->data_bytes = (uint64_t)at;
  }
  c->n_values += n;
}

cs_rc cs_batch_append_arrays(cs_batch *b, const cs_schema *schema, const cs_array *cols, uint64_t n,
                             cs_err *err) {
  if (schema->n_cols != b->n_cols)
    return cs_err_set(err, CS_ESCHEMA, "colstore: arrays for %u columns given to a batch of %u",
                      schema->n_cols, b->n_cols);
  for (uint32_t i = 0; i < b->n_cols; i++)
    if (schema->cols[i].type != b->cols[i].type)
      return cs_err_set(
          err, CS_ESCHEMA, "colstore: column %s is %s in the arrays' schema but %s in the batch",
          schema->cols[i].name, cs_type_name(schema->cols[i].type), cs_type_name(b->cols[i].type));
  if (n == 0) return CS_OK;
  bool *spans = cs__mem_calloc(b->n_cols ? b->n_cols : 1, sizeof *spans);
  if (!spans)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory appending %llu rows", (unsigned long long)n);
  cs_rc rc = CS_OK;
  for (uint32_t i = 0; rc == CS_OK && i < b->n_cols; i++)
    rc = array_check(&schema->cols[i], &cols[i], n, &spans[i], err);
  /* Every buffer is grown before anything is copied, so a failure changes
  ** nothing but spare capacity. */
  for (uint32_t i = 0; rc == CS_OK && i < b->n_cols; i++) {
    cs_batch_column *c = &b->cols[i];
    const cs_array *a = &cols[i];
    uint64_t k = c->n_values, bytes = c->width ? n * c->width : 0;
    if (!c->width && a->offsets) bytes = (uint64_t)(load_i64(a->offsets, n) - load_i64(a->offsets, 0));
    rc = grow((void **)&c->validity, &c->validity_cap, ((k + n) >> 3) + 1, 1, err);
    if (!rc && c->width == 0)
      rc = grow((void **)&c->offsets, &c->offsets_cap, k + n + 2, sizeof(int64_t), err);
    if (!rc) rc = grow((void **)&c->data, &c->data_cap, c->data_bytes + bytes + 1, 1, err);
  }
  for (uint32_t i = 0; rc == CS_OK && i < b->n_cols; i++) array_copy(&b->cols[i], &cols[i], n, spans[i]);
  if (rc == CS_OK) cs__batch_end_rows(b, n);
  cs__mem_free(spans);
  return rc;
}
