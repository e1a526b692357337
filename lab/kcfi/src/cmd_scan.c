/* kcfi scan IMAGE [--json] */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "elf.h"
#include "report.h"
#include "scan.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi scan IMAGE [--json] [--types]\n"
	"  List the KCFI preambles (function -> type id), check sites (trap\n"
	"  address, expected id, target register, .kcfi_traps entry) and\n"
	"  __kcfi_typeid_ symbols of an ELF64 x86_64/aarch64/riscv64 object, module or\n"
	"  vmlinux, with a summary.  --json prints the same for scripts.\n"
	"  --types reads each function's prototype from the image's DWARF,\n"
	"  names each type id by it, and verifies every preamble's id against\n"
	"  the hash of its prototype (an image, module or object with debug\n"
	"  info).  It also tells which hash the ids were made with (xxHash64 or\n"
	"  LLVM 22's FNV-1a): the one most of them match.\n";

int cmd_scan(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0, types = 0;
	char err[512];
	struct elf_file ef;
	struct kcfi_scan s;

	for (int i = 1; i < argc; i++) {
		if (kcfi_is_help(argv[i])) {
			fputs(usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--types") == 0)
			types = 1;
		else if (argv[i][0] == '-' && argv[i][1] != '\0')
			return kcfi_usage_err("scan", usage, "unknown option '%s'", argv[i]);
		else if (path)
			return kcfi_usage_err("scan", usage, "more than one IMAGE");
		else
			path = argv[i];
	}
	if (!path)
		return kcfi_usage_err("scan", usage, "missing IMAGE");
	if (kcfi_scan_file("scan", path, &ef, &s))
		return EXIT_INPUT;
	if (types && kcfi_scan_types(&s, path, err, sizeof(err)) != 0) {
		kcfi_err("scan", "%s", err);
		kcfi_scan_free(&s);
		elf_close(&ef);
		return EXIT_INPUT;
	}
	if (json)
		kcfi_print_json(stdout, &s, path);
	else
		kcfi_print_text(stdout, &s, path);
	kcfi_scan_free(&s);
	elf_close(&ef);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		kcfi_err("scan", "error writing output");
		return EXIT_INPUT;
	}
	return 0;
}
