// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: what the kernel does not export, found through kallsyms at
 * load: ptrace_may_access() in every variant; stack_guard_gap,
 * mmap_min_addr and x86's va_align on a stock kernel (a kernel built with
 * patches/ exports the first two).  The records look up the kernel's
 * allocators through fmm_ksym().  Calls nothing of the module's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/security.h>
#include <asm/elf.h>
#include "fmm.h"

/* Not exported by any kernel: found through kallsyms in every variant. */
static bool (*fmm_k_ptrace_may_access)(struct task_struct *task,
				       unsigned int mode);

static unsigned long (*fmm_kallsyms_lookup_name)(const char *name);

/*
 * kallsyms_lookup_name() is not exported since 5.7; a kprobe registered
 * on it by name tells us where it is.  Registered disabled, it is never
 * armed: nothing to disarm, which can fail (probe.c) and would leave this
 * stack variable in the kernel's kprobe table.
 */
static int fmm_find_kallsyms(void)
{
	struct kprobe kp = {
		.symbol_name = "kallsyms_lookup_name",
		.flags = KPROBE_FLAG_DISABLED,
	};
	int ret;

	ret = register_kprobe(&kp);
	if (ret < 0) {
		pr_err("cannot find kallsyms_lookup_name (%d)\n", ret);
		return ret;
	}
	fmm_kallsyms_lookup_name = (void *)kp.addr;
	unregister_kprobe(&kp);
	return 0;
}

/* @name's address, or -ENOENT with a log line. */
int fmm_ksym(const char *name, unsigned long *addr)
{
	*addr = fmm_kallsyms_lookup_name(name);
	if (!*addr) {
		pr_err("kernel symbol %s not found\n", name);
		return -ENOENT;
	}
	return 0;
}

/* ptrace_may_access(): @task's lock must not be held. */
bool fmm_ptrace_may_access(struct task_struct *task, unsigned int mode)
{
	return fmm_k_ptrace_may_access(task, mode);
}

#ifdef FMM_HAVE_LAYOUT_HOOK
unsigned long fmm_stack_guard_gap(void)
{
	return READ_ONCE(stack_guard_gap);
}

unsigned long fmm_mmap_min_addr(void)
{
	return max(PAGE_ALIGN(READ_ONCE(mmap_min_addr)), PAGE_SIZE);
}

/* get_align_mask() is not exported: no AMD family 15h alignment. */
static const struct va_alignment *const fmm_k_va_align;
#else /* !FMM_HAVE_LAYOUT_HOOK */
/* Kernel objects we need but the kernel does not export. */
static unsigned long *fmm_k_stack_guard_gap;
static unsigned long *fmm_k_mmap_min_addr;
static struct va_alignment *fmm_k_va_align;

unsigned long fmm_stack_guard_gap(void)
{
	return READ_ONCE(*fmm_k_stack_guard_gap);
}

/* The lowest address an allocator may hand out. */
unsigned long fmm_mmap_min_addr(void)
{
	return max(PAGE_ALIGN(READ_ONCE(*fmm_k_mmap_min_addr)), PAGE_SIZE);
}
#endif /* FMM_HAVE_LAYOUT_HOOK */

/* What is looked up at load, in this order; an optional one may be absent. */
static const struct {
	const char *name;
	void *addr;
	bool optional;
} fmm_ksyms[] = {
	{ "ptrace_may_access", &fmm_k_ptrace_may_access },
#ifndef FMM_HAVE_LAYOUT_HOOK
	{ "stack_guard_gap", &fmm_k_stack_guard_gap },
	{ "mmap_min_addr", &fmm_k_mmap_min_addr },
	/* Only AMD family 15h uses it; without it we simply do not align. */
	{ "va_align", &fmm_k_va_align, true },
#endif
};

int fmm_ksyms_init(void)
{
	unsigned long a;
	int i, ret;

	ret = fmm_find_kallsyms();
	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(fmm_ksyms); i++) {
		if (fmm_ksyms[i].optional)
			a = fmm_kallsyms_lookup_name(fmm_ksyms[i].name);
		else if (fmm_ksym(fmm_ksyms[i].name, &a))
			return -ENOENT;
		*(unsigned long *)fmm_ksyms[i].addr = a;
	}
	return 0;
}

/* x86's va_align (AMD family 15h), or NULL: then nothing is aligned. */
const struct va_alignment *fmm_va_align(void)
{
	return fmm_k_va_align;
}
