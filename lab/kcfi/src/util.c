#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void vreport(const char *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "kcfi: %s%s", cmd ? cmd : "", cmd ? ": " : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void kcfi_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cmd, fmt, ap);
	va_end(ap);
}

int kcfi_usage_err(const char *cmd, const char *usage, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cmd, fmt, ap);
	va_end(ap);
	fputs(usage, stderr);
	return EXIT_USAGE;
}

int kcfi_is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int kcfi_parse_hex(const char *s, uint64_t *value)
{
	uint64_t v = 0;
	size_t digits = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++, digits++) {
		int d;

		if (!isxdigit((unsigned char)*s) || digits == 16)
			return -1;
		d = isdigit((unsigned char)*s) ? *s - '0' :
		    tolower((unsigned char)*s) - 'a' + 10;
		v = v << 4 | (uint64_t)d;
	}
	if (digits == 0)
		return -1;
	*value = v;
	return 0;
}

void kcfi_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c); /* bytes as code points: lossless enough */
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Hex bytes: "41 ba 5b", "41ba5b", "0x41,0xba"; '<' and '>' are ignored. */
int kcfi_parse_bytes(const char *cmd, int argc, char **argv, uint8_t *out, size_t max,
		     size_t *n)
{
	*n = 0;
	for (int i = 0; i < argc; i++) {
		const char *p = argv[i];

		while (*p) {
			char tok[64];
			size_t len = 0, k;

			while (*p && (isspace((unsigned char)*p) || *p == ',' || *p == '<' ||
				      *p == '>'))
				p++;
			if (!*p)
				break;
			while (*p && !isspace((unsigned char)*p) && *p != ',' && *p != '<' &&
			       *p != '>') {
				if (len + 1 < sizeof(tok))
					tok[len] = *p;
				len++;
				p++;
			}
			if (len >= sizeof(tok)) {
				kcfi_err(cmd, "bad hex byte string (token too long)");
				return -1;
			}
			tok[len] = '\0';
			if (tok[len - 1] == ':')
				continue; /* a label such as "Code:" */
			k = (tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X')) ? 2 : 0;
			if (len == k || (len - k) % 2) {
				kcfi_err(cmd, "bad hex byte '%s'", tok);
				return -1;
			}
			for (; k < len; k += 2) {
				char pair[3] = { tok[k], tok[k + 1], 0 };
				uint64_t v;

				if (!isxdigit((unsigned char)pair[0]) ||
				    !isxdigit((unsigned char)pair[1]) ||
				    kcfi_parse_hex(pair, &v)) {
					kcfi_err(cmd, "bad hex byte '%s'", tok);
					return -1;
				}
				if (*n == max) {
					kcfi_err(cmd, "more than %zu bytes", max);
					return -1;
				}
				out[(*n)++] = (uint8_t)v;
			}
		}
	}
	if (*n == 0) {
		kcfi_err(cmd, "no bytes given");
		return -1;
	}
	return 0;
}

/* The byte two hex digits spell. */
static uint8_t hex_byte(const char *t)
{
	char pair[3] = { t[0], t[1], 0 };

	return (uint8_t)strtoul(pair, NULL, 16);
}

/* Is TOK (LEN characters) four hex digits? */
static int hex4(const char *tok, size_t len)
{
	if (len != 4)
		return 0;
	for (size_t i = 0; i < 4; i++)
		if (!isxdigit((unsigned char)tok[i]))
			return 0;
	return 1;
}

/*
 * riscv64's oops "Code:" line, as the kernel's dump_instr() prints it:
 * 16-bit values, the one at epc in parentheses ("1141 e406 (9002) 8782").
 * Such a line is told from bytes by its label or its parentheses, and
 * by every other token being 4 hex digits.
 */
int kcfi_parse_halfwords(int argc, char **argv, uint8_t *out, size_t max, size_t *n,
			 size_t *mark)
{
	int marked = 0;

	*n = 0;
	*mark = (size_t)-1;
	for (int i = 0; i < argc; i++) {
		const char *p = argv[i];

		while (*p) {
			const char *tok;
			size_t len;
			int paren = 0;

			while (*p && (isspace((unsigned char)*p) || *p == ','))
				p++;
			if (!*p)
				break;
			tok = p;
			while (*p && !isspace((unsigned char)*p) && *p != ',')
				p++;
			len = (size_t)(p - tok);
			if (tok[len - 1] == ':') {
				marked = 1; /* a label such as "Code:" */
				continue;
			}
			if (len == 6 && tok[0] == '(' && tok[5] == ')') {
				paren = 1;
				tok++;
				len -= 2;
			}
			if (!hex4(tok, len) || *n + 2 > max)
				return 0;
			if (paren) {
				marked = 1;
				*mark = *n;
			}
			/* Little-endian: the low byte, the last two digits, first. */
			out[(*n)++] = hex_byte(tok + 2);
			out[(*n)++] = hex_byte(tok);
		}
	}
	return marked && *n > 0;
}
