/*
 * Unit tests for the pieces that have fixed, published answers: xxHash64
 * test vectors, Itanium manglings, parser errors, instruction decoders and
 * ELF header checks.  Prints "ok - ..." / "FAIL - ..." per test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdecl.h"
#include "elf.h"
#include "insn.h"
#include "mangle.h"
#include "typeid.h"
#include "util.h"
#include "xxhash64.h"

static int failures;

static void check(int cond, const char *what, const char *detail)
{
	if (cond) {
		printf("ok - %s\n", what);
	} else {
		printf("FAIL - %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
		failures++;
	}
}

static void test_xxhash(void)
{
	/* Vectors from the xxHash reference implementation. */
	static const struct {
		const char *in;
		unsigned long long seed, want;
	} v[] = {
		{ "", 0, 0xEF46DB3751D8E999ULL },
		{ "a", 0, 0xD24EC4F1A98C6E5BULL },
		{ "abc", 0, 0x44BC2CF5AD770999ULL },
		{ "Nobody inspects the spammish repetition", 0, 0xFBCEA83C8A378BF1ULL },
	};
	char name[96];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unsigned long long got = xxhash64(v[i].in, strlen(v[i].in), v[i].seed);
		char detail[64];

		snprintf(name, sizeof(name), "xxhash64(\"%.20s\")", v[i].in);
		snprintf(detail, sizeof(detail), "got 0x%016llx", got);
		check(got == v[i].want, name, detail);
	}
}

static void test_mangle(void)
{
	/* Manglings fixed by the Itanium ABI (and the brief's measurements). */
	static const char *const v[][2] = {
		{ "void (int *)", "FvPiE" },
		{ "int (int *)", "FiPiE" },
		{ "void (void)", "FvvE" },
		{ "int f()", "FiE" },
		{ "int f(int *p)", "FiPiE" },
		{ "void (const char *)", "FvPKcE" },
		{ "void (char *const p)", "FvPcE" },
		{ "void (struct foo *)", "FvP3fooE" },
		{ "void (struct foo *, struct foo *)", "FvP3fooS0_E" },
		{ "void (const char *, const char *)", "FvPKcS0_E" },
		{ "int (const char *, ...)", "FiPKczE" },
		{ "void (int a[4])", "FvPiE" },
		{ "void (int a[3][4])", "FvPA4_iE" },
		{ "void (void (*)(int))", "FvPFviEE" },
		{ "void (void (*)(int), void (*)(int))", "FvPFviES0_E" },
		{ "void (*signal(int, void (*)(int)))(int)", "FPFviEiS0_E" },
		{ "void (*)(int)", "FviE" },
		{ "const volatile int *(void)", "FPVKivE" },
		{ "void (int *restrict *)", "FvPrPiE" },
		{ "void (signed char, unsigned char, char, _Bool)", "FvahcbE" },
		{ "void (short, unsigned short, long, unsigned long)", "FvstlmE" },
		{ "void (long long, unsigned long long, float, double, long double)",
		  "FvxyfdeE" },
		{ "void (u64, uint64_t, size_t, s64)", "FvyymxE" },
		{ "irqreturn_t (int, void *)", "F9irqreturniPvE" },
		{ "static inline int __must_check f(const char __user *buf);", "FiPKcE" },
		{ "void f(void) __attribute__((noreturn));", "FvvE" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char err[200], name[160];
		char *got = mangle_prototype(v[i][0], err, sizeof(err));

		snprintf(name, sizeof(name), "mangle '%s' -> %s", v[i][0], v[i][1]);
		check(got && strcmp(got, v[i][1]) == 0, name, got ? got : err);
		free(got);
	}
	/* Substitution numbering past S9_: base 36, then S10_. */
	{
		char proto[2048] = "void (";
		char err[200], *got;

		for (int i = 0; i < 20; i++) {
			char t[32];

			snprintf(t, sizeof(t), "struct s%d *, ", i);
			strcat(proto, t);
		}
		strcat(proto, "struct s19 *)");
		got = mangle_prototype(proto, err, sizeof(err));
		check(got && strstr(got, "S12_E"), "substitution S12_ (index 39)",
		      got ? got : err);
		free(got);
	}
}

static void test_parse_errors(void)
{
	static const char *const v[][2] = {
		{ "int", "not a function type" },
		{ "void (int", "expected ')'" },
		{ "void (void, int)", "'void' must be the only parameter" },
		{ "int (...)", "'...' needs a named parameter" },
		{ "unsigned signed f(void)", "both 'signed' and 'unsigned'" },
		{ "long long long f(void)", "too many 'long'" },
		{ "foo_t f(void)", "unknown type name 'foo_t'" },
		{ "int f(int)[3]", "function returning an array" },
		{ "void (int [*])", "variable-length arrays" },
		{ "void (struct { int x; } *)", "tag name" },
		{ "void (struct foo { int x; } *)", "type definitions" },
		{ "", "empty prototype" },
		{ "void (int) @", "unexpected character '@'" },
		{ "short long f(void)", "both 'short' and 'long'" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char err[200], name[160];
		char *got = mangle_prototype(v[i][0], err, sizeof(err));

		snprintf(name, sizeof(name), "reject '%s' (%s)", v[i][0], v[i][1]);
		check(!got && strstr(err, v[i][1]), name, got ? got : err);
		free(got);
	}
	{
		char deep[4000] = "void (";
		char err[200], *got;

		for (int i = 0; i < 200; i++)
			strcat(deep, "(");
		got = mangle_prototype(deep, err, sizeof(err));
		check(!got, "deep nesting is rejected, not a stack overflow", err);
		free(got);
	}
}

static void test_typeid(void)
{
	char hashed[64];

	check(kcfi_typeid("FvPiE", hashed, sizeof(hashed)) == 0x7e0c52a5 &&
	      strcmp(hashed, "_ZTSFvPiE") == 0, "typeid FvPiE = 0x7e0c52a5", hashed);
	check(kcfi_typeid("_ZTSFiPiE", NULL, 0) == 0x3ad55aca,
	      "typeid _ZTSFiPiE = 0x3ad55aca", NULL);
}

static void test_insn(void)
{
	static const unsigned char x86[] = { 0x41, 0xba, 0x5b, 0xad, 0xf3, 0x81, 0x45,
					     0x03, 0x53, 0xfc, 0x74, 0x02, 0x0f, 0x0b };
	/* %r11d temp with %r10 target; SIB base (r12) with disp32 */
	static const unsigned char x86b[] = { 0x41, 0xbb, 0x5b, 0xad, 0xf3, 0x81,
					      0x45, 0x03, 0x9c, 0x24, 0xec, 0xff,
					      0xff, 0xff, 0x74, 0x02, 0x0f, 0x0b };
	/* A FineIBT kernel's patched tail: jne .+1; test $0xd6, %al (udb) */
	static const unsigned char udb[] = { 0x41, 0xba, 0x5b, 0xad, 0xf3, 0x81, 0x45,
					     0x03, 0x53, 0xf1, 0x75, 0x01, 0xa8, 0xd6 };
	static const unsigned char udb_r12[] = { 0x41, 0xba, 0x5b, 0xad, 0xf3, 0x81, 0x45,
						 0x03, 0x54, 0x24, 0xf1, 0x75, 0x01, 0xa8,
						 0xd6 };
	static const unsigned char udb_jne2[] = { 0x41, 0xba, 0x5b, 0xad, 0xf3, 0x81, 0x45,
						  0x03, 0x53, 0xf1, 0x75, 0x02, 0xa8, 0xd6 };
	static const unsigned char a64[] = {
		0x50, 0xc0, 0x5f, 0xb8, 0xb1, 0x54, 0x8a, 0x72, 0x91, 0xc1, 0xaf, 0x72,
		0x1f, 0x02, 0x11, 0x6b, 0x40, 0x00, 0x00, 0x54, 0x40, 0x44, 0x30, 0xd4,
	};
	struct x86_check c;
	struct a64_check a;

	check(x86_decode_check(x86, sizeof(x86), &c, NULL) == 4 && c.id == 0x7e0c52a5 &&
	      c.target_reg == 11 && c.disp == -4 && c.trap_off == 12,
	      "x86 check: id 0x7e0c52a5, target r11, ud2 at +12", NULL);
	check(x86_decode_check(x86b, sizeof(x86b), &c, NULL) == 4 && c.temp_reg == 11 &&
	      c.target_reg == 12 && c.disp == -20 && c.trap_off == 16,
	      "x86 check: r11d temp, SIB base r12, disp32", NULL);
	check(x86_decode_check(x86, 10, &c, NULL) == 2, "x86 check: truncated after addl",
	      NULL);
	check(x86_decode_check(x86, sizeof(x86), &c, NULL) == 4 && !c.udb && c.len == 14,
	      "x86 check: je; ud2 is not udb", NULL);
	check(x86_decode_check(udb, sizeof(udb), &c, NULL) == 4 && c.udb && c.id == 0x7e0c52a5 &&
	      c.target_reg == 11 && c.disp == -15 && c.jcc_off == 10 && c.trap_off == 13 &&
	      c.len == 14, "x86 udb check: id 0x7e0c52a5, target r11, the d6 at +13", NULL);
	check(x86_decode_check(udb_r12, sizeof(udb_r12), &c, NULL) == 4 && c.udb &&
	      c.target_reg == 12 && c.trap_off == 14 && c.len == 15,
	      "x86 udb check: SIB base r12, 15 bytes", NULL);
	check(x86_decode_check(udb, 13, &c, NULL) == 3 && c.udb,
	      "x86 udb check: truncated in the test", NULL);
	check(x86_decode_check(udb_jne2, sizeof(udb_jne2), &c, NULL) == 2,
	      "x86 check: jne other than .+1 is no check", NULL);
	check(a64_decode_check(a64, sizeof(a64), &a, NULL) == 6 && a.id == 0x7e0c52a5 &&
	      a.target_reg == 2 && a.type_reg == 17 && a.brk_imm == 0x8222,
	      "arm64 check: id 0x7e0c52a5, target x2, brk #0x8222", NULL);
	check(a64_brk_is_kcfi(0x8228) && a64_brk_target_reg(0x8228) == 8 &&
	      a64_brk_type_reg(0x8228) == 17 && !a64_brk_is_kcfi(0x800),
	      "arm64 brk immediates", NULL);
}

/*
 * riscv64 instructions as llvm-objdump prints them ("ffc7a303" 4 bytes,
 * "9002" 2 bytes, each a little-endian value) into bytes; returns the count.
 */
static size_t rv_bytes(const char *listing, uint8_t *out)
{
	size_t n = 0;

	while (*listing) {
		char *end;
		unsigned long v = strtoul(listing, &end, 16);
		size_t len = (size_t)(end - listing) / 2;

		for (size_t i = 0; i < len; i++)
			out[n++] = (uint8_t)(v >> (8 * i));
		listing = *end ? end + 1 : end;
	}
	return n;
}

static void test_rv_insn(void)
{
	/* What clang-19 -fsanitize=kcfi emits for riscv64 (llvm-objdump -d). */
	static const struct {
		const char *listing, *what;
		uint32_t id;
		int load, type, target, trap_len, call_len, tail, stale;
		int32_t disp;
	} good[] = {
		{ "ffc7a303 7e0c53b7 2a53839b 00730363 9002 8782",
		  "lui+addiw, c.ebreak, c.jr a5", 0x7e0c52a5, 6, 7, 15, 2, 2, 1, 0, -4 },
		{ "ffc62303 000503b7 7943839b 00730063 9002 9602",
		  "unrelocated beq (.o), c.jalr a2", 0x00050794, 6, 7, 12, 2, 2, 0, 0, -4 },
		{ "ffc7a303 73f1 23a9 00730363 9002 8782",
		  "c.lui 0xffffc + c.addiw 10", 0xffffc00a, 6, 7, 15, 2, 2, 1, 0, -4 },
		{ "ffc7a303 63e5 b873839b 00730363 9002 8782",
		  "c.lui 0x19 + addiw -0x479 (sign of lo12)", 0x00018b87, 6, 7, 15, 2, 2, 1, 0, -4 },
		{ "ffc7a303 c0d9d3b7 33d5 00730363 9002 8782",
		  "lui + c.addiw -11", 0xc0d9cff5, 6, 7, 15, 2, 2, 1, 0, -4 },
		{ "ffc7a303 b58343b7 00730363 9002 8782",
		  "lui alone (lo12 = 0)", 0xb5834000, 6, 7, 15, 2, 2, 1, 0, -4 },
		{ "ffc7a303 d4138393 00730363 9002 8782",
		  "addi t2, t2, -0x2bf alone (hi20 = 0)", 0xfffffd41, 6, 7, 15, 2, 2, 1, 1, -4 },
		{ "ffc32e03 c0d9d3b7 ff53839b 007e0463 00100073 00030067",
		  "no RVC, target t1: lw t3, ebreak, jr t1", 0xc0d9cff5, 28, 7, 6, 4, 4, 1, 0, -4 },
		{ "ffc3a303 7e0c5e37 2a5e0e1b 01c30363 9002 8382",
		  "target t2: the id in t3", 0x7e0c52a5, 6, 28, 7, 2, 2, 1, 0, -4 },
		{ "ff47a303 7e0c53b7 2a53839b 00730363 9002 9782",
		  "-fpatchable-function-entry=4,4: lw -12", 0x7e0c52a5, 6, 7, 15, 2, 2, 0, 0, -12 },
		{ "ffc7a303 7e0c53b7 2a53839b 00730463 00100073 000780e7",
		  "ebreak, jalr ra, 0(a5)", 0x7e0c52a5, 6, 7, 15, 4, 4, 0, 0, -4 },
	};
	static const struct {
		const char *listing, *what;
		int steps;
	} bad[] = {
		{ "ffc7a303 7e0c53b7 2a53839b 00731363 9002 8782", "bne, not beq", 2 },
		{ "ffc7a303 7e0c53b7 2a53839b 00730463 9002 8782", "beq past the call", 3 },
		{ "ffc7a303 7e0c53b7 2a53839b 00730363 9002 8702", "c.jr a4: another register", 4 },
		{ "ffc7a303 7e0c53b7 2a53839b 00730363 9002", "no call after c.ebreak", 4 },
		{ "ffc7a303 7e0c53b7 2a53839b 00730363 0001 8782", "c.nop, not c.ebreak", 3 },
		{ "0047a303 7e0c53b7 2a53839b 00730363 9002 8782", "lw 4(a5): above the entry", 0 },
		{ "ffc7a303 7e0c5437 2a53839b 00730363 9002 8782", "lui s0, addiw t2", 2 },
		{ "ffc7a303 7e0c53b7 2a54041b 00730363 9002 8782", "addiw s0, s0", 2 },
	};
	uint8_t b[64];
	char detail[160];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		size_t n = rv_bytes(good[i].listing, b);
		struct rv_check c;
		const char *why = "";
		int got = rv_decode_check(b, n, &c, &why);
		char name[160];

		snprintf(name, sizeof(name), "riscv check: %s -> 0x%08x", good[i].what, good[i].id);
		snprintf(detail, sizeof(detail), "steps %d (%s), id 0x%08x, regs %d %d %d, trap %zu, "
			 "call %zu, tail %d, stale %d, disp %d", got, got < RV_CHECK_STEPS ? why : "",
			 c.id, c.load_reg, c.type_reg, c.target_reg, c.trap.len, c.call.len,
			 c.tail_call, c.stale_base, c.disp);
		check(got == RV_CHECK_STEPS && c.id == good[i].id && c.load_reg == good[i].load &&
		      c.type_reg == good[i].type && c.target_reg == good[i].target &&
		      (int)c.trap.len == good[i].trap_len && (int)c.call.len == good[i].call_len &&
		      c.tail_call == good[i].tail && c.stale_base == good[i].stale &&
		      c.disp == good[i].disp && c.len == c.trap.off + c.trap.len &&
		      c.call.off == c.len && rv_maybe_check(b, n), name, detail);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = rv_bytes(bad[i].listing, b);
		struct rv_check c;
		const char *why = "";
		int got = rv_decode_check(b, n, &c, &why);
		char name[160];

		snprintf(name, sizeof(name), "riscv check rejected: %s (after %d steps)", bad[i].what,
			 bad[i].steps);
		snprintf(detail, sizeof(detail), "%d steps: %s", got, why);
		check(got == bad[i].steps, name, detail);
	}
	check(strcmp(rv_reg_name(15), "a5") == 0 && strcmp(rv_reg_name(28), "t3") == 0 &&
	      strcmp(rv_reg_name(0), "zero") == 0 && strcmp(rv_reg_name(32), "?") == 0,
	      "riscv register names", NULL);
}

static void test_hex(void)
{
	uint64_t v;

	check(kcfi_parse_hex("0x8222", &v) == 0 && v == 0x8222 &&
	      kcfi_parse_hex("ffffffff81000000", &v) == 0 && v == 0xffffffff81000000ULL &&
	      kcfi_parse_hex("0x", &v) && kcfi_parse_hex("12g", &v) &&
	      kcfi_parse_hex("11112222333344445", &v),
	      "hex parsing", NULL);
}

static void test_halfwords(void)
{
	static const uint8_t want[] = { 0x41, 0x11, 0x02, 0x90, 0x82, 0x87 };
	char line[] = "Code: 1141 (9002) 8782", bytes[] = "41 ba 5b", plain[] = "1141 e406";
	char *argv[] = { line }, *argv2[] = { bytes }, *argv3[] = { plain };
	uint8_t out[16];
	size_t n, mark;

	check(kcfi_parse_halfwords(1, argv, out, sizeof(out), &n, &mark) && n == 6 &&
	      memcmp(out, want, 6) == 0 && mark == 2,
	      "riscv64 Code: line: 16-bit words, epc's marked", NULL);
	check(!kcfi_parse_halfwords(1, argv2, out, sizeof(out), &n, &mark) &&
	      !kcfi_parse_halfwords(1, argv3, out, sizeof(out), &n, &mark),
	      "bytes, and words without Code: or (epc), are not a riscv64 Code: line", NULL);
}

static void test_elf_header(void)
{
	unsigned char buf[64] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
	struct elf_file ef;
	char err[200];

	check(elf_parse(&ef, buf, 10, err, sizeof(err)) && strstr(err, "truncated"),
	      "ELF: truncated header", err);
	buf[0x12] = 21; /* EM_PPC64 */
	buf[0x10] = 1;
	check(elf_parse(&ef, buf, sizeof(buf), err, sizeof(err)) && strstr(err, "ppc64"),
	      "ELF: other machine", err);
	buf[0x12] = 243; /* EM_RISCV: accepted, fails later */
	check(elf_parse(&ef, buf, sizeof(buf), err, sizeof(err)) &&
	      strstr(err, "no section headers"), "ELF: riscv64 accepted", err);
	buf[0x12] = 62;
	check(elf_parse(&ef, buf, sizeof(buf), err, sizeof(err)) &&
	      strstr(err, "no section headers"), "ELF: no section headers", err);
	buf[0x28] = 0x40; /* shoff = 64 = end of file */
	buf[0x3a] = 64;
	buf[0x3c] = 1;
	check(elf_parse(&ef, buf, sizeof(buf), err, sizeof(err)) &&
	      strstr(err, "past the end"), "ELF: section headers past the end", err);
	buf[4] = 1;
	check(elf_parse(&ef, buf, sizeof(buf), err, sizeof(err)) &&
	      strstr(err, "64-bit"), "ELF: 32-bit rejected", err);
}

int main(void)
{
	test_xxhash();
	test_typeid();
	test_mangle();
	test_parse_errors();
	test_insn();
	test_rv_insn();
	test_hex();
	test_halfwords();
	test_elf_header();
	return failures != 0;
}
