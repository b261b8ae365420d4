#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# RC traffic with every byte checked (sroce-wire: write, read, send,
# fetch-and-add, compare-and-swap) between two VMs, first on a clean link,
# then with netem dropping, reordering and duplicating packets on both
# sides. $KIND is this VM's device (sroce or rxe).
. "$(dirname "$0")/lib.sh"
wire=$repo/tests/bin/sroce-wire
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
busybox ping -c 2 -W 10 "$PEER4" >/dev/null


wire_step() { # NAME PORT (ITERS in $N)
	step "$1 (server a)" a "$wire $dev $gidx -p $2 -n ${N:-100}" \
		"$wire $dev $gidx -p $2 -n ${N:-100} $PEER4"
	step "$1 (server b)" b "$wire $dev $gidx -p $(($2 + 1)) -n ${N:-100}" \
		"$wire $dev $gidx -p $(($2 + 1)) -n ${N:-100} $PEER4"
}

wire_step "RC write/read/send/atomics, clean link" 18800
modprobe sch_netem
tc qdisc add dev eth0 root netem loss 5% delay 1ms reorder 5% duplicate 1% ||
	{ echo "FAIL netem"; exit 1; }
[ "$KIND" = sroce ] && rt0=$(counter retransmits)
wire_step "RC write/read/send/atomics, netem loss 5% reorder 5% duplicate 1%" 18810
tc -s qdisc show dev eth0 | sed -n 's/^ *Sent/netem: sent/p'
echo "$ROLE counters: $(counters)"
# The steps above proved something only if packets were really lost, and
# (for sroce, whose counters we know) lost requests were sent again.
dropped=$(tc -s qdisc show dev eth0 | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' |
	head -n 1)
check "netem dropped packets ($dropped)" test "${dropped:-0}" -gt 0
if [ "$KIND" = sroce ]; then
	rt=$(( $(counter retransmits) - rt0 ))
	check "sroce retransmitted ($rt go-back resends)" test "$rt" -gt 0
fi
tc qdisc del dev eth0 root
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
