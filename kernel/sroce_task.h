/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the QP engine (sroce_task.c) - when and where a QP's work runs.
 * The rest of the driver reaches it only through these calls.
 */
#ifndef SROCE_TASK_H
#define SROCE_TASK_H

struct sk_buff;
struct sroce_inline;
struct sroce_qp;

/* Module load and unload: the engine's workqueue. */
int sroce_task_init(void);
void sroce_task_exit(void);

/* A QP's life: created, scheduled, fed packets, rung, destroyed. */
void sroce_task_qp_init(struct sroce_qp *qp);
void sroce_task_sched(struct sroce_qp *qp);
void sroce_task_rx(struct sroce_qp *qp, struct sk_buff *skb,
		   struct sroce_inline *inl);
void sroce_task_doorbell(struct sroce_qp *qp);
void sroce_task_drain(struct sroce_qp *qp);

#endif /* SROCE_TASK_H */
