/*
** cs_csv.c - delimited text as records of fields (RFC 4180), fed in blocks.
**
** The tokenizer is a small state machine that can stop at any byte and go
** on with the next block: the input streams through a fixed buffer, and a
** record that spans two blocks (a long quoted field, a quoted newline at
** the block's edge, a CR in one block and its LF in the next) is simply
** collected across the calls.  That is what keeps memory at a few records
** whatever the file's size, and what the unit test checks by splitting its
** inputs at every byte.
**
** The rules are RFC 4180's, read the way Python's csv module reads them
** (the reference the SQL tests compare against):
**  - a field starting with the quote character is quoted: delimiters and
**    line ends inside it are data, a doubled quote is one quote;
**  - a record ends at LF, CRLF or a lone CR outside quotes; inside quotes
**    they are data, kept as they are;
**  - a line with no bytes at all is skipped (it holds no record);
**  - a quote inside an unquoted field, or text after a closing quote, is
**    kept literally (lenient, as Python is without strict=True);
**  - a quote still open at the end of the input is an error naming the
**    line it opened on.
** Lines are counted by LF, and by a CR that ends a record without an LF
** after it, so a message's line is the one an editor shows.
**
** Unquoted runs are copied with one scan for the next byte a 256-entry
** table marks as special (delimiter, CR, LF), not one state transition per
** byte.
**
** The fast path (cs_csv_next).  Most records of most files hold no quote:
** such a record needs neither the state machine nor a copy.  At a record
** boundary, a record that ends at an LF (or CRLF) inside the buffer and
** meets no quote and no lone CR on the way is split where it lies: one
** table lookup per byte finds each field's end and ORs the byte's class
** (digit, sign, point, exponent, other, non-ASCII) into the field's mask.
** The importer types most fields from that mask alone (only digits: an
** integer; any other byte: text) and skips the UTF-8 check of an all-ASCII
** record.  A record the fast path cannot take goes, from its first byte, to
** the state machine, which gives the same fields; the fast path never
** reads past the buffer's last LF, so it needs no sentinel.  After a miss
** it stands aside for a few records (more after each miss in a row, at most
** 64), so a file quoted on every line pays a partial scan on few of them.
** Measured on the 10M-row bench file: docs/performance.md, "CSV import:
** the fast path".
*/
#include <stdlib.h>
#include <string.h>

#include "cs_base_internal.h"
#include "cs_import_internal.h"

void cs_csv_init(cs_csv *c, uint8_t delim, uint8_t quote) {
  memset(c, 0, sizeof *c);
  c->delim = delim;
  c->quote = quote;
  c->state = CS_CSV_FIELD_START;
  c->line = 1;
  c->special[delim] = c->special['\n'] = c->special['\r'] = 1;
  for (int b = 0; b < 256; b++)
    c->cls[b] = b >= '0' && b <= '9'   ? CS_CLS_DIGIT
                : b == '+' || b == '-' ? CS_CLS_SIGN
                : b == '.'             ? CS_CLS_DOT
                : b == 'e' || b == 'E' ? CS_CLS_EXP
                : b >= 0x80            ? CS_CLS_OTHER | CS_CLS_HIGH
                                       : CS_CLS_OTHER;
  c->cls[delim] = c->cls['\n'] = c->cls['\r'] = c->cls[quote] = CS_CSV_STOP;
}

void cs_record_reset(cs_record *rec) {
  rec->n_bytes = 0;
  rec->n_fields = 0;
}

void cs_record_free(cs_record *rec) {
  cs__mem_free(rec->bytes);
  cs__mem_free(rec->ends);
  cs__mem_free(rec->masks);
  memset(rec, 0, sizeof *rec);
}

/* Growth, out of the hot path: push_bytes and end_field below only check
** the capacity and store. */
static bool grow_bytes(cs_record *rec, size_t n, cs_err *err) {
  if (rec->n_bytes + n > UINT32_MAX) {
    cs_err_set(err, CS_ERANGE, "colstore: line %llu: a record longer than 4 GiB",
               (unsigned long long)rec->line);
    return false;
  }
  size_t cap = rec->cap_bytes ? rec->cap_bytes * 2 : 4096;
  while (cap < rec->n_bytes + n) cap *= 2;
  uint8_t *b = cs__mem_realloc(rec->bytes, cap);
  if (!b) {
    cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    return false;
  }
  rec->bytes = b;
  rec->cap_bytes = cap;
  return true;
}

static bool grow_fields(cs_record *rec, cs_err *err) {
  uint32_t cap = rec->cap_fields ? rec->cap_fields * 2 : 64;
  uint32_t *e = cs__mem_realloc(rec->ends, cap * sizeof *e);
  if (e) rec->ends = e;
  uint8_t *q = cs__mem_realloc(rec->masks, cap);
  if (q) rec->masks = q;
  if (!e || !q) {
    cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    return false;
  }
  rec->cap_fields = cap;
  return true;
}

static inline bool push_bytes(cs_record *rec, const uint8_t *p, size_t n, cs_err *err) {
  if (n == 0) return true;
  if (rec->n_bytes + n > rec->cap_bytes && !grow_bytes(rec, n, err)) return false;
  memcpy(rec->bytes + rec->n_bytes, p, n);
  rec->n_bytes += n;
  return true;
}

/* A field ends: its end, its mask, and the separator byte after it. */
static inline bool end_field(cs_record *rec, bool quoted, uint8_t sep, cs_err *err) {
  if (rec->n_fields == rec->cap_fields && !grow_fields(rec, err)) return false;
  rec->ends[rec->n_fields] = (uint32_t)rec->n_bytes;
  rec->masks[rec->n_fields] = quoted ? CS_FIELD_UNSCANNED | CS_FIELD_QUOTED : CS_FIELD_UNSCANNED;
  rec->n_fields++;
  return push_bytes(rec, &sep, 1, err);
}

/* The record is whole: its bytes are the copy, less the last separator. */
static inline int record_done(cs_record *rec) {
  rec->data = rec->bytes;
  rec->n_bytes = rec->ends[rec->n_fields - 1];
  rec->ascii = false;
  return 1;
}

int cs_csv_feed(cs_csv *c, const uint8_t *buf, size_t n, size_t *pos, cs_record *rec, cs_err *err) {
  size_t i = *pos;
  const uint8_t delim = c->delim, quote = c->quote;
  while (i < n) {
    switch (c->state) {
      case CS_CSV_AFTER_CR:
        if (buf[i] == '\n') i++;
        c->state = CS_CSV_FIELD_START;
        break;
      case CS_CSV_FIELD_START: {
        uint8_t b = buf[i];
        if (b == '\n' || b == '\r') {
          i++;
          c->line++;
          c->state = b == '\r' ? CS_CSV_AFTER_CR : CS_CSV_FIELD_START;
          if (!c->in_record) break; /* a blank line */
          if (!end_field(rec, false, delim, err)) return -1;
          c->in_record = false;
          *pos = i;
          return record_done(rec);
        }
        if (!c->in_record) {
          c->in_record = true;
          rec->line = c->line;
        }
        c->quoted_field = false;
        if (b == quote) {
          c->state = CS_CSV_QUOTED;
          c->quoted_field = true;
          c->quote_line = c->line;
          i++;
        } else if (b == delim) {
          if (!end_field(rec, false, delim, err)) return -1;
          i++;
        } else {
          c->state = CS_CSV_UNQUOTED;
        }
        break;
      }
      case CS_CSV_UNQUOTED: {
        /* A run of unquoted fields stays in this loop: the next field
        ** starts here too unless it opens with a quote or is empty. */
        for (;;) {
          size_t j = i;
          while (j < n && !c->special[buf[j]]) j++;
          if (!push_bytes(rec, buf + i, j - i, err)) return -1;
          i = j;
          if (i == n) break;
          uint8_t b = buf[i++];
          if (!end_field(rec, c->quoted_field, delim, err)) return -1;
          if (b == delim) {
            if (i < n && buf[i] != quote && !c->special[buf[i]]) {
              c->quoted_field = false;
              continue;
            }
            c->state = CS_CSV_FIELD_START;
            break;
          }
          c->line++;
          c->state = b == '\r' ? CS_CSV_AFTER_CR : CS_CSV_FIELD_START;
          c->in_record = false;
          *pos = i;
          return record_done(rec);
        }
        break;
      }
      case CS_CSV_QUOTED: {
        const uint8_t *q = memchr(buf + i, quote, n - i);
        size_t j = q ? (size_t)(q - buf) : n;
        for (const uint8_t *p = buf + i; (p = memchr(p, '\n', (size_t)(buf + j - p))) != NULL; p++) c->line++;
        if (!push_bytes(rec, buf + i, j - i, err)) return -1;
        i = j;
        if (q) {
          i++;
          c->state = CS_CSV_QUOTE_IN_QUOTED;
        }
        break;
      }
      case CS_CSV_QUOTE_IN_QUOTED:
        if (buf[i] == quote) { /* a doubled quote: one quote of data */
          if (!push_bytes(rec, &quote, 1, err)) return -1;
          i++;
          c->state = CS_CSV_QUOTED;
        } else {
          c->state = CS_CSV_UNQUOTED; /* the field closed; what follows is read as Python reads it */
        }
        break;
    }
  }
  *pos = i;
  return 0;
}

int cs_csv_finish(cs_csv *c, cs_record *rec, cs_err *err) {
  if (c->state == CS_CSV_QUOTED) {
    cs_err_set(err, CS_EINVAL,
               "colstore: line %llu: a quoted field is not closed before the end of the input",
               (unsigned long long)c->quote_line);
    return -1;
  }
  if (!c->in_record) return 0;
  if (!end_field(rec, c->quoted_field, c->delim, err)) return -1;
  c->in_record = false;
  c->state = CS_CSV_FIELD_START;
  return record_done(rec);
}

/* One record at buf[*pos], which is at a record boundary and before
** buf[limit - 1], an LF: 1 with the record in rec, 2 for a blank line
** skipped, 0 when the tokenizer must read it (a quote, a lone CR, no
** memory for the fields). */
static int fast_record(cs_csv *c, const uint8_t *buf, size_t *pos, cs_record *rec) {
  const uint8_t *start = buf + *pos, *p = start;
  const uint8_t *cls = c->cls;
  const uint8_t delim = c->delim;
  if (*p == '\n') {
    c->line++;
    ++*pos;
    return 2;
  }
  if (*p == '\r') return 0; /* a blank line, or a record, ended by CR: the tokenizer's */
  uint32_t nf = 0;
  uint8_t all = 0;
  for (;;) {
    uint8_t m = 0, k;
    while (!((k = cls[*p]) & CS_CSV_STOP)) {
      m |= k;
      p++;
    }
    if (nf == rec->cap_fields && !grow_fields(rec, NULL)) return 0;
    rec->ends[nf] = (uint32_t)(p - start);
    rec->masks[nf++] = m;
    all |= m;
    uint8_t b = *p++;
    if (b == delim) continue;
    if (b == '\n') break;
    /* p[0] is readable: a CR is never the buffer's last LF. */
    if (b == '\r' && *p == '\n') {
      p++;
      break;
    }
    return 0; /* a quote, a lone CR */
  }
  if ((size_t)(p - start) > UINT32_MAX) return 0;
  rec->data = start;
  rec->n_bytes = rec->ends[nf - 1];
  rec->n_fields = nf;
  rec->ascii = !(all & CS_CLS_HIGH);
  rec->line = c->line++;
  *pos = (size_t)(p - buf);
  return 1;
}

int cs_csv_next(cs_csv *c, const uint8_t *buf, size_t n, size_t *pos, cs_record *rec, cs_err *err) {
  if (c->state == CS_CSV_FIELD_START && !c->in_record) {
    if (c->fast_skip) {
      c->fast_skip--;
    } else {
      if (c->fast_buf != buf || c->fast_n != n) {
        const uint8_t *nl = n ? memrchr(buf, '\n', n) : NULL;
        c->fast_buf = buf;
        c->fast_n = n;
        c->fast_limit = nl ? (size_t)(nl - buf) + 1 : 0;
      }
      while (*pos < c->fast_limit) {
        int got = fast_record(c, buf, pos, rec);
        if (got == 1) {
          c->fast_misses = 0;
          return 1;
        }
        if (got == 0) {
          c->fast_skip = c->fast_misses < 6 ? 1u << c->fast_misses : 64;
          c->fast_misses++;
          break;
        }
      }
    }
  }
  return cs_csv_feed(c, buf, n, pos, rec, err);
}

/* Whether a field of rec that was not quoted holds the quote byte (the
** lenient reading of a quote that did not open a field). */
static bool stray_quote(const cs_record *rec, uint8_t quote) {
  for (uint32_t i = 0; i < rec->n_fields; i++) {
    if (rec->masks[i] & CS_FIELD_QUOTED) continue;
    size_t len;
    const uint8_t *p = cs_record_field(rec, i, &len);
    if (len && memchr(p, quote, len)) return true;
  }
  return false;
}

uint8_t cs_csv_detect_delim(const uint8_t *buf, size_t n, uint8_t quote) {
  static const uint8_t candidates[] = {',', '\t', ';', '|'};
  enum { SAMPLE_RECORDS = 20 };
  uint8_t best = 0;
  uint32_t best_fields = 1;
  bool best_clean = false;
  for (size_t k = 0; k < sizeof candidates; k++) {
    cs_csv c;
    cs_csv_init(&c, candidates[k], quote);
    cs_record rec = {0};
    cs_err err = {0};
    size_t pos = 0;
    uint32_t fields = 0, records = 0;
    bool consistent = true, clean = true;
    while (records < SAMPLE_RECORDS) {
      int got = cs_csv_feed(&c, buf, n, &pos, &rec, &err);
      if (got <= 0) break;
      if (records == 0)
        fields = rec.n_fields;
      else if (rec.n_fields != fields)
        consistent = false;
      clean &= !stray_quote(&rec, quote);
      records++;
      cs_record_reset(&rec);
    }
    /* A sample without a whole line: the bytes seen are all there is. */
    if (records == 0 && cs_csv_finish(&c, &rec, &err) == 1)
      fields = rec.n_fields, records = 1, clean = !stray_quote(&rec, quote);
    cs_record_free(&rec);
    /* A split that leaves a quote inside an unquoted field is a worse
    ** reading than one that does not, whatever its field count:
    ** |"a<TAB>b" is two fields by '|' (the second quoted), and by TAB two
    ** fields with stray quotes. */
    if (records > 0 && consistent && fields > 1 &&
        ((clean && !best_clean) || (clean == best_clean && fields > best_fields)))
      best = candidates[k], best_fields = fields, best_clean = clean;
  }
  if (best) return best;
  /* No candidate splits every line alike: the one most frequent outside
  ** quotes on the first line. */
  size_t counts[sizeof candidates] = {0};
  bool in_quotes = false;
  for (size_t i = 0; i < n && (in_quotes || (buf[i] != '\n' && buf[i] != '\r')); i++) {
    if (buf[i] == quote)
      in_quotes = !in_quotes;
    else if (!in_quotes)
      for (size_t k = 0; k < sizeof candidates; k++) counts[k] += buf[i] == candidates[k];
  }
  size_t top = 0;
  for (size_t k = 1; k < sizeof candidates; k++)
    if (counts[k] > counts[top]) top = k;
  return candidates[top];
}
