/*
 * kcfi explain: decode what a KCFI trap tells the kernel.  The arch (by
 * its name or an alias) comes from arch.c's table; its explain hook
 * (explain.c) reads the values: arm64 a brk immediate or ESR, x86_64 and
 * riscv64 the bytes of a check.
 */
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "commands.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi explain --arch arm64 BRK_IMMEDIATE|ESR\n"
	"       kcfi explain --arch x86_64|riscv64 BYTES...\n"
	"  arm64: a brk immediate (0x8222) or a full ESR (0xf2008222).\n"
	"  x86_64: the hex bytes of a check sequence, e.g.\n"
	"    41 ba 5b ad f3 81 45 03 53 fc 74 02 0f 0b\n"
	"  riscv64: the bytes of a check and the call after it, e.g.\n"
	"    03 a3 c7 ff b7 53 0c 7e 9b 83 53 2a 63 03 73 00 02 90 82 87\n"
	"  or an oops \"Code:\" line's 16-bit words (\"... 2a53 0063 0073 (9002) 8782\").\n"
	"  (the bytes of an oops \"Code:\" line work too: <> marks are ignored\n"
	"  and the check is searched for).\n";

int cmd_explain(int argc, char **argv)
{
	const char *arch = NULL;
	const struct kcfi_arch_ops *ops;
	int first = 0, nvalues = 0;

	for (int i = 1; i < argc; i++) {
		if (kcfi_is_help(argv[i])) {
			fputs(usage, stdout);
			return 0;
		}
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--arch") == 0) {
			if (i + 1 >= argc)
				return kcfi_usage_err("explain", usage, "--arch needs a value");
			arch = argv[++i];
		} else if (strncmp(a, "--arch=", 7) == 0) {
			arch = a + 7;
		} else if (a[0] == '-' && a[1] != '\0' && !nvalues) {
			return kcfi_usage_err("explain", usage, "unknown option '%s'", a);
		} else {
			if (!nvalues)
				first = i;
			nvalues++;
			if (first + nvalues - 1 != i)
				return kcfi_usage_err("explain", usage,
						      "options must come before the values");
		}
	}
	if (!arch)
		return kcfi_usage_err("explain", usage, "missing --arch arm64|x86_64|riscv64");
	if (!nvalues)
		return kcfi_usage_err("explain", usage, "missing value to explain");
	ops = kcfi_arch_by_name(arch, 1);
	if (!ops)
		return kcfi_usage_err("explain", usage,
				      "unknown --arch '%s' (arm64, x86_64 or riscv64)", arch);
	if (ops->explain_one && nvalues != 1)
		return kcfi_usage_err("explain", usage, "%s takes %s", ops->name,
				      ops->explain_one);
	return ops->explain(nvalues, argv + first);
}
