# NVMe over RDMA on loopback: the kernel's nvmet-rdma target and nvme-rdma
# host on sroce0 (kernel QPs and CQs, the DMA MR, fast registration with
# IB_WR_REG_MR, local and remote invalidation, rdma_cm). 64 MiB of random
# data written to a file-backed namespace and read back must match; then
# disconnect and unload.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.sroce:test
cfg=/sys/kernel/config/nvmet
img=/tmp/nvme-ns.img
cleanup() {
	nvme disconnect -n $nqn >/dev/null 2>&1
	rm -f $cfg/ports/1/subsystems/$nqn 2>/dev/null
	rmdir $cfg/ports/1 $cfg/subsystems/$nqn/namespaces/1 \
		$cfg/subsystems/$nqn 2>/dev/null
	modprobe -r nvme-rdma nvmet-rdma nvmet 2>/dev/null
	rm -f $img /tmp/nvme-pattern /tmp/nvme-readback
}
trap cleanup EXIT
modprobe -a rdma_cm nvmet nvmet-rdma nvme-rdma || fail "modprobe nvme modules"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
link_add sroce0 eth0
ip=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1 | head -1)

truncate -s 128M $img
mkdir $cfg/subsystems/$nqn || fail "nvmet subsystem"
echo 1 > $cfg/subsystems/$nqn/attr_allow_any_host
mkdir $cfg/subsystems/$nqn/namespaces/1
echo -n $img > $cfg/subsystems/$nqn/namespaces/1/device_path
# The image is on tmpfs, which has no O_DIRECT.
echo 1 > $cfg/subsystems/$nqn/namespaces/1/buffered_io
echo 1 > $cfg/subsystems/$nqn/namespaces/1/enable || fail "namespace enable"
nvmet_port $nqn "$ip"

out=$(timeout 60 nvme connect -t rdma -a $ip -s 4420 -n $nqn \
	--hostnqn=nqn.2026-11.org.sroce:host \
	--hostid=5e5e5e5e-0000-4000-8000-000000000001 2>&1) ||
	fail "nvme connect: $out (dmesg: $(dmesg | tail -5))"
dev=
for _ in $(seq 50); do
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat $c/subsysnqn 2>/dev/null)" = $nqn ] || continue
		for n in $c/nvme*n1 /sys/block/$(basename $c)n1; do
			[ -e "$n" ] && dev=/dev/$(basename $n)
		done
	done
	[ -b "$dev" ] && break
	sleep 0.2
done
[ -b "$dev" ] || fail "no namespace block device after connect"
# nvme-rdma registers its I/O buffers with fast-registration MRs.
frmrs=$(rdma -d resource show mr dev sroce0 | grep -c 'comm \[nvme_rdma\]')
[ "$frmrs" -gt 0 ] || fail "no nvme_rdma MRs: $(rdma -d resource show mr)"
head -c 64M /dev/urandom > /tmp/nvme-pattern
dd if=/tmp/nvme-pattern of=$dev bs=1M count=64 oflag=direct status=none ||
	fail "write to $dev"
echo 3 > /proc/sys/vm/drop_caches
dd if=$dev of=/tmp/nvme-readback bs=1M count=64 iflag=direct status=none ||
	fail "read from $dev"
cmp -s /tmp/nvme-pattern /tmp/nvme-readback || fail "data read back differs"
# And through the target's file: the bytes really went over RDMA to it.
cmp -s -n 67108864 /tmp/nvme-pattern $img || fail "namespace file differs"
nvme disconnect -n $nqn >/dev/null || fail "nvme disconnect"
