/* Printing scan results: for people (text) and for scripts (JSON). */
#ifndef KCFI_REPORT_H
#define KCFI_REPORT_H

#include <stdio.h>

#include "arch.h"
#include "scan.h"

/*
 * A location as people read it: "0xffffffff81234560" in a linked image,
 * ".text+0x1c" in a relocatable file.
 */
void kcfi_format_loc(const struct kcfi_scan *s, uint32_t sec, uint64_t off,
		     char *buf, size_t size);

/* "KEY": {"section": ..., "offset": ..., "address": "0x..."} */
void kcfi_json_loc(FILE *f, const struct kcfi_scan *s, const char *key,
		   uint32_t sec, uint64_t off);

/* A function's JSON fields, as kcfi scan --json and kcfi func --json
 * print them (without the braces). */
void kcfi_json_func_fields(FILE *f, const struct kcfi_scan *s, const struct kcfi_func *fn);

/* A check site's JSON fields, as kcfi scan --json and kcfi site --json
 * print them (without the braces). */
void kcfi_json_site_fields(FILE *f, const struct kcfi_scan *s, const struct kcfi_site *st);

/* Bytes from a function's preamble to its entry (x86_64: the mov and
 * the nops after it; arm64: the id word and any padding after it). */
uint32_t kcfi_preamble_bytes(const struct kcfi_scan *s, const struct kcfi_func *fn);
/* An arity (-fsanitize-kcfi-arity, 0-7) in words: "2 arguments in registers". */
const char *kcfi_arity_words(unsigned int arity);

/* "rax" / "x2" */
const char *kcfi_reg_name(const struct kcfi_scan *s, int reg);

/* The printers an arch's site_fields hook writes to (arch.h): JSON fields
 * (", \"KEY\": VALUE"), or kcfi site's text lines, to F. */
struct kcfi_fields kcfi_json_fields(FILE *f);
struct kcfi_fields kcfi_text_fields(FILE *f);

void kcfi_print_text(FILE *f, const struct kcfi_scan *s, const char *path);
void kcfi_print_json(FILE *f, const struct kcfi_scan *s, const char *path);

#endif
