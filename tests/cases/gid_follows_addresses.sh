# The GID table holds a RoCEv2 GID for each address of the netdev and
# follows addresses as they are added and removed (IPv4 and IPv6).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'ip addr del 10.0.2.99/24 dev eth0 2>/dev/null; ip addr del fd00:5e::99/64 dev eth0 2>/dev/null' EXIT
link_add sroce0 eth0
gids() { "$check" gids sroce0; }
gids | grep -q ' ::ffff:10.0.2.15 RoCEv2$' || fail "no GID for 10.0.2.15: $(gids)"
gids | grep -q ' fd00:5e::15 RoCEv2$' || fail "no GID for fd00:5e::15: $(gids)"
gids | grep -q '^0 fe80::.* RoCEv2$' || fail "no link-local GID at 0: $(gids)"
gids | grep -qv 'RoCEv2$' && fail "a GID that is not RoCEv2: $(gids)"

ip addr add 10.0.2.99/24 dev eth0
ip -6 addr add fd00:5e::99/64 dev eth0 nodad
wait_for 10 eval 'gids | grep -q " ::ffff:10.0.2.99 RoCEv2$"' ||
	fail "no GID for an added IPv4 address: $(gids)"
wait_for 10 eval 'gids | grep -q " fd00:5e::99 RoCEv2$"' ||
	fail "no GID for an added IPv6 address: $(gids)"
ip addr del 10.0.2.99/24 dev eth0
ip -6 addr del fd00:5e::99/64 dev eth0
wait_for 10 eval '! gids | grep -q "10.0.2.99\|fd00:5e::99"' ||
	fail "GIDs of removed addresses remain: $(gids)"
