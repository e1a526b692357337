#include "insn.h"

#include <stdio.h>

#include "elf.h"

static const char *const x86_regs[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};

const char *x86_reg_name(int reg)
{
	return reg >= 0 && reg < 16 ? x86_regs[reg] : "?";
}

static const char *const x86_regs32[8] = {
	"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
};

const char *x86_reg32_name(int reg)
{
	return reg >= 0 && reg < 8 ? x86_regs32[reg] : "?";
}

/* "x8": in a static buffer, until the next call. */
const char *a64_reg_name(int reg)
{
	static char buf[8];

	snprintf(buf, sizeof(buf), "x%d", reg);
	return buf;
}

static int why_not(const char **why, const char *text, int decoded)
{
	if (why)
		*why = text;
	return decoded;
}

int x86_decode_check(const uint8_t *p, size_t n, struct x86_check *c,
		     const char **why)
{
	size_t i;
	uint8_t rex, modrm, mod, rm;

	/* movl $imm32, %r10d / %r11d */
	if (n < 6)
		return why_not(why, "too short for movl $imm32, %r10d (6 bytes)", 0);
	if (p[0] != 0x41 || (p[1] != 0xba && p[1] != 0xbb))
		return why_not(why, "expected movl $imm32, %r10d (41 ba) or %r11d (41 bb)", 0);
	c->udb = 0;
	c->temp_reg = 8 + (p[1] - 0xb8);
	c->imm = elf_rd32(p + 2);
	c->id = 0u - c->imm;
	c->add_off = 6;

	/* addl disp(%base), %r10d: REX.R set, opcode 03 /r, mod 01 or 10 */
	i = 6;
	if (n < i + 4)
		return why_not(why, "too short for addl -D(%reg), %r10d", 1);
	rex = p[i];
	if ((rex & 0xfc) != 0x44 || p[i + 1] != 0x03)
		return why_not(why, "expected addl -D(%reg), %r10d (44/45 03 ..)", 1);
	modrm = p[i + 2];
	mod = modrm >> 6;
	rm = modrm & 7;
	if (((modrm >> 3) & 7) != (c->temp_reg & 7) || (mod != 1 && mod != 2))
		return why_not(why, "addl does not add a memory operand to the movl register", 1);
	i += 3;
	if (rm == 4) { /* SIB byte: base only, no index */
		uint8_t sib = p[i++];

		if (((sib >> 3) & 7) != 4 || (rex & 2))
			return why_not(why, "addl uses an index register", 1);
		rm = sib & 7;
	}
	c->target_reg = rm | ((rex & 1) << 3);
	if (mod == 1) {
		if (n < i + 1)
			return why_not(why, "truncated addl displacement", 1);
		c->disp = (int8_t)p[i];
		i += 1;
	} else {
		if (n < i + 4)
			return why_not(why, "truncated addl displacement", 1);
		c->disp = (int32_t)elf_rd32(p + i);
		i += 4;
	}
	if (c->disp >= 0)
		return why_not(why, "addl displacement is not negative", 1);

	/*
	 * FineIBT's patched tail: jne .+1 jumps, on a mismatch, to the d6
	 * (UDB) that is the immediate of test $0xd6, %al, and traps there.
	 */
	c->jcc_off = i;
	if (n >= i + 2 && p[i] == 0x75 && p[i + 1] == 0x01) {
		c->udb = 1;
		c->trap_off = i + 3;
		if (n < i + 4)
			return why_not(why, "too short for test $0xd6, %al (a8 d6) after jne .+1", 3);
		if (p[i + 2] != 0xa8 || p[i + 3] != 0xd6)
			return why_not(why, "expected test $0xd6, %al (a8 d6) after jne .+1 (75 01)",
				       3);
		c->len = i + 4;
		return 4;
	}

	/* je rel8 (or rel32) */
	if (n >= i + 2 && p[i] == 0x74) {
		i += 2;
	} else if (n >= i + 6 && p[i] == 0x0f && p[i + 1] == 0x84) {
		i += 6;
	} else {
		return why_not(why, n < i + 2 ? "too short for je" :
			       "expected je (74 xx) or jne .+1 (75 01) after addl", 2);
	}

	/* ud2 */
	c->trap_off = i;
	if (n < i + 2)
		return why_not(why, "too short for ud2 (0f 0b)", 3);
	if (p[i] != 0x0f || p[i + 1] != 0x0b)
		return why_not(why, "expected ud2 (0f 0b) after je", 3);
	c->len = i + 2;
	return 4;
}

/* Bit fields of the A64 encodings used below. */
#define A64_LDUR_W_MASK 0xffe00c00u  /* LDUR Wt, [Xn, #simm9] */
#define A64_LDUR_W      0xb8400000u
#define A64_MOVK_W_MASK 0xffe00000u  /* MOVK Wd, #imm16, LSL #hw*16 */
#define A64_MOVK_W_LSL0 0x72800000u
#define A64_MOVK_W_LSL16 0x72a00000u
#define A64_BEQ_MASK    0xff00001fu  /* B.EQ label */
#define A64_BEQ         0x54000000u
#define A64_BRK_MASK    0xffe0001fu  /* BRK #imm16 */
#define A64_BRK         0xd4200000u

int a64_decode_check(const uint8_t *p, size_t n, struct a64_check *c,
		     const char **why)
{
	uint32_t w[6];
	int32_t imm9;

	for (size_t k = 0; k < 6; k++)
		w[k] = n >= (k + 1) * 4 ? elf_rd32(p + 4 * k) : 0;

	if (n < 4 || (w[0] & A64_LDUR_W_MASK) != A64_LDUR_W)
		return why_not(why, "expected ldur wA, [xN, #-D]", 0);
	imm9 = (int32_t)((w[0] >> 12) & 0x1ff);
	if (imm9 & 0x100)
		imm9 -= 0x200;
	if (imm9 >= 0 || (imm9 & 3))
		return why_not(why, "ldur offset is not a negative multiple of 4", 0);
	c->disp = imm9;
	c->load_reg = (int)(w[0] & 31);
	c->target_reg = (int)((w[0] >> 5) & 31);

	if (n < 8 || (w[1] & A64_MOVK_W_MASK) != A64_MOVK_W_LSL0)
		return why_not(why, "expected movk wB, #lo", 1);
	c->type_reg = (int)(w[1] & 31);
	if (n < 12 || (w[2] & A64_MOVK_W_MASK) != A64_MOVK_W_LSL16 ||
	    (int)(w[2] & 31) != c->type_reg)
		return why_not(why, "expected movk wB, #hi, lsl #16", 2);
	c->id = ((w[1] >> 5) & 0xffff) | ((w[2] >> 5) & 0xffff) << 16;

	/* cmp wA, wB == subs wzr, wA, wB */
	if (n < 16 || w[3] != (0x6b00001fu | (uint32_t)c->type_reg << 16 |
			       (uint32_t)c->load_reg << 5))
		return why_not(why, "expected cmp wA, wB", 3);
	if (n < 20 || (w[4] & A64_BEQ_MASK) != A64_BEQ || (w[4] & 0x00800000u))
		return why_not(why, "expected b.eq (forward)", 4);
	if (n < 24 || (w[5] & A64_BRK_MASK) != A64_BRK)
		return why_not(why, "expected brk #imm", 5);
	c->brk_imm = (uint16_t)((w[5] >> 5) & 0xffff);
	if (!a64_brk_is_kcfi(c->brk_imm) ||
	    a64_brk_type_reg(c->brk_imm) != c->type_reg ||
	    a64_brk_target_reg(c->brk_imm) != c->target_reg)
		return why_not(why, "brk immediate does not name the checked registers", 5);
	c->trap_off = 20;
	return 6;
}

int a64_brk_is_kcfi(uint32_t imm)
{
	return (imm & A64_KCFI_BRK_MASK) == A64_KCFI_BRK_BASE;
}

int a64_brk_target_reg(uint32_t imm)
{
	return (int)(imm & 31);
}

int a64_brk_type_reg(uint32_t imm)
{
	return (int)((imm >> 5) & 31);
}
