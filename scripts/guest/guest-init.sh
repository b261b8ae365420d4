#!/bin/bash
# Runs inside the test VM, chrooted into the host root (read-only).
# Sets up the network from the kernel command line, runs the command that
# scripts/host/vm.sh left in /tmp/out/cmd from the repository root, and leaves
# its exit code and the kernel log in /tmp/out.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TMPDIR=/tmp
export PYTHONDONTWRITEBYTECODE=1
arg() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" /proc/cmdline; }

repo=$(arg sroce_repo)
ip4=$(arg sroce_ip4)
ip6=$(arg sroce_ip6)
hostname "$(arg sroce_host)"
# Test time limits are multiplied by this (a debug kernel is slow).
SROCE_TIME_SCALE=$(arg sroce_time_scale)
export SROCE_TIME_SCALE
: "${SROCE_TIME_SCALE:=1}"
# make check-debug's provider built for gcov (tests/lib.sh): its counts go
# to /tmp/out/gcov-provider (the build's own directory is read-only here),
# writable by the tests that run as another user too.
SROCE_PROVIDER=$(arg sroce_provider)
export SROCE_PROVIDER
if [ -n "$SROCE_PROVIDER" ]; then
	export GCOV_PREFIX=/tmp/out/gcov-provider GCOV_PREFIX_STRIP=0
	mkdir -p "$GCOV_PREFIX" && chmod 1777 "$GCOV_PREFIX"
fi

ip link set lo up
ip link set eth0 up
[ -n "$ip4" ] && ip addr add "$ip4" dev eth0
[ -n "$ip6" ] && ip -6 addr add "$ip6" dev eth0 nodad

# The kernel log, streamed as it is written: a long run cannot lose a
# report to a wrapped ring. The runner reads it after each test case.
cat /dev/kmsg > /tmp/out/kmsg 2>/dev/null &
kmsg_pid=$!
export SROCE_KMSG=/tmp/out/kmsg

cd "$repo" || exit 1
bash /tmp/out/cmd 2>&1 | tee /tmp/out/output
echo "${PIPESTATUS[0]}" > /tmp/out/rc.tmp
sleep 0.5
kill "$kmsg_pid" 2>/dev/null
sync
dmesg > /tmp/out/dmesg
cat /proc/sys/kernel/tainted > /tmp/out/tainted
mv /tmp/out/rc.tmp /tmp/out/rc
sync
