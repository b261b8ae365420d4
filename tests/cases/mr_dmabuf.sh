# dma-buf MRs (ibv_reg_dmabuf_mr(3)), the data path, over udmabuf where
# sroce maps it (6.2 and later but 6.12.2 to 6.12.47 and 6.13 to 6.16.0:
# Debian's 6.12), else over the system heap (6.1: the debug kernel of make
# check-debug), the exporter named on the runner's line: RDMA WRITE, READ
# and atomics into the buffer and out of it, read back through the
# owner's own mapping (the memfd's, or the heap's mmap of the dma-buf)
# with every byte of the buffer checked; the MR as local SGEs (a
# receive's and a READ's target, a SEND's and a WRITE's source); a range
# inside a page at a small iova; the owner closing its fds (the dma-buf's,
# a udmabuf's memfd) and its mapping while the MR lives (the MR keeps the
# buffer, the dereg frees it); deregistration under a stream of WRITEs and
# of READs (the stream ends with a remote access error, no stray byte);
# 10^3 register/deregister cycles (dma-bufs, the exporter's kernel
# mappings, MRs and sroce kernel memory back to what they were); the
# errnos of bad fds, ranges and access; rereg (libibverbs refuses it; the
# kernel changes access and PD in place, refuses a new translation);
# "rdma resource show mr" kind dmabuf, its exporter, the whole buffer's
# pages mapped. The system heap carries RDMA in a test of its own too
# (dmabuf_heap). The bad fds need no exporter, the rest one that sroce
# maps, and dmabuf_heap the system heap: without them the case says why
# and is counted as skipped, never as passed (Debian's 6.1 has neither
# udmabuf nor the system heap). What sroce refuses of udmabuf:
# mr_dmabuf_refused.sh; a buffer of an exporter it does not map:
# mr_dmabuf_unlisted.sh.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 dmabuf_badfd dmabuf_errors dmabuf_rdma \
	dmabuf_offset dmabuf_close_fd dmabuf_dereg_inflight dmabuf_cycles \
	dmabuf_rereg dmabuf_res dmabuf_heap
xfer_all sroce0 rc 4096 dmabuf_rdma
no_user_objects sroce0
