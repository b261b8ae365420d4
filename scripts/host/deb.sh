#!/bin/bash
# make deb: build sroce's Debian packages into build/deb/:
#   sroce-dkms_VERSION_all.deb            the module's sources and dkms.conf
#   ibverbs-provider-sroce_VERSION_ARCH.deb  the libibverbs provider
# from debian/ (the version is debian/changelog's), in a copy of the
# sources, so the tree is left as it was; then lintian on both, which must
# report nothing (no error, warning or informational tag).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
ver=$(dpkg-parsechangelog -S Version)
out=$repo/build/deb
work=$out/src/sroce-$ver
rm -rf "$out"
mkdir -p "$work"
# The tracked files (a clone), else the tree without its build products.
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$repo" ls-files -z --cached --others --exclude-standard |
		(cd "$repo" && xargs -0 cp --parents -t "$work" 2>/dev/null || true)
else
	tar -C "$repo" --exclude=./build --exclude='*.o' --exclude='*.ko' \
		--exclude='*.so' --exclude='*.cmd' -cf - . | tar -C "$work" -xf -
fi
(cd "$work" && dpkg-buildpackage -b -us -uc -tc) > "$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log"
	echo "deb: dpkg-buildpackage failed (see $out/build.log)" >&2
	exit 1
}
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out/"
rm -rf "$out/src"
ls "$out"/*.deb
lintian --allow-root --pedantic -I --fail-on error,warning,info,pedantic \
	"$out"/*.changes
