/*
 * The scan's index: lookups in the sorted arrays scan.c builds, for the
 * scanners (scan_*.c) and the commands.  Nothing here calls a scanner.
 */
#ifndef KCFI_INDEX_H
#define KCFI_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "elf.h"
#include "scan.h"

/* A location: section index and offset in the section. */
struct loc {
	uint32_t sec;
	uint64_t off;
};

static inline int cmp_loc(uint32_t sa, uint64_t oa, uint32_t sb, uint64_t ob)
{
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (oa != ob)
		return oa < ob ? -1 : 1;
	return 0;
}

/* A relocation applying to a code section (relocatable files). */
struct rloc {
	uint32_t sec;
	uint64_t off;
	uint32_t type;
	uint32_t sym;
	int64_t addend;
};

/* Is section SEC executable code we scan? */
int kcfi_is_code(const struct elf_file *ef, uint32_t sec);

/* Section-relative location of a defined symbol; 0 if it has none. */
int kcfi_symbol_location(const struct elf_file *ef, const struct elf_symbol *sym,
			 uint32_t *sec, uint64_t *off);

/* qsort comparators, and binary search in the arrays they sort. */
int index_cmp_locs(const void *a, const void *b);
int index_has_loc(const struct loc *v, size_t n, uint32_t sec, uint64_t off);
int index_cmp_u32(const void *a, const void *b);
int index_has_u32(const uint32_t *v, size_t n, uint32_t x);
int index_cmp_fsyms(const void *a, const void *b);
int index_cmp_rlocs(const void *a, const void *b);

/* __cfi_ and __pfx_ symbols label padding, not functions. */
int index_helper_symbol(const char *name);

/* The function symbol containing (sec, off), or NULL. */
const struct kcfi_fsym *kcfi_containing(const struct kcfi_scan *s, uint32_t sec,
					uint64_t off);

/* A function symbol named NAME (any, if NULL) starting at (sec, off). */
const struct kcfi_fsym *index_fsym_at(const struct kcfi_scan *s, uint32_t sec,
				      uint64_t off, const char *name);

/* If a relocation in RELOCS (sorted) stores F's id at ID_OFF, take the id
 * from its symbol. */
void index_resolve_id_reloc(const struct kcfi_scan *s, const struct rloc *relocs,
			    size_t nrelocs, struct kcfi_func *f, uint64_t id_off);

/* Fill s->by_id and s->nknown from s->funcs; 0, or -1 when out of memory. */
int index_funcs_by_id(struct kcfi_scan *s);

/* The functions whose type id is ID: *COUNT entries of by_id from the result. */
const size_t *kcfi_funcs_with_id(const struct kcfi_scan *s, uint32_t id,
				 size_t *count);

#endif
