#include "typeid.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xxhash64.h"

/* 32-bit FNV-1a: the offset basis and prime of the FNV specification. */
static uint32_t fnv1a32(const char *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)p[i];
		h *= 16777619u;
	}
	return h;
}

static const struct {
	const char *name;    /* as LLVM's -fsanitize-kcfi-hash= spells it */
	const char *alias;   /* as the lab's command line spells it */
} hashes[KCFI_NHASHES] = {
	[KCFI_HASH_XXHASH64] = { "xxHash64", "xxhash64" },
	[KCFI_HASH_FNV1A] = { "FNV-1a", "fnv1a" },
};

const char *kcfi_hash_name(enum kcfi_hash hash)
{
	return hashes[hash].name;
}

int kcfi_hash_named(const char *name)
{
	for (int i = 0; i < KCFI_NHASHES; i++)
		if (strcasecmp(name, hashes[i].name) == 0 ||
		    strcasecmp(name, hashes[i].alias) == 0)
			return i;
	return -1;
}

uint32_t kcfi_typeid_with(enum kcfi_hash hash, const char *name, char *hashed,
			  size_t hashed_size)
{
	static const char prefix[] = "_ZTS";
	size_t plen = strncmp(name, prefix, 4) == 0 ? 0 : 4;
	size_t nlen = strlen(name);
	char *buf = malloc(plen + nlen + 1);
	uint32_t id;

	if (!buf)
		abort();
	memcpy(buf, prefix, plen);
	memcpy(buf + plen, name, nlen + 1);
	if (hash == KCFI_HASH_FNV1A)
		id = fnv1a32(buf, plen + nlen);
	else
		id = (uint32_t)xxhash64(buf, plen + nlen, 0);
	if (hashed && hashed_size) {
		strncpy(hashed, buf, hashed_size - 1);
		hashed[hashed_size - 1] = '\0';
	}
	free(buf);
	return id;
}

uint32_t kcfi_typeid(const char *name, char *hashed, size_t hashed_size)
{
	return kcfi_typeid_with(KCFI_HASH_XXHASH64, name, hashed, hashed_size);
}
