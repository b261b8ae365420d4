// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the responder - executes incoming requests (SEND into receive
 * WQEs, RDMA WRITE, RDMA READ, atomics) and acknowledges them.
 *
 * Errors follow the IB classes: a request the responder cannot execute is
 * NAKed (invalid request, remote access, remote operational) and puts the
 * responder's QP in error; an empty receive queue is an RNR NAK; a PSN gap
 * is one sequence NAK until the expected PSN arrives.
 *
 * Each check names the rule it implements: a compliance statement of IBTA
 * volume 1 (Cn-m, or on-m for an optional feature, of chapter n), or the
 * rule in words with its chapter or section: chapter 9 is the transport
 * layer (9.9.3: the responder's error classes), chapter 10 the software
 * transport interface (QP states, access rights, memory protection).
 */
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>

#include "sroce_loc.h"
#include "sroce_mem_api.h"
#include "sroce_task.h"
#include "sroce.h"

/* Read response packets made per run of the engine. */
#define SROCE_RESP_BUDGET 64

/* What a request packet's processing decided. */
enum sroce_resp_result {
	SROCE_RESP_OK,		/* done; acknowledge if asked to */
	SROCE_RESP_DONE,	/* done and answered (read, atomic) */
	SROCE_RESP_DROP,	/* ignore the packet */
	SROCE_RESP_RNR,		/* no receive WQE */
	SROCE_RESP_RNR_PAGE,	/* memory not present that the QP may not
				 * wait for (sroce_resp_fault()): not
				 * executed, an RNR NAK too
				 */
	SROCE_RESP_NAK_INV,	/* invalid request */
	SROCE_RESP_NAK_LEN,	/* invalid request; the receive WQE, too
				 * short, completed in error
				 */
	SROCE_RESP_NAK_ACCESS,	/* remote access error */
	SROCE_RESP_NAK_OP,	/* remote operational error */
};

/* ACKs folded into one at most, when requests come in a burst. */
#define SROCE_ACK_COALESCE	16

static void sroce_resp_ack(struct sroce_qp *qp, u32 psn, u8 syndrome);

static struct sk_buff *sroce_resp_pkt(struct sroce_qp *qp, u8 opcode,
				      u32 psn, u32 paylen)
{
	struct sk_buff *skb;

	/* Answers go out in PSN order: an owed ACK first. */
	if (qp->resp.ack_owed)
		sroce_resp_flush_ack(qp);

	/* @opcode is RC's; an XRC target answers with XRC's. */
	skb = sroce_pkt_alloc(to_sdev(qp->ibqp.device), &qp->av,
			      sroce_qp_transport(qp) | opcode, psn, paylen);
	if (skb)
		((struct sroce_bth *)skb->data)->qpn =
			cpu_to_be32(qp->attr.dest_qp_num);
	return skb;
}

/* Return: 0 if sent, as sroce_pkt_xmit(). */
static int sroce_resp_xmit(struct sroce_qp *qp, struct sk_buff *skb)
{
	sroce_task_tx_mark(qp, skb);
	return sroce_pkt_xmit(to_sdev(qp->ibqp.device), &qp->av, qp->sport,
			      qp->loopback, skb);
}

static void sroce_set_aeth(struct sk_buff *skb, u8 syndrome, u32 msn)
{
	struct sroce_aeth *aeth = sroce_pkt_hdr(skb, SROCE_OP_AETH);

	aeth->smsn = cpu_to_be32((u32)syndrome << 24 | (msn & 0xffffff));
}

/*
 * Counts and traces a NAK this responder has sent (an ACK counts nothing):
 * one sroce_pkt_xmit() handed on, as sent_pkts counts it, not one it
 * dropped (send_port_down, send_no_route).
 */
static void sroce_resp_count_nak(struct sroce_qp *qp, u32 psn, u8 syndrome)
{
	static const enum sroce_counter naks[] = {
		[SROCE_NAK_PSN_SEQ] = SROCE_CNT_NAK_SEQ_SENT,
		[SROCE_NAK_INVALID_REQ] = SROCE_CNT_NAK_INV_SENT,
		[SROCE_NAK_REM_ACCESS] = SROCE_CNT_NAK_ACCESS_SENT,
		[SROCE_NAK_REM_OP] = SROCE_CNT_NAK_OP_SENT,
	};
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u8 code = syndrome & 0x1f;
	enum sroce_counter c;

	if ((syndrome & SROCE_AETH_TYPE_MASK) == SROCE_AETH_RNR_NAK)
		c = SROCE_CNT_RNR_NAK_SENT;
	else if ((syndrome & SROCE_AETH_TYPE_MASK) == SROCE_AETH_NAK &&
		 code < ARRAY_SIZE(naks))
		c = naks[code];
	else
		return;
	sroce_count(sdev, c);
	sroce_dbg_qp(qp, "psn %u: %s (syndrome %#x)\n", psn,
		     sroce_counter_name(c), syndrome);
}

/**
 * sroce_resp_flush_ack - send the ACK owed for the requests taken so far
 * @qp: the QP, its lock held
 */
void sroce_resp_flush_ack(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (!qp->resp.ack_owed)
		return;
	qp->resp.ack_owed = false;
	qp->resp.acks_held = 0;
	sroce_resp_ack(qp, qp->resp.ack_psn, SROCE_AETH_ACK_UNLIMITED);
}

/* A request asked for an ACK: owe it, and send it if enough are owed. */
static void sroce_resp_ack_later(struct sroce_qp *qp, u32 psn)
{
	qp->resp.ack_owed = true;
	qp->resp.ack_psn = psn;
	if (++qp->resp.acks_held >= SROCE_ACK_COALESCE)
		sroce_resp_flush_ack(qp);
}

/* An ACK or NAK for @psn. */
static void sroce_resp_ack(struct sroce_qp *qp, u32 psn, u8 syndrome)
{
	struct sk_buff *skb = sroce_resp_pkt(qp, SROCE_RC_ACK, psn, 0);

	if (!skb)
		return;
	sroce_set_aeth(skb, syndrome, qp->resp.msn);
	if (!sroce_resp_xmit(qp, skb))
		sroce_resp_count_nak(qp, psn, syndrome);
}

/* The SRQ receives come from: the QP's, or an XRC target's current one. */
static struct sroce_srq *sroce_resp_srq(struct sroce_qp *qp)
{
	if (qp->resp.srq)
		return qp->resp.srq;
	return qp->ibqp.srq ? to_ssrq(qp->ibqp.srq) : NULL;
}

/* The PD memory accesses are checked in (an XRC target's: its SRQ's). */
static struct ib_pd *sroce_resp_pd(struct sroce_qp *qp)
{
	return qp->resp.srq ? qp->resp.srq->ibsrq.pd : qp->ibqp.pd;
}

/* The CQ receives complete in (an XRC target's: its SRQ's). */
static struct sroce_cq *sroce_resp_cq(struct sroce_qp *qp)
{
	return to_scq(qp->resp.srq ? qp->resp.srq->ibsrq.ext.cq :
				     qp->ibqp.recv_cq);
}

/*
 * Whether the responder may wait for its memory's ODP faults: only where
 * the memory is its own user context's, whose faults only that context
 * can stall. An XRC target QP's is not: the QP is the XRC domain's, made
 * for and destroyed by any process that opened the domain (the last to
 * close it), and each packet's XRCETH names the SRQ, and so the PD whose
 * memory it reaches, of any of them, another user's included. A fault
 * there would wait, under this QP's lock, for as long as that memory's
 * owner likes (its FUSE file's server), and so would the QP's modify and
 * destroy by the others. So an XRC target takes only pages present now:
 * a request that finds one missing is RNR NAKed (the requester sends it
 * again after its RNR timer), a READ's responses wait for qp->timer
 * (sroce_resp_read_wait()), while a job faults in beside what the
 * message still needs from there, and no more (sroce_map_fault_later()),
 * waited for by no QP. RC, UC and UD QPs reach memory of their own PD,
 * their own context's.
 */
static enum sroce_fault sroce_resp_fault(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_TGT ? SROCE_NO_FAULT :
						    SROCE_FAULT;
}

static int sroce_resp_copy_sges(struct sroce_qp *qp,
				const struct sroce_sge *sge, u32 nsge,
				u32 offset, void *buf, u32 len)
{
	return sroce_copy_sges(to_sdev(qp->ibqp.device), sroce_resp_pd(qp),
			       sge, nsge, offset, buf, len, true,
			       sroce_resp_fault(qp));
}

/*
 * A SEND's copy into its receive WQE's buffers found memory not present
 * (sroce_resp_fault()): have what the message needs from @offset faulted
 * in beside. A SEND says its length only with its last packet: @last,
 * this packet's @len bytes; else the rest of the buffers (bounded by the
 * memory layer), as a receive WQE's whole scatter list is what a
 * hardware responder faults in for a page fault on a SEND (mlx5).
 */
static void sroce_resp_sges_later(struct sroce_qp *qp,
				  const struct sroce_recv_wqe *rwqe,
				  u32 offset, u32 len, bool last)
{
	sroce_sges_fault_later(to_sdev(qp->ibqp.device), sroce_resp_pd(qp),
			       (const void *)(rwqe + 1), rwqe->num_sge, offset,
			       last ? len : U64_MAX, true);
}

/*
 * Fault in ahead of a message (ODP), where the responder may wait for
 * faults: the first 2 MiB now, the next message's beside, in a job of the
 * QP's that only the QP's destroy waits for (sroce_map_fault_ahead()).
 */
static void sroce_resp_fault_ahead(struct sroce_qp *qp,
				   struct sroce_ahead *ahead,
				   struct sroce_map *map, u64 va, u64 len,
				   bool write)
{
	if (sroce_resp_fault(qp) == SROCE_FAULT)
		sroce_map_fault_ahead(ahead, map, va, len, write);
}

static struct sroce_map *sroce_resp_mr_get(struct sroce_qp *qp, u32 rkey,
					   u64 va, u64 len, int access)
{
	return sroce_mem_get(to_sdev(qp->ibqp.device), sroce_resp_pd(qp),
			     qp->ibqp.qp_num, rkey, va, len, access);
}

/*
 * The map a message of several packets (an RDMA WRITE, a READ's responses)
 * uses for one packet: its key is looked up again for each, so a key that
 * was deregistered, invalidated or re-bound since the first packet stops
 * the message, and so does a re-registration (a message lands wholly in
 * one translation, never split between two). Nothing is held between
 * packets; a test may have one packet's access hold the map
 * (sroce_map_test_hold()). Return: the map (sroce_map_put() it) or NULL.
 */
static struct sroce_map *sroce_resp_msg_map(struct sroce_qp *qp, u32 rkey,
					    u64 map_id, u64 va, u64 len,
					    int access)
{
	struct sroce_map *map = sroce_resp_mr_get(qp, rkey, va, len, access);

	if (IS_ERR(map))
		return NULL;
	if (sroce_map_id(map) != map_id) {
		sroce_dbg_qp(qp, "rkey %#x refused: not the translation its message began with\n",
			     rkey);
		sroce_map_put(map);
		return NULL;
	}
	/* Where the QP may wait: a test's hold of the access, if it asks. */
	if (sroce_resp_fault(qp) == SROCE_FAULT)
		sroce_map_test_hold(map);
	return map;
}

/*
 * A WRITE's or READ's length: at most 2^31 bytes (the port's max_msg_sz),
 * in fewer than SROCE_MAX_MSG_PKTS packets at the QP's MTU.
 */
static bool sroce_resp_len_ok(const struct sroce_qp *qp, u32 len)
{
	return len <= SROCE_MAX_MSG_SIZE &&
	       DIV_ROUND_UP(len, qp->mtu) < SROCE_MAX_MSG_PKTS;
}

/* Take the next receive WQE (RQ or SRQ) into resp.rwqe. */
static bool sroce_resp_take_rwqe(struct sroce_qp *qp)
{
	struct sroce_srq *srq = sroce_resp_srq(qp);
	u32 prod;

	if (qp->resp.rwqe_valid)
		return true;
	if (srq) {
		if (!sroce_srq_take(srq, qp->resp.rwqe))
			return false;
		qp->resp.rwqe_valid = true;
		qp->resp.offset = 0;
		return true;
	}
	/* No receive queue at all (XRC QPs without their SRQ): none. */
	if (!qp->rq.hdr)
		return false;
	prod = sroce_ring_load_prod(&qp->rq);
	if (prod == qp->rq_cons || prod - qp->rq_cons > qp->rq.num_slots)
		return false;
	memcpy(qp->resp.rwqe, sroce_ring_slot(&qp->rq, qp->rq_cons),
	       qp->rq.slot_size);
	qp->resp.rwqe_valid = true;
	qp->resp.offset = 0;
	return true;
}

/*
 * Complete resp.rwqe with @cqe (filled but for wr_id and qp_num) and give
 * its slot back.
 */
static void sroce_resp_post(struct sroce_qp *qp, struct sroce_cqe *cqe,
			    bool solicited)
{
	const struct sroce_recv_wqe *rwqe = qp->resp.rwqe;

	cqe->wr_id = rwqe->wr_id;
	cqe->qp_num = qp->ibqp.qp_num;
	if (cqe->status != IB_WC_SUCCESS)
		sroce_dbg_qp(qp, "receive WQE (wr_id %#llx) completes with %s\n",
			     cqe->wr_id, ib_wc_status_msg(cqe->status));
	/* The slot is free (we hold a copy) before the completion shows. */
	qp->resp.rwqe_valid = false;
	if (!sroce_resp_srq(qp)) {
		qp->rq_cons++;
		sroce_ring_store_cons(&qp->rq, qp->rq_cons);
	}
	sroce_cq_post(sroce_resp_cq(qp), qp, cqe, solicited);
}

/* Connected QPs: the source is the QP's peer. */
static void sroce_resp_complete(struct sroce_qp *qp, enum ib_wc_status status,
				u32 opcode, u32 byte_len, u32 ex, u32 flags,
				bool solicited)
{
	struct sroce_cqe cqe = {
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.ex = ex,
		.src_qp = qp->attr.dest_qp_num,
		.wc_flags = flags,
	};

	sroce_resp_post(qp, &cqe, solicited);
}

/* A UD receive: the source is in the packet (DETH, IP and MAC headers). */
static void sroce_resp_complete_ud(struct sroce_qp *qp, struct sk_buff *skb,
				   u32 byte_len, u32 ex, u32 flags)
{
	struct sroce_deth *deth = sroce_pkt_hdr(skb, SROCE_OP_DETH);
	struct sroce_cqe cqe = {
		.status = IB_WC_SUCCESS,
		.opcode = IB_WC_RECV,
		.byte_len = byte_len,
		.ex = ex,
		.src_qp = be32_to_cpu(deth->sqp) & SROCE_QPN_MASK,
		.wc_flags = flags,
		.network_hdr_type = ip_hdr(skb)->version == 4 ?
				    RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6,
	};

	/* Looped-back packets have no Ethernet header. */
	if (skb_mac_header_was_set(skb) && skb_mac_header_len(skb) >= ETH_HLEN)
		ether_addr_copy(cqe.smac, eth_hdr(skb)->h_source);
	if (SROCE_PKT(skb)->vlan_id != SROCE_NO_VLAN) {
		cqe.vlan_valid = 1;
		cqe.vlan_id = SROCE_PKT(skb)->vlan_id;
	}
	sroce_resp_post(qp, &cqe, ((struct sroce_bth *)skb->data)->flags &
					  SROCE_BTH_SE);
}

/* SGEs a receive WQE may have: the RQ's or the SRQ's. */
static u32 sroce_resp_max_sge(struct sroce_qp *qp)
{
	struct sroce_srq *srq = sroce_resp_srq(qp);

	return srq ? srq->max_sge : qp->cap.max_recv_sge;
}

/* Copy payload into resp.rwqe's buffers; map a failure to its result. */
static enum sroce_resp_result sroce_resp_fill(struct sroce_qp *qp,
					      struct sk_buff *skb)
{
	const struct sroce_recv_wqe *rwqe = qp->resp.rwqe;
	u32 paylen = SROCE_PKT(skb)->paylen;
	int err;

	if (!paylen)
		return SROCE_RESP_OK;
	/*
	 * A receive WQE the responder cannot use (too many SGEs, an lkey it
	 * refuses) completes in error and is a remote operational error; a
	 * message longer than its buffers, a local length error and an
	 * invalid request (IBTA vol 1 9.9.3).
	 */
	if (rwqe->num_sge > sroce_resp_max_sge(qp)) {
		sroce_resp_complete(qp, IB_WC_LOC_QP_OP_ERR, IB_WC_RECV,
				    0, 0, 0, false);
		return SROCE_RESP_NAK_OP;
	}
	/* A message is at most 2^31 bytes (max_msg_sz): no offset wraps. */
	if (paylen > SROCE_MAX_MSG_SIZE - qp->resp.offset)
		err = -ERANGE;
	else
		err = sroce_resp_copy_sges(qp, (const void *)(rwqe + 1),
					   rwqe->num_sge, qp->resp.offset,
					   sroce_pkt_payload(skb), paylen);
	/*
	 * Memory not present that this QP may not wait for (an XRC
	 * target's: sroce_resp_fault()): not ready. The WQE stays taken,
	 * the offset where it was, for the packet sent again.
	 */
	if (err == -EAGAIN) {
		sroce_resp_sges_later(qp, rwqe, qp->resp.offset, paylen,
				      sroce_opinfo[SROCE_PKT(skb)->opcode].flags &
					      SROCE_OP_LAST);
		return SROCE_RESP_RNR_PAGE;
	}
	if (err == -ERANGE) {
		sroce_resp_complete(qp, IB_WC_LOC_LEN_ERR, IB_WC_RECV,
				    0, 0, 0, false);
		return SROCE_RESP_NAK_LEN;
	}
	if (err) {
		sroce_resp_complete(qp, IB_WC_LOC_PROT_ERR, IB_WC_RECV,
				    0, 0, 0, false);
		return SROCE_RESP_NAK_OP;
	}
	qp->resp.offset += paylen;
	return SROCE_RESP_OK;
}

static enum sroce_resp_result sroce_resp_send(struct sroce_qp *qp,
					      struct sk_buff *skb)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);
	u32 flags = sroce_opinfo[pkt->opcode].flags;
	enum sroce_resp_result res;
	u32 ex = 0, wc_flags = 0;

	/* No receive WQE: an RNR NAK (RC), the message dropped (UC, 9.9.3). */
	if ((flags & SROCE_OP_FIRST) && !sroce_resp_take_rwqe(qp))
		return sroce_qp_is_reliable(qp) ? SROCE_RESP_RNR :
						       SROCE_RESP_DROP;
	res = sroce_resp_fill(qp, skb);
	if (res != SROCE_RESP_OK || !(flags & SROCE_OP_LAST))
		return res;

	if (flags & SROCE_OP_IMM) {
		memcpy(&ex, sroce_pkt_hdr(skb, SROCE_OP_IMM), sizeof(ex));
		wc_flags |= SROCE_WC_WITH_IMM;
	} else if (flags & SROCE_OP_INV) {
		ex = be32_to_cpu(*(__be32 *)sroce_pkt_hdr(skb, SROCE_OP_INV));
		wc_flags |= SROCE_WC_WITH_INV;
		/*
		 * Invalidate the key, which must name a valid fast-registration
		 * MR of the QP's PD or a type 2 window bound through this QP
		 * (o10-37.2.26: never a type 1 window); otherwise an invalid
		 * request (the receive fails, the QP goes to error).
		 */
		if (sroce_mr_invalidate(to_sdev(qp->ibqp.device),
					sroce_resp_pd(qp), qp->ibqp.qp_num, ex)) {
			sroce_resp_complete(qp, IB_WC_LOC_QP_OP_ERR, IB_WC_RECV,
					    0, 0, 0, false);
			return SROCE_RESP_NAK_INV;
		}
	}
	sroce_resp_complete(qp, IB_WC_SUCCESS, IB_WC_RECV,
			    qp->resp.offset, ex, wc_flags,
			    ((struct sroce_bth *)skb->data)->flags &
				    SROCE_BTH_SE);
	return SROCE_RESP_OK;
}

static enum sroce_resp_result sroce_resp_write(struct sroce_qp *qp,
					       struct sk_buff *skb)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);
	u32 flags = sroce_opinfo[pkt->opcode].flags;
	struct sroce_resp *r = &qp->resp;
	struct sroce_map *map;
	int err = 0;
	u32 ex;

	if (flags & SROCE_OP_FIRST) {
		struct sroce_reth *reth = sroce_pkt_hdr(skb, SROCE_OP_RETH);
		u32 len = be32_to_cpu(reth->len);

		/* The QP must allow remote writes (its access flags, ch. 10). */
		if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE)) {
			sroce_dbg_qp(qp, "psn %u: the QP allows no remote write\n",
				     pkt->psn);
			return SROCE_RESP_NAK_ACCESS;
		}
		if (!sroce_resp_len_ok(qp, len))
			return SROCE_RESP_NAK_INV;
		r->va = be64_to_cpu(reth->va);
		/* An atomic write is 8 aligned bytes (IBTA 1.5, Atomic Write). */
		if ((flags & SROCE_OP_ATOMIC_WRITE) &&
		    (len != sizeof(u64) || (r->va & 7)))
			return SROCE_RESP_NAK_INV;
		r->resid = len;
		r->wlen = len;
		r->rkey = be32_to_cpu(reth->rkey);
		/* C9-88: the whole message must be in the key's range. */
		if (len) {
			map = sroce_resp_mr_get(qp, r->rkey, r->va, len,
						IB_ACCESS_REMOTE_WRITE);
			if (IS_ERR(map))
				return SROCE_RESP_NAK_ACCESS;
			r->map_id = sroce_map_id(map);
			sroce_resp_fault_ahead(qp, &r->write_ahead, map, r->va,
					       len, true);
			sroce_map_put(map);
		}
	}
	/*
	 * Its first and middle packets carry the path MTU, its last the rest
	 * of the RETH's length: otherwise an invalid request (ch. 9, length).
	 */
	if (pkt->paylen > r->resid ||
	    (!(flags & SROCE_OP_LAST) && pkt->paylen != qp->mtu) ||
	    ((flags & SROCE_OP_LAST) && pkt->paylen != r->resid))
		return SROCE_RESP_NAK_INV;
	/* With immediate data the last packet needs a receive WQE: first. */
	if ((flags & SROCE_OP_IMM) && !sroce_resp_take_rwqe(qp))
		return sroce_qp_is_reliable(qp) ? SROCE_RESP_RNR :
						       SROCE_RESP_DROP;
	/* Each packet's bytes through the key, as its first packet found it. */
	if (pkt->paylen) {
		map = sroce_resp_msg_map(qp, r->rkey, r->map_id, r->va,
					 pkt->paylen, IB_ACCESS_REMOTE_WRITE);
		if (!map)
			return SROCE_RESP_NAK_ACCESS;
		if (flags & SROCE_OP_ATOMIC_WRITE) {
			u64 val;

			memcpy(&val, sroce_pkt_payload(skb), sizeof(val));
			err = sroce_map_atomic_write(map, r->va, val,
						     sroce_resp_fault(qp));
		} else {
			/* ODP memory that is not there, or not writable */
			err = sroce_map_copy(map, r->va, sroce_pkt_payload(skb),
					     pkt->paylen, true,
					     sroce_resp_fault(qp));
		}
		/*
		 * Not present (sroce_resp_fault()): the packet again later,
		 * the rest of the message faulted in beside meanwhile.
		 */
		if (err == -EAGAIN)
			sroce_map_fault_later(map, r->va, r->resid, true);
		sroce_map_put(map);
		if (err == -EAGAIN)
			return SROCE_RESP_RNR_PAGE;
		/* An atomic write not aligned in memory: invalid request */
		if (err)
			return err == -EINVAL ? SROCE_RESP_NAK_INV :
						SROCE_RESP_NAK_ACCESS;
		r->va += pkt->paylen;
		r->resid -= pkt->paylen;
	}
	if (!(flags & SROCE_OP_LAST))
		return SROCE_RESP_OK;

	if (flags & SROCE_OP_IMM) {
		memcpy(&ex, sroce_pkt_hdr(skb, SROCE_OP_IMM), sizeof(ex));
		sroce_resp_complete(qp, IB_WC_SUCCESS,
				    IB_WC_RECV_RDMA_WITH_IMM, r->wlen,
				    ex, SROCE_WC_WITH_IMM,
				    ((struct sroce_bth *)skb->data)->flags &
					    SROCE_BTH_SE);
	}
	return SROCE_RESP_OK;
}

static void sroce_resp_read_stop(struct sroce_qp *qp);

/*
 * The memory of a READ being answered cannot be read (its key invalidated
 * or re-registered since the request, or ODP memory not there): a remote
 * access NAK for the response due, and the QP goes to error.
 */
static void sroce_resp_read_fail(struct sroce_qp *qp)
{
	u32 psn = qp->resp.read_psn;

	sroce_resp_read_stop(qp);
	sroce_resp_ack(qp, psn, SROCE_AETH_NAK | SROCE_NAK_REM_ACCESS);
	sroce_qp_error(qp);
}

/* Waits of a READ for its memory: 2^n jiffies each, n up to this. */
#define SROCE_READ_WAIT_SHIFT	8

/*
 * The page a READ response reads is not present, and the QP may not wait
 * for it to be faulted in (sroce_resp_fault()): a job faults it in beside
 * (the memory layer queued it). The responses go on from there when
 * qp->timer fires, a jiffy later, then twice as long each time the page
 * is still missing, up to 2^SROCE_READ_WAIT_SHIFT jiffies; the timer is
 * free, as an XRC target has no requester (whose RNR back-off it is).
 * Until then the QP takes no other request: they are answered in order.
 * Nothing is held meanwhile: not the map, not the SRQ.
 */
static void sroce_resp_read_wait(struct sroce_qp *qp)
{
	u8 n = min_t(u8, qp->resp.read_waits, SROCE_READ_WAIT_SHIFT);

	qp->resp.read_waits = n + 1;
	mod_timer(&qp->timer, jiffies + BIT(n));
}

/*
 * Make up to a budget of the responses of the READ in resp.read_*.
 * Return: true when all are sent (or the READ failed).
 */
static bool sroce_resp_read_more(struct sroce_qp *qp)
{
	struct sroce_resp *r = &qp->resp;
	int budget = SROCE_RESP_BUDGET;

	while (r->read_left && budget--) {
		bool first = r->read_sent == 0;
		u32 paylen = min(r->read_left, qp->mtu);
		bool last = r->read_left <= qp->mtu;
		struct sk_buff *skb;
		u8 op;

		if (first)
			op = last ? SROCE_RC_READ_RESP_ONLY :
				    SROCE_RC_READ_RESP_FIRST;
		else
			op = last ? SROCE_RC_READ_RESP_LAST :
				    SROCE_RC_READ_RESP_MIDDLE;
		struct sroce_map *map;
		int err;

		skb = sroce_resp_pkt(qp, op, r->read_psn, paylen);
		/*
		 * No memory: the engine runs again at once (a READ that
		 * waited for its memory is not waiting for qp->timer now:
		 * sroce_resp_continue()).
		 */
		if (!skb) {
			r->read_waits = 0;
			return false;
		}
		if (sroce_opinfo[op].flags & SROCE_OP_AETH)
			sroce_set_aeth(skb, SROCE_AETH_ACK_UNLIMITED, r->msn);
		map = sroce_resp_msg_map(qp, r->read_rkey, r->read_map_id,
					 r->read_va, paylen,
					 IB_ACCESS_REMOTE_READ);
		/* ODP memory that is not there fails the READ as well */
		err = map ? sroce_map_copy(map, r->read_va,
					   sroce_pkt_payload(skb), paylen,
					   false, sroce_resp_fault(qp)) :
			    -EACCES;
		/* Not present: the rest of the READ faulted in beside. */
		if (err == -EAGAIN)
			sroce_map_fault_later(map, r->read_va, r->read_left,
					      false);
		if (map)
			sroce_map_put(map);
		if (err == -EAGAIN) {
			kfree_skb(skb);
			sroce_resp_read_wait(qp);
			return false;
		}
		if (err) {
			kfree_skb(skb);
			sroce_resp_read_fail(qp);
			return true;
		}
		sroce_resp_xmit(qp, skb);
		r->read_waits = 0;
		r->read_psn = (r->read_psn + 1) & SROCE_PSN_MASK;
		r->read_va += paylen;
		r->read_left -= paylen;
		r->read_sent += paylen;
	}
	return !r->read_left;
}

/* A zero-length READ: one response, no memory touched. */
static void sroce_resp_read_empty(struct sroce_qp *qp, u32 psn)
{
	struct sk_buff *skb = sroce_resp_pkt(qp, SROCE_RC_READ_RESP_ONLY, psn,
					     0);

	if (!skb)
		return;
	sroce_set_aeth(skb, SROCE_AETH_ACK_UNLIMITED, qp->resp.msn);
	sroce_resp_xmit(qp, skb);
}

/* Remember a READ or atomic taken, for its duplicates. */
static void sroce_resp_res_add(struct sroce_qp *qp, u8 kind, u32 first_psn,
			       u32 last_psn, u64 orig)
{
	struct sroce_res *res;

	res = &qp->resp.res[qp->resp.res_next++ % SROCE_MAX_RD_ATOMIC];
	res->kind = kind;
	res->first_psn = first_psn;
	res->last_psn = last_psn;
	res->orig = orig;
}

/* The READ or atomic taken whose PSNs include @psn, or NULL. */
static struct sroce_res *sroce_resp_res_find(struct sroce_qp *qp, u32 psn)
{
	int i;

	for (i = 0; i < SROCE_MAX_RD_ATOMIC; i++) {
		struct sroce_res *res = &qp->resp.res[i];

		if (res->kind != SROCE_RES_FREE &&
		    !sroce_psn_before(psn, res->first_psn) &&
		    !sroce_psn_before(res->last_psn, psn))
			return res;
	}
	return NULL;
}

/* A READ request (@dup: a duplicate, answered again from memory). */
static enum sroce_resp_result sroce_resp_read(struct sroce_qp *qp,
					      struct sk_buff *skb, bool dup)
{
	struct sroce_reth *reth = sroce_pkt_hdr(skb, SROCE_OP_RETH);
	u32 len = be32_to_cpu(reth->len), psn = SROCE_PKT(skb)->psn;
	struct sroce_resp *r = &qp->resp;
	struct sroce_map *map;
	u64 map_id = 0;

	/* The QP must allow remote reads (its access flags, ch. 10). */
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ)) {
		sroce_dbg_qp(qp, "psn %u: the QP allows no remote read\n", psn);
		return SROCE_RESP_NAK_ACCESS;
	}
	if (!sroce_resp_len_ok(qp, len))
		return SROCE_RESP_NAK_INV;
	/* The whole READ must lie in the key's range, checked once here. */
	if (len) {
		map = sroce_resp_mr_get(qp, be32_to_cpu(reth->rkey),
					be64_to_cpu(reth->va), len,
					IB_ACCESS_REMOTE_READ);
		if (IS_ERR(map))
			return SROCE_RESP_NAK_ACCESS;
		map_id = sroce_map_id(map);
		if (!dup)
			sroce_resp_fault_ahead(qp, &qp->resp.read_ahead, map,
					       be64_to_cpu(reth->va), len,
					       false);
		sroce_map_put(map);
	}
	if (!dup) {
		u32 npsn = max_t(u32, 1, DIV_ROUND_UP(len, qp->mtu));

		/* C9-148: a READ counts in the MSN when it is taken. */
		r->msn++;
		r->epsn = (psn + npsn) & SROCE_PSN_MASK;
		sroce_resp_res_add(qp, SROCE_RES_READ, psn,
				   (psn + npsn - 1) & SROCE_PSN_MASK, 0);
	}
	if (!len) {
		sroce_resp_read_empty(qp, psn);
		return SROCE_RESP_DONE;
	}
	r->read_rkey = be32_to_cpu(reth->rkey);
	r->read_map_id = map_id;
	r->read_va = be64_to_cpu(reth->va);
	r->read_left = len;
	r->read_sent = 0;
	r->read_psn = psn;
	sroce_resp_read_more(qp);
	return SROCE_RESP_DONE;
}

static void sroce_resp_atomic_ack(struct sroce_qp *qp, u32 psn, u64 orig)
{
	struct sk_buff *skb = sroce_resp_pkt(qp, SROCE_RC_ATOMIC_ACK, psn, 0);
	struct sroce_atmack *ack;

	if (!skb)
		return;
	sroce_set_aeth(skb, SROCE_AETH_ACK_UNLIMITED, qp->resp.msn);
	ack = sroce_pkt_hdr(skb, SROCE_OP_ATMACK);
	ack->orig = cpu_to_be64(orig);
	sroce_resp_xmit(qp, skb);
}

static enum sroce_resp_result sroce_resp_atomic(struct sroce_qp *qp,
						struct sk_buff *skb)
{
	struct sroce_atmeth *a = sroce_pkt_hdr(skb, SROCE_OP_ATMETH);
	u64 va = be64_to_cpu(a->va);
	u32 psn = SROCE_PKT(skb)->psn;
	struct sroce_map *mr;
	u64 orig;
	int err;

	/* The QP must allow remote atomics (its access flags, ch. 10). */
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC)) {
		sroce_dbg_qp(qp, "psn %u: the QP allows no remote atomic\n",
			     psn);
		return SROCE_RESP_NAK_ACCESS;
	}
	/* An atomic's address is 8-byte aligned, or an invalid request. */
	if (va & 7)
		return SROCE_RESP_NAK_INV;
	mr = sroce_resp_mr_get(qp, be32_to_cpu(a->rkey), va, 8,
			       IB_ACCESS_REMOTE_ATOMIC);
	if (IS_ERR(mr))
		return SROCE_RESP_NAK_ACCESS;
	if (SROCE_OP_BASE(SROCE_PKT(skb)->opcode) == SROCE_RC_CMP_SWAP)
		err = sroce_map_atomic(mr, va, be64_to_cpu(a->compare),
				       be64_to_cpu(a->swap_add), true, &orig,
				       sroce_resp_fault(qp));
	else
		err = sroce_map_atomic(mr, va, be64_to_cpu(a->swap_add), 0,
				       false, &orig, sroce_resp_fault(qp));
	/* Not present (sroce_resp_fault()): not executed, sent again later */
	if (err == -EAGAIN)
		sroce_map_fault_later(mr, va, sizeof(u64), true);
	sroce_map_put(mr);
	if (err == -EAGAIN)
		return SROCE_RESP_RNR_PAGE;
	/*
	 * Aligned at @va but not in memory (a zero-based window at an odd
	 * offset of its MR): an invalid request, as a misaligned @va is.
	 */
	if (err)
		return err == -EINVAL ? SROCE_RESP_NAK_INV :
					SROCE_RESP_NAK_ACCESS;

	qp->resp.msn++;
	qp->resp.epsn = (psn + 1) & SROCE_PSN_MASK;
	sroce_resp_res_add(qp, SROCE_RES_ATOMIC, psn, psn, orig);
	sroce_resp_atomic_ack(qp, psn, orig);
	return SROCE_RESP_DONE;
}

/* Stop answering the READ under way, if any. */
static void sroce_resp_read_stop(struct sroce_qp *qp)
{
	qp->resp.read_left = 0;
	qp->resp.read_waits = 0;
}

/* A request with a PSN before the expected one: answer it again. */
static void sroce_resp_duplicate(struct sroce_qp *qp, struct sk_buff *skb)
{
	u8 opcode = SROCE_PKT(skb)->opcode;
	u32 psn = SROCE_PKT(skb)->psn;
	struct sroce_res *res;

	if (SROCE_OP_BASE(opcode) == SROCE_RC_READ_REQ) {
		/*
		 * Answered again from memory (from its middle, if the
		 * requester asks so). A READ still being answered is later
		 * than this one: the requester sends it again too.
		 */
		res = sroce_resp_res_find(qp, psn);
		if (!res || res->kind != SROCE_RES_READ) {
			sroce_dbg_qp(qp, "psn %u: duplicate READ of no READ taken, ignored\n",
				     psn);
			return;
		}
		sroce_resp_read_stop(qp);
		sroce_resp_read(qp, skb, true);
		return;
	}
	if (sroce_opinfo[opcode].flags & SROCE_OP_ATOMIC) {
		/*
		 * Executed once; the value it fetched is sent again (ch. 9:
		 * a duplicate atomic is answered from the responder's
		 * resources, never executed again).
		 */
		res = sroce_resp_res_find(qp, psn);
		if (res && res->kind == SROCE_RES_ATOMIC)
			sroce_resp_atomic_ack(qp, psn, res->orig);
		else
			sroce_dbg_qp(qp, "psn %u: duplicate atomic of no atomic taken, ignored\n",
				     psn);
		return;
	}
	/*
	 * A SEND or WRITE: acknowledged again (C9-105), with what the
	 * responder has now; a burst sent again after a timeout gets one
	 * ACK per engine run, not one per packet.
	 */
	sroce_resp_ack_later(qp, (qp->resp.epsn - 1) & SROCE_PSN_MASK);
}

/*
 * A UD SEND: the receive buffer gets the 40-byte GRH area first (for IPv4
 * the IPv4 header in its last 20 bytes, as RoCE NICs do), then the payload.
 */
static void sroce_resp_ud(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);
	struct sroce_deth *deth = sroce_pkt_hdr(skb, SROCE_OP_DETH);
	const struct sroce_recv_wqe *rwqe;
	u32 flags = SROCE_WC_GRH, ex = 0;
	u8 grh[40] = {};
	int err;

	/*
	 * UD has no NAKs: a DETH Q_Key other than the QP's (ch. 9, Q_Key
	 * check), or no receive posted, drops the datagram.
	 */
	if (be32_to_cpu(deth->qkey) != qp->attr.qkey) {
		sroce_drop_qp(qp, SROCE_CNT_DROP_BAD_QKEY,
			      "datagram dropped: Q_Key %#x is not the QP's\n",
			      be32_to_cpu(deth->qkey));
		return;
	}
	if (!sroce_resp_take_rwqe(qp)) {
		sroce_drop_qp(qp, SROCE_CNT_DROP_NO_RWQE,
			      "datagram dropped: no receive WQE\n");
		return;
	}
	rwqe = qp->resp.rwqe;

	if (ip_hdr(skb)->version == 4)
		memcpy(grh + 20, skb_network_header(skb), sizeof(struct iphdr));
	else
		memcpy(grh, skb_network_header(skb), sizeof(struct ipv6hdr));
	err = rwqe->num_sge > sroce_resp_max_sge(qp) ? -EINVAL :
		sroce_resp_copy_sges(qp, (const void *)(rwqe + 1),
				     rwqe->num_sge, 0, grh, sizeof(grh));
	if (!err && pkt->paylen)
		err = sroce_resp_copy_sges(qp, (const void *)(rwqe + 1),
					   rwqe->num_sge, sizeof(grh),
					   sroce_pkt_payload(skb), pkt->paylen);
	if (err) {
		sroce_resp_complete(qp, err == -ERANGE ? IB_WC_LOC_LEN_ERR :
					IB_WC_LOC_PROT_ERR,
				    IB_WC_RECV, 0, 0, 0, false);
		return;
	}
	if (pkt->opcode == SROCE_UD_SEND_ONLY_IMM) {
		memcpy(&ex, sroce_pkt_hdr(skb, SROCE_OP_IMM), sizeof(ex));
		flags |= SROCE_WC_WITH_IMM;
	}
	sroce_resp_complete_ud(qp, skb, pkt->paylen + sizeof(grh), ex, flags);
}

/*
 * RC, a PSN other than the expected one: a duplicate is answered again,
 * a packet ahead (something was lost) is a PSN sequence error, one NAK
 * until the expected PSN comes (9.9.3).
 */
static void sroce_resp_psn_error(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);

	if (sroce_psn_before(SROCE_PKT(skb)->psn, qp->resp.epsn)) {
		sroce_count(sdev, SROCE_CNT_DUP_REQ);
		sroce_resp_duplicate(qp, skb);
		return;
	}
	sroce_count(sdev, SROCE_CNT_OUT_OF_SEQ_REQ);
	if (!qp->resp.nak_sent)
		sroce_resp_ack(qp, qp->resp.epsn,
			       SROCE_AETH_NAK | SROCE_NAK_PSN_SEQ);
	else
		sroce_dbg_qp(qp, "psn %u (expected %u) dropped: NAK sent\n",
			     SROCE_PKT(skb)->psn, qp->resp.epsn);
	qp->resp.nak_sent = true;
}

/*
 * An XRC target: find the SRQ the packet's XRCETH names, which must be in
 * the QP's XRC domain and, within a message, stay the same (IBTA vol 1
 * annex A14, XRC). It is held (resp.srq) until the packet is processed.
 */
static bool sroce_resp_xrc_srq_hold(struct sroce_qp *qp, u32 srqn)
{
	struct sroce_srq *srq;

	srq = sroce_xrc_srq_get(to_sdev(qp->ibqp.device), srqn);
	if (!srq)
		return false;
	/* ib_core set the XRC domain of the target QP it created. */
	if (srq->ibsrq.ext.xrc.xrcd != qp->ibqp.xrcd) {
		sroce_srq_put(srq);
		return false;
	}
	qp->resp.srq = srq;
	qp->resp.xrc_srqn = srqn;
	return true;
}

static bool sroce_resp_xrc_srq(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_xrceth *x = sroce_pkt_hdr(skb, SROCE_OP_XRCETH);
	u32 srqn = be32_to_cpu(x->srqn) & SROCE_QPN_MASK;

	if (qp->resp.rwqe_valid && srqn != qp->resp.xrc_srqn)
		return false;
	return sroce_resp_xrc_srq_hold(qp, srqn);
}

/* Let go of the SRQ an XRC target held for a packet. */
static void sroce_resp_xrc_srq_put(struct sroce_qp *qp)
{
	sroce_srq_put(qp->resp.srq);
	qp->resp.srq = NULL;
}

/* Abandon the message in progress (UC after a PSN gap, or errors). */
static void sroce_resp_abort_msg(struct sroce_qp *qp)
{
	qp->resp.opcode = -1;
	qp->resp.offset = 0;
}

/*
 * Does @opcode continue (or legally start) the message in progress? A
 * middle or last packet continues a SEND or WRITE of its kind, a first or
 * only packet needs none in progress: otherwise an invalid request (RC,
 * class C) or the message dropped (UC, class D1) (9.9.3).
 */
static bool sroce_resp_in_sequence(struct sroce_qp *qp, u32 flags)
{
	u32 kind = SROCE_OP_SEND | SROCE_OP_WRITE;
	u32 prev;

	if (qp->resp.opcode < 0)
		return flags & SROCE_OP_FIRST;
	prev = sroce_opinfo[qp->resp.opcode].flags;
	return !(flags & SROCE_OP_FIRST) && (flags & kind) == (prev & kind);
}

static void sroce_resp_result(struct sroce_qp *qp, struct sk_buff *skb,
			      enum sroce_resp_result res)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);
	bool rc = sroce_qp_is_reliable(qp);
	u8 nak;

	switch (res) {
	case SROCE_RESP_OK:
		qp->resp.epsn = (pkt->psn + 1) & SROCE_PSN_MASK;
		if (sroce_opinfo[pkt->opcode].flags & SROCE_OP_LAST) {
			qp->resp.msn++;
			qp->resp.opcode = -1;
			qp->resp.offset = 0;
		} else {
			qp->resp.opcode = pkt->opcode;
		}
		if (rc && (be32_to_cpu(((struct sroce_bth *)skb->data)->apsn) &
			   SROCE_BTH_ACKREQ))
			sroce_resp_ack_later(qp, pkt->psn);
		return;
	case SROCE_RESP_DONE:
		qp->resp.opcode = -1;
		return;
	case SROCE_RESP_DROP:
		/* UC: a message with no receive WQE for it (IBTA 9.9.3) */
		sroce_drop_qp(qp, SROCE_CNT_DROP_NO_RWQE,
			      "psn %u: UC message dropped: no receive WQE\n",
			      pkt->psn);
		sroce_resp_abort_msg(qp);
		return;
	case SROCE_RESP_RNR:
	case SROCE_RESP_RNR_PAGE:
		sroce_resp_ack(qp, pkt->psn,
			       SROCE_AETH_RNR_NAK | qp->attr.min_rnr_timer);
		if (res == SROCE_RESP_RNR_PAGE)
			sroce_count(to_sdev(qp->ibqp.device),
				    SROCE_CNT_ODP_RNR_NAK_SENT);
		/*
		 * Then wait quietly for the packet to come again (ch. 9,
		 * RNR NAK: the responder waits for a request with the
		 * expected PSN, and sends no other NAK before it): the
		 * packets sent after it are dropped without the sequence
		 * NAK that would make the requester go back at once, a
		 * retry spent, rather than after its RNR timer, on every
		 * round; so a receive WQE or a page that takes many RNR
		 * timers to come fails nothing.
		 */
		qp->resp.nak_sent = true;
		return;
	case SROCE_RESP_NAK_INV:
	case SROCE_RESP_NAK_LEN:
		nak = SROCE_NAK_INVALID_REQ;
		break;
	case SROCE_RESP_NAK_ACCESS:
		nak = SROCE_NAK_REM_ACCESS;
		break;
	default:
		nak = SROCE_NAK_REM_OP;
		break;
	}
	sroce_resp_abort_msg(qp);
	/*
	 * UC has no NAKs: a request the responder cannot take (a bad R_Key
	 * or access, a malformed message) drops the message and the QP goes
	 * on (IBTA 9.9.3, class D and E errors: silently dropped), so that
	 * one stray packet cannot break the connection. A receive WQE that
	 * failed (completed in error) still moves the QP to error.
	 */
	if (!rc && (res == SROCE_RESP_NAK_INV ||
		    res == SROCE_RESP_NAK_ACCESS)) {
		sroce_drop_qp(qp, SROCE_CNT_DROP_UC_MSG,
			      "psn %u: UC message dropped: %s\n", pkt->psn,
			      res == SROCE_RESP_NAK_INV ? "invalid request" :
			      "remote access error");
		return;
	}
	/* Class C errors: NAK, then the responder's QP is in error. */
	if (rc)
		sroce_resp_ack(qp, pkt->psn, SROCE_AETH_NAK | nak);
	sroce_qp_error(qp);
}

/* RC and UC (and XRC, with resp.srq set): a request in a connection. */
static void sroce_resp_rc(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);
	u32 flags = sroce_opinfo[pkt->opcode].flags;
	enum sroce_resp_result res;

	if (pkt->psn != qp->resp.epsn) {
		if (qp->ibqp.qp_type != IB_QPT_UC) {
			sroce_resp_psn_error(qp, skb);
			return;
		}
		/* UC: drop the broken message, resync on a first packet. */
		sroce_resp_abort_msg(qp);
		if (!(flags & SROCE_OP_FIRST)) {
			sroce_drop_qp(qp, SROCE_CNT_DROP_UC_MSG,
				      "psn %u (expected %u): UC message dropped\n",
				      pkt->psn, qp->resp.epsn);
			return;
		}
		qp->resp.epsn = pkt->psn;
	}
	qp->resp.nak_sent = false;

	if (!sroce_resp_in_sequence(qp, flags)) {
		if (qp->ibqp.qp_type == IB_QPT_UC) {
			sroce_drop_qp(qp, SROCE_CNT_DROP_UC_MSG,
				      "psn %u: UC opcode %#x out of sequence, message dropped\n",
				      pkt->psn, pkt->opcode);
			sroce_resp_abort_msg(qp);
			return;
		}
		sroce_resp_result(qp, skb, SROCE_RESP_NAK_INV);
		return;
	}

	if (flags & SROCE_OP_SEND)
		res = sroce_resp_send(qp, skb);
	else if (flags & SROCE_OP_WRITE)
		res = sroce_resp_write(qp, skb);
	else if (flags & SROCE_OP_READ)
		res = sroce_resp_read(qp, skb, false);
	else
		res = sroce_resp_atomic(qp, skb);
	sroce_resp_result(qp, skb, res);
}

/**
 * sroce_resp_rcv - a request packet arrived
 * @qp: the QP, its lock held
 * @skb: the packet (the caller frees it)
 */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);

	lockdep_assert_held(&qp->lock);
	/*
	 * Requests are taken from RTR on (ch. 10, QP states), only with the
	 * QP's transport in the opcode (ch. 9, header checks), and only by a
	 * QP with a responder (not an XRC initiator): others drop.
	 */
	switch (qp->attr.qp_state) {
	case IB_QPS_RTR:
	case IB_QPS_RTS:
	case IB_QPS_SQD:
	case IB_QPS_SQE:
		break;
	default:
		sroce_drop_qp(qp, SROCE_CNT_DROP_QP_STATE,
			      "request psn %u dropped: QP state %d\n",
			      pkt->psn, qp->attr.qp_state);
		return;
	}
	if (SROCE_OP_TRANSPORT(pkt->opcode) != sroce_qp_transport(qp) ||
	    !sroce_qp_takes_requests(qp)) {
		sroce_drop_qp(qp, SROCE_CNT_DROP_QP_STATE,
			      "request psn %u dropped: opcode %#x not for this QP type\n",
			      pkt->psn, pkt->opcode);
		return;
	}
	if (sroce_qp_is_ud(qp)) {
		sroce_resp_ud(qp, skb);
		return;
	}
	if (qp->ibqp.qp_type != IB_QPT_XRC_TGT) {
		sroce_resp_rc(qp, skb);
		return;
	}
	/*
	 * An XRCETH naming no SRQ of the QP's domain: an invalid request if
	 * it is the one expected; else dropped, as a packet to no receive
	 * queue (without an SRQ there is no PD to answer a READ in).
	 */
	if (!sroce_resp_xrc_srq(qp, skb)) {
		sroce_dbg_qp(qp, "psn %u: no XRC SRQ of the QP's domain\n",
			     pkt->psn);
		if (pkt->psn == qp->resp.epsn)
			sroce_resp_result(qp, skb, SROCE_RESP_NAK_INV);
		else
			sroce_count(to_sdev(qp->ibqp.device),
				    SROCE_CNT_DROP_NO_QP);
		return;
	}
	sroce_resp_rc(qp, skb);
	sroce_resp_xrc_srq_put(qp);
}

/**
 * sroce_resp_continue - continue a READ's responses
 * @qp: the QP, its lock held
 *
 * An XRC target's READ is answered in its SRQ's PD: the SRQ is found again
 * by the number its request named, as each packet finds its key again, and
 * the READ fails if it is gone. Nothing is held between runs.
 * Return: true when none are left. Otherwise the engine runs again by
 * itself: at once when the budget of responses is spent or no memory
 * was left for a response, or when qp->timer fires for a READ waiting for
 * its memory
 * (sroce_resp_read_wait()), which only the timer's run tries again.
 */
bool sroce_resp_continue(struct sroce_qp *qp)
{
	bool done;

	lockdep_assert_held(&qp->lock);
	if (!qp->resp.read_left)
		return true;
	if (qp->resp.read_waits && timer_pending(&qp->timer))
		return false;
	if (qp->ibqp.qp_type != IB_QPT_XRC_TGT) {
		done = sroce_resp_read_more(qp);
	} else if (sroce_resp_xrc_srq_hold(qp, qp->resp.xrc_srqn)) {
		done = sroce_resp_read_more(qp);
		sroce_resp_xrc_srq_put(qp);
	} else {
		sroce_resp_read_fail(qp);
		return true;
	}
	if (!done && !qp->resp.read_waits)
		sroce_task_sched(qp);
	return done;
}

/*
 * Drop everything in progress (the QP goes to RESET or error). A receive
 * WQE taken for a message in progress stays in resp.rwqe: in error it is
 * flushed with the others (an SRQ's WQE would otherwise be lost); going to
 * RESET drops it (sroce_qp_reset()).
 */
void sroce_resp_reset(struct sroce_qp *qp)
{
	sroce_resp_abort_msg(qp);
	sroce_resp_read_stop(qp);
	qp->resp.nak_sent = false;
	qp->resp.ack_owed = false;
	qp->resp.acks_held = 0;
	memset(qp->resp.res, 0, sizeof(qp->resp.res));
	sroce_ahead_reset(&qp->resp.write_ahead);
	sroce_ahead_reset(&qp->resp.read_ahead);
}
