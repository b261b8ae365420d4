// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: driver methods of the uverbs ioctl interface.
 *
 * ib_uverbs refuses write() commands from a process other than the one that
 * opened the command fd, while ioctl() methods work from any process that
 * holds it. What a process that imported a context needs beyond the core's
 * ioctl methods is therefore here (see the uAPI header).
 */
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME sroce
#include <rdma/uverbs_named_ioctl.h>

#include "sroce_loc.h"
#include "sroce_task.h"
#include "sroce.h"

static int
UVERBS_HANDLER(SROCE_METHOD_QP_DOORBELL)(struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *ibqp =
		uverbs_attr_get_obj(attrs, SROCE_ATTR_DOORBELL_QP_HANDLE);

	if (IS_ERR(ibqp))
		return PTR_ERR(ibqp);
	/*
	 * Only a QP this driver created has rings. An XRC target QP a process
	 * created or opened is ib_core's share of one (a bare struct ib_qp
	 * whose real_qp is ours), and has no send queue anyway.
	 */
	if (ibqp->real_qp != ibqp || ibqp->qp_type == IB_QPT_XRC_TGT)
		return -EINVAL;
	sroce_task_doorbell(to_sqp(ibqp));
	return 0;
}

/* An address vector as the MODIFY_QP command carries it. */
static int sroce_uapi_ah_attr(struct ib_device *ibdev,
			      struct rdma_ah_attr *ah,
			      struct ib_uverbs_qp_dest *dest)
{
	if (!rdma_is_port_valid(ibdev, dest->port_num))
		return -EINVAL;
	ah->type = rdma_ah_find_type(ibdev, dest->port_num);
	if (dest->is_global) {
		rdma_ah_set_grh(ah, NULL, dest->flow_label,
				dest->sgid_index, dest->hop_limit,
				dest->traffic_class);
		rdma_ah_set_dgid_raw(ah, dest->dgid);
	} else {
		rdma_ah_set_ah_flags(ah, 0);
	}
	rdma_ah_set_dlid(ah, dest->dlid);
	rdma_ah_set_sl(ah, dest->sl);
	rdma_ah_set_path_bits(ah, dest->src_path_bits);
	rdma_ah_set_static_rate(ah, dest->static_rate);
	rdma_ah_set_port_num(ah, dest->port_num);
	rdma_ah_set_make_grd(ah, false);
	return 0;
}

/*
 * The attribute mask ib_uverbs' modify_qp passes on: XRC halves ignore the
 * attributes of the half they do not have.
 */
static u32 sroce_uapi_qp_mask(enum ib_qp_type type, u32 mask)
{
	switch (type) {
	case IB_QPT_XRC_INI:
		return mask & ~(IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	case IB_QPT_XRC_TGT:
		return mask & ~(IB_QP_MAX_QP_RD_ATOMIC | IB_QP_RETRY_CNT |
				IB_QP_RNR_RETRY);
	default:
		return mask;
	}
}

/*
 * The attributes of a MODIFY_QP command, with the checks ib_uverbs' own
 * modify_qp makes before the driver sees them. The mask to pass on is
 * written back to @cmd.
 */
static int sroce_uapi_qp_attr(struct ib_qp *qp, struct ib_qp_attr *attr,
			      struct ib_uverbs_modify_qp *cmd)
{
	u32 mask = cmd->attr_mask;
	int err;

	if ((mask & IB_QP_PORT) && !rdma_is_port_valid(qp->device,
						       cmd->port_num))
		return -EINVAL;
	if (mask & IB_QP_AV) {
		if (!rdma_is_port_valid(qp->device, cmd->dest.port_num))
			return -EINVAL;
		if ((mask & IB_QP_STATE) && cmd->qp_state == IB_QPS_RTR) {
			/* INIT to RTR: the path's port is the QP's. */
			if (cmd->dest.port_num != qp->real_qp->port)
				return -EINVAL;
		} else {
			/* SQD to SQD: a new path moves the QP's port. */
			if ((mask & IB_QP_PORT) &&
			    cmd->port_num != cmd->dest.port_num)
				return -EINVAL;
			mask |= IB_QP_PORT;
			cmd->port_num = cmd->dest.port_num;
		}
	}
	if (((mask & IB_QP_STATE) && cmd->qp_state > IB_QPS_ERR) ||
	    ((mask & IB_QP_CUR_STATE) && cmd->cur_qp_state > IB_QPS_ERR))
		return -EINVAL;
	/* Alternate paths: no RoCE device migrates paths. */
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE))
		return -EOPNOTSUPP;
	/*
	 * A Q_Key with the high bit set is privileged. ib_uverbs allows it
	 * when "rdma system" enables privileged Q_Keys; that switch has no
	 * exported reader, so this path always refuses it.
	 */
	if ((mask & IB_QP_QKEY) && (cmd->qkey & IB_QP_SET_QKEY))
		return -EPERM;
	if (mask & IB_QP_AV) {
		err = sroce_uapi_ah_attr(qp->device, &attr->ah_attr,
					 &cmd->dest);
		if (err)
			return err;
	}
	attr->qp_state = cmd->qp_state;
	attr->cur_qp_state = cmd->cur_qp_state;
	attr->path_mtu = cmd->path_mtu;
	attr->qkey = cmd->qkey;
	attr->rq_psn = cmd->rq_psn;
	attr->sq_psn = cmd->sq_psn;
	attr->dest_qp_num = cmd->dest_qp_num;
	attr->qp_access_flags = cmd->qp_access_flags;
	attr->pkey_index = cmd->pkey_index;
	attr->en_sqd_async_notify = cmd->en_sqd_async_notify;
	attr->max_rd_atomic = cmd->max_rd_atomic;
	attr->max_dest_rd_atomic = cmd->max_dest_rd_atomic;
	attr->min_rnr_timer = cmd->min_rnr_timer;
	attr->port_num = cmd->port_num;
	attr->timeout = cmd->timeout;
	attr->retry_cnt = cmd->retry_cnt;
	attr->rnr_retry = cmd->rnr_retry;
	cmd->attr_mask = sroce_uapi_qp_mask(qp->qp_type, mask);
	return 0;
}

static int
UVERBS_HANDLER(SROCE_METHOD_QP_MODIFY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *qp =
		uverbs_attr_get_obj(attrs, SROCE_ATTR_MODIFY_QP_HANDLE);
	struct ib_uverbs_modify_qp cmd;
	struct ib_qp_attr *attr;
	int err;

	if (IS_ERR(qp))
		return PTR_ERR(qp);
	err = uverbs_copy_from(&cmd, attrs, SROCE_ATTR_MODIFY_QP_CMD);
	if (err)
		return err;
	if (cmd.attr_mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	attr = kzalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	err = sroce_uapi_qp_attr(qp, attr, &cmd);
	if (!err)
		err = ib_modify_qp_with_udata(qp, attr, cmd.attr_mask,
					      &attrs->driver_udata);
	kfree(attr);
	return err;
}

static int
UVERBS_HANDLER(SROCE_METHOD_PD_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_pd *pd = uverbs_attr_get_obj(attrs,
					       SROCE_ATTR_QUERY_PD_HANDLE);

	return PTR_ERR_OR_ZERO(pd);
}

static int
UVERBS_HANDLER(SROCE_METHOD_MR_IN_PD)(struct uverbs_attr_bundle *attrs)
{
	struct ib_mr *mr = uverbs_attr_get_obj(attrs,
					       SROCE_ATTR_MR_IN_PD_MR_HANDLE);
	struct ib_pd *pd = uverbs_attr_get_obj(attrs,
					       SROCE_ATTR_MR_IN_PD_PD_HANDLE);

	if (IS_ERR(mr))
		return PTR_ERR(mr);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	/*
	 * A rereg that moves the MR to another PD holds the MR's object
	 * exclusively; this method holds it for reading.
	 */
	return mr->pd == pd ? 0 : -EINVAL;
}

DECLARE_UVERBS_NAMED_METHOD(SROCE_METHOD_QP_DOORBELL,
			    UVERBS_ATTR_IDR(SROCE_ATTR_DOORBELL_QP_HANDLE,
					    UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(SROCE_METHOD_QP_MODIFY,
			    UVERBS_ATTR_IDR(SROCE_ATTR_MODIFY_QP_HANDLE,
					    UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(SROCE_ATTR_MODIFY_QP_CMD,
					       UVERBS_ATTR_TYPE(struct ib_uverbs_modify_qp),
					       UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(SROCE_METHOD_PD_QUERY,
			    UVERBS_ATTR_IDR(SROCE_ATTR_QUERY_PD_HANDLE,
					    UVERBS_OBJECT_PD,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY));

ADD_UVERBS_METHODS(sroce_qp_methods, UVERBS_OBJECT_QP,
		   &UVERBS_METHOD(SROCE_METHOD_QP_DOORBELL),
		   &UVERBS_METHOD(SROCE_METHOD_QP_MODIFY));

DECLARE_UVERBS_NAMED_METHOD(SROCE_METHOD_MR_IN_PD,
			    UVERBS_ATTR_IDR(SROCE_ATTR_MR_IN_PD_MR_HANDLE,
					    UVERBS_OBJECT_MR,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_IDR(SROCE_ATTR_MR_IN_PD_PD_HANDLE,
					    UVERBS_OBJECT_PD,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY));

ADD_UVERBS_METHODS(sroce_pd_methods, UVERBS_OBJECT_PD,
		   &UVERBS_METHOD(SROCE_METHOD_PD_QUERY));

ADD_UVERBS_METHODS(sroce_mr_methods, UVERBS_OBJECT_MR,
		   &UVERBS_METHOD(SROCE_METHOD_MR_IN_PD));

const struct uapi_definition sroce_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &sroce_qp_methods),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_PD, &sroce_pd_methods),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_MR, &sroce_mr_methods),
	{},
};
