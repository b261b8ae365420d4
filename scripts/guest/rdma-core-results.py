#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Read the verbose log of rdma-core's test suite (unittest -v) and print
one line per test: its outcome (ok, skipped, FAIL, ERROR), then its name as
unittest shows it, and for a skip ": " and its reason. A test with a
docstring has its outcome on the line after its name.

    rdma-core-results.py LOG
"""
import re
import sys

NAME = re.compile(r'^(test_\w+ \([\w.]+\))(?: \.\.\. (.*))?$')
OUTCOME = re.compile(r" \.\.\. (ok|skipped|FAIL|ERROR|expected failure)\b"
                     r"(?: '(.*)')?")


def main():
    name = None
    for line in open(sys.argv[1], errors='replace'):
        line = line.rstrip('\n')
        m = NAME.match(line)
        if m:
            name = m.group(1)
            if not m.group(2):
                continue
        o = OUTCOME.search(line)
        if o and name:
            reason = ': ' + o.group(2) if o.group(1) == 'skipped' else ''
            print(o.group(1), name + reason)
            name = None


if __name__ == '__main__':
    main()
