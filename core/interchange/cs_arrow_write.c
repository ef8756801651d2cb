/*
** cs_arrow_write.c - writing Arrow IPC, the file format and the stream
** format, as cs_format_writer_ops (the interface core/export drives).
**
** A slice becomes one record batch, and its body is, as far as Arrow's
** layout allows, the slice's own bytes: fixed-width values and validity
** bitmaps are handed to the sink where they lie (colstore's LSB-first
** bitmap is Arrow's), so an uncompressed export is the sink's write speed.
** What is converted goes through a scratch buffer per column, kept from
** batch to batch: BOOL bytes packed to Arrow's bits, TEXT/BLOB's int64
** offsets to int32 from 0, a bitmap that starts inside a byte shifted.
**
** Types keep their width and signedness (Int(8..64, signed/unsigned),
** FloatingPoint SINGLE/DOUBLE), BOOL is Bool, TEXT Utf8, BLOB Binary.
** Utf8 and Binary take int32 offsets: a slice whose strings pass 2 GiB is
** written as several batches rather than switching the column to
** LargeUtf8, which the schema, written first, would have to know before
** any row is seen (and which some readers take less well); only a single
** value over 2 GiB cannot be written, and colstore holds none.
**
** Compression (zstd, or lz4 as LZ4_FRAME) is Arrow's per-buffer kind:
** each buffer an int64 uncompressed length and the compressed bytes, or -1
** and the raw bytes where compressing did not make it smaller.  Buffers
** are 8-byte aligned and messages padded to 8 bytes, as the format asks;
** the metadata is built with cs_flatbuf.c's builder.
*/
#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cs_base_internal.h"
#include "cs_interchange_internal.h"

typedef struct scratch {
  uint8_t *p;
  size_t cap;
} scratch;

typedef struct out_buf {
  const uint8_t *p;
  uint64_t n;
  uint64_t off; /* in the body */
} out_buf;

typedef struct block {
  int64_t offset;
  int32_t meta;
  int32_t pad;
  int64_t body;
} block;

struct cs_format_writer {
  bool file; /* the file format, else the stream */
  cs_sink sink;
  cs_out_codec codec;
  uint32_t n_cols;
  cs_column *cols;
  uint64_t pos; /* bytes written */
  cs_fbb fbb;
  scratch *conv;  /* per column: 2 (validity shift, values/offsets) */
  scratch *comp;  /* per column: 3 compressed buffers */
  out_buf *bufs;  /* per column: 3 */
  uint8_t *nodes; /* per column: a FieldNode */
  block *blocks;
  uint64_t n_blocks, cap_blocks;
  ZSTD_CCtx *zstd;
  uint32_t schema_ref; /* during open/finish */
};

static const uint8_t PAD[8];

static cs_rc put(cs_format_writer *w, const void *p, size_t n, cs_err *err) {
  if (n == 0) return CS_OK;
  cs_rc rc = w->sink.write(w->sink.ctx, p, n, err);
  if (rc == CS_OK) w->pos += n;
  return rc;
}

static cs_rc put_padded(cs_format_writer *w, const void *p, uint64_t n, cs_err *err) {
  cs_rc rc = put(w, p, (size_t)n, err);
  if (rc == CS_OK && n % 8) rc = put(w, PAD, 8 - n % 8, err);
  return rc;
}

static bool reserve(scratch *s, size_t n) {
  if (n <= s->cap) return true;
  size_t cap = s->cap ? s->cap : 4096;
  while (cap < n) cap *= 2;
  void *p = cs__mem_realloc(s->p, cap);
  if (!p) return false;
  s->p = p, s->cap = cap;
  return true;
}

/* ------------------------------------------------------------ metadata */

/* A Message of header type kind around header, framed: continuation,
** length, the flatbuffer padded to 8.  *out_meta: the framed size. */
static cs_rc put_message(cs_format_writer *w, int kind, uint32_t header, int64_t body_n, int32_t *out_meta,
                         cs_err *err) {
  cs_fbb *b = &w->fbb;
  cs_fbb_table_begin(b);
  cs_fbb_add_int(b, 3, body_n, 8);
  cs_fbb_add_ref(b, 2, header);
  cs_fbb_add_int(b, 0, 4, 2); /* MetadataVersion V5 */
  cs_fbb_add_int(b, 1, kind, 1);
  uint32_t msg = cs_fbb_table_end(b);
  const uint8_t *p;
  size_t n;
  if (!cs_fbb_finish(b, msg, &p, &n)) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  uint32_t prefix[2] = {0xFFFFFFFFu, (uint32_t)n}; /* n is a multiple of 8 */
  cs_rc rc = put(w, prefix, 8, err);
  if (rc == CS_OK) rc = put(w, p, n, err);
  if (out_meta) *out_meta = (int32_t)(n + 8);
  cs_fbb_reset(b);
  return rc;
}

/* The Arrow type of a colstore type: its union member and table. */
static uint32_t put_type(cs_fbb *b, cs_type t, uint8_t *out_type) {
  cs_fbb_table_begin(b);
  switch (t) {
    case CS_TYPE_FLOAT32:
    case CS_TYPE_FLOAT64:
      *out_type = ARROW_FLOAT;
      cs_fbb_add_int(b, 0, t == CS_TYPE_FLOAT32 ? 1 : 2, 2);
      break;
    case CS_TYPE_BOOL: *out_type = ARROW_BOOL; break;
    case CS_TYPE_TEXT: *out_type = ARROW_UTF8; break;
    case CS_TYPE_BLOB: *out_type = ARROW_BINARY; break;
    default: {
      *out_type = ARROW_INT;
      bool sign = t == CS_TYPE_INT8 || t == CS_TYPE_INT16 || t == CS_TYPE_INT32 || t == CS_TYPE_INT64;
      cs_fbb_add_int(b, 0, (int64_t)cs_type_width(t) * 8, 4);
      cs_fbb_add_int(b, 1, sign, 1);
    }
  }
  return cs_fbb_table_end(b);
}

/* The Schema table (the stream's first message and the footer's). */
static uint32_t build_schema(cs_format_writer *w) {
  cs_fbb *b = &w->fbb;
  uint32_t fields[CS_MAX_COLUMNS];
  for (uint32_t i = 0; i < w->n_cols; i++) {
    uint8_t tt;
    uint32_t type = put_type(b, w->cols[i].type, &tt);
    uint32_t name = cs_fbb_string(b, w->cols[i].name, strlen(w->cols[i].name));
    uint32_t kids = cs_fbb_vector_refs(b, NULL, 0);
    cs_fbb_table_begin(b);
    cs_fbb_add_ref(b, 0, name);
    cs_fbb_add_ref(b, 3, type);
    cs_fbb_add_ref(b, 5, kids);
    cs_fbb_add_int(b, 1, w->cols[i].nullable, 1);
    cs_fbb_add_int(b, 2, tt, 1);
    fields[i] = cs_fbb_table_end(b);
  }
  uint32_t vec = cs_fbb_vector_refs(b, fields, w->n_cols);
  cs_fbb_table_begin(b);
  cs_fbb_add_ref(b, 1, vec);
  return cs_fbb_table_end(b);
}

/* --------------------------------------------------------------- open */

static void writer_free(cs_format_writer *w) {
  if (!w) return;
  for (uint32_t i = 0; w->cols && i < w->n_cols; i++) cs__mem_free((char *)w->cols[i].name);
  for (uint32_t i = 0; w->conv && i < 2 * w->n_cols; i++) cs__mem_free(w->conv[i].p);
  for (uint32_t i = 0; w->comp && i < 3 * w->n_cols; i++) cs__mem_free(w->comp[i].p);
  cs__mem_free(w->cols);
  cs__mem_free(w->conv);
  cs__mem_free(w->comp);
  cs__mem_free(w->bufs);
  cs__mem_free(w->nodes);
  cs__mem_free(w->blocks);
  ZSTD_freeCCtx(w->zstd);
  cs_fbb_free(&w->fbb);
  cs__mem_free(w);
}

static cs_rc writer_open(bool file, const cs_schema *schema, const cs_out_options *opt, cs_sink sink,
                         cs_format_writer **out, cs_err *err) {
  *out = NULL;
  cs_out_codec codec = opt ? opt->codec : CS_OUT_NONE;
  if (codec != CS_OUT_NONE && codec != CS_OUT_ZSTD && codec != CS_OUT_LZ4)
    return cs_err_set(err, CS_EINVAL,
                      "colstore: Arrow IPC compresses with zstd or lz4 only; choose one of them or none");
  if (schema->n_cols == 0 || schema->n_cols > CS_MAX_COLUMNS)
    return cs_err_set(err, CS_EINVAL, "colstore: an Arrow file needs 1 to %d columns", CS_MAX_COLUMNS);
  cs_format_writer *w = cs__mem_calloc(1, sizeof *w);
  uint32_t n = schema->n_cols;
  if (!w || !(w->cols = cs__mem_calloc(n, sizeof *w->cols)) ||
      !(w->conv = cs__mem_calloc(2 * n, sizeof *w->conv)) ||
      !(w->comp = cs__mem_calloc(3 * n, sizeof *w->comp)) ||
      !(w->bufs = cs__mem_calloc(3 * n, sizeof *w->bufs)) || !(w->nodes = cs__mem_calloc(n, 16)) ||
      (codec == CS_OUT_ZSTD && !(w->zstd = ZSTD_createCCtx()))) {
    writer_free(w);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  }
  w->file = file, w->sink = sink, w->codec = codec;
  for (uint32_t i = 0; i < n; i++) {
    w->cols[i] = schema->cols[i];
    if (!(w->cols[i].name = cs__mem_strdup(schema->cols[i].name))) {
      w->n_cols = i;
      writer_free(w);
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    }
    w->n_cols = i + 1;
  }
  cs_rc rc = file ? put(w, "ARROW1\0\0", 8, err) : CS_OK;
  if (rc == CS_OK) rc = put_message(w, 1, build_schema(w), 0, NULL, err);
  if (rc != CS_OK) {
    writer_free(w);
    return rc;
  }
  *out = w;
  return CS_OK;
}

static cs_rc file_open(const cs_schema *s, const cs_out_options *o, cs_sink k, cs_format_writer **out,
                       cs_err *err) {
  return writer_open(true, s, o, k, out, err);
}

static cs_rc stream_open(const cs_schema *s, const cs_out_options *o, cs_sink k, cs_format_writer **out,
                         cs_err *err) {
  return writer_open(false, s, o, k, out, err);
}

/* -------------------------------------------------------------- batches */

/* Rows [from, from + n) of an LSB-first bitmap, as a bitmap from bit 0. */
static const uint8_t *bitmap_at(const uint8_t *bits, uint64_t from, uint64_t n, scratch *s) {
  if (from % 8 == 0) return bits + from / 8;
  uint64_t nb = (n + 7) / 8;
  if (!reserve(s, nb)) return NULL;
  memset(s->p, 0, nb);
  for (uint64_t k = 0; k < n; k++)
    if (bits[(from + k) >> 3] >> ((from + k) & 7) & 1) s->p[k >> 3] |= (uint8_t)(1u << (k & 7));
  return s->p;
}

/* Compresses one buffer in place of its description (b->p, b->n). */
static cs_rc compress_buf(cs_format_writer *w, out_buf *b, scratch *s, cs_err *err) {
  if (b->n == 0) return CS_OK;
  size_t bound = w->codec == CS_OUT_ZSTD ? ZSTD_compressBound(b->n) : LZ4F_compressFrameBound(b->n, NULL);
  if (!reserve(s, bound + 8)) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  size_t z;
  if (w->codec == CS_OUT_ZSTD) {
    z = ZSTD_compressCCtx(w->zstd, s->p + 8, bound, b->p, b->n, 1);
    if (ZSTD_isError(z)) return cs_err_set(err, CS_EIO, "colstore: zstd: %s", ZSTD_getErrorName(z));
  } else {
    LZ4F_preferences_t pref = {.frameInfo = {.contentSize = b->n}};
    z = LZ4F_compressFrame(s->p + 8, bound, b->p, b->n, &pref);
    if (LZ4F_isError(z)) return cs_err_set(err, CS_EIO, "colstore: lz4: %s", LZ4F_getErrorName(z));
  }
  int64_t raw = (int64_t)b->n;
  if (z >= b->n) { /* not worth it: -1 and the bytes as they are */
    if (!reserve(s, b->n + 8)) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    memcpy(s->p + 8, b->p, b->n);
    z = b->n, raw = -1;
  }
  memcpy(s->p, &raw, 8);
  b->p = s->p, b->n = z + 8;
  return CS_OK;
}

/* Column i's buffers for rows [from, from + n). */
static cs_rc column_buffers(cs_format_writer *w, uint32_t i, const cs_chunk *c, uint64_t from, uint64_t n,
                            cs_err *err) {
  out_buf *b = &w->bufs[3 * i];
  scratch *s = &w->conv[2 * i];
  cs_type t = w->cols[i].type;
  int64_t nulls = 0;
  b[0] = (out_buf){0};
  if (c->null_count && c->validity) {
    if (!(b[0].p = bitmap_at(c->validity, from, n, &s[0])))
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    b[0].n = (n + 7) / 8;
    for (uint64_t k = 0; k < n; k++) nulls += !(b[0].p[k >> 3] >> (k & 7) & 1);
    if (nulls == 0) b[0] = (out_buf){0};
  }
  int64_t node[2] = {(int64_t)n, nulls};
  memcpy(w->nodes + 16 * i, node, 16);
  b[2] = (out_buf){0};
  if (t == CS_TYPE_BOOL) {
    uint64_t nb = (n + 7) / 8;
    if (!reserve(&s[1], nb ? nb : 1)) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    memset(s[1].p, 0, nb);
    const uint8_t *v = (const uint8_t *)c->data + from;
    for (uint64_t k = 0; k < n; k++) s[1].p[k >> 3] |= (uint8_t)((v[k] != 0) << (k & 7));
    b[1] = (out_buf){s[1].p, nb, 0};
  } else if (cs_type_is_varlen(t)) {
    if (!reserve(&s[1], 4 * (n + 1))) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    int32_t *o = (int32_t *)s[1].p;
    int64_t base = c->offsets[from];
    for (uint64_t k = 0; k <= n; k++) o[k] = (int32_t)(c->offsets[from + k] - base);
    b[1] = (out_buf){s[1].p, 4 * (n + 1), 0};
    b[2] = (out_buf){(const uint8_t *)c->data + base, (uint64_t)(c->offsets[from + n] - base), 0};
  } else {
    uint64_t width = cs_type_width(t);
    b[1] = (out_buf){(const uint8_t *)c->data + from * width, n * width, 0};
  }
  if (w->codec != CS_OUT_NONE)
    for (int k = 0; k < 3; k++) {
      cs_rc rc = compress_buf(w, &b[k], &w->comp[3 * i + k], err);
      if (rc != CS_OK) return rc;
    }
  return CS_OK;
}

static cs_rc write_batch(cs_format_writer *w, const cs_chunk *cols, uint64_t from, uint64_t n, cs_err *err) {
  uint64_t body = 0;
  uint32_t n_bufs = 0;
  for (uint32_t i = 0; i < w->n_cols; i++) {
    cs_rc rc = column_buffers(w, i, &cols[i], from, n, err);
    if (rc != CS_OK) return rc;
    int nb = cs_type_is_varlen(w->cols[i].type) ? 3 : 2;
    for (int k = 0; k < nb; k++) {
      w->bufs[3 * i + k].off = body;
      body += (w->bufs[3 * i + k].n + 7) & ~(uint64_t)7;
    }
    n_bufs += (uint32_t)nb;
  }
  /* The metadata: buffers and nodes as vectors of structs. */
  cs_fbb *b = &w->fbb;
  int64_t *desc = cs__mem_malloc(16 * (size_t)n_bufs);
  if (!desc) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  uint32_t k = 0;
  for (uint32_t i = 0; i < w->n_cols; i++)
    for (int j = 0; j < (cs_type_is_varlen(w->cols[i].type) ? 3 : 2); j++) {
      desc[2 * k] = (int64_t)w->bufs[3 * i + j].off;
      desc[2 * k + 1] = (int64_t)w->bufs[3 * i + j].n;
      k++;
    }
  uint32_t comp = 0;
  if (w->codec != CS_OUT_NONE) {
    cs_fbb_table_begin(b);
    cs_fbb_add_int(b, 0, w->codec == CS_OUT_ZSTD ? 1 : 0, 1);
    comp = cs_fbb_table_end(b);
  }
  uint32_t bufs = cs_fbb_vector(b, desc, n_bufs, 16, 8);
  uint32_t nodes = cs_fbb_vector(b, w->nodes, w->n_cols, 16, 8);
  cs__mem_free(desc);
  cs_fbb_table_begin(b);
  cs_fbb_add_int(b, 0, (int64_t)n, 8);
  cs_fbb_add_ref(b, 1, nodes);
  cs_fbb_add_ref(b, 2, bufs);
  if (comp) cs_fbb_add_ref(b, 3, comp);
  uint32_t batch = cs_fbb_table_end(b);
  if (w->n_blocks == w->cap_blocks) {
    uint64_t cap = w->cap_blocks ? 2 * w->cap_blocks : 16;
    block *nb = cs__mem_realloc(w->blocks, cap * sizeof *nb);
    if (!nb) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    w->blocks = nb, w->cap_blocks = cap;
  }
  block *blk = &w->blocks[w->n_blocks];
  *blk = (block){.offset = (int64_t)w->pos, .body = (int64_t)body};
  cs_rc rc = put_message(w, 3, batch, (int64_t)body, &blk->meta, err);
  for (uint32_t i = 0; rc == CS_OK && i < w->n_cols; i++)
    for (int j = 0; rc == CS_OK && j < (cs_type_is_varlen(w->cols[i].type) ? 3 : 2); j++)
      rc = put_padded(w, w->bufs[3 * i + j].p, w->bufs[3 * i + j].n, err);
  if (rc == CS_OK) w->n_blocks++;
  return rc;
}

/* The most rows from from on whose TEXT/BLOB bytes fit int32 offsets. */
static uint64_t rows_fitting(const cs_format_writer *w, const cs_chunk *cols, uint64_t from, uint64_t n) {
  uint64_t fit = n;
  for (uint32_t i = 0; i < w->n_cols; i++) {
    if (!cs_type_is_varlen(w->cols[i].type)) continue;
    const int64_t *o = cols[i].offsets;
    if (o[from + fit] - o[from] <= INT32_MAX) continue;
    uint64_t lo = 0, hi = fit; /* o[from + lo] - o[from] fits, o[from + hi] does not */
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (o[from + mid] - o[from] <= INT32_MAX)
        lo = mid;
      else
        hi = mid;
    }
    fit = lo;
  }
  return fit;
}

static cs_rc writer_write(cs_format_writer *w, uint64_t n_rows, const cs_chunk *cols, cs_err *err) {
  for (uint64_t from = 0; from < n_rows;) {
    uint64_t n = rows_fitting(w, cols, from, n_rows - from);
    if (n == 0)
      return cs_err_set(err, CS_EINVAL,
                        "colstore: a value over 2 GiB does not fit an Arrow Utf8/Binary column");
    cs_rc rc = write_batch(w, cols, from, n, err);
    if (rc != CS_OK) return rc;
    from += n;
  }
  return CS_OK;
}

static cs_rc writer_finish(cs_format_writer *w, uint64_t *out_groups, cs_err *err) {
  static const uint32_t eos[2] = {0xFFFFFFFFu, 0};
  cs_rc rc = put(w, eos, 8, err);
  if (rc == CS_OK && w->file) {
    cs_fbb *b = &w->fbb;
    uint32_t schema = build_schema(w);
    uint32_t blocks = cs_fbb_vector(b, w->blocks, (uint32_t)w->n_blocks, sizeof(block), 8);
    uint32_t dicts = cs_fbb_vector(b, NULL, 0, sizeof(block), 8);
    cs_fbb_table_begin(b);
    cs_fbb_add_ref(b, 1, schema);
    cs_fbb_add_ref(b, 2, dicts);
    cs_fbb_add_ref(b, 3, blocks);
    cs_fbb_add_int(b, 0, 4, 2);
    uint32_t footer = cs_fbb_table_end(b);
    const uint8_t *p;
    size_t n;
    if (!cs_fbb_finish(b, footer, &p, &n)) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    int32_t len = (int32_t)n;
    rc = put(w, p, n, err);
    if (rc == CS_OK) rc = put(w, &len, 4, err);
    if (rc == CS_OK) rc = put(w, "ARROW1", 6, err);
    cs_fbb_reset(b);
  }
  if (out_groups) *out_groups = w->n_blocks;
  return rc;
}

const cs_format_writer_ops cs_arrow_file_writer_ops = {"arrow", file_open, writer_write, writer_finish,
                                                       writer_free};
const cs_format_writer_ops cs_arrow_stream_writer_ops = {"arrows", stream_open, writer_write, writer_finish,
                                                         writer_free};
