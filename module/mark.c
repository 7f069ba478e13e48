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
 * nobody else, on a mount without nosuid and not idmapped.  A user cannot
 * exempt a copy of an interpreter from W^X, nor present one as root's
 * through FUSE (fusermount mounts nosuid) or an idmapped mount; root can.
 * M and the layouts are honoured on any file read.  A malformed value is
 * ignored, with a rate-limited log line naming the file, and the
 * machine-wide policy applies.
 *
 * Not read at all: files of a file system mounted in a user namespace, and
 * FUSE files, also under an overlay.  A user's FUSE server answers the
 * read, could hold it for ever, and the module with it.
 *
 * The handler's module reference (search_binary_handler() takes one around
 * each call) keeps the module loaded while it runs: an rmmod at that moment
 * fails at once (EAGAIN; kmod says "in use") rather than waiting.  It is
 * registered last at load and removed first at unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/binfmts.h>
#include <linux/bitmap.h>
#include <linux/cred.h>
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
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

/* The names, and the longest value read (flexmmap.h), shared with the tool. */
#define FMM_MARK_LAYOUT FLEXMMAP_MARK_LAYOUT
#define FMM_MARK_PAX FLEXMMAP_MARK_PAX
#define FMM_MARK_MAX FLEXMMAP_MARK_MAX

/*
 * The markings of execs between the handler and setup_arg_pages(), in a
 * fixed table: one slot per marked exec, holding a reference to its new
 * mm (mmgrab()), so that the mm cannot be freed, nor its address reused,
 * while a slot names it: a slot is never another exec's.  An exec can stay
 * in that window for as long as a user likes (its #! interpreter on a FUSE
 * file whose server does not answer), so the table does not grow with
 * them: the exec hook's look-up, under a raw spinlock with interrupts off
 * (the hook may run as an int3 handler), walks FMM_MARK_SLOTS slots at
 * most, and each real uid may hold FMM_MARK_USER_SLOTS of them, so that no
 * user can take another's.  A marked exec that finds no slot fails with
 * EAGAIN, as fork does at RLIMIT_NPROC, rather than run without its
 * marking.  The exec hook takes a slot's marking (marks it taken); the
 * handler, in process context, frees the taken slots and those of execs
 * that failed (their mm has no users left), so neither mmdrop() nor any
 * allocation runs in the exec hook.
 */
#define FMM_MARK_SLOTS 64
#define FMM_MARK_USER_SLOTS 16

/**
 * struct fmm_mark_slot - the markings of one exec in progress
 * @mm: its new mm, with a reference; NULL: the slot is free
 * @uid: the real uid of the task that exec'd
 * @mark: the markings
 * @taken: the exec hook has read them
 * @dropping: a handler is putting the reference (outside the lock)
 */
struct fmm_mark_slot {
	struct mm_struct *mm;
	kuid_t uid;
	struct fmm_mark mark;
	bool taken;
	bool dropping;
};

static struct fmm_mark_slot fmm_mark_slots[FMM_MARK_SLOTS];
/* Slots in use, and of those not taken (the exec hook's test). */
static unsigned int fmm_mark_used;
static unsigned int fmm_mark_pending;
/* Raw: the exec hook is a kprobe handler, atomic even on PREEMPT_RT. */
static DEFINE_RAW_SPINLOCK(fmm_mark_lock);
static bool fmm_mark_registered;

static const char *const fmm_mark_layouts[] = {
	[FLEXMMAP_LAYOUT_KERNEL] = "kernel",
	[FLEXMMAP_LAYOUT_LEGACY] = "legacy",
	[FLEXMMAP_LAYOUT_FLEXIBLE] = "flexible",
	[FLEXMMAP_LAYOUT_AUTO] = "auto",
};

/*
 * A rate-limited warning about @file: its name escaped (%pD would print a
 * newline or an escape sequence in it as it is, and a user names the file).
 */
static __printf(2, 3) void fmm_mark_warn(struct file *file, const char *fmt,
					 ...)
{
	struct name_snapshot n;
	struct va_format vaf;
	va_list args;

	take_dentry_name_snapshot(&n, file->f_path.dentry);
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_warn_ratelimited("%*pE: %pV", (int)n.name.len, n.name.name, &vaf);
	va_end(args);
	release_dentry_name_snapshot(&n);
}

static void fmm_mark_malformed(struct file *file, const char *name,
			       const char *val, ssize_t len, const char *want)
{
	atomic_long_inc(&fmm_stats.mark_malformed);
	fmm_mark_warn(file, "%s \"%*pE\" is not %s: ignored\n", name, (int)len,
		      val, want);
}

/* Read one attribute; its length, or 0 when absent or unreadable. */
static ssize_t fmm_mark_read(struct file *file, const char *name, char *buf)
{
	ssize_t len = __vfs_getxattr(file->f_path.dentry, file_inode(file),
				     name, buf, FMM_MARK_MAX);

	if (len == -ERANGE) {
		atomic_long_inc(&fmm_stats.mark_malformed);
		fmm_mark_warn(file, "%s longer than %d bytes: ignored\n", name,
			      FMM_MARK_MAX);
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
	    !is_idmapped_mnt(file->f_path.mnt))
		return pax;
	atomic_long_inc(&fmm_stats.mark_untrusted);
	fmm_mark_warn(file, "user.pax.flags m: untrusted file\n");
	return 0;
bad:
	fmm_mark_malformed(file, FMM_MARK_PAX, buf, len,
			   "PaX flags (PpEeMmRrSsXx, not both m and M)");
	return 0;
}

/*
 * Set @s aside for its mm's reference to be put outside the lock, by
 * fmm_mark_drop() with @dropped.  Under fmm_mark_lock.
 */
static void fmm_mark_set_aside(struct fmm_mark_slot *s, unsigned long *dropped)
{
	if (!s->taken)
		WRITE_ONCE(fmm_mark_pending, fmm_mark_pending - 1);
	s->dropping = true;
	__set_bit(s - fmm_mark_slots, dropped);
}

/* Put the references of the slots set aside in @dropped, and free them. */
static void fmm_mark_drop(unsigned long *dropped)
{
	unsigned long flags;
	unsigned int i;

	if (bitmap_empty(dropped, FMM_MARK_SLOTS))
		return;
	/* Only the caller touches a slot it set aside. */
	for_each_set_bit(i, dropped, FMM_MARK_SLOTS)
		mmdrop(fmm_mark_slots[i].mm);
	raw_spin_lock_irqsave(&fmm_mark_lock, flags);
	for_each_set_bit(i, dropped, FMM_MARK_SLOTS) {
		fmm_mark_slots[i].mm = NULL;
		fmm_mark_slots[i].dropping = false;
		WRITE_ONCE(fmm_mark_used, fmm_mark_used - 1);
	}
	raw_spin_unlock_irqrestore(&fmm_mark_lock, flags);
}

/*
 * Keep @mark for the exec of @mm (FMM_MARK_NONE and 0: it has none), in
 * place of what an earlier call kept for it (a #! script's, before its
 * interpreter's); free the slots that are done with.  -EAGAIN when a
 * marking finds no slot free, or the caller's real uid holds its share.
 * Process context.
 */
static int fmm_mark_keep(struct mm_struct *mm, const struct fmm_mark *mark)
{
	bool keep = mark->layout != FMM_MARK_NONE || mark->pax;
	struct fmm_mark_slot *s, *mine, *free;
	DECLARE_BITMAP(dropped, FMM_MARK_SLOTS);
	kuid_t uid = current_uid();
	bool again = false;
	unsigned int held;
	unsigned long flags;
	int ret;

look:
	mine = NULL;
	free = NULL;
	held = 0;
	ret = 0;
	bitmap_zero(dropped, FMM_MARK_SLOTS);
	raw_spin_lock_irqsave(&fmm_mark_lock, flags);
	for (s = fmm_mark_slots; s < fmm_mark_slots + FMM_MARK_SLOTS; s++) {
		if (!s->mm) {
			free = free ?: s;
		} else if (s->dropping) {
			continue;
		} else if (s->mm == mm && !s->taken) {
			mine = s;
		} else if (s->taken || !atomic_read(&s->mm->mm_users)) {
			/* Read by its exec, or its exec failed. */
			fmm_mark_set_aside(s, dropped);
		} else if (uid_eq(s->uid, uid)) {
			held++;
		}
	}
	if (mine && keep) {
		mine->mark = *mark;
	} else if (mine) {
		fmm_mark_set_aside(mine, dropped);
	} else if (keep && free && held < FMM_MARK_USER_SLOTS) {
		mmgrab(mm);
		free->mm = mm;
		free->uid = uid;
		free->mark = *mark;
		free->taken = false;
		WRITE_ONCE(fmm_mark_used, fmm_mark_used + 1);
		WRITE_ONCE(fmm_mark_pending, fmm_mark_pending + 1);
	} else if (keep) {
		ret = -EAGAIN;
	}
	raw_spin_unlock_irqrestore(&fmm_mark_lock, flags);
	fmm_mark_drop(dropped);
	/* None was free, but some were just freed: look again, once. */
	if (ret && !free && held < FMM_MARK_USER_SLOTS && !again &&
	    !bitmap_empty(dropped, FMM_MARK_SLOTS)) {
		again = true;
		goto look;
	}
	return ret;
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
	struct fmm_mark_slot *s;
	unsigned long flags;

	mark->layout = FMM_MARK_NONE;
	mark->pax = 0;
	if (!READ_ONCE(fmm_mark_pending))
		return;
	raw_spin_lock_irqsave(&fmm_mark_lock, flags);
	for (s = fmm_mark_slots; s < fmm_mark_slots + FMM_MARK_SLOTS; s++) {
		if (s->mm == mm && !s->taken && !s->dropping) {
			*mark = s->mark;
			s->taken = true;
			WRITE_ONCE(fmm_mark_pending, fmm_mark_pending - 1);
			break;
		}
	}
	raw_spin_unlock_irqrestore(&fmm_mark_lock, flags);
}

NOKPROBE_SYMBOL(fmm_mark_take);

/*
 * Whether to read @file's markings: not from a file system mounted in a
 * user namespace, nor from FUSE, under an overlay too (d_real_inode()):
 * there a user answers the read, and could hold it, and the module with
 * it, for ever.
 */
static bool fmm_mark_readable(struct file *file)
{
	struct super_block *sb = file_inode(file)->i_sb;

	return sb->s_user_ns == &init_user_ns &&
	       sb->s_magic != FUSE_SUPER_MAGIC &&
	       d_real_inode(file->f_path.dentry)->i_sb->s_magic !=
		       FUSE_SUPER_MAGIC;
}

/* A marked exec that found no slot: count it, name the file and the uid. */
static void fmm_mark_refused(struct file *file)
{
	uid_t uid = from_kuid(&init_user_ns, current_uid());

	atomic_long_inc(&fmm_stats.mark_dropped);
	fmm_mark_warn(file, "no markings slot for uid %u: exec refused\n", uid);
}

static int fmm_mark_load_binary(struct linux_binprm *bprm)
{
	struct fmm_mark mark = { .layout = FMM_MARK_NONE };
	int ret;

	if (fmm_mark_readable(bprm->file)) {
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
	if (mark.layout != FMM_MARK_NONE || mark.pax ||
	    READ_ONCE(fmm_mark_used)) {
		ret = fmm_mark_keep(bprm->mm, &mark);
		if (ret) {
			fmm_mark_refused(bprm->file);
			return ret;
		}
	}
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
 * and rmmod got here only with none.  Execs between here and the removal
 * of the exec hook get the sysctls.
 */
void fmm_mark_exit(void)
{
	DECLARE_BITMAP(dropped, FMM_MARK_SLOTS);
	struct fmm_mark_slot *s;
	unsigned long flags;

	if (fmm_mark_registered)
		unregister_binfmt(&fmm_mark_binfmt);
	fmm_mark_registered = false;
	bitmap_zero(dropped, FMM_MARK_SLOTS);
	raw_spin_lock_irqsave(&fmm_mark_lock, flags);
	for (s = fmm_mark_slots; s < fmm_mark_slots + FMM_MARK_SLOTS; s++)
		if (s->mm && !s->dropping)
			fmm_mark_set_aside(s, dropped);
	raw_spin_unlock_irqrestore(&fmm_mark_lock, flags);
	fmm_mark_drop(dropped);
}

void fmm_mark_show(struct seq_file *m)
{
	seq_printf(m, "markings %s\n", fmm_mark_registered ? "read" : "off");
}
