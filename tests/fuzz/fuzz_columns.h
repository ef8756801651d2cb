/*
** fuzz_columns.h - the oracle the interchange fuzz targets (fuzz_parquet.c,
** fuzz_arrow.c) share: a decoded column (cs_pq_values) has colstore's
** layout.  Header-only, static inline, like fuzz.h.
*/
#ifndef FUZZ_COLUMNS_H
#define FUZZ_COLUMNS_H

#include "cs_interchange_internal.h"
#include "fuzz.h"

/* TEXT/BLOB offsets from 0 that never decrease and end at the bytes
** decoded; else the values at the type's width. */
static inline void fz_check_layout(const cs_pq_values *v, cs_type type, uint64_t rows) {
  if (cs_type_is_varlen(type)) {
    FZ_CHECK(v->offsets[0] == 0, "offsets start at %lld", (long long)v->offsets[0]);
    for (uint64_t r = 0; r < rows; r++)
      FZ_CHECK(v->offsets[r + 1] >= v->offsets[r], "offsets decrease at %llu", (unsigned long long)r);
    FZ_CHECK((uint64_t)v->offsets[rows] == v->data_bytes, "offsets end at %lld of %llu bytes",
             (long long)v->offsets[rows], (unsigned long long)v->data_bytes);
  } else {
    FZ_CHECK(v->data_bytes == rows * cs_type_width(type), "%llu value bytes for %llu rows",
             (unsigned long long)v->data_bytes, (unsigned long long)rows);
  }
}

#endif
