// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-elfedit: copy an ELF executable, changing its program headers:
 *
 *   --drop-gnustack  turn PT_GNU_STACK into PT_NULL, so the copy looks like
 *		      a binary built before PT_GNU_STACK existed (the kernel
 *		      then sees EXSTACK_DEFAULT, and the 2004 policy gives it
 *		      the legacy layout); check with "readelf -lW OUT": no
 *		      GNU_STACK line remains
 *   --rwx-text	      make every executable PT_LOAD writable too (RWX), the
 *		      kind of binary W^X (vm.flexmmap_nx=3) refuses to map
 *   --rx-bss	      turn a PT_NOTE after the last PT_LOAD into a PT_LOAD
 *		      "R E" with no file bytes: one page at FMM_RXBSS_ADDR
 *		      that the kernel's ELF loader maps as anonymous memory
 *		      (vm_brk_flags(), writable by default) and executable
 *
 * Usage: fmm-elfedit --drop-gnustack|--rwx-text|--rx-bss IN OUT
 *
 * Build-time tool, run on the host (the guest tests use it too).  Handles
 * ELF32 and ELF64 of the host's byte order.  Fails if IN is not such an ELF
 * file or has nothing to change; OUT keeps IN's mode.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Above the static probes' own segments, in 32- and 64-bit space alike. */
#define FMM_RXBSS_ADDR 0x10000000

static const char *prog = "fmm-elfedit";

static void __attribute__((noreturn)) die(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static unsigned char *read_file(const char *path, size_t *size, mode_t *mode)
{
	struct stat st;
	unsigned char *buf;
	FILE *fp;

	fp = fopen(path, "rb");
	if (!fp || fstat(fileno(fp), &st))
		die("cannot open %s", path);
	buf = malloc(st.st_size ? st.st_size : 1);
	if (!buf || fread(buf, 1, st.st_size, fp) != (size_t)st.st_size)
		die("cannot read %s", path);
	fclose(fp);
	*size = st.st_size;
	*mode = st.st_mode & 07777;
	return buf;
}

/*
 * Rewrite the program header table: p_type is the first field of both
 * Elf32_Phdr and Elf64_Phdr; p_flags is the second field of Elf64_Phdr and
 * the seventh of Elf32_Phdr.  Returns how many entries changed.
 */
enum edit { DROP_GNUSTACK, RWX_TEXT, RX_BSS };

/* Make program header @ph (of an ELF @is64 file) the --rx-bss segment. */
static void make_rx_bss(unsigned char *ph, bool is64)
{
	if (is64) {
		Elf64_Phdr *p = (Elf64_Phdr *)ph;

		*p = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				   .p_vaddr = FMM_RXBSS_ADDR,
				   .p_paddr = FMM_RXBSS_ADDR,
				   .p_memsz = 4096, .p_align = 4096 };
	} else {
		Elf32_Phdr *p = (Elf32_Phdr *)ph;

		*p = (Elf32_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				   .p_vaddr = FMM_RXBSS_ADDR,
				   .p_paddr = FMM_RXBSS_ADDR,
				   .p_memsz = 4096, .p_align = 4096 };
	}
}

static int edit_phdrs(unsigned char *buf, size_t size, const char *path,
		      enum edit edit)
{
	int last_load = -1;
	unsigned long long phoff;
	unsigned int phnum, phentsize, i;
	int changed = 0;

	if (size < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG))
		die("%s is not an ELF file", path);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (buf[EI_DATA] != ELFDATA2LSB)
#else
	if (buf[EI_DATA] != ELFDATA2MSB)
#endif
		die("%s: byte order differs from the host's", path);

	if (buf[EI_CLASS] == ELFCLASS64 && size >= sizeof(Elf64_Ehdr)) {
		Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;

		phoff = eh->e_phoff;
		phnum = eh->e_phnum;
		phentsize = eh->e_phentsize;
		if (phentsize < sizeof(Elf64_Phdr))
			die("%s: bad e_phentsize", path);
	} else if (buf[EI_CLASS] == ELFCLASS32 && size >= sizeof(Elf32_Ehdr)) {
		Elf32_Ehdr *eh = (Elf32_Ehdr *)buf;

		phoff = eh->e_phoff;
		phnum = eh->e_phnum;
		phentsize = eh->e_phentsize;
		if (phentsize < sizeof(Elf32_Phdr))
			die("%s: bad e_phentsize", path);
	} else {
		die("%s: neither ELF32 nor ELF64", path);
	}
	if (phnum == PN_XNUM)
		die("%s: extended program header numbering not supported", path);
	if (phoff > size || (unsigned long long)phnum * phentsize > size - phoff)
		die("%s: program header table outside the file", path);

	for (i = 0; i < phnum; i++) {
		unsigned char *ph = buf + phoff + i * phentsize;
		Elf32_Word *type = (Elf32_Word *)ph;
		Elf32_Word *flags = (Elf32_Word *)(ph + (buf[EI_CLASS] == ELFCLASS64 ?
					offsetof(Elf64_Phdr, p_flags) :
					offsetof(Elf32_Phdr, p_flags)));

		if (*type == PT_LOAD)
			last_load = i;
		if (edit == DROP_GNUSTACK && *type == PT_GNU_STACK) {
			*type = PT_NULL;
			changed++;
		} else if (edit == RWX_TEXT && *type == PT_LOAD &&
			   (*flags & PF_X) && !(*flags & PF_W)) {
			*flags |= PF_W;
			changed++;
		} else if (edit == RX_BSS && !changed && *type == PT_NOTE &&
			   last_load >= 0 && i > (unsigned int)last_load) {
			/* After the last PT_LOAD: the loads stay sorted. */
			make_rx_bss(ph, buf[EI_CLASS] == ELFCLASS64);
			changed++;
		}
	}
	return changed;
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	size_t size;
	mode_t mode;
	FILE *fp;

	static const char *const fails[] = {
		[DROP_GNUSTACK] = "%s has no PT_GNU_STACK program header",
		[RWX_TEXT] = "%s has no read-only executable PT_LOAD",
		[RX_BSS] = "%s has no PT_NOTE after its last PT_LOAD",
	};
	enum edit edit;

	if (argc == 4 && !strcmp(argv[1], "--drop-gnustack")) {
		edit = DROP_GNUSTACK;
	} else if (argc == 4 && !strcmp(argv[1], "--rwx-text")) {
		edit = RWX_TEXT;
	} else if (argc == 4 && !strcmp(argv[1], "--rx-bss")) {
		edit = RX_BSS;
	} else {
		fprintf(stderr, "usage: %s --drop-gnustack|--rwx-text|--rx-bss IN OUT\n",
			prog);
		return 2;
	}
	buf = read_file(argv[2], &size, &mode);
	if (!edit_phdrs(buf, size, argv[2], edit))
		die(fails[edit], argv[2]);

	fp = fopen(argv[3], "wb");
	if (!fp || fwrite(buf, 1, size, fp) != size || fclose(fp))
		die("cannot write %s", argv[3]);
	if (chmod(argv[3], mode))
		die("cannot chmod %s", argv[3]);
	free(buf);
	return 0;
}
