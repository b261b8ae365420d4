#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Test runner; runs inside the test VM as root. Runs every tests/cases/*.sh
# (or those named on the command line) each in a fresh shell with a time
# limit, one line per test, then "N passed, N failed".
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/tests/lib.sh"
modprobe ib_uverbs || exit 1
modprobe veth || exit 1

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("$repo"/tests/cases/*.sh)
pass=0 failn=0
for t in "${cases[@]}"; do
	name=$(basename "$t" .sh)
	load_sroce || { echo "runner: cannot load sroce"; exit 1; }
	remove_all_links
	ip link set eth0 up
	start=$SECONDS
	if out=$(timeout 300 bash "$t" 2>&1); then
		echo "ok   $name ($((SECONDS - start))s)"
		pass=$((pass + 1))
	else
		echo "FAIL $name ($((SECONDS - start))s)"
		echo "$out" | sed 's/^/    /'
		failn=$((failn + 1))
	fi
done
remove_all_links
sroce_loaded && rmmod sroce
echo "$pass passed, $failn failed"
[ $failn = 0 ]
