# The device's parent is the netdev's parent: device/net/eth0 exists in sysfs.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
[ -d /sys/class/infiniband/sroce0/device/net/eth0 ] ||
	fail "no /sys/class/infiniband/sroce0/device/net/eth0"
