# A process's ODP page fault that does not end (the page of a file whose
# FUSE server holds the read: tests/src/stallfs.h) holds up its own work
# only, never another process's (tests/src/sroce_stall.cpp):
# - destroy_other_user: A (uid 65534) posts, in one ibv_post_send(), a
#   SEND to V's QP and a SEND from the FUSE page; while A's doorbell waits
#   in the fault (D state, under sroce_task_doorbell, the read held), V's
#   QP receives the first SEND and V's ibv_destroy_qp() returns.
# - destroy_same_user: the same with A and V both root (two processes).
# - doorbell_to_stalled_peer: V's ibv_post_send() of a SEND to A's QP,
#   whose receive buffer is the FUSE page, returns; A's QP's run waits in
#   a worker of A's own queue (its /proc/PID/comm ends in
#   "+sroce_user_65534"); V destroys its QP; once the read is answered A
#   has V's bytes.
# - destroy_wq_full: 16 runs of A's QPs wait in the fault, filling A's
#   engine workqueue's share of CPU 0 (16 of A's workers in D state, no
#   more), and A sends V a packet there: V's QP, on V's own queue,
#   receives it at once. A QP of A2, another process of A's uid, with a
#   receive in pinned memory does not: its run waits behind A's stalled
#   ones, and A2's ibv_destroy_qp() of it returns all the same. Every worker of A's runs runs an item of
#   sroce_user_65534, and no thread in the fault is a workqueue's rescuer
#   (users' queues have none).
# - two_devices_one_queue: the same 16 runs stall A's queue on CPU 0, its
#   QPs on sroce0, and A's QP on sroce1 (a veth's, 10.78.0.1) does not
#   receive either: A has one queue for both devices. Once the read is
#   answered it does; A destroys its QPs on sroce0 first, then on sroce1,
#   whose record destroys the queue, and A's next QP, on sroce1, receives
#   at once.
# - odp_ahead_bound: 264 streams of A's QPs each would queue a
#   fault-ahead job that waits in the fault: A gets its bound of 16 jobs
#   ("rdma res show mr -dd": ahead_queued), which wait there, and the
#   others none (odp_ahead_refused); V's own streams' jobs then run at
#   once (its MRs count them started, its pages present, prefetched).
#   Once the read is answered A's jobs end and give their counts back
#   (odp_ahead_held back to 0); the server holds reads again, and A's
#   streams again get 16 jobs, the rest none.
# - dereg_odp_ahead_queued: sroce_odp runs 8 jobs at once (its sysfs
#   max_active, set for the test and set back): 8 of A's 16 jobs wait in
#   the fault, the rest, and V's jobs after them, wait in the queue; V's
#   ibv_dereg_mr() and ibv_rereg_mr() of their MRs return while V's jobs
#   still wait (their MRs count them queued, not started), and once the
#   read is answered V's jobs find their MRs retired (odp_jobs_retired
#   +2) and fault nothing in.
# - exit_odp_ahead_queued: the same, V killed: it exits, its QPs' destroy
#   taking its jobs off the queue.
# - release_isolation: A's orphaned ODP MR's release (its dereg killed
#   while its SEND's doorbell waits in the fault) waits on A's user's
#   release work item in mmu_interval_notifier_remove(), A's threads
#   keeping A's mm invalidating (madvise(MADV_FREE) over an ODP range,
#   long calls over page tables of the zero page; up to 3 tries);
#   it counts one page (release_backlog_pages) while it waits; a pinned
#   MR that A2, another process of uid 65534, orphans waits behind it,
#   pinned (A2's VmPin) and counted (its 256 pages), while V's orphaned
#   MR is released at once; once A's storm stops, all are released and
#   the backlog is back to 0. A2's and V's orphans are of an access the
#   test holds (tests/src/orphan.h: sroce's hold_map in the debug
#   kernel's debugfs): a pinned MR's map is in use for
#   one packet's copy only, which a killed dereg almost never meets. On a
#   kernel without that hold (Debian's) the case is skipped (both tests
#   named, with why), never passed.
# - release_backlog_bound: the same with max_user_release_mb 1 (set for
#   the test and set back), A2's orphan a 64 KiB MR over a transparent
#   huge page, counted as the huge page's 512 pages: uid 65534's next
#   ibv_reg_mr fails with ENOMEM (release_backlog_refused), V's does not;
#   once released, A2 registers again. Without a huge page for A2 (THP
#   off, memory too fragmented) it orphans 1 MiB instead, and the case,
#   unless a test failed, is skipped (that test named, with why), never
#   passed.
# Before the bound, A's jobs filled ODP's fault-ahead workqueue (256
# active) and V's waited behind them until the read was answered; before
# max_user_release_mb nothing bounded the releases that wait behind a
# stalled one.
# Before pending/inline-hold each of these hung until the read was
# answered: a doorbell ran, and held a reference on, any QP its loopback
# packets reached, a destroy waited for a worker to run its QP, and a
# dereg for a fault-ahead job still queued.
# Every wait is bounded; then the read is answered and everything must
# end, unmount and leave no object and no task in sroce.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
stall=$repo/tests/bin/sroce-stall
[ -e /dev/fuse ] || modprobe fuse 2>/dev/null ||
	skip "no FUSE in this kernel (CONFIG_FUSE_FS): no fault to stall"
link_add sroce0 eth0
base=$(kernel_counts sroce0)
# two_devices_one_queue's second device, on a veth with an IPv4 address:
# A's path there is the address's RoCEv2 GID.
ip link add sva type veth peer name svb || fail "cannot create veth"
trap 'ip link del sva 2>/dev/null' EXIT
ip link set sva up && ip link set svb up &&
	ip addr add 10.78.0.1/24 dev sva || fail "setting sva up"
link_add sroce1 sva
sva_gid() {
	grep -qsx 0000:0000:0000:0000:0000:ffff:0a4e:0001 \
		/sys/class/infiniband/sroce1/ports/1/gids/*
}
wait_for 20 sva_gid || fail "sroce1 has no GID for 10.78.0.1"
mnt=$(mktemp -d /tmp/sroce-stall.XXXXXX) || fail "mktemp -d"
chmod 755 "$mnt"	# A, uid 65534, opens the file under it
# sroce_odp's max_active as loaded, which the *_odp_ahead_queued tests
# set to 8 and back: set back here too, should a test be killed.
max_active=/sys/bus/workqueue/devices/sroce_odp/max_active
[ -w $max_active ] || fail "no $max_active: sroce_odp is not WQ_SYSFS"
odp_active=$(cat $max_active)
# max_user_release_mb as loaded, which release_backlog_bound sets to 1
# and back: set back here too.
release_mb=/sys/module/sroce/parameters/max_user_release_mb
[ -w $release_mb ] || fail "no $release_mb"
user_release=$(cat $release_mb)
# shellcheck disable=SC2064 # $mnt, $odp_active, $user_release are known now
trap "fuse_abort '$mnt'; umount -l '$mnt' 2>/dev/null; rmdir '$mnt'
	echo $odp_active > $max_active; echo $user_release > $release_mb
	orphan_unprobe; ip link del sva 2>/dev/null" EXIT
# The device's fault-ahead jobs queued or running: none once a test's
# QPs are gone (each job gave its counts back).
held=/sys/class/infiniband/sroce0/ports/1/hw_counters/odp_ahead_held
# The pages of the releases waiting in their users' lists: none once a
# test ended.
backlog=/sys/class/infiniband/sroce0/ports/1/hw_counters/release_backlog_pages

# Tasks whose kernel stack is in sroce: a run, a doorbell or a destroy
# that did not end (an rdma resource listing could wait for its QP).
in_sroce() { grep -l '\[sroce\]' /proc/[0-9]*/stack 2>/dev/null; }
none_in_sroce() { [ -z "$(in_sroce)" ]; }

bad='' names='' why=''
for t in destroy_other_user destroy_same_user doorbell_to_stalled_peer \
	destroy_wq_full two_devices_one_queue odp_ahead_bound \
	dereg_odp_ahead_queued exit_odp_ahead_queued release_isolation \
	release_backlog_bound; do
	dev2=()
	[ $t = two_devices_one_queue ] && dev2=(sroce1)
	out=$(timeout "$(tmo 240)" "$stall" sroce0 "$mnt" "$t" "${dev2[@]}" 2>&1)
	rc=$?
	if [ $rc = 77 ]; then
		names+=" $t"
		why+=$(sed -n "s/^SKIP: $t: //p" <<<"$out")$'\n'
	elif [ $rc != 0 ]; then
		bad+="$t (status $rc): $out"$'\n'
	fi
	if [ "$(cat $max_active)" != "$odp_active" ]; then
		bad+="$t: sroce_odp's max_active $(cat $max_active), not"
		bad+=" $odp_active as before"$'\n'
		echo "$odp_active" > $max_active
	fi
	# A test killed by its timeout may leave the hold of an access
	# armed: the next responder access anywhere would keep its map.
	if orphan_hold_armed; then
		bad+="$t: the hold of an access (hold_map) left"
		bad+=" armed"$'\n'
		orphan_unprobe
	fi
	if [ "$(cat $release_mb)" != "$user_release" ]; then
		bad+="$t: max_user_release_mb $(cat $release_mb), not"
		bad+=" $user_release as before"$'\n'
		echo "$user_release" > $release_mb
	fi
	# A test killed by its timeout may leave a server stuck, and the
	# tasks that wait for it: its connection is aborted first.
	fuse_abort "$mnt"
	if mountpoint -q "$mnt"; then
		bad+="$t: StallFs still mounted on $mnt"$'\n'
		umount -l "$mnt"
	fi
	if ! wait_for 60 none_in_sroce; then
		bad+="$t: tasks still in sroce $(tmo 60) s later:"
		for f in $(in_sroce); do
			bad+=" ${f%/stack} ($(tr '\n' ' ' < "$f"))"
		done
		fail "$bad"
	fi
	for d in sroce0 sroce1; do
		for o in pd mr cq qp; do
			n=$(user_objects $o $d)
			[ "$n" = 0 ] ||
				bad+="$t: $n process $o objects left on $d"$'\n'
		done
	done
	[ "$(cat $held)" = 0 ] ||
		bad+="$t: odp_ahead_held $(cat $held) once it ended, not 0"$'\n'
	[ "$(cat $backlog)" = 0 ] ||
		bad+="$t: release_backlog_pages $(cat $backlog) once it ended, not 0"$'\n'
	now=$(kernel_counts sroce0)
	[ "$now" = "$base" ] ||
		bad+="$t: kernel objects $now, not $base as before"$'\n'
done
[ -z "$bad" ] || fail "$bad"
# A test that could not do all it should here (FUSE missing, say; no huge
# page for release_backlog_bound) is not a pass: the case is skipped, those
# tests named, each reason once.
[ -z "$names" ] ||
	skip "not run:$names: $(sort -u <<<"$why" | sed '/^$/d' |
		paste -sd ';' -)"
