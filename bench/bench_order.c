/*
** bench_order.c - the ordering kernel (cs_order_rows) on the bench table's
** shapes against a naive qsort, and its paths against one another.
**
** HOW IT WORKS
**
** One store of N rows (default 10M) is written into a temporary directory
** (removed at exit) with the bench table's columns and generator
** (bench_sql.c: a uniform [0, 1), b INT64 0..999, c standard normal, d INT32
** 1 for 10% of the rows) and a few more for the decisions: t TEXT drawn from
** 1,000 words of 4..20 letters, e = c rounded to 0.01 (~900 distinct
** doubles over a wide code range), u16, u20 and u24 NOT NULL INT32 uniform
** in 0..2^16-1, 0..2^20-1 and 0..2^24-1 (fields of exactly 16, 20, 24 bits),
** g = 60,000 distinct doubles (near the hash cap).  The same values are kept in plain arrays.
**
** Every case orders all N positions (the selection of a full scan, in
** ascending order; one case takes them in ascending order of a and asks
** for the top of a DESC, so every row beats the top-k threshold).  Its variants are the kernel as shipped, the kernel
** with a tuning knob forced (cs_order_internal.h: the alternatives the
** kernel chose between), and, for the cases the issue names, a naive
** reference: the key values copied from the arrays beside their index and
** qsort with a comparator implementing SQLite's rules (ties by index).
** Before anything is timed every variant's output is checked: SORT and
** DISTINCT byte for byte against the first variant; GROUP as a property
** (whole groups, each once, each group's rows in input order, as many
** groups as the reference finds), because the order of groups may differ.
** Then the variants run interleaved (A B C A B C ...) for the rounds, the
** input copied in untimed before each run, and the table gives each
** variant's median with min and max, ns per row, and the ratio of the
** first variant's median to it, and the minor page faults of a run: with
** glibc's mmap threshold fixed at 1 MiB every large block is fresh memory,
** touched for the first time by the run that allocated it, as a 10M-row
** kernel's scratch (blocks over 32 MiB) always is.  The exit status is 0 unless the store
** cannot be made or a check fails.
**
** Usage: bench_order [--quick] [--rows N] [--rounds R] [--dir D] [--only SUBSTRING[,SUBSTRING...]]
*/
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"
#include "colstore.h"
#include "cs_order_internal.h"

#define MAX_ROUNDS 51
#define MAX_VARIANTS 8
#define N_WORDS 1000

static void die(const char *what, const cs_err *err) {
  fprintf(stderr, "bench_order: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

/* ------------------------------------------------------------------ data */

enum { COL_A, COL_B, COL_C, COL_D, COL_T, COL_E, COL_U16, COL_U20, COL_U24, COL_G, N_COLS };

typedef struct data {
  uint64_t n;
  double *a, *c, *e, *g;
  int64_t *b;
  int32_t *d, *u16, *u20, *u24;
  uint16_t *t;             /* word index */
  char words[N_WORDS][24]; /* distinct, NUL-terminated */
  uint8_t word_len[N_WORDS];
} data;

static void data_generate(data *D, uint64_t n, uint64_t seed) {
  D->n = n;
  D->a = xmalloc(n * 8), D->c = xmalloc(n * 8), D->e = xmalloc(n * 8), D->b = xmalloc(n * 8),
  D->g = xmalloc(n * 8);
  D->d = xmalloc(n * 4), D->u16 = xmalloc(n * 4), D->u20 = xmalloc(n * 4), D->u24 = xmalloc(n * 4);
  D->t = xmalloc(n * 2);
  uint64_t st = seed;
  const double two_pi = 6.283185307179586476925286766559;
  for (uint64_t i = 0; i < n; i++) { /* bench_sql.c's five draws per row, then ours */
    D->a[i] = bench_unit_double(bench_splitmix64(&st));
    D->b[i] = (int64_t)(((bench_splitmix64(&st) >> 32) * 1000u) >> 32);
    double u1 = ((double)(bench_splitmix64(&st) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = bench_unit_double(bench_splitmix64(&st));
    D->c[i] = sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
    D->d[i] = bench_unit_double(bench_splitmix64(&st)) < 0.1 ? 1 : 0;
    uint64_t x = bench_splitmix64(&st);
    D->t[i] = (uint16_t)(((x >> 32) * N_WORDS) >> 32);
    D->u16[i] = (int32_t)(x & 0xFFFF);
    D->u20[i] = (int32_t)((x >> 16) & 0xFFFFF);
    D->u24[i] = (int32_t)((x >> 36) & 0xFFFFFF);
    D->e[i] = round(D->c[i] * 100.0) / 100.0;
    D->g[i] = (double)(((x >> 8) & 0xFFFFFFFF) % 60000) * 1.5 - 1000.0;
  }
  uint64_t ws = seed ^ 0x5157;
  for (int w = 0; w < N_WORDS; w++) {
    int len = 4 + (int)(bench_splitmix64(&ws) % 17);
    for (int k = 0; k < len; k++) D->words[w][k] = (char)('a' + bench_splitmix64(&ws) % 26);
    /* the index in the last three letters keeps the words distinct */
    D->words[w][len - 3] = (char)('a' + w % 26), D->words[w][len - 2] = (char)('a' + w / 26 % 26);
    D->words[w][len - 1] = (char)('a' + w / 676);
    D->words[w][len] = 0;
    D->word_len[w] = (uint8_t)len;
  }
}

static cs_store *store_make(const char *path, const data *D) {
  const cs_column cols[N_COLS] = {{"a", CS_TYPE_FLOAT64, true},  {"b", CS_TYPE_INT64, true},
                                  {"c", CS_TYPE_FLOAT64, true},  {"d", CS_TYPE_INT32, true},
                                  {"t", CS_TYPE_TEXT, true},     {"e", CS_TYPE_FLOAT64, true},
                                  {"u16", CS_TYPE_INT32, false}, {"u20", CS_TYPE_INT32, false},
                                  {"u24", CS_TYPE_INT32, false}, {"g", CS_TYPE_FLOAT64, true}};
  cs_schema schema = {N_COLS, cols};
  cs_writer_options opt = {.replace = true};
  cs_writer *w;
  cs_err err = {0};
  if (cs_writer_create(path, &schema, &opt, &w, &err)) die("create", &err);
  cs_batch *b;
  if (cs_batch_new(&schema, &b, &err)) die("batch", &err);
  for (uint64_t at = 0; at < D->n;) {
    uint64_t k = D->n - at < CS_DEFAULT_RECORD_ROWS ? D->n - at : CS_DEFAULT_RECORD_ROWS;
    cs_batch_clear(b);
    for (uint64_t r = at; r < at + k; r++) {
      int bad = cs_batch_put_f64(b, COL_A, D->a[r], &err) || cs_batch_put_i64(b, COL_B, D->b[r], &err) ||
                cs_batch_put_f64(b, COL_C, D->c[r], &err) || cs_batch_put_i64(b, COL_D, D->d[r], &err) ||
                cs_batch_put_bytes(b, COL_T, D->words[D->t[r]], D->word_len[D->t[r]], &err) ||
                cs_batch_put_f64(b, COL_E, D->e[r], &err) || cs_batch_put_i64(b, COL_U16, D->u16[r], &err) ||
                cs_batch_put_i64(b, COL_U20, D->u20[r], &err) ||
                cs_batch_put_i64(b, COL_U24, D->u24[r], &err) || cs_batch_put_f64(b, COL_G, D->g[r], &err);
      if (bad) die("put", &err);
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

/* ------------------------------------------------------------- reference */

/* A key value beside its input index; the comparator is chosen per case. */
typedef struct refent {
  union {
    double f;
    int64_t i;
    const char *s;
  } v;
  uint32_t idx;
} refent;

static bool ref_desc;

static int ref_cmp_f(const void *pa, const void *pb) {
  const refent *a = pa, *b = pb;
  int c = (a->v.f > b->v.f) - (a->v.f < b->v.f); /* no NaN or NULL in this table */
  if (ref_desc) c = -c;
  return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}
static int ref_cmp_i(const void *pa, const void *pb) {
  const refent *a = pa, *b = pb;
  int c = (a->v.i > b->v.i) - (a->v.i < b->v.i);
  if (ref_desc) c = -c;
  return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}
static int ref_cmp_s(const void *pa, const void *pb) {
  const refent *a = pa, *b = pb;
  int c = strcmp(a->v.s, b->v.s); /* words have no zero bytes: memcmp-then-length */
  c = (c > 0) - (c < 0);
  if (ref_desc) c = -c;
  return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

static bool ref_same(const refent *a, const refent *b, uint32_t col) {
  switch (col) {
    case COL_A:
    case COL_C:
    case COL_E:
    case COL_G: return a->v.f == b->v.f;
    case COL_T: return a->v.s == b->v.s;
    default: return a->v.i == b->v.i;
  }
}

/* The naive program: copy the keys, qsort, read the answer off. */
static uint64_t ref_order(const data *D, uint32_t col, bool desc, cs_order_mode mode, uint64_t limit,
                          const uint64_t *rows, uint64_t n, refent *ents, uint64_t *out) {
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rows[i];
    ents[i].idx = (uint32_t)i;
    switch (col) {
      case COL_A: ents[i].v.f = D->a[r]; break;
      case COL_C: ents[i].v.f = D->c[r]; break;
      case COL_E: ents[i].v.f = D->e[r]; break;
      case COL_G: ents[i].v.f = D->g[r]; break;
      case COL_B: ents[i].v.i = D->b[r]; break;
      case COL_D: ents[i].v.i = D->d[r]; break;
      case COL_U16: ents[i].v.i = D->u16[r]; break;
      case COL_U20: ents[i].v.i = D->u20[r]; break;
      case COL_U24: ents[i].v.i = D->u24[r]; break;
      default: ents[i].v.s = D->words[D->t[r]]; break;
    }
  }
  ref_desc = desc;
  qsort(ents, n, sizeof *ents,
        col == COL_T                                                     ? ref_cmp_s
        : (col == COL_A || col == COL_C || col == COL_E || col == COL_G) ? ref_cmp_f
                                                                         : ref_cmp_i);
  uint64_t m = 0;
  if (mode == CS_ORDER_DISTINCT) {
    for (uint64_t t = 0; t < n && m < limit; t++)
      if (t == 0 || !ref_same(&ents[t], &ents[t - 1], col)) out[m++] = rows[ents[t].idx];
  } else {
    m = mode == CS_ORDER_SORT && limit < n ? limit : n;
    for (uint64_t t = 0; t < m; t++) out[t] = rows[ents[t].idx];
  }
  return m;
}

/* ---------------------------------------------------------------- cases */

enum { V_KERNEL, V_TUNED, V_REF, V_TEAM2 }; /* V_TEAM2: the kernel with 2 threads */

typedef struct variant {
  const char *label;
  int kind;
  cs__order_tuning t; /* V_TUNED */
} variant;

typedef struct bcase {
  const char *name;
  bool adversarial; /* input: the positions in ascending order of a (else ascending positions) */
  uint32_t col;
  bool desc;
  cs_order_mode mode;
  uint64_t limit;
  int n_var;
  variant var[MAX_VARIANTS];
} bcase;

typedef struct ctx {
  const data *D;
  const cs_store *s;
  const uint64_t *input, *input_plain, *input_by_a;
  uint64_t n;
  refent *ents;
  int rounds;
  int failures;
} ctx;

/* The defaults with some knobs changed (-2 = keep the default). */
static cs__order_tuning tuned(int topk_ratio, int count_bits, int64_t hash_cap, int64_t dict_cap, int digits,
                              int huge, int64_t msd_min, int64_t cache_n, int64_t probe) {
  cs__order_tuning t;
  cs__order_tuning_default(&t);
  if (topk_ratio != -2) t.topk_ratio = (uint64_t)topk_ratio;
  if (count_bits != -2) t.count_bits = count_bits;
  if (hash_cap != -2) t.hash_cap = (uint32_t)hash_cap;
  if (dict_cap != -2) t.dict_cap = (uint32_t)dict_cap;
  if (digits != -2) t.digit_bits = (unsigned)digits;
  if (huge != -2) t.huge_pages = huge;
  if (msd_min != -2) t.msd_min = (uint64_t)msd_min;
  if (cache_n != -2) t.cache_n = (uint64_t)cache_n;
  if (probe != -2) t.hash_probe = (uint32_t)probe;
  return t;
}

static long minor_faults(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

static double run_variant(ctx *x, const bcase *bc, const variant *v, uint64_t *out, uint64_t *n_out,
                          const char **path, long *faults) {
  memcpy(out, x->input, x->n * 8);
  long f0 = minor_faults();
  uint64_t t0 = bench_now_ns(), m = x->n;
  if (v->kind == V_REF) { /* a naive program allocates its array too */
    refent *ents = xmalloc(x->n * sizeof *ents);
    m = ref_order(x->D, bc->col, bc->desc, bc->mode, bc->limit, x->input, x->n, ents, out);
    free(ents);
    *path = "qsort";
  } else {
    if (v->kind == V_TUNED) cs__order_tuning_set(&v->t);
    if (v->kind == V_TEAM2) cs_kernel_config_set(&(cs_kernel_config){.threads = 2, .prefetch = -1});
    cs_order_key key = {bc->col, bc->desc};
    cs_err err = {0};
    if (cs_order_rows(x->s, &key, 1, bc->mode, out, &m, bc->limit, &err) != CS_OK) die("cs_order_rows", &err);
    *path = cs__order_last_path();
    if (v->kind == V_TUNED) cs__order_tuning_set(NULL);
    if (v->kind == V_TEAM2) cs_kernel_config_set(&(cs_kernel_config){.threads = 1, .prefetch = -1});
  }
  double ms = (double)(bench_now_ns() - t0) / 1e6;
  *faults = minor_faults() - f0;
  *n_out = m;
  return ms;
}

/* The key value of row r, for the GROUP property check. */
static bool key_equal(const data *D, uint32_t col, uint64_t r1, uint64_t r2) {
  switch (col) {
    case COL_A: return D->a[r1] == D->a[r2];
    case COL_C: return D->c[r1] == D->c[r2];
    case COL_E: return D->e[r1] == D->e[r2];
    case COL_G: return D->g[r1] == D->g[r2];
    case COL_B: return D->b[r1] == D->b[r2];
    case COL_D: return D->d[r1] == D->d[r2];
    case COL_U16: return D->u16[r1] == D->u16[r2];
    case COL_U20: return D->u20[r1] == D->u20[r2];
    case COL_U24: return D->u24[r1] == D->u24[r2];
    default: return D->t[r1] == D->t[r2];
  }
}

/* GROUP: rows ascending inside each run (the input is ascending), runs of
** distinct keys, as many runs as the reference has groups.  The runs'
** keys are told apart by sorting the run heads with the reference. */
static bool group_ok(ctx *x, const bcase *bc, const uint64_t *out, uint64_t m, uint64_t want_groups,
                     const char **why) {
  if (m != x->n) return *why = "not every row", false;
  uint64_t runs = 0;
  uint64_t *heads = xmalloc(m * 8 + 8);
  for (uint64_t t = 0; t < m; t++) {
    if (t == 0 || !key_equal(x->D, bc->col, out[t], out[t - 1])) {
      heads[runs++] = out[t];
    } else if (out[t] <= out[t - 1]) {
      free(heads);
      return *why = "rows of a group out of input order", false;
    }
  }
  /* each key once: the distinct count of the heads equals the run count */
  uint64_t *tmp = xmalloc(runs * 8 + 8);
  uint64_t d =
      ref_order(x->D, bc->col, false, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, heads, runs, x->ents, tmp);
  free(heads), free(tmp);
  if (d != runs) return *why = "a key in two runs", false;
  if (runs != want_groups) return *why = "wrong number of groups", false;
  return true;
}

static void run_case(ctx *x, const bcase *bc) {
  uint64_t n = x->n;
  x->input = bc->adversarial ? x->input_by_a : x->input_plain;
  uint64_t *outs[MAX_VARIANTS], m[MAX_VARIANTS];
  const char *paths[MAX_VARIANTS];
  double times[MAX_VARIANTS][MAX_ROUNDS], faults[MAX_VARIANTS][MAX_ROUNDS];
  long f;
  for (int v = 0; v < bc->n_var; v++) outs[v] = xmalloc(n * 8 + 8);
  /* warm-up and checks */
  uint64_t want_groups = 0;
  if (bc->mode == CS_ORDER_GROUP) {
    uint64_t *tmp = xmalloc(n * 8 + 8);
    want_groups =
        ref_order(x->D, bc->col, false, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, x->input, n, x->ents, tmp);
    free(tmp);
  }
  bool ok = true;
  for (int v = 0; v < bc->n_var && ok; v++) {
    run_variant(x, bc, &bc->var[v], outs[v], &m[v], &paths[v], &f);
    const char *why = NULL;
    if (bc->mode == CS_ORDER_GROUP) {
      if (!group_ok(x, bc, outs[v], m[v], want_groups, &why)) ok = false;
    } else if (v > 0 && (m[v] != m[0] || memcmp(outs[v], outs[0], m[0] * 8) != 0)) {
      why = "differs from the first variant";
      ok = false;
    }
    if (!ok) {
      printf("  %-30s %-26s DISAGREE (%s): not timed\n", bc->name, bc->var[v].label, why);
      x->failures++;
    }
  }
  if (ok) {
    for (int r = 0; r < x->rounds; r++)
      for (int k = 0; k < bc->n_var; k++) {
        int v = (k + r) % bc->n_var; /* rotate the order each round */
        times[v][r] = run_variant(x, bc, &bc->var[v], outs[v], &m[v], &paths[v], &f);
        faults[v][r] = (double)f;
      }
    bench_stats first = bench_stats_of(times[0], x->rounds);
    for (int v = 0; v < bc->n_var; v++) {
      bench_stats st = bench_stats_of(times[v], x->rounds), fs = bench_stats_of(faults[v], x->rounds);
      char t[64];
      snprintf(t, sizeof t, "%.1f (%.1f-%.1f)", st.median, st.min, st.max);
      printf("  %-30s %-26s %-15s %-23s %6.1f ns/row %6.2fx %8.0f\n", v == 0 ? bc->name : "",
             bc->var[v].label, paths[v], t, st.median * 1e6 / (double)n, st.median / first.median, fs.median);
    }
  }
  fflush(stdout);
  for (int v = 0; v < bc->n_var; v++) free(outs[v]);
}

/* --only: a comma-separated list of substrings; a case runs when its name
** contains one of them. */
static bool selected(const char *only, const char *name) {
  if (!only) return true;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", only);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    if (strstr(name, tok)) return true;
  return false;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_order [--quick] [--rows N] [--rounds R] [--dir DIR] [--only SUBSTRING]\n");
  return 2;
}

int main(int argc, char **argv) {
  uint64_t N = 10000000;
  int rounds = 5;
  bool quick = false, rows_set = false, rounds_set = false;
  const char *dir_base = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = true;
    else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
      N = strtoull(argv[++i], NULL, 10), rows_set = true;
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]), rounds_set = true;
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir_base = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else
      return usage();
  }
  if (quick && !rows_set) N = 1000000;
  if (quick && !rounds_set) rounds = 3;
  if (rounds < 1) rounds = 1;
  if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
  if (N < 100000) N = 100000;
  if (N > UINT32_MAX) N = UINT32_MAX;

  char dir[4096], path[4200];
  const char *base = dir_base ? dir_base : getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/colstore-bench-order-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) die("cannot create a work directory", NULL);
  snprintf(path, sizeof path, "%s/t.cst", dir);

  char cpu[256];
  bench_cpu_model(cpu, sizeof cpu);
  printf("bench_order: %s, %ld cpus, load %.2f; %" PRIu64 " rows, %d rounds%s; one thread\n", cpu,
         bench_nproc(), bench_loadavg(), N, rounds, quick ? " (quick)" : "");
  /* Every large block mmap'd fresh and unmapped on free, as blocks over
  ** glibc's dynamic ceiling (32 MiB: 10M-row scratch) always are; left
  ** dynamic, whether a run re-faults its scratch depends on what earlier
  ** runs freed, and the variants' times on their order. */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  /* One thread, as the header says; the team's cases ask for two. */
  cs_kernel_config_set(&(cs_kernel_config){.threads = 1, .prefetch = -1});
  uint64_t t0 = bench_now_ns();
  data *D = xmalloc(sizeof *D);
  data_generate(D, N, 0x5EED);
  cs_store *s = store_make(path, D);
  printf("store: %" PRIu64 " records (%.1f s to generate and write)\n", cs_store_records(s),
         (double)(bench_now_ns() - t0) / 1e9);
  printf(
      "ratio = variant median / first variant median (below 1: faster than the first); faults = minor page\n"
      "faults per run (fresh scratch touched for the first time), median\n\n");

  uint64_t *input = xmalloc(N * 8), *input_by_a = xmalloc(N * 8);
  for (uint64_t i = 0; i < N; i++) input[i] = input_by_a[i] = i;
  ctx x = {D, s, input, input, input_by_a, N, xmalloc(N * sizeof(refent)), rounds, 0};
  { /* the adversarial input: every row beats a DESC top-k's threshold */
    cs_order_key ka = {COL_A, false};
    uint64_t m = N;
    cs_err err = {0};
    if (cs_order_rows(s, &ka, 1, CS_ORDER_SORT, input_by_a, &m, CS_ORDER_NO_LIMIT, &err) != CS_OK)
      die("sort", &err);
  }

  cs__order_tuning def;
  cs__order_tuning_default(&def);
  const variant K = {"kernel", V_KERNEL, def}, R = {"qsort reference", V_REF, def};
#define D_ -2 /* keep the default */
#define T(label, tr, cb, hc, dc, dg) {label, V_TUNED, tuned(tr, cb, hc, dc, dg, D_, D_, D_, D_)}
#define M(label, msd, cache, dg) \
  { label, V_TUNED, tuned(D_, D_, D_, D_, dg, D_, msd, cache, D_) }
#define H(label, cap, probe) \
  { label, V_TUNED, tuned(D_, D_, D_, D_, D_, D_, D_, D_, probe) }
  uint64_t k_big = 100000 + 10;
  /* One case a line or two, read across as a table. */
  /* clang-format off */
  bcase cases[] = {
      /* the cases, against the naive reference */
      {"sort a", false, COL_A, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2, {K, R}},
      {"sort c", false, COL_C, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2, {K, R}},
      {"top-10 a DESC", false, COL_A, true, CS_ORDER_SORT, 10, 3, {K, R, T("full sort (no top-k)", 0, D_, D_, D_, D_)}},
      {"top-100010 a", false, COL_A, false, CS_ORDER_SORT, k_big, 3, {K, R, T("full sort (no top-k)", 0, D_, D_, D_, D_)}},
      {"group b", false, COL_B, false, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, 4,
       {K, R, T("radix (no counting)", D_, -1, 0, D_, D_), T("hash (no counting)", D_, -1, D_, D_, D_)}},
      {"group c", false, COL_C, false, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, 4,
       {K, R, T("radix (no hash)", D_, D_, 0, D_, D_), {"hash, cap 2^24, no give-up", V_TUNED, tuned(D_, D_, 1 << 24, D_, D_, D_, D_, D_, 0)}}},
      {"distinct b", false, COL_B, false, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, 3,
       {K, R, T("radix (no counting)", D_, -1, 0, D_, D_)}},
      {"sort t (TEXT, 1000 words)", false, COL_T, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 3,
       {K, R, T("wide (no dictionary)", D_, D_, D_, 0, D_)}},
      /* decisions: kernel alternatives on one input */
      {"group e (~900 doubles)", false, COL_E, false, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, 2,
       {K, T("radix (no hash)", D_, D_, 0, D_, D_)}},
      {"distinct e (~900 doubles)", false, COL_E, false, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, 2,
       {K, T("radix (no hash)", D_, D_, 0, D_, D_)}},
      {"group g (60,000 doubles)", false, COL_G, false, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, 3,
       {K, T("radix (no hash)", D_, D_, 0, D_, D_), H("hash, no give-up", D_, 0)}},
      {"distinct g (60,000 doubles)", false, COL_G, false, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, 3,
       {K, T("radix (no hash)", D_, D_, 0, D_, D_), H("hash, no give-up", D_, 0)}},
      {"distinct c", false, COL_C, false, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, 2,
       {K, {"hash, cap 2^24, no give-up", V_TUNED, tuned(D_, D_, 1 << 24, D_, D_, D_, D_, D_, 0)}}},
      {"top-100010 a DESC, adversarial", true, COL_A, true, CS_ORDER_SORT, k_big, 2,
       {K, T("full sort (no top-k)", 0, D_, D_, D_, D_)}},
      {"sort a: huge-page advice", false, COL_A, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2,
       {K, {"no advice (4 KiB pages)", V_TUNED, tuned(D_, D_, D_, D_, D_, 0, D_, D_, D_)}}},
      {"sort a: MSD first vs LSD", false, COL_A, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 5,
       {K, M("LSD only", 0, D_, D_), M("MSD, buckets <= 4096", D_, 4096, D_),
        M("MSD, buckets <= 65536", D_, 65536, D_), M("MSD, 8-bit digits", D_, D_, 8)}},
      {"sort c: MSD first vs LSD", false, COL_C, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2, {K, M("LSD only", 0, D_, D_)}},
      {"distinct c: MSD first vs LSD", false, COL_C, false, CS_ORDER_DISTINCT, CS_ORDER_NO_LIMIT, 2,
       {K, M("LSD only", 0, D_, D_)}},
      {"sort a: LSD digit bits", false, COL_A, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 4,
       {M("LSD, 11-bit digits (6 passes)", 0, D_, 11), M("LSD, 8-bit digits (8 passes)", 0, D_, 8),
        M("LSD, 10-bit digits (7 passes)", 0, D_, 10), M("LSD, 13-bit digits (5 passes)", 0, D_, 13)}},
      {"sort b: counting vs radix", false, COL_B, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2,
       {K, T("radix", D_, -1, D_, D_, D_)}},
      {"sort u16: counting vs radix", false, COL_U16, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2,
       {K, T("radix", D_, -1, D_, D_, D_)}},
      {"sort u20: radix vs counting", false, COL_U20, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2,
       {K, T("counting 20 bits", D_, 20, D_, D_, D_)}},
      {"sort u24: radix vs counting", false, COL_U24, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2,
       {K, T("counting 24 bits", D_, 24, D_, D_, D_)}},
      {"group u20: hash vs radix", false, COL_U20, false, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, 3,
       {K, T("radix (no hash)", D_, D_, 0, D_, D_), T("counting 20 bits", D_, 20, 0, D_, D_)}},
      /* the thread team's counting sort against one thread */
      {"group b: 2 threads", false, COL_B, false, CS_ORDER_GROUP, CS_ORDER_NO_LIMIT, 2, {K, {"team, 2 threads", V_TEAM2, def}}},
      {"sort u16: 2 threads", false, COL_U16, false, CS_ORDER_SORT, CS_ORDER_NO_LIMIT, 2, {K, {"team, 2 threads", V_TEAM2, def}}},
  };
  /* clang-format on */
  /* top-k against a full sort as k grows: where ORDER_TOPK_RATIO sits */
  static const uint64_t divs[] = {1000, 64, 32, 16, 8, 4};
  static char topk_names[6][48];
  bcase topk_cases[6];
  for (int i = 0; i < 6; i++) {
    snprintf(topk_names[i], sizeof topk_names[i], "top-k a, k = n/%" PRIu64, divs[i]);
    topk_cases[i] = (bcase){topk_names[i],
                            false,
                            COL_A,
                            false,
                            CS_ORDER_SORT,
                            N / divs[i],
                            2,
                            {T("top-k", 1, D_, D_, D_, D_), T("full sort", 0, D_, D_, D_, D_)}};
  }
#undef T
#undef M
#undef H
#undef D_
  printf("  %-30s %-26s %-15s %-23s %13s %7s %8s\n", "case", "variant", "path", "ms median (min-max)", "",
         "ratio", "faults");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (selected(only, cases[i].name)) run_case(&x, &cases[i]);
  for (int i = 0; i < 6; i++)
    if (selected(only, topk_cases[i].name)) run_case(&x, &topk_cases[i]);
  printf("\n%d checks failed; %.1f s\n", x.failures, (double)(bench_now_ns() - t0) / 1e9);

  cs_store_close(s);
  remove(path);
  rmdir(dir);
  free(D->a), free(D->b), free(D->c), free(D->d), free(D->e), free(D->u16), free(D->u20), free(D->u24),
      free(D->g), free(D->t), free(D);
  free(input), free(input_by_a), free(x.ents);
  return x.failures ? 1 : 0;
}
