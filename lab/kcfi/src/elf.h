/*
 * A small, bounds-checked reader for ELF64 little-endian files (x86_64,
 * AArch64 and RISC-V).  Every section's contents and every string is checked to lie
 * inside the file before it is handed out.
 */
#ifndef KCFI_ELF_H
#define KCFI_ELF_H

#include <stddef.h>
#include <stdint.h>

enum {
	ELF_ET_REL = 1, ELF_ET_EXEC = 2, ELF_ET_DYN = 3,
	ELF_EM_X86_64 = 62, ELF_EM_AARCH64 = 183, ELF_EM_RISCV = 243,
	ELF_SHT_PROGBITS = 1, ELF_SHT_SYMTAB = 2, ELF_SHT_STRTAB = 3,
	ELF_SHT_RELA = 4, ELF_SHT_NOBITS = 8, ELF_SHT_SYMTAB_SHNDX = 18,
	ELF_SHF_ALLOC = 0x2, ELF_SHF_EXECINSTR = 0x4,
	ELF_SHN_UNDEF = 0, ELF_SHN_ABS = 0xfff1, ELF_SHN_COMMON = 0xfff2,
	ELF_SHN_XINDEX = 0xffff,
	ELF_STT_NOTYPE = 0, ELF_STT_OBJECT = 1, ELF_STT_FUNC = 2,
	ELF_STT_SECTION = 3,
	ELF_STB_LOCAL = 0, ELF_STB_GLOBAL = 1, ELF_STB_WEAK = 2,
};

struct elf_section {
	const char *name;      /* "" when the name is unreadable */
	uint32_t type;
	uint64_t flags, addr, offset, size, entsize;
	uint32_t link, info;
	const uint8_t *data;   /* NULL for SHT_NOBITS and empty sections */
};

struct elf_symbol {
	const char *name;      /* "" when the name is unreadable */
	uint64_t value, size;
	uint32_t shndx;        /* extended indexes resolved */
	uint8_t type, bind;
};

struct elf_rela {
	uint64_t offset;
	uint32_t type;
	uint32_t sym;
	int64_t addend;
};

struct elf_file {
	const uint8_t *data;
	size_t size;
	int mapped;            /* data is an mmap of size bytes */
	uint16_t type, machine;
	struct elf_section *sections;
	size_t nsections;
	struct elf_symbol *symbols; /* index 0 is the null symbol */
	size_t nsymbols;
};

/* Returns 0, or -1 with a one-line reason in ERR. */
int elf_open(struct elf_file *ef, const char *path, char *err, size_t errsize);
/* Parse a buffer the caller keeps alive until elf_close(). */
int elf_parse(struct elf_file *ef, const uint8_t *data, size_t size,
	      char *err, size_t errsize);
void elf_close(struct elf_file *ef);

const char *elf_machine_name(uint16_t machine);

/* Number of entries of a SHT_RELA section; elf_rela_get() reads one. */
size_t elf_rela_count(const struct elf_section *sec);
void elf_rela_get(const struct elf_section *sec, size_t i, struct elf_rela *r);

/* Little-endian loads from unaligned memory. */
static inline uint16_t elf_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t elf_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t elf_rd64(const uint8_t *p)
{
	return (uint64_t)elf_rd32(p) | (uint64_t)elf_rd32(p + 4) << 32;
}

#endif
