# QPs: limits (EINVAL past max_qp_wr/max_sge/inline), RC/UC/UD creation, the
# state machine and its required attributes, every attribute modify_qp
# refuses (its errno, the QP left in its state), query_qp, SQD drained event,
# posting in RESET/INIT refused, and in ERR every WR flushed in order with
# IBV_WC_WR_FLUSH_ERR (with the completion event when armed).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
"$check" qp sroce0 || fail "QP checks"
n=$(user_objects qp sroce0)
expect_eq "QPs left in rdma resource" 0 "$n"
