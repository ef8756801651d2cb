/*
** unit_util.c - the shared half of the Check suites (see unit_util.h).
**
** Nothing here is clever on purpose: the reference model stores one cell
** per value in a flat array, the layout reader pread()s structures and
** checks their checksums field by field, the digest walks every cell
** through the public API, and the gather reference finds each row's record
** by a plain binary search and copies one value at a time.  A test helper
** that is as subtle as the code under test can share its bugs.
**
** The one choice a reader might question: helpers assert instead of
** returning codes.  A failure inside a helper is a failure of the test that
** called it, and Check reports the helper's file and line together with
** the message, which carries the caller's context (the seed).
*/
#include "unit_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <ftw.h>
#include <sys/wait.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------- directories and files */

char *ut_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char *dir = ut_join(base, "colstore-unit-XXXXXX");
  ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp(%s) failed: %s", dir, strerror(errno));
  return dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

void ut_tmpdir_remove(char *dir) {
  if (!dir) return;
  ck_assert_msg(nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0, "cannot remove %s: %s", dir,
                strerror(errno));
  free(dir);
}

char *ut_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  ck_assert_ptr_nonnull(p);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

bool ut_exists(const char *path) { return access(path, F_OK) == 0; }

uint64_t ut_file_bytes(const char *path) {
  struct stat st;
  ck_assert_msg(stat(path, &st) == 0, "stat(%s): %s", path, strerror(errno));
  return (uint64_t)st.st_size;
}

int ut_dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "opendir(%s): %s", dir, strerror(errno));
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

uint8_t *ut_read_all(const char *path, size_t *out_bytes) {
  size_t n = (size_t)ut_file_bytes(path);
  uint8_t *p = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(p);
  ut_pread(path, 0, p, n);
  if (out_bytes) *out_bytes = n;
  return p;
}

void ut_write_all(const char *path, const void *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ck_assert_msg(fd >= 0, "open(%s): %s", path, strerror(errno));
  const uint8_t *q = p;
  while (n > 0) {
    ssize_t put = write(fd, q, n);
    ck_assert_msg(put > 0, "write(%s): %s", path, strerror(errno));
    q += put, n -= (size_t)put;
  }
  close(fd);
}

void ut_copy_file(const char *from, const char *to) {
  size_t n;
  uint8_t *p = ut_read_all(from, &n);
  ut_write_all(to, p, n);
  free(p);
}

void ut_pread(const char *path, uint64_t off, void *p, size_t n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ck_assert_msg(fd >= 0, "open(%s): %s", path, strerror(errno));
  uint8_t *q = p;
  while (n > 0) {
    ssize_t got = pread(fd, q, n, (off_t)off);
    ck_assert_msg(got > 0, "pread(%s, %" PRIu64 "): %s", path, off, got ? strerror(errno) : "end of file");
    q += got, n -= (size_t)got, off += (uint64_t)got;
  }
  close(fd);
}

void ut_pwrite(const char *path, uint64_t off, const void *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  ck_assert_msg(fd >= 0, "open(%s): %s", path, strerror(errno));
  const uint8_t *q = p;
  while (n > 0) {
    ssize_t put = pwrite(fd, q, n, (off_t)off);
    ck_assert_msg(put > 0, "pwrite(%s, %" PRIu64 "): %s", path, off, strerror(errno));
    q += put, n -= (size_t)put, off += (uint64_t)put;
  }
  close(fd);
}

void ut_xor_byte(const char *path, uint64_t off, uint8_t mask) {
  uint8_t b;
  ut_pread(path, off, &b, 1);
  b ^= mask;
  ut_pwrite(path, off, &b, 1);
}

void ut_truncate(const char *path, uint64_t bytes) {
  ck_assert_msg(truncate(path, (off_t)bytes) == 0, "truncate(%s): %s", path, strerror(errno));
}

void ut_append_bytes(const char *path, const void *p, size_t n) {
  ut_pwrite(path, ut_file_bytes(path), p, n);
}

ut_scratch ut_scratch_new(void) {
  ut_scratch sc;
  sc.dir = ut_tmpdir();
  sc.path = ut_join(sc.dir, "t.cst");
  sc.copy = ut_join(sc.dir, "c.cst");
  return sc;
}

void ut_scratch_free(ut_scratch *sc) {
  free(sc->copy);
  free(sc->path);
  ut_tmpdir_remove(sc->dir);
  memset(sc, 0, sizeof *sc);
}

/* ----------------------------------------------------- seeded randomness */

ut_rng ut_rng_seed(uint64_t seed) { return (ut_rng){seed}; }

uint64_t ut_rng_u64(ut_rng *r) {
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t ut_rng_below(ut_rng *r, uint64_t n) { return ut_rng_u64(r) % n; }

double ut_rng_unit(ut_rng *r) { return (double)(ut_rng_u64(r) >> 11) * 0x1.0p-53; }

/* ------------------------------------------------------ reference table */

ut_table *ut_table_new(const cs_schema *schema) {
  ut_table *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  size_t names = 0;
  for (uint32_t i = 0; i < schema->n_cols; i++) names += strlen(schema->cols[i].name) + 1;
  t->cols = calloc(schema->n_cols ? schema->n_cols : 1, sizeof *t->cols);
  t->names = malloc(names ? names : 1);
  ck_assert(t->cols && t->names);
  char *p = t->names;
  for (uint32_t i = 0; i < schema->n_cols; i++) {
    size_t len = strlen(schema->cols[i].name) + 1;
    memcpy(p, schema->cols[i].name, len);
    t->cols[i] = schema->cols[i];
    t->cols[i].name = p;
    p += len;
  }
  t->schema.n_cols = schema->n_cols;
  t->schema.cols = t->cols;
  return t;
}

void ut_table_free(ut_table *t) {
  if (!t) return;
  for (uint64_t i = 0; i < t->n_rows * t->schema.n_cols; i++) free(t->cells[i].bytes);
  free(t->cells);
  free(t->cols);
  free(t->names);
  free(t);
}

ut_cell *ut_table_add_row(ut_table *t) {
  uint32_t nc = t->schema.n_cols;
  if (t->n_rows == t->cap_rows) {
    t->cap_rows = t->cap_rows ? t->cap_rows * 2 : 64;
    t->cells = realloc(t->cells, t->cap_rows * nc * sizeof *t->cells);
    ck_assert_ptr_nonnull(t->cells);
  }
  ut_cell *row = &t->cells[t->n_rows * nc];
  memset(row, 0, nc * sizeof *row);
  t->n_rows++;
  return row;
}

ut_cell *ut_table_cell(const ut_table *t, uint64_t row, uint32_t col) {
  return &t->cells[row * t->schema.n_cols + col];
}

void ut_cell_set_null(ut_cell *c) {
  free(c->bytes);
  memset(c, 0, sizeof *c);
  c->null = true;
}

void ut_cell_set_int(ut_cell *c, int64_t v) {
  c->null = false;
  c->i = v;
}

void ut_cell_set_float(ut_cell *c, cs_type type, double v) {
  c->null = false;
  if (type == CS_TYPE_FLOAT32) {
    /* What cs_batch_put_f64 stores: (float) of the double it is given. */
    c->f32 = (float)v;
    c->f = (double)c->f32;
  } else {
    c->f = v;
  }
}

void ut_cell_set_bytes(ut_cell *c, const void *p, uint64_t n) {
  free(c->bytes);
  c->null = false;
  c->bytes = malloc(n ? n : 1);
  if (!c->bytes)
    ck_abort_msg("out of memory for %" PRIu64 " bytes", n); /* a ck_assert per cell writes to check's pipe */
  if (n) memcpy(c->bytes, p, n);
  c->len = n;
}

/* Appends one code point as UTF-8. */
static size_t utf8_put(uint8_t *p, uint32_t cp) {
  if (cp < 0x80) return p[0] = (uint8_t)cp, 1;
  if (cp < 0x800) return p[0] = (uint8_t)(0xC0 | (cp >> 6)), p[1] = (uint8_t)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    p[0] = (uint8_t)(0xE0 | (cp >> 12)), p[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)),
    p[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
  }
  p[0] = (uint8_t)(0xF0 | (cp >> 18)), p[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
  p[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)), p[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}

void ut_cell_random(ut_rng *r, cs_type type, bool nullable, unsigned null_permille, ut_cell *c) {
  if (nullable && ut_rng_below(r, 1000) < null_permille) {
    ut_cell_set_null(c);
    return;
  }
  bool edge = ut_rng_below(r, 6) == 0;
  if (cs_type_is_integer(type)) {
    int64_t lo, hi;
    cs_type_int_range(type, &lo, &hi);
    if (edge) {
      const int64_t picks[] = {lo, hi, 0, 1, -1, lo + 1, hi - 1};
      int64_t v = picks[ut_rng_below(r, 7)];
      ut_cell_set_int(c, v < lo ? lo : v > hi ? hi : v);
    } else if (type == CS_TYPE_INT64) {
      /* Magnitudes of every size; negated in unsigned arithmetic (no overflow). */
      uint64_t u = ut_rng_u64(r) >> ut_rng_below(r, 64);
      ut_cell_set_int(c, (int64_t)(ut_rng_below(r, 2) ? u : 0 - u));
    } else {
      ut_cell_set_int(c, lo + (int64_t)ut_rng_below(r, (uint64_t)(hi - lo) + 1));
    }
  } else if (cs_type_is_float(type)) {
    double v;
    if (edge) {
      const double picks[] = {0.0,      -0.0,      INFINITY, -INFINITY, DBL_MAX, -DBL_MAX, DBL_MIN,
                              4.9e-324, -4.9e-324, 1e-310,   NAN,       FLT_MAX, FLT_MIN,  1.4e-45};
      v = picks[ut_rng_below(r, sizeof picks / sizeof picks[0])];
    } else if (ut_rng_below(r, 8) == 0) {
      uint64_t bits = ut_rng_u64(r); /* any pattern, NaN payloads included */
      memcpy(&v, &bits, 8);
    } else {
      v = (ut_rng_unit(r) - 0.5) * pow(10.0, (double)ut_rng_below(r, 41) - 20.0);
    }
    ut_cell_set_float(c, type, v);
  } else {
    uint64_t n = edge ? 0 : ut_rng_below(r, ut_rng_below(r, 16) == 0 ? 400 : 24);
    uint8_t *buf = malloc(n * 4 + 1);
    ck_assert_ptr_nonnull(buf);
    uint64_t len = 0;
    if (type == CS_TYPE_TEXT) {
      static const uint32_t wide[] = {0xE9, 0x416, 0x20AC, 0x4E2D, 0x1F600, 0x10FFFF};
      for (uint64_t k = 0; k < n; k++)
        len += utf8_put(buf + len, ut_rng_below(r, 3) ? 0x20 + (uint32_t)ut_rng_below(r, 0x5F)
                                                      : wide[ut_rng_below(r, 6)]);
    } else {
      for (; len < n; len++) buf[len] = ut_rng_below(r, 4) == 0 ? 0 : (uint8_t)ut_rng_u64(r);
    }
    ut_cell_set_bytes(c, buf, len);
    free(buf);
  }
}

bool ut_cell_equal(cs_type type, const ut_cell *a, const ut_cell *b) {
  if (a->null || b->null) return a->null == b->null;
  switch (type) {
    case CS_TYPE_FLOAT32: return memcmp(&a->f32, &b->f32, sizeof a->f32) == 0;
    case CS_TYPE_FLOAT64: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case CS_TYPE_TEXT:
    case CS_TYPE_BLOB: return a->len == b->len && (a->len == 0 || memcmp(a->bytes, b->bytes, a->len) == 0);
    default: return a->i == b->i;
  }
}

void ut_cell_describe(cs_type type, const ut_cell *c, char *buf, size_t n) {
  if (c->null) {
    snprintf(buf, n, "NULL");
  } else if (type == CS_TYPE_FLOAT32) {
    uint32_t bits;
    memcpy(&bits, &c->f32, 4);
    snprintf(buf, n, "%a (bits %08" PRIx32 ")", (double)c->f32, bits);
  } else if (type == CS_TYPE_FLOAT64) {
    uint64_t bits;
    memcpy(&bits, &c->f, 8);
    snprintf(buf, n, "%a (bits %016" PRIx64 ")", c->f, bits);
  } else if (cs_type_is_varlen(type)) {
    int used = snprintf(buf, n, "%" PRIu64 " bytes:", c->len);
    for (uint64_t k = 0; k < c->len && k < 12 && used > 0 && (size_t)used + 4 < n; k++)
      used += snprintf(buf + used, n - (size_t)used, " %02x", c->bytes[k]);
  } else {
    snprintf(buf, n, "%" PRId64, c->i);
  }
}

/* Puts one cell into column col of b's current row, by the cell's type. */
static cs_rc batch_put_cell(cs_batch *b, uint32_t col, cs_type type, const ut_cell *c, cs_err *err) {
  if (c->null) return cs_batch_put_null(b, col, err);
  if (cs_type_is_integer(type)) return cs_batch_put_i64(b, col, c->i, err);
  if (type == CS_TYPE_FLOAT32) return cs_batch_put_f64(b, col, (double)c->f32, err);
  if (type == CS_TYPE_FLOAT64) return cs_batch_put_f64(b, col, c->f, err);
  return cs_batch_put_bytes(b, col, c->bytes, c->len, err);
}

cs_batch *ut_table_batch(const ut_table *t, uint64_t first, uint64_t n) {
  cs_batch *b;
  cs_err err = {0};
  ck_assert_msg(cs_batch_new(&t->schema, &b, &err) == CS_OK, "cs_batch_new: %s", err.msg);
  for (uint64_t row = first; row < first + n; row++) {
    for (uint32_t col = 0; col < t->schema.n_cols; col++) {
      cs_rc rc = batch_put_cell(b, col, t->cols[col].type, ut_table_cell(t, row, col), &err);
      /* not ck_assert_msg: check records each passing assert with a write(2) */
      if (rc != CS_OK) ck_abort_msg("put row %" PRIu64 " col %u: %s", row, col, err.msg);
    }
    cs_batch_end_row(b);
  }
  ck_assert_uint_eq(cs_batch_rows(b), n);
  return b;
}

static void writer_write_rows(cs_writer *w, const ut_table *t, uint64_t first, uint64_t n,
                              uint64_t per_write) {
  cs_err err = {0};
  if (per_write == 0) per_write = n ? n : 1;
  for (uint64_t at = first; at < first + n; at += per_write) {
    uint64_t k = first + n - at < per_write ? first + n - at : per_write;
    cs_batch *b = ut_table_batch(t, at, k);
    cs_rc rc = cs_writer_write(w, b, &err);
    cs_batch_free(b);
    ck_assert_msg(rc == CS_OK, "cs_writer_write: %s", err.msg);
  }
}

void ut_table_create_store(const ut_table *t, const char *path, uint64_t n, uint64_t record_rows,
                           uint64_t per_write) {
  cs_writer_options opt = {.record_rows = record_rows};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(path, &t->schema, &opt, &w, &err) == CS_OK, "cs_writer_create(%s): %s", path,
                err.msg);
  writer_write_rows(w, t, 0, n, per_write);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "cs_writer_commit(%s): %s", path, err.msg);
}

void ut_table_append_store(const ut_table *t, const char *path, uint64_t first, uint64_t n) {
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_append(path, NULL, &w, &err) == CS_OK, "cs_writer_append(%s): %s", path, err.msg);
  writer_write_rows(w, t, first, n, 0);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "cs_writer_commit(%s): %s", path, err.msg);
}

/* The model of cs_writer_update: in call order, so later values win. */
void ut_table_update(ut_table *t, const uint64_t *rows, uint64_t n, const ut_table *vals,
                     const uint8_t *cols) {
  for (uint64_t i = 0; i < n; i++)
    for (uint32_t c = 0; c < t->schema.n_cols; c++) {
      if (cols && !cols[c]) continue;
      ut_cell *dst = ut_table_cell(t, rows[i], c);
      const ut_cell *src = ut_table_cell(vals, i, c);
      if (src->null)
        ut_cell_set_null(dst);
      else if (cs_type_is_varlen(t->cols[c].type))
        ut_cell_set_bytes(dst, src->bytes, src->len);
      else
        *dst = (ut_cell){.i = src->i, .f = src->f, .f32 = src->f32};
    }
}

cs_rc ut_update_call(cs_writer *w, const uint64_t *rows, uint64_t n, const ut_table *vals,
                     const uint8_t *cols, cs_err *err) {
  cs_batch *b = ut_table_batch(vals, 0, n);
  cs_rc rc = cs_writer_update(w, rows, n, b, cols, err);
  cs_batch_free(b);
  return rc;
}

void ut_update_commit(const char *path, ut_table *t, const uint64_t *rows, uint64_t n, const ut_table *vals,
                      const uint8_t *cols) {
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_append(path, NULL, &w, &err) == CS_OK, "cs_writer_append(%s): %s", path, err.msg);
  ck_assert_msg(ut_update_call(w, rows, n, vals, cols, &err) == CS_OK, "cs_writer_update(%s): %s", path,
                err.msg);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "cs_writer_commit(%s): %s", path, err.msg);
  if (t) ut_table_update(t, rows, n, vals, cols);
}

ut_table *ut_random_table(const cs_schema *sc, uint64_t n, unsigned null_permille, uint64_t seed) {
  ut_table *t = ut_table_new(sc);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t row = 0; row < n; row++) {
    ut_cell *c = ut_table_add_row(t);
    for (uint32_t k = 0; k < sc->n_cols; k++) {
      if (k == 0 && sc->cols[0].type == CS_TYPE_INT64 && !sc->cols[0].nullable)
        ut_cell_set_int(&c[0], (int64_t)row);
      else
        ut_cell_random(&r, sc->cols[k].type, sc->cols[k].nullable, null_permille, &c[k]);
    }
  }
  return t;
}

uint64_t ut_delete_commit(const char *path, const uint64_t *rows, uint64_t n) {
  cs_writer *w;
  cs_err err = {0};
  uint64_t fresh = 0;
  ck_assert_msg(cs_writer_append(path, NULL, &w, &err) == CS_OK, "cs_writer_append(%s): %s", path, err.msg);
  ck_assert_msg(cs_writer_delete(w, rows, n, &fresh, &err) == CS_OK, "cs_writer_delete(%s): %s", path,
                err.msg);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "cs_writer_commit(%s): %s", path, err.msg);
  return fresh;
}

uint32_t ut_file_version(const char *path) {
  cs_disk_preamble pre;
  ut_pread(path, 0, &pre, sizeof pre);
  return pre.version;
}

bool ut_files_equal(const char *a, const char *b) {
  size_t na, nb;
  uint8_t *pa = ut_read_all(a, &na), *pb = ut_read_all(b, &nb);
  bool same = na == nb && memcmp(pa, pb, na) == 0;
  free(pa), free(pb);
  return same;
}

void ut_assert_deleted(const cs_store *s, const bool *del, uint64_t n, const char *ctx) {
  ck_assert_msg(cs_store_rows(s) == n, "%s: %" PRIu64 " positions, expected %" PRIu64, ctx, cs_store_rows(s),
                n);
  uint64_t dead = 0;
  for (uint64_t row = 0; row < n; row++) {
    dead += del[row];
    if (cs_store_row_deleted(s, row) != del[row])
      ck_abort_msg("%s: row %" PRIu64 " deleted=%d, expected %d", ctx, row, !del[row], del[row]);
  }
  ck_assert_msg(cs_store_live_rows(s) == n - dead, "%s: %" PRIu64 " live rows, expected %" PRIu64, ctx,
                cs_store_live_rows(s), n - dead);
  uint64_t sum = 0;
  for (uint64_t rec = 0; rec < cs_store_records(s); rec++) {
    uint64_t c = cs_store_record_deleted(s, rec), first = cs_store_record_first_row(s, rec), want = 0;
    for (uint64_t i = 0; i < cs_store_record_rows(s, rec); i++) want += del[first + i];
    ck_assert_msg(c == want, "%s: record %" PRIu64 " counts %" PRIu64 " deleted, expected %" PRIu64, ctx, rec,
                  c, want);
    ck_assert((cs_store_record_deletions(s, rec) != NULL) == (c > 0));
    sum += c;
  }
  ck_assert_uint_eq(sum, dead);
}

cs_store *ut_store_fresh_like(const cs_store *s, const ut_table *t, const bool *del, const char *path) {
  cs_writer *w;
  cs_err err = {0};
  unlink(path);
  ck_assert_msg(cs_writer_create(path, &t->schema, &(cs_writer_options){.record_rows = (uint64_t)1 << 40}, &w,
                                 &err) == CS_OK,
                "%s", err.msg);
  for (uint64_t rec = 0; rec < cs_store_records(s); rec++) {
    cs_batch *b = ut_table_batch(t, cs_store_record_first_row(s, rec), cs_store_record_rows(s, rec));
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "%s", err.msg);
    cs_batch_free(b);
  }
  for (uint64_t row = 0; del && row < cs_store_rows(s); row++)
    if (del[row]) ck_assert(cs_writer_delete(w, &row, 1, NULL, &err) == CS_OK);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "%s", err.msg);
  return ut_open_ok(path, CS_VERIFY_FULL, "fresh store");
}

void ut_assert_chunks_like(const cs_store *s, const cs_store *f, const char *ctx) {
  ck_assert_uint_eq(cs_store_records(s), cs_store_records(f));
  uint32_t nc = cs_store_schema(s)->n_cols;
  for (uint64_t rec = 0; rec < cs_store_records(s); rec++)
    for (uint32_t c = 0; c < nc; c++) {
      const cs_chunk *a = cs_store_chunk(s, rec, c), *b = cs_store_chunk(f, rec, c);
      bool same =
          a->null_count == b->null_count && a->flags == b->flags && a->data_bytes == b->data_bytes &&
          (a->validity != NULL) == (b->validity != NULL) &&
          (!(a->flags & CS_CHUNK_HAS_MINMAX) || (a->min.bits == b->min.bits && a->max.bits == b->max.bits));
      if (!same)
        ck_abort_msg("%s: record %" PRIu64 " column %u: nulls %" PRIu64 "/%" PRIu64
                     " flags %u/%u min %016" PRIx64 "/%016" PRIx64 " max %016" PRIx64 "/%016" PRIx64,
                     ctx, rec, c, a->null_count, b->null_count, a->flags, b->flags, a->min.bits, b->min.bits,
                     a->max.bits, b->max.bits);
    }
}

void ut_assert_chunks_like_fresh(const cs_store *s, const ut_table *t, const bool *del, const char *ctx) {
  char path[512];
  const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(path, sizeof path, "%s/ut_fresh_%d.cst", dir, (int)getpid());
  cs_store *f = ut_store_fresh_like(s, t, del, path);
  ut_assert_chunks_like(s, f, ctx);
  cs_store_close(f);
  unlink(path);
}

/* --------------------------------------------------------- reading back */

cs_store *ut_open_ok(const char *path, cs_verify verify, const char *context) {
  cs_store *s = NULL;
  cs_err err = {0};
  cs_rc rc = cs_store_open(path, verify, &s, &err);
  ck_assert_msg(rc == CS_OK, "%s: cs_store_open(%s) gave %s: %s", context, path, cs_rc_name(rc), err.msg);
  ck_assert_ptr_nonnull(s);
  return s;
}

cs_rc ut_open_rc(const char *path, cs_verify verify, cs_err *err) {
  cs_store *s = NULL;
  cs_rc rc = cs_store_open(path, verify, &s, err);
  if (rc == CS_OK)
    cs_store_close(s);
  else
    ck_assert_msg(s == NULL, "cs_store_open failed with %s but returned a store", cs_rc_name(rc));
  return rc;
}

void ut_store_cell(const cs_store *s, uint64_t row, uint32_t col, ut_cell *out) {
  memset(out, 0, sizeof *out);
  uint64_t rec = cs_store_find_record(s, row);
  uint64_t local = row - cs_store_record_first_row(s, rec);
  const cs_chunk *ch = cs_store_chunk(s, rec, col);
  if (!cs_chunk_is_valid(ch, local)) {
    out->null = true;
    return;
  }
  const uint8_t *p = ch->data;
  switch (cs_store_schema(s)->cols[col].type) {
    case CS_TYPE_INT8: {
      int8_t x;
      memcpy(&x, p + local, 1);
      out->i = x;
      break;
    }
    case CS_TYPE_UINT8:
    case CS_TYPE_BOOL: out->i = p[local]; break;
    case CS_TYPE_INT16: {
      int16_t x;
      memcpy(&x, p + local * 2, 2);
      out->i = x;
      break;
    }
    case CS_TYPE_UINT16: {
      uint16_t x;
      memcpy(&x, p + local * 2, 2);
      out->i = x;
      break;
    }
    case CS_TYPE_INT32: {
      int32_t x;
      memcpy(&x, p + local * 4, 4);
      out->i = x;
      break;
    }
    case CS_TYPE_UINT32: {
      uint32_t x;
      memcpy(&x, p + local * 4, 4);
      out->i = x;
      break;
    }
    case CS_TYPE_INT64: memcpy(&out->i, p + local * 8, 8); break;
    case CS_TYPE_FLOAT32:
      memcpy(&out->f32, p + local * 4, 4);
      out->f = (double)out->f32;
      break;
    case CS_TYPE_FLOAT64: memcpy(&out->f, p + local * 8, 8); break;
    default: {
      const uint8_t *bytes;
      cs_err err = {0};
      cs_rc rc = cs_chunk_varlen(ch, local, &bytes, &out->len, &err);
      ck_assert_msg(rc == CS_OK, "row %" PRIu64 " col %u: cs_chunk_varlen: %s", row, col, err.msg);
      out->bytes = (uint8_t *)bytes;
      break;
    }
  }
}

void ut_assert_schema_equals(const cs_schema *got, const cs_schema *want, const char *context) {
  ck_assert_msg(got->n_cols == want->n_cols, "%s: %u columns, expected %u", context, got->n_cols,
                want->n_cols);
  for (uint32_t c = 0; c < want->n_cols; c++) {
    ck_assert_msg(strcmp(got->cols[c].name, want->cols[c].name) == 0,
                  "%s: column %u is named '%s', expected '%s'", context, c, got->cols[c].name,
                  want->cols[c].name);
    ck_assert_msg(got->cols[c].type == want->cols[c].type, "%s: column %s has type %d, expected %d", context,
                  want->cols[c].name, got->cols[c].type, want->cols[c].type);
    ck_assert_msg(got->cols[c].nullable == want->cols[c].nullable, "%s: column %s nullable=%d, expected %d",
                  context, want->cols[c].name, got->cols[c].nullable, want->cols[c].nullable);
  }
}

void ut_assert_store_equals(const cs_store *s, const ut_table *t, uint64_t n_rows, const char *context) {
  ut_assert_schema_equals(cs_store_schema(s), &t->schema, context);
  ck_assert_msg(cs_store_rows(s) == n_rows, "%s: store has %" PRIu64 " rows, expected %" PRIu64, context,
                cs_store_rows(s), n_rows);
  for (uint64_t row = 0; row < n_rows; row++) {
    for (uint32_t col = 0; col < t->schema.n_cols; col++) {
      ut_cell got;
      const ut_cell *want = ut_table_cell(t, row, col);
      cs_type type = t->cols[col].type;
      ut_store_cell(s, row, col, &got);
      if (!ut_cell_equal(type, &got, want)) {
        char g[128], w[128];
        ut_cell_describe(type, &got, g, sizeof g);
        ut_cell_describe(type, want, w, sizeof w);
        ck_abort_msg("%s: row %" PRIu64 ", column %s (%s): got %s, expected %s", context, row,
                     t->cols[col].name, cs_type_name(type), g, w);
      }
    }
  }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *q = p;
  for (size_t i = 0; i < n; i++) h = (h ^ q[i]) * 0x100000001B3ull;
  return h;
}

uint64_t ut_store_digest(const cs_store *s) {
  const cs_schema *sc = cs_store_schema(s);
  uint64_t h = 0xCBF29CE484222325ull, rows = cs_store_rows(s);
  h = fnv(h, &sc->n_cols, 4);
  for (uint32_t c = 0; c < sc->n_cols; c++) {
    uint8_t tn[2] = {(uint8_t)sc->cols[c].type, (uint8_t)sc->cols[c].nullable};
    h = fnv(h, tn, 2);
    h = fnv(h, sc->cols[c].name, strlen(sc->cols[c].name) + 1);
  }
  h = fnv(h, &rows, 8);
  for (uint64_t row = 0; row < rows; row++) {
    /* A deleted row adds a marker instead of its values; stores without
    ** deletions digest exactly as before format 2. */
    if (cs_store_row_deleted(s, row)) {
      h = fnv(h, "D", 1);
      continue;
    }
    for (uint32_t c = 0; c < sc->n_cols; c++) {
      ut_cell v;
      ut_store_cell(s, row, c, &v);
      uint8_t null = v.null;
      h = fnv(h, &null, 1);
      if (v.null) continue;
      cs_type t = sc->cols[c].type;
      if (t == CS_TYPE_FLOAT32)
        h = fnv(h, &v.f32, 4);
      else if (t == CS_TYPE_FLOAT64)
        h = fnv(h, &v.f, 8);
      else if (cs_type_is_varlen(t))
        h = fnv(fnv(h, &v.len, 8), v.bytes, v.len);
      else
        h = fnv(h, &v.i, 8);
    }
  }
  return h;
}

/* --------------------------------------------- the layout, read directly */

void ut_txn_prepare_in_child(const char *path, ut_txn_fn fn, void *arg) {
  pid_t pid = fork();
  ck_assert(pid >= 0);
  if (pid == 0) {
    cs_writer *w;
    cs_err err;
    if (cs_writer_append(path, NULL, &w, &err) != CS_OK) _exit(2);
    if (fn(w, arg, &err) != CS_OK || cs_writer_prepare(w, &err) != CS_OK) _exit(3);
    _exit(0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

typedef struct delete_arg {
  const uint64_t *rows;
  uint64_t n;
} delete_arg;

static cs_rc delete_txn(cs_writer *w, void *arg, cs_err *err) {
  const delete_arg *d = arg;
  return cs_writer_delete(w, d->rows, d->n, NULL, err);
}

void ut_delete_prepare_in_child(const char *path, const uint64_t *rows, uint64_t n) {
  delete_arg d = {rows, n};
  ut_txn_prepare_in_child(path, delete_txn, &d);
}

void ut_slot_reseal(cs_disk_slot *slot) { slot->checksum = cs__hash(slot, 56); }
void ut_preamble_reseal(cs_disk_preamble *pre) { pre->checksum = cs__hash(pre, 56); }

void ut_layout_read(const char *path, ut_layout *l) {
  memset(l, 0, sizeof *l);
  l->file_bytes = ut_file_bytes(path);
  ck_assert_msg(l->file_bytes >= CS_SLOT1_OFFSET + sizeof(cs_disk_slot), "%s is too short to read", path);
  ut_pread(path, 0, &l->pre, sizeof l->pre);
  ck_assert_msg(memcmp(l->pre.magic, CS_MAGIC_FILE, CS_MAGIC_BYTES) == 0, "%s: bad magic", path);
  ck_assert_msg(l->pre.checksum == cs__hash(&l->pre, 56), "%s: preamble checksum", path);
  ut_pread(path, l->pre.schema_offset, &l->n_cols, 4);
  l->newest = -1;
  for (int i = 0; i < 2; i++) {
    cs_disk_slot *s = &l->slot[i];
    ut_pread(path, i ? CS_SLOT1_OFFSET : CS_SLOT0_OFFSET, s, sizeof *s);
    l->slot_valid[i] = memcmp(s->magic, CS_MAGIC_SLOT, CS_MAGIC_BYTES) == 0 &&
                       s->checksum == cs__hash(s, 56) && s->generation > 0;
    if (l->slot_valid[i] && (l->newest < 0 || s->generation > l->slot[l->newest].generation)) l->newest = i;
  }
  ck_assert_msg(l->newest >= 0, "%s: no valid commit slot", path);
  const cs_disk_slot *s = &l->slot[l->newest];
  l->slot_offset = l->newest ? CS_SLOT1_OFFSET : CS_SLOT0_OFFSET;
  ck_assert_msg(s->footer_offset + s->footer_bytes <= l->file_bytes, "%s: footer past the end", path);
  uint8_t *f = malloc(s->footer_bytes);
  ck_assert_ptr_nonnull(f);
  ut_pread(path, s->footer_offset, f, s->footer_bytes);
  ck_assert_msg(cs__hash(f, s->footer_bytes) == s->footer_checksum, "%s: footer checksum", path);
  memcpy(&l->footer, f, sizeof l->footer);
  bool v2 = l->footer.layout == CS_FOOTER_LAYOUT_2;
  uint64_t eb = ut_layout_entry_bytes(l), head = ut_layout_head_bytes(l);
  ck_assert_uint_eq(l->footer.entry_bytes, eb);
  ck_assert_uint_eq(head + l->footer.n_records * eb, s->footer_bytes);
  if (v2) memcpy(&l->footer_ext, f + sizeof(cs_disk_footer), sizeof l->footer_ext);
  l->n_records = l->footer.n_records;
  l->entries = calloc(l->n_records + 1, sizeof *l->entries);
  l->ext = calloc(l->n_records + 1, sizeof *l->ext);
  l->chunks = calloc(l->n_records * l->n_cols + 1, sizeof *l->chunks);
  ck_assert(l->entries && l->ext && l->chunks);
  size_t xb = v2 ? sizeof(cs_disk_entry_ext) : 0;
  for (uint64_t r = 0; r < l->n_records; r++) {
    const uint8_t *e = f + head + r * eb;
    memcpy(&l->entries[r], e, sizeof(cs_disk_entry));
    if (v2) memcpy(&l->ext[r], e + sizeof(cs_disk_entry), xb);
    memcpy(&l->chunks[r * l->n_cols], e + sizeof(cs_disk_entry) + xb, l->n_cols * sizeof(cs_disk_chunk));
  }
  free(f);
}

uint64_t ut_layout_entry_bytes(const ut_layout *l) {
  return l->footer.layout == CS_FOOTER_LAYOUT_2 ? cs__footer_entry_bytes_v2(l->n_cols)
                                                : cs__footer_entry_bytes(l->n_cols);
}

uint64_t ut_layout_head_bytes(const ut_layout *l) {
  return l->footer.layout == CS_FOOTER_LAYOUT_2 ? CS_FOOTER_HEAD_BYTES_V2 : sizeof(cs_disk_footer);
}

void ut_layout_free(ut_layout *l) {
  free(l->ext);
  free(l->entries);
  free(l->chunks);
  memset(l, 0, sizeof *l);
}

const cs_disk_chunk *ut_layout_chunk(const ut_layout *l, uint64_t rec, uint32_t col) {
  ck_assert(rec < l->n_records && col < l->n_cols);
  return &l->chunks[rec * l->n_cols + col];
}

uint64_t ut_layout_data_offset(const ut_layout *l, uint64_t rec, uint32_t col) {
  const cs_disk_chunk *dc = ut_layout_chunk(l, rec, col);
  return cs__chunk_base(&l->entries[rec], dc) + dc->data_offset;
}

uint64_t ut_layout_offsets_offset(const ut_layout *l, uint64_t rec, uint32_t col) {
  const cs_disk_chunk *dc = ut_layout_chunk(l, rec, col);
  ck_assert_msg(dc->offsets_offset != 0, "record %" PRIu64 " column %u has no offsets", rec, col);
  return cs__chunk_base(&l->entries[rec], dc) + dc->offsets_offset;
}

uint64_t ut_layout_validity_offset(const ut_layout *l, uint64_t rec, uint32_t col) {
  const cs_disk_chunk *dc = ut_layout_chunk(l, rec, col);
  ck_assert_msg(dc->validity_offset != 0, "record %" PRIu64 " column %u has no bitmap", rec, col);
  return cs__chunk_base(&l->entries[rec], dc) + dc->validity_offset;
}

void ut_layout_set_chunk(const char *path, ut_layout *l, uint64_t rec, uint32_t col,
                         const cs_disk_chunk *dc) {
  uint32_t nc = l->n_cols;
  /* The record header: its descriptor array, then the two checksums. */
  uint64_t roff = l->entries[rec].record_offset;
  size_t desc_bytes = nc * sizeof(cs_disk_chunk);
  uint8_t *hdr = malloc(sizeof(cs_disk_record) + desc_bytes);
  ck_assert_ptr_nonnull(hdr);
  ut_pread(path, roff, hdr, sizeof(cs_disk_record) + desc_bytes);
  cs_disk_record *h = (cs_disk_record *)(void *)hdr;
  memcpy(hdr + sizeof *h + col * sizeof(cs_disk_chunk), dc, sizeof *dc);
  h->descriptors_checksum = cs__hash(hdr + sizeof *h, desc_bytes);
  h->checksum = cs__hash(h, 56);
  ut_pwrite(path, roff, hdr, sizeof(cs_disk_record) + desc_bytes);
  free(hdr);
  /* The footer: the entry's copy, the seeded entries checksum, the slot. */
  cs_disk_slot *s = &l->slot[l->newest];
  uint8_t *f = malloc(s->footer_bytes);
  ck_assert_ptr_nonnull(f);
  ut_pread(path, s->footer_offset, f, s->footer_bytes);
  uint64_t eb = ut_layout_entry_bytes(l),
           xb = l->footer.layout == CS_FOOTER_LAYOUT_2 ? sizeof(cs_disk_entry_ext) : 0;
  memcpy(f + ut_layout_head_bytes(l) + rec * eb + sizeof(cs_disk_entry) + xb + col * sizeof(cs_disk_chunk),
         dc, sizeof *dc);
  cs_disk_footer *fh = (cs_disk_footer *)(void *)f;
  fh->checksum = cs__hash_seeded(f + sizeof *fh, s->footer_bytes - sizeof *fh, cs__hash(fh, 56));
  ut_pwrite(path, s->footer_offset, f, s->footer_bytes);
  s->footer_checksum = cs__hash(f, s->footer_bytes);
  ut_slot_reseal(s);
  ut_pwrite(path, l->slot_offset, s, sizeof *s);
  free(f);
  l->chunks[rec * nc + col] = *dc;
}

/* ------------------------------------------------- kernel suites' stores */

const cs_column ut_fixed_cols[UT_FIXED_COLS] = {
    {"i8", CS_TYPE_INT8, true},         {"i16", CS_TYPE_INT16, true},    {"i32", CS_TYPE_INT32, true},
    {"i64", CS_TYPE_INT64, true},       {"u8", CS_TYPE_UINT8, true},     {"u16", CS_TYPE_UINT16, true},
    {"u32", CS_TYPE_UINT32, true},      {"f32", CS_TYPE_FLOAT32, true},  {"f64", CS_TYPE_FLOAT64, true},
    {"b", CS_TYPE_BOOL, true},          {"t", CS_TYPE_TEXT, true},       {"nn_i32", CS_TYPE_INT32, false},
    {"nn_f64", CS_TYPE_FLOAT64, false}, {"nn_u8", CS_TYPE_UINT8, false}, {"nn_i16", CS_TYPE_INT16, false},
};

/* Appends one random row of every column to b.  Per-value checks use
** `if (...) ck_abort_msg`: a passing ck_assert is a write to Check's pipe. */
static void put_random_row(cs_batch *b, const cs_column *cols, uint32_t nc, ut_rng *rng,
                           unsigned null_permille, ut_cell *cells) {
  cs_err err = {0};
  for (uint32_t c = 0; c < nc; c++) {
    ut_cell_random(rng, cols[c].type, cols[c].nullable, null_permille, &cells[c]);
    if (batch_put_cell(b, c, cols[c].type, &cells[c], &err) != CS_OK) ck_abort_msg("put: %s", err.msg);
  }
  cs_batch_end_row(b);
}

void ut_kstore_make(ut_kstore *k, const cs_column *cols, uint32_t nc, uint64_t n_rows, ut_kstore_layout lay,
                    uint64_t size, unsigned null_permille, uint64_t seed) {
  k->sc = ut_scratch_new();
  cs_schema schema = {nc, cols};
  cs_writer_options opt = {.record_rows = lay == UT_UNIFORM ? size : (uint64_t)1 << 30};
  cs_writer *w;
  cs_err err = {0};
  ck_assert_msg(cs_writer_create(k->sc.path, &schema, &opt, &w, &err) == CS_OK, "create: %s", err.msg);
  ut_rng rng = ut_rng_seed(seed);
  ut_cell *cells = calloc(nc, sizeof *cells);
  ck_assert_ptr_nonnull(cells);
  for (uint64_t done = 0; done < n_rows;) {
    uint64_t want = lay == UT_UNIFORM ? size * 16 : 1 + ut_rng_below(&rng, size);
    if (want > n_rows - done) want = n_rows - done;
    cs_batch *b;
    ck_assert(cs_batch_new(&schema, &b, &err) == CS_OK);
    for (uint64_t i = 0; i < want; i++) put_random_row(b, cols, nc, &rng, null_permille, cells);
    ck_assert_msg(cs_writer_write(w, b, &err) == CS_OK, "write: %s", err.msg);
    cs_batch_free(b);
    done += want;
  }
  for (uint32_t c = 0; c < nc; c++) free(cells[c].bytes);
  free(cells);
  ck_assert_msg(cs_writer_commit(w, &err) == CS_OK, "commit: %s", err.msg);
  k->s = ut_open_ok(k->sc.path, CS_VERIFY_FULL, "kstore");
  ck_assert_uint_eq(cs_store_rows(k->s), n_rows);
}

void ut_kstore_make_shape(ut_kstore *k, const ut_kshape *sh) {
  ut_kstore_make(k, ut_fixed_cols, UT_FIXED_COLS, sh->rows, sh->lay, sh->size, sh->null_permille, sh->seed);
}

void ut_kstore_free(ut_kstore *k) {
  cs_store_close(k->s);
  ut_scratch_free(&k->sc);
}

uint64_t ut_ref_record(const cs_store *s, uint64_t row) {
  uint64_t lo = 0, hi = cs_store_records(s);
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (cs_store_record_first_row(s, mid) <= row)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

void ut_ref_gather(const cs_store *s, uint32_t col, const uint64_t *rows, uint64_t n, uint8_t *out,
                   uint8_t *ov) {
  size_t w = cs_type_width(cs_store_schema(s)->cols[col].type);
  for (uint64_t i = 0; i < n; i++) {
    if (rows[i] >= cs_store_rows(s)) ck_abort_msg("reference: row %" PRIu64 " out of range", rows[i]);
    uint64_t rec = ut_ref_record(s, rows[i]);
    uint64_t local = rows[i] - cs_store_record_first_row(s, rec);
    const cs_chunk *ch = cs_store_chunk(s, rec, col);
    memcpy(out + i * w, (const uint8_t *)ch->data + local * w, w);
    ov[i] = cs_chunk_is_valid(ch, local) ? 1 : 0;
  }
}

void ut_kernel_config_set(int threads, int prefetch) {
  cs_kernel_config cfg = {threads, prefetch};
  cs_kernel_config_set(&cfg);
}

void ut_kernel_config_reset(void) { ut_kernel_config_set(0, -1); }

/* ------------------------------------------------------------- running */

int ut_run_suite(Suite *suite) {
  SRunner *sr = srunner_create(suite);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

cs_rc ut_membuf_write(void *ctx, const void *p, size_t n, cs_err *err) {
  ut_membuf *m = ctx;
  if (m->n + n > m->cap) {
    size_t cap = (m->n + n) * 2;
    uint8_t *q = realloc(m->p, cap);
    if (!q) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory (test sink)");
    m->p = q;
    m->cap = cap;
  }
  if (n) memcpy(m->p + m->n, p, n);
  m->n += n;
  return CS_OK;
}
