// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the 2004 flexible mmap layout as a loadable module.
 *
 * Loading it hooks the exec path (see policy.c), in one of three ways
 * that Kbuild picks per kernel:
 * - stock 6.1: kprobes (kprobes.c), which also track fork and exit
 *   (track.c) and redirect x86's hugetlb placement; a managed process's
 *   mmap()s reach the module's allocators (alloc.c) through the
 *   mm->get_unmapped_area pointer, which the module sets;
 * - 6.1 built with patches/: the kernel's mmap layout hook (hook.c), whose
 *   trampoline calls the module and survives its unload;
 * - 6.10 and later (Debian 13's 6.12), which have no such pointer: an
 *   ftrace redirect of the kernel's two allocators (redirect.c), with the
 *   process's record in mm->flags (kapi.c).
 * mmap() itself is never hooked.
 *
 *	insmod flexmmap.ko [layout=0..3]
 *	sysctl vm.flexmmap_layout=N	# applies to programs exec'd afterwards
 *	cat /proc/flexmmap/stats /proc/flexmmap/tasks
 *	rmmod flexmmap			# safe while managed processes run
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/sched.h>
#include "fmm.h"

struct fmm_stats fmm_stats;

/*
 * Every hook's kprobe pre-handler.  Our probes sit on fentry calls, so
 * kprobes runs them from ftrace (ORIG_RAX 0).  Entered from an int3
 * instead (ORIG_RAX -1: a stale one under QEMU TCG, docs/qemu-int3.md),
 * finish as kprobe_ftrace_handler() does: resume after the fentry call.
 */
static int fmm_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct fmm_hook *h = container_of(p, struct fmm_hook, kp);
	int ret = h->pre(p, regs);

	if (ret || !kprobe_ftrace(p) || regs->orig_ax != -1)
		return ret;
	atomic_long_inc(&fmm_stats.stray_int3);
	instruction_pointer_set(regs,
				(unsigned long)p->addr + MCOUNT_INSN_SIZE);
	return 1;
}

NOKPROBE_SYMBOL(fmm_kprobe_pre);

static int fmm_hook_install(struct fmm_hook *h)
{
	int ret;

	if (h->absent)
		return 0;
	/* A kprobe must be cleared before it can be registered again. */
	memset(&h->kp, 0, sizeof(h->kp));
	h->kp.symbol_name = h->symbol;
	h->kp.pre_handler = fmm_kprobe_pre;
	ret = register_kprobe(&h->kp);
	if (ret) {
		pr_err("cannot hook %s (%d)\n", h->symbol, ret);
		return ret;
	}
	h->installed = true;
	return 0;
}

static void fmm_hook_remove(struct fmm_hook *h)
{
	if (!h->installed)
		return;
	unregister_kprobe(&h->kp);
	if (h->kp.nmissed)
		pr_warn("%s: %lu hit(s) missed\n", h->symbol, h->kp.nmissed);
	h->installed = false;
}

/* Install hooks[0..n) in order, all or nothing. */
int fmm_hooks_install(struct fmm_hook *hooks, int n)
{
	int i, ret;

	for (i = 0; i < n; i++) {
		ret = fmm_hook_install(&hooks[i]);
		if (ret)
			goto out_remove;
	}
	return 0;

out_remove:
	while (--i >= 0)
		fmm_hook_remove(&hooks[i]);
	return ret;
}

/* Remove hooks[0..n) in reverse order. */
void fmm_hooks_uninstall(struct fmm_hook *hooks, int n)
{
	while (--n >= 0)
		fmm_hook_remove(&hooks[n]);
}

/* For /proc/flexmmap/stats: probe hits missed (re-entrancy), per hook. */
void fmm_hooks_show_missed(struct seq_file *m, struct fmm_hook *hooks, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (hooks[i].absent)
			continue;
		seq_printf(m, "missed_%s %lu\n", hooks[i].symbol,
			   hooks[i].kp.nmissed);
	}
}

void fmm_hooks_show(struct seq_file *m)
{
	fmm_layout_hooks_show(m);
	fmm_nx_hooks_show(m);
}

/*
 * The order is the safety argument.  Load: the W^X hooks (for nx=3), then
 * the layout hooks with fork and exit tracking before the exec hook, and
 * only then the control files, through which a retarget can put a running
 * process on our allocators.  So every hook that can see a module mm is in
 * place before any write can create one, and an init that fails has
 * published nothing: its error path undoes hooks that no user could reach
 * but exec.  Unload: the control files first (unregistering the sysctls and
 * removing the /proc files wait for handlers already running), then the
 * layout hooks' own unload sequence (kprobes.c, hook.c, redirect.c), which
 * also ends the W^X hooks and waits for every task to leave module text.
 */
static int __init fmm_init(void)
{
	int ret;

	ret = fmm_kapi_init();
	if (ret)
		return ret;
	ret = fmm_nx_init();
	if (ret)
		return ret;
	ret = fmm_layout_hooks_install();
	if (ret)
		goto out_nx_exit;
	ret = fmm_control_init();
	if (ret)
		goto out_hooks_remove;
	pr_info("loaded, layout %d, nx %d\n", READ_ONCE(fmm_layout),
		READ_ONCE(fmm_nx));
	return 0;

out_hooks_remove:
	/* Execs may already be on our allocators: the full unload sequence. */
	fmm_layout_hooks_remove();
	return ret;
out_nx_exit:
	fmm_nx_exit();
	/* A task may be in a W^X deny stub (module text). */
	synchronize_rcu_tasks();
	return ret;
}

static void __exit fmm_exit(void)
{
	fmm_control_exit();
	fmm_layout_hooks_remove();
	pr_info("unloaded\n");
}

module_init(fmm_init);
module_exit(fmm_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("The flexmmap developers");
MODULE_DESCRIPTION("Flexible and legacy mmap layouts, chosen at exec");
/* The package version (debian/changelog); it also makes modpost record a
 * srcversion, which the DKMS test compares with the module under test.
 */
MODULE_VERSION("0.1");
