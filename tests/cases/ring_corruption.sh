# An application that corrupts the rings it shares with the kernel gets an
# error state or completion, never a kernel fault: a send producer index no
# WQE could reach (QP to error), a WQE with a bad opcode and SGE count
# (LOC_QP_OP_ERR, QP to error), a CQ consumer index no poller could publish
# (IBV_EVENT_CQ_ERR). The driver's ioctl methods refuse what is not theirs
# to take: the doorbell of an XRC receive QP (EINVAL, no ring to ring),
# ib_uverbs' POST_SEND write command on one (EOPNOTSUPP: not offered, so
# no process's WR reaches sroce_post_send(), which takes kernel WRs), a
# modify with a privileged Q_Key (EPERM) or a state past ERR (EINVAL), as
# ib_uverbs' own modify does. A CQ resize refused because its response has
# no room for the new ring (EINVAL) or cannot be written (EFAULT) leaves the
# CQ on the ring the provider has mapped: no completion is lost. Everything
# still tears down.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
bad=
for t in sq_index wqe cq_index xrc_doorbell xrc_post_send qp_modify_method cq_resize_resp; do
	out=$(timeout "$(tmo 60)" "$repo/tests/bin/sroce-corrupt" sroce0 $t \
		2>&1) ||
		bad+="$t: $out"$'\n'
done
[ -z "$bad" ] || fail "$bad"
