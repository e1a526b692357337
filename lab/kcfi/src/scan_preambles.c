/*
 * Preambles: the type id clang stores before each function that may be
 * called indirectly.
 */
#include <string.h>

#include "elf.h"
#include "insn.h"
#include "index.h"
#include "scan_internal.h"

#define MAX_PADDING 64 /* x86_64: nop bytes around the mov $id, %eax */

/*
 * x86_64: __cfi_NAME: [nop...] b8 <id32> [nop...] NAME:
 * The nops after the mov come from -fpatchable-function-entry=N,N.
 */
int scan_x86_preambles(struct kcfi_scan *s, const struct rloc *relocs, size_t nrelocs)
{
	const struct elf_file *ef = s->elf;
	size_t cap = 0;

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
		if (mov + 5 > sec->size || sec->data[mov] != 0xb8)
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
		if (ef->type == ELF_ET_REL)
			index_resolve_id_reloc(s, relocs, nrelocs, &f, mov + 1);
		PUSH(s->funcs, s->nfuncs, cap, f);
	}
	return 0;
oom:
	return -1;
}

/*
 * arm64: the id is a data word D bytes before the entry: D = 4, plus 4 per
 * nop of -fpatchable-function-entry=N,M padding.  Not every function has
 * one, and the word before a function without one is ordinary code, so a
 * word is taken as a preamble only with evidence:
 *  - mapping symbols present (always in .o/.ko, usually in vmlinux): a $d
 *    symbol marks exactly that word as data;
 *  - otherwise: the word equals a type id some check site expects or a
 *    __kcfi_typeid_ symbol defines.
 * Walking back from the entry over nops finds D per function, so C
 * functions with padding and assembly functions without can mix.
 */
#define A64_MAX_PADDING_NOPS 16

int scan_a64_preambles(struct kcfi_scan *s, const struct rloc *relocs,
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
		const uint8_t *code = ef->sections[fs->sec].data;
		struct kcfi_func f;
		uint64_t at = 0;
		int found = 0;

		/* One entry per address: aliases follow the preferred name. */
		if (i > 0 && fs->sec == fs[-1].sec && fs->off == fs[-1].off)
			continue;
		if (index_helper_symbol(fs->name) || fs->off % 4)
			continue;
		for (int nops = 0; nops <= A64_MAX_PADDING_NOPS; nops++) {
			if (fs->off < 4 + 4 * (uint64_t)nops)
				break;
			at = fs->off - 4 - 4 * (uint64_t)nops;
			if (s->has_mapping_symbols ? index_has_loc(dmaps, ndmaps, fs->sec, at) :
			    index_has_u32(ids, nids, elf_rd32(code + at))) {
				found = 1;
				break;
			}
			if (elf_rd32(code + at) != A64_NOP)
				break;
		}
		if (!found)
			continue;
		memset(&f, 0, sizeof(f));
		f.name = fs->name;
		f.sec = fs->sec;
		f.off = fs->off;
		f.id = elf_rd32(code + at);
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
