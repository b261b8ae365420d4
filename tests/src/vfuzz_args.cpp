// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-vfuzz: the arguments of operations. The buffers (and their canary
// pages), and the keys, addresses, lengths and flags requests name: mostly
// right, often at or past an edge, never a canary through a key that would
// let it be touched.
#include "vfuzz.h"

#include <algorithm>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace vfuzz {

// ---- Buffers ---------------------------------------------------------------

// What an MR may be registered over. The data of the ODP-only ones is not
// touched before a request (or prefetch) faults it in.
const BufSpec kBufs[] = {
	{ "private", 1, false, false, false },
	{ "private", 3, false, false, false },
	{ "private", 17, false, false, false },
	{ "private", 64, false, false, false },
	{ "shared", 4, true, false, false },
	{ "shared", 33, true, false, false },
	{ "private ODP-only", 32, false, true, false },
	{ "shared ODP-only", 8, true, true, false },
	{ "THP", 512, false, false, true },
	{ "THP ODP-only", 1024, false, true, true },
};

// Byte @i of the canary pages: never 0, and no two pages alike.
static uint8_t canary_byte(uint64_t seed, size_t i)
{
	uint64_t h = i ^ (seed * 0x9e3779b97f4a7c15ULL);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return uint8_t(1 + h % 255);
}

// Maps @b as [canary][data][canary] (its data 2 MiB aligned for THP).
static bool map_buf(Buf &b)
{
	size_t len = b.spec.pages * g_page;
	size_t align = b.spec.thp ? kHuge : g_page;
	size_t span = len + 2 * g_page + align;
	int flags = (b.spec.shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS;
	void *m = mmap(nullptr, span, PROT_READ | PROT_WRITE, flags, -1, 0);

	if (m == MAP_FAILED) {
		perror("mmap");
		return false;
	}
	auto *start = static_cast<uint8_t *>(m);
	uintptr_t d = (uintptr_t(start) + g_page + align - 1) & ~(align - 1);
	b.data = reinterpret_cast<uint8_t *>(d);
	b.len = len;
	uint8_t *lo = b.data - g_page, *end = b.data + len + g_page;
	if (lo > start)
		munmap(start, lo - start);
	if (start + span > end)
		munmap(end, start + span - end);
	if (b.spec.thp)
		madvise(b.data, len, MADV_HUGEPAGE);
	if (!b.spec.odp_only)
		memset(b.data, 0x5a, len);
	return true;
}

// The buffers, their canaries filled; the PROT_NONE hole.
bool Fuzz::map_memory()
{
	for (const BufSpec &spec : kBufs) {
		Buf b{ spec };
		if (!map_buf(b))
			return false;
		bufs.push_back(b);
	}
	canaries.resize(2 * bufs.size() * g_page);
	for (size_t i = 0; i < canaries.size(); i++)
		canaries[i] = canary_byte(seed, i);
	for (size_t b = 0; b < bufs.size(); b++)
		for (int side = 0; side < 2; side++)
			memcpy(bufs[b].canary(side),
			       &canaries[(2 * b + side) * g_page], g_page);
	hole_len = 16 * g_page;
	void *h = mmap(nullptr, hole_len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (h == MAP_FAILED) {
		perror("mmap");
		return false;
	}
	hole = static_cast<uint8_t *>(h);
	return true;
}

// ---- Keys, addresses, lengths, flags ---------------------------------------

// A random buffer; one of the ODP-only ones only if @odp_only_too.
int Fuzz::pick_buf(Rng &r, bool odp_only_too) const
{
	int n = 0, k;

	for (const Buf &b : bufs)
		n += odp_only_too || !b.spec.odp_only;
	k = r.below(n);
	for (size_t i = 0; i < bufs.size(); i++)
		if ((odp_only_too || !bufs[i].spec.odp_only) && !k--)
			return i;
	return 0;
}

// A slice of buffer @b's data: page aligned or not, a few pages or a few
// bytes, now and then empty.
Region Fuzz::slice(Rng &r, int b) const
{
	const Buf &buf = bufs[b];
	size_t pages = buf.len / g_page;
	uint64_t off = r.pct(60) ? r.below(pages) * g_page : r.below(buf.len);
	uint64_t room = buf.len - off, len;

	if (r.pct(4))
		len = 0;
	else if (r.pct(50))
		len = std::min<uint64_t>(room, (1 + r.below(pages)) * g_page);
	else
		len = 1 + r.below(room);
	return { uintptr_t(buf.data) + off, len, b };
}

// What to register an MR over: mostly a slice of a buffer (never a canary
// page), else memory no MR can be over: the PROT_NONE hole (an ODP MR
// can), NULL, a range that wraps past 2^64, a kernel address.
Region Fuzz::reg_region(Rng &r) const
{
	unsigned k = r.below(100);

	if (k < 86)
		return slice(r, pick_buf(r, true));
	if (k < 91)
		return { uintptr_t(hole) + r.below(hole_len / 2),
			 1 + r.below(hole_len / 2), -1 };
	if (k < 94)
		return { 0, 1 + r.below(8192), -1 };
	if (k < 97)
		return { UINT64_MAX - 4095, 8192, -1 };
	return { kKernelAddr, g_page, -1 };
}

// Do the @len bytes at @a touch a canary page?
bool Fuzz::touches_canary(uint64_t a, uint64_t len) const
{
	if (!len)
		return false;
	uint64_t last = a + (len - 1);
	if (last < a)
		last = UINT64_MAX;
	for (const Buf &b : bufs)
		for (int side = 0; side < 2; side++) {
			uint64_t s = uintptr_t(b.canary(side));
			if (a <= s + g_page - 1 && last >= s)
				return true;
		}
	return false;
}

// Is @key that of an implicit ODP MR (which covers the canaries too)?
bool Fuzz::implicit_key(uint32_t key) const
{
	for (const Mr &m : mrs.at)
		if (m.live() && m.implicit &&
		    (m.mr->lkey == key || m.mr->rkey == key))
			return true;
	return false;
}

// @key named something that is gone: a stale key to try later.
void Fuzz::forget_key(uint32_t key)
{
	stale[nstale++ % stale.size()] = key;
}

// A random buffer's data, as the space of a key that names no range.
Target Fuzz::buf_target(Rng &r) const
{
	const Buf &b = bufs[r.below(bufs.size())];
	Target t;

	t.base = uintptr_t(b.data);
	t.len = b.len;
	return t;
}

// MR @m's lkey (or @rkey), for addresses of its range: as registered (the
// IOVA), or from 0 for a zero-based one. An implicit MR's range is all
// memory; its addresses are those of a buffer.
Target Fuzz::mr_target(Rng &r, int m, bool rkey) const
{
	const Mr &x = mrs.at[m];
	Target t = x.implicit ? buf_target(r) : Target{};

	if (!x.implicit) {
		bool zero = (x.access & IBV_ACCESS_ZERO_BASED) && r.pct(50);
		t.base = zero ? 0 : x.iova;
		t.len = x.len;
	}
	t.key = rkey ? x.mr->rkey : x.mr->lkey;
	t.implicit = x.implicit;
	t.name = strf("mr%d.%c", m, rkey ? 'r' : 'l');
	return t;
}

Target Fuzz::mw_target(int w) const
{
	const Mw &x = mws.at[w];
	Target t;

	t.key = x.key;
	t.base = x.zero_based ? 0 : x.addr;
	t.len = x.len;
	t.name = strf("mw%d", w);
	return t;
}

// A key for a request: mostly one of a pooled MR (its rkey if @remote)
// or window, else one of something gone, one with another tag, a random
// one, or 0.
Target Fuzz::pick_key(Rng &r, bool remote) const
{
	int m = mrs.pick(r), w = mws.pick(r);
	unsigned k = r.below(100);
	Target t;

	if (k < 45 && m >= 0) {
		t = mr_target(r, m, remote != r.pct(10));
	} else if (k < 65 && w >= 0) {
		t = mw_target(w);
	} else if (k < 75 && nstale) {
		t = buf_target(r);
		uint64_t n = std::min(nstale, uint64_t(stale.size()));
		t.key = stale[r.below(n)];
		t.name = "stale";
	} else if (k < 85 && (m >= 0 || w >= 0)) {
		t = m >= 0 ? mr_target(r, m, remote) : mw_target(w);
		t.key ^= 1 + r.below(255);
		t.name += "^tag";
	} else if (k < 96) {
		t = buf_target(r);
		t.key = r.next();
		t.name = "rand";
	} else {
		t = buf_target(r);
		t.key = 0;
		t.name = "0";
	}
	t.implicit = implicit_key(t.key);
	return t;
}

// An address of @len bytes inside some buffer's data; a kernel address if
// none is that large.
uint64_t Fuzz::data_addr(Rng &r, uint64_t len, bool align8) const
{
	int n = 0;

	for (const Buf &b : bufs)
		n += b.len >= len;
	int k = r.below(n);
	for (const Buf &b : bufs) {
		if (b.len < len || k--)
			continue;
		uint64_t a = uintptr_t(b.data) + r.below(b.len - len + 1);
		return align8 ? a & ~7ULL : a;
	}
	return kKernelAddr;
}

// Are the @len bytes at @a all in the @n bytes at @base?
bool within(uint64_t a, uint64_t len, uint64_t base, uint64_t n)
{
	return a >= base && len <= n && a - base <= n - len;
}

// May a request name the @len bytes at @a with @t's key? Through an
// implicit ODP MR, whose range does not end at a canary, only bytes of the
// buffer @t is about, or of the hole. (Decided on where @a is in them, not
// on where the mappings happen to lie, so that a seed does the same.)
bool Fuzz::may_name(const Target &t, uint64_t a, uint64_t len) const
{
	if (!t.implicit)
		return true;
	if (within(a, len, uintptr_t(hole), hole_len))
		return true;
	return within(a, len, t.base, t.len) && !touches_canary(a, len);
}

// An address for @len bytes of @t's space: at its start or end, across an
// edge, inside, unaligned, anywhere, in the PROT_NONE hole; one that
// may_name() allows.
uint64_t Fuzz::pick_addr(Rng &r, const Target &t, uint64_t len,
			 bool align8) const
{
	uint64_t b = t.base, n = t.len, a;

	switch (r.below(12)) {
	case 0: a = b; break;
	case 1:
	case 2:
	case 3: a = b + r.below(n + 1); break;
	case 4: a = b + n - len; break;
	case 5: a = b + n - len + 1; break;
	case 6: a = b + n; break;
	case 7: a = b - 1 - r.below(16); break;
	case 8: a = b + r.below(n + 1) + 1 + r.below(7); break;
	case 9: a = r.next(); break;
	case 10: a = uintptr_t(hole) + r.below(hole_len); break;
	default: a = b + (r.below(n + 1) & ~7ULL); break;
	}
	if (align8)
		a &= ~7ULL;
	if (!may_name(t, a, len))
		a = data_addr(r, len, align8);
	return a;
}

// A length for a request in a space of @span bytes: 0, 1, small, MTU
// multiples and one either side, the whole span and one more, large.
uint64_t pick_len(Rng &r, uint64_t span)
{
	static const uint64_t mtu[] = { 256, 512, 1024, 2048, 4096 };

	switch (r.below(12)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return 1 + r.below(64);
	case 3: return 8;
	case 4:
	case 5: return r.pick(mtu) * (1 + r.below(4)) + r.below(3) - 1;
	case 6: return span;
	case 7: return span + 1;
	case 8: return r.below(span + 1);
	case 9: return r.pct(95) ? 1 + r.below(65536) : 1 << 20;
	case 10: return r.pct(97) ? 1 + r.below(4096) : UINT32_MAX;
	default: return 1 + r.below(std::min<uint64_t>(span, 16384) + 1);
	}
}

// A local SGE: a key (see pick_key()) and an address of its space; @want
// bytes (an atomic's 8) most of the time, if @want.
ibv_sge Fuzz::local_sge(Rng &r, uint32_t want) const
{
	Target t = pick_key(r, false);
	uint64_t len = want && r.pct(80) ? want : pick_len(r, t.len);

	len = std::min<uint64_t>(len, UINT32_MAX);
	return { pick_addr(r, t, len, false), uint32_t(len), t.key };
}

// Inline data: the provider copies it itself, so always in a buffer's
// data (not an ODP-only one's), its length up to past the inline limit.
ibv_sge Fuzz::inline_sge(Rng &r) const
{
	static const uint64_t lens[] = { 0, 1, 8, 64, 200, 512, 513 };
	const Buf &b = bufs[pick_buf(r, false)];
	uint64_t off = r.below(b.len);
	uint64_t len = std::min(b.len - off, r.pick(lens));

	return { uintptr_t(b.data) + off, uint32_t(len), 0 };
}

// Access flags of an MR: each one now and then, any combination.
int mr_access(Rng &r)
{
	static const struct {
		int bit;
		unsigned pct;
	} bits[] = {
		{ IBV_ACCESS_LOCAL_WRITE, 75 },
		{ IBV_ACCESS_REMOTE_WRITE, 45 },
		{ IBV_ACCESS_REMOTE_READ, 45 },
		{ IBV_ACCESS_REMOTE_ATOMIC, 35 },
		{ IBV_ACCESS_MW_BIND, 35 },
		{ IBV_ACCESS_ZERO_BASED, 8 },
		{ IBV_ACCESS_ON_DEMAND, 30 },
		{ IBV_ACCESS_HUGETLB, 8 },
		{ IBV_ACCESS_RELAXED_ORDERING, 8 },
	};
	int a = 0;

	for (const auto &b : bits)
		if (r.pct(b.pct))
			a |= b.bit;
	if (r.pct(2))
		a |= 1 << 15;	// no such flag
	return a;
}

// Access flags of a window.
unsigned mw_access(Rng &r)
{
	unsigned a = 0;

	a |= r.pct(50) ? IBV_ACCESS_REMOTE_WRITE : 0;
	a |= r.pct(50) ? IBV_ACCESS_REMOTE_READ : 0;
	a |= r.pct(30) ? IBV_ACCESS_REMOTE_ATOMIC : 0;
	a |= r.pct(60) ? IBV_ACCESS_LOCAL_WRITE : 0;
	a |= r.pct(30) ? IBV_ACCESS_ZERO_BASED : 0;
	a |= r.pct(3) ? IBV_ACCESS_MW_BIND : 0;
	a |= r.pct(2) ? 1u << 15 : 0;
	return a;
}

// A QP's remote access flags: all three, mostly.
unsigned qp_access(Rng &r)
{
	const unsigned all = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;

	return r.pct(75) ? all : unsigned(r.next()) & (all | 1);
}

// Where a bind puts a window of a PD @pd: an MR (mostly one of that PD),
// mostly inside it, else across an edge, outside, or of length 0 (an
// unbind). On an implicit MR only over data.
Bind Fuzz::bind_args(Rng &r, int pd) const
{
	Bind b;

	if (r.pct(85)) {
		b.mr = mrs.pick_if(r, [&](const Mr &m) { return m.pd == pd; });
		if (b.mr < 0 || r.pct(15))
			b.mr = mrs.pick(r);
	}
	Target t = b.mr >= 0 ? mr_target(r, b.mr, true) : buf_target(r);
	t.base = b.mr >= 0 && !mrs.at[b.mr].implicit ? mrs.at[b.mr].iova :
						       t.base;
	b.len = r.pct(10) ? 0 : pick_len(r, t.len);
	b.addr = pick_addr(r, t, b.len, false);
	b.access = mw_access(r);
	return b;
}

// Window @w was (or is about to be) bound as @b, with key @key.
void Fuzz::rebind(int w, const Bind &b, uint32_t key)
{
	Mw &x = mws.at[w];

	if (x.key != key)
		forget_key(x.key);
	x.key = key;
	x.mr = b.mr;
	x.addr = b.addr;
	x.len = b.len;
	x.zero_based = b.access & IBV_ACCESS_ZERO_BASED;
	x.access = b.access;
}

// An address vector: mostly to port 1's GID 1 from GID index 1, as
// xfer.h's connect() does; unless @valid, now and then another port, GID
// index or destination.
void Fuzz::fill_ah(Rng &r, ibv_ah_attr &a, bool valid) const
{
	a = {};
	a.is_global = valid || r.pct(97);
	a.port_num = valid || r.pct(97) ? 1 : r.pick({ 0, 2 });
	a.sl = valid || r.pct(90) ? 0 : r.below(16);
	a.dlid = valid || r.pct(90) ? 0 : r.next();
	a.static_rate = valid || r.pct(95) ? 0 : r.below(20);
	a.grh.sgid_index = valid || r.pct(92) ? 1 : r.pick({ 0, 2, 3, 255 });
	a.grh.hop_limit = valid || r.pct(90) ? 64 : r.below(256);
	a.grh.traffic_class = valid || r.pct(90) ? 0 : r.below(256);
	a.grh.flow_label = r.pct(80) ? 0 : r.below(1 << 20);
	a.grh.dgid = gid[1];
	if (!valid && r.pct(5))
		a.grh.dgid = gid[0];
	if (!valid && r.pct(3)) {
		uint64_t hi = r.next(), lo = r.next();
		memcpy(a.grh.dgid.raw, &hi, 8);
		memcpy(a.grh.dgid.raw + 8, &lo, 8);
	}
}

// A QP to post on: mostly one we moved where it may (RTS and after for
// sends, INIT and after for receives).
int Fuzz::pick_qp(Rng &r, bool send) const
{
	bool any = r.pct(20);
	int s = qps.pick_if(r, [&](const Qp &q) {
		if (any)
			return true;
		if (send)
			return q.type != IBV_QPT_XRC_RECV &&
			       q.state >= IBV_QPS_RTS;
		return q.type != IBV_QPT_XRC_RECV && q.srq < 0 &&
		       q.state >= IBV_QPS_INIT;
	});
	return s >= 0 ? s : qps.pick(r);
}

// Whom QP @s connects to: itself, another pooled QP that can answer it
// (an XRC send QP: a receive QP, and the other way), or any number.
uint32_t Fuzz::peer_qpn(Rng &r, int s) const
{
	const Qp &q = qps.at[s];
	unsigned k = r.below(100);

	if (k < 35)
		return q.qpn;
	if (k < 90) {
		ibv_qp_type want = q.type;
		if (q.type == IBV_QPT_XRC_SEND)
			want = IBV_QPT_XRC_RECV;
		if (q.type == IBV_QPT_XRC_RECV)
			want = IBV_QPT_XRC_SEND;
		int o = qps.pick_if(r, [&](const Qp &x) {
			return x.type == want;
		});
		return o >= 0 ? qps.at[o].qpn : q.qpn;
	}
	return r.below(1 << 24);
}

// QP @s's state, as the kernel says (our last one if it will not say).
ibv_qp_state Fuzz::query_state(int s)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	int r = ibv_query_qp(qps.at[s].qp, &a, IBV_QP_STATE, &ia);

	if (r && !plausible(r))
		fail("ibv_query_qp returned %d", r);
	if (!r && a.qp_state > IBV_QPS_ERR)
		fail("ibv_query_qp: qp%d in state %d", s, a.qp_state);
	return r ? qps.at[s].state : a.qp_state;
}

// A context imported from ours (ibv_import_device on a dup of its command
// fd), made the first time one is needed.
bool Fuzz::import_ctx()
{
	if (!ictx_tried) {
		ictx_tried = true;
		int fd = dup(ctx->cmd_fd);
		ictx = fd >= 0 ? ibv_import_device(fd) : nullptr;
		if (!ictx && fd >= 0)
			close(fd);
		if (!ictx)
			note(strf("    no imported context: %s",
				  strerror(errno)));
	}
	return ictx;
}

// A send's flags: mostly signaled, now and then any other bit but
// IBV_SEND_INLINE. Inline data is read from the SGEs' addresses by the
// provider, in the caller's process, as a NIC's provider does: only
// send_sges() sets it, with SGEs of the fuzzer's own buffers (an inline
// SGE at an unmapped address crashes the caller, by the verbs' contract).
unsigned send_flags(Rng &r)
{
	unsigned fl = 0;

	fl |= r.pct(85) ? IBV_SEND_SIGNALED : 0;
	fl |= r.pct(10) ? IBV_SEND_FENCE : 0;
	fl |= r.pct(10) ? IBV_SEND_SOLICITED : 0;
	fl |= r.pct(2) ? (1u << r.below(32)) & ~unsigned(IBV_SEND_INLINE) : 0;
	return fl;
}

// Did a post that returned @ret (and says no more) queue its WRs?
// libibverbs and the provider refuse with EINVAL, EPERM or ENOMEM before
// they queue anything; any other error is the doorbell's, after.
bool queued(int ret)
{
	return ret != EINVAL && ret != EPERM && ret != ENOMEM;
}

// ---- Their names in the log -----------------------------------------------

// @a as an offset in a buffer (its data; negative: a canary before) or the
// hole, else as it is.
std::string Fuzz::fmt_addr(uint64_t a) const
{
	for (size_t i = 0; i < bufs.size(); i++) {
		uint64_t d = uintptr_t(bufs[i].data);
		if (a + g_page >= d && a < d + bufs[i].len + g_page)
			return a >= d ? strf("b%zu+%#llx", i, ull(a - d)) :
					strf("b%zu-%#llx", i, ull(d - a));
	}
	if (a >= uintptr_t(hole) && a < uintptr_t(hole) + hole_len)
		return strf("hole+%#llx", ull(a - uintptr_t(hole)));
	return strf("%#llx", ull(a));
}

// @k as the key of an object it names, else as it is.
std::string Fuzz::fmt_key(uint32_t k) const
{
	for (int i = 0; i < kSlots; i++) {
		if (mrs.at[i].live() && mrs.at[i].mr->lkey == k)
			return strf("mr%d.l", i);
		if (mrs.at[i].live() && mrs.at[i].mr->rkey == k)
			return strf("mr%d.r", i);
		if (mws.at[i].live() && mws.at[i].key == k)
			return strf("mw%d", i);
	}
	return strf("%#x", k);
}

std::string Fuzz::fmt_sges(const ibv_sge *sge, int n) const
{
	std::string s = "{";

	for (int i = 0; i < n && i < kMaxSge; i++)
		s += strf("%s%s@%s/%u", i ? " " : "",
			  fmt_key(sge[i].lkey).c_str(),
			  fmt_addr(sge[i].addr).c_str(), sge[i].length);
	return s + "}";
}

} // namespace vfuzz
