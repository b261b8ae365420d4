// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: completion queues.
 *
 * A CQ is a ring of struct sroce_cqe shared with the application: the kernel
 * produces, the provider consumes (ibv_poll_cq) and arms notification
 * (ibv_req_notify_cq) without entering the kernel.
 */
#include <linux/log2.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

/* Slots for a CQ of at least @cqe entries; indices may run a full ring. */
static u32 sroce_cq_slots(int cqe)
{
	return roundup_pow_of_two(cqe);
}

static int sroce_cq_copy_resp(struct sroce_cq *cq, struct ib_udata *udata)
{
	struct sroce_create_cq_resp resp = {};

	sroce_ring_geom(&cq->ring, &resp.ring);
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_ucontext *uctx;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	/* Kernel consumers poll through ops.poll_cq, which comes with QPs. */
	if (!udata)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (atomic_inc_return(&sdev->num_cq) > SROCE_MAX_CQ) {
		err = -ENOMEM;
		goto err_count;
	}

	uctx = rdma_udata_to_drv_context(udata, struct sroce_ucontext, ibuc);
	spin_lock_init(&cq->lock);
	cq->prod = 0;
	err = sroce_ring_init(&cq->ring, &uctx->ibuc,
			      sroce_cq_slots(attr->cqe),
			      sizeof(struct sroce_cqe));
	if (err)
		goto err_count;

	err = sroce_cq_copy_resp(cq, udata);
	if (err)
		goto err_ring;
	ibcq->cqe = cq->ring.num_slots;
	return 0;

err_ring:
	sroce_ring_release(&cq->ring);
err_count:
	atomic_dec(&sdev->num_cq);
	return err;
}

int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);

	sroce_ring_release(&cq->ring);
	atomic_dec(&to_sdev(ibcq->device)->num_cq);
	return 0;
}

/*
 * Entries the consumer has not taken yet, or -EIO if the consumer index it
 * published is not one it could have reached.
 */
static int sroce_cq_pending(struct sroce_cq *cq)
{
	u32 cons = sroce_ring_load_cons(&cq->ring);
	u32 pending = cq->prod - cons;

	if (pending > cq->ring.num_slots)
		return -EIO;
	return pending;
}

/**
 * sroce_resize_cq - give a CQ a ring of another size
 * @ibcq: the CQ
 * @cqe: the new minimum number of entries
 * @udata: the new ring's geometry goes back here
 *
 * Entries not yet polled move to the new ring, which the provider maps in
 * place of the old one while it holds the CQ (no concurrent poll). Fails
 * with -EINVAL if they would not fit.
 */
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_ring new_ring, old_ring;
	struct sroce_ucontext *uctx;
	int pending, err;
	u32 cons, i;

	if (cqe < 1 || cqe > SROCE_MAX_CQE)
		return -EINVAL;
	uctx = rdma_udata_to_drv_context(udata, struct sroce_ucontext, ibuc);
	err = sroce_ring_init(&new_ring, &uctx->ibuc, sroce_cq_slots(cqe),
			      sizeof(struct sroce_cqe));
	if (err)
		return err;

	spin_lock_irq(&cq->lock);
	pending = sroce_cq_pending(cq);
	if (pending < 0 || pending > new_ring.num_slots) {
		spin_unlock_irq(&cq->lock);
		sroce_ring_release(&new_ring);
		return pending < 0 ? pending : -EINVAL;
	}
	cons = cq->prod - pending;
	for (i = 0; i < pending; i++)
		memcpy(sroce_ring_slot(&new_ring, i),
		       sroce_ring_slot(&cq->ring, cons + i),
		       sizeof(struct sroce_cqe));
	new_ring.hdr->prod = pending;
	new_ring.hdr->notify = READ_ONCE(cq->ring.hdr->notify);
	old_ring = cq->ring;
	cq->ring = new_ring;
	cq->prod = pending;
	spin_unlock_irq(&cq->lock);

	err = sroce_cq_copy_resp(cq, udata);
	sroce_ring_release(&old_ring);
	if (err)
		return err;
	ibcq->cqe = cq->ring.num_slots;
	return 0;
}

/**
 * sroce_cq_post - add a completion to a CQ
 * @cq: the CQ
 * @cqe: the completion
 * @solicited: the completion is for a solicited event
 *
 * Raises the completion event if the consumer asked for it. A full CQ (or
 * one whose consumer index is corrupt) is in error: the completion is lost,
 * IB_EVENT_CQ_ERR is reported and -ENOSPC returned.
 */
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited)
{
	struct sroce_ring_hdr *hdr;
	unsigned long flags;
	bool event = false;
	u32 notify;
	int pending;

	spin_lock_irqsave(&cq->lock, flags);
	pending = sroce_cq_pending(cq);
	if (pending < 0 || pending >= cq->ring.num_slots) {
		spin_unlock_irqrestore(&cq->lock, flags);
		if (cq->ibcq.event_handler) {
			struct ib_event ev = {
				.device = cq->ibcq.device,
				.event = IB_EVENT_CQ_ERR,
				.element.cq = &cq->ibcq,
			};

			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		return -ENOSPC;
	}
	hdr = cq->ring.hdr;
	memcpy(sroce_ring_slot(&cq->ring, cq->prod), cqe, sizeof(*cqe));
	cq->prod++;
	/* Publish the entry, then look at the request to be notified. */
	sroce_ring_store_prod(&cq->ring, cq->prod);
	smp_mb(); /* pairs with the consumer's arm-then-poll */
	notify = READ_ONCE(hdr->notify);
	if (notify == SROCE_CQ_NOTIFY_NEXT ||
	    (notify == SROCE_CQ_NOTIFY_SOLICITED && solicited))
		event = cmpxchg(&hdr->notify, notify,
				SROCE_CQ_NOTIFY_NONE) == notify;
	spin_unlock_irqrestore(&cq->lock, flags);

	if (event && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}
