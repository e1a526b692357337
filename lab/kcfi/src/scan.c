/*
 * The scan's driver and its lookups: symbols, relocations, __kcfi_typeid_
 * symbols and the index of functions by type id.  The parts live in
 * sites.c (check sites, .kcfi_traps), preamble.c and untyped.c.
 *
 * Lookups use sorted arrays and binary search, so a scan is O(n log n) in
 * the number of symbols and linear in the size of the code.
 */
#include "scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan_internal.h"

#define MAX_ID_OFF 72 /* id offsets counted when finding the common one */

int scan_cmp_locs(const void *a, const void *b)
{
	const struct loc *x = a, *y = b;

	return cmp_loc(x->sec, x->off, y->sec, y->off);
}

int scan_has_loc(const struct loc *v, size_t n, uint32_t sec, uint64_t off)
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

/* "$d", "$d.42" (LLVM) and the like: AArch64 mapping symbols. */
static int mapping_symbol(const char *name, char kind)
{
	return name[0] == '$' && name[1] == kind &&
	       (name[2] == '\0' || name[2] == '.');
}

/* ---- function symbols ---- */

static int cmp_fsyms(const void *a, const void *b)
{
	const struct kcfi_fsym *x = a, *y = b;
	int c = cmp_loc(x->sec, x->off, y->sec, y->off);

	if (c)
		return c;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return strcmp(x->name, y->name);
}

int scan_helper_symbol(const char *name)
{
	return starts_with(name, "__cfi_") || starts_with(name, "__pfx_");
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
		if (scan_helper_symbol(f->name))
			continue;
		/* Sized symbols must cover OFF; unsized ones are taken as is. */
		if (f->size && off >= f->off + f->size)
			return NULL;
		return f;
	}
	return NULL;
}

/* A function symbol named NAME that starts exactly at (sec, off), if any. */
const struct kcfi_fsym *scan_fsym_at(const struct kcfi_scan *s, uint32_t sec,
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
		qsort(s->fsyms, s->nfsyms, sizeof(*s->fsyms), cmp_fsyms);
	if (*ndmaps)
		qsort(*dmaps, *ndmaps, sizeof(**dmaps), scan_cmp_locs);
	return 0;
oom:
	return -1;
}

/* ---- relocations (relocatable files) ---- */

static int cmp_rlocs(const void *a, const void *b)
{
	const struct rloc *x = a, *y = b;

	return cmp_loc(x->sec, x->off, y->sec, y->off);
}

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
		qsort(*out, *n, sizeof(**out), cmp_rlocs);
	return 0;
oom:
	return -1;
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
void scan_resolve_id_reloc(const struct kcfi_scan *s, const struct rloc *relocs,
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

int scan_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int scan_has_u32(const uint32_t *v, size_t n, uint32_t x)
{
	return n && bsearch(&x, v, n, sizeof(*v), scan_cmp_u32) != NULL;
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

/* ---- address-taken functions without a preamble ---- */

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
static int index_by_id(struct kcfi_scan *s)
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

int kcfi_scan_image(const struct elf_file *ef, struct kcfi_scan *s,
		    char *err, size_t errsize)
{
	struct loc *dmaps = NULL;
	size_t ndmaps = 0, nrelocs = 0;
	struct rloc *relocs = NULL;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	s->elf = ef;
	s->arch = ef->machine == ELF_EM_AARCH64 ? KCFI_ARM64 : KCFI_X86_64;
	s->preamble_disp = 4;

	if (collect_symbols(s, &dmaps, &ndmaps) || collect_typeids(s) ||
	    scan_sites(s) || scan_traps(s))
		goto out;
	if (ef->type == ELF_ET_REL && collect_code_relocs(ef, &relocs, &nrelocs))
		goto out;

	if (s->arch == KCFI_X86_64 ? scan_x86_preambles(s, relocs, nrelocs) :
	    scan_a64_preambles(s, relocs, nrelocs, dmaps, ndmaps))
		goto out;
	if (s->nfuncs)
		qsort(s->funcs, s->nfuncs, sizeof(*s->funcs), cmp_funcs);
	s->preamble_disp = common_id_off(s);
	if (index_by_id(s))
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

void kcfi_scan_free(struct kcfi_scan *s)
{
	free(s->funcs);
	free(s->by_id);
	free(s->sites);
	free(s->typeids);
	free(s->untyped);
	free(s->fsyms);
	memset(s, 0, sizeof(*s));
}
