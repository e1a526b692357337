/*
 * Decoders for the instruction sequences clang emits for KCFI checks.
 *
 * x86_64:  movl $-id, %r10d        41 ba <imm32>   (41 bb: %r11d)
 *          addl -D(%reg), %r10d    44/45 03 <modrm> [sib] <disp>
 *          je .Lpass               74 xx   (0f 84 <rel32> accepted)
 *          ud2                     0f 0b   <- trap
 *   or, as a FineIBT kernel (6.16+) patches it in at boot
 *   (cfi_enable_callers()), the same length:
 *          jne .+1                 75 01   into the next one's immediate
 *          test $0xd6, %al         a8 d6   <- trap: the d6, UDB, is undefined
 * arm64:   ldur w16, [xN, #-D]     load the callee's type id
 *          movk w17, #lo
 *          movk w17, #hi, lsl #16  expected type id
 *          cmp  w16, w17
 *          b.eq .Lpass
 *          brk  #(0x8000 | 17 << 5 | N)   <- trap
 * D is 4, plus any padding from -fpatchable-function-entry=M,M.
 */
#ifndef KCFI_INSN_H
#define KCFI_INSN_H

#include <stddef.h>
#include <stdint.h>

struct x86_check {
	uint32_t imm;        /* movl immediate */
	uint32_t id;         /* expected type id: -imm */
	int temp_reg;        /* register the movl loads (10 or 11) */
	int target_reg;      /* base register of the addl: the call target */
	int32_t disp;        /* addl displacement: -D */
	size_t add_off;      /* offsets of the instructions from the start */
	size_t jcc_off;
	size_t trap_off;     /* the ud2; with udb, the d6 byte (the jne's target) */
	size_t len;          /* bytes up to and including the trap */
	int udb;             /* the tail is jne .+1; test $0xd6, %al (75 01 a8 d6),
			      * not je; ud2: .kcfi_traps lists trap_off - 1 */
};

/*
 * Decode a check sequence at P.  Returns how many of its four instructions
 * (movl, addl, je, ud2; or movl, addl, jne, test) were recognised; 4 means
 * a complete check.  When fewer, *WHY (if not NULL) says what did not match.
 */
int x86_decode_check(const uint8_t *p, size_t n, struct x86_check *c,
		     const char **why);

const char *x86_reg_name(int reg); /* "rax" ... "r15" */
const char *x86_reg32_name(int reg); /* "eax" ... "edi" */

struct a64_check {
	uint32_t id;
	int load_reg;        /* w16: the callee's type id */
	int type_reg;        /* w17: the expected type id */
	int target_reg;      /* xN: the call target */
	int32_t disp;        /* ldur offset: -D */
	uint16_t brk_imm;
	size_t trap_off;     /* 20: the brk */
};

#define A64_CHECK_LEN 24
#define A64_NOP 0xd503201fu

/* Same contract as x86_decode_check, for six 32-bit words. */
int a64_decode_check(const uint8_t *p, size_t n, struct a64_check *c,
		     const char **why);

const char *a64_reg_name(int reg); /* "x0" ... "x30": "x" and the number */

/* KCFI brk immediates: 0x8000 | type register << 5 | target register. */
#define A64_KCFI_BRK_BASE 0x8000u
#define A64_KCFI_BRK_MASK 0xfc00u
int a64_brk_is_kcfi(uint32_t imm);
int a64_brk_target_reg(uint32_t imm);
int a64_brk_type_reg(uint32_t imm);

/*
 * riscv64 (clang 17+; the kernel's arch/riscv/kernel/cfi.c):
 *          lw    tA, -D(rN)       load the callee's type id (tA: t1, or t3)
 *          lui   tB, hi20         expected type id (tB: t2, or t3): hi20 << 12
 *          addiw tB, tB, lo12       plus the sign-extended lo12
 *          beq   tA, tB, .Lpass
 *          ebreak                 <- trap, listed in .kcfi_traps
 *  .Lpass: jalr rN / jr rN        the call (or tail call) the check guards
 * With the C extension any of lui, addiw, ebreak and the call may be its
 * 16-bit form (c.lui, c.addiw, c.ebreak, c.jalr, c.jr); the lw and beq
 * never are.  lui is left out when hi20 is 0 (addi builds the id: see
 * stale_base), addiw when lo12 is 0.  tA and tB are t1 and t2 unless rN
 * is one of them; then t3 takes its place.
 */
struct rv_insn {
	size_t off;          /* from the lw */
	size_t len;          /* 2 (compressed) or 4; 0: absent */
};

struct rv_check {
	uint32_t id;         /* expected type id: (hi20 << 12) + lo12 */
	uint32_t hi20;       /* lui's immediate (0 without a lui) */
	int32_t lo12;        /* addiw's (or addi's) immediate, sign-extended */
	int load_reg;        /* tA: the callee's type id */
	int type_reg;        /* tB: the expected type id */
	int target_reg;      /* rN: the lw's base, the call's register */
	int32_t disp;        /* lw offset: -D */
	int stale_base;      /* "addi tB, tB, lo12" without a lui: clang 19
			      * adds the id to whatever tB held */
	int tail_call;       /* the call is jr / c.jr (no link) */
	int32_t branch;      /* beq's offset: 4 + the trap's length, or 0
			      * (a relocatable file's, still to be filled in) */
	struct rv_insn lw, lui, add, beq, trap, call;
	size_t len;          /* bytes from the lw to the end of the trap */
};

#define RV_CHECK_STEPS 5 /* lw, the id, beq, the trap, the call */

/*
 * Decode a check at P, which must start with its lw.  Returns how many of
 * its five steps were recognised; RV_CHECK_STEPS means a complete check
 * (followed by its call).  When fewer, *WHY (if not NULL) says what did
 * not match.
 */
int rv_decode_check(const uint8_t *p, size_t n, struct rv_check *c, const char **why);

/* Could P start a check?  The low half of a lw (opcode LOAD, funct3 2). */
int rv_maybe_check(const uint8_t *p, size_t n);

const char *rv_reg_name(int reg); /* ABI names: "zero", "ra", ... "t6" */

#endif
