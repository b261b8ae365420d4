# What a code review of the kernel found, each checked as a user would see
# it: an RDMA WRITE with immediate that meets RNR NAKs leaks no pinned
# memory; ibv_dereg_mr in the middle of a multi-packet WRITE lets no byte
# land after it returns; ibv_rereg_mr(CHANGE_TRANSLATION) mid-message does
# not split the message between the buffers; an SRQ receive WQE taken for a
# half-received message is flushed when the QP errors, not lost (and one of
# the QP's own receive queue, first, then the rest in order); one bad
# rkey does not break a UC connection; QP numbers are not sequential;
# implicit ODP and ODP MRs of up to 1 TiB cost the kernel page lists only
# for chunks in use; another PD's refused binds never make the owner's
# rereg fail with EBUSY; QPs destroyed while packets arrive; a window key
# never reaches the map of a later bind (UC WRITEs, RC atomics).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 rnr_imm_pin dereg_mid_write rereg_mid_write \
	srq_flush_taken rq_flush_taken uc_bad_rkey qpn_random bind_other_pd destroy_under_rx \
	stale_window_atomic \
	implicit_bound explicit_bound
xfer_all sroce0 uc 1024 uc_bad_rkey stale_window_key
