/*
** cs_util.c - errors, type names, checksums, bit counts, diagnostic notes
** and whole reads.
**
** Small pieces every other core file needs, none of which knows the file
** format or a store: they sit at the bottom of core/ (base/) so that any
** layer may use them without a call running upward.  xxhash.h is included with
** XXH_INLINE_ALL here (and in cs_hash_avx2.c, its AVX2 build for long
** inputs, chosen at run time), so no XXH symbol leaks out of the loadable
** module and the hash is inlined into its callers.
*/
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cs_base_internal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

const char *cs_rc_name(cs_rc rc) {
  static const char *const names[] = {
#define CS_RC_NAME(name, text) "CS_" #name,
      CS_RC_MAP(CS_RC_NAME)
#undef CS_RC_NAME
  };
  return (unsigned)rc < CS_RC_COUNT ? names[rc] : "CS_UNKNOWN";
}

cs_rc cs_err_set(cs_err *err, cs_rc code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

uint64_t cs__bits_zeros(const uint8_t *bits, uint64_t first, uint64_t n) {
  uint64_t ones = 0, i = 0;
  for (; i < n && ((first + i) & 7); i++) ones += (bits[(first + i) >> 3] >> ((first + i) & 7)) & 1u;
  for (; i + 64 <= n; i += 64) {
    uint64_t w;
    memcpy(&w, bits + ((first + i) >> 3), 8);
    ones += (uint64_t)__builtin_popcountll(w);
  }
  for (; i < n; i++) ones += (bits[(first + i) >> 3] >> ((first + i) & 7)) & 1u;
  return n - ones;
}

#ifdef CS_HASH_AVX2
uint64_t cs__hash_avx2(const void *p, size_t n);
void cs__hash_update_avx2(void *state, const void *p, size_t n);

/* Whether the CPU and the OS let AVX2 run (libgcc checks both). */
static bool avx2_usable(void) {
  static _Atomic int known; /* 0: not asked yet, 1: yes, 2: no */
  int v = atomic_load_explicit(&known, memory_order_relaxed);
  if (!v) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx2") ? 1 : 2;
    atomic_store_explicit(&known, v, memory_order_relaxed);
  }
  return v == 1 && !cs__hash_no_avx2;
}
#define HASH_LONG(n) ((n) > 1024 && avx2_usable())
#else
#define HASH_LONG(n) false
#endif

bool cs__hash_no_avx2;

uint64_t cs__hash(const void *p, size_t n) {
#ifdef CS_HASH_AVX2
  if (HASH_LONG(n)) return cs__hash_avx2(p, n);
#endif
  return XXH3_64bits(p, n);
}
uint64_t cs__hash_seeded(const void *p, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(p, n, seed); }

/* ----------------------------------------------------------------- types */

static const struct {
  const char *name;
  cs_type type;
} type_names[] = {
    {"INT8", CS_TYPE_INT8},
    {"INT16", CS_TYPE_INT16},
    {"INT32", CS_TYPE_INT32},
    {"INT64", CS_TYPE_INT64},
    {"UINT8", CS_TYPE_UINT8},
    {"UINT16", CS_TYPE_UINT16},
    {"UINT32", CS_TYPE_UINT32},
    {"FLOAT32", CS_TYPE_FLOAT32},
    {"FLOAT64", CS_TYPE_FLOAT64},
    {"BOOL", CS_TYPE_BOOL},
    {"TEXT", CS_TYPE_TEXT},
    {"BLOB", CS_TYPE_BLOB},
    /* aliases, as docs/sql.md lists them */
    {"INTEGER", CS_TYPE_INT64},
    {"INT", CS_TYPE_INT64},
    {"BIGINT", CS_TYPE_INT64},
    {"REAL", CS_TYPE_FLOAT64},
    {"DOUBLE", CS_TYPE_FLOAT64},
    {"FLOAT", CS_TYPE_FLOAT64},
    {"BOOLEAN", CS_TYPE_BOOL},
    {"STRING", CS_TYPE_TEXT},
    {"VARCHAR", CS_TYPE_TEXT},
    {"CHAR", CS_TYPE_TEXT},
};

const char *cs_type_name(cs_type type) {
  if (type < 1 || type > CS_TYPE_MAX) return NULL;
  return type_names[type - 1].name; /* the first twelve are in enum order */
}

size_t cs_type_width(cs_type type) {
  switch (type) {
    case CS_TYPE_INT8:
    case CS_TYPE_UINT8:
    case CS_TYPE_BOOL: return 1;
    case CS_TYPE_INT16:
    case CS_TYPE_UINT16: return 2;
    case CS_TYPE_INT32:
    case CS_TYPE_UINT32:
    case CS_TYPE_FLOAT32: return 4;
    case CS_TYPE_INT64:
    case CS_TYPE_FLOAT64: return 8;
    default: return 0;
  }
}

/* VARCHAR(30) and CHAR(10) take a parenthesised length, which is ignored;
** "DOUBLE PRECISION" is accepted as DOUBLE. */
cs_type cs_type_parse(const char *s, size_t n) {
  while (n > 0 && isspace((unsigned char)*s)) s++, n--;
  while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
  size_t word = 0;
  while (word < n && (isalnum((unsigned char)s[word]) || s[word] == '_')) word++;
  const char *rest = s + word;
  size_t rest_n = n - word;
  while (rest_n > 0 && isspace((unsigned char)*rest)) rest++, rest_n--;
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
    const char *name = type_names[i].name;
    if (strlen(name) != word || strncasecmp(name, s, word) != 0) continue;
    cs_type t = type_names[i].type;
    if (rest_n == 0) return t;
    if ((t == CS_TYPE_TEXT && (word == 7 || word == 4)) && rest[0] == '(' && rest[rest_n - 1] == ')') {
      for (size_t k = 1; k + 1 < rest_n; k++)
        if (!isdigit((unsigned char)rest[k]) && !isspace((unsigned char)rest[k])) return 0;
      return t;
    }
    if (i < 12 || strcasecmp(name, "DOUBLE") != 0) return 0;
    return (rest_n == 9 && strncasecmp(rest, "PRECISION", 9) == 0) ? t : 0;
  }
  return 0;
}

/* ----------------------------------------------------------- diagnostics */

static pthread_mutex_t diag_lock = PTHREAD_MUTEX_INITIALIZER;
static char diag_text[1024];

void cs__diag_note(const char *note) {
  pthread_mutex_lock(&diag_lock);
  if (strstr(diag_text, note) == NULL) {
    size_t used = strlen(diag_text);
    snprintf(diag_text + used, sizeof diag_text - used, "%s%s", used ? "; " : "", note);
  }
  pthread_mutex_unlock(&diag_lock);
}

const char *cs_diag_notes(void) { return diag_text; }

/* Streams a chunk's buffers and padding through one XXH3 state, so the
** writer can checksum a chunk it never holds contiguously. */
uint64_t cs__hash_iov(const struct iovec *iov, int n) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (int i = 0; i < n; i++) XXH3_64bits_update(&state, iov[i].iov_base, iov[i].iov_len);
  return XXH3_64bits_digest(&state);
}

static XXH3_state_t *state_of(cs__hash_state *h) {
  _Static_assert(sizeof(XXH3_state_t) + 63 <= sizeof h->raw, "cs__hash_state too small for XXH3_state_t");
  return (XXH3_state_t *)(void *)(((uintptr_t)h->raw + 63) & ~(uintptr_t)63);
}
void cs__hash_reset(cs__hash_state *h) { XXH3_64bits_reset(state_of(h)); }
void cs__hash_update(cs__hash_state *h, const void *p, size_t n) {
#ifdef CS_HASH_AVX2
  if (HASH_LONG(n)) {
    cs__hash_update_avx2(state_of(h), p, n);
    return;
  }
#endif
  XXH3_64bits_update(state_of(h), p, n);
}
uint64_t cs__hash_digest(cs__hash_state *h) { return XXH3_64bits_digest(state_of(h)); }

/* ----------------------------------------------------------- whole reads */

cs_rc cs__pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, cs_err *err) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t got = pread(fd, p, n, (off_t)off);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return cs_err_set(err, CS_EIO, "colstore: %s: read failed at offset %llu: %s", path,
                        (unsigned long long)off, strerror(errno));
    if (got == 0)
      return cs_err_set(err, CS_ECORRUPT,
                        "colstore: %s: file ends at offset %llu, inside a structure that should be there",
                        path, (unsigned long long)off);
    p += got, n -= (size_t)got, off += (uint64_t)got;
  }
  return CS_OK;
}

/* Runs after a rename, when the file already exists, so it must not be
** able to fail for want of memory: the directory name is copied to the
** stack (the path was just created, so it is shorter than PATH_MAX). */
cs_rc cs__dir_sync(const char *path, cs_err *err) {
  char dir[PATH_MAX];
  if ((size_t)snprintf(dir, sizeof dir, "%s", path) >= sizeof dir)
    return cs_err_set(err, CS_EIO, "colstore: cannot sync the directory of %s: path too long", path);
  char *slash = strrchr(dir, '/');
  const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
  int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cs_rc rc = CS_OK;
  if (fd < 0 || fsync(fd) != 0)
    rc = cs_err_set(err, CS_EIO, "colstore: cannot sync directory %s: %s", d, strerror(errno));
  if (fd >= 0) close(fd);
  return rc;
}
