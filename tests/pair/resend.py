#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Play the responder for a victim requester (sroce-wire -M on the other
VM) whose packet size grows under a message half acknowledged. The victim
sends an inline SEND of 512 bytes as two packets of 256; we acknowledge
the first; the victim's QP goes through SQD, where a new address lets its
packets carry 1024 bytes, and back to RTS. We stay silent: the victim's
transport timer sends the SEND again from its start, and it must go as it
went (SEND FIRST and SEND LAST of 256 bytes each, the responder having
PSNs of the old packet size). Then we NAK the second packet (PSN sequence
error): what comes again must be that second packet as it went. Every
packet the victim sends at all must be one of its two. Then we acknowledge
it and the victim checks its completion. Prints what it saw; exits
non-zero on a failure.

    resend.py VICTIM_IP PORT MY_IP
"""
import socket
import sys
import time

from scapy.all import conf, send

from hostile import aeth, bth, roce
from roce import meet, sync

FAKE_QPN = 0xabcdf
MY_PSN = 0x4242
SEND_FIRST, SEND_LAST = 0x00, 0x02
ACK, NAK_SEQ = 0x1f, 0x60


def pattern(msg, off):
    """sroce-wire's pattern: byte @off of message @msg."""
    return ((msg * 131) ^ (off * 7) ^ (off >> 8) ^ 0x5a) & 0xff


MESSAGE = bytes(pattern(1, i) for i in range(512))
PACKETS = {SEND_FIRST: MESSAGE[:256], SEND_LAST: MESSAGE[256:]}
failures = 0


def fail(what):
    global failures
    failures += 1
    print(f'FAIL {what}')


class Victim:
    """The victim's packets to us, seen on a raw UDP socket."""

    def __init__(self, ip):
        self.vbytes = socket.inet_aton(ip)
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                socket.IPPROTO_UDP)
        self.rx.settimeout(0.2)
        self.first_psn = None

    def packets(self, seconds):
        """(opcode, psn, payload) of each RoCEv2 packet from the victim
        within @seconds."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                b = self.rx.recv(4096)
            except socket.timeout:
                continue
            o = (b[0] & 15) * 4
            if (len(b) < o + 8 + 12 + 4 or b[12:16] != self.vbytes or
                    b[o + 2:o + 4] != b'\x12\xb7'):
                continue
            bth_at = o + 8
            op = b[bth_at]
            pad = (b[bth_at + 1] >> 4) & 3
            psn = int.from_bytes(b[bth_at + 9:bth_at + 12], 'big')
            yield op, psn, b[bth_at + 12:len(b) - 4 - pad]

    def check(self, op, psn, payload):
        """Is this one of the SEND's two packets, as it was sent?"""
        if self.first_psn is None and op == SEND_FIRST:
            self.first_psn = psn
        want = PACKETS.get(op)
        if want is None or self.first_psn is None or \
                psn != (self.first_psn + (op == SEND_LAST)) & 0xffffff:
            fail(f'packet opcode {op:#x} PSN {psn:#x} ({len(payload)} '
                 'bytes) is neither of the SEND\'s two')
            return False
        if payload != want:
            diff = next((i for i in range(min(len(want), len(payload)))
                         if want[i] != payload[i]), None)
            fail(f'opcode {op:#x} PSN {psn:#x}: {len(payload)} bytes, '
                 f'expected {len(want)}; first wrong byte at {diff}')
            return False
        return True

    def whole_send(self, seconds):
        """Do both packets of the SEND come, as they went, within
        @seconds? Every packet seen meanwhile is checked."""
        seen = set()
        for op, psn, payload in self.packets(seconds):
            if self.check(op, psn, payload):
                seen.add(op)
            if seen == set(PACKETS):
                return True
        fail(f'the SEND did not come as two packets of 256 bytes (saw '
             f'{sorted(seen)})')
        return False


def main():
    victim, port, me = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    conf.verb = 0
    v = Victim(victim)
    s, qpn, _, _ = meet(victim, port, me, FAKE_QPN, MY_PSN)
    sync(s)     # the victim's QP is connected; it posts the SEND

    if not v.whole_send(5):
        sync(s)
        return 1
    print(f'saw the SEND as two packets of 256 bytes, PSN {v.first_psn:#x}')
    # A coalesced ACK of the first packet only (MSN 0: no message done)
    send(roce(victim, me, bth(0x11, qpn, v.first_psn) + aeth(ACK, 0)))
    time.sleep(0.3)
    sync(s)     # the victim knows the first packet is acknowledged
    sync(s)     # its QP went through SQD and back to RTS

    # Its timer (4 s) sends the SEND again from the start.
    if v.whole_send(12):
        print('after the timeout the SEND came again as it went: two '
              'packets of 256 bytes')

    send(roce(victim, me, bth(0x11, qpn, v.first_psn + 1) +
              aeth(NAK_SEQ, 0)))
    again = 0
    for op, psn, payload in v.packets(3):
        if v.check(op, psn, payload) and op == SEND_LAST:
            again += 1
            break
    if again:
        print('the second packet came again as it went: SEND LAST, '
              '256 bytes, bytes 256 to 511')
    else:
        fail('the NAKed packet did not come again')
    send(roce(victim, me, bth(0x11, qpn, v.first_psn + 1) + aeth(ACK, 1)))
    # Whatever else the victim sends meanwhile must be its SEND too.
    for op, psn, payload in v.packets(0.5):
        v.check(op, psn, payload)
    sync(s)     # the victim saw its completion
    print(f'resend: {failures} failures')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
