/*
 * Address-taken functions without a preamble (relocatable files only): a
 * function referenced other than by a direct call, from a section that is
 * not bookkeeping, has its address taken; if it has no preamble an
 * indirect call to it fails the KCFI check.  A heuristic: see README.
 */
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "index.h"
#include "scan_internal.h"

/* Sections whose references to functions are bookkeeping, not pointers. */
static int metadata_section(const char *name)
{
	static const char *const prefixes[] = {
		".kcfi_traps", ".eh_frame", "__patchable_function_entries",
		".orc_unwind", "__mcount_loc", ".static_call", ".retpoline_sites",
		".return_sites", ".call_sites", ".ibt_endbr_seal", "__ex_table",
		".altinstr", ".parainstructions", "__jump_table", "__bug_table",
		".discard", ".debug", "__ksymtab", "___ksymtab", ".export_symbol",
		"_kprobe_blacklist", ".smp_locks", ".note", ".gnu",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (starts_with(name, prefixes[i]))
			return 1;
	return 0;
}

/*
 * x86 static call trampolines (__SCT__*, in .static_call.text): their
 * addresses are keys for static_call_update(), never indirect-call targets.
 */
static int static_call_trampoline(const struct elf_file *ef, const struct kcfi_fsym *f)
{
	return starts_with(f->name, "__SCT__") ||
	       starts_with(ef->sections[f->sec].name, ".static_call");
}

/* ---- call_reloc (arch.c): a direct call or jump, not an address ---- */

/* x86_64: a PLT32, or a PC32 that is the rel32 of a call, jmp or jcc. */
int x86_call_reloc(const struct elf_section *target, const struct elf_rela *r)
{
	if (r->type == R_X86_64_PLT32)
		return 1;
	if (r->type == R_X86_64_PC32 && (target->flags & ELF_SHF_EXECINSTR) &&
	    target->data && r->offset >= 1 && r->offset <= target->size) {
		uint8_t op = target->data[r->offset - 1];

		/* call/jmp rel32, or jcc rel32 (0f 8x) */
		return op == 0xe8 || op == 0xe9 ||
		       (r->offset >= 2 && target->data[r->offset - 2] == 0x0f &&
			(op & 0xf0) == 0x80);
	}
	return 0;
}

int a64_call_reloc(const struct elf_section *target, const struct elf_rela *r)
{
	(void)target;
	return r->type == R_AARCH64_CALL26 || r->type == R_AARCH64_JUMP26 ||
	       r->type == R_AARCH64_CONDBR19 || r->type == R_AARCH64_TSTBR14;
}

/*
 * riscv64: a direct call, jump or branch; or one term of a difference of
 * two labels (R_RISCV_ADD*, SUB*, SET*, 32_PCREL), which tables in data
 * (.alternative, jump tables, DWARF) use because linker relaxation moves
 * code: an offset, not a pointer anyone calls.
 */
int rv_call_reloc(const struct elf_section *target, const struct elf_rela *r)
{
	uint32_t type = r->type;

	(void)target;
	return type == R_RISCV_BRANCH || type == R_RISCV_JAL || type == R_RISCV_CALL ||
	       type == R_RISCV_CALL_PLT || type == R_RISCV_RVC_BRANCH ||
	       type == R_RISCV_RVC_JUMP ||
	       (type >= R_RISCV_ADD8 && type <= R_RISCV_SUB64) ||
	       (type >= R_RISCV_SUB6 && type <= R_RISCV_32_PCREL) ||
	       type == R_RISCV_SET_ULEB128 || type == R_RISCV_SUB_ULEB128;
}

static int cmp_untyped(const void *a, const void *b)
{
	const struct kcfi_untyped *x = a, *y = b;

	return cmp_loc(x->sec, x->off, y->sec, y->off);
}

int scan_untyped(struct kcfi_scan *s)
{
	const struct elf_file *ef = s->elf;
	struct loc *typed;
	size_t cap = 0, n = 0;

	s->untyped_checked = 1;
	typed = malloc((s->nfuncs ? s->nfuncs : 1) * sizeof(*typed));
	if (!typed)
		return -1;
	for (size_t i = 0; i < s->nfuncs; i++) {
		typed[i].sec = s->funcs[i].sec;
		typed[i].off = s->funcs[i].off;
	}
	qsort(typed, s->nfuncs, sizeof(*typed), index_cmp_locs);

	for (uint32_t i = 1; i < ef->nsections; i++) {
		const struct elf_section *rs = &ef->sections[i];
		const struct elf_section *target;
		size_t count = elf_rela_count(rs);

		if (!count || rs->info == 0 || rs->info >= ef->nsections)
			continue;
		target = &ef->sections[rs->info];
		if (!(target->flags & ELF_SHF_ALLOC) || metadata_section(target->name))
			continue;
		for (size_t k = 0; k < count; k++) {
			const struct elf_symbol *sym;
			const struct kcfi_fsym *fs;
			struct elf_rela r;
			struct kcfi_untyped u;
			uint32_t sec;
			uint64_t off;

			elf_rela_get(rs, k, &r);
			if (r.sym == 0 || r.sym >= ef->nsymbols || s->arch->call_reloc(target, &r))
				continue;
			sym = &ef->symbols[r.sym];
			if (!kcfi_symbol_location(ef, sym, &sec, &off) || !kcfi_is_code(ef, sec))
				continue;
			if (sym->type == ELF_STT_SECTION) {
				off += (uint64_t)r.addend;
				/* lea f(%rip): the addend also skips the 4-byte field */
				if (s->arch->lea_reloc && r.type == s->arch->lea_reloc &&
				    (target->flags & ELF_SHF_EXECINSTR))
					off += 4;
			} else if (sym->type != ELF_STT_FUNC) {
				continue;
			}
			fs = index_fsym_at(s, sec, off, NULL);
			if (!fs || index_helper_symbol(fs->name) || static_call_trampoline(ef, fs) ||
			    index_has_loc(typed, s->nfuncs, sec, off))
				continue;
			/* A function's reference to itself is _THIS_IP_, not a pointer. */
			if (rs->info == sec && r.offset >= fs->off && r.offset - fs->off < fs->size)
				continue;
			u.name = fs->name;
			u.sec = sec;
			u.off = off;
			u.ref_section = target->name;
			PUSH(s->untyped, n, cap, u);
		}
	}
	/* One entry per function. */
	if (n)
		qsort(s->untyped, n, sizeof(*s->untyped), cmp_untyped);
	s->nuntyped = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || cmp_untyped(&s->untyped[i], &s->untyped[s->nuntyped - 1]))
			s->untyped[s->nuntyped++] = s->untyped[i];
	free(typed);
	return 0;
oom:
	free(typed);
	return -1;
}
