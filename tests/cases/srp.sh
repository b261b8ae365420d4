# SRP over RoCE on loopback: the LIO target ib_srpt and the initiator
# ib_srp on sroce0, connected through rdma_cm (kernel QPs and CQs, the
# initiator's fast-registration MRs, the target's RDMA READ and WRITE).
# A 128 MiB ramdisk LUN (rd_mcp) configured through configfs shows up as a
# SCSI disk of vendor LIO-ORG; 64 MiB of random data written to it and read
# back after dropping the caches must match. Then a logout under I/O: while
# a reader runs, the SRP remote port is deleted; the reader must end (its
# reads done or failed, not hung), a second login must work and the data
# read through it must still match. The traffic went over sroce0 (its
# payload counters grew by at least what was written and read); logout,
# the configfs tree removed in reverse order and ib_srp and ib_srpt
# unloaded leave sroce0's resources as they were before.
#
# Random direct I/O of 4 to 64 KiB with fio's CRC32C verification runs
# on the disk past the pattern.
#
# How it runs in our VM (Debian 6.1 and 6.12, about 35 s under TCG):
# - ib_srpt has no rdma_cm_port module parameter on these kernels: the
#   rdma_cm listener is set in configfs (discovery_auth/rdma_cm_port).
# - ib_srpt names the target port after GID 0 (fe80::X gives X as
#   xxxx:xxxx:xxxx:xxxx); an rdma_cm login to it is known by its IPv4
#   address, which names the ACL.
# - No udev: sd_mod is loaded here and the disk is found through /sys.
# - target_core_mod loads target_core_{iblock,file,pscsi,user} at the
#   first backstore; they hold it, so they are unloaded first.
# - ib_core's CQ pool keeps ib_srpt's and ib_srp's CQs until the device
#   goes: the counts leave ib_core's CQs out.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cfg=/sys/kernel/config/target
rd=$cfg/core/rd_mcp_0/ramdisk0
cm_port=5555
pattern=/tmp/srp-pattern
backends="target_core_iblock target_core_file target_core_pscsi target_core_user"
mib=1048576

# Everything this case may have set up, undone in reverse order, quietly:
# the end of the case does the same step by step with checks.
cleanup() {
	local p
	[ -n "${rpid:-}" ] && kill "$rpid" 2>/dev/null
	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p/delete" ] && echo 1 > "$p/delete"
	done 2>/dev/null
	sleep 1
	modprobe -r ib_srp scsi_transport_srp 2>/dev/null
	[ -n "${tpg:-}" ] && srpt_port_remove "$tpg" >/dev/null 2>&1
	srpt_close >/dev/null 2>&1
	rmdir $rd $cfg/core/rd_mcp_0 2>/dev/null
	for m in ib_srpt $backends target_core_mod; do
		[ -d "/sys/module/$m" ] && modprobe -r "$m" 2>/dev/null
	done
	rm -f $pattern
}
trap cleanup EXIT

# the PDs on sroce0 that kernel module $1 allocated
pds_of() { rdma -d resource show pd dev sroce0 | grep -c "comm \[$1\]"; }

link_add sroce0 eth0
ip=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$ip" ] || fail "eth0 has no IPv4 address"
ulp_base_save ulp_objects

# The target: LIO, ib_srpt, a ramdisk. sd_mod too: without udevd nothing
# loads it when the disk appears.
modprobe -a configfs target_core_mod sd_mod rdma_cm ||
	fail "modprobe target_core_mod sd_mod rdma_cm"
opts=()
modinfo -F parm ib_srpt | grep -q '^rdma_cm_port:' &&
	opts+=("rdma_cm_port=$cm_port")
modprobe ib_srpt "${opts[@]}" || fail "modprobe ib_srpt ${opts[*]}"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
[ -d $cfg/core ] || fail "no $cfg/core after loading target_core_mod"

mkdir -p $rd || fail "mkdir $rd"
# 32768 pages of 4 KiB: 128 MiB
echo rd_pages=32768 > $rd/control || fail "rd_mcp control"
echo 1 > $rd/enable || fail "enable the rd_mcp device (dmesg: $(dmesg | tail -3))"

srpt_listen $cm_port || fail "ib_srpt's listener"
expect_eq "ib_srpt's rdma_cm port" $cm_port \
	"$(cat $cfg/srpt/discovery_auth/rdma_cm_port)"

# The target port is named after sroce0's GID 0, as ib_srpt named it; an
# rdma_cm login is known to a port named by GUID by its IP address.
tpg=$(srpt_tpg sroce0)
srpt_port sroce0 $rd "$ip" || fail "ib_srpt's port on sroce0"
guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
[ "$guid" != 0x0000000000000000 ] || fail "ib_srpt's service GUID is 0"
expect_eq "ib_srpt PDs on sroce0" 1 "$(pds_of ib_srpt)"

# The initiator.
modprobe ib_srp || fail "modprobe ib_srp"
host=/sys/class/infiniband_srp/srp-sroce0-1
[ -e $host/add_target ] || fail "no $host/add_target after modprobe ib_srp"
login="id_ext=$guid,ioc_guid=$guid,dest=$ip:$cm_port,src=$ip"

# payload bytes sroce0 sent since the last `mark`
mark() { sent0=$(port_counter sent_bytes); }
sent_since() { echo $(( $(port_counter sent_bytes) - ${sent0:?} )); }

mark
srp_login sroce0 "$login" || fail "ib_srp login '$login' refused (dmesg: $(dmesg | tail -5))"
wait_for 30 srp_disk_there sroce0 ||
	fail "no LIO-ORG disk on an SRP host of sroce0 after login (hosts: $(ls /sys/class/scsi_host))"
disk=$(srp_disk sroce0)
expect_eq "ib_srp PDs on sroce0" 1 "$(pds_of ib_srp)"
expect_eq "size of $disk" $((128 * mib)) "$(blockdev --getsize64 "$disk")"
expect_eq "model of $disk" RAMDISK-MCP \
	"$(tr -d ' ' < "/sys/block/${disk#/dev/}/device/model")"

# 64 MiB of random data there and back.
head -c $((64 * mib)) /dev/urandom > $pattern
want=$(sha256sum < $pattern)
dd if=$pattern of="$disk" bs=1M count=64 oflag=direct status=none ||
	fail "write 64 MiB to $disk"
echo 3 > /proc/sys/vm/drop_caches
got=$(dd if="$disk" bs=1M count=64 status=none | sha256sum)
expect_eq "sha256 of the 64 MiB read back from $disk" "$want" "$got"
moved=$(sent_since)
[ "$moved" -ge $((128 * mib)) ] ||
	fail "sroce0 sent $moved payload bytes for 64 MiB written and 64 MiB read (expected at least $((128 * mib)))"
# Random direct I/O of 4 to 64 KiB, verified, past the pattern.
fio_verify "$disk" 64M

# Logout under I/O: a reader reads the disk over and over until a read
# fails; deleting the remote port must end it.
reader() {
	# (its last dd's error, once the disk has gone, is expected)
	while dd if="$1" of=/dev/null bs=1M count=128 iflag=direct \
		status=none 2>/dev/null; do
		:
	done
}
reader "$disk" &
rpid=$!
mark
reading() { [ "$(sent_since)" -ge $((8 * mib)) ]; }
wait_for 30 reading || fail "the reader moved only $(sent_since) bytes in 30 s"
kill -0 $rpid 2>/dev/null || fail "the reader stopped before the logout"
n=$(srp_shost sroce0)
rport=/sys/class/srp_remote_ports/port-$n:1
[ -e "$rport/delete" ] || fail "no $rport (remote ports: $(ls /sys/class/srp_remote_ports))"
echo 1 > "$rport/delete" || fail "write to $rport/delete"
reader_gone() { ! kill -0 "$rpid" 2>/dev/null; }
wait_for 60 reader_gone ||
	fail "the reader of $disk still runs 60 s after its remote port was deleted"
wait $rpid
rpid=
wait_for 30 srp_no_shost sroce0 || fail "SCSI host $n still there 30 s after the logout"
[ -e "/sys/block/${disk#/dev/}" ] && fail "$disk still there after the logout"

# Log in again: the old target leaves ib_srp's list a little after its
# SCSI host (add_target says EEXIST until then).
wait_for 30 srp_login sroce0 "$login" 2>/dev/null ||
	fail "second login refused for 30 s (dmesg: $(dmesg | tail -5))"
wait_for 30 srp_disk_there sroce0 || fail "no LIO-ORG disk after the second login"
disk=$(srp_disk sroce0)
echo 3 > /proc/sys/vm/drop_caches
got=$(dd if="$disk" bs=1M count=64 iflag=direct status=none | sha256sum)
expect_eq "sha256 of the 64 MiB read after logging in again" "$want" "$got"

# Teardown, each step checked: log out, unload the initiator, take the
# configfs tree down in the reverse order of its making, unload the target.
srp_down sroce0 || fail "the initiator's teardown"
srpt_down "$tpg" || fail "the target's teardown"
tpg=
rmdir $rd $cfg/core/rd_mcp_0 || fail "remove the ramdisk $rd"
# The first backstore made target_core_mod load every backend it knows
# (transport_subsystem_check_init); they hold it.
unload_lio ib_srpt || fail "unload LIO"

# sroce0 has what it had before: ib_mad's objects, nothing of SRP's.
ulp_base_check "after unloading SRP"
