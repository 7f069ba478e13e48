// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the control surface, every knob of the module.
 *
 *	vm.flexmmap_layout (and layout=)  0 kernel, 1 legacy, 2 flexible, 3 auto
 *	vm.flexmmap_nx (and nx=)          0 kernel, 1 legacy-exec, 2 strict, 3 W^X
 *	vm.flexmmap_retarget (write-only) "PID MODE": a running process's
 *	                                  future mmaps, MODE kernel|legacy|flexible
 *	vm.flexmmap_wx_complain           1: W^X refusals allowed and recorded
 *	  (and wx_complain=)
 *	/proc/flexmmap/wx_complaints      their records (CAP_SYS_ADMIN; a write
 *	                                  empties them: complain.c)
 *	/proc/flexmmap/stats              counters, "name value" per line
 *	/proc/flexmmap/tasks              "PID MODE ALLOCATOR nx=N COMM" per process
 *	                                  the reader may see in that /proc
 *	/proc/flexmmap/self               the reader's own line
 *
 * The layout applies to programs exec'd after the write; running processes
 * keep the allocator they were given.  The values live below (fmm_layout in
 * policy.c, fmm_nx in nx.c), the tasks and self files' contents in tasks.c;
 * this file creates the files and removes them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/stringify.h>
#include <linux/sysctl.h>
#include "fmm.h"

/* A parameter is an int in [0, max]; anything else fails insmod with help. */
static int fmm_param_set(const char *val, const struct kernel_param *kp,
			 int min, int max, const char *help)
{
	int v, ret;

	ret = kstrtoint(val, 0, &v);
	if (ret || v < min || v > max) {
		pr_err("%s=%s: must be %s\n", kp->name, val, help);
		return -EINVAL;
	}
	*(int *)kp->arg = v;
	return 0;
}

static int fmm_param_set_layout(const char *val, const struct kernel_param *kp)
{
	const char *help = "0 (kernel), 1 (legacy), 2 (flexible) or 3 (auto)";

	return fmm_param_set(val, kp, 0, FLEXMMAP_LAYOUT_MAX, help);
}

static const struct kernel_param_ops fmm_layout_ops = {
	.set = fmm_param_set_layout,
	.get = param_get_int,
};

/* Read-only in sysfs: the sysctl is the one place to change it. */
module_param_cb(layout, &fmm_layout_ops, &fmm_layout, 0444);
/* clang-format off */
MODULE_PARM_DESC(layout,
		 "initial vm.flexmmap_layout: 0 kernel, 1 legacy, 2 flexible, 3 auto (2004 policy, default)");
/* clang-format on */

static int fmm_param_set_nx(const char *val, const struct kernel_param *kp)
{
	const char *help = "0 (kernel), 1 (legacy-exec), 2 (strict) or 3 (W^X)";

	return fmm_param_set(val, kp, 0, FLEXMMAP_NX_MAX, help);
}

static const struct kernel_param_ops fmm_nx_ops = {
	.set = fmm_param_set_nx,
	.get = param_get_int,
};

/* Read-only in sysfs: the sysctl is the one place to change it. */
module_param_cb(nx, &fmm_nx_ops, &fmm_nx, 0444);
/* clang-format off */
MODULE_PARM_DESC(nx,
		 "initial vm.flexmmap_nx: 0 kernel (default), 1 legacy-exec, 2 strict, 3 W^X");
/* clang-format on */

static int fmm_param_set_complain(const char *val,
				  const struct kernel_param *kp)
{
	return fmm_param_set(val, kp, 0, 1, "0 (enforce) or 1 (complain)");
}

static const struct kernel_param_ops fmm_complain_ops = {
	.set = fmm_param_set_complain,
	.get = param_get_int,
};

/* Read-only in sysfs: the sysctl is the one place to change it. */
module_param_cb(wx_complain, &fmm_complain_ops, &fmm_wx_complain, 0444);
/* clang-format off */
MODULE_PARM_DESC(wx_complain,
		 "initial vm.flexmmap_wx_complain: 0 W^X refuses (default), 1 W^X allows and records what it would refuse (complain.c)");
/* clang-format on */

/*
 * For tests: find stack_guard_gap and mmap_min_addr as on a kernel whose
 * kallsyms lists no data (ksyms.c); a kernel built with patches/ exports
 * both, and this changes nothing there.
 */
bool fmm_kallsyms_data = true;
module_param_named(kallsyms_data, fmm_kallsyms_data, bool, 0444);
/* clang-format off */
MODULE_PARM_DESC(kallsyms_data,
		 "0: read the kernel's data from /proc, as without CONFIG_KALLSYMS_ALL (tests)");
/* clang-format on */

module_param_named(markings, fmm_mark_enable, bool, 0444);
/* clang-format off */
MODULE_PARM_DESC(markings,
		 "0: read no per-binary markings (user.flexmmap.layout, user.pax.flags) at exec (mark.c)");
/* clang-format on */

#ifndef FMM_UNTRACKED
static const char fmm_track_max_help[] =
	__stringify(FMM_TRACK_MAX_MIN) " to " __stringify(FMM_TRACK_MAX_MAX);

static int fmm_param_set_track_max(const char *val,
				   const struct kernel_param *kp)
{
	return fmm_param_set(val, kp, FMM_TRACK_MAX_MIN, FMM_TRACK_MAX_MAX,
			     fmm_track_max_help);
}

static const struct kernel_param_ops fmm_track_max_ops = {
	.set = fmm_param_set_track_max,
	.get = param_get_int,
};

module_param_cb(track_max, &fmm_track_max_ops, &fmm_track_max, 0444);
/* clang-format off */
MODULE_PARM_DESC(track_max,
		 "the most processes on the module's allocators at once, 64 to 4194304 (default: the kernel's default threads-max; their entries are allocated at load: track.c)");
/* clang-format on */
#endif

#ifdef FMM_HAVE_PAE_NX
static int fmm_param_set_pae_nx(const char *val, const struct kernel_param *kp)
{
	const char *help = "0 (off), 1 (with the NX policy) or 2 (from load)";

	return fmm_param_set(val, kp, 0, FMM_PAE_NX_LOAD, help);
}

static const struct kernel_param_ops fmm_pae_nx_ops = {
	.set = fmm_param_set_pae_nx,
	.get = param_get_int,
};

module_param_cb(pae_nx, &fmm_pae_nx_ops, &fmm_pae_nx_enable, 0444);
/* clang-format off */
MODULE_PARM_DESC(pae_nx,
		 "where a 32-bit PAE kernel's vm_get_page_prot() drops NX, set it again: 0 never, 1 from the first vm.flexmmap_nx mode other than 0 (default), 2 from load (pae-nx.c)");
/* clang-format on */
#endif

static int fmm_layout_max = FLEXMMAP_LAYOUT_MAX;

static const char *const fmm_retarget_names[] = {
	[FLEXMMAP_LAYOUT_KERNEL] = "kernel",
	[FLEXMMAP_LAYOUT_LEGACY] = "legacy",
	[FLEXMMAP_LAYOUT_FLEXIBLE] = "flexible",
};

/* "kernel", "legacy", "flexible" or 0..2; -1 for anything else. */
static int fmm_parse_retarget_mode(const char *s)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(fmm_retarget_names); i++)
		if (!strcmp(s, fmm_retarget_names[i]) ||
		    (s[0] == '0' + i && !s[1]))
			return i;
	return -1;
}

static const char fmm_retarget_usage[] =
	"expected \"PID MODE\", MODE kernel, legacy or flexible (auto is decided at exec only)";

/* Log why a request was refused (rate-limited); return @err. */
static int fmm_retarget_refused(int nr, int err, const char *why)
{
	if (nr)
		pr_info_ratelimited("flexmmap_retarget: PID %d: %s\n", nr, why);
	else
		pr_info_ratelimited("flexmmap_retarget: %s\n", why);
	return err;
}

/*
 * "PID MODE": two tokens separated by blanks, a trailing newline allowed.
 * The PID is decimal, positive and fits an int (kstrtoint: no truncation,
 * no junk); "1legacy" or "1 legacy x" is refused.  @buf is modified.
 */
static int fmm_parse_retarget(char *buf, int *nr, int *mode)
{
	char *s = strim(buf), *pid_tok, *mode_tok;

	pid_tok = strsep(&s, " \t");
	if (!s)
		return -EINVAL;
	mode_tok = skip_spaces(s);
	if (!*mode_tok || strpbrk(mode_tok, " \t\n"))
		return -EINVAL;
	if (kstrtoint(pid_tok, 10, nr) || *nr <= 0)
		return -EINVAL;
	*mode = fmm_parse_retarget_mode(mode_tok);
	return *mode < 0 ? -EINVAL : 0;
}

/*
 * vm.flexmmap_retarget, write-only: "PID MODE" switches a running process's
 * allocator for its future mmaps (see fmm_retarget()).  One whole write per
 * request; the reason for a refusal goes to the kernel log as well as errno.
 */
static int fmm_retarget_sysctl(FMM_CTL_CONST struct ctl_table *table, int write,
			       void *buffer, size_t *lenp, loff_t *ppos)
{
	int nr, mode, ret;

	if (!write)
		return -EINVAL;
	if (*ppos)
		return fmm_retarget_refused(0, -EINVAL,
					    "write \"PID MODE\" at once");
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	/* The handler gets a NUL-terminated kernel copy of the write. */
	if (fmm_parse_retarget(buffer, &nr, &mode))
		return fmm_retarget_refused(0, -EINVAL, fmm_retarget_usage);
	ret = fmm_retarget(nr, mode);
	switch (ret) {
	case 0:
		pr_info("flexmmap_retarget: PID %d now on %s for its future mmaps\n",
			nr, fmm_retarget_names[mode]);
		*ppos += *lenp;
		break;
	case -ESRCH:
		return fmm_retarget_refused(nr, ret,
					    "no such process with an mm");
	case -EINVAL:
		return fmm_retarget_refused(nr, ret, "a kernel thread");
	case -EBUSY:
		return fmm_retarget_refused(nr, ret, "another module's");
	case -EAGAIN:
		return fmm_retarget_refused(nr, ret,
					    "its mmap lock stays held");
	}
	return ret;
}

/*
 * vm.flexmmap_layout: as proc_dointvec_minmax, for CAP_SYS_ADMIN in the
 * initial user namespace only, like vm.flexmmap_nx and _retarget: root
 * inside a user namespace, or a uid 0 without the capability, is refused.
 */
static int fmm_layout_sysctl(FMM_CTL_CONST struct ctl_table *table, int write,
			     void *buffer, size_t *lenp, loff_t *ppos)
{
	if (write && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return proc_dointvec_minmax(table, write, buffer, lenp, ppos);
}

static int fmm_nx_max = FLEXMMAP_NX_MAX;

/* vm.flexmmap_wx_complain: 0 or 1, written by CAP_SYS_ADMIN as the others. */
static int fmm_complain_sysctl(FMM_CTL_CONST struct ctl_table *table, int write,
			       void *buffer, size_t *lenp, loff_t *ppos)
{
	int old = READ_ONCE(fmm_wx_complain), ret;

	if (write && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = proc_dointvec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && write && READ_ONCE(fmm_wx_complain) != old)
		pr_info("vm.flexmmap_wx_complain %d: W^X %s\n",
			READ_ONCE(fmm_wx_complain),
			READ_ONCE(fmm_wx_complain) ?
				"allows and records what it would refuse" :
				"refuses");
	return ret;
}

static struct ctl_table fmm_sysctls[] = {
	{
		.procname = "flexmmap_layout",
		.data = &fmm_layout,
		.maxlen = sizeof(int),
		.mode = 0644,
		.proc_handler = fmm_layout_sysctl,
		.extra1 = SYSCTL_ZERO,
		.extra2 = &fmm_layout_max,
	},
	{
		.procname = "flexmmap_nx",
		.data = &fmm_nx,
		.maxlen = sizeof(int),
		.mode = 0644,
		.proc_handler = fmm_nx_sysctl,
		.extra1 = SYSCTL_ZERO,
		.extra2 = &fmm_nx_max,
	},
	{
		.procname = "flexmmap_retarget",
		.mode = 0200,
		.proc_handler = fmm_retarget_sysctl,
	},
	{
		.procname = "flexmmap_wx_complain",
		.data = &fmm_wx_complain,
		.maxlen = sizeof(int),
		.mode = 0644,
		.proc_handler = fmm_complain_sysctl,
		.extra1 = SYSCTL_ZERO,
		.extra2 = SYSCTL_ONE,
	},
	{}
};

static struct ctl_table_header *fmm_sysctl_header;
static struct proc_dir_entry *fmm_proc_dir;

/* The kprobe tables' missed_ counters: the layout hooks', then W^X's. */
static void fmm_probes_show(struct seq_file *m)
{
	fmm_backend.show(m);
	fmm_wx_probes_show(m);
	fmm_pae_nx_probes_show(m);
}

static int fmm_stats_show(struct seq_file *m, void *v)
{
	seq_printf(m, "layout %d\n", READ_ONCE(fmm_layout));
	seq_printf(m, "kernel_data %s\n", fmm_ksyms_source());
	seq_printf(m, "stack_guard_gap %lu\n", fmm_stack_guard_gap());
	seq_printf(m, "mmap_min_addr %lu\n", fmm_mmap_min_addr());
	seq_printf(m, "exec_kernel %ld\n",
		   atomic_long_read(&fmm_stats.exec_kernel));
	seq_printf(m, "exec_legacy %ld\n",
		   atomic_long_read(&fmm_stats.exec_legacy));
	seq_printf(m, "exec_flexible %ld\n",
		   atomic_long_read(&fmm_stats.exec_flexible));
	seq_printf(m, "exec_unknown %ld\n",
		   atomic_long_read(&fmm_stats.exec_unknown));
	seq_printf(m, "mms_module %lu\n", fmm_track_count());
	seq_printf(m, "fork_inherit %ld\n",
		   atomic_long_read(&fmm_stats.fork_inherit));
	seq_printf(m, "fork_fixup %ld\n",
		   atomic_long_read(&fmm_stats.fork_fixup));
	seq_printf(m, "fallback %ld\n", atomic_long_read(&fmm_stats.fallback));
	seq_printf(m, "hugetlb %ld\n", atomic_long_read(&fmm_stats.hugetlb));
	seq_printf(m, "retarget %ld\n", atomic_long_read(&fmm_stats.retarget));
	seq_printf(m, "nx %d\n", READ_ONCE(fmm_nx));
	seq_printf(m, "wx_armed %d\n", fmm_wx_armed());
	fmm_pae_nx_show(m);
	seq_printf(m, "nx_legacy_exec %ld\n",
		   atomic_long_read(&fmm_stats.nx_legacy_exec));
	seq_printf(m, "nx_downgraded %ld\n",
		   atomic_long_read(&fmm_stats.nx_downgraded));
	seq_printf(m, "wx_exec %ld\n", atomic_long_read(&fmm_stats.wx_exec));
	seq_printf(m, "wx_denied_mmap %ld\n",
		   atomic_long_read(&fmm_stats.wx_denied_mmap));
	seq_printf(m, "wx_denied_mprotect %ld\n",
		   atomic_long_read(&fmm_stats.wx_denied_mprotect));
	seq_printf(m, "wx_denied_personality %ld\n",
		   atomic_long_read(&fmm_stats.wx_denied_personality));
	seq_printf(m, "wx_denied_shmat %ld\n",
		   atomic_long_read(&fmm_stats.wx_denied_shmat));
	seq_printf(m, "wx_denied_uffd %ld\n",
		   atomic_long_read(&fmm_stats.wx_denied_uffd));
	seq_printf(m, "wx_denied_mem %ld\n",
		   atomic_long_read(&fmm_stats.wx_denied_mem));
	seq_printf(m, "wx_complain %d\n", READ_ONCE(fmm_wx_complain));
	seq_printf(m, "wx_complained %ld\n",
		   atomic_long_read(&fmm_stats.wx_complained));
	seq_printf(m, "wx_complaints_dropped %ld\n",
		   atomic_long_read(&fmm_stats.wx_complaints_dropped));
	seq_printf(m, "stray_int3 %ld\n",
		   atomic_long_read(&fmm_stats.stray_int3));
	fmm_mark_show(m);
	seq_printf(m, "mark_layout %ld\n",
		   atomic_long_read(&fmm_stats.mark_layout));
	seq_printf(m, "mark_pax %ld\n", atomic_long_read(&fmm_stats.mark_pax));
	seq_printf(m, "mark_malformed %ld\n",
		   atomic_long_read(&fmm_stats.mark_malformed));
	seq_printf(m, "mark_untrusted %ld\n",
		   atomic_long_read(&fmm_stats.mark_untrusted));
	seq_printf(m, "mark_dropped %ld\n",
		   atomic_long_read(&fmm_stats.mark_dropped));
	fmm_probes_show(m);
	return 0;
}

int fmm_control_init(void)
{
	fmm_proc_dir = proc_mkdir("flexmmap", NULL);
	if (!fmm_proc_dir) {
		pr_err("cannot create /proc/flexmmap\n");
		return -ENOMEM;
	}
	if (!proc_create_single("stats", 0444, fmm_proc_dir, fmm_stats_show) ||
	    !proc_create_single("tasks", 0444, fmm_proc_dir, fmm_tasks_show) ||
	    !proc_create_single("self", 0444, fmm_proc_dir, fmm_self_show) ||
	    !proc_create("wx_complaints", 0600, fmm_proc_dir,
			 &fmm_complaints_ops)) {
		pr_err("cannot create /proc/flexmmap files\n");
		goto out_remove_proc;
	}
	fmm_sysctl_header =
		fmm_register_vm_sysctls(fmm_sysctls, ARRAY_SIZE(fmm_sysctls));
	if (!fmm_sysctl_header) {
		pr_err("cannot register vm.flexmmap_layout\n");
		goto out_remove_proc;
	}
	return 0;

out_remove_proc:
	proc_remove(fmm_proc_dir);
	return -ENOMEM;
}

void fmm_control_exit(void)
{
	unregister_sysctl_table(fmm_sysctl_header);
	proc_remove(fmm_proc_dir);
}
