#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Check a capture of RoCEv2 traffic over a VLAN and beside it (vlan.sh):
every UDP 4791 packet from a tagged source carries one 802.1Q tag with
VID and the priority code point (PCP) expected of that source (the SL,
through the VLAN device's egress map); every packet from an untagged
source has no tag; every source given sent packets and no other did; and
every packet has a correct ICRC and decodes as InfiniBand
(roce_pcap.py's checks). Prints a summary per source; exits 1 on any
packet out of place or a source missing.

    vlan_pcap.py FILE VID TAGGED_SRC=PCP... -- UNTAGGED_SRC...
"""
import collections
import subprocess
import sys

from roce_pcap import check_decode, check_icrc


def tags(path):
    """(source address, VLAN IDs, PCPs) of each UDP 4791 packet."""
    out = subprocess.run(
        ['tshark', '-r', path, '-Y', 'udp.dstport == 4791', '-T', 'fields',
         '-E', 'aggregator=,', '-e', 'ip.src', '-e', 'ipv6.src',
         '-e', 'vlan.id', '-e', 'vlan.priority'],
        capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = (line.split('\t') + ['', '', '', ''])[:4]
        yield f[0] or f[1], f[2], f[3]


def main():
    path, vid = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    sep = rest.index('--') if '--' in rest else len(rest)
    tagged = dict(a.split('=', 1) for a in rest[:sep])
    untagged = set(rest[sep + 1:])
    seen = collections.defaultdict(collections.Counter)
    for src, vids, pcps in tags(path):
        if src in tagged:
            ok = vids == vid and pcps == tagged[src]
        elif src in untagged:
            ok = not vids
        else:
            ok = False
        seen[src]['right' if ok else f'vid {vids or "none"} pcp {pcps or "none"}'] += 1
    good = True
    for src in sorted(seen):
        c = seen[src]
        want = (f'VID {vid} PCP {tagged[src]}' if src in tagged else
                'untagged' if src in untagged else 'nothing')
        wrong = ', '.join(f'{v} {k}' for k, v in c.items() if k != 'right')
        print(f'{src}: {c["right"]} packets {want}'
              + (f'; wrong: {wrong}' if wrong else ''))
        good = good and not wrong and c['right'] > 0
    for src in sorted((set(tagged) | untagged) - set(seen)):
        print(f'{src}: no packet captured')
        good = False
    stats = check_icrc(path)
    bad_icrc = sum(c['bad ICRC'] for c in stats.values())
    opcodes, bad = check_decode(path)
    print(f'ICRC: {bad_icrc} wrong; tshark: {sum(opcodes.values())} packets, '
          f'{bad} undecoded or malformed')
    return 0 if good and not bad_icrc and not bad else 1


if __name__ == '__main__':
    sys.exit(main())
