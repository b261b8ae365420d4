# NVMe over RDMA with a file system on each end: nvmet-rdma serves a
# 128 MiB namespace whose file lives on ext4 (a loop-mounted image, so that
# nvmet's file backend uses O_DIRECT: no buffered_io, which tmpfs would
# need), and nvme-rdma's namespace on sroce0 carries an ext4 of its own.
# Files written there must read back intact: after a controller reset in
# the middle of a stream of O_DIRECT writes (nvme-rdma tears down and
# reconnects every queue, the namespace stays and the writes must all
# succeed), after e2fsck, and after a full disconnect and connect. The
# traffic went over sroce0 (its payload counters grew by at least the file
# data moved); unmounting, disconnecting, removing the nvmet configuration
# and unloading the modules leave sroce0's resources as they were.
#
# Passes on Debian 6.1 and 6.12 (about 30 s under TCG; first run 2026-11-26).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.sroce:fs
cfg=/sys/kernel/config/nvmet
img=/tmp/nvme-fs-backing.img	# the target side's ext4 image
back=/tmp/nvme-fs-backing	# where it is mounted
ns=$back/ns.img			# the namespace's file, on that ext4
mnt=/tmp/nvme-fs-mnt		# the host side's ext4, on the namespace
src=/tmp/nvme-fs-src		# small files to copy there
pattern=/tmp/nvme-fs-pattern	# 48 MiB: 6 slices of 8 MiB the writer writes
manifest=/tmp/nvme-fs.sha256
progress=/tmp/nvme-fs-progress stop=/tmp/nvme-fs-stop
mib=1048576
loop=

cleanup() {
	[ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null
	umount $mnt 2>/dev/null
	nvme disconnect -n $nqn >/dev/null 2>&1
	rm -f $cfg/ports/1/subsystems/$nqn 2>/dev/null
	rmdir $cfg/ports/1 $cfg/subsystems/$nqn/namespaces/1 \
		$cfg/subsystems/$nqn 2>/dev/null
	modprobe -r nvme-rdma nvmet-rdma nvmet 2>/dev/null
	umount $back 2>/dev/null
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	rm -rf $img $src $pattern $manifest $progress $stop
	rmdir $back $mnt 2>/dev/null
}
trap cleanup EXIT

connect() {
	local out
	out=$(timeout "$(tmo 60)" nvme connect -t rdma -a "$ip" -s 4420 -n $nqn \
		--hostnqn=nqn.2026-11.org.sroce:host \
		--hostid=5e5e5e5e-0000-4000-8000-000000000002 2>&1) ||
		fail "nvme connect: $out (dmesg: $(dmesg | tail -5))"
	wait_for 10 nvme_ns_there $nqn ||
		fail "no block device of $nqn 10 s after connect ($(ls /sys/block))"
	dev=$(nvme_ns_dev $nqn)
	ctrl=$(nvme_ctrl_of $nqn) || fail "no rdma controller of $nqn in /sys/class/nvme"
}
verify() { # WHEN: every file on $mnt has the bytes it was written with
	local out
	echo 3 > /proc/sys/vm/drop_caches
	out=$(cd $mnt && sha256sum -c --quiet $manifest 2>&1) ||
		fail "files on $dev $1: $out"
}

modprobe -a loop ext4 rdma_cm nvmet nvmet-rdma nvme-rdma ||
	fail "modprobe loop ext4 rdma_cm nvmet nvmet-rdma nvme-rdma"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
link_add sroce0 eth0
ip=$(ipv4_of eth0)
[ -n "$ip" ] || fail "eth0 has no IPv4 address"
ulp_base_save ulp_objects

# The target's file system: ext4 on a loop device over a tmpfs file.
truncate -s 256M $img
mkfs.ext4 -q -F $img || fail "mkfs.ext4 on $img"
loop=$(losetup -f --show $img) || fail "losetup $img"
mkdir -p $back $mnt
mount -t ext4 "$loop" $back || fail "mount $loop (ext4) on $back"
dd if=/dev/zero of=$back/probe bs=4k count=1 oflag=direct status=none ||
	fail "no O_DIRECT on the loop-mounted ext4"
rm $back/probe
fallocate -l 128M $ns || fail "fallocate 128 MiB for $ns"

mkdir $cfg/subsystems/$nqn || fail "nvmet subsystem"
echo 1 > $cfg/subsystems/$nqn/attr_allow_any_host
mkdir $cfg/subsystems/$nqn/namespaces/1
echo -n $ns > $cfg/subsystems/$nqn/namespaces/1/device_path
expect_eq "nvmet buffered_io (O_DIRECT on the file)" 0 \
	"$(cat $cfg/subsystems/$nqn/namespaces/1/buffered_io)"
echo 1 > $cfg/subsystems/$nqn/namespaces/1/enable ||
	fail "namespace enable on $ns (dmesg: $(dmesg | tail -3))"
nvmet_port $nqn "$ip"

sent0=$(port_counter sent_bytes)
connect
expect_eq "size of $dev" $((128 * mib)) "$(blockdev --getsize64 "$dev")"

# The host's file system on the namespace, and files on it.
mkfs.ext4 -q -F -E nodiscard "$dev" || fail "mkfs.ext4 on $dev"
mount -t ext4 "$dev" $mnt || fail "mount $dev on $mnt"
mkdir -p $src $mnt/w
for i in $(seq 64); do
	head -c $((RANDOM * 2 + i)) /dev/urandom > "$src/f$i"
done
head -c $((48 * mib)) /dev/urandom > $pattern
(cd /tmp && sha256sum nvme-fs-src/*) > $manifest
for k in 0 1 2 3 4 5; do
	h=$(dd if=$pattern bs=1M skip=$((k * 8)) count=8 status=none | sha256sum)
	echo "${h%% *}  w/w$k" >> $manifest
done
cp -a $src $mnt/ || fail "copy the small files to $mnt"
sync

# Writes under a controller reset: the writer writes the slices of the
# pattern to w/w0..w5 in turn, O_DIRECT, until told to stop.
writer() {
	local i=0 k
	until [ -e $stop ]; do
		k=$((i % 6))
		dd if=$pattern of=$mnt/w/w$k bs=1M skip=$((k * 8)) count=8 \
			oflag=direct status=none || return 1
		i=$((i + 1))
		echo $i > $progress
	done
}
done_writes() { cat $progress 2>/dev/null || echo 0; }
echo 0 > $progress
writer &
wpid=$!
started() { [ "$(done_writes)" -ge 1 ]; }
wait_for 60 started || fail "the writer wrote no 8 MiB slice in 60 s"
kill -0 $wpid 2>/dev/null || fail "the writer stopped before the reset"
creating() { klog | grep -c "nvme $ctrl: creating [0-9]* I/O queues"; }
conns=$(creating)
echo 1 > /sys/class/nvme/"$ctrl"/reset_controller ||
	fail "reset_controller of $ctrl (dmesg: $(dmesg | tail -5))"
live() { [ "$(cat /sys/class/nvme/"$ctrl"/state)" = live ]; }
wait_for 30 live ||
	fail "$ctrl is $(cat /sys/class/nvme/"$ctrl"/state) 30 s after the reset, not live"
expect_eq "connections of $ctrl's I/O queues after one reset" \
	$((conns + 1)) "$(creating)"
at=$(done_writes)
enough() { # two more slices after the reset, every slice at least once
	local n
	n=$(done_writes)
	{ [ "$n" -ge $((at + 2)) ] && [ "$n" -ge 6 ]; } || ! kill -0 "$wpid" 2>/dev/null
}
wait_for 120 enough || fail "the writer stalled after the reset at $(done_writes) slices"
touch $stop
wait $wpid
rc=$?
wpid=
[ $rc = 0 ] || fail "a write of the writer failed across the reset (dmesg: $(dmesg | tail -5))"
writes=$(done_writes)
sync
verify "after the reset"

# The file system is consistent, and it all survives a full reconnect.
umount $mnt || fail "umount $mnt"
out=$(e2fsck -f -n "$dev" 2>&1) || fail "e2fsck of $dev after the reset: $out"
nvme disconnect -n $nqn >/dev/null || fail "nvme disconnect"
wait_for 10 nvme_no_ctrl $nqn ||
	fail "controller $(nvme_ctrl_of $nqn) still there after disconnect"
connect
mount -t ext4 "$dev" $mnt || fail "mount $dev on $mnt after the reconnect"
verify "after disconnect and connect"
umount $mnt || fail "umount $mnt"

# At least the slices written and the two reads of them went over sroce0.
moved=$(( $(port_counter sent_bytes) - sent0 ))
least=$(( (writes * 8 + 2 * 48) * mib ))
[ "$moved" -ge $least ] ||
	fail "sroce0 sent $moved payload bytes; the files alone moved $least"

# Teardown, each step checked.
nvme disconnect -n $nqn >/dev/null || fail "nvme disconnect"
wait_for 10 nvme_no_ctrl $nqn ||
	fail "controller $(nvme_ctrl_of $nqn) still there after disconnect"
nvmet_remove $nqn
umount $back || fail "umount $back"
losetup -d "$loop" || fail "losetup -d $loop"
loop=
ulp_base_check "after unloading NVMe"
