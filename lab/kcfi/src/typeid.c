#include "typeid.h"

#include <stdlib.h>
#include <string.h>

#include "xxhash64.h"

uint32_t kcfi_typeid(const char *name, char *hashed, size_t hashed_size)
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
	id = (uint32_t)xxhash64(buf, plen + nlen, 0);
	if (hashed && hashed_size) {
		strncpy(hashed, buf, hashed_size - 1);
		hashed[hashed_size - 1] = '\0';
	}
	free(buf);
	return id;
}
