// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the NX policy, vm.flexmmap_nx (and nx=, control.c).
 *
 *	0 kernel	leave the kernel's choice
 *	1 legacy-exec	the 2004 rule: a binary without PT_GNU_STACK gets
 *			READ_IMPLIES_EXEC and an executable stack, 64-bit too
 *	2 strict	no READ_IMPLIES_EXEC and no executable stack at exec,
 *			whatever the binary asks
 *	3 W^X		strict, and no memory writable and executable at once,
 *			nor executable after it has been writable
 *
 * Modes 0-2 act only at exec, from the same setup_arg_pages() hook as the
 * layout (policy.c calls fmm_nx_exec() first).  It runs after the ELF loader
 * has read PT_GNU_STACK and set READ_IMPLIES_EXEC for old 32-bit binaries,
 * and before the stack's flags are computed and the image is mapped, so
 * changing the personality and the executable_stack argument there decides
 * both.
 *
 * Mode 3 also marks the mm at exec (record-*.c: exec clears the mark, fork
 * copies it), and arms the W^X probes (wx.c) before it can mark anyone,
 * disarming them once it no longer can.
 *
 * On a 32-bit PAE kernel that drops NX (pae-nx.c) no mode but 0 means
 * anything without the correction: the first mode other than 0 (or binary
 * marked M) arms it, before it applies to anyone, until unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/binfmts.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/personality.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/sysctl.h>
#include "fmm.h"

/* vm.flexmmap_nx and nx= (control.c): read at each exec. */
int fmm_nx = FLEXMMAP_NX_KERNEL;
/* Serialises mode changes with the arming of the W^X probes. */
static DEFINE_MUTEX(fmm_nx_mutex);

/*
 * "Once per binary": the last few binaries reported, by device and inode,
 * so a program exec'd in a loop logs once, not once per exec.
 */
#define FMM_NX_SEEN 16

static struct {
	dev_t dev;
	unsigned long ino;
} fmm_nx_seen[FMM_NX_SEEN];
static unsigned int fmm_nx_seen_next;
static DEFINE_RAW_SPINLOCK(fmm_nx_seen_lock);

static bool fmm_nx_first_report(struct file *file)
{
	struct inode *inode = file_inode(file);
	unsigned long flags;
	bool first = true;
	int i;

	raw_spin_lock_irqsave(&fmm_nx_seen_lock, flags);
	for (i = 0; i < FMM_NX_SEEN; i++) {
		if (fmm_nx_seen[i].dev == inode->i_sb->s_dev &&
		    fmm_nx_seen[i].ino == inode->i_ino) {
			first = false;
			break;
		}
	}
	if (first) {
		fmm_nx_seen[fmm_nx_seen_next].dev = inode->i_sb->s_dev;
		fmm_nx_seen[fmm_nx_seen_next].ino = inode->i_ino;
		fmm_nx_seen_next = (fmm_nx_seen_next + 1) % FMM_NX_SEEN;
	}
	raw_spin_unlock_irqrestore(&fmm_nx_seen_lock, flags);
	return first;
}

/* Count a downgrade; log it once per binary, rate-limited. */
static void fmm_nx_report_downgrade(int mode, struct file *file,
				    const char *what)
{
	char name[FMM_NAME_MAX];
	int len;

	atomic_long_inc(&fmm_stats.nx_downgraded);
	if (!fmm_nx_first_report(file))
		return;
	len = fmm_file_name(name, file);
	pr_info_ratelimited("nx=%d: %*pE asked for %s: not given\n", mode, len,
			    name, what);
}

/*
 * Called by fmm_exec() at the start of setup_arg_pages(bprm, stack_top,
 * executable_stack), before the layout is decided.  *@executable_stack
 * becomes setup_arg_pages()'s argument.
 */
void fmm_nx_exec(struct linux_binprm *bprm, int *executable_stack_p, char pax)
{
	int executable_stack = *executable_stack_p;
	int mode = READ_ONCE(fmm_nx);
	const char *what = NULL;
	int marked = 0;

	/*
	 * The binary's user.pax.flags (mark.c): M is mode 3, whose probes the
	 * marking armed before this exec could get here, and marked whatever
	 * the mode was (complain mode spares no M binary); m is 3 without W^X.
	 */
	if (pax == 'M') {
		mode = FLEXMMAP_NX_WXORX;
		marked = FMM_NX_MARKED;
	} else if (pax == 'm' && mode == FLEXMMAP_NX_WXORX) {
		mode = FLEXMMAP_NX_STRICT;
		marked = FMM_NX_MARKED;
	}
	/* What /proc/flexmmap/tasks reports, and, for 3, the W^X mark. */
	if (current->mm)
		fmm_mm_set_nx(current->mm, mode | marked);
	switch (mode) {
	case FLEXMMAP_NX_LEGACY_EXEC:
		if (executable_stack != EXSTACK_DEFAULT)
			return;
		/* Also the stack: its default flags follow the personality. */
		current->personality |= READ_IMPLIES_EXEC;
		atomic_long_inc(&fmm_stats.nx_legacy_exec);
		return;
	case FLEXMMAP_NX_STRICT:
	case FLEXMMAP_NX_WXORX:
		break;
	default:
		return;
	}

	if (current->personality & READ_IMPLIES_EXEC) {
		current->personality &= ~READ_IMPLIES_EXEC;
		what = executable_stack == EXSTACK_DEFAULT ?
			       "READ_IMPLIES_EXEC (no PT_GNU_STACK)" :
			       "READ_IMPLIES_EXEC (inherited)";
	}
	if (executable_stack == EXSTACK_ENABLE_X)
		what = "an executable stack (PT_GNU_STACK RWX)";
	*executable_stack_p = EXSTACK_DISABLE_X;
	if (what)
		fmm_nx_report_downgrade(mode, bprm->file, what);
	if (mode == FLEXMMAP_NX_WXORX)
		atomic_long_inc(&fmm_stats.wx_exec);
}

NOKPROBE_SYMBOL(fmm_nx_exec);

/* Called by the fork probe, under oldmm's mmap lock. */
void fmm_nx_fork(struct mm_struct *oldmm, struct mm_struct *newmm)
{
	int mode = fmm_mm_nx(oldmm);

	/* mm_init() has cleared the record of newmm. */
	if (mode)
		fmm_mm_set_nx(newmm, mode);
}

NOKPROBE_SYMBOL(fmm_nx_fork);

/*
 * Set once a binary marked M (user.pax.flags) has been exec'd: from then on
 * until unload the W^X probes stay armed whatever the mode, as such a
 * process may still run.
 */
static bool fmm_nx_marked_wx;

/*
 * From the markings' binfmt handler (mark.c), in process context, for a
 * binary marked M, before its exec can reach the exec hook.
 */
int fmm_nx_arm_marked(void)
{
	int ret;

	if (READ_ONCE(fmm_nx_marked_wx))
		return 0;
	mutex_lock(&fmm_nx_mutex);
	ret = fmm_pae_nx_arm();
	if (!ret)
		ret = fmm_wx_arm();
	if (!ret)
		WRITE_ONCE(fmm_nx_marked_wx, true);
	mutex_unlock(&fmm_nx_mutex);
	if (ret)
		pr_err_ratelimited("pax M: cannot arm its probes (%d)\n", ret);
	return ret;
}

/*
 * Arm before mode 3 can mark anyone; disarm once it can no longer (and no
 * binary marked M has run).  The PAE NX correction, once armed, stays.
 */
static int fmm_nx_set(int mode)
{
	int ret = 0;

	mutex_lock(&fmm_nx_mutex);
	if (mode != FLEXMMAP_NX_KERNEL)
		ret = fmm_pae_nx_arm();
	if (!ret && mode == FLEXMMAP_NX_WXORX)
		ret = fmm_wx_arm();
	if (!ret) {
		WRITE_ONCE(fmm_nx, mode);
		if (mode != FLEXMMAP_NX_WXORX && !fmm_nx_marked_wx)
			fmm_wx_disarm();
	}
	mutex_unlock(&fmm_nx_mutex);
	if (ret)
		pr_err("vm.flexmmap_nx=%d: cannot arm its probes (%d); mode stays %d\n",
		       mode, ret, READ_ONCE(fmm_nx));
	return ret;
}

int fmm_nx_sysctl(FMM_CTL_CONST struct ctl_table *table, int write,
		  void *buffer, size_t *lenp, loff_t *ppos)
{
	struct ctl_table t = *table;
	int mode = write ? -1 : READ_ONCE(fmm_nx);
	int ret;

	if (write && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	/*
	 * A write that parses no value (proc_dointvec ignores one at a non-zero
	 * offset) leaves -1 there: it must change nothing, not re-apply a value
	 * read before a concurrent writer's change.
	 */
	t.data = &mode;
	ret = proc_dointvec_minmax(&t, write, buffer, lenp, ppos);
	if (ret || !write || mode < 0)
		return ret;
	return fmm_nx_set(mode);
}

/*
 * At load: nx=3 arms the W^X probes, any mode but 0 the PAE NX correction,
 * before the exec hook goes in.
 */
int fmm_nx_init(void)
{
	return fmm_nx != FLEXMMAP_NX_KERNEL ? fmm_nx_set(fmm_nx) : 0;
}

/*
 * At unload, after the control files and the exec hook are gone: nothing
 * marks any more.  The caller waits for tasks in the W^X deny stubs (wx.c)
 * to leave.
 */
void fmm_nx_exit(void)
{
	mutex_lock(&fmm_nx_mutex);
	fmm_wx_disarm();
	fmm_nx_marked_wx = false;
	mutex_unlock(&fmm_nx_mutex);
}
