/*
** cs_flatbuf.c - the flatbuffers wire format, the encoding of Arrow IPC's
** metadata (Schema, Message, Footer): a bounds-checked reader and a small
** builder.
**
** Arrow's metadata is a few hundred bytes per message, so the reader is
** written for checking, not speed: every offset is checked against the
** bytes present before it is followed (a table's vtable, a field inside its
** table's inline size, a vector's count times its element size inside the
** buffer), and every failure marks the buffer failed (cs_fb.failed), so a
** parser reads a whole structure and checks once.  Nothing is allocated
** here: strings and vectors are pointers into the buffer, which is why a
** length field can never cause an allocation of what it claims.  Nesting is
** bounded (CS_FB_MAX_DEPTH), though flatbuffers' unsigned forward offsets
** cannot loop; the bound keeps a schema's recursion finite all the same.
**
** The builder writes back to front, as flatbuffers' own builders do: an
** object is written before the objects that refer to it, and references
** are unsigned offsets forward, so the bytes grow at the front of a buffer
** whose end stays aligned.  It knows only what Arrow's writer needs:
** tables of scalars, references and inline structs, strings, vectors of
** scalars/structs and of references.  No generated code and no flatc: the
** few tables Arrow has are read and written by field number in
** cs_arrow.c and cs_arrow_write.c, the numbers taken from Arrow's .fbs
** files (format/Schema.fbs, Message.fbs, File.fbs).
**
** Little-endian hosts only, like the rest of colstore's formats.
*/
#include <stdlib.h>
#include <string.h>

#include "cs_base_internal.h"
#include "cs_interchange_internal.h"

/* ---------------------------------------------------------------- reader */

static bool fb_fail(cs_fb *fb) { return !(fb->failed = true); }

static bool fb_u32(cs_fb *fb, uint64_t pos, uint32_t *out) {
  if (pos > fb->n || fb->n - pos < 4) return fb_fail(fb);
  memcpy(out, fb->p + pos, 4);
  return true;
}

/* The table at pos: its vtable checked (inside the buffer, a size that is
** even and at least 4, the table's inline bytes inside the buffer). */
static bool fb_table_at(cs_fb *fb, uint64_t pos, int depth, cs_fb_table *out) {
  if (depth > CS_FB_MAX_DEPTH) return fb_fail(fb);
  uint32_t soff;
  if (!fb_u32(fb, pos, &soff)) return false;
  int64_t vt = (int64_t)pos - (int64_t)(int32_t)soff;
  if (vt < 0 || (uint64_t)vt > fb->n || fb->n - (uint64_t)vt < 4) return fb_fail(fb);
  uint16_t vt_n, tbl_n;
  memcpy(&vt_n, fb->p + vt, 2);
  memcpy(&tbl_n, fb->p + vt + 2, 2);
  if (vt_n < 4 || (vt_n & 1) || fb->n - (uint64_t)vt < vt_n) return fb_fail(fb);
  if (tbl_n < 4 || fb->n - pos < tbl_n) return fb_fail(fb);
  *out = (cs_fb_table){
      .fb = fb, .pos = (uint32_t)pos, .vt = (uint32_t)vt, .vt_n = vt_n, .tbl_n = tbl_n, .depth = depth};
  return true;
}

bool cs_fb_root(cs_fb *fb, cs_fb_table *out) {
  uint32_t off;
  if (fb->n > UINT32_MAX) return fb_fail(fb);
  if (!fb_u32(fb, 0, &off)) return false;
  return fb_table_at(fb, off, 0, out);
}

/* Where field id's bytes are, size of them checked inside the table; 0
** when the field is absent (a table's first 4 bytes are its vtable offset,
** so no field sits at 0). */
static uint32_t fb_field(const cs_fb_table *t, int id, uint32_t size) {
  if (!t->fb || id < 0) return 0;
  uint32_t slot = 4 + 2 * (uint32_t)id;
  if (slot + 2 > t->vt_n) return 0;
  uint16_t off;
  memcpy(&off, t->fb->p + t->vt + slot, 2);
  if (off == 0) return 0;
  if (off < 4 || (uint32_t)off + size > t->tbl_n) return fb_fail(t->fb), 0;
  return t->pos + off;
}

bool cs_fb_has(const cs_fb_table *t, int id) { return fb_field(t, id, 1) != 0; }

int64_t cs_fb_int(const cs_fb_table *t, int id, int width, bool is_signed, int64_t dflt) {
  uint32_t pos = fb_field(t, id, (uint32_t)width);
  if (!pos) return dflt;
  const uint8_t *p = t->fb->p + pos;
  switch (width) {
    case 1: return is_signed ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return is_signed ? (int64_t)(int16_t)v : (int64_t)v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return is_signed ? (int64_t)(int32_t)v : (int64_t)v;
    }
    default: {
      int64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
}

/* The target of the offset field id: its position, or 0 when absent. */
static uint64_t fb_ref(const cs_fb_table *t, int id) {
  uint32_t pos = fb_field(t, id, 4), off;
  if (!pos || !fb_u32(t->fb, pos, &off)) return 0;
  if (off == 0) return fb_fail(t->fb), 0;
  return (uint64_t)pos + off;
}

bool cs_fb_table_field(const cs_fb_table *t, int id, cs_fb_table *out) {
  uint64_t pos = fb_ref(t, id);
  return pos && fb_table_at(t->fb, pos, t->depth + 1, out);
}

bool cs_fb_string(const cs_fb_table *t, int id, const char **out, uint32_t *out_n) {
  uint64_t pos = fb_ref(t, id);
  uint32_t n;
  if (!pos || !fb_u32(t->fb, pos, &n)) return false;
  if (t->fb->n - pos - 4 < n) return fb_fail(t->fb);
  *out = (const char *)t->fb->p + pos + 4;
  *out_n = n;
  return true;
}

bool cs_fb_vector(const cs_fb_table *t, int id, uint32_t elem_size, cs_fb_vec *out) {
  uint64_t pos = fb_ref(t, id);
  uint32_t n;
  if (!pos || !fb_u32(t->fb, pos, &n)) return false;
  if ((t->fb->n - pos - 4) / elem_size < n) return fb_fail(t->fb);
  *out =
      (cs_fb_vec){.fb = t->fb, .pos = (uint32_t)pos + 4, .n = n, .elem_size = elem_size, .depth = t->depth};
  return true;
}

bool cs_fb_vec_table(const cs_fb_vec *v, uint32_t i, cs_fb_table *out) {
  uint32_t off;
  if (i >= v->n || v->elem_size != 4) return fb_fail(v->fb);
  uint64_t pos = (uint64_t)v->pos + 4ull * i;
  if (!fb_u32(v->fb, pos, &off)) return false;
  if (off == 0) return fb_fail(v->fb);
  return fb_table_at(v->fb, pos + off, v->depth + 1, out);
}

const uint8_t *cs_fb_vec_elem(const cs_fb_vec *v, uint32_t i) {
  if (i >= v->n) return fb_fail(v->fb), NULL;
  return v->fb->p + v->pos + (uint64_t)v->elem_size * i;
}

/* --------------------------------------------------------------- builder */

/* Room for extra more bytes at the front, growing (and moving the bytes
** to the new end) as needed. */
static bool fbb_room(cs_fbb *b, size_t extra) {
  if (b->failed) return false;
  if (b->cap - b->n >= extra) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->n < extra) cap *= 2;
  uint8_t *p = cs__mem_malloc(cap);
  if (!p) return !(b->failed = true);
  if (b->n) memcpy(p + cap - b->n, b->buf + b->cap - b->n, b->n);
  cs__mem_free(b->buf);
  b->buf = p;
  b->cap = cap;
  return true;
}

static void fbb_put(cs_fbb *b, const void *p, size_t n) {
  if (n == 0 || !fbb_room(b, n)) return;
  b->n += n;
  memcpy(b->buf + b->cap - b->n, p, n);
}

/* Pads so that, after extra more bytes, the size is a multiple of align. */
static void fbb_align(cs_fbb *b, size_t align, size_t extra) {
  static const uint8_t zero[8];
  size_t pad = (align - (b->n + extra) % align) % align;
  fbb_put(b, zero, pad);
  if (align > b->max_align) b->max_align = align;
}

static void fbb_u32(cs_fbb *b, uint32_t v) {
  fbb_align(b, 4, 4);
  fbb_put(b, &v, 4);
}

/* An offset to ref, written at the front: its distance forward. */
static void fbb_ref(cs_fbb *b, uint32_t ref) {
  fbb_align(b, 4, 4);
  fbb_u32(b, (uint32_t)(b->n + 4 - ref));
}

uint32_t cs_fbb_string(cs_fbb *b, const char *s, size_t n) {
  fbb_align(b, 4, n + 1);
  fbb_put(b, "", 1);
  fbb_put(b, s, n);
  fbb_u32(b, (uint32_t)n);
  return (uint32_t)b->n;
}

uint32_t cs_fbb_vector(cs_fbb *b, const void *elems, uint32_t count, uint32_t elem_size, uint32_t align) {
  size_t bytes = (size_t)count * elem_size;
  fbb_align(b, 4, bytes);
  fbb_align(b, align, bytes);
  fbb_put(b, elems, bytes);
  fbb_u32(b, count);
  return (uint32_t)b->n;
}

uint32_t cs_fbb_vector_refs(cs_fbb *b, const uint32_t *refs, uint32_t count) {
  fbb_align(b, 4, 4 * (size_t)count);
  for (uint32_t i = count; i-- > 0;) fbb_ref(b, refs[i]);
  fbb_u32(b, count);
  return (uint32_t)b->n;
}

void cs_fbb_table_begin(cs_fbb *b) {
  memset(b->fields, 0, sizeof b->fields);
  b->n_fields = 0;
  b->table_start = b->n;
}

static void fbb_slot(cs_fbb *b, int id) {
  if (id < 0 || id >= CS_FBB_MAX_FIELDS) {
    b->failed = true;
    return;
  }
  b->fields[id] = (uint32_t)b->n;
  if (id + 1 > b->n_fields) b->n_fields = id + 1;
}

void cs_fbb_add_int(cs_fbb *b, int id, int64_t v, int width) {
  fbb_align(b, (size_t)width, (size_t)width);
  fbb_put(b, &v, (size_t)width); /* little-endian: the low bytes */
  fbb_slot(b, id);
}

void cs_fbb_add_ref(cs_fbb *b, int id, uint32_t ref) {
  fbb_ref(b, ref);
  fbb_slot(b, id);
}

void cs_fbb_add_struct(cs_fbb *b, int id, const void *p, size_t size, size_t align) {
  fbb_align(b, align, size);
  fbb_put(b, p, size);
  fbb_slot(b, id);
}

uint32_t cs_fbb_table_end(cs_fbb *b) {
  fbb_align(b, 4, 4);
  int32_t placeholder = 0;
  fbb_put(b, &placeholder, 4);
  uint32_t tpos = (uint32_t)b->n;
  uint16_t vt[2 + CS_FBB_MAX_FIELDS];
  vt[0] = (uint16_t)(4 + 2 * b->n_fields);
  vt[1] = (uint16_t)(tpos - b->table_start);
  for (int i = 0; i < b->n_fields; i++) vt[2 + i] = b->fields[i] ? (uint16_t)(tpos - b->fields[i]) : 0;
  fbb_align(b, 2, vt[0]);
  fbb_put(b, vt, vt[0]);
  if (b->failed) return 0;
  int32_t soff = (int32_t)(b->n - tpos); /* the vtable lies before the table */
  memcpy(b->buf + b->cap - tpos, &soff, 4);
  return tpos;
}

bool cs_fbb_finish(cs_fbb *b, uint32_t root, const uint8_t **out, size_t *out_n) {
  size_t align = b->max_align > 8 ? b->max_align : 8;
  fbb_align(b, align, 4);
  fbb_ref(b, root);
  if (b->failed) return false;
  *out = b->buf + b->cap - b->n;
  *out_n = b->n;
  return true;
}

void cs_fbb_reset(cs_fbb *b) {
  b->n = 0;
  b->max_align = 1;
  b->failed = false;
}

void cs_fbb_free(cs_fbb *b) {
  cs__mem_free(b->buf);
  memset(b, 0, sizeof *b);
}
