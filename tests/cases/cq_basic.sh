# CQs: sizes up to max_cqe, bad sizes and comp_vector give EINVAL, resize up
# and down, arming, completion channels; "rdma resource show cq" gives each
# CQ's size after each resize and the QP references it has, and shows none
# left.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
"$check" cq sroce0 || fail "CQ checks"
n=$(user_objects cq sroce0)
expect_eq "CQs left in rdma resource" 0 "$n"
