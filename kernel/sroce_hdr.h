/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the RoCEv2 wire format (InfiniBand transport headers over UDP 4791).
 *
 * After the UDP header: BTH, then the extended headers an opcode carries,
 * in this order: XRCETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt,
 * IETH;
 * then the payload, 0-3 pad bytes to a 4-byte boundary, and the ICRC.
 *
 * Also what the driver keeps about a packet while it handles it
 * (struct sroce_pkt, in skb->cb), and PSN arithmetic.
 */
#ifndef SROCE_HDR_H
#define SROCE_HDR_H

#include <linux/skbuff.h>
#include <linux/types.h>

#define SROCE_UDP_PORT		4791
#define SROCE_ICRC_LEN		4
#define SROCE_DEFAULT_PKEY	0xffff
#define SROCE_PSN_MASK		0xffffff
/* No PSN (outside the 24 bits of every PSN). */
#define SROCE_PSN_NONE		U32_MAX
#define SROCE_QPN_MASK		0xffffff
#define SROCE_GSI_QKEY		0x80010000
#define SROCE_MCAST_QPN		0xffffff
/*
 * The VLAN ID of no VLAN: what rdma_vlan_dev_vlan_id() says of a device
 * that is not a VLAN device, and the wc->vlan_id ib_core assumes without
 * IB_WC_WITH_VLAN (ib_init_ah_attr_from_wc()).
 */
#define SROCE_NO_VLAN		0xffff
/*
 * A message spans fewer PSNs than this: PSNs compare within half of their
 * 2^24 space (sroce_psn_before()), and a message's PSNs, its READ's
 * responses and the window after them must all compare in order. At the
 * smallest MTU (256) that bounds a message below 2^30 bytes.
 */
#define SROCE_MAX_MSG_PKTS	BIT(22)

struct sroce_bth {
	u8 opcode;
	u8 flags;		/* SE, M, PadCnt (2 bits), TVer (4 bits) */
	__be16 pkey;
	__be32 qpn;		/* bits 31..24 reserved (resv8a), 23..0 QPN */
	__be32 apsn;		/* bit 31 AckReq, bits 23..0 PSN */
};

#define SROCE_BTH_SE		0x80
#define SROCE_BTH_MIG		0x40
#define SROCE_BTH_PAD_SHIFT	4
#define SROCE_BTH_PAD_MASK	0x30
#define SROCE_BTH_ACKREQ	0x80000000U

struct sroce_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

struct sroce_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

struct sroce_aeth {
	__be32 smsn;		/* syndrome (8 bits), MSN (24 bits) */
};

struct sroce_atmack {
	__be64 orig;
} __packed;

struct sroce_xrceth {
	__be32 srqn;		/* bits 23..0 the XRC SRQ number */
};

struct sroce_deth {
	__be32 qkey;
	__be32 sqp;		/* bits 23..0 source QPN */
};

/* AETH syndromes */
#define SROCE_AETH_ACK_UNLIMITED	0x1f	/* ACK, no credit count */
#define SROCE_AETH_RNR_NAK		0x20	/* | RNR timer (5 bits) */
#define SROCE_AETH_NAK			0x60	/* | NAK code */
#define SROCE_AETH_TYPE_MASK		0xe0
#define SROCE_NAK_PSN_SEQ		0
#define SROCE_NAK_INVALID_REQ		1
#define SROCE_NAK_REM_ACCESS		2
#define SROCE_NAK_REM_OP		3

enum sroce_opcode {
	/* RC */
	SROCE_RC_SEND_FIRST		= 0x00,
	SROCE_RC_SEND_MIDDLE		= 0x01,
	SROCE_RC_SEND_LAST		= 0x02,
	SROCE_RC_SEND_LAST_IMM		= 0x03,
	SROCE_RC_SEND_ONLY		= 0x04,
	SROCE_RC_SEND_ONLY_IMM		= 0x05,
	SROCE_RC_WRITE_FIRST		= 0x06,
	SROCE_RC_WRITE_MIDDLE		= 0x07,
	SROCE_RC_WRITE_LAST		= 0x08,
	SROCE_RC_WRITE_LAST_IMM		= 0x09,
	SROCE_RC_WRITE_ONLY		= 0x0a,
	SROCE_RC_WRITE_ONLY_IMM		= 0x0b,
	SROCE_RC_READ_REQ		= 0x0c,
	SROCE_RC_READ_RESP_FIRST	= 0x0d,
	SROCE_RC_READ_RESP_MIDDLE	= 0x0e,
	SROCE_RC_READ_RESP_LAST		= 0x0f,
	SROCE_RC_READ_RESP_ONLY		= 0x10,
	SROCE_RC_ACK			= 0x11,
	SROCE_RC_ATOMIC_ACK		= 0x12,
	SROCE_RC_CMP_SWAP		= 0x13,
	SROCE_RC_FETCH_ADD		= 0x14,
	SROCE_RC_SEND_LAST_INV		= 0x16,
	SROCE_RC_SEND_ONLY_INV		= 0x17,
	SROCE_RC_ATOMIC_WRITE		= 0x1d,
	/* The transport, in the top 3 bits; the operation in the low 5. */
	SROCE_RC			= 0x00,
	SROCE_UC			= 0x20,	/* RC's SEND and WRITE opcodes */
	SROCE_UD			= 0x60,
	SROCE_XRC			= 0xa0,	/* all of RC's opcodes */
	/* UD */
	SROCE_UD_SEND_ONLY		= 0x64,
	SROCE_UD_SEND_ONLY_IMM		= 0x65,
};

#define SROCE_OP_TRANSPORT(op)	((op) & 0xe0)
#define SROCE_OP_BASE(op)	((op) & 0x1f)

/* What an opcode is and carries (struct sroce_opinfo.flags). */
enum {
	SROCE_OP_VALID		= BIT(0),
	SROCE_OP_REQ		= BIT(1),	/* a request (else a response) */
	SROCE_OP_FIRST		= BIT(2),	/* starts a message */
	SROCE_OP_LAST		= BIT(3),	/* ends a message */
	SROCE_OP_PAYLOAD	= BIT(4),	/* may carry data */
	SROCE_OP_SEND		= BIT(5),
	SROCE_OP_WRITE		= BIT(6),
	SROCE_OP_READ		= BIT(7),
	SROCE_OP_ATOMIC		= BIT(8),
	SROCE_OP_IMM		= BIT(9),	/* ImmDt */
	SROCE_OP_INV		= BIT(10),	/* IETH */
	SROCE_OP_RETH		= BIT(11),
	SROCE_OP_AETH		= BIT(12),
	SROCE_OP_DETH		= BIT(13),
	SROCE_OP_ATMETH		= BIT(14),
	SROCE_OP_ATMACK		= BIT(15),
	SROCE_OP_XRCETH		= BIT(16),
	SROCE_OP_ATOMIC_WRITE	= BIT(17),	/* 8 bytes, written at once */
};

struct sroce_opinfo {
	u32 flags;
	u8 hdr_len;		/* BTH and every extended header */
};

/* Written once by sroce_hdr_init() at module load, read-only after. */
extern struct sroce_opinfo sroce_opinfo[256];
void sroce_hdr_init(void);

/* Offset of an extended header within the transport headers. */
unsigned int sroce_hdr_offset(u8 opcode, u32 which);

struct sroce_inline;
struct sroce_qp;

/* What the transport keeps about a packet, in skb->cb. */
struct sroce_pkt {
	struct sroce_qp *qp;	/* received: its QP, a reference */
	struct sroce_inline *inl; /* loopback from a doorbell: its list */
	u32 psn;
	u32 paylen;		/* payload bytes, without pad */
	u16 hdr_len;		/* BTH and extended headers */
	int ifindex;		/* arrived on this device, or 0: loopback */
	u16 vlan_id;		/* received on this VLAN, or SROCE_NO_VLAN */
	u8 opcode;
};

#define SROCE_PKT(skb) ((struct sroce_pkt *)(skb)->cb)
static_assert(sizeof(struct sroce_pkt) <= sizeof_field(struct sk_buff, cb));

static inline void *sroce_pkt_hdr(struct sk_buff *skb, u32 which)
{
	return skb->data + sroce_hdr_offset(SROCE_PKT(skb)->opcode, which);
}

static inline void *sroce_pkt_payload(struct sk_buff *skb)
{
	return skb->data + SROCE_PKT(skb)->hdr_len;
}

/* PSN arithmetic, modulo 2^24: is a before b? */
static inline bool sroce_psn_before(u32 a, u32 b)
{
	return ((a - b) & 0x800000) != 0;
}

#endif /* SROCE_HDR_H */
