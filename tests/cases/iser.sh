# iSCSI over RDMA (iSER) on loopback: the kernel's LIO target with an iSER
# portal (ib_isert) and open-iscsi's initiator (ib_iser) on sroce0, a
# 128 MiB file-backed LUN. It proves that SendTargets discovery and login
# run over iSER (the session's transport is iser, its SCSI host is
# iscsi_iser, the target sees the initiator's session); that 64 MiB of
# random data written to the new disk with O_DIRECT read back unchanged
# after the page cache is dropped, and landed in the target's backing
# file (iSER's RDMA READ and WRITE by the target, fast registration by the
# initiator); that sroce0 carried them (its byte counters); and a clean
# teardown: logout, the configfs target removed, ib_iser and ib_isert
# unloaded, sroce0's kernel PDs, QPs and MRs and the ULPs' own CQs back to
# what they were, no rdma_cm ID left on port 3260, and "rdma link delete"
# completing.
#
# Random direct I/O of 4 to 64 KiB with fio's CRC32C verification runs
# on the disk past the pattern.
#
# How it runs in our VM (Debian 6.1 and 6.12, about 30 s under TCG):
# - /etc/iscsi is read-only (the host's root) and open-iscsi's database
#   path is compiled in: a directory of /tmp with our initiatorname.iscsi
#   and iscsid.conf is bound over it. That iscsid.conf has no
#   iscsid.startup line, so iscsiadm never tries systemctl.
# - iscsid runs in the foreground in its own session: on SIGTERM it
#   sends SIGTERM to its whole process group, which would be this case's.
# - No udev: sd_mod is loaded here; /dev/sdX comes from devtmpfs.
# - target_core_mod loads target_core_{iblock,file,pscsi,user} at the
#   first backstore; they hold it, so they are unloaded first.
# - ib_iser and ib_isert take their CQs from ib_core's CQ pool, which keeps
#   them until the device goes: the counts leave ib_core's CQs out, and
#   "rdma link delete" at the end frees them (it WARNs if one is in use,
#   which fails the case).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
iqn=iqn.2026-11.org.sroce:iser-target
ini=iqn.2026-11.org.sroce:iser-initiator
iface=sroce-iser
tpg=/sys/kernel/config/target/iscsi/$iqn/tpgt_1
bs=/sys/kernel/config/target/core/fileio_0/sroce_lun	# the backstore
img=/tmp/iser-lun.img		# its file
etc=/tmp/iser-etc		# bound over /etc/iscsi
log=/tmp/iser-iscsid.log	# iscsid's output
mib=$((1024 * 1024))
iscsid_pid=
sd_loaded=$([ -d /sys/module/sd_mod ] && echo 1)

cleanup() {
	if [ -n "$iscsid_pid" ]; then
		timeout 60 iscsiadm -m node -u >/dev/null 2>&1
		iscsid_stop
	fi
	mountpoint -q /etc/iscsi && umount /etc/iscsi
	iser_target_remove $iqn "$ip" >/dev/null 2>&1
	lio_fileio_remove sroce_lun >/dev/null 2>&1
	# What the case loaded, what they pulled in, one at a time (a module
	# not loaded must not stop the others).
	for m in ib_iser ib_isert iscsi_target_mod target_core_file \
		target_core_iblock target_core_pscsi target_core_user \
		target_core_mod libiscsi scsi_transport_iscsi; do
		[ -d /sys/module/$m ] && modprobe -r $m 2>/dev/null
	done
	[ -n "$sd_loaded" ] || modprobe -r sd_mod 2>/dev/null
	rm -rf $etc $img /tmp/iser-pattern $log
}
trap cleanup EXIT

listeners() { # the rdma_cm IDs bound to, or connected to, port 3260
	rdma resource show cm_id | grep -cE '(src|dst)-addr [^ ]*:3260( |$)'
}
disk_ready() { dev=$(iscsi_disk $iqn); }
no_disk() { ! [ -b "$dev" ]; }

need_iscsi_tools
link_add sroce0 eth0
ip=$(ipv4_of eth0)
[ -n "$ip" ] || fail "no IPv4 address on eth0"
# Before any iSCSI module: sroce0's own kernel objects (ib_mad's).
ulp_base_save ulp_objects
modprobe -a target_core_mod target_core_file iscsi_target_mod ib_isert \
	ib_iser sd_mod || fail "modprobe the LIO, iSER and sd modules"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
[ -d /sys/kernel/config/target ] ||
	fail "no /sys/kernel/config/target after loading target_core_mod"

# The target: a 128 MiB file on tmpfs (like nvme_rdma.sh's namespace),
# LUN 0 of tpgt_1, demo mode, a portal on eth0's address with iSER on.
truncate -s 128M $img
lio_fileio sroce_lun $img || fail "the target's backstore"
iser_target $iqn $bs "$ip" || fail "the iSCSI target with an iSER portal"
n=$(listeners)
[ "$n" -ge 1 ] || fail "rdma_cm listeners on port 3260: expected at least 1" \
	"(ib_isert's, on sroce0), got $n: $(rdma resource show cm_id)"

# The initiator's writable configuration, iscsid and an iser iface.
iscsi_initiator $etc $ini $log || fail "the iSCSI initiator"
iser_iface $iface || fail "the iser iface"

# Discovery and login, over iSER.
iser_discover $iqn "$ip" $iface || fail "discovery ($(iscsi_log $log))"
iser_login $iqn "$ip" $iface || fail "login ($(iscsi_log $log))"
n=$(find /sys/class/iscsi_session -mindepth 1 -maxdepth 1 | wc -l)
expect_eq "iSCSI sessions" 1 "$n"
# (each name ends in a NUL as well as a newline)
got=$(tr -d '\0' < $tpg/dynamic_sessions)
expect_eq "initiators with a session on the target" "$ini" "$got"
dev=
wait_for 30 disk_ready || fail "no disk for LUN 0 after login ($(iscsi_log $log))"
expect_eq "size of $dev" $((128 * mib)) "$(blockdev --getsize64 "$dev")"

# 64 MiB each way, and the bytes on sroce0.
head -c 64M /dev/urandom > /tmp/iser-pattern
sum=$(sha /tmp/iser-pattern)
sent0=$(port_counter sent_bytes)
timeout "$(tmo 180)" dd if=/tmp/iser-pattern of="$dev" bs=1M count=64 \
	oflag=direct conv=fsync status=none ||
	fail "write 64 MiB to $dev ($(iscsi_log $log))"
echo 3 > /proc/sys/vm/drop_caches
got=$(timeout "$(tmo 180)" dd if="$dev" bs=1M count=64 iflag=direct \
	status=none | sha256sum | cut -d' ' -f1)
expect_eq "SHA-256 of 64 MiB read back from $dev" "$sum" "$got"
# And in the target's file: the bytes went over iSER to it.
expect_eq "SHA-256 of the first 64 MiB of the target's file" "$sum" \
	"$(head -c 64M $img | sha256sum | cut -d' ' -f1)"
sent=$(( $(port_counter sent_bytes) - sent0 ))
# One device: both sides' packets are counted once; 64 MiB each way.
[ "$sent" -ge $((2 * 64 * mib)) ] || fail "sroce0 sent_bytes grew by $sent," \
	"expected at least $((2 * 64 * mib)) for 64 MiB written and read"
# Random direct I/O of 4 to 64 KiB, verified, past the pattern.
fio_verify "$dev" 64M

# Teardown, each step checked.
iser_logout $iqn "$ip" $iface || fail "logout ($(iscsi_log $log))"
wait_for 10 no_disk || fail "$dev still there after logout"
iscsid_stop
umount /etc/iscsi || fail "umount /etc/iscsi"
iser_target_remove $iqn "$ip" || fail "remove the configfs target"
lio_fileio_remove sroce_lun || fail "remove the backstore"
# The connections go in work items after logout: give them time.
rmmod_wait ib_iser
rmmod_wait ib_isert
wait_for 30 ulp_base_is
ulp_base_check "after iSER"
expect_eq "rdma_cm IDs on port 3260 after teardown" 0 "$(listeners)"
link_delete_after iSER
