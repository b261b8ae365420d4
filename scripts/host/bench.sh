#!/bin/bash
# make bench: sroce against rdma_rxe in one VM run. The two cannot be
# loaded at once (both bind UDP 4791), so they alternate, ROUNDS times,
# and the table gives medians and the ratio sroce/rxe.
# Usage: scripts/host/bench.sh [ROUNDS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
make -s all >/dev/null
rounds=${1:-5}
scripts/host/vm.sh --out build/bench --timeout 3000 -- \
	scripts/guest/guest-bench.sh "$rounds"
cat build/bench/table
