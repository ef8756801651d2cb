/*
** cs_import_internal.h - the importer's parts, shared by its files and its
** unit test (tests/unit/check_import.c).
**
** The importer is three layers, each testable alone:
**   cs_read.c   a file as a stream of bytes, decompressed (.gz, .zst) or not;
**   cs_csv.c    the bytes as records of fields (RFC 4180), with the line
**               each record starts on, so every error can name it;
**   cs_infer.c  what a field is: NULL, an integer, a number, text; and
**               whether text is valid UTF-8.
** cs_import.c drives them over the files, twice when types are inferred.
*/
#ifndef CS_IMPORT_INTERNAL_H
#define CS_IMPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cs_import.h"
#include "cs_interchange_internal.h"

/* ---------------------------------------------------------- cs_import.c */

/* Sets err to the message unless err already holds an error: the first
** failure of an import is the one reported (a later one is often its
** consequence).  Returns err's code. */
cs_rc cs__import_fail(cs_err *err, cs_rc code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The files source names (a file, a directory's files, a glob), in name
** order, into res->files; *out_bytes_total their sizes. */
cs_rc cs__import_list_files(const char *source, cs_import_result *res, uint64_t *out_bytes_total,
                            cs_err *err);

/* ------------------------------------------------- cs_import_columnar.c */

/* A column of a columnar file, as the driver sees it. */
typedef struct cs_columnar_col {
  const char *name;
  cs_type type; /* 0: unsupported (supported() says why) */
  bool nullable;
  const char *desc; /* the format's type, for messages */
} cs_columnar_col;

/* A columnar format (Parquet, Arrow IPC) for the shared import driver: a
** file is read as groups (row groups, record batches) of whole columns.
** read_column may run on several threads at once for different columns. */
typedef struct cs_columnar_ops {
  const char *name;      /* "Parquet", "Arrow" */
  const char *group;     /* "row group", "record batch" */
  const char *text_type; /* the format's name for a text column: "STRING", "Utf8" */
  cs_import_format format;
  cs_rc (*open)(const char *path, void **out, cs_err *err);
  void (*close)(void *f);
  uint32_t (*n_cols)(void *f);
  void (*column)(void *f, uint32_t i, cs_columnar_col *out);
  cs_rc (*supported)(void *f, uint32_t i, cs_err *err);
  /* Steps to the next group: *have false at the end; *bytes its size in
  ** the file, for progress. */
  cs_rc (*next_group)(void *f, bool *have, uint64_t *rows, uint64_t *bytes, cs_err *err);
  cs_rc (*read_column)(void *f, uint32_t i, cs_pq_values *out, cs_err *err);
} cs_columnar_ops;

/* Imports source's files of that format into a store at path: writer
** lifecycle, columns=, append matching, progress, errors. */
cs_rc cs__import_columnar(const cs_columnar_ops *ops, const char *path, const char *source,
                          const cs_import_options *opt, cs_import_result *res, cs_err *err);

/* ------------------------------------------------------------ cs_read.c */

typedef struct cs_reader cs_reader;
/* Opens path; the suffix .gz or .zst selects the decompressor. */
cs_rc cs_reader_open(const char *path, cs_reader **out, cs_err *err);
/* Up to cap decompressed bytes into buf; 0 at the end; -1 with err set. */
long cs_reader_read(cs_reader *r, uint8_t *buf, size_t cap, cs_err *err);
/* Bytes of the file as stored consumed so far (for progress). */
uint64_t cs_reader_raw_offset(const cs_reader *r);
void cs_reader_close(cs_reader *r);

/* ------------------------------------------------------------- cs_csv.c */

/* A field's mask (cs_record.masks): the OR of the classes of its bytes,
** which the fast path (cs_csv_next) computes while it finds the field's
** end, so that typing a field is a table lookup for most fields instead of
** a parse; and two flags of the field itself. */
enum {
  CS_CLS_DIGIT = 1,         /* 0-9 */
  CS_CLS_SIGN = 2,          /* + - */
  CS_CLS_DOT = 4,           /* . */
  CS_CLS_EXP = 8,           /* e E */
  CS_CLS_OTHER = 16,        /* any other byte: the field is not a number */
  CS_CLS_HIGH = 32,         /* a byte >= 0x80 (with OTHER): not ASCII */
  CS_FIELD_QUOTED = 64,     /* the field was quoted */
  CS_FIELD_UNSCANNED = 128, /* the tokenizer read it: classes unknown */
  CS_CSV_STOP = 128         /* in cs_csv.cls only: a byte that ends a field's scan */
};

/* A record: its fields' bytes in data, one after another with one
** separator byte between two fields (quotes removed, doubled quotes
** undone), where each ends, and each one's mask.  data is bytes (the
** tokenizer's copy) or, for a record the fast path read, the input itself:
** valid until the input buffer changes. */
typedef struct cs_record {
  const uint8_t *data;
  uint8_t *bytes; /* owned: what the tokenizer collects */
  size_t n_bytes, cap_bytes;
  uint32_t *ends; /* ends[i]: offset past field i; field i + 1 starts one byte later */
  uint8_t *masks; /* CS_CLS_* | CS_FIELD_* per field */
  uint32_t n_fields, cap_fields;
  bool ascii;    /* every byte is below 0x80 (so valid UTF-8); false: unknown */
  uint64_t line; /* the physical line the record starts on, from 1 */
} cs_record;

static inline const uint8_t *cs_record_field(const cs_record *r, uint32_t i, size_t *n) {
  uint32_t start = i ? r->ends[i - 1] + 1 : 0;
  *n = r->ends[i] - start;
  return r->data + start;
}

static inline bool cs_record_quoted(const cs_record *r, uint32_t i) {
  return (r->masks[i] & CS_FIELD_QUOTED) != 0;
}

/* Tokenizer state between blocks: it can stop at any byte and go on with
** the next block, which is what lets the input stream in fixed blocks. */
typedef enum cs_csv_state {
  CS_CSV_FIELD_START = 0, /* before a field's first byte */
  CS_CSV_UNQUOTED,        /* inside an unquoted field */
  CS_CSV_QUOTED,          /* inside quotes */
  CS_CSV_QUOTE_IN_QUOTED, /* a quote inside quotes: closing or doubled */
  CS_CSV_AFTER_CR         /* a record ended at CR; skip one LF */
} cs_csv_state;

typedef struct cs_csv {
  uint8_t delim, quote;
  cs_csv_state state;
  bool in_record;            /* some byte of the current record was seen */
  bool quoted_field;         /* the field being read started with a quote */
  uint8_t special[256];      /* bytes that end an unquoted run */
  uint8_t cls[256];          /* the fast path's byte classes (CS_CLS_*, CS_CSV_STOP) */
  uint64_t line;             /* the current physical line, from 1 */
  uint64_t quote_line;       /* where the open quote started (for the error) */
  const uint8_t *fast_buf;   /* cs_csv_next: the buffer fast_limit is for */
  size_t fast_n, fast_limit; /* its length; past its last LF */
  uint32_t fast_skip;        /* records left to give the tokenizer after a miss */
  uint32_t fast_misses;      /* misses in a row */
} cs_csv;

void cs_csv_init(cs_csv *c, uint8_t delim, uint8_t quote);
/* Feeds buf[*pos, n): stops after a complete record (returns 1, *pos past
** it) or at the end of buf (returns 0: more bytes needed).  rec collects
** the record across calls; cs_record_reset it after each record. */
int cs_csv_feed(cs_csv *c, const uint8_t *buf, size_t n, size_t *pos, cs_record *rec, cs_err *err);
/* At the end of the input: returns 1 when a last record without a line
** end is complete in rec, 0 when nothing was pending, -1 for a quote left
** open (err names its line). */
int cs_csv_finish(cs_csv *c, cs_record *rec, cs_err *err);
/* cs_csv_feed with a fast path: a record that starts at a line's start and
** holds no quote and no lone CR is split where it lies in buf (no copy),
** its fields' masks computed on the way; anything else goes to
** cs_csv_feed.  The same records, lines and errors as cs_csv_feed; buf's
** bytes must stay as they are while rec is used, and cs_csv_refill must be
** called when the same buffer is filled again. */
int cs_csv_next(cs_csv *c, const uint8_t *buf, size_t n, size_t *pos, cs_record *rec, cs_err *err);
static inline void cs_csv_refill(cs_csv *c) { c->fast_buf = NULL; }
void cs_record_reset(cs_record *rec);
void cs_record_free(cs_record *rec);
/* The delimiter among , TAB ; | that splits the first lines of buf into the
** same number (more than one) of fields, the most fields winning; else the
** one seen most outside quotes in the first line; else ','. */
uint8_t cs_csv_detect_delim(const uint8_t *buf, size_t n, uint8_t quote);

/* ----------------------------------------------------------- cs_infer.c */

typedef enum cs_num_kind { CS_NUM_NONE = 0, CS_NUM_INT, CS_NUM_FLOAT, CS_NUM_NOMEM } cs_num_kind;
/* Classifies a field by the documented number grammar (docs/sql.md,
** "Getting data in"): an integer literal that fits INT64 is CS_NUM_INT,
** any other number CS_NUM_FLOAT (correctly rounded; -0.0 becomes 0.0 as
** INSERT stores it), anything else CS_NUM_NONE; CS_NUM_NOMEM when a number
** longer than 255 bytes could not be copied for strtod. */
cs_num_kind cs_parse_number(const uint8_t *s, size_t n, int64_t *i, double *f);
/* A FLOAT64 field of at most 15 digits with at most one point (and a sign):
** its value, correctly rounded (one exact division), and true; false for
** anything else, which cs_parse_number reads. */
bool cs_parse_short_decimal(const uint8_t *s, size_t n, double *f);
/* cs_parse_number's kind alone, without the value (cheaper). */
cs_num_kind cs_number_kind(const uint8_t *s, size_t n);
bool cs_utf8_valid(const uint8_t *s, size_t n);

#endif
