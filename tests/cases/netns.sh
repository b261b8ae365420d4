# Network namespaces. Two namespaces joined by a veth pair, an sroce link
# on each end, added from inside its namespace:
# - the device's UDP 4791 socket lives in its namespace, and only while a
#   device of that namespace exists (init_net's port stays free: rdma_rxe
#   loads beside us);
# - RC traffic between the namespaces, data checked (ibv_rc_pingpong -c);
# - "rdma link delete" under traffic, then deleting a namespace under
#   traffic: the devices go, the applications end, the module's reference
#   count drops to 0, and no net_device waits for a reference;
# - "rdma system set netns exclusive": a link added in a namespace belongs
#   to init_net (ib_core creates every device there) until "rdma dev set
#   NAME netns NS" moves it; moved, it runs the same traffic, and deleting
#   its namespace under traffic leaves nothing.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del na 2>/dev/null
	ip netns del nb 2>/dev/null
	wait_for 30 sh -c '! ip netns list | grep -q .' || true
	wait_for 60 rdma system set netns shared 2>/dev/null
	rdma link delete rxe0 2>/dev/null
	lsmod | grep -q '^rdma_rxe' && rmmod rdma_rxe
	rm -rf "$tmp"
}
trap cleanup EXIT

# Namespaces na and nb, veth va (10.77.0.1, in na) - vb (10.77.0.2, in nb).
make_namespaces() {
	ip netns add na && ip netns add nb || fail "ip netns add"
	ip link add va netns na type veth peer name vb netns nb ||
		fail "cannot create the veth pair"
	ip -n na addr add 10.77.0.1/24 dev va && ip -n na link set va up &&
		ip -n na link set lo up || fail "cannot set up va"
	ip -n nb addr add 10.77.0.2/24 dev vb && ip -n nb link set vb up &&
		ip -n nb link set lo up || fail "cannot set up vb"
}

# udp_bound NS: is UDP 4791 (0x12B7) bound in NS ("" for init_net)?
udp_bound() {
	local run=()
	[ -n "$1" ] && run=(ip netns exec "$1")
	"${run[@]}" cat /proc/net/udp /proc/net/udp6 | grep -q ':12B7 '
}

# inns NS COMMAND...: run COMMAND in namespace NS, or in init_net for ""
inns() {
	local ns=$1
	shift
	if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# gid_index NS DEV IPV4: the index of DEV's RoCEv2 GID for IPV4, as a
# process in NS ("": init_net) sees it
gid_index() {
	local want f d=/sys/class/infiniband/$2/ports/1/gids
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		${3//./ })
	for f in $(inns "$1" ls "$d"); do
		if [ "$(inns "$1" cat "$d/$f")" = "$want" ]; then
			echo "$f"
			return 0
		fi
	done
	return 1
}

# pingpong NA_DEV NB_DEV N OUTPREFIX: ibv_rc_pingpong with completion
# events and data checked between the two devices, in the background ($srv
# $cli are their pids). With APPS=ns, the server runs in na and the client
# in nb (their TCP exchange over the veth); with APPS=init (shared mode:
# every device is visible everywhere) both run in init_net (TCP over lo),
# so that they do not keep na and nb alive.
pingpong() {
	local ga gb sa='' sb='' addr=127.0.0.1 port=$((18000 + RANDOM % 1000))

	[ "$APPS" = ns ] && sa=na sb=nb addr=10.77.0.1
	wait_for 20 gid_index "$sa" "$1" 10.77.0.1 >/dev/null ||
		fail "$1 has no GID for 10.77.0.1"
	wait_for 20 gid_index "$sb" "$2" 10.77.0.2 >/dev/null ||
		fail "$2 has no GID for 10.77.0.2"
	ga=$(gid_index "$sa" "$1" 10.77.0.1) gb=$(gid_index "$sb" "$2" 10.77.0.2)
	inns "$sa" timeout "$(tmo 120)" ibv_rc_pingpong -d "$1" -g "$ga" \
		-p $port -n "$3" -s 4096 -e -c > "$4.srv" 2>&1 &
	srv=$!
	wait_for 10 eval 'inns "$sa" ss -Hltn "sport = :$port" | grep -q .' ||
		fail "server in ${sa:-the root namespace} not listening on $port"
	inns "$sb" timeout "$(tmo 120)" ibv_rc_pingpong -d "$2" -g "$gb" \
		-p $port -n "$3" -s 4096 -e -c $addr > "$4.cli" 2>&1 &
	cli=$!
}

# pingpong_ok NA_DEV NB_DEV: a full run, both sides succeed
pingpong_ok() {
	pingpong "$1" "$2" 300 "$tmp/ok"
	wait $cli || fail "client: $(cat "$tmp/ok.cli")"$'\n'"server: $(cat "$tmp/ok.srv")"
	wait $srv || fail "server: $(cat "$tmp/ok.srv")"
	grep -q '300 iters' "$tmp/ok.cli" ||
		fail "client did not finish: $(cat "$tmp/ok.cli")"
}

# descendants PID: PID and every process under it (by their parent PIDs:
# /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN, which the debug
# kernel has not)
descendants() {
	local c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		descendants "$c"
	done
}

# kill_tree PID: kill PID and everything under it
kill_tree() {
	local pids
	# (no process substitution: the guest has no /dev/fd)
	mapfile -t pids <<<"$(descendants "$1")"
	kill -9 "${pids[@]}" 2>/dev/null
}

# pstack_of PID: where a process and its children wait
pstack_of() {
	local p
	for p in $(descendants "$1"); do
		echo "[$p $(cat /proc/$p/comm 2>/dev/null) $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null) $(cat /proc/$p/wchan 2>/dev/null)]"
		cat /proc/$p/stack 2>/dev/null
	done
}

# under_traffic WHAT ENDS COMMAND...: start a long run, let it pass data,
# run COMMAND; the applications in ENDS ("$srv", "$cli" or both), those
# whose device goes, must end (they notice), the others are killed: an RC
# peer waiting to receive has no way to notice (no keepalive in RC).
under_traffic() {
	local what=$1 ends=$2 p
	shift 2
	pingpong "$DEV_A" "$DEV_B" 1000000 "$tmp/long"
	sleep 3
	kill -0 $cli 2>/dev/null ||
		fail "long run ended early: $(cat "$tmp/long.cli")"
	ends=$(eval echo "$ends")
	"$@" || fail "$what under traffic"
	for p in $ends; do
		wait_for 60 sh -c "! kill -0 $p 2>/dev/null" ||
			fail "the applications still run $(tmo 60) s after $what:" \
				"server: $(cat "$tmp/long.srv"; pstack_of $srv)" \
				"client: $(cat "$tmp/long.cli"; pstack_of $cli)"
	done
	kill_tree $srv
	kill_tree $cli
	wait $cli $srv 2>/dev/null
	return 0
}

# nothing_left: no sroce device, nothing holds the module, no net_device
# waits for a reference: no "waiting" line in the kernel log beyond those
# an earlier case left there (the log is the whole run's)
waits() { dmesg | grep -c 'unregister_netdevice: waiting'; }
waits_before=$(waits)
nothing_left() {
	wait_for 30 sh -c '! rdma link show | grep -q "sroce"' ||
		fail "sroce links left after $1: $(rdma link show)"
	wait_for 30 sh -c '[ "$(cat /sys/module/sroce/refcnt)" = 0 ]' ||
		fail "sroce still referenced after $1: $(cat /sys/module/sroce/refcnt)"
	[ "$(waits)" -le "$waits_before" ] ||
		fail "a net_device waits for a reference after $1:" \
			"$(dmesg | grep 'unregister_netdevice: waiting' | tail -3)"
}

# --- shared mode (the default) ---
rdma system show | grep -q 'netns shared' ||
	fail "not in shared mode: $(rdma system show)"
! udp_bound "" || fail "UDP 4791 bound in init_net with no device"
make_namespaces
ip netns exec na rdma link add sra type sroce netdev va ||
	fail "rdma link add in na"
ip netns exec nb rdma link add srb type sroce netdev vb ||
	fail "rdma link add in nb"
ibdev_exists sra && ibdev_exists srb || fail "devices missing: $(rdma link)"
udp_bound na || fail "no UDP 4791 socket in na"
udp_bound nb || fail "no UDP 4791 socket in nb"
! udp_bound "" || fail "UDP 4791 bound in init_net by namespaced links"
# init_net's port is free: rdma_rxe can take it (it binds the port when it
# loads, or, with namespace support, at its first link).
modprobe -a crc32_generic rdma_rxe ||
	fail "rdma_rxe cannot load beside namespaced sroce"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0"
udp_bound "" || fail "rdma_rxe has a link but UDP 4791 is not bound in init_net"
# ... and sroce cannot take it from rdma_rxe: a clear refusal, no device.
out=$(rdma link add sroce0 type sroce netdev eth0 2>&1) &&
	fail "rdma link add in init_net succeeded with rdma_rxe loaded"
! ibdev_exists sroce0 || fail "sroce0 exists after a refused link add"
dmesg | grep -q 'cannot bind UDP port 4791 for eth0' ||
	fail "no message on the refused link: $out"
rdma link delete rxe0 || fail "rdma link delete rxe0"
rmmod rdma_rxe || fail "rmmod rdma_rxe"

APPS=ns
pingpong_ok sra srb
APPS=init pingpong_ok sra srb
DEV_A=sra DEV_B=srb APPS=init
under_traffic "rdma link delete sra" '$srv' ip netns exec na rdma link delete sra
! ibdev_exists sra || fail "sra still exists"
! udp_bound na || fail "UDP 4791 still bound in na without a device"
udp_bound nb || fail "nb lost its socket when sra went"
wait_for 30 sh -c '[ "$(cat /sys/module/sroce/refcnt)" = 0 ]' ||
	fail "sroce still referenced after the link delete"
# Added again in na, it runs again; then na goes under traffic (its veth
# end, and with it the pair, is deleted: both links go).
ip netns exec na rdma link add sra type sroce netdev va ||
	fail "rdma link add in na again"
pingpong_ok sra srb
under_traffic "ip netns del na" '$srv $cli' ip netns del na
nothing_left "ip netns del na"
ip netns del nb
wait_for 30 sh -c '! ip netns list | grep -q .' ||
	fail "namespaces left: $(ip netns list)"

# --- exclusive mode ---
# ib_core allows the switch only while init_net is the only namespace.
rdma system set netns exclusive || fail "rdma system set netns exclusive"
make_namespaces
ip netns exec na rdma link add sra type sroce netdev va ||
	fail "rdma link add in na (exclusive)"
ip netns exec nb rdma link add srb type sroce netdev vb ||
	fail "rdma link add in nb (exclusive)"
# ib_core creates the device in init_net, whatever the caller's namespace;
# its socket is still in its net_device's namespace.
rdma dev show sra >/dev/null 2>&1 || fail "sra not in init_net (exclusive)"
ip netns exec na rdma dev show sra >/dev/null 2>&1 &&
	fail "sra visible in na before it is moved there"
udp_bound na && udp_bound nb || fail "sockets missing (exclusive)"
rdma dev set sra netns na || fail "rdma dev set sra netns na"
rdma dev set srb netns nb || fail "rdma dev set srb netns nb"
ip netns exec na rdma dev show sra >/dev/null 2>&1 ||
	fail "sra not in na after the move"
rdma dev show sra >/dev/null 2>&1 && fail "sra still in init_net after the move"
ip netns exec nb rdma dev show sra >/dev/null 2>&1 && fail "sra visible in nb"
APPS=ns
pingpong_ok sra srb
# The applications in na and nb keep them alive: a namespace deleted under
# traffic goes when they are killed (as a container's end), and with it the
# veth pair, and both links.
pingpong sra srb 1000000 "$tmp/long"
sleep 3
kill -0 $cli 2>/dev/null || fail "long run ended early: $(cat "$tmp/long.cli")"
ip netns del nb || fail "ip netns del nb (exclusive)"
ip netns del na || fail "ip netns del na (exclusive)"
kill_tree $cli
kill_tree $srv
wait $cli $srv 2>/dev/null
nothing_left "ip netns del (exclusive)"
wait_for 30 sh -c '! ip netns list | grep -q .' ||
	fail "namespaces left: $(ip netns list)"
# A deleted namespace is freed by a worker some time after "ip netns del"
# returns; ib_core refuses the mode change (EBUSY) while any namespace but
# init_net exists, so wait for the last one to go.
wait_for 60 rdma system set netns shared 2>/dev/null ||
	fail "rdma system set netns shared: $(rdma system set netns shared 2>&1)
$(lsns -t net 2>&1)"
