# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make            build sroce.ko, libsroce-rdmav34.so and the tests
# make run        boot the VM, add sroce0, show it and run traffic
# make check      boot the VM and run every test
# make check-debug the same on a debug kernel (KASAN, lockdep, UBSAN,
#                 kmemleak, ...), built once and cached (not in CI)
# make bench      sroce against rdma_rxe, in one VM run (not in CI);
#                 ROUNDS=N alternations (default 5), PARTS="clients ..."
#                 some of limits perftest mr odp dmabuf clients
# make install / make uninstall
# make deb        the Debian packages (sroce-dkms, ibverbs-provider-sroce)
#                 into build/deb/, checked by lintian
#
# run, check, check-debug and bench are scripts/host/TARGET.sh: the host side
# (build, boot the VMs, judge them); what runs inside the VMs is in
# scripts/guest/.
#
# The kernel: KVER=RELEASE builds for that release, e.g.
# make KVER=6.12.117+deb12-amd64. By default KVER is the newest Debian kernel
# installed with both an image in /boot and headers (scripts/host/kver.sh),
# which the test VM boots; not necessarily the one this machine runs. KDIR,
# the headers built against, is /lib/modules/KVER/build, else
# /usr/src/linux-headers-KVER (given KDIR=DIR alone, KVER is DIR's
# release). A KVER without headers stops with one line naming the package
# to install. KVER goes to the scripts of run, check and bench too: their
# VMs boot that kernel (its image must be installed).

ifeq ($(origin KVER),undefined)
ifeq ($(origin KDIR),undefined)
KVER := $(shell scripts/host/kver.sh 2>/dev/null)
else
KVER := $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"$$/\1/p' \
	'$(KDIR)/include/generated/utsrelease.h' 2>/dev/null)
endif
endif
ifeq ($(origin KDIR),undefined)
KDIR := $(shell scripts/host/kver.sh --kdir '$(KVER)' 2>/dev/null)
endif
export KVER KDIR
# The goals that build the module stop, before any compiler runs, on a KVER
# without headers (kver.sh's line says which package has them) or a KDIR
# that is no kernel build tree.
ifneq ($(filter all kernel install run check check-debug bench,\
		$(or $(MAKECMDGOALS),all)),)
ifeq ($(KDIR),)
$(error $(shell scripts/host/kver.sh --kdir '$(KVER)' 2>&1 >/dev/null))
else ifeq ($(wildcard $(KDIR)/Makefile),)
$(error KDIR=$(KDIR) is no kernel build tree (it has no Makefile))
endif
endif
PREFIX ?= /usr
LIBDIR ?= $(PREFIX)/lib/$(shell gcc -print-multiarch)
DESTDIR ?=

.PHONY: all kernel userspace tests run check check-debug bench install \
	uninstall deb clean

all: kernel userspace tests

kernel:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

userspace:
	$(MAKE) -C userspace

tests: userspace
	$(MAKE) -C tests

run: all
	scripts/host/run.sh

check: all
	scripts/host/check.sh

check-debug: all
	scripts/host/check-debug.sh

bench: all
	scripts/host/bench.sh "$(ROUNDS)" "$(PARTS)"

install: kernel userspace
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates \
		INSTALL_MOD_PATH=$(DESTDIR) CONFIG_MODULE_SIG_ALL= \
		modules_install
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)
	install -D -m 0644 userspace/libsroce-rdmav34.so \
		$(DESTDIR)$(LIBDIR)/libibverbs/libsroce-rdmav34.so
	install -D -m 0644 userspace/sroce.driver \
		$(DESTDIR)/etc/libibverbs.d/sroce.driver

deb:
	scripts/host/deb.sh

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/updates/kernel/sroce.ko \
		$(DESTDIR)/lib/modules/$(KVER)/updates/kernel/sroce.ko.*
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)
	rm -f $(DESTDIR)$(LIBDIR)/libibverbs/libsroce-rdmav34.so
	rm -f $(DESTDIR)/etc/libibverbs.d/sroce.driver

clean:
	if [ -f '$(KDIR)/Makefile' ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	$(MAKE) -C userspace clean
	$(MAKE) -C tests clean
	rm -rf build
