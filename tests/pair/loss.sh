#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# RC traffic with every byte checked (sroce-wire: write, read, send,
# fetch-and-add, compare-and-swap) between two VMs, first on a clean link,
# then with netem dropping, reordering and duplicating RoCE packets on both
# sides; then UC under the same loss, and RC again with MTU 9000 (RoCE MTU
# 4096). $KIND is this VM's device (sroce or rxe), $PEER_KIND the other's.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
wire=$repo/tests/bin/sroce-wire
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
busybox ping -c 1 -W 10 "$PEER4" >/dev/null


wire_step() { # NAME PORT [SERVERS] [WIRE ARGS...] (ITERS in $N)
	local name=$1 port=$2 servers=${3:-a b} srv
	shift 3 2>/dev/null || shift $#
	for srv in $servers; do
		step "$name (server $srv)" $srv \
			"$wire $dev $gidx -p $port -n ${N:-100} $*" \
			"$wire $dev $gidx -p $port -n ${N:-100} $* $PEER4"
		port=$((port + 1))
	done
}

# snap: this VM's port counters now (sroce), for grew
declare -A at
snap() {
	local c
	[ "$KIND" = sroce ] || return 0
	for c in out_of_sequence duplicate_request retransmits \
		drop_uc_message rcvd_pkts rcvd_bytes; do
		at[$c]=$(counter $c)
	done
}
grew() { echo $(( $(counter "$1") - ${at[$1]:?no snapshot of $1} )); }

wire_step "RC write/read/send/atomics, clean link" 18800
# netem on RoCE only (UDP 4791, each VM's sending side), so that what it
# drops is RoCE's loss and not TCP's (the steps meet over TCP).
modprobe -a sch_netem sch_prio cls_u32
tc qdisc add dev eth0 root handle 1: prio bands 4 \
	priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 &&
tc qdisc add dev eth0 parent 1:4 handle 40: \
	netem loss 5% delay 1ms reorder 5% duplicate 1% &&
tc filter add dev eth0 parent 1: protocol ip prio 1 u32 \
	match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:4 ||
	{ echo "FAIL netem"; exit 1; }
netem_dropped() {
	tc -s qdisc show dev eth0 | awk '$1 == "qdisc" { q = $2 }
		q == "netem" && /dropped/ { sub(",", "", $7); print $7; exit }'
}
lossy="netem loss 5% reorder 5% duplicate 1% on RoCE"
d0=$(netem_dropped)
snap
wire_step "RC write/read/send/atomics, $lossy" 18810
echo "$ROLE counters: $(counters)"
# The steps above proved something only if RoCE packets were really lost,
# and (for sroce, whose counters we know) the reordered, duplicated and
# lost ones reached the responder as such and were sent again.
check "netem dropped RoCE packets ($(( $(netem_dropped) - d0 )))" \
	test "$(( $(netem_dropped) - d0 ))" -gt 0
if [ "$KIND" = sroce ]; then
	for c in retransmits out_of_sequence duplicate_request; do
		check "RC under loss: $c grew by $(grew $c)" test "$(grew $c)" -gt 0
	done
fi

# UC under the same loss: nothing is sent again, a lost packet loses the
# rest of its message (sroce-wire -u checks what landed). rxe's UC receive
# is not ours to judge: against it, only sroce's VM serves.
uc_servers="a b"
[ "${PEER_KIND:-sroce}" = sroce ] && [ "$KIND" = sroce ] || uc_servers=a
snap
N=200 wire_step "UC write/send, $lossy" 18820 "$uc_servers" -u -s 4096
[ "$KIND" = sroce ] &&
	check "UC under loss: drop_uc_message grew by $(grew drop_uc_message)" \
		test "$(grew drop_uc_message)" -gt 0

# Jumbo frames: netdev MTU 9000 on both VMs, so RoCE MTU 4096; proven by
# what sroce received (more than 1024 payload bytes a packet on average,
# which MTU 1024 cannot carry).
check "eth0 takes MTU 9000" ip link set eth0 mtu 9000
snap
wire_step "RC write/read/send/atomics, MTU 9000, $lossy" 18830 "a b" -s 16384
if [ "$KIND" = sroce ]; then
	pk=$(grew rcvd_pkts) by=$(grew rcvd_bytes)
	check "MTU 9000: $by payload bytes in $pk packets, over 1024 each" \
		test "$by" -gt $(( 1024 * pk ))
fi
ip link set eth0 mtu 1500
tc qdisc del dev eth0 root
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
