/*
** cs_calibrate.c - measures the kernel knobs on the host at hand: the
** thread cap per kernel family, the prefetch distance per access regime,
** and the mask density from which the mask-native gather beats lowering
** the mask to positions.
**
** Method (bench/README.md; docs/tuning.md "What is measured").  Every sweep
** first runs each candidate once and checks that its output equals the
** first candidate's byte for byte; only then does it time.  Timing runs in
** interleaved rounds, every candidate once per round (the order rotating
** from round to round), because sequential repeats let background load
** drift penalise whichever candidate ran during it.  Each candidate gets the
** median of its rounds, with min and max beside it, and the sweep picks the
** first candidate (in listed order) within CS_CALIB_TOLERANCE of the best
** median, so a difference smaller than the noise never buys more threads or
** a prefetch.  Picking again on each half of the rounds tells whether the
** pick is stable: "halves agree".  A pick whose halves disagree is
** reported but not applied: the knob keeps its default, since a pick that
** one half of the run contradicts is noise, and a user who saw threads=3 one
** run and 1 the next could trust neither.  Thread candidates stop at the
** online cpus the process may run on: more threads than cpus can only
** time-share, and a win measured that way is the noise winning.
**
** The data are two temporary stores of one FLOAT64 column, written by the
** writer with its default records (the layout real tables have) and
** unlinked as soon as they are mapped: a cache-resident one (1 MiB) and a
** DRAM one (twice the LLC, at least 64 MiB, at most 128 MiB), so the whole
** run stays under ~256 MiB of memory.  Both sit in the page cache; a cold
** read from storage is not what this measures.
**
** The one choice a newcomer might question: candidates are applied through
** a thread-local override of the kernel settings, not cs_kernel_config_set,
** so queries on other threads keep their settings while a calibration runs
** (they do compete for the cores, which is why calibration belongs on a
** quiet host).
*/
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cs_kernels_internal.h"

/* ------------------------------------------------------------ statistics */

static int calib_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double cs_calibrate_median(const double *v, uint32_t n) {
  if (n == 0) return 0;
  double small[64];
  double *c = n <= 64 ? small : cs__mem_malloc(n * sizeof *c);
  if (!c) return v[0]; /* no memory for the copy: a sample, not a crash */
  memcpy(c, v, n * sizeof *c);
  qsort(c, n, sizeof *c, calib_cmp_double);
  double m = (n & 1) ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  if (c != small) cs__mem_free(c);
  return m;
}

uint32_t cs_calibrate_pick(const double *medians, uint32_t n_cand, double tol) {
  if (n_cand == 0) return 0;
  double best = medians[0];
  for (uint32_t c = 1; c < n_cand; c++)
    if (medians[c] < best) best = medians[c];
  for (uint32_t c = 0; c < n_cand; c++)
    if (medians[c] <= best * (1 + tol)) return c;
  return 0;
}

void cs_calibrate_summarize(const double *times, uint32_t n_rounds, uint32_t n_cand, double tol,
                            cs_calibrate_sweep *out) {
  if (n_cand > CS_CALIB_MAX_CAND) n_cand = CS_CALIB_MAX_CAND;
  out->n_cand = n_cand;
  uint32_t h = n_rounds / 2;
  double col[CS_CALIB_MAX_ROUNDS];
  for (uint32_t c = 0; c < n_cand; c++) {
    for (uint32_t r = 0; r < n_rounds; r++) col[r] = times[(size_t)r * n_cand + c];
    out->median_us[c] = cs_calibrate_median(col, n_rounds);
    out->min_us[c] = out->max_us[c] = n_rounds ? col[0] : 0;
    for (uint32_t r = 1; r < n_rounds; r++) {
      if (col[r] < out->min_us[c]) out->min_us[c] = col[r];
      if (col[r] > out->max_us[c]) out->max_us[c] = col[r];
    }
    if (h > 0) {
      out->half_median_us[0][c] = cs_calibrate_median(col, h);
      out->half_median_us[1][c] = cs_calibrate_median(col + h, n_rounds - h);
    } else {
      out->half_median_us[0][c] = out->half_median_us[1][c] = out->median_us[c];
    }
  }
  out->pick = cs_calibrate_pick(out->median_us, n_cand, tol);
  out->half_pick[0] = cs_calibrate_pick(out->half_median_us[0], n_cand, tol);
  out->half_pick[1] = cs_calibrate_pick(out->half_median_us[1], n_cand, tol);
  out->halves_agree = h == 0 ? -1 : out->half_pick[0] == out->half_pick[1];
}

static double calib_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* cs_calibrate's progress: the options' callback, the step being run,
** and rounds done of the whole run. */
typedef struct calib_ticker {
  const cs_calibrate_options *opt;
  char step[96];
  int done, total;
} calib_ticker;

/* Tells opt->progress where the run is; CS_EINVAL when it asks to stop. */
static cs_rc calib_tick(calib_ticker *t, cs_err *err) {
  if (!t || !t->opt || !t->opt->progress) return CS_OK;
  if (t->opt->progress(t->opt->progress_arg, t->step, t->done, t->total) == 0) return CS_OK;
  return cs_err_set(err, CS_EINVAL, "calibration interrupted");
}

/* cs_calibrate_sweep_run, ticking t (may be NULL) before the sweep and
** after each round. */
static cs_rc sweep_run(cs_calibrate_run_fn run, void *ctx, uint32_t n_cand, uint32_t rounds,
                       double per_call_div, cs_calibrate_sweep *out, calib_ticker *t, cs_err *err) {
  if (n_cand < 1 || n_cand > CS_CALIB_MAX_CAND)
    return cs_err_set(err, CS_EINVAL, "calibration sweep %s: %u candidates (1 to %d)", out->name, n_cand,
                      CS_CALIB_MAX_CAND);
  if (rounds < 1 || rounds > CS_CALIB_MAX_ROUNDS)
    return cs_err_set(err, CS_EINVAL, "calibration rounds %u (1 to %d)", rounds, CS_CALIB_MAX_ROUNDS);
  if (!(per_call_div > 0)) per_call_div = 1;
  cs_rc rc = calib_tick(t, err);
  if (rc) return rc;
  /* Identical output first: a candidate that computes something else is a
  ** bug, and timing it would only hide that. */
  size_t ref_bytes = 0;
  const void *p = run(ctx, 0, &ref_bytes);
  uint8_t *ref = cs__mem_malloc(ref_bytes ? ref_bytes : 1);
  if (!ref) return cs_err_set(err, CS_ENOMEM, "calibration sweep %s: out of memory", out->name);
  memcpy(ref, p, ref_bytes);
  for (uint32_t c = 1; c < n_cand; c++) {
    size_t bytes = 0;
    p = run(ctx, c, &bytes);
    if (bytes != ref_bytes || memcmp(p, ref, bytes) != 0) {
      cs__mem_free(ref);
      return cs_err_set(
          err, CS_EINVAL,
          "calibration sweep %s: candidate %u gives different output from candidate 0 (%zu and %zu bytes)",
          out->name, c, bytes, ref_bytes);
    }
  }
  cs__mem_free(ref);
  double *times = cs__mem_malloc((size_t)rounds * n_cand * sizeof *times);
  if (!times) return cs_err_set(err, CS_ENOMEM, "calibration sweep %s: out of memory", out->name);
  for (uint32_t r = 0; r < rounds; r++) {
    for (uint32_t k = 0; k < n_cand; k++) {
      uint32_t c = (r + k) % n_cand; /* rotate the order so no candidate always runs first */
      size_t bytes;
      double t0 = calib_now_us();
      (void)run(ctx, c, &bytes);
      times[(size_t)r * n_cand + c] = (calib_now_us() - t0) / per_call_div;
    }
    if (t) t->done++;
    if ((rc = calib_tick(t, err))) break;
  }
  if (rc == CS_OK) cs_calibrate_summarize(times, rounds, n_cand, CS_CALIB_TOLERANCE, out);
  cs__mem_free(times);
  return rc;
}

cs_rc cs_calibrate_sweep_run(cs_calibrate_run_fn run, void *ctx, uint32_t n_cand, uint32_t rounds,
                             double per_call_div, cs_calibrate_sweep *out, cs_err *err) {
  return sweep_run(run, ctx, n_cand, rounds, per_call_div, out, NULL, err);
}

/* ------------------------------------------------------------------ data */

static uint64_t calib_rng(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double calib_unit(uint64_t *state) { return (double)(calib_rng(state) >> 11) * 0x1.0p-53; }

/* A store of n_rows random FLOAT64 values in [0, 1), opened and unlinked. */
static cs_rc calib_store_make(const char *dir, const char *tag, uint64_t n_rows, uint64_t seed,
                              cs_store **out, cs_err *err) {
  static const cs_column col = {"x", CS_TYPE_FLOAT64, false};
  const cs_schema schema = {1, &col};
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s/colstore-calibrate-%ld-%s.cst", dir, (long)getpid(), tag) >=
      sizeof path)
    return cs_err_set(err, CS_EINVAL, "%s: scratch directory path is too long", dir);
  cs_writer_options wo = {.replace = true};
  cs_writer *w = NULL;
  cs_batch *b = NULL;
  cs_rc rc = cs_writer_create(path, &schema, &wo, &w, err);
  if (rc != CS_OK) return rc;
  rc = cs_batch_new(&schema, &b, err);
  if (rc != CS_OK) goto fail;
  uint64_t state = seed;
  for (uint64_t done = 0; done < n_rows;) {
    uint64_t take = n_rows - done < (1u << 20) ? n_rows - done : (1u << 20);
    cs_batch_clear(b);
    for (uint64_t i = 0; i < take; i++) {
      if ((rc = cs_batch_put_f64(b, 0, calib_unit(&state), err)) != CS_OK) goto fail;
      cs_batch_end_row(b);
    }
    if ((rc = cs_writer_write(w, b, err)) != CS_OK) goto fail;
    done += take;
  }
  cs_batch_free(b);
  b = NULL;
  if ((rc = cs_writer_prepare(w, err)) != CS_OK) goto fail;
  rc = cs_writer_commit(w, err);
  w = NULL;
  if (rc != CS_OK) goto fail;
  rc = cs_store_open(path, CS_VERIFY_HEADER, out, err);
  unlink(path); /* the mapping keeps the data */
  return rc;
fail:
  cs_batch_free(b);
  if (w) cs_writer_abort(w);
  unlink(path);
  return rc;
}

/* ---------------------------------------------------------------- sweeps */

typedef enum calib_op {
  OP_GATHER_ROWS,
  OP_GATHER_SORTED,
  OP_GATHER_MASK,
  OP_PRED_EVAL,
  OP_MASK_POSITIONS
} calib_op;

/* What one sweep runs; the candidate sets one field of cfg. */
typedef struct calib_ctx {
  calib_op op;
  const cs_store *s;
  const uint64_t *rows; /* gathers: the row list */
  uint64_t n;           /* rows in the list, or mask bytes, or rows evaluated */
  const uint8_t *mask;  /* OP_GATHER_MASK, OP_MASK_POSITIONS */
  uint64_t *pos;        /* OP_MASK_POSITIONS: room for n positions */
  uint8_t *out;         /* room for the largest output */
  uint32_t reps;        /* calls per run (cache-resident sweeps repeat) */
  const double *values; /* candidate values */
  int what;             /* 0: values are thread caps; 1: prefetch distances; 2: mask route */
  int threads;          /* the cap while sweeping something else (0 = auto) */
} calib_ctx;

static const void *calib_run(void *p, uint32_t cand, size_t *out_bytes) {
  calib_ctx *x = p;
  cs_kernel_config cfg = {x->threads, -1};
  calib_op op = x->op;
  if (x->what == 0)
    cfg.threads = (int)x->values[cand];
  else if (x->what == 1)
    cfg.prefetch = (int)x->values[cand];
  else
    op = x->values[cand] != 0 ? OP_GATHER_MASK : OP_MASK_POSITIONS;
  cs__kernel_config_override(&cfg);
  uint64_t k = 0;
  for (uint32_t rep = 0; rep < x->reps; rep++) {
    switch (op) {
      case OP_GATHER_ROWS:
        cs_gather_rows(x->s, 0, x->rows, x->n, x->out, NULL);
        *out_bytes = x->n * 8;
        break;
      case OP_GATHER_SORTED:
        cs_gather_sorted(x->s, 0, x->rows, x->n, x->out, NULL);
        *out_bytes = x->n * 8;
        break;
      case OP_GATHER_MASK:
        k = cs_gather_mask(x->s, 0, x->mask, 0, x->n, x->out, NULL);
        *out_bytes = k * 8;
        break;
      case OP_PRED_EVAL: {
        cs_pred pr;
        memset(&pr, 0, sizeof pr);
        pr.col = 0;
        pr.op = CS_CMP_LT;
        pr.a.kind = CS_VAL_FLOAT;
        pr.a.f = 0.5;
        cs_pred_eval(x->s, &pr, 1, 0, x->n, x->out, NULL);
        *out_bytes = x->n;
        break;
      }
      case OP_MASK_POSITIONS:
        k = cs_mask_to_rows(x->mask, x->n, 0, x->pos);
        cs_gather_sorted(x->s, 0, x->pos, k, x->out, NULL);
        *out_bytes = k * 8;
        break;
    }
  }
  cs__kernel_config_override(NULL);
  return x->out;
}

static void calib_name(cs_calibrate_sweep *sw, const char *name, const double *values, uint32_t n) {
  memset(sw, 0, sizeof *sw);
  snprintf(sw->name, sizeof sw->name, "%s", name);
  sw->n_cand = n;
  for (uint32_t c = 0; c < n; c++) sw->value[c] = values[c];
}

/* The thread cap for all families: each family's medians divided by its
** best, averaged over the families; the first cap within tolerance of the
** lowest average.  which: -1 all rounds, 0 or 1 a half. */
static uint32_t calib_threads_pick(const cs_calibrate_sweep *sw, uint32_t n_sw, int which) {
  double score[CS_CALIB_MAX_CAND] = {0};
  uint32_t n_cand = sw[0].n_cand;
  for (uint32_t f = 0; f < n_sw; f++) {
    const double *m = which < 0 ? sw[f].median_us : sw[f].half_median_us[which];
    double best = m[0];
    for (uint32_t c = 1; c < n_cand; c++)
      if (m[c] < best) best = m[c];
    for (uint32_t c = 0; c < n_cand; c++) score[c] += (best > 0 ? m[c] / best : 1) / n_sw;
  }
  return cs_calibrate_pick(score, n_cand, CS_CALIB_TOLERANCE);
}

static const double mask_densities[CS_CALIB_MASK_DENSITIES] = {0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.9};

/* The lowest density from which the mask route (candidate 1) wins at every
** density above it: 0 if it wins everywhere, 1 if it does not win at the
** densest.  Monotone by construction, so one noisy win at a sparse density
** cannot lower the gate below a loss. */
static double calib_mask_gate(const cs_calibrate_sweep *sw, int which) {
  int j = CS_CALIB_MASK_DENSITIES;
  while (j > 0 && (which < 0 ? sw[j - 1].pick : sw[j - 1].half_pick[which]) == 1) j--;
  if (j == CS_CALIB_MASK_DENSITIES) return 1.0;
  return j == 0 ? 0.0 : mask_densities[j];
}

static void calib_mask_fill(uint8_t *m, uint64_t n, double density, uint64_t seed) {
  uint64_t state = seed;
  uint64_t cut = (uint64_t)(density * 18446744073709551615.0);
  for (uint64_t i = 0; i < n; i++) m[i] = calib_rng(&state) < cut;
}

/* Rows of 0..n_rows-1 kept with probability p, ascending, at most cap. */
static uint64_t calib_sorted_rows(uint64_t *out, uint64_t cap, uint64_t n_rows, double p, uint64_t seed) {
  uint64_t state = seed, k = 0;
  for (uint64_t r = 0; r < n_rows && k < cap; r++)
    if (calib_unit(&state) < p) out[k++] = r;
  return k;
}

/* The cpus this process may run on (its affinity mask), else the online
** ones: the most threads a pick may name. */
static int calib_usable_cpus(void) {
  cpu_set_t set;
  int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1 || (online > 0 && n > online)) n = online > 0 ? (int)online : 1;
  return n;
}

/* Names the next sweep for the progress callback. */
static calib_ticker *calib_step(calib_ticker *t, const char *target, const char *what) {
  snprintf(t->step, sizeof t->step, "%s%s%s", target, *what ? " " : "", what);
  return t;
}

cs_rc cs_calibrate(unsigned targets, const cs_calibrate_options *opt, cs_calibrate_report *out, cs_err *err) {
  double t_start = calib_now_us();
  memset(out, 0, sizeof *out);
  cs_calibration_init(&out->result);
  out->threads_pick = -1;
  out->threads_halves_agree = -1;
  out->mask_gate = -1;
  out->mask_halves_agree = -1;
  targets &= CS_CALIB_ALL;
  if (!targets) return cs_err_set(err, CS_EINVAL, "no calibration target");
  uint32_t rounds = opt && opt->rounds ? opt->rounds : CS_CALIB_DEFAULT_ROUNDS;
  if (rounds > CS_CALIB_MAX_ROUNDS)
    return cs_err_set(err, CS_EINVAL, "calibration rounds %u (1 to %d)", rounds, CS_CALIB_MAX_ROUNDS);
  out->targets = targets;
  out->rounds = rounds;

  uint64_t llc = cs_fingerprint_llc_bytes();
  uint64_t dram_bytes = 2 * llc < (64u << 20) ? (64u << 20) : 2 * llc;
  if (dram_bytes > (128u << 20)) dram_bytes = 128u << 20;
  uint64_t dram_rows = opt && opt->dram_rows ? opt->dram_rows : dram_bytes / 8;
  uint64_t res_rows = opt && opt->resident_rows ? opt->resident_rows : (1u << 20) / 8;
  if (dram_rows < 64) dram_rows = 64;
  if (res_rows < 64) res_rows = 64;
  out->dram_bytes = dram_rows * 8;
  out->resident_bytes = res_rows * 8;
  int cores = calib_usable_cpus();
  out->cpus = cores;
  int max_threads = opt && opt->max_threads > 0 && opt->max_threads < cores ? opt->max_threads : cores;
  if (max_threads > CS_CALIB_MAX_CAND) max_threads = CS_CALIB_MAX_CAND;
  int steps = ((targets & CS_CALIB_THREADS) ? 4 : 0) + ((targets & CS_CALIB_PREFETCH) ? CS_REGIME_COUNT : 0) +
              ((targets & CS_CALIB_MASK) ? CS_CALIB_MASK_DENSITIES : 0);
  calib_ticker tick = {opt, "", 0, steps * (int)rounds};
  const char *dir = opt && opt->scratch_dir ? opt->scratch_dir : getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";

  cs_store *dram = NULL, *res = NULL;
  uint64_t n_idx = dram_rows / 4, n_mask = dram_rows / 2, n_res = res_rows;
  uint64_t *idx = NULL, *sorted = NULL, *res_idx = NULL, *res_sorted = NULL, *pos = NULL;
  uint8_t *mask = NULL, *obuf = NULL;
  cs_rc rc = calib_store_make(dir, "dram", dram_rows, 1, &dram, err);
  if (rc != CS_OK) goto done;
  rc = calib_store_make(dir, "resident", res_rows, 2, &res, err);
  if (rc != CS_OK) goto done;
  /* The largest output: a gather of n_mask or 2 * n_idx values, the
  ** predicate's dram_rows mask bytes, or a resident gather. */
  size_t obytes = (size_t)(n_mask > 2 * n_idx ? n_mask : 2 * n_idx) * 8;
  if (obytes < dram_rows) obytes = dram_rows;
  if (obytes < n_res * 8) obytes = n_res * 8;
  idx = cs__mem_malloc(n_idx * 8);
  sorted = cs__mem_malloc(n_idx * 2 * 8);
  res_idx = cs__mem_malloc(n_res * 8);
  res_sorted = cs__mem_malloc(n_res * 8);
  mask = cs__mem_malloc(n_mask);
  obuf = cs__mem_malloc(obytes);
  if (!idx || !sorted || !res_idx || !res_sorted || !mask || !obuf) {
    rc = cs_err_set(err, CS_ENOMEM, "calibration: out of memory for %llu MiB of buffers",
                    (unsigned long long)((n_idx * 3 * 8 + n_mask + obytes) >> 20));
    goto done;
  }
  uint64_t state = 3;
  for (uint64_t i = 0; i < n_idx; i++) idx[i] = calib_rng(&state) % dram_rows;
  for (uint64_t i = 0; i < n_res; i++) res_idx[i] = calib_rng(&state) % res_rows;
  /* Sorted lists: a quarter of the DRAM rows (at most 2 * n_idx fit), half
  ** of the resident rows. */
  uint64_t n_sorted = calib_sorted_rows(sorted, n_idx * 2, dram_rows, 0.25, 4);
  uint64_t n_res_sorted = calib_sorted_rows(res_sorted, n_res, res_rows, 0.5, 5);
  /* A cache-resident call is short: repeat it to about 1M elements a run. */
  uint32_t reps = n_res >= (1u << 20) ? 1 : (uint32_t)((1u << 20) / n_res);

  int fresh_threads = 0; /* the cap measured here, used by the later sweeps */
  if (targets & CS_CALIB_THREADS) {
    double tv[CS_CALIB_MAX_CAND];
    for (int t = 0; t < max_threads; t++) tv[t] = t + 1;
    calib_mask_fill(mask, n_mask, 0.5, 6);
    static const char *const fam[4] = {"gather_rows", "gather_sorted", "gather_mask", "pred_eval"};
    const calib_op ops[4] = {OP_GATHER_ROWS, OP_GATHER_SORTED, OP_GATHER_MASK, OP_PRED_EVAL};
    for (int f = 0; f < 4; f++) {
      calib_ctx x = {ops[f], dram, f == 1 ? sorted : idx, 0, mask, NULL, obuf, 1, tv, 0, 0};
      x.n = f == 0 ? n_idx : f == 1 ? n_sorted : f == 2 ? n_mask : dram_rows;
      calib_name(&out->threads[f], fam[f], tv, (uint32_t)max_threads);
      rc = sweep_run(calib_run, &x, (uint32_t)max_threads, rounds, 1, &out->threads[f],
                     calib_step(&tick, "threads", fam[f]), err);
      if (rc != CS_OK) goto done;
    }
    out->n_threads = 4;
    uint32_t p = calib_threads_pick(out->threads, 4, -1);
    out->threads_pick = (int)tv[p];
    if (rounds >= 2)
      out->threads_halves_agree =
          calib_threads_pick(out->threads, 4, 0) == calib_threads_pick(out->threads, 4, 1);
    out->result.threads = out->threads_halves_agree == 0 ? -1 : out->threads_pick;
    fresh_threads = out->result.threads > 0 ? out->result.threads : 0;
  }

  if (targets & CS_CALIB_PREFETCH) {
    static const double pv[6] = {0, 8, 32, 64, 128, 256};
    for (int r = 0; r < CS_REGIME_COUNT; r++) {
      bool is_sorted = r == CS_REGIME_RESIDENT_SORTED || r == CS_REGIME_DRAM_SORTED;
      bool resident = r == CS_REGIME_RESIDENT_UNSORTED || r == CS_REGIME_RESIDENT_SORTED;
      calib_ctx x = {is_sorted ? OP_GATHER_SORTED : OP_GATHER_ROWS,
                     resident ? res : dram,
                     resident ? (is_sorted ? res_sorted : res_idx) : (is_sorted ? sorted : idx),
                     resident ? (is_sorted ? n_res_sorted : n_res) : (is_sorted ? n_sorted : n_idx),
                     NULL,
                     NULL,
                     obuf,
                     resident ? reps : 1,
                     pv,
                     1,
                     fresh_threads};
      calib_name(&out->prefetch[r], cs_regime_name((cs_regime)r), pv, 6);
      rc = sweep_run(calib_run, &x, 6, rounds, x.reps, &out->prefetch[r],
                     calib_step(&tick, "prefetch", cs_regime_name((cs_regime)r)), err);
      if (rc != CS_OK) goto done;
      out->result.prefetch[r] = out->prefetch[r].halves_agree == 0 ? -1 : (int)pv[out->prefetch[r].pick];
    }
  }

  if (targets & CS_CALIB_MASK) {
    pos = cs__mem_malloc(n_mask * 8);
    if (!pos) {
      rc = cs_err_set(err, CS_ENOMEM, "calibration: out of memory for %llu MiB of positions",
                      (unsigned long long)((n_mask * 8) >> 20));
      goto done;
    }
    static const double mv[2] = {0, 1}; /* positions first: ties keep the lowered route */
    for (int d = 0; d < CS_CALIB_MASK_DENSITIES; d++) {
      char name[32];
      snprintf(name, sizeof name, "%.3f", mask_densities[d]);
      calib_mask_fill(mask, n_mask, mask_densities[d], 7 + (uint64_t)d);
      calib_ctx x = {OP_GATHER_MASK, dram, NULL, n_mask, mask, pos, obuf, 1, mv, 2, fresh_threads};
      calib_name(&out->mask[d], name, mv, 2);
      rc = sweep_run(calib_run, &x, 2, rounds, 1, &out->mask[d], calib_step(&tick, "mask", name), err);
      if (rc != CS_OK) goto done;
    }
    out->mask_gate = calib_mask_gate(out->mask, -1);
    if (rounds >= 2) out->mask_halves_agree = calib_mask_gate(out->mask, 0) == calib_mask_gate(out->mask, 1);
    out->result.mask_gate = out->mask_halves_agree == 0 ? -1 : out->mask_gate;
  }
  rc = calib_tick(calib_step(&tick, "done", ""), err);

done:
  cs__kernel_config_override(NULL);
  cs__mem_free(idx);
  cs__mem_free(sorted);
  cs__mem_free(res_idx);
  cs__mem_free(res_sorted);
  cs__mem_free(mask);
  cs__mem_free(pos);
  cs__mem_free(obuf);
  cs_store_close(dram);
  cs_store_close(res);
  out->seconds = (calib_now_us() - t_start) / 1e6;
  return rc;
}
