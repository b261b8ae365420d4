// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the completer - acknowledgements, read responses and atomic
 * acknowledgements complete send WQEs, strictly in SQ order; a QP in
 * error completes everything posted with IB_WC_WR_FLUSH_ERR
 * (sroce_qp_flush()).
 */
#include "sroce_loc.h"
#include "sroce_task.h"
#include "sroce.h"

/*
 * The widest span of PSNs one loss episode's go-backs may have sent again
 * (a READ's responses at most) and the most answers to them that restart
 * the transport timer (sroce_comp_ghost_add()).
 */
#define SROCE_GHOST_MAX_PSNS SROCE_MAX_MSG_PKTS

/* RNR NAK timer field (IB spec) in microseconds. */
static const u32 sroce_rnr_usecs[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
	61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static u32 sroce_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return IB_UVERBS_WC_RDMA_WRITE;
	case IB_UVERBS_WR_RDMA_READ:
		return IB_UVERBS_WC_RDMA_READ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return IB_UVERBS_WC_COMP_SWAP;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		return IB_UVERBS_WC_FETCH_ADD;
	case SROCE_WR_ATOMIC_WRITE:
		return SROCE_WC_ATOMIC_WRITE;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_UVERBS_WR_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_UVERBS_WC_SEND;
	}
}

/* Publish the SQ's consumer index: the slots of completed WQEs are free. */
static void sroce_sq_publish(struct sroce_qp *qp)
{
	sroce_ring_store_cons(&qp->sq, qp->sq_comp);
}

/*
 * Complete the oldest send WQE (sq_comp) with @status. Its ring slot is
 * released before the completion is visible, so that an application that
 * polls the completion can post into the slot at once.
 */
void sroce_qp_complete_send(struct sroce_qp *qp, enum ib_wc_status status)
{
	u32 idx = qp->sq_comp;
	struct sroce_send_wqe *wqe = sroce_swqe_copy(qp, idx);
	struct sroce_swqe *sw = &qp->swqe[idx & (qp->sq.num_slots - 1)];

	/* Only WQEs the engine took complete; never a phantom past them. */
	if (WARN_ON_ONCE(idx == qp->sq_cons))
		return;
	if (sw->done && sroce_needs_response(wqe->opcode))
		qp->req.rd_atomic--;
	/* Flushed WQEs follow an error already traced (or a modify). */
	if (status != IB_WC_SUCCESS && status != IB_WC_WR_FLUSH_ERR)
		sroce_dbg_qp(qp, "send WQE %u (wr_id %#llx) completes with %s\n",
			     idx, wqe->wr_id, ib_wc_status_msg(status));
	qp->sq_comp = idx + 1;
	sroce_sq_publish(qp);
	if (status != IB_WC_SUCCESS || qp->sq_sig_all ||
	    (wqe->send_flags & IB_SEND_SIGNALED)) {
		struct sroce_cqe cqe = {
			.wr_id = wqe->wr_id,
			.status = status,
			.opcode = sroce_wc_opcode(wqe->opcode),
			.byte_len = sw->len,
			.qp_num = qp->ibqp.qp_num,
		};

		sroce_cq_post(to_scq(qp->ibqp.send_cq), qp, &cqe, false);
	}
	qp->req.retries = qp->attr.retry_cnt;
	qp->req.rnr_retries = qp->attr.rnr_retry;
	/* Progress: the transport timer starts over. */
	if (sroce_qp_is_reliable(qp))
		sroce_comp_arm_retry(qp);
}

/* Sent requests still owed an answer (RC). */
static bool sroce_outstanding(struct sroce_qp *qp)
{
	return qp->sq_comp != qp->req.next || qp->req.sent;
}

/**
 * sroce_comp_arm_retry - (re)start the transport timer
 * @qp: a reliable QP (RC, XRC), its lock held
 *
 * The timer runs while requests are outstanding: 4.096 us * 2^timeout (the
 * QP attribute; 0 means never), at least one jiffy, from the last packet
 * sent or the last answer that was progress. Those only move the
 * deadline; a timer that fires early sets itself again for it, and one
 * that finds nothing outstanding does nothing. That keeps timer updates
 * out of every packet's path.
 */
void sroce_comp_arm_retry(struct sroce_qp *qp)
{
	unsigned long usecs, deadline;

	lockdep_assert_held(&qp->lock);
	if (!qp->attr.timeout || !sroce_outstanding(qp) ||
	    !sroce_qp_sends(qp)) {
		WRITE_ONCE(qp->req.retry_on, false);
		return;
	}
	usecs = (4096UL << qp->attr.timeout) / 1000;
	deadline = jiffies + max(1UL, usecs_to_jiffies(usecs));
	WRITE_ONCE(qp->req.deadline, deadline);
	WRITE_ONCE(qp->req.retry_on, true);
	/* Not set, or set for later than now asked (a shorter timeout). */
	if (!timer_pending(&qp->retry_timer) ||
	    time_after(READ_ONCE(qp->retry_timer.expires), deadline))
		mod_timer(&qp->retry_timer, deadline);
}

/* UC and UD: a WQE is complete once sent. */
void sroce_comp_send_done(struct sroce_qp *qp)
{
	while (qp->sq_comp != qp->req.next)
		sroce_qp_complete_send(qp, IB_WC_SUCCESS);
}

static struct sroce_swqe *sroce_oldest(struct sroce_qp *qp,
				       struct sroce_send_wqe **wqe)
{
	if (qp->sq_comp == qp->req.next && !qp->req.sent)
		return NULL;
	if (qp->sq_comp == qp->sq_cons)
		return NULL;
	*wqe = sroce_swqe_copy(qp, qp->sq_comp);
	return &qp->swqe[qp->sq_comp & (qp->sq.num_slots - 1)];
}

/* An ACK of every PSN up to @psn completes the WQEs it covers. */
static void sroce_ack_upto(struct sroce_qp *qp, u32 psn)
{
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw;

	while ((sw = sroce_oldest(qp, &wqe)) && sw->done &&
	       !sroce_needs_response(wqe->opcode) &&
	       !sroce_psn_before(psn, sw->last_psn))
		sroce_qp_complete_send(qp, IB_WC_SUCCESS);
	sroce_comp_local_done(qp);
}

/**
 * sroce_comp_local_done - complete executed local WQEs at the head
 * @qp: the QP, its lock held
 *
 * A REG_MR, LOCAL_INV or BIND_MW completes once every WQE before it has.
 */
void sroce_comp_local_done(struct sroce_qp *qp)
{
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw;

	lockdep_assert_held(&qp->lock);
	while ((sw = sroce_oldest(qp, &wqe)) && sw->done &&
	       (wqe->opcode == IB_WR_REG_MR || wqe->opcode == IB_WR_LOCAL_INV ||
		wqe->opcode == IB_UVERBS_WR_BIND_MW))
		sroce_qp_complete_send(qp, IB_WC_SUCCESS);
}

/*
 * The peer answered something new (an ACK, a READ response in order):
 * the transport timer and the retries, RNR retries too, start over, so a
 * message that takes longer than the timeout to send or to answer still
 * completes (rdma_rxe resets both counts on every ACK as well).
 */
static void sroce_comp_progress(struct sroce_qp *qp)
{
	qp->req.retries = qp->attr.retry_cnt;
	qp->req.rnr_retries = qp->attr.rnr_retry;
	qp->req.rnr_psn = SROCE_PSN_NONE;
	sroce_comp_arm_retry(qp);
}

/*
 * A go-back sends again from req.psn to psn_hi, and the responder may
 * answer each of those PSNs again after its WQE has completed
 * (sroce_comp_ghost_alive()). They join the loss episode: its span keeps
 * the lowest start of its go-backs and ends at psn_hi, and each PSN sent
 * again allows one such answer. An episode that would span more than
 * SROCE_GHOST_MAX_PSNS starts over from this go-back, or ends if this one
 * alone is wider.
 */
static void sroce_comp_ghost_add(struct sroce_qp *qp)
{
	u32 hi = qp->req.psn_hi;
	u32 span = (hi - qp->req.psn) & SROCE_PSN_MASK;
	u32 kept = (hi - qp->req.ghost_lo) & SROCE_PSN_MASK;

	if (!qp->req.ghost_left || kept > SROCE_GHOST_MAX_PSNS) {
		qp->req.ghost_left = 0;
		kept = 0;
	}
	if (span > SROCE_GHOST_MAX_PSNS) {
		qp->req.ghost_left = 0;
		return;
	}
	if (span > kept)
		qp->req.ghost_lo = qp->req.psn;
	qp->req.ghost_hi = hi;
	qp->req.ghost_left = min_t(u32, qp->req.ghost_left + span,
				   SROCE_GHOST_MAX_PSNS);
}

/*
 * Send again from the first packet of the WQE holding @psn. WQEs in
 * [sq_comp, req.next) are fully sent; req.next may be partly sent.
 */
static void sroce_go_back(struct sroce_qp *qp, u32 psn)
{
	u32 mask = qp->sq.num_slots - 1;
	u32 idx, j;

	for (idx = qp->sq_comp; idx != qp->req.next; idx++)
		if (!sroce_psn_before(qp->swqe[idx & mask].last_psn, psn))
			break;
	for (j = idx; j != qp->req.next; j++) {
		u32 op = sroce_swqe_copy(qp, j)->opcode;

		/* Local WQEs were executed once and are not again. */
		if (sroce_wr_is_local(op))
			continue;
		if (sroce_needs_response(op))
			qp->req.rd_atomic--;
		qp->swqe[j & mask].done = 0;
		qp->swqe[j & mask].gap = 0;
	}
	if (idx != qp->req.next || qp->req.sent) {
		struct sroce_swqe *sw = &qp->swqe[idx & mask];
		u32 op = sroce_swqe_copy(qp, idx)->opcode;
		/* the WQE's last PSN sent so far (it may be partly sent) */
		u32 end = idx == qp->req.next ?
				  (qp->req.psn - 1) & SROCE_PSN_MASK :
				  sw->last_psn;

		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RETRANSMITS);
		qp->req.next = idx;
		qp->req.psn = sw->first_psn;
		qp->req.sent = 0;
		/*
		 * A SEND or WRITE resumes at @psn: the responder has every
		 * packet before it. A READ that has some of its responses
		 * is asked again for the rest, from the PSN and address of
		 * the first response it lacks (a responder answers a
		 * duplicate READ from any PSN within it): asked again whole,
		 * a READ whose answer takes longer than the timeout, or one
		 * that keeps losing a late response, would never complete.
		 */
		if (op == IB_UVERBS_WR_RDMA_READ && idx == qp->sq_comp &&
		    sw->resp_pkts) {
			qp->req.psn = (sw->first_psn + sw->resp_pkts) &
				      SROCE_PSN_MASK;
			qp->req.sent = sw->resp_pkts * sw->mtu;
		} else if (!sroce_needs_response(op) &&
		    sroce_psn_before(sw->first_psn, psn) &&
		    !sroce_psn_before(end, psn)) {
			u64 sent = (u64)((psn - sw->first_psn) &
					 SROCE_PSN_MASK) * sw->mtu;

			/* Within what the WQE's packets carried: always. */
			if (!WARN_ON_ONCE(sent >= sw->len)) {
				qp->req.psn = psn;
				qp->req.sent = sent;
			}
		}
		sroce_comp_ghost_add(qp);
	}
}

/* The oldest WQE fails with @status; the QP goes to error. */
static void sroce_comp_fail(struct sroce_qp *qp, enum ib_wc_status status)
{
	sroce_qp_complete_send(qp, status);
	sroce_qp_error(qp);
}

/*
 * The transport timer fired with requests outstanding and nothing
 * answered: send again from the oldest, or give up when the retries are
 * spent (IB_WC_RETRY_EXC_ERR).
 */
void sroce_comp_timeout(struct sroce_qp *qp)
{
	struct sroce_swqe *sw;

	if (!sroce_qp_sends(qp) || !sroce_outstanding(qp))
		return;
	/*
	 * Progress since the timer was set: wait for the new deadline. An
	 * RNR wait is the responder's answer, not silence: its own timer
	 * sends again, and the retries are not spent on it.
	 */
	if (qp->req.rnr_wait) {
		sroce_comp_arm_retry(qp);
		return;
	}
	/*
	 * Nor is it silence while packets wait in the receive queue: a
	 * requester slower than its responder (a debug kernel copying READ
	 * responses) takes them first, and each answer in the window among
	 * them moves the deadline.
	 */
	if (sroce_task_rx_pending(qp)) {
		sroce_comp_arm_retry(qp);
		return;
	}
	if (time_before(jiffies, qp->req.deadline)) {
		mod_timer(&qp->retry_timer, qp->req.deadline);
		return;
	}
	sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_TIMEOUTS);
	sroce_dbg_qp(qp, "transport timeout, %u retries left\n",
		     qp->req.retries);
	if (!qp->req.retries) {
		sroce_count(to_sdev(qp->ibqp.device),
			    SROCE_CNT_RETRY_EXCEEDED);
		sroce_comp_fail(qp, IB_WC_RETRY_EXC_ERR);
		return;
	}
	qp->req.retries--;
	sw = &qp->swqe[qp->sq_comp & (qp->sq.num_slots - 1)];
	sroce_go_back(qp, sw->first_psn);
	sroce_comp_arm_retry(qp);
}

static void sroce_comp_rnr(struct sroce_qp *qp, u32 psn, u8 timer)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);

	sroce_count(sdev, SROCE_CNT_RNR_NAK_RCVD);
	sroce_ack_upto(qp, (psn - 1) & SROCE_PSN_MASK);
	/*
	 * An RNR NAK past the last one: the responder took the packets
	 * before it since, progress as an ACK is, and the RNR retries start
	 * over; only RNR NAKs of one PSN again use them up. The RNR retry
	 * count bounds the tries of one request, not the RNR NAKs of a
	 * message: a long message into memory its responder pages in as it
	 * goes (an XRC receive QP over ODP memory, sroce_resp.c) is RNR
	 * NAKed at each stretch the responder has not faulted in yet, and
	 * completes with any rnr_retry. (Before the first RNR NAK since
	 * the count was last reset, resetting it changes nothing.) Only a
	 * PSN past the last one moves the mark: RNR NAKs that alternate
	 * between two PSNs of one message (p + 1, then p) go back every
	 * second time, and would otherwise reset the count for ever.
	 */
	if (qp->req.rnr_psn == SROCE_PSN_NONE ||
	    sroce_psn_before(qp->req.rnr_psn, psn)) {
		qp->req.rnr_retries = qp->attr.rnr_retry;
		qp->req.rnr_psn = psn;
	}
	if (qp->attr.rnr_retry != 7) {
		if (!qp->req.rnr_retries) {
			sroce_count(sdev, SROCE_CNT_RNR_RETRY_EXCEEDED);
			sroce_comp_fail(qp, IB_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		qp->req.rnr_retries--;
	}
	sroce_go_back(qp, psn);
	qp->req.rnr_wait = true;
	mod_timer(&qp->timer,
		  jiffies + usecs_to_jiffies(sroce_rnr_usecs[timer & 31]));
}

/*
 * An ACK of @psn reached a READ or an atomic at the head: the responder
 * answered it before that ACK, so its response was lost.
 */
static void sroce_comp_ack_past_response(struct sroce_qp *qp, u32 psn)
{
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw = sroce_oldest(qp, &wqe);

	if (sw && sw->done && sroce_needs_response(wqe->opcode) && !sw->gap &&
	    !sroce_psn_before(psn, (sw->first_psn + sw->resp_pkts) &
					   SROCE_PSN_MASK)) {
		sroce_go_back(qp, sw->first_psn);
		sw->gap = 1;
	}
}

static void sroce_comp_ack(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_aeth *aeth = sroce_pkt_hdr(skb, SROCE_OP_AETH);
	u32 smsn = be32_to_cpu(aeth->smsn);
	u8 syndrome = smsn >> 24;
	u32 psn = SROCE_PKT(skb)->psn;

	switch (syndrome & SROCE_AETH_TYPE_MASK) {
	case 0:
		sroce_ack_upto(qp, psn);
		sroce_comp_ack_past_response(qp, psn);
		/* The peer has what was sent up to @psn, perhaps part of a
		 * long message.
		 */
		sroce_comp_progress(qp);
		return;
	case SROCE_AETH_RNR_NAK:
		sroce_comp_rnr(qp, psn, syndrome & 0x1f);
		return;
	case SROCE_AETH_NAK:
		break;
	default:
		/* a reserved AETH type */
		sroce_drop_qp(qp, SROCE_CNT_DROP_MALFORMED,
			      "psn %u dropped: reserved AETH syndrome %#x\n",
			      psn, syndrome);
		return;
	}

	sroce_ack_upto(qp, (psn - 1) & SROCE_PSN_MASK);
	switch (syndrome & 0x1f) {
	case SROCE_NAK_PSN_SEQ:
		sroce_count(sdev, SROCE_CNT_NAK_SEQ_RCVD);
		/* Only NAKs of the same PSN again use up the retries. */
		if (psn != qp->req.nak_psn) {
			qp->req.nak_psn = psn;
			qp->req.retries = qp->attr.retry_cnt;
		}
		if (qp->req.retries-- == 0) {
			sroce_count(sdev, SROCE_CNT_RETRY_EXCEEDED);
			sroce_comp_fail(qp, IB_WC_RETRY_EXC_ERR);
			return;
		}
		sroce_go_back(qp, psn);
		return;
	case SROCE_NAK_INVALID_REQ:
		sroce_count(sdev, SROCE_CNT_NAK_INV_RCVD);
		sroce_comp_fail(qp, IB_WC_REM_INV_REQ_ERR);
		return;
	case SROCE_NAK_REM_ACCESS:
		sroce_count(sdev, SROCE_CNT_NAK_ACCESS_RCVD);
		sroce_comp_fail(qp, IB_WC_REM_ACCESS_ERR);
		return;
	default:
		sroce_count(sdev, SROCE_CNT_NAK_OP_RCVD);
		sroce_comp_fail(qp, IB_WC_REM_OP_ERR);
		return;
	}
}

/*
 * The oldest WQE (@sw, a READ or an atomic) waits for the response with
 * PSN @expected and the packet @psn came instead. Before it: a duplicate,
 * ignored. After it: responses were lost (the responder answers in
 * order), so the WQE is sent again, once per gap; the responses it
 * already has are taken as duplicates then.
 * Return: true if the packet is the expected one.
 */
static bool sroce_comp_in_order(struct sroce_qp *qp, struct sroce_swqe *sw,
				u32 expected, u32 psn)
{
	if (psn == expected) {
		sw->gap = 0;
		return true;
	}
	if (sroce_psn_before(psn, expected) || sw->gap)
		return false;
	sroce_go_back(qp, sw->first_psn);
	sw->gap = 1;
	return false;
}

static void sroce_comp_read_resp(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);
	u32 flags = sroce_opinfo[pkt->opcode].flags;
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw;
	u32 offset;

	/* Everything before the READ was acknowledged by its response. */
	sroce_ack_upto(qp, (pkt->psn - 1) & SROCE_PSN_MASK);
	sw = sroce_oldest(qp, &wqe);
	if (!sw || !sw->done || !sroce_needs_response(wqe->opcode))
		return;
	if (!sroce_comp_in_order(qp, sw, (sw->first_psn + sw->resp_pkts) &
				 SROCE_PSN_MASK, pkt->psn))
		return;
	if (wqe->opcode != IB_UVERBS_WR_RDMA_READ) {
		sroce_comp_fail(qp, IB_WC_BAD_RESP_ERR);
		return;
	}
	offset = sw->resp_pkts * sw->mtu;
	if (offset + pkt->paylen > sw->len ||
	    (!(flags & SROCE_OP_LAST) && pkt->paylen != sw->mtu) ||
	    ((flags & SROCE_OP_LAST) && offset + pkt->paylen != sw->len)) {
		sroce_comp_fail(qp, IB_WC_BAD_RESP_ERR);
		return;
	}
	if (pkt->paylen &&
	    sroce_qp_copy_sges(qp, (const void *)(wqe + 1), wqe->num_sge,
			       offset, sroce_pkt_payload(skb), pkt->paylen,
			       true)) {
		sroce_comp_fail(qp, IB_WC_LOC_PROT_ERR);
		return;
	}
	sw->resp_pkts++;
	if (flags & SROCE_OP_LAST) {
		sroce_qp_complete_send(qp, IB_WC_SUCCESS);
		sroce_comp_local_done(qp);
	} else {
		sroce_comp_progress(qp);
	}
}

static void sroce_comp_atomic_ack(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_atmack *ack = sroce_pkt_hdr(skb, SROCE_OP_ATMACK);
	u32 psn = SROCE_PKT(skb)->psn;
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw;
	u64 orig;

	sroce_ack_upto(qp, (psn - 1) & SROCE_PSN_MASK);
	sw = sroce_oldest(qp, &wqe);
	if (!sw || !sw->done || !sroce_needs_response(wqe->opcode) ||
	    !sroce_comp_in_order(qp, sw, sw->first_psn, psn))
		return;
	if (wqe->opcode == IB_UVERBS_WR_RDMA_READ) {
		sroce_comp_fail(qp, IB_WC_BAD_RESP_ERR);
		return;
	}
	orig = be64_to_cpu(ack->orig);
	if (sroce_qp_copy_sges(qp, (const void *)(wqe + 1), wqe->num_sge, 0,
			       &orig, sizeof(orig), true)) {
		sroce_comp_fail(qp, IB_WC_LOC_PROT_ERR);
		return;
	}
	sroce_qp_complete_send(qp, IB_WC_SUCCESS);
	sroce_comp_local_done(qp);
}

/*
 * Is @psn one a response may carry now? Something must be outstanding
 * (o5-1.1.1: a response with no request outstanding is silently dropped),
 * and the PSN must be one of those sent for it: from the oldest
 * outstanding WQE's first PSN to the highest PSN sent. An ACK, NAK, read
 * response or atomic ACK outside that window is stale or forged, and
 * taking it could complete a WQE that was never answered, or a phantom.
 */
static bool sroce_comp_psn_valid(struct sroce_qp *qp, u32 psn)
{
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw = sroce_oldest(qp, &wqe);

	return sw && !sroce_psn_before(psn, sw->first_psn) &&
	       sroce_psn_before(psn, qp->req.psn_hi);
}

/*
 * An answer, again, to a request that has completed: a responder replays
 * its answers to duplicates in order, so after a go-back, a slow one
 * (a debug kernel: 3.5 ms a packet) answers the requests sent before
 * for longer than the timeout, before the request asked again. That is
 * not silence: the timer starts over (the retries do not), or each
 * timeout would send the window again behind the last, and the queue of
 * replays would grow until the retries ran out (make check-debug, READs
 * to rdma_rxe under loss).
 *
 * Only an answer to a PSN a go-back of the episode sent again counts
 * (ghost_lo <= @psn < ghost_hi, and before the oldest WQE's first PSN),
 * and at most one per such PSN: anything else is stale or forged. A
 * forger who knows the QPN but not the PSNs hits that span once in
 * 2^24 / (its width) tries, and holds the timer off for at most one
 * timeout per PSN sent again; without a go-back, not at all.
 */
static void sroce_comp_ghost_alive(struct sroce_qp *qp, u32 psn)
{
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *sw = sroce_oldest(qp, &wqe);

	if (!sw || !qp->req.ghost_left ||
	    sroce_psn_before(psn, qp->req.ghost_lo) ||
	    !sroce_psn_before(psn, qp->req.ghost_hi) ||
	    !sroce_psn_before(psn, sw->first_psn))
		return;
	qp->req.ghost_left--;
	sroce_comp_arm_retry(qp);
}

/* The peer has every PSN before @next: the send window moves on. */
static void sroce_comp_acked(struct sroce_qp *qp, u32 next)
{
	if (sroce_psn_before(qp->req.acked_psn, next))
		qp->req.acked_psn = next;
}

/**
 * sroce_comp_rcv - a response packet arrived
 * @qp: the QP, its lock held (a QP with no requester that is answered, or
 *      not sending, drops the packet)
 * @skb: the packet (the caller frees it)
 */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb)
{
	u8 opcode = SROCE_PKT(skb)->opcode;

	lockdep_assert_held(&qp->lock);
	if (!sroce_qp_takes_responses(qp) ||
	    SROCE_OP_TRANSPORT(opcode) != sroce_qp_transport(qp) ||
	    !sroce_qp_sends(qp)) {
		sroce_drop_qp(qp, SROCE_CNT_DROP_QP_STATE,
			      "response %#x psn %u dropped: QP type or state %d\n",
			      opcode, SROCE_PKT(skb)->psn, qp->attr.qp_state);
		return;
	}
	if (!sroce_comp_psn_valid(qp, SROCE_PKT(skb)->psn)) {
		sroce_comp_ghost_alive(qp, SROCE_PKT(skb)->psn);
		sroce_drop_qp(qp, SROCE_CNT_DROP_GHOST_RESP,
			      "response %#x psn %u dropped: not for a request outstanding\n",
			      opcode, SROCE_PKT(skb)->psn);
		return;
	}
	/*
	 * A NAK's PSN is the first the responder lacks; every other response
	 * says the responder had its PSN.
	 */
	if (SROCE_OP_BASE(opcode) == SROCE_RC_ACK &&
	    (be32_to_cpu(((struct sroce_aeth *)
			  sroce_pkt_hdr(skb, SROCE_OP_AETH))->smsn) >> 24) &
	    SROCE_AETH_TYPE_MASK)
		sroce_comp_acked(qp, SROCE_PKT(skb)->psn);
	else
		sroce_comp_acked(qp, (SROCE_PKT(skb)->psn + 1) &
				 SROCE_PSN_MASK);
	/*
	 * The timer measures the responder's silence: any answer in the
	 * window, even one past a gap, shows it at work. A slow responder
	 * (a debug kernel: 3.5 ms a packet) still answering the READs sent
	 * before a go-back must not run the requester out of retries while
	 * the READ asked again waits behind them. Retries start over only
	 * on progress (sroce_comp_progress()).
	 */
	sroce_comp_arm_retry(qp);
	/*
	 * An answer past what the episode's go-backs sent again: the
	 * responder, answering in order, has replayed all it will.
	 */
	if (!sroce_psn_before(SROCE_PKT(skb)->psn, qp->req.ghost_hi))
		qp->req.ghost_left = 0;

	switch (SROCE_OP_BASE(opcode)) {
	case SROCE_RC_ACK:
		sroce_comp_ack(qp, skb);
		break;
	case SROCE_RC_ATOMIC_ACK:
		sroce_comp_atomic_ack(qp, skb);
		break;
	case SROCE_RC_READ_RESP_FIRST:
	case SROCE_RC_READ_RESP_MIDDLE:
	case SROCE_RC_READ_RESP_LAST:
	case SROCE_RC_READ_RESP_ONLY:
		sroce_comp_read_resp(qp, skb);
		break;
	default:
		break;
	}
}

/*
 * Complete every WR between *cons and the ring's producer index with
 * IB_WC_WR_FLUSH_ERR. A producer index no WR could have reached drops the
 * ring's contents instead. Stops early if the CQ is full.
 */
static void sroce_flush_ring(struct sroce_qp *qp, struct sroce_ring *ring,
			     u32 *cons, struct sroce_cq *cq, bool send)
{
	u32 prod = sroce_ring_load_prod(ring);
	struct sroce_cqe cqe = {
		.status = IB_WC_WR_FLUSH_ERR,
		.qp_num = qp->ibqp.qp_num,
	};

	if (prod - *cons > ring->num_slots) {
		sroce_dbg_qp(qp, "%s producer index %u corrupt: WQEs dropped\n",
			     send ? "SQ" : "RQ", prod);
		*cons = prod;
	}
	while (*cons != prod) {
		const void *slot = sroce_ring_slot(ring, *cons);

		/* Both WQE layouts start with wr_id. */
		cqe.wr_id = READ_ONCE(((const struct sroce_recv_wqe *)slot)->wr_id);
		cqe.opcode = send ? IB_UVERBS_WC_SEND : IB_WC_RECV;
		(*cons)++;
		sroce_ring_store_cons(ring, *cons);
		if (sroce_cq_post(cq, qp, &cqe, false))
			break;
	}
}

/*
 * The receive WQE a message in progress had taken completes with
 * WR_FLUSH_ERR: in the QP's receive CQ, or for an XRC target in the CQ of
 * the SRQ it came from. Return: nonzero if the CQ was full.
 */
static int sroce_qp_flush_rwqe(struct sroce_qp *qp, struct sroce_cq *rcq)
{
	const struct sroce_recv_wqe *rwqe = qp->resp.rwqe;
	struct sroce_cqe cqe = {
		.wr_id = rwqe->wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
	};
	struct sroce_srq *srq = NULL;
	int err = 0;

	qp->resp.rwqe_valid = false;
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		srq = sroce_xrc_srq_get(to_sdev(qp->ibqp.device),
					qp->resp.xrc_srqn);
		/* Only the QP's domain's: the number may be another's now. */
		if (srq && srq->ibsrq.ext.xrc.xrcd != qp->ibqp.xrcd) {
			sroce_srq_put(srq);
			srq = NULL;
		}
		rcq = srq ? to_scq(srq->ibsrq.ext.cq) : NULL;
	} else if (qp->rq.hdr) {
		/* The WQE is still in the ring: give its slot back. */
		qp->rq_cons++;
		sroce_ring_store_cons(&qp->rq, qp->rq_cons);
	}
	if (rcq)
		err = sroce_cq_post(rcq, qp, &cqe, false);
	if (srq)
		sroce_srq_put(srq);
	return err;
}

/*
 * In the error state: complete everything posted with WR_FLUSH_ERR. From
 * the engine, the QP's lock held.
 */
void sroce_qp_flush(struct sroce_qp *qp)
{
	struct sroce_cq *rcq = qp->ibqp.recv_cq ? to_scq(qp->ibqp.recv_cq) :
						  NULL;

	lockdep_assert_held(&qp->lock);
	/* First the WQEs the engine had taken, then the ring. */
	qp->req.next = qp->sq_cons;
	while (qp->sq_comp != qp->sq_cons)
		sroce_qp_complete_send(qp, IB_WC_WR_FLUSH_ERR);
	qp->req.sent = 0;
	qp->req.rd_atomic = 0;
	sroce_flush_ring(qp, &qp->sq, &qp->sq_cons, to_scq(qp->ibqp.send_cq),
			 true);
	qp->sq_comp = qp->sq_cons;
	qp->req.next = qp->sq_cons;

	if (qp->resp.rwqe_valid && sroce_qp_flush_rwqe(qp, rcq))
		return;
	if (qp->rq.hdr)
		sroce_flush_ring(qp, &qp->rq, &qp->rq_cons, rcq, false);
}
