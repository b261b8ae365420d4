# max_ah, max_srq, max_mcast_grp and max_mcast_qp_attach are what the device
# enforces: one more fails with ENOMEM, and one can be made again once one is
# freed. (max_pd and max_cq: pd_limit.sh, cq_limit.sh.)
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
for kind in ah srq mcast attach; do
	"$check" limit sroce0 $kind 0 || fail "max $kind not enforced as reported"
done
