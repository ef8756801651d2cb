/*
** cs_import.c - delimited text files into one store, atomically.
**
** The import reads its input once when it knows the column types
** (columns= gives them, or mode=append takes the store's).  When it infers
** them, the rule users rely on is that the whole input decides a column's
** type, so a value on the last line never fails an import that a sample
** typed too narrowly; the typing costs no memory: pass one keeps three
** flags and a count per column, not the rows.  Two passes are what that
** rule costs at most: the import first tries one pass with the types of
** the first megabyte, checking every value against them, and falls back
** to the two passes on the first that misfits ("The sample" below).  The
** writing pass converts each field and streams the rows into a writer in
** batches of one record's rows.  Memory is a read block, one record's
** fields and one batch, whatever the input's size.
**
** Atomicity is the writer's (cs_writer.c): a new store is written beside
** its path and renamed into place only at commit; an append writes past the
** committed footer and abort puts the file back byte for byte.  This file
** owns the writer from creation to commit, so every way out that is not the
** commit (an error, a rejected line under on_error=fail, the progress
** callback asking to stop) goes through cs_writer_abort.
**
** Rejects: a ragged line, invalid UTF-8, a value that does not fit its
** column, a NULL for a NOT NULL column.  Under on_error=fail the first is
** the error (naming the file, the line, the value and the type expected);
** under skip the line is left out and the first few are reported.  When
** there are two passes the lines pass one rejected are found again in pass
** two (the checks are the same and cheap) and skipped without being counted
** twice, so no list of rejected lines has to be kept.
**
** threads=N: a plain file is read in waves of N chunks parsed in parallel,
** each into its own sink (a batch or guesses, its rejects, its first
** failure), merged in chunk order; "parallel chunks" below says how a
** chunk's start is found and proven.
**
** Several files (a directory, a glob) are one input read in name order;
** each must have the first one's column count, and when the first had a
** header each must start with the same header.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_base_internal.h"
#include "cs_import_internal.h"

#define BLOCK_BYTES (1u << 20)
#define DEFAULT_MAX_REJECTS 10u
#define CHUNK_BYTES (8u << 20)
#define MAX_THREADS 64u

typedef struct column_guess {
  bool may_int, may_float;
  uint64_t non_null;
} column_guess;

typedef struct sink sink;

typedef struct importer {
  const char *path;
  const cs_import_options *opt;
  cs_import_result *res;
  cs_err *err;
  uint8_t delim, quote;
  bool header;
  uint32_t n_cols;
  cs_column *cols;      /* names owned by res->cols once built */
  cs_record header_rec; /* the input's first record: the header, when there is one */
  size_t first_file;    /* the first file that is not empty */
  column_guess *guess;
  int pass, passes;
  bool interrupted;
  uint8_t *block;
  cs_record rec;
  sink *sinks; /* threads of them; the serial path uses the first */
  uint32_t threads;
  size_t chunk_bytes;
  bool utf8_known_valid; /* pass two after a pass one that rejected nothing */
  bool speculative;      /* one pass with the sample's types; see "The sample" */
  bool *spec_unknown;    /* speculative: the sample had no value in the column */
  cs_writer *writer;
  uint64_t bytes_total, pass_bytes_done, pass_rows;
  uint32_t max_rejects;
} importer;

/* ------------------------------------------------------------- messages */

cs_rc cs__import_fail(cs_err *err, cs_rc code, const char *fmt, ...) {
  if (err->code != CS_OK) return err->code; /* keep the first */
  va_list ap;
  va_start(ap, fmt);
  char msg[CS_ERR_MSG_BYTES];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cs_err_set(err, code, "%s", msg);
}

/* A value for a message: at most 60 bytes, cut at a character boundary. */
static void quote_value(char *out, size_t cap, const uint8_t *s, size_t n) {
  size_t keep = n;
  bool cut = false;
  if (keep > 60) {
    keep = 60;
    while (keep > 0 && (s[keep] & 0xC0) == 0x80) keep--;
    cut = true;
  }
  snprintf(out, cap, "'%.*s'%s", (int)keep, (const char *)s, cut ? "..." : "");
}

/* Where records go: a batch (the writing pass) or per-column guesses
** (pass one), with the rejects met and the first failure.  The serial path
** has one; a parallel pass one per chunk, merged in chunk order, so the
** rejects, rows and the failure reported are those of the serial order.
** Lines in a sink are relative to its chunk's first line (0 for serial). */
typedef struct sink_reject {
  uint64_t line;
  char *reason;
} sink_reject;

struct sink {
  cs_batch *batch;
  column_guess *guess;
  uint64_t seen; /* records handled (progress) */
  uint64_t rows; /* rows put into batch */
  uint64_t rejected;
  sink_reject *rejects; /* the first max_rejects */
  size_t n_rejects;
  bool violated;      /* speculative: a value the sample's types do not hold */
  cs_rc fail_code;    /* the first failure, CS_OK while none */
  uint64_t fail_line; /* 0: a failure not about a line */
  char fail_reason[400];
} __attribute__((aligned(CS_CACHE_LINE))); /* a thread's own lines (cs__mem_calloc_lines) */

static cs_rc sink_fail(sink *s, cs_rc code, uint64_t line, const char *reason) {
  s->fail_code = code;
  s->fail_line = line;
  snprintf(s->fail_reason, sizeof s->fail_reason, "%s", reason);
  return code;
}

/* A rejected line: the failure under on_error=fail, else counted (once)
** and the first few kept.  Returns CS_OK to go on with the next line. */
static cs_rc reject(const importer *imp, sink *s, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cs_rc reject(const importer *imp, sink *s, uint64_t line, const char *fmt, ...) {
  char reason[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (!imp->opt->skip_errors) return sink_fail(s, CS_EINVAL, line, reason);
  if (imp->passes == 2 && imp->pass == 2) return CS_OK; /* counted in pass one */
  s->rejected++;
  if (s->n_rejects < imp->max_rejects) {
    if (!s->rejects && !(s->rejects = cs__mem_calloc(imp->max_rejects, sizeof *s->rejects)))
      return sink_fail(s, CS_ENOMEM, 0, "out of memory");
    if (!(s->rejects[s->n_rejects].reason = cs__mem_strdup(reason)))
      return sink_fail(s, CS_ENOMEM, 0, "out of memory");
    s->rejects[s->n_rejects++].line = line;
  }
  return CS_OK;
}

/* Moves what s collected into the result; its failure becomes the error,
** its lines offset by line_base. */
static cs_rc merge_sink(importer *imp, sink *s, const char *file, uint64_t line_base) {
  cs_import_result *res = imp->res;
  res->rows += s->rows;
  res->rejected += s->rejected;
  imp->pass_rows += s->seen;
  s->rows = s->rejected = s->seen = 0;
  cs_rc rc = CS_OK;
  for (size_t i = 0; i < s->n_rejects; i++) {
    char *reason = s->rejects[i].reason;
    if (rc == CS_OK && res->n_rejects < imp->max_rejects) {
      if (!res->rejects && !(res->rejects = cs__mem_calloc(imp->max_rejects, sizeof *res->rejects))) {
        rc = cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
      } else {
        cs_import_reject *r = &res->rejects[res->n_rejects++];
        r->file = cs__mem_strdup(file);
        r->line = s->rejects[i].line + line_base;
        r->reason = reason;
        reason = NULL;
        if (!r->file) rc = cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
      }
    }
    cs__mem_free(reason);
  }
  s->n_rejects = 0;
  if (rc != CS_OK) return rc;
  if (s->fail_code != CS_OK) {
    if (s->fail_line)
      return cs__import_fail(imp->err, s->fail_code, "colstore: %s line %llu: %s", file,
                             (unsigned long long)(s->fail_line + line_base), s->fail_reason);
    return cs__import_fail(imp->err, s->fail_code, "colstore: %s", s->fail_reason);
  }
  return CS_OK;
}

static void sink_free(sink *s) {
  for (size_t i = 0; i < s->n_rejects; i++) cs__mem_free(s->rejects[i].reason);
  cs__mem_free(s->rejects);
  cs_batch_free(s->batch);
  cs__mem_free(s->guess);
  memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ the files */

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static cs_rc add_file(importer *imp, const char *name, size_t *cap) {
  cs_import_result *res = imp->res;
  if (res->n_files == *cap) {
    size_t c = *cap ? *cap * 2 : 8;
    char **f = cs__mem_realloc(res->files, c * sizeof *f);
    if (!f) return cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
    res->files = f;
    *cap = c;
  }
  if (!(res->files[res->n_files] = cs__mem_strdup(name)))
    return cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
  res->n_files++;
  return CS_OK;
}

/* source: a file, a directory (its regular files not starting with '.'),
** or a pattern with * ? [; several files in name (byte) order. */
static cs_rc list_files(importer *imp, const char *source) {
  size_t cap = 0;
  struct stat st;
  if (strpbrk(source, "*?[")) {
    glob_t g;
    int grc = glob(source, 0, NULL, &g);
    if (grc == GLOB_NOMATCH)
      return cs__import_fail(imp->err, CS_ENOENT, "colstore: no file matches %s", source);
    if (grc != 0)
      return cs__import_fail(imp->err, CS_EIO, "colstore: cannot list the files matching %s", source);
    cs_rc rc = CS_OK;
    for (size_t i = 0; i < g.gl_pathc && rc == CS_OK; i++)
      if (stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode)) rc = add_file(imp, g.gl_pathv[i], &cap);
    globfree(&g);
    if (rc != CS_OK) return rc;
    if (imp->res->n_files == 0)
      return cs__import_fail(imp->err, CS_ENOENT, "colstore: no file matches %s", source);
  } else if (stat(source, &st) != 0) {
    return cs__import_fail(imp->err, CS_ENOENT, "colstore: cannot read %s: %s", source, strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(source);
    if (!d)
      return cs__import_fail(imp->err, CS_EIO, "colstore: cannot list the directory %s: %s", source,
                             strerror(errno));
    struct dirent *e;
    size_t slen = strlen(source);
    bool slash = slen > 0 && source[slen - 1] == '/';
    cs_rc rc = CS_OK;
    while (rc == CS_OK && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char *full = cs__mem_malloc(slen + strlen(e->d_name) + 2);
      if (!full) {
        rc = cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
        break;
      }
      sprintf(full, "%s%s%s", source, slash ? "" : "/", e->d_name);
      if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) rc = add_file(imp, full, &cap);
      cs__mem_free(full);
    }
    closedir(d);
    if (rc != CS_OK) return rc;
    if (imp->res->n_files == 0)
      return cs__import_fail(imp->err, CS_ENOENT, "colstore: the directory %s holds no files", source);
  } else {
    cs_rc rc = add_file(imp, source, &cap);
    if (rc != CS_OK) return rc;
  }
  qsort(imp->res->files, imp->res->n_files, sizeof *imp->res->files, compare_names);
  for (size_t i = 0; i < imp->res->n_files; i++)
    if (stat(imp->res->files[i], &st) == 0) imp->bytes_total += (uint64_t)st.st_size;
  imp->res->bytes_read = imp->bytes_total;
  return CS_OK;
}

/* Reads until buf is full or the file ends. */
static long fill_block(importer *imp, cs_reader *r, uint8_t *buf, size_t cap) {
  size_t have = 0;
  while (have < cap) {
    long got = cs_reader_read(r, buf + have, cap - have, imp->err);
    if (got < 0) return -1;
    if (got == 0) break;
    have += (size_t)got;
  }
  return (long)have;
}

static size_t bom_bytes(const uint8_t *buf, size_t n) {
  return n >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF ? 3 : 0;
}

/* The tokenizer's "colstore: line N: ..." with the file's name put in. */
static cs_rc name_the_file(importer *imp, const char *file) {
  const char *prefix = "colstore: ";
  size_t k = strlen(prefix);
  if (strncmp(imp->err->msg, prefix, k) != 0) return imp->err->code;
  char msg[CS_ERR_MSG_BYTES];
  snprintf(msg, sizeof msg, "colstore: %s %s", file, imp->err->msg + k);
  cs_rc code = imp->err->code;
  return cs_err_set(imp->err, code, "%s", msg);
}

/* ----------------------------------------------------- the first record */

static inline bool is_null_field(const importer *imp, const cs_record *rec, uint32_t i) {
  if (rec->masks[i] & CS_FIELD_QUOTED) return false;
  size_t n;
  const uint8_t *p = cs_record_field(rec, i, &n);
  if (!imp->opt->has_nulls) return n == 0;
  for (size_t k = 0; k < imp->opt->n_nulls; k++)
    if (strlen(imp->opt->nulls[k]) == n && memcmp(imp->opt->nulls[k], p, n) == 0) return true;
  return false;
}

/* Reads the first record of the input (of the first file that has one)
** into imp->header_rec, detecting the delimiter from that file's first
** block. */
static cs_rc read_first_record(importer *imp) {
  for (size_t f = 0; f < imp->res->n_files; f++) {
    const char *file = imp->res->files[f];
    cs_reader *r = NULL;
    cs_rc rc = cs_reader_open(file, &r, imp->err);
    if (rc != CS_OK) return rc;
    long n = fill_block(imp, r, imp->block, BLOCK_BYTES);
    if (n < 0) {
      cs_reader_close(r);
      return imp->err->code;
    }
    size_t pos = bom_bytes(imp->block, (size_t)n);
    imp->delim = imp->opt->delim ? (uint8_t)imp->opt->delim
                                 : cs_csv_detect_delim(imp->block + pos, (size_t)n - pos, imp->quote);
    cs_csv c;
    cs_csv_init(&c, imp->delim, imp->quote);
    int got = 0;
    while (n > 0) {
      got = cs_csv_feed(&c, imp->block, (size_t)n, &pos, &imp->header_rec, imp->err);
      if (got != 0) break;
      pos = 0;
      n = fill_block(imp, r, imp->block, BLOCK_BYTES);
    }
    if (n == 0 && got == 0) got = cs_csv_finish(&c, &imp->header_rec, imp->err);
    cs_reader_close(r);
    if (n < 0) return imp->err->code;
    if (got < 0) return name_the_file(imp, file);
    if (got == 1) {
      imp->first_file = f;
      return CS_OK;
    }
  }
  if (imp->res->n_files == 1)
    return cs__import_fail(imp->err, CS_EINVAL, "colstore: %s is empty: there are no columns to import",
                           imp->res->files[0]);
  return cs__import_fail(imp->err, CS_EINVAL,
                         "colstore: the %zu files are all empty: there are no columns to import",
                         imp->res->n_files);
}

/* header=auto: the first line is a header when each of its fields is
** non-empty, valid UTF-8, not a number, and no two are the same name. */
static bool looks_like_header(const cs_record *rec) {
  for (uint32_t i = 0; i < rec->n_fields; i++) {
    size_t n;
    const uint8_t *p = cs_record_field(rec, i, &n);
    if (n == 0 || n > CS_NAME_MAX_BYTES || !cs_utf8_valid(p, n) || cs_number_kind(p, n) != CS_NUM_NONE)
      return false;
    for (uint32_t k = 0; k < i; k++) {
      size_t m;
      const uint8_t *q = cs_record_field(rec, k, &m);
      if (m == n && strncasecmp((const char *)p, (const char *)q, n) == 0) return false;
    }
  }
  return true;
}

/* --------------------------------------------------------- the columns */

static cs_rc set_column(importer *imp, uint32_t i, const char *name, size_t n, cs_type type, bool nullable) {
  if (n == 0 || n > CS_NAME_MAX_BYTES)
    return cs__import_fail(imp->err, CS_EINVAL, "colstore: column %u: a name must have 1 to %d bytes", i + 1,
                           CS_NAME_MAX_BYTES);
  for (uint32_t k = 0; k < i; k++)
    if (strlen(imp->cols[k].name) == n && strncasecmp(imp->cols[k].name, name, n) == 0)
      return cs__import_fail(imp->err, CS_EINVAL, "colstore: two columns are named %.*s", (int)n, name);
  char *copy = cs__mem_malloc(n + 1);
  if (!copy) return cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
  memcpy(copy, name, n);
  copy[n] = 0;
  imp->cols[i] = (cs_column){copy, type, nullable};
  return CS_OK;
}

static cs_rc alloc_columns(importer *imp, uint32_t n) {
  if (n > CS_MAX_COLUMNS)
    return cs__import_fail(imp->err, CS_EINVAL, "colstore: %u columns; a store holds at most %d", n,
                           CS_MAX_COLUMNS);
  imp->cols = cs__mem_calloc(n ? n : 1, sizeof *imp->cols);
  imp->guess = cs__mem_calloc(n ? n : 1, sizeof *imp->guess);
  imp->res->cols = imp->cols;
  if (!imp->cols || !imp->guess) return cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
  imp->n_cols = imp->res->n_cols = n; /* the result frees the names it counts */
  return CS_OK;
}

static const char *skip_space(const char *s, const char *end) {
  while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++;
  return s;
}

static const char *trim_end(const char *s, const char *end) {
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r')) end--;
  return end;
}

/* columns='name TYPE [NOT NULL], ...': one item per field of the input. */
static cs_rc parse_columns(importer *imp, const char *spec) {
  uint32_t n = 1;
  for (const char *p = spec; *p; p++) n += *p == ',';
  cs_rc rc = alloc_columns(imp, n);
  if (rc != CS_OK) return rc;
  const char *item = spec;
  for (uint32_t i = 0; i < n; i++) {
    const char *comma = strchr(item, ',');
    const char *end = comma ? comma : item + strlen(item);
    const char *s = skip_space(item, end), *e = trim_end(s, end);
    const char *name_end = s;
    while (name_end < e && *name_end != ' ' && *name_end != '\t') name_end++;
    if (name_end == s)
      return cs__import_fail(imp->err, CS_EINVAL,
                             "colstore: columns=: item %u is empty; write 'name TYPE [NOT NULL], ...'",
                             i + 1);
    const char *type = skip_space(name_end, e);
    bool nullable = true;
    if (e - type >= 8 && strncasecmp(e - 8, "NOT NULL", 8) == 0 &&
        (e - type == 8 || e[-9] == ' ' || e[-9] == '\t')) {
      nullable = false;
      e = trim_end(type, e - 8);
    }
    if (type == e)
      return cs__import_fail(imp->err, CS_EINVAL,
                             "colstore: columns=: column %.*s has no type; write 'name TYPE [NOT NULL], ...'",
                             (int)(name_end - s), s);
    cs_type t = cs_type_parse(type, (size_t)(e - type));
    if (t == 0)
      return cs__import_fail(imp->err, CS_EINVAL, "colstore: columns=: column %.*s: unknown type '%.*s'",
                             (int)(name_end - s), s, (int)(e - type), type);
    if ((rc = set_column(imp, i, s, (size_t)(name_end - s), t, nullable)) != CS_OK) return rc;
    item = end + 1;
  }
  return CS_OK;
}

/* The columns: from columns=, the store (append) or the first record. */
static cs_rc plan_columns(importer *imp, const cs_schema *store_schema) {
  const cs_record *first = &imp->header_rec;
  const char *file0 = imp->res->files[imp->first_file];
  switch (imp->opt->header) {
    case CS_HEADER_YES: imp->header = true; break;
    case CS_HEADER_NO: imp->header = false; break;
    default: imp->header = looks_like_header(first); break;
  }
  imp->res->header = imp->header;
  cs_rc rc;
  if (imp->opt->columns) {
    if ((rc = parse_columns(imp, imp->opt->columns)) != CS_OK) return rc;
    if (imp->n_cols != first->n_fields)
      return cs__import_fail(imp->err, CS_EINVAL,
                             "colstore: columns= names %u columns but %s line %llu has %u fields",
                             imp->n_cols, file0, (unsigned long long)first->line, first->n_fields);
  } else if (store_schema) {
    if ((rc = alloc_columns(imp, store_schema->n_cols)) != CS_OK) return rc;
    for (uint32_t i = 0; i < imp->n_cols; i++) {
      const cs_column *c = &store_schema->cols[i];
      if ((rc = set_column(imp, i, c->name, strlen(c->name), c->type, c->nullable)) != CS_OK) return rc;
    }
    if (imp->n_cols != first->n_fields)
      return cs__import_fail(imp->err, CS_EINVAL,
                             "colstore: mode=append: the store has %u columns but %s line %llu has %u fields",
                             imp->n_cols, file0, (unsigned long long)first->line, first->n_fields);
  } else {
    if ((rc = alloc_columns(imp, first->n_fields)) != CS_OK) return rc;
    for (uint32_t i = 0; i < imp->n_cols; i++) {
      char fallback[16];
      size_t n;
      const char *name = (const char *)cs_record_field(first, i, &n);
      if (!imp->header)
        n = (size_t)snprintf(fallback, sizeof fallback, "c%u", i), name = fallback;
      else if (!cs_utf8_valid((const uint8_t *)name, n))
        return cs__import_fail(imp->err, CS_EINVAL,
                               "colstore: %s line %llu: the header's field %u is not valid UTF-8", file0,
                               (unsigned long long)first->line, i + 1);
      if ((rc = set_column(imp, i, name, n, CS_TYPE_TEXT, true)) != CS_OK) return rc;
      imp->guess[i] = (column_guess){true, true, 0};
    }
    imp->passes = 2;
  }
  if (store_schema) {
    /* append: names (when the file has a header or columns= gives them),
    ** types and nullability must be the store's. */
    for (uint32_t i = 0; i < imp->n_cols; i++) {
      const cs_column *want = &store_schema->cols[i];
      const cs_column *have = &imp->cols[i];
      size_t n = strlen(want->name);
      const char *name = have->name;
      size_t hn = strlen(name);
      if (!imp->opt->columns && imp->header) name = (const char *)cs_record_field(first, i, &hn);
      if ((imp->opt->columns || imp->header) && (hn != n || strncasecmp(name, want->name, n) != 0))
        return cs__import_fail(imp->err, CS_ESCHEMA,
                               "colstore: mode=append: column %u is %s in the store but %.*s in %s", i + 1,
                               want->name, (int)hn, name, imp->opt->columns ? "columns=" : file0);
      if (have->type != want->type)
        return cs__import_fail(imp->err, CS_ESCHEMA,
                               "colstore: mode=append: column %s is %s in the store but %s in columns=",
                               want->name, cs_type_name(want->type), cs_type_name(have->type));
      if (have->nullable != want->nullable)
        return cs__import_fail(
            imp->err, CS_ESCHEMA,
            "colstore: mode=append: column %s is %s in the store but %s in columns=", want->name,
            want->nullable ? "nullable" : "NOT NULL", have->nullable ? "nullable" : "NOT NULL");
    }
  }
  return CS_OK;
}

/* --------------------------------------------------------- the records */

/* A field's kind from its mask when the fast path read it: only digits
** (at most 18: always an INT64) or any byte no number has decide without
** a parse; a sign, a point or an exponent needs the grammar. */
static cs_num_kind field_kind(const uint8_t *p, size_t n, uint8_t mask);

static void guess_field(column_guess *g, const uint8_t *p, size_t n, uint8_t mask) {
  g->non_null++;
  if (!g->may_float) return;
  cs_num_kind k = field_kind(p, n, mask);
  if (k == CS_NUM_NONE)
    g->may_int = g->may_float = false;
  else if (k == CS_NUM_FLOAT)
    g->may_int = false;
}

/* Puts field i into the batch; returns a reason (into why) when the value
** does not fit its column, "" otherwise; CS_ENOMEM is returned. */
static cs_rc put_field(const importer *imp, cs_batch *batch, uint32_t col_index, const uint8_t *p, size_t n,
                       uint8_t mask, char *why, size_t why_cap) {
  const cs_column *col = &imp->cols[col_index];
  cs_err e;
  why[0] = 0;
  if (cs_type_is_varlen(col->type)) return cs_batch_put_bytes(batch, col_index, p, n, &e);
  int64_t iv = 0;
  double fv = 0;
  /* The common FLOAT64 field: digits and one point, no exponent. */
  if (col->type == CS_TYPE_FLOAT64 && !(mask & ~(CS_CLS_DIGIT | CS_CLS_DOT | CS_CLS_SIGN)) &&
      cs_parse_short_decimal(p, n, &fv))
    return cs_batch_put_f64(batch, col_index, fv, &e);
  if (col->type == CS_TYPE_INT64 && n > 0 && n <= 18) {
    /* The common case: at most 18 digits, optional sign, always fits. */
    size_t i = p[0] == '-' || p[0] == '+';
    uint64_t v = 0;
    size_t d = i;
    while (d < n && (unsigned)(p[d] - '0') <= 9) v = v * 10 + (unsigned)(p[d++] - '0');
    if (d == n && d > i)
      return cs_batch_put_i64(batch, col_index, p[0] == '-' ? -(int64_t)v : (int64_t)v, &e);
  }
  cs_num_kind k = cs_parse_number(p, n, &iv, &fv);
  if (k == CS_NUM_NOMEM) return CS_ENOMEM;
  char shown[80];
  if (k == CS_NUM_NONE) {
    quote_value(shown, sizeof shown, p, n);
    snprintf(why, why_cap, "cannot store %s in column %s of type %s: it is not a number", shown, col->name,
             cs_type_name(col->type));
    return CS_OK;
  }
  if (cs_type_is_float(col->type)) {
    double d = k == CS_NUM_INT ? (double)iv : fv;
    if (col->type == CS_TYPE_FLOAT32 && d - d == 0 &&
        (d > 3.4028234663852886e38 || d < -3.4028234663852886e38 || (d != 0 && (float)d == 0))) {
      quote_value(shown, sizeof shown, p, n);
      snprintf(why, why_cap, "cannot store %s in column %s of type FLOAT32: it is out of FLOAT32's range",
               shown, col->name);
      return CS_OK;
    }
    return cs_batch_put_f64(batch, col_index, d, &e);
  }
  if (k == CS_NUM_FLOAT) {
    if (!(fv >= -9223372036854775808.0 && fv < 9223372036854775808.0) || fv != (double)(int64_t)fv) {
      quote_value(shown, sizeof shown, p, n);
      snprintf(why, why_cap, "cannot store %s in column %s of type %s: it is not an integer", shown,
               col->name, cs_type_name(col->type));
      return CS_OK;
    }
    iv = (int64_t)fv;
  }
  if (!cs_type_int_fits(col->type, iv)) {
    quote_value(shown, sizeof shown, p, n);
    snprintf(why, why_cap, "cannot store %s in column %s of type %s: %s", shown, col->name,
             cs_type_name(col->type),
             col->type == CS_TYPE_BOOL ? "a BOOL holds 0 or 1" : "it is out of the type's range");
    return CS_OK;
  }
  return cs_batch_put_i64(batch, col_index, iv, &e);
}

static cs_rc write_batch(importer *imp, cs_batch *batch) {
  if (cs_batch_rows(batch) == 0) return CS_OK;
  cs_rc rc = cs_writer_write(imp->writer, batch, imp->err);
  cs_batch_clear(batch);
  return rc;
}

/* Every field valid UTF-8, checked in one pass over the record's bytes
** (none at all for a record the fast path saw to be ASCII). */
static bool record_utf8_valid(const cs_record *rec) {
  if (rec->ascii) return true;
  /* The separators between the fields are the delimiter: when it is
  ** ASCII, a character cut by one fails the check of the whole; when it is
  ** not, only the fields one by one can tell. */
  if (rec->n_fields > 1 && rec->data[rec->ends[0]] >= 0x80) return false;
  return cs_utf8_valid(rec->data, rec->n_bytes);
}

/* A file's first record when the input has a header: the first file's was
** read already; every other must be the same. */
static cs_rc check_header(importer *imp, size_t file_index, const cs_record *rec) {
  const cs_record *h = &imp->header_rec;
  if (file_index == imp->first_file) return CS_OK;
  bool same = rec->n_fields == h->n_fields && rec->n_bytes == h->n_bytes &&
              (rec->n_bytes == 0 || memcmp(rec->data, h->data, rec->n_bytes) == 0);
  for (uint32_t i = 0; same && i < rec->n_fields; i++) same = rec->ends[i] == h->ends[i];
  if (!same)
    return cs__import_fail(
        imp->err, CS_EINVAL,
        "colstore: %s line %llu: the header differs from %s's; files imported together must share it",
        imp->res->files[file_index], (unsigned long long)rec->line, imp->res->files[imp->first_file]);
  return CS_OK;
}

/* ------------------------------------------------------------ the sample
**
** Two passes are the price of letting the whole input decide the types,
** but most files say in their first megabyte what every later line holds.
** So an inferred import first types the records of the first file's first
** block (BLOCK_BYTES) as pass one would, and then writes the whole input in
** one pass with those types, checking each value against them: an INT64
** column takes only integer literals that fit (not 1e5, which INSERT would
** take but inference makes FLOAT64), a FLOAT64 column only numbers, and a
** column with no value in the sample no value at all.  If every value
** conforms, the types are exactly what the two passes would have given
** (each column's kind is the same over the sample as over the whole), and
** the import read the input once.  The first value that does not conform
** ends the speculative pass: the writer is aborted (nothing of it stays),
** the result emptied, and the import starts again with the two passes.
** The cost of a late surprise is the speculative pass up to it: on the
** bench's 10M-row file with a misfit on its last line, 3.2 s of CPU against
** 1.4 s without it and about 2.2 s for two passes alone; the gain on a file
** that does not surprise is pass one (docs/performance.md, "CSV import: the
** fast path").  Progress reports one
** pass, then (after a restart) pass 1 of 2 from the start again. */

/* The kind of a field, from its mask where that decides it. */
static cs_num_kind field_kind(const uint8_t *p, size_t n, uint8_t mask) {
  if (mask == CS_CLS_DIGIT && n <= 18) return CS_NUM_INT;
  if ((mask & (CS_CLS_OTHER | CS_FIELD_UNSCANNED)) == CS_CLS_OTHER) return CS_NUM_NONE;
  return cs_number_kind(p, n);
}

/* Whether a non-NULL field fits column i as the sample typed it (a FLOAT64
** field that is not a number is found by put_field's reason). */
static bool conforms(const importer *imp, uint32_t i, const uint8_t *p, size_t n, uint8_t mask) {
  if (imp->spec_unknown[i]) return false;
  if (imp->cols[i].type != CS_TYPE_INT64) return true;
  return (mask == CS_CLS_DIGIT && n <= 18) || field_kind(p, n, mask) == CS_NUM_INT;
}

static cs_rc violation(sink *s) {
  cs_batch_cancel_row(s->batch);
  s->violated = true;
  return CS_EINVAL;
}

/* One record into s: checked, then typed (pass one of two) or converted
** into s->batch.  Touches only s and what imp holds read-only, so chunks
** can run it in parallel. */
static cs_rc handle_record(const importer *imp, sink *s, const cs_record *rec) {
  s->seen++;
  if (rec->n_fields != imp->n_cols)
    return reject(imp, s, rec->line, "%u fields where %s has %u", rec->n_fields,
                  imp->header ? "the header" : "the first line", imp->n_cols);
  if (!imp->utf8_known_valid && !record_utf8_valid(rec))
    for (uint32_t i = 0; i < rec->n_fields; i++) {
      size_t n;
      const uint8_t *p = cs_record_field(rec, i, &n);
      if (!cs_utf8_valid(p, n))
        return reject(imp, s, rec->line, "field %u (column %s) is not valid UTF-8", i + 1, imp->cols[i].name);
    }
  if (imp->passes == 2 && imp->pass == 1) {
    for (uint32_t i = 0; i < rec->n_fields; i++) {
      if (is_null_field(imp, rec, i)) continue;
      size_t n;
      const uint8_t *p = cs_record_field(rec, i, &n);
      guess_field(&s->guess[i], p, n, rec->masks[i]);
    }
    return CS_OK;
  }
  char why[400];
  for (uint32_t i = 0; i < rec->n_fields; i++) {
    cs_rc rc;
    why[0] = 0;
    if (is_null_field(imp, rec, i)) {
      if (!imp->cols[i].nullable) {
        cs_batch_cancel_row(s->batch);
        return reject(imp, s, rec->line, "NOT NULL column %s has no value", imp->cols[i].name);
      }
      cs_err e;
      rc = cs_batch_put_null(s->batch, i, &e);
    } else {
      size_t n;
      const uint8_t *p = cs_record_field(rec, i, &n);
      if (imp->speculative && !conforms(imp, i, p, n, rec->masks[i])) return violation(s);
      rc = put_field(imp, s->batch, i, p, n, rec->masks[i], why, sizeof why);
    }
    if (rc != CS_OK) return sink_fail(s, rc, 0, "out of memory");
    if (why[0]) {
      if (imp->speculative) return violation(s); /* a FLOAT64 field not a number */
      cs_batch_cancel_row(s->batch);
      return reject(imp, s, rec->line, "%s", why);
    }
  }
  cs_batch_end_row(s->batch);
  s->rows++;
  return CS_OK;
}

static cs_type guessed_type(const column_guess *g) {
  return g->non_null == 0 ? CS_TYPE_TEXT
         : g->may_int     ? CS_TYPE_INT64
         : g->may_float   ? CS_TYPE_FLOAT64
                          : CS_TYPE_TEXT;
}

/* A sink's pass-one guesses into the importer's, the sink's made fresh. */
static void fold_guesses(importer *imp, sink *s) {
  if (!s->guess) return;
  for (uint32_t c = 0; c < imp->n_cols; c++) {
    imp->guess[c].may_int &= s->guess[c].may_int;
    imp->guess[c].may_float &= s->guess[c].may_float;
    imp->guess[c].non_null += s->guess[c].non_null;
    s->guess[c] = (column_guess){true, true, 0};
  }
}

static bool writing(const importer *imp) { return !(imp->passes == 2 && imp->pass == 1); }

static bool report(importer *imp, bool finished) {
  if (!imp->opt->progress) return true;
  cs_import_progress p = {imp->pass,        imp->passes,    imp->pass_bytes_done,
                          imp->bytes_total, imp->pass_rows, finished};
  if (imp->opt->progress(imp->opt->progress_ctx, &p) != 0) {
    imp->interrupted = imp->res->interrupted = true;
    cs__import_fail(imp->err, CS_EINVAL, "colstore: interrupted");
    return false;
  }
  return true;
}

/* A record the serial path read: the header check, or into the sink, and
** the batch written when it holds a record's rows. */
static cs_rc serial_record(importer *imp, size_t f, bool first) {
  sink *s = &imp->sinks[0];
  if (first && imp->header) return check_header(imp, f, &imp->rec);
  cs_rc rc = handle_record(imp, s, &imp->rec);
  if (s->violated) return rc;
  if (rc != CS_OK || s->n_rejects) rc = merge_sink(imp, s, imp->res->files[f], 0);
  if (rc == CS_OK && writing(imp) && cs_batch_rows(s->batch) >= CS_DEFAULT_RECORD_ROWS)
    rc = write_batch(imp, s->batch);
  return rc;
}

/* One file, one block at a time, by one tokenizer. */
static cs_rc run_file_serial(importer *imp, size_t f) {
  const char *file = imp->res->files[f];
  cs_reader *r = NULL;
  cs_rc rc = cs_reader_open(file, &r, imp->err);
  if (rc != CS_OK) return rc;
  cs_csv c;
  cs_csv_init(&c, imp->delim, imp->quote);
  cs_record_reset(&imp->rec);
  bool first = true, at_start = true;
  uint64_t raw_before = imp->pass_bytes_done;
  for (;;) {
    long n = fill_block(imp, r, imp->block, BLOCK_BYTES);
    if (n < 0) {
      rc = imp->err->code;
      break;
    }
    size_t pos = at_start ? bom_bytes(imp->block, (size_t)n) : 0;
    at_start = false;
    cs_csv_refill(&c);
    int got;
    if (n == 0) {
      got = cs_csv_finish(&c, &imp->rec, imp->err);
      if (got == 1) {
        rc = serial_record(imp, f, first);
        cs_record_reset(&imp->rec);
      } else if (got < 0) {
        rc = name_the_file(imp, file);
      }
      break;
    }
    while ((got = cs_csv_next(&c, imp->block, (size_t)n, &pos, &imp->rec, imp->err)) == 1) {
      rc = serial_record(imp, f, first);
      first = false;
      cs_record_reset(&imp->rec);
      if (rc != CS_OK) break;
    }
    if (got < 0) rc = name_the_file(imp, file);
    if (rc != CS_OK) break;
    rc = merge_sink(imp, &imp->sinks[0], file, 0);
    if (rc != CS_OK) break;
    imp->pass_bytes_done = raw_before + cs_reader_raw_offset(r);
    if (!report(imp, false)) {
      rc = imp->err->code;
      break;
    }
  }
  if (rc == CS_OK && !imp->sinks[0].violated) rc = merge_sink(imp, &imp->sinks[0], file, 0);
  /* A file's rows are written before the next file's, which a parallel
  ** pass may write from other sinks. */
  if (rc == CS_OK && writing(imp)) rc = write_batch(imp, imp->sinks[0].batch);
  fold_guesses(imp, &imp->sinks[0]);
  if (rc == CS_OK && imp->err->code != CS_OK) rc = imp->err->code;
  imp->pass_bytes_done = raw_before + cs_reader_raw_offset(r);
  cs_reader_close(r);
  return rc;
}

/* ------------------------------------------------------ parallel chunks
**
** threads=N splits a plain file into waves of N chunks read into memory
** (chunk_bytes each, so memory stays at N chunks whatever the file's size).
** A chunk must start at a record boundary, and a byte offset's quote state
** is not known without reading everything before it.  The choice here is
** the quote-parity pass: a wave starts at a known boundary (outside
** quotes), so the parity of the quote bytes from there to a split point is
** the quote state at that point for RFC 4180 text (a doubled quote counts
** two and keeps the parity); the chunk then starts after the first line
** end outside quotes.  Counting quotes runs at memchr speed, far cheaper
** than parsing each chunk twice (speculatively in both states).
**
** Lenient input breaks the parity rule: a stray quote inside an unquoted
** field (ab"c) flips it.  So no guess is trusted: every chunk but the last
** of a wave must end, under its own tokenizer, exactly at a record boundary
** where the next chunk starts.  Since the first chunk starts at a true
** boundary, that proves each next one does, and the chunks' records are
** exactly the serial reading's.  A wave where a chunk fails the check is
** parsed again as one chunk, which is the serial reading.  The last chunk
** of a wave stops after its last complete record, where the next wave
** starts. */

typedef struct chunk_job {
  size_t begin, end; /* buf offsets */
  size_t stop;       /* after the last complete record */
  uint64_t lines;    /* line ends before stop */
  bool clean;        /* ended at a record boundary, nothing pending */
  cs_rc rc;
  cs_err err;
  cs_record rec;
} __attribute__((aligned(CS_CACHE_LINE))) chunk_job; /* a thread's own lines */

static size_t record_start_after(const uint8_t *buf, size_t from, size_t to, uint8_t quote, bool in_quotes) {
  for (size_t i = from; i < to; i++) {
    uint8_t b = buf[i];
    if (b == quote)
      in_quotes = !in_quotes;
    else if (!in_quotes && (b == '\n' || b == '\r')) {
      if (b == '\r' && i + 1 < to && buf[i + 1] == '\n') i++;
      return i + 1;
    }
  }
  return to;
}

static void run_chunk(const importer *imp, sink *s, chunk_job *job, const uint8_t *buf, bool last,
                      bool at_eof) {
  cs_csv c;
  cs_csv_init(&c, imp->delim, imp->quote);
  cs_record_reset(&job->rec);
  size_t pos = job->begin;
  job->stop = job->begin;
  job->lines = 0;
  job->rc = CS_OK;
  job->clean = false;
  int got;
  while ((got = cs_csv_next(&c, buf, job->end, &pos, &job->rec, &job->err)) == 1) {
    job->rc = handle_record(imp, s, &job->rec);
    cs_record_reset(&job->rec);
    job->stop = pos;
    job->lines = c.line - 1;
    if (job->rc != CS_OK) return;
  }
  if (got < 0) {
    job->rc = job->err.code;
    return;
  }
  if (last && at_eof) {
    got = cs_csv_finish(&c, &job->rec, &job->err);
    if (got < 0) {
      job->rc = job->err.code;
      return;
    }
    if (got == 1) job->rc = handle_record(imp, s, &job->rec);
    cs_record_reset(&job->rec);
    job->stop = job->end;
    job->lines = c.line - 1;
  }
  job->clean = !c.in_record && (c.state == CS_CSV_FIELD_START || c.state == CS_CSV_AFTER_CR);
  if (job->clean && !last) job->stop = job->end, job->lines = c.line - 1;
}

/* The chunks of a wave, one thread each (the first on the calling thread).
** Plain threads started per wave rather than an OpenMP team: between waves
** the caller reads and writes alone, and a team's idle threads would spin
** through that time on the cores it needs (measured: a third more CPU on
** a 2-core host).  A start costs tens of microseconds a wave of megabytes. */
typedef struct chunk_thread {
  const importer *imp;
  sink *s;
  chunk_job *job;
  const uint8_t *buf;
  bool last, at_eof;
} chunk_thread;

static void *chunk_thread_main(void *arg) {
  chunk_thread *t = arg;
  run_chunk(t->imp, t->s, t->job, t->buf, t->last, t->at_eof);
  return NULL;
}

static void run_chunks(importer *imp, chunk_job *jobs, uint32_t k_chunks, const uint8_t *buf, bool at_eof) {
  chunk_thread args[MAX_THREADS];
  pthread_t tids[MAX_THREADS];
  bool started[MAX_THREADS] = {false};
  for (uint32_t k = 0; k < k_chunks; k++)
    args[k] = (chunk_thread){imp, &imp->sinks[k], &jobs[k], buf, k + 1 == k_chunks, at_eof};
  for (uint32_t k = 1; k < k_chunks; k++)
    started[k] = pthread_create(&tids[k], NULL, chunk_thread_main, &args[k]) == 0;
  chunk_thread_main(&args[0]);
  for (uint32_t k = 1; k < k_chunks; k++) {
    if (started[k])
      pthread_join(tids[k], NULL);
    else
      chunk_thread_main(&args[k]); /* no thread to be had: run it here */
  }
}

static bool read_at(int fd, uint8_t *buf, size_t n, uint64_t off) {
  size_t have = 0;
  while (have < n) {
    ssize_t got = pread(fd, buf + have, n - have, (off_t)(off + have));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    have += (size_t)got;
  }
  return true;
}

static cs_rc run_file_parallel(importer *imp, size_t f, uint64_t size) {
  const char *file = imp->res->files[f];
  uint32_t threads = imp->threads;
  size_t region_cap = (size_t)threads * imp->chunk_bytes;
  uint8_t *buf = cs__mem_malloc(region_cap);
  chunk_job *jobs = cs__mem_calloc_lines(threads, sizeof *jobs);
  size_t *bounds = cs__mem_malloc((threads + 1) * sizeof *bounds);
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  cs_rc rc = CS_OK;
  if (!buf || !jobs || !bounds)
    rc = cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
  else if (fd < 0)
    rc = cs__import_fail(imp->err, CS_EIO, "colstore: cannot open %s: %s", file, strerror(errno));
  uint64_t off = 0, line_base = 0, raw_before = imp->pass_bytes_done;
  bool first = true, after_cr = false;
  while (rc == CS_OK && off < size) {
    size_t n = size - off < region_cap ? (size_t)(size - off) : region_cap;
    if (!read_at(fd, buf, n, off)) {
      rc = cs__import_fail(imp->err, CS_EIO, "colstore: cannot read %s: %s", file,
                           errno ? strerror(errno) : "it shrank while read");
      break;
    }
    bool at_eof = off + n == size;
    /* A record that ended at CR before this wave: its LF is here, and is
    ** not a line of its own (the tokenizer's AFTER_CR state). */
    size_t start = after_cr && n > 0 && buf[0] == '\n' ? 1 : 0;
    if (first) {
      start = bom_bytes(buf, n);
      if (imp->header) {
        /* The header, serially: compared with the first file's. */
        cs_csv c;
        cs_csv_init(&c, imp->delim, imp->quote);
        cs_record_reset(&imp->rec);
        size_t pos = start;
        int got = cs_csv_feed(&c, buf, n, &pos, &imp->rec, imp->err);
        if (got == 0 && at_eof) got = cs_csv_finish(&c, &imp->rec, imp->err), pos = n;
        if (got < 0) {
          rc = name_the_file(imp, file);
          break;
        }
        if (got == 0) goto grow;
        if ((rc = check_header(imp, f, &imp->rec)) != CS_OK) break;
        line_base = c.line - 1;
        start = pos < n && pos > 0 && buf[pos - 1] == '\r' && buf[pos] == '\n' ? pos + 1 : pos;
      }
    }
    /* Split points, each moved to the next line end outside quotes. */
    uint32_t k_chunks = threads;
    bounds[0] = start;
    bool in_quotes = false;
    size_t counted = start;
    for (uint32_t k = 1; k < threads; k++) {
      size_t guess = start + (size_t)((uint64_t)(n - start) * k / threads);
      if (guess < bounds[k - 1]) guess = bounds[k - 1];
      for (const uint8_t *q = buf + counted; (q = memchr(q, imp->quote, (size_t)(buf + guess - q))) != NULL;
           q++)
        in_quotes = !in_quotes;
      counted = guess;
      size_t b = record_start_after(buf, guess, n, imp->quote, in_quotes);
      for (const uint8_t *q = buf + counted; (q = memchr(q, imp->quote, (size_t)(buf + b - q))) != NULL; q++)
        in_quotes = !in_quotes;
      counted = b;
      bounds[k] = b;
    }
    bounds[k_chunks] = n;
    for (bool serial_retry = false;; serial_retry = true) {
      if (serial_retry) k_chunks = 1, bounds[1] = n;
      for (uint32_t k = 0; k < k_chunks; k++) jobs[k].begin = bounds[k], jobs[k].end = bounds[k + 1];
      run_chunks(imp, jobs, k_chunks, buf, at_eof);
      /* Every chunk before one that failed, and before the last, must have
      ** ended where the next begins. */
      uint32_t trusted = 0;
      while (trusted + 1 < k_chunks && jobs[trusted].rc == CS_OK && jobs[trusted].clean) trusted++;
      bool ok = trusted + 1 >= k_chunks || jobs[trusted].rc != CS_OK;
      if (ok) break;
      /* A wrong guess: nothing of this try is kept. */
      for (uint32_t k = 0; k < k_chunks; k++) {
        sink *s = &imp->sinks[k];
        for (size_t i = 0; i < s->n_rejects; i++) cs__mem_free(s->rejects[i].reason);
        s->n_rejects = 0;
        s->rows = s->rejected = s->seen = 0;
        s->fail_code = CS_OK;
        if (s->batch) cs_batch_clear(s->batch);
        if (s->guess)
          for (uint32_t c = 0; c < imp->n_cols; c++) s->guess[c] = (column_guess){true, true, 0};
      }
      if (serial_retry) break; /* cannot happen: one chunk is always clean */
    }
    /* Merge in order: rejects, rows, guesses, the first failure. */
    for (uint32_t k = 0; k < k_chunks && rc == CS_OK; k++) {
      chunk_job *job = &jobs[k];
      sink *s = &imp->sinks[k];
      if (s->violated) {
        rc = job->rc;
        break;
      }
      if (job->rc != CS_OK && s->fail_code == CS_OK) {
        /* a tokenizer error: "colstore: line N: ..." relative to the chunk */
        *imp->err = job->err;
        unsigned long long rel;
        const char *rest = strstr(job->err.msg, ": ");
        if (sscanf(job->err.msg, "colstore: line %llu:", &rel) == 1 && rest &&
            (rest = strstr(rest + 2, ": ")) != NULL) {
          char msg[CS_ERR_MSG_BYTES];
          snprintf(msg, sizeof msg, "colstore: %s line %llu: %s", file, rel + line_base, rest + 2);
          cs_err_set(imp->err, job->err.code, "%s", msg);
        }
        rc = imp->err->code;
        break;
      }
      fold_guesses(imp, s);
      if ((rc = merge_sink(imp, s, file, line_base)) != CS_OK) break;
      if (writing(imp) && (rc = write_batch(imp, s->batch)) != CS_OK) break;
      line_base += job->lines;
      if (job->stop < job->end) break; /* the last chunk's partial record: the next wave's */
    }
    if (rc != CS_OK) break;
    size_t consumed = jobs[k_chunks - 1].stop;
    if (consumed == 0 || (consumed == start && !at_eof && !first)) {
    grow:
      /* No whole record in the wave: a record longer than it.  Read
      ** twice as much, with the same offset. */
      if (at_eof) break;
      region_cap *= 2;
      uint8_t *bigger = cs__mem_realloc(buf, region_cap);
      if (!bigger) {
        rc = cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
        break;
      }
      buf = bigger;
      continue;
    }
    first = false;
    after_cr = buf[consumed - 1] == '\r';
    off += consumed;
    imp->pass_bytes_done = raw_before + off;
    if (!report(imp, false)) {
      rc = imp->err->code;
      break;
    }
  }
  if (rc == CS_OK && imp->err->code != CS_OK) rc = imp->err->code;
  imp->pass_bytes_done = raw_before + size;
  if (fd >= 0) close(fd);
  for (uint32_t k = 0; jobs && k < threads; k++) cs_record_free(&jobs[k].rec);
  cs__mem_free(jobs);
  cs__mem_free(bounds);
  cs__mem_free(buf);
  return rc;
}

static bool splittable(const char *file) {
  size_t n = strlen(file);
  return !(n >= 3 && strcmp(file + n - 3, ".gz") == 0) && !(n >= 4 && strcmp(file + n - 4, ".zst") == 0);
}

/* One pass over every file. */
static cs_rc run_pass(importer *imp, int pass) {
  imp->pass = pass;
  imp->pass_bytes_done = 0;
  imp->pass_rows = 0;
  for (size_t f = 0; f < imp->res->n_files; f++) {
    const char *file = imp->res->files[f];
    struct stat st;
    cs_rc rc;
    if (imp->threads > 1 && splittable(file) && stat(file, &st) == 0 &&
        (uint64_t)st.st_size >= 2 * imp->chunk_bytes)
      rc = run_file_parallel(imp, f, (uint64_t)st.st_size);
    else
      rc = run_file_serial(imp, f);
    if (rc != CS_OK) return rc;
  }
  return CS_OK;
}

/* ------------------------------------------------------------ the whole */

/* The types of the records in the first file's first block (the header
** left out), tried for one pass when they are usable: the sample ended
** without a failure and held a record.  See "The sample". */
static cs_rc sample_types(importer *imp) {
  const char *file = imp->res->files[imp->first_file];
  cs_reader *r = NULL;
  cs_rc rc = cs_reader_open(file, &r, imp->err);
  if (rc != CS_OK) return rc;
  size_t want =
      imp->opt->sample_bytes && imp->opt->sample_bytes < BLOCK_BYTES ? imp->opt->sample_bytes : BLOCK_BYTES;
  long n = fill_block(imp, r, imp->block, want);
  cs_reader_close(r);
  if (n < 0) return imp->err->code;
  cs_csv c;
  cs_csv_init(&c, imp->delim, imp->quote);
  cs_record_reset(&imp->rec);
  sink *s = &imp->sinks[0];
  imp->pass = 1;
  size_t pos = bom_bytes(imp->block, (size_t)n);
  bool header = imp->header;
  uint64_t records = 0;
  cs_err tok_err = {0}; /* a tokenizer error is the real pass's to report */
  while (s->fail_code == CS_OK && cs_csv_next(&c, imp->block, (size_t)n, &pos, &imp->rec, &tok_err) == 1) {
    if (!header) handle_record(imp, s, &imp->rec), records++;
    header = false;
    cs_record_reset(&imp->rec);
  }
  cs_record_reset(&imp->rec);
  bool usable = s->fail_code == CS_OK && records > 0;
  for (size_t i = 0; i < s->n_rejects; i++) cs__mem_free(s->rejects[i].reason);
  s->n_rejects = 0;
  s->rows = s->rejected = s->seen = 0;
  s->fail_code = CS_OK;
  if (usable) {
    if (!(imp->spec_unknown = cs__mem_calloc(imp->n_cols ? imp->n_cols : 1, sizeof *imp->spec_unknown)))
      return cs__import_fail(imp->err, CS_ENOMEM, "colstore: out of memory");
    for (uint32_t i = 0; i < imp->n_cols; i++) {
      imp->cols[i].type = guessed_type(&s->guess[i]);
      imp->spec_unknown[i] = s->guess[i].non_null == 0;
    }
    imp->speculative = true;
    imp->passes = 1;
  }
  for (uint32_t i = 0; i < imp->n_cols; i++) s->guess[i] = (column_guess){true, true, 0};
  return CS_OK;
}

static bool spec_violated(const importer *imp) {
  for (uint32_t k = 0; k < imp->threads; k++)
    if (imp->sinks[k].violated) return true;
  return false;
}

/* Pass one over the whole input; the columns typed by it. */
static cs_rc infer_types(importer *imp) {
  imp->passes = 2;
  cs_rc rc = run_pass(imp, 1);
  if (rc != CS_OK) return rc;
  for (uint32_t i = 0; i < imp->n_cols; i++) imp->cols[i].type = guessed_type(&imp->guess[i]);
  return CS_OK;
}

/* The writer (unless appending), a batch a sink, the writing pass, the
** commit.  On a failure the caller's cleanup aborts the writer. */
static cs_rc write_all(importer *imp, const cs_writer_options *wopt) {
  cs_err *err = imp->err;
  cs_schema schema = {imp->n_cols, imp->cols};
  cs_rc rc;
  if (!imp->writer && (rc = cs_writer_create(imp->path, &schema, wopt, &imp->writer, err)) != CS_OK) {
    if (rc == CS_EEXIST) {
      *err = (cs_err){0};
      rc = cs__import_fail(
          imp->err, CS_EEXIST,
          "colstore: %s already exists; use mode=replace to overwrite it or mode=append to add to it",
          imp->path);
    }
    return rc;
  }
  for (uint32_t k = 0; k < imp->threads; k++)
    if ((rc = cs_batch_new(&schema, &imp->sinks[k].batch, err)) != CS_OK) return rc;
  /* Pass one checked every record's UTF-8 and rejected none: pass two
  ** reads the same bytes.  (The field counts are checked again: cheap, and
  ** a file rewritten between the passes then fails instead of misfiling.) */
  imp->utf8_known_valid = imp->passes == 2 && imp->res->rejected == 0;
  if ((rc = run_pass(imp, imp->passes)) != CS_OK) return rc;
  if (!report(imp, true)) return err->code;
  rc = cs_writer_commit(imp->writer, err);
  imp->writer = NULL;
  return rc;
}

/* After a speculative pass met a misfit: nothing of it is kept. */
static void restart(importer *imp) {
  cs_writer_abort(imp->writer);
  imp->writer = NULL;
  imp->speculative = false;
  cs_import_result *res = imp->res;
  for (size_t i = 0; i < res->n_rejects; i++) {
    cs__mem_free(res->rejects[i].file);
    cs__mem_free(res->rejects[i].reason);
  }
  res->n_rejects = 0;
  res->rows = res->rejected = 0;
  for (uint32_t k = 0; k < imp->threads; k++) {
    sink *s = &imp->sinks[k];
    for (size_t i = 0; i < s->n_rejects; i++) cs__mem_free(s->rejects[i].reason);
    s->n_rejects = 0;
    s->rows = s->rejected = s->seen = 0;
    s->fail_code = CS_OK;
    s->violated = false;
    cs_batch_free(s->batch);
    s->batch = NULL;
  }
  for (uint32_t i = 0; i < imp->n_cols; i++) imp->guess[i] = (column_guess){true, true, 0};
}

cs_rc cs_import_text(const char *path, const char *source, const cs_import_options *opt,
                     cs_import_result *res, cs_err *err) {
  memset(res, 0, sizeof *res);
  *err = (cs_err){0};
  cs_import_options defaults = {0};
  if (!opt) opt = &defaults;
  importer imp = {.path = path, .opt = opt, .res = res, .err = err, .passes = 1};
  imp.quote = opt->quote ? (uint8_t)opt->quote : '"';
  imp.max_rejects = opt->max_rejects ? opt->max_rejects : DEFAULT_MAX_REJECTS;
  cs_rc rc = CS_OK;
  if (opt->delim && (opt->delim == imp.quote || opt->delim == '\n' || opt->delim == '\r'))
    return cs__import_fail(imp.err, CS_EINVAL,
                           "colstore: the delimiter must differ from the quote and from CR and LF");
  if (imp.quote == '\n' || imp.quote == '\r')
    return cs__import_fail(imp.err, CS_EINVAL, "colstore: the quote must not be CR or LF");
  if (opt->mode == CS_IMPORT_CREATE && access(path, F_OK) == 0)
    return cs__import_fail(
        imp.err, CS_EEXIST,
        "colstore: %s already exists; use mode=replace to overwrite it or mode=append to add to it", path);
  if ((rc = list_files(&imp, source)) != CS_OK) goto done;
  if (!(imp.block = cs__mem_malloc(BLOCK_BYTES))) {
    rc = cs__import_fail(imp.err, CS_ENOMEM, "colstore: out of memory");
    goto done;
  }
  cs_writer_options wopt = {.replace = opt->mode == CS_IMPORT_REPLACE, .lock_timeout_ms = 10000};
  if (opt->mode == CS_IMPORT_APPEND) {
    if ((rc = cs_writer_append(path, &wopt, &imp.writer, err)) != CS_OK) goto done;
  }
  if ((rc = read_first_record(&imp)) != CS_OK) goto done;
  res->delim = (char)imp.delim;
  if ((rc = plan_columns(&imp, imp.writer ? cs_writer_schema(imp.writer) : NULL)) != CS_OK) goto done;
  imp.threads = opt->threads > 1 ? (opt->threads < MAX_THREADS ? opt->threads : MAX_THREADS) : 1;
  imp.chunk_bytes = opt->chunk_bytes ? opt->chunk_bytes : CHUNK_BYTES;
  if (!(imp.sinks = cs__mem_calloc_lines(imp.threads, sizeof *imp.sinks))) {
    rc = cs__import_fail(imp.err, CS_ENOMEM, "colstore: out of memory");
    goto done;
  }
  if (imp.passes == 2) {
    for (uint32_t k = 0; k < imp.threads; k++) {
      if (!(imp.sinks[k].guess =
                cs__mem_calloc_lines(imp.n_cols ? imp.n_cols : 1, sizeof *imp.sinks[k].guess))) {
        rc = cs__import_fail(imp.err, CS_ENOMEM, "colstore: out of memory");
        goto done;
      }
      for (uint32_t i = 0; i < imp.n_cols; i++) imp.sinks[k].guess[i] = (column_guess){true, true, 0};
    }
    if ((rc = sample_types(&imp)) != CS_OK) goto done;
    if (!imp.speculative && (rc = infer_types(&imp)) != CS_OK) goto done;
  }
  rc = write_all(&imp, &wopt);
  if (rc != CS_OK && imp.speculative && spec_violated(&imp) && err->code == CS_OK) {
    /* A value the sample's types do not hold: the two passes, anew. */
    restart(&imp);
    if ((rc = infer_types(&imp)) == CS_OK) rc = write_all(&imp, &wopt);
  }
done:
  if (imp.writer) cs_writer_abort(imp.writer);
  for (uint32_t k = 0; imp.sinks && k < imp.threads; k++) sink_free(&imp.sinks[k]);
  cs__mem_free(imp.sinks);
  cs_record_free(&imp.rec);
  cs_record_free(&imp.header_rec);
  cs__mem_free(imp.guess);
  cs__mem_free(imp.spec_unknown);
  cs__mem_free(imp.block);
  if (rc != CS_OK && err->code == CS_OK) cs_err_set(err, rc, "colstore: import failed (%s)", cs_rc_name(rc));
  return rc;
}

/* ---------------------------------------------------- the other formats */

cs_rc cs__import_list_files(const char *source, cs_import_result *res, uint64_t *out_bytes_total,
                            cs_err *err) {
  importer imp = {.res = res, .err = err};
  cs_rc rc = list_files(&imp, source);
  *out_bytes_total = imp.bytes_total;
  return rc;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* A columnar format by a file's name; CS_FORMAT_AUTO for text. */
static cs_import_format format_of(const char *name) {
  if (has_suffix(name, ".parquet")) return CS_FORMAT_PARQUET;
  if (has_suffix(name, ".arrow") || has_suffix(name, ".feather") || has_suffix(name, ".arrows"))
    return CS_FORMAT_ARROW;
  return CS_FORMAT_AUTO;
}

/* AUTO: a name with a columnar suffix, or a directory whose files all
** have one format's. */
static cs_import_format source_format(const char *source) {
  cs_import_format f = format_of(source);
  if (f != CS_FORMAT_AUTO) return f;
  struct stat st;
  if (stat(source, &st) != 0 || !S_ISDIR(st.st_mode)) return CS_FORMAT_AUTO;
  cs_import_result res = {0};
  cs_err e = {0};
  uint64_t bytes;
  bool all = cs__import_list_files(source, &res, &bytes, &e) == CS_OK && res.n_files > 0;
  f = all ? format_of(res.files[0]) : CS_FORMAT_AUTO;
  for (size_t i = 1; all && i < res.n_files; i++) all = format_of(res.files[i]) == f;
  cs_import_result_free(&res);
  return all ? f : CS_FORMAT_AUTO;
}

cs_rc cs_import(const char *path, const char *source, const cs_import_options *opt, cs_import_result *res,
                cs_err *err) {
  cs_import_format format = opt ? opt->format : CS_FORMAT_AUTO;
  if (format == CS_FORMAT_AUTO) format = source_format(source);
  if (format == CS_FORMAT_PARQUET) return cs_import_parquet(path, source, opt, res, err);
  if (format == CS_FORMAT_ARROW) return cs_import_arrow(path, source, opt, res, err);
  return cs_import_text(path, source, opt, res, err);
}

void cs_import_result_free(cs_import_result *res) {
  if (!res) return;
  for (uint32_t i = 0; i < res->n_cols; i++) cs__mem_free((char *)res->cols[i].name);
  cs__mem_free(res->cols);
  for (size_t i = 0; i < res->n_files; i++) cs__mem_free(res->files[i]);
  cs__mem_free(res->files);
  for (size_t i = 0; i < res->n_rejects; i++) {
    cs__mem_free(res->rejects[i].file);
    cs__mem_free(res->rejects[i].reason);
  }
  cs__mem_free(res->rejects);
  memset(res, 0, sizeof *res);
}
