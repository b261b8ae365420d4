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

# The sroce.ko for the running kernel: make's (kernel/sroce.ko) when it was
# built for this kernel, else scripts/host/build-ko.sh's for it. make's
# comes first: a build/ko/ of the kernel make builds for is an older build
# that make does not refresh, and loading it would test stale code.
sroce_ko() {
	local ko=$repo/kernel/sroce.ko magic
	magic=$(modinfo -F vermagic "$ko" 2>/dev/null) || magic=
	[ "${magic%% *}" = "$(uname -r)" ] ||
		ko=$repo/build/ko/$(uname -r)/kernel/sroce.ko
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
# the case is skipped: those tests named, each reason once. What the tests
# chose to run on ("NOTE: TEST: text": a dma-buf exporter) is passed on as
# "NOTE: text", each text once, which the runner adds to the case's line.
xfer_all() {
	local dev=$1 type=$2 mtu=$3 t out rc bad="" names="" why="" notes=""
	shift 3
	for t in "$@"; do
		out=$(timeout "$(tmo 120)" "$xfer" "$dev" "$t" "$type" "$mtu" 2>&1)
		rc=$?
		notes+=$(sed -n "s/^NOTE: $t: //p" <<<"$out")$'\n'
		if [ $rc = 77 ]; then
			names+=" $t"
			why+=$(sed -n "s/^SKIP: $t: //p" <<<"$out")$'\n'
		elif [ $rc != 0 ]; then
			bad+="$t ($type, mtu $mtu): $out"$'\n'
		fi
	done
	sort -u <<<"$notes" | sed '/^$/d; s/^/NOTE: /'
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

# fuse_abort DIR: abort the FUSE connection mounted on DIR, if one is
# (fusectl's abort, fusectl mounted for it if it is not): its requests
# fail, so that no task waits for its server any more, stuck or gone. The
# mount is found in /proc/self/mountinfo, not by stat(), which would ask
# the server; its connection is named after the kernel's dev_t.
fuse_abort() {
	local dev ctl=/sys/fs/fuse/connections ours=
	dev=$(awk -v d="$1" '$5 == d { for (i = 7; i < NF; i++)
		if ($i == "-") { if ($(i + 1) == "fuse") print $3; break } }' \
		/proc/self/mountinfo | tail -1)
	[ -n "$dev" ] || return 0
	dev=$(( ${dev%%:*} << 20 | ${dev#*:} ))
	if [ ! -e "$ctl/$dev/abort" ]; then
		mount -t fusectl fusectl $ctl 2>/dev/null && ours=1
	fi
	echo 1 2>/dev/null > "$ctl/$dev/abort"
	[ -z "$ours" ] || umount -l $ctl
}

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
# with COUNT too. Fails the case if rdma resource could not list them.
ulp_base_save() {
	local t
	declare -gA ulp_base
	ulp_base_count=$1
	for t in pd cq qp mr; do
		ulp_base[$t]=$("$1" $t sroce0)
	done
	case ${ulp_base[*]} in *'?'*)
		fail "rdma resource could not list sroce0's objects" ;;
	esac
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

# forget_cm_locks: unload rdma_cm (rdma_ucm first), so that lockdep
# forgets the lock classes whose keys live in it, and every dependency it
# recorded through them. Lockdep tracks classes, not locks: xprtrdma frees
# its CQs (cancel_work_sync of cq->work) inside its RDMA CM handler, under
# the cm_id's handler_mutex, when the handler drops the endpoint's last
# reference (rpcrdma_ep_put() on DISCONNECTED or DEVICE_REMOVAL); nvmet
# takes nvmet_config_sem in a CQ's work (the admin Connect's data, read by
# RDMA READ) and destroys its listener under it (a port's unlink). One
# boot that runs both sees handler_mutex -> cq->work -> config_sem ->
# handler_mutex over unrelated cm_ids and CQs: a report of Linux's
# clients, not of sroce (6.1.192 debug kernel, nvme_rdma after nfs_rdma),
# after which lockdep is off for the rest of the boot. So the one-VM cases
# that use xprtrdma end with this, and those that use nvmet unload it (in
# the pair suites, ulp.sh unloads nvmet before ulp_nfs runs).
# Where lockdep is on (/proc/lockdep), handler_mutex's class must be gone.
forget_cm_locks() {
	local m
	for m in rdma_ucm rdma_cm; do
		[ -d "/sys/module/$m" ] || continue
		wait_for 30 rmmod "$m" 2>/dev/null || fail "rmmod $m, so that" \
			"lockdep forgets its lock classes: refcount" \
			"$(cat "/sys/module/$m/refcnt" 2>/dev/null), holders" \
			"$(ls "/sys/module/$m/holders" 2>/dev/null)"
	done
	[ -e /proc/lockdep ] || return 0
	! grep -q 'id_priv->handler_mutex' /proc/lockdep ||
		fail "lockdep still has rdma_cm's handler_mutex class after rmmod rdma_cm"
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

# sysfs_first ATTR VALUE DIR...: the first DIR whose file ATTR reads VALUE
sysfs_first() {
	local a=$1 v=$2 d
	shift 2
	for d in "$@"; do
		[ "$(cat "$d/$a" 2>/dev/null)" = "$v" ] && { echo "$d"; return 0; }
	done
	return 1
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
# srp_login IBDEV LOGIN: ib_srp's add_target on IBDEV's port 1 with the
# login string LOGIN (refused until the target listens, and with EEXIST
# while a target just deleted is still on ib_srp's list: callers retry)
srp_login() { echo "$2" > "/sys/class/infiniband_srp/srp-$1-1/add_target"; }
# srp_logout IBDEV: delete the remote port of ib_srp's login on IBDEV and
# wait until its SCSI host has gone; says what did not happen
srp_logout() {
	local n p rc=0
	n=$(srp_shost "$1") || return 0
	for p in /sys/class/srp_remote_ports/port-"$n":*; do
		echo 1 > "$p/delete" || { echo "delete the remote port $p"; rc=1; }
	done
	wait_for 30 srp_no_shost "$1" || { echo "SCSI host $n of $1 still" \
		"there 30 s after its remote port was deleted"; rc=1; }
	return $rc
}

# srp_down IBDEV: ib_srp's login on IBDEV logged out (srp_logout), then
# ib_srp unloaded, given 30 s for its references to go, and
# scsi_transport_srp; says what stayed
srp_down() {
	srp_logout "$1" || return 1
	wait_for 30 modprobe -r ib_srp 2>/dev/null || { echo "ib_srp stays:" \
		"refcount $(cat /sys/module/ib_srp/refcnt 2>&1)"; return 1; }
	modprobe -r scsi_transport_srp ||
		{ echo "modprobe -r scsi_transport_srp"; return 1; }
}

# srpt_listen PORT: ib_srpt's rdma_cm listener on PORT, set in configfs
# (no rdma_cm_port module parameter on 6.1 and 6.12): a listener on every
# RDMA device, a new one included. Says what failed.
srpt_listen() {
	local srpt=/sys/kernel/config/target/srpt
	[ -d $srpt ] || mkdir $srpt ||
		{ echo "mkdir $srpt (ib_srpt has not registered with LIO)"; return 1; }
	[ -e $srpt/discovery_auth/rdma_cm_port ] || {
		echo "no $srpt/discovery_auth/rdma_cm_port: ib_srpt without rdma_cm?"
		return 1; }
	echo "$1" > $srpt/discovery_auth/rdma_cm_port || { echo "ib_srpt's" \
		"rdma_cm listener on port $1 (dmesg: $(dmesg | tail -3))"; return 1; }
}
# srpt_close: ib_srpt's listener closed and its configfs directory gone
srpt_close() {
	local srpt=/sys/kernel/config/target/srpt
	[ -d $srpt ] || return 0
	echo 0 > $srpt/discovery_auth/rdma_cm_port ||
		{ echo "close ib_srpt's rdma_cm listener"; return 1; }
	rmdir $srpt || { echo "rmdir $srpt"; return 1; }
}
# srpt_tpg IBDEV: tpgt_1 of ib_srpt's port 1 of IBDEV, named as ib_srpt
# names it from GID 0 (fe80::X gives X as xxxx:xxxx:xxxx:xxxx; another
# GID, 0x and its 32 digits)
srpt_tpg() {
	local gid name
	gid=$(cat "/sys/class/infiniband/$1/ports/1/gids/0") || return 1
	case $gid in
	fe80:0000:0000:0000:*) name=${gid#fe80:0000:0000:0000:} ;;
	*) name=0x${gid//:/} ;;
	esac
	echo "/sys/kernel/config/target/srpt/$name/tpgt_1"
}
# srpt_port IBDEV BACKSTORE ACL...: ib_srpt's port 1 of IBDEV, its tpgt_1
# with LUN 0 on BACKSTORE (a configfs path) mapped for each ACL (the IPv4
# address an rdma_cm login is known by), enabled. Says what failed.
# Once only: a port it made goes with srpt_port_remove first.
srpt_port() {
	local tpg a
	tpg=$(srpt_tpg "$1") || { echo "no GID 0 on $1"; return 1; }
	mkdir -p "${tpg%/*/*}" || {
		echo "mkdir ${tpg%/*/*} (ib_srpt has not registered with LIO)"
		return 1; }
	# ib_srpt names a new device's port again when GID 0 comes (ib_core
	# adds it in a work item): until then it knows no such port.
	wait_for 10 mkdir "${tpg%/*}" 2>/dev/null || { echo "ib_srpt has no" \
		"port ${tpg%/*} (GID 0 $(cat "/sys/class/infiniband/$1/ports/1/gids/0");" \
		"dmesg: $(dmesg | tail -3))"; return 1; }
	if ! mkdir "$tpg" "$tpg/lun/lun_0" ||
		! ln -s "$2" "$tpg/lun/lun_0/${2##*/}"; then
		echo "LUN 0 of $tpg on $2"; return 1
	fi
	shift 2
	for a in "$@"; do
		if ! mkdir "$tpg/acls/$a" "$tpg/acls/$a/lun_0" ||
			! ln -s "$tpg/lun/lun_0" "$tpg/acls/$a/lun_0/lun_0"; then
			echo "the ACL $a of $tpg"; return 1
		fi
	done
	echo 1 > "$tpg/enable" || { echo "enable $tpg"; return 1; }
}
# srpt_port_remove TPG: remove what srpt_port made, TPG being its
# srpt_tpg, in reverse, every ACL included; the backstore stays. A port
# whose device has gone stays in configfs (it holds ib_srpt's memory of
# the port) and is removed the same way. Fails if a step that had
# something to remove failed.
srpt_port_remove() {
	local tpg=$1 rc=0 a
	if [ -e "$tpg/enable" ]; then
		echo 0 > "$tpg/enable" || { echo "disable $tpg"; rc=1; }
	fi
	for a in "$tpg"/acls/*; do
		configfs_rm "$a/lun_0" "$a" || rc=1
	done
	configfs_rm "$tpg/lun/lun_0" "$tpg" "${tpg%/*}" || rc=1
	return $rc
}
# srpt_down TPG: srpt_port_remove TPG, then srpt_close
srpt_down() { srpt_port_remove "$1" && srpt_close; }

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

# --- LIO, the kernel's SCSI target (iSER and SRP) ---------------------

# lio_fileio NAME FILE: LIO's backstore core/fileio_0/NAME on FILE, all of
# it (configfs mounted first; target_core_mod loaded). Says what failed.
lio_fileio() {
	local bs=/sys/kernel/config/target/core/fileio_0/$1 size
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config
	size=$(stat -c %s "$2") || return 1
	if ! mkdir -p "$bs" ||
		! echo "fd_dev_name=$2,fd_dev_size=$size" > "$bs/control" ||
		! echo 1 > "$bs/enable"; then
		echo "the fileio backstore $bs on $2 (dmesg: $(dmesg | tail -3))"
		return 1
	fi
}
# lio_fileio_remove NAME: remove it, and fileio_0; fails if a step that
# had something to remove failed
lio_fileio_remove() {
	local hba=/sys/kernel/config/target/core/fileio_0
	configfs_rm "$hba/$1" $hba
}

# configfs_rm DIR...: take each DIR that is there down, in order, its
# symbolic links (LIO's LUN and ACL mappings) first; says what would not
# go, and fails then
configfs_rm() {
	local d l rc=0
	for d in "$@"; do
		[ -d "$d" ] || continue
		for l in "$d"/*; do
			[ -L "$l" ] || continue
			rm "$l" || { echo "unlink $l"; rc=1; }
		done
		rmdir "$d" || { echo "rmdir $d"; rc=1; }
	done
	return $rc
}

# unload_lio FABRIC...: unload the fabric modules FABRIC (ib_srpt,
# iscsi_target_mod), then the backends that target_core_mod loads at the
# first backstore (target_core_{iblock,file,pscsi,user}: they hold it),
# then target_core_mod, each given 30 s (a fabric's sessions go in work
# items); a built-in module (no initstate) stays. Says which stayed.
unload_lio() {
	local m
	for m in "$@" target_core_iblock target_core_file target_core_pscsi \
		target_core_user target_core_mod; do
		[ -e "/sys/module/$m/initstate" ] || continue
		wait_for 30 modprobe -r "$m" 2>/dev/null && continue
		echo "$m stays: refcount $(cat "/sys/module/$m/refcnt" 2>&1)," \
			"holders $(ls "/sys/module/$m/holders" 2>&1)"
		return 1
	done
}

# --- iSER: LIO's iSCSI target with an iSER portal (ib_isert), and
# open-iscsi's initiator over an iser iface (ib_iser) ------------------

# iser_target IQN BACKSTORE ADDR: LIO's iSCSI target IQN, its tpgt_1 with
# LUN 0 on BACKSTORE (a configfs path), in demo mode (any initiator, no
# CHAP, writable), a portal on ADDR:3260 with iSER on (ib_isert's rdma_cm
# listener), enabled last. Says what failed.
iser_target() {
	local tpg=/sys/kernel/config/target/iscsi/$1/tpgt_1 np a
	np=$tpg/np/$3:3260
	mkdir -p "$tpg/lun/lun_0" || { echo "iSCSI target $1, tpgt_1, lun_0"; return 1; }
	ln -s "$2" "$tpg/lun/lun_0/${2##*/}" ||
		{ echo "map the backstore $2 to lun_0 of $1"; return 1; }
	mkdir "$np" || { echo "portal $3:3260 (dmesg: $(dmesg | tail -3))"; return 1; }
	echo 1 > "$np/iser" ||
		{ echo "iSER on portal $3:3260 (dmesg: $(dmesg | tail -3))"; return 1; }
	[ "$(cat "$np/iser")" = 1 ] || { echo "the portal's iser attribute:" \
		"expected '1', got '$(cat "$np/iser")'"; return 1; }
	for a in generate_node_acls=1 cache_dynamic_acls=1 authentication=0 \
		demo_mode_write_protect=0; do
		echo "${a#*=}" > "$tpg/attrib/${a%=*}" ||
			{ echo "tpgt_1 attribute $a"; return 1; }
	done
	echo 1 > "$tpg/enable" || { echo "enable tpgt_1 of $1"; return 1; }
}
# iser_portal_renew IQN ADDR: iSER off and on again on the portal
# ADDR:3260: ib_isert's listener goes with its RDMA device
# (RDMA_CM_EVENT_DEVICE_REMOVAL) and does not come back with a new one
iser_portal_renew() {
	local np=/sys/kernel/config/target/iscsi/$1/tpgt_1/np/$2:3260
	echo 0 > "$np/iser" && echo 1 > "$np/iser" && return 0
	echo "iSER off and on at $2:3260 (dmesg: $(dmesg | tail -3))"
	return 1
}
# iser_target_remove IQN ADDR: remove what iser_target made, in reverse
# (the backstore stays); fails if a step that had something to remove
# failed
iser_target_remove() {
	local iscsi=/sys/kernel/config/target/iscsi rc=0 tpg np
	tpg=$iscsi/$1/tpgt_1 np=$iscsi/$1/tpgt_1/np/$2:3260
	if [ -e "$np/iser" ] && [ "$(cat "$np/iser")" = 1 ]; then
		echo 0 > "$np/iser" || { echo "iSER off at $2:3260"; rc=1; }
	fi
	if [ -e "$tpg/enable" ] && [ "$(cat "$tpg/enable")" = 1 ]; then
		echo 0 > "$tpg/enable" || { echo "disable $tpg"; rc=1; }
	fi
	configfs_rm "$tpg/lun/lun_0" "$np" "$tpg" "$iscsi/$1" $iscsi || rc=1
	return $rc
}

# need_iscsi_tools: open-iscsi's programs, and /etc/iscsi for
# iscsi_initiator to bind over, are here (else the case fails)
need_iscsi_tools() {
	local c
	for c in iscsid iscsiadm; do
		command -v $c >/dev/null || fail "no $c (open-iscsi on the host)"
	done
	[ -d /etc/iscsi ] || fail "no /etc/iscsi to bind over (open-iscsi)"
}

# iscsi_initiator ETC NAME LOG [REPLACEMENT]: open-iscsi's initiator NAME
# with its database in ETC (made here) bound over /etc/iscsi (read-only
# here; the path is compiled in), and iscsid running, its output in LOG,
# its pid in $iscsid_pid. A session is held in recovery REPLACEMENT s
# (tmo 20 unless given) before its I/O fails; a NOP-Out goes every 5 s
# and must be answered within 10 (stretched by tmo). No iscsid.startup
# line: iscsiadm never tries systemctl. iscsid runs in a session of its
# own: its shutdown sends SIGTERM to its whole process group (killpg),
# which would otherwise be the caller's. Says what failed.
iscsi_initiator() {
	local etc=$1
	mkdir -p "$etc/nodes" "$etc/send_targets" "$etc/ifaces" /run/lock/iscsi
	echo "InitiatorName=$2" > "$etc/initiatorname.iscsi"
	cat > "$etc/iscsid.conf" <<-EOF
	node.startup = manual
	node.session.auth.authmethod = None
	node.session.timeo.replacement_timeout = ${4:-$(tmo 20)}
	node.conn[0].timeo.login_timeout = $(tmo 15)
	node.conn[0].timeo.logout_timeout = $(tmo 15)
	node.conn[0].timeo.noop_out_interval = $(tmo 5)
	node.conn[0].timeo.noop_out_timeout = $(tmo 10)
	node.session.initial_login_retry_max = 2
	node.session.scan = auto
	EOF
	mount --bind "$etc" /etc/iscsi || { echo "bind $etc over /etc/iscsi"; return 1; }
	setsid iscsid -f < /dev/null > "$3" 2>&1 &
	iscsid_pid=$!
	wait_for 10 iscsid_ready || { echo "iscsid did not start ($(iscsi_log "$3"))"; return 1; }
}
iscsid_ready() { grep -q '@ISCSIADM_ABSTRACT_NAMESPACE' /proc/net/unix; }
# iscsi_log LOG: iscsid's last lines (its output is LOG) and the kernel's
iscsi_log() { echo "iscsid: $(tail -5 "$1" 2>/dev/null);" \
	"dmesg: $(dmesg | tail -8)"; }
# iscsid_stop: stop iscsid_pid's iscsid, given 30 s before SIGKILL
iscsid_stop() {
	[ -n "${iscsid_pid:-}" ] || return 0
	kill "$iscsid_pid" 2>/dev/null
	timeout 30 tail --pid="$iscsid_pid" -f /dev/null ||
		kill -9 "$iscsid_pid" 2>/dev/null
	wait "$iscsid_pid" 2>/dev/null
	iscsid_pid=
}

# iser_iface IFACE: open-iscsi's iface IFACE, over the iser transport
iser_iface() {
	local tn
	iscsiadm -m iface -I "$1" -o new >/dev/null ||
		{ echo "iscsiadm: new iface $1"; return 1; }
	iscsiadm -m iface -I "$1" -o update -n iface.transport_name -v iser \
		>/dev/null || { echo "iscsiadm: iface $1 to transport iser"; return 1; }
	tn=$(iscsiadm -m iface -I "$1" | awk '$1 == "iface.transport_name" { print $3 }')
	[ "$tn" = iser ] ||
		{ echo "transport of iface $1: expected 'iser', got '$tn'"; return 1; }
}
# iser_discover IQN ADDR IFACE: SendTargets discovery of ADDR:3260 over
# IFACE lists IQN there, in portal group 1
iser_discover() {
	local out
	out=$(timeout "$(tmo 60)" iscsiadm -m discovery -t sendtargets \
		-p "$2:3260" -I "$3" 2>&1) ||
		{ echo "SendTargets discovery of $2:3260 over iSER: $out"; return 1; }
	grep -qx "$2:3260,1 $1" <<<"$out" || { echo "discovery of $2:3260:" \
		"expected '$2:3260,1 $1', got '$out'"; return 1; }
}
# iser_login IQN ADDR IFACE: log in to IQN at ADDR:3260 over IFACE; the
# session's transport is iser and its SCSI host's driver iscsi_iser
iser_login() {
	local out s h
	out=$(timeout "$(tmo 120)" iscsiadm -m node -T "$1" -p "$2:3260" \
		-I "$3" --login 2>&1) || { echo "iSER login to $1: $out"; return 1; }
	out=$(iscsiadm -m session 2>&1)
	grep -qx "iser: \[[0-9]*\] $2:3260,1 $1 (non-flash)" <<<"$out" ||
		{ echo "iscsiadm -m session: no iser session to $1 in '$out'"; return 1; }
	grep -q 'Iface Transport: iser$' <<<"$(iscsiadm -m session -P 1)" ||
		{ echo "iscsiadm -m session -P 1 has no 'Iface Transport: iser':" \
			"$(iscsiadm -m session -P 1)"; return 1; }
	s=$(iscsi_session "$1") || { echo "no session of $1 in sysfs"; return 1; }
	h=$(basename "$(dirname "$(readlink -f "$s/device")")")
	[ "$(cat "/sys/class/scsi_host/$h/proc_name")" = iscsi_iser ] ||
		{ echo "SCSI host driver of the session: expected iscsi_iser," \
			"got '$(cat "/sys/class/scsi_host/$h/proc_name")'"; return 1; }
}
# iser_logout IQN ADDR IFACE: log out of IQN at ADDR:3260; its session
# goes. The session's SCSI target and disks are held resumed first
# (power/control "on": runtime suspend off), as
# the logout removes them from the session's WQ_MEM_RECLAIM workqueue
# (iscsi_ctrl_H:S, __iscsi_unbind_session()), and removing a device
# flushes its runtime-PM work (pm_runtime_remove()), on the !WQ_MEM_RECLAIM
# pm_wq: Linux's own check_flush_dependency() WARN whenever an idle
# request of the disk's last I/O is still queued there (seen once on
# 6.1's debug kernel, over sroce against rdma_rxe; any RDMA device or
# iscsi_tcp would do the same). With control "on" no request is queued
# any more; the second's sleep lets one already queued run. Fewer than
# the target and one disk found fails: the layout is not what this knows.
iser_logout() {
	local out s c n=0
	if s=$(iscsi_session "$1") && s=$(readlink -f "$s/device"); then
		for c in "$s"/target*/power/control "$s"/target*/*:*:*:*/power/control; do
			[ -w "$c" ] && echo on > "$c" && n=$((n + 1))
		done
		[ "$n" -ge 2 ] || { echo "iSER logout of $1: runtime PM set on" \
			"for $n of the session's SCSI target and disks, under $s"; return 1; }
		sleep 1
	fi
	out=$(timeout "$(tmo 60)" iscsiadm -m node -T "$1" -p "$2:3260" \
		-I "$3" --logout 2>&1) || { echo "iSER logout of $1: $out"; return 1; }
	wait_for 30 iscsi_no_session "$1" ||
		{ echo "the session of $1 is still there 30 s after logout"; return 1; }
}
# iscsi_session IQN: the sysfs directory of the session to IQN
iscsi_session() { sysfs_first targetname "$1" /sys/class/iscsi_session/session*; }
iscsi_no_session() { ! iscsi_session "$1" >/dev/null; }
# iscsi_session_is IQN STATE: the session to IQN is in STATE (LOGGED_IN,
# FAILED while in recovery)
iscsi_session_is() {
	local s
	s=$(iscsi_session "$1") && [ "$(cat "$s/state" 2>/dev/null)" = "$2" ]
}
# iscsi_disk IQN: the block device of LUN 0 of the session to IQN (no
# udevd: found through /sys)
iscsi_disk() {
	local s b
	s=$(iscsi_session "$1") || return 1
	for b in "$s"/device/target*/*:0/block/*; do
		[ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
iscsi_disk_there() { iscsi_disk "$1" >/dev/null; }

# --- A writer under link faults (ulp_link_fault.sh and
# ulp_link_fault_scsi.sh) ------------------------------------------------
# Write i puts slice i % slices of pattern (i / slices) % 2 at the same
# offset of a file or disk, O_DIRECT, again and again, so that a lost or
# misplaced write shows; the writes that completed are counted.

note() { echo "note: $*"; }
klog() { # the kernel log: the runner's stream if there is one (no wrap)
	if [ -n "${SROCE_KMSG:-}" ]; then cat "$SROCE_KMSG"; else dmesg; fi
}
sroce0_port() { cat /sys/class/infiniband/sroce0/ports/1/state 2>&1; }
sroce0_port_is() { [[ $(sroce0_port) == *": $1" ]]; }
sroce0_sent() { local b; b=$(port_counter sent_bytes); echo "${b:-0}"; }
cm_ids() { # PORT: the rdma_cm IDs bound to it
	rdma resource show cm_id | grep -cE "src-addr [^ ]*:$1( |\$)"
}

# fault_init DIR: the writer's files in DIR (made): its two random
# patterns of $slices slices of $smib MiB (4 of 4) and each slice's
# SHA-256 in sums; $ip6s, eth0's global IPv6 addresses, which going down
# removes (flap puts them back)
fault_init() {
	local p k
	wr=$1 slices=4 smib=4 down_s=3 wpid='' del_pid=''
	mkdir -p "$wr" || fail "mkdir $wr"
	ip6s=$(ip -6 -o addr show dev eth0 scope global | awk '{ print $4 }')
	sums=()
	for p in a b; do
		head -c $((slices * smib))M /dev/urandom > "$wr/$p"
		for ((k = 0; k < slices; k++)); do
			sums+=("$(slice_sum "$wr/$p" $k)")
		done
	done
}
# fault_cleanup: for a case's EXIT trap: the writer and its dd killed,
# eth0 up with its IPv6 addresses, the writer's files gone
fault_cleanup() {
	local a
	[ -n "${wr:-}" ] || return 0
	touch "$wr/stop"
	if [ -n "$wpid" ]; then	# a writer, and maybe its dd, still running
		kill "$wpid" 2>/dev/null
		[ -s "$wr/ddpid" ] && kill "$(cat "$wr/ddpid")" 2>/dev/null
	fi
	ip link set eth0 up
	for a in $ip6s; do
		ip -6 addr add "$a" dev eth0 nodad 2>/dev/null
	done
	rm -rf "$wr"
}
restore_ip6() { # eth0's global IPv6 addresses, which going down removed
	local a
	for a in $ip6s; do
		ip -6 -o addr show dev eth0 | grep -qF " $a " ||
			ip -6 addr add "$a" dev eth0 nodad
	done
}

slice_sum() { # FILE K [DD_FLAG]: the SHA-256 of slice K of FILE
	local s
	s=$(timeout "$(tmo 60)" dd if="$1" bs=1M skip=$(($2 * smib)) \
		count=$smib ${3:+"$3"} status=none | sha256sum)
	echo "${s%% *}"
}
want_sum() { # N K: slice K's SHA-256 after writes 0..N-1 (N > K)
	local j=$(($2 + ($1 - 1 - $2) / slices * slices))
	echo "${sums[$((j / slices % 2 * slices + $2))]}"
}
# slices_verify WHAT FILE N SKIP [DD_FLAG]: after writes 0..N-1, every
# slice of FILE but SKIP (-1: none) holds what the last write to it wrote
slices_verify() {
	local k bad=
	for ((k = 0; k < slices; k++)); do
		[ $k = "$4" ] && continue
		[ "$(slice_sum "$2" $k "${5:-}")" = "$(want_sum "$3" $k)" ] ||
			bad+=" $k"
	done
	[ -z "$bad" ] || fail "$1: $2 differs in slice(s)$bad from what the" \
		"last of the $3 completed writes to each wrote"
}
slice_writer() { # FILE FIRST: writes FIRST, FIRST+1... until $wr/stop exists
	local i=$2 k p pat=("$wr/a" "$wr/b")
	until [ -e "$wr/stop" ]; do
		k=$((i % slices)) p=$((i / slices % 2))
		echo "$i" > "$wr/attempt"
		# nocreat: once the disk has gone, dd must not make a file
		# of its name in /dev, where the next disk could not appear
		dd if="${pat[p]}" of="$1" bs=1M skip=$((k * smib)) \
			seek=$((k * smib)) count=$smib oflag=direct \
			conv=notrunc,nocreat status=none &
		echo $! > "$wr/ddpid"
		wait $! || return 1
		i=$((i + 1))
		echo $i > "$wr/count.new" && mv "$wr/count.new" "$wr/count"
	done
}
writes() { local n; n=$(cat "$wr/count" 2>/dev/null); echo "${n:-0}"; }
attempted() { cat "$wr/attempt"; } # the write under way, or the last one
writer_start() { # FILE FIRST
	rm -f "$wr/stop"
	echo "$2" > "$wr/count"
	slice_writer "$@" &
	wpid=$!
}
writer_stop() { # the writer's status
	local rc
	touch "$wr/stop"
	wait "$wpid"
	rc=$?
	wpid=
	return $rc
}
writer_gone() { ! kill -0 "$wpid" 2>/dev/null; }
# writer_busy FIRST: the writer completed a write since FIRST and sroce0
# carries more than keep-alives and lease renewals now
writer_busy() {
	local s0
	[ "$(writes)" -gt "$1" ] && ! writer_gone || return 1
	s0=$(sroce0_sent)
	sleep 0.5
	[ $(($(sroce0_sent) - s0)) -ge 65536 ]
}
# writer_resumed AT: two writes since AT, every slice written once more
# than the first pass, or the writer ended
writer_resumed() {
	local n
	n=$(writes)
	{ [ "$n" -ge $(($1 + 2)) ] && [ "$n" -gt $slices ]; } || writer_gone
}

# writer_under WHAT TARGET FIRST: the writer on TARGET from write FIRST,
# once it has completed a write and sroce0 carries its data (a fault then
# hits I/O in flight)
writer_under() {
	writer_start "$2" "$3"
	wait_for 60 writer_busy "$3" || fail "$1: the writer to $2 completed" \
		"no write with data moving on sroce0 in 60 s from write $3" \
		"($(writes) done)"
}
# writes_go_on WHAT TARGET LIMIT FAULT [LOG]: two more writes within
# LIMIT s (tmo) after FAULT, and the writer stops with no write failed,
# else the output of the command LOG (dmesg_tail unless given) goes with
# the failure; n: the writes done
writes_go_on() {
	local at
	at=$(writes)
	wait_for "$3" writer_resumed "$at" ||
		fail "$1: writes stalled at $(writes) after $4 ($("${5:-dmesg_tail}"))"
	writer_stop || fail "$1: write $(attempted) to $2 failed across $4" \
		"($("${5:-dmesg_tail}"))"
	n=$(writes)
}
dmesg_tail() { echo "dmesg: $(dmesg | tail -5)"; }
# writes_fail WHAT TARGET GONE: the writer ends with an error within 60 s
# (tmo) of GONE; n: the writes done, skip: the slice of the write that
# failed, not to be checked
# shellcheck disable=SC2034 # skip is the caller's
writes_fail() {
	local a
	wait_for 60 writer_gone || fail "$1: the writer to $2 still runs" \
		"$(tmo 60) s after $3: write $(attempted) hangs"
	writer_stop && fail "$1: the writer ended without an error after $3"
	n=$(writes) a=$(attempted) skip=-1
	[ "$a" -lt "$n" ] || skip=$((a % slices))	# write $a failed
}

# fault_flap WHAT TARGET COPY [LOG]: eth0 down and up (flap) under the
# writer on TARGET from write 0: no write may fail and the writes go on
# (writes_go_on; LOG as there); then every slice checked on COPY, the
# target's own file. n: the writes done.
fault_flap() {
	writer_under "$1" "$2" 0
	flap "$1"
	writes_go_on "$1" "$2" 60 "eth0 down and up" "${4:-dmesg_tail}"
	slices_verify "$1: the target's copy after eth0 down and up" "$3" "$n" -1
}
# fault_delete WHAT TARGET: "rdma link delete sroce0" (link_delete) under
# the writer on TARGET from write $n
fault_delete() {
	writer_under "$1" "$2" "$n"
	link_delete "$1"
}

# flap WHAT: eth0 down for $down_s s, then up; the port follows
flap() {
	local s0 d0
	ip link set eth0 down || fail "ip link set eth0 down"
	wait_for 10 sroce0_port_is DOWN || fail "$1: sroce0 port 1 is" \
		"'$(sroce0_port)' after eth0 went down, expected DOWN"
	s0=$(sroce0_sent) d0=$(port_counter send_port_down)
	sleep $down_s
	note "$1: sroce0 sent $(($(sroce0_sent) - s0)) bytes and dropped" \
		"$(($(port_counter send_port_down) - ${d0:-0})) packets" \
		"(send_port_down) in the $down_s s eth0 was down"
	ip link set eth0 up || fail "ip link set eth0 up"
	wait_for 10 sroce0_port_is ACTIVE || fail "$1: sroce0 port 1 is" \
		"'$(sroce0_port)' 10 s after eth0 came up, expected ACTIVE"
	restore_ip6
}

# link_back: "rdma link add sroce0" on eth0 again, after link_delete,
# once ib_core has given it eth0's IPv4 address as a GID (in a work item
# after the device registers): the clients bind to that address
link_back() {
	local ip
	ip=$(ipv4_of eth0)
	link_add sroce0 eth0
	wait_for 10 ipv4_gid_there sroce0 "$ip" ||
		fail "sroce0 has no GID of $ip 10 s after rdma link add"
}
ipv4_gid_there() { # IBDEV ADDR: IBDEV's port 1 has the RoCE GID of ADDR
	local gid
	# shellcheck disable=SC2086 # the address's four bytes
	gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	grep -qxF "$gid" "/sys/class/infiniband/$1/ports/1/gids/"* 2>/dev/null
}

# link_delete WHAT: rdma link delete sroce0, which must return in 60 s
# (else the blocked tasks' stacks go to the kernel log)
link_deleted() { ! kill -0 "$del_pid" 2>/dev/null; }
link_delete() {
	local t=$SECONDS
	rdma link delete sroce0 &
	del_pid=$!
	if ! wait_for 60 link_deleted; then
		echo w > /proc/sysrq-trigger
		fail "$1: rdma link delete sroce0 still blocked after $(tmo 60) s" \
			"in: $(tr '\n' ' ' < "/proc/$del_pid/stack")"
	fi
	wait "$del_pid" || fail "$1: rdma link delete sroce0 failed"
	! ibdev_exists sroce0 || fail "$1: sroce0 still exists after rdma link delete"
	note "$1: rdma link delete took $((SECONDS - t)) s"
}

# mount_tracefs: tracefs on /sys/kernel/tracing, where the tests' kprobe
# events are (sroce-xfer's orphan_unload, sroce-failnth), if it is not
# there: the guest mounts debugfs, not tracefs. Fails where the kernel has
# none; a kernel without kprobe events has no kprobe_events file in it.
mount_tracefs() {
	local t=/sys/kernel/tracing
	[ -e $t/kprobe_events ] || mountpoint -q $t ||
		mount -t tracefs tracefs $t 2>/dev/null
}

# orphan_unprobe: what sroce-xfer's orphan_* tests (xfer_orphan.cpp,
# orphan.h) set up gone, should a test have left it (orphan_unload ends
# without its teardown; a test killed by its timeout): the hold of an
# access (sroce's hold_map, armed) and the two
# kprobe events. The events' group, and its enable file, exist only while
# the events do: none when orphan_unload did not run. Each write's errors
# (nothing to remove) are silenced whole, the opening of the file too.
orphan_hold_armed() { # hold_map is armed (not 0)
	local v
	v=$(cat /sys/kernel/debug/sroce/hold_map 2>/dev/null)
	[ -n "$v" ] && [ "$v" != 0 ]
}
orphan_unprobe() {
	local t=/sys/kernel/tracing f=/sys/kernel/debug/sroce/hold_map
	if [ -w $f ]; then
		{ echo 0 > $f; } 2>/dev/null
	fi
	[ -w $t/kprobe_events ] || return 0
	if [ -e $t/events/sroce_orphan/enable ]; then
		{ echo 0 > $t/events/sroce_orphan/enable; } 2>/dev/null
	fi
	{ echo -:sroce_orphan/queued >> $t/kprobe_events; } 2>/dev/null
	{ echo -:sroce_orphan/run >> $t/kprobe_events; } 2>/dev/null
	return 0
}
