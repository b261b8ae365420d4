// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the invariant CRC of RoCEv2 packets.
 *
 * The ICRC is a CRC-32 (the Ethernet polynomial, as crc32_le) over the IP
 * header, the UDP header and everything after it up to the ICRC, with the
 * fields routers may change replaced by ones: IPv4 TOS, TTL and checksum;
 * IPv6 traffic class, flow label and hop limit; the UDP checksum; and the
 * BTH's reserved byte before the destination QPN. It starts as if it had
 * already covered 8 bytes of ones (the masked LRH of InfiniBand) and is sent
 * inverted, least significant byte first.
 */
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/checksum.h>

#include "sroce_hdr.h"
#include "sroce_loc.h"

/* crc32_le over 8 bytes of 0xff from a seed of 0xffffffff. */
#define SROCE_ICRC_SEED 0xdebb20e3U

/**
 * sroce_icrc - compute a packet's ICRC
 * @skb: the packet, from its IP header (network header set) to the end of
 *       the ICRC, linear
 *
 * Return: the ICRC, as it is to be stored in the packet (little endian).
 */
__le32 sroce_icrc(struct sk_buff *skb)
{
	u8 pshdr[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
		 sizeof(struct sroce_bth)];
	unsigned int iplen, len, rest;
	struct sroce_bth *bth;
	struct udphdr *udph;
	u8 *net = skb_network_header(skb);
	u32 crc;

	if (ip_hdr(skb)->version == 4) {
		struct iphdr *ip4h = (struct iphdr *)pshdr;

		iplen = sizeof(*ip4h);
		memcpy(pshdr, net, iplen + sizeof(*udph) + sizeof(*bth));
		ip4h->tos = 0xff;
		ip4h->ttl = 0xff;
		ip4h->check = CSUM_MANGLED_0;
	} else {
		struct ipv6hdr *ip6h = (struct ipv6hdr *)pshdr;

		iplen = sizeof(*ip6h);
		memcpy(pshdr, net, iplen + sizeof(*udph) + sizeof(*bth));
		ip6h->priority = 0xf;
		memset(ip6h->flow_lbl, 0xff, sizeof(ip6h->flow_lbl));
		ip6h->hop_limit = 0xff;
	}
	udph = (struct udphdr *)(pshdr + iplen);
	udph->check = CSUM_MANGLED_0;
	bth = (struct sroce_bth *)(udph + 1);
	bth->qpn |= cpu_to_be32(~SROCE_QPN_MASK);

	len = iplen + sizeof(*udph) + sizeof(*bth);
	crc = crc32_le(SROCE_ICRC_SEED, pshdr, len);

	/* Then everything after the BTH, up to the ICRC. */
	rest = skb_tail_pointer(skb) - net - len - SROCE_ICRC_LEN;
	crc = crc32_le(crc, net + len, rest);
	return cpu_to_le32(~crc);
}
