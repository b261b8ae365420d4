#!/bin/bash
# Install what sroce needs to build, boot its test VM and run its tests, on
# Debian bookworm as root. Installs only what is missing.
#
# Usage: scripts/host/install-deps.sh [KERNEL...]
#
# Each KERNEL is a kernel to build sroce for and boot the test VM with; its
# image (for /boot and the guest's modules) and headers (to build against):
#   6.1       bookworm's kernel, linux-image-amd64 linux-headers-amd64
#             (the default when no KERNEL is given)
#   6.12      linux-image-6.12-amd64 linux-headers-6.12-amd64
#   6.12-rt   linux-image-6.12-rt-amd64 linux-headers-6.12-rt-amd64
#             (PREEMPT_RT)
#   RELEASE   one release, e.g. 6.12.117+deb12-amd64: linux-image-RELEASE
#             linux-headers-RELEASE (what `make KVER=RELEASE` asks for)
# Debian builds all of them with bookworm's gcc-12, which their headers
# depend on. `make` then builds for the newest of them
# (scripts/host/kver.sh); `make KVER=RELEASE` for another.
set -euo pipefail
pkgs=(
	build-essential g++ make cpio kmod xz-utils
	qemu-system-x86 busybox-static
	rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev
	rdmacm-utils perftest python3-pyverbs iproute2 nvme-cli iperf3
	tshark python3-scapy
	dpkg-dev debhelper dh-dkms dkms fakeroot lintian man-db
	sparse shellcheck linux-source-6.1
	nfs-kernel-server open-iscsi fio e2fsprogs python3
)
[ $# -gt 0 ] || set -- 6.1
for k in "$@"; do
	case "$k" in
	6.1) pkgs+=(linux-image-amd64 linux-headers-amd64) ;;
	6.12) pkgs+=(linux-image-6.12-amd64 linux-headers-6.12-amd64) ;;
	6.12-rt) pkgs+=(linux-image-6.12-rt-amd64 linux-headers-6.12-rt-amd64) ;;
	[0-9]*-*) pkgs+=("linux-image-$k" "linux-headers-$k") ;;
	*)
		echo "install-deps: unknown kernel '$k' (6.1, 6.12, 6.12-rt or a release)" >&2
		exit 2
		;;
	esac
done
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# The kernel clients' cases (NFS over RDMA, iSER) run nfsd and iscsid in
	# the test VM only: policy-rc.d keeps the host from starting them now.
	rc=/usr/sbin/policy-rc.d
	own_rc=
	if [ ! -e "$rc" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$rc"
		chmod 755 "$rc"
		own_rc=1
	fi
	apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		{ [ -z "$own_rc" ] || rm -f "$rc"; exit 1; }
	[ -z "$own_rc" ] || rm -f "$rc"
fi
