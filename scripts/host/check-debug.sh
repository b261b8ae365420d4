#!/bin/bash
# make check-debug: the whole suite on a debug kernel (KASAN, lockdep,
# UBSAN, DEBUG_OBJECTS, kmemleak, hung-task detection), then a kmemleak
# scan. The kernel is built once by scripts/host/debug-kernel.sh and cached
# outside the clone; sroce.ko is built against it into build/ko/RELEASE/,
# where the test VM's runner finds it (tests/lib.sh, load_sroce).
# Ends with "N passed, N failed", as make check does.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

rel=$(scripts/host/debug-kernel.sh) || {
	echo "check-debug: no debug kernel"; echo "0 passed, 1 failed"; exit 1; }
cache=$(scripts/host/debug-kernel.sh --path)
scripts/host/build-ko.sh "$cache/build" "$rel" || {
	echo "check-debug: sroce.ko does not build for $rel"
	echo "0 passed, 1 failed"; exit 1; }

# The VMs boot the debug kernel; everything runs several times slower
# under KASAN and lockdep, so every time limit stretches.
export SROCE_KERNEL=$cache/bzImage SROCE_KVER=$rel
export SROCE_TIME_SCALE=${SROCE_TIME_SCALE:-4}
# 4-level paging: QEMU's "max" CPU has LA57, and 6.1's identify_cpu()
# clears the CPU's feature bits for a moment at boot; an interrupt in that
# window sees 4-level paging, and KASAN reports its own lookup as a
# wild-memory-access (seen once in about 20 boots, before any test ran).
export SROCE_APPEND="${SROCE_APPEND:-} no5lvl"
exec scripts/host/check.sh tests/cases/*.sh tests/debug/kmemleak.sh
