#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# iSER (iSCSI over RDMA) between two VMs' kernels, each VM with the RDMA
# device $KIND (sroce or rxe): LIO's iSCSI target with an iSER portal
# (ib_isert) on one VM, open-iscsi's initiator over an iser iface
# (ib_iser) on the other, once each way. The LUN is a 64 MiB file on the
# target's tmpfs (fileio) whose first half holds a pattern both sides can
# make (ulp.sh's seeded generator). The initiator finds the target by
# SendTargets discovery over iSER and logs in (its session's transport
# iser, its SCSI host iscsi_iser, a kernel QP of its own on its device),
# reads the first half from the disk that appears and checks every byte,
# writes a second pattern behind it and reads that back, all O_DIRECT,
# and logs out. The target sees the initiator's session on its portal
# group while a kernel QP of ib_isert is on its device; once both have
# gone, it checks the second half of its file and that LIO counted the
# I/O on the LUN (read_mbytes, write_mbytes). Then each side takes itself
# down, each step checked: logout, iscsid stopped, the configfs tree
# removed in reverse order, ib_iser, ib_isert and LIO unloaded, and the
# device's kernel PDs, QPs, MRs and CQs (less ib_core's CQ pool, which
# keeps the ULPs' CQs until the device goes) back to their numbers from
# before.
#
# Set up as tests/cases/iser.sh does in one VM, with tests/lib.sh's
# iser_* and iscsi_* helpers: open-iscsi's database in /tmp bound over
# the read-only /etc/iscsi, iscsid in a session of its own (its shutdown
# killpg()s its process group, which would be the step's), demo mode on
# the target (any initiator, no CHAP), LIO's backends unloaded before
# target_core_mod. The SendTargets discovery is a session of its own,
# whose QP comes and goes before the login's: the target waits for the
# initiator's session on tpgt_1 (dynamic_sessions), not for the first
# QP, as ulp_srp.sh's peer_session does.
#
# Written without a VM, not run yet; expected to take about as long as
# ulp_srp.sh (30 to 70 s a direction under TCG).
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
busybox ping -c 1 -W 10 "$PEER4" >/dev/null

iser_iqn=iqn.2026-11.org.sroce:pair-iser
iser_ini=iqn.2026-11.org.sroce:pair-initiator
iser_iface=pair-iser
iser_img=/tmp/pair-iser.img	# the LUN's file
iser_bs=/sys/kernel/config/target/core/fileio_0/pair_iser	# its backstore
iser_etc=/tmp/pair-iser-etc	# bound over /etc/iscsi
iser_log=/tmp/pair-iscsid.log	# iscsid's output
half=$((32 * 1024 * 1024))
export dev iser_iqn iser_ini iser_iface iser_img iser_bs iser_etc iser_log half

# iser_sessions: the initiators with a session on the target's tpgt_1
iser_sessions() {
	tr -d '\0' < "/sys/kernel/config/target/iscsi/$iser_iqn/tpgt_1/dynamic_sessions" \
		2>/dev/null
}
# iser_peer QPS: wait until $iser_ini has a session on tpgt_1 with kernel
# QPs on $dev above QPS (their number before), then until both have gone;
# say which did not happen
iser_peer_in() { grep -qxF "$iser_ini" <<<"$(iser_sessions)" && qps_above "$1"; }
iser_peer_out() { [ -z "$(iser_sessions)" ] && qps_at "$1"; }
iser_peer() {
	wait_for 240 iser_peer_in "$1" || { echo "no iSER session of $iser_ini" \
		"(sessions on tpgt_1: '$(iser_sessions)'; kernel QPs on $dev:" \
		"$(kernel_qps), $1 before)"; return 1; }
	wait_for 240 iser_peer_out "$1" || { echo "the initiator's session stays" \
		"(sessions on tpgt_1: '$(iser_sessions)'; kernel QPs on $dev:" \
		"$(kernel_qps), $1 before)"; return 1; }
}

# iser_target_up: LUN 0 of $iser_iqn, the file $iser_img with pattern 1
# in its first half, and an iSER portal on $MY4:3260
iser_target_up() {
	modprobe -a target_core_mod target_core_file iscsi_target_mod ib_isert ||
		{ explain "modprobe target_core_mod target_core_file" \
			"iscsi_target_mod ib_isert"; return 1; }
	{ pattern 1 $half; head -c $half /dev/zero; } > $iser_img ||
		{ echo "write $iser_img"; return 1; }
	lio_fileio pair_iser $iser_img || return 1
	iser_target $iser_iqn $iser_bs "$MY4" ||
		{ explain "the iSCSI target $iser_iqn on $MY4"; return 1; }
}

# iser_target_down BASE: take down what iser_target_up made, unload, and
# require ulp_counts BASE
iser_target_down() {
	local rc=0
	iser_target_remove $iser_iqn "$MY4" || rc=1
	lio_fileio_remove pair_iser || rc=1
	unload_lio ib_isert iscsi_target_mod || { explain "LIO's modules"; rc=1; }
	back_to ulp_counts "$1" || rc=1
	rm -f $iser_img
	return $rc
}

# iser_serve: serve until an initiator has logged in and out, then check
# what it wrote
iser_serve() {
	local base qps rc=0 st r w
	base=$(ulp_counts "$dev")
	qps=$(kernel_qps)
	objects_listed "$base" "$qps" || return 1
	# The initiator's connection is a kernel QP of ib_isert here.
	iser_target_up && iser_peer "$qps" || rc=1
	if [ $rc = 0 ]; then
		st=/sys/kernel/config/target/iscsi/$iser_iqn/tpgt_1/lun/lun_0/statistics/scsi_tgt_port
		r=$(cat $st/read_mbytes) w=$(cat $st/write_mbytes)
		echo "LUN 0: $r MiB read, $w MiB written"
		[ "$r" -ge 64 ] && [ "$w" -ge 32 ] || { echo "LUN 0 counted $r MiB" \
			"read and $w MiB written, expected at least 64 and 32"; rc=1; }
	fi
	[ $rc != 0 ] || lun_written $iser_img || rc=1
	iser_target_down "$base" || rc=1
	return $rc
}

# iser_client TARGET: discover and log in to $iser_iqn at TARGET over
# iSER, ulp_disk_io, log out, stop iscsid, unload the initiator and
# require the device's kernel objects as they were
iser_client() {
	local t=$1 base qps rc=0 c
	for c in iscsid iscsiadm; do
		command -v $c >/dev/null ||
			{ echo "no $c (open-iscsi on the host)"; return 1; }
	done
	[ -d /etc/iscsi ] || { echo "no /etc/iscsi to bind over (open-iscsi)"; return 1; }
	base=$(ulp_counts "$dev")
	qps=$(kernel_qps)
	objects_listed "$base" "$qps" || return 1
	# sd_mod too: without udevd nothing loads it when the disk appears.
	modprobe -a ib_iser sd_mod || { explain "modprobe ib_iser sd_mod"; return 1; }
	iscsi_initiator $iser_etc $iser_ini $iser_log &&
		iser_iface $iser_iface || rc=1
	# Until the target listens and lists $iser_iqn.
	[ $rc != 0 ] || tries "discovery of $iser_iqn at $t" \
		iser_discover $iser_iqn "$t" $iser_iface || rc=1
	if [ $rc = 0 ]; then
		if ! iser_login $iser_iqn "$t" $iser_iface; then
			echo "($(iscsi_log $iser_log))"; rc=1
		elif ! qps_above "$qps"; then
			echo "no kernel QP of ib_iser on $dev after the login" \
				"($(kernel_qps), $qps before)"; rc=1
		elif ! wait_for 30 iscsi_disk_there $iser_iqn; then
			echo "no disk for LUN 0 after the login ($(iscsi_log $iser_log))"
			rc=1
		else
			ulp_disk_io "$(iscsi_disk $iser_iqn)" || rc=1
		fi
	fi
	# Log out, whatever happened; then iscsid and the bind go.
	if ! iscsi_no_session $iser_iqn; then
		iser_logout $iser_iqn "$t" $iser_iface ||
			{ echo "($(iscsi_log $iser_log))"; rc=1; }
	fi
	iscsid_stop
	if mountpoint -q /etc/iscsi; then
		umount /etc/iscsi || { echo "umount /etc/iscsi"; rc=1; }
	fi
	rm -rf $iser_etc $iser_log
	# The connection goes in a work item after the logout.
	if ! wait_for 30 unload_module ib_iser 2>/dev/null; then
		explain "ib_iser stays: refcount $(cat /sys/module/ib_iser/refcnt 2>&1)"
		rc=1
	fi
	back_to ulp_counts "$base" || rc=1
	return $rc
}
export_ulp_helpers
export -f lio_fileio lio_fileio_remove configfs_rm unload_lio iser_target \
	iser_target_remove iscsi_initiator iscsid_ready iscsi_log iscsid_stop \
	iser_iface iser_discover iser_login iser_logout iscsi_session sysfs_first \
	iscsi_no_session iscsi_disk iscsi_disk_there iser_sessions iser_peer_in \
	iser_peer_out iser_peer iser_target_up iser_target_down iser_serve \
	iser_client

# The initiator waits for the target itself.
STEP_LIMIT=300 STEP_TRIES=1
# Each VM sends 96 MiB, as SRP does: as the target its RDMA WRITEs of the
# two reads, as the initiator the write's data (the responses to the
# target's RDMA READs, or sent with the command).
ulp_both_ways iSER 24576 iser_serve iser_client \
	"iSER target %s, initiator %s: 32 MiB each way, every byte checked"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
