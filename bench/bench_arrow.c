/*
** bench_arrow.c - Arrow IPC in and out: colstore's writer
** (cs_arrow_write.c) and colstore_import of Arrow files (cs_import_arrow.c)
** on the 10M-row bench table.
**
** WHY.  Issue 24's target for the writer: an uncompressed Arrow IPC export
** at 1 GB/s or more.  The writer hands a slice's values and bitmaps to the
** sink where they lie, so its speed should be the sink's; this bench says
** whether it is, and what zstd and lz4 bodies cost.  The import has no
** target of its own; its speed is recorded beside Parquet's
** (bench_parquet.py) so a regression shows.
**
** HOW.  The bench table of bench_import.py and bench_parquet.py: a id
** (INT64, 0..N-1), b uniform in [0, 1) (FLOAT64), c 0..999 (INT64), d
** normal (FLOAT64), N = 10M rows, seed 23 (splitmix64 here, so not the
** same values as bench_import.py's Python draw, the same shape).  The
** table is held in memory as slices of 65,536 rows (a store record's,
** what colstore_export hands a writer) and written:
**   file_none    IPC file, uncompressed, to a file (write(2) per buffer)
**   stream_none  IPC stream, uncompressed, to a file
**   null_none    IPC file, uncompressed, to a sink that drops the bytes
**                (the writer's own cost, no kernel copy)
**   file_zstd, file_lz4  IPC file with zstd (level 1) / LZ4_FRAME bodies
**   raw_write    the 320 MB of values written to a file with no format at
**                all: the ceiling a file sink puts on file_none
** and the files file_none, file_zstd, file_lz4 are imported with cs_import
** (the core API under colstore_import, no SQLite) into a new store:
**   import_none_t1, import_none_t2, import_zstd_t1, import_lz4_t1.
** Before timing, every written file is read back with cs_arrow.c and every
** imported store through cs_store_chunk, and each column's FNV-1a hash of
** its values must equal the source's.  Then the variants run interleaved
** (round r runs each once, rotated by r); each reports the median with min
** and max, in ms and GB/s of the table's 320 MB of values.  The load
** average is printed before and after: other engineers share the host.
**
**     build/bench_arrow [--rows N] [--rounds R] [--dir D] [--only a,b]
**
** --only runs the variants named (bench_export_sql.py runs file_none and
** raw_write beside the SQL export).
*/
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "colstore.h"
#include "../core/import/cs_import.h"
#include "../core/interchange/cs_interchange_internal.h"

#define SLICE 65536u
#define NCOLS 4

static uint64_t rows = 10000000;
static int64_t *col_a, *col_c;
static double *col_b, *col_d;
static char dir[512];

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static void make_table(void) {
  uint64_t s = 23;
  col_a = malloc(rows * 8), col_c = malloc(rows * 8), col_b = malloc(rows * 8), col_d = malloc(rows * 8);
  for (uint64_t i = 0; i < rows; i++) {
    col_a[i] = (int64_t)i;
    col_b[i] = bench_unit_double(bench_splitmix64(&s));
    col_c[i] = (int64_t)(bench_splitmix64(&s) % 1000);
    double u1 = bench_unit_double(bench_splitmix64(&s)) + 1e-300,
           u2 = bench_unit_double(bench_splitmix64(&s));
    col_d[i] = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
  }
}

static void source_hash(uint64_t h[NCOLS]) {
  const void *cols[NCOLS] = {col_a, col_b, col_c, col_d};
  for (int c = 0; c < NCOLS; c++) h[c] = fnv(0xcbf29ce484222325ull, cols[c], rows * 8);
}

static cs_column COLS[NCOLS] = {{"a", CS_TYPE_INT64, false},
                                {"b", CS_TYPE_FLOAT64, false},
                                {"c", CS_TYPE_INT64, false},
                                {"d", CS_TYPE_FLOAT64, false}};

static cs_rc fd_write(void *ctx, const void *p, size_t n, cs_err *err) {
  int fd = *(int *)ctx;
  for (const uint8_t *b = p; n;) {
    ssize_t w = write(fd, b, n);
    if (w <= 0) return cs_err_set(err, CS_EIO, "colstore: write failed");
    b += w, n -= (size_t)w;
  }
  return CS_OK;
}

static cs_rc null_write(void *ctx, const void *p, size_t n, cs_err *err) {
  (void)ctx, (void)p, (void)n, (void)err;
  return CS_OK;
}

static void die(const char *what, const cs_err *err) {
  fprintf(stderr, "bench_arrow: %s: %s\n", what, err->msg);
  exit(1);
}

static void write_file(const char *path, bool stream, cs_out_codec codec, bool null_sink) {
  cs_err err = {0};
  int fd = null_sink ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cs_sink sink = null_sink ? (cs_sink){null_write, NULL} : (cs_sink){fd_write, &fd};
  const cs_format_writer_ops *ops = stream ? &cs_arrow_stream_writer_ops : &cs_arrow_file_writer_ops;
  cs_schema schema = {NCOLS, COLS};
  cs_out_options opt = {.codec = codec};
  cs_format_writer *w;
  if (ops->open(&schema, &opt, sink, &w, &err) != CS_OK) die("open", &err);
  for (uint64_t from = 0; from < rows; from += SLICE) {
    uint64_t n = rows - from < SLICE ? rows - from : SLICE;
    cs_chunk ch[NCOLS] = {{.data = col_a + from, .data_bytes = n * 8},
                          {.data = col_b + from, .data_bytes = n * 8},
                          {.data = col_c + from, .data_bytes = n * 8},
                          {.data = col_d + from, .data_bytes = n * 8}};
    if (ops->write(w, n, ch, &err) != CS_OK) die("write", &err);
  }
  if (ops->finish(w, NULL, &err) != CS_OK) die("finish", &err);
  ops->free(w);
  if (fd >= 0) close(fd);
}

static void file_hash(const char *path, uint64_t h[NCOLS]) {
  cs_err err = {0};
  cs_arrow_file *f;
  if (cs_arrow_open(path, &f, &err) != CS_OK) die(path, &err);
  for (int c = 0; c < NCOLS; c++) h[c] = 0xcbf29ce484222325ull;
  cs_pq_values v = {0};
  for (;;) {
    bool have;
    uint64_t n;
    if (cs_arrow_next_batch(f, &have, &n, &err) != CS_OK) die(path, &err);
    if (!have) break;
    for (int c = 0; c < NCOLS; c++) {
      if (cs_arrow_read_column(f, (uint32_t)c, &v, &err) != CS_OK) die(path, &err);
      h[c] = fnv(h[c], v.data, v.data_bytes);
    }
  }
  cs_pq_values_free(&v);
  cs_arrow_close(f);
}

static void import_file(const char *src, const char *store, uint32_t threads) {
  unlink(store);
  cs_import_options opt = {.threads = threads};
  cs_import_result res;
  cs_err err = {0};
  if (cs_import(store, src, &opt, &res, &err) != CS_OK) die(src, &err);
  if (res.rows != rows)
    fprintf(stderr, "bench_arrow: %s: %llu rows\n", src, (unsigned long long)res.rows), exit(1);
  cs_import_result_free(&res);
}

static void store_hash(const char *path, uint64_t h[NCOLS]) {
  cs_err err = {0};
  cs_store *s;
  if (cs_store_open(path, CS_VERIFY_HEADER, &s, &err) != CS_OK) die(path, &err);
  for (int c = 0; c < NCOLS; c++) {
    h[c] = 0xcbf29ce484222325ull;
    for (uint64_t r = 0; r < cs_store_records(s); r++) {
      const cs_chunk *ch = cs_store_chunk(s, r, (uint32_t)c);
      h[c] = fnv(h[c], ch->data, cs_store_record_rows(s, r) * 8);
    }
  }
  cs_store_close(s);
}

/* The ceiling of a file sink: the four columns' bytes written as they lie. */
static void write_raw(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cs_err err = {0};
  const void *cols[NCOLS] = {col_a, col_b, col_c, col_d};
  for (int c = 0; c < NCOLS; c++)
    if (fd_write(&fd, cols[c], rows * 8, &err) != CS_OK) die(path, &err);
  close(fd);
}

enum { W_FILE, W_STREAM, W_NULL, W_ZSTD, W_LZ4, I_NONE1, I_NONE2, I_ZSTD, I_LZ4, W_RAW, N_VAR };
static const char *const NAMES[N_VAR] = {
    "file_none",      "stream_none",    "null_none",      "file_zstd",     "file_lz4",
    "import_none_t1", "import_none_t2", "import_zstd_t1", "import_lz4_t1", "raw_write"};

static void path_of(char *out, size_t n, const char *name) { bench_path(out, n, "%s/%s", dir, name); }

static void run(int v) {
  char p[600], s[600];
  switch (v) {
    case W_FILE: path_of(p, sizeof p, "none.arrow"), write_file(p, false, CS_OUT_NONE, false); break;
    case W_STREAM: path_of(p, sizeof p, "none.arrows"), write_file(p, true, CS_OUT_NONE, false); break;
    case W_NULL: write_file(NULL, false, CS_OUT_NONE, true); break;
    case W_ZSTD: path_of(p, sizeof p, "zstd.arrow"), write_file(p, false, CS_OUT_ZSTD, false); break;
    case W_LZ4: path_of(p, sizeof p, "lz4.arrow"), write_file(p, false, CS_OUT_LZ4, false); break;
    case W_RAW: path_of(p, sizeof p, "raw.bin"), write_raw(p); break;
    default: {
      const char *src = v == I_ZSTD ? "zstd.arrow" : v == I_LZ4 ? "lz4.arrow" : "none.arrow";
      path_of(p, sizeof p, src);
      path_of(s, sizeof s, "imported.cst");
      import_file(p, s, v == I_NONE2 ? 2 : 1);
    }
  }
}

/* Whether name is one of the comma-separated list. */
static bool chosen(const char *list, const char *name) {
  size_t k = strlen(name);
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    if (n == k && strncmp(p, name, n) == 0) return true;
    p += n + (p[n] == ',');
  }
  return false;
}

int main(int argc, char **argv) {
  int rounds = 5;
  const char *only = NULL;
  snprintf(dir, sizeof dir, "/tmp/colstore-bench-arrow");
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--rows") == 0) rows = strtoull(argv[i + 1], NULL, 10);
    if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--dir") == 0) snprintf(dir, sizeof dir, "%s", argv[i + 1]);
    if (strcmp(argv[i], "--only") == 0) only = argv[i + 1];
  }
  bool on[N_VAR];
  for (int v = 0; v < N_VAR; v++) on[v] = !only || chosen(only, NAMES[v]);
  bench_mkdir_p(dir);
  printf("bench_arrow: %llu rows, %d rounds, load average %.2f, %ld CPUs\n", (unsigned long long)rows, rounds,
         bench_loadavg(), bench_nproc());
  make_table();
  uint64_t want[NCOLS], got[NCOLS];
  source_hash(want);
  /* Every variant once, and its output checked against the source. */
  for (int v = 0; v < N_VAR; v++) {
    if (!on[v]) continue;
    run(v);
    char p[600];
    if (v == W_NULL || v == W_RAW) continue;
    if (v <= W_LZ4) {
      static const char *const files[] = {"none.arrow", "none.arrows", "", "zstd.arrow", "lz4.arrow"};
      path_of(p, sizeof p, files[v]);
      file_hash(p, got);
    } else {
      path_of(p, sizeof p, "imported.cst");
      store_hash(p, got);
    }
    if (memcmp(got, want, sizeof want) != 0) fprintf(stderr, "bench_arrow: %s differs\n", NAMES[v]), exit(1);
  }
  printf("all variants give the source's values\n");
  double *t = calloc((size_t)N_VAR * (size_t)rounds, sizeof *t);
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < N_VAR; k++) {
      int v = (k + r) % N_VAR;
      if (!on[v]) continue;
      uint64_t t0 = bench_now_ns();
      run(v);
      t[v * rounds + r] = (double)(bench_now_ns() - t0) / 1e6;
    }
  double gb = (double)rows * 32 / 1e9;
  for (int v = 0; v < N_VAR; v++) {
    if (!on[v]) continue;
    bench_stats st = bench_stats_of(t + v * rounds, rounds);
    char p[600];
    long long bytes = -1;
    if (v == W_FILE || v == I_NONE1) path_of(p, sizeof p, "none.arrow"), bytes = bench_file_bytes(p);
    if (v == W_ZSTD || v == I_ZSTD) path_of(p, sizeof p, "zstd.arrow"), bytes = bench_file_bytes(p);
    if (v == W_LZ4 || v == I_LZ4) path_of(p, sizeof p, "lz4.arrow"), bytes = bench_file_bytes(p);
    printf("%-15s median %8.1f ms (min %8.1f, max %8.1f)  %5.2f GB/s of values%s", NAMES[v], st.median,
           st.min, st.max, gb / (st.median / 1000), bytes > 0 ? "" : "\n");
    if (bytes > 0) printf("  file %.1f MB\n", (double)bytes / 1e6);
  }
  printf("load average after: %.2f\n", bench_loadavg());
  free(t);
  return 0;
}
