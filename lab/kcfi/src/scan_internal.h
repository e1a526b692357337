/*
 * What the driver (scan.c) and its scanners (scan_sites.c, scan_preambles.c,
 * scan_untyped.c) share: the scanners' entry points and small helpers, and
 * the per-arch hooks they define for arch.c's table.  Lookups are in
 * index.h.
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

struct kcfi_decoded;

/* scan_sites.c */
int scan_sites(struct kcfi_scan *s);
int scan_traps(struct kcfi_scan *s);
/* per arch: scan_section, find_check */
int scan_x86_section(struct kcfi_scan *s, uint32_t sec, size_t *cap);
int scan_a64_section(struct kcfi_scan *s, uint32_t sec, size_t *cap);
int scan_rv_section(struct kcfi_scan *s, uint32_t sec, size_t *cap);
int x86_find_check(const uint8_t *p, size_t n, struct kcfi_decoded *f);
int a64_find_check(const uint8_t *p, size_t n, struct kcfi_decoded *f);
int rv_find_check(const uint8_t *p, size_t n, struct kcfi_decoded *f);

/* scan_preambles.c, per arch: scan_preambles, nop_before, preamble_method,
 * find_preamble */
int scan_x86_preambles(struct kcfi_scan *s, const struct rloc *relocs,
		       size_t nrelocs, const struct loc *dmaps, size_t ndmaps);
int scan_word_preambles(struct kcfi_scan *s, const struct rloc *relocs,
			size_t nrelocs, const struct loc *dmaps, size_t ndmaps);
uint64_t a64_nop_before(const uint8_t *code, uint64_t pos);
uint64_t rv_nop_before(const uint8_t *code, uint64_t pos);
const char *x86_preamble_method(const struct kcfi_scan *s);
const char *word_preamble_method(const struct kcfi_scan *s);
int x86_find_preamble(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
		      size_t *bytes, int *reg);
int word_find_preamble(const uint8_t *p, size_t n, uint32_t *id, size_t *id_off,
		       size_t *bytes, int *reg);

/* scan_untyped.c */
int scan_untyped(struct kcfi_scan *s);
/* per arch: call_reloc */
int x86_call_reloc(const struct elf_section *target, const struct elf_rela *r);
int a64_call_reloc(const struct elf_section *target, const struct elf_rela *r);
int rv_call_reloc(const struct elf_section *target, const struct elf_rela *r);

#endif
