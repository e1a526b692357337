/*
 * The per-arch table (arch.h): one entry per arch, the only place that
 * names one.  The hooks it points to live with the code they belong to:
 * the scanners in scan_*.c, the register names in insn.c and insn_riscv.c,
 * kcfi explain's readers in explain.c; the few that are only about
 * printing a check site are here.
 */
#include "arch.h"

#include <string.h>

#include "arity.h"
#include "explain.h"
#include "insn.h"
#include "report.h"
#include "scan_internal.h"

/* ---- printing a check site ---- */

/* udb: the d6 byte of a FineIBT kernel's patched jne .+1; test $0xd6, %al. */
static const char *x86_trap_name(const struct kcfi_site *st, char *buf, size_t size)
{
	(void)buf, (void)size;
	return st->udb ? "udb" : "ud2";
}

/* The brk immediate names the registers (kcfi explain decodes it). */
static const char *a64_trap_name(const struct kcfi_site *st, char *buf, size_t size)
{
	snprintf(buf, size, "brk #0x%04x", st->brk_imm);
	return buf;
}

static const char *rv_trap_name(const struct kcfi_site *st, char *buf, size_t size)
{
	(void)buf, (void)size;
	return st->trap_len == 2 ? "c.ebreak" : "ebreak";
}

/* The preamble's register, and with -fsanitize-kcfi-arity what it says. */
static void x86_func_fields(const struct kcfi_fields *out, const struct kcfi_scan *s,
			    const struct kcfi_func *fn)
{
	out->json(out, "preamble_register", "\"%s\"", x86_reg32_name(fn->preamble_reg));
	if (!s->has_arity) {
		out->json(out, "arity", "null");
		return;
	}
	out->json(out, "arity", "%u", fn->preamble_reg);
	out->text(out, "arity:", "%u, %s (the preamble's register: %s)", fn->preamble_reg,
		  kcfi_arity_words(fn->preamble_reg), x86_reg32_name(fn->preamble_reg));
}

/* Text: in the trap line (a64_trap_name). */
static void a64_site_fields(const struct kcfi_fields *out, const struct kcfi_site *st)
{
	out->json(out, "brk_immediate", "\"0x%04x\"", st->brk_imm);
}

/* The registers the beq compares, and an id built on a stale one. */
static void rv_site_fields(const struct kcfi_fields *out, const struct kcfi_site *st)
{
	const char *load = rv_reg_name(st->load_reg), *type = rv_reg_name(st->type_reg);

	out->json(out, "load_register", "\"%s\"", load);
	out->json(out, "type_register", "\"%s\"", type);
	out->text(out, "compares:", "%s (the callee's id) with %s (the expected id)",
		  load, type);
	out->json(out, "trap_length", "%u", st->trap_len);
	out->json(out, "call_length", "%u", st->call_len);
	out->json(out, "stale_type_register", "%s", st->stale_base ? "true" : "false");
	if (st->stale_base)
		out->text(out, "note:", "no lui: the check adds the id to what %s held before "
			  "(addi %s, %s, ...), a clang bug for ids within 2 KiB of 0",
			  type, type, type);
}

/* ---- the table ---- */

static const char *const x86_aliases[] = { "x86-64", "x86", NULL };
static const char *const a64_aliases[] = { "aarch64", NULL };
static const char *const rv_aliases[] = { "riscv", NULL };

static const struct kcfi_arch_ops arches[] = {
	[KCFI_X86_64] = {
		.arch = KCFI_X86_64,
		.name = "x86_64",
		.aliases = x86_aliases,
		.machine = ELF_EM_X86_64,
		.reg_name = x86_reg_name,
		/* __cfi_NAME: [nop...] mov $id, %eax [nop...] NAME: */
		.scan_preambles = scan_x86_preambles,
		.insn_align = 1,
		.preamble_before_id = 1,        /* the mov's opcode, b8 */
		.masks_endbr = 1,
		.preamble_method = x86_preamble_method,
		.scan_section = scan_x86_section,
		.lists_traps = 1,
		.traps_reloc = R_X86_64_PC32,
		.call_reloc = x86_call_reloc,
		.lea_reloc = R_X86_64_PC32,
		.trap_name = x86_trap_name,
		.func_fields = x86_func_fields,
		.preamble_reg_name = x86_reg32_name,
		.arity_why = x86_arity_why,
		.find_check = x86_find_check,
		.find_preamble = x86_find_preamble,
		.explain = explain_x86,
	},
	[KCFI_ARM64] = {
		.arch = KCFI_ARM64,
		.name = "arm64",
		.aliases = a64_aliases,
		.machine = ELF_EM_AARCH64,
		.reg_name = a64_reg_name,
		/* a data word in front of the entry (and its nops) */
		.scan_preambles = scan_word_preambles,
		.nop_before = a64_nop_before,
		.insn_align = 4,
		.preamble_method = word_preamble_method,
		.scan_section = scan_a64_section,
		/*
		 * Its traps are not listed: the brk immediate marks them.  A
		 * .kcfi_traps section (clang emits none) is read as x86_64's
		 * is, as it always was.
		 */
		.lists_traps = 0,
		.traps_reloc = R_X86_64_PC32,
		.call_reloc = a64_call_reloc,
		.trap_name = a64_trap_name,
		.site_fields = a64_site_fields,
		.find_check = a64_find_check,
		.find_preamble = word_find_preamble,
		.explain = explain_arm64,
		.explain_one = "one brk immediate or ESR",
	},
	[KCFI_RISCV64] = {
		.arch = KCFI_RISCV64,
		.name = "riscv64",
		.aliases = rv_aliases,
		.machine = ELF_EM_RISCV,
		.reg_name = rv_reg_name,
		.scan_preambles = scan_word_preambles,
		.nop_before = rv_nop_before,
		.insn_align = 2,                /* 4, or 2 with the C extension */
		.preamble_method = word_preamble_method,
		.scan_section = scan_rv_section,
		.lists_traps = 1,
		/* trap - entry: linker relaxation may still move the code */
		.traps_reloc = R_RISCV_ADD32,
		.traps_reloc_sub = R_RISCV_SUB32,
		/* clang 19 builds an id within 2 KiB of 0 with an addi alone */
		.counts_stale = 1,
		.call_reloc = rv_call_reloc,
		.trap_name = rv_trap_name,
		.site_fields = rv_site_fields,
		.find_check = rv_find_check,
		.find_preamble = word_find_preamble,
		.explain = explain_riscv,
	},
};

#define NARCHES (sizeof(arches) / sizeof(arches[0]))

const struct kcfi_arch_ops *kcfi_arch_ops(enum kcfi_arch arch)
{
	return (size_t)arch < NARCHES ? &arches[arch] : NULL;
}

const struct kcfi_arch_ops *kcfi_arch_by_name(const char *name, int aliases)
{
	for (size_t i = 0; i < NARCHES; i++) {
		if (strcmp(arches[i].name, name) == 0)
			return &arches[i];
		for (size_t k = 0; aliases && arches[i].aliases[k]; k++)
			if (strcmp(arches[i].aliases[k], name) == 0)
				return &arches[i];
	}
	return NULL;
}

const struct kcfi_arch_ops *kcfi_arch_by_machine(uint16_t machine)
{
	for (size_t i = 0; i < NARCHES; i++)
		if (arches[i].machine == machine)
			return &arches[i];
	return NULL;
}
