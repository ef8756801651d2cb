/*
** fuzz_import.c - the CSV importer (tokenizer, typing, the driver) on any
** bytes, checked against itself read three ways and against a plain typing
** rule.
**
** WHAT IT COVERS.  The input's first bytes choose the options (delimiter
** given or detected, quote character, header yes/no/auto, on_error,
** NULL spellings, threads and a chunk size of 16 to 271 bytes so that even
** a small input is split into parallel chunks at arbitrary bytes, and a
** typing sample of 1 to 766 bytes so that a later misfit restarts the
** speculative pass); the rest is the file.  The file goes to a
** directory under /dev/shm when there is one (a commit fsyncs).
**
** THE ORACLES.
**  1. The tokenizer two ways: cs_csv_feed alone (the state machine) and
**     cs_csv_next (the fast path where it applies), fed the file in two
**     pieces split at a chosen byte, must give the same records (fields,
**     quoted flags, lines) and the same error; and a fast-path mask must be
**     the OR of its field's byte classes.
**  2. The driver two ways: threads=1, and threads=2 or 3 with the tiny
**     chunks, must agree: the same return code and message, rows, rejects
**     (line and reason), types, and the same cells in the stores, row by
**     row (a parallel import writes other record boundaries, so the files'
**     bytes may differ; their contents may not).  A failed import leaves
**     no file.
**  3. Types: when the import inferred them and succeeded, each column's
**     type must be what the documented rule gives over every record the
**     import kept (read again by cs_csv_feed): INT64 when every non-NULL
**     value is an integer literal that fits, FLOAT64 when all are numbers,
**     else TEXT.  This is what holds the speculative one-pass typing (the
**     first megabyte's types, tried and restarted on a misfit) to the
**     two-pass rule.
*/
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colstore.h"
#include "cs_import.h"
#include "cs_import_internal.h"
#include "fuzz.h"

#define FI_MAX_FILE 8192

static char g_dir[256];

static void dir_make(void) {
  if (g_dir[0]) return;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/colstore-fuzz-import-%d", base, (int)getpid());
  FZ_CHECK(mkdir(g_dir, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", g_dir, strerror(errno));
}

/* ------------------------------------------------ oracle 1: the tokenizer */

typedef struct fi_records {
  uint64_t hash; /* of every record's fields, flags and line */
  size_t n;
  int rc; /* 0, or -1 with msg */
  char msg[CS_ERR_MSG_BYTES];
} fi_records;

static uint8_t byte_class(uint8_t b) {
  return b >= '0' && b <= '9'   ? CS_CLS_DIGIT
         : b == '+' || b == '-' ? CS_CLS_SIGN
         : b == '.'             ? CS_CLS_DOT
         : b == 'e' || b == 'E' ? CS_CLS_EXP
         : b >= 0x80            ? CS_CLS_OTHER | CS_CLS_HIGH
                                : CS_CLS_OTHER;
}

static void hash_record(fi_records *out, const cs_record *rec) {
  out->hash = fz_fnv(out->hash, &rec->n_fields, sizeof rec->n_fields);
  out->hash = fz_fnv(out->hash, &rec->line, sizeof rec->line);
  for (uint32_t f = 0; f < rec->n_fields; f++) {
    size_t n;
    const uint8_t *p = cs_record_field(rec, f, &n);
    bool quoted = cs_record_quoted(rec, f);
    out->hash = fz_fnv(out->hash, &n, sizeof n);
    if (n) out->hash = fz_fnv(out->hash, p, n);
    out->hash = fz_fnv(out->hash, &quoted, 1);
    if (!(rec->masks[f] & CS_FIELD_UNSCANNED)) {
      uint8_t m = 0;
      bool ascii = true;
      for (size_t i = 0; i < n; i++) m |= byte_class(p[i]), ascii &= p[i] < 0x80;
      FZ_CHECK(m == rec->masks[f], "record at line %llu field %u: mask %#x, its bytes give %#x",
               (unsigned long long)rec->line, f, rec->masks[f], m);
      FZ_CHECK(!rec->ascii || ascii, "record at line %llu: marked ASCII, field %u is not",
               (unsigned long long)rec->line, f);
    }
  }
  out->n++;
}

static void tokenize(const uint8_t *s, size_t n, size_t split, bool fast, uint8_t delim, uint8_t quote,
                     fi_records *out) {
  memset(out, 0, sizeof *out);
  out->hash = FZ_FNV_SEED;
  cs_csv c;
  cs_csv_init(&c, delim, quote);
  cs_record rec = {0};
  cs_err err = {0};
  size_t starts[2] = {0, split}, ends[2] = {split, n};
  for (int k = 0; k < 2 && out->rc == 0; k++) {
    size_t pos = 0;
    int got;
    const uint8_t *piece = s + starts[k];
    size_t len = ends[k] - starts[k];
    while ((got = fast ? cs_csv_next(&c, piece, len, &pos, &rec, &err)
                       : cs_csv_feed(&c, piece, len, &pos, &rec, &err)) == 1) {
      hash_record(out, &rec);
      cs_record_reset(&rec);
    }
    if (got < 0) out->rc = -1;
  }
  if (out->rc == 0) {
    int got = cs_csv_finish(&c, &rec, &err);
    if (got == 1) hash_record(out, &rec);
    if (got < 0) out->rc = -1;
  }
  if (out->rc) snprintf(out->msg, sizeof out->msg, "%s", err.msg);
  cs_record_free(&rec);
}

/* ---------------------------------------------- oracle 2: the driver */

typedef struct fi_import {
  cs_rc rc;
  char msg[CS_ERR_MSG_BYTES];
  cs_import_result res;
  uint64_t cells; /* the store's cells, row by row */
} fi_import;

static uint64_t store_cells(const char *path, uint64_t rows) {
  cs_store *s = NULL;
  cs_err err;
  cs_rc rc = cs_store_open(path, CS_VERIFY_FULL, &s, &err);
  FZ_CHECK(rc == CS_OK, "the imported store does not open: %s", err.msg);
  const cs_schema *sc = cs_store_schema(s);
  FZ_CHECK(cs_store_rows(s) == rows, "the store has %llu rows, the result says %llu",
           (unsigned long long)cs_store_rows(s), (unsigned long long)rows);
  uint64_t h = FZ_FNV_SEED;
  for (uint64_t r = 0; r < cs_store_records(s); r++) {
    uint64_t n = cs_store_record_rows(s, r);
    for (uint64_t k = 0; k < n; k++)
      for (uint32_t c = 0; c < sc->n_cols; c++) {
        const cs_chunk *ch = cs_store_chunk(s, r, c);
        bool valid = cs_chunk_is_valid(ch, k);
        h = fz_fnv(h, &valid, 1);
        if (!valid) continue;
        size_t w = cs_type_width(sc->cols[c].type);
        if (w) {
          h = fz_fnv(h, (const uint8_t *)ch->data + k * w, w);
        } else {
          const uint8_t *p;
          uint64_t len;
          FZ_CHECK(cs_chunk_varlen(ch, k, &p, &len, &err) == CS_OK, "a varlen cell does not read: %s",
                   err.msg);
          h = fz_fnv(h, &len, sizeof len);
          if (len) h = fz_fnv(h, p, len);
        }
      }
  }
  cs_store_close(s);
  return h;
}

static void import(const char *src, const char *dst, const cs_import_options *opt, fi_import *out) {
  unlink(dst);
  cs_err err;
  out->rc = cs_import_text(dst, src, opt, &out->res, &err);
  snprintf(out->msg, sizeof out->msg, "%s", out->rc ? err.msg : "");
  if (out->rc == CS_OK) {
    out->cells = store_cells(dst, out->res.rows);
  } else {
    FZ_CHECK(access(dst, F_OK) != 0, "a failed import (%s) left %s", out->msg, dst);
  }
  unlink(dst);
}

static void same_imports(const fi_import *a, const fi_import *b) {
  FZ_CHECK(a->rc == b->rc && strcmp(a->msg, b->msg) == 0, "serial: %s '%s'; parallel: %s '%s'",
           cs_rc_name(a->rc), a->msg, cs_rc_name(b->rc), b->msg);
  if (a->rc != CS_OK) return;
  FZ_CHECK(a->res.rows == b->res.rows && a->res.rejected == b->res.rejected &&
               a->res.n_rejects == b->res.n_rejects,
           "rows %llu/%llu, rejected %llu/%llu", (unsigned long long)a->res.rows,
           (unsigned long long)b->res.rows, (unsigned long long)a->res.rejected,
           (unsigned long long)b->res.rejected);
  for (size_t i = 0; i < a->res.n_rejects; i++)
    FZ_CHECK(a->res.rejects[i].line == b->res.rejects[i].line &&
                 strcmp(a->res.rejects[i].reason, b->res.rejects[i].reason) == 0,
             "reject %zu: line %llu '%s' / line %llu '%s'", i, (unsigned long long)a->res.rejects[i].line,
             a->res.rejects[i].reason, (unsigned long long)b->res.rejects[i].line, b->res.rejects[i].reason);
  FZ_CHECK(a->res.n_cols == b->res.n_cols, "column counts differ");
  for (uint32_t c = 0; c < a->res.n_cols; c++)
    FZ_CHECK(a->res.cols[c].type == b->res.cols[c].type, "column %u: %s serially, %s in parallel", c,
             cs_type_name(a->res.cols[c].type), cs_type_name(b->res.cols[c].type));
  FZ_CHECK(a->cells == b->cells, "the stores' cells differ");
}

/* ------------------------------------------------- oracle 3: the types */

/* The documented rule over the records the import kept: those with the
** header's field count and valid UTF-8, the header itself left out. */
static void check_types(const uint8_t *s, size_t n, const cs_import_result *res,
                        const cs_import_options *opt) {
  size_t bom = n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF ? 3 : 0;
  cs_csv c;
  cs_csv_init(&c, (uint8_t)res->delim, opt->quote ? (uint8_t)opt->quote : '"');
  cs_record rec = {0};
  cs_err err;
  uint32_t nc = res->n_cols;
  bool *may_int = calloc(nc + 1, 1), *may_float = calloc(nc + 1, 1);
  uint64_t *values = calloc(nc + 1, sizeof *values);
  FZ_CHECK(may_int && may_float && values, "out of memory");
  for (uint32_t i = 0; i < nc; i++) may_int[i] = may_float[i] = true;
  size_t pos = bom;
  bool first = true;
  for (;;) {
    int got = cs_csv_feed(&c, s, n, &pos, &rec, &err);
    if (got == 0) got = cs_csv_finish(&c, &rec, &err);
    FZ_CHECK(got >= 0, "the import succeeded where the tokenizer fails: %s", err.msg);
    if (got == 0) break;
    bool keep = !(first && res->header) && rec.n_fields == nc;
    for (uint32_t f = 0; keep && f < nc; f++) {
      size_t fn;
      const uint8_t *p = cs_record_field(&rec, f, &fn);
      keep = cs_utf8_valid(p, fn);
    }
    first = false;
    for (uint32_t f = 0; keep && f < nc; f++) {
      size_t fn;
      const uint8_t *p = cs_record_field(&rec, f, &fn);
      bool null = false;
      if (!cs_record_quoted(&rec, f)) {
        if (!opt->has_nulls) null = fn == 0;
        for (size_t k = 0; opt->has_nulls && k < opt->n_nulls; k++)
          null |= strlen(opt->nulls[k]) == fn && memcmp(opt->nulls[k], p, fn) == 0;
      }
      if (null) continue;
      values[f]++;
      int64_t iv;
      double fv;
      cs_num_kind k = cs_parse_number(p, fn, &iv, &fv);
      if (k != CS_NUM_INT) may_int[f] = false;
      if (k == CS_NUM_NONE) may_float[f] = false;
    }
    cs_record_reset(&rec);
  }
  cs_record_free(&rec);
  for (uint32_t f = 0; f < nc; f++) {
    cs_type want = values[f] == 0 ? CS_TYPE_TEXT
                   : may_int[f]   ? CS_TYPE_INT64
                   : may_float[f] ? CS_TYPE_FLOAT64
                                  : CS_TYPE_TEXT;
    FZ_CHECK(res->cols[f].type == want, "column %u typed %s; its values say %s", f,
             cs_type_name(res->cols[f].type), cs_type_name(want));
  }
  free(may_int);
  free(may_float);
  free(values);
}

/* ------------------------------------------------------------ the entry */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dir_make();
  fz_in in = fz_in_make(data, size);
  static const char delims[] = {0, ',', '\t', ';', '|'};
  uint8_t o1 = fz_u8(&in), o2 = fz_u8(&in), o3 = fz_u8(&in);
  cs_import_options opt = {0};
  opt.delim = delims[o1 % 5];
  opt.quote = (o1 >> 3) & 1 ? '\'' : 0;
  opt.header = (cs_import_header)((o1 >> 4) % 3);
  opt.skip_errors = (o1 >> 6) & 1;
  static const char *const null_words[] = {"NA", "", "null"};
  if ((o1 >> 7) & 1) opt.has_nulls = true, opt.nulls = null_words, opt.n_nulls = 1 + o2 % 3;
  opt.max_rejects = 1 + (o2 >> 2) % 4;
  uint32_t chunk = 16 + o3;
  opt.sample_bytes = 1 + (uint32_t)o2 * 3; /* small: the misfits past it restart the typing */
  size_t n;
  const uint8_t *file = fz_bytes(&in, FI_MAX_FILE, &n);

  /* 1: the tokenizer, fast path or not, split at a chosen byte. */
  uint8_t delim = opt.delim ? (uint8_t)opt.delim : ',', quote = opt.quote ? (uint8_t)opt.quote : '"';
  size_t split = n ? (size_t)o2 * 37 % (n + 1) : 0;
  fi_records slow, fast;
  tokenize(file, n, split, false, delim, quote, &slow);
  tokenize(file, n, split, true, delim, quote, &fast);
  FZ_CHECK(slow.rc == fast.rc && strcmp(slow.msg, fast.msg) == 0,
           "tokenizer: '%s' without the fast path, '%s' with", slow.msg, fast.msg);
  FZ_CHECK(slow.n == fast.n && slow.hash == fast.hash,
           "tokenizer: %zu records without the fast path, %zu with (or "
           "other fields)",
           slow.n, fast.n);

  /* 2: the driver, one thread and several with tiny chunks. */
  char src[300], dst[300];
  snprintf(src, sizeof src, "%s/in.csv", g_dir);
  snprintf(dst, sizeof dst, "%s/out.cst", g_dir);
  FILE *f = fopen(src, "wb");
  FZ_CHECK(f != NULL, "fopen %s", src);
  FZ_CHECK(fwrite(file, 1, n, f) == n, "write %s", src);
  fclose(f);
  fi_import one = {0}, many = {0};
  opt.threads = 1;
  import(src, dst, &opt, &one);
  opt.threads = 2 + (o3 & 1);
  opt.chunk_bytes = chunk;
  import(src, dst, &opt, &many);
  same_imports(&one, &many);

  /* 3: the inferred types against the rule. */
  if (one.rc == CS_OK) check_types(file, n, &one.res, &opt);
  cs_import_result_free(&one.res);
  cs_import_result_free(&many.res);
  unlink(src);
  return 0;
}
