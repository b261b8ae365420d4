#!/bin/bash
# Run rdma-core's own test suite (Debian ships it compressed in
# /usr/share/doc/rdma-core/tests) against a device, inside the VM.
# Usage: scripts/rdma-core-tests.sh prepare        (on the host: unpack it)
#        scripts/rdma-core-tests.sh run DEV [ARGS]  (in the VM)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$repo/build/rdma-core-tests
case "${1:-}" in
prepare)
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r /usr/share/doc/rdma-core/tests/. "$dir/"
	find "$dir" -name '*.gz' -exec gunzip -f {} +
	;;
run)
	dev=$2
	shift 2
	cd "$dir"
	PYTHONPATH=$dir /usr/bin/python3 run_tests.py --dev "$dev" "$@"
	;;
*)
	echo "usage: $0 prepare | run DEV [ARGS]" >&2
	exit 2
	;;
esac
