#!/bin/bash
# Judge a finished VM run: its command's exit status, and its kernel log.
# Usage: judge-vm.sh OUTDIR QEMU_EXIT_STATUS
out=$1 qrc=$2
fail=0
if [ -e "$out/noboot" ]; then
	tail -n 20 "$out/console.log"
	echo "vm: FAIL: $(cat "$out/noboot")"
	fail=1
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "vm: FAIL: the VM did not finish in time (hung)"
	fail=1
elif [ "$qrc" != 0 ]; then
	echo "vm: FAIL: qemu exited with status $qrc"; cat "$out/qemu.log"
	fail=1
fi
# shellcheck source=SCRIPTDIR/../kernel-reports.sh
. "$(dirname "$0")/../kernel-reports.sh"
# The kernel log as the guest streamed it from /dev/kmsg (nothing lost to a
# wrapped ring), and the dmesg and console it left at the end.
logs=()
for f in kmsg dmesg console.log; do
	[ -s "$out/$f" ] && logs+=("$out/$f")
done
if [ ${#logs[@]} -gt 0 ] && grep -Eq "$report_re" "${logs[@]}"; then
	echo "vm: FAIL: the kernel log has a report:"
	grep -Eh -B2 -A20 "$report_re" "${logs[@]}" | head -80
	fail=1
fi
if [ -s "$out/tainted" ]; then
	bad=$(tainted_bad 0 "$(cat "$out/tainted")")
	if [ -n "$bad" ]; then
		echo "vm: FAIL: the kernel is tainted ($(cat "$out/tainted"), bits $bad)"
		fail=1
	fi
elif [ -e "$out/rc" ]; then
	echo "vm: FAIL: the guest did not report its taint flags"
	fail=1
fi
if [ ! -e "$out/rc" ]; then
	echo "vm: FAIL: the guest command did not complete"
	fail=1
elif [ "$(cat "$out/rc")" != 0 ]; then
	echo "vm: FAIL: the guest command exited with status $(cat "$out/rc")"
	fail=1
fi
exit $fail
