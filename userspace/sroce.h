// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// libsroce: the libibverbs provider for sroce devices.
//
// Every entry point libibverbs calls is a noexcept function returning an
// errno-style code (or NULL with errno set); nothing throws across the C ABI.
#pragma once

#include "verbs_abi.h"

#include <rdma/sroce-abi.h>

namespace sroce {

struct device {
	verbs_device vdev; // must be first: libibverbs owns the ibv_device
	uint32_t abi_version;
};

struct context {
	verbs_context vctx; // libibverbs allocates us around this member
};

struct pd {
	ibv_pd ibpd;
};

inline context *to_ctx(ibv_context *ibctx)
{
	return reinterpret_cast<context *>(
		reinterpret_cast<char *>(ibctx) - offsetof(context, vctx) -
		offsetof(verbs_context, context));
}

inline pd *to_pd(ibv_pd *ibpd)
{
	return reinterpret_cast<pd *>(ibpd);
}

// pd.cpp
ibv_pd *alloc_pd(ibv_context *ibctx) noexcept;
int dealloc_pd(ibv_pd *ibpd) noexcept;

} // namespace sroce
