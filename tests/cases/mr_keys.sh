# Key hardening: keys tell nothing of each other (10^4 MR and 2,000 window
# keys: no repeat, every bit random, no pattern between consecutive keys),
# and those of deregistered MRs write nothing; a stale rkey of a
# deregistered MR does not reach the memory its next owner registered
# (REM_ACCESS_ERR, nothing written); an MR whose iova range ends at
# 2^64 - 1 works to its last byte and nothing wraps; addresses near 2^64
# are refused; a 1 GiB MR carries traffic.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 keys_unpredictable stale_rkey mr_top_iova big_mr
