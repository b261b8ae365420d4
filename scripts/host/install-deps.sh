#!/bin/bash
# Install what sroce needs to build, boot its test VM and run its tests, on
# Debian bookworm as root. Installs only what is missing.
set -euo pipefail
pkgs=(
	build-essential g++ make cpio kmod xz-utils
	linux-image-amd64 linux-headers-amd64
	qemu-system-x86 busybox-static
	rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev
	rdmacm-utils perftest python3-pyverbs iproute2 nvme-cli
	tshark python3-scapy
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
