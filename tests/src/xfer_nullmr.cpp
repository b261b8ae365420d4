// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of null MRs (ibv_alloc_null_mr(3)): an lkey that
// discards what is written through it and reads as zeroes, over every
// address; no rkey. A receive scattered into it lands nothing and
// completes with the message's length; a SEND or WRITE out of it carries
// zeroes; a peer that names its key as an rkey is refused, and not a byte
// of either side changes.
#include "xfer.h"

namespace xfer {
namespace {

// A null MR in @pd, checked to be what ibv_alloc_null_mr(3) says.
ibv_mr *null_mr(ibv_pd *pd)
{
	ibv_mr *mr = ibv_alloc_null_mr(pd);

	CHECK(mr, "ibv_alloc_null_mr: %s", strerror(errno));
	if (mr)
		CHECK(mr->pd == pd && mr->context == pd->context &&
			      mr->addr == nullptr && mr->length == SIZE_MAX &&
			      mr->rkey == 0 && mr->lkey != 0,
		      "null MR: pd %p addr %p length %zu lkey 0x%x rkey 0x%x",
		      (void *)mr->pd, mr->addr, mr->length, mr->lkey,
		      mr->rkey);
	return mr;
}

// Post on @s's QP a receive of the SGEs @sges.
void post_recv_sges(Side &s, std::initializer_list<ibv_sge> sges,
		    uint64_t id)
{
	std::vector<ibv_sge> v(sges);
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = id;
	wr.sg_list = v.data();
	wr.num_sge = int(v.size());
	CHECK(ibv_post_recv(s.qp, &wr, &bad) == 0, "post recv: %s",
	      strerror(errno));
}

// The null MR as a receive target: a SEND into it lands nothing and
// completes with its byte_len; scattered behind a null SGE of 100 bytes,
// the rest lands in b's buffer at its place. Both sides' whole buffers
// compared before and after.
void t_null_recv(Pair &p)
{
	ibv_mr *nmr = null_mr(p.b.pd);
	if (!nmr)
		return;
	for (uint32_t len : { 1u, 1000u, 5000u, 300000u }) {
		Untouched u = arm_untouched(p);
		// Any address: a null MR has them all.
		post_recv_sges(p.b, { { 0x1000, len, nmr->lkey } }, 1);
		CHECK(post_send(p.a, IBV_WR_SEND, 0, len, 2) == 0, "post send");
		expect_wc(p.a, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
		expect_wc(p.b, 1, IBV_WC_SUCCESS, IBV_WC_RECV, len);
		expect_untouched(p, u, "a SEND into the null MR");
	}
	// Scatter: 100 bytes into nowhere, the rest into b's buffer.
	Untouched u = arm_untouched(p);
	const uint32_t len = 3000;
	post_recv_sges(p.b, { { ~0ULL - 4096, 100, nmr->lkey },
			      { remote(p.b, 8192), 4000, p.b.mr->lkey } }, 3);
	CHECK(post_send(p.a, IBV_WR_SEND, 0, len, 4) == 0, "post send");
	expect_wc(p.a, 4, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(p.b, 3, IBV_WC_SUCCESS, IBV_WC_RECV, len);
	CHECK(same(p.a, 100, p.b, 8192, len - 100),
	      "the bytes after the null SGE differ");
	expect_untouched(p, u, "a SEND scattered behind a null SGE", 8192,
			 len - 100);
	CHECK(ibv_dereg_mr(nmr) == 0, "dereg: %s", strerror(errno));
}

// Out of the null MR come zeroes: a SEND's payload and a WRITE's; a READ
// whose response is scattered into it lands nothing on a's side.
void t_null_source(Pair &p)
{
	ibv_mr *nmr = null_mr(p.a.pd);
	if (!nmr)
		return;
	const uint32_t len = 5000;
	fill(p.b, 0, len + 64, 0x3c);
	CHECK(post_recv(p.b, 0, len, 1) == 0, "post recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, len, 2, 0, 0, IBV_SEND_SIGNALED,
			nmr->lkey) == 0,
	      "post send");
	expect_wc(p.a, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(p.b, 1, IBV_WC_SUCCESS, IBV_WC_RECV, len);
	size_t nonzero = 0;
	for (uint32_t i = 0; i < len; i++)
		nonzero += p.b.buf[i] != 0;
	CHECK(!nonzero, "%zu bytes a SEND from the null MR carried are not 0",
	      nonzero);
	CHECK(p.b.buf[len] == uint8_t(0x3c + len * 7 + (len >> 8)),
	      "past the SEND");

	fill(p.b, 65536, len + 64, 0x4d);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, len, 3, remote(p.b, 65536),
			p.b.mr->rkey, IBV_SEND_SIGNALED, nmr->lkey) == 0,
	      "post write");
	expect_wc(p.a, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	nonzero = 0;
	for (uint32_t i = 0; i < len; i++)
		nonzero += p.b.buf[65536 + i] != 0;
	CHECK(!nonzero, "%zu bytes a WRITE from the null MR carried are not 0",
	      nonzero);

	Untouched u = arm_untouched(p);
	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 0, len, 4, remote(p.b, 0),
			p.b.mr->rkey, IBV_SEND_SIGNALED, nmr->lkey) == 0,
	      "post read");
	expect_wc(p.a, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	expect_untouched(p, u, "a READ into the null MR");
	CHECK(ibv_dereg_mr(nmr) == 0, "dereg: %s", strerror(errno));
}

// A peer that names the null MR's key as an rkey (its lkey: it has no
// other; and the rkey ibv_mr says, 0) is refused: WRITE, READ and both
// atomics complete with a remote access error, with a source pattern
// unlike anything in b's buffer, and not a byte of either side's whole
// buffer changes; each refusal is counted (rkey_invalid).
void t_null_remote(Pair &p)
{
	ibv_mr *nmr = null_mr(p.b.pd);
	if (!nmr)
		return;
	long long before = port_counter(p, "rkey_invalid");
	int refused = 0;

	for (uint32_t key : { nmr->lkey, nmr->rkey }) {
		for (uint64_t addr : { uint64_t(0), remote(p.b, 0) }) {
			refused_write(p, addr, key, 4096, 1,
				      IBV_WC_REM_ACCESS_ERR,
				      "WRITE to the null MR's key");
			refused_rdma(p, IBV_WR_RDMA_READ, addr, key, 4096, 2,
				     IBV_WC_REM_ACCESS_ERR,
				     "READ from the null MR's key");
			refused += 2;
		}
		for (ibv_wr_opcode op :
		     { IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP }) {
			Untouched u = arm_untouched(p);
			ibv_wc wc{};
			post_atomic(p.a, op, 3, 0, key, 0, 1);
			if (poll_one(p.a, wc))
				expect_eq_status(wc.status,
						 IBV_WC_REM_ACCESS_ERR,
						 "atomic at the null MR's key");
			expect_untouched(p, u, "an atomic at the null MR's key");
			restate(p);
			refused++;
		}
	}
	// The key 0 names no entry either: counted the same.
	CHECK(port_counter(p, "rkey_invalid") == before + refused,
	      "rkey_invalid %lld, expected %lld",
	      port_counter(p, "rkey_invalid"), before + refused);
	CHECK(ibv_dereg_mr(nmr) == 0, "dereg: %s", strerror(errno));
}

// What else a null MR is not: ibv_rereg_mr(3) refuses it (INPUT, EINVAL);
// no window binds to it (IBV_WC_MW_BIND_ERR); its lkey works only in its
// own PD (another PD's receive fails with a local protection error);
// "rdma resource show mr" lists it as kind null; a hundred of them come
// and go.
void t_null_props(Pair &p)
{
	ibv_mr *nmr = null_mr(p.b.pd);
	if (!nmr)
		return;
	errno = 0;
	CHECK(ibv_rereg_mr(nmr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr,
			   0, IBV_ACCESS_LOCAL_WRITE) ==
			      IBV_REREG_MR_ERR_INPUT &&
		      errno == EINVAL,
	      "ibv_rereg_mr of a null MR: errno %s", strerror(errno));

	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc MW: %s", strerror(errno));
	if (mw) {
		ibv_mw_bind bind{};
		bind.wr_id = 10;
		bind.send_flags = IBV_SEND_SIGNALED;
		bind.bind_info = { nmr, 0, 4096, IBV_ACCESS_REMOTE_WRITE };
		if (ibv_bind_mw(p.b.qp, mw, &bind) == 0)
			expect_wc(p.b, 10, IBV_WC_MW_BIND_ERR);
		restate(p);
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	}

	// Another PD's null MR on b's QP: a local protection error.
	ibv_pd *other = ibv_alloc_pd(p.ctx);
	ibv_mr *onmr = other ? null_mr(other) : nullptr;
	if (onmr) {
		Untouched u = arm_untouched(p);
		post_recv_sges(p.b, { { 0, 4096, onmr->lkey } }, 11);
		CHECK(post_send(p.a, IBV_WR_SEND, 0, 100, 12) == 0, "post");
		expect_wc(p.a, 12, IBV_WC_REM_OP_ERR);
		expect_wc(p.b, 11, IBV_WC_LOC_PROT_ERR);
		expect_untouched(p, u, "a receive into another PD's null MR");
		restate(p);
		CHECK(ibv_dereg_mr(onmr) == 0, "dereg");
	}
	if (other)
		CHECK(ibv_dealloc_pd(other) == 0, "dealloc PD");

	std::string kind;
	for (const std::string &o :
	     res_objects(ibv_get_device_name(p.ctx->device), "mr"))
		if (o.find("\"drv_kind\":\"null\"") != std::string::npos)
			kind = "null";
	CHECK(kind == "null", "no MR of kind null in rdma resource show mr");

	std::vector<ibv_mr *> many;
	for (int i = 0; i < 100; i++)
		if (ibv_mr *m = null_mr(p.b.pd))
			many.push_back(m);
	for (ibv_mr *m : many)
		CHECK(ibv_dereg_mr(m) == 0, "dereg");
	CHECK(ibv_dereg_mr(nmr) == 0, "dereg: %s", strerror(errno));
}

const Test tests[] = {
	{ "null_recv", t_null_recv, nullptr, true },
	{ "null_source", t_null_source, nullptr, false },
	{ "null_remote", t_null_remote, nullptr, false },
	{ "null_props", t_null_props, nullptr, false },
};

} // namespace

const std::span<const Test> nullmr_tests = tests;

} // namespace xfer
