/*
 * What differs between x86_64, arm64 and riscv64, in one table: one
 * struct kcfi_arch_ops per arch (arch.c), which the scanners, the
 * printers and the commands call through instead of testing the arch.
 * A new arch is a new entry; a new per-arch behaviour is a new field,
 * filled in for each arch in arch.c.
 */
#ifndef KCFI_ARCH_H
#define KCFI_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cdecl.h"
#include "elf.h"
#include "index.h"
#include "scan.h"

/*
 * Where an arch's hook writes the fields of a check site that only its
 * arch has.  Each printer implements one of the two calls and ignores the
 * other: the JSON one (kcfi scan --json, kcfi site --json, kcfi decode
 * --json) writes json(), the text one (kcfi site) text().  A hook calls
 * both for a field that both show, so a new field is added in one place.
 */
struct kcfi_fields {
	/* ", \"KEY\": VALUE", FMT making VALUE as JSON ("\"%s\"" for a string). */
	void (*json)(const struct kcfi_fields *out, const char *key, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));
	/* A line "  LABEL  TEXT" under kcfi site's other lines, aligned with them. */
	void (*text)(const struct kcfi_fields *out, const char *label, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));
	FILE *f;
};

/* kcfi decode: the first check found in a run of bytes, offsets from their
 * start (site.sec, in_traps and func are not set). */
struct kcfi_decoded {
	struct kcfi_site site;
	const char *check_reg; /* x86_64: the register the check computes in */
};

struct kcfi_arch_ops {
	enum kcfi_arch arch;
	const char *name;             /* --arch, and JSON's "arch" */
	const char *const *aliases;   /* more --arch spellings for kcfi explain; NULL-ended */
	uint16_t machine;             /* ELF e_machine */

	/* A register by its number: "rax", "x8", "t1". */
	const char *(*reg_name)(int reg);

	/* ---- preambles (scan_preambles.c) ---- */
	int (*scan_preambles)(struct kcfi_scan *s, const struct rloc *relocs, size_t nrelocs,
			      const struct loc *dmaps, size_t ndmaps);
	/* Word preambles (NULL for x86_64's): the length of the nop that
	 * ends at POS in CODE, or 0, for walking back over the padding of
	 * -fpatchable-function-entry. */
	uint64_t (*nop_before)(const uint8_t *code, uint64_t pos);
	uint32_t insn_align;          /* functions start at multiples of this */
	uint32_t preamble_before_id;  /* bytes of the preamble in front of the id */
	int masks_endbr;              /* ids that would spell ENDBR are bumped by one */
	/* How kcfi scan found the preambles, for its output. */
	const char *(*preamble_method)(const struct kcfi_scan *s);

	/* ---- check sites and .kcfi_traps (scan_sites.c) ---- */
	int (*scan_section)(struct kcfi_scan *s, uint32_t sec, size_t *cap);
	int lists_traps;              /* .kcfi_traps lists the traps */
	/* In a relocatable file: the relocation that names an entry's trap,
	 * and the one that must follow it at the same offset, naming the
	 * entry itself (0: none). */
	uint32_t traps_reloc, traps_reloc_sub;
	int counts_stale;             /* checks may add the id to a stale register */

	/* ---- address-taken functions (scan_untyped.c) ---- */
	/* Is R, in section TARGET, a direct call or jump (not an address)? */
	int (*call_reloc)(const struct elf_section *target, const struct elf_rela *r);
	/* The relocation whose addend, in code, also skips its own 4-byte
	 * field (x86_64's lea f(%rip) of a section symbol); 0: none. */
	uint32_t lea_reloc;

	/* ---- printing a check site (report.c, cmd_site.c) ---- */
	/* The trap instruction ("ud2", "udb", "brk #0x8228", "c.ebreak"), in
	 * BUF if need be: kcfi site's trap line, decode --json's
	 * "trap_instruction". */
	const char *(*trap_name)(const struct kcfi_site *st, char *buf, size_t size);
	/* The fields only this arch's sites have, for both outputs (struct
	 * kcfi_fields); NULL: none. */
	void (*site_fields)(const struct kcfi_fields *out, const struct kcfi_site *st);
	/* The same for a function's preamble (x86_64: its register, and the
	 * arity it encodes); NULL: none. */
	void (*func_fields)(const struct kcfi_fields *out, const struct kcfi_scan *s,
			    const struct kcfi_func *fn);
	/* With arity: why ARITY differs from FN's number of C parameters
	 * (enum kcfi_arity_why, arity.h), by the arch's calling convention. */
	int (*arity_why)(const struct ctype *fn, unsigned int arity);
	/* The name of the register a preamble's id is moved into, by number
	 * (x86_64: "eax" ... "edi"); NULL where the id is a data word. */
	const char *(*preamble_reg_name)(int reg);

	/* ---- kcfi decode and kcfi explain (scan_*.c, explain.c) ---- */
	/* The first check in P (N bytes): 1, or 0 when there is none. */
	int (*find_check)(const uint8_t *p, size_t n, struct kcfi_decoded *f);
	/* The preamble ending at the end of P: 1 with its id, the id's
	 * distance from the end, the preamble's length and the register it
	 * names (x86_64's mov; -1: none), or 0. */
	int (*find_preamble)(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
			     size_t *bytes, int *reg);
	int (*explain)(int nvalues, char **values);   /* explain.h */
	const char *explain_one;      /* explain takes one value, this; NULL: bytes */
};

const struct kcfi_arch_ops *kcfi_arch_ops(enum kcfi_arch arch);
/* By --arch NAME, with the aliases too when ALIASES; NULL when unknown. */
const struct kcfi_arch_ops *kcfi_arch_by_name(const char *name, int aliases);
/* By ELF e_machine; NULL for a machine kcfi does not read. */
const struct kcfi_arch_ops *kcfi_arch_by_machine(uint16_t machine);

#endif
