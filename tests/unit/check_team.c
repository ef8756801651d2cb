/*
** check_team.c - the kernels' chunk-claiming team (cs_team.c).
**
** What must hold whatever the scheduler does: every chunk runs exactly
** once; members are 0 (the caller) and 1..threads-1, each run by one
** thread; the call returns only after every chunk finished, with the
** chunks' writes visible; it never waits for a helper that has no chunk
** (a caller that finds every helper busy runs all chunks alone); the chunk
** size is a function of its arguments.  Helpers do join when they are
** free (a chunk function that holds the caller until a helper has run
** proves it, with a timeout so a broken team fails instead of hanging), and
** a forked child gets a working team of its own.
*/
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cs_kernels_internal.h"
#include "unit_util.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ every chunk */

typedef struct count_ctx {
  _Atomic uint32_t *ran;   /* per chunk */
  pthread_t *thread_of;    /* per member: the thread that ran it */
  _Atomic int *member_set; /* per member: thread_of written */
  _Atomic int bad_member;
  int threads;
} count_ctx;

static void count_chunk(void *p, uint64_t c, int member) {
  count_ctx *x = p;
  atomic_fetch_add(&x->ran[c], 1);
  if (member < 0 || member >= x->threads) {
    atomic_store(&x->bad_member, 1);
    return;
  }
  int expect = 0;
  if (atomic_compare_exchange_strong(&x->member_set[member], &expect, 1))
    x->thread_of[member] = pthread_self();
  else if (!pthread_equal(x->thread_of[member], pthread_self()))
    atomic_store(&x->bad_member, 2);
}

START_TEST(test_every_chunk_runs_once_with_distinct_members) {
  const uint64_t chunk_counts[] = {0, 1, 2, 3, 7, 64, 1000, 20000};
  const int thread_counts[] = {1, 2, 3, 4, 8, 64};
  for (size_t ci = 0; ci < sizeof chunk_counts / sizeof *chunk_counts; ci++)
    for (size_t ti = 0; ti < sizeof thread_counts / sizeof *thread_counts; ti++)
      for (int rep = 0; rep < 3; rep++) {
        uint64_t n = chunk_counts[ci];
        int threads = thread_counts[ti];
        count_ctx x = {.threads = threads};
        x.ran = calloc(n + 1, sizeof *x.ran);
        x.thread_of = calloc((size_t)threads, sizeof *x.thread_of);
        x.member_set = calloc((size_t)threads, sizeof *x.member_set);
        ck_assert(x.ran && x.thread_of && x.member_set);
        int members = cs__team_run(threads, n, count_chunk, &x);
        for (uint64_t c = 0; c < n; c++)
          ck_assert_msg(atomic_load(&x.ran[c]) == 1,
                        "%" PRIu64 " chunks, %d threads: chunk %" PRIu64 " ran %u times", n, threads, c,
                        atomic_load(&x.ran[c]));
        ck_assert_int_eq(atomic_load(&x.bad_member), 0);
        ck_assert_int_ge(members, 1);
        ck_assert_int_le(members, threads);
        if ((uint64_t)members > (n > 0 ? n : 1))
          ck_abort_msg("%d members for %" PRIu64 " chunks", members, n);
        /* member 0 is the caller whenever it ran something */
        if (atomic_load(&x.member_set[0])) ck_assert(pthread_equal(x.thread_of[0], pthread_self()));
        free(x.ran), free(x.thread_of), free(x.member_set);
      }
}
END_TEST

/* ------------------------------------------------------- helpers do join */

typedef struct join_ctx {
  _Atomic int helper_ran;
  _Atomic int timed_out;
} join_ctx;

static void join_chunk(void *p, uint64_t c, int member) {
  join_ctx *x = p;
  if (member > 0) {
    atomic_store(&x->helper_ran, 1);
    return;
  }
  /* The caller's first chunk holds it until a helper has run one (5 s). */
  if (c != 0) return;
  uint64_t t0 = now_ns();
  while (!atomic_load(&x->helper_ran))
    if (now_ns() - t0 > 5000000000ull) {
      atomic_store(&x->timed_out, 1);
      return;
    }
}

START_TEST(test_free_helpers_join) {
  for (int rep = 0; rep < 20; rep++) {
    join_ctx x = {0};
    int members = cs__team_run(2, 100, join_chunk, &x);
    ck_assert_msg(!atomic_load(&x.timed_out), "round %d: no helper joined within 5 s", rep);
    ck_assert_int_eq(members, 2);
  }
}
END_TEST

/* --------------------------------------- busy helpers are not waited for */

typedef struct hold_ctx {
  _Atomic int holding; /* a helper is inside the held chunk */
  _Atomic int release;
} hold_ctx;

static void hold_chunk(void *p, uint64_t c, int member) {
  (void)c;
  hold_ctx *x = p;
  if (member == 0) {
    /* the caller waits here until a helper holds the other chunk */
    uint64_t t0 = now_ns();
    while (!atomic_load(&x->holding) && now_ns() - t0 < 5000000000ull) {
    }
    return;
  }
  atomic_store(&x->holding, 1);
  while (!atomic_load(&x->release)) usleep(100);
}

static void *hold_thread(void *p) {
  cs__team_run(2, 2, hold_chunk, p);
  return NULL;
}

static void plain_chunk(void *p, uint64_t c, int member) {
  (void)c;
  if (member > 0) atomic_store((_Atomic int *)p, 1);
}

START_TEST(test_caller_does_not_wait_for_busy_helpers) {
  /* Hold helpers in chunks of other jobs (in a fresh test process, every
  ** helper the pool has), then run a job: it must finish without waiting
  ** for any of them. */
  uint64_t runs0, helped0, alone0;
  cs__team_stats(&runs0, &helped0, &alone0);
  enum { HOLDERS = 4 };
  hold_ctx x[HOLDERS];
  pthread_t t[HOLDERS];
  for (int k = 0; k < HOLDERS; k++) {
    atomic_init(&x[k].holding, 0);
    atomic_init(&x[k].release, 0);
    ck_assert_int_eq(pthread_create(&t[k], NULL, hold_thread, &x[k]), 0);
  }
  uint64_t t0 = now_ns();
  int all_held = 0;
  while (now_ns() - t0 < 5000000000ull && !all_held) {
    all_held = 1;
    for (int k = 0; k < HOLDERS; k++) all_held &= atomic_load(&x[k].holding);
  }
  ck_assert_msg(all_held, "helpers never took the held chunks");
  _Atomic int helper_ran = 0;
  uint64_t t1 = now_ns();
  int members = cs__team_run(2, 4, plain_chunk, (void *)&helper_ran);
  uint64_t took = now_ns() - t1;
  ck_assert_int_ge(members, 1);
  ck_assert_msg(took < 2000000000ull, "a run waited %.1f ms with helpers held elsewhere", took / 1e6);
  for (int k = 0; k < HOLDERS; k++) atomic_store(&x[k].release, 1);
  for (int k = 0; k < HOLDERS; k++) pthread_join(t[k], NULL);
}
END_TEST

/* ----------------------------------------------------------- after fork */

static void sum_chunk(void *p, uint64_t c, int member) {
  (void)member;
  atomic_fetch_add((_Atomic uint64_t *)p, c + 1);
}

START_TEST(test_team_works_in_a_forked_child) {
  _Atomic uint64_t sum = 0;
  cs__team_run(2, 100, sum_chunk, (void *)&sum); /* helpers exist in the parent */
  ck_assert_uint_eq(atomic_load(&sum), 5050);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    _Atomic uint64_t s2 = 0;
    for (int k = 0; k < 50; k++) cs__team_run(2, 100, sum_chunk, (void *)&s2);
    _exit(atomic_load(&s2) == 50 * 5050 ? 0 : 1);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

/* ----------------------------------------------------------- chunk size */

START_TEST(test_chunk_size_is_a_function_of_its_arguments) {
  /* about eight chunks a thread, at least min, a multiple of align */
  ck_assert_uint_eq(cs__team_chunk(1 << 20, 2, 1024, 64, 0), (1 << 20) / 16);
  ck_assert_uint_eq(cs__team_chunk(1000, 2, 1024, 64, 0), 1024);
  ck_assert_uint_eq(cs__team_chunk(1 << 20, 1, 1, 64, 0), (1 << 20) / 8);
  ck_assert_uint_eq(cs__team_chunk(1001, 1, 1, 64, 0), 128);
  /* at most max_chunks chunks */
  uint64_t c = cs__team_chunk(10000000, 64, 1, 64, 100);
  ck_assert_uint_le((10000000 + c - 1) / c, 100);
  ck_assert_uint_eq(c % 64, 0);
  ck_assert_uint_ge(cs__team_chunk(0, 4, 0, 64, 0), 64);
}
END_TEST

static Suite *team_suite(void) {
  Suite *s = suite_create("team");
  TCase *tc = tcase_create("team");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_chunk_runs_once_with_distinct_members);
  tcase_add_test(tc, test_free_helpers_join);
  tcase_add_test(tc, test_caller_does_not_wait_for_busy_helpers);
  tcase_add_test(tc, test_team_works_in_a_forked_child);
  tcase_add_test(tc, test_chunk_size_is_a_function_of_its_arguments);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(team_suite()); }
