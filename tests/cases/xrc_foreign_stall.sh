# An XRC receive QP belongs to its XRC domain, and each request names the
# SRQ, any of the domain's: another process (its own context of the
# device) that opened the pair's domain makes an XRC SRQ in its own PD and
# receives into ODP memory whose page faults wait as long as the test
# likes: a shared mapping of the file of a FUSE server the test runs
# (tests/src/stallfs.h), which holds the read of the page. A SEND into
# that SRQ, a WRITE into that memory and a READ out of it reach the first
# context's XRC receive QP; once the stall is seen (the read held, a
# worker of sroce's in D state in hmm_range_fault), that QP's
# ibv_query_qp, ibv_modify_qp (to error) and ibv_destroy_qp must each
# return within 2 s: the QP waits for no fault (RNR NAKs; a READ waits
# for the QP's timer), a job faults the pages in beside. Before, its work
# waited in the fault under the QP's lock, and each of those verbs with
# it, in D state, until the read was answered (here, by the test's
# watchdog after 30 s). Then the read is answered and the same three land
# through a new receive QP, every byte where it belongs
# (tests/src/xfer_sec.cpp, xrc_foreign_stall). Skipped without FUSE.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
[ -e /dev/fuse ] || modprobe fuse 2>/dev/null ||
	skip "no FUSE in this kernel (CONFIG_FUSE_FS): no fault to stall"
mnt=$(mktemp -d /tmp/sroce-xrc-stall.XXXXXX) || fail "mktemp -d"
# shellcheck disable=SC2064 # $mnt is known now
trap "fuse_abort '$mnt'; umount -l '$mnt' 2>/dev/null; rmdir '$mnt'" EXIT
link_add sroce0 eth0
out=$(timeout "$(tmo 180)" "$xfer" sroce0 xrc_foreign_stall rc 1024 \
	"$mnt" 2>&1)
rc=$?
[ $rc = 77 ] && skip "$(sed -n 's/^SKIP: xrc_foreign_stall: //p' <<<"$out")"
[ $rc = 0 ] || fail "$out"
mountpoint -q "$mnt" && fail "StallFs still mounted on $mnt"
echo "$out" | tail -1
no_user_objects sroce0
