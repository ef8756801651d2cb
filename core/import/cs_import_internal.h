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

/* ---------------------------------------------------------- cs_import.c */

/* The files source names (a file, a directory's files, a glob), in name
** order, into res->files; *out_bytes_total their sizes. */
cs_rc cs__import_list_files(const char *source, cs_import_result *res, uint64_t *out_bytes_total,
                            cs_err *err);

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

/* A record: the fields' bytes one after another (quotes removed, doubled
** quotes undone), where each ends, and whether it was quoted. */
typedef struct cs_record {
  uint8_t *bytes;
  size_t n_bytes, cap_bytes;
  uint32_t *ends; /* ends[i]: offset past field i */
  uint8_t *quoted;
  uint32_t n_fields, cap_fields;
  uint64_t line; /* the physical line the record starts on, from 1 */
} cs_record;

static inline const uint8_t *cs_record_field(const cs_record *r, uint32_t i, size_t *n) {
  uint32_t start = i ? r->ends[i - 1] : 0;
  *n = r->ends[i] - start;
  return r->bytes + start;
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
  bool in_record;       /* some byte of the current record was seen */
  bool quoted_field;    /* the field being read started with a quote */
  uint8_t special[256]; /* bytes that end an unquoted run */
  uint64_t line;        /* the current physical line, from 1 */
  uint64_t quote_line;  /* where the open quote started (for the error) */
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
void cs_record_reset(cs_record *rec);
void cs_record_free(cs_record *rec);
/* The delimiter among , TAB ; | that splits the first lines of buf into the
** same number (more than one) of fields, the most fields winning; else the
** one seen most outside quotes in the first line; else ','. */
uint8_t cs_csv_detect_delim(const uint8_t *buf, size_t n, uint8_t quote);

/* ----------------------------------------------------------- cs_infer.c */

typedef enum cs_num_kind { CS_NUM_NONE = 0, CS_NUM_INT, CS_NUM_FLOAT } cs_num_kind;
/* Classifies a field by the documented number grammar (docs/sql.md,
** "Getting data in"): an integer literal that fits INT64 is CS_NUM_INT,
** any other number CS_NUM_FLOAT (correctly rounded; -0.0 becomes 0.0 as
** INSERT stores it), anything else CS_NUM_NONE. */
cs_num_kind cs_parse_number(const uint8_t *s, size_t n, int64_t *i, double *f);
/* cs_parse_number's kind alone, without the value (cheaper). */
cs_num_kind cs_number_kind(const uint8_t *s, size_t n);
bool cs_utf8_valid(const uint8_t *s, size_t n);

#endif
