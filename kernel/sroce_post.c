// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: kernel consumers' posts (ops.post_send, ops.post_recv), the
 * kernel twin of the provider's post path (userspace/qp.cpp).
 *
 * Kernel consumers post into the same rings the provider fills for user
 * QPs, so the engine does not know the difference. Their SGE addresses are
 * kernel virtual addresses (the device uses virtual DMA).
 */
#include "sroce_loc.h"
#include "sroce_task.h"
#include "sroce.h"

/* Fill the send slot @prod from @wr. */
static int sroce_post_one_send(struct sroce_qp *qp, const struct ib_send_wr *wr,
			       u32 prod)
{
	struct sroce_send_wqe *wqe = sroce_ring_slot(&qp->sq, prod);
	u32 room = qp->sq.slot_size - sizeof(*wqe);
	void *data = wqe + 1;
	int i;

	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
	case IB_WR_REG_MR:
	case IB_WR_LOCAL_INV:
		break;
	default:
		return -EINVAL;
	}
	if (wr->num_sge < 0)
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags & (IB_SEND_FENCE | IB_SEND_SIGNALED |
					    IB_SEND_SOLICITED | IB_SEND_INLINE);
	/*
	 * Local operations. The ring is kernel memory, so a REG_MR WQE may
	 * carry the MR's address; the requester takes such WQEs from kernel
	 * QPs only.
	 */
	if (wr->opcode == IB_WR_REG_MR) {
		const struct ib_reg_wr *reg = reg_wr(wr);

		wqe->wr.rdma.remote_addr = (uintptr_t)reg->mr;
		wqe->wr.rdma.rkey = reg->key;
		wqe->ex = reg->access;
		return 0;
	}
	if (wr->opcode == IB_WR_LOCAL_INV) {
		wqe->ex = wr->ex.invalidate_rkey;
		return 0;
	}
	if (wr->opcode == IB_WR_SEND_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
		wqe->ex = (__force u32)wr->ex.imm_data;
	else if (wr->opcode == IB_WR_SEND_WITH_INV)
		wqe->ex = wr->ex.invalidate_rkey;

	if (sroce_qp_is_ud(qp)) {
		const struct ib_ud_wr *ud = ud_wr(wr);

		wqe->wr.ud.ah_num = to_sah(ud->ah)->ah_num;
		wqe->wr.ud.remote_qpn = ud->remote_qpn;
		wqe->wr.ud.remote_qkey = ud->remote_qkey;
	} else if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		const struct ib_atomic_wr *at = atomic_wr(wr);

		wqe->wr.atomic.remote_addr = at->remote_addr;
		wqe->wr.atomic.compare_add = at->compare_add;
		wqe->wr.atomic.swap = at->swap;
		wqe->wr.atomic.rkey = at->rkey;
	} else if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM &&
		   wr->opcode != IB_WR_SEND_WITH_INV) {
		wqe->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->wr.rdma.rkey = rdma_wr(wr)->rkey;
	}

	if (!(wr->send_flags & IB_SEND_INLINE)) {
		if (wr->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		wqe->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			struct sroce_sge *sge = data;

			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
		return 0;
	}
	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > min(room, qp->cap.max_inline_data) - wqe->inline_len)
			return -EINVAL;
		memcpy(data + wqe->inline_len,
		       (void *)(uintptr_t)wr->sg_list[i].addr, n);
		wqe->inline_len += n;
	}
	return 0;
}

/**
 * sroce_post_send - a kernel consumer posts send work requests
 * @ibqp: the QP
 * @wr: the list of WRs
 * @bad_wr: set to the first WR not posted, on error
 *
 * Any context.
 *
 * Return: 0; -EINVAL for a user QP, a QP that cannot send yet, or a bad
 * WR; -ENOMEM when the send queue is full.
 */
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	u32 prod, cons;
	int err = 0;

	spin_lock_irqsave(&qp->post_lock, flags);
	/* A user QP's rings are the provider's to fill. */
	if (qp->sq.mmap) {
		err = -EINVAL;
		goto out;
	}
	switch (READ_ONCE(qp->sq.hdr->qp_state)) {
	case IB_QPS_RTS:
	case IB_QPS_SQD:
	case IB_QPS_SQE:
	case IB_QPS_ERR:	/* flushed */
		break;
	default:
		err = -EINVAL;
		goto out;
	}
	prod = qp->sq.hdr->prod;
	for (; wr; wr = wr->next) {
		cons = sroce_ring_load_cons(&qp->sq);
		if (prod - cons >= qp->sq.num_slots) {
			err = -ENOMEM;
			break;
		}
		err = sroce_post_one_send(qp, wr, prod);
		if (err)
			break;
		prod++;
		sroce_ring_store_prod(&qp->sq, prod);
	}
out:
	spin_unlock_irqrestore(&qp->post_lock, flags);
	if (err)
		*bad_wr = wr;
	sroce_task_sched(qp);
	return err;
}

/**
 * sroce_post_recv - a kernel consumer posts receive work requests
 * @ibqp: the QP (not one with an SRQ)
 * @wr: the list of WRs
 * @bad_wr: set to the first WR not posted, on error
 *
 * Any context.
 *
 * Return: 0; -EINVAL for a user QP, a QP in RESET or with an SRQ, or a WR
 * with too many SGEs; -ENOMEM when the receive queue is full.
 */
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	int err;

	if (!qp->rq.hdr || qp->rq.mmap ||
	    READ_ONCE(qp->sq.hdr->qp_state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->post_lock, flags);
	err = sroce_post_recv_wrs(&qp->rq, qp->cap.max_recv_sge, wr, bad_wr);
	spin_unlock_irqrestore(&qp->post_lock, flags);
	/* A QP in error flushes what was posted. */
	if (READ_ONCE(qp->rq.hdr->flush))
		sroce_task_sched(qp);
	return err;
}
