// SPDX-License-Identifier: GPL-2.0
/*
 * KCFI Lab, exercise 15: a module whose type ids are hashed with FNV-1a,
 * as an object from GCC's KCFI would be, loaded into a kernel whose
 * clang hashed with xxHash64. The kernel calls the module's init through
 * a pointer (do_one_initcall()), and the module calls back into the
 * kernel through one: the prototypes match, the ids do not.
 */
#include <linux/init.h>
#include <linux/module.h>
#include <linux/string.h>

/* A kernel function of a simple type, called through a pointer. */
static size_t (*volatile fnv_strlen)(const char *) = strlen;

static int __init kcfi_lab_fnv_init(void)
{
	pr_info("kcfi_lab_fnv: init runs; calling strlen() through a pointer ...\n");
	pr_info("kcfi_lab_fnv: strlen(\"kcfi\") = %zu\n", fnv_strlen("kcfi"));
	return 0;
}

static void __exit kcfi_lab_fnv_exit(void)
{
}

module_init(kcfi_lab_fnv_init);
module_exit(kcfi_lab_fnv_exit);
MODULE_DESCRIPTION("KCFI Lab: a module hashed with FNV-1a in an xxHash64 kernel");
MODULE_LICENSE("GPL");
