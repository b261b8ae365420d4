// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the requester - takes send WQEs from the SQ ring and sends their
 * packets.
 *
 * A WQE is copied out of the shared ring before it is checked, so the
 * application cannot change it afterwards; the copy is what is sent, and
 * resent.
 */
#include <linux/overflow.h>

#include "sroce_loc.h"
#include "sroce_mem_api.h"
#include "sroce_task.h"
#include "sroce.h"

/* Packets sent per run of the engine before it lets others run. */
#define SROCE_REQ_BUDGET 64

/*
 * A long message asks for an ACK every this many packets as well as at its
 * end, so that the send window moves on while it is sent.
 */
#define SROCE_PKTS_PER_ACK 64

/*
 * PSNs the requester sends beyond the first one the peer has not
 * acknowledged (as rdma_rxe does): a slow receiver is not flooded until
 * its queues drop packets and the NAKs use up the retries.
 */
#define SROCE_MAX_UNACKED_PSNS 256

static bool sroce_wr_allowed(enum ib_qp_type type, u32 opcode)
{
	switch (opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
		return true;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return type == IB_QPT_RC || type == IB_QPT_UC ||
		       type == IB_QPT_XRC_INI;
	case IB_UVERBS_WR_RDMA_READ:
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
	case IB_UVERBS_WR_SEND_WITH_INV:
	case SROCE_WR_ATOMIC_WRITE:
		return type == IB_QPT_RC || type == IB_QPT_XRC_INI;
	default:
		return false;
	}
}

/*
 * Check a WQE copy. Return: 0 with @len set to the message length, or the
 * completion status it fails with.
 */
static enum ib_wc_status sroce_req_check(struct sroce_qp *qp,
					 const struct sroce_send_wqe *wqe,
					 u32 *len)
{
	u32 room = qp->sq.slot_size - sizeof(*wqe);
	const struct sroce_sge *sge = (const void *)(wqe + 1);
	u64 total = 0;
	u32 i;

	/*
	 * A user ring's WQE never names a kernel object (REG_MR carries an
	 * MR's address); binds and invalidations name keys only.
	 */
	if (sroce_wr_is_local(wqe->opcode)) {
		*len = 0;
		return (qp->sq.mmap && wqe->opcode == IB_WR_REG_MR) ||
		       sroce_qp_is_ud(qp) ? IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
	}
	if (!sroce_wr_allowed(qp->ibqp.qp_type, wqe->opcode))
		return IB_WC_LOC_QP_OP_ERR;
	/* An atomic write's 8 bytes are in the WQE itself. */
	if (wqe->opcode == SROCE_WR_ATOMIC_WRITE) {
		*len = sizeof(wqe->wr.atomic.swap);
		return IB_WC_SUCCESS;
	}
	if (wqe->send_flags & IB_SEND_INLINE) {
		if (sroce_needs_response(wqe->opcode) ||
		    wqe->inline_len > qp->cap.max_inline_data ||
		    wqe->inline_len > room)
			return IB_WC_LOC_QP_OP_ERR;
		*len = wqe->inline_len;
		return IB_WC_SUCCESS;
	}
	if (wqe->num_sge > qp->cap.max_send_sge ||
	    wqe->num_sge * sizeof(*sge) > room)
		return IB_WC_LOC_QP_OP_ERR;
	for (i = 0; i < wqe->num_sge; i++)
		total += sge[i].length;
	if (total > SROCE_MAX_MSG_SIZE)
		return IB_WC_LOC_LEN_ERR;
	if ((wqe->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	     wqe->opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD) && total != 8)
		return IB_WC_LOC_LEN_ERR;
	*len = total;
	return IB_WC_SUCCESS;
}

/* The send WQE @idx fails with @status: the QP goes to error. */
static void sroce_req_fail(struct sroce_qp *qp, u32 idx,
			   enum ib_wc_status status)
{
	while (qp->sq_comp != idx)
		sroce_qp_complete_send(qp, IB_WC_WR_FLUSH_ERR);
	qp->req.next = idx + 1;
	qp->req.sent = 0;
	sroce_qp_complete_send(qp, status);
	sroce_qp_error(qp);
}

/*
 * Take the next WQE from the ring into the kernel. Return: true if one was
 * taken; false if the ring is empty or the WQE was bad (the QP is then in
 * error and the WQE completed with its status).
 */
static bool sroce_req_fetch(struct sroce_qp *qp)
{
	u32 prod = sroce_ring_load_prod(&qp->sq);
	u32 idx = qp->req.next;
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw;
	enum ib_wc_status status;

	if (prod == idx)
		return false;
	if (prod - qp->sq_comp > qp->sq.num_slots) {
		/* The application corrupted the producer index. */
		sroce_dbg_qp(qp, "SQ producer index %u corrupt\n", prod);
		sroce_qp_error(qp);
		return false;
	}
	wqe = sroce_swqe_copy(qp, idx);
	memcpy(wqe, sroce_ring_slot(&qp->sq, idx), qp->sq.slot_size);
	sw = &qp->swqe[idx & (qp->sq.num_slots - 1)];
	memset(sw, 0, sizeof(*sw));
	qp->sq_cons = idx + 1;

	status = sroce_req_check(qp, wqe, &sw->len);
	if (status != IB_WC_SUCCESS) {
		sroce_req_fail(qp, idx, status);
		return false;
	}
	return true;
}

/* The RC opcode of a WQE's packet; sroce_req_opcode() adds the transport. */
static u8 sroce_req_rc_opcode(u32 wr_opcode, bool first, bool last)
{
	switch (wr_opcode) {
	case IB_UVERBS_WR_SEND:
		return first ? (last ? SROCE_RC_SEND_ONLY :
				       SROCE_RC_SEND_FIRST) :
			       (last ? SROCE_RC_SEND_LAST :
				       SROCE_RC_SEND_MIDDLE);
	case IB_UVERBS_WR_SEND_WITH_IMM:
		return first ? (last ? SROCE_RC_SEND_ONLY_IMM :
				       SROCE_RC_SEND_FIRST) :
			       (last ? SROCE_RC_SEND_LAST_IMM :
				       SROCE_RC_SEND_MIDDLE);
	case IB_UVERBS_WR_SEND_WITH_INV:
		return first ? (last ? SROCE_RC_SEND_ONLY_INV :
				       SROCE_RC_SEND_FIRST) :
			       (last ? SROCE_RC_SEND_LAST_INV :
				       SROCE_RC_SEND_MIDDLE);
	case IB_UVERBS_WR_RDMA_WRITE:
		return first ? (last ? SROCE_RC_WRITE_ONLY :
				       SROCE_RC_WRITE_FIRST) :
			       (last ? SROCE_RC_WRITE_LAST :
				       SROCE_RC_WRITE_MIDDLE);
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return first ? (last ? SROCE_RC_WRITE_ONLY_IMM :
				       SROCE_RC_WRITE_FIRST) :
			       (last ? SROCE_RC_WRITE_LAST_IMM :
				       SROCE_RC_WRITE_MIDDLE);
	case IB_UVERBS_WR_RDMA_READ:
		return SROCE_RC_READ_REQ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return SROCE_RC_CMP_SWAP;
	case SROCE_WR_ATOMIC_WRITE:
		return SROCE_RC_ATOMIC_WRITE;
	default:
		return SROCE_RC_FETCH_ADD;
	}
}

static u8 sroce_req_opcode(struct sroce_qp *qp, u32 wr_opcode, bool first,
			   bool last)
{
	return sroce_qp_transport(qp) |
	       sroce_req_rc_opcode(wr_opcode, first, last);
}

/*
 * Fill the extended headers of a request packet: @len bytes from @offset
 * into the message (a READ asked again from its middle).
 */
static void sroce_req_headers(struct sk_buff *skb,
			      const struct sroce_send_wqe *wqe, u32 len,
			      u32 offset)
{
	u32 flags = sroce_opinfo[SROCE_PKT(skb)->opcode].flags;

	if (flags & SROCE_OP_XRCETH) {
		struct sroce_xrceth *x = sroce_pkt_hdr(skb, SROCE_OP_XRCETH);

		x->srqn = cpu_to_be32(wqe->xrc_srqn & SROCE_QPN_MASK);
	}
	if (flags & SROCE_OP_ATOMIC_WRITE) {
		struct sroce_reth *reth = sroce_pkt_hdr(skb, SROCE_OP_RETH);

		reth->va = cpu_to_be64(wqe->wr.atomic.remote_addr);
		reth->rkey = cpu_to_be32(wqe->wr.atomic.rkey);
		reth->len = cpu_to_be32(len);
		memcpy(sroce_pkt_payload(skb), &wqe->wr.atomic.swap, len);
	} else if (flags & SROCE_OP_RETH) {
		struct sroce_reth *reth = sroce_pkt_hdr(skb, SROCE_OP_RETH);

		reth->va = cpu_to_be64(wqe->wr.rdma.remote_addr + offset);
		reth->rkey = cpu_to_be32(wqe->wr.rdma.rkey);
		reth->len = cpu_to_be32(len);
	}
	if (flags & SROCE_OP_ATMETH) {
		struct sroce_atmeth *a = sroce_pkt_hdr(skb, SROCE_OP_ATMETH);
		bool cas = wqe->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP;

		a->va = cpu_to_be64(wqe->wr.atomic.remote_addr);
		a->rkey = cpu_to_be32(wqe->wr.atomic.rkey);
		/* FetchAdd carries its addend in the Swap/Add field. */
		a->swap_add = cpu_to_be64(cas ? wqe->wr.atomic.swap :
						wqe->wr.atomic.compare_add);
		a->compare = cpu_to_be64(cas ? wqe->wr.atomic.compare_add : 0);
	}
	if (flags & SROCE_OP_IMM)
		memcpy(sroce_pkt_hdr(skb, SROCE_OP_IMM), &wqe->ex,
		       sizeof(wqe->ex));
	if (flags & SROCE_OP_INV)
		*(__be32 *)sroce_pkt_hdr(skb, SROCE_OP_INV) =
			cpu_to_be32(wqe->ex);
}

/* A UD WQE: one packet to the AH it names. */
static int sroce_req_ud(struct sroce_qp *qp, u32 idx)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_send_wqe *wqe = sroce_swqe_copy(qp, idx);
	struct sroce_swqe *sw = &qp->swqe[idx & (qp->sq.num_slots - 1)];
	struct sroce_deth *deth;
	struct sroce_bth *bth;
	struct sroce_av av;
	struct sk_buff *skb;
	bool loopback;
	int err = 0;
	u32 qkey;
	u32 mtu;
	u8 op;

	if (sroce_ah_lookup(sdev, qp->ibqp.pd, wqe->wr.ud.ah_num, &av,
			    &loopback)) {
		sroce_req_fail(qp, idx, IB_WC_LOC_QP_OP_ERR);
		return -EINVAL;
	}
	/*
	 * From here @av holds a reference to its source GID. A datagram fits
	 * the MTU of the device it leaves through, now.
	 */
	mtu = ib_mtu_enum_to_int(sroce_av_mtu(sdev, &av));
	if (sw->len > mtu) {
		sroce_req_fail(qp, idx, IB_WC_LOC_LEN_ERR);
		err = -EMSGSIZE;
		goto out;
	}
	op = wqe->opcode == IB_UVERBS_WR_SEND_WITH_IMM ?
		     SROCE_UD_SEND_ONLY_IMM : SROCE_UD_SEND_ONLY;
	skb = sroce_pkt_alloc(sdev, &av, op, qp->req.psn, sw->len);
	if (!skb) {
		err = -ENOMEM;
		goto out;
	}
	bth = (struct sroce_bth *)skb->data;
	bth->qpn = cpu_to_be32(wqe->wr.ud.remote_qpn & SROCE_QPN_MASK);
	if (wqe->send_flags & IB_SEND_SOLICITED)
		bth->flags |= SROCE_BTH_SE;
	deth = sroce_pkt_hdr(skb, SROCE_OP_DETH);
	/* A Q_Key with the high bit set means: the QP's own. */
	qkey = wqe->wr.ud.remote_qkey;
	if (qkey & 0x80000000U)
		qkey = qp->attr.qkey;
	deth->qkey = cpu_to_be32(qkey);
	deth->sqp = cpu_to_be32(qp->ibqp.qp_num);
	sroce_req_headers(skb, wqe, sw->len, 0);

	if (sw->len && (wqe->send_flags & IB_SEND_INLINE)) {
		memcpy(sroce_pkt_payload(skb), wqe + 1, sw->len);
	} else if (sw->len &&
		   sroce_qp_copy_sges(qp, (const void *)(wqe + 1),
				      wqe->num_sge, 0, sroce_pkt_payload(skb),
				      sw->len, false)) {
		kfree_skb(skb);
		sroce_req_fail(qp, idx, IB_WC_LOC_PROT_ERR);
		err = -EACCES;
		goto out;
	}

	sw->first_psn = qp->req.psn;
	sw->last_psn = qp->req.psn;
	sw->done = 1;
	qp->req.psn = (qp->req.psn + 1) & SROCE_PSN_MASK;
	qp->req.next = idx + 1;
	sroce_task_tx_mark(qp, skb);
	sroce_pkt_xmit(sdev, &av,
		       rdma_get_udp_sport(av.flow_label, qp->ibqp.qp_num,
					  wqe->wr.ud.remote_qpn),
		       loopback, skb);
out:
	sroce_av_put(&av);
	return err;
}

/* Send the next packet of WQE @idx. Return: 0, or -errno (QP in error). */
static int sroce_req_packet(struct sroce_qp *qp, u32 idx)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_send_wqe *wqe = sroce_swqe_copy(qp, idx);
	struct sroce_swqe *sw = &qp->swqe[idx & (qp->sq.num_slots - 1)];
	bool first = qp->req.sent == 0, last;
	u32 paylen = 0, npsn = 1, remain = sw->len - qp->req.sent;
	struct sroce_bth *bth;
	struct sk_buff *skb;
	u32 psn = qp->req.psn;
	int err;

	/*
	 * A WQE keeps the packet size it was first sent with: sent again
	 * after a go-back (its PSNs before @psn_hi), it must be the same
	 * packets, whatever path MTU an SQD to SQD modify gave since.
	 */
	if (first && !sroce_psn_before(psn, qp->req.psn_hi)) {
		sw->mtu = qp->mtu;
		if (DIV_ROUND_UP(sw->len, sw->mtu) >= SROCE_MAX_MSG_PKTS) {
			sroce_req_fail(qp, idx, IB_WC_LOC_LEN_ERR);
			return -EMSGSIZE;
		}
	}
	if (wqe->opcode == IB_UVERBS_WR_RDMA_READ) {
		/* Asked again from its middle: what it lacks (@remain). */
		last = true;
		npsn = max_t(u32, 1, DIV_ROUND_UP(remain, sw->mtu));
	} else if (sroce_needs_response(wqe->opcode)) {
		last = true;
	} else {
		paylen = min(remain, sw->mtu);
		last = remain <= sw->mtu;
	}

	skb = sroce_pkt_alloc(sdev, &qp->av,
			      sroce_req_opcode(qp, wqe->opcode, first, last),
			      psn, paylen);
	if (!skb)
		return -ENOMEM;
	bth = (struct sroce_bth *)skb->data;
	bth->qpn = cpu_to_be32(qp->attr.dest_qp_num);
	if (sroce_qp_is_reliable(qp) &&
	    (last || ++qp->req.noack_pkts >= SROCE_PKTS_PER_ACK)) {
		bth->apsn |= cpu_to_be32(SROCE_BTH_ACKREQ);
		qp->req.noack_pkts = 0;
	}
	if (last && (wqe->send_flags & IB_SEND_SOLICITED))
		bth->flags |= SROCE_BTH_SE;
	sroce_req_headers(skb, wqe, remain, qp->req.sent);

	if (wqe->opcode == SROCE_WR_ATOMIC_WRITE) {
		/* sroce_req_headers() copied the data */
	} else if (paylen && (wqe->send_flags & IB_SEND_INLINE)) {
		memcpy(sroce_pkt_payload(skb),
		       (u8 *)(wqe + 1) + qp->req.sent, paylen);
	} else if (paylen) {
		err = sroce_qp_copy_sges(qp, (const void *)(wqe + 1),
					 wqe->num_sge, qp->req.sent,
					 sroce_pkt_payload(skb), paylen, false);
		if (err) {
			kfree_skb(skb);
			sroce_req_fail(qp, idx, IB_WC_LOC_PROT_ERR);
			return err;
		}
	}

	if (first)
		sw->first_psn = psn;
	qp->req.psn = (psn + npsn) & SROCE_PSN_MASK;
	if (sroce_psn_before(qp->req.psn_hi, qp->req.psn))
		qp->req.psn_hi = qp->req.psn;
	qp->req.sent += paylen;
	if (last) {
		sw->last_psn = (psn + npsn - 1) & SROCE_PSN_MASK;
		sw->done = 1;
		qp->req.next = idx + 1;
		qp->req.sent = 0;
		if (sroce_needs_response(wqe->opcode))
			qp->req.rd_atomic++;
	}
	/* A packet the network drops is the retry timer's to recover. */
	sroce_task_tx_mark(qp, skb);
	sroce_pkt_xmit(sdev, &qp->av, qp->sport, qp->loopback, skb);
	/*
	 * The peer has the timeout from the last packet sent on to answer
	 * (as rdma_rxe times it): a sender slower than the timeout is not a
	 * lost packet.
	 */
	if (sroce_qp_is_reliable(qp))
		sroce_comp_arm_retry(qp);
	return 0;
}

/*
 * Execute local WQE @idx (REG_MR, LOCAL_INV, BIND_MW) in order with the
 * sends. It takes no PSN: its last_psn is the previous packet's, so the
 * ACK that completes the WQEs before it completes it too.
 */
static int sroce_req_local(struct sroce_qp *qp, u32 idx)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_send_wqe *wqe = sroce_swqe_copy(qp, idx);
	struct sroce_swqe *sw = &qp->swqe[idx & (qp->sq.num_slots - 1)];
	int err;

	if (wqe->opcode == IB_WR_REG_MR) {
		err = sroce_mr_fast_reg(sdev, qp->ibqp.pd,
					(struct ib_mr *)(uintptr_t)
						wqe->wr.rdma.remote_addr,
					wqe->wr.rdma.rkey, wqe->ex);
	} else if (wqe->opcode == IB_UVERBS_WR_BIND_MW) {
		struct sroce_bind b = {
			.mw_key = wqe->wr.bind.mw_key,
			.new_key = wqe->ex,
			.mr_lkey = wqe->wr.bind.mr_lkey,
			.access = wqe->wr.bind.access,
			.addr = wqe->wr.bind.addr,
			.length = wqe->wr.bind.length,
		};

		err = sroce_mw_bind(sdev, qp->ibqp.pd, qp->ibqp.qp_num, &b);
		if (err) {
			sroce_req_fail(qp, idx, IB_WC_MW_BIND_ERR);
			return err;
		}
	} else {
		err = sroce_mr_invalidate(sdev, qp->ibqp.pd, qp->ibqp.qp_num,
					  wqe->ex);
	}
	if (err) {
		sroce_req_fail(qp, idx, IB_WC_LOC_QP_OP_ERR);
		return err;
	}
	sw->first_psn = (qp->req.psn - 1) & SROCE_PSN_MASK;
	sw->last_psn = sw->first_psn;
	sw->done = 1;
	qp->req.next = idx + 1;
	sroce_comp_local_done(qp);
	return 0;
}

/*
 * RC: the send window is full; the next ACK moves it on (and the transport
 * timer recovers if none comes). Packets sent again after a go-back, behind
 * the window's start, are always let through.
 */
static bool sroce_req_window_full(struct sroce_qp *qp)
{
	u32 ahead = (qp->req.psn - qp->req.acked_psn) & SROCE_PSN_MASK;

	return sroce_qp_is_reliable(qp) &&
	       !sroce_psn_before(qp->req.psn, qp->req.acked_psn) &&
	       ahead >= SROCE_MAX_UNACKED_PSNS;
}

/*
 * In RTS everything; in SQD (IBTA 10.3.1: the send queue drains) only what
 * finishes what was started: packets sent before and now sent again after
 * a go-back, and the rest of a message under way. No new WQE starts.
 */
static bool sroce_req_may_send(struct sroce_qp *qp)
{
	if (qp->attr.qp_state == IB_QPS_RTS)
		return true;
	return qp->attr.qp_state == IB_QPS_SQD &&
	       (qp->req.sent || sroce_psn_before(qp->req.psn, qp->req.psn_hi));
}

/**
 * sroce_req_run - send what the SQ holds, as far as the QP may
 * @qp: the QP, in RTS or SQD, with its lock held
 *
 * Return: nothing; requeues the QP's work if it stopped for its budget.
 */
void sroce_req_run(struct sroce_qp *qp)
{
	int budget = SROCE_REQ_BUDGET;
	u32 max_rd = max_t(u32, 1, qp->attr.max_rd_atomic);

	lockdep_assert_held(&qp->lock);
	while (sroce_req_may_send(qp) && !qp->req.rnr_wait) {
		struct sroce_send_wqe *wqe;
		u32 idx = qp->req.next;

		if (idx == qp->sq_cons && !sroce_req_fetch(qp))
			break;
		if (!sroce_req_may_send(qp))
			break;
		wqe = sroce_swqe_copy(qp, idx);
		if (sroce_req_window_full(qp) && !sroce_wr_is_local(wqe->opcode))
			break;
		if (qp->req.sent == 0) {
			if (sroce_needs_response(wqe->opcode) &&
			    qp->req.rd_atomic >= max_rd)
				break;
			if ((wqe->send_flags & IB_SEND_FENCE) &&
			    qp->req.rd_atomic)
				break;
		}
		if (!budget--) {
			sroce_task_sched(qp);
			break;
		}
		if (sroce_wr_is_local(wqe->opcode)) {
			/* Sending again after a loss: it was executed. */
			if (qp->swqe[idx & (qp->sq.num_slots - 1)].done)
				qp->req.next = idx + 1;
			else if (sroce_req_local(qp, idx))
				break;
		} else if (sroce_qp_is_ud(qp) ? sroce_req_ud(qp, idx) :
						       sroce_req_packet(qp, idx)) {
			break;
		}
		if (!sroce_qp_is_reliable(qp))
			sroce_comp_send_done(qp);
	}
}
