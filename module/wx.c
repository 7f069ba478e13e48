// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the W^X probes of vm.flexmmap_nx=3.
 *
 * A program exec'd under mode 3 has its mm marked (record-*.c: exec clears the
 * mark, fork copies it), and while mode 3 is on nx.c arms these probes:
 * security_mmap_file(), security_file_mprotect(), vm_brk_flags() (the ELF
 * loader's anonymous segments), personality() (64- and 32-bit),
 * security_shm_shmat(), userfaultfd's page fills,
 * access_remote_vm() (/proc/PID/mem) and ptrace_access_vm().
 *
 * The rule is about the memory object behind a mapping, not about the call
 * that reaches it: in a W^X process executable memory comes only from
 * regular files of mounted file systems, and only from those that were not
 * written through the mapping (fmm_wx_object()).  Anonymous memory, shared
 * memory of the kernel's internal mounts (SysV, memfd, shared anonymous,
 * /dev/zero, hugetlb), anon-inode files (io_uring, perf, bpf) and devices
 * can be written through another mapping, another process or a kernel
 * interface, so they never become executable; each probe that can give a
 * mapping VM_EXEC asks that one function.  Documentation/flexmmap.rst has
 * the table of objects and routes, which userspace-probes/fmm-wx.c tries.
 *
 * The probes decide before the function runs; a denial moves the
 * instruction pointer to a stub that returns the refusal to the caller, the
 * way kprobe error injection overrides a function.  No kretprobe is
 * involved, so nothing is allowed by running out of instances.  Each probe's
 * stub returns what its callers read as a refusal and leaves nothing in
 * hand (the table before fmm_wx_probes[]).  Leaving mode 3 disarms them:
 * processes started under it keep their non-executable stack but lose the
 * W^X checks until mode 3 is set again.
 *
 * nx.c arms and disarms the table; control.c shows whether it is armed and
 * its missed_ counters.  Below both, this file uses only the probe tables,
 * the record and the counters.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/mmap_lock.h>
#include <linux/mount.h>
#include <linux/personality.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/jobctl.h>
#include <linux/shm.h>
#include <linux/userfaultfd_k.h>
#include <linux/workqueue.h>
#include <uapi/linux/shm.h>
#include "fmm.h"
#include "trace.h"

/*
 * Where a refused call resumes instead of the probed function: each stub
 * returns to its caller what that caller reads as the refusal.
 */
static noinline long fmm_wx_eacces(void)
{
	return -EACCES;
}

/* For functions whose callers read 0 as "nothing done". */
static noinline long fmm_wx_zero(void)
{
	return 0;
}

/* A caller of the zeropage ioctl may retry on EAGAIN (mmap changing). */
static noinline long fmm_wx_eagain(void)
{
	return -EAGAIN;
}

#if IS_ENABLED(CONFIG_USERFAULTFD) && IS_ENABLED(CONFIG_HUGETLB_PAGE)
/*
 * The hugetlb fill, refused.  When the source page was not present, the
 * fill's caller drops the mmap lock, copies the source into a huge page
 * of its own and calls the fill again with that page in hand, and it
 * BUG()s if any return but -ENOENT leaves the page there.  So this stand-in
 * has the fill's own prototype (it runs in the fill's place, with the
 * fill's arguments) and puts the page as the fill's own error paths do.
 *
 * On PREEMPT_RT putting that page may sleep (freeing a huge page takes
 * hugetlb_lock, a sleeping lock there), and a task asleep in module text
 * looks quiescent to rmmod's RCU-tasks wait.  So there the stand-in hands
 * the page to a work item, which puts it outside any probe, and waits,
 * without sleeping, for a free slot when all are taken (a preempted task
 * is one RCU-tasks waits for); unload flushes the work once no task can
 * be in a stand-in (fmm_wx_flush()).
 */
#define FMM_WX_HELD_MAX 32
static void *fmm_wx_held[FMM_WX_HELD_MAX];
static DEFINE_RAW_SPINLOCK(fmm_wx_held_lock);

static void fmm_wx_put_held(struct work_struct *work)
{
	void *held[FMM_WX_HELD_MAX];
	unsigned long flags;
	int i;

	raw_spin_lock_irqsave(&fmm_wx_held_lock, flags);
	memcpy(held, fmm_wx_held, sizeof(held));
	memset(fmm_wx_held, 0, sizeof(fmm_wx_held));
	raw_spin_unlock_irqrestore(&fmm_wx_held_lock, flags);
	for (i = 0; i < FMM_WX_HELD_MAX; i++)
		if (held[i])
			fmm_uffd_put(held[i]);
}

static DECLARE_WORK(fmm_wx_held_work, fmm_wx_put_held);

static bool fmm_wx_defer_put(void *page)
{
	unsigned long flags;
	bool ret = false;
	int i;

	raw_spin_lock_irqsave(&fmm_wx_held_lock, flags);
	for (i = 0; i < FMM_WX_HELD_MAX && !ret; i++) {
		if (!fmm_wx_held[i]) {
			fmm_wx_held[i] = page;
			ret = true;
		}
	}
	raw_spin_unlock_irqrestore(&fmm_wx_held_lock, flags);
	schedule_work(&fmm_wx_held_work);
	return ret;
}

static noinline int fmm_wx_uffd_hugetlb_refused(FMM_UFFD_HUGETLB_PARAMS)
{
	if (*held && !IS_ENABLED(CONFIG_PREEMPT_RT))
		fmm_uffd_put(*held);
	else if (*held)
		while (!fmm_wx_defer_put(*held))
			cpu_relax();
	*held = NULL;
	return -EACCES;
}

void fmm_wx_flush(void)
{
	flush_work(&fmm_wx_held_work);
	fmm_wx_put_held(NULL);
}

#define FMM_WX_HUGETLB_STUB ((unsigned long)fmm_wx_uffd_hugetlb_refused)
#else
#define FMM_WX_HUGETLB_STUB ((unsigned long)fmm_wx_eacces)

void fmm_wx_flush(void)
{
}
#endif

/*
 * Refuse the probed call: count it (@counter may be NULL), run @stub, a
 * function whose return the caller takes for the probed function's.
 */
static int fmm_wx_deny_as(struct pt_regs *regs, atomic_long_t *counter,
			  unsigned long stub)
{
	if (counter)
		atomic_long_inc(counter);
	instruction_pointer_set(regs, stub);
	return 1;
}

NOKPROBE_SYMBOL(fmm_wx_deny_as);

/* Was this mm's program exec'd under nx=3? */
static bool fmm_mm_wx(struct mm_struct *mm)
{
	return mm && (fmm_mm_nx(mm) & FMM_NX_MODE) == FLEXMMAP_NX_WXORX;
}

/* As fs/exec.c's path_noexec(), which is not exported. */
static bool fmm_path_noexec(const struct path *path)
{
	return (path->mnt->mnt_flags & MNT_NOEXEC) ||
	       (path->mnt->mnt_sb->s_iflags & SB_I_NOEXEC);
}

/*
 * The kinds of memory object a mapping can be backed by, as W^X sees them:
 * a regular file of a mounted file system; anonymous memory, private or
 * shared; shared memory (SysV, memfd, shared anonymous, /dev/zero);
 * hugetlb memory (MAP_HUGETLB, MFD_HUGETLB, SHM_HUGETLB); any other file of
 * a kernel-internal mount; a character or block device; an anon inode
 * (io_uring, perf, bpf, ...); the kernel's own pages (the vDSO).  Only
 * files and the vDSO may be executable.
 */
enum fmm_wx_obj {
	FMM_OBJ_FILE,
	FMM_OBJ_ANON,
	FMM_OBJ_SHMEM,
	FMM_OBJ_HUGETLB,
	FMM_OBJ_INTERNAL,
	FMM_OBJ_DEVICE,
	FMM_OBJ_SPECIAL,
	FMM_OBJ_KERNEL,
};

static const char *const fmm_wx_obj_names[] = {
	[FMM_OBJ_FILE] = "a file",
	[FMM_OBJ_ANON] = "anonymous memory",
	[FMM_OBJ_SHMEM] = "shared memory",
	[FMM_OBJ_HUGETLB] = "hugetlb memory",
	[FMM_OBJ_INTERNAL] = "a kernel-internal file",
	[FMM_OBJ_DEVICE] = "a device",
	[FMM_OBJ_SPECIAL] = "a special file",
	[FMM_OBJ_KERNEL] = "the vDSO",
};

/* Files and the vDSO, judged by what was written through the mapping. */
static bool fmm_wx_obj_may_exec(enum fmm_wx_obj obj)
{
	return obj == FMM_OBJ_FILE || obj == FMM_OBJ_KERNEL;
}

/*
 * What @file is (NULL: anonymous).  A file of a kernel-internal mount
 * (kern_mount(): shm_mnt, the hugetlbfs and anon-inode mounts) has no path
 * in any namespace: its pages are reached through descriptors and
 * attaches, each of which may be writable; only files reached by name
 * in a mounted file system are under the control of noexec, IMA and the
 * file's own permissions.
 */
static enum fmm_wx_obj fmm_wx_object(struct file *file)
{
	struct inode *inode;
	unsigned long magic;

	if (!file)
		return FMM_OBJ_ANON;
	inode = file_inode(file);
	if (S_ISCHR(inode->i_mode) || S_ISBLK(inode->i_mode))
		return FMM_OBJ_DEVICE;
	if (!S_ISREG(inode->i_mode))
		return FMM_OBJ_SPECIAL;
	if (!(file->f_path.mnt->mnt_flags & MNT_INTERNAL))
		return FMM_OBJ_FILE;
	magic = inode->i_sb->s_magic;
	if (magic == TMPFS_MAGIC)
		return FMM_OBJ_SHMEM;
	if (magic == HUGETLBFS_MAGIC)
		return FMM_OBJ_HUGETLB;
	return FMM_OBJ_INTERNAL;
}

NOKPROBE_SYMBOL(fmm_wx_object);

/*
 * A vma's object: a vma without a file but with operations is a special
 * mapping (the vDSO), whose pages are the kernel's; it is judged by what
 * was written to it (fmm_vma_was_writable()), as a file is.
 */
static enum fmm_wx_obj fmm_wx_vma_object(struct vm_area_struct *vma)
{
	if (!vma->vm_file)
		return vma_is_anonymous(vma) ? FMM_OBJ_ANON : FMM_OBJ_KERNEL;
	return fmm_wx_object(vma->vm_file);
}

NOKPROBE_SYMBOL(fmm_wx_vma_object);

/*
 * The wx_denied trace event: the file's path, which d_path() finds without
 * sleeping, else its name as the log line gives it.  Not d_path() on
 * PREEMPT_RT: its retry takes rename_lock's spinlock, which sleeps there,
 * and probe handlers run with preemption off.  Out of line, so the buffer
 * is on the stack only while the event is being recorded.
 */
static noinline void fmm_wx_trace(const struct fmm_wx_refusal *r, bool allowed)
{
	char buf[256];
	const char *path = "(anonymous)";

	if (r->file) {
		path = ERR_PTR(-EAGAIN);
		if (!IS_ENABLED(CONFIG_PREEMPT_RT))
			path = d_path(&r->file->f_path, buf, sizeof(buf));
		if (IS_ERR(path)) {
			snprintf(buf, sizeof(buf), "%pD", r->file);
			path = buf;
		}
	}
	trace_wx_denied(r->call, r->prot, path, allowed);
}

NOKPROBE_SYMBOL(fmm_wx_trace);

/*
 * One log line per refusal, rate-limited: the binary (the mm's exe_file,
 * RCU-protected, so no reference is taken), its pid, the call, and what was
 * refused: the kind of object (our own words; none for a file, which its
 * name says) and the file mapped if any; the names escaped
 * (fmm_file_name()); "allowed (complain mode)" instead of "denied" when
 * complain mode let it through.  And a trace event, with the protection
 * asked for (PROT_* bits).
 */
#define FMM_WX_LOG "W^X: %*pE[%d]: %s(%s) "

static void fmm_wx_report(const struct fmm_wx_refusal *r, bool allowed)
{
	const char *end = allowed ? "allowed (complain mode)" : "denied";
	char exe[FMM_NAME_MAX], name[FMM_NAME_MAX];
	struct file *file = r->file;
	const char *of = r->of;
	int exe_len, len;

	if (trace_wx_denied_enabled())
		fmm_wx_trace(r, allowed);

	rcu_read_lock();
	exe_len = fmm_file_name(exe, rcu_dereference(current->mm->exe_file));
	rcu_read_unlock();
	len = file ? fmm_file_name(name, file) : 0;
	if (file && of)
		pr_warn_ratelimited(FMM_WX_LOG "of %s (%*pE) %s\n", exe_len,
				    exe, task_pid_nr(current), r->call, r->what,
				    of, len, name, end);
	else if (file)
		pr_warn_ratelimited(FMM_WX_LOG "of %*pE %s\n", exe_len, exe,
				    task_pid_nr(current), r->call, r->what, len,
				    name, end);
	else if (of)
		pr_warn_ratelimited(FMM_WX_LOG "of %s %s\n", exe_len, exe,
				    task_pid_nr(current), r->call, r->what, of,
				    end);
	else
		pr_warn_ratelimited(FMM_WX_LOG "%s\n", exe_len, exe,
				    task_pid_nr(current), r->call, r->what,
				    end);
}

NOKPROBE_SYMBOL(fmm_wx_report);

/*
 * The end of every W^X refusal: allowed and recorded in complain mode
 * (complain.c), else reported, counted in @counter and refused through
 * @stub.
 */
static int fmm_wx_refuse_as(struct pt_regs *regs,
			    const struct fmm_wx_refusal *r,
			    atomic_long_t *counter, unsigned long stub)
{
	if (fmm_wx_complaint(r)) {
		fmm_wx_report(r, true);
		return 0;
	}
	fmm_wx_report(r, false);
	return fmm_wx_deny_as(regs, counter, stub);
}

NOKPROBE_SYMBOL(fmm_wx_refuse_as);

static int fmm_wx_refuse(struct pt_regs *regs, const struct fmm_wx_refusal *r,
			 atomic_long_t *counter)
{
	return fmm_wx_refuse_as(regs, r, counter, (unsigned long)fmm_wx_eacces);
}

NOKPROBE_SYMBOL(fmm_wx_refuse);

/*
 * security_mmap_file(file, prot, flags): before the mapping exists.  Also
 * for shmat() (flags MAP_SHARED, the segment's file) and for the ELF
 * loader's own mappings.  @file is what the caller passed: /dev/zero's
 * shared mapping becomes shared memory only later, in its f_op->mmap, and
 * MAP_HUGETLB passes its hugetlb file with MAP_ANONYMOUS.
 */
static int fmm_wx_mmap_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct file *file = (void *)fmm_regs_get_argument(regs, 0);
	unsigned long prot = fmm_regs_get_argument(regs, 1);
	unsigned long flags = fmm_regs_get_argument(regs, 2);
	enum fmm_wx_obj obj;
	const char *why;
	struct fmm_wx_refusal r;

	if (!fmm_mm_wx(current->mm))
		return 0;
	/* The hook sees prot before do_mmap() applies READ_IMPLIES_EXEC. */
	if ((prot & PROT_READ) && (current->personality & READ_IMPLIES_EXEC) &&
	    !(file && fmm_path_noexec(&file->f_path)))
		prot |= PROT_EXEC;
	if (!(prot & PROT_EXEC))
		return 0;
	obj = (flags & MAP_ANONYMOUS) ? FMM_OBJ_ANON : fmm_wx_object(file);
	if (prot & PROT_WRITE)
		why = "PROT_WRITE|PROT_EXEC";
	else if (!fmm_wx_obj_may_exec(obj))
		why = "PROT_EXEC";
	else
		return 0;
	r = (struct fmm_wx_refusal){
		.mm = current->mm,
		.call = "mmap",
		.what = why,
		.of = obj == FMM_OBJ_FILE ? NULL : fmm_wx_obj_names[obj],
		.file = (flags & MAP_ANONYMOUS) ? NULL : file,
		.old = -1,
		.prot = prot,
	};
	return fmm_wx_refuse(regs, &r, &fmm_stats.wx_denied_mmap);
}

NOKPROBE_SYMBOL(fmm_wx_mmap_pre);

/* A vma's protection as PROT_* bits, for the trace event and complaints. */
static unsigned long fmm_vma_prot(struct vm_area_struct *vma)
{
	return ((vma->vm_flags & VM_READ) ? PROT_READ : 0) |
	       ((vma->vm_flags & VM_WRITE) ? PROT_WRITE : 0) |
	       ((vma->vm_flags & VM_EXEC) ? PROT_EXEC : 0);
}

NOKPROBE_SYMBOL(fmm_vma_prot);

/*
 * Has this mapping of a file been writable?  Writable now; private pages
 * written (an anon_vma exists once a page has been written or copied); or a
 * shared mapping of a file opened for writing.
 */
static bool fmm_vma_was_writable(struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_WRITE) || vma->anon_vma ||
	       (vma->vm_flags & (VM_SHARED | VM_MAYWRITE)) ==
		       (VM_SHARED | VM_MAYWRITE);
}

/*
 * security_file_mprotect(vma, reqprot, prot): prot already has
 * READ_IMPLIES_EXEC applied; the mmap lock is held for writing.  A mapping
 * that is executable already keeps it (mprotect(PROT_READ|PROT_EXEC) of
 * the program's own text); one that gains it must be a file's, never
 * written.
 */
static int fmm_wx_mprotect_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct vm_area_struct *vma = (void *)fmm_regs_get_argument(regs, 0);
	unsigned long prot = fmm_regs_get_argument(regs, 2);
	enum fmm_wx_obj obj;
	const char *why;
	struct fmm_wx_refusal r;

	if (!(prot & PROT_EXEC) || !fmm_mm_wx(current->mm))
		return 0;
	obj = fmm_wx_vma_object(vma);
	if (prot & PROT_WRITE)
		why = "PROT_WRITE|PROT_EXEC";
	else if (vma->vm_flags & VM_EXEC)
		return 0;
	else if (!fmm_wx_obj_may_exec(obj))
		why = "PROT_EXEC";
	else if (fmm_vma_was_writable(vma))
		why = "PROT_EXEC, memory that has been writable";
	else
		return 0;
	r = (struct fmm_wx_refusal){
		.mm = current->mm,
		.call = "mprotect",
		.what = why,
		.of = obj == FMM_OBJ_FILE ? NULL : fmm_wx_obj_names[obj],
		.file = vma->vm_file,
		.old = fmm_vma_prot(vma),
		.prot = prot,
		.locked = true,
	};
	return fmm_wx_refuse(regs, &r, &fmm_stats.wx_denied_mprotect);
}

NOKPROBE_SYMBOL(fmm_wx_mprotect_pre);

/*
 * vm_brk_flags(addr, len, flags): the ELF loader maps the part of a
 * segment that has no file bytes (all of it, for a PT_LOAD with p_filesz 0)
 * as anonymous memory, writable by default, with VM_EXEC for an executable
 * segment; no security hook sees it.  The exec then fails after its point
 * of no return (SIGSEGV), as for an RWX PT_LOAD.  vm_brk() passes no flags.
 */
static int fmm_wx_brk_pre(struct kprobe *p, struct pt_regs *regs)
{
	unsigned long flags = fmm_regs_get_argument(regs, 2);
	struct fmm_wx_refusal r;

	if (!(flags & VM_EXEC) || !fmm_mm_wx(current->mm))
		return 0;
	r = (struct fmm_wx_refusal){
		.mm = current->mm,
		.call = "vm_brk_flags",
		.in_exec = true,
		.what = "VM_EXEC",
		.of = fmm_wx_obj_names[FMM_OBJ_ANON],
		.old = -1,
		.prot = PROT_READ | PROT_EXEC,
	};
	return fmm_wx_refuse(regs, &r, &fmm_stats.wx_denied_mmap);
}

NOKPROBE_SYMBOL(fmm_wx_brk_pre);

/* brk() hands out executable memory under READ_IMPLIES_EXEC, unchecked. */
static int fmm_wx_personality(struct pt_regs *regs, unsigned int persona)
{
	if (persona == 0xffffffff || !(persona & READ_IMPLIES_EXEC) ||
	    !fmm_mm_wx(current->mm))
		return 0;
	struct fmm_wx_refusal r = {
		.mm = current->mm,
		.call = "personality",
		.what = "READ_IMPLIES_EXEC",
		.of = "readable memory",
		.old = -1,
		.prot = PROT_READ | PROT_EXEC,
	};
	return fmm_wx_refuse(regs, &r, &fmm_stats.wx_denied_personality);
}

NOKPROBE_SYMBOL(fmm_wx_personality);

/* The syscall wrappers take the user's registers as their argument. */
static int fmm_wx_personality64_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct pt_regs *uregs = (void *)fmm_regs_get_argument(regs, 0);

	return fmm_wx_personality(regs,
				  (unsigned int)fmm_syscall_arg0(uregs, false));
}

NOKPROBE_SYMBOL(fmm_wx_personality64_pre);

static int fmm_wx_personality32_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct pt_regs *uregs = (void *)fmm_regs_get_argument(regs, 0);

	return fmm_wx_personality(regs,
				  (unsigned int)fmm_syscall_arg0(uregs, true));
}

NOKPROBE_SYMBOL(fmm_wx_personality32_pre);

/*
 * security_shm_shmat(shp, shmaddr, shmflg): SHM_EXEC.  A segment attached
 * read-only and executable may have been written through another attach,
 * of this process or any other: refused whatever the other flags.
 */
static int fmm_wx_shmat_pre(struct kprobe *p, struct pt_regs *regs)
{
	int shmflg = fmm_regs_get_argument(regs, 2);
	unsigned long prot = PROT_READ | PROT_EXEC;
	struct fmm_wx_refusal r;

	if (!(shmflg & SHM_EXEC) || !fmm_mm_wx(current->mm))
		return 0;
	if (!(shmflg & SHM_RDONLY))
		prot |= PROT_WRITE;
	r = (struct fmm_wx_refusal){
		.mm = current->mm,
		.call = "shmat",
		.what = "SHM_EXEC",
		.of = "a System V segment",
		.old = -1,
		.prot = prot,
	};
	return fmm_wx_refuse(regs, &r, &fmm_stats.wx_denied_shmat);
}

NOKPROBE_SYMBOL(fmm_wx_shmat_pre);

/*
 * userfaultfd: UFFDIO_COPY, _CONTINUE and _ZEROPAGE fill a registered range
 * whatever its protection ("even without PROT_WRITE").  Both fill functions
 * run under the destination mm's mmap lock (6.1) or the vma's own lock
 * (6.8 on) with the vma in hand, so the vma's VM_EXEC cannot change
 * between this check and the fill (mprotect takes both for writing).  The
 * ioctl then fails with EACCES.  The anonymous ZEROPAGE maps the zero page
 * without them: see below.
 */
static int fmm_wx_uffd_check(struct pt_regs *regs, unsigned long stub)
{
	struct vm_area_struct *vma =
		(void *)fmm_regs_get_argument(regs, FMM_UFFD_VMA_ARG);
	struct fmm_wx_refusal r;

	if (!(vma->vm_flags & VM_EXEC) || !fmm_mm_wx(vma->vm_mm))
		return 0;
	/* The fill holds the mmap lock (6.1) or only the vma's (6.8 on). */
	r = (struct fmm_wx_refusal){
		.mm = vma->vm_mm,
		.call = "userfaultfd",
		.what = "UFFDIO_COPY/CONTINUE/ZEROPAGE",
		.of = vma->vm_file ? NULL : "executable anonymous memory",
		.file = vma->vm_file,
		.old = fmm_vma_prot(vma),
		.prot = fmm_vma_prot(vma),
		.locked = FMM_UFFD_FILL_MMAP_LOCKED &&
			  vma->vm_mm == current->mm,
	};
	return fmm_wx_refuse_as(regs, &r, &fmm_stats.wx_denied_uffd, stub);
}

NOKPROBE_SYMBOL(fmm_wx_uffd_check);

static int fmm_wx_uffd_pre(struct kprobe *p, struct pt_regs *regs)
{
	return fmm_wx_uffd_check(regs, (unsigned long)fmm_wx_eacces);
}

NOKPROBE_SYMBOL(fmm_wx_uffd_pre);

static int fmm_wx_uffd_hugetlb_pre(struct kprobe *p, struct pt_regs *regs)
{
	return fmm_wx_uffd_check(regs, FMM_WX_HUGETLB_STUB);
}

NOKPROBE_SYMBOL(fmm_wx_uffd_hugetlb_pre);

/*
 * The anonymous UFFDIO_ZEROPAGE (the zero page: no chosen bytes, but a
 * fill all the same) is checked at the ioctl's entry, where the mmap lock
 * is not held yet: a try-lock (kprobe handlers cannot sleep) to find the
 * vma, and EAGAIN when it is contended.  A vma swapped in between the check
 * and the fill gets zeros, never chosen bytes.
 */
static int fmm_wx_uffd_zeropage_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = fmm_uffd_zeropage_mm(regs);
	unsigned long start = fmm_regs_get_argument(regs, 1);
	unsigned long len = fmm_regs_get_argument(regs, 2);
	struct vm_area_struct *vma;
	bool exec;
	struct fmm_wx_refusal r;

	if (!len || start + len < start || !fmm_mm_wx(mm))
		return 0;
	/*
	 * The rw_semaphore itself, not mmap_read_trylock(): its tracepoint
	 * hooks look up the memcg's path under kernfs_rename_lock, a
	 * sleeping lock on PREEMPT_RT.
	 */
	if (!down_read_trylock(&mm->mmap_lock))
		return fmm_wx_deny_as(regs, NULL, (unsigned long)fmm_wx_eagain);
	vma = find_vma_intersection(mm, start, start + len);
	exec = vma && (vma->vm_flags & VM_EXEC);
	up_read(&mm->mmap_lock);
	if (!exec)
		return 0;
	r = (struct fmm_wx_refusal){
		.mm = mm,
		.call = "userfaultfd",
		.what = "UFFDIO_ZEROPAGE",
		.of = "executable memory",
		.old = -1,
		.prot = PROT_EXEC,
	};
	return fmm_wx_refuse(regs, &r, &fmm_stats.wx_denied_uffd);
}

NOKPROBE_SYMBOL(fmm_wx_uffd_zeropage_pre);

/*
 * access_remote_vm(mm, addr, buf, len, gup_flags): its writer is
 * /proc/PID/mem (and, since 6.9, ptrace_access_vm()), with FOLL_FORCE,
 * which writes through any protection.  Refused for a W^X mm whoever
 * writes: mem_rw() reads 0 as EIO.
 */
static int fmm_wx_mem_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = (void *)fmm_regs_get_argument(regs, 0);
	unsigned int gup_flags = fmm_regs_get_argument(regs, 4);
	struct fmm_wx_refusal r;

	if (!(gup_flags & FOLL_WRITE) || !fmm_mm_wx(mm))
		return 0;
	r = (struct fmm_wx_refusal){
		.mm = mm,
		.call = "/proc/PID/mem",
		.what = "write",
		.of = "a W^X process",
		.old = -1,
		.prot = PROT_WRITE,
	};
	return fmm_wx_refuse_as(regs, &r, &fmm_stats.wx_denied_mem,
				(unsigned long)fmm_wx_zero);
}

NOKPROBE_SYMBOL(fmm_wx_mem_pre);

/*
 * ptrace_access_vm(tsk, addr, buf, len, gup_flags): PTRACE_POKETEXT/DATA
 * write with FOLL_FORCE too, so a process that lets a helper trace it
 * (PR_SET_PTRACER, or ptrace_scope 0) could have its code written.
 * Refused into a W^X mm (the tracer gets EIO), which also stops debugger
 * breakpoints there.  Its callers (the PEEK/POKE requests) run between
 * ptrace_check_attach() and ptrace_unfreeze_traced(): the tracee is
 * frozen (JOBCTL_PTRACE_FROZEN; not even SIGKILL wakes it), so it can
 * neither exec nor exit and tsk->mm stays.  No task_lock(): a sleeping
 * lock on PREEMPT_RT, and handlers run with preemption off.
 */
static int fmm_wx_ptrace_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct task_struct *tsk = (void *)fmm_regs_get_argument(regs, 0);
	unsigned int gup_flags = fmm_regs_get_argument(regs, 4);
	struct fmm_wx_refusal r = {
		.call = "ptrace",
		.what = "PTRACE_POKE",
		.of = "a W^X process",
		.old = -1,
		.prot = PROT_WRITE,
	};

	if (!(gup_flags & FOLL_WRITE))
		return 0;
	/*
	 * Only the tracer, current, sets and clears the freeze: should a
	 * caller ever come without it, refuse rather than read an mm that
	 * could be going.  Not a W^X rule, so complain mode has no say.
	 */
	if (!(READ_ONCE(tsk->jobctl) & JOBCTL_PTRACE_FROZEN) ||
	    rcu_access_pointer(tsk->parent) != current) {
		r.mm = current->mm;
		r.of = "a tracee that is not frozen";
		fmm_wx_report(&r, false);
		return fmm_wx_deny_as(regs, &fmm_stats.wx_denied_mem,
				      (unsigned long)fmm_wx_zero);
	}
	r.mm = READ_ONCE(tsk->mm);
	if (!fmm_mm_wx(r.mm))
		return 0;
	return fmm_wx_refuse_as(regs, &r, &fmm_stats.wx_denied_mem,
				(unsigned long)fmm_wx_zero);
}

NOKPROBE_SYMBOL(fmm_wx_ptrace_pre);

/*
 * What each probed function's callers do with the refusal, and so why each
 * refusal is safe (a function is refused only at its entry, before it
 * takes anything):
 *
 *   security_mmap_file	     do_mmap callers and do_shmat() fail with the
 *			     error, nothing mapped yet
 *   security_file_mprotect  mprotect_fixup() not called; the error returned
 *   vm_brk_flags	     the ELF loader's segment fails: the exec ends in
 *			     SIGSEGV after its point of no return
 *   personality entries     the system call fails, personality unchanged
 *   security_shm_shmat	     do_shmat() fails before it takes the segment
 *   mfill_atomic_install_pte
 *			     its callers (anonymous and shmem COPY, CONTINUE,
 *			     shmem ZEROPAGE) put, unlock or delete the page
 *			     they hold on any error
 *   hugetlb fill	     a retry holds a page: the stand-in puts it
 *			     (fmm_wx_uffd_hugetlb_refused())
 *   zeropage entry	     the ioctl fails (EACCES, or EAGAIN, which
 *			     user space retries); no lock is held yet
 *   access_remote_vm	     0 bytes: /proc/PID/mem's writer returns EIO
 *   ptrace_access_vm	     0 bytes: PTRACE_POKE* fails with EIO
 */
static struct fmm_probe fmm_wx_probes[] = {
	{ .symbol = "security_mmap_file",
	  .pre = fmm_wx_mmap_pre,
	  .moves_ip = true },
	{ .symbol = "security_file_mprotect",
	  .pre = fmm_wx_mprotect_pre,
	  .moves_ip = true },
	{ .symbol = "vm_brk_flags", .pre = fmm_wx_brk_pre, .moves_ip = true },
	{ .symbol = "__x64_sys_personality",
	  .pre = fmm_wx_personality64_pre,
	  .moves_ip = true,
	  .absent = !IS_ENABLED(CONFIG_X86_64) },
	/* i386's own system calls, and a 64-bit kernel's 32-bit ones. */
	{ .symbol = "__ia32_sys_personality",
	  .pre = fmm_wx_personality32_pre,
	  .moves_ip = true,
	  .absent = !IS_ENABLED(CONFIG_X86_32) &&
		    !IS_ENABLED(CONFIG_IA32_EMULATION) },
	{ .symbol = "security_shm_shmat",
	  .pre = fmm_wx_shmat_pre,
	  .moves_ip = true,
	  .absent = !IS_ENABLED(CONFIG_SYSVIPC) },
	{ .symbol = "mfill_atomic_install_pte",
	  .pre = fmm_wx_uffd_pre,
	  .moves_ip = true,
	  .absent = !IS_ENABLED(CONFIG_USERFAULTFD) },
	{ .symbol = FMM_UFFD_ZEROPAGE,
	  .pre = fmm_wx_uffd_zeropage_pre,
	  .moves_ip = true,
	  .absent = !IS_ENABLED(CONFIG_USERFAULTFD) },
	{ .symbol = FMM_UFFD_HUGETLB_FILL,
	  .pre = fmm_wx_uffd_hugetlb_pre,
	  .moves_ip = true,
	  .absent = !IS_ENABLED(CONFIG_USERFAULTFD) ||
		    !IS_ENABLED(CONFIG_HUGETLB_PAGE) },
	{ .symbol = "access_remote_vm",
	  .pre = fmm_wx_mem_pre,
	  .moves_ip = true },
	{ .symbol = "ptrace_access_vm",
	  .pre = fmm_wx_ptrace_pre,
	  .moves_ip = true },
};

/*
 * Armed and disarmed by nx.c under its mutex, from the sysctl and from init
 * and exit.  The sysctl exists only between them (main.c registers the
 * control files last and removes them first, and unregistering waits for a
 * write in progress), so no write can re-arm the probes after exit removed
 * them: the vm.flexmmap_nx=3 write racing with rmmod that once left probes
 * behind the module (an oops in get_kprobe() on the next mmap, found by
 * tests/guest/60-storm.sh) cannot happen.
 */
static bool fmm_wx_is_armed;

/* Both under nx.c's mutex. */
int fmm_wx_arm(void)
{
	int ret;

	if (fmm_wx_is_armed)
		return 0;
	ret = fmm_probes_install(fmm_wx_probes, ARRAY_SIZE(fmm_wx_probes));
	if (ret)
		return ret;
	fmm_wx_is_armed = true;
	return 0;
}

void fmm_wx_disarm(void)
{
	if (!fmm_wx_is_armed)
		return;
	fmm_probes_remove(fmm_wx_probes, ARRAY_SIZE(fmm_wx_probes));
	fmm_wx_is_armed = false;
}

bool fmm_wx_armed(void)
{
	return READ_ONCE(fmm_wx_is_armed);
}

void fmm_wx_probes_show(struct seq_file *m)
{
	fmm_probes_show_missed(m, fmm_wx_probes, ARRAY_SIZE(fmm_wx_probes));
}
