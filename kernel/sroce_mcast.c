// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: UD multicast - groups of QPs attached to a multicast GID.
 *
 * A packet to QPN 0xffffff is given to every QP attached to the group of
 * its destination address. The netdev joins the group's MAC address while
 * the group has members, so that the wire delivers it to us.
 */
#include <linux/etherdevice.h>
#include <linux/slab.h>
#include <net/if_inet6.h>
#include <net/ip.h>

#include "sroce_loc.h"
#include "sroce_task.h"
#include "sroce.h"

struct sroce_mcast_member {
	struct list_head list;
	struct sroce_qp *qp;
};

struct sroce_mcast_group {
	struct list_head list;
	union ib_gid gid;
	u8 mac[ETH_ALEN];
	unsigned int members;
	struct list_head qps;		/* struct sroce_mcast_member */
};

/* The Ethernet multicast MAC of a multicast GID (IPv4-mapped or IPv6). */
static void sroce_mcast_mac(const union ib_gid *gid, u8 *mac)
{
	if (ipv6_addr_v4mapped((const struct in6_addr *)gid->raw))
		ip_eth_mc_map(*(const __be32 *)&gid->raw[12], mac);
	else
		ipv6_eth_mc_map((const struct in6_addr *)gid->raw, mac);
}

static struct sroce_mcast_group *sroce_mcast_find(struct sroce_dev *sdev,
						  const union ib_gid *gid)
{
	struct sroce_mcast_group *grp;

	list_for_each_entry(grp, &sdev->mcast_groups, list)
		if (!memcmp(&grp->gid, gid, sizeof(*gid)))
			return grp;
	return NULL;
}

int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_mcast_group *grp, *new_grp;
	struct sroce_mcast_member *m, *new_m;
	bool join = false;
	int err = 0;

	if (ibqp->qp_type != IB_QPT_UD)
		return -EINVAL;
	new_grp = kzalloc(sizeof(*new_grp), GFP_KERNEL);
	new_m = kzalloc(sizeof(*new_m), GFP_KERNEL);
	if (!new_grp || !new_m) {
		err = -ENOMEM;
		goto out;
	}

	spin_lock_bh(&sdev->mcast_lock);
	grp = sroce_mcast_find(sdev, gid);
	if (!grp) {
		if (sdev->num_mcast_grp >= SROCE_MAX_MCAST_GRP) {
			err = -ENOMEM;
			goto unlock;
		}
		grp = new_grp;
		new_grp = NULL;
		grp->gid = *gid;
		sroce_mcast_mac(gid, grp->mac);
		INIT_LIST_HEAD(&grp->qps);
		list_add(&grp->list, &sdev->mcast_groups);
		sdev->num_mcast_grp++;
		join = true;
	}
	list_for_each_entry(m, &grp->qps, list) {
		if (m->qp == to_sqp(ibqp))
			goto unlock;	/* attached already */
	}
	if (grp->members >= SROCE_MAX_MCAST_QP_ATTACH) {
		err = -ENOMEM;
		goto unlock;
	}
	new_m->qp = to_sqp(ibqp);
	list_add_tail(&new_m->list, &grp->qps);
	new_m = NULL;
	grp->members++;
unlock:
	spin_unlock_bh(&sdev->mcast_lock);
	if (join)
		dev_mc_add(sdev->ndev, grp->mac);
out:
	kfree(new_grp);
	kfree(new_m);
	return err;
}

int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_mcast_member *m, *found = NULL;
	struct sroce_mcast_group *grp;
	u8 mac[ETH_ALEN];
	bool leave = false;

	spin_lock_bh(&sdev->mcast_lock);
	grp = sroce_mcast_find(sdev, gid);
	if (grp) {
		list_for_each_entry(m, &grp->qps, list) {
			if (m->qp == to_sqp(ibqp)) {
				found = m;
				break;
			}
		}
	}
	if (!found) {
		spin_unlock_bh(&sdev->mcast_lock);
		return -EINVAL;
	}
	list_del(&found->list);
	if (!--grp->members) {
		list_del(&grp->list);
		sdev->num_mcast_grp--;
		ether_addr_copy(mac, grp->mac);
		leave = true;
	}
	spin_unlock_bh(&sdev->mcast_lock);

	kfree(found);
	if (leave) {
		dev_mc_del(sdev->ndev, mac);
		kfree(grp);
	}
	return 0;
}

/**
 * sroce_mcast_rcv - give a multicast packet to the group's QPs
 * @sdev: the device
 * @skb: the packet (consumed), set up as for sroce_rcv()
 * @dgid: its destination GID
 */
void sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		     const union ib_gid *dgid)
{
	struct sroce_mcast_group *grp;
	struct sroce_mcast_member *m;

	spin_lock_bh(&sdev->mcast_lock);
	grp = sroce_mcast_find(sdev, dgid);
	/* A group that nobody here joined: no QP takes the packet. */
	if (!grp || list_empty(&grp->qps)) {
		sroce_drop(sdev, SROCE_CNT_DROP_NO_QP,
			   "multicast to %pI6 dropped: no member here\n",
			   dgid->raw);
	} else {
		sroce_count(sdev, SROCE_CNT_RCVD_PKTS);
		sroce_count_add(sdev, SROCE_CNT_RCVD_BYTES,
				SROCE_PKT(skb)->paylen);
	}
	if (grp) {
		list_for_each_entry(m, &grp->qps, list) {
			struct sk_buff *copy;

			if (!sroce_task_rx_room(m->qp)) {
				sroce_drop_qp(m->qp, SROCE_CNT_DROP_RX_FULL,
					      "multicast dropped: receive queue full\n");
				continue;
			}
			/* being destroyed */
			if (!refcount_inc_not_zero(&m->qp->ref)) {
				sroce_drop_qp(m->qp, SROCE_CNT_DROP_QP_STATE,
					      "multicast dropped: QP destroyed\n");
				continue;
			}
			copy = skb_clone(skb, GFP_ATOMIC);
			if (!copy) {
				sroce_drop_qp(m->qp, SROCE_CNT_DROP_NO_MEM,
					      "multicast dropped: no memory for a copy\n");
				sroce_qp_put(m->qp);
				continue;
			}
			SROCE_PKT(copy)->qp = m->qp;
			/*
			 * No reference of our own across the enqueue: an
			 * attached QP outlives our lock (ib_core destroys no
			 * QP with groups attached, and detaching takes it).
			 * So it is never being destroyed here; if it were,
			 * the copy would be dropped as the QP's.
			 */
			if (!sroce_task_rx(m->qp, copy, NULL)) {
				sroce_drop_qp(m->qp, SROCE_CNT_DROP_QP_STATE,
					      "multicast dropped: QP destroyed\n");
				kfree_skb(copy);
				sroce_qp_put(m->qp);
			}
		}
	}
	spin_unlock_bh(&sdev->mcast_lock);
	kfree_skb(skb);
}
