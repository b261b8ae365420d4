# Everything at once for a fixed time (60 s; an argument changes it), each
# byte that moves checked: two RC streams of RDMA WRITE, READ and SEND with
# 8 WRs in flight; QPs (RC, UC, UD), CQs and SRQs created and destroyed;
# MRs registered, re-registered with every combination of the rereg flags
# (ON_DEMAND turned on and off) and advised; type 1 windows bound, written
# through, unbound, their old keys refused with nothing landed; a forked
# child that imports the context, PD and MR and writes with them; and 16
# KiB WRITEs into an MR that ibv_rereg_mr(CHANGE_TRANSLATION) keeps moving
# between two buffers, none of them split between the two. A thread without
# progress for 20 s fails it. Afterwards nothing is left in rdma resource.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
secs=${1:-60}
out=$(timeout "$(tmo 300)" "$repo/tests/bin/sroce-stress" sroce0 "$secs" 2>&1) ||
	fail "$out"
echo "$out"
no_user_objects sroce0
