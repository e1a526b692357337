/*
 * The functions (DW_TAG_subprogram with an entry address) and the typedefs
 * at the top level of each compilation unit of an image's DWARF: found in
 * one pass when it is opened, sorted by address and by name, their types
 * converted when first looked up (dwarf_types.c).
 */
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_internal.h"

/* ARR (N of *CAP elements of SIZE bytes used) with room for one more:
 * ARR itself, or a larger copy, or NULL when out of memory. */
void *dw_grow(void *arr, size_t *cap, size_t n, size_t size)
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

static int add_func(struct dwarf_funcs *d, Dwarf_Die *die)
{
	Dwarf_Addr addr;
	struct dfunc *f;

	if (dwarf_lowpc(die, &addr) != 0)
		return 0;
	if (d->mod && !dw_rel_key(d, addr, &addr))
		return 0;
	f = dw_grow(d->f, &d->cap, d->n, sizeof(*d->f));
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
	td = dw_grow(d->td, &d->captd, d->ntd, sizeof(*d->td));
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

			if (!t->tried)
				dw_convert_typedef(d, t);
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

uint64_t dwarf_entry_key(const struct dwarf_funcs *d, unsigned int shndx, uint64_t off,
			 uint64_t addr)
{
	return d->mod ? REL_KEY(shndx, off) : addr;
}

struct dwarf_funcs *dwarf_funcs_open(const void *data, size_t size, const char *path,
				     char *err, size_t errsize)
{
	struct dwarf_funcs *d;
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw;

	d = dw_open_image(data, size, path, err, errsize);
	if (!d)
		return NULL;
	dw = d->dw;
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
	dw_close_image(d);
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
		dw_convert_func(d, &d->f[lo]);
	*proto = d->f[lo].proto;
	*why = d->f[lo].why;
	return d->f[lo].type;
}
