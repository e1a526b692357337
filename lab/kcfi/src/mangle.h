/* Itanium C++ ABI mangling of C types, as clang does for KCFI type ids. */
#ifndef KCFI_MANGLE_H
#define KCFI_MANGLE_H

#include <stddef.h>

#include "cdecl.h"

/*
 * Mangle T (without the "_ZTS" prefix), e.g. "FvPiE" for void (int *).
 * Returns a malloc'd string, or NULL when out of memory.
 */
char *mangle_type(const struct ctype *t);

/*
 * Parse a C prototype and mangle its function type.  Returns a malloc'd
 * mangled name (no "_ZTS"), or NULL with a reason in ERR.
 */
char *mangle_prototype(const char *proto, char *err, size_t errsize);

#endif
