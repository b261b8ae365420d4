#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Check a capture of RoCEv2 traffic: every UDP 4791 packet has a correct
ICRC (computed here over the masked IP, UDP and BTH headers, as the RoCEv2
annex defines it), and Wireshark's InfiniBand dissector decodes every one
with a known opcode and no malformed or expert errors; and it holds
packets from every address given, no other, over IPv4 and IPv6 (a capture
of one side, or of one IP version, proves half). Prints a summary per
source address; exits 1 on any bad packet or missing source.

    roce_pcap.py FILE.pcap SRC...
"""
import collections
import subprocess
import sys

from roce import icrc_ok

from scapy.all import IP, IPv6, UDP, rdpcap


def check_icrc(path):
    stats = collections.defaultdict(collections.Counter)
    for pkt in rdpcap(path):
        if UDP not in pkt or pkt[UDP].dport != 4791:
            continue
        ip = pkt[IP] if IP in pkt else pkt[IPv6]
        good = icrc_ok(bytes(ip))
        stats[ip.src]['good' if good else 'bad ICRC'] += 1
    return stats


# RoCEv2 sends UDP checksum 0 over IPv6 too (the ICRC protects the
# packet), as RoCE NICs and rdma_rxe do; Wireshark calls that an error.
OK_ERRORS = {'Illegal checksum value (0)'}


def check_decode(path):
    """Opcode names and expert problems as tshark sees them."""
    out = subprocess.run(
        ['tshark', '-r', path, '-Y', 'udp.dstport == 4791', '-T', 'fields',
         '-E', 'aggregator=|', '-e', 'infiniband.bth.opcode',
         '-e', '_ws.malformed', '-e', '_ws.expert.severity',
         '-e', '_ws.expert.message'],
        capture_output=True, text=True, check=True).stdout
    opcodes, bad = collections.Counter(), 0
    for line in out.splitlines():
        f = (line.split('\t') + ['', '', '', ''])[:4]
        errors = [m for sev, m in zip(f[2].split('|'), f[3].split('|'))
                  if sev and int(sev, 0) >= 0x00800000 and m not in OK_ERRORS]
        if not f[0] or f[1] or errors:
            bad += 1
        opcodes[f[0]] += 1
    return opcodes, bad


def main():
    path, want = sys.argv[1], set(sys.argv[2:])
    stats = check_icrc(path)
    opcodes, bad = check_decode(path)
    ok = bad == 0
    for src, c in sorted(stats.items()):
        print(f'{src}: {c["good"]} packets with a correct ICRC, '
              f'{c["bad ICRC"]} with a wrong one')
        ok = ok and c['bad ICRC'] == 0 and c['good'] > 0
    for src in sorted(want - set(stats)):
        print(f'{src}: no packet captured')
    for src in sorted(set(stats) - want):
        print(f'{src}: not one of the VMs\' addresses')
    ok = ok and bool(want) and set(stats) == want
    print(f'tshark: {sum(opcodes.values())} packets, {len(opcodes)} opcodes '
          f'({", ".join(sorted(opcodes))}), {bad} undecoded or malformed')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
