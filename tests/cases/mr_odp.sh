# On-demand paging MRs (IBV_ACCESS_ON_DEMAND) and ibv_advise_mr(3): an ODP
# MR pins nothing; WRITE, READ, SEND, atomics fault its pages in, through
# its rkey and its lkey; pages the process drops (MADV_DONTNEED) are
# dropped by sroce too (MMU notifier), so a READ sees the new zero pages;
# unmapped memory gives the peer a remote access error. ibv_advise_mr:
# PREFETCH, PREFETCH_WRITE (pages made present, checked with mincore) and
# PREFETCH_NO_FAULT (nothing faulted), with and without FLUSH, and each
# error code of the man page. Implicit ODP: WRITE, READ, SEND and prefetch
# through one key for the whole address space, into memory mapped after it.
# res_mr: "rdma resource show mr -j -dd" shows each MR's ODP kind, pages
# mapped, faults, invalidations, prefetched pages, re-registrations and
# windows, checked against known traffic, with the device's odp_* counters.
# ODP as the target of type 1 and type 2 window binds; READ and atomics at
# unmapped ODP memory (remote access error, nothing lands); RDMA Atomic
# Write into ODP memory; SEND and WRITE with immediate into ODP receive
# buffers and memory, on RC and UC. odp_ahead: a stream of WRITEs, and
# one of READs, into an explicit ODP MR gets the next message's pages
# prefetched on another CPU (counted as prefetched, never past the MR);
# through implicit ODP only within private anonymous memory (never past
# its mapping, never shared memory); a WRITE out of the stream gets
# nothing more. odp_mprotect: a read-only page takes READs and refuses
# WRITEs, a PROT_NONE page refuses both (remote access error, no byte of
# either side changed), writable again it takes WRITEs. odp_exit: a process
# exits while WRITEs into its ODP MR keep coming: those before land, then
# the requester's WRITEs fail (never hang), and the process's objects are
# gone.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 odp advise res_mr odp_more odp_atomic_write \
	odp_write_recv odp_ahead odp_mprotect odp_exit
xfer_all sroce0 uc 1024 odp_write_recv
xfer_all sroce0 rc 4096 odp
