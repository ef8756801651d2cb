/*
** cs_parquet.c - a Parquet file's footer: the flat schema, how each column
** maps to a colstore type, and where each row group's column chunks are.
**
** A Parquet file ends with its metadata (FileMetaData, Thrift compact),
** its length and "PAR1".  Opening reads those bytes alone: a projection
** then reads only the chunks of the columns it names (cs_parquet_page.c),
** so an import of two columns of a wide file reads two columns' bytes.
**
** The metadata is walked field by field (cs_thrift.c), keeping what import
** needs and skipping the rest (statistics, key/value metadata, indexes):
** fields a newer writer adds are skipped the same way.  Every count read
** from the file is checked against the bytes present before anything is
** allocated for it (cs_thrift_list bounds a count by the bytes left).
**
** The type mapping (docs/sql.md, "Parquet types") is decided here, once
** per column, from the physical type and its logical annotation, the newer
** LogicalType union first and the older ConvertedType when only that is
** set.  An unsupported column is not an error at open: a projection may
** leave it out.  cs_pq_column_supported says why, naming column and type.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_base_internal.h"
#include "cs_interchange_internal.h"

/* ConvertedType, the older annotation. */
enum {
  CT_UTF8 = 0,
  CT_ENUM = 4,
  CT_DECIMAL = 5,
  CT_DATE = 6,
  CT_TIME_MILLIS = 7,
  CT_TIME_MICROS = 8,
  CT_TIMESTAMP_MILLIS = 9,
  CT_TIMESTAMP_MICROS = 10,
  CT_UINT_8 = 11,
  CT_INT_64 = 18,
  CT_JSON = 19,
  CT_BSON = 20,
  CT_INTERVAL = 21
};

/* LogicalType union members (their field ids). */
enum {
  LT_NONE = 0,
  LT_STRING = 1,
  LT_MAP = 2,
  LT_LIST = 3,
  LT_ENUM = 4,
  LT_DECIMAL = 5,
  LT_DATE = 6,
  LT_TIME = 7,
  LT_TIMESTAMP = 8,
  LT_INTEGER = 10,
  LT_UNKNOWN = 11,
  LT_JSON = 12,
  LT_BSON = 13,
  LT_UUID = 14,
  LT_FLOAT16 = 15
};

/* A SchemaElement as read. */
typedef struct schema_element {
  const uint8_t *name;
  uint32_t name_n;
  int32_t type, type_length, repetition, num_children, converted, scale, precision;
  int logical;    /* LT_* */
  int unit;       /* TIME/TIMESTAMP: 1 ms, 2 us, 3 ns */
  int bit_width;  /* INTEGER */
  bool is_signed; /* INTEGER */
} schema_element;

static const char *const phys_names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                         "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};

static const char *phys_name(int32_t t) { return t >= 0 && t <= PQ_FLBA ? phys_names[t] : "unknown"; }

/* ---------------------------------------------------------- the schema */

/* A struct the parser does not look inside (TimeUnit's members are empty
** structs: the field id is the unit). */
static bool read_union_id(cs_thrift *t, uint8_t type, int *out) {
  if (!cs_thrift_begin(t, type)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  *out = 0;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    if (!*out) *out = id;
    if (!cs_thrift_skip(t, ft)) return false;
  }
  return !t->failed;
}

/* TimeType / TimestampType / IntType: the fields import needs. */
static bool read_logical_member(cs_thrift *t, uint8_t type, schema_element *e) {
  if (!cs_thrift_begin(t, type)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    int32_t v;
    bool b;
    if ((e->logical == LT_TIME || e->logical == LT_TIMESTAMP) && id == 2) {
      if (!read_union_id(t, ft, &e->unit)) return false;
    } else if (e->logical == LT_INTEGER && id == 1) {
      if (!cs_thrift_i32(t, ft, &v)) return false;
      e->bit_width = v;
    } else if (e->logical == LT_INTEGER && id == 2) {
      if (!cs_thrift_bool(t, ft, &b)) return false;
      e->is_signed = b;
    } else if (e->logical == LT_DECIMAL && (id == 1 || id == 2)) {
      if (!cs_thrift_i32(t, ft, id == 1 ? &e->scale : &e->precision)) return false;
    } else if (!cs_thrift_skip(t, ft)) {
      return false;
    }
  }
  return !t->failed;
}

static bool read_logical(cs_thrift *t, uint8_t type, schema_element *e) {
  if (!cs_thrift_begin(t, type)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    e->logical = id;
    if (!read_logical_member(t, ft, e)) return false;
  }
  return !t->failed;
}

static bool read_schema_element(cs_thrift *t, uint8_t type, schema_element *e) {
  *e = (schema_element){.type = -1, .repetition = 0, .converted = -1};
  if (!cs_thrift_begin(t, type)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    bool ok;
    switch (id) {
      case 1: ok = cs_thrift_i32(t, ft, &e->type); break;
      case 2: ok = cs_thrift_i32(t, ft, &e->type_length); break;
      case 3: ok = cs_thrift_i32(t, ft, &e->repetition); break;
      case 4: ok = cs_thrift_binary(t, ft, &e->name, &e->name_n); break;
      case 5: ok = cs_thrift_i32(t, ft, &e->num_children); break;
      case 6: ok = cs_thrift_i32(t, ft, &e->converted); break;
      case 7: ok = cs_thrift_i32(t, ft, &e->scale); break;
      case 8: ok = cs_thrift_i32(t, ft, &e->precision); break;
      case 10: ok = read_logical(t, ft, e); break;
      default: ok = cs_thrift_skip(t, ft);
    }
    if (!ok) return false;
  }
  return !t->failed;
}

/* The older annotation in the newer's terms, when only it is set. */
static void converted_to_logical(schema_element *e) {
  if (e->logical != LT_NONE || e->converted < 0) return;
  int c = e->converted;
  if (c == CT_UTF8)
    e->logical = LT_STRING;
  else if (c == CT_ENUM)
    e->logical = LT_ENUM;
  else if (c == CT_JSON)
    e->logical = LT_JSON;
  else if (c == CT_BSON)
    e->logical = LT_BSON;
  else if (c == CT_DECIMAL)
    e->logical = LT_DECIMAL;
  else if (c == CT_DATE)
    e->logical = LT_DATE;
  else if (c == CT_TIME_MILLIS || c == CT_TIME_MICROS) {
    e->logical = LT_TIME;
    e->unit = c == CT_TIME_MILLIS ? 1 : 2;
  } else if (c == CT_TIMESTAMP_MILLIS || c == CT_TIMESTAMP_MICROS) {
    e->logical = LT_TIMESTAMP;
    e->unit = c == CT_TIMESTAMP_MILLIS ? 1 : 2;
  } else if (c >= CT_UINT_8 && c <= CT_INT_64) {
    e->logical = LT_INTEGER;
    e->is_signed = c >= CT_UINT_8 + 4;
    e->bit_width = 8 << ((c - CT_UINT_8) % 4);
  } else {
    e->logical = -c - 100; /* INTERVAL, MAP, LIST, ...: named below */
  }
}

/* Decides a leaf's colstore type; leaves type 0 and logical naming the
** Parquet type when there is none. */
static void map_column(const schema_element *e, cs_pq_column *c) {
  static const char *const units[] = {"", "ms", "us", "ns"};
  const char *pn = phys_name(e->type);
  c->type = 0;
  c->conv = PQ_CONV_NONE;
  snprintf(c->logical, sizeof c->logical, "%s", pn);
  int lt = e->logical;
  if (e->unit >= 1 && e->unit <= 3) snprintf(c->unit, sizeof c->unit, "%s", units[e->unit]);
  switch (lt) {
    case LT_NONE:
      switch (e->type) {
        case PQ_BOOLEAN: c->type = CS_TYPE_BOOL; break;
        case PQ_INT32: c->type = CS_TYPE_INT32; break;
        case PQ_INT64: c->type = CS_TYPE_INT64; break;
        case PQ_FLOAT: c->type = CS_TYPE_FLOAT32; break;
        case PQ_DOUBLE: c->type = CS_TYPE_FLOAT64; break;
        case PQ_BYTE_ARRAY:
        case PQ_FLBA: c->type = CS_TYPE_BLOB; break;
        default: break; /* INT96 */
      }
      return;
    case LT_STRING:
    case LT_ENUM:
    case LT_JSON:
      snprintf(c->logical, sizeof c->logical, "%s (%s)", pn,
               lt == LT_STRING ? "STRING"
               : lt == LT_ENUM ? "ENUM"
                               : "JSON");
      if (e->type == PQ_BYTE_ARRAY) c->type = CS_TYPE_TEXT;
      return;
    case LT_BSON:
    case LT_UUID:
      snprintf(c->logical, sizeof c->logical, "%s (%s)", pn, lt == LT_BSON ? "BSON" : "UUID");
      if (e->type == PQ_BYTE_ARRAY || e->type == PQ_FLBA) c->type = CS_TYPE_BLOB;
      return;
    case LT_DATE:
      snprintf(c->logical, sizeof c->logical, "%s (DATE)", pn);
      if (e->type == PQ_INT32) c->type = CS_TYPE_INT32;
      return;
    case LT_TIME:
    case LT_TIMESTAMP:
      snprintf(c->logical, sizeof c->logical, "%s (%s, %s)", pn, lt == LT_TIME ? "TIME" : "TIMESTAMP",
               c->unit[0] ? c->unit : "?");
      if (!c->unit[0]) return;
      if (e->type == PQ_INT64) c->type = CS_TYPE_INT64;
      if (e->type == PQ_INT32 && lt == LT_TIME) c->type = CS_TYPE_INT64, c->conv = PQ_CONV_WIDEN;
      return;
    case LT_INTEGER: {
      int w = e->bit_width;
      snprintf(c->logical, sizeof c->logical, "%s (INT(%d, %s))", pn, w,
               e->is_signed ? "signed" : "unsigned");
      if (e->type == PQ_INT64 && w == 64) {
        c->type = CS_TYPE_INT64;
        c->conv = e->is_signed ? PQ_CONV_NONE : PQ_CONV_U64;
      } else if (e->type == PQ_INT32 && (w == 8 || w == 16 || w == 32)) {
        static const cs_type s[] = {CS_TYPE_INT8, CS_TYPE_INT16, 0, CS_TYPE_INT32};
        static const cs_type u[] = {CS_TYPE_UINT8, CS_TYPE_UINT16, 0, CS_TYPE_UINT32};
        c->type = (e->is_signed ? s : u)[w / 8 - 1];
        c->conv = w == 32 ? (e->is_signed ? PQ_CONV_NONE : PQ_CONV_U32) : PQ_CONV_NARROW;
      }
      return;
    }
    case LT_DECIMAL:
      snprintf(c->logical, sizeof c->logical, "%s (DECIMAL(%d, %d))", pn, e->precision, e->scale);
      return;
    case LT_FLOAT16: snprintf(c->logical, sizeof c->logical, "%s (FLOAT16)", pn); return;
    case -CT_INTERVAL - 100: snprintf(c->logical, sizeof c->logical, "%s (INTERVAL)", pn); return;
    default:
      snprintf(c->logical, sizeof c->logical, "%s (logical type %d)", pn, lt < 0 ? -lt - 100 : lt);
      return;
  }
}

static cs_rc name_dup(const uint8_t *p, uint32_t n, char **out, cs_err *err) {
  if (!(*out = cs__mem_malloc((size_t)n + 1))) return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  memcpy(*out, p, n);
  (*out)[n] = 0;
  return CS_OK;
}

/* The schema list: a root, then (for a flat schema) one leaf per column. */
static cs_rc read_schema(cs_thrift *t, uint8_t type, cs_pq_file *f, cs_err *err) {
  uint8_t elem;
  uint32_t n;
  if (!cs_thrift_list(t, type, &elem, &n) || elem != CS_THRIFT_STRUCT || n == 0)
    return cs_err_set(err, CS_ECORRUPT, "colstore: %s: the Parquet schema is damaged", f->path);
  schema_element root;
  if (!read_schema_element(t, elem, &root))
    return cs_err_set(err, CS_ECORRUPT, "colstore: %s: the Parquet schema is damaged", f->path);
  if (n - 1 > CS_MAX_COLUMNS)
    return cs_err_set(err, CS_EINVAL, "colstore: %s: %u columns; a store holds at most %d", f->path, n - 1,
                      CS_MAX_COLUMNS);
  if (!(f->cols = cs__mem_calloc(n, sizeof *f->cols)))
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  for (uint32_t i = 1; i < n; i++) {
    schema_element e;
    if (!read_schema_element(t, elem, &e) || !e.name)
      return cs_err_set(err, CS_ECORRUPT, "colstore: %s: the Parquet schema is damaged", f->path);
    cs_pq_column *c = &f->cols[f->n_cols];
    cs_rc rc = name_dup(e.name, e.name_n, &c->name, err);
    if (rc != CS_OK) return rc;
    f->n_cols++;
    if (e.num_children > 0 || e.repetition == 2 || e.type < 0) {
      const char *what = e.num_children > 0  ? "a group (nested)"
                         : e.repetition == 2 ? "repeated (a list)"
                                             : "typeless";
      return cs_err_set(err, CS_EINVAL,
                        "colstore: %s: column %s is %s; colstore imports flat schemas only: "
                        "leave it out with columns= or flatten it first",
                        f->path, c->name, what);
    }
    c->phys = e.type;
    c->type_length = e.type_length;
    c->optional = e.repetition == 1;
    converted_to_logical(&e);
    map_column(&e, c);
  }
  if (root.num_children != (int32_t)f->n_cols)
    return cs_err_set(err, CS_EINVAL,
                      "colstore: %s: the Parquet schema is nested; colstore imports flat schemas only",
                      f->path);
  return CS_OK;
}

/* ------------------------------------------------------ the row groups */

static bool read_column_meta(cs_thrift *t, uint8_t type, cs_pq_chunk_meta *m, int32_t *phys) {
  if (!cs_thrift_begin(t, type)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  int64_t data_off = -1, dict_off = -1;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    bool ok;
    switch (id) {
      case 1: ok = cs_thrift_i32(t, ft, phys); break;
      case 4: ok = cs_thrift_i32(t, ft, &m->codec); break;
      case 5: ok = cs_thrift_i64(t, ft, &m->num_values); break;
      case 7: ok = cs_thrift_i64(t, ft, &m->n_bytes); break;
      case 9: ok = cs_thrift_i64(t, ft, &data_off); break;
      case 11: ok = cs_thrift_i64(t, ft, &dict_off); break;
      default: ok = cs_thrift_skip(t, ft);
    }
    if (!ok) return false;
  }
  if (t->failed) return false;
  /* Some writers set a dictionary offset of 0 for "none". */
  m->start = dict_off > 0 && dict_off < data_off ? dict_off : data_off;
  return data_off >= 0 && m->n_bytes >= 0 && m->num_values >= 0;
}

static bool read_column_chunk(cs_thrift *t, uint8_t type, cs_pq_chunk_meta *m, int32_t *phys,
                              bool *external) {
  if (!cs_thrift_begin(t, type)) return false;
  int16_t last = 0, id;
  uint8_t ft;
  bool have = false;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    bool ok;
    if (id == 1) {
      *external = true;
      ok = cs_thrift_skip(t, ft);
    } else if (id == 3) {
      ok = read_column_meta(t, ft, m, phys);
      have = ok;
    } else {
      ok = cs_thrift_skip(t, ft);
    }
    if (!ok) return false;
  }
  return !t->failed && (have || cs_thrift_fail(t));
}

static cs_rc read_row_group(cs_thrift *t, uint8_t type, cs_pq_file *f, cs_pq_row_group *g, uint32_t index,
                            cs_err *err) {
  if (!cs_thrift_begin(t, type)) goto damaged;
  int16_t last = 0, id;
  uint8_t ft;
  uint32_t n_chunks = 0;
  while (cs_thrift_next(t, &last, &id, &ft)) {
    if (id == 1) {
      uint8_t elem;
      if (!cs_thrift_list(t, ft, &elem, &n_chunks) || elem != CS_THRIFT_STRUCT || g->chunks) goto damaged;
      if (n_chunks != f->n_cols)
        return cs_err_set(err, CS_ECORRUPT, "colstore: %s: row group %u has %u column chunks for %u columns",
                          f->path, index, n_chunks, f->n_cols);
      if (!(g->chunks = cs__mem_calloc(n_chunks ? n_chunks : 1, sizeof *g->chunks)))
        return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
      for (uint32_t i = 0; i < n_chunks; i++) {
        int32_t phys = -1;
        bool external = false;
        if (!read_column_chunk(t, elem, &g->chunks[i], &phys, &external)) goto damaged;
        if (external)
          return cs_err_set(err, CS_EINVAL,
                            "colstore: %s: row group %u, column %s: its data is in another file; "
                            "colstore imports self-contained Parquet files only",
                            f->path, index, f->cols[i].name);
        if (phys != f->cols[i].phys) goto damaged;
      }
    } else if (id == 3) {
      if (!cs_thrift_i64(t, ft, &g->num_rows)) goto damaged;
    } else if (!cs_thrift_skip(t, ft)) {
      goto damaged;
    }
  }
  if (t->failed || !g->chunks || g->num_rows < 0) goto damaged;
  return CS_OK;
damaged:
  return cs_err_set(err, CS_ECORRUPT, "colstore: %s: the Parquet metadata of row group %u is damaged",
                    f->path, index);
}

cs_rc cs_pq_parse_metadata(const uint8_t *p, size_t n, const char *path, cs_pq_file **out, cs_err *err) {
  *out = NULL;
  cs_pq_file *f = cs__mem_calloc(1, sizeof *f);
  if (!f || !(f->path = cs__mem_strdup(path))) {
    cs__mem_free(f);
    return cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
  }
  f->fd = -1;
  cs_thrift t;
  cs_thrift_init(&t, p, n);
  int16_t last = 0, id;
  uint8_t ft;
  cs_rc rc = CS_OK;
  bool have_schema = false, have_groups = false;
  if (!cs_thrift_begin(&t, CS_THRIFT_STRUCT)) goto damaged;
  while (cs_thrift_next(&t, &last, &id, &ft)) {
    if (id == 2 && !have_schema) {
      if ((rc = read_schema(&t, ft, f, err)) != CS_OK) goto fail;
      have_schema = true;
    } else if (id == 3) {
      if (!cs_thrift_i64(&t, ft, &f->num_rows)) goto damaged;
    } else if (id == 4 && have_schema && !have_groups) {
      uint8_t elem;
      uint32_t k;
      if (!cs_thrift_list(&t, ft, &elem, &k) || elem != CS_THRIFT_STRUCT) goto damaged;
      if (!(f->row_groups = cs__mem_calloc(k ? k : 1, sizeof *f->row_groups))) {
        rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
        goto fail;
      }
      for (uint32_t i = 0; i < k; i++) {
        f->n_row_groups++;
        if ((rc = read_row_group(&t, elem, f, &f->row_groups[i], i, err)) != CS_OK) goto fail;
      }
      have_groups = true;
    } else if (id == 8) {
      rc = cs_err_set(err, CS_EINVAL, "colstore: %s: the Parquet file is encrypted; colstore cannot read it",
                      path);
      goto fail;
    } else if (!cs_thrift_skip(&t, ft)) {
      goto damaged;
    }
  }
  if (t.failed || !have_schema || !have_groups) goto damaged;
  int64_t sum = 0;
  for (uint32_t i = 0; i < f->n_row_groups; i++) {
    if (f->row_groups[i].num_rows > INT64_MAX - sum) goto damaged;
    sum += f->row_groups[i].num_rows;
  }
  if (sum != f->num_rows) goto damaged;
  *out = f;
  return CS_OK;
damaged:
  rc = cs_err_set(err, CS_ECORRUPT, "colstore: %s: the Parquet metadata is damaged", path);
fail:
  cs_pq_close(f);
  return rc;
}

cs_rc cs_pq_open(const char *path, cs_pq_file **out, cs_err *err) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cs_err_set(err, CS_ENOENT, "colstore: cannot read %s: %s", path, strerror(errno));
  struct stat st;
  uint8_t tail[8];
  cs_rc rc;
  if (fstat(fd, &st) != 0 || st.st_size < 12) {
    rc = cs_err_set(err, CS_EINVAL, "colstore: %s is not a Parquet file (too short)", path);
    goto fail;
  }
  uint64_t size = (uint64_t)st.st_size;
  if ((rc = cs__pread_full(fd, tail, 8, size - 8, path, err)) != CS_OK) goto fail;
  if (memcmp(tail + 4, "PAR1", 4) != 0) {
    rc = cs_err_set(err, CS_EINVAL, "colstore: %s is not a Parquet file (no PAR1 at its end)", path);
    goto fail;
  }
  uint32_t meta_n =
      (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24;
  if ((uint64_t)meta_n > size - 12) {
    rc = cs_err_set(err, CS_ECORRUPT,
                    "colstore: %s: the Parquet footer claims %u bytes of metadata in a file of %llu", path,
                    meta_n, (unsigned long long)size);
    goto fail;
  }
  uint8_t *meta = cs__mem_malloc(meta_n ? meta_n : 1);
  if (!meta) {
    rc = cs_err_set(err, CS_ENOMEM, "colstore: out of memory");
    goto fail;
  }
  rc = cs__pread_full(fd, meta, meta_n, size - 8 - meta_n, path, err);
  if (rc == CS_OK) rc = cs_pq_parse_metadata(meta, meta_n, path, out, err);
  cs__mem_free(meta);
  if (rc != CS_OK) goto fail;
  (*out)->fd = fd;
  (*out)->file_bytes = size;
  return CS_OK;
fail:
  close(fd);
  return rc;
}

void cs_pq_close(cs_pq_file *f) {
  if (!f) return;
  if (f->fd >= 0) close(f->fd);
  for (uint32_t i = 0; i < f->n_cols; i++) cs__mem_free(f->cols[i].name);
  cs__mem_free(f->cols);
  for (uint32_t i = 0; i < f->n_row_groups; i++) cs__mem_free(f->row_groups[i].chunks);
  cs__mem_free(f->row_groups);
  cs__mem_free(f->path);
  cs__mem_free(f);
}

cs_rc cs_pq_column_supported(const cs_pq_file *f, uint32_t col, cs_err *err) {
  const cs_pq_column *c = &f->cols[col];
  if (c->type) return CS_OK;
  return cs_err_set(err, CS_EINVAL,
                    "colstore: %s: column %s is %s, which colstore does not import; "
                    "leave it out with columns= or cast it in the writer",
                    f->path, c->name, c->logical);
}
