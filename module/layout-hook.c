// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the layout hook of a kernel built with patches/.
 *
 * Such a kernel (CONFIG_MMAP_LAYOUT) calls fmm_exec() itself at the start of
 * setup_arg_pages(), where the policy runs unchanged, and an mm put on one
 * of our allocators points at the kernel's trampoline,
 * mmap_layout_get_unmapped_area(), which pins this module around each call
 * into fmm_mm_get_area() (record-hook.c) and falls back to the kernel's allocator of the mm's
 * direction once we are unregistered.  The kernel places huge pages in
 * that direction too.  So none of the kprobes of kprobes.c are needed, and
 * nothing of track.c: no mm can be left pointing at our text, forked or
 * not, and unloading is just unregistering.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/mmap_layout.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include "fmm.h"

static const struct mmap_layout_ops fmm_layout_ops = {
	.owner = THIS_MODULE,
	.exec = fmm_exec,
	.get_unmapped_area = fmm_mm_get_area,
};

static int fmm_hook_install(void)
{
	int ret = mmap_layout_register(&fmm_layout_ops);

	if (ret)
		pr_err("cannot register the mmap layout (%d): another layout is loaded\n",
		       ret);
	return ret;
}

/*
 * Once unregistered, the kernel calls us no more, at exec or through the
 * trampoline, which pins the module around each call.  main.c still waits
 * for tasks in a W^X deny stub (module text) before the module goes.
 */
static void fmm_hook_stop_exec(void)
{
	mmap_layout_unregister(&fmm_layout_ops);
}

static void fmm_hook_show(struct seq_file *m)
{
	seq_puts(m, "layout_hook mmap_layout\n");
	/* A call from setup_arg_pages() cannot be missed, unlike a probe hit. */
	seq_puts(m, "missed_setup_arg_pages 0\n");
}

const struct fmm_backend fmm_backend = {
	.install = fmm_hook_install,
	.stop_exec = fmm_hook_stop_exec,
	.show = fmm_hook_show,
};
