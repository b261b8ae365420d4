# The verbs fuzzer (tests/src/sroce_vfuzz.cpp): seeded runs of random
# operations on pools of every kind of object (PDs, CQs, XRC domains, MRs
# registered and re-registered with any access flags, implicit ODP MRs,
# type 1 and 2 windows, AHs, SRQs, QPs of every type moved between states
# and connected to themselves or each other), WRs of every opcode with keys
# and addresses at and past the edges of what they name, and forked
# children that exit with work in flight; bursts of valid WRs between QPs
# connected to each other, some of which must succeed (data moved). Every
# verb succeeds or fails with
# a real errno, objects in use cannot be destroyed, every completion is of
# a WR posted on its queue and in order, no byte lands in the canary pages
# around the registered buffers, and everything is gone at the end. On a
# failure the program prints its last 200 operations and the command that
# repeats the run.
#
# make check: 3 seeds of 3000 operations. With SROCE_TIME_SCALE > 1 (the
# debug kernel of make check-debug): 20 seeds of 5000, 10^5 operations, as
# many as fit in the case's time limit (said if fewer). The time each takes
# is printed. Then one seed as an unprivileged user (uid/gid 65534), who
# would be the attacker.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
command -v setpriv >/dev/null ||
	fail "setpriv (util-linux) missing: cannot run as an unprivileged user"
link_add sroce0 eth0
vfuzz=$repo/tests/bin/sroce-vfuzz

if [ "${SROCE_TIME_SCALE:-1}" -gt 1 ]; then
	seeds=$(seq 1 20) nops=5000
else
	seeds="1 2 3" nops=3000
fi
# The runner's limit for a case, less some room.
limit=$(( $(tmo 300) - $(tmo 20) ))

# run WHAT SEED [PREFIX...]: one run (under the command PREFIX, if any);
# the time it took and its summary line, or fail with its output (its
# last operations, a child's first). Sets $took.
run() {
	local what=$1 seed=$2 out t0=$SECONDS
	shift 2
	out=$(timeout "$(tmo 150)" "$@" "$vfuzz" sroce0 "$seed" "$nops" 2>&1) ||
		fail "$what: $out"
	took=$((SECONDS - t0))
	out=$(echo "$out" | grep -E '^[0-9]+ ops, ')
	echo "$what, $took s: $out"
	# Its valid WRs (the exchange operation) moved data.
	[[ $out =~ completions,\ ([0-9]+)\ successful ]] &&
		[ "${BASH_REMATCH[1]}" -gt 0 ] ||
		fail "$what: not one successful completion: $out"
}

# A seed starts only if it and the unprivileged one would still end
# within the limit, were each as long as the last one.
start=$SECONDS done=0 last=0
for seed in $seeds; do
	if [ $((SECONDS + 2 * last)) -ge $((start + limit)) ]; then
		echo "vfuzz: near the time limit after $done of" \
			"$(echo $seeds | wc -w) seeds"
		break
	fi
	run "seed $seed" "$seed"
	last=$took done=$((done + 1))
done
echo "vfuzz: $done seeds of $nops operations in $((SECONDS - start)) s"
no_user_objects sroce0

# As uid 65534: the memlock limit raised first (setpriv keeps it), for the
# pinned MRs.
ulimit -l unlimited || fail "ulimit -l unlimited"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
expect_eq "uid under setpriv" 65534 "$("${nobody[@]}" id -u)"
run "seed 101 as uid 65534" 101 "${nobody[@]}"
no_user_objects sroce0
