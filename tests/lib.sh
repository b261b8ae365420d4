# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Helpers for test cases (sourced). A case fails by exiting non-zero; `fail`
# says what was expected and what came back.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=$repo/tests/bin/sroce-check
xfer=$repo/tests/bin/sroce-xfer
# The provider: the one make built, or SROCE_PROVIDER (make check-debug's
# build for gcov, scripts/guest/guest-init.sh).
export RDMAV_DRIVERS=${SROCE_PROVIDER:-$repo/userspace/libsroce}

fail() { echo "FAIL: $*" >&2; exit 1; }

# skip REASON: the case cannot run here (what it needs is missing): it says
# why and exits 77, which the runner (scripts/guest/guest-check.sh) counts
# apart, never as a pass. Only for what the machine lacks, never to hide a
# failure.
skip() { echo "SKIP: $*"; exit 77; }

# tmo SECONDS: a time limit, stretched on a slow (debug) kernel
tmo() { echo $(( $1 * ${SROCE_TIME_SCALE:-1} )); }

# qp_timeout: the RC transport timeout of the tests' QPs (perftest -u;
# 4.096 us * 2^N): 14 (67 ms), one more per doubling of SROCE_TIME_SCALE,
# as sroce-wire stretches it
qp_timeout() {
	local t=14 s=${SROCE_TIME_SCALE:-1}

	while [ "$s" -gt 1 ] && [ $t -lt 20 ]; do
		s=$((s / 2))
		t=$((t + 1))
	done
	echo $t
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

# set_mtu DEV MTU: set a link's MTU and check that it took
set_mtu() {
	ip link set "$1" mtu "$2" || fail "ip link set $1 mtu $2"
	[ "$(cat "/sys/class/net/$1/mtu")" = "$2" ] ||
		fail "$1 mtu is $(cat "/sys/class/net/$1/mtu"), not $2"
}

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds
wait_for() {
	local end=$((SECONDS + $(tmo "$1"))); shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}

sroce_loaded() { [ -d /sys/module/sroce ]; }

# tcp_listening PORT: something listens on TCP port PORT (a pingpong's or
# perftest's server, ready for its client)
tcp_listening() { ss -Hltn "sport = :$1" | grep -q .; }

# The sroce.ko for the running kernel: built for it by scripts/host/build-ko.sh
# (another kernel than the default one), or by make.
sroce_ko() {
	local ko
	ko=$repo/build/ko/$(uname -r)/kernel/sroce.ko
	[ -e "$ko" ] || ko=$repo/kernel/sroce.ko
	echo "$ko"
}

load_sroce() {
	sroce_loaded && return 0
	# What modprobe would load for an installed sroce.ko (modinfo depends).
	modprobe -a ib_uverbs udp_tunnel ip6_udp_tunnel &&
		insmod "$(sroce_ko)"
}

ibdev_exists() { [ -e "/sys/class/infiniband/$1" ]; }

# peer_ns NS DEV NET: network namespace NS with the far end of a veth
# pair (DEVp) whose near end DEV stays here: DEV is NET.1/24, DEVp NET.2/24,
# both up. A remote peer for raw-socket tests; both go when the case exits.
peer_ns() {
	local ns=$1 dev=$2 net=$3
	# shellcheck disable=SC2064 # $ns and $dev are locals, gone at EXIT: expand now
	trap "ip netns del $ns 2>/dev/null; ip link del $dev 2>/dev/null" EXIT
	ip netns add "$ns" || fail "ip netns add $ns"
	ip link add "$dev" type veth peer name "${dev}p" netns "$ns" ||
		fail "cannot create the veth pair $dev"
	ip addr add "$net.1/24" dev "$dev" && ip link set "$dev" up ||
		fail "cannot set up $dev"
	ip -n "$ns" addr add "$net.2/24" dev "${dev}p" &&
		ip -n "$ns" link set "${dev}p" up &&
		ip -n "$ns" link set lo up || fail "cannot set up ${dev}p"
}

# link_add NAME NETDEV: add an sroce link and wait for its device
link_add() {
	rdma link add "$1" type sroce netdev "$2" || fail "rdma link add $1 on $2"
	ibdev_exists "$1" || fail "$1 missing after rdma link add"
}

# Remove every sroce device, whatever its name (the runner calls this
# between cases).
remove_all_links() { # fails if a link would not go
	local d rc=0
	for d in /sys/class/infiniband/*; do
		if [ "$(cat "$d/node_desc" 2>/dev/null)" = sroce ]; then
			rdma link delete "$(basename "$d")" || rc=1
		fi
	done
	return $rc
}

# user_objects TYPE DEV / kernel_objects TYPE DEV: how many objects of
# TYPE (pd, cq, qp, mr, ctx) "rdma resource" shows on DEV for processes, and
# for the kernel (ib_mad's PD, CQ and GSI QP; "comm [name]", no pid).
# A listing rdma could not make is not an empty one: the counts are then
# "?" (and the status 1), which no expected number equals.
res_lines() { # TYPE DEV: QPs are filtered by link, the others by device
	local out
	if [ "$1" = qp ]; then
		out=$(rdma resource show qp link "$2/1") || return 1
		grep "^link $2/1 " <<<"$out"
	else
		out=$(rdma resource show "$1" dev "$2") || return 1
		grep "^dev $2 " <<<"$out"
	fi
	return 0
}
user_objects() {
	local l
	l=$(res_lines "$@") || { echo "?"; return 1; }
	grep -c ' pid ' <<<"$l"
	return 0
}
kernel_objects() {
	local l
	l=$(res_lines "$@") || { echo "?"; return 1; }
	grep -vc ' pid ' <<<"$l"
	return 0
}

# run_each PROGRAM DEV TEST...: run each test of a checker program alone
# (tests/bin/PROGRAM DEV TEST), fail with the output of those that failed,
# then fail if the device still has a user PD, MR, CQ or QP.
run_each() {
	local prog=$repo/tests/bin/$1 dev=$2 t out bad=
	shift 2
	for t in "$@"; do
		out=$(timeout "$(tmo 120)" "$prog" "$dev" "$t" 2>&1) ||
			bad+="$t: $out"$'\n'
	done
	[ -z "$bad" ] || fail "$bad"
	no_user_objects "$dev"
}

# no_user_objects DEV: fail if a process's PD, MR, CQ or QP is left on DEV.
no_user_objects() {
	local t
	for t in pd mr cq qp; do
		expect_eq "$t objects left" 0 "$(user_objects $t "$1")"
	done
}

port_field() { "$check" port "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# xfer_all DEV TYPE MTU TEST...: run sroce-xfer tests, fail with their output;
# if none failed but some could not run here (status 77, "SKIP: TEST: why"),
# the case is skipped: those tests named, each reason once
xfer_all() {
	local dev=$1 type=$2 mtu=$3 t out rc bad="" names="" why=""
	shift 3
	for t in "$@"; do
		out=$(timeout "$(tmo 120)" "$xfer" "$dev" "$t" "$type" "$mtu" 2>&1)
		rc=$?
		if [ $rc = 77 ]; then
			names+=" $t"
			why+=$(sed -n "s/^SKIP: $t: //p" <<<"$out")$'\n'
		elif [ $rc != 0 ]; then
			bad+="$t ($type, mtu $mtu): $out"$'\n'
		fi
	done
	[ -z "$bad" ] || fail "$bad"
	[ -z "$names" ] ||
		skip "not run:$names: $(sort -u <<<"$why" | sed '/^$/d' |
			paste -sd ';' -)"
}

# ipv4_of DEV: DEV's (first) IPv4 address, or nothing
ipv4_of() { ip -4 -o addr show dev "$1" | awk '{print $4}' | cut -d/ -f1 | head -1; }

# port_counter NAME [DEV]: one of DEV's (default sroce0) port counters, now
port_counter() {
	rdma statistic show link "${2:-sroce0}/1" | tr ' ' '\n' |
		awk -v n="$1" '$0 == n { getline; print; exit }'
}

# kernel_counts DEV: the kernel's PDs, CQs, QPs and MRs on DEV, as
# "pd=N cq=N qp=N mr=N" (what a kernel client's teardown comes back to)
kernel_counts() {
	local t out=
	for t in pd cq qp mr; do
		out+="$t=$(kernel_objects $t "$1") "
	done
	echo "${out% }"
}

# kernel_listing DEV: rdma resource's lines of those objects (for a failure)
kernel_listing() {
	local t
	for t in pd cq qp mr; do
		res_lines $t "$1" | grep -v ' pid '
	done
}

# sha FILE: its SHA-256, or nothing if it could not be read in time
sha() { timeout "$(tmo 120)" sha256sum "$1" | cut -d' ' -f1; }

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# unload MODULE: unload it (and what it alone pulled in) if it is loaded
unload() {
	[ -d "/sys/module/${1//-/_}" ] || return 0
	modprobe -r "$1"
}

# ulp_objects TYPE DEV: kernel_objects, less the CQs of ib_core (ib_mad's
# and the CQ pool's, which keeps a kernel client's CQs until the device
# goes): what a kernel client's teardown must bring back
ulp_objects() {
	local l
	l=$(res_lines "$@") || { echo "?"; return 1; }
	grep -v ' pid ' <<<"$l" | grep -vc 'comm \[ib_core\]'
	return 0
}

# ulp_base_save COUNT: sroce0's kernel PDs, CQs, QPs and MRs before a
# kernel client comes, as COUNT (ulp_objects, which leaves ib_core's CQs
# out, or kernel_objects) counts them, in ulp_base[pd], ulp_base[cq],
# ulp_base[qp] and ulp_base[mr]; ulp_base_is and ulp_base_check count
# with COUNT too
ulp_base_save() {
	local t
	declare -gA ulp_base
	ulp_base_count=$1
	for t in pd cq qp mr; do
		ulp_base[$t]=$("$1" $t sroce0)
	done
}
# ulp_base_is: sroce0's kernel objects are as ulp_base_save counted them
ulp_base_is() {
	local t
	for t in pd cq qp mr; do
		[ "$("$ulp_base_count" $t sroce0)" = "${ulp_base[$t]}" ] || return 1
	done
}
# ulp_base_check WHEN: fail unless sroce0's kernel objects are as
# ulp_base_save counted them and no process's object is left on sroce0
ulp_base_check() {
	local t
	for t in pd cq qp mr; do
		expect_eq "kernel $t objects on sroce0 $1" "${ulp_base[$t]}" \
			"$("$ulp_base_count" $t sroce0)"
	done
	no_user_objects sroce0
}

# fio_verify FILE [OFFSET]: random direct reads and writes of 4 to 64 KiB
# over 16 MiB of FILE (a file, or a disk) from OFFSET (fio's syntax, 0 by
# default), every block written checked by its CRC32C when read back;
# fails the case with fio's last lines
fio_verify() {
	local out
	command -v fio >/dev/null || fail "no fio (scripts/host/install-deps.sh)"
	out=$(timeout "$(tmo 240)" fio --name=verify --filename="$1" \
		--offset="${2:-0}" --size=16M --rw=randrw --bsrange=4k-64k --direct=1 \
		--ioengine=psync --verify=crc32c --verify_backlog=64 \
		--verify_fatal=1 --do_verify=1 2>&1) ||
		fail "fio randrw with crc32c verification on $1: $(tail -15 <<<"$out")"
}

# rmmod_wait MODULE: unload a kernel client's MODULE, giving the work
# items that drop its last references after a logout or unmount 30 s
rmmod_wait() {
	wait_for 30 rmmod "$1" 2>/dev/null || fail "rmmod $1: refcount" \
		"$(cat "/sys/module/$1/refcnt" 2>/dev/null), holders" \
		"$(ls "/sys/module/$1/holders" 2>/dev/null)"
}

# link_delete_after WHAT: "rdma link delete sroce0" ends in time and the
# device is gone, after the kernel client WHAT left it
link_delete_after() {
	timeout "$(tmo 30)" rdma link delete sroce0 ||
		fail "rdma link delete sroce0 after $1"
	! ibdev_exists sroce0 || fail "sroce0 still exists after rdma link delete"
}

# mountd_ready PID: rpc.mountd (PID) holds the kernel's export cache
# channel, without which the kernel caches a negative export entry
mountd_ready() {
	local f
	for f in "/proc/$1/fd"/*; do
		[[ $(readlink "$f") == */rpc/nfsd.export/channel ]] && return 0
	done
	return 1
}
# grace_over: nfsd's NFSv4 grace period has ended
grace_over() { [ "$(cat /proc/fs/nfsd/v4_end_grace 2>/dev/null)" = Y ]; }

# nfs_export STATE EXPORT MIB CLIENT: nfsd's state, writable, in STATE
# (with the legacy v4recovery directory) bound over /var/lib/nfs; a tmpfs
# of MIB MiB at EXPORT, exported to CLIENT/32 as the NFSv4 pseudo-root
# (-i: not the host's /etc/exports; fsid=0: tmpfs has no UUID), mounted
# by clients as IP:/; the nfsd filesystem mounted
nfs_export() {
	local out
	mkdir -p "$1/v4recovery" "$2"
	: > "$1/etab"
	: > "$1/rmtab"
	mount --bind "$1" /var/lib/nfs || fail "bind $1 over /var/lib/nfs"
	mount -t tmpfs -o "size=${3}m,mode=0777" tmpfs "$2" || fail "tmpfs at $2"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		fail "mount nfsd filesystem at /proc/fs/nfsd"
	out=$(timeout "$(tmo 30)" exportfs -i \
		-o rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync \
		"$4/32:$2" 2>&1) || fail "exportfs $4/32:$2: $out"
}

# need_nfs_tools: nfsd's and the NFS client's programs, and /var/lib/nfs
# for nfs_export to bind over, are here (else the case fails)
need_nfs_tools() {
	local c
	for c in rpc.nfsd rpc.mountd exportfs mount.nfs; do
		command -v $c >/dev/null ||
			fail "no $c (nfs-kernel-server, nfs-common on the host)"
	done
	[ -d /var/lib/nfs ] || fail "no /var/lib/nfs to bind over (nfs-common)"
}

# nfsd_log LOG: rpc.mountd's last lines (its output is LOG) and the
# kernel's, for a failure message
nfsd_log() { echo "mountd: $(tail -5 "$1" 2>/dev/null);" \
	"dmesg: $(dmesg | tail -8)"; }

# nfsd_up LOG: serve nfs_export's export: rpc.mountd for NFSv4 only (no
# MOUNT protocol listener, no rpcbind), its output in LOG and its pid in
# $mountd_pid, holding the export cache channel; then 4 nfsd threads,
# NFSv4.2 only, a lease of 30 s (stretched by tmo, an hour at most) and a
# grace period of 10 s
nfsd_up() {
	local lease
	rpc.mountd -F -N 2 -N 3 -u > "$1" 2>&1 &
	mountd_pid=$!
	wait_for 10 mountd_ready "$mountd_pid" ||
		fail "rpc.mountd did not open the export cache channels ($(nfsd_log "$1"))"
	lease=$(tmo 30)
	[ "$lease" -le 3600 ] || lease=3600
	timeout "$(tmo 60)" rpc.nfsd -N 3 -V 4.2 -U -G 10 -L "$lease" 4 ||
		fail "rpc.nfsd ($(nfsd_log "$1"))"
}

# nfsd_listen_rdma PORT LOG: nfsd's RDMA listener on PORT, as
# Documentation/admin-guide/nfs/nfs-rdma.rst sets it up (unless the
# host's nfs.conf already had rpc.nfsd add it); LOG is rpc.mountd's
nfsd_listen_rdma() {
	if ! grep -qx "rdma $1" /proc/fs/nfsd/portlist; then
		echo "rdma $1" > /proc/fs/nfsd/portlist ||
			fail "echo rdma $1 > /proc/fs/nfsd/portlist ($(nfsd_log "$2"))"
	fi
}

# nfs_unexport EXPORT: after "rpc.nfsd 0", rpc.mountd ($mountd_pid)
# stopped and nfs_export's mounts undone (the nfsd filesystem, the tmpfs
# at EXPORT, the state over /var/lib/nfs), each step checked
nfs_unexport() {
	local m
	kill "$mountd_pid"
	wait "$mountd_pid"
	mountd_pid=
	for m in /proc/fs/nfsd "$1" /var/lib/nfs; do
		umount "$m" || fail "umount $m after nfsd stopped"
	done
}

# srp_shost IBDEV: the SCSI host number of ib_srp's login on IBDEV
srp_shost() {
	local h
	for h in /sys/class/scsi_host/host*; do
		[ "$(cat "$h/local_ib_device" 2>/dev/null)" = "$1" ] || continue
		echo "${h##*/host}"
		return 0
	done
	return 1
}
# srp_disk IBDEV: the LIO-ORG disk behind that host, found through /sys (no
# udevd in the VM, so no /dev/disk/by-id)
srp_disk() {
	local n d b
	n=$(srp_shost "$1") || return 1
	for d in /sys/class/scsi_host/host"$n"/device/target*/*:*; do
		grep -q '^LIO-ORG' "$d/vendor" 2>/dev/null || continue
		for b in "$d"/block/*; do
			[ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
		done
	done
	return 1
}
srp_disk_there() { srp_disk "$1" >/dev/null; }
srp_no_shost() { ! srp_shost "$1" >/dev/null; }

# nvme_ns_dev NQN: the block device of subsystem NQN's namespace (the
# multipath head's or the controller's; not the hidden per-path nvmeXcYnZ)
nvme_ns_dev() {
	local b
	for b in /sys/block/nvme*; do
		[[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
		[ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$1" ] || continue
		[ -b "/dev/${b##*/}" ] || continue
		echo "/dev/${b##*/}"
		return 0
	done
	return 1
}
nvme_ns_there() { nvme_ns_dev "$1" >/dev/null; }
# nvme_ctrl_of NQN: the nvme-rdma controller connected to NQN
nvme_ctrl_of() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] || continue
		[ "$(cat "$c/transport" 2>/dev/null)" = rdma ] || continue
		echo "${c##*/}"
		return 0
	done
	return 1
}
nvme_no_ctrl() { ! nvme_ctrl_of "$1" >/dev/null; }

# nvmet_port NQN ADDR: nvmet's port 1, RDMA on IPv4 address ADDR, port
# 4420, serving subsystem NQN
nvmet_port() {
	local p=/sys/kernel/config/nvmet/ports/1
	mkdir $p
	echo rdma > $p/addr_trtype
	echo ipv4 > $p/addr_adrfam
	echo "$2" > $p/addr_traddr
	echo 4420 > $p/addr_trsvcid
	nvmet_port_link "$1" "$2"
}
# nvmet_port_link NQN ADDR: port 1 (on ADDR) serves subsystem NQN
nvmet_port_link() {
	local cfg=/sys/kernel/config/nvmet
	ln -s "$cfg/subsystems/$1" "$cfg/ports/1/subsystems/$1" ||
		fail "nvmet-rdma port on $2 (dmesg: $(dmesg | tail -3))"
}
# nvmet_remove NQN: with the host disconnected, port 1 and subsystem NQN
# removed in the reverse order of their making, then both ends' modules
# unloaded (host and target are in this VM): nvme-rdma, nvmet-rdma,
# nvmet; each step checked
nvmet_remove() {
	local cfg=/sys/kernel/config/nvmet m
	rm "$cfg/ports/1/subsystems/$1" || fail "unlink the subsystem from port 1"
	rmdir $cfg/ports/1 || fail "rmdir nvmet port 1"
	echo 0 > "$cfg/subsystems/$1/namespaces/1/enable" ||
		fail "disable the namespace"
	rmdir "$cfg/subsystems/$1/namespaces/1" "$cfg/subsystems/$1" ||
		fail "remove the nvmet subsystem"
	for m in nvme-rdma nvmet-rdma nvmet; do
		wait_for 30 unload $m || fail "modprobe -r $m: $(lsmod | grep nvme)"
	done
}
