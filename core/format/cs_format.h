/*
** cs_format.h - the on-disk layout of a colstore file, format versions 1 and 2.
**
** Everything is little-endian; every offset and count is 64-bit, so stores
** beyond 2^31 rows and 4 GiB need nothing special.  Structures are written
** as they are laid out here (this build refuses big-endian hosts).
**
**   offset 0     +------------------------------+
**                | preamble (64 B)              |  magic, version, schema ptr
**   offset 512   +------------------------------+
**                | commit slot 0 (64 B)         |  even generations
**   offset 1024  +------------------------------+
**                | commit slot 1 (64 B)         |  odd generations
**   offset 1536  +------------------------------+
**                | schema block                 |  n_cols, (type, nullable, name)*
**   data_offset  +------------------------------+  (64-byte aligned)
**                | record 0                     |
**                |   record header (64 B)       |
**                |   chunk descriptor * n_cols  |  88 B each, padded to 64
**                |   column chunks              |  each buffer 64-byte aligned
**                | record 1 ...                 |
**   data_end     +------------------------------+
**                | footer: header (64 B)        |  the record directory
**                |   (entry (32 B) +            |
**                |    chunk descriptor * n_cols) * n_records
**                +------------------------------+
**                | commit seal (64 B)           |  a copy of the commit slot
**                +------------------------------+
**
** Why two commit slots: the commit point is the write of one small slot
** (LMDB's meta pages).  A transaction writes its records at data_end, over
** the previous footer, then a new footer after them, fsyncs, and only then
** writes the slot of the new generation (the other slot keeps the previous
** generation intact) and fsyncs again.  A crash at any instant leaves at
** least one valid slot naming a committed data_end; records past it are
** ignored even when complete, and records before it are never rewritten.
** If the footer that slot names was overwritten or damaged, open rebuilds
** the directory by walking the self-describing record headers up to
** data_end.  Each commit rewrites only one footer in place of the old one,
** so the file grows linearly with commits.
**
** Why a seal after the footer: when both slots are lost (media damage, a
** double fault outside the crash model), open scans the records, and a
** complete footer after them does not prove the transaction committed:
** prepare writes it before the commit point.  The commit writes a copy of
** its slot (magic CSSEALED) right after the footer, beside the slot and
** before the same fsync, so the scan keeps the newest generation only if
** its seal is there; a prepared transaction that never committed has no
** seal and is never resurrected.  Older readers ignore bytes past the
** footer and the record header's flags, so the seal needs no new version;
** records say whether their writer seals (CS_RECORD_SEALED), so the
** files of older writers keep the rule they were written under.
**
** Version 2 (docs/format.md, section 14) adds deletions without rewriting
** a committed byte: a transaction that deletes rows appends, per record it
** touches, a deletion-vector block (CSDELVEC: header + bitmap, 1 = deleted,
** cumulative) in the data region, where a record would go, and a footer of
** layout 2 whose entry per record points at the newest vector.  The commit
** is the slot write, as for an append.  UPDATE works the same way: a
** patch block (CSPATCHS) per touched record carries a new chunk for each
** changed column, and the footer entry's descriptor for that column is the
** patch's own (CS_CHUNK_ABSOLUTE: its offsets count from the file, and
** patch_back leads back to the block header, which the reader checks).
** The record's old chunk is never touched: it becomes free space, counted
** in the footer, and a snapshot that still points at it keeps reading it.
** A file is created in version 1 and upgraded by its first deleting or
** updating transaction, which rewrites the preamble's version before the
** commit point, so an older reader refuses it with CS_EVERSION.
**
** A column chunk is Arrow-shaped: [validity bitmap][offsets][data], each
** part starting on a 64-byte boundary and zero-padded; the bitmap is
** LSB-first with 1 = valid and is absent when the chunk has no NULLs; TEXT
** and BLOB use int64 offsets (Arrow's LargeUtf8/LargeBinary).  The chunk's
** XXH3-64 covers its whole span, padding included.
*/
#ifndef CS_FORMAT_H
#define CS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "cs_base_internal.h" /* cs__hash, the format's checksum */

#define CS_ALIGN 64u
#define CS_MAGIC_FILE \
  "\x89"              \
  "CST\r\n\x1a\n" /* PNG-style: catches text-mode damage */
#define CS_MAGIC_SLOT "CSCOMMIT"
#define CS_MAGIC_RECORD "CSRECORD"
#define CS_MAGIC_FOOTER "CSFOOTER"
#define CS_MAGIC_SEAL "CSSEALED"   /* a cs_disk_slot after the footer */
#define CS_MAGIC_DELVEC "CSDELVEC" /* version 2: a record's deletion vector */
#define CS_MAGIC_PATCH "CSPATCHS"  /* version 2: a record's replaced chunks (UPDATE) */
#define CS_SEAL_BYTES 64u
#define CS_MAGIC_BYTES 8

#define CS_SLOT0_OFFSET 512u
#define CS_SLOT1_OFFSET 1024u
#define CS_SCHEMA_OFFSET 1536u

typedef struct cs_disk_preamble {
  char magic[8];            /* CS_MAGIC_FILE */
  uint32_t version;         /* CS_FORMAT_VERSION */
  uint32_t flags;           /* 0 in version 1 */
  uint64_t schema_offset;   /* CS_SCHEMA_OFFSET */
  uint64_t schema_bytes;    /* size of the schema block */
  uint64_t data_offset;     /* first record; 64-byte aligned */
  uint64_t schema_checksum; /* XXH3-64 of the schema block */
  uint64_t reserved;        /* 0 */
  uint64_t checksum;        /* XXH3-64 of the 56 bytes above */
} cs_disk_preamble;

typedef struct cs_disk_slot {
  char magic[8];          /* CS_MAGIC_SLOT */
  uint64_t generation;    /* commit number, 1 for a new file */
  uint64_t data_end;      /* end of the last committed record */
  uint64_t footer_offset; /* == data_end in version 1 */
  uint64_t footer_bytes;
  uint64_t footer_checksum; /* XXH3-64 of the whole footer */
  uint64_t n_rows;          /* committed rows, for a cheap sanity check */
  uint64_t checksum;        /* XXH3-64 of the 56 bytes above */
} cs_disk_slot;

/* Schema block: u32 n_cols, u32 reserved, then per column u8 type,
** u8 nullable (0/1), u16 name_bytes, name bytes (no NUL). */
#define CS_SCHEMA_HEAD_BYTES 8u
#define CS_SCHEMA_COL_HEAD_BYTES 4u

typedef struct cs_disk_chunk {
  uint64_t chunk_offset;    /* start of the chunk, from the record start */
  uint64_t chunk_bytes;     /* span covered by checksum, padding included */
  uint64_t validity_offset; /* 0 = no bitmap (no NULLs) */
  uint64_t offsets_offset;  /* TEXT/BLOB offsets; 0 for fixed width */
  uint64_t data_offset;     /* values or bytes */
  uint64_t data_bytes;
  uint64_t null_count;
  uint64_t min_bits; /* cs_stat bits */
  uint64_t max_bits;
  uint64_t checksum;   /* XXH3-64 of the chunk span */
  uint32_t flags;      /* CS_CHUNK_SORTED | CS_CHUNK_HAS_MINMAX (| CS_CHUNK_ABSOLUTE) */
  uint32_t patch_back; /* CS_CHUNK_ABSOLUTE: its patch block starts patch_back * 64
                            ** bytes before chunk_offset; else reserved, 0 */
} cs_disk_chunk;

typedef struct cs_disk_record {
  char magic[8];       /* CS_MAGIC_RECORD */
  uint64_t generation; /* the commit that wrote it */
  uint64_t n_rows;
  uint64_t record_bytes; /* whole record, header included; multiple of 64 */
  uint32_t n_cols;
  uint32_t header_bytes;         /* 64 + n_cols * 88, rounded up to 64 */
  uint64_t descriptors_checksum; /* XXH3-64 of the n_cols chunk descriptors after it */
  uint64_t flags;                /* CS_RECORD_SEALED, or 0 (older writers) */
  uint64_t checksum;             /* XXH3-64 of the 56 bytes above */
} cs_disk_record;

/* The record's transaction seals its commit (see above): a scan without
** slots must find the seal to keep it.  Records of older writers have 0
** here (the field was reserved), and their newest generation is kept on
** its footer alone, as those writers' files always were. */
#define CS_RECORD_SEALED 1u

typedef struct cs_disk_footer {
  char magic[8]; /* CS_MAGIC_FOOTER */
  uint64_t generation;
  uint64_t n_records;
  uint64_t n_rows;
  uint32_t n_cols;
  uint32_t entry_bytes;  /* 32 + n_cols * 88 */
  uint64_t footer_bytes; /* header (+ extension) + n_records * entry_bytes */
  uint32_t layout;       /* 0: layout 1; CS_FOOTER_LAYOUT_2: extension + longer entries */
  uint32_t reserved;
  uint64_t checksum; /* XXH3-64 of the entries, seeded with the 56 bytes above */
} cs_disk_footer;

typedef struct cs_disk_entry {
  uint64_t record_offset; /* from the start of the file */
  uint64_t n_rows;
  uint64_t record_bytes;
  uint64_t generation;
} cs_disk_entry;

/* Version 2 (docs/format.md 14.3): a record's deletion vector, followed by
** align64(ceil(n_rows / 8)) bytes of bitmap, LSB-first, 1 = deleted. */
typedef struct cs_disk_delvec {
  char magic[8];            /* CS_MAGIC_DELVEC */
  uint64_t generation;      /* the commit that wrote it */
  uint64_t record_offset;   /* file offset of its record, which precedes it */
  uint64_t n_rows;          /* bits; the record's n_rows */
  uint64_t n_deleted;       /* bits set, 1..n_rows */
  uint64_t block_bytes;     /* 64 + align64(ceil(n_rows / 8)) */
  uint64_t bitmap_checksum; /* XXH3-64 of block bytes [64, block_bytes) */
  uint64_t checksum;        /* XXH3-64 of the 56 bytes above */
} cs_disk_delvec;

/* Layout 2 footers: a 64-byte extension after the header, and 32 more
** bytes per entry between cs_disk_entry and the descriptors. */
#define CS_FOOTER_LAYOUT_2 2u
typedef struct cs_disk_footer_ext {
  uint64_t n_deleted;  /* deleted positions in the store */
  uint64_t free_bytes; /* data-region bytes no entry uses (superseded vectors, replaced chunks) */
  uint64_t reserved[6];
} cs_disk_footer_ext;

typedef struct cs_disk_entry_ext {
  uint64_t dv_offset;   /* file offset of the newest cs_disk_delvec; 0 = none */
  uint64_t n_deleted;   /* its n_deleted, or 0 */
  uint64_t dv_checksum; /* its bitmap_checksum, or 0 */
  uint64_t reserved;
} cs_disk_entry_ext;

/* Descriptor flag of format 2: offsets are file offsets (a patch block's
** chunk), and patch_back says where its patch block starts. */
#define CS_CHUNK_ABSOLUTE 4u

/* Version 2 (docs/format.md 14.4): new chunks for some columns of one
** record, written by an UPDATE.  n_chunks items follow the header, then the
** chunks (laid out as in a record, at file offsets the items name). */
typedef struct cs_disk_patch {
  char magic[8];                 /* CS_MAGIC_PATCH */
  uint64_t generation;           /* the commit that wrote it */
  uint64_t record_offset;        /* file offset of its record, which precedes it */
  uint64_t n_rows;               /* the record's n_rows */
  uint32_t n_chunks;             /* columns replaced, 1..n_cols */
  uint32_t header_bytes;         /* align64(64 + 96 * n_chunks) */
  uint64_t block_bytes;          /* whole block; header_bytes + the chunks */
  uint64_t descriptors_checksum; /* XXH3-64 of the n_chunks items */
  uint64_t checksum;             /* XXH3-64 of the 56 bytes above */
} cs_disk_patch;

typedef struct cs_disk_patch_item {
  uint32_t column;     /* increasing within a block */
  uint32_t reserved;   /* 0 */
  cs_disk_chunk chunk; /* CS_CHUNK_ABSOLUTE; the footer copies it byte for byte */
} cs_disk_patch_item;

static inline uint64_t cs__patch_header_bytes(uint32_t n_chunks) {
  return (sizeof(cs_disk_patch) + (uint64_t)n_chunks * sizeof(cs_disk_patch_item) + 63) & ~(uint64_t)63;
}

static inline uint64_t cs__delvec_block_bytes(uint64_t n_rows) {
  return sizeof(cs_disk_delvec) + ((((n_rows + 7) / 8) + 63) & ~(uint64_t)63);
}

/* The bitmap of such a block as readers expect it (docs/format.md 14.3:
** whole 64-byte lines, zero past the rows): the block less its header.
** One definition for the writer and the view. */
static inline uint64_t cs__delvec_bitmap_bytes(uint64_t n_rows) {
  return cs__delvec_block_bytes(n_rows) - sizeof(cs_disk_delvec);
}
_Static_assert(sizeof(cs_disk_delvec) == 64, "deletion vector header is 64 bytes");
_Static_assert(sizeof(cs_disk_patch) == 64, "patch block header is 64 bytes");
_Static_assert(sizeof(cs_disk_patch_item) == 96, "patch item is 96 bytes");
_Static_assert(offsetof(cs_disk_patch, checksum) == 56, "patch checksum is last");
_Static_assert(sizeof(cs_disk_footer_ext) == 64, "footer extension is 64 bytes");
_Static_assert(sizeof(cs_disk_entry_ext) == 32, "entry extension is 32 bytes");
_Static_assert(offsetof(cs_disk_delvec, checksum) == 56, "deletion vector checksum is last");
_Static_assert(offsetof(cs_disk_footer, layout) == 48, "footer layout replaces the reserved word");
_Static_assert(sizeof(cs_disk_preamble) == 64, "preamble is 64 bytes");
_Static_assert(sizeof(cs_disk_slot) == 64, "commit slot is 64 bytes");
_Static_assert(sizeof(cs_disk_chunk) == 88, "chunk descriptor is 88 bytes");
_Static_assert(sizeof(cs_disk_record) == 64, "record header is 64 bytes");
_Static_assert(sizeof(cs_disk_footer) == 64, "footer header is 64 bytes");
_Static_assert(sizeof(cs_disk_entry) == 32, "footer entry is 32 bytes");
_Static_assert(offsetof(cs_disk_slot, checksum) == 56, "slot checksum is last");
_Static_assert(offsetof(cs_disk_record, checksum) == 56, "record checksum is last");
_Static_assert(offsetof(cs_disk_footer, checksum) == 56, "footer checksum is last");
_Static_assert(offsetof(cs_disk_preamble, checksum) == 56, "preamble checksum is last");
_Static_assert(CS_SLOT1_OFFSET - CS_SLOT0_OFFSET >= 512, "slots in separate sectors");

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "colstore format v1 is written in host order and requires a little-endian host"
#endif

static inline uint64_t cs__align64(uint64_t n) { return (n + (CS_ALIGN - 1)) & ~(uint64_t)(CS_ALIGN - 1); }
static inline uint64_t cs__record_header_bytes(uint32_t n_cols) {
  return cs__align64(sizeof(cs_disk_record) + (uint64_t)n_cols * sizeof(cs_disk_chunk));
}
/* The file offset of a chunk of the record at e: its own descriptor's
** offsets count from the record, a patch's (CS_CHUNK_ABSOLUTE) from the file. */
static inline uint64_t cs__chunk_base(const cs_disk_entry *e, const cs_disk_chunk *dc) {
  return (dc->flags & CS_CHUNK_ABSOLUTE) ? 0 : e->record_offset;
}
static inline uint64_t cs__footer_entry_bytes(uint32_t n_cols) {
  return sizeof(cs_disk_entry) + (uint64_t)n_cols * sizeof(cs_disk_chunk);
}
/* Layout 2 entry and header sizes. */
static inline uint64_t cs__footer_entry_bytes_v2(uint32_t n_cols) {
  return sizeof(cs_disk_entry) + sizeof(cs_disk_entry_ext) + (uint64_t)n_cols * sizeof(cs_disk_chunk);
}
#define CS_FOOTER_HEAD_BYTES_V2 (sizeof(cs_disk_footer) + sizeof(cs_disk_footer_ext))

#endif /* CS_FORMAT_H */
