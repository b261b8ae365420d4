#!/bin/bash
# Boot two test VMs joined by one Ethernet link: a QEMU stream netdev over
# a Unix socket (nothing leaves the machine). VM "a" is 10.0.3.1, VM "b" is
# 10.0.3.2 (fd00:3::1 and fd00:3::2). Each runs its own command with the
# peer's address in $PEER4 / $PEER6 and its role in $ROLE.
#
# Not a TCP socket on 127.0.0.1: QEMU sets TCP_NODELAY on the side that
# connects, not on the side that accepts, so a's second frame of any two
# sent back to back (an RC ACK and a SEND) waited for b's host's delayed
# ACK, 40 ms: every RC pingpong between the VMs ran at 45 ms an iteration.
# A Unix stream is as reliable and ordered, with no Nagle.
#
# Usage: scripts/host/vm-pair.sh [--timeout SEC] [--out DIR] \
#            -- COMMAND_A -- COMMAND_B        (each given as one string)
# Exit status 0 only if both VMs pass scripts/host/judge-vm.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
timeout=1200 out=$repo/build/pair
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "vm-pair.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# = 3 ] && [ "$2" = -- ] || {
	echo "usage: vm-pair.sh [opts] -- 'COMMAND_A' -- 'COMMAND_B'" >&2; exit 2; }
cmd_a=$1 cmd_b=$3
rm -rf "$out"; mkdir -p "$out/a" "$out/b"
out=$(cd "$out" && pwd)
# The socket's path, short (a Unix socket's is at most 107 bytes).
sockdir=$(mktemp -d /tmp/sroce-pair.XXXXXX)
sock=$sockdir/link
trap 'rm -rf "$sockdir"' EXIT

# start_vm ROLE N PEER COMMAND: VM ROLE is host N of 10.0.3.0/24, fd00:3::/64
start_vm() {
	local role=$1 n=$2 peer=$3 cmd=$4 nic
	if [ "$role" = a ]; then
		nic="stream,server=on,addr.type=unix,addr.path=$sock"
	else
		nic="stream,server=off,addr.type=unix,addr.path=$sock"
	fi
	"$repo/scripts/host/vm.sh" --out "$out/$role" --timeout "$timeout" \
		--name "sroce-$role" --nic "$nic" --mac "52:54:00:00:03:0$n" \
		--ip4 "10.0.3.$n/24" --ip6 "fd00:3::$n/64" \
		-- env ROLE="$role" PEER4="10.0.3.$peer" PEER6="fd00:3::$peer" \
		bash -c "$cmd" > "$out/$role.log" 2>&1
}

start_vm a 1 2 "$cmd_a" &
pid_a=$!
# The listener must be up before the other side connects.
for _ in $(seq 50); do
	[ -S "$sock" ] && break
	sleep 0.2
done
start_vm b 2 1 "$cmd_b" &
pid_b=$!
# A VM that did not boot (scripts/host/vm.sh's noboot note) leaves its peer
# nothing to talk to: the peer is stopped too, not left to its time limit.
wait -n $pid_a $pid_b || true
for r in a b; do
	[ -e "$out/$r/noboot" ] || continue
	pkill -f -- "-serial file:$out/a/console.log" || true
	pkill -f -- "-serial file:$out/b/console.log" || true
done
rc=0
wait $pid_a || rc=1
wait $pid_b || rc=1
sed 's/^/a| /' "$out/a.log"
sed 's/^/b| /' "$out/b.log"
exit $rc
