#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A generator of mutated RoCEv2 packets (over 10^5 by default), sent at a
victim RC QP (sroce-wire -V on the other VM), at QP1 and at QPNs nobody
has: every opcode byte, headers cut short for each opcode, pad counts,
TVer, PSNs in the window, behind it, far ahead and wrapped, RETHs (the
victim's rkey with bits flipped, its real rkey with the address outside
the MR, lengths past the MR, overflowing 64 bits, 0, "negative"), every
AETH syndrome, atomic headers (unaligned, outside the MR, bad rkeys),
payloads up to past the MTU, bad ICRCs, spoofed sources, IP options, and
UDP trailers. Packets are built here, IPv4 header to ICRC, and sent from
a raw socket, so that every field the ICRC covers is what was computed.

Deterministic: the same seed and scale give the same packets, and the
same expected counts, whatever the victim's QPN, rkey and address are.
Each packet is tagged with the one counter of the victim's device that
must count it (or "accepted", for the few zero-length READs the run needs
as barriers).
Never a request that could write: whatever carries the victim's real
rkey with a range inside its MR is also a duplicate, out of sequence,
from a spoofed source, on a transport the QP is not, to another QP, sent
when the QP is in error, of length 0 with immediate data (an RNR NAK: no
receive is posted), or packetized wrong (the one request that breaks the
connection). --selftest checks that with a model of the kernel.

The run, against a victim in RTS whose expected PSN is EPSN0:
  1. a zero-length READ in the window (accepted: the responder now has a
     READ to answer again, and duplicate READs of its PSN re-check their
     RETH without breaking the connection);
  2. every category interleaved (seeded), with a zero-length READ as a
     barrier every BARRIER packets: its READ response, seen on a raw UDP
     socket, says the victim took everything before it, and the sender
     waits for barrier k-1 when it sends barrier k (the victim's receive
     queue stays short);
  3. one invalid request in the window (chosen by the seed among a list),
     whose NAK moves the victim's QP to the error state; waits for it;
  4. packets to the QP in error, in small paced bursts;
  5. a pause, then the final sync: the victim checks its memory.

    fuzz.py VICTIM_IP PORT MY_IP [--seed N] [--scale X]   attack
    fuzz.py --plan [--seed N] [--scale X]   print what the victim's counters
                                            must show, sending nothing
    fuzz.py --selftest [--seed N] [--scale X]   check the packets offline
                                                (no root, no network)
"""
import argparse
import collections
import errno
import random
import select
import socket
import struct
import sys
import time
import zlib

IP_RECVERR = getattr(socket, 'IP_RECVERR', 11)  # <linux/in.h>
FAKE_QPN = 0xabcde
EPSN0 = 0xfffff4     # the victim's expected PSN: it wraps during the run
GSI_QKEY = 0x80010000
MR_LEN = 4096 + 8 + 8  # sroce-wire -V -n 1 -s 4096: slot, word, result
MTU = 1024           # the victim's path MTU (1500-byte Ethernet)
IP_MTU = 1500
# Packets between barriers: the sender waits for barrier k-1 when it sends
# barrier k, so at most 2 * BARRIER are on their way, about 60% of them to
# the victim QP: well under its receive queue's bound (SROCE_RX_QUEUE_MAX,
# 4096; past it packets are dropped as drop_rx_queue_full). And 1 + 10^5 /
# BARRIER READs stay within the 128 the responder remembers.
BARRIER = 2000
MAX_MSG = 0x80000000

# The opcode table of kernel/sroce_hdr.c.
(F_REQ, F_FIRST, F_LAST, F_PAYLOAD, F_SEND, F_WRITE, F_READ, F_ATOMIC, F_IMM,
 F_INV, F_RETH, F_AETH, F_DETH, F_ATMETH, F_ATMACK, F_XRCETH,
 F_ATOMIC_WRITE) = (1 << i for i in range(1, 18))
F_ONLY = F_FIRST | F_LAST
O_SEND = F_REQ | F_PAYLOAD | F_SEND
O_WRITE = F_REQ | F_PAYLOAD | F_WRITE
O_RRESP = F_PAYLOAD | F_READ
RC_OPS = {
    0x00: O_SEND | F_FIRST, 0x01: O_SEND, 0x02: O_SEND | F_LAST,
    0x03: O_SEND | F_LAST | F_IMM, 0x04: O_SEND | F_ONLY,
    0x05: O_SEND | F_ONLY | F_IMM,
    0x06: O_WRITE | F_FIRST | F_RETH, 0x07: O_WRITE, 0x08: O_WRITE | F_LAST,
    0x09: O_WRITE | F_LAST | F_IMM, 0x0a: O_WRITE | F_ONLY | F_RETH,
    0x0b: O_WRITE | F_ONLY | F_RETH | F_IMM,
    0x0c: F_REQ | F_ONLY | F_READ | F_RETH,
    0x0d: O_RRESP | F_FIRST | F_AETH, 0x0e: O_RRESP,
    0x0f: O_RRESP | F_LAST | F_AETH, 0x10: O_RRESP | F_ONLY | F_AETH,
    0x11: F_ONLY | F_AETH,
    0x12: F_ONLY | F_ATOMIC | F_AETH | F_ATMACK,
    0x13: F_REQ | F_ONLY | F_ATOMIC | F_ATMETH,
    0x14: F_REQ | F_ONLY | F_ATOMIC | F_ATMETH,
    0x16: O_SEND | F_LAST | F_INV, 0x17: O_SEND | F_ONLY | F_INV,
    0x1d: O_WRITE | F_ONLY | F_RETH | F_ATOMIC_WRITE,
}
FLAGS = [0] * 256
for _op, _f in RC_OPS.items():
    FLAGS[_op] = _f
    FLAGS[0xa0 | _op] = _f | (F_XRCETH if _f & F_REQ else 0)
    if _op <= 0x0b:
        FLAGS[0x20 | _op] = _f
FLAGS[0x64] = O_SEND | F_ONLY | F_DETH
FLAGS[0x65] = O_SEND | F_ONLY | F_DETH | F_IMM
EXT = ((F_XRCETH, 4), (F_DETH, 8), (F_RETH, 16), (F_ATMETH, 28),
       (F_AETH, 4), (F_ATMACK, 8), (F_IMM, 4), (F_INV, 4))
HDR = [12 + sum(n for f, n in EXT if FLAGS[op] & f) for op in range(256)]
VALID = [op for op in range(256) if FLAGS[op]]
INVALID = [op for op in range(256) if not FLAGS[op]]
RC_REQ = [op for op in RC_OPS if FLAGS[op] & F_REQ]
RC_RESP = [op for op in RC_OPS if not FLAGS[op] & F_REQ]
OTHER_TRANSPORT = [op for op in VALID if op & 0xe0]
UD_OPS = (0x64, 0x65)
NOT_UD = [op for op in VALID if op not in UD_OPS]
CNP = 0x81

# Counters of the victim's device (kernel/sroce_counters.c) a packet may
# count in. "door" is any of those sroce_rcv() counts before a QP is found.
DOOR = ('drop_malformed', 'drop_icrc_err', 'drop_no_qp')
DISPOSITION = ('drop_icrc_err', 'drop_malformed', 'drop_no_qp',
               'drop_qp_state', 'drop_bad_source', 'drop_ghost_response',
               'drop_uc_message', 'drop_bad_qkey', 'duplicate_request', 'out_of_sequence',
               'rnr_nak_sent', 'nak_inv_req_sent', 'nak_rem_access_sent',
               'nak_rem_op_sent')

_IP = struct.Struct('!BBHHHBBH4s4s')
_UDP = struct.Struct('!HHHH')
_BTH = struct.Struct('!BBHII')
_ICRC = struct.Struct('<I')
_CRC_ONES = zlib.crc32(b'\xff' * 8)
_U32 = struct.Struct('!I')
_U64 = struct.Struct('!Q')
_RETH = struct.Struct('!QII')
_ATM = struct.Struct('!QIQQ')
_DETH = struct.Struct('!II')


def psn_before(a, b):
    return ((a - b) & 0x800000) != 0


class Gen:
    """The packets of one run, each tagged with the counter that must count
    it. @qpn, @rkey, @addr: the victim's; @me, @victim: IPv4 addresses."""

    def __init__(self, seed, scale, victim, me, qpn, rkey, addr):
        self.rnd = random.Random(seed)
        self.random = self.rnd.random
        self.seed, self.scale = seed, scale
        # drawn first: the plan knows it whatever the victim's numbers
        self.kill_k = self.r(len(self.KILLS))
        self.dst = socket.inet_aton(victim)
        self.me = socket.inet_aton(me)
        net = me.split('.')[:3]
        # Spoofed sources on the link's /24: neither VM, no network or
        # broadcast address (martians the IP layer would drop first).
        mine = {victim.split('.')[3], me.split('.')[3]}
        self.spoofed = [socket.inet_aton('.'.join(net + [str(h)]))
                        for h in range(3, 255) if str(h) not in mine]
        self.qpn, self.rkey, self.addr = qpn, rkey, addr
        self.epsn = EPSN0
        self.res = []          # PSNs of READs the victim took
        self.ipid = self.rnd.randrange(1, 0x10000)
        self.items = []        # (tag, category, packet) and markers
        self.sent = collections.Counter()
        self.tags = collections.Counter()
        self.cattag = {}
        # non-zero bytes: a payload that landed shows in the victim's MR
        self.pool = bytes(b or 0x5a for b in self.rnd.randbytes(1 << 16))
        self.kill = None
        # The victim has NAKed since the last packet at its ePSN that it
        # took (an RNR NAK, a sequence NAK): a packet ahead then gets no
        # sequence NAK (kernel/sroce_resp.c, resp.nak_sent).
        self.naked = False
        self.seq_naks = 0      # packets ahead that do get one

    # --- field menus -------------------------------------------------
    def r(self, n):
        """0 <= r < n (random.random() is C: faster than randrange)"""
        return int(self.random() * n)

    def pick(self, seq):
        return seq[int(self.random() * len(seq))]

    def payload(self, n):
        o = self.r(len(self.pool) - n)
        return self.pool[o:o + n]

    def rkey_any(self):
        k = self.r(10)
        if k < 3:
            return self.rkey
        if k < 6:
            return self.rkey ^ (1 << self.r(32))
        return self.pick((0, 0xffffffff, self.rnd.getrandbits(32),
                          (self.rkey + 0x100) & 0xffffffff,
                          self.rkey & ~0xff, self.rkey | 0xff))

    def rkey_bad(self):
        k = self.r(4)
        if k < 3:
            return self.rkey ^ (1 << self.r(32))
        while True:
            v = self.pick((0, 0xffffffff, self.rnd.getrandbits(32),
                           (self.rkey + 0x100) & 0xffffffff,
                           (self.rkey - 0x100) & 0xffffffff))
            if v != self.rkey:
                return v

    def va_any(self):
        a, m = self.addr, MR_LEN
        k = self.r(16)
        if k < 4:
            return a + 8 * self.r(m // 8)
        return self.pick((
            a, a + m, a + m - 8, a - 8, a - 1, a - 4096, a + 4096 * 1024,
            0, 8, (1 << 64) - 8, (1 << 64) - 1, (1 << 63) ^ a,
            (a + (1 << 32)) & ((1 << 64) - 1), self.rnd.getrandbits(64)))

    def len_any(self):
        return self.pick((
            0, 1, 8, 64, MTU, 4096, MR_LEN, MR_LEN + 1, 0x7fffffff, MAX_MSG,
            MAX_MSG + 1, 0xfffffff8, 0xffffffff, self.rnd.getrandbits(32),
            self.r(8192)))

    def reth_ok(self, va, rkey, length):
        """Would the victim's responder take this RETH (key and range)?"""
        if length > MAX_MSG:
            return False
        if not length:
            return True
        return (rkey == self.rkey and va >= self.addr and
                va + length <= self.addr + MR_LEN)

    def reth_inside(self, n):
        """The victim's real rkey and @n bytes inside its MR."""
        n = max(n, 1)
        va = self.addr + self.r(MR_LEN - n + 1) if n <= MR_LEN else self.addr
        return va, self.rkey, n

    def reth_bad(self):
        """A RETH the victim must refuse: no valid key, or not wholly in
        the MR, or too long. Never length 0 (which checks nothing)."""
        while True:
            k = self.r(8)
            if k == 0:     # the real key, overflowing 64 bits
                va = (1 << 64) - self.pick((1, 8, 64, 4096))
                ln = self.pick((64, 4096, 0x7fffffff, MAX_MSG))
                rkey = self.rkey
            elif k == 1:   # the real key, just past either end
                ln = self.pick((1, 8, 64, MTU))
                va = self.pick((self.addr + MR_LEN - ln + 1,
                                self.addr - 1, self.addr - ln,
                                self.addr + MR_LEN))
                rkey = self.rkey
            elif k == 2:   # the real key, "negative" or huge lengths
                va = self.addr
                ln = self.pick((MR_LEN + 1, MAX_MSG, MAX_MSG + 1,
                                0xfffffff8, 0xffffffff))
                rkey = self.rkey
            elif k < 6:    # a flipped or wrong key, a range inside the MR
                va, _, ln = self.reth_inside(self.pick((1, 8, 64, MTU)))
                rkey = self.rkey_bad()
            else:          # anything
                va, rkey, ln = self.va_any(), self.rkey_any(), self.len_any()
            va &= (1 << 64) - 1
            if ln and not self.reth_ok(va, rkey, ln):
                return va, rkey, ln

    def reth_any(self, paylen):
        """Anything, the valid write of this payload included."""
        if self.r(3) == 0:
            return self.reth_inside(paylen or 8)
        if self.r(2):
            return self.reth_bad()
        return self.va_any(), self.rkey_any(), self.len_any()

    def atm_any(self):
        k = self.r(6)
        if k < 2:       # the real key, aligned, inside: would execute
            va = self.addr + 8 * self.r(MR_LEN // 8)
            rkey = self.rkey
        elif k == 2:    # unaligned
            va = self.addr + 8 * self.r(MR_LEN // 8) + 1 + self.r(7)
            rkey = self.rkey
        else:
            va, rkey = self.va_any(), self.rkey_any()
        # compare 0 matches the victim's zeroed memory: an executed
        # compare-and-swap or fetch-and-add changes it
        return (va & ((1 << 64) - 1), rkey, self.rnd.getrandbits(64) | 1,
                self.pick((0, 0, self.rnd.getrandbits(64))))

    def psn_ahead(self):
        return (self.epsn + self.pick((
            1, 2, 3, 16, 0x100, 0x7fffff, 0x7ffffe, 0x400000,
            1 + self.r(0x7fffff)))) & 0xffffff

    def psn_behind(self):
        while True:
            psn = (self.epsn - self.pick((
                1, 2, 3, 16, 128, 129, 0x800000, 0x7fffff, 0x400000,
                1 + self.r(0x800000)))) & 0xffffff
            if psn not in self.res:
                return psn

    def psn_any(self):
        k = self.r(4)
        if k < 2:
            return self.epsn
        return self.psn_ahead() if k == 2 else self.psn_behind()

    def data_len(self, op, big=True):
        room = IP_MTU - 28 - HDR[op] - 4 - 3
        if not big or self.r(4):
            n = self.pick((0, 0, 1, 3, 4, 8, 16, 63, 64, 256))
        else:
            n = self.pick((MTU - 1, MTU, MTU + 1, MTU + 4, 1400,
                           self.r(room + 1)))
        return min(n, room)

    # --- packets -------------------------------------------------------
    def bth(self, op, qpn, psn, pad=0, tver=0, ackreq=None, se=None,
            resv=None):
        if ackreq is None:
            ackreq = self.r(2)
        if se is None:
            se = self.r(4) == 0
        if resv is None:
            resv = 0 if self.r(4) else self.rnd.getrandbits(8)
        return _BTH.pack(op, (se << 7) | (pad << 4) | tver, 0xffff,
                         (resv << 24) | (qpn & 0xffffff),
                         (ackreq << 31) | (psn & 0xffffff))

    def ext(self, op, paylen=0, reth=None, atm=None, aeth=None, qkey=None):
        f = FLAGS[op]
        out = []
        if f & F_XRCETH:
            out.append(_U32.pack(self.rnd.getrandbits(24)))
        if f & F_DETH:
            if qkey is None:
                qkey = self.rnd.getrandbits(32)
            out.append(_DETH.pack(qkey, self.rnd.getrandbits(24)))
        if f & F_RETH:
            out.append(_RETH.pack(*(reth or self.reth_any(paylen))))
        if f & F_ATMETH:
            out.append(_ATM.pack(*(atm or self.atm_any())))
        if f & F_AETH:
            if aeth is None:
                aeth = (self.r(256) << 24) | self.rnd.getrandbits(24)
            out.append(_U32.pack(aeth))
        if f & F_ATMACK:
            out.append(_U64.pack(self.rnd.getrandbits(64)))
        if f & F_IMM:
            out.append(_U32.pack(self.rnd.getrandbits(32)))
        if f & F_INV:
            out.append(_U32.pack(self.rkey_any()))
        return b''.join(out)

    def body(self, op, qpn, psn, paylen=None, pad=None, **kw):
        """BTH, the opcode's headers, payload and pad: a well-formed packet
        but for what the caller chose."""
        if paylen is None:
            paylen = self.data_len(op) if FLAGS[op] & F_PAYLOAD else 0
        if pad is None:
            pad = (4 - paylen) & 3 if self.r(4) else self.r(4)
        return (self.bth(op, qpn, psn, pad=pad) + self.ext(op, paylen, **kw) +
                self.payload(paylen) + bytes(pad))

    def packet(self, body, src=None, icrc='good', options=b'', trailer=b''):
        """IPv4 + UDP + @body + ICRC. @icrc: 'good', None (none appended),
        or a function of the good ICRC giving the one to send."""
        src = src or self.me
        self.ipid = self.ipid % 0xffff + 1
        ihl = 5 + len(options) // 4
        ulen = 8 + len(body) + (0 if icrc is None else 4)
        tot = ihl * 4 + ulen + len(trailer)
        sport = 0xc000 | (self.ipid & 0x3fff)
        ip = _IP.pack(0x40 | ihl, 0, tot, self.ipid, 0x4000, 64, 17, 0, src,
                      self.dst) + options
        udp = _UDP.pack(sport, 4791, ulen, 0)
        if icrc is None:
            return ip + udp + body + trailer
        mip = _IP.pack(0x40 | ihl, 0xff, tot, self.ipid, 0x4000, 0xff, 17,
                       0xffff, src, self.dst) + options
        mudp = _UDP.pack(sport, 4791, ulen, 0xffff)
        crc = zlib.crc32(mip, _CRC_ONES)
        crc = zlib.crc32(mudp, crc)
        crc = zlib.crc32(body[:4] + b'\xff' + body[5:], crc) & 0xffffffff
        if icrc != 'good':
            bad = icrc(crc, mip, mudp, ip, udp, body) & 0xffffffff
            assert bad != crc
            crc = bad
        return ip + udp + body + _ICRC.pack(crc) + trailer

    def add(self, tag, cat, pkt):
        self.items.append((tag, cat, pkt))
        self.cattag[cat] = tag
        self.sent[cat] += 1
        self.tags[tag] += 1

    def count(self, n):
        return max(1, int(round(n * self.scale)))

    # --- categories (each call makes packet i of its kind) -------------
    def c_bad_opcode(self, i):
        """Every opcode byte sroce does not know, to the victim and others."""
        op = INVALID[i % len(INVALID)]
        qpn = (self.qpn, self.qpn, 1, 0, self.rand_qpn(),
               0xffffff)[(i // len(INVALID)) % 6]
        n = self.pick((0, 4, 12, 16, 28, 64, MTU, 1400))
        self.add('drop_malformed', 'bad_opcode',
                 self.packet(self.bth(op, qpn, self.psn_any(),
                                      pad=self.r(4)) + self.payload(n)))

    def c_cnp(self, i):
        """RoCEv2 CNPs (opcode 0x81, 16 reserved bytes): not an opcode of
        sroce's table."""
        qpn = self.qpn if i % 2 else self.rand_qpn()
        self.add('drop_malformed', 'cnp',
                 self.packet(_BTH.pack(CNP, 0, 0xffff, qpn, 0) + bytes(16)))

    def truncated_cases(self):
        if hasattr(self, '_truncated'):
            return self._truncated
        self._truncated = cases = []
        for op in VALID:
            h = HDR[op]
            cases += [(op, cut, None) for cut in range(h + 4)]
            cases += [(op, cut, 'good') for cut in range(h)]
        return cases

    def c_truncated(self, i):
        """Each opcode's headers cut at every length, with and without an
        ICRC after the cut."""
        cases = self.truncated_cases()
        op, cut, icrc = cases[i % len(cases)]
        qpn = (self.qpn, 1, self.rand_qpn())[(i // len(cases)) % 3]
        full = self.body(op, qpn, self.psn_any(), paylen=64, pad=0)
        self.add('drop_malformed', 'truncated',
                 self.packet(full[:cut], icrc=icrc))

    def c_bad_pad(self, i):
        """A pad count larger than the payload."""
        op = VALID[i % len(VALID)]
        pad = 1 + self.r(3)
        n = self.r(pad)
        qpn = self.qpn if i % 2 else self.rand_qpn()
        body = (self.bth(op, qpn, self.psn_any(), pad=pad) + self.ext(op) +
                self.payload(n))
        self.add('drop_malformed', 'bad_pad', self.packet(body))

    def c_bad_tver(self, i):
        op = VALID[i % len(VALID)]
        tver = 1 + (i // len(VALID)) % 15
        qpn = self.qpn if self.r(3) else 1
        body = bytearray(self.body(op, qpn, self.psn_any()))
        body[1] |= tver
        # a bad ICRC too, now and then: the header is looked at first
        icrc = 'good' if self.r(4) else (lambda c, *a: c ^ 1)
        self.add('drop_malformed', 'bad_tver',
                 self.packet(bytes(body), icrc=icrc))

    def c_mcast_bad_opcode(self, i):
        """The multicast QPN with an opcode that is not a UD SEND."""
        op = NOT_UD[i % len(NOT_UD)]
        self.add('drop_malformed', 'mcast_bad_opcode',
                 self.packet(self.body(op, 0xffffff, self.psn_any())))

    BAD_ICRC = (
        [lambda c, *a, b=b: c ^ (1 << b) for b in range(32)] +
        [lambda c, *a: 0, lambda c, *a: ~c,
         lambda c, *a: c ^ 0xffffffff ^ 1,
         # computed without masking the variant fields
         lambda c, m, mu, ip, udp, body: zlib.crc32(
             ip + udp + body, _CRC_ONES) ^ (0 if zlib.crc32(
                 ip + udp + body, _CRC_ONES) != c else 1),
         # without the 8 bytes of ones for the LRH
         lambda c, m, mu, ip, udp, body: zlib.crc32(
             m + mu + body[:4] + b'\xff' + body[5:]),
         # with the BTH's reserved byte not masked
         lambda c, m, mu, ip, udp, body: zlib.crc32(
             body, zlib.crc32(mu, zlib.crc32(m, _CRC_ONES))) ^
         (0 if body[4] != 0xff else 1),
         # byte-swapped
         lambda c, *a: struct.unpack('>I', struct.pack('<I', c))[0] ^
         (0 if c != struct.unpack('>I', struct.pack('<I', c))[0] else 1)])

    def c_bad_icrc(self, i):
        op = VALID[i % len(VALID)]
        how = self.BAD_ICRC[(i // len(VALID)) % len(self.BAD_ICRC)]
        qpn = self.pick((self.qpn, self.qpn, 1, self.rand_qpn(),
                         0xffffff))
        self.add('drop_icrc_err', 'bad_icrc',
                 self.packet(self.body(op, qpn, self.psn_any()), icrc=how))

    def c_icrc_after_change(self, i):
        """A good ICRC, then a byte of the covered part changed."""
        op = VALID[i % len(VALID)]
        qpn = self.pick((self.qpn, 1, self.rand_qpn()))
        pkt = bytearray(self.packet(self.body(op, qpn, self.psn_any())))
        # a covered byte: the IP ID, the UDP source port, the BTH's P_Key
        # and PSN, or anything after the BTH (not the addresses, which the
        # IP layer looks at, nor the UDP length, which UDP does; not the
        # opcode, pad or TVer, which sroce looks at first, nor the QPN,
        # which would make another packet)
        choices = [4, 5, 20, 21, 30, 31, 36, 37, 38, 39]
        choices += range(28 + 12, len(pkt) - 4)
        at = self.pick(choices)
        pkt[at] ^= 1 << self.r(8)
        self.add('drop_icrc_err', 'icrc_after_change', bytes(pkt))

    def rand_qpn(self):
        while True:
            q = self.pick((0, 2, 3, 15, 16, 17, 0xfffffe, 0x7fffff,
                           self.qpn ^ 1, self.qpn ^ 0x800000,
                           self.rnd.getrandbits(24),
                           self.rnd.getrandbits(24)))
            if q not in (1, self.qpn, 0xffffff):
                return q

    def c_no_qp(self, i):
        op = VALID[i % len(VALID)]
        self.add('drop_no_qp', 'no_qp',
                 self.packet(self.body(op, self.rand_qpn(), self.psn_any())))

    def c_ip_options(self, i):
        """IPv4 options (NOPs, then EOL), the ICRC computed over the whole
        header as the annex says, to a QPN nobody has: counted at the door
        (a wrong ICRC, or no QP), whatever sroce makes of the options."""
        from roce import with_icrc
        words = 1 + i % 10
        options = b'\x01' * (4 * words - 1) + b'\x00'
        op = VALID[i % len(VALID)]
        body = self.body(op, self.rand_qpn(), self.psn_any(), paylen=8, pad=0)
        pkt = bytearray(self.packet(body, icrc=None, options=options))
        ihl = 20 + 4 * words
        pkt[2:4] = struct.pack('!H', len(pkt) + 4)
        pkt[ihl + 4:ihl + 6] = struct.pack('!H', len(pkt) + 4 - ihl)
        self.add('door', 'ip_options', with_icrc(bytes(pkt)))

    def c_udp_trailer(self, i):
        """Bytes after the UDP datagram (the IP length longer than UDP's):
        UDP trims them; the ICRC is the datagram's. A duplicate SEND, which
        the victim counts as such (not as a bad ICRC)."""
        op = self.pick((0x04, 0x00, 0x0a))
        trailer = self.payload(1 + self.r(64))
        self.add('duplicate_request', 'udp_trailer',
                 self.packet(self.body(op, self.qpn, self.psn_behind(),
                                       paylen=self.r(256)),
                             trailer=trailer))

    def c_mcast_no_group(self, i):
        """UD SENDs to the multicast QPN at the victim's unicast address:
        no group: dropped as packets to no QP."""
        op = UD_OPS[i % 2]
        self.add('drop_no_qp', 'mcast_no_group',
                 self.packet(self.body(op, 0xffffff, self.psn_any())))

    def c_bad_source(self, i):
        """Every opcode, in the window, from addresses that are not the
        victim's peer: valid WRITEs and atomics with the real rkey too."""
        op = VALID[i % len(VALID)]
        src = self.pick(self.spoofed)
        paylen = self.data_len(op) if FLAGS[op] & F_PAYLOAD else 0
        kw = {}
        if FLAGS[op] & F_RETH:
            kw['reth'] = self.reth_inside(paylen or 8)
        if FLAGS[op] & F_ATMETH:
            kw['atm'] = (self.addr, self.rkey, 1, 0)
        psn = self.epsn if self.r(4) else self.psn_any()
        self.add('drop_bad_source', 'bad_source',
                 self.packet(self.body(op, self.qpn, psn, paylen=paylen,
                                       pad=(4 - paylen) & 3, **kw), src=src))

    def c_transport(self, i):
        """UC, UD and XRC opcodes to the RC victim, mostly in the window."""
        op = OTHER_TRANSPORT[i % len(OTHER_TRANSPORT)]
        paylen = self.data_len(op) if FLAGS[op] & F_PAYLOAD else 0
        self.add('drop_qp_state', 'transport',
                 self.packet(self.body(op, self.qpn, self.psn_any(),
                                       paylen=paylen)))

    def c_ghost(self, i):
        """Responses to a QP that sent nothing: every AETH syndrome, MSNs,
        PSNs all over, READ response payloads of every size."""
        ops = (0x0d, 0x0f, 0x10, 0x11, 0x12)
        k = i % (len(ops) * 256 + 64)
        if k < len(ops) * 256:
            op, syn = ops[k // 256], k % 256
            aeth = (syn << 24) | self.pick(
                (0, 1, 0xffffff, self.rnd.getrandbits(24)))
        else:
            op, aeth = 0x0e, None
        psn = self.pick((self.epsn, (self.epsn - 1) & 0xffffff,
                         (self.epsn + 1) & 0xffffff, 0, 0xffffff,
                         FAKE_QPN, self.rnd.getrandbits(24),
                         EPSN0))
        self.add('drop_ghost_response', 'ghost',
                 self.packet(self.body(op, self.qpn, psn, aeth=aeth)))

    def mutated_request(self, op, psn, qpn=None, src=None):
        """A request with any contents: a real-rkey WRITE of its payload
        inside the MR and aligned atomics among them."""
        paylen = self.data_len(op) if FLAGS[op] & F_PAYLOAD else 0
        if not FLAGS[op] & F_PAYLOAD and self.r(8) == 0:
            paylen = self.pick((4, 8, 64))  # payload where none goes
        return self.packet(self.body(op, self.qpn if qpn is None else qpn,
                                     psn, paylen=paylen), src=src)

    def c_psn_behind(self, i):
        op = RC_REQ[i % len(RC_REQ)]
        self.add('duplicate_request', 'psn_behind',
                 self.mutated_request(op, self.psn_behind()))

    def c_psn_ahead(self, i):
        op = RC_REQ[i % len(RC_REQ)]
        self.add('out_of_sequence', 'psn_ahead',
                 self.mutated_request(op, self.psn_ahead()))
        if not self.naked:
            self.seq_naks += 1
        self.naked = True

    def c_dup_read(self, i):
        """Duplicates of a READ the victim took: the responder checks their
        RETH again (and refuses it quietly) without breaking the
        connection. Every RETH invalid, or of length 0."""
        psn = self.pick(self.res[-100:])   # those the responder remembers
        reth = (self.va_any(), self.rkey_any(), 0) if self.r(20) == 0 \
            else self.reth_bad()
        self.add('duplicate_request', 'dup_read',
                 self.packet(self.body(0x0c, self.qpn, psn, reth=reth)))

    def c_rnr(self, i):
        """In the window, SENDs with no receive posted (RNR NAKs, the QP
        stays): every payload size up to past the MTU; and WRITEs with
        immediate of length 0, whatever their key."""
        k = i % 5
        if k < 4:
            op = (0x00, 0x04, 0x05, 0x17)[k]
            n = self.data_len(op)
            body = self.body(op, self.qpn, self.epsn, paylen=n)
        else:
            body = self.body(0x0b, self.qpn, self.epsn, paylen=0, pad=0,
                             reth=(self.va_any(), self.rkey_any(), 0))
        self.add('rnr_nak_sent', 'rnr', self.packet(body))
        self.naked = True

    def c_qp1(self, i):
        """QP1 (UD, GSI) takes no other transport, and no response."""
        op = NOT_UD[i % len(NOT_UD)]
        self.add('drop_qp_state', 'qp1',
                 self.mutated_request(op, self.psn_any(), qpn=1)
                 if FLAGS[op] & F_REQ else
                 self.packet(self.body(op, 1, self.psn_any())))

    def c_qp1_qkey(self, i):
        """UD SENDs to QP1 with a Q_Key other than the GSI's: dropped, and
        counted as such."""
        op = UD_OPS[i % 2]
        qkey = GSI_QKEY ^ (1 << self.r(32)) if self.r(2) else \
            self.rnd.getrandbits(31)
        self.add('drop_bad_qkey', 'qp1_bad_qkey',
                 self.packet(self.body(op, 1, 0, qkey=qkey)))

    def c_after_error(self, i):
        """The QP in error: every opcode, mostly in the window."""
        op = VALID[i % len(VALID)]
        if FLAGS[op] & F_REQ:
            pkt = self.mutated_request(op, self.psn_any())
        else:
            pkt = self.packet(self.body(op, self.qpn, self.psn_any()))
        self.add('drop_qp_state', 'after_error', pkt)

    def c_after_error_source(self, i):
        op = VALID[i % len(VALID)]
        self.add('drop_bad_source', 'after_error_bad_source',
                 self.mutated_request(op, self.epsn,
                                      src=self.pick(self.spoofed))
                 if FLAGS[op] & F_REQ else
                 self.packet(self.body(op, self.qpn, self.epsn),
                             src=self.pick(self.spoofed)))

    # --- the run -------------------------------------------------------
    def read0(self):
        """A zero-length READ in the window, taken by the victim."""
        psn = self.epsn
        pkt = self.packet(self.body(0x0c, self.qpn, psn, pad=0,
                                    reth=(self.va_any(), self.rkey_any(), 0)))
        self.res.append(psn)
        self.epsn = (psn + 1) & 0xffffff
        self.naked = False
        return psn, pkt

    def barrier(self):
        psn, pkt = self.read0()
        self.items.append(('barrier', psn, pkt))
        self.sent['accepted_read'] += 1
        self.tags['accepted'] += 1

    KILLS = (
        # (what, opcode, expected counter, AETH syndrome)
        ('write past the end', 0x0a, 'nak_rem_access_sent', 0x62),
        ('write, 64-bit overflow', 0x0a, 'nak_rem_access_sent', 0x62),
        ('write, flipped rkey', 0x0a, 'nak_rem_access_sent', 0x62),
        ('write, length 2^31', 0x0a, 'nak_rem_access_sent', 0x62),
        ('write first, length 2^32-1', 0x06, 'nak_inv_req_sent', 0x61),
        ('write, payload shorter than RETH', 0x0a, 'nak_inv_req_sent', 0x61),
        ('write first, payload not the MTU', 0x06, 'nak_inv_req_sent', 0x61),
        ('cmp&swap unaligned', 0x13, 'nak_inv_req_sent', 0x61),
        ('fetch&add past the MR', 0x14, 'nak_rem_access_sent', 0x62),
        ('fetch&add flipped rkey', 0x14, 'nak_rem_access_sent', 0x62),
        ('atomic write of 4 bytes', 0x1d, 'nak_inv_req_sent', 0x61),
        ('send middle, no message', 0x01, 'nak_inv_req_sent', 0x61),
        ('write last, no message', 0x08, 'nak_inv_req_sent', 0x61),
        ('read past the end', 0x0c, 'nak_rem_access_sent', 0x62),
        ('read of 2^31+1 bytes', 0x0c, 'nak_inv_req_sent', 0x61),
    )

    def kill_packet(self):
        k = self.kill_k
        what, op, tag, syn = self.KILLS[k]
        a, m = self.addr, MR_LEN
        reth = atm = None
        paylen = 0
        if k == 0:
            reth, paylen = (a + m - 16, self.rkey, 64), 64
        elif k == 1:
            reth, paylen = ((1 << 64) - 32, self.rkey, 64), 64
        elif k == 2:
            reth, paylen = (a, self.rkey ^ (1 << self.r(32)), 64), 64
        elif k == 3:
            reth, paylen = (a, self.rkey, MAX_MSG), 64
        elif k == 4:
            reth, paylen = (a, self.rkey, 0xffffffff), MTU
        elif k == 5:
            reth, paylen = (a, self.rkey, 64), 32
        elif k == 6:
            reth, paylen = (a, self.rkey, 2048), 512
        elif k == 7:
            atm = (a + 1 + self.r(7), self.rkey, 1, 0)
        elif k == 8:
            atm = (a + m, self.rkey, 1, 0)
        elif k == 9:
            atm = (a, self.rkey ^ (1 << self.r(32)), 1, 0)
        elif k == 10:
            reth, paylen = (a, self.rkey, 4), 4
        elif k in (11, 12):
            paylen = 64
        elif k == 13:
            reth = (a + m - 8, self.rkey, 64)
        else:
            reth = (a, self.rkey, MAX_MSG + 1)
        body = self.body(op, self.qpn, self.epsn, paylen=paylen, pad=0,
                         reth=reth, atm=atm)
        self.kill = (what, tag, syn, self.epsn)
        self.items.append(('kill', (self.epsn, syn), self.packet(body)))
        self.sent['kill'] += 1
        self.tags[tag] += 1

    def build(self):
        n = self.count
        rts = [
            (self.c_bad_opcode, n(40 * len(INVALID))),
            (self.c_cnp, n(200)),
            (self.c_truncated, n(3 * len(self.truncated_cases()))),
            (self.c_bad_pad, n(800)),
            (self.c_bad_tver, n(2 * 15 * len(VALID))),
            (self.c_mcast_bad_opcode, n(8 * len(NOT_UD))),
            (self.c_bad_icrc, n(4 * len(VALID) * len(self.BAD_ICRC))),
            (self.c_icrc_after_change, n(1000)),
            (self.c_no_qp, n(150 * len(VALID))),
            (self.c_ip_options, n(200)),
            (self.c_udp_trailer, n(200)),
            (self.c_mcast_no_group, n(300)),
            (self.c_bad_source, n(80 * len(VALID))),
            (self.c_transport, n(100 * len(OTHER_TRANSPORT))),
            (self.c_ghost, n(8 * (5 * 256 + 64))),
            (self.c_psn_behind, n(1000 * len(RC_REQ))),
            (self.c_psn_ahead, n(800 * len(RC_REQ))),
            (self.c_dup_read, n(10000)),
            (self.c_rnr, n(4000)),
            (self.c_qp1, n(30 * len(NOT_UD))),
            (self.c_qp1_qkey, n(300)),
        ]
        order = [k for k, (_, c) in enumerate(rts) for _ in range(c)]
        self.rnd.shuffle(order)
        done = [0] * len(rts)
        psn, pkt = self.read0()
        self.items.append(('barrier', psn, pkt))
        self.sent['accepted_read'] += 1
        self.tags['accepted'] += 1
        since = 0
        for k in order:
            rts[k][0](done[k])
            done[k] += 1
            since += 1
            if since == BARRIER:
                self.barrier()
                since = 0
        self.kill_packet()
        err = [(self.c_after_error, n(40 * len(VALID))),
               (self.c_after_error_source, n(500))]
        order = [k for k, (_, c) in enumerate(err) for _ in range(c)]
        self.rnd.shuffle(order)
        done = [0] * len(err)
        self.items.append(('pace', None, None))
        for k in order:
            err[k][0](done[k])
            done[k] += 1
        return self

    # --- what the victim's counters must show ---------------------------
    def expectations(self):
        """(counter, minimum growth) pairs, and totals."""
        t = self.tags
        total = sum(t.values())
        exp = [(c, t[c]) for c in DISPOSITION if t[c]]
        if self.seq_naks:
            exp.append(('nak_seq_sent', 1))
        door_known = sum(t[c] for c in DOOR)
        rcvd = total - door_known - t['door']
        exp.append(('rcvd_pkts', rcvd))
        return exp, {
            'total': total,
            'door': door_known + t['door'],
            'rcvd': rcvd,
            'accepted': t['accepted'],
            'counted': total - t['accepted'],
        }

    def report(self, out=sys.stdout):
        for k in sorted(self.sent):
            print(f'sent {k} {self.sent[k]}', file=out)
        exp, tot = self.expectations()
        for c, v in exp:
            print(f'expect {c} {v}', file=out)
        for k, v in tot.items():
            print(f'{k} {v}', file=out)
        if self.kill:
            print(f'kill {self.kill[0]} ({self.kill[1]})', file=out)


# --- sending ----------------------------------------------------------
class Wire:
    """The raw socket packets go out of, and a raw UDP socket that sees
    the victim's answers (its READ responses and NAKs)."""

    def __init__(self, victim):
        self.victim = victim
        self.vbytes = socket.inet_aton(victim)
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                socket.IPPROTO_RAW)
        # ENOBUFS (a full qdisc) is an error we see and retry, not a
        # silent loss
        self.tx.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                socket.IPPROTO_UDP)
        try:
            self.rx.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # RCVBUFFORCE
        except OSError:
            self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        self.rx.setblocking(False)
        self.seen = set()        # (opcode, psn, syndrome) of answers
        self.answers = collections.Counter()
        self.retries = 0

    def send(self, pkt):
        for _ in range(10000):
            try:
                self.tx.sendto(pkt, (self.victim, 0))
                return
            except OSError as e:
                if e.errno not in (errno.ENOBUFS, errno.EAGAIN,
                                   errno.EHOSTUNREACH, errno.ECONNREFUSED,
                                   errno.ENETUNREACH, errno.EINTR):
                    raise
                self.retries += 1
                time.sleep(0.001)
        sys.exit('fuzz: cannot send')

    def drain(self):
        while True:
            try:
                b = self.rx.recv(2048)
            except BlockingIOError:
                return
            if len(b) < 20 or b[12:16] != self.vbytes:
                continue
            o = (b[0] & 15) * 4
            if len(b) < o + 24 or b[o + 2:o + 4] != b'\x12\xb7':
                continue
            op = b[o + 8]
            psn = int.from_bytes(b[o + 17:o + 20], 'big')
            syn = b[o + 20] if op in (0x10, 0x11) and len(b) >= o + 25 \
                else None
            if op == 0x11 and syn is not None:
                kind = ('ACK', 'RNR NAK', 'reserved', 'NAK %d' % (syn & 31),
                        'reserved')[min(syn >> 5, 4)]
            else:
                kind = 'opcode %#x' % op
            self.answers[kind] += 1
            if op in (0x10, 0x11):
                self.seen.add((op, psn, syn if op == 0x11 else None))

    def wait(self, key, limit):
        end = time.monotonic() + limit
        while key not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                return False
            select.select([self.rx], [], [], min(left, 0.2))
            self.drain()
        return True


def attack(a):
    from roce import meet, sync
    s, qpn, rkey, addr = meet(a.victim, a.port, a.me, FAKE_QPN, EPSN0)
    wire = Wire(a.victim)
    sync(s)   # the victim's QP is in RTS, expecting EPSN0 from FAKE_QPN
    t0 = time.monotonic()
    g = Gen(a.seed, a.scale, a.victim, a.me, qpn, rkey, addr).build()
    t1 = time.monotonic()
    print(f'fuzz: seed {a.seed} scale {a.scale}: {len(g.items)} packets '
          f'built in {t1 - t0:.1f} s; victim QPN {qpn:#x}', flush=True)
    ok = True
    pending = None        # the barrier sent last, not waited for yet
    burst, gap = 64, 0.0
    n = 0
    for tag, cat, pkt in g.items:
        if tag == 'barrier':
            wire.send(pkt)
            if pending is not None and not wire.wait((0x10, pending, None),
                                                     a.timeout):
                print(f'FAIL fuzz: no READ response to the barrier at PSN '
                      f'{pending:#x} within {a.timeout} s')
                ok = False
                break
            pending = cat
            continue
        if tag == 'kill':
            psn, syn = cat
            wire.send(pkt)
            if not wire.wait((0x11, psn, syn), a.timeout):
                got = sorted(k for k in wire.seen
                             if k[0] == 0x11 and k[1] == psn)
                print(f'FAIL fuzz: no NAK {syn:#x} for "{g.kill[0]}" at PSN '
                      f'{psn:#x} within {a.timeout} s (answers at that '
                      f'PSN: {got})')
                ok = False
            continue
        if tag == 'pace':
            # the QP is in error: small bursts keep its receive queue
            # short
            burst, gap = 16, 0.01
            continue
        wire.send(pkt)
        n += 1
        if n % burst == 0:
            wire.drain()
            if gap:
                time.sleep(gap)
    t2 = time.monotonic()
    time.sleep(a.settle)
    wire.drain()
    sync(s)
    print(f'fuzz: sent {n + g.sent["accepted_read"] + g.sent["kill"]} '
          f'packets in {t2 - t1:.1f} s ({wire.retries} send retries)')
    print('fuzz: answers seen (a sample: the raw socket may miss some): ' +
          ', '.join(f'{k} {v}' for k, v in sorted(wire.answers.items())))
    g.report()
    return 0 if ok else 1


# --- offline checks ---------------------------------------------------
class Victim:
    """What the kernel does with a packet, written again from
    kernel/sroce_net.c, sroce_task.c, sroce_resp.c and sroce_comp.c for the
    victim (RC, RTS, no receive posted, nothing sent) and QP1, to check
    the tags. Raises on any packet that would touch the victim's memory."""

    def __init__(self, g):
        self.g = g
        self.epsn = EPSN0
        self.state = 'RTS'
        self.res = set()

    def mem_ok(self, va, rkey, length):
        g = self.g
        return (rkey == g.rkey and va + max(length, 1) - 1 < 1 << 64 and
                va >= g.addr and va + length <= g.addr + MR_LEN)

    def run(self, pkt):
        from roce import icrc_ok
        g = self.g
        ihl = (pkt[0] & 15) * 4
        if ihl != 20:
            return 'door'
        ulen = struct.unpack('!H', pkt[ihl + 4:ihl + 6])[0]
        b = pkt[ihl + 8:ihl + ulen]
        dgram = pkt[:ihl + ulen]
        if len(b) < 16:
            return 'drop_malformed'
        op, fl = b[0], b[1]
        pad = (fl >> 4) & 3
        if not FLAGS[op] or len(b) < HDR[op] + pad + 4 or fl & 15:
            return 'drop_malformed'
        if not icrc_ok(dgram):
            return 'drop_icrc_err'
        qpn = int.from_bytes(b[5:8], 'big')
        psn = int.from_bytes(b[9:12], 'big')
        paylen = len(b) - HDR[op] - pad - 4
        f = FLAGS[op]
        if qpn == 0xffffff:
            return 'drop_no_qp' if op in UD_OPS else 'drop_malformed'
        if qpn not in (1, g.qpn):
            return 'drop_no_qp'

        def hdr(which):
            o = 12
            for flag, n in EXT:
                if flag == which:
                    return b[o:]
                if f & flag:
                    o += n
            raise AssertionError
        if qpn == 1:
            if not f & F_REQ or op & 0xe0 != 0x60:
                return 'drop_qp_state'
            qkey = struct.unpack('!I', hdr(F_DETH)[:4])[0]
            assert qkey != GSI_QKEY, 'a MAD for ib_mad'
            return 'drop_bad_qkey'
        if pkt[12:16] != g.me:
            return 'drop_bad_source'
        if self.state != 'RTS' or op & 0xe0:
            return 'drop_qp_state'
        if not f & F_REQ:
            return 'drop_ghost_response'
        if psn != self.epsn:
            if not psn_before(psn, self.epsn):
                return 'out_of_sequence'
            if op == 0x0c and psn in self.res:
                va, rkey, ln = _RETH.unpack(hdr(F_RETH)[:16])
                assert ln == 0 or ln > MAX_MSG or not self.mem_ok(
                    va, rkey, ln), 'a duplicate READ that reads'
            return 'duplicate_request'
        if not f & F_FIRST:
            return self.error('nak_inv_req_sent')
        if f & F_SEND:
            return 'rnr_nak_sent'
        if f & (F_WRITE | F_READ):
            va, rkey, ln = _RETH.unpack(hdr(F_RETH)[:16])
            if ln > MAX_MSG:
                return self.error('nak_inv_req_sent')
            if f & F_ATOMIC_WRITE and (ln != 8 or va & 7):
                return self.error('nak_inv_req_sent')
            if ln and not self.mem_ok(va, rkey, ln):
                return self.error('nak_rem_access_sent')
            if f & F_READ:
                assert ln == 0, 'a READ that reads'
                self.res.add(psn)
                self.epsn = (psn + 1) & 0xffffff
                return 'accepted'
            if (paylen > ln or (not f & F_LAST and paylen != MTU) or
                    (f & F_LAST and paylen != ln)):
                return self.error('nak_inv_req_sent')
            if f & F_IMM:
                return 'rnr_nak_sent'
            assert not paylen, 'a WRITE that lands'
            self.epsn = (psn + 1) & 0xffffff
            return 'accepted'
        va, rkey = struct.unpack('!QI', hdr(F_ATMETH)[:12])
        if va & 7:
            return self.error('nak_inv_req_sent')
        if not self.mem_ok(va, rkey, 8):
            return self.error('nak_rem_access_sent')
        raise AssertionError('an atomic that executes')

    def error(self, tag):
        self.state = 'ERR'
        return tag


def selftest(a):
    from roce import icrc_ok
    fails = 0
    plans = []
    for qpn, rkey, addr in ((0x4242, 0x1234500, 0x55d0c0de1010),
                            (0xfedcb, 0xfffe07, 0x7f0000001000),
                            (0x10, 0x100, 0x1000)):
        t0 = time.monotonic()
        g = Gen(a.seed, a.scale, '10.0.3.1', '10.0.3.2', qpn, rkey,
                addr).build()
        t1 = time.monotonic()
        v = Victim(g)
        wrong = collections.Counter()
        sizes = collections.Counter()
        for tag, cat, pkt in g.items:
            if tag == 'pace':
                continue
            if tag in ('barrier', 'kill'):
                tag, cat = ('accepted', 'barrier') if tag == 'barrier' \
                    else (g.kill[1], 'kill')
            assert len(pkt) <= IP_MTU, (cat, len(pkt))
            sizes[len(pkt) // 500] += 1
            got = v.run(pkt)
            if got != tag:
                if sum(wrong.values()) < 10:
                    print(f'  {cat}: tagged {tag}, the kernel would say {got}')
                wrong[(cat, tag, got)] += 1
            ulen = struct.unpack('!H', pkt[24:26])[0]
            if tag == 'drop_icrc_err':
                assert not icrc_ok(pkt[:20 + ulen]), cat
            elif tag not in ('drop_malformed', 'door'):
                assert icrc_ok(pkt[:20 + ulen]), cat
        t2 = time.monotonic()
        print(f'qpn {qpn:#x}: {len(g.items)} packets built in {t1 - t0:.2f} s,'
              f' checked in {t2 - t1:.2f} s; sizes by 500 bytes '
              f'{dict(sorted(sizes.items()))}; kill: {g.kill[0]}')
        for k, n in wrong.items():
            print(f'FAIL {k}: {n}')
            fails += 1
        out = []
        for c, n in g.expectations()[0]:
            out.append((c, n))
        plans.append((out, sorted(g.sent.items())))
    if any(p != plans[0] for p in plans):
        print('FAIL the plan depends on the victim\'s QPN, rkey or address')
        fails += 1
    g.report()
    print('selftest: ' + ('ok' if not fails else f'{fails} failures'))
    return 1 if fails else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('victim', nargs='?')
    p.add_argument('port', nargs='?', type=int)
    p.add_argument('me', nargs='?')
    p.add_argument('--seed', type=int, default=4791)
    p.add_argument('--scale', type=float, default=1.0,
                   help='packets per category, relative (1: over 10^5)')
    p.add_argument('--timeout', type=float, default=60,
                   help='seconds to wait for a barrier or the NAK')
    p.add_argument('--settle', type=float, default=2,
                   help='seconds to wait after the last packet')
    p.add_argument('--mr-len', type=int, default=4096 + 8 + 8,
                   help="bytes of the victim's MR (sroce-wire -V -n 1 -s "
                   "4096: 4112)")
    p.add_argument('--plan', action='store_true')
    p.add_argument('--selftest', action='store_true')
    a = p.parse_args()
    globals()['MR_LEN'] = a.mr_len
    if a.plan:
        Gen(a.seed, a.scale, '10.0.3.1', '10.0.3.2', 0x4242, 0x1234500,
            0x55d0c0de1010).build().report()
        return 0
    if a.selftest:
        return selftest(a)
    if not (a.victim and a.port and a.me):
        p.error('VICTIM_IP PORT MY_IP, or --plan, or --selftest')
    return attack(a)


if __name__ == '__main__':
    sys.exit(main())
