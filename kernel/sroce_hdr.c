// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the opcode table of the RoCEv2 transport.
 */
#include <linux/bits.h>
#include <linux/kernel.h>

#include "sroce_hdr.h"

/* Extended headers in wire order, with their sizes. */
static const struct {
	u16 flag;
	u8 len;
} sroce_ext_hdrs[] = {
	{ SROCE_OP_DETH, sizeof(struct sroce_deth) },
	{ SROCE_OP_RETH, sizeof(struct sroce_reth) },
	{ SROCE_OP_ATMETH, sizeof(struct sroce_atmeth) },
	{ SROCE_OP_AETH, sizeof(struct sroce_aeth) },
	{ SROCE_OP_ATMACK, sizeof(struct sroce_atmack) },
	{ SROCE_OP_IMM, sizeof(__be32) },
	{ SROCE_OP_INV, sizeof(__be32) },
};

#define HLEN(f)								\
	(sizeof(struct sroce_bth) +					\
	 ((f) & SROCE_OP_DETH ? sizeof(struct sroce_deth) : 0) +	\
	 ((f) & SROCE_OP_RETH ? sizeof(struct sroce_reth) : 0) +	\
	 ((f) & SROCE_OP_ATMETH ? sizeof(struct sroce_atmeth) : 0) +	\
	 ((f) & SROCE_OP_AETH ? sizeof(struct sroce_aeth) : 0) +	\
	 ((f) & SROCE_OP_ATMACK ? sizeof(struct sroce_atmack) : 0) +	\
	 ((f) & SROCE_OP_IMM ? 4 : 0) + ((f) & SROCE_OP_INV ? 4 : 0))

#define OP(code, f) [code] = { .flags = (f) | SROCE_OP_VALID, .hdr_len = HLEN(f) }

#define O_REQ	SROCE_OP_REQ
#define O_FIRST	SROCE_OP_FIRST
#define O_LAST	SROCE_OP_LAST
#define O_ONLY	(SROCE_OP_FIRST | SROCE_OP_LAST)
#define O_DATA	SROCE_OP_PAYLOAD
#define O_SEND	(O_REQ | O_DATA | SROCE_OP_SEND)
#define O_WRITE	(O_REQ | O_DATA | SROCE_OP_WRITE)
#define O_RRESP	(O_DATA | SROCE_OP_READ)

/* The O_SEND and O_WRITE opcodes of RC, which UC shares at | 0x20. */
#define SEND_WRITE_OPS(base)						\
	OP((base) | SROCE_RC_SEND_FIRST, O_SEND | O_FIRST),			\
	OP((base) | SROCE_RC_SEND_MIDDLE, O_SEND),			\
	OP((base) | SROCE_RC_SEND_LAST, O_SEND | O_LAST),			\
	OP((base) | SROCE_RC_SEND_LAST_IMM, O_SEND | O_LAST | SROCE_OP_IMM), \
	OP((base) | SROCE_RC_SEND_ONLY, O_SEND | O_ONLY),			\
	OP((base) | SROCE_RC_SEND_ONLY_IMM, O_SEND | O_ONLY | SROCE_OP_IMM), \
	OP((base) | SROCE_RC_WRITE_FIRST, O_WRITE | O_FIRST | SROCE_OP_RETH), \
	OP((base) | SROCE_RC_WRITE_MIDDLE, O_WRITE),			\
	OP((base) | SROCE_RC_WRITE_LAST, O_WRITE | O_LAST),			\
	OP((base) | SROCE_RC_WRITE_LAST_IMM, O_WRITE | O_LAST | SROCE_OP_IMM), \
	OP((base) | SROCE_RC_WRITE_ONLY, O_WRITE | O_ONLY | SROCE_OP_RETH),	\
	OP((base) | SROCE_RC_WRITE_ONLY_IMM,				\
	   O_WRITE | O_ONLY | SROCE_OP_RETH | SROCE_OP_IMM)

const struct sroce_opinfo sroce_opinfo[256] = {
	SEND_WRITE_OPS(0),
	OP(SROCE_RC_READ_REQ, O_REQ | O_ONLY | SROCE_OP_READ | SROCE_OP_RETH),
	OP(SROCE_RC_READ_RESP_FIRST, O_RRESP | O_FIRST | SROCE_OP_AETH),
	OP(SROCE_RC_READ_RESP_MIDDLE, O_RRESP),
	OP(SROCE_RC_READ_RESP_LAST, O_RRESP | O_LAST | SROCE_OP_AETH),
	OP(SROCE_RC_READ_RESP_ONLY, O_RRESP | O_ONLY | SROCE_OP_AETH),
	OP(SROCE_RC_ACK, O_ONLY | SROCE_OP_AETH),
	OP(SROCE_RC_ATOMIC_ACK,
	   O_ONLY | SROCE_OP_ATOMIC | SROCE_OP_AETH | SROCE_OP_ATMACK),
	OP(SROCE_RC_CMP_SWAP, O_REQ | O_ONLY | SROCE_OP_ATOMIC | SROCE_OP_ATMETH),
	OP(SROCE_RC_FETCH_ADD, O_REQ | O_ONLY | SROCE_OP_ATOMIC | SROCE_OP_ATMETH),
	OP(SROCE_RC_SEND_LAST_INV, O_SEND | O_LAST | SROCE_OP_INV),
	OP(SROCE_RC_SEND_ONLY_INV, O_SEND | O_ONLY | SROCE_OP_INV),
	SEND_WRITE_OPS(SROCE_UC),
	OP(SROCE_UD_SEND_ONLY, O_SEND | O_ONLY | SROCE_OP_DETH),
	OP(SROCE_UD_SEND_ONLY_IMM, O_SEND | O_ONLY | SROCE_OP_DETH | SROCE_OP_IMM),
};

/**
 * sroce_hdr_offset - where an extended header starts
 * @opcode: the packet's opcode
 * @which: one SROCE_OP_* header flag the opcode carries
 *
 * Return: its offset from the start of the BTH.
 */
unsigned int sroce_hdr_offset(u8 opcode, u16 which)
{
	u16 flags = sroce_opinfo[opcode].flags;
	unsigned int off = sizeof(struct sroce_bth);
	int i;

	for (i = 0; i < ARRAY_SIZE(sroce_ext_hdrs); i++) {
		if (sroce_ext_hdrs[i].flag == which)
			break;
		if (flags & sroce_ext_hdrs[i].flag)
			off += sroce_ext_hdrs[i].len;
	}
	return off;
}
