#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# RoCE over a VLAN (issue 36), between two VMs each with the RDMA device
# $KIND on eth0 and a VLAN device eth0.100 on it (10.60.0.N, fd00:60::N,
# the egress map giving PCP = priority, so PCP = SL), beside the untagged
# addresses of eth0 (10.0.3.N). First, VM a captures RC and UD pingpongs
# over the VLAN's IPv4 and IPv6 GIDs and over the untagged GID, all with
# SL 3: every packet of the VLAN's addresses must carry VID 100 and PCP 3
# (0 from rdma_rxe, which sends priority 0 whatever the SL), every packet
# of eth0's none. Then, with each VM as server: RC, UC and UD pingpongs
# with buffer checks and sroce-wire (RDMA WRITE, READ, SEND and atomics,
# every byte checked) over the VLAN GIDs; rping (IPv4, IPv6), ucmatose
# and udaddy bound to the VLAN's addresses; RC over the VLAN and the
# untagged GID at once. An SL above 6 is a privileged priority: as root
# every SL, as uid 65534 EPERM for an AH or an RC path (vlan_sl.py).
# eth0.400 has MTU 1000: RC (every byte checked), UD and rping over it
# (sroce cuts a path MTU of 1024 at the device's 512). On VM a: RC
# loopback on the VLAN's GID works, but not from the VLAN's GID to an
# address of eth0 (send_no_route); a macvlan of eth0 in a namespace with
# VM b's address does not turn VM a's traffic to VM b into loopback.
# Last, VM b sends VM a's victim QP (on its VLAN
# GID) RDMA WRITEs on the wrong VLAN, untagged, or to the wrong GID
# (vlan_dest.py), or on a VLAN with the same address, and then to a
# victim on the VLAN's IPv6 link-local GID untagged and on VLAN 200 (the
# same address is a GID of eth0 and eth0.200): each dropped and counted
# by drop_bad_dest or drop_bad_source, not a byte landed, and
# drop_bad_dest counted nothing else all along.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
mkdir -p /tmp/out
# What this script makes goes with it, however it ends, so that the next
# script in this VM finds eth0 alone: the capture, the namespace holding
# the peer's address (and its GID), the VLAN devices.
cleanup() {
	[ -n "${tshark_pid:-}" ] && kill "$tshark_pid" 2>/dev/null
	ip netns del vlan_c 2>/dev/null
	for d in eth0.100 eth0.200 eth0.300 eth0.400; do
		ip link del "$d" 2>/dev/null
	done
}
trap cleanup EXIT
rdma_up || { echo "FAIL $KIND up"; exit 1; }
n=${MY4##*.} p=${PEER4##*.}
myv4=10.60.0.$n peerv4=10.60.0.$p myv6=fd00:60::$n peerv6=fd00:60::$p
sl=3

# eth0.100 with the identity egress map (priority N -> PCP N, as RoCE
# adapters send the SL); eth0.200, on VM a the device that makes VID 200
# frames reach the IP stack (and so sroce, which must refuse them).
modprobe 8021q
ip link add link eth0 name eth0.100 type vlan id 100 \
	egress-qos-map 0:0 1:1 2:2 3:3 4:4 5:5 6:6 7:7 &&
	ip addr add "$myv4/24" dev eth0.100 &&
	ip -6 addr add "$myv6/64" dev eth0.100 nodad &&
	ip link set eth0.100 up &&
	ip link add link eth0 name eth0.200 type vlan id 200 &&
	ip addr add "10.61.0.$n/24" dev eth0.200 &&
	ip link set eth0.200 up || { echo "FAIL VLAN devices"; exit 1; }
vgidx=$(roce_v2_gid_index "$dev" "$myv4") &&
	vgidx6=$(roce_v2_gid_index "$dev" "$myv6") ||
	{ echo "FAIL $dev has no RoCEv2 GID for $myv4 or $myv6"; exit 1; }
echo "$ROLE: $dev gid index $gidx ($MY4), $vgidx ($myv4), $vgidx6 ($myv6):" \
	"ndevs $(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/$vgidx")," \
	"$(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/$vgidx6")"
busybox ping -c 1 -W 10 "$PEER4" >/dev/null
busybox ping -c 1 -W 10 "$peerv4" >/dev/null
[ "$KIND" = sroce ] && bad_dest0=$(counter drop_bad_dest)
wire=$repo/tests/bin/sroce-wire
port=18700

# retry_connect CMD...: CMD again while it cannot reach its server yet (for
# two clients started at once, where step's own retry would start both)
retry_connect() {
	local out rc
	for _ in $(seq 60); do
		out=$("$@" 2>&1); rc=$?
		[ $rc = 0 ] && break
		grep -qi "couldn't connect" <<<"$out" || break
		sleep 1
	done
	echo "$out"
	return $rc
}
export -f retry_connect

if [ "$ROLE" = a ]; then
	rm -f /tmp/vlan.pcap
	# Tagged frames too: the filter after "vlan" looks past the tag.
	dumpcap -q -i eth0 -f 'udp port 4791 or (vlan and udp port 4791)' \
		-w /tmp/vlan.pcap 2>/dev/null &
	tshark_pid=$!
	wait_for 60 test -s /tmp/vlan.pcap
	sleep 1
fi
for g in "$vgidx $peerv4 IPv4" "$vgidx6 $peerv4 IPv6" "$gidx $PEER4 untagged"; do
	read -r gi peer what <<<"$g"
	for app in rc ud; do
		port=$((port + 1))
		args="-d $dev -g $gi -l $sl -p $port -n 10 -s 1000 -c"
		step "capture: ibv_${app}_pingpong SL $sl, $what GID" a \
			"ibv_${app}_pingpong $args" "ibv_${app}_pingpong $args $peer"
	done
done
if [ "$ROLE" = a ]; then
	sleep 1
	kill -INT $tshark_pid
	wait_for 20 eval '! kill -0 $tshark_pid 2>/dev/null' ||
		kill -KILL $tshark_pid
	tshark_pid=
	cp /tmp/vlan.pcap /tmp/out/ 2>/dev/null
	# rdma_rxe sends priority 0 whatever the SL: PCP 0
	peer_pcp=$sl
	[ "${PEER_KIND:-sroce}" = rxe ] && peer_pcp=0
	decode "capture: VID 100 and PCP from the SL on the VLAN, no tag beside it" \
		vlan_pcap.py /tmp/vlan.pcap 100 \
		"$myv4=$sl" "$peerv4=$peer_pcp" "$myv6=$sl" "$peerv6=$peer_pcp" \
		-- "$MY4" "$PEER4"
fi

# The SL is the packets' priority: above 6 (its 4 bits) only with
# CAP_NET_RAW or CAP_NET_ADMIN, as SO_PRIORITY. Root may; uid 65534
# (setpriv drops every capability) gets EPERM for an AH and for an RC
# QP's path alike, and SL 22 is priority 6. sroce only: rdma_rxe ignores
# the SL.
if [ "$KIND" = sroce ]; then
	sl_py=$(dirname "$0")/vlan_sl.py
	check "SL 0, 6, 7, 15 as root: AH and RC path" \
		/usr/bin/python3 "$sl_py" "$dev" "$vgidx" 0=ok 6=ok 7=ok 15=ok
	# the memlock limit raised first (setpriv keeps it), for the rings
	check "SL above 6 as uid 65534: EPERM, AH and RC path" \
		bash -c 'ulimit -l unlimited &&
			exec setpriv --reuid=65534 --regid=65534 --clear-groups \
			/usr/bin/python3 "$0" "$1" "$2" 0=ok 6=ok 22=ok \
			7=EPERM 15=EPERM 23=EPERM' "$sl_py" "$dev" "$vgidx"
fi

for s in a b; do
	c=$([ $s = a ] && echo b || echo a)
	for app in rc uc ud; do
		port=$((port + 1))
		size=4096; [ $app = ud ] && size=1024
		args="-d $dev -g $vgidx -p $port -n 100 -s $size -c"
		step "VLAN: ibv_${app}_pingpong server $s client $c" $s \
			"ibv_${app}_pingpong $args" "ibv_${app}_pingpong $args $peerv4"
	done
	port=$((port + 1))
	args="-d $dev -g $vgidx6 -p $port -n 100 -s 4096 -c"
	step "VLAN IPv6: ibv_rc_pingpong server $s client $c" $s \
		"ibv_rc_pingpong $args" "ibv_rc_pingpong $args $peerv4"
	port=$((port + 1))
	step "VLAN: sroce-wire server $s client $c" $s \
		"$wire $dev $vgidx -p $port -n 50 -s 3000" \
		"$wire $dev $vgidx -p $port -n 50 -s 3000 $peerv4"
	# rdma_cm: the CM's MADs on QP1 go tagged and come back tagged; the
	# answer's GID is found by the VLAN the request arrived on.
	port=$((port + 1))
	step "VLAN: rping -V server $s client $c" $s \
		"$repo/tests/rping.sh -s -a $myv4 -p $port -C 10 -S 4000 -V" \
		"$repo/tests/rping.sh -c -a $peerv4 -p $port -C 10 -S 4000 -V"
	port=$((port + 1))
	step "VLAN IPv6: rping -V server $s client $c" $s \
		"$repo/tests/rping.sh -s -a $myv6 -p $port -C 5 -S 30000 -V" \
		"$repo/tests/rping.sh -c -a $peerv6 -p $port -C 5 -S 30000 -V"
	port=$((port + 1))
	cm_step "VLAN: ucmatose server $s client $c" $s $port \
		"ucmatose -b $myv4 -p $port -c 2 -C 10" \
		"ucmatose -b $myv4 -s $peerv4 -p $port -c 2 -C 10"
	port=$((port + 1))
	cm_step "VLAN: udaddy server $s client $c" $s $port \
		"udaddy -b $myv4 -c 2 -C 10" \
		"udaddy -b $myv4 -s $peerv4 -c 2 -C 10"
	# The untagged GID beside the VLAN's, at the same time
	port=$((port + 2))
	a1="-d $dev -g $gidx -p $((port - 1)) -n 200 -s 4096 -c"
	a2="-d $dev -g $vgidx -p $port -n 200 -s 4096 -c"
	step "untagged and VLAN RC at once, server $s client $c" $s \
		"ibv_rc_pingpong $a1 & p=\$!; ibv_rc_pingpong $a2; r=\$?; wait \$p && [ \$r = 0 ]" \
		"retry_connect ibv_rc_pingpong $a1 $PEER4 & p=\$!; retry_connect ibv_rc_pingpong $a2 $peerv4; r=\$?; wait \$p && [ \$r = 0 ]"
done

# A VLAN with a smaller MTU than eth0: eth0.400 at 1000 bytes, where a
# packet of 1024 bytes of payload (eth0's active MTU, which sroce-wire
# takes as its path MTU, and ibv_rc_pingpong's default) does not fit.
# sroce cuts the messages of a path on eth0.400's GID at 512: before, it
# cut them at eth0's MTU and every full packet was dropped (DF). Both ends
# must cut alike: rdma_rxe takes its port's MTU, so against it the path
# MTU asked for is 512. The RDMA CM takes the VLAN's MTU (512) on both.
ip link add link eth0 name eth0.400 type vlan id 400 &&
	ip link set eth0.400 mtu 1000 &&
	ip addr add "10.62.0.$n/24" dev eth0.400 &&
	ip link set eth0.400 up || echo "FAIL eth0.400"
sgidx=$(roce_v2_gid_index "$dev" "10.62.0.$n") ||
	echo "FAIL $dev has no RoCEv2 GID for 10.62.0.$n"
busybox ping -c 1 -W 10 "10.62.0.$p" >/dev/null
both_sroce=
[ "$KIND" = sroce ] && [ "${PEER_KIND:-sroce}" = sroce ] && both_sroce=1
for s in a b; do
	c=$([ $s = a ] && echo b || echo a)
	mtu_arg="-m 512"
	if [ -n "$both_sroce" ]; then
		mtu_arg=
		port=$((port + 1))
		step "MTU 1000 VLAN: sroce-wire, path MTU 1024, server $s client $c" $s \
			"$wire $dev $sgidx -p $port -n 50 -s 3000" \
			"$wire $dev $sgidx -p $port -n 50 -s 3000 10.62.0.$p"
	fi
	port=$((port + 1))
	args="-d $dev -g $sgidx -p $port -n 100 -s 4096 -c $mtu_arg"
	step "MTU 1000 VLAN: ibv_rc_pingpong ${mtu_arg:-path MTU 1024}, server $s client $c" $s \
		"ibv_rc_pingpong $args" "ibv_rc_pingpong $args 10.62.0.$p"
	port=$((port + 1))
	args="-d $dev -g $sgidx -p $port -n 100 -s 400 -c"
	step "MTU 1000 VLAN: ibv_ud_pingpong server $s client $c" $s \
		"ibv_ud_pingpong $args" "ibv_ud_pingpong $args 10.62.0.$p"
	port=$((port + 1))
	step "MTU 1000 VLAN: rping -V server $s client $c" $s \
		"$repo/tests/rping.sh -s -a 10.62.0.$n -p $port -C 5 -S 30000 -V" \
		"$repo/tests/rping.sh -c -a 10.62.0.$p -p $port -C 5 -S 30000 -V"
done
ip link del eth0.400

# Loopback only between GIDs of one device. On VM a (sroce): an RC
# pingpong between two of its QPs on the VLAN's GID is looped back; from
# the VLAN's IPv6 GID to an address of eth0 (fd00:3::N) it is not, as the
# wire would not carry it across VLANs: the route to a local address
# leaves through the loopback device, which sroce refuses
# (send_no_route), and the client's retries run out. Both VMs count the
# two ports of these steps, so that the steps after them have the same
# ports on both: VM b's next client would meet VM a's loopback server
# otherwise. VM b goes on to the next step, whose client waits for VM a.
lo_port1=$((port + 1)) lo_port2=$((port + 2))
port=$((port + 2))
if [ "$ROLE" = a ] && [ "$KIND" = sroce ]; then
	# local_rc PORT SERVER_GID CLIENT_GID: an RC pingpong between two
	# QPs of this VM; the client's status. The two exchange their QPs
	# over TCP on 127.0.0.1: the pingpong's server listens on IPv4
	# alone (it binds the first of getaddrinfo's passive addresses,
	# 0.0.0.0 before ::), and the path is between the two GIDs, whatever
	# address the exchange took. Output in /tmp/out/local-*-PORT.log.
	local_rc() {
		local srv rc log=/tmp/out/local
		timeout -k 5 "$(tmo 40)" stdbuf -oL ibv_rc_pingpong -d "$dev" \
			-g "$2" -p "$1" -n 10 -c > "$log-server-$1.log" 2>&1 &
		srv=$!
		if wait_for 10 tcp_listening "$1"; then
			timeout -k 5 "$(tmo 30)" ibv_rc_pingpong -d "$dev" -g "$3" \
				-p "$1" -n 10 -c 127.0.0.1 > "$log-client-$1.log" 2>&1
			rc=$?
		else
			echo "no server listening on port $1" > "$log-client-$1.log"
			rc=1
		fi
		kill "$srv" 2>/dev/null
		wait "$srv" 2>/dev/null
		return $rc
	}
	# local_logs PORT: what local_rc's programs said, for a failure
	local_logs() {
		local f
		for f in /tmp/out/local-{server,client}-"$1".log; do
			echo "    ${f##*/}:"
			sed 's/^/      /' "$f"
		done
	}
	local_rc "$lo_port1" "$vgidx" "$vgidx"
	rc=$?
	check "loopback on the VLAN's GID: RC within VM a" [ $rc = 0 ]
	[ $rc = 0 ] || local_logs "$lo_port1"
	# (fd00:3::N is eth0's own address: sroce_ip6 of vm-pair.sh)
	if bgidx6=$(roce_v2_gid_index "$dev" "fd00:3::$n"); then
		no_route0=$(counter send_no_route)
		local_rc "$lo_port2" "$bgidx6" "$vgidx6"
		grep -q 'retry counter exceeded' "/tmp/out/local-client-$lo_port2.log"
		rc=$?
		check "no loopback from the VLAN's GID to eth0's: retries run out" \
			[ $rc = 0 ]
		[ $rc = 0 ] || local_logs "$lo_port2"
		no_route=$(( $(counter send_no_route) - no_route0 ))
		check "send_no_route grew by $no_route, expected more than 0" \
			[ "$no_route" -gt 0 ]
	else
		check "$dev has a RoCEv2 GID for fd00:3::$n" false
	fi
fi

# A macvlan of eth0 on VM a, in a namespace of its own (a container),
# with VM b's address: ib_core makes a GID of it, which sroce never sends
# from. It must not make VM a's paths to VM b local (they would be looped
# back to VM a's own QP numbers): RC between the VMs still passes. VM b's
# first client waits out VM a's steps of its own above (each bounded):
# more tries than a step's 60.
if [ "$ROLE" = a ]; then
	ip netns add vlan_c &&
		ip link add link eth0 name mv0 type macvlan mode bridge &&
		ip link set mv0 netns vlan_c &&
		ip -n vlan_c addr add "$PEER4/24" dev mv0 &&
		ip -n vlan_c link set mv0 up &&
		roce_v2_gid_index "$dev" "$PEER4" mv0 >/dev/null ||
		echo "FAIL a GID of $PEER4 on mv0 in namespace vlan_c"
fi
for s in a b; do
	c=$([ $s = a ] && echo b || echo a)
	port=$((port + 1))
	args="-d $dev -g $gidx -p $port -n 100 -s 4096 -c"
	STEP_TRIES=$(tmo 180) \
		step "eth0 RC beside a macvlan with the peer's address, server $s client $c" $s \
		"ibv_rc_pingpong $args" "ibv_rc_pingpong $args $PEER4"
done
# The namespace goes, and mv0 in it; the GID of the peer's address with it
if [ "$ROLE" = a ]; then
	ip netns del vlan_c
	wait_for 30 eval "! grep -qx mv0 /sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/* 2>/dev/null" ||
		echo "FAIL $dev still has a GID on mv0 after its namespace went"
fi

# The wrong VLAN, untagged, the wrong GID: VM b's vlan_dest.py sends each
# kind 5 times at a victim QP of VM a on its VLAN GID. rp_filter off on
# VM a: base_gid_to_vlan_qp comes untagged from the VLAN's address.
# VM a's eth0.300 has the victim's VLAN address too, so that it is a GID
# of eth0.300 as well (as an IPv6 link-local address is a GID of eth0 and
# of every VLAN on it): vid300_same_addr passes the destination check, and
# the QP takes it only on its own GID's device.
kinds=5
port=$((port + 1))
if [ "$ROLE" = a ]; then
	ip link add link eth0 name eth0.300 type vlan id 300 &&
		ip addr add "$myv4/32" dev eth0.300 &&
		ip link set eth0.300 up &&
		wait_for 10 eval "grep -qx eth0.300 /sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/* 2>/dev/null" ||
		echo "FAIL eth0.300 with $myv4 and its GID"
	for d in all default eth0 eth0.100 eth0.200 eth0.300; do
		echo 0 > "/proc/sys/net/ipv4/conf/$d/rp_filter"
	done
	declare -A before
	for k in drop_bad_dest drop_bad_source drop_no_qp; do
		before[$k]=$(counter $k)
	done
	step "VLAN victim QP: memory untouched by packets on the wrong VLAN" a \
		"$wire $dev $vgidx -p $port -n 1 -s 4096 -V" ""
	# grown NAME: how much counter NAME grew during the attack
	grown() { echo $(( $(counter "$1") - before[$1] )); }
	# base_gid_to_vlan_qp and vid300_same_addr are counted when the
	# victim's engine takes them
	wait_for 30 eval '[ $(grown drop_bad_source) -ge $((2 * kinds)) ]'
	check "drop_bad_dest grew by $(grown drop_bad_dest), expected $((3 * kinds))" \
		[ "$(grown drop_bad_dest)" -eq $((3 * kinds)) ]
	check "drop_bad_source grew by $(grown drop_bad_source), expected $((2 * kinds))" \
		[ "$(grown drop_bad_source)" -eq $((2 * kinds)) ]
	check "drop_no_qp grew by $(grown drop_no_qp), expected $kinds" \
		[ "$(grown drop_no_qp)" -eq $kinds ]
	ip link del eth0.300
else
	busybox ping -c 1 -W 10 "$PEER4" >/dev/null
	peer_mac=$(ip neigh show "$PEER4" dev eth0 |
		awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }')
	step "VLAN victim QP: memory untouched by packets on the wrong VLAN" a "" \
		"/usr/bin/python3 $(dirname "$0")/vlan_dest.py eth0 $peer_mac $PEER4 $peerv4 $MY4 $myv4 10.61.0.$n $port $kinds"
fi
# The same on IPv6 link-local: VM a's victim QP on the link-local address
# of its eth0.100, which is also a GID of eth0 and of eth0.200 (one MAC,
# one EUI-64 address). VM b sends it WRITEs untagged and on VID 200, from
# the address the QP is connected to (drop_bad_source), and to no QP on
# VID 100 (drop_no_qp).
port=$((port + 1))
# link_local DEV: the IPv6 link-local address of DEV
link_local() {
	ip -6 -o addr show dev "$1" scope link |
		awk '{ sub("/.*", "", $4); print $4; exit }'
}
wait_for 10 eval '[ -n "$(link_local eth0.100)" ]' ||
	echo "FAIL eth0.100 has no IPv6 link-local address"
if [ "$ROLE" = a ]; then
	ll=$(link_local eth0.100)
	[ "$ll" = "$(link_local eth0)" ] ||
		echo "FAIL eth0.100's link-local address $ll is not eth0's (EUI-64)"
	llgidx=$(roce_v2_gid_index "$dev" "$ll" eth0.100) &&
		roce_v2_gid_index "$dev" "$ll" eth0.200 >/dev/null ||
		echo "FAIL no GID of $ll on eth0.100 and eth0.200"
	for k in drop_bad_dest drop_bad_source drop_no_qp; do
		before[$k]=$(counter $k)
	done
	step "VLAN link-local victim QP: memory untouched by packets off its VLAN" a \
		"$wire $dev $llgidx -p $port -n 1 -s 4096 -V" ""
	wait_for 30 eval '[ $(grown drop_bad_source) -ge $((2 * kinds)) ]'
	check "link-local: drop_bad_source grew by $(grown drop_bad_source), expected $((2 * kinds))" \
		[ "$(grown drop_bad_source)" -eq $((2 * kinds)) ]
	check "link-local: drop_no_qp grew by $(grown drop_no_qp), expected $kinds" \
		[ "$(grown drop_no_qp)" -eq $kinds ]
	check "link-local: drop_bad_dest grew by $(grown drop_bad_dest), expected 0" \
		[ "$(grown drop_bad_dest)" -eq 0 ]
else
	step "VLAN link-local victim QP: memory untouched by packets off its VLAN" a "" \
		"/usr/bin/python3 $(dirname "$0")/vlan_dest.py --link-local eth0 $peer_mac $peerv4 $(link_local eth0.100) $port $kinds"
fi
port=$((port + 1))
step "VLAN RC after the wrong-VLAN packets (server a)" a \
	"$wire $dev $vgidx -p $port -n 50" "$wire $dev $vgidx -p $port -n 50 $peerv4"
# Nothing of the real traffic was ever refused by its destination
if [ "$KIND" = sroce ]; then
	want=0; [ "$ROLE" = a ] && want=$((3 * kinds))
	d=$(( $(counter drop_bad_dest) - bad_dest0 ))
	check "drop_bad_dest grew by $d in all, expected $want" [ "$d" -eq "$want" ]
	echo "$ROLE counters: $(counters)"
fi
echo "$ROLE: $passed passed, $failed failed"
[ $failed = 0 ]
