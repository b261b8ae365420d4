/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the port counters and their names (sroce_counters.c), as rdma_rxe's
 * rxe_hw_counters.h. A leaf that every layer may use to name what it counts;
 * the values are the device's (struct sroce_dev, sroce_count() in sroce.h).
 */
#ifndef SROCE_COUNTERS_H
#define SROCE_COUNTERS_H

#include <rdma/ib_verbs.h>

/*
 * Port counters ("rdma statistic show link DEV/1"); names in sroce_counters.c.
 * Packets and bytes count the RoCEv2 payload, headers excluded.
 */
enum sroce_counter {
	SROCE_CNT_SENT_PKTS,
	SROCE_CNT_SENT_BYTES,
	SROCE_CNT_SEND_NO_ROUTE,	/* not sent: no route out of its GID's device */
	SROCE_CNT_SEND_PORT_DOWN,	/* not sent: the port not ACTIVE */
	SROCE_CNT_RCVD_PKTS,
	SROCE_CNT_RCVD_BYTES,
	SROCE_CNT_RETRANSMITS,		/* go-back resends (NAK, timeout, RNR) */
	SROCE_CNT_TIMEOUTS,		/* transport timer expiries */
	SROCE_CNT_RETRY_EXCEEDED,
	SROCE_CNT_RNR_RETRY_EXCEEDED,
	SROCE_CNT_DUP_REQ,		/* duplicate requests answered */
	SROCE_CNT_OUT_OF_SEQ_REQ,	/* requests ahead of the expected PSN */
	SROCE_CNT_NAK_SEQ_SENT,
	SROCE_CNT_NAK_INV_SENT,
	SROCE_CNT_NAK_ACCESS_SENT,
	SROCE_CNT_NAK_OP_SENT,
	SROCE_CNT_RNR_NAK_SENT,
	SROCE_CNT_NAK_SEQ_RCVD,
	SROCE_CNT_NAK_INV_RCVD,
	SROCE_CNT_NAK_ACCESS_RCVD,
	SROCE_CNT_NAK_OP_RCVD,
	SROCE_CNT_RNR_NAK_RCVD,
	SROCE_CNT_ICRC_ERR,		/* dropped: bad ICRC */
	SROCE_CNT_DROP_MALFORMED,	/* dropped: opcode, header or length */
	SROCE_CNT_DROP_NO_QP,		/* dropped: no such QP */
	SROCE_CNT_DROP_QP_STATE,	/* dropped: QP state or transport */
	SROCE_CNT_DROP_BAD_SOURCE,	/* dropped: not from a connected QP's peer */
	SROCE_CNT_DROP_BAD_DEST,	/* dropped: not to a GID of its arrival device */
	SROCE_CNT_DROP_GHOST_RESP,	/* dropped: response to nothing sent */
	SROCE_CNT_DROP_UC_MSG,		/* UC packets dropped: bad, or no message */
	SROCE_CNT_DROP_RX_FULL,		/* dropped: the QP's receive queue full */
	SROCE_CNT_DROP_BAD_QKEY,	/* dropped: a UD Q_Key not the QP's */
	SROCE_CNT_DROP_NO_RWQE,		/* dropped: UD/UC, no receive WQE */
	SROCE_CNT_DROP_NO_MEM,		/* dropped: no memory for a copy */
	/* Remote accesses refused, by why (RC: NAKed; UC: dropped) */
	SROCE_CNT_RKEY_INVALID,		/* no MR or window has the key */
	SROCE_CNT_RKEY_STALE_TAG,	/* the index of one, another tag */
	SROCE_CNT_RKEY_ACCESS,		/* another PD's, or access not granted */
	SROCE_CNT_RKEY_RANGE,		/* bytes outside the key's range */
	/* ODP pages: faulted in by accesses, taken by the MMU, prefetched */
	SROCE_CNT_ODP_FAULTS,
	SROCE_CNT_ODP_INVALIDATED,
	SROCE_CNT_ODP_PREFETCHED,
	/*
	 * Fault-ahead: a stream's messages that queued no job for the next,
	 * both of their direction's jobs still running (sroce_odp.c)
	 */
	SROCE_CNT_ODP_AHEAD_BUSY,
	/*
	 * ... and those that queued none as their QP's user had its bound of
	 * fault-ahead jobs queued or running, or all users theirs
	 */
	SROCE_CNT_ODP_AHEAD_REFUSED,
	/*
	 * ... and the device's fault-ahead jobs queued or running now, each
	 * holding its count of its user's bound and all users' (a level,
	 * not an event count, as kmem_bytes)
	 */
	SROCE_CNT_ODP_AHEAD_HELD,
	/*
	 * ODP memory an access could not wait for (an XRC receive QP's):
	 * RNR NAKs sent for it (also in rnr_nak_sent), jobs queued to fault
	 * it in beside, accesses that queued none as the memory's user had
	 * its bound of jobs, or all users theirs (sroce_odp.c)
	 */
	SROCE_CNT_ODP_RNR_NAK_SENT,
	SROCE_CNT_ODP_LATER_JOBS,
	SROCE_CNT_ODP_LATER_REFUSED,
	/*
	 * ODP jobs (a fault-ahead job, a later-job's range) that, when their
	 * turn came, found their map retired while they were queued (its MR
	 * deregistered or re-registered, its window unbound: bound again,
	 * invalidated or deallocated): nothing faulted (sroce_odp.c)
	 */
	SROCE_CNT_ODP_JOBS_RETIRED,
	SROCE_CNT_KMEM_BYTES,		/* users' objects' memory now (sroce_kmem.c) */
	SROCE_CNT_KMEM_REFUSED,		/* memory refused past a bound */
	/*
	 * Releases of objects (orphaned pins) queued on their users' work
	 * items; the pages those still waiting there or running hold (a
	 * level); new MRs refused as their user's releases held its bound
	 * (max_user_release_mb, sroce_kmem.c)
	 */
	SROCE_CNT_RELEASE_QUEUED,
	SROCE_CNT_RELEASE_BACKLOG_PAGES,
	SROCE_CNT_RELEASE_BACKLOG_REFUSED,
	SROCE_NUM_COUNTERS,
};

/* The counters' descriptors, indexed by enum sroce_counter. */
extern const struct rdma_stat_desc sroce_counter_descs[];

const char *sroce_counter_name(enum sroce_counter c);

#endif /* SROCE_COUNTERS_H */
