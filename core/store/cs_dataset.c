/*
** cs_dataset.c - several store files read as one store.
**
** A dataset is built from ordinary stores, one per file (its "parts"), each
** opened with cs_store_open and kept open: a part owns its descriptor, its
** mapping and the generation it shows.  The dataset itself owns only a
** merged record directory: first_rows runs on across the files, and its
** chunks are copies of the parts' resolved chunks, so they point into each
** file's own mapping.  That directory is the one addressing abstraction the
** kernels, cs_store_find_record and the cursor use, so none of them knows a
** dataset from a single file.  The uniform-division layout is detected over
** the merged first_rows as for one file: it applies when every record of the
** dataset but the last has the same row count (every file but the last then
** holds a whole number of full records).
**
** Members: a directory SOURCE means its regular `*.cst` files (dot files
** excluded, as a glob would); a pattern means the regular files glob(3)
** matches.  Either way a writer's temporary file is never a member: the
** writer creates a store as <path>.tmp.XXXXXX and renames it at commit
** (format/cs_format.c, cs__format_is_temp_name), so a pattern matching every name
** in a directory would otherwise catch a file mid-create: half written, or
** a complete copy that doubles the rows of the store it is about to become.
** The rule is by name only, because the writer may link the finished file
** to <path> before it removes the temporary name, and in that moment both
** names hold the same complete store.
**
** Freshness: the dataset is current while every part is current (no newer
** commit, same inode) and, when it was opened from a SOURCE, while the
** SOURCE still expands to the same list of files.  The expansion (a readdir
** or a glob) is redone at every check, i.e. once per statement in the SQLite
** glue; that keeps the rule "the next statement sees it" for added and
** removed files without any state outside the store.
**
** Why parts are shared: a dataset of many files that grows by appends to
** one of them would otherwise open every file again at each change (an open,
** an mmap, a footer read and a directory resolve per file).  cs_store_reopen
** builds the new snapshot from the old one instead: a file still at the same
** path, inode and committed generation is the same immutable snapshot, so
** the new dataset takes a reference to the old part rather than opening the
** file again, and only new or changed files are opened.  Snapshots stay
** immutable: a part is never modified once opened, only referenced by more
** than one dataset, and freed with its last reference (n_refs), so a cursor
** still reading the old dataset is unaffected.  Only the merged directory
** (O(records)) is rebuilt, which costs far less than the opens it replaces.
**
** A dataset is a variant of cs_store with its own operations
** (cs__dataset_ops: release, is current, reopen, verify), which
** cs_store.c calls through s->ops; the calls run one way, from here to
** the single-file store.  A source (a file, a directory or a pattern) is
** verified here too, since only this file knows how to expand one.
*/
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cs_store_internal.h"

/* ------------------------------------------------------------ expansion */

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_regular(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool cs_source_is_dataset(const char *source) {
  return source && (strpbrk(source, "*?") != NULL || is_dir(source));
}

void cs_paths_free(char **paths, uint32_t n) {
  if (!paths) return;
  for (uint32_t i = 0; i < n; i++) cs__mem_free(paths[i]);
  cs__mem_free(paths);
}

static int path_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A growable list of owned strings. */
typedef struct path_list {
  char **v;
  uint32_t n, cap;
} path_list;

static bool list_add(path_list *l, char *p) {
  if (!p) return false;
  if (l->n == l->cap) {
    if (l->cap >= UINT32_MAX / 2) {
      cs__mem_free(p);
      return false;
    }
    uint32_t cap = l->cap ? l->cap * 2 : 16;
    char **v = cs__mem_realloc(l->v, cap * sizeof *v);
    if (!v) {
      cs__mem_free(p);
      return false;
    }
    l->v = v, l->cap = cap;
  }
  l->v[l->n++] = p;
  return true;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static bool has_cst_suffix(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".cst") == 0;
}

cs_rc cs_dataset_expand(const char *source, char ***out_paths, uint32_t *out_n, cs_err *err) {
  *out_paths = NULL;
  *out_n = 0;
  path_list l = {0};
  if (strpbrk(source, "*?") == NULL) {
    /* A directory: its *.cst entries (dot files excluded, as a glob would). */
    DIR *d = opendir(source);
    if (!d)
      return cs_err_set(err, errno == ENOENT ? CS_ENOENT : CS_EIO,
                        "colstore: cannot read the directory %s: %s", source, strerror(errno));
    size_t dl = strlen(source);
    bool slash = dl > 0 && source[dl - 1] == '/';
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.' || !has_cst_suffix(e->d_name) || cs__format_is_temp_name(e->d_name)) continue;
      size_t n = dl + 1 + strlen(e->d_name) + 1;
      char *p = cs__mem_malloc(n);
      if (p) snprintf(p, n, "%s%s%s", source, slash ? "" : "/", e->d_name);
      /* d_type saves a stat per file per statement; a link, or a file
      ** system that does not fill it in, is stat'ed (links followed). */
      if (p && e->d_type != DT_REG && !is_regular(p)) {
        cs__mem_free(p);
        continue;
      }
      if (!list_add(&l, p)) {
        closedir(d);
        cs_paths_free(l.v, l.n);
        return cs_err_set(err, CS_ENOMEM, "colstore: out of memory listing %s", source);
      }
    }
    closedir(d);
  } else {
    glob_t g;
    memset(&g, 0, sizeof g);
    int grc = glob(source, GLOB_NOSORT, NULL, &g);
    if (grc == GLOB_NOSPACE) {
      globfree(&g);
      return cs_err_set(err, CS_ENOMEM, "colstore: out of memory expanding %s", source);
    }
    if (grc == 0) {
      for (size_t i = 0; i < g.gl_pathc; i++) {
        if (cs__format_is_temp_name(base_name(g.gl_pathv[i])) || !is_regular(g.gl_pathv[i])) continue;
        if (!list_add(&l, cs__mem_strdup(g.gl_pathv[i]))) {
          globfree(&g);
          cs_paths_free(l.v, l.n);
          return cs_err_set(err, CS_ENOMEM, "colstore: out of memory expanding %s", source);
        }
      }
    }
    /* GLOB_NOMATCH and GLOB_ABORTED (an unreadable directory) match nothing. */
    globfree(&g);
  }
  if (l.n > 1) qsort(l.v, l.n, sizeof *l.v, path_cmp);
  *out_paths = l.v;
  *out_n = l.n;
  return CS_OK;
}

/* ----------------------------------------------------------------- open */

/* CS_OK when b's schema equals a's; else the CS_ESCHEMA message. */
static cs_rc schema_same(const cs_store *first, const cs_store *other, cs_err *err) {
  const cs_schema *a = &first->schema, *b = &other->schema;
  for (uint32_t i = 0; i < a->n_cols && i < b->n_cols; i++) {
    const cs_column *x = &b->cols[i], *y = &a->cols[i];
    if (x->type != y->type || x->nullable != y->nullable || strcmp(x->name, y->name) != 0)
      return cs_err_set(err, CS_ESCHEMA,
                        "colstore: %s: schema differs from %s: column %u is %s %s%s here but %s %s%s there",
                        other->path, first->path, i + 1, x->name, cs_type_name(x->type),
                        x->nullable ? "" : " NOT NULL", y->name, cs_type_name(y->type),
                        y->nullable ? "" : " NOT NULL");
  }
  if (a->n_cols != b->n_cols)
    return cs_err_set(err, CS_ESCHEMA,
                      "colstore: %s: schema differs from %s: it has %u columns here but %u there",
                      other->path, first->path, b->n_cols, a->n_cols);
  return CS_OK;
}

/* Copies the first part's schema into the dataset store (or a view, cs_view.c). */
cs_rc cs__schema_copy(cs_store *s, const cs_store *from, cs_err *err) {
  uint32_t nc = from->schema.n_cols;
  size_t bytes = 0;
  for (uint32_t c = 0; c < nc; c++) bytes += strlen(from->cols[c].name) + 1;
  s->cols = cs__mem_calloc(nc, sizeof *s->cols);
  s->names = cs__mem_malloc(bytes ? bytes : 1);
  if (!s->cols || !s->names) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening a dataset");
  size_t at = 0;
  for (uint32_t c = 0; c < nc; c++) {
    size_t n = strlen(from->cols[c].name) + 1;
    memcpy(s->names + at, from->cols[c].name, n);
    s->cols[c] = from->cols[c];
    s->cols[c].name = s->names + at;
    at += n;
  }
  s->schema.n_cols = nc;
  s->schema.cols = s->cols;
  return CS_OK;
}

/* A part of from that may stand for path in a new snapshot: the one at the
** same path, if it is still current (same inode, no newer commit).  Parts
** keep their order across a reopen, so *hint (the index after the last
** match) finds it at once; a miss scans.  An unreadable commit slot is not
** an error here: the file is opened again and its own open decides. */
static cs_store *part_unchanged(const cs_store *from, const char *path, uint32_t *hint,
                                const cs_store **out_old) {
  uint32_t i = *hint < from->n_parts && strcmp(from->parts[*hint]->path, path) == 0 ? *hint : from->n_parts;
  for (uint32_t j = 0; i == from->n_parts && j < from->n_parts; j++)
    if (strcmp(from->parts[j]->path, path) == 0) i = j;
  if (i == from->n_parts) return NULL;
  *hint = i + 1;
  *out_old = from->parts[i]; /* changed or not: a cache=memory open may start from its copy */
  bool current = false;
  cs_err ignored;
  if (cs_store_is_current(from->parts[i], &current, &ignored) != CS_OK || !current) return NULL;
  return from->parts[i];
}

/* Opens a dataset over paths (named source, when it came from one).  With
** from, an earlier snapshot of the same dataset, its unchanged parts are
** shared instead of opened again, and when every part is (the same files,
** in the same order) the result is from itself with one more reference. */
/* The committed bytes of paths together, over the cache limit: the
** reason a cache=memory dataset reads its new files through mappings
** (written into why), else false.  File sizes stand in for the committed
** bytes (they differ by a footer), which saves opening every file first. */
static bool dataset_over_limit(const char *const *paths, uint32_t n_paths, char *why, size_t cap) {
  uint64_t total = 0, limit = cs_cache_limit();
  for (uint32_t i = 0; i < n_paths; i++) {
    struct stat st;
    if (stat(paths[i], &st) == 0) total += (uint64_t)st.st_size;
  }
  if (total <= limit) return false;
  snprintf(why, cap, "the dataset's %llu bytes exceed the cache limit of %llu bytes",
           (unsigned long long)total, (unsigned long long)limit);
  return true;
}

static cs_rc dataset_open(const char *const *paths, uint32_t n_paths, const char *source, cs_verify verify,
                          cs_cache cache, cs_store *from, cs_store **out, cs_err *err) {
  *out = NULL;
  if (n_paths == 0) {
    if (source && !strpbrk(source, "*?"))
      return cs_err_set(err, CS_ENOENT, "colstore: no store files match %s/*.cst", source);
    if (source) return cs_err_set(err, CS_ENOENT, "colstore: no store files match %s", source);
    return cs_err_set(err, CS_ENOENT, "colstore: a dataset needs at least one store file");
  }
  cs_store **parts = cs__mem_calloc(n_paths, sizeof *parts);
  if (!parts) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening a dataset");
  cs_store *s = NULL;
  cs_rc rc = CS_OK;
  uint32_t n_open = 0, hint = 0;
  bool all_shared = from && n_paths == from->n_parts;
  char why[sizeof s->cache_why] = "";
  cs_cache part_cache =
      cache == CS_CACHE_MEMORY && dataset_over_limit(paths, n_paths, why, sizeof why) ? CS_CACHE_MAP : cache;
  /* Parts in order: the first file whose schema differs is the one named. */
  for (; n_open < n_paths; n_open++) {
    const cs_store *old = NULL;
    cs_store *p = from ? part_unchanged(from, paths[n_open], &hint, &old) : NULL;
    if (p) {
      atomic_fetch_add(&p->n_refs, 1);
      parts[n_open] = p;
    } else if ((rc = cs__store_open_path(paths[n_open], verify, part_cache, old, &parts[n_open], err))) {
      goto fail;
    }
    all_shared = all_shared && parts[n_open] == from->parts[n_open];
    if (n_open > 0 && (rc = schema_same(parts[0], parts[n_open], err))) {
      n_open++;
      goto fail;
    }
  }
  if (all_shared) {
    for (uint32_t i = 0; i < n_paths; i++) cs_store_close(parts[i]);
    cs__mem_free(parts);
    atomic_fetch_add(&from->n_refs, 1);
    *out = from;
    return CS_OK;
  }
  if (!(s = cs__mem_calloc(1, sizeof *s))) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening a dataset");
    goto fail;
  }
  s->ops = &cs__dataset_ops;
  atomic_init(&s->n_refs, 1);
  s->fd = -1;
  s->cache_req = cache;
  memcpy(s->cache_why, why, sizeof why);
  s->parts = parts, s->n_parts = n_paths;
  parts = NULL; /* s owns them now */
  s->path = cs__mem_strdup(source ? source : paths[0]);
  s->source = source ? cs__mem_strdup(source) : NULL;
  s->part_first_record = cs__mem_calloc((size_t)n_paths + 1, sizeof *s->part_first_record);
  if (!s->path || (source && !s->source) || !s->part_first_record) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory opening a dataset");
    goto fail;
  }
  uint64_t n_records = 0, n_rows = 0, bytes = 0, generation = 0;
  for (uint32_t i = 0; i < n_paths; i++) {
    const cs_store *p = s->parts[i];
    s->part_first_record[i] = n_records;
    n_records += p->n_records;
    n_rows += p->n_rows;
    bytes += p->map_bytes;
    generation += p->generation;
    s->recovered |= p->recovered;
    s->slot_damaged |= p->slot_damaged;
    s->n_deleted += p->n_deleted;
    s->free_bytes += p->free_bytes;
    if (p->format_version > s->format_version) s->format_version = p->format_version;
  }
  s->part_first_record[n_paths] = n_records;
  if ((rc = cs__schema_copy(s, s->parts[0], err))) goto fail;
  uint32_t nc = s->schema.n_cols;
  s->n_records = n_records;
  s->n_rows = n_rows;
  s->map_bytes = bytes;
  s->generation = generation;
  s->first_rows = cs__mem_malloc((n_records + 1) * sizeof *s->first_rows);
  s->chunks = cs__mem_malloc((n_records ? n_records * nc : 1) * sizeof *s->chunks);
  /* Deleted rows: the parts' vectors, merged like the chunks (NULL when no
  ** file has any, the test every read path makes first). */
  if (s->n_deleted) s->dels = cs__mem_calloc(n_records, sizeof *s->dels);
  if (!s->first_rows || !s->chunks || (s->n_deleted && !s->dels)) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory for a dataset directory of %llu records",
                    (unsigned long long)n_records);
    goto fail;
  }
  uint64_t rec = 0, base = 0;
  for (uint32_t i = 0; i < n_paths; i++) {
    const cs_store *p = s->parts[i];
    for (uint64_t r = 0; r < p->n_records; r++) s->first_rows[rec + r] = base + p->first_rows[r];
    if (p->n_records) memcpy(&s->chunks[rec * nc], p->chunks, p->n_records * nc * sizeof *s->chunks);
    if (p->dels) memcpy(&s->dels[rec], p->dels, p->n_records * sizeof *s->dels);
    rec += p->n_records;
    base += p->n_rows;
  }
  s->first_rows[n_records] = n_rows;
  cs__store_uniform_init(s);
  *out = s;
  return CS_OK;
fail:
  cs_store_close(s);
  if (parts) {
    for (uint32_t i = 0; i < n_open; i++) cs_store_close(parts[i]);
    cs__mem_free(parts);
  }
  return rc;
}

cs_rc cs_store_open_dataset(const char *const *paths, uint32_t n_paths, cs_verify verify, cs_store **out,
                            cs_err *err) {
  return dataset_open(paths, n_paths, NULL, verify, CS_CACHE_MAP, NULL, out, err);
}

cs_rc cs_store_open_source(const char *source, cs_verify verify, cs_store **out, cs_err *err) {
  return cs_store_open_source_with(source, verify, CS_CACHE_MAP, out, err);
}

cs_rc cs_store_open_source_with(const char *source, cs_verify verify, cs_cache cache, cs_store **out,
                                cs_err *err) {
  *out = NULL;
  if (!cs_source_is_dataset(source)) return cs_store_open_with(source, verify, cache, out, err);
  char **paths = NULL;
  uint32_t n = 0;
  cs_rc rc = cs_dataset_expand(source, &paths, &n, err);
  if (rc == CS_OK) rc = dataset_open((const char *const *)paths, n, source, verify, cache, NULL, out, err);
  cs_paths_free(paths, n);
  return rc;
}

void cs__dataset_release(cs_store *s) {
  for (uint32_t i = 0; i < s->n_parts; i++) cs_store_close(s->parts[i]);
  cs__mem_free(s->parts);
  cs__mem_free(s->part_first_record);
  cs__mem_free(s->source);
  s->parts = NULL;
  s->n_parts = 0;
  s->part_first_record = NULL;
  s->source = NULL;
}

/* ------------------------------------------------------------ freshness */

cs_rc cs__dataset_is_current(const cs_store *s, bool *out_current, cs_err *err) {
  *out_current = true;
  for (uint32_t i = 0; i < s->n_parts; i++) {
    bool cur = true;
    cs_rc rc = cs_store_is_current(s->parts[i], &cur, err);
    if (rc) return rc;
    if (!cur) {
      *out_current = false;
      return CS_OK;
    }
  }
  if (!s->source) return CS_OK;
  char **paths = NULL;
  uint32_t n = 0;
  cs_rc rc = cs_dataset_expand(s->source, &paths, &n, err);
  if (rc == CS_ENOENT) {
    *out_current = false; /* the directory went away: let the reopen say so */
    return CS_OK;
  }
  if (rc) return rc;
  bool same = n == s->n_parts;
  for (uint32_t i = 0; same && i < n; i++) same = strcmp(paths[i], s->parts[i]->path) == 0;
  cs_paths_free(paths, n);
  *out_current = same;
  return CS_OK;
}

cs_rc cs__dataset_reopen(cs_store *s, cs_verify verify, cs_store **out, cs_err *err) {
  char **paths = NULL;
  uint32_t n = 0;
  cs_rc rc;
  if (s->source) {
    if ((rc = cs_dataset_expand(s->source, &paths, &n, err))) return rc;
    rc = dataset_open((const char *const *)paths, n, s->source, verify, s->cache_req, s, out, err);
    cs_paths_free(paths, n);
    return rc;
  }
  /* Opened from a list of paths: the same list again. */
  const char **list = cs__mem_malloc(s->n_parts * sizeof *list);
  if (!list) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory reopening a dataset");
  for (uint32_t i = 0; i < s->n_parts; i++) list[i] = s->parts[i]->path;
  rc = dataset_open(list, s->n_parts, NULL, verify, s->cache_req, s, out, err);
  cs__mem_free(list);
  return rc;
}

cs_rc cs__dataset_verify(const cs_store *s, cs_err *err) {
  for (uint32_t i = 0; i < s->n_parts; i++) {
    cs_rc rc = cs_store_verify(s->parts[i], err);
    if (rc) return rc;
  }
  return CS_OK;
}

const cs__store_ops cs__dataset_ops = {"dataset", cs__dataset_release, cs__dataset_is_current,
                                       cs__dataset_reopen, cs__dataset_verify};

/* ---------------------------------------------------------- verify source */

/* A file is verified as one (cs_store.c); a dataset file by file, then as
** a whole. */
cs_rc cs_store_verify_source(const char *source, cs_damage_fn fn, void *ctx, uint64_t *out_n_damaged,
                             cs_err *err) {
  cs__damage_sink sink = {fn, ctx, 0, NULL};
  *out_n_damaged = 0;
  if (!cs_source_is_dataset(source)) {
    cs_rc rc = cs__store_verify_file(source, &sink, err);
    *out_n_damaged = sink.n;
    return rc;
  }
  char **paths = NULL;
  uint32_t n = 0;
  cs_rc rc = cs_dataset_expand(source, &paths, &n, err);
  for (uint32_t i = 0; i < n && rc == CS_OK; i++) rc = cs__store_verify_file(paths[i], &sink, err);
  cs_paths_free(paths, n);
  /* Every file intact: what makes them one dataset (files to read, one
  ** schema) is checked as an open checks it. */
  if (rc == CS_OK && sink.n == 0) {
    cs_store *d = NULL;
    rc = cs_store_open_source(source, CS_VERIFY_HEADER, &d, err);
    cs_store_close(d);
  }
  *out_n_damaged = sink.n;
  return rc;
}

/* ------------------------------------------------------------ accessors */

bool cs_store_is_dataset(const cs_store *s) { return s->parts != NULL && !s->view; }
uint32_t cs_store_files(const cs_store *s) { return s->parts ? s->n_parts : 1; }

const char *cs_store_file_path(const cs_store *s, uint32_t i) {
  if (!s->parts) return i == 0 ? s->path : NULL;
  return i < s->n_parts ? s->parts[i]->path : NULL;
}

uint64_t cs_store_file_rows(const cs_store *s, uint32_t i) {
  if (!s->parts) return i == 0 ? s->n_rows : 0;
  return i < s->n_parts ? s->parts[i]->n_rows : 0;
}

uint64_t cs_store_file_first_row(const cs_store *s, uint32_t i) {
  if (!s->parts) return i == 0 ? 0 : s->n_rows;
  if (i >= s->n_parts) return s->n_rows;
  return s->first_rows[s->part_first_record[i]];
}
