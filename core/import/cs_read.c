/*
** cs_read.c - an input file as a stream of bytes: plain, gzip or zstd.
**
** The importer reads every file in fixed blocks and never holds one whole,
** so a file of any size imports in the memory of a few blocks.  The
** decompressor is picked by the name's suffix (.gz: zlib, .zst: libzstd),
** not by sniffing magic bytes: the contract names formats by extension, and
** a plain file that happens to start with gzip's magic must read as what it
** says it is.
**
** Plain files are read with read(2) straight into the caller's buffer; a
** gzip file through zlib's gzread, which buffers internally; a zstd file
** through a streaming context fed from our own input buffer.  Each keeps
** the count of stored bytes consumed, so progress can report the share of
** the files read whatever their compression.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "cs_base_internal.h"
#include "cs_import_internal.h"

typedef enum reader_kind { READ_PLAIN, READ_GZIP, READ_ZSTD } reader_kind;

struct cs_reader {
  reader_kind kind;
  const char *path; /* borrowed, for messages */
  int fd;
  gzFile gz;
  ZSTD_DCtx *zstd;
  uint8_t *zin; /* zstd: stored bytes read, not yet decompressed */
  ZSTD_inBuffer zin_buf;
  bool zin_eof;
  bool zstd_frame_open; /* a frame started and not finished */
  uint64_t raw_offset;
};

#define ZSTD_IN_BYTES (1u << 17)

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

cs_rc cs_reader_open(const char *path, cs_reader **out, cs_err *err) {
  *out = NULL;
  cs_reader *r = cs__mem_calloc(1, sizeof *r);
  if (!r) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  r->path = path;
  r->fd = -1;
  r->kind = has_suffix(path, ".gz") ? READ_GZIP : has_suffix(path, ".zst") ? READ_ZSTD : READ_PLAIN;
  r->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (r->fd < 0) {
    int e = errno;
    cs__mem_free(r);
    return cs_err_set(err, e == ENOENT ? CS_ENOENT : CS_EIO, "colstore: cannot open %s: %s", path,
                      strerror(e));
  }
  if (r->kind == READ_GZIP) {
    r->gz = gzdopen(r->fd, "rb");
    if (!r->gz) {
      close(r->fd);
      cs__mem_free(r);
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening %s", path);
    }
    r->fd = -1; /* gzclose closes it */
    gzbuffer(r->gz, 1u << 17);
  } else if (r->kind == READ_ZSTD) {
    r->zstd = ZSTD_createDCtx();
    r->zin = cs__mem_malloc(ZSTD_IN_BYTES);
    if (!r->zstd || !r->zin) {
      cs_reader_close(r);
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening %s", path);
    }
    r->zin_buf = (ZSTD_inBuffer){r->zin, 0, 0};
  }
  *out = r;
  return CS_OK;
}

static long read_plain(int fd, uint8_t *buf, size_t cap) {
  for (;;) {
    ssize_t got = read(fd, buf, cap);
    if (got >= 0 || errno != EINTR) return (long)got;
  }
}

static long read_zstd(cs_reader *r, uint8_t *buf, size_t cap, cs_err *err) {
  ZSTD_outBuffer out = {buf, cap, 0};
  while (out.pos == 0) {
    if (r->zin_buf.pos == r->zin_buf.size && !r->zin_eof) {
      long got = read_plain(r->fd, r->zin, ZSTD_IN_BYTES);
      if (got < 0) {
        cs_err_set(err, CS_EIO, "colstore: cannot read %s: %s", r->path, strerror(errno));
        return -1;
      }
      r->raw_offset += (uint64_t)got;
      r->zin_buf = (ZSTD_inBuffer){r->zin, (size_t)got, 0};
      if (got == 0) r->zin_eof = true;
    }
    if (r->zin_eof && r->zin_buf.pos == r->zin_buf.size) {
      if (r->zstd_frame_open) {
        cs_err_set(err, CS_EIO, "colstore: %s: the zstd stream is truncated", r->path);
        return -1;
      }
      return 0;
    }
    size_t hint = ZSTD_decompressStream(r->zstd, &out, &r->zin_buf);
    if (ZSTD_isError(hint)) {
      cs_err_set(err, CS_EIO, "colstore: %s: not a valid zstd stream: %s", r->path, ZSTD_getErrorName(hint));
      return -1;
    }
    r->zstd_frame_open = hint != 0;
  }
  return (long)out.pos;
}

long cs_reader_read(cs_reader *r, uint8_t *buf, size_t cap, cs_err *err) {
  if (cap > (1u << 30)) cap = 1u << 30;
  if (r->kind == READ_PLAIN) {
    long got = read_plain(r->fd, buf, cap);
    if (got < 0) {
      cs_err_set(err, CS_EIO, "colstore: cannot read %s: %s", r->path, strerror(errno));
      return -1;
    }
    r->raw_offset += (uint64_t)got;
    return got;
  }
  if (r->kind == READ_GZIP) {
    int got = gzread(r->gz, buf, (unsigned)cap);
    if (got < 0) {
      int errnum = 0;
      const char *msg = gzerror(r->gz, &errnum);
      cs_err_set(err, CS_EIO, "colstore: %s: not a valid gzip stream: %s", r->path, msg ? msg : "read error");
      return -1;
    }
    z_off_t at = gzoffset(r->gz);
    if (at >= 0) r->raw_offset = (uint64_t)at;
    return got;
  }
  return read_zstd(r, buf, cap, err);
}

uint64_t cs_reader_raw_offset(const cs_reader *r) { return r->raw_offset; }

void cs_reader_close(cs_reader *r) {
  if (!r) return;
  if (r->gz) gzclose(r->gz);
  if (r->fd >= 0) close(r->fd);
  ZSTD_freeDCtx(r->zstd);
  cs__mem_free(r->zin);
  cs__mem_free(r);
}
