/* Small helpers shared by the commands: errors, hex numbers, JSON strings. */
#ifndef KCFI_UTIL_H
#define KCFI_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXIT_INPUT 1 /* bad input: unparsable prototype, malformed ELF, ... */
#define EXIT_USAGE 2 /* bad command line */

/* Print "kcfi: CMD: message" to stderr. */
void kcfi_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "kcfi: CMD: message" and then USAGE to stderr; returns EXIT_USAGE. */
int kcfi_usage_err(const char *cmd, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Is ARG "-h" or "--help"? */
int kcfi_is_help(const char *arg);

/* Parse a hexadecimal number with optional 0x prefix; 0 on success. */
int kcfi_parse_hex(const char *s, uint64_t *value);

/* Hex bytes from ARGV: "41 ba 5b", "41ba5b", "0x41,0xba"; '<', '>' and
 * labels ending in ':' are ignored.  At most MAX into OUT, *N of them;
 * 0, or -1 after a "kcfi: CMD: ..." error. */
int kcfi_parse_bytes(const char *cmd, int argc, char **argv, uint8_t *out, size_t max,
		     size_t *n);

/* A riscv64 oops "Code:" line ("Code: 1141 e406 (9002) 8782": 16-bit
 * values, epc's in parentheses) into bytes in memory order: 1 with *N of
 * them and *MARK, the offset of epc's (or SIZE_MAX); 0 when the words
 * are not such a line (parse them as bytes then). */
int kcfi_parse_halfwords(int argc, char **argv, uint8_t *out, size_t max, size_t *n,
			 size_t *mark);

/* Write S as a JSON string literal. */
void kcfi_json_string(FILE *f, const char *s);

#endif
