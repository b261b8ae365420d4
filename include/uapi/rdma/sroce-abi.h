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

#endif /* SROCE_ABI_USER_H */
