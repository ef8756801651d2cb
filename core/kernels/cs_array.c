/*
** cs_array.c - a column handed out whole, as colstore_array() returns it:
** the values (or the bytes of TEXT/BLOB values), a byte of validity per
** row, and int64 offsets, for every live row or for a list of positions.
**
** Why a kernel of its own rather than a loop over the scan cursor: a
** binding that wants ten million floats wants one memcpy-class pass, not
** ten million xColumn calls.  The store already holds each record's column
** as one array in exactly the layout handed out (values at their width,
** NULLs stored as zeros, TEXT/BLOB as offsets and bytes), so reading every
** live row is a walk over the records copying runs: a record without
** deletions is one run, a record with deletions is split at its deleted
** positions, found a 64-bit word of the deletion vector at a time.  A list
** of positions (a _rows or _mask selection) goes through the gathers
** (cs_gather_rows) for fixed-width values and through a per-position
** lookup for the rest.
**
** Two things are not trusted to the writer.  A NULL value's slot is zeroed
** (and a NULL TEXT/BLOB value given no bytes) on the way out, because the
** contract says "0 where NULL" and a file from another writer may hold
** anything there.  And TEXT/BLOB offsets are checked as they are read
** (non-decreasing, inside the chunk's bytes) even when the table does not
** verify chunks on read, so a damaged file gives CS_ECORRUPT, never a read
** outside a mapping; the output buffer's capacity is checked too, so a
** size and a read that disagreed could not overrun it.
**
** The output buffer is the caller's (ext/ hands SQLite a cs_mem_big_alloc
** block, whose pages are reused from query to query).
*/
#include "cs_kernels_internal.h"

typedef struct array_job {
  const cs_store *s;
  uint32_t col;
  cs_array_part part;
  size_t w;             /* bytes a value; 0 for TEXT/BLOB */
  uint8_t *out;         /* NULL: only count */
  uint64_t cap;         /* bytes at out */
  uint64_t rows, bytes; /* rows handed out so far; bytes of TEXT/BLOB values so far */
  uint64_t need;        /* bytes the part takes so far */
  cs_rc rc;
  cs_err *err;
} array_job;

static bool job_fail_corrupt(array_job *j, uint64_t rec, uint64_t local, const char *what) {
  if (j->rc == CS_OK)
    j->rc = cs_err_set(j->err, CS_ECORRUPT, "colstore: %s: column %s, record %llu, row %llu: %s",
                       cs_store_path(j->s), j->s->schema.cols[j->col].name, (unsigned long long)rec,
                       (unsigned long long)local, what);
  return false;
}

/* Room for `bytes` more at out (when writing). */
static bool job_room(array_job *j, uint64_t bytes) {
  if (j->out && j->need + bytes > j->cap) {
    if (j->rc == CS_OK)
      j->rc = cs_err_set(j->err, CS_ECORRUPT, "colstore: column %s of %s changed size while it was read",
                         j->s->schema.cols[j->col].name, cs_store_path(j->s));
    return false;
  }
  return true;
}

/* The byte length of row local of a TEXT/BLOB chunk (0 for a NULL), its
** offsets checked. */
static bool varlen_len(array_job *j, uint64_t rec, const cs_chunk *ch, uint64_t local, int64_t *start,
                       uint64_t *len) {
  int64_t a = ch->offsets[local], b = ch->offsets[local + 1];
  if (a < 0 || b < a || (uint64_t)b > ch->data_bytes)
    return job_fail_corrupt(j, rec, local, "offsets out of order");
  *start = a;
  *len = cs_chunk_is_valid(ch, local) ? (uint64_t)(b - a) : 0;
  return true;
}

/* Rows [local, local + take) of record rec, in order. */
static bool job_run(array_job *j, uint64_t rec, uint64_t local, uint64_t take) {
  const cs_chunk *ch = cs_store_chunk(j->s, rec, j->col);
  if (j->part == CS_ARRAY_VALID) {
    if (!job_room(j, take)) return false;
    if (j->out) cs__mask_from_bits(ch->validity, local, take, j->out + j->need);
    j->need += take;
  } else if (j->w) {
    uint64_t bytes = take * j->w;
    if (!job_room(j, bytes)) return false;
    if (j->out) {
      uint8_t *o = j->out + j->need;
      memcpy(o, (const uint8_t *)ch->data + local * j->w, bytes);
      if (ch->validity && ch->null_count)
        for (uint64_t i = 0; i < take; i++)
          if (!cs__valid_bit(ch->validity, local + i)) memset(o + i * j->w, 0, j->w);
    }
    j->need += bytes;
  } else {
    bool whole = !ch->validity || !ch->null_count; /* the run's bytes are one span */
    for (uint64_t i = 0; i < take; i++) {
      int64_t start;
      uint64_t len;
      if (!varlen_len(j, rec, ch, local + i, &start, &len)) return false;
      if (j->part == CS_ARRAY_OFFSETS) {
        if (!job_room(j, 8)) return false;
        int64_t end = (int64_t)(j->bytes + len);
        if (j->out) memcpy(j->out + j->need, &end, 8);
        j->need += 8;
      } else if (!whole && len) {
        if (!job_room(j, len)) return false;
        if (j->out) memcpy(j->out + j->need, (const uint8_t *)ch->data + start, len);
        j->need += len;
      }
      j->bytes += len;
    }
    if (j->part == CS_ARRAY_VALUES && whole) {
      uint64_t from = (uint64_t)ch->offsets[local], len = (uint64_t)ch->offsets[local + take] - from;
      if (!job_room(j, len)) return false;
      if (j->out && len) memcpy(j->out + j->need, (const uint8_t *)ch->data + from, len);
      j->need += len;
    }
  }
  j->rows += take;
  return true;
}

/* The first position at or after i (< len) whose bit in bits is `bit`, or
** len: a word at a time (the vector is zero past len, so a search for a 1
** stops there and one for a 0 is capped). */
static uint64_t next_bit(const uint8_t *bits, uint64_t i, uint64_t len, int bit) {
  while (i < len) {
    uint64_t w = cs__load64(bits + (i >> 6) * 8);
    if (!bit) w = ~w;
    w >>= (i & 63);
    if (w) {
      i += (uint64_t)__builtin_ctzll(w);
      return i < len ? i : len;
    }
    i = (i | 63) + 1;
  }
  return len;
}

/* Every live row, record by record, a run between deleted positions at a
** time. */
static void job_live(array_job *j) {
  const cs_store *s = j->s;
  for (uint64_t r = 0; r < s->n_records; r++) {
    uint64_t len = s->first_rows[r + 1] - s->first_rows[r];
    const uint8_t *dels = cs_store_record_deletions(s, r);
    if (!dels) {
      if (len && !job_run(j, r, 0, len)) return;
      continue;
    }
    for (uint64_t i = next_bit(dels, 0, len, 0); i < len;) {
      uint64_t e = next_bit(dels, i, len, 1);
      if (!job_run(j, r, i, e - i)) return;
      i = next_bit(dels, e, len, 0);
    }
  }
}

/* rows[0, n) one at a time (TEXT/BLOB, and validity). */
static void job_list(array_job *j, const uint64_t *rows, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    uint64_t row = rows[i], rec = cs__locate(j->s, row);
    if (!job_run(j, rec, row - j->s->first_rows[rec], 1)) return;
  }
}

static cs_rc job_start(array_job *j, const cs_store *s, uint32_t col, cs_array_part part, void *out,
                       uint64_t cap, cs_err *err) {
  memset(j, 0, sizeof *j);
  j->s = s, j->col = col, j->part = part, j->out = out, j->cap = cap, j->err = err;
  if (col >= s->schema.n_cols)
    return cs_err_set(err, CS_EINVAL, "colstore: column %u of a store of %u columns", col, s->schema.n_cols);
  j->w = cs_type_width(s->schema.cols[col].type);
  if (part == CS_ARRAY_OFFSETS && j->w)
    return cs_err_set(err, CS_EINVAL, "colstore: column %s is %s, which has no offsets (TEXT and BLOB have)",
                      s->schema.cols[col].name, cs_type_name(s->schema.cols[col].type));
  if (part == CS_ARRAY_OFFSETS) {
    /* offsets start at 0 */
    if (!job_room(j, 8)) return j->rc;
    if (out) memset(out, 0, 8);
    j->need = 8;
  }
  return CS_OK;
}

cs_rc cs_array_size(const cs_store *s, uint32_t col, cs_array_part part, const uint64_t *rows, uint64_t n,
                    uint64_t *out_bytes, cs_err *err) {
  array_job j;
  cs_rc rc = job_start(&j, s, col, part, NULL, 0, err);
  if (rc != CS_OK) return rc;
  uint64_t count = rows ? n : cs_store_live_rows(s);
  if (part == CS_ARRAY_VALID)
    j.need = count;
  else if (j.w)
    j.need = count * j.w;
  else if (rows)
    job_list(&j, rows, n);
  else
    job_live(&j);
  *out_bytes = j.need;
  return j.rc;
}

cs_rc cs_array_read(const cs_store *s, uint32_t col, cs_array_part part, const uint64_t *rows, uint64_t n,
                    void *out, uint64_t cap, cs_err *err) {
  array_job j;
  cs_rc rc = job_start(&j, s, col, part, out, cap, err);
  if (rc != CS_OK) return rc;
  if (!rows) {
    job_live(&j);
    return j.rc;
  }
  if (part != CS_ARRAY_VALUES || !j.w) {
    job_list(&j, rows, n);
    return j.rc;
  }
  /* Fixed-width values of a list: the gather kernel, then the NULL slots
  ** zeroed from a validity it fills beside them. */
  if (!job_room(&j, n * j.w)) return j.rc;
  if (!s->schema.cols[col].nullable) {
    cs_gather_rows(s, col, rows, n, out, NULL);
    return CS_OK;
  }
  uint8_t *valid = cs_mem_big_alloc(n ? n : 1);
  if (!valid)
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory reading %llu rows of column %s",
                      (unsigned long long)n, s->schema.cols[col].name);
  cs_gather_rows(s, col, rows, n, out, valid);
  uint8_t *o = out;
  for (uint64_t i = 0; i < n; i++)
    if (!valid[i]) memset(o + i * j.w, 0, j.w);
  cs_mem_big_free(valid);
  return CS_OK;
}
