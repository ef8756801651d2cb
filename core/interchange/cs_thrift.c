/*
** cs_thrift.c - the Thrift compact protocol, as Parquet's footer and page
** headers use it: a cursor that reads fields, and a writer that appends.
**
** Parquet needs a small part of Thrift: structs of integer, bool, binary,
** list and nested struct fields, all in the compact protocol (varints,
** zigzag signed integers, field ids as deltas).  A generated parser would
** bring a runtime library that Debian 12 does not package for C; this file
** is the part we need, and the Parquet parser above it walks each struct
** itself, keeping the fields it knows and skipping the rest, which is how
** Thrift stays compatible with newer writers.
**
** Nothing here trusts the bytes.  Every read checks the bytes left; a list
** count is bounded by the bytes left (each element takes a byte at least),
** so a caller that allocates per element never allocates past what the
** file holds; nesting is bounded (CS_THRIFT_MAX_DEPTH) so a crafted footer
** cannot recurse the stack away.  A failed read marks the cursor failed
** and every later one fails too: a parser may read a whole struct and
** check once.
*/
#include <stdlib.h>
#include <string.h>

#include "cs_base_internal.h"
#include "cs_interchange_internal.h"

bool cs_thrift_varint(cs_thrift *t, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; !t->failed && t->p < t->end && shift < 64; shift += 7) {
    uint8_t b = *t->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return cs_thrift_fail(t);
}

static bool zigzag(cs_thrift *t, int64_t *out) {
  uint64_t u;
  if (!cs_thrift_varint(t, &u)) return false;
  *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
  return true;
}

bool cs_thrift_field(cs_thrift *t, int16_t *last, int16_t *out_id, uint8_t *out_type) {
  if (t->failed || t->p >= t->end) return cs_thrift_fail(t);
  uint8_t b = *t->p++;
  *out_type = b & 0x0f;
  if (*out_type == CS_THRIFT_STOP) return true;
  int delta = b >> 4;
  if (delta) {
    *out_id = (int16_t)(*last + delta);
  } else {
    int64_t id;
    if (!zigzag(t, &id)) return false;
    if (id < INT16_MIN || id > INT16_MAX) return cs_thrift_fail(t);
    *out_id = (int16_t)id;
  }
  *last = *out_id;
  return *out_type <= CS_THRIFT_STRUCT || cs_thrift_fail(t);
}

bool cs_thrift_next(cs_thrift *t, int16_t *last, int16_t *out_id, uint8_t *out_type) {
  if (!cs_thrift_field(t, last, out_id, out_type)) return false;
  if (*out_type != CS_THRIFT_STOP) return true;
  cs_thrift_end(t);
  return false;
}

bool cs_thrift_i64(cs_thrift *t, uint8_t type, int64_t *out) {
  if (type == CS_THRIFT_I8) {
    if (t->failed || t->p >= t->end) return cs_thrift_fail(t);
    *out = (int8_t)*t->p++;
    return true;
  }
  if (type != CS_THRIFT_I16 && type != CS_THRIFT_I32 && type != CS_THRIFT_I64) return cs_thrift_fail(t);
  return zigzag(t, out);
}

bool cs_thrift_i32(cs_thrift *t, uint8_t type, int32_t *out) {
  int64_t v;
  if (!cs_thrift_i64(t, type, &v)) return false;
  if (v < INT32_MIN || v > INT32_MAX) return cs_thrift_fail(t);
  *out = (int32_t)v;
  return true;
}

bool cs_thrift_bool(cs_thrift *t, uint8_t type, bool *out) {
  if (type == CS_THRIFT_TRUE || type == CS_THRIFT_FALSE) {
    *out = type == CS_THRIFT_TRUE;
    return !t->failed;
  }
  return cs_thrift_fail(t);
}

bool cs_thrift_binary(cs_thrift *t, uint8_t type, const uint8_t **out, uint32_t *out_n) {
  uint64_t n;
  if (type != CS_THRIFT_BINARY || !cs_thrift_varint(t, &n)) return cs_thrift_fail(t);
  if (n > (uint64_t)(t->end - t->p)) return cs_thrift_fail(t);
  *out = t->p;
  *out_n = (uint32_t)n;
  t->p += n;
  return true;
}

bool cs_thrift_list(cs_thrift *t, uint8_t type, uint8_t *out_elem, uint32_t *out_n) {
  if ((type != CS_THRIFT_LIST && type != CS_THRIFT_SET) || t->failed || t->p >= t->end)
    return cs_thrift_fail(t);
  uint8_t b = *t->p++;
  uint64_t n = b >> 4;
  if (n == 15 && !cs_thrift_varint(t, &n)) return false;
  *out_elem = b & 0x0f;
  /* Bool elements are a byte each (1 true, 2 false; 0 is read as false). */
  if (*out_elem == CS_THRIFT_FALSE) *out_elem = CS_THRIFT_TRUE;
  if (*out_elem == CS_THRIFT_STOP || *out_elem > CS_THRIFT_STRUCT) return cs_thrift_fail(t);
  if (n > (uint64_t)(t->end - t->p)) return cs_thrift_fail(t);
  *out_n = (uint32_t)n;
  return true;
}

bool cs_thrift_begin(cs_thrift *t, uint8_t type) {
  if (type != CS_THRIFT_STRUCT || t->failed || t->depth >= CS_THRIFT_MAX_DEPTH) return cs_thrift_fail(t);
  t->depth++;
  return true;
}

static bool skip_bytes(cs_thrift *t, size_t n) {
  if (t->failed || n > (size_t)(t->end - t->p)) return cs_thrift_fail(t);
  t->p += n;
  return true;
}

/* A bool inside a container is one byte; as a field it has no bytes. */
static bool skip_value(cs_thrift *t, uint8_t type, bool in_container) {
  uint64_t u;
  const uint8_t *s;
  uint32_t n;
  switch (type) {
    case CS_THRIFT_TRUE:
    case CS_THRIFT_FALSE: return in_container ? skip_bytes(t, 1) : !t->failed;
    case CS_THRIFT_I8: return skip_bytes(t, 1);
    case CS_THRIFT_I16:
    case CS_THRIFT_I32:
    case CS_THRIFT_I64: return cs_thrift_varint(t, &u);
    case CS_THRIFT_DOUBLE: return skip_bytes(t, 8);
    case CS_THRIFT_BINARY: return cs_thrift_binary(t, type, &s, &n);
    case CS_THRIFT_LIST:
    case CS_THRIFT_SET: {
      uint8_t elem;
      if (!cs_thrift_list(t, type, &elem, &n) || !cs_thrift_begin(t, CS_THRIFT_STRUCT)) return false;
      for (uint32_t i = 0; i < n; i++)
        if (!skip_value(t, elem, true)) return false;
      cs_thrift_end(t);
      return true;
    }
    case CS_THRIFT_MAP: {
      if (!cs_thrift_varint(t, &u)) return false;
      if (u == 0) return true;
      if (t->p >= t->end || u > (uint64_t)(t->end - t->p)) return cs_thrift_fail(t);
      uint8_t kv = *t->p++;
      if (!cs_thrift_begin(t, CS_THRIFT_STRUCT)) return false;
      for (uint64_t i = 0; i < u; i++)
        if (!skip_value(t, kv >> 4, true) || !skip_value(t, kv & 0x0f, true)) return false;
      cs_thrift_end(t);
      return true;
    }
    case CS_THRIFT_STRUCT: {
      if (!cs_thrift_begin(t, type)) return false;
      int16_t last = 0, id;
      uint8_t ft;
      while (cs_thrift_next(t, &last, &id, &ft))
        if (!skip_value(t, ft, false)) return false;
      return !t->failed;
    }
    default: return cs_thrift_fail(t);
  }
}

bool cs_thrift_skip(cs_thrift *t, uint8_t type) { return skip_value(t, type, false); }

/* ---------------------------------------------------------------- writer */

static void put_bytes(cs_thrift_out *o, const void *p, size_t n) {
  if (o->failed) return;
  if (o->n + n > o->cap) {
    size_t cap = o->cap ? o->cap : 256;
    while (cap < o->n + n) cap *= 2;
    uint8_t *b = cs__mem_realloc(o->buf, cap);
    if (!b) {
      o->failed = true;
      return;
    }
    o->buf = b;
    o->cap = cap;
  }
  if (n) memcpy(o->buf + o->n, p, n); /* p may be NULL when n is 0 */
  o->n += n;
}

void cs_thrift_put_varint(cs_thrift_out *o, uint64_t v) {
  uint8_t b[10];
  size_t n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  put_bytes(o, b, n);
}

/* Signed to zigzag, shifting the unsigned bits (a negative value's left
** shift is undefined). */
static uint64_t zigzag_of(int64_t v) { return (uint64_t)v << 1 ^ (v < 0 ? ~(uint64_t)0 : 0); }

void cs_thrift_put_field(cs_thrift_out *o, int16_t id, uint8_t type) {
  int16_t *last = &o->last[o->depth];
  int delta = id - *last;
  if (delta > 0 && delta <= 15) {
    uint8_t b = (uint8_t)(delta << 4 | type);
    put_bytes(o, &b, 1);
  } else {
    put_bytes(o, &type, 1);
    cs_thrift_put_varint(o, zigzag_of(id));
  }
  *last = id;
}

void cs_thrift_put_i64(cs_thrift_out *o, int16_t id, uint8_t type, int64_t v) {
  cs_thrift_put_field(o, id, type);
  if (type == CS_THRIFT_I8) {
    uint8_t b = (uint8_t)v; /* a byte, not a varint */
    put_bytes(o, &b, 1);
    return;
  }
  cs_thrift_put_varint(o, zigzag_of(v));
}

void cs_thrift_put_binary(cs_thrift_out *o, int16_t id, const void *p, uint32_t n) {
  cs_thrift_put_field(o, id, CS_THRIFT_BINARY);
  cs_thrift_put_varint(o, n);
  put_bytes(o, p, n);
}

void cs_thrift_put_list(cs_thrift_out *o, int16_t id, uint8_t elem, uint32_t n) {
  cs_thrift_put_field(o, id, CS_THRIFT_LIST);
  uint8_t b = (uint8_t)((n < 15 ? n : 15) << 4 | elem);
  put_bytes(o, &b, 1);
  if (n >= 15) cs_thrift_put_varint(o, n);
}

void cs_thrift_put_raw(cs_thrift_out *o, const void *p, size_t n) { put_bytes(o, p, n); }

void cs_thrift_put_struct_begin(cs_thrift_out *o, int16_t id) {
  if (id) cs_thrift_put_field(o, id, CS_THRIFT_STRUCT);
  if (o->depth + 1 >= CS_THRIFT_MAX_DEPTH) {
    o->failed = true;
    return;
  }
  o->last[++o->depth] = 0;
}

void cs_thrift_put_struct_end(cs_thrift_out *o) {
  uint8_t stop = CS_THRIFT_STOP;
  put_bytes(o, &stop, 1);
  if (o->depth > 0) o->depth--;
}

void cs_thrift_out_free(cs_thrift_out *o) {
  cs__mem_free(o->buf);
  *o = (cs_thrift_out){0};
}
