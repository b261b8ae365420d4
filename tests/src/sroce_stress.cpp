// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-stress: every kind of object and memory operation at once, for a
// fixed time, on one device (each QP pair loops back through sroce's RoCEv2
// path), with every byte that moves checked. One thread each:
//
//   stream0, stream1  an RC pair moving RDMA WRITE, RDMA READ and SEND, up
//                     to 8 WRs in flight, each message a pattern of its own
//                     counter: READ data checked in the requester's buffer,
//                     WRITE data by the target once a SEND (or the WRITE's
//                     immediate) behind it arrived, or read back
//   objects           QPs (RC, UC, UD), CQs and SRQs created and destroyed
//   mrs               ibv_reg_mr, ibv_rereg_mr with every combination of its
//                     flags (CHANGE_ACCESS turning ON_DEMAND on and off),
//                     ibv_advise_mr on ODP MRs, ibv_dereg_mr
//   windows           a type 1 window bound, written through, unbound; its
//                     old key then refused with nothing landed
//   import            a forked child imports the context, a PD and an MR,
//                     WRITEs with them between QPs of its own, unimports
//   rereg-write,      16 KiB WRITEs (16 packets) into an MR that rereg moves
//   rereg             between two buffers: no message is split between them
//
//   sroce-stress DEV SECONDS
//
// Any mismatch, unexpected error completion or failed verb, or a thread that
// makes no progress for 20 s (times SROCE_TIME_SCALE), fails the run. At the
// end one line per thread with its counts, then "stress ok"; exit status 1
// after a failure.
#include "xfer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <deque>
#include <mutex>
#include <string>
#include <sys/wait.h>
#include <thread>

namespace xfer {
namespace {

using Clock = std::chrono::steady_clock;
using ull = unsigned long long;

// --- What the threads share ------------------------------------------------

std::atomic<bool> g_stop;	// a failure: every thread stops at once
Clock::time_point g_end;	// the end: threads finish what is in flight
std::atomic<int> g_failures;
int64_t g_stall_ms = 20000;	// no progress for this long is a failure
// xfer.h's helpers count failures in a plain int: one thread at a time.
std::mutex g_harness;

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		       Clock::now().time_since_epoch())
		.count();
}

bool running()
{
	return !g_stop && Clock::now() < g_end;
}

// A thread's counts, and when it last made progress.
struct Stats {
	explicit Stats(const char *n) : name(n) {}
	const char *name;
	std::atomic<uint64_t> ops{ 0 }, fails{ 0 };
	std::atomic<int64_t> last{ now_ms() };
	std::atomic<bool> done{ false };
	std::string detail;	// written by the thread before it is done

	void tick() { last = now_ms(); }
	void op()
	{
		ops++;
		tick();
	}
	bool stalled() const { return now_ms() - last > g_stall_ms; }
};

[[gnu::format(printf, 3, 4)]] void failf(Stats &st, int line,
					  const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	// One write, so that threads' lines do not mix.
	fprintf(stderr, "FAIL %s (sroce_stress.cpp:%d): %s\n", st.name, line,
		msg);
	st.fails++;
	g_failures++;
	g_stop = true;
}

#define EXPECT(st, cond, ...)                                                  \
	do {                                                                   \
		if (!(cond))                                                   \
			failf(st, __LINE__, __VA_ARGS__);                      \
	} while (0)

[[gnu::format(printf, 1, 2)]] std::string strf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

uint64_t rnd(uint64_t &s)	// xorshift64
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

// --- Patterns: every 8 bytes of message g say which message and word ---------

const uint8_t kTagStream = 0xa0, kTagWindow = 0xb0, kTagRereg = 0xc0,
	      kTagImport = 0xd0;

uint64_t pat_word(uint8_t tag, uint64_t g, size_t j)
{
	return uint64_t(tag) << 56 | (g & 0xffffffffffULL) << 16 | (j & 0xffff);
}

void pat_fill(uint8_t *d, size_t len, uint8_t tag, uint64_t g)
{
	for (size_t off = 0; off < len; off += 8) {
		uint64_t w = pat_word(tag, g, off / 8);
		memcpy(d + off, &w, std::min<size_t>(8, len - off));
	}
}

// The pattern's byte at @off.
uint8_t pat_byte(uint8_t tag, uint64_t g, size_t off)
{
	uint64_t w = pat_word(tag, g, off / 8);
	uint8_t b[8];

	memcpy(b, &w, 8);
	return b[off % 8];
}

// The first byte of @d that is not message @g's, or -1.
long pat_diff(const uint8_t *d, size_t len, uint8_t tag, uint64_t g)
{
	for (size_t off = 0; off < len; off += 8) {
		uint64_t w = pat_word(tag, g, off / 8);
		size_t n = std::min<size_t>(8, len - off);
		if (memcmp(d + off, &w, n))
			for (size_t i = off; i < off + n; i++)
				if (d[i] != pat_byte(tag, g, i))
					return long(i);
	}
	return -1;
}

// @len bytes at @d are message @g's, and the byte after them (if within
// @room) is still 0.
bool pat_check(Stats &st, const uint8_t *d, size_t len, size_t room,
	       uint8_t tag, uint64_t g, const char *what)
{
	long bad = pat_diff(d, len, tag, g);

	EXPECT(st, bad < 0, "%s %llu (%zu bytes): byte %ld is 0x%02x, "
	       "expected 0x%02x", what, ull(g), len, bad,
	       bad < 0 ? 0 : d[bad], bad < 0 ? 0 : pat_byte(tag, g, bad));
	if (bad < 0 && len < room)
		EXPECT(st, d[len] == 0, "%s %llu (%zu bytes): the byte after "
		       "it is 0x%02x, not 0: written past its end", what,
		       ull(g), len, d[len]);
	return bad < 0 && (len >= room || d[len] == 0);
}

// --- Verbs helpers -----------------------------------------------------------

int post_wr(ibv_qp *qp, ibv_wr_opcode op, const void *laddr, uint32_t len,
	    uint32_t lkey, uint64_t id, uint64_t raddr = 0, uint32_t rkey = 0,
	    uint32_t imm = 0)
{
	ibv_sge sge = { uintptr_t(laddr), len, lkey };
	ibv_send_wr wr = one_sge_wr(&sge, op, id), *bad;

	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

// One completion from @cq, waiting up to the stall limit.
bool wait_wc(Stats &st, ibv_cq *cq, ibv_wc &wc)
{
	int64_t start = now_ms();
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
		if (g_stop)
			return false;
		if (now_ms() - start > g_stall_ms) {
			EXPECT(st, false, "no completion in %lld s",
			       (long long)g_stall_ms / 1000);
			return false;
		}
		usleep(200);
	}
	EXPECT(st, n == 1, "ibv_poll_cq returned %d", n);
	return n == 1;
}

// The next completion of @cq is @id with @status (and @opcode, on success).
bool expect_one(Stats &st, ibv_cq *cq, uint64_t id, ibv_wc_status status,
		int opcode, const char *what)
{
	ibv_wc wc{};

	if (!wait_wc(st, cq, wc))
		return false;
	bool ok = wc.wr_id == id && wc.status == status &&
		  (status != IBV_WC_SUCCESS || wc.opcode == opcode);
	EXPECT(st, ok, "%s: completion wr_id %llu status %s opcode %d, "
	       "expected wr_id %llu status %s opcode %d", what,
	       ull(wc.wr_id), ibv_wc_status_str(wc.status), wc.opcode, ull(id),
	       ibv_wc_status_str(status), opcode);
	return ok;
}

// After an error completion both QPs of @p are in error: to RESET and
// connected again, as applications do (the packets of the old connection
// given a moment to drain first).
bool reconnect(Stats &st, Pair &p)
{
	usleep(10000);
	std::lock_guard<std::mutex> guard(g_harness);
	for (Side *s : { &p.a, &p.b }) {
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_RESET;
		int ret = ibv_modify_qp(s->qp, &a, IBV_QP_STATE);
		EXPECT(st, ret == 0, "QP 0x%x to RESET: %s", s->qp->qp_num,
		       strerror(ret));
		ibv_wc wc;
		while (ibv_poll_cq(s->cq, 1, &wc) > 0)
			;
	}
	int before = failures;
	bool ok = connect(p, p.a, p.b) && connect(p, p.b, p.a);
	if (!ok || failures != before) {	// connect() said why
		st.fails++;
		g_stop = true;
	}
	return ok;
}

// --- 1. Data streams ---------------------------------------------------------

const size_t kSlot = 16 << 10;	// the largest message
const int kRing = 16;		// messages (and receives) tracked at once
const int kDepth = 8;		// send WRs in flight

enum Kind { kWriteSend, kRead, kSend, kWriteImm, kWriteRead, kKinds };
const char *const kKindName[kKinds] = { "write+send", "read", "send",
					"write_imm", "write+read" };

struct Msg {
	uint64_t g = 0;
	Kind kind = kWriteSend;
	uint32_t len = 0;
	int sends = 0;		// its send completions still to come
	bool recv = false;	// its receive completion still to come
	bool busy = false;
};

// One RC pair: a posts, b's receives are posted by the same thread. a's
// buffer: source slots, READ destinations, 8-byte notes; b's: WRITE targets,
// READ sources, receive buffers (slot k of each for message g, k = g % 16).
struct Stream {
	Pair &p;
	Stats &st;
	uint8_t tag;
	Msg msgs[kRing];
	std::deque<uint64_t> sends;	// send wr_ids, in the order posted
	std::deque<uint64_t> recvs;	// messages whose receives come next
	uint64_t next = 0, recv_posted = 0, recv_done = 0, bytes = 0;
	uint64_t per_kind[kKinds]{};
	int inflight = 0, busy = 0;

	uint8_t *src(int k) { return &p.a.buf[k * kSlot]; }
	uint8_t *rdst(int k) { return &p.a.buf[(kRing + k) * kSlot]; }
	uint8_t *note(int k) { return &p.a.buf[2 * kRing * kSlot + k * 64]; }
	uint8_t *wtgt(int k) { return &p.b.buf[k * kSlot]; }
	uint8_t *rsrc(int k) { return &p.b.buf[(kRing + k) * kSlot]; }
	size_t rbuf_off(uint64_t r) { return (2 * kRing + r % kRing) * kSlot; }

	static uint32_t msg_len(uint64_t g)
	{
		return 1 + uint32_t((g * 2654435761ULL >> 5) % kSlot);
	}

	bool post_recv_next()
	{
		size_t off = rbuf_off(recv_posted);
		memset(&p.b.buf[off], 0, kSlot);
		int ret = post_recv(p.b, off, kSlot, recv_posted);
		EXPECT(st, ret == 0, "post receive %llu: %s", ull(recv_posted),
		       strerror(ret));
		recv_posted++;
		return ret == 0;
	}

	int post(Msg &m, int sub, ibv_wr_opcode op, const void *l, uint32_t len,
		 uint32_t lkey, const void *r = nullptr, uint32_t imm = 0)
	{
		uint64_t id = m.g << 2 | sub;
		int ret = post_wr(p.a.qp, op, l, len, lkey, id, uintptr_t(r),
				  p.b.mr->rkey, imm);
		EXPECT(st, ret == 0, "post %s %llu: %s", kKindName[m.kind],
		       ull(m.g), strerror(ret));
		if (!ret) {
			sends.push_back(id);
			inflight++;
		}
		return ret;
	}

	// Posts the next message if its slot is free and the WRs fit.
	bool try_post()
	{
		uint64_t g = next;
		int k = g % kRing;
		Msg &m = msgs[k];
		Kind kind = Kind(g % kKinds);
		int wrs = kind == kWriteSend || kind == kWriteRead ? 2 : 1;
		uint32_t lkey = p.a.mr->lkey;

		if (m.busy || inflight + wrs > kDepth)
			return false;
		m = { g, kind, msg_len(g), wrs,
		      kind == kWriteSend || kind == kSend || kind == kWriteImm,
		      true };
		int ret = 0;
		switch (kind) {
		case kWriteSend:
			pat_fill(src(k), m.len, tag, g);
			memset(wtgt(k), 0, kSlot);
			memcpy(note(k), &g, 8);
			ret = post(m, 0, IBV_WR_RDMA_WRITE, src(k), m.len, lkey,
				   wtgt(k)) ?:
			      post(m, 1, IBV_WR_SEND_WITH_IMM, note(k), 8, lkey,
				   nullptr, uint32_t(g));
			break;
		case kRead:
			pat_fill(rsrc(k), m.len, tag, g);
			memset(rdst(k), 0, kSlot);
			ret = post(m, 0, IBV_WR_RDMA_READ, rdst(k), m.len, lkey,
				   rsrc(k));
			break;
		case kSend:
			pat_fill(src(k), m.len, tag, g);
			ret = post(m, 0, IBV_WR_SEND, src(k), m.len, lkey);
			break;
		case kWriteImm:
			pat_fill(src(k), m.len, tag, g);
			memset(wtgt(k), 0, kSlot);
			ret = post(m, 0, IBV_WR_RDMA_WRITE_WITH_IMM, src(k),
				   m.len, lkey, wtgt(k), uint32_t(g));
			break;
		case kWriteRead:
			pat_fill(src(k), m.len, tag, g);
			memset(wtgt(k), 0, kSlot);
			memset(rdst(k), 0, kSlot);
			ret = post(m, 0, IBV_WR_RDMA_WRITE, src(k), m.len, lkey,
				   wtgt(k)) ?:
			      post(m, 1, IBV_WR_RDMA_READ, rdst(k), m.len, lkey,
				   wtgt(k));
			break;
		default:
			break;
		}
		if (ret)
			return false;
		if (m.recv)
			recvs.push_back(g);
		busy++;
		next++;
		return true;
	}

	void maybe_done(Msg &m)
	{
		if (m.sends || m.recv)
			return;
		m.busy = false;
		busy--;
		per_kind[m.kind]++;
		bytes += m.len;
		st.op();
	}

	void on_send(const ibv_wc &wc)
	{
		uint64_t g = wc.wr_id >> 2;
		int sub = wc.wr_id & 3, k = g % kRing;
		Msg &m = msgs[k];

		bool in_order = !sends.empty() && sends.front() == wc.wr_id;
		EXPECT(st, in_order && m.busy && m.g == g && m.sends > 0,
		       "send completion wr_id 0x%llx, expected 0x%llx",
		       ull(wc.wr_id), ull(sends.empty() ? 0 : sends.front()));
		if (!in_order || !m.busy || m.g != g || m.sends <= 0)
			return;
		sends.pop_front();
		inflight--;
		EXPECT(st, wc.status == IBV_WC_SUCCESS, "%s %llu (%u bytes), "
		       "WR %d: %s", kKindName[m.kind], ull(g), m.len, sub,
		       ibv_wc_status_str(wc.status));
		if (wc.status != IBV_WC_SUCCESS)
			return;
		bool read = (m.kind == kRead && sub == 0) ||
			    (m.kind == kWriteRead && sub == 1);
		bool send = m.kind == kWriteSend && sub == 1;
		int want = read ? IBV_WC_RDMA_READ :
			   send || m.kind == kSend ? IBV_WC_SEND :
						     IBV_WC_RDMA_WRITE;
		EXPECT(st, wc.opcode == want, "%s %llu, WR %d: opcode %d, "
		       "expected %d", kKindName[m.kind], ull(g), sub,
		       wc.opcode, want);
		if (read) {
			EXPECT(st, wc.byte_len == m.len, "%s %llu: byte_len %u, "
			       "expected %u", kKindName[m.kind], ull(g),
			       wc.byte_len, m.len);
			pat_check(st, rdst(k), m.len, kSlot, tag, g,
				  m.kind == kRead ? "READ" : "READ back of WRITE");
		}
		// The WRITE completed: its bytes are in the target.
		if (m.kind == kWriteRead && sub == 0)
			pat_check(st, wtgt(k), m.len, kSlot, tag, g, "WRITE");
		m.sends--;
		maybe_done(m);
	}

	void on_recv(const ibv_wc &wc)
	{
		EXPECT(st, wc.status == IBV_WC_SUCCESS, "receive %llu: %s",
		       ull(wc.wr_id), ibv_wc_status_str(wc.status));
		EXPECT(st, wc.wr_id == recv_done && !recvs.empty(),
		       "receive wr_id %llu, expected %llu", ull(wc.wr_id),
		       ull(recv_done));
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != recv_done ||
		    recvs.empty())
			return;
		uint64_t g = recvs.front();
		recvs.pop_front();
		int k = g % kRing;
		Msg &m = msgs[k];
		EXPECT(st, m.busy && m.g == g && m.recv, "receive %llu for "
		       "message %llu, which expects none", ull(wc.wr_id),
		       ull(g));
		if (!m.busy || m.g != g || !m.recv)
			return;
		const uint8_t *rb = &p.b.buf[rbuf_off(wc.wr_id)];
		bool imm = wc.wc_flags & IBV_WC_WITH_IMM;
		uint64_t note_g = 0;

		switch (m.kind) {
		case kWriteSend:
			// The SEND behind the WRITE arrived: the WRITE's bytes
			// are there before it (RC ordering).
			memcpy(&note_g, rb, 8);
			EXPECT(st, wc.opcode == IBV_WC_RECV && wc.byte_len == 8 &&
				       imm && wc.imm_data == htonl(uint32_t(g)) &&
				       note_g == g,
			       "note of WRITE %llu: opcode %d byte_len %u "
			       "flags 0x%x imm 0x%x payload %llu", ull(g),
			       wc.opcode, wc.byte_len, wc.wc_flags,
			       ntohl(wc.imm_data), ull(note_g));
			pat_check(st, wtgt(k), m.len, kSlot, tag, g,
				  "WRITE (checked by the target)");
			break;
		case kSend:
			EXPECT(st, wc.opcode == IBV_WC_RECV &&
				       wc.byte_len == m.len && !imm,
			       "SEND %llu: opcode %d byte_len %u (expected %u) "
			       "flags 0x%x", ull(g), wc.opcode, wc.byte_len,
			       m.len, wc.wc_flags);
			pat_check(st, rb, m.len, kSlot, tag, g, "SEND");
			break;
		case kWriteImm:
			EXPECT(st, wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
				       wc.byte_len == m.len && imm &&
				       wc.imm_data == htonl(uint32_t(g)),
			       "WRITE_WITH_IMM %llu: opcode %d byte_len %u "
			       "(expected %u) flags 0x%x imm 0x%x", ull(g),
			       wc.opcode, wc.byte_len, m.len, wc.wc_flags,
			       ntohl(wc.imm_data));
			pat_check(st, wtgt(k), m.len, kSlot, tag, g,
				  "WRITE_WITH_IMM (checked by the target)");
			break;
		default:
			EXPECT(st, false, "a receive for %s %llu",
			       kKindName[m.kind], ull(g));
			return;
		}
		recv_done++;
		m.recv = false;
		maybe_done(m);
		post_recv_next();
	}

	void run()
	{
		for (int i = 0; i < kRing; i++)
			if (!post_recv_next())
				return;
		while (!g_stop && (running() || busy)) {
			while (running() && try_post())
				;
			ibv_wc wc[16];
			int n = ibv_poll_cq(p.a.cq, 16, wc);
			for (int i = 0; i < n && !g_stop; i++)
				on_send(wc[i]);
			int m = ibv_poll_cq(p.b.cq, 16, wc);
			for (int i = 0; i < m && !g_stop; i++)
				on_recv(wc[i]);
			EXPECT(st, n >= 0 && m >= 0, "ibv_poll_cq: %d, %d", n, m);
			if (n > 0 || m > 0) {
				st.tick();
				continue;
			}
			if (st.stalled()) {
				EXPECT(st, false, "no completion for %lld s with "
				       "%d messages (%d WRs) in flight",
				       (long long)g_stall_ms / 1000, busy,
				       inflight);
				break;
			}
			usleep(200);
		}
		std::string d;
		for (int i = 0; i < kKinds; i++)
			d += strf("%s %llu, ", kKindName[i], ull(per_kind[i]));
		st.detail = d + strf("%llu bytes", ull(bytes));
	}
};

// --- 2. Object churn ---------------------------------------------------------

ibv_qp *make_qp(ibv_pd *pd, ibv_cq *cq, ibv_srq *srq, ibv_qp_type type,
		uint32_t i)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq;
	ia.srq = srq;
	ia.qp_type = type;
	ia.cap = { 1 + i % 32, srq ? 0 : 1 + i % 32, 1 + i % 4,
		   srq ? 0 : 1 + i % 4, i % 3 * 32 };
	return ibv_create_qp(pd, &ia);
}

int qp_to_init(ibv_qp *qp)
{
	ibv_qp_attr a{};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = 0x1234;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	int ret = ibv_modify_qp(qp, &a, mask);
	if (ret || qp->qp_type != IBV_QPT_UD)
		return ret;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	return ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

// Creates and destroys QPs (RC, RC on an SRQ, UC, UD on an SRQ), CQs (some
// with a completion channel, armed) and SRQs (some with receives posted)
// on its own PD: each creation succeeds, each destroy returns 0.
void churn_objects(ibv_context *ctx, Stats &st)
{
	std::vector<uint8_t> mem(4096);
	ibv_pd *pd = ibv_alloc_pd(ctx);
	ibv_mr *mr = pd ? ibv_reg_mr(pd, mem.data(), mem.size(),
				     IBV_ACCESS_LOCAL_WRITE) :
			  nullptr;
	uint64_t qps = 0, cqs = 0, srqs = 0;

	EXPECT(st, pd && mr, "objects PD and MR: %s", strerror(errno));
	for (uint32_t i = 0; mr && running(); i++) {
		ibv_comp_channel *ch = nullptr;
		if (i % 4 == 0) {
			ch = ibv_create_comp_channel(ctx);
			EXPECT(st, ch, "create completion channel: %s",
			       strerror(errno));
			if (!ch)
				break;
		}
		ibv_cq *cq = ibv_create_cq(ctx, 1 + i % 300, nullptr, ch, 0);
		EXPECT(st, cq, "create CQ of %u: %s", 1 + i % 300,
		       strerror(errno));
		if (cq && ch)
			EXPECT(st, ibv_req_notify_cq(cq, i % 8 == 0) == 0,
			       "arm CQ");
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 1 + i % 64;
		sa.attr.max_sge = 1 + i % 4;
		ibv_srq *srq = ibv_create_srq(pd, &sa);
		EXPECT(st, srq, "create SRQ: %s", strerror(errno));
		for (uint32_t j = 0; srq && j < i % 8 && j < sa.attr.max_wr; j++) {
			ibv_sge sge = { uintptr_t(mem.data()), 64, mr->lkey };
			ibv_recv_wr wr{}, *bad;
			wr.wr_id = j;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			int ret = ibv_post_srq_recv(srq, &wr, &bad);
			EXPECT(st, ret == 0, "post SRQ receive: %s",
			       strerror(ret));
		}
		ibv_qp *qp[4]{};
		if (cq && srq) {
			qp[0] = make_qp(pd, cq, nullptr, IBV_QPT_RC, i);
			qp[1] = make_qp(pd, cq, srq, IBV_QPT_RC, i);
			qp[2] = make_qp(pd, cq, nullptr, IBV_QPT_UC, i);
			qp[3] = make_qp(pd, cq, srq, IBV_QPT_UD, i);
		}
		for (int j = 0; cq && srq && j < 4; j++) {
			EXPECT(st, qp[j], "create QP %d of iteration %u: %s", j,
			       i, strerror(errno));
			if (!qp[j])
				continue;
			qps++;
			// Half of them go on to INIT (UD to RTS) first.
			if ((i + j) % 2 == 0) {
				int ret = qp_to_init(qp[j]);
				EXPECT(st, ret == 0, "QP %d to INIT: %s", j,
				       strerror(ret));
			}
		}
		for (ibv_qp *q : qp)
			if (q)
				EXPECT(st, ibv_destroy_qp(q) == 0, "destroy QP");
		if (srq) {
			EXPECT(st, ibv_destroy_srq(srq) == 0, "destroy SRQ");
			srqs++;
		}
		if (cq) {
			EXPECT(st, ibv_destroy_cq(cq) == 0, "destroy CQ");
			cqs++;
		}
		if (ch)
			EXPECT(st, ibv_destroy_comp_channel(ch) == 0,
			       "destroy completion channel");
		if (!cq || !srq)
			break;
		st.op();
	}
	if (mr)
		EXPECT(st, ibv_dereg_mr(mr) == 0, "dereg MR");
	if (pd)
		EXPECT(st, ibv_dealloc_pd(pd) == 0, "dealloc PD");
	st.detail = strf("QPs %llu, CQs %llu, SRQs %llu", ull(qps), ull(cqs),
			 ull(srqs));
}

// --- 3. MR churn -------------------------------------------------------------

const int kAccess[] = {
	IBV_ACCESS_LOCAL_WRITE,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ,
	IBV_ACCESS_REMOTE_READ,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_ATOMIC,
	0,	// local read only
};
const int kNumAccess = sizeof(kAccess) / sizeof(kAccess[0]);

struct MrState {
	ibv_pd *pd;
	uint8_t *addr;
	size_t len;
	int access;
};

const char *rereg_flags_str(int f)
{
	static const char *const s[] = { "none", "TRANS", "PD", "TRANS|PD",
					 "ACCESS", "TRANS|ACCESS",
					 "PD|ACCESS", "TRANS|PD|ACCESS" };
	return s[f & 7];
}

struct MrChurn {
	ibv_context *ctx;
	Stats &st;
	bool implicit;
	uint64_t regs = 0, advises = 0, deregs = 0, implicits = 0;
	uint64_t reregs[8]{};

	// ibv_advise_mr(3) on an ODP MR: every advice, with and without FLUSH,
	// on the whole MR and on a part of it; PREFETCH_WRITE is EPERM for an
	// MR without local write. Through another PD than the MR's: EPERM.
	void advise(ibv_mr *mr, const MrState &s, ibv_pd *other = nullptr)
	{
		if (!(s.access & IBV_ACCESS_ON_DEMAND))
			return;
		ibv_sge sge[2] = {
			{ uintptr_t(s.addr), uint32_t(s.len), mr->lkey },
			{ uintptr_t(s.addr + s.len / 4), uint32_t(s.len / 2),
			  mr->lkey },
		};
		const auto flush = IBV_ADVISE_MR_FLAG_FLUSH;
		const struct {
			ibv_advise_mr_advice advice;
			uint32_t flags;
			int want;
		} calls[] = {
			{ IBV_ADVISE_MR_ADVICE_PREFETCH, flush, 0 },
			{ IBV_ADVISE_MR_ADVICE_PREFETCH, 0, 0 },
			{ IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, flush,
			  s.access & IBV_ACCESS_LOCAL_WRITE ? 0 : EPERM },
			{ IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, flush, 0 },
			{ IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, 0 },
		};
		for (const auto &c : calls) {
			uint32_t n = 1 + advises % 2;
			int ret = ibv_advise_mr(other ? other : s.pd, c.advice,
						c.flags, sge, n);
			int want = other ? EPERM : c.want;
			EXPECT(st, ret == want, "advise %d flags 0x%x (%u SGEs) "
			       "on an ODP MR of access 0x%x%s: %s, expected %s",
			       c.advice, c.flags, n, s.access,
			       other ? " through another PD" : "",
			       strerror(ret), strerror(want));
			advises++;
		}
	}

	bool rereg(ibv_mr *mr, const MrState &to, int f)
	{
		int ret = ibv_rereg_mr(
			mr, f, f & IBV_REREG_MR_CHANGE_PD ? to.pd : nullptr,
			f & IBV_REREG_MR_CHANGE_TRANSLATION ? to.addr : nullptr,
			f & IBV_REREG_MR_CHANGE_TRANSLATION ? to.len : 0,
			f & IBV_REREG_MR_CHANGE_ACCESS ? to.access : 0);
		EXPECT(st, ret == 0, "rereg %s to access 0x%x length %zu: %d "
		       "(%s)", rereg_flags_str(f), to.access, to.len, ret,
		       strerror(errno));
		if (ret)
			return false;
		reregs[f & 7]++;
		EXPECT(st, mr->pd == to.pd && mr->addr == to.addr &&
			       mr->length == to.len,
		       "after rereg %s: pd %p addr %p length %zu, expected "
		       "%p %p %zu", rereg_flags_str(f), (void *)mr->pd,
		       mr->addr, mr->length, (void *)to.pd, (void *)to.addr,
		       to.len);
		return true;
	}

	// An implicit ODP MR (the whole address space): prefetched, deregistered.
	void implicit_round(ibv_pd *pd, uint8_t *x, uint8_t *y, size_t len)
	{
		ibv_mr *imp = ibv_reg_mr(pd, nullptr, SIZE_MAX,
					 IBV_ACCESS_LOCAL_WRITE |
						 IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_ON_DEMAND);
		EXPECT(st, imp, "reg implicit ODP MR: %s", strerror(errno));
		if (!imp)
			return;
		ibv_sge sx = { uintptr_t(x), uint32_t(len), imp->lkey };
		ibv_sge sy = { uintptr_t(y), uint32_t(len), imp->lkey };
		int ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
					IBV_ADVISE_MR_FLAG_FLUSH, &sx, 1);
		EXPECT(st, ret == 0, "PREFETCH_WRITE, implicit ODP: %s",
		       strerror(ret));
		ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				    0, &sy, 1);
		EXPECT(st, ret == 0, "PREFETCH_NO_FAULT, implicit ODP: %s",
		       strerror(ret));
		EXPECT(st, ibv_dereg_mr(imp) == 0, "dereg implicit ODP MR");
		implicits++;
	}

	// Iteration i: an MR registered in one state, moved by rereg with the
	// flags 1 + i % 7 (each combination in turn; CHANGE_ACCESS turns
	// ON_DEMAND on or off), back with all three flags, deregistered; ODP
	// MRs advised in each state.
	void run()
	{
		const size_t len = 256 << 10;
		ibv_pd *pd1 = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
		uint8_t *x = static_cast<uint8_t *>(
			mmap(nullptr, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		uint8_t *y = static_cast<uint8_t *>(
			mmap(nullptr, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		bool ok = pd1 && pd2 && x != MAP_FAILED && y != MAP_FAILED;

		EXPECT(st, ok, "MR churn PDs and memory: %s", strerror(errno));
		if (ok) {
			memset(x, 0x11, len);
			memset(y, 0x22, len);
		}
		for (uint32_t i = 0; ok && running(); i++) {
			int f = 1 + i % 7;
			int odp = (i / 7) % 2 ? IBV_ACCESS_ON_DEMAND : 0;
			size_t off0 = (i * 13) % 16 * 4096 + i % 3 * 100;
			size_t off1 = (i * 7) % 16 * 4096 + (i + 1) % 3 * 100;
			MrState s0 = { pd1, x + off0, 4096 * (1 + i % 16) - i % 3 * 50,
				       kAccess[i % kNumAccess] | odp };
			MrState s1 = s0;
			if (f & IBV_REREG_MR_CHANGE_PD)
				s1.pd = pd2;
			if (f & IBV_REREG_MR_CHANGE_TRANSLATION) {
				s1.addr = y + off1;
				s1.len = 4096 * (1 + (i + 5) % 16) - i % 2 * 10;
			}
			if (f & IBV_REREG_MR_CHANGE_ACCESS)
				s1.access = kAccess[(i + 2) % kNumAccess] |
					    (odp ^ IBV_ACCESS_ON_DEMAND);

			ibv_mr *mr = ibv_reg_mr(s0.pd, s0.addr, s0.len,
						s0.access);
			EXPECT(st, mr, "reg MR of access 0x%x, %zu bytes: %s",
			       s0.access, s0.len, strerror(errno));
			if (!mr)
				break;
			regs++;
			advise(mr, s0);
			if (rereg(mr, s1, f)) {
				advise(mr, s1);
				if (s1.pd != s0.pd)
					advise(mr, s1, s0.pd);
				if (rereg(mr, s0, 7))
					advise(mr, s0);
			}
			EXPECT(st, ibv_dereg_mr(mr) == 0, "dereg MR");
			deregs++;
			if (implicit && i % 16 == 15)
				implicit_round(pd1, x, y, len);
			st.op();
		}
		if (pd1)
			EXPECT(st, ibv_dealloc_pd(pd1) == 0, "dealloc PD");
		if (pd2)
			EXPECT(st, ibv_dealloc_pd(pd2) == 0, "dealloc PD");
		if (x != MAP_FAILED)
			munmap(x, len);
		if (y != MAP_FAILED)
			munmap(y, len);
		std::string d = strf("reg %llu, rereg", ull(regs));
		for (int f = 1; f < 8; f++)
			d += strf(" %s %llu", rereg_flags_str(f), ull(reregs[f]));
		st.detail = d + strf(", advise %llu, dereg %llu, implicit ODP "
				     "%llu", ull(advises), ull(deregs),
				     ull(implicits));
	}
};

// --- 4. Window churn ---------------------------------------------------------

struct Windows {
	Pair p;			// a writes through b's windows
	ibv_mr *mr = nullptr;	// b's buffer, MW_BIND
};

bool bind_window(Stats &st, Windows &w, ibv_mw *mw, uint8_t *at, size_t len,
	  uint64_t id)
{
	ibv_mw_bind b{};
	b.wr_id = id;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info = { w.mr, uintptr_t(at), len,
			len ? unsigned(IBV_ACCESS_REMOTE_WRITE) : 0 };
	int ret = ibv_bind_mw(w.p.b.qp, mw, &b);
	EXPECT(st, ret == 0, "ibv_bind_mw of %zu bytes: %s", len,
	       strerror(ret));
	return !ret && expect_one(st, w.p.b.cq, id, IBV_WC_SUCCESS,
				  IBV_WC_BIND_MW, len ? "bind" : "unbind");
}

// Bytes around a window's range (64 each side) are still 0.
bool guards_clear(Stats &st, const uint8_t *at, size_t len, uint64_t i)
{
	for (const uint8_t *q : { at - 64, at + len })
		for (int j = 0; j < 64; j++)
			if (q[j]) {
				EXPECT(st, false, "window %llu: byte %ld from its "
				       "start written, outside its %zu bytes",
				       ull(i), long(q + j - at), len);
				return false;
			}
	return true;
}

// A type 1 window allocated, bound to a range of b's MR, written through
// (the bytes checked, nothing around them touched), unbound (length 0); a
// WRITE with its old key is refused (REM_ACCESS_ERR) with nothing landed;
// the pair reconnected; the window deallocated.
void window_thread(Windows &w, Stats &st)
{
	Pair &p = w.p;
	uint64_t refused = 0;

	for (uint64_t i = 0; running(); i++) {
		ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
		EXPECT(st, mw, "alloc type 1 MW: %s", strerror(errno));
		if (!mw)
			break;
		size_t len = 8 + (i * 977) % kSlot;
		size_t off = 4096 + (i * 40961) % (kBuf - 3 * kSlot);
		uint8_t *at = &p.b.buf[off];
		memset(at - 64, 0, len + 128);
		bool ok = bind_window(st, w, mw, at, len, i << 2);
		uint32_t key = mw->rkey;
		if (ok) {
			pat_fill(&p.a.buf[0], len, kTagWindow, 2 * i);
			int ret = post_wr(p.a.qp, IBV_WR_RDMA_WRITE, &p.a.buf[0],
					  len, p.a.mr->lkey, i << 2 | 1,
					  uintptr_t(at), key);
			EXPECT(st, ret == 0, "post WRITE: %s", strerror(ret));
			ok = !ret && expect_one(st, p.a.cq, i << 2 | 1,
						IBV_WC_SUCCESS,
						IBV_WC_RDMA_WRITE,
						"WRITE through a window");
		}
		ok = ok && pat_check(st, at, len, 0, kTagWindow, 2 * i,
				     "WRITE through window") &&
		     guards_clear(st, at, len, i);
		ok = ok && bind_window(st, w, mw, at, 0, i << 2 | 2);
		if (ok) {
			pat_fill(&p.a.buf[0], len, kTagWindow, 2 * i + 1);
			int ret = post_wr(p.a.qp, IBV_WR_RDMA_WRITE, &p.a.buf[0],
					  len, p.a.mr->lkey, i << 2 | 3,
					  uintptr_t(at), key);
			EXPECT(st, ret == 0, "post WRITE: %s", strerror(ret));
			ok = !ret && expect_one(st, p.a.cq, i << 2 | 3,
						IBV_WC_REM_ACCESS_ERR, -1,
						"WRITE with an unbound "
						"window's key");
			ok = ok && pat_check(st, at, len, 0, kTagWindow, 2 * i,
					     "bytes landed through an unbound "
					     "key: window") &&
			     guards_clear(st, at, len, i);
			refused += ok;
			ok = ok && reconnect(st, p);
		}
		EXPECT(st, ibv_dealloc_mw(mw) == 0, "dealloc MW");
		if (!ok)
			break;
		st.op();
	}
	st.detail = strf("bound, written through, unbound and refused: %llu",
			 ull(refused));
}

// --- 5. Import churn ---------------------------------------------------------

const size_t kImportTo = 32 << 10;	// where the child's WRITE goes

struct Import {
	int cmd_fd = -1;
	ibv_pd *pd = nullptr;
	ibv_mr *mr = nullptr;
	uint8_t *buf = nullptr;	// 64 KiB
	Pair child;		// the child's QPs (prepared here: no
				// allocation in a child of many threads)
};

const char *const kChildStep[] = {
	"done", "dup", "ibv_import_device", "ibv_import_pd", "ibv_import_mr",
	"imported MR's keys, length, handle or PD differ",
	"ibv_create_cq", "ibv_create_qp", "connect", "post WRITE",
	"no completion in time", "WRITE completion", "destroy QP or CQ",
	"ibv_close_device",
};

// The child: imports the context (a dup of the owner's command fd), the PD
// and the MR; WRITEs 4 KiB with the imported keys (lkey and rkey) between
// two QPs of its own on the imported PD; destroys them, unimports, closes.
// Returns the step that failed (kChildStep), or 0. No stdio and no locks
// the parent's other threads may have held at fork().
int import_child(Import &im)
{
	int fd = dup(im.cmd_fd);
	if (fd < 0)
		return 1;
	ibv_context *ctx = ibv_import_device(fd);
	if (!ctx)
		return 2;
	ibv_pd *pd = ibv_import_pd(ctx, im.pd->handle);
	if (!pd)
		return 3;
	ibv_mr *mr = ibv_import_mr(pd, im.mr->handle);
	if (!mr)
		return 4;
	if (mr->lkey != im.mr->lkey || mr->rkey != im.mr->rkey ||
	    mr->length != im.mr->length || mr->handle != im.mr->handle ||
	    mr->pd != pd)
		return 5;
	ibv_cq *cq = ibv_create_cq(ctx, 8, nullptr, nullptr, 0);
	if (!cq)
		return 6;
	Pair &p = im.child;
	p.ctx = ctx;
	for (Side *s : { &p.a, &p.b }) {
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap = { 4, 4, 1, 1, 0 };
		s->pd = pd;
		s->cq = cq;
		s->qp = ibv_create_qp(pd, &ia);
		if (!s->qp)
			return 7;
	}
	if (!connect(p, p.a, p.b) || !connect(p, p.b, p.a))
		return 8;
	if (post_wr(p.a.qp, IBV_WR_RDMA_WRITE, im.buf, 4096, mr->lkey, 1,
		    uintptr_t(im.buf + kImportTo), mr->rkey))
		return 9;
	ibv_wc wc{};
	int n = 0;
	for (int64_t start = now_ms(); n == 0; usleep(500)) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n == 0 && now_ms() - start > g_stall_ms / 2)
			return 10;
	}
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != 1)
		return 11;
	if (ibv_destroy_qp(p.a.qp) || ibv_destroy_qp(p.b.qp) ||
	    ibv_destroy_cq(cq))
		return 12;
	ibv_unimport_mr(mr);
	ibv_unimport_pd(pd);
	return ibv_close_device(ctx) ? 13 : 0;
}

// Forks a child that imports the owner's PD and MR and writes with them,
// waits for it, checks what it wrote: again and again.
void import_thread(Import &im, Stats &st)
{
	for (uint64_t n = 0; running(); n++) {
		pat_fill(im.buf, 4096, kTagImport, n);
		memset(im.buf + kImportTo, 0, 4096 + 64);
		pid_t pid = fork();
		if (pid == 0)
			_exit(import_child(im));
		EXPECT(st, pid > 0, "fork: %s", strerror(errno));
		if (pid < 0)
			break;
		int status = 0;
		pid_t got = 0;
		for (int64_t start = now_ms(); got == 0; usleep(1000)) {
			got = waitpid(pid, &status, WNOHANG);
			if (got == 0 && now_ms() - start > g_stall_ms) {
				EXPECT(st, false, "import child %d still running "
				       "after %lld s: killed", pid,
				       (long long)g_stall_ms / 1000);
				kill(pid, SIGKILL);
				got = waitpid(pid, &status, 0);
				break;
			}
		}
		if (got != pid || g_stop)
			break;
		int step = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		bool known = step >= 0 && step < int(sizeof(kChildStep) /
						     sizeof(kChildStep[0]));
		EXPECT(st, step == 0, "import child %llu failed: %s (wait "
		       "status 0x%x)", ull(n), known ? kChildStep[step] :
		       "killed or unknown", status);
		if (step != 0 ||
		    !pat_check(st, im.buf + kImportTo, 4096, 4096 + 64,
			       kTagImport, n, "the import child's WRITE"))
			break;
		st.op();
	}
	st.detail = strf("children that imported, wrote and unimported: %llu",
			 ull(st.ops.load()));
}

// --- 6. WRITEs across ibv_rereg_mr(CHANGE_TRANSLATION) -----------------------
//
// The MR covers V, 1 MiB, always: what moves is the memory at V. A swap
// moves the pages at V to T, those at W to V and those at T to W (mremap
// with MREMAP_DONTUNMAP, so that no address is ever left free for
// another thread's mmap), then ibv_rereg_mr(CHANGE_TRANSLATION, V) pins
// the pages now at V. The requester WRITEs to the same addresses
// throughout, so a message split by a rereg (first packets through the
// old translation, the rest through the new) would land partly in each
// buffer: the check sees that. The two buffers are A (at V at the start)
// and B; after D swaps A is at V if D is even, else at W.
//
// Round r: slot s of the buffers gets message g = 64 r + s, 16 KiB, whose
// every 8 bytes hold g (pat_word). Once the round's 64 messages completed
// (the rereg thread held off), every slot of A and of B is each word
// either g's or 0, and:
// - a message completed with success is wholly in A or wholly in B, and
//   nothing of it in the other; if no rereg began between the moment the
//   previous one returned and the completion, it is in the buffer that
//   rereg put under the MR;
// - a message that failed (REM_ACCESS_ERR, allowed only if a rereg began
//   after it was posted, and the WR_FLUSH_ERRs after it) is not in both;
// - a slot never posted is empty in both.
// Then both buffers are cleared for the next round.

const int kMsgs = 64;

struct Rereg {
	Pair p;
	size_t len = kMsgs * kSlot;
	uint8_t *region = nullptr;	// V, W, T: len bytes each
	ibv_mr *mr = nullptr;		// b's, over V
	uint32_t lkey = 0, rkey = 0;
	std::mutex mu;			// a swap vs. a round's check
	std::atomic<uint64_t> started{ 0 }, done{ 0 };	// reregs

	uint8_t *at(int i) { return region + i * len; }	// V, W, T
};

bool move_pages(uint8_t *from, uint8_t *to, size_t len)
{
	return mremap(from, len, len,
		      MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
		      to) == to;
}

void rereg_thread(Rereg &r, Stats &st)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	uint8_t *v = r.at(0), *w = r.at(1), *t = r.at(2);

	while (running()) {
		{
			std::lock_guard<std::mutex> guard(r.mu);
			r.started++;
			bool moved = move_pages(v, t, r.len) &&
				     move_pages(w, v, r.len) &&
				     move_pages(t, w, r.len);
			EXPECT(st, moved, "mremap: %s", strerror(errno));
			if (!moved)
				break;
			int ret = ibv_rereg_mr(r.mr,
					       IBV_REREG_MR_CHANGE_TRANSLATION,
					       nullptr, v, r.len, 0);
			EXPECT(st, ret == 0, "rereg %llu: %d (%s)",
			       ull(r.started.load()), ret, strerror(errno));
			if (ret)
				break;
			EXPECT(st, r.mr->lkey == r.lkey && r.mr->rkey == r.rkey,
			       "rereg changed the keys: 0x%x 0x%x, were 0x%x "
			       "0x%x", r.mr->lkey, r.mr->rkey, r.lkey, r.rkey);
			r.done++;
		}
		st.op();
		usleep(rnd(seed) % 4000);
	}
	st.detail = strf("reregs (CHANGE_TRANSLATION, buffers swapped under "
			 "the MR): %llu", ull(r.done.load()));
}

enum Land { kEmpty, kPartial, kFull, kBad };
const char *const kLandName[] = { "nothing", "part", "all", "other data" };

// What of message @g is in the slot at @d: each word g's or 0, else kBad
// (with @bad the word's index).
Land classify(const uint8_t *d, uint64_t g, size_t &bad)
{
	size_t match = 0, words = kSlot / 8;

	for (size_t j = 0; j < words; j++) {
		uint64_t v;
		memcpy(&v, d + 8 * j, 8);
		if (v == pat_word(kTagRereg, g, j)) {
			match++;
		} else if (v) {
			bad = j;
			return kBad;
		}
	}
	return match == words ? kFull : match ? kPartial : kEmpty;
}

struct RoundRec {
	bool posted = false, completed = false;
	ibv_wc_status status = IBV_WC_SUCCESS;
	uint64_t d0 = 0;	// reregs returned when it was posted
	uint64_t s1 = 0;	// reregs begun when it completed
};

struct ReregWriter {
	Rereg &r;
	Stats &st;
	uint64_t ok[2]{}, straddled = 0, flushed = 0, partial = 0;
	uint64_t reconnects = 0, rounds = 0;

	void check_round(uint64_t round, const RoundRec *rec)
	{
		std::lock_guard<std::mutex> guard(r.mu);
		uint64_t d = r.done;
		uint8_t *buf[2] = { r.at(d % 2), r.at(1 - d % 2) };	// A, B

		for (int s = 0; s < kMsgs && st.fails < 8; s++) {
			uint64_t g = round * kMsgs + s;
			size_t ba = 0, bb = 0;
			Land la = classify(buf[0] + s * kSlot, g, ba);
			Land lb = classify(buf[1] + s * kSlot, g, bb);
			const RoundRec &m = rec[s];
			if (la == kBad || lb == kBad) {
				uint64_t v;
				memcpy(&v, buf[la == kBad ? 0 : 1] + s * kSlot +
						   8 * (la == kBad ? ba : bb),
				       8);
				EXPECT(st, false, "slot %d of %c, word %zu: 0x%016llx, "
				       "neither message %llu's nor 0", s,
				       la == kBad ? 'A' : 'B',
				       la == kBad ? ba : bb, ull(v), ull(g));
				continue;
			}
			if (!m.posted) {
				EXPECT(st, la == kEmpty && lb == kEmpty,
				       "message %llu was never posted, but is "
				       "there", ull(g));
				continue;
			}
			if (m.status == IBV_WC_SUCCESS) {
				bool in_a = la == kFull && lb == kEmpty;
				bool in_b = lb == kFull && la == kEmpty;
				EXPECT(st, in_a || in_b, "message %llu completed, "
				       "but %s of it is in A and %s in B",
				       ull(g), kLandName[la], kLandName[lb]);
				if (m.s1 == m.d0 && (in_a || in_b))
					EXPECT(st, in_b == (m.d0 % 2 == 1),
					       "message %llu, posted after rereg "
					       "%llu returned and done before the "
					       "next began, landed in %c",
					       ull(g), ull(m.d0), in_a ? 'A' : 'B');
				ok[in_b]++;
			} else {
				EXPECT(st, la == kEmpty || lb == kEmpty,
				       "message %llu failed (%s) and landed in "
				       "both: %s of it in A, %s in B", ull(g),
				       ibv_wc_status_str(m.status),
				       kLandName[la], kLandName[lb]);
				partial += la != kEmpty || lb != kEmpty;
			}
		}
		memset(r.at(0), 0, r.len);
		memset(r.at(1), 0, r.len);
	}

	// A completion of round @rec: the status it may have.
	void on_wc(const ibv_wc &wc, RoundRec *rec, int &next_done, bool &err)
	{
		int s = int(wc.wr_id);
		bool in_order = s == next_done && rec[s].posted;
		EXPECT(st, in_order, "completion wr_id %llu, expected %d",
		       ull(wc.wr_id), next_done);
		if (!in_order)
			return;
		next_done++;
		RoundRec &m = rec[s];
		m.completed = true;
		m.status = wc.status;
		m.s1 = r.started;
		switch (wc.status) {
		case IBV_WC_SUCCESS:
			EXPECT(st, !err, "WRITE %d succeeded after an error", s);
			break;
		case IBV_WC_REM_ACCESS_ERR:
			EXPECT(st, !err && m.s1 > m.d0, "WRITE %d: remote access "
			       "error, but no rereg began while it was under "
			       "way (%llu returned before it)", s, ull(m.d0));
			err = true;
			straddled++;
			break;
		case IBV_WC_WR_FLUSH_ERR:
			EXPECT(st, err, "WRITE %d flushed with no error before it",
			       s);
			flushed++;
			break;
		default:
			EXPECT(st, false, "WRITE %d: %s", s,
			       ibv_wc_status_str(wc.status));
			break;
		}
	}

	// One round: its messages posted (8 in flight), completed (after an
	// error: the rest flushed, the pair reconnected, on with the next
	// slot), then checked. False if the thread must stop.
	bool run_round(uint64_t round)
	{
		RoundRec rec[kMsgs];
		int posted = 0, inflight = 0, next_done = 0;
		bool err = false;
		Pair &p = r.p;

		for (;;) {
			while (!err && posted < kMsgs && inflight < kDepth &&
			       running()) {
				uint64_t g = round * kMsgs + posted;
				uint8_t *src = &p.a.buf[g % kRing * kSlot];
				pat_fill(src, kSlot, kTagRereg, g);
				rec[posted].d0 = r.done;
				int ret = post_wr(p.a.qp, IBV_WR_RDMA_WRITE, src,
						  kSlot, p.a.mr->lkey, posted,
						  uintptr_t(r.at(0) +
							    posted * kSlot),
						  r.rkey);
				EXPECT(st, ret == 0, "post WRITE %llu: %s",
				       ull(g), strerror(ret));
				if (ret)
					return false;
				rec[posted++].posted = true;
				inflight++;
			}
			if (!inflight) {
				if (!err && (posted == kMsgs || !running()))
					break;
				if (err) {
					if (!reconnect(st, p))
						return false;
					reconnects++;
					err = false;
					continue;
				}
			}
			ibv_wc wc[kDepth];
			int n = ibv_poll_cq(p.a.cq, kDepth, wc);
			EXPECT(st, n >= 0, "ibv_poll_cq: %d", n);
			for (int i = 0; i < n; i++)
				on_wc(wc[i], rec, next_done, err);
			if (g_stop)
				return false;
			if (n > 0) {
				inflight -= n;
				st.tick();
				continue;
			}
			if (st.stalled()) {
				EXPECT(st, false, "no completion for %lld s with "
				       "%d WRITEs in flight",
				       (long long)g_stall_ms / 1000, inflight);
				return false;
			}
			usleep(200);
		}
		check_round(round, rec);
		rounds++;
		st.ops += posted;
		return !g_stop;
	}

	void run()
	{
		for (uint64_t i = 0; running() && run_round(i); i++)
			;
		if (!g_stop)
			EXPECT(st, ok[0] + ok[1] > 0, "no WRITE completed");
		st.detail = strf("WRITEs completed %llu (in A %llu, in B %llu), "
				 "failed %llu (%llu straddling a rereg, %llu "
				 "flushed; %llu partly landed), %llu "
				 "reconnects, %llu rounds checked",
				 ull(ok[0] + ok[1]), ull(ok[0]), ull(ok[1]),
				 ull(straddled + flushed), ull(straddled),
				 ull(flushed), ull(partial), ull(reconnects),
				 ull(rounds));
	}
};

// --- Setup, the watchdog, the end --------------------------------------------

bool setup_pair(Pair &p, ibv_context *ctx)
{
	p.ctx = ctx;
	return setup(p);
}

bool setup_rereg(Stats &st, Rereg &r, ibv_context *ctx)
{
	if (!setup_pair(r.p, ctx))
		return false;
	void *m = mmap(nullptr, 3 * r.len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(st, m != MAP_FAILED, "mmap: %s", strerror(errno));
	if (m == MAP_FAILED)
		return false;
	r.region = static_cast<uint8_t *>(m);
	memset(r.region, 0, 2 * r.len);	// A and B have pages from the start
	r.mr = ibv_reg_mr(r.p.b.pd, r.at(0), r.len,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	EXPECT(st, r.mr, "reg rereg target: %s", strerror(errno));
	if (r.mr) {
		r.lkey = r.mr->lkey;
		r.rkey = r.mr->rkey;
	}
	return r.mr;
}

bool setup_import(Stats &st, Import &im, ibv_context *ctx)
{
	im.cmd_fd = ctx->cmd_fd;
	im.buf = static_cast<uint8_t *>(aligned_alloc(4096, 64 << 10));
	im.pd = ibv_alloc_pd(ctx);
	if (im.buf)
		memset(im.buf, 0, 64 << 10);
	im.mr = im.pd && im.buf ?
			ibv_reg_mr(im.pd, im.buf, 64 << 10,
				   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ) :
			nullptr;
	EXPECT(st, im.mr, "import PD and MR: %s", strerror(errno));
	return im.mr;
}

} // namespace
} // namespace xfer

using namespace xfer;

int main(int argc, char **argv)
{
	char *end = nullptr;
	long secs = argc == 3 ? strtol(argv[2], &end, 10) : 0;
	if (argc != 3 || *end || secs <= 0) {
		fprintf(stderr, "usage: sroce-stress DEV SECONDS\n");
		return 2;
	}
	if (const char *s = getenv("SROCE_TIME_SCALE"))
		g_stall_ms *= std::max(1, atoi(s));
	ibv_context *ctx = open_device(argv[1]);
	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	Stats main_st("main");
	ibv_device_attr_ex dx{};
	int ret = ibv_query_device_ex(ctx, nullptr, &dx);
	EXPECT(main_st, ret == 0, "query device: %s", strerror(ret));
	bool odp = dx.odp_caps.general_caps & IBV_ODP_SUPPORT;
	bool implicit = dx.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT;
	EXPECT(main_st, odp, "%s does not report ODP support", argv[1]);

	Pair streams[2];
	Windows win;
	Import im;
	Rereg rr;
	bool ok = !failures && !g_failures && setup_pair(streams[0], ctx) &&
		  setup_pair(streams[1], ctx) && setup_pair(win.p, ctx);
	if (ok) {
		win.mr = ibv_reg_mr(win.p.b.pd, win.p.b.buf.data(), kBuf,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		EXPECT(main_st, win.mr, "reg MR for windows: %s",
		       strerror(errno));
		ok = win.mr && setup_import(main_st, im, ctx) &&
		     setup_rereg(main_st, rr, ctx);
	}

	Stats st[] = { Stats("stream0"), Stats("stream1"), Stats("objects"),
		       Stats("mrs"), Stats("windows"), Stats("import"),
		       Stats("rereg-write"), Stats("rereg") };
	const int nthreads = sizeof(st) / sizeof(st[0]);
	std::vector<std::thread> threads;
	Stream s0{ streams[0], st[0], kTagStream };
	Stream s1{ streams[1], st[1], uint8_t(kTagStream + 1) };
	MrChurn mrs{ ctx, st[3], implicit };
	ReregWriter writer{ rr, st[6] };
	g_end = Clock::now() + std::chrono::seconds(secs);
	if (ok) {
		for (Stats &s : st)
			s.tick();
		auto start = [&](Stats &s, auto fn) {
			threads.emplace_back([&s, fn] {
				fn();
				s.done = true;
			});
		};
		start(st[0], [&] { s0.run(); });
		start(st[1], [&] { s1.run(); });
		start(st[2], [&] { churn_objects(ctx, st[2]); });
		start(st[3], [&] { mrs.run(); });
		start(st[4], [&] { window_thread(win, st[4]); });
		start(st[5], [&] { import_thread(im, st[5]); });
		start(st[6], [&] { writer.run(); });
		start(st[7], [&] { rereg_thread(rr, st[7]); });

		// The watchdog: a thread without progress for the stall limit
		// fails the run; one that does not end in time after the end
		// (or a failure) leaves the process to exit without cleanup.
		bool reported[nthreads]{};
		int64_t ending = 0;
		for (;;) {
			bool all = true;
			for (Stats &s : st)
				all = all && s.done;
			if (all)
				break;
			usleep(100000);
			for (int i = 0; i < nthreads; i++)
				if (!st[i].done && st[i].stalled() &&
				    !reported[i]) {
					reported[i] = true;
					failf(st[i], __LINE__, "no progress for "
					      "%lld s", (long long)(now_ms() -
							       st[i].last) / 1000);
				}
			if (!ending && (g_stop || Clock::now() >= g_end))
				ending = now_ms();
			if (ending && now_ms() - ending > g_stall_ms + 10000) {
				for (Stats &s : st)
					if (!s.done)
						fprintf(stderr, "FAIL %s: still "
							"running %lld s after the "
							"end\n", s.name,
							(long long)(now_ms() -
								    ending) /
								1000);
				fflush(stdout);
				_exit(1);
			}
		}
		for (std::thread &t : threads)
			t.join();
	}

	// Everything made above, destroyed: each destroy returns 0.
	for (Pair &p : streams)
		teardown(p);
	if (win.mr)
		EXPECT(main_st, ibv_dereg_mr(win.mr) == 0, "dereg window MR");
	teardown(win.p);
	if (im.mr)
		EXPECT(main_st, ibv_dereg_mr(im.mr) == 0, "dereg import MR");
	if (im.pd)
		EXPECT(main_st, ibv_dealloc_pd(im.pd) == 0, "dealloc import PD");
	free(im.buf);
	if (rr.mr)
		EXPECT(main_st, ibv_dereg_mr(rr.mr) == 0, "dereg rereg MR");
	if (rr.region)
		munmap(rr.region, 3 * rr.len);
	teardown(rr.p);
	EXPECT(main_st, ibv_close_device(ctx) == 0, "close device");

	if (ok)
		for (Stats &s : st)
			printf("%-12s %8llu ops %3llu failures  %s\n", s.name,
			       ull(s.ops.load()), ull(s.fails.load()),
			       s.detail.c_str());
	int total = failures + g_failures;
	if (!total)
		printf("stress ok\n");
	return total ? 1 : 0;
}
