# A remote peer guessing rkeys: 10^5 RDMA WRITEs with random rkeys (and
# stale tags, a read-only MR's key, bytes past an MR's end), crafted to the
# ICRC and sent from a raw socket in another network namespace, at 256 RC
# QPs of a live device. Every one is NAKed (remote access error, its PSN),
# counted in its rkey_* counter, and not one byte of registered memory
# changes (tests/src/sroce_keyflood.cpp). A WRITE with the right key lands
# first, so the refusals are the keys'.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
peer_ns atk vk0 10.88.0
link_add srk vk0
# On a debug kernel (time stretched) 10^4: there the point is the
# kernel's reports, and 10^5 takes a quarter of an hour.
n=100000
[ "${SROCE_TIME_SCALE:-1}" -gt 1 ] && n=10000
out=$(timeout "$(tmo 600)" "$repo/tests/bin/sroce-keyflood" srk atk \
	10.88.0.1 10.88.0.2 $n 2>&1) || fail "$out"
echo "$out" | tail -2
no_user_objects srk
