/*
 * Why the arity a preamble carries (-fsanitize-kcfi-arity: how many
 * arguments arrive in registers, 7 when some arrive on the stack) can
 * differ from the number of the function's C parameters.  Each arch with
 * arity classifies by its calling convention (arch.h: arity_why).
 */
#ifndef KCFI_ARITY_H
#define KCFI_ARITY_H

#include "cdecl.h"

enum kcfi_arity_why {
	KCFI_ARITY_SAME,        /* the number of C parameters */
	KCFI_ARITY_UNUSED,      /* fewer: clang counts the registers read */
	KCFI_ARITY_TWO_REGS,    /* a struct, union or __int128 in two registers */
	KCFI_ARITY_FLOAT,       /* floating-point arguments: not in these registers */
	KCFI_ARITY_STACK,       /* 7: some arguments on the stack */
	KCFI_ARITY_VARIADIC,    /* "...": va_start saves every argument register */
	KCFI_ARITY_SRET,        /* a struct returned through a hidden pointer */
	KCFI_ARITY_UNEXPLAINED,
	KCFI_ARITY_NWHY,
};

const char *kcfi_arity_why_name(int why);

/* x86_64 (the SysV ABI): FN's arity ARITY, explained (arity_x86.c). */
int x86_arity_why(const struct ctype *fn, unsigned int arity);

#endif
