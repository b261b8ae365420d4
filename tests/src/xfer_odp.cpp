// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of on-demand paging: an ODP MR as RDMA target and source
// while its pages come and go, and ibv_advise_mr(3) with implicit ODP.
#include "xfer.h"

#include <string>
#include <sys/wait.h>

namespace xfer {
namespace {

const int kOdpAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		       IBV_ACCESS_ON_DEMAND;

// b SENDs @len bytes of @byte from @from (through @lkey) into a's buffer
// at @a_off; they must arrive.
void send_from(Pair &p, uint8_t *from, uint32_t len, uint32_t lkey,
	       size_t a_off, uint8_t byte)
{
	memset(from, byte, len);
	CHECK(post_recv(p.a, a_off, len, 4) == 0, "post recv");
	ibv_sge sge = { uintptr_t(from), len, lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND, 5), *bad;
	CHECK(ibv_post_send(p.b.qp, &wr, &bad) == 0, "post send");
	expect_wc(p.b, 5, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(p.a, 4, IBV_WC_SUCCESS, IBV_WC_RECV, len);
	CHECK(!memcmp(&p.a.buf[a_off], from, len), "sent bytes differ");
}

// A request at the unmapped half of an ODP MR must change nothing: both
// sides' buffers (arm_untouched()) and the half of the MR still mapped,
// [@m, @m + @mapped), filled with a pattern of its own, are compared whole
// afterwards (refused_odp()).
struct OdpUntouched {
	Untouched u;
	std::vector<uint8_t> mapped;
};

OdpUntouched arm_odp_untouched(Pair &p, uint8_t *m, size_t mapped)
{
	for (size_t i = 0; i < mapped; i++)
		m[i] = uint8_t(0xc1 + i * 11 + (i >> 10));
	return { arm_untouched(p), std::vector<uint8_t>(m, m + mapped) };
}

void expect_odp_untouched(Pair &p, const OdpUntouched &u, const uint8_t *m,
			  const char *what)
{
	expect_untouched(p, u.u, what);
	size_t changed = 0;
	for (size_t i = 0; i < u.mapped.size(); i++)
		changed += m[i] != u.mapped[i];
	CHECK(!changed, "%s: %zu bytes of the MR's mapped half changed", what,
	      changed);
}

// An on-demand paging MR on b's side as the target and the source of RDMA:
// its pages come and go under the requests, and the bytes stay right.
void t_odp(Pair &p)
{
	const size_t len = 256 << 10;
	uint8_t *m = map_anon(len);
	if (!m)
		return;
	ibv_mr *odp = ibv_reg_mr(p.b.pd, m, len, kOdpAccess);
	CHECK(odp, "reg ODP MR: %s", strerror(errno));
	if (!odp)
		return;
	CHECK(resident(m, len) == 0, "registration faulted pages in");

	// WRITE into memory the process never touched: faulted in for it.
	fill(p.a, 0, 70000, 5);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 70000, 1,
			uintptr_t(m + 100), odp->rkey) == 0, "post");
	expect_wc(p.a, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK(!memcmp(m + 100, &p.a.buf[0], 70000), "written bytes differ");

	// The CPU changes the memory: a READ sees it.
	memset(m + 8192, 0x5a, 5000);
	memset(&p.a.buf[100000], 0, 5000);
	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 100000, 5000, 2,
			uintptr_t(m + 8192), odp->rkey) == 0, "post");
	expect_wc(p.a, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 5000);
	CHECK(!memcmp(&p.a.buf[100000], m + 8192, 5000), "read bytes differ");

	// Pages dropped (MMU notifier): the next READ gets the new zero pages,
	// not the old ones.
	CHECK(madvise(m, len, MADV_DONTNEED) == 0, "madvise");
	memset(&p.a.buf[200000], 0xee, 70000);
	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 200000, 70000, 3,
			uintptr_t(m + 100), odp->rkey) == 0, "post");
	expect_wc(p.a, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 70000);
	bool zero = true;
	for (size_t i = 0; i < 70000; i++)
		zero = zero && p.a.buf[200000 + i] == 0;
	CHECK(zero, "READ after MADV_DONTNEED returned stale bytes");

	// ODP memory as a local SGE: b SENDs from it, a READs into it.
	send_from(p, m + 65536, 3000, odp->lkey, 300000, 0x3c);
	fill(p.a, 400000, 9000, 9);
	ibv_sge sge = { uintptr_t(m + 131072), 9000, odp->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_RDMA_READ, 6), *bad;
	wr.wr.rdma.remote_addr = remote(p.a, 400000);
	wr.wr.rdma.rkey = p.a.mr->rkey;
	CHECK(ibv_post_send(p.b.qp, &wr, &bad) == 0, "post read");
	expect_wc(p.b, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 9000);
	CHECK(!memcmp(m + 131072, &p.a.buf[400000], 9000), "READ into ODP");

	// Atomics on ODP memory, one page dropped in between.
	uint64_t v = 40;
	memcpy(m + 200000, &v, 8);
	post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 7, uintptr_t(m + 200000),
		    odp->rkey, 2, 0);
	expect_wc(p.a, 7, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	memcpy(&v, &p.a.buf[0], 8);
	CHECK(v == 40, "fetched %llu, expected 40", (unsigned long long)v);
	CHECK(madvise(m + 196608, 8192, MADV_PAGEOUT) == 0 || errno == EINVAL,
	      "madvise pageout");
	post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 8, uintptr_t(m + 200000),
		    odp->rkey, 42, 7);
	expect_wc(p.a, 8, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	memcpy(&v, m + 200000, 8);
	CHECK(v == 7, "after cmp_swap %llu, expected 7", (unsigned long long)v);

	// Memory gone from the process: the peer gets a remote access error,
	// and nothing else happens (the QPs are in error after this): not a
	// byte lands in the half still mapped, or on either side.
	CHECK(munmap(m + len / 2, len / 2) == 0, "munmap");
	OdpUntouched u = arm_odp_untouched(p, m, len / 2);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 4096, 9,
			uintptr_t(m + len / 2), odp->rkey) == 0, "post");
	expect_wc(p.a, 9, IBV_WC_REM_ACCESS_ERR);
	expect_odp_untouched(p, u, m, "a WRITE to unmapped ODP memory");
	CHECK(ibv_dereg_mr(odp) == 0, "dereg ODP MR");
	munmap(m, len / 2);
}

// ibv_advise_mr(3): what each advice does, and every error it names.
void t_advise(Pair &p)
{
	const size_t len = 1 << 20;
	uint8_t *m = map_anon(len), *m2 = map_anon(len);
	if (!m || !m2)
		return;
	ibv_mr *rw = ibv_reg_mr(p.b.pd, m, len, kOdpAccess);
	ibv_mr *ro = ibv_reg_mr(p.b.pd, m, len, IBV_ACCESS_ON_DEMAND);
	ibv_mr *other = ibv_reg_mr(p.a.pd, m, len, kOdpAccess);
	ibv_mr *rw2 = ibv_reg_mr(p.b.pd, m2, len, kOdpAccess);
	CHECK(rw && ro && other && rw2, "reg ODP MRs: %s", strerror(errno));
	if (!rw || !ro || !other || !rw2)
		return;
	auto advise = [&](ibv_advise_mr_advice adv, uint32_t flags, uint64_t addr,
			  uint32_t l, uint32_t lkey, ibv_pd *pd = nullptr) {
		ibv_sge sge = { addr, l, lkey };
		return ibv_advise_mr(pd ? pd : p.b.pd, adv, flags, &sge, 1);
	};
	const auto FLUSH = IBV_ADVISE_MR_FLAG_FLUSH;

	// NO_FAULT brings nothing in; PREFETCH_WRITE makes it all present.
	CHECK(advise(IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, FLUSH, uintptr_t(m),
		     len, rw->lkey) == 0, "NO_FAULT");
	CHECK(resident(m, len) == 0, "NO_FAULT faulted %zu pages in",
	      resident(m, len));
	int ret = advise(IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, FLUSH,
			 uintptr_t(m), len, rw->lkey);
	CHECK(ret == 0, "PREFETCH_WRITE: %s", strerror(ret));
	CHECK(resident(m, len) == len / 4096, "PREFETCH_WRITE left %zu of %zu "
	      "pages out", len / 4096 - resident(m, len), len / 4096);
	ret = advise(IBV_ADVISE_MR_ADVICE_PREFETCH, 0, uintptr_t(m2), len / 2,
		     rw2->lkey);
	CHECK(ret == 0, "PREFETCH: %s", strerror(ret));
	CHECK(resident(m2, len) >= len / 2 / 4096, "PREFETCH of half: %zu pages",
	      resident(m2, len));
	CHECK(advise(IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, uintptr_t(m2),
		     len, rw2->lkey) == 0, "NO_FAULT async");
	// Prefetched for reading: the read-only MR may, and the data is right.
	m[5] = 77;
	CHECK(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, uintptr_t(m), 4096,
		     ro->lkey) == 0, "PREFETCH of a read-only MR");
	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 0, 64, 1, uintptr_t(m),
			rw->rkey) == 0, "post");
	expect_wc(p.a, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 64);
	CHECK(p.a.buf[5] == 77, "READ after prefetch: %u", p.a.buf[5]);

	// The errors of the man page.
	auto expect = [&](int got, int want, const char *what) {
		CHECK(got == want, "%s: %s, expected %s", what, strerror(got),
		      strerror(want));
	};
	expect(advise(ibv_advise_mr_advice(99), FLUSH, uintptr_t(m), 64,
		      rw->lkey), EOPNOTSUPP, "unknown advice");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, 0x80, uintptr_t(m), 64,
		      rw->lkey), EINVAL, "unknown flag");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, uintptr_t(m), 64,
		      rw->lkey ^ 0xff), ENOENT, "lkey with a wrong tag");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, remote(p.b, 0), 64,
		      p.b.mr->lkey), ENOENT, "lkey of a pinned (not ODP) MR");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH,
		      uintptr_t(m) + len - 8, 64, rw->lkey), EFAULT,
	       "range past the MR");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, uintptr_t(m) - 4096,
		      64, rw->lkey), EFAULT, "range before the MR");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, FLUSH, uintptr_t(m),
		      64, ro->lkey), EPERM, "PREFETCH_WRITE of a read-only MR");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, uintptr_t(m), 64,
		      other->lkey), EPERM, "lkey of another PD");
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (mw) {
		expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, uintptr_t(m),
			      64, mw->rkey), EINVAL, "a memory window's key");
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	}
	// One bad SGE fails the call before anything is done.
	ibv_sge two[2] = { { uintptr_t(m2), 4096, rw2->lkey },
			   { uintptr_t(m2), 4096, 0x7fffff00 } };
	expect(ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, two,
			     2), ENOENT, "second SGE bad");
	// Memory the process no longer has: EFAULT (NO_FAULT takes what is).
	CHECK(munmap(m2 + len / 2, len / 2) == 0, "munmap");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH, FLUSH, uintptr_t(m2), len,
		      rw2->lkey), EFAULT, "unmapped range");
	expect(advise(IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, FLUSH,
		      uintptr_t(m2), len, rw2->lkey), 0, "NO_FAULT, unmapped");

	// Implicit ODP: one key for the whole address space, at its own
	// addresses; memory anywhere, even mapped after the registration.
	ibv_mr *imp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kOdpAccess);
	CHECK(imp, "implicit ODP: %s", strerror(errno));
	uint8_t *late = map_anon(64 << 20);
	if (imp && late) {
		uint8_t *at = late + (40 << 20) - 3000; // across a 16 MiB chunk
		fill(p.a, 0, 9000, 21);
		CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 9000, 2,
				uintptr_t(at), imp->rkey) == 0, "post");
		expect_wc(p.a, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK(!memcmp(at, &p.a.buf[0], 9000), "implicit WRITE");
		ret = advise(IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, FLUSH,
			     uintptr_t(late), 4 << 20, imp->lkey);
		CHECK(ret == 0, "prefetch implicit: %s", strerror(ret));
		CHECK(resident(late, 4 << 20) == (4 << 20) / 4096,
		      "implicit prefetch left pages out");
		memset(late + 100, 0x6b, 5000);
		CHECK(post_send(p.a, IBV_WR_RDMA_READ, 20000, 5000, 3,
				uintptr_t(late + 100), imp->rkey) == 0, "post");
		expect_wc(p.a, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 5000);
		CHECK(!memcmp(&p.a.buf[20000], late + 100, 5000),
		      "implicit READ");
		// The implicit MR's own lkey as a local SGE.
		send_from(p, late + 8192, 1000, imp->lkey, 30000, 0x2d);
	}
	if (imp)
		CHECK(ibv_dereg_mr(imp) == 0, "dereg implicit");
	if (late)
		munmap(late, 64 << 20);

	for (ibv_mr *mr : { rw, ro, other, rw2 })
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	munmap(m, len);
	munmap(m2, len / 2);
}

// Receive into an ODP MR on b, for @lkey: @len bytes at @to.
void post_recv_odp(Pair &p, uint8_t *to, uint32_t len, uint32_t lkey,
		   uint64_t id)
{
	ibv_sge sge = { uintptr_t(to), len, lkey };
	ibv_recv_wr wr{}, *bad;
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CHECK(ibv_post_recv(p.b.qp, &wr, &bad) == 0, "post recv");
}

// Are the @len bytes at @m all @byte?
bool all_are(const uint8_t *m, size_t len, uint8_t byte)
{
	for (size_t i = 0; i < len; i++)
		if (m[i] != byte)
			return false;
	return true;
}

// An ODP MR on b over @len bytes of new memory, never touched (*@m).
// Return: the MR, or nullptr (said) if either cannot be had.
ibv_mr *odp_mr(Pair &p, size_t len, uint8_t **m, int access = kOdpAccess)
{
	*m = map_anon(len);
	if (!*m)
		return nullptr;
	ibv_mr *mr = ibv_reg_mr(p.b.pd, *m, len, access);
	CHECK(mr, "reg ODP MR: %s", strerror(errno));
	return mr;
}

// Bind type 2 window @mw to [addr, addr + len) of @mr by a WQE on b's QP,
// with the next key; it must complete. Return: the window's new rkey.
uint32_t bind_type2(Pair &p, ibv_mw *mw, ibv_mr *mr, uint8_t *addr,
		    size_t len, unsigned access, uint64_t id)
{
	uint32_t key = ibv_inc_rkey(mw->rkey);

	CHECK(post_bind_mw(p, mw, key, mr, uintptr_t(addr), len, access,
			   id) == 0, "post bind");
	expect_wc(p.b, id, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	return key;
}

// ODP as the target of window binds, type 1 (ibv_bind_mw) and type 2: a
// peer's WRITE through either window faults the memory in, and a READ
// through it returns the bytes. Then a READ and an atomic at ODP memory
// the process unmapped: the requester completes with a remote access
// error and not a byte lands in its buffer.
void t_odp_more(Pair &p)
{
	const size_t pg = 4096, len = 64 * pg;
	uint8_t *m;
	ibv_mr *odp = odp_mr(p, len, &m, kOdpAccess | IBV_ACCESS_MW_BIND);
	if (!odp)
		return;
	const int wr = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	ibv_mw *mw1 = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw1, "alloc type 1: %s", strerror(errno));
	if (mw1) {
		ibv_mw_bind bind{};
		bind.wr_id = 10;
		bind.send_flags = IBV_SEND_SIGNALED;
		bind.bind_info.mr = odp;
		bind.bind_info.addr = uintptr_t(m + 2 * pg);
		bind.bind_info.length = 2 * pg;
		bind.bind_info.mw_access_flags = wr;
		CHECK(ibv_bind_mw(p.b.qp, mw1, &bind) == 0, "bind_mw: %s",
		      strerror(errno));
		expect_wc(p.b, 10, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		fill(p.a, 0, 2 * pg, 21);
		expect_eq_status(write_to(p, uintptr_t(m + 2 * pg), mw1->rkey,
					  2 * pg, 11),
				 IBV_WC_SUCCESS, "WRITE through a type 1 window");
		CHECK(!memcmp(m + 2 * pg, &p.a.buf[0], 2 * pg),
		      "bytes through the type 1 window differ");
		memset(&p.a.buf[100000], 0, 2 * pg);
		CHECK(post_send(p.a, IBV_WR_RDMA_READ, 100000, 2 * pg, 12,
				uintptr_t(m + 2 * pg), mw1->rkey) == 0, "post");
		expect_wc(p.a, 12, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 2 * pg);
		CHECK(!memcmp(&p.a.buf[100000], m + 2 * pg, 2 * pg),
		      "READ through the type 1 window differs");
		CHECK(ibv_dealloc_mw(mw1) == 0, "dealloc type 1");
	}

	ibv_mw *mw2 = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw2, "alloc type 2: %s", strerror(errno));
	if (mw2) {
		uint32_t key = bind_type2(p, mw2, odp, m + 8 * pg, 4 * pg, wr,
					  13);
		fill(p.a, 0, 4 * pg, 22);
		expect_eq_status(write_to(p, uintptr_t(m + 8 * pg), key,
					  4 * pg, 14),
				 IBV_WC_SUCCESS, "WRITE through a type 2 window");
		CHECK(!memcmp(m + 8 * pg, &p.a.buf[0], 4 * pg),
		      "bytes through the type 2 window differ");
		CHECK(ibv_dealloc_mw(mw2) == 0, "dealloc type 2");
	}

	// Unmapped ODP memory: READ and atomics refused; nothing lands on
	// either side, or in the half still mapped.
	CHECK(munmap(m + len / 2, len / 2) == 0, "munmap");
	OdpUntouched u = arm_odp_untouched(p, m, len / 2);
	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 0, 2 * pg, 15,
			uintptr_t(m + len / 2), odp->rkey) == 0, "post");
	expect_wc(p.a, 15, IBV_WC_REM_ACCESS_ERR);
	expect_odp_untouched(p, u, m, "a READ of unmapped ODP memory");
	restate(p);
	for (ibv_wr_opcode op : { IBV_WR_ATOMIC_FETCH_AND_ADD,
				  IBV_WR_ATOMIC_CMP_AND_SWP }) {
		u = arm_odp_untouched(p, m, len / 2);
		post_atomic(p.a, op, 16, uintptr_t(m + len / 2 + 64),
			    odp->rkey, 0, 1);
		expect_wc(p.a, 16, IBV_WC_REM_ACCESS_ERR);
		expect_odp_untouched(p, u, m, "an atomic on unmapped ODP memory");
		restate(p);
	}
	CHECK(ibv_dereg_mr(odp) == 0, "dereg ODP MR");
	munmap(m, len / 2);
}

// RDMA Atomic Write into ODP memory: into a page never touched, into one
// the process dropped (MADV_DONTNEED), and at unmapped memory (a remote
// access error; the requester's 8 bytes go nowhere).
void t_odp_atomic_write(Pair &p)
{
	const size_t pg = 4096, len = 16 * pg;
	uint8_t *m;
	ibv_mr *odp = odp_mr(p, len, &m);
	if (!odp)
		return;
	ibv_qp_ex *x = ibv_qp_to_qp_ex(p.a.qp);
	auto atomic_write = [&](uint8_t *at, uint64_t v, uint64_t id) {
		ibv_wr_start(x);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(x, odp->rkey, uintptr_t(at), &v);
		CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	};
	uint64_t v = 0x1122334455667788ULL, got;
	atomic_write(m + 8, v, 30);
	expect_wc(p.a, 30, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
	memcpy(&got, m + 8, 8);
	CHECK(got == v, "stored 0x%llx", (unsigned long long)got);
	CHECK(all_are(m, 8, 0) && all_are(m + 16, pg - 16, 0),
	      "bytes around the atomic write changed");

	memset(m + pg, 0x33, pg);
	CHECK(madvise(m + pg, pg, MADV_DONTNEED) == 0, "madvise");
	atomic_write(m + pg + 16, ~v, 31);
	expect_wc(p.a, 31, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
	memcpy(&got, m + pg + 16, 8);
	CHECK(got == ~v, "after the page was dropped: stored 0x%llx",
	      (unsigned long long)got);
	CHECK(all_are(m + pg, 16, 0), "the dropped page's old bytes came back");

	CHECK(munmap(m + len / 2, len / 2) == 0, "munmap");
	OdpUntouched u = arm_odp_untouched(p, m, len / 2);
	atomic_write(m + len / 2 + 8, v, 32);
	expect_wc(p.a, 32, IBV_WC_REM_ACCESS_ERR);
	expect_odp_untouched(p, u, m, "an atomic write to unmapped ODP memory");
	CHECK(ibv_dereg_mr(odp) == 0, "dereg ODP MR");
	munmap(m, len / 2);
}

void odp_with_atomic_write(Pair &p)
{
	p.send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND |
		     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ;
}

// Receives into ODP memory never touched: a SEND scattered into an ODP
// receive buffer, and a WRITE with immediate whose bytes go to ODP memory
// and whose immediate consumes a receive; and a SEND from ODP memory. RC
// and UC.
void t_odp_write_recv(Pair &p)
{
	const size_t pg = 4096, len = 64 * pg;
	uint8_t *m;
	ibv_mr *odp = odp_mr(p, len, &m);
	if (!odp)
		return;
	const uint32_t n = 5000;

	post_recv_odp(p, m + 100, n, odp->lkey, 40);
	fill(p.a, 0, n, 23);
	CHECK(post_send(p.a, IBV_WR_SEND, 0, n, 41) == 0, "post send");
	expect_wc(p.a, 41, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(p.b, 40, IBV_WC_SUCCESS, IBV_WC_RECV, n);
	CHECK(!memcmp(m + 100, &p.a.buf[0], n), "received bytes differ");

	post_recv_odp(p, m + 32 * pg, 0, odp->lkey, 42);
	fill(p.a, 0, 3 * pg, 24);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 3 * pg, 43,
			uintptr_t(m + 16 * pg + 10), odp->rkey) == 0, "post");
	expect_wc(p.a, 43, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	expect_wc(p.b, 42, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 3 * pg);
	CHECK(!memcmp(m + 16 * pg + 10, &p.a.buf[0], 3 * pg),
	      "written bytes differ");

	// And b sends from ODP memory it never touched through the MR.
	send_from(p, m + 40 * pg, 3000, odp->lkey, 300000, 0x3c);
	CHECK(ibv_dereg_mr(odp) == 0, "dereg ODP MR");
	munmap(m, len);
}

// The driver attribute @name of the MR of length @mrlen, as
// "rdma -j -dd resource show mr" prints it (drv_NAME): a number, or for a
// string its text in @text. Return: false when the MR or the attribute is missing.
bool res_mr_attr(Pair &p, uint64_t mrlen, const char *name, long long *num,
		 std::string *text = nullptr)
{
	std::string cmd = std::string("rdma -j -dd resource show mr dev ") +
			  ibv_get_device_name(p.ctx->device) + " 2>&1";
	FILE *f = popen(cmd.c_str(), "r");
	std::string out;
	char buf[4096];
	size_t n;
	while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		out.append(buf, n);
	if (f)
		pclose(f);
	std::string len = "\"mrlen\":" + std::to_string(mrlen);
	size_t at = out.find(len);
	// The MR's object: flat, between braces.
	while (at != std::string::npos &&
	       strchr(",}", out[at + len.size()]) == nullptr)
		at = out.find(len, at + 1);
	if (at == std::string::npos) {
		fprintf(stderr, "no MR of length %llu in: %s\n",
			(unsigned long long)mrlen, out.c_str());
		return false;
	}
	size_t from = out.rfind('{', at), to = out.find('}', at);
	std::string obj = out.substr(from, to - from + 1);
	// In JSON, rdma prefixes driver attributes with "drv_".
	std::string key = std::string("\"drv_") + name + "\":";
	size_t k = obj.find(key);
	if (k == std::string::npos) {
		fprintf(stderr, "no %s in: %s\n", name, obj.c_str());
		return false;
	}
	const char *v = obj.c_str() + k + key.size();
	if (*v == '"') {
		if (text)
			*text = std::string(v + 1, strchr(v + 1, '"'));
		return text != nullptr;
	}
	*num = strtoll(v, nullptr, 10);
	return true;
}

// Expect the driver attribute @name of the MR of length @mrlen to be @want.
void expect_attr(Pair &p, uint64_t mrlen, const char *name, long long want,
		 const char *when)
{
	long long got = -1;
	CHECK(res_mr_attr(p, mrlen, name, &got) && got == want,
	      "%s: %s is %lld, expected %lld", when, name, got, want);
}

void expect_odp_kind(Pair &p, uint64_t mrlen, const char *want)
{
	std::string got;
	long long unused;
	CHECK(res_mr_attr(p, mrlen, "odp", &unused, &got) && got == want,
	      "odp is \"%s\", expected \"%s\"", got.c_str(), want);
}

// "rdma resource show mr" tells the truth about each MR, against known
// traffic: an explicit ODP MR of 64 pages counts 16 faults after a WRITE
// of 16 pages, 8 invalidations after 8 of them are dropped, 4 prefetched
// pages, 8 more faults for a READ of the 16 (the dropped ones come back),
// with the pages mapped each time; PREFETCH_NO_FAULT counts only the
// pages the process has; a re-registration and a bound window;
// a pinned MR maps all its pages; an implicit ODP MR counts the 2 pages a
// WRITE reached. The device's odp_* counters move by as much.
void t_res_mr(Pair &p)
{
	const size_t pg = 4096, len = 64 * pg;
	const char *dev_counters[] = { "odp_page_faults",
				       "odp_pages_invalidated",
				       "odp_pages_prefetched" };
	long long before[3];
	for (int i = 0; i < 3; i++)
		before[i] = port_counter(p, dev_counters[i]);
	uint8_t *m;
	ibv_mr *odp = odp_mr(p, len, &m, kOdpAccess | IBV_ACCESS_MW_BIND);
	if (!odp)
		return;
	expect_odp_kind(p, len, "explicit");
	for (const char *a : { "pages_mapped", "page_faults",
			       "pages_invalidated", "pages_prefetched",
			       "rereg", "windows" })
		expect_attr(p, len, a, 0, "registered");

	fill(p.a, 0, 16 * pg, 3);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 16 * pg, 1, uintptr_t(m),
			odp->rkey) == 0, "post");
	expect_wc(p.a, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK(!memcmp(m, &p.a.buf[0], 16 * pg), "written bytes differ");
	expect_attr(p, len, "page_faults", 16, "WRITE of 16 pages");
	expect_attr(p, len, "pages_mapped", 16, "WRITE of 16 pages");

	CHECK(madvise(m + 8 * pg, 8 * pg, MADV_DONTNEED) == 0, "madvise");
	expect_attr(p, len, "pages_invalidated", 8, "8 pages dropped");
	expect_attr(p, len, "pages_mapped", 8, "8 pages dropped");

	ibv_sge sge = { uintptr_t(m + 32 * pg), uint32_t(4 * pg), odp->lkey };
	CHECK(ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0,
	      "advise_mr: %s", strerror(errno));
	expect_attr(p, len, "pages_prefetched", 4, "prefetch of 4 pages");
	expect_attr(p, len, "pages_mapped", 12, "prefetch of 4 pages");

	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 100000, 16 * pg, 2,
			uintptr_t(m), odp->rkey) == 0, "post");
	expect_wc(p.a, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 16 * pg);
	CHECK(!memcmp(&p.a.buf[100000], m, 16 * pg), "read bytes differ");
	expect_attr(p, len, "page_faults", 24, "READ of 16 pages, 8 dropped");
	expect_attr(p, len, "pages_mapped", 20, "READ of 16 pages, 8 dropped");
	const long long want[3] = { 24, 8, 4 };
	for (int i = 0; i < 3; i++)
		CHECK(port_counter(p, dev_counters[i]) - before[i] == want[i],
		      "device counter %s moved by %lld, expected %lld",
		      dev_counters[i],
		      port_counter(p, dev_counters[i]) - before[i], want[i]);

	// PREFETCH_NO_FAULT counts what it made present only: none of 4
	// pages the process never touched, then the 2 of them it wrote.
	sge = { uintptr_t(m + 40 * pg), uint32_t(4 * pg), odp->lkey };
	for (int touched : { 0, 2 }) {
		memset(m + 40 * pg, 5, touched * pg);
		CHECK(ibv_advise_mr(p.b.pd,
				    IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0,
		      "advise_mr NO_FAULT: %s", strerror(errno));
		expect_attr(p, len, "pages_prefetched", 4 + touched,
			    "NO_FAULT of 4 pages, some touched");
		expect_attr(p, len, "pages_mapped", 20 + touched,
			    "NO_FAULT of 4 pages, some touched");
	}

	CHECK(ibv_rereg_mr(odp, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr,
			   0, kOdpAccess | IBV_ACCESS_MW_BIND) == 0,
	      "rereg: %s", strerror(errno));
	expect_attr(p, len, "rereg", 1, "one re-registration");
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw, "alloc_mw: %s", strerror(errno));
	if (mw) {
		bind_type2(p, mw, odp, m, pg, IBV_ACCESS_REMOTE_WRITE, 3);
		expect_attr(p, len, "windows", 1, "a window bound");
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
		expect_attr(p, len, "windows", 0, "the window freed");
	}
	CHECK(ibv_dereg_mr(odp) == 0, "dereg ODP MR");

	// Pinned: every page mapped, no ODP counts.
	ibv_mr *pinned = ibv_reg_mr(p.b.pd, m, 4 * pg, IBV_ACCESS_LOCAL_WRITE);
	CHECK(pinned, "reg: %s", strerror(errno));
	if (pinned) {
		expect_odp_kind(p, 4 * pg, "no");
		expect_attr(p, 4 * pg, "pages_mapped", 4, "pinned MR");
		long long unused;
		CHECK(!res_mr_attr(p, 4 * pg, "page_faults", &unused),
		      "a pinned MR shows page_faults");
		CHECK(ibv_dereg_mr(pinned) == 0, "dereg");
	}
	munmap(m, len);

	// Implicit ODP: the pages a WRITE reached.
	ibv_mr *imp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kOdpAccess);
	CHECK(imp, "reg implicit ODP MR: %s", strerror(errno));
	uint8_t *m2 = map_anon(8 * pg);
	if (!imp || !m2)
		return;
	expect_odp_kind(p, SIZE_MAX, "implicit");
	fill(p.a, 0, 2 * pg, 4);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 2 * pg, 4,
			uintptr_t(m2 + pg), imp->rkey) == 0, "post");
	expect_wc(p.a, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK(!memcmp(m2 + pg, &p.a.buf[0], 2 * pg), "written bytes differ");
	expect_attr(p, SIZE_MAX, "page_faults", 2, "implicit, 2 pages");
	expect_attr(p, SIZE_MAX, "pages_mapped", 2, "implicit, 2 pages");
	CHECK(ibv_dereg_mr(imp) == 0, "dereg implicit");
	munmap(m2, 8 * pg);
}

// @name of the MR of @mrlen bytes reaches @want, by a job on another CPU:
// wait for it (at most 20 s, times time_scale()), then check it.
void wait_attr(Pair &p, uint64_t mrlen, const char *name, long long want,
	       const char *when)
{
	long long got = -1;
	for (long i = 0; i < 200 * time_scale(); i++) {
		if (res_mr_attr(p, mrlen, name, &got) && got == want)
			return;
		usleep(100000);
	}
	expect_attr(p, mrlen, name, want, when);
}

// Fault-ahead of a stream of messages of 16 pages, each where the last
// ended, through an explicit ODP MR of 56 pages: the first two are faulted
// by the responder (32 faults); from the second on, the next message's
// pages are prefetched on an unbound worker, clipped to the MR (16, then
// 8: 24 prefetched); a message under 64 KiB gets no job. The same four
// WRITEs posted together: every page counted, as a fault or as prefetched
// (a job not started yet is cancelled; one under way is not waited for,
// and a page it and the next message both fault in at once counts as
// both), the jobs queued still 2 (the second takes the other slot if
// the first still runs), and, within a few rounds, one where a job
// prefetched a page. A WRITE that does not
// continue the last one and a stream through a window queue no job; a
// stream of READs prefetches as WRITEs do. Through an implicit ODP MR, a
// stream prefetches within private anonymous memory only, up to the end
// of its mapping: the jobs of a stream into shared memory run and fault
// nothing in (read once the MR's deregistration, which waits for a job
// under way, returned). The MR's ahead_queued and ahead_run count the
// jobs exactly (queued at a message's first packet, before its
// completion). Every byte checked; the device's counters move by as much.
void t_odp_ahead(Pair &p)
{
	const size_t pg = 4096, msg = 16 * pg, len = 56 * pg, span = 72 * pg;
	const char *dev_counters[] = { "odp_page_faults",
				       "odp_pages_prefetched" };
	uint64_t id = 500;
	uint8_t *m = nullptr;
	uint32_t rkey = 0;
	long long before[2];
	for (int i = 0; i < 2; i++)
		before[i] = port_counter(p, dev_counters[i]);
	// Post WRITEs of @n bytes at each of @offs, then check each.
	auto write = [&](std::initializer_list<size_t> offs, size_t n) {
		uint64_t first = id;
		for (size_t off : offs) {
			fill(p.a, (id - first) * msg, n, uint8_t(id));
			CHECK(post_send(p.a, IBV_WR_RDMA_WRITE,
					(id - first) * msg, n, id,
					uintptr_t(m + off), rkey) == 0, "post");
			id++;
		}
		id = first;
		for (size_t off : offs) {
			expect_wc(p.a, id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
			CHECK(!memcmp(m + off, &p.a.buf[(id - first) * msg], n),
			      "WRITE at page %zu: bytes differ", off / pg);
			id++;
		}
	};
	auto fresh_mr = [&](size_t mrlen) {
		m = map_anon(span);
		ibv_mr *mr = m ? ibv_reg_mr(p.b.pd, m, mrlen,
					    kOdpAccess | IBV_ACCESS_MW_BIND) :
				 nullptr;
		CHECK(mr, "reg ODP MR: %s", strerror(errno));
		rkey = mr ? mr->rkey : 0;
		return mr;
	};
	auto done_mr = [&](ibv_mr *mr) {
		CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
		munmap(m, span);
	};

	ibv_mr *odp = fresh_mr(len);
	if (!odp)
		return;
	write({ 0 }, msg);
	expect_attr(p, len, "page_faults", 16, "first WRITE");
	expect_attr(p, len, "ahead_queued", 0, "first WRITE");
	expect_attr(p, len, "pages_prefetched", 0, "first WRITE");
	write({ msg }, msg);
	expect_attr(p, len, "ahead_queued", 1, "second WRITE of the stream");
	wait_attr(p, len, "pages_prefetched", 16, "second WRITE of the stream");
	expect_attr(p, len, "page_faults", 32, "second WRITE of the stream");
	write({ 2 * msg }, msg);
	expect_attr(p, len, "ahead_queued", 2, "third WRITE of the stream");
	wait_attr(p, len, "pages_prefetched", 24,
		  "third WRITE, the next range clipped to the MR");
	expect_attr(p, len, "page_faults", 32, "third WRITE of the stream");
	write({ 3 * msg }, 8 * pg);
	expect_attr(p, len, "ahead_queued", 2, "last WRITE, to the MR's end");
	expect_attr(p, len, "ahead_run", 2, "last WRITE, to the MR's end");
	expect_attr(p, len, "page_faults", 32, "last WRITE, to the MR's end");
	expect_attr(p, len, "pages_mapped", 56, "last WRITE, to the MR's end");
	done_mr(odp);

	// The last WRITE reaches the MR's end (no job) and its first packet
	// cancels a job before it that has not started; one under way is not
	// waited for, and may count its pages after the last completion. The
	// deregistration waits for it (a job faults holding an access): the
	// device's counts of this MR are final once it returned. Each page is
	// counted once, or twice if a job and a message made it present at
	// once; a round where every job was cancelled before it started, or
	// found its pages present, prefetches nothing. So the rounds go on,
	// each through a fresh MR, until one prefetched a page (a job ran
	// beside the messages), at most kRounds of them: none that does is a
	// fault-ahead that does nothing.
	const int kRounds = 8;
	long long faults = 0, prefetched = 0;
	int rounds = 0;
	bool ahead = false;
	while (!ahead && rounds < kRounds) {
		odp = fresh_mr(len);
		if (!odp)
			return;
		rounds++;
		long long dev_at[2];
		for (int i = 0; i < 2; i++)
			dev_at[i] = port_counter(p, dev_counters[i]);
		write({ 0, msg, 2 * msg }, msg);
		write({ 3 * msg }, 8 * pg);
		expect_attr(p, len, "ahead_queued", 2,
			    "4 WRITEs posted together");
		expect_attr(p, len, "pages_mapped", 56,
			    "4 WRITEs posted together");
		done_mr(odp);
		long long f = port_counter(p, dev_counters[0]) - dev_at[0];
		long long pf = port_counter(p, dev_counters[1]) - dev_at[1];
		CHECK(f >= 32 && f + pf >= 56 && f <= 56 && pf <= 24,
		      "4 WRITEs posted together, round %d: %lld faults, %lld "
		      "prefetched, expected 56 pages, each counted once or "
		      "(made present by a job and a message at once) twice, "
		      "at least 32 faults, at most 24 prefetched", rounds, f,
		      pf);
		faults += f;
		prefetched += pf;
		ahead = pf > 0;
	}
	CHECK(ahead, "4 WRITEs posted together, %d rounds: no fault-ahead "
	      "job prefetched a page (%lld faults)", rounds, faults);

	odp = fresh_mr(len);
	if (!odp)
		return;
	write({ 0 }, msg);
	write({ 2 * msg }, msg);
	expect_attr(p, len, "ahead_queued", 0, "a WRITE out of the stream");
	expect_attr(p, len, "pages_prefetched", 0, "a WRITE out of the stream");
	CHECK(resident(m + 3 * msg, msg) == 0,
	      "a WRITE out of the stream faulted the next range in");
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw, "alloc_mw: %s", strerror(errno));
	if (mw) {
		rkey = bind_type2(p, mw, odp, m, len, IBV_ACCESS_REMOTE_WRITE,
				  id++);
		write({ 0, msg }, msg);
		expect_attr(p, len, "ahead_queued", 0,
			    "a stream through a window");
		expect_attr(p, len, "pages_prefetched", 0,
			    "a stream through a window");
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
	}
	done_mr(odp);
	// 32 + 48 faults and 24 prefetched besides the WRITEs posted together.
	const long long want[2] = { 80 + faults, 24 + prefetched };
	for (int i = 0; i < 2; i++)
		CHECK(port_counter(p, dev_counters[i]) - before[i] == want[i],
		      "device counter %s moved by %lld, expected %lld",
		      dev_counters[i],
		      port_counter(p, dev_counters[i]) - before[i], want[i]);

	// READs: the responder reads pages the process never touched. As
	// with the WRITEs, the second READ's job has counted its pages
	// before the third READ comes (a job under way is not waited for:
	// the third READ would fault the same pages beside it, and a page
	// both made present would count twice).
	odp = fresh_mr(len);
	if (!odp)
		return;
	for (size_t off = 0; off < 3 * msg; off += msg) {
		memset(&p.a.buf[0], 0xee, msg);
		CHECK(post_send(p.a, IBV_WR_RDMA_READ, 0, msg, id,
				uintptr_t(m + off), rkey) == 0, "post");
		expect_wc(p.a, id++, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, msg);
		CHECK(all_are(&p.a.buf[0], msg, 0), "READ: bytes not zero");
		if (off == msg)
			wait_attr(p, len, "pages_prefetched", 16,
				  "second READ of the stream");
	}
	expect_attr(p, len, "ahead_queued", 2, "a stream of 3 READs");
	wait_attr(p, len, "pages_prefetched", 24, "a stream of 3 READs");
	expect_attr(p, len, "page_faults", 32, "a stream of 3 READs");
	done_mr(odp);

	// Implicit ODP: a stream into private anonymous memory is faulted in
	// ahead, as far as that mapping goes (shared memory mapped after it);
	// a stream into shared memory never is.
	ibv_mr *imp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kOdpAccess);
	CHECK(imp, "reg implicit ODP MR: %s", strerror(errno));
	if (!imp)
		return;
	rkey = imp->rkey;
	m = map_anon(span + msg);
	void *after = m ? mmap(m + span, msg, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) :
			  MAP_FAILED;
	CHECK(!m || after == m + span, "mmap shared after: %s",
	      strerror(errno));
	if (after == m + span) {
		write({ 0 }, msg);
		write({ msg }, msg);
		wait_attr(p, SIZE_MAX, "pages_prefetched", 16,
			  "implicit, second WRITE of a stream");
		expect_attr(p, SIZE_MAX, "page_faults", 32,
			    "implicit, second WRITE of a stream");
		write({ 2 * msg }, msg);
		wait_attr(p, SIZE_MAX, "pages_prefetched", 32,
			  "implicit, third WRITE of a stream");
		write({ 3 * msg }, msg);
		expect_attr(p, SIZE_MAX, "ahead_queued", 3,
			    "implicit, a stream of 4 WRITEs");
		wait_attr(p, SIZE_MAX, "pages_prefetched", 40,
			  "implicit, the next range clipped to the mapping");
		expect_attr(p, SIZE_MAX, "page_faults", 32,
			    "implicit, a stream of 4 WRITEs");
		CHECK(resident(m + span, msg) == 0,
		      "implicit ODP faulted in the shared memory after the "
		      "private mapping");
	}
	if (m)
		munmap(m, span + msg);
	void *shm = mmap(nullptr, span, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shm != MAP_FAILED, "mmap shared: %s", strerror(errno));
	long long shm_at[2];
	for (int i = 0; i < 2; i++)
		shm_at[i] = port_counter(p, dev_counters[i]);
	if (shm != MAP_FAILED) {
		// Each job starts before the next message (which would
		// cancel one not started): all of them ran. What they
		// faulted in is read once the MR's deregistration, which
		// waits for a job under way, returned: then none runs.
		m = static_cast<uint8_t *>(shm);
		write({ 0 }, msg);
		for (long long n = 1; n <= 2; n++) {
			write({ size_t(n) * msg }, msg);
			expect_attr(p, SIZE_MAX, "ahead_queued", 3 + n,
				    "implicit, a stream into shared memory");
			wait_attr(p, SIZE_MAX, "ahead_run", 3 + n,
				  "implicit, a stream into shared memory");
		}
	}
	CHECK(ibv_dereg_mr(imp) == 0, "dereg implicit");
	if (shm != MAP_FAILED) {
		// The WRITEs' 48 pages faulted, none prefetched.
		const long long shm_want[2] = { 48, 0 };
		for (int i = 0; i < 2; i++)
			CHECK(port_counter(p, dev_counters[i]) - shm_at[i] ==
				      shm_want[i],
			      "implicit, a stream into shared memory: device "
			      "counter %s moved by %lld, expected %lld",
			      dev_counters[i],
			      port_counter(p, dev_counters[i]) - shm_at[i],
			      shm_want[i]);
		CHECK(resident(m + 3 * msg, msg) == 0,
		      "implicit ODP faulted in shared memory no message "
		      "reached");
		munmap(shm, span);
	}
}

// ODP under mprotect(2): the responder faults with the access the request
// needs, so a read-only page takes READs and refuses WRITEs (and atomics),
// a PROT_NONE page refuses both, each refusal a remote access error that
// changes no byte of either side; once the protection is back, the same
// requests land.
void t_odp_mprotect(Pair &p)
{
	const size_t pg = 4096, len = 4 * pg;
	uint8_t *m = map_anon(len);
	ibv_mr *mr = m ? ibv_reg_mr(p.b.pd, m, len, kOdpAccess) : nullptr;
	CHECK(mr, "reg ODP MR: %s", strerror(errno));
	if (!mr) {
		if (m)
			munmap(m, len);
		return;
	}
	uint64_t id = 700;
	// An RDMA @op of page 1 of b's MR from or into the start of a's
	// buffer: its status.
	auto rdma = [&](ibv_wr_opcode op) {
		ibv_wc wc{};
		CHECK(post_send(p.a, op, 0, uint32_t(pg), id, uintptr_t(m + pg),
				mr->rkey) == 0, "post");
		if (!poll_one(p.a, wc))
			return IBV_WC_GENERAL_ERR;
		CHECK(wc.wr_id == id, "wr_id %llu, expected %llu",
		      (unsigned long long)wc.wr_id, (unsigned long long)id);
		id++;
		return wc.status;
	};
	// b's MR but page 1 (which may not be readable), and a's buffer
	// (guards included), as they are.
	auto snapshot = [&] {
		std::span<const uint8_t> w = p.a.buf.whole();
		std::vector<uint8_t> v(len - pg + w.size());
		memcpy(v.data(), m, pg);
		memcpy(v.data() + pg, m + 2 * pg, len - 2 * pg);
		memcpy(v.data() + len - pg, w.data(), w.size());
		return v;
	};
	// @op of page 1 is refused, and no byte of either side changes.
	auto refused = [&](ibv_wr_opcode op, const char *what) {
		for (size_t i = 0; i < len; i++)
			if (i / pg != 1)
				m[i] = uint8_t(i * 5 + 1);
		fill(p.a, 0, pg, uint8_t(id));
		std::vector<uint8_t> before = snapshot();
		expect_eq_status(rdma(op), IBV_WC_REM_ACCESS_ERR, what);
		std::vector<uint8_t> after = snapshot();
		size_t changed = 0;
		for (size_t i = 0; i < before.size(); i++)
			changed += before[i] != after[i];
		CHECK(changed == 0, "%s: %zu bytes changed", what, changed);
		restate(p);
	};

	// Read-only: a READ of it lands, a WRITE is refused.
	for (size_t i = 0; i < pg; i++)
		m[pg + i] = uint8_t(i * 3 + 7);
	std::vector<uint8_t> ro(m + pg, m + 2 * pg);
	CHECK(mprotect(m + pg, pg, PROT_READ) == 0, "mprotect: %s",
	      strerror(errno));
	memset(&p.a.buf[0], 0, pg);
	expect_eq_status(rdma(IBV_WR_RDMA_READ), IBV_WC_SUCCESS,
			 "READ of a read-only page");
	CHECK(!memcmp(&p.a.buf[0], ro.data(), pg), "READ of a read-only page: "
	      "bytes differ");
	refused(IBV_WR_RDMA_WRITE, "WRITE to a read-only page");
	CHECK(!memcmp(m + pg, ro.data(), pg), "the read-only page changed");

	// No access at all: a READ is refused too; the page keeps its bytes.
	CHECK(mprotect(m + pg, pg, PROT_NONE) == 0, "mprotect: %s",
	      strerror(errno));
	refused(IBV_WR_RDMA_READ, "READ of a PROT_NONE page");
	refused(IBV_WR_RDMA_WRITE, "WRITE to a PROT_NONE page");
	CHECK(mprotect(m + pg, pg, PROT_READ) == 0 &&
		      !memcmp(m + pg, ro.data(), pg),
	      "the PROT_NONE page changed");

	// Writable again: the WRITE lands.
	CHECK(mprotect(m + pg, pg, PROT_READ | PROT_WRITE) == 0, "mprotect: %s",
	      strerror(errno));
	fill(p.a, 0, pg, 77);
	expect_eq_status(rdma(IBV_WR_RDMA_WRITE), IBV_WC_SUCCESS,
			 "WRITE once the page is writable");
	CHECK(!memcmp(m + pg, &p.a.buf[0], pg), "WRITE once writable: bytes "
	      "differ");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
	munmap(m, len);
}

// What the child of t_odp_exit tells its parent.
struct ExitTarget {
	uint32_t qpn, rkey;
	uint64_t addr;
};

// The child of t_odp_exit: its own context, an ODP MR and an RC QP
// connected to a's; tells @fd where to write, waits until the first
// WRITE (@msg bytes) is there, and exits with the WRITEs still coming.
[[noreturn]] void exit_child(Pair &p, int fd, size_t len, size_t msg)
{
	const char *dev = ibv_get_device_name(p.ctx->device);
	Pair c;
	c.ctx = open_device(dev);
	c.mtu = p.mtu;
	uint8_t *m = map_anon(len);
	ibv_pd *pd = c.ctx ? ibv_alloc_pd(c.ctx) : nullptr;
	ibv_mr *mr = pd && m ? ibv_reg_mr(pd, m, len, kOdpAccess) : nullptr;
	ibv_cq *cq = c.ctx ? ibv_create_cq(c.ctx, 16, nullptr, nullptr, 0) :
			     nullptr;
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap = { 4, 4, 1, 1, 0 };
	ibv_qp *qp = pd && cq ? ibv_create_qp(pd, &ia) : nullptr;
	if (!mr || !qp)
		_exit(3);
	// Connected as xfer's connect() does, with a's QP as the peer.
	c.b.qp = qp;
	Side peer;
	peer.qp = p.a.qp;
	if (!connect(c, c.b, peer))
		_exit(4);
	ExitTarget t = { qp->qp_num, mr->rkey, uintptr_t(m) };
	if (write(fd, &t, sizeof(t)) != sizeof(t))
		_exit(5);
	// The first WRITE landed whole (its first and last bytes are 1).
	volatile uint8_t *first = m, *last = m + msg - 1;
	for (long i = 0; i < 20000 * time_scale() && !(*first && *last); i++)
		usleep(1000);
	_exit(*first && *last ? 0 : 6);
}

// A process exits while RDMA WRITEs into its ODP MR keep arriving: its
// memory goes (the MMU notifier's release) before its verbs objects do.
// The WRITEs that land before are whole; then the requester's WRITEs fail
// (its peer QP is gone: retries exceeded) instead of hanging; the kernel
// reports nothing, and the child's QP and MR are gone from "rdma
// resource".
void t_odp_exit(Pair &p)
{
	const size_t len = 64 * 4096, msg = 16384;
	int fds[2];
	CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		exit_child(p, fds[1], len, msg);
	}
	close(fds[1]);
	ExitTarget t{};
	bool got = read(fds[0], &t, sizeof(t)) == sizeof(t);
	close(fds[0]);
	CHECK(got, "the child set up nothing");
	if (!got) {
		waitpid(pid, nullptr, 0);
		return;
	}
	// a's QP to the child's: a short transport timeout, few retries.
	ibv_qp_attr reset{};
	reset.qp_state = IBV_QPS_RESET;
	CHECK(ibv_modify_qp(p.a.qp, &reset, IBV_QP_STATE) == 0, "reset");
	p.lost_peer = t.qpn;
	p.timeout = scaled_qp_timeout(12);
	p.retry_cnt = 2;
	connect(p, p.a, p.b);

	// WRITEs 8 deep until one fails; the first one makes the child exit.
	const unsigned depth = 8;
	unsigned posted = 0, ok = 0, failed = 0;
	ibv_wc_status first_err = IBV_WC_SUCCESS;
	fill(p.a, 0, msg, 0x5a);
	p.a.buf[0] = p.a.buf[msg - 1] = 1;
	while (!failed && posted < 100000) {
		while (posted - ok - failed < depth) {
			size_t off = (posted % (len / msg)) * msg;
			CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, msg, posted,
					t.addr + off, t.rkey) == 0, "post");
			posted++;
		}
		ibv_wc wc{};
		if (!poll_one(p.a, wc))
			break;
		if (wc.status == IBV_WC_SUCCESS)
			ok++;
		else if (!failed++)
			first_err = wc.status;
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0, "child: status %#x", st);
	CHECK(ok >= 1 && failed == 1 &&
		      (first_err == IBV_WC_RETRY_EXC_ERR ||
		       first_err == IBV_WC_REM_ACCESS_ERR),
	      "%u WRITEs landed, %u failed, the first with %s: expected some "
	      "to land, then retries exceeded (or an access error)", ok,
	      failed, ibv_wc_status_str(first_err));
	// The rest are flushed.
	for (unsigned i = ok + failed; i < posted; i++) {
		ibv_wc wc{};
		if (poll_one(p.a, wc))
			CHECK(wc.status == IBV_WC_WR_FLUSH_ERR, "WRITE %llu after "
			      "the failure: %s", (unsigned long long)wc.wr_id,
			      ibv_wc_status_str(wc.status));
	}
	std::string child = "\"pid\":" + std::to_string(pid) + ",";
	for (const char *kind : { "qp", "mr", "cq", "pd" })
		for (const std::string &o : res_objects(
			     ibv_get_device_name(p.ctx->device), kind, false))
			CHECK(o.find(child) == std::string::npos,
			      "the child's %s is still listed: %s", kind,
			      o.c_str());
	p.lost_peer = 0;
	p.timeout = scaled_qp_timeout();
	p.retry_cnt = 7;
	restate(p);
}

const Test tests[] = {
	{ "odp", t_odp, nullptr, false },
	{ "advise", t_advise, nullptr, false },
	{ "res_mr", t_res_mr, nullptr, false },
	{ "odp_more", t_odp_more, nullptr, false },
	{ "odp_atomic_write", t_odp_atomic_write, odp_with_atomic_write,
	  false },
	{ "odp_write_recv", t_odp_write_recv, nullptr, true },
	{ "odp_ahead", t_odp_ahead, nullptr, false },
	{ "odp_mprotect", t_odp_mprotect, nullptr, false },
	{ "odp_exit", t_odp_exit, nullptr, false },
};

} // namespace

const std::span<const Test> odp_tests(tests);

} // namespace xfer
