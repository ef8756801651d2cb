/*
** bench_wake.c - what a helper thread costs to wake: the OpenMP team's
** worker and the cursor pipeline's background thread (cs_worker), each
** measured back to back and after a long single-threaded phase.
**
** WHY.  Issue 12: a threaded query is slowest right after a long
** single-threaded one (a native scan, SQLite's own row loop), when the
** other core has been idle long enough for the helper to stop spinning and
** sleep; the first parallel region then waits for the helper to be
** scheduled again.  This measures that wait directly, without SQLite and
** without a store, so the number is the scheduler's and the runtime's:
**
**   omp-region   a two-thread OpenMP region over a fixed amount of work
**                (W ns of arithmetic split in two halves), timed from the
**                caller's entry to its exit (the join waits for both
**                halves), plus the delay until the second thread starts
**                its half;
**   team         the same work cut into 32 chunks on colstore's kernel
**                team (cs_team.c: the caller starts at once, a helper
**                takes what is left when it wakes), timed the same way,
**                plus the delay until a helper runs its first chunk;
**   worker       cs_worker_submit of a trivial job to an idle pooled
**                worker: the delay until the job starts running, and
**                until cs_worker_wait returns.
**
** Each is measured in three settings, interleaved over the rounds:
**
**   hot      right after the same operation (back to back);
**   after    right after the calling thread spun alone for --busy-ms (the
**            other core idle: the helper's spin window has passed and it
**            sleeps in the kernel);
**   loaded   back to back, with a child process spinning on one core for
**            the whole run of this setting (--no-load skips it).
**
** Reports medians with min/max in microseconds.  The identical-output
** check is the work's checksum: both halves must compute the same sums
** in every setting.
**
**   build/bench_wake [--rounds 21] [--busy-ms 300] [--work-us 200] [--no-load]
*/
#include <omp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "bench_util.h"
#include "colstore.h"
#include "cs_kernels_internal.h"

static uint64_t g_work_iters = 200000; /* per half; calibrated to --work-us */

/* Arithmetic the compiler cannot drop: a dependent chain. */
static uint64_t spin_work(uint64_t iters, uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < iters; i++) x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

static void spin_ms(double ms) {
  uint64_t end = bench_now_ns() + (uint64_t)(ms * 1e6);
  volatile uint64_t sink = 0;
  while (bench_now_ns() < end) sink += spin_work(1000, sink);
}

/* One two-thread region; out: total ns, the second thread's start delay
** in ns (or -1 if the runtime gave one thread), and the checksum. */
static void omp_region(double *total_ns, double *start_ns, uint64_t *sum) {
  uint64_t t0 = bench_now_ns();
  _Atomic uint64_t second_start = 0;
  uint64_t halves[2] = {0, 0};
#pragma omp parallel num_threads(2)
  {
    int id = omp_get_thread_num();
    if (id == 1) atomic_store(&second_start, bench_now_ns());
    halves[id] = spin_work(g_work_iters, (uint64_t)id + 1);
  }
  uint64_t t1 = bench_now_ns();
  *total_ns = (double)(t1 - t0);
  uint64_t s2 = atomic_load(&second_start);
  *start_ns = s2 ? (double)(s2 - t0) : -1;
  *sum = halves[0] ^ (halves[1] << 1);
}

/* The team's version: 32 chunks of 1/16 of a half each. */
#define TEAM_CHUNKS 32
typedef struct team_arg {
  uint64_t t0;
  _Atomic uint64_t helper_start;
  uint64_t part[TEAM_CHUNKS];
} team_arg;

static void team_chunk(void *p, uint64_t c, int member) {
  team_arg *a = p;
  uint64_t zero = 0;
  if (member > 0) atomic_compare_exchange_strong(&a->helper_start, &zero, bench_now_ns());
  a->part[c] = spin_work(g_work_iters * 2 / TEAM_CHUNKS, c + 1);
}

static void team_region(double *total_ns, double *start_ns, uint64_t *sum) {
  team_arg a;
  memset(&a, 0, sizeof a);
  a.t0 = bench_now_ns();
  cs__team_run(2, TEAM_CHUNKS, team_chunk, &a);
  uint64_t t1 = bench_now_ns();
  *total_ns = (double)(t1 - a.t0);
  uint64_t h = atomic_load(&a.helper_start);
  *start_ns = h ? (double)(h - a.t0) : -1;
  uint64_t x = 0;
  for (int c = 0; c < TEAM_CHUNKS; c++) x = x * 31 + a.part[c];
  *sum = x;
}

typedef struct job_arg {
  _Atomic uint64_t started;
  uint64_t out;
} job_arg;

static void job_fn(void *p) {
  job_arg *a = p;
  atomic_store(&a->started, bench_now_ns());
  a->out = spin_work(1000, 7);
}

static void worker_once(cs_worker *w, double *start_ns, double *done_ns, uint64_t *sum) {
  job_arg a = {0, 0};
  uint64_t t0 = bench_now_ns();
  if (!cs_worker_submit(w, job_fn, &a)) job_fn(&a);
  cs_worker_wait(w);
  uint64_t t1 = bench_now_ns();
  *start_ns = (double)(atomic_load(&a.started) - t0);
  *done_ns = (double)(t1 - t0);
  *sum = a.out;
}

static pid_t load_start(void) {
  pid_t pid = fork();
  if (pid == 0) {
    for (;;) spin_ms(1000);
  }
  return pid;
}

static void load_stop(pid_t pid) {
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
}

static void print_row(const char *what, const char *setting, const double *v, int n) {
  bench_stats s = bench_stats_of(v, n);
  printf("  %-26s %-7s %10.1f us  [%9.1f, %9.1f]\n", what, setting, s.median / 1e3, s.min / 1e3, s.max / 1e3);
}

int main(int argc, char **argv) {
  int rounds = 21;
  double busy_ms = 300, work_us = 200;
  bool load = true;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--busy-ms") && i + 1 < argc)
      busy_ms = atof(argv[++i]);
    else if (!strcmp(argv[i], "--work-us") && i + 1 < argc)
      work_us = atof(argv[++i]);
    else if (!strcmp(argv[i], "--no-load"))
      load = false;
    else {
      fprintf(stderr, "usage: %s [--rounds N] [--busy-ms MS] [--work-us US] [--no-load]\n", argv[0]);
      return 2;
    }
  }
  if (rounds < 1 || rounds > 1000) rounds = 21;
  /* calibrate the half's work to work_us on this core */
  uint64_t t0 = bench_now_ns();
  volatile uint64_t sink = spin_work(1000000, 3);
  double ns_per_iter = (double)(bench_now_ns() - t0) / 1e6;
  (void)sink;
  g_work_iters = (uint64_t)(work_us * 1e3 / (ns_per_iter > 0 ? ns_per_iter : 1));
  const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT");
  printf(
      "bench_wake: %ld cpus, %d rounds, busy phase %.0f ms, work %.0f us per half (%llu iters), "
      "OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s, load average %.2f\n",
      bench_nproc(), rounds, busy_ms, work_us, (unsigned long long)g_work_iters, wp ? wp : "(unset)",
      sc ? sc : "(unset)", bench_loadavg());

  cs_worker *w = cs_worker_acquire();
  if (!w) {
    fprintf(stderr, "bench_wake: no worker thread\n");
    return 1;
  }
  enum { HOT, AFTER, LOADED, N_SET };
  static const char *const set_name[N_SET] = {"hot", "after", "loaded"};
  double *omp_total[N_SET], *omp_start[N_SET], *wk_start[N_SET], *wk_done[N_SET];
  double *team_total[N_SET], *team_start[N_SET];
  for (int k = 0; k < N_SET; k++) {
    team_total[k] = calloc((size_t)rounds, sizeof(double));
    team_start[k] = calloc((size_t)rounds, sizeof(double));
    omp_total[k] = calloc((size_t)rounds, sizeof(double));
    omp_start[k] = calloc((size_t)rounds, sizeof(double));
    wk_start[k] = calloc((size_t)rounds, sizeof(double));
    wk_done[k] = calloc((size_t)rounds, sizeof(double));
  }
  uint64_t want_omp = 0, want_wk = 0, want_team = 0;
  bool have_omp = false, have_wk = false, have_team = false, bad = false;
  int team_alone[N_SET] = {0};
  double single_ns[1024];
  int n_single = 0;
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < N_SET; k++) {
      if (k == LOADED && !load) continue;
      pid_t child = k == LOADED ? load_start() : -1;
      if (k == LOADED) spin_ms(20); /* let the load settle on its core */
      double tot, st, wst, wdn;
      uint64_t sum;
      /* team first: libgomp's idle workers spin for ~5 ms after a region
      ** and would hold the core the team's helper needs */
      team_region(&tot, &st, &sum);
      if (k == AFTER) spin_ms(busy_ms);
      team_region(&tot, &st, &sum);
      team_total[k][r] = tot, team_start[k][r] = st < 0 ? tot : st;
      team_alone[k] += st < 0;
      if (!have_team)
        want_team = sum, have_team = true;
      else
        bad |= sum != want_team;
      /* omp: warm it up, then (AFTER) idle the helper */
      omp_region(&tot, &st, &sum);
      if (k == AFTER) spin_ms(busy_ms);
      omp_region(&tot, &st, &sum);
      omp_total[k][r] = tot, omp_start[k][r] = st;
      if (!have_omp)
        want_omp = sum, have_omp = true;
      else
        bad |= sum != want_omp;
      spin_ms(10); /* libgomp's spin window passes before the worker and the next team run */
      /* worker */
      worker_once(w, &wst, &wdn, &sum);
      if (k == AFTER) spin_ms(busy_ms);
      worker_once(w, &wst, &wdn, &sum);
      wk_start[k][r] = wst, wk_done[k][r] = wdn;
      if (!have_wk)
        want_wk = sum, have_wk = true;
      else
        bad |= sum != want_wk;
      load_stop(child);
    }
    /* the single-threaded anchor: the same work on one thread, both halves */
    uint64_t a = bench_now_ns();
    uint64_t h0 = spin_work(g_work_iters, 1), h1 = spin_work(g_work_iters, 2);
    if (n_single < 1024) single_ns[n_single++] = (double)(bench_now_ns() - a);
    bad |= (h0 ^ (h1 << 1)) != want_omp;
  }
  if (bad) {
    fprintf(stderr, "bench_wake: the variants computed different sums; nothing is worth timing\n");
    return 1;
  }
  printf("\nmedian [min, max] over %d rounds\n", rounds);
  print_row("one thread, both halves", "-", single_ns, n_single);
  for (int k = 0; k < N_SET; k++) {
    if (k == LOADED && !load) continue;
    print_row("omp region, 2 threads", set_name[k], omp_total[k], rounds);
    print_row("  second thread starts at", set_name[k], omp_start[k], rounds);
  }
  for (int k = 0; k < N_SET; k++) {
    if (k == LOADED && !load) continue;
    print_row("team, 2 threads", set_name[k], team_total[k], rounds);
    print_row("  helper's first chunk at", set_name[k], team_start[k], rounds);
    printf("  %-26s %-7s %d of %d rounds (counted as the whole run above)\n", "  no helper joined",
           set_name[k], team_alone[k], rounds);
  }
  for (int k = 0; k < N_SET; k++) {
    if (k == LOADED && !load) continue;
    print_row("worker job starts at", set_name[k], wk_start[k], rounds);
    print_row("worker job done at", set_name[k], wk_done[k], rounds);
  }
  bench_stats one = bench_stats_of(single_ns, n_single);
  for (int k = 0; k < N_SET; k++) {
    if (k == LOADED && !load) continue;
    bench_stats two = bench_stats_of(omp_total[k], rounds);
    bench_stats team = bench_stats_of(team_total[k], rounds);
    printf("ratio 2-thread region / 1 thread (%s): omp %.2fx, team %.2fx\n", set_name[k],
           two.median / one.median, team.median / one.median);
  }
  cs_worker_release(w);
  return 0;
}
