/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the QP engine (sroce_task.c) - when and where a QP's work runs.
 * The rest of the driver reaches it only through these calls.
 */
#ifndef SROCE_TASK_H
#define SROCE_TASK_H

struct sroce_qp;

int sroce_task_init(void);
void sroce_task_exit(void);
void sroce_task_sched(struct sroce_qp *qp);

#endif /* SROCE_TASK_H */
