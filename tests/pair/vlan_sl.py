#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""An SL above 6 is a privileged priority (vlan.sh): as the user running
this, for each SL given, an address handle and an RC QP's path (RESET to
RTR, to itself) from GID index GIDX of DEV, each expected to succeed (ok)
or to fail with an errno (EPERM). Prints one line per SL; exits 1 if any
result is not the one expected.

    vlan_sl.py DEV GIDX SL=EXPECT...
"""
import errno
import sys

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

PORT = 1


def result(fn):
    """'ok', or the errno name of the PyverbsRDMAError @fn raised."""
    try:
        fn()
        return 'ok'
    except PyverbsRDMAError as ex:
        code = abs(ex.error_code)
        return errno.errorcode.get(code, str(code))


def ah_attr(ctx, gidx, sl):
    gr = GlobalRoute(dgid=ctx.query_gid(PORT, gidx), sgid_index=gidx)
    return AHAttr(port_num=PORT, is_global=1, gr=gr, sl=sl)


def make_ah(ctx, pd, gidx, sl):
    AH(pd, attr=ah_attr(ctx, gidx, sl)).close()


def rc_to_rtr(ctx, pd, cq, gidx, sl):
    cap = QPCap(max_send_wr=1, max_recv_wr=1, max_send_sge=1,
                max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    try:
        attr = QPAttr()
        attr.port_num = PORT
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = qp.qp_num
        attr.rq_psn = 0
        attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.ah_attr = ah_attr(ctx, gidx, sl)
        qp.to_rtr(attr)
    finally:
        qp.close()


def main():
    dev, gidx = sys.argv[1], int(sys.argv[2])
    good = True
    with Context(name=dev) as ctx:
        pd = PD(ctx)
        cq = CQ(ctx, 4)
        for arg in sys.argv[3:]:
            sl, want = arg.split('=', 1)
            sl = int(sl)
            got_ah = result(lambda: make_ah(ctx, pd, gidx, sl))
            got_qp = result(lambda: rc_to_rtr(ctx, pd, cq, gidx, sl))
            ok = got_ah == want and got_qp == want
            good = good and ok
            print(f'SL {sl}: AH {got_ah}, RC path {got_qp}, expected {want}'
                  + ('' if ok else ' - WRONG'))
        cq.close()
        pd.close()
    return 0 if good else 1


if __name__ == '__main__':
    sys.exit(main())
