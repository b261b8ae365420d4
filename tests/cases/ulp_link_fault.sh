# Link faults under kernel RDMA clients on loopback (issue 35 item 4), for
# NVMe-oF (nvmet-rdma and nvme-rdma) and NFSv4.2 over RDMA (knfsd with
# svcrdma and xprtrdma; SRP and iSER: ulp_link_fault_scsi.sh), both ends
# in this VM on sroce0 over eth0. For each
# client a writer runs: it writes 4 slices of 4 MiB to the same offsets
# again and again, O_DIRECT, from one of two random patterns in turn, and
# counts the writes that completed. Two faults hit it while it runs:
# (a) eth0 is set down for 3 s, then up. The port must go DOWN and come
#     back ACTIVE; no write may fail (NVMe: the controller is kept for
#     ctrl_loss_tmo and I/O waits meanwhile; NFS: a hard mount retries); the
#     writes go on after the link returns. sroce0 sends nothing while its
#     port is DOWN, loopback included (send_port_down counts the drops), so
#     the I/O stops: the RC QPs' transport timers resend (the RDMA CM's
#     RoCE timeout is 2 s, with 7 retries for nvme-rdma and 6 for
#     xprtrdma, about 15 s in all), and the first resend after eth0 is
#     back carries the I/O on: both clients connect to eth0's IPv4
#     address, whose GID stays. An outage longer than the retries fails
#     the QPs with RETRY_EXC and the clients reconnect (NVMe within
#     ctrl_loss_tmo, 60 s, every 1 s; NFS over a new connection), and so
#     would any outage of a connection on an IPv6 GID: going down removes
#     eth0's IPv6 addresses, ib_core deletes their GIDs, and a path on one
#     sends nothing more (send_no_route) even once the address is back.
# (b) "rdma link delete sroce0", then "rdma link add". The delete must
#     return (every kernel client lets the device go). NVMe: nvme-rdma
#     deletes the controller, so the writer ends with an I/O error; after
#     the link is back and the nvmet port is linked again (nvmet drops a
#     listener bound to an address when its device goes), a new connect
#     works. NFS: the hard mount stalls, then resumes over a new connection
#     (mountstats counts one more connect) once sroce0 is back.
# Before each fault the writer has completed a write and sroce0 is carrying
# its data (sent_bytes grew), so the fault hits I/O in flight. After each,
# every slice holds what the last write the writer saw complete wrote to
# it (the slice of a write that failed is not checked), on the target's or
# the server's own copy and, through a new connection or mount, as the
# client reads it. Each client's teardown then brings sroce0's kernel PDs,
# CQs, QPs and MRs back to what they were before (ib_core's CQ pool
# aside), with no rdma_cm ID left on its port, and at the end
# "rdma link delete" completes. The runner fails the case on any kernel
# report or taint.
#
# Passed on Debian 6.1 and 6.12 (35 to 65 s under TCG) before sroce
# dropped packets on a DOWN port; not yet run since. What it found:
# - sroce passed loopback packets whatever the port state
#   (sroce_pkt_xmit): sroce0 carried about 50 MB in the 3 s eth0 was
#   down. It now drops them (send_port_down), and the "note:" lines say
#   how many bytes moved (none), how many packets were dropped, and how
#   many times each client connected again (run the case through a
#   wrapper that fails to see them). rdma_rxe drops every packet for lack
#   of a route and errors the QP at once (LOC_QP_OP_ERR), which makes (a)
#   a reconnect there; tests/cases/port_down_loopback.sh proves sroce's
#   drop with verbs.
# - nvme-rdma fails the writer's I/O with EIO once its controller is
#   deleted (native multipath, no path left); "rdma link delete" returns
#   within a second under both clients; NFS resumes about 3 s after
#   sroce0 is back.
# - The writer's dd has conv=nocreat: on 6.1 the disk went between two
#   writes, and a dd without it made a regular file /dev/nvme0n1, where
#   the new connection's disk could then not appear.
# Look first, when it fails:
# - at the kernel log the runner prints: a WARN in sroce_dealloc_driver
#   means a client left an object on the device; KASAN in sroce_rcv or the
#   task engine after a link delete means a loopback packet outlived its
#   QP;
# - at which step: "still blocked" is a device removal that never ended
#   (the sysrq stacks name the waiter), "stalled" a client that never
#   resumed, "differs in slice" a write lost or misplaced;
# - NFS set-up failures are those of tests/cases/nfs_rdma.sh (see its
#   header), NVMe ones those of tests/cases/nvme_rdma.sh.
# It needs nothing from the host that install-deps.sh does not install.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.sroce:fault
cfg=/sys/kernel/config/nvmet
img=/tmp/ulpf-ns.img		# the NVMe namespace's file (tmpfs)
exp=/tmp/ulpf-export		# the NFS server's tmpfs, exported
mnt=/tmp/ulpf-mnt		# the NFS client's mount point
state=/tmp/ulpf-state		# bound over /var/lib/nfs
mountd_log=/tmp/ulpf-mountd.log
nfs_port=20049
mountd_pid=""

cleanup() {
	local m
	fault_cleanup	# the writer (tests/lib.sh), eth0
	if mountpoint -q $mnt; then
		timeout 30 umount -f $mnt 2>/dev/null || umount -l $mnt 2>/dev/null
	fi
	mountpoint -q /var/lib/nfs && timeout 30 exportfs -ua 2>/dev/null
	[ -e /proc/fs/nfsd/threads ] && timeout 30 rpc.nfsd 0 2>/dev/null
	if [ -n "$mountd_pid" ]; then
		kill "$mountd_pid" 2>/dev/null
		wait "$mountd_pid" 2>/dev/null
	fi
	for m in /proc/fs/nfsd $exp /var/lib/nfs; do
		mountpoint -q "$m" && umount "$m"
	done
	nvme disconnect -n $nqn >/dev/null 2>&1
	rm -f $cfg/ports/1/subsystems/$nqn 2>/dev/null
	rmdir $cfg/ports/1 $cfg/subsystems/$nqn/namespaces/1 \
		$cfg/subsystems/$nqn 2>/dev/null
	for m in rpcrdma nfsv4 nfsd nfs nvme-rdma nvmet-rdma nvmet; do
		unload $m 2>/dev/null
	done
	rm -rf $img $exp $mnt $state $mountd_log
}
trap cleanup EXIT

command -v nvme >/dev/null || fail "no nvme (nvme-cli on the host)"
need_nfs_tools
link_add sroce0 eth0
ip=$(ipv4_of eth0)
[ -n "$ip" ] || fail "eth0 has no IPv4 address"
ulp_base_save ulp_objects

# The writer's patterns (tests/lib.sh: fault_init, writer_start...).
fault_init /tmp/ulpf

# (1) NVMe-oF: a namespace on a tmpfs file (buffered_io: tmpfs has no
# O_DIRECT), an nvmet-rdma port on eth0's address.
creating() { klog | grep -c "nvme $ctrl: creating [0-9]* I/O queues"; }
# The controller is kept for 60 s without a connection, retried every 1 s.
nvme_connect() { # WHEN
	local out
	out=$(timeout "$(tmo 60)" nvme connect -t rdma -a "$ip" -s 4420 -n $nqn \
		--hostnqn=nqn.2026-11.org.sroce:host \
		--hostid=5e5e5e5e-0000-4000-8000-000000000004 \
		--reconnect-delay=1 --ctrl-loss-tmo="$(tmo 60)" 2>&1) ||
		fail "nvme connect $1: $out (dmesg: $(dmesg | tail -5))"
	wait_for 10 nvme_ns_there $nqn ||
		fail "no block device of $nqn 10 s after connect $1" \
		"(/sys/block: $(ls /sys/block | tr '\n' ' '); /dev:" \
		"$(ls -l /dev/nvme* | tr '\n' ' '))"
	dev=$(nvme_ns_dev $nqn)
	ctrl=$(nvme_ctrl_of $nqn) || fail "no rdma controller of $nqn $1"
}
nvme_disconnect() { # WHEN
	nvme disconnect -n $nqn >/dev/null || fail "nvme disconnect $1"
	wait_for 10 nvme_no_ctrl $nqn ||
		fail "controller $(nvme_ctrl_of $nqn) still there $1"
}

modprobe -a rdma_cm nvmet nvmet-rdma nvme-rdma ||
	fail "modprobe rdma_cm nvmet nvmet-rdma nvme-rdma"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
truncate -s $((slices * smib))M $img
mkdir $cfg/subsystems/$nqn || fail "nvmet subsystem"
echo 1 > $cfg/subsystems/$nqn/attr_allow_any_host
mkdir $cfg/subsystems/$nqn/namespaces/1
echo -n $img > $cfg/subsystems/$nqn/namespaces/1/device_path
echo 1 > $cfg/subsystems/$nqn/namespaces/1/buffered_io
echo 1 > $cfg/subsystems/$nqn/namespaces/1/enable ||
	fail "namespace enable on $img"
nvmet_port $nqn "$ip"
nvme_connect "at first"

# (1a) eth0 down and up under the writes (tests/lib.sh: fault_flap).
conns=$(creating)
fault_flap NVMe "$dev" $img
expect_eq "state of $ctrl after eth0 down and up" live \
	"$(cat /sys/class/nvme/"$ctrl"/state)"
note "NVMe: $ctrl connected its I/O queues $(($(creating) - conns)) more times"
nvme_disconnect "after eth0 down and up"
nvme_connect "after eth0 down and up"
slices_verify "NVMe namespace read through a new connection" "$dev" "$n" -1 iflag=direct

# (1b) rdma link delete and add under the writes.
fault_delete NVMe "$dev"
wait_for 10 nvme_no_ctrl $nqn ||
	fail "NVMe: controller $(nvme_ctrl_of $nqn) still there after sroce0 went"
writes_fail NVMe "$dev" "its controller went"
link_back
# nvmet destroyed its listener with the device: link the port again.
rm $cfg/ports/1/subsystems/$nqn || fail "unlink the subsystem from port 1"
nvmet_port_link $nqn "$ip"
nvme_connect "after sroce0 came back"
slices_verify "NVMe target's file after rdma link delete" $img "$n" $skip
slices_verify "NVMe namespace read after rdma link delete" "$dev" "$n" $skip iflag=direct

nvme_disconnect "at the end"
nvmet_remove $nqn
wait_for 30 ulp_base_is
ulp_base_check "after NVMe"
expect_eq "rdma_cm IDs on port 4420 after NVMe" 0 "$(cm_ids 4420)"
rm -f $img

# (2) NFSv4.2 over RDMA, as tests/cases/nfs_rdma.sh sets it up.
nfs_mount() { # WHEN
	local out
	out=$(timeout "$(tmo 60)" mount -t nfs \
		-o vers=4.2,proto=rdma,port=$nfs_port,hard "$ip:/" $mnt 2>&1) ||
		fail "mount $ip:/ over RDMA $1: $out ($(nfsd_log $mountd_log))"
	expect_eq "mountstats transport of $mnt $1" rdma "$(xprt_field 2)"
}
nfs_umount() { # WHEN
	timeout "$(tmo 60)" umount $mnt || fail "umount $mnt $1 ($(nfsd_log $mountd_log))"
}
nfs_log() { echo "a hard mount waits; $(nfsd_log $mountd_log)"; }
xprt_field() { # N: field N of $mnt's "xprt:" line (2: transport, 5: connects)
	awk -v m=$mnt -v f="$1" '$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" { print $f; exit }' /proc/self/mountstats
}

modprobe -a nfsd nfsv4 rpcrdma || fail "modprobe nfsd nfsv4 rpcrdma"
mkdir -p $mnt
nfs_export $state $exp 64 "$ip"
nfsd_up $mountd_log
nfsd_listen_rdma $nfs_port $mountd_log
echo Y > /proc/fs/nfsd/v4_end_grace 2>/dev/null
wait_for 30 grace_over || fail "the NFSv4 grace period did not end"
nfs_mount "at first"

# (2a) eth0 down and up under the writes.
truncate -s $((slices * smib))M $mnt/data || fail "make $mnt/data"
conns=$(xprt_field 5)
fault_flap NFS $mnt/data $exp/data nfs_log
note "NFS: the transport connected $(($(xprt_field 5) - conns)) more times"
nfs_umount "after eth0 down and up"
nfs_mount "after eth0 down and up"
slices_verify "NFS file read through a new mount" $mnt/data "$n" -1 iflag=direct

# (2b) rdma link delete and add under the writes.
conns=$(xprt_field 5)
fault_delete NFS $mnt/data
writer_gone && fail "NFS: the writer ended with sroce0 gone: write" \
	"$(attempted) failed (a hard mount stalls)"
link_back
t=$SECONDS
writes_go_on NFS $mnt/data 90 "rdma link delete" nfs_log
note "NFS: writes went on, the writer stopped, $((SECONDS - t)) s after" \
	"sroce0 came back"
c=$(xprt_field 5)
[ "$c" -gt "$conns" ] 2>/dev/null || fail "NFS: the transport's connect" \
	"count is '$c' after sroce0 came back, was $conns: no new connection?"
slices_verify "NFS server's copy after rdma link delete" $exp/data "$n" -1
nfs_umount "after rdma link delete"
nfs_mount "after rdma link delete"
slices_verify "NFS file read through a new mount after rdma link delete" \
	$mnt/data "$n" -1 iflag=direct

nfs_umount "at the end"
timeout "$(tmo 30)" exportfs -ua || fail "exportfs -ua"
timeout "$(tmo 60)" rpc.nfsd 0 || fail "rpc.nfsd 0"
nfs_unexport $exp
rmmod_wait rpcrdma
# The transports go in work items after the last reference: give them time.
wait_for 30 ulp_base_is
ulp_base_check "after NFS"
expect_eq "rdma_cm IDs on port $nfs_port after NFS" 0 "$(cm_ids $nfs_port)"
forget_cm_locks
link_delete "at the end"
