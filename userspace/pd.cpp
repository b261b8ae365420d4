// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Protection domains.
#include "sroce.h"

#include <cerrno>
#include <new>

namespace sroce {

ibv_pd *alloc_pd(ibv_context *ibctx) noexcept
{
	auto *p = new (std::nothrow) pd{};
	if (!p) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_alloc_pd cmd{};
	ib_uverbs_alloc_pd_resp resp{};
	int ret = ibv_cmd_alloc_pd(ibctx, &p->ibpd, &cmd, sizeof(cmd), &resp,
				   sizeof(resp));
	if (ret) {
		delete p;
		errno = ret;
		return nullptr;
	}
	return &p->ibpd;
}

int dealloc_pd(ibv_pd *ibpd) noexcept
{
	int ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	delete to_pd(ibpd);
	return 0;
}

} // namespace sroce
