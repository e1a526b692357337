/* xxHash64 (XXH64), the hash LLVM uses for KCFI type ids. */
#ifndef KCFI_XXHASH64_H
#define KCFI_XXHASH64_H

#include <stddef.h>
#include <stdint.h>

uint64_t xxhash64(const void *data, size_t len, uint64_t seed);

#endif
