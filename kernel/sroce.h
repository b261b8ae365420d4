/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the driver's objects - device, PD, CQ, SRQ, AH and QP - with the
 * to_*() helpers that reach them from ib_core's, what a QP is (its
 * transport, whether it sends) and what a send WQE is (local, answered by
 * a response; its copy). Each structure says which lock protects which
 * field.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/timer.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include <rdma/sroce-abi.h>

#include "sroce_counters.h"
#include "sroce_hdr.h"
#include "sroce_kmem.h"
#include "sroce_mem_api.h"
#include "sroce_param.h"
#include "sroce_queue.h"

struct sroce_net;

/**
 * struct sroce_dev - one sroce device, bound to one net_device
 * @ibdev: the ib_device; must be first (ib_alloc_device)
 * @ndev: the net_device carrying our traffic; set once at creation and held
 *        (@ndev_tracker) until sroce_dealloc_driver(), so that its
 *        namespace's cleanup waits for the device to be freed
 * @ndev_tracker: our reference on @ndev
 * @sn: the UDP sockets of the namespace @ndev was in at creation
 *      (sroce_net_attach()); opaque outside sroce_net.c
 * @list: entry in the driver's device list, protected by sroce_dev_lock
 * @port_state: last port state reported to ib_core, protected by @state_lock
 *              (the send path reads @ndev's flags instead, lock-free:
 *              sroce_ndev_active())
 * @state_lock: serialises port state changes and their async events
 * @num_pd: PDs allocated on this device (bounded by SROCE_MAX_PD)
 * @num_cq: CQs allocated on this device (bounded by SROCE_MAX_CQ)
 * @num_mr: MRs registered on this device (bounded by SROCE_MAX_MR)
 * @num_mw: memory windows on this device (bounded by SROCE_MAX_MW)
 * @num_qp: QPs on this device (bounded by SROCE_MAX_QP)
 * @qp_xa: QP number -> struct sroce_qp (own xa_lock)
 * @num_ah: address handles on this device (bounded by SROCE_MAX_AH)
 * @num_srq: SRQs on this device (bounded by SROCE_MAX_SRQ)
 * @mcast_lock: protects @mcast_groups and @num_mcast_grp (taken in softirq)
 * @mcast_groups: the multicast groups QPs are attached to
 * @num_mcast_grp: how many
 * @ah_xa: AH number -> struct sroce_ah (own xa_lock)
 * @ah_next: next AH number to try
 * @srq_xa: XRC SRQ number -> struct sroce_srq (own xa_lock)
 * @srq_next: next XRC SRQ number to try
 * @mem_xa: the memory table: key index -> struct sroce_mem, the entry of
 *          an MR or a window (own xa_lock)
 * @key_lock: serialises handing out key indices (sroce_mem_add_key())
 * @key_used: bitmap of the key indices handed out since the last renewal,
 *            those in use among them (under @key_lock)
 * @key_nused: how many bits of @key_used are set (under @key_lock)
 * @kmem_users: user id -> struct sroce_kmem_user, the users whose
 *              processes have the device open (sroce_kmem.c)
 * @kmem_lock: serialises adding and removing @kmem_users' entries
 * @counters: the device's statistics, indexed by enum sroce_counter: added
 *            to atomically from any context (sroce_count()), read by
 *            ops.get_hw_stats ("rdma statistic")
 */
struct sroce_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct sroce_net *sn;
	struct list_head list;

	struct mutex state_lock; /* protects port_state */
	enum ib_port_state port_state;

	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_mr;
	atomic_t num_mw;
	struct xarray mem_xa;
	struct mutex key_lock; /* protects key_used, key_nused */
	unsigned long *key_used;
	u32 key_nused;
	atomic_t num_qp;
	struct xarray qp_xa;
	atomic_t num_ah;
	atomic_t num_srq;
	spinlock_t mcast_lock; /* see above */
	struct list_head mcast_groups;
	unsigned int num_mcast_grp;
	struct xarray ah_xa;
	u32 ah_next;
	struct xarray srq_xa;
	u32 srq_next;
	struct xarray kmem_users;
	struct mutex kmem_lock; /* see above */
	atomic64_t counters[SROCE_NUM_COUNTERS];
};

static inline void sroce_count_add(struct sroce_dev *sdev,
				   enum sroce_counter c, u64 n)
{
	atomic64_add(n, &sdev->counters[c]);
}

static inline void sroce_count(struct sroce_dev *sdev, enum sroce_counter c)
{
	atomic64_inc(&sdev->counters[c]);
}

/* Take @n off a counter that is a level (kmem_bytes, ...), not events. */
static inline void sroce_count_sub(struct sroce_dev *sdev,
				   enum sroce_counter c, u64 n)
{
	atomic64_sub(n, &sdev->counters[c]);
}

/**
 * struct sroce_ucontext - a process's context
 * @ibuc: ib_core's
 * @ku: the user its objects' memory is charged to (sroce_kmem.c)
 */
struct sroce_ucontext {
	struct ib_ucontext ibuc;
	struct sroce_kmem_user *ku;
};

struct sroce_pd {
	struct ib_pd ibpd;
};

struct sroce_xrcd {
	struct ib_xrcd ibxrcd;
};

/**
 * struct sroce_cq - a completion queue
 * @ibcq: ib_core's CQ
 * @lock: serialises producers (and a kernel CQ's pollers); protects @ring,
 *        @prod, @kqp and @kcons
 * @ring: the CQE ring, shared with the provider unless the CQ is a kernel
 *        consumer's
 * @prod: the kernel's producer index (the shared one is only written)
 * @kqp: kernel CQ only: the QP of each slot's completion (for ib_wc.qp)
 * @kcons: kernel CQ only: the consumer index of ops.poll_cq
 * @kmem: its ring's memory, charged (sroce_kmem.c)
 */
struct sroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock; /* see above */
	struct sroce_ring ring;
	u32 prod;
	struct ib_qp **kqp;
	u32 kcons;
	struct sroce_kmem kmem;
};

/*
 * A RoCEv2 destination: what a connected QP's (or an AH's) path needs.
 * @sgid_attr is the source GID's entry in ib_core's GID table, a reference
 * the av holds (sroce_av_from_attr(), dropped by sroce_av_put()): packets
 * leave through, and are taken from, its net_device as it is at each
 * packet (none once the GID is deleted: rdma_read_gid_attr_ndev_rcu()),
 * not a device number that another device may have by then. @vlan_id is
 * that device's VLAN when the path was set (sroce_gid_egress()), which a
 * looped-back UD datagram reports.
 */
struct sroce_av {
	union ib_gid sgid;
	union ib_gid dgid;
	const struct ib_gid_attr *sgid_attr;	/* NULL: no path set */
	enum rdma_network_type net_type;	/* IPv4 or IPv6 */
	u32 flow_label;
	u16 vlan_id;		/* its VLAN ID, or SROCE_NO_VLAN */
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;			/* as given; its priority: sroce_av_prio() */
	u8 dmac[ETH_ALEN];
};

/*
 * The priority (skb->priority) of a path's packets: its SL's 4 bits, as
 * ib_core passes whatever u8 the user gave. A VLAN device's egress map
 * turns it into the tag's 802.1p bits, a qdisc into a band or traffic
 * class.
 */
static inline u32 sroce_av_prio(const struct sroce_av *av)
{
	return av->sl & 0xf;
}

/* Local operations: no packet, done when executed. */
static inline bool sroce_wr_is_local(u32 opcode)
{
	return opcode == IB_WR_REG_MR || opcode == IB_WR_LOCAL_INV ||
	       opcode == IB_UVERBS_WR_BIND_MW;
}

/*
 * READ and atomics complete by their response, not by an ACK; until then
 * they count against the QP's max_rd_atomic (sroce_req.rd_atomic).
 */
static inline bool sroce_needs_response(u32 wr_opcode)
{
	return wr_opcode == IB_UVERBS_WR_RDMA_READ ||
	       wr_opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       wr_opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
}

/* A send WQE's progress, beside its copy in sroce_qp.sq_copy. */
struct sroce_swqe {
	u32 first_psn;
	u32 last_psn;
	u32 len;		/* message bytes */
	u32 resp_pkts;		/* READ: response packets taken, in order */
	u32 mtu;		/* payload bytes per packet, fixed when its
				 * first packet is sent: an SQD to SQD path
				 * change must not reshape a message
				 */
	u8 done;		/* all its packets are sent (local: executed) */
	u8 gap;			/* a response was missing: it is being re-sent */
};

/**
 * struct sroce_req - requester state (under sroce_qp.lock)
 * @next: index of the WQE being sent (sq_comp <= next <= sq_cons)
 * @sent: bytes of it already sent
 * @psn: PSN of the next request packet
 * @psn_hi: one past the highest PSN sent (@psn goes back on a retry, this
 *	does not): responses must be for PSNs before it
 * @rd_atomic: READ and atomic WQEs sent and not completed
 * @noack_pkts: packets sent since the last that asked for an ACK
 * @acked_psn: the first PSN the peer has not acknowledged (by an ACK, a
 *	NAK's PSN, a READ response or an atomic ACK): the send window
 *	starts there
 * @retries: transport retries left for the oldest WQE
 * @rnr_retries: RNR retries left since the responder last made progress
 * @nak_psn: the PSN of the last sequence NAK
 * @rnr_psn: the highest PSN RNR NAKed since the last ACK or READ response
 *	(sroce_comp_progress()) or the SQ PSN was set; SROCE_PSN_NONE if none
 * @ghost_lo: the first PSN the go-backs of the loss episode sent again
 *	(the lowest of their starts)
 * @ghost_hi: one past the last: @psn_hi at the latest of them
 * @ghost_left: answers to those PSNs that may still come after their WQE
 *	completed and restart the transport timer; 0: no episode (no
 *	go-back since the SQ PSN was set, an answer at or past @ghost_hi
 *	came, or as many such answers as PSNs sent again)
 * @rnr_wait: sending is paused until @timer fires
 * @deadline: when the transport timer expires (jiffies), pushed forward
 *	on progress without touching the timer itself
 * @retry_on: the transport timer is running (requests are outstanding)
 * @timed_out: the retry timer fired (set by the timer, taken by the engine)
 */
struct sroce_req {
	unsigned long deadline;
	u32 next;
	u32 sent;
	u32 psn;
	u32 psn_hi;
	u32 rd_atomic;
	u32 noack_pkts;
	u32 acked_psn;
	u32 nak_psn;
	u32 rnr_psn;
	u32 ghost_lo;
	u32 ghost_hi;
	u32 ghost_left;
	u8 retries;
	u8 rnr_retries;
	bool retry_on;
	bool rnr_wait;
	bool timed_out;
};

/**
 * struct sroce_resp - responder state (under sroce_qp.lock)
 * @epsn: the PSN expected next
 * @msn: messages completed
 * @opcode: opcode of the last packet of the message in progress, or -1
 * @nak_sent: a sequence NAK was sent for @epsn, or an RNR NAK for memory
 *            not present (sroce_resp.c): later packets are dropped without
 *            another NAK until @epsn comes
 * @rwqe: copy of the receive WQE a SEND in progress fills (rq slot size)
 * @rwqe_valid: @rwqe holds a WQE (taken from the RQ at the first packet)
 * @offset: bytes of the message received so far
 * @rkey: the key an RDMA WRITE in progress writes through; each of its
 *        packets looks it up again (sroce_resp_msg_map())
 * @map_id: the map its first packet found, which each packet must find
 * @va: where its next byte goes
 * @resid: bytes of the RDMA WRITE still expected
 * @wlen: the RDMA WRITE's length
 * @read_rkey: the key a READ being answered reads through, looked up for
 *             each response
 * @read_map_id: the map the READ request found
 * @read_va: where its next response reads
 * @read_left: bytes still to send
 * @read_sent: bytes sent
 * @read_psn: PSN of its next response
 * @read_waits: times in a row its next response found its page missing,
 *              with the QP not to wait for faults (an XRC target): it
 *              waits for @timer of struct sroce_qp (0: not waiting)
 * @srq: XRC target QPs: the SRQ the XRCETH of the packet being processed
 *       names (the message's), a reference dropped when the packet is
 *       done; its PD checks memory accesses, its WQEs receive and its CQ
 *       completes
 * @xrc_srqn: XRC target QPs: the SRQ number of the message in progress
 * @res: the responder resources: the last SROCE_MAX_RD_ATOMIC READs and
 *       atomics taken, so that a duplicate is answered again (a READ from
 *       memory, an atomic with the value it fetched, never executed twice)
 *       and a PSN no request had is ignored
 * @res_next: where the next one is recorded in @res
 * @ack_owed: an ACK asked for is not sent yet: it goes out once the packets
 *            queued now are taken, or before any other answer, so a burst
 *            of messages gets one ACK (for @ack_psn)
 * @ack_psn: the PSN the owed ACK acknowledges
 * @acks_held: ACKs folded into the owed one
 * @write_ahead: faulting in ahead of the RDMA WRITEs taken (ODP)
 * @read_ahead: faulting in ahead of the READs answered (ODP)
 */
struct sroce_resp {
	u32 epsn;
	u32 msn;
	int opcode;
	bool nak_sent;
	bool ack_owed;
	u32 ack_psn;
	u32 acks_held;
	void *rwqe;
	bool rwqe_valid;
	u32 offset;
	u32 rkey;
	u64 map_id;
	u64 va;
	u32 resid;
	u32 wlen;
	u32 read_rkey;
	u64 read_map_id;
	u64 read_va;
	u32 read_left;
	u32 read_sent;
	u32 read_psn;
	u8 read_waits;
	struct sroce_srq *srq;
	u32 xrc_srqn;
	struct sroce_res {
		u64 orig;	/* atomic: the value fetched */
		u32 first_psn;
		u32 last_psn;	/* READ: of its last response */
		u8 kind;	/* SROCE_RES_* */
	} res[SROCE_MAX_RD_ATOMIC];
	u32 res_next;
	struct sroce_ahead write_ahead;
	struct sroce_ahead read_ahead;
};

enum { SROCE_RES_FREE, SROCE_RES_READ, SROCE_RES_ATOMIC };

/**
 * struct sroce_srq - a shared receive queue
 * @ibsrq: ib_core's SRQ
 * @lock: serialises the QPs taking WQEs and a kernel SRQ's posts;
 *        protects @cons, @limit
 * @ring: the receive WQE ring shared with the provider
 * @cons: the kernel's consumer index
 * @limit: raise IB_EVENT_SRQ_LIMIT_REACHED when fewer WQEs remain (0: off)
 * @max_sge: SGEs a WQE may have
 * @ref: XRC SRQs: held by the SRQ table and by each XRC target QP using
 *       the SRQ for a packet or a message
 * @released: completed when @ref drops to zero
 * @kmem: its ring's memory, charged (sroce_kmem.c)
 */
struct sroce_srq {
	struct ib_srq ibsrq;
	spinlock_t lock; /* see above */
	struct sroce_ring ring;
	u32 cons;
	u32 limit;
	u32 max_sge;
	refcount_t ref;
	struct completion released;
	struct sroce_kmem kmem;
};

/**
 * struct sroce_ah - an address handle (for UD sends)
 * @ibah: ib_core's AH
 * @av: the destination
 * @ah_num: its number in sroce_dev.ah_xa, which UD WQEs name
 * @loopback: the destination is one of our own GIDs
 */
struct sroce_ah {
	struct ib_ah ibah;
	struct sroce_av av;
	u32 ah_num;
	bool loopback;
};

/* A doorbell's list of the QPs it runs (the engine, sroce_task.c). */
struct sroce_inline;

/**
 * struct sroce_qp - a queue pair
 * @ibqp: ib_core's QP
 * @lock: serialises the engine's runs (sroce_task.c), modify, query and
 *        destroy; protects @attr, @av and the engine's state (@req,
 *        @resp, the ring indices below)
 * @attr: the attributes verbs set and query (qp_state among them)
 * @av: the destination of a connected QP (valid once IB_QP_AV is set)
 * @cap: the capacities the QP was created with
 * @sq_sig_all: every send WR completes (IB_SIGNAL_ALL_WR)
 * @post_lock: kernel QPs: serialises ops.post_send and ops.post_recv
 * @sq: send ring
 * @sq_cons: the index after the last send WQE the engine has taken from @sq
 *           into @sq_copy; @sq_comp, not this, is published as the ring's
 *           consumer index (under @lock)
 * @rq: receive ring (none with an SRQ, or for an XRC QP)
 * @rq_cons: the kernel's consumer index of @rq: the oldest receive WQE not
 *           completed, the one the responder holds a copy of or takes next;
 *           advanced and published as each completes (under @lock)
 * @work: runs the QP's engine (sroce_task.c; process context, may sleep)
 * @wq: the workqueue @work is queued on: its user's own, or the kernel
 *      QPs' (sroce_task.c), set at create, never changed
 * @destroyed: set under @lock by destroy; the engine does nothing after it
 * @active: what the engine last published as the SQ's kernel_active
 * @inl: while a doorbell runs the engine (under @lock): where its loopback
 *       packets list their QPs, or NULL
 * @owner: the user context (the opened uverbs file) that made a user QP;
 *         NULL for a kernel QP. Only a doorbell on a QP of @owner runs
 *         this QP inline (sroce_task.c). Compared, never dereferenced
 * @ref: held by the QP table, by each received packet queued to the QP and
 *       by an entry of a doorbell of @owner's (struct sroce_inline)
 * @released: completed when @ref drops to zero
 * @rx_queue: received packets for the engine, queued and taken only by
 *            sroce_task.c (own lock)
 * @rx_closed: set by destroy under @rx_queue's lock: nothing is queued
 *             after it, packets for the QP are dropped as they arrive
 * @timer: RNR back-off; for an XRC target QP, which has no requester, a
 *         READ's wait for its memory (sroce_resp.c); queues @work when it
 *         fires
 * @retry_timer: RC transport timer (attribute timeout); pushed forward by
 *               every acknowledgment, it fires only when nothing came back
 * @mtu: bytes of payload per packet on the path
 * @loopback: the destination is one of our own GIDs
 * @sport: UDP source port of our packets
 * @sq_copy: kernel copies of the send WQEs the engine has taken, by index
 * @swqe: their progress, by index
 * @sq_comp: the oldest send WQE not completed (published as the SQ's cons)
 * @req: requester state
 * @resp: responder state
 * @kmem: its rings' and its WQE state's memory, charged (sroce_kmem.c)
 */
struct sroce_qp {
	struct ib_qp ibqp;
	struct mutex lock; /* see above */
	struct ib_qp_attr attr;
	struct sroce_av av;
	struct ib_qp_cap cap;
	bool sq_sig_all;
	spinlock_t post_lock; /* see above */
	struct sroce_ring sq;
	u32 sq_cons;
	struct sroce_ring rq;
	u32 rq_cons;
	struct work_struct work;
	struct workqueue_struct *wq;
	bool destroyed;
	bool active;
	struct sroce_inline *inl;
	const struct ib_ucontext *owner;
	refcount_t ref;
	struct completion released;
	struct sk_buff_head rx_queue;
	bool rx_closed;
	struct timer_list timer;
	struct timer_list retry_timer;
	u32 mtu;
	bool loopback;
	u16 sport;
	void *sq_copy;
	struct sroce_swqe *swqe;
	u32 sq_comp;
	struct sroce_req req;
	struct sroce_resp resp;
	struct sroce_kmem kmem;
};

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

/*
 * The user an object made through @udata is charged to (its context's);
 * NULL without @udata: a kernel consumer's object.
 */
static inline struct sroce_kmem_user *sroce_udata_kmem_user(struct ib_udata *udata)
{
	if (!udata)
		return NULL;
	return rdma_udata_to_drv_context(udata, struct sroce_ucontext,
					 ibuc)->ku;
}

static inline struct sroce_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

static inline struct sroce_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct sroce_ah, ibah);
}

static inline struct sroce_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, ibsrq);
}

static inline struct sroce_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

/*
 * Debug lines of the device and of its objects, for what the driver drops,
 * NAKs or refuses: dynamic debug, so off (and free) unless enabled, e.g.
 * "module sroce +p" in /sys/kernel/debug/dynamic_debug/control. A QP or
 * CQ is named by the number "rdma resource" shows: qp#QPN, cq#CQN. Memory
 * objects have theirs in sroce_mem.h.
 */
#define sroce_dbg_dev(sdev, fmt, ...) \
	ibdev_dbg(&(sdev)->ibdev, fmt, ##__VA_ARGS__)

#define sroce_dbg_qp(qp, fmt, ...)					\
	do {								\
		const struct sroce_qp *__qp = (qp);			\
									\
		ibdev_dbg(__qp->ibqp.device, "qp#%u: " fmt,		\
			  __qp->ibqp.qp_num, ##__VA_ARGS__);		\
	} while (0)

#define sroce_dbg_cq(cq, fmt, ...)					\
	do {								\
		const struct sroce_cq *__cq = (cq);			\
									\
		ibdev_dbg(__cq->ibcq.device, "cq#%u: " fmt,		\
			  __cq->ibcq.res.id, ##__VA_ARGS__);		\
	} while (0)

/*
 * A drop (a packet, or a remote access refused): counted in @cnt and traced
 * by one debug line that begins with the counter's name, as "rdma
 * statistic" shows it, then the site's details; sroce_drop_qp() names the
 * QP next: "drop_qp_state: qp#QPN: ...".
 */
#define sroce_drop(sdev, cnt, fmt, ...)					\
	do {								\
		struct sroce_dev *__sdev = (sdev);			\
		enum sroce_counter __cnt = (cnt);			\
									\
		sroce_count(__sdev, __cnt);				\
		sroce_dbg_dev(__sdev, "%s: " fmt,			\
			      sroce_counter_name(__cnt), ##__VA_ARGS__);	\
	} while (0)

#define sroce_drop_qp(qp, cnt, fmt, ...)				\
	do {								\
		const struct sroce_qp *__dqp = (qp);			\
									\
		sroce_drop(to_sdev(__dqp->ibqp.device), cnt,		\
			   "qp#%u: " fmt, __dqp->ibqp.qp_num,		\
			   ##__VA_ARGS__);				\
	} while (0)

/* Drop a reference to @qp (struct sroce_qp.ref); the last one wakes destroy. */
static inline void sroce_qp_put(struct sroce_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

/* Datagram QPs: UD, and the GSI QP (QP1), which is UD on the wire. */
static inline bool sroce_qp_is_ud(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/*
 * The send queue works: RTS, or SQD, where what was sent is still answered
 * and sent again, until it drains.
 */
static inline bool sroce_qp_sends(const struct sroce_qp *qp)
{
	return qp->attr.qp_state == IB_QPS_RTS ||
	       qp->attr.qp_state == IB_QPS_SQD;
}

/* Reliable connected QPs: RC, and the two halves of XRC. */
static inline bool sroce_qp_is_reliable(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC ||
	       qp->ibqp.qp_type == IB_QPT_XRC_INI ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

/*
 * What a QP takes from the wire besides its transport (IBTA vol 1 ch. 9,
 * annex A14): an XRC initiator has no responder, its requests go to XRC
 * targets; only RC and XRC initiators have a requester that is answered
 * (UC and UD are not; an XRC target sends nothing).
 */
static inline bool sroce_qp_takes_requests(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type != IB_QPT_XRC_INI;
}

static inline bool sroce_qp_takes_responses(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC ||
	       qp->ibqp.qp_type == IB_QPT_XRC_INI;
}

/* The transport bits of the opcodes the QP sends and accepts. */
static inline u8 sroce_qp_transport(const struct sroce_qp *qp)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_UC:
		return SROCE_UC;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		return SROCE_UD;
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		return SROCE_XRC;
	default:
		return SROCE_RC;
	}
}

/* The copy of send WQE @index that the requester sends and resends. */
static inline struct sroce_send_wqe *sroce_swqe_copy(struct sroce_qp *qp,
						     u32 index)
{
	return qp->sq_copy + (size_t)(index & (qp->sq.num_slots - 1)) *
			     qp->sq.slot_size;
}

/*
 * The requester's SGEs: lkeys of the QP's PD, memory of the QP's own user
 * context, whose faults it may wait for.
 */
static inline int sroce_qp_copy_sges(struct sroce_qp *qp,
				     const struct sroce_sge *sge, u32 nsge,
				     u32 offset, void *buf, u32 len,
				     bool to_mem)
{
	return sroce_copy_sges(to_sdev(qp->ibqp.device), qp->ibqp.pd, sge,
			       nsge, offset, buf, len, to_mem, SROCE_FAULT);
}

#endif /* SROCE_H */
