# SPDX-License-Identifier: GPL-2.0
#
# flexmmap: the 2004 flexible mmap layout as a module for Debian 12's 6.1 kernel.
#
#   make            build the module and the user-space probes (into the cache)
#   make image      build (or reuse) the QEMU guest image
#   make vm         boot the guest with an interactive shell (VM_ARGS: qemu/run options)
#   make check      build, boot the guest, run the test suite (TAP, "N passed, N failed";
#                   CHECK_ARGS: tests/check options)
#   make demo       build, boot the guest, show what loading flexmmap changes
#   make report     build, boot the guest, measure each layout's capacity: table,
#                   CSV/JSON and SVG pictures in REPORT_DIR (REPORT_ARGS: its options)
#   make kernel     build (or reuse) the kernel from linux-source-6.1 with patches/
#   make check-all  make check on every kernel of scripts/kernels.list (+ parisc's colour mutants)
#   make fresh-check  the README's commands in a clean Debian 12 root (scripts/fresh-check)
#   make matrix     build the module (W=1, a warning fails) against every Debian 12 and 13
#                   kernel ABI x flavour (amd64, cloud-amd64, rt-amd64) the archive offers:
#                   a table, "N passed, N failed" (scripts/matrix; MATRIX_ARGS: its options,
#                   e.g. "--suite bookworm --abi 57", "--list", "--record" into docs/matrix.md)
#   make clean      remove build outputs (the guest image stays; see clean-cache)
#
# KERNEL=source (make check KERNEL=source, make vm KERNEL=source, ...) builds
# the module against that kernel, which has the mmap layout hook and KASAN,
# lockdep, DEBUG_VM and kmemleak on, and boots it; KERNEL=source-rt is the
# same debugging on Debian 13's linux-source-6.12 built with PREEMPT_RT and
# DEBUG_ATOMIC_SLEEP (scripts/kernel-rt.config), with the trixie root
# filesystem; KERNEL=stock (the default) is Debian's kernel.  GUEST=trixie (or KERNEL=trixie) is Debian 13 and its
# 6.12 kernel; the module is built for it in a trixie build root in the cache
# (scripts/trixie-chroot: 6.12's build tools need trixie's C library).
# GUEST=i386 (or KERNEL=i386) is 32-bit Debian 12 and its 686-pae kernel
# (qemu-system-i386, PAE and NX); the module is cross-built for it here
# (ARCH=i386, against the i386 headers that scripts/i386-headers unpacks
# into the cache), and the benchmark and selftest programs are 32-bit.
# GUEST=parisc (or KERNEL=parisc) is the 32-bit PA-RISC guest of
# qemu-system-hppa (docs/parisc-guest.md): so far "make kernel" (its
# kernel, scripts/build-kernel-parisc), "make module" (cross-built
# against that tree with the hppa tools of scripts/hppa-toolchain) and
# "make check" (its own suite, tests/parisc/check).
#
# Everything built lives under $(FLEXMMAP_CACHE) (default ~/.cache/flexmmap),
# never in this tree.

SHELL := /bin/bash
FLEXMMAP_CACHE ?= $(HOME)/.cache/flexmmap
export FLEXMMAP_CACHE

SRC := $(CURDIR)
# The kernel: a NAME of scripts/kernels.list.  GUEST=G is KERNEL=G, and
# FLAVOUR=F makes it G-F (FLAVOUR=rt alone: rt; GUEST=trixie FLAVOUR=cloud:
# trixie-cloud).  KVER=RELEASE picks the ABI of a kernel whose module this
# machine's headers build (FLEXMMAP_KVER).
ifneq ($(GUEST),)
KERNEL := $(GUEST)
endif
ifneq ($(FLAVOUR),)
KERNEL := $(if $(filter-out stock,$(or $(KERNEL),stock)),$(KERNEL)-$(FLAVOUR),$(FLAVOUR))
endif
KERNEL ?= stock
export FLEXMMAP_KERNEL := $(KERNEL)
ifneq ($(KVER),)
export FLEXMMAP_KVER := $(KVER)
endif
# make 4.3's $(shell) does not see exported variables: FLEXMMAP_KERNEL inline.
KLIB = FLEXMMAP_KERNEL=$(KERNEL) FLEXMMAP_KVER=$(FLEXMMAP_KVER) && . $(SRC)/scripts/lib.sh &&
# The table's names, as scripts/lib.sh lists them.
KNAMES = $(shell . $(SRC)/scripts/lib.sh && flexmmap_kernel_names)
KFIELDS := $(shell $(KLIB) for f in arch flavour build; do flexmmap_kfield $$f $(KERNEL); done)
KARCH_DEB := $(word 1,$(KFIELDS))
KFLAVOUR := $(word 2,$(KFIELDS))
KHOW := $(word 3,$(KFIELDS))
ifeq ($(KHOW),)
$(error KERNEL=$(KERNEL) is not in scripts/kernels.list: $(KNAMES))
endif
ifeq ($(KERNEL),stock)
BUILD := $(FLEXMMAP_CACHE)/build
else
BUILD := $(FLEXMMAP_CACHE)/build/$(KERNEL)
endif
ifeq ($(KHOW),host)
# Evaluated lazily: the headers may be installed by "deps" first.
KVER_BUILT = $(shell $(KLIB) flexmmap_kver 2>/dev/null)
KDIR = /usr/src/linux-headers-$(KVER_BUILT)
else ifeq ($(KHOW),chroot)
# In the trixie build root (scripts/trixie-chroot), which has the headers.
KVER_BUILT = $(shell $(KLIB) flexmmap_guest_kver 2>/dev/null)
KDIR = /usr/src/linux-headers-$(KVER_BUILT)
else ifeq ($(KHOW),source)
KDIR = $(shell FLEXMMAP_KERNEL=$(KERNEL) $(SRC)/scripts/build-kernel --print)/linux
else ifeq ($(KHOW),i386)
KDIR = $(shell $(SRC)/scripts/i386-headers --quiet)
KARCH := ARCH=i386
else ifeq ($(KHOW),parisc)
KDIR = $(shell $(SRC)/scripts/build-kernel-parisc --print)/linux
# The hppa cross tools; on PATH as well: arch/parisc/Makefile looks its
# tools up there (cc-cross-prefix).
HPPA_BIN = $(shell $(SRC)/scripts/hppa-toolchain --quiet)
KARCH = ARCH=parisc CROSS_COMPILE=hppa-linux-gnu-
KENV = PATH=$(HPPA_BIN):$$PATH
ifneq ($(filter-out module kernel check clean,$(or $(MAKECMDGOALS),all)),)
$(error KERNEL=parisc: only "make module", "make kernel" and "make check" so far (docs/parisc-guest.md))
endif
endif
# The guest's own programs (benchmark, selftests): 32-bit for the i386 guest.
ifeq ($(KARCH_DEB),i386)
GUEST_M := -m32
else
GUEST_M := -m64
endif
# <asm/...> for -m32 from the multiarch folder, without gcc-multilib: see
# M32INC in userspace-probes/Makefile.
M32INC := -idirafter /usr/include/$(shell $(CC) -print-multiarch 2>/dev/null)
OUT := $(BUILD)/out
KMOD := $(BUILD)/kmod
LINUX_SRC = $(FLEXMMAP_CACHE)/src/linux-source-6.1

.PHONY: fresh-check notrixie i386-headers all module probes benchprog selftests stage deps image vm check check-donothing lint stress demo bench report deb install uninstall clean clean-cache ksrc kernel check-all matrix

all: module probes benchprog selftests stage

deps:
	@$(SRC)/scripts/deps

ifneq ($(filter source parisc,$(KHOW)),)
module: kernel
endif
ifeq ($(KHOW),i386)
module: i386-headers
endif
# The headers of a flavour other than amd64 (make deps installs them).
ifeq ($(KHOW),host)
module: deps
endif
# The sources are copied to $(KMOD): kbuild writes its objects beside them.
# Trixie's 6.12 headers are used in the trixie build root.  Objects built
# against another tree are thrown away first ($(KMOD)/.kdir names the tree):
# kbuild's dependency files name the old tree's headers, which did not
# change, so it would keep a module built for another kernel config (seen:
# the source kernel rebuilt with namespaces kept a module built without,
# and every read of /proc/flexmmap oopsed).
module:
ifeq ($(KHOW),host)
	@echo "flexmmap: kernel $(or $(KVER_BUILT),(none found)) ($(if $(FLEXMMAP_KVER),FLEXMMAP_KVER,the newest $(KFLAVOUR) headers; KVER=RELEASE chooses))" >&2
endif
ifneq ($(KHOW),chroot)
	@test -f "$(KDIR)/Makefile" || { \
	  echo "flexmmap: no kernel tree at $(KDIR) for KERNEL=$(KERNEL) (BUILD $(KHOW) in scripts/kernels.list;" \
	       "host: run 'make deps' or 'apt-get install linux-headers-$(KFLAVOUR)'; i386: scripts/i386-headers;" \
	       "source, parisc: make kernel KERNEL=$(KERNEL))" >&2; exit 1; }
endif
	@[ "$$(cat $(KMOD)/.kdir 2>/dev/null)" = "$(KERNEL) $(KDIR)" ] || rm -rf $(KMOD)
	@mkdir -p $(KMOD)/module $(KMOD)/include $(OUT)
	@echo "$(KERNEL) $(KDIR)" >$(KMOD)/.kdir
	@$(SRC)/scripts/copy-changed $(SRC)/Kbuild $(KMOD)/Kbuild
	@$(SRC)/scripts/copy-changed $(SRC)/module $(KMOD)/module
	@# A file gone from module/ takes its object along (scripts/callgraph reads them).
	@for f in $(KMOD)/module/*.[ch]; do \
	  b=$${f##*/}; [ -e "$(SRC)/module/$$b" ] || \
	  rm -f "$$f" "$(KMOD)/module/$${b%.*}.o" "$(KMOD)/module/.$${b%.*}.o.cmd"; \
	done
	@$(SRC)/scripts/copy-changed $(SRC)/include $(KMOD)/include
ifeq ($(KHOW),chroot)
	$(SRC)/scripts/trixie-chroot $(KMOD) -- make -C $(KDIR) M=$(KMOD) W=1 modules
else
	$(KENV) $(MAKE) -C $(KDIR) M=$(KMOD) $(KARCH) W=1 modules
endif
	@cp $(KMOD)/flexmmap.ko $(OUT)/flexmmap.ko

# The i386 guest kernel's headers, unpacked into the cache, with this
# machine's linux-kbuild-6.1 tools (a no-op once made).
i386-headers: deps
	@$(SRC)/scripts/i386-headers >/dev/null

# linux-source-6.1 with patches/ and scripts/kernel.config, built in
# $(FLEXMMAP_CACHE)/source-kernel/<key>; a no-op when nothing changed.
# KERNEL=source-rt: linux-source-6.12 with PREEMPT_RT (scripts/build-kernel).
# KERNEL=parisc: the parisc guest's (scripts/build-kernel-parisc, which
# installs the hppa tools it needs), in $(FLEXMMAP_CACHE)/parisc-kernel.
ifeq ($(KHOW),parisc)
kernel:
	@$(SRC)/scripts/build-kernel-parisc >/dev/null
else
kernel: deps
	@$(SRC)/scripts/build-kernel >/dev/null
endif

# kselftest.h, checkpatch.pl and the vm selftests come from linux-source-6.1.
ksrc: $(LINUX_SRC)/.extracted
$(LINUX_SRC)/.extracted:
	@$(SRC)/scripts/linux-source

probes: ksrc
	@mkdir -p $(OUT)/probes
	$(MAKE) -C $(SRC)/userspace-probes O=$(OUT)/probes KSFT_DIR=$(LINUX_SRC)/tools/testing/selftests \
	  GUEST_M=$(GUEST_M)

# The benchmark's programs (bench/): fmm-bench (static) and its driver.
BENCH_OUT := $(OUT)/bench
benchprog: $(BENCH_OUT)/fmm-bench $(BENCH_OUT)/flexmmap-bench
$(BENCH_OUT)/fmm-bench: $(SRC)/bench/fmm-bench.c
	@mkdir -p $(BENCH_OUT)
	$(CC) $(GUEST_M) $(M32INC) -static -Wall -Wextra -Werror -O2 -std=gnu11 -o $@ $<
$(BENCH_OUT)/flexmmap-bench: $(SRC)/bench/flexmmap-bench
	@install -D -m 0755 $< $@

# The kernel's vm selftests that exercise placement, from linux-source-6.1,
# static, for tests/guest/61-ext-suites.sh.
SELFTESTS := map_fixed_noreplace mremap_test mremap_dontunmap \
	virtual_address_range map_populate va_128TBswitch
ST_OUT := $(OUT)/selftests
selftests: $(addprefix $(ST_OUT)/,$(SELFTESTS))
$(ST_OUT)/%: $(LINUX_SRC)/.extracted
	@mkdir -p $(ST_OUT)
	$(CC) $(GUEST_M) $(M32INC) -static -O2 -I$(LINUX_SRC)/tools/testing/selftests -o $@ \
	  $(LINUX_SRC)/tools/testing/selftests/vm/$*.c

# The guest sees $(OUT) at /flexmmap: module, probes and the guest-side tests.
# Replaced whole, so a test deleted from tests/guest does not linger.
stage:
	@mkdir -p $(OUT)
	@t=$$(mktemp -d $(OUT)/.tests.XXXXXX) && cp -r $(SRC)/tests/guest/. $$t/ && \
	  cp -r $(SRC)/tests/stress $$t/stress && \
	  chmod 755 $$t && rm -rf $(OUT)/tests && mv $$t $(OUT)/tests

image: deps
	@$(SRC)/guest-image/build

# make vm VM_ARGS="--share DIR --append hugepages=16"
vm: deps all image
	@$(SRC)/qemu/run $(VM_ARGS)

# One boot on the instruction clock (qemu/run --icount); results in
# $(FLEXMMAP_CACHE)/bench.  make bench BENCH_ARGS="--reps 3 --check-targets"
BENCH_DIR ?= $(FLEXMMAP_CACHE)/bench
bench: deps
	@$(MAKE) --no-print-directory all image
	@mkdir -p $(BENCH_DIR)
	@$(SRC)/qemu/run --icount --timeout 5400 --share $(BENCH_DIR) -- \
	  /flexmmap/bench/flexmmap-bench --out /share $(BENCH_ARGS)
	@echo "flexmmap: benchmark results in $(BENCH_DIR)"

# One boot; flexmmap-report writes into REPORT_DIR, which the guest sees at
# /share.  make report REPORT_ARGS="--bits 32 --rows module-legacy,module-flexible"
REPORT_DIR ?= $(FLEXMMAP_CACHE)/report
report: deps
	@$(MAKE) --no-print-directory all image
	@mkdir -p $(REPORT_DIR)
	@$(SRC)/qemu/run --timeout 1800 --share $(REPORT_DIR) -- \
	  /flexmmap/probes/flexmmap-report --out /share $(REPORT_ARGS)
	@echo "flexmmap: table, CSV, JSON and SVG pictures in $(REPORT_DIR)"

# flexmmap-dkms and flexmmap-tools (dpkg-buildpackage -us -uc -b), into
# $(OUT)/deb, where the guest test 36-deb.sh installs them.  Only what the
# package's build needs ("scripts/deps deb": dpkg-dev, git, lintian and
# debian/control's Build-Depends), not the test bench.  GUEST=trixie: built
# in the trixie build root (Debian 13's tools, Build-Depends and kselftest.h).
deb:
	@$(SRC)/scripts/deps deb
	@$(SRC)/scripts/build-deb

# Without DKMS: the module for the headers' kernel (KVER), into
# $(INSTALL_MOD_PATH)/lib/modules/KVER/updates, then depmod.
install: notrixie module
	$(MAKE) -C $(KDIR) M=$(KMOD) INSTALL_MOD_PATH=$(INSTALL_MOD_PATH) \
	  INSTALL_MOD_DIR=updates modules_install
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KVER_BUILT)

uninstall: notrixie
	rm -f $(INSTALL_MOD_PATH)/lib/modules/$(KVER_BUILT)/updates/flexmmap.ko*
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KVER_BUILT)

# This machine is Debian 12: a 6.12 module is for the trixie guest, or for a
# Debian 13 machine through the flexmmap-dkms package.
notrixie:
	@test "$(KHOW)" != chroot || { \
	  echo "flexmmap: 'make $(MAKECMDGOALS)' is for this machine's own kernel, not KERNEL=$(KERNEL);" \
	       "on Debian 13 install flexmmap-dkms (make deb)" >&2; exit 1; }
	@test "$(KHOW)" != i386 || { \
	  echo "flexmmap: 'make $(MAKECMDGOALS)' is for this machine's own kernel, not KERNEL=i386;" \
	       "on a 32-bit Debian 12 install flexmmap-dkms (make deb)" >&2; exit 1; }

# checkpatch --strict, sparse, clang-format, shellcheck, -Werror, py_compile
lint: deps
	@$(SRC)/scripts/lint

# make check CHECK_ARGS="--guest-only 30-"
# GUEST=parisc: the module, the initramfs and tests/parisc/check
# (CHECK_ARGS="colour unload": some of its groups).
ifeq ($(KHOW),parisc)
check:
	@$(MAKE) --no-print-directory module
	@$(SRC)/guest-image/build-parisc --quiet >/dev/null
	@$(SRC)/tests/parisc/check $(CHECK_ARGS)
else
check: deps
	@$(MAKE) --no-print-directory all image deb
	@$(SRC)/tests/check $(CHECK_ARGS)
endif

# The suite against a module that does nothing (tests/donothing): a negative
# control of the suite itself.  Not part of "make check" yet (issue 18).
DNMOD := $(BUILD)/donothing
check-donothing: deps
	@$(MAKE) --no-print-directory all image
	@rm -rf $(DNMOD) && mkdir -p $(DNMOD) $(OUT)/donothing
	@cp $(SRC)/tests/donothing/Kbuild $(SRC)/tests/donothing/flexmmap.c $(DNMOD)/
ifeq ($(KHOW),chroot)
	$(SRC)/scripts/trixie-chroot $(DNMOD) -- make -C $(KDIR) M=$(DNMOD) W=1 modules
else
	$(MAKE) -C $(KDIR) M=$(DNMOD) $(KARCH) W=1 modules
endif
	@cp $(DNMOD)/flexmmap.ko $(OUT)/donothing/flexmmap.ko
	@$(SRC)/tests/donothing/check $(CHECK_ARGS)

# The whole suite on every kernel.  .ci/run runs the stock, trixie and parisc ones:
# the source-built debug kernel (KASAN, lockdep, kmemleak under TCG) makes
# its suite too long for CI's 90 minutes (see .ci/run), and so does the
# i386 guest's (its cold image alone takes about 16 minutes).  .ci/run
# runs the parisc guest's suite too; its colour mutants are here only.
check-all: deps
	@st=0; for k in $(KNAMES); do \
	  echo "flexmmap: make check KERNEL=$$k" >&2; \
	  $(MAKE) --no-print-directory check KERNEL=$$k FLAVOUR= GUEST= || st=1; \
	done; \
	$(SRC)/tests/parisc/colour-mutants || st=1; \
	exit $$st

# The build matrix (issue 37): the module built with W=1 against every
# bookworm and trixie linux-headers ABI x flavour the archive offers, the
# packages downloaded and unpacked into $(FLEXMMAP_CACHE)/matrix (nothing
# installed), trixie's built in the trixie build root.  See docs/kernels.md.
matrix: deps
	@$(SRC)/scripts/matrix $(MATRIX_ARGS)

# The long reliability run (issue 8): the storm with 1000 cycles, the
# external suites with longer stress-ng runs, bad input, resource edges, and
# the stress-only tests of tests/stress (the full paxtest blackhat), and 41's
# load cycles 1000 times (100 in make check).  One boot; ends with "N passed,
# N failed".  STRESS_ARGS="--env FMM_STORM_CYCLES=200 --env FMM_CYCLES=200"
# A storm cycle takes 5-13 s under TCG with its load running (insmod, the
# kprobes' text patching, the unload's RCU-tasks wait): 1000 cycles need
# 1.5-3.5 hours, hence the file and boot time limits.
stress: deps
	@$(MAKE) --no-print-directory all image
	@$(SRC)/qemu/run --timeout 21600 --env FMM_STORM_CYCLES=1000 --env FMM_CYCLES=1000 \
	  --env FLEXMMAP_TEST_TIMEOUT=14400 \
	  --env FMM_STRESSNG_SECONDS=5 $(STRESS_ARGS) -- \
	  /flexmmap/tests/suite --also /flexmmap/tests/stress 41- 60- 61- 62- 63- 70-

demo: deps
	@$(MAKE) --no-print-directory all image
	@$(SRC)/tests/demo

# The README's commands in a clean Debian 12 root made in the cache (nothing
# of this machine's packages in it): scripts/fresh-check; about 70-90
# minutes on 2 cores.  FRESH_ARGS="--only parisc,deb" (or --i386, --rev REV)
fresh-check:
	@$(SRC)/scripts/fresh-check $(FRESH_ARGS)

clean:
	rm -rf $(BUILD)

clean-cache:
	rm -rf $(FLEXMMAP_CACHE)
