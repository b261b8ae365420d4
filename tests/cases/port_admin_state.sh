# The port is DOWN/DISABLED while the netdev is down, ACTIVE/LINK_UP when up.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'ip link set eth0 up' EXIT
link_add sroce0 eth0
expect_eq "state when up" 4 "$(port_field sroce0 state)"
ip link set eth0 down
expect_eq "state when down" 1 "$(port_field sroce0 state)"
expect_eq "phys_state when down" 3 "$(port_field sroce0 phys_state)"
ip link set eth0 up
wait_for 10 eval '[ "$(port_field sroce0 state)" = 4 ]' ||
	fail "port not ACTIVE 10 s after eth0 came up"
expect_eq "phys_state when up" 5 "$(port_field sroce0 phys_state)"
