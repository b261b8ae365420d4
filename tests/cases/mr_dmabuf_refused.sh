# What sroce refuses of udmabuf, with EOPNOTSUPP before anything is mapped
# or charged, nothing left behind: every udmabuf where the kernel's
# udmabuf gives no mapping sroce can use (before 6.2: the debug kernel of
# make check-debug; 6.12.2 to 6.12.47 and 6.13 to 6.16.0), its range
# still checked first (EINVAL); where it does (Debian's 6.12) a good
# registration works instead (dmabuf_udmabuf_kernel); a udmabuf over a
# huge page, one added to the pool here, on every kernel (dmabuf_hugetlb;
# on 6.1 the refusal of every udmabuf comes first). Needs /dev/udmabuf
# and a huge page (hugetlbfs): without them the case says why and is
# counted as skipped, never as passed (Debian's 6.1 has no udmabuf). The
# data path: mr_dmabuf.sh.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
# A huge page for a udmabuf over one, where the kernel has hugetlbfs; the
# pool as it was when the case ends.
hugepages=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null)
cleanup() {
	[ -z "$hugepages" ] || echo "$hugepages" >/proc/sys/vm/nr_hugepages
}
trap cleanup EXIT
[ -z "$hugepages" ] || echo $((hugepages + 1)) >/proc/sys/vm/nr_hugepages
link_add sroce0 eth0
xfer_all sroce0 rc 1024 dmabuf_udmabuf_kernel dmabuf_hugetlb
no_user_objects sroce0
