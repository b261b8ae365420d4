# Verbs the data tests do not reach: an SRQ's limit (ibv_modify_srq(3):
# IBV_EVENT_SRQ_LIMIT_REACHED once, at the receive that leaves fewer WQEs
# than the limit, then disarmed; a resize and a limit past the size refused
# with EINVAL), a CQ that overflows (each lost completion an
# IBV_EVENT_CQ_ERR, its receive consumed, the CQ usable once polled), a CQ
# resized up and down with completions not yet polled (each comes out once,
# in order, bytes checked), and
# ibv_create_ah(3) with a GID index past the table, no GRH or another port
# (EINVAL).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 srq_limit cq_overflow ah_refused cq_resize_pending
