# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Helpers for the two-VM tests (sourced by tests/pair/*.sh in each guest of
# scripts/host/vm-pair.sh). $ROLE is a or b, $PEER4 the other VM's address, $MY4
# this VM's, $KIND (sroce or rxe) the RDMA device this VM brings up.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# rdma_up: bring up $KIND on eth0; sets $dev and $gidx (the RoCEv2 GID of
# $MY4: rxe lists RoCE v1 and v2 entries per address, sroce only v2).
rdma_up() {
	modprobe -a ib_uverbs rdma_ucm || return 1
	case "${KIND:-sroce}" in
	rxe)
		dev=rxe0
		ibdev_exists $dev || { modprobe -a crc32_generic rdma_rxe &&
			rdma link add rxe0 type rxe netdev eth0; } || return 1 ;;
	sroce)
		dev=sroce0
		ibdev_exists $dev || { load_sroce && link_add sroce0 eth0; } ||
			return 1 ;;
	*) echo "unknown KIND $KIND" >&2; return 1 ;;
	esac
	# shellcheck disable=SC2034 # $gidx is for the tests/pair scripts that source this
	gidx=$(roce_v2_gid_index "$dev" "$MY4") || {
		echo "$dev has no RoCEv2 GID for $MY4" >&2; return 1; }
}

# roce_v2_gid_index DEV IPV4: the GID table index of ::ffff:IPV4, RoCE v2
roce_v2_gid_index() {
	local want p f n
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		${2//./ })
	p=/sys/class/infiniband/$1/ports/1
	wait_for 10 grep -qx "$want" "$p"/gids/* 2>/dev/null || return 1
	for f in "$p"/gids/*; do
		n=${f##*/}
		[ "$(cat "$f")" = "$want" ] &&
			[ "$(cat "$p/gid_attrs/types/$n" 2>/dev/null)" = "RoCE v2" ] &&
			{ echo "$n"; return 0; }
	done
	return 1
}

# stuck_report: the test programs still running, with their state and
# kernel stack (after a step's time limit ran out)
stuck_report() {
	local p
	for p in $(pgrep -f "$repo/tests/bin/|ibv_|ib_[a-z]*_(bw|lat)|rping|ucmatose|udaddy|rdma_(server|client)"); do
		[ "$p" = $$ ] && continue
		echo "still running: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)" \
			"[state $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)]"
		sed 's/^/    /' /proc/$p/stack 2>/dev/null
	done
}

# Test steps run in the same order on both VMs. step NAME SERVER_ROLE
# SERVER_CMD CLIENT_CMD: the VM whose role is SERVER_ROLE runs SERVER_CMD,
# the other runs CLIENT_CMD (retrying until the server listens). Prints
# "ok   NAME" or "FAIL NAME" with the output, on the client side and the
# server side alike, and counts into $passed/$failed. Each side has
# $STEP_LIMIT seconds (120 unless set), stretched by tmo.
passed=0 failed=0
step() {
	local name=$1 srole=$2 scmd=$3 ccmd=$4 out rc start=$SECONDS
	if [ "$ROLE" = "$srole" ]; then
		out=$(timeout "$(tmo "${STEP_LIMIT:-120}")" bash -c "$scmd" 2>&1); rc=$?
	else
		for _ in $(seq 60); do
			out=$(timeout "$(tmo "${STEP_LIMIT:-120}")" bash -c "$ccmd" 2>&1); rc=$?
			[ $rc = 0 ] && break
			# The server is not listening yet: try again.
			grep -qiE "couldn't connect|unable to init the socket|refused|REJECTED|UNREACHABLE|could not connect" <<<"$out" ||
				break
			sleep 1
		done
	fi
	# A step that timed out: where its programs are stuck.
	[ $rc = 124 ] && out+=$'\n'"$(stuck_report)"
	if [ $rc = 0 ]; then
		echo "ok   $name ($((SECONDS - start)) s)"; passed=$((passed + 1))
	else
		echo "FAIL $name (rc $rc)"; echo "$out" | tail -n 20 | sed 's/^/    /'
		failed=$((failed + 1))
	fi
	echo "$out" >> /tmp/out/steps.log
}

# counter NAME: the value of port counter NAME of $dev
counter() {
	rdma statistic show link "$dev/1" | tr ' ' '\n' |
		awk -v k="$1" 'found { print; exit } $0 == k { found = 1 }'
}

# check NAME COMMAND...: a step that is a check of this VM alone
check() {
	local name=$1; shift
	if "$@"; then
		echo "ok   $name"; passed=$((passed + 1))
	else
		echo "FAIL $name"; failed=$((failed + 1))
	fi
}

# counters: the transport's nonzero error counters, on one line
counters() {
	rdma statistic show link "$dev/1" 2>/dev/null | tr ' ' '\n' |
		paste - - | grep -E 'retrans|timeout|dup|seq|nak|drop' |
		grep -v '	0$' | tr '\t\n' '= '
}
