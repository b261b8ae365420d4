#!/bin/bash
# Build, once, the debug guest kernel that `make check-debug` boots: Debian's
# linux-source-6.1 (the version of the VM's default kernel) with KASAN,
# lockdep (PROVE_LOCKING, PROVE_RCU), DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS,
# DEBUG_LIST, UBSAN, KMEMLEAK, hung-task detection, fault injection, gcov
# and udmabuf, with the kernel's RDMA clients (NFS, iSER, SRP, NVMe-oF,
# RDS) as modules, configured for what
# the test VM needs and nothing else.
#
# Usage: scripts/host/debug-kernel.sh         build if needed, print the release
#        scripts/host/debug-kernel.sh --path  print the cache folder
#
# The cache is $SROCE_CACHE (default /var/cache/sroce), outside any clone:
#   debug/build/             the kernel build tree (KDIR for sroce.ko)
#   debug/bzImage            the kernel the VM boots
#   debug/release            its release string
# Its modules go to /lib/modules/RELEASE on this machine, because the test
# VM runs this machine's root (modprobe there must find them); no image goes
# to /boot, so scripts/host/kver.sh never picks this kernel for the normal
# suite.
# The Linux fixes it carries, scripts/host/debug-kernel/*.patch, are bugs
# of Linux's own that the suite's checkers report (each patch says which
# and why); the stock kernels the suite runs on have them still.
# A changed configuration fragment (below), set of patches or source
# version rebuilds.
set -euo pipefail
cache=${SROCE_CACHE:-/var/cache/sroce}/debug
patches=$(cd "$(dirname "$0")" && pwd)/debug-kernel
[ "${1:-}" = --path ] && { echo "$cache"; exit 0; }

srcpkg=linux-source-6.1
fragment() {
	cat <<'EOF'
CONFIG_LOCALVERSION="-sroce-debug"
# CONFIG_LOCALVERSION_AUTO is not set
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
# CONFIG_MODULE_SIG is not set
# CONFIG_DEBUG_INFO is not set
CONFIG_DEBUG_INFO_NONE=y
CONFIG_KALLSYMS_ALL=y
# The test VM: virtio PCI, the host root over 9p, a serial console.
CONFIG_PCI=y
CONFIG_VIRTIO_MENU=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_NET_9P=y
CONFIG_NET_9P_VIRTIO=y
CONFIG_9P_FS=y
CONFIG_9P_FS_POSIX_ACL=y
CONFIG_DEVTMPFS=y
CONFIG_TMPFS=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_RD_GZIP=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_CONFIGFS_FS=y
CONFIG_DEBUG_FS=y
CONFIG_HUGETLBFS=y
CONFIG_TRANSPARENT_HUGEPAGE=y
CONFIG_PROC_PAGE_MONITOR=y
# FUSE (Debian builds it): odp_stall_isolation.sh stalls an ODP fault on
# a file whose server holds the read.
CONFIG_FUSE_FS=m
# User namespaces: kmem_bound.sh's containers and sandboxes (a user's
# namespaces count as one user of sroce's bounds).
CONFIG_USER_NS=y
# Networking the tests use.
CONFIG_NET_NS=y
CONFIG_IPV6=y
CONFIG_VETH=m
# VLANs (issue 36: port_down_loopback.sh's eth0.77, tests/pair/vlan.sh)
# and vlan.sh's macvlan step: sroce's VLAN paths under KASAN and lockdep.
CONFIG_VLAN_8021Q=m
CONFIG_MACVLAN=m
CONFIG_NET_SCHED=y
CONFIG_NET_SCH_NETEM=m
# loss.sh puts netem on RoCE only: a prio qdisc and a u32 filter.
CONFIG_NET_SCH_PRIO=m
CONFIG_NET_CLS_U32=m
CONFIG_PACKET=y
# RDMA: ib_core, uverbs, ODP, rdma_cm, rdma_rxe for interop.
CONFIG_INFINIBAND=m
CONFIG_INFINIBAND_USER_MAD=m
CONFIG_INFINIBAND_USER_ACCESS=m
CONFIG_INFINIBAND_ON_DEMAND_PAGING=y
CONFIG_INFINIBAND_ADDR_TRANS=y
CONFIG_RDMA_RXE=m
CONFIG_RDMA_SIW=m
CONFIG_CRYPTO_CRC32=m
# NVMe over RDMA, host and target, on a file-backed namespace.
CONFIG_NVME_CORE=m
CONFIG_NVME_FABRICS=m
CONFIG_NVME_RDMA=m
CONFIG_NVME_TARGET=m
CONFIG_NVME_TARGET_RDMA=m
CONFIG_BLK_DEV_LOOP=m
# The kernel's RDMA clients of the ULP cases: NFSv4.2 over RDMA (nfsd and
# the client), iSER and SRP (LIO targets and initiators), RDS.
CONFIG_NFS_V4_1=y
CONFIG_NFS_V4_2=y
CONFIG_NFSD=m
CONFIG_NFSD_V4=y
CONFIG_SUNRPC_XPRT_RDMA=m
CONFIG_TARGET_CORE=m
CONFIG_TCM_FILEIO=m
CONFIG_ISCSI_TARGET=m
# open-iscsi's iscsiadm makes a new iface with its default transport, tcp,
# and loads iscsi_tcp for it before the iface is switched to iser (Debian
# builds it; without it "iface ... to transport iser" fails).
CONFIG_ISCSI_TCP=m
CONFIG_INFINIBAND_ISER=m
CONFIG_INFINIBAND_ISERT=m
CONFIG_INFINIBAND_SRP=m
CONFIG_INFINIBAND_SRPT=m
CONFIG_RDS=m
CONFIG_RDS_RDMA=m
# What is not needed in the VM (build time).
# CONFIG_DRM is not set
# CONFIG_SOUND is not set
# CONFIG_USB_SUPPORT is not set
# CONFIG_WLAN is not set
# CONFIG_WIRELESS is not set
# CONFIG_CFG80211 is not set
# CONFIG_AGP is not set
# CONFIG_FB is not set
# CONFIG_HID is not set
# CONFIG_INPUT_MOUSE is not set
# CONFIG_INPUT_JOYSTICK is not set
# CONFIG_INPUT_TABLET is not set
# CONFIG_INPUT_TOUCHSCREEN is not set
# CONFIG_ETHERNET is not set
# CONFIG_ATA is not set
# CONFIG_MD is not set
# CONFIG_NETFILTER is not set
# CONFIG_EFI is not set
# CONFIG_SECURITY_SELINUX is not set
# The checkers.
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_PROVE_LOCKING=y
CONFIG_PROVE_RCU=y
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_DEBUG_OBJECTS=y
CONFIG_DEBUG_OBJECTS_FREE=y
CONFIG_DEBUG_OBJECTS_TIMERS=y
CONFIG_DEBUG_OBJECTS_WORK=y
CONFIG_DEBUG_OBJECTS_RCU_HEAD=y
CONFIG_DEBUG_OBJECTS_PERCPU_COUNTER=y
CONFIG_DEBUG_LIST=y
CONFIG_UBSAN=y
CONFIG_UBSAN_BOUNDS=y
CONFIG_UBSAN_SHIFT=y
# CONFIG_UBSAN_BOOL is not set
# CONFIG_UBSAN_ENUM is not set
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE=16000
# CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN is not set
CONFIG_DETECT_HUNG_TASK=y
CONFIG_DEFAULT_HUNG_TASK_TIMEOUT=120
CONFIG_SOFTLOCKUP_DETECTOR=y
CONFIG_WQ_WATCHDOG=y
CONFIG_DEBUG_VM=y
# Every error path taken: fault injection, per task through
# /proc/thread-self/fail-nth (tests/cases/failnth.sh).
CONFIG_FAULT_INJECTION=y
CONFIG_FAILSLAB=y
CONFIG_FAIL_PAGE_ALLOC=y
CONFIG_FAULT_INJECTION_USERCOPY=y
CONFIG_FAULT_INJECTION_DEBUG_FS=y
CONFIG_KPROBES=y
CONFIG_FUNCTION_ERROR_INJECTION=y
CONFIG_FAIL_FUNCTION=y
# Coverage of sroce.ko (built with GCOV_PROFILE on this kernel only).
CONFIG_GCOV_KERNEL=y
# A dma-buf exporter for tests (/dev/udmabuf), as Debian's 6.12 has.
CONFIG_UDMABUF=y
# And the system dma-buf heap (/dev/dma_heap/system), whose buffers the
# kernel can map (6.1's udmabuf cannot be vmapped).
CONFIG_DMABUF_HEAPS=y
CONFIG_DMABUF_HEAPS_SYSTEM=y
EOF
}

# The source and the build's tools: install-deps.sh installs the source
# (for checkpatch) but not the tools, so each is looked for.
src_tar() { ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null; }
have_tools() {
	local t
	for t in bc flex bison rsync; do
		command -v "$t" >/dev/null || return 1
	done
	[ -f /usr/include/libelf.h ] && [ -f /usr/include/openssl/ssl.h ]
}
{ [ -n "$(src_tar)" ] && have_tools; } || {
	echo "debug-kernel: installing $srcpkg and the build's tools" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "$srcpkg" bc flex bison libelf-dev \
		libssl-dev rsync >&2
}
# carry: apply the patches carried to the source tree, once each. A tree
# kept from an earlier build has a copy of each patch it took in
# $cache/carried/: one no longer carried, or changed since, is reversed.
carry() {
	local done=$cache/carried p
	mkdir -p "$done"
	for p in "$done"/*.patch; do
		[ -e "$p" ] || continue
		cmp -s "$p" "$patches/${p##*/}" && continue
		patch -s -d "$src" -p1 -R < "$p" >&2
		rm "$p"
	done
	for p in "$patches"/*.patch; do
		[ -e "$p" ] && [ ! -e "$done/${p##*/}" ] || continue
		patch -s -d "$src" -p1 --forward < "$p" >&2
		cp "$p" "$done/"
	done
}
ver=$(dpkg-query -W -f='${Version}' "$srcpkg")
stamp="$ver $( { fragment; cat "$patches"/*.patch 2>/dev/null; } |
	md5sum | cut -d' ' -f1)"
if [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$stamp" ] &&
   [ -f "$cache/bzImage" ] && [ -d "/lib/modules/$(cat "$cache/release")" ]; then
	cat "$cache/release"
	exit 0
fi

src=$cache/linux-source-6.1
build=$cache/build
# The same source with another fragment: the tree is kept, and Kbuild
# rebuilds only what the changed options reach (minutes, for a module or
# two). Another source version, or no tree: from scratch.
if [ -f "$cache/stamp" ] && [ "$(cut -d' ' -f1 "$cache/stamp")" = "$ver" ] &&
   [ -f "$build/.config" ] && [ -d "$src" ]; then
	echo "debug-kernel: the configuration or the patches changed: rebuilding $srcpkg $ver in place" >&2
	rm -f "$cache/stamp"
else
	echo "debug-kernel: building $srcpkg $ver with KASAN/lockdep/UBSAN/kmemleak (about an hour on 2 cores)" >&2
	rm -rf "$cache"
	mkdir -p "$cache"
	tar -C "$cache" -xf "$(src_tar)"
	mkdir -p "$build"
fi
carry
fragment > "$cache/fragment.config"
make -s -C "$src" O="$build" defconfig >&2
make -s -C "$src" O="$build" kvm_guest.config >&2
"$src/scripts/kconfig/merge_config.sh" -m -O "$build" "$build/.config" \
	"$cache/fragment.config" >&2
make -s -C "$src" O="$build" olddefconfig >&2
# Every checker asked for must have survived olddefconfig.
missing=$(fragment | sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=[ym]$/\1/p' |
	while read -r c; do grep -q "^$c=[ym]" "$build/.config" || echo "$c"; done)
[ -z "$missing" ] || { echo "debug-kernel: not in the config: $missing" >&2; exit 1; }
make -C "$src" O="$build" -j"$(nproc)" bzImage modules >&2
make -s -C "$src" O="$build" INSTALL_MOD_STRIP=1 modules_install >&2
release=$(make -s -C "$src" O="$build" kernelrelease)
cp "$build/arch/x86/boot/bzImage" "$cache/bzImage"
echo "$release" > "$cache/release"
echo "$stamp" > "$cache/stamp"
echo "$release"
