// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer: moves data between two QPs of one device (the packets loop
// back through sroce's RoCEv2 path) and checks the bytes that arrived and
// the completions, as an application would.
//
//   sroce-xfer DEV TEST [QP_TYPE] [MTU]
//
// TEST is one of the names in the tables (here and in xfer_*.cpp); QP_TYPE is rc
// (default) or uc; MTU is 256..4096 (default 1024).
#include "xfer.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace xfer {
namespace {

// SEND of several sizes, one and many packets, and zero bytes.
void t_send(Pair &p)
{
	for (uint32_t len : { 0u, 1u, 100u, 1024u, 1025u, 4096u, 65536u,
			      300000u }) {
		fill(p.a, 0, len, uint8_t(len));
		memset(&p.b.buf[0], 0, len + 16);
		CHECK(post_recv(p.b, 0, len + 16, 10) == 0, "post_recv");
		CHECK(post_send(p.a, IBV_WR_SEND, 0, len, 20) == 0, "post_send");
		expect_wc(p.a, 20, IBV_WC_SUCCESS, IBV_WC_SEND);
		ibv_wc wc{};
		if (poll_one(p.b, wc)) {
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 10 &&
				      wc.opcode == IBV_WC_RECV &&
				      wc.byte_len == len &&
				      !(wc.wc_flags & IBV_WC_WITH_IMM) &&
				      wc.src_qp == p.a.qp->qp_num,
			      "recv of %u: status %s byte_len %u flags 0x%x", len,
			      ibv_wc_status_str(wc.status), wc.byte_len,
			      wc.wc_flags);
		}
		CHECK(same(p.a, 0, p.b, 0, len), "%u bytes sent differ", len);
	}
}

void t_send_imm(Pair &p)
{
	fill(p.a, 0, 3000, 3);
	CHECK(post_recv(p.b, 0, 4096, 11) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND_WITH_IMM, 0, 3000, 21) == 0, "post");
	expect_wc(p.a, 21, IBV_WC_SUCCESS, IBV_WC_SEND);
	ibv_wc wc{};
	if (poll_one(p.b, wc))
		CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 3000 &&
			      (wc.wc_flags & IBV_WC_WITH_IMM) &&
			      wc.imm_data == htonl(0x12345678),
		      "status %s len %u flags 0x%x imm 0x%x",
		      ibv_wc_status_str(wc.status), wc.byte_len, wc.wc_flags,
		      ntohl(wc.imm_data));
	CHECK(same(p.a, 0, p.b, 0, 3000), "data differs");
}

void t_inline(Pair &p)
{
	fill(p.a, 0, 200, 9);
	CHECK(post_recv(p.b, 0, 256, 12) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 200, 22,
			0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0,
	      "post inline send");
	// The buffer may change once posted: the data went with the WR.
	memset(&p.a.buf[0], 0xee, 200);
	expect_wc(p.a, 22, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(p.b, 12, IBV_WC_SUCCESS, IBV_WC_RECV, 200);
	fill(p.a, 0, 200, 9);
	CHECK(same(p.a, 0, p.b, 0, 200), "inline data differs");
}

void t_write(Pair &p)
{
	for (uint32_t len : { 0u, 8u, 1024u, 5000u, 200000u }) {
		fill(p.a, 4096, len, uint8_t(len + 1));
		memset(&p.b.buf[8192], 0, len + 1);
		CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 4096, len, 30,
				remote(p.b, 8192), p.b.mr->rkey) == 0, "post");
		expect_wc(p.a, 30, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK(landed(p.a, 4096, p.b, 8192, len),
		      "%u written bytes differ", len);
		CHECK(p.b.buf[8192 + len] == 0, "wrote past the end");
	}
}

void t_write_imm(Pair &p)
{
	fill(p.a, 0, 2500, 5);
	CHECK(post_recv(p.b, 0, 0, 13) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 2500, 31,
			remote(p.b, 10000), p.b.mr->rkey) == 0, "post");
	expect_wc(p.a, 31, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	ibv_wc wc{};
	if (poll_one(p.b, wc))
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 13 &&
			      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			      (wc.wc_flags & IBV_WC_WITH_IMM) &&
			      wc.imm_data == htonl(0x12345678),
		      "status %s opcode %d flags 0x%x",
		      ibv_wc_status_str(wc.status), wc.opcode, wc.wc_flags);
	CHECK(same(p.a, 0, p.b, 10000, 2500), "written bytes differ");
}

void t_read(Pair &p)
{
	for (uint32_t len : { 0u, 8u, 1024u, 1500u, 70000u, 500000u }) {
		fill(p.b, 20000, len, uint8_t(len + 2));
		memset(&p.a.buf[0], 0, len + 1);
		CHECK(post_send(p.a, IBV_WR_RDMA_READ, 0, len, 40,
				remote(p.b, 20000), p.b.mr->rkey) == 0, "post");
		expect_wc(p.a, 40, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len);
		CHECK(same(p.a, 0, p.b, 20000, len), "%u read bytes differ",
		      len);
		CHECK(p.a.buf[len] == 0, "read past the end");
	}
}

void post_atomic(Side &s, ibv_wr_opcode op, uint64_t id, uint64_t raddr,
		 uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	ibv_sge sge = { uintptr_t(&s.buf[0]), 8, s.mr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	CHECK(ibv_post_send(s.qp, &wr, &bad) == 0, "post atomic");
}

void t_atomic(Pair &p)
{
	uint64_t v = 1000, got;
	memcpy(&p.b.buf[64], &v, 8);
	post_atomic(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 50, remote(p.b, 64),
		    p.b.mr->rkey, 42, 0);
	expect_wc(p.a, 50, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	memcpy(&got, &p.a.buf[0], 8);
	CHECK(got == 1000, "fetch-add returned %llu", (unsigned long long)got);
	memcpy(&got, &p.b.buf[64], 8);
	CHECK(got == 1042, "after fetch-add %llu", (unsigned long long)got);

	post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 51, remote(p.b, 64),
		    p.b.mr->rkey, 1042, 7);
	expect_wc(p.a, 51, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	memcpy(&got, &p.a.buf[0], 8);
	CHECK(got == 1042, "cmp-swap returned %llu", (unsigned long long)got);
	memcpy(&got, &p.b.buf[64], 8);
	CHECK(got == 7, "after a matching cmp-swap %llu",
	      (unsigned long long)got);

	post_atomic(p.a, IBV_WR_ATOMIC_CMP_AND_SWP, 52, remote(p.b, 64),
		    p.b.mr->rkey, 99, 5);
	expect_wc(p.a, 52, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	memcpy(&got, &p.b.buf[64], 8);
	CHECK(got == 7, "a failed cmp-swap changed memory to %llu",
	      (unsigned long long)got);
}

// RDMA Atomic Write (ibv_wr_atomic_write): 8 bytes land at once; an
// unaligned target is an invalid request.
void t_atomic_write(Pair &p)
{
	ibv_qp_ex *x = ibv_qp_to_qp_ex(p.a.qp);
	uint64_t v = 0x0123456789abcdefULL, got;

	memset(&p.b.buf[0], 0xee, 64);
	ibv_wr_start(x);
	x->wr_id = 60;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, p.b.mr->rkey, remote(p.b, 8), &v);
	CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	expect_wc(p.a, 60, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
	memcpy(&got, &p.b.buf[8], 8);
	CHECK(got == v, "atomic write stored 0x%llx", (unsigned long long)got);
	CHECK(p.b.buf[7] == 0xee && p.b.buf[16] == 0xee,
	      "atomic write touched bytes around its target");

	ibv_wr_start(x);
	x->wr_id = 61;
	ibv_wr_atomic_write(x, p.b.mr->rkey, remote(p.b, 20), &v);
	CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	expect_wc(p.a, 61, IBV_WC_REM_INV_REQ_ERR);
}

// Many WRs in flight, completions in order, every byte right.
void t_stream(Pair &p)
{
	const int n = 48;
	for (int i = 0; i < n; i++)
		CHECK(post_recv(p.b, i * 4096, 4096, 100 + i) == 0, "post_recv");
	for (int i = 0; i < n; i++) {
		fill(p.a, i * 4096, 3000 + i, uint8_t(i));
		CHECK(post_send(p.a, IBV_WR_SEND, i * 4096, 3000 + i, 200 + i) ==
			      0,
		      "post_send %d", i);
	}
	for (int i = 0; i < n; i++)
		expect_wc(p.a, 200 + i, IBV_WC_SUCCESS, IBV_WC_SEND);
	for (int i = 0; i < n; i++) {
		expect_wc(p.b, 100 + i, IBV_WC_SUCCESS, IBV_WC_RECV, 3000 + i);
		CHECK(same(p.a, i * 4096, p.b, i * 4096, 3000 + i),
		      "message %d differs", i);
	}
}

// A bad rkey: REM_ACCESS_ERR, nothing written, the QP in error.
void t_err_rkey(Pair &p)
{
	memset(&p.b.buf[0], 0, 64);
	fill(p.a, 0, 64, 1);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 64, 60, remote(p.b, 0),
			p.b.mr->rkey ^ 0x80) == 0, "post");
	expect_wc(p.a, 60, IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 64; i++)
		if (p.b.buf[i]) {
			CHECK(false, "a write with a bad rkey changed memory");
			break;
		}
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	ibv_query_qp(p.a.qp, &a, IBV_QP_STATE, &ia);
	CHECK(a.qp_state == IBV_QPS_ERR, "requester state %d after the error",
	      a.qp_state);
}

// Beyond the MR's end: REM_ACCESS_ERR.
void t_err_bounds(Pair &p)
{
	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 0, 4096, 61,
			remote(p.b, kBuf - 100), p.b.mr->rkey) == 0, "post");
	expect_wc(p.a, 61, IBV_WC_REM_ACCESS_ERR);
}

// The responder QP does not allow remote writes: REM_ACCESS_ERR.
void t_err_qp_access(Pair &p)
{
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 16, 62, remote(p.b, 0),
			p.b.mr->rkey) == 0, "post");
	expect_wc(p.a, 62, IBV_WC_REM_ACCESS_ERR);
}

// A local SGE whose MR is in another PD: LOC_PROT_ERR.
void t_err_lkey_pd(Pair &p)
{
	CHECK(post_recv(p.b, 0, 4096, 14) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 64, 63, 0, 0, IBV_SEND_SIGNALED,
			p.b.mr->lkey) == 0, "post");
	expect_wc(p.a, 63, IBV_WC_LOC_PROT_ERR);
}

// A receive buffer too small: LOC_LEN_ERR there, REM_INV_REQ_ERR here.
void t_err_recv_len(Pair &p)
{
	CHECK(post_recv(p.b, 0, 100, 15) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 200, 64) == 0, "post");
	expect_wc(p.a, 64, IBV_WC_REM_INV_REQ_ERR);
	expect_wc(p.b, 15, IBV_WC_LOC_LEN_ERR);
}

// No receive posted and no RNR retries: RNR_RETRY_EXC_ERR.
void t_err_rnr(Pair &p)
{
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 10, 65) == 0, "post");
	expect_wc(p.a, 65, IBV_WC_RNR_RETRY_EXC_ERR);
}

// A receive posted late is found by the RNR retry.
void t_rnr_retry(Pair &p)
{
	fill(p.a, 0, 500, 4);
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 500, 66) == 0, "post");
	usleep(20000);
	CHECK(post_recv(p.b, 0, 1000, 16) == 0, "post_recv");
	expect_wc(p.b, 16, IBV_WC_SUCCESS, IBV_WC_RECV, 500);
	expect_wc(p.a, 66, IBV_WC_SUCCESS, IBV_WC_SEND);
	CHECK(same(p.a, 0, p.b, 0, 500), "data differs");
}

// UD multicast: a member receives (with the GRH), a non-member and a
// detached QP do not; connected QPs cannot attach.
void t_mcast(Pair &p)
{
	ibv_qp *sender = ud_qp(p.a), *member = ud_qp(p.b);
	ibv_qp *other = ud_qp(p.b);
	if (!sender || !member || !other)
		return;
	ibv_gid mgid{};
	mgid.raw[10] = mgid.raw[11] = 0xff;
	mgid.raw[12] = 239, mgid.raw[13] = 1, mgid.raw[14] = 2;
	mgid.raw[15] = 3;
	CHECK(ibv_attach_mcast(p.b.qp, &mgid, 0) == EINVAL,
	      "an RC QP attached to a multicast group");
	CHECK(ibv_attach_mcast(member, &mgid, 0) == 0, "attach: %s",
	      strerror(errno));

	ibv_ah_attr aa{};
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = mgid;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 1;
	ibv_ah *ah = ibv_create_ah(p.a.pd, &aa);
	CHECK(ah, "multicast AH: %s", strerror(errno));
	if (!ah)
		return;

	auto send = [&](uint64_t id) {
		fill(p.a, 0, 300, uint8_t(id));
		ibv_sge sge = { uintptr_t(&p.a.buf[0]), 300, p.a.mr->lkey };
		ibv_send_wr wr{}, *bad;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = 0x1234;
		CHECK(ibv_post_send(sender, &wr, &bad) == 0, "post to group");
		ibv_wc sc{};
		if (poll_one(p.a, sc))
			CHECK(sc.wr_id == id && sc.status == IBV_WC_SUCCESS &&
				      sc.qp_num == sender->qp_num,
			      "send to group: wr_id %llu status %s",
			      (unsigned long long)sc.wr_id,
			      ibv_wc_status_str(sc.status));
	};
	auto recv = [&](ibv_qp *qp, uint64_t id) {
		ibv_sge sge = { uintptr_t(&p.b.buf[0]), 400, p.b.mr->lkey };
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
	};

	recv(member, 70);
	recv(other, 71);
	send(80);
	ibv_wc wc{};
	if (poll_one(p.b, wc)) {
		CHECK(wc.wr_id == 70 && wc.status == IBV_WC_SUCCESS &&
			      wc.byte_len == 340 && (wc.wc_flags & IBV_WC_GRH) &&
			      wc.src_qp == sender->qp_num,
		      "member: wr_id %llu status %s len %u flags 0x%x",
		      (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status), wc.byte_len, wc.wc_flags);
		CHECK(same(p.a, 0, p.b, 40, 300), "multicast payload differs");
	}
	usleep(50000);
	CHECK(ibv_poll_cq(p.b.cq, 1, &wc) == 0,
	      "a QP outside the group received (wr_id %llu)",
	      (unsigned long long)wc.wr_id);

	CHECK(ibv_detach_mcast(member, &mgid, 0) == 0, "detach");
	CHECK(ibv_detach_mcast(member, &mgid, 0) == EINVAL, "detach twice");
	recv(member, 72);
	send(81);
	usleep(50000);
	CHECK(ibv_poll_cq(p.b.cq, 1, &wc) == 0,
	      "a detached QP received (wr_id %llu)",
	      (unsigned long long)wc.wr_id);

	ibv_destroy_ah(ah);
	for (ibv_qp *q : { sender, member, other })
		CHECK(ibv_destroy_qp(q) == 0, "destroy UD QP");
}

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

// --- ibv_rereg_mr ---------------------------------------------------------

// RDMA WRITE of @len bytes from a's buffer to @raddr/@rkey; the status.
ibv_wc_status write_to(Pair &p, uint64_t raddr, uint32_t rkey, uint32_t len,
		       uint64_t id)
{
	ibv_wc wc{};
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, len, id, raddr, rkey) == 0,
	      "post write");
	if (!poll_one(p.a, wc))
		return IBV_WC_GENERAL_ERR;
	CHECK(wc.wr_id == id, "wr_id %llu", (unsigned long long)wc.wr_id);
	return wc.status;
}

// After a failed WR both QPs are in error: back to RTS, as applications do.
void restate(Pair &p)
{
	for (Side *s : { &p.a, &p.b }) {
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_RESET;
		CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE) == 0, "to RESET");
		ibv_wc wc;
		while (ibv_poll_cq(s->cq, 1, &wc) > 0)
			;
	}
	connect(p, p.a, p.b);
	connect(p, p.b, p.a);
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
	fill(p.a, 0, 256, 1);
	memset(&p.b.buf[0], 0, 256);
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 256, 1),
			 IBV_WC_REM_ACCESS_ERR, "write without remote write");
	CHECK(p.b.buf[0] == 0 && p.b.buf[255] == 0, "refused write landed");
	restate(p);

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
	CHECK(post_send(p.a, IBV_WR_RDMA_READ, 0, 64, 4, remote(p.b, 0),
			rkey) == 0, "post read");
	expect_wc(p.a, 4, IBV_WC_REM_ACCESS_ERR);
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
	// error there, a remote operational error here.
	CHECK(post_recv(p.b, 0, 4096, 10) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 64, 11) == 0, "post send");
	expect_wc(p.a, 11, IBV_WC_REM_OP_ERR);
	expect_wc(p.b, 10, IBV_WC_LOC_PROT_ERR);
	restate(p);
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 64, 12),
			 IBV_WC_REM_ACCESS_ERR, "write through another PD");
	restate(p);

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
	expect_eq_status(write_to(p, uintptr_t(addr) + len - 8, rkey, 16, 21),
			 IBV_WC_REM_ACCESS_ERR, "write past the new end");
	restate(p);
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 16, 22),
			 IBV_WC_REM_ACCESS_ERR, "write to the old range");
	restate(p);
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
	expect_eq_status(write_to(p, remote(p.b, 0), rkey, 16, 25),
			 IBV_WC_REM_ACCESS_ERR, "write after all three");
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

// --- key hardening -------------------------------------------------------

// A key from a deregistered MR does not reach the memory registered again
// by its next owner: REM_ACCESS_ERR, not a byte written.
void t_stale_rkey(Pair &p)
{
	uint8_t *mem = &p.b.buf[8192];
	ibv_mr *old = ibv_reg_mr(p.b.pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE |
						      IBV_ACCESS_REMOTE_WRITE);
	CHECK(old, "reg: %s", strerror(errno));
	if (!old)
		return;
	uint32_t stale = old->rkey;
	CHECK(ibv_dereg_mr(old) == 0, "dereg");
	ibv_mr *fresh = ibv_reg_mr(p.b.pd, mem, 4096,
				   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE);
	CHECK(fresh && fresh->rkey != stale, "new key 0x%x, stale 0x%x",
	      fresh ? fresh->rkey : 0, stale);
	memset(mem, 0, 4096);
	fill(p.a, 0, 4096, 6);
	expect_eq_status(write_to(p, uintptr_t(mem), stale, 4096, 80),
			 IBV_WC_REM_ACCESS_ERR, "write with a stale rkey");
	for (int i = 0; i < 4096; i++)
		if (mem[i]) {
			CHECK(false, "stale rkey wrote byte %d", i);
			break;
		}
	if (fresh)
		CHECK(ibv_dereg_mr(fresh) == 0, "dereg");
}

// An MR whose iova range ends at 2^64 - 1: its last bytes are reachable,
// nothing wraps around, and addresses near 2^64 are refused elsewhere.
void t_mr_top_iova(Pair &p)
{
	const uint64_t len = 8192, iova = UINT64_MAX - len + 1;
	// The iova's offset in its page is the address's (ib_uverbs checks).
	auto *mem = static_cast<uint8_t *>(mmap(nullptr, len,
						PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS,
						-1, 0));
	ibv_mr *mr = ibv_reg_mr_iova(p.b.pd, mem, len, iova,
				     IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr, "reg at the top of the iova space: %s", strerror(errno));
	if (!mr)
		return;
	fill(p.a, 0, 64, 12);
	expect_eq_status(write_to(p, UINT64_MAX - 63, mr->rkey, 64, 81),
			 IBV_WC_SUCCESS, "write to the last 64 bytes");
	CHECK(!memcmp(mem + len - 64, &p.a.buf[0], 64), "data differs");
	expect_eq_status(write_to(p, UINT64_MAX - 31, mr->rkey, 64, 82),
			 IBV_WC_REM_ACCESS_ERR, "write wrapping past 2^64");
	restate(p);
	expect_eq_status(write_to(p, 0, mr->rkey, 16, 83),
			 IBV_WC_REM_ACCESS_ERR, "write at iova 0");
	restate(p);
	expect_eq_status(write_to(p, UINT64_MAX - 10, p.b.mr->rkey, 64, 84),
			 IBV_WC_REM_ACCESS_ERR, "ordinary MR, address near 2^64");
	restate(p);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	munmap(mem, len);
}

// A 1 GiB MR carries traffic at its start, middle and end.
void t_big_mr(Pair &p)
{
	const size_t len = size_t(1) << 30;
	auto *mem = static_cast<uint8_t *>(mmap(nullptr, len,
						PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS,
						-1, 0));
	CHECK(mem != MAP_FAILED, "mmap 1 GiB");
	if (mem == MAP_FAILED)
		return;
	ibv_mr *mr = ibv_reg_mr(p.b.pd, mem, len,
				IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "reg 1 GiB: %s", strerror(errno));
	if (mr) {
		uint64_t id = 90;
		for (size_t off : { size_t(0), len / 2 - 1000,
				    len - 65536 }) {
			fill(p.a, 0, 65536, uint8_t(off >> 20));
			expect_eq_status(write_to(p, uintptr_t(mem + off),
						  mr->rkey, 65536, id++),
					 IBV_WC_SUCCESS, "write into 1 GiB");
			CHECK(!memcmp(mem + off, &p.a.buf[0], 65536),
			      "data at offset %zu differs", off);
		}
		CHECK(ibv_dereg_mr(mr) == 0, "dereg 1 GiB");
	}
	munmap(mem, len);
}

// --- memory windows (ibv_alloc_mw, ibv_bind_mw, IBV_WR_BIND_MW) ----------

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
	expect_eq_status(write_to(p, remote(p.b, 8192 - 128), mw->rkey, 256,
				  102),
			 IBV_WC_REM_ACCESS_ERR, "write past the window's end");
	restate(p);
	expect_eq_status(write_to(p, remote(p.b, 4096), key0, 16, 103),
			 IBV_WC_REM_ACCESS_ERR, "write with the window's old key");
	restate(p);
	// A window is not a local key.
	CHECK(post_send(p.b, IBV_WR_RDMA_WRITE, 4096, 64, 104, remote(p.a, 0),
			p.a.mr->rkey, IBV_SEND_SIGNALED, mw->rkey) == 0, "post");
	expect_wc(p.b, 104, IBV_WC_LOC_PROT_ERR);
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
	expect_eq_status(write_to(p, remote(p.b, 4096), mw->rkey, 16, 106),
			 IBV_WC_REM_ACCESS_ERR, "write after unbind");
	restate(p);
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg after unbind");
}

int post_bind2(Pair &p, ibv_mw *mw, uint32_t key, ibv_mr *mr, size_t off,
	       size_t len, unsigned access, uint64_t id)
{
	ibv_send_wr wr{}, *bad;
	wr.wr_id = id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info = { mr, uintptr_t(&p.b.buf[off]), len, access };
	return ibv_post_send(p.b.qp, &wr, &bad);
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
	expect_eq_status(write_to(p, 200, key, 16, 114), IBV_WC_REM_ACCESS_ERR,
			 "write after LOCAL_INV");
	restate(p);

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
	expect_eq_status(write_to(p, remote(p.b, 0), key, 16, 118),
			 IBV_WC_REM_ACCESS_ERR, "write after SEND_WITH_INV");
	restate(p);
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

// The peer does not answer: the transport timer resends until retry_cnt is
// spent, then RETRY_EXC_ERR; a peer that answers late is fine.
void t_err_retry(Pair &p)
{
	fill(p.a, 0, 64, 2);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 64, 67, remote(p.b, 0),
			p.b.mr->rkey) == 0, "post");
	expect_wc(p.a, 67, IBV_WC_RETRY_EXC_ERR);
}

void lost_peer(Pair &p)
{
	p.lost_peer = 0xabcde;
	p.timeout = 10;	// 4 ms
	p.retry_cnt = 2;
}


void no_remote_write(Pair &p)
{
	p.remote_access = IBV_ACCESS_REMOTE_READ;
}

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

void no_rnr_retry(Pair &p)
{
	p.rnr_retry = 0;
}

void fork_init(Pair &)
{
	CHECK(ibv_fork_init() == 0, "ibv_fork_init");
}

void with_atomic_write(Pair &p)
{
	p.send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND;
}

const Test tests[] = {
	{ "send", t_send, nullptr, true },
	{ "send_imm", t_send_imm, nullptr, true },
	{ "inline", t_inline, nullptr, true },
	{ "write", t_write, nullptr, true },
	{ "write_imm", t_write_imm, nullptr, true },
	{ "read", t_read, nullptr, false },
	{ "atomic", t_atomic, nullptr, false },
	{ "atomic_write", t_atomic_write, with_atomic_write, false },
	{ "stream", t_stream, nullptr, true },
	{ "err_rkey", t_err_rkey, nullptr, false },
	{ "err_bounds", t_err_bounds, nullptr, false },
	{ "err_qp_access", t_err_qp_access, no_remote_write, false },
	{ "err_lkey_pd", t_err_lkey_pd, nullptr, true },
	{ "err_recv_len", t_err_recv_len, nullptr, false },
	{ "err_rnr", t_err_rnr, no_rnr_retry, false },
	{ "rnr_retry", t_rnr_retry, nullptr, false },
	{ "mcast", t_mcast, nullptr, false },
	{ "err_retry", t_err_retry, lost_peer, false },
	{ "reset_cleans_cq", t_reset_cleans_cq, nullptr, false },
	{ "stale_rkey", t_stale_rkey, nullptr, false },
	{ "mr_top_iova", t_mr_top_iova, nullptr, false },
	{ "big_mr", t_big_mr, nullptr, false },
	{ "mw_type1", t_mw_type1, nullptr, false },
	{ "mw_type2", t_mw_type2, nullptr, false },
	{ "rereg_access", t_rereg_access, nullptr, false },
	{ "rereg_pd", t_rereg_pd, nullptr, false },
	{ "rereg_trans", t_rereg_trans, nullptr, false },
	{ "rereg_errors", t_rereg_errors, nullptr, false },
	{ "rereg_readonly", t_rereg_readonly, nullptr, false },
	{ "rereg_fork", t_rereg_fork, fork_init, false },
	{ "odp", t_odp, nullptr, false },
	{ "advise", t_advise, nullptr, false },
};

} // namespace
} // namespace xfer

using namespace xfer;

int main(int argc, char **argv)
{
	Pair p;

	if (argc < 3) {
		fprintf(stderr, "usage: sroce-xfer DEV TEST [rc|uc] [MTU]\n");
		return 2;
	}
	if (argc > 3 && std::string_view(argv[3]) == "uc")
		p.type = IBV_QPT_UC;
	if (argc > 4)
		p.mtu = ibv_mtu(__builtin_ctz(atoi(argv[4]) / 128));
	return run_test(argv[1], argv[2], p, { tests, harden_tests });
}
