#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Write BYTES bytes of a seeded pattern to stdout: the same bytes on every
machine with this Python (tests/pair/lib.sh's pattern, in the pair VMs, and
scripts/host/check.sh, which makes them once on the host).

    pattern.py SEED BYTES
"""
import random
import sys

sys.stdout.buffer.write(
    random.Random(int(sys.argv[1])).randbytes(int(sys.argv[2])))
