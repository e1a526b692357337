/* kcfi hash: KCFI type ids of C prototypes or of mangled type names. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdecl.h"
#include "commands.h"
#include "dwarf.h"
#include "elf.h"
#include "mangle.h"
#include "typeid.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi hash [-v] [--hash HASH] PROTOTYPE...\n"
	"       kcfi hash [-v] [--hash HASH] -    (prototypes from stdin, one per line)\n"
	"       kcfi hash --mangled NAME...       (NAME with or without _ZTS)\n"
	"       kcfi hash --image IMAGE PROTOTYPE...\n"
	"  Print the 32-bit KCFI type id clang -fsanitize=kcfi assigns to a C\n"
	"  function type: low 32 bits of xxHash64(\"_ZTS\" + Itanium mangling).\n"
	"  -v also prints the mangled name.  Example: kcfi hash 'void (int *)'\n"
	"  --hash fnv1a: 32-bit FNV-1a over the same string instead, as LLVM 22\n"
	"  hashes with -fsanitize-kcfi-hash=FNV-1a and GCC's KCFI does;\n"
	"  --hash xxhash64 is the default.\n"
	"  --image takes typedef names from IMAGE's DWARF (a vmlinux, module or\n"
	"  object with debug info), as its source spells them:\n"
	"  'int (FSE_DTable *, U32)'.\n";

struct options {
	int verbose;
	int mangled;
	enum kcfi_hash hash;
	struct dwarf_funcs *dwarf; /* --image */
};

static const struct ctype *image_typedef(void *ctx, const char *name, size_t len)
{
	return dwarf_typedef(ctx, name, len);
}

/* TEXT for an error message: at most 120 characters, bytes escaped. */
static const char *quoted(const char *text, char *buf, size_t size)
{
	size_t n = 0;

	for (const char *p = text; *p && n + 8 < size; p++) {
		unsigned char c = (unsigned char)*p;

		if (p - text == 120) {
			n += (size_t)snprintf(buf + n, size - n, "...");
			break;
		}
		if (c >= 0x20 && c < 0x7f)
			buf[n++] = (char)c;
		else
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
	}
	buf[n] = '\0';
	return buf;
}

static int hash_one(const struct options *o, const char *text)
{
	char err[256], hashed[CDECL_MAX_INPUT + 8];
	uint32_t id;

	if (o->mangled) {
		id = kcfi_typeid_with(o->hash, text, NULL, 0);
		printf("0x%08" PRIx32 "  %s%s\n", id,
		       strncmp(text, "_ZTS", 4) == 0 ? "" : "_ZTS", text);
		return 0;
	}
	{
		char *name = NULL;

		if (o->dwarf) {
			struct cdecl *cd = cdecl_parse_with(text, image_typedef, o->dwarf,
							    err, sizeof(err));

			if (cd) {
				name = mangle_type(cdecl_type(cd));
				cdecl_free(cd);
				if (!name)
					snprintf(err, sizeof(err), "out of memory");
			}
		} else {
			name = mangle_prototype(text, err, sizeof(err));
		}
		if (!name) {
			char q[600];

			kcfi_err("hash", "cannot parse '%s': %s", quoted(text, q, sizeof(q)), err);
			return EXIT_INPUT;
		}
		id = kcfi_typeid_with(o->hash, name, hashed, sizeof(hashed));
		free(name);
	}
	if (o->verbose)
		printf("0x%08" PRIx32 "  %s  %s\n", id, hashed, text);
	else
		printf("0x%08" PRIx32 "  %s\n", id, text);
	return 0;
}

static int hash_stdin(const struct options *o)
{
	char line[CDECL_MAX_INPUT + 2];
	int rc = 0;

	while (fgets(line, sizeof(line), stdin)) {
		size_t len = strlen(line);
		char *p = line;

		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			int c;

			kcfi_err("hash", "line longer than %d characters", CDECL_MAX_INPUT);
			while ((c = getchar()) != EOF && c != '\n')
				;
			rc = EXIT_INPUT;
			continue;
		}
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		if (hash_one(o, p))
			rc = EXIT_INPUT;
	}
	return rc;
}

int cmd_hash(int argc, char **argv)
{
	struct options o = { 0 };
	int rc = 0, nops = 0, options_done = 0;
	const char *image = NULL;
	struct elf_file ef;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!options_done && strcmp(a, "--image") == 0) {
			if (i + 1 >= argc)
				return kcfi_usage_err("hash", usage, "--image needs an IMAGE");
			image = argv[++i];
			continue;
		}
		if (!options_done && (strcmp(a, "--hash") == 0 || strncmp(a, "--hash=", 7) == 0)) {
			const char *name = a[6] == '=' ? a + 7 : i + 1 < argc ? argv[++i] : NULL;
			int h = name ? kcfi_hash_named(name) : -1;

			if (!name)
				return kcfi_usage_err("hash", usage, "--hash needs xxhash64 or fnv1a");
			if (h < 0)
				return kcfi_usage_err("hash", usage,
						      "unknown hash '%s' (xxhash64 or fnv1a)", name);
			o.hash = (enum kcfi_hash)h;
			continue;
		}
		if (options_done || a[0] != '-' || strcmp(a, "-") == 0)
			nops++;
		else if (strcmp(a, "--") == 0)
			options_done = 1;
		else if (kcfi_is_help(a)) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0)
			o.verbose = 1;
		else if (strcmp(a, "--mangled") == 0)
			o.mangled = 1;
		else
			return kcfi_usage_err("hash", usage, "unknown option '%s'", a);
	}
	if (nops == 0)
		return kcfi_usage_err("hash", usage, "missing PROTOTYPE");
	if (image) {
		char err[512];

		if (elf_open(&ef, image, err, sizeof(err)) != 0) {
			kcfi_err("hash", "%s", err);
			return EXIT_INPUT;
		}
		o.dwarf = dwarf_funcs_open(ef.data, ef.size, image, err, sizeof(err));
		if (!o.dwarf) {
			kcfi_err("hash", "%s", err);
			elf_close(&ef);
			return EXIT_INPUT;
		}
	}
	options_done = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!options_done && strcmp(a, "--") == 0) {
			options_done = 1;
			continue;
		}
		if (!options_done && (strcmp(a, "--image") == 0 || strcmp(a, "--hash") == 0)) {
			i++;
			continue;
		}
		if (!options_done && a[0] == '-' && strcmp(a, "-") != 0)
			continue;
		if (strcmp(a, "-") == 0 ? hash_stdin(&o) : hash_one(&o, a))
			rc = EXIT_INPUT;
	}
	if (fflush(stdout) != 0)
		rc = EXIT_INPUT;
	if (o.dwarf) {
		dwarf_funcs_close(o.dwarf);
		elf_close(&ef);
	}
	return rc;
}
