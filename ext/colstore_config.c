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
** calibrated density, which wins over the compiled default 0 (the kernel study:
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
      sqlite3_str_appendf(s, "%s\"%s\":%d", r ? "," : "", cs_regime_name((cs_regime)r),
                          cs_kernel_prefetch_for((cs_regime)r));
    sqlite3_str_appendall(s, "}},");
  } else {
    sqlite3_str_appendf(s, "\"prefetch\":{\"requested\":%d,\"effective\":%d},", kc.prefetch, kc.prefetch);
  }
  /* The FILTERED cursor gathers a batch's columns by the mask at or above
  ** the gate's density, else through positions (cs_select.c). */
  const char *gate_from;
  double gate_value = csx_config_mask_gate(&gate_from);
  if (gate < 0)
    sqlite3_str_appendall(s, "\"mask_gate\":{\"requested\":\"auto\",");
  else
    sqlite3_str_appendf(s, "\"mask_gate\":{\"requested\":%.3f,", (double)gate / 1000.0);
  sqlite3_str_appendf(s, "\"gate\":%.3f,\"gate_from\":\"%s\",\"effective\":\"%s\"},", gate_value, gate_from,
                      gate_value <= 0   ? "mask"
                      : gate_value >= 1 ? "positions unless every row is selected"
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
                      cs_numa_policy_name(cs_numa_get()), numa_eff, cs_binding_name(cs_binding_get()),
                      bind_eff, (unsigned long long)atomic_load(&batch_bytes),
                      (unsigned long long)atomic_load(&scatter_bytes), (unsigned long long)cs_cache_limit(),
                      (unsigned)atomic_load(&auto_compact), (unsigned long long)keep.limit,
                      (unsigned long long)keep.bytes, (unsigned long long)keep.blocks,
                      (unsigned long long)keep.reused);
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
  if (num.kind != CS_VAL_FLOAT || !(num.f >= 0 && num.f < 9.2e18) || num.f != (double)(sqlite3_int64)num.f)
    return false;
  *out = (sqlite3_int64)num.f;
  return true;
}

static bool is_auto(sqlite3_value *v) {
  const char *z = (const char *)sqlite3_value_text(v);
  return z && sqlite3_stricmp(z, "auto") == 0;
}

/* ---------------------------------------------------------------- the table
** Every setting is one row: its name, the values it takes (the text of its
** error and of colstore_config()'s listing), how to set it (false: the value
** is not one of those) and how to read it back.  A setting reads back as an
** integer, a real or a word. */
typedef struct setting_value {
  enum { SV_INT, SV_REAL, SV_TEXT } kind;
  sqlite3_int64 i;
  double f;
  const char *z;
} setting_value;

static setting_value sv_int(sqlite3_int64 i) { return (setting_value){.kind = SV_INT, .i = i}; }
static setting_value sv_real(double f) { return (setting_value){.kind = SV_REAL, .f = f}; }
static setting_value sv_text(const char *z) { return (setting_value){.kind = SV_TEXT, .z = z}; }

static bool set_threads(sqlite3_value *v) {
  sqlite3_int64 n;
  if (!value_uint(v, &n) || n > 4096) return false;
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);
  kc.threads = (int)n;
  cs_kernel_config_set(&kc);
  return true;
}
static setting_value get_threads(void) {
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);
  return sv_int(kc.threads);
}

static bool set_prefetch(sqlite3_value *v) {
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);
  sqlite3_int64 n;
  if (is_auto(v))
    kc.prefetch = -1;
  else if (value_uint(v, &n) && n <= 4096)
    kc.prefetch = (int)n;
  else
    return false;
  cs_kernel_config_set(&kc);
  return true;
}
static setting_value get_prefetch(void) {
  cs_kernel_config kc;
  cs_kernel_config_get(&kc);
  return kc.prefetch < 0 ? sv_text("auto") : sv_int(kc.prefetch);
}

static bool set_mask_gate(sqlite3_value *v) {
  cs_value num;
  csx_value_number(v, &num);
  double f = num.kind == CS_VAL_INT ? (double)num.i : num.f;
  if (is_auto(v))
    atomic_store(&mask_gate_millis, -1);
  else if ((num.kind == CS_VAL_INT || num.kind == CS_VAL_FLOAT) && f >= 0 && f <= 1)
    atomic_store(&mask_gate_millis, (int64_t)(f * 1000 + 0.5));
  else
    return false;
  return true;
}
static setting_value get_mask_gate(void) {
  int64_t g = atomic_load(&mask_gate_millis);
  return g < 0 ? sv_text("auto") : sv_real((double)g / 1000.0);
}

static bool set_numa(sqlite3_value *v) {
  int i = name_index((const char *)sqlite3_value_text(v), numa_names, 4);
  if (i >= 0) cs_numa_set((cs_numa_policy)i);
  return i >= 0;
}
static setting_value get_numa(void) { return sv_text(cs_numa_policy_name(cs_numa_get())); }

static bool set_binding(sqlite3_value *v) {
  int i = name_index((const char *)sqlite3_value_text(v), binding_names, 3);
  if (i >= 0) cs_binding_set((cs_binding)i);
  return i >= 0;
}
static setting_value get_binding(void) { return sv_text(cs_binding_name(cs_binding_get())); }

static bool set_batch_bytes(sqlite3_value *v) {
  sqlite3_int64 n;
  if (!value_uint(v, &n) || n < CSX_MIN_BATCH_BYTES) return false;
  atomic_store(&batch_bytes, (uint64_t)n);
  return true;
}
static setting_value get_batch_bytes(void) { return sv_int((sqlite3_int64)atomic_load(&batch_bytes)); }

static bool set_scatter_bytes(sqlite3_value *v) {
  sqlite3_int64 n;
  if (!value_uint(v, &n)) return false;
  atomic_store(&scatter_bytes, (uint64_t)n);
  return true;
}
static setting_value get_scatter_bytes(void) { return sv_int((sqlite3_int64)atomic_load(&scatter_bytes)); }

static bool set_keep_bytes(sqlite3_value *v) {
  sqlite3_int64 n;
  if (!value_uint(v, &n)) return false;
  cs_mem_keep_bytes((uint64_t)n);
  return true;
}
static setting_value get_keep_bytes(void) {
  cs_mem_keep k;
  cs_mem_keep_state(&k);
  return sv_int((sqlite3_int64)k.limit);
}

/* The most committed bytes a cache=memory table may copy (core). */
static bool set_cache_limit(sqlite3_value *v) {
  sqlite3_int64 n;
  if (is_auto(v))
    cs_cache_limit_set(0);
  else if (value_uint(v, &n) && n > 0)
    cs_cache_limit_set((uint64_t)n);
  else
    return false;
  return true;
}
static setting_value get_cache_limit(void) { return sv_int((sqlite3_int64)cs_cache_limit()); }

/* Automatic compaction after small commits (core/write/cs_compact.c): a
** rewrite may cost this many bytes per byte the small commits wrote. */
static bool set_auto_compact(sqlite3_value *v) {
  const char *z = (const char *)sqlite3_value_text(v);
  sqlite3_int64 n;
  if (z && sqlite3_stricmp(z, "off") == 0)
    n = 0;
  else if (!value_uint(v, &n) || n > CSX_MAX_AUTO_COMPACT)
    return false;
  atomic_store(&auto_compact, (uint32_t)n);
  return true;
}
static setting_value get_auto_compact(void) { return sv_int((sqlite3_int64)atomic_load(&auto_compact)); }

typedef struct setting {
  const char *name;
  const char *allowed;
  bool (*set)(sqlite3_value *);
  setting_value (*get)(void);
} setting;

static const setting settings[] = {
    {"threads", "0 (auto) or a thread count up to 4096", set_threads, get_threads},
    {"prefetch", "'auto', or a distance in elements from 0 (off) to 4096", set_prefetch, get_prefetch},
    {"mask_gate", "'auto', or a mask density from 0 to 1", set_mask_gate, get_mask_gate},
    {"numa", "auto, interleave, local, off", set_numa, get_numa},
    {"binding", "off, close, spread", set_binding, get_binding},
    {"batch_bytes", "a byte count of at least 65536 (default 33554432)", set_batch_bytes, get_batch_bytes},
    {"scatter_bytes", "0 (off), or a byte count (default 268435456)", set_scatter_bytes, get_scatter_bytes},
    {"keep_bytes", "0 (keep none), or a byte count (default 1073741824)", set_keep_bytes, get_keep_bytes},
    {"cache_limit", "'auto' (half the physical memory), or a byte count above 0", set_cache_limit,
     get_cache_limit},
    {"auto_compact", "0 or 'off', or a cost ratio from 1 to 1000000 (default 4)", set_auto_compact,
     get_auto_compact},
};
#define N_SETTINGS ((int)(sizeof settings / sizeof settings[0]))

static void result_setting(sqlite3_context *ctx, setting_value v) {
  if (v.kind == SV_INT)
    sqlite3_result_int64(ctx, v.i);
  else if (v.kind == SV_REAL)
    sqlite3_result_double(ctx, v.f);
  else
    sqlite3_result_text(ctx, v.z, -1, SQLITE_TRANSIENT);
}

static void append_json_value(sqlite3_str *s, setting_value v) {
  if (v.kind == SV_INT)
    sqlite3_str_appendf(s, "%lld", (long long)v.i);
  else if (v.kind == SV_REAL)
    sqlite3_str_appendf(s, "%!.15g", v.f);
  else
    sqlite3_str_appendf(s, "\"%s\"", v.z); /* words: auto, interleave, ... */
}

/* colstore_config(): every setting, its value and the values it takes. */
static void config_listing(sqlite3_context *ctx) {
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  sqlite3_str_appendchar(s, 1, '{');
  for (int i = 0; i < N_SETTINGS; i++) {
    sqlite3_str_appendf(s, "%s\"%s\":{\"value\":", i ? "," : "", settings[i].name);
    append_json_value(s, settings[i].get());
    sqlite3_str_appendf(s, ",\"allowed\":\"%s\"}", settings[i].allowed);
  }
  sqlite3_str_appendchar(s, 1, '}');
  char *z = sqlite3_str_finish(s);
  if (!z) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, z, -1, sqlite3_free);
}

static void fn_config(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (argc == 0) {
    config_listing(ctx);
    return;
  }
  const char *name = (const char *)sqlite3_value_text(argv[0]);
  for (int i = 0; name && i < N_SETTINGS; i++) {
    if (sqlite3_stricmp(name, settings[i].name) != 0) continue;
    if (argc > 1 && !settings[i].set(argv[1])) {
      char *z = sqlite3_mprintf("colstore: bad value for setting %s; valid values: %s", settings[i].name,
                                settings[i].allowed);
      sqlite3_result_error(ctx, z ? z : "colstore: out of memory", -1);
      sqlite3_free(z);
      return;
    }
    result_setting(ctx, settings[i].get());
    return;
  }
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  sqlite3_str_appendf(s, "colstore: unknown setting '%s'; the settings are", name ? name : "");
  for (int i = 0; i < N_SETTINGS; i++) sqlite3_str_appendf(s, "%s %s", i ? "," : "", settings[i].name);
  sqlite3_str_appendall(s, " (colstore_config() lists them with their values)");
  char *z = sqlite3_str_finish(s);
  sqlite3_result_error(ctx, z ? z : "colstore: out of memory", -1);
  sqlite3_free(z);
}

int csx_register_config(sqlite3 *db) {
  int rc = SQLITE_OK;
  for (int argc = 0; argc <= 2 && rc == SQLITE_OK; argc++)
    rc = sqlite3_create_function_v2(db, "colstore_config", argc, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                    fn_config, NULL, NULL, NULL);
  return rc;
}
