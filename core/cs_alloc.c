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
** Frees are not counted as allocations (a free cannot fail) but they do
** decrement cs_mem_live, the number of blocks held, so a test can tell that
** a failed statement released everything: one more relaxed atomic per
** call, against a malloc that costs far more.  Memory from here may still
** be released with free() (a test freeing cs_dataset_expand's paths); it
** only leaves cs_mem_live high.
*/
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cs_internal.h"

static atomic_long mem_count;   /* allocations counted since the last arming */
static atomic_long mem_fail_at; /* the count that fails; 0 = disarmed */
static atomic_bool mem_sticky;  /* every count after mem_fail_at fails too */
static atomic_long mem_live;    /* allocations made here and not yet freed */

void cs_mem_fail_after(long k, bool sticky) {
  atomic_store(&mem_fail_at, 0);
  atomic_store(&mem_count, 0);
  atomic_store(&mem_sticky, sticky);
  atomic_store(&mem_fail_at, k > 0 ? k : 0);
}

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
  return n == at || atomic_load_explicit(&mem_sticky, memory_order_relaxed);
}

void *cs__mem_malloc(size_t n) { return cs_mem_tick() ? NULL : live_add(malloc(n)); }

void *cs__mem_calloc(size_t count, size_t size) { return cs_mem_tick() ? NULL : live_add(calloc(count, size)); }

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
#define CS__BIG_HDR 16 /* before every block: the address malloc gave */

/* Why: the first touch of fresh memory is a page fault per 4 KiB page, and
** on a paravirtualised host (the development VM) a fault costs ~16 us:
** 80 MB of positions for a 10M-row ORDER BY cost 335 ms to touch in 4 KiB
** pages, 16 ms in 2 MiB pages (cs_order.c measured it).  glibc gives large
** blocks fresh from mmap and unmaps them at free, so every query would pay
** it again.  Where the kernel's THP setting is "madvise" (Debian's
** default), MADV_HUGEPAGE on an aligned span is what makes the difference;
** where it is refused, nothing changes. */
void *cs__mem_big_alloc(uint64_t bytes, bool huge) {
  if (bytes > SIZE_MAX - 2 * CS__BIG_PAGE) return NULL;
  bool big = false;
#ifdef MADV_HUGEPAGE
  big = huge && bytes >= CS__BIG_BYTES;
#endif
  (void)huge;
  size_t span = big ? ((size_t)bytes + CS__BIG_PAGE - 1) & ~(size_t)(CS__BIG_PAGE - 1) : (size_t)bytes;
  uint8_t *raw = cs__mem_malloc(span + (big ? CS__BIG_PAGE : CS__BIG_HDR));
  if (!raw) return NULL;
  uint8_t *p = raw + CS__BIG_HDR;
#ifdef MADV_HUGEPAGE
  if (big) {
    p = (uint8_t *)(((uintptr_t)raw + CS__BIG_HDR + CS__BIG_PAGE - 1) & ~(CS__BIG_PAGE - 1));
    (void)madvise(p, span, MADV_HUGEPAGE);
  }
#endif
  memcpy(p - sizeof raw, &raw, sizeof raw);
  return p;
}

void *cs_mem_big_alloc(uint64_t bytes) { return cs__mem_big_alloc(bytes, true); }

void cs_mem_big_free(void *p) {
  if (!p) return;
  void *raw;
  memcpy(&raw, (uint8_t *)p - sizeof raw, sizeof raw);
  cs__mem_free(raw);
}
