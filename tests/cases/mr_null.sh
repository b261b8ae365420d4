# Null MRs (ibv_alloc_null_mr(3)): a receive into one lands nothing and
# completes with the message's length, on RC and UC; scattered behind a
# null SGE the rest lands at its place; a SEND or WRITE out of one carries
# zeroes, a READ into one lands nothing; its key (the lkey, or the rkey 0
# ibv_mr gives) as a peer's rkey is refused for WRITE, READ and atomics
# (remote access error, counted as rkey_invalid), with not a byte of
# either side's buffers changed; ibv_rereg_mr refuses it, no window binds
# to it, another PD's QP cannot use it; "rdma resource show mr" kind null.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 null_recv null_source null_remote null_props
xfer_all sroce0 uc 1024 null_recv
no_user_objects sroce0
