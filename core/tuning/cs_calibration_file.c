/*
** cs_calibration_file.c - the cache file that keeps a calibration between
** processes, keyed by the hardware fingerprint of the host that measured it
** (base/cs_fingerprint.c).
**
** A calibration is true of one kind of host.  On clusters $HOME is often
** shared between login and compute nodes, so a cache written on one would
** silently tune the other (a loaded login node and a quiet compute node
** want different prefetch distances).  The cache therefore records the
** fingerprint of the host that measured it, and a reader applies the cache
** only when the fingerprint equals its own.
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
**
** It sits in tuning/, above everything it reads back into: a loaded cache
** is applied through runtime/cs_kernel_config.c (cs_calibration_init,
** cs_regime_name), never the other way round.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colstore.h"

/* ------------------------------------------------------------ cache file */

cs_rc cs_calibration_cache_dir(char *out, size_t n, cs_err *err) {
  const char *d = getenv("COLSTORE_CACHE_DIR");
  int len;
  if (d && *d)
    len = snprintf(out, n, "%s", d);
  else if ((d = getenv("XDG_CACHE_HOME")) && *d)
    len = snprintf(out, n, "%s/colstore", d);
  else if ((d = getenv("HOME")) && *d)
    len = snprintf(out, n, "%s/.cache/colstore", d);
  else
    return cs_err_set(err, CS_EINVAL, "no cache directory: set COLSTORE_CACHE_DIR, XDG_CACHE_HOME or HOME");
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
  if (!slash)
    snprintf(buf, sizeof buf, ".");
  else if (slash == buf)
    buf[1] = 0;
  else
    *slash = 0;
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

cs_rc cs_calibration_load(const char *path, char out_fingerprint[CS_FINGERPRINT_TEXT_BYTES],
                          cs_calibration *out, cs_err *err) {
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
                    !format    ? "format=1"
                    : !have_fp ? "fingerprint"
                               : "end");
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
