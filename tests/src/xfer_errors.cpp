// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of error completions: a bad rkey, a range past the MR
// and a QP without remote write (REM_ACCESS_ERR), another PD's lkey
// (LOC_PROT_ERR), a short receive (LOC_LEN_ERR), RNR and transport retries
// spent (RNR_RETRY_EXC_ERR, RETRY_EXC_ERR), a late receive found by RNR,
// a WRITE while the port, or its GID's VLAN device, is down
// (RETRY_EXC_ERR). Each refusal leaves both sides' buffers, guard pages
// included, as they were to the byte (expect_untouched()).
#include "xfer.h"

#include <chrono>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

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

// Is network device @name up with carrier (IFF_UP and IFF_RUNNING)?
bool ndev_up(const char *name)
{
	ifreq ifr{};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool up;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
	     (ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING);
	if (fd >= 0)
		close(fd);
	return up;
}

// The ifindex of the network device of port 1's GID @index, or 0.
unsigned gid_ndev(const Pair &p, uint32_t index)
{
	ibv_gid_entry e{};

	return ibv_query_gid_ex(p.ctx, 1, index, &e, 0) ? 0 : e.ndev_ifindex;
}

// The network device of port_down's GID, which the case sets down and up:
// @port if it is the port's own (that of the default GID, index 0).
struct PathDev {
	char name[IF_NAMESIZE] = "";
	bool port = false;
};

// Says "waiting for NAME to go down" (@up false) or "to come up" and waits
// up to 60 s (times time_scale()) for it: for the port's own device, the
// port's async event and state (port_event()); for another (a VLAN device
// on it), its flags, the port staying ACTIVE. False, and a failure, if not.
bool path_wait(Pair &p, const PathDev &d, bool up)
{
	const char *to = up ? "come up" : "go down";
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::seconds(60 * time_scale());
	ibv_port_attr pa{};

	printf("waiting for %s to %s\n", d.name, to);
	fflush(stdout);
	if (d.port)
		return port_event(p, up ? IBV_EVENT_PORT_ACTIVE :
					  IBV_EVENT_PORT_ERR,
				  up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN, 60);
	while (ndev_up(d.name) != up && std::chrono::steady_clock::now() < end)
		usleep(100 * 1000);
	bool done = ndev_up(d.name) == up;
	bool active = ibv_query_port(p.ctx, 1, &pa) == 0 &&
		      pa.state == IBV_PORT_ACTIVE;
	CHECK(done, "%s did not %s within %ld s", d.name, to,
	      60 * time_scale());
	CHECK(active, "port 1 is %s after %s went %s, expected ACTIVE",
	      ibv_port_state_str(pa.state), d.name, up ? "up" : "down");
	return done && active;
}

// A path whose device is down sends nothing, not even to its own GIDs.
// The QPs' GID is the IPv4 one of the device sroce-xfer was given
// (ipv4_gid()), which tests/cases/port_down_loopback.sh sets down and up
// when asked: the port's own (eth0: the port goes DOWN, and the packets
// count in send_port_down) or a VLAN device on it (the port stays ACTIVE,
// and they count in send_no_route: the source GID's device is down). A
// WRITE lands while the device is up; once it is down, a WRITE between the
// same QPs lands nothing, its packets are dropped and counted (its first
// sending and each of its retry_cnt resends; neither in sent_pkts nor in
// the other counter), and the transport timer fails it with RETRY_EXC_ERR.
// Once the device is up again, a WRITE between new QPs lands.
void t_port_down(Pair &p)
{
	const uint32_t len = 4096;
	unsigned ifindex = gid_ndev(p, p.gid_index);
	PathDev d;

	d.port = ifindex == gid_ndev(p, 0);
	if (!ifindex || !if_indextoname(ifindex, d.name)) {
		CHECK(false, "GID %d has no network device", p.gid_index);
		return;
	}
	const char *why = d.port ? "send_port_down" : "send_no_route";
	const char *other = d.port ? "send_no_route" : "send_port_down";

	fill(p.a, 0, len, 21);
	expect_eq_status(write_to(p, remote(p.b, 0), p.b.mr->rkey, len, 70),
			 IBV_WC_SUCCESS, "a WRITE while the device is up");
	CHECK(same(p.a, 0, p.b, 0, len), "the WRITE while %s is up did not "
	      "land", d.name);

	if (!path_wait(p, d, false))
		return;
	Untouched u = arm_untouched(p);
	CHECK(!same(p.a, 0, p.b, 0, len), "the source is like the target");
	long long drops = port_counter(p, why);
	long long others = port_counter(p, other);
	long long sent = port_counter(p, "sent_pkts");
	CHECK(drops >= 0 && others >= 0 && sent >= 0, "no %s, %s or sent_pkts "
	      "counter", why, other);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, len, 71, remote(p.b, 0),
			p.b.mr->rkey) == 0, "post a WRITE while %s is down",
	      d.name);
	expect_wc(p.a, 71, IBV_WC_RETRY_EXC_ERR);
	expect_untouched(p, u, "a WRITE while its GID's device is down");
	long long dropped = port_counter(p, why) - drops;
	CHECK(dropped >= 1 + p.retry_cnt, "%s grew by %lld for a WRITE sent "
	      "once and resent %d times", why, dropped, p.retry_cnt);
	CHECK(port_counter(p, other) == others, "%s grew by %lld while %s was "
	      "down", other, port_counter(p, other) - others, d.name);
	CHECK(port_counter(p, "sent_pkts") == sent, "sent_pkts grew by %lld "
	      "while %s was down", port_counter(p, "sent_pkts") - sent,
	      d.name);

	if (!path_wait(p, d, true))
		return;
	Pair q;
	q.ctx = p.ctx;
	q.gid_index = p.gid_index;
	if (setup(q)) {
		fill(q.a, 0, len, 22);
		expect_eq_status(write_to(q, remote(q.b, 0), q.b.mr->rkey, len,
					  72),
				 IBV_WC_SUCCESS,
				 "a WRITE between new QPs, the device up again");
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

// The QPs' GID: the IPv4 one (::ffff:a.b.c.d) of the network device
// sroce-xfer was given (its fifth argument), else of the port's own. A
// device keeps its IPv4 addresses while it is down (going down removes its
// IPv6 ones, and their GIDs with them).
void ipv4_gid(Pair &p)
{
	unsigned want = p.arg ? if_nametoindex(p.arg) : gid_ndev(p, 0);
	std::vector<ibv_gid_entry> table(1024);
	ssize_t n = ibv_query_gid_table(p.ctx, table.data(), table.size(), 0);

	for (ssize_t i = 0; want && i < n; i++) {
		const ibv_gid_entry &e = table[i];

		if (e.port_num == 1 && e.ndev_ifindex == want &&
		    IN6_IS_ADDR_V4MAPPED(e.gid.raw)) {
			p.gid_index = int(e.gid_index);
			return;
		}
	}
	CHECK(false, "no IPv4 GID of %s on port 1",
	      p.arg ? p.arg : "the port's network device");
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
