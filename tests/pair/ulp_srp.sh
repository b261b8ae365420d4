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
busybox ping -c 1 -W 10 "$PEER4" >/dev/null

srp_guid=0x5e5e5e5e00000035	# ib_srpt's service GUID: id_ext, ioc_guid
srp_port=5555			# ib_srpt's rdma_cm port
srp_img=/tmp/pair-srp.img	# the LUN's file
srp_bs=/sys/kernel/config/target/core/fileio_0/pair	# its backstore
half=$((32 * 1024 * 1024))
export dev srp_guid srp_port srp_img srp_bs half

# srp_acls: the ACL an rdma_cm login is known by (see above)
srp_acls() { echo "$MY4"; }

# srpt_start: LUN 0 of ib_srpt's port on $dev, the file $srp_img with
# pattern 1 in its first half, for the initiator $PEER4
srpt_start() {
	local got
	modprobe -a target_core_mod target_core_file ||
		{ explain "modprobe target_core_mod target_core_file"; return 1; }
	modprobe ib_srpt srpt_service_guid=$srp_guid ||
		{ explain "modprobe ib_srpt srpt_service_guid=$srp_guid"; return 1; }
	got=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
	[ "$got" = $srp_guid ] || { echo "ib_srpt's service GUID:" \
		"expected $srp_guid, got $got (loaded before?)"; return 1; }
	{ pattern 1 $half; head -c $half /dev/zero; } > $srp_img ||
		{ echo "write $srp_img"; return 1; }
	lio_fileio pair $srp_img || return 1
	# shellcheck disable=SC2046 # one word per ACL
	srpt_port "$dev" $srp_bs $(srp_acls) ||
		{ explain "ib_srpt's port on $dev"; return 1; }
	# Last: a login that comes earlier is refused, not half taken.
	srpt_listen $srp_port || { explain "ib_srpt's listener"; return 1; }
}

# srpt_stop BASE: take down what srpt_start made, unload, and require
# ulp_counts BASE
srpt_stop() {
	local rc=0
	srpt_port_remove "$(srpt_tpg "$dev")" || rc=1
	srpt_close || rc=1
	lio_fileio_remove pair || rc=1
	unload_lio ib_srpt || { explain "LIO's modules"; rc=1; }
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
	objects_listed "$base" "$qps" || return 1
	# The initiator's channels are kernel QPs of ib_srpt here.
	srpt_start && peer_session "$qps" || rc=1
	if [ $rc = 0 ]; then
		tpg=$(srpt_tpg "$dev")
		for a in $(srp_acls); do
			r=$(cat "$tpg/acls/$a/lun_0/statistics/scsi_auth_intr/read_mbytes")
			w=$(cat "$tpg/acls/$a/lun_0/statistics/scsi_auth_intr/write_mbytes")
			echo "ACL $a: $r MiB read, $w MiB written"
			[ "$r" -ge 64 ] && [ "$w" -ge 32 ] && moved=$a
		done
		[ -n "$moved" ] || { echo "no ACL counted 64 MiB read and" \
			"32 MiB written"; rc=1; }
	fi
	[ $rc != 0 ] || lun_written $srp_img || rc=1
	srpt_stop "$base" || rc=1
	return $rc
}

# srp_client TARGET: log in to ib_srpt at TARGET, ulp_disk_io, log out, unload
# the initiator and require the device's kernel objects as they were
srp_client() {
	local t=$1 base rc=0 host login
	base=$(ulp_counts "$dev")
	objects_listed "$base" || return 1
	# sd_mod too: without udevd nothing loads it when the disk appears.
	modprobe -a ib_srp sd_mod || { explain "modprobe ib_srp sd_mod"; return 1; }
	host=/sys/class/infiniband_srp/srp-$dev-1
	login="id_ext=$srp_guid,ioc_guid=$srp_guid,dest=$t:$srp_port,src=$MY4"
	if [ ! -e "$host/add_target" ]; then
		explain "no $host/add_target after modprobe ib_srp"; rc=1
	fi
	# Until the target listens and knows us.
	[ $rc != 0 ] || tries "add_target '$login'" srp_login "$dev" "$login" ||
		rc=1
	if [ $rc = 0 ]; then
		if ! wait_for 30 srp_disk_there "$dev"; then
			explain "no LIO-ORG disk on an SRP host of $dev after the" \
				"login (SCSI hosts: $(ls /sys/class/scsi_host))"
			rc=1
		else
			ulp_disk_io "$(srp_disk "$dev")" || rc=1
		fi
	fi
	# Log out: delete the remote port of the login on $dev.
	srp_logout "$dev" || { explain "log out"; rc=1; }
	if ! wait_for 30 unload_module ib_srp 2>/dev/null ||
		! unload_module scsi_transport_srp; then
		explain "ib_srp stays: refcount $(cat /sys/module/ib_srp/refcnt 2>&1)"
		rc=1
	fi
	back_to ulp_counts "$base" || rc=1
	return $rc
}
export_ulp_helpers
export -f srp_acls srpt_start srpt_stop srp_serve srp_shost srp_disk \
	srp_disk_there srp_no_shost srp_client lio_fileio lio_fileio_remove \
	configfs_rm unload_lio srpt_listen srpt_close srpt_tpg srpt_port \
	srpt_port_remove srp_login srp_logout

# The initiator waits for the target itself.
STEP_LIMIT=300 STEP_TRIES=1
# Each VM sends 96 MiB, as NFS does: as the target its RDMA WRITEs of the
# two reads, as the initiator the responses to the target's RDMA READs.
ulp_both_ways SRP 24576 srp_serve srp_client \
	"SRP target %s, initiator %s: 32 MiB each way, every byte checked"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
