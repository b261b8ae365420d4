#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# NFSv4.2 over RDMA between two VMs' kernels, each VM with the RDMA device
# $KIND (sroce or rxe): knfsd with an "rdma 20049" listener (svcrdma) on
# one VM, the NFS client (xprtrdma) on the other, once each way. The
# server exports a tmpfs holding a 32 MiB file of a pattern both sides can
# make (ulp.sh's seeded generator); the client mounts it with
# proto=rdma, requires its mountstats to say "xprt: rdma", reads that
# file with O_DIRECT and checks every byte, writes a second pattern to a
# new file with O_DIRECT and reads it back the same way. Once the client
# has unmounted (its QP has gone from the server's device), the server
# checks the file in its tmpfs. Then each side takes itself down, each
# step checked: unmount, nfsd stopped, rpcrdma and the NFS modules
# unloaded, and the device's kernel PDs, CQs, QPs and MRs back to their
# numbers from before.
#
# nfsd in a VM whose root is read-only, as tests/cases/nfs_rdma.sh starts
# it: a directory of /tmp bound over /var/lib/nfs (empty etab and rmtab,
# the legacy v4recovery directory), rpc.mountd for NFSv4 only, no rpcbind,
# the grace period ended by hand before the RDMA listener opens, so that
# the client's first OPEN is not refused with NFS4ERR_GRACE.
#
# Passes sroce-sroce and sroce-rxe on 6.12 (40 to 70 s a direction under
# TCG). When it fails, look first at the client's mount error and the
# server's dmesg lines of svcrdma or of the export cache (an export to
# $PEER4 that the server does not match gives EACCES).
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
busybox ping -c 1 -W 10 "$PEER4" >/dev/null

nfs_port=20049
nfs_exp=/tmp/pair-nfs-export	# the server's tmpfs, the NFSv4 root
nfs_state=/tmp/pair-nfs-state	# bound over /var/lib/nfs
nfs_mountd_log=/tmp/pair-nfs-mountd.log
nfs_mnt=/tmp/pair-nfs-mnt	# the client's mount point
half=$((32 * 1024 * 1024))
export dev nfs_port nfs_exp nfs_state nfs_mountd_log nfs_mnt half

# nfsd_explain MESSAGE...: explain, with rpc.mountd's last words
nfsd_explain() {
	explain "$*; rpc.mountd: $(tail -n 3 $nfs_mountd_log 2>/dev/null)"
}

# rpcrdma_gone: unload rpcrdma, whose transports go in work items after
# their last reference
rpcrdma_gone() {
	wait_for 30 unload_module rpcrdma 2>/dev/null && return 0
	explain "rpcrdma stays: refcount $(cat /sys/module/rpcrdma/refcnt 2>&1)," \
		"holders $(ls /sys/module/rpcrdma/holders 2>&1)"
	return 1
}

# nfsd_start: nfsd serving $nfs_exp (a tmpfs with pattern 1 as
# from-server) to $PEER4, over RDMA on $nfs_port
nfsd_start() {
	local c out lease
	for c in rpc.nfsd rpc.mountd exportfs; do
		command -v $c >/dev/null ||
			{ echo "no $c (nfs-kernel-server on the host)"; return 1; }
	done
	modprobe -a nfsd rpcrdma || { explain "modprobe nfsd rpcrdma"; return 1; }
	if ! mkdir -p $nfs_state/v4recovery $nfs_exp ||
		! : > $nfs_state/etab || ! : > $nfs_state/rmtab; then
		echo "cannot make $nfs_state"; return 1
	fi
	mount --bind $nfs_state /var/lib/nfs ||
		{ echo "bind $nfs_state over /var/lib/nfs"; return 1; }
	mount -t tmpfs -o size=96m,mode=0777 tmpfs $nfs_exp ||
		{ echo "tmpfs at $nfs_exp"; return 1; }
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		{ explain "mount the nfsd filesystem on /proc/fs/nfsd"; return 1; }
	pattern 1 $half > $nfs_exp/from-server ||
		{ echo "write pattern 1 to $nfs_exp/from-server"; return 1; }
	# -i: this export only, not the host's /etc/exports. fsid=0: the
	# NFSv4 pseudo-root (tmpfs has no UUID), mounted as SERVER:/.
	out=$(timeout "$(tmo 30)" exportfs -i \
		-o rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync \
		"$PEER4/32:$nfs_exp" 2>&1) ||
		{ echo "exportfs $PEER4/32:$nfs_exp: $out"; return 1; }
	rpc.mountd -F -N 2 -N 3 -u < /dev/null > $nfs_mountd_log 2>&1 &
	mountd_pid=$!
	wait_for 10 mountd_ready "$mountd_pid" ||
		{ nfsd_explain "rpc.mountd did not open the export cache channel"; return 1; }
	lease=$(tmo 30)
	[ "$lease" -le 3600 ] || lease=3600
	out=$(timeout "$(tmo 60)" rpc.nfsd -N 3 -V 4.2 -U -G 10 -L "$lease" 4 2>&1) ||
		{ nfsd_explain "rpc.nfsd: $out"; return 1; }
	echo Y > /proc/fs/nfsd/v4_end_grace
	wait_for 30 grace_over || { nfsd_explain "the grace period did not end:" \
		"v4_end_grace reads '$(cat /proc/fs/nfsd/v4_end_grace 2>&1)'"; return 1; }
	# The RDMA listener (unless the host's nfs.conf had rpc.nfsd open it).
	if ! grep -qx "rdma $nfs_port" /proc/fs/nfsd/portlist; then
		echo "rdma $nfs_port" > /proc/fs/nfsd/portlist ||
			{ nfsd_explain "echo rdma $nfs_port > /proc/fs/nfsd/portlist"; return 1; }
	fi
	grep -qx "rdma $nfs_port" /proc/fs/nfsd/portlist || {
		echo "portlist: no 'rdma $nfs_port' line in" \
			"$(tr '\n' ' ' < /proc/fs/nfsd/portlist)"; return 1; }
}

# nfsd_stop BASE: stop nfsd, unload it, and require kernel_counts BASE
nfsd_stop() {
	local rc=0 m
	if mountpoint -q /var/lib/nfs; then
		timeout "$(tmo 30)" exportfs -ua || { echo "exportfs -ua"; rc=1; }
	fi
	if [ -e /proc/fs/nfsd/threads ]; then
		timeout "$(tmo 60)" rpc.nfsd 0 || { nfsd_explain "rpc.nfsd 0"; rc=1; }
		[ "$(cat /proc/fs/nfsd/threads)" = 0 ] || { echo "nfsd threads" \
			"after rpc.nfsd 0: $(cat /proc/fs/nfsd/threads)"; rc=1; }
	fi
	if [ -n "${mountd_pid:-}" ]; then
		kill "$mountd_pid" 2>/dev/null
		wait "$mountd_pid" 2>/dev/null
	fi
	for m in /proc/fs/nfsd $nfs_exp /var/lib/nfs; do
		mountpoint -q "$m" || continue
		umount "$m" || { echo "umount $m after nfsd stopped"; rc=1; }
	done
	rpcrdma_gone || rc=1
	wait_for 30 unload_module nfsd 2>/dev/null ||
		{ explain "nfsd stays: refcount $(cat /sys/module/nfsd/refcnt 2>&1)"; rc=1; }
	back_to kernel_counts "$1" || rc=1
	rm -rf $nfs_state $nfs_exp $nfs_mountd_log
	return $rc
}

# nfs_serve: serve until a client has come and gone, then check the file
# it left
nfs_serve() {
	local base qps rc=0
	base=$(kernel_counts "$dev")
	qps=$(kernel_qps)
	objects_listed "$base" "$qps" || return 1
	# The client's connection is a kernel QP of svcrdma here.
	nfsd_start && peer_session "$qps" || rc=1
	if [ $rc = 0 ] && [ "$(sha256sum < $nfs_exp/from-client)" != \
		"$(pattern_sum 2 $half)" ]; then
		echo "$nfs_exp/from-client ($(stat -c %s $nfs_exp/from-client)" \
			"bytes) is not what the client wrote"
		rc=1
	fi
	nfsd_stop "$base" || rc=1
	return $rc
}

# nfs_io: over the mount, pattern 1 read, pattern 2 written and read back,
# all O_DIRECT (nothing from the page cache)
nfs_io() {
	local xprt
	xprt=$(awk -v m=$nfs_mnt '$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" { print $2; exit }' /proc/self/mountstats)
	[ "$xprt" = rdma ] || { echo "mountstats transport of $nfs_mnt:" \
		"expected rdma, got '$xprt' ($(grep " $nfs_mnt " /proc/mounts))"
		return 1; }
	[ "$(dd if=$nfs_mnt/from-server bs=1M iflag=direct status=none |
		sha256sum)" = "$(pattern_sum 1 $half)" ] || {
		explain "$nfs_mnt/from-server read with O_DIRECT is not" \
			"the server's pattern"; return 1; }
	pattern 2 $half | dd of=$nfs_mnt/from-client bs=1M oflag=direct \
		iflag=fullblock status=none ||
		{ explain "write $nfs_mnt/from-client with O_DIRECT"; return 1; }
	[ "$(dd if=$nfs_mnt/from-client bs=1M iflag=direct status=none |
		sha256sum)" = "$(pattern_sum 2 $half)" ] || {
		explain "$nfs_mnt/from-client read back with O_DIRECT is not" \
			"what was written"; return 1; }
}

# nfs_client SERVER: mount SERVER:/ over RDMA, nfs_io, unmount, unload the
# client and require the device's kernel objects as they were
nfs_client() {
	local t=$1 base rc=0 out end
	command -v mount.nfs >/dev/null ||
		{ echo "no mount.nfs (nfs-common on the host)"; return 1; }
	base=$(kernel_counts "$dev")
	objects_listed "$base" || return 1
	modprobe -a nfsv4 rpcrdma || { explain "modprobe nfsv4 rpcrdma"; return 1; }
	mkdir -p $nfs_mnt
	# Until the server listens; retry=0: one try for each mount.nfs.
	end=$((SECONDS + $(tmo 120)))
	until out=$(timeout "$(tmo 60)" mount -t nfs \
		-o vers=4.2,proto=rdma,port=$nfs_port,retry=0 "$t:/" $nfs_mnt 2>&1); do
		if [ $SECONDS -ge $end ]; then
			explain "mount $t:/ over RDMA, $(tmo 120) s of tries: $out"
			rc=1
			break
		fi
		sleep 1
	done
	if [ $rc = 0 ]; then
		nfs_io || rc=1
		timeout "$(tmo 60)" umount $nfs_mnt ||
			{ explain "umount $nfs_mnt"; rc=1; }
	fi
	if mountpoint -q $nfs_mnt; then
		umount -f $nfs_mnt 2>/dev/null || umount -l $nfs_mnt
	fi
	rmdir $nfs_mnt
	rpcrdma_gone || rc=1
	if ! wait_for 30 unload_module nfsv4 2>/dev/null ||
		! wait_for 30 unload_module nfs 2>/dev/null; then
		explain "the NFS client's modules stay:" \
			"$(ls -d /sys/module/nfs /sys/module/nfsv4 2>/dev/null)"
		rc=1
	fi
	back_to kernel_counts "$base" || rc=1
	return $rc
}
export_ulp_helpers
export -f mountd_ready grace_over nfsd_explain rpcrdma_gone nfsd_start nfsd_stop \
	nfs_serve nfs_io nfs_client

# The client waits for the server itself.
STEP_LIMIT=300 STEP_TRIES=1
# Each VM sends 96 MiB: as the server the file read and the one read back
# (its RDMA WRITEs), as the client the file written (the responses to the
# server's RDMA READs); at most 4096 bytes a packet.
ulp_both_ways NFS 24576 nfs_serve nfs_client \
	"NFSv4.2 over RDMA, server %s, client %s: 32 MiB each way, every byte checked"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
