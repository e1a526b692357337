/* KCFI type ids: low 32 bits of xxHash64("_ZTS" + Itanium-mangled type). */
#ifndef KCFI_TYPEID_H
#define KCFI_TYPEID_H

#include <stddef.h>
#include <stdint.h>

/*
 * Hash a mangled type name.  NAME may carry the "_ZTS" prefix or not; the
 * full string that was hashed (always with "_ZTS") is written to HASHED,
 * truncated to HASHED_SIZE.  HASHED may be NULL.
 */
uint32_t kcfi_typeid(const char *name, char *hashed, size_t hashed_size);

#endif
