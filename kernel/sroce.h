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

#endif /* SROCE_H */
