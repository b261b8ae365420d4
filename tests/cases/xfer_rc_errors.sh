# RC error completions: a bad rkey (REM_ACCESS_ERR, nothing written, QP in
# error), a read past the MR and a write whose second packet is past it
# (REM_ACCESS_ERR; not a byte of either side changes), a QP without remote write
# access (REM_ACCESS_ERR), a local SGE of another PD (LOC_PROT_ERR), a short
# receive buffer (LOC_LEN_ERR / REM_INV_REQ_ERR), no receive with rnr_retry
# 0 (RNR_RETRY_EXC_ERR), a late receive found by the RNR retry, and a peer
# that never answers (RETRY_EXC_ERR once retry_cnt resends are spent).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 err_rkey err_bounds err_bounds_write err_qp_access \
	err_lkey_pd err_recv_len err_rnr rnr_retry err_retry
