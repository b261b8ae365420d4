/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: soft RoCEv2 RDMA device.
 *
 * Every header of the driver at once, for the files that still include
 * it: the limits (sroce_param.h), the objects (sroce_verbs.h), the calls
 * between files (sroce_loc.h), memory (sroce_mem_api.h), and the engine's
 * declarations below.
 */
#ifndef SROCE_H
#define SROCE_H

#include "sroce_hdr.h"
#include "sroce_loc.h"
#include "sroce_mem_api.h"
#include "sroce_param.h"
#include "sroce_queue.h"
#include "sroce_verbs.h"

/*
 * The QPs a doorbell runs itself on its way out: those its packets went to
 * on loopback (each entry holds a reference), so that a reply on the same
 * host does not wait for a worker to be scheduled. Lives on the
 * doorbell's stack.
 */
#define SROCE_INLINE_MAX 8
struct sroce_inline {
	struct sroce_qp *qp[SROCE_INLINE_MAX];
	int n;
	int done;	/* entries already run */
};

/*
 * Packets a QP's receive queue holds at most. A sender faster than the
 * engine, or a flood from anyone who knows the QPN, must not grow kernel
 * memory without bound: past this, packets are dropped as a NIC's full
 * receive ring drops them, and RC sends them again (a READ from its
 * first missing response). Far above a peer's send window (256 PSNs).
 */
#define SROCE_RX_QUEUE_MAX	4096

static inline bool sroce_qp_rx_room(struct sroce_qp *qp)
{
	return skb_queue_len_lockless(&qp->rx_queue) < SROCE_RX_QUEUE_MAX;
}

void sroce_qp_doorbell(struct sroce_qp *qp);
bool sroce_inline_add(struct sroce_inline *inl, struct sroce_qp *qp);

#endif /* SROCE_H */
