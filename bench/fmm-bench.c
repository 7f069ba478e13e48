// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-bench: the cost of the mmap allocator in the process that runs it,
 * for flexmmap's benchmark (bench/flexmmap-bench drives it in the guest).
 *
 * Usage:
 *   fmm-bench alloc --maps N [--iters K] [--samples S] --expect-alloc ALLOC
 *	Make the process hold N mappings that cannot merge (one region, every
 *	other page mprotect()ed read-only), then time, S samples of K
 *	iterations each:
 *	  mmap	   mmap(NULL, 4 KiB) + munmap: a search of the free areas
 *	  hint	   the same with a hint that is free, so it is taken
 *	  fixed	   MAP_FIXED_NOREPLACE at a known hole: the no-search floor
 *	  mprotect mprotect() of one page, read-only and back
 *	Prints "measure=NAME median_ns=... min_ns=... max_ns=..." per measure.
 *   fmm-bench churn [--ops N] [--seed S] --expect-alloc ALLOC
 *	N random operations (default 100000): map 1-64 pages or unmap a random
 *	live region, half each.  Prints the map count and the largest free hole
 *	below the stack afterwards, and the time taken.
 *   fmm-bench exec [--iters K] --expect-alloc ALLOC
 *	fork + exec of "fmm-bench noop" and wait, K times; prints ns per exec.
 *   fmm-bench noop
 *	exits 0 at once.
 *
 * Every command but noop takes --expect-alloc ALLOC, the allocator the run
 * is meant to measure: kernel-topdown, kernel-bottomup, module-topdown or
 * module-bottomup, as the third field of /proc/flexmmap/self (the module's
 * line for this process), or "none" for a run without the module (no such
 * file).  A run on any other allocator is refused before it measures
 * anything: exit 3 with a message saying what it saw, so a "module-*" row
 * can only come from the module's allocator.
 *
 * The times are CLOCK_MONOTONIC.  In a guest booted with "qemu/run --icount"
 * that clock follows the instruction count, so identical runs agree within a
 * few percent; on wall-clock TCG they do not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static long page;

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "fmm-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* N mappings that cannot merge: one region, every other page read-only. */
static void hold_maps(long n)
{
	unsigned char *p;
	long i;

	if (n < 2)
		return;
	p = mmap(NULL, n * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		die("mmap of the held region");
	for (i = 1; i < n; i += 2)
		if (mprotect(p + i * page, page, PROT_READ))
			die("mprotect (raise vm.max_map_count?)");
}

enum measure { M_MMAP, M_HINT, M_FIXED, M_MPROTECT, M_NR };
static const char *const measure_names[] = { "mmap", "hint", "fixed", "mprotect" };

/* One sample: K iterations of measure m, ns per iteration. */
static uint64_t sample(enum measure m, long k, unsigned char *hole,
		       unsigned char *rw)
{
	uint64_t t0 = now_ns();
	void *p;
	long i;

	for (i = 0; i < k; i++) {
		switch (m) {
		case M_MMAP:
			p = mmap(NULL, page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			break;
		case M_HINT:
			p = mmap(hole, page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p != MAP_FAILED && p != hole) {
				errno = EADDRNOTAVAIL;
				die("the hint was not taken");
			}
			break;
		case M_FIXED:
			p = mmap(hole, page, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
				 -1, 0);
			break;
		default:
			if (mprotect(rw, page, PROT_READ) ||
			    mprotect(rw, page, PROT_READ | PROT_WRITE))
				die("mprotect");
			continue;
		}
		if (p == MAP_FAILED)
			die(measure_names[m]);
		munmap(p, page);
	}
	return (now_ns() - t0) / k;
}

static int cmd_alloc(long n, long k, long s)
{
	uint64_t *v = calloc(s, sizeof(*v));
	unsigned char *hole, *rw;
	enum measure m;
	long i;

	if (!v)
		die("calloc");
	hold_maps(n);
	/* A free page to aim at: map one and give it back. */
	hole = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rw = mmap(NULL, page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole == MAP_FAILED || rw == MAP_FAILED)
		die("mmap");
	munmap(hole, page);

	for (m = 0; m < M_NR; m++) {
		sample(m, k / 4 + 1, hole, rw);	/* warm up */
		for (i = 0; i < s; i++)
			v[i] = sample(m, k, hole, rw);
		qsort(v, s, sizeof(*v), cmp_u64);
		printf("measure=%s maps=%ld median_ns=%llu min_ns=%llu max_ns=%llu\n",
		       measure_names[m], n, (unsigned long long)v[s / 2],
		       (unsigned long long)v[0], (unsigned long long)v[s - 1]);
	}
	free(v);
	return 0;
}

/* The map count and the largest hole between two mappings below the stack. */
static void maps_summary(long *count, unsigned long *hole)
{
	unsigned long start, end, prev = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		die("/proc/self/maps");
	*count = 0;
	*hole = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &start, &end) != 2)
			continue;
		if (strstr(line, "[vsyscall]"))
			continue;
		(*count)++;
		if (prev && start > prev && start - prev > *hole &&
		    !strstr(line, "[stack]"))
			*hole = start - prev;
		prev = end;
	}
	fclose(f);
}

struct region {
	void *p;
	size_t len;
};

static int cmd_churn(long ops, unsigned int seed)
{
	long live = 0, cap = ops / 2 + 1, i, count;
	struct region *r = calloc(cap, sizeof(*r));
	unsigned long hole;
	uint64_t t0;

	if (!r)
		die("calloc");
	srandom(seed);
	t0 = now_ns();
	for (i = 0; i < ops; i++) {
		if (live && (random() & 1)) {
			long j = random() % live;

			munmap(r[j].p, r[j].len);
			r[j] = r[--live];
			continue;
		}
		if (live == cap)
			continue;
		r[live].len = (1 + random() % 64) * page;
		r[live].p = mmap(NULL, r[live].len,
				 (random() & 1) ? PROT_READ : PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (r[live].p == MAP_FAILED)
			die("churn mmap");
		live++;
	}
	t0 = now_ns() - t0;
	maps_summary(&count, &hole);
	printf("measure=churn ops=%ld live=%ld maps=%ld largest_hole=%lu ns_per_op=%llu\n",
	       ops, live, count, hole, (unsigned long long)(t0 / ops));
	free(r);
	return 0;
}

static int cmd_exec(long k)
{
	uint64_t t0 = now_ns();
	int status;
	long i;

	for (i = 0; i < k; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			execl("/proc/self/exe", "fmm-bench", "noop", (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			errno = ECHILD;
			die("exec of fmm-bench noop");
		}
	}
	printf("measure=exec iters=%ld ns_per_exec=%llu\n", k,
	       (unsigned long long)((now_ns() - t0) / k));
	return 0;
}

#define PROC_SELF "/proc/flexmmap/self"

/* The allocator /proc/flexmmap/self names for us, or "none" without it. */
static void self_alloc(char alloc[32])
{
	FILE *f = fopen(PROC_SELF, "r");

	if (!f) {
		if (errno != ENOENT)
			die(PROC_SELF);
		strcpy(alloc, "none");
		return;
	}
	if (fscanf(f, "%*d %*31s %31s", alloc) != 1)
		strcpy(alloc, "(unreadable line)");
	fclose(f);
}

static void check_alloc(const char *want)
{
	char alloc[32] = "";

	self_alloc(alloc);
	if (strcmp(alloc, want)) {
		fprintf(stderr,
			"fmm-bench: refusing to measure: expected the %s allocator, %s says %s\n",
			want, PROC_SELF, alloc);
		exit(3);
	}
}

static long arg_long(const char *opt, const char *val, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = val ? strtol(val, &end, 10) : 0;
	if (!val || errno || *end || v < min || v > max) {
		fprintf(stderr, "fmm-bench: %s takes a number in [%ld, %ld]\n",
			opt, min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const char *const allocs[] = {
		"kernel-topdown", "kernel-bottomup", "module-topdown",
		"module-bottomup", "none", NULL
	};
	long maps = 0, iters = 0, samples = 15, ops = 100000, seed = 1;
	const char *want_alloc = NULL;
	int i, j;

	page = sysconf(_SC_PAGESIZE);
	if (argc < 2)
		goto usage;
	for (i = 2; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--maps"))
			maps = arg_long("--maps", v, 0, 10000000);
		else if (!strcmp(argv[i], "--iters"))
			iters = arg_long("--iters", v, 1, 100000000);
		else if (!strcmp(argv[i], "--samples"))
			samples = arg_long("--samples", v, 1, 100000);
		else if (!strcmp(argv[i], "--ops"))
			ops = arg_long("--ops", v, 1, 100000000);
		else if (!strcmp(argv[i], "--seed"))
			seed = arg_long("--seed", v, 0, 1L << 30);
		else if (!strcmp(argv[i], "--expect-alloc")) {
			for (j = 0; allocs[j] && v && strcmp(v, allocs[j]); j++)
				;
			if (!allocs[j]) {
				fprintf(stderr, "fmm-bench: --expect-alloc takes kernel-topdown, kernel-bottomup, module-topdown, module-bottomup or none\n");
				return 2;
			}
			want_alloc = v;
		} else
			goto usage;
	}
	if (!strcmp(argv[1], "noop"))
		return 0;
	if (strcmp(argv[1], "alloc") && strcmp(argv[1], "churn") &&
	    strcmp(argv[1], "exec"))
		goto usage;
	if (!want_alloc) {
		fprintf(stderr, "fmm-bench: %s needs --expect-alloc (the allocator it measures)\n",
			argv[1]);
		return 2;
	}
	check_alloc(want_alloc);
	if (!strcmp(argv[1], "alloc"))
		return cmd_alloc(maps, iters ? iters : 200, samples);
	if (!strcmp(argv[1], "churn"))
		return cmd_churn(ops, (unsigned int)seed);
	if (!strcmp(argv[1], "exec"))
		return cmd_exec(iters ? iters : 100);
usage:
	fprintf(stderr, "usage: fmm-bench alloc --maps N [--iters K] [--samples S] --expect-alloc ALLOC\n"
		"       fmm-bench churn [--ops N] [--seed S] --expect-alloc ALLOC\n"
		"       fmm-bench exec [--iters K] --expect-alloc ALLOC\n"
		"       fmm-bench noop\n"
		"ALLOC: kernel-topdown, kernel-bottomup, module-topdown, module-bottomup or none\n");
	return 2;
}
