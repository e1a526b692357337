/*
 * Function prototypes from an image's DWARF, read with elfutils' libdw,
 * as the canonical C types clang hands to the Itanium mangler: typedefs
 * resolved (an anonymous struct, union or enum takes its typedef's name),
 * top-level parameter qualifiers dropped.  The files behind it:
 * dwarf_internal.h.
 */
#ifndef KCFI_DWARF_H
#define KCFI_DWARF_H

#include <stddef.h>
#include <stdint.h>

#include "cdecl.h"

struct dwarf_funcs;

/*
 * Read the functions (DW_TAG_subprogram with an entry address) of the ELF
 * image in DATA: a linked one (vmlinux) through libdw, a relocatable one
 * (.o, .ko) through libdwfl, which applies the relocations of its DWARF.
 * The reader takes a copy of DATA.  Returns NULL with a one-line reason in
 * ERR (naming PATH) when it has no DWARF or it cannot be read.
 */
struct dwarf_funcs *dwarf_funcs_open(const void *data, size_t size, const char *path,
				     char *err, size_t errsize);
void dwarf_funcs_close(struct dwarf_funcs *d);

/* Number of functions read. */
size_t dwarf_funcs_count(const struct dwarf_funcs *d);

/*
 * The key dwarf_func_at() takes for the entry at offset OFF of section
 * SHNDX, at address ADDR: ADDR in a linked image, the section and offset
 * in a relocatable one (whose sections all start at 0).
 */
uint64_t dwarf_entry_key(const struct dwarf_funcs *d, unsigned int shndx, uint64_t off,
			 uint64_t addr);

/*
 * The function whose code starts at ADDR (a dwarf_entry_key()): its type (CT_FUNCTION) and its
 * prototype as C ("void (int *)"), or NULL when DWARF has no function
 * there.  When DWARF has one whose type cannot be expressed, returns NULL
 * and sets *WHY (e.g. "anonymous struct without a typedef").
 */
const struct ctype *dwarf_func_at(struct dwarf_funcs *d, uint64_t addr,
				  const char **proto, const char **why);

/*
 * The canonical type a typedef NAME (LEN bytes) stands for, from the first
 * compilation unit that defines it at its top level, or NULL.
 */
const struct ctype *dwarf_typedef(struct dwarf_funcs *d, const char *name, size_t len);

/* C spelling of T with declarator NAME ("" for an abstract one); malloc'd. */
char *ctype_to_c(const struct ctype *t, const char *name);

#endif
