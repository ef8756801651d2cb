/*
** check_kernel_config.c - runtime/cs_kernel_config.c's thread policy:
** work-proportional threads under a cap, and an automatic cap limited to
** the processors other processes leave idle (docs/tuning.md, "Threads on a busy host").
**
** The policy is a pure function (cs__threads_policy) of the element count,
** the cap, the online processors and the runnable threads of others, so
** it is checked with fixed numbers; so is the /proc/loadavg parser.  What cs_kernel_threads()
** makes of the real host's load changes from one moment to the next, so the
** live tests check only bounds, except where the answer does not depend on
** the load: an explicit cap, and COLSTORE_LOAD_AWARE=0.
*/
#include <stdlib.h>
#include <unistd.h>

#include "cs_kernels_internal.h"
#include "unit_util.h"

#define M CS_PARALLEL_MIN_ELEMENTS

/* ---------------------------------------------------------------- policy */

START_TEST(test_policy_without_load_is_work_proportional_under_the_cap) {
  /* others = -1: no load limit, the policy before load awareness. */
  ck_assert_int_eq(cs__threads_policy(0, 8, 8, -1), 1);
  ck_assert_int_eq(cs__threads_policy(M - 1, 8, 8, -1), 1);
  ck_assert_int_eq(cs__threads_policy(M, 8, 8, -1), 2);
  ck_assert_int_eq(cs__threads_policy(2 * M + 1, 8, 8, -1), 3);
  ck_assert_int_eq(cs__threads_policy(100 * M, 8, 8, -1), 8);
  ck_assert_int_eq(cs__threads_policy(100 * M, 1, 8, -1), 1);
  ck_assert_int_eq(cs__threads_policy(100 * M, 0, 8, -1), 1);
  ck_assert_int_eq(cs__threads_policy(UINT64_MAX / 2, 100000, 8, -1), 1024);
  /* A quiet host (no others) changes nothing while the cap fits. */
  ck_assert_int_eq(cs__threads_policy(100 * M, 8, 8, 0), 8);
  ck_assert_int_eq(cs__threads_policy(5 * M, 8, 8, 0), 5);
}
END_TEST

START_TEST(test_policy_limits_threads_to_idle_processors) {
  /* The measured case: 2 cores, another process busy on one. */
  ck_assert_int_eq(cs__threads_policy(100 * M, 2, 2, 1), 1);
  ck_assert_int_eq(cs__threads_policy(100 * M, 2, 2, 0), 2);
  /* More others than processors still leaves the caller its thread. */
  ck_assert_int_eq(cs__threads_policy(100 * M, 2, 2, 7), 1);
  ck_assert_int_eq(cs__threads_policy(100 * M, 16, 16, 40), 1);
  /* min(cap, want, ncpu - others). */
  ck_assert_int_eq(cs__threads_policy(100 * M, 16, 16, 3), 13);
  ck_assert_int_eq(cs__threads_policy(100 * M, 4, 16, 3), 4);
  ck_assert_int_eq(cs__threads_policy(3 * M, 16, 16, 3), 3);
  /* Below the serial threshold the load is irrelevant. */
  ck_assert_int_eq(cs__threads_policy(M - 1, 16, 16, 0), 1);
  /* An unknown processor count disables the limit rather than guessing. */
  ck_assert_int_eq(cs__threads_policy(100 * M, 4, 0, 3), 4);
}
END_TEST

START_TEST(test_loadavg_runnable_reads_the_fourth_field) {
  ck_assert_int_eq(cs__loadavg_runnable("0.53 0.53 1.16 1/85 23710\n"), 1);
  ck_assert_int_eq(cs__loadavg_runnable("12.00 3.10 4.20 17/900 1"), 17);
  ck_assert_int_eq(cs__loadavg_runnable("0.00 0.00 0.00 0/1 1\n"), 0);
  ck_assert_int_eq(cs__loadavg_runnable("0.00  0.00 0.00  123/4567 8"), 123);
  ck_assert_int_eq(cs__loadavg_runnable(""), -1);
  ck_assert_int_eq(cs__loadavg_runnable("0.53 0.53"), -1);
  ck_assert_int_eq(cs__loadavg_runnable("0.53 0.53 1.16"), -1);
  ck_assert_int_eq(cs__loadavg_runnable("0.53 0.53 1.16 /85 1"), -1);
  ck_assert_int_eq(cs__loadavg_runnable("0.53 0.53 1.16 x/85 1"), -1);
  ck_assert_int_eq(cs__loadavg_runnable("0.53 0.53 1.16 12 1"), -1);
}
END_TEST

/* ------------------------------------------------------------- live host */

static void busy_chunk(void *ctx, uint64_t c, int member) {
  (void)member;
  volatile uint64_t *sink = ctx;
  for (int k = 0; k < 1000; k++) *sink += c;
}

START_TEST(test_explicit_cap_is_honoured_whatever_the_load) {
  ut_kernel_config_set(2, -1);
  for (int i = 0; i < 50; i++) {
    ck_assert_int_eq(cs_kernel_threads(100 * M), 2);
    /* colstore's own helpers at work in between do not change it */
    volatile uint64_t sink = 0;
    cs__team_run(2, 64, busy_chunk, (void *)&sink);
  }
  ck_assert_int_eq(cs_kernel_threads_cap(), 2);
  ut_kernel_config_set(3, -1);
  ck_assert_int_eq(cs_kernel_threads(100 * M), 3);
}
END_TEST

START_TEST(test_automatic_cap_stays_within_cap_and_idle_processors) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int cap = cs_kernel_threads_cap();
  ck_assert_int_ge(cap, 1);
  ck_assert_int_le(cap, 1024);
  int checked = 0;
  for (int i = 0; i < 200 && checked < 20; i++) {
    /* The sample may be refreshed between calls; compare only when the
    ** idle count read before and after agrees. */
    int idle0 = cs_kernel_idle_cpus();
    int t = cs_kernel_threads(100 * M);
    int idle1 = cs_kernel_idle_cpus();
    ck_assert_int_ge(t, 1);
    ck_assert_int_le(t, cap);
    ck_assert_int_ge(idle0, -1);
    ck_assert_int_le(idle0, online);
    if (idle0 != idle1) continue;
    if (idle0 >= 0)
      ck_assert_int_le(t, idle0 > 1 ? idle0 : 1);
    else
      ck_assert_int_eq(t, cs__threads_policy(100 * M, cap, 0, -1));
    checked++;
    usleep(1000);
  }
  ck_assert_int_gt(checked, 0);
  ck_assert_int_eq(cs_kernel_threads(M - 1), 1);
}
END_TEST

START_TEST(test_load_awareness_off_by_environment) {
  /* Read once per process: only a fresh (forked) test process sees it. */
  const char *fork_mode = getenv("CK_FORK");
  if (fork_mode && fork_mode[0] == 'n') return;
  setenv("COLSTORE_LOAD_AWARE", "0", 1);
  ck_assert_int_eq(cs_kernel_idle_cpus(), -1);
  int cap = cs_kernel_threads_cap();
  ck_assert_int_eq(cs_kernel_threads(100 * M), cs__threads_policy(100 * M, cap, 0, -1));
  ck_assert_int_eq(cs_kernel_threads(3 * M), cs__threads_policy(3 * M, cap, 0, -1));
  unsetenv("COLSTORE_LOAD_AWARE");
}
END_TEST

static Suite *threads_suite(void) {
  Suite *s = suite_create("threads");
  TCase *tp = tcase_create("policy");
  tcase_add_test(tp, test_policy_without_load_is_work_proportional_under_the_cap);
  tcase_add_test(tp, test_policy_limits_threads_to_idle_processors);
  tcase_add_test(tp, test_loadavg_runnable_reads_the_fourth_field);
  suite_add_tcase(s, tp);
  TCase *tl = tcase_create("live");
  tcase_add_checked_fixture(tl, NULL, ut_kernel_config_reset);
  tcase_add_test(tl, test_explicit_cap_is_honoured_whatever_the_load);
  tcase_add_test(tl, test_automatic_cap_stays_within_cap_and_idle_processors);
  tcase_add_test(tl, test_load_awareness_off_by_environment);
  suite_add_tcase(s, tl);
  return s;
}

int main(void) { return ut_run_suite(threads_suite()); }
