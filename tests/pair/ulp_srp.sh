#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# SRP between two VMs' kernels, each VM with the RDMA device $KIND (sroce
# or rxe): the LIO target ib_srpt on one VM, configured through configfs
# with a rdma_cm listener, and the initiator ib_srp on the other, logging
# in with add_target (dest=IP:port: rdma_cm, not the IB CM), once each
# way. The LUN is a 64 MiB file on the target's tmpfs (fileio) whose first
# half holds a pattern both sides can make (ulp.sh's seeded generator);
# the initiator reads it from the SCSI disk that appears and checks every
# byte, writes a second pattern behind it and reads that back, all
# O_DIRECT. Once the initiator has logged out (its QPs have gone from the
# target's device), the target checks the second half of its file and
# that LIO counted the I/O under its ACL. Then each side takes
# itself down, each step checked: the remote port deleted, the configfs
# tree removed in reverse order, ib_srp, ib_srpt and LIO unloaded, and the
# device's kernel PDs, QPs, MRs and CQs (less ib_core's CQ pool, which
# keeps ib_srpt's until the device goes) back to their numbers from before.
#
# What ib_srpt needs (as found in one VM): no rdma_cm_port
# module parameter (configfs srpt/discovery_auth/rdma_cm_port opens the
# listener); the target port named after GID 0's interface ID
# ("xxxx:xxxx:xxxx:xxxx", the port under which an rdma_cm login finds its
# ACL by address); LIO loads target_core_{iblock,file,pscsi,user} at the
# first backstore, and they hold target_core_mod. The service GUID is set
# at load (srpt_service_guid), so that the initiator knows the id_ext and
# ioc_guid to ask for without reading the other VM. The ACL: ib_srpt
# names an rdma_cm login after "%pIS" of its connection's src_addr, which
# on the target's side is the target's own address, not the initiator's
# (cma_save_ip4_info; seen with sroce and rdma_rxe on 6.12): the one ACL
# is the target's address, so any initiator that reaches it gets in, as
# with ib_srpt on any RoCE device. Passes sroce-sroce and sroce-rxe on
# 6.12 (30 to 70 s a direction under TCG).
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
busybox ping -c 2 -W 10 "$PEER4" >/dev/null

srp_guid=0x5e5e5e5e00000035	# ib_srpt's service GUID: id_ext, ioc_guid
srp_port=5555			# ib_srpt's rdma_cm port
srp_img=/tmp/pair-srp.img	# the LUN's file
lio=/sys/kernel/config/target
srp_bs=$lio/core/fileio_0/pair	# its backstore
half=$((32 * 1024 * 1024))
export dev srp_guid srp_port srp_img lio srp_bs half

# srp_tpg: the target port group under the port ib_srpt named after GID 0
srp_tpg() {
	local gid
	gid=$(cat "/sys/class/infiniband/$dev/ports/1/gids/0")
	echo "$lio/srpt/${gid:20}/tpgt_1"
}
# srp_acls: the ACL an rdma_cm login is known by (see above)
srp_acls() { echo "$MY4"; }
# lio_unload: ib_srpt, the backends LIO loaded itself, LIO
lio_unload() {
	local m
	for m in ib_srpt target_core_iblock target_core_file \
		target_core_pscsi target_core_user target_core_mod; do
		wait_for 30 unload_module $m 2>/dev/null || {
			explain "$m stays: refcount" \
				"$(cat /sys/module/$m/refcnt 2>&1), holders" \
				"$(ls /sys/module/$m/holders 2>&1)"; return 1; }
	done
}

# srpt_start: LUN 0 of ib_srpt's port on $dev, the file $srp_img with
# pattern 1 in its first half, for the initiator $PEER4
srpt_start() {
	local tpg a got
	modprobe -a target_core_mod target_core_file ||
		{ explain "modprobe target_core_mod target_core_file"; return 1; }
	modprobe ib_srpt srpt_service_guid=$srp_guid ||
		{ explain "modprobe ib_srpt srpt_service_guid=$srp_guid"; return 1; }
	got=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
	[ "$got" = $srp_guid ] || { echo "ib_srpt's service GUID:" \
		"expected $srp_guid, got $got (loaded before?)"; return 1; }
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config
	{ pattern 1 $half; head -c $half /dev/zero; } > $srp_img ||
		{ echo "write $srp_img"; return 1; }
	if ! mkdir -p $srp_bs ||
		! echo "fd_dev_name=$srp_img,fd_dev_size=$((2 * half))" > $srp_bs/control ||
		! echo 1 > $srp_bs/enable; then
		explain "the fileio backstore $srp_bs on $srp_img"; return 1
	fi
	mkdir $lio/srpt ||
		{ explain "mkdir $lio/srpt (ib_srpt has not registered with LIO)"; return 1; }
	tpg=$(srp_tpg)
	mkdir "${tpg%/*}" || { explain "ib_srpt has no port ${tpg%/*}" \
		"(GID 0 $(cat "/sys/class/infiniband/$dev/ports/1/gids/0"))"; return 1; }
	if ! mkdir "$tpg" "$tpg/lun/lun_0" ||
		! ln -s $srp_bs "$tpg/lun/lun_0/pair"; then
		explain "LUN 0 of $tpg"; return 1
	fi
	for a in $(srp_acls); do
		if ! mkdir "$tpg/acls/$a" "$tpg/acls/$a/lun_0" ||
			! ln -s "$tpg/lun/lun_0" "$tpg/acls/$a/lun_0/lun_0"; then
			explain "the ACL $a of $tpg"; return 1
		fi
	done
	echo 1 > "$tpg/enable" || { explain "enable $tpg"; return 1; }
	# Last: a login that comes earlier is refused, not half taken.
	echo $srp_port > $lio/srpt/discovery_auth/rdma_cm_port ||
		{ explain "ib_srpt's rdma_cm listener on port $srp_port"; return 1; }
}

# srpt_stop BASE: take down what srpt_start made, unload, and require
# ulp_counts BASE
srpt_stop() {
	local rc=0 tpg a d
	tpg=$(srp_tpg)
	if [ -e "$tpg/enable" ]; then
		echo 0 > "$tpg/enable" || { explain "disable $tpg"; rc=1; }
	fi
	for a in $(srp_acls); do
		[ -d "$tpg/acls/$a" ] || continue
		rm -f "$tpg/acls/$a/lun_0/lun_0"
		rmdir "$tpg/acls/$a/lun_0" "$tpg/acls/$a" ||
			{ explain "remove the ACL $a"; rc=1; }
	done
	rm -f "$tpg/lun/lun_0/pair"
	for d in "$tpg/lun/lun_0" "$tpg" "${tpg%/*}"; do
		[ -d "$d" ] || continue
		rmdir "$d" || { explain "rmdir $d"; rc=1; }
	done
	if [ -d $lio/srpt ]; then
		echo 0 > $lio/srpt/discovery_auth/rdma_cm_port ||
			{ explain "close ib_srpt's listener"; rc=1; }
		rmdir $lio/srpt || { explain "rmdir $lio/srpt"; rc=1; }
	fi
	for d in $srp_bs ${srp_bs%/*}; do
		[ -d "$d" ] || continue
		rmdir "$d" || { explain "rmdir $d"; rc=1; }
	done
	lio_unload || rc=1
	back_to ulp_counts "$1" || rc=1
	rm -f $srp_img
	return $rc
}

# srp_serve: serve until an initiator has logged in and out, then check
# what it wrote
srp_serve() {
	local base qps rc=0 a r w tpg moved=
	base=$(ulp_counts "$dev")
	qps=$(kernel_qps)
	case "$base $qps" in *'?'*)
		echo "rdma resource could not list $dev's objects: $base"; return 1 ;;
	esac
	# The initiator's channels are kernel QPs of ib_srpt here.
	srpt_start && peer_session "$qps" || rc=1
	if [ $rc = 0 ]; then
		tpg=$(srp_tpg)
		for a in $(srp_acls); do
			r=$(cat "$tpg/acls/$a/lun_0/statistics/scsi_auth_intr/read_mbytes")
			w=$(cat "$tpg/acls/$a/lun_0/statistics/scsi_auth_intr/write_mbytes")
			echo "ACL $a: $r MiB read, $w MiB written"
			[ "$r" -ge 64 ] && [ "$w" -ge 32 ] && moved=$a
		done
		[ -n "$moved" ] || { echo "no ACL counted 64 MiB read and" \
			"32 MiB written"; rc=1; }
	fi
	if [ $rc = 0 ] && [ "$(tail -c $half $srp_img | sha256sum)" != \
		"$(pattern 2 $half | sha256sum)" ]; then
		echo "the second half of $srp_img is not what the initiator wrote"
		rc=1
	fi
	srpt_stop "$base" || rc=1
	return $rc
}

# srp_client TARGET: log in to ib_srpt at TARGET, ulp_disk_io, log out, unload
# the initiator and require the device's kernel objects as they were
srp_client() {
	local t=$1 base rc=0 out end host n p login
	base=$(ulp_counts "$dev")
	case $base in *'?'*)
		echo "rdma resource could not list $dev's objects: $base"; return 1 ;;
	esac
	# sd_mod too: without udevd nothing loads it when the disk appears.
	modprobe -a ib_srp sd_mod || { explain "modprobe ib_srp sd_mod"; return 1; }
	host=/sys/class/infiniband_srp/srp-$dev-1
	login="id_ext=$srp_guid,ioc_guid=$srp_guid,dest=$t:$srp_port,src=$MY4"
	if [ ! -e "$host/add_target" ]; then
		explain "no $host/add_target after modprobe ib_srp"; rc=1
	fi
	# Until the target listens and knows us.
	end=$((SECONDS + $(tmo 120)))
	while [ $rc = 0 ] &&
		! out=$( { echo "$login" > "$host/add_target"; } 2>&1); do
		if [ $SECONDS -ge $end ]; then
			explain "add_target '$login', $(tmo 120) s of tries: $out"
			rc=1
		fi
		sleep 1
	done
	if [ $rc = 0 ]; then
		if ! wait_for 30 srp_disk_there "$dev"; then
			explain "no LIO-ORG disk on an SRP host of $dev after the" \
				"login (SCSI hosts: $(ls /sys/class/scsi_host))"
			rc=1
		else
			ulp_disk_io "$(srp_disk "$dev")" || rc=1
		fi
	fi
	# Log out: delete the remote port of every login on $dev.
	if n=$(srp_shost "$dev"); then
		for p in /sys/class/srp_remote_ports/port-"$n":*; do
			echo 1 > "$p/delete" ||
				{ explain "delete the remote port $p"; rc=1; }
		done
		wait_for 30 srp_no_shost "$dev" || { explain "SCSI host $n of $dev" \
			"still there 30 s after its remote port was deleted"; rc=1; }
	fi
	if ! wait_for 30 unload_module ib_srp 2>/dev/null ||
		! unload_module scsi_transport_srp; then
		explain "ib_srp stays: refcount $(cat /sys/module/ib_srp/refcnt 2>&1)"
		rc=1
	fi
	back_to ulp_counts "$base" || rc=1
	return $rc
}
export_ulp_helpers
export -f srp_tpg srp_acls lio_unload srpt_start srpt_stop srp_serve \
	srp_shost srp_disk srp_disk_there srp_no_shost srp_client

# The initiator waits for the target itself.
STEP_LIMIT=300 STEP_TRIES=1
# Each VM sends 96 MiB, as NFS does: as the target its RDMA WRITEs of the
# two reads, as the initiator the responses to the target's RDMA READs.
ulp_both_ways SRP 24576 srp_serve srp_client \
	"SRP target %s, initiator %s: 32 MiB each way, every byte checked"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
