// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-pte: how many page-table bytes does a small dynamically linked
 * program cost right after start-up?  The 2004 flexible-mmap patch noted
 * that the legacy layout, which puts the shared libraries at TASK_SIZE/3
 * far from both the executable and the stack, costs a page-table page per
 * process that the top-down layout (libraries just below the stack) saves.
 *
 * Built dynamically linked as fmm-pte-32 and fmm-pte-64, not PIE: a
 * position-dependent executable at the traditional 0x08048000 / 0x400000,
 * the kind of program the seed measured (a PIE is itself placed near the
 * mmap area and blurs the comparison).  Run it under "setarch -R" so that
 * two runs differ by layout only.
 *
 * Output, "key=value" lines: bits, vmpte_kb (VmPTE of /proc/self/status:
 * all page-table pages of the mm), exe (its first mapping), libc (the
 * first mapping of libc.so), stack (the [stack] start).  No stdio before
 * the reading and no malloc at all, so the measure sees the process as the
 * dynamic loader left it.  Exit status 0, or 1 if a /proc file is missing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read all of @path into @buf (NUL-terminated); 0 on success. */
static int slurp(const char *path, char *buf, size_t size)
{
	size_t have = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	while (have < size - 1 &&
	       (n = read(fd, buf + have, size - 1 - have)) > 0)
		have += n;
	buf[have] = '\0';
	close(fd);
	return 0;
}

/* The start address of the first maps line whose text contains @what. */
static unsigned long first_map(const char *maps, const char *what)
{
	const char *hit = strstr(maps, what), *line;

	if (!hit)
		return 0;
	for (line = hit; line > maps && line[-1] != '\n'; line--)
		;
	return strtoul(line, NULL, 16);
}

int main(void)
{
	static char status[8192], maps[1 << 16];
	char exe[256];
	const char *pte;
	ssize_t n;

	/* Both files first: nothing below may change the page tables. */
	if (slurp("/proc/self/status", status, sizeof(status)) ||
	    slurp("/proc/self/maps", maps, sizeof(maps))) {
		perror("fmm-pte: /proc/self");
		return 1;
	}
	pte = strstr(status, "VmPTE:");
	if (!pte) {
		fprintf(stderr, "fmm-pte: no VmPTE in /proc/self/status\n");
		return 1;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	printf("bits=%zu\nvmpte_kb=%lu\n", sizeof(long) * 8,
	       strtoul(pte + strlen("VmPTE:"), NULL, 10));
	printf("exe=0x%lx\nlibc=0x%lx\nstack=0x%lx\n",
	       n > 0 ? first_map(maps, exe) : 0UL, first_map(maps, "libc.so"),
	       first_map(maps, "[stack]"));
	return 0;
}
