/* Helpers shared by the scanner's files (scan.c, sites.c, preamble.c, untyped.c). */
#ifndef KCFI_SCAN_INTERNAL_H
#define KCFI_SCAN_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

enum {
	R_X86_64_PC32 = 2, R_X86_64_PLT32 = 4,
	R_AARCH64_TSTBR14 = 279, R_AARCH64_CONDBR19 = 280,
	R_AARCH64_JUMP26 = 282, R_AARCH64_CALL26 = 283,
};

/* Append ITEM to a growable array; jumps to the caller's "oom" label. */
#define PUSH(arr, n, cap, item)                                              \
	do {                                                                 \
		if ((n) == (cap)) {                                          \
			size_t cap2_ = (cap) ? (cap) * 2 : 64;               \
			void *p_ = realloc((arr), cap2_ * sizeof(*(arr)));   \
			if (!p_)                                             \
				goto oom;                                    \
			(arr) = p_;                                          \
			(cap) = cap2_;                                       \
		}                                                            \
		(arr)[(n)++] = (item);                                       \
	} while (0)

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

static inline int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* qsort comparator for struct loc, and binary search in a sorted array. */
int scan_cmp_locs(const void *a, const void *b);
int scan_has_loc(const struct loc *v, size_t n, uint32_t sec, uint64_t off);

/* The same for uint32_t. */
int scan_cmp_u32(const void *a, const void *b);
int scan_has_u32(const uint32_t *v, size_t n, uint32_t x);

/* __cfi_ and __pfx_ symbols label padding, not functions. */
int scan_helper_symbol(const char *name);

/* A function symbol named NAME (any, if NULL) starting at (sec, off). */
const struct kcfi_fsym *scan_fsym_at(const struct kcfi_scan *s, uint32_t sec,
				     uint64_t off, const char *name);

/* A relocation applying to a code section (relocatable files). */
struct rloc {
	uint32_t sec;
	uint64_t off;
	uint32_t type;
	uint32_t sym;
	int64_t addend;
};

/* If a relocation stores F's id at ID_OFF, take the id from its symbol. */
void scan_resolve_id_reloc(const struct kcfi_scan *s, const struct rloc *relocs,
			   size_t nrelocs, struct kcfi_func *f, uint64_t id_off);

/* sites.c */
int scan_sites(struct kcfi_scan *s);
int scan_traps(struct kcfi_scan *s);

/* preamble.c */
int scan_x86_preambles(struct kcfi_scan *s, const struct rloc *relocs,
		       size_t nrelocs);
int scan_a64_preambles(struct kcfi_scan *s, const struct rloc *relocs,
		       size_t nrelocs, const struct loc *dmaps, size_t ndmaps);

/* untyped.c */
int scan_untyped(struct kcfi_scan *s);

#endif
