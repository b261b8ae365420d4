// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Protection domains, memory regions and address handles.
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

ibv_ah *create_ah(ibv_pd *ibpd, ibv_ah_attr *attr) noexcept
{
	auto *a = new (std::nothrow) ah{};
	if (!a) {
		errno = ENOMEM;
		return nullptr;
	}

	with_drv_data<ib_uverbs_create_ah_resp, sroce_create_ah_resp> resp{};
	int ret = ibv_cmd_create_ah(ibpd, &a->ibah, attr, resp.core(),
				    sizeof(resp));
	if (ret) {
		delete a;
		errno = ret;
		return nullptr;
	}
	a->ah_num = resp.drv.ah_num;
	return &a->ibah;
}

int destroy_ah(ibv_ah *ibah) noexcept
{
	int ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	delete reinterpret_cast<ah *>(ibah);
	return 0;
}

} // namespace sroce
