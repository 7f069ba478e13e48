// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: W^X complain mode, vm.flexmmap_wx_complain (and wx_complain=).
 *
 * With 1, a W^X process whose operation the probes of wx.c would refuse
 * gets it, and the refusal it would have had is recorded here: one record
 * per program and kind of refusal (the call, what was refused, the kind
 * of memory), with a count, the protection before and after, the mapping
 * that holds the calling instruction where it can be told and the last
 * uid.  No record has a marking: an M binary is refused, an m binary is
 * not under W^X.  /proc/flexmmap/wx_complaints shows them
 * to CAP_SYS_ADMIN of the initial user namespace (the paths and uids of
 * every user's programs); a write there empties the table.  A process
 * whose binary is marked M never gets complain mode's leniency: the
 * marking asks for W^X whatever the administrator is learning.
 *
 * The records are a fixed table (FMM_COMPLAINTS_MAX): the probes run with
 * preemption off and may not allocate, nor take a sleeping lock on
 * PREEMPT_RT, so a raw spinlock guards a few stores, and a full table
 * counts what it could not keep (wx_complaints_dropped).  So that no user
 * can fill it for everyone, a uid other than root may own (have made) at
 * most FMM_COMPLAINTS_PER_UID records, and those uids together leave
 * FMM_COMPLAINTS_ROOT records to root's programs.  The program is
 * held as a reference on its mm's exe_file, taken under RCU without
 * sleeping; its path is formatted by the reader, and the references are
 * dropped in process context: when the table is emptied and at unload,
 * after the RCU-tasks wait, when no probe can be adding one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/proc_fs.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include "fmm.h"

int fmm_wx_complain;

#define FMM_COMPLAINTS_MAX 256
#define FMM_COMPLAINTS_PER_UID 32
#define FMM_COMPLAINTS_ROOT 64

/**
 * struct fmm_complaint - one program's refusals of one kind, allowed
 * @exe: the program (a reference on its mm's exe_file), NULL if free
 * @dev: its file system's device
 * @ino: its inode number
 * @call: the refused call ("mmap", "mprotect", ...), a static string
 * @what: what was refused ("PROT_WRITE|PROT_EXEC", ...), a static string
 * @of: the kind of memory, a static string ("a file" when NULL)
 * @old: the mapping's protection before (PROT_* bits), -1 when none
 * @prot: the protection asked for (PROT_* bits)
 * @caller: the mapping holding the calling instruction, or "?"
 * @uid: the uid of the last process it happened to
 * @owner: the uid of the first, whose quota it counts in
 * @count: how many times
 */
struct fmm_complaint {
	struct file *exe;
	dev_t dev;
	unsigned long ino;
	const char *call;
	const char *what;
	const char *of;
	long old;
	unsigned long prot;
	char caller[FMM_NAME_MAX];
	kuid_t uid;
	kuid_t owner;
	unsigned long count;
};

static struct fmm_complaint fmm_complaints[FMM_COMPLAINTS_MAX];
static DEFINE_RAW_SPINLOCK(fmm_complaints_lock);

/*
 * The mapping of current's user instruction pointer: its file's name,
 * "anonymous" or "[special]".  @locked: current holds its mm's mmap lock
 * (mprotect, a fill of its own mm); else a try-lock of the rw_semaphore
 * itself (no tracepoint hooks: see wx.c's zeropage check), "?" when it is
 * contended.
 */
static void fmm_complaint_caller(char *buf, bool locked)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long ip;

	strscpy(buf, "?", FMM_NAME_MAX);
	if (!mm || (current->flags & PF_KTHREAD))
		return;
	ip = instruction_pointer(task_pt_regs(current));
	if (!locked && !down_read_trylock(&mm->mmap_lock))
		return;
	vma = find_vma(mm, ip);
	if (vma && vma->vm_start <= ip) {
		if (vma->vm_file)
			fmm_file_name(buf, vma->vm_file);
		else if (vma_is_anonymous(vma))
			strscpy(buf, "anonymous", FMM_NAME_MAX);
		else
			strscpy(buf, "[special]", FMM_NAME_MAX);
	}
	if (!locked)
		up_read(&mm->mmap_lock);
}

NOKPROBE_SYMBOL(fmm_complaint_caller);

static bool fmm_complaint_is(const struct fmm_complaint *c,
			     const struct inode *inode,
			     const struct fmm_wx_refusal *r)
{
	return c->exe && c->dev == inode->i_sb->s_dev &&
	       c->ino == inode->i_ino && c->call == r->call &&
	       c->what == r->what && c->of == r->of;
}

NOKPROBE_SYMBOL(fmm_complaint_is);

/*
 * Should @r be allowed and recorded rather than refused?  Yes in complain
 * mode, unless the W^X mm's program was marked M.  Any context a probe
 * runs in.
 */
bool fmm_wx_complaint(const struct fmm_wx_refusal *r)
{
	struct fmm_complaint *c, *free = NULL;
	kuid_t uid = current_uid();
	bool root = uid_eq(uid, GLOBAL_ROOT_UID);
	int i, mine = 0, users = 0;
	char caller[FMM_NAME_MAX];
	struct inode *inode;
	unsigned long flags;
	struct file *exe;

	if (!READ_ONCE(fmm_wx_complain) || (fmm_mm_nx(r->mm) & FMM_NX_MARKED))
		return false;
	atomic_long_inc(&fmm_stats.wx_complained);
	/*
	 * Only current's own mm has a calling instruction worth naming, and
	 * not during an exec (vm_brk_flags: the registers are still the old
	 * program's).  Nor with interrupts off (a probe entered from a stray
	 * int3): on PREEMPT_RT up_read()'s slow path would turn them on.
	 */
	if (r->mm == current->mm && !r->in_exec && !irqs_disabled())
		fmm_complaint_caller(caller, r->locked);
	else
		strscpy(caller, "-", sizeof(caller));
	rcu_read_lock();
	exe = fmm_get_exe_file_rcu(r->mm);
	rcu_read_unlock();
	if (!exe) {
		atomic_long_inc(&fmm_stats.wx_complaints_dropped);
		return true;
	}
	inode = file_inode(exe);
	raw_spin_lock_irqsave(&fmm_complaints_lock, flags);
	for (i = 0; i < FMM_COMPLAINTS_MAX; i++) {
		c = &fmm_complaints[i];
		if (fmm_complaint_is(c, inode, r))
			break;
		if (!c->exe) {
			if (!free)
				free = c;
			continue;
		}
		mine += uid_eq(c->owner, uid);
		users += !uid_eq(c->owner, GLOBAL_ROOT_UID);
	}
	if (!root && (mine >= FMM_COMPLAINTS_PER_UID ||
		      users >= FMM_COMPLAINTS_MAX - FMM_COMPLAINTS_ROOT))
		free = NULL;
	if (i < FMM_COMPLAINTS_MAX) {
		c->count++;
		c->uid = uid;
	} else if (free) {
		free->exe = exe;
		free->dev = inode->i_sb->s_dev;
		free->ino = inode->i_ino;
		free->call = r->call;
		free->what = r->what;
		free->of = r->of;
		free->old = r->old;
		free->prot = r->prot;
		memcpy(free->caller, caller, sizeof(caller));
		free->uid = uid;
		free->owner = uid;
		free->count = 1;
		exe = NULL;
	}
	raw_spin_unlock_irqrestore(&fmm_complaints_lock, flags);
	if (!exe)
		return true;
	if (i == FMM_COMPLAINTS_MAX)
		atomic_long_inc(&fmm_stats.wx_complaints_dropped);
	/*
	 * Not kept (the record had it already, or no room): fput() only
	 * queues the final release (task work, or a work item from a kernel
	 * thread), and another reference, the record's or the mm's, is held
	 * while this one is put.
	 */
	fput(exe);
	return true;
}

NOKPROBE_SYMBOL(fmm_wx_complaint);

/* Take every record's program out of the table, then put them. */
void fmm_complaints_clear(void)
{
	struct file *put[32];
	unsigned long flags;
	int i, n;

	do {
		n = 0;
		raw_spin_lock_irqsave(&fmm_complaints_lock, flags);
		for (i = 0; i < FMM_COMPLAINTS_MAX && n < ARRAY_SIZE(put);
		     i++) {
			if (!fmm_complaints[i].exe)
				continue;
			put[n++] = fmm_complaints[i].exe;
			fmm_complaints[i].exe = NULL;
		}
		raw_spin_unlock_irqrestore(&fmm_complaints_lock, flags);
		for (i = 0; i < n; i++)
			fput(put[i]);
	} while (n);
}

static void fmm_prot_str(char *s, long prot)
{
	if (prot < 0) {
		strscpy(s, "-", 4);
		return;
	}
	s[0] = (prot & PROT_READ) ? 'r' : '-';
	s[1] = (prot & PROT_WRITE) ? 'w' : '-';
	s[2] = (prot & PROT_EXEC) ? 'x' : '-';
	s[3] = '\0';
}

/* @s with every byte outside printable ASCII (the space is one), and "\\", as \ooo. */
static void fmm_seq_put_escaped(struct seq_file *m, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c >= ' ' && c < 0x7f && c != '\\')
			seq_putc(m, c);
		else
			seq_printf(m, "\\%03o", c);
	}
}

/*
 * One line per record, tab-separated: count, path (as d_path() names it
 * from the reader's root: a program of another mount namespace may show a
 * path that names another file here, so dev:ino is the identity; every
 * byte outside printable ASCII escaped), dev:ino, uid
 * (in the reader's user namespace), call, what was refused, the memory,
 * the protection before and asked for, the caller's mapping.
 * Each record is copied under the lock with a reference of its own, and
 * formatted outside it (d_path() may sleep).
 */
static const char fmm_complaints_header[] =
	"# count\tpath\tdev:ino\tuid\tcall\trefused\tmemory\told\tnew\tcaller\n";

static int fmm_complaints_show(struct seq_file *m, void *v)
{
	char *buf = kmalloc(PATH_MAX, GFP_KERNEL), *path;
	struct user_namespace *ns = seq_user_ns(m);
	struct fmm_complaint c;
	char old[4], prot[4];
	unsigned long flags;
	int i;

	seq_puts(m, fmm_complaints_header);
	for (i = 0; i < FMM_COMPLAINTS_MAX; i++) {
		raw_spin_lock_irqsave(&fmm_complaints_lock, flags);
		c = fmm_complaints[i];
		if (c.exe)
			get_file(c.exe);
		raw_spin_unlock_irqrestore(&fmm_complaints_lock, flags);
		if (!c.exe)
			continue;
		fmm_prot_str(old, c.old);
		fmm_prot_str(prot, c.prot);
		seq_printf(m, "%lu\t", c.count);
		path = buf ? d_path(&c.exe->f_path, buf, PATH_MAX) : NULL;
		fmm_seq_put_escaped(m, IS_ERR_OR_NULL(path) ? "?" : path);
		seq_printf(m, "\t%u:%u:%lu\t%u\t%s\t%s\t%s\t%s\t%s\t",
			   MAJOR(c.dev), MINOR(c.dev), c.ino,
			   from_kuid_munged(ns, c.uid), c.call, c.what,
			   c.of ? c.of : "a file", old, prot);
		fmm_seq_put_escaped(m, c.caller);
		seq_putc(m, '\n');
		fput(c.exe);
	}
	kfree(buf);
	return 0;
}

/* The records name every user's programs: CAP_SYS_ADMIN only. */
static int fmm_complaints_open(struct inode *inode, struct file *file)
{
	if (!file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN))
		return -EPERM;
	return single_open(file, fmm_complaints_show, NULL);
}

/* Any write empties the table (its opener could open it: CAP_SYS_ADMIN). */
static ssize_t fmm_complaints_write(struct file *file, const char __user *buf,
				    size_t count, loff_t *ppos)
{
	fmm_complaints_clear();
	return count;
}

const struct proc_ops fmm_complaints_ops = {
	.proc_open = fmm_complaints_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = fmm_complaints_write,
};
