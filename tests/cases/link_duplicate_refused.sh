# A second sroce link on the same netdev is refused with EEXIST.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
out=$(rdma link add sroce1 type sroce netdev eth0 2>&1) &&
	fail "a second link on eth0 was accepted"
echo "$out" | grep -q 'File exists' || fail "expected EEXIST, got: $out"
! ibdev_exists sroce1 || fail "sroce1 was created"
ibdev_exists sroce0 || fail "sroce0 disappeared"
