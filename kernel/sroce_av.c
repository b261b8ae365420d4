// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: address vectors, the RoCEv2 destination of a connected QP (and,
 * later, of an address handle).
 */
#include <linux/etherdevice.h>

#include "sroce.h"

/**
 * sroce_av_from_attr - take an address vector from verbs attributes
 * @av: filled on success
 * @attr: an ah_attr whose GRH and sgid_attr ib_core has resolved
 *
 * Return: 0, or -EINVAL unless the source GID is a RoCEv2 GID of our port.
 */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(attr);
	const struct ib_gid_attr *sgid_attr = grh->sgid_attr;

	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH) || !sgid_attr ||
	    sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP ||
	    rdma_ah_get_port_num(attr) != SROCE_PORT)
		return -EINVAL;

	av->net_type = rdma_gid_attr_network_type(sgid_attr);
	av->sgid = sgid_attr->gid;
	av->sgid_index = grh->sgid_index;
	av->dgid = grh->dgid;
	av->flow_label = grh->flow_label;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->sl = rdma_ah_get_sl(attr);
	ether_addr_copy(av->dmac, attr->roce.dmac);
	return 0;
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
