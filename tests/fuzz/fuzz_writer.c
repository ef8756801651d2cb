/*
** fuzz_writer.c - the batch and the writer driven by arbitrary programs,
** checked against a model of what must be in the file.
**
** WHAT IT COVERS.  The input is decoded into a schema (1 to 6 columns of
** any of core's types, nullable or not) and a program of operations on one
** batch and one writer: rows put value by value (integers at their type's
** edges, floats of every bit pattern including NaN payloads, infinities and
** -0.0, TEXT/BLOB of any bytes including empty ones, NULLs, puts of the
** wrong kind that must be refused and change nothing), rows cancelled half
** way, batch truncation and clearing, writes (one batch may be written many
** times), prepare, commit, abort, a second appender that must find the lock
** taken, and snapshots opened between commits.  The first writer creates
** the store; once a commit made it, later writers append to it, each with
** its own record size, so records of every length and the footer rewrite
** of every append are exercised.
**
** THE ORACLE is a plain model: the committed rows, the rows a writer has
** written but not committed, the batch's rows.  Committing moves the
** written rows into the committed ones; aborting drops them and must leave
** the file byte for byte as it was (for a create: no file, no temporary).
** At the end, and whenever the program asks, the store is opened with full
** verification and must hold exactly the committed rows, cell by cell (bit
** for bit for floats, FLOAT32 rounded as the batch rounds it), with the
** generation counted by the model and per-column statistics (NULL count,
** min/max over non-NULL non-NaN values, sortedness) equal to the model's.
** Every snapshot opened along the way must still show the rows it showed.
**
** Files go to a directory under /dev/shm when there is one: a writer
** fsyncs at every commit, which on tmpfs costs nothing.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colstore.h"
#include "fuzz.h"

#define FW_MAX_COLS 6
#define FW_MAX_ROWS 20000u /* committed + pending + batch rows, at most */
#define FW_MAX_OPS 400
#define FW_MAX_SNAPSHOTS 3

/* ---------------------------------------------------------------- model */

typedef struct fw_cell {
  bool null;
  uint64_t bits; /* integers: the int64 read back; FLOAT32: float bits; FLOAT64: double bits */
  uint32_t off;  /* TEXT/BLOB: bytes at g.arena + off */
  uint32_t len;
} fw_cell;

typedef struct fw_rows {
  fw_cell *c; /* n * n_cols cells, row-major; owned */
  uint64_t n, cap;
} fw_rows;

typedef struct fw_snap {
  cs_store *s;
  uint64_t rows; /* committed rows when it was opened */
} fw_snap;

static struct {
  char dir[4096];  /* this process's scratch directory */
  char path[4200]; /* the store */
  uint32_t nc;
  cs_column cols[FW_MAX_COLS];
  char names[FW_MAX_COLS][8];
  cs_schema schema;
  uint8_t *arena; /* the model's TEXT/BLOB bytes */
  size_t arena_n, arena_cap;
  fw_rows committed, pending, batch;
  uint64_t generation; /* of the committed state; 0 = no file */
  bool prepared;       /* the open writer has prepared */
  uint8_t *before;     /* the file when the writer opened (append), for abort */
  size_t before_n;
  fw_snap snaps[FW_MAX_SNAPSHOTS];
  int n_snaps;
} g;

static void dir_clear(void);

/* At exit: the snapshots closed, the scratch directory gone. */
static void dir_remove(void) {
  for (int i = 0; i < g.n_snaps; i++) cs_store_close(g.snaps[i].s);
  g.n_snaps = 0;
  dir_clear();
  rmdir(g.dir);
}

static void dir_init(void) {
  if (g.dir[0]) return;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
  snprintf(g.dir, sizeof g.dir, "%s/fuzz_writer.XXXXXX", base && *base ? base : "/tmp");
  FZ_CHECK(mkdtemp(g.dir) != NULL, "mkdtemp %s: %s", g.dir, strerror(errno));
  atexit(dir_remove);
  snprintf(g.path, sizeof g.path, "%s/w.cst", g.dir);
}

/* Files in the scratch directory (the store, and any temporary left). */
static int dir_files(void) {
  DIR *d = opendir(g.dir);
  FZ_CHECK(d != NULL, "opendir");
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void dir_clear(void) {
  DIR *d = opendir(g.dir);
  FZ_CHECK(d != NULL, "opendir");
  struct dirent *e;
  char p[4400];
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') snprintf(p, sizeof p, "%s/%s", g.dir, e->d_name), unlink(p);
  closedir(d);
}

static uint8_t *file_read(size_t *out_n) {
  int fd = open(g.path, O_RDONLY | O_CLOEXEC);
  FZ_CHECK(fd >= 0, "open %s: %s", g.path, strerror(errno));
  struct stat st;
  FZ_CHECK(fstat(fd, &st) == 0, "fstat");
  size_t n = (size_t)st.st_size;
  uint8_t *p = malloc(n ? n : 1);
  FZ_CHECK(p != NULL, "out of memory");
  FZ_CHECK(pread(fd, p, n, 0) == (ssize_t)n, "short read");
  close(fd);
  *out_n = n;
  return p;
}

static uint32_t arena_put(const void *p, size_t n) {
  if (g.arena_n + n > g.arena_cap) {
    size_t cap = g.arena_cap ? g.arena_cap : 4096;
    while (cap < g.arena_n + n) cap *= 2;
    g.arena = realloc(g.arena, cap);
    FZ_CHECK(g.arena != NULL, "out of memory");
    g.arena_cap = cap;
  }
  uint32_t off = (uint32_t)g.arena_n;
  if (n) memcpy(g.arena + off, p, n);
  g.arena_n += n;
  return off;
}

static fw_cell *rows_push(fw_rows *r) {
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 64;
    r->c = realloc(r->c, r->cap * g.nc * sizeof *r->c);
    FZ_CHECK(r->c != NULL, "out of memory");
  }
  return &r->c[r->n++ * g.nc];
}

static void rows_append(fw_rows *to, const fw_rows *from) {
  for (uint64_t i = 0; i < from->n; i++) memcpy(rows_push(to), &from->c[i * g.nc], g.nc * sizeof(fw_cell));
}

static uint64_t total_rows(void) { return g.committed.n + g.pending.n + g.batch.n; }

/* ----------------------------------------------------------------- values */

/* v as the column keeps it: the batch casts to the storage type (the
** caller range-checks, so the harness casts first, as ext/ would refuse
** what does not fit). */
static int64_t int_cast(cs_type t, int64_t v) {
  switch (t) {
    case CS_TYPE_INT8: return (int8_t)v;
    case CS_TYPE_INT16: return (int16_t)v;
    case CS_TYPE_INT32: return (int32_t)v;
    case CS_TYPE_UINT8: return (uint8_t)v;
    case CS_TYPE_UINT16: return (uint16_t)v;
    case CS_TYPE_UINT32: return (uint32_t)v;
    case CS_TYPE_BOOL: return v & 1;
    default: return v;
  }
}

static uint64_t float_bits(cs_type t, double d) {
  if (t == CS_TYPE_FLOAT32) {
    float f = (float)d;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  uint64_t b;
  memcpy(&b, &d, 8);
  return b;
}

static const int64_t int_edges[] = {0,         1,         -1,        127,       -128,
                                    128,       255,       256,       32767,     -32768,
                                    65535,     65536,     INT32_MAX, INT32_MIN, (int64_t)UINT32_MAX,
                                    INT64_MAX, INT64_MIN, 2,         7};
static const double float_edges[] = {0.0,
                                     -0.0,
                                     1.0,
                                     -1.0,
                                     0.5,
                                     1e300,
                                     -1e300,
                                     3.4028234663852886e38,
                                     3.4028235677973366e38,
                                     1.401298464324817e-45,
                                     4.9406564584124654e-324,
                                     2.2250738585072014e-308,
                                     9007199254740993.0};

static void check_rc(cs_rc rc, const cs_err *err, const char *what) {
  FZ_CHECK(rc == CS_OK, "%s: %s: %s", what, cs_rc_name(rc), err->msg);
}

/* A put the batch must refuse (wrong kind for the column); it must change
** nothing, which the final comparison proves. */
static void put_wrong_kind(cs_batch *b, uint32_t c) {
  cs_type t = g.cols[c].type;
  cs_err err = {0};
  cs_rc rc = cs_type_is_varlen(t)  ? cs_batch_put_i64(b, c, 5, &err)
             : cs_type_is_float(t) ? cs_batch_put_bytes(b, c, "ab", 2, &err)
                                   : cs_batch_put_f64(b, c, 1.5, &err);
  FZ_CHECK(rc == CS_EINVAL && strncmp(err.msg, "colstore: ", 10) == 0, "a wrong-kind put gave %s: %s",
           cs_rc_name(rc), err.msg);
}

/* Puts one value into column c as the input says, recording it in *cell. */
static void put_value(fz_in *in, cs_batch *b, uint32_t c, fw_cell *cell) {
  cs_type t = g.cols[c].type;
  uint8_t k = fz_u8(in);
  cs_err err = {0};
  memset(cell, 0, sizeof *cell);
  if (k % 8 == 7) put_wrong_kind(b, c), k = fz_u8(in);
  if (k % 8 == 0 && (g.cols[c].nullable || (k & 0x40))) {
    /* A NULL in a NOT NULL column: the batch takes it (it does not know
    ** nullability), a write of it must be refused (op_write). */
    check_rc(cs_batch_put_null(b, c, &err), &err, "put_null");
    cell->null = true;
    return;
  }
  if (cs_type_is_varlen(t)) {
    size_t n = k % 8 == 6 ? 0 : fz_u8(in) % 40;
    const uint8_t *p = fz_bytes(in, n, &n);
    check_rc(cs_batch_put_bytes(b, c, p, n, &err), &err, "put_bytes");
    cell->off = arena_put(p, n), cell->len = (uint32_t)n;
  } else if (cs_type_is_float(t)) {
    double d = k % 8 <= 2   ? fz_f64_bits(in)
               : k % 8 <= 4 ? float_edges[fz_u8(in) % (sizeof float_edges / sizeof *float_edges)]
                            : (double)(int8_t)fz_u8(in) / 4.0;
    if (fz_u8(in) & 1) d = -d;
    check_rc(cs_batch_put_f64(b, c, d, &err), &err, "put_f64");
    cell->bits = float_bits(t, d);
  } else {
    int64_t v = k % 8 <= 2   ? (int64_t)fz_u64(in)
                : k % 8 <= 4 ? int_edges[fz_u8(in) % (sizeof int_edges / sizeof *int_edges)]
                             : (int8_t)fz_u8(in);
    v = int_cast(t, v);
    check_rc(cs_batch_put_i64(b, c, v, &err), &err, "put_i64");
    cell->bits = (uint64_t)v;
  }
}

/* ----------------------------------------------------------- reading back */

static bool cell_equal(cs_type t, const fw_cell *want, const cs_chunk *ch, uint64_t k) {
  bool valid = cs_chunk_is_valid(ch, k);
  if (want->null || !valid) return want->null && !valid;
  size_t w = cs_type_width(t);
  if (!w) {
    const uint8_t *p;
    uint64_t len;
    cs_err err;
    if (cs_chunk_varlen(ch, k, &p, &len, &err) != CS_OK) return false;
    return len == want->len && (len == 0 || memcmp(p, g.arena + want->off, len) == 0);
  }
  const uint8_t *d = (const uint8_t *)ch->data + k * w;
  uint64_t got = 0;
  switch (t) {
    case CS_TYPE_INT8: {
      int8_t x;
      memcpy(&x, d, 1);
      got = (uint64_t)(int64_t)x;
      break;
    }
    case CS_TYPE_INT16: {
      int16_t x;
      memcpy(&x, d, 2);
      got = (uint64_t)(int64_t)x;
      break;
    }
    case CS_TYPE_INT32: {
      int32_t x;
      memcpy(&x, d, 4);
      got = (uint64_t)(int64_t)x;
      break;
    }
    case CS_TYPE_UINT16: {
      uint16_t x;
      memcpy(&x, d, 2);
      got = x;
      break;
    }
    case CS_TYPE_UINT32:
    case CS_TYPE_FLOAT32: {
      uint32_t x;
      memcpy(&x, d, 4);
      got = x;
      break;
    }
    case CS_TYPE_UINT8:
    case CS_TYPE_BOOL: got = d[0]; break;
    default: memcpy(&got, d, 8); break; /* INT64, FLOAT64 */
  }
  return got == want->bits;
}

/* The model's statistics of column c over the committed rows. */
static void model_stats(uint32_t c, uint64_t n_rows, cs_column_stats *out) {
  cs_type t = g.cols[c].type;
  bool is_float = cs_type_is_float(t), prev_set = false;
  double fprev = 0;
  int64_t iprev = 0;
  memset(out, 0, sizeof *out);
  out->sorted = !cs_type_is_varlen(t);
  for (uint64_t r = 0; r < n_rows; r++) {
    const fw_cell *cell = &g.committed.c[r * g.nc + c];
    if (cell->null) {
      out->null_count++, out->sorted = false;
      continue;
    }
    if (cs_type_is_varlen(t)) continue;
    if (is_float) {
      double x;
      if (t == CS_TYPE_FLOAT32) {
        float f;
        uint32_t b = (uint32_t)cell->bits;
        memcpy(&f, &b, 4);
        x = f;
      } else {
        memcpy(&x, &cell->bits, 8);
      }
      if (isnan(x)) {
        out->sorted = false;
        continue;
      }
      if (!out->has_minmax) out->min.f = out->max.f = x, out->has_minmax = true;
      if (x < out->min.f) out->min.f = x;
      if (x > out->max.f) out->max.f = x;
      if (prev_set && x < fprev) out->sorted = false;
      if (!prev_set || x > fprev) fprev = x; /* the running maximum */
    } else {
      int64_t x = (int64_t)cell->bits;
      if (!out->has_minmax) out->min.i = out->max.i = x, out->has_minmax = true;
      if (x < out->min.i) out->min.i = x;
      if (x > out->max.i) out->max.i = x;
      if (prev_set && x < iprev) out->sorted = false;
      if (!prev_set || x > iprev) iprev = x;
    }
    prev_set = true;
  }
}

/* s must hold exactly the first n_rows committed rows. */
static void check_store(const cs_store *s, uint64_t n_rows, bool stats, const char *when) {
  const cs_schema *sc = cs_store_schema(s);
  FZ_CHECK(sc->n_cols == g.nc, "%s: %u columns, expected %u", when, sc->n_cols, g.nc);
  for (uint32_t c = 0; c < g.nc; c++)
    FZ_CHECK(sc->cols[c].type == g.cols[c].type && sc->cols[c].nullable == g.cols[c].nullable &&
                 strcmp(sc->cols[c].name, g.cols[c].name) == 0,
             "%s: column %u differs", when, c);
  FZ_CHECK(cs_store_rows(s) == n_rows, "%s: %" PRIu64 " rows, expected %" PRIu64, when, cs_store_rows(s),
           n_rows);
  for (uint64_t r = 0; r < cs_store_records(s); r++) {
    uint64_t first = cs_store_record_first_row(s, r), n = cs_store_record_rows(s, r);
    for (uint32_t c = 0; c < g.nc; c++) {
      const cs_chunk *ch = cs_store_chunk(s, r, c);
      for (uint64_t k = 0; k < n; k++)
        FZ_CHECK(cell_equal(g.cols[c].type, &g.committed.c[(first + k) * g.nc + c], ch, k),
                 "%s: row %" PRIu64 " column %u (%s) differs from what was put", when, first + k, c,
                 cs_type_name(g.cols[c].type));
    }
  }
  if (!stats) return;
  for (uint32_t c = 0; c < g.nc; c++) {
    cs_column_stats got, want;
    cs_store_column_stats(s, c, &got);
    model_stats(c, n_rows, &want);
    bool is_float = cs_type_is_float(g.cols[c].type);
    FZ_CHECK(got.null_count == want.null_count, "%s: column %u: %" PRIu64 " NULLs, expected %" PRIu64, when,
             c, got.null_count, want.null_count);
    FZ_CHECK(got.has_minmax == want.has_minmax, "%s: column %u: has_minmax %d, expected %d", when, c,
             got.has_minmax, want.has_minmax);
    if (want.has_minmax)
      FZ_CHECK(is_float ? got.min.f == want.min.f && got.max.f == want.max.f
                        : got.min.i == want.min.i && got.max.i == want.max.i,
               "%s: column %u: min/max differ from the values put", when, c);
    FZ_CHECK(got.sorted == want.sorted, "%s: column %u: sorted %d, expected %d", when, c, got.sorted,
             want.sorted);
  }
}

static void check_file(const char *when) {
  if (g.generation == 0) {
    FZ_CHECK(dir_files() == 0, "%s: no store was committed, yet the directory holds %d files", when,
             dir_files());
    return;
  }
  cs_store *s = NULL;
  cs_err err = {0};
  cs_rc rc = cs_store_open(g.path, CS_VERIFY_FULL, &s, &err);
  FZ_CHECK(rc == CS_OK, "%s: the store does not open: %s", when, err.msg);
  FZ_CHECK(cs_store_generation(s) == g.generation, "%s: generation %" PRIu64 ", expected %" PRIu64, when,
           cs_store_generation(s), g.generation);
  FZ_CHECK(!cs_store_recovered(s) && !cs_store_slot_damaged(s),
           "%s: a clean store opened as recovered or damaged", when);
  check_store(s, g.committed.n, true, when);
  cs_store_close(s);
}

/* ------------------------------------------------------------ the program */

typedef struct fw_run {
  cs_batch *b;
  cs_writer *w;  /* the open writer, or NULL */
  bool creating; /* w is a create (no committed file yet) */
} fw_run;

static void writer_open(fw_run *r, fz_in *in) {
  if (r->w) return;
  /* Record sizes: small ones (records of a few rows, the last one short),
  ** the default (0), and the largest values there are. */
  uint8_t rb = fz_u8(in);
  uint64_t rr = rb == 255 ? UINT64_MAX - fz_u8(in) % 16 : rb == 254 ? 0 : 1 + (uint64_t)(rb % 40);
  cs_writer_options opt = {.record_rows = rr, .lock_timeout_ms = 0};
  cs_err err = {0};
  if (g.generation == 0) {
    check_rc(cs_writer_create(g.path, &g.schema, &opt, &r->w, &err), &err, "writer_create");
    r->creating = true;
  } else {
    free(g.before);
    g.before = file_read(&g.before_n);
    check_rc(cs_writer_append(g.path, &opt, &r->w, &err), &err, "writer_append");
    r->creating = false;
  }
  g.prepared = false;
  FZ_CHECK(cs_writer_rows(r->w) == g.committed.n, "a new writer counts %" PRIu64 " rows, expected %" PRIu64,
           cs_writer_rows(r->w), g.committed.n);
}

static void op_put_row(fw_run *r, fz_in *in) {
  if (total_rows() >= FW_MAX_ROWS) return;
  fw_cell cells[FW_MAX_COLS];
  uint32_t rot = fz_u8(in) % g.nc; /* columns may come in any order */
  for (uint32_t i = 0; i < g.nc; i++) {
    uint32_t c = (i + rot) % g.nc;
    put_value(in, r->b, c, &cells[c]);
  }
  cs_batch_end_row(r->b);
  memcpy(rows_push(&g.batch), cells, sizeof(fw_cell) * g.nc);
  FZ_CHECK(cs_batch_rows(r->b) == g.batch.n, "batch rows %" PRIu64 ", expected %" PRIu64, cs_batch_rows(r->b),
           g.batch.n);
}

/* Half a row, then dropped: nothing of it may reach the file. */
static void op_cancel_row(fw_run *r, fz_in *in) {
  fw_cell scratch;
  uint32_t n = fz_u8(in) % g.nc;
  for (uint32_t c = 0; c < n; c++) put_value(in, r->b, c, &scratch);
  cs_batch_cancel_row(r->b);
  FZ_CHECK(cs_batch_rows(r->b) == g.batch.n, "cancel_row changed the rows");
}

static void op_truncate(fw_run *r, fz_in *in) {
  uint64_t k = fz_u16(in) % (g.batch.n + 2);
  cs_batch_truncate(r->b, k);
  if (k <= g.batch.n) g.batch.n = k;
  FZ_CHECK(cs_batch_rows(r->b) == g.batch.n, "truncate to %" PRIu64 ": %" PRIu64 " rows", k,
           cs_batch_rows(r->b));
}

static void op_batch_get(fw_run *r, fz_in *in) {
  if (g.batch.n == 0) return;
  uint64_t row = fz_u16(in) % g.batch.n;
  uint32_t c = fz_u8(in) % g.nc;
  cs_type t = g.cols[c].type;
  if (cs_type_is_varlen(t)) return;
  cs_stat v;
  const fw_cell *want = &g.batch.c[row * g.nc + c];
  bool valid = cs_batch_get(r->b, c, row, &v);
  FZ_CHECK(valid == !want->null, "batch_get row %" PRIu64 " column %u: valid %d", row, c, valid);
  if (!valid) return;
  if (t == CS_TYPE_FLOAT32) {
    float f = (float)v.f;
    uint32_t b;
    memcpy(&b, &f, 4);
    FZ_CHECK(b == (uint32_t)want->bits || (isnan(v.f) && (want->bits & 0x7f800000u) == 0x7f800000u),
             "batch_get FLOAT32 differs");
  } else if (t == CS_TYPE_FLOAT64) {
    FZ_CHECK(v.bits == want->bits, "batch_get FLOAT64 differs");
  } else {
    FZ_CHECK(v.i == (int64_t)want->bits,
             "batch_get row %" PRIu64 " column %u: %" PRId64 ", expected %" PRId64, row, c, v.i,
             (int64_t)want->bits);
  }
}

/* Whether a batch row holds a NULL in a NOT NULL column. */
static bool batch_breaks_not_null(void) {
  for (uint64_t i = 0; i < g.batch.n; i++)
    for (uint32_t c = 0; c < g.nc; c++)
      if (!g.cols[c].nullable && g.batch.c[i * g.nc + c].null) return true;
  return false;
}

static void op_write(fw_run *r, fz_in *in) {
  writer_open(r, in);
  cs_err err = {0};
  cs_rc rc = cs_writer_write(r->w, r->b, &err);
  if (g.prepared || batch_breaks_not_null()) {
    FZ_CHECK(rc == CS_EINVAL && strncmp(err.msg, "colstore: ", 10) == 0,
             "a write after prepare or of a NULL into a NOT NULL column gave %s: %s", cs_rc_name(rc),
             err.msg);
    FZ_CHECK(cs_writer_rows(r->w) == g.committed.n + g.pending.n,
             "a refused write changed the writer's rows");
    return;
  }
  check_rc(rc, &err, "writer_write");
  rows_append(&g.pending, &g.batch);
  FZ_CHECK(cs_writer_rows(r->w) == g.committed.n + g.pending.n,
           "writer counts %" PRIu64 " rows, expected %" PRIu64, cs_writer_rows(r->w),
           g.committed.n + g.pending.n);
  if (fz_u8(in) & 1) {
    cs_batch_clear(r->b);
    g.batch.n = 0;
  }
}

static void op_prepare(fw_run *r, fz_in *in) {
  writer_open(r, in);
  cs_err err = {0};
  check_rc(cs_writer_prepare(r->w, &err), &err, "writer_prepare");
  g.prepared = true;
}

static void op_commit(fw_run *r, fz_in *in) {
  writer_open(r, in);
  cs_err err = {0};
  bool changes = r->creating || g.pending.n > 0;
  check_rc(cs_writer_commit(r->w, &err), &err, "writer_commit");
  r->w = NULL;
  rows_append(&g.committed, &g.pending);
  g.pending.n = 0;
  if (changes) g.generation++;
  FZ_CHECK(dir_files() == 1, "after a commit the directory holds %d files", dir_files());
}

static void op_abort(fw_run *r) {
  if (!r->w) return;
  cs_writer_abort(r->w);
  r->w = NULL;
  g.pending.n = 0;
  if (r->creating) {
    FZ_CHECK(dir_files() == 0, "an aborted create left %d files", dir_files());
    return;
  }
  size_t n;
  uint8_t *now = file_read(&n);
  FZ_CHECK(n == g.before_n && memcmp(now, g.before, n) == 0,
           "abort did not restore the file (%zu bytes, was %zu)", n, g.before_n);
  free(now);
}

/* A second appender while one is open must find the store locked. */
static void op_second_writer(fw_run *r) {
  if (!r->w || r->creating) return;
  cs_writer *w2 = NULL;
  cs_err err = {0};
  cs_writer_options opt = {.lock_timeout_ms = 0};
  cs_rc rc = cs_writer_append(g.path, &opt, &w2, &err);
  if (rc == CS_OK) cs_writer_abort(w2);
  FZ_CHECK(rc == CS_EBUSY && strncmp(err.msg, "colstore: ", 10) == 0, "a second appender got %s: %s",
           cs_rc_name(rc), err.msg);
}

static void op_snapshot(void) {
  if (g.generation == 0) return;
  cs_store *s = NULL;
  cs_err err = {0};
  check_rc(cs_store_open(g.path, CS_VERIFY_HEADER, &s, &err), &err, "snapshot open");
  check_store(s, g.committed.n, false, "snapshot");
  if (g.n_snaps == FW_MAX_SNAPSHOTS) {
    cs_store_close(g.snaps[0].s);
    memmove(g.snaps, g.snaps + 1, sizeof g.snaps[0] * (FW_MAX_SNAPSHOTS - 1));
    g.n_snaps--;
  }
  g.snaps[g.n_snaps++] = (fw_snap){s, g.committed.n};
}

static void schema_decode(fz_in *in) {
  g.nc = 1 + fz_u8(in) % FW_MAX_COLS;
  for (uint32_t c = 0; c < g.nc; c++) {
    uint8_t b = fz_u8(in);
    snprintf(g.names[c], sizeof g.names[c], "c%u", c % 10);
    g.cols[c] = (cs_column){g.names[c], (cs_type)(1 + (b & 0x7f) % CS_TYPE_MAX), (b & 0x80) != 0};
  }
  g.schema = (cs_schema){g.nc, g.cols};
}

/* A schema create must refuse (no columns, an unknown type, an empty, too
** long or repeated name): CS_EINVAL, and no file. */
static void bad_schema(fz_in *in) {
  static char long_name[CS_NAME_MAX_BYTES + 2];
  memset(long_name, 'x', CS_NAME_MAX_BYTES + 1);
  cs_column cols[2] = {{"a", CS_TYPE_INT64, false}, {"b", CS_TYPE_TEXT, true}};
  cs_schema sc = {2, cols};
  uint8_t k = fz_u8(in);
  switch (k % 5) {
    case 0: sc.n_cols = 0; break;
    case 1: cols[1].type = (cs_type)(fz_u8(in) % 2 ? 0 : CS_TYPE_MAX + 1 + fz_u8(in) % 100); break;
    case 2: cols[1].name = ""; break;
    case 3: cols[1].name = long_name; break;
    default: cols[1].name = "A"; break;
  }
  cs_writer *w = NULL;
  cs_err err = {0};
  cs_rc rc = cs_writer_create(g.path, &sc, NULL, &w, &err);
  if (rc == CS_OK) cs_writer_abort(w);
  FZ_CHECK(rc == CS_EINVAL && strncmp(err.msg, "colstore: ", 10) == 0, "a bad schema (case %d) gave %s: %s",
           k % 5, cs_rc_name(rc), err.msg);
  FZ_CHECK(dir_files() == 0, "a refused create left files");
}

static bool op_byte_commits(const uint8_t *data, size_t size) { return size > 0 && (data[size - 1] & 1); }

static void reset(void) {
  dir_clear();
  g.arena_n = 0;
  /* Capacities count rows of the previous schema's width: start over. */
  fw_rows *all[] = {&g.committed, &g.pending, &g.batch};
  for (int i = 0; i < 3; i++) free(all[i]->c), all[i]->c = NULL, all[i]->n = all[i]->cap = 0;
  g.generation = 0;
  g.prepared = false;
  for (int i = 0; i < g.n_snaps; i++) cs_store_close(g.snaps[i].s);
  g.n_snaps = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dir_init();
  reset();
  fz_in in = fz_in_make(data, size);
  if (size > 1 && data[0] == 0xff) {
    in.p++, in.n--;
    bad_schema(&in);
    return 0;
  }
  schema_decode(&in);
  fw_run r = {0};
  cs_err err = {0};
  check_rc(cs_batch_new(&g.schema, &r.b, &err), &err, "batch_new");
  for (int ops = 0; in.n > 0 && ops < FW_MAX_OPS; ops++) {
    uint8_t op = fz_u8(&in);
    switch (op % 16) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4: op_put_row(&r, &in); break;
      case 5: op_cancel_row(&r, &in); break;
      case 6: op_truncate(&r, &in); break;
      case 7: cs_batch_clear(r.b), g.batch.n = 0; break;
      case 8:
      case 9: op_write(&r, &in); break;
      case 10: op_prepare(&r, &in); break;
      case 11: op_commit(&r, &in); break;
      case 12: op_abort(&r); break;
      case 13: op_snapshot(); break;
      case 14: op_batch_get(&r, &in); break;
      default:
        if (op & 0x10)
          op_second_writer(&r);
        else if (!r.w)
          check_file("mid-program");
        break;
    }
  }
  /* The end: an open writer commits or aborts as the last byte says. */
  if (r.w) {
    if (op_byte_commits(data, size))
      op_commit(&r, &in);
    else
      op_abort(&r);
  }
  cs_batch_free(r.b);
  check_file("at the end");
  for (int i = 0; i < g.n_snaps; i++) check_store(g.snaps[i].s, g.snaps[i].rows, false, "an old snapshot");
  return 0;
}
