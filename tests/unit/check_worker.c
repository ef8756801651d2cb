/*
** check_worker.c - the background worker and its pool (core/runtime/cs_worker.c).
**
** The protocol is small, so every rule of it is checked directly: a job
** submitted runs exactly once, on another thread, and everything it wrote
** is visible after the wait; a second submit waits for the first; waiting
** with nothing in flight returns; a worker freed with a job in flight runs
** it to the end first; the pool hands a released worker back out; and a
** child process forked while the pool holds a started worker gets a worker
** whose thread exists (the pooled one's does not, in the child).
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit_util.h"

typedef struct job {
  _Atomic int runs;
  pthread_t ran_on;
  uint64_t sum; /* written by the job, read after the wait */
  int sleep_ms;
} job;

static void job_run(void *arg) {
  job *j = arg;
  if (j->sleep_ms) {
    struct timespec ts = {0, (long)j->sleep_ms * 1000000L};
    nanosleep(&ts, NULL);
  }
  uint64_t s = 0;
  for (uint64_t i = 1; i <= 100000; i++) s += i;
  j->sum = s;
  j->ran_on = pthread_self();
  atomic_fetch_add(&j->runs, 1);
}

START_TEST(test_job_runs_once_on_another_thread) {
  cs_worker *w = NULL;
  cs_err err;
  ck_assert_int_eq(cs_worker_new(&w, &err), CS_OK);
  cs_worker_wait(w); /* nothing in flight: returns at once */
  for (int k = 0; k < 50; k++) {
    job j = {.sleep_ms = k % 10 == 0};
    ck_assert(cs_worker_submit(w, job_run, &j));
    /* give the thread time to claim it: then it must run there */
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    uint64_t back = cs_worker_taken_back(w);
    cs_worker_wait(w);
    ck_assert_int_eq(atomic_load(&j.runs), 1);
    ck_assert_uint_eq(j.sum, 5000050000ull);
    ck_assert(!pthread_equal(j.ran_on, pthread_self()));
    ck_assert_uint_eq(cs_worker_taken_back(w), back);
    cs_worker_wait(w); /* a second wait is harmless */
    ck_assert_int_eq(atomic_load(&j.runs), 1);
  }
  cs_worker_free(w);
}
END_TEST

/* Waiting right after submitting: the job runs exactly once, on the
** worker if it claimed the job in time, else taken back by the waiter on
** its own thread (never waiting for a thread that has not started). */
START_TEST(test_wait_takes_back_an_unclaimed_job) {
  cs_worker *w = NULL;
  cs_err err;
  ck_assert_int_eq(cs_worker_new(&w, &err), CS_OK);
  uint64_t here = 0, there = 0;
  for (int k = 0; k < 2000; k++) {
    job j = {0};
    uint64_t back = cs_worker_taken_back(w);
    ck_assert(cs_worker_submit(w, job_run, &j));
    cs_worker_wait(w);
    ck_assert_int_eq(atomic_load(&j.runs), 1);
    ck_assert_uint_eq(j.sum, 5000050000ull);
    bool taken = cs_worker_taken_back(w) == back + 1;
    ck_assert_uint_le(cs_worker_taken_back(w), back + 1);
    ck_assert(taken == (bool)pthread_equal(j.ran_on, pthread_self()));
    here += taken, there += !taken;
  }
  fprintf(stderr, "check_worker: of 2000 immediate waits, %llu were taken back, %llu ran on the worker\n",
          (unsigned long long)here, (unsigned long long)there);
  cs_worker_free(w);
}
END_TEST

START_TEST(test_second_submit_waits_for_the_first) {
  cs_worker *w = NULL;
  cs_err err;
  ck_assert_int_eq(cs_worker_new(&w, &err), CS_OK);
  job a = {.sleep_ms = 30}, b = {0};
  ck_assert(cs_worker_submit(w, job_run, &a));
  ck_assert(cs_worker_submit(w, job_run, &b)); /* returns only after a finished */
  ck_assert_int_eq(atomic_load(&a.runs), 1);
  cs_worker_wait(w);
  ck_assert_int_eq(atomic_load(&b.runs), 1);
  /* freed with a job in flight: the job finishes first */
  job c = {.sleep_ms = 30};
  ck_assert(cs_worker_submit(w, job_run, &c));
  cs_worker_free(w);
  ck_assert_int_eq(atomic_load(&c.runs), 1);
  /* never started: freeing joins nothing */
  ck_assert_int_eq(cs_worker_new(&w, &err), CS_OK);
  cs_worker_free(w);
  cs_worker_free(NULL);
  cs_worker_wait(NULL);
}
END_TEST

START_TEST(test_pool_reuses_workers) {
  cs_worker *w = cs_worker_acquire();
  ck_assert_ptr_nonnull(w);
  job j = {0};
  ck_assert(cs_worker_submit(w, job_run, &j));
  cs_worker_release(w); /* waits for the job */
  ck_assert_int_eq(atomic_load(&j.runs), 1);
  cs_worker *again = cs_worker_acquire();
  ck_assert_ptr_eq(again, w);
  /* more workers out at once than the pool keeps: all work, all return */
  cs_worker *many[12];
  job jobs[12];
  memset(jobs, 0, sizeof jobs);
  for (int i = 0; i < 12; i++) {
    many[i] = i == 0 ? again : cs_worker_acquire();
    ck_assert_ptr_nonnull(many[i]);
    ck_assert(cs_worker_submit(many[i], job_run, &jobs[i]));
  }
  for (int i = 0; i < 12; i++) {
    cs_worker_release(many[i]);
    ck_assert_int_eq(atomic_load(&jobs[i].runs), 1);
  }
  cs_worker_release(NULL);
}
END_TEST

START_TEST(test_pool_after_fork_gives_a_live_worker) {
  cs_worker *w = cs_worker_acquire();
  job j = {0};
  ck_assert(cs_worker_submit(w, job_run, &j));
  cs_worker_release(w); /* pooled, with a started thread */
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* The pooled worker's thread is not in this process: a job given to it
    ** would never run.  The pool must hand out another. */
    cs_worker *c = cs_worker_acquire();
    job k = {0};
    if (!c || c == w || !cs_worker_submit(c, job_run, &k)) _exit(2);
    cs_worker_wait(c);
    _exit(atomic_load(&k.runs) == 1 && k.sum == 5000050000ull ? 0 : 3);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  ck_assert_int_eq(WEXITSTATUS(status), 0);
  /* and the parent's pooled worker still works */
  cs_worker *p = cs_worker_acquire();
  job m = {0};
  ck_assert(cs_worker_submit(p, job_run, &m));
  cs_worker_release(p);
  ck_assert_int_eq(atomic_load(&m.runs), 1);
}
END_TEST

static Suite *worker_suite(void) {
  Suite *s = suite_create("worker");
  TCase *tc = tcase_create("protocol");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_job_runs_once_on_another_thread);
  tcase_add_test(tc, test_wait_takes_back_an_unclaimed_job);
  tcase_add_test(tc, test_second_submit_waits_for_the_first);
  tcase_add_test(tc, test_pool_reuses_workers);
  tcase_add_test(tc, test_pool_after_fork_gives_a_live_worker);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(worker_suite()); }
