/*
** cs_delete.c - deleted rows as the readers see them: the checks of a
** deletion vector at open, the accessors, and the two filters every read
** path uses (a mask, a list of positions).
**
** A deleted row keeps its position (docs/format.md 14): rowids, the _rows
** range and the _mask length never change, so nothing that addresses rows
** needs renumbering, and a delete costs one small block per touched record.
** The price is that every read path must drop deleted positions itself.
** Two shapes cover the queries: a byte mask (scans, predicates) is cleared
** where the vector has bits, and a list of positions (rowid =, IN, _rows,
** ordering) is compacted.  Both walk the vector a 64-bit word at a time and
** touch the output only at set bits, so a record without deletions costs a
** NULL test and a sparse vector costs little more than reading it; the
** one-test-per-record shape keeps the no-deletion path exactly as fast as
** before (the rule: a record with no deletions pays nothing).  A third
** shape is for the readers that copy a whole record's live rows
** (compaction, colstore_export): its runs of live rows, one at a time
** (cs__dels_live_run), found a word at a time with a count of trailing
** zeros, so a record with a few deletions is a few runs and a few words
** read, and a record without is one run.
**
** Why the vectors are checked at open, in full: a reader uses them in every
** scan, and a damaged bit would silently show a deleted row or hide a live
** one; unlike chunk data there is no later point where a checksum failure
** could be reported as such.  The bitmaps are an eighth of a byte per row
** of the records that have deletions, so the check stays small beside the
** data it protects.  The vectors are read in the mapping (or the
** cache=memory copy) and never copied: they lie below data_end, which no
** later commit rewrites.
**
** The preamble helpers are here because the torn-upgrade rule (14.2)
** exists only for deletions: the first deleting transaction rewrites the
** preamble's version, the one committed byte range ever rewritten.
*/
#include <pthread.h>
#include <string.h>

#include "cs_store_internal.h"

/* --------------------------------------------------------------- checks */

static uint64_t popcount_bytes(const uint8_t *p, uint64_t n) {
  uint64_t c = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    c += (uint64_t)__builtin_popcountll(w);
  }
  for (; i < n; i++) c += (uint64_t)__builtin_popcount(p[i]);
  return c;
}

cs_rc cs__delvec_check(const cs_store *s, uint64_t rec, const cs_disk_entry *e, const cs_disk_entry_ext *x,
                       uint64_t limit, cs_err *err) {
  const char *why;
  uint64_t bb = cs__delvec_block_bytes(e->n_rows), off = x->dv_offset;
  if (off % CS_ALIGN || off < e->record_offset + e->record_bytes || off > limit || bb > limit - off) {
    why = "lies outside the committed data";
    goto bad;
  }
  const cs_disk_delvec *h = (const cs_disk_delvec *)(const void *)(s->map + off);
  if (memcmp(h->magic, CS_MAGIC_DELVEC, CS_MAGIC_BYTES) != 0 || h->checksum != cs__hash(h, 56)) {
    why = "has a damaged header";
    goto bad;
  }
  if (h->record_offset != e->record_offset || h->n_rows != e->n_rows || h->block_bytes != bb ||
      h->n_deleted != x->n_deleted || h->bitmap_checksum != x->dv_checksum || x->n_deleted == 0 ||
      x->n_deleted > e->n_rows) {
    why = "does not match its directory entry";
    goto bad;
  }
  const uint8_t *bits = (const uint8_t *)(h + 1);
  uint64_t span = bb - sizeof *h, used = (e->n_rows + 7) / 8;
  if (cs__hash(bits, span) != h->bitmap_checksum) {
    why = "fails its checksum";
    goto bad;
  }
  bool tail_clear = (e->n_rows & 7) == 0 || (bits[used - 1] >> (e->n_rows & 7)) == 0;
  for (uint64_t i = used; tail_clear && i < span; i++) tail_clear = bits[i] == 0;
  if (!tail_clear || popcount_bytes(bits, used) != h->n_deleted) {
    why = "disagrees with its deleted count";
    goto bad;
  }
  return CS_OK;
bad:
  return cs_err_set(err, CS_ECORRUPT, "colstore: %s: record %llu: the deletion vector at offset %llu %s",
                    s->path, (unsigned long long)rec, (unsigned long long)off, why);
}

/* With a sink (cs_store_verify_source) each failure is reported and the
** record's vector left unresolved, and the next is checked. */
cs_rc cs__dels_resolve(cs_store *s, uint64_t limit, cs_err *err) {
  cs__damage_sink *sink = s->damage;
  uint64_t total = 0;
  for (uint64_t r = 0; r < s->n_records; r++) total += s->ext[r].n_deleted;
  if (total != s->n_deleted) {
    cs_rc rc = cs_err_set(err, CS_ECORRUPT,
                          "colstore: %s: the footer counts %llu deleted rows but its records hold %llu",
                          s->path, (unsigned long long)s->n_deleted, (unsigned long long)total);
    if (!sink) return rc;
    cs__damage_note(sink, s, CS_DAMAGE_DELETIONS, CS_DAMAGE_NO_RECORD, CS_DAMAGE_NO_COLUMN, err);
  }
  if (total == 0) return CS_OK;
  s->dels = cs__mem_calloc(s->n_records, sizeof *s->dels);
  if (!s->dels)
    return cs_err_set(err, CS_ENOMEM, "colstore: %s: out of memory for the deletions of %llu records",
                      s->path, (unsigned long long)s->n_records);
  for (uint64_t r = 0; r < s->n_records; r++) {
    const cs_disk_entry_ext *x = &s->ext[r];
    cs_rc rc = CS_OK;
    if (x->dv_offset == 0) {
      if (x->n_deleted || x->dv_checksum)
        rc = cs_err_set(err, CS_ECORRUPT,
                        "colstore: %s: record %llu counts deleted rows but has no deletion vector", s->path,
                        (unsigned long long)r);
    } else {
      rc = cs__delvec_check(s, r, &s->entries[r], x, limit, err);
    }
    if (rc && !sink) return rc;
    if (rc) cs__damage_note(sink, s, CS_DAMAGE_DELETIONS, r, CS_DAMAGE_NO_COLUMN, err);
    if (rc || x->dv_offset == 0) continue;
    s->dels[r].bits = s->map + x->dv_offset + sizeof(cs_disk_delvec);
    s->dels[r].n_deleted = x->n_deleted;
  }
  return CS_OK;
}

/* ------------------------------------------------------------ accessors */

uint64_t cs_store_live_rows(const cs_store *s) { return s->n_rows - s->n_deleted; }
uint32_t cs_store_format_version(const cs_store *s) { return s->format_version; }
uint64_t cs_store_free_bytes(const cs_store *s) { return s->free_bytes; }
uint64_t cs_store_record_deleted(const cs_store *s, uint64_t rec) {
  return s->dels ? s->dels[rec].n_deleted : 0;
}
const uint8_t *cs_store_record_deletions(const cs_store *s, uint64_t rec) {
  return s->dels ? s->dels[rec].bits : NULL;
}

bool cs_store_row_deleted(const cs_store *s, uint64_t row) {
  if (!s->dels) return false;
  uint64_t rec = cs__find_record(s->first_rows, s->n_records, row);
  const uint8_t *bits = s->dels[rec].bits;
  uint64_t local = row - s->first_rows[rec];
  return bits && ((bits[local >> 3] >> (local & 7)) & 1);
}

/* -------------------------------------------------------------- filters */

/* Word w of a vector (bytes [8w, 8w + 8) lie inside its 64-byte padding). */
static inline uint64_t dv_word(const uint8_t *bits, uint64_t w) {
  uint64_t x;
  memcpy(&x, bits + w * 8, 8);
  return x;
}

/* Word w of a vector restricted to the record positions [l0, l1). */
static inline uint64_t dv_word_in(const uint8_t *bits, uint64_t w, uint64_t l0, uint64_t l1) {
  uint64_t x = dv_word(bits, w);
  if (w * 64 < l0) x &= ~(uint64_t)0 << (l0 - w * 64);
  if (l1 - w * 64 < 64) x &= ((uint64_t)1 << (l1 - w * 64)) - 1;
  return x;
}

/* 0xFF in byte i for each bit i of b: eight deleted-bits to mask bytes. */
static uint64_t spread_byte(unsigned b) {
  uint64_t w = 0;
  for (unsigned i = 0; i < 8; i++)
    if ((b >> i) & 1) w |= (uint64_t)0xFF << (8 * i);
  return w;
}

static uint64_t spread_table[256];
static void spread_init(void) {
  for (unsigned b = 0; b < 256; b++) spread_table[b] = spread_byte(b);
}

uint64_t cs_store_mask_deleted(const cs_store *s, uint64_t first, uint64_t n, uint8_t *mask) {
  if (!s->dels || n == 0) return 0;
  /* A word of the vector with three or more bits clears its 64 mask bytes eight
  ** at a time through a table, without a branch; a sparse one a byte per
  ** bit.  At 10% deleted (a bit in nearly every word) 10M positions took
  ** 1.79 ms a byte per bit, 1.04 ms by words; a branch per byte group
  ** instead took 4.95 ms (mispredicted; docs/performance.md). */
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, spread_init);
  uint64_t cleared = 0, end = first + n;
  for (uint64_t rec = cs__find_record(s->first_rows, s->n_records, first);
       rec < s->n_records && s->first_rows[rec] < end; rec++) {
    const uint8_t *bits = s->dels[rec].bits;
    if (!bits) continue;
    uint64_t base = s->first_rows[rec];
    uint64_t l0 = first > base ? first - base : 0,
             l1 = (end < s->first_rows[rec + 1] ? end : s->first_rows[rec + 1]) - base;
    for (uint64_t w = l0 / 64; w * 64 < l1; w++) {
      uint64_t x = dv_word_in(bits, w, l0, l1);
      if (!x) continue;
      unsigned bits_set = (unsigned)__builtin_popcountll(x);
      cleared += bits_set;
      /* The word's first position, as an index into mask: below 0 (wrapped)
      ** when the range starts inside the word, so it is added to mask only
      ** with the bit's place (a pointer before mask is undefined). */
      uint64_t at = base + w * 64 - first;
      if (bits_set > 2 && w * 64 >= l0 && w * 64 + 64 <= l1) {
        /* a word inside the range with several bits: 64 mask bytes, no branch */
        uint8_t *m = mask + at;
        for (unsigned g = 0; g < 8; g++) {
          uint64_t v;
          memcpy(&v, m + 8 * g, 8);
          v &= ~spread_table[(x >> (8 * g)) & 0xFF];
          memcpy(m + 8 * g, &v, 8);
        }
        continue;
      }
      while (x) {
        mask[at + (uint64_t)__builtin_ctzll(x)] = 0;
        x &= x - 1;
      }
    }
  }
  return cleared;
}

uint64_t cs_store_deleted_in(const cs_store *s, uint64_t first, uint64_t n) {
  if (!s->dels || n == 0) return 0;
  uint64_t count = 0, end = first + n;
  for (uint64_t rec = cs__find_record(s->first_rows, s->n_records, first);
       rec < s->n_records && s->first_rows[rec] < end; rec++) {
    const uint8_t *bits = s->dels[rec].bits;
    if (!bits) continue;
    uint64_t base = s->first_rows[rec], rec_end = s->first_rows[rec + 1];
    if (first <= base && end >= rec_end) {
      count += s->dels[rec].n_deleted; /* the whole record */
      continue;
    }
    uint64_t l0 = first > base ? first - base : 0, l1 = (end < rec_end ? end : rec_end) - base;
    for (uint64_t w = l0 / 64; w * 64 < l1; w++)
      count += (uint64_t)__builtin_popcountll(dv_word_in(bits, w, l0, l1));
  }
  return count;
}

/* The first position in [i, n) whose bit is deleted (true) or live
** (false), or n when there is none; a word of the vector at a time.  The
** bits past the rows are zero, live to the search, hence the cap at n. */
static uint64_t dv_find(const uint8_t *bits, uint64_t i, uint64_t n, bool deleted) {
  uint64_t flip = deleted ? 0 : ~(uint64_t)0;
  for (uint64_t w = i / 64; w * 64 < n; w++) {
    uint64_t x = dv_word(bits, w) ^ flip;
    if (w == i / 64) x &= ~(uint64_t)0 << (i & 63);
    if (x) {
      uint64_t at = w * 64 + (uint64_t)__builtin_ctzll(x);
      return at < n ? at : n;
    }
  }
  return n;
}

bool cs__dels_live_run(const uint8_t *bits, uint64_t n_rows, uint64_t *at, uint64_t *out_from) {
  uint64_t from = bits ? dv_find(bits, *at, n_rows, false) : *at;
  if (from >= n_rows) return false;
  *out_from = from;
  *at = bits ? dv_find(bits, from, n_rows, true) : n_rows;
  return true;
}

uint64_t cs_store_filter_deleted(const cs_store *s, uint64_t *rows, uint64_t n) {
  if (!s->dels) return n;
  uint64_t kept = 0, rec = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t row = rows[i];
    /* Ascending lists stay in the record they were in: no search. */
    if (row < s->first_rows[rec] || row >= s->first_rows[rec + 1])
      rec = cs__find_record(s->first_rows, s->n_records, row);
    const uint8_t *bits = s->dels[rec].bits;
    uint64_t local = row - s->first_rows[rec];
    rows[kept] = row;
    kept += !(bits && ((bits[local >> 3] >> (local & 7)) & 1));
  }
  return kept;
}
