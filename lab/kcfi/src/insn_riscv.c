/*
 * The riscv64 KCFI check (see insn.h): lw, lui/addiw, beq, ebreak, and
 * the call it guards.  Instructions are 4 bytes, or 2 when their lowest
 * two bits are not 11 (the C extension); the check is at a 2-byte
 * boundary.
 */
#include "insn.h"

#include <string.h>

#include "elf.h"

static const char *const rv_regs[32] = {
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2",
	"s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
	"a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7",
	"s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};

const char *rv_reg_name(int reg)
{
	return reg >= 0 && reg < 32 ? rv_regs[reg] : "?";
}

/* Fields of the 32-bit formats, and the 6-bit immediate of the 16-bit
 * CI format (c.lui, c.addi, c.addiw, c.li). */
#define RD(w)  ((int)(((w) >> 7) & 31))
#define RS1(w) ((int)(((w) >> 15) & 31))
#define RS2(w) ((int)(((w) >> 20) & 31))

/* The low BITS bits of V as a signed number. */
static int32_t sext(uint32_t v, unsigned bits)
{
	uint32_t sign = 1u << (bits - 1);

	v &= (sign << 1) - 1;
	return v & sign ? (int32_t)(v - sign) - (int32_t)sign : (int32_t)v;
}

static int32_t imm_i(uint32_t w)
{
	return sext(w >> 20, 12);
}

static int32_t imm_b(uint32_t w)
{
	return sext(((w >> 31) & 1) << 12 | ((w >> 7) & 1) << 11 |
		    ((w >> 25) & 63) << 5 | ((w >> 8) & 15) << 1, 13);
}

static int32_t imm_ci(uint32_t h)
{
	return sext(((h >> 12) & 1) << 5 | ((h >> 2) & 31), 6);
}

/* Encodings (mask, match) of what the check uses. */
#define MASK_OP_F3   0x707fu   /* opcode and funct3 */
#define MATCH_LW     0x2003u
#define MATCH_ADDI   0x0013u
#define MATCH_ADDIW  0x001bu
#define MATCH_BEQ    0x0063u
#define MATCH_JALR   0x0067u
#define MASK_OP      0x007fu
#define MATCH_LUI    0x0037u
#define INSN_EBREAK  0x00100073u
#define MASK_C_F3    0xe003u   /* 16-bit: funct3 and quadrant */
#define MATCH_C_ADDI 0x0001u
#define MATCH_C_ADDIW 0x2001u
#define MATCH_C_LI   0x4001u
#define MATCH_C_LUI  0x6001u
#define MASK_C_CR    0xf07fu   /* 16-bit CR format with rs2 = 0 */
#define MATCH_C_JR   0x8002u
#define MATCH_C_JALR 0x9002u   /* rs1 = 0 is c.ebreak */
#define INSN_C_EBREAK 0x9002u

/*
 * The instruction at OFF: its encoding in *W and its length, 2 or 4; 0
 * when the bytes end first.  (48-bit and longer encodings are taken as
 * 4 bytes: nothing of the check has them, so they never match.)
 */
static size_t fetch(const uint8_t *p, size_t n, size_t off, uint32_t *w)
{
	if (off > n || n - off < 2)
		return 0;
	*w = elf_rd16(p + off);
	if ((*w & 3) != 3)
		return 2;
	if (n - off < 4)
		return 0;
	*w = elf_rd32(p + off);
	return 4;
}

int rv_maybe_check(const uint8_t *p, size_t n)
{
	return n >= 4 && (elf_rd16(p) & MASK_OP_F3) == MATCH_LW;
}

static int why_not(const char **why, const char *text, int decoded)
{
	if (why)
		*why = text;
	return decoded;
}

/* lui rd, hi20 or c.lui rd, nzimm: the upper 20 bits of a constant. */
static int is_lui(uint32_t w, size_t len, int *rd, uint32_t *hi20)
{
	if (len == 4 && (w & MASK_OP) == MATCH_LUI) {
		*rd = RD(w);
		*hi20 = w >> 12;
		return *rd != 0;
	}
	/* c.lui with rd 2 is c.addi16sp; a zero immediate is reserved. */
	if (len == 2 && (w & MASK_C_F3) == MATCH_C_LUI && RD(w) != 0 && RD(w) != 2 &&
	    imm_ci(w) != 0) {
		*rd = RD(w);
		*hi20 = (uint32_t)imm_ci(w) & 0xfffff;
		return 1;
	}
	return 0;
}

/* addiw rd, rd, imm or c.addiw rd, imm. */
static int is_addiw(uint32_t w, size_t len, int rd, int32_t *imm)
{
	if (len == 4 && (w & MASK_OP_F3) == MATCH_ADDIW && RD(w) == rd && RS1(w) == rd) {
		*imm = imm_i(w);
		return 1;
	}
	if (len == 2 && (w & MASK_C_F3) == MATCH_C_ADDIW && RD(w) == rd) {
		*imm = imm_ci(w);
		return 1;
	}
	return 0;
}

/* addi rd, rs1, imm, c.addi rd, imm (rs1 = rd) or c.li rd, imm (rs1 = zero). */
static int is_addi(uint32_t w, size_t len, int *rd, int *rs1, int32_t *imm)
{
	if (len == 4 && (w & MASK_OP_F3) == MATCH_ADDI) {
		*rd = RD(w);
		*rs1 = RS1(w);
		*imm = imm_i(w);
		return *rd != 0;
	}
	if (len == 2 && ((w & MASK_C_F3) == MATCH_C_ADDI || (w & MASK_C_F3) == MATCH_C_LI) &&
	    RD(w) != 0) {
		*rd = RD(w);
		*rs1 = (w & MASK_C_F3) == MATCH_C_LI ? 0 : *rd;
		*imm = imm_ci(w);
		return 1;
	}
	return 0;
}

/*
 * The expected id, built in tB at *OFF: lui [+ addiw], or addi alone
 * when hi20 is 0.  Clang 19 then emits "addi tB, tB, lo12", which adds
 * the id to tB's old value: the check compares against whatever that
 * sums to.  "addi tB, zero, lo12" (li) would be the correct form; both
 * are accepted, and stale_base tells them apart.
 */
static int decode_id(const uint8_t *p, size_t n, size_t *off, struct rv_check *c)
{
	uint32_t w;
	size_t len = fetch(p, n, *off, &w);
	int rd, rs1;

	if (is_lui(w, len, &rd, &c->hi20)) {
		c->lui = (struct rv_insn){ *off, len };
		*off += len;
		len = fetch(p, n, *off, &w);
		if (is_addiw(w, len, rd, &c->lo12)) {
			c->add = (struct rv_insn){ *off, len };
			*off += len;
		}
	} else if (is_addi(w, len, &rd, &rs1, &c->lo12) && (rs1 == rd || rs1 == 0)) {
		c->add = (struct rv_insn){ *off, len };
		c->stale_base = rs1 == rd;
		*off += len;
	} else {
		return 0;
	}
	c->type_reg = rd;
	c->id = (c->hi20 << 12) + (uint32_t)c->lo12;
	return rd != c->load_reg && rd != c->target_reg;
}

/* The call after the trap: jalr ra/zero, 0(rN), c.jalr rN or c.jr rN. */
static int decode_call(uint32_t w, size_t len, struct rv_check *c)
{
	int reg;

	if (len == 4) {
		if ((w & MASK_OP_F3) != MATCH_JALR || imm_i(w) != 0 || RD(w) > 1)
			return 0;
		reg = RS1(w);
		c->tail_call = RD(w) == 0;
	} else if ((w & MASK_C_CR) == MATCH_C_JR || (w & MASK_C_CR) == MATCH_C_JALR) {
		reg = RD(w); /* the CR format keeps rs1 where rd is */
		c->tail_call = (w & MASK_C_CR) == MATCH_C_JR;
	} else {
		return 0;
	}
	return reg == c->target_reg;
}

int rv_decode_check(const uint8_t *p, size_t n, struct rv_check *c, const char **why)
{
	uint32_t w;
	size_t off;

	memset(c, 0, sizeof(*c));
	/* lw tA, -D(rN) */
	if (fetch(p, n, 0, &w) != 4 || (w & MASK_OP_F3) != MATCH_LW)
		return why_not(why, "expected lw tA, -D(rN)", 0);
	c->lw = (struct rv_insn){ 0, 4 };
	c->load_reg = RD(w);
	c->target_reg = RS1(w);
	c->disp = imm_i(w);
	if (c->disp >= 0 || (c->disp & 1))
		return why_not(why, "lw offset is not a negative, even number", 0);
	if (c->load_reg == 0 || c->target_reg == 0 || c->load_reg == c->target_reg)
		return why_not(why, "lw does not load a register from below another", 0);
	off = 4;

	if (!decode_id(p, n, &off, c))
		return why_not(why, "expected lui tB, hi20 / addiw tB, tB, lo12 (or addi tB, tB, lo12)", 1);

	/* beq tA, tB, .Lpass */
	c->beq = (struct rv_insn){ off, fetch(p, n, off, &w) };
	if (c->beq.len != 4 || (w & MASK_OP_F3) != MATCH_BEQ || RS1(w) != c->load_reg ||
	    RS2(w) != c->type_reg)
		return why_not(why, "expected beq tA, tB after the expected id", 2);
	off += 4;

	/* ebreak or c.ebreak, which the beq jumps over (0 in a relocatable
	 * file: the offset is an R_RISCV_BRANCH relocation's to fill in) */
	c->trap = (struct rv_insn){ off, fetch(p, n, off, &w) };
	if (!(c->trap.len == 4 && w == INSN_EBREAK) && !(c->trap.len == 2 && w == INSN_C_EBREAK))
		return why_not(why, "expected ebreak (or c.ebreak) after beq", 3);
	c->branch = imm_b(elf_rd32(p + c->beq.off));
	if (c->branch != 0 && c->branch != (int32_t)(4 + c->trap.len))
		return why_not(why, "beq does not branch over the ebreak", 3);
	off += c->trap.len;
	c->len = off;

	c->call = (struct rv_insn){ off, fetch(p, n, off, &w) };
	if (!c->call.len)
		return why_not(why, "too short for the call after the ebreak", 4);
	if (!decode_call(w, c->call.len, c))
		return why_not(why, "expected jalr/jr (or c.jalr/c.jr) of the lw's base register "
			       "after the ebreak", 4);
	return RV_CHECK_STEPS;
}
