# RC between two QPs: SEND (0 B to 300 KB, one and many packets), SEND with
# immediate, inline SEND, RDMA WRITE (and with immediate), RDMA READ,
# fetch-and-add and compare-and-swap, RDMA Atomic Write, 48 WRs in flight;
# every byte checked. The PSNs ibv_query_qp and rdma resource report move
# with the traffic.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 send send_imm inline write write_imm read atomic \
	atomic_write stream query_psn
