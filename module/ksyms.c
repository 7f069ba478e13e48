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
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysctl.h>
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

static int fmm_ksyms_kdata(bool use_kallsyms)
{
	return 0;
}

const char *fmm_ksyms_source(void)
{
	return "exported";
}
#else /* !FMM_HAVE_LAYOUT_HOOK */
/* Kernel objects we need but the kernel does not export. */
static unsigned long *fmm_k_stack_guard_gap;
static unsigned long *fmm_k_mmap_min_addr;
static unsigned long *fmm_k_dac_mmap_min_addr;
static struct va_alignment *fmm_k_va_align;

unsigned long fmm_stack_guard_gap(void)
{
	return READ_ONCE(*fmm_k_stack_guard_gap);
}

/*
 * The lowest address an allocator may hand out.  Without mmap_min_addr
 * itself, it is what update_mmap_min_addr() (security/min_addr.c) makes of
 * vm.mmap_min_addr's dac_mmap_min_addr.
 */
unsigned long fmm_mmap_min_addr(void)
{
	unsigned long a;

	if (fmm_k_mmap_min_addr) {
		a = READ_ONCE(*fmm_k_mmap_min_addr);
	} else {
		a = READ_ONCE(*fmm_k_dac_mmap_min_addr);
#ifdef CONFIG_LSM_MMAP_MIN_ADDR
		a = max_t(unsigned long, a, CONFIG_LSM_MMAP_MIN_ADDR);
#endif
	}
	return max(PAGE_ALIGN(a), PAGE_SIZE);
}

/*
 * A kernel built without CONFIG_KALLSYMS_ALL (Debian's 686-pae) lists its
 * functions in kallsyms but no data.  Our two data symbols have other ways
 * in, taken there (and with kallsyms_data=0, to test them anywhere).
 */
static bool fmm_kdata_from_proc;

/* Read a /proc file into @buf, NUL-terminated: its length or -errno. */
static ssize_t fmm_read_proc(const char *path, char *buf, size_t size)
{
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, buf, size - 1, &pos);
	filp_close(f, NULL);
	if (n >= 0)
		buf[n] = '\0';
	if (n == size - 1)
		return -E2BIG;
	return n;
}

/*
 * stack_guard_gap is set at boot only, by the last "stack_guard_gap=PAGES"
 * among the kernel's parameters (those before "--") whose value is a number
 * alone (mm/mmap.c); otherwise it is 256 pages.
 */
static unsigned long fmm_boot_stack_guard_gap = 256UL << PAGE_SHIFT;

static int fmm_find_stack_guard_gap(void)
{
	char *buf, *p, *arg;
	unsigned long v;
	size_t len;
	ssize_t n;

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	n = fmm_read_proc("/proc/cmdline", buf, PAGE_SIZE);
	if (n < 0) {
		pr_err("stack_guard_gap: cannot read /proc/cmdline (%zd)\n", n);
		kfree(buf);
		return n;
	}
	strreplace(buf, '\n', ' ');
	p = buf;
	while ((arg = strsep(&p, " "))) {
		if (!strcmp(arg, "--"))
			break;
		len = str_has_prefix(arg, "stack_guard_gap=");
		if (len && !kstrtoul(arg + len, 10, &v))
			fmm_boot_stack_guard_gap = v << PAGE_SHIFT;
	}
	kfree(buf);
	fmm_k_stack_guard_gap = &fmm_boot_stack_guard_gap;
	return 0;
}

/*
 * vm.mmap_min_addr's ctl_table points at dac_mmap_min_addr, and its
 * handler is a function: a kprobe on it catches the table while we read the
 * file once.  The value read must be the value pointed at.
 */
static int fmm_min_addr_pre(struct kprobe *p, struct pt_regs *regs)
{
	const struct ctl_table *t = (void *)fmm_regs_get_argument(regs, 0);

	if (!READ_ONCE(fmm_k_dac_mmap_min_addr))
		WRITE_ONCE(fmm_k_dac_mmap_min_addr, t->data);
	return 0;
}

NOKPROBE_SYMBOL(fmm_min_addr_pre);

static struct fmm_probe fmm_min_addr_probe[] = {
	{ .symbol = "mmap_min_addr_handler", .pre = fmm_min_addr_pre },
};

static int fmm_find_dac_mmap_min_addr(void)
{
	char buf[32];
	unsigned long v;
	ssize_t n;
	int ret;

	ret = fmm_probes_install(fmm_min_addr_probe, 1);
	if (ret)
		return ret;
	n = fmm_read_proc("/proc/sys/vm/mmap_min_addr", buf, sizeof(buf));
	fmm_probes_remove(fmm_min_addr_probe, 1);
	if (n < 0) {
		pr_err("mmap_min_addr: cannot read /proc/sys/vm/mmap_min_addr (%zd)\n",
		       n);
		return n;
	}
	if (!fmm_k_dac_mmap_min_addr || kstrtoul(strim(buf), 10, &v) ||
	    v != READ_ONCE(*fmm_k_dac_mmap_min_addr)) {
		pr_err("mmap_min_addr: vm.mmap_min_addr's table not found\n");
		fmm_k_dac_mmap_min_addr = NULL;
		return -ENOENT;
	}
	return 0;
}

/* The two data symbols from kallsyms, or else from /proc. */
static int fmm_ksyms_kdata(bool use_kallsyms)
{
	int ret;

	if (use_kallsyms) {
		fmm_k_stack_guard_gap =
			(void *)fmm_kallsyms_lookup_name("stack_guard_gap");
		fmm_k_mmap_min_addr =
			(void *)fmm_kallsyms_lookup_name("mmap_min_addr");
	}
	if (fmm_k_stack_guard_gap && fmm_k_mmap_min_addr)
		return 0;
	pr_info("the kernel's data from /proc: %s\n",
		use_kallsyms ? "kallsyms lists none (CONFIG_KALLSYMS_ALL=n)" :
			       "kallsyms_data=0");
	fmm_k_stack_guard_gap = NULL;
	fmm_k_mmap_min_addr = NULL;
	fmm_kdata_from_proc = true;
	ret = fmm_find_stack_guard_gap();
	if (ret)
		return ret;
	return fmm_find_dac_mmap_min_addr();
}

/* Where stack_guard_gap and mmap_min_addr come from, for the stats. */
const char *fmm_ksyms_source(void)
{
	return fmm_kdata_from_proc ? "proc" : "kallsyms";
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
	/* Only AMD family 15h uses it; without it we simply do not align. */
	{ "va_align", &fmm_k_va_align, true },
#endif
};

/* @use_kallsyms false: the kernel's data as if kallsyms listed none. */
int fmm_ksyms_init(bool use_kallsyms)
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
	return fmm_ksyms_kdata(use_kallsyms);
}

/* x86's va_align (AMD family 15h), or NULL: then nothing is aligned. */
const struct va_alignment *fmm_va_align(void)
{
	return fmm_k_va_align;
}
