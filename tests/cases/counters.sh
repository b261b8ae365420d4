# rdma statistic: the port counters tell the truth. Traffic moves the packet
# and byte counters; an RDMA WRITE with a bad rkey counts a remote access
# NAK sent (responder) and received (requester), and the refused key
# (rkey_invalid or rkey_stale_tag); a peer that never answers
# counts transport timeouts and the retry-exceeded error; a missing receive
# with rnr_retry 0 counts an RNR NAK each way.
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
stat() { # NAME: the counter's value
	rdma statistic show link sroce0/1 | tr ' ' '\n' |
		awk -v n="$1" '$0 == n { getline; print; exit }'
}
for c in sent_pkts rcvd_pkts sent_bytes rcvd_bytes nak_rem_access_sent \
	nak_rem_access_rcvd local_ack_timeout retry_exceeded_err \
	rnr_nak_sent rnr_nak_rcvd drop_icrc_err drop_no_qp rkey_invalid \
	rkey_stale_tag rkey_access_refused rkey_out_of_range odp_page_faults \
	odp_pages_invalidated odp_pages_prefetched; do
	[ -n "$(stat $c)" ] || fail "no counter $c: $(rdma statistic show link sroce0/1)"
done
p0=$(stat sent_pkts) b0=$(stat rcvd_bytes)
xfer_all sroce0 rc 1024 send
p1=$(stat sent_pkts) b1=$(stat rcvd_bytes)
# t_send moves 0+1+100+1024+1025+4096+65536+300000 bytes, one way.
[ $((b1 - b0)) -ge 371782 ] || fail "rcvd_bytes grew by $((b1 - b0))"
[ $((p1 - p0)) -ge 300 ] || fail "sent_pkts grew by $((p1 - p0))"

a0=$(stat nak_rem_access_sent) r0=$(stat nak_rem_access_rcvd)
k0=$(($(stat rkey_invalid) + $(stat rkey_stale_tag)))
xfer_all sroce0 rc 1024 err_rkey
[ $(($(stat nak_rem_access_sent) - a0)) -ge 1 ] || fail "no access NAK sent"
[ $(($(stat rkey_invalid) + $(stat rkey_stale_tag) - k0)) -ge 1 ] ||
	fail "a bad rkey counted neither rkey_invalid nor rkey_stale_tag"
[ $(($(stat nak_rem_access_rcvd) - r0)) -ge 1 ] || fail "no access NAK received"

t0=$(stat local_ack_timeout) e0=$(stat retry_exceeded_err)
xfer_all sroce0 rc 1024 err_retry
[ $(($(stat local_ack_timeout) - t0)) -ge 3 ] || fail "timeouts: $(($(stat local_ack_timeout) - t0))"
[ $(($(stat retry_exceeded_err) - e0)) -eq 1 ] || fail "retry_exceeded_err not counted once"

n0=$(stat rnr_nak_sent) m0=$(stat rnr_nak_rcvd) x0=$(stat retry_rnr_exceeded_err)
xfer_all sroce0 rc 1024 err_rnr
[ $(($(stat rnr_nak_sent) - n0)) -ge 1 ] || fail "no RNR NAK sent"
[ $(($(stat rnr_nak_rcvd) - m0)) -ge 1 ] || fail "no RNR NAK received"
[ $(($(stat retry_rnr_exceeded_err) - x0)) -eq 1 ] || fail "RNR exceeded not counted"
# Nothing was malformed or lost on the way.
expect_eq "ICRC errors" 0 "$(stat drop_icrc_err)"
expect_eq "malformed drops" 0 "$(stat drop_malformed)"
