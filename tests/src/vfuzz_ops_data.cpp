// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-vfuzz's valid traffic: pairs of RC or UC QPs connected to each
// other (or a QP to itself) with matching PSNs, one MTU and every remote
// access, and bursts of WRITE, READ, SEND and atomic WRs on them whose keys
// grant what the WR does, at addresses inside what the keys name (never a
// canary). Most other WRs are meant to fail; these move data. Their
// completions go through every check the others' do. They need not
// succeed: a random WR or a modify may have moved a QP of the pair to
// error first, a rereg changed an MR, a window's last bind failed.
#include "vfuzz.h"

#include <algorithm>

namespace vfuzz {

// ---- Keys and addresses ----------------------------------------------------

// Is MR @m one of PD @p with @access, over memory (a buffer's data, or all
// of it: implicit)?
static bool mr_ok(const Mr &m, int p, int access)
{
	return m.pd == p && (m.access & access) == access &&
	       (m.implicit || (m.buf >= 0 && m.len));
}

static bool has_mr(const Fuzz &f, int p, int access)
{
	return std::any_of(f.mrs.at.begin(), f.mrs.at.end(), [&](const Mr &m) {
		return m.live() && mr_ok(m, p, access);
	});
}

// Does window @x, as its last bind named it, grant @access to the QPs of
// PD @p, over an MR that allows binding and holds it? (That bind may have
// failed all the same: then so do the WRs.) Type 1 only: a type 2 window
// answers the QP that bound it only.
static bool mw_ok(const Fuzz &f, const Mw &x, int p, int access)
{
	if (x.pd != p || x.mw->type != IBV_MW_TYPE_1 || !x.len || x.mr < 0 ||
	    (x.access & access) != unsigned(access))
		return false;
	const Mr &m = f.mrs.at[x.mr];
	if (!mr_ok(m, p, IBV_ACCESS_MW_BIND))
		return false;
	return m.implicit ? !f.touches_canary(x.addr, x.len) :
			    within(x.addr, x.len, m.iova, m.len);
}

// MR @m's lkey (or @rkey), for the addresses it was registered at (an
// implicit one's: a buffer's data).
static Target mr_span(const Fuzz &f, Rng &r, int m, bool rkey)
{
	Target t = f.mr_target(r, m, rkey);

	if (!f.mrs.at[m].implicit)
		t.base = f.mrs.at[m].iova;
	return t;
}

// An rkey of PD @p that grants @access: an MR's, now and then a window's.
// For an atomic, an MR's whose addresses are aligned as the memory under
// them is, so that an aligned address is aligned in memory too.
static bool pick_remote(const Fuzz &f, Rng &r, int p, int access,
			bool atomic, Target &t)
{
	int w = f.mws.pick_if(r, [&](const Mw &x) {
		return !atomic && mw_ok(f, x, p, access);
	});
	int m = f.mrs.pick_if(r, [&](const Mr &x) {
		return mr_ok(x, p, access) &&
		       (!atomic || !((x.iova - x.addr) & 7));
	});

	if (w >= 0 && (m < 0 || r.pct(20)))
		t = f.mw_target(w);
	else if (m >= 0)
		t = mr_span(f, r, m, true);
	return w >= 0 || m >= 0;
}

// An address for @len bytes inside @t's space (8-aligned if @align8) that
// may_name() allows, in @a; false if they do not fit.
static bool inside(const Fuzz &f, Rng &r, const Target &t, uint64_t len,
		   bool align8, uint64_t &a)
{
	uint64_t skip = align8 ? -t.base & 7 : 0, step = align8 ? 8 : 1;

	if (t.len < len || t.len - len < skip)
		return false;
	a = t.base + skip + step * r.below((t.len - len - skip) / step + 1);
	return f.may_name(t, a, len);
}

// The SGEs of a WR of QP @q of @len bytes (fewer if its MRs are smaller):
// 1 to 3, each in an MR of the QP's PD (with local write if the WR
// @writes them); an atomic's one of 8 bytes. Return: how many (0 if the
// PD has no such MR), and in @len their bytes.
static int local_sges(const Fuzz &f, Rng &r, const Qp &q, bool writes,
		      bool atomic, ibv_sge *sge, uint64_t &len)
{
	int access = writes ? IBV_ACCESS_LOCAL_WRITE : 0;
	uint64_t n = atomic ? 1 : 1 + r.below(std::clamp(q.cap.max_send_sge,
							 1u, 3u));
	uint64_t left = len;

	n = std::min(n, len);
	len = 0;
	for (uint64_t i = 0; i < n; i++) {
		int m = f.mrs.pick_if(r, [&](const Mr &x) {
			return mr_ok(x, q.pd, access);
		});
		if (m < 0)
			return 0;
		Target t = mr_span(f, r, m, false);
		uint64_t part = i == n - 1 ? left :
				1 + r.below(left - (n - 1 - i));
		part = std::min(part, t.len);
		if ((atomic && part != 8) ||
		    !inside(f, r, t, part, false, sge[i].addr))
			return 0;
		sge[i].length = part;
		sge[i].lkey = t.key;
		left -= part;
		len += part;
	}
	return n;
}

// ---- Receives --------------------------------------------------------------

// Will a SEND to QP @o find the receive posted for it: does its RQ (or
// basic SRQ of its PD) hold none of the random receives that come first?
static bool can_receive(const Fuzz &f, const Qp &o)
{
	if (o.srq < 0)
		return o.rq.empty();
	const Srq &s = f.srqs.at[o.srq];
	return !s.xrc && s.pd == o.pd && s.ids.empty();
}

// Posts on QP @o's RQ (or SRQ) a receive with room for @len bytes or a few
// more, in an MR of its PD, for a SEND or WRITE with immediate. Return:
// whether it was queued.
static bool post_room(Fuzz &f, Rng &r, int o, uint64_t len)
{
	const Qp &q = f.qps.at[o];
	bool srq = q.srq >= 0;
	const char *call = srq ? "ibv_post_srq_recv" : "ibv_post_recv";
	int m = f.mrs.pick_if(r, [&](const Mr &x) {
		return mr_ok(x, q.pd, IBV_ACCESS_LOCAL_WRITE);
	});

	if (m < 0)
		return false;
	Target t = mr_span(f, r, m, false);
	uint64_t room = std::min(len + r.below(64), t.len);
	ibv_sge sge = { 0, uint32_t(room), t.key };
	if (room < len || !inside(f, r, t, room, false, sge.addr))
		return false;
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.wr_id = f.new_wr_id();
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int ret = srq ? ibv_post_srq_recv(f.srqs.at[q.srq].srq, &wr, &bad) :
			ibv_post_recv(q.qp, &wr, &bad);
	f.arg("[recv wr%llu on %s%d %s%s%s]", ull(wr.wr_id), srq ? "srq" : "qp",
	      srq ? q.srq : o, f.fmt_sges(&sge, 1).c_str(), ret ? " " : "",
	      ret ? errname(ret).c_str() : "");
	f.ret(ret, call);
	if (!posted(f, ret, bad, &wr, 1, call))
		return false;
	f.track(srq ? Queue::Srq : Queue::Recv, srq ? q.srq : o, wr.wr_id, -1,
		room);
	return true;
}

// ---- Pairs -----------------------------------------------------------------

// The QP that @q is paired with (connected to each other by pair(), and
// neither moved nor changed since), or -1.
static int peer_of(const Fuzz &f, const Qp &q)
{
	for (int o = 0; q.peer && o < kSlots; o++) {
		const Qp &x = f.qps.at[o];
		if (x.live() && x.serial == q.peer && x.peer == q.serial)
			return o;
	}
	return -1;
}

// May QP @q be one of a pair: RC or UC, its PD with an MR a WR may write?
static bool pairable(const Fuzz &f, const Qp &q)
{
	return (q.type == IBV_QPT_RC || q.type == IBV_QPT_UC) &&
	       has_mr(f, q.pd, IBV_ACCESS_LOCAL_WRITE);
}

// Connects QPs @s and @o to each other (@s to itself if they are one):
// each one's send PSN the other's receive PSN, one MTU.
static Res pair(Fuzz &f, Rng &r, int s, int o)
{
	Qp &a = f.qps.at[s], &b = f.qps.at[o];
	Link l = { uint32_t(r.below(1 << 24)), uint32_t(r.below(1 << 24)),
		   ibv_mtu(1 + r.below(5)), uint8_t(1 + r.below(16)) };

	if (s == o)
		l.rq_psn = l.sq_psn;
	Link back = { l.rq_psn, l.sq_psn, l.mtu, l.rd_atomic };
	f.arg("pair qp%d (%s) and qp%d, MTU %d, PSNs %#x/%#x:", s,
	      qp_type_name(a.type), o, 128 << l.mtu, l.sq_psn, l.rq_psn);
	int ret = connect_qp(f, r, s, b.qpn, &l);
	if (!ret && o != s)
		ret = connect_qp(f, r, o, a.qpn, &back);
	if (!ret) {
		a.peer = b.serial;
		b.peer = a.serial;
	}
	return f.ret(ret, "ibv_modify_qp");
}

// A QP of a pair, both in RTS (the pair connected again if either went to
// error); now and then, or if there is none, a new pair: a QP and itself
// or another of its type. Return: the QP's slot, or -1 and in @res why.
static int get_pair(Fuzz &f, Rng &r, Res &res)
{
	int s = f.qps.pick_if(r, [&](const Qp &q) {
		return peer_of(f, q) >= 0;
	});
	int o = s >= 0 ? peer_of(f, f.qps.at[s]) : -1;

	if (s >= 0 && r.pct(90)) {
		if (f.query_state(s) == IBV_QPS_RTS &&
		    f.query_state(o) == IBV_QPS_RTS)
			return s;
	} else {
		s = f.qps.pick_if(r, [&](const Qp &q) {
			return pairable(f, q);
		});
		if (s < 0) {
			res = skip();
			return -1;
		}
		ibv_qp_type t = f.qps.at[s].type;
		o = r.pct(40) ? s : f.qps.pick_if(r, [&](const Qp &q) {
			return q.type == t && pairable(f, q);
		});
	}
	res = pair(f, r, s, o);
	return res.kind == Res::Ok ? s : -1;
}

// ---- Bursts ----------------------------------------------------------------

// The opcodes of a burst (UC's first): the access their rkey must grant
// (0: none), whether they write their SGEs, need a receive at the peer.
const struct {
	ibv_wr_opcode op;
	int remote;
	bool writes, recv;
} kXferOps[] = {
	{ IBV_WR_RDMA_WRITE, IBV_ACCESS_REMOTE_WRITE, false, false },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, IBV_ACCESS_REMOTE_WRITE, false, true },
	{ IBV_WR_SEND, 0, false, true },
	{ IBV_WR_SEND_WITH_IMM, 0, false, true },
	{ IBV_WR_RDMA_READ, IBV_ACCESS_REMOTE_READ, true, false },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, IBV_ACCESS_REMOTE_ATOMIC, true, false },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_ACCESS_REMOTE_ATOMIC, true, false },
};
const int kUcXferOps = 4;

// One WR of a burst from QP @s to its peer @o, in @wr and @sge; the
// receive it needs posted first (if @recv_ok: see can_receive()). False
// if none can be made.
static bool build_xfer(Fuzz &f, Rng &r, int s, int o, bool recv_ok,
		       ibv_send_wr &wr, ibv_sge *sge)
{
	const Qp &q = f.qps.at[s];
	const auto &x = kXferOps[r.below(q.type == IBV_QPT_UC ?
						 kUcXferOps :
						 std::size(kXferOps))];
	bool atomic = x.remote == IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t len = atomic ? 8 : 1 + r.below(r.pct(60) ? 256 : 16384);
	uint64_t raddr = 0;
	Target t;

	if ((x.recv && !recv_ok) ||
	    (x.remote && !pick_remote(f, r, f.qps.at[o].pd, x.remote, atomic,
				      t)))
		return false;
	len = x.remote ? std::min(len, t.len) : len;
	int n = local_sges(f, r, q, x.writes, atomic, sge, len);
	if (!n || (x.remote && !inside(f, r, t, len, atomic, raddr)) ||
	    (x.recv && !post_room(f, r, o, len)))
		return false;
	wr = {};
	wr.wr_id = f.new_wr_id();
	wr.opcode = x.op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sge;
	wr.num_sge = n;
	wr.imm_data = r.next();
	if (atomic)
		wr.wr.atomic = { raddr, r.next(), r.next(), t.key };
	else
		wr.wr.rdma = { raddr, t.key };
	f.arg("[wr%llu %s %s%s]", ull(wr.wr_id), wr_op_name(x.op),
	      f.fmt_sges(sge, n).c_str(),
	      x.remote ? strf(" to %s@%s", t.name.c_str(),
			      f.fmt_addr(raddr).c_str()).c_str() : "");
	return true;
}

// 1 to 4 valid WRs, signaled, on a QP of a pair (see get_pair()), as many
// as its send queue and CQ hold.
Res op_exchange(Fuzz &f, Rng &r)
{
	Res res = ok();
	int s = get_pair(f, r, res);

	if (s < 0)
		return res;
	const Qp &q = f.qps.at[s];
	int o = peer_of(f, q);
	int room = std::min({ kMaxChain,
			      int(q.cap.max_send_wr) - int(q.sq.size()),
			      f.cqs.at[q.scq].cq->cqe });
	int want = std::min<int>(1 + r.below(kMaxChain), room), n = 0;
	bool recv_ok = can_receive(f, f.qps.at[o]);
	ibv_send_wr wr[kMaxChain];
	ibv_sge sge[kMaxChain][3];
	f.arg("qp%d to qp%d:", s, o);
	for (int i = 0; i < want; i++) {
		if (!build_xfer(f, r, s, o, recv_ok, wr[n], sge[n]))
			continue;
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
	}
	if (!n)
		return res;
	ibv_send_wr *bad = nullptr;
	int ret = ibv_post_send(q.qp, wr, &bad);
	int k = posted(f, ret, bad, wr, n, "ibv_post_send");
	for (int i = 0; i < k; i++)
		f.track(Queue::Send, s, wr[i].wr_id, wr[i].opcode, 0);
	return f.ret(ret, "ibv_post_send");
}

} // namespace vfuzz
