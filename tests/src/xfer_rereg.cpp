// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of ibv_rereg_mr(3): access, PD and translation changed in
// place (the keys stay; traffic proves what they grant), every return code,
// read-only pages, the fork codes; and the QP reset that restate() relies on.
#include "xfer.h"

namespace xfer {
namespace {

// Moving a QP to RESET removes its completions not yet polled (here the
// flushes of its receives) and leaves other QPs' completions in order.
void t_reset_cleans_cq(Pair &p)
{
	ibv_cq *shared_cq = p.b.cq;
	for (int i = 0; i < 3; i++)
		CHECK(post_recv(p.b, 0, 64, 70 + i) == 0, "post_recv");
	fill(p.a, 0, 16, 1);
	// a's write completes on a's CQ; b's error flushes land on b's CQ.
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(p.b.qp, &a, IBV_QP_STATE) == 0, "to ERR");
	usleep(100000);
	a.qp_state = IBV_QPS_RESET;
	CHECK(ibv_modify_qp(p.b.qp, &a, IBV_QP_STATE) == 0, "to RESET");
	ibv_wc wc;
	int n = ibv_poll_cq(shared_cq, 1, &wc);
	CHECK(n == 0, "after RESET the CQ still had wr_id %llu status %s",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
}

// Access changes in place: the keys stay, and what they grant changes at
// once, both ways.
void t_rereg_access(Pair &p)
{
	ibv_mr *mr = p.b.mr;
	uint32_t lkey = mr->lkey, rkey = mr->rkey;

	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			   IBV_ACCESS_LOCAL_WRITE) == 0, "rereg to local only");
	CHECK(mr->lkey == lkey && mr->rkey == rkey, "keys changed");
	refused_write(p, remote(p.b, 0), rkey, 256, 1, IBV_WC_REM_ACCESS_ERR,
		      "write without remote write");

	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == 0,
	      "rereg to remote write");
	CHECK(mr->lkey == lkey && mr->rkey == rkey, "keys changed");
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 256, 2),
			 IBV_WC_SUCCESS, "write with the old rkey");
	CHECK(same(p.a, 0, p.b, 0, 256), "written data differs");
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 8, 3),
			 IBV_WC_SUCCESS, "second write");
	// Remote read was taken away.
	refused_rdma(p, IBV_WR_RDMA_READ, remote(p.b, 0), rkey, 256, 4,
		     IBV_WC_REM_ACCESS_ERR, "read without remote read");
}

// A PD change in place: QPs of the old PD lose the MR, the new PD's gain it.
void t_rereg_pd(Pair &p)
{
	ibv_pd *pd2 = ibv_alloc_pd(p.ctx);
	ibv_mr *mr = p.b.mr;
	uint32_t rkey = mr->rkey;

	CHECK(pd2, "alloc PD");
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0) == 0,
	      "rereg PD");
	CHECK(mr->pd == pd2 && mr->rkey == rkey, "pd %p rkey 0x%x", mr->pd,
	      mr->rkey);
	// b's QP is in the old PD: its receive into the MR is a protection
	// error there (not a byte written), a remote operational error here.
	Untouched u = arm_untouched(p);
	CHECK(post_recv(p.b, 0, 4096, 10) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 64, 11) == 0, "post send");
	expect_wc(p.a, 11, IBV_WC_REM_OP_ERR);
	expect_wc(p.b, 10, IBV_WC_LOC_PROT_ERR);
	expect_untouched(p, u, "a receive into another PD's MR");
	restate(p);
	refused_write(p, remote(p.b, 0), rkey, 256, 12, IBV_WC_REM_ACCESS_ERR,
		      "write through another PD");

	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, p.b.pd, nullptr, 0, 0) ==
		      0, "rereg PD back");
	fill(p.a, 0, 64, 9);
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 64, 13),
			 IBV_WC_SUCCESS, "write after the PD came back");
	CHECK(same(p.a, 0, p.b, 0, 64), "data differs");
	// A PD with a re-registered MR frees once the MR went elsewhere.
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc PD");
}

// A new translation in place: the same keys now reach the new buffer only.
void t_rereg_trans(Pair &p)
{
	ibv_mr *mr = p.b.mr;
	uint32_t rkey = mr->rkey;
	std::vector<uint8_t> other(3 * 4096 + 100);
	uint8_t *addr = other.data() + 100;	// not page aligned
	size_t len = 3 * 4096;

	memset(&p.b.buf[0], 0, 4096);
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, addr,
			   len, 0) == 0, "rereg translation");
	CHECK(mr->addr == addr && mr->length == len && mr->rkey == rkey,
	      "addr %p length %zu rkey 0x%x", mr->addr, mr->length, mr->rkey);
	fill(p.a, 0, len, 5);
	expect_eq_status(write_to(p, uintptr_t(addr), rkey, len, 20),
			 IBV_WC_SUCCESS, "write to the new range");
	CHECK(!memcmp(addr, &p.a.buf[0], len), "new range has other data");
	CHECK(p.b.buf[0] == 0 && p.b.buf[4095] == 0, "old range written");
	// Refused: neither the new range (nor what is around it in @other),
	// nor the old one changes.
	std::vector<uint8_t> was = other;
	refused_write(p, uintptr_t(addr) + len - 8, rkey, 16, 21,
		      IBV_WC_REM_ACCESS_ERR, "write past the new end");
	CHECK(other == was, "a refused write past the new end changed it");
	refused_write(p, remote(p.b, 0), rkey, 256, 22, IBV_WC_REM_ACCESS_ERR,
		      "write to the old range");
	CHECK(other == was, "a refused write to the old range changed the "
	      "new one");
	// As local key too: a send from the new range.
	CHECK(post_recv(p.a, 0, 4096, 23) == 0, "post_recv");
	ibv_sge sge = { uintptr_t(addr), 1000, mr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.wr_id = 24;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK(ibv_post_send(p.b.qp, &wr, &bad) == 0, "post send");
	expect_wc(p.b, 24, IBV_WC_SUCCESS);
	expect_wc(p.a, 23, IBV_WC_SUCCESS);
	CHECK(!memcmp(&p.a.buf[0], addr, 1000), "sent data differs");
	// Translation, PD and access together.
	ibv_pd *pd2 = ibv_alloc_pd(p.ctx);
	CHECK(ibv_rereg_mr(mr,
			   IBV_REREG_MR_CHANGE_TRANSLATION |
				   IBV_REREG_MR_CHANGE_PD |
				   IBV_REREG_MR_CHANGE_ACCESS,
			   pd2, &p.b.buf[0], 4096, IBV_ACCESS_LOCAL_WRITE) == 0,
	      "rereg all three");
	refused_write(p, remote(p.b, 0), rkey, 256, 25, IBV_WC_REM_ACCESS_ERR,
		      "write after all three");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	p.b.mr = nullptr;
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc PD");
}

// Every return code of ibv_rereg_mr(3) but the fork ones.
void t_rereg_errors(Pair &p)
{
	ibv_mr *mr = p.b.mr;
	uint32_t rkey = mr->rkey;
	int ret;

	errno = 0;
	ret = ibv_rereg_mr(mr, 0x80, nullptr, nullptr, 0, 0);
	CHECK(ret == IBV_REREG_MR_ERR_INPUT && errno == EINVAL,
	      "unknown flag: %d errno %d", ret, errno);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
			   &p.b.buf[0], 0, 0);
	CHECK(ret == IBV_REREG_MR_ERR_INPUT, "zero length: %d", ret);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
			   nullptr, 4096, 0);
	CHECK(ret == IBV_REREG_MR_ERR_INPUT, "NULL address: %d", ret);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, nullptr, nullptr, 0,
			   IBV_ACCESS_LOCAL_WRITE);
	CHECK(ret == IBV_REREG_MR_ERR_INPUT && errno == EINVAL,
	      "access without CHANGE_ACCESS: %d", ret);

	// The kernel refuses: an unmapped range, remote write without local
	// write, an address the range does not fit after.
	void *hole = mmap(nullptr, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	munmap(hole, 8192);
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, hole,
			   8192, 0);
	CHECK(ret == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
	      "unmapped range: %d errno %d (%s)", ret, errno, strerror(errno));
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			   IBV_ACCESS_REMOTE_WRITE);
	CHECK(ret == IBV_REREG_MR_ERR_CMD && errno == EINVAL,
	      "remote write without local write: %d errno %d", ret, errno);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
			   (void *)(UINT64_MAX - 4095), 8192, 0);
	CHECK(ret == IBV_REREG_MR_ERR_CMD, "range past 2^64: %d", ret);

	// None of it touched the MR.
	fill(p.a, 0, 512, 3);
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 512, 30),
			 IBV_WC_SUCCESS, "write after failed rereg");
	CHECK(same(p.a, 0, p.b, 0, 512), "data differs");

	// An access change may turn on-demand paging on, and off again: the
	// keys stay and traffic goes on.
	for (int odp : { int(IBV_ACCESS_ON_DEMAND), 0 }) {
		ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr,
				   nullptr, 0,
				   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ | odp);
		CHECK(ret == 0, "rereg ODP %d: %d errno %d", odp, ret, errno);
		fill(p.a, 0, 512, uint8_t(4 + odp));
		expect_eq_status(write_to(p, remote(p.b, 0), rkey, 512, 31),
				 IBV_WC_SUCCESS, "write after rereg to ODP");
		CHECK(same(p.a, 0, p.b, 0, 512), "data differs (ODP %d)", odp);
	}
	CHECK(ibv_dereg_mr(mr) == 0, "dereg after failures");
	p.b.mr = nullptr;
}

// Adding write access to pages pinned for reading pins them again for
// writing (an untouched anonymous page is the shared zero page until
// written); memory the process mapped read-only refuses it.
void t_rereg_readonly(Pair &p)
{
	const size_t len = 4 * 4096;
	auto *rw = static_cast<uint8_t *>(mmap(nullptr, len,
					       PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1,
					       0));
	auto *ro = static_cast<uint8_t *>(mmap(nullptr, len, PROT_READ,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1,
					       0));
	CHECK(rw != MAP_FAILED && ro != MAP_FAILED, "mmap");

	ibv_mr *mr = ibv_reg_mr(p.b.pd, rw, len, IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "reg read-only: %s", strerror(errno));
	if (!mr)
		return;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == 0,
	      "rereg to writable: %s", strerror(errno));
	fill(p.a, 0, len, 77);
	expect_eq_status(write_to(p, uintptr_t(rw), mr->rkey, len, 40),
			 IBV_WC_SUCCESS, "write after rereg to writable");
	CHECK(!memcmp(rw, &p.a.buf[0], len),
	      "the write did not reach the process's pages");
	static const uint8_t zero[4096] = {};
	uint8_t *fresh = static_cast<uint8_t *>(
		mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		     0));
	CHECK(!memcmp(fresh, zero, 4096), "the zero page was written");
	munmap(fresh, 4096);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");

	mr = ibv_reg_mr(p.b.pd, ro, len, IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "reg of read-only memory: %s", strerror(errno));
	if (mr) {
		errno = 0;
		int ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr,
				       nullptr, 0,
				       IBV_ACCESS_LOCAL_WRITE |
					       IBV_ACCESS_REMOTE_WRITE);
		CHECK(ret == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
		      "write access to read-only memory: %d errno %d", ret,
		      errno);
		expect_eq_status(write_to(p, uintptr_t(ro), mr->rkey, 64, 41),
				 IBV_WC_REM_ACCESS_ERR,
				 "write to read-only memory");
		CHECK(!memcmp(ro, zero, 64), "read-only memory written");
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	}
	munmap(rw, len);
	munmap(ro, len);
}

// With ibv_fork_init() libibverbs marks registered ranges MADV_DONTFORK:
// a new range it cannot mark leaves the old MR valid (DONT_FORK_NEW); a new
// range it can mark but the kernel refuses is ERR_CMD, with the range
// unmarked again and the old MR valid. (libibverbs 44 reports DO_FORK_OLD
// and CMD_AND_DO_FORK_NEW only when its own bookkeeping runs out of memory:
// MADV_DOFORK failures are ignored.)
void t_rereg_fork(Pair &p)
{
	ibv_mr *mr = p.b.mr;
	uint32_t rkey = mr->rkey;
	void *hole = mmap(nullptr, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	munmap(hole, 8192);

	int ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
			       hole, 8192, 0);
	CHECK(ret == IBV_REREG_MR_ERR_DONT_FORK_NEW, "unmapped range: %d",
	      ret);
	fill(p.a, 0, 64, 8);
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 64, 50),
			 IBV_WC_SUCCESS, "old MR after DONT_FORK_NEW");
	CHECK(same(p.a, 0, p.b, 0, 64), "data differs");

	void *none = mmap(nullptr, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, none,
			   8192, 0);
	CHECK(ret == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
	      "PROT_NONE range: %d errno %d", ret, errno);
	munmap(none, 8192);
	fill(p.a, 0, 64, 9);
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 64, 51),
			 IBV_WC_SUCCESS, "old MR after ERR_CMD");
	CHECK(same(p.a, 0, p.b, 0, 64), "data differs");

	// A successful move: the old range's mark is dropped even when the
	// application unmapped it first.
	auto *oldbuf = static_cast<uint8_t *>(mmap(nullptr, 8192,
						   PROT_READ | PROT_WRITE,
						   MAP_PRIVATE | MAP_ANONYMOUS,
						   -1, 0));
	auto *newbuf = static_cast<uint8_t *>(mmap(nullptr, 8192,
						   PROT_READ | PROT_WRITE,
						   MAP_PRIVATE | MAP_ANONYMOUS,
						   -1, 0));
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
			   oldbuf, 8192, 0) == 0, "rereg to oldbuf");
	munmap(oldbuf, 8192);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, newbuf,
			   8192, 0);
	CHECK(ret == 0, "rereg away from an unmapped range: %d", ret);
	expect_eq_status(write_to(p, uintptr_t(newbuf), rkey, 64, 52),
			 IBV_WC_SUCCESS, "new MR");
	CHECK(!memcmp(newbuf, &p.a.buf[0], 64), "data differs");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	p.b.mr = nullptr;
	munmap(newbuf, 8192);
}

void fork_init(Pair &)
{
	CHECK(ibv_fork_init() == 0, "ibv_fork_init");
}

// ibv_rereg_mr(3) on ODP MRs, explicit and implicit: CHANGE_ACCESS,
// CHANGE_PD and CHANGE_TRANSLATION all work in place, the lkey and rkey
// kept (mlx5 makes a new MR and new keys instead), with traffic after
// each: a refused WRITE lands nothing, an accepted one lands its bytes in
// memory never touched (faulted in).
void t_rereg_odp(Pair &p)
{
	const size_t pg = 4096, len = 16 * pg;
	const int full = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND;
	ibv_pd *pd2 = ibv_alloc_pd(p.ctx);
	CHECK(pd2, "alloc PD");
	if (!pd2)
		return;
	for (bool implicit : { false, true }) {
		const char *kind = implicit ? "implicit" : "explicit";
		uint8_t *m = map_anon(len), *m2 = map_anon(len);
		if (!m || !m2)
			return;
		ibv_mr *mr = implicit ?
				     ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, full) :
				     ibv_reg_mr(p.b.pd, m, len, full);
		CHECK(mr, "reg %s ODP MR: %s", kind, strerror(errno));
		if (!mr)
			return;
		const uint32_t lkey = mr->lkey, rkey = mr->rkey;
		uint64_t id = 40;
		// A WRITE of 512 bytes at @at through the MR's rkey: @want
		// status, and the bytes landed, or not one of them.
		auto write = [&](uint8_t *at, ibv_wc_status want,
				 const char *what) {
			memset(at, 0, 512);
			fill(p.a, 0, 512, uint8_t(id));
			expect_eq_status(write_to(p, uintptr_t(at), rkey, 512,
						  id++), want, what);
			if (want == IBV_WC_SUCCESS) {
				CHECK(!memcmp(at, &p.a.buf[0], 512),
				      "%s (%s): data differs", what, kind);
			} else {
				bool zero = true;
				for (int i = 0; i < 512; i++)
					zero = zero && !at[i];
				CHECK(zero, "%s (%s): a refused WRITE landed",
				      what, kind);
				restate(p);
			}
		};
		auto rereg = [&](int flags, ibv_pd *pd, void *addr, size_t n,
				 int access, const char *what) {
			CHECK(ibv_rereg_mr(mr, flags, pd, addr, n, access) == 0,
			      "rereg %s of the %s ODP MR: %s", what, kind,
			      strerror(errno));
			CHECK(mr->lkey == lkey && mr->rkey == rkey,
			      "rereg %s (%s): keys 0x%x/0x%x, were 0x%x",
			      what, kind, mr->lkey, mr->rkey, rkey);
		};
		write(m + pg, IBV_WC_SUCCESS, "WRITE before any rereg");

		rereg(IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
		      full & ~IBV_ACCESS_REMOTE_WRITE, "access");
		write(m + 2 * pg, IBV_WC_REM_ACCESS_ERR,
		      "WRITE without remote write");
		rereg(IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, full,
		      "access back");
		write(m + 2 * pg, IBV_WC_SUCCESS, "WRITE with remote write");

		rereg(IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0, "PD");
		write(m + 3 * pg, IBV_WC_REM_ACCESS_ERR,
		      "WRITE through another PD's QP");
		rereg(IBV_REREG_MR_CHANGE_PD, p.b.pd, nullptr, 0, 0,
		      "PD back");
		write(m + 3 * pg, IBV_WC_SUCCESS, "WRITE with the PD back");

		// The same keys now reach m2 only (an implicit MR becomes an
		// explicit range).
		rereg(IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, m2, len, 0,
		      "translation");
		write(m2 + 5 * pg, IBV_WC_SUCCESS, "WRITE at the new range");
		write(m + 5 * pg, IBV_WC_REM_ACCESS_ERR,
		      "WRITE at the old range");
		ibv_sge sge = { uintptr_t(m2 + 5 * pg), 512, lkey };
		CHECK(ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				    &sge, 1) == 0,
		      "advise_mr through the lkey after rereg (%s): %s", kind,
		      strerror(errno));
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
		munmap(m, len);
		munmap(m2, len);
	}
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc PD");
}

const Test tests[] = {
	{ "reset_cleans_cq", t_reset_cleans_cq, nullptr, false },
	{ "rereg_access", t_rereg_access, nullptr, false },
	{ "rereg_pd", t_rereg_pd, nullptr, false },
	{ "rereg_trans", t_rereg_trans, nullptr, false },
	{ "rereg_errors", t_rereg_errors, nullptr, false },
	{ "rereg_readonly", t_rereg_readonly, nullptr, false },
	{ "rereg_fork", t_rereg_fork, fork_init, false },
	{ "rereg_odp", t_rereg_odp, nullptr, false },
};

} // namespace

const std::span<const Test> rereg_tests(tests);

} // namespace xfer
