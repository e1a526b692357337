#include "report.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "arity.h"
#include "index.h"
#include "util.h"

#define TEXT_CLASSES 20  /* type classes listed in the text summary */
#define TEXT_NAMES 6     /* names listed per class */

void kcfi_format_loc(const struct kcfi_scan *s, uint32_t sec, uint64_t off,
		     char *buf, size_t size)
{
	const struct elf_file *ef = s->elf;

	if (ef->type == ELF_ET_REL)
		snprintf(buf, size, "%s+0x%" PRIx64, ef->sections[sec].name, off);
	else
		snprintf(buf, size, "0x%016" PRIx64, ef->sections[sec].addr + off);
}

static uint64_t address(const struct kcfi_scan *s, uint32_t sec, uint64_t off)
{
	return s->elf->sections[sec].addr + off;
}

const char *kcfi_reg_name(const struct kcfi_scan *s, int reg)
{
	return s->arch->reg_name(reg);
}

/* BY[k]: how many functions have arity k. */
static void arity_counts(const struct kcfi_scan *s, size_t by[8])
{
	for (unsigned int k = 0; k < 8; k++)
		by[k] = 0;
	for (size_t i = 0; i < s->nfuncs; i++)
		by[s->funcs[i].preamble_reg & 7]++;
}

static const char *type_name(uint16_t type)
{
	switch (type) {
	case ELF_ET_REL:
		return "relocatable (ET_REL)";
	case ELF_ET_EXEC:
		return "executable (ET_EXEC)";
	default:
		return "shared object (ET_DYN)";
	}
}

static const char *evidence_name(enum kcfi_evidence e)
{
	switch (e) {
	case KCFI_EV_CFI_SYMBOL:
		return "__cfi_ symbol";
	case KCFI_EV_MAPPING:
		return "$d mapping symbol";
	default:
		return "known type id";
	}
}

/* ---- type classes ---- */

struct tclass {
	uint32_t id;
	size_t first; /* index into by_id */
	size_t count;
};

static int cmp_classes(const void *a, const void *b)
{
	const struct tclass *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Classes of functions with equal known ids, largest first. */
static struct tclass *classes(const struct kcfi_scan *s, size_t *n)
{
	struct tclass *v = malloc((s->nknown ? s->nknown : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->nknown; i++) {
		uint32_t id = s->funcs[s->by_id[i]].id;

		if (*n && v[*n - 1].id == id) {
			v[*n - 1].count++;
		} else {
			v[*n].id = id;
			v[*n].first = i;
			v[*n].count = 1;
			(*n)++;
		}
	}
	qsort(v, *n, sizeof(*v), cmp_classes);
	return v;
}

struct counts {
	size_t site_ids;          /* distinct ids at check sites */
	size_t sites_unreachable; /* sites whose id no function here has */
	size_t sites_in_traps;
	size_t sites_stale;       /* riscv64: id added to a stale register */
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static struct counts count_sites(const struct kcfi_scan *s)
{
	struct counts c = { 0 };
	uint32_t *ids = malloc((s->nsites ? s->nsites : 1) * sizeof(*ids));

	for (size_t i = 0; i < s->nsites; i++) {
		size_t n;

		kcfi_funcs_with_id(s, s->sites[i].id, &n);
		if (!n)
			c.sites_unreachable++;
		if (s->sites[i].in_traps == 1)
			c.sites_in_traps++;
		if (s->sites[i].stale_base)
			c.sites_stale++;
		if (ids)
			ids[i] = s->sites[i].id;
	}
	if (ids) {
		qsort(ids, s->nsites, sizeof(*ids), cmp_u32);
		for (size_t i = 0; i < s->nsites; i++)
			if (i == 0 || ids[i] != ids[i - 1])
				c.site_ids++;
		free(ids);
	}
	return c;
}

/* ---- text ---- */

static void text_id(FILE *f, const struct kcfi_func *fn)
{
	if (fn->id_known)
		fprintf(f, "0x%08" PRIx32, fn->id);
	else
		fprintf(f, "%-10s", "?");
}

/* The prototype most of a class's functions have, per DWARF. */
static const char *class_proto(const struct kcfi_scan *s, const struct tclass *c)
{
	for (size_t k = 0; k < c->count; k++) {
		size_t i = s->by_id[c->first + k];

		if (s->protos[i] && s->type_verdict[i] != KCFI_TYPE_DISAGREE)
			return s->protos[i];
	}
	return NULL;
}

/* Index of function FN in s->funcs. */
static size_t func_index(const struct kcfi_scan *s, const struct kcfi_func *fn)
{
	return (size_t)(fn - s->funcs);
}

/* The hash the ids were made with, and how many match each other one. */
static void print_hash_text(FILE *f, const struct kcfi_scan *s)
{
	const char *sep = "";

	fprintf(f, "  hash of the ids:             ");
	if (s->type_hash >= 0) {
		size_t n = s->hash_matches[s->type_hash];

		fprintf(f, "%s (%zu preamble%s match", kcfi_hash_name(s->type_hash), n,
			n == 1 ? "" : "s");
		sep = "; ";
	} else {
		fprintf(f, "unknown (");
	}
	for (int h = 0; h < KCFI_NHASHES; h++) {
		if (h == s->type_hash)
			continue;
		fprintf(f, "%s%s: %zu", sep, kcfi_hash_name(h), s->hash_matches[h]);
		sep = ", ";
	}
	fprintf(f, ")\n");
}

static void print_types_text(FILE *f, const struct kcfi_scan *s)
{
	size_t ok = s->type_counts[KCFI_TYPE_OK] + s->type_counts[KCFI_TYPE_MASKED];
	static const int listed[] = { KCFI_TYPE_DISAGREE, KCFI_TYPE_UNEXPRESSIBLE,
				      KCFI_TYPE_NO_DWARF };

	print_hash_text(f, s);
	fprintf(f, "  types from DWARF:            verified %zu of %zu "
		"(hash of the prototype == the preamble's id", ok, s->nfuncs);
	if (s->type_counts[KCFI_TYPE_MASKED])
		fprintf(f, "; %zu of them ENDBR-masked", s->type_counts[KCFI_TYPE_MASKED]);
	fprintf(f, ")\n");
	for (size_t v = 0; v < 3; v++) {
		size_t n = s->type_counts[listed[v]], shown = 0;

		fprintf(f, "    %s: %zu", kcfi_type_verdict_name(listed[v]), n);
		for (size_t i = 0; i < s->nfuncs && shown < 12; i++) {
			if (s->type_verdict[i] != listed[v])
				continue;
			fprintf(f, "%s%s", shown ? ", " : " (", s->funcs[i].name);
			shown++;
		}
		fprintf(f, "%s\n", !n ? "" : n > shown ? ", ...)" : ")");
	}
}

void kcfi_print_text(FILE *f, const struct kcfi_scan *s, const char *path)
{
	const struct elf_file *ef = s->elf;
	char loc[96];
	size_t nclasses;
	struct tclass *cls = classes(s, &nclasses);
	struct counts c = count_sites(s);
	int width = ef->type == ELF_ET_REL ? 24 : 18;

	fprintf(f, "file: %s\n", path);
	fprintf(f, "machine: %s, %s\n", elf_machine_name(ef->machine),
		type_name(ef->type));
	if (!s->has_symbols)
		fprintf(f, "warning: no symbol table: preambles cannot be found\n");

	fprintf(f, "\nfunctions with a KCFI preamble (%zu):\n", s->nfuncs);
	fprintf(f, "  preambles found by: %s\n", s->arch->preamble_method(s));
	if (s->nfuncs)
		fprintf(f, "  %-*s  %-10s  %s\n", width, "ENTRY", "TYPE ID", "FUNCTION");
	for (size_t i = 0; i < s->nfuncs; i++) {
		const struct kcfi_func *fn = &s->funcs[i];

		kcfi_format_loc(s, fn->sec, fn->off, loc, sizeof(loc));
		fprintf(f, "  %-*s  ", width, loc);
		text_id(f, fn);
		fprintf(f, "  %s", fn->name);
		if (fn->id_sym)
			fprintf(f, "  (id from %s%s)", fn->id_sym,
				fn->id_known ? "" : ", undefined here");
		if (fn->id_off != s->preamble_disp)
			fprintf(f, "  (id at entry-%" PRIu32 ")", fn->id_off);
		if (s->has_arity && s->arity_why && s->arity_why[i] > KCFI_ARITY_SAME)
			fprintf(f, "  (arity %u: %s)", fn->preamble_reg,
				kcfi_arity_why_name(s->arity_why[i]));
		else if (s->has_arity)
			fprintf(f, "  (arity %u)", fn->preamble_reg);
		if (s->has_types)
			fprintf(f, "  %s", s->protos[i] ? s->protos[i] :
				kcfi_type_verdict_name(s->type_verdict[i]));
		if (s->has_types && s->type_verdict[i] == KCFI_TYPE_DISAGREE)
			fprintf(f, "  (DISAGREES with the id)");
		fputc('\n', f);
	}

	fprintf(f, "\ncheck sites (%zu):\n", s->nsites);
	if (s->nsites)
		fprintf(f, "  %-*s  %-10s  %-6s  %-10s  %s\n", width, "TRAP", "TYPE ID",
			"TARGET", "KCFI_TRAPS", "FUNCTION");
	for (size_t i = 0; i < s->nsites; i++) {
		const struct kcfi_site *st = &s->sites[i];
		char fn[160];

		kcfi_format_loc(s, st->sec, st->trap, loc, sizeof(loc));
		if (st->func)
			snprintf(fn, sizeof(fn), "%s+0x%" PRIx64, st->func, st->func_off);
		else
			snprintf(fn, sizeof(fn), "?");
		fprintf(f, "  %-*s  0x%08" PRIx32 "  %-6s  %-10s  %s\n", width, loc,
			st->id, kcfi_reg_name(s, st->target_reg),
			st->in_traps < 0 ? "-" : st->in_traps ? "yes" : "NO", fn);
	}

	fprintf(f, "\n__kcfi_typeid symbols (%zu):\n", s->ntypeids);
	for (size_t i = 0; i < s->ntypeids; i++) {
		if (s->typeids[i].defined)
			fprintf(f, "  0x%08" PRIx32 "  %s\n", s->typeids[i].id,
				s->typeids[i].name);
		else
			fprintf(f, "  %-10s  %s (undefined)\n", "?", s->typeids[i].name);
	}

	fprintf(f, "\nsummary:\n");
	fprintf(f, "  functions with a preamble:   %zu\n", s->nfuncs);
	fprintf(f, "  distinct type ids:           %zu\n", nclasses);
	fprintf(f, "  type id offset:              entry-%" PRIu32 "\n",
		s->preamble_disp);
	if (s->arch->preamble_reg_name && s->has_arity) {
		size_t by[8];

		arity_counts(s, by);
		fprintf(f, "  arity in the preamble:       yes (-fsanitize-kcfi-arity); functions by arity:");
		for (unsigned int k = 0; k < 8; k++)
			fprintf(f, " %u:%zu", k, by[k]);
		fputc('\n', f);
		if (s->arity_why) {
			fprintf(f, "  arity against the prototype: ");
			for (int k = 0; k < KCFI_ARITY_NWHY; k++)
				fprintf(f, "%s%s %zu", k ? ", " : "", kcfi_arity_why_name(k),
					s->arity_why_counts[k]);
			fputc('\n', f);
		}
	} else if (s->arch->preamble_reg_name) {
		fprintf(f, "  arity in the preamble:       no (every preamble moves its id into %s)\n",
			s->arch->preamble_reg_name(0));
	}
	fprintf(f, "  check sites:                 %zu (%zu distinct type ids)\n",
		s->nsites, c.site_ids);
	fprintf(f, "  sites with no function of their type here: %zu\n",
		c.sites_unreachable);
	/* arm64's traps are not listed: the brk immediate marks them. */
	if (s->arch->lists_traps) {
		if (s->has_traps)
			fprintf(f, "  .kcfi_traps:                 %zu entries, %zu sites "
				"listed, %zu entries without a site, %zu unresolved\n",
				s->ntraps, c.sites_in_traps, s->traps_without_site,
				s->traps_unresolved);
		else
			fprintf(f, "  .kcfi_traps:                 not present\n");
	}
	if (s->arch->counts_stale)
		fprintf(f, "  expected id on a stale register (addi without lui): %zu\n",
			c.sites_stale);
	if (s->untyped_checked) {
		fprintf(f, "  address-taken without preamble: %zu\n", s->nuntyped);
		for (size_t i = 0; i < s->nuntyped; i++) {
			kcfi_format_loc(s, s->untyped[i].sec, s->untyped[i].off, loc,
					sizeof(loc));
			fprintf(f, "    %-*s  %s  (referenced from %s)\n", width, loc,
				s->untyped[i].name, s->untyped[i].ref_section);
		}
	} else {
		fprintf(f, "  address-taken without preamble: not checked (needs "
			"relocations: a .o or .ko)\n");
	}
	if (s->has_types)
		print_types_text(f, s);
	if (nclasses) {
		fprintf(f, "  functions per type id (largest first%s):\n",
			nclasses > TEXT_CLASSES ? ", top 20; --json lists all" : "");
		for (size_t i = 0; i < nclasses && i < TEXT_CLASSES; i++) {
			fprintf(f, "    %5zu  0x%08" PRIx32 " ", cls[i].count, cls[i].id);
			if (s->has_types) {
				const char *p = class_proto(s, &cls[i]);

				fprintf(f, " %s:", p ? p : "?");
			}
			for (size_t k = 0; k < cls[i].count && k < TEXT_NAMES; k++)
				fprintf(f, " %s", s->funcs[s->by_id[cls[i].first + k]].name);
			if (cls[i].count > TEXT_NAMES)
				fprintf(f, " ...");
			fputc('\n', f);
		}
	}
	free(cls);
}

const char *kcfi_arity_words(unsigned int arity)
{
	static const char *const words[8] = {
		"no arguments in registers", "1 argument in registers",
		"2 arguments in registers", "3 arguments in registers",
		"4 arguments in registers", "5 arguments in registers",
		"6 arguments in registers", "arguments on the stack as well",
	};

	return arity < 8 ? words[arity] : "?";
}

uint32_t kcfi_preamble_bytes(const struct kcfi_scan *s, const struct kcfi_func *fn)
{
	/* x86_64: the id is the immediate of a 5-byte mov (b8 <id>): the
	 * arch's preamble_before_id counts the opcode. */
	return fn->id_off + s->arch->preamble_before_id;
}

/* ---- the field printers of the arch hooks (arch.h) ---- */

static void json_field(const struct kcfi_fields *out, const char *key, const char *fmt, ...)
{
	va_list ap;

	fprintf(out->f, ", \"%s\": ", key);
	va_start(ap, fmt);
	vfprintf(out->f, fmt, ap);
	va_end(ap);
}

/* kcfi site's lines: "  target register:  ..." */
static void text_field(const struct kcfi_fields *out, const char *label, const char *fmt, ...)
{
	va_list ap;

	fprintf(out->f, "  %-18s", label);
	va_start(ap, fmt);
	vfprintf(out->f, fmt, ap);
	va_end(ap);
	fputc('\n', out->f);
}

/* The other output's field. */
static void no_field(const struct kcfi_fields *out, const char *name, const char *fmt, ...)
{
	(void)out, (void)name, (void)fmt;
}

struct kcfi_fields kcfi_json_fields(FILE *f)
{
	return (struct kcfi_fields){ .json = json_field, .text = no_field, .f = f };
}

struct kcfi_fields kcfi_text_fields(FILE *f)
{
	return (struct kcfi_fields){ .json = no_field, .text = text_field, .f = f };
}

/* ---- JSON ---- */

void kcfi_json_func_fields(FILE *f, const struct kcfi_scan *s, const struct kcfi_func *fn)
{
	fprintf(f, "\"name\": ");
	kcfi_json_string(f, fn->name);
	fprintf(f, ", ");
	kcfi_json_loc(f, s, "entry", fn->sec, fn->off);
	if (fn->id_known)
		fprintf(f, ", \"type_id\": \"0x%08" PRIx32 "\"", fn->id);
	else
		fprintf(f, ", \"type_id\": null");
	fprintf(f, ", \"id_offset\": %" PRIu32 ", \"preamble_bytes\": %" PRIu32
		", \"evidence\": \"%s\"", fn->id_off, kcfi_preamble_bytes(s, fn),
		evidence_name(fn->evidence));
	if (fn->id_sym) {
		fprintf(f, ", \"id_symbol\": ");
		kcfi_json_string(f, fn->id_sym);
	}
	if (s->arch->func_fields) {
		struct kcfi_fields out = kcfi_json_fields(f);

		s->arch->func_fields(&out, s, fn);
	}
	if (s->has_types) {
		size_t i = func_index(s, fn);

		fprintf(f, ", \"prototype\": ");
		if (s->protos[i])
			kcfi_json_string(f, s->protos[i]);
		else
			fprintf(f, "null");
		fprintf(f, ", \"type_check\": ");
		kcfi_json_string(f, kcfi_type_verdict_name(s->type_verdict[i]));
		if (s->arity_why && s->arity_why[i] >= 0) {
			fprintf(f, ", \"arity_against_prototype\": ");
			kcfi_json_string(f, kcfi_arity_why_name(s->arity_why[i]));
		}
	}
}

void kcfi_json_site_fields(FILE *f, const struct kcfi_scan *s, const struct kcfi_site *st)
{
	kcfi_json_loc(f, s, "trap", st->sec, st->trap);
	fprintf(f, ", ");
	kcfi_json_loc(f, s, "check", st->sec, st->off);
	fprintf(f, ", \"length\": %" PRIu32 ", \"type_id\": \"0x%08" PRIx32 "\""
		", \"target_register\": \"%s\", \"type_id_from\": %" PRId32,
		st->len, st->id, kcfi_reg_name(s, st->target_reg), st->disp);
	if (s->arch->site_fields) {
		struct kcfi_fields out = kcfi_json_fields(f);

		s->arch->site_fields(&out, st);
	}
	fprintf(f, ", \"in_kcfi_traps\": %s, \"function\": ",
		st->in_traps < 0 ? "null" : st->in_traps ? "true" : "false");
	if (st->func) {
		kcfi_json_string(f, st->func);
		fprintf(f, ", \"function_offset\": %" PRIu64, st->func_off);
	} else {
		fprintf(f, "null");
	}
}

void kcfi_json_loc(FILE *f, const struct kcfi_scan *s, const char *key,
		   uint32_t sec, uint64_t off)
{
	fprintf(f, "\"%s\": {\"section\": ", key);
	kcfi_json_string(f, s->elf->sections[sec].name);
	fprintf(f, ", \"offset\": %" PRIu64 ", \"address\": \"0x%" PRIx64 "\"}",
		off, address(s, sec, off));
}

/* The summary's "types": the verdicts' counts, the hash of the ids (null:
 * unknown) and how many preambles each hash matches. */
static void json_types_summary(FILE *f, const struct kcfi_scan *s)
{
	fprintf(f, "    \"types\": {\"functions\": %zu, \"verified\": %zu, "
		"\"endbr_masked\": %zu, \"disagree\": %zu, \"not_in_dwarf\": %zu, "
		"\"not_expressible\": %zu, \"hash\": ", s->nfuncs,
		s->type_counts[KCFI_TYPE_OK] + s->type_counts[KCFI_TYPE_MASKED],
		s->type_counts[KCFI_TYPE_MASKED], s->type_counts[KCFI_TYPE_DISAGREE],
		s->type_counts[KCFI_TYPE_NO_DWARF],
		s->type_counts[KCFI_TYPE_UNEXPRESSIBLE]);
	if (s->type_hash >= 0)
		kcfi_json_string(f, kcfi_hash_name(s->type_hash));
	else
		fprintf(f, "null");
	fprintf(f, ", \"hash_matches\": {");
	for (int h = 0; h < KCFI_NHASHES; h++) {
		fprintf(f, "%s", h ? ", " : "");
		kcfi_json_string(f, kcfi_hash_name(h));
		fprintf(f, ": %zu", s->hash_matches[h]);
	}
	fprintf(f, "}},\n");
}

void kcfi_print_json(FILE *f, const struct kcfi_scan *s, const char *path)
{
	const struct elf_file *ef = s->elf;
	size_t nclasses;
	struct tclass *cls = classes(s, &nclasses);
	struct counts c = count_sites(s);

	fprintf(f, "{\n  \"file\": ");
	kcfi_json_string(f, path);
	fprintf(f, ",\n  \"machine\": \"%s\",\n  \"elf_type\": \"%s\",\n",
		elf_machine_name(ef->machine),
		ef->type == ELF_ET_REL ? "REL" : ef->type == ELF_ET_EXEC ? "EXEC" : "DYN");
	fprintf(f, "  \"preamble_method\": ");
	kcfi_json_string(f, s->arch->preamble_method(s));

	fprintf(f, ",\n  \"functions\": [");
	for (size_t i = 0; i < s->nfuncs; i++) {
		const struct kcfi_func *fn = &s->funcs[i];

		fprintf(f, "%s\n    {", i ? "," : "");
		kcfi_json_func_fields(f, s, fn);
		fprintf(f, "}");
	}
	fprintf(f, "%s],\n  \"check_sites\": [", s->nfuncs ? "\n  " : "");
	for (size_t i = 0; i < s->nsites; i++) {
		const struct kcfi_site *st = &s->sites[i];

		fprintf(f, "%s\n    {", i ? "," : "");
		kcfi_json_site_fields(f, s, st);
		fprintf(f, "}");
	}
	fprintf(f, "%s],\n  \"typeid_symbols\": [", s->nsites ? "\n  " : "");
	for (size_t i = 0; i < s->ntypeids; i++) {
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		kcfi_json_string(f, s->typeids[i].name);
		if (s->typeids[i].defined)
			fprintf(f, ", \"type_id\": \"0x%08" PRIx32 "\"}", s->typeids[i].id);
		else
			fprintf(f, ", \"type_id\": null}");
	}
	fprintf(f, "%s],\n  \"address_taken_without_preamble\": ",
		s->ntypeids ? "\n  " : "");
	if (!s->untyped_checked) {
		fprintf(f, "null");
	} else {
		fprintf(f, "[");
		for (size_t i = 0; i < s->nuntyped; i++) {
			fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
			kcfi_json_string(f, s->untyped[i].name);
			fprintf(f, ", ");
			kcfi_json_loc(f, s, "entry", s->untyped[i].sec, s->untyped[i].off);
			fprintf(f, ", \"referenced_from\": ");
			kcfi_json_string(f, s->untyped[i].ref_section);
			fprintf(f, "}");
		}
		fprintf(f, "%s]", s->nuntyped ? "\n  " : "");
	}

	fprintf(f, ",\n  \"summary\": {\n");
	fprintf(f, "    \"functions\": %zu,\n    \"distinct_type_ids\": %zu,\n",
		s->nfuncs, nclasses);
	fprintf(f, "    \"type_id_offset\": %" PRIu32 ",\n", s->preamble_disp);
	if (s->arch->preamble_reg_name && s->has_arity) {
		size_t by[8];

		arity_counts(s, by);
		fprintf(f, "    \"arity\": true,\n    \"functions_by_arity\": [");
		for (unsigned int k = 0; k < 8; k++)
			fprintf(f, "%s%zu", k ? ", " : "", by[k]);
		fprintf(f, "],\n");
		if (s->arity_why) {
			fprintf(f, "    \"arity_against_prototype\": {");
			for (int k = 0; k < KCFI_ARITY_NWHY; k++) {
				fprintf(f, "%s", k ? ", " : "");
				kcfi_json_string(f, kcfi_arity_why_name(k));
				fprintf(f, ": %zu", s->arity_why_counts[k]);
			}
			fprintf(f, "},\n");
		}
	} else if (s->arch->preamble_reg_name) {
		fprintf(f, "    \"arity\": false,\n");
	}
	fprintf(f, "    \"check_sites\": %zu,\n    \"check_site_type_ids\": %zu,\n",
		s->nsites, c.site_ids);
	fprintf(f, "    \"sites_without_function_of_type\": %zu,\n",
		c.sites_unreachable);
	if (s->has_traps)
		fprintf(f, "    \"kcfi_traps\": {\"entries\": %zu, \"sites_listed\": %zu, "
			"\"entries_without_site\": %zu, \"unresolved\": %zu},\n",
			s->ntraps, c.sites_in_traps, s->traps_without_site,
			s->traps_unresolved);
	else
		fprintf(f, "    \"kcfi_traps\": null,\n");
	if (s->arch->counts_stale)
		fprintf(f, "    \"stale_type_register_sites\": %zu,\n", c.sites_stale);
	if (s->has_types)
		json_types_summary(f, s);
	fprintf(f, "    \"classes\": [");
	for (size_t i = 0; i < nclasses; i++) {
		fprintf(f, "%s\n      {\"type_id\": \"0x%08" PRIx32 "\", \"count\": %zu, ",
			i ? "," : "", cls[i].id, cls[i].count);
		if (s->has_types) {
			const char *p = class_proto(s, &cls[i]);

			fprintf(f, "\"prototype\": ");
			if (p)
				kcfi_json_string(f, p);
			else
				fprintf(f, "null");
			fprintf(f, ", ");
		}
		fprintf(f, "\"functions\": [");
		for (size_t k = 0; k < cls[i].count; k++) {
			if (k)
				fprintf(f, ", ");
			kcfi_json_string(f, s->funcs[s->by_id[cls[i].first + k]].name);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "%s]\n  }\n}\n", nclasses ? "\n    " : "");
	free(cls);
}
