/*
 * kcfi decode --arch ARCH [--json] BYTES...: the first KCFI check in a run
 * of code bytes, such as gdb reads from a running kernel: where it starts,
 * how long it is, the type id it expects, the register that holds the
 * call target and where it traps.  The same decoders as kcfi scan.
 *
 * With --preamble, BYTES end at a function's entry: the type id its
 * preamble holds, as the kernel finds it (x86_64: the mov $id,%eax before
 * any nop padding, or none; arm64: the word in front, which nothing marks).
 */
#include "commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "elf.h"
#include "insn.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi decode --arch x86_64|arm64 [--json] BYTES...\n"
	"  Find the first KCFI check in the hex code bytes (\"41 ba 5b ...\",\n"
	"  \"41ba5b...\"), e.g. as gdb reads them at $pc, and print where it\n"
	"  starts, its length, the expected type id, the target register and\n"
	"  the trap's offset.  Exit 1 when there is none.\n"
	"  --preamble: BYTES end at a function's entry; print the type id its\n"
	"  preamble holds (x86_64: none without the mov $id,%eax).\n";

#define MAX_CODE 4096
#define MAX_PADDING 64 /* x86_64: nops between the mov and the entry */
#define X86_NOP 0x90
#define X86_MOV_EAX 0xb8

struct found {
	size_t off, len, trap_off;
	uint32_t id;
	const char *target;
	int32_t disp;
	int brk;
	uint16_t brk_imm;
	const char *check_reg; /* x86_64: the register the check computes in */
};

static int find_x86(const uint8_t *p, size_t n, struct found *f)
{
	for (size_t i = 0; i < n; i++) {
		struct x86_check c;

		if (x86_decode_check(p + i, n - i, &c, NULL) == 4) {
			*f = (struct found){ i, c.len, i + c.trap_off, c.id,
					     x86_reg_name(c.target_reg), c.disp, 0, 0,
					     x86_reg_name(c.temp_reg) };
			return 1;
		}
	}
	return 0;
}

static int find_a64(const uint8_t *p, size_t n, struct found *f)
{
	static char reg[8];

	for (size_t i = 0; i + A64_CHECK_LEN <= n; i += 4) {
		struct a64_check c;

		if (a64_decode_check(p + i, n - i, &c, NULL) == 6) {
			snprintf(reg, sizeof(reg), "x%d", c.target_reg);
			*f = (struct found){ i, A64_CHECK_LEN, i + c.trap_off, c.id, reg,
					     c.disp, 1, c.brk_imm, NULL };
			return 1;
		}
	}
	return 0;
}

/* The preamble ending at the end of P: 1 with its id, id offset and
 * bytes, or 0 when there is none (x86_64). */
static int preamble_x86(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
			size_t *bytes)
{
	size_t pad = 0;

	while (pad < MAX_PADDING && pad < n && p[n - 1 - pad] == X86_NOP)
		pad++;
	if (n < pad + 5 || p[n - pad - 5] != X86_MOV_EAX)
		return 0;
	*id = elf_rd32(p + n - pad - 4);
	*id_off = pad + 4;
	*bytes = pad + 5;
	return 1;
}

static int print_preamble(const char *arch, const uint8_t *p, size_t n, int json)
{
	uint32_t id = 0;
	size_t id_off = 4, bytes = 4;
	int found;

	if (strcmp(arch, "x86_64") == 0) {
		found = preamble_x86(p, n, &id, &id_off, &bytes);
	} else if (strcmp(arch, "arm64") == 0) {
		found = n >= 4;
		if (found)
			id = elf_rd32(p + n - 4);
	} else {
		return kcfi_usage_err("decode", usage, "unknown --arch '%s' (x86_64 or arm64)", arch);
	}
	if (json && found)
		printf("{\"arch\": \"%s\", \"type_id\": \"0x%08" PRIx32 "\", \"id_offset\": %zu"
		       ", \"preamble_bytes\": %zu}\n", arch, id, id_off, bytes);
	else if (json)
		printf("{\"arch\": \"%s\", \"type_id\": null, \"preamble_bytes\": 0}\n", arch);
	else if (found)
		printf("0x%08" PRIx32 "  (%zu bytes before the entry; preamble %zu bytes)\n",
		       id, id_off, bytes);
	else
		printf("none\n");
	return 0;
}

int cmd_decode(int argc, char **argv)
{
	const char *arch = NULL;
	int json = 0, first = 0, preamble = 0;
	uint8_t code[MAX_CODE];
	size_t n;
	struct found f;
	int ok;

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
			arch = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return kcfi_usage_err("decode", usage, "unknown option '%s'", argv[i]);
		} else {
			first = i;
		}
	}
	if (!arch)
		return kcfi_usage_err("decode", usage, "missing --arch x86_64|arm64");
	if (!first)
		return kcfi_usage_err("decode", usage, "missing BYTES");
	if (kcfi_parse_bytes("decode", argc - first, argv + first, code, MAX_CODE, &n))
		return EXIT_INPUT;
	if (preamble)
		return print_preamble(arch, code, n, json);
	if (strcmp(arch, "x86_64") == 0)
		ok = find_x86(code, n, &f);
	else if (strcmp(arch, "arm64") == 0)
		ok = find_a64(code, n, &f);
	else
		return kcfi_usage_err("decode", usage, "unknown --arch '%s' (x86_64 or arm64)", arch);
	if (!ok) {
		kcfi_err("decode", "no KCFI check in these %zu bytes", n);
		return EXIT_INPUT;
	}
	if (json) {
		printf("{\"arch\": \"%s\", \"offset\": %zu, \"length\": %zu, \"trap_offset\": %zu"
		       ", \"type_id\": \"0x%08" PRIx32 "\", \"target_register\": \"%s\""
		       ", \"type_id_from\": %" PRId32,
		       arch, f.off, f.len, f.trap_off, f.id, f.target, f.disp);
		if (f.brk)
			printf(", \"brk_immediate\": \"0x%04x\"", f.brk_imm);
		if (f.check_reg)
			printf(", \"check_register\": \"%s\"", f.check_reg);
		printf("}\n");
	} else {
		printf("check at +%zu, %zu bytes: expected type id 0x%08" PRIx32
		       ", target in %s (its id read from %s%+" PRId32 "), trap at +%zu\n",
		       f.off, f.len, f.id, f.target, f.target, f.disp, f.trap_off);
	}
	return 0;
}
