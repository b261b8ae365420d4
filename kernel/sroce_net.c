// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: RoCEv2 packets on the network - the UDP 4791 sockets, receiving
 * (dispatch to the destination QP) and sending (headers, ICRC, route).
 *
 * Packets to one of the device's own GIDs never touch the network stack:
 * they are handed to the receive path directly (loopback).
 *
 * A GID is an address of the bound net_device or of a VLAN device on it
 * (ib_core's GID table says which, in its gid_attr's ndev). Its packets
 * leave through that device, so that a VLAN's are tagged, and are taken
 * only when they arrive on it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/module.h>
#include <linux/pkt_sched.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <net/ipv6.h>
#include <net/netns/generic.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "sroce_compat.h"
#include "sroce_hdr.h"
#include "sroce_loc.h"
#include "sroce_task.h"
#include "sroce.h"

/**
 * struct sroce_net - sroce in one network namespace
 * @net: the namespace
 * @sock4: its UDP 4791 socket for IPv4, while @users is not 0
 * @sock6: the same for IPv6 (NULL without CONFIG_IPV6)
 * @users: the devices whose net_device was in @net when they were created
 *
 * @sock4, @sock6 and @users are protected by sroce_net_lock.  A device binds
 * the sockets of its net_device's namespace when it is created
 * (sroce_net_attach()) and lets them go when it is freed
 * (sroce_net_detach()): the port is bound in a namespace exactly while a
 * device of that namespace exists, so loading the module binds nothing and a
 * namespace without sroce devices leaves UDP 4791 to others (rdma_rxe).
 *
 * Kernel sockets do not pin their namespace.  A device does, indirectly: it
 * holds its net_device, whose unregistration - done by the namespace's
 * cleanup before any pernet subsystem exits - waits for the device to be
 * freed.  So no device outlives the sockets it uses.
 */
struct sroce_net {
	struct net *net;
	struct socket *sock4;
	struct socket *sock6;
	unsigned int users;
};

static unsigned int sroce_net_id;
static DEFINE_MUTEX(sroce_net_lock);

/* Take a reference on the QP @qpn of @sdev, or NULL. */
static struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&sdev->qp_xa, flags);
	qp = xa_load(&sdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	xa_unlock_irqrestore(&sdev->qp_xa, flags);
	return qp;
}

/* The destination address of a received packet, as a GID. */
static void sroce_pkt_dgid(struct sk_buff *skb, union ib_gid *gid)
{
	if (ip_hdr(skb)->version == 4)
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)gid->raw);
	else
		memcpy(gid->raw, &ipv6_hdr(skb)->daddr, sizeof(gid->raw));
}

/* Was a received packet sent from @gid (IPv4-mapped for IPv4)? */
static bool sroce_pkt_from(struct sk_buff *skb, const union ib_gid *gid)
{
	if (ip_hdr(skb)->version == 4)
		return ipv6_addr_v4mapped((const struct in6_addr *)gid->raw) &&
		       !memcmp(&gid->raw[12], &ip_hdr(skb)->saddr, 4);
	return !memcmp(gid->raw, &ipv6_hdr(skb)->saddr, sizeof(gid->raw));
}

/*
 * The ifindex of the net_device of a path's source GID now; 0 once the GID
 * is deleted (its device gone, or its address: ib_core clears the entry's
 * ndev), or with no path set.
 */
static int sroce_av_ifindex(const struct sroce_av *av)
{
	struct net_device *ndev;
	int ifindex = 0;

	if (!av->sgid_attr)
		return 0;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(av->sgid_attr);
	if (!IS_ERR(ndev))
		ifindex = ndev->ifindex;
	rcu_read_unlock();
	return ifindex;
}

/**
 * sroce_pkt_on_path - was a received packet sent along a connected path?
 * @skb: the packet, its network header set
 * @av: the path: the peer's GID and ours, and our GID's net_device
 *
 * sroce_rcv() took it only if its destination is a GID of the net_device
 * it arrived on; but an address can be a GID of several: an IPv6
 * link-local address is on the bound net_device and, the MAC being the
 * same, on every VLAN on it. So a packet from the network must also have
 * arrived on the device of the QP's own GID. Then a QP whose GID is a
 * VLAN's takes nothing that came from elsewhere (a peer on another VLAN
 * or untagged, sending to another GID of ours or to the same address
 * there). Looped-back packets come from a QP of this host, whose path
 * loops back only to a GID of its own GID's device (sroce_av_is_local()),
 * and are not checked for it.
 *
 * Return: true if the packet's source address is @av's dgid, its
 * destination @av's sgid, and it was looped back or arrived on the
 * device of @av's source GID (never once that GID is deleted).
 */
bool sroce_pkt_on_path(struct sk_buff *skb, const struct sroce_av *av)
{
	int ifindex = SROCE_PKT(skb)->ifindex;
	union ib_gid dgid;

	if (ifindex && ifindex != sroce_av_ifindex(av))
		return false;
	sroce_pkt_dgid(skb, &dgid);
	return sroce_pkt_from(skb, &av->dgid) &&
	       !memcmp(dgid.raw, av->sgid.raw, sizeof(dgid.raw));
}

/*
 * Does @sdev send and receive through @ndev: its own net_device or a VLAN
 * device on it (vlan_dev_real_dev() is the lowest real device, so stacked
 * VLANs too), in the namespace of its sockets? ib_core also makes GIDs for
 * the addresses of other upper devices (macvlan, ipvlan, a bridge or bond
 * that the net_device is a port of), and keeps those of a VLAN device
 * moved to another namespace; their packets never reach our sockets.
 */
static bool sroce_ndev_is_ours(struct sroce_dev *sdev,
			       struct net_device *ndev)
{
	if (!net_eq(dev_net(ndev), sdev->sn->net))
		return false;
	if (is_vlan_dev(ndev))
		ndev = vlan_dev_real_dev(ndev);
	return ndev == sdev->ndev;
}

/*
 * Was a packet from the network sent to one of @sdev's GIDs on the
 * net_device it arrived on? A VLAN's GID is taken only tagged with that
 * VLAN, the bound device's only untagged, as ib_core's GID attributes
 * say (rdma_rxe checks the same). Multicast is the groups' business
 * (sroce_mcast_rcv()). Softirq: the GID table's lock is taken with
 * interrupts off, and a GID entry's last put is deferred to a work item.
 */
static bool sroce_pkt_to_arrival_gid(struct sroce_dev *sdev,
				     struct sk_buff *skb)
{
	const struct ib_gid_attr *attr;
	union ib_gid dgid;

	if (!sroce_ndev_is_ours(sdev, skb->dev))
		return false;
	sroce_pkt_dgid(skb, &dgid);
	if (rdma_is_multicast_addr((struct in6_addr *)dgid.raw))
		return true;
	attr = rdma_find_gid_by_port(&sdev->ibdev, &dgid,
				     IB_GID_TYPE_ROCE_UDP_ENCAP, SROCE_PORT,
				     skb->dev);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/**
 * sroce_rcv - take a received packet
 * @sdev: the device it arrived on
 * @skb: the packet; data at the BTH, network header set, ICRC at the end
 * @wire: it came from the network: check its destination and ICRC (false
 *        for loopback, which computed the ICRC and chose a GID of ours)
 *
 * Drops what is malformed, not for this device, for no QP or for a full
 * receive queue (each counted by reason); queues the rest to its QP and
 * schedules the QP's engine. Any context.
 *
 * A packet dropped is counted once, by the first check it fails, in this
 * order: malformed (length, opcode, transport version, pad:
 * drop_malformed), not to a GID of its arrival device (drop_bad_dest),
 * ICRC (drop_icrc_err), no QP (drop_no_qp: a QP being destroyed too), the
 * QP's receive queue full (drop_rx_queue_full). Only a packet queued to
 * its QP counts as received (rcvd_pkts, rcvd_bytes); one the QP's engine
 * then drops counts in that drop's counter as well.
 */
void sroce_rcv(struct sroce_dev *sdev, struct sk_buff *skb, bool wire)
{
	struct sroce_pkt *pkt = SROCE_PKT(skb);
	/* skb->cb is ours only when we sent the packet (loopback) */
	struct sroce_inline *inl = wire ? NULL : pkt->inl;
	enum sroce_counter why = SROCE_CNT_DROP_MALFORMED;
	const struct sroce_opinfo *info;
	struct sroce_qp *qp;
	struct sroce_bth *bth;
	unsigned int pad, len;
	u32 paylen;
	bool queued;
	__le32 icrc;

	if (skb_linearize(skb))
		goto drop;
	len = skb->len;
	if (len < sizeof(*bth) + SROCE_ICRC_LEN)
		goto drop;
	bth = (struct sroce_bth *)skb->data;
	info = &sroce_opinfo[bth->opcode];
	pad = (bth->flags & SROCE_BTH_PAD_MASK) >> SROCE_BTH_PAD_SHIFT;
	if (!(info->flags & SROCE_OP_VALID) ||
	    len < info->hdr_len + pad + SROCE_ICRC_LEN ||
	    (bth->flags & 0x0f) != 0)
		goto drop;
	/*
	 * The cheap checks first, then the GID table, then the ICRC over
	 * every byte: a packet is counted by the first it fails.
	 */
	if (wire && !sroce_pkt_to_arrival_gid(sdev, skb)) {
		why = SROCE_CNT_DROP_BAD_DEST;
		goto drop;
	}
	if (wire) {
		memcpy(&icrc, skb->data + len - SROCE_ICRC_LEN, sizeof(icrc));
		if (icrc != sroce_icrc(skb)) {
			why = SROCE_CNT_ICRC_ERR;
			goto drop;
		}
	}

	pkt->opcode = bth->opcode;
	pkt->psn = be32_to_cpu(bth->apsn) & SROCE_PSN_MASK;
	/*
	 * For the QP's path check (sroce_pkt_on_path()), and for UD
	 * completions (ib_init_ah_attr_from_wc() finds the GID to answer
	 * from by the VLAN): taken now, as skb->dev may be gone by then.
	 */
	if (wire) {
		pkt->ifindex = skb->dev->ifindex;
		pkt->vlan_id = rdma_vlan_dev_vlan_id(skb->dev);
	} else {
		pkt->ifindex = 0;
	}
	pkt->hdr_len = info->hdr_len;
	pkt->paylen = len - info->hdr_len - pad - SROCE_ICRC_LEN;
	if ((be32_to_cpu(bth->qpn) & SROCE_QPN_MASK) == SROCE_MCAST_QPN) {
		union ib_gid dgid;

		if (bth->opcode != SROCE_UD_SEND_ONLY &&
		    bth->opcode != SROCE_UD_SEND_ONLY_IMM)
			goto drop;
		sroce_pkt_dgid(skb, &dgid);
		sroce_mcast_rcv(sdev, skb, &dgid);
		return;
	}
	pkt->qp = sroce_qp_get(sdev, be32_to_cpu(bth->qpn) & SROCE_QPN_MASK);
	if (!pkt->qp) {
		why = SROCE_CNT_DROP_NO_QP;
		goto drop;
	}
	if (!sroce_task_rx_room(pkt->qp)) {
		sroce_qp_put(pkt->qp);
		why = SROCE_CNT_DROP_RX_FULL;
		goto drop;
	}

	/*
	 * The queued packet owns pkt->qp's reference, and the engine may
	 * take and free the packet as soon as it is queued: hold the QP
	 * ourselves until its work is scheduled, and count the packet from
	 * what was read before.
	 */
	qp = pkt->qp;
	paylen = pkt->paylen;
	refcount_inc(&qp->ref);
	queued = sroce_task_rx(qp, skb, inl);
	sroce_qp_put(qp);
	if (!queued) {
		/* Being destroyed, out of the QP table already: no QP. */
		sroce_qp_put(qp);
		why = SROCE_CNT_DROP_NO_QP;
		goto drop;
	}
	sroce_count(sdev, SROCE_CNT_RCVD_PKTS);
	sroce_count_add(sdev, SROCE_CNT_RCVD_BYTES, paylen);
	return;
drop:
	sroce_drop(sdev, why, "received packet of %u bytes dropped\n",
		   skb->len);
	kfree_skb(skb);
}

/*
 * Is @ibdev a device of this module (not another driver's on the netdev)?
 * Built into the kernel, THIS_MODULE would be NULL, as every built-in
 * driver's owner is.
 */
#ifndef MODULE
#error "sroce tells its devices by their module: build it as a module"
#endif

static bool sroce_is_ours(struct ib_device *ibdev)
{
	return ibdev->ops.owner == THIS_MODULE;
}

static int sroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;
	struct ib_device *ibdev;

	/*
	 * A packet tagged for a VLAN of our net_device arrives on the VLAN's
	 * device; sroce_rcv() checks that it was for that VLAN's GID.
	 */
	if (is_vlan_dev(ndev))
		ndev = vlan_dev_real_dev(ndev);
	/* UDP has trimmed the skb to the datagram; data is at its header. */
	ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		goto drop;
	if (!sroce_is_ours(ibdev)) {
		ib_device_put(ibdev);
		goto drop;
	}
	skb_pull(skb, sizeof(struct udphdr));
	sroce_rcv(to_sdev(ibdev), skb, true);
	ib_device_put(ibdev);
	return 0;
drop:
	kfree_skb(skb);
	return 0;
}

static struct socket *sroce_udp_sock(struct net *net, bool ipv6)
{
	struct udp_tunnel_sock_cfg tnl = {
		.encap_type = 1,
		.encap_rcv = sroce_udp_encap_recv,
	};
	struct udp_port_cfg cfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.ipv6_v6only = ipv6,
		.local_udp_port = htons(SROCE_UDP_PORT),
	};
	struct socket *sock;
	int err;

	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, sock, &tnl);
	/* Our own multicast is delivered locally by sroce_pkt_xmit(). */
	sroce_sock_mc_loop_off(sock, ipv6);
	return sock;
}

static void sroce_net_release(struct sroce_net *sn)
{
	if (sn->sock6)
		udp_tunnel_sock_release(sn->sock6);
	if (sn->sock4)
		udp_tunnel_sock_release(sn->sock4);
	sn->sock4 = NULL;
	sn->sock6 = NULL;
}

/**
 * sroce_net_attach - bind UDP 4791 in the namespace of a new device
 * @sdev: the device, with @ndev set and not yet registered
 *
 * The first device of a namespace creates its sockets; the others share
 * them.  Sets @sdev->sn.
 *
 * Return: 0; -EADDRINUSE if another driver (rdma_rxe) holds the port in that
 * namespace; another negative errno from socket creation.
 */
int sroce_net_attach(struct sroce_dev *sdev)
{
	struct net *net = dev_net(sdev->ndev);
	struct sroce_net *sn = net_generic(net, sroce_net_id);
	struct socket *sock;
	int err = 0;

	mutex_lock(&sroce_net_lock);
	if (sn->users)
		goto out;
	sock = sroce_udp_sock(net, false);
	if (IS_ERR(sock)) {
		err = PTR_ERR(sock);
		goto out_err;
	}
	sn->sock4 = sock;
	if (IS_ENABLED(CONFIG_IPV6)) {
		sock = sroce_udp_sock(net, true);
		if (IS_ERR(sock)) {
			err = PTR_ERR(sock);
			sroce_net_release(sn);
			goto out_err;
		}
		sn->sock6 = sock;
	}
out:
	sn->users++;
	sdev->sn = sn;
	mutex_unlock(&sroce_net_lock);
	return 0;
out_err:
	mutex_unlock(&sroce_net_lock);
	pr_err("cannot bind UDP port %d for %s (%d); is rdma_rxe loaded in its network namespace?\n",
	       SROCE_UDP_PORT, sdev->ndev->name, err);
	return err;
}

/**
 * sroce_net_detach - a device no longer sends or receives
 * @sdev: the device, attached; unregistered or never registered
 *
 * The last device of a namespace releases its sockets.
 */
void sroce_net_detach(struct sroce_dev *sdev)
{
	struct sroce_net *sn = sdev->sn;

	if (!sn)
		return;
	mutex_lock(&sroce_net_lock);
	if (!--sn->users)
		sroce_net_release(sn);
	mutex_unlock(&sroce_net_lock);
	sdev->sn = NULL;
}

static int __net_init sroce_net_ns_init(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);

	sn->net = net;
	return 0;
}

/*
 * Every device of @net is gone by now (see struct sroce_net), so its
 * sockets are too.
 */
static void __net_exit sroce_net_ns_exit(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);

	mutex_lock(&sroce_net_lock);
	if (WARN_ON(sn->users))
		sroce_net_release(sn);
	mutex_unlock(&sroce_net_lock);
}

static struct pernet_operations sroce_net_ops = {
	.init = sroce_net_ns_init,
	.exit = sroce_net_ns_exit,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_net),
};

int sroce_net_init(void)
{
	return register_pernet_subsys(&sroce_net_ops);
}

void sroce_net_exit(void)
{
	unregister_pernet_subsys(&sroce_net_ops);
}

/*
 * An skb with @size bytes of buffer. The buffer comes from the per-CPU page
 * fragment cache when it can: unlike kmalloc() it is not zeroed first
 * (init_on_alloc), which for a 4 KiB packet costs more than the payload's
 * copy. Every byte sent is written by the caller. Falls back to alloc_skb().
 */
static struct sk_buff *sroce_skb_alloc(unsigned int size)
{
	unsigned int truesize = SKB_DATA_ALIGN(size) +
				SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
	struct sk_buff *skb;
	void *data;

	if (truesize <= PAGE_SIZE * 2) {
		data = netdev_alloc_frag(truesize);
		if (data) {
			skb = build_skb(data, truesize);
			if (skb)
				return skb;
			skb_free_frag(data);
		}
	}
	return alloc_skb(size, GFP_KERNEL);
}

/**
 * sroce_pkt_alloc - a packet to send, with room for every header
 * @sdev: the sending device
 * @av: where it goes
 * @opcode: its opcode
 * @psn: its PSN
 * @paylen: bytes of payload
 *
 * The BTH is filled but for the destination QPN, the AckReq and SE bits;
 * the caller fills the other headers and the payload (SROCE_PKT(skb)->hdr_len
 * bytes in).
 *
 * Return: the packet, or NULL without memory.
 */
struct sk_buff *sroce_pkt_alloc(struct sroce_dev *sdev,
				const struct sroce_av *av, u8 opcode, u32 psn,
				u32 paylen)
{
	unsigned int hdr_len = sroce_opinfo[opcode].hdr_len;
	unsigned int pad = (4 - (paylen & 3)) & 3;
	/* A VLAN device puts its tag before the IP header. */
	unsigned int headroom = LL_RESERVED_SPACE_EXTRA(sdev->ndev, VLAN_HLEN) +
				sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	struct sroce_bth *bth;
	struct sk_buff *skb;
	u8 *p;

	skb = sroce_skb_alloc(headroom + hdr_len + paylen + pad +
			      SROCE_ICRC_LEN);
	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	p = skb_put(skb, hdr_len + paylen + pad + SROCE_ICRC_LEN);
	memset(p, 0, hdr_len);
	memset(p + hdr_len + paylen, 0, pad + SROCE_ICRC_LEN);

	bth = (struct sroce_bth *)p;
	bth->opcode = opcode;
	bth->flags = pad << SROCE_BTH_PAD_SHIFT;
	bth->pkey = htons(SROCE_DEFAULT_PKEY);
	bth->apsn = cpu_to_be32(psn & SROCE_PSN_MASK);

	SROCE_PKT(skb)->opcode = opcode;
	SROCE_PKT(skb)->psn = psn;
	SROCE_PKT(skb)->hdr_len = hdr_len;
	SROCE_PKT(skb)->paylen = paylen;
	SROCE_PKT(skb)->qp = NULL;
	/* Looped back, it arrives on the VLAN it is sent on. */
	SROCE_PKT(skb)->vlan_id = av->vlan_id;
	skb->protocol = htons(av->net_type == RDMA_NETWORK_IPV4 ? ETH_P_IP :
								 ETH_P_IPV6);
	return skb;
}

static void sroce_push_udp(struct sk_buff *skb, u16 sport)
{
	struct udphdr *udph;

	__skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph = udp_hdr(skb);
	udph->source = htons(sport);
	udph->dest = htons(SROCE_UDP_PORT);
	udph->len = htons(skb->len);
	udph->check = 0;
}

/*
 * @net: the namespace it is sent in
 * @wire: the packet leaves the host (looped back, it needs no IP ID)
 */
static void sroce_push_ip4(struct net *net, struct sk_buff *skb,
			   const struct sroce_av *av, bool wire)
{
	struct iphdr *iph;

	skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = av->traffic_class;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);
	iph->ttl = av->hop_limit ?: 64;
	iph->protocol = IPPROTO_UDP;
	memcpy(&iph->saddr, &av->sgid.raw[12], sizeof(iph->saddr));
	memcpy(&iph->daddr, &av->dgid.raw[12], sizeof(iph->daddr));
	if (wire)
		__ip_select_ident(net, iph, 1);
	else
		iph->id = 0;
	ip_send_check(iph);
}

static void sroce_push_ip6(struct sk_buff *skb, const struct sroce_av *av)
{
	struct ipv6hdr *ip6h;

	skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, av->traffic_class, htonl(av->flow_label));
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = av->hop_limit ?: 64;
	memcpy(&ip6h->saddr, av->sgid.raw, sizeof(ip6h->saddr));
	memcpy(&ip6h->daddr, av->dgid.raw, sizeof(ip6h->daddr));
}

/* A route from @av's sgid to its dgid out of device @oif, or an ERR_PTR. */
static struct dst_entry *sroce_route_lookup(struct sroce_dev *sdev,
					    const struct sroce_av *av,
					    int oif)
{
	struct net *net = sdev->sn->net;
	struct flowi6 fl6 = {
		.flowi6_oif = oif,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct dst_entry *dst;
	int err;

	if (av->net_type == RDMA_NETWORK_IPV4) {
		struct flowi4 fl4 = {
			.flowi4_oif = oif,
			.flowi4_proto = IPPROTO_UDP,
			.saddr = *(__be32 *)&av->sgid.raw[12],
			.daddr = *(__be32 *)&av->dgid.raw[12],
		};
		struct rtable *rt = ip_route_output_key(net, &fl4);

		return IS_ERR(rt) ? ERR_CAST(rt) : &rt->dst;
	}
	memcpy(&fl6.saddr, av->sgid.raw, sizeof(fl6.saddr));
	memcpy(&fl6.daddr, av->dgid.raw, sizeof(fl6.daddr));
	dst = ipv6_stub->ipv6_dst_lookup_flow(net, sdev->sn->sock6->sk, &fl6,
					      NULL);
	if (IS_ERR(dst) || !dst->error)
		return dst;
	err = dst->error;
	dst_release(dst);
	return ERR_PTR(err);
}

/*
 * Route a packet out of the net_device of its path's source GID, as it is
 * now (rdma_read_gid_attr_ndev_rcu(): under RCU, the device is not freed
 * and the entry's ndev is cleared when the GID is deleted).
 *
 * Return: 0 with skb's dst and dev set; -ENETUNREACH when the GID is
 * gone (with its device, or its address alone) or the route leaves
 * through another device; another negative errno from the route lookup.
 */
static int sroce_route(struct sroce_dev *sdev, const struct sroce_av *av,
		       struct sk_buff *skb)
{
	struct net_device *ndev;
	struct dst_entry *dst;
	int err = 0;

	if (!av->sgid_attr)
		return -ENETUNREACH;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(av->sgid_attr);
	if (IS_ERR(ndev)) {
		err = -ENETUNREACH;
		goto out;
	}
	dst = sroce_route_lookup(sdev, av, ndev->ifindex);
	if (IS_ERR(dst)) {
		err = PTR_ERR(dst);
		goto out;
	}
	/*
	 * An oif is only a preference to an IPv6 route with a source address,
	 * and a route to a local address goes through the loopback device: a
	 * packet of a VLAN's GID that the routes send elsewhere would leave
	 * untagged, on another VLAN or back into this host, with the VLAN's
	 * address. And the GID's device may have left the namespace. Packets
	 * leave through that device, our net_device or a VLAN on it, only.
	 */
	if (dst->dev != ndev || !sroce_ndev_is_ours(sdev, dst->dev)) {
		dst_release(dst);
		err = -ENETUNREACH;
		goto out;
	}
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
out:
	rcu_read_unlock();
	return err;
}

/**
 * sroce_ndev_active - does a net_device send and receive now?
 * @ndev: our net_device, or a VLAN device on it
 *
 * Up (netif_running()) with carrier: what makes the port ACTIVE
 * (sroce_netdev_port_state()). Lock-free (two flag bits), any context.
 *
 * Return: true if it is.
 */
bool sroce_ndev_active(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/*
 * Does the source GID of @av send now: not deleted, and its device (ours,
 * or a VLAN device on it) up with carrier? A route out of that device
 * would fail otherwise (sroce_route()), and a loopback path stays within
 * it (sroce_av_is_local()). Lock-free: the GID's device under RCU.
 */
static bool sroce_av_gid_active(const struct sroce_av *av)
{
	struct net_device *ndev;
	bool active;

	if (!av->sgid_attr)
		return false;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(av->sgid_attr);
	active = !IS_ERR(ndev) && sroce_ndev_active(ndev);
	rcu_read_unlock();
	return active;
}

/* A packet handed on, to the IP stack or to our own receive path. */
static void sroce_count_sent(struct sroce_dev *sdev, u32 paylen)
{
	sroce_count(sdev, SROCE_CNT_SENT_PKTS);
	sroce_count_add(sdev, SROCE_CNT_SENT_BYTES, paylen);
}

/**
 * sroce_pkt_xmit - send a packet sroce_pkt_alloc() made and the caller filled
 * @sdev: the sending device
 * @av: where it goes
 * @sport: UDP source port
 * @loopback: the destination is one of @sdev's own GIDs
 * @skb: the packet (consumed)
 *
 * A packet that cannot leave is dropped and counted: in send_port_down
 * while the port is not ACTIVE, in send_no_route when its source GID is
 * gone, that GID's device is not up with carrier, or no route leaves
 * through that device (sroce_av_gid_active(), sroce_route()). Nothing
 * retries it here: a reliable QP's transport timer resends it, then
 * fails the WQE with RETRY_EXC, as when the network loses it. sent_pkts
 * and sent_bytes count the packets handed to the IP stack or, looped
 * back, to sroce_rcv(). Process context (the engine, under the QP's
 * mutex); reads the devices' state lock-free.
 *
 * Return: 0 if it was handed on (counted in sent_pkts; the IP stack may
 * still drop it, as the network may), or a negative errno if it was
 * dropped here.
 */
int sroce_pkt_xmit(struct sroce_dev *sdev, const struct sroce_av *av,
		   u16 sport, bool loopback, struct sk_buff *skb)
{
	enum sroce_counter why = SROCE_CNT_SEND_NO_ROUTE;
	u32 paylen = SROCE_PKT(skb)->paylen;
	struct sk_buff *local = NULL;
	__le32 icrc;
	int err;

	/*
	 * Nothing leaves, looped back or not, while the port is not ACTIVE:
	 * a NIC sends nothing on a DOWN port, and rdma_rxe's route lookup
	 * fails on a device that is down, loopback included. Nor while the
	 * source GID's device is down or the GID gone. Receive needs no
	 * check: a net_device that is down takes nothing from the wire.
	 */
	if (!sroce_ndev_active(sdev->ndev)) {
		why = SROCE_CNT_SEND_PORT_DOWN;
		err = -ENETDOWN;
		goto drop;
	}
	if (!sroce_av_gid_active(av)) {
		err = -ENETUNREACH;
		goto drop;
	}
	sroce_push_udp(skb, sport);
	if (av->net_type == RDMA_NETWORK_IPV4)
		sroce_push_ip4(sdev->sn->net, skb, av, !loopback);
	else
		sroce_push_ip6(skb, av);
	if (loopback) {
		/* Not on a wire: no ICRC to compute or check. */
		skb_pull(skb, skb_transport_offset(skb) + sizeof(struct udphdr));
		sroce_count_sent(sdev, paylen);
		sroce_rcv(sdev, skb, false);
		return 0;
	}
	icrc = sroce_icrc(skb);
	memcpy(skb_tail_pointer(skb) - SROCE_ICRC_LEN, &icrc, sizeof(icrc));
	/*
	 * Multicast also goes to our own members, here rather than by the
	 * IP stack's multicast loop (which our sockets turn off): a copy,
	 * made while skb->cb is still ours, delivered if the packet is sent.
	 */
	if (rdma_is_multicast_addr((struct in6_addr *)av->dgid.raw))
		local = skb_copy(skb, GFP_KERNEL);

	/* skb->cb held our packet state; the IP layer reads its own there. */
	memset(skb->cb, 0, sizeof(skb->cb));
	/*
	 * The SL is the packet's priority, which a VLAN device's egress map
	 * turns into the tag's 802.1p bits (an empty map, the default: PCP 0)
	 * and a qdisc into a band or traffic class; above 6 only if the
	 * path's maker was allowed it (sroce_av_from_attr()). DSCP and ECN
	 * are the traffic class's.
	 */
	skb->priority = sroce_av_prio(av);
	err = sroce_route(sdev, av, skb);
	if (err) {
		kfree_skb(local);
		goto drop;
	}
	if (local) {
		skb_pull(local, skb_transport_offset(local) +
				sizeof(struct udphdr));
		sroce_rcv(sdev, local, false);
	}
	sroce_count_sent(sdev, paylen);
	if (av->net_type == RDMA_NETWORK_IPV4)
		err = ip_local_out(sdev->sn->net, sdev->sn->sock4->sk, skb);
	else
		err = ip6_local_out(sdev->sn->net, sdev->sn->sock6->sk, skb);
	if (net_xmit_eval(err))
		sroce_dbg_dev(sdev, "packet to %pI6 dropped by the stack (%d)\n",
			      av->dgid.raw, err);
	return 0;
drop:
	sroce_drop(sdev, why, "packet from %pI6 to %pI6 not sent (%d)\n",
		   av->sgid.raw, av->dgid.raw, err);
	kfree_skb(skb);
	return err;
}

/**
 * sroce_av_is_local - does a path stay within this host (loopback)?
 * @sdev: the device
 * @av: the path, made by sroce_av_from_attr()
 *
 * Only if its destination is a RoCEv2 GID of @sdev on the very net_device
 * of its source GID: the same device, so the same VLAN (or none), as a
 * RoCE adapter loops traffic back between its own GIDs of one VLAN. The
 * datagram's VLAN, which a looped-back UD completion reports, is then the
 * destination GID's as well as the source's (@av's vlan_id). Any other
 * destination takes the route, which leaves through the source GID's
 * device only (sroce_route()), as on the wire: a GID of ours on another
 * VLAN or untagged is not reached from this one (there a switch would
 * not carry it), and the address of a device sroce does not receive on
 * (a macvlan, perhaps in a container, that ib_core made a GID for,
 * perhaps with a remote host's address) never makes a path local.
 * Decided when the path is made, as before.
 *
 * Any context (ib_core's lookups take the GID table's lock with
 * interrupts off).
 *
 * Return: true to loop back.
 */
bool sroce_av_is_local(struct sroce_dev *sdev, const struct sroce_av *av)
{
	const struct ib_gid_attr *attr = ERR_PTR(-ENODEV);
	struct net_device *ndev;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(av->sgid_attr);
	if (!IS_ERR(ndev))
		attr = rdma_find_gid_by_port(&sdev->ibdev, &av->dgid,
					     IB_GID_TYPE_ROCE_UDP_ENCAP,
					     SROCE_PORT, ndev);
	rcu_read_unlock();
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/**
 * sroce_av_mtu - the RoCE MTU of a path's device
 * @sdev: the device
 * @av: the path; its source GID may be unset or gone
 *
 * The packets of a VLAN's GID leave through the VLAN device, whose MTU
 * may be smaller than the bound net_device's: as the RDMA CM takes the
 * MTU of its address's device (iboe_get_mtu() of its ndev's MTU, in
 * cma_resolve_iboe_route()), so does the path, read now, and never more
 * than the bound net_device's (the port's active MTU). With no source
 * GID, or its device gone, the bound net_device's alone.
 *
 * Return: an MTU of at least IB_MTU_256.
 */
enum ib_mtu sroce_av_mtu(struct sroce_dev *sdev, const struct sroce_av *av)
{
	unsigned int mtu = READ_ONCE(sdev->ndev->mtu);
	struct net_device *ndev;

	if (av->sgid_attr) {
		rcu_read_lock();
		ndev = rdma_read_gid_attr_ndev_rcu(av->sgid_attr);
		if (!IS_ERR(ndev))
			mtu = min(mtu, READ_ONCE(ndev->mtu));
		rcu_read_unlock();
	}
	return max_t(enum ib_mtu, iboe_get_mtu(mtu), IB_MTU_256);
}

/**
 * sroce_gid_egress - check the net_device a source GID's packets leave through
 * @sdev: the device
 * @attr: a GID of @sdev's port, held by the caller
 * @av: its @vlan_id is set
 *
 * The GID's own net_device, as ib_core's GID table has it: a VLAN device
 * tags the packets (a RoCE adapter sends a VLAN GID's packets tagged, and a
 * peer that checks the arrival device, rdma_rxe or an adapter, takes them
 * only so); the bound net_device sends them untagged. The path keeps the
 * GID (struct sroce_av's sgid_attr), not the device: each packet leaves
 * through the GID's device as it is then, and none once the GID is gone
 * (sroce_route()).
 *
 * Return: 0; -EINVAL for a GID of a device we would not receive on
 * (sroce_ndev_is_ours()); -ENODEV if the GID or its device is gone.
 */
int sroce_gid_egress(struct sroce_dev *sdev, const struct ib_gid_attr *attr,
		     struct sroce_av *av)
{
	struct net_device *ndev;
	int err = 0;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (IS_ERR(ndev))
		err = -ENODEV;
	else if (!sroce_ndev_is_ours(sdev, ndev))
		err = -EINVAL;
	else
		av->vlan_id = rdma_vlan_dev_vlan_id(ndev);
	rcu_read_unlock();
	return err;
}

/**
 * sroce_prio_allowed - may the caller give @sdev's packets this priority?
 * @sdev: the device, whose net_device's namespace they are sent in
 * @prio: the priority (skb->priority)
 *
 * As a socket's SO_PRIORITY (sk_setsockopt()): 0 to 6 (TC_PRIO_INTERACTIVE)
 * for anyone; above, for a holder of CAP_NET_RAW or CAP_NET_ADMIN over the
 * user namespace of the namespace the packets go out in. 7 is
 * TC_PRIO_CONTROL, which qdiscs and VLAN egress maps keep for the
 * network's own control traffic. Process context: the caller's
 * credentials, which for a write() command of ib_uverbs are those the file
 * was opened with (ib_safe_file_access()).
 *
 * Return: true if it may.
 */
bool sroce_prio_allowed(struct sroce_dev *sdev, u32 prio)
{
	struct user_namespace *ns = sdev->sn->net->user_ns;

	return prio <= TC_PRIO_INTERACTIVE || ns_capable(ns, CAP_NET_RAW) ||
	       ns_capable(ns, CAP_NET_ADMIN);
}
