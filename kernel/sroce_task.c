// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the QP engine - what a QP's work is, and when and where it runs.
 *
 * One run at a time per QP, under its lock: it takes the packets queued to
 * the QP (the responder takes requests, the completer responses), then
 * sends, then flushes (error state) or reports the SQ drained (SQD). It
 * runs in the QP's work item on the driver's workqueue, or directly in a
 * doorbell's system call; either way in process context, and it may sleep.
 */
#include <linux/skbuff.h>
#include <linux/workqueue.h>

#include "sroce_loc.h"
#include "sroce_task.h"
#include "sroce.h"

/*
 * The engine's workqueues: a QP's work item runs in process context on
 * one of them, chosen when the QP is made and never changed
 * (sroce_task_qp_init()). All are per-CPU and high priority: a packet's
 * QP runs on the CPU that received it, before a process busy-polling its
 * CQ there.
 *
 * sroce_kernel_wq, WQ_MEM_RECLAIM: kernel consumers' QPs. The ULPs that
 * write pages out (NVMe-oF, NFS over RDMA, SRP, iSER) need their QPs run
 * while memory is short and the pool cannot make a worker: the queue's
 * rescuer then runs them. Their runs reach kernel memory (kernel MRs,
 * fast-registered pages, the DMA MR), never memory whose faults a process
 * can hold: a kernel consumer gets no ODP MR (sroce_reg_user_mr()).
 *
 * Each user's own, "sroce_user_UID" (sroce_kmem_wq_get(): made with the
 * user's first QP on any device, gone with its last on every device; a
 * user is a uid, or a container: sroce_kmem.c): the QPs made for its
 * processes on every device (its user
 * contexts', and the XRC target QPs ib_core makes for them). Their runs
 * may wait in an ODP fault of their user's memory for as long as its
 * owner likes (a page of its FUSE file waits for the file's server), or
 * for a lock the owner holds across such a fault (an MR's, while it
 * re-registers over such a page). A workqueue runs at most max_active
 * of its items at once on a CPU, and the rest wait inactive, so a
 * user's runs stalled on a CPU fill only its own queue's share there:
 * its own runs queued after them wait, no one else's. Every per-CPU queue
 * hands its active items to the CPU's worker pool, which makes a worker
 * for each item waiting while none is idle (a worker that sleeps lets the
 * next item have one): a stalled run holds one worker, never another
 * queue's item. What a user's stalls cost the others is the pool's time
 * to make workers for the items it queued before theirs, at most its
 * max_active on that CPU, once. A user holds as many stalled kworkers as
 * it has stalled runs, at most max_active on each CPU, however many
 * devices it uses; only an administrator makes more users. A user's
 * queue is not WQ_MEM_RECLAIM: nothing that reclaims memory waits for a
 * process's QP, and a rescuer would be a kthread for each user, to stall
 * in the first fault it ran.
 */
static struct workqueue_struct *sroce_kernel_wq;

/* A user's queue: per-CPU, high priority, no rescuer. */
#define SROCE_USER_WQ_FLAGS	WQ_HIGHPRI

/*
 * A user's queue runs at most 16 of its items at once on a CPU, not the
 * default 256: that many kworkers is what one user's stalled runs hold on
 * each CPU, charged to no memory cgroup nor pids.max, and every user has
 * a queue. A run that does not sleep takes the CPU's pool's one running
 * worker anyway, so the user loses only the runs of its QPs past 16 that
 * would sleep at once on a CPU, in faults of its own memory or on its
 * own locks: they wait for one of the 16 to end.
 */
#define SROCE_USER_WQ_ACTIVE	16

/*
 * The QPs a doorbell runs itself on its way out: those its packets went to
 * on loopback (each entry holds a reference), so that a reply on the same
 * host does not wait for a worker to be scheduled. Lives on the
 * doorbell's stack.
 *
 * Only QPs of the rung QP's own user context are listed (@owner): those
 * of the process that rings (or of one it shares its uverbs file with).
 * A run may sleep for as long as the memory it copies likes (an ODP fault
 * on a FUSE file waits, uninterruptibly, for the file's server), and the
 * list holds its references, and runs its QPs, until the runs before them
 * are done: another process's QP, even of the same user (containers
 * sharing a uid, a seteuid() window), would have its destroy wait on, and
 * its work done by, a thread it cannot stop. Those go to the workqueue.
 */
#define SROCE_INLINE_MAX 8
struct sroce_inline {
	struct sroce_qp *qp[SROCE_INLINE_MAX];
	int n;
	int done;	/* entries already run */
	const struct ib_ucontext *owner;	/* the rung QP's */
};

/**
 * sroce_task_init - create the kernel QPs' workqueue, at module load
 *
 * Users' queues come and go with their QPs (sroce_task_qp_init()).
 * Return: 0, or -ENOMEM.
 */
int sroce_task_init(void)
{
	sroce_kernel_wq = alloc_workqueue("sroce_kernel",
					  WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	return sroce_kernel_wq ? 0 : -ENOMEM;
}

/*
 * At module unload (or a failed load): every QP is gone, and with the
 * users' last QPs their queues (sroce_kmem_exit(), next, checks).
 */
void sroce_task_exit(void)
{
	destroy_workqueue(sroce_kernel_wq);
}

static void sroce_qp_work(struct work_struct *work);

/**
 * sroce_task_qp_init - set up a new QP's work item, receive queue and
 *                      workqueue
 * @qp: the QP, before packets or verbs can reach it; charged already to
 *      the user it is made for (@qp->kmem.ku), if any
 *
 * A QP made for a process runs on its user's own queue (made now if this
 * is the user's first QP), a kernel consumer's on sroce_kernel_wq, for
 * good. Process context.
 * Return: 0, or -ENOMEM if the user's queue could not be made (no
 * memory, or past the user's or the device's kernel memory bound).
 */
int sroce_task_qp_init(struct sroce_qp *qp)
{
	struct sroce_kmem_user *ku = qp->kmem.ku;

	INIT_WORK(&qp->work, sroce_qp_work);
	skb_queue_head_init(&qp->rx_queue);
	if (!ku) {
		qp->wq = sroce_kernel_wq;
		return 0;
	}
	qp->wq = sroce_kmem_wq_get(to_sdev(qp->ibqp.device), ku,
				   SROCE_USER_WQ_FLAGS, SROCE_USER_WQ_ACTIVE);
	return qp->wq ? 0 : -ENOMEM;
}

/**
 * sroce_task_qp_fini - a QP gives its workqueue back
 * @qp: the QP, which nothing queues again: destroyed, drained
 *      (sroce_task_drain()) and its timers stopped, or never reachable (a
 *      create that failed)
 *
 * The user's last QP takes the user's queue with it: destroying it waits
 * for nothing, as no item is left on it. Process context, in a destroy
 * (never in an engine run).
 */
void sroce_task_qp_fini(struct sroce_qp *qp)
{
	if (qp->kmem.ku)
		sroce_kmem_wq_put(to_sdev(qp->ibqp.device), qp->kmem.ku);
	qp->wq = NULL;
}

/**
 * sroce_task_sched - run a QP's engine soon, in its work item
 * @qp: the QP
 *
 * Any context. Queues @qp's work item on this CPU, on the QP's workqueue,
 * unless it is queued already; a run under way is followed by another.
 */
void sroce_task_sched(struct sroce_qp *qp)
{
	queue_work(qp->wq, &qp->work);
}

/* Drop a packet for @qp that no run will take, and its reference. */
static void sroce_qp_drop_skb(struct sroce_qp *qp, struct sk_buff *skb)
{
	sroce_drop_qp(qp, SROCE_CNT_DROP_QP_STATE,
		      "psn %u dropped: QP in error or destroyed\n",
		      SROCE_PKT(skb)->psn);
	kfree_skb(skb);
	sroce_qp_put(qp);
}

/**
 * sroce_inline_add - a doorbell's loopback packet was queued to @qp
 * @inl: the doorbell's list
 * @qp: the destination QP
 *
 * Return: true if the doorbell will run @qp (listed, with a reference);
 * false if the caller must queue @qp's work (the list is full, or @qp is
 * not a QP of the doorbell's user context).
 */
static bool sroce_inline_add(struct sroce_inline *inl, struct sroce_qp *qp)
{
	int i;

	/* Listed and not run yet: that run takes this packet too. */
	for (i = inl->done; i < inl->n; i++)
		if (inl->qp[i] == qp)
			return true;
	/* inl->owner is a user context: a kernel QP (NULL) never matches. */
	if (inl->n == SROCE_INLINE_MAX || qp->owner != inl->owner)
		return false;
	refcount_inc(&qp->ref);
	inl->qp[inl->n++] = qp;
	return true;
}

/**
 * sroce_task_rx - queue a received packet to its QP and see that it is run
 * @qp: the QP, SROCE_PKT(@skb)->qp
 * @skb: the packet, which owns a reference to @qp
 * @inl: the list of the doorbell that sent the packet on this host, or NULL
 *
 * Any context. The engine may take and free the packet, and with it its
 * reference, as soon as it is queued: the caller keeps @qp alive until this
 * returns.
 *
 * Return: true if queued; false if @qp is being destroyed (no run will
 * take the packet, nor need to): then @skb, and its reference, are still
 * the caller's to drop.
 */
bool sroce_task_rx(struct sroce_qp *qp, struct sk_buff *skb,
		   struct sroce_inline *inl)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->rx_queue.lock, flags);
	if (qp->rx_closed) {
		spin_unlock_irqrestore(&qp->rx_queue.lock, flags);
		return false;
	}
	__skb_queue_tail(&qp->rx_queue, skb);
	spin_unlock_irqrestore(&qp->rx_queue.lock, flags);
	/* From a doorbell on this host: it runs the QP on its way out. */
	if (!(inl && sroce_inline_add(inl, qp)))
		sroce_task_sched(qp);
	return true;
}

/* Drop the packets queued to a QP that will not process them. */
static void sroce_qp_purge(struct sroce_qp *qp)
{
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&qp->rx_queue)))
		sroce_qp_drop_skb(qp, skb);
}

/* Packets processed per run of the engine before it lets others run. */
#define SROCE_RX_BUDGET 64

/*
 * A connected QP takes packets from its peer only, sent to its own GID
 * (the addresses its path names), as a RoCE NIC matches a connection and
 * rdma_rxe's check_addr() does; anything else is forged or astray. Before
 * RTR there is no path, and the state checks drop it all.
 */
static bool sroce_qp_pkt_from_peer(struct sroce_qp *qp, struct sk_buff *skb)
{
	if (sroce_qp_is_ud(qp))
		return true;
	switch (qp->attr.qp_state) {
	case IB_QPS_RESET:
	case IB_QPS_INIT:
		return true;
	default:
		return sroce_pkt_on_path(skb, &qp->av);
	}
}

/*
 * Received packets, as far as the responder can take them: none while a
 * READ is still being answered (sroce_resp_continue() sees to the run that
 * answers the rest).
 */
static void sroce_qp_rx_queue(struct sroce_qp *qp)
{
	int budget = SROCE_RX_BUDGET;
	struct sk_buff *skb;

	while (sroce_resp_continue(qp)) {
		if (!budget--) {
			sroce_task_sched(qp);
			return;
		}
		skb = skb_dequeue(&qp->rx_queue);
		if (!skb)
			return;
		if (!sroce_qp_pkt_from_peer(qp, skb)) {
			sroce_drop_qp(qp, SROCE_CNT_DROP_BAD_SOURCE,
				      "psn %u dropped: not from the QP's peer\n",
				      SROCE_PKT(skb)->psn);
		} else if (sroce_opinfo[SROCE_PKT(skb)->opcode].flags &
			   SROCE_OP_REQ) {
			sroce_resp_rcv(qp, skb);
		} else {
			sroce_comp_rcv(qp, skb);
		}
		kfree_skb(skb);
		sroce_qp_put(qp);
	}
}

static void sroce_qp_rx(struct sroce_qp *qp)
{
	sroce_qp_rx_queue(qp);
	/* One ACK for the requests just taken that asked for one. */
	sroce_resp_flush_ack(qp);
}

/* Sends still owed an answer, or a pause: the engine runs again by itself. */
static bool sroce_qp_will_return(struct sroce_qp *qp)
{
	return qp->attr.qp_state == IB_QPS_RTS &&
	       (qp->sq_comp != qp->req.next || qp->req.sent ||
		qp->req.rnr_wait);
}

/*
 * Sends a doorbell will take: the engine said it would not come back by
 * itself, so the provider rings for every WR posted since, and nothing is
 * outstanding that might need sending again.
 */
static bool sroce_qp_sends_owed_doorbell(struct sroce_qp *qp)
{
	return !qp->active && !sroce_qp_will_return(qp);
}

/*
 * The QP's engine: receive, then send, then flush or drain as the state
 * says. Runs in its work item, or directly in the doorbell's syscall.
 * @peer: run for a loopback packet by another QP's doorbell. Sends posted
 * here are then left to their own doorbell, which waits for this lock:
 * releasing it early lets that owner's CPU send while this one goes on.
 */
static void sroce_qp_run(struct sroce_qp *qp, struct sroce_inline *inl,
			 bool peer)
{
	bool active;

	mutex_lock(&qp->lock);
	qp->inl = inl;
	if (qp->destroyed) {
		sroce_qp_purge(qp);
		goto out;
	}
	if (!sroce_qp_sends(qp) && qp->req.retry_on) {
		qp->req.retry_on = false;
		del_timer(&qp->retry_timer);
	}

	sroce_qp_rx(qp);

	switch (qp->attr.qp_state) {
	case IB_QPS_ERR:
		sroce_qp_purge(qp);
		sroce_qp_flush(qp);
		break;
	case IB_QPS_RTS:
		if (peer && sroce_qp_sends_owed_doorbell(qp))
			goto out;
		fallthrough;
	case IB_QPS_SQD:
		/* In SQD too, outstanding requests are sent again if lost. */
		if (qp->req.rnr_wait && !timer_pending(&qp->timer))
			qp->req.rnr_wait = false;
		if (READ_ONCE(qp->req.timed_out)) {
			WRITE_ONCE(qp->req.timed_out, false);
			if (!timer_pending(&qp->retry_timer))
				sroce_comp_timeout(qp);
		}
		sroce_req_run(qp);
		if (qp->attr.qp_state == IB_QPS_SQD &&
		    qp->attr.en_sqd_async_notify &&
		    qp->sq_comp == qp->req.next && !qp->req.sent) {
			qp->attr.en_sqd_async_notify = 0;
			sroce_qp_event(qp, IB_EVENT_SQ_DRAINED);
		}
		break;
	default:
		break;
	}

	/*
	 * Tell the provider whether a post needs the doorbell, then look
	 * once more for WRs posted before it could see that.
	 */
	active = sroce_qp_will_return(qp);
	qp->active = active;
	WRITE_ONCE(qp->sq.hdr->kernel_active, active);
	smp_mb(); /* pairs with the provider's post-then-check */
	if (!active &&
	    (qp->attr.qp_state == IB_QPS_RTS ||
	     qp->attr.qp_state == IB_QPS_ERR) &&
	    (READ_ONCE(qp->sq.hdr->prod) != qp->sq_cons ||
	     (qp->attr.qp_state == IB_QPS_ERR && qp->rq.hdr &&
	      READ_ONCE(qp->rq.hdr->prod) != qp->rq_cons)))
		sroce_task_sched(qp);
out:
	qp->inl = NULL;
	mutex_unlock(&qp->lock);
}

static void sroce_qp_work(struct work_struct *work)
{
	sroce_qp_run(container_of(work, struct sroce_qp, work), NULL, false);
}

/**
 * sroce_task_doorbell - the provider posted sends: run the engine now
 * @qp: a user QP, kept alive by the caller's uverbs object lock
 *
 * Sends in the caller's context, without a hop through the workqueue.
 * uverbs found @qp by a handle of the caller's own uverbs file: @qp's
 * owner is the caller's user context, and only its QPs run here.
 */
void sroce_task_doorbell(struct sroce_qp *qp)
{
	struct sroce_inline inl = { .owner = qp->owner };

	sroce_qp_run(qp, &inl, false);
	/*
	 * The QPs our packets reached on this host, and those their answers
	 * reached, in turn: a request and its reply without a worker's
	 * wakeup. Each run holds only its own QP's lock.
	 */
	while (inl.done < inl.n) {
		struct sroce_qp *peer = inl.qp[inl.done++];

		sroce_qp_run(peer, &inl, true);
		sroce_qp_put(peer);
	}
}

/**
 * sroce_task_drain - stop a QP's engine for good, for its destroy
 * @qp: the QP, marked destroyed and out of the QP table, the table's
 *      reference dropped
 *
 * Needs no worker: a user's QPs share its workqueue, and a user can fill
 * a CPU's share of it (max_active) with work stalled in ODP faults on its
 * own FUSE file, so a destroy that waited for its QP's work to be run
 * there could wait as long as that file's server likes, uninterruptibly:
 * the destroys of the user's other QPs, its exit among them.
 * Here the receive queue is closed (later packets are dropped as they
 * arrive) and emptied in the caller's thread. Then waits until every
 * reference is gone: a receive path's own (held across an enqueue and
 * schedule, which do not sleep), and a doorbell's list entry, which only
 * a doorbell on a QP of this QP's user context holds (sroce_inline_add()).
 * Last, a pending work item is taken off the queue, without a worker, and
 * a running one is waited for: that runs this QP's engine only, on this
 * QP's memory (its packets to other QPs are only queued to them). A
 * cancel, which check_flush_dependency() does not judge: a destroy from
 * any work item (a kernel ULP's WQ_MEM_RECLAIM one) may wait for a work
 * item of either queue. Nothing else waits for @qp's work.
 */
void sroce_task_drain(struct sroce_qp *qp)
{
	struct sk_buff_head dead;
	struct sk_buff *skb;
	unsigned long flags;

	__skb_queue_head_init(&dead);
	spin_lock_irqsave(&qp->rx_queue.lock, flags);
	qp->rx_closed = true;
	skb_queue_splice_init(&qp->rx_queue, &dead);
	spin_unlock_irqrestore(&qp->rx_queue.lock, flags);
	while ((skb = __skb_dequeue(&dead)))
		sroce_qp_drop_skb(qp, skb);

	wait_for_completion(&qp->released);
	/*
	 * Last: a receive path that queued before the close schedules the
	 * work after it, holding its reference until then. With no
	 * reference left nothing queues it again.
	 */
	cancel_work_sync(&qp->work);
}
