/*
** colstore_calibrate.c - colstore_calibrate([target [, rounds]] [, 'progress=...']) and
** colstore_calibration(): measure the kernel knobs on this host, keep the
** result in the calibration cache, and say what is in effect.
**
** Calibration is process-wide, like colstore_config: the first load of the
** extension in a process reads the cache file (core/tuning/cs_calibration_file.c) and,
** when its hardware fingerprint is this host's, applies it to the core
** (cs_calibration_apply); a colstore_calibrate() run applies its result the
** same way and rewrites the cache.  Every connection sees the change from
** its next query.  Precedence, per knob: an explicit colstore_config value,
** else the calibration, else the compiled default (docs/tuning.md).
**
** The one decision a newcomer might question: colstore_calibration()
** re-reads the cache file on every call instead of trusting what was read
** at load.  The file is shared (another process, or another host on a
** shared $HOME, may have rewritten it), and the function exists to tell a
** user whether that file fits this machine; one small read per call is the
** honest price.  What is *in effect* is the process's state, reported apart
** from the file's.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "colstore_ext.h"
#include "colstore_progress.h"

#define CSX_PATH_BYTES 4096

static pthread_once_t calib_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t calib_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Where the calibration in effect came from: "defaults", "cache" (read at
** load) or "calibration" (a colstore_calibrate run in this process).
** Guarded by calib_mutex. */
static const char *calib_source = "defaults";

/* The cache file's path; false (with the reason in err) when no cache
** directory can be named. */
static bool calib_cache_path(char *out, size_t n, cs_err *err) {
  char dir[CSX_PATH_BYTES];
  if (cs_calibration_cache_dir(dir, sizeof dir, err) != CS_OK) return false;
  int len = snprintf(out, n, "%s/%s", dir, CS_CALIBRATION_FILE);
  if (len < 0 || (size_t)len >= n) {
    cs_err_set(err, CS_EINVAL, "cache path is too long");
    return false;
  }
  return true;
}

static void calib_host_fingerprint(char out[CS_FINGERPRINT_TEXT_BYTES]) {
  cs_fingerprint fp;
  cs_fingerprint_get(&fp);
  cs_fingerprint_text(&fp, out);
}

/* First use in the process: apply the cache when it fits this host.  A
** missing, corrupt or foreign cache leaves the defaults; colstore_calibration
** says which. */
static void calib_load(void) {
  char path[CSX_PATH_BYTES], fp[CS_FINGERPRINT_TEXT_BYTES], here[CS_FINGERPRINT_TEXT_BYTES];
  cs_calibration cal;
  if (!calib_cache_path(path, sizeof path, NULL)) return;
  if (cs_calibration_load(path, fp, &cal, NULL) != CS_OK) return;
  calib_host_fingerprint(here);
  if (strcmp(fp, here) != 0) return;
  cs_calibration_apply(&cal);
  pthread_mutex_lock(&calib_mutex);
  calib_source = "cache";
  pthread_mutex_unlock(&calib_mutex);
}

static void calib_error(sqlite3_context *ctx, int rc, const char *zFmt, const char *zArg) {
  char *z = sqlite3_mprintf(zFmt, zArg);
  sqlite3_result_error(ctx, z ? z : "colstore: out of memory", -1);
  if (rc != SQLITE_ERROR) sqlite3_result_error_code(ctx, rc);
  sqlite3_free(z);
}

/* ------------------------------------------------------------------ JSON */

static void json_string_or_null(sqlite3_str *s, const char *z) {
  if (z)
    sqlite3_str_appendf(s, "\"%w\"", z);
  else
    sqlite3_str_appendall(s, "null");
}

static void json_tristate(sqlite3_str *s, int v) {
  sqlite3_str_appendall(s, v < 0 ? "null" : v ? "true" : "false");
}

/* The calibration's values, null where not measured. */
static void json_calibration(sqlite3_str *s, const cs_calibration *cal) {
  if (cal->threads >= 1)
    sqlite3_str_appendf(s, "{\"threads\":%d,\"prefetch\":{", cal->threads);
  else
    sqlite3_str_appendall(s, "{\"threads\":null,\"prefetch\":{");
  for (int r = 0; r < CS_REGIME_COUNT; r++) {
    sqlite3_str_appendf(s, "%s\"%s\":", r ? "," : "", cs_regime_name((cs_regime)r));
    if (cal->prefetch[r] >= 0)
      sqlite3_str_appendf(s, "%d", cal->prefetch[r]);
    else
      sqlite3_str_appendall(s, "null");
  }
  if (cal->mask_gate >= 0)
    sqlite3_str_appendf(s, "},\"mask_gate\":%.3f}", cal->mask_gate);
  else
    sqlite3_str_appendall(s, "},\"mask_gate\":null}");
}

/* One sweep: every candidate's median, min and max (microseconds per call),
** the pick, and whether the halves of the rounds picked the same.  names
** replaces the numeric values when given. */
static void json_sweep(sqlite3_str *s, const cs_calibrate_sweep *sw, const char *const *names) {
  sqlite3_str_appendall(s, "{\"candidates\":[");
  for (uint32_t c = 0; c < sw->n_cand; c++) {
    if (names)
      sqlite3_str_appendf(s, "%s{\"value\":\"%s\"", c ? "," : "", names[(int)sw->value[c]]);
    else
      sqlite3_str_appendf(s, "%s{\"value\":%d", c ? "," : "", (int)sw->value[c]);
    sqlite3_str_appendf(s, ",\"median_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f}", sw->median_us[c],
                        sw->min_us[c], sw->max_us[c]);
  }
  if (names)
    sqlite3_str_appendf(s, "],\"pick\":\"%s\",\"halves_agree\":", names[(int)sw->value[sw->pick]]);
  else
    sqlite3_str_appendf(s, "],\"pick\":%d,\"halves_agree\":", (int)sw->value[sw->pick]);
  json_tristate(s, sw->halves_agree);
  sqlite3_str_appendall(s, "}");
}

/* A pick whose halves disagreed is not applied (core/tuning/cs_calibrate.c): the
** report says so where the pick is. */
#define CALIB_KEPT_DEFAULT \
  "default kept: the two halves of the rounds picked differently; rerun on a quiet host or with more rounds"

static void json_applied(sqlite3_str *s, bool applied) {
  sqlite3_str_appendf(s, ",\"applied\":%s", applied ? "true" : "\"" CALIB_KEPT_DEFAULT "\"");
}

static void json_report(sqlite3_str *s, const char *target, const cs_calibrate_report *rep) {
  static const char *const route_names[2] = {"positions", "mask"};
  sqlite3_str_appendf(
      s, "\"target\":\"%s\",\"rounds\":%u,\"seconds\":%.2f,\"dram_bytes\":%llu,\"resident_bytes\":%llu",
      target, rep->rounds, rep->seconds, (unsigned long long)rep->dram_bytes,
      (unsigned long long)rep->resident_bytes);
  if (rep->targets & CS_CALIB_THREADS) {
    sqlite3_str_appendall(s, ",\"threads\":{\"families\":{");
    for (uint32_t f = 0; f < rep->n_threads; f++) {
      sqlite3_str_appendf(s, "%s\"%s\":", f ? "," : "", rep->threads[f].name);
      json_sweep(s, &rep->threads[f], NULL);
    }
    sqlite3_str_appendf(s, "},\"cpus\":%d,\"pick\":%d,\"halves_agree\":", rep->cpus, rep->threads_pick);
    json_tristate(s, rep->threads_halves_agree);
    json_applied(s, rep->result.threads >= 0);
    sqlite3_str_appendall(s, "}");
  }
  if (rep->targets & CS_CALIB_PREFETCH) {
    int agree = rep->rounds >= 2 ? 1 : -1;
    sqlite3_str_appendall(s, ",\"prefetch\":{\"regimes\":{");
    for (int r = 0; r < CS_REGIME_COUNT; r++) {
      sqlite3_str_appendf(s, "%s\"%s\":", r ? "," : "", rep->prefetch[r].name);
      json_sweep(s, &rep->prefetch[r], NULL);
      if (rep->prefetch[r].halves_agree == 0) agree = 0;
    }
    sqlite3_str_appendall(s, "},\"pick\":{");
    for (int r = 0; r < CS_REGIME_COUNT; r++)
      sqlite3_str_appendf(s, "%s\"%s\":%d", r ? "," : "", rep->prefetch[r].name,
                          (int)rep->prefetch[r].value[rep->prefetch[r].pick]);
    sqlite3_str_appendall(s, "},\"halves_agree\":");
    json_tristate(s, agree);
    sqlite3_str_appendall(s, ",\"applied\":{");
    for (int r = 0; r < CS_REGIME_COUNT; r++) {
      if (rep->result.prefetch[r] >= 0)
        sqlite3_str_appendf(s, "%s\"%s\":%d", r ? "," : "", rep->prefetch[r].name, rep->result.prefetch[r]);
      else
        sqlite3_str_appendf(s, "%s\"%s\":\"%s\"", r ? "," : "", rep->prefetch[r].name, CALIB_KEPT_DEFAULT);
    }
    sqlite3_str_appendall(s, "}}");
  }
  if (rep->targets & CS_CALIB_MASK) {
    sqlite3_str_appendall(s, ",\"mask\":{\"densities\":{");
    for (int d = 0; d < CS_CALIB_MASK_DENSITIES; d++) {
      sqlite3_str_appendf(s, "%s\"%s\":", d ? "," : "", rep->mask[d].name);
      json_sweep(s, &rep->mask[d], route_names);
    }
    sqlite3_str_appendf(s, "},\"pick\":%.3f,\"mask_native\":\"%s\",\"halves_agree\":", rep->mask_gate,
                        rep->mask_gate >= 1 ? "disabled" : "enabled");
    json_tristate(s, rep->mask_halves_agree);
    json_applied(s, rep->result.mask_gate >= 0);
    sqlite3_str_appendall(s, "}");
  }
}

/* --------------------------------------------------------------- calibrate */

/* Progress (ext/colstore_progress.c): a run takes seconds to a minute, and
** silence reads as a hang; the rounds done of all sweeps give the time
** left.  A stop (the progress handler, sqlite3_interrupt) ends the run
** before anything is applied or saved. */
static int calib_on_progress(void *arg, const char *step, int done, int total) {
  /* done reaches total with the last round; the end is the call after it */
  csx_progress_report r = {
      .phase = step, .done = done, .total = total, .finished = strcmp(step, "done") == 0};
  return csx_progress_tick(arg, &r);
}

static const char calib_targets[] = "all, threads, prefetch, mask, clear";

static void fn_calibrate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  csx_progress_mode mode = CSX_PROGRESS_AUTO;
  if (csx_progress_arg(ctx, &argc, argv, 0, &mode) != SQLITE_OK) return;
  const char *target = argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : "all";
  unsigned targets;
  if (!target) target = "";
  if (sqlite3_stricmp(target, "all") == 0)
    target = "all", targets = CS_CALIB_ALL;
  else if (sqlite3_stricmp(target, "threads") == 0)
    target = "threads", targets = CS_CALIB_THREADS;
  else if (sqlite3_stricmp(target, "prefetch") == 0)
    target = "prefetch", targets = CS_CALIB_PREFETCH;
  else if (sqlite3_stricmp(target, "mask") == 0)
    target = "mask", targets = CS_CALIB_MASK;
  else if (sqlite3_stricmp(target, "clear") == 0)
    target = "clear", targets = 0;
  else {
    char *z = sqlite3_mprintf("colstore: unknown calibration target '%s'; valid targets: %s", target,
                              calib_targets);
    sqlite3_result_error(ctx, z ? z : "colstore: out of memory", -1);
    sqlite3_free(z);
    return;
  }
  uint32_t rounds = CS_CALIB_DEFAULT_ROUNDS;
  if (argc > 1) {
    cs_value num;
    csx_value_number(argv[1], &num);
    bool ok = (num.kind == CS_VAL_INT && num.i >= 1 && num.i <= CS_CALIB_MAX_ROUNDS) ||
              (num.kind == CS_VAL_FLOAT && num.f >= 1 && num.f <= CS_CALIB_MAX_ROUNDS &&
               num.f == (double)(int)num.f);
    if (!ok) {
      const char *zv = (const char *)sqlite3_value_text(argv[1]);
      calib_error(ctx, SQLITE_ERROR, "colstore: bad rounds '%s'; give an integer from 1 to 1000 (default 11)",
                  zv ? zv : "NULL");
      return;
    }
    rounds = num.kind == CS_VAL_INT ? (uint32_t)num.i : (uint32_t)num.f;
  }
  char path[CSX_PATH_BYTES];
  cs_err err = {CS_OK, ""};
  bool have_path = calib_cache_path(path, sizeof path, &err);
  sqlite3_str *s = sqlite3_str_new(NULL);

  if (targets == 0) { /* clear: the file and the calibration in effect */
    bool removed = false;
    if (have_path && cs_calibration_clear(path, &removed, &err) != CS_OK) {
      sqlite3_free(sqlite3_str_finish(s));
      calib_error(ctx, csx_rc_to_sqlite(err.code), "colstore: %s", err.msg);
      return;
    }
    cs_calibration_apply(NULL);
    pthread_mutex_lock(&calib_mutex);
    calib_source = "defaults";
    pthread_mutex_unlock(&calib_mutex);
    sqlite3_str_appendall(s, "{\"target\":\"clear\",\"cache_path\":");
    json_string_or_null(s, have_path ? path : NULL);
    sqlite3_str_appendf(s, ",\"removed\":%s}", removed ? "true" : "false");
  } else {
    csx_progress prog;
    cs_calibrate_report *rep = sqlite3_malloc(sizeof *rep);
    if (!rep || csx_progress_begin(&prog, sqlite3_context_db_handle(ctx), "colstore_calibrate", mode)) {
      if (rep) csx_progress_end(&prog);
      sqlite3_free(rep);
      sqlite3_free(sqlite3_str_finish(s));
      sqlite3_result_error_nomem(ctx);
      return;
    }
    cs_calibrate_options opt = {.rounds = rounds, .progress = calib_on_progress, .progress_arg = &prog};
    cs_err cerr = {CS_OK, ""};
    cs_rc crc = cs_calibrate(targets, &opt, rep, &cerr);
    csx_progress_end(&prog);
    if (crc != CS_OK) {
      sqlite3_free(rep);
      sqlite3_free(sqlite3_str_finish(s));
      if (prog.stopped)
        csx_progress_result(&prog, ctx, "colstore: calibration interrupted; nothing was applied or saved");
      else
        calib_error(ctx, csx_rc_to_sqlite(cerr.code), "colstore: calibration failed: %s", cerr.msg);
      return;
    }
    /* Merge with what is in effect, or with the cache when it is this
    ** host's: a partial run replaces only the knobs it measured. */
    char here[CS_FINGERPRINT_TEXT_BYTES], fp[CS_FINGERPRINT_TEXT_BYTES];
    calib_host_fingerprint(here);
    cs_calibration merged, cached;
    cs_calibration_current(&merged);
    if (have_path && cs_calibration_load(path, fp, &cached, NULL) == CS_OK && strcmp(fp, here) == 0)
      merged = cached;
    /* A measured knob takes this run's pick, or the default (-1) where the
    ** halves disagreed: an earlier pick is not kept over a run that
    ** could not confirm it. */
    if (targets & CS_CALIB_THREADS) merged.threads = rep->result.threads;
    for (int r = 0; r < CS_REGIME_COUNT; r++)
      if (targets & CS_CALIB_PREFETCH) merged.prefetch[r] = rep->result.prefetch[r];
    if (targets & CS_CALIB_MASK) merged.mask_gate = rep->result.mask_gate;
    cs_err serr = {CS_OK, ""};
    bool saved = have_path && cs_calibration_save(path, here, &merged, &serr) == CS_OK;
    cs_calibration_apply(&merged);
    pthread_mutex_lock(&calib_mutex);
    calib_source = "calibration";
    pthread_mutex_unlock(&calib_mutex);
    sqlite3_str_appendall(s, "{");
    json_report(s, target, rep);
    sqlite3_str_appendf(s, ",\"fingerprint\":\"%w\",\"cache_path\":", here);
    json_string_or_null(s, have_path ? path : NULL);
    sqlite3_str_appendf(s, ",\"saved\":%s,\"save_error\":", saved ? "true" : "false");
    json_string_or_null(s, saved ? NULL : have_path ? serr.msg : err.msg);
    sqlite3_str_appendall(s, ",\"applied\":");
    json_calibration(s, &merged);
    sqlite3_str_appendall(s, "}");
    sqlite3_free(rep);
  }
  char *z = sqlite3_str_finish(s);
  if (z)
    sqlite3_result_text(ctx, z, -1, sqlite3_free);
  else
    sqlite3_result_error_nomem(ctx);
}

/* ------------------------------------------------------------- calibration */

static void fn_calibration(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  char path[CSX_PATH_BYTES], here[CS_FINGERPRINT_TEXT_BYTES], fp[CS_FINGERPRINT_TEXT_BYTES];
  cs_err err = {CS_OK, ""};
  bool have_path = calib_cache_path(path, sizeof path, &err);
  calib_host_fingerprint(here);
  cs_calibration cached;
  cs_err lerr = {CS_OK, ""};
  cs_rc lrc = have_path ? cs_calibration_load(path, fp, &cached, &lerr) : CS_ENOENT;
  int matches = lrc == CS_OK ? strcmp(fp, here) == 0 : -1;
  char *warning = NULL;
  if (!have_path)
    warning = sqlite3_mprintf("no calibration cache: %s", err.msg);
  else if (lrc != CS_OK && lrc != CS_ENOENT)
    warning = sqlite3_mprintf("ignored the calibration cache: %s", lerr.msg);
  else if (matches == 0)
    warning = sqlite3_mprintf(
        "ignored the calibration cache: it was measured on another host (fingerprint differs); "
        "run colstore_calibrate() here");

  pthread_mutex_lock(&calib_mutex);
  const char *source = calib_source;
  pthread_mutex_unlock(&calib_mutex);
  cs_calibration cal;
  cs_calibration_current(&cal);
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);

  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendf(s, "{\"source\":\"%s\",\"cache_path\":", source);
  json_string_or_null(s, have_path ? path : NULL);
  sqlite3_str_appendf(s,
                      ",\"cache_exists\":%s,\"fingerprint_matches\":", lrc == CS_ENOENT ? "false" : "true");
  json_tristate(s, matches);
  sqlite3_str_appendf(s, ",\"fingerprint\":\"%w\",\"cache_fingerprint\":", here);
  json_string_or_null(s, lrc == CS_OK ? fp : NULL);
  sqlite3_str_appendall(s, ",\"warning\":");
  json_string_or_null(s, warning);
  sqlite3_str_appendall(s, ",\"calibration\":");
  json_calibration(s, &cal);
  /* What the kernels use now, and which layer it comes from; for threads
  ** the cap, before an automatic one is limited to the idle processors
  ** (colstore_last_plan reports that). */
  sqlite3_str_appendf(s, ",\"effective\":{\"threads\":{\"value\":%d,\"from\":\"%s\"},\"prefetch\":{",
                      cs_kernel_threads_cap(),
                      kc.threads > 0     ? "colstore_config"
                      : cal.threads >= 1 ? "calibration"
                                         : "default");
  for (int r = 0; r < CS_REGIME_COUNT; r++)
    sqlite3_str_appendf(s, "%s\"%s\":{\"value\":%d,\"from\":\"%s\"}", r ? "," : "",
                        cs_regime_name((cs_regime)r), cs_kernel_prefetch_for((cs_regime)r),
                        kc.prefetch >= 0       ? "colstore_config"
                        : cal.prefetch[r] >= 0 ? "calibration"
                                               : "default");
  const char *gate_from;
  double gate = csx_config_mask_gate(&gate_from);
  sqlite3_str_appendf(s, "},\"mask_gate\":{\"value\":%.3f,\"from\":\"%s\"}}", gate, gate_from);
  /* The host's NUMA layout and what placement and binding do on it. */
  cs_numa_topology *topo = sqlite3_malloc(sizeof *topo);
  char numa_eff[160], bind_eff[160];
  cs_numa_effective(numa_eff, sizeof numa_eff);
  cs_binding_effective(bind_eff, sizeof bind_eff);
  if (topo) cs_numa_topology_get(topo);
  sqlite3_str_appendf(s, ",\"numa\":{\"libnuma\":%s,\"nodes\":%d,\"cpus\":%d,",
                      topo && topo->libnuma ? "true" : "false", topo ? topo->nodes : -1,
                      topo ? topo->cpus : -1);
  sqlite3_str_appendf(s, "\"placement\":{\"requested\":\"%s\",\"effective\":\"%s\"},",
                      cs_numa_policy_name(cs_numa_get()), numa_eff);
  sqlite3_str_appendf(s, "\"binding\":{\"requested\":\"%s\",\"effective\":\"%s\"}}}",
                      cs_binding_name(cs_binding_get()), bind_eff);
  sqlite3_free(topo);
  sqlite3_free(warning);
  char *z = sqlite3_str_finish(s);
  if (z)
    sqlite3_result_text(ctx, z, -1, sqlite3_free);
  else
    sqlite3_result_error_nomem(ctx);
}

int csx_register_calibrate(sqlite3 *db) {
  pthread_once(&calib_once, calib_load);
  int rc = SQLITE_OK;
  for (int n = 0; n <= 3 && rc == SQLITE_OK; n++)
    rc = sqlite3_create_function_v2(db, "colstore_calibrate", n, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                    fn_calibrate, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "colstore_calibration", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                    fn_calibration, NULL, NULL, NULL);
  return rc;
}
