# dma-buf MRs (ibv_reg_dmabuf_mr(3)) over udmabuf: RDMA WRITE, READ and
# atomics into the buffer and out of it, read back through the memfd's own
# mapping with every byte of the buffer checked; the MR as local SGEs (a
# receive's and a READ's target, a SEND's and a WRITE's source); a range
# inside a page at a small iova; the owner closing the dma-buf fd, the
# memfd and its mapping while the MR lives (the MR keeps the buffer, the
# dereg frees it); deregistration under a stream of WRITEs and of READs
# (the stream ends with a remote access error, no stray byte); 10^3
# register/deregister cycles (dma-bufs, kernel mappings, MRs and sroce
# kernel memory back to what they were); the errnos of bad fds, ranges
# and access; rereg (libibverbs refuses it; the kernel changes access and
# PD in place, refuses a new translation); "rdma resource show mr" kind
# dmabuf, the whole buffer's pages mapped. The other exporter sroce maps,
# the system heap, carries RDMA too (dmabuf_heap); an exporter it does not
# map (vgem, loaded here where the kernel has it) and a udmabuf over a
# huge page (one added to the pool here) are refused with EOPNOTSUPP.
# The bad fds need no exporter, the bad ranges and access
# /dev/udmabuf (before 6.2 its good registration must be refused with
# EOPNOTSUPP, leaving nothing behind); the rest needs /dev/udmabuf with a
# kernel mapping (6.2 and later), the system heap, vgem and a huge page:
# without one the case says why and is counted as skipped, never as passed.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
# vgem: a DRM exporter sroce refuses (a module of Debian's kernels, not
# built in the debug kernel); a huge page for a udmabuf over one (where the
# kernel has hugetlbfs). Both as they were when the case ends.
hugepages=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null)
vgem_was_loaded=
[ ! -d /sys/module/vgem ] || vgem_was_loaded=1
cleanup() {
	[ -n "$vgem_was_loaded" ] || unload vgem
	[ -z "$hugepages" ] || echo "$hugepages" >/proc/sys/vm/nr_hugepages
}
trap cleanup EXIT
modprobe -q vgem || true
[ -z "$hugepages" ] || echo $((hugepages + 1)) >/proc/sys/vm/nr_hugepages
link_add sroce0 eth0
xfer_all sroce0 rc 1024 dmabuf_badfd dmabuf_errors dmabuf_heap \
	dmabuf_unlisted dmabuf_hugetlb
xfer_all sroce0 rc 1024 dmabuf_rdma dmabuf_offset dmabuf_close_fd \
	dmabuf_dereg_inflight dmabuf_cycles dmabuf_rereg dmabuf_res
xfer_all sroce0 rc 4096 dmabuf_rdma
no_user_objects sroce0
