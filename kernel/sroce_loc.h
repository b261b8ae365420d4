/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the calls between the driver's files, by the file that implements
 * them (as rdma_rxe's rxe_loc.h). The engine (sroce_task.h) and memory
 * (sroce_mem_api.h) have headers of their own.
 */
#ifndef SROCE_LOC_H
#define SROCE_LOC_H

#include "sroce.h"

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
int sroce_cq_post(struct sroce_cq *cq, struct sroce_qp *qp,
		  const struct sroce_cqe *cqe, bool solicited);
int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
void sroce_cq_clean(struct sroce_cq *cq, struct sroce_qp *qp);
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* sroce_av.c */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr,
		       struct ib_udata *udata);
void sroce_av_put(struct sroce_av *av);
void sroce_av_to_attr(const struct sroce_av *av, struct rdma_ah_attr *attr);
int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags);
int sroce_ah_lookup(struct sroce_dev *sdev, struct ib_pd *pd, u32 ah_num,
		    struct sroce_av *av, bool *loopback);

/* sroce_net.c */
int sroce_net_init(void);
void sroce_net_exit(void);
int sroce_net_attach(struct sroce_dev *sdev);
void sroce_net_detach(struct sroce_dev *sdev);
bool sroce_ndev_active(const struct net_device *ndev);
void sroce_rcv(struct sroce_dev *sdev, struct sk_buff *skb, bool wire);
struct sk_buff *sroce_pkt_alloc(struct sroce_dev *sdev,
				const struct sroce_av *av, u8 opcode, u32 psn,
				u32 paylen);
int sroce_pkt_xmit(struct sroce_dev *sdev, const struct sroce_av *av,
		   u16 sport, bool loopback, struct sk_buff *skb);
bool sroce_av_is_local(struct sroce_dev *sdev, const struct sroce_av *av);
enum ib_mtu sroce_av_mtu(struct sroce_dev *sdev, const struct sroce_av *av);
int sroce_gid_egress(struct sroce_dev *sdev, const struct ib_gid_attr *attr,
		     struct sroce_av *av);
bool sroce_pkt_on_path(struct sk_buff *skb, const struct sroce_av *av);
bool sroce_prio_allowed(struct sroce_dev *sdev, u32 prio);

/* sroce_icrc.c */
__le32 sroce_icrc(struct sk_buff *skb);

/* sroce_req.c */
void sroce_req_run(struct sroce_qp *qp);

/* sroce_resp.c */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb);
void sroce_resp_reset(struct sroce_qp *qp);
bool sroce_resp_continue(struct sroce_qp *qp);
void sroce_resp_flush_ack(struct sroce_qp *qp);

/* sroce_comp.c */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb);
void sroce_comp_send_done(struct sroce_qp *qp);
void sroce_comp_local_done(struct sroce_qp *qp);
void sroce_qp_complete_send(struct sroce_qp *qp, enum ib_wc_status status);
void sroce_comp_arm_retry(struct sroce_qp *qp);
void sroce_comp_timeout(struct sroce_qp *qp);
void sroce_qp_flush(struct sroce_qp *qp);

/* sroce_mcast.c */
int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		     const union ib_gid *dgid);

/* sroce_srq.c */
int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
bool sroce_srq_take(struct sroce_srq *srq, void *wqe);
struct sroce_srq *sroce_xrc_srq_get(struct sroce_dev *sdev, u32 srqn);
void sroce_srq_put(struct sroce_srq *srq);
int sroce_post_recv_wrs(struct sroce_ring *ring, u32 max_sge,
			const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
u32 sroce_recv_slot_size(u32 max_sge);

/* sroce_qp.c */
void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type);
void sroce_qp_error(struct sroce_qp *qp);
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

/* sroce_post.c */
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);

/* sroce_uapi.c */
extern const struct uapi_definition sroce_uapi_defs[];

/* sroce_verbs.c */
int sroce_register_device(struct sroce_dev *sdev, const char *ibdev_name);

#endif /* SROCE_LOC_H */
