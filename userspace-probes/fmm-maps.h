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

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

#endif /* _FMM_MAPS_H */
