# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""RoCEv2 packet helpers for the two-VM tests: the invariant CRC, and the
handshake with a victim QP (sroce-wire -V)."""
import socket
import struct
import sys
import time
import zlib

DEST = struct.Struct('<II16sIIQ')  # sroce-wire's Dest


def meet(victim, port, me, qpn, psn):
    """Connect to the victim's sroce-wire at @port, take its Dest and give
    it ours (QP @qpn, first PSN @psn, GID of address @me). Returns the
    socket and the victim's QPN, rkey and MR address."""
    s, vqpn, rkey, addr, _ = meet_gid(victim, port, me, qpn, psn)
    return s, vqpn, rkey, addr


def meet_gid(victim, port, me, qpn, psn):
    """meet(), where @me may be an IPv6 address too, also returning the
    victim's GID (16 bytes: its QP's source address)."""
    for _ in range(600):
        try:
            s = socket.create_connection((victim, port))
            break
        except OSError:
            time.sleep(0.1)
    else:
        sys.exit('could not connect to the victim')
    buf = b''
    while len(buf) < DEST.size:
        got = s.recv(DEST.size - len(buf))
        if not got:
            sys.exit('the victim went away')
        buf += got
    vqpn, _, vgid, rkey, _, addr = DEST.unpack(buf)
    if ':' in me:
        gid = socket.inet_pton(socket.AF_INET6, me)
    else:
        gid = bytes(10) + b'\xff\xff' + socket.inet_aton(me)
    s.sendall(DEST.pack(qpn, psn, gid, 0, 0, 0))
    return s, vqpn, rkey, addr, vgid


def sync(s):
    """A step with the victim: both sides are at the same point."""
    s.sendall(b's')
    if s.recv(1) != b's':
        sys.exit('the victim went away')


def _masked(ip):
    """The bytes the ICRC covers: 8 bytes of ones standing for the LRH,
    then the IP header, UDP header, BTH and payload with their variant
    fields set to ones (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow
    label, hop limit; UDP checksum; the BTH's reserved byte 4)."""
    b = bytearray(ip)
    if b[0] >> 4 == 4:
        ihl = (b[0] & 0xf) * 4
        b[1] = 0xff
        b[8] = 0xff
        b[10:12] = b'\xff\xff'
    else:
        ihl = 40
        b[0] |= 0x0f
        b[1:4] = b'\xff\xff\xff'
        b[7] = 0xff
    b[ihl + 6:ihl + 8] = b'\xff\xff'
    b[ihl + 8 + 4] = 0xff
    return b'\xff' * 8 + bytes(b[:-4])


def icrc(ip):
    """The ICRC of a RoCEv2 packet, given from its IP header on (its last
    4 bytes, the ICRC itself, are not covered)."""
    return struct.pack('<I', zlib.crc32(_masked(ip)) & 0xffffffff)


def icrc_ok(ip):
    return len(ip) >= 4 and icrc(ip) == bytes(ip[-4:])


def with_icrc(ip_without_icrc):
    """IP packet bytes (lengths already counting 4 ICRC bytes, which are
    missing) completed with the correct ICRC."""
    return ip_without_icrc + icrc(ip_without_icrc + b'\0' * 4)
