// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Protection domains and memory regions.
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

ibv_mr *reg_mr(ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
	       int access) noexcept
{
	auto *vmr = new (std::nothrow) verbs_mr{};
	if (!vmr) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_reg_mr cmd{};
	ib_uverbs_reg_mr_resp resp{};
	int ret = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, vmr, &cmd,
				 sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		delete vmr;
		errno = ret;
		return nullptr;
	}
	return &vmr->ibv_mr;
}

int dereg_mr(verbs_mr *vmr) noexcept
{
	int ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	delete vmr;
	return 0;
}

} // namespace sroce
