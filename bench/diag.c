/*
** diag.c - performance diagnostics harness: re-derives, from fresh
** measurements on the host it runs on, the answers to four questions about
** the gather kernels, and prints a recommendation for this host.
**
**   1. knee       how many kernel threads before throughput saturates, per op
**                 (rows: cs_gather_rows, sorted: cs_gather_sorted,
**                 mask: cs_gather_mask, all columns; pred: cs_pred_eval);
**                 the cap is swept over 1 .. 2 x cores so the optimum is
**                 bracketed.
**   2. binding    OMP_PROC_BIND unset / close / spread (OMP_PLACES=cores) at
**                 each op's knee, set in the child's environment before it
**                 starts.  colstore.h has no runtime binding API yet, so only
**                 the environment path is measured.
**   3. placement  a store written under `numactl --interleave=all` against
**                 one written under `numactl --membind=0`, read unbound; only
**                 with numactl and more than one NUMA node, else reported as
**                 not measurable.
**   4. ompinit    whether setting OMP_PROC_BIND from inside the process has
**                 any effect: worker threads' affinity masks
**                 (sched_getaffinity inside a parallel region) with the env
**                 set before exec, setenv before the first parallel region,
**                 setenv after it, and a runtime pin from inside a region.
**
** METHODOLOGY (bench/README.md; each rule silently corrupts the
** result when dropped):
**   - every measurement runs in a fresh process: this program fork+execs
**     itself with --child and the configuration in argv/env, because the
**     thread cap, the OpenMP pool's affinity and page placement are
**     process-global and persistent;
**   - every measurement reads its own store file, written for it by the core
**     writer in another fresh process (--write-store, under numactl for the
**     placement experiment) and removed afterwards unless --keep;
**   - the child checks the kernel's output against values recomputed from
**     the generator (every value is a pure function of seed, column, row)
**     before anything is timed, then closes and reopens the store so round 0
**     is the first touch of a fresh mapping (reported apart as "cold"; with
**     --evict the file's pages are also dropped from the page cache, so
**     round 0 reads from storage); rounds 1..R are the warm rounds, reported
**     as median [min, max]; every child's output digest must match the other
**     children of the same op;
**   - configurations are interleaved at the process level (for each pass,
**     every cap, every op) and --passes pools the warm rounds of several;
**   - a difference is reported only when the medians differ by more than 5%
**     AND the warm [min, max] ranges do not overlap; otherwise "no difference
**     (within spread)".
**
** Usage: diag [--quick] [--rows N] [--cols C] [--indices N] [--rounds R]
**             [--passes P] [--threads "1 2 4"] [--ops rows,sorted,mask,pred]
**             [--experiments knee,binding,placement,ompinit] [--outdir D]
**             [--keep] [--evict] [--seed S]
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colstore.h"

#define MAX_THREADS_SWEEP 32
#define MAX_SAMPLES 256
#define TOLERANCE 0.05

enum { OP_ROWS, OP_SORTED, OP_MASK, OP_PRED, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"rows", "sorted", "mask", "pred"};
static const char *const op_desc[OP_COUNT] = {
    "cs_gather_rows, unsorted positions, every column", "cs_gather_sorted, sorted positions, every column",
    "cs_gather_mask, 25% mask, every column", "cs_pred_eval, c0 BETWEEN 0.25 AND 0.5"};

/* ------------------------------------------------------------- helpers */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* The value of (col, row): uniform in [0, 1), a pure function. */
static double cell(uint64_t seed, uint32_t col, uint64_t row) {
  return (double)(mix64(seed ^ ((uint64_t)col << 48) ^ row) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t digest_bytes(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = mix64(h ^ w);
  }
  for (; i < n; i++) h = mix64(h ^ b[i]);
  return h;
}

static double loadavg(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

typedef struct stats {
  double median, min, max;
  int n;
} stats;

static stats stats_of(const double *v, int n) {
  stats s = {NAN, NAN, NAN, n};
  if (n <= 0) return s;
  double *c = malloc((size_t)n * sizeof *c);
  if (!c) return s;
  memcpy(c, v, (size_t)n * sizeof *c);
  qsort(c, (size_t)n, sizeof *c, cmp_double);
  s.median = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  s.min = c[0];
  s.max = c[n - 1];
  free(c);
  return s;
}

/* -1: a faster than b; 1: a slower; 0: no difference (within spread). */
static int compare_stats(const stats *a, const stats *b) {
  if (a->n <= 0 || b->n <= 0) return 0;
  bool overlap = a->min <= b->max && b->min <= a->max;
  double ratio = a->median / b->median;
  if (overlap || fabs(ratio - 1) <= TOLERANCE) return 0;
  return ratio < 1 ? -1 : 1;
}

static void die(const char *what, const cs_err *err) {
  fprintf(stderr, "diag: %s: %s\n", what, err && err->msg[0] ? err->msg : strerror(errno));
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

/* Threads of the current OpenMP pool (n of them) whose affinity mask is a
** single CPU; *out_width gets the widest mask seen. */
static int pool_single_cpu(int n, int *out_width) {
  int single = 0, width = 0;
#pragma omp parallel num_threads(n) reduction(+ : single) reduction(max : width)
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      int c = CPU_COUNT(&set);
      single += c == 1;
      width = c > width ? c : width;
    }
  }
  *out_width = width;
  return single;
}

static const char *proc_bind_name(void) {
  switch (omp_get_proc_bind()) {
    case omp_proc_bind_false: return "false";
    case omp_proc_bind_true: return "true";
    case omp_proc_bind_master: return "master";
    case omp_proc_bind_close: return "close";
    case omp_proc_bind_spread: return "spread";
    default: return "?";
  }
}

/* ------------------------------------------------------ store writing */

static int write_store_main(const char *path, uint64_t rows, uint32_t cols, uint64_t seed) {
  cs_column colv[64];
  char names[64][8];
  if (cols == 0 || cols > 64) {
    fprintf(stderr, "diag: --cols must be 1..64\n");
    return 2;
  }
  for (uint32_t c = 0; c < cols; c++) {
    snprintf(names[c], sizeof names[c], "c%u", c);
    colv[c] = (cs_column){names[c], CS_TYPE_FLOAT64, false};
  }
  cs_schema schema = {cols, colv};
  cs_writer_options wo = {.replace = true};
  cs_writer *w;
  cs_batch *b;
  cs_err err = {0};
  if (cs_writer_create(path, &schema, &wo, &w, &err)) die("create store", &err);
  if (cs_batch_new(&schema, &b, &err)) die("batch", &err);
  for (uint64_t r0 = 0; r0 < rows; r0 += CS_DEFAULT_RECORD_ROWS) {
    uint64_t n = rows - r0 < CS_DEFAULT_RECORD_ROWS ? rows - r0 : CS_DEFAULT_RECORD_ROWS;
    cs_batch_clear(b);
    for (uint64_t r = r0; r < r0 + n; r++) {
      for (uint32_t c = 0; c < cols; c++)
        if (cs_batch_put_f64(b, c, cell(seed, c, r), &err)) die("put", &err);
      cs_batch_end_row(b);
    }
    if (cs_writer_write(w, b, &err)) die("write", &err);
  }
  cs_batch_free(b);
  if (cs_writer_prepare(w, &err)) die("prepare", &err);
  if (cs_writer_commit(w, &err)) die("commit", &err);
  return 0;
}

/* Fraction of the file's pages resident in the page cache (-1 unknown). */
static double resident_fraction(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  struct stat st;
  double frac = -1;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      size_t page = (size_t)sysconf(_SC_PAGESIZE), np = ((size_t)st.st_size + page - 1) / page, in = 0;
      unsigned char *vec = malloc(np);
      if (vec && mincore(m, (size_t)st.st_size, vec) == 0) {
        for (size_t i = 0; i < np; i++) in += vec[i] & 1;
        frac = (double)in / (double)np;
      }
      free(vec);
      munmap(m, (size_t)st.st_size);
    }
  }
  close(fd);
  return frac;
}

static void evict_file(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

/* --------------------------------------------------------- child: measure */

typedef struct child_opts {
  int op, threads, rounds;
  const char *store;
  uint64_t indices, seed;
  bool evict;
  int rt_binding; /* cs_binding: set through the core API before any kernel */
} child_opts;

typedef struct op_state {
  int op;
  uint32_t cols;
  uint64_t n_rows, n_in; /* store rows; positions (rows/sorted) */
  uint64_t *pos;         /* rows/sorted positions */
  uint8_t *mask;         /* mask op input (n_rows) */
  uint64_t mask_n;       /* selected rows of mask */
  double **out;          /* per column */
  uint8_t *pmask;        /* pred output (n_rows) */
  uint64_t out_n;        /* elements per column written */
} op_state;

static void op_run(op_state *st, const cs_store *s) {
  switch (st->op) {
    case OP_ROWS:
      for (uint32_t c = 0; c < st->cols; c++) cs_gather_rows(s, c, st->pos, st->n_in, st->out[c], NULL);
      st->out_n = st->n_in;
      break;
    case OP_SORTED:
      for (uint32_t c = 0; c < st->cols; c++) cs_gather_sorted(s, c, st->pos, st->n_in, st->out[c], NULL);
      st->out_n = st->n_in;
      break;
    case OP_MASK:
      for (uint32_t c = 0; c < st->cols; c++)
        st->out_n = cs_gather_mask(s, c, st->mask, 0, st->n_rows, st->out[c], NULL);
      break;
    case OP_PRED: {
      cs_pred p;
      memset(&p, 0, sizeof p);
      p.col = 0;
      p.op = CS_CMP_BETWEEN;
      p.a.kind = CS_VAL_FLOAT;
      p.a.f = 0.25;
      p.b.kind = CS_VAL_FLOAT;
      p.b.f = 0.5;
      cs_pred_eval(s, &p, 1, 0, st->n_rows, st->pmask, NULL);
      st->out_n = st->n_rows;
      break;
    }
  }
}

/* Checks the output against the generator; returns the number of
** mismatching elements (0 = identical). */
static uint64_t op_check(const op_state *st, uint64_t seed) {
  uint64_t bad = 0;
  if (st->op == OP_PRED) {
    for (uint64_t r = 0; r < st->n_rows; r++) {
      double v = cell(seed, 0, r);
      bad += st->pmask[r] != (uint8_t)(v >= 0.25 && v <= 0.5);
    }
    return bad;
  }
  for (uint32_t c = 0; c < st->cols; c++) {
    if (st->op == OP_MASK) {
      uint64_t k = 0;
      for (uint64_t r = 0; r < st->n_rows; r++)
        if (st->mask[r]) bad += k < st->out_n && st->out[c][k++] != cell(seed, c, r);
      bad += k != st->out_n;
    } else {
      for (uint64_t i = 0; i < st->n_in; i++) bad += st->out[c][i] != cell(seed, c, st->pos[i]);
    }
  }
  return bad;
}

static uint64_t op_digest(const op_state *st) {
  uint64_t h = 0x636f6c73746f7265ull;
  if (st->op == OP_PRED) return digest_bytes(h, st->pmask, st->n_rows);
  for (uint32_t c = 0; c < st->cols; c++) h = digest_bytes(h, st->out[c], st->out_n * sizeof(double));
  return h;
}

static int child_main(const child_opts *o) {
  cs_err err = {0};
  cs_store *s;
  if (cs_store_open(o->store, CS_VERIFY_HEADER, &s, &err)) die("open store", &err);
  op_state st;
  memset(&st, 0, sizeof st);
  st.op = o->op;
  st.cols = cs_store_schema(s)->n_cols;
  st.n_rows = cs_store_rows(s);
  st.n_in = o->indices ? o->indices : st.n_rows / 4;
  uint64_t rng = o->seed * 31 + 7;
  if (st.op == OP_ROWS) {
    st.pos = xmalloc(st.n_in * sizeof *st.pos);
    for (uint64_t i = 0; i < st.n_in; i++) st.pos[i] = mix64(rng + i) % st.n_rows;
  } else if (st.op == OP_SORTED) {
    /* Non-decreasing positions with random gaps averaging n_rows / n_in. */
    st.pos = xmalloc(st.n_in * sizeof *st.pos);
    uint64_t span = 2 * st.n_rows / st.n_in, r = 0;
    if (span < 1) span = 1;
    for (uint64_t i = 0; i < st.n_in; i++) {
      r += mix64(rng + i) % span;
      st.pos[i] = r < st.n_rows ? r : st.n_rows - 1;
    }
  } else if (st.op == OP_MASK) {
    st.mask = xmalloc(st.n_rows);
    for (uint64_t r = 0; r < st.n_rows; r++) st.mask[r] = (mix64(rng + r) & 3) == 0;
    st.mask_n = cs_mask_count(st.mask, st.n_rows);
  }
  uint64_t per_col = st.op == OP_MASK ? st.mask_n : st.n_in;
  if (st.op == OP_PRED) {
    st.pmask = xmalloc(st.n_rows);
    memset(st.pmask, 0, st.n_rows);
  } else {
    st.out = xmalloc(st.cols * sizeof *st.out);
    for (uint32_t c = 0; c < st.cols; c++) {
      st.out[c] = xmalloc(per_col * sizeof(double));
      memset(st.out[c], 0, per_col * sizeof(double)); /* fault the output before timing */
    }
  }
  cs_kernel_config kc = {o->threads, -1};
  cs_kernel_config_set(&kc);
  cs_binding_set((cs_binding)o->rt_binding);
  uint64_t elems = st.op == OP_ROWS || st.op == OP_SORTED ? st.n_in : st.n_rows;
  int eff = cs_kernel_threads(elems);

  /* Identical-output check before timing. */
  op_run(&st, s);
  uint64_t bad = op_check(&st, o->seed);
  if (bad) {
    printf("RESULT check=FAIL bad=%" PRIu64 "\n", bad);
    fflush(stdout);
    cs_store_close(s);
    return 3;
  }
  /* A fresh mapping, so round 0 is the first touch in this process. */
  cs_store_close(s);
  if (o->evict) evict_file(o->store);
  double resident = resident_fraction(o->store);
  if (cs_store_open(o->store, CS_VERIFY_HEADER, &s, &err)) die("reopen store", &err);

  double t0 = now_ms();
  op_run(&st, s);
  double cold = now_ms() - t0;
  bad = op_check(&st, o->seed);
  double warm[MAX_SAMPLES];
  int nw = o->rounds < MAX_SAMPLES ? o->rounds : MAX_SAMPLES;
  for (int r = 0; r < nw && !bad; r++) {
    t0 = now_ms();
    op_run(&st, s);
    warm[r] = now_ms() - t0;
  }
  if (!bad) bad = op_check(&st, o->seed);
  int width = 0, single = pool_single_cpu(eff, &width);
  printf("RESULT check=%s eff=%d cold=%.4f resident=%.3f aff=%d/%d width=%d bind=%s elems=%" PRIu64
         " digest=%016" PRIx64 " warm=",
         bad ? "FAIL" : "ok", eff, cold, resident, single, eff, width, proc_bind_name(),
         st.op == OP_PRED ? st.n_rows : (uint64_t)st.cols * per_col, op_digest(&st));
  for (int r = 0; r < nw; r++) printf("%s%.4f", r ? "," : "", warm[r]);
  char eff_bind[128];
  cs_binding_effective(eff_bind, sizeof eff_bind);
  printf("\nRTBIND %s\n", eff_bind);
  fflush(stdout);
  cs_store_close(s);
  return bad ? 3 : 0;
}

/* ------------------------------------------------------- child: ompinit */

static int ompinit_main(const char *variant, int nthreads) {
  int width = 0, single;
  if (strcmp(variant, "setenv-before-first-region") == 0) {
    setenv("OMP_PROC_BIND", "close", 1);
    setenv("OMP_PLACES", "cores", 1);
  } else if (strcmp(variant, "setenv-after-init") == 0) {
    pool_single_cpu(nthreads, &width); /* OpenMP is now initialised */
    setenv("OMP_PROC_BIND", "close", 1);
    setenv("OMP_PLACES", "cores", 1);
  } else if (strcmp(variant, "runtime-pin-in-region") == 0) {
    int ncpu = omp_get_num_procs();
#pragma omp parallel num_threads(nthreads)
    {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(omp_get_thread_num() % ncpu, &set);
      sched_setaffinity(0, sizeof set, &set);
    }
  }
  single = pool_single_cpu(nthreads, &width);
  printf("OMPINIT single=%d/%d width=%d bind=%s\n", single, nthreads, width, proc_bind_name());
  fflush(stdout);
  return 0;
}

/* ----------------------------------------------------------------- parent */

typedef struct opts {
  bool quick, keep, evict;
  uint64_t rows, indices, seed;
  uint32_t cols;
  int rounds, passes;
  int threads[MAX_THREADS_SWEEP], n_threads;
  bool ops[OP_COUNT];
  bool exp_knee, exp_binding, exp_placement, exp_ompinit;
  char outdir[1024];
} opts;

static char self_exe[4096];
static char numactl_path[4096];

static bool find_numactl(void) {
  const char *path = getenv("PATH");
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin");
  for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    snprintf(numactl_path, sizeof numactl_path, "%s/numactl", d);
    if (access(numactl_path, X_OK) == 0) return true;
  }
  numactl_path[0] = 0;
  return false;
}

/* Runs argv (argv[0] is the program to exec) in a fresh process with a
** cleaned environment plus env[] ("K=V"); returns its stdout (malloc'd) and
** its exit status in *status. */
static char *spawn(char *const argv[], const char *const env[], int *status) {
  int fd[2];
  if (pipe(fd)) die("pipe", NULL);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork", NULL);
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    close(fd[1]);
    static const char *const clean[] = {"OMP_PROC_BIND",     "OMP_PLACES",   "OMP_NUM_THREADS",
                                        "GOMP_CPU_AFFINITY", "KMP_AFFINITY", "OMP_DYNAMIC"};
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) unsetenv(clean[i]);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("MKL_NUM_THREADS", "1", 1);
    for (size_t i = 0; env && env[i]; i++) {
      char kv[256];
      snprintf(kv, sizeof kv, "%s", env[i]);
      char *eq = strchr(kv, '=');
      if (eq) {
        *eq = 0;
        setenv(kv, eq + 1, 1);
      }
    }
    execv(argv[0], argv);
    _exit(127);
  }
  close(fd[1]);
  size_t cap = 4096, len = 0;
  char *out = xmalloc(cap);
  for (;;) {
    if (len + 1024 > cap) {
      cap *= 2;
      char *grown = realloc(out, cap);
      if (!grown) die("out of memory", NULL);
      out = grown;
    }
    ssize_t n = read(fd[0], out + len, cap - len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  out[len] = 0;
  close(fd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return out;
}

static unsigned store_serial;

/* Writes a fresh store for one measurement (in a fresh process, under
** numactl when policy is given); returns its path in out and the seconds. */
static double make_store(const opts *o, const char *policy, char *out, size_t n) {
  snprintf(out, n, "%s/diag-%d-%u.cst", o->outdir, (int)getpid(), store_serial++);
  char rows[32], cols[32], seed[32];
  snprintf(rows, sizeof rows, "%" PRIu64, o->rows);
  snprintf(cols, sizeof cols, "%u", o->cols);
  snprintf(seed, sizeof seed, "%" PRIu64, o->seed);
  char *argv[12];
  int a = 0;
  if (policy) {
    argv[a++] = numactl_path;
    argv[a++] = (char *)policy;
  }
  argv[a++] = self_exe;
  argv[a++] = "--write-store";
  argv[a++] = out;
  argv[a++] = rows;
  argv[a++] = cols;
  argv[a++] = seed;
  argv[a] = NULL;
  int status;
  double t0 = now_ms();
  free(spawn(argv, NULL, &status));
  if (status) {
    fprintf(stderr, "diag: writing %s failed (status %d)\n", out, status);
    exit(2);
  }
  return (now_ms() - t0) / 1e3;
}

typedef struct result {
  bool ok;
  int eff;
  double cold, resident;
  int aff_single, aff_n, width;
  char bind[16];
  uint64_t elems, digest;
  double warm[MAX_SAMPLES];
  int nw;
} result;

static bool parse_result(const char *text, result *r) {
  memset(r, 0, sizeof *r);
  const char *line = strstr(text, "RESULT ");
  if (!line) return false;
  char check[8] = "";
  if (sscanf(line, "RESULT check=%7s", check) != 1 || strcmp(check, "ok") != 0) return false;
  if (sscanf(line,
             "RESULT check=ok eff=%d cold=%lf resident=%lf aff=%d/%d width=%d bind=%15s elems=%" SCNu64
             " digest=%" SCNx64,
             &r->eff, &r->cold, &r->resident, &r->aff_single, &r->aff_n, &r->width, r->bind, &r->elems,
             &r->digest) != 9)
    return false;
  const char *w = strstr(line, "warm=");
  if (!w) return false;
  w += 5;
  while (*w && *w != '\n' && r->nw < MAX_SAMPLES) {
    char *end;
    double v = strtod(w, &end);
    if (end == w) break;
    r->warm[r->nw++] = v;
    w = *end == ',' ? end + 1 : end;
  }
  r->ok = true;
  return true;
}

/* A pooled cell: every warm round and every cold round of one config. */
typedef struct cell_acc {
  double warm[MAX_SAMPLES];
  int nw;
  double cold[16];
  int nc;
  int eff;
  uint64_t elems;
  double pass_med[8]; /* each process's warm median, in order */
  int np;
} cell_acc;

static cell_acc knee_acc[OP_COUNT][MAX_THREADS_SWEEP], bind_acc[OP_COUNT][5], place_acc[OP_COUNT][2];
static uint64_t op_digest_seen[OP_COUNT];
static bool op_digest_set[OP_COUNT];
static int failures;

/* One measurement: fresh store, fresh process; prints its line. */
static bool measure(const opts *o, const char *exp, int op, int threads, const char *bind, const char *policy,
                    cell_acc *acc) {
  char store[1200];
  double wsec = make_store(o, policy, store, sizeof store);
  char opn[16], thr[16], rounds[16], idx[32], seed[32];
  snprintf(opn, sizeof opn, "%s", op_names[op]);
  snprintf(thr, sizeof thr, "%d", threads);
  snprintf(rounds, sizeof rounds, "%d", o->rounds);
  snprintf(idx, sizeof idx, "%" PRIu64, o->indices);
  snprintf(seed, sizeof seed, "%" PRIu64, o->seed);
  char *argv[20];
  int a = 0;
  argv[a++] = self_exe;
  argv[a++] = "--child";
  argv[a++] = opn;
  argv[a++] = "--store";
  argv[a++] = store;
  argv[a++] = "--threads";
  argv[a++] = thr;
  argv[a++] = "--rounds";
  argv[a++] = rounds;
  argv[a++] = "--indices";
  argv[a++] = idx;
  argv[a++] = "--seed";
  argv[a++] = seed;
  if (o->evict) argv[a++] = "--evict";
  bool runtime = bind && strncmp(bind, "rt-", 3) == 0;
  if (runtime) {
    argv[a++] = "--rt-binding";
    argv[a++] = (char *)bind + 3;
  }
  argv[a] = NULL;
  const char *env[4] = {NULL, NULL, NULL, NULL};
  char bindkv[64];
  if (bind && !runtime && strcmp(bind, "unset") != 0) {
    snprintf(bindkv, sizeof bindkv, "OMP_PROC_BIND=%s", bind);
    env[0] = bindkv;
    if (strcmp(bind, "false") != 0) env[1] = "OMP_PLACES=cores";
  }
  int status;
  char *text = spawn(argv, env, &status);
  result r;
  bool ok = status == 0 && parse_result(text, &r);
  if (!o->keep) unlink(store);
  printf("[%s] op=%-6s thr=%-2d bind=%-9s place=%-10s ", exp, op_names[op], threads, bind ? bind : "unset",
         policy ? policy : "default");
  if (!ok) {
    const char *res = strstr(text, "RESULT");
    printf("FAILED (status %d) %.*s\n", status, res ? (int)strcspn(res, "\n") : 0, res ? res : "");
    free(text);
    failures++;
    return false;
  }
  char rtb[128] = "";
  const char *rl = strstr(text, "RTBIND ");
  if (rl) snprintf(rtb, sizeof rtb, "%.*s", (int)strcspn(rl + 7, "\n"), rl + 7);
  free(text);
  if (!op_digest_set[op]) {
    op_digest_seen[op] = r.digest;
    op_digest_set[op] = true;
  }
  bool same = op_digest_seen[op] == r.digest;
  if (!same) failures++;
  stats s = stats_of(r.warm, r.nw);
  printf(
      "eff=%d cold=%.2fms warm med=%.2fms [%.2f, %.2f] n=%d %.0f Melem/s res=%.0f%% aff=%d/%d(width %d) "
      "omp_bind=%s cs_binding=\"%s\" check=ok digest=%s write=%.1fs\n",
      r.eff, r.cold, s.median, s.min, s.max, s.n, (double)r.elems / (s.median * 1e3), r.resident * 100,
      r.aff_single, r.aff_n, r.width, r.bind, rtb, same ? "same" : "DIFFERENT", wsec);
  fflush(stdout);
  if (acc) {
    for (int i = 0; i < r.nw && acc->nw < MAX_SAMPLES; i++) acc->warm[acc->nw++] = r.warm[i];
    if (acc->nc < 16) acc->cold[acc->nc++] = r.cold;
    if (acc->np < 8) acc->pass_med[acc->np++] = s.median;
    acc->eff = r.eff;
    acc->elems = r.elems;
  }
  return same;
}

/* compare_stats over pooled rounds, and then only a difference that every
** process pair (pass by pass) shows in the same direction by more than the
** tolerance: one slow process must not make a verdict. */
static int compare_cells(const cell_acc *a, const cell_acc *b) {
  stats sa = stats_of(a->warm, a->nw), sb = stats_of(b->warm, b->nw);
  int c = compare_stats(&sa, &sb);
  int np = a->np < b->np ? a->np : b->np;
  for (int p = 0; c != 0 && p < np; p++) {
    double ratio = a->pass_med[p] / b->pass_med[p];
    if (!(c < 0 ? ratio < 1 - TOLERANCE : ratio > 1 + TOLERANCE)) c = 0;
  }
  return c;
}

/* Binding is measured at the knee, but never below 2 threads (when the host
** has them): one pinned thread says nothing about close against spread. */
static int bind_threads(int knee, int cores) { return knee < 2 && cores >= 2 ? 2 : knee; }

static void usage(void) {
  printf(
      "usage: diag [--quick] [--rows N] [--cols C] [--indices N] [--rounds R] [--passes P]\n"
      "            [--threads \"1 2 4\"] [--ops rows,sorted,mask,pred]\n"
      "            [--experiments knee,binding,placement,ompinit] [--outdir D] [--keep] [--evict] [--seed "
      "S]\n"
      "Re-derives the thread knee, binding, placement and OpenMP-init answers on this host;\n"
      "every measurement runs in a fresh process on its own store file (see bench/README.md).\n");
}

static bool list_has(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n) {
    bool start = p == list || p[-1] == ',' || p[-1] == ' ';
    bool end = p[n] == 0 || p[n] == ',' || p[n] == ' ';
    if (start && end) return true;
  }
  return false;
}

int main(int argc, char **argv) {
  /* Child modes first: they must do nothing else before their work. */
  if (argc >= 6 && strcmp(argv[1], "--write-store") == 0)
    return write_store_main(argv[2], strtoull(argv[3], NULL, 10), (uint32_t)strtoul(argv[4], NULL, 10),
                            strtoull(argv[5], NULL, 10));
  if (argc >= 4 && strcmp(argv[1], "--ompinit") == 0) return ompinit_main(argv[2], atoi(argv[3]));
  if (argc >= 3 && strcmp(argv[1], "--child") == 0) {
    child_opts c = {-1, 0, 3, NULL, 0, 1, false, CS_BINDING_OFF};
    for (int i = 0; i < OP_COUNT; i++)
      if (strcmp(argv[2], op_names[i]) == 0) c.op = i;
    for (int i = 3; i < argc; i++) {
      const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
      if (!strcmp(a, "--store"))
        c.store = v, i++;
      else if (!strcmp(a, "--threads"))
        c.threads = atoi(v), i++;
      else if (!strcmp(a, "--rounds"))
        c.rounds = atoi(v), i++;
      else if (!strcmp(a, "--indices"))
        c.indices = strtoull(v, NULL, 10), i++;
      else if (!strcmp(a, "--seed"))
        c.seed = strtoull(v, NULL, 10), i++;
      else if (!strcmp(a, "--evict"))
        c.evict = true;
      else if (!strcmp(a, "--rt-binding")) {
        c.rt_binding = !strcmp(v, "close")    ? CS_BINDING_CLOSE
                       : !strcmp(v, "spread") ? CS_BINDING_SPREAD
                                              : CS_BINDING_OFF;
        i++;
      }
    }
    if (c.op < 0 || !c.store) {
      fprintf(stderr, "diag: bad --child arguments\n");
      return 2;
    }
    return child_main(&c);
  }

  opts o;
  memset(&o, 0, sizeof o);
  o.seed = 42;
  o.rounds = -1;
  o.passes = -1;
  const char *ops = "rows,sorted,mask,pred", *exps = "knee,binding,placement,ompinit", *threads = NULL;
  uint64_t rows = 0, indices = 0;
  uint32_t cols = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (!strcmp(a, "--quick"))
      o.quick = true;
    else if (!strcmp(a, "--keep"))
      o.keep = true;
    else if (!strcmp(a, "--evict"))
      o.evict = true;
    else if (!strcmp(a, "--rows") && has)
      rows = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--cols") && has)
      cols = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--indices") && has)
      indices = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--rounds") && has)
      o.rounds = atoi(argv[++i]);
    else if (!strcmp(a, "--passes") && has)
      o.passes = atoi(argv[++i]);
    else if (!strcmp(a, "--seed") && has)
      o.seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--threads") && has)
      threads = argv[++i];
    else if (!strcmp(a, "--ops") && has)
      ops = argv[++i];
    else if (!strcmp(a, "--experiments") && has)
      exps = argv[++i];
    else if (!strcmp(a, "--outdir") && has)
      snprintf(o.outdir, sizeof o.outdir, "%s", argv[++i]);
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return 0;
    } else {
      fprintf(stderr, "diag: unknown argument %s\n", a);
      usage();
      return 2;
    }
  }
  o.rows = rows ? rows : o.quick ? 4000000 : 32000000;
  o.cols = cols ? cols : 4;
  o.indices = indices ? indices : o.rows / 4;
  if (o.rounds < 1) o.rounds = o.quick ? 3 : 7;
  if (o.rounds > MAX_SAMPLES / 4) o.rounds = MAX_SAMPLES / 4;
  if (o.passes < 1) o.passes = o.quick ? 1 : 2;
  if (o.passes > 4) o.passes = 4;
  if (o.cols < 1 || o.cols > 64 || o.rows < 1024 || o.indices < 1) {
    fprintf(stderr, "diag: need --cols 1..64, --rows >= 1024, --indices >= 1\n");
    return 2;
  }
  for (int i = 0; i < OP_COUNT; i++) o.ops[i] = list_has(ops, op_names[i]);
  o.exp_knee = list_has(exps, "knee");
  o.exp_binding = list_has(exps, "binding");
  o.exp_placement = list_has(exps, "placement");
  o.exp_ompinit = list_has(exps, "ompinit");

  int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  if (threads) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", threads);
    for (char *save = NULL, *t = strtok_r(buf, " ,", &save); t && o.n_threads < MAX_THREADS_SWEEP;
         t = strtok_r(NULL, " ,", &save))
      if (atoi(t) > 0) o.threads[o.n_threads++] = atoi(t);
  } else if (2 * cores <= 8) {
    for (int t = 1; t <= 2 * cores; t++) o.threads[o.n_threads++] = t;
  } else {
    for (int t = 1; t < 2 * cores && o.n_threads < MAX_THREADS_SWEEP - 2; t *= 2)
      o.threads[o.n_threads++] = t;
    bool have = false;
    for (int i = 0; i < o.n_threads; i++) have |= o.threads[i] == cores;
    if (!have) o.threads[o.n_threads++] = cores;
    o.threads[o.n_threads++] = 2 * cores;
    for (int i = 1; i < o.n_threads; i++) /* insertion sort */
      for (int j = i; j > 0 && o.threads[j - 1] > o.threads[j]; j--) {
        int x = o.threads[j];
        o.threads[j] = o.threads[j - 1];
        o.threads[j - 1] = x;
      }
  }
  if (o.n_threads == 0) {
    fprintf(stderr, "diag: --threads lists no thread count\n");
    return 2;
  }

  ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  if (n <= 0) die("readlink /proc/self/exe", NULL);
  self_exe[n] = 0;
  bool made_dir = false;
  if (!o.outdir[0]) {
    const char *tmp = getenv("TMPDIR");
    struct stat st;
    if (tmp && *tmp)
      snprintf(o.outdir, sizeof o.outdir, "%s/colstore-diag", tmp);
    else if (stat("build", &st) == 0 && S_ISDIR(st.st_mode))
      snprintf(o.outdir, sizeof o.outdir, "build/diag-data");
    else
      snprintf(o.outdir, sizeof o.outdir, "/tmp/colstore-diag");
  }
  struct stat dst;
  if (mkdir(o.outdir, 0755) == 0)
    made_dir = true;
  else if (errno != EEXIST)
    die(o.outdir, NULL);
  if (stat(o.outdir, &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    fprintf(stderr, "diag: --outdir %s is not a directory\n", o.outdir);
    return 2;
  }

  cs_fingerprint fp;
  cs_fingerprint_get(&fp);
  bool have_numactl = find_numactl();
  double t_start = now_ms(), load_start = loadavg();
  printf("colstore diag %s: cpu=%s cores=%d sockets=%d numa_nodes=%d llc=%" PRIu64 " KiB numactl=%s\n",
         CS_VERSION_STRING, fp.cpu_model, cores, fp.sockets, fp.numa_nodes, fp.llc_bytes >> 10,
         have_numactl ? numactl_path : "absent");
  printf("load average at start: %.2f (a busy host widens every spread)\n", load_start);
  printf("store: %" PRIu64 " rows x %u FLOAT64 cols (%.0f MiB), %" PRIu64
         " positions (rows/sorted), rounds: 1 cold + %d warm per process, passes=%d, outdir=%s%s\n",
         o.rows, o.cols, (double)o.rows * o.cols * 8 / 1048576.0, o.indices, o.rounds, o.passes, o.outdir,
         o.evict ? ", --evict (round 0 reads from storage)" : "");
  printf("thread caps swept:");
  for (int i = 0; i < o.n_threads; i++) printf(" %d", o.threads[i]);
  printf("%s\n", o.threads[o.n_threads - 1] >= 2 * cores ? "" : "  (WARNING: does not reach 2 x cores)");
  printf(
      "cold = round 0, the first touch of a fresh mapping in a fresh process; warm = median [min, max] of "
      "rounds 1..R\n\n");

  int knee[OP_COUNT];
  for (int op = 0; op < OP_COUNT; op++) knee[op] = cores;
  bool knee_measured[OP_COUNT] = {false}, knee_bracketed[OP_COUNT] = {false};
  int knee_fastest[OP_COUNT] = {0};
  stats knee_stats[OP_COUNT][MAX_THREADS_SWEEP];

  /* ---- 1. knee */
  if (o.exp_knee) {
    printf("== 1. thread knee (binding unset, default placement)\n");
    for (int p = 0; p < o.passes; p++)
      for (int t = 0; t < o.n_threads; t++)
        for (int op = 0; op < OP_COUNT; op++)
          if (o.ops[op]) measure(&o, "knee", op, o.threads[t], NULL, NULL, &knee_acc[op][t]);
    for (int op = 0; op < OP_COUNT; op++) {
      if (!o.ops[op]) continue;
      int best = -1;
      for (int t = 0; t < o.n_threads; t++) {
        knee_stats[op][t] = stats_of(knee_acc[op][t].warm, knee_acc[op][t].nw);
        if (knee_acc[op][t].nw && (best < 0 || knee_stats[op][t].median < knee_stats[op][best].median))
          best = t;
      }
      if (best < 0) continue;
      int k = best;
      for (int t = 0; t < best; t++)
        if (knee_acc[op][t].nw && compare_cells(&knee_acc[op][t], &knee_acc[op][best]) == 0) {
          k = t;
          break;
        }
      knee[op] = o.threads[k];
      knee_fastest[op] = o.threads[best];
      knee_measured[op] = true;
      knee_bracketed[op] = k < o.n_threads - 1; /* a cap above the knee was measured */
      printf("  %-6s pooled warm medians:", op_names[op]);
      for (int t = 0; t < o.n_threads; t++) printf("  %d:%.2f", o.threads[t], knee_stats[op][t].median);
      printf(" ms  -> knee %d (fastest %d)%s\n", knee[op], o.threads[best],
             knee_bracketed[op] ? "" : "  NOT BRACKETED");
    }
    printf("\n");
  }

  /* ---- 2. binding */
  static const char *const binds[5] = {"unset", "close", "spread", "rt-close", "rt-spread"};
  stats bind_stats[OP_COUNT][5];
  bool bind_measured[OP_COUNT] = {false};
  if (o.exp_binding) {
    printf(
        "== 2. binding (OMP_PROC_BIND in the child's environment before exec; "
        "OMP_PLACES=cores for close/spread)\n");
    printf("   at max(knee, 2) threads: binding a single thread measures nothing about thread placement\n");
    printf(
        "   rt-close/rt-spread: colstore's runtime binding (cs_binding_set, the colstore_config 'binding' "
        "setting), env unset\n");
    for (int p = 0; p < o.passes; p++)
      for (int b = 0; b < 5; b++)
        for (int op = 0; op < OP_COUNT; op++)
          if (o.ops[op])
            measure(&o, "binding", op, bind_threads(knee[op], cores), binds[b], NULL, &bind_acc[op][b]);
    for (int op = 0; op < OP_COUNT; op++) {
      if (!o.ops[op]) continue;
      for (int b = 0; b < 5; b++) bind_stats[op][b] = stats_of(bind_acc[op][b].warm, bind_acc[op][b].nw);
      bind_measured[op] = bind_acc[op][0].nw > 0;
    }
    printf("\n");
  }

  /* ---- 3. placement */
  bool placement_measurable = have_numactl && fp.numa_nodes > 1;
  stats place_stats[OP_COUNT][2];
  bool place_measured[OP_COUNT] = {false};
  if (o.exp_placement) {
    printf("== 3. placement (interleave vs one node, written under numactl, read unbound)\n");
    if (!placement_measurable) {
      printf("   not measurable: %s\n\n",
             fp.numa_nodes <= 1 ? "single NUMA node" : "numactl is not installed");
    } else {
      static const char *const policies[2] = {"--interleave=all", "--membind=0"};
      for (int p = 0; p < o.passes; p++)
        for (int q = 0; q < 2; q++)
          for (int op = 0; op < OP_COUNT; op++)
            if (o.ops[op]) measure(&o, "placement", op, knee[op], NULL, policies[q], &place_acc[op][q]);
      for (int op = 0; op < OP_COUNT; op++) {
        if (!o.ops[op]) continue;
        for (int q = 0; q < 2; q++) place_stats[op][q] = stats_of(place_acc[op][q].warm, place_acc[op][q].nw);
        place_measured[op] = place_acc[op][0].nw > 0 && place_acc[op][1].nw > 0;
      }
      printf("\n");
    }
  }

  /* ---- 4. OpenMP initialisation */
  static const char *const variants[5] = {"control-no-env", "env-before-exec", "setenv-before-first-region",
                                          "setenv-after-init", "runtime-pin-in-region"};
  int omp_single[5] = {-1, -1, -1, -1, -1}, omp_n = cores >= 2 ? cores : 2;
  if (o.exp_ompinit) {
    printf(
        "== 4. OpenMP initialisation: threads whose affinity mask is one CPU (sched_getaffinity in a "
        "region)\n");
    for (int v = 0; v < 5; v++) {
      char nt[16];
      snprintf(nt, sizeof nt, "%d", omp_n);
      char *av[] = {self_exe, "--ompinit", (char *)variants[v], nt, NULL};
      const char *env[] = {"OMP_PROC_BIND=close", "OMP_PLACES=cores", NULL};
      int status;
      char *text = spawn(av, v == 1 ? env : NULL, &status);
      const char *line = strstr(text, "OMPINIT");
      int single = -1, nn = 0, width = 0;
      char bind[16] = "?";
      if (status == 0 && line &&
          sscanf(line, "OMPINIT single=%d/%d width=%d bind=%15s", &single, &nn, &width, bind) == 4) {
        omp_single[v] = single;
        printf("[ompinit] %-27s single-CPU threads=%d/%d widest mask=%d omp_get_proc_bind=%s\n", variants[v],
               single, nn, width, bind);
      } else {
        printf("[ompinit] %-27s FAILED (status %d)\n", variants[v], status);
        failures++;
      }
      free(text);
    }
    printf("\n");
  }

  /* ---- CONCLUSIONS */
  printf("CONCLUSIONS (this host)\n");
  if (o.passes < 2)
    printf("  (1 pass: one process per configuration; verdicts are indicative only, use the default run)\n");
  printf("  host: %s, %d cores, %d socket(s), %d NUMA node(s); %" PRIu64
         " rows x %u cols, %d warm rounds x %d "
         "pass(es)\n",
         fp.cpu_model, cores, fp.sockets, fp.numa_nodes, o.rows, o.cols, o.rounds, o.passes);
  if (o.exp_knee) {
    printf("  1. thread knee (smallest cap within spread of the fastest; caps swept %d..%d):\n", o.threads[0],
           o.threads[o.n_threads - 1]);
    for (int op = 0; op < OP_COUNT; op++) {
      if (!o.ops[op] || !knee_measured[op]) continue;
      int ki = 0;
      while (o.threads[ki] != knee[op]) ki++;
      stats one = knee_stats[op][0], kn = knee_stats[op][ki];
      int fi = 0;
      while (o.threads[fi] != knee_fastest[op]) fi++;
      printf("     %-6s knee=%d  %.2f ms at the knee, %.2f ms at %d, fastest %d at %.2f ms  (%s)%s\n",
             op_names[op], knee[op], kn.median, one.median, o.threads[0], knee_fastest[op],
             knee_stats[op][fi].median, op_desc[op],
             knee_bracketed[op] ? "" : "; NOT BRACKETED: knee at the largest cap, extend --threads");
    }
  } else {
    printf("  1. thread knee: not run\n");
  }
  if (o.exp_binding) {
    printf(
        "  2. binding (at max(knee, 2); vs unbound; close/spread = OMP_PROC_BIND before exec, rt-* = "
        "cs_binding_set):\n");
    for (int op = 0; op < OP_COUNT; op++) {
      if (!o.ops[op] || !bind_measured[op]) continue;
      printf("     %-6s", op_names[op]);
      for (int b = 1; b < 5; b++) {
        int c = compare_cells(&bind_acc[op][b], &bind_acc[op][0]);
        printf("  %s: %s (%.2fx)", binds[b],
               c == 0  ? "no difference (within spread)"
               : c < 0 ? "faster"
                       : "slower",
               bind_stats[op][0].median / bind_stats[op][b].median);
      }
      printf("  [at %d threads]\n", bind_threads(knee[op], cores));
    }
  } else {
    printf("  2. binding: not run\n");
  }
  if (!o.exp_placement) {
    printf("  3. placement: not run\n");
  } else if (!placement_measurable) {
    printf("  3. placement: not measurable: %s\n",
           fp.numa_nodes <= 1 ? "single NUMA node" : "numactl is not installed");
  } else {
    printf("  3. placement (interleave vs membind=0, read unbound at the knee):\n");
    for (int op = 0; op < OP_COUNT; op++) {
      if (!o.ops[op] || !place_measured[op]) continue;
      int c = compare_cells(&place_acc[op][0], &place_acc[op][1]);
      printf("     %-6s interleave: %s (%.2fx vs one node)\n", op_names[op],
             c == 0  ? "no difference (within spread)"
             : c < 0 ? "faster"
                     : "slower",
             place_stats[op][1].median / place_stats[op][0].median);
    }
  }
  if (o.exp_ompinit) {
    if (omp_single[0] < 0 || omp_single[1] < 0 || omp_single[3] < 0) {
      printf("  4. OpenMP init: inconclusive (a probe failed)\n");
    } else if (omp_single[1] == 0 || omp_single[0] == omp_n) {
      printf(
          "  4. OpenMP init: not measurable: OMP_PROC_BIND set before exec did not bind (%d/%d single-CPU "
          "threads; control %d/%d)\n",
          omp_single[1], omp_n, omp_single[0], omp_n);
    } else {
      printf(
          "  4. OpenMP init: env before exec binds (%d/%d threads on one CPU, control %d/%d); setenv "
          "inside the process %s before the first parallel region (%d/%d) and %s after OpenMP init "
          "(%d/%d); a pin from inside a region (sched_setaffinity) %s (%d/%d)\n",
          omp_single[1], omp_n, omp_single[0], omp_n,
          omp_single[2] > omp_single[0] ? "HAS an effect" : "has NO effect", omp_single[2], omp_n,
          omp_single[3] > omp_single[0] ? "HAS an effect" : "has NO effect", omp_single[3], omp_n,
          omp_single[4] > omp_single[0] ? "persists" : "does not persist", omp_single[4], omp_n);
    }
  } else {
    printf("  4. OpenMP init: not run\n");
  }
  /* Recommendations. */
  /* Busy is judged by the load before the first child: the 1-minute load at
  ** the end includes this harness's own threads. */
  double load_end = loadavg();
  bool busy = load_start >= 0.5 * cores;
  printf("  recommended on this host%s:\n",
         busy ? " (measured while the host was busy: not a basis for changing a default)" : "");
  if (o.exp_knee) {
    int lo = 0, hi = 0;
    for (int op = 0; op < OP_COUNT; op++)
      if (o.ops[op] && knee_measured[op]) {
        lo = lo == 0 || knee[op] < lo ? knee[op] : lo;
        hi = knee[op] > hi ? knee[op] : hi;
      }
    if (hi > cores)
      printf(
          "     threads: knees %d..%d, above the %d cores: oversubscription measured faster or within "
          "spread; "
          "rerun on a quiet host before setting a cap above the cores (else keep 0 = auto)\n",
          lo, hi, cores);
    else if (hi == cores)
      printf("     threads: 0 (auto = the %d cores; knees %d..%d)\n", cores, lo, hi);
    else if (hi)
      printf("     threads: %d (the largest knee; knees %d..%d; auto would use %d cores)\n", hi, lo, hi,
             cores);
  }
  if (o.exp_binding) {
    int faster = 0, slower = 0, measured = 0;
    for (int op = 0; op < OP_COUNT; op++)
      if (o.ops[op] && bind_measured[op])
        for (int b = 1; b < 5; b++) {
          int c = compare_cells(&bind_acc[op][b], &bind_acc[op][0]);
          measured++;
          faster += c < 0;
          slower += c > 0;
        }
    printf("     binding: %s (%d of %d bound cells faster, %d slower, rest within spread)\n",
           faster && !slower ? "close/spread were faster here; confirm on the target host before enabling"
           : !faster         ? "off (no measured gain from binding)"
                             : "off (mixed: no consistent gain from binding)",
           faster, measured, slower);
  }
  if (o.exp_placement)
    printf("     numa placement: %s\n", placement_measurable
                                            ? "see 3 (interleave if faster, else no preference)"
                                            : "no evidence on this host (single node); keep auto");
  printf("  not measured on this host:");
  bool any = false;
  if (fp.numa_nodes <= 1)
    printf(" placement (1 NUMA node);"), any = true;
  else if (!have_numactl)
    printf(" placement (numactl absent);"), any = true;
  if (cores <= 2)
    printf(" knees beyond %d threads (%d cores; caps above %d oversubscribe);", cores, cores, cores),
        any = true;
  if (fp.sockets <= 1) printf(" cross-socket binding effects (1 socket);"), any = true;
  printf("%s\n", any ? "" : " nothing");
  if (busy)
    printf(
        "  WARNING: load average %.2f before the first measurement on %d cores: other work shared the CPUs, "
        "so "
        "knees are biased low and spreads are wide; rerun on a quiet host before acting on them\n",
        load_start, cores);
  if (failures) printf("  WARNING: %d measurement(s) failed or disagreed; see the lines above\n", failures);
  printf("  wall time: %.1f s; load average %.2f at start, %.2f at end (the end includes this harness)\n",
         (now_ms() - t_start) / 1e3, load_start, load_end);
  if (made_dir && !o.keep) rmdir(o.outdir);
  return failures ? 1 : 0;
}
