/*
 * An image's DWARF for libdw: libelf and libdw get a copy of their own of
 * the image, and a relocatable one (.o, .ko) is opened through libdwfl,
 * which applies the relocations of its DWARF and lays its sections out at
 * addresses of its own (dw_rel_key() maps them back).
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf_internal.h"

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

struct dwarf_funcs *dw_open_image(const void *data, size_t size, const char *path,
				  char *err, size_t errsize)
{
	struct dwarf_funcs *d;
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
	return d;
}

void dw_close_image(struct dwarf_funcs *d)
{
	/* A relocatable image's Dwarf belongs to its Dwfl. */
	if (d->dwfl)
		dwfl_end(d->dwfl);
	else if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	free_copy(d->image, d->image_size, d->image_mapped);
}

int dw_rel_key(const struct dwarf_funcs *d, Dwarf_Addr addr, uint64_t *key)
{
	/* libdwfl laid the sections out at addresses of its own:
	 * back to section and offset. */
	Dwarf_Addr a = addr + d->bias;
	GElf_Word shndx;
	int idx = dwfl_module_relocate_address(d->mod, &a);

	if (idx < 0 || !dwfl_module_relocation_info(d->mod, (unsigned int)idx, &shndx))
		return 0;
	*key = REL_KEY(shndx, a);
	return 1;
}
