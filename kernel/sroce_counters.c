// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the names "rdma statistic" shows for the port counters, which
 * ops.alloc_hw_port_stats hands to ib_core and a drop's debug line begins
 * with (sroce_drop()). A leaf: it includes no sroce header but its own and
 * calls no other sroce file.
 */
#include <linux/build_bug.h>

#include "sroce_counters.h"

const struct rdma_stat_desc sroce_counter_descs[] = {
	[SROCE_CNT_SENT_PKTS].name = "sent_pkts",
	[SROCE_CNT_SENT_BYTES].name = "sent_bytes",
	[SROCE_CNT_SEND_NO_ROUTE].name = "send_no_route",
	[SROCE_CNT_SEND_PORT_DOWN].name = "send_port_down",
	[SROCE_CNT_RCVD_PKTS].name = "rcvd_pkts",
	[SROCE_CNT_RCVD_BYTES].name = "rcvd_bytes",
	[SROCE_CNT_RETRANSMITS].name = "retransmits",
	[SROCE_CNT_TIMEOUTS].name = "local_ack_timeout",
	[SROCE_CNT_RETRY_EXCEEDED].name = "retry_exceeded_err",
	[SROCE_CNT_RNR_RETRY_EXCEEDED].name = "retry_rnr_exceeded_err",
	[SROCE_CNT_DUP_REQ].name = "duplicate_request",
	[SROCE_CNT_OUT_OF_SEQ_REQ].name = "out_of_sequence",
	[SROCE_CNT_NAK_SEQ_SENT].name = "nak_seq_sent",
	[SROCE_CNT_NAK_INV_SENT].name = "nak_inv_req_sent",
	[SROCE_CNT_NAK_ACCESS_SENT].name = "nak_rem_access_sent",
	[SROCE_CNT_NAK_OP_SENT].name = "nak_rem_op_sent",
	[SROCE_CNT_RNR_NAK_SENT].name = "rnr_nak_sent",
	[SROCE_CNT_NAK_SEQ_RCVD].name = "nak_seq_rcvd",
	[SROCE_CNT_NAK_INV_RCVD].name = "nak_inv_req_rcvd",
	[SROCE_CNT_NAK_ACCESS_RCVD].name = "nak_rem_access_rcvd",
	[SROCE_CNT_NAK_OP_RCVD].name = "nak_rem_op_rcvd",
	[SROCE_CNT_RNR_NAK_RCVD].name = "rnr_nak_rcvd",
	[SROCE_CNT_ICRC_ERR].name = "drop_icrc_err",
	[SROCE_CNT_DROP_MALFORMED].name = "drop_malformed",
	[SROCE_CNT_DROP_NO_QP].name = "drop_no_qp",
	[SROCE_CNT_DROP_QP_STATE].name = "drop_qp_state",
	[SROCE_CNT_DROP_BAD_SOURCE].name = "drop_bad_source",
	[SROCE_CNT_DROP_BAD_DEST].name = "drop_bad_dest",
	[SROCE_CNT_DROP_GHOST_RESP].name = "drop_ghost_response",
	[SROCE_CNT_DROP_UC_MSG].name = "drop_uc_message",
	[SROCE_CNT_DROP_RX_FULL].name = "drop_rx_queue_full",
	[SROCE_CNT_DROP_BAD_QKEY].name = "drop_bad_qkey",
	[SROCE_CNT_DROP_NO_RWQE].name = "drop_no_recv_wqe",
	[SROCE_CNT_DROP_NO_MEM].name = "drop_no_memory",
	[SROCE_CNT_RKEY_INVALID].name = "rkey_invalid",
	[SROCE_CNT_RKEY_STALE_TAG].name = "rkey_stale_tag",
	[SROCE_CNT_RKEY_ACCESS].name = "rkey_access_refused",
	[SROCE_CNT_RKEY_RANGE].name = "rkey_out_of_range",
	[SROCE_CNT_ODP_FAULTS].name = "odp_page_faults",
	[SROCE_CNT_ODP_INVALIDATED].name = "odp_pages_invalidated",
	[SROCE_CNT_ODP_PREFETCHED].name = "odp_pages_prefetched",
	[SROCE_CNT_ODP_AHEAD_BUSY].name = "odp_ahead_busy",
	[SROCE_CNT_ODP_AHEAD_REFUSED].name = "odp_ahead_refused",
	[SROCE_CNT_ODP_AHEAD_HELD].name = "odp_ahead_held",
	[SROCE_CNT_ODP_RNR_NAK_SENT].name = "odp_rnr_nak_sent",
	[SROCE_CNT_ODP_LATER_JOBS].name = "odp_later_jobs",
	[SROCE_CNT_ODP_LATER_REFUSED].name = "odp_later_refused",
	[SROCE_CNT_ODP_JOBS_RETIRED].name = "odp_jobs_retired",
	[SROCE_CNT_KMEM_BYTES].name = "kmem_bytes",
	[SROCE_CNT_KMEM_REFUSED].name = "kmem_refused",
	[SROCE_CNT_RELEASE_QUEUED].name = "release_queued",
	[SROCE_CNT_RELEASE_BACKLOG_PAGES].name = "release_backlog_pages",
	[SROCE_CNT_RELEASE_BACKLOG_REFUSED].name = "release_backlog_refused",
};

static_assert(ARRAY_SIZE(sroce_counter_descs) == SROCE_NUM_COUNTERS);

/* The name "rdma statistic" shows for counter @c, for debug lines. */
const char *sroce_counter_name(enum sroce_counter c)
{
	return sroce_counter_descs[c].name;
}
