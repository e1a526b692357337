/*
 * kcfi explain: decode what a KCFI trap tells the kernel.
 *
 * arm64: the brk immediate (or the ESR of the exception) encodes the
 * registers: bits 0-4 the call target, bits 5-9 the expected type id.
 * x86_64: the kernel's decode_cfi_insn() reads the movl/addl before the
 * ud2: the expected id is -imm32, the target is the addl's base register.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "insn.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi explain --arch arm64 BRK_IMMEDIATE|ESR\n"
	"       kcfi explain --arch x86_64 BYTES...\n"
	"  arm64: a brk immediate (0x8222) or a full ESR (0xf2008222).\n"
	"  x86_64: the hex bytes of a check sequence, e.g.\n"
	"    41 ba 5b ad f3 81 45 03 53 fc 74 02 0f 0b\n"
	"  (the bytes of an oops \"Code:\" line work too: <> marks are ignored\n"
	"  and the check is searched for).\n";

#define MAX_BYTES 4096
#define ESR_EC_BRK64 0x3c

static const struct {
	uint32_t imm, mask;
	const char *what;
} known_brks[] = {
	{ 0x004, 0xffff, "kprobes" },
	{ 0x005, 0xffff, "uprobes" },
	{ 0x100, 0xffff, "FAULT_BRK_IMM (fault handler)" },
	{ 0x400, 0xfffe, "kgdb" },
	{ 0x800, 0xffff, "BUG()/WARN()" },
	{ 0x900, 0xff00, "KASAN" },
	{ 0x5500, 0xff00, "UBSAN" },
};

static int explain_arm64(const char *arg)
{
	uint64_t v;
	uint32_t imm;

	if (kcfi_parse_hex(arg, &v) || v > 0xffffffffu) {
		kcfi_err("explain", "bad brk immediate or ESR '%s' (want hex, e.g. 0x8222)",
			 arg);
		return EXIT_INPUT;
	}
	if (v > 0xffff) {
		uint32_t ec = (uint32_t)(v >> 26) & 0x3f;

		if (ec != ESR_EC_BRK64) {
			kcfi_err("explain", "ESR 0x%08" PRIx64 " has EC 0x%02" PRIx32
				 ", not 0x3c (BRK instruction)", v, ec);
			return EXIT_INPUT;
		}
		imm = (uint32_t)v & 0xffff;
		printf("ESR 0x%08" PRIx64 ": EC 0x3c (BRK64), ISS 0x%07" PRIx64
		       " -> brk #0x%04" PRIx32 "\n", v, v & 0x1ffffff, imm);
	} else {
		imm = (uint32_t)v;
	}
	if (!a64_brk_is_kcfi(imm)) {
		const char *what = NULL;

		for (size_t i = 0; i < sizeof(known_brks) / sizeof(known_brks[0]); i++)
			if ((imm & known_brks[i].mask) == known_brks[i].imm)
				what = known_brks[i].what;
		kcfi_err("explain", "brk #0x%04" PRIx32 " is not a KCFI trap (KCFI uses "
			 "0x8000-0x83ff)%s%s", imm, what ? "; it is " : "",
			 what ? what : "");
		return EXIT_INPUT;
	}
	printf("brk #0x%04" PRIx32 ": KCFI check failure (0x8000 marks a KCFI brk; "
	       "bits 0-9 name two registers)\n", imm);
	printf("target register: x%d (bits 0-4 = %d): the address of the function "
	       "being called\n", a64_brk_target_reg(imm), a64_brk_target_reg(imm));
	printf("type register: x%d (bits 5-9 = %d): its low 32 bits, w%d, hold the "
	       "expected type id\n", a64_brk_type_reg(imm), a64_brk_type_reg(imm),
	       a64_brk_type_reg(imm));
	printf("the callee's own id was loaded from [x%d, #-4] (plus any patchable "
	       "prefix); the kernel's cfi_handler reports both registers\n",
	       a64_brk_target_reg(imm));
	return 0;
}

/* One line of the listing: bytes, instruction, comment. */
static void line(const uint8_t *p, size_t n, const char *insn, const char *comment)
{
	char hex[64] = "";
	size_t len = 0;

	for (size_t i = 0; i < n && len + 4 < sizeof(hex); i++)
		len += (size_t)snprintf(hex + len, sizeof(hex) - len, "%s%02x",
					i ? " " : "", p[i]);
	printf("  %-23s  %-26s ; %s\n", hex, insn, comment);
}

static int explain_x86(int argc, char **argv)
{
	uint8_t bytes[MAX_BYTES];
	size_t n, start = 0;
	struct x86_check c;
	const char *why = NULL;
	const uint8_t *p;
	char insn[64];
	int best = -1, got;

	if (kcfi_parse_bytes("explain", argc, argv, bytes, MAX_BYTES, &n))
		return EXIT_INPUT;
	/* The check may start anywhere in the bytes: take the best decode. */
	for (size_t i = 0; i < n; i++) {
		const char *w;
		struct x86_check tmp;
		int k = x86_decode_check(bytes + i, n - i, &tmp, &w);

		if (k > best) {
			best = k;
			start = i;
			why = w;
		}
		if (k == 4)
			break;
	}
	got = x86_decode_check(bytes + start, n - start, &c, &why);
	if (got == 0) {
		kcfi_err("explain", "no KCFI check sequence in these bytes (%s)", why);
		return EXIT_INPUT;
	}
	if (start)
		printf("skipped %zu leading byte%s\n", start, start == 1 ? "" : "s");
	p = bytes + start;
	snprintf(insn, sizeof(insn), "movl $0x%08" PRIx32 ", %%%sd", c.imm,
		 x86_reg_name(c.temp_reg));
	line(p, 6, insn, "load -(expected type id)");
	if (got >= 2) {
		snprintf(insn, sizeof(insn), "addl -0x%" PRIx32 "(%%%s), %%%sd",
			 (uint32_t)-c.disp, x86_reg_name(c.target_reg),
			 x86_reg_name(c.temp_reg));
		line(p + c.add_off, c.jcc_off - c.add_off, insn,
		     "add the callee's id: 0 if they match");
	}
	if (got >= 3)
		line(p + c.jcc_off, c.trap_off - c.jcc_off, "je", "skip the trap");
	if (got >= 4)
		line(p + c.trap_off, 2, "ud2", "the trap: regs->ip points here");
	printf("expected type id: 0x%08" PRIx32 " (= -0x%08" PRIx32 ")\n", c.id, c.imm);
	if (got >= 2) {
		printf("target register: %%%s (the addl's base register, which the "
		       "kernel's decode_cfi_insn reads from ModRM)\n",
		       x86_reg_name(c.target_reg));
		printf("callee's type id read from: %%%s-0x%" PRIx32 " (4 bytes before the "
		       "entry", x86_reg_name(c.target_reg), (uint32_t)-c.disp);
		if (c.disp < -4)
			printf(" and its %" PRId32 "-byte -fpatchable-function-entry "
			       "padding", -c.disp - 4);
		printf(")\n");
	}
	if (got < 4) {
		kcfi_err("explain", "incomplete check sequence: %s", why);
		return EXIT_INPUT;
	}
	if (start + c.len < n)
		printf("ignored %zu trailing byte%s\n", n - start - c.len,
		       n - start - c.len == 1 ? "" : "s");
	return 0;
}

int cmd_explain(int argc, char **argv)
{
	const char *arch = NULL;
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
		return kcfi_usage_err("explain", usage, "missing --arch arm64|x86_64");
	if (!nvalues)
		return kcfi_usage_err("explain", usage, "missing value to explain");
	if (strcmp(arch, "arm64") == 0 || strcmp(arch, "aarch64") == 0) {
		if (nvalues != 1)
			return kcfi_usage_err("explain", usage,
					      "arm64 takes one brk immediate or ESR");
		return explain_arm64(argv[first]);
	}
	if (strcmp(arch, "x86_64") == 0 || strcmp(arch, "x86-64") == 0 ||
	    strcmp(arch, "x86") == 0)
		return explain_x86(nvalues, argv + first);
	return kcfi_usage_err("explain", usage, "unknown --arch '%s' (arm64 or x86_64)",
			      arch);
}
