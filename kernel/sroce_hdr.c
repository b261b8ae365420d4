// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the opcode table of the RoCEv2 transport.
 */
#include <linux/bits.h>
#include <linux/kernel.h>

#include "sroce_hdr.h"

/* Extended headers in wire order, with their sizes. */
static const struct {
	u32 flag;
	u8 len;
} sroce_ext_hdrs[] = {
	{ SROCE_OP_XRCETH, sizeof(struct sroce_xrceth) },
	{ SROCE_OP_DETH, sizeof(struct sroce_deth) },
	{ SROCE_OP_RETH, sizeof(struct sroce_reth) },
	{ SROCE_OP_ATMETH, sizeof(struct sroce_atmeth) },
	{ SROCE_OP_AETH, sizeof(struct sroce_aeth) },
	{ SROCE_OP_ATMACK, sizeof(struct sroce_atmack) },
	{ SROCE_OP_IMM, sizeof(__be32) },
	{ SROCE_OP_INV, sizeof(__be32) },
};

#define O_REQ	SROCE_OP_REQ
#define O_FIRST	SROCE_OP_FIRST
#define O_LAST	SROCE_OP_LAST
#define O_ONLY	(SROCE_OP_FIRST | SROCE_OP_LAST)
#define O_SEND	(SROCE_OP_REQ | SROCE_OP_PAYLOAD | SROCE_OP_SEND)
#define O_WRITE	(SROCE_OP_REQ | SROCE_OP_PAYLOAD | SROCE_OP_WRITE)
#define O_RRESP	(SROCE_OP_PAYLOAD | SROCE_OP_READ)
#define O_IMM	SROCE_OP_IMM
#define O_RETH	SROCE_OP_RETH
#define O_UC	SROCE_UC

/* What each opcode is and carries; hdr_len is filled in by sroce_hdr_init(). */
struct sroce_opinfo sroce_opinfo[256] = {
	[SROCE_RC_SEND_FIRST]		= { O_SEND | O_FIRST },
	[SROCE_RC_SEND_MIDDLE]		= { O_SEND },
	[SROCE_RC_SEND_LAST]		= { O_SEND | O_LAST },
	[SROCE_RC_SEND_LAST_IMM]	= { O_SEND | O_LAST | O_IMM },
	[SROCE_RC_SEND_ONLY]		= { O_SEND | O_ONLY },
	[SROCE_RC_SEND_ONLY_IMM]	= { O_SEND | O_ONLY | O_IMM },
	[SROCE_RC_WRITE_FIRST]		= { O_WRITE | O_FIRST | O_RETH },
	[SROCE_RC_WRITE_MIDDLE]		= { O_WRITE },
	[SROCE_RC_WRITE_LAST]		= { O_WRITE | O_LAST },
	[SROCE_RC_WRITE_LAST_IMM]	= { O_WRITE | O_LAST | O_IMM },
	[SROCE_RC_WRITE_ONLY]		= { O_WRITE | O_ONLY | O_RETH },
	[SROCE_RC_WRITE_ONLY_IMM]	= { O_WRITE | O_ONLY | O_RETH | O_IMM },
	[SROCE_RC_READ_REQ]		= { O_REQ | O_ONLY | SROCE_OP_READ |
					    O_RETH },
	[SROCE_RC_READ_RESP_FIRST]	= { O_RRESP | O_FIRST | SROCE_OP_AETH },
	[SROCE_RC_READ_RESP_MIDDLE]	= { O_RRESP },
	[SROCE_RC_READ_RESP_LAST]	= { O_RRESP | O_LAST | SROCE_OP_AETH },
	[SROCE_RC_READ_RESP_ONLY]	= { O_RRESP | O_ONLY | SROCE_OP_AETH },
	[SROCE_RC_ACK]			= { O_ONLY | SROCE_OP_AETH },
	[SROCE_RC_ATOMIC_ACK]		= { O_ONLY | SROCE_OP_ATOMIC |
					    SROCE_OP_AETH | SROCE_OP_ATMACK },
	[SROCE_RC_CMP_SWAP]		= { O_REQ | O_ONLY | SROCE_OP_ATOMIC |
					    SROCE_OP_ATMETH },
	[SROCE_RC_FETCH_ADD]		= { O_REQ | O_ONLY | SROCE_OP_ATOMIC |
					    SROCE_OP_ATMETH },
	[SROCE_RC_SEND_LAST_INV]	= { O_SEND | O_LAST | SROCE_OP_INV },
	[SROCE_RC_SEND_ONLY_INV]	= { O_SEND | O_ONLY | SROCE_OP_INV },
	[SROCE_RC_ATOMIC_WRITE]		= { O_WRITE | O_ONLY | O_RETH |
					    SROCE_OP_ATOMIC_WRITE },
	[O_UC | SROCE_RC_SEND_FIRST]	= { O_SEND | O_FIRST },
	[O_UC | SROCE_RC_SEND_MIDDLE]	= { O_SEND },
	[O_UC | SROCE_RC_SEND_LAST]	= { O_SEND | O_LAST },
	[O_UC | SROCE_RC_SEND_LAST_IMM]	= { O_SEND | O_LAST | O_IMM },
	[O_UC | SROCE_RC_SEND_ONLY]	= { O_SEND | O_ONLY },
	[O_UC | SROCE_RC_SEND_ONLY_IMM]	= { O_SEND | O_ONLY | O_IMM },
	[O_UC | SROCE_RC_WRITE_FIRST]	= { O_WRITE | O_FIRST | O_RETH },
	[O_UC | SROCE_RC_WRITE_MIDDLE]	= { O_WRITE },
	[O_UC | SROCE_RC_WRITE_LAST]	= { O_WRITE | O_LAST },
	[O_UC | SROCE_RC_WRITE_LAST_IMM] = { O_WRITE | O_LAST | O_IMM },
	[O_UC | SROCE_RC_WRITE_ONLY]	= { O_WRITE | O_ONLY | O_RETH },
	[O_UC | SROCE_RC_WRITE_ONLY_IMM] = { O_WRITE | O_ONLY | O_RETH | O_IMM },
	[SROCE_UD_SEND_ONLY]		= { O_SEND | O_ONLY | SROCE_OP_DETH },
	[SROCE_UD_SEND_ONLY_IMM]	= { O_SEND | O_ONLY | SROCE_OP_DETH |
					    O_IMM },
};

/*
 * XRC has every RC opcode; its requests carry an XRCETH (the target SRQ),
 * its responses do not.
 */
static void sroce_hdr_init_xrc(void)
{
	int op;

	for (op = 0; op <= SROCE_RC_ATOMIC_WRITE; op++) {
		u32 flags = sroce_opinfo[SROCE_RC | op].flags;

		if (flags & SROCE_OP_REQ)
			flags |= SROCE_OP_XRCETH;
		sroce_opinfo[SROCE_XRC | op].flags = flags;
	}
}

/* Mark the opcodes valid and compute their header lengths (module load). */
void sroce_hdr_init(void)
{
	int op, i;

	sroce_hdr_init_xrc();
	for (op = 0; op < ARRAY_SIZE(sroce_opinfo); op++) {
		struct sroce_opinfo *info = &sroce_opinfo[op];

		if (!info->flags)
			continue;
		info->flags |= SROCE_OP_VALID;
		info->hdr_len = sizeof(struct sroce_bth);
		for (i = 0; i < ARRAY_SIZE(sroce_ext_hdrs); i++)
			if (info->flags & sroce_ext_hdrs[i].flag)
				info->hdr_len += sroce_ext_hdrs[i].len;
	}
}

/**
 * sroce_hdr_offset - where an extended header starts
 * @opcode: the packet's opcode
 * @which: one SROCE_OP_* header flag the opcode carries
 *
 * Return: its offset from the start of the BTH.
 */
unsigned int sroce_hdr_offset(u8 opcode, u32 which)
{
	u32 flags = sroce_opinfo[opcode].flags;
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
