// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests for what a code review of the kernel found: memory a
// message must stop using when its key goes away, pins that must not leak,
// receive WQEs that must not be lost, UC connections that one bad packet
// must not break, QP numbers a forger must not guess.
#include "xfer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

namespace xfer {
namespace {

// The process's pinned memory, in KiB.
long vm_pin_kb()
{
	return proc_kb("/proc/self/status", "VmPin:");
}

// RDMA WRITE with immediate into a QP with no receive posted: every RNR
// NAK (and the retry that follows it) must leave nothing behind. Once the
// receive is posted and the target MR deregistered, the process's pinned
// memory is what it was before. One packet (WRITE ONLY with immediate):
// each retry starts the message again.
void t_rnr_imm_pin(Pair &p)
{
	const size_t len = 1 << 20;
	const uint32_t wlen = 500;
	std::vector<uint8_t> target(len);
	long before = vm_pin_kb();
	ibv_mr *mr = ibv_reg_mr(p.b.pd, target.data(), len,
				IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE);

	CHECK(mr, "reg MR: %s", strerror(errno));
	if (!mr)
		return;
	CHECK(vm_pin_kb() >= before + long(len >> 10), "VmPin %ld kB after "
	      "registering 1 MiB, %ld kB before", vm_pin_kb(), before);
	fill(p.a, 0, wlen, 9);
	long long naks = port_counter(p, "rnr_nak_sent");
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 0, wlen, 1,
			uintptr_t(target.data() + 100), mr->rkey) == 0, "post");
	// Many RNR NAKs (min_rnr_timer 1: 10 us each) before the receive: at
	// least one before it is posted, or the test tested nothing.
	for (int i = 0; i < 3000 && port_counter(p, "rnr_nak_sent") <= naks;
	     i++)
		usleep(1000);
	usleep(100000);
	long long sent = port_counter(p, "rnr_nak_sent") - naks;
	CHECK(naks >= 0 && sent >= 1, "no RNR NAK was sent before the "
	      "receive was posted (rnr_nak_sent %lld, then %lld more)", naks,
	      sent);
	CHECK(post_recv(p.b, 0, 16, 2) == 0, "post_recv");
	expect_wc(p.b, 2, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, wlen);
	expect_wc(p.a, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK(!memcmp(target.data() + 100, &p.a.buf[0], wlen),
	      "written bytes differ");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg MR");
	CHECK(vm_pin_kb() == before, "VmPin %ld kB after dereg, %ld kB before "
	      "(a map leaked by an RNR retry keeps its pages pinned)",
	      vm_pin_kb(), before);
}

// A large RDMA WRITE from a to a separate MR of b, and @change done to
// that MR once the first bytes landed. Returns the completion status; sets
// @snap to the target as it was when @change returned and @target to what
// it is now (after the WRITE completed).
const size_t kBig = 128 << 20;

ibv_wc_status write_while(Pair &p, std::vector<uint8_t> &target,
			  std::vector<uint8_t> &snap,
			  int (*change)(ibv_mr *&mr, void *ctx), void *ctx)
{
	std::vector<uint8_t> src(kBig);
	ibv_mr *smr = ibv_reg_mr(p.a.pd, src.data(), kBig,
				 IBV_ACCESS_LOCAL_WRITE);
	ibv_mr *tmr = ibv_reg_mr(p.b.pd, target.data(), kBig,
				 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_WRITE);
	ibv_wc wc{};

	CHECK(smr && tmr, "reg MRs: %s", strerror(errno));
	if (!smr || !tmr)
		return IBV_WC_GENERAL_ERR;
	memset(src.data(), 0xa5, kBig);
	ibv_sge sge = { uintptr_t(src.data()), uint32_t(kBig), smr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_RDMA_WRITE, 7), *bad;
	wr.wr.rdma.remote_addr = uintptr_t(target.data());
	wr.wr.rdma.rkey = tmr->rkey;
	CHECK(ibv_post_send(p.a.qp, &wr, &bad) == 0, "post");
	// The message is under way: its first bytes are there.
	for (int i = 0; i < 20000 && !target[0]; i++)
		usleep(100);
	CHECK(target[0] == 0xa5, "the WRITE did not start");
	CHECK(target[kBig - 1] == 0, "the WRITE ended before the change: "
	      "the test proves nothing");
	CHECK(change(tmr, ctx) == 0, "changing the target MR: %s",
	      strerror(errno));
	snap = target;
	poll_one(p.a, wc);
	CHECK(wc.wr_id == 7, "wr_id %llu", (unsigned long long)wc.wr_id);
	if (tmr)
		ibv_dereg_mr(tmr);
	ibv_dereg_mr(smr);
	return wc.status;
}

int dereg(ibv_mr *&mr, void *)
{
	int ret = ibv_dereg_mr(mr);

	if (!ret)
		mr = nullptr;
	return ret;
}

// ibv_dereg_mr in the middle of a multi-packet WRITE: once it returns,
// not one more byte lands, and the requester sees a remote access error.
void t_dereg_mid_write(Pair &p)
{
	std::vector<uint8_t> target(kBig), snap;
	ibv_wc_status st = write_while(p, target, snap, dereg, nullptr);

	expect_eq_status(st, IBV_WC_REM_ACCESS_ERR, "WRITE across dereg");
	size_t landed = kBig - std::count(target.begin(), target.end(), 0);
	CHECK(target == snap, "bytes landed after ibv_dereg_mr returned "
	      "(%zu landed in all)", landed);
}

int rereg_trans(ibv_mr *&mr, void *ctx)
{
	auto *to = static_cast<std::vector<uint8_t> *>(ctx);

	return ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
			    to->data(), to->size(), 0);
}

// ibv_rereg_mr(CHANGE_TRANSLATION) in the middle of a multi-packet WRITE:
// the message is not split between the two buffers. It stops (a remote
// access error); once rereg returned nothing more lands in the old buffer,
// and nothing of it lands in the new one.
void t_rereg_mid_write(Pair &p)
{
	std::vector<uint8_t> target(kBig), snap, fresh(kBig);
	ibv_wc_status st = write_while(p, target, snap, rereg_trans, &fresh);

	expect_eq_status(st, IBV_WC_REM_ACCESS_ERR, "WRITE across rereg");
	CHECK(target == snap, "bytes landed in the old buffer after rereg");
	CHECK(std::count(fresh.begin(), fresh.end(), 0) == long(kBig),
	      "%zu bytes of the message landed in the new buffer",
	      kBig - std::count(fresh.begin(), fresh.end(), 0));
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	return a.qp_state;
}

// The PSN @qp's responder expects next (ibv_query_qp: live, not the one
// it was connected with).
uint32_t rq_psn(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	ibv_query_qp(qp, &a, IBV_QP_RQ_PSN, &ia);
	return a.rq_psn;
}

// a SENDs 3 pages of ODP memory whose middle page is gone: the requester
// fails (LOC_PROT_ERR) after the first page's packets, which @rx, a's
// peer, took into a receive WQE (its expected PSN moved past them: waited
// for, not slept on). @rx is still in RTS. False (and a failure) if not.
bool half_send(Pair &p, ibv_qp *rx)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *m = map_anon(3 * page);
	ibv_mr *odp = m ? ibv_reg_mr(p.a.pd, m, 3 * page,
				     IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_ON_DEMAND) : nullptr;
	CHECK(odp, "reg ODP MR: %s", strerror(errno));
	bool ok = false;
	if (odp) {
		memset(m, 1, 3 * page);
		munmap(m + page, page);
		ibv_sge sge = { uintptr_t(m), uint32_t(3 * page), odp->lkey };
		ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND, 9), *bad;
		CHECK(ibv_post_send(p.a.qp, &wr, &bad) == 0, "post send");
		expect_wc(p.a, 9, IBV_WC_LOC_PROT_ERR);
		uint32_t psn = (p.a.qp->qp_num * 7 + page / (128 << p.mtu)) &
			       0xffffff;
		for (long i = 0; i < 10000 * time_scale() && rq_psn(rx) != psn;
		     i++)
			usleep(1000);
		CHECK(rq_psn(rx) == psn, "receiver's expected PSN %#x, "
		      "expected %#x: the first page's packets not taken",
		      rq_psn(rx), psn);
		CHECK(qp_state(rx) == IBV_QPS_RTS, "receiver QP state %d",
		      qp_state(rx));
		ok = rq_psn(rx) == psn && qp_state(rx) == IBV_QPS_RTS;
		ibv_dereg_mr(odp);
	}
	if (m) {
		munmap(m, page);
		munmap(m + 2 * page, page);
	}
	return ok;
}

// A SEND that stops half way (its source page is gone: the requester fails
// with a local protection error) leaves the receiver holding the SRQ WQE it
// took for the first packets. When the receiver's QP goes to error, that
// WQE completes with WR_FLUSH_ERR; it is not lost.
void t_srq_flush_taken(Pair &p)
{
	ibv_srq_init_attr sa{};
	sa.attr = { 8, 1, 0 };
	ibv_srq *srq = ibv_create_srq(p.b.pd, &sa);
	CHECK(srq, "create SRQ: %s", strerror(errno));
	if (!srq)
		return;

	// b's QP, on the SRQ, connected to a instead of b's first QP.
	Side b2;
	b2.pd = p.b.pd;
	b2.cq = p.b.cq;
	b2.mr = p.b.mr;
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = p.b.cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap = { 4, 0, 1, 0, 0 };
	b2.qp = ibv_create_qp(p.b.pd, &ia);
	CHECK(b2.qp, "create QP on the SRQ: %s", strerror(errno));
	ibv_qp_attr reset{};
	reset.qp_state = IBV_QPS_RESET;
	bool ok = b2.qp && ibv_modify_qp(p.a.qp, &reset, IBV_QP_STATE) == 0 &&
		  connect(p, p.a, b2) && connect(p, b2, p.a);
	for (int i = 0; ok && i < 4; i++) {
		ibv_sge sge = { uintptr_t(&p.b.buf[i * 16384]), 16384,
				p.b.mr->lkey };
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = 100 + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ok = ibv_post_srq_recv(srq, &wr, &bad) == 0;
	}
	if (ok && half_send(p, b2.qp)) {
		ibv_qp_attr err{};
		err.qp_state = IBV_QPS_ERR;
		CHECK(ibv_modify_qp(b2.qp, &err, IBV_QP_STATE) == 0,
		      "receiver to ERR");
		ibv_wc wc{};
		if (poll_one(b2, wc))
			CHECK(wc.wr_id == 100 && wc.status == IBV_WC_WR_FLUSH_ERR,
			      "completion wr_id %llu status %s, expected the "
			      "taken SRQ WQE 100 flushed",
			      (unsigned long long)wc.wr_id,
			      ibv_wc_status_str(wc.status));
		CHECK(ibv_poll_cq(p.b.cq, 1, &wc) == 0,
		      "more completions: the SRQ's other WQEs stay posted");
	}
	if (b2.qp)
		CHECK(ibv_destroy_qp(b2.qp) == 0, "destroy QP");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy SRQ");
}

// The same with the receiver's own receive queue: when the QP goes to
// error, the WQE it took for the half-received SEND is flushed first, then
// the ones it did not take, in order; nothing is lost.
void t_rq_flush_taken(Pair &p)
{
	for (uint64_t id = 100; id < 104; id++)
		CHECK(post_recv(p.b, (id - 100) * 16384, 16384, id) == 0,
		      "post_recv");
	if (!half_send(p, p.b.qp))
		return;
	ibv_qp_attr err{};
	err.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(p.b.qp, &err, IBV_QP_STATE) == 0, "receiver to ERR");
	for (uint64_t id = 100; id < 104; id++) {
		ibv_wc wc{};
		if (poll_one(p.b, wc))
			CHECK(wc.wr_id == id && wc.status == IBV_WC_WR_FLUSH_ERR,
			      "completion wr_id %llu status %s, expected %llu "
			      "flushed", (unsigned long long)wc.wr_id,
			      ibv_wc_status_str(wc.status),
			      (unsigned long long)id);
	}
	ibv_wc wc{};
	CHECK(ibv_poll_cq(p.b.cq, 1, &wc) == 0, "a completion more: wr_id %llu",
	      (unsigned long long)wc.wr_id);
}

// UC: an RDMA WRITE with a bad rkey is dropped by the receiver (UC has no
// NAK); the receiver's QP stays connected, and the next good WRITE with
// immediate lands and completes. On RC the same WRITE is a remote access
// error.
void t_uc_bad_rkey(Pair &p)
{
	Untouched u = arm_untouched(p);
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 3000, 1, remote(p.b, 0),
			p.b.mr->rkey ^ 0x55) == 0, "post");
	if (p.type == IBV_QPT_RC) {
		expect_wc(p.a, 1, IBV_WC_REM_ACCESS_ERR);
		expect_untouched(p, u, "an RC WRITE with a bad rkey");
		return;
	}
	expect_wc(p.a, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	// The next WRITE, on the same QP, lands after the bad one would have:
	// once it completed there, the bad one's bytes would be there too.
	CHECK(post_recv(p.b, 8192, 16, 2) == 0, "post_recv");
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 3000, 3,
			remote(p.b, 16384), p.b.mr->rkey) == 0, "post");
	expect_wc(p.a, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	expect_wc(p.b, 2, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 3000);
	CHECK(same(p.a, 0, p.b, 16384, 3000), "written bytes differ");
	CHECK(qp_state(p.b.qp) == IBV_QPS_RTS, "receiver QP state %d after a "
	      "bad rkey", qp_state(p.b.qp));
	// Nothing else changed: the receive buffer (unused by a WRITE with
	// immediate) and the good WRITE's target are left out.
	expect_untouched(p, u, "a UC WRITE with a bad rkey", 8192,
			 16384 + 3000 - 8192);
}

// QP numbers are not handed out in sequence: of 32 QPs made one after the
// other, hardly any follows its predecessor.
void t_qpn_random(Pair &p)
{
	std::vector<ibv_qp *> qps;
	int in_sequence = 0;

	for (int i = 0; i < 32; i++) {
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = p.a.cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap = { 1, 1, 1, 1, 0 };
		ibv_qp *qp = ibv_create_qp(p.a.pd, &ia);
		CHECK(qp, "create QP %d: %s", i, strerror(errno));
		if (!qp)
			break;
		if (!qps.empty() && qp->qp_num == qps.back()->qp_num + 1)
			in_sequence++;
		qps.push_back(qp);
	}
	CHECK(in_sequence < 2, "%d of %zu QP numbers follow the previous one",
	      in_sequence, qps.size());
	for (ibv_qp *qp : qps)
		CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
}

// Binds that fail their checks must not count on the MR they name, not
// even for a moment: another PD's QP keeps binding its window to b's MR,
// named by its lkey as another process would (libibverbs refuses an ibv_mr
// of another PD itself; the kernel sees only the key), while b
// re-registers that MR. The kernel refuses each bind (IBV_WC_MW_BIND_ERR;
// the QP goes to error and is reconnected for the next), and not one of
// b's calls may fail with EBUSY.
void t_bind_other_pd(Pair &p)
{
	const int base = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	std::vector<uint8_t> buf(65536);
	ibv_mr *mr = ibv_reg_mr(p.b.pd, buf.data(), buf.size(),
				base | IBV_ACCESS_REMOTE_WRITE);
	ibv_mw *mw = ibv_alloc_mw(p.a.pd, IBV_MW_TYPE_1);
	CHECK(mr && mw, "reg MR, alloc MW: %s", strerror(errno));
	if (!mr || !mw)
		return;

	ibv_mr forged = *mr;
	forged.pd = p.a.pd;
	std::atomic<bool> stop{false};
	std::atomic<long> refused{0}, other{0};
	std::thread binder([&] {
		while (!stop) {
			ibv_mw_bind b{};
			b.wr_id = 1;
			b.send_flags = IBV_SEND_SIGNALED;
			b.bind_info = { &forged, uintptr_t(buf.data()), 4096,
					IBV_ACCESS_REMOTE_WRITE };
			ibv_wc wc{};
			int n = 0;
			if (ibv_bind_mw(p.a.qp, mw, &b) == 0)
				for (int i = 0; i < 100000 && !n; i++)
					n = ibv_poll_cq(p.a.cq, 1, &wc);
			if (n == 1 && wc.status == IBV_WC_MW_BIND_ERR)
				refused++;
			else
				other++;
			ibv_qp_attr reset{};
			reset.qp_state = IBV_QPS_RESET;
			if (ibv_modify_qp(p.a.qp, &reset, IBV_QP_STATE) ||
			    !connect(p, p.a, p.b) || other > 10)
				break;
		}
	});
	long ebusy = 0, failed = 0, done = 0;
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::seconds(3 * time_scale());
	while (std::chrono::steady_clock::now() < end && refused < 1000) {
		int access = base | (done & 1 ? IBV_ACCESS_REMOTE_READ
					       : IBV_ACCESS_REMOTE_WRITE);
		if (ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr,
				 nullptr, 0, access) == 0)
			done++;
		else if (errno == EBUSY)
			ebusy++;
		else
			failed++;
	}
	stop = true;
	binder.join();
	CHECK(refused >= 50, "only %ld binds refused in %ld s (%ld "
	      "otherwise): the test proves nothing", long(refused),
	      3 * time_scale(), long(other));
	CHECK(!other, "%ld binds of another PD's MR not refused with "
	      "MW_BIND_ERR", long(other));
	CHECK(!ebusy && !failed, "%ld of the owner's rereg calls failed with "
	      "EBUSY while another PD's binds were refused (%ld otherwise, "
	      "%ld done)", ebusy, failed, done);
	printf("    %ld binds refused, %ld rereg done\n", long(refused), done);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg MR: %s", strerror(errno));
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
}

// UD QPs destroyed while SENDs arrive at them. 200 rounds: b makes a UD QP
// on a CQ of its own, posts 8 receives and publishes its number; a thread
// of a keeps SENDing, 8 at a time, to the last number published; b waits
// until SENDs reached the QP, then destroys it (then its CQ) while more come
// in. The packets of a's SENDs are received on a's thread, so a packet is
// being queued to the QP while b destroys it: the receiving side must hold
// the QP from queueing a packet until its work is scheduled (on the debug
// kernel, KASAN reports the use after free otherwise). Every SEND completes
// successfully (UD does not know who received), every QP and CQ goes away
// without error, and receives did complete in most rounds.
void t_destroy_under_rx(Pair &p)
{
	ibv_qp *tx = ud_qp(p.a);
	ibv_ah_attr aa{};
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	ibv_query_gid(p.ctx, 1, 1, &aa.grh.dgid);
	ibv_ah *ah = ibv_create_ah(p.a.pd, &aa);
	CHECK(tx && ah, "UD QP and AH: %s", strerror(errno));
	if (!tx || !ah)
		return;
	std::atomic<uint32_t> target{0};
	std::atomic<long> sent{0}, bad{0};
	std::atomic<bool> stop{false};
	std::thread sender([&] {
		while (!stop && !bad) {
			uint32_t qpn = target;
			if (!qpn) {
				std::this_thread::yield();
				continue;
			}
			ibv_sge sge = { remote(p.a, 0), 256, p.a.mr->lkey };
			ibv_send_wr wr[8], *badwr;
			for (int i = 0; i < 8; i++) {
				wr[i] = one_sge_wr(&sge, IBV_WR_SEND, i);
				wr[i].wr.ud.ah = ah;
				wr[i].wr.ud.remote_qpn = qpn;
				wr[i].wr.ud.remote_qkey = 0x1234;
				wr[i].next = i < 7 ? &wr[i + 1] : nullptr;
			}
			if (ibv_post_send(tx, wr, &badwr)) {
				bad++;
				break;
			}
			for (int i = 0; i < 8; i++) {
				ibv_wc wc{};
				if (!poll_one(p.a, wc) || wc.wr_id != uint64_t(i) ||
				    wc.status != IBV_WC_SUCCESS) {
					bad++;
					break;
				}
			}
			sent += 8;
		}
	});
	int rounds_received = 0;
	for (int r = 0; r < 200 && !failures && !bad; r++) {
		ibv_cq *cq = ibv_create_cq(p.ctx, 32, nullptr, nullptr, 0);
		ibv_qp *rx = cq ? ud_qp(p.b, cq) : nullptr;
		CHECK(rx, "round %d: UD QP: %s", r, strerror(errno));
		if (!rx) {
			if (cq)
				ibv_destroy_cq(cq);
			break;
		}
		for (int i = 0; i < 8; i++) {
			ibv_sge sge = { remote(p.b, i * 512), 512, p.b.mr->lkey };
			ibv_recv_wr wr{}, *badwr;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			CHECK(ibv_post_recv(rx, &wr, &badwr) == 0, "post_recv");
		}
		target = rx->qp_num;
		long base = sent;
		for (int i = 0; i < 2000 && sent < base + 16 && !bad; i++)
			usleep(50);
		usleep(r % 5 * 20);
		CHECK(ibv_destroy_qp(rx) == 0, "round %d: destroy the QP "
		      "under traffic: %s", r, strerror(errno));
		ibv_wc wc[32];
		rounds_received += ibv_poll_cq(cq, 32, wc) > 0;
		CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	}
	stop = true;
	sender.join();
	CHECK(!bad, "a SEND did not complete successfully");
	CHECK(rounds_received >= 100, "receives completed in %d of 200 "
	      "rounds: SENDs did not reach the QPs, the test proves nothing",
	      rounds_received);
	CHECK(ibv_destroy_qp(tx) == 0 && ibv_destroy_ah(ah) == 0,
	      "destroy the sender");
}

// A second QP of b's PD for binds of type 1 windows (ibv_bind_mw()), so
// that they run while b's first QP takes a's requests.
struct Binder {
	Side s;

	bool open(Pair &p, ibv_qp_type type)
	{
		s.pd = p.b.pd;
		s.mr = p.b.mr;
		s.cq = ibv_create_cq(p.ctx, 16, nullptr, nullptr, 0);
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = s.cq;
		ia.qp_type = type;
		ia.cap = { 4, 1, 1, 1, 0 };
		s.qp = s.cq ? ibv_create_qp(s.pd, &ia) : nullptr;
		CHECK(s.qp, "binding QP: %s", strerror(errno));
		return s.qp && connect(p, s, p.a);
	}

	// Binds @mw to [@addr, @addr + @len) of @mr; true once it completed.
	bool bind(ibv_mw *mw, ibv_mr *mr, uint64_t addr, size_t len,
		  unsigned access, uint64_t id)
	{
		ibv_mw_bind b{};
		b.wr_id = id;
		b.send_flags = IBV_SEND_SIGNALED;
		b.bind_info = { mr, addr, len, access };
		ibv_wc wc{};
		return ibv_bind_mw(s.qp, mw, &b) == 0 && poll_one(s, wc) &&
		       wc.status == IBV_WC_SUCCESS;
	}

	// Moves @mw 500 times there (@there, its new key then published in
	// @key for a's requests) and back (@back), with a jitter between, so
	// that requests with the key arrive while it is current and some just
	// before the window moves; stops early on @bad. Return: the binds
	// done, 1000 if all were.
	template <class There, class Back>
	int shuttle(ibv_mw *mw, std::atomic<uint32_t> &key,
		    const std::atomic<long> &bad, There there, Back back)
	{
		int binds = 0;
		for (; binds < 1000 && !bad; binds += 2) {
			if (!there(binds))
				break;
			key = mw->rkey;
			usleep(binds % 7 * 50);
			if (!back(binds + 1))
				break;
		}
		return binds;
	}

	void close()
	{
		CHECK(ibv_destroy_qp(s.qp) == 0 && ibv_destroy_cq(s.cq) == 0,
		      "destroy the binding QP");
	}
};

// A type 1 window moved by binds between two ranges of b's MR, X and Y,
// gets a new key each time, and a key is only ever good for the range it
// was bound with. a keeps WRITEing at Y with the last key b bound over X
// while b moves the window back and forth (through a second QP, so that
// the binds run while b's first QP takes the WRITEs): a key checked must
// be the key of the map used, so not one byte lands in Y. UC: the refused
// WRITEs are dropped and the connection stays up.
void t_stale_window_key(Pair &p)
{
	if (p.type != IBV_QPT_UC) {
		CHECK(false, "a UC test: on RC each refused WRITE breaks the "
		      "connection");
		return;
	}
	const size_t x = 0, y = 32768, span = 4096;
	std::vector<uint8_t> buf(65536);
	ibv_mr *mr = ibv_reg_mr(p.b.pd, buf.data(), buf.size(),
				IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_MW_BIND);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(mr && mw, "reg MR, alloc MW: %s", strerror(errno));
	Binder binder;
	if (!mr || !mw || !binder.open(p, IBV_QPT_UC))
		return;
	auto bind = [&](size_t at, uint64_t id) {
		return binder.bind(mw, mr, uintptr_t(&buf[at]), span,
				   IBV_ACCESS_REMOTE_WRITE, id);
	};

	std::atomic<uint32_t> xkey{0};
	std::atomic<bool> stop{false};
	std::atomic<long> writes{0}, bad{0};
	fill(p.a, 0, 64, 0x77);
	std::thread writer([&] {
		for (uint64_t i = 0; !stop; i++) {
			uint32_t key = xkey;
			ibv_wc wc{};
			if (post_send(p.a, IBV_WR_RDMA_WRITE, 0, 64, i,
				      uintptr_t(&buf[y + (i % 64) * 64]),
				      key) ||
			    !poll_one(p.a, wc) || wc.status != IBV_WC_SUCCESS) {
				bad++;
				break;
			}
			writes++;
		}
	});
	int binds = binder.shuttle(mw, xkey, bad,
				   [&](int id) { return bind(x, id); },
				   [&](int id) { return bind(y, id); });
	stop = true;
	writer.join();
	CHECK(binds == 1000, "bind %d failed", binds);
	CHECK(!bad, "a UC WRITE did not complete");
	CHECK(writes > 100, "only %ld WRITEs during 1000 binds: the test "
	      "proves nothing", long(writes));
	size_t landed = std::count_if(buf.begin() + y, buf.begin() + y + span,
				      [](uint8_t c) { return c != 0; });
	CHECK(!landed, "%zu bytes landed in Y through keys bound over X only",
	      landed);
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg MR");
	binder.close();
}

// Item 11 where a stale key gets one lookup: an RC atomic. Two MRs of the
// same iova over different buffers (P and Q); a type 1 window rebound 500
// times from P's MR to the same range of Q's, while fetch-and-adds of 1 come
// with the key of P's binds. An atomic lands in P while its key is current
// and is refused once the window moved (the connection is then made again,
// and the next atomic waits for P's next key); the word in P counts the
// atomics that completed, and not one byte reaches Q.
void t_stale_window_atomic(Pair &p)
{
	const uint64_t iova = 0x7a0000000000ULL;
	const size_t len = 4096;
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			   IBV_ACCESS_MW_BIND;
	// Page aligned, as the iova is: an MR's iova keeps its address's
	// offset in the page.
	uint8_t *pbuf = map_anon(len), *qbuf = map_anon(len);
	if (!pbuf || !qbuf)
		return;
	memset(pbuf, 0, len);
	memset(qbuf, 0, len);
	ibv_mr *pmr = ibv_reg_mr_iova(p.b.pd, pbuf, len, iova, access);
	ibv_mr *qmr = ibv_reg_mr_iova(p.b.pd, qbuf, len, iova, access);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	CHECK(pmr && qmr && mw, "reg MRs, alloc MW: %s", strerror(errno));
	Binder binder;
	if (!pmr || !qmr || !mw || !binder.open(p, IBV_QPT_RC))
		return;
	auto bind = [&](ibv_mr *mr, uint64_t id) {
		return binder.bind(mw, mr, iova, len, IBV_ACCESS_REMOTE_ATOMIC,
				   id);
	};

	std::atomic<uint32_t> xkey{0};
	std::atomic<bool> stop{false};
	std::atomic<long> landed{0}, refused{0}, bad{0};
	std::thread atomics([&] {
		uint32_t stale = 0;
		for (uint64_t i = 0; !stop; i++) {
			uint32_t key = xkey;
			if (!key || key == stale) {
				std::this_thread::yield();
				continue;
			}
			ibv_sge sge = { uintptr_t(&p.a.buf[0]), 8, p.a.mr->lkey };
			ibv_send_wr wr = one_sge_wr(&sge,
						    IBV_WR_ATOMIC_FETCH_AND_ADD,
						    i, IBV_SEND_SIGNALED), *badwr;
			wr.wr.atomic.remote_addr = iova;
			wr.wr.atomic.rkey = key;
			wr.wr.atomic.compare_add = 1;
			ibv_wc wc{};
			if (ibv_post_send(p.a.qp, &wr, &badwr) ||
			    !poll_one(p.a, wc)) {
				bad++;
				break;
			}
			if (wc.status == IBV_WC_SUCCESS) {
				landed++;
				continue;
			}
			if (wc.status != IBV_WC_REM_ACCESS_ERR) {
				bad++;
				break;
			}
			// Refused: both QPs are in error; connect them again.
			refused++;
			stale = key;
			ibv_qp_attr reset{};
			reset.qp_state = IBV_QPS_RESET;
			if (ibv_modify_qp(p.a.qp, &reset, IBV_QP_STATE) ||
			    ibv_modify_qp(p.b.qp, &reset, IBV_QP_STATE) ||
			    !connect(p, p.a, p.b) || !connect(p, p.b, p.a)) {
				bad++;
				break;
			}
		}
	});
	int binds = binder.shuttle(mw, xkey, bad,
				   [&](int id) { return bind(pmr, id); },
				   [&](int id) { return bind(qmr, id); });
	stop = true;
	atomics.join();
	CHECK(binds == 1000, "bind %d failed", binds);
	CHECK(!bad, "an atomic failed other than with a remote access error");
	// At least one atomic per ten moves of the window (more than one per
	// move on the normal kernel, one in eight on the debug kernel).
	CHECK(landed + refused >= 50, "only %ld atomics (%ld refused) during "
	      "500 binds: the test proves nothing", long(landed + refused),
	      long(refused));
	uint64_t count;
	memcpy(&count, pbuf, 8);
	CHECK(count == uint64_t(landed), "P's word is %llu after %ld atomics "
	      "completed (%ld refused)", (unsigned long long)count,
	      long(landed), long(refused));
	uint64_t qword;
	memcpy(&qword, qbuf, 8);
	size_t hit = std::count_if(qbuf, qbuf + len,
				   [](uint8_t c) { return c != 0; });
	CHECK(!hit, "%zu bytes of Q changed (its word is %llu) by atomics "
	      "with keys of P's binds", hit, (unsigned long long)qword);
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	CHECK(ibv_dereg_mr(pmr) == 0 && ibv_dereg_mr(qmr) == 0, "dereg MRs");
	munmap(pbuf, len);
	munmap(qbuf, len);
	binder.close();
}

// An implicit ODP MR swept with prefetches across the address space: 4096
// chunks where nothing is mapped (and addresses past user space), then 8
// GiB of PROT_NONE reservation, 512 chunks. The kernel makes no child umem
// where nothing is mapped and keeps at most 256, so its memory does not
// grow with the sweep (16 MiB of page lists at most; 320 MiB without the
// bound).
void t_implicit_bound(Pair &p)
{
	const size_t chunk = 16 << 20;
	ibv_mr *mr = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	CHECK(mr, "reg implicit ODP MR: %s", strerror(errno));
	if (!mr)
		return;
	// Where nothing is mapped: a reservation given back.
	size_t hole = 4096 * chunk;
	void *h = mmap(nullptr, hole + chunk, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(h != MAP_FAILED, "mmap: %s", strerror(errno));
	if (h == MAP_FAILED)
		return;
	munmap(h, hole + chunk);
	uintptr_t base = (uintptr_t(h) + chunk - 1) & ~(chunk - 1);
	long before = mem_available_kb();
	int efault = 0;
	for (size_t i = 0; i < 4096; i++) {
		ibv_sge sge = { base + i * chunk, 4096, mr->lkey };
		efault += ibv_advise_mr(p.b.pd,
					IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == EFAULT;
	}
	CHECK(efault == 4096, "%d of 4096 prefetches of unmapped memory "
	      "failed with EFAULT", efault);
	ibv_sge top = { uintptr_t(1) << 47, 4096, mr->lkey };
	CHECK(ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
			    IBV_ADVISE_MR_FLAG_FLUSH, &top, 1) == EFAULT,
	      "prefetch past user space: not EFAULT");
	// A reservation that is mapped, but never accessible.
	size_t resv = 512 * chunk;
	void *r = mmap(nullptr, resv, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(r != MAP_FAILED, "mmap: %s", strerror(errno));
	for (size_t i = 0; r != MAP_FAILED && i < 512; i++) {
		ibv_sge sge = { uintptr_t(r) + i * chunk, 4096, mr->lkey };
		ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
			      IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	}
	long grew = before - mem_available_kb();
	CHECK(grew < 48 << 10, "MemAvailable fell by %ld KiB during the sweep",
	      grew);
	// The MR still works where there is memory.
	std::vector<uint8_t> mine(8192, 0x3c);
	ibv_sge sge = { uintptr_t(mine.data()), 8192, mr->lkey };
	CHECK(ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0,
	      "prefetch of mapped memory");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	if (r != MAP_FAILED)
		munmap(r, resv);
}

// An explicit ODP MR over 1 TiB of address space (the largest MR) costs
// the kernel nothing up front (ib_core's page lists for the whole range
// would be 4 GiB); WRITEs that cross chunk boundaries all over the range,
// into twice as many chunks as an MR keeps page lists for, land; READs of
// the first ones, whose lists were freed meanwhile, fault them in again.
void t_explicit_bound(Pair &p)
{
	const size_t chunk = 16 << 20, span = size_t(1) << 40, page = 4096;
	const int n = 300;
	void *m = mmap(nullptr, span, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(m != MAP_FAILED, "mmap 1 TiB: %s", strerror(errno));
	if (m == MAP_FAILED)
		return;
	uint8_t *r = static_cast<uint8_t *>(m);
	long before = mem_available_kb();
	ibv_mr *mr = ibv_reg_mr(p.b.pd, r, span,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_ON_DEMAND);
	CHECK(mr, "reg a 1 TiB ODP MR: %s", strerror(errno));
	if (!mr) {
		munmap(m, span);
		return;
	}
	long grew = before - mem_available_kb();
	CHECK(grew < 16 << 10, "MemAvailable fell by %ld KiB at registration",
	      grew);
	// The last 128 bytes of the page before a chunk boundary and the
	// first 128 of the page after it: two chunks per WRITE.
	auto spot = [&](int i) {
		size_t at = (size_t(i) * (span / (n + 1))) & ~(chunk - 1);
		return r + at - 128;
	};
	int bad = 0;
	for (int i = 1; i <= n && !bad; i++) {
		uint8_t *s = spot(i);
		CHECK(mprotect(s + 128 - page, 2 * page,
			       PROT_READ | PROT_WRITE) == 0,
		      "mprotect: %s", strerror(errno));
		fill(p.a, 0, 256, uint8_t(i));
		CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, 256, i,
				uintptr_t(s), mr->rkey) == 0, "post WRITE");
		expect_wc(p.a, i, IBV_WC_SUCCESS);
		if (memcmp(s, &p.a.buf[0], 256)) {
			CHECK(false, "WRITE %d of 256 bytes across the chunk "
			      "boundary at %p did not land", i,
			      static_cast<void *>(s + 128));
			bad++;
		}
	}
	grew = before - mem_available_kb();
	CHECK(grew < 48 << 10, "MemAvailable fell by %ld KiB after WRITEs "
	      "into %d chunks", grew, 2 * n);
	for (int i = 1; i <= 10 && !bad; i++) {
		size_t off = 4096 + i * 256;
		memset(&p.a.buf[off], 0, 256);
		CHECK(post_send(p.a, IBV_WR_RDMA_READ, off, 256, 1000 + i,
				uintptr_t(spot(i)), mr->rkey) == 0, "post READ");
		expect_wc(p.a, 1000 + i, IBV_WC_SUCCESS);
		CHECK(!memcmp(&p.a.buf[off], spot(i), 256),
		      "READ %d across a chunk boundary: wrong bytes", i);
	}
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	munmap(m, span);
}

const Test tests[] = {
	{ "rnr_imm_pin", t_rnr_imm_pin, nullptr, false },
	{ "dereg_mid_write", t_dereg_mid_write, nullptr, false },
	{ "rereg_mid_write", t_rereg_mid_write, nullptr, false },
	{ "srq_flush_taken", t_srq_flush_taken, nullptr, false },
	{ "rq_flush_taken", t_rq_flush_taken, nullptr, false },
	{ "uc_bad_rkey", t_uc_bad_rkey, nullptr, true },
	{ "qpn_random", t_qpn_random, nullptr, false },
	{ "bind_other_pd", t_bind_other_pd, nullptr, false },
	{ "destroy_under_rx", t_destroy_under_rx, nullptr, false },
	{ "stale_window_key", t_stale_window_key, nullptr, true },
	{ "stale_window_atomic", t_stale_window_atomic, nullptr, false },
	{ "implicit_bound", t_implicit_bound, nullptr, false },
	{ "explicit_bound", t_explicit_bound, nullptr, false },
};

} // namespace

const std::span<const Test> harden_tests(tests);

} // namespace xfer
