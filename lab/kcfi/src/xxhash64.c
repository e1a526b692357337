/*
 * xxHash64, written from the public algorithm description
 * (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md).
 * Implemented here so the tool needs nothing beyond libc.
 */
#include "xxhash64.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static uint64_t rotl(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t read64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t read32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t round64(uint64_t acc, uint64_t input)
{
	acc += input * P2;
	acc = rotl(acc, 31);
	return acc * P1;
}

static uint64_t merge(uint64_t acc, uint64_t val)
{
	acc ^= round64(0, val);
	return acc * P1 + P4;
}

uint64_t xxhash64(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	const unsigned char *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2;
		uint64_t v3 = seed, v4 = seed - P1;

		do {
			v1 = round64(v1, read64(p));
			v2 = round64(v2, read64(p + 8));
			v3 = round64(v3, read64(p + 16));
			v4 = round64(v4, read64(p + 24));
			p += 32;
		} while ((size_t)(end - p) >= 32);
		h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
		h = merge(h, v1);
		h = merge(h, v2);
		h = merge(h, v3);
		h = merge(h, v4);
	} else {
		h = seed + P5;
	}
	h += (uint64_t)len;

	while ((size_t)(end - p) >= 8) {
		h ^= round64(0, read64(p));
		h = rotl(h, 27) * P1 + P4;
		p += 8;
	}
	if ((size_t)(end - p) >= 4) {
		h ^= (uint64_t)read32(p) * P1;
		h = rotl(h, 23) * P2 + P3;
		p += 4;
	}
	while (p < end) {
		h ^= *p++ * P5;
		h = rotl(h, 11) * P1;
	}
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}
