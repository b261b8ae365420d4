#!/bin/sh
# Print the kernel version sroce is built for and booted with: the newest
# Debian kernel that has both an image in /boot and headers to build against.
# This is deliberately not `uname -r`: the host may run another kernel.
for v in $(ls /lib/modules 2>/dev/null | sort -rV); do
	if [ -e "/boot/vmlinuz-$v" ] && [ -e "/lib/modules/$v/build/Makefile" ]; then
		echo "$v"
		exit 0
	fi
done
echo "kver.sh: no kernel with headers found; run scripts/host/install-deps.sh" >&2
exit 1
