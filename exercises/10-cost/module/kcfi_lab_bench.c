// SPDX-License-Identifier: GPL-2.0
/*
 * KCFI Lab, exercise 10: time a loop of kCFI-checked indirect calls
 * against the same loop in a __nocfi function. Under QEMU's TCG these
 * are emulation timings, not hardware cycles: compare the two numbers
 * with each other, never with a real CPU.
 */
#include <linux/init.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

static unsigned int loops = 10000000;
module_param(loops, uint, 0444);
MODULE_PARM_DESC(loops, "indirect calls per measurement (default 10000000)");

static int counter;

static noinline void bench_increment(int *c)
{
	(*c)++;
}

/* Opaque to the optimizer: the call cannot be turned into a direct one. */
static void (*volatile bench_target)(int *) = bench_increment;

static noinline u64 bench_checked(unsigned int n)
{
	u64 start = ktime_get_ns();

	while (n--)
		bench_target(&counter);
	return ktime_get_ns() - start;
}

static noinline __nocfi u64 bench_unchecked(unsigned int n)
{
	u64 start = ktime_get_ns();

	while (n--)
		bench_target(&counter);
	return ktime_get_ns() - start;
}

static int __init kcfi_lab_bench_init(void)
{
	u64 checked, unchecked;

	/* Warm up, then measure each loop once. */
	bench_checked(loops / 10 + 1);
	checked = bench_checked(loops);
	unchecked = bench_unchecked(loops);
	pr_info("kcfi_lab_bench: %u calls: checked %llu ns, unchecked (__nocfi) %llu ns\n",
		loops, checked, unchecked);
	pr_info("kcfi_lab_bench: per call: checked %llu.%02llu ns, unchecked %llu.%02llu ns (emulated CPU timings under TCG)\n",
		div_u64(checked, loops), div_u64(checked * 100, loops) % 100,
		div_u64(unchecked, loops), div_u64(unchecked * 100, loops) % 100);
	return 0;
}

/* Nothing to undo; rmmod kcfi_lab_bench, then insmod again to re-run. */
static void __exit kcfi_lab_bench_exit(void)
{
}

module_init(kcfi_lab_bench_init);
module_exit(kcfi_lab_bench_exit);
MODULE_DESCRIPTION("KCFI Lab: cost of a kCFI check");
MODULE_LICENSE("GPL");
