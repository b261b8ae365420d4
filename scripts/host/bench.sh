#!/bin/bash
# make bench: sroce against rdma_rxe in one VM run. The two cannot be
# loaded at once (both bind UDP 4791), so they alternate, ROUNDS times,
# and the table gives medians and the ratio sroce/rxe.
# Usage: scripts/host/bench.sh [ROUNDS [PARTS]]
# PARTS: some of "limits perftest mr odp dmabuf clients" (default: all),
# and "profile": the clients' 4 KiB jobs under perf record, each job's
# report in build/bench/fio/KIND-ROUND-CLIENT-JOB.perf.txt
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
make -s all >/dev/null
rounds=${1:-5}
parts=${2:-}
# This machine's state beside the table, as the guest's is in it: qemu's
# two busy vCPUs are a load of about 2 themselves; more than that, and
# something else was running.
host_state() {
	echo "$(nproc) CPUs, load average (1, 5, 15 min)" \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
}
before=$(host_state)
# The table even when the VM is judged failed (a kernel report, say from
# a kernel client's teardown): the figures are still worth reading, beside
# the judgment; the exit status is the judgment's. Not an old table, though.
rm -f build/bench/table
rc=0
scripts/host/vm.sh --out build/bench --timeout 3000 -- \
	scripts/guest/guest-bench.sh "$rounds" ${parts:+"$parts"} || rc=$?
if [ -e build/bench/table ]; then
	echo "host (runs the VM): $before before, $(host_state | sed 's/.*min) //') after" \
		>> build/bench/table
	cat build/bench/table
else
	echo "bench: no table: the guest did not get to the end (build/bench)"
fi
exit $rc
