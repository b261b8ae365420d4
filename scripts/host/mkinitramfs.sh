#!/bin/bash
# Build the test VM's initramfs: busybox, the modules needed to reach the
# host root over virtio-9p, and scripts/guest/initramfs-init as /init.
# Usage: mkinitramfs.sh KVER OUTPUT.cpio.gz
set -euo pipefail
kver=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,modules,proc,sys,dev,newroot}
cp /bin/busybox "$work/bin/busybox"
cp "$here/../guest/initramfs-init" "$work/init"
chmod 755 "$work/init"

# Modules in dependency order, each once.
: > "$work/modules/order"
for m in virtio_pci virtio_net 9pnet_virtio 9p; do
	modprobe -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
	base=$(basename "$ko")
	case "$ko" in
	*.ko.xz) xz -dc "$ko" > "$work/modules/${base%.xz}"; base=${base%.xz} ;;
	*.ko.zst) zstd -qdc "$ko" > "$work/modules/${base%.zst}"; base=${base%.zst} ;;
	*) cp "$ko" "$work/modules/$base" ;;
	esac
	echo "$base" >> "$work/modules/order"
done

(cd "$work" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
