# What a security review of the kernel found, each checked as a user would
# see it (tests/src/xfer_sec.cpp). Every refusal is shown to land nothing:
# the whole target buffer, its guard pages and the requester's buffer are
# compared with what they held before.
# - An atomic through a zero-based window was checked for alignment on the
#   window's offset, not on the address it touches: a window bound at
#   page + 0xffd let FETCH_ADD and CMP_SWP work on 8 bytes across a page
#   boundary (pinned MRs), or past the page held (ODP MRs). Now an invalid
#   request (mw_atomic_unaligned).
# - An XRC send QP (initiator) answered requests: connected to itself, its
#   WRITE landed in its own PD's memory, and a SEND (it has no receive
#   queue) crashed the kernel. Now nobody answers: RETRY_EXC_ERR
#   (xrc_ini_no_requests).
# - An XRC READ response longer than 64 packets failed (xrc_read_long).
# - An ODP MR with IBV_ACCESS_HUGETLB over 1 TiB made ib_core size a page
#   list for the whole range in base pages: a kvmalloc of 2 GiB, over
#   INT_MAX (a WARN), or just under it (allocated) (odp_hugetlb_bound).
# - A message of 2^22 packets or more (2^30 bytes at MTU 256) broke the
#   PSN half-space comparison; the requester now refuses it with
#   LOC_LEN_ERR before reading a byte (read_too_many_packets, at MTU 256
#   whatever the case passes).
# The first two run again as an unprivileged user (uid/gid 65534), which
# is who would use them as an attack.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
command -v setpriv >/dev/null ||
	fail "setpriv (util-linux) missing: cannot run as an unprivileged user"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 mw_atomic_unaligned xrc_ini_no_requests \
	xrc_read_long odp_hugetlb_bound read_too_many_packets

# As uid 65534: the memlock limit raised first (setpriv keeps it), for the
# pinned MRs of mw_atomic_unaligned.
ulimit -l unlimited || fail "ulimit -l unlimited"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
expect_eq "uid under setpriv" 65534 "$("${nobody[@]}" id -u)"
bad=
for t in mw_atomic_unaligned xrc_ini_no_requests; do
	out=$(timeout "$(tmo 120)" "${nobody[@]}" "$xfer" sroce0 "$t" rc 1024 \
		2>&1) || bad+="$t (uid 65534): $out"$'\n'
done
[ -z "$bad" ] || fail "$bad"
no_user_objects sroce0
