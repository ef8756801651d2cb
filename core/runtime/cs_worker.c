/*
** cs_worker.c - one background thread that runs one job at a time, so a
** scan can select its next batch while SQLite consumes the current one.
**
** WHY.  A filtered scan alternates two kinds of work on one thread: the
** kernels select a batch (evaluate, count, gather), then SQLite takes the
** batch's rows one at a time (~30 ns a row of VDBE work for `sum(b)`,
** which no kernel can shorten).  Done one after the other, the query costs
** their sum.  With the next batch selected in the background while SQLite
** works through the current one, it costs about the larger of the two plus
** the first batch: on `sum(b) WHERE a > 0.9` over 10M rows, the kernels'
** ~15 ms disappear behind SQLite's ~30 (docs/performance.md, "Overlapping
** the kernels with SQLite").  On a host where the second core is busy the
** two threads share one core and the query costs the sum again, never
** more: the waits below sleep (a condition variable), they never spin.
**
** The protocol is deliberately small: submit one job, later wait for it;
** a second submit first waits for the first.  A wait never waits for a
** thread that has not started: if the job is still unclaimed when the
** submitter needs it (the worker's core was idle long enough for it to
** sleep, and waking it costs tens of microseconds, or the scheduler gave
** the core to another process for milliseconds), the submitter takes the
** job back and runs it itself; the worker, when it wakes, finds nothing
** to do (issue 12; docs/performance.md, "Helpers slow to wake").  The job function must not
** touch anything the submitting thread uses until the wait returns; the
** mutex gives the wait a happens-before edge over everything the job
** wrote.  The thread is started at the first submit, not at creation, so
** a cursor that never needs it costs nothing, and is joined by
** cs_worker_free.
**
** Cursors take workers from a small process-wide pool (cs_worker_acquire,
** cs_worker_release) rather than starting a thread per query: a `_rows`
** statement prepared per call would otherwise pay a thread start and join
** (tens of microseconds) on a query of two milliseconds.  A worker pooled
** before a fork() has no thread in the child, so the pool drops (and
** leaks, never touches) workers started by another process.
*/
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "cs_runtime_internal.h"

struct cs_worker {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool started, stop;
  void (*fn)(void *); /* the job in flight, or NULL */
  void *arg;
  bool running;        /* the worker has claimed the job in flight */
  bool done;           /* the job in flight has finished */
  uint64_t taken_back; /* jobs the submitter ran itself (cs_worker_taken_back) */
  pthread_t thread;
  pid_t pid; /* the process that started the thread */
};

static void *worker_main(void *p) {
  cs_worker *w = p;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->stop && (!w->fn || w->done)) pthread_cond_wait(&w->cv, &w->mu);
    if (w->stop) break;
    void (*fn)(void *) = w->fn;
    void *arg = w->arg;
    w->running = true;
    pthread_mutex_unlock(&w->mu);
    cs__own_thread_busy(true);
    fn(arg);
    cs__own_thread_busy(false);
    pthread_mutex_lock(&w->mu);
    w->running = false;
    w->done = true;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

cs_rc cs_worker_new(cs_worker **out, cs_err *err) {
  *out = NULL;
  cs_worker *w = cs__mem_calloc(1, sizeof *w);
  if (!w) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a worker");
  if (pthread_mutex_init(&w->mu, NULL) != 0) {
    cs__mem_free(w);
    return cs_err_set(err, CS_ENOMEM, "cannot create a worker's mutex");
  }
  if (pthread_cond_init(&w->cv, NULL) != 0) {
    pthread_mutex_destroy(&w->mu);
    cs__mem_free(w);
    return cs_err_set(err, CS_ENOMEM, "cannot create a worker's condition variable");
  }
  *out = w;
  return CS_OK;
}

void cs_worker_wait(cs_worker *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  if (w->fn && !w->done && !w->running) {
    /* Not claimed yet: run it here rather than wait for the thread. */
    void (*fn)(void *) = w->fn;
    void *arg = w->arg;
    w->fn = NULL, w->arg = NULL;
    w->taken_back++;
    pthread_mutex_unlock(&w->mu);
    fn(arg);
    return;
  }
  while (w->fn && !w->done) pthread_cond_wait(&w->cv, &w->mu);
  w->fn = NULL, w->arg = NULL;
  pthread_mutex_unlock(&w->mu);
}

bool cs_worker_submit(cs_worker *w, void (*fn)(void *), void *arg) {
  cs_worker_wait(w);
  pthread_mutex_lock(&w->mu);
  if (!w->started) {
    /* The thread starts here, at the first job; if it cannot, the caller
    ** runs the job itself. */
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      pthread_mutex_unlock(&w->mu);
      return false;
    }
    w->started = true;
    w->pid = getpid();
  }
  w->fn = fn, w->arg = arg, w->done = false;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  return true;
}

uint64_t cs_worker_taken_back(cs_worker *w) {
  if (!w) return 0;
  pthread_mutex_lock(&w->mu);
  uint64_t n = w->taken_back;
  pthread_mutex_unlock(&w->mu);
  return n;
}

void cs_worker_free(cs_worker *w) {
  if (!w) return;
  cs_worker_wait(w);
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_broadcast(&w->cv);
  bool started = w->started;
  pthread_mutex_unlock(&w->mu);
  if (started) pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  cs__mem_free(w);
}

/* ------------------------------------------------------------------ pool */

#define CS_WORKER_POOL 8

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static cs_worker *pool[CS_WORKER_POOL];
static int pool_n;

cs_worker *cs_worker_acquire(void) {
  pthread_mutex_lock(&pool_mu);
  while (pool_n > 0) {
    cs_worker *w = pool[--pool_n];
    if (!w->started || w->pid == getpid()) {
      pthread_mutex_unlock(&pool_mu);
      return w;
    }
    /* pooled before a fork: its thread is not in this process */
  }
  pthread_mutex_unlock(&pool_mu);
  cs_worker *w = NULL;
  cs_err err;
  return cs_worker_new(&w, &err) == CS_OK ? w : NULL;
}

void cs_worker_release(cs_worker *w) {
  if (!w) return;
  cs_worker_wait(w);
  pthread_mutex_lock(&pool_mu);
  if (pool_n < CS_WORKER_POOL && (!w->started || w->pid == getpid())) {
    pool[pool_n++] = w;
    w = NULL;
  }
  pthread_mutex_unlock(&pool_mu);
  cs_worker_free(w);
}
