# A killed ibv_dereg_mr() of a pinned MR while an access to it is under
# way leaves the MR's map to that access (sroce_map_wait()), whose put
# queues the pin's release on its user's own work item
# (sroce_pin_put_async(), sroce_kmem_release_queue()). The access is the
# first RDMA WRITE of a stream into the MR, which the test holds
# (tests/src/orphan.h: sroce's hold_map in debugfs, armed once);
# a forked child's dereg is seen waiting for it (its stack in
# sroce_map_retire_held() under sroce_dereg_mr(), release_queued +0) and
# SIGKILLed there; then release_queued +1, and within 5 s the release ran
# and ended (release_backlog_pages back), kmem_bytes and the process's
# VmPin are what they were before the MR, and every byte of the buffer
# is its old one or a WRITE's (orphan_pinned). A kernel without the hold
# (Debian's: no CONFIG_FAULT_INJECTION_DEBUG_FS) has
# the case skipped with why: a pinned MR's map is in use for one
# packet's copy only, which a killed dereg almost never meets. Then
# the same with rmmod sroce started at once, the context still open: it
# ends, every queued release run, and no WARN from sroce_kmem_exit() or
# sroce_user_release() (orphan_unload; its line says whether the release
# was still queued when rmmod began). With the device gone its counters
# are too: orphan_unload counts with kprobe events on
# sroce_kmem_release_queue() and sroce_pin_release_work(), in tracefs,
# mounted here if it is not; without kprobe events the case is skipped
# (orphan_pinned run first). The hold's injection and the kprobe events
# are removed whatever happened (orphan_unprobe).
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
