// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-badargs: every bad argument that ibv_rereg_mr(3), ibv_advise_mr(3),
// ibv_bind_mw(3) with ibv_alloc_mw(3), and ibv_import_pd(3) /
// ibv_import_mr(3) name or imply, given as an application could give it.
// Each call must be refused with the code its page names (EINVAL where the
// page names none, except that memory the process does not have is EFAULT
// and a handle that names nothing is ENOENT, as ib_uverbs answers for every
// driver), and must leave its object as it was: an MR keeps its keys, range
// and PD and still carries traffic; a refused prefetch faults no page in; a
// refused bind leaves no key that grants access, and not a byte lands
// through one.
//
//   sroce-badargs DEV TEST
#include "xfer.h"

#include <algorithm>
#include <string_view>

namespace xfer {
namespace {

// An access bit no libibverbs defines, outside the optional range (bits
// 20..29, which a device may ignore): ib_core refuses it.
const int kFutureAccess = 1 << 15;
// A range that starts in the last page below 2^64 and wraps past it.
const uint64_t kWrapAddr = UINTPTR_MAX - 4095;
const uint32_t kWrapLen = 8192;
const int kRw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
const uint32_t kFlush = IBV_ADVISE_MR_FLAG_FLUSH;

// --- the pair -------------------------------------------------------------

// After a failed WR the QPs are in error: reset both and connect again, as
// an application does.
void reconnect(Pair &p)
{
	for (Side *s : { &p.a, &p.b }) {
		ibv_qp_attr a{};
		ibv_wc wc;

		a.qp_state = IBV_QPS_RESET;
		CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE) == 0,
		      "QP 0x%x to RESET", s->qp->qp_num);
		while (ibv_poll_cq(s->cq, 1, &wc) > 0)
			;
	}
	connect(p, p.a, p.b);
	connect(p, p.b, p.a);
}

// A new fill pattern each time: bytes left from an earlier transfer do not
// pass for the ones of this one.
uint8_t next_seed()
{
	static uint8_t seed;

	return seed += 37;
}

// One RDMA operation of a's from its buffer at @off; its status.
ibv_wc_status rdma(Pair &p, ibv_wr_opcode op, size_t off, uint64_t raddr,
		   uint32_t rkey, uint32_t len)
{
	static uint64_t next_id = 1000;
	uint64_t id = next_id++;
	ibv_wc wc{};

	CHECK(post_send(p.a, op, off, len, id, raddr, rkey) == 0, "post %d",
	      op);
	if (!poll_one(p.a, wc))
		return IBV_WC_GENERAL_ERR;
	CHECK(wc.wr_id == id, "completion of wr %llu, expected %llu",
	      (unsigned long long)wc.wr_id, (unsigned long long)id);
	return wc.status;
}

// An RDMA WRITE of @len bytes through @rkey to @target (in b's buffer) is
// a remote access error, and not a byte of either side's buffer, guard
// pages included, changes (expect_untouched()).
void write_refused(Pair &p, uint32_t rkey, uint8_t *target, uint32_t len,
		   const char *what)
{
	Untouched u = arm_untouched(p);
	ibv_wc_status st = rdma(p, IBV_WR_RDMA_WRITE, 0, uintptr_t(target),
				rkey, len);
	CHECK(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE through %s (rkey 0x%x): %s, expected %s", what, rkey,
	      ibv_wc_status_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	std::string where = std::string("WRITE through ") + what;
	expect_untouched(p, u, where.c_str());
	reconnect(p);
}

// --- memory regions -------------------------------------------------------

// What an application sees of an MR.
struct MrView {
	uint32_t lkey, rkey, handle;
	void *addr;
	size_t length;
	ibv_pd *pd;
	ibv_context *context;

	explicit MrView(const ibv_mr *mr)
		: lkey(mr->lkey), rkey(mr->rkey), handle(mr->handle),
		  addr(mr->addr), length(mr->length), pd(mr->pd),
		  context(mr->context)
	{
	}
	bool operator==(const MrView &) const = default;
};

// b SENDs @len bytes from @m by @lkey; they arrive in a's buffer.
void send_from_b(Pair &p, uint8_t *m, uint32_t len, uint32_t lkey,
		 const char *what)
{
	ibv_sge sge = { uintptr_t(m), len, lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND, 2), *bad;

	memset(&p.a.buf[16384], 0, len);
	CHECK(post_recv(p.a, 16384, len, 1) == 0, "post_recv");
	CHECK(ibv_post_send(p.b.qp, &wr, &bad) == 0, "post send");
	expect_wc(p.b, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(p.a, 1, IBV_WC_SUCCESS, IBV_WC_RECV, len);
	CHECK(!memcmp(&p.a.buf[16384], m, len),
	      "%s: SEND by lkey 0x%x: bytes differ", what, lkey);
}

// @mr, of b's PD with kRw access, looks as @was and carries traffic: a's
// RDMA WRITE into it lands, a's RDMA READ returns it, and b SENDs from it
// by its lkey.
void mr_intact(Pair &p, ibv_mr *mr, const MrView &was, const char *what)
{
	int before = failures;
	MrView now(mr);

	CHECK(now == was, "%s: the MR changed: lkey 0x%x -> 0x%x, rkey 0x%x "
	      "-> 0x%x, addr %p -> %p, length %zu -> %zu, pd %p -> %p, "
	      "context %p -> %p", what, was.lkey, now.lkey, was.rkey,
	      now.rkey, was.addr, now.addr, was.length, now.length, was.pd,
	      now.pd, was.context, now.context);
	auto *m = static_cast<uint8_t *>(mr->addr);
	uint32_t len = uint32_t(std::min<size_t>(mr->length, 4096));
	fill(p.a, 0, len, next_seed());
	ibv_wc_status st = rdma(p, IBV_WR_RDMA_WRITE, 0, uintptr_t(m),
				mr->rkey, len);
	CHECK(st == IBV_WC_SUCCESS, "%s: WRITE into the MR afterwards: %s",
	      what, ibv_wc_status_str(st));
	if (st != IBV_WC_SUCCESS) {
		reconnect(p);
		return;
	}
	CHECK(!memcmp(m, &p.a.buf[0], len), "%s: WRITE into the MR "
	      "afterwards: bytes differ", what);
	memset(&p.a.buf[8192], 0, len);
	st = rdma(p, IBV_WR_RDMA_READ, 8192, uintptr_t(m), mr->rkey, len);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(m, &p.a.buf[8192], len),
	      "%s: READ from the MR afterwards: %s", what,
	      ibv_wc_status_str(st));
	if (st == IBV_WC_SUCCESS)
		send_from_b(p, m, len, mr->lkey, what);
	if (failures != before)
		reconnect(p);
}

// An MR of b's PD with kRw access on @mem.
ibv_mr *reg_rw(Pair &p, std::vector<uint8_t> &mem)
{
	ibv_mr *mr = ibv_reg_mr(p.b.pd, mem.data(), mem.size(), kRw);

	CHECK(mr, "reg MR: %s", strerror(errno));
	return mr;
}

// ibv_rereg_mr() returns @want with errno @err and leaves the MR as it
// was. ibv_rereg_mr(3) says the MR "shouldn't be used" after
// IBV_REREG_MR_ERR_CMD; sroce promises more (sroce_rereg_user_mr(): on
// failure the MR is unchanged), and that is what is checked.
void rereg_refused(Pair &p, ibv_mr *mr, int flags, ibv_pd *pd, void *addr,
		   size_t len, int access, int want, int err, const char *what)
{
	MrView was(mr);

	errno = 0;
	int ret = ibv_rereg_mr(mr, flags, pd, addr, len, access);
	int e = errno;
	CHECK(ret == want && e == err, "%s: ibv_rereg_mr returned %d errno "
	      "%d (%s), expected %d errno %d (%s)", what, ret, e, strerror(e),
	      want, err, strerror(err));
	mr_intact(p, mr, was, what);
}

// Flags beyond IBV_REREG_MR_FLAGS_SUPPORTED: libibverbs refuses them
// (ERR_INPUT, EINVAL), alone or with a valid change.
void t_rereg_future_flags(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	for (int f : { IBV_REREG_MR_FLAGS_SUPPORTED + 1, 1 << 30 }) {
		rereg_refused(p, mr, f, nullptr, nullptr, 0, 0,
			      IBV_REREG_MR_ERR_INPUT, EINVAL, "future flag");
		rereg_refused(p, mr, f | IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			      nullptr, 0, IBV_ACCESS_LOCAL_WRITE,
			      IBV_REREG_MR_ERR_INPUT, EINVAL,
			      "future flag with CHANGE_ACCESS");
	}
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// No flag at all: nothing to change. libibverbs lets it through; the
// kernel refuses it (ERR_CMD, EINVAL).
void t_rereg_no_flags(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	rereg_refused(p, mr, 0, nullptr, nullptr, 0, 0, IBV_REREG_MR_ERR_CMD,
		      EINVAL, "flags 0");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// Access bits without CHANGE_ACCESS: ERR_INPUT, EINVAL.
void t_rereg_access_without_flag(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	rereg_refused(p, mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
		      mem.data(), 4096, IBV_ACCESS_LOCAL_WRITE,
		      IBV_REREG_MR_ERR_INPUT, EINVAL,
		      "access with CHANGE_TRANSLATION only");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// CHANGE_TRANSLATION to zero bytes: ERR_INPUT, EINVAL.
void t_rereg_trans_zero_length(Pair &p)
{
	std::vector<uint8_t> mem(65536), other(8192);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	rereg_refused(p, mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
		      other.data(), 0, 0, IBV_REREG_MR_ERR_INPUT, EINVAL,
		      "length 0");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// CHANGE_TRANSLATION to address NULL: ERR_INPUT, EINVAL.
void t_rereg_trans_null_addr(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	rereg_refused(p, mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, nullptr,
		      8192, 0, IBV_REREG_MR_ERR_INPUT, EINVAL, "address NULL");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// CHANGE_TRANSLATION to a range that wraps past 2^64: the kernel refuses
// it (ERR_CMD, EINVAL) before it pins anything.
void t_rereg_trans_wraps(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	rereg_refused(p, mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
		      reinterpret_cast<void *>(kWrapAddr), kWrapLen, 0,
		      IBV_REREG_MR_ERR_CMD, EINVAL, "range past 2^64");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// A range the process no longer has (munmap'ed); ERR_CMD, EFAULT.
void t_rereg_trans_unmapped(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	void *hole = map_anon(65536);
	if (!mr || !hole)
		return;
	CHECK(munmap(hole, 65536) == 0, "munmap");
	rereg_refused(p, mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, hole,
		      65536, 0, IBV_REREG_MR_ERR_CMD, EFAULT,
		      "munmap'ed range");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// CHANGE_ACCESS with bits ibv_access_flags does not have: ERR_CMD, EINVAL.
void t_rereg_future_access(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	for (int bit : { kFutureAccess, 1 << 30 })
		rereg_refused(p, mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			      nullptr, 0, kRw | bit, IBV_REREG_MR_ERR_CMD,
			      EINVAL, "future access bit");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// Remote write or remote atomic without local write (ibv_reg_mr(3): "If
// IBV_ACCESS_REMOTE_WRITE or IBV_ACCESS_REMOTE_ATOMIC is set, then
// IBV_ACCESS_LOCAL_WRITE must be set too"): ERR_CMD, EINVAL.
void t_rereg_remote_write_no_local(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	rereg_refused(p, mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
		      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		      IBV_REREG_MR_ERR_CMD, EINVAL,
		      "remote write without local write");
	rereg_refused(p, mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
		      IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ,
		      IBV_REREG_MR_ERR_CMD, EINVAL,
		      "remote atomic without local write");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// All three changes, of which the translation fails (munmap'ed): none is
// made, not the PD's nor the access's either (ERR_CMD, EFAULT).
void t_rereg_all_or_nothing(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	ibv_pd *pd2 = ibv_alloc_pd(p.ctx);
	void *hole = map_anon(65536);
	CHECK(pd2, "alloc PD: %s", strerror(errno));
	if (!mr || !pd2 || !hole)
		return;
	CHECK(munmap(hole, 65536) == 0, "munmap");
	rereg_refused(p, mr,
		      IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
			      IBV_REREG_MR_CHANGE_ACCESS,
		      pd2, hole, 65536, IBV_ACCESS_LOCAL_WRITE,
		      IBV_REREG_MR_ERR_CMD, EFAULT,
		      "PD and access with a munmap'ed range");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc PD (the MR never moved "
	      "to it)");
}

// CHANGE_PD to a PD of another context (a second ibv_open_device of the
// same device): it is no PD of the MR's context, whatever its handle's
// number names there. Both ways: a handle that names nothing in the MR's
// context, and one that names another PD there (the kernel looks handles
// up in the MR's context: the MR must not move to that PD). ERR_CMD,
// EINVAL; the MR stays in its PD.
void t_rereg_pd_other_context(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	ibv_context *ctx2 = ibv_open_device(p.ctx->device);
	CHECK(ctx2, "second ibv_open_device: %s", strerror(errno));
	if (!mr || !ctx2)
		return;
	// The lowest free handle of the MR's context: nothing has it or any
	// higher number (handles are allocated lowest first).
	ibv_pd *probe = ibv_alloc_pd(p.ctx);
	CHECK(probe, "alloc PD: %s", strerror(errno));
	if (!probe)
		return;
	uint32_t free_handle = probe->handle;
	CHECK(ibv_dealloc_pd(probe) == 0, "dealloc PD");

	std::vector<ibv_pd *> pds;
	ibv_pd *aliased = nullptr, *unknown = nullptr;
	for (int i = 0; i < 256 && !unknown; i++) {
		ibv_pd *pd = ibv_alloc_pd(ctx2);
		CHECK(pd, "alloc PD in the second context: %s",
		      strerror(errno));
		if (!pd)
			break;
		pds.push_back(pd);
		if (pd->handle == p.a.pd->handle)
			aliased = pd;
		if (pd->handle >= free_handle)
			unknown = pd;
	}
	CHECK(aliased && unknown, "no PD of the second context has handle %u "
	      "(a's PD) or one above %u", p.a.pd->handle, free_handle);
	const struct {
		ibv_pd *pd;
		const char *what;
	} cases[] = {
		{ unknown, "PD of another context, handle unknown here" },
		{ aliased, "PD of another context, handle of a's PD here" },
	};
	for (const auto &c : cases) {
		if (!c.pd)
			continue;
		MrView was(mr);
		errno = 0;
		int ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, c.pd,
				       nullptr, 0, 0);
		int e = errno;
		CHECK(ret == IBV_REREG_MR_ERR_CMD && e == EINVAL,
		      "%s: ibv_rereg_mr returned %d errno %d (%s), expected %d "
		      "errno %d", c.what, ret, e, strerror(e),
		      IBV_REREG_MR_ERR_CMD, EINVAL);
		if (ret == 0) {
			// It moved (to the PD its handle names here): say so,
			// and move it back for the rest of the test.
			mr->context = p.ctx;
			mr->pd = p.a.pd;
			CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, p.b.pd,
					   nullptr, 0, 0) == 0,
			      "moving the MR back to b's PD");
			mr->pd = was.pd;
		}
		mr_intact(p, mr, was, c.what);
	}
	for (ibv_pd *pd : pds)
		CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD of the second "
		      "context");
	CHECK(ibv_close_device(ctx2) == 0, "close the second context");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// An imported MR (ibv_import_mr(3)) is not the application's to change:
// libibverbs refuses (ERR_INPUT, EINVAL), and neither the import nor the
// MR it stands for changes.
void t_rereg_imported_mr(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	ibv_mr *imp = mr ? ibv_import_mr(p.b.pd, mr->handle) : nullptr;
	CHECK(imp, "ibv_import_mr: %s", strerror(errno));
	if (!imp)
		return;
	MrView was(mr), imp_was(imp);
	errno = 0;
	int ret = ibv_rereg_mr(imp, IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			       nullptr, 0, IBV_ACCESS_LOCAL_WRITE);
	int e = errno;
	CHECK(ret == IBV_REREG_MR_ERR_INPUT && e == EINVAL,
	      "rereg of an imported MR: %d errno %d (%s)", ret, e,
	      strerror(e));
	CHECK(MrView(imp) == imp_was, "the imported MR changed");
	mr_intact(p, mr, was, "rereg of an imported MR");
	ibv_unimport_mr(imp);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// --- ibv_advise_mr --------------------------------------------------------

// Anonymous memory the process has not touched, registered on demand in
// @pd with @access.
struct OdpMr {
	size_t len;
	uint8_t *m;
	ibv_mr *mr = nullptr;

	OdpMr(ibv_pd *pd, size_t l, int access) : len(l), m(map_anon(l))
	{
		if (m)
			mr = ibv_reg_mr(pd, m, len,
					access | IBV_ACCESS_ON_DEMAND);
		CHECK(mr, "reg ODP MR: %s", strerror(errno));
	}
	~OdpMr()
	{
		if (mr)
			CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
		if (m)
			munmap(m, len);
	}
	OdpMr(const OdpMr &) = delete;
	OdpMr &operator=(const OdpMr &) = delete;
	explicit operator bool() const { return mr; }

	ibv_sge sge() const
	{
		return { uintptr_t(m), uint32_t(len), mr->lkey };
	}
	// The process gives its pages back: none is present any more.
	void forget() const
	{
		CHECK(madvise(m, len, MADV_DONTNEED) == 0, "madvise: %s",
		      strerror(errno));
	}
};

const size_t kOdpLen = 64 << 10;

// @o (of b's PD, kRw) still works: a synchronous PREFETCH_WRITE makes all
// of it present, and a's RDMA WRITE into it lands. Then its pages are
// given back again.
void odp_works(Pair &p, const OdpMr &o, const char *what)
{
	ibv_sge sge = o.sge();
	int ret = ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				kFlush, &sge, 1);
	CHECK(ret == 0, "%s: PREFETCH_WRITE afterwards: %s", what,
	      strerror(ret));
	CHECK(resident(o.m, o.len) == o.len / 4096, "%s: PREFETCH_WRITE "
	      "afterwards left %zu of %zu pages out", what,
	      o.len / 4096 - resident(o.m, o.len), o.len / 4096);
	fill(p.a, 0, 4096, next_seed());
	ibv_wc_status st = rdma(p, IBV_WR_RDMA_WRITE, 0, uintptr_t(o.m) + 4096,
				o.mr->rkey, 4096);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(o.m + 4096, &p.a.buf[0], 4096),
	      "%s: WRITE into the ODP MR afterwards: %s", what,
	      ibv_wc_status_str(st));
	if (st != IBV_WC_SUCCESS)
		reconnect(p);
	o.forget();
}

// ibv_advise_mr(@pd, ...) with @sges, whose first is @fresh's (untouched
// memory), returns @want; @fresh got no page from it (sroce_advise_mr()
// checks every SGE before it does anything), and works afterwards.
void advise_refused(Pair &p, const OdpMr &fresh, int advice, uint32_t flags,
		    ibv_sge *sges, uint32_t n, int want, const char *what,
		    ibv_pd *pd = nullptr)
{
	CHECK(resident(fresh.m, fresh.len) == 0, "%s: memory present before "
	      "the call", what);
	int ret = ibv_advise_mr(pd ? pd : p.b.pd, ibv_advise_mr_advice(advice),
				flags, sges, n);
	CHECK(ret == want, "%s: ibv_advise_mr returned %d (%s), expected %d "
	      "(%s)", what, ret, strerror(ret), want, strerror(want));
	size_t in = resident(fresh.m, fresh.len);
	CHECK(in == 0, "%s: the refused call faulted %zu pages in", what, in);
	fresh.forget();
	odp_works(p, fresh, what);
}

// An advice ibv_advise_mr_advice does not have: EOPNOTSUPP (ENOTSUP, the
// same number on Linux: "The advise operation isn't supported").
void t_advise_future_advice(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	if (!good)
		return;
	for (int advice : { IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT + 1, 17 }) {
		ibv_sge sge = good.sge();
		advise_refused(p, good, advice, kFlush, &sge, 1, EOPNOTSUPP,
			       "unknown advice");
	}
}

// Flags other than IBV_ADVISE_MR_FLAG_FLUSH: EINVAL ("The flags are
// invalid").
void t_advise_future_flags(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	if (!good)
		return;
	for (uint32_t flags : { kFlush << 1, kFlush | 1u << 31 }) {
		ibv_sge sge = good.sge();
		advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			       flags, &sge, 1, EINVAL, "unknown flag");
	}
}

// No SGE at all: nothing to advise on. EINVAL.
void t_advise_no_sge(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	if (!good)
		return;
	ibv_sge sge = good.sge();
	advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, kFlush,
		       &sge, 0, EINVAL, "num_sge 0");
}

// An lkey that names no MR: another tag on a valid key's index, key 0,
// the key of a deregistered ODP MR. ENOENT ("The providing lkeys aren't
// consistent with the MR's").
void t_advise_lkey_names_nothing(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	uint32_t gone_key = 0;
	{
		OdpMr gone(p.b.pd, kOdpLen, kRw);
		if (gone)
			gone_key = gone.mr->lkey;
	}
	if (!good || !gone_key)
		return;
	for (uint32_t lkey : { good.mr->lkey ^ 0xff, 0u, gone_key }) {
		ibv_sge sges[2] = { good.sge(), good.sge() };
		sges[1].lkey = lkey;
		advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			       kFlush, sges, 2, ENOENT,
			       "lkey that names no MR");
	}
}

// The lkey of a pinned (not ODP) MR: ibv_advise_mr(3) says prefetch lkeys
// "must be associated with ODP MRs". ENOENT (sroce_advise_mr()).
void t_advise_lkey_not_odp(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	if (!good)
		return;
	ibv_sge sges[2] = { good.sge(),
			    { remote(p.b, 0), 4096, p.b.mr->lkey } };
	advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, kFlush,
		       sges, 2, ENOENT, "lkey of a pinned MR");
}

// An SGE whose addr + length wraps past 2^64, on an explicit and on an
// implicit ODP MR (which covers the whole address space): EFAULT ("the
// range requested is out of the MR bounds").
void t_advise_range_wraps(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	ibv_mr *imp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	CHECK(imp, "reg implicit ODP MR: %s", strerror(errno));
	if (!good || !imp)
		return;
	for (uint32_t lkey : { good.mr->lkey, imp->lkey }) {
		ibv_sge sges[2] = { good.sge(), { kWrapAddr, kWrapLen, lkey } };
		advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			       kFlush, sges, 2, EFAULT, "range past 2^64");
	}
	CHECK(ibv_dereg_mr(imp) == 0, "dereg implicit ODP MR");
}

// Ranges that leave the MR: past its end, from just after it, before its
// start. EFAULT.
void t_advise_range_past_end(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw), other(p.b.pd, 4 * kOdpLen, kRw);
	if (!good || !other)
		return;
	// Inside @other's memory, so only the MR's bounds can refuse them.
	uint64_t start = uintptr_t(other.m) + kOdpLen;
	ibv_mr *mr = ibv_reg_mr(p.b.pd, other.m + kOdpLen, kOdpLen,
				kRw | IBV_ACCESS_ON_DEMAND);
	CHECK(mr, "reg ODP MR: %s", strerror(errno));
	if (!mr)
		return;
	const ibv_sge bad[] = {
		{ start + kOdpLen - 8, 64, mr->lkey },
		{ start + kOdpLen, 1, mr->lkey },
		{ start - 4096, 8192, mr->lkey },
		{ start - 1, 1, mr->lkey },
	};
	for (const ibv_sge &b : bad) {
		ibv_sge sges[2] = { good.sge(), b };
		advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			       kFlush, sges, 2, EFAULT, "range outside the MR");
	}
	size_t in = resident(other.m, other.len);
	CHECK(in == 0, "refused prefetches faulted %zu pages in around the "
	      "MR", in);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// PREFETCH_WRITE of an MR registered without local write: EPERM ("the
// specified MR ... is not registered as writable access"). A PREFETCH
// (read) of it is fine.
void t_advise_write_readonly(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	OdpMr ro(p.b.pd, kOdpLen, IBV_ACCESS_REMOTE_READ);
	if (!good || !ro)
		return;
	ibv_sge sges[2] = { good.sge(), ro.sge() };
	advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, kFlush,
		       sges, 2, EPERM, "PREFETCH_WRITE of a read-only MR");
	CHECK(resident(ro.m, ro.len) == 0, "the refused PREFETCH_WRITE "
	      "faulted the read-only MR's pages in");
	ibv_sge sge = ro.sge();
	int ret = ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, kFlush,
				&sge, 1);
	CHECK(ret == 0, "PREFETCH of the read-only MR: %s", strerror(ret));
}

// The lkey of an MR of another PD (a's): EPERM ("a valid lkey outside
// the caller's security scope").
void t_advise_other_pd(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw), theirs(p.a.pd, kOdpLen, kRw);
	if (!good || !theirs)
		return;
	ibv_sge sges[2] = { good.sge(), theirs.sge() };
	advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, kFlush,
		       sges, 2, EPERM, "lkey of another PD");
	CHECK(resident(theirs.m, theirs.len) == 0, "the other PD's MR got "
	      "pages from the refused call");
}

// A PD that is no longer there (an imported PD whose PD was deallocated):
// EINVAL ("The PD is invalid").
void t_advise_stale_pd(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	ibv_pd *pd = ibv_alloc_pd(p.ctx);
	ibv_pd *stale = pd ? ibv_import_pd(p.ctx, pd->handle) : nullptr;
	CHECK(stale, "alloc and import a PD: %s", strerror(errno));
	if (!good || !stale)
		return;
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
	ibv_sge sge = good.sge();
	advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, kFlush,
		       &sge, 1, EINVAL, "PD deallocated", stale);
	ibv_unimport_pd(stale);
}

// b's memory for windows: 64 KiB of its buffer at 64 KiB, registered in
// @pd with @access.
ibv_mr *window_mr(Pair &p, int access, ibv_pd *pd = nullptr)
{
	ibv_mr *mr = ibv_reg_mr(pd ? pd : p.b.pd, &p.b.buf[65536], 65536,
				access);
	CHECK(mr, "reg MR for windows: %s", strerror(errno));
	return mr;
}

const int kBindable = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;

// Binds @mw to @mr's first 4096 bytes with @access on b's QP; true if it
// completed.
bool bind(Pair &p, ibv_mw *mw, ibv_mr *mr, unsigned access, uint64_t len)
{
	ibv_mw_bind b{};
	b.wr_id = 88;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info = { mr, uintptr_t(mr->addr), len, access };
	int ret = ibv_bind_mw(p.b.qp, mw, &b);
	CHECK(ret == 0, "ibv_bind_mw (length %llu): %s",
	      (unsigned long long)len, strerror(ret));
	if (ret)
		return false;
	int before = failures;
	expect_wc(p.b, 88, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	return failures == before;
}

// A memory window's key as an lkey: a type 1 window unbound and bound, a
// type 2 window unbound. EINVAL ("The requested address doesn't belong to
// a MR, but a MW").
void t_advise_mw_key(Pair &p)
{
	OdpMr good(p.b.pd, kOdpLen, kRw);
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw1 = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	ibv_mw *mw2 = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw1 && mw2, "alloc MWs: %s", strerror(errno));
	if (!good || !mr || !mw1 || !mw2)
		return;
	auto try_key = [&](uint32_t key, const char *what) {
		ibv_sge sges[2] = { good.sge(),
				    { uintptr_t(mr->addr), 4096, key } };
		advise_refused(p, good, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			       kFlush, sges, 2, EINVAL, what);
	};
	try_key(mw1->rkey, "key of an unbound type 1 window");
	try_key(mw2->rkey, "key of an unbound type 2 window");
	if (bind(p, mw1, mr, IBV_ACCESS_REMOTE_WRITE, 4096)) {
		try_key(mw1->rkey, "key of a bound type 1 window");
		bind(p, mw1, mr, 0, 0);
	}
	CHECK(ibv_dealloc_mw(mw1) == 0 && ibv_dealloc_mw(mw2) == 0,
	      "dealloc MWs");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// --- ibv_bind_mw ----------------------------------------------------------

// The bind is refused at once with this errno, or (kAtOnceOrByCompletion)
// either at once with EINVAL or by its completion (IBV_WC_MW_BIND_ERR):
// ibv_bind_mw(3) allows both ("returns ... the value of errno on failure";
// "fix the mw structure if the subsequent CQE for the bind operation
// indicates a failure").
const int kAtOnceOrByCompletion = -1;

// How the bind is made: through ibv_bind_mw(), or straight into the
// provider (ibv_context_ops.bind_mw), past the checks verbs.h's inline
// ibv_bind_mw() makes itself.
enum class Via { verbs, provider };

// The bind of @mw with @info on b's QP is refused as @want says. Then
// neither the window's key from before nor the key the bind would have
// given grants a WRITE to @target (b's memory): a remote access error, and
// not a byte lands.
void bind_refused(Pair &p, ibv_mw *mw, const ibv_mw_bind_info &info,
		  uint8_t *target, int want, const char *what,
		  Via via = Via::verbs)
{
	uint32_t old = mw->rkey, tried = ibv_inc_rkey(old);
	ibv_mw_bind b{};
	b.wr_id = 77;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info = info;
	int ret = via == Via::verbs ? ibv_bind_mw(p.b.qp, mw, &b) :
				      mw->context->ops.bind_mw(p.b.qp, mw, &b);
	if (ret) {
		int at_once = want == kAtOnceOrByCompletion ? EINVAL : want;
		CHECK(ret == at_once, "%s: ibv_bind_mw returned %d (%s), "
		      "expected %d (%s)", what, ret, strerror(ret), at_once,
		      strerror(at_once));
		CHECK(mw->rkey == old, "%s: the refused bind changed the "
		      "window's rkey 0x%x to 0x%x", what, old, mw->rkey);
		// A WR posted after it completes first: the refused bind
		// was not posted (its completion would come before).
		ibv_wc wc{};
		CHECK(post_send(p.b, IBV_WR_RDMA_WRITE, 0, 0, 78,
				remote(p.a, 0), p.a.mr->rkey) == 0,
		      "%s: post a WRITE after the refused bind", what);
		if (poll_one(p.b, wc))
			CHECK(wc.wr_id == 78 && wc.status == IBV_WC_SUCCESS,
			      "%s: the refused bind was posted: the first "
			      "completion is wr %llu (%s), not the WRITE after "
			      "it", what, (unsigned long long)wc.wr_id,
			      ibv_wc_status_str(wc.status));
	} else {
		CHECK(want == kAtOnceOrByCompletion, "%s: ibv_bind_mw returned "
		      "0, expected %d (%s) at once", what, want,
		      strerror(want));
		tried = mw->rkey;
		expect_wc(p.b, 77, IBV_WC_MW_BIND_ERR);
		mw->rkey = old;
		reconnect(p);
	}
	write_refused(p, old, target, 4096, "the window's key before a "
		      "refused bind");
	if (tried != old)
		write_refused(p, tried, target, 4096, "the key of a refused "
			      "bind");
}

// The window still binds (to @mr, @access) and its key then grants that:
// the refused binds left it, and the QP, usable. Unbound again afterwards.
void window_works(Pair &p, ibv_mw *mw, ibv_mr *mr, unsigned access)
{
	if (!bind(p, mw, mr, access, 4096))
		return;
	auto *m = static_cast<uint8_t *>(mr->addr);
	ibv_wc_status st;
	if (access & IBV_ACCESS_REMOTE_WRITE) {
		fill(p.a, 0, 4096, next_seed());
		st = rdma(p, IBV_WR_RDMA_WRITE, 0, uintptr_t(m), mw->rkey,
			  4096);
	} else {
		fill(p.b, 65536, 4096, next_seed());
		memset(&p.a.buf[0], 0, 4096);
		st = rdma(p, IBV_WR_RDMA_READ, 0, uintptr_t(m), mw->rkey,
			  4096);
	}
	CHECK(st == IBV_WC_SUCCESS && !memcmp(&p.a.buf[0], m, 4096),
	      "access through the window bound after the refused binds: %s",
	      ibv_wc_status_str(st));
	if (st != IBV_WC_SUCCESS)
		reconnect(p);
	bind(p, mw, mr, 0, 0);
}

// Deregisters a window's MR (which must not count a refused bind as bound:
// EBUSY would say it does), then deallocates the window.
void release(ibv_mw *mw, ibv_mr *mr)
{
	int ret = ibv_dereg_mr(mr);
	CHECK(ret == 0, "dereg of the windows' MR: %s (a refused bind left "
	      "it bound)", strerror(ret));
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	if (ret)
		ibv_dereg_mr(mr);
}

uint8_t *win(Pair &p, size_t off = 0)
{
	return &p.b.buf[65536 + off];
}

// A type 2 window given to ibv_bind_mw(), which binds type 1 windows only
// ("for type 2 MW, one should directly post bind WR"): EINVAL at once, by
// ibv_bind_mw() and by the provider.
void t_bind_type2_window(Pair &p)
{
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw, "alloc type 2 MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	ibv_mw_bind_info info = { mr, uintptr_t(win(p)), 4096,
				  IBV_ACCESS_REMOTE_WRITE };
	bind_refused(p, mw, info, win(p), EINVAL, "type 2 window");
	bind_refused(p, mw, info, win(p), EINVAL, "type 2 window, provider",
		     Via::provider);
	release(mw, mr);
}

// No MR but a length (or an address): EINVAL at once, by ibv_bind_mw()
// and (a length) by the provider.
void t_bind_null_mr(Pair &p)
{
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	ibv_mw_bind_info info = { nullptr, uintptr_t(win(p)), 4096,
				  IBV_ACCESS_REMOTE_WRITE };
	bind_refused(p, mw, info, win(p), EINVAL, "no MR, length 4096");
	bind_refused(p, mw, info, win(p), EINVAL,
		     "no MR, length 4096, provider", Via::provider);
	info.length = 0;
	bind_refused(p, mw, info, win(p), EINVAL, "no MR, an address");
	window_works(p, mw, mr, IBV_ACCESS_REMOTE_WRITE);
	release(mw, mr);
}

// An MR registered without IBV_ACCESS_MW_BIND (the pair's own MR of b):
// the bind fails.
void t_bind_mr_without_mw_bind(Pair &p)
{
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	bind_refused(p, mw, { p.b.mr, uintptr_t(win(p)), 4096,
			      IBV_ACCESS_REMOTE_WRITE },
		     win(p), kAtOnceOrByCompletion, "MR without MW_BIND");
	window_works(p, mw, mr, IBV_ACCESS_REMOTE_WRITE);
	release(mw, mr);
}

// Ranges that leave the MR (its memory is b's buffer around them, so only
// the MR's bounds refuse them): past its end, just after it, before its
// start, larger than it.
void t_bind_outside_mr(Pair &p)
{
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	const struct {
		long off;
		uint64_t len;
	} bad[] = {
		{ 65536 - 4096, 8192 },
		{ 65536, 4096 },
		{ -4096, 8192 },
		{ 0, 65536 + 4096 },
	};
	for (const auto &b : bad) {
		uint8_t *at = win(p) + b.off;
		bind_refused(p, mw, { mr, uintptr_t(at), b.len,
				      IBV_ACCESS_REMOTE_WRITE },
			     at, kAtOnceOrByCompletion, "range outside the MR");
	}
	window_works(p, mw, mr, IBV_ACCESS_REMOTE_WRITE);
	release(mw, mr);
}

// Ranges whose addr + length wraps past 2^64.
void t_bind_range_wraps(Pair &p)
{
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	bind_refused(p, mw, { mr, kWrapAddr, kWrapLen,
			      IBV_ACCESS_REMOTE_WRITE },
		     win(p), kAtOnceOrByCompletion, "range past 2^64");
	bind_refused(p, mw, { mr, uintptr_t(win(p)), UINT64_MAX,
			      IBV_ACCESS_REMOTE_WRITE },
		     win(p), kAtOnceOrByCompletion, "length 2^64 - 1");
	window_works(p, mw, mr, IBV_ACCESS_REMOTE_WRITE);
	release(mw, mr);
}

// Access bits ibv_bind_mw(3) does not list for a window: one from the
// future, MW_BIND, ON_DEMAND.
void t_bind_future_access(Pair &p)
{
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	for (unsigned bit : { unsigned(kFutureAccess),
			      unsigned(IBV_ACCESS_MW_BIND),
			      unsigned(IBV_ACCESS_ON_DEMAND) })
		bind_refused(p, mw, { mr, uintptr_t(win(p)), 4096,
				      IBV_ACCESS_REMOTE_WRITE | bit },
			     win(p), kAtOnceOrByCompletion,
			     "access bit not for windows");
	window_works(p, mw, mr, IBV_ACCESS_REMOTE_WRITE);
	release(mw, mr);
}

// Remote write or remote atomic through a window on an MR without local
// write ("Requires local write access to the MR").
void t_bind_remote_write_no_local_write(Pair &p)
{
	ibv_mr *mr = window_mr(p, IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	for (unsigned access : { unsigned(IBV_ACCESS_REMOTE_WRITE),
				 unsigned(IBV_ACCESS_REMOTE_ATOMIC) })
		bind_refused(p, mw, { mr, uintptr_t(win(p)), 4096,
				      access | IBV_ACCESS_REMOTE_READ },
			     win(p), kAtOnceOrByCompletion,
			     "remote write/atomic on a read-only MR");
	window_works(p, mw, mr, IBV_ACCESS_REMOTE_READ);
	release(mw, mr);
}

// An MR of another PD than the window's: ibv_bind_mw() refuses it itself
// (EPERM, verbs.h); given to the provider, the bind fails. The MR is not
// counted as bound: it deregisters.
void t_bind_mr_other_pd(Pair &p)
{
	ibv_pd *pd2 = ibv_alloc_pd(p.ctx);
	ibv_mr *mine = window_mr(p, kBindable);
	ibv_mr *theirs = pd2 ? window_mr(p, kBindable, pd2) : nullptr;
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(pd2 && mw, "alloc PD and MW: %s", strerror(errno));
	if (!mine || !theirs || !mw)
		return;
	ibv_mw_bind_info info = { theirs, uintptr_t(win(p)), 4096,
				  IBV_ACCESS_REMOTE_WRITE };
	bind_refused(p, mw, info, win(p), EPERM, "MR of another PD");
	bind_refused(p, mw, info, win(p), kAtOnceOrByCompletion,
		     "MR of another PD, provider", Via::provider);
	CHECK(ibv_dereg_mr(theirs) == 0, "dereg of the other PD's MR (a "
	      "refused bind left it bound)");
	window_works(p, mw, mine, IBV_ACCESS_REMOTE_WRITE);
	release(mw, mine);
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc PD");
}

// A window and MR of one PD, bound through a QP of another (b's): the
// bind fails.
void t_bind_qp_other_pd(Pair &p)
{
	ibv_pd *pd2 = ibv_alloc_pd(p.ctx);
	ibv_mr *mr = pd2 ? window_mr(p, kBindable, pd2) : nullptr;
	ibv_mw *mw = pd2 ? ibv_alloc_mw(pd2, IBV_MW_TYPE_1) : nullptr;
	CHECK(pd2 && mw, "alloc PD and MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	bind_refused(p, mw, { mr, uintptr_t(win(p)), 4096,
			      IBV_ACCESS_REMOTE_WRITE },
		     win(p), kAtOnceOrByCompletion, "QP of another PD");
	release(mw, mr);
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc PD");
}

// A UD QP ("The QP Transport Service Type must be either UC, RC or
// XRC_SEND"): EINVAL at once.
void t_bind_ud_qp(Pair &p)
{
	ibv_mr *mr = window_mr(p, kBindable);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	ibv_qp *ud = ud_qp(p.b);
	CHECK(mw && ud, "alloc MW and UD QP: %s", strerror(errno));
	if (!mr || !mw || !ud)
		return;
	ibv_mw_bind b{};
	b.wr_id = 5;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info = { mr, uintptr_t(win(p)), 4096, IBV_ACCESS_REMOTE_WRITE };
	uint32_t old = mw->rkey;
	int ret = ibv_bind_mw(ud, mw, &b);
	CHECK(ret == EINVAL && mw->rkey == old, "bind on a UD QP: %d (%s), "
	      "rkey 0x%x -> 0x%x", ret, strerror(ret), old, mw->rkey);
	usleep(20000);
	ibv_wc wc{};
	CHECK(ibv_poll_cq(p.b.cq, 1, &wc) == 0, "the refused bind on a UD QP "
	      "completed (%s)", ibv_wc_status_str(wc.status));
	write_refused(p, old, win(p), 4096, "the window's key after a bind "
		      "on a UD QP");
	write_refused(p, ibv_inc_rkey(old), win(p), 4096, "the key of a bind "
		      "on a UD QP");
	CHECK(ibv_destroy_qp(ud) == 0, "destroy UD QP");
	window_works(p, mw, mr, IBV_ACCESS_REMOTE_WRITE);
	release(mw, mr);
}

// --- ibv_import_pd, ibv_import_mr -----------------------------------------

// A handle that names nothing: ibv_import_*(3) say only "NULL if the
// request fails"; ib_uverbs answers ENOENT for a handle that names no
// object, and EINVAL for one that names an object of another type.
void import_pd_refused(ibv_context *ctx, uint32_t handle, int err,
		       const char *what)
{
	errno = 0;
	ibv_pd *pd = ibv_import_pd(ctx, handle);
	int e = errno;
	CHECK(!pd && e == err, "ibv_import_pd of %s (0x%x): %p errno %d (%s), "
	      "expected NULL errno %d (%s)", what, handle, pd, e, strerror(e),
	      err, strerror(err));
	if (pd)
		ibv_unimport_pd(pd);
}

void import_mr_refused(ibv_pd *pd, uint32_t handle, int err,
		       const char *what)
{
	errno = 0;
	ibv_mr *mr = ibv_import_mr(pd, handle);
	int e = errno;
	CHECK(!mr && e == err, "ibv_import_mr of %s (0x%x): %p errno %d (%s), "
	      "expected NULL errno %d (%s)", what, handle, mr, e, strerror(e),
	      err, strerror(err));
	if (mr)
		ibv_unimport_mr(mr);
}

// A context imported from a dup of the pair's command fd.
ibv_context *import_context(Pair &p)
{
	ibv_context *ctx = ibv_import_device(dup(p.ctx->cmd_fd));
	CHECK(ctx, "ibv_import_device: %s", strerror(errno));
	return ctx;
}

// ibv_import_pd() of handles that name no PD of the context: 0xffffffff,
// a deallocated PD's, an MR's, and (in a context of its own) a PD's of
// another context; in the pair's context and in one imported from it.
// The PDs that are there import, unimport, and are unchanged.
void t_import_pd_bad_handle(Pair &p)
{
	ibv_context *ctx2 = import_context(p);
	ibv_context *own = ibv_open_device(p.ctx->device);
	CHECK(own, "second ibv_open_device: %s", strerror(errno));
	if (!ctx2 || !own)
		return;
	ibv_pd *gone = ibv_alloc_pd(p.ctx);
	CHECK(gone, "alloc PD: %s", strerror(errno));
	if (!gone)
		return;
	uint32_t gone_handle = gone->handle;
	CHECK(ibv_dealloc_pd(gone) == 0, "dealloc PD");
	for (ibv_context *ctx : { p.ctx, ctx2 }) {
		import_pd_refused(ctx, 0xffffffff, ENOENT, "0xffffffff");
		import_pd_refused(ctx, gone_handle, ENOENT,
				  "a deallocated PD's handle");
		import_pd_refused(ctx, p.b.mr->handle, EINVAL,
				  "an MR's handle");
		ibv_pd *pd = ibv_import_pd(ctx, p.b.pd->handle);
		CHECK(pd && pd->handle == p.b.pd->handle && pd->context == ctx,
		      "ibv_import_pd of b's PD: %s", strerror(errno));
		if (pd)
			ibv_unimport_pd(pd);
	}
	import_pd_refused(own, p.b.pd->handle, ENOENT,
			  "another context's PD handle");
	CHECK(ibv_close_device(own) == 0, "close second context");
	CHECK(ibv_close_device(ctx2) == 0, "close imported context");
	mr_intact(p, p.b.mr, MrView(p.b.mr), "b's MR after PD imports");
	ibv_mr *mr = ibv_reg_mr(p.b.pd, &p.b.buf[0], 4096,
				IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg MR in b's PD after unimport: %s", strerror(errno));
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// ibv_import_mr() of handles that name no MR: 0xffffffff, a deregistered
// MR's, a PD's; in the pair's context and in one imported from it.
void t_import_mr_bad_handle(Pair &p)
{
	ibv_context *ctx2 = import_context(p);
	ibv_pd *pd2 = ctx2 ? ibv_import_pd(ctx2, p.b.pd->handle) : nullptr;
	CHECK(pd2, "ibv_import_pd: %s", strerror(errno));
	std::vector<uint8_t> mem(4096);
	ibv_mr *gone = ibv_reg_mr(p.b.pd, mem.data(), mem.size(),
				  IBV_ACCESS_LOCAL_WRITE);
	CHECK(gone, "reg MR: %s", strerror(errno));
	if (!pd2 || !gone)
		return;
	uint32_t gone_handle = gone->handle;
	CHECK(ibv_dereg_mr(gone) == 0, "dereg");
	for (ibv_pd *pd : { p.b.pd, pd2 }) {
		import_mr_refused(pd, 0xffffffff, ENOENT, "0xffffffff");
		import_mr_refused(pd, gone_handle, ENOENT,
				  "a deregistered MR's handle");
		import_mr_refused(pd, p.b.pd->handle, EINVAL, "a PD's handle");
	}
	ibv_unimport_pd(pd2);
	CHECK(ibv_close_device(ctx2) == 0, "close imported context");
	mr_intact(p, p.b.mr, MrView(p.b.mr), "b's MR after MR imports");
}

// ibv_import_mr() of an MR of the same process works, in its own context
// (twice at once) and in an imported one: the keys and length are the
// MR's, addr is NULL, and the imported keys carry traffic. Unimporting
// leaves the MR as it was; it deregisters afterwards.
void t_import_mr_same_process(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	ibv_context *ctx2 = import_context(p);
	ibv_pd *pd2 = ctx2 ? ibv_import_pd(ctx2, p.b.pd->handle) : nullptr;
	CHECK(pd2, "ibv_import_pd: %s", strerror(errno));
	if (!mr || !pd2)
		return;
	MrView was(mr);
	std::vector<ibv_mr *> imps;
	for (ibv_pd *pd : { p.b.pd, p.b.pd, pd2 }) {
		ibv_mr *imp = ibv_import_mr(pd, mr->handle);
		CHECK(imp, "ibv_import_mr: %s", strerror(errno));
		if (!imp)
			continue;
		CHECK(imp != mr && imp->lkey == mr->lkey &&
			      imp->rkey == mr->rkey &&
			      imp->length == mr->length && !imp->addr &&
			      imp->pd == pd && imp->context == pd->context &&
			      imp->handle == mr->handle,
		      "imported MR: lkey 0x%x rkey 0x%x length %zu addr %p "
		      "pd %p handle %u", imp->lkey, imp->rkey, imp->length,
		      imp->addr, imp->pd, imp->handle);
		imps.push_back(imp);
	}
	for (ibv_mr *imp : imps) {
		fill(p.a, 0, 4096, next_seed());
		ibv_wc_status st = rdma(p, IBV_WR_RDMA_WRITE, 0,
					uintptr_t(mem.data()), imp->rkey,
					4096);
		CHECK(st == IBV_WC_SUCCESS &&
			      !memcmp(mem.data(), &p.a.buf[0], 4096),
		      "WRITE through the imported rkey: %s",
		      ibv_wc_status_str(st));
		if (st != IBV_WC_SUCCESS)
			reconnect(p);
		else
			send_from_b(p, mem.data(), 4096, imp->lkey,
				    "SEND by the imported lkey");
	}
	for (ibv_mr *imp : imps) {
		ibv_unimport_mr(imp);
		mr_intact(p, mr, was, "MR after unimport");
	}
	ibv_unimport_pd(pd2);
	CHECK(ibv_close_device(ctx2) == 0, "close imported context");
	mr_intact(p, mr, was, "MR after its context's import closed");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg after unimports");
}

// ibv_import_mr() "from a given ibv_pd" that is not the MR's PD: refused
// (EINVAL), or at least the MR does not move: it stays in its PD and
// carries traffic there.
void t_import_mr_other_pd(Pair &p)
{
	std::vector<uint8_t> mem(65536);
	ibv_mr *mr = reg_rw(p, mem);
	if (!mr)
		return;
	MrView was(mr);
	errno = 0;
	ibv_mr *imp = ibv_import_mr(p.a.pd, mr->handle);
	int e = errno;
	CHECK(!imp && e == EINVAL, "ibv_import_mr into a's PD of an MR of b's "
	      "PD: %p errno %d (%s), expected NULL errno %d", imp, e,
	      strerror(e), EINVAL);
	if (imp)
		ibv_unimport_mr(imp);
	mr_intact(p, mr, was, "MR imported into another PD");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

const Test tests[] = {
	{ "rereg_future_flags", t_rereg_future_flags, nullptr, false },
	{ "rereg_no_flags", t_rereg_no_flags, nullptr, false },
	{ "rereg_access_without_flag", t_rereg_access_without_flag, nullptr,
	  false },
	{ "rereg_trans_zero_length", t_rereg_trans_zero_length, nullptr,
	  false },
	{ "rereg_trans_null_addr", t_rereg_trans_null_addr, nullptr, false },
	{ "rereg_trans_wraps", t_rereg_trans_wraps, nullptr, false },
	{ "rereg_trans_unmapped", t_rereg_trans_unmapped, nullptr, false },
	{ "rereg_future_access", t_rereg_future_access, nullptr, false },
	{ "rereg_remote_write_no_local", t_rereg_remote_write_no_local,
	  nullptr, false },
	{ "rereg_all_or_nothing", t_rereg_all_or_nothing, nullptr, false },
	{ "rereg_pd_other_context", t_rereg_pd_other_context, nullptr,
	  false },
	{ "rereg_imported_mr", t_rereg_imported_mr, nullptr, false },
	{ "advise_future_advice", t_advise_future_advice, nullptr, false },
	{ "advise_future_flags", t_advise_future_flags, nullptr, false },
	{ "advise_no_sge", t_advise_no_sge, nullptr, false },
	{ "advise_lkey_names_nothing", t_advise_lkey_names_nothing, nullptr,
	  false },
	{ "advise_lkey_not_odp", t_advise_lkey_not_odp, nullptr, false },
	{ "advise_range_wraps", t_advise_range_wraps, nullptr, false },
	{ "advise_range_past_end", t_advise_range_past_end, nullptr, false },
	{ "advise_write_readonly", t_advise_write_readonly, nullptr, false },
	{ "advise_other_pd", t_advise_other_pd, nullptr, false },
	{ "advise_stale_pd", t_advise_stale_pd, nullptr, false },
	{ "advise_mw_key", t_advise_mw_key, nullptr, false },
	{ "bind_type2_window", t_bind_type2_window, nullptr, false },
	{ "bind_null_mr", t_bind_null_mr, nullptr, false },
	{ "bind_mr_without_mw_bind", t_bind_mr_without_mw_bind, nullptr,
	  false },
	{ "bind_outside_mr", t_bind_outside_mr, nullptr, false },
	{ "bind_range_wraps", t_bind_range_wraps, nullptr, false },
	{ "bind_future_access", t_bind_future_access, nullptr, false },
	{ "bind_remote_write_no_local_write",
	  t_bind_remote_write_no_local_write, nullptr, false },
	{ "bind_mr_other_pd", t_bind_mr_other_pd, nullptr, false },
	{ "bind_qp_other_pd", t_bind_qp_other_pd, nullptr, false },
	{ "bind_ud_qp", t_bind_ud_qp, nullptr, false },
	{ "import_pd_bad_handle", t_import_pd_bad_handle, nullptr, false },
	{ "import_mr_bad_handle", t_import_mr_bad_handle, nullptr, false },
	{ "import_mr_same_process", t_import_mr_same_process, nullptr, false },
	{ "import_mr_other_pd", t_import_mr_other_pd, nullptr, false },
};

} // namespace
} // namespace xfer

using namespace xfer;

int main(int argc, char **argv)
{
	Pair p;

	if (argc != 3)
		return usage("sroce-badargs DEV TEST", tests);
	return run_test(argv[1], argv[2], p, { tests });
}
