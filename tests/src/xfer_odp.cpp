// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of on-demand paging: an ODP MR as RDMA target and source
// while its pages come and go, and ibv_advise_mr(3) with implicit ODP.
#include "xfer.h"

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
	// and nothing else happens (the QPs are in error after this).
	CHECK(munmap(m + len / 2, len / 2) == 0, "munmap");
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 4096, 9,
			uintptr_t(m + len / 2), odp->rkey) == 0, "post");
	expect_wc(p.a, 9, IBV_WC_REM_ACCESS_ERR);
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

const Test tests[] = {
	{ "odp", t_odp, nullptr, false },
	{ "advise", t_advise, nullptr, false },
};

} // namespace

const std::span<const Test> odp_tests(tests);

} // namespace xfer
