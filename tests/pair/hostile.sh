#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Hostile RoCEv2 packets: VM b (hostile.py, scapy) attacks a victim QP of
# sroce on VM a (sroce-wire -V). VM a must drop and count every bad packet
# by its reason, keep the victim's memory untouched, and afterwards carry
# real traffic with every byte checked. Then fuzz.py (no scapy) sends over
# 10^5 mutated packets at a second victim: every one must be counted where
# its tag says. The kernel log is judged by the harness (no oops, WARN,
# KASAN). FUZZ_SEED and FUZZ_SCALE replay or resize the fuzzer's run.
# Last, resend.py plays the responder to a requester on VM a whose packet
# size grows under a half-acknowledged message.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
busybox ping -c 1 -W 10 "$PEER4" >/dev/null
wire=$repo/tests/bin/sroce-wire

names="drop_icrc_err drop_malformed drop_no_qp drop_qp_state out_of_sequence
	duplicate_request nak_seq_sent nak_rem_access_sent drop_ghost_response
	drop_bad_source"

# expect NAME N: the counter NAME grew by exactly N during the attack
expect() {
	local d=$(( $(counter "$1") - before[$1] ))
	if [ "$d" -eq "$2" ]; then
		echo "ok   counter $1 -eq $2"; passed=$((passed + 1))
	else
		echo "FAIL counter $1 -eq $2"; failed=$((failed + 1))
	fi
	echo "    $1 grew by $d"
}

if [ "$ROLE" = a ]; then
	declare -A before
	for n in $names; do before[$n]=$(counter $n); done
	step "victim QP: memory untouched by hostile packets" a \
		"$wire $dev $gidx -p 18950 -n 1 -s 4096 -V" ""
	# Each packet hostile.py sends is counted once, by its counter. The
	# last of them, to the QP in error, is counted when the victim's
	# engine takes it: waited for.
	wait_for 30 eval '[ $(( $(counter drop_qp_state) -
		before[drop_qp_state] )) -ge 1 ]'
	expect drop_icrc_err 20
	expect drop_malformed $((16 + 12 + 5)) # truncated, opcode, header
	expect drop_no_qp 3
	expect out_of_sequence 1
	expect nak_seq_sent 1
	expect duplicate_request 3
	expect nak_rem_access_sent 1
	expect drop_qp_state 1
	expect drop_ghost_response $((7 * 5 + 4 + 1))
	expect drop_bad_source 3
	echo "a counters: $(counters)"
else
	step "victim QP: memory untouched by hostile packets" a "" \
		"/usr/bin/python3 $(dirname "$0")/hostile.py $PEER4 18950 $MY4"
fi
# The fuzzer: fuzz.py on VM b sends over 10^5 mutated packets (seeded) at
# a new victim, at QP1 and at QPNs nobody has. VM a's memory must stay
# untouched (sroce-wire -V), every packet must reach sroce and be counted
# where fuzz.py --plan (the same generator, sending nothing) says.
fuzz=$(dirname "$0")/fuzz.py
fuzz_args="--seed ${FUZZ_SEED:-4791} --scale ${FUZZ_SCALE:-1}"
fuzz_name="fuzzed packets ($fuzz_args): memory untouched"

# snapshot ARRAY: every port counter of $dev, into the associative ARRAY
snapshot() {
	local -n into=$1
	local k v
	# (no process substitution: the guest has no /dev/fd)
	while read -r k v; do
		# shellcheck disable=SC2034 # into is a nameref: this fills the caller's array
		[ -n "$k" ] && into[$k]=$v
	done <<<"$(rdma statistic show link "$dev/1" | tr -s ' \n' '\n\n' |
		   tail -n +3 | paste -d' ' - -)"
}

# fuzz_plan: what fuzz.py --plan $fuzz_args prints. make check computes it
# on the host before the pair (scripts/host/check.sh's pair_inputs), its
# arguments on the first line: here it took about 13 s of Python under
# TCG, and VM b's next step waited for it. The file is taken when it is
# newer than fuzz.py and made for $fuzz_args; computed here otherwise.
fuzz_plan() {
	local f=$repo/build/pair-fuzz-plan
	if [ -f "$f" ] && [ "$f" -nt "$fuzz" ] &&
		[ "$(head -n 1 "$f")" = "$fuzz_args" ]; then
		tail -n +2 "$f"
	else
		/usr/bin/python3 "$fuzz" --plan $fuzz_args
	fi
}

# fdelta NAME: how much counter NAME grew during the fuzzer's step
fdelta() { echo $(( ${fa[$1]:-0} - ${fb[$1]:-0} )); }

# fuzz_check: the counters grew as the plan says, and every packet was
# counted once where it was dropped or answered.
fuzz_check() {
	local plan key name n d sum=0 k late
	plan=$(fuzz_plan) ||
		{ echo "FAIL fuzz.py --plan"; failed=$((failed + 1)); return; }
	declare -A want exp
	# Packets from spoofed sources at the QP in error are counted as such
	# by its engine, or as drop_qp_state when they were still queued once
	# it saw the error (sroce_qp_purge(); more often on a slow kernel).
	late=$(awk '$1 == "sent" && $2 == "after_error_bad_source" { print $3 }' \
		<<<"$plan")
	while read -r key name n; do
		case $key in
		expect) d=$(fdelta "$name") exp[$name]=$n
			case $name in
			# Exact as sums, below: a spoofed packet at the QP in
			# error is one or the other; a packet tagged "door"
			# is one of the three counted before a QP is found.
			# A NAK of sequence is sent at least once per gap.
			drop_bad_source|drop_qp_state|drop_malformed|\
			drop_icrc_err|drop_no_qp|nak_seq_sent)
				[ "$name" = drop_bad_source ] &&
					n=$((n - ${late:-0}))
				check "fuzz: $name grew by $d, at least $n" \
					[ "$d" -ge "$n" ] ;;
			*)	check "fuzz: $name grew by $d, expected $n" \
					[ "$d" -eq "$n" ] ;;
			esac ;;
		total|door|rcvd|accepted|counted) want[$key]=$name ;;
		esac
	done <<<"$plan"
	n=$(( ${exp[drop_bad_source]:-0} + ${exp[drop_qp_state]:-0} ))
	d=$(( $(fdelta drop_bad_source) + $(fdelta drop_qp_state) ))
	check "fuzz: drop_bad_source + drop_qp_state grew by $d, expected $n" \
		[ "$d" -eq "$n" ]
	d=$(( $(fdelta drop_malformed) + $(fdelta drop_icrc_err) +
	      $(fdelta drop_no_qp) ))
	check "fuzz: ${want[door]} packets to drop before a QP, $d dropped" \
		[ "$d" -eq "${want[door]}" ]
	# fuzz.py paces itself on the victim's answers: its receive queue
	# never fills (a counter that is not there is not 0)
	check "fuzz: drop_rx_queue_full grew by $(fdelta drop_rx_queue_full)" \
		[ "${fa[drop_rx_queue_full]:-missing}" = \
		  "${fb[drop_rx_queue_full]:-none}" ]
	# Every packet sent reached sroce_rcv() and was counted there: taken
	# to a QP (rcvd_pkts) or dropped before one was found.
	d=$(( $(fdelta rcvd_pkts) + $(fdelta drop_malformed) +
	      $(fdelta drop_icrc_err) + $(fdelta drop_no_qp) +
	      $(fdelta drop_rx_queue_full) ))
	check "fuzz: ${want[total]} packets sent, $d reached sroce" \
		[ "$d" -eq "${want[total]}" ]
	# Every packet but the zero-length READs the victim took has one
	# disposition counted: a drop counter (any drop_*, new ones too), a
	# duplicate, a PSN ahead, an RNR NAK or a NAK.
	for k in "${!fa[@]}"; do
		case $k in
		drop_*|duplicate_request|out_of_sequence|rnr_nak_sent|\
		nak_inv_req_sent|nak_rem_access_sent|nak_rem_op_sent)
			sum=$((sum + $(fdelta "$k"))) ;;
		esac
	done
	n=$(( ${want[total]} - ${want[accepted]} ))
	check "fuzz: $n packets to count, $sum counted" [ "$sum" -eq "$n" ]
	echo "    a counters grew: $(for k in "${!fa[@]}"; do
		d=$(fdelta "$k"); [ "$d" != 0 ] && echo "$k=$d"; done |
		sort | paste -sd' ' -)"
}

if [ "$ROLE" = a ]; then
	declare -A fb fa
	snapshot fb
	STEP_LIMIT=300 step "$fuzz_name" a \
		"$wire $dev $gidx -p 18952 -n 1 -s 4096 -V" ""
	snapshot fa
	fuzz_check
else
	STEP_LIMIT=300 step "$fuzz_name" a "" \
		"/usr/bin/python3 $fuzz $PEER4 18952 $MY4 $fuzz_args"
fi
# A go-back after the packet size grew (resend.py on VM b plays the
# responder): the transport timer still runs after SQD, and what is sent
# again (the whole SEND after the timeout, then its NAKed second packet) is
# what went, not slices cut at the new size.
# sroce-wire -M sets eth0's MTU to 576 for a while: below 1280 the kernel
# takes IPv6 off eth0 with its addresses, and the MTU back at 1500 brings
# only the link-local one back. The global ones (fd00:3::N, whose RoCE v2
# GID vlan.sh uses after this script) are put back as they were.
my6=$(ip -6 -o addr show dev eth0 scope global | awk '{print $4}')
step "resend after the path MTU grew: the packet as it went" a \
	"$wire $dev $gidx -p 18953 -M eth0" \
	"/usr/bin/python3 $(dirname "$0")/resend.py $PEER4 18953 $MY4"
if [ "$ROLE" = a ]; then
	check "eth0 MTU 1500 again" ip link set dev eth0 mtu 1500
	for a6 in $my6; do
		check "eth0 has $a6 again" ip -6 addr replace "$a6" dev eth0 nodad
	done
fi
step "RC traffic after the attack (server a)" a \
	"$wire $dev $gidx -p 18951 -n 50" "$wire $dev $gidx -p 18951 -n 50 $PEER4"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
