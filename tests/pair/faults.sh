#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Faults with traffic in flight. A bidirectional stream of 64 KiB RDMA
# WRITEs (ib_write_bw -b, both QPs requesters) runs between the VMs; once
# it flows, the injector (the VM with sroce; VM b when both have it) breaks
# its side: kill -9 of the process, `ip link set down` and up again,
# `rdma link delete`, and `rmmod sroce` under the live context (it is not
# refused: ib_uverbs disassociates the context, the application gets
# DEVICE_FATAL). Each time:
#  - the other VM's QP goes to error: its ib_write_bw fails with a retry
#    exceeded or flush completion within its time limit, never hangs;
#  - the injector's command works, its own ib_write_bw ends, no QP of it is
#    left in `rdma resource`;
#  - a new RC connection moves data afterwards (ibv_rc_pingpong, checked).
# Last, on a kernel with kmemleak, the injector unloads everything and
# finds nothing leaked. Runs last in its pair suite: it unloads sroce.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
rdma_up || { echo "FAIL $KIND up"; exit 1; }
busybox ping -c 1 -W 10 "$PEER4" >/dev/null

# Who injects: the only sroce VM, or b when both run sroce.
if [ "$KIND" = sroce ] && [ "${PEER_KIND:-sroce}" = sroce ]; then
	inj=b
elif [ "$KIND" = sroce ]; then
	inj=$ROLE
else
	inj=$([ "$ROLE" = a ] && echo b || echo a)
fi
kml=/sys/kernel/debug/kmemleak
[ "$ROLE" = "$inj" ] && [ -w $kml ] && echo clear > $kml

# The stream: 64 KiB RDMA WRITEs both ways for up to 20 s (tmo), the
# fault a few seconds in. The injector's stream, whose device went (link
# delete, rmmod), runs to its end: its WRITEs in flight never complete
# (the context's rings are unmapped before its QPs are flushed) and
# perftest only polls while its send queue is full; at 60 s that was 2
# minutes of each sroce-sroce run. On a slowed
# kernel (the debug kernel: 3.5 ms a packet, an engine run of 64 packets
# takes 0.2 s) perftest's 67 ms transport timeout ran a clean stream out
# of retries before any fault; there the QPs wait 1 s (-u 18), and the
# link stays down longer than their 8 tries (8.6 s), which RC rides out.
bw_args="-F -b -D $(tmo 20) -s 65536" down_s=3
[ "${SROCE_TIME_SCALE:-1}" -gt 1 ] && bw_args+=" -u 18" down_s=15

# The injector's actions, on its ib_write_bw $pid.
do_kill() { kill -KILL "$pid"; }
# eth0 keeps its IPv6 address through the down and up (by default a
# link down flushes a static one, and the steps after this script, such
# as vlan.sh's, need eth0's RoCE v2 GID of fd00:3::N).
do_link_down() {
	sysctl -qw net.ipv6.conf.eth0.keep_addr_on_down=1 &&
	ip link set eth0 down && sleep $down_s && ip link set eth0 up &&
		wait_for 30 grep -qx 1 /sys/class/net/eth0/carrier
}
do_link_delete() { rdma link delete sroce0; }
do_rmmod() { timeout "$(tmo 60)" rmmod sroce; }

# inject NAME PORT ACTION: the injector's side of one fault
inject() {
	local name=$1 port=$2 action=$3 rx0 out=/tmp/out/fault-$2.log msg=
	# shellcheck disable=SC2034 # read by the eval'd condition of wait_for below
	rx0=$(counter rcvd_pkts)
	ib_write_bw -d "$dev" -x "$gidx" -p "$port" $bw_args > "$out" 2>&1 &
	pid=$!
	if ! wait_for 90 eval \
		'[ $(( $(counter rcvd_pkts) - rx0 )) -gt 2000 ]'; then
		msg="no traffic before the fault"
	elif ! kill -0 "$pid" 2>/dev/null; then
		msg="the stream ended before the fault"
	elif ! $action; then
		msg="$action failed"
	elif ! wait_for 60 eval '! kill -0 $pid 2>/dev/null'; then
		msg="ib_write_bw still running $(tmo 60) s after the fault"
		msg+=$'\n'"$(stuck_report)"
		kill -KILL $pid
	fi
	wait $pid 2>/dev/null
	if [ -z "$msg" ] && ibdev_exists "$dev" &&
		rdma resource show qp 2>/dev/null | grep -qw "pid $pid"; then
		msg="QPs of the dead process are left:"$'\n'
		msg+=$(rdma resource show qp)
	fi
	# Back to a working device for what follows.
	ip link set eth0 up
	rdma_up || msg+=" (and $KIND does not come back up)"
	if [ -z "$msg" ]; then
		echo "ok   fault: $name"; passed=$((passed + 1))
	else
		echo "FAIL fault: $name: $msg"; failed=$((failed + 1))
		sed 's/^/    /' "$out" | tail -n 20
	fi
}

# observe NAME PORT: the other side, whose stream must fail, not hang
observe() {
	local name=$1 port=$2 out rc msg=
	for _ in $(seq 60); do
		out=$(timeout "$(tmo 120)" ib_write_bw -d "$dev" -x "$gidx" \
			-p "$port" $bw_args "$PEER4" 2>&1); rc=$?
		grep -qiE "couldn't connect|unable to init the socket|refused" \
			<<<"$out" || break
		sleep 1
	done
	if [ $rc = 124 ]; then
		msg="ib_write_bw hung"$'\n'"$(stuck_report)"
	elif [ $rc = 0 ]; then
		msg="the stream went on as if nothing happened"
	elif ! grep -qE "Failed status (5|12):" <<<"$out"; then
		msg="no retry exceeded (12) or flush (5) completion (rc $rc)"
	fi
	if [ -z "$msg" ]; then
		echo "ok   fault: $name"; passed=$((passed + 1))
	else
		echo "FAIL fault: $name: $msg"; failed=$((failed + 1))
		echo "$out" | tail -n 20 | sed 's/^/    /'
	fi
}

port=18700
for f in "kill -9 mid-transfer:do_kill" "ip link set down, up:do_link_down" \
	"rdma link delete:do_link_delete" "rmmod sroce under a live context:do_rmmod"; do
	name=${f%%:*} action=${f##*:}
	port=$((port + 1))
	if [ "$ROLE" = "$inj" ]; then
		inject "$name" $port "$action"
	else
		observe "$name" $port
	fi
	port=$((port + 1))
	busybox ping -c 1 -W 10 "$PEER4" >/dev/null
	args="-d $dev -g $gidx -p $port -n 20 -s 4096 -c"
	step "after $name: RC pingpong" "$inj" \
		"ibv_rc_pingpong $args" "ibv_rc_pingpong $args $PEER4"
done

if [ "$ROLE" = "$inj" ] && [ -w $kml ]; then
	remove_all_links
	rmmod sroce
	modprobe -r rdma_rxe 2>/dev/null
	echo scan > $kml; sleep 6; echo scan > $kml
	leaks=$(cat $kml)
	check "kmemleak after the faults: nothing leaked" test -z "$leaks"
	[ -z "$leaks" ] || head -n 80 <<<"$leaks" | sed 's/^/    /'
elif [ "$ROLE" = "$inj" ]; then
	echo "note: no kmemleak in this kernel; make check-debug scans for leaks"
fi
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
