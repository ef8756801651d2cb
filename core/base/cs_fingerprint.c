/*
** cs_fingerprint.c - the host, probed: the hardware fingerprint a
** calibration is keyed by, and the last-level cache size the kernels
** classify their working sets by.
**
** Everything is read from /proc and /sys (no libnuma), so the answer is the
** same whether or not colstore was built with NUMA support: the CPU model
** string, the online cores, the sockets, the NUMA nodes, the last-level
** cache and the page size.  It sits in base/ because it knows nothing of
** colstore: kernel configuration (runtime/) and selection (kernels/) ask
** it for the cache size, and the calibration cache file (tuning/) for the
** fingerprint it keys its results by.
*/
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colstore.h"

/* ----------------------------------------------------------- fingerprint */

/* The whole of a small /proc or /sys file, NUL-terminated; false if absent. */
static bool fingerprint_read_file(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t got = fread(buf, 1, n - 1, f);
  buf[got] = 0;
  fclose(f);
  return true;
}

/* "32768K", "2M" or "1048576" as bytes; 0 if it does not parse. */
static uint64_t fingerprint_parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  if (*end == 'K' || *end == 'k')
    v <<= 10;
  else if (*end == 'M' || *end == 'm')
    v <<= 20;
  else if (*end == 'G' || *end == 'g')
    v <<= 30;
  return (uint64_t)v;
}

/* The largest data or unified cache of cpu0 in sysfs, else sysconf's L3,
** else L2. */
static uint64_t fingerprint_llc(void) {
  uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; i++) {
    char path[128], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if (!fingerprint_read_file(path, buf, sizeof buf)) continue;
    if (strncmp(buf, "Instruction", 11) == 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    if (!fingerprint_read_file(path, buf, sizeof buf)) continue;
    int level = atoi(buf);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!fingerprint_read_file(path, buf, sizeof buf)) continue;
    uint64_t bytes = fingerprint_parse_size(buf);
    if (level > best_level || (level == best_level && bytes > best)) best = bytes, best_level = level;
  }
  if (best) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return (uint64_t)l3;
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return (uint64_t)l2;
#endif
  return 0;
}

static int fingerprint_numa_nodes(void) {
  DIR *d = opendir("/sys/devices/system/node");
  if (!d) return 1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') n++;
  closedir(d);
  return n > 0 ? n : 1;
}

/* Model name and distinct physical ids from /proc/cpuinfo. */
static void fingerprint_cpuinfo(char *model, size_t model_bytes, int *sockets) {
  snprintf(model, model_bytes, "unknown");
  *sockets = 1;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  bool have_model = false;
  uint64_t seen[4] = {0}; /* bitset of physical ids 0..255 */
  int n_ids = 0;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    if (!have_model && strncmp(line, "model name", 10) == 0) {
      size_t len = strcspn(v, "\n");
      while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
      if (len >= model_bytes) len = model_bytes - 1;
      memcpy(model, v, len);
      model[len] = 0;
      /* ';' and '=' separate the fingerprint's fields: keep them out. */
      for (char *p = model; *p; p++)
        if (*p == ';' || *p == '=') *p = ',';
      have_model = true;
    } else if (strncmp(line, "physical id", 11) == 0) {
      unsigned id = (unsigned)atoi(v) & 255u;
      if (!(seen[id >> 6] >> (id & 63) & 1)) {
        seen[id >> 6] |= 1ull << (id & 63);
        n_ids++;
      }
    }
  }
  fclose(f);
  if (n_ids > 0) *sockets = n_ids;
}

void cs_fingerprint_get(cs_fingerprint *out) {
  memset(out, 0, sizeof *out);
  fingerprint_cpuinfo(out->cpu_model, sizeof out->cpu_model, &out->sockets);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  out->cores = cores > 0 ? (int)cores : 1;
  out->numa_nodes = fingerprint_numa_nodes();
  out->llc_bytes = fingerprint_llc();
  long page = sysconf(_SC_PAGESIZE);
  out->page_bytes = page > 0 ? (uint64_t)page : 4096;
}

void cs_fingerprint_text(const cs_fingerprint *fp, char out[CS_FINGERPRINT_TEXT_BYTES]) {
  snprintf(out, CS_FINGERPRINT_TEXT_BYTES,
           "cpu=%s;cores=%d;sockets=%d;numa_nodes=%d;llc_bytes=%llu;page_bytes=%llu", fp->cpu_model,
           fp->cores, fp->sockets, fp->numa_nodes, (unsigned long long)fp->llc_bytes,
           (unsigned long long)fp->page_bytes);
}

/* Read once: kernels classify their regime with it on every call.  Two
** threads racing on the first call both store the same value. */
static _Atomic uint64_t llc_cached;

uint64_t cs_fingerprint_llc_bytes(void) {
  uint64_t v = atomic_load_explicit(&llc_cached, memory_order_relaxed);
  if (v) return v;
  v = fingerprint_llc();
  if (!v) v = 32u << 20;
  atomic_store_explicit(&llc_cached, v, memory_order_relaxed);
  return v;
}
