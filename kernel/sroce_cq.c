// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: completion queues.
 *
 * A CQ is a ring of struct sroce_cqe shared with the application: the kernel
 * produces, the provider consumes (ibv_poll_cq) and arms notification
 * (ibv_req_notify_cq) without entering the kernel. A kernel consumer's CQ
 * is the same ring in kernel memory, consumed by ops.poll_cq and armed by
 * ops.req_notify_cq.
 */
#include <linux/log2.h>
#include <linux/etherdevice.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce_loc.h"
#include "sroce.h"

/* A ring slot's size is ABI: the provider maps the ring by it. */
static_assert(sizeof(struct sroce_cqe) == 64);

/* Slots for a CQ of at least @cqe entries; indices may run a full ring. */
static u32 sroce_cq_slots(int cqe)
{
	return roundup_pow_of_two(cqe);
}

static int sroce_cq_copy_resp(const struct sroce_ring *ring,
			      struct ib_udata *udata)
{
	struct sroce_create_cq_resp resp = {};

	if (!udata)
		return 0;
	sroce_ring_geom(ring, &resp.ring);
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/*
 * A ring of at least @cqe entries: mapped by the user context of @udata, or
 * a kernel ring with its slot -> QP array when @udata is NULL.
 */
static int sroce_cq_ring_init(struct sroce_cq *cq, struct ib_udata *udata,
			      int cqe, struct sroce_ring *ring,
			      struct ib_qp ***kqp)
{
	struct sroce_ucontext *uctx;
	int err;

	if (udata) {
		uctx = rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						 ibuc);
		return sroce_ring_init(ring, &uctx->ibuc, sroce_cq_slots(cqe),
				       sizeof(struct sroce_cqe),
				       GFP_KERNEL_ACCOUNT);
	}
	err = sroce_ring_init(ring, NULL, sroce_cq_slots(cqe),
			      sizeof(struct sroce_cqe), GFP_KERNEL);
	if (err)
		return err;
	*kqp = kvcalloc(ring->num_slots, sizeof(**kqp), GFP_KERNEL);
	if (!*kqp) {
		sroce_ring_release(ring);
		return -ENOMEM;
	}
	return 0;
}

/* A ring of @cqe entries' memory, with a kernel CQ's array of QPs. */
static size_t sroce_cq_bytes(int cqe, struct ib_udata *udata)
{
	return sroce_ring_bytes(sroce_cq_slots(cqe), sizeof(struct sroce_cqe)) +
	       (udata ? 0 : array_size(sroce_cq_slots(cqe),
				       sizeof(struct ib_qp *)));
}

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (atomic_inc_return(&sdev->num_cq) > SROCE_MAX_CQ) {
		err = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&cq->lock);
	cq->prod = 0;
	cq->kcons = 0;
	cq->kqp = NULL;
	/* Charged before it is made, refused past a bound (sroce_kmem.c). */
	sroce_kmem_start(&cq->kmem, sroce_udata_kmem_user(udata));
	err = sroce_kmem_add(sdev, &cq->kmem, sroce_cq_bytes(attr->cqe, udata));
	if (err)
		goto err_kmem;
	err = sroce_cq_ring_init(cq, udata, attr->cqe, &cq->ring, &cq->kqp);
	if (err)
		goto err_kmem;

	err = sroce_cq_copy_resp(&cq->ring, udata);
	if (err)
		goto err_ring;
	ibcq->cqe = cq->ring.num_slots;
	return 0;

err_ring:
	kvfree(cq->kqp);
	sroce_ring_release(&cq->ring);
err_kmem:
	sroce_kmem_end(sdev, &cq->kmem);
err_count:
	atomic_dec(&sdev->num_cq);
	return err;
}

int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);

	kvfree(cq->kqp);
	sroce_ring_release(&cq->ring);
	sroce_kmem_end(to_sdev(ibcq->device), &cq->kmem);
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
 * place of the old one while it holds the CQ (no concurrent poll). The new
 * ring's geometry goes to @udata before the CQ moves: a CQ whose resize
 * fails stays on the ring its provider has mapped.
 *
 * Return: 0; -EINVAL for @cqe out of [1, SROCE_MAX_CQE], when the entries
 * not yet polled would not fit, or when @udata has no room for the new
 * ring's geometry; -EFAULT when the geometry cannot be copied there; -EIO
 * when the CQ's consumer index is corrupt; -ENOMEM without memory for the
 * new ring.
 */
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_ring new_ring, old_ring;
	struct ib_qp **new_kqp = NULL, **old_kqp;
	int pending, err;
	u32 cons, i;

	if (cqe < 1 || cqe > SROCE_MAX_CQE)
		return -EINVAL;
	err = sroce_kmem_add(sdev, &cq->kmem, sroce_cq_bytes(cqe, udata));
	if (err)
		return err;
	err = sroce_cq_ring_init(cq, udata, cqe, &new_ring, &new_kqp);
	if (err)
		goto err_kmem;
	err = sroce_cq_copy_resp(&new_ring, udata);
	if (err)
		goto err_ring;

	spin_lock_irq(&cq->lock);
	pending = sroce_cq_pending(cq);
	if (pending < 0 || pending > new_ring.num_slots) {
		spin_unlock_irq(&cq->lock);
		err = pending < 0 ? pending : -EINVAL;
		goto err_ring;
	}
	cons = cq->prod - pending;
	for (i = 0; i < pending; i++) {
		memcpy(sroce_ring_slot(&new_ring, i),
		       sroce_ring_slot(&cq->ring, cons + i),
		       sizeof(struct sroce_cqe));
		if (new_kqp)
			new_kqp[i] = cq->kqp[(cons + i) &
					     (cq->ring.num_slots - 1)];
	}
	new_ring.hdr->prod = pending;
	new_ring.hdr->notify = READ_ONCE(cq->ring.hdr->notify);
	old_ring = cq->ring;
	old_kqp = cq->kqp;
	cq->ring = new_ring;
	cq->kqp = new_kqp;
	cq->prod = pending;
	cq->kcons = 0;
	/* ib_uverbs lets two resizes of one CQ run at once: the last wins. */
	ibcq->cqe = new_ring.num_slots;
	spin_unlock_irq(&cq->lock);

	sroce_kmem_sub(sdev, &cq->kmem, sroce_cq_bytes(old_ring.num_slots,
						       udata));
	kvfree(old_kqp);
	sroce_ring_release(&old_ring);
	return 0;

err_ring:
	kvfree(new_kqp);
	sroce_ring_release(&new_ring);
err_kmem:
	sroce_kmem_sub(sdev, &cq->kmem, sroce_cq_bytes(cqe, udata));
	return err;
}

/**
 * sroce_cq_post - add a completion to a CQ
 * @cq: the CQ
 * @qp: the QP the completion is of
 * @cqe: the completion
 * @solicited: the completion is for a solicited event
 *
 * Raises the completion event if the consumer asked for it. A full CQ (or
 * one whose consumer index is corrupt) is in error: the completion is lost
 * and IB_EVENT_CQ_ERR is reported.
 *
 * Return: 0, or -ENOSPC when the CQ is in error.
 */
int sroce_cq_post(struct sroce_cq *cq, struct sroce_qp *qp,
		  const struct sroce_cqe *cqe, bool solicited)
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
		sroce_dbg_cq(cq, "completion of qp#%u lost: %s\n",
			     qp->ibqp.qp_num, pending < 0 ?
			     "consumer index corrupt" : "CQ full");
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
	if (cq->kqp)
		cq->kqp[cq->prod & (cq->ring.num_slots - 1)] = &qp->ibqp;
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

/* ib_wc_flags from a CQE's (enum ibv_wc_flags) flags. */
static int sroce_wc_flags(const struct sroce_cqe *cqe)
{
	int flags = 0;

	if (cqe->wc_flags & SROCE_WC_GRH)
		flags |= IB_WC_GRH;
	if (cqe->wc_flags & SROCE_WC_WITH_IMM)
		flags |= IB_WC_WITH_IMM;
	if (cqe->wc_flags & SROCE_WC_WITH_INV)
		flags |= IB_WC_WITH_INVALIDATE;
	if (cqe->network_hdr_type)
		flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	if (is_valid_ether_addr(cqe->smac))
		flags |= IB_WC_WITH_SMAC;
	/* ib_mad's answers are sent from the GID of this VLAN */
	if (cqe->vlan_valid)
		flags |= IB_WC_WITH_VLAN;
	return flags;
}

static void sroce_cqe_to_wc(const struct sroce_cqe *cqe, struct ib_qp *qp,
			    struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	if (cqe->wc_flags & SROCE_WC_WITH_INV)
		wc->ex.invalidate_rkey = cqe->ex;
	else
		wc->ex.imm_data = (__force __be32)cqe->ex;
	wc->qp = qp;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = sroce_wc_flags(cqe);
	wc->pkey_index = cqe->pkey_index;
	wc->slid = cqe->slid;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
	wc->port_num = SROCE_PORT;
	ether_addr_copy(wc->smac, cqe->smac);
	wc->network_hdr_type = cqe->network_hdr_type;
	wc->vlan_id = cqe->vlan_id;
}

/**
 * sroce_poll_cq - take completions from a kernel consumer's CQ
 * @ibcq: the CQ
 * @num_entries: room in @wc
 * @wc: filled with the completions
 *
 * Return: the number of completions taken.
 */
int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	if (!cq->kqp)
		goto out;
	while (n < num_entries && cq->kcons != cq->prod) {
		u32 slot = cq->kcons & (cq->ring.num_slots - 1);

		sroce_cqe_to_wc(sroce_ring_slot(&cq->ring, slot),
				cq->kqp[slot], &wc[n++]);
		cq->kcons++;
	}
	sroce_ring_store_cons(&cq->ring, cq->kcons);
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/**
 * sroce_req_notify_cq - arm a kernel consumer's CQ
 * @ibcq: the CQ
 * @flags: IB_CQ_NEXT_COMP or IB_CQ_SOLICITED, and maybe
 *         IB_CQ_REPORT_MISSED_EVENTS
 *
 * Return: 1 if IB_CQ_REPORT_MISSED_EVENTS was asked and completions are
 * waiting (the caller must poll again), else 0.
 */
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct sroce_cq *cq = to_scq(ibcq);
	u32 want = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
			   SROCE_CQ_NOTIFY_SOLICITED : SROCE_CQ_NOTIFY_NEXT;
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* Any completion outranks a solicited one. */
	if (cq->ring.hdr->notify != SROCE_CQ_NOTIFY_NEXT)
		WRITE_ONCE(cq->ring.hdr->notify, want);
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->kcons != cq->prod)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/**
 * sroce_cq_clean - drop a kernel CQ's unpolled completions of a QP
 * @cq: a kernel consumer's CQ (a user CQ is cleaned by its provider)
 * @qp: the QP, which went to RESET
 */
void sroce_cq_clean(struct sroce_cq *cq, struct sroce_qp *qp)
{
	u32 mask = cq->ring.num_slots - 1, removed = 0, i;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (!cq->kqp)
		goto out;
	for (i = cq->prod; i != cq->kcons;) {
		i--;
		if (cq->kqp[i & mask] == &qp->ibqp) {
			removed++;
		} else if (removed) {
			memcpy(sroce_ring_slot(&cq->ring, i + removed),
			       sroce_ring_slot(&cq->ring, i),
			       sizeof(struct sroce_cqe));
			cq->kqp[(i + removed) & mask] = cq->kqp[i & mask];
		}
	}
	cq->kcons += removed;
	sroce_ring_store_cons(&cq->ring, cq->kcons);
out:
	spin_unlock_irqrestore(&cq->lock, flags);
}
