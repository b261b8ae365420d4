#!/bin/bash
# The main job: install sroce on this machine (module, provider, driver
# file), boot the test VM, and inside it load sroce the way a user would
# (modprobe, rdma link add), show the device and exercise it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
make -s all >/dev/null
make -s install >/dev/null
scripts/host/vm.sh --out build/run --timeout 600 -- scripts/guest/guest-run.sh
