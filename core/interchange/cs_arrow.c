/*
** cs_arrow.c - reading Arrow IPC: the file format (ARROW1 magic, a footer
** of blocks) and the stream format (messages one after another, to an
** end-of-stream marker), decoded to colstore's column layout.
**
** Both formats are the same messages: a flatbuffer Message (cs_flatbuf.c)
** whose header is a Schema, a DictionaryBatch or a RecordBatch, followed by
** a body of buffers the header locates.  The file is mapped, so opening it
** reads the footer (file) or walks the message prefixes (stream) and
** records where each dictionary and record batch lies; reading a batch
** parses its metadata then, and a column's buffers are read from the map
** only when that column is asked for (columns= reads nothing else).
**
** The output is a cs_pq_values, the same layout Parquet's decoder hands the
** importer (LSB validity, int64 offsets, values at the colstore type's
** width), so one importer drives both.  A column's buffers are copied, not
** referenced: Arrow's offsets are int32 (or int64 from a base), its booleans
** bits and its values under NULLs undefined, and colstore wants int64
** offsets from 0, bytes and zeros; a copy of fixed-width values is a
** memcpy, small beside writing the store.
**
** Dictionary-encoded columns are decoded to their values: a dictionary
** batch is decoded like a one-column record batch and kept per id (a delta
** appends to it, a non-delta replaces it, in message order), and a
** column's indices gather from it.
**
** Everything is distrusted: buffer offsets and lengths are checked against
** the body, the body against the file, a buffer against the bytes its
** column's length needs, and a compressed buffer's claimed length against
** what its codec can produce from the bytes present (LZ4 frames expand at
** most 255 to 1, zstd 32768 to 1), so a crafted file is a "colstore:"
** error, never a crash or an allocation of a length field's fancy.
*/
#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "cs_base_internal.h"
#include "cs_interchange_internal.h"

/* Message header union members (Message.fbs) and Type union members. */
enum { MH_SCHEMA = 1, MH_DICTIONARY = 2, MH_RECORD_BATCH = 3 };

typedef struct arrow_msg {
  uint8_t kind;      /* MH_DICTIONARY or MH_RECORD_BATCH */
  uint64_t meta_off; /* the flatbuffer */
  uint32_t meta_n;
  uint64_t body_off, body_n;
} arrow_msg;

typedef struct arrow_dict {
  int64_t id;
  uint32_t col; /* the first column using it: its value decoding */
  bool have;
  cs_pq_values values;
} arrow_dict;

struct cs_arrow_file_priv {
  arrow_msg *msgs;
  uint32_t n_msgs, next_msg;
  arrow_dict *dicts;
  uint32_t n_dicts;
  /* the current record batch */
  cs_fb fb;
  cs_fb_table batch;
  const uint8_t *body;
  uint64_t body_n;
  uint64_t batch_no;
  int codec; /* -1: none; 0 LZ4_FRAME; 1 ZSTD */
};

static const char *const TYPE_NAMES[] = {"NONE",          "Null",      "Int",           "FloatingPoint",
                                         "Binary",        "Utf8",      "Bool",          "Decimal",
                                         "Date",          "Time",      "Timestamp",     "Interval",
                                         "List",          "Struct",    "Union",         "FixedSizeBinary",
                                         "FixedSizeList", "Map",       "Duration",      "LargeBinary",
                                         "LargeUtf8",     "LargeList", "RunEndEncoded", "BinaryView",
                                         "Utf8View",      "ListView",  "LargeListView"};
#define N_TYPE_NAMES (sizeof TYPE_NAMES / sizeof *TYPE_NAMES)

static const char *const UNITS[] = {"s", "ms", "us", "ns"};

static cs_rc bad(cs_err *err, const char *path, const char *what) {
  return cs_err_set(err, CS_ECORRUPT, "colstore: %s: %s; the file is not valid Arrow IPC", path, what);
}

/* ------------------------------------------------------------ the schema */

/* Buffers a field of this type takes in a record batch (Columnar.rst,
** "Buffer listing for each layout"), without its children's; -1 when the
** layout depends on more than the type (the view types). */
static int type_buffers(int type, const cs_fb_table *t) {
  switch (type) {
    case ARROW_NULL: return 0;
    case ARROW_BINARY:
    case ARROW_UTF8:
    case ARROW_LARGE_BINARY:
    case ARROW_LARGE_UTF8:
    case 25: /* ListView */
    case 26: return 3;
    case 13: /* Struct */
    case 16: /* FixedSizeList */ return 1;
    case 14: return cs_fb_int(t, 0, 2, true, 0) == 1 ? 2 : 1; /* Union: Dense 2, Sparse 1 */
    case 22: return 0;                                        /* RunEndEncoded */
    case 23:
    case 24: return -1; /* views: variadic buffers */
    default: return 2;
  }
}

/* Walks a field and its children: the nodes and buffers it takes. */
static bool field_layout(const cs_fb_table *field, uint32_t *nodes, uint32_t *buffers) {
  int type = (int)cs_fb_int(field, 2, 1, false, 0);
  cs_fb_table t = {0};
  cs_fb_table_field(field, 3, &t);
  cs_fb_table dict;
  int nb =
      cs_fb_table_field(field, 4, &dict) ? 2 : type_buffers(type, &t); /* dictionary: validity, indices */
  if (nb < 0) return false;
  *nodes += 1;
  *buffers += (uint32_t)nb;
  cs_fb_vec kids;
  if (cs_fb_vector(field, 5, 4, &kids))
    for (uint32_t i = 0; i < kids.n && !field->fb->failed; i++) {
      cs_fb_table k;
      if (!cs_fb_vec_table(&kids, i, &k) || !field_layout(&k, nodes, buffers)) return false;
    }
  return !field->fb->failed;
}

/* The colstore type of an Arrow type, how its values are read, and its
** name for messages; type 0 when unsupported. */
static void map_type(cs_arrow_column *c, int type, const cs_fb_table *t) {
  const char *tn = type >= 0 && (size_t)type < N_TYPE_NAMES ? TYPE_NAMES[type] : "?";
  snprintf(c->desc, sizeof c->desc, "%s", tn);
  c->width = 0;
  switch (type) {
    case ARROW_INT: {
      int64_t bits = cs_fb_int(t, 0, 4, true, 0);
      bool sign = cs_fb_int(t, 1, 1, false, 0) != 0;
      snprintf(c->desc, sizeof c->desc, "Int(%lld, %s)", (long long)bits, sign ? "signed" : "unsigned");
      static const cs_type st[] = {CS_TYPE_INT8, CS_TYPE_INT16, CS_TYPE_INT32, CS_TYPE_INT64};
      static const cs_type ut[] = {CS_TYPE_UINT8, CS_TYPE_UINT16, CS_TYPE_UINT32, CS_TYPE_INT64};
      int k = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : bits == 64 ? 3 : -1;
      if (k < 0) return;
      c->width = (uint8_t)(bits / 8);
      c->type = sign ? st[k] : ut[k];
      c->u64 = !sign && bits == 64;
      return;
    }
    case ARROW_FLOAT: {
      int64_t prec = cs_fb_int(t, 0, 2, true, 0);
      snprintf(c->desc, sizeof c->desc, "FloatingPoint(%s)",
               prec == 0   ? "HALF"
               : prec == 1 ? "SINGLE"
               : prec == 2 ? "DOUBLE"
                           : "?");
      if (prec == 1) c->type = CS_TYPE_FLOAT32, c->width = 4;
      if (prec == 2) c->type = CS_TYPE_FLOAT64, c->width = 8;
      return;
    }
    case ARROW_BOOL: c->type = CS_TYPE_BOOL, c->width = 1, c->bits = true; return;
    case ARROW_UTF8: c->type = CS_TYPE_TEXT, c->width = 4; return;
    case ARROW_LARGE_UTF8: c->type = CS_TYPE_TEXT, c->width = 8; return;
    case ARROW_BINARY: c->type = CS_TYPE_BLOB, c->width = 4; return;
    case ARROW_LARGE_BINARY: c->type = CS_TYPE_BLOB, c->width = 8; return;
    case ARROW_DATE: {
      int64_t unit = cs_fb_int(t, 0, 2, true, 1);
      snprintf(c->desc, sizeof c->desc, "Date(%s)", unit == 0 ? "DAY" : unit == 1 ? "MILLISECOND" : "?");
      if (unit == 0) c->type = CS_TYPE_INT32, c->width = 4;
      if (unit == 1) c->type = CS_TYPE_INT64, c->width = 8;
      return;
    }
    case ARROW_TIME: {
      int64_t unit = cs_fb_int(t, 0, 2, true, 1), bits = cs_fb_int(t, 1, 4, true, 32);
      bool ok = unit >= 0 && unit <= 3 && bits == (unit <= 1 ? 32 : 64);
      snprintf(c->desc, sizeof c->desc, "Time(%s, %lld)", unit >= 0 && unit <= 3 ? UNITS[unit] : "?",
               (long long)bits);
      if (!ok) return;
      c->type = CS_TYPE_INT64, c->width = (uint8_t)(bits / 8), c->widen = bits == 32;
      snprintf(c->unit, sizeof c->unit, "%s", UNITS[unit]);
      return;
    }
    case ARROW_TIMESTAMP: {
      int64_t unit = cs_fb_int(t, 0, 2, true, 0);
      snprintf(c->desc, sizeof c->desc, "Timestamp(%s)", unit >= 0 && unit <= 3 ? UNITS[unit] : "?");
      if (unit < 0 || unit > 3) return;
      c->type = CS_TYPE_INT64, c->width = 8;
      snprintf(c->unit, sizeof c->unit, "%s", UNITS[unit]);
      return;
    }
    default: return;
  }
}

static cs_rc read_schema(cs_arrow_file *f, const cs_fb_table *schema, cs_err *err) {
  if (cs_fb_int(schema, 0, 2, true, 0) != 0)
    return cs_err_set(err, CS_EINVAL, "colstore: %s is big-endian Arrow; write it little-endian", f->path);
  cs_fb_vec fields;
  if (!cs_fb_vector(schema, 1, 4, &fields)) return bad(err, f->path, "a schema without fields");
  if (fields.n > CS_MAX_COLUMNS)
    return cs_err_set(err, CS_EINVAL, "colstore: %s has %u columns, more than colstore's %d", f->path,
                      fields.n, CS_MAX_COLUMNS);
  if (!(f->cols = cs__mem_calloc(fields.n ? fields.n : 1, sizeof *f->cols)))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  uint32_t nodes = 0, buffers = 0;
  bool located = true;
  for (uint32_t i = 0; i < fields.n; i++) {
    cs_arrow_column *c = &f->cols[i];
    cs_fb_table fld, t = {0}, dict;
    if (!cs_fb_vec_table(&fields, i, &fld)) return bad(err, f->path, "a bad schema field");
    const char *name;
    uint32_t name_n = 0;
    if (!cs_fb_string(&fld, 0, &name, &name_n)) name = "";
    if (!(c->name = cs__mem_malloc(name_n + 1))) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    memcpy(c->name, name, name_n);
    c->name[name_n] = 0;
    f->n_cols = i + 1;
    c->nullable = cs_fb_int(&fld, 1, 1, false, 0) != 0;
    int type = (int)cs_fb_int(&fld, 2, 1, false, 0);
    cs_fb_table_field(&fld, 3, &t);
    c->located = located;
    c->node = nodes, c->buffer = buffers;
    if (located && !field_layout(&fld, &nodes, &buffers)) located = false;
    cs_fb_vec kids;
    bool nested = cs_fb_vector(&fld, 5, 4, &kids) && kids.n > 0;
    if (!nested)
      map_type(c, type, &t);
    else
      snprintf(c->desc, sizeof c->desc, "%s", (size_t)type < N_TYPE_NAMES ? TYPE_NAMES[type] : "?");
    if (nested) c->type = 0;
    if (cs_fb_table_field(&fld, 4, &dict)) {
      cs_fb_table it = {0};
      c->dict = true;
      c->dict_id = cs_fb_int(&dict, 0, 8, true, 0);
      int64_t ibits = 32;
      bool isigned = true;
      if (cs_fb_table_field(&dict, 1, &it)) {
        ibits = cs_fb_int(&it, 0, 4, true, 0);
        isigned = cs_fb_int(&it, 1, 1, false, 0) != 0;
      }
      char vd[48];
      snprintf(vd, sizeof vd, "%.40s", c->desc);
      snprintf(c->desc, sizeof c->desc, "Dictionary(Int(%d, %s), %.40s)", (int)(ibits & 0xffff),
               isigned ? "signed" : "unsigned", vd);
      if (ibits != 8 && ibits != 16 && ibits != 32 && ibits != 64) c->type = 0;
      c->index_width = (uint8_t)(ibits / 8);
      c->index_signed = isigned;
    }
    if (schema->fb->failed) return bad(err, f->path, "a bad schema field");
  }
  f->priv->dicts = cs__mem_calloc(fields.n ? fields.n : 1, sizeof *f->priv->dicts);
  if (!f->priv->dicts) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  for (uint32_t i = 0; i < f->n_cols; i++) {
    if (!f->cols[i].dict) continue;
    uint32_t k = 0;
    while (k < f->priv->n_dicts && f->priv->dicts[k].id != f->cols[i].dict_id) k++;
    if (k == f->priv->n_dicts)
      f->priv->dicts[f->priv->n_dicts++] = (arrow_dict){.id = f->cols[i].dict_id, .col = i};
  }
  return schema->fb->failed ? bad(err, f->path, "a bad schema") : CS_OK;
}

cs_rc cs_arrow_column_supported(const cs_arrow_file *f, uint32_t col, cs_err *err) {
  const cs_arrow_column *c = &f->cols[col];
  if (c->type == 0)
    return cs_err_set(err, CS_EINVAL,
                      "colstore: %s: column %s is Arrow %s, which colstore does not import; leave it out "
                      "with columns= or convert it to a supported type (docs/sql.md, \"Arrow types\")",
                      f->path, c->name, c->desc);
  if (!c->located)
    return cs_err_set(err, CS_EINVAL,
                      "colstore: %s: column %s follows a view-typed column (BinaryView, Utf8View), whose "
                      "buffers colstore does not locate; write the file without view types",
                      f->path, c->name);
  return CS_OK;
}

/* ---------------------------------------------------------- the messages */

/* A message's flatbuffer: its type and, for a batch, its body length. */
static bool parse_message(cs_fb *fb, cs_fb_table *msg, int *kind, cs_fb_table *header, int64_t *body_n) {
  if (!cs_fb_root(fb, msg)) return false;
  *kind = (int)cs_fb_int(msg, 1, 1, false, 0);
  *body_n = cs_fb_int(msg, 3, 8, true, 0);
  return cs_fb_table_field(msg, 2, header) && !fb->failed && *body_n >= 0;
}

/* The message prefix at off: 0xFFFFFFFF then the metadata length (or the
** pre-1.0 bare length); *meta_n 0 at the end of the stream. */
static bool message_prefix(const cs_arrow_file *f, uint64_t off, uint64_t *meta_off, uint32_t *meta_n) {
  if (off > f->n || f->n - off < 4) return false;
  uint32_t v;
  memcpy(&v, f->p + off, 4);
  if (v == 0xFFFFFFFFu) {
    if (f->n - off < 8) return false;
    memcpy(&v, f->p + off + 4, 4);
    off += 8;
  } else {
    off += 4;
  }
  if (v > f->n - off || (int32_t)v < 0) return false;
  *meta_off = off;
  *meta_n = v;
  return true;
}

static cs_rc add_msg(cs_arrow_file *f, arrow_msg m, uint32_t *cap, cs_err *err) {
  struct cs_arrow_file_priv *p = f->priv;
  if (p->n_msgs == *cap) {
    uint32_t nc = *cap ? *cap * 2 : 16;
    arrow_msg *nm = cs__mem_realloc(p->msgs, nc * sizeof *nm);
    if (!nm) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    p->msgs = nm, *cap = nc;
  }
  p->msgs[p->n_msgs++] = m;
  if (m.kind == MH_RECORD_BATCH) f->n_batches++;
  return CS_OK;
}

static cs_rc open_stream(cs_arrow_file *f, uint64_t off, cs_err *err) {
  uint32_t cap = 0;
  bool schema = false;
  for (;;) {
    uint64_t meta_off;
    uint32_t meta_n;
    if (off == f->n && schema) return CS_OK; /* a stream cut after a message: tolerated like pyarrow */
    if (!message_prefix(f, off, &meta_off, &meta_n)) return bad(err, f->path, "a message runs past the end");
    if (meta_n == 0) {
      if (!schema) return bad(err, f->path, "the stream ends before its schema");
      return CS_OK;
    }
    cs_fb fb = {.p = f->p + meta_off, .n = meta_n};
    cs_fb_table msg, hdr;
    int kind;
    int64_t body_n;
    if (!parse_message(&fb, &msg, &kind, &hdr, &body_n)) return bad(err, f->path, "a bad message");
    uint64_t body_off = meta_off + meta_n;
    if ((uint64_t)body_n > f->n - body_off) return bad(err, f->path, "a message body runs past the end");
    if (!schema) {
      if (kind != MH_SCHEMA) return bad(err, f->path, "the first message is not a schema");
      cs_rc rc = read_schema(f, &hdr, err);
      if (rc != CS_OK) return rc;
      schema = true;
    } else if (kind == MH_DICTIONARY || kind == MH_RECORD_BATCH) {
      cs_rc rc =
          add_msg(f, (arrow_msg){(uint8_t)kind, meta_off, meta_n, body_off, (uint64_t)body_n}, &cap, err);
      if (rc != CS_OK) return rc;
    } else if (kind == MH_SCHEMA) {
      return bad(err, f->path, "a second schema in the stream");
    }
    off = body_off + (uint64_t)body_n;
  }
}

/* A footer's vector of Blocks into messages of kind. */
static cs_rc read_blocks(cs_arrow_file *f, const cs_fb_table *footer, int id, uint8_t kind, uint32_t *cap,
                         cs_err *err) {
  cs_fb_vec v;
  if (!cs_fb_vector(footer, id, 24, &v))
    return footer->fb->failed ? bad(err, f->path, "a bad footer") : CS_OK;
  for (uint32_t i = 0; i < v.n; i++) {
    const uint8_t *b = cs_fb_vec_elem(&v, i);
    int64_t off, body_n;
    int32_t meta_len;
    memcpy(&off, b, 8);
    memcpy(&meta_len, b + 8, 4);
    memcpy(&body_n, b + 16, 8);
    uint64_t meta_off;
    uint32_t meta_n;
    if (off < 8 || meta_len < 8 || body_n < 0 || (uint64_t)off > f->n ||
        (uint64_t)meta_len > f->n - (uint64_t)off ||
        (uint64_t)body_n > f->n - (uint64_t)off - (uint64_t)meta_len ||
        !message_prefix(f, (uint64_t)off, &meta_off, &meta_n) ||
        meta_off + meta_n > (uint64_t)off + (uint64_t)meta_len)
      return bad(err, f->path, "a footer block outside the file");
    cs_rc rc =
        add_msg(f, (arrow_msg){kind, meta_off, meta_n, (uint64_t)off + (uint64_t)meta_len, (uint64_t)body_n},
                cap, err);
    if (rc != CS_OK) return rc;
  }
  return CS_OK;
}

static cs_rc open_file_format(cs_arrow_file *f, cs_err *err) {
  if (f->n < 18 || memcmp(f->p + f->n - 6, "ARROW1", 6) != 0)
    return bad(err, f->path, "no ARROW1 magic at the end (a truncated file?)");
  int32_t flen;
  memcpy(&flen, f->p + f->n - 10, 4);
  if (flen <= 0 || (uint64_t)flen > f->n - 18) return bad(err, f->path, "a footer length outside the file");
  cs_fb fb = {.p = f->p + f->n - 10 - flen, .n = (size_t)flen};
  cs_fb_table footer, schema;
  if (!cs_fb_root(&fb, &footer) || !cs_fb_table_field(&footer, 1, &schema))
    return bad(err, f->path, "a bad footer");
  cs_rc rc = read_schema(f, &schema, err);
  uint32_t cap = 0;
  if (rc == CS_OK) rc = read_blocks(f, &footer, 2, MH_DICTIONARY, &cap, err);
  if (rc == CS_OK) rc = read_blocks(f, &footer, 3, MH_RECORD_BATCH, &cap, err);
  return rc;
}

static cs_rc open_bytes(cs_arrow_file *f, cs_err *err) {
  if (!(f->priv = cs__mem_calloc(1, sizeof *f->priv)))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  if (f->n >= 8 && memcmp(f->p, "ARROW1", 6) == 0) {
    f->stream = false;
    return open_file_format(f, err);
  }
  f->stream = true;
  return open_stream(f, 0, err);
}

cs_rc cs_arrow_open_mem(const uint8_t *p, size_t n, const char *path, cs_arrow_file **out, cs_err *err) {
  *out = NULL;
  cs_arrow_file *f = cs__mem_calloc(1, sizeof *f);
  if (!f || !(f->path = cs__mem_strdup(path))) {
    cs__mem_free(f);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  }
  f->p = p, f->n = n;
  cs_rc rc = open_bytes(f, err);
  if (rc != CS_OK) {
    cs_arrow_close(f);
    return rc;
  }
  *out = f;
  return CS_OK;
}

cs_rc cs_arrow_open(const char *path, cs_arrow_file **out, cs_err *err) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cs_err_set(err, CS_EIO, "colstore: cannot open %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return cs_err_set(err, CS_EIO, "colstore: cannot stat %s: %s", path, strerror(errno));
  }
  void *map = NULL;
  if (st.st_size > 0) {
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      close(fd);
      return cs_err_set(err, CS_EIO, "colstore: cannot map %s: %s", path, strerror(errno));
    }
  }
  close(fd);
  cs_rc rc = cs_arrow_open_mem(map ? map : (const void *)"", (size_t)st.st_size, path, out, err);
  if (rc != CS_OK) {
    if (map) munmap(map, (size_t)st.st_size);
    return rc;
  }
  (*out)->map = map;
  (*out)->map_n = (size_t)st.st_size;
  return CS_OK;
}

void cs_arrow_close(cs_arrow_file *f) {
  if (!f) return;
  for (uint32_t i = 0; i < f->n_cols; i++) cs__mem_free(f->cols[i].name);
  cs__mem_free(f->cols);
  if (f->priv) {
    for (uint32_t i = 0; i < f->priv->n_dicts; i++) cs_pq_values_free(&f->priv->dicts[i].values);
    cs__mem_free(f->priv->dicts);
    cs__mem_free(f->priv->msgs);
    cs__mem_free(f->priv);
  }
  if (f->map) munmap(f->map, f->map_n);
  cs__mem_free(f->path);
  cs__mem_free(f);
}

/* ---------------------------------------------------- a batch's columns */

/* A decoding of one column of one batch (a record or a dictionary batch). */
typedef struct col_read {
  const cs_arrow_file *f;
  const cs_fb_table *batch;
  const uint8_t *body;
  uint64_t body_n;
  int codec;
  const char *what; /* "record batch 3" */
  const cs_arrow_column *c;
  cs_fb fb;         /* the batch's metadata, this reader's own copy: */
  cs_fb_table copy; /* threads reading columns at once never share */
  void *tmp[3];     /* decompressed buffers, freed after the column */
  cs_err *err;
} col_read;

static cs_rc col_fail(col_read *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cs_rc col_fail(col_read *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cs_rc rc = cs_ic_column_error(r->err, CS_ECORRUPT, r->f->path, r->what, r->c->name, fmt, ap);
  va_end(ap);
  return rc;
}

cs_rc cs_ic_column_error(cs_err *err, cs_rc code, const char *path, const char *where, const char *col,
                         const char *fmt, va_list ap) {
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  return cs_err_set(err, code, "colstore: %s: %s, column %s: %s", path, where, col, msg);
}

static bool grow(void **p, size_t *cap, uint64_t need) {
  if (need <= *cap) return true;
  if (need > SIZE_MAX / 2) return false;
  size_t nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  void *q = cs__mem_realloc(*p, nc);
  if (!q) return false;
  *p = q, *cap = nc;
  return true;
}

/* Buffer i of the batch, decompressed when the batch is (slot: which of
** tmp holds it). */
static cs_rc get_buffer(col_read *r, uint32_t i, int slot, const uint8_t **out, uint64_t *out_n) {
  cs_fb_vec bufs;
  if (!cs_fb_vector(r->batch, 2, 16, &bufs) || i >= bufs.n) return col_fail(r, "a buffer is missing");
  const uint8_t *e = cs_fb_vec_elem(&bufs, i);
  int64_t off, len;
  memcpy(&off, e, 8);
  memcpy(&len, e + 8, 8);
  if (off < 0 || len < 0 || (uint64_t)off > r->body_n || (uint64_t)len > r->body_n - (uint64_t)off)
    return col_fail(r, "a buffer lies outside the message body");
  const uint8_t *p = r->body + off;
  if (r->codec < 0 || len == 0) {
    *out = p, *out_n = (uint64_t)len;
    return CS_OK;
  }
  if (len < 8) return col_fail(r, "a compressed buffer shorter than its length prefix");
  int64_t raw;
  memcpy(&raw, p, 8);
  p += 8, len -= 8;
  if (raw == -1) {
    *out = p, *out_n = (uint64_t)len;
    return CS_OK;
  }
  uint64_t limit = r->codec == 0 ? (uint64_t)len * 255 + 64 : (uint64_t)len * 32768 + 131072;
  if (raw < 0 || (uint64_t)raw > limit)
    return col_fail(r, "a compressed buffer claims %lld bytes, more than its %lld bytes can hold",
                    (long long)raw, (long long)len);
  uint8_t *dst = cs__mem_malloc(raw ? (size_t)raw : 1);
  if (!dst) return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
  r->tmp[slot] = dst;
  size_t got = 0;
  bool overflow = false; /* the frame holds more than the prefix claims */
  if (r->codec == 1) {
    size_t z = ZSTD_decompress(dst, (size_t)raw, p, (size_t)len);
    if (ZSTD_isError(z) && ZSTD_getErrorCode(z) != ZSTD_error_dstSize_tooSmall)
      return col_fail(r, "zstd: %s", ZSTD_getErrorName(z));
    overflow = ZSTD_isError(z);
    got = overflow ? 0 : z;
  } else {
    LZ4F_dctx *d;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
      return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
    size_t in_done = 0;
    for (;;) {
      size_t dn = (size_t)raw - got, sn = (size_t)len - in_done;
      size_t z = LZ4F_decompress(d, dst + got, &dn, p + in_done, &sn, NULL);
      if (LZ4F_isError(z)) {
        LZ4F_freeDecompressionContext(d);
        return col_fail(r, "lz4: %s", LZ4F_getErrorName(z));
      }
      got += dn, in_done += sn;
      if (z == 0 || (dn == 0 && sn == 0) || in_done == (size_t)len) {
        overflow = z != 0 && got == (size_t)raw;
        break;
      }
    }
    LZ4F_freeDecompressionContext(d);
  }
  /* apache-arrow for JavaScript up to 21.2 writes the compressed length in
  ** the prefix (apache/arrow-js#470); Arrow C++ rejects such files too. */
  if (overflow)
    return col_fail(r,
                    "a compressed buffer holds more than the %lld bytes its length prefix claims (the "
                    "writer put another length there, as apache-arrow for JavaScript up to 21.2 does); "
                    "write the file uncompressed or with a writer that follows the format",
                    (long long)raw);
  if (got != (uint64_t)raw)
    return col_fail(r, "a compressed buffer gave %zu bytes where it claims %lld", got, (long long)raw);
  *out = dst, *out_n = (uint64_t)raw;
  return CS_OK;
}

/* The validity of n rows (buffer i) into out; out->null_count counted from
** the bits (a field node's count is not trusted). */
static cs_rc read_validity(col_read *r, uint32_t i, uint64_t n, int64_t node_nulls, cs_pq_values *out) {
  const uint8_t *p;
  uint64_t len;
  out->null_count = 0;
  cs_rc rc = get_buffer(r, i, 0, &p, &len);
  if (rc != CS_OK) return rc;
  if (len == 0 || node_nulls == 0) return CS_OK;
  uint64_t nb = (n + 7) / 8;
  if (len < nb)
    return col_fail(r, "a validity bitmap of %llu bytes for %llu rows", (unsigned long long)len,
                    (unsigned long long)n);
  if (!grow((void **)&out->validity, &out->validity_cap, nb ? nb : 1))
    return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
  memcpy(out->validity, p, nb);
  if (n % 8) out->validity[nb - 1] &= (uint8_t)((1u << (n % 8)) - 1);
  uint64_t valid = 0;
  for (uint64_t k = 0; k < nb; k++) valid += (uint64_t)__builtin_popcount(out->validity[k]);
  out->null_count = n - valid;
  return CS_OK;
}

static inline bool is_null(const cs_pq_values *v, uint64_t row) {
  return v->null_count && !(v->validity[row >> 3] >> (row & 7) & 1);
}

/* Fixed-width values at the file's width w into the type's width. */
static cs_rc read_fixed(col_read *r, uint32_t buf, uint64_t n, int w, bool indices, cs_pq_values *out) {
  const cs_arrow_column plain = {.width = (uint8_t)w}, *c = indices ? &plain : r->c;
  const uint8_t *p;
  uint64_t len;
  cs_rc rc = get_buffer(r, buf, 1, &p, &len);
  if (rc != CS_OK) return rc;
  /* len / w, not n * w: a length field near 2^62 must not wrap into a pass. */
  if (c->bits ? len < (n + 7) / 8 : len / (uint64_t)w < n)
    return col_fail(r, "a values buffer of %llu bytes for %llu rows", (unsigned long long)len,
                    (unsigned long long)n);
  uint64_t out_w = c->bits ? 1 : c->widen ? 8 : (uint64_t)w;
  if (!grow((void **)&out->data, &out->data_cap, (n * out_w) + 1))
    return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
  out->data_bytes = n * out_w;
  if (c->bits) {
    for (uint64_t k = 0; k < n; k++) out->data[k] = p[k >> 3] >> (k & 7) & 1;
  } else if (c->widen) {
    int64_t *d = (int64_t *)out->data;
    for (uint64_t k = 0; k < n; k++) {
      int32_t v;
      memcpy(&v, p + 4 * k, 4);
      d[k] = v;
    }
  } else {
    memcpy(out->data, p, n * out_w);
  }
  if (out->null_count)
    for (uint64_t k = 0; k < n; k++)
      if (is_null(out, k)) memset(out->data + k * out_w, 0, out_w);
  return CS_OK;
}

static inline int64_t offset_at(const uint8_t *p, int w, uint64_t k) {
  if (w == 4) {
    int32_t v;
    memcpy(&v, p + 4 * k, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, p + 8 * k, 8);
  return v;
}

/* Utf8/Binary (w 4) and their Large forms (w 8): offsets buffer, data. */
static cs_rc read_var(col_read *r, uint32_t buf, uint64_t n, int w, cs_pq_values *out) {
  const uint8_t *op, *dp;
  uint64_t olen, dlen;
  cs_rc rc = get_buffer(r, buf, 1, &op, &olen);
  if (rc == CS_OK) rc = get_buffer(r, buf + 1, 2, &dp, &dlen);
  if (rc != CS_OK) return rc;
  if (n > 0 && olen / (uint64_t)w < n + 1) /* before anything is allocated for n rows */
    return col_fail(r, "an offsets buffer of %llu bytes for %llu rows", (unsigned long long)olen,
                    (unsigned long long)n);
  if (!grow((void **)&out->offsets, &out->offsets_cap, (n + 1) * 8))
    return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
  out->offsets[0] = 0;
  out->data_bytes = 0;
  if (n == 0) return CS_OK;
  int64_t first = offset_at(op, w, 0), last = offset_at(op, w, n);
  if (first < 0 || last < first || (uint64_t)last > dlen)
    return col_fail(r, "offsets outside the data buffer");
  if (!grow((void **)&out->data, &out->data_cap, (uint64_t)(last - first) + 1))
    return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
  int64_t prev = first, at = 0;
  for (uint64_t k = 0; k < n; k++) {
    int64_t next = offset_at(op, w, k + 1);
    if (next < prev || next > last)
      return col_fail(r, "offsets decrease at row %llu", (unsigned long long)k + 1);
    if (!is_null(out, k)) {
      memcpy(out->data + at, dp + prev, (size_t)(next - prev));
      at += next - prev;
    }
    out->offsets[k + 1] = at;
    prev = next;
  }
  out->data_bytes = (uint64_t)at;
  return CS_OK;
}

/* The values of a column's node and buffers (its dictionary's value type
** for a dictionary batch): node/buffer are the field's first. */
static cs_rc read_values(col_read *r, uint32_t node, uint32_t buffer, bool indices, cs_pq_values *out,
                         uint64_t *out_n) {
  cs_fb_vec nodes;
  if (!cs_fb_vector(r->batch, 1, 16, &nodes) || node >= nodes.n)
    return col_fail(r, "a field node is missing");
  const uint8_t *e = cs_fb_vec_elem(&nodes, node);
  int64_t n, nulls;
  memcpy(&n, e, 8);
  memcpy(&nulls, e + 8, 8);
  if (n < 0 || nulls < 0) return col_fail(r, "a negative length");
  *out_n = (uint64_t)n;
  out->n_rows = (uint64_t)n;
  cs_rc rc = read_validity(r, buffer, (uint64_t)n, nulls, out);
  if (rc != CS_OK) return rc;
  if (indices) return read_fixed(r, buffer + 1, (uint64_t)n, r->c->index_width, true, out);
  if (cs_type_is_varlen(r->c->type)) return read_var(r, buffer + 1, (uint64_t)n, r->c->width, out);
  return read_fixed(r, buffer + 1, (uint64_t)n, r->c->width, false, out);
}

static void free_tmp(col_read *r) {
  for (int i = 0; i < 3; i++) cs__mem_free(r->tmp[i]), r->tmp[i] = NULL;
}

static bool values_reserve(cs_pq_values *v, uint64_t n, uint64_t bytes, bool varlen) {
  return grow((void **)&v->validity, &v->validity_cap, (n + 7) / 8 + 1) &&
         grow((void **)&v->data, &v->data_cap, bytes + 1) &&
         (!varlen || grow((void **)&v->offsets, &v->offsets_cap, (n + 1) * 8));
}

static inline void set_valid(cs_pq_values *v, uint64_t row, bool valid) {
  if (valid)
    v->validity[row >> 3] |= (uint8_t)(1u << (row & 7));
  else
    v->validity[row >> 3] &= (uint8_t) ~(1u << (row & 7)), v->null_count++;
}

static int64_t index_at(const cs_arrow_column *c, const cs_pq_values *idx, uint64_t k) {
  switch (c->index_width) {
    case 1: return c->index_signed ? (int64_t)(int8_t)idx->data[k] : (int64_t)idx->data[k];
    case 2: {
      uint16_t u;
      memcpy(&u, idx->data + 2 * k, 2);
      return c->index_signed ? (int64_t)(int16_t)u : (int64_t)u;
    }
    case 4: {
      uint32_t u;
      memcpy(&u, idx->data + 4 * k, 4);
      return c->index_signed ? (int64_t)(int32_t)u : (int64_t)u;
    }
    default: {
      int64_t i;
      memcpy(&i, idx->data + 8 * k, 8);
      return i;
    }
  }
}

/* Row k's index, checked against the dictionary; -1 for a NULL. */
static cs_rc dict_row(col_read *r, const cs_pq_values *idx, const cs_pq_values *dict, uint64_t k,
                      int64_t *out) {
  *out = -1;
  if (is_null(idx, k)) return CS_OK;
  int64_t i = index_at(r->c, idx, k);
  if (i < 0 || (uint64_t)i >= dict->n_rows)
    return col_fail(r, "dictionary index %lld at row %llu, outside a dictionary of %llu values", (long long)i,
                    (unsigned long long)k + 1, (unsigned long long)dict->n_rows);
  if (!is_null(dict, (uint64_t)i)) *out = i;
  return CS_OK;
}

/* Indices (idx: n_rows integers of the index width) gathered from dict. */
static cs_rc gather(col_read *r, const cs_pq_values *idx, const cs_pq_values *dict, cs_pq_values *out) {
  const cs_arrow_column *c = r->c;
  uint64_t n = idx->n_rows, w = c->bits ? 1 : c->widen ? 8 : c->width;
  bool varlen = cs_type_is_varlen(c->type);
  uint64_t bytes = n * w;
  int64_t i;
  cs_rc rc;
  if (varlen) {
    bytes = 0;
    for (uint64_t k = 0; k < n; k++) {
      if ((rc = dict_row(r, idx, dict, k, &i)) != CS_OK) return rc;
      if (i >= 0) bytes += (uint64_t)(dict->offsets[i + 1] - dict->offsets[i]);
    }
  }
  if (!values_reserve(out, n, bytes, varlen)) return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
  memset(out->validity, 0, (n + 7) / 8 + 1);
  out->null_count = 0;
  out->n_rows = n;
  out->data_bytes = bytes;
  if (varlen) out->offsets[0] = 0;
  uint64_t at = 0;
  for (uint64_t k = 0; k < n; k++) {
    if ((rc = dict_row(r, idx, dict, k, &i)) != CS_OK) return rc;
    set_valid(out, k, i >= 0);
    if (varlen) {
      int64_t len = i >= 0 ? dict->offsets[i + 1] - dict->offsets[i] : 0;
      if (len) memcpy(out->data + at, dict->data + dict->offsets[i], (size_t)len);
      at += (uint64_t)len;
      out->offsets[k + 1] = (int64_t)at;
    } else if (i < 0) {
      memset(out->data + k * w, 0, w);
    } else {
      memcpy(out->data + k * w, dict->data + (uint64_t)i * w, w);
    }
  }
  return CS_OK;
}

/* Unsigned 64-bit values must fit INT64, colstore's type for them. */
static cs_rc check_u64(col_read *r, const cs_pq_values *v) {
  for (uint64_t k = 0; k < v->n_rows; k++) {
    uint64_t x;
    memcpy(&x, v->data + 8 * k, 8);
    if (x > (uint64_t)INT64_MAX)
      return cs_err_set(r->err, CS_EINVAL,
                        "colstore: %s: %s, column %s: the unsigned value %llu (row %llu) does not fit INT64; "
                        "colstore stores unsigned 64-bit values as INT64",
                        r->f->path, r->what, r->c->name, (unsigned long long)x, (unsigned long long)k + 1);
  }
  return CS_OK;
}

/* A delta dictionary: src's values after dst's. */
static cs_rc values_append(col_read *r, cs_pq_values *dst, const cs_pq_values *src) {
  const cs_arrow_column *c = r->c;
  bool varlen = cs_type_is_varlen(c->type);
  uint64_t n0 = dst->n_rows, n = n0 + src->n_rows, w = c->bits ? 1 : c->widen ? 8 : c->width;
  if (!values_reserve(dst, n, dst->data_bytes + src->data_bytes + (varlen ? 0 : src->n_rows * w), varlen))
    return cs_err_set(r->err, CS_ENOMEM, "colstore: out of memory");
  if (dst->null_count || src->null_count) {
    if (!dst->null_count) memset(dst->validity, 0xff, (n0 + 7) / 8 + 1);
    for (uint64_t k = 0; k < src->n_rows; k++) set_valid(dst, n0 + k, !is_null(src, k));
  }
  if (src->n_rows == 0) return CS_OK; /* an empty delta (its buffers may be absent) */
  if (varlen) {
    memcpy(dst->data + dst->data_bytes, src->data, src->data_bytes);
    for (uint64_t k = 1; k <= src->n_rows; k++)
      dst->offsets[n0 + k] = (int64_t)dst->data_bytes + src->offsets[k];
    dst->data_bytes += src->data_bytes;
  } else {
    memcpy(dst->data + n0 * w, src->data, src->n_rows * w);
    dst->data_bytes = n * w;
  }
  dst->n_rows = n;
  return CS_OK;
}

static void col_read_init(col_read *r, const cs_arrow_file *f, const cs_arrow_column *c, const char *what,
                          cs_err *err) {
  const struct cs_arrow_file_priv *p = f->priv;
  *r = (col_read){.f = f,
                  .body = p->body,
                  .body_n = p->body_n,
                  .codec = p->codec,
                  .what = what,
                  .c = c,
                  .err = err,
                  .fb = p->fb,
                  .copy = p->batch};
  r->copy.fb = &r->fb; /* a failure marks this copy, not the file's */
  r->batch = &r->copy;
}

static cs_rc read_dictionary(cs_arrow_file *f, const cs_fb_table *hdr, cs_err *err) {
  struct cs_arrow_file_priv *p = f->priv;
  int64_t id = cs_fb_int(hdr, 0, 8, true, 0);
  bool delta = cs_fb_int(hdr, 2, 1, false, 0) != 0;
  arrow_dict *d = NULL;
  for (uint32_t k = 0; k < p->n_dicts; k++)
    if (p->dicts[k].id == id) d = &p->dicts[k];
  if (!d) return bad(err, f->path, "a dictionary batch for no column");
  const cs_arrow_column *c = &f->cols[d->col];
  if (c->type == 0 || !c->located) return CS_OK; /* never imported: an error if it is asked for */
  char what[64];
  snprintf(what, sizeof what, "dictionary %lld", (long long)id);
  col_read r;
  col_read_init(&r, f, c, what, err);
  cs_pq_values v = {0};
  uint64_t n;
  cs_rc rc = read_values(&r, 0, 0, false, &v, &n);
  if (rc == CS_OK && c->u64) rc = check_u64(&r, &v);
  if (rc == CS_OK && delta && d->have) {
    rc = values_append(&r, &d->values, &v);
    cs_pq_values_free(&v);
  } else if (rc == CS_OK) {
    cs_pq_values_free(&d->values);
    d->values = v;
    d->have = true;
  } else {
    cs_pq_values_free(&v);
  }
  free_tmp(&r);
  return rc;
}

cs_rc cs_arrow_next_batch(cs_arrow_file *f, bool *out_have, uint64_t *out_rows, cs_err *err) {
  struct cs_arrow_file_priv *p = f->priv;
  *out_have = false;
  *out_rows = 0;
  while (p->next_msg < p->n_msgs) {
    const arrow_msg *m = &p->msgs[p->next_msg++];
    p->fb = (cs_fb){.p = f->p + m->meta_off, .n = m->meta_n};
    cs_fb_table msg, hdr, batch, comp;
    int kind;
    int64_t body_n;
    if (!parse_message(&p->fb, &msg, &kind, &hdr, &body_n) || kind != m->kind)
      return bad(err, f->path, "a bad record or dictionary batch message");
    if (kind == MH_DICTIONARY) {
      if (!cs_fb_table_field(&hdr, 1, &batch)) return bad(err, f->path, "a dictionary batch without data");
    } else {
      batch = hdr;
    }
    p->batch = batch;
    p->body = f->p + m->body_off;
    p->body_n = m->body_n;
    p->codec = -1;
    if (cs_fb_table_field(&batch, 3, &comp)) {
      p->codec = (int)cs_fb_int(&comp, 0, 1, true, 0);
      if (p->codec != 0 && p->codec != 1)
        return cs_err_set(err, CS_EINVAL,
                          "colstore: %s: body compression codec %d is neither LZ4_FRAME nor ZSTD", f->path,
                          p->codec);
      if (cs_fb_int(&comp, 1, 1, true, 0) != 0)
        return cs_err_set(err, CS_EINVAL, "colstore: %s: a body compression method other than BUFFER",
                          f->path);
    }
    if (p->fb.failed) return bad(err, f->path, "a bad record batch message");
    if (kind == MH_DICTIONARY) {
      cs_rc rc = read_dictionary(f, &hdr, err);
      if (rc != CS_OK) return rc;
      continue;
    }
    int64_t rows = cs_fb_int(&batch, 0, 8, true, 0);
    if (rows < 0 || p->fb.failed) return bad(err, f->path, "a record batch of a negative length");
    p->batch_no++;
    *out_have = true;
    *out_rows = (uint64_t)rows;
    return CS_OK;
  }
  return CS_OK;
}

cs_rc cs_arrow_read_column(const cs_arrow_file *f, uint32_t col, cs_pq_values *out, cs_err *err) {
  const struct cs_arrow_file_priv *p = f->priv;
  const cs_arrow_column *c = &f->cols[col];
  char what[48];
  snprintf(what, sizeof what, "record batch %llu", (unsigned long long)p->batch_no);
  if (c->type == 0 || !c->located) return cs_arrow_column_supported(f, col, err);
  col_read r;
  col_read_init(&r, f, c, what, err);
  uint64_t n;
  cs_rc rc;
  if (c->dict) {
    const arrow_dict *d = NULL;
    for (uint32_t k = 0; k < p->n_dicts; k++)
      if (p->dicts[k].id == c->dict_id) d = &p->dicts[k];
    cs_pq_values idx = {0};
    rc = read_values(&r, c->node, c->buffer, true, &idx, &n);
    if (rc == CS_OK && (!d || !d->have)) rc = col_fail(&r, "no dictionary batch before the record batch");
    if (rc == CS_OK) rc = gather(&r, &idx, &d->values, out);
    cs_pq_values_free(&idx);
  } else {
    rc = read_values(&r, c->node, c->buffer, false, out, &n);
    if (rc == CS_OK && c->u64) rc = check_u64(&r, out);
  }
  free_tmp(&r);
  if (rc != CS_OK) return rc;
  if (out->n_rows != (uint64_t)cs_fb_int(&p->batch, 0, 8, true, 0))
    return col_fail(&r, "%llu rows where the record batch has %lld", (unsigned long long)out->n_rows,
                    (long long)cs_fb_int(&p->batch, 0, 8, true, 0));
  return CS_OK;
}
