/*
** cs_kernel_config.c - the process-wide kernel settings and the thread
** policy every parallel kernel in the core asks for its thread count.
**
** The settings (thread cap, prefetch distance) are one 64-bit atomic word,
** so a reader never sees the cap of one cs_kernel_config_set() call with
** the prefetch distance of another, and no lock is taken on a kernel's hot
** path.  Kernels read the word once per call.
**
** Thread policy (the kernel study behind the gathers, docs/tuning.md): a kernel over n elements runs
** on one thread below CS_PARALLEL_MIN_ELEMENTS, because below ~256K elements
** the fork/join costs more than it saves; above, the count is proportional
** to the work, ceil(n / CS_PARALLEL_MIN_ELEMENTS), at least 2 (the earlier
** colstore floored this division and so never threaded anything under 1M
** elements), and at most the cap.  The kernels run on colstore's own team
** of helpers (cs_team.c), so the host application's OpenMP settings are
** neither read nor changed.
**
** The one choice a newcomer might question: the automatic cap is every
** processor OpenMP reports, not a per-socket allowance.  Calibration
** (cs_calibrate.c, applied with cs_calibration_apply) refines it when the
** explicit cap is 0; uncalibrated, the host's cores are the honest
** default, and threads are never bound to cores (binding measured 24-51%
** slower for scattered gathers in the kernel study).
**
** Load awareness (docs/tuning.md, "Threads on a busy host").  An automatic
** cap is further limited to the processors no other thread is running on:
** a helper that must wait for a core another process holds adds nothing
** (with OpenMP regions it made a 2-thread count query 7x slower than 1
** thread, docs/performance.md, "Kernel threads: 1 vs 2"; the team never
** waits for it, but asking for it still costs a wake-up).  The signal is the
** instantaneous runnable count of /proc/loadavg (its 4th field, "R/T"),
** read at most once every CS__LOAD_SAMPLE_NS per process and kept in
** atomics, so the hot path gains no lock and no system call but a vDSO
** clock read.  Subtracted from it are the calling thread and this
** process's own helpers and background workers while they work or spin
** (cs__own_thread_busy); the rest are others, and threads = min(cap, want,
** max(1, ncpu - others)).  An explicit cap is honoured as given, and
** COLSTORE_LOAD_AWARE=0 or an unreadable /proc/loadavg gives the policy
** above unchanged.
*/
#include <fcntl.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cs_runtime_internal.h"

/* Low 32 bits: thread cap (0 = auto); high 32 bits: prefetch as int32
** (0 = off, -1 = auto).  The initial value is {0, -1}. */
static _Atomic uint64_t kernel_config_word = (uint64_t)(uint32_t)-1 << 32;

static uint64_t config_pack(int threads, int prefetch) {
  return (uint64_t)(uint32_t)threads | ((uint64_t)(uint32_t)prefetch << 32);
}

/* Calibration (cs_calibrate.c) times candidate settings without touching
** the process-wide word: an override holds for the calling thread only, and
** every kernel reads its settings on the calling thread, before its team
** run. */
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
  for (int r = 0; r < CS_REGIME_COUNT; r++)
    atomic_store(&cal_prefetch[r], cal->prefetch[r] >= 0 ? cal->prefetch[r] : -1);
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

int cs__threads_policy(uint64_t n, int cap, int ncpu, int others) {
  if (n < CS_PARALLEL_MIN_ELEMENTS || cap <= 1) return 1;
  if (cap > CS__MAX_THREADS) cap = CS__MAX_THREADS;
  uint64_t want = (n + CS_PARALLEL_MIN_ELEMENTS - 1) / CS_PARALLEL_MIN_ELEMENTS;
  if (want < 2) want = 2;
  int threads = want < (uint64_t)cap ? (int)want : cap;
  if (others >= 0 && ncpu > 0) {
    int idle = ncpu - others < 1 ? 1 : ncpu - others;
    if (threads > idle) threads = idle;
  }
  return threads;
}

/* ------------------------------------------------------- load awareness */

/* One /proc/loadavg read per this many nanoseconds per process (~5 us a
** read on the development host, so at most 0.05% of a core). */
#define CS__LOAD_SAMPLE_NS 10000000ull
int cs__loadavg_runnable(const char *text) {
  /* "0.53 0.53 1.16 1/85 23710": skip three fields, read the digits
  ** before the slash. */
  const char *p = text;
  for (int f = 0; f < 3; f++) {
    while (*p == ' ') p++;
    if (!*p) return -1;
    while (*p && *p != ' ') p++;
  }
  while (*p == ' ') p++;
  long r = 0;
  const char *digits = p;
  while (*p >= '0' && *p <= '9' && r < 1000000) r = r * 10 + (*p++ - '0');
  return p > digits && *p == '/' ? (int)r : -1;
}

/* -1 = not read yet, 0 = off (COLSTORE_LOAD_AWARE=0), 1 = on. */
static _Atomic int load_aware = -1;
static _Atomic int load_ncpu;           /* online processors, read once */
static _Atomic uint64_t load_sample_ns; /* CLOCK_MONOTONIC_COARSE of the last sample; 0 = never */
static _Atomic int load_others = -1;    /* others at the last sample; -1 = unknown */
static uint64_t coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool load_aware_on(void) {
  int on = atomic_load_explicit(&load_aware, memory_order_acquire);
  if (on < 0) {
    /* Read once; racing first callers read the same environment. */
    const char *e = getenv("COLSTORE_LOAD_AWARE");
    on = !(e && strcmp(e, "0") == 0);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    atomic_store_explicit(&load_ncpu, ncpu > 0 && ncpu < 1 << 20 ? (int)ncpu : 0, memory_order_relaxed);
    atomic_store_explicit(&load_aware, on, memory_order_release);
  }
  return on;
}

/* colstore's own background threads while they run or look for work (the
** cursor's batch worker, cs_worker.c; the kernels' helpers, cs_team.c): not
** load from others, but colstore's own work, which the pipelined cursor
** counts on when it asks how many threads the host gives it. */
static _Atomic int own_busy;
static _Thread_local bool own_busy_self;

void cs__own_thread_busy(bool busy) {
  own_busy_self = busy;
  atomic_fetch_add_explicit(&own_busy, busy ? 1 : -1, memory_order_relaxed);
}

/* Runnable threads that are neither the caller nor this process's own
** helpers and background workers at work, or -1. */
static int load_read_others(void) {
  int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  ssize_t k = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (k <= 0) return -1;
  buf[k] = 0;
  int runnable = cs__loadavg_runnable(buf);
  if (runnable < 0) return -1;
  int busy = atomic_load_explicit(&own_busy, memory_order_relaxed) - (own_busy_self ? 1 : 0);
  int others = runnable - 1 - (busy > 0 ? busy : 0);
  return others < 0 ? 0 : others;
}

/* The others of a sample at most CS__LOAD_SAMPLE_NS old, or -1 when load
** awareness is off or the count is unknown.  One caller per interval wins
** the compare-and-swap and reads the file; the rest use the last value. */
static int load_others_now(int *out_ncpu) {
  if (!load_aware_on()) return -1;
  *out_ncpu = atomic_load_explicit(&load_ncpu, memory_order_relaxed);
  uint64_t now = coarse_ns();
  uint64_t last = atomic_load_explicit(&load_sample_ns, memory_order_relaxed);
  if ((last == 0 || (int64_t)(now - last) >= (int64_t)CS__LOAD_SAMPLE_NS) &&
      atomic_compare_exchange_strong_explicit(&load_sample_ns, &last, now ? now : 1, memory_order_relaxed,
                                              memory_order_relaxed))
    atomic_store_explicit(&load_others, load_read_others(), memory_order_relaxed);
  return atomic_load_explicit(&load_others, memory_order_relaxed);
}

int cs_kernel_idle_cpus(void) {
  int ncpu = 0, others = load_others_now(&ncpu);
  if (others < 0 || ncpu <= 0) return -1;
  return ncpu > others ? ncpu - others : 0;
}

/* Precedence: an explicit cap, else the calibrated one, else every core. */
static int threads_cap(const cs_kernel_config *cfg) {
  int cal = atomic_load_explicit(&cal_threads, memory_order_relaxed);
  return cfg->threads > 0 ? cfg->threads : cal > 0 ? cal : omp_get_num_procs();
}

int cs_kernel_threads_cap(void) {
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  int cap = threads_cap(&cfg);
  return cap < 1 ? 1 : cap > CS__MAX_THREADS ? CS__MAX_THREADS : cap;
}

int cs_kernel_threads(uint64_t n) {
  if (n < CS_PARALLEL_MIN_ELEMENTS) return 1;
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  int cap = threads_cap(&cfg);
  /* Only an automatic cap above one thread looks at the load. */
  int ncpu = 0, others = cfg.threads == 0 && cap > 1 ? load_others_now(&ncpu) : -1;
  return cs__threads_policy(n, cap, ncpu, others);
}

int cs__kernel_prefetch(int auto_default) {
  cs_kernel_config cfg;
  cs_kernel_config_get(&cfg);
  return cfg.prefetch >= 0 ? cfg.prefetch : auto_default;
}

static const char *const regime_names[CS_REGIME_COUNT] = {"resident_unsorted", "resident_sorted",
                                                          "dram_unsorted", "dram_sorted"};

const char *cs_regime_name(cs_regime r) { return (unsigned)r < CS_REGIME_COUNT ? regime_names[r] : NULL; }

/* The kernel study classifies by the two cheap signals a gather has at
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
