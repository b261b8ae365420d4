#!/bin/bash
# make check: the one entry point of the tests, on this machine (the host).
# It builds, then runs, in this order:
#   1. the host checks (make install/uninstall, kernel-doc, checkpatch,
#      sparse, shellcheck, the kernel's layers), here;
#   2. the pair suites: two VMs each (scripts/host/vm-pair.sh), both
#      running tests/pair/*.sh, sroce against sroce and against rdma_rxe;
#   3. the one-VM suite: scripts/host/vm.sh boots one VM whose runner,
#      scripts/guest/guest-check.sh, runs tests/cases/*.sh (rdma-core's own
#      suite among them, as rdma_core_suite.sh), and judges the VM's kernel
#      log;
#   4. the packages (full runs on Debian's own kernels, not check-debug):
#      make deb, then scripts/host/deb-check.sh installs them into an
#      overlay of this machine's root, a VM boots that root and runs
#      tests/pkg/guest.sh, and deb-check.sh purges them;
# and ends with one line for all of them: "N passed, N failed, N skipped"
# (skipped: cases the VM's kernel cannot run, each named with its reason in
# the VM's lines; never counted as passed).
# make check-debug runs it too (scripts/host/check-debug.sh).
#
# Usage: scripts/host/check.sh [CASE ...]   CASEs (tests/cases/NAME.sh) for
#                                          step 3; all of them by default
# VM_KVERS="RELEASE ...": step 3 again on each of these kernels (their image
# and headers installed), after the whole suite on KVER, less the kernel
# clients' cases ($kernel_clients below) unless CASEs are named; .ci/run
# covers 6.1 and 6.12 that way.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
build_log=$(make -s all 2>&1) ||
	{ echo "$build_log"; echo "build failed"; echo "0 passed, 1 failed"; exit 1; }

# Every step adds its tests here; the VM suite adds its own summary's.
pass=0 failn=0 skipn=0

# --- 1. Host checks ----------------------------------------------------

host_test() {
	local name=$1; shift
	local log
	if log=$("$@" 2>&1); then
		echo "ok   host: $name"; pass=$((pass + 1))
	else
		echo "FAIL host: $name"; echo "$log" | sed 's/^/    /'
		failn=$((failn + 1))
	fi
}

# make install / uninstall put and remove exactly our files.
install_layout() {
	local d kver
	d=$(mktemp -d) kver=${KVER:-$(scripts/host/kver.sh)}
	# shellcheck disable=SC2064 # $d is this call's temp dir (a local): expand it now
	trap "rm -rf '$d'" RETURN
	make -s install DESTDIR="$d" >/dev/null || return 1
	# modules_install compresses the module as the kernel's config says
	# (Debian's 6.12: CONFIG_MODULE_COMPRESS_XZ, sroce.ko.xz)
	local ko=("$d/lib/modules/$kver/updates/kernel/"sroce.ko*)
	[ -f "${ko[0]}" ] || {
		echo "make install did not create /lib/modules/$kver/updates/kernel/sroce.ko"
		return 1
	}
	local want=("usr/lib/$(gcc -print-multiarch)/libibverbs/libsroce-rdmav34.so"
		"etc/libibverbs.d/sroce.driver")
	for f in "${want[@]}"; do
		[ -f "$d/$f" ] || { echo "make install did not create /$f"; return 1; }
	done
	grep -qx 'driver sroce' "$d/etc/libibverbs.d/sroce.driver" ||
		{ echo "sroce.driver: $(cat "$d/etc/libibverbs.d/sroce.driver")"; return 1; }
	make -s uninstall DESTDIR="$d" >/dev/null || return 1
	left=$(find "$d" -type f)
	[ -z "$left" ] || { echo "make uninstall left: $left"; return 1; }
}

# The kernel-doc comments parse and describe every parameter and member.
# kernel-doc comes with linux-headers, which install-deps.sh installs: not
# finding it is a failure. Build products (sroce.mod.c) are not ours.
kernel_doc_clean() {
	local kd="" f out src=()
	for f in "/usr/src/linux-headers-$(uname -r)/scripts/kernel-doc" \
		"/lib/modules/$(uname -r)/build/scripts/kernel-doc" \
		"/lib/modules/$(scripts/host/kver.sh 2>/dev/null)/build/scripts/kernel-doc" \
		$(ls -d /usr/src/linux-headers-*/scripts/kernel-doc 2>/dev/null |
		  sort -rV); do
		[ -x "$f" ] && { kd=$f; break; }
	done
	[ -n "$kd" ] || {
		echo "no scripts/kernel-doc in /usr/src/linux-headers-*" \
		     "(scripts/host/install-deps.sh installs linux-headers)"
		return 1
	}
	for f in kernel/*.c kernel/*.h; do
		[[ $f == *.mod.c ]] || src+=("$f")
	done
	out=$("$kd" -none "${src[@]}" 2>&1) || { echo "$kd failed:"; echo "$out"; return 1; }
	[ -z "$out" ] || { echo "$kd:"; echo "$out"; return 1; }
}

# The kernel's files call and include down their layers, but for the
# arrows Documentation/architecture.md lists, at most 12 of them
# (scripts/host/layers.py, on make all's objects).
layers_checked() {
	python3 scripts/host/layers.py --max 12
}

# checkpatch.pl --strict: 0 findings in kernel/ and the uAPI header. It
# comes with linux-source-6.1 (install-deps.sh): the debug kernel's tree
# when make check-debug has unpacked it, else the three files it reads,
# taken once from the tarball into build/checkpatch/.
checkpatch_clean() {
	local cp="" d=build/checkpatch/linux-source-6.1 f out src=()
	for f in /var/cache/sroce/debug/linux-source-6.1/scripts/checkpatch.pl \
		"$d/scripts/checkpatch.pl"; do
		[ -f "$f" ] && { cp=$f; break; }
	done
	if [ -z "$cp" ]; then
		[ -f /usr/src/linux-source-6.1.tar.xz ] || {
			echo "no /usr/src/linux-source-6.1.tar.xz" \
			     "(scripts/host/install-deps.sh installs linux-source-6.1)"
			return 1
		}
		mkdir -p build/checkpatch
		tar -xJf /usr/src/linux-source-6.1.tar.xz -C build/checkpatch \
			linux-source-6.1/scripts/checkpatch.pl \
			linux-source-6.1/scripts/spelling.txt \
			linux-source-6.1/scripts/const_structs.checkpatch || return 1
		cp=$d/scripts/checkpatch.pl
	fi
	for f in kernel/*.c kernel/*.h include/uapi/rdma/sroce-abi.h; do
		[[ $f == *.mod.c ]] || src+=("$f")
	done
	out=$(perl "$cp" --strict --no-tree --terse --no-summary -f "${src[@]}" 2>&1)
	[ -z "$out" ] || { echo "$out"; return 1; }
}

# sparse (make C=2, with endianness checks): 0 findings, for the kernel
# make all built for (in a copy, by builds_for).
sparse_clean() {
	command -v sparse >/dev/null ||
		{ echo "no sparse (scripts/host/install-deps.sh installs it)"; return 1; }
	builds_for "$kv_built" 0 C=2 CF=-D__CHECK_ENDIAN__
}

# Every shell script under scripts/ and tests/ (*.sh, and any other file
# with a sh/bash shebang; not build/) passes shellcheck -S warning, with
# the settings of .shellcheckrc.
shellcheck_clean() {
	local f out files=()
	command -v shellcheck >/dev/null ||
		{ echo "no shellcheck (scripts/host/install-deps.sh installs it)"; return 1; }
	while IFS= read -r -d '' f; do
		case $f in
		*.sh) files+=("$f") ;;
		*) head -n1 "$f" | grep -qaE '^#!.*[/ ](ba|da)?sh( |$)' &&
			files+=("$f") ;;
		esac
	done < <(find scripts tests -type f -not -path '*/build/*' -print0 |
		sort -z)
	[ ${#files[@]} -gt 0 ] || { echo "no shell scripts found"; return 1; }
	# On every CPU, a few files a process (the host is otherwise idle
	# here): the same files, findings and status.
	out=$(printf '%s\0' "${files[@]}" |
		xargs -0 -n 8 -P "$(nproc)" shellcheck -S warning -f gcc 2>&1) &&
		[ -z "$out" ] || { echo "$out"; return 1; }
}

# make all (above) built the module and the provider with no warning.
built_clean() {
	! grep -E 'warning:' <<<"$build_log" || return 1
}

# sroce.ko builds with no warning (W=1) for kernel release KVER, with
# on-demand paging (ODP=0) or without it (ODP=1: SROCE_NO_ODP=1 builds as if
# CONFIG_INFINIBAND_ON_DEMAND_PAGING were off: no sroce_odp.o, the stubs of
# sroce_mem.h). Built in a copy, so the module of the checkout is not
# touched. MAKE_ARGs go to make (sparse_clean's C=2).
builds_for() { # KVER NO_ODP [MAKE_ARG...]
	local d kdir odp=$2 out
	kdir=$(scripts/host/kver.sh --kdir "$1") || return 1
	d=$(mktemp -d)
	# shellcheck disable=SC2064 # $d is this call's temp dir (a local): expand it now
	trap "rm -rf '$d'" RETURN
	mkdir -p "$d/include"
	cp -r kernel "$d/" && cp -r include/uapi "$d/include/" || return 1
	# not the checkout's own build products (make all's, with ODP)
	rm -f "$d"/kernel/*.o "$d"/kernel/*.ko "$d"/kernel/.*.cmd \
		"$d"/kernel/*.mod* "$d"/kernel/modules.order
	out=$(make -s -j"$(nproc)" -C "$kdir" M="$d/kernel" W=1 \
		SROCE_NO_ODP="$odp" "${@:3}" modules 2>&1 |
		grep -v 'Skipping BTF generation')
	[ -z "$out" ] || { echo "$out"; return 1; }
	[ -f "$d/kernel/sroce.ko" ] || { echo "no sroce.ko"; return 1; }
	[ $odp = 0 ] || [ ! -f "$d/kernel/sroce_odp.o" ] ||
		{ echo "sroce_odp.o built without ODP"; return 1; }
}

# --- 2. Pair suites ----------------------------------------------------

# Two VMs joined by a Unix stream socket (scripts/host/vm-pair.sh),
# VM a with sroce, VM b with KIND_B: tests/pair/SCRIPT.sh run in both. A
# step passes when it passed on every VM that ran it; each VM's kernel log
# verdict counts too. VM a's captures are decoded here, after the pair
# (pcap_decode).
pair_suite() { # NAME KIND_B SCRIPT...
	local name=$1 kb=$2 out=$repo/build/pair-$1 line t start=$SECONDS
	shift 2
	local run="export SROCE_DECODE_ON_HOST=1; for t in $*; do"
	run+=" tests/pair/\$t.sh || rc=1; done; exit \${rc:-0}"
	mkdir -p "$repo/build"
	scripts/host/vm-pair.sh --timeout 1200 --out "$out" \
		-- "export MY4=10.0.3.1 KIND=sroce PEER_KIND=$kb; $run" \
		-- "export MY4=10.0.3.2 KIND=$kb PEER_KIND=sroce; $run" \
		> "$out.log" 2>&1
	declare -A verdict=()
	for t in a b; do
		while IFS= read -r line; do
			local st=${line%% *} step=${line#* }
			step=$(sed -E 's/^ +//; s/ \((rc )?[0-9]+( s)?\)$//' <<<"$step")
			[ "$st" = FAIL ] || [ -z "${verdict[$step]:-}" ] &&
				verdict[$step]=$st
		done < <(grep -E '^(ok|FAIL) ' "$out/$t.log" 2>/dev/null | tr -d '\r')
		if grep -q '^vm: FAIL' "$out/$t.log"; then
			echo "FAIL pair $name: VM $t verdict (see $out/$t/)"
			# What the judge said, kernel report included, and
			# each failed step with its output (a CI log is all
			# a failure there leaves).
			tr -d '\r' < "$out/$t.log" |
				sed -n '/^vm: FAIL/,$p' | head -n 60 |
				sed 's/^/    /'
			tr -d '\r' < "$out/$t.log" |
				grep -A21 '^FAIL ' | head -n 100 | sed 's/^/    /'
			failn=$((failn + 1))
		fi
		# Every script ends with "ROLE: N passed, N failed": one that
		# stopped early lost steps nobody would count.
		local ended
		ended=$(tr -d '\r' < "$out/$t.log" 2>/dev/null |
			grep -cE "^$t: [0-9]+ passed, [0-9]+ failed")
		if [ "$ended" != $# ]; then
			echo "FAIL pair $name: VM $t finished $ended of $# scripts ($*)"
			failn=$((failn + 1))
		fi
	done
	# VM a's captures, by the scripts that make them: each one a step,
	# failed when its capture is missing.
	declare -A detail=()
	for t in "$@"; do
		case $t in
		interop) pcap_decode "$out" roce.pcap ;;
		vlan) pcap_decode "$out" vlan.pcap ;;
		esac
	done
	for t in "${!verdict[@]}"; do
		if [ "${verdict[$t]}" = ok ]; then
			echo "ok   pair $name: $t"; pass=$((pass + 1))
		else
			echo "FAIL pair $name: $t (see $out.log)"
			failn=$((failn + 1))
		fi
		[ -z "${detail[$t]:-}" ] || sed 's/^/    /' <<<"${detail[$t]}"
	done
	[ ${#verdict[@]} -gt 0 ] || { echo "FAIL pair $name: no step ran"
		failn=$((failn + 1)); }
	echo "time: pair $name $((SECONDS - start)) s"
}

# pair_inputs: what the pairs' guests would otherwise compute in Python,
# 16 to 20 times slower under TCG and within a step's time, made here once
# by the same code and the same Python: the NVMe-oF patterns 1 and 2 of
# 32 MiB and their sha256sum lines (tests/pair/lib.sh's pattern), and the
# plan of the fuzzer's default run, after the arguments it is for
# (tests/pair/hostile.sh's fuzz_plan). A guest that finds no file, or one
# that does not fit, makes its own.
pair_inputs() {
	local d=$repo/build/pair-pattern s args="--seed 4791 --scale 1"
	local plan=$repo/build/pair-fuzz-plan
	mkdir -p "$d"
	for s in 1 2; do
		/usr/bin/python3 tests/pair/pattern.py $s $((32 * 1024 * 1024)) \
			> "$d/$s.bin" && sha256sum < "$d/$s.bin" > "$d/$s.sha256" ||
			rm -f "$d/$s.bin" "$d/$s.sha256"
	done
	# shellcheck disable=SC2086 # $args: the fuzzer's arguments
	{ echo "$args"; /usr/bin/python3 tests/pair/fuzz.py --plan $args; } \
		> "$plan" || rm -f "$plan"
}

# pcap_decode OUT PCAP: the step that VM a of the pair in OUT left to this
# host (tests/pair/lib.sh's decode): its decoder, on VM a's copy of its
# capture PCAP, with the arguments and under the name in PCAP.decode. The
# same Python, scapy and tshark as the guest's (its root is this
# machine's), 16 to 20 times faster than under TCG. Into pair_suite's
# verdict; the decoder's output into its detail and, as the VMs' lines
# are, into OUT.log.
pcap_decode() {
	local pcap=$1/a/$2 log=$1.log step st o rc
	local -a a=()
	[ -f "$pcap.decode" ] && mapfile -t a < "$pcap.decode"
	if [ ${#a[@]} -lt 2 ]; then
		step="capture ${pcap##*/} decoded"
		rc=1 o="VM a left no ${pcap##*/}.decode: its script did not get there"
	elif [ ! -f "$pcap" ]; then
		step=${a[0]} rc=1 o="VM a left no ${pcap##*/} to decode"
	else
		step=${a[0]}
		o=$(timeout 120 /usr/bin/python3 "tests/pair/${a[1]##*/}" "$pcap" \
			"${a[@]:2}" 2>&1)
		rc=$?
		[ $rc = 124 ] && o="the decoder did not finish in 120 s"
	fi
	st=ok
	[ $rc = 0 ] || st=FAIL
	[ "$st" = FAIL ] || [ -z "${verdict[$step]:-}" ] && verdict[$step]=$st
	detail[$step]=$o
	{ printf 'host| %-4s %s\n' "$st" "$step"; sed 's/^/host|     /' <<<"$o"
	} >> "$log"
}

# --- 3. The one-VM suite -----------------------------------------------

# vm_verdict NAME OUT RC: a VM's own verdict (vm.sh's status RC: no report
# in its kernel log, no hang) as one test; fails when the VM failed.
vm_verdict() {
	if [ "$3" = 0 ]; then
		echo "ok   $1: kernel log clean, guest finished"
		pass=$((pass + 1))
	else
		echo "FAIL $1: see $2/console.log and $2/dmesg"
		failn=$((failn + 1))
		return 1
	fi
}

# vm_suite [CASE...]: one VM runs the cases (scripts/guest/guest-check.sh);
# their "N passed, N failed" and the VM's own verdict (no report in the
# kernel log, no hang) join the totals.
vm_suite() { # [CASE ...]; KVER is the kernel the VM boots
	local out=$repo/build/test-run start vmrc summary tag=

	[ "${KVER:-$kv_built}" = "$kv_built" ] || tag=" ($KVER)"
	[ -z "$tag" ] || out+=-$KVER

	# rdma-core's test suite, unpacked where the VM can read it.
	scripts/rdma-core-tests.sh prepare
	rm -rf "$out"
	start=$SECONDS
	scripts/host/vm.sh --out "$out" --timeout 1500 -- \
		scripts/guest/guest-check.sh "$@"
	vmrc=$?
	echo "time: one VM$tag $((SECONDS - start)) s, all $SECONDS s"

	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/output" \
		2>/dev/null | tail -n 1)
	pass=$((pass + $(echo "$summary" | awk '{print $1 + 0}')))
	failn=$((failn + $(echo "$summary" | awk '{print $3 + 0}')))
	skipn=$((skipn + $(echo "$summary" | awk '{print $5 + 0}')))
	[ -n "$summary" ] || vm_unfinished "vm$tag" "$out/output" "$@"
	vm_verdict "vm$tag" "$out" $vmrc
}

# vm_unfinished NAME OUTPUT [CASE...]: the VM ended before its summary
# line (it died or hung): the cases it reported count as reported, and
# each other case fails by name, the one that was running first.
vm_unfinished() {
	local name=$1 output=$2 t c line
	shift 2
	local cases=("$@")
	[ ${#cases[@]} -gt 0 ] || cases=(tests/cases/*.sh)
	for t in "${cases[@]}"; do
		c=$(basename "$t" .sh)
		line=$(tr -d '\r' < "$output" 2>/dev/null |
			grep -E "^(ok|FAIL|skip) +$c \(" | tail -n 1)
		case $line in
		ok*) pass=$((pass + 1)) ;;
		FAIL*) failn=$((failn + 1)) ;;
		skip*) skipn=$((skipn + 1)) ;;
		*)	echo "FAIL $name: $c did not finish (the VM ended first)"
			failn=$((failn + 1)) ;;
		esac
	done
}

# --- 4. The packages ---------------------------------------------------

# Lines "ok   ..." / "FAIL ..." of a step's output join the totals.
count_lines() { # FILE
	local n
	n=$(grep -c '^ok ' "$1"); pass=$((pass + n))
	n=$(grep -c '^FAIL ' "$1"); failn=$((failn + n))
}

pkg_suite() {
	local d=/tmp/sroce-pkg.$$ out=$repo/build/pkg-run start=$SECONDS log
	log=$(mktemp)
	if ! scripts/host/deb.sh > "$log" 2>&1; then
		echo "FAIL host: make deb (lintian clean)"; sed 's/^/    /' "$log"
		failn=$((failn + 1)); rm -f "$log"; return
	fi
	echo "ok   host: make deb (lintian clean)"; pass=$((pass + 1))
	scripts/host/deb-check.sh install "$d" > "$log" 2>&1
	grep -v '^readelf: Warning' "$log"; count_lines "$log"
	if grep -q '^ok   deb: apt-get install' "$log"; then
		rm -rf "$out"
		scripts/host/vm.sh --root "$d/root" --out "$out" --timeout 600 \
			-- tests/pkg/guest.sh > "$log" 2>&1
		local vmrc=$?
		grep -E '^(ok|FAIL) ' "$out/output" 2>/dev/null | tr -d '\r' |
			tee "$log"
		count_lines "$log"
		grep -qE '^[0-9]+ passed, [0-9]+ failed' "$out/output" 2>/dev/null ||
			{ echo "FAIL pkg: the guest did not finish"; failn=$((failn + 1)); }
		vm_verdict "vm (packages)" "$out" $vmrc
	fi
	scripts/host/deb-check.sh purge "$d" > "$log" 2>&1
	cat "$log"; count_lines "$log"
	rm -f "$log"
	echo "time: packages $((SECONDS - start)) s"
}

# --- The run -------------------------------------------------------------

host_test "make install/uninstall layout" install_layout
host_test "kernel-doc: 0 warnings in kernel/" kernel_doc_clean
host_test "checkpatch --strict: 0 findings in kernel/ and the uAPI header" \
	checkpatch_clean
host_test "shellcheck -S warning: 0 findings in scripts/ and tests/" \
	shellcheck_clean
# The kernel make all built for: with ODP there, without it here. Every
# other kernel with headers (scripts/host/kver.sh --list: 6.12 and 6.12-rt
# where install-deps.sh installed them) with ODP, as its config has it.
# The debug kernel is make check-debug's, which builds for it.
kv_built=${KVER:-$(scripts/host/kver.sh)}
host_test "make all: no warnings (sroce.ko for $kv_built, W=1)" built_clean
host_test "sparse: 0 findings in sroce.ko for $kv_built" sparse_clean
host_test "layers: the kernel's calls run down, but for those architecture.md lists" \
	layers_checked
host_test "sroce.ko builds for $kv_built without ODP, no warnings" \
	builds_for "$kv_built" 1
for kv in $(scripts/host/kver.sh --list); do
	case $kv in "$kv_built"|*-sroce-debug) continue ;; esac
	host_test "sroce.ko builds for $kv, no warnings" builds_for "$kv" 0
done
# The one-VM cases of the kernel's own RDMA clients (NFS, NVMe-oF on a
# file system, iSER, SRP, RDS, link faults under them): VM_KVERS leaves
# them out.
kernel_clients="nfs_rdma|nvme_rdma_fs|iser|srp|rds_rdma|ulp_link_fault|ulp_link_fault_scsi"
# The one-VM cases that repeat, at scale or for long, what other cases
# already do once (a load, a flood of keys or objects, link churn, the
# fuzzer, workers stalled by the hundred): VM_KVERS leaves them out too,
# the run on KVER has them. `make check KVER=RELEASE` runs them there.
at_scale="stress|mr_key_flood|object_limits|link_churn|vfuzz|odp_stall_isolation"
# Pair steps: vlan.sh in both pairs (about 3.5 min each; rxe checks the
# device a packet arrived on, so the pair with rxe is the interop test).
# The kernel clients between two VMs (NFS, SRP, iSER against rdma_rxe:
# about 5.5 min) run on the debug kernel only (make check-debug), for
# CI's time: every client runs in make check's one-VM suite, over sroce,
# and NVMe-oF between the VMs (ulp.sh).
ulp_pair=
[ -n "${SROCE_KERNEL:-}" ] && ulp_pair="ulp_nfs ulp_srp ulp_iser"
pair_inputs
pair_suite sroce-sroce sroce interop loss hostile faults ulp vlan
# shellcheck disable=SC2086 # $ulp_pair: step names or nothing
pair_suite sroce-rxe rxe interop loss ulp $ulp_pair vlan
vm_suite "$@"
# The one-VM suite on other kernels: sroce.ko built for each into
# build/ko/RELEASE/, where the VM's runner finds it (tests/lib.sh).
for kv in ${VM_KVERS:-}; do
	[ "$kv" != "$kv_built" ] || continue
	if ! log=$(scripts/host/build-ko.sh "$(scripts/host/kver.sh --kdir "$kv")" \
		"$kv" 2>&1); then
		echo "FAIL vm ($kv): sroce.ko does not build"
		echo "$log" | sed 's/^/    /'
		failn=$((failn + 1))
		continue
	fi
	# The kernel clients' cases test the clients of the kernel the suite
	# runs on, and the cases at scale repeat what the others do once: the
	# other kernels' runs leave them out (CI's time, issue 35), unless
	# cases are named. `make check KVER=RELEASE` runs them.
	if [ $# -gt 0 ]; then
		KVER=$kv vm_suite "$@"
	else
		mapfile -t some < <(printf '%s\n' tests/cases/*.sh |
			grep -vE "/($kernel_clients|$at_scale)\.sh$")
		KVER=$kv vm_suite "${some[@]}"
	fi
done
# Full runs only: a run of chosen cases, or check-debug's debug kernel
# (SROCE_KERNEL: no package of it), is not about the packages.
[ $# -gt 0 ] || [ -n "${SROCE_KERNEL:-}" ] || pkg_suite
echo "$pass passed, $failn failed, $skipn skipped"
[ "$failn" = 0 ]
