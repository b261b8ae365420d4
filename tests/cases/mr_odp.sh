# On-demand paging MRs (IBV_ACCESS_ON_DEMAND) and ibv_advise_mr(3): an ODP
# MR pins nothing; WRITE, READ, SEND, atomics fault its pages in, through
# its rkey and its lkey; pages the process drops (MADV_DONTNEED) are
# dropped by sroce too (MMU notifier), so a READ sees the new zero pages;
# unmapped memory gives the peer a remote access error. ibv_advise_mr:
# PREFETCH, PREFETCH_WRITE (pages made present, checked with mincore) and
# PREFETCH_NO_FAULT (nothing faulted), with and without FLUSH, and each
# error code of the man page. Implicit ODP: WRITE, READ, SEND and prefetch
# through one key for the whole address space, into memory mapped after it.
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 odp advise
xfer_all sroce0 rc 4096 odp
