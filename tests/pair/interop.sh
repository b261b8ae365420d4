#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Standard applications between two VMs, each VM with the RDMA device
# $KIND (sroce or rxe): ibverbs pingpongs with buffer checks, perftest
# bandwidth tests and the rdma_cm applications, each once with VM a as
# server and once with VM b. First, VM a captures a short mix of RC, UC
# and UD traffic of both sides over IPv4 and IPv6, which must decode as
# RoCEv2 with correct ICRCs.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
my6=$(ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1 |
	head -n 1)
# Both sides up before the first step (the client's retries cover the rest).
busybox ping -c 1 -W 10 "$PEER4" >/dev/null
wire=$repo/tests/bin/sroce-wire
port=18600

if [ "$ROLE" = a ]; then
	rm -f /tmp/roce.pcap
	dumpcap -q -i eth0 -f 'udp port 4791' -w /tmp/roce.pcap 2>/dev/null &
	tshark_pid=$!
	# capturing once the file has its header
	wait_for 60 test -s /tmp/roce.pcap
	sleep 1
fi
for app in rc uc ud; do
	port=$((port + 1))
	args="-d $dev -g $gidx -p $port -n 10 -s 1000 -c"
	step "capture: ibv_${app}_pingpong" a \
		"ibv_${app}_pingpong $args" "ibv_${app}_pingpong $args $PEER4"
done
port=$((port + 1))
step "capture: RC write/read/send/atomics (sroce-wire)" a \
	"$wire $dev $gidx -p $port -n 10 -s 3000" \
	"$wire $dev $gidx -p $port -n 10 -s 3000 $PEER4"
port=$((port + 1))
step "capture: rping -V over IPv6" a \
	"$repo/tests/rping.sh -s -a $my6 -p $port -C 3 -S 2000 -V" \
	"$repo/tests/rping.sh -c -a $PEER6 -p $port -C 3 -S 2000 -V"
if [ "$ROLE" = a ]; then
	sleep 1
	kill -INT $tshark_pid
	wait_for 20 eval '! kill -0 $tshark_pid 2>/dev/null' ||
		kill -KILL $tshark_pid
	cp /tmp/roce.pcap /tmp/out/ 2>/dev/null
	decode "capture decodes as RoCEv2 with correct ICRCs" roce_pcap.py \
		/tmp/roce.pcap "$MY4" "$PEER4" "$my6" "$PEER6"
fi

for s in a b; do
	c=$([ $s = a ] && echo b || echo a)
	for app in rc uc ud; do
		port=$((port + 1))
		size=4096; [ $app = ud ] && size=1024
		args="-d $dev -g $gidx -p $port -n 100 -s $size -c"
		step "ibv_${app}_pingpong server $s client $c" $s \
			"ibv_${app}_pingpong $args" "ibv_${app}_pingpong $args $PEER4"
	done
	for t in write read send atomic; do
		port=$((port + 1))
		args="-d $dev -x $gidx -p $port -F -n 100 -u $(qp_timeout)"
		[ $t != atomic ] && args+=" -s 65536"
		step "ib_${t}_bw server $s client $c" $s \
			"ib_${t}_bw $args" "ib_${t}_bw $args $PEER4"
	done
	# rdma_cm: address and route resolution, CM MADs on QP1, then data
	port=$((port + 1))
	step "rping -V server $s client $c" $s \
		"$repo/tests/rping.sh -s -a $MY4 -p $port -C 10 -S 4000 -V" \
		"$repo/tests/rping.sh -c -a $PEER4 -p $port -C 10 -S 4000 -V"
	port=$((port + 1))
	step "rping -V IPv6 server $s client $c" $s \
		"$repo/tests/rping.sh -s -a $my6 -p $port -C 5 -S 30000 -V" \
		"$repo/tests/rping.sh -c -a $PEER6 -p $port -C 5 -S 30000 -V"
	port=$((port + 1))
	cm_step "ucmatose server $s client $c" $s $port \
		"ucmatose -p $port -c 2 -C 10" \
		"ucmatose -s $PEER4 -p $port -c 2 -C 10"
	port=$((port + 1))
	cm_step "udaddy server $s client $c" $s $port \
		"udaddy -c 2 -C 10" "udaddy -s $PEER4 -c 2 -C 10"
	port=$((port + 1))
	step "rdma_server/rdma_client server $s client $c" $s \
		"rdma_server -p $port" "rdma_client -s $PEER4 -p $port"
done
[ $KIND = sroce ] && echo "$ROLE counters: $(counters)"
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
