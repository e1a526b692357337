/*
 * KCFI type ids: a 32-bit hash of "_ZTS" + the Itanium-mangled type.
 * clang's default is the low 32 bits of xxHash64; LLVM 22 can use 32-bit
 * FNV-1a instead (-Xclang -fsanitize-kcfi-hash=FNV-1a), the hash GCC's
 * KCFI uses, so that objects of both compilers agree.
 */
#ifndef KCFI_TYPEID_H
#define KCFI_TYPEID_H

#include <stddef.h>
#include <stdint.h>

enum kcfi_hash { KCFI_HASH_XXHASH64, KCFI_HASH_FNV1A, KCFI_NHASHES };

/*
 * Hash a mangled type name with xxHash64.  NAME may carry the "_ZTS"
 * prefix or not; the full string that was hashed (always with "_ZTS") is
 * written to HASHED, truncated to HASHED_SIZE.  HASHED may be NULL.
 */
uint32_t kcfi_typeid(const char *name, char *hashed, size_t hashed_size);

/* The same with the hash HASH. */
uint32_t kcfi_typeid_with(enum kcfi_hash hash, const char *name, char *hashed,
			  size_t hashed_size);

/* "xxHash64", "FNV-1a": as LLVM spells them. */
const char *kcfi_hash_name(enum kcfi_hash hash);

/* The hash NAME names (xxhash64, fnv1a, as LLVM spells them, any case),
 * or -1. */
int kcfi_hash_named(const char *name);

#endif
