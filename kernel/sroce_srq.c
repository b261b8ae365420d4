// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: shared receive queues - a ring of receive WQEs shared with the
 * provider, from which every QP attached to it takes WQEs.
 */
#include <linux/log2.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce_loc.h"
#include "sroce.h"

/* Bytes of a receive slot: the header, then the SGEs. */
u32 sroce_recv_slot_size(u32 max_sge)
{
	return roundup_pow_of_two(sizeof(struct sroce_recv_wqe) +
				  max_sge * sizeof(struct sroce_sge));
}

/* Fill the receive slot @prod of a kernel ring from @wr. */
static int sroce_post_recv_wqe(struct sroce_ring *ring, u32 max_sge,
			       const struct ib_recv_wr *wr, u32 prod)
{
	struct sroce_recv_wqe *wqe;
	struct sroce_sge *sge;
	int i;

	if (prod - sroce_ring_load_cons(ring) >= ring->num_slots)
		return -ENOMEM;
	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	wqe = sroce_ring_slot(ring, prod);
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	sge = (struct sroce_sge *)(wqe + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

/**
 * sroce_post_recv_wrs - post a kernel consumer's receive WRs into a ring
 * @ring: an RQ or SRQ ring in kernel memory, its producers' lock held
 * @max_sge: SGEs a WQE may have
 * @wr: the list of WRs
 * @bad_wr: set to the first WR not posted, on error
 *
 * Each WR is published as soon as it is written.
 * Return: 0, -ENOMEM if the ring is full, -EINVAL for too many SGEs.
 */
int sroce_post_recv_wrs(struct sroce_ring *ring, u32 max_sge,
			const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	u32 prod = ring->hdr->prod;
	int err;

	for (; wr; wr = wr->next) {
		err = sroce_post_recv_wqe(ring, max_sge, wr, prod);
		if (err) {
			*bad_wr = wr;
			return err;
		}
		sroce_ring_store_prod(ring, ++prod);
	}
	return 0;
}

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct sroce_create_srq_resp resp = {};
	struct ib_ucontext *uctx = NULL;
	u32 slot;
	int err;

	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	if (udata) {
		if (udata->outlen < sizeof(resp))
			return -EINVAL;
		uctx = &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						  ibuc)->ibuc;
	}
	if (!init->attr.max_wr || init->attr.max_wr > SROCE_MAX_SRQ_WR ||
	    init->attr.max_sge > SROCE_MAX_SGE)
		return -EINVAL;
	if (atomic_inc_return(&sdev->num_srq) > SROCE_MAX_SRQ) {
		err = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&srq->lock);
	slot = sroce_recv_slot_size(max(init->attr.max_sge, 1U));
	/* Charged before it is made, refused past a bound (sroce_kmem.c). */
	sroce_kmem_start(&srq->kmem, sroce_udata_kmem_user(udata));
	err = sroce_kmem_add(sdev, &srq->kmem,
			     sroce_ring_bytes(roundup_pow_of_two(init->attr.max_wr),
					      slot));
	if (err)
		goto err_kmem;
	err = sroce_ring_init(&srq->ring, uctx,
			      roundup_pow_of_two(init->attr.max_wr), slot,
			      uctx ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	if (err)
		goto err_kmem;
	srq->cons = 0;
	srq->limit = 0;
	srq->max_sge = min_t(u32, SROCE_MAX_SGE,
			     (slot - sizeof(struct sroce_recv_wqe)) /
				     sizeof(struct sroce_sge));
	init->attr.max_wr = srq->ring.num_slots;
	init->attr.max_sge = srq->max_sge;
	refcount_set(&srq->ref, 1);
	init_completion(&srq->released);

	if (udata) {
		sroce_ring_geom(&srq->ring, &resp.ring);
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_ring;
	}
	/*
	 * Last: XRC senders name it by number, and from here packets find it
	 * (only destroy, which waits for them, takes it away again).
	 */
	if (init->srq_type == IB_SRQT_XRC) {
		err = xa_alloc_cyclic_irq(&sdev->srq_xa,
					  &ibsrq->ext.xrc.srq_num, srq,
					  XA_LIMIT(1, SROCE_QPN_MASK),
					  &sdev->srq_next, GFP_KERNEL);
		if (err < 0)
			goto err_ring;
	}
	return 0;

err_ring:
	sroce_ring_release(&srq->ring);
err_kmem:
	sroce_kmem_end(sdev, &srq->kmem);
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

	if (ibsrq->srq_type == IB_SRQT_XRC) {
		/* No XRC packet finds it now; wait for those that did. */
		xa_erase_irq(&to_sdev(ibsrq->device)->srq_xa,
			     ibsrq->ext.xrc.srq_num);
		sroce_srq_put(srq);
		wait_for_completion(&srq->released);
	}
	sroce_ring_release(&srq->ring);
	sroce_kmem_end(to_sdev(ibsrq->device), &srq->kmem);
	atomic_dec(&to_sdev(ibsrq->device)->num_srq);
	return 0;
}

/**
 * sroce_post_srq_recv - a kernel consumer posts receive WRs to its SRQ
 * @ibsrq: the SRQ
 * @wr: the list of WRs
 * @bad_wr: set to the first WR not posted, on error
 *
 * Any context.
 *
 * Return: 0, -ENOMEM when the SRQ is full, -EINVAL for a user SRQ or a WR
 * with too many SGEs.
 */
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;
	int err;

	if (srq->ring.mmap) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	err = sroce_post_recv_wrs(&srq->ring, srq->max_sge, wr, bad_wr);
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

/**
 * sroce_srq_take - take the next receive WQE of an SRQ
 * @srq: the SRQ
 * @wqe: where the WQE is copied (the SRQ's slot size)
 *
 * Disarms the limit and raises IB_EVENT_SRQ_LIMIT_REACHED when fewer WQEs
 * than the limit remain.
 *
 * Return: true with the WQE copied to @wqe; false if the SRQ is empty (or
 * its producer index is corrupt).
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

/**
 * sroce_xrc_srq_get - the XRC SRQ an XRCETH names
 * @sdev: the device
 * @srqn: the SRQ number
 *
 * Return: the SRQ with a reference held (sroce_srq_put() it soon: the
 * SRQ's destruction waits for it), or NULL.
 */
struct sroce_srq *sroce_xrc_srq_get(struct sroce_dev *sdev, u32 srqn)
{
	struct sroce_srq *srq;
	unsigned long flags;

	xa_lock_irqsave(&sdev->srq_xa, flags);
	srq = xa_load(&sdev->srq_xa, srqn);
	if (srq && !refcount_inc_not_zero(&srq->ref))
		srq = NULL;
	xa_unlock_irqrestore(&sdev->srq_xa, flags);
	return srq;
}

void sroce_srq_put(struct sroce_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->released);
}
