// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: verbs entry points for the device, its port, user contexts and PDs.
 *
 * Attributes report only what the driver implements: a capability appears
 * here in the same change that makes it work.
 */
#include <linux/ethtool.h>
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce_compat.h"
#include "sroce_loc.h"
#include "sroce_mem.h"
#include "sroce_mem_api.h"
#include "sroce.h"

/* What query_device reports when ODP is built (SROCE_ODP). */
static void sroce_query_odp(struct ib_device_attr *attr)
{
	attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	/*
	 * ODP MRs, explicit ranges and the implicit whole address space. Every
	 * access the engine makes goes through sroce_map_copy(), which faults
	 * the pages in; what is advertised is what the tests prove (named in
	 * Documentation/sroce.md): RC everything, UC sends, receives and
	 * WRITE targets, UD sends and receives, XRC sends and SRQ receives.
	 * For users' MRs: a kernel consumer's ODP registration is refused
	 * (sroce_reg_user_mr()).
	 */
	attr->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	attr->odp_caps.per_transport_caps.rc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.uc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_WRITE;
	attr->odp_caps.per_transport_caps.ud_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV;
	attr->odp_caps.per_transport_caps.xrc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_SRQ_RECV;
}

static int sroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	if (udata->inlen || udata->outlen)
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = SROCE_FW_VER;
	attr->sys_image_guid = sdev->ibdev.node_guid;
	attr->max_mr_size = SROCE_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = SROCE_VENDOR_ID;
	attr->vendor_part_id = SROCE_VENDOR_PART_ID;
	attr->hw_ver = SROCE_HW_VER;
	attr->max_pd = SROCE_MAX_PD;
	attr->max_cq = SROCE_MAX_CQ;
	attr->max_cqe = SROCE_MAX_CQE;
	attr->max_mr = SROCE_MAX_MR;
	attr->max_qp = SROCE_MAX_QP;
	attr->max_ah = SROCE_MAX_AH;
	attr->max_srq = SROCE_MAX_SRQ;
	attr->max_mcast_grp = SROCE_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SROCE_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = SROCE_MAX_MCAST_GRP *
					  SROCE_MAX_MCAST_QP_ATTACH;
	attr->max_srq_wr = SROCE_MAX_SRQ_WR;
	attr->max_srq_sge = SROCE_MAX_SGE;
	attr->max_qp_wr = SROCE_MAX_QP_WR;
	attr->max_send_sge = SROCE_MAX_SGE;
	attr->max_recv_sge = SROCE_MAX_SGE;
	attr->max_sge_rd = SROCE_MAX_SGE;
	attr->max_qp_rd_atom = SROCE_MAX_RD_ATOMIC;
	attr->max_qp_init_rd_atom = SROCE_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = SROCE_MAX_RD_ATOMIC * SROCE_MAX_QP;
	attr->max_pkeys = SROCE_PKEY_TBL_LEN;
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->masked_atomic_cap = IB_ATOMIC_NONE;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_XRC |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->max_mw = SROCE_MAX_MW;
	attr->max_fast_reg_page_list_len = SROCE_MAX_FAST_REG_PAGES;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	if (SROCE_ODP)
		sroce_query_odp(attr);
	return 0;
}

/*
 * The port's speed from the netdev's link speed, as ib_get_eth_speed()
 * maps it, but quietly: a virtual NIC without a speed reports SDR 1X rather
 * than a warning at every query.
 */
static void sroce_port_speed(struct net_device *ndev, u16 *speed, u8 *width)
{
	struct ethtool_link_ksettings lks;
	u32 mbps = SPEED_UNKNOWN;

	rtnl_lock();
	if (!__ethtool_get_link_ksettings(ndev, &lks))
		mbps = lks.base.speed;
	rtnl_unlock();

	if (mbps == SPEED_UNKNOWN || mbps <= SPEED_1000) {
		*width = IB_WIDTH_1X;
		*speed = IB_SPEED_SDR;
	} else if (mbps <= SPEED_10000) {
		*width = IB_WIDTH_1X;
		*speed = IB_SPEED_FDR10;
	} else if (mbps <= SPEED_20000) {
		*width = IB_WIDTH_4X;
		*speed = IB_SPEED_DDR;
	} else if (mbps <= SPEED_25000) {
		*width = IB_WIDTH_1X;
		*speed = IB_SPEED_EDR;
	} else if (mbps <= SPEED_40000) {
		*width = IB_WIDTH_4X;
		*speed = IB_SPEED_FDR10;
	} else {
		*width = IB_WIDTH_4X;
		*speed = IB_SPEED_EDR;
	}
}

static int sroce_query_port(struct ib_device *ibdev, u32 port_num,
			    struct ib_port_attr *attr)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct net_device *ndev = sdev->ndev;

	/* ib_core zeroes *attr before calling us. */
	attr->state = sroce_netdev_port_state(ndev);
	if (attr->state == IB_PORT_ACTIVE)
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	else if (dev_get_flags(ndev) & IFF_UP)
		attr->phys_state = IB_PORT_PHYS_STATE_POLLING;
	else
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;

	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = min_t(enum ib_mtu, IB_MTU_4096,
				 iboe_get_mtu(READ_ONCE(ndev->mtu)));
	attr->gid_tbl_len = SROCE_GID_TBL_LEN;
	attr->pkey_tbl_len = SROCE_PKEY_TBL_LEN;
	attr->max_msg_sz = SROCE_MAX_MSG_SIZE;
	attr->lid = 0;
	attr->sm_lid = 0;
	attr->lmc = 0;
	attr->max_vl_num = 1;

	sroce_port_speed(ndev, &attr->active_speed, &attr->active_width);
	return 0;
}

static int sroce_get_port_immutable(struct ib_device *ibdev, u32 port_num,
				    struct ib_port_immutable *immutable)
{
	/* RoCEv2, with MADs on the GSI QP (QP1) and so the CM. */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->pkey_tbl_len = SROCE_PKEY_TBL_LEN;
	immutable->gid_tbl_len = SROCE_GID_TBL_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static int sroce_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
			    u16 *pkey)
{
	if (index >= SROCE_PKEY_TBL_LEN)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static enum rdma_link_layer sroce_get_link_layer(struct ib_device *ibdev,
						 u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}

static void sroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%d.%d.%d", SROCE_FW_VER_MAJOR,
		 SROCE_FW_VER_MINOR, SROCE_FW_VER_SUB);
}

/* The context's objects are charged to the user who opens it. */
static int sroce_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct sroce_ucontext *uc = container_of(ibuc, struct sroce_ucontext,
						 ibuc);
	struct sroce_alloc_ucontext_resp resp = {
		.abi_version = SROCE_UVERBS_ABI_VERSION,
	};
	struct sroce_dev *sdev = to_sdev(ibuc->device);
	int err = 0;

	uc->ku = sroce_kmem_user_get(sdev);
	if (IS_ERR(uc->ku))
		return PTR_ERR(uc->ku);
	if (udata->outlen)
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
	if (err)
		sroce_kmem_user_put(sdev, uc->ku);
	return err;
}

static void sroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct sroce_ucontext *uc = container_of(ibuc, struct sroce_ucontext,
						 ibuc);

	sroce_kmem_user_put(to_sdev(ibuc->device), uc->ku);
}

/*
 * UVERBS_METHOD_QUERY_CONTEXT, which ibv_import_device() sends: the
 * importing provider learns nothing it could not read from sysfs (the ABI
 * version), so there is no driver data to add.
 */
static int sroce_query_ucontext(struct ib_ucontext *ibuc,
				struct uverbs_attr_bundle *attrs)
{
	return 0;
}

/*
 * Everything a context owns is destroyed through the uverbs object tree and
 * its mmaps are zapped by ib_uverbs; there is nothing driver-private left to
 * disconnect.  Providing this op lets "rdma link delete" and rmmod proceed
 * while applications still hold the device open: they get
 * IB_EVENT_DEVICE_FATAL and their objects are destroyed.
 */
static void sroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);

	if (atomic_inc_return(&sdev->num_pd) > SROCE_MAX_PD) {
		atomic_dec(&sdev->num_pd);
		return -ENOMEM;
	}
	return 0;
}

static int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_sdev(ibpd->device)->num_pd);
	return 0;
}

/* An XRC domain only groups XRC SRQs and target QPs; ib_core tracks it. */
static int sroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

static int sroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

static struct rdma_hw_stats *sroce_alloc_hw_port_stats(struct ib_device *ibdev,
						       u32 port_num)
{
	return rdma_alloc_hw_stats_struct(sroce_counter_descs,
					  SROCE_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int sroce_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port, int index)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	int i;

	if (port != SROCE_PORT)
		return -EINVAL;
	for (i = 0; i < SROCE_NUM_COUNTERS; i++)
		stats->value[i] = atomic64_read(&sdev->counters[i]);
	return SROCE_NUM_COUNTERS;
}

/*
 * "rdma resource show qp|cq -dd": the kernel memory the object's user made
 * sroce allocate for it (sroce_kmem.c).
 */
static int sroce_fill_res_kmem(struct sk_buff *msg, const struct sroce_kmem *k)
{
	struct nlattr *table;

	table = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u64(msg, "kmem", atomic_long_read(&k->bytes))) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}

static int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	return sroce_fill_res_kmem(msg, &to_sqp(ibqp)->kmem);
}

static int sroce_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	return sroce_fill_res_kmem(msg, &to_scq(ibcq)->kmem);
}

/*
 * ib_device_ops.create_cq takes the uverbs attribute bundle instead of the
 * driver's udata since 6.11, dd6d7f8574d7 ("RDMA: Pass entire uverbs attr
 * bundle to create cq function"); the udata is the bundle's driver_udata,
 * and a kernel CQ (ib_alloc_cq(), ib_create_cq()) gets no bundle.
 * sroce_create_cq() keeps the udata form; the ops table takes
 * SROCE_CREATE_CQ, which is sroce_create_cq() where the op has its type
 * and sroce_create_cq_bundle() where it does not.
 */
static inline int sroce_create_cq_bundle(struct ib_cq *ibcq,
					 const struct ib_cq_init_attr *attr,
					 struct uverbs_attr_bundle *attrs)
{
	return sroce_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}

#define SROCE_CREATE_CQ							\
	__builtin_choose_expr(						\
		__same_type(((const struct ib_device_ops *)NULL)->create_cq, \
			    &sroce_create_cq),				\
		sroce_create_cq, sroce_create_cq_bundle)

/*
 * ib_device_ops.reg_user_mr_dmabuf takes the uverbs attribute bundle
 * instead of the driver's udata since 6.12, 3aa73c6b795b ("RDMA: Pass
 * uverbs_attr_bundle as part of '.reg_user_mr_dmabuf' API"); the udata is
 * the bundle's driver_udata. The ops table takes SROCE_REG_USER_MR_DMABUF,
 * chosen as SROCE_CREATE_CQ is.
 */
static inline struct ib_mr *
sroce_reg_user_mr_dmabuf_bundle(struct ib_pd *ibpd, u64 offset, u64 length,
				u64 iova, int fd, int access,
				struct uverbs_attr_bundle *attrs)
{
	return sroce_reg_user_mr_dmabuf(ibpd, offset, length, iova, fd, access,
					attrs ? &attrs->driver_udata : NULL);
}

#define SROCE_REG_USER_MR_DMABUF					\
	__builtin_choose_expr(						\
		__same_type(((const struct ib_device_ops *)NULL)->	\
			    reg_user_mr_dmabuf,				\
			    &sroce_reg_user_mr_dmabuf),			\
		sroce_reg_user_mr_dmabuf,				\
		sroce_reg_user_mr_dmabuf_bundle)

static const struct ib_device_ops sroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SROCE_UVERBS_ABI_VERSION,

	.alloc_mr = sroce_alloc_mr,
	.alloc_mw = sroce_alloc_mw,
	.alloc_hw_port_stats = sroce_alloc_hw_port_stats,
	.alloc_pd = sroce_alloc_pd,
	.create_ah = sroce_create_ah,
	.create_cq = SROCE_CREATE_CQ,
	.create_qp = sroce_create_qp,
	.create_srq = sroce_create_srq,
	.create_user_ah = sroce_create_ah,
	.alloc_ucontext = sroce_alloc_ucontext,
	.alloc_xrcd = sroce_alloc_xrcd,
	.attach_mcast = sroce_attach_mcast,
	.dealloc_driver = sroce_dealloc_driver,
	.dealloc_mw = sroce_dealloc_mw,
	.dealloc_pd = sroce_dealloc_pd,
	.dealloc_ucontext = sroce_dealloc_ucontext,
	.dealloc_xrcd = sroce_dealloc_xrcd,
	.dereg_mr = sroce_dereg_mr,
	.destroy_ah = sroce_destroy_ah,
	.destroy_cq = sroce_destroy_cq,
	.destroy_qp = sroce_destroy_qp,
	.destroy_srq = sroce_destroy_srq,
	.detach_mcast = sroce_detach_mcast,
	.fill_res_cq_entry = sroce_fill_res_cq_entry,
	.fill_res_mr_entry = sroce_fill_res_mr_entry,
	.fill_res_qp_entry = sroce_fill_res_qp_entry,
	.disassociate_ucontext = sroce_disassociate_ucontext,
	.get_dev_fw_str = sroce_get_dev_fw_str,
	.get_dma_mr = sroce_get_dma_mr,
	.get_hw_stats = sroce_get_hw_stats,
	.get_link_layer = sroce_get_link_layer,
	.get_port_immutable = sroce_get_port_immutable,
	.map_mr_sg = sroce_map_mr_sg,
	.mmap = sroce_mmap,
	.mmap_free = sroce_mmap_free,
	.modify_qp = sroce_modify_qp,
	.modify_srq = sroce_modify_srq,
	.poll_cq = sroce_poll_cq,
	.post_recv = sroce_post_recv,
	.post_send = sroce_post_send,
	.post_srq_recv = sroce_post_srq_recv,
	.query_device = sroce_query_device,
	.query_ah = sroce_query_ah,
	.query_pkey = sroce_query_pkey,
	.query_port = sroce_query_port,
	.query_qp = sroce_query_qp,
	.query_srq = sroce_query_srq,
	.query_ucontext = sroce_query_ucontext,
	.reg_user_mr = sroce_reg_user_mr,
	.reg_user_mr_dmabuf = SROCE_REG_USER_MR_DMABUF,
	.advise_mr = sroce_advise_mr,
	.req_notify_cq = sroce_req_notify_cq,
	.rereg_user_mr = sroce_rereg_user_mr,
	.resize_cq = sroce_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, sroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, sroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, sroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, sroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, sroce_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, sroce_xrcd, ibxrcd),
};

/**
 * sroce_register_device - register a new device with ib_core
 * @sdev: the device, with @ndev set
 * @ibdev_name: the name "rdma link add" asked for
 *
 * The ib_device's parent is the net_device's parent (when it has one) so
 * that /sys/class/infiniband/NAME/device/net/ leads to the net_device, as it
 * does for hardware RoCE devices.
 *
 * Return: 0, or the error of ib_device_set_netdev() or ib_register_device()
 * (-ENFILE for a name already taken).
 */
int sroce_register_device(struct sroce_dev *sdev, const char *ibdev_name)
{
	struct ib_device *ibdev = &sdev->ibdev;
	int err;

	strscpy(ibdev->node_desc, SROCE_NODE_DESC, sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;
	ibdev->dev.parent = sdev->ndev->dev.parent;
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    sdev->ndev->dev_addr);

	ib_set_device_ops(ibdev, &sroce_dev_ops);
	ibdev->driver_def = sroce_uapi_defs;
	/* From here, a failure frees it in sroce_dealloc_driver() */
	err = sroce_key_init(sdev);
	if (err)
		return err;
	err = ib_device_set_netdev(ibdev, sdev->ndev, SROCE_PORT);
	if (err)
		return err;

	return ib_register_device(ibdev, ibdev_name, NULL);
}
