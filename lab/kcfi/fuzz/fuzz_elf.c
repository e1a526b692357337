/* libFuzzer target: the ELF reader, the scanner, types from DWARF (libdw
 * over our input) and both report formats. */
#include <stdint.h>
#include <stdio.h>

#include "elf.h"
#include "index.h"
#include "report.h"
#include "scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct elf_file ef;
	struct kcfi_scan s;
	char err[256];

	if (!sink && !(sink = fopen("/dev/null", "w")))
		return 0;
	if (elf_parse(&ef, data, size, err, sizeof(err)) != 0)
		return 0;
	if (kcfi_scan_image(&ef, &s, err, sizeof(err)) == 0) {
		kcfi_scan_types(&s, "fuzz", err, sizeof(err));
		for (size_t i = 0; i < s.nsites; i++) {
			size_t n;

			kcfi_funcs_with_id(&s, s.sites[i].id, &n);
			kcfi_containing(&s, s.sites[i].sec, s.sites[i].off);
		}
		kcfi_print_text(sink, &s, "fuzz");
		kcfi_print_json(sink, &s, "fuzz");
		kcfi_scan_free(&s);
	}
	elf_close(&ef);
	return 0;
}
