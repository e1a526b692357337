// SPDX-License-Identifier: GPL-2.0
/*
 * KCFI Lab, exercise 09: a module whose init makes one matched and one
 * mismatched indirect call. Its kCFI check's ud2 is listed in the
 * module's __kcfi_traps section; a WARN's ud2 is not (it is in
 * __bug_table), and that is how the kernel tells the two apart.
 */
#include <linux/bug.h>
#include <linux/init.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

static int counter;

static bool mismatch = true;
module_param(mismatch, bool, 0444);
MODULE_PARM_DESC(mismatch, "make the mismatched call (default: yes)");

static bool warn;
module_param(warn, bool, 0444);
MODULE_PARM_DESC(warn, "also hit a WARN, a ud2 that is not a CFI trap");

static noinline void traps_increment(int *c)
{
	(*c)++;
}

static noinline long traps_increment_long(long *c)
{
	return ++(*c);
}

/* The indirect call: clang puts a kCFI check in front of it. */
static noinline void traps_call(void (*fn)(int *))
{
	fn(&counter);
}

static noinline void traps_warn(void)
{
	WARN(1, "kcfi_lab_traps: a WARN is a ud2 too\n");
}

static int __init kcfi_lab_traps_init(void)
{
	pr_info("kcfi_lab_traps: calling void (*)(int *) with a matching target ...\n");
	traps_call(traps_increment);
	if (warn)
		traps_warn();
	if (mismatch) {
		pr_info("kcfi_lab_traps: calling it with a long (long *) target ...\n");
		traps_call((void *)traps_increment_long);
		pr_err("kcfi_lab_traps: FAIL: survived the mismatched call\n");
	}
	pr_info("kcfi_lab_traps: loaded, counter = %d\n", counter);
	return 0;
}

static void __exit kcfi_lab_traps_exit(void)
{
}

module_init(kcfi_lab_traps_init);
module_exit(kcfi_lab_traps_exit);
MODULE_DESCRIPTION("KCFI Lab: a kCFI trap in a module");
MODULE_LICENSE("GPL");
