// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-layout: check, from inside a freshly exec'd process, which mmap layout
 * it was given: top-down below the stack gap ("flexible", the 2004 layout)
 * or bottom-up from the legacy base ("legacy").  Output is kselftest TAP.
 *
 * Built static as fmm-layout-64 and fmm-layout-32, plus copies of both
 * without a PT_GNU_STACK program header (fmm-layout-{64,32}-nognustack),
 * which flexmmap's "auto" mode puts on the legacy layout.
 *
 * Usage:
 *   fmm-layout-NN --expect topdown|bottomup|any
 *		[--expect-alloc kernel-topdown|kernel-bottomup|
 *				module-topdown|module-bottomup]
 *		[--expect-mode kernel|legacy|flexible|auto]
 *   fmm-layout-NN --expect-alloc ALLOC [--expect-mode MODE]
 *   fmm-layout-NN --print
 *
 *   --expect LAYOUT	run the layout tests for LAYOUT: order of successive
 *			anonymous, shared and file mmaps, where the first one
 *			lands (the 2004 gap rule, or the legacy base plus
 *			randomisation), MAP_HUGETLB, MAP_32BIT (64-bit only),
 *			hint, MAP_FIXED, MAP_FIXED_NOREPLACE, stack, vDSO and
 *			len > TASK_SIZE.
 *   --expect any	the layout this process actually got, checked as
 *			above: the direction comes from our own line,
 *			/proc/flexmmap/self (what the module says it gave us)
 *			or, when the module is not loaded (any more), from
 *			where the first mmap landed.  For storms, where the
 *			mode changes under the probe's feet.
 *   --expect-alloc A	check the ALLOCATOR column of our line,
 *			/proc/flexmmap/self; a missing file is a failure.
 *   --expect-mode M	same, for the MODE column.
 *   --print		no tests: print the first anonymous mmaps, heap start,
 *			stack top and vDSO as "key=0xADDR" lines, to compare
 *			two runs under "setarch -R".
 *
 * The bounds are derived, not hard-coded per machine, and printed as "#"
 * lines: the legacy base is __TASK_UNMAPPED_BASE(task size) (0x2aaaaaaab000
 * for 64-bit tasks, 0x55555000 for 32-bit ones, 0x40000000 under
 * ADDR_LIMIT_3GB, which personality() reports); the top-down base is
 * task size - gap - random, gap = stack rlimit + stack randomisation +
 * guard, clamped to [128 MiB, 5/6 task size]; the random offsets come from
 * vm.mmap_rnd_bits / vm.mmap_rnd_compat_bits (root only: the kernel's
 * maximum is assumed when they cannot be read) and are zero when
 * randomisation is off (ADDR_NO_RANDOMIZE, kernel.randomize_va_space=0).
 *
 * Exit status as kselftest: 0 every test passed or was skipped, 1 a test
 * failed (or bad usage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <unistd.h>

#include "flexmmap.h"
#include "fmm-maps.h"
#include "kselftest.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB		(21 << 26)
#endif

#define SZ_1M			(1UL << 20)
#define SZ_2M			(2UL << 20)
#define SZ_16M			(16UL << 20)
#define SZ_64M			(64UL << 20)
#define SZ_128M			(128UL << 20)
#define SZ_256M			(256UL << 20)
#define SZ_1G			(1UL << 30)

/* x86 task sizes and bases, as arch/x86 of 6.1 defines them. */
#define TASK_SIZE_IA32		0xffffe000UL	/* IA32_PAGE_OFFSET */
#define TASK_SIZE_IA32_3GB	0xc0000000UL	/* ... under ADDR_LIMIT_3GB */
#define MAP_32BIT_START		0x40000000UL
#define MAP_32BIT_END		0x80000000UL
#define STACK_RND_MASK_32	0x7ffUL
#define STACK_RND_MASK_64	0x3fffffUL
#define STACK_GUARD_GAP		(256UL * 4096)	/* default stack_guard_gap */

/*
 * Anything mapped before our first mmap (the 32-bit vDSO, glibc's early
 * allocations) pushes it away from the base; 64 MiB is far more than a
 * static probe ever maps, and far less than any wrong placement.
 */
#define PLACEMENT_SLACK		SZ_64M

#define NR_ANON			4
#define ANON_PAGES		4	/* plus one PROT_NONE guard page */

enum fmm_dir { TOPDOWN, BOTTOMUP };

/* What this process should see; everything derived once in setup_layout(). */
static struct {
	enum fmm_dir dir;
	bool is64;
	bool native32;			/* a 32-bit kernel, not compat */
	bool addr_3gb;
	bool randomize;
	unsigned long page;
	unsigned long task_size;	/* STACK_TOP: end of the default window */
	unsigned long legacy_base;	/* __TASK_UNMAPPED_BASE(task_size) */
	unsigned int rnd_bits;
	bool rnd_bits_read;
	unsigned long rnd_max;		/* largest mmap random offset */
	unsigned long stack_rnd_max;	/* largest stack random offset */
	unsigned long td_base_lo;	/* top-down mmap_base lies in */
	unsigned long td_base_hi;	/* [td_base_lo, td_base_hi] */
	unsigned long win_lo;		/* our mappings must lie in */
	unsigned long win_hi;		/* [win_lo, win_hi) */
	unsigned long heap_start;
	unsigned long heap_end;
	unsigned long stack_start;
	unsigned long stack_end;
	unsigned long anon[NR_ANON];
	unsigned long anon_len;
} L;

static const char *dir_name(enum fmm_dir d)
{
	return d == TOPDOWN ? "top-down" : "bottom-up";
}

/* Parse /proc/self/maps into vmas[] (fmm-maps.h). */
static void read_maps(void)
{
	if (fmm_read_maps())
		ksft_exit_fail_msg("read /proc/self/maps: %s\n", strerror(errno));
}

static void dump_maps(void)
{
	size_t i;

	read_maps();
	for (i = 0; i < nr_vmas; i++)
		ksft_print_msg("  %08lx-%08lx %s\n", vmas[i].start, vmas[i].end,
			       vmas[i].name);
}

/* The vDSO proper, not [vvar]: a kernel may also omit it (vdso=0). */
static const struct fmm_vma *find_vdso(void)
{
	return find_vma_named("[vdso]");
}

/* True when [addr - guard, addr + len + guard) touches no mapping. */
static bool range_free(unsigned long addr, unsigned long len)
{
	unsigned long lo = addr - L.page, hi = addr + len + L.page;
	size_t i;

	if (addr < L.page || hi < addr)
		return false;
	for (i = 0; i < nr_vmas; i++)
		if (vmas[i].start < hi && vmas[i].end > lo)
			return false;
	return true;
}

/*
 * A free spot at least @dist away from @from, further away from the area
 * the allocator grows into, so later placement tests are not disturbed:
 * below for top-down, above for bottom-up.  0 when none is found.
 */
static unsigned long pick_free(unsigned long from, unsigned long dist,
			       unsigned long len)
{
	unsigned long addr = from;
	int i;

	read_maps();
	for (i = 1; i <= 8; i++) {
		if (L.dir == TOPDOWN) {
			if (addr < L.heap_end + dist + len)
				return 0;
			addr -= dist;
		} else {
			if (addr + dist + len >= L.stack_start)
				return 0;
			addr += dist;
		}
		if (range_free(addr, len))
			return addr;
	}
	return 0;
}

static bool in_window(unsigned long addr, unsigned long len)
{
	return addr >= L.win_lo && addr + len <= L.win_hi && addr + len > addr;
}

static bool ordered(unsigned long first, unsigned long second)
{
	return L.dir == TOPDOWN ? second < first : second > first;
}

static const char *order_name(void)
{
	return L.dir == TOPDOWN ? "descending" : "ascending";
}

static unsigned long page_align(unsigned long addr)
{
	return (addr + L.page - 1) & ~(L.page - 1);
}

/* The gap mmap_base() leaves below the task size for this @pad. */
static unsigned long long mmap_gap(unsigned long long rlim,
				   unsigned long long pad)
{
	unsigned long long gap = rlim, gap_max = L.task_size / 6 * 5;

	/* Values close to RLIM_INFINITY can overflow, as in the kernel. */
	if (gap + pad > gap)
		gap += pad;
	if (gap < SZ_128M)
		return SZ_128M;
	return gap > gap_max ? gap_max : gap;
}

/*
 * Derive the expected bases for this task: 64- or 32-bit, ADDR_LIMIT_3GB,
 * randomisation, stack rlimit.  Mirrors arch/x86/mm/mmap.c of 6.1.
 */
static void setup_layout(void)
{
	unsigned int pers = personality(0xffffffff);
	unsigned long rva = 2, bits;
	unsigned long long rlim, gap_lo, gap_hi;
	struct rlimit rl;
	const char *rnd_file;

	L.page = sysconf(_SC_PAGESIZE);
	L.is64 = sizeof(long) == 8;
	L.addr_3gb = !L.is64 && (pers & ADDR_LIMIT_3GB);
	read_ulong("/proc/sys/kernel/randomize_va_space", &rva);
	L.randomize = rva && !(pers & ADDR_NO_RANDOMIZE);

#if __SIZEOF_LONG__ == 8
	L.task_size = (1UL << 47) - L.page;	/* DEFAULT_MAP_WINDOW */
	L.stack_rnd_max = STACK_RND_MASK_64 * L.page;
	rnd_file = "/proc/sys/vm/mmap_rnd_bits";
	L.rnd_bits = 32;			/* ARCH_MMAP_RND_BITS_MAX */
#else
	L.task_size = L.addr_3gb ? TASK_SIZE_IA32_3GB : TASK_SIZE_IA32;
	L.stack_rnd_max = STACK_RND_MASK_32 * L.page;
	rnd_file = "/proc/sys/vm/mmap_rnd_compat_bits";
	L.rnd_bits = 16;			/* ..._COMPAT_BITS_MAX */
	L.native32 = fmm_kernel_is_32bit();
	if (L.native32) {
		/* One task size, the kernel's split; no compat bits. */
		L.addr_3gb = false;
		L.task_size = fmm_native_task_size(L.page);
		rnd_file = "/proc/sys/vm/mmap_rnd_bits";
	}
#endif
	/* __TASK_UNMAPPED_BASE(): PAGE_ALIGN(task_size / 3) */
	L.legacy_base = page_align(L.task_size / 3);
	if (!read_ulong(rnd_file, &bits)) {
		L.rnd_bits = bits;
		L.rnd_bits_read = true;
	}
	if (!L.randomize)
		L.stack_rnd_max = 0;
	L.rnd_max = L.randomize ? ((1UL << L.rnd_bits) - 1) * L.page : 0;

	/* mmap_base(): gap = rlimit + stack random + guard, clamped */
	getrlimit(RLIMIT_STACK, &rl);
	rlim = rl.rlim_cur == RLIM_INFINITY ? ~0ULL : rl.rlim_cur;
	gap_lo = mmap_gap(rlim, L.stack_rnd_max);
	gap_hi = mmap_gap(rlim, L.stack_rnd_max + STACK_GUARD_GAP);
	L.td_base_hi = page_align(L.task_size - gap_lo);
	L.td_base_lo = page_align(L.task_size - gap_hi - L.rnd_max);

	if (L.dir == TOPDOWN) {
		L.win_lo = L.td_base_lo - PLACEMENT_SLACK;
		L.win_hi = L.td_base_hi;
	} else {
		L.win_lo = L.legacy_base;
		L.win_hi = L.legacy_base + L.rnd_max + PLACEMENT_SLACK;
	}
}

static void print_layout(void)
{
	ksft_print_msg("PID %d, %d-bit task%s, personality 0x%x%s, randomisation %s\n",
		       getpid(), L.is64 ? 64 : 32,
		       L.native32 ? " on a 32-bit kernel" : "",
		       personality(0xffffffff),
		       L.addr_3gb ? " (ADDR_LIMIT_3GB)" : "",
		       L.randomize ? "on" : "off");
	ksft_print_msg("task size 0x%lx, legacy base 0x%lx, mmap rnd bits %u%s (max offset 0x%lx), stack rnd max 0x%lx\n",
		       L.task_size, L.legacy_base, L.rnd_bits,
		       L.rnd_bits_read ? "" : " (not readable: kernel maximum assumed)",
		       L.rnd_max, L.stack_rnd_max);
	ksft_print_msg("top-down mmap_base in [0x%lx, 0x%lx]; expected %s window [0x%lx, 0x%lx)\n",
		       L.td_base_lo, L.td_base_hi, dir_name(L.dir), L.win_lo,
		       L.win_hi);
	ksft_print_msg("heap 0x%lx-0x%lx, stack 0x%lx-0x%lx\n", L.heap_start,
		       L.heap_end, L.stack_start, L.stack_end);
}

/*
 * The first mmaps of the process, before anything else can allocate:
 * NR_ANON regions of ANON_PAGES pages, each followed by a PROT_NONE guard
 * page so neighbours cannot merge.  Guard pages rather than holes: a hole
 * could be refilled by a later mapping and upset the order tests.
 */
static void map_first_anon(void)
{
	int i;

	L.anon_len = ANON_PAGES * sysconf(_SC_PAGESIZE);
	for (i = 0; i < NR_ANON; i++) {
		unsigned long len = L.anon_len + sysconf(_SC_PAGESIZE);
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			ksft_exit_fail_msg("anonymous mmap %d: %s\n", i,
					   strerror(errno));
		mprotect(p + L.anon_len, len - L.anon_len, PROT_NONE);
		p[0] = 1;
		L.anon[i] = (unsigned long)p;
	}
}

static void find_heap_and_stack(void)
{
	const struct fmm_vma *v;

	read_maps();
	v = find_vma_named("[heap]");
	if (v) {
		L.heap_start = v->start;
		L.heap_end = v->end;
	} else {
		L.heap_start = (unsigned long)sbrk(0);
		L.heap_end = L.heap_start;
	}
	v = find_vma_named("[stack]");
	if (v) {
		L.stack_start = v->start;
		L.stack_end = v->end;
	}
}

static void test_anon_order(void)
{
	bool ok = true;
	int i;

	for (i = 0; i < NR_ANON; i++)
		ksft_print_msg("anon mmap %d at 0x%lx\n", i, L.anon[i]);
	for (i = 1; i < NR_ANON; i++)
		ok &= ordered(L.anon[i - 1], L.anon[i]);
	if (ok)
		ksft_test_result_pass("%d anonymous mmaps %s (%s)\n", NR_ANON,
				      order_name(), dir_name(L.dir));
	else
		ksft_test_result_fail("%d anonymous mmaps: expected %s (%s), saw 0x%lx 0x%lx 0x%lx 0x%lx\n",
				      NR_ANON, order_name(), dir_name(L.dir),
				      L.anon[0], L.anon[1], L.anon[2],
				      L.anon[3]);
}

static void test_first_placement(void)
{
	unsigned long a = L.anon[0];
	bool ok;

	if (L.dir == TOPDOWN) {
		ok = a > L.heap_end && a + L.anon_len <= L.stack_start &&
		     in_window(a, L.anon_len);
		ksft_print_msg("first mmap 0x%lx is 0x%lx below the stack top\n",
			       a, L.stack_end - a);
	} else {
		ok = in_window(a, L.anon_len);
		ksft_print_msg("first mmap 0x%lx is 0x%lx above the legacy base\n",
			       a, a - L.legacy_base);
	}
	if (ok)
		ksft_test_result_pass("first anonymous mmap 0x%lx in the %s window [0x%lx, 0x%lx)\n",
				      a, dir_name(L.dir), L.win_lo, L.win_hi);
	else
		ksft_test_result_fail("first anonymous mmap: expected in the %s window [0x%lx, 0x%lx)%s; saw 0x%lx\n",
				      dir_name(L.dir), L.win_lo, L.win_hi,
				      L.dir == TOPDOWN ?
				      ", above the heap and below the stack" : "",
				      a);
}

/* Two successive mappings from @flags/@fd go the same way as anon ones. */
static void test_pair_order(const char *what, int flags, int fd)
{
	unsigned long a[2];
	int i;

	for (i = 0; i < 2; i++) {
		void *p = mmap(NULL, 2 * L.page, PROT_READ, flags, fd, 0);

		if (p == MAP_FAILED) {
			ksft_test_result_fail("%s mmap %d: expected success, saw %s\n",
					      what, i, strerror(errno));
			return;
		}
		a[i] = (unsigned long)p;
	}
	ksft_print_msg("%s mmaps at 0x%lx, 0x%lx\n", what, a[0], a[1]);
	if (ordered(a[0], a[1]) && in_window(a[0], 2 * L.page) &&
	    in_window(a[1], 2 * L.page))
		ksft_test_result_pass("%s mmaps %s in the %s window\n", what,
				      order_name(), dir_name(L.dir));
	else
		ksft_test_result_fail("%s mmaps: expected %s in [0x%lx, 0x%lx), saw 0x%lx then 0x%lx\n",
				      what, order_name(), L.win_lo, L.win_hi,
				      a[0], a[1]);
}

static void test_shared_anon(void)
{
	test_pair_order("shared anonymous", MAP_SHARED | MAP_ANONYMOUS, -1);
}

static void test_file(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/fmm-layout.XXXXXX", tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0) {
		ksft_test_result_skip("file mmaps: cannot create %s: %s\n",
				      path, strerror(errno));
		return;
	}
	unlink(path);
	if (ftruncate(fd, 2 * L.page)) {
		ksft_test_result_skip("file mmaps: ftruncate: %s\n",
				      strerror(errno));
		close(fd);
		return;
	}
	test_pair_order("file", MAP_SHARED, fd);
	close(fd);
}

/* No huge page to test with: a skip, or a failure when they were promised. */
#define hugetlb_missing(need, ...) do {				\
	if (need)						\
		ksft_test_result_fail(__VA_ARGS__);		\
	else							\
		ksft_test_result_skip(__VA_ARGS__);		\
} while (0)

/*
 * MAP_HUGETLB goes through hugetlbfs' own get_unmapped_area, which in 6.1
 * picks bottom-up only for the kernel's own legacy allocator: check both
 * the side (the layout's window, never below the legacy base) and, with a
 * second huge page, the direction.  With FMM_NEED_HUGETLB=1 in the
 * environment (the test files that reserve pages set it) a missing page is a
 * failure, not a skip, and so is an unchecked direction.
 */
static void test_hugetlb(void)
{
	const char *dir = "/sys/kernel/mm/hugepages/hugepages-2048kB";
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB;
	unsigned long nr = 0, h[2] = { 0, 0 };
	/* FMM_NEED_HUGETLB=1: the caller reserved two pages; no skipping. */
	const char *need_env = getenv("FMM_NEED_HUGETLB");
	bool need = need_env && !strcmp(need_env, "1");
	char path[128];
	bool ok;
	void *p;

	snprintf(path, sizeof(path), "%s/nr_hugepages", dir);
	if (read_ulong(path, &nr)) {
		hugetlb_missing(need, "MAP_HUGETLB: no 2 MiB huge pages (%s missing)\n",
				path);
		return;
	}
	if (!nr) {
		hugetlb_missing(need, "MAP_HUGETLB: vm.nr_hugepages is 0 (reserve two with: echo 2 > /proc/sys/vm/nr_hugepages)\n");
		return;
	}
	p = mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED && errno == ENOMEM) {
		hugetlb_missing(need, "MAP_HUGETLB: mmap failed with ENOMEM: no free 2 MiB huge page\n");
		return;
	}
	if (p == MAP_FAILED) {
		ksft_test_result_fail("MAP_HUGETLB: expected success or ENOMEM, saw %s\n",
				      strerror(errno));
		return;
	}
	h[0] = (unsigned long)p;
	p = mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p != MAP_FAILED)
		h[1] = (unsigned long)p;
	ksft_print_msg("huge mmaps at 0x%lx, 0x%lx%s\n", h[0], h[1],
		       h[1] ? "" : " (second failed: direction not checked)");

	/* The bottom-up window starts at the legacy base: never below it. */
	ok = in_window(h[0], SZ_2M) && h[0] > L.heap_end &&
	     h[0] + SZ_2M <= L.stack_start;
	if (h[1])
		ok &= in_window(h[1], SZ_2M) && ordered(h[0], h[1]);
	else if (need)
		ok = false;	/* the direction must be checked */
	if (ok)
		ksft_test_result_pass("MAP_HUGETLB in the %s window%s%s\n",
				      dir_name(L.dir), h[1] ? ", " : "",
				      h[1] ? order_name() : "");
	else
		ksft_test_result_fail("MAP_HUGETLB: expected %s in [0x%lx, 0x%lx), saw 0x%lx then 0x%lx\n",
				      order_name(), L.win_lo, L.win_hi, h[0],
				      h[1]);
}

static void test_map_32bit(void)
{
#ifdef MAP_32BIT
	unsigned long a;
	void *p;

	p = mmap(NULL, 2 * L.page, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (p == MAP_FAILED) {
		ksft_test_result_fail("MAP_32BIT: expected success, saw %s\n",
				      strerror(errno));
		return;
	}
	a = (unsigned long)p;
	ksft_test_result(a >= MAP_32BIT_START && a + 2 * L.page <= MAP_32BIT_END,
			 "MAP_32BIT: expected in [0x%lx, 0x%lx), saw 0x%lx\n",
			 MAP_32BIT_START, MAP_32BIT_END, a);
#endif
}

static void test_hint_fixed(void)
{
	unsigned long len = 2 * L.page, ref, dist, hint, fixed, nr;
	int i;
	void *p;

	/* Start from the mapping furthest in the growth direction. */
	ref = L.anon[0];
	for (i = 1; i < NR_ANON; i++)
		if (!ordered(L.anon[i], ref))
			ref = L.anon[i];
	dist = L.is64 ? 64 * SZ_1G : SZ_256M;

	hint = pick_free(ref, dist, len);
	if (!hint) {
		ksft_test_result_fail("hint: no free spot 0x%lx %s 0x%lx found\n",
				      dist, L.dir == TOPDOWN ? "below" : "above",
				      ref);
	} else {
		p = mmap((void *)hint, len, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ksft_test_result(p == (void *)hint,
				 "hint at free 0x%lx: expected honoured, saw %p\n",
				 hint, p);
	}

	fixed = pick_free(hint ? hint : ref, SZ_16M, len);
	if (!fixed) {
		ksft_test_result_fail("MAP_FIXED: no free spot found\n");
		ksft_test_result_fail("MAP_FIXED_NOREPLACE over a mapping: no free spot found\n");
	} else {
		p = mmap((void *)fixed, len, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		ksft_test_result(p == (void *)fixed,
				 "MAP_FIXED at 0x%lx: expected there, saw %p\n",
				 fixed, p);
		errno = 0;
		p = mmap((void *)fixed, len, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
		ksft_test_result(p == MAP_FAILED && errno == EEXIST,
				 "MAP_FIXED_NOREPLACE over the mapping at 0x%lx: expected EEXIST, saw %p (%s)\n",
				 fixed, p, p == MAP_FAILED ? strerror(errno) : "mapped");
	}

	nr = pick_free(fixed ? fixed : ref, SZ_16M, len);
	if (!nr) {
		ksft_test_result_fail("MAP_FIXED_NOREPLACE at a free spot: none found\n");
		return;
	}
	p = mmap((void *)nr, len, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ksft_test_result(p == (void *)nr,
			 "MAP_FIXED_NOREPLACE at free 0x%lx: expected there, saw %p (%s)\n",
			 nr, p, p == MAP_FAILED ? strerror(errno) : "mapped");
}

static bool is_special(const char *name)
{
	return !strcmp(name, "[vdso]") || !strncmp(name, "[vvar", 5) ||
	       !strcmp(name, "[vsyscall]");
}

/* The stack is the top of the default window, minus its randomisation. */
static void test_stack(void)
{
	unsigned long lo = L.task_size - L.stack_rnd_max - 4 * L.page;
	const char *above = NULL;
	size_t i;

	read_maps();
	if (!L.stack_end) {
		ksft_test_result_fail("stack: expected a [stack] mapping, saw none\n");
		return;
	}
	for (i = 0; i < nr_vmas; i++)
		if (vmas[i].start >= L.stack_end && !is_special(vmas[i].name))
			above = vmas[i].name[0] ? vmas[i].name : "anonymous";
	if (L.stack_end >= lo && L.stack_end <= L.task_size && !above)
		ksft_test_result_pass("stack top 0x%lx in [0x%lx, 0x%lx], highest mapping\n",
				      L.stack_end, lo, L.task_size);
	else
		ksft_test_result_fail("stack: expected top in [0x%lx, 0x%lx] and nothing but vDSO/vvar above, saw top 0x%lx%s%s\n",
				      lo, L.task_size, L.stack_end,
				      above ? ", above it: " : "",
				      above ? above : "");
}

/*
 * Report where the vDSO is, without over-constraining it: 6.1 maps the
 * 64-bit vDSO with a hint just above the stack (vdso_addr()), and falls back
 * to the allocator when the hint hits the stack; the 32-bit vDSO (and the
 * 64-bit one from 6.8 on) is placed by the allocator like any mmap.
 */
static void test_vdso(void)
{
	const struct fmm_vma *v;
	unsigned long first = L.anon[0];
	bool near_stack, in_area;

	read_maps();
	v = find_vdso();
	if (!v) {
		ksft_test_result_skip("vDSO: no [vdso] mapping (vdso disabled?)\n");
		return;
	}
	near_stack = (v->start >= L.stack_end &&
		      v->start - L.stack_end < 2 * SZ_2M) ||
		     (v->end <= L.stack_start &&
		      L.stack_start - v->end < 2 * SZ_2M);
	/* Mapped at exec, before our first mmap: the allocator's first pick. */
	if (L.dir == TOPDOWN)
		in_area = in_window(v->start, v->end - v->start) &&
			  v->start > first;
	else
		in_area = in_window(v->start, v->end - v->start) &&
			  v->start < first;
	ksft_print_msg("vDSO 0x%lx-0x%lx: %s\n", v->start, v->end,
		       near_stack ? "next to the stack (hint honoured)" :
		       in_area ? "placed by the allocator, before the first mmap" :
		       "neither next to the stack nor in the mmap area");
	if (near_stack || in_area)
		ksft_test_result_pass("vDSO at 0x%lx (%s)\n", v->start,
				      near_stack ? "next to the stack" :
				      "in the mmap area");
	else
		ksft_test_result_fail("vDSO: expected next to the stack 0x%lx-0x%lx, or in the %s window %s the first mmap 0x%lx, saw 0x%lx\n",
				      L.stack_start, L.stack_end,
				      dir_name(L.dir),
				      L.dir == TOPDOWN ? "above" : "below",
				      first, v->start);
}

static void test_too_big(void)
{
#if __SIZEOF_LONG__ == 8
	unsigned long len = 1UL << 57;	/* above TASK_SIZE_MAX, 5-level too */
#else
	unsigned long len = L.task_size + L.page;
#endif
	void *p;

	errno = 0;
	p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE, -1, 0);
	ksft_test_result(p == MAP_FAILED && errno == ENOMEM,
			 "mmap len 0x%lx > TASK_SIZE: expected ENOMEM, saw %p (%s)\n",
			 len, p, p == MAP_FAILED ? strerror(errno) : "mapped");
}

/*
 * Our line, /proc/flexmmap/self: "PID MODE ALLOCATOR nx=N COMM".  -1 with
 * errno if the file cannot be opened, 0 if it has no line for us, else 1.
 */
static int read_self(char mode[32], char alloc[32])
{
	FILE *fp = fopen(FLEXMMAP_PROC_SELF, "r");
	int found;

	if (!fp)
		return -1;
	found = fscanf(fp, "%*d %31s %31s", mode, alloc) == 2;
	fclose(fp);
	return found;
}

/* Check our own line of /proc/flexmmap/self. */
static void test_tasks(const char *want_alloc, const char *want_mode)
{
	char mode[32] = "", alloc[32] = "";
	int found = read_self(mode, alloc);

	if (found < 0) {
		if (want_alloc)
			ksft_test_result_fail("allocator: expected %s, saw no %s (%s)\n",
					      want_alloc, FLEXMMAP_PROC_SELF,
					      strerror(errno));
		if (want_mode)
			ksft_test_result_fail("mode: expected %s, saw no %s\n",
					      want_mode, FLEXMMAP_PROC_SELF);
		return;
	}
	if (!found) {
		strcpy(mode, "(PID not listed)");
		strcpy(alloc, mode);
	}
	if (want_alloc)
		ksft_test_result(!strcmp(alloc, want_alloc),
				 "allocator of PID %d: expected %s, saw %s\n",
				 getpid(), want_alloc, alloc);
	if (want_mode)
		ksft_test_result(!strcmp(mode, want_mode),
				 "mode of PID %d: expected %s, saw %s\n",
				 getpid(), want_mode, mode);
}

/*
 * --expect any: the direction the module says it gave us, or, without the
 * module, the one the first mmap shows (above the legacy window: top-down).
 */
static enum fmm_dir actual_dir(const char **why)
{
	char mode[32], alloc[32];

	if (read_self(mode, alloc) > 0) {
		*why = strstr(alloc, "bottomup") ? "module query: bottom-up" :
						   "module query: top-down";
		return strstr(alloc, "bottomup") ? BOTTOMUP : TOPDOWN;
	}
	L.dir = BOTTOMUP;
	setup_layout();
	*why = "no module answer; from the first mmap";
	return L.anon[0] >= L.win_hi ? TOPDOWN : BOTTOMUP;
}

/* --print: stable names, one per line, for a diff of two setarch -R runs. */
static void print_addresses(void)
{
	const struct fmm_vma *v;
	int i;

	for (i = 0; i < NR_ANON; i++)
		printf("mmap%d=0x%lx\n", i, L.anon[i]);
	printf("heap=0x%lx\n", L.heap_start);
	printf("stack=0x%lx\n", L.stack_end);
	v = find_vdso();
	if (v)
		printf("vdso=0x%lx\n", v->start);
}

static void __attribute__((noreturn)) usage(const char *msg)
{
	fprintf(stderr, "fmm-layout: %s\n"
		"usage: fmm-layout [--expect topdown|bottomup|any] [--expect-alloc kernel-topdown|kernel-bottomup|module-topdown|module-bottomup] [--expect-mode kernel|legacy|flexible|auto] | --print\n",
		msg);
	exit(KSFT_FAIL);
}

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const char *const allocs[] = {
		FLEXMMAP_ALLOC_KERNEL_TOPDOWN, FLEXMMAP_ALLOC_KERNEL_BOTTOMUP,
		FLEXMMAP_ALLOC_MODULE_TOPDOWN, FLEXMMAP_ALLOC_MODULE_BOTTOMUP,
		NULL
	};
	static const char *const modes[] = {
		"kernel", "legacy", "flexible", "auto", NULL
	};
	const char *expect = NULL, *want_alloc = NULL, *want_mode = NULL;
	const char *any_why = NULL;
	bool print = false;
	unsigned int plan = 0;
	int i;

	for (i = 1; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(opt, "--print")) {
			print = true;
			continue;
		}
		if (strcmp(opt, "--expect") && strcmp(opt, "--expect-alloc") &&
		    strcmp(opt, "--expect-mode"))
			usage("unknown option");
		if (!val)
			usage("option needs a value");
		i++;
		if (!strcmp(opt, "--expect")) {
			if (strcmp(val, "topdown") && strcmp(val, "bottomup") &&
			    strcmp(val, "any"))
				usage("--expect takes topdown, bottomup or any");
			expect = val;
		} else if (!strcmp(opt, "--expect-alloc")) {
			if (!one_of(val, allocs))
				usage("unknown allocator");
			want_alloc = val;
		} else {
			if (!one_of(val, modes))
				usage("unknown mode");
			want_mode = val;
		}
	}
	if (print && (expect || want_alloc || want_mode))
		usage("--print runs no tests: give it alone");
	if (!print && !expect && !want_alloc && !want_mode)
		usage("nothing to check");

	/* First thing: nothing else may have mmapped yet. */
	map_first_anon();
	if (expect && !strcmp(expect, "any"))
		L.dir = actual_dir(&any_why);
	else
		L.dir = expect && !strcmp(expect, "bottomup") ? BOTTOMUP : TOPDOWN;
	setup_layout();
	find_heap_and_stack();

	if (print) {
		print_addresses();
		return KSFT_PASS;
	}

	ksft_print_header();
	plan += !!want_alloc + !!want_mode;
	if (expect)
		plan += L.is64 ? 13 : 12;
	ksft_set_plan(plan);

	if (want_alloc || want_mode)
		test_tasks(want_alloc, want_mode);
	if (expect) {
		if (any_why)
			ksft_print_msg("--expect any: %s (%s)\n",
				       dir_name(L.dir), any_why);
		print_layout();
		test_anon_order();
		test_first_placement();
		test_shared_anon();
		test_file();
		test_hugetlb();
		if (L.is64)
			test_map_32bit();
		test_hint_fixed();
		test_stack();
		test_vdso();
		test_too_big();
		if (ksft_get_fail_cnt())
			dump_maps();
	}
	ksft_finished();
	return KSFT_FAIL;
}
