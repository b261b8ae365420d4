# Links come and go while their netdevs are removed at the same moment, and
# the module is unloaded while a netdev removal is still being processed:
# every path ends with no device left and a clean kernel log.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'for i in $(seq 0 9); do ip link del ca$i 2>/dev/null; done' EXIT
for round in $(seq 1 10); do
	for i in $(seq 0 3); do
		ip link add ca$i type veth peer name cb$i || fail "veth ca$i"
		rdma link add sroce$((i + 1)) type sroce netdev ca$i ||
			fail "round $round: link on ca$i"
	done
	ip link del ca0 & rdma link delete sroce1 2>/dev/null &
	ip link del ca1 & ip link del cb2 &
	rdma link delete sroce4 &
	wait
	ip link del ca3 2>/dev/null
	wait_for 10 eval '! ls /sys/class/infiniband | grep -q "sroce[1-4]"' ||
		fail "round $round: devices left: $(ls /sys/class/infiniband)"
done
ip link add ca9 type veth peer name cb9
link_add sroce9 ca9
ip link del ca9 & rmmod sroce; wait
sroce_loaded && fail "rmmod sroce failed"
compgen -G '/sys/class/infiniband/*sroce*' >/dev/null &&
	fail "devices left after rmmod"
true
