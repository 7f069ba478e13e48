// SPDX-License-Identifier: GPL-2.0
/*
 * A negative control for the test suite, not part of flexmmap: a module
 * called flexmmap with the real one's interface (the layout= and nx=
 * parameters, vm.flexmmap_layout, _nx and _retarget, /proc/flexmmap/stats,
 * tasks and self) that changes nothing.  Every write is accepted and
 * remembered, no process is ever touched, and the tasks file says every
 * process is on the kernel's top-down allocator.  "make check-donothing"
 * runs the guest suite with FMM_KO pointing at it: the results that still
 * pass are those that would pass whatever the module did.
 */
#include <linux/module.h>
#include <linux/pid_namespace.h>
#include <linux/proc_fs.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/sysctl.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define DN_CONST const
#else
#define DN_CONST
#endif

static int dn_layout = 3;
static int dn_nx;
module_param_named(layout, dn_layout, int, 0444);
module_param_named(nx, dn_nx, int, 0444);

static int dn_retarget(DN_CONST struct ctl_table *table, int write,
		       void *buffer, size_t *lenp, loff_t *ppos)
{
	*ppos += *lenp;
	return 0;
}

/* clang-format off */
static struct ctl_table dn_sysctls[] = {
	{
		.procname = "flexmmap_layout",
		.data = &dn_layout,
		.maxlen = sizeof(int),
		.mode = 0644,
		.proc_handler = proc_dointvec,
	},
	{
		.procname = "flexmmap_nx",
		.data = &dn_nx,
		.maxlen = sizeof(int),
		.mode = 0644,
		.proc_handler = proc_dointvec,
	},
	{
		.procname = "flexmmap_retarget",
		.mode = 0200,
		.proc_handler = dn_retarget,
	},
	{}
};

/* clang-format on */

static const char *const dn_stats[] = {
	"exec_kernel",
	"exec_legacy",
	"exec_flexible",
	"exec_unknown",
	"mms_module",
	"fork_inherit",
	"fork_fixup",
	"fallback",
	"hugetlb",
	"retarget",
	"wx_armed",
	"nx_legacy_exec",
	"nx_downgraded",
	"wx_exec",
	"wx_denied_mmap",
	"wx_denied_mprotect",
	"wx_denied_personality",
	"wx_denied_shmat",
	"wx_denied_uffd",
	"wx_denied_mem",
	"wx_complain",
	"wx_complained",
	"wx_complaints_dropped",
	"stray_int3",
};

static int dn_stats_show(struct seq_file *m, void *v)
{
	int i;

	seq_printf(m, "layout %d\nnx %d\n", dn_layout, dn_nx);
	for (i = 0; i < ARRAY_SIZE(dn_stats); i++)
		seq_printf(m, "%s 0\n", dn_stats[i]);
	return 0;
}

static void dn_line(struct seq_file *m, struct task_struct *p, int nr)
{
	seq_printf(m, "%d kernel kernel-topdown nx=0 %s\n", nr, p->comm);
}

static int dn_tasks_show(struct seq_file *m, void *v)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	struct task_struct *p;

	rcu_read_lock();
	for_each_process(p) {
		int nr = task_tgid_nr_ns(p, ns);

		if (nr && !(p->flags & PF_KTHREAD))
			dn_line(m, p, nr);
	}
	rcu_read_unlock();
	return 0;
}

static int dn_self_show(struct seq_file *m, void *v)
{
	dn_line(m, current, task_tgid_vnr(current));
	return 0;
}

static struct ctl_table_header *dn_header;
static struct proc_dir_entry *dn_dir;

static int __init dn_init(void)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
	dn_header = register_sysctl_sz("vm", dn_sysctls,
				       ARRAY_SIZE(dn_sysctls) - 1);
#else
	dn_header = register_sysctl("vm", dn_sysctls);
#endif
	if (!dn_header)
		return -ENOMEM;
	dn_dir = proc_mkdir("flexmmap", NULL);
	if (!dn_dir ||
	    !proc_create_single("stats", 0444, dn_dir, dn_stats_show) ||
	    !proc_create_single("tasks", 0444, dn_dir, dn_tasks_show) ||
	    !proc_create_single("self", 0444, dn_dir, dn_self_show)) {
		proc_remove(dn_dir);
		unregister_sysctl_table(dn_header);
		return -ENOMEM;
	}
	pr_info("flexmmap: loaded, layout %d, nx %d\n", dn_layout, dn_nx);
	return 0;
}

static void __exit dn_exit(void)
{
	proc_remove(dn_dir);
	unregister_sysctl_table(dn_header);
}

module_init(dn_init);
module_exit(dn_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("flexmmap's do-nothing negative control (tests only)");
