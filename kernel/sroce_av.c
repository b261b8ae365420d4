// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: address vectors, the RoCEv2 destination of a connected QP or of
 * an address handle, and the address handles themselves.
 */
#include <linux/etherdevice.h>
#include <rdma/ib_cache.h>

#include "sroce_loc.h"
#include "sroce.h"

/**
 * sroce_av_from_attr - take an address vector from verbs attributes
 * @av: filled on success, with a reference to the source GID: the caller
 *      drops it with sroce_av_put() when the av is replaced or freed
 * @attr: an ah_attr whose GRH and sgid_attr ib_core has resolved
 * @udata: the user's command (create_ah, modify_qp), in its system call;
 *         NULL for a kernel consumer, which may be in atomic context
 *
 * The SL is the packets' priority (sroce_av_prio()). A socket needs
 * CAP_NET_RAW or CAP_NET_ADMIN for a priority above 6 (SO_PRIORITY), and
 * so does a user's path or AH (sroce_prio_allowed()), when it is made: as
 * with a socket, what was allowed then stays so. Kernel consumers (the
 * RDMA CM's, ib_mad's) choose their SL as they choose their sockets'
 * priority.
 *
 * Return: 0, or -EINVAL unless the source GID is a RoCEv2 GID of our port
 * on a net_device we send through (sroce_gid_egress()), -ENODEV if its
 * net_device is gone, -EPERM for a priority above 6 that the user may
 * not give.
 */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr,
		       struct ib_udata *udata)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(attr);
	const struct ib_gid_attr *sgid_attr = grh->sgid_attr;
	struct sroce_dev *sdev;
	int err;

	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH) || !sgid_attr ||
	    sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP ||
	    rdma_ah_get_port_num(attr) != SROCE_PORT)
		return -EINVAL;
	sdev = to_sdev(sgid_attr->device);
	err = sroce_gid_egress(sdev, sgid_attr, av);
	if (err)
		return err;

	av->net_type = rdma_gid_attr_network_type(sgid_attr);
	av->sgid = sgid_attr->gid;
	av->sgid_index = grh->sgid_index;
	av->dgid = grh->dgid;
	av->flow_label = grh->flow_label;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->sl = rdma_ah_get_sl(attr);
	ether_addr_copy(av->dmac, attr->roce.dmac);
	if (udata && !sroce_prio_allowed(sdev, sroce_av_prio(av)))
		return -EPERM;
	/*
	 * Our own reference: ib_core's (qp->av_sgid_attr) changes after
	 * modify_qp returns, outside the QP's lock the engine sends under.
	 */
	rdma_hold_gid_attr(sgid_attr);
	av->sgid_attr = sgid_attr;
	return 0;
}

/**
 * sroce_av_put - drop an address vector's reference to its source GID
 * @av: filled by sroce_av_from_attr(), or never (zeroed); no packet is
 *      being sent with it any more
 *
 * Any context: the GID entry's last put is deferred to a work item.
 */
void sroce_av_put(struct sroce_av *av)
{
	if (av->sgid_attr)
		rdma_put_gid_attr(av->sgid_attr);
	av->sgid_attr = NULL;
}

void sroce_av_to_attr(const struct sroce_av *av, struct rdma_ah_attr *attr)
{
	union ib_gid dgid = av->dgid;

	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_port_num(attr, SROCE_PORT);
	ether_addr_copy(attr->roce.dmac, av->dmac);
}

int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);
	struct sroce_create_ah_resp resp = {};
	unsigned long flags;
	int err;

	err = sroce_av_from_attr(&ah->av, init->ah_attr, udata);
	if (err)
		return err;
	if (atomic_inc_return(&sdev->num_ah) > SROCE_MAX_AH) {
		err = -ENOMEM;
		goto err_count;
	}
	ah->loopback = sroce_av_is_local(sdev, &ah->av);

	/* Kernel AHs may be made in atomic context. */
	xa_lock_irqsave(&sdev->ah_xa, flags);
	err = __xa_alloc_cyclic(&sdev->ah_xa, &ah->ah_num, ah,
				XA_LIMIT(1, U32_MAX), &sdev->ah_next,
				GFP_ATOMIC);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	if (err < 0)
		goto err_count;
	if (udata) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_lock_irqsave(&sdev->ah_xa, flags);
	__xa_erase(&sdev->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
err_count:
	atomic_dec(&sdev->num_ah);
	sroce_av_put(&ah->av);
	return err;
}

int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	sroce_av_to_attr(&to_sah(ibah)->av, attr);
	return 0;
}

int sroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);
	unsigned long irqflags;

	/* Once erased under the xa_lock, no sender reads it any more. */
	xa_lock_irqsave(&sdev->ah_xa, irqflags);
	__xa_erase(&sdev->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&sdev->ah_xa, irqflags);
	atomic_dec(&sdev->num_ah);
	sroce_av_put(&ah->av);
	return 0;
}

/**
 * sroce_ah_lookup - the destination a UD WQE names
 * @sdev: the device
 * @pd: the sending QP's PD, which the AH must be in
 * @ah_num: the AH number from the WQE
 * @av: filled with the AH's destination and a reference of its own to the
 *      source GID (the AH may be destroyed while the packet is sent): the
 *      caller drops it with sroce_av_put()
 * @loopback: set if that is one of our own GIDs
 *
 * Return: 0, or -EINVAL if no AH of @pd has that number.
 */
int sroce_ah_lookup(struct sroce_dev *sdev, struct ib_pd *pd, u32 ah_num,
		    struct sroce_av *av, bool *loopback)
{
	struct sroce_ah *ah;
	unsigned long flags;
	int err = -EINVAL;

	xa_lock_irqsave(&sdev->ah_xa, flags);
	ah = xa_load(&sdev->ah_xa, ah_num);
	if (ah && ah->ibah.pd == pd) {
		*av = ah->av;
		rdma_hold_gid_attr(av->sgid_attr);
		*loopback = ah->loopback;
		err = 0;
	}
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	return err;
}
