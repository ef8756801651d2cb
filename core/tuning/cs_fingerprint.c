/*
** cs_fingerprint.c - the hardware fingerprint a calibration is keyed by,
** and the cache file that keeps a calibration between processes.
**
** A calibration is true of one kind of host.  On clusters $HOME is often
** shared between login and compute nodes, so a cache written on one would
** silently tune the other (a loaded login node and a quiet compute node
** want different prefetch distances).  The cache therefore records
** the fingerprint of the host that measured it: the CPU model string, the
** online cores, the sockets, the NUMA nodes, the last-level cache and the
** page size, all read from /proc and /sys (no libnuma), and a reader
** applies the cache only when the fingerprint equals its own.
**
** The cache file ($dir/calibration.txt) is key=value text, one per line,
** so a person can read and diff it:
**
**     # colstore calibration cache (docs/tuning.md)
**     format=1
**     fingerprint=cpu=AMD EPYC;cores=2;sockets=1;numa_nodes=1;llc_bytes=33554432;page_bytes=4096
**     threads=2                      (only the measured keys appear)
**     prefetch.resident_unsorted=0
**     prefetch.resident_sorted=0
**     prefetch.dram_unsorted=0
**     prefetch.dram_sorted=128
**     mask_gate=0.000
**     end
**
** The one decision a newcomer might question: a file without the closing
** `end` line is corrupt, not a short calibration.  Writes are atomic
** (temporary file, fsync, rename), so a torn file can only come from
** outside colstore, and the `end` line makes truncation detectable without
** a checksum.  Unknown keys are corrupt too: a newer format gets a new
** format number.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  if (*end == 'K' || *end == 'k') v <<= 10;
  else if (*end == 'M' || *end == 'm') v <<= 20;
  else if (*end == 'G' || *end == 'g') v <<= 30;
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
  snprintf(out, CS_FINGERPRINT_TEXT_BYTES, "cpu=%s;cores=%d;sockets=%d;numa_nodes=%d;llc_bytes=%llu;page_bytes=%llu",
           fp->cpu_model, fp->cores, fp->sockets, fp->numa_nodes, (unsigned long long)fp->llc_bytes,
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

/* ------------------------------------------------------------ cache file */

cs_rc cs_calibration_cache_dir(char *out, size_t n, cs_err *err) {
  const char *d = getenv("COLSTORE_CACHE_DIR");
  int len;
  if (d && *d) len = snprintf(out, n, "%s", d);
  else if ((d = getenv("XDG_CACHE_HOME")) && *d) len = snprintf(out, n, "%s/colstore", d);
  else if ((d = getenv("HOME")) && *d) len = snprintf(out, n, "%s/.cache/colstore", d);
  else return cs_err_set(err, CS_EINVAL, "no cache directory: set COLSTORE_CACHE_DIR, XDG_CACHE_HOME or HOME");
  if (len < 0 || (size_t)len >= n) return cs_err_set(err, CS_EINVAL, "cache directory path is too long");
  return CS_OK;
}

/* mkdir -p of the directory part of path. */
static cs_rc cache_mkdirs(const char *path, cs_err *err) {
  char buf[4096];
  size_t len = strlen(path);
  if (len >= sizeof buf) return cs_err_set(err, CS_EINVAL, "%s: path is too long", path);
  memcpy(buf, path, len + 1);
  char *slash = strrchr(buf, '/');
  if (!slash || slash == buf) return CS_OK;
  *slash = 0;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return cs_err_set(err, CS_EIO, "cannot create directory %s: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST)
    return cs_err_set(err, CS_EIO, "cannot create directory %s: %s", buf, strerror(errno));
  return CS_OK;
}

static void cache_fsync_dir(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  char *slash = strrchr(buf, '/');
  if (!slash) snprintf(buf, sizeof buf, ".");
  else if (slash == buf) buf[1] = 0;
  else *slash = 0;
  int fd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

cs_rc cs_calibration_save(const char *path, const char *fingerprint, const cs_calibration *cal, cs_err *err) {
  cs_rc rc = cache_mkdirs(path, err);
  if (rc != CS_OK) return rc;
  char tmp[4096 + 16];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", path) >= sizeof tmp)
    return cs_err_set(err, CS_EINVAL, "%s: path is too long", path);
  int fd = mkstemp(tmp);
  if (fd < 0) return cs_err_set(err, CS_EIO, "cannot create %s: %s", tmp, strerror(errno));
  FILE *f = fdopen(fd, "w");
  if (!f) {
    rc = cs_err_set(err, CS_EIO, "cannot write %s: %s", tmp, strerror(errno));
    close(fd);
    goto fail;
  }
  fprintf(f, "# colstore calibration cache (docs/tuning.md)\nformat=1\nfingerprint=%s\n", fingerprint);
  if (cal->threads >= 1) fprintf(f, "threads=%d\n", cal->threads);
  for (int r = 0; r < CS_REGIME_COUNT; r++)
    if (cal->prefetch[r] >= 0) fprintf(f, "prefetch.%s=%d\n", cs_regime_name((cs_regime)r), cal->prefetch[r]);
  if (cal->mask_gate >= 0 && cal->mask_gate <= 1) fprintf(f, "mask_gate=%.4f\n", cal->mask_gate);
  fprintf(f, "end\n");
  bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  int saved = errno;
  if (fclose(f) != 0) ok = false, saved = errno;
  if (!ok) {
    rc = cs_err_set(err, CS_EIO, "cannot write %s: %s", tmp, strerror(saved));
    goto fail;
  }
  if (rename(tmp, path) != 0) {
    rc = cs_err_set(err, CS_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    goto fail;
  }
  cache_fsync_dir(path);
  return CS_OK;
fail:
  unlink(tmp);
  return rc;
}

/* A non-negative integer that is the whole of s. */
static bool cache_parse_int(const char *s, int max, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < 0 || v > max) return false;
  *out = (int)v;
  return true;
}

cs_rc cs_calibration_load(const char *path, char out_fingerprint[CS_FINGERPRINT_TEXT_BYTES], cs_calibration *out,
                          cs_err *err) {
  cs_calibration_init(out);
  out_fingerprint[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT) return cs_err_set(err, CS_ENOENT, "%s: no calibration cache", path);
    return cs_err_set(err, CS_EIO, "cannot read %s: %s", path, strerror(errno));
  }
  char line[1024];
  int lineno = 0;
  bool format = false, have_fp = false, end = false;
  cs_rc rc = CS_OK;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n') {
      rc = cs_err_set(err, CS_ECORRUPT, "%s: line %d is cut short", path, lineno);
      goto done;
    }
    line[len - 1] = 0;
    if (line[0] == '#' || line[0] == 0) continue;
    if (end) {
      rc = cs_err_set(err, CS_ECORRUPT, "%s: line %d follows the end line", path, lineno);
      goto done;
    }
    if (strcmp(line, "end") == 0) {
      end = true;
      continue;
    }
    char *eq = strchr(line, '=');
    if (!eq) {
      rc = cs_err_set(err, CS_ECORRUPT, "%s: line %d is not key=value", path, lineno);
      goto done;
    }
    *eq = 0;
    const char *key = line, *val = eq + 1;
    bool ok = false;
    int iv;
    if (strcmp(key, "format") == 0) {
      ok = format = strcmp(val, "1") == 0;
    } else if (strcmp(key, "fingerprint") == 0) {
      ok = have_fp = strlen(val) < CS_FINGERPRINT_TEXT_BYTES && *val;
      if (ok) snprintf(out_fingerprint, CS_FINGERPRINT_TEXT_BYTES, "%s", val);
    } else if (strcmp(key, "threads") == 0) {
      ok = cache_parse_int(val, 4096, &iv) && iv >= 1;
      if (ok) out->threads = iv;
    } else if (strncmp(key, "prefetch.", 9) == 0) {
      for (int r = 0; r < CS_REGIME_COUNT; r++)
        if (strcmp(key + 9, cs_regime_name((cs_regime)r)) == 0 && cache_parse_int(val, 4096, &iv)) {
          out->prefetch[r] = iv;
          ok = true;
        }
    } else if (strcmp(key, "mask_gate") == 0) {
      char *e;
      double d = strtod(val, &e);
      ok = e != val && !*e && d >= 0 && d <= 1;
      if (ok) out->mask_gate = d;
    }
    if (!ok) {
      rc = cs_err_set(err, CS_ECORRUPT, "%s: line %d: bad %s value '%s'", path, lineno, key, val);
      goto done;
    }
  }
  if (!format || !have_fp || !end)
    rc = cs_err_set(err, CS_ECORRUPT, "%s: incomplete calibration cache (missing its %s line)", path,
                    !format ? "format=1" : !have_fp ? "fingerprint" : "end");
done:
  fclose(f);
  if (rc != CS_OK) cs_calibration_init(out);
  return rc;
}

cs_rc cs_calibration_clear(const char *path, bool *out_removed, cs_err *err) {
  if (out_removed) *out_removed = false;
  if (unlink(path) == 0) {
    if (out_removed) *out_removed = true;
    cache_fsync_dir(path);
    return CS_OK;
  }
  if (errno == ENOENT) return CS_OK;
  return cs_err_set(err, CS_EIO, "cannot remove %s: %s", path, strerror(errno));
}
