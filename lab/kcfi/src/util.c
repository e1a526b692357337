#include "util.h"

#include <ctype.h>
#include <stdarg.h>
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
