#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Attack a victim RC QP (sroce-wire -V on the other VM) with RoCEv2
packets crafted by scapy: bad ICRCs, truncated headers, unknown opcodes,
headers too short for their opcode, QPNs that do not exist, PSNs far
outside the window, a duplicate READ nobody asked before, responses
(ACKs, NAKs, RNR NAKs, READ responses, atomic ACKs) to a QP that sent
nothing, an RDMA WRITE with a valid rkey from an address that is not the
QP's peer, an RDMA WRITE whose RETH length runs past the MR, and a SEND
to the QP in error. Each kind is counted by one counter of the victim's
device, exactly (hostile.sh); random packets are fuzz.py's job. Prints how
many of each it sent, as "sent KIND N".

    hostile.py VICTIM_IP PORT MY_IP
"""
import os
import random
import struct
import sys
import time

from scapy.all import IP, UDP, Raw, conf, send

from fuzz import Wire
from roce import icrc, meet, sync

MY_PSN = 0x123456
FAKE_QPN = 0xabcde
sent = {}


def bth(opcode, qpn, psn, pad=0, tver=0, ackreq=True):
    return struct.pack('>BBHII', opcode, (pad << 4) | tver, 0xffff,
                       qpn & 0xffffff, (ackreq << 31) | (psn & 0xffffff))


def reth(va, rkey, length):
    return struct.pack('>QIi', va, rkey, length)


def aeth(syndrome, msn):
    return struct.pack('>I', (syndrome << 24) | (msn & 0xffffff))


def roce(victim, me, payload, good_icrc=True, with_icrc=True):
    pkt = (IP(src=me, dst=victim, ttl=64, flags='DF') /
           UDP(sport=random.randint(49152, 65535), dport=4791, chksum=0) /
           Raw(payload + (b'\0' * 4 if with_icrc else b'')))
    raw = bytes(pkt)
    if with_icrc:
        crc = icrc(raw)
        if not good_icrc:
            crc = bytes([crc[0] ^ 0x5a]) + crc[1:]
        raw = raw[:-4] + crc
    return IP(raw)


def fire(kind, pkts):
    for p in pkts:
        send(p, verbose=0)
        time.sleep(0.01)
    sent[kind] = sent.get(kind, 0) + len(pkts)


def main():
    victim, port, me = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    conf.verb = 0
    s, qpn, rkey, addr = meet(victim, port, me, FAKE_QPN, MY_PSN)
    sync(s)  # the victim's QP is connected to FAKE_QPN, expecting MY_PSN

    send_only = 0x04
    good = bth(send_only, qpn, MY_PSN) + bytes(64)
    fire('bad_icrc', [roce(victim, me, good, good_icrc=False)
                      for _ in range(20)])
    fire('truncated', [roce(victim, me, (good + bytes(4))[:n],
                            with_icrc=False) for n in range(16)])
    unknown = [0x1e, 0x1f, 0x38, 0x3f, 0x44, 0x5f, 0x7f, 0x9f, 0xbf, 0xc0,
               0xdf, 0xff]
    fire('unknown_opcode', [roce(victim, me, bth(op, qpn, MY_PSN) +
                                 bytes(32)) for op in unknown])
    fire('short_header', [
        roce(victim, me, bth(0x06, qpn, MY_PSN) + bytes(8)),   # RETH cut
        roce(victim, me, bth(0x64, qpn, MY_PSN) + bytes(4)),   # DETH cut
        roce(victim, me, bth(0x11, qpn, MY_PSN) + bytes(2)),   # AETH cut
        roce(victim, me, bth(send_only, qpn, MY_PSN, pad=3)),  # pad > data
        roce(victim, me, bth(send_only, qpn, MY_PSN, tver=1) + bytes(8)),
    ])
    fire('no_qp', [roce(victim, me, bth(send_only, n, MY_PSN) + bytes(8))
                   for n in (0xfffff0, 0x7ff0, 0x123456)])
    fire('psn_ahead', [roce(victim, me, bth(send_only, qpn,
                                            MY_PSN + 0x400000) + bytes(8))])
    fire('psn_behind', [
        roce(victim, me, bth(send_only, qpn, MY_PSN - 0x400000) + bytes(8)),
        roce(victim, me, bth(0x0c, qpn, MY_PSN - 5) +
             reth(addr, rkey, 64)),                       # READ, never asked
        roce(victim, me, bth(0x13, qpn, MY_PSN - 7) +         # CMP_SWAP
             struct.pack('>QIQQ', addr, rkey, 0, 1)),
    ])
    # Responses to a QP that sent nothing: ACKs, every NAK (sequence,
    # invalid request, remote access, remote operational), RNR NAKs, READ
    # responses and atomic ACKs, at PSNs all over. Each is dropped and
    # counted; none completes a WQE that does not exist.
    ghosts = []
    for syn in (0x1f, 0x60, 0x61, 0x62, 0x63, 0x20, 0x3f):
        for psn in (0, MY_PSN, MY_PSN + 1, 0xffffff, 0x800000):
            ghosts.append(roce(victim, me, bth(0x11, qpn, psn) +
                               aeth(syn, 1)))
    for op in (0x0d, 0x0e, 0x0f, 0x10):     # READ response FIRST..ONLY
        ghosts.append(roce(victim, me, bth(op, qpn, MY_PSN) +
                           (aeth(0x1f, 1) if op != 0x0e else b'') +
                           bytes(256)))
    ghosts.append(roce(victim, me, bth(0x12, qpn, MY_PSN) + aeth(0x1f, 1) +
                       struct.pack('>Q', 0x4242)))   # atomic ACK
    fire('ghost_response', ghosts)
    # Packets in the window, from an address that is not the victim's
    # peer: an RDMA WRITE with the victim's real rkey and address. Dropped
    # and counted; not one byte lands.
    spoof = '.'.join(me.split('.')[:3] + ['99'])
    fire('bad_source', [
        roce(victim, spoof, bth(0x0a, qpn, MY_PSN) + reth(addr, rkey, 64) +
             bytes([0x5a] * 64)),
        roce(victim, spoof, bth(send_only, qpn, MY_PSN) + bytes(8)),
        roce(victim, spoof, bth(0x11, qpn, MY_PSN) + aeth(0x62, 1)),
    ])
    # In the window at last: an RDMA WRITE FIRST whose RETH asks for 1 MiB
    # of a 4 KiB MR. A remote access NAK, seen here: the victim took every
    # packet before it (one QP's packets go in order), and its QP is in
    # the error state.
    wire = Wire(victim)
    fire('reth_past_mr', [roce(victim, me, bth(0x06, qpn, MY_PSN) +
                               reth(addr, rkey, 1 << 20) + bytes(1024))])
    limit = 60 * int(os.environ.get('SROCE_TIME_SCALE', '1'))
    ok = wire.wait((0x11, MY_PSN, 0x62), limit)
    if not ok:
        print(f'FAIL hostile: no remote access NAK at PSN {MY_PSN:#x} '
              f'within {limit} s (answers: {sorted(wire.seen)})')
    fire('qp_in_error', [roce(victim, me, bth(send_only, qpn, MY_PSN + 1) +
                              bytes(8))])
    sync(s)
    for k, v in sent.items():
        print(f'sent {k} {v}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
