/* Printing scan results: for people (text) and for scripts (JSON). */
#ifndef KCFI_REPORT_H
#define KCFI_REPORT_H

#include <stdio.h>

#include "scan.h"

/*
 * A location as people read it: "0xffffffff81234560" in a linked image,
 * ".text+0x1c" in a relocatable file.
 */
void kcfi_format_loc(const struct kcfi_scan *s, uint32_t sec, uint64_t off,
		     char *buf, size_t size);

/* "rax" / "x2" */
const char *kcfi_reg_name(const struct kcfi_scan *s, int reg);

void kcfi_print_text(FILE *f, const struct kcfi_scan *s, const char *path);
void kcfi_print_json(FILE *f, const struct kcfi_scan *s, const char *path);

#endif
