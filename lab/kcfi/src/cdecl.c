/*
 * Recursive-descent parser for one C declaration of a function type.
 *
 * Grammar (the subset of C17 that prototypes use):
 *   prototype  := specifiers declarator [';']
 *   specifiers := { type-keyword | qualifier | struct/union/enum TAG
 *                 | typedef-name | ignored-annotation }
 *   declarator := { '*' {qualifier} } direct { suffix }
 *   direct     := '(' declarator ')' | IDENT | <empty>
 *   suffix     := '[' [static] {qualifier} [NUMBER] ']' | '(' params ')'
 *
 * Types are built in an arena owned by struct cdecl; errors unwind with
 * longjmp to cdecl_parse().
 */
#include "cdecl.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 1024
#define MAX_NODES 2048
#define MAX_DEPTH 48
#define MAX_SUFFIXES 32

enum tok_kind { TK_EOF, TK_IDENT, TK_NUMBER, TK_PUNCT, TK_ELLIPSIS };

struct token {
	enum tok_kind kind;
	const char *s;
	size_t len;
	unsigned long long num;
};

struct cdecl {
	struct ctype nodes[MAX_NODES];
	size_t nnodes;
	struct cparam params[MAX_NODES];
	size_t nparams;
	struct token toks[MAX_TOKENS];
	size_t ntoks;
	const struct ctype *type;
	int via_pointer;
};

struct parser {
	struct cdecl *cd;
	size_t pos;
	int depth;
	jmp_buf fail;
	char *err;
	size_t errsize;
	cdecl_typedef_fn resolve; /* typedef names beyond the table, or NULL */
	void *ctx;
};

static void fail(struct parser *p, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

static void fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errsize, fmt, ap);
	va_end(ap);
	longjmp(p->fail, 1);
}

/* ---- tokens ---- */

static void tokenize(struct parser *p, const char *s)
{
	struct cdecl *cd = p->cd;

	for (;;) {
		struct token *t;

		while (isspace((unsigned char)*s))
			s++;
		if (cd->ntoks == MAX_TOKENS)
			fail(p, "prototype too long");
		t = &cd->toks[cd->ntoks++];
		memset(t, 0, sizeof(*t));
		t->s = s;
		if (*s == '\0') {
			t->kind = TK_EOF;
			return;
		}
		if (isalpha((unsigned char)*s) || *s == '_') {
			while (isalnum((unsigned char)*s) || *s == '_')
				s++;
			t->kind = TK_IDENT;
		} else if (isdigit((unsigned char)*s)) {
			char *end;

			t->kind = TK_NUMBER;
			t->num = strtoull(s, &end, 0);
			if (end == s)
				end = (char *)s + 1;
			s = end;
			while (*s == 'u' || *s == 'U' || *s == 'l' || *s == 'L')
				s++;
			if (isalnum((unsigned char)*s) || *s == '_')
				fail(p, "bad number '%.*s'", (int)(s - t->s + 1), t->s);
		} else if (strncmp(s, "...", 3) == 0) {
			t->kind = TK_ELLIPSIS;
			s += 3;
		} else if (strchr("*()[],;{}", *s)) {
			t->kind = TK_PUNCT;
			s++;
		} else if (isprint((unsigned char)*s)) {
			fail(p, "unexpected character '%c'", *s);
		} else {
			fail(p, "unexpected byte 0x%02x", (unsigned char)*s);
		}
		t->len = (size_t)(s - t->s);
	}
}

static const struct token *peek(const struct parser *p, size_t ahead)
{
	size_t i = p->pos + ahead;

	if (i >= p->cd->ntoks)
		i = p->cd->ntoks - 1; /* the TK_EOF */
	return &p->cd->toks[i];
}

static int is_punct(const struct token *t, char c)
{
	return t->kind == TK_PUNCT && t->s[0] == c;
}

static int is_word(const struct token *t, const char *w)
{
	return t->kind == TK_IDENT && strlen(w) == t->len &&
	       memcmp(t->s, w, t->len) == 0;
}

static int accept(struct parser *p, char c)
{
	if (!is_punct(peek(p, 0), c))
		return 0;
	p->pos++;
	return 1;
}

static void describe(const struct token *t, char *buf, size_t size)
{
	if (t->kind == TK_EOF)
		snprintf(buf, size, "end of input");
	else
		snprintf(buf, size, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->s);
}

static void __attribute__((noreturn)) unexpected(struct parser *p, const char *what)
{
	char found[64];

	describe(peek(p, 0), found, sizeof(found));
	fail(p, "expected %s but found %s", what, found);
}

static void expect(struct parser *p, char c)
{
	char what[8] = { '\'', c, '\'', 0 };

	if (!accept(p, c))
		unexpected(p, what);
}

/* ---- arena ---- */

static struct ctype *new_node(struct parser *p, enum ctype_kind kind)
{
	struct ctype *t;

	if (p->cd->nnodes == MAX_NODES)
		fail(p, "prototype too complex");
	t = &p->cd->nodes[p->cd->nnodes++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	return t;
}

static const struct ctype *with_quals(struct parser *p, const struct ctype *t,
				      unsigned quals)
{
	struct ctype *n;

	if (t->quals == quals)
		return t;
	if (t->kind == CT_ARRAY) {
		/* Qualifiers on an array type belong to its elements. */
		n = new_node(p, CT_ARRAY);
		*n = *t;
		n->inner = with_quals(p, t->inner, t->inner->quals | quals);
		return n;
	}
	if (t->kind == CT_FUNCTION && quals)
		fail(p, "qualified function type");
	n = new_node(p, t->kind);
	*n = *t;
	n->quals = quals;
	return n;
}

static const struct ctype *builtin(struct parser *p, const char *code)
{
	struct ctype *t = new_node(p, CT_BUILTIN);

	t->code = code;
	return t;
}

static const struct ctype *pointer_to(struct parser *p, const struct ctype *t,
				      unsigned quals)
{
	struct ctype *n = new_node(p, CT_POINTER);

	n->inner = t;
	n->quals = quals;
	return n;
}

static int is_void(const struct ctype *t)
{
	return t->kind == CT_BUILTIN && strcmp(t->code, "v") == 0;
}

/* ---- keywords ---- */

enum spec_word {
	SW_VOID, SW_CHAR, SW_SHORT, SW_INT, SW_LONG, SW_FLOAT, SW_DOUBLE,
	SW_SIGNED, SW_UNSIGNED, SW_BOOL, SW_COMPLEX, SW_INT128, SW_FLOAT16,
	SW_COUNT
};

static const struct {
	const char *word;
	enum spec_word sw;
} spec_words[] = {
	{ "void", SW_VOID },         { "char", SW_CHAR },
	{ "short", SW_SHORT },       { "int", SW_INT },
	{ "long", SW_LONG },         { "float", SW_FLOAT },
	{ "double", SW_DOUBLE },     { "signed", SW_SIGNED },
	{ "__signed", SW_SIGNED },   { "__signed__", SW_SIGNED },
	{ "unsigned", SW_UNSIGNED }, { "_Bool", SW_BOOL },
	{ "bool", SW_BOOL },         { "_Complex", SW_COMPLEX },
	{ "__complex__", SW_COMPLEX }, { "__int128", SW_INT128 },
	{ "_Float16", SW_FLOAT16 },
};

static const struct {
	const char *word;
	unsigned qual;
} qual_words[] = {
	{ "const", CQ_CONST },         { "__const", CQ_CONST },
	{ "__const__", CQ_CONST },     { "volatile", CQ_VOLATILE },
	{ "__volatile", CQ_VOLATILE }, { "__volatile__", CQ_VOLATILE },
	{ "restrict", CQ_RESTRICT },   { "__restrict", CQ_RESTRICT },
	{ "__restrict__", CQ_RESTRICT },
};

/*
 * Words that do not change the type: storage classes, function specifiers
 * and the kernel's sparse/attribute annotations (empty for clang builds).
 * Those marked 1 may be followed by a parenthesised argument list.
 */
static const struct {
	const char *word;
	int takes_args;
} ignored_words[] = {
	{ "extern", 0 },        { "static", 0 },         { "inline", 0 },
	{ "__inline", 0 },      { "__inline__", 0 },     { "register", 0 },
	{ "auto", 0 },          { "typedef", 0 },        { "_Noreturn", 0 },
	{ "__noreturn", 0 },    { "noinline", 0 },       { "notrace", 0 },
	{ "__init", 0 },        { "__exit", 0 },         { "__always_inline", 0 },
	{ "asmlinkage", 0 },    { "__visible", 0 },      { "__cold", 0 },
	{ "__user", 0 },        { "__kernel", 0 },       { "__iomem", 0 },
	{ "__rcu", 0 },         { "__percpu", 0 },       { "__force", 0 },
	{ "__must_check", 0 },  { "__nocast", 0 },       { "__bitwise", 0 },
	{ "__weak", 0 },        { "__used", 0 },         { "__maybe_unused", 0 },
	{ "__pure", 0 },        { "__malloc", 0 },       { "__nocfi", 0 },
	{ "__attribute__", 1 }, { "__attribute", 1 },    { "__printf", 1 },
	{ "__scanf", 1 },       { "__aligned", 1 },      { "__section", 1 },
	{ "__alloc_size", 1 },  { "asm", 1 },            { "__asm__", 1 },
	{ "__asm", 1 },
};

/*
 * Typedef names as the Linux kernel defines them for its 64-bit targets
 * (<linux/types.h>, asm-generic/int-ll64.h).  Note uint64_t is u64 =
 * unsigned long long there, unlike glibc's unsigned long.  The value is an
 * Itanium builtin code, or "enum:TAG" for a typedef of an enum.
 */
static const struct {
	const char *name;
	const char *code;
} typedefs[] = {
	{ "size_t", "m" },    { "ssize_t", "l" },   { "ptrdiff_t", "l" },
	{ "intptr_t", "l" },  { "uintptr_t", "m" },
	{ "int8_t", "a" },    { "uint8_t", "h" },
	{ "int16_t", "s" },   { "uint16_t", "t" },  { "int32_t", "i" },
	{ "uint32_t", "j" },  { "int64_t", "x" },   { "uint64_t", "y" },
	{ "u8", "h" },        { "u16", "t" },       { "u32", "j" },
	{ "u64", "y" },       { "s8", "a" },        { "s16", "s" },
	{ "s32", "i" },       { "s64", "x" },       { "__u8", "h" },
	{ "__u16", "t" },     { "__u32", "j" },     { "__u64", "y" },
	{ "__s8", "a" },      { "__s16", "s" },     { "__s32", "i" },
	{ "__s64", "x" },     { "__le16", "t" },    { "__le32", "j" },
	{ "__le64", "y" },    { "__be16", "t" },    { "__be32", "j" },
	{ "__be64", "y" },    { "__wsum", "j" },    { "__poll_t", "j" },
	{ "gfp_t", "j" },     { "slab_flags_t", "j" }, { "fmode_t", "j" },
	{ "vm_fault_t", "j" }, { "umode_t", "t" },  { "pid_t", "i" },
	{ "uid_t", "j" },     { "gid_t", "j" },     { "loff_t", "x" },
	{ "off_t", "l" },     { "time64_t", "x" },  { "ktime_t", "x" },
	{ "phys_addr_t", "y" }, { "dma_addr_t", "y" }, { "resource_size_t", "y" },
	{ "sector_t", "y" },  { "blk_status_t", "h" },
	{ "__int128_t", "n" }, { "__uint128_t", "o" },
	{ "irqreturn_t", "enum:irqreturn" }, { "netdev_tx_t", "enum:netdev_tx" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int find_spec_word(const struct token *t)
{
	for (size_t i = 0; i < COUNT(spec_words); i++)
		if (is_word(t, spec_words[i].word))
			return (int)spec_words[i].sw;
	return -1;
}

static unsigned find_qual(const struct token *t)
{
	for (size_t i = 0; i < COUNT(qual_words); i++)
		if (is_word(t, qual_words[i].word))
			return qual_words[i].qual;
	return 0;
}

static int find_ignored(const struct token *t)
{
	for (size_t i = 0; i < COUNT(ignored_words); i++)
		if (is_word(t, ignored_words[i].word))
			return (int)i;
	return -1;
}

static int find_typedef(const struct token *t)
{
	for (size_t i = 0; i < COUNT(typedefs); i++)
		if (is_word(t, typedefs[i].name))
			return (int)i;
	return -1;
}

static int is_tag_word(const struct token *t)
{
	return is_word(t, "struct") || is_word(t, "union") || is_word(t, "enum");
}

static int is_reserved(const struct token *t)
{
	return find_spec_word(t) >= 0 || find_qual(t) || find_ignored(t) >= 0 ||
	       is_tag_word(t) || is_word(t, "_Atomic");
}

/* A typedef name the caller's resolver knows (the image's DWARF). */
static const struct ctype *resolved_typedef(const struct parser *p, const struct token *t)
{
	return p->resolve && t->kind == TK_IDENT ? p->resolve(p->ctx, t->s, t->len) : NULL;
}

static int is_typedef_name(const struct parser *p, const struct token *t)
{
	return resolved_typedef(p, t) || find_typedef(t) >= 0;
}

/* Can this token start declaration specifiers? */
static int starts_specifiers(const struct parser *p, const struct token *t)
{
	return t->kind == TK_IDENT && (is_reserved(t) || is_typedef_name(p, t));
}

/* Skip an ignored word and, if it takes them, its parenthesised arguments. */
static int skip_ignored(struct parser *p)
{
	int i = find_ignored(peek(p, 0));
	int level = 0;

	if (i < 0)
		return 0;
	p->pos++;
	if (!ignored_words[i].takes_args || !is_punct(peek(p, 0), '('))
		return 1;
	do {
		const struct token *t = peek(p, 0);

		if (t->kind == TK_EOF)
			fail(p, "unbalanced parentheses after '%s'",
			     ignored_words[i].word);
		if (is_punct(t, '('))
			level++;
		else if (is_punct(t, ')'))
			level--;
		p->pos++;
	} while (level > 0);
	return 1;
}

/* ---- declaration specifiers ---- */

static const struct ctype *tag_type(struct parser *p, const char *name,
				    size_t len)
{
	struct ctype *t = new_node(p, CT_TAG);

	t->name = name;
	t->name_len = len;
	return t;
}

static const char *const spec_names[SW_COUNT] = {
	"void", "char", "short", "int", "long", "float", "double", "signed",
	"unsigned", "_Bool", "_Complex", "__int128", "_Float16",
};

static const struct ctype *resolve_builtin(struct parser *p, const int n[SW_COUNT])
{
	int others = 0;
	const char *code;

	for (int i = 0; i < SW_COUNT; i++) {
		if (n[i] > (i == SW_LONG ? 2 : 1))
			fail(p, "too many '%s'", spec_names[i]);
		others += n[i];
	}
	if (n[SW_SIGNED] && n[SW_UNSIGNED])
		fail(p, "both 'signed' and 'unsigned'");

	if (n[SW_COMPLEX]) {
		if (n[SW_FLOAT] && others == 2)
			code = "f";
		else if (n[SW_DOUBLE] && others == 2)
			code = "d";
		else if (n[SW_DOUBLE] && n[SW_LONG] == 1 && others == 3)
			code = "e";
		else
			fail(p, "_Complex is supported only with float, double and long double");
		{
			struct ctype *t = new_node(p, CT_COMPLEX);

			t->code = code;
			return t;
		}
	}
	if (n[SW_VOID] || n[SW_BOOL] || n[SW_FLOAT] || n[SW_FLOAT16]) {
		if (others != 1)
			fail(p, "invalid combination of type specifiers");
		return builtin(p, n[SW_VOID] ? "v" : n[SW_BOOL] ? "b" :
				   n[SW_FLOAT] ? "f" : "DF16_");
	}
	if (n[SW_DOUBLE]) {
		if (others != 1 + n[SW_LONG] || n[SW_LONG] > 1)
			fail(p, "invalid combination of type specifiers");
		return builtin(p, n[SW_LONG] ? "e" : "d");
	}
	if (n[SW_CHAR]) {
		if (others != 1 + n[SW_SIGNED] + n[SW_UNSIGNED])
			fail(p, "invalid combination of type specifiers");
		return builtin(p, n[SW_SIGNED] ? "a" : n[SW_UNSIGNED] ? "h" : "c");
	}
	if (n[SW_INT128]) {
		if (others != 1 + n[SW_SIGNED] + n[SW_UNSIGNED])
			fail(p, "invalid combination of type specifiers");
		return builtin(p, n[SW_UNSIGNED] ? "o" : "n");
	}
	if (n[SW_SHORT] && n[SW_LONG])
		fail(p, "both 'short' and 'long'");
	if (n[SW_SHORT])
		return builtin(p, n[SW_UNSIGNED] ? "t" : "s");
	if (n[SW_LONG] == 2)
		return builtin(p, n[SW_UNSIGNED] ? "y" : "x");
	if (n[SW_LONG] == 1)
		return builtin(p, n[SW_UNSIGNED] ? "m" : "l");
	return builtin(p, n[SW_UNSIGNED] ? "j" : "i");
}

/*
 * Parse declaration specifiers.  Returns NULL (consuming nothing) when the
 * tokens do not start with any.
 */
static const struct ctype *specifiers(struct parser *p)
{
	int n[SW_COUNT] = { 0 };
	int nspec = 0;
	unsigned quals = 0;
	const struct ctype *named = NULL;

	for (;;) {
		const struct token *t = peek(p, 0);
		unsigned q;
		int sw, td;

		if (t->kind != TK_IDENT)
			break;
		if ((q = find_qual(t))) {
			quals |= q;
			p->pos++;
		} else if (skip_ignored(p)) {
			continue;
		} else if ((sw = find_spec_word(t)) >= 0) {
			if (named)
				fail(p, "invalid combination of type specifiers");
			n[sw]++;
			nspec++;
			p->pos++;
		} else if (is_tag_word(t)) {
			const struct token *name = peek(p, 1);

			if (named || nspec)
				fail(p, "invalid combination of type specifiers");
			if (name->kind != TK_IDENT || is_reserved(name))
				fail(p, "expected a tag name after '%.*s'",
				     (int)t->len, t->s);
			if (is_punct(peek(p, 2), '{'))
				fail(p, "type definitions are not supported");
			named = tag_type(p, name->s, name->len);
			p->pos += 2;
		} else if (is_word(t, "_Atomic")) {
			fail(p, "_Atomic is not supported");
		} else if (!named && !nspec && resolved_typedef(p, t)) {
			named = resolved_typedef(p, t);
			p->pos++;
		} else if (!named && !nspec && (td = find_typedef(t)) >= 0) {
			const char *code = typedefs[td].code;

			if (strncmp(code, "enum:", 5) == 0)
				named = tag_type(p, code + 5, strlen(code + 5));
			else
				named = builtin(p, code);
			p->pos++;
		} else if (!named && !nspec) {
			fail(p, "unknown type name '%.*s'",
			     (int)(t->len > 40 ? 40 : t->len), t->s);
		} else {
			break; /* the declarator's name */
		}
	}
	if (!named && !nspec) {
		if (quals)
			fail(p, "missing type specifier");
		return NULL;
	}
	if (!named)
		named = resolve_builtin(p, n);
	return with_quals(p, named, named->quals | quals);
}

/* ---- declarators ---- */

static const struct ctype *declarator(struct parser *p, const struct ctype *base,
				      const struct token **name);

static unsigned pointer_quals(struct parser *p)
{
	unsigned quals = 0;

	for (;;) {
		unsigned q = find_qual(peek(p, 0));

		if (q) {
			quals |= q;
			p->pos++;
		} else if (!skip_ignored(p)) {
			return quals;
		}
	}
}

/* Apply C's parameter type adjustments. */
static const struct ctype *adjust_param(struct parser *p, const struct ctype *t)
{
	if (t->kind == CT_ARRAY)
		t = pointer_to(p, t->inner, 0);
	else if (t->kind == CT_FUNCTION)
		t = pointer_to(p, t, 0);
	return with_quals(p, t, 0);
}

static void parameters(struct parser *p, struct ctype *fn)
{
	struct cparam **tail = (struct cparam **)&fn->params;

	expect(p, '(');
	if (accept(p, ')')) {
		fn->noproto = 1;
		return;
	}
	for (;;) {
		const struct ctype *base, *t;
		const struct token *name = NULL;
		struct cparam *param;

		if (peek(p, 0)->kind == TK_ELLIPSIS) {
			if (fn->nparams == 0)
				fail(p, "'...' needs a named parameter before it");
			p->pos++;
			fn->variadic = 1;
			expect(p, ')');
			return;
		}
		base = specifiers(p);
		if (!base)
			unexpected(p, "a parameter type");
		t = declarator(p, base, &name);
		if (is_void(t) && t->quals == 0 && !name && fn->nparams == 0 &&
		    is_punct(peek(p, 0), ')')) {
			p->pos++;
			return; /* (void) */
		}
		if (is_void(t))
			fail(p, "'void' must be the only parameter");
		if (p->cd->nparams == MAX_NODES)
			fail(p, "prototype too complex");
		param = &p->cd->params[p->cd->nparams++];
		param->type = adjust_param(p, t);
		param->next = NULL;
		*tail = param;
		tail = (struct cparam **)&param->next;
		fn->nparams++;
		if (accept(p, ','))
			continue;
		expect(p, ')');
		return;
	}
}

/*
 * After '(' in a declarator: a nested declarator such as "(*fp)" or a
 * parameter list such as "(int)"?
 */
static int nested_declarator_follows(const struct parser *p)
{
	const struct token *t = peek(p, 1);

	if (is_punct(t, '*') || is_punct(t, '(') || is_punct(t, '['))
		return 1;
	if (t->kind == TK_IDENT)
		return !starts_specifiers(p, t);
	return 0;
}

/* Skip from '(' to just past its matching ')'. */
static void skip_group(struct parser *p)
{
	int level = 0;

	do {
		const struct token *t = peek(p, 0);

		if (t->kind == TK_EOF)
			fail(p, "unbalanced parentheses");
		if (is_punct(t, '('))
			level++;
		else if (is_punct(t, ')'))
			level--;
		p->pos++;
	} while (level > 0);
}

struct suffix {
	int is_array;
	struct ctype *fn;        /* function suffix: params parsed */
	int has_size;
	unsigned long long size;
};

static void parse_suffix(struct parser *p, struct suffix *s)
{
	memset(s, 0, sizeof(*s));
	if (is_punct(peek(p, 0), '(')) {
		s->fn = new_node(p, CT_FUNCTION);
		parameters(p, s->fn);
		return;
	}
	expect(p, '[');
	s->is_array = 1;
	for (;;) {
		if (is_word(peek(p, 0), "static") || find_qual(peek(p, 0)))
			p->pos++;
		else
			break;
	}
	if (peek(p, 0)->kind == TK_NUMBER) {
		s->has_size = 1;
		s->size = peek(p, 0)->num;
		p->pos++;
	} else if (is_punct(peek(p, 0), '*')) {
		fail(p, "variable-length arrays are not supported");
	} else if (!is_punct(peek(p, 0), ']')) {
		unexpected(p, "an integer array size or ']'");
	}
	expect(p, ']');
}

static const struct ctype *apply_suffix(struct parser *p, const struct suffix *s,
					const struct ctype *t)
{
	if (s->is_array) {
		struct ctype *a;

		if (t->kind == CT_FUNCTION)
			fail(p, "array of functions");
		if (is_void(t))
			fail(p, "array of void");
		a = new_node(p, CT_ARRAY);
		a->has_size = s->has_size;
		a->size = s->size;
		a->inner = t;
		return a;
	}
	if (t->kind == CT_FUNCTION)
		fail(p, "function returning a function");
	if (t->kind == CT_ARRAY)
		fail(p, "function returning an array");
	/*
	 * Qualifiers on the return type stay: clang-16 mangles
	 * "const int (void)" as FKivE (checked against its KCFI ids).
	 */
	s->fn->inner = t;
	return s->fn;
}

static const struct ctype *declarator(struct parser *p, const struct ctype *base,
				      const struct token **name)
{
	const struct ctype *t = base;
	struct suffix suffixes[MAX_SUFFIXES];
	size_t nsuffix = 0;
	size_t nested = 0;

	if (++p->depth > MAX_DEPTH)
		fail(p, "prototype nested too deeply");
	while (accept(p, '*'))
		t = pointer_to(p, t, pointer_quals(p));
	while (skip_ignored(p))
		;
	if (is_punct(peek(p, 0), '(') && nested_declarator_follows(p)) {
		nested = p->pos + 1;
		skip_group(p);
	} else if (peek(p, 0)->kind == TK_IDENT) {
		/* A typedef name here is the declarator's name: the specifiers
		 * already hold a type, so "u32 u32" declares a parameter u32
		 * that hides the typedef, as in C. */
		if (is_reserved(peek(p, 0)))
			unexpected(p, "a name");
		if (*name)
			fail(p, "two names in one declarator");
		*name = peek(p, 0);
		p->pos++;
	}
	while (is_punct(peek(p, 0), '(') || is_punct(peek(p, 0), '[')) {
		if (nsuffix == MAX_SUFFIXES)
			fail(p, "prototype too complex");
		parse_suffix(p, &suffixes[nsuffix++]);
	}
	while (nsuffix > 0)
		t = apply_suffix(p, &suffixes[--nsuffix], t);
	if (nested) {
		size_t resume = p->pos;

		p->pos = nested;
		t = declarator(p, t, name);
		expect(p, ')');
		p->pos = resume;
	}
	p->depth--;
	return t;
}

/* ---- entry points ---- */

struct cdecl *cdecl_parse(const char *text, char *err, size_t errsize)
{
	return cdecl_parse_with(text, NULL, NULL, err, errsize);
}

struct cdecl *cdecl_parse_with(const char *text, cdecl_typedef_fn resolve, void *ctx,
			       char *err, size_t errsize)
{
	struct parser p;
	struct cdecl *cd;
	const struct ctype *base, *t;
	const struct token *name = NULL;

	if (strlen(text) > CDECL_MAX_INPUT) {
		snprintf(err, errsize, "prototype longer than %d characters",
			 CDECL_MAX_INPUT);
		return NULL;
	}
	cd = malloc(sizeof(*cd)); /* nodes are cleared as they are allocated */
	if (!cd) {
		snprintf(err, errsize, "out of memory");
		return NULL;
	}
	cd->nnodes = cd->nparams = cd->ntoks = 0;
	cd->type = NULL;
	cd->via_pointer = 0;
	memset(&p, 0, sizeof(p));
	p.cd = cd;
	p.err = err;
	p.errsize = errsize;
	p.resolve = resolve;
	p.ctx = ctx;
	if (setjmp(p.fail)) {
		free(cd);
		return NULL;
	}
	tokenize(&p, text);
	if (peek(&p, 0)->kind == TK_EOF)
		fail(&p, "empty prototype");
	base = specifiers(&p);
	if (!base)
		unexpected(&p, "a return type");
	t = declarator(&p, base, &name);
	while (skip_ignored(&p))
		;
	accept(&p, ';');
	if (peek(&p, 0)->kind != TK_EOF)
		unexpected(&p, "end of input");
	if (t->kind == CT_POINTER && t->inner->kind == CT_FUNCTION) {
		t = t->inner;
		cd->via_pointer = 1;
	}
	if (t->kind != CT_FUNCTION)
		fail(&p, "not a function type");
	cd->type = t;
	return cd;
}

const struct ctype *cdecl_type(const struct cdecl *cd)
{
	return cd->type;
}

int cdecl_via_pointer(const struct cdecl *cd)
{
	return cd->via_pointer;
}

void cdecl_free(struct cdecl *cd)
{
	free(cd);
}
