/*
 * kcfi decode --arch ARCH [--json] BYTES...: the first KCFI check in a run
 * of code bytes, such as gdb reads from a running kernel: where it starts,
 * how long it is, the type id it expects, the register that holds the
 * call target and where it traps.  The same decoders as kcfi scan, through
 * the arch's find_check (arch.c; the finders are in scan_sites.c), and
 * the same per-arch JSON fields as kcfi scan --json (its site_fields).
 * "trap_instruction" is the arch's trap_name: x86_64's "ud2", or "udb"
 * where a FineIBT kernel patched the check (trap_offset: the d6 byte).
 *
 * With --preamble, BYTES end at a function's entry: the type id its
 * preamble holds, as the kernel finds it (x86_64: the mov $id,%eax before
 * any nop padding, or none; arm64, riscv64: the word in front, which
 * nothing marks): the arch's find_preamble (scan_preambles.c).
 */
#include "commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "report.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi decode --arch x86_64|arm64|riscv64 [--json] [--preamble] BYTES...\n"
	"  Find the first KCFI check in the hex code bytes (\"41 ba 5b ...\",\n"
	"  \"41ba5b...\"), e.g. as gdb reads them at $pc, and print where it\n"
	"  starts, its length, the expected type id, the target register and\n"
	"  the trap's offset.  Exit 1 when there is none.  (riscv64: the call\n"
	"  after the trap must be in the bytes too.)\n"
	"  --preamble: BYTES end at a function's entry; print the type id its\n"
	"  preamble holds (x86_64: none without the mov $id,%reg; a register\n"
	"  other than eax is the arity of -fsanitize-kcfi-arity).\n";

#define MAX_CODE 4096

static int print_preamble(const struct kcfi_arch_ops *a, const uint8_t *p, size_t n,
			  int json)
{
	uint32_t id = 0;
	size_t id_off = 4, bytes = 4;
	int reg = -1;
	int found = a->find_preamble(p, n, &id, &id_off, &bytes, &reg);

	if (json && found) {
		printf("{\"arch\": \"%s\", \"type_id\": \"0x%08" PRIx32 "\", \"id_offset\": %zu"
		       ", \"preamble_bytes\": %zu", a->name, id, id_off, bytes);
		/* One preamble cannot say whether eax means no arguments or
		 * no -fsanitize-kcfi-arity: the register, and its count. */
		if (reg >= 0)
			printf(", \"preamble_register\": \"%s\", \"arity_if_encoded\": %d",
			       a->preamble_reg_name(reg), reg);
		printf("}\n");
	} else if (json) {
		printf("{\"arch\": \"%s\", \"type_id\": null, \"preamble_bytes\": 0}\n", a->name);
	} else if (found) {
		printf("0x%08" PRIx32 "  (%zu bytes before the entry; preamble %zu bytes)\n",
		       id, id_off, bytes);
		if (reg > 0)
			printf("register %s: with -fsanitize-kcfi-arity, %s\n",
			       a->preamble_reg_name(reg), kcfi_arity_words((unsigned int)reg));
	} else {
		printf("none\n");
	}
	return 0;
}

static void print_json(const struct kcfi_arch_ops *a, const struct kcfi_decoded *f)
{
	const struct kcfi_site *st = &f->site;
	char trap[32];

	printf("{\"arch\": \"%s\", \"offset\": %" PRIu64 ", \"length\": %" PRIu32
	       ", \"trap_offset\": %" PRIu64 ", \"trap_instruction\": \"%s\""
	       ", \"type_id\": \"0x%08" PRIx32 "\""
	       ", \"target_register\": \"%s\", \"type_id_from\": %" PRId32,
	       a->name, st->off, st->len, st->trap, a->trap_name(st, trap, sizeof(trap)),
	       st->id, a->reg_name(st->target_reg), st->disp);
	if (f->check_reg)
		printf(", \"check_register\": \"%s\"", f->check_reg);
	if (a->site_fields) {
		struct kcfi_fields out = kcfi_json_fields(stdout);

		a->site_fields(&out, st);
	}
	printf("}\n");
}

int cmd_decode(int argc, char **argv)
{
	const char *arch_name = NULL;
	const struct kcfi_arch_ops *arch;
	int json = 0, first = 0, preamble = 0;
	uint8_t code[MAX_CODE];
	size_t n;
	struct kcfi_decoded f;

	for (int i = 1; i < argc && !first; i++) {
		if (kcfi_is_help(argv[i])) {
			fputs(usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--preamble") == 0) {
			preamble = 1;
		} else if (strcmp(argv[i], "--arch") == 0) {
			if (i + 1 >= argc)
				return kcfi_usage_err("decode", usage, "--arch needs a value");
			arch_name = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return kcfi_usage_err("decode", usage, "unknown option '%s'", argv[i]);
		} else {
			first = i;
		}
	}
	if (!arch_name)
		return kcfi_usage_err("decode", usage, "missing --arch x86_64|arm64|riscv64");
	if (!first)
		return kcfi_usage_err("decode", usage, "missing BYTES");
	/* The arch's name only: no aliases here (kcfi explain takes them). */
	arch = kcfi_arch_by_name(arch_name, 0);
	if (!arch)
		return kcfi_usage_err("decode", usage,
				      "unknown --arch '%s' (x86_64, arm64 or riscv64)", arch_name);
	if (kcfi_parse_bytes("decode", argc - first, argv + first, code, MAX_CODE, &n))
		return EXIT_INPUT;
	if (preamble)
		return print_preamble(arch, code, n, json);
	if (!arch->find_check(code, n, &f)) {
		kcfi_err("decode", "no KCFI check in these %zu bytes", n);
		return EXIT_INPUT;
	}
	if (json)
		print_json(arch, &f);
	else
		printf("check at +%" PRIu64 ", %" PRIu32 " bytes: expected type id 0x%08"
		       PRIx32 ", target in %s (its id read from %s%+" PRId32 "), trap at +%"
		       PRIu64 "\n", f.site.off, f.site.len, f.site.id,
		       arch->reg_name(f.site.target_reg), arch->reg_name(f.site.target_reg),
		       f.site.disp, f.site.trap);
	return 0;
}
