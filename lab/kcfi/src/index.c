/*
 * The scan's index: sorted arrays and binary search over locations,
 * function symbols, relocations and type ids.  The scanners (scan_*.c)
 * and the commands look things up here; only scan.c fills the arrays.
 */
#include "index.h"

#include <stdlib.h>
#include <string.h>

/* ---- locations and ELF sections ---- */

int index_cmp_locs(const void *a, const void *b)
{
	const struct loc *x = a, *y = b;

	return cmp_loc(x->sec, x->off, y->sec, y->off);
}

int index_has_loc(const struct loc *v, size_t n, uint32_t sec, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_loc(v[mid].sec, v[mid].off, sec, off);

		if (c == 0)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int kcfi_is_code(const struct elf_file *ef, uint32_t sec)
{
	const struct elf_section *s;

	if (sec == 0 || sec >= ef->nsections)
		return 0;
	s = &ef->sections[sec];
	return (s->flags & ELF_SHF_EXECINSTR) && (s->flags & ELF_SHF_ALLOC) &&
	       s->type == ELF_SHT_PROGBITS && s->data;
}

int kcfi_symbol_location(const struct elf_file *ef, const struct elf_symbol *sym,
			 uint32_t *sec, uint64_t *off)
{
	const struct elf_section *s;
	uint64_t o;

	if (sym->shndx == ELF_SHN_UNDEF || sym->shndx >= ef->nsections)
		return 0;
	s = &ef->sections[sym->shndx];
	if (ef->type == ELF_ET_REL) {
		o = sym->value;
	} else {
		if (sym->value < s->addr)
			return 0;
		o = sym->value - s->addr;
	}
	if (o > s->size)
		return 0;
	*sec = sym->shndx;
	*off = o;
	return 1;
}

/* ---- function symbols ---- */

int index_cmp_fsyms(const void *a, const void *b)
{
	const struct kcfi_fsym *x = a, *y = b;
	int c = cmp_loc(x->sec, x->off, y->sec, y->off);

	if (c)
		return c;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return strcmp(x->name, y->name);
}

int index_helper_symbol(const char *name)
{
	return strncmp(name, "__cfi_", 6) == 0 || strncmp(name, "__pfx_", 6) == 0;
}

/* Index of the first fsym at (sec, off) or after it. */
static size_t fsym_lower_bound(const struct kcfi_scan *s, uint32_t sec, uint64_t off)
{
	size_t lo = 0, hi = s->nfsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_loc(s->fsyms[mid].sec, s->fsyms[mid].off, sec, off) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct kcfi_fsym *kcfi_containing(const struct kcfi_scan *s, uint32_t sec,
					uint64_t off)
{
	size_t i = fsym_lower_bound(s, sec, off + 1);

	while (i > 0) {
		const struct kcfi_fsym *f = &s->fsyms[--i];

		if (f->sec != sec)
			return NULL;
		if (index_helper_symbol(f->name))
			continue;
		/* Sized symbols must cover OFF; unsized ones are taken as is. */
		if (f->size && off >= f->off + f->size)
			return NULL;
		return f;
	}
	return NULL;
}

/* A function symbol named NAME that starts exactly at (sec, off), if any. */
const struct kcfi_fsym *index_fsym_at(const struct kcfi_scan *s, uint32_t sec,
				       uint64_t off, const char *name)
{
	for (size_t i = fsym_lower_bound(s, sec, off); i < s->nfsyms; i++) {
		const struct kcfi_fsym *f = &s->fsyms[i];

		if (f->sec != sec || f->off != off)
			break;
		if (!name || strcmp(f->name, name) == 0)
			return f;
	}
	return NULL;
}

/* ---- relocations (relocatable files) ---- */

int index_cmp_rlocs(const void *a, const void *b)
{
	const struct rloc *x = a, *y = b;

	return cmp_loc(x->sec, x->off, y->sec, y->off);
}

static const struct rloc *reloc_at(const struct rloc *v, size_t n, uint32_t sec,
				   uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_loc(v[mid].sec, v[mid].off, sec, off);

		if (c == 0)
			return &v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * In a relocatable file a preamble written in assembly stores
 * __kcfi_typeid_NAME through a relocation; resolve it if the symbol is
 * defined here.
 */
void index_resolve_id_reloc(const struct kcfi_scan *s, const struct rloc *relocs,
			     size_t nrelocs, struct kcfi_func *f, uint64_t id_off)
{
	const struct elf_file *ef = s->elf;
	const struct rloc *r = reloc_at(relocs, nrelocs, f->sec, id_off);
	const struct elf_symbol *sym;

	if (!r)
		return;
	if (r->sym >= ef->nsymbols) {
		f->id_known = 0;
		return;
	}
	sym = &ef->symbols[r->sym];
	f->id_sym = sym->name;
	if (sym->shndx == ELF_SHN_ABS) {
		f->id = (uint32_t)(sym->value + (uint64_t)r->addend);
		f->id_known = 1;
	} else {
		f->id = 0;
		f->id_known = 0;
	}
}

/* ---- 32-bit values ---- */

int index_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int index_has_u32(const uint32_t *v, size_t n, uint32_t x)
{
	return n && bsearch(&x, v, n, sizeof(*v), index_cmp_u32) != NULL;
}

/* ---- functions by type id ---- */

struct id_key {
	uint32_t id;
	int unknown;
	size_t index;
};

static int cmp_id_keys(const void *a, const void *b)
{
	const struct id_key *x = a, *y = b;

	if (x->unknown != y->unknown)
		return x->unknown ? 1 : -1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* by_id: functions with a known id sorted by id (then location), then the rest. */
int index_funcs_by_id(struct kcfi_scan *s)
{
	struct id_key *keys = malloc((s->nfuncs ? s->nfuncs : 1) * sizeof(*keys));

	s->by_id = malloc((s->nfuncs ? s->nfuncs : 1) * sizeof(*s->by_id));
	if (!keys || !s->by_id) {
		free(keys);
		return -1;
	}
	for (size_t i = 0; i < s->nfuncs; i++) {
		keys[i].id = s->funcs[i].id;
		keys[i].unknown = !s->funcs[i].id_known;
		keys[i].index = i;
	}
	qsort(keys, s->nfuncs, sizeof(*keys), cmp_id_keys);
	s->nknown = 0;
	for (size_t i = 0; i < s->nfuncs; i++) {
		s->by_id[i] = keys[i].index;
		if (!keys[i].unknown)
			s->nknown++;
	}
	free(keys);
	return 0;
}

/* First index in by_id[0..nknown) whose id is >= ID (or > ID if AFTER). */
static size_t id_bound(const struct kcfi_scan *s, uint32_t id, int after)
{
	size_t lo = 0, hi = s->nknown;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t v = s->funcs[s->by_id[mid]].id;

		if (v < id || (after && v == id))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const size_t *kcfi_funcs_with_id(const struct kcfi_scan *s, uint32_t id,
				 size_t *count)
{
	size_t first = id_bound(s, id, 0);

	*count = id_bound(s, id, 1) - first;
	return s->by_id + first;
}
