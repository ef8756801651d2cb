/*
** fuzz.h - what the fuzz targets share: the libFuzzer entry points, a
** reader that turns the fuzzer's bytes into decisions, and a loud failure.
**
** Each target (fuzz_store.c, fuzz_filter.c, fuzz_writer.c, fuzz_parquet.c) defines
** LLVMFuzzerTestOneInput and is linked two ways: with clang's libFuzzer
** (-fsanitize=fuzzer, COLSTORE_FUZZ=ON) to search for inputs, and with
** replay_main.c in the normal build, where ctest feeds it every committed
** input (tests/data/corrupt/, tests/fuzz/regressions/) so a bug once found
** stays fixed under `make test`.  A target reports a wrong answer (its
** oracles) through FZ_CHECK, which prints and aborts: libFuzzer saves the
** input as a crash, and the replay fails.
**
** The reader never fails: past the end of the input every read gives
** zeros, so any byte string is a valid program for every target and the
** fuzzer's mutations always mean something.
*/
#ifndef COLSTORE_FUZZ_H
#define COLSTORE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints where and what, then aborts (a crash to libFuzzer and ctest). */
#define FZ_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      abort();                                                                 \
    }                                                                          \
  } while (0)

typedef struct fz_in {
  const uint8_t *p; /* next unread byte; not owned */
  size_t n;         /* bytes left */
} fz_in;

static inline fz_in fz_in_make(const uint8_t *p, size_t n) {
  fz_in in = {p, n};
  return in;
}

static inline uint8_t fz_u8(fz_in *in) {
  if (in->n == 0) return 0;
  in->n--;
  return *in->p++;
}

/* Little-endian, zero-filled past the end. */
static inline uint64_t fz_bits(fz_in *in, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; i++) v |= (uint64_t)fz_u8(in) << (8 * i);
  return v;
}

static inline uint16_t fz_u16(fz_in *in) { return (uint16_t)fz_bits(in, 2); }
static inline uint32_t fz_u32(fz_in *in) { return (uint32_t)fz_bits(in, 4); }
static inline uint64_t fz_u64(fz_in *in) { return fz_bits(in, 8); }

static inline double fz_f64_bits(fz_in *in) {
  uint64_t b = fz_u64(in);
  double d;
  memcpy(&d, &b, 8);
  return d;
}

/* Up to want bytes in place (fewer at the end of the input). */
static inline const uint8_t *fz_bytes(fz_in *in, size_t want, size_t *out_n) {
  const uint8_t *p = in->p;
  if (want > in->n) want = in->n;
  in->p += want;
  in->n -= want;
  *out_n = want;
  return p;
}

/* FNV-1a, for content fingerprints in oracles. */
static inline uint64_t fz_fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}
#define FZ_FNV_SEED 0xcbf29ce484222325ull

/* splitmix64: deterministic choices derived from the input. */
static inline uint64_t fz_mix(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#endif /* COLSTORE_FUZZ_H */
