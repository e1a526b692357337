#include "dwarf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Type chains deeper than this are taken for malformed input. */
#define MAX_DEPTH 64

/* A relocatable image's functions are keyed by section and offset: the
 * section index above bit 40, the offset below. */
#define REL_KEY(shndx, off) ((uint64_t)(shndx) << 40 | ((off) & ((1ull << 40) - 1)))

struct dfunc {
	uint64_t addr;
	Dwarf_Off die;            /* its DW_TAG_subprogram */
	int converted;            /* type, proto and why are set */
	const struct ctype *type; /* NULL when why says why */
	char *proto;
	const char *why;
};

/* A typedef at a compilation unit's top level, converted when asked for. */
struct dtypedef {
	const char *name;
	Dwarf_Off off;
	const struct ctype *type; /* once converted */
	int tried;
};

struct dwarf_funcs {
	struct dfunc *f;
	size_t n, cap;
	struct dtypedef *td;      /* sorted by name, one per name */
	size_t ntd, captd;
	void **mem;               /* every node, for dwarf_funcs_close() */
	size_t nmem, capmem;
	int oom;
	Dwarf *dw;                /* names point into it: open until close */
	Elf *elf;                 /* a linked image's, NULL for a relocatable one */
	Dwfl *dwfl;               /* a relocatable image's: libdwfl relocates */
	Dwfl_Module *mod;         /* its DWARF, and maps addresses back */
	Dwarf_Addr bias;
	void *image;              /* libelf's own copy of the image */
	size_t image_size;
	int image_mapped;         /* image is a private mapping, not malloc'd */
	size_t budget;            /* nodes the current conversion may still take */
};

/* ARR (N of *CAP elements of SIZE bytes used) with room for one more:
 * ARR itself, or a larger copy, or NULL when out of memory. */
static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	size_t c;

	if (n < *cap)
		return arr;
	c = *cap ? 2 * *cap : 1024;
	arr = realloc(arr, c * size);
	if (arr)
		*cap = c;
	return arr;
}

static void *track(struct dwarf_funcs *d, size_t size)
{
	void *p;

	p = grow(d->mem, &d->capmem, d->nmem, sizeof(*d->mem));
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

static const char *base_name(const char *code)
{
	for (size_t i = 0; i < sizeof(base_types) / sizeof(base_types[0]); i++)
		if (strcmp(base_types[i].code, code) == 0)
			return base_types[i].name;
	return code;
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
static void convert_func(struct dwarf_funcs *d, struct dfunc *f)
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

static int add_func(struct dwarf_funcs *d, Dwarf_Die *die)
{
	Dwarf_Addr addr;
	struct dfunc *f;

	if (dwarf_lowpc(die, &addr) != 0)
		return 0;
	if (d->mod) {
		/* libdwfl laid the sections out at addresses of its own:
		 * back to section and offset. */
		Dwarf_Addr a = addr + d->bias;
		GElf_Word shndx;
		int idx = dwfl_module_relocate_address(d->mod, &a);

		if (idx < 0 || !dwfl_module_relocation_info(d->mod, (unsigned int)idx, &shndx))
			return 0;
		addr = REL_KEY(shndx, a);
	}
	f = grow(d->f, &d->cap, d->n, sizeof(*d->f));
	if (!f)
		return -1;
	d->f = f;
	d->f[d->n++] = (struct dfunc){ .addr = addr, .die = dwarf_dieoffset(die) };
	return 0;
}

static int add_typedef(struct dwarf_funcs *d, Dwarf_Die *die)
{
	const char *name = dwarf_diename(die);
	struct dtypedef *td;

	if (!name)
		return 0;
	td = grow(d->td, &d->captd, d->ntd, sizeof(*d->td));
	if (!td)
		return -1;
	d->td = td;
	d->td[d->ntd++] = (struct dtypedef){ name, dwarf_dieoffset(die), NULL, 0 };
	return 0;
}

static int by_name(const void *a, const void *b)
{
	const struct dtypedef *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	/* The first unit's wins: a stable order among equal names. */
	return c ? c : x->off < y->off ? -1 : x->off > y->off;
}

/* Sort the typedefs by name and keep the first of each name. */
static void index_typedefs(struct dwarf_funcs *d)
{
	size_t out = 0;

	/* qsort's base must not be NULL, even for no elements (UBSan). */
	if (!d->ntd)
		return;
	qsort(d->td, d->ntd, sizeof(*d->td), by_name);
	for (size_t i = 0; i < d->ntd; i++)
		if (!out || strcmp(d->td[out - 1].name, d->td[i].name) != 0)
			d->td[out++] = d->td[i];
	d->ntd = out;
}

const struct ctype *dwarf_typedef(struct dwarf_funcs *d, const char *name, size_t len)
{
	size_t lo = 0, hi = d->ntd;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(d->td[mid].name, name, len);

		if (c == 0 && d->td[mid].name[len] != '\0')
			c = 1;
		if (c < 0)
			lo = mid + 1;
		else if (c > 0)
			hi = mid;
		else {
			struct dtypedef *t = &d->td[mid];

			if (!t->tried) {
				Dwarf_Die die;
				const char *why = NULL;

				t->tried = 1;
				d->budget = MAX_NODES_PER_TYPE;
				if (dwarf_offdie(d->dw, t->off, &die))
					t->type = conv(d, &die, 0, &why);
			}
			return t->type;
		}
	}
	return NULL;
}

static int by_addr(const void *a, const void *b)
{
	const struct dfunc *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int is_relocatable(Elf *elf)
{
	GElf_Ehdr eh;

	return gelf_getehdr(elf, &eh) && eh.e_type == ET_REL;
}

/* No separate debuginfo file: the image's own DWARF or none. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			Dwarf_Addr base, const char *file, const char *debuglink,
			GElf_Word crc, char **path)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file;
	(void)debuglink, (void)crc, (void)path;
	return -1;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* The relocated DWARF of the relocatable image in D->image (SIZE bytes),
 * or NULL with the reason in ERR. */
static Dwarf *open_relocatable(struct dwarf_funcs *d, const char *path, size_t size,
			       char *err, size_t errsize)
{
	Dwarf *dw;

	d->dwfl = dwfl_begin(&offline_callbacks);
	if (!d->dwfl) {
		snprintf(err, errsize, "%s: libdwfl: %s", path, dwfl_errmsg(-1));
		return NULL;
	}
	d->mod = dwfl_report_offline_memory(d->dwfl, "image", path, d->image, size);
	if (!d->mod || dwfl_report_end(d->dwfl, NULL, NULL) != 0) {
		snprintf(err, errsize, "%s: libdwfl: %s", path, dwfl_errmsg(-1));
		d->mod = NULL;
		return NULL;
	}
	dw = dwfl_module_getdwarf(d->mod, &d->bias);
	if (!dw) {
		snprintf(err, errsize, "%s: no DWARF to read types from (%s)", path,
			 dwfl_errmsg(-1));
		d->mod = NULL;
	}
	return dw;
}

uint64_t dwarf_entry_key(const struct dwarf_funcs *d, unsigned int shndx, uint64_t off,
			 uint64_t addr)
{
	return d->mod ? REL_KEY(shndx, off) : addr;
}

/*
 * libelf and libdw may write to a memory image (decompressing a
 * SHF_COMPRESSED section rewrites its header), and the caller's is mapped
 * read-only: they get a copy of their own. A private mapping of PATH when
 * it is the file the caller read (a regular file of the same size that
 * starts with the same 4 KiB), so that only the pages they write are
 * copied (a vmlinux is hundreds of MB); else a copy in memory.
 */
static void *private_copy(const void *data, size_t size, const char *path, int *mapped)
{
	struct stat st;
	void *p;
	int fd;

	*mapped = 0;
	fd = size ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size) {
			p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
			if (p != MAP_FAILED && memcmp(p, data, size < 4096 ? size : 4096) == 0) {
				close(fd);
				*mapped = 1;
				return p;
			}
			if (p != MAP_FAILED)
				munmap(p, size);
		}
		close(fd);
	}
	p = malloc(size ? size : 1);
	if (p)
		memcpy(p, data, size);
	return p;
}

static void free_copy(void *p, size_t size, int mapped)
{
	if (mapped)
		munmap(p, size);
	else
		free(p);
}

struct dwarf_funcs *dwarf_funcs_open(const void *data, size_t size, const char *path,
				     char *err, size_t errsize)
{
	struct dwarf_funcs *d;
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw;
	Elf *elf;
	char *copy;
	int mapped;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errsize, "%s: libelf: %s", path, elf_errmsg(-1));
		return NULL;
	}
	copy = private_copy(data, size, path, &mapped);
	if (!copy) {
		snprintf(err, errsize, "%s: out of memory reading DWARF", path);
		return NULL;
	}
	elf = elf_memory(copy, size);
	if (!elf) {
		snprintf(err, errsize, "%s: libelf: %s", path, elf_errmsg(-1));
		free_copy(copy, size, mapped);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		elf_end(elf);
		free_copy(copy, size, mapped);
		snprintf(err, errsize, "%s: out of memory reading DWARF", path);
		return NULL;
	}
	d->image = copy;
	d->image_size = size;
	d->image_mapped = mapped;
	if (elf_kind(elf) == ELF_K_ELF && is_relocatable(elf)) {
		/* A .o or .ko: libdw alone does not apply the relocations of
		 * its DWARF (strings and addresses would read as zero);
		 * libdwfl does, in its own layout of the sections. */
		elf_end(elf);
		dw = open_relocatable(d, path, size, err, errsize);
	} else {
		d->elf = elf;
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		if (!dw)
			snprintf(err, errsize, "%s: no DWARF to read types from (%s)", path,
				 dwarf_errmsg(-1));
	}
	if (!dw) {
		dwarf_funcs_close(d);
		return NULL;
	}
	d->dw = dw;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, child;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0) {
			do {
				int tag = dwarf_tag(&child);

				if ((tag == DW_TAG_subprogram && add_func(d, &child) != 0) ||
				    (tag == DW_TAG_typedef && add_typedef(d, &child) != 0)) {
					snprintf(err, errsize, "%s: out of memory reading DWARF", path);
					dwarf_funcs_close(d);
					return NULL;
				}
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		off = next;
	}
	/* No function at all is an assembly file's DWARF (lines only): its
	 * functions are then each "not in DWARF". */
	if (d->n)
		qsort(d->f, d->n, sizeof(*d->f), by_addr);
	index_typedefs(d);
	return d;
}

void dwarf_funcs_close(struct dwarf_funcs *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->f[i].proto);
	for (size_t i = 0; i < d->nmem; i++)
		free(d->mem[i]);
	free(d->mem);
	free(d->f);
	free(d->td);
	/* A relocatable image's Dwarf belongs to its Dwfl. */
	if (d->dwfl)
		dwfl_end(d->dwfl);
	else if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	free_copy(d->image, d->image_size, d->image_mapped);
	free(d);
}

size_t dwarf_funcs_count(const struct dwarf_funcs *d)
{
	return d->n;
}

const struct ctype *dwarf_func_at(struct dwarf_funcs *d, uint64_t addr,
				  const char **proto, const char **why)
{
	size_t lo = 0, hi = d->n;

	*why = NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->f[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == d->n || d->f[lo].addr != addr)
		return NULL;
	if (!d->f[lo].converted)
		convert_func(d, &d->f[lo]);
	*proto = d->f[lo].proto;
	*why = d->f[lo].why;
	return d->f[lo].type;
}

/* ---- C spelling ---- */

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
			sb_add(out, base_name(t->code));
		} else {
			sb_add(out, base_name(t->code));
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
