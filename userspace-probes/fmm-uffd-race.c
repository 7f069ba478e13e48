// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-uffd-race: a hugetlb UFFDIO_COPY whose source page is not present,
 * raced against a remap of its destination to PROT_READ|PROT_EXEC.
 *
 * The destination is a file of a mounted hugetlbfs (DIR), mapped shared and
 * writable and registered with one userfaultfd; the source is anonymous
 * memory registered with a second one, so copying it faults.  The kernel
 * then drops the mmap lock, copies the source into a huge page of its own
 * and calls the hugetlb fill again with that page in hand.  Meanwhile the
 * thread that serves the source's fault maps the destination again,
 * PROT_READ|PROT_EXEC, registers it again and only then lets the copy go
 * on: the fill's second call sees an executable vma.
 *
 * The code copied is "mov eax, 42; ret".  One line says how it ended:
 *   "refused: EACCES, nothing filled"	exit 0 (what W^X must do)
 *   "filled: the code ran"		exit 10 (the stock kernel)
 *   anything else			exit 1, with what was seen
 * A run whose source never faulted, or whose remap failed, did not race
 * and says so (exit 1).  The second userfaultfd handles a kernel-mode
 * fault: root, or vm.unprivileged_userfaultfd=1.
 *
 * Usage: fmm-uffd-race DIR
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HPAGE (2UL << 20)	/* x86's default huge page, 2 MiB */

/* mov eax, 42; ret */
static const unsigned char code[] = { 0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3 };

static int dst_uffd, src_uffd, fd;
static unsigned char *dst, *src, *codebuf;
static const char *remap_err;	/* NULL once the remap was done */
static int faults;

static void die(const char *what)
{
	printf("error: %s: %s\n", what, strerrorname_np(errno) ?: "E?");
	exit(1);
}

static int new_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int u = syscall(SYS_userfaultfd, O_CLOEXEC);

	if (u < 0)
		die("userfaultfd (root, or vm.unprivileged_userfaultfd=1)");
	if (ioctl(u, UFFDIO_API, &api))
		die("UFFDIO_API");
	return u;
}

static int register_missing(int u, void *p, size_t len)
{
	struct uffdio_register r = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(u, UFFDIO_REGISTER, &r);
}

/*
 * Serves the source's one fault: first the destination becomes
 * executable (mapped again over itself, and registered again, so the
 * copy's retry finds it), then the source is filled with the code.
 */
static void *serve_source(void *arg)
{
	struct pollfd pfd = { .fd = src_uffd, .events = POLLIN };
	struct uffdio_copy c = { 0 };
	struct uffd_msg msg;
	void *p;

	(void)arg;
	if (poll(&pfd, 1, 20000) != 1 || read(src_uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	faults++;
	remap_err = "mmap(PROT_READ|PROT_EXEC, MAP_FIXED)";
	p = mmap(dst, HPAGE, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED, fd, 0);
	if (p == dst) {
		remap_err = "UFFDIO_REGISTER of the executable destination";
		if (!register_missing(dst_uffd, dst, HPAGE))
			remap_err = NULL;
	}
	c.dst = (uintptr_t)src;
	c.src = (uintptr_t)codebuf;
	c.len = HPAGE;
	if (ioctl(src_uffd, UFFDIO_COPY, &c))
		printf("# source's UFFDIO_COPY: %s\n", strerrorname_np(errno) ?: "E?");
	return NULL;
}

int main(int argc, char **argv)
{
	char path[4096];
	struct uffdio_copy c = { 0 };
	unsigned char head[sizeof(code)];
	pthread_t t;
	int ret, err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s HUGETLBFS_DIR\n", argv[0]);
		return 1;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	snprintf(path, sizeof(path), "%s/fmm-uffd-race.XXXXXX", argv[1]);
	fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp in the hugetlbfs folder");
	unlink(path);
	if (ftruncate(fd, HPAGE))
		die("ftruncate");
	dst = mmap(NULL, HPAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (dst == MAP_FAILED)
		die("mmap of the hugetlbfs file (free huge pages?)");
	src = mmap(NULL, HPAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	codebuf = mmap(NULL, HPAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || codebuf == MAP_FAILED)
		die("mmap");
	memcpy(codebuf, code, sizeof(code));

	dst_uffd = new_uffd();
	src_uffd = new_uffd();
	if (register_missing(dst_uffd, dst, HPAGE))
		die("UFFDIO_REGISTER of the destination");
	if (register_missing(src_uffd, src, HPAGE))
		die("UFFDIO_REGISTER of the source");
	if (pthread_create(&t, NULL, serve_source, NULL))
		die("pthread_create");

	c.dst = (uintptr_t)dst;
	c.src = (uintptr_t)src;
	c.len = HPAGE;
	ret = ioctl(dst_uffd, UFFDIO_COPY, &c);
	err = errno;
	pthread_join(t, NULL);

	if (!faults) {
		printf("no race: the source never faulted (copy %s, copied %lld)\n",
		       ret ? strerrorname_np(err) : "succeeded", (long long)c.copy);
		return 1;
	}
	if (remap_err) {
		printf("no race: %s failed\n", remap_err);
		return 1;
	}
	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head))
		die("pread of the destination");
	if (ret && err == EACCES && memcmp(head, code, sizeof(code))) {
		printf("refused: EACCES, nothing filled\n");
		return 0;
	}
	if (!ret && !memcmp(head, code, sizeof(code)) &&
	    ((int (*)(void))(void *)dst)() == 42) {
		printf("filled: the code ran\n");
		return 10;
	}
	printf("unexpected: copy %s (copied %lld), destination %s\n",
	       ret ? strerrorname_np(err) : "succeeded", (long long)c.copy,
	       memcmp(head, code, sizeof(code)) ? "without the code" : "holds the code");
	return 1;
}
