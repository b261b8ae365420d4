#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The runner of the one-VM cases, inside the test VM as root: the guest side
# of make check (scripts/host/check.sh boots the VM with it). Runs every
# tests/cases/*.sh (or those named on the command line) each in a fresh
# shell with a time limit, one line per test, then "N passed, N failed,
# N skipped". A case that cannot run here (what it needs is missing: no
# dma-buf exporter, say) prints "SKIP: why" and exits 77 (tests/lib.sh,
# skip): it is counted as skipped, with its reason, never as passed; a
# kernel report while it ran still fails it. What a case that passed chose
# to run on ("NOTE: text" lines, as tests/lib.sh's xfer_all passes on the
# dma-buf exporter of sroce-xfer's tests) follows its line, each text once.
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=SCRIPTDIR/../../tests/lib.sh
. "$repo/tests/lib.sh"
# shellcheck source=SCRIPTDIR/../kernel-reports.sh
. "$repo/scripts/kernel-reports.sh"
# The kernel log as scripts/guest/guest-init.sh streams it; a plain dmesg
# when run by hand (a wrapped ring may then hide a report).
kmsg=${SROCE_KMSG:-}

# kernel_reports FROM: the report lines of the kernel log written since
# FROM (a byte offset of $kmsg, or a dmesg line count).
log_mark() {
	if [ -n "$kmsg" ]; then stat -c %s "$kmsg"; else dmesg | wc -l; fi
}
kernel_reports() {
	if [ -n "$kmsg" ]; then
		# A line of our own through the kernel log: once $kmsg has
		# it, it has every line written before it (5 s at most).
		local marker="sroce-check: reports up to here, $$.$RANDOM" i
		echo "$marker" > /dev/kmsg
		for ((i = 0; i < 250; i++)); do
			tail -c +$(($1 + 1)) "$kmsg" | grep -qF "$marker" &&
				break
			sleep 0.02
		done
		tail -c +$(($1 + 1)) "$kmsg"
	else
		sleep 0.3	# the last lines on their way to dmesg
		dmesg | tail -n +$(($1 + 1))
	fi | grep -E -A20 "$report_re" | head -60
}
modprobe ib_uverbs || exit 1
modprobe veth || exit 1

# A debug kernel's leak detector: forget the suspects of the boot, so that
# a scan at the end (tests/debug/kmemleak.sh) reports only what the run
# leaked.
k=/sys/kernel/debug/kmemleak
[ -w $k ] && { echo scan > $k; echo clear > $k; }

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("$repo"/tests/cases/*.sh)
pass=0 failn=0 skipn=0
for t in "${cases[@]}"; do
	name=$(basename "$t" .sh)
	load_sroce || { echo "runner: cannot load sroce"; exit 1; }
	remove_all_links
	ip link set eth0 up
	start=$SECONDS mark=$(log_mark) taint=$(cat /proc/sys/kernel/tainted)
	out=$(timeout "$(tmo 300)" bash "$t" 2>&1)
	rc=$?
	# The case fails too if the kernel reported anything while it ran,
	# or became tainted (a WARN, an oops, a lockup, a bad module).
	reports=$(kernel_reports "$mark")
	bad=$(tainted_bad "$taint" "$(cat /proc/sys/kernel/tainted)")
	[ $rc = 124 ] && out+=$'\n'"(timed out after $(tmo 300) s)"
	[ -n "$reports" ] && out+=$'\n'"kernel log during $name:"$'\n'"$reports"
	[ -n "$bad" ] && out+=$'\n'"kernel tainted during $name (bits $bad)"
	if [ $rc = 0 ] && [ -z "$reports" ] && [ -z "$bad" ]; then
		notes=$(sed -n 's/^NOTE: //p' <<<"$out" | awk '!seen[$0]++' |
			paste -sd ';' -)
		echo "ok   $name ($((SECONDS - start))s)${notes:+: $notes}"
		pass=$((pass + 1))
	elif [ $rc = 77 ] && [ -z "$reports" ] && [ -z "$bad" ]; then
		echo "skip $name ($((SECONDS - start))s):" \
			"$(sed -n 's/^SKIP: //p' <<<"$out" | tail -n 1)"
		skipn=$((skipn + 1))
	else
		echo "FAIL $name ($((SECONDS - start))s)"
		echo "$out" | sed 's/^/    /'
		failn=$((failn + 1))
	fi
done
# What the cases left: a link that will not go, or a module reference
# (rmmod fails), is a failure of the run.
if ! remove_all_links; then
	echo "FAIL runner: rdma link delete after the last case"
	failn=$((failn + 1))
fi
if sroce_loaded && ! rmmod sroce; then
	echo "FAIL runner: rmmod sroce after the last case (refcount" \
		"$(cat /sys/module/sroce/refcnt 2>/dev/null))"
	failn=$((failn + 1))
fi
echo "$pass passed, $failn failed, $skipn skipped"
[ $failn = 0 ]
