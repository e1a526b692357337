#include "elf.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EHDR_SIZE 64
#define SHDR_SIZE 64
#define SYM_SIZE 24
#define RELA_SIZE 24

/* Is [off, off+len) inside a buffer of SIZE bytes?  Overflow-safe. */
static int in_bounds(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* Only ELF64 files get as far as their machine: EM_RISCV is riscv64. */
static const char *machine_names[][2] = {
	{ "3", "i386" },       { "8", "mips" },       { "20", "ppc" },
	{ "21", "ppc64" },     { "22", "s390" },      { "40", "arm" },
	{ "62", "x86_64" },    { "183", "aarch64" },  { "243", "riscv64" },
	{ "258", "loongarch" },
};

const char *elf_machine_name(uint16_t machine)
{
	char buf[8];

	snprintf(buf, sizeof(buf), "%u", machine);
	for (size_t i = 0; i < sizeof(machine_names) / sizeof(machine_names[0]); i++)
		if (strcmp(machine_names[i][0], buf) == 0)
			return machine_names[i][1];
	return NULL;
}

static int failf(char *err, size_t errsize, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int failf(char *err, size_t errsize, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsize, fmt, ap);
	va_end(ap);
	return -1;
}

/* A NUL-terminated string at OFF inside the string section, or "". */
static const char *string_at(const struct elf_section *strtab, uint64_t off)
{
	const uint8_t *p;

	if (!strtab || !strtab->data || off >= strtab->size)
		return "";
	p = strtab->data + off;
	if (!memchr(p, '\0', strtab->size - off))
		return "";
	return (const char *)p;
}

static int read_sections(struct elf_file *ef, char *err, size_t errsize)
{
	const uint8_t *eh = ef->data;
	uint64_t shoff = elf_rd64(eh + 0x28);
	uint16_t shentsize = elf_rd16(eh + 0x3a);
	uint64_t shnum = elf_rd16(eh + 0x3c);
	uint32_t shstrndx = elf_rd16(eh + 0x3e);
	const struct elf_section *shstr;

	if (shoff == 0)
		return failf(err, errsize, "no section headers");
	if (shentsize != SHDR_SIZE)
		return failf(err, errsize, "bad section header size %u", shentsize);
	if (!in_bounds(shoff, SHDR_SIZE, ef->size))
		return failf(err, errsize,
			     "section headers at 0x%llx are past the end of the file",
			     (unsigned long long)shoff);
	/* Extended numbering: counts stored in section header 0. */
	if (shnum == 0)
		shnum = elf_rd64(ef->data + shoff + 0x20);
	if (shstrndx == ELF_SHN_XINDEX)
		shstrndx = elf_rd32(ef->data + shoff + 0x28);
	if (shnum == 0 || shnum > (ef->size - shoff) / SHDR_SIZE)
		return failf(err, errsize,
			     "section header table (%llu entries) is past the end of the file",
			     (unsigned long long)shnum);

	ef->sections = calloc(shnum, sizeof(*ef->sections));
	if (!ef->sections)
		return failf(err, errsize, "out of memory");
	ef->nsections = shnum;
	for (uint64_t i = 0; i < shnum; i++) {
		const uint8_t *sh = ef->data + shoff + i * SHDR_SIZE;
		struct elf_section *s = &ef->sections[i];

		s->name = "";
		s->type = elf_rd32(sh + 0x04);
		s->flags = elf_rd64(sh + 0x08);
		s->addr = elf_rd64(sh + 0x10);
		s->offset = elf_rd64(sh + 0x18);
		s->size = elf_rd64(sh + 0x20);
		s->link = elf_rd32(sh + 0x28);
		s->info = elf_rd32(sh + 0x2c);
		s->entsize = elf_rd64(sh + 0x38);
		if (i == 0 || s->type == ELF_SHT_NOBITS || s->size == 0)
			continue;
		if (!in_bounds(s->offset, s->size, ef->size))
			return failf(err, errsize,
				     "section %llu extends past the end of the file (truncated?)",
				     (unsigned long long)i);
		s->data = ef->data + s->offset;
	}

	shstr = shstrndx < shnum ? &ef->sections[shstrndx] : NULL;
	if (shstr && shstr->type != ELF_SHT_STRTAB)
		shstr = NULL;
	for (uint64_t i = 0; i < shnum; i++) {
		const uint8_t *sh = ef->data + shoff + i * SHDR_SIZE;

		ef->sections[i].name = string_at(shstr, elf_rd32(sh));
	}
	return 0;
}

static int read_symbols(struct elf_file *ef, char *err, size_t errsize)
{
	const struct elf_section *symtab = NULL, *strtab, *xindex = NULL;
	size_t symtab_index = 0;
	uint64_t n;

	for (size_t i = 1; i < ef->nsections; i++) {
		if (ef->sections[i].type == ELF_SHT_SYMTAB) {
			symtab = &ef->sections[i];
			symtab_index = i;
			break;
		}
	}
	if (!symtab)
		return 0; /* stripped: no symbols */
	if (symtab->entsize != SYM_SIZE)
		return failf(err, errsize, "bad symbol table entry size %llu",
			     (unsigned long long)symtab->entsize);
	if (symtab->link >= ef->nsections ||
	    ef->sections[symtab->link].type != ELF_SHT_STRTAB)
		return failf(err, errsize,
			     "symbol table links to section %u, not a string table",
			     symtab->link);
	strtab = &ef->sections[symtab->link];
	for (size_t i = 1; i < ef->nsections; i++) {
		const struct elf_section *s = &ef->sections[i];

		if (s->type == ELF_SHT_SYMTAB_SHNDX && s->link == symtab_index)
			xindex = s;
	}

	n = symtab->size / SYM_SIZE;
	if (n == 0)
		return 0;
	ef->symbols = calloc(n, sizeof(*ef->symbols));
	if (!ef->symbols)
		return failf(err, errsize, "out of memory");
	ef->nsymbols = n;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *p = symtab->data + i * SYM_SIZE;
		struct elf_symbol *sym = &ef->symbols[i];

		sym->name = string_at(strtab, elf_rd32(p));
		sym->type = p[4] & 0xf;
		sym->bind = p[4] >> 4;
		sym->shndx = elf_rd16(p + 6);
		sym->value = elf_rd64(p + 8);
		sym->size = elf_rd64(p + 16);
		if (sym->shndx == ELF_SHN_XINDEX) {
			if (xindex && xindex->data && (i + 1) * 4 <= xindex->size)
				sym->shndx = elf_rd32(xindex->data + i * 4);
			else
				sym->shndx = ELF_SHN_UNDEF;
		}
	}
	return 0;
}

static void free_tables(struct elf_file *ef)
{
	free(ef->sections);
	free(ef->symbols);
	ef->sections = NULL;
	ef->symbols = NULL;
	ef->nsections = ef->nsymbols = 0;
}

int elf_parse(struct elf_file *ef, const uint8_t *data, size_t size,
	      char *err, size_t errsize)
{
	static const uint8_t magic[4] = { 0x7f, 'E', 'L', 'F' };
	const char *name;

	memset(ef, 0, sizeof(*ef));
	ef->data = data;
	ef->size = size;
	if (size < 4 || memcmp(data, magic, 4) != 0)
		return failf(err, errsize, "not an ELF file");
	if (size < EHDR_SIZE)
		return failf(err, errsize, "truncated ELF header (%zu bytes)", size);
	if (data[4] != 2)
		return failf(err, errsize,
			     "not a 64-bit ELF file (class %u)", data[4]);
	if (data[5] != 1)
		return failf(err, errsize,
			     "not a little-endian ELF file (data encoding %u)",
			     data[5]);
	ef->type = elf_rd16(data + 0x10);
	ef->machine = elf_rd16(data + 0x12);
	if (ef->machine != ELF_EM_X86_64 && ef->machine != ELF_EM_AARCH64 &&
	    ef->machine != ELF_EM_RISCV) {
		name = elf_machine_name(ef->machine);
		snprintf(err, errsize,
			 "unsupported machine %u%s%s%s (need x86_64, aarch64 or riscv64)",
			 ef->machine, name ? " (" : "", name ? name : "",
			 name ? ")" : "");
		return -1;
	}
	if (ef->type != ELF_ET_REL && ef->type != ELF_ET_EXEC &&
	    ef->type != ELF_ET_DYN)
		return failf(err, errsize,
			     "unsupported ELF type %u (need ET_REL, ET_EXEC or ET_DYN)",
			     ef->type);
	if (read_sections(ef, err, errsize) || read_symbols(ef, err, errsize)) {
		free_tables(ef);
		return -1;
	}
	return 0;
}

int elf_open(struct elf_file *ef, const char *path, char *err, size_t errsize)
{
	struct stat st;
	void *map;
	int fd = open(path, O_RDONLY);

	memset(ef, 0, sizeof(*ef));
	if (fd < 0) {
		snprintf(err, errsize, "%s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errsize, "not a regular file");
		close(fd);
		return -1;
	}
	if (st.st_size == 0) {
		snprintf(err, errsize, "empty file");
		close(fd);
		return -1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, errsize, "mmap: %s", strerror(errno));
		return -1;
	}
	if (elf_parse(ef, map, (size_t)st.st_size, err, errsize) != 0) {
		munmap(map, (size_t)st.st_size);
		memset(ef, 0, sizeof(*ef));
		return -1;
	}
	ef->mapped = 1;
	return 0;
}

void elf_close(struct elf_file *ef)
{
	free_tables(ef);
	if (ef->mapped && ef->data)
		munmap((void *)ef->data, ef->size);
	memset(ef, 0, sizeof(*ef));
}

size_t elf_rela_count(const struct elf_section *sec)
{
	if (sec->type != ELF_SHT_RELA || !sec->data || sec->entsize != RELA_SIZE)
		return 0;
	return sec->size / RELA_SIZE;
}

void elf_rela_get(const struct elf_section *sec, size_t i, struct elf_rela *r)
{
	const uint8_t *p = sec->data + i * RELA_SIZE;
	uint64_t info = elf_rd64(p + 8);

	r->offset = elf_rd64(p);
	r->type = (uint32_t)info;
	r->sym = (uint32_t)(info >> 32);
	r->addend = (int64_t)elf_rd64(p + 16);
}
