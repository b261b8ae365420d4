# PDs allocate and free in many contexts at once; none are left behind.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
"$check" pds sroce0 16 64 || fail "PD allocation across 16 contexts"
n=$(user_objects pd sroce0)
expect_eq "PDs left in rdma resource" 0 "$n"
