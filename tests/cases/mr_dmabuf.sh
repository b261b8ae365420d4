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
# dmabuf. The bad fds need no exporter, the bad ranges and access
# /dev/udmabuf (before 6.2 its good registration must be refused with
# EOPNOTSUPP, leaving nothing behind); the rest needs /dev/udmabuf with a
# kernel mapping (6.2 and later): without one the case says why and is
# counted as skipped, never as passed.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 dmabuf_badfd dmabuf_errors
xfer_all sroce0 rc 1024 dmabuf_rdma dmabuf_offset dmabuf_close_fd \
	dmabuf_dereg_inflight dmabuf_cycles dmabuf_rereg dmabuf_res
xfer_all sroce0 rc 4096 dmabuf_rdma
no_user_objects sroce0
