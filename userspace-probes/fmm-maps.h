/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fmm-maps.h: /proc/self/maps and /proc/sys reading shared by the probes
 * (fmm-layout, fmm-capacity).  Header-only: each probe is one static
 * program.
 *
 * fmm_read_maps() uses neither stdio nor malloc, so it also works after
 * fmm-capacity has left no address space to allocate from.
 */
#ifndef _FMM_MAPS_H
#define _FMM_MAPS_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#define FMM_MAX_VMAS 4096

struct fmm_vma {
	unsigned long start;
	unsigned long end;
	char perms[8];
	char name[128];
};

static struct fmm_vma vmas[FMM_MAX_VMAS];
static size_t nr_vmas;

/* Parse /proc/self/maps into vmas[]; -1 (errno set) if it cannot be read. */
static int fmm_read_maps(void)
{
	static char buf[1 << 16];
	size_t have = 0, used;
	int fd = open("/proc/self/maps", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	nr_vmas = 0;
	for (;;) {
		char *line = buf, *nl;

		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0) {
			close(fd);
			return -1;
		}
		have += n;
		buf[have] = '\0';
		while ((nl = strchr(line, '\n')) && nr_vmas < FMM_MAX_VMAS) {
			struct fmm_vma *v = &vmas[nr_vmas];
			int pos = 0;

			*nl = '\0';
			if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &v->start,
				   &v->end, v->perms, &pos) >= 3) {
				snprintf(v->name, sizeof(v->name), "%s",
					 pos ? line + pos : "");
				nr_vmas++;
			}
			line = nl + 1;
		}
		used = line - buf;
		memmove(buf, line, have - used);
		have -= used;
		if (!n || nr_vmas == FMM_MAX_VMAS)
			break;
	}
	close(fd);
	return 0;
}

static const struct fmm_vma *find_vma_named(const char *name)
{
	size_t i;

	for (i = 0; i < nr_vmas; i++)
		if (!strcmp(vmas[i].name, name))
			return &vmas[i];
	return NULL;
}

/* One unsigned number from a file such as /proc/sys/...; -1 if none. */
static int read_ulong(const char *path, unsigned long *val)
{
	FILE *fp = fopen(path, "r");
	int ret;

	if (!fp)
		return -1;
	ret = fscanf(fp, "%lu", val) == 1 ? 0 : -1;
	fclose(fp);
	return ret;
}

/*
 * Is the kernel itself 32-bit (i386), not a 64-bit kernel running this task
 * in compat mode?  /proc/kallsyms prints its addresses as wide as the
 * kernel's longs (as zeros to an unprivileged reader), whatever the task's
 * personality; uname() would say i686 under "setarch i386" too.  The guest
 * tests make the same test in shell: fmm_native_bits in tests/guest/lib.sh.
 */
static inline bool fmm_kernel_is_32bit(void)
{
	char line[64];
	FILE *fp = fopen("/proc/kallsyms", "r");
	bool ret;

	if (!fp)
		return false;
	ret = fgets(line, sizeof(line), fp) && strcspn(line, " ") == 8;
	fclose(fp);
	return ret;
}

/*
 * A native 32-bit kernel's TASK_SIZE (its user/kernel split, 0xc0000000 with
 * VMSPLIT_3G): the end of the highest page a MAP_FIXED_NOREPLACE mapping is
 * not refused for with ENOMEM (an address in use answers EEXIST).
 */
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
static inline unsigned long fmm_native_task_size(unsigned long page)
{
	unsigned long lo = 0, hi = ~0UL / page, mid;	/* in pages */
	void *p;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		p = mmap((void *)(mid * page), page, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED) {
			munmap(p, page);
			lo = mid;
		} else if (errno == ENOMEM || errno == EINVAL) {
			hi = mid;
		} else {
			lo = mid;	/* EEXIST, EPERM: below the end */
		}
	}
	return (lo + 1) * page;
}

#endif /* _FMM_MAPS_H */
