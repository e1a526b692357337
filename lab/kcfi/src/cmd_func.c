/*
 * kcfi func IMAGE NAME... [--json]: the type id in front of each named
 * function, as the preamble scan finds it ("none" when the function has
 * no preamble), the bytes the preamble adds, and the 32-bit word in
 * front of the entry (what a check compares, preamble or not).  NAME may
 * be any symbol in code, a label inside a function too.
 */
#include "commands.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "elf.h"
#include "index.h"
#include "report.h"
#include "scan.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi func IMAGE NAME... [--json] [--types]\n"
	"  Print \"0xID  NAME\" for each function NAME: the type id of its KCFI\n"
	"  preamble, or \"none  NAME\" when it has none.  --json adds the entry,\n"
	"  where the id sits, the bytes the preamble adds and the word in front\n"
	"  of the entry.  NAME may be any symbol in code; one that is not in\n"
	"  IMAGE is an error.  --types adds each function's prototype from the\n"
	"  image's DWARF and whether it hashes to the id (as kcfi scan --types).\n";

/* The preamble functions named NAME: indexes into s->funcs, *n of them. */
static size_t *named(const struct kcfi_scan *s, const char *name, size_t *n)
{
	size_t *v = malloc((s->nfuncs ? s->nfuncs : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->nfuncs; i++)
		if (strcmp(s->funcs[i].name, name) == 0)
			v[(*n)++] = i;
	return v;
}

/* The first symbol named NAME in a code section: 1 and its location, or 0. */
static int code_symbol(const struct kcfi_scan *s, const char *name, uint32_t *sec,
		       uint64_t *off)
{
	const struct elf_file *ef = s->elf;

	for (size_t i = 1; i < ef->nsymbols; i++)
		if (strcmp(ef->symbols[i].name, name) == 0 &&
		    kcfi_symbol_location(ef, &ef->symbols[i], sec, off) &&
		    kcfi_is_code(ef, *sec))
			return 1;
	return 0;
}

/* ", \"word_before\": \"0x...\"": the 32-bit word in front of (sec, off). */
static void print_word_before(const struct kcfi_scan *s, uint32_t sec, uint64_t off)
{
	const struct elf_section *sc = &s->elf->sections[sec];

	if (off >= 4 && off <= sc->size)
		printf(", \"word_before\": \"0x%08" PRIx32 "\"", elf_rd32(sc->data + off - 4));
}

static void print_text(const struct kcfi_scan *s, size_t i)
{
	const struct kcfi_func *fn = &s->funcs[i];

	if (fn->id_known)
		printf("0x%08" PRIx32 "  %s", fn->id, fn->name);
	else
		printf("?           %s (id from %s)", fn->name, fn->id_sym ? fn->id_sym : "?");
	if (s->has_types && s->protos[i])
		printf("  %s (%s)", s->protos[i], kcfi_type_verdict_name(s->type_verdict[i]));
	else if (s->has_types)
		printf("  (%s)", kcfi_type_verdict_name(s->type_verdict[i]));
	printf("\n");
	if (s->arch->func_fields) {
		struct kcfi_fields out = kcfi_text_fields(stdout);

		s->arch->func_fields(&out, s, fn);
	}
}

static void print_json(const struct kcfi_scan *s, const struct kcfi_func *fn, int *first)
{
	printf("%s\n    {", *first ? "" : ",");
	*first = 0;
	kcfi_json_func_fields(stdout, s, fn);
	print_word_before(s, fn->sec, fn->off);
	printf("}");
}

static void print_none_json(const struct kcfi_scan *s, const char *name, uint32_t sec,
			    uint64_t off, int *first)
{
	printf("%s\n    {\"name\": ", *first ? "" : ",");
	*first = 0;
	kcfi_json_string(stdout, name);
	printf(", ");
	kcfi_json_loc(stdout, s, "entry", sec, off);
	printf(", \"type_id\": null, \"preamble_bytes\": 0");
	print_word_before(s, sec, off);
	printf("}");
}

static int report(const struct kcfi_scan *s, const char *path, char **names,
		  int nnames, int json)
{
	int first = 1, rc = 0;

	if (json) {
		printf("{\n  \"file\": ");
		kcfi_json_string(stdout, path);
		printf(",\n  \"machine\": \"%s\",\n  \"functions\": [",
		       elf_machine_name(s->elf->machine));
	}
	for (int k = 0; k < nnames; k++) {
		size_t n;
		size_t *v = named(s, names[k], &n);

		if (!v) {
			kcfi_err("func", "out of memory");
			return EXIT_INPUT;
		}
		uint32_t sec;
		uint64_t off;

		if (!n && !code_symbol(s, names[k], &sec, &off)) {
			kcfi_err("func", "no symbol named '%s' in the code of %s", names[k], path);
			rc = EXIT_INPUT;
		} else if (!n) {
			if (json)
				print_none_json(s, names[k], sec, off, &first);
			else
				printf("none        %s\n", names[k]);
		}
		for (size_t i = 0; i < n; i++) {
			if (json)
				print_json(s, &s->funcs[v[i]], &first);
			else
				print_text(s, v[i]);
		}
		free(v);
	}
	if (json)
		printf("\n  ]\n}\n");
	return rc;
}

int cmd_func(int argc, char **argv)
{
	const char *path = NULL;
	char **names = malloc((size_t)argc * sizeof(*names));
	int nnames = 0, json = 0, types = 0, rc;
	char err[512];
	struct elf_file ef;
	struct kcfi_scan s;

	if (!names) {
		kcfi_err("func", "out of memory");
		return EXIT_INPUT;
	}
	for (int i = 1; i < argc; i++) {
		if (kcfi_is_help(argv[i])) {
			fputs(usage, stdout);
			free(names);
			return 0;
		}
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--types") == 0) {
			types = 1;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			free(names);
			return kcfi_usage_err("func", usage, "unknown option '%s'", argv[i]);
		} else if (!path) {
			path = argv[i];
		} else {
			names[nnames++] = argv[i];
		}
	}
	if (!path || !nnames) {
		free(names);
		return kcfi_usage_err("func", usage, "need IMAGE and at least one NAME");
	}
	if (kcfi_scan_file("func", path, &ef, &s)) {
		free(names);
		return EXIT_INPUT;
	}
	if (types && kcfi_scan_types(&s, path, err, sizeof(err)) != 0) {
		kcfi_err("func", "%s", err);
		kcfi_scan_free(&s);
		elf_close(&ef);
		free(names);
		return EXIT_INPUT;
	}
	rc = report(&s, path, names, nnames, json);
	kcfi_scan_free(&s);
	elf_close(&ef);
	free(names);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		kcfi_err("func", "error writing output");
		return EXIT_INPUT;
	}
	return rc;
}
