/*
** cs_team.c - the kernels' parallel loops: work cut into chunks that the
** calling thread and any helper already awake claim one at a time, so no
** kernel ever waits for a thread that has not started.
**
** WHY NOT OPENMP REGIONS.  The kernels used to run `#pragma omp parallel`
** regions: each thread took a fixed share (1/nt of the rows), and the
** region ended when the last share was done.  On a quiet 2-vCPU host the
** second thread is often asleep in its hypervisor's idle loop after a long
** single-threaded query, and wakes 2-8 ms late; the caller finished its
** half in 0.2 ms and then waited for the other half.  Measured with
** bench/bench_wake.c: a 2-thread region over 2 x 200 us of work took 16 ms
** back to back and 24 ms beside a spinning process, against 0.43 ms on one
** thread; a `_rows` query right after a 300 ms native scan ran 7.7x slower
** than back to back (docs/performance.md, "Helpers slow to wake").  A fixed
** share cannot be given back, and the end of an OpenMP region waits for
** every thread of its team, started or not.
**
** HOW.  cs__team_run(threads, n_chunks, fn, ctx) posts a job and starts
** claiming chunks itself at once (an atomic counter; one claim per chunk of
** tens of microseconds of work).  Helpers from a process-wide pool join a
** posted job while it still has unclaimed chunks, claiming their first
** chunk as they join, under the pool's mutex.  When the counter passes the
** last chunk, the caller closes the job (no one joins after) and waits only
** for helpers that joined, each of which holds at most one chunk.  A helper
** that wakes late finds the job closed or its chunks all taken and goes
** back to sleep: a 2-thread kernel is never slower than the 1-thread one by
** more than one post (a mutex and, when a helper sleeps, one futex wake).
**
** Which member ran which chunk is left to timing, so everything a kernel
** writes must depend on the chunk alone: per-chunk counts and prefix sums
** give each chunk its place in the output (cs_select.c, cs_mask.c), and
** totals are summed per chunk.  Output is byte-identical for any number of
** threads and any interleaving.
**
** Helpers spin for CS__TEAM_SPIN_NS after their last job before they sleep
** on a condition variable, so the next kernel call of the same query (the
** next batch, the next step of a two-phase kernel) finds them awake; a
** spinning or working helper counts as the process's own load, not as
** another process's (cs__own_thread_busy).  Up to CS__TEAM_JOBS jobs run
** at once (several cursors, several connections); a caller that finds every
** job slot taken runs its chunks alone rather than wait.  Helpers are
** started when a job first asks for them (at most the job's threads - 1
** more than are busy in other jobs) and live for the process.  After fork() the child has none of the
** parent's helpers: the child handler resets the pool to empty, and
** threads are started again on demand.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "cs_runtime_internal.h"

/* Jobs that may have helpers at once; more concurrent callers run alone. */
#define CS__TEAM_JOBS 8
/* How long an idle helper keeps looking for a job before it sleeps: about
** two batches of SQLite's row loop, so a scan's next kernel call finds it
** awake, short enough that an idle process gives its cores back at once. */
#define CS__TEAM_SPIN_NS 200000ull
/* At most this many helper threads (beyond it, jobs get fewer helpers). */
#define CS__TEAM_MAX_HELPERS (CS__MAX_THREADS - 1)

typedef struct team_job {
  cs__team_fn fn;
  void *ctx;
  uint64_t n_chunks;
  _Atomic uint64_t next; /* the next unclaimed chunk */
  int want;              /* helpers the job can use */
  int joined;            /* helpers that joined (member ids 1..joined) */
  int inside;            /* helpers still running its chunks */
  bool open;             /* helpers may join */
  bool in_use;
} team_job;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t wake; /* sleeping helpers */
  pthread_cond_t left; /* callers waiting for their helpers to leave */
  int helpers;         /* helper threads started */
  int working;         /* helpers inside a job */
  int sleeping;
  _Atomic uint64_t posted; /* bumped at every post, for spinning helpers */
  team_job jobs[CS__TEAM_JOBS];
  _Atomic uint64_t runs, helped_chunks, alone; /* cs__team_stats */
} pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .left = PTHREAD_COND_INITIALIZER};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* In a forked child: no helper exists, and no other thread holds the lock
** (the child has one thread); start over. */
static void team_after_fork(void) {
  pthread_mutex_init(&pool.mu, NULL);
  pthread_cond_init(&pool.wake, NULL);
  pthread_cond_init(&pool.left, NULL);
  pool.helpers = pool.working = pool.sleeping = 0;
  for (int j = 0; j < CS__TEAM_JOBS; j++) pool.jobs[j].in_use = false;
}

static void team_register_atfork(void) { (void)pthread_atfork(NULL, NULL, team_after_fork); }

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* A job a helper may join: open, wanting helpers, chunks left.  Under mu. */
static team_job *joinable(void) {
  for (int j = 0; j < CS__TEAM_JOBS; j++) {
    team_job *job = &pool.jobs[j];
    if (job->in_use && job->open && job->joined < job->want &&
        atomic_load_explicit(&job->next, memory_order_relaxed) < job->n_chunks)
      return job;
  }
  return NULL;
}

/* Runs chunk c and every chunk it can claim after it. */
static uint64_t claim_loop(team_job *job, uint64_t c, int member) {
  uint64_t ran = 0;
  for (; c < job->n_chunks; c = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed)) {
    job->fn(job->ctx, c, member);
    ran++;
  }
  return ran;
}

static void *helper_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&pool.mu);
  for (;;) {
    team_job *job = joinable();
    if (job) {
      /* Join with a chunk in hand, so a caller that closes the job waits
      ** only for helpers that hold work. */
      uint64_t c = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
      if (c >= job->n_chunks) continue;
      int member = ++job->joined;
      int team = job->want + 1;
      job->inside++;
      pool.working++;
      pthread_mutex_unlock(&pool.mu);
      cs__own_thread_busy(true);
      cs__bind_thread(member, team);
      uint64_t ran = claim_loop(job, c, member);
      atomic_fetch_add_explicit(&pool.helped_chunks, ran, memory_order_relaxed);
      pthread_mutex_lock(&pool.mu);
      pool.working--;
      if (--job->inside == 0 && !job->open) pthread_cond_broadcast(&pool.left);
      pthread_mutex_unlock(&pool.mu);
      /* Look for the next job while spinning, still marked busy. */
      uint64_t seen = atomic_load_explicit(&pool.posted, memory_order_acquire);
      uint64_t t0 = mono_ns();
      while (atomic_load_explicit(&pool.posted, memory_order_acquire) == seen &&
             mono_ns() - t0 < CS__TEAM_SPIN_NS)
        for (int k = 0; k < 64; k++) cpu_relax();
      cs__own_thread_busy(false);
      pthread_mutex_lock(&pool.mu);
      continue;
    }
    pool.sleeping++;
    pthread_cond_wait(&pool.wake, &pool.mu);
    pool.sleeping--;
  }
  return NULL;
}

/* Starts helpers until `want` are neither inside nor promised to another
** open job (job itself already posted); under mu.  A failure leaves fewer. */
static void ensure_helpers(const team_job *self, int want) {
  int promised = 0;
  for (int j = 0; j < CS__TEAM_JOBS; j++) {
    const team_job *o = &pool.jobs[j];
    if (o != self && o->in_use && o->open && o->joined < o->want) promised += o->want - o->joined;
  }
  while (pool.helpers - pool.working - promised < want && pool.helpers < CS__TEAM_MAX_HELPERS) {
    pthread_t t;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, helper_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) return;
    pool.helpers++;
  }
}

int cs__team_run(int threads, uint64_t n_chunks, cs__team_fn fn, void *ctx) {
  if (n_chunks == 0) return 1;
  if (threads <= 1 || n_chunks == 1) {
    for (uint64_t c = 0; c < n_chunks; c++) fn(ctx, c, 0);
    return 1;
  }
  pthread_once(&atfork_once, team_register_atfork);
  int want = threads - 1;
  if ((uint64_t)want > n_chunks - 1) want = (int)(n_chunks - 1);
  pthread_mutex_lock(&pool.mu);
  team_job *job = NULL;
  for (int j = 0; j < CS__TEAM_JOBS && !job; j++)
    if (!pool.jobs[j].in_use) job = &pool.jobs[j];
  if (!job) {
    pthread_mutex_unlock(&pool.mu);
    for (uint64_t c = 0; c < n_chunks; c++) fn(ctx, c, 0);
    return 1;
  }
  job->fn = fn, job->ctx = ctx, job->n_chunks = n_chunks, job->want = want;
  job->joined = job->inside = 0;
  job->open = job->in_use = true;
  atomic_store_explicit(&job->next, 0, memory_order_relaxed);
  ensure_helpers(job, want);
  atomic_fetch_add_explicit(&pool.posted, 1, memory_order_release);
  if (pool.sleeping > 0) {
    if (pool.sleeping <= want)
      pthread_cond_broadcast(&pool.wake);
    else
      for (int k = 0; k < want; k++) pthread_cond_signal(&pool.wake);
  }
  pthread_mutex_unlock(&pool.mu);

  cs__bind_thread(0, want + 1);
  claim_loop(job, atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed), 0);

  pthread_mutex_lock(&pool.mu);
  job->open = false;
  while (job->inside > 0) pthread_cond_wait(&pool.left, &pool.mu);
  int members = 1 + job->joined;
  job->in_use = false;
  pthread_mutex_unlock(&pool.mu);
  atomic_fetch_add_explicit(&pool.runs, 1, memory_order_relaxed);
  if (members == 1) atomic_fetch_add_explicit(&pool.alone, 1, memory_order_relaxed);
  return members;
}

uint64_t cs__team_chunk(uint64_t n, int threads, uint64_t min_chunk, uint64_t align, uint64_t max_chunks) {
  /* Eight chunks per thread balance a late or slow helper; no chunk below
  ** min_chunk (a claim and a call per chunk), no more than max_chunks. */
  uint64_t t = threads > 1 ? (uint64_t)threads : 1;
  uint64_t c = (n + 8 * t - 1) / (8 * t);
  if (c < min_chunk) c = min_chunk;
  if (max_chunks && (n + c - 1) / c > max_chunks) c = (n + max_chunks - 1) / max_chunks;
  c = (c + align - 1) & ~(align - 1);
  return c ? c : align;
}

void cs__team_stats(uint64_t *runs, uint64_t *helped_chunks, uint64_t *alone) {
  if (runs) *runs = atomic_load_explicit(&pool.runs, memory_order_relaxed);
  if (helped_chunks) *helped_chunks = atomic_load_explicit(&pool.helped_chunks, memory_order_relaxed);
  if (alone) *alone = atomic_load_explicit(&pool.alone, memory_order_relaxed);
}
