# ibv_rereg_mr(3): access, PD and translation changes in place (keys stay,
# traffic proves what they grant), all three at once, every error code
# (INPUT, CMD with EFAULT/EINVAL, the fork codes under ibv_fork_init), the MR
# still valid and deregistrable after failures, and write access added to
# read-only pinned pages re-pins them (or fails for read-only memory);
# a QP moved to RESET leaves no completions behind (applications restate
# QPs after a failed rereg test); on explicit and implicit ODP MRs, access,
# PD and translation changes in place too (rereg_odp).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 reset_cleans_cq rereg_access rereg_pd rereg_trans \
	rereg_errors rereg_readonly rereg_fork rereg_odp
