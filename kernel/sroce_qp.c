// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: queue pairs - creation, the state machine, attributes and the
 * timers. Kernel consumers post in sroce_post.c; the completer flushes a
 * QP in error (sroce_comp.c).
 *
 * The SQ and RQ are rings shared with the provider (see the uAPI header).
 * Everything the kernel does with them runs in the QP's engine
 * (sroce_task.c), in process context.
 */
#include <linux/log2.h>
#include <linux/random.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce_loc.h"
#include "sroce_mem_api.h"
#include "sroce_task.h"
#include "sroce.h"

/* Bytes of a send slot: the header, then SGEs or inline data. */
static u32 sroce_send_slot_size(const struct ib_qp_cap *cap)
{
	u32 payload = max_t(u32, cap->max_send_sge * sizeof(struct sroce_sge),
			    cap->max_inline_data);

	return ALIGN(sizeof(struct sroce_send_wqe) + payload, 64);
}

static int sroce_qp_check_cap(const struct ib_qp_cap *cap)
{
	if (cap->max_send_wr > SROCE_MAX_QP_WR ||
	    cap->max_recv_wr > SROCE_MAX_QP_WR ||
	    cap->max_send_sge > SROCE_MAX_SGE ||
	    cap->max_recv_sge > SROCE_MAX_SGE ||
	    cap->max_inline_data > SROCE_MAX_INLINE)
		return -EINVAL;
	return 0;
}

/*
 * The capacities the rings really have, which may exceed what was asked
 * for: a full ring of WRs, as many SGEs and inline bytes as a slot holds.
 */
static void sroce_qp_real_cap(struct sroce_qp *qp, struct ib_qp_cap *cap)
{
	u32 send_room = qp->sq.slot_size - sizeof(struct sroce_send_wqe);

	cap->max_send_wr = qp->sq.num_slots;
	cap->max_send_sge = min_t(u32, SROCE_MAX_SGE,
				  send_room / sizeof(struct sroce_sge));
	cap->max_inline_data = min_t(u32, SROCE_MAX_INLINE, send_room);
	/* With an SRQ the QP has no receive queue of its own. */
	cap->max_recv_wr = qp->rq.num_slots;
	cap->max_recv_sge = qp->rq.num_slots ?
		min_t(u32, SROCE_MAX_SGE,
		      (qp->rq.slot_size - sizeof(struct sroce_recv_wqe)) /
			      sizeof(struct sroce_sge)) : 0;
}

/* An asynchronous event of the QP, to its consumer. */
void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.event = type,
		.element.qp = &qp->ibqp,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* A QP of an SRQ takes no more WQEs from it once in error: say so. */
static void sroce_qp_entered_error(struct sroce_qp *qp)
{
	if (qp->ibqp.srq)
		sroce_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

static void sroce_qp_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, timer);

	sroce_task_sched(qp);
}

static void sroce_qp_retry_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, retry_timer);
	unsigned long deadline = READ_ONCE(qp->req.deadline);

	/* Nothing outstanding, or progress moved the deadline on. */
	if (!READ_ONCE(qp->req.retry_on))
		return;
	if (time_before(jiffies, deadline)) {
		mod_timer(&qp->retry_timer, deadline);
		return;
	}
	WRITE_ONCE(qp->req.timed_out, true);
	sroce_task_sched(qp);
}

static void sroce_qp_publish_state(struct sroce_qp *qp)
{
	enum ib_qp_state state = qp->attr.qp_state;

	WRITE_ONCE(qp->sq.hdr->qp_state, state);
	if (qp->rq.hdr)
		WRITE_ONCE(qp->rq.hdr->flush, state == IB_QPS_ERR);
	smp_mb(); /* the state is visible before the engine looks at rings */
}

/*
 * Bytes of the receive WQE copy: the largest WQE the QP may take (@rq_slot:
 * its own RQ's slot, 0 without one).
 */
static u32 sroce_qp_rwqe_size(const struct ib_qp_init_attr *init,
			      u32 rq_slot)
{
	if (init->qp_type == IB_QPT_XRC_TGT)
		return sroce_recv_slot_size(SROCE_MAX_SGE);
	if (init->srq)
		return to_ssrq(init->srq)->ring.slot_size;
	return max_t(u32, rq_slot, sizeof(struct sroce_recv_wqe));
}

/*
 * Give the QP its number: QP1 for the GSI QP (one per device), else the
 * first free one from a random point of [SROCE_MIN_QPN, SROCE_MAX_QPN].
 * Numbers are not sequential, so a forger on the network has to guess
 * a QPN before it can even aim a packet at a connection. From here
 * packets can find the QP.
 */
static int sroce_qp_add_qpn(struct sroce_dev *sdev, struct sroce_qp *qp)
{
	u32 qpn, next;
	int err;

	if (qp->ibqp.qp_type == IB_QPT_GSI) {
		err = xa_insert_irq(&sdev->qp_xa, 1, qp, GFP_KERNEL);
		if (err)
			return err;
		qp->ibqp.qp_num = 1;
		return 0;
	}
	next = get_random_u32_inclusive(SROCE_MIN_QPN, SROCE_MAX_QPN);
	err = xa_alloc_cyclic_irq(&sdev->qp_xa, &qpn, qp,
				  XA_LIMIT(SROCE_MIN_QPN, SROCE_MAX_QPN),
				  &next, GFP_KERNEL);
	if (err < 0)
		return err;
	qp->ibqp.qp_num = qpn;
	return 0;
}

static int sroce_qp_copy_resp(struct sroce_qp *qp, struct ib_udata *udata)
{
	struct sroce_create_qp_resp resp = {};

	if (!udata)
		return 0;
	sroce_ring_geom(&qp->sq, &resp.sq);
	if (qp->rq.hdr)
		sroce_ring_geom(&qp->rq, &resp.rq);
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/**
 * sroce_create_qp - create an RC, UC, UD or (kernel only) GSI QP
 * @ibqp: the QP
 * @init: its attributes; the capacities really given are written back
 * @udata: the provider's command, or NULL for a kernel consumer, whose
 *         rings are kernel memory filled by ops.post_send/post_recv
 *
 * Return: 0; -EOPNOTSUPP for another QP type or any create flag; -EINVAL
 * for a GSI QP from user space, an XRC target QP without an XRC domain, a
 * response buffer too short, or capacities above the device's; -ENOMEM at
 * max_qp or without memory; -EBUSY when the device has its GSI QP already
 * or no QP number is free; -EFAULT when the response cannot be copied to
 * @udata.
 */
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct ib_ucontext *uctx = NULL;
	u32 sq_slots, sq_slot, rq_slots, rq_slot;
	struct sroce_kmem_user *ku;
	bool has_rq;
	gfp_t gfp;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
	case IB_QPT_XRC_INI:
		break;
	case IB_QPT_GSI:
		if (udata)
			return -EINVAL;
		break;
	case IB_QPT_XRC_TGT:
		/* ib_core creates it for the XRC domain, as a kernel QP. */
		if (!init->xrcd)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (udata) {
		if (udata->outlen < sizeof(struct sroce_create_qp_resp))
			return -EINVAL;
		uctx = &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						  ibuc)->ibuc;
	}
	err = sroce_qp_check_cap(&init->cap);
	if (err)
		return err;
	if (atomic_inc_return(&sdev->num_qp) > SROCE_MAX_QP) {
		err = -ENOMEM;
		goto err_count;
	}

	/*
	 * What the consumer sized, charged to its user before it is made,
	 * refused past a bound (sroce_kmem.c). An XRC target QP is made for
	 * a process too, though ib_core makes it as a kernel QP: it is that
	 * process's user's.
	 */
	if (uctx) {
		sroce_kmem_start(&qp->kmem, sroce_udata_kmem_user(udata));
	} else if (init->qp_type == IB_QPT_XRC_TGT &&
		   !(current->flags & PF_KTHREAD)) {
		ku = sroce_kmem_user_get(sdev);
		if (IS_ERR(ku)) {
			err = PTR_ERR(ku);
			goto err_count;
		}
		sroce_kmem_start(&qp->kmem, ku);
		sroce_kmem_user_put(sdev, ku);
	}
	gfp = qp->kmem.ku ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;
	sq_slots = roundup_pow_of_two(max(init->cap.max_send_wr, 1U));
	sq_slot = sroce_send_slot_size(&init->cap);
	/* XRC halves have no RQ: the target takes WQEs from XRC SRQs. */
	has_rq = !init->srq && init->qp_type != IB_QPT_XRC_INI &&
		 init->qp_type != IB_QPT_XRC_TGT;
	rq_slots = roundup_pow_of_two(max(init->cap.max_recv_wr, 1U));
	rq_slot = sroce_recv_slot_size(init->cap.max_recv_sge);
	err = sroce_kmem_add(sdev, &qp->kmem,
			     sroce_ring_bytes(sq_slots, sq_slot) +
				     (has_rq ? sroce_ring_bytes(rq_slots,
								rq_slot) : 0) +
				     array_size(sq_slots, sq_slot) +
				     array_size(sq_slots, sizeof(*qp->swqe)) +
				     sroce_qp_rwqe_size(init, has_rq ? rq_slot : 0));
	if (err)
		goto err_kmem;

	mutex_init(&qp->lock);
	spin_lock_init(&qp->post_lock);
	/* A process's QP (charged to its user) runs on its user's queue. */
	err = sroce_task_qp_init(qp);
	if (err)
		goto err_kmem;
	sroce_ahead_init(&qp->resp.write_ahead, &sdev->ibdev, qp->kmem.ku);
	sroce_ahead_init(&qp->resp.read_ahead, &sdev->ibdev, qp->kmem.ku);
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	err = sroce_ring_init(&qp->sq, uctx, sq_slots, sq_slot, gfp);
	if (err)
		goto err_task;
	if (has_rq) {
		err = sroce_ring_init(&qp->rq, uctx, rq_slots, rq_slot, gfp);
		if (err)
			goto err_sq;
	}

	err = -ENOMEM;
	qp->sq_copy = kvzalloc(array_size(sq_slots, sq_slot), gfp);
	qp->swqe = kvcalloc(sq_slots, sizeof(*qp->swqe), gfp);
	qp->resp.rwqe = kzalloc(sroce_qp_rwqe_size(init, has_rq ? rq_slot : 0), gfp);
	if (!qp->sq_copy || !qp->swqe || !qp->resp.rwqe)
		goto err_mem;
	qp->owner = uctx;
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);
	timer_setup(&qp->timer, sroce_qp_timer, 0);
	timer_setup(&qp->retry_timer, sroce_qp_retry_timer, 0);
	qp->resp.opcode = -1;
	qp->attr.qp_state = IB_QPS_RESET;
	qp->attr.path_mtu = IB_MTU_1024;
	qp->attr.port_num = SROCE_PORT;
	qp->mtu = ib_mtu_enum_to_int(IB_MTU_1024);
	sroce_qp_publish_state(qp);
	sroce_qp_real_cap(qp, &qp->cap);
	init->cap = qp->cap;

	err = sroce_qp_copy_resp(qp, udata);
	if (err)
		goto err_mem;
	/* Last: from here packets find the QP, and only destroy frees it. */
	err = sroce_qp_add_qpn(sdev, qp);
	if (err)
		goto err_mem;
	return 0;

err_mem:
	kfree(qp->resp.rwqe);
	kvfree(qp->swqe);
	kvfree(qp->sq_copy);
	sroce_ring_release(&qp->rq);
err_sq:
	sroce_ring_release(&qp->sq);
err_task:
	sroce_task_qp_fini(qp);
err_kmem:
	sroce_kmem_end(sdev, &qp->kmem);
err_count:
	atomic_dec(&sdev->num_qp);
	return err;
}

int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);

	/* No new packets find it; wait for those that did. */
	xa_erase_irq(&sdev->qp_xa, ibqp->qp_num);
	mutex_lock(&qp->lock);
	qp->destroyed = true;
	mutex_unlock(&qp->lock);
	del_timer_sync(&qp->timer);
	del_timer_sync(&qp->retry_timer);
	sroce_qp_put(qp);
	sroce_task_drain(qp);
	del_timer_sync(&qp->timer);
	del_timer_sync(&qp->retry_timer);
	/* Nothing queues the QP's work now: it gives its queue back. */
	sroce_task_qp_fini(qp);
	sroce_ahead_stop(&qp->resp.write_ahead);
	sroce_ahead_stop(&qp->resp.read_ahead);

	sroce_resp_reset(qp);
	sroce_av_put(&qp->av);
	kfree(qp->resp.rwqe);
	kvfree(qp->swqe);
	kvfree(qp->sq_copy);
	sroce_ring_release(&qp->rq);
	sroce_ring_release(&qp->sq);
	sroce_kmem_end(sdev, &qp->kmem);
	mutex_destroy(&qp->lock);
	atomic_dec(&sdev->num_qp);
	return 0;
}

/* Check the attributes of a modify against the device's limits. */
static int sroce_qp_check_attr(struct sroce_qp *qp, struct ib_qp_attr *attr,
			       int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != SROCE_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= SROCE_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SROCE_MAX_QPN)
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && attr->sq_psn > SROCE_PSN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && attr->rq_psn > SROCE_PSN_MASK)
		return -EINVAL;
	/*
	 * Applications commonly pass local write, MW bind and on-demand
	 * paging too (the flags of their MRs); they mean nothing for a QP.
	 */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_LOCAL_WRITE |
				       IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC |
				       IB_ACCESS_MW_BIND |
				       IB_ACCESS_ON_DEMAND)))
		return -EINVAL;
	if ((mask & IB_QP_CAP) && sroce_qp_check_cap(&attr->cap))
		return -EINVAL;
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE))
		return -EOPNOTSUPP;
	return 0;
}

/* Copy what a modify sets; the new state last. */
static void sroce_qp_apply_attr(struct sroce_qp *qp, struct ib_qp_attr *attr,
				int mask)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IB_QP_STATE)
		a->qp_state = attr->qp_state;
}

/* Going to RESET: posted WRs are dropped without completions. */
static void sroce_qp_reset(struct sroce_qp *qp)
{
	del_timer(&qp->timer);
	del_timer(&qp->retry_timer);
	memset(&qp->req, 0, sizeof(qp->req));
	sroce_resp_reset(qp);
	qp->resp.rwqe_valid = false;
	qp->resp.epsn = 0;
	qp->resp.msn = 0;
	qp->sq_cons = sroce_ring_load_prod(&qp->sq);
	qp->sq_comp = qp->sq_cons;
	qp->req.next = qp->sq_cons;
	sroce_ring_store_cons(&qp->sq, qp->sq_cons);
	if (qp->rq.hdr) {
		qp->rq_cons = sroce_ring_load_prod(&qp->rq);
		sroce_ring_store_cons(&qp->rq, qp->rq_cons);
	}
	/* Its completions not yet polled go too (user CQs: the provider). */
	if (qp->ibqp.send_cq)
		sroce_cq_clean(to_scq(qp->ibqp.send_cq), qp);
	if (qp->ibqp.recv_cq && qp->ibqp.recv_cq != qp->ibqp.send_cq)
		sroce_cq_clean(to_scq(qp->ibqp.recv_cq), qp);
}

/*
 * Path parameters once the QP knows where it sends. The MTU is the path
 * MTU asked for, but no more than the source GID's device takes now (a
 * VLAN's may be smaller than the bound net_device's): the messages of an
 * RC or UC QP are cut at it, for their whole life, whatever the devices'
 * MTUs become later.
 */
static void sroce_qp_set_path(struct sroce_qp *qp, int mask)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	enum ib_mtu mtu = min_t(enum ib_mtu, qp->attr.path_mtu,
				sroce_av_mtu(sdev, &qp->av));

	qp->mtu = ib_mtu_enum_to_int(max_t(enum ib_mtu, mtu, IB_MTU_256));
	if (mask & IB_QP_AV) {
		qp->loopback = sroce_av_is_local(sdev, &qp->av);
		qp->sport = rdma_get_udp_sport(qp->av.flow_label,
					       qp->ibqp.qp_num,
					       qp->attr.dest_qp_num);
	}
}

int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	enum ib_qp_state cur, next;
	struct sroce_av av;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->lock);
	cur = qp->attr.qp_state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	err = -EINVAL;
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur)
		goto out;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask))
		goto out;
	err = sroce_qp_check_attr(qp, attr, mask);
	if (err)
		goto out;
	if (mask & IB_QP_AV) {
		err = sroce_av_from_attr(&av, &attr->ah_attr, udata);
		if (err)
			goto out;
		sroce_av_put(&qp->av);
		qp->av = av;
	}

	sroce_qp_apply_attr(qp, attr, mask);
	if (next == IB_QPS_RESET)
		sroce_qp_reset(qp);
	if (mask & (IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN))
		sroce_qp_set_path(qp, mask);
	if (mask & IB_QP_RQ_PSN)
		qp->resp.epsn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN) {
		qp->req.psn = attr->sq_psn;
		qp->req.psn_hi = attr->sq_psn;
		qp->req.acked_psn = attr->sq_psn;
		qp->req.rnr_psn = SROCE_PSN_NONE;
		qp->req.ghost_left = 0;
	}
	if (mask & IB_QP_RETRY_CNT)
		qp->req.retries = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->req.rnr_retries = attr->rnr_retry;
	if (next == IB_QPS_ERR && cur != IB_QPS_ERR) {
		sroce_resp_reset(qp);
		sroce_qp_entered_error(qp);
	}
	sroce_qp_publish_state(qp);
	if (next != cur)
		sroce_task_sched(qp);
	err = 0;
out:
	mutex_unlock(&qp->lock);
	return err;
}

int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct sroce_qp *qp = to_sqp(ibqp);

	mutex_lock(&qp->lock);
	*attr = qp->attr;
	/*
	 * The PSNs as they are now, not as the last modify set them: the
	 * next one expected (from RTR on) and the next one to send (RTS).
	 */
	if (qp->attr.qp_state >= IB_QPS_RTR && qp->attr.qp_state != IB_QPS_ERR)
		attr->rq_psn = qp->resp.epsn;
	if (qp->attr.qp_state >= IB_QPS_RTS && qp->attr.qp_state != IB_QPS_ERR)
		attr->sq_psn = qp->req.psn;
	attr->cur_qp_state = qp->attr.qp_state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	if (!sroce_qp_is_ud(qp))
		sroce_av_to_attr(&qp->av, &attr->ah_attr);
	mutex_unlock(&qp->lock);

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	return 0;
}

/**
 * sroce_qp_error - move the QP to the error state from the engine
 * @qp: the QP, its lock held
 *
 * Everything outstanding is then flushed by the engine.
 */
void sroce_qp_error(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	if (qp->attr.qp_state == IB_QPS_ERR)
		return;
	qp->attr.qp_state = IB_QPS_ERR;
	sroce_resp_reset(qp);
	sroce_qp_publish_state(qp);
	sroce_qp_entered_error(qp);
	sroce_task_sched(qp);
}
