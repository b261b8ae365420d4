// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-wire: RC traffic between two hosts with every byte checked, for
// lossy links and for interop with other RoCE devices. The client moves
// data, the server serves memory and receives; they meet over TCP.
//
//   sroce-wire DEV GID_INDEX [-p PORT] [-n ITERS] [-s SIZE] [-d DEPTH]
//              [-u | -V | -M NETDEV] [PEER]
//
// Without PEER it is the server. The client, with up to DEPTH requests in
// flight each time:
//   write:  writes ITERS distinct patterns into the server's slots; the
//           server checks every slot;
//   read:   reads ITERS distinct slots the server filled; checked here;
//   send:   sends ITERS patterned messages; the server checks each receive
//           (in order, full length);
//   fadd:   ITERS fetch-and-adds of 1 on one server word: the values
//           fetched must be exactly 0..ITERS-1 (an atomic executed twice,
//           for example a retried one, shows as a gap and a repeat), and
//           the word, read back, ITERS;
//   cswap:  ITERS compare-and-swaps, one at a time, each from i to i+1.
// Both print "N failures" and exit non-zero on any.
//
// With -u both use UC, where nothing is sent again and a lost packet loses
// the rest of its message: the client writes ITERS patterns into the
// server's slots, and each slot must hold a prefix of whole packets of its
// pattern and zeros after it; then it sends ITERS patterned messages, and
// each receive that completes must hold one whole message, later than the
// one before. After each phase a marker WRITE, repeated until the server
// sees it, proves that nothing more is coming. The server prints how many
// arrived whole, and fails if none did.
//
// With -V the server is a victim for crafted packets instead: it connects
// its QP to what the peer tells it, syncs, waits for the peer's second
// sync, and then checks that its registered buffer is still all zeros,
// reporting the QP's state.
//
// With -M NETDEV the server is a requester whose packet size grows under a
// message half acknowledged, for a peer that plays the responder
// (tests/pair/resend.py): NETDEV's MTU is 576 when the QP connects with a
// path MTU of 1024, so packets carry 256 bytes; an inline SEND of 512
// bytes (message 1 of the pattern) goes as two packets. Once the peer has
// acknowledged the first, the QP goes to SQD, NETDEV's MTU back to 1500,
// an SQD to SQD modify gives the address again (packets may now carry
// 1024 bytes) and the QP returns to RTS. The peer stays silent until the
// transport timer (4 s) sends the SEND again from its start, as it went;
// then it NAKs the second packet, which must come again as it went (bytes
// 256 to 511), and acknowledges it: the SEND completes.
#include "check.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace {

struct Opts {
	const char *dev = nullptr;
	int gidx = 0;
	const char *peer = nullptr;
	int port = 18700;
	uint32_t iters = 200;
	uint32_t size = 16384;
	uint32_t depth = 16;
	bool victim = false;
	bool uc = false;	// -u
	const char *grow_netdev = nullptr;	// -M
	uint32_t max_inline = 0;
};

// What each side tells the other (network byte order not needed: both
// sides are this program on x86).
struct Dest {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint32_t rkey;
	uint32_t pad;
	uint64_t addr;
};

// A byte of the pattern for message @msg at @off.
uint8_t pattern(uint32_t msg, size_t off)
{
	return uint8_t((msg * 131u) ^ (off * 7u) ^ (off >> 8) ^ 0x5a);
}

void fill(uint8_t *p, uint32_t msg, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(msg, i);
}

// Checks that @p holds message @msg; says where it does not.
void check_msg(const char *what, uint32_t i, const uint8_t *p, uint32_t msg,
	       size_t len)
{
	size_t bad = 0, n = 0;

	for (size_t k = 0; k < len; k++)
		if (p[k] != pattern(msg, k) && !n++)
			bad = k;
	CHECK(!n, "%s %u: %zu bytes wrong, the first at %zu: %#x, "
	      "expected %#x", what, i, n, bad, p[bad], pattern(msg, bad));
}

bool full_io(int fd, void *buf, size_t len, bool out)
{
	auto *p = static_cast<uint8_t *>(buf);

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
		if (n <= 0)
			return false;
		p += n;
		len -= size_t(n);
	}
	return true;
}

// The server accepts one client; the client retries until it listens.
int tcp_meet(const Opts &o)
{
	if (!o.peer) {
		int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_port = htons(uint16_t(o.port));
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (sockaddr *)&a, sizeof(a)) || listen(ls, 1)) {
			perror("listen");
			return -1;
		}
		int fd = accept(ls, nullptr, nullptr);
		close(ls);
		return fd;
	}
	addrinfo hints{}, *res;
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	std::string port = std::to_string(o.port);
	if (getaddrinfo(o.peer, port.c_str(), &hints, &res))
		return -1;
	for (int i = 0; i < 600; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (!connect(fd, res->ai_addr, res->ai_addrlen)) {
			freeaddrinfo(res);
			return fd;
		}
		close(fd);
		usleep(100000);
	}
	freeaddrinfo(res);
	fprintf(stderr, "could not connect to %s:%d\n", o.peer, o.port);
	return -1;
}

// The QP's transport timeout (4.096 us * 2^timeout): 14 (67 ms), stretched
// like every time limit of the tests by SROCE_TIME_SCALE (a power of two;
// 4 on the debug kernel, whose VMs answer several times slower: 268 ms).
uint8_t base_timeout()
{
	return scaled_qp_timeout();
}

struct Conn {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf;
	int fd = -1;
	Dest me{}, peer{};
	uint8_t port_mtu = IBV_MTU_1024;
	uint8_t timeout = base_timeout();
};

bool qp_connect(Conn &c, const Opts &o)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = o.uc ? IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE :
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(c.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ibv_mtu(c.port_mtu);
	a.dest_qp_num = c.peer.qpn;
	a.rq_psn = c.peer.psn;
	a.max_dest_rd_atomic = uint8_t(o.depth);
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = uint8_t(o.gidx);
	memcpy(a.ah_attr.grh.dgid.raw, c.peer.gid, 16);
	int rc_only = o.uc ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(c.qp, &a, IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | rc_only))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c.me.psn;
	a.timeout = c.timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = uint8_t(o.depth);
	rc_only = o.uc ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return !ibv_modify_qp(c.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					 rc_only);
}

bool setup(Conn &c, const Opts &o, size_t bytes)
{
	c.ctx = open_device(o.dev);
	if (!c.ctx) {
		fprintf(stderr, "no device %s\n", o.dev);
		return false;
	}
	ibv_port_attr pa;
	ibv_gid gid;
	if (ibv_query_port(c.ctx, 1, &pa) ||
	    ibv_query_gid(c.ctx, 1, o.gidx, &gid))
		return false;
	c.port_mtu = uint8_t(pa.active_mtu);
	c.buf.assign(bytes, 0);
	c.pd = ibv_alloc_pd(c.ctx);
	c.cq = ibv_create_cq(c.ctx, int(2 * o.iters + 2 * o.depth + 16),
			     nullptr, nullptr, 0);
	c.mr = c.pd ? ibv_reg_mr(c.pd, c.buf.data(), bytes,
				 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_REMOTE_ATOMIC)
		    : nullptr;
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = c.cq;
	ia.qp_type = o.uc ? IBV_QPT_UC : IBV_QPT_RC;
	ia.cap.max_send_wr = o.depth;
	ia.cap.max_recv_wr = o.iters + 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = o.max_inline;
	if (c.pd && c.cq)
		c.qp = ibv_create_qp(c.pd, &ia);
	if (!c.mr || !c.qp) {
		fprintf(stderr, "setting up: %s\n", strerror(errno));
		return false;
	}
	c.me.qpn = c.qp->qp_num;
	c.me.psn = uint32_t(getpid() * 7919u) & 0xffffff;
	memcpy(c.me.gid, gid.raw, 16);
	c.me.rkey = c.mr->rkey;
	c.me.addr = uint64_t(uintptr_t(c.buf.data()));
	c.fd = tcp_meet(o);
	if (c.fd < 0 || !full_io(c.fd, &c.me, sizeof(c.me), true) ||
	    !full_io(c.fd, &c.peer, sizeof(c.peer), false))
		return false;
	return true;
}

// Tells the other side a phase is over and waits until it says the same.
bool sync_peer(Conn &c)
{
	char b = 's';

	return full_io(c.fd, &b, 1, true) && full_io(c.fd, &b, 1, false);
}

// Waits for one completion; false (and a failure) on error or timeout.
bool poll_one(Conn &c, ibv_wc &wc)
{
	for (long spins = 0;; spins++) {
		int n = ibv_poll_cq(c.cq, 1, &wc);
		if (n < 0) {
			CHECK(n >= 0, "ibv_poll_cq returned %d", n);
			return false;
		}
		if (n) {
			CHECK(wc.status == IBV_WC_SUCCESS,
			      "completion of wr %" PRIu64 ": %s (vendor %u)",
			      wc.wr_id, ibv_wc_status_str(wc.status),
			      wc.vendor_err);
			return wc.status == IBV_WC_SUCCESS;
		}
		if (spins > 2000000) {
			usleep(1000);
			if (spins > 2000000 + 120000) {
				CHECK(false, "no completion within 2 minutes");
				return false;
			}
		}
	}
}

// Layout of each side's buffer: ITERS slots of SIZE bytes, then one
// 8-byte word for the atomics (at slots_end), then ITERS 8-byte results.
struct Layout {
	size_t slots, word, results, total;
	explicit Layout(const Opts &o)
	{
		slots = size_t(o.iters) * o.size;
		word = slots;
		results = word + 8;
		total = results + 8 * size_t(o.iters);
	}
};

bool post(Conn &c, ibv_wr_opcode op, uint64_t id, size_t loff,
	  uint32_t len, uint64_t raddr, uint64_t cmp_add = 0,
	  uint64_t swap = 0)
{
	ibv_sge sge = { uint64_t(uintptr_t(c.buf.data() + loff)), len,
			c.mr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, op, id), *bad;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = c.peer.rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = c.peer.rkey;
	}
	int err = ibv_post_send(c.qp, &wr, &bad);
	CHECK(!err, "ibv_post_send: %s", strerror(err));
	return !err;
}

// Runs ITERS requests with up to DEPTH in flight; @one posts request i.
// RC completes them in order, each once, with opcode @op.
template <class F>
bool pipeline(Conn &c, const Opts &o, ibv_wc_opcode op, F one)
{
	uint32_t posted = 0, done = 0;
	ibv_wc wc;

	while (done < o.iters) {
		while (posted < o.iters && posted - done < o.depth)
			if (!one(posted++))
				return false;
		if (!poll_one(c, wc))
			return false;
		CHECK(wc.wr_id == done && wc.opcode == op,
		      "completion %u: wr_id %" PRIu64 " opcode %d, expected "
		      "opcode %d", done, wc.wr_id, wc.opcode, op);
		done++;
	}
	return true;
}

// A receive into each of the ITERS slots, in order (wr_id = slot).
void post_slot_recvs(Conn &c, const Opts &o)
{
	for (uint32_t i = 0; i < o.iters; i++) {
		ibv_sge sge = { uint64_t(uintptr_t(&c.buf[size_t(i) * o.size])),
				o.size, c.mr->lkey };
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		int err = ibv_post_recv(c.qp, &wr, &bad);
		CHECK(!err, "ibv_post_recv: %s", strerror(err));
	}
}

// The client's writes: pattern i into the server's slot i.
void write_slots(Conn &c, const Opts &o)
{
	for (uint32_t i = 0; i < o.iters; i++)
		fill(&c.buf[size_t(i) * o.size], i, o.size);
	pipeline(c, o, IBV_WC_RDMA_WRITE, [&](uint32_t i) {
		size_t off = size_t(i) * o.size;
		return post(c, IBV_WR_RDMA_WRITE, i, off, o.size,
			    c.peer.addr + off);
	});
}

// The client's sends: message i is pattern 2 * ITERS + i.
void send_slots(Conn &c, const Opts &o)
{
	for (uint32_t i = 0; i < o.iters; i++)
		fill(&c.buf[size_t(i) * o.size], 2 * o.iters + i, o.size);
	pipeline(c, o, IBV_WC_SEND, [&](uint32_t i) {
		return post(c, IBV_WR_SEND, i, size_t(i) * o.size, o.size, 0);
	});
}

// UC has no acknowledgement, and may lose any packet: after each phase the
// client WRITEs @phase to the server's word (beyond the slots) again and
// again until the server says, over TCP, that it is there. One QP's
// packets are taken in order: the word proves everything sent before it
// was taken (or lost), and no more is coming.
bool uc_mark(Conn &c, const Layout &l, uint64_t phase)
{
	memcpy(&c.buf[l.word], &phase, 8);
	for (long i = 0; i < 60000 * time_scale(); i++) {
		ibv_wc wc;
		if (!post(c, IBV_WR_RDMA_WRITE, i, l.word, 8,
			  c.peer.addr + l.word) ||
		    !poll_one(c, wc))
			return false;
		pollfd pfd = { c.fd, POLLIN, 0 };
		if (poll(&pfd, 1, 1) == 1) {
			char b;
			return full_io(c.fd, &b, 1, false);
		}
	}
	CHECK(false, "the server never saw marker %llu",
	      (unsigned long long)phase);
	return false;
}

// The server's side of uc_mark(): waits for @phase in its word, then says
// so.
bool uc_wait_mark(Conn &c, const Layout &l, uint64_t phase)
{
	const auto *word = reinterpret_cast<const uint64_t *>(&c.buf[l.word]);

	for (long i = 0; i < 60000 * time_scale(); i++) {
		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == phase) {
			char b = 'm';
			return full_io(c.fd, &b, 1, true);
		}
		usleep(1000);
	}
	CHECK(false, "marker %llu never came", (unsigned long long)phase);
	return false;
}

// -u, the client: WRITE pattern i into slot i, then SEND pattern
// 2 * ITERS + i, each completed once sent.
int uc_client(Conn &c, const Opts &o)
{
	Layout l(o);

	write_slots(c, o);
	if (!uc_mark(c, l, 1) ||	// the server checks the slots
	    !sync_peer(c))		// and posted its receives
		return 1;
	send_slots(c, o);
	if (!uc_mark(c, l, 2) ||	// the server checks the messages
	    !sync_peer(c))
		return 1;
	printf("uc client: %d failures\n", failures);
	return failures ? 1 : 0;
}

// Slot @i after a UC WRITE of pattern @i in packets of @mtu bytes: whole
// packets of the pattern, then zeros (the message's other packets were
// lost). Returns the packets of the pattern; a failure if any packet is
// neither, or a zero packet comes before a pattern one.
size_t uc_slot_prefix(const uint8_t *slot, uint32_t i, size_t size,
		      size_t mtu)
{
	size_t whole = 0;
	bool lost = false;

	for (size_t off = 0; off < size; off += mtu) {
		size_t len = std::min(mtu, size - off), pat = 0, zero = 0;
		for (size_t k = off; k < off + len; k++) {
			pat += slot[k] == pattern(i, k);
			zero += slot[k] == 0;
		}
		bool is_pat = pat == len, is_zero = zero == len && !is_pat;
		CHECK(is_pat || is_zero, "UC WRITE %u: packet at %zu is "
		      "neither its pattern nor zeros", i, off);
		CHECK(!(is_pat && lost), "UC WRITE %u: packet at %zu landed "
		      "after one of the message was lost", i, off);
		lost = lost || is_zero;
		whole += is_pat && !lost;
	}
	return whole;
}

// -u, the server: every slot a prefix of whole packets; every receive
// one whole message, each later than the one before.
int uc_server(Conn &c, const Opts &o)
{
	const size_t mtu = size_t(128) << c.port_mtu;
	const size_t per_msg = (o.size + mtu - 1) / mtu;
	size_t whole_msgs = 0, pkts = 0;
	Layout l(o);

	if (!uc_wait_mark(c, l, 1))	// the client's writes were taken
		return 1;
	for (uint32_t i = 0; i < o.iters; i++) {
		size_t n = uc_slot_prefix(&c.buf[size_t(i) * o.size], i,
					  o.size, mtu);
		pkts += n;
		whole_msgs += n == per_msg;
	}
	printf("uc server: %zu of %u WRITEs whole, %zu of %zu packets\n",
	       whole_msgs, o.iters, pkts, per_msg * o.iters);
	CHECK(whole_msgs > 0, "not one UC WRITE arrived whole");

	memset(c.buf.data(), 0, size_t(o.iters) * o.size);
	post_slot_recvs(c, o);
	if (!sync_peer(c) || !uc_wait_mark(c, l, 2)) // the sends were taken
		return 1;
	ibv_wc wc;
	int64_t last = -1;
	uint32_t got = 0;
	while (ibv_poll_cq(c.cq, 1, &wc) == 1) {
		got++;
		CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == o.size &&
			      wc.wr_id < o.iters,
		      "UC receive %u: wr_id %" PRIu64 " %s, %u bytes", got,
		      wc.wr_id, ibv_wc_status_str(wc.status), wc.byte_len);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= o.iters)
			continue;
		// Which message it is, if it is one whole.
		const uint8_t *p = &c.buf[size_t(wc.wr_id) * o.size];
		int64_t msg = -1;
		for (uint32_t j = uint32_t(last + 1); j < o.iters && msg < 0;
		     j++) {
			size_t k = 0;
			while (k < o.size && p[k] == pattern(2 * o.iters + j, k))
				k++;
			if (k == o.size)
				msg = j;
		}
		CHECK(msg > last, "UC receive %u (wr_id %" PRIu64 ") is not "
		      "a whole message after message %" PRId64, got, wc.wr_id,
		      last);
		if (msg > last)
			last = msg;
	}
	printf("uc server: %u of %u SENDs received whole\n", got, o.iters);
	CHECK(got > 0, "not one UC SEND arrived");
	sync_peer(c);
	printf("uc server: %d failures\n", failures);
	return failures ? 1 : 0;
}

int client(const Opts &o)
{
	Conn c;
	Layout l(o);

	if (!setup(c, o, l.total) || !qp_connect(c, o) || !sync_peer(c))
		return 1;
	if (o.uc)
		return uc_client(c, o);

	// write: slot i of the server gets pattern i
	write_slots(c, o);
	sync_peer(c);	// the server checks the slots
	sync_peer(c);	// and refills them with pattern ITERS + i

	// read: slot i comes back with pattern ITERS + i
	memset(c.buf.data(), 0, l.slots);
	pipeline(c, o, IBV_WC_RDMA_READ, [&](uint32_t i) {
		size_t off = size_t(i) * o.size;
		return post(c, IBV_WR_RDMA_READ, i, off, o.size,
			    c.peer.addr + off);
	});
	for (uint32_t i = 0; i < o.iters; i++) {
		check_msg("READ", i, &c.buf[size_t(i) * o.size], o.iters + i, o.size);
	}
	sync_peer(c);	// the reads are done
	sync_peer(c);	// the server posted its receives

	// send: message i is pattern 2 * ITERS + i
	send_slots(c, o);
	sync_peer(c);	// the server checks the messages

	// fadd: ITERS fetch-and-adds of 1 on the server's word (zeroed)
	pipeline(c, o, IBV_WC_FETCH_ADD, [&](uint32_t i) {
		return post(c, IBV_WR_ATOMIC_FETCH_AND_ADD, i,
			    l.results + 8 * size_t(i), 8,
			    c.peer.addr + l.word, 1);
	});
	std::vector<uint8_t> seen(o.iters, 0);
	for (uint32_t i = 0; i < o.iters; i++) {
		uint64_t v;
		memcpy(&v, &c.buf[l.results + 8 * size_t(i)], 8);
		CHECK(v < o.iters && !seen[v],
		      "fetch-and-add %u fetched %" PRIu64 " (%s)", i, v,
		      v < o.iters ? "twice" : "out of range");
		if (v < o.iters)
			seen[v] = 1;
	}
	// cswap: one at a time, ITERS -> ITERS + 1 -> ...
	for (uint32_t i = 0; i < o.iters; i++) {
		ibv_wc wc;
		if (!post(c, IBV_WR_ATOMIC_CMP_AND_SWP, i, l.results, 8,
			  c.peer.addr + l.word, o.iters + i, o.iters + i + 1) ||
		    !poll_one(c, wc))
			break;
		uint64_t v;
		memcpy(&v, &c.buf[l.results], 8);
		CHECK(v == o.iters + i,
		      "compare-and-swap %u fetched %" PRIu64 ", expected %u",
		      i, v, o.iters + i);
	}
	// the word, read back
	ibv_wc wc;
	if (post(c, IBV_WR_RDMA_READ, 0, l.word, 8, c.peer.addr + l.word) &&
	    poll_one(c, wc)) {
		uint64_t v;
		memcpy(&v, &c.buf[l.word], 8);
		CHECK(v == 2ull * o.iters, "atomic word %" PRIu64
		      ", expected %u", v, 2 * o.iters);
	}
	sync_peer(c);
	printf("client: %d failures\n", failures);
	return failures ? 1 : 0;
}

// -V: nothing the peer sends may change memory.
int victim(const Opts &o)
{
	Conn c;
	Layout l(o);

	if (!setup(c, o, l.total) || !qp_connect(c, o) || !sync_peer(c) ||
	    !sync_peer(c))
		return 1;
	size_t n = 0;
	for (uint8_t b : c.buf)
		n += b != 0;
	CHECK(!n, "%zu bytes of the victim's MR changed", n);
	ibv_qp_attr a;
	ibv_qp_init_attr ia;
	if (!ibv_query_qp(c.qp, &a, IBV_QP_STATE, &ia))
		printf("victim: QP %#x is in state %d\n", c.qp->qp_num,
		       a.qp_state);
	printf("victim: %d failures\n", failures);
	return failures ? 1 : 0;
}

// Sets @netdev's MTU; false (and a failure) if ip(8) refuses.
bool set_mtu(const char *netdev, int mtu)
{
	std::string cmd = "ip link set dev " + std::string(netdev) + " mtu " +
			  std::to_string(mtu);
	int rc = system(cmd.c_str());

	CHECK(rc == 0, "%s: exit status %d", cmd.c_str(), rc);
	return rc == 0;
}

bool modify_state(Conn &c, ibv_qp_state state, int mask = 0,
		  ibv_qp_attr *with = nullptr)
{
	ibv_qp_attr a = with ? *with : ibv_qp_attr{};
	a.qp_state = state;
	int err = ibv_modify_qp(c.qp, &a, IBV_QP_STATE | mask);

	CHECK(!err, "modify QP to state %d (mask %#x): %s", state, mask,
	      strerror(err));
	return !err;
}

// -M: a go-back after the packet size grew resends what was sent.
int grow_victim(const Opts &o)
{
	const uint32_t len = 512;
	Conn c;
	Layout l(o);

	if (!set_mtu(o.grow_netdev, 576) || !setup(c, o, l.total))
		return 1;
	c.port_mtu = IBV_MTU_1024;
	c.timeout = 20;		// 4 s: the peer answers by hand
	if (!qp_connect(c, o) || !sync_peer(c))
		return 1;
	fill(c.buf.data(), 1, len);
	ibv_sge sge = { uint64_t(uintptr_t(c.buf.data())), len, c.mr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND, 1,
				    IBV_SEND_SIGNALED | IBV_SEND_INLINE), *bad;
	int err = ibv_post_send(c.qp, &wr, &bad);
	CHECK(!err, "post the inline SEND: %s", strerror(err));
	// The inline copy is the WQE's: the buffer may change at once.
	memset(c.buf.data(), 0, len);
	if (err || !sync_peer(c))	// the peer acknowledged packet 1
		return 1;

	ibv_qp_attr path{}, now{};
	ibv_qp_init_attr ia;
	CHECK(!ibv_query_qp(c.qp, &path, IBV_QP_AV, &ia), "query QP");
	bool ok = modify_state(c, IBV_QPS_SQD) &&
		  set_mtu(o.grow_netdev, 1500) &&
		  modify_state(c, IBV_QPS_SQD, IBV_QP_AV, &path) &&
		  modify_state(c, IBV_QPS_RTS);
	if (!sync_peer(c) || !ok)	// the peer NAKs packet 2
		return 1;

	ibv_wc wc;
	if (poll_one(c, wc))
		CHECK(wc.wr_id == 1 && wc.opcode == IBV_WC_SEND,
		      "completion wr_id %" PRIu64 " opcode %d", wc.wr_id,
		      wc.opcode);
	if (!ibv_query_qp(c.qp, &now, IBV_QP_STATE, &ia))
		CHECK(now.qp_state == IBV_QPS_RTS, "QP state %d after the "
		      "SEND", now.qp_state);
	sync_peer(c);
	printf("grow victim: %d failures\n", failures);
	return failures ? 1 : 0;
}

int server(const Opts &o)
{
	Conn c;
	Layout l(o);

	if (o.victim)
		return victim(o);
	if (o.grow_netdev)
		return grow_victim(o);
	if (!setup(c, o, l.total) || !qp_connect(c, o) || !sync_peer(c))
		return 1;
	if (o.uc)
		return uc_server(c, o);

	sync_peer(c);	// the client's writes are complete
	for (uint32_t i = 0; i < o.iters; i++) {
		check_msg("WRITE", i, &c.buf[size_t(i) * o.size], i, o.size);
	}
	for (uint32_t i = 0; i < o.iters; i++)
		fill(&c.buf[size_t(i) * o.size], o.iters + i, o.size);
	sync_peer(c);

	sync_peer(c);	// the client read the slots
	// receives for the client's sends
	memset(c.buf.data(), 0, l.slots);
	post_slot_recvs(c, o);
	sync_peer(c);
	for (uint32_t i = 0; i < o.iters; i++) {
		ibv_wc wc;
		if (!poll_one(c, wc))
			break;
		CHECK(wc.wr_id == i && wc.byte_len == o.size,
		      "receive %u: wr_id %" PRIu64 ", %u bytes", i, wc.wr_id,
		      wc.byte_len);
		check_msg("SEND", i, &c.buf[size_t(i) * o.size], 2 * o.iters + i, o.size);
	}
	sync_peer(c);
	sync_peer(c);	// the atomics are done
	printf("server: %d failures\n", failures);
	return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	// Line by line: a run killed by its time limit still shows how far
	// it got.
	setvbuf(stdout, nullptr, _IOLBF, 0);
	Opts o;
	int opt;

	while ((opt = getopt(argc, argv, "p:n:s:d:uVM:")) != -1) {
		switch (opt) {
		case 'u': o.uc = true; break;
		case 'V': o.victim = true; break;
		case 'M': o.grow_netdev = optarg; o.max_inline = 512; break;
		case 'p': o.port = atoi(optarg); break;
		case 'n': o.iters = uint32_t(atoi(optarg)); break;
		case 's': o.size = uint32_t(atoi(optarg)); break;
		case 'd': o.depth = uint32_t(atoi(optarg)); break;
		default: return 2;
		}
	}
	if (argc - optind < 2 || argc - optind > 3 || !o.iters || !o.size ||
	    !o.depth || o.depth > 255) {
		fprintf(stderr, "usage: sroce-wire DEV GID_INDEX [-p PORT] "
				"[-n ITERS] [-s SIZE] [-d DEPTH] "
				"[-u | -V | -M NETDEV] "
				"[PEER]\n");
		return 2;
	}
	o.dev = argv[optind];
	o.gidx = atoi(argv[optind + 1]);
	if (argc - optind == 3)
		o.peer = argv[optind + 2];
	return o.peer ? client(o) : server(o);
}
