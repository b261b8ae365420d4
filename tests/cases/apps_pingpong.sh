# ibverbs-utils over sroce0 (client and server in the VM, data checked with
# -c): ibv_rc_pingpong and ibv_uc_pingpong at MTU 1024 and 4096, and
# ibv_ud_pingpong (address handles, GRH) with 1 KB and 4 KB messages, and
# ibv_srq_pingpong (8 QPs on one SRQ) and ibv_xsrq_pingpong (XRC), polling
# and with completion events.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'set_mtu eth0 1500' EXIT
set_mtu eth0 9000
link_add sroce0 eth0
pair() { # PROGRAM ARGS...: server and client; both must succeed
	local srv port=$((18000 + RANDOM % 1000))
	srv=$(mktemp)
	timeout "$(tmo 60)" "$@" -p $port > "$srv" 2>&1 &
	local pid=$!
	wait_for 10 tcp_listening $port ||
		fail "$* server: not listening on $port: $(cat "$srv")"
	out=$(timeout "$(tmo 60)" "$@" -p $port localhost 2>&1) ||
		fail "$* client: $out"$'\n'"server: $(cat "$srv")"
	wait $pid || fail "$* server: $(cat "$srv")"
	rm -f "$srv"
}
for mtu in 1024 4096; do
	pair ibv_rc_pingpong -d sroce0 -g 1 -n 200 -s 10000 -m $mtu -c
	pair ibv_uc_pingpong -d sroce0 -g 1 -n 200 -s 4000 -m $mtu -c
done
pair ibv_srq_pingpong -d sroce0 -g 1 -n 200 -s 5000 -q 8
pair ibv_srq_pingpong -d sroce0 -g 1 -n 200 -s 5000 -q 8 -e
pair ibv_ud_pingpong -d sroce0 -g 1 -n 200 -s 1000 -c
pair ibv_ud_pingpong -d sroce0 -g 1 -n 200 -s 4000 -c
# XRC: one XRC SRQ per server process, clients send through XRC send QPs.
pair ibv_xsrq_pingpong -d sroce0 -g 1 -n 100 -s 5000
pair ibv_xsrq_pingpong -d sroce0 -g 1 -n 100 -s 5000 -e
