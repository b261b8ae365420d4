/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: soft RoCEv2 RDMA device.
 *
 * Objects shared by every part of the driver.  Each structure says which
 * lock protects which field.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include <rdma/sroce-abi.h>

#include "sroce_mr.h"
#include "sroce_queue.h"

#define SROCE_PORT		1
#define SROCE_GID_TBL_LEN	1024
#define SROCE_PKEY_TBL_LEN	1
#define SROCE_MAX_PD		0x10000
#define SROCE_MAX_CQ		0x4000
#define SROCE_MAX_CQE		0x10000
#define SROCE_MAX_QP		0x10000
#define SROCE_MAX_QP_WR		0x4000
#define SROCE_MAX_SGE		32
#define SROCE_MAX_INLINE	512
#define SROCE_MAX_RD_ATOMIC	16
#define SROCE_MIN_QPN		16
#define SROCE_MAX_QPN		0xffffff
#define SROCE_MAX_MR		0x100000
#define SROCE_MAX_MR_SIZE	BIT_ULL(40)
#define SROCE_VENDOR_ID		0xffffff
#define SROCE_VENDOR_PART_ID	0x0001
#define SROCE_HW_VER		1

/**
 * struct sroce_dev - one sroce device, bound to one net_device
 * @ibdev: the ib_device; must be first (ib_alloc_device)
 * @ndev: the net_device carrying our traffic; set once at creation, the
 *        reference is held by ib_device_set_netdev() until unregistration
 * @list: entry in the driver's device list, protected by sroce_dev_lock
 * @port_state: last port state reported to ib_core, protected by @state_lock
 * @state_lock: serialises port state changes and their async events
 * @num_pd: PDs allocated on this device (bounded by SROCE_MAX_PD)
 * @num_cq: CQs allocated on this device (bounded by SROCE_MAX_CQ)
 * @num_mr: MRs registered on this device (bounded by SROCE_MAX_MR)
 * @num_qp: QPs on this device (bounded by SROCE_MAX_QP)
 * @qp_xa: QP number -> struct sroce_qp (own xa_lock)
 * @qp_next: next QP number to try, so that numbers are used round-robin
 * @mem_xa: the memory table: key index -> struct sroce_mr (own xa_lock)
 * @mem_next: next index to try, so that indices are used round-robin
 */
struct sroce_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	struct list_head list;

	struct mutex state_lock; /* protects port_state */
	enum ib_port_state port_state;

	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_mr;
	struct xarray mem_xa;
	u32 mem_next;
	atomic_t num_qp;
	struct xarray qp_xa;
	u32 qp_next;
};

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
};

/**
 * struct sroce_cq - a completion queue
 * @ibcq: ib_core's CQ
 * @lock: serialises producers; protects @ring and @prod
 * @ring: the CQE ring shared with the provider
 * @prod: the kernel's producer index (the shared one is only written)
 */
struct sroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock; /* see above */
	struct sroce_ring ring;
	u32 prod;
};

/* A RoCEv2 destination: what a connected QP's (or an AH's) path needs. */
struct sroce_av {
	union ib_gid sgid;
	union ib_gid dgid;
	enum rdma_network_type net_type;	/* IPv4 or IPv6 */
	u32 flow_label;
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u8 dmac[ETH_ALEN];
};

/**
 * struct sroce_qp - a queue pair
 * @ibqp: ib_core's QP
 * @lock: serialises modify, query and destroy; protects @attr, @av
 * @attr: the attributes verbs set and query (qp_state among them)
 * @av: the destination of a connected QP (valid once IB_QP_AV is set)
 * @cap: the capacities the QP was created with
 * @sq_sig_all: every send WR completes (IB_SIGNAL_ALL_WR)
 * @sq: send ring; @sq_cons is the kernel's consumer index
 * @rq: receive ring; @rq_cons is the kernel's consumer index
 * @work: runs the QP's engine (process context, may sleep)
 * @destroyed: set under @lock by destroy; the engine does nothing after it
 */
struct sroce_qp {
	struct ib_qp ibqp;
	struct mutex lock; /* see above */
	struct ib_qp_attr attr;
	struct sroce_av av;
	struct ib_qp_cap cap;
	bool sq_sig_all;
	struct sroce_ring sq;
	u32 sq_cons;
	struct sroce_ring rq;
	u32 rq_cons;
	struct work_struct work;
	bool destroyed;
};

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

static inline struct sroce_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

static inline struct sroce_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

/* The engine's workqueue (sroce_main.c): unbound, process context. */
extern struct workqueue_struct *sroce_wq;

/* sroce_main.c */
struct sroce_dev *sroce_dev_get_by_netdev(struct net_device *ndev);
void sroce_port_update(struct sroce_dev *sdev);
enum ib_port_state sroce_netdev_port_state(struct net_device *ndev);
void sroce_dealloc_driver(struct ib_device *ibdev);

/* sroce_cq.c */
int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited);

/* sroce_av.c */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr);
void sroce_av_to_attr(const struct sroce_av *av, struct rdma_ah_attr *attr);

/* sroce_qp.c */
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
extern const struct uapi_definition sroce_uapi_defs[];

/* sroce_verbs.c */
int sroce_register_device(struct sroce_dev *sdev, const char *ibdev_name);

#endif /* SROCE_H */
