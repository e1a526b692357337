/*
 * What the DWARF reader's files share (dwarf.h is the interface):
 *  dwarf_index.c  the functions and typedefs of an image, by address and
 *                 by name (dwarf_funcs_open(), dwarf_func_at(), ...);
 *  dwarf_types.c  converting a DIE to the canonical C type (struct ctype);
 *  dwarf_rel.c    the image's own copy for libelf and libdw, and a
 *                 relocatable one's DWARF relocated by libdwfl;
 *  dwarf_print.c  the C spelling of a type (ctype_to_c()).
 */
#ifndef KCFI_DWARF_INTERNAL_H
#define KCFI_DWARF_INTERNAL_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf.h"

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

/* dwarf_index.c */
void *dw_grow(void *arr, size_t *cap, size_t n, size_t size);

/* dwarf_types.c: F's or T's type, converted once, when first asked for. */
void dw_convert_func(struct dwarf_funcs *d, struct dfunc *f);
void dw_convert_typedef(struct dwarf_funcs *d, struct dtypedef *t);
/* The C name of an Itanium builtin code ("j": "unsigned int"), or CODE. */
const char *dw_base_name(const char *code);

/*
 * dwarf_rel.c: a new struct dwarf_funcs with the DWARF of the image in
 * DATA open (d->dw), in a copy of its own; NULL with the reason in ERR.
 * dw_close_image() ends what it opened and frees the copy.
 */
struct dwarf_funcs *dw_open_image(const void *data, size_t size, const char *path,
				  char *err, size_t errsize);
void dw_close_image(struct dwarf_funcs *d);
/* A relocatable image's key (REL_KEY) of ADDR in libdwfl's layout; 0
 * when ADDR is in no section. */
int dw_rel_key(const struct dwarf_funcs *d, Dwarf_Addr addr, uint64_t *key);

#endif
