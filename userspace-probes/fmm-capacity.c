// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-capacity: how much of the address space does this process's layout
 * let it use?  The 2004 flexible-mmap patch claimed that the legacy layout
 * capped malloc()/brk at ~900 MB and mmap() at ~2 GB on i386, and that the
 * top-down layout gives both the whole hole between heap and stack.  This
 * probe measures exactly that, from inside a freshly exec'd process.
 *
 * Built static as fmm-capacity-64 and fmm-capacity-32 (plus copies without
 * PT_GNU_STACK for flexmmap's "auto" mode).  flexmmap-report runs it once
 * per layout and turns the output into a table and pictures.
 *
 * Usage:
 *   fmm-capacity-NN [--measure LIST] [--chunk BYTES] [--no-maps]
 *
 *   --measure LIST	comma-separated, any of brk, malloc, mmap, largest
 *			(default: all four); the layout facts are always
 *			printed
 *   --chunk BYTES	chunk size of the malloc and mmap measures, with an
 *			optional K, M, G or T suffix (default 1M for 32-bit,
 *			16G for 64-bit: 128 TiB in 1 MiB steps would take
 *			hours under TCG and gigabytes of page tables)
 *   --no-maps		leave out the map= snapshot
 *
 * Every measure runs in its own forked child, so each one starts from the
 * same address space, the one this process had right after exec:
 *   brk		sbrk() alone, in big steps first, each step halved when
 *			it fails, down to one page: brk_max = final brk -
 *			start_brk, and brk_next = the mapping that stopped it
 *   malloc		malloc(chunk) until it fails; glibc serves big chunks
 *			with mmap and falls back to brk, so this is the total a
 *			C program can allocate (the pointers are kept, so glibc
 *			writes one header page per chunk)
 *   mmap		anonymous MAP_PRIVATE|MAP_NORESERVE mmaps of chunk
 *			bytes until one fails, none touched
 *   largest		binary search, in pages, for the longest single
 *			MAP_NORESERVE mmap that succeeds (unmapped each time)
 * Run it with vm.overcommit_memory=1: then the address space, not the RAM,
 * is what runs out (brk and malloc are accounted; MAP_NORESERVE is not).
 * A warning goes to stderr otherwise.  Transparent huge pages are turned
 * off for the process (PR_SET_THP_DISABLE), or each malloc() header would
 * cost 2 MiB of RAM.
 *
 * Output: "key=value" lines (and "#" comments), values in bytes (decimal)
 * or addresses (0x hex):
 *   bits, pid, personality, addr_limit_3gb, randomize, page_size,
 *   overcommit_memory, fmm_mode/fmm_alloc (our line in /proc/flexmmap/self,
 *   "none" without the module), task_size, legacy_base (the nominal
 *   __TASK_UNMAPPED_BASE), stack_rlimit, stack_gap (mmap_base()'s gap rule:
 *   rlimit + stack randomisation + guard, clamped to [128 MiB, 5/6 task
 *   size]), image_start/image_end/image_size (the executable, its bss
 *   included), start_code, end_code, start_data, end_data, start_brk,
 *   start_stack (from /proc/self/stat), stack_start/stack_end, vdso_start/
 *   vdso_end (from /proc/self/maps), direction (topdown or bottomup: two
 *   test mmaps, unmapped again), mmap_base (where the allocator starts, as
 *   seen: top-down, the highest end of a mapping below the stack; bottom-up,
 *   the lowest start at or above legacy_base; the test mmap counts too),
 *   space = task_size - stack_gap - image_size (the "theoretical" space the
 *   percentages are of), then one "map=START-END PERMS NAME" line per line
 *   of /proc/self/maps as it was at start-up, then per measure:
 *   brk_max, brk_end, brk_next, brk_ms;
 *   malloc_total, malloc_count, malloc_chunk, malloc_brk (the part brk
 *   gave), malloc_ms; mmap_total, mmap_count, mmap_chunk, mmap_lowest,
 *   mmap_highest, mmap_errno, mmap_ms; largest_mmap, largest_mmap_addr,
 *   largest_ms.  A measure whose child died prints NAME_error=REASON.
 *
 * Exit status: 0 when every measure reported, 1 otherwise or on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flexmmap.h"
#include "fmm-maps.h"

#define SZ_1M			(1ULL << 20)
#define SZ_128M			(128ULL << 20)
#define SZ_16G			(16ULL << 30)

/* x86 task sizes and stack randomisation, as arch/x86 of 6.1 defines them. */
#define TASK_SIZE_IA32		0xffffe000UL
#define TASK_SIZE_IA32_3GB	0xc0000000UL
#define STACK_RND_MASK_32	0x7ffUL
#define STACK_RND_MASK_64	0x3fffffUL
#define STACK_GUARD_GAP		(256UL * 4096)

/* What exec gave this process, learnt once at start-up. */
static struct {
	bool is64;
	bool native32;			/* a 32-bit kernel, not compat */
	bool addr_3gb;
	bool randomize;
	unsigned long page;
	unsigned long task_size;
	unsigned long legacy_base;
	unsigned long long stack_rlim;	/* ~0 for unlimited */
	unsigned long long stack_gap;
	unsigned long image_start;
	unsigned long image_end;
	unsigned long stack_start;
	unsigned long stack_end;
	unsigned long vdso_start;
	unsigned long vdso_end;
	unsigned long start_brk;
	bool topdown;
	unsigned long mmap_base;
	unsigned long long chunk;
} P;

/* Kept so the compiler cannot drop a malloc() whose result looks unused. */
static void *volatile fmm_sink;

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "fmm-capacity: %s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * Parse /proc/self/maps into vmas[].  No stdio and no malloc: after the
 * malloc and mmap measures there is no address space left to allocate from.
 */
static void read_maps(void)
{
	if (fmm_read_maps())
		die("read /proc/self/maps");
}

/* The first mapping that ends above @addr, or NULL. */
static const struct fmm_vma *vma_above(unsigned long addr)
{
	size_t i;

	for (i = 0; i < nr_vmas; i++)
		if (vmas[i].end > addr)
			return &vmas[i];
	return NULL;
}

/*
 * /proc/self/stat field @n (1-based, as proc(5) numbers them).  The comm
 * field may hold spaces: count from the last ')'.
 */
static unsigned long stat_field(const char *stat, int n)
{
	const char *p = strrchr(stat, ')');
	int field = 2;

	if (!p)
		return 0;
	p++;
	while (*p && field < n) {
		while (*p == ' ')
			p++;
		field++;
		if (field == n)
			return strtoul(p, NULL, 10);
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

static unsigned long page_align(unsigned long addr)
{
	return (addr + P.page - 1) & ~(P.page - 1);
}

/* arch/x86/mm/mmap.c: mmap_base()'s gap, without the mmap randomisation. */
static unsigned long long stack_gap(void)
{
	unsigned long long gap = P.stack_rlim, pad = STACK_GUARD_GAP;
	unsigned long long gap_max = P.task_size / 6 * 5;

	if (P.randomize)
		pad += (P.is64 ? STACK_RND_MASK_64 : STACK_RND_MASK_32) * P.page;
	if (gap + pad > gap)
		gap += pad;
	if (gap < SZ_128M)
		return SZ_128M;
	return gap > gap_max ? gap_max : gap;
}

/* The executable's mappings, and the anonymous bss right after them. */
static void find_image(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t i;

	if (n < 0)
		die("readlink /proc/self/exe");
	exe[n] = '\0';
	for (i = 0; i < nr_vmas; i++) {
		const struct fmm_vma *v = &vmas[i];

		if (!strcmp(v->name, exe)) {
			if (!P.image_start)
				P.image_start = v->start;
			P.image_end = v->end;
		} else if (P.image_end && v->start == P.image_end &&
			   !v->name[0]) {
			P.image_end = v->end;
		}
	}
}

/* Our "PID MODE ALLOCATOR nx=N COMM" line, if the module is loaded. */
static void print_fmm_task(void)
{
	char mode[32] = "none", alloc[32] = "none";
	FILE *fp = fopen(FLEXMMAP_PROC_SELF, "r");

	if (fp && fscanf(fp, "%*d %31s %31s", mode, alloc) != 2) {
		strcpy(mode, "unlisted");
		strcpy(alloc, "unlisted");
	}
	if (fp)
		fclose(fp);
	printf("fmm_mode=%s\nfmm_alloc=%s\n", mode, alloc);
}

static bool is_special(const struct fmm_vma *v)
{
	return !strcmp(v->name, "[stack]") || !strcmp(v->name, "[vsyscall]");
}

/*
 * Which way the allocator goes, and where it starts.  Two test mmaps are
 * unmapped again, so every measure below starts from the exec'd state.
 */
static void find_mmap_base(void)
{
	unsigned long a, b, len = 2 * P.page;
	void *p, *q;
	size_t i;

	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	q = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || q == MAP_FAILED)
		die("test mmap");
	a = (unsigned long)p;
	b = (unsigned long)q;
	munmap(p, len);
	munmap(q, len);
	P.topdown = b < a;

	if (P.topdown) {
		P.mmap_base = a + len;
		for (i = 0; i < nr_vmas; i++) {
			const struct fmm_vma *v = &vmas[i];

			if (v->end <= P.stack_start && v->end > P.mmap_base &&
			    !is_special(v) && strcmp(v->name, "[heap]") &&
			    (v->start >= P.image_end || v->end <= P.image_start))
				P.mmap_base = v->end;
		}
	} else {
		P.mmap_base = a;
		for (i = 0; i < nr_vmas; i++) {
			const struct fmm_vma *v = &vmas[i];

			if (v->start >= P.legacy_base && v->start < P.mmap_base &&
			    !is_special(v) && v->start < P.stack_start)
				P.mmap_base = v->start;
		}
	}
}

static void setup(void)
{
	unsigned int pers = personality(0xffffffff);
	unsigned long rva = 2, oc = ~0UL;
	const struct fmm_vma *v;
	char stat[4096];
	struct rlimit rl;
	ssize_t n;
	int fd;

	P.page = sysconf(_SC_PAGESIZE);
	P.is64 = sizeof(long) == 8;
	P.addr_3gb = !P.is64 && (pers & ADDR_LIMIT_3GB);
	read_ulong("/proc/sys/kernel/randomize_va_space", &rva);
	P.randomize = rva && !(pers & ADDR_NO_RANDOMIZE);
#if __SIZEOF_LONG__ == 8
	P.task_size = (1UL << 47) - P.page;	/* DEFAULT_MAP_WINDOW */
#else
	P.task_size = P.addr_3gb ? TASK_SIZE_IA32_3GB : TASK_SIZE_IA32;
	P.native32 = fmm_kernel_is_32bit();
	if (P.native32) {
		P.addr_3gb = false;
		P.task_size = fmm_native_task_size(P.page);
	}
#endif
	P.legacy_base = page_align(P.task_size / 3);
	getrlimit(RLIMIT_STACK, &rl);
	P.stack_rlim = rl.rlim_cur == RLIM_INFINITY ? ~0ULL : rl.rlim_cur;
	P.stack_gap = stack_gap();
	if (!P.chunk)
		P.chunk = P.is64 ? SZ_16G : SZ_1M;

	read_maps();
	find_image();
	v = find_vma_named("[stack]");
	if (v) {
		P.stack_start = v->start;
		P.stack_end = v->end;
	}
	v = find_vma_named("[vdso]");
	if (v) {
		P.vdso_start = v->start;
		P.vdso_end = v->end;
	}

	fd = open("/proc/self/stat", O_RDONLY);
	if (fd < 0)
		die("open /proc/self/stat");
	n = read(fd, stat, sizeof(stat) - 1);
	if (n < 0)
		die("read /proc/self/stat");
	stat[n] = '\0';
	close(fd);
	P.start_brk = stat_field(stat, 47);

	printf("bits=%d\npid=%d\npersonality=0x%x\naddr_limit_3gb=%d\n",
	       P.is64 ? 64 : 32, getpid(), pers, P.addr_3gb);
	printf("randomize=%d\npage_size=%lu\n", P.randomize, P.page);
	if (read_ulong("/proc/sys/vm/overcommit_memory", &oc) || oc != 1)
		fprintf(stderr, "fmm-capacity: warning: vm.overcommit_memory is %ld, not 1: brk and malloc may stop at the RAM, not at the end of the address space\n",
			(long)oc);
	printf("overcommit_memory=%ld\n", (long)oc);
	print_fmm_task();
	printf("task_size=0x%lx\nlegacy_base=0x%lx\n", P.task_size,
	       P.legacy_base);
	if (P.stack_rlim == ~0ULL)
		printf("stack_rlimit=unlimited\n");
	else
		printf("stack_rlimit=%llu\n", P.stack_rlim);
	printf("stack_gap=%llu\n", P.stack_gap);
	printf("image_start=0x%lx\nimage_end=0x%lx\nimage_size=%lu\n",
	       P.image_start, P.image_end, P.image_end - P.image_start);
	printf("start_code=0x%lx\nend_code=0x%lx\nstart_stack=0x%lx\n",
	       stat_field(stat, 26), stat_field(stat, 27),
	       stat_field(stat, 28));
	printf("start_data=0x%lx\nend_data=0x%lx\nstart_brk=0x%lx\n",
	       stat_field(stat, 45), stat_field(stat, 46), P.start_brk);
	printf("stack_start=0x%lx\nstack_end=0x%lx\n", P.stack_start,
	       P.stack_end);
	printf("vdso_start=0x%lx\nvdso_end=0x%lx\n", P.vdso_start, P.vdso_end);
}

static void print_layout(bool maps)
{
	size_t i;

	find_mmap_base();
	printf("direction=%s\nmmap_base=0x%lx\n",
	       P.topdown ? "topdown" : "bottomup", P.mmap_base);
	printf("space=%llu\n", P.task_size - P.stack_gap -
	       (P.image_end - P.image_start));
	printf("chunk=%llu\n", P.chunk);
	for (i = 0; maps && i < nr_vmas; i++)
		printf("map=%lx-%lx %s %s\n", vmas[i].start, vmas[i].end,
		       vmas[i].perms, vmas[i].name);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The largest power-of-two step below a quarter of the task size. */
static unsigned long first_step(void)
{
	unsigned long step = P.page;

	while (step < P.task_size / 4)
		step <<= 1;
	return step >> 1;
}

static void measure_brk(void)
{
	unsigned long step, start = P.start_brk, end;
	const struct fmm_vma *next;

	for (step = first_step(); step >= P.page; step >>= 1)
		while (sbrk(step) != (void *)-1)
			;
	end = (unsigned long)sbrk(0);
	read_maps();
	next = vma_above(end);
	printf("brk_max=%lu\nbrk_end=0x%lx\nbrk_next=0x%lx\n", end - start, end,
	       next ? next->start : 0UL);
}

static void measure_malloc(void)
{
	unsigned long long total = 0, count = 0;
	unsigned long brk0 = (unsigned long)sbrk(0);
	size_t chunk = P.chunk;
	void *p;

	while ((p = malloc(chunk))) {
		fmm_sink = p;
		total += chunk;
		count++;
	}
	printf("malloc_total=%llu\nmalloc_count=%llu\nmalloc_chunk=%zu\n",
	       total, count, chunk);
	printf("malloc_brk=%lu\n", (unsigned long)sbrk(0) - brk0);
}

static void measure_mmap(void)
{
	unsigned long long total = 0, count = 0;
	unsigned long lo = ~0UL, hi = 0, a;
	size_t chunk = P.chunk;
	void *p;

	for (;;) {
		p = mmap(NULL, chunk, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			break;
		a = (unsigned long)p;
		if (a < lo)
			lo = a;
		if (a + chunk > hi)
			hi = a + chunk;
		total += chunk;
		count++;
	}
	printf("mmap_total=%llu\nmmap_count=%llu\nmmap_chunk=%zu\n", total,
	       count, chunk);
	printf("mmap_lowest=0x%lx\nmmap_highest=0x%lx\nmmap_errno=%s\n",
	       count ? lo : 0UL, hi, strerrorname_np(errno) ?: "?");
	read_maps();
	printf("mmap_vmas=%zu\n", nr_vmas);
}

static void measure_largest(void)
{
	unsigned long lo = 0, hi = P.task_size / P.page + 1, mid, addr = 0;
	void *p;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		p = mmap(NULL, mid * P.page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			hi = mid;
			continue;
		}
		lo = mid;
		addr = (unsigned long)p;
		munmap(p, mid * P.page);
	}
	printf("largest_mmap=%llu\nlargest_mmap_addr=0x%lx\n",
	       (unsigned long long)lo * P.page, addr);
}

static const struct {
	const char *name;
	void (*fn)(void);
} measures[] = {
	{ "brk", measure_brk },
	{ "malloc", measure_malloc },
	{ "mmap", measure_mmap },
	{ "largest", measure_largest },
};

#define NR_MEASURES	(sizeof(measures) / sizeof(measures[0]))

/* Run measure @i in a child; its lines go straight to our stdout. */
static bool run_measure(size_t i)
{
	struct timespec t0;
	int status;
	pid_t pid;

	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		measures[i].fn();
		fflush(stdout);
		_exit(ferror(stdout) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid");
	printf("%s_ms=%.0f\n", measures[i].name, ms_since(&t0));
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return true;
	if (WIFSIGNALED(status))
		printf("%s_error=killed by signal %d (%s)\n", measures[i].name,
		       WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		printf("%s_error=exit status %d\n", measures[i].name,
		       WEXITSTATUS(status));
	return false;
}

/* BYTES[K|M|G|T]; 0 when malformed. */
static unsigned long long parse_size(const char *s)
{
	static const char units[] = "KMGT";
	const char *unit = NULL;
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return 0;
	if (*end) {
		unit = strchr(units, *end);
		if (!unit || end[1])
			return 0;
		v <<= 10 * (unit - units + 1);
	}
	return v;
}

static void __attribute__((noreturn)) usage(const char *msg)
{
	fprintf(stderr, "fmm-capacity: %s\n"
		"usage: fmm-capacity [--measure brk,malloc,mmap,largest] [--chunk BYTES[K|M|G|T]] [--no-maps]\n",
		msg);
	exit(1);
}

int main(int argc, char **argv)
{
	bool want[NR_MEASURES], maps = true, ok = true;
	char *list = NULL, *tok, *save;
	size_t i;
	int a;

	for (i = 0; i < NR_MEASURES; i++)
		want[i] = true;
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--no-maps")) {
			maps = false;
		} else if (!strcmp(argv[a], "--measure") && a + 1 < argc) {
			list = argv[++a];
		} else if (!strcmp(argv[a], "--chunk") && a + 1 < argc) {
			P.chunk = parse_size(argv[++a]);
			if (!P.chunk || P.chunk % sysconf(_SC_PAGESIZE) ||
			    P.chunk > (size_t)-1 / 2)
				usage("--chunk wants a whole number of pages, e.g. 1M or 16G");
		} else {
			usage("unknown option or missing value");
		}
	}
	if (list) {
		for (i = 0; i < NR_MEASURES; i++)
			want[i] = false;
		for (tok = strtok_r(list, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			for (i = 0; i < NR_MEASURES; i++)
				if (!strcmp(tok, measures[i].name))
					break;
			if (i == NR_MEASURES)
				usage("--measure takes brk, malloc, mmap, largest");
			want[i] = true;
		}
	}

	/*
	 * glibc writes a header into every malloc() chunk; with THP "always"
	 * (Debian's default) each of those faults in a 2 MiB page and 8192
	 * 16 GiB chunks exhaust a 2 GiB guest.  Address space is what is
	 * measured here, so small pages only; the flag is per mm and children
	 * inherit it.
	 */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		die("prctl(PR_SET_THP_DISABLE)");

	/* Then the maps, as exec left them. */
	setup();
	print_layout(maps);
	for (i = 0; i < NR_MEASURES; i++)
		if (want[i])
			ok &= run_measure(i);
	fflush(stdout);
	return ok ? 0 : 1;
}
