/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * sroce user/kernel ABI.
 *
 * This header is shared unchanged by the kernel module (kernel/) and the
 * libibverbs provider (userspace/).  Every structure uses fixed-width types
 * and explicit padding so that its layout is the same on both sides.
 */
#ifndef SROCE_ABI_USER_H
#define SROCE_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/* uverbs ABI version reported by the kernel and checked by the provider. */
#define SROCE_UVERBS_ABI_VERSION 1

/*
 * Devices are usually named "sroce0", "sroce1", ...; the name can be changed
 * ("rdma dev set ... name"), the node description cannot: it identifies an
 * sroce device to the provider.
 */
#define SROCE_DEV_NAME_PREFIX "sroce"
#define SROCE_NODE_DESC "sroce"

/*
 * Firmware version, as query_device's 64-bit fw_ver: major in bits 47..32,
 * minor in 31..16, sub-minor in 15..0. Shown as "major.minor.sub".
 */
#define SROCE_FW_VER_MAJOR 0
#define SROCE_FW_VER_MINOR 1
#define SROCE_FW_VER_SUB   0
#define SROCE_FW_VER ((__u64)SROCE_FW_VER_MAJOR << 32 | \
		      (__u64)SROCE_FW_VER_MINOR << 16 | SROCE_FW_VER_SUB)

/* Response to the GET_CONTEXT command (udata of alloc_ucontext). */
struct sroce_alloc_ucontext_resp {
	__u32 abi_version;	/* SROCE_UVERBS_ABI_VERSION */
	__u32 reserved;
};

/*
 * Shared rings
 *
 * Every queue shared with user space (CQ, and later SQ, RQ, SRQ) is one
 * mmap()ed area: a struct sroce_ring_hdr, then num_slots slots of slot_size
 * bytes at offset SROCE_RING_SLOTS_OFFSET. num_slots is a power of two; the
 * indices are free-running 32-bit counters, a slot is index & (num_slots - 1).
 *
 * Each index has one writer. The producer fills a slot, then publishes it
 * with a release store of @prod; the consumer reads @prod with an acquire
 * load, consumes, then releases the slot with a release store of @cons. The
 * kernel keeps its own copy of the index it writes and never trusts a value
 * it reads from the ring: a ring whose indices make no sense puts the queue
 * in error, it never makes the kernel read or write outside the ring.
 *
 * Geometry (num_slots, slot_size, mmap offset and length) is returned by the
 * create command, never read back from the ring.
 */
struct sroce_ring_hdr {
	__u32 prod;		/* written by the producer only */
	__u32 reserved0[15];
	__u32 cons;		/* written by the consumer only */
	__u32 reserved1[15];
	/*
	 * CQ: completion notification requested by the consumer, one of
	 * enum sroce_cq_notify. The consumer sets it (ibv_req_notify_cq); the
	 * kernel takes it (exchanges it with SROCE_CQ_NOTIFY_NONE) when a
	 * completion that matches it arrives and raises a completion event.
	 *
	 * SQ: nonzero while the kernel is working through the queue; it will
	 * see any WQE published before it clears this word (it looks at @prod
	 * again after clearing it), so a post that finds it set needs no
	 * doorbell. Both sides order the index and this word with full
	 * barriers.
	 *
	 * RQ: nonzero while the QP is in the error state: a post must then
	 * ring the doorbell so that the kernel flushes it.
	 */
	union {
		__u32 notify;		/* CQ */
		__u32 kernel_active;	/* SQ */
		__u32 flush;		/* RQ */
	};
	/* SQ: the QP's state (enum ibv_qp_state); written by the kernel. */
	__u32 qp_state;
	__u32 reserved2[14];
};

#define SROCE_RING_SLOTS_OFFSET 4096

enum sroce_cq_notify {
	SROCE_CQ_NOTIFY_NONE = 0,
	SROCE_CQ_NOTIFY_SOLICITED = 1,
	SROCE_CQ_NOTIFY_NEXT = 2,	/* any completion; outranks SOLICITED */
};

/* sroce_cqe.wc_flags: the values of enum ibv_wc_flags. */
enum sroce_wc_flags {
	SROCE_WC_GRH = 1 << 0,
	SROCE_WC_WITH_IMM = 1 << 1,
	SROCE_WC_WITH_INV = 1 << 3,
};

/* A completion queue entry: one CQ ring slot. */
struct sroce_cqe {
	__aligned_u64 wr_id;
	__u32 status;		/* enum ibv_wc_status */
	__u32 opcode;		/* enum ibv_wc_opcode */
	__u32 vendor_err;
	__u32 byte_len;
	__u32 ex;		/* imm_data (network order) or invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;		/* enum ibv_wc_flags */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	/* UD receives: enum rdma_network_type of the packet, its source MAC */
	__u8 network_hdr_type;
	__u8 smac[6];
	/* UD receives: 1 if it arrived on a VLAN device, and its VLAN ID */
	__u8 vlan_valid;
	__u16 vlan_id;
	__u8 reserved[8];
};

/* Where a ring is and its geometry. */
struct sroce_ring_geom {
	__aligned_u64 mmap_offset;	/* for mmap() on the command fd */
	__aligned_u64 mmap_length;
	__u32 num_slots;
	__u32 slot_size;
};

/* Response to CREATE_CQ and RESIZE_CQ (after the core response). */
struct sroce_create_cq_resp {
	struct sroce_ring_geom ring;
};

/*
 * RDMA Atomic Write (IBTA 1.5): the send WQE opcode and the completion
 * opcode, the values of IBV_WR_ATOMIC_WRITE and IBV_WC_ATOMIC_WRITE. The
 * WQE carries the 8 bytes to write in wr.atomic.swap.
 */
#define SROCE_WR_ATOMIC_WRITE 15
#define SROCE_WC_ATOMIC_WRITE 9

/* A scatter/gather element, as in struct ibv_sge. */
struct sroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * A send work request: one SQ slot. num_sge struct sroce_sge, or inline_len
 * bytes of inline data, follow the header.
 */
struct sroce_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;		/* enum ibv_wr_opcode */
	__u32 send_flags;	/* enum ibv_send_flags */
	__u32 num_sge;
	__u32 inline_len;
	__u32 ex;		/* imm_data (network order), rkey to invalidate,
				 * or a bound window's new key
				 */
	__u32 xrc_srqn;		/* XRC send QPs: the remote XRC SRQ */
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__u32 ah_num;	/* from the create AH response */
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		/*
		 * IBV_WR_BIND_MW (type 2) and ibv_bind_mw() (type 1): ex is
		 * the window's new key; length 0 unbinds a type 1 window.
		 */
		struct {
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 mw_key;	/* ibv_mw.rkey (its index names it) */
			__u32 mr_lkey;
			__u32 access;	/* enum ibv_access_flags */
			__u32 reserved;
		} bind;
	} wr;
};

/* A receive work request: one RQ or SRQ slot; num_sge SGEs follow. */
struct sroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

/*
 * REG_MR's driver data (after the core command), optional: without it, or
 * with flags 0, the command registers user memory.
 *
 * SROCE_REG_MR_NULL makes a null MR (ibv_alloc_null_mr()): its key is an
 * lkey only (no rkey: the response's is 0), writes through it are discarded
 * and reads give zeroes. The command's start and hca_va must be 0, its
 * length 2^64 - 1 and its access IB_ACCESS_LOCAL_WRITE or 0.
 */
enum sroce_reg_mr_flags {
	SROCE_REG_MR_NULL = 1 << 0,
};

struct sroce_reg_mr_cmd {
	__u32 flags;		/* enum sroce_reg_mr_flags */
	__u32 reserved;		/* 0 */
};

/* Response to CREATE_AH (after the core response). */
struct sroce_create_ah_resp {
	__u32 ah_num;		/* names the AH in UD send WQEs */
	__u32 reserved;
};

/* Response to CREATE_SRQ (after the core response); slots are receive WQEs. */
struct sroce_create_srq_resp {
	struct sroce_ring_geom ring;
};

/* Response to CREATE_QP (after the core response). */
struct sroce_create_qp_resp {
	struct sroce_ring_geom sq;
	struct sroce_ring_geom rq;	/* num_slots 0 when the QP uses an SRQ */
};

/*
 * Driver methods (ioctl() on the command fd). ib_uverbs refuses write()
 * commands from any process but the one that opened the fd, so what a
 * process that imported the context (ibv_import_device) needs is here:
 *
 * - QP_DOORBELL asks the kernel to look at a QP's rings.
 * - QP_MODIFY is ibv_modify_qp: the attributes as in the MODIFY_QP
 *   command (struct ib_uverbs_modify_qp, its response field ignored).
 * - PD_QUERY checks that a PD handle names a PD of the context
 *   (ibv_import_pd).
 * - MR_IN_PD checks that an MR handle names an MR of the given PD
 *   (ibv_import_mr imports an MR into the PD it was registered in).
 */
enum sroce_qp_methods {
	SROCE_METHOD_QP_DOORBELL = (1U << UVERBS_ID_NS_SHIFT),
	SROCE_METHOD_QP_MODIFY,
};

enum sroce_qp_doorbell_attrs {
	SROCE_ATTR_DOORBELL_QP_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
};

enum sroce_qp_modify_attrs {
	SROCE_ATTR_MODIFY_QP_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	SROCE_ATTR_MODIFY_QP_CMD,
};

enum sroce_pd_methods {
	SROCE_METHOD_PD_QUERY = (1U << UVERBS_ID_NS_SHIFT),
};

enum sroce_pd_query_attrs {
	SROCE_ATTR_QUERY_PD_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
};

enum sroce_mr_methods {
	SROCE_METHOD_MR_IN_PD = (1U << UVERBS_ID_NS_SHIFT),
};

enum sroce_mr_in_pd_attrs {
	SROCE_ATTR_MR_IN_PD_MR_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	SROCE_ATTR_MR_IN_PD_PD_HANDLE,
};

#endif /* SROCE_ABI_USER_H */
