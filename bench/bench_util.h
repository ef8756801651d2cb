/*
** bench_util.h - small helpers the benchmarks share: a monotonic clock,
** order statistics over replicate timings, a seeded generator, host facts.
**
** Header-only with static functions, so every benchmark source stays one
** executable built from one source file (CMake builds each bench alone);
** a bench that does not use a helper gets no warning for it because every
** function here is `static inline`.
**
** Why medians with min/max and not means: on a shared, noisy machine one
** stalled round drags a mean arbitrarily far, while the median of
** interleaved rounds moves only when most rounds move; min and max beside
** it show how far apart the replicates were (bench/README.md, the rules).
*/
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Nanoseconds on CLOCK_MONOTONIC (never steps with wall-clock changes). */
static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread, in nanoseconds.  Beside the wall clock it
** shows how much of a timing was spent off the CPU (preempted by other
** work on a shared machine): wall - cpu. */
static inline uint64_t bench_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process (every thread), in nanoseconds.  For a
** query whose kernels run on worker threads the calling thread's CPU time
** misses the workers' share; this counts it (and any time workers spend
** spinning while they wait for the next parallel region). */
static inline uint64_t bench_process_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The 1-minute load average from /proc/loadavg, or -1. */
static inline double bench_loadavg(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

/* Order statistics of one variant's replicates, in the samples' unit. */
typedef struct bench_stats {
  double median;
  double min;
  double max;
  int n;
} bench_stats;

static inline int bench_cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* Median (mean of the middle two for an even count), min and max of n
** samples; the samples are left in their original order. */
static inline bench_stats bench_stats_of(const double *samples, int n) {
  bench_stats s = {0, 0, 0, n};
  if (n <= 0) return s;
  double *x = malloc((size_t)n * sizeof *x);
  if (!x) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  memcpy(x, samples, (size_t)n * sizeof *x);
  qsort(x, (size_t)n, sizeof *x, bench_cmp_double);
  s.min = x[0];
  s.max = x[n - 1];
  s.median = (n & 1) ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
  free(x);
  return s;
}

/* splitmix64: a tiny, well-mixed generator; one state word, so a seed
** reproduces the whole stream (and any prefix of it) exactly. */
static inline uint64_t bench_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A double uniform in [0, 1) from the top 53 bits. */
static inline double bench_unit_double(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }

/* The CPU model from /proc/cpuinfo ("model name"), or "unknown". */
static inline void bench_cpu_model(char *out, size_t out_bytes) {
  snprintf(out, out_bytes, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *p = strchr(line, ':');
    if (!p) continue;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    size_t n = strcspn(p, "\n");
    snprintf(out, out_bytes, "%.*s", (int)n, p);
    break;
  }
  fclose(f);
}

static inline long bench_nproc(void) { return sysconf(_SC_NPROCESSORS_ONLN); }

/* The last-level cache of CPU 0 in bytes (sysfs index3, else index2), or 0. */
static inline long long bench_llc_bytes(void) {
  static const char *const paths[] = {"/sys/devices/system/cpu/cpu0/cache/index3/size",
                                      "/sys/devices/system/cpu/cpu0/cache/index2/size"};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(paths[i], "r");
    if (!f) continue;
    long long v = 0;
    char unit = 0;
    int got = fscanf(f, "%lld%c", &v, &unit);
    fclose(f);
    if (got < 1 || v <= 0) continue;
    return unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : v;
  }
  return 0;
}

/* Pushes earlier data out of the CPU caches by writing one byte per cache
** line of a buffer of `bytes` (call it with a few times the last-level
** cache), so a timed run does not find the lines a previous variant
** touched.  The buffer is allocated on first use and kept. */
static inline void bench_evict_caches(size_t bytes) {
  static volatile uint8_t *buf;
  static size_t have;
  if (have < bytes) {
    free((void *)buf);
    buf = malloc(bytes);
    if (!buf) {
      have = 0;
      return;
    }
    have = bytes;
  }
  for (size_t i = 0; i < bytes; i += 64) buf[i]++;
}

/* printf into a path buffer; a path that does not fit is fatal (a
** silently truncated path would read or write the wrong file). */
static inline void bench_path(char *out, size_t out_bytes, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void bench_path(char *out, size_t out_bytes, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, out_bytes, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= out_bytes) {
    fprintf(stderr, "bench: path too long: %s...\n", out);
    exit(1);
  }
}

/* Size of the file at path in bytes, or -1 when it cannot be stat'ed. */
static inline long long bench_file_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* mkdir -p; returns 0 on success (or when the directory exists). */
static inline int bench_mkdir_p(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char c = buf[i];
    buf[i] = 0;
    struct stat st;
    if (stat(buf, &st) != 0 && mkdir(buf, 0777) != 0) return -1;
    buf[i] = c;
  }
  return 0;
}

#endif /* BENCH_UTIL_H */
