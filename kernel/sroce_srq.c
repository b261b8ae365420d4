// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: shared receive queues - a ring of receive WQEs shared with the
 * provider, from which every QP attached to it takes WQEs.
 */
#include <linux/log2.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

/* Bytes of a receive slot: the header, then the SGEs. */
u32 sroce_recv_slot_size(u32 max_sge)
{
	return roundup_pow_of_two(sizeof(struct sroce_recv_wqe) +
				  max_sge * sizeof(struct sroce_sge));
}

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct sroce_create_srq_resp resp = {};
	struct sroce_ucontext *uctx;
	u32 slot;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	/* Kernel consumers post through ops.post_srq_recv: not yet. */
	if (!udata)
		return -EOPNOTSUPP;
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	if (!init->attr.max_wr || init->attr.max_wr > SROCE_MAX_SRQ_WR ||
	    init->attr.max_sge > SROCE_MAX_SGE)
		return -EINVAL;
	if (atomic_inc_return(&sdev->num_srq) > SROCE_MAX_SRQ) {
		err = -ENOMEM;
		goto err_count;
	}

	uctx = rdma_udata_to_drv_context(udata, struct sroce_ucontext, ibuc);
	spin_lock_init(&srq->lock);
	slot = sroce_recv_slot_size(max(init->attr.max_sge, 1U));
	err = sroce_ring_init(&srq->ring, &uctx->ibuc,
			      roundup_pow_of_two(init->attr.max_wr), slot);
	if (err)
		goto err_count;
	srq->cons = 0;
	srq->limit = 0;
	srq->max_sge = min_t(u32, SROCE_MAX_SGE,
			     (slot - sizeof(struct sroce_recv_wqe)) /
				     sizeof(struct sroce_sge));
	init->attr.max_wr = srq->ring.num_slots;
	init->attr.max_sge = srq->max_sge;

	sroce_ring_geom(&srq->ring, &resp.ring);
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err_ring;
	return 0;

err_ring:
	sroce_ring_release(&srq->ring);
err_count:
	atomic_dec(&sdev->num_srq);
	return err;
}

int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	/* Resizing an SRQ is not supported. */
	if (mask & IB_SRQ_MAX_WR)
		return -EINVAL;
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->ring.num_slots)
			return -EINVAL;
		spin_lock_irq(&srq->lock);
		srq->limit = attr->srq_limit;
		spin_unlock_irq(&srq->lock);
	}
	return 0;
}

int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->ring.num_slots;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	sroce_ring_release(&srq->ring);
	atomic_dec(&to_sdev(ibsrq->device)->num_srq);
	return 0;
}

/**
 * sroce_srq_take - take the next receive WQE of an SRQ
 * @srq: the SRQ
 * @wqe: where the WQE is copied (the SRQ's slot size)
 *
 * Disarms the limit and raises IB_EVENT_SRQ_LIMIT_REACHED when fewer WQEs
 * than the limit remain. Return: false if the SRQ is empty.
 */
bool sroce_srq_take(struct sroce_srq *srq, void *wqe)
{
	bool event = false;
	unsigned long flags;
	u32 prod, left;

	spin_lock_irqsave(&srq->lock, flags);
	prod = sroce_ring_load_prod(&srq->ring);
	if (prod == srq->cons || prod - srq->cons > srq->ring.num_slots) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return false;
	}
	memcpy(wqe, sroce_ring_slot(&srq->ring, srq->cons),
	       srq->ring.slot_size);
	srq->cons++;
	sroce_ring_store_cons(&srq->ring, srq->cons);
	left = prod - srq->cons;
	if (srq->limit && left < srq->limit) {
		srq->limit = 0;
		event = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (event && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
			.element.srq = &srq->ibsrq,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return true;
}
