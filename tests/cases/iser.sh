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
cfg=/sys/kernel/config/target
tpg=$cfg/iscsi/$iqn/tpgt_1
bs=$cfg/core/fileio_0/sroce_lun	# the backstore
img=/tmp/iser-lun.img		# its file
etc=/tmp/iser-etc		# bound over /etc/iscsi
mib=$((1024 * 1024))
iscsid_pid=
sd_loaded=$([ -d /sys/module/sd_mod ] && echo 1)

# target_down: remove what the case built under $cfg, in reverse; fails
# if a step that had something to remove failed
target_down() {
	local rc=0 d np=$tpg/np/$ip:3260
	if [ -e "$np/iser" ] && [ "$(cat "$np/iser")" = 1 ]; then
		echo 0 > "$np/iser" || rc=1
	fi
	if [ -e "$tpg/enable" ] && [ "$(cat "$tpg/enable")" = 1 ]; then
		echo 0 > "$tpg/enable" || rc=1
	fi
	if [ -L "$tpg/lun/lun_0/sroce_lun" ]; then
		rm "$tpg/lun/lun_0/sroce_lun" || rc=1
	fi
	for d in "$tpg/lun/lun_0" "$np" "$tpg" "$cfg/iscsi/$iqn" "$cfg/iscsi" \
		"$bs" "$cfg/core/fileio_0"; do
		if [ -d "$d" ]; then
			rmdir "$d" || rc=1
		fi
	done
	return $rc
}
stop_iscsid() {
	[ -n "$iscsid_pid" ] || return 0
	kill "$iscsid_pid" 2>/dev/null
	timeout 30 tail --pid="$iscsid_pid" -f /dev/null ||
		kill -9 "$iscsid_pid" 2>/dev/null
	wait "$iscsid_pid" 2>/dev/null
	iscsid_pid=
}
cleanup() {
	if [ -n "$iscsid_pid" ]; then
		timeout 60 iscsiadm -m node -u >/dev/null 2>&1
		stop_iscsid
	fi
	mountpoint -q /etc/iscsi && umount /etc/iscsi
	[ -d $cfg ] && target_down 2>/dev/null
	# What the case loaded, what they pulled in, one at a time (a module
	# not loaded must not stop the others).
	for m in ib_iser ib_isert iscsi_target_mod target_core_file \
		target_core_iblock target_core_pscsi target_core_user \
		target_core_mod libiscsi scsi_transport_iscsi; do
		[ -d /sys/module/$m ] && modprobe -r $m 2>/dev/null
	done
	[ -n "$sd_loaded" ] || modprobe -r sd_mod 2>/dev/null
	rm -rf $etc $img /tmp/iser-pattern /tmp/iser-iscsid.log
}
trap cleanup EXIT

# own_counts DEV: the kernel's PDs, QPs and MRs on DEV, and its CQs that
# are not ib_core's (ib_mad's CQ and the CQ pool's are ib_core's)
own_counts() {
	local t cq out=''
	for t in pd qp mr; do
		out+="$t=$(kernel_objects $t "$1") "
	done
	cq=$(res_lines cq "$1" | grep -v ' pid ' | grep -vc 'comm \[ib_core\]')
	echo "${out}cq=$cq"
}
is_base() { [ "$(own_counts sroce0)" = "$base" ]; }
iscsid_ready() { grep -q '@ISCSIADM_ABSTRACT_NAMESPACE' /proc/net/unix; }
sessions() {
	find /sys/class/iscsi_session -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}
# session_disk: the block device of our session's LUN 0, if there is one
session_disk() {
	local s b
	for s in /sys/class/iscsi_session/session*; do
		[ "$(cat "$s/targetname" 2>/dev/null)" = "$iqn" ] || continue
		for b in "$s"/device/target*/*:0/block/*; do
			[ -e "$b" ] && echo "/dev/${b##*/}"
		done
	done
}
disk_ready() { dev=$(session_disk); [ -b "$dev" ]; }
no_disk() { ! [ -b "$dev" ]; }
no_sessions() { [ "$(sessions)" = 0 ]; }
listeners() { # the rdma_cm IDs bound to, or connected to, port 3260
	rdma resource show cm_id | grep -cE '(src|dst)-addr [^ ]*:3260( |$)'
}
iser_log() { echo "iscsid: $(tail -5 /tmp/iser-iscsid.log 2>/dev/null);" \
	"dmesg: $(dmesg | tail -8)"; }

for c in iscsid iscsiadm; do
	command -v $c >/dev/null || fail "no $c (open-iscsi on the host)"
done
[ -d /etc/iscsi ] || fail "no /etc/iscsi to bind over (open-iscsi)"

link_add sroce0 eth0
ip=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$ip" ] || fail "no IPv4 address on eth0"
# Before any iSCSI module: sroce0's own kernel objects (ib_mad's).
base=$(own_counts sroce0)
case $base in *'?'*) fail "rdma resource could not list sroce0's objects: $base" ;; esac
modprobe -a target_core_mod target_core_file iscsi_target_mod ib_isert \
	ib_iser sd_mod || fail "modprobe the LIO, iSER and sd modules"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
[ -d $cfg ] || fail "no $cfg after loading target_core_mod"

# The target: a 128 MiB file on tmpfs (like nvme_rdma.sh's namespace),
# LUN 0 of tpgt_1, demo mode (any initiator, no CHAP, writable), a portal
# on eth0's address with iSER on.
truncate -s 128M $img
mkdir -p $bs || fail "fileio backstore $bs"
echo "fd_dev_name=$img,fd_dev_size=$((128 * mib))" > $bs/control ||
	fail "configure the fileio backstore on $img"
echo 1 > $bs/enable || fail "enable the fileio backstore (dmesg: $(dmesg | tail -3))"
mkdir -p $tpg/lun/lun_0 || fail "iSCSI target $iqn, tpgt_1, lun_0"
ln -s $bs $tpg/lun/lun_0/sroce_lun || fail "map the backstore to lun_0"
mkdir "$tpg/np/$ip:3260" || fail "portal $ip:3260 (dmesg: $(dmesg | tail -3))"
echo 1 > "$tpg/np/$ip:3260/iser" ||
	fail "iSER on portal $ip:3260 (dmesg: $(dmesg | tail -3))"
expect_eq "the portal's iser attribute" 1 "$(cat "$tpg/np/$ip:3260/iser")"
for a in generate_node_acls=1 cache_dynamic_acls=1 authentication=0 \
	demo_mode_write_protect=0; do
	echo "${a#*=}" > "$tpg/attrib/${a%=*}" || fail "tpgt_1 attribute $a"
done
echo 1 > $tpg/enable || fail "enable tpgt_1"
n=$(listeners)
[ "$n" -ge 1 ] || fail "rdma_cm listeners on port 3260: expected at least 1" \
	"(ib_isert's, on sroce0), got $n: $(rdma resource show cm_id)"

# The initiator's writable configuration and iscsid.
mkdir -p $etc/nodes $etc/send_targets $etc/ifaces /run/lock/iscsi
echo "InitiatorName=$ini" > $etc/initiatorname.iscsi
cat > $etc/iscsid.conf <<EOF
node.startup = manual
node.session.auth.authmethod = None
node.session.timeo.replacement_timeout = $(tmo 20)
node.conn[0].timeo.login_timeout = $(tmo 15)
node.conn[0].timeo.logout_timeout = $(tmo 15)
node.conn[0].timeo.noop_out_interval = $(tmo 5)
node.conn[0].timeo.noop_out_timeout = $(tmo 10)
node.session.initial_login_retry_max = 2
node.session.scan = auto
EOF
mount --bind $etc /etc/iscsi || fail "bind $etc over /etc/iscsi"
# In its own session: iscsid's shutdown sends SIGTERM to its whole
# process group (killpg), which in the foreground would be this case's.
setsid iscsid -f > /tmp/iser-iscsid.log 2>&1 &
iscsid_pid=$!
wait_for 10 iscsid_ready || fail "iscsid did not start ($(iser_log))"
iscsiadm -m iface -I $iface -o new >/dev/null || fail "iscsiadm: new iface $iface"
iscsiadm -m iface -I $iface -o update -n iface.transport_name -v iser \
	>/dev/null || fail "iscsiadm: iface $iface to transport iser"
tn=$(iscsiadm -m iface -I $iface | awk '$1 == "iface.transport_name" { print $3 }')
expect_eq "transport of iface $iface" iser "$tn"

# Discovery and login, over iSER.
out=$(timeout "$(tmo 60)" iscsiadm -m discovery -t sendtargets \
	-p "$ip:3260" -I $iface 2>&1) ||
	fail "SendTargets discovery over iSER: $out ($(iser_log))"
grep -qx "$ip:3260,1 $iqn" <<<"$out" ||
	fail "discovery: expected '$ip:3260,1 $iqn', got '$out'"
out=$(timeout "$(tmo 120)" iscsiadm -m node -T $iqn -p "$ip:3260" -I $iface \
	--login 2>&1) || fail "iSER login: $out ($(iser_log))"
expect_eq "iSCSI sessions" 1 "$(sessions)"
out=$(iscsiadm -m session 2>&1)
grep -qx "iser: \[[0-9]*\] $ip:3260,1 $iqn (non-flash)" <<<"$out" ||
	fail "iscsiadm -m session: expected an iser session to $iqn, got '$out'"
grep -q 'Iface Transport: iser$' <<<"$(iscsiadm -m session -P 1)" ||
	fail "iscsiadm -m session -P 1 has no 'Iface Transport: iser':" \
	"$(iscsiadm -m session -P 1)"
s=$(readlink -f /sys/class/iscsi_session/session*/device)
expect_eq "SCSI host driver of the session" iscsi_iser \
	"$(cat "/sys/class/scsi_host/$(basename "$(dirname "$s")")/proc_name")"
# (each name ends in a NUL as well as a newline)
got=$(tr -d '\0' < $tpg/dynamic_sessions)
expect_eq "initiators with a session on the target" "$ini" "$got"
dev=
wait_for 30 disk_ready || fail "no disk for LUN 0 after login ($(iser_log))"
expect_eq "size of $dev" $((128 * mib)) "$(blockdev --getsize64 "$dev")"

# 64 MiB each way, and the bytes on sroce0.
head -c 64M /dev/urandom > /tmp/iser-pattern
sum=$(sha /tmp/iser-pattern)
sent0=$(port_counter sent_bytes)
timeout "$(tmo 180)" dd if=/tmp/iser-pattern of="$dev" bs=1M count=64 \
	oflag=direct conv=fsync status=none || fail "write 64 MiB to $dev ($(iser_log))"
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
out=$(timeout "$(tmo 60)" iscsiadm -m node -T $iqn -p "$ip:3260" -I $iface \
	--logout 2>&1) || fail "iSER logout: $out ($(iser_log))"
wait_for 30 no_sessions || fail "iSCSI sessions after logout: $(sessions)"
wait_for 10 no_disk || fail "$dev still there after logout"
stop_iscsid
umount /etc/iscsi || fail "umount /etc/iscsi"
target_down || fail "remove the configfs target: $(find $cfg -maxdepth 4)"
# The connections go in work items after logout: give them time.
rmmod_wait ib_iser
rmmod_wait ib_isert
wait_for 30 is_base || fail "kernel objects on sroce0 after teardown" \
	"(the CQ pool's aside): expected $base as before the case, got" \
	"$(own_counts sroce0): $(kernel_listing sroce0 | tr '\n' ';')"
expect_eq "rdma_cm IDs on port 3260 after teardown" 0 "$(listeners)"
link_delete_after iSER
