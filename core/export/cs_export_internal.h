/*
** cs_export_internal.h - the exporter's parts: the format writers that
** live in export/ itself (CSV, which is text, not an interchange format
** with a footer to parse back) beside those of interchange/.
*/
#ifndef CS_EXPORT_INTERNAL_H
#define CS_EXPORT_INTERNAL_H

#include "cs_export.h"
#include "cs_interchange_internal.h"

/* cs_csv_write.c: RFC 4180 text (docs/sql.md "colstore_export"). */
extern const cs_format_writer_ops cs_csv_writer_ops;

#endif
