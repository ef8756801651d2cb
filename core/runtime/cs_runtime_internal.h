/*
** cs_runtime_internal.h - threads and memory placement: the kernels' team,
** the background worker, the kernel settings and thread policy, NUMA.
**
** runtime/ knows how to run work, not what the work is: it sits on base/
** (and the host probe there) and under the store (which interleaves a
** fresh mapping) and the kernels (which run on the team).  The thread
** policy and the load reading are pure functions so the tests can drive
** them with made-up hosts.
*/
#ifndef CS_RUNTIME_INTERNAL_H
#define CS_RUNTIME_INTERNAL_H

#include "cs_base_internal.h"

/* Upper bound on the threads one kernel uses (and one more than the
** kernels' helpers, cs_team.c); cs_kernel_threads() never returns more. */
#define CS__MAX_THREADS 1024

/* NUMA (cs_numa.c): interleaves a fresh mapping when the effective policy
** is interleave (cs__store_load); pins the calling thread when binding is
** on, restores it when binding is back off (each member of a kernel's team
** calls it as it starts its chunks, cs_team.c). */
void cs__numa_apply(void *map, uint64_t bytes);
void cs__bind_thread(int tid, int n_threads);
/* The thread policy of cs_kernel_threads() as a pure function
** (cs_kernel_config.c): threads for n elements under cap, limited to
** max(1, ncpu - others) when others >= 0 (the runnable threads of other
** processes on ncpu online processors; -1 = no load limit). */
int cs__threads_policy(uint64_t n, int cap, int ncpu, int others);
/* The runnable count R of /proc/loadavg's "R/T" field, or -1. */
int cs__loadavg_runnable(const char *text);

/* cs_worker.c marks its thread busy around each job, so the load-aware
** thread count does not take colstore's own background work for another
** process's (cs_kernel_config.c). */
void cs__own_thread_busy(bool busy);

/* ---- kernel settings (cs_kernel_config.c) */

/* Default prefetch distances for prefetch = -1 ("auto"), in elements.
** The kernel study: software prefetch is a pessimisation for unsorted
** gathers (the out-of-order core already saturates memory-level
** parallelism; measured here too: distance 8 or 64 doubled cs_gather_rows'
** time on an irregular store).  The sorted walk gains: a lookahead cursor
** prefetches the exact value pf elements ahead across record boundaries.
** Measured on a 4-column FLOAT64 store, 4M rows, 2M sorted rows, one
** thread (ns per element at distance 0 / 64 / 128 / 256 / 512): records of
** 16-48 rows 6.9 / 4.9 / 4.8 / 4.8 / 5.0; of 50-250 rows 4.5 / 3.4 / 3.2 /
** 3.2 / 3.4.  bench/bench_kernels.c re-measures it on the host at hand. */
#define CS__PREFETCH_AUTO_ROWS 0
#define CS__PREFETCH_AUTO_SORTED 128

/* The prefetch distance a kernel uses: the configured value when it is set
** (>= 0), else auto_default. */
int cs__kernel_prefetch(int auto_default);
/* Overrides the kernel settings for the calling thread only (NULL ends the
** override); cs_calibrate() times its candidates with it. */
void cs__kernel_config_override(const cs_kernel_config *cfg);

/* ---- the kernels' team (cs_team.c) */

/* The kernels' parallel loop: fn(ctx, chunk, member) for every
** chunk in [0, n_chunks), on the calling thread (member 0) and up to
** threads - 1 helpers (members 1, 2, ...) that join while chunks are left.
** Which member runs which chunk is timing, so what fn writes must depend on
** the chunk alone.  Returns the members that ran chunks (1 = the caller
** alone).  Never waits for a helper that has not started. */
typedef void (*cs__team_fn)(void *ctx, uint64_t chunk, int member);
int cs__team_run(int threads, uint64_t n_chunks, cs__team_fn fn, void *ctx);
/* The chunk size for n elements on threads: about eight chunks a thread,
** at least min_chunk, at most max_chunks chunks (0 = no limit), a multiple
** of align (a power of two).  A function of its arguments only. */
uint64_t cs__team_chunk(uint64_t n, int threads, uint64_t min_chunk, uint64_t align, uint64_t max_chunks);
/* The elements [i0, i1) of chunk c of size chunk over n elements. */
CS__INLINE void cs__team_span(uint64_t c, uint64_t chunk, uint64_t n, uint64_t *i0, uint64_t *i1) {
  *i0 = c * chunk;
  *i1 = *i0 + chunk < n ? *i0 + chunk : n;
}
/* Since the process started: team runs with helpers asked for, chunks
** helpers ran, runs no helper joined in time (the caller ran all). */
void cs__team_stats(uint64_t *runs, uint64_t *helped_chunks, uint64_t *alone);

#endif /* CS_RUNTIME_INTERNAL_H */
