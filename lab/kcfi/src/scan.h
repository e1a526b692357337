/*
 * Finding KCFI artefacts in an ELF image: functions with a type-id preamble,
 * check sites, .kcfi_traps entries and __kcfi_typeid_ symbols.
 *
 * Locations are (section index, offset in section): for ET_REL files
 * symbol values are section-relative, for linked images the address is
 * section address + offset.
 */
#ifndef KCFI_SCAN_H
#define KCFI_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "elf.h"
#include "typeid.h"

enum kcfi_arch { KCFI_X86_64, KCFI_ARM64, KCFI_RISCV64 };

/* How a preamble was recognised (see README). */
enum kcfi_evidence {
	KCFI_EV_CFI_SYMBOL,   /* x86_64: __cfi_NAME symbol + mov $id,%eax */
	KCFI_EV_MAPPING,      /* arm64, riscv64: a $d mapping symbol marks the word */
	KCFI_EV_KNOWN_ID,     /* no mapping symbols: the word is a known id */
};

struct kcfi_func {
	const char *name;
	uint32_t sec;
	uint64_t off;         /* function entry */
	uint32_t id;
	int id_known;         /* 0: id is an unresolved relocation (id_sym) */
	const char *id_sym;   /* symbol a relocation on the id refers to */
	uint32_t id_off;      /* the id starts id_off bytes before the entry */
	enum kcfi_evidence evidence;
	/*
	 * x86_64: the register of the preamble's mov $id (0 eax, 1 ecx, 2 edx,
	 * 3 ebx, 4 esp, 5 ebp, 6 esi, 7 edi).  With -fsanitize-kcfi-arity
	 * (LLVM 21+) it is the function's arity: how many arguments arrive in
	 * registers, 7 when some arrive on the stack.  Without, always eax.
	 */
	uint8_t preamble_reg;
};

struct kcfi_site {
	uint32_t sec;
	uint64_t off;         /* first instruction of the check */
	uint64_t trap;        /* ud2 / brk / ebreak; x86_64 udb: the d6 byte */
	uint32_t len;         /* bytes from off to the end of the trap */
	uint32_t id;          /* expected type id */
	int target_reg;
	int32_t disp;         /* where the callee's id is read: target + disp */
	uint16_t brk_imm;     /* arm64 */
	int load_reg;         /* riscv64: the registers compared (tA, tB) */
	int type_reg;
	uint8_t trap_len;     /* riscv64: 2 (c.ebreak) or 4 (ebreak) */
	uint8_t call_len;     /* riscv64: the call after the trap */
	uint8_t stale_base;   /* riscv64: addi tB, tB, lo12 without lui */
	uint8_t udb;          /* x86_64: FineIBT's boot-time jne .+1; test $0xd6, %al
			       * in place of je; ud2 (a live kernel's memory):
			       * .kcfi_traps lists trap - 1, where the ud2 was */
	int in_traps;         /* 1/0, -1 when there is no .kcfi_traps */
	const char *func;     /* containing function, or NULL */
	uint64_t func_off;
};

struct kcfi_typeid_sym {
	const char *name;
	int defined;          /* SHN_ABS with a value; else undefined here */
	uint32_t id;
};

/* A function whose address is taken but which has no preamble. */
struct kcfi_untyped {
	const char *name;
	uint32_t sec;
	uint64_t off;
	const char *ref_section; /* first section referring to it */
};

/* A function symbol, for address -> name lookups. */
struct kcfi_fsym {
	uint32_t sec;
	uint64_t off, size;
	const char *name;
	int global;
};

enum kcfi_type_verdict {
	KCFI_TYPE_OK,            /* hash(prototype) == preamble id */
	KCFI_TYPE_MASKED,        /* x86_64: hash + 1, where the hash or its
				  * negation would spell ENDBR64/ENDBR32 */
	KCFI_TYPE_DISAGREE,      /* hash(prototype) != preamble id */
	KCFI_TYPE_NO_DWARF,      /* DWARF has no function there (assembly) */
	KCFI_TYPE_UNEXPRESSIBLE, /* DWARF has it, its type cannot be mangled */
};

struct dwarf_funcs;
struct kcfi_arch_ops;

struct kcfi_scan {
	const struct elf_file *elf;
	const struct kcfi_arch_ops *arch; /* the machine's entry in arch.c */

	struct kcfi_func *funcs;    /* sorted by location */
	size_t nfuncs;
	size_t *by_id;              /* indexes into funcs: known ids sorted */
	size_t nknown;              /* by_id[0..nknown) have a known id */
	struct kcfi_site *sites;    /* sorted by location */
	size_t nsites;
	struct kcfi_typeid_sym *typeids; /* sorted by name */
	size_t ntypeids;
	struct kcfi_untyped *untyped;
	size_t nuntyped;
	int untyped_checked;        /* detection ran (relocatable files only) */

	int has_traps;              /* a .kcfi_traps section exists */
	size_t ntraps;              /* entries */
	size_t traps_unresolved;    /* entries we could not resolve */
	size_t traps_without_site;  /* entries pointing at no check site */

	int has_arity;              /* some preamble's register is not eax */

	int has_symbols;
	int has_mapping_symbols;    /* $x/$d (arm64, riscv64) */
	uint32_t preamble_disp;     /* most common id_off (4 + padding) */

	/* Types from DWARF, after kcfi_scan_types(): per function, its C
	 * prototype (or NULL) and how its id compares with the hash of it,
	 * by the hash the ids were made with. */
	int has_types;
	const char **protos;
	signed char *type_verdict;  /* enum kcfi_type_verdict */
	size_t type_counts[5];
	int type_hash;              /* enum kcfi_hash, the one most ids match;
				     * -1: none matches, or a tie */
	size_t hash_matches[KCFI_NHASHES]; /* per hash, the preambles whose id
					    * it gives (ENDBR-masked too) */
	/* With arity too: per function, why its arity differs from its
	 * number of C parameters (enum kcfi_arity_why; -1: no prototype). */
	signed char *arity_why;
	size_t arity_why_counts[8];
	struct dwarf_funcs *dwarf;

	struct kcfi_fsym *fsyms;    /* function symbols sorted by location */
	size_t nfsyms;
};

/* Returns 0, or -1 with a reason in ERR. */
int kcfi_scan_image(const struct elf_file *ef, struct kcfi_scan *s,
		    char *err, size_t errsize);
void kcfi_scan_free(struct kcfi_scan *s);

/*
 * Name every function's type by its prototype from the DWARF of the linked
 * image at PATH, tell the hash the image's ids were made with (the one most
 * of them match) and compare that hash of it with the preamble's id.
 * Returns 0, or -1 with a one-line reason in ERR (no DWARF, a relocatable
 * file).
 */
int kcfi_scan_types(struct kcfi_scan *s, const char *path, char *err, size_t errsize);
const char *kcfi_type_verdict_name(int verdict);

/* Open PATH and scan it; 0, or EXIT_INPUT after a "kcfi: CMD: PATH: ..."
 * error (nothing left open). */
int kcfi_scan_file(const char *cmd, const char *path, struct elf_file *ef,
		   struct kcfi_scan *s);

/* Lookups in the result: index.h. */

#endif
