#!/bin/bash
# Build sroce.ko for another kernel than the default one, out of the source
# tree: into build/ko/RELEASE/kernel/sroce.ko, which the test VM's runner
# loads when it boots that kernel (tests/lib.sh, load_sroce).
# Usage: scripts/host/build-ko.sh KDIR RELEASE
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kdir=$1 rel=$2
dst=$repo/build/ko/$rel
mkdir -p "$dst/kernel" "$dst/include"
# The sources, as they are now (rsync keeps unchanged files' times, so
# Kbuild rebuilds only what changed).
rsync -a --delete "$repo/include/" "$dst/include/"
rsync -a --delete --exclude '*.o' --exclude '*.ko' --exclude '*.mod*' \
	--exclude '.*.cmd' --exclude 'modules.order' --exclude '*.gcno' \
	"$repo/kernel/" \
	"$dst/kernel/"
cp -p "$repo/Kbuild" "$dst/Kbuild"
make -s -C "$kdir" M="$dst" W=1 modules
