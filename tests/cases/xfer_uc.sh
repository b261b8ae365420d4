# UC between two QPs: SEND, SEND with immediate, inline, RDMA WRITE (and
# with immediate), 48 messages in flight, and a local protection error.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 uc 1024 send send_imm inline write write_imm stream err_lkey_pd
