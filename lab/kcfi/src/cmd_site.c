/*
 * kcfi site IMAGE WHERE: describe one check site and the functions whose
 * type id it accepts.  WHERE is an address, SYMBOL+OFF (as in a kernel
 * "CFI failure at foo+0x1c/0x40" report), SECTION+OFF, or SYMBOL alone
 * for every site inside that function.
 */
#include "commands.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "elf.h"
#include "report.h"
#include "index.h"
#include "scan.h"
#include "util.h"

static const char usage[] =
	"usage: kcfi site IMAGE ADDRESS|SYMBOL+OFFSET|SECTION+OFFSET|SYMBOL [--json] [--types]\n"
	"  Show the KCFI check site at ADDRESS (hex; in a .o/.ko an offset in\n"
	"  its code section) or SYMBOL+OFFSET (\"/size\" suffix allowed), its\n"
	"  expected type id and the functions with that id.  SYMBOL alone lists\n"
	"  every check site inside that function.  --json prints the same, and\n"
	"  where the check starts and how long it is, for scripts.  --types\n"
	"  names the expected type and each function by its prototype, read\n"
	"  from the image's DWARF (as kcfi scan --types).\n";

static int site_covers(const struct kcfi_site *st, uint32_t sec, uint64_t off)
{
	return st->sec == sec && off >= st->off && off < st->off + st->len;
}

static size_t printed; /* sites printed so far */
static int json;      /* --json */

/* With types: the prototype the check expects, as DWARF gives it to the
 * functions of that id (NULL when none of them has one). */
static const char *expected_proto(const struct kcfi_scan *s, const size_t *fns, size_t n)
{
	for (size_t i = 0; s->has_types && i < n; i++)
		if (s->protos[fns[i]] && s->type_verdict[fns[i]] != KCFI_TYPE_DISAGREE)
			return s->protos[fns[i]];
	return NULL;
}

static void print_site_json(const struct kcfi_scan *s, const struct kcfi_site *st)
{
	size_t n;
	const size_t *fns = kcfi_funcs_with_id(s, st->id, &n);

	printf("%s\n    {", printed++ ? "," : "");
	kcfi_json_site_fields(stdout, s, st);
	if (s->has_types) {
		const char *p = expected_proto(s, fns, n);

		printf(", \"expected_prototype\": ");
		if (p)
			kcfi_json_string(stdout, p);
		else
			printf("null");
	}
	printf(", \"callees\": [");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? ", " : "");
		kcfi_json_string(stdout, s->funcs[fns[i]].name);
	}
	printf("]}");
}

static void print_site(const struct kcfi_scan *s, const struct kcfi_site *st)
{
	const struct elf_file *ef = s->elf;
	char loc[96], trap[32];
	size_t n;
	const size_t *fns;

	if (json) {
		print_site_json(s, st);
		return;
	}
	fns = kcfi_funcs_with_id(s, st->id, &n);
	if (printed++)
		putchar('\n');
	kcfi_format_loc(s, st->sec, st->trap, loc, sizeof(loc));
	printf("check site: trap at %s", loc);
	if (st->func)
		printf(" (%s+0x%" PRIx64 ")", st->func, st->func_off);
	printf("\n  expected type id: 0x%08" PRIx32 "\n", st->id);
	if (s->has_types) {
		const char *p = expected_proto(s, fns, n);

		printf("  expected type:    %s\n", p ? p : "unknown: no function of this id here");
	}
	printf("  target register:  %s (the callee's id is read from %s%+" PRId32 ")\n",
	       kcfi_reg_name(s, st->target_reg), kcfi_reg_name(s, st->target_reg),
	       st->disp);
	if (s->arch->site_fields) {
		struct kcfi_fields out = kcfi_text_fields(stdout);

		s->arch->site_fields(&out, st);
	}
	printf("  trap:             %s", s->arch->trap_name(st, trap, sizeof(trap)));
	if (s->arch->lists_traps)
		printf(", %s", st->in_traps < 0 ? "no .kcfi_traps section in this image" :
		       st->in_traps ? "listed in .kcfi_traps" : "NOT listed in .kcfi_traps");
	putchar('\n');
	printf("  may call %zu function%s with type id 0x%08" PRIx32 "%s:\n", n,
	       n == 1 ? "" : "s", st->id,
	       ef->type == ELF_ET_REL ? " in this object (others may be linked in)" : "");
	for (size_t i = 0; i < n; i++) {
		const struct kcfi_func *fn = &s->funcs[fns[i]];

		kcfi_format_loc(s, fn->sec, fn->off, loc, sizeof(loc));
		printf("    %s  %s", loc, fn->name);
		if (s->has_types && s->protos[fns[i]])
			printf("  %s", s->protos[fns[i]]);
		if (s->has_arity)
			printf("  (arity %u: %s)", fn->preamble_reg,
			       kcfi_arity_words(fn->preamble_reg));
		putchar('\n');
	}
	for (size_t i = 0; i < s->ntypeids; i++)
		if (s->typeids[i].defined && s->typeids[i].id == st->id)
			printf("  same id: %s\n", s->typeids[i].name);
}

/* "name+0x1c/0x40" -> name, 0x1c; returns 0 if there is no "+". */
static int split_offset(const char *arg, char *name, size_t size, uint64_t *off,
			int *bad)
{
	const char *plus = strrchr(arg, '+');
	char num[40];
	size_t len;
	const char *slash;

	*bad = 0;
	if (!plus)
		return 0;
	len = (size_t)(plus - arg);
	if (len == 0 || len >= size) {
		*bad = 1;
		return 1;
	}
	memcpy(name, arg, len);
	name[len] = '\0';
	slash = strchr(plus + 1, '/');
	len = slash ? (size_t)(slash - plus - 1) : strlen(plus + 1);
	if (len >= sizeof(num)) {
		*bad = 1;
		return 1;
	}
	memcpy(num, plus + 1, len);
	num[len] = '\0';
	if (kcfi_parse_hex(num, off))
		*bad = 1;
	return 1;
}

/* Sites covering (sec, off) among all; prints them; returns how many. */
static size_t show_at(const struct kcfi_scan *s, uint32_t sec, uint64_t off)
{
	size_t found = 0;

	for (size_t i = 0; i < s->nsites; i++) {
		if (site_covers(&s->sites[i], sec, off)) {
			found++;
			print_site(s, &s->sites[i]);
		}
	}
	return found;
}

static int lookup(const struct kcfi_scan *s, const char *where)
{
	const struct elf_file *ef = s->elf;
	char name[256];
	uint64_t off, addr;
	int bad;
	size_t found = 0, candidates = 0;

	if (split_offset(where, name, sizeof(name), &off, &bad)) {
		if (bad) {
			kcfi_err("site", "bad location '%s' (want SYMBOL+0xOFFSET)", where);
			return EXIT_INPUT;
		}
		/* SECTION+OFF */
		for (uint32_t i = 1; i < ef->nsections; i++) {
			if (kcfi_is_code(ef, i) && strcmp(ef->sections[i].name, name) == 0) {
				candidates++;
				found += show_at(s, i, off);
			}
		}
		/* SYMBOL+OFF: every symbol of that name (local names repeat). */
		for (size_t i = 0; i < s->nfsyms; i++) {
			const struct kcfi_fsym *f = &s->fsyms[i];

			if (strcmp(f->name, name) == 0) {
				candidates++;
				found += show_at(s, f->sec, f->off + off);
			}
		}
		if (!candidates) {
			kcfi_err("site", "no function or code section named '%s'", name);
			return EXIT_INPUT;
		}
	} else if (kcfi_parse_hex(where, &addr) == 0) {
		for (uint32_t i = 1; i < ef->nsections; i++) {
			const struct elf_section *sec = &ef->sections[i];
			uint64_t base = ef->type == ELF_ET_REL ? 0 : sec->addr;

			if (kcfi_is_code(ef, i) && addr >= base && addr - base < sec->size)
				found += show_at(s, i, addr - base);
		}
	} else {
		/* SYMBOL: all sites inside the function(s). */
		for (size_t i = 0; i < s->nsites; i++) {
			const struct kcfi_site *st = &s->sites[i];

			if (st->func && strcmp(st->func, where) == 0) {
				found++;
				print_site(s, st);
			}
		}
		for (size_t i = 0; i < s->nfsyms && !found; i++)
			if (strcmp(s->fsyms[i].name, where) == 0)
				candidates++;
		if (!found && candidates) {
			kcfi_err("site", "function '%s' contains no KCFI check site", where);
			return EXIT_INPUT;
		}
		if (!found) {
			kcfi_err("site", "no function named '%s' (and not a hex address)",
				 where);
			return EXIT_INPUT;
		}
	}
	if (!found) {
		kcfi_err("site", "no KCFI check site at %s", where);
		return EXIT_INPUT;
	}
	return 0;
}

int cmd_site(int argc, char **argv)
{
	const char *operands[2];
	int noperands = 0, rc, types = 0;
	char err[512];
	struct elf_file ef;
	struct kcfi_scan s;

	for (int i = 1; i < argc; i++) {
		if (kcfi_is_help(argv[i])) {
			fputs(usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
			continue;
		}
		if (strcmp(argv[i], "--types") == 0) {
			types = 1;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			return kcfi_usage_err("site", usage, "unknown option '%s'", argv[i]);
		if (noperands == 2)
			return kcfi_usage_err("site", usage, "too many arguments");
		operands[noperands++] = argv[i];
	}
	if (noperands != 2)
		return kcfi_usage_err("site", usage, "need IMAGE and a location");
	if (kcfi_scan_file("site", operands[0], &ef, &s))
		return EXIT_INPUT;
	if (types && kcfi_scan_types(&s, operands[0], err, sizeof(err)) != 0) {
		kcfi_err("site", "%s", err);
		kcfi_scan_free(&s);
		elf_close(&ef);
		return EXIT_INPUT;
	}
	if (json) {
		printf("{\n  \"file\": ");
		kcfi_json_string(stdout, operands[0]);
		printf(",\n  \"machine\": \"%s\",\n  \"sites\": [", elf_machine_name(ef.machine));
	}
	rc = lookup(&s, operands[1]);
	if (json)
		printf("\n  ]\n}\n");
	kcfi_scan_free(&s);
	elf_close(&ef);
	return rc;
}
