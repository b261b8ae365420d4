# rdma link add creates sroce0 on eth0; delete removes it; it can be re-added.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
rdma link show sroce0/1 | grep -q 'state ACTIVE .*netdev eth0' ||
	fail "rdma link show: $(rdma link show sroce0/1)"
rdma dev show sroce0 | grep -q 'node_type ca fw 0.1.0' ||
	fail "rdma dev show: $(rdma dev show sroce0)"
rdma link delete sroce0 || fail "rdma link delete sroce0"
! ibdev_exists sroce0 || fail "sroce0 still exists after delete"
link_add sroce0 eth0
ibv_devices | grep -q '^ *sroce0 ' || fail "ibv_devices: $(ibv_devices)"
