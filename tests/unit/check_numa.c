/*
** check_numa.c - NUMA placement and thread binding (core/runtime/cs_numa.c).
**
** The decisions are pure functions of a topology, so they are checked on
** injected topologies of 1, 2 and 4 nodes, with and without libnuma, for
** every request; the cpu each thread is pinned to under close and spread is
** checked on injected layouts.  On this host (whatever it is) the effective
** values must match the host's own topology, interleave must not be applied
** on one node, and a store must read identically under every policy.
** Binding is exercised for real through a threaded kernel, and the calling
** thread's affinity must be restored once binding is back off.
*/
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

/* nodes nodes of per cpus each, cpu ids 0.. in node order. */
static cs_numa_topology topo_make(int nodes, int per, bool libnuma, bool available) {
  cs_numa_topology t;
  memset(&t, 0, sizeof t);
  t.libnuma = libnuma;
  t.available = available;
  t.nodes = nodes;
  for (int i = 0; i < nodes; i++) {
    t.node_cpus[i] = per;
    for (int c = 0; c < per; c++) t.cpu[t.cpus++] = i * per + c;
  }
  return t;
}

static void settings_reset(void) {
  cs_numa_topology_override(NULL);
  cs_numa_set(CS_NUMA_AUTO);
  cs_binding_set(CS_BINDING_OFF);
  ut_kernel_config_reset();
}

START_TEST(test_numa_decisions_per_topology_and_request) {
  static const int node_counts[] = {1, 2, 4};
  static const char *const multi[] = {"interleave", "interleave", "local", "off"};
  for (int k = 0; k < 3; k++) {
    int nodes = node_counts[k];
    for (int r = CS_NUMA_AUTO; r <= CS_NUMA_OFF; r++) {
      cs_numa_topology t = topo_make(nodes, 4, true, true);
      bool il = true;
      const char *eff = cs_numa_decide(&t, (cs_numa_policy)r, &il);
      const char *want = r == CS_NUMA_OFF ? "off" : nodes == 1 ? "none (single node)" : multi[r];
      ck_assert_msg(strcmp(eff, want) == 0, "nodes=%d request=%s: effective %s, want %s", nodes,
                    cs_numa_policy_name((cs_numa_policy)r), eff, want);
      ck_assert_int_eq(il, strcmp(want, "interleave") == 0);
      /* Built without libnuma, or a kernel without NUMA: never interleave. */
      t.libnuma = false;
      eff = cs_numa_decide(&t, (cs_numa_policy)r, &il);
      ck_assert_str_eq(eff, r == CS_NUMA_OFF ? "off" : "none (built without libnuma)");
      ck_assert(!il);
      t.libnuma = true;
      t.available = false;
      eff = cs_numa_decide(&t, (cs_numa_policy)r, &il);
      ck_assert_str_eq(eff, r == CS_NUMA_OFF ? "off" : "none (NUMA not available)");
      ck_assert(!il);
    }
  }
  ck_assert_str_eq(cs_numa_policy_name(CS_NUMA_LOCAL), "local");
  ck_assert_str_eq(cs_binding_name(CS_BINDING_SPREAD), "spread");
}
END_TEST

START_TEST(test_binding_decisions) {
  cs_numa_topology one = topo_make(1, 1, true, true), two = topo_make(2, 4, false, false);
  ck_assert_str_eq(cs_binding_decide(&one, CS_BINDING_OFF), "off");
  ck_assert_str_eq(cs_binding_decide(&one, CS_BINDING_CLOSE), "off (single cpu)");
  ck_assert_str_eq(cs_binding_decide(&one, CS_BINDING_SPREAD), "off (single cpu)");
  /* Binding needs no libnuma. */
  ck_assert_str_eq(cs_binding_decide(&two, CS_BINDING_OFF), "off");
  ck_assert_str_eq(cs_binding_decide(&two, CS_BINDING_CLOSE), "close");
  ck_assert_str_eq(cs_binding_decide(&two, CS_BINDING_SPREAD), "spread");
}
END_TEST

START_TEST(test_binding_cpu_choice) {
  cs_numa_topology t = topo_make(2, 4, true, true); /* node 0: 0-3, node 1: 4-7 */
  static const int close4[] = {0, 1, 2, 3}, spread4[] = {0, 4, 2, 6}, spread2[] = {0, 4};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(cs_binding_cpu(&t, CS_BINDING_CLOSE, i, 4), close4[i]);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(cs_binding_cpu(&t, CS_BINDING_SPREAD, i, 4), spread4[i]);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(cs_binding_cpu(&t, CS_BINDING_SPREAD, i, 2), spread2[i]);
  ck_assert_int_eq(cs_binding_cpu(&t, CS_BINDING_CLOSE, 9, 10), 1); /* more threads than cpus: wraps */
  ck_assert_int_eq(cs_binding_cpu(&t, CS_BINDING_OFF, 0, 4), -1);

  cs_numa_topology f = topo_make(4, 2, true, true); /* 0-1, 2-3, 4-5, 6-7 */
  static const int spread8[] = {0, 2, 4, 6, 1, 3, 5, 7};
  for (int i = 0; i < 8; i++) ck_assert_int_eq(cs_binding_cpu(&f, CS_BINDING_SPREAD, i, 8), spread8[i]);
  for (int i = 0; i < 8; i++) ck_assert_int_eq(cs_binding_cpu(&f, CS_BINDING_CLOSE, i, 8), i);

  /* A memory-only node (no cpus) gets no threads. */
  cs_numa_topology g = topo_make(3, 2, true, true);
  g.node_cpus[1] = 0;
  g.cpus = 4;
  g.cpu[2] = 4, g.cpu[3] = 5;
  static const int spreadg[] = {0, 4, 1, 5};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(cs_binding_cpu(&g, CS_BINDING_SPREAD, i, 4), spreadg[i]);

  /* Every thread of every count lands on a cpu of the topology. */
  for (int n = 1; n <= 12; n++)
    for (int i = 0; i < n; i++)
      for (int b = CS_BINDING_CLOSE; b <= CS_BINDING_SPREAD; b++) {
        int c = cs_binding_cpu(&f, (cs_binding)b, i, n);
        ck_assert(c >= 0 && c < 8);
      }
}
END_TEST

START_TEST(test_host_placement_and_identical_reads) {
  cs_numa_topology host;
  cs_numa_topology_get(&host);
  ck_assert_int_ge(host.nodes, 1);
  ck_assert_int_ge(host.cpus, 1);
  ut_kstore k;
  cs_numa_set(CS_NUMA_OFF);
  ut_kstore_make(&k, ut_fixed_cols, UT_FIXED_COLS, 200000, UT_IRREGULAR, 5000, 100, 42);
  uint64_t want = ut_store_digest(k.s);
  char eff[160];
  for (int r = CS_NUMA_AUTO; r <= CS_NUMA_OFF; r++) {
    cs_numa_set((cs_numa_policy)r);
    cs_store *s = NULL;
    cs_err err = {CS_OK, ""};
    ck_assert_msg(cs_store_open(k.sc.path, CS_VERIFY_FULL, &s, &err) == CS_OK, "%s", err.msg);
    ck_assert_uint_eq(ut_store_digest(s), want);
    cs_store_close(s);
    cs_numa_effective(eff, sizeof eff);
    bool il;
    ck_assert_str_eq(eff, cs_numa_decide(&host, (cs_numa_policy)r, &il));
    if (host.nodes == 1 && r != CS_NUMA_OFF) {
      /* Interleave is not applied on one node; it says why. */
      ck_assert(!il);
      ck_assert_msg(strncmp(eff, "none (", 6) == 0, "%s", eff);
    }
    if (!host.libnuma && r != CS_NUMA_OFF) ck_assert_str_eq(eff, "none (built without libnuma)");
  }
  ck_assert_ptr_null(strstr(cs_diag_notes(), "mbind"));

  /* An injected two-node topology makes the open interleave for real (over
  ** the nodes this host has): the store still reads identically. */
  if (host.libnuma && host.available) {
    cs_numa_topology two = topo_make(2, 1, true, true);
    cs_numa_topology_override(&two);
    cs_numa_set(CS_NUMA_AUTO);
    cs_store *s = NULL;
    cs_err err = {CS_OK, ""};
    ck_assert_msg(cs_store_open(k.sc.path, CS_VERIFY_FULL, &s, &err) == CS_OK, "%s", err.msg);
    ck_assert_uint_eq(ut_store_digest(s), want);
    cs_store_close(s);
    cs_numa_effective(eff, sizeof eff);
    ck_assert_msg(strcmp(eff, "interleave") == 0, "effective %s; notes %s", eff, cs_diag_notes());
    cs_numa_topology_override(NULL);
  }
  settings_reset();
  ut_kstore_free(&k);
}
END_TEST

START_TEST(test_binding_applied_in_kernels_and_restored) {
  cs_numa_topology host;
  cs_numa_topology_get(&host);
  cpu_set_t before, after;
  ck_assert_int_eq(sched_getaffinity(0, sizeof before, &before), 0);
  uint64_t n = 4 * CS_PARALLEL_MIN_ELEMENTS + 17;
  uint8_t *mask = malloc(n);
  ck_assert_ptr_nonnull(mask);
  uint64_t want = 0;
  for (uint64_t i = 0; i < n; i++) want += (mask[i] = (uint8_t)(i % 3 == 0));
  ut_kernel_config_set(2, -1);
  char eff[160];
  for (int b = CS_BINDING_OFF; b <= CS_BINDING_SPREAD; b++) {
    cs_binding_set((cs_binding)b);
    ck_assert_uint_eq(cs_mask_count(mask, n), want);
    cs_binding_effective(eff, sizeof eff);
    ck_assert_str_eq(eff, cs_binding_decide(&host, (cs_binding)b));
  }
  /* Back to off: the next threaded region restores every thread's mask. */
  cs_binding_set(CS_BINDING_OFF);
  ck_assert_uint_eq(cs_mask_count(mask, n), want);
  ck_assert_int_eq(sched_getaffinity(0, sizeof after, &after), 0);
  ck_assert(CPU_EQUAL(&before, &after));
  free(mask);
  settings_reset();
}
END_TEST

static Suite *numa_suite(void) {
  Suite *s = suite_create("numa");
  TCase *tc = tcase_create("decisions");
  tcase_add_checked_fixture(tc, NULL, settings_reset);
  tcase_add_test(tc, test_numa_decisions_per_topology_and_request);
  tcase_add_test(tc, test_binding_decisions);
  tcase_add_test(tc, test_binding_cpu_choice);
  suite_add_tcase(s, tc);
  TCase *th = tcase_create("host");
  tcase_add_checked_fixture(th, NULL, settings_reset);
  tcase_set_timeout(th, 300);
  tcase_add_test(th, test_host_placement_and_identical_reads);
  tcase_add_test(th, test_binding_applied_in_kernels_and_restored);
  suite_add_tcase(s, th);
  return s;
}

int main(void) { return ut_run_suite(numa_suite()); }
