# Each half of XRC takes one direction of the traffic: a remote peer that
# knows the QPNs sends RoCEv2 packets, crafted to the ICRC from a raw socket
# in another network namespace, the wrong way. An XRC target QP in RTS gets
# 10^3 each of ACKs, NAKs, READ RESPONSE ONLYs and ATOMIC ACKNOWLEDGEs; an
# XRC initiator QP in RTS gets 10^3 each of SEND ONLY, RDMA WRITE ONLY (a
# valid rkey), RDMA READ REQUEST, FETCH_ADD and CMP_SWAP, each naming the
# real XRC SRQ. Every one is dropped and counted in drop_qp_state: nothing
# answered, completed or written, both QPs still in RTS
# (tests/src/sroce_keyflood.cpp, phantom). First the XRC target takes one
# of each request and an RC QP of the initiator's PD lands the same WRITE,
# so the drops are the QP types'. Its own link, veth, namespace and subnet:
# it cannot meet mr_key_flood.sh's.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
peer_ns atkx vx0 10.88.1
link_add srx vx0
# On a debug kernel (time stretched) 200 of each: there the point is the
# kernel's reports.
n=1000
[ "${SROCE_TIME_SCALE:-1}" -gt 1 ] && n=200
out=$(timeout "$(tmo 300)" "$repo/tests/bin/sroce-keyflood" srx atkx \
	10.88.1.1 10.88.1.2 phantom $n 2>&1) || fail "$out"
echo "$out" | tail -2
no_user_objects srx
