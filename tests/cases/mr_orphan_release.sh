# A killed ibv_dereg_mr() of a pinned MR while a stream of RDMA WRITEs
# into it is under way leaves the MR's map to the last access
# (sroce_map_wait()), whose put queues the pin's release on its user's
# own work item (sroce_pin_put_async(), sroce_kmem_release_queue()).
# Rounds of a forked child's dereg SIGKILLed as it starts, until one
# round queued a release (the device's release_queued +1); then within 5
# s the release ran and ended (release_backlog_pages back), kmem_bytes
# and the process's VmPin are what they were before the MR, and every
# byte of the buffer is its old one or a WRITE's (orphan_pinned). Then
# the same with rmmod sroce started at once, the context still open: it
# ends, every queued release run, and no WARN from sroce_kmem_exit() or
# sroce_user_release() (orphan_unload; its line says whether the release
# was still queued when rmmod began). With the device gone its counters
# are too: orphan_unload counts with kprobe events on
# sroce_kmem_release_queue() and sroce_pin_release_work(), in tracefs,
# mounted here if it is not; without kprobe events the case is skipped
# (orphan_pinned run first).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap orphan_unprobe EXIT
mount_tracefs
link_add sroce0 eth0
xfer_all sroce0 rc 4096 orphan_pinned
out=$(timeout "$(tmo 120)" "$xfer" sroce0 orphan_unload rc 4096 2>&1)
rc=$?
orphan_unprobe
sroce_loaded && fail "sroce still loaded after orphan_unload: $out"
load_sroce || fail "sroce does not load again"
link_add sroce0 eth0
[ $rc = 77 ] && skip "$(sed -n 's/^SKIP: orphan_unload: //p' <<<"$out")"
[ $rc = 0 ] || fail "orphan_unload (status $rc): $out"
sed -n 's/^NOTE: orphan_unload: /NOTE: /p' <<<"$out"
