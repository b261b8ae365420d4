# perftest over sroce0 (short runs, client and server in the VM): write,
# read, send and atomic bandwidth, write and send latency, MTU 1024 and 4096.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'set_mtu eth0 1500' EXIT
set_mtu eth0 9000
link_add sroce0 eth0
# perftest calibrates its clock by regression and gives up ("Correlation
# coefficient ... Can't produce a report") when TCG timing is too noisy:
# only that is retried, up to three times.
pair() {
	local srv port out rc
	for _ in 1 2 3; do
		port=$((19000 + RANDOM % 1000))
		srv=$(mktemp)
		timeout "$(tmo 90)" "$@" -p $port > "$srv" 2>&1 &
		local pid=$!
		wait_for 10 tcp_listening $port ||
			fail "$* server: not listening on $port: $(cat "$srv")"
		out=$(timeout "$(tmo 90)" "$@" -p $port localhost 2>&1)
		rc=$?
		wait $pid || rc=1
		out+=$'\n'"server: $(cat "$srv")"
		rm -f "$srv"
		[ $rc = 0 ] && return 0
		echo "$out" | grep -q 'Correlation coefficient' || break
	done
	fail "$*: $out"
}
for mtu in 1024 4096; do
	pair ib_write_bw -d sroce0 -x 1 -m $mtu -n 100 -s 65536
	pair ib_read_bw -d sroce0 -x 1 -m $mtu -n 100 -s 65536
	pair ib_send_bw -d sroce0 -x 1 -m $mtu -n 100 -s 65536
	pair ib_atomic_bw -d sroce0 -x 1 -m $mtu -n 100
	pair ib_write_lat -d sroce0 -x 1 -m $mtu -n 100
	pair ib_send_lat -d sroce0 -x 1 -m $mtu -n 100
done
