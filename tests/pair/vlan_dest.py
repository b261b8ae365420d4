#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""RoCEv2 packets on the wrong VLAN (vlan.sh): RDMA WRITEs with a victim
QP's real rkey and address, each a well-formed packet with a correct
ICRC, sent as Ethernet frames from a packet socket so that the 802.1Q tag
is what is chosen here. The victim (sroce-wire -V on the other VM) has its
QP on its VLAN 100 GID, connected to our VLAN 100 address. Sent N of each:

  untagged_to_vlan_gid   untagged, to the victim's VLAN 100 address
  vid200_to_vlan_gid     tagged VID 200, to the victim's VLAN 100 address
  vid100_to_base_gid     tagged VID 100, to the victim's untagged address
      each arrives on a device that is not its destination GID's:
      drop_bad_dest, before any QP is looked up;
  base_gid_to_vlan_qp    untagged, to the victim's untagged address, from
      the QP's peer address: the destination check passes (a GID of the
      device it arrived on), the QP's does not (not its GID):
      drop_bad_source;
  vid300_same_addr       tagged VID 300, to the victim's VLAN 100 address,
      which the victim's eth0.300 has too (as an IPv6 link-local address
      is on eth0 and every VLAN on it), from the QP's peer address: the
      destination check passes (a GID of eth0.300), the QP's does not (not
      its GID's device): drop_bad_source;
  vid100_no_qp           tagged VID 100, to the victim's VLAN 100 address
      but a QPN nobody has: the destination check passes, drop_no_qp
      (so tagged frames from here do reach sroce).

Not one byte may land (the victim checks its memory). Prints "sent KIND N".

With --link-local the victim's QP is on its IPv6 link-local address as a
GID of its eth0.100, connected to ours (MY_LL), and we meet it over
IPv4 (VICTIM_TCP4). The victim's eth0, eth0.100 and eth0.200 share a MAC,
so the same EUI-64 link-local address, and ib_core makes a GID of it on
each: every packet below passes the destination check. Sent N of each,
from MY_LL to the victim's address (the GID it gave us):

  ll_untagged            untagged: on eth0, not the QP's GID's device:
      drop_bad_source;
  ll_vid200              tagged VID 200: on eth0.200: drop_bad_source;
  ll_vid100_no_qp        tagged VID 100 but a QPN nobody has: drop_no_qp
      (the control: such packets reach sroce).

    vlan_dest.py IFACE PEER_MAC VICTIM_BASE4 VICTIM_VLAN4 MY_BASE4 \\
        MY_VLAN4 MY_VID200_4 PORT [N]
    vlan_dest.py --link-local IFACE PEER_MAC VICTIM_TCP4 MY_LL PORT [N]
"""
import socket
import struct
import sys
import time

from roce import meet, meet_gid, sync, with_icrc

MY_PSN = 0x2468ac
FAKE_QPN = 0xbcdef
NO_QPN = 0x7ff0
WRITE_ONLY = 0x0a


def csum(b):
    s = sum(struct.unpack(f'!{len(b) // 2}H', b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def ip4(src, dst, payload, ident):
    """IPv4 + UDP 4791 + @payload + a correct ICRC, as bytes."""
    ulen = 8 + len(payload) + 4
    hdr = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + ulen, ident, 0x4000,
                      64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    hdr = hdr[:10] + struct.pack('!H', csum(hdr)) + hdr[12:]
    udp = struct.pack('!HHHH', 0xc000 | (ident & 0x3fff), 4791, ulen, 0)
    return with_icrc(hdr + udp + payload)


def ip6(src, dst, payload, ident):
    """IPv6 + UDP 4791 (checksum 0, as RoCEv2 sends it) + @payload + a
    correct ICRC, as bytes; @src and @dst 16 bytes each."""
    ulen = 8 + len(payload) + 4
    hdr = struct.pack('!IHBB16s16s', 6 << 28, ulen, 17, 255, src, dst)
    udp = struct.pack('!HHHH', 0xc000 | (ident & 0x3fff), 4791, ulen, 0)
    return with_icrc(hdr + udp + payload)


def write_only(qpn, psn, addr, rkey, n):
    bth = struct.pack('>BBHII', WRITE_ONLY, 0, 0xffff, qpn & 0xffffff,
                      (1 << 31) | (psn & 0xffffff))
    reth = struct.pack('>QII', addr, rkey, n)
    return bth + reth + bytes([0x5a] * n)


def frame(dst_mac, src_mac, vid, ip):
    eth = dst_mac + src_mac
    if vid is not None:
        eth += struct.pack('!HH', 0x8100, vid & 0xfff)
    etype = 0x0800 if ip[0] >> 4 == 4 else 0x86dd
    return eth + struct.pack('!H', etype) + ip


def link_local(args):
    """--link-local: see the module's description."""
    iface, peer_mac, v_tcp, my_ll, port = args[:5]
    n = int(args[5]) if len(args) > 5 else 5
    dst = bytes.fromhex(peer_mac.replace(':', ''))
    with open(f'/sys/class/net/{iface}/address') as f:
        src = bytes.fromhex(f.read().strip().replace(':', ''))
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((iface, 0))

    s, qpn, rkey, addr, v_ll = meet_gid(v_tcp, int(port), my_ll, FAKE_QPN,
                                        MY_PSN)
    if v_ll[:8] != bytes.fromhex('fe80000000000000'):
        sys.exit(f'the victim is not on a link-local GID: {v_ll.hex()}')
    me = socket.inet_pton(socket.AF_INET6, my_ll)
    sync(s)
    kinds = (
        ('ll_untagged', None, qpn),
        ('ll_vid200', 200, qpn),
        ('ll_vid100_no_qp', 100, NO_QPN),
    )
    ident = 1
    for kind, vid, to in kinds:
        for _ in range(n):
            pkt = write_only(to, MY_PSN, addr, rkey, 64)
            tx.send(frame(dst, src, vid, ip6(me, v_ll, pkt, ident)))
            ident += 1
            time.sleep(0.01)
        print(f'sent {kind} {n}')
    sync(s)
    return 0


def main():
    if sys.argv[1] == '--link-local':
        return link_local(sys.argv[2:])
    (iface, peer_mac, v_base, v_vlan, my_base, my_vlan, my_200,
     port) = sys.argv[1:9]
    n = int(sys.argv[9]) if len(sys.argv) > 9 else 5
    dst = bytes.fromhex(peer_mac.replace(':', ''))
    with open(f'/sys/class/net/{iface}/address') as f:
        src = bytes.fromhex(f.read().strip().replace(':', ''))
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((iface, 0))

    # The victim's QP: sgid its VLAN 100 address, dgid ours on VLAN 100.
    s, qpn, rkey, addr = meet(v_vlan, int(port), my_vlan, FAKE_QPN, MY_PSN)
    sync(s)
    kinds = (
        ('untagged_to_vlan_gid', None, my_base, v_vlan, qpn),
        ('vid200_to_vlan_gid', 200, my_200, v_vlan, qpn),
        ('vid100_to_base_gid', 100, my_vlan, v_base, qpn),
        ('base_gid_to_vlan_qp', None, my_vlan, v_base, qpn),
        ('vid300_same_addr', 300, my_vlan, v_vlan, qpn),
        ('vid100_no_qp', 100, my_vlan, v_vlan, NO_QPN),
    )
    ident = 1
    for kind, vid, ip_src, ip_dst, to in kinds:
        for _ in range(n):
            pkt = write_only(to, MY_PSN, addr, rkey, 64)
            tx.send(frame(dst, src, vid, ip4(ip_src, ip_dst, pkt, ident)))
            ident += 1
            time.sleep(0.01)
        print(f'sent {kind} {n}')
    sync(s)
    return 0


if __name__ == '__main__':
    sys.exit(main())
