#!/bin/bash
# make check-debug: the whole suite on a debug kernel (KASAN, lockdep,
# UBSAN, DEBUG_OBJECTS, kmemleak, hung-task detection, fault injection),
# then a kmemleak scan and the coverage of sroce.ko and of the provider
# over the one-VM suite (scripts/host/coverage.sh). The kernel is built once by
# scripts/host/debug-kernel.sh and cached outside the clone; sroce.ko is built against it into build/ko/RELEASE/,
# where the test VM's runner finds it (tests/lib.sh, load_sroce).
# Ends with "N passed, N failed", as make check does.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1

rel=$(scripts/host/debug-kernel.sh) || {
	echo "check-debug: no debug kernel"; echo "0 passed, 1 failed"; exit 1; }
cache=$(scripts/host/debug-kernel.sh --path)
scripts/host/build-ko.sh "$cache/build" "$rel" || {
	echo "check-debug: sroce.ko does not build for $rel"
	echo "0 passed, 1 failed"; exit 1; }

# The provider built for gcov, which the VMs use
# (scripts/guest/guest-init.sh).
cov=$repo/build/cov/userspace
make -s -C userspace OUT="$cov" COVERAGE=1 || {
	echo "check-debug: the provider does not build for gcov"
	echo "0 passed, 1 failed"; exit 1; }

# The VMs boot the debug kernel; everything runs several times slower
# under KASAN and lockdep, so every time limit stretches.
export SROCE_KERNEL=$cache/bzImage SROCE_KVER=$rel
export SROCE_TIME_SCALE=${SROCE_TIME_SCALE:-4}
# 4-level paging: QEMU's "max" CPU has LA57, and 6.1's identify_cpu()
# clears the CPU's feature bits for a moment at boot; an interrupt in that
# window sees 4-level paging, and KASAN reports its own lookup as a
# wild-memory-access (seen once in about 20 boots, before any test ran).
export SROCE_APPEND="${SROCE_APPEND:-} no5lvl sroce_provider=$cov/libsroce"
log=$repo/build/check-debug.log
mkdir -p "$repo/build"
scripts/host/check.sh tests/cases/*.sh tests/debug/failnth.sh tests/debug/failnth_2.sh \
	tests/debug/kmemleak.sh tests/debug/coverage.sh | tee "$log"
rc=${PIPESTATUS[0]}
# The coverage of the one-VM suite (tests/debug/coverage.sh copied the
# counts out), then the summary again, as the last line.
echo "coverage of sroce.ko over the one-VM suite:"
scripts/host/coverage.sh "$repo/build/ko/$rel/kernel" \
	"$repo/build/test-run/gcov" || echo "coverage: none"
echo "coverage of the provider over the one-VM suite:"
scripts/host/coverage.sh "$cov/obj" "$repo/build/test-run/gcov-provider" \
	"$repo/userspace" || echo "coverage: none"
tail -n 1 "$log"
exit "$rc"
