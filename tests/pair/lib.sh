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

# roce_v2_gid_index DEV ADDR [NDEV]: the GID table index of ADDR, RoCE v2
# (an IPv4 address: ::ffff:ADDR); with NDEV, the one whose net_device is
# NDEV (an IPv6 link-local address is a GID of a device and of each VLAN
# on it)
roce_v2_gid_index() {
	local want p nd=${3:-}
	case $2 in
	*:*) want=$(/usr/bin/python3 -c 'import ipaddress, sys
print(ipaddress.ip_address(sys.argv[1]).exploded)' "$2") || return 1 ;;
	*) want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		${2//./ }) ;;
	esac
	p=/sys/class/infiniband/$1/ports/1
	wait_for 10 gid_index_of "$p" "$want" "$nd" >/dev/null || return 1
	gid_index_of "$p" "$want" "$nd"
}

# gid_index_of PORT_DIR GID [NDEV]: print the index of RoCE v2 GID GID
# (on NDEV) in PORT_DIR's table; false if there is none. One grep reads
# the whole table (1024 entries for sroce and rdma_rxe, in the order of
# the glob: 0 1 10 100 1000 ... 2 ...): a cat per entry, each an exec from
# the 9p root under TCG, took minutes to reach index 8.
gid_index_of() {
	local f n
	# No process substitution: the guest's root has no /dev/fd.
	for f in $(grep -lxF -- "$2" "$1"/gids/* 2>/dev/null); do
		n=${f##*/}
		[ "$(cat "$1/gid_attrs/types/$n" 2>/dev/null)" = "RoCE v2" ] &&
			{ [ -z "${3:-}" ] ||
			  [ "$(cat "$1/gid_attrs/ndevs/$n" 2>/dev/null)" = "$3" ]; } &&
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
# $STEP_LIMIT seconds (120 unless set), stretched by tmo. The client runs
# up to $STEP_TRIES times (60 unless set): 1 for a client that waits for
# its server itself (a kernel client's failure may well say "refused").
passed=0 failed=0
step() {
	local name=$1 srole=$2 scmd=$3 ccmd=$4 out rc start=$SECONDS
	if [ "$ROLE" = "$srole" ]; then
		out=$(timeout "$(tmo "${STEP_LIMIT:-120}")" bash -c "$scmd" 2>&1); rc=$?
	else
		for _ in $(seq "${STEP_TRIES:-60}"); do
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

# The rdma_cm steps whose client makes several connections (ucmatose and
# udaddy -c 2) start their client only once the server listens. Retrying
# the client is not enough there: when the first of its connections is
# rejected (no listener yet) and the second accepted, the server is left
# serving a client that has gone, and every later try is rejected (a
# VLAN ucmatose step failed so, "RDMA_CM_EVENT_REJECTED, error: 8").
# cm_serve PORT COMMAND...: run the rdma_cm server COMMAND; once rdma
# resource lists its listener, answer TCP connections on PORT + 10000 (to
# the peer's cm_client PORT) until COMMAND ends; COMMAND's status
cm_listens() {
	rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*pid $1 "
}
cm_serve() {
	local port=$(($1 + 10000)) srv ready='' rc
	shift
	"$@" &
	srv=$!
	if wait_for 30 cm_listens $srv; then
		/usr/bin/python3 -c 'import socket, sys
s = socket.create_server(("", int(sys.argv[1])))
while True:
    s.accept()[0].close()' $port &
		ready=$!
	else
		echo "cm_serve: no listener of $1 after $(tmo 30) s:" \
			"$(rdma resource show cm_id)"
	fi
	wait $srv
	rc=$?
	[ -z "$ready" ] || kill $ready
	return $rc
}
# cm_client PORT COMMAND...: run COMMAND once the peer's cm_serve PORT
# answers on TCP
peer_answers() { (exec 3<>"/dev/tcp/$PEER4/$1") 2>/dev/null; }
cm_client() {
	local port=$(($1 + 10000))
	shift
	wait_for 120 peer_answers $port || {
		echo "the server did not listen in $(tmo 120) s (no answer on" \
			"TCP port $port)"; return 1; }
	"$@"
}
export -f cm_listens cm_serve peer_answers cm_client wait_for tmo
# cm_step NAME SERVER_ROLE PORT SERVER_CMD CLIENT_CMD: a step of such an
# rdma_cm server and its client, PORT their ready port; one try (the
# client comes once the server listens)
cm_step() {
	STEP_TRIES=1 step "$1" "$2" "cm_serve $3 $4" "cm_client $3 $5"
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

# decode NAME DECODER PCAP ARG...: the check NAME, that tests/pair/DECODER
# passes on the capture PCAP with ARGs; its output goes under the check's
# line. Under make check (SROCE_DECODE_ON_HOST set) the host runs it
# instead, after the pair, on the copy of PCAP in /tmp/out
# (scripts/host/check.sh's pair_suite): Python runs 16 to 20 times slower
# here under TCG, about 17 s a capture, and the peer waits for this VM all
# that time. The host finds NAME, DECODER and the ARGs, one a line, in
# /tmp/out/PCAP.decode.
decode() {
	local name=$1 py=$2 pcap=$3 out rc
	shift 3
	if [ -n "${SROCE_DECODE_ON_HOST:-}" ]; then
		printf '%s\n' "$name" "$py" "$@" > "/tmp/out/${pcap##*/}.decode"
		echo "$name: decoded by the host after the pair"
		return
	fi
	# Stretched like every step: on the debug kernel it takes minutes.
	out=$(timeout "$(tmo 120)" /usr/bin/python3 "$repo/tests/pair/$py" \
		"$pcap" "$@" 2>&1)
	rc=$?
	[ $rc = 124 ] && out="the decoder did not finish in $(tmo 120) s"
	check "$name" [ $rc = 0 ]
	echo "$out" | sed 's/^/    /'
}

# counters: the transport's nonzero error counters, on one line
counters() {
	rdma statistic show link "$dev/1" 2>/dev/null | tr ' ' '\n' |
		paste - - | grep -E 'retrans|timeout|dup|seq|nak|drop' |
		grep -v '	0$' | tr '\t\n' '= '
}

# The kernel clients' steps (tests/pair/ulp*.sh): a server function on one
# VM, a client function on the other, each run by step in its own bash
# (they export what they use).

# pattern SEED BYTES: the same bytes on both VMs (tests/pair/pattern.py);
# pattern_sum SEED BYTES: their sha256sum line. make check makes patterns 1
# and 2 of 32 MiB and their sums once, on the host, before the pairs
# (scripts/host/check.sh: build/pair-pattern/SEED.bin, SEED.sha256): here
# under TCG a pattern took 4 to 5 s of Python and a hash about 2, three
# and two of them in an NVMe-oF host's step. A file is taken when it has
# BYTES bytes and is newer than the generator; the bytes are made here
# otherwise. What comes back over RDMA is hashed here all the same.
pattern_gen=$repo/tests/pair/pattern.py pattern_dir=$repo/build/pair-pattern
export pattern_gen pattern_dir
pattern_file() { # SEED BYTES: the host's file of pattern SEED, if it fits
	local f=$pattern_dir/$1.bin
	[ -f "$f" ] && [ "$f" -nt "$pattern_gen" ] &&
		[ "$(stat -c %s "$f")" = "$2" ] && echo "$f"
}
pattern() {
	local f
	if f=$(pattern_file "$1" "$2"); then
		cat "$f"
	else
		/usr/bin/python3 "$pattern_gen" "$1" "$2"
	fi
}
pattern_sum() {
	local f
	if f=$(pattern_file "$1" "$2") && [ -f "${f%.bin}.sha256" ] &&
		! [ "$f" -nt "${f%.bin}.sha256" ]; then
		cat "${f%.bin}.sha256"
	else
		pattern "$1" "$2" | sha256sum
	fi
}

# kernel_qps: this VM's kernel QPs on $dev (ib_mad's, the ULPs')
kernel_qps() { kernel_objects qp "$dev"; }
qps_above() { [ "$(kernel_qps)" -gt "$1" ]; }
qps_at() { [ "$(kernel_qps)" = "$1" ]; }

# peer_session QPS: wait until the peer's kernel client has connected to
# this VM's server (kernel QPs on $dev above QPS, their number before) and
# has gone again (back to QPS); say which did not happen
peer_session() {
	wait_for 240 qps_above "$1" ||
		{ echo "no client connected (kernel QPs on $dev stay $1)"; return 1; }
	wait_for 240 qps_at "$1" ||
		{ echo "the client's queues stay: $(kernel_qps) kernel QPs on $dev, $1 before"; return 1; }
}

# explain MESSAGE...: a failure's message, then the kernel log's last lines
explain() {
	echo "$*"
	dmesg | tail -n 6 | sed 's/^/    dmesg: /'
}

# ulp_counts DEV: kernel_counts without ib_core's CQs (ib_mad's and the CQ
# pool's, which keeps a kernel client's CQs until the device goes)
ulp_counts() {
	local t out=
	for t in pd cq qp mr; do
		out+="$t=$(ulp_objects $t "$1") "
	done
	echo "${out% }"
}

# unload_module MODULE: unload MODULE and what it alone pulled in, if it
# is a loaded module; a built-in one (the debug kernel's NFS client) has a
# /sys/module directory too, but no initstate, and stays
unload_module() {
	[ -e "/sys/module/${1//-/_}/initstate" ] || return 0
	modprobe -r "$1"
}

# back_to COUNTER BASE: wait until COUNTER $dev (kernel_counts or
# ulp_counts) reads BASE again; say what stayed if it does not
counts_are() { [ "$("$1" "$dev")" = "$2" ]; }
back_to() {
	wait_for 30 counts_are "$1" "$2" && return 0
	echo "$1 $dev: $2 before, $("$1" "$dev") after the teardown:" \
		"$(kernel_listing "$dev" | tr '\n' ';')"
	return 1
}

# ulp_both_ways WHAT PACKETS SERVER CLIENT NAME: a kernel client's step
# each way: the server function SERVER on a and CLIENT SERVER_ADDRESS on
# b, then SERVER on b and CLIENT on a; NAME is a printf format of the
# server's role and the client's. Then check that $dev sent at least
# PACKETS packets for WHAT in the two.
ulp_both_ways() {
	local what=$1 least=$2 serve=$3 client=$4 name=$5 s c sent0 sent
	sent0=$(counter sent_pkts)
	for s in a b; do
		c=$([ $s = a ] && echo b || echo a)
		# shellcheck disable=SC2059 # NAME is the format
		step "$(printf "$name" $s "$c")" $s "$serve" "$client $PEER4"
	done
	sent=$(( $(counter sent_pkts) - sent0 ))
	check "$dev sent packets for $what: $sent (at least $least)" \
		test "$sent" -ge "$least"
}

# tries WHAT COMMAND...: run COMMAND until it succeeds (the server is
# setting up), once a second for 120 s (tmo); if it never does, say WHAT
# and its last output
tries() {
	local what=$1 out end=$((SECONDS + $(tmo 120)))
	shift
	until out=$("$@" 2>&1); do
		if [ $SECONDS -ge $end ]; then
			explain "$what, $(tmo 120) s of tries: $out"
			return 1
		fi
		sleep 1
	done
}

# objects_listed COUNT...: rdma resource could list $dev's objects for
# each COUNT (kernel_counts, ulp_counts, kernel_qps: none is "?"); says
# so when it could not
objects_listed() {
	case "$*" in *'?'*)
		echo "rdma resource could not list $dev's objects: $1"; return 1 ;;
	esac
}

# lun_written FILE: the second half of FILE, a SCSI target's LUN, holds
# what ulp_disk_io wrote there (pattern 2); says so when it does not
lun_written() {
	local half=$((32 * 1024 * 1024))
	[ "$(tail -c $half "$1" | sha256sum)" = "$(pattern_sum 2 $half)" ] &&
		return 0
	echo "the second half of $1 is not what the initiator wrote"
	return 1
}

# ulp_disk_io DISK: a disk of 64 MiB whose first half holds pattern 1
# (a SCSI target's LUN as tests/pair/ulp_srp.sh and ulp_iser.sh make it):
# pattern 1 read from its first half, pattern 2 written to its second
# and read back, all O_DIRECT
ulp_disk_io() {
	local size half=$((32 * 1024 * 1024))
	size=$(blockdev --getsize64 "$1")
	[ "$size" = $((2 * half)) ] ||
		{ echo "size of $1: expected $((2 * half)), got $size"; return 1; }
	[ "$(dd if="$1" bs=1M count=32 iflag=direct status=none |
		sha256sum)" = "$(pattern_sum 1 $half)" ] || {
		explain "the first 32 MiB of $1 are not the target's pattern"
		return 1; }
	pattern 2 $half | dd of="$1" bs=1M seek=32 oflag=direct \
		iflag=fullblock status=none ||
		{ explain "write the second 32 MiB of $1"; return 1; }
	[ "$(dd if="$1" bs=1M skip=32 count=32 iflag=direct status=none |
		sha256sum)" = "$(pattern_sum 2 $half)" ] || {
		explain "the second 32 MiB read back from $1 are not what" \
			"was written"; return 1; }
}

# export_ulp_helpers: export the functions above and those of tests/lib.sh
# they use, for the steps' own bash
export_ulp_helpers() {
	export -f pattern kernel_qps qps_above qps_at peer_session explain \
		ulp_counts counts_are back_to wait_for tmo kernel_objects \
		res_lines kernel_counts kernel_listing ulp_objects unload_module \
		ulp_disk_io objects_listed lun_written tries pattern_file \
		pattern_sum
}
