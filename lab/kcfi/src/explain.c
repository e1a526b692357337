/*
 * kcfi explain, per arch: what a KCFI trap tells the kernel.  Each
 * explain_ARCH() is that arch's explain hook in arch.c's table; cmd_explain.c
 * reads the command line and finds the arch.
 *
 * arm64: the brk immediate (or the ESR of the exception) encodes the
 * registers: bits 0-4 the call target, bits 5-9 the expected type id.
 * x86_64: the kernel's decode_cfi_insn() reads the movl/addl before the
 * ud2: the expected id is -imm32, the target is the addl's base register.
 * A FineIBT kernel (6.16+) patches je; ud2 into jne .+1; test $0xd6, %al:
 * it traps on the d6 (UDB) and looks up ip - 1 in .kcfi_traps.
 * riscv64: decode_cfi_insn() reads the beq before the ebreak and the call
 * after it: the beq's first register and the call's register.
 */
#include "explain.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "insn.h"
#include "util.h"

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

int explain_arm64(int argc, char **argv)
{
	const char *arg = argv[0];
	uint64_t v;
	uint32_t imm;

	(void)argc; /* 1: cmd_explain.c checks the arch's explain_one */

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
	       "prefix); the kernel's kCFI brk handler (cfi_handler in 6.1, "
	       "cfi_brk_handler in 6.12) reports both registers\n",
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

int explain_x86(int argc, char **argv)
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
	if (got >= 3 && c.udb)
		line(p + c.jcc_off, 2, "jne .+1",
		     "trap on a mismatch: jumps into the next instruction's immediate");
	else if (got >= 3)
		line(p + c.jcc_off, c.trap_off - c.jcc_off, "je", "skip the trap");
	if (got >= 4 && c.udb)
		line(p + c.trap_off - 1, 2, "test $0xd6, %al", "its d6 byte is udb: the trap, "
		     "regs->ip points here (the kernel looks up ip - 1 in .kcfi_traps)");
	else if (got >= 4)
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

/* "0x2a5", "-0x479": a signed immediate as llvm-objdump prints it. */
static const char *signed_hex(int32_t v, char *buf, size_t size)
{
	snprintf(buf, size, "%s0x%" PRIx32, v < 0 ? "-" : "", v < 0 ? 0u - (uint32_t)v : (uint32_t)v);
	return buf;
}

/* The instruction that builds the expected id without a lui. */
static void rv_add_text(const struct rv_check *c, char *insn, size_t size, const char **comment)
{
	const char *t = rv_reg_name(c->type_reg);
	char imm[16];

	signed_hex(c->lo12, imm, sizeof(imm));
	if (c->lui.len) {
		if (c->add.len == 2)
			snprintf(insn, size, "c.addiw %s, %s", t, imm);
		else
			snprintf(insn, size, "addiw %s, %s, %s", t, t, imm);
		*comment = "plus the low 12 bits, sign-extended";
	} else if (c->stale_base) {
		if (c->add.len == 2)
			snprintf(insn, size, "c.addi %s, %s", t, imm);
		else
			snprintf(insn, size, "addi %s, %s, %s", t, t, imm);
		*comment = "no lui: adds the id to what was in the register";
	} else {
		if (c->add.len == 2)
			snprintf(insn, size, "c.li %s, %s", t, imm);
		else
			snprintf(insn, size, "addi %s, zero, %s", t, imm);
		*comment = "the expected id: it fits in 12 bits";
	}
}

static void rv_listing(const uint8_t *p, const struct rv_check *c, int got)
{
	const char *target = rv_reg_name(c->target_reg), *comment = "";
	char insn[64], imm[16];

	snprintf(insn, sizeof(insn), "lw %s, %s(%s)", rv_reg_name(c->load_reg),
		 signed_hex(c->disp, imm, sizeof(imm)), target);
	line(p, 4, insn, "load the callee's id, in front of its entry");
	if (got < 2)
		return;
	if (c->lui.len) {
		snprintf(insn, sizeof(insn), "%slui %s, 0x%" PRIx32, c->lui.len == 2 ? "c." : "",
			 rv_reg_name(c->type_reg), c->hi20);
		line(p + c->lui.off, c->lui.len, insn, "the expected id: its upper 20 bits");
	}
	if (c->add.len) {
		rv_add_text(c, insn, sizeof(insn), &comment);
		line(p + c->add.off, c->add.len, insn, comment);
	}
	if (got < 3)
		return;
	snprintf(insn, sizeof(insn), "beq %s, %s, %+" PRId32, rv_reg_name(c->load_reg),
		 rv_reg_name(c->type_reg), c->branch);
	line(p + c->beq.off, 4, insn, c->branch ? "skip the trap when they match" :
	     "skip the trap (offset not relocated yet)");
	if (got < 4)
		return;
	line(p + c->trap.off, c->trap.len, c->trap.len == 2 ? "c.ebreak" : "ebreak",
	     "the trap: regs->epc points here");
	if (got < 5)
		return;
	snprintf(insn, sizeof(insn), "%s%s %s", c->call.len == 2 ? "c." : "",
		 c->tail_call ? "jr" : "jalr", target);
	line(p + c->call.off, c->call.len, insn,
	     c->tail_call ? "the tail call the check guards" : "the call the check guards");
}

/* How the expected id is made of the lui and addiw immediates. */
static void rv_print_id(const struct rv_check *c)
{
	printf("expected type id: 0x%08" PRIx32, c->id);
	if (c->lui.len && c->lo12)
		printf(" (0x%05" PRIx32 " << 12, %s 0x%" PRIx32 ")\n", c->hi20,
		       c->lo12 < 0 ? "minus" : "plus",
		       c->lo12 < 0 ? 0u - (uint32_t)c->lo12 : (uint32_t)c->lo12);
	else if (c->lui.len)
		printf(" (0x%05" PRIx32 " << 12)\n", c->hi20);
	else
		printf(" (the immediate, sign-extended)\n");
	if (c->stale_base)
		printf("warning: without a lui the check adds the id to %s's old value, so it "
		       "compares against whatever that sums to (clang 19, ids within 2 KiB of 0)\n",
		       rv_reg_name(c->type_reg));
}

/* What the kernel's handle_cfi_failure() makes of this trap. */
static void rv_print_kernel(const struct rv_check *c, int no_call)
{
	const char *load = rv_reg_name(c->load_reg), *type = rv_reg_name(c->type_reg);

	printf("kernel: handle_cfi_failure() takes the ebreak for a KCFI trap because "
	       "__kcfi_traps lists it\n");
	printf("kernel: decode_cfi_insn() reports the beq's first register, %s, as the "
	       "\"expected type\": here that is the callee's own id (the expected one is in %s)\n",
	       load, type);
	if (no_call)
		printf("kernel: the target comes from the call after the ebreak, which is not in "
		       "these bytes\n");
	else if (c->tail_call && c->call.len == 2)
		printf("kernel: the call is c.jr, which decode_cfi_insn() does not know (it reads "
		       "jalr and c.jalr): the report says \"no target information\"\n");
	else
		printf("kernel: the target is the call's register, %s\n", rv_reg_name(c->target_reg));
}

int explain_riscv(int argc, char **argv)
{
	uint8_t bytes[MAX_BYTES];
	size_t n, start = 0, epc = (size_t)-1;
	struct rv_check c;
	const char *why = NULL;
	int best = -1, got;
	int no_call;

	if (!kcfi_parse_halfwords(argc, argv, bytes, MAX_BYTES, &n, &epc) &&
	    kcfi_parse_bytes("explain", argc, argv, bytes, MAX_BYTES, &n))
		return EXIT_INPUT;
	/* The check may start at any 2-byte boundary: take the best decode. */
	for (size_t i = 0; i + 2 <= n; i += 2) {
		const char *w;
		int k = rv_decode_check(bytes + i, n - i, &c, &w);

		if (k > best) {
			best = k;
			start = i;
			why = w;
		}
		if (k == RV_CHECK_STEPS)
			break;
	}
	got = rv_decode_check(bytes + start, n - start, &c, &why);
	if (got == 0) {
		kcfi_err("explain", "no KCFI check sequence in these bytes (%s)", why);
		return EXIT_INPUT;
	}
	if (start)
		printf("skipped %zu leading byte%s\n", start, start == 1 ? "" : "s");
	rv_listing(bytes + start, &c, got);
	if (got >= 2)
		rv_print_id(&c);
	printf("target register: %s (the lw's base register%s)\n", rv_reg_name(c.target_reg),
	       got == RV_CHECK_STEPS ? " and the call's" : "");
	printf("callee's type id read from: %s-0x%" PRIx32 " (4 bytes before the entry",
	       rv_reg_name(c.target_reg), (uint32_t)-c.disp);
	if (c.disp < -4)
		printf(" and its %" PRId32 "-byte -fpatchable-function-entry padding", -c.disp - 4);
	printf(")\n");
	/* An oops' Code: line ends 2 bytes after epc: a 32-bit ebreak leaves
	 * no room for the call, which the check is complete without. */
	no_call = got == RV_CHECK_STEPS - 1 && c.call.len == 0;
	if (got < RV_CHECK_STEPS && !no_call) {
		kcfi_err("explain", "incomplete check sequence: %s", why);
		return EXIT_INPUT;
	}
	printf("compared: %s (the callee's id) with %s (the expected id)\n",
	       rv_reg_name(c.load_reg), rv_reg_name(c.type_reg));
	if (epc != (size_t)-1)
		printf("epc (the Code: line's halfword in parentheses) %s\n",
		       epc == start + c.trap.off ? "is this check's ebreak" :
		       "is NOT this check's ebreak");
	rv_print_kernel(&c, no_call);
	if (!no_call && start + c.call.off + c.call.len < n)
		printf("ignored %zu trailing byte%s\n", n - start - c.call.off - c.call.len,
		       n - start - c.call.off - c.call.len == 1 ? "" : "s");
	return 0;
}
