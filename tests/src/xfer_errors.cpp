// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of error completions: a bad rkey, a range past the MR
// and a QP without remote write (REM_ACCESS_ERR), another PD's lkey
// (LOC_PROT_ERR), a short receive (LOC_LEN_ERR), RNR and transport retries
// spent (RNR_RETRY_EXC_ERR, RETRY_EXC_ERR), a late receive found by RNR,
// a WRITE while the port is DOWN (RETRY_EXC_ERR). Each refusal leaves both
// sides' buffers, guard pages included, as they were to the byte
// (expect_untouched()).
#include "xfer.h"

#include <chrono>

namespace xfer {
namespace {

// A bad rkey: REM_ACCESS_ERR, nothing written, the QP in error.
void t_err_rkey(Pair &p)
{
	Untouched u = arm_untouched(p);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 64, 60, remote(p.b, 0),
			p.b.mr->rkey ^ 0x80) == 0, "post");
	expect_wc(p.a, 60, IBV_WC_REM_ACCESS_ERR);
	expect_untouched(p, u, "a WRITE with a bad rkey");
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	ibv_query_qp(p.a.qp, &a, IBV_QP_STATE, &ia);
	CHECK(a.qp_state == IBV_QPS_ERR, "requester state %d after the error",
	      a.qp_state);
}

// Beyond the MR's end: REM_ACCESS_ERR, and neither the target nor the
// READ's local buffer has a byte of the other's (the first 100 bytes are in
// the MR: a partial answer would have them).
void t_err_bounds(Pair &p)
{
	refused_rdma(p, IBV_WR_RDMA_READ, remote(p.b, kBuf - 100),
		     p.b.mr->rkey, 4096, 61, IBV_WC_REM_ACCESS_ERR,
		     "a READ past the MR's end");
}

// A WRITE whose first packet (1024 bytes) is inside the MR and whose
// second is not: refused whole (C9-88), the first packet's bytes too.
void t_err_bounds_write(Pair &p)
{
	refused_write(p, remote(p.b, kBuf - 1500), p.b.mr->rkey, 4096, 68,
		      IBV_WC_REM_ACCESS_ERR, "a WRITE past the MR's end");
}

// The responder QP does not allow remote writes: REM_ACCESS_ERR.
void t_err_qp_access(Pair &p)
{
	refused_write(p, remote(p.b, 0), p.b.mr->rkey, 256, 62,
		      IBV_WC_REM_ACCESS_ERR,
		      "a WRITE to a QP without remote write");
}

// A local SGE whose MR is in another PD: LOC_PROT_ERR, nothing sent (the
// receive, flushed by the requester's error or left posted, got nothing).
void t_err_lkey_pd(Pair &p)
{
	Untouched u = arm_untouched(p);
	CHECK(post_recv(p.b, 0, 4096, 14) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 64, 63, 0, 0, IBV_SEND_SIGNALED,
			p.b.mr->lkey) == 0, "post");
	expect_wc(p.a, 63, IBV_WC_LOC_PROT_ERR);
	expect_untouched(p, u, "a SEND from another PD's lkey");
}

// A receive buffer too small: LOC_LEN_ERR there, REM_INV_REQ_ERR here. The
// receive buffer's bytes are undefined after its error completion; not a
// byte past it changes.
void t_err_recv_len(Pair &p)
{
	Untouched u = arm_untouched(p);
	CHECK(post_recv(p.b, 0, 100, 15) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 200, 64) == 0, "post");
	expect_wc(p.a, 64, IBV_WC_REM_INV_REQ_ERR);
	expect_wc(p.b, 15, IBV_WC_LOC_LEN_ERR);
	expect_untouched(p, u, "a SEND longer than the receive", 0, 100);
}

// No receive posted and no RNR retries: RNR_RETRY_EXC_ERR.
void t_err_rnr(Pair &p)
{
	Untouched u = arm_untouched(p);
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 10, 65) == 0, "post");
	expect_wc(p.a, 65, IBV_WC_RNR_RETRY_EXC_ERR);
	expect_untouched(p, u, "a SEND without a receive");
}

// A receive posted late is found by the RNR retry: posted once the
// SEND was refused for want of it (an RNR NAK sent), not after a sleep.
void t_rnr_retry(Pair &p)
{
	fill(p.a, 0, 500, 4);
	long long naks = port_counter(p, "rnr_nak_sent");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 500, 66) == 0, "post");
	for (long i = 0; i < 10000 * time_scale() &&
	     port_counter(p, "rnr_nak_sent") <= naks; i++)
		usleep(1000);
	CHECK(naks >= 0 && port_counter(p, "rnr_nak_sent") > naks,
	      "no RNR NAK before the receive was posted");
	CHECK(post_recv(p.b, 0, 1000, 16) == 0, "post_recv");
	expect_wc(p.b, 16, IBV_WC_SUCCESS, IBV_WC_RECV, 500);
	expect_wc(p.a, 66, IBV_WC_SUCCESS, IBV_WC_SEND);
	CHECK(same(p.a, 0, p.b, 0, 500), "data differs");
}

// The peer does not answer: the transport timer resends until retry_cnt is
// spent, then RETRY_EXC_ERR; a peer that answers late is fine.
void t_err_retry(Pair &p)
{
	Untouched u = arm_untouched(p);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 64, 67, remote(p.b, 0),
			p.b.mr->rkey) == 0, "post");
	expect_wc(p.a, 67, IBV_WC_RETRY_EXC_ERR);
	expect_untouched(p, u, "a WRITE to a QP that is not there");
}

// Waits up to @secs (times time_scale()) for the async event @want of
// port 1, passing over others (the GID changes of addresses that come and
// go, a QP's), then checks that ibv_query_port(3) says @state. The event
// comes from sroce's netdev notifier, after the IP stack's own (its routes
// back when the port is ACTIVE again). False, and a failure, if not.
bool port_event(Pair &p, ibv_event_type want, ibv_port_state state,
		long secs)
{
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::seconds(secs * time_scale());
	ibv_async_event ev{};
	ibv_port_attr pa{};

	do {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			end - std::chrono::steady_clock::now());
		if (left.count() <= 0 ||
		    !next_async_event(p.ctx, int(left.count()), &ev)) {
			CHECK(false, "no %s event within %ld s",
			      ibv_event_type_str(want), secs * time_scale());
			return false;
		}
	} while (ev.event_type != want || ev.element.port_num != 1);
	CHECK(ibv_query_port(p.ctx, 1, &pa) == 0 && pa.state == state,
	      "port 1 is %s after %s, expected %s",
	      ibv_port_state_str(pa.state), ibv_event_type_str(want),
	      ibv_port_state_str(state));
	return pa.state == state;
}

// A port that is not ACTIVE sends nothing, not even to its own GIDs
// (tests/cases/port_down_loopback.sh takes eth0 down when asked): a WRITE
// that lands while the port is ACTIVE; once it is DOWN, a WRITE between
// the same QPs lands nothing, its packets are dropped and counted in
// send_port_down (its first sending and each of its retry_cnt resends; not
// in sent_pkts), and the transport timer fails it with RETRY_EXC_ERR. Once
// the port is ACTIVE again, a WRITE between new QPs lands.
void t_port_down(Pair &p)
{
	const uint32_t len = 4096;

	fill(p.a, 0, len, 21);
	expect_eq_status(write_to(p, remote(p.b, 0), p.b.mr->rkey, len, 70),
			 IBV_WC_SUCCESS, "a WRITE while the port is ACTIVE");
	CHECK(same(p.a, 0, p.b, 0, len), "the WRITE while the port is ACTIVE "
	      "did not land");

	printf("waiting for port 1 to go DOWN\n");
	fflush(stdout);
	if (!port_event(p, IBV_EVENT_PORT_ERR, IBV_PORT_DOWN, 60))
		return;
	Untouched u = arm_untouched(p);
	CHECK(!same(p.a, 0, p.b, 0, len), "the source is like the target");
	long long drops = port_counter(p, "send_port_down");
	long long sent = port_counter(p, "sent_pkts");
	CHECK(drops >= 0 && sent >= 0, "no send_port_down or sent_pkts counter");
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, len, 71, remote(p.b, 0),
			p.b.mr->rkey) == 0, "post a WRITE while the port is DOWN");
	expect_wc(p.a, 71, IBV_WC_RETRY_EXC_ERR);
	expect_untouched(p, u, "a WRITE while the port is DOWN");
	long long dropped = port_counter(p, "send_port_down") - drops;
	CHECK(dropped >= 1 + p.retry_cnt, "send_port_down grew by %lld for a "
	      "WRITE sent once and resent %d times", dropped, p.retry_cnt);
	CHECK(port_counter(p, "sent_pkts") == sent, "sent_pkts grew by %lld "
	      "while the port was DOWN", port_counter(p, "sent_pkts") - sent);

	printf("waiting for port 1 to be ACTIVE\n");
	fflush(stdout);
	if (!port_event(p, IBV_EVENT_PORT_ACTIVE, IBV_PORT_ACTIVE, 60))
		return;
	Pair q;
	q.ctx = p.ctx;
	q.gid_index = p.gid_index;
	if (setup(q)) {
		fill(q.a, 0, len, 22);
		expect_eq_status(write_to(q, remote(q.b, 0), q.b.mr->rkey, len,
					  72),
				 IBV_WC_SUCCESS,
				 "a WRITE between new QPs, the port ACTIVE again");
		CHECK(same(q.a, 0, q.b, 0, len), "the WRITE between new QPs "
		      "did not land");
	}
	teardown(q);
}

void lost_peer(Pair &p)
{
	p.lost_peer = 0xabcde;
	p.timeout = 10;	// 4 ms
	p.retry_cnt = 2;
}

void no_remote_write(Pair &p)
{
	p.remote_access = IBV_ACCESS_REMOTE_READ;
}

void no_rnr_retry(Pair &p)
{
	p.rnr_retry = 0;
}

// The QPs' GID: the first IPv4 one (::ffff:a.b.c.d), which eth0 keeps
// while it is down (going down removes its IPv6 addresses, and their GIDs
// with them).
void ipv4_gid(Pair &p)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0,
					0, 0, 0, 0, 0xff, 0xff };
	ibv_port_attr pa{};
	ibv_gid gid;

	CHECK(ibv_query_port(p.ctx, 1, &pa) == 0, "ibv_query_port");
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid(p.ctx, 1, i, &gid) == 0 &&
		    !memcmp(gid.raw, v4, sizeof(v4))) {
			p.gid_index = i;
			return;
		}
	}
	CHECK(false, "no IPv4 GID on port 1");
}

const Test tests[] = {
	{ "err_rkey", t_err_rkey, nullptr, false },
	{ "err_bounds", t_err_bounds, nullptr, false },
	{ "err_bounds_write", t_err_bounds_write, nullptr, false },
	{ "err_qp_access", t_err_qp_access, no_remote_write, false },
	{ "err_lkey_pd", t_err_lkey_pd, nullptr, true },
	{ "err_recv_len", t_err_recv_len, nullptr, false },
	{ "err_rnr", t_err_rnr, no_rnr_retry, false },
	{ "rnr_retry", t_rnr_retry, nullptr, false },
	{ "err_retry", t_err_retry, lost_peer, false },
	{ "port_down", t_port_down, ipv4_gid, false },
};

} // namespace

const std::span<const Test> errors_tests(tests);

} // namespace xfer
