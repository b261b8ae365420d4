# The coverage of sroce.ko over the one-VM suite: the gcov counts the debug
# kernel kept for the module (CONFIG_GCOV_KERNEL, whose gcov_persist keeps
# an unloaded module's counts), copied to /tmp/out/gcov for the host, where
# scripts/host/coverage.sh reads them with the module's build. Runs last,
# after kmemleak.sh, in make check-debug only.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
g=/sys/kernel/debug/gcov
[ -d $g ] || fail "$g missing: not a kernel with CONFIG_GCOV_KERNEL"
# (The guest has no /dev/fd: no process substitution.)
files=$(find $g -path '*/kernel/sroce_*.gcda')
[ -n "$files" ] || fail "no gcov data for sroce.ko under $g"
mkdir -p /tmp/out/gcov || fail "mkdir /tmp/out/gcov"
for f in $files; do
	cat "$f" > "/tmp/out/gcov/$(basename "$f")" || fail "copy $f"
done
echo "$(echo "$files" | wc -l) files of gcov data"
