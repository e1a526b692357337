/*
 * The scan's driver: it collects symbols, relocations and __kcfi_typeid_
 * symbols, runs the scanners (scan_sites.c: check sites and .kcfi_traps;
 * scan_preambles.c; scan_untyped.c), whose per-arch parts it reaches
 * through the machine's entry in arch.c's table, and builds the index
 * (index.c) they and the commands look things up in.
 *
 * Lookups use sorted arrays and binary search, so a scan is O(n log n) in
 * the number of symbols and linear in the size of the code.
 */
#include "scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "dwarf.h"
#include "index.h"
#include "scan_internal.h"
#include "util.h"

#define MAX_ID_OFF 72 /* id offsets counted when finding the common one */

/* "$d", "$d.42" (LLVM) and the like: AArch64 and RISC-V mapping symbols;
 * RISC-V's "$x" may name the ISA the code after it uses ("$xrv64i2p1..."). */
static int mapping_symbol(const char *name, char kind)
{
	return name[0] == '$' && name[1] == kind &&
	       (name[2] == '\0' || name[2] == '.' ||
		(kind == 'x' && starts_with(name + 2, "rv")));
}

/* ---- function symbols ---- */

static int collect_symbols(struct kcfi_scan *s, struct loc **dmaps, size_t *ndmaps)
{
	const struct elf_file *ef = s->elf;
	size_t cap = 0, capd = 0;

	s->has_symbols = ef->nsymbols > 1;
	for (size_t i = 1; i < ef->nsymbols; i++) {
		const struct elf_symbol *sym = &ef->symbols[i];
		struct kcfi_fsym f;
		uint32_t sec;
		uint64_t off;

		if (!kcfi_symbol_location(ef, sym, &sec, &off) || !kcfi_is_code(ef, sec))
			continue;
		if (mapping_symbol(sym->name, 'd') || mapping_symbol(sym->name, 'x')) {
			s->has_mapping_symbols = 1;
			if (mapping_symbol(sym->name, 'd')) {
				struct loc l = { sec, off };

				PUSH(*dmaps, *ndmaps, capd, l);
			}
			continue;
		}
		if (sym->type != ELF_STT_FUNC && !starts_with(sym->name, "__cfi_"))
			continue;
		f.sec = sec;
		f.off = off;
		f.size = sym->size;
		f.name = sym->name;
		f.global = sym->bind != ELF_STB_LOCAL;
		PUSH(s->fsyms, s->nfsyms, cap, f);
	}
	if (s->nfsyms)
		qsort(s->fsyms, s->nfsyms, sizeof(*s->fsyms), index_cmp_fsyms);
	if (*ndmaps)
		qsort(*dmaps, *ndmaps, sizeof(**dmaps), index_cmp_locs);
	return 0;
oom:
	return -1;
}

/* ---- relocations (relocatable files) ---- */

/* Relocations that apply to code sections, sorted by location. */
static int collect_code_relocs(const struct elf_file *ef, struct rloc **out, size_t *n)
{
	size_t cap = 0;

	for (size_t i = 1; i < ef->nsections; i++) {
		const struct elf_section *rs = &ef->sections[i];
		size_t count = elf_rela_count(rs);

		if (!count || !kcfi_is_code(ef, rs->info))
			continue;
		for (size_t k = 0; k < count; k++) {
			struct elf_rela r;
			struct rloc l;

			elf_rela_get(rs, k, &r);
			l.sec = rs->info;
			l.off = r.offset;
			l.type = r.type;
			l.sym = r.sym;
			l.addend = r.addend;
			PUSH(*out, *n, cap, l);
		}
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), index_cmp_rlocs);
	return 0;
oom:
	return -1;
}

/* ---- __kcfi_typeid_ symbols ---- */

static int cmp_typeids(const void *a, const void *b)
{
	const struct kcfi_typeid_sym *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static int collect_typeids(struct kcfi_scan *s)
{
	const struct elf_file *ef = s->elf;
	size_t cap = 0;

	for (size_t i = 1; i < ef->nsymbols; i++) {
		const struct elf_symbol *sym = &ef->symbols[i];
		struct kcfi_typeid_sym t;

		if (!starts_with(sym->name, "__kcfi_typeid_"))
			continue;
		t.name = sym->name;
		t.defined = sym->shndx == ELF_SHN_ABS;
		t.id = t.defined ? (uint32_t)sym->value : 0;
		PUSH(s->typeids, s->ntypeids, cap, t);
	}
	if (s->ntypeids)
		qsort(s->typeids, s->ntypeids, sizeof(*s->typeids), cmp_typeids);
	return 0;
oom:
	return -1;
}

/* ---- putting it together ---- */

static int cmp_funcs(const void *a, const void *b)
{
	const struct kcfi_func *x = a, *y = b;

	return cmp_loc(x->sec, x->off, y->sec, y->off);
}

/* The most common distance between a type id and its function entry. */
static uint32_t common_id_off(const struct kcfi_scan *s)
{
	size_t votes[MAX_ID_OFF] = { 0 };
	uint32_t best = 4;

	for (size_t i = 0; i < s->nfuncs; i++)
		if (s->funcs[i].id_off < MAX_ID_OFF)
			votes[s->funcs[i].id_off]++;
	for (uint32_t k = 0; k < MAX_ID_OFF; k++)
		if (votes[k] > votes[best])
			best = k;
	return best;
}

int kcfi_scan_image(const struct elf_file *ef, struct kcfi_scan *s,
		    char *err, size_t errsize)
{
	struct loc *dmaps = NULL;
	size_t ndmaps = 0, nrelocs = 0;
	struct rloc *relocs = NULL;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	s->elf = ef;
	/* elf_parse() accepts the machines of arch.c's table only. */
	s->arch = kcfi_arch_by_machine(ef->machine);
	if (!s->arch) {
		snprintf(err, errsize, "unsupported machine %u", ef->machine);
		return -1;
	}
	s->preamble_disp = 4;

	if (collect_symbols(s, &dmaps, &ndmaps) || collect_typeids(s) ||
	    scan_sites(s) || scan_traps(s))
		goto out;
	if (ef->type == ELF_ET_REL && collect_code_relocs(ef, &relocs, &nrelocs))
		goto out;

	if (s->arch->scan_preambles(s, relocs, nrelocs, dmaps, ndmaps))
		goto out;
	if (s->nfuncs)
		qsort(s->funcs, s->nfuncs, sizeof(*s->funcs), cmp_funcs);
	s->preamble_disp = common_id_off(s);
	if (index_funcs_by_id(s))
		goto out;

	for (size_t i = 0; i < s->nsites; i++) {
		const struct kcfi_fsym *f = kcfi_containing(s, s->sites[i].sec,
							    s->sites[i].trap);

		if (f) {
			s->sites[i].func = f->name;
			s->sites[i].func_off = s->sites[i].trap - f->off;
		}
	}
	if (ef->type == ELF_ET_REL && scan_untyped(s))
		goto out;
	rc = 0;
out:
	if (rc)
		snprintf(err, errsize, "out of memory");
	free(dmaps);
	free(relocs);
	return rc;
}

int kcfi_scan_file(const char *cmd, const char *path, struct elf_file *ef,
		   struct kcfi_scan *s)
{
	char err[256];

	if (elf_open(ef, path, err, sizeof(err))) {
		kcfi_err(cmd, "%s: %s", path, err);
		return EXIT_INPUT;
	}
	if (kcfi_scan_image(ef, s, err, sizeof(err))) {
		kcfi_err(cmd, "%s: %s", path, err);
		elf_close(ef);
		return EXIT_INPUT;
	}
	return 0;
}

void kcfi_scan_free(struct kcfi_scan *s)
{
	free(s->funcs);
	free(s->by_id);
	free(s->sites);
	free(s->typeids);
	free(s->untyped);
	free(s->fsyms);
	free(s->protos);
	free(s->type_verdict);
	free(s->arity_why);
	dwarf_funcs_close(s->dwarf);
	memset(s, 0, sizeof(*s));
}
