/*
 * DWARF types as the canonical C types clang hands to the Itanium mangler
 * (struct ctype, cdecl.h): typedefs resolved (an anonymous struct, union
 * or enum takes its typedef's name), top-level parameter qualifiers
 * dropped.  Each function's or typedef's type is converted the first time
 * it is looked up (dwarf_index.c).
 */
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_internal.h"

/* SIZE zeroed bytes, freed with the rest by dwarf_funcs_close(). */
static void *track(struct dwarf_funcs *d, size_t size)
{
	void *p;

	p = dw_grow(d->mem, &d->capmem, d->nmem, sizeof(*d->mem));
	if (!p) {
		d->oom = 1;
		return NULL;
	}
	d->mem = p;
	p = calloc(1, size);
	if (!p) {
		d->oom = 1;
		return NULL;
	}
	d->mem[d->nmem++] = p;
	return p;
}

/* Nodes one function's or typedef's type may take: malformed DWARF whose
 * references fan out (a function type whose parameters are itself) would
 * grow without end before the depth limit is reached. */
#define MAX_NODES_PER_TYPE 4096

static struct ctype *node(struct dwarf_funcs *d, enum ctype_kind kind)
{
	struct ctype *t;

	if (d->budget == 0)
		return NULL;
	d->budget--;
	t = track(d, sizeof(*t));

	if (t)
		t->kind = kind;
	return t;
}

/* clang's and gcc's DW_AT_name of the C base types, and Itanium codes. */
static const struct {
	const char *name, *code;
} base_types[] = {
	{ "void", "v" },
	{ "_Bool", "b" },
	{ "bool", "b" },
	{ "char", "c" },
	{ "signed char", "a" },
	{ "unsigned char", "h" },
	{ "short", "s" },
	{ "short int", "s" },
	{ "unsigned short", "t" },
	{ "short unsigned int", "t" },
	{ "int", "i" },
	{ "unsigned int", "j" },
	{ "long", "l" },
	{ "long int", "l" },
	{ "unsigned long", "m" },
	{ "long unsigned int", "m" },
	{ "long long", "x" },
	{ "long long int", "x" },
	{ "unsigned long long", "y" },
	{ "long long unsigned int", "y" },
	{ "__int128", "n" },
	{ "unsigned __int128", "o" },
	{ "__int128 unsigned", "o" },
	{ "float", "f" },
	{ "double", "d" },
	{ "long double", "e" },
	{ "_Float16", "DF16_" },
	/* AArch64's va_list: struct __va_list, which the ABI puts in namespace
	 * std (clang mangles St9__va_list). */
	{ "__builtin_va_list", "St9__va_list" },
};

static const char *base_code(const char *name)
{
	for (size_t i = 0; i < sizeof(base_types) / sizeof(base_types[0]); i++)
		if (strcmp(base_types[i].name, name) == 0)
			return base_types[i].code;
	return NULL;
}

const char *dw_base_name(const char *code)
{
	for (size_t i = 0; i < sizeof(base_types) / sizeof(base_types[0]); i++)
		if (strcmp(base_types[i].code, code) == 0)
			return base_types[i].name;
	return code;
}

/* A struct, union or enum's size in bytes, when DWARF has it: how the
 * x86_64 ABI passes it (in registers up to 16 bytes) depends on it. */
static void tag_size(struct ctype *t, Dwarf_Die *die)
{
	Dwarf_Word size;

	if (dwarf_aggregate_size(die, &size) == 0) {
		t->size = size;
		t->has_size = 1;
	}
}

static struct ctype *conv(struct dwarf_funcs *d, Dwarf_Die *die, int depth,
			  const char **why);

static struct ctype *void_type(struct dwarf_funcs *d)
{
	struct ctype *t = node(d, CT_BUILTIN);

	if (t)
		t->code = "v";
	return t;
}

/* The DIE that DIE's DW_AT_type refers to: 1, or 0 when it has none
 * (void), or -1 when the reference leads nowhere. */
static int type_of(Dwarf_Die *die, Dwarf_Die *type)
{
	Dwarf_Attribute attr;

	if (!dwarf_attr_integrate(die, DW_AT_type, &attr))
		return 0;
	return dwarf_formref_die(&attr, type) ? 1 : -1;
}

/* The type DIE refers to with DW_AT_type; void when it has none. */
static struct ctype *conv_ref(struct dwarf_funcs *d, Dwarf_Die *die, int depth,
			      const char **why)
{
	Dwarf_Die type;

	switch (type_of(die, &type)) {
	case 0:
		return void_type(d);
	case 1:
		return conv(d, &type, depth + 1, why);
	default:
		*why = "a DW_AT_type that refers nowhere";
		return NULL;
	}
}

static const char *tag_keyword(int tag)
{
	switch (tag) {
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
		return "struct";
	case DW_TAG_union_type:
		return "union";
	default:
		return "enum";
	}
}

static int is_tag_type(int tag)
{
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_class_type || tag == DW_TAG_enumeration_type;
}

/* A parameter's type as part of a function type: arrays and functions
 * decay to pointers, top-level qualifiers go. */
static struct ctype *adjust_param(struct dwarf_funcs *d, struct ctype *t)
{
	if (t->kind == CT_ARRAY || t->kind == CT_FUNCTION) {
		struct ctype *p = node(d, CT_POINTER);

		if (!p)
			return NULL;
		p->inner = t->kind == CT_ARRAY ? t->inner : t;
		t = p;
	}
	t->quals = 0;
	return t;
}

/*
 * The function type of a DW_TAG_subprogram or DW_TAG_subroutine_type.
 * PARAMS is the DIE whose children are the parameters (the abstract
 * origin of an out-of-line instance).
 */
static struct ctype *conv_function(struct dwarf_funcs *d, Dwarf_Die *die,
				   Dwarf_Die *params, int depth, const char **why)
{
	struct ctype *f = node(d, CT_FUNCTION);
	struct cparam **tail;
	Dwarf_Attribute attr;
	Dwarf_Die child;
	bool proto = false;

	if (!f)
		return NULL;
	f->inner = conv_ref(d, die, depth, why);
	if (!f->inner)
		return NULL;
	if (dwarf_attr_integrate(die, DW_AT_prototyped, &attr))
		dwarf_formflag(&attr, &proto);
	/* set once the parameters are known */
	tail = (struct cparam **)&f->params;
	if (dwarf_child(params, &child) != 0) {
		f->noproto = !proto;
		return f;
	}
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_unspecified_parameters) {
			/* "int (*)()" has them too, but no prototype. */
			f->variadic = proto;
		} else if (tag == DW_TAG_formal_parameter) {
			struct cparam *p = track(d, sizeof(*p));
			struct ctype *t = conv_ref(d, &child, depth, why);

			if (!p || !t || !(t = adjust_param(d, t)))
				return NULL;
			p->type = t;
			*tail = p;
			tail = (struct cparam **)&p->next;
			f->nparams++;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	/* A definition without a prototype ("int f(a) int a; {...}") takes
	 * the type of its parameters, as clang does; "int (*)()" has none. */
	f->noproto = !proto && f->nparams == 0;
	return f;
}

static struct ctype *conv_array(struct dwarf_funcs *d, Dwarf_Die *die, int depth,
				const char **why)
{
	struct ctype *elem = conv_ref(d, die, depth, why), *outer = NULL;
	struct ctype **hole = &outer;
	Dwarf_Die sub;

	if (!elem)
		return NULL;
	if (dwarf_child(die, &sub) == 0) {
		do {
			Dwarf_Attribute attr;
			Dwarf_Word v;
			struct ctype *a;

			if (dwarf_tag(&sub) != DW_TAG_subrange_type)
				continue;
			a = node(d, CT_ARRAY);
			if (!a)
				return NULL;
			if (dwarf_attr(&sub, DW_AT_count, &attr) && dwarf_formudata(&attr, &v) == 0) {
				a->has_size = 1;
				a->size = v;
			} else if (dwarf_attr(&sub, DW_AT_upper_bound, &attr) &&
				   dwarf_formudata(&attr, &v) == 0) {
				a->has_size = 1;
				a->size = v + 1;
			}
			*hole = a;
			hole = (struct ctype **)&a->inner;
		} while (dwarf_siblingof(&sub, &sub) == 0);
	}
	if (!outer) {
		outer = node(d, CT_ARRAY);
		if (!outer)
			return NULL;
		hole = (struct ctype **)&outer->inner;
	}
	*hole = elem;
	return outer;
}

static struct ctype *conv(struct dwarf_funcs *d, Dwarf_Die *die, int depth,
			  const char **why)
{
	struct ctype *t;
	const char *name;
	int tag = dwarf_tag(die);

	if (depth > MAX_DEPTH) {
		*why = "a type chain too deep";
		return NULL;
	}
	switch (tag) {
	case DW_TAG_base_type:
	case DW_TAG_unspecified_type: {
		Dwarf_Attribute attr;
		Dwarf_Word enc = 0;

		/* clang names every complex type "complex": its size tells. */
		if (dwarf_attr(die, DW_AT_encoding, &attr) && dwarf_formudata(&attr, &enc) == 0 &&
		    enc == DW_ATE_complex_float) {
			int size = dwarf_bytesize(die);

			t = node(d, CT_COMPLEX);
			if (t)
				t->code = size == 8 ? "f" : size == 16 ? "d" : "e";
			return t;
		}
		name = dwarf_diename(die);
		t = node(d, CT_BUILTIN);
		if (!t)
			return NULL;
		t->code = name ? base_code(name) : NULL;
		if (!t->code) {
			*why = "a base type the mangler does not know";
			return NULL;
		}
		return t;
	}
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
		t = conv_ref(d, die, depth, why);
		if (t) {
			/* A qualified array is an array of qualified elements
			 * (its nodes are this conversion's own). */
			struct ctype *e = t;

			while (e->kind == CT_ARRAY && e->inner)
				e = (struct ctype *)e->inner;
			e->quals |= tag == DW_TAG_const_type ? CQ_CONST :
				    tag == DW_TAG_volatile_type ? CQ_VOLATILE : CQ_RESTRICT;
		}
		return t;
	case DW_TAG_pointer_type:
		t = node(d, CT_POINTER);
		if (!t || !(t->inner = conv_ref(d, die, depth, why)))
			return NULL;
		return t;
	case DW_TAG_typedef: {
		Dwarf_Die under;

		/* An anonymous struct, union or enum is named by its typedef. */
		if (type_of(die, &under) == 1 && is_tag_type(dwarf_tag(&under)) &&
		    !dwarf_diename(&under)) {
			t = node(d, CT_TAG);
			if (!t || !(name = dwarf_diename(die)))
				return NULL;
			t->name = name;
			t->name_len = strlen(name);
			tag_size(t, &under);
			return t;
		}
		return conv_ref(d, die, depth, why);
	}
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
	case DW_TAG_enumeration_type:
		name = dwarf_diename(die);
		if (!name) {
			*why = "an anonymous struct, union or enum without a typedef";
			return NULL;
		}
		if (tag == DW_TAG_structure_type && strcmp(name, "__va_list") == 0) {
			t = node(d, CT_BUILTIN);
			if (t)
				t->code = "St9__va_list";
			return t;
		}
		t = node(d, CT_TAG);
		if (!t)
			return NULL;
		t->name = name;
		t->name_len = strlen(name);
		t->tag = tag_keyword(tag);
		tag_size(t, die);
		return t;
	case DW_TAG_array_type:
		return conv_array(d, die, depth, why);
	case DW_TAG_subroutine_type:
		return conv_function(d, die, die, depth, why);
	default:
		*why = "a type the mangler does not know (e.g. _Atomic)";
		return NULL;
	}
}

/* A function's type, converted when it is first looked up: most of the
 * image's functions have no preamble, and converting is most of the
 * cost of reading types. */
void dw_convert_func(struct dwarf_funcs *d, struct dfunc *f)
{
	Dwarf_Die die, origin, params;
	Dwarf_Attribute attr;
	const char *why = NULL;
	const struct ctype *t;

	f->converted = 1;
	f->type = NULL;
	f->proto = NULL;
	f->why = "no type";
	if (!dwarf_offdie(d->dw, f->die, &die))
		return;
	origin = die;
	/* An out-of-line instance of an inlined function: its type is on
	 * the abstract origin (a chain of a few, and never a cycle). */
	for (int hops = 0; dwarf_attr(&origin, DW_AT_abstract_origin, &attr) &&
	     dwarf_formref_die(&attr, &origin); hops++)
		if (hops == MAX_DEPTH)
			return;
	params = origin;
	if (dwarf_child(&params, &(Dwarf_Die){ 0 }) != 0 &&
	    dwarf_attr(&origin, DW_AT_specification, &attr))
		dwarf_formref_die(&attr, &params);
	d->budget = MAX_NODES_PER_TYPE;
	t = conv_function(d, &origin, &params, 0, &why);
	if (d->oom) {
		f->why = "out of memory";
		return;
	}
	if (!t) {
		f->why = why ? why : "a type too large";
		return;
	}
	f->proto = ctype_to_c(t, "");
	if (!f->proto) {
		/* Too deep to print (or out of memory): left out, not fatal. */
		f->why = "a type too deep to print";
		return;
	}
	f->type = t;
	f->why = NULL;
}

void dw_convert_typedef(struct dwarf_funcs *d, struct dtypedef *t)
{
	Dwarf_Die die;
	const char *why = NULL;

	t->tried = 1;
	d->budget = MAX_NODES_PER_TYPE;
	if (dwarf_offdie(d->dw, t->off, &die))
		t->type = conv(d, &die, 0, &why);
}
