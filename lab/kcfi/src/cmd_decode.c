/*
 * kcfi decode --arch ARCH [--json] BYTES...: the first KCFI check in a run
 * of code bytes, such as gdb reads from a running kernel: where it starts,
 * how long it is, the type id it expects, the register that holds the
 * call target and where it traps.  The same decoders as kcfi scan.
 *
 * With --preamble, BYTES end at a function's entry: the type id its
 * preamble holds, as the kernel finds it (x86_64: the mov $id,%eax before
 * any nop padding, or none; arm64, riscv64: the word in front, which
 * nothing marks).
 */
#include "commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "elf.h"
#include "insn.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi decode --arch x86_64|arm64|riscv64 [--json] [--preamble] BYTES...\n"
	"  Find the first KCFI check in the hex code bytes (\"41 ba 5b ...\",\n"
	"  \"41ba5b...\"), e.g. as gdb reads them at $pc, and print where it\n"
	"  starts, its length, the expected type id, the target register and\n"
	"  the trap's offset.  Exit 1 when there is none.  (riscv64: the call\n"
	"  after the trap must be in the bytes too.)\n"
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
	int has_rv;
	struct rv_check rv;    /* riscv64: the registers compared, lengths */
};

static int find_x86(const uint8_t *p, size_t n, struct found *f)
{
	for (size_t i = 0; i < n; i++) {
		struct x86_check c;

		if (x86_decode_check(p + i, n - i, &c, NULL) == 4) {
			*f = (struct found){ .off = i, .len = c.len, .trap_off = i + c.trap_off,
					     .id = c.id, .target = x86_reg_name(c.target_reg),
					     .disp = c.disp, .check_reg = x86_reg_name(c.temp_reg) };
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
			*f = (struct found){ .off = i, .len = A64_CHECK_LEN,
					     .trap_off = i + c.trap_off, .id = c.id, .target = reg,
					     .disp = c.disp, .brk = 1, .brk_imm = c.brk_imm };
			return 1;
		}
	}
	return 0;
}

/* riscv64: checks start at 2-byte boundaries (the C extension). */
static int find_rv(const uint8_t *p, size_t n, struct found *f)
{
	for (size_t i = 0; i + 4 <= n; i += 2) {
		struct rv_check c;

		if (rv_maybe_check(p + i, n - i) &&
		    rv_decode_check(p + i, n - i, &c, NULL) == RV_CHECK_STEPS) {
			*f = (struct found){ .off = i, .len = c.len, .trap_off = i + c.trap.off,
					     .id = c.id, .target = rv_reg_name(c.target_reg),
					     .disp = c.disp, .has_rv = 1, .rv = c };
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

/* arm64, riscv64: the word in front of the entry, whatever it is. */
static int preamble_word(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
			 size_t *bytes)
{
	if (n < 4)
		return 0;
	*id = elf_rd32(p + n - 4);
	*id_off = 4;
	*bytes = 4;
	return 1;
}

static const struct arch {
	const char *name;
	int (*find)(const uint8_t *p, size_t n, struct found *f);
	int (*preamble)(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
			size_t *bytes);
} arches[] = {
	{ "x86_64", find_x86, preamble_x86 },
	{ "arm64", find_a64, preamble_word },
	{ "riscv64", find_rv, preamble_word },
};

static const struct arch *arch_named(const char *name)
{
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
		if (strcmp(arches[i].name, name) == 0)
			return &arches[i];
	return NULL;
}

static int print_preamble(const struct arch *a, const uint8_t *p, size_t n, int json)
{
	uint32_t id = 0;
	size_t id_off = 4, bytes = 4;
	int found = a->preamble(p, n, &id, &id_off, &bytes);

	if (json && found)
		printf("{\"arch\": \"%s\", \"type_id\": \"0x%08" PRIx32 "\", \"id_offset\": %zu"
		       ", \"preamble_bytes\": %zu}\n", a->name, id, id_off, bytes);
	else if (json)
		printf("{\"arch\": \"%s\", \"type_id\": null, \"preamble_bytes\": 0}\n", a->name);
	else if (found)
		printf("0x%08" PRIx32 "  (%zu bytes before the entry; preamble %zu bytes)\n",
		       id, id_off, bytes);
	else
		printf("none\n");
	return 0;
}

static void print_json(const char *arch, const struct found *f)
{
	printf("{\"arch\": \"%s\", \"offset\": %zu, \"length\": %zu, \"trap_offset\": %zu"
	       ", \"type_id\": \"0x%08" PRIx32 "\", \"target_register\": \"%s\""
	       ", \"type_id_from\": %" PRId32,
	       arch, f->off, f->len, f->trap_off, f->id, f->target, f->disp);
	if (f->brk)
		printf(", \"brk_immediate\": \"0x%04x\"", f->brk_imm);
	if (f->check_reg)
		printf(", \"check_register\": \"%s\"", f->check_reg);
	if (f->has_rv)
		printf(", \"load_register\": \"%s\", \"type_register\": \"%s\", "
		       "\"trap_length\": %zu, \"call_length\": %zu, \"stale_type_register\": %s",
		       rv_reg_name(f->rv.load_reg), rv_reg_name(f->rv.type_reg),
		       f->rv.trap.len, f->rv.call.len, f->rv.stale_base ? "true" : "false");
	printf("}\n");
}

int cmd_decode(int argc, char **argv)
{
	const char *arch_name = NULL;
	const struct arch *arch;
	int json = 0, first = 0, preamble = 0;
	uint8_t code[MAX_CODE];
	size_t n;
	struct found f;

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
	arch = arch_named(arch_name);
	if (!arch)
		return kcfi_usage_err("decode", usage,
				      "unknown --arch '%s' (x86_64, arm64 or riscv64)", arch_name);
	if (kcfi_parse_bytes("decode", argc - first, argv + first, code, MAX_CODE, &n))
		return EXIT_INPUT;
	if (preamble)
		return print_preamble(arch, code, n, json);
	if (!arch->find(code, n, &f)) {
		kcfi_err("decode", "no KCFI check in these %zu bytes", n);
		return EXIT_INPUT;
	}
	if (json)
		print_json(arch->name, &f);
	else
		printf("check at +%zu, %zu bytes: expected type id 0x%08" PRIx32
		       ", target in %s (its id read from %s%+" PRId32 "), trap at +%zu\n",
		       f.off, f.len, f.id, f.target, f.target, f.disp, f.trap_off);
	return 0;
}
