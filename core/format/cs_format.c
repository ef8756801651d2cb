/*
** cs_format.c - the file format's small rules that are code rather than
** layout: which preamble version a file has (a torn upgrade included), and
** which file names are a writer's temporary files.
**
** Each has two users on different floors: the reader checks the preamble
** (store/cs_store.c) and the writer rewrites it on upgrade
** (write/cs_writer.c); the writer makes temporary names and a dataset
** (store/cs_dataset.c) must skip them.  Defined once here, below both, a
** rule cannot drift between its two users, and neither has to call the
** other.
*/
#include <string.h>

#include "cs_format_internal.h"

/* ------------------------------------------------------------- preamble */

void cs__preamble_with_version(const cs_disk_preamble *p, uint32_t v, cs_disk_preamble *out) {
  *out = *p;
  out->version = v;
  out->checksum = cs__hash(out, 56);
}

bool cs__preamble_version(const cs_disk_preamble *p, uint32_t *out_version, bool *out_torn) {
  *out_torn = false;
  *out_version = p->version;
  if (p->checksum == cs__hash(p, 56)) return true;
  if (p->version != 1 && p->version != 2) return false;
  /* A torn upgrade (or a torn abort of one): every byte is the version-1
  ** form's or the version-2 form's, and nothing else differs. */
  cs_disk_preamble a, b;
  cs__preamble_with_version(p, 1, &a);
  cs__preamble_with_version(p, 2, &b);
  const uint8_t *x = (const uint8_t *)p, *pa = (const uint8_t *)&a, *pb = (const uint8_t *)&b;
  for (size_t i = 0; i < sizeof *p; i++)
    if (x[i] != pa[i] && x[i] != pb[i]) return false;
  *out_torn = true;
  *out_version = 2;
  return true;
}

/* A new store is written as <path>.tmp.XXXXXX, the Xs replaced by mkstemp
** with six letters or digits, and renamed (or linked) to <path> at commit.
** Datasets read whole directories and patterns, so they must be able to
** tell such a file from a member: cs__format_is_temp_name is the one
** definition of the name, below both the writer that makes it
** (write/cs_writer.c) and the dataset that skips it (store/cs_dataset.c). */
_Static_assert(sizeof CS__TEMP_SUFFIX - 1 > CS__TEMP_RANDOM, "the suffix ends in the random part");

bool cs__format_is_temp_name(const char *name) {
  const size_t fixed = sizeof CS__TEMP_SUFFIX - 1 - CS__TEMP_RANDOM; /* ".tmp." */
  size_t n = strlen(name);
  if (n < fixed + CS__TEMP_RANDOM + 1) return false; /* a destination name precedes it */
  const char *tail = name + n - CS__TEMP_RANDOM;
  if (memcmp(tail - fixed, CS__TEMP_SUFFIX, fixed) != 0) return false;
  /* glibc and musl draw from [A-Za-z0-9]; checking it keeps names such as
  ** "x.tmp.ab-cde" members. */
  for (size_t i = 0; i < CS__TEMP_RANDOM; i++) {
    char c = tail[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}
