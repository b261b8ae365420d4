# max_cq is what the device enforces, the CQ ib_mad holds included: CQ number
# max_cq+1 fails with ENOMEM.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
"$check" limit sroce0 cq "$(kernel_objects cq sroce0)" || fail "max_cq not enforced as reported"
