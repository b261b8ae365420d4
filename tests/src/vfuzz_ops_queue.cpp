// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-vfuzz's operations on queues: CQs (polled here and after every
// operation), SRQs, QPs of every type and their state transitions, and
// posting sends (ibv_post_send and ibv_wr_*) and receives.
#include "vfuzz.h"

#include <algorithm>
#include <unistd.h>

namespace vfuzz {

// ---- Completion queues -----------------------------------------------------

// A CQ size: mostly one the device takes.
static int cq_size(Rng &r)
{
	static const int good[] = { 1, 2, 16, 64, 256, 1000 };
	static const int bad[] = { 0, -1, 0x10001 };

	return r.pct(93) ? r.pick(good) : r.pick(bad);
}

Res op_create_cq(Fuzz &f, Rng &r)
{
	int s = f.cqs.free_slot(r);
	Cq c;

	if (s < 0)
		return skip();
	int cqe = cq_size(r);
	errno = 0;
	if (r.pct(35)) {
		ibv_cq_init_attr_ex a{};
		a.cqe = cqe;
		a.wc_flags = IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_BYTE_LEN |
			     (r.next() & IBV_WC_STANDARD_FLAGS);
		if (r.pct(10))
			a.wc_flags = r.next() & 0xfff;
		if (r.pct(20)) {
			a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
			a.flags = r.below(4);
		}
		f.arg("ex cqe %d wc_flags %#llx flags %#x", cqe,
		      ull(a.wc_flags), a.flags);
		c.ex = ibv_create_cq_ex(f.ctx, &a);
		c.cq = c.ex ? ibv_cq_ex_to_cq(c.ex) : nullptr;
		c.wc_flags = a.wc_flags;
	} else {
		f.arg("cqe %d", cqe);
		c.cq = ibv_create_cq(f.ctx, cqe, nullptr, nullptr, 0);
	}
	f.arg("as cq%d", s);
	if (c.cq)
		f.cqs.at[s] = c;
	return f.ptr(c.cq, "ibv_create_cq");
}

Res op_destroy_cq(Fuzz &f, Rng &r)
{
	int s = f.cqs.pick(r);

	if (s < 0)
		return skip();
	int users = f.cq_users(s);
	f.arg("cq%d (%d users)", s, users);
	int ret = ibv_destroy_cq(f.cqs.at[s].cq);
	if (!ret && users)
		f.fail("ibv_destroy_cq of cq%d succeeded with %d QPs or SRQs "
		       "completing in it", s, users);
	if (!ret)
		f.cqs.at[s] = {};
	return f.ret(ret, "ibv_destroy_cq");
}

Res op_resize_cq(Fuzz &f, Rng &r)
{
	int s = f.cqs.pick(r);

	if (s < 0)
		return skip();
	int cqe = cq_size(r);
	f.arg("cq%d to %d", s, cqe);
	int ret = ibv_resize_cq(f.cqs.at[s].cq, cqe);
	if (!ret && f.cqs.at[s].cq->cqe < cqe)
		f.fail("ibv_resize_cq(cq%d, %d) left it %d entries", s, cqe,
		       f.cqs.at[s].cq->cqe);
	return f.ret(ret, "ibv_resize_cq");
}

Res op_req_notify_cq(Fuzz &f, Rng &r)
{
	int s = f.cqs.pick(r);

	if (s < 0)
		return skip();
	int solicited = r.below(2);
	f.arg("cq%d solicited %d", s, solicited);
	return f.ret(ibv_req_notify_cq(f.cqs.at[s].cq, solicited),
		     "ibv_req_notify_cq");
}

const int kPollWaitMs = 10;

// Drains a CQ; if it was empty with WRs outstanding, waits a little for
// them first.
Res op_poll_cq(Fuzz &f, Rng &r)
{
	int s = f.cqs.pick(r);

	if (s < 0)
		return skip();
	bool ex = f.cqs.at[s].ex && r.pct(60);
	int n = f.drain(s, ex);
	for (int ms = 0; !n && ms < kPollWaitMs && f.cq_pending(s); ms++) {
		usleep(1000);
		n = f.drain(s, ex);
	}
	f.arg("cq%d%s: %d", s, ex ? " (extended)" : "", n);
	return ok();
}

// ---- Shared receive queues -------------------------------------------------

static ibv_srq_attr srq_attr(Rng &r)
{
	static const uint32_t wrs[] = { 1, 4, 16, 64 }, sges[] = { 1, 2, 4 };
	ibv_srq_attr a{};

	a.max_wr = r.pct(95) ? r.pick(wrs) : r.pick({ 0u, 0x4001u });
	a.max_sge = r.pct(95) ? r.pick(sges) : r.pick({ 0u, 33u });
	a.srq_limit = r.pct(70) ? 0 : r.below(a.max_wr + 2);
	return a;
}

static Res create_xrc_srq(Fuzz &f, Rng &r, int s, int p)
{
	int x = f.xrcds.pick(r), c = f.cqs.pick(r);

	if (x < 0 || c < 0)
		return skip();	// libibverbs would dereference them
	ibv_srq_init_attr_ex a{};
	a.attr = srq_attr(r);
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.xrcd = f.xrcds.at[x].xrcd;
	a.cq = f.cqs.at[c].cq;
	a.pd = f.pds.at[p].pd;
	f.arg("XRC pd%d xrcd%d cq%d max_wr %u max_sge %u as srq%d", p, x, c,
	      a.attr.max_wr, a.attr.max_sge, s);
	errno = 0;
	ibv_srq *srq = ibv_create_srq_ex(f.ctx, &a);
	Res res = f.ptr(srq, "ibv_create_srq_ex");
	if (!srq)
		return res;
	uint32_t srqn = 0;
	int ret = ibv_get_srq_num(srq, &srqn);
	if (ret)
		f.fail("ibv_get_srq_num of XRC srq%d: %d", s, ret);
	Srq &q = f.srqs.at[s];
	q = {};
	q.srq = srq;
	q.serial = ++f.serials;
	q.xrc = true;
	q.pd = p;
	q.cq = c;
	q.xrcd = x;
	q.srqn = srqn;
	q.max_sge = a.attr.max_sge;
	return res;
}

Res op_create_srq(Fuzz &f, Rng &r)
{
	int s = f.srqs.free_slot(r), p = f.pds.pick(r);

	if (s < 0 || p < 0)
		return skip();
	if (r.pct(30))
		return create_xrc_srq(f, r, s, p);
	ibv_srq_init_attr a{};
	a.attr = srq_attr(r);
	f.arg("pd%d max_wr %u max_sge %u limit %u as srq%d", p, a.attr.max_wr,
	      a.attr.max_sge, a.attr.srq_limit, s);
	errno = 0;
	ibv_srq *srq = ibv_create_srq(f.pds.at[p].pd, &a);
	if (srq) {
		Srq &q = f.srqs.at[s];
		q = {};
		q.srq = srq;
		q.serial = ++f.serials;
		q.pd = p;
		q.max_sge = a.attr.max_sge;
	}
	return f.ptr(srq, "ibv_create_srq");
}

Res op_destroy_srq(Fuzz &f, Rng &r)
{
	int s = f.srqs.pick(r);

	if (s < 0)
		return skip();
	int users = f.srq_users(s);
	f.arg("srq%d (%d QPs on it)", s, users);
	int ret = ibv_destroy_srq(f.srqs.at[s].srq);
	if (!ret && users)
		f.fail("ibv_destroy_srq of srq%d succeeded with %d QPs taking "
		       "from it", s, users);
	Res res = f.ret(ret, "ibv_destroy_srq");
	if (!ret)
		f.srq_gone(s);
	return res;
}

Res op_modify_srq(Fuzz &f, Rng &r)
{
	int s = f.srqs.pick(r);

	if (s < 0)
		return skip();
	ibv_srq_attr a = srq_attr(r);
	int mask = r.pct(70) ? IBV_SRQ_LIMIT :
		   r.pct(50) ? IBV_SRQ_MAX_WR :
		   r.pct(50) ? IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT :
			       int(r.below(8));
	f.arg("srq%d mask %#x max_wr %u limit %u", s, mask, a.max_wr,
	      a.srq_limit);
	return f.ret(ibv_modify_srq(f.srqs.at[s].srq, &a, mask),
		     "ibv_modify_srq");
}

Res op_query_srq(Fuzz &f, Rng &r)
{
	int s = f.srqs.pick(r);

	if (s < 0)
		return skip();
	ibv_srq_attr a{};
	int ret = ibv_query_srq(f.srqs.at[s].srq, &a);
	f.arg("srq%d: max_wr %u max_sge %u limit %u", s, a.max_wr, a.max_sge,
	      a.srq_limit);
	return f.ret(ret, "ibv_query_srq");
}

// Receive WRs, each with up to one SGE more than the queue takes.
struct RecvBatch {
	ibv_recv_wr wr[kMaxChain];
	ibv_sge sge[kMaxChain][kMaxSge];
	uint64_t room[kMaxChain];
	int n;
};

static void build_recvs(Fuzz &f, Rng &r, RecvBatch &b, uint32_t max_sge)
{
	b.n = r.pct(70) ? 1 : 2 + r.below(kMaxChain - 1);
	for (int i = 0; i < b.n; i++) {
		ibv_recv_wr &wr = b.wr[i];
		wr = {};
		wr.wr_id = f.new_wr_id();
		wr.num_sge = r.below(std::min(max_sge, kMaxSge - 1u) + 2);
		wr.sg_list = b.sge[i];
		wr.next = i + 1 < b.n ? &b.wr[i + 1] : nullptr;
		b.room[i] = 0;
		for (int j = 0; j < wr.num_sge; j++) {
			b.sge[i][j] = f.local_sge(r, 0);
			b.room[i] += b.sge[i][j].length;
		}
		f.arg("wr%llu %s", ull(wr.wr_id),
		      f.fmt_sges(b.sge[i], wr.num_sge).c_str());
	}
}

Res op_post_srq_recv(Fuzz &f, Rng &r)
{
	int s = f.srqs.pick(r);

	if (s < 0)
		return skip();
	RecvBatch b;
	f.arg("srq%d", s);
	build_recvs(f, r, b, f.srqs.at[s].max_sge);
	ibv_recv_wr *bad = nullptr;
	int ret = ibv_post_srq_recv(f.srqs.at[s].srq, b.wr, &bad);
	int n = posted(f, ret, bad, b.wr, b.n, "ibv_post_srq_recv");
	for (int i = 0; i < n; i++)
		f.track(Queue::Srq, s, b.wr[i].wr_id, -1, b.room[i]);
	return f.ret(ret, "ibv_post_srq_recv");
}

// ---- Queue pairs -----------------------------------------------------------

const ibv_qp_type kQpTypes[] = {
	IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UC,
	IBV_QPT_UD, IBV_QPT_UD, IBV_QPT_XRC_SEND, IBV_QPT_XRC_SEND,
	IBV_QPT_XRC_RECV,
};

static ibv_qp_cap qp_caps(Rng &r)
{
	static const uint32_t wrs[] = { 1, 4, 16, 64 }, sges[] = { 1, 2, 4 };
	static const uint32_t inl[] = { 0, 64, 256, 512 };
	ibv_qp_cap c{};

	c.max_send_wr = r.pct(95) ? r.pick(wrs) : r.pick({ 0u, 0x4001u });
	c.max_recv_wr = r.pct(95) ? r.pick(wrs) : r.pick({ 0u, 0x4001u });
	c.max_send_sge = r.pct(95) ? r.pick(sges) : r.pick({ 0u, 33u });
	c.max_recv_sge = r.pct(95) ? r.pick(sges) : r.pick({ 0u, 33u });
	c.max_inline_data = r.pct(95) ? r.pick(inl) : 513;
	return c;
}

const uint64_t kAllSendOps =
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
	IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV |
	IBV_QP_EX_WITH_ATOMIC_WRITE;

// The ibv_wr_* operations a QP of @type may post (IBTA: UC has no READ
// nor atomics, UD only sends).
static uint64_t type_send_ops(ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_UD:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	case IBV_QPT_UC:
		return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	default:
		return kAllSendOps;
	}
}

// send_ops_flags: some of what @type may post; now and then anything.
static uint64_t pick_send_ops(Rng &r, ibv_qp_type type)
{
	if (r.pct(85))
		return (type_send_ops(type) & r.next()) | IBV_QP_EX_WITH_SEND;
	return (r.next() & (kAllSendOps | IBV_QP_EX_WITH_TSO)) |
	       IBV_QP_EX_WITH_SEND;
}

static Res create_xrc_recv(Fuzz &f, Rng &r, int s)
{
	int x = f.xrcds.pick(r);

	if (x < 0)
		return skip();
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = f.xrcds.at[x].xrcd;
	f.arg("XRC_RECV xrcd%d as qp%d", x, s);
	errno = 0;
	ibv_qp *qp = ibv_create_qp_ex(f.ctx, &a);
	Res res = f.ptr(qp, "ibv_create_qp_ex");
	if (!qp)
		return res;
	Qp &q = f.qps.at[s];
	q = {};
	q.qp = qp;
	q.serial = ++f.serials;
	q.qpn = qp->qp_num;
	q.type = IBV_QPT_XRC_RECV;
	q.xrcd = x;
	f.arg("QPN %#x", q.qpn);
	return res;
}

static Res create_qp(Fuzz &f, Rng &r, int s, ibv_qp_type type)
{
	int p = f.pds.pick(r), sc = f.cqs.pick(r), rc = f.cqs.pick(r);

	if (p < 0 || sc < 0 || rc < 0)
		return skip();	// libibverbs would dereference them
	ibv_qp_init_attr_ex a{};
	a.qp_type = type;
	// An XRC send QP has no receive side: ib_uverbs would ignore (or
	// replace) a receive CQ or SRQ given to it.
	bool ini = type == IBV_QPT_XRC_SEND;
	a.send_cq = f.cqs.at[sc].cq;
	rc = ini ? -1 : rc;
	a.recv_cq = rc >= 0 ? f.cqs.at[rc].cq : nullptr;
	a.cap = qp_caps(r);
	a.sq_sig_all = r.pct(20);
	int srq = -1;
	if (!ini && r.pct(30)) {
		bool basic = r.pct(90);
		srq = f.srqs.pick_if(r, [&](const Srq &x) {
			return !x.xrc || !basic;
		});
		a.srq = srq >= 0 ? f.srqs.at[srq].srq : nullptr;
	}
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = f.pds.at[p].pd;
	if (r.pct(35)) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = pick_send_ops(r, type);
	}
	f.arg("%s pd%d cq%d/%d srq%d cap %u/%u/%u/%u/%u sig_all %d ops %#llx "
	      "as qp%d", qp_type_name(type), p, sc, rc, srq, a.cap.max_send_wr,
	      a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge,
	      a.cap.max_inline_data, a.sq_sig_all, ull(a.send_ops_flags), s);
	errno = 0;
	ibv_qp *qp = ibv_create_qp_ex(f.ctx, &a);
	Res res = f.ptr(qp, "ibv_create_qp_ex");
	if (!qp)
		return res;
	Qp &q = f.qps.at[s];
	q = {};
	q.qp = qp;
	q.ex = a.send_ops_flags ? ibv_qp_to_qp_ex(qp) : nullptr;
	q.serial = ++f.serials;
	q.qpn = qp->qp_num;
	q.type = type;
	q.pd = p;
	q.scq = sc;
	q.rcq = rc;
	q.srq = srq;
	q.cap = a.cap;
	q.send_ops = a.send_ops_flags;
	f.arg("QPN %#x", q.qpn);
	return res;
}

Res op_create_qp(Fuzz &f, Rng &r)
{
	int s = f.qps.free_slot(r);

	if (s < 0)
		return skip();
	ibv_qp_type type = r.pct(97) ? r.pick(kQpTypes) :
			   r.pct(50) ? IBV_QPT_RAW_PACKET : ibv_qp_type(0x42);
	return type == IBV_QPT_XRC_RECV ? create_xrc_recv(f, r, s) :
					  create_qp(f, r, s, type);
}

Res op_destroy_qp(Fuzz &f, Rng &r)
{
	int s = f.qps.pick(r);

	if (s < 0)
		return skip();
	f.arg("qp%d", s);
	if (r.pct(40)) {
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_RESET;
		int ret = ibv_modify_qp(f.qps.at[s].qp, &a, IBV_QP_STATE);
		f.arg("RESET %s", ret ? errname(ret).c_str() : "ok");
		if (f.ret(ret, "ibv_modify_qp").kind == Res::Ok)
			f.qp_moved(s, IBV_QPS_RESET);
	}
	int ret = ibv_destroy_qp(f.qps.at[s].qp);
	Res res = f.ret(ret, "ibv_destroy_qp");
	if (!ret)
		f.qp_gone(s);
	return res;
}

// The attributes ib_modify_qp_is_ok() requires of a QP of @t going from
// @cur to @next.
static int required_mask(ibv_qp_type t, ibv_qp_state cur, ibv_qp_state next)
{
	bool ud = t == IBV_QPT_UD, uc = t == IBV_QPT_UC;
	bool ini = t == IBV_QPT_XRC_SEND, tgt = t == IBV_QPT_XRC_RECV;
	int m = IBV_QP_STATE;

	if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
		m |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		m |= ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	} else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR && !ud) {
		m |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		     IBV_QP_RQ_PSN;
		if (!uc && !ini)
			m |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	} else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
		m |= IBV_QP_SQ_PSN;
		if (t == IBV_QPT_RC || ini)
			m |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		if (tgt)
			m |= IBV_QP_TIMEOUT;
	}
	return m;
}

// @req, mostly; now and then with an optional attribute more, a required
// one fewer, or any bits (some no kernel knows).
static int perturb_mask(Rng &r, int req)
{
	static const int optional[] = {
		IBV_QP_CUR_STATE,	 IBV_QP_ACCESS_FLAGS,
		IBV_QP_PKEY_INDEX,	 IBV_QP_QKEY,
		IBV_QP_MIN_RNR_TIMER,	 IBV_QP_PATH_MIG_STATE,
		IBV_QP_ALT_PATH,	 IBV_QP_EN_SQD_ASYNC_NOTIFY,
		IBV_QP_TIMEOUT,		 IBV_QP_MAX_QP_RD_ATOMIC,
		IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_AV,
		IBV_QP_RETRY_CNT,	 IBV_QP_RNR_RETRY,
		IBV_QP_SQ_PSN,		 IBV_QP_RQ_PSN,
		IBV_QP_PATH_MTU,	 IBV_QP_DEST_QPN,
		IBV_QP_RATE_LIMIT,
	};
	unsigned k = r.below(100);

	if (k < 80)
		return req;
	if (k < 90)
		return req | r.pick(optional);
	if (k < 97) {
		int bits = req & ~IBV_QP_STATE, n = __builtin_popcount(bits);
		for (int i = r.below(n); bits && i--;)
			bits &= bits - 1;
		return bits ? req & ~(bits & -bits) : req;
	}
	return int(r.next() & ((1 << 27) - 1)) | (r.pct(50) ? IBV_QP_STATE : 0);
}

// Attributes for QP @q moving from @cur to @next, connected to @peer:
// right values, timeouts and retries low (an unanswered request fails
// within milliseconds); unless @valid, now and then a wrong one.
static void fill_qp_attr(const Fuzz &f, Rng &r, ibv_qp_state cur,
			 ibv_qp_state next, uint32_t peer, bool valid,
			 ibv_qp_attr &a)
{
	static const uint8_t rd_atomic[] = { 1, 4, 16 };
	auto mostly = [&](unsigned p) { return valid || r.pct(p); };

	a = {};
	a.qp_state = next;
	a.cur_qp_state = mostly(90) ? cur : ibv_qp_state(r.below(8));
	a.pkey_index = mostly(97) ? 0 : 1 + r.below(3);
	a.port_num = mostly(97) ? 1 : r.pick({ 0, 2 });
	a.qkey = mostly(90) ? kQkey : uint32_t(r.next());
	a.qp_access_flags = qp_access(r);
	a.path_mtu = mostly(95) ? ibv_mtu(1 + r.below(5)) :
				  ibv_mtu(r.pick({ 0, 6, 7 }));
	a.dest_qp_num = peer;
	a.rq_psn = r.next() & (mostly(97) ? 0xffffff : ~0u);
	a.sq_psn = r.next() & (mostly(97) ? 0xffffff : ~0u);
	a.max_dest_rd_atomic = r.pick(rd_atomic);
	a.max_rd_atomic = r.pick(rd_atomic);
	if (!mostly(95))
		a.max_dest_rd_atomic = r.pick({ 0, 255 });
	if (!mostly(95))
		a.max_rd_atomic = r.pick({ 0, 255 });
	a.min_rnr_timer = mostly(90) ? 1 : r.below(32);
	a.timeout = 8 + r.below(5);
	a.retry_cnt = mostly(90) ? 1 : r.below(3);
	a.rnr_retry = mostly(90) ? 1 : r.below(3);
	f.fill_ah(r, a.ah_attr, valid);
	if (!valid && r.pct(20)) {
		f.fill_ah(r, a.alt_ah_attr, false);
		a.alt_pkey_index = r.below(2);
		a.alt_port_num = r.below(3);
		a.alt_timeout = r.below(32);
	}
	a.en_sqd_async_notify = r.below(2);
	a.path_mig_state = ibv_mig_state(r.below(3));
	a.rate_limit = mostly(90) ? 0 : uint32_t(r.next());
}

// @l's attributes in @a for a QP of @t, and every remote access the type
// has; retries enough that an answer late on a slow (debug) kernel does
// not fail the WRs of a pair.
static void link_attr(const Link &l, ibv_qp_type t, ibv_qp_attr &a)
{
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (t != IBV_QPT_UC)
		a.qp_access_flags |= IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC;
	a.path_mtu = l.mtu;
	a.sq_psn = l.sq_psn;
	a.rq_psn = l.rq_psn;
	a.max_rd_atomic = l.rd_atomic;
	a.max_dest_rd_atomic = l.rd_atomic;
	a.timeout = 14;	// 67 ms
	a.retry_cnt = 7;
}

// QP @s through RESET, INIT, RTR and RTS to @peer with right attributes;
// with those of @l, unless it is NULL. Return: 0 or the first error.
int connect_qp(Fuzz &f, Rng &r, int s, uint32_t peer, const Link *l)
{
	static const ibv_qp_state path[] = { IBV_QPS_RESET, IBV_QPS_INIT,
					     IBV_QPS_RTR, IBV_QPS_RTS };
	Qp &q = f.qps.at[s];
	ibv_qp_state cur = IBV_QPS_RESET;
	int ret = 0;

	for (ibv_qp_state next : path) {
		ibv_qp_attr a;
		fill_qp_attr(f, r, cur, next, peer, true, a);
		if (l)
			link_attr(*l, q.type, a);
		int mask = next == IBV_QPS_RESET ?
				   IBV_QP_STATE :
				   required_mask(q.type, cur, next);
		ret = ibv_modify_qp(q.qp, &a, mask);
		f.arg("%s %s", state_name(next),
		      ret ? errname(ret).c_str() : "ok");
		if (ret)
			break;
		f.qp_moved(s, next);
		cur = next;
	}
	return ret;
}

// RESET, INIT, RTR, RTS with right attributes, connected to itself or
// another QP: what gets traffic going.
Res op_connect_qp(Fuzz &f, Rng &r)
{
	int s = f.qps.pick(r);

	if (s < 0)
		return skip();
	uint32_t peer = f.peer_qpn(r, s);
	f.arg("qp%d (%s) to %#x:", s, qp_type_name(f.qps.at[s].type), peer);
	return f.ret(connect_qp(f, r, s, peer, nullptr), "ibv_modify_qp");
}

// The state to try next from @cur: mostly the one after it, else RESET,
// ERR, SQD or any.
static ibv_qp_state next_state(Rng &r, ibv_qp_state cur)
{
	static const ibv_qp_state after[] = {
		IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,	  IBV_QPS_RTS,
		IBV_QPS_RTS,  IBV_QPS_RTS, IBV_QPS_RESET,
	};
	unsigned k = r.below(100);

	if (k < 70)
		return after[cur <= IBV_QPS_ERR ? cur : 0];
	if (k < 80)
		return IBV_QPS_RESET;
	if (k < 88)
		return IBV_QPS_ERR;
	if (k < 93)
		return IBV_QPS_SQD;
	return ibv_qp_state(r.below(8));
}

// One transition, its attributes mostly right.
Res op_modify_qp(Fuzz &f, Rng &r)
{
	int s = f.qps.pick(r);

	if (s < 0)
		return skip();
	Qp &q = f.qps.at[s];
	ibv_qp_state cur = f.query_state(s), next = next_state(r, cur);
	ibv_qp_attr a;
	fill_qp_attr(f, r, cur, next, f.peer_qpn(r, s), false, a);
	int mask = perturb_mask(r, required_mask(q.type, cur, next));
	f.arg("qp%d (%s) %s -> %s mask %#x dest %#x", s, qp_type_name(q.type),
	      state_name(cur), state_name(next), mask, a.dest_qp_num);
	int ret = ibv_modify_qp(q.qp, &a, mask);
	Res res = f.ret(ret, "ibv_modify_qp");
	if (!ret && (mask & IBV_QP_STATE))
		f.qp_moved(s, next);
	if (!ret)
		q.peer = 0;	// it may no longer match its peer
	return res;
}

Res op_query_qp(Fuzz &f, Rng &r)
{
	int s = f.qps.pick(r);

	if (s < 0)
		return skip();
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	// Mostly every attribute ibv_query_qp (not _ex) takes: those below
	// IBV_QP_RATE_LIMIT.
	int mask = r.pct(80) ? IBV_QP_RATE_LIMIT - 1 :
			       int(r.next() & ((1 << 27) - 1));
	int ret = ibv_query_qp(f.qps.at[s].qp, &a, mask, &ia);
	f.arg("qp%d mask %#x: %s", s, mask, ret ? "-" : state_name(a.qp_state));
	if (!ret && (mask & IBV_QP_STATE) && a.qp_state > IBV_QPS_ERR)
		f.fail("ibv_query_qp: qp%d in state %d", s, a.qp_state);
	return f.ret(ret, "ibv_query_qp");
}

// ---- Sends and receives ----------------------------------------------------

const ibv_wr_opcode kSendOps[] = {
	IBV_WR_SEND,		    IBV_WR_SEND_WITH_IMM,
	IBV_WR_SEND_WITH_INV,	    IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_CMP_AND_SWP,  IBV_WR_ATOMIC_FETCH_AND_ADD,
	IBV_WR_LOCAL_INV,	    IBV_WR_BIND_MW,
};

static bool is_atomic(int op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_WRITE;
}

static bool may_inline(int op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

// What one send WR names besides its opcode and SGEs: the remote end, the
// key it invalidates, the window it binds, the UD or XRC destination.
struct Dest {
	Target remote;
	uint64_t raddr = 0, cmp = 0, swap = 0;
	uint32_t imm = 0, inv = 0;
	int mw = -1;		// the window a bind names
	uint32_t mw_key = 0;	// the key it gives it
	Bind bind;
	int ah = -1;
	uint32_t remote_qpn = 0, qkey = 0, srqn = 0;
};

// The destination of a WR of @op with @len bytes from QP @q.
static Dest pick_dest(Fuzz &f, Rng &r, const Qp &q, int op, uint64_t len)
{
	Dest d;

	d.remote = f.pick_key(r, true);
	d.raddr = f.pick_addr(r, d.remote, is_atomic(op) ? 8 : len,
			      is_atomic(op) && r.pct(70));
	d.cmp = r.next();
	d.swap = r.next();
	d.imm = r.next();
	d.inv = f.pick_key(r, true).key;
	if (op == IBV_WR_BIND_MW && (d.mw = f.mws.pick(r)) >= 0) {
		const Mw &w = f.mws.at[d.mw];
		unsigned k = r.below(100);
		d.mw_key = k < 70 ? ibv_inc_rkey(w.key) : k < 85 ? w.key :
							uint32_t(r.next());
		d.bind = f.bind_args(r, w.pd);
	}
	if (q.type == IBV_QPT_UD) {
		d.ah = r.pct(97) ? f.ahs.pick(r) : -1;
		int o = f.qps.pick_if(r, [](const Qp &x) {
			return x.type == IBV_QPT_UD;
		});
		d.remote_qpn = o >= 0 && r.pct(90) ? f.qps.at[o].qpn :
						     r.below(1 << 24);
		d.qkey = r.pct(85) ? kQkey : uint32_t(r.next());
	}
	if (q.type == IBV_QPT_XRC_SEND) {
		int s = f.srqs.pick_if(r, [](const Srq &x) { return x.xrc; });
		d.srqn = s >= 0 && r.pct(90) ? f.srqs.at[s].srqn :
					       r.below(1 << 24);
	}
	return d;
}

// An opcode for a send WR on a QP of @type: mostly one the type has,
// else any (now and then one that does not exist).
static int pick_send_op(Rng &r, ibv_qp_type type)
{
	static const int ud[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM };
	static const int uc[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
				  IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
				  IBV_WR_LOCAL_INV, IBV_WR_BIND_MW };
	unsigned k = r.below(100);

	if (k < 3)
		return 10 + r.below(8);
	if (k < 75 && type == IBV_QPT_UD)
		return r.pick(ud);
	if (k < 75 && type == IBV_QPT_UC)
		return r.pick(uc);
	return r.pick(kSendOps);
}

// The local data of a send WR of @op on @q: up to one SGE more than the
// QP takes (an atomic's one SGE of 8 bytes, mostly), now and then inline
// (@inl). Return: how many SGEs, and in @len their bytes.
static int send_sges(Fuzz &f, Rng &r, const Qp &q, int op, ibv_sge *sge,
		     bool &inl, uint64_t &len)
{
	int max = std::min<int>(q.cap.max_send_sge, kMaxSge - 1);
	int n = is_atomic(op) && r.pct(80) ? 1 : r.below(max + 2);

	inl = may_inline(op) && r.pct(12);
	len = 0;
	for (int j = 0; j < n; j++) {
		sge[j] = inl ? f.inline_sge(r) :
			       f.local_sge(r, is_atomic(op) ? 8 : 0);
		len += sge[j].length;
	}
	return n;
}

// What of @d a WR of @op on @q uses, for the log.
static std::string fmt_dest(const Fuzz &f, const Qp &q, int op,
			    const Dest &d)
{
	std::string s;

	if (op != IBV_WR_SEND && op != IBV_WR_SEND_WITH_IMM &&
	    op != IBV_WR_SEND_WITH_INV && op != IBV_WR_LOCAL_INV &&
	    op != IBV_WR_BIND_MW)
		s += strf(" to %s@%s", d.remote.name.c_str(),
			  f.fmt_addr(d.raddr).c_str());
	if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV)
		s += " inv " + f.fmt_key(d.inv);
	if (op == IBV_WR_BIND_MW)
		s += strf(" mw%d key %#x mr%d %s/%#llx access %#x", d.mw,
			  d.mw_key, d.bind.mr, f.fmt_addr(d.bind.addr).c_str(),
			  ull(d.bind.len), d.bind.access);
	if (q.type == IBV_QPT_UD)
		s += strf(" ah%d qpn %#x qkey %#x", d.ah, d.remote_qpn, d.qkey);
	if (q.type == IBV_QPT_XRC_SEND)
		s += strf(" srqn %#x", d.srqn);
	return s;
}

// Send WRs: any opcode (now and then one that does not exist), up to one
// SGE more than the QP takes, inline or not, and what pick_dest() gives.
struct SendBatch {
	ibv_send_wr wr[kMaxChain];
	ibv_sge sge[kMaxChain][kMaxSge];
	Dest dest[kMaxChain];
	int n;
};

static void build_send(Fuzz &f, Rng &r, const Qp &q, SendBatch &b, int i)
{
	ibv_send_wr &wr = b.wr[i];
	ibv_sge *sge = b.sge[i];
	int op = pick_send_op(r, q.type);

	wr = {};
	wr.wr_id = f.new_wr_id();
	wr.opcode = ibv_wr_opcode(op);
	wr.send_flags = send_flags(r);
	bool inl = false;
	uint64_t len = 0;
	wr.num_sge = send_sges(f, r, q, op, sge, inl, len);
	wr.sg_list = sge;
	if (inl)
		wr.send_flags |= IBV_SEND_INLINE;
	Dest &d = b.dest[i];
	d = pick_dest(f, r, q, op, len);
	if (is_atomic(op))
		wr.wr.atomic = { d.raddr, d.cmp, d.swap, d.remote.key };
	else
		wr.wr.rdma = { d.raddr, d.remote.key };
	wr.imm_data = d.imm;
	if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV)
		wr.invalidate_rkey = d.inv;
	if (op == IBV_WR_BIND_MW && d.mw >= 0) {
		const Bind &bi = d.bind;
		wr.bind_mw.mw = f.mws.at[d.mw].mw;
		wr.bind_mw.rkey = d.mw_key;
		wr.bind_mw.bind_info = {
			bi.mr >= 0 ? f.mrs.at[bi.mr].mr : nullptr, bi.addr,
			bi.len, bi.access
		};
	}
	if (q.type == IBV_QPT_UD)
		wr.wr.ud = { d.ah >= 0 ? f.ahs.at[d.ah].ah : nullptr,
			     d.remote_qpn, d.qkey };
	wr.qp_type.xrc.remote_srqn = d.srqn;
	f.arg("[wr%llu %s flags %#x %s%s]", ull(wr.wr_id), wr_op_name(op),
	      wr.send_flags, f.fmt_sges(sge, wr.num_sge).c_str(),
	      fmt_dest(f, q, op, d).c_str());
}

// A send WR was queued on QP @q: track it; a bind gives its window a key.
static void sent(Fuzz &f, int q, uint64_t id, int op, const Dest &d)
{
	f.track(Queue::Send, q, id, op, 0);
	if (op == IBV_WR_BIND_MW && d.mw >= 0)
		f.rebind(d.mw, d.bind, d.mw_key);
}

Res op_post_send(Fuzz &f, Rng &r)
{
	int q = f.pick_qp(r, true);

	if (q < 0)
		return skip();
	SendBatch b;
	b.n = r.pct(70) ? 1 : 2 + r.below(kMaxChain - 1);
	f.arg("qp%d (%s)", q, qp_type_name(f.qps.at[q].type));
	for (int i = 0; i < b.n; i++) {
		build_send(f, r, f.qps.at[q], b, i);
		if (i)
			b.wr[i - 1].next = &b.wr[i];
	}
	ibv_send_wr *bad = nullptr;
	int ret = ibv_post_send(f.qps.at[q].qp, b.wr, &bad);
	int n = posted(f, ret, bad, b.wr, b.n, "ibv_post_send");
	for (int i = 0; i < n; i++)
		sent(f, q, b.wr[i].wr_id, b.wr[i].opcode, b.dest[i]);
	return f.ret(ret, "ibv_post_send");
}

// The opcodes of ibv_wr_*, and their send_ops_flags bits.
const struct {
	ibv_wr_opcode op;
	uint64_t bit;
} kExOps[] = {
	{ IBV_WR_SEND, IBV_QP_EX_WITH_SEND },
	{ IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM },
	{ IBV_WR_SEND_WITH_INV, IBV_QP_EX_WITH_SEND_WITH_INV },
	{ IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM },
	{ IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD },
	{ IBV_WR_ATOMIC_WRITE, IBV_QP_EX_WITH_ATOMIC_WRITE },
	{ IBV_WR_LOCAL_INV, IBV_QP_EX_WITH_LOCAL_INV },
	{ IBV_WR_BIND_MW, IBV_QP_EX_WITH_BIND_MW },
};

// An ibv_wr_* opcode: mostly one the QP was made with.
static ibv_wr_opcode pick_ex_op(Rng &r, uint64_t send_ops)
{
	int n = 0;

	for (const auto &x : kExOps)
		n += !!(send_ops & x.bit);
	if (!n || r.pct(15))
		return kExOps[r.below(std::size(kExOps))].op;
	int k = r.below(n);
	for (const auto &x : kExOps)
		if ((send_ops & x.bit) && !k--)
			return x.op;
	return IBV_WR_SEND;
}

// The ibv_wr_* call that begins a WR of @op.
static void wr_ex_opcode(Fuzz &f, ibv_qp_ex *x, int op, const Dest &d)
{
	ibv_mw_bind_info bi{};
	uint64_t data = d.swap;

	switch (op) {
	case IBV_WR_SEND: ibv_wr_send(x); break;
	case IBV_WR_SEND_WITH_IMM: ibv_wr_send_imm(x, d.imm); break;
	case IBV_WR_SEND_WITH_INV: ibv_wr_send_inv(x, d.inv); break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(x, d.remote.key, d.raddr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(x, d.remote.key, d.raddr, d.imm);
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(x, d.remote.key, d.raddr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(x, d.remote.key, d.raddr, d.cmp, d.swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(x, d.remote.key, d.raddr, d.cmp);
		break;
	case IBV_WR_ATOMIC_WRITE:
		ibv_wr_atomic_write(x, d.remote.key, d.raddr, &data);
		break;
	case IBV_WR_LOCAL_INV: ibv_wr_local_inv(x, d.inv); break;
	case IBV_WR_BIND_MW:
		if (d.bind.mr >= 0)
			bi.mr = f.mrs.at[d.bind.mr].mr;
		bi.addr = d.bind.addr;
		bi.length = d.bind.len;
		bi.mw_access_flags = d.bind.access;
		ibv_wr_bind_mw(x, d.mw >= 0 ? f.mws.at[d.mw].mw : nullptr,
			       d.mw_key, &bi);
		break;
	}
}

// Where a WR of a UD or XRC send QP goes.
static void wr_ex_dest(Fuzz &f, ibv_qp_ex *x, const Qp &q, const Dest &d)
{
	if (q.type == IBV_QPT_UD)
		ibv_wr_set_ud_addr(x, d.ah >= 0 ? f.ahs.at[d.ah].ah : nullptr,
				   d.remote_qpn, d.qkey);
	if (q.type == IBV_QPT_XRC_SEND)
		ibv_wr_set_xrc_srqn(x, d.srqn);
}

// A WR's data: inline, one SGE or a list.
static void wr_ex_data(ibv_qp_ex *x, Rng &r, const ibv_sge *sge, int nsge,
		       bool inl)
{
	if (inl) {
		ibv_data_buf buf[kMaxSge];
		for (int i = 0; i < nsge; i++)
			buf[i] = { reinterpret_cast<void *>(sge[i].addr),
				   sge[i].length };
		if (nsge == 1 && r.pct(50))
			ibv_wr_set_inline_data(x, buf[0].addr, buf[0].length);
		else
			ibv_wr_set_inline_data_list(x, nsge, buf);
	} else if (nsge == 1 && r.pct(50)) {
		ibv_wr_set_sge(x, sge[0].lkey, sge[0].addr, sge[0].length);
	} else {
		ibv_wr_set_sge_list(x, nsge, sge);
	}
}

// One WR through ibv_wr_*: its opcode, destination and data (what it has
// of them).
static void wr_ex_one(Fuzz &f, ibv_qp_ex *x, const Qp &q, int op, const Dest &d,
	       Rng &r, const ibv_sge *sge, int nsge, bool inl)
{
	wr_ex_opcode(f, x, op, d);
	if (op == IBV_WR_LOCAL_INV || op == IBV_WR_BIND_MW)
		return;
	wr_ex_dest(f, x, q, d);
	if (op != IBV_WR_ATOMIC_WRITE)
		wr_ex_data(x, r, sge, nsge, inl);
}

// ibv_wr_start, 1 to 3 WRs through ibv_wr_*, ibv_wr_complete (now and
// then ibv_wr_abort): all of them queued, or none.
Res op_post_send_ex(Fuzz &f, Rng &r)
{
	int q = f.qps.pick_if(r, [](const Qp &x) { return x.ex; });

	if (q < 0)
		return skip();
	Qp &qp = f.qps.at[q];
	int n = 1 + r.below(3);
	uint64_t ids[3];
	int ops[3];
	Dest dest[3];
	f.arg("qp%d (%s)", q, qp_type_name(qp.type));
	ibv_wr_start(qp.ex);
	for (int i = 0; i < n; i++) {
		ibv_sge sge[kMaxSge];
		bool inl = false;
		uint64_t len = 0;
		ops[i] = pick_ex_op(r, qp.send_ops);
		int nsge = send_sges(f, r, qp, ops[i], sge, inl, len);
		dest[i] = pick_dest(f, r, qp, ops[i], len);
		ids[i] = qp.ex->wr_id = f.new_wr_id();
		qp.ex->wr_flags = send_flags(r) & ~IBV_SEND_INLINE;
		f.arg("[wr%llu %s flags %#x %s%s%s]", ull(ids[i]),
		      wr_op_name(ops[i]), qp.ex->wr_flags,
		      f.fmt_sges(sge, nsge).c_str(), inl ? " inline" : "",
		      fmt_dest(f, qp, ops[i], dest[i]).c_str());
		wr_ex_one(f, qp.ex, qp, ops[i], dest[i], r, sge, nsge, inl);
	}
	if (r.pct(5)) {
		ibv_wr_abort(qp.ex);
		f.arg("aborted");
		return ok();
	}
	int ret = ibv_wr_complete(qp.ex);
	for (int i = 0; i < n && queued(ret); i++)
		sent(f, q, ids[i], ops[i], dest[i]);
	return f.ret(ret, "ibv_wr_complete");
}

Res op_post_recv(Fuzz &f, Rng &r)
{
	int q = f.pick_qp(r, false);

	if (q < 0)
		return skip();
	RecvBatch b;
	f.arg("qp%d (%s)", q, qp_type_name(f.qps.at[q].type));
	build_recvs(f, r, b, f.qps.at[q].cap.max_recv_sge);
	ibv_recv_wr *bad = nullptr;
	int ret = ibv_post_recv(f.qps.at[q].qp, b.wr, &bad);
	int n = posted(f, ret, bad, b.wr, b.n, "ibv_post_recv");
	for (int i = 0; i < n; i++)
		f.track(Queue::Recv, q, b.wr[i].wr_id, -1, b.room[i]);
	return f.ret(ret, "ibv_post_recv");
}
} // namespace vfuzz
