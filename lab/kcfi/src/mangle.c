/*
 * Itanium C++ ABI type mangling for the C types that cdecl.c produces,
 * following clang's CXXNameMangler:
 *
 *   <builtin>   v b c a h s t i j l m x y n o f d e DF16_
 *   <qualified> [r][V][K] <type>          restrict, volatile, const
 *   <pointer>   P <type>
 *   <array>     A [<size>] _ <type>
 *   <function>  F <return> <params> E     params: 'v' if none, 'z' for ...
 *   <complex>   C <type>
 *   <tag>       <length> <identifier>     struct/union/enum tags
 *
 * Substitutions: every type except an unqualified builtin is a candidate.
 * A candidate is added after it has been mangled (so components come
 * before the types containing them); a later occurrence of an identical
 * type is replaced by S_ (first candidate), S0_, S1_, ... S9_, SA_ ... SZ_,
 * S10_ ...  Identity is decided on the expanded mangling.
 */
#include "mangle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sbuf {
	char *s;
	size_t len, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *s2;

		while (b->len + n + 1 > cap)
			cap *= 2;
		s2 = realloc(b->s, cap);
		if (!s2) {
			b->oom = 1;
			return;
		}
		b->s = s2;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void put_quals(struct sbuf *b, unsigned quals)
{
	if (quals & CQ_RESTRICT)
		sb_puts(b, "r");
	if (quals & CQ_VOLATILE)
		sb_puts(b, "V");
	if (quals & CQ_CONST)
		sb_puts(b, "K");
}

struct mangler {
	struct sbuf out;
	char **subs; /* expanded manglings of the candidates, in order */
	size_t nsubs, capsubs;
	int oom;
};

static void mangle(struct mangler *m, const struct ctype *t);

/*
 * The structure of a mangling, with EMIT choosing how a nested type is
 * written: expanded (for substitution keys) or mangled (for output).
 */
static void structure(struct sbuf *b, const struct ctype *t,
		      void (*emit)(void *ctx, const struct ctype *), void *ctx)
{
	const struct cparam *param;

	switch (t->kind) {
	case CT_BUILTIN:
		sb_puts(b, t->code);
		break;
	case CT_COMPLEX:
		sb_printf(b, "C%s", t->code);
		break;
	case CT_TAG:
		sb_printf(b, "%zu", t->name_len);
		sb_add(b, t->name, t->name_len);
		break;
	case CT_POINTER:
		sb_puts(b, "P");
		emit(ctx, t->inner);
		break;
	case CT_ARRAY:
		sb_puts(b, "A");
		if (t->has_size)
			sb_printf(b, "%llu", t->size);
		sb_puts(b, "_");
		emit(ctx, t->inner);
		break;
	case CT_FUNCTION:
		sb_puts(b, "F");
		emit(ctx, t->inner);
		if (!t->noproto && t->nparams == 0 && !t->variadic)
			sb_puts(b, "v");
		for (param = t->params; param; param = param->next)
			emit(ctx, param->type);
		if (t->variadic)
			sb_puts(b, "z");
		sb_puts(b, "E");
		break;
	}
}

static void expand_into(void *ctx, const struct ctype *t)
{
	struct sbuf *b = ctx;

	put_quals(b, t->quals);
	structure(b, t, expand_into, b);
}

static char *expand(const struct ctype *t)
{
	struct sbuf b = { 0 };

	expand_into(&b, t);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

static void mangle_into(void *ctx, const struct ctype *t)
{
	mangle(ctx, t);
}

static void put_seq_id(struct sbuf *b, size_t index)
{
	char digits[16];
	size_t n = 0;

	sb_puts(b, "S");
	if (index > 0) {
		size_t v = index - 1;

		do {
			digits[n++] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[v % 36];
			v /= 36;
		} while (v);
		while (n)
			sb_add(b, &digits[--n], 1);
	}
	sb_puts(b, "_");
}

static void add_sub(struct mangler *m, char *key)
{
	if (m->nsubs == m->capsubs) {
		size_t cap = m->capsubs ? m->capsubs * 2 : 16;
		char **s = realloc(m->subs, cap * sizeof(*s));

		if (!s) {
			m->oom = 1;
			free(key);
			return;
		}
		m->subs = s;
		m->capsubs = cap;
	}
	m->subs[m->nsubs++] = key;
}

static void mangle(struct mangler *m, const struct ctype *t)
{
	int substitutable = t->quals || t->kind != CT_BUILTIN;
	char *key = NULL;

	if (m->oom)
		return;
	if (substitutable) {
		key = expand(t);
		if (!key) {
			m->oom = 1;
			return;
		}
		for (size_t i = 0; i < m->nsubs; i++) {
			if (strcmp(m->subs[i], key) == 0) {
				put_seq_id(&m->out, i);
				free(key);
				return;
			}
		}
	}
	if (t->quals) {
		struct ctype unqualified = *t;

		unqualified.quals = 0;
		put_quals(&m->out, t->quals);
		mangle(m, &unqualified);
	} else {
		structure(&m->out, t, mangle_into, m);
	}
	if (key)
		add_sub(m, key);
}

char *mangle_type(const struct ctype *t)
{
	struct mangler m = { 0 };

	mangle(&m, t);
	for (size_t i = 0; i < m.nsubs; i++)
		free(m.subs[i]);
	free(m.subs);
	if (m.oom || m.out.oom) {
		free(m.out.s);
		return NULL;
	}
	return m.out.s;
}

char *mangle_prototype(const char *proto, char *err, size_t errsize)
{
	struct cdecl *cd = cdecl_parse(proto, err, errsize);
	char *name;

	if (!cd)
		return NULL;
	name = mangle_type(cdecl_type(cd));
	cdecl_free(cd);
	if (!name)
		snprintf(err, errsize, "out of memory");
	return name;
}
