/*
** cs_base_internal.h - what every layer of core/ may use: the allocator,
** whole reads, bitmap counting, byte-string order, diagnostics.
**
** base/ is the floor: nothing here knows what a store, a record or a kernel
** is, so every folder above may include it and it includes nothing of
** theirs.  The pieces are few and small on purpose; a helper that needs the
** file format belongs in format/, one that needs threads in runtime/.
*/
#ifndef CS_BASE_INTERNAL_H
#define CS_BASE_INTERNAL_H

#include <string.h>

#include "colstore.h"

/* Checksums (cs_util.c): XXH3-64, the only hash in the file format. */
uint64_t cs__hash(const void *p, size_t n);
uint64_t cs__hash_seeded(const void *p, size_t n, uint64_t seed);
struct iovec;
uint64_t cs__hash_iov(const struct iovec *iov, int n);
/* XXH3-64 streamed piece by piece, for a reader that hashes bytes as it
** passes them on (colstore_export): the same value as cs__hash of the
** pieces joined.  The state is xxhash's, kept in raw bytes so that no
** xxhash type leaves cs_util.c, and aligned inside them, so a state may sit
** in any allocation. */
typedef struct cs__hash_state {
  unsigned char raw[704];
} cs__hash_state;
void cs__hash_reset(cs__hash_state *h);
void cs__hash_update(cs__hash_state *h, const void *p, size_t n);
uint64_t cs__hash_digest(cs__hash_state *h);
/* Set by a test or a bench: the SSE2 build of XXH3 even where AVX2 would
** run (cs_hash_avx2.c), to compare the two. */
extern bool cs__hash_no_avx2;

/* Forces inlining: the kernels' inner-loop helpers must not become calls. */
#define CS__INLINE static inline __attribute__((always_inline))

__extension__ typedef unsigned __int128 cs__u128;

/* The one allocation point of core (cs_alloc.c): the C library's
** functions behind the fault injector of cs_mem_fail_after.  They behave as
** their libc namesakes (cs__mem_realloc leaves p intact when it fails, and
** is never asked for 0 bytes); memory from them may be released with
** free(), which only leaves cs_mem_live high. */
void *cs__mem_malloc(size_t n);
/* cs_mem_big_alloc with the huge-page advice optional (huge = false: plain
** 4 KiB pages, for measuring what the advice buys); cs_mem_big_free. */
void *cs__mem_big_alloc(uint64_t bytes, bool huge);
void *cs__mem_calloc(size_t count, size_t size);
/* cs__mem_calloc on whole cache lines: the block starts on a line and its
** size is rounded up to whole lines, so a thread writing it shares no line
** with another thread's block (false sharing: two threads' counters on one
** line made a parallel CSV import cost four times the CPU of a serial one,
** docs/performance.md).  Freed with cs__mem_free. */
#define CS_CACHE_LINE 64
void *cs__mem_calloc_lines(size_t count, size_t size);
void *cs__mem_realloc(void *p, size_t n);
char *cs__mem_strdup(const char *s);
/* Marks the calling thread as doing work no statement waits on (on) or
** not (off): an injected failure there counts in cs_mem_failed_background. */
void cs__mem_background(bool on);
void cs__mem_free(void *p);

/* Records a process-wide diagnostic note once. */
void cs__diag_note(const char *note);

/* The clear bits among bits [first, first + n) of an LSB-first bitmap (a
** validity bitmap's NULLs), a 64-bit word at a time between the ends. */
uint64_t cs__bits_zeros(const uint8_t *bits, uint64_t first, uint64_t n);

/* Reads n bytes at off, whole (EINTR retried); CS_EIO, or CS_ECORRUPT when
** the file ends first. */
cs_rc cs__pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, cs_err *err);
/* fsyncs the directory holding path, after a file was renamed or linked
** into it (the writer's commit, the exporter's); it cannot fail for want
** of memory (the name is copied to the stack). */
cs_rc cs__dir_sync(const char *path, cs_err *err);

/* [off, off + len) lies inside [lo, hi), without overflow. */
static inline bool cs__span_in(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi) {
  return off >= lo && off <= hi && len <= hi - off;
}

/* BINARY collation of two byte strings: memcmp over the shorter length,
** then the shorter first.  The one order of TEXT/BLOB values for filters
** (kernels/cs_pred.c), ordering (analytics/cs_order.c) and MIN/MAX
** (analytics/cs_agg.c), so they can never disagree. */
CS__INLINE int cs__bytes_cmp(const uint8_t *a, uint64_t na, const uint8_t *b, uint64_t nb) {
  uint64_t m = na < nb ? na : nb;
  int c = m ? memcmp(a, b, m) : 0;
  if (c) return c;
  return (na > nb) - (na < nb);
}

#endif /* CS_BASE_INTERNAL_H */
