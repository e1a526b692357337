/*
 * What the driver (scan.c) and its scanners (scan_sites.c, scan_preambles.c,
 * scan_untyped.c) share: the scanners' entry points and small helpers.
 * Lookups are in index.h.
 */
#ifndef KCFI_SCAN_INTERNAL_H
#define KCFI_SCAN_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "scan.h"

enum {
	R_X86_64_PC32 = 2, R_X86_64_PLT32 = 4,
	R_AARCH64_TSTBR14 = 279, R_AARCH64_CONDBR19 = 280,
	R_AARCH64_JUMP26 = 282, R_AARCH64_CALL26 = 283,
	R_RISCV_BRANCH = 16, R_RISCV_JAL = 17, R_RISCV_CALL = 18, R_RISCV_CALL_PLT = 19,
	R_RISCV_ADD8 = 33, R_RISCV_ADD32 = 35, R_RISCV_SUB32 = 39, R_RISCV_SUB64 = 40,
	R_RISCV_RVC_BRANCH = 44, R_RISCV_RVC_JUMP = 45, R_RISCV_SUB6 = 52,
	R_RISCV_SET32 = 56, R_RISCV_32_PCREL = 57, R_RISCV_SET_ULEB128 = 60,
	R_RISCV_SUB_ULEB128 = 61,
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

static inline int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* scan_sites.c */
int scan_sites(struct kcfi_scan *s);
int scan_traps(struct kcfi_scan *s);

/* scan_preambles.c */
int scan_x86_preambles(struct kcfi_scan *s, const struct rloc *relocs,
		       size_t nrelocs);
int scan_word_preambles(struct kcfi_scan *s, const struct rloc *relocs,
			size_t nrelocs, const struct loc *dmaps, size_t ndmaps);

/* scan_untyped.c */
int scan_untyped(struct kcfi_scan *s);

#endif
