#!/bin/bash
# Judge a finished VM run: its command's exit status, and its kernel log.
# Usage: judge-vm.sh OUTDIR QEMU_EXIT_STATUS
out=$1 qrc=$2
fail=0
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "vm: FAIL: the VM did not finish in time (hung)"
	fail=1
elif [ "$qrc" != 0 ]; then
	echo "vm: FAIL: qemu exited with status $qrc"; cat "$out/qemu.log"
	fail=1
fi
log="$out/dmesg"
[ -s "$log" ] || log="$out/console.log"
pat='Oops|BUG:|WARNING:|KASAN|UBSAN|lockdep|possible (recursive|circular) locking|'
pat+='Kernel panic|blocked for more than|general protection fault|Call Trace:|'
pat+='refcount_t:|list_(add|del) corruption|unreferenced object|kernel BUG'
if grep -Eq "$pat" "$log" "$out/console.log"; then
	echo "vm: FAIL: the kernel log has a splat:"
	grep -Eh -B2 -A20 "$pat" "$log" "$out/console.log" | head -80
	fail=1
fi
if [ ! -e "$out/rc" ]; then
	echo "vm: FAIL: the guest command did not complete"
	fail=1
elif [ "$(cat "$out/rc")" != 0 ]; then
	echo "vm: the guest command exited with status $(cat "$out/rc")"
	fail=1
fi
exit $fail
