/*
** check_calibrate.c - calibration: the hardware fingerprint, the cache
** file, the statistics that choose a pick, the sweep runner's identical
** output check, precedence in the kernels, and one tiny real run.
**
** The statistics are a pure function (cs_calibrate_summarize), so they are
** checked with fixed numbers rather than timings: medians over odd and
** even counts, ties inside the tolerance going to the first candidate, and
** halves that agree and disagree.  The cache tests write into a fresh
** temporary directory and count its entries, so a leftover temporary file
** from the atomic write shows up.  Calibration's real measurements are
** only run small (a few thousand rows, one round): that they complete and
** leave nothing behind is the point, not the numbers.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit_util.h"

static cs_calibration sample_calibration(void) {
  cs_calibration c;
  cs_calibration_init(&c);
  c.threads = 3;
  c.prefetch[CS_REGIME_RESIDENT_UNSORTED] = 0;
  c.prefetch[CS_REGIME_DRAM_SORTED] = 128;
  c.mask_gate = 0.25;
  return c;
}

/* ----------------------------------------------------------- fingerprint */

START_TEST(test_fingerprint_is_stable_across_calls) {
  cs_fingerprint a, b;
  cs_fingerprint_get(&a);
  cs_fingerprint_get(&b);
  char ta[CS_FINGERPRINT_TEXT_BYTES], tb[CS_FINGERPRINT_TEXT_BYTES];
  cs_fingerprint_text(&a, ta);
  cs_fingerprint_text(&b, tb);
  ck_assert_str_eq(ta, tb);
  ck_assert_int_ge(a.cores, 1);
  ck_assert_int_ge(a.sockets, 1);
  ck_assert_int_ge(a.numa_nodes, 1);
  ck_assert_uint_gt(a.page_bytes, 0);
  ck_assert_ptr_nonnull(strstr(ta, "cpu="));
  ck_assert_ptr_nonnull(strstr(ta, ";page_bytes="));
  ck_assert_uint_gt(cs_fingerprint_llc_bytes(), 0);
}
END_TEST

START_TEST(test_cache_dir_follows_environment_precedence) {
  char *old_c = getenv("COLSTORE_CACHE_DIR") ? strdup(getenv("COLSTORE_CACHE_DIR")) : NULL;
  char *old_x = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  char buf[512];
  setenv("COLSTORE_CACHE_DIR", "/a/b", 1);
  setenv("XDG_CACHE_HOME", "/x", 1);
  ck_assert_int_eq(cs_calibration_cache_dir(buf, sizeof buf, NULL), CS_OK);
  ck_assert_str_eq(buf, "/a/b");
  unsetenv("COLSTORE_CACHE_DIR");
  ck_assert_int_eq(cs_calibration_cache_dir(buf, sizeof buf, NULL), CS_OK);
  ck_assert_str_eq(buf, "/x/colstore");
  unsetenv("XDG_CACHE_HOME");
  if (getenv("HOME")) {
    ck_assert_int_eq(cs_calibration_cache_dir(buf, sizeof buf, NULL), CS_OK);
    ck_assert_ptr_nonnull(strstr(buf, "/.cache/colstore"));
  }
  if (old_c) setenv("COLSTORE_CACHE_DIR", old_c, 1);
  if (old_x) setenv("XDG_CACHE_HOME", old_x, 1);
  free(old_c);
  free(old_x);
}
END_TEST

/* ------------------------------------------------------------ cache file */

START_TEST(test_cache_round_trip_keeps_every_value) {
  char *dir = ut_tmpdir();
  char *sub = ut_join(dir, "made/by/save");
  char *path = ut_join(sub, CS_CALIBRATION_FILE);
  cs_calibration c = sample_calibration(), back;
  cs_err err;
  ck_assert_int_eq(cs_calibration_save(path, "cpu=X;cores=2", &c, &err), CS_OK);
  char fp[CS_FINGERPRINT_TEXT_BYTES];
  ck_assert_int_eq(cs_calibration_load(path, fp, &back, &err), CS_OK);
  ck_assert_str_eq(fp, "cpu=X;cores=2");
  ck_assert_int_eq(back.threads, 3);
  ck_assert_int_eq(back.prefetch[CS_REGIME_RESIDENT_UNSORTED], 0);
  ck_assert_int_eq(back.prefetch[CS_REGIME_RESIDENT_SORTED], -1);
  ck_assert_int_eq(back.prefetch[CS_REGIME_DRAM_UNSORTED], -1);
  ck_assert_int_eq(back.prefetch[CS_REGIME_DRAM_SORTED], 128);
  ck_assert_double_eq_tol(back.mask_gate, 0.25, 1e-9);
  free(path);
  free(sub);
  ut_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_cache_atomic_write_leaves_no_temporary_files) {
  char *dir = ut_tmpdir();
  char *path = ut_join(dir, CS_CALIBRATION_FILE);
  cs_calibration c = sample_calibration();
  for (int i = 0; i < 3; i++) {
    c.threads = i + 1;
    ck_assert_int_eq(cs_calibration_save(path, "cpu=X", &c, NULL), CS_OK);
    ck_assert_int_eq(ut_dir_entries(dir), 1);
  }
  bool removed = false;
  ck_assert_int_eq(cs_calibration_clear(path, &removed, NULL), CS_OK);
  ck_assert(removed);
  ck_assert_int_eq(ut_dir_entries(dir), 0);
  ck_assert_int_eq(cs_calibration_clear(path, &removed, NULL), CS_OK); /* idempotent */
  ck_assert(!removed);
  free(path);
  ut_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_cache_from_another_host_returns_its_fingerprint) {
  char *dir = ut_tmpdir();
  char *path = ut_join(dir, CS_CALIBRATION_FILE);
  cs_calibration c = sample_calibration(), back;
  ck_assert_int_eq(cs_calibration_save(path, "cpu=Some Other CPU;cores=64;sockets=2", &c, NULL), CS_OK);
  cs_fingerprint here;
  cs_fingerprint_get(&here);
  char fp_here[CS_FINGERPRINT_TEXT_BYTES], fp[CS_FINGERPRINT_TEXT_BYTES];
  cs_fingerprint_text(&here, fp_here);
  ck_assert_int_eq(cs_calibration_load(path, fp, &back, NULL), CS_OK);
  ck_assert_str_eq(fp, "cpu=Some Other CPU;cores=64;sockets=2");
  ck_assert_str_ne(fp, fp_here); /* the caller's comparison rejects it */
  free(path);
  ut_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_cache_corrupt_or_missing_is_reported) {
  char *dir = ut_tmpdir();
  char *path = ut_join(dir, CS_CALIBRATION_FILE);
  cs_calibration back;
  char fp[CS_FINGERPRINT_TEXT_BYTES];
  cs_err err;
  ck_assert_int_eq(cs_calibration_load(path, fp, &back, &err), CS_ENOENT);
  static const char *const bad[] = {
      "format=1\nfingerprint=cpu=X\nthreads=2\n",          /* no end: truncated */
      "format=1\nfingerprint=cpu=X\nthreads=two\nend\n",   /* bad value */
      "format=2\nfingerprint=cpu=X\nend\n",                /* unknown format */
      "format=1\nthreads=2\nend\n",                        /* no fingerprint */
      "format=1\nfingerprint=cpu=X\nwhat=1\nend\n",        /* unknown key */
      "format=1\nfingerprint=cpu=X\nmask_gate=1.5\nend\n", /* out of range */
      "format=1\nfingerprint=cpu=X\nend",                  /* last line cut */
      "\x7f"
      "ELF garbage\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ut_write_all(path, bad[i], strlen(bad[i]));
    memset(&err, 0, sizeof err);
    ck_assert_msg(cs_calibration_load(path, fp, &back, &err) == CS_ECORRUPT, "case %zu loaded", i);
    ck_assert_msg(strstr(err.msg, path) != NULL, "case %zu: message '%s' does not name the file", i, err.msg);
    ck_assert_int_eq(back.threads, -1);
  }
  free(path);
  ut_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------ statistics */

START_TEST(test_median_odd_even_and_unsorted) {
  const double a[] = {5, 1, 3};
  ck_assert_double_eq(cs_calibrate_median(a, 3), 3);
  const double b[] = {4, 1, 3, 2};
  ck_assert_double_eq(cs_calibrate_median(b, 4), 2.5);
  ck_assert_double_eq(cs_calibrate_median(a, 1), 5);
}
END_TEST

START_TEST(test_pick_prefers_first_within_tolerance) {
  const double m[] = {104, 100, 90, 93};
  ck_assert_uint_eq(cs_calibrate_pick(m, 4, 0.05), 2); /* 93 is within 5% of 90 but listed later */
  const double t[] = {94, 100, 90, 93};
  ck_assert_uint_eq(cs_calibrate_pick(t, 4, 0.05), 0); /* 94 <= 94.5: the first candidate ties */
  ck_assert_uint_eq(cs_calibrate_pick(t, 4, 0.0), 2);
}
END_TEST

START_TEST(test_summarize_medians_and_halves_agree) {
  /* 4 rounds x 3 candidates; candidate 1 fastest in both halves. */
  const double t[] = {
      10, 5, 9, /* round 0 */
      11, 6, 9, /* round 1 */
      12, 5, 8, /* round 2 */
      30, 7, 9, /* round 3: an outlier for candidate 0 */
  };
  cs_calibrate_sweep sw;
  memset(&sw, 0, sizeof sw);
  cs_calibrate_summarize(t, 4, 3, 0.05, &sw);
  ck_assert_uint_eq(sw.n_cand, 3);
  ck_assert_double_eq(sw.median_us[0], 11.5);
  ck_assert_double_eq(sw.median_us[1], 5.5);
  ck_assert_double_eq(sw.median_us[2], 9);
  ck_assert_double_eq(sw.min_us[0], 10);
  ck_assert_double_eq(sw.max_us[0], 30);
  ck_assert_double_eq(sw.half_median_us[0][1], 5.5);
  ck_assert_double_eq(sw.half_median_us[1][1], 6);
  ck_assert_uint_eq(sw.pick, 1);
  ck_assert_int_eq(sw.halves_agree, 1);
}
END_TEST

START_TEST(test_summarize_halves_disagree_and_single_round) {
  const double t[] = {
      5, 9,       /* first half: candidate 0 */
      5, 9, 9, 5, /* second half: candidate 1 */
      9, 5,
  };
  cs_calibrate_sweep sw;
  memset(&sw, 0, sizeof sw);
  cs_calibrate_summarize(t, 4, 2, 0.05, &sw);
  ck_assert_uint_eq(sw.half_pick[0], 0);
  ck_assert_uint_eq(sw.half_pick[1], 1);
  ck_assert_int_eq(sw.halves_agree, 0);
  cs_calibrate_summarize(t, 1, 2, 0.05, &sw);
  ck_assert_int_eq(sw.halves_agree, -1); /* one round has no halves */
  ck_assert_uint_eq(sw.pick, 0);
}
END_TEST

/* ---------------------------------------------------------- sweep runner */

typedef struct fake_ctx {
  uint64_t buf[16];
  int bad_cand; /* this candidate writes something else; -1: none */
  int calls[4];
} fake_ctx;

static const void *fake_run(void *p, uint32_t cand, size_t *out_bytes) {
  fake_ctx *x = p;
  x->calls[cand]++;
  for (int i = 0; i < 16; i++) x->buf[i] = (uint64_t)i * 7u + ((int)cand == x->bad_cand ? 1 : 0);
  *out_bytes = sizeof x->buf;
  return x->buf;
}

START_TEST(test_sweep_checks_outputs_identical_before_timing) {
  fake_ctx x;
  memset(&x, 0, sizeof x);
  x.bad_cand = -1;
  cs_calibrate_sweep sw;
  memset(&sw, 0, sizeof sw);
  snprintf(sw.name, sizeof sw.name, "fake");
  cs_err err;
  ck_assert_int_eq(cs_calibrate_sweep_run(fake_run, &x, 3, 5, 1, &sw, &err), CS_OK);
  for (int c = 0; c < 3; c++) ck_assert_int_eq(x.calls[c], 1 + 5); /* one check, one per round */
  ck_assert_uint_eq(sw.n_cand, 3);
  ck_assert_int_ge(sw.halves_agree, 0);

  memset(&x, 0, sizeof x);
  x.bad_cand = 2;
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(cs_calibrate_sweep_run(fake_run, &x, 3, 5, 1, &sw, &err), CS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "candidate 2"));
  ck_assert_ptr_nonnull(strstr(err.msg, "fake"));
  ck_assert_int_eq(x.calls[0], 1); /* nothing was timed */

  ck_assert_int_eq(cs_calibrate_sweep_run(fake_run, &x, 3, 0, 1, &sw, &err), CS_EINVAL);
  ck_assert_int_eq(cs_calibrate_sweep_run(fake_run, &x, 3, CS_CALIB_MAX_ROUNDS + 1, 1, &sw, &err), CS_EINVAL);
}
END_TEST

/* ------------------------------------------------------------ precedence */

START_TEST(test_precedence_explicit_over_calibration_over_default) {
  const uint64_t big = 64u * CS_PARALLEL_MIN_ELEMENTS;
  /* The default cap; the threads under it may follow the host's load. */
  int dflt = cs_kernel_threads_cap();
  ck_assert_int_le(cs_kernel_threads(big), dflt);
  ck_assert_int_eq(cs_kernel_prefetch_for(CS_REGIME_DRAM_SORTED), 128);
  ck_assert_int_eq(cs_kernel_prefetch_for(CS_REGIME_DRAM_UNSORTED), 0);
  cs_calibration c;
  cs_calibration_init(&c);
  c.threads = 1;
  c.prefetch[CS_REGIME_DRAM_SORTED] = 32;
  cs_calibration_apply(&c);
  ck_assert_int_eq(cs_kernel_threads(big), 1);
  ck_assert_int_eq(cs_kernel_prefetch_for(CS_REGIME_DRAM_SORTED), 32);
  ck_assert_int_eq(cs_kernel_prefetch_for(CS_REGIME_RESIDENT_SORTED), 128);
  ut_kernel_config_set(3, 8); /* explicit settings win */
  ck_assert_int_eq(cs_kernel_threads(big), 3);
  ck_assert_int_eq(cs_kernel_threads_cap(), 3);
  ck_assert_int_eq(cs_kernel_prefetch_for(CS_REGIME_DRAM_SORTED), 8);
  ut_kernel_config_reset();
  cs_calibration back;
  cs_calibration_current(&back);
  ck_assert_int_eq(back.threads, 1);
  ck_assert_double_eq(back.mask_gate, -1);
  cs_calibration_apply(NULL);
  ck_assert_int_eq(cs_kernel_threads_cap(), dflt);
  ck_assert_int_le(cs_kernel_threads(big), dflt);
  ck_assert_int_eq(cs_kernel_prefetch_for(CS_REGIME_DRAM_SORTED), 128);
  ck_assert_int_eq(cs_regime_of(true, 1024), CS_REGIME_RESIDENT_SORTED);
  ck_assert_int_eq(cs_regime_of(false, UINT64_MAX), CS_REGIME_DRAM_UNSORTED);
  ck_assert_str_eq(cs_regime_name(CS_REGIME_DRAM_SORTED), "dram_sorted");
  ck_assert_ptr_null(cs_regime_name(CS_REGIME_COUNT));
}
END_TEST

/* -------------------------------------------------------------- real run */

typedef struct progress_log {
  int calls, total, last_done;
  int stop_at; /* return nonzero once done reaches it; 0: never */
} progress_log;

static int count_progress(void *arg, const char *step, int done, int total) {
  progress_log *log = arg;
  ck_assert_ptr_nonnull(step);
  /* in order, none skipped: a sweep's first call repeats the count the
  ** last round of the one before it reached */
  ck_assert_msg(done == log->last_done || done == log->last_done + 1, "done %d after %d", done,
                log->last_done);
  ck_assert_int_le(done, total);
  log->calls++;
  log->total = total;
  log->last_done = done;
  return log->stop_at && done >= log->stop_at;
}

/* More thread candidates than cpus can only time-share: whatever is asked,
** the sweep stops at the cpus this process may use, and so does the pick;
** a pick is applied only where the halves of the rounds agree. */
START_TEST(test_threads_never_past_the_cpus_and_disagreement_keeps_the_default) {
  char *dir = ut_tmpdir();
  cs_calibrate_options opt = {
      .rounds = 2, .dram_rows = 1u << 14, .resident_rows = 4096, .max_threads = 64, .scratch_dir = dir};
  cs_calibrate_report *rep = malloc(sizeof *rep);
  ck_assert_ptr_nonnull(rep);
  cs_err err;
  memset(&err, 0, sizeof err);
  ck_assert_msg(cs_calibrate(CS_CALIB_THREADS | CS_CALIB_PREFETCH, &opt, rep, &err) == CS_OK, "%s", err.msg);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  ck_assert_int_ge(rep->cpus, 1);
  ck_assert_int_le(rep->cpus, online);
  int want = rep->cpus < CS_CALIB_MAX_CAND ? rep->cpus : CS_CALIB_MAX_CAND;
  for (uint32_t f = 0; f < rep->n_threads; f++) ck_assert_uint_eq(rep->threads[f].n_cand, (uint32_t)want);
  ck_assert_int_le(rep->threads_pick, rep->cpus);
  ck_assert_int_ne(rep->threads_halves_agree, -1);
  ck_assert_int_eq(rep->result.threads, rep->threads_halves_agree ? rep->threads_pick : -1);
  for (int r = 0; r < CS_REGIME_COUNT; r++)
    ck_assert_int_eq(rep->result.prefetch[r],
                     rep->prefetch[r].halves_agree ? (int)rep->prefetch[r].value[rep->prefetch[r].pick] : -1);
  free(rep);
  ut_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_tiny_calibration_completes_and_cleans_up) {
  char *dir = ut_tmpdir();
  progress_log log = {0, 0, -1, 0};
  cs_calibrate_options opt = {.rounds = 1,
                              .dram_rows = 1u << 15,
                              .resident_rows = 4096,
                              .max_threads = 2,
                              .scratch_dir = dir,
                              .progress = count_progress,
                              .progress_arg = &log};
  cs_calibrate_report *rep = malloc(sizeof *rep);
  ck_assert_ptr_nonnull(rep);
  cs_err err;
  memset(&err, 0, sizeof err);
  ck_assert_msg(cs_calibrate(CS_CALIB_ALL, &opt, rep, &err) == CS_OK, "%s", err.msg);
  ck_assert_uint_eq(rep->rounds, 1);
  ck_assert_uint_eq(rep->n_threads, 4);
  ck_assert_int_ge(rep->threads_pick, 1);
  ck_assert_int_le(rep->threads_pick, 2);
  ck_assert_int_eq(rep->threads_halves_agree, -1);
  ck_assert_int_eq(rep->result.threads, rep->threads_pick);
  for (int r = 0; r < CS_REGIME_COUNT; r++) {
    ck_assert_int_ge(rep->result.prefetch[r], 0);
    ck_assert_uint_eq(rep->prefetch[r].n_cand, 6);
    ck_assert_double_eq(rep->prefetch[r].value[0], 0);
  }
  ck_assert(rep->mask_gate >= 0 && rep->mask_gate <= 1);
  ck_assert_str_eq(rep->mask[0].name, "0.001");
  ck_assert_int_eq(ut_dir_entries(dir), 0); /* the scratch stores are gone */
  /* Progress: before each sweep and after each of its rounds (one here),
  ** in order, then the end (done == total, counted in rounds). */
  int sweeps = 4 + CS_REGIME_COUNT + CS_CALIB_MASK_DENSITIES;
  ck_assert_int_eq(log.total, sweeps);
  ck_assert_int_eq(log.calls, 2 * sweeps + 1);
  ck_assert_int_eq(log.last_done, log.total);
  opt.progress = NULL;
  /* A single target measures only its knob. */
  ck_assert_int_eq(cs_calibrate(CS_CALIB_MASK, &opt, rep, &err), CS_OK);
  ck_assert_int_eq(rep->result.threads, -1);
  ck_assert_int_eq(rep->result.prefetch[0], -1);
  ck_assert(rep->result.mask_gate >= 0);
  ck_assert_int_eq(cs_calibrate(0, &opt, rep, &err), CS_EINVAL);
  /* A progress callback returning nonzero stops the run at once, with an
  ** error that says so and no scratch store left. */
  log = (progress_log){0, 0, -1, 3};
  opt.rounds = 2;
  opt.progress = count_progress;
  ck_assert_int_eq(cs_calibrate(CS_CALIB_ALL, &opt, rep, &err), CS_EINVAL);
  ck_assert_msg(strstr(err.msg, "calibration interrupted") != NULL, "%s", err.msg);
  ck_assert_int_eq(log.last_done, 3);
  ck_assert_int_lt(log.calls, 2 * 3 + 2); /* it stopped at the first call that reached 3 */
  ck_assert_int_eq(ut_dir_entries(dir), 0);
  /* The calling thread's settings are its own again afterwards. */
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);
  ck_assert_int_eq(kc.threads, 0);
  ck_assert_int_eq(kc.prefetch, -1);
  free(rep);
  ut_tmpdir_remove(dir);
}
END_TEST

static void calibration_teardown(void) {
  cs_calibration_apply(NULL);
  ut_kernel_config_reset();
}

static Suite *calibrate_suite(void) {
  Suite *s = suite_create("calibrate");
  TCase *tc = tcase_create("cache");
  tcase_add_checked_fixture(tc, NULL, calibration_teardown);
  tcase_add_test(tc, test_fingerprint_is_stable_across_calls);
  tcase_add_test(tc, test_cache_dir_follows_environment_precedence);
  tcase_add_test(tc, test_cache_round_trip_keeps_every_value);
  tcase_add_test(tc, test_cache_atomic_write_leaves_no_temporary_files);
  tcase_add_test(tc, test_cache_from_another_host_returns_its_fingerprint);
  tcase_add_test(tc, test_cache_corrupt_or_missing_is_reported);
  suite_add_tcase(s, tc);
  TCase *ts = tcase_create("statistics");
  tcase_add_checked_fixture(ts, NULL, calibration_teardown);
  tcase_add_test(ts, test_median_odd_even_and_unsorted);
  tcase_add_test(ts, test_pick_prefers_first_within_tolerance);
  tcase_add_test(ts, test_summarize_medians_and_halves_agree);
  tcase_add_test(ts, test_summarize_halves_disagree_and_single_round);
  tcase_add_test(ts, test_sweep_checks_outputs_identical_before_timing);
  tcase_add_test(ts, test_precedence_explicit_over_calibration_over_default);
  suite_add_tcase(s, ts);
  TCase *tr = tcase_create("run");
  tcase_add_checked_fixture(tr, NULL, calibration_teardown);
  tcase_set_timeout(tr, 300);
  tcase_add_test(tr, test_tiny_calibration_completes_and_cleans_up);
  tcase_add_test(tr, test_threads_never_past_the_cpus_and_disagreement_keeps_the_default);
  suite_add_tcase(s, tr);
  return s;
}

int main(void) { return ut_run_suite(calibrate_suite()); }
