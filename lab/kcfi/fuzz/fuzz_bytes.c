/*
 * libFuzzer target: the hex byte parsers (kcfi explain, kcfi decode; and
 * riscv64's Code: line of 16-bit words) and the check decoders (x86_64,
 * arm64, riscv64) run over what they parse, at every offset.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "insn.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* riscv64: a whole check and its call lie inside the bytes, in order,
 * and a complete check has an id that its lui and addiw make. */
static void decode_rv(const uint8_t *p, size_t n)
{
	struct rv_check r;
	const char *why = NULL;
	int steps = rv_decode_check(p, n, &r, &why);

	if (steps < RV_CHECK_STEPS) {
		if (!why)
			abort(); /* every rejection has a reason */
		return;
	}
	if (r.call.off + r.call.len > n || r.len != r.trap.off + r.trap.len ||
	    r.call.off != r.len || r.beq.off + 4 != r.trap.off ||
	    r.id != (r.hi20 << 12) + (uint32_t)r.lo12 || r.disp >= 0 ||
	    (r.trap.len != 2 && r.trap.len != 4) || !rv_maybe_check(p, n))
		abort();
}

static void decode_all(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct x86_check x;
		struct a64_check a;
		const char *why = NULL;

		/* A whole check lies inside the bytes, and ends with its trap:
		 * ud2, or udb, the d6 of a FineIBT kernel's test $0xd6, %al. */
		if (x86_decode_check(p + i, n - i, &x, &why) == 4 &&
		    (x.len > n - i || x.trap_off >= x.len ||
		     (x.udb ? x.trap_off != x.jcc_off + 3 || x.len != x.trap_off + 1 ||
		      p[i + x.trap_off] != 0xd6 :
		      x.len != x.trap_off + 2 || p[i + x.trap_off] != 0x0f)))
			abort();
		if (a64_decode_check(p + i, n - i, &a, &why) == 6 && n - i < A64_CHECK_LEN)
			abort();
		decode_rv(p + i, n - i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[4096];
	char *text;
	size_t n, mark;

	if (size > 64 * 1024)
		return 0;
	decode_all(data, size);
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (kcfi_parse_bytes("fuzz", 1, &text, out, sizeof(out), &n) == 0) {
		if (n == 0 || n > sizeof(out))
			abort();
		decode_all(out, n);
	}
	/* riscv64's Code: line of 16-bit words. */
	if (kcfi_parse_halfwords(1, &text, out, sizeof(out), &n, &mark)) {
		if (n == 0 || n % 2 || n > sizeof(out) || (mark != (size_t)-1 && mark >= n))
			abort();
		decode_all(out, n);
	}
	free(text);
	return 0;
}
