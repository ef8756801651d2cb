/*
** cs_kernel_config.c - the process-wide kernel settings and the thread
** policy every OpenMP region in the core asks for its thread count.
**
** The settings (thread cap, prefetch distance) are one 64-bit atomic word,
** so a reader never sees the cap of one cs_kernel_config_set() call with
** the prefetch distance of another, and no lock is taken on a kernel's hot
** path.  Kernels read the word once per call.
**
** Thread policy (seeds/003, "Threshold fix"): a kernel over n elements runs
** on one thread below CS_PARALLEL_MIN_ELEMENTS, because below ~256K elements
** the fork/join costs more than it saves; above, the count is proportional
** to the work, ceil(n / CS_PARALLEL_MIN_ELEMENTS), at least 2 (the earlier
** colstore floored this division and so never threaded anything under 1M
** elements), and at most the cap.  Each region passes the count through
** num_threads() rather than omp_set_num_threads(), which would change the
** host application's own OpenMP settings.
**
** The one choice a newcomer might question: the automatic cap is every
** processor OpenMP reports, not a per-socket allowance.  Calibration
** (cs_calibrate.c, applied with cs_calibration_apply) refines it when the
** explicit cap is 0; uncalibrated, the host's cores are the honest
** default, and threads are never bound to cores (binding measured 24-51%
** slower for scattered gathers, seeds/003 Round 3).
*/
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

#include "cs_kernels_internal.h"

/* Low 32 bits: thread cap (0 = auto); high 32 bits: prefetch as int32
** (0 = off, -1 = auto).  The initial value is {0, -1}. */
static _Atomic uint64_t kernel_config_word = (uint64_t)(uint32_t)-1 << 32;

static uint64_t config_pack(int threads, int prefetch) {
  return (uint64_t)(uint32_t)threads | ((uint64_t)(uint32_t)prefetch << 32);
}

/* Calibration (cs_calibrate.c) times candidate settings without touching
** the process-wide word: an override holds for the calling thread only, and
** every kernel reads its settings on the calling thread, before its
** parallel region. */
static _Thread_local bool override_on;
static _Thread_local cs_kernel_config override_cfg;

void cs__kernel_config_override(const cs_kernel_config *cfg) {
  override_on = cfg != NULL;
  if (cfg) override_cfg = *cfg;
}

/* The process-wide calibration: -1 = not measured.  Each field is its own
** atomic; a kernel reads the one it needs once per call. */
static _Atomic int cal_threads = -1;
static _Atomic int cal_prefetch[CS_REGIME_COUNT] = {-1, -1, -1, -1};
static _Atomic uint64_t cal_mask_gate_bits; /* a double; set with the rest */
static _Atomic bool cal_mask_gate_set;

void cs_calibration_init(cs_calibration *cal) {
  cal->threads = -1;
  for (int r = 0; r < CS_REGIME_COUNT; r++) cal->prefetch[r] = -1;
  cal->mask_gate = -1;
}

void cs_calibration_apply(const cs_calibration *cal) {
  cs_calibration none;
  if (!cal) {
    cs_calibration_init(&none);
    cal = &none;
  }
  atomic_store(&cal_threads, cal->threads >= 1 ? cal->threads : -1);
  for (int r = 0; r < CS_REGIME_COUNT; r++) atomic_store(&cal_prefetch[r], cal->prefetch[r] >= 0 ? cal->prefetch[r] : -1);
  bool gate = cal->mask_gate >= 0 && cal->mask_gate <= 1;
  uint64_t bits;
  memcpy(&bits, &cal->mask_gate, sizeof bits);
  atomic_store(&cal_mask_gate_bits, bits);
  atomic_store(&cal_mask_gate_set, gate);
}

void cs_calibration_current(cs_calibration *out) {
  out->threads = atomic_load(&cal_threads);
  for (int r = 0; r < CS_REGIME_COUNT; r++) out->prefetch[r] = atomic_load(&cal_prefetch[r]);
  uint64_t bits = atomic_load(&cal_mask_gate_bits);
  memcpy(&out->mask_gate, &bits, sizeof bits);
  if (!atomic_load(&cal_mask_gate_set)) out->mask_gate = -1;
}

void cs_kernel_config_get(cs_kernel_config *out) {
  if (override_on) {
    *out = override_cfg;
    return;
  }
  uint64_t w = atomic_load_explicit(&kernel_config_word, memory_order_relaxed);
  out->threads = (int)(uint32_t)w;
  out->prefetch = (int)(int32_t)(uint32_t)(w >> 32);
}

/* Out-of-range values are clamped rather than refused (the setter cannot
** fail): a negative thread cap means auto, a prefetch below -1 means auto. */
void cs_kernel_config_set(const cs_kernel_config *cfg) {
  int threads = cfg->threads < 0 ? 0 : cfg->threads;
  int prefetch = cfg->prefetch < -1 ? -1 : cfg->prefetch;
  atomic_store_explicit(&kernel_config_word, config_pack(threads, prefetch), memory_order_relaxed);
}

int cs_kernel_threads(uint64_t n) {
  if (n < CS_PARALLEL_MIN_ELEMENTS) return 1;
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  /* Precedence: an explicit cap, else the calibrated one, else every core. */
  int cal = atomic_load_explicit(&cal_threads, memory_order_relaxed);
  int cap = cfg.threads > 0 ? cfg.threads : cal > 0 ? cal : omp_get_num_procs();
  if (cap <= 1) return 1;
  if (cap > CS__MAX_THREADS) cap = CS__MAX_THREADS;
  uint64_t want = (n + CS_PARALLEL_MIN_ELEMENTS - 1) / CS_PARALLEL_MIN_ELEMENTS;
  if (want < 2) want = 2;
  return want < (uint64_t)cap ? (int)want : cap;
}

int cs__kernel_prefetch(int auto_default) {
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  return cfg.prefetch >= 0 ? cfg.prefetch : auto_default;
}

static const char *const regime_names[CS_REGIME_COUNT] = {"resident_unsorted", "resident_sorted", "dram_unsorted",
                                                          "dram_sorted"};

const char *cs_regime_name(cs_regime r) { return (unsigned)r < CS_REGIME_COUNT ? regime_names[r] : NULL; }

/* seeds/003 Stage 3 classifies by the two cheap signals a gather has at
** hand: the source column's size against the LLC, and sortedness. */
cs_regime cs_regime_of(bool sorted, uint64_t source_bytes) {
  bool resident = source_bytes <= cs_fingerprint_llc_bytes();
  return resident ? (sorted ? CS_REGIME_RESIDENT_SORTED : CS_REGIME_RESIDENT_UNSORTED)
                  : (sorted ? CS_REGIME_DRAM_SORTED : CS_REGIME_DRAM_UNSORTED);
}

int cs_kernel_prefetch_for(cs_regime r) {
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  if (cfg.prefetch >= 0) return cfg.prefetch;
  int cal = (unsigned)r < CS_REGIME_COUNT ? atomic_load_explicit(&cal_prefetch[r], memory_order_relaxed) : -1;
  if (cal >= 0) return cal;
  bool sorted = r == CS_REGIME_RESIDENT_SORTED || r == CS_REGIME_DRAM_SORTED;
  return sorted ? CS__PREFETCH_AUTO_SORTED : CS__PREFETCH_AUTO_ROWS;
}
