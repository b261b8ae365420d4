// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the QP engine - when and where a QP's work runs.
 *
 * A QP's work item runs its engine on the driver's workqueue, in process
 * context.
 */
#include <linux/workqueue.h>

#include "sroce_task.h"
#include "sroce_verbs.h"

/* The engine's workqueue: its work items run in process context. */
static struct workqueue_struct *sroce_wq;

/**
 * sroce_task_init - create the engine's workqueue, at module load
 *
 * Return: 0, or -ENOMEM.
 */
int sroce_task_init(void)
{
	/*
	 * Per-CPU and high priority: a packet's QP runs on the CPU that
	 * received it, before a process busy-polling its CQ there.
	 */
	sroce_wq = alloc_workqueue("sroce", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!sroce_wq)
		return -ENOMEM;
	return 0;
}

/* At module unload (or a failed load): every QP is gone. */
void sroce_task_exit(void)
{
	destroy_workqueue(sroce_wq);
}

/**
 * sroce_task_sched - run a QP's engine soon, in its work item
 * @qp: the QP
 *
 * Any context. Queues @qp's work item on this CPU unless it is queued
 * already; a run under way is followed by another.
 */
void sroce_task_sched(struct sroce_qp *qp)
{
	queue_work(sroce_wq, &qp->work);
}
