#!/bin/bash
# Boot two test VMs joined by one Ethernet link: a QEMU socket netdev on
# 127.0.0.1 (nothing leaves the machine). VM "a" is 10.0.3.1, VM "b" is
# 10.0.3.2 (fd00:3::1 and fd00:3::2). Each runs its own command with the
# peer's address in $PEER4 / $PEER6 and its role in $ROLE.
#
# Usage: scripts/vm-pair.sh [--timeout SEC] [--port PORT] [--out DIR] \
#            -- COMMAND_A -- COMMAND_B        (each given as one string)
# Exit status 0 only if both VMs pass scripts/judge-vm.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
timeout=1200 port=$((20000 + RANDOM % 20000)) out=$repo/build/pair
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "vm-pair.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# = 3 ] && [ "$2" = -- ] || {
	echo "usage: vm-pair.sh [opts] -- 'COMMAND_A' -- 'COMMAND_B'" >&2; exit 2; }
cmd_a=$1 cmd_b=$3
rm -rf "$out"; mkdir -p "$out/a" "$out/b"

"$repo/scripts/vm.sh" --out "$out/a" --timeout "$timeout" --name sroce-a \
	--nic "socket,listen=127.0.0.1:$port" --mac 52:54:00:00:03:01 \
	--ip4 10.0.3.1/24 --ip6 fd00:3::1/64 \
	-- env ROLE=a PEER4=10.0.3.2 PEER6=fd00:3::2 bash -c "$cmd_a" \
	> "$out/a.log" 2>&1 &
pid_a=$!
# The listener must be up before the other side connects.
for _ in $(seq 50); do
	ss -ltn "sport = :$port" | grep -q LISTEN && break
	sleep 0.2
done
"$repo/scripts/vm.sh" --out "$out/b" --timeout "$timeout" --name sroce-b \
	--nic "socket,connect=127.0.0.1:$port" --mac 52:54:00:00:03:02 \
	--ip4 10.0.3.2/24 --ip6 fd00:3::2/64 \
	-- env ROLE=b PEER4=10.0.3.1 PEER6=fd00:3::1 bash -c "$cmd_b" \
	> "$out/b.log" 2>&1 &
pid_b=$!
rc=0
wait $pid_a || rc=1
wait $pid_b || rc=1
sed 's/^/a| /' "$out/a.log"
sed 's/^/b| /' "$out/b.log"
exit $rc
