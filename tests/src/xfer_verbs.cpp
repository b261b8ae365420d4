// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of verbs and events the data tests do not reach: an
// SRQ's limit and its event (ibv_modify_srq(3)), invalidations with a key
// they may not invalidate, a CQ that overflows, and address handles the
// device refuses.
#include "xfer.h"

namespace xfer {
namespace {

const uint32_t kQkey = 0x1234;
const size_t kGrh = 40;	// what a UD receive gets before the payload

// An address from port 1 to this device's own GID (index 1).
ibv_ah_attr self_ah_attr(Pair &p)
{
	ibv_ah_attr aa{};
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	CHECK(ibv_query_gid(p.ctx, 1, 1, &aa.grh.dgid) == 0, "query GID");
	return aa;
}

// A UD sender on a, and an AH from a's PD to this device's own GID.
struct UdSender {
	ibv_qp *qp = nullptr;
	ibv_ah *ah = nullptr;

	explicit UdSender(Pair &p)
	{
		qp = ud_qp(p.a);
		ibv_ah_attr aa = self_ah_attr(p);
		ah = ibv_create_ah(p.a.pd, &aa);
		CHECK(qp && ah, "UD sender: %s", strerror(errno));
	}
	~UdSender()
	{
		if (ah)
			CHECK(ibv_destroy_ah(ah) == 0, "destroy AH");
		if (qp)
			CHECK(ibv_destroy_qp(qp) == 0, "destroy UD QP");
	}
	UdSender(const UdSender &) = delete;
	UdSender &operator=(const UdSender &) = delete;
	explicit operator bool() const { return qp && ah; }
};

// The message numbered @n: @len bytes of a's buffer at @n * 512, filled
// with a pattern of its own, sent to UD QP @qpn; a's completion waited
// for.
void ud_send(Pair &p, const UdSender &tx, uint32_t qpn, uint32_t n,
	     uint32_t len)
{
	fill(p.a, n * 512, len, uint8_t(n * 37 + 1));
	ibv_sge sge = { remote(p.a, n * 512), len, p.a.mr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND, 9000 + n), *bad;
	wr.wr.ud.ah = tx.ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = kQkey;
	CHECK(ibv_post_send(tx.qp, &wr, &bad) == 0, "post UD send %u", n);
	ibv_wc wc{};
	if (poll_one(p.a, wc))
		CHECK(wc.wr_id == 9000 + n && wc.status == IBV_WC_SUCCESS,
		      "UD send %u: wr_id %llu status %s", n,
		      (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
}

// A receive of message @n (ud_send()) completed on b's CQ @cq (b's if
// none) as WR @id, into b's buffer at @id * 512, its bytes those sent.
void expect_ud_recv(Pair &p, uint32_t n, uint32_t len, uint64_t id,
		    ibv_cq *cq = nullptr)
{
	ibv_wc wc{};
	long limit = 10000 * time_scale();
	int got = 0;

	for (long i = 0; i < limit && !(got = ibv_poll_cq(cq ?: p.b.cq, 1, &wc));
	     i++)
		usleep(1000);
	CHECK(got == 1, "no receive of message %u", n);
	if (got != 1)
		return;
	CHECK(wc.wr_id == id && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RECV && wc.byte_len == kGrh + len,
	      "receive of message %u: wr_id %llu (expected %llu) status %s "
	      "byte_len %u", n, (unsigned long long)wc.wr_id,
	      (unsigned long long)id, ibv_wc_status_str(wc.status),
	      wc.byte_len);
	CHECK(same(p.a, n * 512, p.b, id * 512 + kGrh, len),
	      "message %u's bytes differ in receive %llu", n,
	      (unsigned long long)id);
}

// Receive WR @id on b: b's buffer at @id * 512, 512 bytes.
ibv_recv_wr recv_wr(Pair &p, uint64_t id, ibv_sge &sge)
{
	sge = { remote(p.b, id * 512), 512, p.b.mr->lkey };
	ibv_recv_wr wr{};
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return wr;
}

int srq_limit_of(ibv_srq *srq)
{
	ibv_srq_attr a{};
	CHECK(ibv_query_srq(srq, &a) == 0, "query_srq: %s", strerror(errno));
	return int(a.srq_limit);
}

// No async event is waiting: checked after a completion that any event
// of the same receive precedes (the event is raised as the WQE is taken).
void expect_no_event(Pair &p, const char *when)
{
	ibv_async_event ev{};
	if (!async_event_pending(p.ctx))
		return;
	CHECK(false, "an async event %s", when);
	next_async_event(p.ctx, 0, &ev);
	fprintf(stderr, "  it was %s\n", ibv_event_type_str(ev.event_type));
}

void expect_event(Pair &p, ibv_event_type type, const void *element,
		  const char *when)
{
	ibv_async_event ev{};
	if (!next_async_event(p.ctx, 5000 * time_scale(), &ev)) {
		CHECK(false, "no %s %s", ibv_event_type_str(type), when);
		return;
	}
	const void *got = type == IBV_EVENT_SRQ_LIMIT_REACHED ?
				  (const void *)ev.element.srq :
				  (const void *)ev.element.cq;
	CHECK(ev.event_type == type && got == element,
	      "%s: event %s for %p, expected %s for %p", when,
	      ibv_event_type_str(ev.event_type), got, ibv_event_type_str(type),
	      element);
}

// ibv_modify_srq(3): a limit arms the SRQ; the receive that leaves fewer
// WQEs than the limit raises IBV_EVENT_SRQ_LIMIT_REACHED once and disarms
// it (the limit reads 0). A limit past the SRQ's size and a resize
// (IBV_SRQ_MAX_WR) are refused with EINVAL and change nothing.
void t_srq_limit(Pair &p)
{
	ibv_srq_init_attr sia{};
	sia.attr.max_wr = 12;
	sia.attr.max_sge = 1;
	ibv_srq *srq = ibv_create_srq(p.b.pd, &sia);
	CHECK(srq, "create SRQ: %s", strerror(errno));
	if (!srq)
		return;
	const uint32_t size = sia.attr.max_wr;
	CHECK(size >= 12 && size <= 64, "SRQ of %u WQEs for 12", size);

	ibv_srq_attr sa{};
	sa.max_wr = size * 2;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR) == EINVAL,
	      "SRQ resize accepted");
	sa.srq_limit = size + 1;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == EINVAL,
	      "a limit past the SRQ's %u WQEs accepted", size);
	ibv_srq_attr q{};
	CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr == size &&
		      q.srq_limit == 0,
	      "after the refusals: max_wr %u limit %u", q.max_wr, q.srq_limit);

	UdSender tx(p);
	ibv_qp *rx = ud_qp(p.b, nullptr, srq);
	CHECK(rx, "UD QP with an SRQ: %s", strerror(errno));
	if (!tx || !rx) {
		if (rx)
			ibv_destroy_qp(rx);
		ibv_destroy_srq(srq);
		return;
	}
	for (uint32_t i = 0; i < size; i++) {
		ibv_sge sge;
		ibv_recv_wr wr = recv_wr(p, i, sge), *bad;
		CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0, "post_srq_recv");
	}
	const uint32_t limit = 4;
	sa.srq_limit = limit;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "arm: %s",
	      strerror(errno));
	CHECK(srq_limit_of(srq) == int(limit), "limit %d after arming",
	      srq_limit_of(srq));

	// Down to exactly @limit WQEs: no event.
	uint32_t n = 0;
	for (; n < size - limit; n++) {
		ud_send(p, tx, rx->qp_num, n, 100 + n);
		expect_ud_recv(p, n, 100 + n, n);
	}
	expect_no_event(p, "with as many WQEs left as the limit");
	CHECK(srq_limit_of(srq) == int(limit), "limit %d, still armed",
	      srq_limit_of(srq));
	// One fewer: the event, once; the SRQ disarmed.
	ud_send(p, tx, rx->qp_num, n, 100 + n);
	expect_ud_recv(p, n, 100 + n, n);
	n++;
	expect_event(p, IBV_EVENT_SRQ_LIMIT_REACHED, srq,
		     "with fewer WQEs left than the limit");
	CHECK(srq_limit_of(srq) == 0, "limit %d after the event, not 0",
	      srq_limit_of(srq));
	ud_send(p, tx, rx->qp_num, n, 100 + n);
	expect_ud_recv(p, n, 100 + n, n);
	n++;
	expect_no_event(p, "from a disarmed SRQ");

	// Armed again below what is left: the same once more.
	sa.srq_limit = size - n - 1;
	CHECK(sa.srq_limit > 0, "%u WQEs left", size - n);
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "arm again: %s",
	      strerror(errno));
	ud_send(p, tx, rx->qp_num, n, 64);
	expect_ud_recv(p, n, 64, n);
	n++;
	expect_no_event(p, "with as many WQEs left as the new limit");
	ud_send(p, tx, rx->qp_num, n, 64);
	expect_ud_recv(p, n, 64, n);
	n++;
	expect_event(p, IBV_EVENT_SRQ_LIMIT_REACHED, srq,
		     "past the new limit");
	while (n < size) {
		ud_send(p, tx, rx->qp_num, n, 64);
		expect_ud_recv(p, n, 64, n);
		n++;
	}
	// A limit of 0 is no limit: 4 new WQEs taken to the last raise
	// nothing.
	for (uint32_t i = n; i < n + 4; i++) {
		ibv_sge sge;
		ibv_recv_wr wr = recv_wr(p, i, sge), *bad;
		CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0, "post_srq_recv");
	}
	sa.srq_limit = 0;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "limit 0: %s",
	      strerror(errno));
	for (uint32_t end = n + 4; n < end; n++) {
		ud_send(p, tx, rx->qp_num, n, 64);
		expect_ud_recv(p, n, 64, n);
	}
	expect_no_event(p, "from an SRQ without a limit");
	CHECK(ibv_destroy_qp(rx) == 0, "destroy QP");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy SRQ");
}

// Keys an invalidation of b's may not take: none of them is invalidated,
// the QP that asked goes to error, and no byte moves.
struct BadKeys {
	ibv_mr *mr = nullptr;
	ibv_mw *w1 = nullptr, *w2 = nullptr;
	uint32_t w2_key = 0, gone_key = 0;
};

// b's window MR, a type 1 window bound at [0, 4096) and a type 2 window
// bound at [4096, 8192), both for remote writes, and the key of a window
// that no longer exists.
bool bad_keys_setup(Pair &p, BadKeys &k)
{
	k.mr = ibv_reg_mr(p.b.pd, p.b.buf.data(), p.b.buf.size(),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	k.w1 = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
	k.w2 = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	ibv_mw *gone = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(k.mr && k.w1 && k.w2 && gone, "MR and windows: %s",
	      strerror(errno));
	if (!k.mr || !k.w1 || !k.w2 || !gone)
		return false;
	k.gone_key = gone->rkey;
	CHECK(ibv_dealloc_mw(gone) == 0, "dealloc MW");
	ibv_mw_bind bind{};
	bind.wr_id = 300;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info = { k.mr, remote(p.b, 0), 4096,
			   IBV_ACCESS_REMOTE_WRITE };
	CHECK(ibv_bind_mw(p.b.qp, k.w1, &bind) == 0, "bind type 1: %s",
	      strerror(errno));
	expect_wc(p.b, 300, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	k.w2_key = ibv_inc_rkey(k.w2->rkey);
	CHECK(post_bind_mw(p, k.w2, k.w2_key, k.mr, remote(p.b, 4096), 4096,
			   IBV_ACCESS_REMOTE_WRITE, 301) == 0, "bind type 2");
	expect_wc(p.b, 301, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	return !failures;
}

// Both windows and b's MR still take a's WRITEs: nothing was invalidated.
void bad_keys_intact(Pair &p, const BadKeys &k, const char *what, uint64_t id)
{
	const struct {
		uint64_t addr;
		uint32_t key;
		size_t off;
	} targets[] = {
		{ remote(p.b, 0), k.w1->rkey, 0 },
		{ remote(p.b, 4096), k.w2_key, 4096 },
		{ remote(p.b, 8192), p.b.mr->rkey, 8192 },
	};
	for (const auto &t : targets) {
		fill(p.a, 0, 256, uint8_t(id));
		ibv_wc_status st = write_to(p, t.addr, t.key, 256, id++);
		CHECK(st == IBV_WC_SUCCESS && same(p.a, 0, p.b, t.off, 256),
		      "after %s, a WRITE with key 0x%x: %s", what, t.key,
		      ibv_wc_status_str(st));
	}
}

void bad_keys_teardown(Pair &p, BadKeys &k)
{
	if (k.w2 && k.w2_key) {
		ibv_send_wr wr{}, *bad;
		wr.wr_id = 399;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.invalidate_rkey = k.w2_key;
		CHECK(ibv_post_send(p.b.qp, &wr, &bad) == 0, "post LOCAL_INV");
		expect_wc(p.b, 399, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	}
	for (ibv_mw *mw : { k.w1, k.w2 })
		if (mw)
			CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	if (k.mr)
		CHECK(ibv_dereg_mr(k.mr) == 0, "dereg MR");
}

// IBV_WR_LOCAL_INV and a peer's IBV_WR_SEND_WITH_INV with a key they may
// not invalidate (o10-37.2.26 and ibv_post_send(3)): a window that no
// longer exists, a type 1 window, an MR (not a fast-registered one), and
// the type 2 window's key of another generation. LOCAL_INV
// completes with IBV_WC_LOC_QP_OP_ERR; SEND_WITH_INV with
// IBV_WC_REM_INV_REQ_ERR at the sender and IBV_WC_LOC_QP_OP_ERR in the
// receive. No byte outside the receive's buffer changes, and every key
// still works afterwards.
void t_inv_bad_key(Pair &p)
{
	BadKeys k;
	if (!bad_keys_setup(p, k)) {
		bad_keys_teardown(p, k);
		return;
	}
	const struct {
		const char *what;
		uint32_t key;
	} keys[] = {
		{ "a window that is gone", k.gone_key },
		{ "a type 1 window", k.w1->rkey },
		{ "an MR's key", p.b.mr->rkey },
		{ "the type 2 window's next key", ibv_inc_rkey(k.w2_key) },
	};
	uint64_t id = 310;
	for (const auto &x : keys) {
		std::string what = std::string("LOCAL_INV of ") + x.what;
		Untouched u = arm_untouched(p);
		ibv_send_wr wr{}, *bad;
		wr.wr_id = id;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.invalidate_rkey = x.key;
		CHECK(ibv_post_send(p.b.qp, &wr, &bad) == 0, "%s: post",
		      what.c_str());
		expect_wc(p.b, id++, IBV_WC_LOC_QP_OP_ERR);
		expect_untouched(p, u, what.c_str());
		restate(p);
		bad_keys_intact(p, k, what.c_str(), id);
		id += 3;
	}
	for (const auto &x : keys) {
		std::string what = std::string("SEND_WITH_INV of ") + x.what;
		const size_t roff = 65536;
		Untouched u = arm_untouched(p);
		CHECK(post_recv(p.b, roff, 1024, id) == 0, "%s: post_recv",
		      what.c_str());
		ibv_sge sge = { remote(p.a, 0), 64, p.a.mr->lkey };
		ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND_WITH_INV, id + 1),
			    *bad;
		wr.invalidate_rkey = x.key;
		CHECK(ibv_post_send(p.a.qp, &wr, &bad) == 0, "%s: post",
		      what.c_str());
		expect_wc(p.a, id + 1, IBV_WC_REM_INV_REQ_ERR);
		expect_wc(p.b, id, IBV_WC_LOC_QP_OP_ERR);
		// The receive's buffer is undefined after an error completion.
		expect_untouched(p, u, what.c_str(), roff, 1024);
		restate(p);
		bad_keys_intact(p, k, what.c_str(), id + 2);
		id += 5;
	}
	bad_keys_teardown(p, k);
}

// A CQ that overflows (ibv_create_cq(3): the CQ holds cqe completions):
// each completion that finds it full is lost, with IBV_EVENT_CQ_ERR; the
// receive it was of is consumed all the same; the completions it holds
// are intact, and once they are polled the CQ takes completions again.
void t_cq_overflow(Pair &p)
{
	ibv_cq *cq = ibv_create_cq(p.ctx, 4, nullptr, nullptr, 0);
	CHECK(cq, "create CQ: %s", strerror(errno));
	if (!cq)
		return;
	const uint32_t slots = uint32_t(cq->cqe), lost = 3;
	CHECK(slots >= 4 && slots + lost < 16, "a CQ of %u for 4", slots);
	UdSender tx(p);
	ibv_qp *rx = ud_qp(p.b, cq);
	if (!tx || !rx || slots + lost >= 16) {
		if (rx)
			ibv_destroy_qp(rx);
		ibv_destroy_cq(cq);
		return;
	}
	const uint32_t n = slots + lost;
	for (uint32_t i = 0; i <= n; i++) {
		ibv_sge sge;
		ibv_recv_wr wr = recv_wr(p, i, sge), *bad;
		CHECK(ibv_post_recv(rx, &wr, &bad) == 0, "post_recv");
	}
	for (uint32_t i = 0; i < n; i++)
		ud_send(p, tx, rx->qp_num, i, 200);
	for (uint32_t i = 0; i < lost; i++)
		expect_event(p, IBV_EVENT_CQ_ERR, cq, "for a full CQ");
	for (uint32_t i = 0; i < slots; i++)
		expect_ud_recv(p, i, 200, i, cq);
	ibv_wc wc{};
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "a %u-slot CQ gave completion "
	      "wr_id %llu past its %u", slots, (unsigned long long)wc.wr_id,
	      slots);
	// The lost completions' receives were taken: the next message lands
	// in receive n.
	ud_send(p, tx, rx->qp_num, n, 200);
	expect_ud_recv(p, n, 200, n, cq);
	expect_no_event(p, "after the CQ was drained");
	CHECK(ibv_destroy_qp(rx) == 0, "destroy QP");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
}

// A type 2 bind (IBV_WR_BIND_MW) whose window is not one: an ibv_mw that
// carries an MR's key (as a confused or hostile program can pass), and the
// ibv_mw of a window already deallocated (its struct kept). Each completes
// with MW_BIND_ERR; no byte changes, the MR still takes WRITEs with its
// key and the key of neither becomes a window.
void t_bind_bad_window(Pair &p)
{
	ibv_mr *mr = ibv_reg_mr(p.b.pd, p.b.buf.data(), p.b.buf.size(),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND |
					IBV_ACCESS_REMOTE_WRITE);
	ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
	CHECK(mr && mw, "MR and window: %s", strerror(errno));
	if (!mr || !mw)
		return;
	ibv_mw gone = *mw, as_mr = *mw;
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc MW");
	as_mr.rkey = mr->rkey;
	const struct {
		const char *what;
		ibv_mw *mw;
	} bad[] = {
		{ "a window that is gone", &gone },
		{ "an MR's key as a window", &as_mr },
	};
	uint64_t id = 600;
	for (const auto &x : bad) {
		Untouched u = arm_untouched(p);
		uint32_t key = ibv_inc_rkey(x.mw->rkey);
		CHECK(post_bind_mw(p, x.mw, key, mr, remote(p.b, 0), 4096,
				   IBV_ACCESS_REMOTE_WRITE, id) == 0,
		      "%s: post", x.what);
		expect_wc(p.b, id++, IBV_WC_MW_BIND_ERR);
		expect_untouched(p, u, x.what);
		restate(p);
		refused_write(p, remote(p.b, 0), key, 256, id++,
			      IBV_WC_REM_ACCESS_ERR, x.what);
		fill(p.a, 0, 256, uint8_t(id));
		expect_eq_status(write_to(p, remote(p.b, 0), mr->rkey, 256,
					  id++),
				 IBV_WC_SUCCESS, "the MR's own key afterwards");
		CHECK(same(p.a, 0, p.b, 0, 256), "%s: the MR's WRITE differs",
		      x.what);
	}
	CHECK(ibv_dereg_mr(mr) == 0, "dereg MR");
}

// ibv_resize_cq(3) of a CQ holding completions not yet polled (at least
// the first, seen by its completion event): they move to the new ring, and
// every completion comes out once, in order, bytes checked; grown, then
// shrunk to what still fits.
void t_cq_resize_pending(Pair &p)
{
	ibv_comp_channel *ch = ibv_create_comp_channel(p.ctx);
	ibv_cq *cq = ch ? ibv_create_cq(p.ctx, 8, nullptr, ch, 0) : nullptr;
	CHECK(cq, "CQ on a channel: %s", strerror(errno));
	UdSender tx(p);
	ibv_qp *rx = cq ? ud_qp(p.b, cq) : nullptr;
	const uint32_t n = 6;
	if (rx && tx) {
		for (uint32_t i = 0; i < n; i++) {
			ibv_sge sge;
			ibv_recv_wr wr = recv_wr(p, i, sge), *bad;
			CHECK(ibv_post_recv(rx, &wr, &bad) == 0, "post_recv");
		}
		CHECK(ibv_req_notify_cq(cq, 0) == 0, "arm");
		for (uint32_t i = 0; i < n / 2; i++)
			ud_send(p, tx, rx->qp_num, i, 100 + i);
		pollfd pfd = { ch->fd, POLLIN, 0 };
		CHECK(poll(&pfd, 1, int(10000 * time_scale())) == 1,
		      "no completion event");
		ibv_cq *ev_cq;
		void *ev_ctx;
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0)
			ibv_ack_cq_events(ev_cq, 1);
		CHECK(ibv_resize_cq(cq, 64) == 0 && cq->cqe >= 64,
		      "grow to 64 with completions pending: %s (cqe %d)",
		      strerror(errno), cq->cqe);
		for (uint32_t i = n / 2; i < n; i++)
			ud_send(p, tx, rx->qp_num, i, 100 + i);
		CHECK(ibv_resize_cq(cq, 8) == 0 && cq->cqe >= 8,
		      "shrink to 8 with completions pending: %s (cqe %d)",
		      strerror(errno), cq->cqe);
		for (uint32_t i = 0; i < n; i++)
			expect_ud_recv(p, i, 100 + i, i, cq);
		ibv_wc wc{};
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "a completion more: wr_id "
		      "%llu", (unsigned long long)wc.wr_id);
	}
	if (rx)
		CHECK(ibv_destroy_qp(rx) == 0, "destroy QP");
	if (cq)
		CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	if (ch)
		CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy channel");
}

// ibv_create_ah(3) with attributes RoCE cannot use: a source GID entry
// that is empty (ENODATA, ib_core's answer), no GRH, another port
// (EINVAL). The good one is made.
void t_ah_refused(Pair &p)
{
	ibv_ah_attr good = self_ah_attr(p);
	ibv_device_attr da{};
	ibv_gid gid{};
	const ibv_gid zero{};
	CHECK(ibv_query_device(p.ctx, &da) == 0, "query_device");
	CHECK(ibv_query_gid(p.ctx, 1, 255, &gid) == 0 &&
		      !memcmp(&gid, &zero, sizeof(gid)),
	      "GID entry 255 is not empty");
	const struct {
		const char *what;
		ibv_ah_attr attr;
		int err;
	} bad[] = {
		{ "an empty GID entry (255)",
		  [&] { ibv_ah_attr a = good;
			a.grh.sgid_index = 255;
			return a; }(), ENODATA },
		{ "no GRH", [&] { ibv_ah_attr a = good;
			a.is_global = 0;
			return a; }(), EINVAL },
		{ "port 2", [&] { ibv_ah_attr a = good;
			a.port_num = uint8_t(da.phys_port_cnt + 1);
			return a; }(), EINVAL },
	};
	for (const auto &b : bad) {
		ibv_ah_attr a = b.attr;
		errno = 0;
		ibv_ah *ah = ibv_create_ah(p.a.pd, &a);
		CHECK(!ah && errno == b.err, "AH with %s: %p, errno %d (%s), "
		      "expected %s", b.what, (void *)ah, errno, strerror(errno),
		      strerror(b.err));
		if (ah)
			ibv_destroy_ah(ah);
	}
	ibv_ah *ah = ibv_create_ah(p.a.pd, &good);
	CHECK(ah, "the good AH: %s", strerror(errno));
	if (ah)
		CHECK(ibv_destroy_ah(ah) == 0, "destroy AH");
}

const Test tests[] = {
	{ "srq_limit", t_srq_limit, nullptr, false },
	{ "inv_bad_key", t_inv_bad_key, nullptr, false },
	{ "cq_overflow", t_cq_overflow, nullptr, false },
	{ "ah_refused", t_ah_refused, nullptr, false },
	{ "cq_resize_pending", t_cq_resize_pending, nullptr, false },
	{ "bind_bad_window", t_bind_bad_window, nullptr, false },
};

} // namespace

const std::span<const Test> verbs_tests(tests);

} // namespace xfer
