# rmmod with two devices and an open context removes both devices cleanly;
# the application sees DEVICE_FATAL; the module loads again afterwards.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
out=$(mktemp); trap 'rm -f "$out"; ip link del va 2>/dev/null' EXIT
ip link add va type veth peer name vb || fail "cannot create veth"
link_add sroce0 eth0
link_add sroce1 va
"$check" hold sroce0 3 > "$out" &
pid=$!
wait_for 10 grep -q ready "$out" || fail "holder did not start: $(cat "$out")"
timeout 30 rmmod sroce || fail "rmmod sroce with a live context"
wait "$pid" || fail "holder: $(cat "$out")"
! ibdev_exists sroce0 && ! ibdev_exists sroce1 || fail "devices remain after rmmod"
load_sroce || fail "sroce does not load again"
link_add sroce0 eth0
