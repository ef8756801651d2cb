/*
** cs_hash_avx2.c - XXH3 compiled for AVX2, for the long inputs of cs__hash
** and cs__hash_update on a host that has AVX2 (cs_util.c chooses at run
** time).
**
** Why a file of its own: xxhash.h picks its vector code when it is
** compiled, from the compiler's target, and the build's target is the
** x86-64 baseline (SSE2), so every host runs the binary.  Compiled at -O2
** for SSE2, XXH3 hashed 128 KiB blocks in L2 at about 8 GB/s on the bench
** host (AMD EPYC), and -mavx2 at about 28 GB/s (docs/performance.md,
** "colstore_export: the check fused with the write"): the chunk checks of a
** first read and of colstore_export hash every byte of a store, so the
** difference is seen.  This file alone is compiled with -mavx2 (CMakeLists.txt, x86-64 only),
** and nothing in it runs unless the CPU and the OS say AVX2 is usable
** (__builtin_cpu_supports), so the binary stays portable.  Every XXH3 vector path gives
** the same value (xxhash's promise; check_verified compares them), so a state
** may be updated by either.
*/
#include "cs_base_internal.h"

#if defined(__AVX2__)
#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t cs__hash_avx2(const void *p, size_t n);
void cs__hash_update_avx2(void *state, const void *p, size_t n);

uint64_t cs__hash_avx2(const void *p, size_t n) { return XXH3_64bits(p, n); }
void cs__hash_update_avx2(void *state, const void *p, size_t n) { XXH3_64bits_update(state, p, n); }
#endif
