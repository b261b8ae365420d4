# Two links on two netdevs live side by side and are deleted independently.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'ip link del va 2>/dev/null' EXIT
ip link add va type veth peer name vb || fail "cannot create veth"
ip link set va up; ip link set vb up
link_add sroce0 eth0
link_add sroce1 va
rdma link show sroce1/1 | grep -q 'netdev va' ||
	fail "rdma link show sroce1: $(rdma link show sroce1/1)"
[ "$(ibv_devices | grep -c 'sroce[01] ')" = 2 ] ||
	fail "ibv_devices: $(ibv_devices)"
rdma link delete sroce1 || fail "rdma link delete sroce1"
ibdev_exists sroce0 || fail "deleting sroce1 removed sroce0"
! ibdev_exists sroce1 || fail "sroce1 still exists"
