// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: placeholder entry point; replaced by the real module.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

static int __init fmm_init(void)
{
	pr_info("loaded\n");
	return 0;
}

static void __exit fmm_exit(void)
{
	pr_info("unloaded\n");
}

module_init(fmm_init);
module_exit(fmm_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("flexible mmap layout");
