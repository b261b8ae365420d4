#!/bin/bash
# The packages of make deb, installed as a user installs them, into a copy
# of this machine's root (an overlay: this machine's root is not touched):
#
#   scripts/host/deb-check.sh install DIR   mount the overlay at DIR/root,
#       install build/deb/*.deb with apt, check what DKMS built (every
#       kernel with headers), the kernel hook that builds for a kernel
#       installed later, modinfo and man; leaves DIR/root mounted (a test VM
#       can boot it: scripts/host/vm.sh --root DIR/root)
#   scripts/host/deb-check.sh purge DIR     purge both packages, check that
#       nothing of theirs is left, unmount and remove DIR
#
# One line per check ("ok   deb: ..." / "FAIL deb: ..."); exits non-zero if
# any failed. DIR's upper layer is a tmpfs: an interrupted run leaves
# nothing on disk (`deb-check.sh purge DIR` or umount cleans up).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cmd=${1:-} dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] ||
	{ echo "usage: deb-check.sh install|purge DIR" >&2; exit 2; }
root=$dir/root
failn=0
ok() { echo "ok   deb: $*"; }
bad() { echo "FAIL deb: $*"; failn=$((failn + 1)); }
in_root() { chroot "$root" "$@"; }
# The kernels DKMS must build for: those with headers, but the debug kernel
# (its build tree is make check-debug's cache, not a package's).
kernels() { "$repo/scripts/host/kver.sh" --list | grep -v -- '-sroce-debug$'; }

mount_root() {
	mkdir -p "$dir"
	mount -t tmpfs tmpfs "$dir" || return 1
	mkdir -p "$dir"/{upper,work,root}
	mount -t overlay overlay \
		-o "lowerdir=/,upperdir=$dir/upper,workdir=$dir/work" "$root" ||
		return 1
	local m
	for m in proc sys dev dev/pts; do
		mount --bind "/$m" "$root/$m" || return 1
	done
	mount -t tmpfs tmpfs "$root/tmp"
	mount -t tmpfs tmpfs "$root/run"
	# where a test VM booting this root mounts the clone (the overlay
	# shows the root file system only: a clone elsewhere has no directory)
	mkdir -p "$root$repo"
}

umount_root() {
	local m
	for m in run tmp dev/pts dev sys proc; do
		mountpoint -q "$root/$m" && umount "$root/$m"
	done
	mountpoint -q "$root" && umount "$root"
	mountpoint -q "$dir" && umount "$dir"
	rmdir "$dir" 2>/dev/null
	return 0
}

# The files the packages and DKMS write, as the upper layer holds them,
# but for package-manager bookkeeping, generated indexes (depmod's
# modules.*) and the signing key DKMS makes at its first build (DKMS's,
# kept for every module it builds, not sroce's).
upper_files() {
	(cd "$dir/upper" && find . -type f -o -type l) | sed 's|^\./|/|' |
		grep -Ev '^/(var/lib/(dpkg|apt|man-db|ucf)|var/cache|var/log|etc/ld\.so\.cache$|(usr/)?lib/modules/[^/]+/modules\.|var/lib/dkms/mok\.(key|pub)$)' |
		grep -Ev '^/(tmp|run|root)/' | sort
}

install_pkgs() {
	local debs=("$repo"/build/deb/sroce-dkms_*_all.deb
		"$repo"/build/deb/ibverbs-provider-sroce_*.deb) k ver st
	[ -f "${debs[0]}" ] && [ -f "${debs[1]}" ] ||
		{ bad "no packages in build/deb (make deb)"; return 1; }
	mount_root || { bad "cannot mount the overlay root at $root"; return 1; }
	cp "${debs[@]}" "$root/tmp/"
	if out=$(in_root env DEBIAN_FRONTEND=noninteractive apt-get install \
		-y -q --no-install-recommends \
		/tmp/"$(basename "${debs[0]}")" /tmp/"$(basename "${debs[1]}")" 2>&1); then
		ok "apt-get install ./sroce-dkms ./ibverbs-provider-sroce"
	else
		bad "apt-get install:"; echo "$out" | tail -n 30 | sed 's/^/    /'
		return 1
	fi
	ver=$(dpkg-deb -f "${debs[0]}" Version)
	st=$(in_root dkms status sroce 2>/dev/null)
	for k in $(kernels); do
		if grep -q "^sroce/$ver, $k, [^:]*: installed" <<<"$st"; then
			ok "dkms built and installed sroce for $k"
		else
			bad "dkms status has no installed sroce for $k:"
			echo "$st" | sed 's/^/    /'
		fi
		f=$(in_root modinfo -k "$k" -n sroce 2>&1)
		case "$f" in
		/lib/modules/"$k"/updates/dkms/sroce.ko*) ok "modinfo -k $k: $f" ;;
		*) bad "modinfo -k $k sroce: $f" ;;
		esac
	done
	# A kernel installed later: its package runs the kernel hooks, and
	# DKMS builds for it. Here: forget one kernel's build, run the hook.
	# (Status is read whole: with pipefail, "dkms status | grep -q" fails
	# when grep's early exit kills dkms with SIGPIPE.)
	k=$(kernels | tail -n 1)
	in_root dkms remove "sroce/$ver" -k "$k" >/dev/null 2>&1
	st=$(in_root dkms status sroce 2>/dev/null)
	if grep -q "^sroce/$ver, $k, [^:]*: installed" <<<"$st"; then
		bad "dkms remove -k $k did not remove it"
	elif ! out=$(in_root /etc/kernel/postinst.d/dkms "$k" 2>&1); then
		bad "the kernel hook /etc/kernel/postinst.d/dkms $k failed:"
		echo "$out" | tail -n 20 | sed 's/^/    /'
	elif st=$(in_root dkms status sroce 2>/dev/null) &&
		grep -q "^sroce/$ver, $k, [^:]*: installed" <<<"$st"; then
		ok "the kernel hook builds sroce for a kernel installed later ($k)"
	else
		bad "after the kernel hook for $k: $st"
	fi
	out=$(in_root env MANPAGER=cat MANWIDTH=80 man 7 sroce 2>/dev/null)
	if grep -q 'rdma link add NAME type sroce netdev DEV' <<<"$out"; then
		ok "man 7 sroce"
	else
		bad "man 7 sroce does not show the page"
	fi
	in_root grep -qx 'driver sroce' /etc/libibverbs.d/sroce.driver &&
		ok "/etc/libibverbs.d/sroce.driver" ||
		bad "/etc/libibverbs.d/sroce.driver missing or wrong"
	return 0
}

purge_pkgs() {
	local left
	mountpoint -q "$root" || { bad "$root is not mounted (install first)"; return 1; }
	if out=$(in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q \
		sroce-dkms ibverbs-provider-sroce 2>&1); then
		ok "apt-get purge sroce-dkms ibverbs-provider-sroce"
	else
		bad "apt-get purge:"; echo "$out" | tail -n 20 | sed 's/^/    /'
	fi
	left=$(upper_files)
	if [ -z "$left" ]; then
		ok "purge left no file of the packages or of DKMS"
	else
		bad "files left after purge:"; echo "$left" | sed 's/^/    /'
	fi
}

case "$cmd" in
install) install_pkgs ;;
purge) purge_pkgs; umount_root ;;
*) echo "usage: deb-check.sh install|purge DIR" >&2; exit 2 ;;
esac
[ $failn = 0 ]
