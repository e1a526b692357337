/* Types from DWARF for a scan: every preamble's id against its prototype. */
#include <stdio.h>
#include <stdlib.h>

#include "arch.h"
#include "arity.h"
#include "dwarf.h"
#include "mangle.h"
#include "scan.h"
#include "typeid.h"

/* The ids clang's x86 back end bumps by one: ENDBR64 and ENDBR32 as
 * little-endian words, and their negations (MaskKCFIType()). */
static int endbr_masked(uint32_t hash)
{
	static const uint32_t endbr[] = { 0xfa1e0ff3u, 0xfb1e0ff3u };

	for (size_t i = 0; i < 2; i++)
		if (hash == endbr[i] || hash == 0u - endbr[i])
			return 1;
	return 0;
}

const char *kcfi_type_verdict_name(int verdict)
{
	static const char *const names[] = { "verified", "verified, ENDBR-masked",
		"DISAGREES", "not in DWARF", "type not expressible" };

	return verdict >= 0 && verdict < 5 ? names[verdict] : "?";
}

int kcfi_scan_types(struct kcfi_scan *s, const char *path, char *err, size_t errsize)
{
	s->dwarf = dwarf_funcs_open(s->elf->data, s->elf->size, path, err, errsize);
	if (!s->dwarf)
		return -1;
	s->protos = calloc(s->nfuncs ? s->nfuncs : 1, sizeof(*s->protos));
	s->type_verdict = calloc(s->nfuncs ? s->nfuncs : 1, sizeof(*s->type_verdict));
	if (s->has_arity && s->arch->arity_why)
		s->arity_why = calloc(s->nfuncs ? s->nfuncs : 1, sizeof(*s->arity_why));
	if (!s->protos || !s->type_verdict || (s->has_arity && s->arch->arity_why && !s->arity_why)) {
		snprintf(err, errsize, "%s: out of memory", path);
		return -1;
	}
	for (size_t i = 0; i < s->nfuncs; i++) {
		const struct kcfi_func *fn = &s->funcs[i];
		uint64_t addr = dwarf_entry_key(s->dwarf, (unsigned int)fn->sec, fn->off,
						s->elf->sections[fn->sec].addr + fn->off);
		const char *proto = NULL, *why = NULL;
		const struct ctype *t = dwarf_func_at(s->dwarf, addr, &proto, &why);
		int verdict;

		if (!t) {
			verdict = why ? KCFI_TYPE_UNEXPRESSIBLE : KCFI_TYPE_NO_DWARF;
		} else {
			char *mangled = mangle_type(t);
			uint32_t hash;

			if (!mangled) {
				snprintf(err, errsize, "%s: out of memory", path);
				return -1;
			}
			hash = kcfi_typeid(mangled, NULL, 0);
			free(mangled);
			if (fn->id_known && fn->id == hash)
				verdict = KCFI_TYPE_OK;
			else if (fn->id_known && s->arch->masks_endbr && endbr_masked(hash) &&
				 fn->id == hash + 1)
				verdict = KCFI_TYPE_MASKED;
			else
				verdict = KCFI_TYPE_DISAGREE;
			s->protos[i] = proto;
		}
		s->type_verdict[i] = (signed char)verdict;
		s->type_counts[verdict]++;
		if (s->arity_why) {
			int why = t ? s->arch->arity_why(t, fn->preamble_reg) : -1;

			s->arity_why[i] = (signed char)why;
			if (why >= 0)
				s->arity_why_counts[why]++;
		}
	}
	s->has_types = 1;
	return 0;
}
