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

ibv_pd *alloc_parent_domain(ibv_context *ibctx,
			    ibv_parent_domain_init_attr *attr) noexcept
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;

	if (!attr->pd || attr->pd->context != ibctx) {
		errno = EINVAL;
		return nullptr;
	}
	if (attr->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	auto *p = new (std::nothrow) pd{};
	if (!p) {
		errno = ENOMEM;
		return nullptr;
	}
	// Same context and kernel handle as the contained PD.
	p->ibpd.context = attr->pd->context;
	p->ibpd.handle = attr->pd->handle;
	p->parent_of = to_pd(attr->pd);
	if (attr->td) {
		p->thread_domain = reinterpret_cast<td *>(attr->td);
		p->thread_domain->users++;
	}
	// Queue memory comes from the kernel (mmap), so there are no
	// provider buffers for custom allocators to serve.
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		p->pd_context = attr->pd_context;
	return &p->ibpd;
}

int dealloc_pd(ibv_pd *ibpd) noexcept
{
	pd *p = to_pd(ibpd);

	if (p->parent_of) {
		if (p->thread_domain)
			p->thread_domain->users--;
		delete p;
		return 0;
	}
	int ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	delete p;
	return 0;
}

ibv_td *alloc_td(ibv_context *ibctx, ibv_td_init_attr *attr) noexcept
{
	if (attr->comp_mask) {
		errno = EINVAL;
		return nullptr;
	}
	auto *t = new (std::nothrow) td{};
	if (!t) {
		errno = ENOMEM;
		return nullptr;
	}
	t->ibtd.context = ibctx;
	return &t->ibtd;
}

int dealloc_td(ibv_td *ibtd) noexcept
{
	td *t = reinterpret_cast<td *>(ibtd);

	if (t->users)
		return EBUSY;
	delete t;
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

// A dma-buf's memory (ibv_reg_dmabuf_mr(3)): the kernel holds the buffer
// and maps it for its copies until the MR is deregistered, so the caller
// may close @fd at once. A kernel without the method (or an sroce.ko built
// without dma-bufs) says EOPNOTSUPP; one too old for the ioctl method
// itself says EPROTONOSUPPORT, which means the same to the caller.
ibv_mr *reg_dmabuf_mr(ibv_pd *ibpd, uint64_t offset, size_t length,
		      uint64_t iova, int fd, int access) noexcept
{
	auto *vmr = new (std::nothrow) verbs_mr{};
	if (!vmr) {
		errno = ENOMEM;
		return nullptr;
	}
	int ret = ibv_cmd_reg_dmabuf_mr(ibpd, offset, length, iova, fd, access,
					vmr);
	if (ret) {
		delete vmr;
		errno = ret == EPROTONOSUPPORT ? EOPNOTSUPP : ret;
		return nullptr;
	}
	vmr->access = access;
	return &vmr->ibv_mr;
}

// A null MR (ibv_alloc_null_mr(3)): a kernel MR of its own kind, asked for
// with REG_MR's driver data; its lkey discards what is written through it
// and reads as zeroes, and it has no rkey. libibverbs fills in nothing for
// this op: context, PD, address and length are set here.
ibv_mr *alloc_null_mr(ibv_pd *ibpd) noexcept
{
	auto *vmr = new (std::nothrow) verbs_mr{};
	if (!vmr) {
		errno = ENOMEM;
		return nullptr;
	}
	with_drv_data<struct ibv_reg_mr, sroce_reg_mr_cmd> cmd{};
	cmd.drv.flags = SROCE_REG_MR_NULL;
	ib_uverbs_reg_mr_resp resp{};
	int ret = ibv_cmd_reg_mr(ibpd, nullptr, SIZE_MAX, 0,
				 IBV_ACCESS_LOCAL_WRITE, vmr, cmd.core(),
				 sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		delete vmr;
		errno = ret;
		return nullptr;
	}
	vmr->ibv_mr.pd = ibpd;
	vmr->ibv_mr.addr = nullptr;
	vmr->ibv_mr.length = SIZE_MAX;
	vmr->ibv_mr.rkey = 0;
	vmr->mr_type = IBV_MR_TYPE_NULL_MR;
	return &vmr->ibv_mr;
}

// In place: the kernel swaps the MR's translation, PD or access at once and
// the keys stay; libibverbs updates pd, addr and length on success.
int rereg_mr(verbs_mr *vmr, int flags, ibv_pd *pd, void *addr, size_t length,
	     int access) noexcept
{
	// A PD handle means something only in its own context: one of another
	// context would name whatever PD has that number in the MR's.
	if ((flags & IBV_REREG_MR_CHANGE_PD) &&
	    (!pd || pd->context != vmr->ibv_mr.context)) {
		errno = EINVAL;
		return EINVAL;
	}
	struct ibv_rereg_mr cmd{};
	ib_uverbs_rereg_mr_resp resp{};
	int ret = ibv_cmd_rereg_mr(vmr, flags, addr, length, uintptr_t(addr),
				   access, pd, &cmd, sizeof(cmd), &resp,
				   sizeof(resp));
	if (ret)
		errno = ret;
	return ret;
}

int dereg_mr(verbs_mr *vmr) noexcept
{
	int ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	delete vmr;
	return 0;
}

// ODP prefetch: the kernel checks every SGE and faults the ranges in before
// it returns (so IBV_ADVISE_MR_FLAG_FLUSH always holds). Returns an errno.
int advise_mr(ibv_pd *pd, ibv_advise_mr_advice advice, uint32_t flags,
	      ibv_sge *sg_list, uint32_t num_sge) noexcept
{
	int ret = ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sge);

	// ENOENT is a key that names no MR, or a PD that is gone (an imported
	// PD whose owner deallocated it): ibv_advise_mr(3) calls the second
	// EINVAL, "the PD is invalid".
	if (ret == ENOENT &&
	    call_method(pd->context->cmd_fd, UVERBS_OBJECT_PD,
			SROCE_METHOD_PD_QUERY,
			std::array{ idr_attr(SROCE_ATTR_QUERY_PD_HANDLE,
					     pd->handle) }))
		ret = EINVAL;
	return ret;
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

// XRC domains: only the kernel object (ib_uverbs shares it by inode).
ibv_xrcd *open_xrcd(ibv_context *ibctx, ibv_xrcd_init_attr *attr) noexcept
{
	auto *x = new (std::nothrow) verbs_xrcd{};
	if (!x) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_open_xrcd cmd{};
	ib_uverbs_open_xrcd_resp resp{};
	int ret = ibv_cmd_open_xrcd(ibctx, x, sizeof(*x), attr, &cmd,
				    sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		delete x;
		errno = ret;
		return nullptr;
	}
	return &x->xrcd;
}

int close_xrcd(ibv_xrcd *ibxrcd) noexcept
{
	auto *x = reinterpret_cast<verbs_xrcd *>(ibxrcd);
	int ret = ibv_cmd_close_xrcd(x);

	if (ret)
		return ret;
	delete x;
	return 0;
}

// Import: another process's (or another context's) PD and MR by handle,
// on a context imported from the same command fd. Only our objects are
// made; the kernel objects stay their owner's.
ibv_pd *import_pd(ibv_context *ibctx, uint32_t handle) noexcept
{
	int ret = call_method(ibctx->cmd_fd, UVERBS_OBJECT_PD,
			      SROCE_METHOD_PD_QUERY,
			      std::array{ idr_attr(SROCE_ATTR_QUERY_PD_HANDLE,
						   handle) });
	if (ret) {
		errno = ret;
		return nullptr;
	}
	auto *p = new (std::nothrow) pd{};
	if (!p) {
		errno = ENOMEM;
		return nullptr;
	}
	p->ibpd.context = ibctx;
	p->ibpd.handle = handle;
	return &p->ibpd;
}

void unimport_pd(ibv_pd *ibpd) noexcept
{
	delete to_pd(ibpd);
}

// lkey, rkey and length come from the kernel; addr is NULL (ibv_import_mr(3)).
ibv_mr *import_mr(ibv_pd *ibpd, uint32_t handle) noexcept
{
	auto *vmr = new (std::nothrow) verbs_mr{};
	if (!vmr) {
		errno = ENOMEM;
		return nullptr;
	}
	int ret = ibv_cmd_query_mr(ibpd, vmr, handle);
	// An MR is imported into the PD it was registered in (or moved to).
	if (!ret)
		ret = call_method(ibpd->context->cmd_fd, UVERBS_OBJECT_MR,
				  SROCE_METHOD_MR_IN_PD,
				  std::array{ idr_attr(SROCE_ATTR_MR_IN_PD_MR_HANDLE,
						       handle),
					      idr_attr(SROCE_ATTR_MR_IN_PD_PD_HANDLE,
						       ibpd->handle) });
	if (ret) {
		delete vmr;
		errno = ret;
		return nullptr;
	}
	return &vmr->ibv_mr;
}

void unimport_mr(ibv_mr *ibmr) noexcept
{
	delete reinterpret_cast<verbs_mr *>(ibmr);
}

// Memory windows: the kernel object and its key; binding is a WQE.
ibv_mw *alloc_mw(ibv_pd *ibpd, ibv_mw_type type) noexcept
{
	auto *mw = new (std::nothrow) ibv_mw{};
	if (!mw) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_alloc_mw cmd{};
	ib_uverbs_alloc_mw_resp resp{};
	int ret = ibv_cmd_alloc_mw(ibpd, type, mw, &cmd, sizeof(cmd), &resp,
				   sizeof(resp));
	if (ret) {
		delete mw;
		errno = ret;
		return nullptr;
	}
	return mw;
}

int dealloc_mw(ibv_mw *mw) noexcept
{
	int ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	delete mw;
	return 0;
}

} // namespace sroce
