# Device and port attributes as libibverbs reports them through our provider.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
out=$("$check" attrs sroce0) || fail "attribute checks failed"
mac=$(cat /sys/class/net/eth0/address)
guid=$(echo "$mac" | awk -F: '{printf "%s%s%sfffe%s%s%s", $1, $2, $3, $4, $5, $6}')
guid=$(printf '%02x%s' $((0x${guid:0:2} ^ 2)) "${guid:2}")
expect_eq "node GUID from the MAC $mac" "fw_ver=0.1.0 node_guid=$guid" "$out"
ibv_devinfo -d sroce0 | grep -q 'state:.*PORT_ACTIVE' ||
	fail "ibv_devinfo: $(ibv_devinfo -d sroce0)"
