#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Hostile RoCEv2 packets: VM b (hostile.py, scapy) attacks a victim QP of
# sroce on VM a (sroce-wire -V). VM a must drop and count every bad packet
# by its reason, keep the victim's memory untouched, and afterwards carry
# real traffic with every byte checked. The kernel log is judged by the
# harness (no oops, WARN, KASAN).
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
busybox ping -c 2 -W 10 "$PEER4" >/dev/null
wire=$repo/tests/bin/sroce-wire

names="drop_icrc_err drop_malformed drop_no_qp drop_qp_state out_of_sequence
	duplicate_request nak_seq_sent nak_rem_access_sent drop_ghost_response
	drop_bad_source"

# expect NAME OP N: the counter NAME grew by OP N during the attack
expect() {
	local d=$(( $(counter "$1") - before[$1] ))
	if [ "$d" "$2" "$3" ]; then
		echo "ok   counter $1 $2 $3"; passed=$((passed + 1))
	else
		echo "FAIL counter $1 $2 $3"; failed=$((failed + 1))
	fi
	echo "    $1 grew by $d"
}

if [ "$ROLE" = a ]; then
	declare -A before
	for n in $names; do before[$n]=$(counter $n); done
	step "victim QP: memory untouched by hostile packets" a \
		"$wire $dev $gidx -p 18950 -n 1 -s 4096 -V" ""
	expect drop_icrc_err -eq 20
	expect drop_malformed -ge $((16 + 12 + 5))
	expect drop_no_qp -ge 3
	expect out_of_sequence -ge 1
	expect nak_seq_sent -ge 1
	expect duplicate_request -ge 3
	expect nak_rem_access_sent -eq 1
	expect drop_qp_state -ge 1
	expect drop_ghost_response -ge 40
	expect drop_bad_source -ge 3
	echo "a counters: $(counters)"
else
	step "victim QP: memory untouched by hostile packets" a "" \
		"/usr/bin/python3 $(dirname "$0")/hostile.py $PEER4 18950 $MY4"
fi
step "RC traffic after the attack (server a)" a \
	"$wire $dev $gidx -p 18951 -n 50" "$wire $dev $gidx -p 18951 -n 50 $PEER4"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
