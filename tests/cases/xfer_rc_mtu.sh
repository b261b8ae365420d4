# RC data moves at every path MTU from 256 to 4096 (netdev MTU 9000).
. "$(dirname "$0")/../lib.sh"
trap 'ip link set eth0 mtu 1500' EXIT
ip link set eth0 mtu 9000
link_add sroce0 eth0
for mtu in 256 512 2048 4096; do
	xfer_all sroce0 rc $mtu send write read stream
done
