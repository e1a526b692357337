/*
 * kcfi explain's per-arch readers (explain.c), the explain hooks of
 * arch.c's table: each takes the values after the options and prints what
 * they say; 0, or EXIT_INPUT after a "kcfi: explain: ..." error.
 */
#ifndef KCFI_EXPLAIN_H
#define KCFI_EXPLAIN_H

int explain_x86(int argc, char **argv);    /* the bytes of a check */
int explain_arm64(int argc, char **argv);  /* one brk immediate or ESR */
int explain_riscv(int argc, char **argv);  /* a check and its call, or a Code: line */

#endif
