/*
** bench_kernels.c - the core kernels against the limits they are meant to
** approach, in one run, with the targets docs/performance.md records.
**
** HOW IT WORKS
**
** A few stores are written into a temporary directory (removed at exit),
** every value a pure function of (column, row), so the same rows in two
** stores, or in a plain malloc'd array, are the same bytes:
**
**   uni    x FLOAT64, k INT32; default 65536-row records (uniform);
**   irr    a, b, c, d FLOAT64; irregular records of 16..48 rows, as many
**          small INSERT transactions leave them (the search is deep);
**   mid    a FLOAT64; irregular records of 50..250 rows;
**   div_u  x FLOAT64 in uniform records, >= 1000 of them;
**   div_i  the same rows with the first record 8 rows shorter, so the
**          layout is irregular and cs_gather_rows must search.
**
** Each comparison pairs a kernel with its limit: a hand-written loop over
** a raw array holding the same values (memcpy, a random-load loop, a
** branchless compaction, a compare loop), or the kernel it replaces.
** Before anything is timed the two sides must produce identical bytes;
** then they run interleaved (A B A B ...) for the rounds, and the table
** gives each side's median with its min and max, and the ratio of medians.
** The ratio is always "limit time / kernel time" (or "replaced / new"), so
** larger is better and a target reads as a floor.
**
** The kernel-vs-limit rows run both sides on one thread (kernel config
** threads = 1, a serial loop), so the ratio measures the kernel's overhead
** and not the thread count; the rows marked "threaded" repeat a comparison
** with the kernel's own thread count and an OpenMP loop given the same
** count, because a kernel that only wins single-threaded has not won
** (a kernel change is vetted on the real multi-threaded path).
**
** The exit status is 0 whether or not targets are met, and even when the
** two sides of a comparison disagree (that comparison is then reported as
** DISAGREE and not timed; the unit tests are where correctness fails a
** build).  It is nonzero only when a store cannot be set up at all.
**
** Usage: bench_kernels [--quick] [--rows N] [--rounds R] [--dir D]
*/
#include <inttypes.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "colstore.h"

#define MAX_ROUNDS 101

typedef struct opts {
  uint64_t rows;
  int rounds;
  bool quick;
  const char *dir;
} opts;

static void die(const char *what, const cs_err *err) {
  fprintf(stderr, "bench_kernels: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

/* ------------------------------------------------------------------ data */

/* The value of (column seed, row): stateless, so any store or array can
** reproduce any row. */
static uint64_t cell_bits(uint64_t seed, uint64_t row) {
  uint64_t st = seed * 0x632BE59BD9B4E019ull + row;
  return bench_splitmix64(&st);
}
static double cell_f64(uint64_t seed, uint64_t row) { return bench_unit_double(cell_bits(seed, row)); }
static int32_t cell_i32(uint64_t seed, uint64_t row) { return (int32_t)(cell_bits(seed, row) >> 32); }

enum { SEED_X = 1, SEED_K = 2, SEED_A = 3, SEED_B = 4, SEED_C = 5, SEED_D = 6 };

typedef struct colspec {
  const char *name;
  cs_type type;
  uint64_t seed;
} colspec;

/* Writes rows [0, n) of cols; record sizes: uniform `rec` rows, or, with
** irr_lo > 0, random sizes in [irr_lo, irr_hi] (one write per record), or
** first_short rows fewer in the first record. */
static cs_store *store_make(const char *dir, const char *name, const colspec *cols, uint32_t nc, uint64_t n,
                            uint64_t rec, uint64_t irr_lo, uint64_t irr_hi, uint64_t first_short) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.cst", dir, name);
  cs_column cc[8];
  for (uint32_t c = 0; c < nc; c++) cc[c] = (cs_column){cols[c].name, cols[c].type, false};
  cs_schema schema = {nc, cc};
  cs_writer_options opt = {.record_rows = irr_lo || first_short ? (uint64_t)1 << 40 : rec, .replace = true};
  cs_writer *w;
  cs_err err = {0};
  if (cs_writer_create(path, &schema, &opt, &w, &err)) die("create", &err);
  cs_batch *b;
  if (cs_batch_new(&schema, &b, &err)) die("batch", &err);
  uint64_t rng = 12345;
  for (uint64_t at = 0; at < n;) {
    uint64_t k;
    if (irr_lo)
      k = irr_lo + bench_splitmix64(&rng) % (irr_hi - irr_lo + 1);
    else if (first_short)
      k = at == 0 ? rec - first_short : rec;
    else
      k = rec * 16;
    if (k > n - at) k = n - at;
    cs_batch_clear(b);
    for (uint64_t r = at; r < at + k; r++) {
      for (uint32_t c = 0; c < nc; c++) {
        cs_rc rc = cols[c].type == CS_TYPE_FLOAT64 ? cs_batch_put_f64(b, c, cell_f64(cols[c].seed, r), &err)
                                                   : cs_batch_put_i64(b, c, cell_i32(cols[c].seed, r), &err);
        if (rc) die("put", &err);
      }
      cs_batch_end_row(b);
    }
    if (cs_writer_write(w, b, &err)) die("write", &err);
    at += k;
  }
  cs_batch_free(b);
  if (cs_writer_commit(w, &err)) die("commit", &err);
  cs_store *s;
  if (cs_store_open(path, CS_VERIFY_HEADER, &s, &err)) die("open", &err);
  return s;
}

/* ---------------------------------------------------------------- timing */

typedef void (*run_fn)(void *ctx);

typedef struct side {
  const char *label;
  run_fn fn;
  void *ctx;
  const void *out; /* compared after the warm-up run */
  size_t out_bytes;
} side;

typedef struct result {
  const char *name;
  bench_stats kernel, limit; /* milliseconds */
  double ratio;              /* median(limit) / median(kernel) */
  double target;             /* floor for ratio; 0 = information only */
  const char *meaning;
} result;

#define MAX_RESULTS 64
static result results[MAX_RESULTS];
static int n_results;
static int rounds_g;
static int failures_identity;

static double time_once(const side *s) {
  uint64_t t0 = bench_now_ns();
  s->fn(s->ctx);
  return (double)(bench_now_ns() - t0) / 1e6;
}

/* Warm-up + identity check, then interleaved rounds. */
static void compare(const char *name, side kernel, side limit, double target, const char *meaning) {
  kernel.fn(kernel.ctx);
  limit.fn(limit.ctx);
  size_t nb = kernel.out_bytes < limit.out_bytes ? kernel.out_bytes : limit.out_bytes;
  if (kernel.out_bytes != limit.out_bytes || (nb && memcmp(kernel.out, limit.out, nb) != 0)) {
    printf("  %-44s DISAGREE: %s and %s give different bytes; not timed\n", name, kernel.label, limit.label);
    failures_identity++;
    return;
  }
  double tk[MAX_ROUNDS], tl[MAX_ROUNDS];
  for (int r = 0; r < rounds_g; r++) {
    if (r & 1) {
      tl[r] = time_once(&limit);
      tk[r] = time_once(&kernel);
    } else {
      tk[r] = time_once(&kernel);
      tl[r] = time_once(&limit);
    }
  }
  result *res = &results[n_results++];
  res->name = name;
  res->kernel = bench_stats_of(tk, rounds_g);
  res->limit = bench_stats_of(tl, rounds_g);
  res->ratio = res->limit.median / res->kernel.median;
  res->target = target;
  res->meaning = meaning;
  printf("  %-44s %8.2f ms vs %8.2f ms  ratio %5.2f\n", name, res->kernel.median, res->limit.median,
         res->ratio);
  fflush(stdout);
}

static void set_threads(int t) {
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  cfg.threads = t;
  cs_kernel_config_set(&cfg);
}

static void set_prefetch(int p) {
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  cfg.prefetch = p;
  cs_kernel_config_set(&cfg);
}

/* ------------------------------------------------------------- contexts */

typedef struct gctx {
  const cs_store *s;
  uint32_t col;
  uint32_t n_cols; /* multi-column variants */
  const uint64_t *rows;
  const uint32_t *bins_in;
  uint32_t *bins;
  uint64_t n;
  uint8_t *out;       /* n * 8 (or n_cols * n * 8) */
  const double *flat; /* raw limit array */
  const int32_t *flat_i32;
  const uint8_t *mask;
  uint64_t *out_rows;
  int threads; /* raw loops: OpenMP threads (1 = serial) */
  cs_pred pred;
  double lo, hi;
  int32_t ilo, ihi;
} gctx;

static void k_range(void *p) {
  gctx *c = p;
  cs_gather_range(c->s, c->col, 0, c->n, c->out, NULL);
}
static void l_memcpy(void *p) {
  gctx *c = p;
  memcpy(c->out, c->flat, c->n * 8);
}
static void l_memcpy_mapped(void *p) {
  gctx *c = p;
  uint64_t at = 0;
  for (uint64_t r = 0; r < cs_store_records(c->s); r++) {
    uint64_t n = cs_store_record_rows(c->s, r);
    memcpy(c->out + at * 8, cs_store_chunk(c->s, r, c->col)->data, n * 8);
    at += n;
  }
}
static void k_rows(void *p) {
  gctx *c = p;
  cs_gather_rows(c->s, c->col, c->rows, c->n, c->out, NULL);
}
static void k_sorted(void *p) {
  gctx *c = p;
  cs_gather_sorted(c->s, c->col, c->rows, c->n, c->out, NULL);
}
static void k_sorted_pf0(void *p) {
  set_prefetch(0);
  k_sorted(p);
  set_prefetch(-1);
}
static void k_sorted_pf_auto(void *p) { k_sorted(p); }
static void l_random_loads(void *p) {
  gctx *c = p;
  double *o = (double *)(void *)c->out;
  const double *f = c->flat;
  const uint64_t *rows = c->rows;
  uint64_t n = c->n;
#pragma omp parallel for num_threads(c->threads) if (c->threads > 1) schedule(static)
  for (uint64_t i = 0; i < n; i++) o[i] = f[rows[i]];
}
static void k_rows_multi(void *p) {
  gctx *c = p;
  for (uint32_t col = 0; col < c->n_cols; col++)
    cs_gather_rows(c->s, col, c->rows, c->n, c->out + col * c->n * 8, NULL);
}
static void k_binned_multi(void *p) {
  gctx *c = p;
  cs_bins_compute(c->s, c->rows, c->n, c->bins);
  for (uint32_t col = 0; col < c->n_cols; col++)
    cs_gather_rows_binned(c->s, col, c->rows, c->bins, c->n, c->out + col * c->n * 8, NULL);
}
static void k_mask(void *p) {
  gctx *c = p;
  cs_gather_mask(c->s, c->col, c->mask, 0, c->n, c->out, NULL);
}
/* The branchless compaction a programmer would write: store every value,
** advance by the mask bit (the output has one spare slot). */
static void l_mask(void *p) {
  gctx *c = p;
  double *o = (double *)(void *)c->out;
  const double *f = c->flat;
  const uint8_t *m = c->mask;
  uint64_t k = 0;
  for (uint64_t i = 0; i < c->n; i++) {
    o[k] = f[i];
    k += m[i] != 0;
  }
}
static void k_mask_rows(void *p) {
  gctx *c = p;
  cs_mask_to_rows(c->mask, c->n, 0, c->out_rows);
}
static void l_mask_rows(void *p) {
  gctx *c = p;
  uint64_t k = 0;
  for (uint64_t i = 0; i < c->n; i++) {
    c->out_rows[k] = i;
    k += c->mask[i] != 0;
  }
}
static void k_pred(void *p) {
  gctx *c = p;
  cs_pred_eval(c->s, &c->pred, 1, 0, c->n, c->out, NULL);
}
static void l_pred_f64(void *p) {
  gctx *c = p;
  const double *x = c->flat;
  uint8_t *m = c->out;
  double lo = c->lo, hi = c->hi;
  uint64_t n = c->n;
#pragma omp parallel for num_threads(c->threads) if (c->threads > 1) schedule(static)
  for (uint64_t i = 0; i < n; i++) m[i] = (uint8_t)((x[i] >= lo) & (x[i] <= hi));
}
static void l_pred_i32(void *p) {
  gctx *c = p;
  const int32_t *x = c->flat_i32;
  uint8_t *m = c->out;
  int32_t lo = c->ilo, hi = c->ihi;
  uint64_t n = c->n;
#pragma omp parallel for num_threads(c->threads) if (c->threads > 1) schedule(static)
  for (uint64_t i = 0; i < n; i++) m[i] = (uint8_t)((x[i] >= lo) & (x[i] <= hi));
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static side mk(const char *label, run_fn fn, void *ctx, const void *out, size_t out_bytes) {
  side s = {label, fn, ctx, out, out_bytes};
  return s;
}

/* ------------------------------------------------------------------ main */

static int usage(void) {
  fprintf(stderr, "usage: bench_kernels [--quick] [--rows N] [--rounds R] [--dir DIR]\n");
  return 2;
}

int main(int argc, char **argv) {
  /* The threaded rows give both sides one thread count.  Load-aware
  ** kernels (docs/tuning.md, "Threads on a busy host") would read the raw
  ** loops' still-spinning OpenMP workers as load and drop to one thread;
  ** COLSTORE_LOAD_AWARE=1 in the environment measures them that way. */
  setenv("COLSTORE_LOAD_AWARE", "0", 0);
  opts o = {8u << 20, 9, false, NULL};
  bool rows_set = false, rounds_set = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      o.quick = true;
    else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
      o.rows = strtoull(argv[++i], NULL, 10), rows_set = true;
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      o.rounds = atoi(argv[++i]), rounds_set = true;
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      o.dir = argv[++i];
    else
      return usage();
  }
  if (o.quick && !rows_set) o.rows = 1u << 20;
  if (o.quick && !rounds_set) o.rounds = 5;
  if (o.rounds < 1) o.rounds = 1;
  if (o.rounds > MAX_ROUNDS) o.rounds = MAX_ROUNDS;
  if (o.rows < 100000) o.rows = 100000;
  rounds_g = o.rounds;
  uint64_t N = o.rows;

  char dir[4096];
  const char *base = o.dir ? o.dir : getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/colstore-bench-kernels-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) die("cannot create a work directory", NULL);

  char cpu[256];
  bench_cpu_model(cpu, sizeof cpu);
  printf("bench_kernels: %s, %ld cpus; %" PRIu64 " rows, %d rounds%s\n", cpu, bench_nproc(), N, o.rounds,
         o.quick ? " (quick)" : "");
  printf("ratio = limit (or replaced) time / kernel time; a target is a floor\n\n");

  uint64_t t0 = bench_now_ns();
  const colspec uni_cols[] = {{"x", CS_TYPE_FLOAT64, SEED_X}, {"k", CS_TYPE_INT32, SEED_K}};
  const colspec irr_cols[] = {{"a", CS_TYPE_FLOAT64, SEED_A},
                              {"b", CS_TYPE_FLOAT64, SEED_B},
                              {"c", CS_TYPE_FLOAT64, SEED_C},
                              {"d", CS_TYPE_FLOAT64, SEED_D}};
  const colspec div_cols[] = {{"x", CS_TYPE_FLOAT64, SEED_X}};
  uint64_t div_rec = N / 2048 < 64 ? 64 : (N / 2048 + 7) / 8 * 8; /* >= 1000 records */
  uint64_t N_irr = N / 2;
  cs_store *uni = store_make(dir, "uni", uni_cols, 2, N, CS_DEFAULT_RECORD_ROWS, 0, 0, 0);
  cs_store *irr = store_make(dir, "irr", irr_cols, 4, N_irr, 0, 16, 48, 0);
  cs_store *mid = store_make(dir, "mid", irr_cols, 1, N_irr, 0, 50, 250, 0);
  cs_store *div_u = store_make(dir, "div_u", div_cols, 1, N, div_rec, 0, 0, 0);
  cs_store *div_i = store_make(dir, "div_i", div_cols, 1, N, div_rec, 0, 0, 8);
  printf("stores: uni %" PRIu64 " records, irr %" PRIu64 " records, mid %" PRIu64 " records, div %" PRIu64
         "/%" PRIu64 " records of %" PRIu64 " rows (%.1f s to write)\n\n",
         cs_store_records(uni), cs_store_records(irr), cs_store_records(mid), cs_store_records(div_u),
         cs_store_records(div_i), div_rec, (double)(bench_now_ns() - t0) / 1e9);

  double *flat = xmalloc(N * 8);
  int32_t *flat_k = xmalloc(N * 4);
  for (uint64_t r = 0; r < N; r++) flat[r] = cell_f64(SEED_X, r), flat_k[r] = cell_i32(SEED_K, r);
  uint64_t rng = 777;
  uint64_t K = N / 2;
  uint64_t *unsorted = xmalloc(K * 8), *unsorted_irr = xmalloc(K * 8), *sorted_irr = xmalloc(K * 8);
  for (uint64_t i = 0; i < K; i++) unsorted[i] = bench_splitmix64(&rng) % N;
  uint64_t K_irr = N_irr / 2;
  for (uint64_t i = 0; i < K_irr; i++) unsorted_irr[i] = bench_splitmix64(&rng) % N_irr;
  for (uint64_t i = 0; i < K_irr; i++) sorted_irr[i] = bench_splitmix64(&rng) % N_irr;
  qsort(sorted_irr, K_irr, 8, cmp_u64);
  uint8_t *out_a = xmalloc(N * 8 * 4 + 64), *out_b = xmalloc(N * 8 * 4 + 64);
  memset(out_a, 0, N * 8 * 4 + 64);
  memset(out_b, 0, N * 8 * 4 + 64);
  uint32_t *bins = xmalloc(N * 4);
  int auto_threads = cs_kernel_threads(K);

  /* 1. Contiguous range vs memcpy. */
  set_threads(1);
  gctx c1 = {.s = uni, .col = 0, .n = N, .out = out_a, .flat = flat};
  gctx c1l = c1;
  c1l.out = out_b;
  compare("contiguous range vs memcpy", mk("range", k_range, &c1, out_a, N * 8),
          mk("memcpy", l_memcpy, &c1l, out_b, N * 8), 0.90, "memcpy / range");

  /* The same copy's own limit: memcpy record by record out of the mapping
  ** (page-cache pages copy measurably slower than a malloc'd array). */
  gctx c1m = c1l;
  compare("contiguous range vs memcpy from the mapping (info)", mk("range", k_range, &c1, out_a, N * 8),
          mk("memcpy", l_memcpy_mapped, &c1m, out_b, N * 8), 0, "memcpy / range");

  /* 2. Unsorted gather vs random loads from one flat array. */
  gctx c2 = {.s = uni, .col = 0, .rows = unsorted, .n = K, .out = out_a, .flat = flat, .threads = 1};
  gctx c2l = c2;
  c2l.out = out_b;
  compare("unsorted rows vs raw random loads", mk("rows", k_rows, &c2, out_a, K * 8),
          mk("raw", l_random_loads, &c2l, out_b, K * 8), 0.80, "raw / rows");
  set_threads(0);
  c2l.threads = auto_threads;
  compare("unsorted rows vs raw random loads (threaded)", mk("rows", k_rows, &c2, out_a, K * 8),
          mk("raw", l_random_loads, &c2l, out_b, K * 8), 0.80, "raw / rows");
  set_threads(1);

  /* The same gather on an irregular store (the search bounds it; info). */
  {
    gctx ci = {.s = div_i, .col = 0, .rows = unsorted, .n = K, .out = out_a, .flat = flat, .threads = 1};
    gctx cil = ci;
    cil.out = out_b;
    compare("unsorted rows, irregular store, vs raw (info)", mk("rows", k_rows, &ci, out_a, K * 8),
            mk("raw", l_random_loads, &cil, out_b, K * 8), 0, "raw / rows");
  }

  /* 3. Sorted cursor vs binary-search gather, on sorted input. */
  gctx c3 = {.s = irr, .col = 0, .rows = sorted_irr, .n = K_irr, .out = out_a};
  gctx c3l = c3;
  c3l.out = out_b;
  compare("sorted cursor vs binary search, records 16-48", mk("sorted", k_sorted, &c3, out_a, K_irr * 8),
          mk("search", k_rows, &c3l, out_b, K_irr * 8), 5.0, "search / cursor");
  set_threads(0);
  compare("sorted cursor vs binary search (threaded)", mk("sorted", k_sorted, &c3, out_a, K_irr * 8),
          mk("search", k_rows, &c3l, out_b, K_irr * 8), 5.0, "search / cursor");
  set_threads(1);
  gctx c3m = c3, c3ml = c3l;
  c3m.s = mid, c3ml.s = mid;
  compare("sorted cursor vs binary search, records 50-250", mk("sorted", k_sorted, &c3m, out_a, K_irr * 8),
          mk("search", k_rows, &c3ml, out_b, K_irr * 8), 5.0, "search / cursor");
  /* Prefetch in the sorted walk: the auto default (128) against off. */
  {
    uint64_t K_sp = K_irr / 16;
    uint64_t *sparse = xmalloc(K_sp * 8);
    for (uint64_t i = 0; i < K_sp; i++) sparse[i] = sorted_irr[i * 16];
    gctx cp = {.s = irr, .col = 0, .rows = sparse, .n = K_sp, .out = out_a};
    gctx cpl = cp;
    cpl.out = out_b;
    compare("sorted sparse, prefetch auto vs 0 (info)", mk("auto", k_sorted_pf_auto, &cp, out_a, K_sp * 8),
            mk("pf0", k_sorted_pf0, &cpl, out_b, K_sp * 8), 0, "pf0 / auto");
    gctx cd = {.s = irr, .col = 0, .rows = sorted_irr, .n = K_irr, .out = out_a};
    gctx cdl = cd;
    cdl.out = out_b;
    compare("sorted dense, prefetch auto vs 0 (info)", mk("auto", k_sorted_pf_auto, &cd, out_a, K_irr * 8),
            mk("pf0", k_sorted_pf0, &cdl, out_b, K_irr * 8), 0, "pf0 / auto");
    free(sparse);
  }

  /* 4. Uniform division vs search, >= 1000 records. */
  gctx c4 = {.s = div_u, .col = 0, .rows = unsorted, .n = K, .out = out_a};
  gctx c4l = c4;
  c4l.s = div_i, c4l.out = out_b;
  compare("uniform division vs search (rows)", mk("divide", k_rows, &c4, out_a, K * 8),
          mk("search", k_rows, &c4l, out_b, K * 8), 1.3, "search / divide");
  set_threads(0);
  compare("uniform division vs search (threaded)", mk("divide", k_rows, &c4, out_a, K * 8),
          mk("search", k_rows, &c4l, out_b, K * 8), 1.3, "search / divide");
  set_threads(1);

  /* 5. Mask compaction vs raw loops, at three densities. */
  uint8_t *mask = xmalloc(N);
  uint64_t *rows_a = xmalloc(N * 8 + 8), *rows_b = xmalloc(N * 8 + 8);
  static const double densities[] = {0.05, 0.5, 0.95};
  static const char *const mask_names[] = {"mask gather vs raw compaction, p=0.05",
                                           "mask gather vs raw compaction, p=0.5",
                                           "mask gather vs raw compaction, p=0.95"};
  static const char *const rows_names[] = {"mask to rows vs raw loop, p=0.05",
                                           "mask to rows vs raw loop, p=0.5",
                                           "mask to rows vs raw loop, p=0.95"};
  for (int d = 0; d < 3; d++) {
    for (uint64_t i = 0; i < N; i++) mask[i] = bench_unit_double(bench_splitmix64(&rng)) < densities[d];
    uint64_t cnt = cs_mask_count(mask, N);
    gctx c5 = {.s = uni, .col = 0, .n = N, .out = out_a, .flat = flat, .mask = mask, .out_rows = rows_a};
    gctx c5l = c5;
    c5l.out = out_b, c5l.out_rows = rows_b;
    compare(mask_names[d], mk("mask", k_mask, &c5, out_a, cnt * 8), mk("raw", l_mask, &c5l, out_b, cnt * 8),
            0.5, "raw / mask");
    compare(rows_names[d], mk("mask_to_rows", k_mask_rows, &c5, rows_a, cnt * 8),
            mk("raw", l_mask_rows, &c5l, rows_b, cnt * 8), 0.5, "raw / kernel");
  }

  /* 6. Predicate evaluation vs raw compare loops. */
  {
    gctx c6 = {.s = uni,
               .n = N,
               .out = out_a,
               .flat = flat,
               .flat_i32 = flat_k,
               .threads = 1,
               .lo = 0.25,
               .hi = 0.75};
    c6.pred = (cs_pred){.col = 0,
                        .op = CS_CMP_BETWEEN,
                        .a = {.kind = CS_VAL_FLOAT, .f = 0.25},
                        .b = {.kind = CS_VAL_FLOAT, .f = 0.75}};
    gctx c6l = c6;
    c6l.out = out_b;
    compare("predicate f64 BETWEEN vs raw loop", mk("pred", k_pred, &c6, out_a, N),
            mk("raw", l_pred_f64, &c6l, out_b, N), 0.5, "raw / pred");
    gctx c7 = c6;
    c7.ilo = -1000000000, c7.ihi = 1000000000;
    c7.pred = (cs_pred){.col = 1,
                        .op = CS_CMP_BETWEEN,
                        .a = {.kind = CS_VAL_INT, .i = c7.ilo},
                        .b = {.kind = CS_VAL_INT, .i = c7.ihi}};
    gctx c7l = c7;
    c7l.out = out_b;
    compare("predicate i32 BETWEEN vs raw loop", mk("pred", k_pred, &c7, out_a, N),
            mk("raw", l_pred_i32, &c7l, out_b, N), 0.5, "raw / pred");
    set_threads(0);
    c6l.threads = cs_kernel_threads(N);
    compare("predicate f64 BETWEEN vs raw loop (threaded)", mk("pred", k_pred, &c6, out_a, N),
            mk("raw", l_pred_f64, &c6l, out_b, N), 0.5, "raw / pred");
    set_threads(1);
  }

  /* 7. Bins reuse vs per-column search, 4 columns. */
  {
    gctx c8 = {.s = irr, .n_cols = 4, .rows = unsorted_irr, .n = K_irr, .out = out_a, .bins = bins};
    gctx c8l = c8;
    c8l.out = out_b;
    compare("bins reuse vs per-column search, 4 columns",
            mk("bins", k_binned_multi, &c8, out_a, 4 * K_irr * 8),
            mk("search", k_rows_multi, &c8l, out_b, 4 * K_irr * 8), 1.0, "search / bins");
    set_threads(0);
    compare("bins reuse vs per-column search (threaded)",
            mk("bins", k_binned_multi, &c8, out_a, 4 * K_irr * 8),
            mk("search", k_rows_multi, &c8l, out_b, 4 * K_irr * 8), 1.0, "search / bins");
    set_threads(1);
  }
  set_threads(0);

  printf("\n%-46s %26s %26s %7s %8s  %s\n", "comparison", "kernel ms median (min-max)",
         "limit ms median (min-max)", "ratio", "target", "");
  int pass = 0, fail = 0;
  for (int i = 0; i < n_results; i++) {
    const result *r = &results[i];
    char k[64], l[64], t[16];
    snprintf(k, sizeof k, "%.2f (%.2f-%.2f)", r->kernel.median, r->kernel.min, r->kernel.max);
    snprintf(l, sizeof l, "%.2f (%.2f-%.2f)", r->limit.median, r->limit.min, r->limit.max);
    if (r->target > 0)
      snprintf(t, sizeof t, ">= %.2f", r->target);
    else
      snprintf(t, sizeof t, "-");
    const char *verdict = r->target <= 0 ? "info" : r->ratio >= r->target ? "PASS" : "FAIL";
    if (r->target > 0) r->ratio >= r->target ? pass++ : fail++;
    printf("%-46s %26s %26s %7.2f %8s  %s  (%s)\n", r->name, k, l, r->ratio, t, verdict, r->meaning);
  }
  printf(
      "\n%d PASS, %d FAIL, %d comparisons not timed (outputs disagreed); %d threads for the threaded rows; "
      "%.1f s\n",
      pass, fail, failures_identity, auto_threads, (double)(bench_now_ns() - t0) / 1e9);

  cs_store_close(uni), cs_store_close(irr), cs_store_close(mid), cs_store_close(div_u), cs_store_close(div_i);
  const char *names[] = {"uni", "irr", "mid", "div_u", "div_i"};
  for (int i = 0; i < 5; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.cst", dir, names[i]);
    remove(path);
  }
  rmdir(dir);
  free(flat), free(flat_k), free(unsorted), free(unsorted_irr), free(sorted_irr), free(out_a), free(out_b),
      free(bins);
  free(mask), free(rows_a), free(rows_b);
  return 0;
}
