// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of the operations: SEND (with immediate, inline), RDMA
// WRITE (with immediate), RDMA READ, the atomics and RDMA Atomic Write, many
// WRs in flight, and UD multicast; every byte that arrives is checked.
#include "xfer.h"

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

	// Not 8-byte aligned: an invalid request, not a byte changed.
	Untouched u = arm_untouched(p);
	ibv_wr_start(x);
	x->wr_id = 61;
	ibv_wr_atomic_write(x, p.b.mr->rkey, remote(p.b, 20), &v);
	CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	expect_wc(p.a, 61, IBV_WC_REM_INV_REQ_ERR);
	expect_untouched(p, u, "an unaligned atomic write");
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

// UD multicast: a member receives (with the GRH), a non-member and a
// detached QP do not (a unicast message sent after the group's is the
// first they receive); connected QPs cannot attach.
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
	ibv_ah_attr ua = aa;
	CHECK(ibv_query_gid(p.ctx, 1, 1, &ua.grh.dgid) == 0, "query GID 1");
	ibv_ah *uah = ibv_create_ah(p.a.pd, &ua);
	CHECK(uah, "unicast AH: %s", strerror(errno));
	if (!ah || !uah)
		return;

	// To the group, or (@to) to QP @qpn.
	auto send = [&](uint64_t id, uint32_t len = 300, ibv_ah *to = nullptr,
			uint32_t qpn = 0xffffff) {
		fill(p.a, 0, len, uint8_t(id));
		ibv_sge sge = { uintptr_t(&p.a.buf[0]), len, p.a.mr->lkey };
		ibv_send_wr wr{}, *bad;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = to ? to : ah;
		wr.wr.ud.remote_qpn = qpn;
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

	// A unicast message of 123 bytes to @qp, sent after the group's: the
	// first message @qp receives, unless the group's reached it.
	auto first_is_unicast = [&](ibv_qp *qp, const char *what) {
		ibv_wc wc{};
		send(90, 123, uah, qp->qp_num);
		if (poll_one(p.b, wc))
			CHECK(wc.qp_num == qp->qp_num && wc.byte_len == 40 + 123 &&
				      wc.status == IBV_WC_SUCCESS,
			      "%s: its first message was %u bytes (qp 0x%x, "
			      "%s), the unicast one is %u", what,
			      wc.byte_len, wc.qp_num,
			      ibv_wc_status_str(wc.status), 40 + 123);
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
	first_is_unicast(other, "a QP outside the group");

	CHECK(ibv_detach_mcast(member, &mgid, 0) == 0, "detach");
	CHECK(ibv_detach_mcast(member, &mgid, 0) == EINVAL, "detach twice");
	recv(member, 72);
	send(81);
	first_is_unicast(member, "a detached QP");

	ibv_destroy_ah(uah);
	ibv_destroy_ah(ah);
	for (ibv_qp *q : { sender, member, other })
		CHECK(ibv_destroy_qp(q) == 0, "destroy UD QP");
}

void with_atomic_write(Pair &p)
{
	p.send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND;
}

// ibv_query_qp's PSN of a QP, @mask IBV_QP_SQ_PSN or IBV_QP_RQ_PSN.
uint32_t psn_of(ibv_qp *qp, int mask)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	CHECK(ibv_query_qp(qp, &a, mask, &ia) == 0, "query QP 0x%x",
	      qp->qp_num);
	return mask == IBV_QP_SQ_PSN ? a.sq_psn : a.rq_psn;
}

// Field @name ("sq-psn", "rq-psn") of QP @qpn in "rdma resource show qp",
// or -1.
long long res_qp_field(const Pair &p, uint32_t qpn, const char *name)
{
	std::string cmd = std::string("rdma resource show qp link ") +
			  ibv_get_device_name(p.ctx->device) + "/1 lqpn " +
			  std::to_string(qpn);
	std::string key = std::string(" ") + name + " ";
	char line[2048];
	long long v = -1;

	FILE *f = popen(cmd.c_str(), "r");
	CHECK(f, "%s: %s", cmd.c_str(), strerror(errno));
	while (f && fgets(line, sizeof(line), f))
		if (const char *at = strstr(line, key.c_str()))
			v = atoll(at + key.size());
	if (f)
		pclose(f);
	return v;
}

// The PSNs ibv_query_qp and "rdma resource show qp" report are the QP's
// as traffic moves them (the next to send, the next expected), not those
// the modify to RTR and RTS set: 5 SENDs of a packet and a WRITE of three
// (MTU 1024) move each by 8.
void t_query_psn(Pair &p)
{
	const uint32_t mask = 0xffffff;
	uint32_t sq0 = psn_of(p.a.qp, IBV_QP_SQ_PSN);
	uint32_t rq0 = psn_of(p.b.qp, IBV_QP_RQ_PSN);

	CHECK(sq0 == rq0, "a sends PSN %u next, b expects %u", sq0, rq0);
	for (int i = 0; i < 5; i++)
		CHECK(post_recv(p.b, i * 4096, 4096, 300 + i) == 0,
		      "post_recv");
	for (int i = 0; i < 5; i++)
		CHECK(post_send(p.a, IBV_WR_SEND, 0, 100, 310 + i) == 0,
		      "post send");
	for (int i = 0; i < 5; i++) {
		expect_wc(p.a, 310 + i, IBV_WC_SUCCESS, IBV_WC_SEND);
		expect_wc(p.b, 300 + i, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	}
	expect_eq_status(write_to(p, remote(p.b, 65536), p.b.mr->rkey, 3000,
				  320),
			 IBV_WC_SUCCESS, "a WRITE of 3 packets");
	uint32_t sq1 = psn_of(p.a.qp, IBV_QP_SQ_PSN);
	uint32_t rq1 = psn_of(p.b.qp, IBV_QP_RQ_PSN);
	CHECK(((sq1 - sq0) & mask) == 8, "a's sq_psn went from %u to %u: "
	      "%u PSNs, 8 sent", sq0, sq1, (sq1 - sq0) & mask);
	CHECK(((rq1 - rq0) & mask) == 8, "b's rq_psn went from %u to %u: "
	      "%u PSNs, 8 received", rq0, rq1, (rq1 - rq0) & mask);
	long long rs = res_qp_field(p, p.a.qp->qp_num, "sq-psn");
	long long rr = res_qp_field(p, p.b.qp->qp_num, "rq-psn");
	CHECK(rs == sq1 && rr == rq1, "rdma resource: a's sq-psn %lld, b's "
	      "rq-psn %lld; ibv_query_qp: %u, %u", rs, rr, sq1, rq1);
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
	{ "mcast", t_mcast, nullptr, false },
	{ "query_psn", t_query_psn, nullptr, false },
};

} // namespace

const std::span<const Test> ops_tests(tests);

} // namespace xfer
