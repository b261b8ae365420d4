# Losing and regaining carrier moves the port DOWN and ACTIVE and delivers
# IBV_EVENT_PORT_ERR then IBV_EVENT_PORT_ACTIVE to applications.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
ev=$(mktemp)
trap 'ip link del va 2>/dev/null; rm -f "$ev"' EXIT
ip link add va type veth peer name vb || fail "cannot create veth"
ip link set va up; ip link set vb up
wait_for 10 eval '[ "$(cat /sys/class/net/va/carrier)" = 1 ]' || fail "no carrier on va"
link_add sroce1 va
expect_eq "state with carrier" 4 "$(port_field sroce1 state)"

"$check" events sroce1 2 20 > "$ev" &
pid=$!
wait_for 10 grep -q ready "$ev" || fail "event listener did not start"
ip link set vb down
wait_for 10 eval '[ "$(port_field sroce1 state)" = 1 ]' ||
	fail "port not DOWN after carrier loss"
ip link set vb up
wait_for 10 eval '[ "$(port_field sroce1 state)" = 4 ]' ||
	fail "port not ACTIVE after carrier came back"
wait "$pid" || fail "events: $(cat "$ev")"
expect_eq "async events" "ready
event port error port 1
event port active port 1" "$(cat "$ev")"
