# rdma-core's own test suite (Debian's v44, run_tests.py --dev sroce0) for
# the modules sroce implements completely: no failure and no error, and
# every outcome as tests/rdma-core-expected.txt lists it (the skips are for
# other vendors' features: mlx5, EFA, device memory, ...).
# test_rdmacm runs the CM over sroce's GSI QP (rdma_ucm).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
[ -d "$repo/build/rdma-core-tests" ] ||
	fail "build/rdma-core-tests missing: scripts/rdma-core-tests.sh prepare"
modprobe rdma_ucm || fail "modprobe rdma_ucm"
# Huge pages for the huge page tests (parent domain allocators, ODP).
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
echo 64 > $hp
trap 'echo 0 > $hp' EXIT
link_add sroce0 eth0
mods=(test_addr test_atomic test_cq test_cq_events test_cqex test_device
	test_mr test_odp test_parent_domain test_pd test_qp test_qpex
	test_rdmacm test_relaxed_ordering test_shared_pd)
log=$(mktemp)
timeout "$(tmo 600)" "$repo/scripts/rdma-core-tests.sh" run sroce0 -v "${mods[@]}" \
	> "$log" 2>&1
rc=$?
[ -d /tmp/out ] && cp "$log" /tmp/out/rdma-core.log
summary=$(grep -E '^(OK|FAILED)' "$log" | tail -1)
passed=$(grep -cE ' \.\.\. ok$' "$log")
echo "rdma-core: $passed passed; $summary"
if [ $rc != 0 ]; then
	grep -E '^(ERROR|FAIL):' "$log"
	grep -A15 -E '^(ERROR|FAIL):' "$log" | head -80
	fail "rdma-core suite: $summary ($passed passed)"
fi
# Every test's outcome is the one committed in tests/rdma-core-expected.txt
# (ok, or skipped with its reason): a test that regressed into a skip, one
# that now passes, one gone or one new all fail the case until the list
# says so.
expected=$repo/tests/rdma-core-expected.txt
results=$(/usr/bin/python3 "$repo/scripts/guest/rdma-core-results.py" "$log")
[ -n "$results" ] || fail "no test outcome in the suite's log"
differ=$(diff <(grep -vE '^(#|$)' "$expected" | sort) <(sort <<<"$results"))
[ -z "$differ" ] || fail "rdma-core outcomes differ from" \
	"tests/rdma-core-expected.txt (< expected, > this run):"$'\n'"$differ"
