// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: per-binary markings, read from the binary's extended attributes.
 *
 *	user.flexmmap.layout	kernel | legacy | flexible | auto: used instead
 *				of vm.flexmmap_layout for that binary
 *	user.pax.flags		PaX letters, as paxctl-ng and Gentoo write them:
 *				m: no W^X (mode 3) for that binary; M: mode 3
 *				whatever vm.flexmmap_nx says; P, E, R, S, X and
 *				their lower cases are PaX's and are ignored
 *
 * The layout and NX decisions are taken in a kprobe handler at
 * setup_arg_pages() (policy.c), which must not sleep, and reading an
 * extended attribute can.  So a binary format handler registered at the
 * head of the list reads them earlier in the same exec, in process context,
 * keeps them under the new mm, and returns -ENOEXEC: the next handler (ELF,
 * #! scripts, binfmt_misc) runs as if we were not there.  For a #! script
 * the handlers run again for the interpreter, and our second call replaces
 * the first: the interpreter's markings count, as with PaX.  A dynamic
 * binary's ld.so is mapped by the ELF loader, not exec'd: the binary's
 * markings count.
 *
 * A marking is the file owner's word (anyone who can write a file can set
 * its user.* attributes), so m, which weakens a security mode, is trusted
 * as a setuid bit would be: only on a file owned by root and writable by
 * nobody else, on a mount without nosuid, of a file system of the initial
 * user namespace.  A user cannot exempt a copy of an interpreter from W^X,
 * nor present one as root's through FUSE (fusermount mounts nosuid); root
 * can.  M and the layouts are honoured on any file.  A malformed value is
 * ignored, with a rate-limited log line naming the file, and the
 * machine-wide policy applies.
 *
 * FUSE files are not read at all: their server answers the read, could
 * hold it for ever, and the module may not be unloaded meanwhile.
 *
 * The handler's module reference (search_binary_handler() takes one around
 * each call) keeps the module loaded while it runs: an rmmod at that moment
 * fails with EBUSY rather than waiting.  It is registered last at load and
 * removed first at unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/binfmts.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/mount.h>
#include <linux/string.h>
#include <linux/user_namespace.h>
#include <linux/xattr.h>
#include <uapi/linux/magic.h>
#include "fmm.h"

/* markings= (control.c): 0 reads none (the handler is not registered). */
bool fmm_mark_enable = true;

#define FMM_MARK_LAYOUT "user.flexmmap.layout"
#define FMM_MARK_PAX "user.pax.flags"
/* The longest valid value: "flexible"; PaX's twelve letters. */
#define FMM_MARK_MAX 16

/*
 * The markings of execs between the handler and setup_arg_pages(), by their
 * new mm.  Only execs of marked binaries take a slot.  An exec that fails in
 * between leaves its slot behind; any later exec of an mm at that address
 * passes the handler first, which replaces or clears it, so a stale slot is
 * never read.  When every slot is busy the oldest is given up (counted:
 * that exec gets the machine-wide policy).
 */
#define FMM_MARK_SLOTS 32

static struct {
	struct mm_struct *mm;
	struct fmm_mark mark;
} fmm_mark_slots[FMM_MARK_SLOTS];
static unsigned int fmm_mark_used;
static unsigned int fmm_mark_next;
static DEFINE_SPINLOCK(fmm_mark_lock);
static bool fmm_mark_registered;

static const char *const fmm_mark_layouts[] = {
	[FLEXMMAP_LAYOUT_KERNEL] = "kernel",
	[FLEXMMAP_LAYOUT_LEGACY] = "legacy",
	[FLEXMMAP_LAYOUT_FLEXIBLE] = "flexible",
	[FLEXMMAP_LAYOUT_AUTO] = "auto",
};

static void fmm_mark_malformed(struct file *file, const char *name,
			       const char *val, ssize_t len, const char *want)
{
	atomic_long_inc(&fmm_stats.mark_malformed);
	pr_warn_ratelimited("%pD: %s \"%*pE\" is not %s: ignored\n", file, name,
			    (int)len, val, want);
}

/* Read one attribute; its length, or 0 when absent or unreadable. */
static ssize_t fmm_mark_read(struct file *file, const char *name, char *buf)
{
	ssize_t len = __vfs_getxattr(file->f_path.dentry, file_inode(file),
				     name, buf, FMM_MARK_MAX);

	if (len == -ERANGE) {
		atomic_long_inc(&fmm_stats.mark_malformed);
		pr_warn_ratelimited("%pD: %s longer than %d bytes: ignored\n",
				    file, name, FMM_MARK_MAX);
		return 0;
	}
	return len > 0 ? len : 0;
}

static s8 fmm_mark_read_layout(struct file *file)
{
	char buf[FMM_MARK_MAX];
	ssize_t len = fmm_mark_read(file, FMM_MARK_LAYOUT, buf);
	int i;

	if (!len)
		return FMM_MARK_NONE;
	for (i = 0; i < ARRAY_SIZE(fmm_mark_layouts); i++)
		if (len == strlen(fmm_mark_layouts[i]) &&
		    !memcmp(buf, fmm_mark_layouts[i], len))
			return i;
	fmm_mark_malformed(file, FMM_MARK_LAYOUT, buf, len,
			   "kernel, legacy, flexible or auto");
	return FMM_MARK_NONE;
}

/* 'm', 'M' or 0 (neither, or ignored). */
static char fmm_mark_read_pax(struct file *file)
{
	char buf[FMM_MARK_MAX];
	ssize_t len = fmm_mark_read(file, FMM_MARK_PAX, buf);
	struct inode *inode = file_inode(file);
	char pax = 0;
	ssize_t i;

	for (i = 0; i < len; i++) {
		if (!strchr("PpEeMmRrSsXx", buf[i]) || !buf[i])
			goto bad;
		if (buf[i] != 'm' && buf[i] != 'M')
			continue;
		if (pax && pax != buf[i])
			goto bad;
		pax = buf[i];
	}
	if (pax != 'm')
		return pax;
	if (uid_eq(inode->i_uid, GLOBAL_ROOT_UID) && !(inode->i_mode & 0022) &&
	    !(file->f_path.mnt->mnt_flags & MNT_NOSUID) &&
	    inode->i_sb->s_user_ns == &init_user_ns)
		return pax;
	atomic_long_inc(&fmm_stats.mark_untrusted);
	pr_warn_ratelimited("%pD: user.pax.flags m: untrusted file\n", file);
	return 0;
bad:
	fmm_mark_malformed(file, FMM_MARK_PAX, buf, len,
			   "PaX flags (PpEeMmRrSsXx, not both m and M)");
	return 0;
}

/* Keep @mark for the exec of @mm; FMM_MARK_NONE everywhere clears it. */
static void fmm_mark_keep(struct mm_struct *mm, const struct fmm_mark *mark)
{
	bool none = mark->layout == FMM_MARK_NONE && !mark->pax;
	unsigned long flags;
	int i, slot = -1;

	spin_lock_irqsave(&fmm_mark_lock, flags);
	for (i = 0; i < FMM_MARK_SLOTS; i++) {
		if (fmm_mark_slots[i].mm == mm) {
			slot = i;
			break;
		}
		if (slot < 0 && !fmm_mark_slots[i].mm)
			slot = i;
	}
	if (none) {
		if (slot >= 0 && fmm_mark_slots[slot].mm == mm) {
			fmm_mark_slots[slot].mm = NULL;
			WRITE_ONCE(fmm_mark_used, fmm_mark_used - 1);
		}
		goto out;
	}
	if (slot < 0) {
		/* All busy: give one up, each in turn. */
		slot = fmm_mark_next;
		fmm_mark_next = (fmm_mark_next + 1) % FMM_MARK_SLOTS;
		atomic_long_inc(&fmm_stats.mark_dropped);
	} else if (fmm_mark_slots[slot].mm != mm) {
		WRITE_ONCE(fmm_mark_used, fmm_mark_used + 1);
	}
	fmm_mark_slots[slot].mm = mm;
	fmm_mark_slots[slot].mark = *mark;
out:
	spin_unlock_irqrestore(&fmm_mark_lock, flags);
}

/**
 * fmm_mark_take - the markings of the binary being exec'd into @mm
 * @mm: the new mm, at setup_arg_pages()
 * @mark: filled in; FMM_MARK_NONE and 0 when it has none
 *
 * May not sleep: it runs in the exec hook.  The markings are given once.
 */
void fmm_mark_take(struct mm_struct *mm, struct fmm_mark *mark)
{
	unsigned long flags;
	int i;

	mark->layout = FMM_MARK_NONE;
	mark->pax = 0;
	if (!READ_ONCE(fmm_mark_used))
		return;
	spin_lock_irqsave(&fmm_mark_lock, flags);
	for (i = 0; i < FMM_MARK_SLOTS; i++) {
		if (fmm_mark_slots[i].mm == mm) {
			*mark = fmm_mark_slots[i].mark;
			fmm_mark_slots[i].mm = NULL;
			WRITE_ONCE(fmm_mark_used, fmm_mark_used - 1);
			break;
		}
	}
	spin_unlock_irqrestore(&fmm_mark_lock, flags);
}

NOKPROBE_SYMBOL(fmm_mark_take);

static int fmm_mark_load_binary(struct linux_binprm *bprm)
{
	struct fmm_mark mark = { .layout = FMM_MARK_NONE };
	int ret;

	if (file_inode(bprm->file)->i_sb->s_magic != FUSE_SUPER_MAGIC) {
		mark.layout = fmm_mark_read_layout(bprm->file);
		mark.pax = fmm_mark_read_pax(bprm->file);
	}
	if (mark.layout != FMM_MARK_NONE)
		atomic_long_inc(&fmm_stats.mark_layout);
	if (mark.pax) {
		atomic_long_inc(&fmm_stats.mark_pax);
		/* Fail closed: no W^X probes, no exec of an M binary. */
		if (mark.pax == 'M') {
			ret = fmm_nx_arm_marked();
			if (ret)
				return ret;
		}
	}
	if (bprm->mm && (mark.layout != FMM_MARK_NONE || mark.pax ||
			 READ_ONCE(fmm_mark_used)))
		fmm_mark_keep(bprm->mm, &mark);
	return -ENOEXEC;
}

static struct linux_binfmt fmm_mark_binfmt = {
	.module = THIS_MODULE,
	.load_binary = fmm_mark_load_binary,
};

/* Last at load: nothing after it can fail (see main.c). */
void fmm_mark_init(void)
{
	if (!fmm_mark_enable)
		return;
	__register_binfmt(&fmm_mark_binfmt, 1);
	fmm_mark_registered = true;
}

/*
 * First at unload.  No handler is running: each holds a module reference,
 * and rmmod got here only with none.
 */
void fmm_mark_exit(void)
{
	if (fmm_mark_registered)
		unregister_binfmt(&fmm_mark_binfmt);
	fmm_mark_registered = false;
}

void fmm_mark_show(struct seq_file *m)
{
	seq_printf(m, "markings %s\n", fmm_mark_registered ? "read" : "off");
}
