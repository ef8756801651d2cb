/*
** colstore_array.h - the one entry point of ext/colstore_array.c.
**
** A header of its own, as colstore_import.h is, so that the array functions
** are added to the extension by two lines in colstore_func.c (this include
** and the call in csx_register_functions) and nothing else.
*/
#ifndef COLSTORE_ARRAY_H
#define COLSTORE_ARRAY_H

#include "colstore_ext.h"

/* Registers colstore_append(table, name, blob [, name, blob ...]) and
** colstore_array(table, name [, '_rows' | '_mask', blob]). */
int csx_register_arrays(sqlite3 *db, csx_conn *conn);

#endif
