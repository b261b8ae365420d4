#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The kernel's own RDMA clients between two VMs, each VM with the RDMA
# device $KIND (sroce or rxe): NVMe over Fabrics, the nvmet-rdma target on
# one VM and the nvme-rdma host on the other, once each way. The target
# serves a namespace whose first 32 MiB hold a pattern both sides can make
# (a seeded generator); the host reads them and checks every byte, writes
# a second pattern behind them and reads it back; once the host has
# disconnected, the target checks that pattern in its file: every byte
# went over RDMA between the two kernels, in both directions.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
busybox ping -c 1 -W 10 "$PEER4" >/dev/null

nqn=nqn.2026-11.org.sroce:pair
img=/tmp/pair-ns.img
half=$((32 * 1024 * 1024))
export dev nqn img half

# nvmet_serve: serve $nqn at $MY4:4420 until a host has come and gone,
# then check what it wrote
nvmet_serve() {
	local cfg=/sys/kernel/config/nvmet base rc=0 sum
	modprobe -a nvmet nvmet-rdma || { echo "modprobe nvmet nvmet-rdma"; return 1; }
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config
	base=$(kernel_qps)
	{ pattern 1 $half; head -c $half /dev/zero; } > $img
	mkdir $cfg/subsystems/$nqn &&
		echo 1 > $cfg/subsystems/$nqn/attr_allow_any_host &&
		mkdir $cfg/subsystems/$nqn/namespaces/1 &&
		echo -n $img > $cfg/subsystems/$nqn/namespaces/1/device_path &&
		echo 1 > $cfg/subsystems/$nqn/namespaces/1/buffered_io &&
		echo 1 > $cfg/subsystems/$nqn/namespaces/1/enable &&
		mkdir $cfg/ports/1 &&
		echo rdma > $cfg/ports/1/addr_trtype &&
		echo ipv4 > $cfg/ports/1/addr_adrfam &&
		echo "$MY4" > $cfg/ports/1/addr_traddr &&
		echo 4420 > $cfg/ports/1/addr_trsvcid &&
		ln -s $cfg/subsystems/$nqn $cfg/ports/1/subsystems/$nqn ||
		{ echo "nvmet configuration: $(dmesg | tail -3)"; rc=1; }
	# The host's admin and I/O queues are kernel QPs here.
	if [ $rc = 0 ]; then
		peer_session "$base" || rc=1
	fi
	if [ $rc = 0 ]; then
		sum=$(pattern_sum 2 $half)
		[ "$(tail -c $half $img | sha256sum)" = "$sum" ] ||
			{ echo "the namespace file does not hold what the host wrote"; rc=1; }
	fi
	rm -f $cfg/ports/1/subsystems/$nqn
	rmdir $cfg/ports/1 $cfg/subsystems/$nqn/namespaces/1 \
		$cfg/subsystems/$nqn 2>/dev/null
	modprobe -r nvmet-rdma nvmet || { echo "modprobe -r nvmet-rdma nvmet"; rc=1; }
	rm -f $img
	return $rc
}

# nvme_host TARGET: connect to $nqn at TARGET, check the first pattern,
# write and check the second, disconnect
nvme_host() {
	local t=$1 c n ns='' out rc=0 end
	modprobe nvme-rdma || { echo "modprobe nvme-rdma"; return 1; }
	end=$((SECONDS + $(tmo 120)))
	until out=$(nvme connect -t rdma -a "$t" -s 4420 -n $nqn \
		--hostnqn=nqn.2026-11.org.sroce:pair-host \
		--hostid=5e5e5e5e-0000-4000-8000-0000000000$ROLE$ROLE 2>&1); do
		[ $SECONDS -lt $end ] ||
			{ echo "nvme connect $t: $out $(dmesg | tail -3)"; return 1; }
		sleep 1
	done
	for _ in $(seq 100); do
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $nqn ] || continue
			for n in "$c"/nvme*n1 "/sys/block/${c##*/}n1"; do
				[ -e "$n" ] && ns=/dev/${n##*/}
			done
		done
		[ -b "$ns" ] && break
		sleep 0.2
	done
	if [ ! -b "$ns" ]; then
		echo "no namespace block device after connect"; rc=1
	elif [ "$(dd if="$ns" bs=1M count=32 iflag=direct status=none |
		sha256sum)" != "$(pattern_sum 1 $half)" ]; then
		echo "the first 32 MiB read from $ns differ from the target's pattern"; rc=1
	elif ! pattern 2 $half | dd of="$ns" bs=1M seek=32 oflag=direct \
		iflag=fullblock status=none; then
		echo "write to $ns failed"; rc=1
	elif [ "$(dd if="$ns" bs=1M skip=32 count=32 iflag=direct status=none |
		sha256sum)" != "$(pattern_sum 2 $half)" ]; then
		echo "the second 32 MiB read back from $ns differ from what was written"; rc=1
	fi
	nvme disconnect -n $nqn >/dev/null || { echo "nvme disconnect"; rc=1; }
	wait_for 30 modprobe -r nvme-rdma || { echo "modprobe -r nvme-rdma"; rc=1; }
	return $rc
}
export_ulp_helpers
export -f nvmet_serve nvme_host

# The host waits for the target itself.
STEP_LIMIT=400 STEP_TRIES=1
# 64 MiB moved each way through this VM's device, in MTU-sized packets.
ulp_both_ways NVMe-oF 16384 nvmet_serve nvme_host \
	"NVMe-oF target %s, host %s: 32 MiB each way, every byte checked"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
