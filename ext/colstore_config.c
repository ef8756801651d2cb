/*
** colstore_config.c - colstore_config(name [, value]): process-wide
** settings.
**
** Settings belong to the process, not the connection, because they tune
** the host (its cores, its memory): every connection in the process uses
** the new value from its next query.  The kernel settings (threads,
** prefetch, numa, binding) live in the core, which reads them; the rest
** live here.  A
** setting that cannot take effect on this host or in this build is still
** accepted, and the effective value is reported beside the requested one
** (colstore_last_plan), never silently different.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "colstore_ext.h"

static const char *const numa_names[] = {"auto", "interleave", "local", "off"};
static const char *const binding_names[] = {"off", "close", "spread"};

#define CSX_DEFAULT_BATCH_BYTES (32u << 20)
#define CSX_MIN_BATCH_BYTES (64u << 10)

/* Delivery by scatter (docs/performance.md, "GROUP BY delivery by
** scatter"): a selection whose buffers fit in this many bytes is scattered
** whole in one pass; a larger one, or any with 0 here, takes the gather
** through sorted positions. */
#define CSX_DEFAULT_SCATTER_BYTES (256u << 20)

/* Automatic compaction (docs/performance.md, "Small transactions"): a
** commit that leaves many small records rewrites the store when that costs
** at most this many times the bytes it wins back; 0 turns it off. */
#define CSX_DEFAULT_AUTO_COMPACT 4u
#define CSX_MAX_AUTO_COMPACT 1000000u

static _Atomic uint64_t batch_bytes = CSX_DEFAULT_BATCH_BYTES;
static _Atomic uint32_t auto_compact = CSX_DEFAULT_AUTO_COMPACT;
static _Atomic uint64_t scatter_bytes = CSX_DEFAULT_SCATTER_BYTES;
static _Atomic int64_t mask_gate_millis = -1; /* -1 = auto, else 0..1000 */

uint64_t csx_config_batch_bytes(void) { return atomic_load(&batch_bytes); }
uint64_t csx_config_scatter_bytes(void) { return atomic_load(&scatter_bytes); }
uint32_t csx_config_auto_compact(void) { return atomic_load(&auto_compact); }

/* The mask gate in effect: an explicit colstore_config value wins over the
** calibrated density, which wins over the compiled default 0 (seeds/003:
** the mask-native route measured faster at every density). */
double csx_config_mask_gate(const char **out_from) {
  int64_t g = atomic_load(&mask_gate_millis);
  cs_calibration cal;
  cs_calibration_current(&cal);
  const char *from = g >= 0 ? "colstore_config" : cal.mask_gate >= 0 ? "calibration" : "default";
  if (out_from) *out_from = from;
  return g >= 0 ? (double)g / 1000.0 : cal.mask_gate >= 0 ? cal.mask_gate : 0.0;
}

void csx_config_json(sqlite3_str *s) {
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);
  int64_t gate = atomic_load(&mask_gate_millis);
  /* load_aware: an automatic cap is being limited to the idle processors
  ** (docs/tuning.md, "Threads on a busy host"); idle_cpus: the latest
  ** sample, null when it cannot be taken or awareness is off. */
  int idle = cs_kernel_idle_cpus();
  sqlite3_str_appendf(s, "\"settings\":{\"threads\":{\"requested\":%d,\"effective\":%d,\"load_aware\":%s,",
                      kc.threads, cs_kernel_threads((uint64_t)1 << 40),
                      kc.threads == 0 && idle >= 0 ? "true" : "false");
  if (idle >= 0)
    sqlite3_str_appendf(s, "\"idle_cpus\":%d},", idle);
  else
    sqlite3_str_appendall(s, "\"idle_cpus\":null},");
  if (kc.prefetch < 0) {
    /* auto: the distance per access regime (calibrated, else default). */
    sqlite3_str_appendall(s, "\"prefetch\":{\"requested\":\"auto\",\"effective\":{");
    for (int r = 0; r < CS_REGIME_COUNT; r++)
      sqlite3_str_appendf(s, "%s\"%s\":%d", r ? "," : "", cs_regime_name((cs_regime)r), cs_kernel_prefetch_for((cs_regime)r));
    sqlite3_str_appendall(s, "}},");
  } else {
    sqlite3_str_appendf(s, "\"prefetch\":{\"requested\":%d,\"effective\":%d},", kc.prefetch, kc.prefetch);
  }
  /* The FILTERED cursor gathers a batch's columns by the mask at or above
  ** the gate's density, else through positions (cs_select.c). */
  const char *gate_from;
  double gate_value = csx_config_mask_gate(&gate_from);
  if (gate < 0) sqlite3_str_appendall(s, "\"mask_gate\":{\"requested\":\"auto\",");
  else sqlite3_str_appendf(s, "\"mask_gate\":{\"requested\":%.3f,", (double)gate / 1000.0);
  sqlite3_str_appendf(s, "\"gate\":%.3f,\"gate_from\":\"%s\",\"effective\":\"%s\"},", gate_value, gate_from,
                      gate_value <= 0 ? "mask" : gate_value >= 1 ? "positions unless every row is selected"
                                                                 : "mask at or above the gate, else positions");
  /* NUMA placement and binding live in the core (cs_numa.c), which says
  ** what this host and build make of the request. */
  char numa_eff[160], bind_eff[160];
  cs_mem_keep keep;
  cs_mem_keep_state(&keep);
  cs_numa_effective(numa_eff, sizeof numa_eff);
  cs_binding_effective(bind_eff, sizeof bind_eff);
  sqlite3_str_appendf(s,
                      "\"numa\":{\"requested\":\"%s\",\"effective\":\"%s\"},"
                      "\"binding\":{\"requested\":\"%s\",\"effective\":\"%s\"},"
                      "\"batch_bytes\":%llu,\"scatter_bytes\":%llu,\"cache_limit\":%llu,\"auto_compact\":%u,"
                      "\"keep_bytes\":{\"limit\":%llu,\"kept\":%llu,\"blocks\":%llu,\"reused\":%llu}}",
                      cs_numa_policy_name(cs_numa_get()), numa_eff, cs_binding_name(cs_binding_get()), bind_eff,
                      (unsigned long long)atomic_load(&batch_bytes), (unsigned long long)atomic_load(&scatter_bytes),
                      (unsigned long long)cs_cache_limit(), (unsigned)atomic_load(&auto_compact), (unsigned long long)keep.limit, (unsigned long long)keep.bytes,
                      (unsigned long long)keep.blocks, (unsigned long long)keep.reused);
}

static int name_index(const char *z, const char *const *names, int n) {
  for (int i = 0; z && i < n; i++)
    if (sqlite3_stricmp(z, names[i]) == 0) return i;
  return -1;
}

/* A non-negative integer value (INTEGER, integral REAL, or digits). */
static bool value_uint(sqlite3_value *v, sqlite3_int64 *out) {
  cs_value num;
  csx_value_number(v, &num);
  if (num.kind == CS_VAL_INT) return (*out = num.i) >= 0;
  if (num.kind != CS_VAL_FLOAT || !(num.f >= 0 && num.f < 9.2e18) || num.f != (double)(sqlite3_int64)num.f) return false;
  *out = (sqlite3_int64)num.f;
  return true;
}

static void bad_value(sqlite3_context *ctx, const char *name, const char *valid) {
  char *z = sqlite3_mprintf("colstore: bad value for setting %s; valid values: %s", name, valid);
  sqlite3_result_error(ctx, z ? z : "colstore: out of memory", -1);
  sqlite3_free(z);
}

static void fn_config(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *name = (const char *)sqlite3_value_text(argv[0]);
  sqlite3_value *v = argc > 1 ? argv[1] : NULL;
  const char *zv = v ? (const char *)sqlite3_value_text(v) : NULL;
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);
  if (name && sqlite3_stricmp(name, "threads") == 0) {
    sqlite3_int64 n;
    if (v) {
      if (!value_uint(v, &n) || n > 4096) { bad_value(ctx, "threads", "0 (auto) or a thread count up to 4096"); return; }
      kc.threads = (int)n;
      cs_kernel_config_set(&kc);
    }
    sqlite3_result_int(ctx, kc.threads);
  } else if (name && sqlite3_stricmp(name, "prefetch") == 0) {
    sqlite3_int64 n;
    if (v) {
      if (zv && sqlite3_stricmp(zv, "auto") == 0) kc.prefetch = -1;
      else if (value_uint(v, &n) && n <= 4096) kc.prefetch = (int)n;
      else { bad_value(ctx, "prefetch", "'auto', or a distance in elements from 0 (off) to 4096"); return; }
      cs_kernel_config_set(&kc);
    }
    if (kc.prefetch < 0) sqlite3_result_text(ctx, "auto", -1, SQLITE_STATIC);
    else sqlite3_result_int(ctx, kc.prefetch);
  } else if (name && sqlite3_stricmp(name, "mask_gate") == 0) {
    if (v) {
      cs_value num;
      csx_value_number(v, &num);
      int t = num.kind;
      double f = num.kind == CS_VAL_INT ? (double)num.i : num.f;
      if (zv && sqlite3_stricmp(zv, "auto") == 0) atomic_store(&mask_gate_millis, -1);
      else if ((t == CS_VAL_INT || t == CS_VAL_FLOAT) && f >= 0 && f <= 1) atomic_store(&mask_gate_millis, (int64_t)(f * 1000 + 0.5));
      else { bad_value(ctx, "mask_gate", "'auto', or a mask density from 0 to 1"); return; }
    }
    int64_t g = atomic_load(&mask_gate_millis);
    if (g < 0) sqlite3_result_text(ctx, "auto", -1, SQLITE_STATIC);
    else sqlite3_result_double(ctx, (double)g / 1000.0);
  } else if (name && sqlite3_stricmp(name, "numa") == 0) {
    if (v) {
      int i = name_index(zv, numa_names, 4);
      if (i < 0) { bad_value(ctx, "numa", "auto, interleave, local, off"); return; }
      cs_numa_set((cs_numa_policy)i);
    }
    sqlite3_result_text(ctx, cs_numa_policy_name(cs_numa_get()), -1, SQLITE_STATIC);
  } else if (name && sqlite3_stricmp(name, "binding") == 0) {
    if (v) {
      int i = name_index(zv, binding_names, 3);
      if (i < 0) { bad_value(ctx, "binding", "off, close, spread"); return; }
      cs_binding_set((cs_binding)i);
    }
    sqlite3_result_text(ctx, cs_binding_name(cs_binding_get()), -1, SQLITE_STATIC);
  } else if (name && sqlite3_stricmp(name, "keep_bytes") == 0) {
    sqlite3_int64 n;
    if (v) {
      if (!value_uint(v, &n)) { bad_value(ctx, "keep_bytes", "0 (keep none), or a byte count (default 1073741824)"); return; }
      cs_mem_keep_bytes((uint64_t)n);
    }
    cs_mem_keep k;
    cs_mem_keep_state(&k);
    sqlite3_result_int64(ctx, (sqlite3_int64)k.limit);
  } else if (name && sqlite3_stricmp(name, "cache_limit") == 0) {
    /* The most committed bytes a cache=memory table may copy (core). */
    sqlite3_int64 n;
    if (v) {
      if (zv && sqlite3_stricmp(zv, "auto") == 0) cs_cache_limit_set(0);
      else if (value_uint(v, &n) && n > 0) cs_cache_limit_set((uint64_t)n);
      else { bad_value(ctx, "cache_limit", "'auto' (half the physical memory), or a byte count above 0"); return; }
    }
    sqlite3_result_int64(ctx, (sqlite3_int64)cs_cache_limit());
  } else if (name && sqlite3_stricmp(name, "batch_bytes") == 0) {
    sqlite3_int64 n;
    if (v) {
      if (!value_uint(v, &n) || n < CSX_MIN_BATCH_BYTES) { bad_value(ctx, "batch_bytes", "a byte count of at least 65536 (default 33554432)"); return; }
      atomic_store(&batch_bytes, (uint64_t)n);
    }
    sqlite3_result_int64(ctx, (sqlite3_int64)atomic_load(&batch_bytes));
  } else if (name && sqlite3_stricmp(name, "scatter_bytes") == 0) {
    sqlite3_int64 n;
    if (v) {
      if (!value_uint(v, &n)) { bad_value(ctx, "scatter_bytes", "0 (off), or a byte count (default 268435456)"); return; }
      atomic_store(&scatter_bytes, (uint64_t)n);
    }
    sqlite3_result_int64(ctx, (sqlite3_int64)atomic_load(&scatter_bytes));
  } else if (name && sqlite3_stricmp(name, "auto_compact") == 0) {
    sqlite3_int64 n;
    if (v) {
      if (zv && sqlite3_stricmp(zv, "off") == 0) n = 0;
      else if (!value_uint(v, &n) || n > CSX_MAX_AUTO_COMPACT) { bad_value(ctx, "auto_compact", "0 or 'off', or a cost ratio from 1 to 1000000 (default 4)"); return; }
      atomic_store(&auto_compact, (uint32_t)n);
    }
    sqlite3_result_int64(ctx, (sqlite3_int64)atomic_load(&auto_compact));
  } else {
    char *z = sqlite3_mprintf("colstore: unknown setting '%s'; the settings are threads, prefetch, mask_gate, numa, binding, batch_bytes, scatter_bytes, keep_bytes, cache_limit, auto_compact",
                              name ? name : "");
    sqlite3_result_error(ctx, z ? z : "colstore: out of memory", -1);
    sqlite3_free(z);
  }
}

int csx_register_config(sqlite3 *db) {
  int rc = sqlite3_create_function_v2(db, "colstore_config", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, fn_config, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "colstore_config", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, fn_config, NULL, NULL, NULL);
  return rc;
}
