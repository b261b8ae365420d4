# sroce refuses netdevs that are not Ethernet (here: loopback) with EINVAL.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
out=$(rdma link add sroce9 type sroce netdev lo 2>&1) &&
	fail "a link on lo was accepted"
echo "$out" | grep -q 'Invalid argument' || fail "expected EINVAL, got: $out"
! ibdev_exists sroce9 || fail "sroce9 was created"
