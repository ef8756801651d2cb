/*
** cs_parquet_page.c - one column chunk of a Parquet row group, from its
** bytes in the file to a column in colstore's layout.
**
** A chunk is a run of pages: at most one dictionary page, then data pages
** (version 1 or 2), each a Thrift PageHeader and a body, compressed by the
** chunk's codec.  Each data page is decoded in three steps, each over the
** whole page rather than value by value:
**   levels   the definition levels (flat columns: 0 = NULL, 1 = a value;
**            no repetition levels) from the RLE/bit-packed hybrid;
**   values   the page's non-NULL values, in the physical type, into a
**            dense staging array: PLAIN, dictionary indices gathered from
**            the dictionary page, RLE booleans, DELTA_BINARY_PACKED,
**            DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT;
**   emit     the dense values converted to the column type (a narrowing
**            checked against the type's range, an unsigned 64-bit value
**            checked to fit INT64) and spread over the page's rows, with
**            the validity bitmap set from the levels.
** Keeping the staging dense means each encoding is written once, whatever
** the column's type, and the conversion once, whatever the encoding.
**
** Memory is the chunk's compressed bytes (read with one pread of their
** range alone: the chunks of columns not asked for are never read), one
** decompressed page, and the column's output for the row group.  Sizes a
** file claims are checked before they are used: a page's compressed size
** against the chunk's bytes, its values against the rows the row group has
** left, every run and length against the bytes of its page; decompressed
** sizes are checked against what the codec produced, and zstd and gzip
** output grows as it arrives, so a claimed size is never allocated on
** faith.  A row group may hold at most CS_PQ_MAX_GROUP_ROWS rows.
*/
#include <lz4.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "cs_base_internal.h"
#include "cs_interchange_internal.h"

#define CS_PQ_MAX_GROUP_ROWS (1ull << 28)
#define MAX_PAGE_BYTES (1u << 30)

enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };

typedef struct span {
  const uint8_t *p;
  uint32_t n;
} span;

typedef struct page_header {
  int32_t type, uncompressed, compressed;
  int32_t num_values, encoding, def_encoding;
  int32_t num_nulls, def_bytes, rep_bytes;
  bool is_compressed, has_body;
} page_header;

/* The decoder's buffers, kept between calls in cs_pq_values (one per
** column being imported): a buffer freed after every chunk would come back
** as fresh pages, and their faults cost more than the decoding (a quarter
** of an import's time, measured: docs/performance.md, "Parquet import"). */
struct cs_pq_scratch {
  uint8_t *chunk; /* the chunk's bytes as read from the file */
  size_t chunk_cap;
  uint8_t *dict_fixed;
  size_t dict_fixed_cap;
  span *dict_spans;
  size_t dict_spans_cap;
  uint8_t *dict_page; /* the dictionary page's bytes, which dict_spans point into */
  size_t dict_page_cap;
  uint8_t *page; /* a decompressed page */
  size_t page_cap;
  uint32_t *levels, *idx;
  size_t levels_cap, idx_cap;
  uint8_t *stage; /* dense physical values; also converted values */
  size_t stage_cap;
  span *spans;
  size_t spans_cap;
  uint8_t *built; /* DELTA_BYTE_ARRAY: the values it rebuilt */
  size_t built_cap;
  int64_t *deltas;
  size_t deltas_cap;
  ZSTD_DCtx *zstd;
};

typedef struct decoder {
  const cs_pq_file *f;
  const cs_pq_column *c;
  uint32_t rg, col;
  cs_err *err;
  cs_pq_values *out;
  uint64_t rows_left; /* of the row group, not yet decoded */
  size_t pw;          /* bytes per staged physical value; 0 for byte arrays */
  /* the dictionary, in the staging form (its buffers in s) */
  bool have_dict;
  uint32_t dict_n;
  cs_pq_scratch *s;
} decoder;

static cs_rc bad(decoder *d, cs_rc code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cs_rc bad(decoder *d, cs_rc code, const char *fmt, ...) {
  char where[32];
  snprintf(where, sizeof where, "row group %u", d->rg);
  va_list ap;
  va_start(ap, fmt);
  cs_rc rc = cs_ic_column_error(d->err, code, d->f->path, where, d->c->name, fmt, ap);
  va_end(ap);
  return rc;
}

static cs_rc damaged(decoder *d, const char *what) { return bad(d, CS_ECORRUPT, "%s is damaged", what); }

/* Grows *p to hold n elements of size sz (contents kept). */
static bool reserve(void *pp, size_t *cap, size_t n, size_t sz) {
  if (n <= *cap) return true;
  size_t c = *cap ? *cap : 64;
  while (c < n) c *= 2;
  void *q = cs__mem_realloc(*(void **)pp, c * sz);
  if (!q) return false;
  *(void **)pp = q;
  *cap = c;
  return true;
}

static cs_rc oom(decoder *d) { return cs_err_set(d->err, CS_ENOMEM, "colstore: out of memory"); }

static inline uint32_t load_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* --------------------------------------------------------- page headers */

static bool read_sub_header(cs_thrift *t, uint8_t type, page_header *h, int kind) {
  if (!cs_thrift_begin(t, type)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    bool ok;
    if (id == 1)
      ok = cs_thrift_i32(t, ft, &h->num_values);
    else if (kind != PAGE_DATA_V2 && id == 2)
      ok = cs_thrift_i32(t, ft, &h->encoding);
    else if (kind == PAGE_DATA && id == 3)
      ok = cs_thrift_i32(t, ft, &h->def_encoding);
    else if (kind == PAGE_DATA_V2 && id == 2)
      ok = cs_thrift_i32(t, ft, &h->num_nulls);
    else if (kind == PAGE_DATA_V2 && id == 4)
      ok = cs_thrift_i32(t, ft, &h->encoding);
    else if (kind == PAGE_DATA_V2 && id == 5)
      ok = cs_thrift_i32(t, ft, &h->def_bytes);
    else if (kind == PAGE_DATA_V2 && id == 6)
      ok = cs_thrift_i32(t, ft, &h->rep_bytes);
    else if (kind == PAGE_DATA_V2 && id == 7)
      ok = cs_thrift_bool(t, ft, &h->is_compressed);
    else
      ok = cs_thrift_skip(t, ft);
    if (!ok) return false;
  }
  if (t->failed) return false;
  h->has_body = true;
  return true;
}

static bool read_page_header(cs_thrift *t, page_header *h) {
  *h = (page_header){.type = -1, .uncompressed = -1, .compressed = -1, .is_compressed = true};
  if (!cs_thrift_begin(t, CS_THRIFT_STRUCT)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    bool ok;
    switch (id) {
      case 1: ok = cs_thrift_i32(t, ft, &h->type); break;
      case 2: ok = cs_thrift_i32(t, ft, &h->uncompressed); break;
      case 3: ok = cs_thrift_i32(t, ft, &h->compressed); break;
      case 5: ok = read_sub_header(t, ft, h, PAGE_DATA); break;
      case 7: ok = read_sub_header(t, ft, h, PAGE_DICTIONARY); break;
      case 8: ok = read_sub_header(t, ft, h, PAGE_DATA_V2); break;
      default: ok = cs_thrift_skip(t, ft);
    }
    if (!ok) return false;
  }
  return !t->failed && h->type >= 0 && h->uncompressed >= 0 && h->compressed >= 0 && h->num_values >= 0 &&
         h->def_bytes >= 0 && h->rep_bytes >= 0;
}

/* --------------------------------------------------------------- codecs */

static const char *codec_name(int32_t codec) {
  static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                      "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec <= PQ_LZ4_RAW ? names[codec] : "unknown";
}

/* Doubles the page buffer, to at most n_out + 1 bytes. */
static bool grow_page(decoder *d, size_t n_out) {
  size_t want = d->s->page_cap * 2 < n_out + 1 ? d->s->page_cap * 2 : n_out + 1;
  return reserve(&d->s->page, &d->s->page_cap, want, 1);
}

/* Decompresses src into d->s->page (n_out bytes, what the header says), or
** points *out at src when the body is stored. */
static cs_rc decompress(decoder *d, int32_t codec, const uint8_t *src, size_t n_src, size_t n_out,
                        const uint8_t **out) {
  if (codec == PQ_UNCOMPRESSED) {
    if (n_src != n_out) return damaged(d, "a page (its stored and plain sizes differ)");
    *out = src;
    return CS_OK;
  }
  if (n_out > MAX_PAGE_BYTES)
    return bad(d, CS_EINVAL, "a page of %zu bytes is over colstore's limit of 1 GiB", n_out);
  /* snappy and LZ4 expand at most 32x and 255x: their sizes are bounded by
  ** the bytes present.  zstd and gzip grow their output as it comes. */
  if ((codec == PQ_SNAPPY && n_out > n_src * 32 + 64) || (codec == PQ_LZ4_RAW && n_out > n_src * 255 + 64))
    return damaged(d, "a page (its plain size is more than its codec can expand to)");
  size_t first =
      codec == PQ_ZSTD || codec == PQ_GZIP ? (n_out < n_src * 8 + 4096 ? n_out : n_src * 8 + 4096) : n_out;
  if (!reserve(&d->s->page, &d->s->page_cap, first + 1, 1)) return oom(d);
  *out = d->s->page;
  if (n_out == 0) return CS_OK; /* an empty body (an all-NULL page's values) */
  switch (codec) {
    case PQ_SNAPPY: {
      size_t len = 0;
      if (snappy_uncompressed_length((const char *)src, n_src, &len) != SNAPPY_OK || len != n_out ||
          snappy_uncompress((const char *)src, n_src, (char *)d->s->page, &len) != SNAPPY_OK || len != n_out)
        return damaged(d, "a SNAPPY page");
      return CS_OK;
    }
    case PQ_LZ4_RAW: {
      if (n_src > INT32_MAX ||
          LZ4_decompress_safe((const char *)src, (char *)d->s->page, (int)n_src, (int)n_out) != (int)n_out)
        return damaged(d, "an LZ4_RAW page");
      return CS_OK;
    }
    case PQ_ZSTD: {
      if (!d->s->zstd && !(d->s->zstd = ZSTD_createDCtx())) return oom(d);
      ZSTD_DCtx_reset(d->s->zstd, ZSTD_reset_session_only);
      ZSTD_inBuffer in = {src, n_src, 0};
      size_t done = 0;
      for (;;) {
        size_t lim = d->s->page_cap - 1 < n_out ? d->s->page_cap - 1 : n_out;
        ZSTD_outBuffer o = {d->s->page, lim, done};
        size_t r = ZSTD_decompressStream(d->s->zstd, &o, &in);
        if (ZSTD_isError(r)) return damaged(d, "a ZSTD page");
        done = o.pos;
        if (r == 0 && in.pos == in.size) break; /* the last frame ended */
        if (o.pos < o.size && in.pos == in.size) return damaged(d, "a ZSTD page (it ends inside a frame)");
        if (o.pos == o.size) {
          if (lim == n_out) return damaged(d, "a ZSTD page (more bytes than its header says)");
          if (!grow_page(d, n_out)) return oom(d);
        }
      }
      if (done != n_out) return damaged(d, "a ZSTD page (fewer bytes than its header says)");
      *out = d->s->page;
      return CS_OK;
    }
    case PQ_GZIP: {
      z_stream z = {0};
      if (inflateInit2(&z, 15 + 32) != Z_OK) return oom(d);
      z.next_in = (Bytef *)src;
      z.avail_in = (uInt)n_src;
      size_t done = 0;
      int zr;
      for (;;) {
        size_t lim = d->s->page_cap - 1 < n_out ? d->s->page_cap - 1 : n_out;
        z.next_out = d->s->page + done;
        z.avail_out = (uInt)(lim - done);
        zr = inflate(&z, Z_NO_FLUSH);
        done = lim - z.avail_out;
        if (zr != Z_OK) break; /* the end, or an error (Z_BUF_ERROR: no progress possible) */
        if (z.avail_out == 0) {
          if (lim == n_out) break;
          if (!grow_page(d, n_out)) {
            inflateEnd(&z);
            return oom(d);
          }
        }
      }
      inflateEnd(&z);
      if (zr != Z_STREAM_END || done != n_out || z.avail_in != 0) return damaged(d, "a GZIP page");
      *out = d->s->page;
      return CS_OK;
    }
    default:
      return bad(d, CS_EINVAL,
                 "the %s codec is not supported (UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW are)",
                 codec_name(codec));
  }
}

/* ------------------------------------------------ the RLE/bit-packed hybrid */

/* Value k of a run of bit-packed values of width w (w <= 64) from p,
** which holds n_bytes bytes. */
static inline uint64_t unpack_one(const uint8_t *p, size_t n_bytes, uint64_t k, int w) {
  uint64_t bit = k * (uint64_t)w;
  size_t at = (size_t)(bit >> 3);
  unsigned shift = (unsigned)(bit & 7);
  uint64_t lo = 0;
  uint8_t hi = 0;
  if (at + 9 <= n_bytes) {
    memcpy(&lo, p + at, 8);
    hi = p[at + 8];
  } else {
    for (size_t i = 0; i < 8 && at + i < n_bytes; i++) lo |= (uint64_t)p[at + i] << (8 * i);
    if (at + 8 < n_bytes) hi = p[at + 8];
  }
  uint64_t v = lo >> shift;
  if (shift && w + shift > 64) v |= (uint64_t)hi << (64 - shift);
  return w == 64 ? v : v & ((1ull << w) - 1);
}

bool cs_pq_rle_decode(const uint8_t *p, const uint8_t *end, int bit_width, uint32_t *out, uint32_t n) {
  if (bit_width < 0 || bit_width > 32) return false;
  uint32_t i = 0;
  size_t vbytes = ((size_t)bit_width + 7) / 8;
  while (i < n) {
    cs_thrift t;
    cs_thrift_init(&t, p, (size_t)(end - p));
    uint64_t h;
    if (!cs_thrift_varint(&t, &h)) return false;
    p = t.p;
    if (h & 1) {
      uint64_t groups = h >> 1;
      if (groups > n) groups = n; /* more than n values: only n are taken (and no overflow below) */
      uint64_t count = groups * 8, take = count < n - i ? count : n - i;
      size_t bytes = (size_t)(groups * (uint64_t)bit_width);
      size_t need = (size_t)((take * (uint64_t)bit_width + 7) / 8);
      size_t have = (size_t)(end - p);
      if (need > have) return false;
      size_t run = bytes < have ? bytes : have;
      for (uint64_t k = 0; k < take; k++) out[i + k] = (uint32_t)unpack_one(p, run, k, bit_width);
      i += (uint32_t)take;
      p += run;
    } else {
      uint64_t count = h >> 1;
      if (vbytes > (size_t)(end - p)) return false;
      uint32_t v = 0;
      for (size_t b = 0; b < vbytes; b++) v |= (uint32_t)p[b] << (8 * b);
      p += vbytes;
      if (bit_width < 32 && v >> bit_width) return false;
      uint64_t take = count < n - i ? count : n - i;
      for (uint64_t k = 0; k < take; k++) out[i + k] = v;
      i += (uint32_t)take;
    }
  }
  return true;
}

/* ------------------------------------------------------------ encodings */

/* DELTA_BINARY_PACKED: exactly n values into d->s->deltas; *pp moves past
** the blocks it used. */
static cs_rc delta_decode(decoder *d, const uint8_t **pp, const uint8_t *end, uint32_t n) {
  cs_thrift t;
  cs_thrift_init(&t, *pp, (size_t)(end - *pp));
  uint64_t block, minis, total, u;
  if (!cs_thrift_varint(&t, &block) || !cs_thrift_varint(&t, &minis) || !cs_thrift_varint(&t, &total) ||
      !cs_thrift_varint(&t, &u))
    return damaged(d, "a DELTA_BINARY_PACKED header");
  if (block == 0 || block % 128 || block > (1u << 20) || minis == 0 || block % minis || (block / minis) % 32)
    return damaged(d, "a DELTA_BINARY_PACKED header (its block sizes)");
  if (total != n) return damaged(d, "a DELTA_BINARY_PACKED page (its value count)");
  if (!reserve(&d->s->deltas, &d->s->deltas_cap, n ? n : 1, sizeof(int64_t))) return oom(d);
  uint64_t v = (u >> 1) ^ -(u & 1), per_mini = block / minis;
  if (n) d->s->deltas[0] = (int64_t)v;
  uint32_t i = n ? 1 : 0;
  const uint8_t *p = t.p;
  while (i < n) {
    cs_thrift_init(&t, p, (size_t)(end - p));
    if (!cs_thrift_varint(&t, &u)) return damaged(d, "a DELTA_BINARY_PACKED block");
    uint64_t min_delta = (u >> 1) ^ -(u & 1);
    p = t.p;
    if (minis > (uint64_t)(end - p)) return damaged(d, "a DELTA_BINARY_PACKED block");
    const uint8_t *widths = p;
    p += minis;
    for (uint64_t m = 0; m < minis && i < n; m++) {
      int w = widths[m];
      if (w > 64) return damaged(d, "a DELTA_BINARY_PACKED miniblock (its bit width)");
      size_t bytes = (size_t)(per_mini * (uint64_t)w / 8);
      if (bytes > (size_t)(end - p)) return damaged(d, "a DELTA_BINARY_PACKED miniblock");
      for (uint64_t k = 0; k < per_mini && i < n; k++, i++) {
        v += min_delta + unpack_one(p, bytes, k, w);
        d->s->deltas[i] = (int64_t)v;
      }
      p += bytes;
    }
  }
  *pp = p;
  return CS_OK;
}

/* PLAIN byte arrays: n length-prefixed values. */
static cs_rc plain_spans(decoder *d, const uint8_t *p, const uint8_t *end, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (end - p < 4) return damaged(d, "a PLAIN page (it ends inside a value)");
    uint32_t len = load_u32le(p);
    p += 4;
    if (len > (size_t)(end - p)) return damaged(d, "a PLAIN page (a value runs past it)");
    d->s->spans[i] = (span){p, len};
    p += len;
  }
  return CS_OK;
}

/* DELTA_LENGTH_BYTE_ARRAY: the lengths, delta-packed, then the bytes. */
static cs_rc delta_length_spans(decoder *d, const uint8_t *p, const uint8_t *end, uint32_t n,
                                const uint8_t **after) {
  cs_rc rc = delta_decode(d, &p, end, n);
  if (rc != CS_OK) return rc;
  for (uint32_t i = 0; i < n; i++) {
    int64_t len = d->s->deltas[i];
    if (len < 0 || (uint64_t)len > (uint64_t)(end - p)) return damaged(d, "a DELTA_LENGTH_BYTE_ARRAY page");
    d->s->spans[i] = (span){p, (uint32_t)len};
    p += len;
  }
  if (after) *after = p;
  return CS_OK;
}

/* DELTA_BYTE_ARRAY: prefix lengths, then suffixes as DELTA_LENGTH_BYTE_ARRAY;
** each value is the previous one's prefix and its suffix, rebuilt in
** d->s->built (grown as values arrive: the output is never claimed ahead). */
static cs_rc delta_byte_spans(decoder *d, const uint8_t *p, const uint8_t *end, uint32_t n) {
  cs_rc rc = delta_decode(d, &p, end, n);
  if (rc != CS_OK) return rc;
  int64_t *prefix = cs__mem_malloc((n ? n : 1) * sizeof *prefix);
  if (!prefix) return oom(d);
  memcpy(prefix, d->s->deltas, n * sizeof *prefix);
  if ((rc = delta_length_spans(d, p, end, n, NULL)) != CS_OK) goto done;
  size_t used = 0, prev_at = 0, prev_n = 0;
  for (uint32_t i = 0; i < n; i++) {
    int64_t pre = prefix[i];
    if (pre < 0 || (uint64_t)pre > prev_n) {
      rc = damaged(d, "a DELTA_BYTE_ARRAY page (a prefix longer than the value before)");
      goto done;
    }
    size_t len = (size_t)pre + d->s->spans[i].n;
    if (len > MAX_PAGE_BYTES || !reserve(&d->s->built, &d->s->built_cap, used + len + 1, 1)) {
      rc = len > MAX_PAGE_BYTES ? damaged(d, "a DELTA_BYTE_ARRAY page") : oom(d);
      goto done;
    }
    memmove(d->s->built + used, d->s->built + prev_at, (size_t)pre);
    memcpy(d->s->built + used + pre, d->s->spans[i].p, d->s->spans[i].n);
    d->s->spans[i].n = (uint32_t)len;
    d->s->spans[i].p = (const uint8_t *)(uintptr_t)used; /* an offset until built stops moving */
    prev_at = used, prev_n = len;
    used += len;
  }
  for (uint32_t i = 0; i < n; i++) d->s->spans[i].p = d->s->built + (uintptr_t)d->s->spans[i].p;
done:
  cs__mem_free(prefix);
  return rc;
}

/* Decodes n non-NULL values of encoding enc from [p, end) into the staging
** (d->s->stage at d->pw bytes each, or d->s->spans); dict: a dictionary page. */
static cs_rc decode_values(decoder *d, int32_t enc, const uint8_t *p, const uint8_t *end, uint32_t n) {
  int32_t phys = d->c->phys;
  size_t pw = d->pw;
  if (pw ? !reserve(&d->s->stage, &d->s->stage_cap, (size_t)n * 8 + 8, 1)
         : !reserve(&d->s->spans, &d->s->spans_cap, n + 1, sizeof(span)))
    return oom(d);
  size_t avail = (size_t)(end - p);
  switch (enc) {
    case PQ_PLAIN:
      if (phys == PQ_BOOLEAN) {
        if ((n + 7) / 8 > avail) return damaged(d, "a PLAIN page (too short)");
        for (uint32_t i = 0; i < n; i++) d->s->stage[i] = (p[i >> 3] >> (i & 7)) & 1;
        return CS_OK;
      }
      if (pw) {
        if ((uint64_t)n * pw > avail) return damaged(d, "a PLAIN page (too short)");
        memcpy(d->s->stage, p, (size_t)n * pw);
        return CS_OK;
      }
      if (phys == PQ_FLBA) {
        uint64_t w = (uint64_t)d->c->type_length;
        if (d->c->type_length < 0 || (uint64_t)n * w > avail) return damaged(d, "a PLAIN page (too short)");
        for (uint32_t i = 0; i < n; i++) d->s->spans[i] = (span){p + i * w, (uint32_t)w};
        return CS_OK;
      }
      return plain_spans(d, p, end, n);
    case PQ_PLAIN_DICTIONARY:
    case PQ_RLE_DICTIONARY: {
      if (!d->have_dict) return damaged(d, "a dictionary-encoded page without a dictionary page");
      if (avail < 1) return damaged(d, "a dictionary-encoded page");
      if (!reserve(&d->s->idx, &d->s->idx_cap, n + 1, sizeof(uint32_t))) return oom(d);
      if (!cs_pq_rle_decode(p + 1, end, p[0], d->s->idx, n)) return damaged(d, "a dictionary-encoded page");
      for (uint32_t i = 0; i < n; i++)
        if (d->s->idx[i] >= d->dict_n)
          return damaged(d, "a dictionary-encoded page (an index past the dictionary)");
      if (pw == 8)
        for (uint32_t i = 0; i < n; i++)
          memcpy(d->s->stage + i * 8, d->s->dict_fixed + (size_t)d->s->idx[i] * 8, 8);
      else if (pw == 4)
        for (uint32_t i = 0; i < n; i++)
          memcpy(d->s->stage + i * 4, d->s->dict_fixed + (size_t)d->s->idx[i] * 4, 4);
      else if (pw)
        for (uint32_t i = 0; i < n; i++)
          memcpy(d->s->stage + i * pw, d->s->dict_fixed + (size_t)d->s->idx[i] * pw, pw);
      else
        for (uint32_t i = 0; i < n; i++) d->s->spans[i] = d->s->dict_spans[d->s->idx[i]];
      return CS_OK;
    }
    case PQ_RLE:
      if (phys != PQ_BOOLEAN) break;
      if (avail < 4 || load_u32le(p) > avail - 4) return damaged(d, "an RLE boolean page");
      if (!reserve(&d->s->idx, &d->s->idx_cap, n + 1, sizeof(uint32_t))) return oom(d);
      if (!cs_pq_rle_decode(p + 4, p + 4 + load_u32le(p), 1, d->s->idx, n))
        return damaged(d, "an RLE boolean page");
      for (uint32_t i = 0; i < n; i++) d->s->stage[i] = (uint8_t)d->s->idx[i];
      return CS_OK;
    case PQ_DELTA_BINARY_PACKED: {
      if (phys != PQ_INT32 && phys != PQ_INT64) break;
      cs_rc rc = delta_decode(d, &p, end, n);
      if (rc != CS_OK) return rc;
      if (phys == PQ_INT64) {
        memcpy(d->s->stage, d->s->deltas, (size_t)n * 8);
      } else {
        for (uint32_t i = 0; i < n; i++) {
          int32_t v = (int32_t)(uint32_t)(uint64_t)d->s->deltas[i];
          memcpy(d->s->stage + i * 4, &v, 4);
        }
      }
      return CS_OK;
    }
    case PQ_DELTA_LENGTH_BYTE_ARRAY:
      if (phys != PQ_BYTE_ARRAY) break;
      return delta_length_spans(d, p, end, n, NULL);
    case PQ_DELTA_BYTE_ARRAY:
      if (phys != PQ_BYTE_ARRAY && phys != PQ_FLBA) break;
      return delta_byte_spans(d, p, end, n);
    case PQ_BYTE_STREAM_SPLIT: {
      size_t w = pw ? pw : (size_t)d->c->type_length;
      if (phys == PQ_BOOLEAN || phys == PQ_BYTE_ARRAY || w == 0) break;
      if ((uint64_t)n * w > avail) return damaged(d, "a BYTE_STREAM_SPLIT page (too short)");
      uint8_t *dst = d->s->stage;
      if (!pw) {
        if (!reserve(&d->s->built, &d->s->built_cap, (size_t)n * w + 1, 1)) return oom(d);
        dst = d->s->built;
      }
      for (size_t k = 0; k < w; k++)
        for (uint32_t i = 0; i < n; i++) dst[(size_t)i * w + k] = p[k * n + i];
      if (!pw)
        for (uint32_t i = 0; i < n; i++) d->s->spans[i] = (span){d->s->built + (size_t)i * w, (uint32_t)w};
      return CS_OK;
    }
    default: break;
  }
  return bad(d, CS_EINVAL, "encoding %d is not supported for %s", enc, d->c->logical);
}

/* ----------------------------------------------------------------- emit */

/* The staged physical values converted, in place, to the column type. */
static cs_rc convert(decoder *d, uint32_t n) {
  const cs_pq_column *c = d->c;
  switch (c->conv) {
    case PQ_CONV_NONE:
    case PQ_CONV_U32: return CS_OK; /* the same bits */
    case PQ_CONV_NARROW: {
      size_t w = cs_type_width(c->type);
      for (uint32_t i = 0; i < n; i++) {
        int32_t v;
        memcpy(&v, d->s->stage + (size_t)i * 4, 4);
        if (!cs_type_int_fits(c->type, v))
          return bad(d, CS_EINVAL, "value %d does not fit %s, the column's annotated type %s", v,
                     cs_type_name(c->type), c->logical);
        if (w == 1) {
          int8_t b = (int8_t)v;
          memcpy(d->s->stage + i, &b, 1);
        } else {
          int16_t s = (int16_t)v;
          memcpy(d->s->stage + (size_t)i * 2, &s, 2);
        }
      }
      return CS_OK;
    }
    case PQ_CONV_WIDEN:
      for (uint32_t i = n; i-- > 0;) {
        int32_t v;
        memcpy(&v, d->s->stage + (size_t)i * 4, 4);
        int64_t w = v;
        memcpy(d->s->stage + (size_t)i * 8, &w, 8);
      }
      return CS_OK;
    case PQ_CONV_U64:
      for (uint32_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, d->s->stage + (size_t)i * 8, 8);
        if (v < 0)
          return bad(d, CS_EINVAL,
                     "value %llu is over INT64's maximum; colstore stores UINT64 values as INT64 "
                     "when they fit",
                     (unsigned long long)(uint64_t)v);
      }
      return CS_OK;
  }
  return CS_OK;
}

/* Spreads the page's n_values dense values over its n_rows rows, NULL
** where levels[r] == 0 (levels NULL: no NULLs), from output row at. */
static cs_rc emit(decoder *d, const uint32_t *levels, uint32_t n_rows, uint32_t n_values) {
  cs_pq_values *o = d->out;
  uint64_t at = o->n_rows;
  cs_rc rc = convert(d, n_values);
  if (rc != CS_OK) return rc;
  if (levels) {
    for (uint32_t r = 0; r < n_rows; r++)
      if (!levels[r]) {
        o->validity[(at + r) >> 3] &= (uint8_t) ~(1u << ((at + r) & 7));
        o->null_count++;
      }
  }
  size_t w = cs_type_width(d->c->type);
  if (w) {
    uint8_t *dst = o->data + at * w;
    if (!levels || n_values == n_rows) {
      memcpy(dst, d->s->stage, (size_t)n_values * w);
    } else {
      uint32_t j = 0;
      for (uint32_t r = 0; r < n_rows; r++) {
        if (levels[r])
          memcpy(dst + (size_t)r * w, d->s->stage + (size_t)j++ * w, w);
        else
          memset(dst + (size_t)r * w, 0, w);
      }
    }
    o->data_bytes += (uint64_t)n_rows * w;
  } else {
    uint64_t bytes = 0;
    for (uint32_t j = 0; j < n_values; j++) bytes += d->s->spans[j].n;
    if (!reserve(&o->data, &o->data_cap, o->data_bytes + bytes + 1, 1)) return oom(d);
    uint32_t j = 0;
    for (uint32_t r = 0; r < n_rows; r++) {
      if (!levels || levels[r]) {
        memcpy(o->data + o->data_bytes, d->s->spans[j].p, d->s->spans[j].n);
        o->data_bytes += d->s->spans[j++].n;
      }
      o->offsets[at + r + 1] = (int64_t)o->data_bytes;
    }
  }
  o->n_rows += n_rows;
  return CS_OK;
}

/* ---------------------------------------------------------------- pages */

static cs_rc dictionary_page(decoder *d, const page_header *h, const uint8_t *body, size_t n) {
  if (d->have_dict) return damaged(d, "the chunk (two dictionary pages)");
  if (h->encoding != PQ_PLAIN && h->encoding != PQ_PLAIN_DICTIONARY)
    return bad(d, CS_EINVAL, "a dictionary page of encoding %d is not supported", h->encoding);
  if (!d->pw && (uint64_t)h->num_values > n / (d->c->phys == PQ_BYTE_ARRAY ? 4 : 1) + 1)
    return damaged(d, "the dictionary page (more values than bytes)");
  if (d->pw && (uint64_t)h->num_values * d->pw > n + 8) return damaged(d, "the dictionary page (too short)");
  /* The staging belongs to data pages; the dictionary keeps its own copy,
  ** and byte arrays point into a copy of the page. */
  if (!reserve(&d->s->dict_page, &d->s->dict_page_cap, n + 1, 1)) return oom(d);
  memcpy(d->s->dict_page, body, n);
  uint32_t k = (uint32_t)h->num_values;
  cs_rc rc = decode_values(d, PQ_PLAIN, d->s->dict_page, d->s->dict_page + n, k);
  if (rc != CS_OK) return rc;
  if (d->pw) {
    if (!reserve(&d->s->dict_fixed, &d->s->dict_fixed_cap, (size_t)k * d->pw + 1, 1)) return oom(d);
    memcpy(d->s->dict_fixed, d->s->stage, (size_t)k * d->pw);
  } else {
    if (!reserve(&d->s->dict_spans, &d->s->dict_spans_cap, (size_t)k + 1, sizeof(span))) return oom(d);
    memcpy(d->s->dict_spans, d->s->spans, (size_t)k * sizeof(span));
  }
  d->dict_n = k;
  d->have_dict = true;
  return CS_OK;
}

/* A data page's levels and values, body already decompressed. */
static cs_rc data_values(decoder *d, const page_header *h, const uint8_t *levels_p, size_t levels_n,
                         const uint8_t *values_p, size_t values_n) {
  uint32_t n_rows = (uint32_t)h->num_values, n_values = n_rows;
  const uint32_t *levels = NULL;
  if (d->c->optional) {
    if (!reserve(&d->s->levels, &d->s->levels_cap, n_rows + 1, sizeof(uint32_t))) return oom(d);
    if (!cs_pq_rle_decode(levels_p, levels_p + levels_n, 1, d->s->levels, n_rows))
      return damaged(d, "a page's definition levels");
    n_values = 0;
    for (uint32_t r = 0; r < n_rows; r++) n_values += d->s->levels[r] != 0;
    levels = d->s->levels;
  }
  cs_rc rc = decode_values(d, h->encoding, values_p, values_p + values_n, n_values);
  return rc != CS_OK ? rc : emit(d, levels, n_rows, n_values);
}

static cs_rc data_page(decoder *d, const page_header *h, const uint8_t *body, size_t n_body, int32_t codec) {
  if ((uint64_t)h->num_values > d->rows_left)
    return damaged(d, "the chunk (more values than the row group has rows)");
  const uint8_t *plain;
  cs_rc rc;
  if (h->type == PAGE_DATA) {
    if ((rc = decompress(d, codec, body, n_body, (size_t)h->uncompressed, &plain)) != CS_OK) return rc;
    size_t n = (size_t)h->uncompressed, lv = 0;
    if (d->c->optional) {
      if (h->def_encoding != PQ_RLE)
        return bad(d, CS_EINVAL, "definition levels of encoding %d are not supported (RLE is)",
                   h->def_encoding);
      if (n < 4 || load_u32le(plain) > n - 4) return damaged(d, "a page's definition levels");
      lv = load_u32le(plain);
      plain += 4, n -= 4;
    }
    rc = data_values(d, h, plain, lv, plain + lv, n - lv);
  } else {
    size_t lv = (size_t)h->def_bytes + (size_t)h->rep_bytes;
    if (lv > n_body || lv > (size_t)h->uncompressed) return damaged(d, "a version 2 page's levels");
    if (h->rep_bytes) return bad(d, CS_EINVAL, "repetition levels (a nested column) are not supported");
    if (h->is_compressed) {
      if ((rc = decompress(d, codec, body + lv, n_body - lv, (size_t)h->uncompressed - lv, &plain)) != CS_OK)
        return rc;
    } else {
      if (n_body != (size_t)h->uncompressed) return damaged(d, "a version 2 page (its sizes differ)");
      plain = body + lv;
    }
    rc = data_values(d, h, body, (size_t)h->def_bytes, plain, (size_t)h->uncompressed - lv);
  }
  if (rc == CS_OK) d->rows_left -= (uint64_t)h->num_values;
  return rc;
}

cs_rc cs_pq_decode_chunk(const cs_pq_file *f, uint32_t rg, uint32_t col, const uint8_t *bytes, size_t n,
                         cs_pq_values *out, cs_err *err) {
  const cs_pq_column *c = &f->cols[col];
  const cs_pq_chunk_meta *m = &f->row_groups[rg].chunks[col];
  uint64_t rows = (uint64_t)f->row_groups[rg].num_rows;
  decoder d = {.f = f, .c = c, .rg = rg, .col = col, .err = err, .out = out, .rows_left = rows};
  cs_rc rc = cs_pq_column_supported(f, col, err);
  if (rc != CS_OK) return rc;
  if (!out->scratch && !(out->scratch = cs__mem_calloc(1, sizeof *out->scratch))) return oom(&d);
  d.s = out->scratch;
  if (rows > CS_PQ_MAX_GROUP_ROWS)
    return bad(&d, CS_EINVAL,
               "%llu rows in one row group is over colstore's limit "
               "of 2^28",
               (unsigned long long)rows);
  static const size_t widths[] = {1, 4, 8, 12, 4, 8, 0, 0};
  d.pw = widths[c->phys];
  size_t w = cs_type_width(c->type);
  /* The output, for the row group's rows: all valid until a level says not. */
  out->n_rows = 0;
  out->null_count = 0;
  out->data_bytes = 0;
  size_t vbytes = (size_t)(rows + 7) / 8 + 8;
  if (!reserve(&out->validity, &out->validity_cap, vbytes, 1) ||
      (w && !reserve(&out->data, &out->data_cap, (size_t)rows * w + 8, 1)) ||
      (!w && !reserve(&out->data, &out->data_cap, 64, 1)) ||
      (!w && !reserve(&out->offsets, &out->offsets_cap, (size_t)rows + 1, sizeof(int64_t)))) {
    rc = oom(&d);
    goto done;
  }
  memset(out->validity, 0xff, vbytes);
  if (!w) out->offsets[0] = 0;
  const uint8_t *p = bytes, *end = bytes + n;
  while (d.rows_left > 0) {
    if (p >= end) {
      rc = damaged(&d, "the chunk (it ends before its row group's rows)");
      goto done;
    }
    cs_thrift t;
    cs_thrift_init(&t, p, (size_t)(end - p));
    page_header h;
    if (!read_page_header(&t, &h)) {
      rc = damaged(&d, "a page header");
      goto done;
    }
    p = t.p;
    if ((size_t)h.compressed > (size_t)(end - p)) {
      rc = damaged(&d, "a page (it runs past its chunk)");
      goto done;
    }
    const uint8_t *body = p;
    p += h.compressed;
    if (h.type == PAGE_DICTIONARY) {
      const uint8_t *plain;
      if (!h.has_body)
        rc = damaged(&d, "a dictionary page header");
      else if ((rc = decompress(&d, m->codec, body, (size_t)h.compressed, (size_t)h.uncompressed, &plain)) ==
               CS_OK)
        rc = dictionary_page(&d, &h, plain, (size_t)h.uncompressed);
    } else if (h.type == PAGE_DATA || h.type == PAGE_DATA_V2) {
      rc = h.has_body ? data_page(&d, &h, body, (size_t)h.compressed, m->codec)
                      : damaged(&d, "a data page header");
    }
    if (rc != CS_OK) goto done;
  }
done:
  return rc;
}

cs_rc cs_pq_read_column(const cs_pq_file *f, uint32_t rg, uint32_t col, cs_pq_values *out, cs_err *err) {
  const cs_pq_chunk_meta *m = &f->row_groups[rg].chunks[col];
  if (m->start < 4 || !cs__span_in((uint64_t)m->start, (uint64_t)m->n_bytes, 4, f->file_bytes - 8))
    return cs_err_set(err, CS_ECORRUPT,
                      "colstore: %s: row group %u, column %s: its chunk lies outside the file", f->path, rg,
                      f->cols[col].name);
  if (!out->scratch && !(out->scratch = cs__mem_calloc(1, sizeof *out->scratch)))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  cs_pq_scratch *s = out->scratch;
  if (!reserve(&s->chunk, &s->chunk_cap, (size_t)m->n_bytes + 1, 1))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  cs_rc rc = cs__pread_full(f->fd, s->chunk, (size_t)m->n_bytes, (uint64_t)m->start, f->path, err);
  return rc == CS_OK ? cs_pq_decode_chunk(f, rg, col, s->chunk, (size_t)m->n_bytes, out, err) : rc;
}

void cs_pq_values_free(cs_pq_values *v) {
  cs_pq_scratch *s = v->scratch;
  if (s) {
    void *bufs[] = {s->chunk, s->dict_fixed, s->dict_spans, s->dict_page, s->page,  s->levels,
                    s->idx,   s->stage,      s->spans,      s->built,     s->deltas};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) cs__mem_free(bufs[i]);
    ZSTD_freeDCtx(s->zstd);
    cs__mem_free(s);
  }
  cs__mem_free(v->validity);
  cs__mem_free(v->data);
  cs__mem_free(v->offsets);
  memset(v, 0, sizeof *v);
}
