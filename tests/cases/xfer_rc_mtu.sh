# RC data moves at every path MTU from 256 to 4096 (netdev MTU 9000).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'set_mtu eth0 1500' EXIT
set_mtu eth0 9000
link_add sroce0 eth0
for mtu in 256 512 2048 4096; do
	xfer_all sroce0 rc $mtu send write read stream
done
