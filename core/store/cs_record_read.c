/*
** cs_record_read.c - a record's chunks read with pread into one reused
** buffer, each checked against its checksum, for the readers that read
** every byte of a store once: compaction and colstore_export.
**
** Why not the mapping.  A reader that walks a whole store touches every
** page of the mapping for the first time, and on the hosts measured a
** fault on a file mapping costs more than copying the bytes out of the
** page cache: hashing 320 MB of a store in the page cache took 236-261 ms
** through a fresh mapping and 79-83 ms by pread into one reused 1 MiB
** buffer (docs/performance.md, "mmap against pread"; compaction's own
** figures, 149-185 against 47-63 ms for 280 MB, in "Compaction").  With
** pread the kernel copies each byte once into a buffer that stays mapped
** and warm, the check hashes it there, and the caller (compaction's batch,
** the export's format writer) reads it from the cache.  A query does not
** come here: it reads a few columns of a few records and needs them where
** they lie, for as long as its snapshot is open.
**
** The reader holds one record at a time: its chunks back to back in
** column order, each resolved into a cs_chunk (cs__chunk_resolve) as the
** store resolves it into the mapping, so a caller uses them as it would
** cs_store_chunk's.  The buffer grows to the largest record read and is
** reused for every other, so memory is one record's chunk bytes whatever
** the store's size; a record's chunk bytes are bounded by its rows and its
** TEXT/BLOB data, which the writer that made it held in memory too.  A
** grow frees the old buffer before taking the new one (nothing in it is
** needed), so the peak is the largest record, not the sum of two, and a
** failed grow is an ordinary CS_ENOMEM with the record named.  A patched
** chunk (an UPDATE's, CS_CHUNK_ABSOLUTE) is read from its patch block, so
** the record read is the record as the snapshot shows it.  A dataset's
** record is read from the part that holds it, and named by that part's
** path and record in an error.
**
** The check.  Every chunk is hashed from the buffer and compared with its
** checksum before the caller gets it, and its TEXT/BLOB offsets are
** checked before anything indexes by them (cs__verified_check_bytes, the
** read's error).  CS__READ_CHECK_EVERY hashes every chunk and leaves the
** process's record of checked chunks alone: compaction, which seals what it
** reads under fresh checksums, so it must not trust a check made before
** the bytes could have changed in place.  CS__READ_CHECK_ONCE skips the
** hash of a chunk this process has checked already (this snapshot or
** another of the file: cs__verified_known) and remembers the ones it
** hashed, so the read counts as the check a query would have made: the
** export.
*/
#include <string.h>

#include "cs_store_internal.h"

void cs__record_reader_free(cs__record_reader *rd) {
  cs__mem_free(rd->buf);
  cs__mem_free(rd->chunks);
  memset(rd, 0, sizeof *rd);
}

/* The single-file store holding record *rec of s, *rec made its own. */
static const cs_store *file_of(const cs_store *s, uint64_t *rec) {
  if (!s->parts) return s;
  uint32_t lo = 0, hi = s->n_parts; /* part_first_record[lo] <= *rec < part_first_record[hi] */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (s->part_first_record[mid] <= *rec)
      lo = mid;
    else
      hi = mid;
  }
  *rec -= s->part_first_record[lo];
  return s->parts[lo];
}

/* Room for total bytes and n_cols chunks. */
static cs_rc reserve(cs__record_reader *rd, const cs_store *f, uint64_t rec, uint64_t total, cs_err *err) {
  uint32_t nc = f->schema.n_cols;
  if (nc > rd->n_cols) {
    cs_chunk *p = cs__mem_realloc(rd->chunks, nc * sizeof *p);
    if (!p) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory reading %s", f->path);
    rd->chunks = p, rd->n_cols = nc;
  }
  if (total <= rd->cap) return CS_OK;
  cs__mem_free(rd->buf);
  rd->cap = 0;
  if (!(rd->buf = cs__mem_malloc(total)))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory reading record %llu of %s",
                      (unsigned long long)rec, f->path);
  rd->cap = total;
  return CS_OK;
}

cs_rc cs__record_read(cs__record_reader *rd, const cs_store *s, uint64_t rec, cs__read_check check,
                      cs_err *err) {
  const cs_store *f = file_of(s, &rec);
  uint32_t nc = f->schema.n_cols;
  const cs_disk_entry *e = &f->entries[rec];
  const cs_disk_chunk *dcs = &f->disk_chunks[rec * nc];
  uint64_t total = 0;
  for (uint32_t c = 0; c < nc; c++) total += dcs[c].chunk_bytes;
  cs_rc rc = reserve(rd, f, rec, total, err);
  if (rc) return rc;
  uint64_t at = 0;
  for (uint32_t c = 0; c < nc; c++) {
    const cs_disk_chunk *dc = &dcs[c];
    uint8_t *span = rd->buf + at;
    rc = cs__pread_full(f->fd, span, (size_t)dc->chunk_bytes, cs__chunk_base(e, dc) + dc->chunk_offset,
                        f->path, err);
    if (rc) return rc;
    if (check == CS__READ_CHECK_EVERY || !cs__verified_known(f, rec, c)) {
      if ((rc = cs__verified_check_bytes(f, rec, c, span, err))) return rc;
      if (check == CS__READ_CHECK_ONCE) cs__verified_remember(f, rec, c);
    }
    cs__chunk_resolve(span, dc, &rd->chunks[c]);
    at += dc->chunk_bytes;
  }
  return CS_OK;
}
