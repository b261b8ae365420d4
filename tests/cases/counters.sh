# rdma statistic: the port counters tell the truth, counted exactly against
# known traffic. Traffic moves the packet and byte counters; an RDMA WRITE
# with a bad rkey counts a remote access NAK sent (responder) and received
# (requester), and the refused key (rkey_stale_tag); a peer that never
# answers counts each transport timeout, each packet dropped for want of a
# QP and the retry-exceeded error; a missing receive with rnr_retry 0 counts
# an RNR NAK each way.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
stat() { # NAME: the counter's value
	rdma statistic show link sroce0/1 | tr ' ' '\n' |
		awk -v n="$1" '$0 == n { getline; print; exit }'
}
declare -A at
# snap: every counter now, into at for delta, from one dump (as
# tests/pair/hostile.sh's snapshot does). A stat per counter, here and for
# the presence of each, was some 220 rdma | tr | awk pipelines, three
# execs each under TCG.
snap() {
	local k v
	# (no process substitution: the guest has no /dev/fd)
	while read -r k v; do
		[ -n "$k" ] && at[$k]=$v
	done <<<"$(rdma statistic show link sroce0/1 | tr -s ' \n' '\n\n' |
		   tail -n +3 | paste -d' ' - -)"
}
snap
for c in sent_pkts rcvd_pkts sent_bytes rcvd_bytes send_no_route \
	send_port_down nak_rem_access_sent \
	nak_rem_access_rcvd local_ack_timeout retry_exceeded_err \
	rnr_nak_sent rnr_nak_rcvd drop_icrc_err drop_no_qp rkey_invalid \
	rkey_stale_tag rkey_access_refused rkey_out_of_range odp_page_faults \
	odp_pages_invalidated odp_pages_prefetched odp_ahead_busy \
	odp_ahead_refused odp_ahead_held odp_rnr_nak_sent \
	odp_later_jobs odp_later_refused odp_jobs_retired release_queued \
	release_backlog_pages release_backlog_refused; do
	[ -n "${at[$c]:-}" ] || fail "no counter $c: $(rdma statistic show link sroce0/1)"
done
delta() { echo $(($(stat "$1") - ${at[$1]:?no counter $1})); }
# expect_delta NAME N WHAT: NAME moved by exactly N
expect_delta() { expect_eq "$3 ($1)" "$2" "$(delta "$1")"; }

# t_send moves 0+1+100+1024+1025+4096+65536+300000 bytes of payload one way
# in 1+1+1+1+2+4+64+293 = 367 packets, each message waited for: at least
# one ACK each, at most one per packet. One device: every packet sent is
# received. A retransmission would add bytes: it is counted.
snap
xfer_all sroce0 rc 1024 send
retrans=$(( $(delta local_ack_timeout) + $(delta out_of_sequence) +
	$(delta duplicate_request) ))
sent=$(delta sent_pkts)
expect_delta rcvd_pkts "$sent" "packets received on the one device"
expect_delta rcvd_bytes "$(delta sent_bytes)" "bytes received on the one device"
if [ "$retrans" -eq 0 ]; then
	expect_delta sent_bytes 371782 "payload of t_send"
	[ "$sent" -ge $((367 + 8)) ] && [ "$sent" -le $((2 * 367)) ] ||
		fail "sent_pkts grew by $sent for 367 request packets"
fi

# One WRITE with a key of another tag: one access NAK each way, one stale
# key (the tag differs), nothing else refused.
snap
xfer_all sroce0 rc 1024 err_rkey
expect_delta nak_rem_access_sent 1 "a bad rkey"
expect_delta nak_rem_access_rcvd 1 "a bad rkey"
expect_delta rkey_stale_tag 1 "a key of another tag"
expect_delta rkey_invalid 0 "a key of another tag"

# A peer that is not there, retry_cnt 2: the WRITE and its 2 resends time
# out, each dropped for want of a QP; one retry_exceeded_err.
snap
xfer_all sroce0 rc 1024 err_retry
expect_delta local_ack_timeout 3 "retry_cnt 2"
expect_delta retry_exceeded_err 1 "retry_cnt 2"
expect_delta drop_no_qp 3 "a peer that is not there"

# No receive, rnr_retry 0: one RNR NAK each way, and the SEND fails.
snap
xfer_all sroce0 rc 1024 err_rnr
expect_delta rnr_nak_sent 1 "rnr_retry 0"
expect_delta rnr_nak_rcvd 1 "rnr_retry 0"
expect_delta retry_rnr_exceeded_err 1 "rnr_retry 0"
# Nothing was malformed or lost on the way.
expect_eq "ICRC errors" 0 "$(stat drop_icrc_err)"
expect_eq "malformed drops" 0 "$(stat drop_malformed)"
