/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the QP engine (sroce_task.c) - when and where a QP's work runs.
 * The rest of the driver reaches it only through these calls.
 */
#ifndef SROCE_TASK_H
#define SROCE_TASK_H

#include <linux/skbuff.h>

#include "sroce.h"

/*
 * Packets a QP's receive queue holds at most. A sender faster than the
 * engine, or a flood from anyone who knows the QPN, must not grow kernel
 * memory without bound: past this, packets are dropped as a NIC's full
 * receive ring drops them, and RC sends them again (a READ from its
 * first missing response). Far above a peer's send window (256 PSNs).
 */
#define SROCE_RX_QUEUE_MAX	4096

/* Has @qp's receive queue room for a packet? Any context, no lock. */
static inline bool sroce_task_rx_room(struct sroce_qp *qp)
{
	return skb_queue_len_lockless(&qp->rx_queue) < SROCE_RX_QUEUE_MAX;
}

/* Are packets queued to @qp? Any context, no lock. */
static inline bool sroce_task_rx_pending(struct sroce_qp *qp)
{
	return !skb_queue_empty_lockless(&qp->rx_queue);
}

/*
 * A packet @qp is about to send: while a doorbell runs @qp, it carries the
 * doorbell's list, so that on loopback the doorbell also runs the QP it
 * reaches (sroce_task_rx()). From the engine, @qp's lock held.
 */
static inline void sroce_task_tx_mark(struct sroce_qp *qp, struct sk_buff *skb)
{
	lockdep_assert_held(&qp->lock);
	SROCE_PKT(skb)->inl = qp->inl;
}

/* Module load and unload: the kernel QPs' workqueue. */
int sroce_task_init(void);
void sroce_task_exit(void);

/* A QP's life: created, scheduled, fed packets, rung, destroyed. */
int sroce_task_qp_init(struct sroce_qp *qp);
void sroce_task_qp_fini(struct sroce_qp *qp);
void sroce_task_sched(struct sroce_qp *qp);
bool sroce_task_rx(struct sroce_qp *qp, struct sk_buff *skb,
		   struct sroce_inline *inl);
void sroce_task_doorbell(struct sroce_qp *qp);
void sroce_task_drain(struct sroce_qp *qp);

#endif /* SROCE_TASK_H */
