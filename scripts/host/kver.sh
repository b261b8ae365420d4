#!/bin/bash
# Which kernel sroce is built for, and where its headers are.
#
# Usage: scripts/host/kver.sh               the default kernel release
#        scripts/host/kver.sh --kdir [KVER] the build tree of KVER (default:
#                                           the default kernel)
#        scripts/host/kver.sh --list        every release with a build tree
#        scripts/host/kver.sh --series S    the newest release of series S
#                                           (6.1, 6.12, 6.12-rt: the names
#                                           install-deps.sh takes) installed
#                                           with an image and headers
#
# The default is the newest Debian kernel installed with both an image in
# /boot and headers (the kernel the test VM boots); of two flavours of one
# release, the standard one before -rt. This is deliberately not `uname -r`:
# the host may run another kernel.
#
# A release's build tree is /lib/modules/KVER/build (what linux-headers
# links for an installed image, or a kernel built here), else
# /usr/src/linux-headers-KVER (headers unpacked without their image); either
# must be configured for KVER (its UTS_RELEASE, which the module's vermagic
# takes). A release with neither fails with one line naming the package to
# install.
set -euo pipefail

# kdir KVER: print the build tree of KVER (configured for that release),
# or fail quietly.
kdir() {
	local d
	for d in "/lib/modules/$1/build" "/usr/src/linux-headers-$1"; do
		[ -f "$d/Makefile" ] &&
			grep -Fqsx "#define UTS_RELEASE \"$1\"" \
				"$d/include/generated/utsrelease.h" &&
			{ echo "$d"; return 0; }
	done
	return 1
}

# Every release with a build tree, newest first (the same release's -rt
# flavour after its standard one).
list() {
	local d v
	for d in /lib/modules/* /usr/src/linux-headers-*; do
		[ -e "$d" ] || continue
		d=${d##*/}
		echo "${d#linux-headers-}"
	done | sort -u | while read -r v; do
		kdir "$v" >/dev/null || continue
		case "$v" in
		*-rt-*) printf '%s\t1\t%s\n' "${v/-rt-/-}" "$v" ;;
		*) printf '%s\t0\t%s\n' "$v" "$v" ;;
		esac
	done | sort -t "$(printf '\t')" -k1,1rV -k2,2n | cut -f3
}

default() {
	local v
	for v in $(list); do
		[ -e "/boot/vmlinuz-$v" ] && { echo "$v"; return 0; }
	done
	echo "kver.sh: no kernel with both an image in /boot and headers;" \
		"run scripts/host/install-deps.sh" >&2
	return 1
}

# series S: as default, among the releases of S (6.1 is not 6.12; -rt only
# when S asks for it)
series() {
	local v base=${1%-rt}
	for v in $(list); do
		case "$v" in "$base".*|"$base"-*) ;; *) continue ;; esac
		if [[ $1 == *-rt ]]; then
			[[ $v == *-rt-* ]] || continue
		else
			[[ $v != *-rt-* ]] || continue
		fi
		[ -e "/boot/vmlinuz-$v" ] && { echo "$v"; return 0; }
	done
	echo "kver.sh: no $1 kernel installed with both an image and headers;" \
		"run scripts/host/install-deps.sh $1" >&2
	return 1
}

case "${1:-}" in
"") default ;;
--list) list ;;
--series) series "${2:?usage: kver.sh --series 6.1|6.12|6.12-rt}" ;;
--kdir)
	kver=${2:-$(default)}
	kdir "$kver" || {
		echo "kver.sh: no headers for kernel '$kver' (neither" \
			"/lib/modules/$kver/build nor /usr/src/linux-headers-$kver):" \
			"install linux-headers-$kver" \
			"(scripts/host/install-deps.sh $kver), or choose one of:" \
			"$(list | paste -sd' ')" >&2
		exit 1
	}
	;;
*) echo "usage: kver.sh [--kdir [KVER] | --list | --series S]" >&2; exit 2 ;;
esac
