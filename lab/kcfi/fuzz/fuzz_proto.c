/* libFuzzer target: the C prototype parser and the Itanium mangler. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mangle.h"
#include "typeid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], *text, *name;

	if (size > CDECL_MAX_INPUT + 16)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	name = mangle_prototype(text, err, sizeof(err));
	if (name) {
		/* A mangling is never empty and always a function type. */
		if (name[0] != 'F' || name[strlen(name) - 1] != 'E')
			abort();
		kcfi_typeid(name, NULL, 0);
		free(name);
	} else if (err[0] == '\0') {
		abort(); /* every rejection has a reason */
	}
	free(text);
	return 0;
}
