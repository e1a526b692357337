/*
 * Deterministic bad inputs for the malformed-ELF tests.
 *   mutate random OUT SIZE SEED         SIZE random bytes
 *   mutate elf IN OUTDIR COUNT SEED     COUNT corrupted copies of IN,
 *                                       written as OUTDIR/m0000 ...
 * Mutations favour the ELF header and the section header table, where a
 * reader's bounds checks matter most.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long state;

static unsigned long long rnd64(void)
{
	state = state * 6364136223846793005ULL + 1442695040888963407ULL;
	return state ^ (state >> 29);
}

static size_t rnd(size_t n)
{
	return n ? (size_t)(rnd64() >> 11) % n : 0;
}

static int write_file(const char *path, const unsigned char *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		return 1;
	}
	return 0;
}

static unsigned char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p = NULL;
	long len;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || !(p = malloc((size_t)len)) ||
	    fread(p, 1, (size_t)len, f) != (size_t)len) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

static unsigned long long interesting(void)
{
	static const unsigned long long v[] = {
		0, 1, 2, 3, 0x40, 0x7f, 0x80, 0xff, 0xffff, 0x10000,
		0x7fffffff, 0xffffffff, 0x100000000ULL, 0x7fffffffffffffffULL,
		0xffffffffffffffffULL, 0xfffffffffffffff0ULL,
	};

	return rnd(3) == 0 ? rnd64() : v[rnd(sizeof(v) / sizeof(v[0]))];
}

static void mutate(unsigned char *p, size_t n)
{
	size_t shoff = 0, shnum = 0, pos, width;
	unsigned long long v;

	if (n >= 64) {
		for (int i = 7; i >= 0; i--)
			shoff = shoff << 8 | p[0x28 + i];
		shnum = (size_t)(p[0x3c] | p[0x3d] << 8);
	}
	switch (rnd(4)) {
	case 0: /* ELF header */
		pos = rnd(n < 64 ? n : 64);
		break;
	case 1: /* section header table */
		if (shoff < n && shnum) {
			pos = shoff + rnd(shnum * 64);
			break;
		}
		/* fall through */
	default:
		pos = rnd(n);
		break;
	}
	width = (size_t)1 << rnd(4); /* 1, 2, 4 or 8 bytes */
	v = rnd(4) == 0 ? rnd64() : interesting();
	for (size_t i = 0; i < width && pos + i < n; i++)
		p[pos + i] = (unsigned char)(v >> (8 * i));
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "random") == 0) {
		size_t n = strtoul(argv[3], NULL, 0);
		unsigned char *p = malloc(n ? n : 1);

		state = strtoull(argv[4], NULL, 0);
		for (size_t i = 0; i < n; i++)
			p[i] = (unsigned char)rnd64();
		return write_file(argv[2], p, n);
	}
	if (argc == 6 && strcmp(argv[1], "elf") == 0) {
		size_t n, count = strtoul(argv[4], NULL, 0);
		unsigned char *orig = read_file(argv[2], &n);
		unsigned char *p = malloc(n);
		char path[4096];

		state = strtoull(argv[5], NULL, 0);
		for (size_t k = 0; k < count; k++) {
			size_t edits = 1 + rnd(4);

			memcpy(p, orig, n);
			for (size_t e = 0; e < edits; e++)
				mutate(p, n);
			snprintf(path, sizeof(path), "%s/m%04zu", argv[3], k);
			if (write_file(path, p, n))
				return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: mutate random OUT SIZE SEED\n"
			"       mutate elf IN OUTDIR COUNT SEED\n");
	return 2;
}
