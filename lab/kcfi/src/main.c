/* kcfi: a host tool for inspecting Clang KCFI (-fsanitize=kcfi). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi COMMAND [ARGS]\n"
	"commands:\n"
	"  hash PROTOTYPE...            KCFI type id of a C function type\n"
	"  scan IMAGE [--json]          preambles, check sites, traps, typeid symbols\n"
	"  site IMAGE ADDR|SYMBOL+OFF   one check site and the functions it may call\n"
	"  func IMAGE NAME...           the type id in front of each function\n"
	"  explain --arch ARCH VALUE    decode an arm64 brk/ESR, x86_64 or riscv64 check bytes\n"
	"  decode --arch ARCH BYTES     find the check in code bytes (as gdb reads them)\n"
	"Run 'kcfi COMMAND --help' for details.\n";

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "hash", cmd_hash },
	{ "scan", cmd_scan },
	{ "site", cmd_site },
	{ "func", cmd_func },
	{ "decode", cmd_decode },
	{ "explain", cmd_explain },
};

int main(int argc, char **argv)
{
	if (argc < 2)
		return kcfi_usage_err(NULL, usage, "missing command");
	if (kcfi_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return kcfi_usage_err(NULL, usage, "unknown option '%s'", argv[1]);
	return kcfi_usage_err(NULL, usage, "unknown command '%s'", argv[1]);
}
