// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-vfuzz's operations on memory: PDs, XRC domains, MRs (registered,
// re-registered, advised, imported), windows, AHs; and device queries.
#include "vfuzz.h"

#include <algorithm>
#include <fcntl.h>

namespace vfuzz {

// ---- Protection domains and XRC domains ------------------------------------

Res op_alloc_pd(Fuzz &f, Rng &r)
{
	int s = f.pds.free_slot(r);

	if (s < 0)
		return skip();
	errno = 0;
	ibv_pd *pd = ibv_alloc_pd(f.ctx);
	f.arg("as pd%d", s);
	f.pds.at[s].pd = pd;
	return f.ptr(pd, "ibv_alloc_pd");
}

Res op_dealloc_pd(Fuzz &f, Rng &r)
{
	int s = f.pds.pick(r);

	if (s < 0)
		return skip();
	int users = f.pd_users(s);
	f.arg("pd%d (%d users)", s, users);
	int ret = ibv_dealloc_pd(f.pds.at[s].pd);
	if (!ret && users)
		f.fail("ibv_dealloc_pd of pd%d succeeded with %d objects in it",
		       s, users);
	if (!ret)
		f.pds.at[s] = {};
	return f.ret(ret, "ibv_dealloc_pd");
}

Res op_open_xrcd(Fuzz &f, Rng &r)
{
	int s = f.xrcds.free_slot(r);

	if (s < 0)
		return skip();
	ibv_xrcd_init_attr a{};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = -1;
	a.oflags = r.pct(90) ? O_CREAT : r.pct(50) ? 0 : O_CREAT | O_EXCL;
	f.arg("oflags %#x as xrcd%d", a.oflags, s);
	errno = 0;
	ibv_xrcd *x = ibv_open_xrcd(f.ctx, &a);
	f.xrcds.at[s].xrcd = x;
	return f.ptr(x, "ibv_open_xrcd");
}

Res op_close_xrcd(Fuzz &f, Rng &r)
{
	int s = f.xrcds.pick(r);

	if (s < 0)
		return skip();
	int users = f.xrcd_users(s);
	f.arg("xrcd%d (%d users)", s, users);
	int ret = ibv_close_xrcd(f.xrcds.at[s].xrcd);
	if (!ret && users)
		f.fail("ibv_close_xrcd of xrcd%d succeeded with %d SRQs or QPs "
		       "in it", s, users);
	if (!ret)
		f.xrcds.at[s] = {};
	return f.ret(ret, "ibv_close_xrcd");
}

// ---- Memory regions --------------------------------------------------------

enum class Reg { Plain, Iova, Implicit };

// An IOVA for @len bytes at @addr: the address, another with the same
// page offset or not, one near 0, one that wraps.
static uint64_t pick_iova(Rng &r, uint64_t addr, uint64_t len)
{
	switch (r.below(5)) {
	case 0: return addr;
	case 1: return (r.next() & 0x0000fffffffff000ULL) + addr % g_page;
	case 2: return r.next();
	case 3: return addr % g_page;
	default: return UINT64_MAX - len / 2;
	}
}

static Res reg(Fuzz &f, Rng &r, Reg kind)
{
	int s = f.mrs.free_slot(r), p = f.pds.pick(r);

	if (s < 0 || p < 0)
		return skip();
	int access = mr_access(r);
	Region g{ 0, SIZE_MAX, -1 };
	if (kind == Reg::Implicit)
		access |= IBV_ACCESS_ON_DEMAND;
	else
		g = f.reg_region(r);
	if (g.buf >= 0 && f.bufs[g.buf].spec.odp_only)
		access |= IBV_ACCESS_ON_DEMAND;
	uint64_t iova = g.addr;
	if (kind == Reg::Iova)
		iova = pick_iova(r, g.addr, g.len);
	f.arg("pd%d %s/%#llx iova %s access %#x as mr%d", p,
	      f.fmt_addr(g.addr).c_str(), ull(g.len),
	      iova == g.addr ? "=addr" : strf("%#llx", ull(iova)).c_str(),
	      access, s);
	errno = 0;
	void *addr = reinterpret_cast<void *>(g.addr);
	ibv_pd *pd = f.pds.at[p].pd;
	ibv_mr *mr = kind == Reg::Iova ?
			     ibv_reg_mr_iova(pd, addr, g.len, iova, access) :
			     ibv_reg_mr(pd, addr, g.len, access);
	if (mr)
		f.mrs.at[s] = { mr,    p,    g.buf,  g.addr,
				g.len, iova, access, kind == Reg::Implicit };
	return f.ptr(mr, "ibv_reg_mr");
}

Res op_reg_mr(Fuzz &f, Rng &r)
{
	return reg(f, r, Reg::Plain);
}

Res op_reg_mr_iova(Fuzz &f, Rng &r)
{
	return reg(f, r, Reg::Iova);
}

Res op_reg_mr_implicit(Fuzz &f, Rng &r)
{
	return reg(f, r, Reg::Implicit);
}

Res op_dereg_mr(Fuzz &f, Rng &r)
{
	int s = f.mrs.pick(r);

	if (s < 0)
		return skip();
	Mr &m = f.mrs.at[s];
	uint32_t lkey = m.mr->lkey, rkey = m.mr->rkey;
	f.arg("mr%d (%d windows bound to it last)", s, f.mr_windows(s));
	int ret = ibv_dereg_mr(m.mr);
	Res res = f.ret(ret, "ibv_dereg_mr");
	if (ret)
		return res;
	f.forget_key(lkey);
	f.forget_key(rkey);
	for (Mw &w : f.mws.at)
		if (w.mr == s)
			w.mr = -1;
	m = {};
	return res;
}

// ibv_rereg_mr's result @ret: 0, or one of its negative codes with errno.
static Res rereg_result(Fuzz &f, int ret)
{
	int e = errno;

	if (!ret || ret == IBV_REREG_MR_ERR_DO_FORK_OLD)
		return ok();
	if (ret < IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW || ret > 0)
		f.fail("ibv_rereg_mr returned %d, none of its codes", ret);
	if (!plausible(e))
		f.fail("ibv_rereg_mr returned %d with errno %d", ret, e);
	return err(e);
}

Res op_rereg_mr(Fuzz &f, Rng &r)
{
	int s = f.mrs.pick(r);

	if (s < 0)
		return skip();
	Mr &m = f.mrs.at[s];
	int flags = 1 + r.below(IBV_REREG_MR_FLAGS_SUPPORTED);
	if (r.pct(8))
		flags = r.pct(50) ? 0 : flags | (r.pct(50) ? 8 : 1 << 30);
	int p = f.pds.pick(r);
	ibv_pd *pd = (flags & IBV_REREG_MR_CHANGE_PD) && r.pct(97) ?
			     f.pds.at[p].pd : nullptr;
	Region g = { m.addr, m.len, m.buf };
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		g = f.reg_region(r);
	int access = (flags & IBV_REREG_MR_CHANGE_ACCESS) || r.pct(3) ?
			     mr_access(r) : 0;
	// An ODP-only buffer stays registered with ON_DEMAND only.
	bool odp = (flags & IBV_REREG_MR_CHANGE_ACCESS ? access : m.access) &
		   IBV_ACCESS_ON_DEMAND;
	if (g.buf >= 0 && f.bufs[g.buf].spec.odp_only && !odp) {
		if (flags & IBV_REREG_MR_CHANGE_ACCESS)
			access |= IBV_ACCESS_ON_DEMAND;
		else
			g = f.slice(r, f.pick_buf(r, false));
	}
	f.arg("mr%d flags %#x pd%d %s/%#llx access %#x", s, flags,
	      pd ? p : -1, f.fmt_addr(g.addr).c_str(), ull(g.len), access);
	uint32_t lkey = m.mr->lkey, rkey = m.mr->rkey;
	errno = 0;
	Res res = rereg_result(f, ibv_rereg_mr(m.mr, flags, pd,
					       reinterpret_cast<void *>(g.addr),
					       g.len, access));
	if (res.kind != Res::Ok)
		return res;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		m.addr = m.iova = g.addr;
		m.len = g.len;
		m.buf = g.buf;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		m.pd = p;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		m.access = access;
	if (m.mr->lkey != lkey)
		f.forget_key(lkey);
	if (m.mr->rkey != rkey)
		f.forget_key(rkey);
	return res;
}

// Prefetch: SGEs of an ODP MR of the PD most of the time, in range or
// across an edge; random advice and flags now and then.
Res op_advise_mr(Fuzz &f, Rng &r)
{
	static const ibv_advise_mr_advice advice[] = {
		IBV_ADVISE_MR_ADVICE_PREFETCH,
		IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
	};
	int p = f.pds.pick(r);

	if (p < 0)
		return skip();
	auto adv = r.pct(95) ? r.pick(advice) :
			       ibv_advise_mr_advice(3 + r.below(4));
	uint32_t flags = r.pct(50) ? IBV_ADVISE_MR_FLAG_FLUSH : 0;
	if (r.pct(10))
		flags = 1u << r.below(32);
	uint32_t n = r.pct(95) ? 1 + r.below(3) : r.pct(50) ? 0 : kMaxSge;
	int m = f.mrs.pick_if(r, [&](const Mr &x) {
		return x.pd == p && (x.access & IBV_ACCESS_ON_DEMAND);
	});
	ibv_sge sge[kMaxSge];
	for (uint32_t i = 0; i < n; i++) {
		if (m < 0 || r.pct(30)) {
			sge[i] = f.local_sge(r, 0);
			continue;
		}
		Target t = f.mr_target(r, m, false);
		uint64_t len = std::min<uint64_t>(pick_len(r, t.len),
						  UINT32_MAX);
		sge[i] = { f.pick_addr(r, t, len, false), uint32_t(len),
			   t.key };
	}
	f.arg("pd%d advice %d flags %#x %s", p, adv, flags,
	      f.fmt_sges(sge, n).c_str());
	return f.ret(ibv_advise_mr(f.pds.at[p].pd, adv, flags, sge, n),
		     "ibv_advise_mr");
}

// ibv_import_pd and ibv_import_mr of a pooled MR (or of random handles)
// into a context imported from ours; the MR has the keys of the one it
// imports. Both unimported at once.
Res op_import_mr(Fuzz &f, Rng &r)
{
	int m = r.pct(85) ? f.mrs.pick(r) : -1;
	uint32_t pdh = m >= 0 ? f.mrs.at[m].mr->pd->handle : r.below(64);
	uint32_t mrh = m >= 0 ? f.mrs.at[m].mr->handle : r.below(64);

	if (!f.import_ctx())
		return skip();
	f.arg("%s: pd handle %u, mr handle %u",
	      m >= 0 ? strf("mr%d", m).c_str() : "random", pdh, mrh);
	errno = 0;
	ibv_pd *pd = ibv_import_pd(f.ictx, pdh);
	Res res = f.ptr(pd, "ibv_import_pd");
	if (!pd)
		return res;
	errno = 0;
	ibv_mr *mr = ibv_import_mr(pd, mrh);
	res = f.ptr(mr, "ibv_import_mr");
	if (mr && m >= 0) {
		const Mr &x = f.mrs.at[m];
		if (mr->lkey != x.mr->lkey || mr->rkey != x.mr->rkey ||
		    (!x.implicit && mr->length != x.mr->length))
			f.fail("imported mr%d: lkey %#x rkey %#x length %#zx, "
			       "its own are %#x %#x %#zx", m, mr->lkey,
			       mr->rkey, mr->length, x.mr->lkey, x.mr->rkey,
			       x.mr->length);
	}
	if (mr)
		ibv_unimport_mr(mr);
	ibv_unimport_pd(pd);
	return res;
}

// ---- Memory windows --------------------------------------------------------

Res op_alloc_mw(Fuzz &f, Rng &r)
{
	int s = f.mws.free_slot(r), p = f.pds.pick(r);

	if (s < 0 || p < 0)
		return skip();
	int type = r.pct(95) ? 1 + r.below(2) : r.pick({ 0, 3 });
	f.arg("pd%d type %d as mw%d", p, type, s);
	errno = 0;
	ibv_mw *mw = ibv_alloc_mw(f.pds.at[p].pd, ibv_mw_type(type));
	if (mw)
		f.mws.at[s] = { mw, p, mw->rkey };
	return f.ptr(mw, "ibv_alloc_mw");
}

Res op_dealloc_mw(Fuzz &f, Rng &r)
{
	int s = f.mws.pick(r);

	if (s < 0)
		return skip();
	f.arg("mw%d", s);
	uint32_t key = f.mws.at[s].key;
	int ret = ibv_dealloc_mw(f.mws.at[s].mw);
	if (!ret) {
		f.forget_key(key);
		f.mws.at[s] = {};
	}
	return f.ret(ret, "ibv_dealloc_mw");
}

// ibv_bind_mw: a (type 1) window bound by a WR on a QP.
Res op_bind_mw(Fuzz &f, Rng &r)
{
	int w = f.mws.pick(r), q = f.pick_qp(r, true);

	if (w < 0 || q < 0)
		return skip();
	Mw &mw = f.mws.at[w];
	Bind b = f.bind_args(r, mw.pd);
	ibv_mw_bind mb{};
	mb.wr_id = f.new_wr_id();
	mb.send_flags = send_flags(r) & ~IBV_SEND_INLINE;
	mb.bind_info = { b.mr >= 0 ? f.mrs.at[b.mr].mr : nullptr, b.addr,
			 b.len, b.access };
	f.arg("qp%d mw%d wr%llu mr%d %s/%#llx access %#x", q, w,
	      ull(mb.wr_id), b.mr, f.fmt_addr(b.addr).c_str(), ull(b.len),
	      b.access);
	int ret = ibv_bind_mw(f.qps.at[q].qp, mw.mw, &mb);
	if (queued(ret))
		f.track(Queue::Send, q, mb.wr_id, IBV_WR_BIND_MW, 0);
	if (!ret)
		f.rebind(w, b, mw.mw->rkey);
	return f.ret(ret, "ibv_bind_mw");
}

// ---- Address handles -------------------------------------------------------

Res op_create_ah(Fuzz &f, Rng &r)
{
	int s = f.ahs.free_slot(r), p = f.pds.pick(r);

	if (s < 0 || p < 0)
		return skip();
	ibv_ah_attr a;
	f.fill_ah(r, a, false);
	f.arg("pd%d port %d sgid_index %d global %d as ah%d", p, a.port_num,
	      a.grh.sgid_index, a.is_global, s);
	errno = 0;
	ibv_ah *ah = ibv_create_ah(f.pds.at[p].pd, &a);
	if (ah)
		f.ahs.at[s] = { ah, p };
	return f.ptr(ah, "ibv_create_ah");
}

Res op_destroy_ah(Fuzz &f, Rng &r)
{
	int s = f.ahs.pick(r);

	if (s < 0)
		return skip();
	f.arg("ah%d", s);
	int ret = ibv_destroy_ah(f.ahs.at[s].ah);
	if (!ret)
		f.ahs.at[s] = {};
	return f.ret(ret, "ibv_destroy_ah");
}

// ---- The device ------------------------------------------------------------

// ibv_query_device_ex, _port, _gid_ex or _pkey, ports and indexes now and
// then out of range.
Res op_query_device(Fuzz &f, Rng &r)
{
	uint8_t port = r.pct(90) ? 1 : r.pick({ 0, 2 });
	int index = r.pct(80) ? r.below(4) : r.pick({ 1023, 1024, 0x10000 });
	int ret;

	switch (r.below(4)) {
	case 0: {
		ibv_device_attr_ex ax{};
		f.arg("device");
		return f.ret(ibv_query_device_ex(f.ctx, nullptr, &ax),
			     "ibv_query_device_ex");
	}
	case 1: {
		ibv_port_attr pa{};
		f.arg("port %d", port);
		return f.ret(ibv_query_port(f.ctx, port, &pa),
			     "ibv_query_port");
	}
	case 2: {
		ibv_gid_entry e{};
		f.arg("port %d gid %d", port, index);
		return f.ret(ibv_query_gid_ex(f.ctx, port, index, &e, 0),
			     "ibv_query_gid_ex");
	}
	default: {
		__be16 pkey;
		f.arg("port %d pkey %d", port, index);
		errno = 0;
		ret = ibv_query_pkey(f.ctx, port, index, &pkey);
		// It reads sysfs and returns -1 (errno set) on failure.
		return ret ? f.ret(errno, "ibv_query_pkey") : ok();
	}
	}
}

} // namespace vfuzz
