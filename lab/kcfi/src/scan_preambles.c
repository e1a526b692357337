/*
 * Preambles: the type id clang stores before each function that may be
 * called indirectly: x86_64's mov $id,%eax, the data word of arm64 and
 * riscv64.  Each arch's scanner, nops and kcfi decode --preamble finder
 * are hooks of its entry in arch.c's table.
 */
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "elf.h"
#include "insn.h"
#include "index.h"
#include "scan_internal.h"

#define MAX_PADDING 64 /* x86_64: nop bytes around the mov $id, %eax */
#define X86_NOP 0x90
/* mov $imm32, %r32: 0xb8 + the register's number */
#define X86_MOV_R32 0xb8
#define X86_MOV_R32_MASK 0xf8

/*
 * x86_64: __cfi_NAME: [nop...] b8 <id32> [nop...] NAME:
 * The nops after the mov come from -fpatchable-function-entry=N,N.
 * The __cfi_ symbols find them: no mapping symbols (DMAPS) are needed.
 */
int scan_x86_preambles(struct kcfi_scan *s, const struct rloc *relocs, size_t nrelocs,
		       const struct loc *dmaps, size_t ndmaps)
{
	const struct elf_file *ef = s->elf;
	size_t cap = 0;

	(void)dmaps, (void)ndmaps;

	for (size_t i = 1; i < ef->nsymbols; i++) {
		const struct elf_symbol *sym = &ef->symbols[i];
		const struct elf_section *sec;
		const struct kcfi_fsym *target = NULL;
		const char *name;
		struct kcfi_func f;
		uint64_t off, mov, entry;
		uint32_t secno;

		if (!starts_with(sym->name, "__cfi_") || !sym->name[6] ||
		    !kcfi_symbol_location(ef, sym, &secno, &off) ||
		    !kcfi_is_code(ef, secno))
			continue;
		name = sym->name + 6;
		sec = &ef->sections[secno];
		for (mov = off; mov < sec->size && mov - off < MAX_PADDING &&
		     (sec->data[mov] == 0x90 || sec->data[mov] == 0xcc); mov++)
			;
		if (mov + 5 > sec->size ||
		    (sec->data[mov] & X86_MOV_R32_MASK) != X86_MOV_R32)
			continue;
		/* The entry is where NAME starts, after at most a run of nops. */
		for (entry = mov + 5; entry <= sec->size && entry - mov - 5 <= MAX_PADDING;
		     entry++) {
			target = index_fsym_at(s, secno, entry, name);
			if (target || entry == sec->size || sec->data[entry] != 0x90)
				break;
		}
		if (!target)
			entry = mov + 5;
		memset(&f, 0, sizeof(f));
		f.name = target ? target->name : name;
		f.sec = secno;
		f.off = entry;
		f.id = elf_rd32(sec->data + mov + 1);
		f.id_known = 1;
		f.id_off = (uint32_t)(entry - (mov + 1));
		f.evidence = KCFI_EV_CFI_SYMBOL;
		f.preamble_reg = sec->data[mov] & ~X86_MOV_R32_MASK;
		if (f.preamble_reg)
			s->has_arity = 1;
		if (ef->type == ELF_ET_REL)
			index_resolve_id_reloc(s, relocs, nrelocs, &f, mov + 1);
		PUSH(s->funcs, s->nfuncs, cap, f);
	}
	return 0;
oom:
	return -1;
}

/*
 * arm64 and riscv64: the id is a data word D bytes before the entry: D = 4,
 * plus the nops of -fpatchable-function-entry=N,M padding (arm64: 4 bytes
 * each; riscv64: c.nop 2 bytes, or nop 4 without the C extension).  Not
 * every function has one, and the word before a function without one is
 * ordinary code, so a word is taken as a preamble only with evidence:
 *  - mapping symbols present (always in .o/.ko, usually in vmlinux): a $d
 *    symbol marks exactly that word as data;
 *  - otherwise: the word equals a type id some check site expects or a
 *    __kcfi_typeid_ symbol defines.
 * Walking back from the entry over nops finds D per function, so C
 * functions with padding and assembly functions without can mix.
 */
#define MAX_PADDING_NOPS 16
#define RV_C_NOP 0x0001u
#define RV_NOP 0x00000013u

/* The length of the nop that ends at POS in CODE, or 0 if none does. */
uint64_t a64_nop_before(const uint8_t *code, uint64_t pos)
{
	return pos >= 4 && elf_rd32(code + pos - 4) == A64_NOP ? 4 : 0;
}

uint64_t rv_nop_before(const uint8_t *code, uint64_t pos)
{
	if (pos >= 2 && elf_rd16(code + pos - 2) == RV_C_NOP)
		return 2;
	return pos >= 4 && elf_rd32(code + pos - 4) == RV_NOP ? 4 : 0;
}

/* Where the id of the function at FS sits, walking back over nops. */
static int find_id_word(const struct kcfi_scan *s, const struct kcfi_fsym *fs,
			const uint32_t *ids, size_t nids, const struct loc *dmaps,
			size_t ndmaps, uint64_t *at)
{
	const uint8_t *code = s->elf->sections[fs->sec].data;
	uint64_t pad = 0;

	for (int nops = 0; nops <= MAX_PADDING_NOPS; nops++) {
		uint64_t len;

		if (fs->off < 4 + pad)
			return 0;
		*at = fs->off - 4 - pad;
		if (s->has_mapping_symbols ? index_has_loc(dmaps, ndmaps, fs->sec, *at) :
		    index_has_u32(ids, nids, elf_rd32(code + *at)))
			return 1;
		len = s->arch->nop_before(code, fs->off - pad);
		if (!len)
			return 0;
		pad += len;
	}
	return 0;
}

int scan_word_preambles(struct kcfi_scan *s, const struct rloc *relocs,
			size_t nrelocs, const struct loc *dmaps, size_t ndmaps)
{
	const struct elf_file *ef = s->elf;
	uint32_t *ids = NULL;
	size_t nids = 0, capids = 0, cap = 0;

	for (size_t i = 0; i < s->nsites; i++)
		PUSH(ids, nids, capids, s->sites[i].id);
	for (size_t i = 0; i < s->ntypeids; i++)
		if (s->typeids[i].defined)
			PUSH(ids, nids, capids, s->typeids[i].id);
	if (nids)
		qsort(ids, nids, sizeof(*ids), index_cmp_u32);

	for (size_t i = 0; i < s->nfsyms; i++) {
		const struct kcfi_fsym *fs = &s->fsyms[i];
		struct kcfi_func f;
		uint64_t at = 0;

		/* One entry per address: aliases follow the preferred name. */
		if (i > 0 && fs->sec == fs[-1].sec && fs->off == fs[-1].off)
			continue;
		/* Functions start at instruction boundaries: 4 bytes, or 2 with RVC. */
		if (index_helper_symbol(fs->name) || fs->off % s->arch->insn_align)
			continue;
		if (!find_id_word(s, fs, ids, nids, dmaps, ndmaps, &at))
			continue;
		memset(&f, 0, sizeof(f));
		f.name = fs->name;
		f.sec = fs->sec;
		f.off = fs->off;
		f.id = elf_rd32(ef->sections[fs->sec].data + at);
		f.id_known = 1;
		f.id_off = (uint32_t)(fs->off - at);
		f.evidence = s->has_mapping_symbols ? KCFI_EV_MAPPING : KCFI_EV_KNOWN_ID;
		if (ef->type == ELF_ET_REL)
			index_resolve_id_reloc(s, relocs, nrelocs, &f, at);
		PUSH(s->funcs, s->nfuncs, cap, f);
	}
	free(ids);
	return 0;
oom:
	free(ids);
	return -1;
}

/* How kcfi scan found them, for its output. */
const char *x86_preamble_method(const struct kcfi_scan *s)
{
	if (s->has_arity)
		return "__cfi_NAME symbols followed by mov $id,%reg (the register: the arity)";
	return "__cfi_NAME symbols followed by mov $id,%eax";
}

const char *word_preamble_method(const struct kcfi_scan *s)
{
	if (s->has_mapping_symbols)
		return "word before the entry marked by a $d mapping symbol";
	return "word before the entry equals an id expected by a check site "
	       "or defined by a __kcfi_typeid_ symbol (no mapping symbols)";
}

/* ---- kcfi decode --preamble: BYTES end at a function's entry ---- */

/* x86_64: the mov $id,%reg before any nop padding, or none. */
int x86_find_preamble(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
		      size_t *bytes, int *reg)
{
	size_t pad = 0;

	while (pad < MAX_PADDING && pad < n && p[n - 1 - pad] == X86_NOP)
		pad++;
	if (n < pad + 5 || (p[n - pad - 5] & X86_MOV_R32_MASK) != X86_MOV_R32)
		return 0;
	*id = elf_rd32(p + n - pad - 4);
	*id_off = pad + 4;
	*bytes = pad + 5;
	*reg = p[n - pad - 5] & ~X86_MOV_R32_MASK;
	return 1;
}

/* arm64, riscv64: the word in front of the entry, whatever it is (the
 * bytes have no mapping symbols to say). */
int word_find_preamble(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
		       size_t *bytes, int *reg)
{
	*reg = -1;
	if (n < 4)
		return 0;
	*id = elf_rd32(p + n - 4);
	*id_off = 4;
	*bytes = 4;
	return 1;
}
