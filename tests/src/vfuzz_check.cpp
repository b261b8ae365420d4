// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-vfuzz: what must hold, checked (completions, events, canaries,
// errnos), and the WRs posted that may still complete.
#include "vfuzz.h"

#include <algorithm>
#include <cstdarg>
#include <unistd.h>

namespace vfuzz {

// ---- Names -----------------------------------------------------------------

std::string strf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

std::string errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : strf("errno %d", e);
}

const char *const kStatusNames[] = {
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR",
	"LOC_PROT_ERR", "WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR",
	"LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR",
	"RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
	"REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
	"INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR",
	"TM_ERR", "TM_RNDV_INCOMPLETE",
};
static_assert(std::size(kStatusNames) == IBV_WC_TM_RNDV_INCOMPLETE + 1);

const char *status_name(int s)
{
	return s >= 0 && s <= IBV_WC_TM_RNDV_INCOMPLETE ? kStatusNames[s] :
							   "?";
}

const char *const kWrOpNames[] = {
	"WRITE", "WRITE_IMM", "SEND", "SEND_IMM", "READ", "CMP_SWP",
	"FETCH_ADD", "LOCAL_INV", "BIND_MW", "SEND_INV", "TSO", "DRIVER1",
	"op12", "op13", "op14", "ATOMIC_WRITE",
};

const char *wr_op_name(int op)
{
	return op >= 0 && op < int(std::size(kWrOpNames)) ? kWrOpNames[op] :
							     "op?";
}

const char *const kStateNames[] = { "RESET", "INIT", "RTR", "RTS",
				    "SQD",   "SQE",  "ERR", "UNKNOWN" };

const char *state_name(int s)
{
	return s >= 0 && s <= IBV_QPS_UNKNOWN ? kStateNames[s] : "?";
}

const char *qp_type_name(ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_XRC_SEND: return "XRC_SEND";
	case IBV_QPT_XRC_RECV: return "XRC_RECV";
	default: return "type?";
	}
}

// @s on stderr with write(2): also from the SIGALRM handler.
void say(const std::string &s)
{
	for (size_t done = 0; done < s.size();) {
		ssize_t n = write(2, s.data() + done, s.size() - done);
		if (n <= 0)
			return;
		done += n;
	}
}

std::string hex(const uint8_t *p, size_t n)
{
	std::string s;

	for (size_t i = 0; i < n; i++)
		s += strf("%02x", p[i]);
	return s;
}

// ---- Checks ----------------------------------------------------------------

void Fuzz::fail(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (in_op)
		log.add(strf("#%llu %s%s -> (did not finish)", ull(opno),
			     opname, args.c_str()));
	for (std::string &line : during)
		log.add(std::move(line));
	during.clear();
	fflush(stdout);
	say(strf("%sthe last %zu operations, completions and events:\n",
		 who.c_str(), kLogLines));
	log.dump();
	say(strf("%sFAIL in op #%llu %s: %s\n", who.c_str(), ull(opno), opname,
		 msg));
	say(strf("reproduce: sroce-vfuzz %s %llu %llu\n", g_run.dev,
		 ull(g_run.seed), ull(g_run.nops)));
	_exit(1);
}

// An argument (or anything) of the current op, for its log line.
void Fuzz::arg(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	args += ' ';
	args += buf;
}

// A completion or event: after the line of the op it came during.
void Fuzz::note(std::string line)
{
	if (in_op)
		during.push_back(std::move(line));
	else
		log.add(std::move(line));
}

// A pointer-returning verb's result @p: NULL must come with an errno.
Res Fuzz::ptr(const void *p, const char *call)
{
	int e = errno;

	if (p)
		return ok();
	if (!plausible(e))
		fail("%s returned NULL with errno %d", call, e);
	return err(e);
}

// An int-returning verb's result @r: 0 or a positive errno.
Res Fuzz::ret(int r, const char *call)
{
	if (!r)
		return ok();
	if (!plausible(r))
		fail("%s returned %d, not 0 nor an errno", call, r);
	return err(r);
}

void Fuzz::check_canaries()
{
	for (size_t b = 0; b < bufs.size(); b++)
		for (int side = 0; side < 2; side++)
			if (memcmp(bufs[b].canary(side),
				   &canaries[(2 * b + side) * g_page], g_page))
				canary_changed(b, side);
}

void Fuzz::canary_changed(size_t b, int side)
{
	const uint8_t *now = bufs[b].canary(side);
	const uint8_t *was = &canaries[(2 * b + side) * g_page];
	size_t first = g_page, last = 0, n = 0;

	for (size_t i = 0; i < g_page; i++) {
		if (now[i] == was[i])
			continue;
		first = std::min(first, i);
		last = i;
		n++;
	}
	size_t show = std::min<size_t>(16, g_page - first);
	fail("the canary page %s the data of b%zu (%s, %zu pages at %p) "
	     "changed: %zu bytes differ, from offset %#zx to %#zx of the page; "
	     "at %#zx it holds %s, expected %s: the kernel wrote outside every "
	     "registration", side ? "after" : "before", b, bufs[b].spec.kind,
	     bufs[b].spec.pages, static_cast<void *>(bufs[b].data), n, first,
	     last, first, hex(now + first, show).c_str(),
	     hex(was + first, show).c_str());
}

// Takes every completion there is, from every CQ.
void Fuzz::reap()
{
	for (int c = 0; c < kSlots; c++)
		if (cqs.at[c].live())
			drain(c, false);
}

// Polls CQ @c (through the extended API if @ex) until it is empty; at
// most 2^16 completions. Return: how many there were.
int Fuzz::drain(int c, bool ex)
{
	if (ex)
		return drain_ex(c);

	ibv_wc wc[16];
	int total = 0, n;

	do {
		n = ibv_poll_cq(cqs.at[c].cq, 16, wc);
		if (n < 0)
			fail("ibv_poll_cq(cq%d) returned %d", c, n);
		for (int i = 0; i < n; i++)
			completion(c, { wc[i].wr_id, wc[i].status,
					wc[i].opcode, wc[i].qp_num,
					wc[i].byte_len, true, true });
		total += n;
	} while (n == 16 && total < 1 << 16);
	return total;
}

int Fuzz::drain_ex(int c)
{
	ibv_cq_ex *x = cqs.at[c].ex;
	uint64_t flags = cqs.at[c].wc_flags;
	ibv_poll_cq_attr attr{};
	int n = 0, ret = ibv_start_poll(x, &attr);

	if (ret == ENOENT)
		return 0;
	if (ret)
		fail("ibv_start_poll(cq%d) returned %d", c, ret);
	do {
		bool qpn = flags & IBV_WC_EX_WITH_QP_NUM;
		bool len = flags & IBV_WC_EX_WITH_BYTE_LEN;

		completion(c, { x->wr_id, x->status, ibv_wc_read_opcode(x),
				qpn ? ibv_wc_read_qp_num(x) : 0,
				len ? ibv_wc_read_byte_len(x) : 0, qpn, len });
		n++;
	} while (n < 1 << 16 && !(ret = ibv_next_poll(x)));
	ibv_end_poll(x);
	if (ret && ret != ENOENT)
		fail("ibv_next_poll(cq%d) returned %d", c, ret);
	return n;
}

// How many WRs may still complete in CQ @c (receives of an SRQ counted in
// every CQ they may come to).
int Fuzz::cq_pending(int c) const
{
	int n = 0;

	for (const Qp &q : qps.at) {
		if (!q.live())
			continue;
		n += q.scq == c ? q.sq.size() : 0;
		n += q.rcq == c ? q.rq.size() : 0;
		if (q.srq >= 0 && q.rcq == c)
			n += srqs.at[q.srq].ids.size();
	}
	for (const Srq &s : srqs.at)
		n += s.live() && s.xrc && s.cq == c ? s.ids.size() : 0;
	return n;
}

void Fuzz::completion(int c, const Wc &wc)
{
	n_wc++;
	by_status[wc.status]++;
	note(strf("    wc cq%d wr%llu %s qpn %#x len %u", c, ull(wc.wr_id),
		  status_name(wc.status), wc.qp_num, wc.byte_len));
	if (wc.status < IBV_WC_SUCCESS || wc.status > IBV_WC_TM_RNDV_INCOMPLETE)
		fail("completion of wr%llu in cq%d with status %d, which "
		     "libibverbs does not know", ull(wc.wr_id), c, wc.status);
	auto it = wrs.find(wc.wr_id);
	if (it == wrs.end()) {
		auto g = gone.find(wc.wr_id);
		fail("completion of wr%llu in cq%d (%s), which %s",
		     ull(wc.wr_id), c, status_name(wc.status),
		     g != gone.end() ? g->second :
		     wc.wr_id < next_wr ? "was refused or completed long ago" :
					  "was never posted");
	}
	Wr w = it->second;
	if (w.queue == Queue::Srq)
		srq_completion(c, w, wc);
	else
		qp_completion(c, w, wc);
	if (wc.status == IBV_WC_SUCCESS)
		check_opcode(w, wc);
	retire(wc.wr_id, "had completed already");
}

// A completion of a WR of a QP's own queue: that QP's, in its CQ, and the
// first of the queue's WRs still outstanding; those before it can no
// longer complete.
void Fuzz::qp_completion(int c, const Wr &w, const Wc &wc)
{
	Qp &q = qps.at[w.slot];
	bool send = w.queue == Queue::Send;
	std::deque<uint64_t> &dq = send ? q.sq : q.rq;
	int want = send ? q.scq : q.rcq;

	if (q.serial != w.serial || !(q.live() || q.dying))
		fail("internal: wr%llu of a QP that is gone", ull(wc.wr_id));
	if (wc.has_qpn && wc.qp_num != q.qpn)
		fail("completion of wr%llu (posted on qp%d, QPN %#x) names QPN "
		     "%#x", ull(wc.wr_id), w.slot, q.qpn, wc.qp_num);
	if (c != want)
		fail("completion of wr%llu (qp%d's %s queue) came to cq%d, not "
		     "cq%d", ull(wc.wr_id), w.slot, send ? "send" : "receive",
		     c, want);
	auto pos = std::find(dq.begin(), dq.end(), wc.wr_id);
	if (pos == dq.end())
		fail("internal: wr%llu not queued on qp%d", ull(wc.wr_id),
		     w.slot);
	for (auto i = dq.begin(); i != pos; ++i)
		retire(*i, "was posted before a WR of the same queue that "
			   "completed first (a queue completes in order)");
	dq.erase(dq.begin(), pos + 1);
}

// A completion of an SRQ's receive: of a QP that takes from that SRQ (an
// XRC one: a receive QP of the SRQ's domain), in its CQ.
void Fuzz::srq_completion(int c, const Wr &w, const Wc &wc)
{
	Srq &s = srqs.at[w.slot];
	int q = -1;

	if (s.serial != w.serial || !(s.live() || s.dying))
		fail("internal: wr%llu of an SRQ that is gone", ull(wc.wr_id));
	for (int i = 0; wc.has_qpn && i < kSlots; i++)
		if ((qps.at[i].live() || qps.at[i].dying) &&
		    qps.at[i].qpn == wc.qp_num)
			q = i;
	if (wc.has_qpn && q < 0)
		fail("completion of wr%llu (a receive of srq%d) names QPN %#x: "
		     "no QP of ours (or one destroyed earlier)", ull(wc.wr_id),
		     w.slot, wc.qp_num);
	int want = s.xrc ? s.cq : q >= 0 ? qps.at[q].rcq : c;
	if (q >= 0 && s.xrc &&
	    (qps.at[q].type != IBV_QPT_XRC_RECV || qps.at[q].xrcd != s.xrcd))
		fail("completion of wr%llu (a receive of XRC srq%d, xrcd%d) "
		     "through qp%d, a %s QP of xrcd%d", ull(wc.wr_id), w.slot,
		     s.xrcd, q, qp_type_name(qps.at[q].type), qps.at[q].xrcd);
	if (q >= 0 && !s.xrc && qps.at[q].srq != w.slot)
		fail("completion of wr%llu (a receive of srq%d) through qp%d, "
		     "which does not take from it", ull(wc.wr_id), w.slot, q);
	if (c != want)
		fail("completion of wr%llu (a receive of srq%d) came to cq%d, "
		     "not cq%d", ull(wc.wr_id), w.slot, c, want);
	auto pos = std::find(s.ids.begin(), s.ids.end(), wc.wr_id);
	if (pos != s.ids.end())
		s.ids.erase(pos);
}

// The completion opcode of a send WR of @opcode.
static int wc_opcode(int opcode)
{
	switch (opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV: return IBV_WC_SEND;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
	case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
	case IBV_WR_TSO: return IBV_WC_TSO;
	case IBV_WR_ATOMIC_WRITE: return IBV_WC_ATOMIC_WRITE;
	default: return -1;
	}
}

// A successful completion's opcode is that of what was posted.
void Fuzz::check_opcode(const Wr &w, const Wc &wc)
{
	if (w.queue == Queue::Send) {
		if (wc.opcode != wc_opcode(w.opcode))
			fail("successful completion of wr%llu (%s) with opcode "
			     "%d, expected %d", ull(wc.wr_id),
			     wr_op_name(w.opcode), wc.opcode,
			     wc_opcode(w.opcode));
		return;
	}
	if (wc.opcode != IBV_WC_RECV && wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM)
		fail("successful completion of receive wr%llu with opcode %d",
		     ull(wc.wr_id), wc.opcode);
	if (wc.opcode == IBV_WC_RECV && wc.has_len && wc.byte_len > w.room)
		fail("receive wr%llu completed with %u bytes; its SGEs hold "
		     "%llu", ull(wc.wr_id), wc.byte_len, ull(w.room));
}

// Takes (and acknowledges at once: ibv_destroy_* waits for that) every
// async event there is.
void Fuzz::events()
{
	ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		check_event(ev);
		ibv_ack_async_event(&ev);
	}
}

// An event names a live object of ours.
void Fuzz::check_event(const ibv_async_event &ev)
{
	bool found = false;
	int slot = -1;

	switch (ev.event_type) {
	case IBV_EVENT_CQ_ERR:
		for (int i = 0; i < kSlots; i++)
			if (cqs.at[i].live() && cqs.at[i].cq == ev.element.cq)
				slot = i;
		found = true;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		for (int i = 0; i < kSlots; i++)
			if (qps.at[i].live() && qps.at[i].qp == ev.element.qp)
				slot = i;
		found = true;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		for (int i = 0; i < kSlots; i++)
			if (srqs.at[i].live() &&
			    srqs.at[i].srq == ev.element.srq)
				slot = i;
		found = true;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		note(strf("    event %s port %d",
			  ibv_event_type_str(ev.event_type),
			  ev.element.port_num));
		return;
	default:
		break;
	}
	if (!found)
		fail("async event %d (%s)", ev.event_type,
		     ibv_event_type_str(ev.event_type));
	note(strf("    event %s slot %d", ibv_event_type_str(ev.event_type),
		  slot));
	if (slot < 0)
		fail("async event %s for an object that is not (or no longer) "
		     "ours", ibv_event_type_str(ev.event_type));
}

// ---- Work requests ---------------------------------------------------------

// WR @id was posted on QP (or SRQ) @slot's @q.
void Fuzz::track(Queue q, int slot, uint64_t id, int opcode, uint64_t room)
{
	uint32_t serial = q == Queue::Srq ? srqs.at[slot].serial :
					    qps.at[slot].serial;

	wrs[id] = { q, slot, serial, opcode, room };
	if (q == Queue::Send)
		qps.at[slot].sq.push_back(id);
	else if (q == Queue::Recv)
		qps.at[slot].rq.push_back(id);
	else
		srqs.at[slot].ids.push_back(id);
}

// WR @id may no longer complete, because @why.
void Fuzz::retire(uint64_t id, const char *why)
{
	wrs.erase(id);
	gone[id] = why;
	gone_order.push_back(id);
	if (gone_order.size() > 1 << 16) {
		gone.erase(gone_order.front());
		gone_order.pop_front();
	}
}

// QP @s went to RESET: what was posted on it is dropped, and the provider
// removed its completions not yet polled.
void Fuzz::qp_reset(int s)
{
	Qp &q = qps.at[s];

	for (uint64_t id : q.sq)
		retire(id, "was posted on a QP that went to RESET since");
	for (uint64_t id : q.rq)
		retire(id, "was posted on a QP that went to RESET since");
	q.sq.clear();
	q.rq.clear();
}

// QP @s was moved to @state (and is no longer one of a pair, if it was:
// see op_exchange).
void Fuzz::qp_moved(int s, ibv_qp_state state)
{
	if (state == IBV_QPS_RESET)
		qp_reset(s);
	qps.at[s].state = state;
	qps.at[s].peer = 0;
}

// QP @s was destroyed. Completions it made before may still be in its
// CQs: take them now; after that none may come.
void Fuzz::qp_gone(int s)
{
	Qp &q = qps.at[s];

	q.qp = nullptr;
	q.ex = nullptr;
	q.dying = true;
	reap();
	for (uint64_t id : q.sq)
		retire(id, "was posted on a QP destroyed since");
	for (uint64_t id : q.rq)
		retire(id, "was posted on a QP destroyed since");
	q = {};
}

// SRQ @s was destroyed: as qp_gone().
void Fuzz::srq_gone(int s)
{
	Srq &q = srqs.at[s];

	q.srq = nullptr;
	q.dying = true;
	reap();
	for (uint64_t id : q.ids)
		retire(id, "was posted on an SRQ destroyed since");
	q = {};
}

int Fuzz::pd_users(int p) const
{
	int n = 0;

	for (const Mr &x : mrs.at)
		n += x.live() && x.pd == p;
	for (const Mw &x : mws.at)
		n += x.live() && x.pd == p;
	for (const Ah &x : ahs.at)
		n += x.live() && x.pd == p;
	for (const Srq &x : srqs.at)
		n += x.live() && x.pd == p;
	for (const Qp &x : qps.at)
		n += x.live() && x.pd == p;
	return n;
}

int Fuzz::cq_users(int c) const
{
	int n = 0;

	for (const Qp &x : qps.at)
		n += x.live() && (x.scq == c || x.rcq == c);
	for (const Srq &x : srqs.at)
		n += x.live() && x.xrc && x.cq == c;
	return n;
}

int Fuzz::srq_users(int s) const
{
	int n = 0;

	for (const Qp &x : qps.at)
		n += x.live() && x.srq == s;
	return n;
}

int Fuzz::xrcd_users(int d) const
{
	int n = 0;

	for (const Qp &x : qps.at)
		n += x.live() && x.xrcd == d;
	for (const Srq &x : srqs.at)
		n += x.live() && x.xrc && x.xrcd == d;
	return n;
}

int Fuzz::mr_windows(int m) const
{
	int n = 0;

	for (const Mw &x : mws.at)
		n += x.live() && x.mr == m;
	return n;
}

} // namespace vfuzz
