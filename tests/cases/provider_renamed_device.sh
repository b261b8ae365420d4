# A renamed sroce device is still served by our provider.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
rdma dev set sroce0 name roce7 || fail "rdma dev set name"
ibdev_exists roce7 || fail "roce7 missing after rename"
out=$(ibv_devinfo -d roce7) || fail "ibv_devinfo -d roce7: $out"
echo "$out" | grep -q 'fw_ver:[[:space:]]*0.1.0' || fail "fw_ver: $out"
"$check" pds roce7 1 4 || fail "PDs on the renamed device"
rdma link delete roce7 || fail "rdma link delete roce7"
