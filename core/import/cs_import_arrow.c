/*
** cs_import_arrow.c - colstore_import of Arrow IPC files (.arrow, .feather)
** and streams (.arrows): interchange/'s Arrow reader (cs_arrow.c) as a
** format of the shared columnar import driver (cs_import_columnar.c),
** which owns the writer, columns=, append, progress and errors.  A record
** batch is a group; a column of it is decoded from the mapped file only
** when imported, so a projection touches nothing of the others.
*/
#include "cs_import_internal.h"

static cs_rc ar_open(const char *path, void **out, cs_err *err) {
  return cs_arrow_open(path, (cs_arrow_file **)out, err);
}

static void ar_close(void *f) { cs_arrow_close(f); }

static uint32_t ar_n_cols(void *f) { return ((cs_arrow_file *)f)->n_cols; }

static void ar_column(void *f, uint32_t i, cs_columnar_col *out) {
  const cs_arrow_column *c = &((cs_arrow_file *)f)->cols[i];
  *out = (cs_columnar_col){c->name, c->type, c->nullable, c->desc};
}

static cs_rc ar_supported(void *f, uint32_t i, cs_err *err) { return cs_arrow_column_supported(f, i, err); }

static cs_rc ar_next_group(void *f, bool *have, uint64_t *rows, uint64_t *bytes, cs_err *err) {
  cs_arrow_file *a = f;
  cs_rc rc = cs_arrow_next_batch(a, have, rows, err);
  /* Progress: an even share of the file per batch. */
  *bytes = a->n_batches ? a->n / a->n_batches : 0;
  return rc;
}

static cs_rc ar_read_column(void *f, uint32_t i, cs_pq_values *out, cs_err *err) {
  return cs_arrow_read_column(f, i, out, err);
}

static const cs_columnar_ops arrow_ops = {"Arrow",      "record batch", "Utf8",        CS_FORMAT_ARROW,
                                          ar_open,      ar_close,       ar_n_cols,     ar_column,
                                          ar_supported, ar_next_group,  ar_read_column};

cs_rc cs_import_arrow(const char *path, const char *source, const cs_import_options *opt,
                      cs_import_result *res, cs_err *err) {
  return cs__import_columnar(&arrow_ops, path, source, opt, res, err);
}
