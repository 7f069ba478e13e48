// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-colour: the parisc cache-colour rule, seen from user space.  On
 * parisc (SHM_COLOUR, 4 MiB) a shared mapping of a file must put each page
 * of the file at the same address modulo SHM_COLOUR in every mapping and
 * every process, or the virtually indexed caches alias.  This maps one file
 * MAP_SHARED at page offsets 0 and 7 (the second with a hint at another
 * colour), again in a child, then asks for MAP_FIXED_NOREPLACE at the right
 * colour and one page off it.  Each mapping is printed with its address
 * modulo SHM_COLOUR and the "colour of page 0" it implies,
 * (address - offset) mod SHM_COLOUR, which the rule keeps equal.
 * Output is kselftest TAP.
 *
 * Built static for the parisc guest (guest-image/build-parisc); on x86,
 * where there is no colour rule, the colour tests fail, which is the point.
 *
 * Usage: fmm-colour [FILE]   (default: a new file in /tmp; FILE is grown to
 *                            16 pages if shorter, and must allow writable
 *                            shared mappings: a 9p mount without a cache
 *                            refuses them with EINVAL)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest.h"

#define SHM_COLOUR	0x00400000UL	/* arch/parisc/include/asm/shmparam.h */
#define FILE_PAGES	16
#define SECOND_PGOFF	7

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static unsigned long page;

/* The colour the mapping at ADDR of file page PGOFF gives page 0. */
static unsigned long colour0(void *addr, unsigned long pgoff)
{
	return ((unsigned long)addr - pgoff * page) & (SHM_COLOUR - 1);
}

static void show(const char *what, void *addr, unsigned long pgoff)
{
	ksft_print_msg("%-28s %p pgoff %2lu  addr%%4MiB 0x%06lx  colour(page 0) 0x%06lx\n",
		       what, addr, pgoff, (unsigned long)addr & (SHM_COLOUR - 1),
		       colour0(addr, pgoff));
}

static void *map(int fd, void *hint, unsigned long pgoff, int flags)
{
	return mmap(hint, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | flags, fd,
		    pgoff * page);
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/fmm-colour.XXXXXX";
	unsigned long want, c;
	void *a, *b, *hint, *fixed;
	int fd, pipefd[2], status;
	struct stat st;
	pid_t pid;

	page = sysconf(_SC_PAGESIZE);
	ksft_print_header();
	ksft_set_plan(4);

	if (argc > 1) {
		fd = open(argv[1], O_RDWR);
	} else {
		fd = mkstemp(path);
		if (fd >= 0)
			unlink(path);
	}
	/* A given file is only ever grown to the pages the probe maps. */
	if (fd < 0 || fstat(fd, &st) ||
	    (st.st_size < (off_t)(FILE_PAGES * page) && ftruncate(fd, FILE_PAGES * page)))
		ksft_exit_fail_msg("cannot make a %d-page file: %s\n", FILE_PAGES,
				   strerror(errno));

	a = map(fd, NULL, 0, 0);
	if (a == MAP_FAILED)
		ksft_exit_fail_msg("mmap at offset 0: %s\n", strerror(errno));
	want = colour0(a, 0);
	show("first, no hint", a, 0);

	/*
	 * A hint well below the first mapping, one page past page 0's colour:
	 * for offset 7 that is six pages short of the colour it needs.
	 */
	hint = (void *)((((unsigned long)a / 2) & ~(SHM_COLOUR - 1)) + want + page);
	b = map(fd, hint, SECOND_PGOFF, 0);
	if (b == MAP_FAILED)
		ksft_exit_fail_msg("mmap at offset %d: %s\n", SECOND_PGOFF, strerror(errno));
	ksft_print_msg("hint %p\n", hint);
	show("second, hint", b, SECOND_PGOFF);
	c = colour0(b, SECOND_PGOFF);
	ksft_test_result(c == want, "second mapping (pgoff %d, hinted) has page 0's colour: "
			 "expected 0x%06lx, saw 0x%06lx\n", SECOND_PGOFF, want, c);

	/* Another process: the rule is per file, not per mm. */
	if (pipe(pipefd))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (pid == 0) {
		void *m;

		munmap(a, 2 * page);
		munmap(b, 2 * page);
		m = map(fd, NULL, 3, 0);
		if (write(pipefd[1], &m, sizeof(m)) != sizeof(m))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &fixed, sizeof(fixed)) != sizeof(fixed))
		fixed = MAP_FAILED;
	waitpid(pid, &status, 0);
	if (fixed == MAP_FAILED) {
		ksft_test_result_fail("child's mapping (pgoff 3) failed\n");
	} else {
		show("child, pgoff 3", fixed, 3);
		c = colour0(fixed, 3);
		ksft_test_result(c == want, "child's mapping (pgoff 3) has page 0's colour: "
				 "expected 0x%06lx, saw 0x%06lx\n", want, c);
	}

	/* MAP_FIXED_NOREPLACE: the right colour in a free range works ... */
	hint = (void *)((unsigned long)a - 8 * SHM_COLOUR);
	fixed = map(fd, hint, 0, MAP_FIXED_NOREPLACE);
	ksft_test_result(fixed == hint, "MAP_FIXED_NOREPLACE at page 0's colour (%p): %s\n",
			 hint, fixed == MAP_FAILED ? strerror(errno) : "mapped");
	if (fixed != MAP_FAILED)
		munmap(fixed, 2 * page);

	/* ... and one page off it is refused, as the kernel's rule has it. */
	hint = (void *)((unsigned long)hint + page);
	fixed = map(fd, hint, 0, MAP_FIXED_NOREPLACE);
	ksft_test_result(fixed == MAP_FAILED && errno == EINVAL,
			 "MAP_FIXED_NOREPLACE one page off the colour (%p) fails with EINVAL: %s\n",
			 hint, fixed == MAP_FAILED ? strerror(errno) : "it was mapped");

	ksft_finished();
}
