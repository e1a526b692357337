/*
 * The C spelling of a canonical type (ctype_to_c()): "void (int *)",
 * declarators built inside out as C reads them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_internal.h"

struct sb {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_add(struct sb *b, const char *s)
{
	size_t len = strlen(s);

	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = (b->n + len + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len + 1);
	b->n += len;
}

static void add_quals(struct sb *b, unsigned q, int after)
{
	static const struct {
		unsigned q;
		const char *s;
	} names[] = { { CQ_CONST, "const" }, { CQ_VOLATILE, "volatile" },
		      { CQ_RESTRICT, "restrict" } };

	for (size_t i = 0; i < 3; i++) {
		if (!(q & names[i].q))
			continue;
		if (after)
			sb_add(b, " ");
		sb_add(b, names[i].s);
		if (!after)
			sb_add(b, " ");
	}
}

static void emit(struct sb *out, const struct ctype *t, const char *decl, int depth)
{
	struct sb d = { 0 };
	char num[32];

	if (depth > MAX_DEPTH) {
		out->oom = 1;
		return;
	}
	switch (t->kind) {
	case CT_POINTER: {
		int wrap = t->inner->kind == CT_FUNCTION || t->inner->kind == CT_ARRAY;

		if (wrap)
			sb_add(&d, "(");
		sb_add(&d, "*");
		add_quals(&d, t->quals, 0);
		sb_add(&d, decl);
		if (wrap)
			sb_add(&d, ")");
		if (!d.oom)
			emit(out, t->inner, d.p, depth + 1);
		break;
	}
	case CT_ARRAY:
		sb_add(&d, decl);
		sb_add(&d, "[");
		if (t->has_size) {
			snprintf(num, sizeof(num), "%llu", t->size);
			sb_add(&d, num);
		}
		sb_add(&d, "]");
		if (!d.oom)
			emit(out, t->inner, d.p, depth + 1);
		break;
	case CT_FUNCTION: {
		const struct cparam *p;

		sb_add(&d, decl);
		sb_add(&d, "(");
		for (p = t->params; p; p = p->next) {
			struct sb param = { 0 };

			emit(&param, p->type, "", depth + 1);
			sb_add(&d, param.p ? param.p : "");
			d.oom |= param.oom;
			free(param.p);
			if (p->next || t->variadic)
				sb_add(&d, ", ");
		}
		if (t->variadic)
			sb_add(&d, "...");
		else if (!t->params && !t->noproto)
			sb_add(&d, "void");
		sb_add(&d, ")");
		if (!d.oom)
			emit(out, t->inner, d.p, depth + 1);
		break;
	}
	default:
		add_quals(out, t->quals, 0);
		if (t->kind == CT_TAG) {
			char name[256];

			if (t->tag) {
				sb_add(out, t->tag);
				sb_add(out, " ");
			}
			snprintf(name, sizeof(name), "%.*s", (int)t->name_len, t->name);
			sb_add(out, name);
		} else if (t->kind == CT_COMPLEX) {
			sb_add(out, "_Complex ");
			sb_add(out, dw_base_name(t->code));
		} else {
			sb_add(out, dw_base_name(t->code));
		}
		if (decl[0]) {
			sb_add(out, " ");
			sb_add(out, decl);
		}
		break;
	}
	out->oom |= d.oom;
	free(d.p);
}

char *ctype_to_c(const struct ctype *t, const char *name)
{
	struct sb out = { 0 };

	emit(&out, t, name ? name : "", 0);
	if (out.oom) {
		free(out.p);
		return NULL;
	}
	return out.p;
}
