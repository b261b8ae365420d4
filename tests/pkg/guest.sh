#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Inside a VM whose root has sroce's packages installed (sroce-dkms and
# ibverbs-provider-sroce, by scripts/host/deb-check.sh): sroce as a user who
# installed the packages has it. Nothing comes from the repository: the
# module is the one DKMS built, loaded by "rdma link add" through the link
# type's module alias; the provider is the package's, found by libibverbs
# through /etc/libibverbs.d. One line per check, then "N passed, N failed".
unset RDMAV_DRIVERS
pass=0 failn=0
check() { # NAME COMMAND...
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "ok   pkg: $name"; pass=$((pass + 1))
	else
		echo "FAIL pkg: $name"; echo "$out" | sed 's/^/    /'
		failn=$((failn + 1))
	fi
}
libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
kver=$(uname -r)

not_loaded() { ! grep -q '^sroce ' /proc/modules; }
dkms_module() {
	local f
	f=$(modinfo -n sroce) || return 1
	echo "$f"
	case "$f" in /lib/modules/$kver/updates/dkms/sroce.ko*) ;; *) return 1 ;; esac
}
autoload() {
	rdma link add sroce0 type sroce netdev eth0 || return 1
	grep -q '^sroce ' /proc/modules || { echo "sroce not loaded"; return 1; }
	[ -e /sys/class/infiniband/sroce0 ] || { echo "no sroce0"; return 1; }
}
provider_is_package() {
	local out
	# ibv_devinfo lists sroce0 only through a provider; the package's is
	# the only one on this root (no RDMAV_DRIVERS).
	out=$(ibv_devinfo -d sroce0) || { echo "$out"; return 1; }
	grep -q 'transport:.*InfiniBand' <<<"$out" || { echo "$out"; return 1; }
	[ -f "$libdir/libibverbs/libsroce-rdmav34.so" ] &&
		grep -qx 'driver sroce' /etc/libibverbs.d/sroce.driver
}
pingpong() { # PROGRAM ARGS...: server and client over localhost, -c
	local port=$((18000 + RANDOM % 1000)) srv rc=0
	srv=$(mktemp)
	timeout 60 "$@" -p $port > "$srv" 2>&1 &
	local pid=$!
	sleep 1
	# the running server (timeout's child) maps the package's provider
	local child
	child=$(ps -o pid= --ppid "$pid" 2>/dev/null | head -n1 | tr -d " ")
	grep -q "$libdir/libibverbs/libsroce-rdmav34.so" \
		"/proc/${child:-0}/maps" 2>/dev/null ||
		{ echo "server does not map the package's provider"; rc=1; }
	timeout 60 "$@" -p $port localhost || rc=1
	wait $pid || { cat "$srv"; rc=1; }
	rm -f "$srv"
	return $rc
}
man_page() { MANPAGER='cat' man 7 sroce 2>/dev/null | grep -q 'rdma link add'; }
unload() {
	rdma link delete sroce0 && rmmod sroce && not_loaded
}

check "sroce not loaded at boot" not_loaded
check "modinfo finds the DKMS-built module for $kver" dkms_module
check "rdma link add loads sroce (link type alias)" autoload
check "ibv_devinfo through the packaged provider" provider_is_package
check "ibv_rc_pingpong, data checked" pingpong ibv_rc_pingpong -d sroce0 -g 1 -n 200 -s 4096 -c
check "ibv_ud_pingpong, data checked" pingpong ibv_ud_pingpong -d sroce0 -g 1 -n 200 -s 1000 -c
check "man 7 sroce" man_page
check "rdma link delete, rmmod" unload
echo "$pass passed, $failn failed"
[ $failn = 0 ]
