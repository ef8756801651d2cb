/*
** cs_interchange_internal.h - the interchange formats: what the files of
** interchange/ offer the importer and exporter above them and their unit
** tests (tests/unit/check_parquet.c, check_parquet_write.c) and fuzz
** target (tests/fuzz/fuzz_parquet.c).
**
** interchange/ reads files other programs wrote (Parquet today) and hands
** back whole columns in colstore's own layout: values at the column type's
** width, an LSB-first validity bitmap, int64 offsets for TEXT/BLOB, exactly
** a cs_chunk.  It knows no store and no writer: core/import drives it and
** writes what it returns, so a Parquet import writes the same stores a CSV
** import does.  It sits on base/ alone (errors) and the codec libraries.
**
**   cs_thrift.c   the Thrift compact protocol, the encoding of Parquet's
**                 footer and page headers: a bounds-checked cursor;
**   cs_parquet.c  the footer: FileMetaData, the flat schema and how each
**                 column maps to a colstore type, row groups, chunks;
**   cs_parquet_page.c  a column chunk's pages: codecs, levels, encodings,
**                 conversion to the column type;
**   cs_parquet_write.c  the other way: colstore columns out as a Parquet
**                 file, behind the format-writer interface at the end
**                 (colstore_export, core/export).
**
** Everything read from a file is distrusted: a length is checked against
** the bytes present before anything is allocated for it, so a crafted file
** is a "colstore:" error, never a crash or a huge allocation.
*/
#ifndef CS_INTERCHANGE_INTERNAL_H
#define CS_INTERCHANGE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "colstore.h"

/* ---------------------------------------------------------- cs_thrift.c */

/* Compact-protocol wire types (the low nibble of a field header). */
enum {
  CS_THRIFT_STOP = 0,
  CS_THRIFT_TRUE = 1, /* a bool field's value is its type */
  CS_THRIFT_FALSE = 2,
  CS_THRIFT_I8 = 3,
  CS_THRIFT_I16 = 4,
  CS_THRIFT_I32 = 5,
  CS_THRIFT_I64 = 6,
  CS_THRIFT_DOUBLE = 7,
  CS_THRIFT_BINARY = 8,
  CS_THRIFT_LIST = 9,
  CS_THRIFT_SET = 10,
  CS_THRIFT_MAP = 11,
  CS_THRIFT_STRUCT = 12
};

/* A read cursor over bytes [p, end).  Every reader returns false on bytes
** that run out or do not parse and then leaves the cursor failed (every
** later read fails too), so a parser may check once at the end of a struct.
** what names the structure being read, for the message. */
typedef struct cs_thrift {
  const uint8_t *p, *end;
  int depth; /* structs and containers open, bounded by CS_THRIFT_MAX_DEPTH */
  bool failed;
} cs_thrift;

#define CS_THRIFT_MAX_DEPTH 32

static inline void cs_thrift_init(cs_thrift *t, const uint8_t *p, size_t n) {
  *t = (cs_thrift){.p = p, .end = p + n};
}
bool cs_thrift_varint(cs_thrift *t, uint64_t *out);
/* The next field of a struct: *out_type CS_THRIFT_STOP at its end.  *last
** is the previous field id (0 at the struct's start), updated here. */
bool cs_thrift_field(cs_thrift *t, int16_t *last, int16_t *out_id, uint8_t *out_type);
/* The loop over a struct's fields, after cs_thrift_begin: true with the
** next field, false at the struct's end (which it closes) or on a failure
** (t->failed tells which):
**     while (cs_thrift_next(t, &last, &id, &type)) { ...read or skip... }
**     return !t->failed; */
bool cs_thrift_next(cs_thrift *t, int16_t *last, int16_t *out_id, uint8_t *out_type);
/* Integer values of a field of wire type type (I8, I16, I32, I64 accepted
** for any, range-checked to the result). */
bool cs_thrift_i64(cs_thrift *t, uint8_t type, int64_t *out);
bool cs_thrift_i32(cs_thrift *t, uint8_t type, int32_t *out);
/* A bool field: its value is its wire type; in a list, a byte. */
bool cs_thrift_bool(cs_thrift *t, uint8_t type, bool *out);
/* A binary/string: a pointer into the bytes, never a copy. */
bool cs_thrift_binary(cs_thrift *t, uint8_t type, const uint8_t **out, uint32_t *out_n);
/* A list or set header: the element type and a count no larger than the
** bytes left (every element takes one byte at least). */
bool cs_thrift_list(cs_thrift *t, uint8_t type, uint8_t *out_elem, uint32_t *out_n);
/* Steps over a value of wire type type (structs, containers, nested). */
bool cs_thrift_skip(cs_thrift *t, uint8_t type);
/* Struct nesting, for the depth bound: begin fails past CS_THRIFT_MAX_DEPTH. */
bool cs_thrift_begin(cs_thrift *t, uint8_t type);
static inline void cs_thrift_end(cs_thrift *t) { t->depth--; }
/* Marks the cursor failed and returns false (a field of a wrong type). */
static inline bool cs_thrift_fail(cs_thrift *t) { return !(t->failed = true); }

/* Writing, for tests and the Parquet writer: appends to a growable buffer. */
typedef struct cs_thrift_out {
  uint8_t *buf;
  size_t n, cap;
  int16_t last[CS_THRIFT_MAX_DEPTH]; /* each open struct's last field id */
  int depth;
  bool failed; /* out of memory */
} cs_thrift_out;

void cs_thrift_put_field(cs_thrift_out *o, int16_t id, uint8_t type);
void cs_thrift_put_varint(cs_thrift_out *o, uint64_t v);
void cs_thrift_put_i64(cs_thrift_out *o, int16_t id, uint8_t type, int64_t v); /* I8/I16/I32/I64 field */
void cs_thrift_put_binary(cs_thrift_out *o, int16_t id, const void *p, uint32_t n);
void cs_thrift_put_list(cs_thrift_out *o, int16_t id, uint8_t elem, uint32_t n);
void cs_thrift_put_struct_begin(cs_thrift_out *o, int16_t id); /* id 0: a list element */
void cs_thrift_put_struct_end(cs_thrift_out *o);               /* writes the STOP */
/* Bytes already encoded elsewhere: list elements (structs) that another
** cs_thrift_out wrote, whole, as the Parquet writer's row groups. */
void cs_thrift_put_raw(cs_thrift_out *o, const void *p, size_t n);
void cs_thrift_out_free(cs_thrift_out *o);

/* --------------------------------------------------------- cs_parquet.c */

/* Parquet's enumerations, as parquet.thrift numbers them. */
enum { PQ_BOOLEAN = 0, PQ_INT32, PQ_INT64, PQ_INT96, PQ_FLOAT, PQ_DOUBLE, PQ_BYTE_ARRAY, PQ_FLBA };
enum {
  PQ_UNCOMPRESSED = 0,
  PQ_SNAPPY = 1,
  PQ_GZIP = 2,
  PQ_LZO = 3,
  PQ_BROTLI = 4,
  PQ_LZ4 = 5,
  PQ_ZSTD = 6,
  PQ_LZ4_RAW = 7
};
enum {
  PQ_PLAIN = 0,
  PQ_PLAIN_DICTIONARY = 2,
  PQ_RLE = 3,
  PQ_BIT_PACKED = 4,
  PQ_DELTA_BINARY_PACKED = 5,
  PQ_DELTA_LENGTH_BYTE_ARRAY = 6,
  PQ_DELTA_BYTE_ARRAY = 7,
  PQ_RLE_DICTIONARY = 8,
  PQ_BYTE_STREAM_SPLIT = 9
};

/* How a physical value becomes the column's value. */
typedef enum cs_pq_conv {
  PQ_CONV_NONE = 0, /* same representation (INT32->INT32, DOUBLE->FLOAT64, ...) */
  PQ_CONV_NARROW,   /* INT32 into a narrower integer, range-checked */
  PQ_CONV_U32,      /* INT32 bits as unsigned 32 into UINT32 */
  PQ_CONV_WIDEN,    /* INT32 into INT64 (TIME in milliseconds) */
  PQ_CONV_U64       /* INT64 bits as unsigned 64 into INT64, range-checked */
} cs_pq_conv;

/* A leaf column of a flat schema. */
typedef struct cs_pq_column {
  char *name;
  int32_t phys;        /* PQ_BOOLEAN ... */
  int32_t type_length; /* FIXED_LEN_BYTE_ARRAY */
  bool optional;
  cs_type type;     /* the colstore type; 0 when unsupported */
  cs_pq_conv conv;  /* physical to colstore */
  char logical[48]; /* the Parquet type as a message names it: "INT32 (INT(8, signed))" */
  char unit[8];     /* TIME/TIMESTAMP: "ms", "us", "ns"; else "" */
} cs_pq_column;

/* One column chunk of a row group: where its pages are in the file. */
typedef struct cs_pq_chunk_meta {
  int32_t codec;
  int64_t num_values;
  int64_t start;   /* first page: the dictionary page's offset, else the first data page's */
  int64_t n_bytes; /* total_compressed_size */
} cs_pq_chunk_meta;

typedef struct cs_pq_row_group {
  int64_t num_rows;
  cs_pq_chunk_meta *chunks; /* one per leaf column */
} cs_pq_row_group;

typedef struct cs_pq_file {
  char *path; /* for messages */
  int fd;     /* -1 for a footer parsed from memory */
  uint64_t file_bytes;
  int64_t num_rows;
  uint32_t n_cols;
  cs_pq_column *cols;
  uint32_t n_row_groups;
  cs_pq_row_group *row_groups;
} cs_pq_file;

/* Opens a Parquet file and reads its footer (the last 8 bytes, then the
** metadata they point at: nothing else).  Errors name the file.  A nested
** schema is CS_EINVAL naming the column; an unsupported type is not an
** error here (cols[i].type 0): only reading that column is. */
cs_rc cs_pq_open(const char *path, cs_pq_file **out, cs_err *err);
/* Parses FileMetaData from n bytes (the fuzz target's entry). */
cs_rc cs_pq_parse_metadata(const uint8_t *p, size_t n, const char *path, cs_pq_file **out, cs_err *err);
void cs_pq_close(cs_pq_file *f);
/* The reason column col cannot be imported, as a message naming it and its
** type; CS_OK when it can. */
cs_rc cs_pq_column_supported(const cs_pq_file *f, uint32_t col, cs_err *err);

/* A PageHeader (cs_parquet_write.c): a version-1 data page (PQ_PAGE_DATA,
** levels RLE) or a dictionary page (PQ_PAGE_DICTIONARY) of num_values
** values of encoding, its body's sizes uncompressed and compressed. */
enum { PQ_PAGE_DATA = 0, PQ_PAGE_DICTIONARY = 2 };
void cs_pq_put_page_header(cs_thrift_out *o, int32_t type, size_t uncompressed, size_t compressed,
                           int32_t num_values, int32_t encoding);

/* ---------------------------------------------------- cs_parquet_page.c */

/* One column of one row group, decoded: a cs_chunk's layout.  Reused from
** row group to row group, with the decoder's buffers (scratch), so a
** column's import allocates once, not once per chunk. */
typedef struct cs_pq_scratch cs_pq_scratch;
typedef struct cs_pq_values {
  uint64_t n_rows;
  uint8_t *validity; /* LSB-first, 1 = valid; NULL when null_count == 0 */
  uint64_t null_count;
  uint8_t *data; /* n_rows values at the type's width, or TEXT/BLOB bytes */
  uint64_t data_bytes, data_cap;
  int64_t *offsets; /* TEXT/BLOB: n_rows + 1 */
  size_t validity_cap, offsets_cap;
  cs_pq_scratch *scratch; /* cs_parquet_page.c's buffers; freed by cs_pq_values_free */
} cs_pq_values;

/* Reads column chunk col of row group rg from the file (a pread of its
** bytes alone) and decodes it into out, whose buffers are reused across
** calls.  Errors name the file, row group and column. */
cs_rc cs_pq_read_column(const cs_pq_file *f, uint32_t rg, uint32_t col, cs_pq_values *out, cs_err *err);
/* The same over chunk bytes already in memory (tests, fuzzing). */
cs_rc cs_pq_decode_chunk(const cs_pq_file *f, uint32_t rg, uint32_t col, const uint8_t *bytes, size_t n,
                         cs_pq_values *out, cs_err *err);
void cs_pq_values_free(cs_pq_values *v);

/* The RLE/bit-packed hybrid of levels and dictionary indices: n values of
** bit_width bits from [p, end) into out; false when the runs end early,
** exceed n, or a width is over 32. */
bool cs_pq_rle_decode(const uint8_t *p, const uint8_t *end, int bit_width, uint32_t *out, uint32_t n);

/* ---------------------------------------------------------- cs_flatbuf.c */

/* A flatbuffer being read: every reader checks the bytes it follows and
** on a failure sets failed (and returns false, 0 or the default), so a
** parser may read a whole message and check failed once. */
typedef struct cs_fb {
  const uint8_t *p;
  size_t n;
  bool failed;
} cs_fb;

#define CS_FB_MAX_DEPTH 32

typedef struct cs_fb_table {
  cs_fb *fb; /* NULL: an absent table (every field reads as its default) */
  uint32_t pos, vt;
  uint16_t vt_n, tbl_n;
  int depth;
} cs_fb_table;

typedef struct cs_fb_vec {
  cs_fb *fb;
  uint32_t pos, n, elem_size;
  int depth;
} cs_fb_vec;

/* The root table; false (and failed) when the buffer does not hold one. */
bool cs_fb_root(cs_fb *fb, cs_fb_table *out);
bool cs_fb_has(const cs_fb_table *t, int id);
/* A scalar field of width 1, 2, 4 or 8 bytes; dflt when absent. */
int64_t cs_fb_int(const cs_fb_table *t, int id, int width, bool is_signed, int64_t dflt);
/* Offset fields: false when absent (failed stays false) or bad (failed).
** A union's value is a table field, its type the scalar field before it. */
bool cs_fb_table_field(const cs_fb_table *t, int id, cs_fb_table *out);
bool cs_fb_string(const cs_fb_table *t, int id, const char **out, uint32_t *out_n);
/* A vector of elem_size-byte elements (4 for a vector of tables), its
** count checked against the bytes present. */
bool cs_fb_vector(const cs_fb_table *t, int id, uint32_t elem_size, cs_fb_vec *out);
bool cs_fb_vec_table(const cs_fb_vec *v, uint32_t i, cs_fb_table *out);
const uint8_t *cs_fb_vec_elem(const cs_fb_vec *v, uint32_t i); /* a struct or scalar, unaligned */

/* Building, back to front: objects before the objects that refer to them;
** each returns a reference (0 after an allocation failure: b->failed). */
#define CS_FBB_MAX_FIELDS 16
typedef struct cs_fbb {
  uint8_t *buf;
  size_t cap, n, max_align; /* the bytes are buf[cap - n, cap) */
  uint32_t fields[CS_FBB_MAX_FIELDS];
  int n_fields;
  size_t table_start;
  bool failed;
} cs_fbb;

uint32_t cs_fbb_string(cs_fbb *b, const char *s, size_t n);
uint32_t cs_fbb_vector(cs_fbb *b, const void *elems, uint32_t count, uint32_t elem_size, uint32_t align);
uint32_t cs_fbb_vector_refs(cs_fbb *b, const uint32_t *refs, uint32_t count);
/* One table at a time: its fields' objects are built before begin. */
void cs_fbb_table_begin(cs_fbb *b);
void cs_fbb_add_int(cs_fbb *b, int id, int64_t v, int width);
void cs_fbb_add_ref(cs_fbb *b, int id, uint32_t ref);
void cs_fbb_add_struct(cs_fbb *b, int id, const void *p, size_t size, size_t align);
uint32_t cs_fbb_table_end(cs_fbb *b);
/* The finished buffer (root offset first), valid until the next reset;
** its size is a multiple of 8. */
bool cs_fbb_finish(cs_fbb *b, uint32_t root, const uint8_t **out, size_t *out_n);
void cs_fbb_reset(cs_fbb *b);
void cs_fbb_free(cs_fbb *b);

/* ------------------------------------------------------------ cs_arrow.c */

/* Arrow's Type union (Schema.fbs), the members colstore reads or writes. */
enum {
  ARROW_NULL = 1,
  ARROW_INT = 2,
  ARROW_FLOAT = 3,
  ARROW_BINARY = 4,
  ARROW_UTF8 = 5,
  ARROW_BOOL = 6,
  ARROW_DATE = 8,
  ARROW_TIME = 9,
  ARROW_TIMESTAMP = 10,
  ARROW_LARGE_BINARY = 19,
  ARROW_LARGE_UTF8 = 20
};

/* A top-level field of an Arrow schema. */
typedef struct cs_arrow_column {
  char *name;
  bool nullable;
  cs_type type;  /* the colstore type; 0 when unsupported */
  uint8_t width; /* bytes of a value in the file (offsets: 4 or 8) */
  bool bits;     /* Bool: bit-packed */
  bool widen;    /* Time32: int32 into INT64 */
  bool u64;      /* Int(64, unsigned): range-checked into INT64 */
  bool dict;     /* dictionary-encoded: indices of index_width bytes */
  uint8_t index_width;
  bool index_signed;
  int64_t dict_id;
  bool located;          /* its buffers can be found (no view type before it) */
  uint32_t node, buffer; /* its first field node and buffer in a record batch */
  char desc[96];         /* the Arrow type as a message names it: "Int(64, unsigned)" */
  char unit[4];          /* Time/Timestamp: "s", "ms", "us", "ns" */
} cs_arrow_column;

typedef struct cs_arrow_file {
  char *path;
  const uint8_t *p; /* the file's bytes (mapped, or the caller's) */
  size_t n;
  void *map;
  size_t map_n;
  bool stream; /* the stream format, else the file format */
  uint32_t n_cols;
  cs_arrow_column *cols;
  uint64_t n_batches; /* record batches */
  struct cs_arrow_file_priv *priv;
} cs_arrow_file;

/* The error of a column's data, for both readers: "colstore: <path>:
** <where>, column <col>: <message>" (where: "row group 3"). */
cs_rc cs_ic_column_error(cs_err *err, cs_rc code, const char *path, const char *where, const char *col,
                         const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));

/* Opens an Arrow IPC file or stream (ARROW1 at the start decides) and
** reads its schema and where its batches lie.  An unsupported column is
** not an error here, only reading it is. */
cs_rc cs_arrow_open(const char *path, cs_arrow_file **out, cs_err *err);
/* The same over bytes in memory, which must outlive the file (fuzzing). */
cs_rc cs_arrow_open_mem(const uint8_t *p, size_t n, const char *path, cs_arrow_file **out, cs_err *err);
void cs_arrow_close(cs_arrow_file *f);
cs_rc cs_arrow_column_supported(const cs_arrow_file *f, uint32_t col, cs_err *err);
/* Steps to the next record batch (decoding the dictionary batches before
** it): *out_have false at the end. */
cs_rc cs_arrow_next_batch(cs_arrow_file *f, bool *out_have, uint64_t *out_rows, cs_err *err);
/* Column col of the current record batch in colstore's layout.  Reads
** only the file and out: threads may read different columns at once. */
cs_rc cs_arrow_read_column(const cs_arrow_file *f, uint32_t col, cs_pq_values *out, cs_err *err);

/* ---------------------------------------------- writing other formats */

/* colstore_export (core/export) writes a file through one of these
** writers, one per format.  The exporter owns the file: it writes a
** temporary beside the path and renames it into place on success, so a
** writer only produces bytes, through a sink, and never opens, syncs or
** removes a file.
**
** The rows come as slices: n_rows rows of every column of the schema,
** each column in a store chunk's layout (cs_chunk: an LSB-first validity
** bitmap, NULL when the slice has no NULL in that column, with null_count;
** for TEXT/BLOB n_rows + 1 int64 offsets into data, offsets[0] not
** necessarily 0; else n_rows values at the type's width, 0 where NULL;
** min, max and flags are not read).  Deleted rows are already left out.
** A slice is whatever the exporter had at hand (a store's record, a
** SELECT's batch): a writer that groups rows otherwise (Parquet row groups
** of row_group_rows) buffers or splits slices itself, and may keep no
** pointer into a slice after write returns. */
typedef struct cs_sink {
  cs_rc (*write)(void *ctx, const void *p, size_t n, cs_err *err);
  void *ctx;
} cs_sink;

typedef enum cs_out_codec {
  CS_OUT_NONE = 0,
  CS_OUT_SNAPPY, /* Parquet */
  CS_OUT_ZSTD,   /* Parquet, Arrow IPC */
  CS_OUT_GZIP,   /* Parquet */
  CS_OUT_LZ4     /* Parquet: LZ4_RAW; Arrow IPC: LZ4_FRAME */
} cs_out_codec;

typedef struct cs_out_options {
  cs_out_codec codec;
  uint64_t row_group_rows; /* Parquet: rows per row group; 0: the writer's default */
  uint32_t threads;        /* 0, 1: one; N: a writer may encode columns on N threads */
} cs_out_options;

typedef struct cs_format_writer cs_format_writer; /* each format's own state */

typedef struct cs_format_writer_ops {
  const char *name; /* "parquet", "arrow", "arrows", "csv": for messages */
  /* Starts a file of schema's columns (the schema is copied as needed). */
  cs_rc (*open)(const cs_schema *schema, const cs_out_options *opt, cs_sink sink, cs_format_writer **out,
                cs_err *err);
  cs_rc (*write)(cs_format_writer *w, uint64_t n_rows, const cs_chunk *cols, cs_err *err);
  /* Writes what is buffered and the footer; *out_groups: the row groups
  ** (Parquet) or record batches (Arrow) written, 0 for CSV. */
  cs_rc (*finish)(cs_format_writer *w, uint64_t *out_groups, cs_err *err);
  void (*free)(cs_format_writer *w); /* after finish, or instead of it on a failure */
} cs_format_writer_ops;

extern const cs_format_writer_ops cs_parquet_writer_ops;      /* cs_parquet_write.c */
extern const cs_format_writer_ops cs_arrow_file_writer_ops;   /* cs_arrow_write.c: IPC file */
extern const cs_format_writer_ops cs_arrow_stream_writer_ops; /* cs_arrow_write.c: IPC stream */

#endif
