/* Types from DWARF for a scan: every preamble's id against its prototype,
 * by the hash the image's ids were made with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* How the preamble's id of FN compares with HASH, the hash of its prototype. */
static int id_verdict(const struct kcfi_scan *s, const struct kcfi_func *fn, uint32_t hash)
{
	if (fn->id_known && fn->id == hash)
		return KCFI_TYPE_OK;
	if (fn->id_known && s->arch->masks_endbr && endbr_masked(hash) && fn->id == hash + 1)
		return KCFI_TYPE_MASKED;
	return KCFI_TYPE_DISAGREE;
}

/*
 * Function I's type from DWARF into TYPE (NULL: none), its prototype into
 * s->protos, and its verdict under every hash into V (the same for all
 * without a type).  Returns 0, or -1 when out of memory.
 */
static int func_verdicts(struct kcfi_scan *s, size_t i, const struct ctype **type,
			 signed char v[KCFI_NHASHES])
{
	const struct kcfi_func *fn = &s->funcs[i];
	uint64_t addr = dwarf_entry_key(s->dwarf, (unsigned int)fn->sec, fn->off,
					s->elf->sections[fn->sec].addr + fn->off);
	const char *proto = NULL, *why = NULL;
	char *mangled;

	*type = dwarf_func_at(s->dwarf, addr, &proto, &why);
	if (!*type) {
		memset(v, why ? KCFI_TYPE_UNEXPRESSIBLE : KCFI_TYPE_NO_DWARF, KCFI_NHASHES);
		return 0;
	}
	mangled = mangle_type(*type);
	if (!mangled)
		return -1;
	for (int h = 0; h < KCFI_NHASHES; h++)
		v[h] = (signed char)id_verdict(s, fn, kcfi_typeid_with(h, mangled, NULL, 0));
	free(mangled);
	s->protos[i] = proto;
	return 0;
}

/* The hash most preambles match, or -1: none matches, or a tie. */
static int image_hash(const size_t matches[KCFI_NHASHES])
{
	int best = -1;
	size_t most = 0;

	for (int h = 0; h < KCFI_NHASHES; h++) {
		if (matches[h] > most) {
			best = h;
			most = matches[h];
		} else if (matches[h] == most) {
			best = -1;
		}
	}
	return best;
}

/*
 * Every function's verdict under every hash (BY_HASH, nfuncs rows), and
 * per hash how many match; then the image's hash is the one most match,
 * and each function's verdict is the one under it (under clang's default,
 * xxHash64, when the hash is unknown).
 */
static int verdicts(struct kcfi_scan *s, signed char (*by_hash)[KCFI_NHASHES])
{
	int hash;

	for (size_t i = 0; i < s->nfuncs; i++) {
		const struct ctype *t;

		if (func_verdicts(s, i, &t, by_hash[i]))
			return -1;
		for (int h = 0; h < KCFI_NHASHES; h++)
			if (by_hash[i][h] == KCFI_TYPE_OK || by_hash[i][h] == KCFI_TYPE_MASKED)
				s->hash_matches[h]++;
		if (s->arity_why) {
			int why = t ? s->arch->arity_why(t, s->funcs[i].preamble_reg) : -1;

			s->arity_why[i] = (signed char)why;
			if (why >= 0)
				s->arity_why_counts[why]++;
		}
	}
	s->type_hash = image_hash(s->hash_matches);
	hash = s->type_hash >= 0 ? s->type_hash : KCFI_HASH_XXHASH64;
	for (size_t i = 0; i < s->nfuncs; i++) {
		s->type_verdict[i] = by_hash[i][hash];
		s->type_counts[by_hash[i][hash]]++;
	}
	return 0;
}

int kcfi_scan_types(struct kcfi_scan *s, const char *path, char *err, size_t errsize)
{
	size_t n = s->nfuncs ? s->nfuncs : 1;
	signed char (*by_hash)[KCFI_NHASHES];
	int ret = -1;

	s->dwarf = dwarf_funcs_open(s->elf->data, s->elf->size, path, err, errsize);
	if (!s->dwarf)
		return -1;
	s->protos = calloc(n, sizeof(*s->protos));
	s->type_verdict = calloc(n, sizeof(*s->type_verdict));
	if (s->has_arity && s->arch->arity_why)
		s->arity_why = calloc(n, sizeof(*s->arity_why));
	by_hash = calloc(n, sizeof(*by_hash));
	if (s->protos && s->type_verdict && by_hash &&
	    (!s->has_arity || !s->arch->arity_why || s->arity_why) &&
	    verdicts(s, by_hash) == 0) {
		s->has_types = 1;
		ret = 0;
	} else {
		snprintf(err, errsize, "%s: out of memory", path);
	}
	free(by_hash);
	return ret;
}
