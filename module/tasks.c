// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: /proc/flexmmap/tasks and /proc/flexmmap/self, and the count of
 * module mms where nothing tracks them.
 *
 *	/proc/flexmmap/tasks	"PID MODE ALLOCATOR nx=N COMM" per process
 *				the reader may see in that /proc; N is
 *				followed by m or M when the binary's
 *				user.pax.flags changed the mode (mark.c)
 *	/proc/flexmmap/self	the reader's own line
 *
 * A line says no more than that /proc would: "PID - - - -" for a process
 * whose /proc/PID the reader may not open (hidepid=1), "PID - - - COMM"
 * for one it may not ptrace-read, or that is in the middle of an exec.
 * A reader never waits on another process's locks: what would need a
 * wait is shown as "-", so neither the reader nor an rmmod waiting for it
 * can be held up by an exec that itself waits, for as long as a user
 * likes, on an mmap lock (a fault on a FUSE file whose server stalls).
 *
 * control.c creates the files with the show functions below; this file
 * reads each process's record and calls nothing of the module's above it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/pid_namespace.h>
#include <linux/proc_fs.h>
#include <linux/ptrace.h>
#include <linux/seq_file.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/string.h>
#include <linux/string_helpers.h>
#include "fmm.h"

/* The MODE column: what chose the allocator. */
static const char *fmm_mode_name(enum fmm_alloc a, enum fmm_reason why)
{
	if (a == FMM_ALLOC_OTHER)
		return "other";
	if (!fmm_alloc_is_module(a))
		return "kernel";
	if (why == FMM_REASON_AUTO)
		return "auto";
	return fmm_alloc_is_bottomup(a) ? "legacy" : "flexible";
}

/*
 * After nx=N: the user.pax.flags letter that applied, if one did (m: 3
 * became 2; M: 3 whatever the mode was).
 */
static const char *fmm_nx_marking(int nx)
{
	if (!(nx & FMM_NX_MARKED))
		return "";
	return (nx & FMM_NX_MODE) == FLEXMMAP_NX_WXORX ? "M" : "m";
}

/*
 * The first thread of @p that has an mm, with a reference, or NULL: a
 * zombie leader has none, its live threads still share one.  As
 * mm/oom_kill.c's find_lock_task_mm() (not exported), but unlocked: the
 * mm may be gone by the time the caller locks the thread again.
 */
static struct task_struct *fmm_get_task_mm_thread(struct task_struct *p)
{
	struct task_struct *t, *found = NULL;

	rcu_read_lock();
	for_each_thread(p, t) {
		task_lock(t);
		if (t->mm) {
			get_task_struct(t);
			found = t;
		}
		task_unlock(t);
		if (found)
			break;
	}
	rcu_read_unlock();
	return found;
}

/*
 * @p's line, @nr its PID in the reader's /proc, @named whether the reader
 * may open /proc/@nr there (fmm_pid_allowed()): if not, its PID alone.
 * The values come from its first thread with an mm, and only for a reader
 * that may ptrace-read that thread (PTRACE_MODE_READ_FSCREDS, as
 * /proc/PID/maps); "-" otherwise.  COMM is escaped as in /proc/PID/status,
 * and its blanks too: one line, 5 fields.
 */
static void fmm_task_line(struct seq_file *m, struct task_struct *p, int nr,
			  bool named)
{
	struct task_struct *found = fmm_get_task_mm_thread(p);
	char comm[TASK_COMM_LEN];
	enum fmm_reason why = FMM_REASON_NONE;
	enum fmm_alloc a = FMM_ALLOC_OTHER;
	bool has_mm, access = false;
	int nx = 0;

	if (!found)
		return;
	if (!named) {
		put_task_struct(found);
		seq_printf(m, "%d - - - -\n", nr);
		return;
	}

	/*
	 * As lock_trace() in fs/proc/base.c, no exec (of a setuid program,
	 * say) between the check and the reading; but only if the lock is
	 * free.  An exec holds it for writing while it waits for its old
	 * mm's lock, which a stalled fault can keep for ever: "-" then.
	 * The check takes task_lock() itself, and is not for RCU read-side
	 * sections.
	 */
	if (down_read_trylock(&found->signal->exec_update_lock)) {
		access = fmm_ptrace_may_access(found, PTRACE_MODE_READ_FSCREDS);
		task_lock(found);
		has_mm = found->mm;
		if (has_mm && access) {
			a = fmm_mm_alloc(found->mm);
			why = fmm_mm_reason(found->mm);
			nx = fmm_mm_nx(found->mm);
		}
		strscpy(comm, found->comm, sizeof(comm));
		task_unlock(found);
		up_read(&found->signal->exec_update_lock);
	} else {
		/* The name is not behind the lock (/proc/PID/comm reads it so). */
		task_lock(found);
		has_mm = found->mm;
		strscpy(comm, found->comm, sizeof(comm));
		task_unlock(found);
	}
	put_task_struct(found);
	if (!has_mm)
		return;

	if (access)
		seq_printf(m, "%d %s %s nx=%d%s ", nr, fmm_mode_name(a, why),
			   fmm_alloc_name(a), nx & FMM_NX_MODE,
			   fmm_nx_marking(nx));
	else
		seq_printf(m, "%d - - - ", nr);
	seq_escape_str(m, comm, ESCAPE_SPACE | ESCAPE_SPECIAL | ESCAPE_OCTAL,
		       " \t\n\v\f\r\\");
	seq_putc(m, '\n');
}

/*
 * The process of @ns with the lowest PID >= *@nr, with a reference, *@nr
 * set to that PID; NULL when there is none.  fs/proc/base.c's next_tgid(),
 * with find_ge_pid() spelled out.
 */
static struct task_struct *fmm_next_tgid(struct pid_namespace *ns, int *nr)
{
	struct task_struct *p = NULL;
	struct pid *pid;

	rcu_read_lock();
	while (!p && (pid = idr_get_next(&ns->idr, nr))) {
		p = pid_task(pid, PIDTYPE_TGID);
		if (p)
			get_task_struct(p);
		else
			(*nr)++;
	}
	rcu_read_unlock();
	return p;
}

/*
 * fs/proc/base.c's has_pid_permissions() (static there), the same on 6.1
 * and 6.12: whether that /proc lets the reader at @p, at hidepid level
 * @min: HIDEPID_INVISIBLE to list it (readdir), HIDEPID_NO_ACCESS to open
 * /proc/PID (proc_pid_permission()).  Without hidepid both hold.
 */
static bool fmm_pid_allowed(struct proc_fs_info *fs_info, struct task_struct *p,
			    enum proc_hidepid min)
{
	if (fs_info->hide_pid == HIDEPID_NOT_PTRACEABLE)
		return fmm_ptrace_may_access(p, PTRACE_MODE_READ_FSCREDS);
	if (fs_info->hide_pid < min)
		return true;
	if (in_group_p(fs_info->pid_gid))
		return true;
	return fmm_ptrace_may_access(p, PTRACE_MODE_READ_FSCREDS);
}

/*
 * The processes of the PID namespace of the /proc the file was opened in,
 * with their PIDs there, that this /proc lists for the reader: what
 * "ls /proc" shows, less the kernel threads and the processes without mm.
 */
int fmm_tasks_show(struct seq_file *m, void *v)
{
	struct proc_fs_info *fs_info = proc_sb_info(file_inode(m->file)->i_sb);
	struct task_struct *p;
	int nr = 1;

	while ((p = fmm_next_tgid(fs_info->pid_ns, &nr))) {
		if (!(p->flags & PF_KTHREAD) &&
		    fmm_pid_allowed(fs_info, p, HIDEPID_INVISIBLE))
			fmm_task_line(m, p, nr,
				      fmm_pid_allowed(fs_info, p,
						      HIDEPID_NO_ACCESS));
		put_task_struct(p);
		/* single_open() retries with a bigger buffer. */
		if (seq_has_overflowed(m))
			break;
		cond_resched();
		nr++;
	}
	return 0;
}

/* The reader's own line, with its PID in that /proc (none if it has none). */
int fmm_self_show(struct seq_file *m, void *v)
{
	struct pid_namespace *ns = proc_pid_ns(file_inode(m->file)->i_sb);
	int nr = task_tgid_nr_ns(current, ns);

	if (nr && !(current->flags & PF_KTHREAD))
		fmm_task_line(m, current->group_leader, nr, true);
	return 0;
}

#ifdef FMM_UNTRACKED
/*
 * The processes on our allocators now.  Nothing tracks them (exit is not
 * hooked), so count them.
 */
unsigned long fmm_track_count(void)
{
	struct task_struct *p, *t;
	unsigned long n = 0;

	rcu_read_lock();
	for_each_process(p) {
		if (p->flags & PF_KTHREAD)
			continue;
		t = fmm_get_task_mm_thread(p);
		if (!t)
			continue;
		task_lock(t);
		if (t->mm)
			n += fmm_alloc_is_module(fmm_mm_alloc(t->mm));
		task_unlock(t);
		put_task_struct(t);
	}
	rcu_read_unlock();
	return n;
}
#endif
