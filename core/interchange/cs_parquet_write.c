/*
** cs_parquet_write.c - colstore columns out as a Parquet file: the format
** writer colstore_export uses for ".parquet" (cs_parquet_writer_ops).
**
** The file is what DuckDB and parquet-mr write by default, so every
** reader takes it: "PAR1", then per row group one column chunk per column
** (an optional dictionary page, then version-1 data pages), then the
** Thrift-compact FileMetaData, its length and "PAR1".  Each colstore type
** keeps its width and signedness through Parquet's logical annotations:
**
**   INT8, INT16, INT32     INT32   INT(8|16|32, signed)
**   UINT8, UINT16, UINT32  INT32   INT(8|16|32, unsigned)  (the bits of the value)
**   INT64                  INT64   (none: Parquet's plain signed 64)
**   FLOAT32, FLOAT64       FLOAT, DOUBLE
**   BOOL                   BOOLEAN
**   TEXT                   BYTE_ARRAY  STRING
**   BLOB                   BYTE_ARRAY  (none)
**
** A NOT NULL column is REQUIRED (no definition levels), any other
** OPTIONAL with its levels in the RLE/bit-packed hybrid.
**
** Rows arrive as slices of whatever size the exporter has (a store's
** record, a query's batch) and are copied into the row group being built,
** already in the physical form and with NULLs left out (the values a
** Parquet page holds), so the encoding of a full group reads dense arrays.
** A row group is row_group_rows rows (default DEFAULT_GROUP_ROWS, DuckDB's
** own size: docs/performance.md, "Export", has the measurement).  Its
** columns are encoded independently, each into its own buffer of pages
** (on threads= OpenMP threads when asked), then written in column order,
** so memory is one row group's values and its encoded bytes.
**
** Per column chunk:
**   dictionary  tried for every type but BOOL: a hash of the distinct
**               values, given up past DICT_MAX_ENTRIES entries or
**               DICT_MAX_BYTES bytes or when 7/8 of the first
**               DICT_PROBE_VALUES values are distinct (unique values: the
**               hashing of the rest would be wasted), kept only when the dictionary and
**               its indices are smaller than the plain values ("where it
**               pays"); then a PLAIN dictionary page and RLE_DICTIONARY
**               data pages (DuckDB's choice of encodings);
**   pages       of at most PAGE_ROWS rows and, for plain TEXT/BLOB, about
**               PAGE_BYTES bytes, each compressed alone by the codec;
**   statistics  null_count and min_value/max_value in the column's own
**               order (unsigned for the UINT types, bytewise for
**               TEXT/BLOB; NaN left out, zero as -0.0 in min and +0.0 in
**               max as the format asks), with column_orders saying so:
**               min/max are left out when there is no value, every value
**               is NaN, or a TEXT/BLOB bound is longer than STAT_MAX_BYTES
**               (a longer bound would have to be truncated and rounded up).
**
** Errors: only allocation and the sink fail here; each is a "colstore:"
** message, and the exporter removes its temporary file.
*/
#include <lz4.h>
#include <math.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "cs_base_internal.h"
#include "cs_interchange_internal.h"

#define DEFAULT_GROUP_ROWS 122880u
#define PAGE_ROWS 131072u
#define PAGE_BYTES (1u << 20)
#define DICT_MAX_ENTRIES 65536u
#define DICT_MAX_BYTES (1u << 20)
#define DICT_PROBE_VALUES 8192u
#define STAT_MAX_BYTES 256u
#define ZSTD_LEVEL 3

/* parquet.thrift's ConvertedType, written beside the logical type for
** readers older than LogicalType. */
enum {
  CT_UTF8 = 0,
  CT_UINT_8 = 11,
  CT_UINT_16 = 12,
  CT_UINT_32 = 13,
  CT_INT_8 = 15,
  CT_INT_16 = 16,
  CT_INT_32 = 17
};

/* ---------------------------------------------------------------- buffers */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static bool buf_reserve(buf *b, size_t more) {
  if (b->n + more <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + more) cap *= 2;
  uint8_t *p = cs__mem_realloc(b->p, cap);
  if (!p) return false;
  b->p = p, b->cap = cap;
  return true;
}

/* Appends after a buf_reserve that covered it. */
static inline void buf_put(buf *b, const void *p, size_t n) {
  if (n) memcpy(b->p + b->n, p, n); /* both may be NULL when n is 0 */
  b->n += n;
}

static inline void put_u32le(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static void buf_free(buf *b) {
  cs__mem_free(b->p);
  *b = (buf){0};
}

/* ------------------------------------------------ RLE/bit-packed hybrid */

static void put_uvarint(buf *b, uint64_t v) {
  while (v >= 0x80) b->p[b->n++] = (uint8_t)(v | 0x80), v >>= 7;
  b->p[b->n++] = (uint8_t)v;
}

/* The most bytes rle_encode writes for n values of width bits. */
static size_t rle_bound(uint64_t n, int width) {
  return (size_t)((n + 7) / 8 * (uint64_t)width + n / 8 * 10 + 32);
}

static uint64_t run_at(const uint32_t *v, uint64_t i, uint64_t n) {
  uint64_t j = i + 1;
  while (j < n && v[j] == v[i]) j++;
  return j - i;
}

/* Encodes v[0, n) at width bits (1..32) into b (reserved by the caller
** for rle_bound): a run of 8 or more equal values as an RLE run, anything
** else bit-packed in groups of 8, the last group padded with zeros (the
** reader knows n).  A bit-packed stretch ends only at a group boundary
** where a run of 8 starts, so every group but the last is whole. */
static void rle_encode(buf *b, const uint32_t *v, uint64_t n, int width) {
  size_t vbytes = (size_t)(width + 7) / 8;
  uint64_t i = 0;
  while (i < n) {
    uint64_t run = run_at(v, i, n);
    if (run >= 8) {
      put_uvarint(b, run << 1);
      for (size_t k = 0; k < vbytes; k++) b->p[b->n++] = (uint8_t)(v[i] >> (8 * k));
      i += run;
      continue;
    }
    uint64_t start = i;
    for (;;) {
      i = i + 8 < n ? i + 8 : n;
      if (i >= n || run_at(v, i, n) >= 8) break;
    }
    uint64_t groups = (i - start + 7) / 8;
    put_uvarint(b, groups << 1 | 1);
    uint64_t acc = 0;
    int bits = 0;
    for (uint64_t k = start; k < start + groups * 8; k++) {
      acc |= (uint64_t)(k < i ? v[k] : 0) << bits;
      bits += width;
      while (bits >= 8) b->p[b->n++] = (uint8_t)acc, acc >>= 8, bits -= 8;
    }
  }
}

/* ---------------------------------------------------------------- codecs */

typedef struct codec_ctx {
  int32_t codec; /* PQ_* */
  ZSTD_CCtx *zstd;
  buf out;
} codec_ctx;

static int32_t codec_of(cs_out_codec c) {
  switch (c) {
    case CS_OUT_SNAPPY: return PQ_SNAPPY;
    case CS_OUT_ZSTD: return PQ_ZSTD;
    case CS_OUT_GZIP: return PQ_GZIP;
    case CS_OUT_LZ4: return PQ_LZ4_RAW;
    default: return PQ_UNCOMPRESSED;
  }
}

/* Compresses src[0, n) into c->out (replacing what it held). */
static cs_rc compress_page(codec_ctx *c, const uint8_t *src, size_t n, cs_err *err) {
  size_t bound = n + 64;
  switch (c->codec) {
    case PQ_SNAPPY: bound = snappy_max_compressed_length(n); break;
    case PQ_ZSTD: bound = ZSTD_compressBound(n); break;
    case PQ_GZIP: bound = compressBound((uLong)n) + 32; break;
    case PQ_LZ4_RAW: bound = (size_t)LZ4_compressBound((int)n); break;
    default: break;
  }
  c->out.n = 0;
  if (!buf_reserve(&c->out, bound))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
  size_t len = bound;
  switch (c->codec) {
    case PQ_SNAPPY:
      if (snappy_compress((const char *)src, n, (char *)c->out.p, &len) != SNAPPY_OK)
        return cs_err_set(err, CS_EIO, "colstore: snappy could not compress a Parquet page");
      break;
    case PQ_ZSTD:
      if (!c->zstd && !(c->zstd = ZSTD_createCCtx()))
        return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
      len = ZSTD_compressCCtx(c->zstd, c->out.p, bound, src, n, ZSTD_LEVEL);
      if (ZSTD_isError(len))
        return cs_err_set(err, CS_EIO, "colstore: zstd could not compress a Parquet page: %s",
                          ZSTD_getErrorName(len));
      break;
    case PQ_GZIP: {
      z_stream z = {0};
      if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet (gzip)");
      z.next_in = (Bytef *)src, z.avail_in = (uInt)n;
      z.next_out = c->out.p, z.avail_out = (uInt)bound;
      int zrc = deflate(&z, Z_FINISH);
      len = z.total_out;
      deflateEnd(&z);
      if (zrc != Z_STREAM_END)
        return cs_err_set(err, CS_EIO, "colstore: gzip could not compress a Parquet page");
      break;
    }
    case PQ_LZ4_RAW: {
      int k = LZ4_compress_default((const char *)src, (char *)c->out.p, (int)n, (int)bound);
      if (k <= 0 && n) return cs_err_set(err, CS_EIO, "colstore: lz4 could not compress a Parquet page");
      len = (size_t)k;
      break;
    }
    default: memcpy(c->out.p, src, n), len = n; break;
  }
  c->out.n = len;
  return CS_OK;
}

/* ------------------------------------------------------------- columns */

/* One column's rows of the row group being built, in Parquet's form. */
typedef struct pq_col {
  const char *name; /* the writer's copy */
  cs_type type;
  int32_t phys;
  size_t pw; /* bytes per staged value: 4, 8, 1 (BOOL), 0 (BYTE_ARRAY) */
  bool optional;
  uint8_t *valid; /* group_rows bits */
  uint64_t n_nulls;
  buf vals;      /* the non-NULL values: pw bytes each, or TEXT/BLOB bytes */
  int64_t *offs; /* TEXT/BLOB: n_vals + 1 offsets into vals */
  uint64_t n_vals;
  /* statistics of the group */
  bool has_minmax;
  int64_t imin, imax;
  double fmin, fmax;
  uint64_t vmin, vmax; /* TEXT/BLOB: the indices of the least and greatest values */
  /* encoding, reused from group to group */
  codec_ctx codec;
  buf page, chunk;
  uint32_t *idx, *levels; /* dictionary indices (n_vals), levels (page rows) */
  uint32_t *slots;        /* the dictionary's hash table: entry + 1, 0 empty */
  uint64_t *entries;      /* each entry's first value index */
  uint64_t n_slots, n_entries;
  /* the encoded chunk (relative offsets; -1: no dictionary page) */
  int64_t dict_at, data_at, uncompressed;
  bool dict;
  cs_rc rc;
  cs_err err;
} pq_col;

struct cs_format_writer {
  cs_sink sink;
  uint64_t at; /* bytes written */
  uint32_t n_cols;
  pq_col *cols;
  char *names;
  int32_t codec;
  uint64_t group_rows, rows_in_group, rows;
  uint32_t threads;
  cs_thrift_out groups; /* the RowGroup structs written so far */
  uint64_t n_groups;
};

static cs_rc emit(cs_format_writer *w, const void *p, size_t n, cs_err *err) {
  cs_rc rc = w->sink.write(w->sink.ctx, p, n, err);
  if (rc == CS_OK) w->at += n;
  return rc;
}

static void col_phys(pq_col *c) {
  switch (c->type) {
    case CS_TYPE_INT64: c->phys = PQ_INT64, c->pw = 8; break;
    case CS_TYPE_FLOAT32: c->phys = PQ_FLOAT, c->pw = 4; break;
    case CS_TYPE_FLOAT64: c->phys = PQ_DOUBLE, c->pw = 8; break;
    case CS_TYPE_BOOL: c->phys = PQ_BOOLEAN, c->pw = 1; break;
    case CS_TYPE_TEXT:
    case CS_TYPE_BLOB: c->phys = PQ_BYTE_ARRAY, c->pw = 0; break;
    default: c->phys = PQ_INT32, c->pw = 4; break;
  }
}

static void col_reset(pq_col *c) {
  c->n_nulls = 0;
  c->n_vals = 0;
  c->vals.n = 0;
  c->has_minmax = false;
  if (c->offs) c->offs[0] = 0;
}

static void col_free(pq_col *c) {
  cs__mem_free(c->valid);
  buf_free(&c->vals);
  cs__mem_free(c->offs);
  buf_free(&c->codec.out);
  ZSTD_freeCCtx(c->codec.zstd);
  buf_free(&c->page);
  buf_free(&c->chunk);
  cs__mem_free(c->idx);
  cs__mem_free(c->levels);
  cs__mem_free(c->slots);
  cs__mem_free(c->entries);
}

static void bits_put(uint8_t *dst, uint64_t d0, const uint8_t *src, uint64_t s0, uint64_t n) {
  if (!src) {
    uint64_t i = 0;
    for (; i < n && ((d0 + i) & 7); i++) dst[(d0 + i) >> 3] |= (uint8_t)(1u << ((d0 + i) & 7));
    uint64_t whole = (n - i) / 8;
    memset(dst + ((d0 + i) >> 3), 0xff, whole);
    for (i += whole * 8; i < n; i++) dst[(d0 + i) >> 3] |= (uint8_t)(1u << ((d0 + i) & 7));
    return;
  }
  if (((d0 | s0) & 7) == 0) {
    memcpy(dst + (d0 >> 3), src + (s0 >> 3), n / 8);
    for (uint64_t i = n / 8 * 8; i < n; i++)
      if ((src[(s0 + i) >> 3] >> ((s0 + i) & 7)) & 1) dst[(d0 + i) >> 3] |= (uint8_t)(1u << ((d0 + i) & 7));
    return;
  }
  for (uint64_t i = 0; i < n; i++)
    if ((src[(s0 + i) >> 3] >> ((s0 + i) & 7)) & 1) dst[(d0 + i) >> 3] |= (uint8_t)(1u << ((d0 + i) & 7));
}

static inline int64_t load_int(cs_type t, const void *data, uint64_t i) {
  switch (t) {
    case CS_TYPE_INT8: return ((const int8_t *)data)[i];
    case CS_TYPE_INT16: return ((const int16_t *)data)[i];
    case CS_TYPE_INT32: return ((const int32_t *)data)[i];
    case CS_TYPE_UINT8: return ((const uint8_t *)data)[i];
    case CS_TYPE_UINT16: return ((const uint16_t *)data)[i];
    case CS_TYPE_UINT32: return ((const uint32_t *)data)[i];
    case CS_TYPE_BOOL: return ((const uint8_t *)data)[i];
    default: return ((const int64_t *)data)[i];
  }
}

/* Appends rows [from, from + n) of ch to column c at group row at. */
static cs_rc col_append(pq_col *c, const cs_chunk *ch, uint64_t from, uint64_t n, uint64_t at, cs_err *err) {
  bits_put(c->valid, at, ch->validity, from, n);
  if (cs_type_is_varlen(c->type)) {
    const uint8_t *data = ch->data;
    for (uint64_t i = from; i < from + n; i++) {
      if (!cs_chunk_is_valid(ch, i)) {
        c->n_nulls++;
        continue;
      }
      size_t len = (size_t)(ch->offsets[i + 1] - ch->offsets[i]);
      if (!buf_reserve(&c->vals, len))
        return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
      const uint8_t *v = data + ch->offsets[i];
      buf_put(&c->vals, v, len);
      uint64_t k = c->n_vals++;
      c->offs[k + 1] = (int64_t)c->vals.n;
      if (!c->has_minmax) {
        c->vmin = c->vmax = k, c->has_minmax = true;
        continue;
      }
      /* bytewise, a shorter prefix first: Parquet's order for BYTE_ARRAY */
      for (int side = 0; side < 2; side++) {
        uint64_t o = side ? c->vmax : c->vmin;
        size_t ol = (size_t)(c->offs[o + 1] - c->offs[o]);
        int cmp = memcmp(v, c->vals.p + c->offs[o], len < ol ? len : ol);
        if (cmp == 0) cmp = (len > ol) - (len < ol);
        if (side == 0 && cmp < 0) c->vmin = k;
        if (side == 1 && cmp > 0) c->vmax = k;
      }
    }
    return CS_OK;
  }
  if (!buf_reserve(&c->vals, n * c->pw))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
  uint8_t *out = c->vals.p + c->vals.n;
  uint64_t k = 0;
  if (cs_type_is_float(c->type)) {
    double lo = c->has_minmax ? c->fmin : INFINITY, hi = c->has_minmax ? c->fmax : -INFINITY;
    bool any = c->has_minmax;
    for (uint64_t i = from; i < from + n; i++) {
      if (!cs_chunk_is_valid(ch, i)) continue;
      double d;
      if (c->type == CS_TYPE_FLOAT32) {
        float f = ((const float *)ch->data)[i];
        memcpy(out + 4 * k, &f, 4);
        d = f;
      } else {
        d = ((const double *)ch->data)[i];
        memcpy(out + 8 * k, &d, 8);
      }
      k++;
      if (isnan(d)) continue;
      any = true;
      if (d < lo || (d == 0 && lo == 0 && signbit(d))) lo = d;
      if (d > hi || (d == 0 && hi == 0 && !signbit(d))) hi = d;
    }
    if (any) c->fmin = lo, c->fmax = hi, c->has_minmax = true;
  } else {
    int64_t lo = c->has_minmax ? c->imin : INT64_MAX, hi = c->has_minmax ? c->imax : INT64_MIN;
    if (!ch->validity && (c->type == CS_TYPE_INT32 || c->type == CS_TYPE_INT64 || c->type == CS_TYPE_BOOL ||
                          c->type == CS_TYPE_UINT32)) {
      memcpy(out, (const uint8_t *)ch->data + from * c->pw, n * c->pw);
      for (uint64_t i = from; i < from + n; i++) {
        int64_t v = load_int(c->type, ch->data, i);
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
      }
      k = n;
    } else {
      for (uint64_t i = from; i < from + n; i++) {
        if (!cs_chunk_is_valid(ch, i)) continue;
        int64_t v = load_int(c->type, ch->data, i);
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
        if (c->pw == 8) {
          memcpy(out + 8 * k, &v, 8);
        } else if (c->pw == 4) {
          uint32_t u = (uint32_t)v; /* a signed value's bits, or an unsigned one's */
          memcpy(out + 4 * k, &u, 4);
        } else {
          out[k] = (uint8_t)v;
        }
        k++;
      }
    }
    if (k) c->imin = lo, c->imax = hi, c->has_minmax = true;
  }
  c->n_nulls += n - k;
  c->n_vals += k;
  c->vals.n += k * c->pw;
  return CS_OK;
}

/* ---------------------------------------------------------- dictionary */

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static inline uint64_t val_hash(const pq_col *c, uint64_t k) {
  if (c->pw == 8) {
    uint64_t x;
    memcpy(&x, c->vals.p + 8 * k, 8);
    return mix64(x);
  }
  if (c->pw == 4) {
    uint32_t x;
    memcpy(&x, c->vals.p + 4 * k, 4);
    return mix64(x);
  }
  return cs__hash(c->vals.p + c->offs[k], (size_t)(c->offs[k + 1] - c->offs[k]));
}

static inline bool val_equal(const pq_col *c, uint64_t a, uint64_t b) {
  if (c->pw == 8) {
    uint64_t x, y;
    memcpy(&x, c->vals.p + 8 * a, 8), memcpy(&y, c->vals.p + 8 * b, 8);
    return x == y;
  }
  if (c->pw == 4) {
    uint32_t x, y;
    memcpy(&x, c->vals.p + 4 * a, 4), memcpy(&y, c->vals.p + 4 * b, 4);
    return x == y;
  }
  int64_t la = c->offs[a + 1] - c->offs[a], lb = c->offs[b + 1] - c->offs[b];
  return la == lb && memcmp(c->vals.p + c->offs[a], c->vals.p + c->offs[b], (size_t)la) == 0;
}

static int bit_width(uint64_t max) {
  int w = 1;
  while (w < 32 && (max >> w)) w++;
  return w;
}

/* Builds the dictionary of the group's values into c->entries and c->idx:
** 1 when it pays, 0 when it does not, -1 when memory is short (an error,
** not plain instead: the same rows always make the same file). */
static int dict_build(pq_col *c) {
  if (c->type == CS_TYPE_BOOL || c->n_vals < 2) return 0;
  uint64_t want = 1;
  uint64_t most = c->n_vals < DICT_MAX_ENTRIES ? c->n_vals : DICT_MAX_ENTRIES;
  while (want < 2 * most) want *= 2;
  if (want > c->n_slots) {
    cs__mem_free(c->slots), cs__mem_free(c->entries);
    c->slots = cs__mem_malloc(want * sizeof *c->slots);
    c->entries = cs__mem_malloc(DICT_MAX_ENTRIES * sizeof *c->entries);
    c->n_slots = c->slots && c->entries ? want : 0;
    if (!c->n_slots) return -1;
  }
  uint64_t mask = want - 1;
  memset(c->slots, 0, want * sizeof *c->slots);
  cs__mem_free(c->idx);
  if (!(c->idx = cs__mem_malloc(c->n_vals * sizeof *c->idx))) return -1;
  uint64_t n = 0, bytes = 0;
  for (uint64_t k = 0; k < c->n_vals; k++) {
    /* Nearly every value new so far: a column of unique values, whose
    ** dictionary cannot pay; stop before hashing the rest. */
    if (k == DICT_PROBE_VALUES && n > DICT_PROBE_VALUES / 8 * 7) return 0;
    uint64_t s = val_hash(c, k) & mask;
    for (;;) {
      uint32_t e = c->slots[s];
      if (!e) {
        if (n == most) return 0;
        bytes += c->pw ? c->pw : 4 + (uint64_t)(c->offs[k + 1] - c->offs[k]);
        if (bytes > DICT_MAX_BYTES) return 0;
        c->entries[n] = k;
        c->slots[s] = (uint32_t)++n;
        c->idx[k] = (uint32_t)(n - 1);
        break;
      }
      if (val_equal(c, c->entries[e - 1], k)) {
        c->idx[k] = e - 1;
        break;
      }
      s = (s + 1) & mask;
    }
  }
  c->n_entries = n;
  uint64_t plain = c->pw ? c->n_vals * c->pw : c->vals.n + 4 * c->n_vals;
  uint64_t coded = bytes + c->n_vals * (uint64_t)bit_width(n - 1) / 8;
  return coded < plain;
}

/* ---------------------------------------------------------------- pages */

void cs_pq_put_page_header(cs_thrift_out *o, int32_t type, size_t uncompressed, size_t compressed,
                           int32_t num_values, int32_t encoding) {
  cs_thrift_put_struct_begin(o, 0);
  cs_thrift_put_i64(o, 1, CS_THRIFT_I32, type);
  cs_thrift_put_i64(o, 2, CS_THRIFT_I32, (int64_t)uncompressed);
  cs_thrift_put_i64(o, 3, CS_THRIFT_I32, (int64_t)compressed);
  if (type == PQ_PAGE_DATA) {
    cs_thrift_put_struct_begin(o, 5);
    cs_thrift_put_i64(o, 1, CS_THRIFT_I32, num_values);
    cs_thrift_put_i64(o, 2, CS_THRIFT_I32, encoding);
    cs_thrift_put_i64(o, 3, CS_THRIFT_I32, PQ_RLE);
    cs_thrift_put_i64(o, 4, CS_THRIFT_I32, PQ_RLE);
  } else {
    cs_thrift_put_struct_begin(o, 7);
    cs_thrift_put_i64(o, 1, CS_THRIFT_I32, num_values);
    cs_thrift_put_i64(o, 2, CS_THRIFT_I32, encoding);
  }
  cs_thrift_put_struct_end(o);
  cs_thrift_put_struct_end(o);
}

/* Writes a page (header and compressed body) of the staged c->page to
** c->chunk; sub: the DataPageHeader or DictionaryPageHeader fields. */
static cs_rc page_write(pq_col *c, int type, int32_t num_values, int32_t encoding, cs_err *err) {
  if (c->page.n > INT32_MAX)
    return cs_err_set(err, CS_EINVAL, "colstore: column %s: a Parquet page over 2 GiB", c->name);
  cs_rc rc = compress_page(&c->codec, c->page.p, c->page.n, err);
  if (rc) return rc;
  if (c->codec.out.n > INT32_MAX)
    return cs_err_set(err, CS_EINVAL, "colstore: column %s: a Parquet page over 2 GiB", c->name);
  cs_thrift_out h = {0};
  cs_pq_put_page_header(&h, type, c->page.n, c->codec.out.n, num_values, encoding);
  bool ok = !h.failed && buf_reserve(&c->chunk, h.n + c->codec.out.n);
  if (ok) {
    buf_put(&c->chunk, h.buf, h.n);
    buf_put(&c->chunk, c->codec.out.p, c->codec.out.n);
    c->uncompressed += (int64_t)(h.n + c->page.n);
  }
  cs_thrift_out_free(&h);
  return ok ? CS_OK : cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
}

/* The plain encoding of values [v0, v1) onto c->page (reserved). */
static size_t plain_bytes(const pq_col *c, uint64_t v0, uint64_t v1) {
  if (c->pw == 1) return (size_t)((v1 - v0 + 7) / 8);
  if (c->pw) return (size_t)((v1 - v0) * c->pw);
  return (size_t)(c->offs[v1] - c->offs[v0] + 4 * (int64_t)(v1 - v0));
}

static void plain_put(pq_col *c, const uint64_t *pick, uint64_t v0, uint64_t v1) {
  buf *b = &c->page;
  if (c->pw == 1) { /* BOOLEAN: bit-packed, LSB first */
    memset(b->p + b->n, 0, (size_t)((v1 - v0 + 7) / 8));
    for (uint64_t k = v0; k < v1; k++) {
      uint64_t s = pick ? pick[k] : k;
      if (c->vals.p[s]) b->p[b->n + (k - v0) / 8] |= (uint8_t)(1u << ((k - v0) & 7));
    }
    b->n += (size_t)((v1 - v0 + 7) / 8);
  } else if (c->pw && !pick) {
    buf_put(b, c->vals.p + v0 * c->pw, (size_t)((v1 - v0) * c->pw));
  } else {
    for (uint64_t k = v0; k < v1; k++) {
      uint64_t s = pick ? pick[k] : k;
      if (c->pw) {
        buf_put(b, c->vals.p + s * c->pw, c->pw);
      } else {
        uint32_t len = (uint32_t)(c->offs[s + 1] - c->offs[s]);
        put_u32le(b->p + b->n, len);
        b->n += 4;
        buf_put(b, c->vals.p + c->offs[s], len);
      }
    }
  }
}

/* Encodes the group's column into c->chunk.  Runs on any thread. */
static void col_encode(pq_col *c, uint64_t n_rows) {
  cs_err *err = &c->err;
  c->chunk.n = 0;
  c->uncompressed = 0;
  c->dict_at = -1;
  c->rc = CS_OK;
  int dict = dict_build(c);
  if (dict < 0) goto nomem;
  c->dict = dict > 0;
  if (c->dict) {
    c->page.n = 0;
    size_t bytes = plain_bytes(c, 0, 0);
    for (uint64_t e = 0; e < c->n_entries; e++) bytes += plain_bytes(c, c->entries[e], c->entries[e] + 1);
    if (!buf_reserve(&c->page, bytes)) goto nomem;
    plain_put(c, c->entries, 0, c->n_entries);
    c->dict_at = 0;
    if ((c->rc = page_write(c, PQ_PAGE_DICTIONARY, (int32_t)c->n_entries, PQ_PLAIN, err))) return;
  }
  c->data_at = (int64_t)c->chunk.n;
  int width = c->dict ? bit_width(c->n_entries - 1) : 0;
  uint64_t v0 = 0;
  for (uint64_t r0 = 0, r1; r0 < n_rows; r0 = r1) {
    r1 = n_rows - r0 < PAGE_ROWS ? n_rows : r0 + PAGE_ROWS;
    uint64_t nulls = c->optional ? cs__bits_zeros(c->valid, r0, r1 - r0) : 0;
    if (!c->pw && !c->dict && r1 - r0 > 1) { /* plain TEXT/BLOB: about PAGE_BYTES a page */
      uint64_t v = v0, r = r0;
      while (r < r1 && (v == v0 || (uint64_t)(c->offs[v] - c->offs[v0]) + 4 * (v - v0) < PAGE_BYTES)) {
        if ((c->valid[r >> 3] >> (r & 7)) & 1) v++;
        r++;
      }
      r1 = r;
      nulls = (r1 - r0) - (v - v0);
    }
    uint64_t v1 = v0 + (r1 - r0) - nulls;
    size_t need = 8 + (c->optional ? rle_bound(r1 - r0, 1) : 0) +
                  (c->dict ? 1 + rle_bound(v1 - v0, width) : plain_bytes(c, v0, v1));
    c->page.n = 0;
    if (!buf_reserve(&c->page, need)) goto nomem;
    if (c->optional) {
      if (!nulls) { /* one run of 1s */
        size_t at = c->page.n;
        c->page.n += 4;
        put_uvarint(&c->page, (r1 - r0) << 1);
        c->page.p[c->page.n++] = 1;
        put_u32le(c->page.p + at, (uint32_t)(c->page.n - at - 4));
      } else {
        uint32_t *lv = cs__mem_realloc(c->levels, (size_t)(r1 - r0 + 1) * sizeof *lv);
        if (!lv) goto nomem;
        c->levels = lv;
        for (uint64_t r = r0; r < r1; r++) lv[r - r0] = (c->valid[r >> 3] >> (r & 7)) & 1;
        size_t at = c->page.n;
        c->page.n += 4;
        rle_encode(&c->page, lv, r1 - r0, 1);
        put_u32le(c->page.p + at, (uint32_t)(c->page.n - at - 4));
      }
    }
    if (c->dict) {
      c->page.p[c->page.n++] = (uint8_t)width;
      rle_encode(&c->page, c->idx + v0, v1 - v0, width);
    } else {
      plain_put(c, NULL, v0, v1);
    }
    if ((c->rc =
             page_write(c, PQ_PAGE_DATA, (int32_t)(r1 - r0), c->dict ? PQ_RLE_DICTIONARY : PQ_PLAIN, err)))
      return;
    v0 = v1;
  }
  return;
nomem:
  c->rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet (column %s)", c->name);
}

/* ------------------------------------------------------------ metadata */

/* A statistic's bytes as Parquet's plain encoding of the value. */
static uint32_t stat_bytes(const pq_col *c, bool max, uint8_t *out, const uint8_t **big) {
  *big = NULL;
  if (cs_type_is_varlen(c->type)) {
    uint64_t k = max ? c->vmax : c->vmin;
    *big = c->vals.p + c->offs[k];
    return (uint32_t)(c->offs[k + 1] - c->offs[k]);
  }
  if (c->type == CS_TYPE_FLOAT32) {
    float f = (float)(max ? c->fmax : c->fmin);
    memcpy(out, &f, 4);
    return 4;
  }
  if (c->type == CS_TYPE_FLOAT64) {
    double d = max ? c->fmax : c->fmin;
    memcpy(out, &d, 8);
    return 8;
  }
  int64_t v = max ? c->imax : c->imin;
  if (c->pw == 1) {
    out[0] = (uint8_t)v;
    return 1;
  }
  if (c->pw == 4) {
    put_u32le(out, (uint32_t)v);
    return 4;
  }
  memcpy(out, &v, 8);
  return 8;
}

static void put_column_chunk(cs_thrift_out *o, const pq_col *c, int32_t codec, uint64_t n_rows,
                             int64_t start) {
  int64_t size = (int64_t)c->chunk.n;
  cs_thrift_put_struct_begin(o, 0);
  cs_thrift_put_i64(o, 2, CS_THRIFT_I64, start);
  cs_thrift_put_struct_begin(o, 3);
  cs_thrift_put_i64(o, 1, CS_THRIFT_I32, c->phys);
  cs_thrift_put_list(o, 2, CS_THRIFT_I32, c->dict ? 3 : 2);
  cs_thrift_put_varint(o, (uint64_t)PQ_PLAIN << 1);
  cs_thrift_put_varint(o, (uint64_t)PQ_RLE << 1);
  if (c->dict) cs_thrift_put_varint(o, (uint64_t)PQ_RLE_DICTIONARY << 1);
  cs_thrift_put_list(o, 3, CS_THRIFT_BINARY, 1);
  cs_thrift_put_varint(o, strlen(c->name));
  cs_thrift_put_raw(o, c->name, strlen(c->name));
  cs_thrift_put_i64(o, 4, CS_THRIFT_I32, codec);
  cs_thrift_put_i64(o, 5, CS_THRIFT_I64, (int64_t)n_rows);
  cs_thrift_put_i64(o, 6, CS_THRIFT_I64, c->uncompressed);
  cs_thrift_put_i64(o, 7, CS_THRIFT_I64, size);
  cs_thrift_put_i64(o, 9, CS_THRIFT_I64, start + c->data_at);
  if (c->dict_at >= 0) cs_thrift_put_i64(o, 11, CS_THRIFT_I64, start + c->dict_at);
  cs_thrift_put_struct_begin(o, 12);
  cs_thrift_put_i64(o, 3, CS_THRIFT_I64, (int64_t)c->n_nulls);
  if (c->has_minmax) {
    uint8_t lo[8], hi[8];
    const uint8_t *blo, *bhi;
    uint32_t nlo = stat_bytes(c, false, lo, &blo), nhi = stat_bytes(c, true, hi, &bhi);
    if (nlo <= STAT_MAX_BYTES && nhi <= STAT_MAX_BYTES) {
      cs_thrift_put_binary(o, 5, bhi ? bhi : hi, nhi);
      cs_thrift_put_binary(o, 6, blo ? blo : lo, nlo);
    }
  }
  cs_thrift_put_struct_end(o);
  cs_thrift_put_struct_end(o);
  cs_thrift_put_struct_end(o);
}

/* Encodes and writes the group being built, and its RowGroup struct. */
static cs_rc group_flush(cs_format_writer *w, cs_err *err) {
  uint64_t n_rows = w->rows_in_group;
  int threads = (int)(w->threads > 1 ? w->threads : 1);
  if (threads > (int)w->n_cols) threads = (int)w->n_cols;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
  for (uint32_t i = 0; i < w->n_cols; i++) col_encode(&w->cols[i], n_rows);
  for (uint32_t i = 0; i < w->n_cols; i++)
    if (w->cols[i].rc) return cs_err_set(err, w->cols[i].rc, "%s", w->cols[i].err.msg);
  cs_thrift_out *o = &w->groups;
  int64_t first = (int64_t)w->at, total = 0, compressed = 0;
  cs_thrift_put_struct_begin(o, 0);
  cs_thrift_put_list(o, 1, CS_THRIFT_STRUCT, w->n_cols);
  for (uint32_t i = 0; i < w->n_cols; i++) {
    pq_col *c = &w->cols[i];
    put_column_chunk(o, c, w->codec, n_rows, (int64_t)w->at);
    cs_rc rc = emit(w, c->chunk.p, c->chunk.n, err);
    if (rc) return rc;
    total += c->uncompressed;
    compressed += (int64_t)c->chunk.n;
    col_reset(c);
    memset(c->valid, 0, (size_t)(w->group_rows + 7) / 8);
  }
  cs_thrift_put_i64(o, 2, CS_THRIFT_I64, total);
  cs_thrift_put_i64(o, 3, CS_THRIFT_I64, (int64_t)n_rows);
  cs_thrift_put_i64(o, 5, CS_THRIFT_I64, first);
  cs_thrift_put_i64(o, 6, CS_THRIFT_I64, compressed);
  cs_thrift_put_struct_end(o);
  if (o->failed) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
  w->n_groups++;
  w->rows_in_group = 0;
  return CS_OK;
}

/* -------------------------------------------------------------- the ops */

static void pq_free(cs_format_writer *w) {
  if (!w) return;
  if (w->cols)
    for (uint32_t i = 0; i < w->n_cols; i++) col_free(&w->cols[i]);
  cs__mem_free(w->cols);
  cs__mem_free(w->names);
  cs_thrift_out_free(&w->groups);
  cs__mem_free(w);
}

static cs_rc pq_open(const cs_schema *schema, const cs_out_options *opt, cs_sink sink, cs_format_writer **out,
                     cs_err *err) {
  *out = NULL;
  cs_format_writer *w = cs__mem_calloc(1, sizeof *w);
  size_t names = 0;
  for (uint32_t i = 0; i < schema->n_cols; i++) names += strlen(schema->cols[i].name) + 1;
  if (!w) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
  w->sink = sink;
  w->n_cols = schema->n_cols;
  w->codec = codec_of(opt ? opt->codec : CS_OUT_SNAPPY);
  w->group_rows = opt && opt->row_group_rows ? opt->row_group_rows : DEFAULT_GROUP_ROWS;
  w->threads = opt ? opt->threads : 1;
  w->cols = cs__mem_calloc(schema->n_cols ? schema->n_cols : 1, sizeof *w->cols);
  w->names = cs__mem_malloc(names ? names : 1);
  if (!w->cols || !w->names) goto nomem;
  char *name = w->names;
  for (uint32_t i = 0; i < schema->n_cols; i++) {
    pq_col *c = &w->cols[i];
    size_t len = strlen(schema->cols[i].name) + 1;
    memcpy(name, schema->cols[i].name, len);
    c->name = name, name += len;
    c->type = schema->cols[i].type;
    c->optional = schema->cols[i].nullable;
    c->codec.codec = w->codec;
    col_phys(c);
    if (!(c->valid = cs__mem_calloc((size_t)(w->group_rows + 7) / 8 + 8, 1))) goto nomem;
    if (!c->pw && !(c->offs = cs__mem_malloc((size_t)(w->group_rows + 1) * sizeof *c->offs))) goto nomem;
    col_reset(c);
  }
  cs_rc rc = emit(w, "PAR1", 4, err);
  if (rc) {
    pq_free(w);
    return rc;
  }
  *out = w;
  return CS_OK;
nomem:
  pq_free(w);
  return cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet");
}

static cs_rc pq_write(cs_format_writer *w, uint64_t n_rows, const cs_chunk *cols, cs_err *err) {
  uint64_t done = 0;
  while (done < n_rows) {
    uint64_t take = w->group_rows - w->rows_in_group;
    if (take > n_rows - done) take = n_rows - done;
    for (uint32_t i = 0; i < w->n_cols; i++) {
      cs_rc rc = col_append(&w->cols[i], &cols[i], done, take, w->rows_in_group, err);
      if (rc) return rc;
    }
    w->rows_in_group += take;
    w->rows += take;
    done += take;
    if (w->rows_in_group == w->group_rows) {
      cs_rc rc = group_flush(w, err);
      if (rc) return rc;
    }
  }
  return CS_OK;
}

static void put_schema_element(cs_thrift_out *o, const pq_col *c) {
  cs_thrift_put_struct_begin(o, 0);
  cs_thrift_put_i64(o, 1, CS_THRIFT_I32, c->phys);
  cs_thrift_put_i64(o, 3, CS_THRIFT_I32, c->optional ? 1 : 0);
  cs_thrift_put_binary(o, 4, c->name, (uint32_t)strlen(c->name));
  int bits = 0;
  bool is_signed = true;
  switch (c->type) {
    case CS_TYPE_INT8: bits = 8; break;
    case CS_TYPE_INT16: bits = 16; break;
    case CS_TYPE_INT32: bits = 32; break;
    case CS_TYPE_UINT8: bits = 8, is_signed = false; break;
    case CS_TYPE_UINT16: bits = 16, is_signed = false; break;
    case CS_TYPE_UINT32: bits = 32, is_signed = false; break;
    default: break;
  }
  if (bits) {
    int ct = is_signed ? (bits == 8    ? CT_INT_8
                          : bits == 16 ? CT_INT_16
                                       : CT_INT_32)
                       : (bits == 8    ? CT_UINT_8
                          : bits == 16 ? CT_UINT_16
                                       : CT_UINT_32);
    cs_thrift_put_i64(o, 6, CS_THRIFT_I32, ct);
    cs_thrift_put_struct_begin(o, 10); /* LogicalType */
    cs_thrift_put_struct_begin(o, 10); /* INTEGER: IntType */
    cs_thrift_put_i64(o, 1, CS_THRIFT_I8, bits);
    cs_thrift_put_field(o, 2, is_signed ? CS_THRIFT_TRUE : CS_THRIFT_FALSE);
    cs_thrift_put_struct_end(o);
    cs_thrift_put_struct_end(o);
  } else if (c->type == CS_TYPE_TEXT) {
    cs_thrift_put_i64(o, 6, CS_THRIFT_I32, CT_UTF8);
    cs_thrift_put_struct_begin(o, 10);
    cs_thrift_put_struct_begin(o, 1); /* STRING: StringType */
    cs_thrift_put_struct_end(o);
    cs_thrift_put_struct_end(o);
  }
  cs_thrift_put_struct_end(o);
}

static cs_rc pq_finish(cs_format_writer *w, uint64_t *out_groups, cs_err *err) {
  if (w->rows_in_group) {
    cs_rc rc = group_flush(w, err);
    if (rc) return rc;
  }
  cs_thrift_out o = {0};
  cs_thrift_put_struct_begin(&o, 0);
  cs_thrift_put_i64(&o, 1, CS_THRIFT_I32, 1);
  cs_thrift_put_list(&o, 2, CS_THRIFT_STRUCT, w->n_cols + 1);
  cs_thrift_put_struct_begin(&o, 0);
  cs_thrift_put_binary(&o, 4, "schema", 6);
  cs_thrift_put_i64(&o, 5, CS_THRIFT_I32, w->n_cols);
  cs_thrift_put_struct_end(&o);
  for (uint32_t i = 0; i < w->n_cols; i++) put_schema_element(&o, &w->cols[i]);
  cs_thrift_put_i64(&o, 3, CS_THRIFT_I64, (int64_t)w->rows);
  cs_thrift_put_list(&o, 4, CS_THRIFT_STRUCT, (uint32_t)w->n_groups);
  cs_thrift_put_raw(&o, w->groups.buf, w->groups.n);
  static const char created_by[] = "colstore version " CS_VERSION_STRING;
  cs_thrift_put_binary(&o, 6, created_by, (uint32_t)strlen(created_by));
  cs_thrift_put_list(&o, 7, CS_THRIFT_STRUCT, w->n_cols);
  for (uint32_t i = 0; i < w->n_cols; i++) { /* ColumnOrder: TYPE_ORDER */
    cs_thrift_put_struct_begin(&o, 0);
    cs_thrift_put_struct_begin(&o, 1);
    cs_thrift_put_struct_end(&o);
    cs_thrift_put_struct_end(&o);
  }
  cs_thrift_put_struct_end(&o);
  uint8_t tail[8];
  put_u32le(tail, (uint32_t)o.n);
  memcpy(tail + 4, "PAR1", 4);
  cs_rc rc = o.failed || o.n > UINT32_MAX
                 ? cs_err_set(err, CS_ENOMEM, "colstore: out of memory writing Parquet")
                 : emit(w, o.buf, o.n, err);
  if (!rc) rc = emit(w, tail, 8, err);
  cs_thrift_out_free(&o);
  if (!rc && out_groups) *out_groups = w->n_groups;
  return rc;
}

const cs_format_writer_ops cs_parquet_writer_ops = {"parquet", pq_open, pq_write, pq_finish, pq_free};
