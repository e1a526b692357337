/*
 * Check sites: one linear pass over each code section, matching the
 * instruction sequences insn.c and insn_riscv.c decode; then the
 * .kcfi_traps table (x86_64, riscv64).  Each arch's section scanner,
 * kcfi decode finder and .kcfi_traps relocations are in its entry of
 * arch.c's table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "insn.h"
#include "index.h"
#include "scan_internal.h"

static int cmp_sites(const void *a, const void *b)
{
	const struct kcfi_site *x = a, *y = b;

	return cmp_loc(x->sec, x->trap, y->sec, y->trap);
}

/* ---- check sites ---- */

/* Each arch's check C at offset OFF as a site (section and traps unset). */
static void x86_site(const struct x86_check *c, uint64_t off, struct kcfi_site *site)
{
	memset(site, 0, sizeof(*site));
	site->off = off;
	site->trap = off + c->trap_off;
	site->len = (uint32_t)c->len;
	site->id = c->id;
	site->target_reg = c->target_reg;
	site->disp = c->disp;
	site->udb = (uint8_t)c->udb;
}

static void a64_site(const struct a64_check *c, uint64_t off, struct kcfi_site *site)
{
	memset(site, 0, sizeof(*site));
	site->off = off;
	site->trap = off + c->trap_off;
	site->len = A64_CHECK_LEN;
	site->id = c->id;
	site->target_reg = c->target_reg;
	site->disp = c->disp;
	site->brk_imm = c->brk_imm;
}

static void rv_site(const struct rv_check *c, uint64_t off, struct kcfi_site *site)
{
	memset(site, 0, sizeof(*site));
	site->off = off;
	site->trap = off + c->trap.off;
	site->len = (uint32_t)c->len;
	site->id = c->id;
	site->target_reg = c->target_reg;
	site->disp = c->disp;
	site->load_reg = c->load_reg;
	site->type_reg = c->type_reg;
	site->trap_len = (uint8_t)c->trap.len;
	site->call_len = (uint8_t)c->call.len;
	site->stale_base = (uint8_t)c->stale_base;
}

/* x86_64: a check starts with the movl's REX prefix (41). */
int scan_x86_section(struct kcfi_scan *s, uint32_t sec, size_t *cap)
{
	const uint8_t *d = s->elf->sections[sec].data;
	const uint8_t *p = d, *end = d + s->elf->sections[sec].size;

	while (p < end && (p = memchr(p, 0x41, (size_t)(end - p)))) {
		struct x86_check c;
		struct kcfi_site site;

		if (x86_decode_check(p, (size_t)(end - p), &c, NULL) != 4) {
			p++;
			continue;
		}
		x86_site(&c, (uint64_t)(p - d), &site);
		site.sec = sec;
		site.in_traps = -1;
		PUSH(s->sites, s->nsites, *cap, site);
		p += c.len;
	}
	return 0;
oom:
	return -1;
}

/* arm64: six words at a word boundary, the first an ldur. */
int scan_a64_section(struct kcfi_scan *s, uint32_t sec, size_t *cap)
{
	const uint8_t *d = s->elf->sections[sec].data;
	uint64_t size = s->elf->sections[sec].size;

	for (uint64_t off = 0; off + A64_CHECK_LEN <= size; off += 4) {
		struct a64_check c;
		struct kcfi_site site;

		if ((elf_rd32(d + off) & 0xffe00c00u) != 0xb8400000u ||
		    a64_decode_check(d + off, A64_CHECK_LEN, &c, NULL) != 6)
			continue;
		a64_site(&c, off, &site);
		site.sec = sec;
		site.in_traps = -1;
		PUSH(s->sites, s->nsites, *cap, site);
		off += A64_CHECK_LEN - 4;
	}
	return 0;
oom:
	return -1;
}

/* riscv64: a lw at any 2-byte boundary (the C extension), then the rest
 * of the check and the call it guards. */
int scan_rv_section(struct kcfi_scan *s, uint32_t sec, size_t *cap)
{
	const uint8_t *d = s->elf->sections[sec].data;
	uint64_t size = s->elf->sections[sec].size;

	for (uint64_t off = 0; off + 4 <= size; off += 2) {
		struct rv_check c;
		struct kcfi_site site;

		if (!rv_maybe_check(d + off, (size_t)(size - off)) ||
		    rv_decode_check(d + off, (size_t)(size - off), &c, NULL) != RV_CHECK_STEPS)
			continue;
		rv_site(&c, off, &site);
		site.sec = sec;
		site.in_traps = -1;
		PUSH(s->sites, s->nsites, *cap, site);
		off += c.len - 2;
	}
	return 0;
oom:
	return -1;
}

int scan_sites(struct kcfi_scan *s)
{
	size_t cap = 0;

	for (uint32_t sec = 1; sec < s->elf->nsections; sec++)
		if (kcfi_is_code(s->elf, sec) && s->arch->scan_section(s, sec, &cap))
			return -1;
	if (s->nsites)
		qsort(s->sites, s->nsites, sizeof(*s->sites), cmp_sites);
	return 0;
}

/* ---- kcfi decode: the first check in a run of code bytes ----
 * The same decoders, tried at every offset the arch's checks may start at. */

int x86_find_check(const uint8_t *p, size_t n, struct kcfi_decoded *f)
{
	for (size_t i = 0; i < n; i++) {
		struct x86_check c;

		if (x86_decode_check(p + i, n - i, &c, NULL) == 4) {
			x86_site(&c, i, &f->site);
			f->check_reg = x86_reg_name(c.temp_reg);
			return 1;
		}
	}
	return 0;
}

int a64_find_check(const uint8_t *p, size_t n, struct kcfi_decoded *f)
{
	for (size_t i = 0; i + A64_CHECK_LEN <= n; i += 4) {
		struct a64_check c;

		if (a64_decode_check(p + i, n - i, &c, NULL) == 6) {
			a64_site(&c, i, &f->site);
			f->check_reg = NULL;
			return 1;
		}
	}
	return 0;
}

/* riscv64: checks start at 2-byte boundaries (the C extension). */
int rv_find_check(const uint8_t *p, size_t n, struct kcfi_decoded *f)
{
	for (size_t i = 0; i + 4 <= n; i += 2) {
		struct rv_check c;

		if (rv_maybe_check(p + i, n - i) &&
		    rv_decode_check(p + i, n - i, &c, NULL) == RV_CHECK_STEPS) {
			rv_site(&c, i, &f->site);
			f->check_reg = NULL;
			return 1;
		}
	}
	return 0;
}

/* ---- .kcfi_traps ---- */

static int is_traps_section(const struct elf_section *sec)
{
	return sec->type == ELF_SHT_PROGBITS &&
	       (strcmp(sec->name, ".kcfi_traps") == 0 ||
		strcmp(sec->name, "__kcfi_traps") == 0);
}

/* Map a linked address to (section, offset) in a code section. */
static int code_location(const struct elf_file *ef, uint64_t addr, struct loc *l)
{
	for (uint32_t i = 1; i < ef->nsections; i++) {
		const struct elf_section *s = &ef->sections[i];

		if (kcfi_is_code(ef, i) && addr >= s->addr && addr - s->addr < s->size) {
			l->sec = i;
			l->off = addr - s->addr;
			return 1;
		}
	}
	return 0;
}

struct traps {
	struct loc *v;
	size_t n, cap;
};

/* Linked image: the entry at ADDR holding v names the trap at ADDR + v. */
static int read_linked_entries(struct kcfi_scan *s, const uint8_t *data,
			       uint64_t addr, size_t nentries, struct traps *t)
{
	s->ntraps += nentries;
	for (size_t k = 0; k < nentries; k++) {
		int32_t rel = (int32_t)elf_rd32(data + 4 * k);
		struct loc l;

		if (code_location(s->elf, addr + 4 * k + (uint64_t)(int64_t)rel, &l))
			PUSH(t->v, t->n, t->cap, l);
		else
			s->traps_unresolved++;
	}
	return 0;
oom:
	return -1;
}

/* The location a relocation's symbol + addend names; 0 when there is none. */
static int reloc_target(const struct elf_file *ef, const struct elf_rela *r, struct loc *l)
{
	uint64_t base;

	if (r->sym >= ef->nsymbols ||
	    !kcfi_symbol_location(ef, &ef->symbols[r->sym], &l->sec, &base))
		return 0;
	l->off = base + (uint64_t)r->addend;
	return 1;
}

/*
 * riscv64 makes an entry PC-relative with a pair of relocations at its
 * offset: R_RISCV_ADD32 of the trap, then R_RISCV_SUB32 of a label at the
 * entry itself (linker relaxation may move the code, so the assembler
 * leaves the difference to the linker).  Is relocation K that second one,
 * of type TYPE?
 */
static int sub_of_entry(const struct elf_file *ef, const struct elf_section *rela,
			size_t k, uint32_t type, uint32_t traps_sec, uint64_t entry)
{
	struct elf_rela r;
	struct loc l;

	if (k >= elf_rela_count(rela))
		return 0;
	elf_rela_get(rela, k, &r);
	return r.type == type && r.offset == entry && reloc_target(ef, &r, &l) &&
	       l.sec == traps_sec && l.off == entry;
}

/*
 * Relocatable file: the entries are 0; relocations name the traps: one
 * R_X86_64_PC32 an entry on x86_64, an R_RISCV_ADD32/SUB32 pair on riscv64
 * (the arch's traps_reloc and traps_reloc_sub).
 */
static int read_rel_entries(struct kcfi_scan *s, const struct elf_section *sec,
			    const struct elf_section *rela, struct traps *t)
{
	const struct elf_file *ef = s->elf;
	const struct kcfi_arch_ops *a = s->arch;
	uint32_t secno = (uint32_t)(sec - ef->sections);
	size_t nentries = sec->data ? sec->size / 4 : 0;
	size_t count = rela ? elf_rela_count(rela) : 0;
	size_t resolved = 0;

	s->ntraps += nentries;
	for (size_t k = 0; k < count; k++) {
		struct elf_rela rel;
		struct loc l;

		elf_rela_get(rela, k, &rel);
		if (rel.offset >= sec->size)
			continue;
		if (rel.type != a->traps_reloc ||
		    (a->traps_reloc_sub &&
		     !sub_of_entry(ef, rela, k + 1, a->traps_reloc_sub, secno, rel.offset)))
			continue;
		if (!reloc_target(ef, &rel, &l))
			continue;
		PUSH(t->v, t->n, t->cap, l);
		resolved++;
	}
	s->traps_unresolved += nentries > resolved ? nentries - resolved : 0;
	return 0;
oom:
	return -1;
}

/*
 * A linker script may put the entries inside another output section,
 * between the symbols __start___kcfi_traps and __stop___kcfi_traps.
 */
static int read_bracketed_entries(struct kcfi_scan *s, struct traps *t)
{
	const struct elf_file *ef = s->elf;
	uint64_t start = 0, stop = 0;
	int have_start = 0, have_stop = 0;

	for (size_t i = 1; i < ef->nsymbols; i++) {
		const struct elf_symbol *sym = &ef->symbols[i];

		if (sym->shndx == ELF_SHN_UNDEF)
			continue;
		if (strcmp(sym->name, "__start___kcfi_traps") == 0) {
			start = sym->value;
			have_start = 1;
		} else if (strcmp(sym->name, "__stop___kcfi_traps") == 0) {
			stop = sym->value;
			have_stop = 1;
		}
	}
	if (!have_start || !have_stop || stop < start)
		return 0;
	for (uint32_t i = 1; i < ef->nsections; i++) {
		const struct elf_section *sec = &ef->sections[i];

		if (sec->data && (sec->flags & ELF_SHF_ALLOC) && start >= sec->addr &&
		    stop - sec->addr <= sec->size) {
			s->has_traps = 1;
			return read_linked_entries(s, sec->data + (start - sec->addr), start,
						   (size_t)((stop - start) / 4), t);
		}
	}
	return 0;
}

/*
 * .kcfi_traps (__kcfi_traps in vmlinux) holds one 32-bit PC-relative
 * offset per check site, for the trap handler to recognise KCFI traps.
 */
static int read_traps(struct kcfi_scan *s, struct traps *t)
{
	const struct elf_file *ef = s->elf;
	uint32_t *rela_of = NULL; /* section -> its SHT_RELA section (0: none) */
	int rc = 0;

	if (ef->type == ELF_ET_REL) {
		rela_of = calloc(ef->nsections, sizeof(*rela_of));
		if (!rela_of)
			return -1;
		for (uint32_t r = 1; r < ef->nsections; r++)
			if (ef->sections[r].type == ELF_SHT_RELA &&
			    ef->sections[r].info < ef->nsections)
				rela_of[ef->sections[r].info] = r;
	}
	for (uint32_t i = 1; i < ef->nsections && rc == 0; i++) {
		const struct elf_section *sec = &ef->sections[i];

		if (!is_traps_section(sec))
			continue;
		s->has_traps = 1;
		if (ef->type == ELF_ET_REL)
			rc = read_rel_entries(s, sec, rela_of[i] ? &ef->sections[rela_of[i]] :
					      NULL, t);
		else if (sec->data)
			rc = read_linked_entries(s, sec->data, sec->addr,
						 (size_t)(sec->size / 4), t);
	}
	free(rela_of);
	if (rc == 0 && !s->has_traps && ef->type != ELF_ET_REL)
		rc = read_bracketed_entries(s, t);
	if (rc == 0 && t->n)
		qsort(t->v, t->n, sizeof(*t->v), index_cmp_locs);
	return rc;
}

static void match_traps(struct kcfi_scan *s, const struct loc *traps, size_t ntraps)
{
	struct loc *site_traps;

	/* An entry names the trap; a udb site's, the byte before it. */
	for (size_t i = 0; i < s->nsites; i++)
		if (s->has_traps)
			s->sites[i].in_traps = index_has_loc(traps, ntraps, s->sites[i].sec,
						       s->sites[i].trap - s->sites[i].udb);
	/* Sites are sorted by trap already: reuse them as a lookup table. */
	site_traps = malloc((s->nsites ? s->nsites : 1) * sizeof(*site_traps));
	if (!site_traps)
		return;
	for (size_t i = 0; i < s->nsites; i++) {
		site_traps[i].sec = s->sites[i].sec;
		site_traps[i].off = s->sites[i].trap - s->sites[i].udb;
	}
	for (size_t i = 0; i < ntraps; i++)
		if (!index_has_loc(site_traps, s->nsites, traps[i].sec, traps[i].off))
			s->traps_without_site++;
	free(site_traps);
}

int scan_traps(struct kcfi_scan *s)
{
	struct traps t = { 0 };
	int rc = read_traps(s, &t);

	if (rc == 0)
		match_traps(s, t.v, t.n);
	free(t.v);
	return rc;
}
