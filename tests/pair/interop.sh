#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Standard applications between two VMs, each VM with the RDMA device
# $KIND (sroce or rxe): ibverbs pingpongs with buffer checks and perftest
# bandwidth tests, each once with VM a as server and once with VM b.
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
echo "$ROLE: $dev gid index $gidx"
# Both sides up before the first step (the client's retries cover the rest).
busybox ping -c 2 -W 10 "$PEER4" >/dev/null

port=18600
for s in a b; do
	c=$([ $s = a ] && echo b || echo a)
	for app in rc uc ud; do
		port=$((port + 1))
		size=4096; [ $app = ud ] && size=1024
		args="-d $dev -g $gidx -p $port -n 200 -s $size -c"
		step "ibv_${app}_pingpong server $s client $c" $s \
			"ibv_${app}_pingpong $args" "ibv_${app}_pingpong $args $PEER4"
	done
	for t in write read send atomic; do
		port=$((port + 1))
		args="-d $dev -x $gidx -p $port -F -n 200"
		[ $t != atomic ] && args+=" -s 65536"
		step "ib_${t}_bw server $s client $c" $s \
			"ib_${t}_bw $args" "ib_${t}_bw $args $PEER4"
	done
done
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
