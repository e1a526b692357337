/*
 * Prints random C function prototypes, one per line, with '@' where the
 * function's name goes.  Deterministic for a given seed.
 *   genprotos COUNT SEED
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 3
#define BUF 2048

static unsigned long long state;

static unsigned rnd(unsigned n)
{
	state = state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((state >> 33) % n);
}

static const char *const builtins[] = {
	"char", "signed char", "unsigned char", "char unsigned", "short",
	"short int", "unsigned short", "short unsigned int", "int", "signed",
	"signed int", "unsigned", "unsigned int", "long", "long int",
	"signed long", "unsigned long", "long unsigned int", "long long",
	"long long int", "unsigned long long", "long long unsigned", "float",
	"double", "long double", "_Bool", "bool", "size_t", "ssize_t",
	"uintptr_t", "u8", "u16", "u32", "u64", "s32", "s64", "uint64_t",
	"int64_t", "uint32_t", "uint8_t", "__le32", "gfp_t", "loff_t",
	"irqreturn_t", "__int128", "unsigned __int128", "_Complex double",
	"_Complex float",
};

static const char *const tags[] = {
	"struct foo", "struct bar", "union u", "enum e", "struct device",
	"struct file",
};

enum kind { BASE, PTR, ARR, FUNC };

struct ty {
	enum kind kind;
	const char *spelling;    /* BASE */
	unsigned quals;          /* 1 const, 2 volatile, 4 restrict */
	struct ty *inner;
	int size;                /* ARR: -1 for [] */
	struct ty *params[6];
	int nparams, variadic, noproto;
};

enum ctx { RET, PARAM, POINTEE, ELEM };

static struct ty *new_ty(enum kind k)
{
	struct ty *t = calloc(1, sizeof(*t));

	if (!t)
		exit(1);
	t->kind = k;
	return t;
}

static struct ty *gen_func(int depth);

static unsigned rnd_quals(int pointer)
{
	unsigned q = 0;

	if (rnd(8) == 0)
		q |= 1;
	if (rnd(20) == 0)
		q |= 2;
	if (pointer && rnd(20) == 0)
		q |= 4;
	return q;
}

static struct ty *gen_base(enum ctx ctx)
{
	struct ty *t = new_ty(BASE);
	unsigned r = rnd(100);

	if ((ctx == RET || ctx == POINTEE) && r < 12)
		t->spelling = "void";
	else if (r < 35)
		t->spelling = tags[rnd(sizeof(tags) / sizeof(tags[0]))];
	else
		t->spelling = builtins[rnd(sizeof(builtins) / sizeof(builtins[0]))];
	/* no qualified void return type */
	if (!(ctx == RET && strcmp(t->spelling, "void") == 0))
		t->quals = rnd_quals(0);
	return t;
}

static struct ty *gen(int depth, enum ctx ctx)
{
	unsigned r = rnd(100);
	struct ty *t;

	if (depth >= MAX_DEPTH || r < 45)
		return gen_base(ctx);
	if (r < 78) {
		t = new_ty(PTR);
		t->inner = gen(depth + 1, POINTEE);
		t->quals = rnd_quals(1);
		return t;
	}
	if (r < 86 && (ctx == PARAM || ctx == ELEM)) {
		t = new_ty(ARR);
		t->size = (ctx == PARAM && rnd(3) == 0) ? -1 : (int)rnd(9) + 1;
		t->inner = gen(depth + 1, ELEM);
		if (t->inner->kind == BASE && strcmp(t->inner->spelling, "void") == 0)
			t->inner->spelling = "int";
		return t;
	}
	if (r < 94 || ctx == RET) {
		t = new_ty(PTR);
		t->inner = gen_func(depth + 1);
		return t;
	}
	t = new_ty(PTR); /* pointer to array */
	t->inner = new_ty(ARR);
	t->inner->size = (int)rnd(5) + 1;
	t->inner->inner = gen(depth + 2, ELEM);
	return t;
}

static struct ty *gen_func(int depth)
{
	struct ty *f = new_ty(FUNC);

	f->inner = gen(depth, RET);
	f->nparams = (int)rnd(6);
	for (int i = 0; i < f->nparams; i++)
		f->params[i] = gen(depth, PARAM);
	if (f->nparams && rnd(10) == 0)
		f->variadic = 1;
	if (!f->nparams && rnd(15) == 0)
		f->noproto = 1;
	return f;
}

/* snprintf into a BUF-sized buffer; nesting is bounded, so overflow is a bug. */
static void fmt(char *out, const char *f, ...) __attribute__((format(printf, 2, 3)));

static void fmt(char *out, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(out, BUF, f, ap);
	va_end(ap);
	if (n < 0 || n >= BUF) {
		fprintf(stderr, "genprotos: prototype too long\n");
		exit(1);
	}
}

/* Append to a BUF-sized buffer. */
static void append(char *out, const char *a, const char *b)
{
	size_t len = strlen(out);

	if (len + strlen(a) + strlen(b) >= BUF) {
		fprintf(stderr, "genprotos: prototype too long\n");
		exit(1);
	}
	strcat(strcat(out, a), b);
}

static void quals_str(char *out, unsigned q)
{
	out[0] = '\0';
	if (q & 1)
		strcat(out, "const ");
	if (q & 2)
		strcat(out, "volatile ");
	if (q & 4)
		strcat(out, "restrict ");
}

static void render(const struct ty *t, const char *inner, char *out);

static void render_params(const struct ty *f, char *out)
{
	out[0] = '\0';
	if (f->noproto)
		return;
	if (f->nparams == 0) {
		strcpy(out, "void");
		return;
	}
	for (int i = 0; i < f->nparams; i++) {
		char name[16] = "", buf[BUF];

		if (rnd(4) == 0)
			snprintf(name, sizeof(name), "p%d", i);
		render(f->params[i], name, buf);
		append(out, i ? ", " : "", buf);
	}
	if (f->variadic)
		append(out, ", ...", "");
}

static void render(const struct ty *t, const char *inner, char *out)
{
	char q[32], buf[BUF], params[BUF];

	quals_str(q, t->quals);
	switch (t->kind) {
	case BASE:
		if (t->quals && rnd(3) == 0) /* "int const" */
			fmt(out, "%s %s%s", t->spelling, q, inner);
		else
			fmt(out, "%s%s%s%s", q, t->spelling,
				 inner[0] ? " " : "", inner);
		break;
	case PTR:
		fmt(buf, "*%s%s", q, inner);
		if (t->inner->kind == ARR || t->inner->kind == FUNC) {
			char paren[BUF];

			fmt(paren, "(%s)", buf);
			render(t->inner, paren, out);
		} else {
			render(t->inner, buf, out);
		}
		break;
	case ARR:
		if (t->size < 0)
			fmt(buf, "%s[]", inner);
		else
			fmt(buf, "%s[%d]", inner, t->size);
		render(t->inner, buf, out);
		break;
	case FUNC:
		render_params(t, params);
		fmt(buf, "%s(%s)", inner, params);
		render(t->inner, buf, out);
		break;
	}
}

int main(int argc, char **argv)
{
	int count;

	if (argc != 3) {
		fprintf(stderr, "usage: genprotos COUNT SEED\n");
		return 2;
	}
	count = atoi(argv[1]);
	state = strtoull(argv[2], NULL, 0);
	for (int i = 0; i < count; i++) {
		char out[BUF];

		render(gen_func(0), "@", out);
		puts(out);
	}
	return 0;
}
