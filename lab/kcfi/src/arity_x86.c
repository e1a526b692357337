/*
 * x86_64: why a preamble's arity differs from the function's number of
 * C parameters.  The SysV ABI passes up to six integer-class eightbytes
 * in rdi, rsi, rdx, rcx, r8, r9; floating point in xmm registers; a
 * struct or union of up to 16 bytes in one or two registers, a larger
 * one (and long double) in memory; a larger struct is returned in memory
 * the caller passes in rdi.  clang's arity counts the argument registers
 * the function reads (a variadic one saves all six for va_arg), 7 when an
 * argument arrives on the stack.
 */
#include "arity.h"

#include <string.h>

const char *kcfi_arity_why_name(int why)
{
	static const char *const names[KCFI_ARITY_NWHY] = {
		"the C parameters", "unused arguments", "two registers for one argument",
		"floating-point arguments", "stack arguments", "variadic",
		"a struct returned through a hidden pointer", "unexplained",
	};

	return why >= 0 && why < KCFI_ARITY_NWHY ? names[why] : "?";
}

struct classes {
	unsigned int gprs;     /* integer registers the arguments need */
	int memory;            /* an argument passed in memory */
	int two;               /* one argument in two registers */
	int fp;                /* floating-point arguments */
	int sret;              /* the result goes to memory the caller passes */
};

static void classify(const struct ctype *t, struct classes *c)
{
	switch (t->kind) {
	case CT_BUILTIN:
		if (!strcmp(t->code, "f") || !strcmp(t->code, "d") || !strcmp(t->code, "DF16_"))
			c->fp = 1;
		else if (!strcmp(t->code, "e") || !strcmp(t->code, "g"))
			c->memory = 1;
		else if (!strcmp(t->code, "n") || !strcmp(t->code, "o"))
			c->gprs += 2, c->two = 1;
		else
			c->gprs++;
		return;
	case CT_COMPLEX:
		if (!strcmp(t->code, "e"))
			c->memory = 1;
		else
			c->fp = 1;
		return;
	case CT_TAG:
		if (t->tag && !strcmp(t->tag, "enum")) {
			c->gprs++;
		} else if (!t->has_size || t->size > 16) {
			c->memory = 1;
		} else if (t->size > 8) {
			c->gprs += 2;
			c->two = 1;
		} else if (t->size) {
			c->gprs++;
		}
		return;
	default:                /* pointers; arrays and functions decay */
		c->gprs++;
		return;
	}
}

int x86_arity_why(const struct ctype *fn, unsigned int arity)
{
	struct classes c = { 0 };

	/* A struct or union of more than 16 bytes is returned in memory, whose
	 * address the caller passes in rdi. */
	if (fn->inner && fn->inner->kind == CT_TAG && !(fn->inner->tag && !strcmp(fn->inner->tag, "enum")) &&
	    (!fn->inner->has_size || fn->inner->size > 16))
		c.sret = 1, c.gprs++;
	for (const struct cparam *p = fn->params; p; p = p->next)
		classify(p->type, &c);
	if (arity == 7)
		return c.memory || c.gprs > 6 ? KCFI_ARITY_STACK : KCFI_ARITY_UNEXPLAINED;
	if (fn->variadic && arity == 6)
		return KCFI_ARITY_VARIADIC;
	if (arity == fn->nparams && !c.two && !c.fp)
		return KCFI_ARITY_SAME;
	if (arity > c.gprs)
		return KCFI_ARITY_UNEXPLAINED;
	if (arity < c.gprs)
		return KCFI_ARITY_UNUSED;
	/* arity == the registers the arguments need */
	if (c.two)
		return KCFI_ARITY_TWO_REGS;
	if (c.sret)
		return KCFI_ARITY_SRET;
	return c.fp ? KCFI_ARITY_FLOAT : KCFI_ARITY_SAME;
}
