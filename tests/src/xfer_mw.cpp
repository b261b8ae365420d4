// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of memory windows (ibv_alloc_mw, ibv_bind_mw,
// IBV_WR_BIND_MW): type 1 and type 2, their keys, ranges and invalidation.
#include "xfer.h"

namespace xfer {
namespace {

// b's MR for windows: the whole buffer, bindable, local write.
ibv_mr *window_mr(Pair &p)
{
	ibv_mr *mr = ibv_reg_mr(p.b.pd, p.b.buf.data(), p.b.buf.size(),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(mr, "reg MR with MW_BIND: %s", strerror(errno));
	return mr;
}

// Type 1: bound by ibv_bind_mw() (a new key each time), bounded by its own
// range, remote keys only, holding its MR; length 0 unbinds.
void t_mw_type1(Pair &p)
{
	ibv_mr *mr = window_mr(p);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc type 1 MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	uint32_t key0 = mw->rkey;
	ibv_mw_bind bind{};
	bind.wr_id = 100;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info = { mr, uintptr_t(&p.b.buf[4096]), 4096,
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	CHECK(ibv_bind_mw(p.b.qp, mw, &bind) == 0, "ibv_bind_mw: %s",
	      strerror(errno));
	expect_wc(p.b, 100, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK(mw->rkey != key0 && (mw->rkey >> 8) == (key0 >> 8),
	      "new key 0x%x after 0x%x", mw->rkey, key0);

	fill(p.a, 0, 256, 21);
	expect_eq_status(write_to(p, remote(p.b, 4096), mw->rkey, 256, 101),
			 IBV_WC_SUCCESS, "write through the window");
	CHECK(same(p.a, 0, p.b, 4096, 256), "data differs");
	refused_write(p, remote(p.b, 8192 - 128), mw->rkey, 256, 102,
		      IBV_WC_REM_ACCESS_ERR, "write past the window's end");
	refused_write(p, remote(p.b, 4096), key0, 256, 103,
		      IBV_WC_REM_ACCESS_ERR, "write with the window's old key");
	// A window is not a local key.
	Untouched u = arm_untouched(p);
	CHECK(post_send(p.b, IBV_WR_RDMA_WRITE, 4096, 64, 104, remote(p.a, 0),
			p.a.mr->rkey, IBV_SEND_SIGNALED, mw->rkey) == 0, "post");
	expect_wc(p.b, 104, IBV_WC_LOC_PROT_ERR);
	expect_untouched(p, u, "a window's key as a local key");
	restate(p);
	// The MR is held while the window is bound.
	errno = 0;
	CHECK(ibv_dereg_mr(mr) != 0, "dereg of an MR with a bound window");
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			   IBV_ACCESS_LOCAL_WRITE) == IBV_REREG_MR_ERR_CMD,
	      "rereg of an MR with a bound window");

	bind.wr_id = 105;
	bind.bind_info.length = 0;
	bind.bind_info.mw_access_flags = 0;
	CHECK(ibv_bind_mw(p.b.qp, mw, &bind) == 0, "unbind: %s",
	      strerror(errno));
	expect_wc(p.b, 105, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	refused_write(p, remote(p.b, 4096), mw->rkey, 256, 106,
		      IBV_WC_REM_ACCESS_ERR, "write after unbind");
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg after unbind");
}

// Type 1, zero-based (IBV_ACCESS_ZERO_BASED, as ibv_bind_mw(3) lists it):
// a WRITE's remote_addr is an offset from the window's start; one past its
// length, or the window's virtual address, lands nothing. Bound again
// without the flag, the same window takes virtual addresses.
void t_mw_type1_zero_based(Pair &p)
{
	const unsigned rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	ibv_mr *mr = window_mr(p);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc type 1 MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	ibv_mw_bind bind{};
	bind.wr_id = 120;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info = { mr, uintptr_t(&p.b.buf[8192]), 4096,
			   rw | IBV_ACCESS_ZERO_BASED };
	CHECK(ibv_bind_mw(p.b.qp, mw, &bind) == 0, "zero-based ibv_bind_mw: %s",
	      strerror(errno));
	expect_wc(p.b, 120, IBV_WC_SUCCESS, IBV_WC_BIND_MW);

	fill(p.a, 0, 256, 41);
	expect_eq_status(write_to(p, 300, mw->rkey, 256, 121), IBV_WC_SUCCESS,
			 "zero-based write at offset 300");
	CHECK(same(p.a, 0, p.b, 8192 + 300, 256), "data differs");

	refused_write(p, 4096 - 128, mw->rkey, 256, 122,
		      IBV_WC_REM_ACCESS_ERR, "write past the window's end");
	refused_write(p, remote(p.b, 8192), mw->rkey, 256, 123,
		      IBV_WC_REM_ACCESS_ERR,
		      "write at the zero-based window's virtual address");

	bind.wr_id = 124;
	bind.bind_info.mw_access_flags = rw;
	CHECK(ibv_bind_mw(p.b.qp, mw, &bind) == 0, "bind again, not "
	      "zero-based: %s", strerror(errno));
	expect_wc(p.b, 124, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	expect_eq_status(write_to(p, remote(p.b, 8192 + 300), mw->rkey, 256,
				  125),
			 IBV_WC_SUCCESS, "write at a virtual address");
	CHECK(same(p.a, 0, p.b, 8192 + 300, 256), "data differs");

	bind.wr_id = 126;
	bind.bind_info.length = 0;
	bind.bind_info.mw_access_flags = 0;
	CHECK(ibv_bind_mw(p.b.qp, mw, &bind) == 0, "unbind: %s",
	      strerror(errno));
	expect_wc(p.b, 126, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg after unbind");
}

int post_bind2(Pair &p, ibv_mw *mw, uint32_t key, ibv_mr *mr, size_t off,
	       size_t len, unsigned access, uint64_t id)
{
	return post_bind_mw(p, mw, key, mr, uintptr_t(&p.b.buf[off]), len,
			    access, id);
}

// Type 2: bound by a WQE (zero-based here), invalidated by LOCAL_INV and
// by a peer's SEND_WITH_INV, not bindable again while bound.
void t_mw_type2(Pair &p)
{
	ibv_mr *mr = window_mr(p);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mw, "alloc type 2 MW: %s", strerror(errno));
	if (!mr || !mw)
		return;
	uint32_t key = ibv_inc_rkey(mw->rkey);
	CHECK(post_bind2(p, mw, key, mr, 12288, 4096,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED,
			 110) == 0, "post bind");
	expect_wc(p.b, 110, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	fill(p.a, 0, 100, 31);
	expect_eq_status(write_to(p, 200, key, 100, 111), IBV_WC_SUCCESS,
			 "zero-based write at offset 200");
	CHECK(same(p.a, 0, p.b, 12288 + 200, 100), "data differs");

	CHECK(post_bind2(p, mw, ibv_inc_rkey(key), mr, 0, 4096,
			 IBV_ACCESS_REMOTE_WRITE, 112) == 0, "post rebind");
	expect_wc(p.b, 112, IBV_WC_MW_BIND_ERR);
	restate(p);

	ibv_send_wr wr{}, *bad;
	wr.wr_id = 113;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	CHECK(ibv_post_send(p.b.qp, &wr, &bad) == 0, "post LOCAL_INV");
	expect_wc(p.b, 113, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	refused_write(p, 200, key, 256, 114, IBV_WC_REM_ACCESS_ERR,
		      "write after LOCAL_INV");

	key = ibv_inc_rkey(key);
	CHECK(post_bind2(p, mw, key, mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE,
			 115) == 0, "post bind again");
	expect_wc(p.b, 115, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK(post_recv(p.b, 20000, 1024, 116) == 0, "post_recv");
	ibv_sge sge = { remote(p.a, 0), 64, p.a.mr->lkey };
	wr = {};
	wr.wr_id = 117;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	CHECK(ibv_post_send(p.a.qp, &wr, &bad) == 0, "post SEND_WITH_INV");
	expect_wc(p.a, 117, IBV_WC_SUCCESS);
	ibv_wc wc{};
	if (poll_one(p.b, wc))
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 116 &&
			      (wc.wc_flags & IBV_WC_WITH_INV) &&
			      wc.invalidated_rkey == key,
		      "recv: %s flags 0x%x rkey 0x%x",
		      ibv_wc_status_str(wc.status), wc.wc_flags,
		      wc.invalidated_rkey);
	refused_write(p, remote(p.b, 0), key, 256, 118, IBV_WC_REM_ACCESS_ERR,
		      "write after SEND_WITH_INV");
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

const Test tests[] = {
	{ "mw_type1", t_mw_type1, nullptr, false },
	{ "mw_type1_zero_based", t_mw_type1_zero_based, nullptr, false },
	{ "mw_type2", t_mw_type2, nullptr, false },
};

} // namespace

const std::span<const Test> mw_tests(tests);

} // namespace xfer
