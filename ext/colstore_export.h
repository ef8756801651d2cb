/*
** colstore_export.h - the one entry point of ext/colstore_export.c, in a
** header of its own as colstore_import.h is.
*/
#ifndef COLSTORE_EXPORT_H
#define COLSTORE_EXPORT_H

#include "colstore_ext.h"

/* Registers colstore_export(source, path [, 'option=value' ...]); conn
** resolves table names. */
int csx_register_export(sqlite3 *db, csx_conn *conn);

#endif
