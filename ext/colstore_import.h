/*
** colstore_import.h - the one entry point of ext/colstore_import.c.
**
** A header of its own, rather than a line in colstore_ext.h, so that the
** import glue is added to the extension by two lines in colstore_func.c
** (this include and the call in csx_register_functions) and nothing else.
*/
#ifndef COLSTORE_IMPORT_H
#define COLSTORE_IMPORT_H

#include "colstore_ext.h"

/* Registers colstore_import(path, source [, 'option=value' ...]). */
int csx_register_import(sqlite3 *db);

#endif
