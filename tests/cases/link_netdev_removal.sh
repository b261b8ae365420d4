# Removing the netdev removes the sroce device bound to it.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'ip link del va 2>/dev/null' EXIT
ip link add va type veth peer name vb || fail "cannot create veth"
link_add sroce1 va
ip link del va || fail "ip link del va"
wait_for 10 eval '! ibdev_exists sroce1' ||
	fail "sroce1 still exists 10 s after its netdev was removed"
