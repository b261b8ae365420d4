/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the device's limits (what query_device and query_port report, and
 * what the verbs check against) and its fixed parameters.
 */
#ifndef SROCE_PARAM_H
#define SROCE_PARAM_H

#include <linux/bits.h>

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
#define SROCE_MAX_RD_ATOMIC	128
#define SROCE_MIN_QPN		16
/* 0xffffff is the multicast QPN (IBTA vol 1 9.6.1.2): no QP has it. */
#define SROCE_MAX_QPN		0xfffffe
#define SROCE_MAX_MSG_SIZE	0x80000000U
#define SROCE_MAX_MR		0x100000
#define SROCE_MAX_MW		0x100000
#define SROCE_MAX_AH		0x10000
#define SROCE_MAX_SRQ		0x4000
#define SROCE_MAX_MCAST_GRP	0x2000
#define SROCE_MAX_MCAST_QP_ATTACH 56
#define SROCE_MAX_SRQ_WR	0x4000
#define SROCE_MAX_MR_SIZE	BIT_ULL(40)
#define SROCE_VENDOR_ID		0xffffff
#define SROCE_VENDOR_PART_ID	0x0001
#define SROCE_HW_VER		1

#endif /* SROCE_PARAM_H */
