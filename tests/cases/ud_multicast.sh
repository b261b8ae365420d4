# UD multicast: a QP attached to 239.1.2.3 receives a send to the group
# (with its GRH), a QP outside the group and a detached QP do not; an RC QP
# cannot attach; detaching twice is EINVAL.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 mcast
