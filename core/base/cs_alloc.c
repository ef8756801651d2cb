/*
** cs_alloc.c - the one allocation point of the core, and its fault injector.
**
** Every malloc, calloc, realloc, strdup and free in core/ goes through the
** cs__mem_* functions here.  In production they are the C library's own plus
** two relaxed atomic operations (the count and cs_mem_live); the point of routing them through one file
** is that a test can make any chosen allocation fail (cs_mem_fail_after) and
** so prove that every failure path is taken cleanly: CS_ENOMEM with a
** message, no partial state, nothing leaked.  That is SQLite's own habit
** (its test_malloc.c and the "malloc" permutations of its test suite), and
** like SQLite we count allocations rather than bytes, so "the k-th
** allocation fails" names one call site deterministically for a
** single-threaded run.
**
** Why a countdown others can join (cs_mem_tick): a statement allocates
** through SQLite as well as through the core, and a bug is as likely where
** one allocator's failure meets the other's state.  A test installs its own
** SQLite allocator (SQLITE_CONFIG_MALLOC) that asks cs_mem_tick before each
** allocation, so one countdown walks across both.  The core cannot call
** SQLite (it knows nothing of it), hence the hook is this way round.
**
** Why atomics and not a lock: the core is called from any thread (one
** connection per thread, the cursor's worker beside SQLite's thread), and
** an allocation inside a chunk of a team run would count from its own
** thread (none allocates today: every kernel allocates before its team run
** and falls back when it cannot).  The counter is one fetch-add; the armed
** target and the sticky flag are read relaxed: a test arms the injector
** between statements, when no other thread allocates, so no ordering beyond
** the counter's own is needed.  With several threads allocating at once
** "the k-th" is whichever thread got there k-th, which is still a failure
** that must be handled.
**
** Work no statement waits on (cache=auto's copy, core/store/cs_cache.c)
** runs on a thread marked with cs__mem_background: an injected failure
** there is counted apart (cs_mem_failed_background), so a test can tell a
** run whose failure hit the background copy, and hold that run to "no
** statement failed".
**
** Frees are not counted as allocations (a free cannot fail) but they do
** decrement cs_mem_live, the number of blocks held, so a test can tell that
** a failed statement released everything: one more relaxed atomic per
** call, against a malloc that costs far more.  Memory from here may still
** be released with free() (a test freeing cs_dataset_expand's paths); it
** only leaves cs_mem_live high.
**
** Big blocks (cs_mem_big_alloc) are the exception to "the C library's
** own": they start on 2 MiB boundaries with huge pages advised, and a freed
** one may be kept for the next query instead of returned (the kept blocks,
** further down, with the numbers that justify them).  A kept block counts
** as freed in cs_mem_live and its reuse still asks cs_mem_tick, so the
** leak checks and the fault injection see what they saw before.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cs_base_internal.h"

static atomic_long mem_count;             /* allocations counted since the last arming */
static atomic_long mem_fail_at;           /* the count that fails; 0 = disarmed */
static atomic_bool mem_sticky;            /* every count after mem_fail_at fails too */
static atomic_long mem_live;              /* allocations made here and not yet freed */
static atomic_long mem_failed_bg;         /* injected failures on a background thread since the arming */
static _Thread_local bool mem_background; /* this thread's work is waited on by no statement */

void cs_mem_fail_after(long k, bool sticky) {
  atomic_store(&mem_fail_at, 0);
  atomic_store(&mem_count, 0);
  atomic_store(&mem_sticky, sticky);
  atomic_store(&mem_failed_bg, 0);
  atomic_store(&mem_fail_at, k > 0 ? k : 0);
}

long cs_mem_failed_background(void) { return atomic_load(&mem_failed_bg); }

void cs__mem_background(bool on) { mem_background = on; }

long cs_mem_count(void) { return atomic_load(&mem_count); }

long cs_mem_live(void) { return atomic_load(&mem_live); }

static void *live_add(void *p) {
  if (p) atomic_fetch_add_explicit(&mem_live, 1, memory_order_relaxed);
  return p;
}

bool cs_mem_tick(void) {
  long n = atomic_fetch_add_explicit(&mem_count, 1, memory_order_relaxed) + 1;
  long at = atomic_load_explicit(&mem_fail_at, memory_order_relaxed);
  if (at == 0 || n < at) return false;
  bool fail = n == at || atomic_load_explicit(&mem_sticky, memory_order_relaxed);
  if (fail && mem_background) atomic_fetch_add_explicit(&mem_failed_bg, 1, memory_order_relaxed);
  return fail;
}

void *cs__mem_malloc(size_t n) { return cs_mem_tick() ? NULL : live_add(malloc(n)); }

void *cs__mem_calloc(size_t count, size_t size) {
  return cs_mem_tick() ? NULL : live_add(calloc(count, size));
}

void *cs__mem_calloc_lines(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  size_t n = (count * size + CS_CACHE_LINE - 1) / CS_CACHE_LINE * CS_CACHE_LINE;
  if (cs_mem_tick()) return NULL;
  void *p = aligned_alloc(CS_CACHE_LINE, n ? n : CS_CACHE_LINE);
  if (p) memset(p, 0, n);
  return live_add(p);
}

/* Never called with n == 0 (that would be a free in glibc). */
void *cs__mem_realloc(void *p, size_t n) {
  if (cs_mem_tick()) return NULL;
  void *q = realloc(p, n);
  return p ? q : live_add(q);
}

char *cs__mem_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = cs__mem_malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

void cs__mem_free(void *p) {
  if (p) atomic_fetch_sub_explicit(&mem_live, 1, memory_order_relaxed);
  free(p);
}

/* ------------------------------------------------------------ big blocks */

/* Blocks from this size up start on a 2 MiB boundary and ask for
** transparent huge pages. */
#define CS__BIG_BYTES ((size_t)2 << 20)
#define CS__BIG_PAGE ((uintptr_t)2 << 20)
/* Before every block: the address malloc gave (p - 8) and, for a block on
** huge pages, its span (p - 16; 0 for any other block). */
#define CS__BIG_HDR 16

/* Kept blocks (see cs_mem_keep_bytes in colstore.h).  Why: a query that
** orders 10M rows takes 100-300 MB of scratch and buffers; from glibc each
** is fresh from mmap and unmapped at free, so every query paid the first
** touch again: the kernel zeroing the pages (18% of a GROUP BY's process
** time under load, perf) and, on this paravirtualised host, the
** hypervisor backing them (160 MB: 318 ms for memory the guest had not
** used lately, 11-22 ms reused; docs/performance.md).  A freed block on
** huge pages is kept instead, its pages advised MADV_FREE: the kernel may
** take them back under memory pressure (they read as zero then), and
** until it does, the next query's writes land on the same pages without a
** fault.  That is the retention jemalloc and mimalloc practise; 16
** slots and a byte limit bound it (1 GiB by default: a mix of GROUP BY,
** ORDER BY and top-k over 10M rows kept up to 606 MB in 11 blocks, and
** with 512 MiB the GROUP BY's buffers were let go between its runs:
** kernel 256-329 ms against 117-151 ms, docs/performance.md), and
** setting the limit to 0 returns everything at once.  Blocks not on huge pages (small ones, and those of
** the huge-page experiments) are never kept. */
#define CS__KEEP_SLOTS 16
#define CS__KEEP_DEFAULT ((uint64_t)1 << 30)

typedef struct kept_block {
  uint8_t *p;     /* the block as cs_mem_big_alloc returned it */
  size_t span;    /* its usable bytes: a multiple of 2 MiB */
  uint64_t stamp; /* when it was kept: the oldest is let go first */
} kept_block;

static pthread_mutex_t keep_mutex = PTHREAD_MUTEX_INITIALIZER;
static kept_block keep_slot[CS__KEEP_SLOTS];
static unsigned keep_n;
static uint64_t keep_total, keep_stamp;
/* Written under keep_mutex; read without it by keep_put's first check. */
static _Atomic uint64_t keep_limit = CS__KEEP_DEFAULT;
static atomic_long keep_reused; /* blocks handed out again */

static void *big_raw(void *p) {
  void *raw;
  memcpy(&raw, (uint8_t *)p - sizeof raw, sizeof raw);
  return raw;
}

static size_t big_span(void *p) {
  size_t span;
  memcpy(&span, (uint8_t *)p - 2 * sizeof span, sizeof span);
  return span;
}

/* Takes slot i out of the keep (under keep_mutex). */
static uint8_t *keep_take(unsigned i) {
  uint8_t *p = keep_slot[i].p;
  keep_total -= keep_slot[i].span;
  keep_slot[i] = keep_slot[--keep_n];
  return p;
}

/* A kept block of at least span bytes and not over twice that (a 240 MB
** block is not lent for 2 MB), the smallest such; NULL if none. */
static uint8_t *keep_find(size_t span) {
  uint8_t *p = NULL;
  pthread_mutex_lock(&keep_mutex);
  unsigned best = keep_n;
  for (unsigned i = 0; i < keep_n; i++)
    if (keep_slot[i].span >= span && keep_slot[i].span / 2 <= span &&
        (best == keep_n || keep_slot[i].span < keep_slot[best].span))
      best = i;
  if (best < keep_n) p = keep_take(best);
  pthread_mutex_unlock(&keep_mutex);
  return p;
}

/* Lets go of the oldest kept blocks until `room` more bytes (and, with
** slot, one more block) fit the limit; under keep_mutex.
** The released raw blocks are written to out (at most CS__KEEP_SLOTS),
** to be freed once the mutex is released; returns their count. */
static unsigned keep_trim(uint64_t room, bool slot, void **out) {
  unsigned n_out = 0;
  while (keep_n > 0 && (keep_total + room > keep_limit || (slot && keep_n == CS__KEEP_SLOTS))) {
    unsigned oldest = 0;
    for (unsigned i = 1; i < keep_n; i++)
      if (keep_slot[i].stamp < keep_slot[oldest].stamp) oldest = i;
    out[n_out++] = big_raw(keep_take(oldest));
  }
  return n_out;
}

static void free_all(void **raw, unsigned n) {
  for (unsigned i = 0; i < n; i++) free(raw[i]);
}

/* Keeps block p of span bytes, or returns false (then the caller frees
** it).  The advice, a page-table walk over the whole span, is given before
** the mutex is taken, so other threads' blocks never wait behind it. */
static bool keep_put(uint8_t *p, size_t span) {
#ifdef MADV_FREE
  if (span > atomic_load_explicit(&keep_limit, memory_order_relaxed) || madvise(p, span, MADV_FREE) != 0)
    return false;
  void *released[CS__KEEP_SLOTS];
  unsigned n_released = 0;
  bool kept = false;
  pthread_mutex_lock(&keep_mutex);
  if (span <= keep_limit) { /* the limit may have dropped meanwhile */
    n_released = keep_trim(span, true, released);
    keep_slot[keep_n++] = (kept_block){p, span, ++keep_stamp};
    keep_total += span;
    kept = true;
  }
  pthread_mutex_unlock(&keep_mutex);
  free_all(released, n_released);
  return kept;
#else
  (void)p;
  (void)span;
  return false;
#endif
}

void cs_mem_keep_bytes(uint64_t bytes) {
  void *released[CS__KEEP_SLOTS];
  pthread_mutex_lock(&keep_mutex);
  keep_limit = bytes;
  unsigned n = keep_trim(0, false, released);
  pthread_mutex_unlock(&keep_mutex);
  free_all(released, n);
}

void cs_mem_keep_state(cs_mem_keep *out) {
  pthread_mutex_lock(&keep_mutex);
  out->limit = keep_limit;
  out->bytes = keep_total;
  out->blocks = keep_n;
  pthread_mutex_unlock(&keep_mutex);
  out->reused = (uint64_t)atomic_load(&keep_reused);
}

/* Why huge pages: the first touch of fresh memory is a page fault per 4 KiB
** page, and on a paravirtualised host (the development VM) a fault costs
** ~16 us: 80 MB of positions for a 10M-row ORDER BY cost 335 ms to touch in
** 4 KiB pages, 16 ms in 2 MiB pages (cs_order.c measured it).  glibc gives
** large blocks fresh from mmap and unmaps them at free, so every query
** would pay it again (hence also the kept blocks above).  Where the
** kernel's THP setting is "madvise" (Debian's default), MADV_HUGEPAGE on an
** aligned span is what makes the difference; where it is refused, nothing
** changes. */
void *cs__mem_big_alloc(uint64_t bytes, bool huge) {
  if (bytes > SIZE_MAX - 2 * CS__BIG_PAGE) return NULL;
  bool big = false;
#ifdef MADV_HUGEPAGE
  big = huge && bytes >= CS__BIG_BYTES;
#endif
  (void)huge;
  size_t span = big ? ((size_t)bytes + CS__BIG_PAGE - 1) & ~(size_t)(CS__BIG_PAGE - 1) : (size_t)bytes;
  /* One countdown tick per request, kept block or fresh: an injected
  ** failure leaves the keep as it was. */
  if (cs_mem_tick()) return NULL;
  uint8_t *kept = big ? keep_find(span) : NULL;
  if (kept) {
    atomic_fetch_add_explicit(&keep_reused, 1, memory_order_relaxed);
#if defined(__SANITIZE_ADDRESS__)
    /* Contents are undefined: under the sanitizers make them garbage, so
    ** a caller that relied on fresh zeros fails the tests. */
    memset(kept, 0xA5, (size_t)bytes);
#endif
    return live_add(kept);
  }
  uint8_t *raw = live_add(malloc(span + (big ? CS__BIG_PAGE : CS__BIG_HDR)));
  if (!raw) return NULL;
  uint8_t *p = raw + CS__BIG_HDR;
#ifdef MADV_HUGEPAGE
  if (big) {
    p = (uint8_t *)(((uintptr_t)raw + CS__BIG_HDR + CS__BIG_PAGE - 1) & ~(CS__BIG_PAGE - 1));
    (void)madvise(p, span, MADV_HUGEPAGE);
  }
#endif
  size_t kept_span = big ? span : 0;
  memcpy(p - sizeof raw, &raw, sizeof raw);
  memcpy(p - 2 * sizeof kept_span, &kept_span, sizeof kept_span);
  return p;
}

void *cs_mem_big_alloc(uint64_t bytes) { return cs__mem_big_alloc(bytes, true); }

void cs_mem_big_free(void *p) {
  if (!p) return;
  size_t span = big_span(p);
  if (span && keep_put(p, span)) {
    atomic_fetch_sub_explicit(&mem_live, 1, memory_order_relaxed);
    return;
  }
  cs__mem_free(big_raw(p));
}
