#!/bin/bash
# Line, branch and function coverage, per file, from gcov data copied out
# of the debug VM (DATA, searched below it) and the build with its .gcno
# files (BUILD): sroce.ko's (build/ko/RELEASE/kernel, whose .gcda
# tests/debug/coverage.sh copied out) or the provider's
# (build/cov/userspace/obj, whose .gcda the provider wrote itself,
# scripts/guest/guest-init.sh), with its sources in SRC (BUILD by default).
# Writes the annotated sources (.gcov) and the list of functions never
# called into DATA, and prints one line per file and a total.
# Usage: scripts/host/coverage.sh BUILD DATA [SRC]
set -euo pipefail
build=$(cd "$1" && pwd) data=$(cd "$2" && pwd) srcdir=$(cd "${3:-$1}" && pwd)
cd "$data"
# The counts where gcov looks for them: next to their .gcno, in DATA.
find . -mindepth 2 -name '*.gcda' -exec cp -f {} . \;
ls ./*.gcda >/dev/null 2>&1 || { echo "coverage: no .gcda in $data"; exit 1; }
for f in "$build"/*.gcno; do
	ln -sf "$f" .
done
printf '%-18s %7s %9s %9s %7s\n' file lines 'lines %' 'branch %' funcs
tl=0 tc=0 tb=0 tbt=0 tf=0 tfc=0
: > uncalled.txt
for gcno in "$build"/*.gcno; do
	base=$(basename "$gcno" .gcno)
	src=$srcdir/$base.c
	[ -f "$src" ] || src=$srcdir/$base.cpp
	[ -f "$src" ] || continue
	[ -f "$base.gcda" ] || { echo "$base: no data (never run?)"; continue; }
	out=$(gcov -b -c -f -o "$data" "$src" 2>/dev/null)
	# The file's own summary: the "File" block of its name (the headers it
	# includes have theirs).
	sum=$(awk -v f="$(basename "$src")" '/^File / {n=split($0,p,"[/'"'"']");
			on = p[n-1] == f; next}
		on && /^Lines executed/ {split($0,a,"[:% ]+"); l=a[3]; n=a[5]}
		on && /^Taken at least once/ {split($0,a,"[:% ]+"); b=a[5]; bn=a[7]}
		on && /^$/ {on=0}
		END {print l+0, n+0, b+0, bn+0}' <<<"$out")
	read -r lp ln bp bn <<<"$sum"
	# Functions: "Function 'name'" then "Lines executed:X% of N".
	fun=$(awk '/^Function / {name=$2; gsub("'"'"'","",name); next}
		name && /^Lines executed/ {split($0,a,"[:% ]+");
			print name, a[3]; name=""}' <<<"$out" |
		sort -u)
	nf=$(wc -l <<<"$fun")
	uncalled=$(awk '$2 == 0 {print $1}' <<<"$fun")
	nu=$(grep -c . <<<"$uncalled" || true)
	[ -z "$uncalled" ] || sed "s/^/$(basename "$src"): /" <<<"$uncalled" >> uncalled.txt
	lc=$(awk -v p="$lp" -v n="$ln" 'BEGIN {printf "%d", p * n / 100 + 0.5}')
	bt=$(awk -v p="$bp" -v n="$bn" 'BEGIN {printf "%d", p * n / 100 + 0.5}')
	printf '%-18s %7d %8.1f%% %8.1f%% %3d/%-3d\n' "$(basename "$src")" "$ln" "$lp" "$bp" \
		$((nf - nu)) "$nf"
	tl=$((tl + ln)) tc=$((tc + lc)) tb=$((tb + bn)) tbt=$((tbt + bt))
	tf=$((tf + nf)) tfc=$((tfc + nf - nu))
done
awk -v tl=$tl -v tc=$tc -v tb=$tb -v tbt=$tbt -v tf=$tf -v tfc=$tfc 'BEGIN {
	printf "%-18s %7d %8.1f%% %8.1f%% %3d/%-3d\n", "total", tl,
		tl ? 100 * tc / tl : 0, tb ? 100 * tbt / tb : 0, tfc, tf }'
echo "coverage: functions never called: $(grep -c . uncalled.txt || true) (see $data/uncalled.txt); annotated sources: $data/*.gcov"
