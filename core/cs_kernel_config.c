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
** processor OpenMP reports, not a per-socket allowance.  Calibration (a
** later layer) refines it; until then the host's cores are the honest
** default, and threads are never bound to cores (binding measured 24-51%
** slower for scattered gathers, seeds/003 Round 3).
*/
#include <omp.h>
#include <stdatomic.h>

#include "cs_kernels_internal.h"

/* Low 32 bits: thread cap (0 = auto); high 32 bits: prefetch as int32
** (0 = off, -1 = auto).  The initial value is {0, -1}. */
static _Atomic uint64_t kernel_config_word = (uint64_t)(uint32_t)-1 << 32;

static uint64_t config_pack(int threads, int prefetch) {
  return (uint64_t)(uint32_t)threads | ((uint64_t)(uint32_t)prefetch << 32);
}

void cs_kernel_config_get(cs_kernel_config *out) {
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
  int cap = cfg.threads > 0 ? cfg.threads : omp_get_num_procs();
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
