/*
** cs_import_parquet.c - colstore_import of Parquet files: interchange/'s
** Parquet reader (cs_parquet.c, cs_parquet_page.c) as a format of the
** shared columnar import driver (cs_import_columnar.c), which owns the
** writer, columns=, append, progress and errors.  A row group is a group;
** its columns' chunks are read and decoded one per call (pread of the
** chunk's bytes alone), so a projection reads nothing of the others.
*/
#include <stdlib.h>

#include "cs_base_internal.h"
#include "cs_import_internal.h"

typedef struct pq_source {
  cs_pq_file *f;
  uint32_t rg; /* the next row group */
} pq_source;

static cs_rc pq_open(const char *path, void **out, cs_err *err) {
  pq_source *s = cs__mem_calloc(1, sizeof *s);
  if (!s) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  cs_rc rc = cs_pq_open(path, &s->f, err);
  if (rc != CS_OK) {
    cs__mem_free(s);
    return rc;
  }
  *out = s;
  return CS_OK;
}

static void pq_close(void *p) {
  pq_source *s = p;
  cs_pq_close(s->f);
  cs__mem_free(s);
}

static uint32_t pq_n_cols(void *p) { return ((pq_source *)p)->f->n_cols; }

static void pq_column(void *p, uint32_t i, cs_columnar_col *out) {
  const cs_pq_column *c = &((pq_source *)p)->f->cols[i];
  *out = (cs_columnar_col){c->name, c->type, c->optional, c->logical};
}

static cs_rc pq_supported(void *p, uint32_t i, cs_err *err) {
  return cs_pq_column_supported(((pq_source *)p)->f, i, err);
}

static cs_rc pq_next_group(void *p, bool *have, uint64_t *rows, uint64_t *bytes, cs_err *err) {
  (void)err;
  pq_source *s = p;
  *have = s->rg < s->f->n_row_groups;
  *rows = *bytes = 0;
  if (!*have) return CS_OK;
  const cs_pq_row_group *g = &s->f->row_groups[s->rg++];
  *rows = (uint64_t)g->num_rows;
  for (uint32_t c = 0; c < s->f->n_cols; c++) *bytes += (uint64_t)g->chunks[c].n_bytes;
  return CS_OK;
}

static cs_rc pq_read_column(void *p, uint32_t i, cs_pq_values *out, cs_err *err) {
  pq_source *s = p;
  return cs_pq_read_column(s->f, s->rg - 1, i, out, err);
}

static const cs_columnar_ops parquet_ops = {"Parquet",    "row group",   "STRING",      CS_FORMAT_PARQUET,
                                            pq_open,      pq_close,      pq_n_cols,     pq_column,
                                            pq_supported, pq_next_group, pq_read_column};

cs_rc cs_import_parquet(const char *path, const char *source, const cs_import_options *opt,
                        cs_import_result *res, cs_err *err) {
  return cs__import_columnar(&parquet_ops, path, source, opt, res, err);
}
