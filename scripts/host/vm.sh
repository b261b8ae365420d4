#!/bin/bash
# Boot the Debian kernel under QEMU (TCG) with the host root read-only over
# virtio-9p, run a command inside, and judge the run.
#
# Usage: scripts/host/vm.sh [options] -- COMMAND [ARGS...]
#   --out DIR        results folder (default: a new folder under build/vm)
#   --timeout SEC    hard limit for the whole VM run (default 1200)
#   --nic SPEC       QEMU -netdev backend (default: user,restrict=on)
#   --mac MAC        guest MAC address (default 52:54:00:12:34:56)
#   --ip4 CIDR       guest IPv4 address on eth0 (default 10.0.2.15/24)
#   --ip6 CIDR       guest IPv6 address on eth0 (default fd00:5e::15/64)
#   --name NAME      guest host name (default sroce-vm)
#   --mem MB         guest memory (default 2048)
#   --root DIR       the guest's root, read-only (default /: this machine's);
#                    e.g. an overlay with packages installed
#
# The kernel is Debian's: KVER (a release, as make passes it) or the default
# (scripts/host/kver.sh); or SROCE_KERNEL (an image) with release
# SROCE_KVER, whose modules are in /lib/modules/SROCE_KVER (the debug kernel
# of make check-debug). SROCE_TIME_SCALE (default 1) stretches the time
# limits of tests in the guest for a slow kernel. SROCE_APPEND adds to the
# kernel command line. SROCE_SMP (default 2) is the guest's CPU count, for
# a measurement on one CPU.
#
# COMMAND runs in the guest from the repository root (as bash -c). The exit
# status is COMMAND's, or 1 when the VM hung, crashed, or its kernel log
# has an oops, BUG, WARN, KASAN, lockdep or hung-task report.
# Results: DIR/console.log (serial console), DIR/output (COMMAND's output),
# DIR/dmesg, DIR/rc, and anything COMMAND writes to /tmp/out in the guest.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out='' timeout=1200 nic=user,restrict=on mac=52:54:00:12:34:56
ip4=10.0.2.15/24 ip6=fd00:5e::15/64 name=sroce-vm mem=2048 root=/
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--nic) nic=$2; shift 2 ;;
	--mac) mac=$2; shift 2 ;;
	--ip4) ip4=$2; shift 2 ;;
	--ip6) ip6=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--root) root=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "vm.sh: no command given" >&2; exit 2; }
case "$nic" in
user,*restrict=on*|socket,*127.0.0.1:*|dgram,*127.0.0.1:*) ;;
stream,*addr.type=unix,*) ;;
*) echo "vm.sh: guest networking must stay on this machine: $nic" >&2; exit 2 ;;
esac

kver=${SROCE_KVER:-${KVER:-$("$repo/scripts/host/kver.sh")}}
image=${SROCE_KERNEL:-/boot/vmlinuz-$kver}
[ -e "$image" ] && [ -d "/lib/modules/$kver/kernel" ] || {
	echo "vm.sh: kernel $kver is not installed (no $image or" \
		"/lib/modules/$kver): scripts/host/install-deps.sh $kver" >&2
	exit 2
}
scale=${SROCE_TIME_SCALE:-1}
mkdir -p "$repo/build"
initrd="$repo/build/initramfs-$kver.cpio.gz"
if [ ! -e "$initrd" ] ||
   [ "$repo/scripts/guest/initramfs-init" -nt "$initrd" ] ||
   [ "$repo/scripts/host/mkinitramfs.sh" -nt "$initrd" ]; then
	"$repo/scripts/host/mkinitramfs.sh" "$kver" "$initrd"
fi

if [ -z "$out" ]; then
	mkdir -p "$repo/build/vm"
	out=$(mktemp -d "$repo/build/vm/run.XXXXXX")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/{rc,dmesg,output,console.log,cmd,kmsg,noboot}
printf '%q ' "$@" > "$out/cmd"
echo >> "$out/cmd"

append="console=ttyS0 loglevel=4 oops=panic panic=-1 hung_task_panic=0"
append+=" log_buf_len=16M"
append+=" sroce_repo=$repo sroce_ip4=$ip4 sroce_ip6=$ip6 sroce_host=$name"
append+=" sroce_time_scale=$scale"
append+=" net.ifnames=0"
append+=" ${SROCE_APPEND:-}"
: > "$out/console.log"
tail -n +1 -f "$out/console.log" &
tailpid=$!
set +e
timeout --kill-after=10 "$((timeout * scale))" qemu-system-x86_64 \
	-machine q35,accel=tcg -cpu max -smp "${SROCE_SMP:-2}" -m "$mem" \
	-display none -monitor none -no-reboot \
	-serial "file:$out/console.log" \
	-kernel "$image" -initrd "$initrd" -append "$append" \
	-fsdev local,id=hostroot,path="$root",security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-fsdev local,id=repo,path="$repo",security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=repo,mount_tag=repo \
	-fsdev local,id=results,path="$out",security_model=none \
	-device virtio-9p-pci,fsdev=results,mount_tag=results \
	-netdev "$nic,id=n0" -device virtio-net-pci,netdev=n0,mac="$mac" \
	< /dev/null > "$out/qemu.log" 2>&1 &
qpid=$!
# A guest that has not started its kernel log stream (guest-init.sh) within
# this long is stuck in boot: it is stopped then, with a note for the judge,
# not at the end of the whole time limit (a pair's peer would wait as long).
boot_limit=${SROCE_BOOT_LIMIT:-$((120 * scale))}
(
	for ((i = 0; i < boot_limit; i++)); do
		[ -e "$out/kmsg" ] && exit 0
		kill -0 "$qpid" 2>/dev/null || exit 0
		sleep 1
	done
	echo "the guest did not boot within $boot_limit s (no kernel log" \
	     "stream; the console's last lines are above)" > "$out/noboot"
	kill "$qpid"
) &
bootpid=$!
wait "$qpid"
qrc=$?
kill "$bootpid" 2>/dev/null
wait "$bootpid" 2>/dev/null
set -e
sleep 0.5
kill "$tailpid" 2>/dev/null || true
wait "$tailpid" 2>/dev/null || true

exec "$repo/scripts/host/judge-vm.sh" "$out" "$qrc"
