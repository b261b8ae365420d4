# rdma resource shows a live context's PDs; "rdma link delete" with the
# context still open completes, the application gets DEVICE_FATAL and can
# still free its objects and close the device.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
out=$(mktemp); trap 'rm -f "$out"' EXIT
link_add sroce0 eth0
"$check" hold sroce0 5 > "$out" &
pid=$!
wait_for 10 grep -q ready "$out" || fail "holder did not start: $(cat "$out")"
n=$(user_objects pd sroce0)
expect_eq "PDs in rdma resource" 5 "$n"
rdma resource show ctx dev sroce0 | grep -q 'dev sroce0' ||
	fail "no context in rdma resource: $(rdma resource show ctx)"
timeout 30 rdma link delete sroce0 || fail "rdma link delete with a live context"
wait "$pid" || fail "holder: $(cat "$out")"
grep -q fatal "$out" || fail "holder got no DEVICE_FATAL: $(cat "$out")"
