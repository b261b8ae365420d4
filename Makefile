# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make            build sroce.ko, libsroce-rdmav34.so and the tests
# make run        boot the VM, add sroce0, show it and run traffic
# make check      boot the VM and run every test
# make check-debug the same on a debug kernel (KASAN, lockdep, UBSAN,
#                 kmemleak, ...), built once and cached (not in CI)
# make bench      sroce against rdma_rxe, in one VM run (not in CI);
#                 ROUNDS=N alternations (default 5)
# make install / make uninstall
#
# run, check, check-debug and bench are scripts/host/TARGET.sh: the host side
# (build, boot the VMs, judge them); what runs inside the VMs is in
# scripts/guest/.
#
# The kernel is Debian's installed linux-image/linux-headers
# (scripts/host/kver.sh), not necessarily the one this machine runs.

KVER ?= $(shell scripts/host/kver.sh)
KDIR ?= /lib/modules/$(KVER)/build
PREFIX ?= /usr
LIBDIR ?= $(PREFIX)/lib/$(shell gcc -print-multiarch)
DESTDIR ?=

.PHONY: all kernel userspace tests run check check-debug bench install \
	uninstall clean

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
	scripts/host/bench.sh $(ROUNDS)

install: kernel userspace
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates \
		INSTALL_MOD_PATH=$(DESTDIR) CONFIG_MODULE_SIG_ALL= \
		modules_install
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)
	install -D -m 0644 userspace/libsroce-rdmav34.so \
		$(DESTDIR)$(LIBDIR)/libibverbs/libsroce-rdmav34.so
	install -D -m 0644 userspace/sroce.driver \
		$(DESTDIR)/etc/libibverbs.d/sroce.driver

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/updates/kernel/sroce.ko
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)
	rm -f $(DESTDIR)$(LIBDIR)/libibverbs/libsroce-rdmav34.so
	rm -f $(DESTDIR)/etc/libibverbs.d/sroce.driver

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C userspace clean
	$(MAKE) -C tests clean
	rm -rf build
