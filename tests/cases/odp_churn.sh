# On-demand paging MRs while the process changes the memory under them and
# the peer's RDMA WRITEs keep arriving: MADV_DONTNEED; mremap, a fresh
# mapping moved over the MR's pages and the pages moved away
# (MREMAP_DONTUNMAP); munmap, then new pages mapped in the hole; fork, then
# a copy-on-write store in the parent; and DONTNEED and munmap through an
# implicit ODP MR with every WRITE across one of its 16 MiB chunks. Every
# WRITE lands in the page the process sees now (checked right after it
# completed), or is refused with a remote access error, only where memory
# is unmapped; no byte of a WRITE posted after a change returned reaches
# the pages the process gave up (kept reachable through a second mapping,
# where mremap moved them, or in the forked child's copy), and a refused
# WRITE leaves nothing outside its range. Afterwards nothing is left.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
run_each sroce-odpchurn sroce0 churn_dontneed churn_mremap churn_munmap \
	churn_fork_cow churn_implicit
