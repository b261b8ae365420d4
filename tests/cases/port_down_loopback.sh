# A path whose device is down sends nothing, loopback included, as an
# adapter on a DOWN port and rdma_rxe (whose route lookup fails on a
# device that is down). sroce-xfer's port_down connects two RC QPs of
# sroce0 on the IPv4 GID of a network device and WRITEs once while it is
# up (it lands); the device then goes down, and a WRITE between the same
# QPs must land nothing (the target's bytes, guard pages included, as they
# were; the source differs), complete with RETRY_EXC_ERR once the
# transport timer's retries are spent, and count each packet as dropped
# for its cause, none in sent_pkts or the other cause's counter; the
# device comes back up, and a WRITE between two new QPs lands. Twice, by sroce_pkt_xmit()'s two checks:
# - eth0, the port's own: the port must say DOWN (sysfs), then ACTIVE, as
#   before, and the packets count in send_port_down;
# - eth0.77, a VLAN device on eth0 with an IPv4 address of its own: eth0
#   stays up, so the port stays ACTIVE (sysfs) all along, and the packets
#   count in send_no_route (the source GID's device is down).
# Look first, when it fails: "expected RETRY_EXC_ERR" with SUCCESS is
# sroce_pkt_xmit() delivering a looped-back packet while the port
# (sroce_ndev_active()) or the GID's device (sroce_av_gid_active()) is
# down; a WRITE after the device came back that does not land is a check
# that stayed shut.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
out=$(mktemp)
vlan=eth0.77 vip=10.77.0.1
pid="" ip6s=""
cleanup() {
	local a
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	ip link del "$vlan" 2>/dev/null
	ip link set eth0 up
	# Going down removed eth0's global IPv6 addresses: give them back.
	for a in $ip6s; do
		ip -6 -o addr show dev eth0 | grep -qF " $a " ||
			ip -6 addr add "$a" dev eth0 nodad
	done
	rm -f "$out"
}
trap cleanup EXIT
link_add sroce0 eth0
ip6s=$(ip -6 -o addr show dev eth0 scope global | awk '{ print $4 }')
port_state() { cat /sys/class/infiniband/sroce0/ports/1/state; }
port_is() { [ "$(port_state)" = "$1" ]; }
said() { grep -qx "$1" "$out"; }

# fault DEV STATE COUNTER: sroce-xfer port_down on DEV's IPv4 GID, DEV set
# down and up when it asks; port 1 must say STATE while DEV is down, and
# COUNTER must grow by a WRITE and its 7 resends at least
fault() {
	local dev=$1 state=$2 counter=$3 d0 drops rc
	d0=$(port_counter "$counter")
	[ -n "$d0" ] || fail "no $counter counter:" \
		"$(rdma statistic show link sroce0/1)"
	timeout "$(tmo 120)" "$xfer" sroce0 port_down rc 1024 "$dev" \
		> "$out" 2>&1 &
	pid=$!
	wait_for 30 said "waiting for $dev to go down" ||
		fail "sroce-xfer port_down $dev did not get ready: $(cat "$out")"
	ip link set "$dev" down || fail "ip link set $dev down"
	wait_for 10 port_is "$state" || fail "port '$(port_state)' after" \
		"$dev went down, expected '$state'"
	wait_for 60 said "waiting for $dev to come up" ||
		fail "the WRITE while $dev was down did not end: $(cat "$out")"
	port_is "$state" || fail "port '$(port_state)' while $dev was" \
		"down, expected '$state'"
	ip link set "$dev" up || fail "ip link set $dev up"
	wait_for 10 port_is "4: ACTIVE" || fail "port '$(port_state)' 10 s" \
		"after $dev came up, expected '4: ACTIVE'"
	wait "$pid"
	rc=$?
	pid=
	[ $rc = 0 ] || fail "sroce-xfer port_down $dev (status $rc): $(cat "$out")"
	said "port_down ok" || fail "sroce-xfer port_down $dev: $(cat "$out")"
	drops=$(($(port_counter "$counter") - d0))
	[ "$drops" -ge 8 ] || fail "$counter grew by $drops while $dev was" \
		"down, expected at least 8 (a WRITE and its 7 resends)"
}

fault eth0 "1: DOWN" send_port_down
ip link add link eth0 name "$vlan" type vlan id 77 &&
	ip addr add "$vip/24" dev "$vlan" && ip link set "$vlan" up ||
	fail "cannot set up $vlan"
wait_for 10 eval '"$check" gids sroce0 | grep -q " ::ffff:$vip RoCEv2$"' ||
	fail "no GID for $vip on $vlan: $("$check" gids sroce0)"
fault "$vlan" "4: ACTIVE" send_no_route
ip link del "$vlan" || fail "ip link del $vlan"
no_user_objects sroce0
