# ibv_reg_mr / ibv_dereg_mr: lkey == rkey with a random tag and an index not
# reused right away; EINVAL for remote write/atomic without local write, an
# unknown access bit, length 0; EFAULT for unmapped memory and for write
# access to read-only pages; a 1 GiB MR; none left afterwards.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
"$check" mr sroce0 || fail "MR checks"
n=$(user_objects mr sroce0)
expect_eq "MRs left in rdma resource" 0 "$n"
