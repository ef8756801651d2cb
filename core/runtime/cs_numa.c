/*
** cs_numa.c - NUMA placement of the mappings and thread binding.
**
** The gather diagnostics of an earlier colstore on a multi-node host decide both
** defaults: interleaving the mappings over all nodes is the win for the
** realized, unbound path (at least as fast as local for contiguous, sorted
** and scattered reads, never slower), so numa=auto interleaves on a
** multi-node host; binding threads (spread) measured 24-51% slower for
** scattered gathers, so binding ships off and is an opt-in lever only.
**
** Placement: at open (cs__numa_apply, from cs__store_load) the mapping is
** given MPOL_INTERLEAVE over the nodes this process may allocate on, with
** mbind() called directly rather than numa_interleave_memory(), because the
** latter returns nothing and reports a failure by printing (STYLE: print
** nothing).  mbind steers future faults only: pages already in the page
** cache stay where they are.  A failure is a diagnostic note and the
** effective value "none (mbind failed: ...)", never an error.
**
** Binding: applied at run time by each member of a kernel's team as it
** starts its chunks (cs__bind_thread, cs_team.c); the helpers are
** colstore's own threads, so OMP_PROC_BIND never applied to them.  Each
** thread pins itself with sched_setaffinity to the cpu cs_binding_cpu()
** picks, remembers the mask it had, and restores it at its next kernel
** after binding goes back to off.
**
** Decisions are pure functions of an explicit topology, so tests inject
** topologies of 1, 2 or 4 nodes (cs_numa_topology_override) on any host.
** Every libnuma call is preceded by numa_available(); without libnuma the
** host is one node holding the process's cpus.
*/
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cs_runtime_internal.h"

#ifdef COLSTORE_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

/* ------------------------------------------------------------- topology */

static cs_numa_topology host_topo;
static cs_numa_topology injected_topo;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static _Atomic(const cs_numa_topology *) topo_current;

/* One node holding the cpus of the calling thread's affinity mask. */
static void topo_single_node(cs_numa_topology *t) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE && n < CS_NUMA_MAX_CPUS; c++)
      if (CPU_ISSET(c, &set)) t->cpu[n++] = c;
  }
  if (n == 0) t->cpu[n++] = 0;
  t->nodes = 1;
  t->node_cpus[0] = n;
  t->cpus = n;
}

static void host_read(void) {
  cs_numa_topology *t = &host_topo;
  memset(t, 0, sizeof *t);
#ifdef COLSTORE_HAVE_NUMA
  t->libnuma = true;
  if (numa_available() >= 0) {
    t->available = true;
    struct bitmask *cpus = numa_allocate_cpumask();
    int max_node = numa_max_node();
    int ncpu = numa_num_possible_cpus();
    for (int node = 0; cpus && node <= max_node && t->nodes < CS_NUMA_MAX_NODES; node++) {
      /* The nodes this process may allocate on; their cpus that it may run on. */
      if (!numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)node)) continue;
      if (numa_node_to_cpus(node, cpus) != 0) continue;
      int k = 0;
      for (int c = 0; c < ncpu && c < CPU_SETSIZE && t->cpus < CS_NUMA_MAX_CPUS; c++)
        if (numa_bitmask_isbitset(cpus, (unsigned)c) &&
            numa_bitmask_isbitset(numa_all_cpus_ptr, (unsigned)c)) {
          t->cpu[t->cpus++] = c;
          k++;
        }
      t->node_cpus[t->nodes++] = k;
    }
    if (cpus) numa_free_cpumask(cpus);
    if (t->nodes >= 1 && t->cpus >= 1) return;
    memset(t->node_cpus, 0, sizeof t->node_cpus);
    t->nodes = t->cpus = 0;
  }
#endif
  topo_single_node(t);
}

static const cs_numa_topology *topo(void) {
  const cs_numa_topology *t = atomic_load(&topo_current);
  if (t) return t;
  pthread_once(&host_once, host_read);
  return &host_topo;
}

void cs_numa_topology_get(cs_numa_topology *out) { *out = *topo(); }

void cs_numa_topology_override(const cs_numa_topology *t) {
  if (!t) {
    atomic_store(&topo_current, NULL);
    return;
  }
  injected_topo = *t;
  atomic_store(&topo_current, &injected_topo);
}

/* ------------------------------------------------------------ decisions */

static const char *const numa_policy_names[] = {"auto", "interleave", "local", "off"};
static const char *const binding_names[] = {"off", "close", "spread"};

const char *cs_numa_policy_name(cs_numa_policy p) { return (unsigned)p < 4 ? numa_policy_names[p] : "auto"; }
const char *cs_binding_name(cs_binding b) { return (unsigned)b < 3 ? binding_names[b] : "off"; }

const char *cs_numa_decide(const cs_numa_topology *t, cs_numa_policy req, bool *out_interleave) {
  bool il = false;
  const char *eff;
  if (req == CS_NUMA_OFF)
    eff = "off";
  else if (!t->libnuma)
    eff = "none (built without libnuma)";
  else if (!t->available)
    eff = "none (NUMA not available)";
  else if (t->nodes < 2)
    eff = "none (single node)";
  else if (req == CS_NUMA_LOCAL)
    eff = "local";
  else
    eff = "interleave", il = true; /* auto and interleave */
  if (out_interleave) *out_interleave = il;
  return eff;
}

const char *cs_binding_decide(const cs_numa_topology *t, cs_binding req) {
  if (req != CS_BINDING_CLOSE && req != CS_BINDING_SPREAD) return "off";
  if (t->cpus < 2) return "off (single cpu)";
  return req == CS_BINDING_CLOSE ? "close" : "spread";
}

int cs_binding_cpu(const cs_numa_topology *t, cs_binding b, int tid, int n_threads) {
  if ((b != CS_BINDING_CLOSE && b != CS_BINDING_SPREAD) || t->cpus < 1 || tid < 0) return -1;
  if (n_threads < tid + 1) n_threads = tid + 1;
  if (b == CS_BINDING_CLOSE) return t->cpu[tid % t->cpus];
  /* spread: thread tid on the (tid mod k)-th node with cpus, and the threads
  ** a node gets spaced evenly over its cpus. */
  int first[CS_NUMA_MAX_NODES], count[CS_NUMA_MAX_NODES], k = 0, off = 0;
  for (int i = 0; i < t->nodes && i < CS_NUMA_MAX_NODES; i++) {
    if (t->node_cpus[i] > 0) {
      first[k] = off;
      count[k++] = t->node_cpus[i];
    }
    off += t->node_cpus[i];
  }
  if (k == 0) return -1;
  int node = tid % k;
  int per = (n_threads - node + k - 1) / k; /* threads on this node */
  int stride = per > 0 && count[node] / per > 0 ? count[node] / per : 1;
  int idx = ((tid / k) * stride) % count[node];
  return first[node] + idx < t->cpus ? t->cpu[first[node] + idx] : -1;
}

/* ------------------------------------------------------------- settings */

static _Atomic int numa_policy;    /* cs_numa_policy */
static _Atomic int binding_policy; /* cs_binding */
static _Atomic int mbind_errno;    /* the last interleave attempt: 0 = applied */
static _Atomic int bind_errno;     /* the last sched_setaffinity failure, 0 = none */

void cs_numa_set(cs_numa_policy p) { atomic_store(&numa_policy, (unsigned)p < 4 ? (int)p : CS_NUMA_AUTO); }
cs_numa_policy cs_numa_get(void) { return (cs_numa_policy)atomic_load(&numa_policy); }
void cs_binding_set(cs_binding b) {
  atomic_store(&bind_errno, 0);
  atomic_store(&binding_policy, (unsigned)b < 3 ? (int)b : CS_BINDING_OFF);
}
cs_binding cs_binding_get(void) { return (cs_binding)atomic_load(&binding_policy); }

void cs_numa_effective(char *out, size_t n) {
  bool il;
  const char *eff = cs_numa_decide(topo(), cs_numa_get(), &il);
  int e = atomic_load(&mbind_errno);
  char buf[96];
  if (il && e)
    snprintf(out, n, "none (mbind failed: %s)", strerror_r(e, buf, sizeof buf));
  else
    snprintf(out, n, "%s", eff);
}

void cs_binding_effective(char *out, size_t n) {
  cs_binding b = cs_binding_get();
  const char *eff = cs_binding_decide(topo(), b);
  int e = atomic_load(&bind_errno);
  char buf[96];
  if (b != CS_BINDING_OFF && e)
    snprintf(out, n, "off (sched_setaffinity failed: %s)", strerror_r(e, buf, sizeof buf));
  else
    snprintf(out, n, "%s", eff);
}

/* ---------------------------------------------------------------- apply */

void cs__numa_apply(void *map, uint64_t bytes) {
  bool il;
  cs_numa_decide(topo(), cs_numa_get(), &il);
  if (!il || !map || bytes == 0) return;
#ifdef COLSTORE_HAVE_NUMA
  int e = 0;
  if (numa_available() < 0)
    e = ENOSYS;
  else if (mbind(map, bytes, MPOL_INTERLEAVE, numa_all_nodes_ptr->maskp, numa_all_nodes_ptr->size + 1, 0) !=
           0)
    e = errno;
  atomic_store(&mbind_errno, e);
  if (e) {
    char note[160], buf[96];
    snprintf(note, sizeof note,
             "numa: mbind(MPOL_INTERLEAVE) of a mapping failed (%s); pages are placed first-touch",
             strerror_r(e, buf, sizeof buf));
    cs__diag_note(note);
  }
#endif
}

static _Thread_local int bound_cpu = -1;
static _Thread_local bool saved_ok;
static _Thread_local cpu_set_t saved_mask;

void cs__bind_thread(int tid, int n_threads) {
  cs_binding b = (cs_binding)atomic_load_explicit(&binding_policy, memory_order_relaxed);
  if (b == CS_BINDING_OFF) {
    if (bound_cpu >= 0) {
      if (saved_ok) (void)sched_setaffinity(0, sizeof saved_mask, &saved_mask);
      bound_cpu = -1;
    }
    return;
  }
  if (n_threads < 2) return;
  int cpu = cs_binding_cpu(topo(), b, tid, n_threads);
  if (cpu < 0 || cpu >= CPU_SETSIZE || cpu == bound_cpu) return;
  if (!saved_ok) saved_ok = sched_getaffinity(0, sizeof saved_mask, &saved_mask) == 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) == 0)
    bound_cpu = cpu;
  else
    atomic_store_explicit(&bind_errno, errno, memory_order_relaxed);
}
