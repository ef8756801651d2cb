/*
** bench_agg.c - the aggregation kernels (cs_agg.c) on the bench table's
** shapes, each against the plain C loop a programmer would write over the
** raw arrays.
**
** HOW IT WORKS.  One store of N rows (default 10M) is written into a
** temporary directory (removed at exit) with the bench table's columns and
** generator (bench_sql.c: a uniform [0, 1), b INT64 0..999, c standard
** normal, d INT32 1 for 10% of the rows) plus three TEXT keys: kind, five
** words; tag, "tag-" and b (1,000 values, the same groups as b); name,
** "user-" and a number below rows / 8 (about a million values in 10M rows,
** some 60,000 in each record: more than a record's dictionary holds); flag,
** "yes" where d is 1 and "no" elsewhere (d's skewed groups as TEXT); the
** same values stay in plain arrays.  Each case is a query shape
** of colstore_agg: the kernel (cs_agg_new, one add over every row, the
** results read) at 1 and at 2 threads, and the naive loop over the arrays
** (for floats a plain, uncompensated sum; for groups an array indexed by the
** key).  Before anything is timed every kernel's answer is checked against
** the loop's (integers exactly, floats within 1e-9 relative).  Then all
** variants of all cases run interleaved (A B C A B C ...) for the rounds,
** their order rotating from round to round (the variant that always came
** after the loop's sweep of the arrays ran up to 3x slower on this host),
** and each gets its median, min and max, and the ratio of its median to
** the loop's.  The totals case runs its kernel once before timing, so the
** timed calls find the per-record statistics cached (as every query after
** the first does).
**
** The host is shared (2 cores, other engineers building and testing):
** absolute times drift, so compare the ratios inside one run.
**
** With --cpu the times are the process's CPU time instead of wall time: on
** a loaded host a one-thread variant then counts only the time it ran, not
** the time it waited for a core (at 2 threads it is the sum of both).
**
** --direct-max N, --few-groups N, --dict-max N, --lane-groups N and
** --codes-bytes N move cs_agg's switch points (cs_agg_internal.h), to time
** one kernel against another on the same data (--alt-codes-bytes 0: a TEXT
** key without the dictionary codes cached on the store, the path before
** them).  Their --alt-* forms add a fourth variant, "alt 1t": the kernel at one thread with those switch
** points instead, interleaved with the others, so two kernels are compared
** in one run.
**
** --first times the first query of each case on a freshly opened snapshot
** (its caches empty: the dictionary codes are built by it) against the
** second on the same snapshot, at one thread, for the rounds; with an
** --alt-* option, also the first and second with the alternative switch
** points on another fresh snapshot (the build's cost is first - first alt,
** the snapshot's own first-touch cost being in both).
**
** Usage: bench_agg [--rows N] [--rounds R] [--dir D] [--only CASE[,CASE...]] [--cpu] [--first]
**                  [--direct-max N] [--few-groups N] [--dict-max N] [--lane-groups N] [--codes-bytes N]
**                  [--alt-direct-max N] [--alt-few-groups N] [--alt-dict-max N] [--alt-lane-groups N]
**                  [--alt-codes-bytes N]
**                  (CASE: 0..8, as listed)
*/
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "colstore.h"
#include "cs_agg_internal.h"

#define MAX_ROUNDS 51
enum { COL_A, COL_B, COL_C, COL_D, COL_KIND, COL_TAG, COL_NAME, COL_FLAG, N_COLS };
static const char *const kinds[5] = {"muon", "electron", "photon", "jet", "tau"};

static void die(const char *what, const cs_err *err) {
  fprintf(stderr, "bench_agg: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

typedef struct data {
  uint64_t n;
  double *a, *c;
  int64_t *b;
  int32_t *d;
  uint8_t *kind;
  uint32_t *name; /* the number in name, below n / 8 + 1 */
} data;

static void data_generate(data *D, uint64_t n) {
  D->n = n;
  D->a = xmalloc(n * 8), D->c = xmalloc(n * 8), D->b = xmalloc(n * 8), D->d = xmalloc(n * 4),
  D->kind = xmalloc(n);
  D->name = xmalloc(n * 4);
  uint64_t st = 42;
  const double two_pi = 6.283185307179586476925286766559;
  for (uint64_t i = 0; i < n; i++) {
    D->a[i] = bench_unit_double(bench_splitmix64(&st));
    D->b[i] = (int64_t)(((bench_splitmix64(&st) >> 32) * 1000u) >> 32);
    double u1 = ((double)(bench_splitmix64(&st) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = bench_unit_double(bench_splitmix64(&st));
    D->c[i] = sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
    D->d[i] = bench_unit_double(bench_splitmix64(&st)) < 0.1 ? 1 : 0;
    D->kind[i] = (uint8_t)(bench_splitmix64(&st) % 5);
    D->name[i] = (uint32_t)(bench_splitmix64(&st) % (n / 8 + 1));
  }
}

static cs_store *store_make(const char *path, const data *D) {
  const cs_column cols[N_COLS] = {{"a", CS_TYPE_FLOAT64, true}, {"b", CS_TYPE_INT64, true},
                                  {"c", CS_TYPE_FLOAT64, true}, {"d", CS_TYPE_INT32, true},
                                  {"kind", CS_TYPE_TEXT, true}, {"tag", CS_TYPE_TEXT, true},
                                  {"name", CS_TYPE_TEXT, true}, {"flag", CS_TYPE_TEXT, true}};
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
      const char *w8 = kinds[D->kind[r]];
      char tag[32], name[32];
      int n_tag = snprintf(tag, sizeof tag, "tag-%" PRId64, D->b[r]);
      int n_name = snprintf(name, sizeof name, "user-%" PRIu32, D->name[r]);
      int bad = cs_batch_put_f64(b, COL_A, D->a[r], &err) || cs_batch_put_i64(b, COL_B, D->b[r], &err) ||
                cs_batch_put_f64(b, COL_C, D->c[r], &err) || cs_batch_put_i64(b, COL_D, D->d[r], &err) ||
                cs_batch_put_bytes(b, COL_KIND, w8, strlen(w8), &err) ||
                cs_batch_put_bytes(b, COL_TAG, tag, (uint64_t)n_tag, &err) ||
                cs_batch_put_bytes(b, COL_NAME, name, (uint64_t)n_name, &err) ||
                cs_batch_put_bytes(b, COL_FLAG, D->d[r] ? "yes" : "no", D->d[r] ? 3 : 2, &err);
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

/* ---------------------------------------------------------------- cases */

/* An answer as a few numbers per group, keyed by an integer code, so the
** kernel's and the loop's compare with one function. */
#define MAX_GROUPS 2048
typedef struct answer {
  uint64_t n_groups;
  double v[MAX_GROUPS][3];
  bool have[MAX_GROUPS];
} answer;

enum {
  Q_TOTALS,
  Q_SUM_WHERE,
  Q_BY_B,
  Q_BY_D_WHERE,
  Q_BY_KIND,
  Q_BY_BD,
  Q_BY_TAG,
  Q_BY_NAME,
  Q_BY_FLAG_WHERE,
  N_CASES
};
static const char *const case_names[N_CASES] = {"count, sum(a), min(c), max(c)",
                                                "sum(b) WHERE a > 0.9",
                                                "GROUP BY b: sum(a)",
                                                "GROUP BY d WHERE a > 0.5: count, avg(c)",
                                                "GROUP BY kind: count, sum(a)",
                                                "GROUP BY b, d: sum(a)",
                                                "GROUP BY tag (1,000 TEXT): sum(a)",
                                                "GROUP BY name (n/8 TEXT): sum(a)",
                                                "GROUP BY flag (TEXT d) WHERE a > 0.5: count, avg(c)"};

static const cs_store *S;
static const data *DD;
static answer ans;

/* The number of a tag ("tag-17": 17); MAX_GROUPS when it is none. */
static uint64_t tag_number(const uint8_t *p, uint64_t n) {
  if (n < 5 || n > 12 || memcmp(p, "tag-", 4) != 0) return MAX_GROUPS;
  uint64_t x = 0;
  for (uint64_t i = 4; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return MAX_GROUPS;
    x = x * 10 + (uint64_t)(p[i] - '0');
  }
  return x;
}

static void run_kernel(int q, int threads) {
  unsigned what[N_COLS] = {0};
  uint32_t keys[2];
  uint32_t nk = 0;
  cs_pred p = {.op = CS_CMP_GT, .col = COL_A, .a = {.kind = CS_VAL_FLOAT}};
  bool filtered = false;
  switch (q) {
    case Q_TOTALS: what[COL_A] = CS_AGG_SUM, what[COL_C] = CS_AGG_MIN | CS_AGG_MAX; break;
    case Q_SUM_WHERE: what[COL_B] = CS_AGG_SUM, filtered = true, p.a.f = 0.9; break;
    case Q_BY_B: what[COL_A] = CS_AGG_SUM, keys[nk++] = COL_B; break;
    case Q_BY_D_WHERE: what[COL_C] = CS_AGG_SUM, keys[nk++] = COL_D, filtered = true, p.a.f = 0.5; break;
    case Q_BY_KIND: what[COL_A] = CS_AGG_SUM, keys[nk++] = COL_KIND; break;
    case Q_BY_TAG: what[COL_A] = CS_AGG_SUM, keys[nk++] = COL_TAG; break;
    case Q_BY_NAME: what[COL_A] = CS_AGG_SUM, keys[nk++] = COL_NAME; break;
    case Q_BY_FLAG_WHERE:
      what[COL_C] = CS_AGG_SUM, keys[nk++] = COL_FLAG, filtered = true, p.a.f = 0.5;
      break;
    default: what[COL_A] = CS_AGG_SUM, keys[nk++] = COL_B, keys[nk++] = COL_D; break;
  }
  cs_err err = {0};
  cs_selector *sel = NULL;
  if (filtered && cs_selector_new(S, &p, 1, &sel, &err)) die("selector", &err);
  cs_agg_spec spec = {keys, nk, what, threads};
  cs_agg *a;
  if (cs_agg_new(S, &spec, &a, &err)) die("agg", &err);
  if (cs_agg_add_range(a, sel, 0, cs_store_rows(S), NULL, &err)) die("add", &err);
  memset(&ans, 0, sizeof ans);
  if (q == Q_BY_NAME) {
    /* too many groups to list: their number, and the totals of their counts and sums */
    ans.have[0] = true, ans.v[0][2] = (double)cs_agg_groups(a);
    for (uint64_t g = 0; g < cs_agg_groups(a); g++) {
      cs_agg_result r;
      cs_agg_result_get(a, g, COL_A, &r);
      ans.v[0][0] += (double)cs_agg_count(a, g), ans.v[0][1] += r.sum.f;
    }
    cs_agg_free(a);
    return;
  }
  for (uint64_t g = 0; g < cs_agg_groups(a); g++) {
    uint64_t code = 0;
    for (uint32_t k = 0; k < nk; k++) {
      cs_value v;
      cs_agg_key(a, g, k, &v);
      if (v.kind == CS_VAL_INT)
        code = (uint64_t)v.i;
      else if (q == Q_BY_TAG)
        code = tag_number(v.p, v.n);
      else if (q == Q_BY_FLAG_WHERE)
        code = v.n == 3;
      else
        for (uint64_t w = 0; w < 5; w++)
          if (strlen(kinds[w]) == v.n && memcmp(kinds[w], v.p, v.n) == 0) code = w;
    }
    if (q == Q_BY_BD) {
      cs_value vb, vd;
      cs_agg_key(a, g, 0, &vb), cs_agg_key(a, g, 1, &vd);
      code = (uint64_t)vb.i * 2 + (uint64_t)vd.i;
    }
    if (code >= MAX_GROUPS) die("group code out of range", NULL);
    cs_agg_result r;
    ans.have[code] = true;
    double *v = ans.v[code];
    v[0] = (double)cs_agg_count(a, g);
    switch (q) {
      case Q_TOTALS:
        cs_agg_result_get(a, g, COL_A, &r), v[1] = r.sum.f;
        cs_agg_result_get(a, g, COL_C, &r), v[2] = r.min.f - r.max.f;
        break;
      case Q_SUM_WHERE: cs_agg_result_get(a, g, COL_B, &r), v[1] = (double)r.sum.i; break;
      case Q_BY_D_WHERE:
      case Q_BY_FLAG_WHERE: cs_agg_result_get(a, g, COL_C, &r), v[1] = r.avg; break;
      default: cs_agg_result_get(a, g, COL_A, &r), v[1] = r.sum.f; break;
    }
  }
  cs_agg_free(a);
  cs_selector_free(sel);
}

static double acc1[MAX_GROUPS], acc2[MAX_GROUPS];
static uint8_t *seen; /* [n / 8 + 1] Q_BY_NAME: the names met */
static uint64_t accn[MAX_GROUPS];

static void run_loop(int q) {
  const data *D = DD;
  uint64_t n = D->n;
  memset(&ans, 0, sizeof ans);
  memset(acc1, 0, sizeof acc1), memset(acc2, 0, sizeof acc2), memset(accn, 0, sizeof accn);
  switch (q) {
    case Q_TOTALS: {
      double s = 0, mn = INFINITY, mx = -INFINITY;
      for (uint64_t i = 0; i < n; i++) {
        s += D->a[i];
        mn = D->c[i] < mn ? D->c[i] : mn;
        mx = D->c[i] > mx ? D->c[i] : mx;
      }
      ans.have[0] = true, ans.v[0][0] = (double)n, ans.v[0][1] = s, ans.v[0][2] = mn - mx;
      return;
    }
    case Q_SUM_WHERE: {
      int64_t s = 0;
      uint64_t cnt = 0;
      for (uint64_t i = 0; i < n; i++)
        if (D->a[i] > 0.9) s += D->b[i], cnt++;
      ans.have[0] = true, ans.v[0][0] = (double)cnt, ans.v[0][1] = (double)s;
      return;
    }
    case Q_BY_B:
      for (uint64_t i = 0; i < n; i++) acc1[D->b[i]] += D->a[i], accn[D->b[i]]++;
      break;
    case Q_BY_D_WHERE:
    case Q_BY_FLAG_WHERE:
      for (uint64_t i = 0; i < n; i++)
        if (D->a[i] > 0.5) acc1[D->d[i]] += D->c[i], accn[D->d[i]]++;
      for (int g = 0; g < 2; g++) acc1[g] = accn[g] ? acc1[g] / (double)accn[g] : 0;
      break;
    case Q_BY_KIND:
      for (uint64_t i = 0; i < n; i++) acc1[D->kind[i]] += D->a[i], accn[D->kind[i]]++;
      break;
    case Q_BY_TAG:
      for (uint64_t i = 0; i < n; i++) acc1[D->b[i]] += D->a[i], accn[D->b[i]]++;
      break;
    case Q_BY_NAME: {
      if (!seen) seen = xmalloc(n / 8 + 1);
      memset(seen, 0, n / 8 + 1);
      double s = 0, groups = 0;
      for (uint64_t i = 0; i < n; i++) groups += !seen[D->name[i]], seen[D->name[i]] = 1, s += D->a[i];
      ans.have[0] = true, ans.v[0][0] = (double)n, ans.v[0][1] = s, ans.v[0][2] = groups;
      return;
    }
    default:
      for (uint64_t i = 0; i < n; i++) {
        uint64_t g = (uint64_t)D->b[i] * 2 + (uint64_t)D->d[i];
        acc1[g] += D->a[i], accn[g]++;
      }
      break;
  }
  for (uint64_t g = 0; g < MAX_GROUPS; g++)
    if (accn[g]) ans.have[g] = true, ans.v[g][0] = (double)accn[g], ans.v[g][1] = acc1[g];
}

static bool answers_agree(const answer *x, const answer *y) {
  for (uint64_t g = 0; g < MAX_GROUPS; g++) {
    if (x->have[g] != y->have[g]) return false;
    for (int k = 0; k < 3; k++)
      if (!(fabs(x->v[g][k] - y->v[g][k]) <= 1e-9 * (fabs(y->v[g][k]) + 1))) return false;
  }
  return true;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
  uint64_t n = 10000000;
  int rounds = 9;
  const char *dir = NULL;
  unsigned only = ~0u; /* the cases to run, a bit each */
  bool cpu_time = false, alt = false, first = false;
  cs__agg_tuning tune, tune_alt;
  cs__agg_tuning_default(&tune);
  cs__agg_tuning_default(&tune_alt);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rows") && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      for (char *c = argv[++i], *e; *c; c = *e ? e + 1 : e) {
        long q = strtol(c, &e, 10);
        if (e == c || q < 0 || q >= N_CASES) die("--only: case numbers 0..8, comma-separated", NULL);
        only = (only == ~0u ? 0 : only) | 1u << q;
      }
    else if (!strcmp(argv[i], "--direct-max") && i + 1 < argc)
      tune.direct_max = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--few-groups") && i + 1 < argc)
      tune.few_groups = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--dict-max") && i + 1 < argc)
      tune.dict_max = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--alt-direct-max") && i + 1 < argc)
      tune_alt.direct_max = strtoull(argv[++i], NULL, 10), alt = true;
    else if (!strcmp(argv[i], "--alt-few-groups") && i + 1 < argc)
      tune_alt.few_groups = (uint32_t)strtoul(argv[++i], NULL, 10), alt = true;
    else if (!strcmp(argv[i], "--lane-groups") && i + 1 < argc)
      tune.lane_groups = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--alt-lane-groups") && i + 1 < argc)
      tune_alt.lane_groups = (uint32_t)strtoul(argv[++i], NULL, 10), alt = true;
    else if (!strcmp(argv[i], "--alt-dict-max") && i + 1 < argc)
      tune_alt.dict_max = (uint32_t)strtoul(argv[++i], NULL, 10), alt = true;
    else if (!strcmp(argv[i], "--codes-bytes") && i + 1 < argc)
      tune.codes_bytes = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--alt-codes-bytes") && i + 1 < argc)
      tune_alt.codes_bytes = strtoull(argv[++i], NULL, 10), alt = true;
    else if (!strcmp(argv[i], "--first"))
      first = true;
    else if (!strcmp(argv[i], "--cpu"))
      cpu_time = true;
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else
      die("usage: bench_agg [--rows N] [--rounds R] [--dir D] [--only CASE[,CASE...]] [--cpu] [--direct-max "
          "N] [--few-groups N]"
          " [--dict-max N] [--lane-groups N] [--codes-bytes N] [--alt-direct-max N] [--alt-few-groups N]"
          " [--alt-dict-max N] [--alt-lane-groups N] [--alt-codes-bytes N] [--first]",
          NULL);
  }
  if (rounds < 1 || rounds > MAX_ROUNDS) die("rounds: 1..51", NULL);
  cs__agg_tuning_set(&tune);
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/bench_agg.XXXXXX",
           dir ? dir : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp"));
  if (!mkdtemp(tmpl)) die("mkdtemp", NULL);
  char path[600];
  snprintf(path, sizeof path, "%s/agg.cst", tmpl);
  static data D;
  data_generate(&D, n);
  DD = &D;
  cs_store *s = store_make(path, &D);
  S = s;
  char cpu[128];
  bench_cpu_model(cpu, sizeof cpu);
  printf("bench_agg: %" PRIu64 " rows, %" PRIu64 " records, %d rounds, %s, %ld cpus, load %.2f\n", n,
         cs_store_records(s), rounds, cpu, bench_nproc(), bench_loadavg());
  printf("(shared host: compare ratios inside this run, not absolute times across runs; %s)\n\n",
         cpu_time ? "process CPU time" : "wall time");

  /* Check every kernel (of --only's case) against its loop before timing. */
  static answer ref;
  int fails = 0;
  for (int q = 0; q < N_CASES; q++) {
    if (!(only >> q & 1)) continue;
    run_loop(q);
    ref = ans;
    for (int t = 1; t <= 2 + alt; t++) {
      if (t == 3) cs__agg_tuning_set(&tune_alt);
      run_kernel(q, t == 3 ? 1 : t);
      cs__agg_tuning_set(&tune);
      if (!answers_agree(&ans, &ref)) {
        fprintf(stderr, "bench_agg: %s at %d threads%s differs from the loop\n", case_names[q],
                t == 3 ? 1 : t, t == 3 ? " (alt)" : "");
        fails++;
      }
    }
  }
  if (fails) return 1;

  /* variants per case: 0 = loop, 1 = kernel 1 thread, 2 = kernel 2
  ** threads, 3 = the kernel at 1 thread with the alternative switch points */
  static double ms[N_CASES][4][MAX_ROUNDS];
  int nvar = 3 + alt;
  for (int r = 0; r < rounds; r++)
    for (int q = 0; q < N_CASES; q++)
      for (int k = 0; k < nvar && (only >> q & 1); k++) {
        int v =
            (k + r) % nvar; /* the order rotates: no variant always follows the loop's sweep of the arrays */
        if (v == 3) cs__agg_tuning_set(&tune_alt);
        uint64_t t0 = cpu_time ? bench_process_cpu_ns() : bench_now_ns();
        if (v == 0)
          run_loop(q);
        else
          run_kernel(q, v == 3 ? 1 : v);
        ms[q][v][r] = (double)((cpu_time ? bench_process_cpu_ns() : bench_now_ns()) - t0) / 1e6;
        if (v == 3) cs__agg_tuning_set(&tune);
      }
  printf("%-42s %-12s %10s %10s %10s %8s\n", "case", "variant", "median ms", "min", "max", "loop/it");
  const char *vn[4] = {"C loop", "kernel 1t", "kernel 2t", "alt 1t"};
  for (int q = 0; q < N_CASES; q++) {
    if (!(only >> q & 1)) continue;
    bench_stats base = bench_stats_of(ms[q][0], rounds);
    for (int v = 0; v < nvar; v++) {
      bench_stats st = bench_stats_of(ms[q][v], rounds);
      printf("%-42s %-12s %10.3f %10.3f %10.3f %8.2f\n", v ? "" : case_names[q], vn[v], st.median, st.min,
             st.max, base.median / st.median);
    }
  }
  if (first) {
    /* the first query on a fresh snapshot (caches empty) against the second */
    static double fq[N_CASES][4][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
      for (int q = 0; q < N_CASES; q++)
        for (int va = 0; va < 1 + alt && (only >> q & 1); va++) {
          int v = (va + r) % (1 + alt); /* rotating, as above */
          cs_err err = {0};
          cs_store *fresh;
          if (cs_store_open(path, CS_VERIFY_HEADER, &fresh, &err)) die("reopen", &err);
          S = fresh;
          if (v) cs__agg_tuning_set(&tune_alt);
          for (int k = 0; k < 2; k++) {
            uint64_t t0 = cpu_time ? bench_process_cpu_ns() : bench_now_ns();
            run_kernel(q, 1);
            fq[q][2 * v + k][r] = (double)((cpu_time ? bench_process_cpu_ns() : bench_now_ns()) - t0) / 1e6;
          }
          cs__agg_tuning_set(&tune);
          cs_store_close(fresh);
          S = s;
        }
    printf("\n%-42s %-12s %10s %10s %10s\n", "case (a fresh snapshot, 1 thread)", "query", "median ms", "min",
           "max");
    for (int q = 0; q < N_CASES; q++) {
      if (!(only >> q & 1)) continue;
      static const char *const fn[4] = {"first", "second", "first alt", "second alt"};
      for (int k = 0; k < 2 + 2 * alt; k++) {
        bench_stats st = bench_stats_of(fq[q][k], rounds);
        printf("%-42s %-12s %10.3f %10.3f %10.3f\n", k ? "" : case_names[q], fn[k], st.median, st.min,
               st.max);
      }
    }
  }
  cs_store_close(s);
  remove(path);
  rmdir(tmpl);
  return 0;
}
