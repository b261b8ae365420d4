// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests for what a security review of the kernel found. Each is
// a request that must be refused, checked the way its user sees it: the
// status that comes back, and every byte of the memory the request named
// (and of the guard pages around it) as it was before, on both sides.
// Each has a control that shows the same path working when the request is
// valid. What they check: an atomic through a zero-based window, unaligned
// where it really lands; an XRC send QP connected to itself, which must not
// answer its own requests; XRC READs longer than 64 packets; an ODP MR with
// IBV_ACCESS_HUGETLB over 1 TiB; a message of 2^22 packets; an XRC receive
// QP whose requests reach another context's memory that cannot be faulted
// in (its verbs must not wait for it).
#include "xfer.h"

#include "role.h"
#include "stallfs.h"
#include "tasks.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <fcntl.h>
#include <iterator>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <thread>

namespace xfer {
namespace {

const size_t kPage = 4096;	// the window offsets below (0xffd) assume it

// Byte @i of pattern @seed (seeds below 255): never 0, unlike any other
// seed's at every position (so each byte a request lands shows), and
// with no period (murmur3's finalizer: a packet at another offset shows).
uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t h = uint32_t(i);

	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return uint8_t(1 + (h % 255 + seed) % 255);
}

// Up to 8 of the @n bytes at @p, in hex.
std::string hex(const uint8_t *p, size_t n)
{
	std::string s;
	char b[4];

	for (size_t i = 0; i < n && i < 8; i++) {
		snprintf(b, sizeof(b), "%02x", p[i]);
		s += b;
	}
	return s;
}

// @now must hold the bytes of @was. If not, say how many bytes differ,
// where the first one is (as an offset from @base, the start of the
// registered buffer in @was) and what it holds instead of what it held.
void expect_same(const char *what, const uint8_t *now,
		 const std::vector<uint8_t> &was, long base)
{
	size_t first = was.size(), n = 0;

	for (size_t i = 0; i < was.size(); i++) {
		if (now[i] == was[i])
			continue;
		first = std::min(first, i);
		n++;
	}
	CHECK(!n, "%s: %zu bytes differ, the first at offset %ld of the "
	      "registered buffer: %s, expected %s", what, n,
	      long(first) - base, hex(now + first, was.size() - first).c_str(),
	      hex(was.data() + first, was.size() - first).c_str());
}

// A registered buffer between two guard pages (mapped, not registered),
// the whole mapping filled with a pattern: what a refused request must
// leave as it was, guards included.
struct Guarded {
	uint8_t *map = nullptr;	// guard page, body, guard page
	uint8_t *body = nullptr;
	size_t len = 0;		// of the body
	ibv_mr *mr = nullptr;

	Guarded() = default;
	Guarded(const Guarded &) = delete;
	Guarded &operator=(const Guarded &) = delete;

	bool open(ibv_pd *pd, size_t n, int access, uint32_t seed)
	{
		len = n;
		map = map_anon(size());
		if (!map)
			return false;
		body = map + kPage;
		for (size_t i = 0; i < size(); i++)
			map[i] = pat(seed, i);
		mr = ibv_reg_mr(pd, body, len, access);
		CHECK(mr, "reg MR of %zu bytes, access 0x%x: %s", len, access,
		      strerror(errno));
		return mr;
	}

	size_t size() const { return len + 2 * kPage; }

	std::vector<uint8_t> snap() const { return { map, map + size() }; }

	// The mapping, guards included, holds @want.
	void expect(const char *what, const std::vector<uint8_t> &want) const
	{
		expect_same(what, map, want, kPage);
	}

	~Guarded()
	{
		int ret = mr ? ibv_dereg_mr(mr) : 0;

		CHECK(ret == 0, "dereg MR: %s", strerror(ret));
		if (map)
			munmap(map, size());
	}
};

// Waits up to 10 s (times time_scale()) for one completion on @cq.
bool wait_cq(ibv_cq *cq, ibv_wc &wc)
{
	for (long i = 0; i < 10000 * time_scale(); i++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n == 1)
			return true;
		CHECK(n == 0, "ibv_poll_cq returned %d", n);
		usleep(1000);
	}
	CHECK(false, "no completion within %ld s", 10 * time_scale());
	return false;
}

// The next completion on @cq is @id's, with @status; else say what came.
// Return: the completion in @wc, and whether it was as expected.
bool expect_cq(ibv_cq *cq, uint64_t id, ibv_wc_status status,
	       const char *what, ibv_wc &wc)
{
	wc = {};
	if (!wait_cq(cq, wc))
		return false;
	CHECK(wc.wr_id == id && wc.status == status,
	      "%s: completion wr_id %llu status %s, expected wr_id %llu "
	      "status %s", what, (unsigned long long)wc.wr_id,
	      ibv_wc_status_str(wc.status), (unsigned long long)id,
	      ibv_wc_status_str(status));
	return wc.wr_id == id && wc.status == status;
}

// A signaled WR of @op over @sge to @raddr/@rkey; an atomic adds 2^24.
ibv_send_wr remote_wr(ibv_sge *sge, ibv_wr_opcode op, uint64_t id,
		      uint64_t raddr, uint32_t rkey)
{
	ibv_send_wr wr = one_sge_wr(sge, op, id);

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1 << 24;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return wr;
}

// ---- mw_atomic_unaligned ----

// Does the device do RC atomics on ODP MRs (ibv_query_device_ex)?
bool odp_rc_atomics(ibv_context *ctx)
{
	ibv_device_attr_ex ax{};

	if (ibv_query_device_ex(ctx, nullptr, &ax))
		return false;
	return (ax.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
	       (ax.odp_caps.per_transport_caps.rc_odp_caps &
		IBV_ODP_SUPPORT_ATOMIC);
}

// An atomic of a sub-case: its opcode, its remote address (an offset for
// a zero-based window), what FETCH_ADD adds. A CMP_SWP compares with what
// is there, so that were it done, it would change the memory.
struct Atom {
	ibv_wr_opcode op;
	uint64_t raddr;
	uint64_t add;
	const char *name;
};

// A new window of @type over [@wva, @wva + 16) of @mr, bound with @access
// on b's QP (ibv_bind_mw for type 1, IBV_WR_BIND_MW for type 2); its key in
// @key. Return: the window, or nullptr (said, and the pair reconnected).
ibv_mw *bind_window(Pair &p, ibv_mr *mr, ibv_mw_type type, uint64_t wva,
		    unsigned access, uint32_t &key)
{
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, type);
	ibv_wc wc{};
	int ret;

	CHECK(mw, "alloc type %d MW: %s", type, strerror(errno));
	if (!mw)
		return nullptr;
	if (type == IBV_MW_TYPE_1) {
		ibv_mw_bind b{};
		b.wr_id = 50;
		b.send_flags = IBV_SEND_SIGNALED;
		b.bind_info = { mr, wva, 16, access };
		ret = ibv_bind_mw(p.b.qp, mw, &b);
		key = mw->rkey;
	} else {
		key = ibv_inc_rkey(mw->rkey);
		ret = post_bind_mw(p, mw, key, mr, wva, 16, access, 50);
	}
	CHECK(ret == 0, "post bind: %s", strerror(ret));
	if (ret == 0 && poll_one(p.b, wc)) {
		CHECK(wc.status == IBV_WC_SUCCESS, "bind of a type %d window "
		      "at page+%#llx, access 0x%x: %s", type,
		      (unsigned long long)(wva % kPage), access,
		      ibv_wc_status_str(wc.status));
		if (wc.status == IBV_WC_SUCCESS)
			return mw;
	}
	ibv_dealloc_mw(mw);
	restate(p);
	return nullptr;
}

// @a from a's QP through a new window (see bind_window), which is gone
// afterwards; @touched is the address @a would touch. The value fetched
// lands in a's first 8 bytes. Return: the atomic's status.
ibv_wc_status window_atomic(Pair &p, ibv_mr *mr, ibv_mw_type type,
			    uint64_t wva, unsigned access, const Atom &a,
			    uint64_t touched)
{
	uint32_t key = 0;
	ibv_mw *mw = bind_window(p, mr, type, wva, access, key);
	uint64_t cmp = a.add, swap = 0;
	ibv_wc wc{};

	if (!mw)
		return IBV_WC_GENERAL_ERR;
	if (a.op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		memcpy(&cmp, reinterpret_cast<const void *>(touched), 8);
		swap = ~cmp;
	}
	post_atomic(p.a, a.op, 60, a.raddr, key, cmp, swap);
	bool got = poll_one(p.a, wc);
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	return got ? wc.status : IBV_WC_GENERAL_ERR;
}

// @a through a window at @wva must be refused as an invalid request: the
// 8 bytes it would touch, at @touched, are not aligned in memory. Not one
// byte of @g's mapping, guards included, nor of a's result changed.
void expect_refused(Pair &p, const Guarded &g, ibv_mw_type type,
		    uint64_t wva, unsigned access, const Atom &a,
		    uint64_t touched, const char *half)
{
	const std::vector<uint8_t> was = g.snap();
	uint64_t res0, res;
	char what[160];

	snprintf(what, sizeof(what), "%s, type %d %swindow at page+%#llx, %s",
		 half, type, access & IBV_ACCESS_ZERO_BASED ? "zero-based " : "",
		 (unsigned long long)(wva % kPage), a.name);
	// The result bytes: 0, as no 8 bytes of the pattern are.
	memset(&p.a.buf[0], 0, 8);
	memcpy(&res0, &p.a.buf[0], 8);
	expect_eq_status(window_atomic(p, g.mr, type, wva, access, a, touched),
			 IBV_WC_REM_INV_REQ_ERR, what);
	g.expect(what, was);
	memcpy(&res, &p.a.buf[0], 8);
	CHECK(res == res0, "%s: the requester's result bytes hold %#018llx, "
	      "expected %#018llx as before", what, (unsigned long long)res,
	      (unsigned long long)res0);
	restate(p);
}

// The control: through a zero-based window at @wva, aligned in memory, a
// FETCH_ADD of 5 at offset 0 completes, fetches the 8 bytes at @wva and
// adds 5 to them; no other byte of @g's mapping changes.
void expect_aligned(Pair &p, const Guarded &g, ibv_mw_type type,
		    uint64_t wva, unsigned access, const char *half)
{
	const Atom a = { IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 5,
			 "FETCH_ADD of 5 at offset 0 (control)" };
	std::vector<uint8_t> want = g.snap();
	uint64_t old, sum, got;
	char what[160];

	snprintf(what, sizeof(what), "%s, type %d zero-based window at "
		 "page+%#llx, %s", half, type, (unsigned long long)(wva % kPage),
		 a.name);
	memcpy(&old, reinterpret_cast<const void *>(wva), 8);
	sum = old + 5;
	memcpy(&want[wva - uintptr_t(g.map)], &sum, 8);
	ibv_wc_status st = window_atomic(p, g.mr, type, wva, access, a, wva);
	expect_eq_status(st, IBV_WC_SUCCESS, what);
	memcpy(&got, &p.a.buf[0], 8);
	CHECK(got == old, "%s: fetched %#018llx, expected %#018llx", what,
	      (unsigned long long)got, (unsigned long long)old);
	g.expect(what, want);
	if (st != IBV_WC_SUCCESS)
		restate(p);
}

// One half: b's buffer of 4 pages (between guards), registered pinned or
// ODP (@odp), with windows of both types over the end of its second page.
void window_atomics(Pair &p, const char *half, int odp)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_MW_BIND;
	const unsigned zb = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_ATOMIC |
			    IBV_ACCESS_REMOTE_WRITE;
	const Atom unaligned[] = {
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, "FETCH_ADD of 0 at 0" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 1 << 24,
		  "FETCH_ADD of 2^24 at 0" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 0, 0, "CMP_SWP at 0" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 8, 0, "CMP_SWP at 8" },
	};
	Guarded g;

	if (!g.open(p.b.pd, 4 * kPage, access | odp, 0x11))
		return;
	const uint64_t page = uintptr_t(g.body) + kPage;
	for (ibv_mw_type type : { IBV_MW_TYPE_1, IBV_MW_TYPE_2 }) {
		// Zero-based at page + 0xffd: offset 0 is 8 bytes across the
		// page boundary, offset 8 is page + 0x1005.
		for (const Atom &a : unaligned)
			expect_refused(p, g, type, page + 0xffd, zb, a,
				       page + 0xffd + a.raddr, half);
		// Not zero-based: the window's own address, as unaligned.
		const Atom va = { IBV_WR_ATOMIC_FETCH_AND_ADD, page + 0xffd,
				  1 << 24, "FETCH_ADD of 2^24 at its address" };
		expect_refused(p, g, type, page + 0xffd,
			       zb & ~unsigned(IBV_ACCESS_ZERO_BASED), va,
			       page + 0xffd, half);
		expect_aligned(p, g, type, page + 0xff8, zb, half);
	}
}

// An atomic through a zero-based window is checked for 8-byte alignment
// on the address it touches, not on the offset it names: a window bound at
// page + 0xffd makes offset 0 the 8 bytes across a page boundary, and
// offset 8 page + 0x1005. FETCH_ADD (of 0: only the result would show; of
// 2^24) and CMP_SWP are each refused as invalid requests (REM_INV_REQ_ERR)
// with no byte of the buffer, its guard pages or the requester's result
// changed. Through a window not zero-based the same address is refused
// too; a zero-based window at page + 0xff8 does its atomic (the control).
// Pinned and ODP MRs; type 1 and type 2 windows.
void t_mw_atomic_unaligned(Pair &p)
{
	window_atomics(p, "pinned MR", 0);
	if (odp_rc_atomics(p.ctx))
		window_atomics(p, "ODP MR", IBV_ACCESS_ON_DEMAND);
	else
		fprintf(stderr, "ODP half not run: the device reports no ODP "
			"RC atomics\n");
}

// ---- XRC ----

// The XRC domain of file @fd in @ctx (-1: a domain of its own), made if
// none is.
ibv_xrcd *open_xrcd(ibv_context *ctx, int fd)
{
	ibv_xrcd_init_attr xa{};

	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = fd;
	xa.oflags = O_CREAT;
	ibv_xrcd *xrcd = ibv_open_xrcd(ctx, &xa);
	CHECK(xrcd, "open XRCD: %s", strerror(errno));
	return xrcd;
}

// An XRC SRQ of 16 WQEs of one SGE in @xrcd, of @pd, completing in @cq.
ibv_srq *xrc_srq(ibv_context *ctx, ibv_xrcd *xrcd, ibv_pd *pd, ibv_cq *cq)
{
	ibv_srq_init_attr_ex sa{};

	sa.attr = { 16, 1, 0 };
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.xrcd = xrcd;
	sa.cq = cq;
	sa.pd = pd;
	ibv_srq *srq = ibv_create_srq_ex(ctx, &sa);
	CHECK(srq, "create XRC SRQ: %s", strerror(errno));
	return srq;
}

// An XRC receive QP of @ctx in XRC domain @xrcd.
ibv_qp *xrc_recv(ibv_context *ctx, ibv_xrcd *xrcd)
{
	ibv_qp_init_attr_ex ia{};

	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = xrcd;
	ibv_qp *qp = ibv_create_qp_ex(ctx, &ia);
	CHECK(qp, "create XRC_RECV QP: %s", strerror(errno));
	return qp;
}

// An XRC target: an XRC domain, an XRC SRQ of it (in a PD, completing in a
// CQ) and an XRC receive QP of the domain.
struct XrcTarget {
	ibv_xrcd *xrcd = nullptr;
	ibv_srq *srq = nullptr;
	ibv_qp *qp = nullptr;
	uint32_t srqn = 0;

	XrcTarget() = default;
	XrcTarget(const XrcTarget &) = delete;
	XrcTarget &operator=(const XrcTarget &) = delete;

	bool open(ibv_context *ctx, ibv_pd *pd, ibv_cq *cq)
	{
		xrcd = open_xrcd(ctx, -1);
		srq = xrcd ? xrc_srq(ctx, xrcd, pd, cq) : nullptr;
		qp = srq ? xrc_recv(ctx, xrcd) : nullptr;
		int ret = qp ? ibv_get_srq_num(srq, &srqn) : 0;
		CHECK(ret == 0, "ibv_get_srq_num: %s", strerror(ret));
		return qp && ret == 0;
	}

	~XrcTarget()
	{
		if (qp)
			CHECK(ibv_destroy_qp(qp) == 0, "destroy XRC_RECV QP");
		if (srq)
			CHECK(ibv_destroy_srq(srq) == 0, "destroy XRC SRQ");
		if (xrcd)
			CHECK(ibv_close_xrcd(xrcd) == 0, "close XRCD");
	}
};

// The RC transport attributes of a connection: normal ones, and ones with
// which a request nobody answers fails in milliseconds (a 4 ms timeout,
// one retry, no RNR retry).
struct Transport {
	uint8_t timeout, retry_cnt, rnr_retry;
};
const Transport kNormal = { scaled_qp_timeout(), 7, 7 },
		kQuick = { 10, 1, 0 };

// An XRC send QP of a's PD, completing in a's CQ; it has no receive queue.
ibv_qp *xrc_ini(Pair &p)
{
	ibv_qp_init_attr_ex ia{};

	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = ia.recv_cq = p.a.cq;
	ia.cap = { 16, 0, 1, 0, 0 };
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = p.a.pd;
	ibv_qp *qp = ibv_create_qp_ex(p.ctx, &ia);
	CHECK(qp, "create XRC_SEND QP: %s", strerror(errno));
	return qp;
}

// Take XRC QP @qp (send or receive) from RESET to RTS, connected to QP
// @dest of this device (its own number: to itself), as connect() does. The
// masks are RC's: ib_uverbs drops the attributes an XRC half has not.
bool xrc_connect(Pair &p, ibv_qp *qp, uint32_t dest, const Transport &t)
{
	int ret = qp_to_rts(p, qp, dest, dest * 7 & 0xffffff, true, t.timeout,
			    t.retry_cnt, t.rnr_retry);
	CHECK(ret == 0, "connecting XRC QP 0x%x to 0x%x: %s", qp->qp_num, dest,
	      strerror(ret));
	return ret == 0;
}

// Post @op on XRC send QP @qp: @len bytes at the start of @loc, to @rem at
// offset @roff (a SEND names no memory there), behind XRC SRQ @srqn.
int xrc_post(ibv_qp *qp, ibv_wr_opcode op, uint64_t id, const Guarded &loc,
	     uint32_t len, const Guarded &rem, size_t roff, uint32_t srqn)
{
	ibv_sge sge = { uintptr_t(loc.body), len, loc.mr->lkey };
	ibv_send_wr wr = remote_wr(&sge, op, id, uintptr_t(rem.body + roff),
				   rem.mr->rkey), *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(qp, &wr, &bad);
}

// Post a receive of the first page of @g to @srq, as @id.
bool srq_recv(ibv_srq *srq, const Guarded &g, uint64_t id)
{
	ibv_sge sge = { uintptr_t(g.body), uint32_t(kPage), g.mr->lkey };
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int ret = ibv_post_srq_recv(srq, &wr, &bad);
	CHECK(ret == 0, "post SRQ receive: %s", strerror(ret));
	return ret == 0;
}

// What xrc_ini_no_requests's requests name, all in a's PD: the target
// buffer, the requester's own buffer, the SRQ's receive buffer.
struct XrcBufs {
	Guarded tgt, loc, rbuf;

	bool open(ibv_pd *pd)
	{
		const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		return tgt.open(pd, 4 * kPage, all, 0x31) &&
		       loc.open(pd, 4 * kPage, IBV_ACCESS_LOCAL_WRITE, 0x47) &&
		       rbuf.open(pd, 4 * kPage, IBV_ACCESS_LOCAL_WRITE, 0x5c);
	}
};

// The control: an XRC send QP connected to the real target delivers a
// SEND into the SRQ's receive buffer and a WRITE into the target buffer.
// The requests below are posted the same way: only their self-answer is
// refused.
void xrc_control(Pair &p, XrcTarget &x, XrcBufs &b)
{
	ibv_qp *ini = xrc_ini(p);
	ibv_wc wc;

	if (!ini)
		return;
	if (xrc_connect(p, ini, x.qp->qp_num, kNormal) &&
	    xrc_connect(p, x.qp, ini->qp_num, kNormal) &&
	    srq_recv(x.srq, b.rbuf, 300)) {
		CHECK(xrc_post(ini, IBV_WR_SEND, 301, b.loc, 1000, b.tgt, 0,
			       x.srqn) == 0, "post SEND");
		expect_cq(p.a.cq, 301, IBV_WC_SUCCESS, "XRC SEND (control)", wc);
		if (expect_cq(p.b.cq, 300, IBV_WC_SUCCESS,
			      "its receive in the SRQ", wc))
			CHECK(wc.byte_len == 1000, "received %u bytes, expected "
			      "1000", wc.byte_len);
		CHECK(!memcmp(b.rbuf.body, b.loc.body, 1000), "the SEND's bytes "
		      "are not in the SRQ's receive buffer");
		CHECK(xrc_post(ini, IBV_WR_RDMA_WRITE, 302, b.loc, 4096, b.tgt,
			       kPage, x.srqn) == 0, "post WRITE");
		expect_cq(p.a.cq, 302, IBV_WC_SUCCESS, "XRC WRITE (control)", wc);
		CHECK(!memcmp(b.tgt.body + kPage, b.loc.body, 4096),
		      "the WRITE's bytes did not land");
	}
	CHECK(ibv_destroy_qp(ini) == 0, "destroy XRC_SEND QP");
}

// @op of @len bytes from a new XRC send QP connected to itself: nobody
// answers it, so it fails once its one retry timed out (RETRY_EXC_ERR).
// The target buffer, the requester's buffer and the SRQ's receive buffer
// are as they were, guards included, and the SRQ's receive is still
// posted (no completion in its CQ, b's).
void self_request(Pair &p, const XrcTarget &x, const XrcBufs &b,
		  ibv_wr_opcode op, uint32_t len, uint64_t id,
		  const char *what)
{
	ibv_qp *ini = xrc_ini(p);
	ibv_wc wc;

	if (!ini)
		return;
	if (xrc_connect(p, ini, ini->qp_num, kQuick)) {
		const std::vector<uint8_t> tgt = b.tgt.snap(),
					   loc = b.loc.snap(),
					   rbuf = b.rbuf.snap();
		CHECK(xrc_post(ini, op, id, b.loc, len, b.tgt, kPage,
			       x.srqn) == 0, "post %s", what);
		expect_cq(p.a.cq, id, IBV_WC_RETRY_EXC_ERR, what, wc);
		b.tgt.expect(what, tgt);
		b.loc.expect(what, loc);
		b.rbuf.expect(what, rbuf);
		int n = ibv_poll_cq(p.b.cq, 1, &wc);
		CHECK(n == 0, "%s: a completion in the SRQ's CQ (wr_id %llu, "
		      "%s): the request took its receive", what,
		      (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
	}
	CHECK(ibv_destroy_qp(ini) == 0, "destroy XRC_SEND QP");
}

// An XRC send QP (an initiator) has no responder: a request that reaches
// it, here its own through a connection to itself, is not answered.
// Before, it answered itself: a WRITE landed in its PD's memory, and a
// SEND (it has no receive queue) crashed the kernel. Each of WRITE, READ,
// FETCH_ADD and SEND, from a new QP, fails with RETRY_EXC_ERR, and lands
// nothing (see self_request). The requests name a real XRC SRQ of the same
// PD with a receive posted, which a responder could have taken. The
// control (xrc_control) shows the same QP setup delivering to a real
// XRC_RECV QP.
void t_xrc_ini_no_requests(Pair &p)
{
	XrcTarget x;
	XrcBufs b;

	if (!x.open(p.ctx, p.a.pd, p.b.cq) || !b.open(p.a.pd))
		return;
	xrc_control(p, x, b);
	if (!srq_recv(x.srq, b.rbuf, 310))
		return;
	self_request(p, x, b, IBV_WR_RDMA_WRITE, 4096, 311,
		     "WRITE to itself");
	self_request(p, x, b, IBV_WR_RDMA_READ, 4096, 312, "READ from itself");
	self_request(p, x, b, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 313,
		     "FETCH_ADD to itself");
	// Last: before the fix it crashed the kernel.
	self_request(p, x, b, IBV_WR_SEND, 1000, 314, "SEND to itself");
}

// One XRC READ of @len bytes from @src into @dst: it completes, and @dst
// holds @src's bytes where they belong and its own everywhere else (its
// guards too); @src is unchanged. Return: whether it completed.
bool xrc_read(Pair &p, ibv_qp *ini, const XrcTarget &x, const Guarded &src,
	      const Guarded &dst, size_t len, uint64_t id)
{
	std::vector<uint8_t> want = dst.snap();
	const std::vector<uint8_t> was = src.snap();
	const size_t mtu = size_t(128) << p.mtu;
	char what[96];
	ibv_wc wc;

	snprintf(what, sizeof(what), "XRC READ of %zu bytes (%zu packets of "
		 "%zu)", len, (len + mtu - 1) / mtu, mtu);
	std::copy(src.body, src.body + len, want.begin() + kPage);
	CHECK(xrc_post(ini, IBV_WR_RDMA_READ, id, dst, uint32_t(len), src, 0,
		       x.srqn) == 0, "post %s", what);
	bool ok = expect_cq(p.a.cq, id, IBV_WC_SUCCESS, what, wc);
	dst.expect(what, want);
	src.expect(what, was);
	return ok;
}

// An XRC READ whose response is longer than 64 packets (256 KiB and
// 1 MiB: 256 and 1024 packets at MTU 1024) completes, every byte where it
// belongs and nothing else of the requester's buffer or its guards
// touched; before, it failed after 64 packets. 4 KiB is the control. The
// memory read is an MR of the SRQ's PD (b's); the requester's is a's.
void t_xrc_read_long(Pair &p)
{
	const size_t lens[] = { 4096, 256 << 10, 1 << 20 };
	XrcTarget x;
	Guarded src, dst;

	if (!x.open(p.ctx, p.b.pd, p.b.cq) ||
	    !src.open(p.b.pd, 1 << 20,
		      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0x6b) ||
	    !dst.open(p.a.pd, 1 << 20, IBV_ACCESS_LOCAL_WRITE, 0x29))
		return;
	ibv_qp *ini = xrc_ini(p);
	bool ok = ini && xrc_connect(p, ini, x.qp->qp_num, kNormal) &&
		  xrc_connect(p, x.qp, ini->qp_num, kNormal);
	// Stop at the first failure: the QP is in error then.
	for (size_t i = 0; ok && i < std::size(lens); i++)
		ok = xrc_read(p, ini, x, src, dst, lens[i], 400 + i);
	if (ini)
		CHECK(ibv_destroy_qp(ini) == 0, "destroy XRC_SEND QP");
}

// ---- xrc_foreign_stall ----

// The other process's memory: the StallFs file (stallfs.h), mapped
// shared. Its first touch asks the file system for the page, and the
// server holds the read until the test releases it: the fault waits in D
// state, as any user's own FUSE server can make it wait.
const size_t kStallLen = StallFs::kLen;
// A time limit of @s seconds (times the time scale), in ms.
long scaled_ms(long s)
{
	return s * 1000 * time_scale();
}

// What the other process is asked over its socket, and what it answers.
enum ForeignOp : uint32_t {
	kForeignRecv,	// post a receive of @len bytes at @off as @id
	kForeignPoll,	// the completion of receive @id (past flushed ones)
	kForeignRead,	// @len bytes of its memory at @off (then the bytes)
	kForeignQuit,	// tear down and exit
};

struct ForeignCmd {
	uint32_t op, len;
	uint64_t off, id;
};

struct ForeignReply {
	int32_t ret;		// 0, or what failed
	uint32_t status;	// kForeignPoll: the completion's
	uint32_t byte_len;
	uint32_t rkey;		// the setup reply: its MR's
	uint64_t addr;		// and where its memory is
	uint32_t srqn;		// and its SRQ's number
	uint32_t pad;
};

// @n bytes from @fd within @ms (-1: no limit). False on time out, end of
// file or error.
bool read_all(int fd, void *buf, size_t n, long ms = -1)
{
	long end = ms < 0 ? -1 : now_ms() + ms;

	for (auto *b = static_cast<uint8_t *>(buf); n;) {
		if (!readable_by(fd, end))
			return false;
		ssize_t r = read(fd, b, n);
		if (r <= 0)
			return false;
		b += r;
		n -= size_t(r);
	}
	return true;
}

bool write_all(int fd, const void *buf, size_t n)
{
	for (auto *b = static_cast<const uint8_t *>(buf); n;) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);
		if (r <= 0)
			return false;
		b += r;
		n -= size_t(r);
	}
	return true;
}

// The other process (a part, role.h): its own context of the device (its
// own uverbs file and memory), the XRC domain of the file @xrcd_path that
// the pair's context opened too, and in its own PD an XRC SRQ of that
// domain and an ODP MR over its own mapping of the StallFs file @file. It
// answers ForeignCmds on its socket @fd until kForeignQuit, touching no
// new memory meanwhile: a job faulting its mapping in holds its mmap lock
// for as long as the read is held. Return: its exit status.
int foreign_main(ibv_device *dev, const std::string &xrcd_path,
		 const std::string &file, int fd)
{
	int xfd = open(xrcd_path.c_str(), O_RDONLY);
	int ffd = open(file.c_str(), O_RDWR);
	void *m = ffd < 0 ? MAP_FAILED : mmap(nullptr, kStallLen,
					     PROT_READ | PROT_WRITE,
					     MAP_SHARED, ffd, 0);
	auto *map = m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
	ibv_context *ctx = map && xfd >= 0 ? ibv_open_device(dev) : nullptr;
	ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
	ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, nullptr, nullptr, 0) : nullptr;
	ibv_xrcd *xrcd = cq ? open_xrcd(ctx, xfd) : nullptr;
	ibv_srq *srq = xrcd ? xrc_srq(ctx, xrcd, pd, cq) : nullptr;
	ibv_mr *mr = nullptr;
	ForeignReply r{};
	ForeignCmd c;
	ibv_wc wc;

	CHECK(xfd >= 0, "other process: opening %s: %s", xrcd_path.c_str(),
	      strerror(errno));
	CHECK(map, "other process: mapping %s: %s", file.c_str(),
	      strerror(errno));
	CHECK(!map || cq, "other process: context, PD, CQ: %s",
	      strerror(errno));
	if (srq) {
		mr = ibv_reg_mr(pd, map, kStallLen,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
		CHECK(mr, "other process: ODP MR over the file's mapping: %s",
		      strerror(errno));
	}
	r.ret = mr && !ibv_get_srq_num(srq, &r.srqn) ? 0 : -1;
	r.rkey = mr ? mr->rkey : 0;
	r.addr = uintptr_t(map);
	write_all(fd, &r, sizeof(r));
	while (r.ret == 0 && read_all(fd, &c, sizeof(c)) &&
	       c.op != kForeignQuit) {
		r = {};
		if (c.op == kForeignRecv) {
			ibv_sge sge = { uintptr_t(map + c.off), c.len,
					mr->lkey };
			ibv_recv_wr rw{}, *bad;

			rw.wr_id = c.id;
			rw.sg_list = &sge;
			rw.num_sge = 1;
			r.ret = ibv_post_srq_recv(srq, &rw, &bad);
		} else if (c.op == kForeignPoll) {
			r.ret = -1;
			for (long i = 0; i < 10000 * time_scale(); i++) {
				int n = ibv_poll_cq(cq, 1, &wc);
				if (n == 1 && (wc.wr_id == c.id ||
					       wc.status != IBV_WC_WR_FLUSH_ERR)) {
					r.ret = wc.wr_id == c.id ? 0 : -2;
					r.status = wc.status;
					r.byte_len = wc.byte_len;
					break;
				}
				if (n == 0)
					usleep(1000);
			}
		}
		write_all(fd, &r, sizeof(r));
		if (c.op == kForeignRead)
			write_all(fd, map + c.off, c.len);
	}
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "other process: dereg the ODP MR");
	if (srq)
		CHECK(ibv_destroy_srq(srq) == 0, "other process: destroy SRQ");
	if (xrcd)
		CHECK(ibv_close_xrcd(xrcd) == 0, "other process: close XRCD");
	if (cq)
		CHECK(ibv_destroy_cq(cq) == 0, "other process: destroy CQ");
	if (pd)
		CHECK(ibv_dealloc_pd(pd) == 0, "other process: dealloc PD");
	if (ctx)
		ibv_close_device(ctx);
	if (map)
		munmap(map, kStallLen);
	return failures ? 1 : 0;
}

// The other process, seen from the pair's: its part, and what it said.
struct Foreign {
	Role r;
	ForeignReply setup{};

	bool start(ibv_device *dev, const std::string &xrcd_path,
		   const std::string &file)
	{
		bool ok = role_start(r, [&](int fd) {
			return foreign_main(dev, xrcd_path, file, fd);
		});

		CHECK(ok, "starting the other process: %s", strerror(errno));
		ok = ok && read_all(r.fd, &setup, sizeof(setup),
				    scaled_ms(60)) && setup.ret == 0;
		CHECK(ok, "the other process's setup failed");
		return ok;
	}

	// Ask @c; the answer in @r. Return: whether it came.
	bool ask(const ForeignCmd &c, ForeignReply &rep)
	{
		bool ok = write_all(r.fd, &c, sizeof(c)) &&
			  read_all(r.fd, &rep, sizeof(rep), scaled_ms(60));

		CHECK(ok, "the other process does not answer (op %u)", c.op);
		return ok;
	}

	bool recv(size_t off, uint32_t len, uint64_t id)
	{
		ForeignReply rep;

		if (!ask({ kForeignRecv, len, off, id }, rep))
			return false;
		CHECK(rep.ret == 0, "other process: post SRQ receive: %s",
		      strerror(rep.ret));
		return rep.ret == 0;
	}

	~Foreign()
	{
		ForeignCmd c = { kForeignQuit, 0, 0, 0 };

		if (r.pid < 0)
			return;
		write_all(r.fd, &c, sizeof(c));
		int status = role_end(r, scaled_ms(60));
		CHECK(status == 0, "the other process failed (status %d; -1: "
		      "still running %ld s after it was told to quit)", status,
		      60 * time_scale());
	}
};

// Answers the FUSE server's reads @ms after it starts, or when it goes,
// whatever the test's thread is doing then: a verb that waits in the fault
// (the bug) returns, and the test says how long it took.
class Watchdog {
public:
	Watchdog(StallFs &fs, long ms)
		: fs_(fs), t_([this, ms] {
			  std::unique_lock<std::mutex> l(m_);
			  cv_.wait_for(l, std::chrono::milliseconds(ms),
				       [this] { return stop_; });
			  fs_.release();
		  })
	{
	}

	~Watchdog()
	{
		{
			std::lock_guard<std::mutex> l(m_);
			stop_ = true;
		}
		cv_.notify_one();
		t_.join();
	}

private:
	StallFs &fs_;
	std::mutex m_;
	std::condition_variable cv_;
	bool stop_ = false;
	std::thread t_;
};

// Seconds since @t0 (CLOCK_MONOTONIC).
double since(const timespec &t0)
{
	timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return double(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
}

// A new XRC receive QP in @xrcd and an XRC send QP of a's PD with CQ @cq,
// connected to each other. Return: whether both were made (@tgt and @ini
// set to those made, to be destroyed).
bool xrc_two(Pair &p, ibv_xrcd *xrcd, ibv_cq *cq, ibv_qp *&tgt,
	     ibv_qp *&ini)
{
	ibv_qp_init_attr_ex ia{};

	tgt = xrc_recv(p.ctx, xrcd);
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap = { 16, 0, 1, 0, 0 };
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = p.a.pd;
	ini = tgt ? ibv_create_qp_ex(p.ctx, &ia) : nullptr;
	CHECK(!tgt || ini, "create XRC_SEND QP: %s", strerror(errno));
	return ini && xrc_connect(p, ini, tgt->qp_num, kNormal) &&
	       xrc_connect(p, tgt, ini->qp_num, kNormal);
}

// Post @op of 4 KiB from @loc: a SEND into a receive of @x's SRQ at @off
// of its memory, a WRITE to or a READ from @off through its rkey.
bool foreign_post(ibv_qp *ini, Foreign &x, const Guarded &loc,
		  ibv_wr_opcode op, size_t off, uint64_t id)
{
	if (op == IBV_WR_SEND && !x.recv(off, 4096, id))
		return false;
	ibv_sge sge = { uintptr_t(loc.body), 4096, loc.mr->lkey };
	ibv_send_wr wr = remote_wr(&sge, op, id, x.setup.addr + off,
				   x.setup.rkey),
		    *bad;
	wr.qp_type.xrc.remote_srqn = x.setup.srqn;
	int ret = ibv_post_send(ini, &wr, &bad);
	CHECK(ret == 0, "post opcode %d: %s", int(op), strerror(ret));
	return ret == 0;
}

// The stall, seen before a verb is judged: the FUSE server holds a read
// of the file (the first request's fault asked for it; @held once seen),
// and a worker of sroce's waits in D state in hmm_range_fault().
bool stall_seen(StallFs &fs, bool &held, const char *what)
{
	uint64_t off = 0;
	uint32_t len = 0;
	std::string one;

	if (!held) {
		held = fs.held_read(scaled_ms(30), &off, &len);
		CHECK(held, "%s: the FUSE server held no read of the other "
		      "process's file within %ld s", what, 30 * time_scale());
	}
	bool stalled = held && tasks::wait_until(scaled_ms(30), [&] {
		return tasks::stalled_workers(&one) >= 1;
	});
	CHECK(!held || stalled, "%s: no worker of sroce waits in D state in "
	      "hmm_range_fault within %ld s", what, 30 * time_scale());
	return stalled;
}

// @op (@what) into or out of @x's memory at @off, whose page cannot be
// had (the server holds its read), through a new XRC receive QP of the
// pair's context: once the stall is seen (and 300 ms more, times the time
// scale: the receive QP has met the missing page), that context's
// ibv_query_qp, ibv_modify_qp to the error state and ibv_destroy_qp of
// the QP each return within 2 s (times the time scale). Before, the QP's
// work copied under its lock and waited in the page fault until the read
// was answered, and so did each of them.
void stalled_request(Pair &p, ibv_xrcd *xrcd, Foreign &x, StallFs &fs,
		     bool &held, const Guarded &loc, ibv_wr_opcode op,
		     size_t off, uint64_t id, const char *what)
{
	const double limit = 2.0 * time_scale();
	ibv_cq *cq = ibv_create_cq(p.ctx, 16, nullptr, nullptr, 0);
	ibv_qp *tgt = nullptr, *ini = nullptr;
	ibv_qp_init_attr init;
	ibv_qp_attr a{};
	timespec t0;
	double s;

	CHECK(cq, "create CQ: %s", strerror(errno));
	if (cq && xrc_two(p, xrcd, cq, tgt, ini) &&
	    foreign_post(ini, x, loc, op, off, id) &&
	    stall_seen(fs, held, what)) {
		// The receive QP meets the missing page: RNR NAKs (a READ
		// waits), or before, its work waits in the fault.
		usleep(300000 * time_scale());
		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK(ibv_query_qp(tgt, &a, IBV_QP_STATE, &init) == 0,
		      "%s: query the XRC receive QP", what);
		s = since(t0);
		CHECK(s < limit, "%s: ibv_query_qp of the XRC receive QP took "
		      "%.1f s: it waited for the other process's memory",
		      what, s);
		a.qp_state = IBV_QPS_ERR;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK(ibv_modify_qp(tgt, &a, IBV_QP_STATE) == 0,
		      "%s: XRC receive QP to the error state", what);
		s = since(t0);
		CHECK(s < limit, "%s: ibv_modify_qp of the XRC receive QP "
		      "took %.1f s", what, s);
	}
	if (tgt) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK(ibv_destroy_qp(tgt) == 0, "%s: destroy the XRC receive "
		      "QP", what);
		s = since(t0);
		CHECK(s < limit, "%s: ibv_destroy_qp of the XRC receive QP "
		      "took %.1f s", what, s);
	}
	if (ini)
		CHECK(ibv_destroy_qp(ini) == 0, "destroy XRC_SEND QP");
	if (cq)
		CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
}

// @op of 4 KiB into or out of @x's memory at @off, now that its pages can
// be had: it completes (after RNR NAKs while a job faults the page in),
// and the bytes are where they belong, as the other process reads them;
// a READ's are the file's.
void foreign_request(Pair &p, ibv_xrcd *xrcd, Foreign &x, Guarded &loc,
		     ibv_wr_opcode op, size_t off, uint64_t id,
		     const char *what)
{
	ibv_cq *cq = ibv_create_cq(p.ctx, 16, nullptr, nullptr, 0);
	ibv_qp *tgt = nullptr, *ini = nullptr;
	std::vector<uint8_t> mem(4096);
	ForeignReply r;
	ibv_wc wc;

	CHECK(cq, "create CQ: %s", strerror(errno));
	for (size_t i = 0; i < 4096; i++)
		loc.body[i] = pat(uint32_t(id % 200 + 1), i);
	if (cq && xrc_two(p, xrcd, cq, tgt, ini) &&
	    foreign_post(ini, x, loc, op, off, id) &&
	    expect_cq(cq, id, IBV_WC_SUCCESS, what, wc)) {
		if (op == IBV_WR_SEND && x.ask({ kForeignPoll, 0, 0, id }, r))
			CHECK(r.ret == 0 && r.status == IBV_WC_SUCCESS &&
			      r.byte_len == 4096, "%s: its receive: %s, "
			      "status %s, %u bytes", what,
			      r.ret ? "none" : "completed",
			      ibv_wc_status_str(ibv_wc_status(r.status)),
			      r.byte_len);
		if (x.ask({ kForeignRead, 4096, off, 0 }, r) &&
		    read_all(x.r.fd, mem.data(), mem.size(), scaled_ms(60)))
			CHECK(!memcmp(mem.data(), loc.body, 4096), "%s: the "
			      "bytes differ (memory %s, requester's %s)", what,
			      hex(mem.data(), 8).c_str(),
			      hex(loc.body, 8).c_str());
		size_t i = 0;
		if (op == IBV_WR_RDMA_READ) {
			while (i < 4096 &&
			       loc.body[i] == StallFs::byte_at(off + i))
				i++;
			CHECK(i == 4096, "%s: byte %zu is %#x, not the file's "
			      "%#x", what, i, loc.body[i],
			      StallFs::byte_at(off + i));
		}
	}
	if (tgt)
		CHECK(ibv_destroy_qp(tgt) == 0, "destroy XRC_RECV QP");
	if (ini)
		CHECK(ibv_destroy_qp(ini) == 0, "destroy XRC_SEND QP");
	if (cq)
		CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
}

// The three stalled requests, then, the read answered, the three again.
void foreign_stall_steps(Pair &p, ibv_xrcd *xrcd, Foreign &x, StallFs &fs,
			 Guarded &loc)
{
	long long rnr = port_counter(p, "odp_rnr_nak_sent");
	long long jobs = port_counter(p, "odp_later_jobs");
	bool held = false;
	{
		// However the test goes, the read is answered 30 s after
		// the first request, or when the stalled steps end.
		Watchdog wd(fs, scaled_ms(30));

		stalled_request(p, xrcd, x, fs, held, loc, IBV_WR_SEND, 0, 500,
				"SEND into the other's SRQ");
		stalled_request(p, xrcd, x, fs, held, loc, IBV_WR_RDMA_WRITE,
				4 * kPage, 501, "WRITE into its memory");
		stalled_request(p, xrcd, x, fs, held, loc, IBV_WR_RDMA_READ,
				8 * kPage, 502, "READ of its memory");
	}
	foreign_request(p, xrcd, x, loc, IBV_WR_SEND, 12 * kPage, 510,
			"SEND, answered");
	foreign_request(p, xrcd, x, loc, IBV_WR_RDMA_WRITE, 4 * kPage, 511,
			"WRITE, answered");
	foreign_request(p, xrcd, x, loc, IBV_WR_RDMA_READ, 8 * kPage, 512,
			"READ, answered");
	CHECK(rnr >= 0 && port_counter(p, "odp_rnr_nak_sent") > rnr,
	      "no RNR NAK sent for memory not present (odp_rnr_nak_sent "
	      "%lld, then %lld)", rnr, port_counter(p, "odp_rnr_nak_sent"));
	CHECK(jobs >= 0 && port_counter(p, "odp_later_jobs") > jobs,
	      "no job faulted memory in beside (odp_later_jobs %lld, then "
	      "%lld)", jobs, port_counter(p, "odp_later_jobs"));
}

// An XRC receive QP belongs to its XRC domain: any process that opened
// the domain names its own SRQ, and so its own memory, in the requests
// the QP takes. Here another process (its own context of the device and
// its own memory) opens the pair's context's domain (by a file) and
// receives into ODP memory over the file of a FUSE server the test runs
// (StallFs, on the test's argument, an empty folder), which holds the
// read of the page: a fault on it waits in D state until the test
// answers. A SEND into its SRQ, a WRITE into its memory and a READ out of
// it reach the pair's context's XRC receive QP; once the stall is seen
// (the read held, a worker of sroce's in D state in hmm_range_fault),
// that context's ibv_query_qp, ibv_modify_qp and ibv_destroy_qp of the QP
// each return at once (stalled_request). Before, they waited for the
// read. Then the read is answered, and the same three complete through a
// new receive QP, every byte where it belongs, after the receive QP's RNR
// NAKs (counted in odp_rnr_nak_sent) while jobs (odp_later_jobs) faulted
// the pages in beside.
void t_xrc_foreign_stall(Pair &p)
{
	char file[] = "/tmp/sroce-xrcd-XXXXXX";
	ibv_device_attr_ex ax{};
	StallFs fs;
	Guarded loc;
	int fd, err;

	if (ibv_query_device_ex(p.ctx, nullptr, &ax) ||
	    !(ax.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		skip("the device has no ODP");
		return;
	}
	CHECK(p.arg && *p.arg, "the argument: an empty folder to mount the "
	      "FUSE file system on");
	err = p.arg && *p.arg ? fs.mount(p.arg, scaled_ms(60)) : EINVAL;
	if (err == ENOENT || err == ENODEV) {
		skip("this kernel has no FUSE (CONFIG_FUSE_FS)");
		return;
	}
	CHECK(!err, "mounting StallFs on %s: %s", p.arg ? p.arg : "",
	      strerror(err));
	if (err || !loc.open(p.a.pd, 4096, IBV_ACCESS_LOCAL_WRITE, 0x3d))
		return;
	fd = mkstemp(file);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		return;
	ibv_xrcd *xrcd = open_xrcd(p.ctx, fd);
	if (xrcd) {
		Foreign x;

		if (x.start(p.ctx->device, file, fs.file())) {
			unlink(file);
			foreign_stall_steps(p, xrcd, x, fs, loc);
		}
	}
	unlink(file);
	if (xrcd)
		CHECK(ibv_close_xrcd(xrcd) == 0, "close XRCD");
	close(fd);
	CHECK(fs.unmount(), "unmounting StallFs, or its server's end");
}

// ---- odp_hugetlb_bound ----

const size_t kHuge = 2 << 20;

// Is the mapping that starts at @at backed by huge pages (in
// /proc/self/smaps, a hugetlbfs page size or a transparent huge page)?
bool huge_backed(const void *at)
{
	std::ifstream f("/proc/self/smaps");
	std::string line;
	bool in = false;

	while (std::getline(f, line)) {
		unsigned long long start;
		char dash;
		long kb;
		// A mapping's first line: "START-END perms ...".
		if (sscanf(line.c_str(), "%llx%c", &start, &dash) == 2 &&
		    dash == '-') {
			in = start == uintptr_t(at);
			continue;
		}
		if (in && (sscanf(line.c_str(), "AnonHugePages: %ld", &kb) == 1 ||
			   sscanf(line.c_str(), "KernelPageSize: %ld", &kb) == 1) &&
		    kb >= 2048)
			return true;
	}
	return false;
}

// Memory at @at (2 MiB aligned, inside a reservation) for 2 MiB, filled
// with a pattern: a hugetlbfs page if the system has one to give, else
// anonymous memory asking for a transparent huge page. Return: whether a
// huge page backs it; @mapped: whether it could be mapped (said if not).
bool map_huge(uint8_t *at, bool &mapped)
{
	const int rw = PROT_READ | PROT_WRITE,
		  fixed = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
	void *m = mmap(at, kHuge, rw, fixed | MAP_HUGETLB, -1, 0);

	if (m == MAP_FAILED) {
		m = mmap(at, kHuge, rw, fixed, -1, 0);
		if (m != MAP_FAILED)
			madvise(at, kHuge, MADV_HUGEPAGE);
	}
	mapped = m != MAP_FAILED;
	CHECK(mapped, "mmap 2 MiB at %p: %s", static_cast<void *>(at),
	      strerror(errno));
	if (!mapped)
		return false;
	for (size_t i = 0; i < kHuge; i++)
		at[i] = pat(0x83, i);
	return huge_backed(at);
}

// A 4 KiB RDMA WRITE into the 2 MiB at @r, through @mr: it lands, and no
// other byte of the 2 MiB changes. Memory with no huge page behind it
// breaks the promise IBV_ACCESS_HUGETLB makes: there the WRITE may be
// refused instead (REM_ACCESS_ERR), but then nothing lands.
void hugetlb_write(Pair &p, ibv_mr *mr, uint8_t *r, bool huge,
		   const char *what)
{
	const std::vector<uint8_t> was(r, r + kHuge);
	std::vector<uint8_t> want = was;
	ibv_wc wc{};

	fill(p.a, 0, 4096, 0x3d);
	std::copy(&p.a.buf[0], &p.a.buf[4096], want.begin() + 4096);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 4096, 77,
			uintptr_t(r + 4096), mr->rkey) == 0, "post WRITE");
	if (!poll_one(p.a, wc))
		return;
	if (wc.status == IBV_WC_SUCCESS) {
		expect_same(what, r, want, 0);
		return;
	}
	CHECK(!huge && wc.status == IBV_WC_REM_ACCESS_ERR, "%s: WRITE of 4 KiB "
	      "into %s: %s", what, huge ? "a huge page" : "small pages",
	      ibv_wc_status_str(wc.status));
	expect_same(what, r, was, 0);
	restate(p);
}

// An ODP MR with IBV_ACCESS_HUGETLB of @len bytes at @r: refused with
// EINVAL or EOPNOTSUPP, or made at a cost to the kernel under the bound
// explicit_bound sets (16 MiB), then a WRITE into it lands (hugetlb_write).
void hugetlb_reg(Pair &p, uint8_t *r, size_t len, bool huge)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND |
			   IBV_ACCESS_HUGETLB;
	char what[96];

	snprintf(what, sizeof(what), "ODP HUGETLB MR of %#zx bytes", len);
	long before = mem_available_kb();
	errno = 0;
	ibv_mr *mr = ibv_reg_mr(p.b.pd, r, len, access);
	int err = errno;
	long grew = before - mem_available_kb();
	if (!mr) {
		CHECK(err == EINVAL || err == EOPNOTSUPP, "%s: refused with %s, "
		      "expected success or EINVAL/EOPNOTSUPP (ENOMEM: the "
		      "kernel tried to allocate lists for the whole range)",
		      what, strerror(err));
		printf("    %s refused: %s\n", what, strerror(err));
		return;
	}
	CHECK(grew < 16 << 10, "%s: MemAvailable fell by %ld KiB at "
	      "registration", what, grew);
	hugetlb_write(p, mr, r, huge, what);
	int ret = ibv_dereg_mr(mr);
	CHECK(ret == 0, "%s: dereg: %s", what, strerror(ret));
}

// ODP MRs with IBV_ACCESS_HUGETLB of 2^40 bytes (the largest MR),
// 2^40 - 4 KiB and 2^40 - 2 MiB, over reserved address space, cost the
// kernel nothing up front, as explicit_bound checks without the flag:
// ib_core sized a huge-page range's pfn list in base pages (2 GiB for
// 2^40 bytes: over INT_MAX, a kvmalloc WARN; just under it for 2^40 -
// 2 MiB, 2 GiB allocated). Each is refused cleanly or made within the
// bound, and then a 4 KiB WRITE into its first 2 MiB, real memory, lands.
void t_odp_hugetlb_bound(Pair &p)
{
	const size_t span = size_t(1) << 40;
	void *m = mmap(nullptr, span + kHuge, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	bool mapped;

	CHECK(m != MAP_FAILED, "mmap 1 TiB: %s", strerror(errno));
	if (m == MAP_FAILED)
		return;
	uint8_t *r = reinterpret_cast<uint8_t *>(
		(uintptr_t(m) + kHuge - 1) & ~(kHuge - 1));
	bool huge = map_huge(r, mapped);
	if (mapped && !huge)
		fprintf(stderr, "note: no huge page behind %p (no hugetlbfs "
			"page, no THP): the WRITEs may be refused\n",
			static_cast<void *>(r));
	if (mapped)
		for (size_t len : { span, span - kPage, span - kHuge })
			hugetlb_reg(p, r, len, huge);
	munmap(m, span + kHuge);
}

// ---- read_too_many_packets ----

const size_t kGiB = size_t(1) << 30;

// An ODP MR over 1 GiB of anonymous memory reserved, not committed
// (MAP_NORESERVE): nothing of it resident but its first and last pages,
// which hold a pattern.
struct OdpGiB {
	uint8_t *m = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> first, last;	// what those pages hold
	size_t res = 0;				// pages resident, registered

	OdpGiB() = default;
	OdpGiB(const OdpGiB &) = delete;
	OdpGiB &operator=(const OdpGiB &) = delete;

	bool open(ibv_pd *pd, int access, uint32_t seed)
	{
		void *v = mmap(nullptr, kGiB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);
		CHECK(v != MAP_FAILED, "mmap 1 GiB: %s", strerror(errno));
		if (v == MAP_FAILED)
			return false;
		m = static_cast<uint8_t *>(v);
		for (size_t i = 0; i < kPage; i++) {
			m[i] = pat(seed, i);
			m[kGiB - kPage + i] = pat(seed + 1, i);
		}
		first.assign(m, m + kPage);
		last.assign(m + kGiB - kPage, m + kGiB);
		mr = ibv_reg_mr(pd, m, kGiB, access | IBV_ACCESS_ON_DEMAND);
		CHECK(mr, "reg a 1 GiB ODP MR: %s", strerror(errno));
		res = resident(m, kGiB);
		return mr;
	}

	// Nothing was read or written: the first and last pages hold their
	// pattern, and at most 4 more pages became resident.
	void expect_untouched(const char *what) const
	{
		size_t now = resident(m, kGiB);

		expect_same(what, m, first, 0);
		expect_same(what, m + kGiB - kPage, last,
			    -long(kGiB - kPage));
		CHECK(now <= res + 4, "%s: %zu more pages of 1 GiB became "
		      "resident (%zu were): the message was read or written",
		      what, now - res, res);
	}

	~OdpGiB()
	{
		int ret = mr ? ibv_dereg_mr(mr) : 0;

		CHECK(ret == 0, "dereg MR: %s", strerror(ret));
		if (m)
			munmap(m, kGiB);
	}
};

// @op of @len bytes from @l at @off to @r at @off; its completion status.
ibv_wc_status rdma(Pair &p, ibv_wr_opcode op, uint64_t id, const OdpGiB &l,
		   const OdpGiB &r, size_t off, size_t len)
{
	ibv_sge sge = { uintptr_t(l.m + off), uint32_t(len), l.mr->lkey };
	ibv_send_wr wr = remote_wr(&sge, op, id, uintptr_t(r.m + off),
				   r.mr->rkey), *bad;
	ibv_wc wc{};

	CHECK(ibv_post_send(p.a.qp, &wr, &bad) == 0, "post");
	if (!poll_one(p.a, wc))
		return IBV_WC_GENERAL_ERR;
	CHECK(wc.wr_id == id, "wr_id %llu, expected %llu",
	      (unsigned long long)wc.wr_id, (unsigned long long)id);
	return wc.status;
}

// @op of 2^30 bytes, a's whole MR from or to b's, at MTU 256: 2^22
// packets, too many for the PSN half-space comparison. The requester
// refuses it (LOC_LEN_ERR) before a byte of either MR is read or written.
void expect_too_long(Pair &p, ibv_wr_opcode op, const OdpGiB &l,
		     const OdpGiB &r, uint64_t id, const char *what)
{
	expect_eq_status(rdma(p, op, id, l, r, 0, kGiB), IBV_WC_LOC_LEN_ERR,
			 what);
	restate(p);
	std::string s = std::string(what) + ", requester's MR";
	l.expect_untouched(s.c_str());
	s = std::string(what) + ", responder's MR";
	r.expect_untouched(s.c_str());
}

// The control, at the same MTU: a 1 MiB READ and a 1 MiB WRITE (4096
// packets each) complete and land every byte.
void expect_mib(Pair &p, OdpGiB &l, OdpGiB &r)
{
	const size_t mib = 1 << 20;

	for (size_t i = 0; i < mib; i++) {
		r.m[i] = pat(0x71, i);
		l.m[mib + i] = pat(0x72, i);
	}
	const std::vector<uint8_t> rd(r.m, r.m + mib), wr(l.m + mib,
							  l.m + 2 * mib);
	expect_eq_status(rdma(p, IBV_WR_RDMA_READ, 3, l, r, 0, mib),
			 IBV_WC_SUCCESS, "READ of 1 MiB at MTU 256 (control)");
	expect_same("READ of 1 MiB at MTU 256", l.m, rd, 0);
	expect_eq_status(rdma(p, IBV_WR_RDMA_WRITE, 4, l, r, mib, mib),
			 IBV_WC_SUCCESS, "WRITE of 1 MiB at MTU 256 (control)");
	expect_same("WRITE of 1 MiB at MTU 256", r.m + mib, wr, 0);
}

// A READ and a WRITE of 2^30 bytes at path MTU 256 are 2^22 packets: the
// requester refuses each with LOC_LEN_ERR (a message that long breaks the
// PSN half-space comparison), and nothing lands or is even read: ODP MRs
// over 1 GiB of uncommitted memory on both sides keep their first and
// last pages and stay unpaged (mincore). A 1 MiB READ and WRITE at the
// same MTU work (the control: 2^22 - 1 packets take too long under TCG).
void t_read_too_many_packets(Pair &p)
{
	OdpGiB l, r;

	CHECK(p.mtu == IBV_MTU_256, "path MTU %d, expected 256's", p.mtu);
	if (!l.open(p.a.pd, IBV_ACCESS_LOCAL_WRITE, 0x61) ||
	    !r.open(p.b.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_WRITE, 0x65))
		return;
	expect_too_long(p, IBV_WR_RDMA_READ, l, r, 1, "READ of 2^30 bytes");
	expect_too_long(p, IBV_WR_RDMA_WRITE, l, r, 2, "WRITE of 2^30 bytes");
	expect_mib(p, l, r);
}

// read_too_many_packets's path MTU, whatever the command line says.
void mtu_256(Pair &p)
{
	p.mtu = IBV_MTU_256;
}

const Test tests[] = {
	{ "mw_atomic_unaligned", t_mw_atomic_unaligned, nullptr, false },
	{ "xrc_ini_no_requests", t_xrc_ini_no_requests, nullptr, false },
	{ "xrc_read_long", t_xrc_read_long, nullptr, false },
	{ "odp_hugetlb_bound", t_odp_hugetlb_bound, nullptr, false },
	{ "read_too_many_packets", t_read_too_many_packets, mtu_256, false },
	{ "xrc_foreign_stall", t_xrc_foreign_stall, nullptr, false },
};

} // namespace

const std::span<const Test> sec_tests(tests);

} // namespace xfer
