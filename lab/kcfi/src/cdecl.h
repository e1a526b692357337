/*
 * A parser for C function prototypes ("void (int *)", "int f(const char *s,
 * ...)") producing canonical types: typedefs resolved, parameter arrays and
 * functions decayed to pointers, top-level parameter qualifiers dropped --
 * i.e. the function type clang hands to the Itanium mangler.
 */
#ifndef KCFI_CDECL_H
#define KCFI_CDECL_H

#include <stddef.h>

enum ctype_kind {
	CT_BUILTIN,  /* int, unsigned long, ... */
	CT_COMPLEX,  /* _Complex float/double/long double */
	CT_TAG,      /* struct/union/enum NAME */
	CT_POINTER,
	CT_ARRAY,
	CT_FUNCTION,
};

enum { CQ_CONST = 1, CQ_VOLATILE = 2, CQ_RESTRICT = 4 };

struct cparam;

struct ctype {
	enum ctype_kind kind;
	unsigned quals;            /* CQ_* */
	const char *code;          /* CT_BUILTIN, CT_COMPLEX: Itanium code */
	const char *name;          /* CT_TAG: tag name (not NUL-terminated) */
	const char *tag;           /* CT_TAG: "struct", "union", "enum", or NULL
				    * (a typedef name): for printing only */
	size_t name_len;
	const struct ctype *inner; /* pointee, element or return type */
	int has_size;              /* CT_ARRAY; CT_TAG from DWARF: its bytes */
	unsigned long long size;
	const struct cparam *params; /* CT_FUNCTION */
	size_t nparams;
	int variadic;
	int noproto;               /* "int f()": no prototype */
};

struct cparam {
	const struct ctype *type;
	const struct cparam *next;
};

struct cdecl;

/*
 * Parse TEXT.  On success returns a parse result whose function type is
 * cdecl_type(); on error returns NULL and writes a reason to ERR.
 */
struct cdecl *cdecl_parse(const char *text, char *err, size_t errsize);

/*
 * The same, with typedef names beyond the built-in table: RESOLVE returns
 * the canonical type NAME (LEN bytes, not NUL-terminated) stands for, or
 * NULL; the type must outlive the parse result.
 */
typedef const struct ctype *(*cdecl_typedef_fn)(void *ctx, const char *name, size_t len);
struct cdecl *cdecl_parse_with(const char *text, cdecl_typedef_fn resolve, void *ctx,
			       char *err, size_t errsize);
const struct ctype *cdecl_type(const struct cdecl *cd);
/* 1 if TEXT named a pointer to function and its pointee was taken. */
int cdecl_via_pointer(const struct cdecl *cd);
void cdecl_free(struct cdecl *cd);

/* Longest input accepted. */
#define CDECL_MAX_INPUT 4096

#endif
