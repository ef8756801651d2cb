/*
** cs_cache.c - cache=memory: a snapshot that reads a private copy of the
** store instead of the file's shared mapping.
**
** Why a copy at all, when the mapping already reads the page cache at
** memory speed: on some hosts it does not stay at memory speed.  On the
** development VM (a Firecracker guest on PVM, with a DAMON thread aging
** pages) a page of a file mapping left untouched for ~0.2 s costs ~0.3-3 us
** on its next touch, with no page fault the guest sees, while anonymous
** memory keeps its speed (docs/performance.md, "What else slows a query
** after a pause").  A query that follows another query, or a pause, then
** runs 2-3x slower than the same query back to back.  MADV_HUGEPAGE on the
** mapping, mlock and MADV_POPULATE_READ were measured and did not help; a
** copy in anonymous 2 MiB pages did.  So this is an opt-in: a store that
** fits in memory, on a host where mapped pages go cold, is copied once at
** open and read from the copy.
**
** How.  cs__store_load does every check it always does (preamble, schema,
** slots, footer or recovery scan) through the mapping, which reads only the
** few pages those structures live on.  Once the committed extent
** [0, data_end) is known, cs__cache_copy allocates one block of that size
** (cs__mem_big_alloc: 2 MiB aligned, MADV_HUGEPAGE, so its first touch
** faults once per 2 MiB and its TLB reach is large), reads the file into it
** with pread in 16 MiB pieces (the kernel's copy from the page cache, which
** does not touch the mapping's cold pages), unmaps the file, and makes
** s->map point at the block.  The copy keeps the file's offsets, so
** everything after that point (chunk pointers, record headers for
** verify=full, per-chunk checksums of verify=read) is the unchanged code
** reading the copy: a checksum is computed over exactly the bytes the
** kernels will read.
**
** Reopen.  A snapshot is immutable, so a reopen after another connection's
** commit makes a new copy.  Committed records are never rewritten (the
** format's append rule, cs_format.h), so when the file is the same inode
** and only grew, the older snapshot's copy already holds [0, its data_end)
** byte for byte: that part is copied from memory to memory and only the
** new records are read from the file.  Anything else (another inode after
** colstore_create 'replace' or a compaction, a smaller extent after a
** recovery) reads the whole file again.  Sharing the old block instead of
** copying it would save the memcpy but makes every snapshot a list of
** blocks; the memcpy runs at anonymous-memory speed (docs/performance.md,
** cache=memory), so it was left simple.  For the checks of verify=read the
** copy counts as the file: chunks are remembered per (file, offset,
** checksum) process-wide (cs_verified.c), and a copy read from the file
** holds the bytes the file holds, by the same rule that lets two snapshots
** share a check.
**
** The limit.  A copy of a store larger than memory would push the process
** into swap or the OOM killer, so a store whose committed bytes exceed
** cs_cache_limit() (default half the physical memory) is read through the
** mapping: no error here, the snapshot says why (cs_store_cache_info), and
** the SQL glue refuses such a table at CREATE and reports it after a
** reopen (an append must not make a working table fail).  A failed
** allocation is CS_ENOMEM like every other one in core, never a silent
** fall-back: the fault injector of cs_alloc.c covers it.
**
** cache=auto.  Neither setting is right for every session (docs/
** performance.md, "The default cache setting"): the copy won 1.6x for an
** interactive session in the first measurement and loses for a process
** that asks one question or a table that follows another connection's
** appends.  AUTO opens and
** refreshes exactly as MAP; the SQL glue, which sees statements start and
** knows how long the table has been read, starts a copy once the table has
** proved long-lived (cs_cache_copy_start) and swaps it in at a later
** statement's start, if the table still reads the state it copied.
**
** Why in the background.  Made in the statement that found the table
** long-lived, the copy cost that statement 0.4-0.6 s for a 280 MB store,
** about what the copy saved over the rest of an interactive session, so
** auto was not measurably better than map (docs/performance.md, "cache=
** auto").  On a thread of its own it costs no statement: the statement
** that starts it reads the mapping, and so does every statement until the
** copy has finished; a user's think time, or the statement itself on the
** other core, hides it.  The thread is one per copy, started and joined
** here, not cs_worker's pool: a copy lasts a second where a worker's job
** lasts microseconds, and a pooled worker held by a copy would be missing
** from the scans that need it.
**
** What the thread touches.  Only what the job holds: the source store's
** path and identity (device, inode, generation, committed extent), copied
** at the start on the caller's thread.  It opens the path again as MEMORY
** (the structures through a fresh mapping, the data by pread) and keeps
** the result only if it is the same committed state, so a commit that
** lands meanwhile never shows early; the source store is never read by
** the thread, so the caller may close it whenever it likes (the SQL glue
** keeps its snapshot referenced anyway, so that "the same state" can be
** asked by pointer, with no address reused).  The thread calls core only,
** its allocations go through cs_alloc.c marked as background work
** (cs__mem_background: an injected failure there is counted apart, and
** tests/alloc holds such runs to "no statement failed"), and it hands its
** result over with one release store that cs_cache_copy_done reads with
** acquire, so asking never waits.  Cancel (table dropped, connection
** closed, the table moved to another state) is an atomic flag the copy
** loop reads between its 16 MiB pieces (copy_cancel, a thread-local
** pointer, so the ordinary open path carries it without a parameter): a
** join after it waits for at most one piece.  After fork() the child has
** no such thread: cs_cache_copy_done says finished, take gives nothing,
** and free neither joins nor touches what the thread was building (as
** cs_worker.c's pool leaves a parent's workers), keyed on the pid that
** started it.
**
** Still not the default: with the copy off the statements, auto was
** 0.70-1.12x of map over an interactive session (1.02x on the quietest
** run), where a grouping that reads the same from either dominates, so the
** default stays MAP (docs/performance.md, "The default cache setting,
** measured with the copy in the background").
**
** The size rule is stricter than MEMORY's limit because nobody asked for
** the copy: it must also fit in half of what the kernel reports available
** at the start (MemAvailable), so an automatic copy never pushes the host
** into reclaim; the caller keeps at most one copy in flight per table.  A
** promoted snapshot's reopen after a commit is AUTO again, that is on the
** mapping: the next copy waits until the new state proves long-lived too
** (a table that follows appends would otherwise copy the whole store per
** commit, the 0.64x of cache=memory in that session).  A dataset stays on
** its mappings under AUTO (its parts are shared across reopens, and
** promoting them one by one is not done).
*/
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cs_store_internal.h"

#define CACHE_PIECE_BYTES ((uint64_t)16 << 20) /* one pread; large enough to be bandwidth-bound */

/* cache=auto's cancel flag, set on the copy's own thread only (else NULL),
** read by cs__cache_copy between its pieces: the open is the ordinary one,
** and this is how a request to stop reaches its loop without a parameter
** threaded through every open. */
static _Thread_local const atomic_bool *copy_cancel;

static _Atomic uint64_t cache_limit_set; /* 0 = the default */

void cs_cache_limit_set(uint64_t bytes) { atomic_store(&cache_limit_set, bytes); }

uint64_t cs_cache_limit(void) {
  uint64_t v = atomic_load(&cache_limit_set);
  if (v) return v;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return (uint64_t)1 << 30; /* unknown: 1 GiB */
  return (uint64_t)pages * (uint64_t)page / 2;
}

const char *cs_cache_name(cs_cache cache) {
  return cache == CS_CACHE_MEMORY ? "memory" : cache == CS_CACHE_AUTO ? "auto" : "map";
}

/* Bytes the kernel reports available for new allocations without
** swapping: MemAvailable, else the free pages sysconf knows; 0 unknown. */
static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[128];
  unsigned long long kb = 0;
  bool found = false;
  while (f && !found && fgets(line, sizeof line, f)) found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
  if (f) fclose(f);
  if (found) return (uint64_t)kb * 1024u;
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

bool cs_cache_auto_fits(uint64_t bytes, char *why, size_t cap) {
  uint64_t limit = cs_cache_limit(), avail = mem_available();
  if (bytes > limit) {
    snprintf(why, cap, "the store's %llu committed bytes exceed the cache limit of %llu bytes",
             (unsigned long long)bytes, (unsigned long long)limit);
    return false;
  }
  if (bytes > avail / 2) {
    snprintf(why, cap, "the store's %llu committed bytes exceed half of the %llu bytes of memory available",
             (unsigned long long)bytes, (unsigned long long)avail);
    return false;
  }
  return true;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether base's copy holds the first base->data_end bytes of s's file. */
static bool base_reusable(const cs_store *s, const cs_store *base) {
  return base && base->copy && !base->parts && base->file_dev == s->file_dev &&
         base->file_ino == s->file_ino && base->data_offset == s->data_offset &&
         base->data_end <= s->data_end && base->generation <= s->generation;
}

cs_rc cs__cache_copy(cs_store *s, const cs_store *base, cs_err *err) {
  uint64_t limit = cs_cache_limit();
  if (s->data_end > limit) {
    snprintf(s->cache_why, sizeof s->cache_why,
             "the store's %llu committed bytes exceed the cache limit of %llu bytes",
             (unsigned long long)s->data_end, (unsigned long long)limit);
    return CS_OK;
  }
  uint64_t t0 = now_ns();
  uint8_t *copy = cs__mem_big_alloc(s->data_end, true);
  if (!copy)
    return cs_err_set(err, CS_ENOMEM,
                      "colstore: %s: out of memory for a cache=memory copy of %llu bytes; use cache=map",
                      s->path, (unsigned long long)s->data_end);
  cs__numa_apply(copy, s->data_end);
  uint64_t at = 0;
  if (base_reusable(s, base)) {
    memcpy(copy, base->copy, base->data_end);
    at = base->data_end;
  }
  uint64_t read_from = at;
  while (at < s->data_end) {
    if (copy_cancel && atomic_load(copy_cancel)) {
      cs_mem_big_free(copy);
      return cs_err_set(err, CS_EINVAL, "colstore: %s: the cache=auto copy was cancelled", s->path);
    }
    uint64_t n = s->data_end - at < CACHE_PIECE_BYTES ? s->data_end - at : CACHE_PIECE_BYTES;
    cs_rc rc = cs__pread_full(s->fd, copy + at, (size_t)n, at, s->path, err);
    if (rc) {
      cs_mem_big_free(copy);
      return rc;
    }
    at += n;
  }
  munmap((void *)s->map, s->map_bytes);
  s->map = copy;
  s->copy = copy;
  s->copy_read_bytes = s->data_end - read_from;
  s->copy_ns = now_ns() - t0;
  return CS_OK;
}

void cs__cache_release(cs_store *s) {
  if (s->copy)
    cs_mem_big_free(s->copy);
  else if (s->map)
    munmap((void *)s->map, s->map_bytes);
  s->copy = NULL;
  s->map = NULL;
}

void cs_store_cache_info(const cs_store *s, cs_cache_info *out) {
  memset(out, 0, sizeof *out);
  out->requested = s->cache_req;
  if (!s->parts) {
    out->effective = s->copy ? CS_CACHE_MEMORY : CS_CACHE_MAP;
    out->bytes = s->copy ? s->data_end : 0;
    out->read_bytes = s->copy_read_bytes;
    out->copy_ns = s->copy_ns;
    memcpy(out->why, s->cache_why, sizeof out->why);
    return;
  }
  /* A dataset: memory when every file is; the first reason otherwise. */
  bool all = true;
  memcpy(out->why, s->cache_why, sizeof out->why);
  for (uint32_t i = 0; i < s->n_parts; i++) {
    const cs_store *p = s->parts[i];
    all = all && p->copy;
    if (p->copy) out->bytes += p->data_end;
    out->read_bytes += p->copy_read_bytes;
    out->copy_ns += p->copy_ns;
    if (!out->why[0] && p->cache_why[0])
      snprintf(out->why, sizeof out->why, "%.80s: %.100s", p->path, p->cache_why);
  }
  out->effective = all && s->n_parts ? CS_CACHE_MEMORY : CS_CACHE_MAP;
}

/* ------------------------------------------------- cache=auto's copy */

enum { COPY_RUNNING = 0, COPY_DONE = 1 };

struct cs_cache_copy {
  /* What the copy must be: written before the thread starts, then read-only. */
  char *path;
  uint64_t dev, ino, generation, data_end;
  pthread_t thread;
  pid_t pid;          /* the process that started the thread */
  bool joined;        /* the thread was waited for (the connection's thread only) */
  atomic_bool cancel; /* set by the connection's thread, read between pieces */
  atomic_int state;   /* COPY_DONE, with release, once result and why are written */
  cs_store *result;   /* the thread's; the caller's once state is DONE */
  char why[192];
};

static void *copy_main(void *arg) {
  cs_cache_copy *c = arg;
  cs__mem_background(true);
  copy_cancel = &c->cancel;
  cs_store *n = NULL;
  cs_err err = {0};
  if (cs__store_open_path(c->path, CS_VERIFY_HEADER, CS_CACHE_MEMORY, NULL, &n, &err) != CS_OK)
    snprintf(c->why, sizeof c->why, "%.180s", err.msg);
  else if (!n->copy || n->file_ino != c->ino || n->file_dev != c->dev || n->generation != c->generation ||
           n->data_end != c->data_end) {
    snprintf(c->why, sizeof c->why, "%s", n->copy ? "the store changed while it was copied" : n->cache_why);
    cs_store_close(n);
    n = NULL;
  } else
    n->cache_req = CS_CACHE_AUTO;
  c->result = n;
  copy_cancel = NULL;
  cs__mem_background(false);
  atomic_store_explicit(&c->state, COPY_DONE, memory_order_release);
  return NULL;
}

cs_rc cs_cache_copy_start(const cs_store *s, cs_cache_copy **out, char *why, size_t cap, cs_err *err) {
  *out = NULL;
  if (s->parts || s->view || s->copy) {
    snprintf(why, cap, "%s", s->copy ? "already a copy" : "a dataset or a view with pending changes");
    return CS_OK;
  }
  if (!cs_cache_auto_fits(s->data_end, why, cap)) return CS_OK;
  cs_cache_copy *c = cs__mem_calloc(1, sizeof *c);
  char *path = cs__mem_strdup(s->path);
  if (!c || !path) {
    cs__mem_free(c);
    cs__mem_free(path);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a cache=auto copy; use cache=map");
  }
  c->path = path;
  c->dev = s->file_dev, c->ino = s->file_ino, c->generation = s->generation, c->data_end = s->data_end;
  atomic_init(&c->cancel, false);
  atomic_init(&c->state, COPY_RUNNING);
  c->pid = getpid();
  if (pthread_create(&c->thread, NULL, copy_main, c) != 0) {
    snprintf(why, cap, "no thread could be started for the copy");
    cs__mem_free(path);
    cs__mem_free(c);
    return CS_OK;
  }
  *out = c;
  return CS_OK;
}

bool cs_cache_copy_done(const cs_cache_copy *c) {
  return c->pid != getpid() || atomic_load_explicit(&c->state, memory_order_acquire) == COPY_DONE;
}

void cs_cache_copy_wait(cs_cache_copy *c) {
  if (c->joined || c->pid != getpid()) return;
  pthread_join(c->thread, NULL);
  c->joined = true;
}

void cs_cache_copy_cancel(cs_cache_copy *c) { atomic_store(&c->cancel, true); }

cs_store *cs_cache_copy_take(cs_cache_copy *c, char *why, size_t cap) {
  if (c->pid != getpid()) {
    snprintf(why, cap, "the copy was started before a fork(), by another process");
    return NULL;
  }
  cs_store *n = c->result;
  c->result = NULL;
  if (!n) snprintf(why, cap, "%s", c->why);
  return n;
}

void cs_cache_copy_free(cs_cache_copy *c) {
  if (!c) return;
  if (c->pid != getpid()) {
    /* Forked while it ran: the thread is not in this process, and what it
    ** left half made is not ours to touch; the block stays (as cs_worker.c's
    ** pool leaves a parent's workers). */
    return;
  }
  cs_cache_copy_cancel(c);
  cs_cache_copy_wait(c);
  cs_store_close(c->result);
  cs__mem_free(c->path);
  cs__mem_free(c);
}
