# A port that is not ACTIVE sends nothing, loopback included, as an adapter
# on a DOWN port and rdma_rxe (whose route lookup fails on a device that is
# down): sroce-xfer's port_down connects two RC QPs of sroce0 on its IPv4
# GID and WRITEs once while eth0 is up (it lands); eth0 then goes down, and
# a WRITE between the same QPs must land nothing (the target's bytes, guard
# pages included, as they were; the source differs), complete with
# RETRY_EXC_ERR once the transport timer's retries are spent, and count
# each packet in send_port_down and none in sent_pkts; eth0 comes back up,
# and a WRITE between two new QPs lands. sroce0's port must say DOWN, then
# ACTIVE, as before.
# Look first, when it fails: "expected RETRY_EXC_ERR" with SUCCESS is
# sroce_pkt_xmit() delivering a looped-back packet on a DOWN port; a
# WRITE after eth0 came back that does not land is a port check that
# stayed shut (sroce_ndev_active()).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
out=$(mktemp)
pid="" ip6s=""
cleanup() {
	local a
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
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
port_is() { [ "$(port_field sroce0 state)" = "$1" ]; }
said() { grep -qx "$1" "$out"; }
drops0=$(port_counter send_port_down)
[ -n "$drops0" ] || fail "no send_port_down counter:" \
	"$(rdma statistic show link sroce0/1)"

timeout "$(tmo 120)" "$xfer" sroce0 port_down rc 1024 > "$out" 2>&1 &
pid=$!
wait_for 30 said "waiting for port 1 to go DOWN" ||
	fail "sroce-xfer port_down did not get ready: $(cat "$out")"
ip link set eth0 down || fail "ip link set eth0 down"
wait_for 10 port_is 1 || fail "port $(port_field sroce0 state) after" \
	"eth0 went down, expected 1 (DOWN)"
wait_for 60 said "waiting for port 1 to be ACTIVE" ||
	fail "the WRITE while eth0 was down did not end: $(cat "$out")"
ip link set eth0 up || fail "ip link set eth0 up"
wait_for 10 port_is 4 || fail "port $(port_field sroce0 state) 10 s after" \
	"eth0 came up, expected 4 (ACTIVE)"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] || fail "sroce-xfer port_down (status $rc): $(cat "$out")"
said "port_down ok" || fail "sroce-xfer port_down: $(cat "$out")"
drops=$(($(port_counter send_port_down) - drops0))
[ "$drops" -ge 8 ] || fail "send_port_down grew by $drops, expected at" \
	"least 8 (a WRITE and its 7 resends)"
no_user_objects sroce0
