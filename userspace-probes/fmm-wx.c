// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-wx: every route by which bytes a process chose can become executable
 * in its own address space, tried one by one.  The chosen code is
 * "mov eax, 42; ret" (b8 2a 00 00 00 c3, the same in i386 and x86-64); a
 * route is OPEN when calling those bytes returns 42, CLOSED otherwise, with
 * the step that failed and its errno ("closed: mmap EACCES") or the signal
 * that killed the call ("closed: call SIGSEGV").  Each route runs in a
 * forked child under alarm(10), so a fault or a hang only closes the route.
 * Output is kselftest TAP.
 *
 * Built static as fmm-wx-64 and fmm-wx-32.
 *
 * Usage:
 *   fmm-wx-NN [--rwx-helper PATH] --print	"ROUTE open" or "ROUTE closed: WHY"
 *						per route, exit 0
 *   fmm-wx-NN [--rwx-helper PATH] --expect 0|3	each route against the table
 *						below, for the stock rules (0)
 *						or W^X (3, vm.flexmmap_nx=3)
 *   fmm-wx-NN --list				the table: "ROUTE EXPECT0
 *						EXPECT3 HOW" lines
 *
 * --rwx-helper: the binary with an RWX PT_LOAD that route rwx-pt-load execs
 * with --print (default: fmm-nx-64-rwxtext, or fmm-nx-32-rwxtext for
 * fmm-wx-32, in this program's own folder).
 *
 * uffd-copy-hugetlb needs free huge pages: with none (nr_hugepages 0, or
 * ENOMEM) it reports "untestable: no huge pages", a failure under --expect.
 *
 * Exit status as kselftest: 0 every route as expected, 1 otherwise (or bad
 * usage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/udmabuf.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "kselftest.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004U
#endif
#ifndef SHM_EXEC
#define SHM_EXEC 0100000
#endif
#ifndef SHM_HUGETLB
#define SHM_HUGETLB 04000
#endif
#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0x40000
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447	/* the same on x86-64 and i386 */
#endif

#define HPAGE (2UL << 20)	/* x86's default huge page, 2 MiB */

/* mov eax, 42; ret */
static const unsigned char code[] = { 0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3 };

/*
 * ABSENT: the kernel has no such call or feature (i386 has no protection key
 * system calls and no userfaultfd minor faults), so there is no route to
 * judge; it matches either table, with the reason printed.
 */
enum verdict { OPEN, CLOSED, UNTESTABLE, ABSENT };
static const char *const verdict_names[] = { "open", "closed", "untestable",
					     "absent" };

/*
 * What a route's child (and grandchild) leaves for the parent, in a shared
 * anonymous page: the step it is at (named when a signal ends it) and, when
 * it gives up, why.
 */
struct report {
	char step[48];
	char why[160];
};

static struct report *rep;
static long page;
static const char *rwx_helper;

static const char *err_name(int err)
{
	return strerrorname_np(err) ?: "E?";
}

static void step(const char *s)
{
	snprintf(rep->step, sizeof(rep->step), "%s", s);
}

/* The route stops at step @what, which failed with errno. */
static enum verdict fail(const char *what)
{
	int err = errno;

	snprintf(rep->why, sizeof(rep->why), "%s %s", what, err_name(err));
	return CLOSED;
}

/* The kernel has no @what (it failed with errno): no such route here. */
static enum verdict absent(const char *what)
{
	int err = errno;

	snprintf(rep->why, sizeof(rep->why), "%s %s: not in this kernel", what,
		 err_name(err));
	return ABSENT;
}

static enum verdict failmsg(const char *what)
{
	snprintf(rep->why, sizeof(rep->why), "%s", what);
	return CLOSED;
}

/* Call the bytes at p: OPEN if they ran and returned 42. */
static enum verdict call(void *p)
{
	int (*volatile fn)(void) = (int (*)(void))p;
	int r;

	step("call");
	r = fn();
	if (r == 42)
		return OPEN;
	snprintf(rep->why, sizeof(rep->why), "call returned %d", r);
	return CLOSED;
}

static void *map_anon(int prot, size_t len)
{
	return mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/*
 * A new file in dir holding len bytes: the code at the start if @with_code,
 * else 0xcc ("int3") junk, or nothing written at all (sparse) if @sparse.
 * Returns it reopened O_RDONLY and already unlinked, or -1 (errno set, the
 * failed step in *what).
 */
static int ro_file(const char *dir, size_t len, bool with_code, bool sparse,
		   const char **what)
{
	char path[PATH_MAX];
	unsigned char *buf;
	int fd, ro, err;

	snprintf(path, sizeof(path), "%s/fmm-wx.XXXXXX", dir);
	*what = "mkstemp";
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	*what = "ftruncate";
	if (sparse || with_code) {
		if (ftruncate(fd, len))
			goto bad;
	}
	if (with_code) {
		*what = "write";
		if (pwrite(fd, code, sizeof(code), 0) != sizeof(code))
			goto bad;
	} else if (!sparse) {
		*what = "write";
		buf = malloc(len);
		if (!buf)
			goto bad;
		memset(buf, 0xcc, len);
		if (write(fd, buf, len) != (ssize_t)len) {
			free(buf);
			goto bad;
		}
		free(buf);
	}
	close(fd);
	*what = "reopen O_RDONLY";
	ro = open(path, O_RDONLY | O_CLOEXEC);
	err = errno;
	unlink(path);
	errno = err;
	return ro;
bad:
	err = errno ? errno : EIO;
	close(fd);
	unlink(path);
	errno = err;
	return -1;
}

/* --- userfaultfd --------------------------------------------------------- */

/*
 * A userfaultfd with UFFDIO_API done (asking for @features), registered
 * over [p, p + len) in @mode.  -1 on failure, with the step in rep->why;
 * -2 if the kernel does not offer @features (UFFDIO_API refuses them with
 * EINVAL, or leaves them out).
 */
static int uffd_on(void *p, size_t len, __u64 features, __u64 mode)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = mode,
	};
	int fd;

	step("userfaultfd");
	fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL)
		fd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd < 0) {
		fail("userfaultfd");
		return -1;
	}
	step("UFFDIO_API");
	if (ioctl(fd, UFFDIO_API, &api)) {
		if (features && errno == EINVAL) {
			absent("UFFDIO_API (features)");
			close(fd);
			return -2;
		}
		fail("UFFDIO_API");
		goto bad;
	}
	if ((api.features & features) != features) {
		snprintf(rep->why, sizeof(rep->why),
			 "UFFDIO_API: features %#llx not offered: not in this kernel",
			 (unsigned long long)(features & ~api.features));
		close(fd);
		return -2;
	}
	step("UFFDIO_REGISTER");
	if (ioctl(fd, UFFDIO_REGISTER, &reg)) {
		fail("UFFDIO_REGISTER");
		goto bad;
	}
	return fd;
bad:
	close(fd);
	return -1;
}

/*
 * UFFDIO_COPY @len bytes from src to dst (registered MISSING), then call
 * dst.  A registered range whose fill failed is never touched: the access
 * would wait for ever for a fault handler.
 */
static enum verdict uffd_copy_call(void *dst, size_t len, const void *src)
{
	struct uffdio_copy cp = {
		.dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = len,
	};
	int fd = uffd_on(dst, len, 0, UFFDIO_REGISTER_MODE_MISSING);

	if (fd < 0)
		return CLOSED;
	step("UFFDIO_COPY");
	if (ioctl(fd, UFFDIO_COPY, &cp))
		return fail("UFFDIO_COPY");
	if (cp.copy != (__s64)len)
		return failmsg("UFFDIO_COPY: short copy");
	return call(dst);
}

/* A page of ordinary memory holding the code. */
static void *code_page(void)
{
	unsigned char *src = map_anon(PROT_READ | PROT_WRITE, page);

	if (src != MAP_FAILED)
		memcpy(src, code, sizeof(code));
	return src;
}

/* --- the routes ---------------------------------------------------------- */

static enum verdict r_mmap_anon_rwx(void)
{
	unsigned char *p = map_anon(PROT_READ | PROT_WRITE | PROT_EXEC, page);

	if (p == MAP_FAILED)
		return fail("mmap");
	memcpy(p, code, sizeof(code));
	return call(p);
}

/* Anonymous RW memory holding the code. */
static unsigned char *written_anon(size_t len)
{
	unsigned char *p = map_anon(PROT_READ | PROT_WRITE, len);

	if (p == MAP_FAILED) {
		fail("mmap");
		return NULL;
	}
	memcpy(p, code, sizeof(code));
	return p;
}

/* Anonymous RW written, mprotect(@prot), call. */
static enum verdict mprotect_written_anon(int prot)
{
	unsigned char *p = written_anon(page);

	if (!p)
		return CLOSED;
	if (mprotect(p, page, prot))
		return fail("mprotect");
	return call(p);
}

static enum verdict r_mprotect_anon(void)
{
	return mprotect_written_anon(PROT_READ | PROT_EXEC);
}

static enum verdict r_mprotect_anon_rwx(void)
{
	return mprotect_written_anon(PROT_READ | PROT_WRITE | PROT_EXEC);
}

static enum verdict r_pkey_mprotect_anon(void)
{
	unsigned char *p = written_anon(page);
	long pkey;

	if (!p)
		return CLOSED;
	pkey = syscall(SYS_pkey_alloc, 0UL, 0UL);
	if (pkey < 0)
		pkey = -1;	/* no protection keys: plain mprotect */
	if (syscall(SYS_pkey_mprotect, p, page, PROT_READ | PROT_EXEC, pkey))
		return errno == ENOSYS ? absent("pkey_mprotect") :
					 fail("pkey_mprotect");
	return call(p);
}

static enum verdict r_mprotect_file_cow(void)
{
	const char *what;
	unsigned char *p;
	int fd = ro_file("/tmp", 2 * page, false, false, &what);

	if (fd < 0)
		return fail(what);
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return fail("mmap");
	memcpy(p, code, sizeof(code));	/* copy-on-write */
	if (mprotect(p, 2 * page, PROT_READ | PROT_EXEC))
		return fail("mprotect");
	return call(p);
}

static enum verdict r_mprotect_after_mremap(void)
{
	unsigned char *p = written_anon(page), *q;

	if (!p)
		return CLOSED;
	q = mremap(p, page, 2 * page, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return fail("mremap");
	if (mprotect(q, 2 * page, PROT_READ | PROT_EXEC))
		return fail("mprotect");
	return call(q);
}

static enum verdict r_mprotect_rw_r_rx(void)
{
	unsigned char *p = written_anon(page);

	if (!p)
		return CLOSED;
	if (mprotect(p, page, PROT_READ))
		return fail("mprotect(R)");
	if (mprotect(p, page, PROT_READ | PROT_EXEC))
		return fail("mprotect(RX)");
	return call(p);
}

/* The parent's verdict on a grandchild that reports by its exit status. */
static enum verdict grandchild_verdict(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return fail("waitpid");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 42)
		return OPEN;
	if (WIFSIGNALED(st)) {
		snprintf(rep->why, sizeof(rep->why), "%s SIG%s", rep->step,
			 sigabbrev_np(WTERMSIG(st)) ?: "?");
		return CLOSED;
	}
	if (!rep->why[0])
		snprintf(rep->why, sizeof(rep->why), "%s: exit %d", rep->step,
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return CLOSED;
}

static enum verdict r_mprotect_forked_child(void)
{
	unsigned char *p = written_anon(page);
	pid_t pid;

	if (!p)
		return CLOSED;
	step("fork");
	pid = fork();
	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		step("child mprotect");
		if (mprotect(p, page, PROT_READ | PROT_EXEC)) {
			fail("child mprotect");
			_exit(1);
		}
		_exit(call(p) == OPEN ? 42 : 1);
	}
	return grandchild_verdict(pid);
}

static enum verdict r_shmat_exec(void)
{
	int id = shmget(IPC_PRIVATE, page, IPC_CREAT | 0700);
	unsigned char *p;

	if (id < 0)
		return fail("shmget");
	p = shmat(id, NULL, SHM_EXEC);
	shmctl(id, IPC_RMID, NULL);
	if (p == (void *)-1)
		return fail("shmat(SHM_EXEC)");
	memcpy(p, code, sizeof(code));
	return call(p);
}

static enum verdict r_shmat_rdonly_exec(void)
{
	int id = shmget(IPC_PRIVATE, page, IPC_CREAT | 0700);
	unsigned char *p, *q = (void *)-1;
	int err;

	if (id < 0)
		return fail("shmget");
	p = shmat(id, NULL, 0);
	err = errno;
	if (p != (void *)-1) {
		memcpy(p, code, sizeof(code));
		q = shmat(id, NULL, SHM_RDONLY | SHM_EXEC);
		err = errno;
	}
	shmctl(id, IPC_RMID, NULL);
	errno = err;
	if (p == (void *)-1)
		return fail("shmat");
	if (q == (void *)-1)
		return fail("shmat(SHM_RDONLY|SHM_EXEC)");
	return call(q);
}

static enum verdict r_uffd_copy_anon(void)
{
	unsigned char *src = code_page();
	void *p = map_anon(PROT_READ | PROT_EXEC, 2 * page);

	if (src == MAP_FAILED || p == MAP_FAILED)
		return fail("mmap");
	return uffd_copy_call(p, page, src);
}

/* 2 pages of @fd mapped private R|X; NULL (reported) on failure. */
static void *map_rx2(int fd)
{
	void *p = mmap(NULL, 2 * page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

	if (p == MAP_FAILED) {
		fail("mmap");
		return NULL;
	}
	return p;
}

/* 2 pages of a sparse memfd (or tmpfs file, fd given) mapped private R|X. */
static void *sparse_rx(int fd)
{
	if (ftruncate(fd, 2 * page)) {
		fail("ftruncate");
		return NULL;
	}
	return map_rx2(fd);
}

static enum verdict r_uffd_copy_shmem(void)
{
	unsigned char *src = code_page();
	int fd = memfd_create("fmm-wx", MFD_CLOEXEC);
	void *p;

	if (src == MAP_FAILED)
		return fail("mmap");
	if (fd < 0)
		return fail("memfd_create");
	p = sparse_rx(fd);
	if (!p)
		return CLOSED;
	return uffd_copy_call(p, page, src);
}

/* A sparse 2-page file in /dev/shm (or /tmp), mapped private R|X. */
static void *tmpfs_sparse_rx(void)
{
	const char *dir = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	const char *what;
	int fd = ro_file(dir, 2 * page, false, true, &what);

	if (fd < 0) {
		fail(what);
		return NULL;
	}
	return map_rx2(fd);
}

static enum verdict r_uffd_copy_tmpfs(void)
{
	unsigned char *src = code_page();
	void *p;

	if (src == MAP_FAILED)
		return fail("mmap");
	p = tmpfs_sparse_rx();
	if (!p)
		return CLOSED;
	return uffd_copy_call(p, page, src);
}

static long nr_hugepages(void)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static enum verdict no_huge_pages(void)
{
	failmsg("no huge pages");
	return UNTESTABLE;
}

static enum verdict r_uffd_copy_hugetlb(void)
{
	unsigned char *src = map_anon(PROT_READ | PROT_WRITE, HPAGE);
	int fd;
	void *p;

	if (nr_hugepages() == 0)
		return no_huge_pages();
	if (src == MAP_FAILED)
		return fail("mmap");
	memcpy(src, code, sizeof(code));
	fd = memfd_create("fmm-wx-huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (fd < 0)
		return fail("memfd_create(MFD_HUGETLB)");
	if (ftruncate(fd, HPAGE))
		return errno == ENOMEM ? no_huge_pages() : fail("ftruncate");
	p = mmap(NULL, HPAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return errno == ENOMEM ? no_huge_pages() : fail("mmap");
	return uffd_copy_call(p, HPAGE, src);
}

/*
 * The memfd's page 0 already holds the code, so a plain call would run it
 * (that is route written-file-mapped); what is tried here is whether
 * UFFDIO_CONTINUE may map it: OPEN when it may and the call returns 42.
 */
/*
 * UFFDIO_CONTINUE of the first page of @fd, which holds the code, into its
 * private R|X mapping (2 pages, registered MINOR), then call it.
 */
static enum verdict uffd_continue_call(int fd)
{
	struct uffdio_continue cont = {
		.range = { .start = 0, .len = page },
	};
	void *p = map_rx2(fd);
	int ufd;

	if (!p)
		return CLOSED;
	ufd = uffd_on(p, 2 * page, UFFD_FEATURE_MINOR_SHMEM,
		      UFFDIO_REGISTER_MODE_MINOR);
	if (ufd < 0)
		return ufd == -2 ? ABSENT : CLOSED;
	cont.range.start = (uintptr_t)p;
	step("UFFDIO_CONTINUE");
	if (ioctl(ufd, UFFDIO_CONTINUE, &cont))
		return fail("UFFDIO_CONTINUE");
	return call(p);
}

static enum verdict r_uffd_continue(void)
{
	int fd = memfd_create("fmm-wx", MFD_CLOEXEC);

	if (fd < 0)
		return fail("memfd_create");
	if (write(fd, code, sizeof(code)) != sizeof(code))
		return fail("write");
	if (ftruncate(fd, 2 * page))
		return fail("ftruncate");
	return uffd_continue_call(fd);
}

/*
 * A new file on the tmpfs mounted on /dev/shm (else /tmp), open O_RDWR and
 * unlinked, 2 pages, holding the code if @with_code: a file of a mounted
 * file system, which W^X lets map executable, so the fills into it are
 * what is tried.  -1 (reported) on failure.
 */
static int shm_rw_file(bool with_code)
{
	char path[] = "/dev/shm/fmm-wx.XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0) {
		fail("mkstemp");
		return -1;
	}
	unlink(path);
	if (ftruncate(fd, 2 * page) ||
	    (with_code && pwrite(fd, code, sizeof(code), 0) != sizeof(code))) {
		fail("ftruncate/pwrite");
		return -1;
	}
	return fd;
}

/* UFFDIO_COPY into a shared executable mapping (shmem_mfill_atomic_pte). */
static enum verdict r_uffd_copy_tmpfs_shared(void)
{
	unsigned char *src = code_page();
	int fd = shm_rw_file(false);
	void *p;

	if (fd < 0)
		return CLOSED;
	if (src == MAP_FAILED)
		return fail("mmap");
	p = mmap(NULL, 2 * page, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail("mmap");
	return uffd_copy_call(p, page, src);
}

/* UFFDIO_CONTINUE of a /dev/shm file's page holding the code. */
static enum verdict r_uffd_continue_tmpfs(void)
{
	int fd = shm_rw_file(true);

	return fd < 0 ? CLOSED : uffd_continue_call(fd);
}

/*
 * Zeroes cannot be called (00 00 is "add [rax], al"), so this route is OPEN
 * when UFFDIO_ZEROPAGE may fill an executable page at all; the page is not
 * touched.
 */
static enum verdict r_uffd_zeropage(void)
{
	void *p = tmpfs_sparse_rx();
	struct uffdio_zeropage zp = { .range = { .len = page } };
	int ufd;

	if (!p)
		return CLOSED;
	ufd = uffd_on(p, 2 * page, 0, UFFDIO_REGISTER_MODE_MISSING);
	if (ufd < 0)
		return CLOSED;
	zp.range.start = (uintptr_t)p;
	step("UFFDIO_ZEROPAGE");
	if (ioctl(ufd, UFFDIO_ZEROPAGE, &zp))
		return fail("UFFDIO_ZEROPAGE");
	return OPEN;
}

static void *map_shared_anon(int prot)
{
	return mmap(NULL, page, prot, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

static enum verdict r_shared_anon_alias(void)
{
	unsigned char *p = map_shared_anon(PROT_READ | PROT_EXEC), *alias;

	if (p == MAP_FAILED)
		return fail("mmap");
	alias = mremap(p, 0, page, MREMAP_MAYMOVE);
	if (alias == MAP_FAILED)
		return fail("mremap");
	if (mprotect(alias, page, PROT_READ | PROT_WRITE))
		return fail("mprotect");
	memcpy(alias, code, sizeof(code));
	return call(p);
}

static enum verdict r_shared_anon_alias_rw(void)
{
	unsigned char *p = map_shared_anon(PROT_READ | PROT_WRITE), *alias;

	if (p == MAP_FAILED)
		return fail("mmap");
	memcpy(p, code, sizeof(code));
	alias = mremap(p, 0, page, MREMAP_MAYMOVE);
	if (alias == MAP_FAILED)
		return fail("mremap");
	if (mprotect(p, page, PROT_READ | PROT_EXEC))
		return fail("mprotect");
	return call(p);
}

static enum verdict r_personality_rie(void)
{
	long cur = syscall(SYS_personality, 0xffffffffUL);
	unsigned char *p;

	if (cur == -1)
		return fail("personality");
	if (syscall(SYS_personality, (unsigned long)cur | READ_IMPLIES_EXEC) == -1)
		return fail("personality");
	p = written_anon(page);	/* PROT_READ|PROT_WRITE, READ_IMPLIES_EXEC */
	if (!p)
		return CLOSED;
	return call(p);
}

/*
 * Fork a child whose output goes to /dev/null, to exec a program: 0 in the
 * child, its PID in the parent, -1 when fork() failed.
 */
static pid_t fork_quiet(void)
{
	pid_t pid;
	int nul;

	step("fork");
	pid = fork();
	if (pid == 0) {
		nul = open("/dev/null", O_WRONLY);
		if (nul >= 0) {
			dup2(nul, 1);
			dup2(nul, 2);
		}
	}
	return pid;
}

/*
 * The verdict on child @pid, which exec'd @what: OPEN if it exited 0,
 * UNTESTABLE if the exec itself failed (the child's _exit(127)).
 */
static enum verdict judge_exec(pid_t pid, const char *what)
{
	int st;

	step("exec");
	if (waitpid(pid, &st, 0) != pid)
		return fail("waitpid");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return OPEN;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		/* Not run: nothing was tested (a noexec /var/tmp, say). */
		snprintf(rep->why, sizeof(rep->why), "%s did not exec", what);
		return UNTESTABLE;
	}
	if (WIFSIGNALED(st))
		snprintf(rep->why, sizeof(rep->why), "%s SIG%s", what,
			 sigabbrev_np(WTERMSIG(st)) ?: "?");
	else
		snprintf(rep->why, sizeof(rep->why), "%s: exit %d", what,
			 WEXITSTATUS(st));
	return CLOSED;
}

static enum verdict r_rwx_pt_load(void)
{
	char *const argv[] = { (char *)rwx_helper, "--print", NULL };
	pid_t pid = fork_quiet();

	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		execv(rwx_helper, argv);
		_exit(127);
	}
	return judge_exec(pid, rwx_helper);
}

/*
 * The copy of this program made by "fmm-elfedit --rx-bss" (fmm-wx-NN-rxbss)
 * has a PT_LOAD "R E" with no file bytes, which the ELF loader maps as
 * anonymous memory with VM_EXEC (vm_brk_flags(), writable by default):
 * with --rxbss-call it writes the code there and calls it, exit 0 if it
 * ran.  Its own program headers say where (a static, non-PIE program).
 */
static int rxbss_call(void)
{
	const ElfW(Phdr) *ph = (const void *)getauxval(AT_PHDR);
	size_t n = getauxval(AT_PHNUM), i;
	unsigned char *p;

	for (i = 0; ph && i < n; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_filesz ||
		    !(ph[i].p_flags & PF_X))
			continue;
		p = (unsigned char *)ph[i].p_vaddr;
		memcpy(p, code, sizeof(code));
		return ((int (*)(void))(void *)p)() == 42 ? 0 : 1;
	}
	fprintf(stderr, "fmm-wx: no PT_LOAD R E without file bytes\n");
	return 2;
}

static enum verdict r_rx_bss_load(void)
{
	char helper[PATH_MAX];
	char *const argv[] = { helper, "--rxbss-call", NULL };
	ssize_t n = readlink("/proc/self/exe", helper, sizeof(helper) - 8);
	pid_t pid;

	if (n < 0)
		return fail("readlink /proc/self/exe");
	strcpy(helper + n, "-rxbss");
	pid = fork_quiet();
	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		execv(helper, argv);
		_exit(127);
	}
	return judge_exec(pid, "fmm-wx-NN-rxbss");
}

/*
 * A copy of this program owned by its user (nobody's, 65534, when root runs
 * it), on /var/tmp (a file system with user extended attributes), marked
 * user.pax.flags=m as paxctl-ng would, exec'd from an O_RDONLY descriptor
 * once unlinked, with --mmap-rwx: an exemption from W^X a user grants
 * itself.  The module honours m only on a file root alone can write (see
 * module/mark.c).
 */
static enum verdict r_pax_m_user_copy(void)
{
	char path[] = "/var/tmp/fmm-wx-m.XXXXXX";
	char *const argv[] = { path, "--mmap-rwx", NULL };
	char buf[65536];
	int in, out, rd;
	ssize_t n;
	pid_t pid;

	step("copy");
	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fail("open /proc/self/exe");
	out = mkstemp(path);
	if (out < 0)
		return fail("mkstemp /var/tmp");
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			break;
	close(in);
	if (n || fchmod(out, 0755) ||
	    (geteuid() == 0 && fchown(out, 65534, 65534))) {
		unlink(path);
		return fail("copy");
	}
	step("setxattr");
	if (fsetxattr(out, "user.pax.flags", "m", 1, 0)) {
		unlink(path);
		return errno == EOPNOTSUPP ? absent("user xattrs on /var/tmp") :
					     fail("fsetxattr user.pax.flags");
	}
	close(out);
	rd = open(path, O_RDONLY | O_CLOEXEC);
	unlink(path);
	if (rd < 0)
		return fail("open the copy");
	pid = fork_quiet();
	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		syscall(SYS_execveat, rd, "", argv, environ, AT_EMPTY_PATH);
		_exit(127);
	}
	return judge_exec(pid, "the marked copy (mmap RWX)");
}

/* One page of our own executable, mapped private R|X. */
static void *own_exe_rx(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	void *p;

	if (fd < 0) {
		fail("open /proc/self/exe");
		return NULL;
	}
	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fail("mmap");
		return NULL;
	}
	return p;
}

static enum verdict r_proc_self_mem(void)
{
	void *p = own_exe_rx();
	int fd;

	if (!p)
		return CLOSED;
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail("open /proc/self/mem");
	/* pwrite64: a 32-bit address above 2 GiB is a negative off_t */
	if (pwrite64(fd, code, sizeof(code), (off64_t)(uintptr_t)p) !=
	    sizeof(code))
		return fail("pwrite /proc/self/mem");
	return call(p);
}

static enum verdict r_process_vm_writev(void)
{
	void *p = own_exe_rx();
	struct iovec local = { .iov_base = (void *)code, .iov_len = sizeof(code) };
	struct iovec remote = { .iov_len = sizeof(code) };

	if (!p)
		return CLOSED;
	remote.iov_base = p;
	if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) !=
	    (ssize_t)sizeof(code))
		return fail("process_vm_writev");
	return call(p);
}

static enum verdict r_ptrace_poke(void)
{
	unsigned char *p = own_exe_rx();
	unsigned char buf[2 * sizeof(long)];
	pid_t pid;
	size_t off;
	long word;
	int st, n;

	if (!p)
		return CLOSED;
	memset(buf, 0xc3, sizeof(buf));
	memcpy(buf, code, sizeof(code));
	step("fork");
	pid = fork();
	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
			fail("PTRACE_TRACEME");
			_exit(1);
		}
		raise(SIGSTOP);
		_exit(call(p) == OPEN ? 42 : 1);
	}
	step("waitpid");
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
		kill(pid, SIGKILL);
		return rep->why[0] ? CLOSED : failmsg("child did not stop");
	}
	for (off = 0; off < sizeof(code); off += sizeof(long)) {
		memcpy(&word, buf + off, sizeof(long));
		if (ptrace(PTRACE_POKEDATA, pid, p + off, (void *)word)) {
			kill(pid, SIGKILL);
			return fail("PTRACE_POKEDATA");
		}
	}
	/* Let it run; pass on any signal it stops with (e.g. SIGSEGV). */
	for (n = 0, st = 0; n < 8; n++) {
		if (ptrace(PTRACE_CONT, pid, NULL,
			   (void *)(long)(WIFSTOPPED(st) ? WSTOPSIG(st) : 0))) {
			kill(pid, SIGKILL);
			return fail("PTRACE_CONT");
		}
		if (waitpid(pid, &st, 0) != pid)
			return fail("waitpid");
		if (!WIFSTOPPED(st))
			break;
		if (WSTOPSIG(st) == SIGSEGV || WSTOPSIG(st) == SIGBUS ||
		    WSTOPSIG(st) == SIGILL) {
			snprintf(rep->why, sizeof(rep->why), "call SIG%s",
				 sigabbrev_np(WSTOPSIG(st)) ?: "?");
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return CLOSED;
		}
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 42)
		return OPEN;
	kill(pid, SIGKILL);
	if (!rep->why[0])
		snprintf(rep->why, sizeof(rep->why), "child: %s %d",
			 WIFEXITED(st) ? "exit" : "status", WIFEXITED(st) ?
			 WEXITSTATUS(st) : st);
	return CLOSED;
}

static enum verdict r_memfd_double_map(void)
{
	int fd = memfd_create("fmm-wx", MFD_CLOEXEC);
	unsigned char *w, *x;

	if (fd < 0)
		return fail("memfd_create");
	if (ftruncate(fd, page))
		return fail("ftruncate");
	w = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w == MAP_FAILED)
		return fail("mmap(RW)");
	x = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	if (x == MAP_FAILED)
		return fail("mmap(RX)");
	memcpy(w, code, sizeof(code));
	return call(x);
}

static enum verdict r_file_open_for_write(void)
{
	char path[] = "/tmp/fmm-wx.XXXXXX";
	int fd = mkstemp(path);
	void *p;

	if (fd < 0)
		return fail("mkstemp");
	unlink(path);
	if (ftruncate(fd, page))
		return fail("ftruncate");
	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail("mmap");
	if (pwrite(fd, code, sizeof(code), 0) != sizeof(code))
		return fail("pwrite");
	return call(p);
}

static enum verdict r_written_file_mapped(void)
{
	const char *what;
	int fd = ro_file("/tmp", page, true, false, &what);
	void *p;

	if (fd < 0)
		return fail(what);
	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return fail("mmap");
	return call(p);
}

/* --- the objects --------------------------------------------------------- */

/*
 * Every kind of memory object a process can map, each tried five ways
 * (methods, below).  The same object is reached again through a second
 * view: another mmap() of its descriptor, another shmat(), or for shared
 * memory without a descriptor an mremap(old_size 0) alias.  Objects with a
 * single view (private memory, the vDSO) have no rx and alias methods.
 */
enum view { V_ONE, V_MREMAP, V_FD, V_SHM, V_VDSO };

struct object;

/* An object opened in a route's child. */
struct ostate {
	const struct object *o;
	int fd;			/* mmap()'s descriptor, or -1 */
	int shmid;		/* V_SHM */
	int mflags;		/* mmap()'s flags */
	off_t pgoff;		/* mmap()'s offset */
	size_t len;		/* each view's length */
	unsigned char *first;	/* the first view (V_MREMAP, V_VDSO) */
};

struct object {
	const char *name;
	enum view view;
	size_t off;		/* where in a view the code goes */
	/* Opens @st; OPEN, or the verdict the route gets (errno-based). */
	enum verdict (*open)(struct ostate *st);
	const char *expect0, *expect3;	/* per method: o open, c closed, - none */
	const char *how;
};

enum { M_RWX, M_RX, M_ALIAS, M_MPROTECT, M_FORK, NMETHODS };
static const char *const method_names[NMETHODS] = {
	"rwx", "rx", "alias", "mprotect", "fork"
};

/* The object and method of the route being run (set before its fork). */
static const struct object *cur_obj;
static int cur_method;

static enum verdict o_anon(struct ostate *st, int flags, size_t len)
{
	st->mflags = flags | MAP_ANONYMOUS;
	st->len = len;
	if ((flags & MAP_HUGETLB) && nr_hugepages() == 0)
		return no_huge_pages();
	return OPEN;
}

static enum verdict o_anon_private(struct ostate *st)
{
	return o_anon(st, MAP_PRIVATE, page);
}

static enum verdict o_anon_shared(struct ostate *st)
{
	return o_anon(st, MAP_SHARED, page);
}

static enum verdict o_hugetlb_private(struct ostate *st)
{
	return o_anon(st, MAP_PRIVATE | MAP_HUGETLB, HPAGE);
}

static enum verdict o_hugetlb_shared(struct ostate *st)
{
	return o_anon(st, MAP_SHARED | MAP_HUGETLB, HPAGE);
}

static enum verdict o_devzero(struct ostate *st, int flags)
{
	st->fd = open("/dev/zero", O_RDWR);
	if (st->fd < 0)
		return fail("open /dev/zero");
	st->mflags = flags;
	st->len = page;
	return OPEN;
}

static enum verdict o_devzero_private(struct ostate *st)
{
	return o_devzero(st, MAP_PRIVATE);
}

static enum verdict o_devzero_shared(struct ostate *st)
{
	return o_devzero(st, MAP_SHARED);
}

/* Views of @len bytes mapped MAP_SHARED from descriptor @fd. */
static enum verdict o_shared(struct ostate *st, int fd, size_t len)
{
	st->fd = fd;
	st->mflags = MAP_SHARED;
	st->len = len;
	return OPEN;
}

/* A shared object of @len bytes behind descriptor @fd (-1: errno). */
static enum verdict o_fd(struct ostate *st, int fd, size_t len,
			 const char *what)
{
	if (fd < 0)
		return errno == ENOSYS ? absent(what) : fail(what);
	o_shared(st, fd, len);
	if (ftruncate(fd, len))
		return errno == ENOMEM ? no_huge_pages() : fail("ftruncate");
	return OPEN;
}

static enum verdict o_memfd(struct ostate *st)
{
	return o_fd(st, memfd_create("fmm-wx", MFD_CLOEXEC), page,
		    "memfd_create");
}

static enum verdict o_memfd_hugetlb(struct ostate *st)
{
	if (nr_hugepages() == 0)
		return no_huge_pages();
	return o_fd(st, memfd_create("fmm-wx", MFD_CLOEXEC | MFD_HUGETLB),
		    HPAGE, "memfd_create(MFD_HUGETLB)");
}

/* A new unlinked file in @dir, open for reading and writing. */
static enum verdict o_dirfile(struct ostate *st, const char *dir)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/fmm-wx.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return o_fd(st, fd, page, "mkstemp");
}

static enum verdict o_shm_file(struct ostate *st)
{
	return o_dirfile(st, "/dev/shm");
}

static enum verdict o_tmp_file(struct ostate *st)
{
	return o_dirfile(st, "/tmp");
}

static enum verdict o_secretmem(struct ostate *st)
{
	return o_fd(st, syscall(SYS_memfd_secret, 0), page, "memfd_secret");
}

static enum verdict o_sysv(struct ostate *st, int flags, size_t len)
{
	if ((flags & SHM_HUGETLB) && nr_hugepages() == 0)
		return no_huge_pages();
	/* Mode 0700: shmat(SHM_EXEC) wants the execute permission. */
	st->shmid = shmget(IPC_PRIVATE, len, IPC_CREAT | 0700 | flags);
	st->len = len;
	if (st->shmid >= 0)
		return OPEN;
	if (errno == ENOMEM)
		return no_huge_pages();
	/* SHM_HUGETLB wants CAP_IPC_LOCK or vm.hugetlb_shm_group. */
	if (errno == EPERM && (flags & SHM_HUGETLB))
		return absent("shmget(SHM_HUGETLB) (vm.hugetlb_shm_group)");
	return fail("shmget");
}

static enum verdict o_sysv_plain(struct ostate *st)
{
	return o_sysv(st, 0, page);
}

static enum verdict o_sysv_hugetlb(struct ostate *st)
{
	return o_sysv(st, SHM_HUGETLB, HPAGE);
}

/* The submission queue entries of a new ring, IORING_OFF_SQES. */
static enum verdict o_io_uring(struct ostate *st)
{
	struct io_uring_params prm = { 0 };
	int fd = syscall(SYS_io_uring_setup, 64, &prm);

	if (fd < 0)
		return errno == ENOSYS ? absent("io_uring_setup") :
					 fail("io_uring_setup");
	st->fd = fd;
	st->mflags = MAP_SHARED | MAP_POPULATE;
	st->pgoff = IORING_OFF_SQES;
	st->len = (prm.sq_entries * sizeof(struct io_uring_sqe) + page - 1) &
		  ~(page - 1);
	return OPEN;
}

/* A software event's ring buffer: its header page, then one data page. */
static enum verdict o_perf(struct ostate *st)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.disabled = 1,
		.exclude_kernel = 1,
	};
	int fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);

	if (fd < 0) {
		/* kernel.perf_event_paranoid keeps it from this user. */
		if (errno == EACCES || errno == EPERM)
			return absent("perf_event_open (perf_event_paranoid)");
		return fail("perf_event_open");
	}
	return o_shared(st, fd, 2 * page);
}

/* A BPF array map made mmap()able, one page of values. */
static enum verdict o_bpf(struct ostate *st)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = page;
	attr.max_entries = 1;
	attr.map_flags = BPF_F_MMAPABLE;
	fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (fd < 0) {
		/* kernel.unprivileged_bpf_disabled keeps it from this user. */
		if (errno == EPERM || errno == ENOSYS)
			return absent("bpf(BPF_MAP_CREATE)");
		return fail("bpf(BPF_MAP_CREATE)");
	}
	return o_shared(st, fd, page);
}

/* A dma-buf over a sealed memfd, from /dev/udmabuf (root's, if built). */
static enum verdict o_udmabuf(struct ostate *st)
{
	struct udmabuf_create c = { 0 };
	int dev = open("/dev/udmabuf", O_RDWR);
	int mfd, fd;

	if (dev < 0)
		return absent("open /dev/udmabuf");
	mfd = memfd_create("fmm-wx-udmabuf", MFD_ALLOW_SEALING);
	if (mfd < 0 || ftruncate(mfd, page) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return fail("memfd for udmabuf");
	c.memfd = mfd;
	c.size = page;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (fd < 0)
		return fail("UDMABUF_CREATE");
	return o_shared(st, fd, page);
}

/*
 * This process's vDSO, from /proc/self/maps.  Not for a 32-bit process,
 * whose system calls enter the kernel through the vDSO: once it is
 * writable, the next one faults.
 */
static enum verdict o_vdso(struct ostate *st)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi;

	if (sizeof(long) == 4) {
		errno = ENOSYS;
		return absent("32-bit system calls enter through the vDSO; route");
	}
	if (!f)
		return fail("open /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			fclose(f);
			st->first = (unsigned char *)lo;
			st->len = hi - lo;
			return OPEN;
		}
	}
	fclose(f);
	return failmsg("no [vdso] in /proc/self/maps");
}

/* PROT_* as shmat() flags. */
static int shm_flags(int prot)
{
	return (prot & PROT_WRITE ? 0 : SHM_RDONLY) |
	       (prot & PROT_EXEC ? SHM_EXEC : 0);
}

/*
 * A view of the object with @prot: the first one (@again false) or another
 * of the same object.  NULL when the step failed, the reason in rep.
 */
static unsigned char *view(struct ostate *st, int prot, bool again)
{
	void *p;

	switch (st->o->view) {
	case V_SHM:
		step(again ? "shmat (second)" : "shmat");
		p = shmat(st->shmid, NULL, shm_flags(prot));
		if (p == (void *)-1)
			break;
		if (!again)	/* gone when the last attach goes */
			shmctl(st->shmid, IPC_RMID, NULL);
		return p;
	case V_VDSO:
		step("mprotect vDSO");
		if (mprotect(st->first, st->len, prot))
			break;
		return st->first;
	case V_MREMAP:
		if (again) {
			step("mremap alias");
			p = mremap(st->first, 0, st->len, MREMAP_MAYMOVE);
			if (p == MAP_FAILED)
				break;
			step("mprotect alias");
			if (mprotect(p, st->len, prot))
				break;
			return p;
		}
		/* fall through */
	case V_ONE:
	case V_FD:
		step(again ? "mmap (second)" : "mmap");
		p = mmap(NULL, st->len, prot, st->mflags, st->fd, st->pgoff);
		if (p == MAP_FAILED)
			break;
		if (!again)
			st->first = p;
		return p;
	}
	fail(rep->step);
	return NULL;
}

static enum verdict write_code(unsigned char *p)
{
	step("write");
	memcpy(p + cur_obj->off, code, sizeof(code));
	return OPEN;
}

static enum verdict call_at(unsigned char *p)
{
	return call(p + cur_obj->off);
}

static enum verdict o_mprotect(unsigned char *p, size_t len, int prot)
{
	step("mprotect");
	if (mprotect(p, len, prot))
		return fail("mprotect");
	return OPEN;
}

/* The method cur_method on the object opened in @st. */
static enum verdict try_method(struct ostate *st)
{
	unsigned char *w, *x;
	enum verdict v;
	pid_t pid;

	switch (cur_method) {
	case M_RWX:
		w = view(st, PROT_READ | PROT_WRITE | PROT_EXEC, false);
		if (!w)
			return CLOSED;
		write_code(w);
		return call_at(w);
	case M_RX:	/* written through one view, run from a new one */
		w = view(st, PROT_READ | PROT_WRITE, false);
		if (!w)
			return CLOSED;
		write_code(w);
		x = view(st, PROT_READ | PROT_EXEC, true);
		return x ? call_at(x) : CLOSED;
	case M_ALIAS:	/* executable first, then a writable view of it */
		x = view(st, PROT_READ | PROT_EXEC, false);
		if (!x)
			return CLOSED;
		w = view(st, PROT_READ | PROT_WRITE, true);
		if (!w)
			return CLOSED;
		write_code(w);
		return call_at(x);
	case M_MPROTECT:	/* a read-only view made executable */
		w = view(st, PROT_READ | PROT_WRITE, false);
		if (!w)
			return CLOSED;
		write_code(w);
		if (cur_obj->view == V_ONE || cur_obj->view == V_VDSO) {
			x = w;
		} else {
			x = view(st, PROT_READ, true);
			if (!x)
				return CLOSED;
		}
		v = o_mprotect(x, st->len, PROT_READ | PROT_EXEC);
		return v == OPEN ? call_at(x) : v;
	case M_FORK:	/* written by the parent, made executable in a child */
		w = view(st, PROT_READ | PROT_WRITE, false);
		if (!w)
			return CLOSED;
		write_code(w);
		step("fork");
		pid = fork();
		if (pid < 0)
			return fail("fork");
		if (pid == 0) {
			v = o_mprotect(w, st->len, PROT_READ | PROT_EXEC);
			_exit(v == OPEN && call_at(w) == OPEN ? 42 : 1);
		}
		return grandchild_verdict(pid);
	}
	return failmsg("no such method");
}

/*
 * The route cur_obj / cur_method.  A SysV segment whose first attach was
 * refused is removed here: its huge pages would stay taken.
 */
static enum verdict r_object(void)
{
	struct ostate st = { .o = cur_obj, .fd = -1, .shmid = -1 };
	enum verdict v;

	step("open");
	v = cur_obj->open(&st);
	if (v == OPEN)
		v = try_method(&st);
	if (st.shmid >= 0)
		shmctl(st.shmid, IPC_RMID, NULL);
	return v;
}

#define OBJ(n, v, off, fn, e0, e3, h) { n, v, off, fn, e0, e3, h }
/* Methods: rwx rx alias mprotect fork. */
static const struct object objects[] = {
	OBJ("anon-private", V_ONE, 0, o_anon_private, "o--oo", "c--cc",
	    "MAP_PRIVATE|MAP_ANONYMOUS"),
	OBJ("anon-shared", V_MREMAP, 0, o_anon_shared, "ooooo", "ccccc",
	    "MAP_SHARED|MAP_ANONYMOUS (shmem), aliased by mremap"),
	OBJ("devzero-private", V_ONE, 0, o_devzero_private, "o--oo", "c--cc",
	    "/dev/zero MAP_PRIVATE (anonymous memory)"),
	OBJ("devzero-shared", V_MREMAP, 0, o_devzero_shared, "ooooo", "ccccc",
	    "/dev/zero MAP_SHARED (shmem), aliased by mremap"),
	OBJ("memfd", V_FD, 0, o_memfd, "ooooo", "ccccc",
	    "memfd_create(), mapped MAP_SHARED"),
	OBJ("memfd-hugetlb", V_FD, 0, o_memfd_hugetlb, "ooooo", "ccccc",
	    "memfd_create(MFD_HUGETLB), 2 MiB"),
	OBJ("hugetlb-private", V_ONE, 0, o_hugetlb_private, "o--oo", "c--cc",
	    "MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB, 2 MiB"),
	OBJ("hugetlb-shared", V_ONE, 0, o_hugetlb_shared, "o--oo", "c--cc",
	    "MAP_SHARED|MAP_ANONYMOUS|MAP_HUGETLB, 2 MiB"),
	OBJ("sysv", V_SHM, 0, o_sysv_plain, "ooooo", "ccccc",
	    "SysV shm, attached with shmat() (SHM_RDONLY, SHM_EXEC)"),
	OBJ("sysv-hugetlb", V_SHM, 0, o_sysv_hugetlb, "ooooo", "ccccc",
	    "SysV shm SHM_HUGETLB, 2 MiB"),
	OBJ("io-uring", V_FD, 0, o_io_uring, "ooooo", "ccccc",
	    "an io_uring's SQE array (IORING_OFF_SQES)"),
	OBJ("perf", V_FD, 512, o_perf, "ooooc", "ccccc",
	    "a perf event's ring buffer, its header page (the data pages are the kernel's to write; VM_DONTCOPY: not in a child)"),
	OBJ("bpf-array", V_FD, 0, o_bpf, "ooocc", "ccccc",
	    "a BPF_F_MMAPABLE array map (no VM_MAYEXEC after mmap)"),
	OBJ("secretmem", V_FD, 0, o_secretmem, "ccccc", "ccccc",
	    "memfd_secret(): its mount is noexec in every mode (off unless secretmem.enable=1 on 6.1)"),
	OBJ("udmabuf", V_FD, 0, o_udmabuf, "ooooo", "ccccc",
	    "a dma-buf from /dev/udmabuf over a sealed memfd"),
	OBJ("vdso", V_VDSO, 0, o_vdso, "o--oo", "c--cc",
	    "the process's vDSO, made writable (copy-on-write)"),
	OBJ("shm-file", V_FD, 0, o_shm_file, "ooooo", "coocc",
	    "a file of the tmpfs mounted on /dev/shm, open O_RDWR"),
	OBJ("tmp-file", V_FD, 0, o_tmp_file, "ooooo", "coocc",
	    "a file in /tmp, open O_RDWR"),
};
#define NOBJECTS (sizeof(objects) / sizeof(objects[0]))

/* --- the table ----------------------------------------------------------- */

struct route {
	const char *name;
	enum verdict (*fn)(void);
	enum verdict expect0, expect3;	/* stock rules; W^X (nx=3) */
	const char *how;
	const struct object *obj;	/* r_object()'s, else NULL */
	int method;
};

#define R(n, f, e0, e3, h) { n, f, e0, e3, h, NULL, 0 }
static const struct route routes[] = {
	R("mmap-anon-rwx", r_mmap_anon_rwx, OPEN, CLOSED,
	  "mmap anonymous RWX, write, call"),
	R("mprotect-anon", r_mprotect_anon, OPEN, CLOSED,
	  "anonymous RW, write, mprotect(RX), call"),
	R("mprotect-anon-rwx", r_mprotect_anon_rwx, OPEN, CLOSED,
	  "anonymous RW, write, mprotect(RWX), call"),
	R("pkey-mprotect-anon", r_pkey_mprotect_anon, OPEN, CLOSED,
	  "anonymous RW, write, pkey_mprotect(RX, pkey_alloc() or -1), call"),
	R("mprotect-file-cow", r_mprotect_file_cow, OPEN, CLOSED,
	  "O_RDONLY /tmp file mapped private RW, written (COW), mprotect(RX), call"),
	R("mprotect-after-mremap", r_mprotect_after_mremap, OPEN, CLOSED,
	  "anonymous RW written, mremap to twice the size, mprotect(RX), call"),
	R("mprotect-rw-r-rx", r_mprotect_rw_r_rx, OPEN, CLOSED,
	  "anonymous RW written, mprotect(R), mprotect(RX), call"),
	R("mprotect-forked-child", r_mprotect_forked_child, OPEN, CLOSED,
	  "anonymous RW written, fork, the child mprotects RX and calls"),
	R("shmat-exec", r_shmat_exec, OPEN, CLOSED,
	  "SysV shm (mode 0700) attached SHM_EXEC (RWX), write, call"),
	R("shmat-rdonly-exec", r_shmat_rdonly_exec, OPEN, CLOSED,
	  "SysV shm attached RW and written, attached again SHM_RDONLY|SHM_EXEC, call that"),
	R("uffd-copy-anon", r_uffd_copy_anon, OPEN, CLOSED,
	  "anonymous private R|X registered MISSING, UFFDIO_COPY the code in, call"),
	R("uffd-copy-shmem", r_uffd_copy_shmem, OPEN, CLOSED,
	  "sparse memfd mapped private R|X, MISSING, UFFDIO_COPY, call"),
	R("uffd-copy-tmpfs", r_uffd_copy_tmpfs, OPEN, CLOSED,
	  "sparse /dev/shm file (O_RDONLY) mapped private R|X, MISSING, UFFDIO_COPY, call"),
	R("uffd-copy-hugetlb", r_uffd_copy_hugetlb, OPEN, CLOSED,
	  "MFD_HUGETLB memfd mapped private R|X, MISSING, UFFDIO_COPY 2 MiB, call"),
	R("uffd-copy-tmpfs-shared", r_uffd_copy_tmpfs_shared, OPEN, CLOSED,
	  "sparse /dev/shm file (O_RDWR) mapped shared R|X, MISSING, UFFDIO_COPY, call"),
	R("uffd-continue-tmpfs", r_uffd_continue_tmpfs, OPEN, CLOSED,
	  "/dev/shm file holding the code mapped private R|X, MINOR, UFFDIO_CONTINUE, call"),
	R("uffd-continue", r_uffd_continue, OPEN, CLOSED,
	  "memfd holding the code mapped private R|X, MINOR, UFFDIO_CONTINUE, call"),
	R("uffd-zeropage", r_uffd_zeropage, OPEN, CLOSED,
	  "sparse tmpfs file mapped private R|X, MISSING, UFFDIO_ZEROPAGE succeeds (not called)"),
	R("shared-anon-alias", r_shared_anon_alias, OPEN, CLOSED,
	  "shared anonymous R|X, mremap(old_size 0) alias mprotect RW, write alias, call original"),
	R("shared-anon-alias-rw", r_shared_anon_alias_rw, OPEN, CLOSED,
	  "shared anonymous RW written, mremap(old_size 0) alias, mprotect original RX, call"),
	R("personality-rie", r_personality_rie, OPEN, CLOSED,
	  "personality(READ_IMPLIES_EXEC), mmap anonymous RW (so RWX), write, call"),
	R("rwx-pt-load", r_rwx_pt_load, OPEN, CLOSED,
	  "exec a copy of fmm-nx with an RWX PT_LOAD (--rwx-helper), exit 0"),
	R("rx-bss-load", r_rx_bss_load, OPEN, CLOSED,
	  "exec a copy of fmm-wx with a PT_LOAD R E without file bytes (anonymous, VM_EXEC), write, call"),
	R("proc-self-mem", r_proc_self_mem, OPEN, CLOSED,
	  "own executable mapped private R|X, pwrite the code via /proc/self/mem, call"),
	R("process-vm-writev", r_process_vm_writev, CLOSED, CLOSED,
	  "own executable mapped private R|X, process_vm_writev to self: closed by the kernel (EFAULT, no FOLL_FORCE)"),
	R("ptrace-poke", r_ptrace_poke, OPEN, CLOSED,
	  "child maps own executable R|X, PTRACE_TRACEME; parent POKEDATAs the code, child calls it"),
	R("pax-m-user-copy", r_pax_m_user_copy, OPEN, CLOSED,
	  "copy of this program owned by its user (nobody's for root), marked user.pax.flags=m, exec'd: mmap RWX, call"),
	R("memfd-double-map", r_memfd_double_map, OPEN, CLOSED,
	  "memfd mapped shared RW and shared RX, write one, call the other"),
	R("file-open-for-write", r_file_open_for_write, OPEN, OPEN,
	  "/tmp file open O_RDWR mapped shared R|X, pwrite the code, call; out of W^X scope"),
	R("written-file-mapped", r_written_file_mapped, OPEN, OPEN,
	  "code written to a /tmp file, reopened O_RDONLY, mapped R|X, call; out of W^X scope"),
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/*
 * The named routes, then one route "OBJECT:METHOD" per object and method
 * it has (the objects' table), in all[0 .. nall-1].
 */
static struct route all[NROUTES + NOBJECTS * NMETHODS];
static size_t nall;

static enum verdict verdict_of(char c)
{
	return c == 'o' ? OPEN : CLOSED;
}

static void make_routes(void)
{
	size_t k;
	int m;

	for (k = 0; k < NROUTES; k++)
		all[nall++] = routes[k];
	for (k = 0; k < NOBJECTS; k++) {
		const struct object *o = &objects[k];

		for (m = 0; m < NMETHODS; m++) {
			struct route *r = &all[nall];
			char *name;

			if (o->expect0[m] == '-')
				continue;
			if (asprintf(&name, "%s:%s", o->name, method_names[m]) < 0)
				ksft_exit_fail_msg("asprintf: %s\n", strerror(errno));
			*r = (struct route){ name, r_object, verdict_of(o->expect0[m]),
					     verdict_of(o->expect3[m]), o->how, o, m };
			nall++;
		}
	}
}

/* Run one route in a child; its verdict, and why in @why. */
static enum verdict run_route(const struct route *r, char *why, size_t len)
{
	enum verdict v;
	pid_t pid;
	int st;

	memset(rep, 0, sizeof(*rep));
	cur_obj = r->obj;
	cur_method = r->method;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (pid == 0) {
		alarm(10);
		step("start");
		_exit(r->fn());
	}
	if (waitpid(pid, &st, 0) != pid)
		ksft_exit_fail_msg("waitpid: %s\n", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) <= ABSENT) {
		v = WEXITSTATUS(st);
		snprintf(why, len, "%s", v == OPEN ? "" : rep->why);
	} else if (WIFSIGNALED(st)) {
		v = CLOSED;
		snprintf(why, len, "%s SIG%s%s", rep->step,
			 sigabbrev_np(WTERMSIG(st)) ?: "?",
			 WTERMSIG(st) == SIGALRM ? " (hung)" : "");
	} else {
		v = CLOSED;
		snprintf(why, len, "%s: exit %d", rep->step, WEXITSTATUS(st));
	}
	return v;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--rwx-helper PATH] --print | --expect 0|3 | --list\n",
		prog);
	exit(KSFT_FAIL);
}

/* fmm-nx-NN-rwxtext beside our own executable. */
static const char *default_helper(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	char *slash;

	if (n < 0)
		n = 0;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (slash)
		slash[1] = '\0';
	else
		path[0] = '\0';
	strcat(path, sizeof(long) == 4 ? "fmm-nx-32-rwxtext" :
					 "fmm-nx-64-rwxtext");
	return path;
}

int main(int argc, char **argv)
{
	char why[sizeof(rep->why) + sizeof(rep->step) + 200];
	enum verdict want, got;
	int i = 1, mode = -1;
	bool print = false;
	size_t k;

	page = sysconf(_SC_PAGESIZE);
	/* The exec'd copy of route pax-m-user-copy: 0 if the code ran. */
	if (argc == 2 && !strcmp(argv[1], "--rxbss-call"))
		return rxbss_call();
	if (argc == 2 && !strcmp(argv[1], "--mmap-rwx")) {
		rep = malloc(sizeof(*rep));
		return rep && r_mmap_anon_rwx() == OPEN ? 0 : 1;
	}
	if (argc > 2 && !strcmp(argv[1], "--rwx-helper")) {
		rwx_helper = argv[2];
		i = 3;
	} else {
		rwx_helper = default_helper();
	}
	make_routes();
	if (argc == i + 1 && !strcmp(argv[i], "--list")) {
		for (k = 0; k < nall; k++)
			printf("%s %s %s %s\n", all[k].name,
			       verdict_names[all[k].expect0],
			       verdict_names[all[k].expect3], all[k].how);
		return 0;
	} else if (argc == i + 1 && !strcmp(argv[i], "--print")) {
		print = true;
	} else if (argc == i + 2 && !strcmp(argv[i], "--expect") &&
		   (!strcmp(argv[i + 1], "0") || !strcmp(argv[i + 1], "3"))) {
		mode = argv[i + 1][0] - '0';
	} else {
		usage(argv[0]);
	}

	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rep == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));

	if (!print) {
		ksft_print_header();
		ksft_set_plan(nall);
		ksft_print_msg("PID %d, %d-bit, uid %d, checking the %s table, rwx helper %s\n",
			       getpid(), sizeof(long) == 4 ? 32 : 64,
			       (int)getuid(), mode ? "W^X (nx=3)" : "stock",
			       rwx_helper);
	}
	for (k = 0; k < nall; k++) {
		const struct route *r = &all[k];

		got = run_route(r, why, sizeof(why));
		if (print) {
			printf("%s %s%s%s\n", r->name, verdict_names[got],
			       got == OPEN ? "" : ": ", why);
			continue;
		}
		want = mode ? r->expect3 : r->expect0;
		ksft_test_result(got == want || got == ABSENT,
				 "%s: %s%s%s (want %s)\n", r->name,
				 verdict_names[got], got == OPEN ? "" : ": ",
				 why, verdict_names[want]);
	}
	if (print)
		return 0;
	ksft_finished();
}
