// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Provider registration, device matching, and the user context.
#include "sroce.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

namespace sroce {
namespace {

int query_device_ex(ibv_context *ibctx, const ibv_query_device_ex_input *input,
		    ibv_device_attr_ex *attr, size_t attr_size) noexcept
{
	ib_uverbs_ex_query_device_resp resp{};
	size_t resp_size = sizeof(resp);

	int ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size,
					   &resp, &resp_size);
	if (ret)
		return ret;

	uint64_t fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", unsigned(fw >> 32 & 0xffff),
		 unsigned(fw >> 16 & 0xffff), unsigned(fw & 0xffff));
	return 0;
}

int query_port(ibv_context *ibctx, uint8_t port, ibv_port_attr *attr) noexcept
{
	struct ibv_query_port cmd{};

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

void free_context(ibv_context *ibctx) noexcept
{
	context *ctx = to_ctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

const verbs_context_ops context_ops = {
	.advise_mr = advise_mr,
	.alloc_mw = alloc_mw,
	.alloc_null_mr = alloc_null_mr,
	.alloc_parent_domain = alloc_parent_domain,
	.alloc_pd = alloc_pd,
	.alloc_td = alloc_td,
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = bind_mw,
	.close_xrcd = close_xrcd,
	.create_ah = create_ah,
	.create_cq = create_cq,
	.create_cq_ex = create_cq_ex,
	.create_qp = create_qp,
	.create_qp_ex = create_qp_ex,
	.create_srq = create_srq,
	.create_srq_ex = create_srq_ex,
	.dealloc_mw = dealloc_mw,
	.dealloc_pd = dealloc_pd,
	.dealloc_td = dealloc_td,
	.dereg_mr = dereg_mr,
	.destroy_ah = destroy_ah,
	.destroy_cq = destroy_cq,
	.destroy_qp = destroy_qp,
	.destroy_srq = destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = free_context,
	.get_srq_num = get_srq_num,
	.import_mr = import_mr,
	.import_pd = import_pd,
	.modify_qp = modify_qp,
	.modify_srq = modify_srq,
	.open_qp = open_qp,
	.open_xrcd = open_xrcd,
	.poll_cq = poll_cq,
	.post_recv = post_recv,
	.post_send = post_send,
	.post_srq_recv = post_srq_recv,
	.query_device_ex = query_device_ex,
	.query_port = query_port,
	.query_qp = query_qp,
	.query_srq = query_srq,
	.reg_dmabuf_mr = reg_dmabuf_mr,
	.reg_mr = reg_mr,
	.req_notify_cq = req_notify_cq,
	.rereg_mr = rereg_mr,
	.resize_cq = resize_cq,
	.unimport_mr = unimport_mr,
	.unimport_pd = unimport_pd,
};

verbs_context *alloc_context(ibv_device *ibdev, int cmd_fd,
			     void *private_data) noexcept
{
	(void)private_data;
	auto *ctx = static_cast<context *>(_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(context),
		&static_cast<context *>(nullptr)->vctx, 0 /* RDMA_DRIVER_UNKNOWN */));
	if (!ctx)
		return nullptr;

	struct ibv_get_context cmd{};
	with_drv_data<ib_uverbs_get_context_resp, sroce_alloc_ucontext_resp>
		resp{};
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), resp.core(),
				sizeof(resp)))
		goto err;
	if (resp.drv.abi_version != SROCE_UVERBS_ABI_VERSION) {
		errno = EPROTO;
		goto err;
	}

	verbs_set_ops(&ctx->vctx, &context_ops);
	return &ctx->vctx;

err:
	int saved = errno;
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = saved;
	return nullptr;
}

// ibv_import_device(): a context on a command fd another context (perhaps
// of another process) opened. No GET_CONTEXT: the kernel context exists;
// QUERY_CONTEXT (an ioctl, which any holder of the fd may send) checks the
// fd and fills the context's fields.
verbs_context *import_context(ibv_device *ibdev, int cmd_fd) noexcept
{
	auto *dev = reinterpret_cast<device *>(ibdev);
	if (dev->abi_version != SROCE_UVERBS_ABI_VERSION) {
		errno = EPROTO;
		return nullptr;
	}
	auto *ctx = static_cast<context *>(_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(context),
		&static_cast<context *>(nullptr)->vctx, 0 /* RDMA_DRIVER_UNKNOWN */));
	if (!ctx)
		return nullptr;
	int ret = ibv_cmd_query_context(&ctx->vctx.context, nullptr);
	if (ret) {
		verbs_uninit_context(&ctx->vctx);
		free(ctx);
		errno = ret;
		return nullptr;
	}
	verbs_set_ops(&ctx->vctx, &context_ops);
	return &ctx->vctx;
}

verbs_device *alloc_device(verbs_sysfs_dev *sysfs_dev) noexcept
{
	auto *dev = new (std::nothrow) device{};
	if (!dev)
		return nullptr;
	dev->abi_version = sysfs_dev->abi_ver;
	return &dev->vdev;
}

void uninit_device(verbs_device *vdev) noexcept
{
	delete reinterpret_cast<device *>(vdev);
}

// Our kernel devices report RDMA_DRIVER_UNKNOWN, so libibverbs cannot match
// them by driver id: the table matches the usual names, and match_device()
// also takes a renamed device by its node description.
const verbs_match_ent match_table[] = {
	{ .driver_data = nullptr,
	  .u = { .modalias = "rdma_device:*N" SROCE_DEV_NAME_PREFIX "*" },
	  .vendor = 0, .device = 0, .kind = VERBS_MATCH_MODALIAS },
	{},
};

bool match_device(verbs_sysfs_dev *sysfs_dev) noexcept
{
	if (sysfs_dev->match)
		return true;

	char desc[64];
	int n = ibv_read_ibdev_sysfs_file(desc, sizeof(desc), sysfs_dev,
					  "node_desc");
	if (n <= 0)
		return false;
	std::string_view d(desc, strnlen(desc, sizeof(desc)));
	while (!d.empty() && (d.back() == '\n' || d.back() == ' '))
		d.remove_suffix(1);
	return d == SROCE_NODE_DESC;
}

const verbs_device_ops device_ops = {
	.name = "sroce",
	.match_min_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_table = match_table,
	.static_providers = nullptr,
	.match_device = match_device,
	.alloc_context = alloc_context,
	.import_context = import_context,
	.alloc_device = alloc_device,
	.uninit_device = uninit_device,
};

__attribute__((constructor)) void register_provider()
{
	verbs_register_driver_34(&device_ops);
}

} // namespace
} // namespace sroce
