# rdma_cm over sroce0 in one VM (connection management MADs on the GSI QP,
# QP1, looped back through the device): rping with data verification,
# ucmatose (RC connections, sends), udaddy (UD), rdma_server/rdma_client.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
modprobe rdma_ucm || fail "modprobe rdma_ucm"
link_add sroce0 eth0
# ib_mad's GSI QP is QP1, shown as the kernel's.
res_lines qp sroce0 | grep -q 'lqpn 1 type GSI' ||
	fail "no GSI QP1: $(rdma resource show qp)"
ip=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$ip" ] || fail "eth0 has no IPv4 address"
listening() { rdma resource show cm_id | grep -q 'state LISTEN'; }
# pair 'SERVER CMD' 'CLIENT CMD': both must succeed. The client starts once
# the server's rdma_cm ID listens (a slow VM can take more than a second to
# get there; a UD client that comes first is told its service is
# unsupported, RDMA_CM_EVENT_UNREACHABLE).
pair() {
	local srv out
	srv=$(mktemp)
	timeout "$(tmo 60)" $1 > "$srv" 2>&1 &
	local pid=$!
	wait_for 10 listening ||
		fail "$1 does not listen: $(rdma resource show cm_id)"
	out=$(timeout "$(tmo 60)" $2 2>&1) ||
		fail "$2: $out"$'\n'"server ($1): $(cat "$srv")"
	wait $pid || fail "$1: $(cat "$srv")"$'\n'"client: $out"
	rm -f "$srv"
}
pair "$repo/tests/rping.sh -s -a $ip -p 7174 -C 20 -v" "$repo/tests/rping.sh -c -a $ip -p 7174 -C 20 -v -V"
pair "ucmatose -c 4 -C 20" "ucmatose -s $ip -c 4 -C 20"
pair "udaddy -c 4 -C 20" "udaddy -s $ip -c 4 -C 20"
pair "rdma_server -p 7177" "rdma_client -s $ip -p 7177"
# IPv6, on an address of our own (its GID appears with it), and larger
# messages.
ip6=fd00:77::1
trap 'ip -6 addr del $ip6/64 dev eth0 2>/dev/null' EXIT
ip -6 addr add $ip6/64 dev eth0 nodad || fail "adding $ip6"
wait_for 10 grep -q "fd00:0077" /sys/class/infiniband/sroce0/ports/1/gids/* ||
	fail "no GID for $ip6"
pair "$repo/tests/rping.sh -s -a $ip6 -p 7178 -C 10 -S 60000 -v" "$repo/tests/rping.sh -c -a $ip6 -p 7178 -C 10 -S 60000 -v -V"
pair "ucmatose -b ::0 -c 2 -C 10 -S 4000" "ucmatose -s $ip6 -c 2 -C 10 -S 4000"
