// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-stall's parts (stall.h): V, root, and the attackers, uid 65534
// (but in destroy_same_user), which open the device, the FUSE file and
// everything else themselves, after becoming that user.
#include "stall.h"

#include "check.h"
#include "orphan.h"
#include "role.h"
#include "stallfs.h"
#include "tasks.h"
#include "xfer.h"

#include <algorithm>
#include <atomic>
#include <fcntl.h>
#include <fstream>
#include <grp.h>
#include <map>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace stall {
namespace {

const uint32_t kMsg = 64;	// bytes of a SEND that must arrive
const uint32_t kGrh = 40;	// before a UD receive's data
const int kGid = 1;		// the GID index of every path (loopback)
const uint32_t kQkey = 0x1234;
const uid_t kNobody = 65534;

uint8_t msg_byte(size_t i)
{
	return uint8_t(0xa0 + i * 3);
}

// The device, a PD and a CQ of one process.
struct Dev {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;

	bool open(const char *name, int cqe)
	{
		ctx = open_device(name);
		pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
		cq = ctx ? ibv_create_cq(ctx, cqe, nullptr, nullptr, 0) : nullptr;
		CHECK(ctx && pd && cq, "opening %s, its PD and CQ: %s", name,
		      strerror(errno));
		return ctx && pd && cq;
	}

	void close()
	{
		if (cq)
			CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
		if (pd)
			CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
		if (ctx)
			CHECK(ibv_close_device(ctx) == 0, "close device");
		*this = {};
	}
};

// The attacker runs as nobody, as an unprivileged user would; the device
// and the file are opened after, as that user.
bool become_nobody()
{
	bool ok = !setgroups(0, nullptr) &&
		  !setresgid(kNobody, kNobody, kNobody) &&
		  !setresuid(kNobody, kNobody, kNobody) &&
		  // A change of credentials clears the parent-death signal.
		  !prctl(PR_SET_PDEATHSIG, SIGKILL);

	CHECK(ok, "becoming uid %u: %s", kNobody, strerror(errno));
	return ok;
}

// The device faults @cap (IBV_ODP_SUPPORT_SEND, _RECV) on @type QPs.
bool odp_can(ibv_context *ctx, ibv_qp_type type, uint32_t cap)
{
	ibv_device_attr_ex a{};

	if (ibv_query_device_ex(ctx, nullptr, &a))
		return false;
	const ibv_odp_caps &o = a.odp_caps;
	uint32_t caps = type == IBV_QPT_UD ? o.per_transport_caps.ud_odp_caps :
					     o.per_transport_caps.rc_odp_caps;
	bool ok = (o.general_caps & IBV_ODP_SUPPORT) && (caps & cap) == cap;

	CHECK(ok, "the device has no ODP %#x on QP type %d", cap, type);
	return ok;
}

// The FUSE file, mapped shared (writable with @write), or nullptr.
uint8_t *map_file(const std::string &path, bool write)
{
	int fd = ::open(path.c_str(), write ? O_RDWR : O_RDONLY);
	void *m = fd < 0 ? MAP_FAILED :
			   mmap(nullptr, StallFs::kLen,
				PROT_READ | (write ? PROT_WRITE : 0),
				MAP_SHARED, fd, 0);

	CHECK(m != MAP_FAILED, "mapping %s: %s", path.c_str(), strerror(errno));
	if (fd >= 0)
		::close(fd);
	return m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
}

// A QP of @d's PD, on @d's CQ or on @cq if given.
ibv_qp *make_qp(Dev &d, ibv_qp_type type, uint32_t sends,
		uint32_t inline_len, ibv_cq *cq = nullptr)
{
	ibv_qp_init_attr ia{};

	ia.send_cq = ia.recv_cq = cq ? cq : d.cq;
	ia.qp_type = type;
	ia.cap = { sends, 1, 1, 1, inline_len };
	ibv_qp *qp = ibv_create_qp(d.pd, &ia);
	CHECK(qp, "creating a QP: %s", strerror(errno));
	return qp;
}

ibv_ah_attr loopback_path(ibv_context *ctx, int gid = kGid)
{
	ibv_ah_attr a{};

	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = uint8_t(gid);
	a.grh.hop_limit = 64;
	ibv_query_gid(ctx, 1, gid, &a.grh.dgid);
	return a;
}

// The index of @ctx's first RoCEv2 GID of an IPv4 address (the case
// script gives the second device's net_device one), or -1 (said).
int ipv4_gid(ibv_context *ctx)
{
	std::vector<ibv_gid_entry> gids(1024);
	ssize_t n = ibv_query_gid_table(ctx, gids.data(), gids.size(), 0);
	static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					       0xff, 0xff };

	for (ssize_t i = 0; i < n; i++)
		if (gids[i].gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(gids[i].gid.raw, v4_mapped, sizeof(v4_mapped)))
			return int(gids[i].gid_index);
	CHECK(false, "%s has no RoCEv2 GID of an IPv4 address (%zd GIDs)",
	      ibv_get_device_name(ctx->device), n);
	return -1;
}

// RC @qp to RTS towards QP @dest of this device, granting remote
// @access; PSNs as xfer.h's.
bool rc_connect(ibv_context *ctx, ibv_qp *qp, uint32_t dest, int access = 0)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = unsigned(access);
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = dest * 7 & 0xffffff;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr = loopback_path(ctx);
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = qp->qp_num * 7 & 0xffffff;
	a.timeout = scaled_qp_timeout();
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 1;
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(ret == 0, "connecting QP %#x to %#x: %s", qp->qp_num, dest,
	      strerror(ret));
	return ret == 0;
}

bool ud_ready(ibv_qp *qp)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = kQkey;
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	CHECK(ret == 0, "UD QP %#x to RTS: %s", qp->qp_num, strerror(ret));
	return ret == 0;
}

bool post_recv(ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey)
{
	ibv_sge sge = { uintptr_t(buf), len, lkey };
	ibv_recv_wr wr{}, *bad;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	int ret = ibv_post_recv(qp, &wr, &bad);
	CHECK(ret == 0, "posting a receive: %s", strerror(ret));
	return ret == 0;
}

// A SEND of kMsg bytes of msg_byte(), inline (to UD QP @qpn through @ah
// if given).
ibv_send_wr inline_send(const uint8_t *msg, ibv_ah *ah = nullptr,
			uint32_t qpn = 0)
{
	static ibv_sge sge;
	ibv_send_wr wr{};

	sge = { uintptr_t(msg), kMsg, 0 };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = kQkey;
	return wr;
}

// Up to @ms for @n completions on @cq; how many came, and how many of them
// failed or were not @want's byte length (if @want). The last in *@last,
// and how many had each status in *@statuses, if given.
int poll_some(ibv_cq *cq, int n, long ms, uint32_t want, int *bad,
	      ibv_wc *last = nullptr, std::map<int, int> *statuses = nullptr)
{
	long end = now_ms() + ms;
	int got = 0;

	*bad = 0;
	while (got < n && now_ms() < end) {
		ibv_wc wc;
		int k = ibv_poll_cq(cq, 1, &wc);
		if (k == 1) {
			got++;
			if (wc.status != IBV_WC_SUCCESS ||
			    (want && wc.byte_len != want))
				(*bad)++;
			if (last)
				*last = wc;
			if (statuses)
				(*statuses)[wc.status]++;
		} else {
			usleep(1000);
		}
	}
	return got;
}

// Within @ms, a UD receive on @cq of inline_send()'s SEND into @buf: "ok"
// (the bytes sent, after the GRH), "bad" or "none".
const char *ud_recv(ibv_cq *cq, const uint8_t *buf, long ms)
{
	int bad;
	int got = poll_some(cq, 1, ms, kGrh + kMsg, &bad);
	bool same = true;

	for (uint32_t i = 0; i < kMsg; i++)
		same = same && buf[kGrh + i] == msg_byte(i);
	return !got ? "none" : bad || !same ? "bad" : "ok";
}

// A part's loop: @fn answers each command until the test goes (EOF).
void commands(int fd, const std::function<void(const char *)> &fn)
{
	char cmd[kLine];

	while (hear(fd, cmd, -1))
		fn(cmd);
}

// A's memory: the FUSE file mapped, an ODP MR over it.
struct Odp {
	uint8_t *map = nullptr;
	ibv_mr *mr = nullptr;

	bool reg(Dev &d, const std::string &file, bool write)
	{
		map = map_file(file, write);
		if (map)
			mr = ibv_reg_mr(d.pd, map, StallFs::kLen,
					IBV_ACCESS_ON_DEMAND |
						(write ? IBV_ACCESS_LOCAL_WRITE : 0));
		CHECK(mr, "ODP MR over %s: %s", file.c_str(), strerror(errno));
		return mr;
	}

	void dereg()
	{
		if (mr)
			CHECK(ibv_dereg_mr(mr) == 0, "A: dereg ODP MR");
		if (map)
			munmap(map, StallFs::kLen);
		*this = {};
	}
};

// A for destroy_wq_full and two_devices_one_queue, pinned to CPU 0: @n
// UD QPs in one context, each with a receive into the FUSE page (an ODP
// MR, writable); a UD QP of a second context to send to them (and to any
// QP of the device: V's, the QP of A's other process in destroy_wq_full,
// attacker_own()); and with @dev2 (two_devices_one_queue), in a third
// context, on that device, "own", a UD QP with a receive into A's pinned
// memory on a CQ of its own, and a UD QP of a fourth context there that
// sends to it (a path stays within its device). "own" is in a context of
// its own so that a queue per context (one uid could multiply queues and
// kworkers with it) would run it at once, and not in the sender's, whose
// doorbell would run it itself. "flood": flooded MS RC, a SEND to each
// of the @n (one ibv_post_send() each); "send QPN": sent RC, a SEND to
// QPN; with @dev2, "own": sent RC, a SEND to A's own QP; "ownrecv MS":
// recv ok|none|bad, its receive within MS; "recvd MS": recvd GOT BAD
// STATUS:COUNT..., the @n QPs' receives that completed, those that
// failed, and how many had each status; "destroyfirst": destroyed MS RC,
// the @n QPs and their sender; "destroyall": destroyed MS RC, every QP of
// A's left, those on the first device first, own last; "ownagain MS":
// again ok|none|bad|error, own's receive posted again and its receive of
// a SEND within MS; "fresh MS": fresh ok|none|bad|error, own and its
// sender made again, and own's receive of a SEND within MS.
struct Flood {
	Dev x, s, o, s2;
	Odp m;
	std::vector<ibv_qp *> qps;
	ibv_qp *sender = nullptr;
	ibv_ah *ah = nullptr;
	uint8_t msg[kMsg];
	ibv_cq *own_cq = nullptr;
	ibv_qp *own = nullptr;
	uint8_t *own_buf = nullptr;
	ibv_mr *own_mr = nullptr;
	// own's sender on @dev2, and its path
	ibv_qp *sender2 = nullptr;
	ibv_ah *ah2 = nullptr;

	bool setup(const char *devname, const std::string &file, int n,
		   const char *dev2)
	{
		cpu_set_t cpus;

		CPU_ZERO(&cpus);
		CPU_SET(0, &cpus);
		CHECK(!sched_setaffinity(0, sizeof(cpus), &cpus),
		      "pinning A to CPU 0: %s", strerror(errno));
		for (uint32_t i = 0; i < kMsg; i++)
			msg[i] = msg_byte(i);
		if (!become_nobody() || !x.open(devname, 2 * n) ||
		    !odp_can(x.ctx, IBV_QPT_UD, IBV_ODP_SUPPORT_RECV) ||
		    !m.reg(x, file, true) || !s.open(devname, 2 * n))
			return false;
		for (int i = 0; i < n; i++) {
			ibv_qp *qp = make_qp(x, IBV_QPT_UD, 1, 0);
			if (!qp)
				return false;
			qps.push_back(qp);
			if (!ud_ready(qp) ||
			    !post_recv(qp, m.map, kGrh + kMsg, m.mr->lkey))
				return false;
		}
		sender = make_qp(s, IBV_QPT_UD, 2 * n, kMsg);
		ibv_ah_attr path = loopback_path(s.ctx);
		ah = ibv_create_ah(s.pd, &path);
		CHECK(ah, "creating an AH: %s", strerror(errno));
		if (!sender || !ud_ready(sender) || !ah)
			return false;
		if (!dev2)
			return true;
		if (!o.open(dev2, 4))
			return false;
		own_buf = static_cast<uint8_t *>(aligned_alloc(4096, 4096));
		own_cq = ibv_create_cq(o.ctx, 4, nullptr, nullptr, 0);
		if (own_buf)
			own_mr = ibv_reg_mr(o.pd, own_buf, 4096,
					    IBV_ACCESS_LOCAL_WRITE);
		CHECK(own_buf && own_cq && own_mr, "A's own QP's buffer, CQ "
		      "and MR: %s", strerror(errno));
		return own_mr && make_own() && s2.open(dev2, 4) &&
		       make_sender2();
	}

	// own, its receive posted
	bool make_own()
	{
		memset(own_buf, 0, 4096);
		own = make_qp(o, IBV_QPT_UD, 1, 0, own_cq);
		return own && ud_ready(own) &&
		       post_recv(own, own_buf, kGrh + kMsg, own_mr->lkey);
	}

	// own's sender on the second device, and its path there
	bool make_sender2()
	{
		int gid = ipv4_gid(s2.ctx);

		sender2 = make_qp(s2, IBV_QPT_UD, 2, kMsg);
		if (gid < 0 || !sender2 || !ud_ready(sender2))
			return false;
		if (!ah2) {
			ibv_ah_attr path = loopback_path(s2.ctx, gid);
			ah2 = ibv_create_ah(s2.pd, &path);
			CHECK(ah2, "creating an AH on the second device: %s",
			      strerror(errno));
		}
		return ah2;
	}

	int send(uint32_t qpn)
	{
		ibv_send_wr wr = inline_send(msg, ah, qpn), *bad;

		return ibv_post_send(sender, &wr, &bad);
	}

	// A SEND to own, from its device's sender
	int send_own()
	{
		if (!own || !sender2)
			return EINVAL;
		ibv_send_wr wr = inline_send(msg, ah2, own->qp_num), *bad;

		return ibv_post_send(sender2, &wr, &bad);
	}

	// The first device's QPs: the @n and their sender. 0 or the first
	// error.
	int destroy_first()
	{
		int ret = 0;

		for (ibv_qp *&qp : qps) {
			ret = ret ?: (qp ? ibv_destroy_qp(qp) : 0);
			if (!ret)
				qp = nullptr;
		}
		ret = ret ?: (sender ? ibv_destroy_qp(sender) : 0);
		if (!ret)
			sender = nullptr;
		return ret;
	}

	// Every QP of A's left: the first device's, then the second's
	// sender, own last. 0 or the first error.
	int destroy_all()
	{
		int ret = destroy_first();

		for (ibv_qp **qp : { &sender2, &own }) {
			ret = ret ?: (*qp ? ibv_destroy_qp(*qp) : 0);
			if (!ret)
				*qp = nullptr;
		}
		return ret;
	}

	// own's receive posted again, and a SEND to it: its receive within
	// @ms, as own_recv(), or "error"
	const char *own_again(long ms)
	{
		memset(own_buf, 0, 4096);
		if (!own || !post_recv(own, own_buf, kGrh + kMsg, own_mr->lkey) ||
		    send_own())
			return "error";
		return own_recv(ms);
	}

	// Within @ms, own's receive: "ok" (the bytes sent), "bad" or "none".
	const char *own_recv(long ms)
	{
		return own_cq ? ud_recv(own_cq, own_buf, ms) : "error";
	}

	void teardown()
	{
		for (ibv_qp *qp : qps)
			if (qp)
				CHECK(ibv_destroy_qp(qp) == 0, "A: destroy QP");
		if (own)
			CHECK(ibv_destroy_qp(own) == 0, "A: destroy own QP");
		if (sender2)
			CHECK(ibv_destroy_qp(sender2) == 0, "A: destroy QP");
		if (ah2)
			CHECK(ibv_destroy_ah(ah2) == 0, "A: destroy AH");
		if (own_mr)
			CHECK(ibv_dereg_mr(own_mr) == 0, "A: dereg own MR");
		if (own_cq)
			CHECK(ibv_destroy_cq(own_cq) == 0, "A: destroy own CQ");
		free(own_buf);
		if (sender)
			CHECK(ibv_destroy_qp(sender) == 0, "A: destroy QP");
		if (ah)
			CHECK(ibv_destroy_ah(ah) == 0, "A: destroy AH");
		m.dereg();
		x.close();
		s.close();
		o.close();
		s2.close();
	}
};

} // namespace

// V, root: one RC (or UD) QP, a pinned 4 KiB buffer, a receive of kMsg
// bytes posted. "connect QPN" (RC: then its receive), "recv MS" (recv
// ok|none|bad), "wc" (wc STATUS LEN QPN SRC_QP of the completion "recv"
// polled, or wc none), "post" (posting, then posted MS RC: a SEND of kMsg
// bytes), "destroy" (destroyed MS RC).
int victim(int fd, const char *devname, ibv_qp_type type)
{
	Dev d;
	auto *buf = static_cast<uint8_t *>(aligned_alloc(4096, 4096));
	ibv_mr *mr = nullptr;
	ibv_qp *qp = nullptr;
	uint32_t at = type == IBV_QPT_UD ? kGrh : 0;
	ibv_wc last{};
	bool polled = false;

	memset(buf, 0, 4096);
	for (uint32_t i = 0; i < kMsg; i++)
		buf[2048 + i] = msg_byte(i);
	if (d.open(devname, 16))
		mr = ibv_reg_mr(d.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (mr)
		qp = make_qp(d, type, 4, 0);
	// A receive of kMsg bytes: UD's now, RC's once connected.
	if (!qp || (type == IBV_QPT_UD && (!ud_ready(qp) ||
	    !post_recv(qp, buf, at + kMsg, mr->lkey)))) {
		say(fd, "error setting up the victim");
		return 1;
	}
	say(fd, "ready %u", qp->qp_num);
	commands(fd, [&](const char *cmd) {
		unsigned n;
		long t = now_ms();
		int bad, ret;

		if (sscanf(cmd, "connect %u", &n) == 1) {
			say(fd, rc_connect(d.ctx, qp, n) &&
					post_recv(qp, buf, kMsg, mr->lkey) ?
				"ok" : "error connect");
		} else if (sscanf(cmd, "recv %u", &n) == 1) {
			int got = poll_some(d.cq, 1, n, at + kMsg, &bad, &last);
			bool same = true;
			for (uint32_t i = 0; i < kMsg; i++)
				same = same && buf[at + i] == msg_byte(i);
			polled = polled || got;
			say(fd, "recv %s",
			    !got ? "none" : bad || !same ? "bad" : "ok");
		} else if (!strcmp(cmd, "wc")) {
			if (polled)
				say(fd, "wc %d %u %#x %#x", int(last.status),
				    last.byte_len, last.qp_num, last.src_qp);
			else
				say(fd, "wc none");
		} else if (!strcmp(cmd, "post")) {
			ibv_sge sge = { uintptr_t(buf + 2048), kMsg, mr->lkey };
			ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND, 1), *b;
			say(fd, "posting");
			ret = ibv_post_send(qp, &wr, &b);
			say(fd, "posted %ld %d", now_ms() - t, ret);
		} else if (!strcmp(cmd, "destroy")) {
			ret = ibv_destroy_qp(qp);
			say(fd, "destroyed %ld %d", now_ms() - t, ret);
			if (!ret)
				qp = nullptr;
		}
	});
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0, "V: destroy QP");
	CHECK(ibv_dereg_mr(mr) == 0, "V: dereg MR");
	d.close();
	free(buf);
	return failures ? 1 : 0;
}

// A for destroy_*_user: an RC QP, an ODP MR over the file (read-only).
// "connect QPN"; "post": posting, then posted MS RC, of one
// ibv_post_send() of a SEND inline and a SEND of the FUSE page.
int attacker_doorbell(int fd, const char *devname, const std::string &file,
		      bool nobody)
{
	Dev d;
	Odp m;
	ibv_qp *qp = nullptr;
	uint8_t msg[kMsg];

	for (uint32_t i = 0; i < kMsg; i++)
		msg[i] = msg_byte(i);
	if ((!nobody || become_nobody()) && d.open(devname, 16) &&
	    odp_can(d.ctx, IBV_QPT_RC, IBV_ODP_SUPPORT_SEND) &&
	    m.reg(d, file, false))
		qp = make_qp(d, IBV_QPT_RC, 4, kMsg);
	if (!qp) {
		say(fd, "error setting up the attacker");
		return 1;
	}
	say(fd, "ready %u", qp->qp_num);
	commands(fd, [&](const char *cmd) {
		unsigned n;

		if (sscanf(cmd, "connect %u", &n) == 1) {
			say(fd, rc_connect(d.ctx, qp, n) ? "ok" : "error connect");
		} else if (!strcmp(cmd, "post")) {
			ibv_sge sge = { uintptr_t(m.map), 1024, m.mr->lkey };
			ibv_send_wr page = one_sge_wr(&sge, IBV_WR_SEND, 2);
			ibv_send_wr first = inline_send(msg), *bad;
			long t = now_ms();

			first.next = &page;
			say(fd, "posting");
			int ret = ibv_post_send(qp, &first, &bad);
			say(fd, "posted %ld %d", now_ms() - t, ret);
		}
	});
	CHECK(ibv_destroy_qp(qp) == 0, "A: destroy QP");
	m.dereg();
	d.close();
	return failures ? 1 : 0;
}

// A for doorbell_to_stalled_peer: an RC QP whose receive (posted once
// connected) is the FUSE page's first kMsg bytes (an ODP MR, writable).
// "connect QPN"; "check
// MS": recv ok|none|bad, ok if the receive completed with V's bytes.
int attacker_receiver(int fd, const char *devname, const std::string &file)
{
	Dev d;
	Odp m;
	ibv_qp *qp = nullptr;

	if (become_nobody() && d.open(devname, 16) &&
	    odp_can(d.ctx, IBV_QPT_RC, IBV_ODP_SUPPORT_RECV) &&
	    m.reg(d, file, true))
		qp = make_qp(d, IBV_QPT_RC, 4, 0);
	if (!qp) {
		say(fd, "error setting up the attacker");
		return 1;
	}
	say(fd, "ready %u", qp->qp_num);
	commands(fd, [&](const char *cmd) {
		unsigned n;
		int bad;

		if (sscanf(cmd, "connect %u", &n) == 1) {
			say(fd, rc_connect(d.ctx, qp, n) &&
					post_recv(qp, m.map, kMsg, m.mr->lkey) ?
				"ok" : "error connect");
		} else if (sscanf(cmd, "check %u", &n) == 1) {
			int got = poll_some(d.cq, 1, n, kMsg, &bad);
			bool same = true;
			for (uint32_t i = 0; i < kMsg; i++)
				same = same && m.map[i] == msg_byte(i);
			say(fd, "recv %s",
			    !got ? "none" : bad || !same ? "bad" : "ok");
		}
	});
	CHECK(ibv_destroy_qp(qp) == 0, "A: destroy QP");
	m.dereg();
	d.close();
	return failures ? 1 : 0;
}

int attacker_flood(int fd, const char *devname, const std::string &file,
		   int n, const char *dev2)
{
	Flood f;

	if (!f.setup(devname, file, n, dev2)) {
		say(fd, "error setting up the attacker");
		f.teardown();
		return 1;
	}
	say(fd, "ready %d", n);
	commands(fd, [&](const char *cmd) {
		unsigned qpn, ms;
		int ret = 0, bad;
		long t = now_ms();

		if (!strcmp(cmd, "flood")) {
			for (int i = 0; i < n && !ret; i++)
				ret = f.send(f.qps[i]->qp_num);
			say(fd, "flooded %ld %d", now_ms() - t, ret);
		} else if (sscanf(cmd, "send %u", &qpn) == 1) {
			say(fd, "sent %d", f.send(qpn));
		} else if (!strcmp(cmd, "own")) {
			say(fd, "sent %d", f.send_own());
		} else if (sscanf(cmd, "ownrecv %u", &ms) == 1) {
			say(fd, "recv %s", f.own_recv(ms));
		} else if (!strcmp(cmd, "destroyfirst")) {
			ret = f.destroy_first();
			say(fd, "destroyed %ld %d", now_ms() - t, ret);
		} else if (!strcmp(cmd, "destroyall")) {
			ret = f.destroy_all();
			say(fd, "destroyed %ld %d", now_ms() - t, ret);
		} else if (sscanf(cmd, "ownagain %u", &ms) == 1) {
			say(fd, "again %s", f.own_again(ms));
		} else if (sscanf(cmd, "fresh %u", &ms) == 1) {
			bool made = f.s2.ctx && !f.own && !f.sender2 &&
				    f.make_own() && f.make_sender2() &&
				    f.send_own() == 0;
			say(fd, "fresh %s", made ? f.own_recv(ms) : "error");
		} else if (sscanf(cmd, "recvd %u", &ms) == 1) {
			std::map<int, int> st;
			int got = poll_some(f.x.cq, n, ms, kGrh + kMsg, &bad,
					    nullptr, &st);
			char line[kLine];
			int len = snprintf(line, sizeof(line), "recvd %d %d",
					   got, bad);
			for (const auto &[status, k] : st)
				if (len > 0 && size_t(len) < sizeof(line))
					len += snprintf(line + len,
							sizeof(line) - len,
							" %d:%d", status, k);
			say(fd, "%s", line);
		}
	});
	f.teardown();
	return failures ? 1 : 0;
}

// A's other process for destroy_wq_full, nobody as A: a UD QP of its own
// context, with a receive into its pinned memory; A's sender sends to it.
// Its runs go to A's user's queue, as A's QPs' do, but its memory map is
// not A's: its ibv_destroy_qp(), whose munmap() of the QP's rings takes
// its process's mmap lock for writing, waits for no lock that A's stalled
// faults hold (each holds A's for reading, hmm_range_fault()). "ready
// QPN"; "recv MS": recv ok|none|bad, its receive within MS; "destroy":
// destroyed MS RC.
int attacker_own(int fd, const char *devname)
{
	Dev d;
	auto *buf = static_cast<uint8_t *>(aligned_alloc(4096, 4096));
	ibv_mr *mr = nullptr;
	ibv_qp *qp = nullptr;

	memset(buf, 0, 4096);
	if (become_nobody() && d.open(devname, 4))
		mr = ibv_reg_mr(d.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!d.ctx || mr, "A's other process's MR: %s", strerror(errno));
	if (mr)
		qp = make_qp(d, IBV_QPT_UD, 1, 0);
	if (!qp || !ud_ready(qp) ||
	    !post_recv(qp, buf, kGrh + kMsg, mr->lkey)) {
		say(fd, "error setting up A's other process");
		return 1;
	}
	say(fd, "ready %u", qp->qp_num);
	commands(fd, [&](const char *cmd) {
		unsigned ms;
		long t = now_ms();

		if (sscanf(cmd, "recv %u", &ms) == 1) {
			say(fd, "recv %s", ud_recv(d.cq, buf, ms));
		} else if (!strcmp(cmd, "destroy")) {
			int ret = qp ? ibv_destroy_qp(qp) : EINVAL;
			if (!ret)
				qp = nullptr;
			say(fd, "destroyed %ld %d", now_ms() - t, ret);
		}
	});
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0, "A's other process: destroy QP");
	CHECK(ibv_dereg_mr(mr) == 0, "A's other process: dereg MR");
	d.close();
	free(buf);
	return failures ? 1 : 0;
}

namespace {

// A stream of READs, for the *odp_ahead_* tests: a responder's READ of 64
// KiB (a job's least) that begins where its last READ ended queues a job
// (sroce_odp's fault-ahead) for the next 64 KiB of the MR, its last.
const size_t kHead = 4096;	// the first READ
const size_t kStream = 64 * 1024;	// the second, and the job's range
const size_t kStreamMr = kHead + 2 * kStream;
const size_t kJobAt = kHead + kStream;	// where the job's range begins

// @n RC pairs of one process (a requester connected to a responder that
// grants remote reads), a pinned buffer the READs land in.
struct Streams {
	Dev d;
	std::vector<ibv_qp *> req, resp;
	uint8_t *buf = nullptr;
	ibv_mr *buf_mr = nullptr;

	bool setup(const char *devname, int n)
	{
		if (!d.open(devname, 4 * n) ||
		    !odp_can(d.ctx, IBV_QPT_RC, IBV_ODP_SUPPORT_READ))
			return false;
		for (int i = 0; i < n; i++) {
			ibv_qp *q = make_qp(d, IBV_QPT_RC, 4, 0);
			ibv_qp *r = q ? make_qp(d, IBV_QPT_RC, 1, 0) : nullptr;
			if (q)
				req.push_back(q);
			if (r)
				resp.push_back(r);
			if (!r || !rc_connect(d.ctx, q, r->qp_num) ||
			    !rc_connect(d.ctx, r, q->qp_num,
					IBV_ACCESS_REMOTE_READ))
				return false;
		}
		buf = static_cast<uint8_t *>(aligned_alloc(4096, kStream));
		buf_mr = buf ? ibv_reg_mr(d.pd, buf, kStream,
					  IBV_ACCESS_LOCAL_WRITE) : nullptr;
		CHECK(buf_mr, "MR of the READs' buffer: %s", strerror(errno));
		return buf_mr;
	}

	// On pair @i, a stream of two READs from @mr at @at: kHead bytes,
	// then kStream.
	int post(int i, ibv_mr *mr, const uint8_t *at)
	{
		ibv_sge sge[2] = { { uintptr_t(buf), uint32_t(kHead),
				     buf_mr->lkey },
				   { uintptr_t(buf), uint32_t(kStream),
				     buf_mr->lkey } };
		ibv_send_wr wr[2], *bad;

		for (int k = 0; k < 2; k++) {
			wr[k] = one_sge_wr(&sge[k], IBV_WR_RDMA_READ,
					   uint64_t(k));
			wr[k].wr.rdma.remote_addr =
				uintptr_t(at + (k ? kHead : 0));
			wr[k].wr.rdma.rkey = mr->rkey;
		}
		wr[0].next = &wr[1];
		return ibv_post_send(req[size_t(i)], wr, &bad);
	}

	// The @n READs' completions within @ms: 0, or what went wrong.
	int done(int n, long ms)
	{
		int bad, got = poll_some(d.cq, n, ms, 0, &bad);

		return got < n ? ETIMEDOUT : bad ? EIO : 0;
	}

	// The QPs (which stops their fault-ahead jobs), then the MRs: the
	// buffer's and @odp, if given, the caller's MR in the same PD; then
	// the PD, which may hold no MR by then (else EBUSY).
	void teardown(ibv_mr *odp = nullptr)
	{
		for (ibv_qp *qp : req)
			CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
		for (ibv_qp *qp : resp)
			CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
		if (buf_mr)
			CHECK(ibv_dereg_mr(buf_mr) == 0, "dereg MR");
		if (odp)
			CHECK(ibv_dereg_mr(odp) == 0, "A: dereg ODP MR");
		free(buf);
		d.close();
	}
};

// Pages of [p, p + len) present in this process's page tables.
int resident(const uint8_t *p, size_t len)
{
	std::vector<unsigned char> v(len / 4096);
	int n = 0;

	if (mincore(const_cast<uint8_t *>(p), len, v.data()))
		return -1;
	for (unsigned char c : v)
		n += c & 1;
	return n;
}

} // namespace

// V for the *odp_ahead_* tests, root: two RC pairs, then (after its QPs,
// as an application that registers as it goes: at its exit uverbs
// deregisters them before the QPs) two explicit ODP MRs over private
// anonymous memory it never touches. "stream": streamed ok, a stream of
// READs out of each MR through its pair, so that each responder queues
// its fault-ahead job (its MR's last 64 KiB); "resident": resident N, the
// pages of those ranges present (a job that ran faulted them in);
// "dereg": deregd MS RC, of the first MR; "rereg": reregd MS RC, the
// second's access changed (its translation retired).
int victim_ahead(int fd, const char *devname)
{
	Streams st;
	uint8_t *mem = nullptr;
	ibv_mr *mr[2] = {};
	const int access = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ;

	if (st.setup(devname, 2)) {
		void *m = mmap(nullptr, 2 * kStreamMr, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		mem = m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
		// Page by page: no huge page brings a job's range in early.
		if (mem)
			madvise(mem, 2 * kStreamMr, MADV_NOHUGEPAGE);
		for (int i = 0; mem && i < 2; i++)
			mr[i] = ibv_reg_mr(st.d.pd, mem + i * kStreamMr,
					   kStreamMr, access);
		CHECK(mr[0] && mr[1], "V's ODP MRs: %s", strerror(errno));
	}
	if (!mr[0] || !mr[1]) {
		say(fd, "error setting up the victim");
		return 1;
	}
	say(fd, "ready 2");
	commands(fd, [&](const char *cmd) {
		long t = now_ms();
		int ret = 0, n = 0;

		if (!strcmp(cmd, "stream")) {
			for (int i = 0; i < 2 && !ret; i++)
				ret = st.post(i, mr[i], mem + i * kStreamMr);
			ret = ret ?: st.done(4, 10000 * time_scale());
			if (ret)
				say(fd, "error stream %d", ret);
			else
				say(fd, "streamed ok");
		} else if (!strcmp(cmd, "resident")) {
			for (int i = 0; i < 2; i++)
				n += resident(mem + i * kStreamMr + kJobAt,
					      kStream);
			say(fd, "resident %d", n);
		} else if (!strcmp(cmd, "dereg")) {
			ret = ibv_dereg_mr(mr[0]);
			say(fd, "deregd %ld %d", now_ms() - t, ret);
			if (!ret)
				mr[0] = nullptr;
		} else if (!strcmp(cmd, "rereg")) {
			ret = ibv_rereg_mr(mr[1], IBV_REREG_MR_CHANGE_ACCESS,
					   nullptr, nullptr, 0,
					   access | IBV_ACCESS_LOCAL_WRITE);
			say(fd, "reregd %ld %d", now_ms() - t, ret);
		}
	});
	for (ibv_mr *m : mr)
		if (m)
			CHECK(ibv_dereg_mr(m) == 0, "V: dereg ODP MR");
	st.teardown();
	munmap(mem, 2 * kStreamMr);
	return failures ? 1 : 0;
}

// A for the *odp_ahead_* tests, nobody: @n RC pairs, and one ODP MR (read
// only) over 68 KiB of private anonymous memory, touched, with the FUSE
// file mapped right after it. "flood": flooded MS RC, a stream of READs
// on each pair: each responder's fault-ahead job for the MR's last 64
// KiB, the file's, waits in the fault (the read held): as many as A's
// bound of jobs lets queue, the others queue none. Again once those
// ended: a new stream on each pair.
int attacker_ahead(int fd, const char *devname, const std::string &file,
		   int n)
{
	Streams st;
	uint8_t *mem = nullptr;
	ibv_mr *mr = nullptr;

	if (become_nobody() && st.setup(devname, n)) {
		int f = ::open(file.c_str(), O_RDONLY);
		void *m = mmap(nullptr, kStreamMr, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void *tail = f < 0 || m == MAP_FAILED ? MAP_FAILED :
			mmap(static_cast<uint8_t *>(m) + kJobAt, kStream,
			     PROT_READ, MAP_SHARED | MAP_FIXED, f, 0);

		CHECK(tail != MAP_FAILED, "mapping %s after 68 KiB: %s",
		      file.c_str(), strerror(errno));
		if (f >= 0)
			::close(f);
		mem = m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
		if (tail != MAP_FAILED) {
			memset(mem, 1, kJobAt);
			mr = ibv_reg_mr(st.d.pd, mem, kStreamMr,
					IBV_ACCESS_ON_DEMAND |
						IBV_ACCESS_REMOTE_READ);
			CHECK(mr, "A's ODP MR: %s", strerror(errno));
		}
	}
	if (!mr) {
		say(fd, "error setting up the attacker");
		st.teardown();
		return 1;
	}
	say(fd, "ready %d", n);
	commands(fd, [&](const char *cmd) {
		long t = now_ms();
		int ret = 0;

		if (!strcmp(cmd, "flood")) {
			for (int i = 0; i < n && !ret; i++)
				ret = st.post(i, mr, mem);
			ret = ret ?: st.done(2 * n, 45000 * time_scale());
			say(fd, "flooded %ld %d", now_ms() - t, ret);
		}
	});
	st.teardown(mr);
	munmap(mem, kStreamMr);
	return failures ? 1 : 0;
}

namespace {

// release_*'s A: the bytes of the SEND from the FUSE page; A's anonymous
// memory its storm invalidates, the part of it an ODP MR covers (one
// chunk at most: an ODP range of more is reached through children, each
// with its own MMU notifier, made only as accesses need them), and the
// storm's threads.
const uint32_t kPage = 1024;
const size_t kStormLen = 512 << 20;
const size_t kStormMr = 1 << 20;
const int kStormThreads = 16;

// A's parts for release_*, each set up before any stall (see
// attacker_release()).
struct ReleaseStall {
	Dev d;
	uint8_t *map = nullptr;	// the FUSE file, mapped read-only
	// For each try: an ODP MR over the file, a child that deregisters it
	// when told (a byte on its pipe), and whether it was told (the MR is
	// the child's then)
	ibv_mr *mrs[kReleaseTries] = {};
	pid_t children[kReleaseTries];
	int go[kReleaseTries];
	bool told[kReleaseTries] = {};
	ibv_qp *qp1 = nullptr, *qp2 = nullptr;
	uint8_t *buf = nullptr;
	ibv_mr *buf_mr = nullptr;
	uint8_t *storm = nullptr;
	ibv_mr *storm_mr = nullptr;
	// The storm's threads: 0, wait; 1, invalidate; 2, end (all threads).
	std::atomic<int> phase{ 0 };
	// The try whose MR the poster's next SEND is from, or -1.
	std::atomic<int> post_now{ -1 };
	std::atomic<bool> posted{ false };
	std::atomic<int> post_ret{ -1 };
	std::atomic<pid_t> poster{ 0 };
	std::atomic<long> calls[kStormThreads] = {};
	std::atomic<int> in_call{ 0 };	// threads in a call, or about to be
	std::atomic<int> storm_err{ 0 };	// a call's errno, the first
	std::vector<std::thread> threads;

	ReleaseStall()
	{
		std::fill(std::begin(children), std::end(children), -1);
		std::fill(std::begin(go), std::end(go), -1);
	}

	bool setup(const char *devname, const std::string &file)
	{
		// No huge page makes a storm's call short (nor a huge zero
		// page its page tables), and khugepaged, which write-locks
		// the mmap lock, leaves A alone.
		CHECK(!prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0),
		      "PR_SET_THP_DISABLE: %s", strerror(errno));
		if (!become_nobody() || !d.open(devname, 16) ||
		    !odp_can(d.ctx, IBV_QPT_RC, IBV_ODP_SUPPORT_SEND))
			return false;
		map = map_file(file, false);
		if (!map)
			return false;
		for (int i = 0; i < kReleaseTries; i++) {
			mrs[i] = ibv_reg_mr(d.pd, map, StallFs::kLen,
					    IBV_ACCESS_ON_DEMAND);
			CHECK(mrs[i], "ODP MR %d over %s: %s", i, file.c_str(),
			      strerror(errno));
			if (!mrs[i])
				return false;
		}
		buf = static_cast<uint8_t *>(aligned_alloc(4096, 4096));
		buf_mr = buf ? ibv_reg_mr(d.pd, buf, 4096,
					  IBV_ACCESS_LOCAL_WRITE) : nullptr;
		CHECK(buf_mr, "A's receive buffer's MR: %s", strerror(errno));
		qp1 = buf_mr ? make_qp(d, IBV_QPT_RC, 4, 0) : nullptr;
		qp2 = qp1 ? make_qp(d, IBV_QPT_RC, 4, 0) : nullptr;
		if (!qp2 || !rc_connect(d.ctx, qp1, qp2->qp_num) ||
		    !rc_connect(d.ctx, qp2, qp1->qp_num))
			return false;
		// The children, now: a fork write-locks A's mmap lock.
		for (int i = 0; i < kReleaseTries; i++)
			if (!fork_child(i))
				return false;
		return make_storm();
	}

	// Try @i's child: when told, it deregisters mrs[@i] (on the uverbs
	// file it shares with A).
	bool fork_child(int i)
	{
		int pipefd[2];

		if (pipe2(pipefd, O_CLOEXEC)) {
			CHECK(false, "pipe: %s", strerror(errno));
			return false;
		}
		children[i] = fork();
		if (children[i] == 0) {
			char c;

			close(pipefd[1]);
			close(3);	// the test's socket is A's
			for (int j = 0; j < i; j++)
				close(go[j]);
			if (read(pipefd[0], &c, 1) != 1)
				_exit(3);
			_exit(ibv_dereg_mr(mrs[i]) ? 1 : 0);
		}
		close(pipefd[0]);
		go[i] = pipefd[1];
		CHECK(children[i] > 0, "fork: %s", strerror(errno));
		return children[i] > 0;
	}

	// The storm's memory, every page of it mapped (the zero page, read
	// faults of private anonymous memory: page tables, and no memory
	// that reclaim could take), with an ODP MR over its start; the
	// threads, waiting.
	bool make_storm()
	{
		void *mem = mmap(nullptr, kStormLen, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);

		CHECK(mem != MAP_FAILED, "mmap: %s", strerror(errno));
		if (mem == MAP_FAILED)
			return false;
		storm = static_cast<uint8_t *>(mem);
		if (madvise(storm, kStormLen, MADV_POPULATE_READ)) {
			// Before 5.14: a read of each page.
			volatile uint8_t sum = 0;
			for (size_t at = 0; at < kStormLen; at += 4096)
				sum = sum + storm[at];
		}
		std::vector<unsigned char> in(kStormLen / 4096);
		CHECK(!mincore(storm, kStormLen, in.data()),
		      "mincore: %s", strerror(errno));
		size_t mapped = std::count_if(in.begin(), in.end(),
					      [](unsigned char c) { return c & 1; });
		CHECK(mapped == in.size(), "the storm's memory: %zu of its %zu "
		      "pages mapped; expected all (the zero page)", mapped,
		      in.size());
		storm_mr = ibv_reg_mr(d.pd, storm, kStormMr,
				      IBV_ACCESS_ON_DEMAND |
					      IBV_ACCESS_LOCAL_WRITE);
		CHECK(storm_mr, "A's ODP MR over its storm's memory: %s",
		      strerror(errno));
		if (!storm_mr || mapped != in.size())
			return false;
		threads.emplace_back([this] { post(); });
		for (int i = 0; i < kStormThreads; i++)
			threads.emplace_back([this, i] { invalidate(i); });
		return wait_for([this] { return poster.load() > 0; },
				10000 * time_scale());
	}

	// The poster: when told a try, one SEND of the FUSE page's first
	// kPage bytes out of that try's MR, qp1 to qp2; its doorbell faults
	// on the page.
	void post()
	{
		poster = pid_t(gettid());
		for (;;) {
			int i;
			while ((i = post_now) < 0 && phase != 2)
				usleep(1000);
			if (phase == 2)
				return;
			ibv_sge sge = { uintptr_t(map), kPage, mrs[i]->lkey };
			ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_SEND, 1), *bad;
			post_ret = ibv_post_send(qp1, &wr, &bad);
			post_now = -1;
			posted = true;
		}
	}

	// Try @i's SEND: a receive for it posted, then the poster told.
	bool post_try(int i)
	{
		if (i < 0 || i >= kReleaseTries || !mrs[i] || told[i] ||
		    post_now >= 0)
			return false;
		memset(buf, 0, kPage);
		if (!post_recv(qp2, buf, kPage, buf_mr->lkey))
			return false;
		posted = false;
		post_now = i;
		return true;
	}

	// A storm's thread: when told, madvise(MADV_FREE) over all of the
	// storm's memory, again and again, each call an invalidation of A's
	// mm over the ODP MR's range that lasts its walk of the range's
	// page tables (every entry the zero page, which the call leaves as
	// it is, so the next call walks them all again), and is between two
	// calls for a moment only. At nice 19, SCHED_OTHER: preempted
	// wherever it is, mostly inside a call, and the other tests' work
	// goes first.
	void invalidate(int i)
	{
		CHECK(!setpriority(PRIO_PROCESS, pid_t(gettid()), 19),
		      "nice 19 for the storm: %s", strerror(errno));
		while (phase != 2) {
			// Counted before phase is read: once calm() saw none,
			// none starts a call (sequentially consistent).
			in_call++;
			if (phase != 1) {
				in_call--;
				usleep(1000);
				continue;
			}
			if (madvise(storm, kStormLen, MADV_FREE) && !storm_err)
				storm_err = errno;
			calls[i]++;
			in_call--;
		}
	}

	// The storm on: true once each thread made two calls more, within
	// @ms.
	bool start_storm(long ms)
	{
		long from[kStormThreads];

		for (int i = 0; i < kStormThreads; i++)
			from[i] = calls[i];
		phase = 1;
		return wait_for([&] {
			for (int i = 0; i < kStormThreads; i++)
				if (calls[i] < from[i] + 2)
					return false;
			return true;
		}, ms) && !storm_err;
	}

	// The storm off: true once no thread is in a call (its last one
	// ended), within @ms. Then no invalidation of the storm's is under
	// way: one under way holds the mm's invalidate_seq at its odd
	// value, and a sub that another invalidation (the file's pages
	// dropped) set to that value would have its next access wait in
	// mmu_interval_read_begin() until the storm stops.
	bool calm(long ms)
	{
		phase = 0;
		return wait_for([&] { return in_call == 0; }, ms);
	}

	long storm_calls()
	{
		long n = 0;

		for (const std::atomic<long> &c : calls)
			n += c;
		return n;
	}

	// Whether @done() within @ms (polled every ms, allocating nothing).
	template <class F> static bool wait_for(F done, long ms)
	{
		for (long end = now_ms() + ms; !done(); usleep(1000))
			if (now_ms() >= end)
				return false;
		return true;
	}

	// "posted MS": within @ms the poster's return, the completions of
	// the SEND and its receive (how many, how many failed) and the bytes
	// of the receive that are not the file's.
	void report_posted(int fd, long ms)
	{
		int bad = 0, got = 0;
		size_t stray = 0;

		if (wait_for([this] { return posted.load(); }, ms))
			got = poll_some(d.cq, 2, ms, 0, &bad);
		for (uint32_t i = 0; i < kPage; i++)
			stray += buf[i] != StallFs::byte_at(i);
		say(fd, "posted %d %d %d %zu", post_ret.load(), got, bad, stray);
	}

	void teardown()
	{
		phase = 2;
		for (std::thread &t : threads)
			t.join();
		for (int i = 0; i < kReleaseTries; i++) {
			if (children[i] > 0) {
				kill(children[i], SIGKILL);
				waitpid(children[i], nullptr, 0);
			}
			if (go[i] >= 0)
				close(go[i]);
		}
		for (ibv_qp *qp : { qp1, qp2 })
			if (qp)
				CHECK(ibv_destroy_qp(qp) == 0, "A: destroy QP");
		if (buf_mr)
			CHECK(ibv_dereg_mr(buf_mr) == 0, "A: dereg MR");
		if (storm_mr)
			CHECK(ibv_dereg_mr(storm_mr) == 0, "A: dereg ODP MR");
		free(buf);
		if (storm)
			munmap(storm, kStormLen);
		// A try's MR went with its child's dereg (killed or not).
		for (int i = 0; i < kReleaseTries; i++)
			if (mrs[i] && !told[i])
				CHECK(ibv_dereg_mr(mrs[i]) == 0,
				      "A: dereg ODP MR %d", i);
		if (map)
			munmap(map, StallFs::kLen);
		d.close();
	}
};

} // namespace

// A for release_*, nobody: makes one release of its own wait, and with it
// A's user's release work item. kReleaseTries ODP MRs over the FUSE file,
// one for each try; two RC QPs of A's connected to each other; a thread
// that, told a try, posts a SEND of the FUSE page from the first out of
// that try's MR, into a receive of the second in pinned memory (its
// doorbell waits in the fault, the read held, and its access holds the
// MR's map); for each try a child, forked before any stall (a fork
// write-locks A's mmap lock, which the stalled fault holds for reading),
// that deregisters the try's MR when told (its dereg waits for that
// access; killed there, it orphans the map, and the access's last put
// queues the ODP range's release once the read is answered); and
// kStormThreads threads that, told, call madvise(MADV_FREE) over 512 MiB
// of A's memory whose every page is mapped, to the zero page, the first 1
// MiB of it an ODP MR of A's, without end: each call an invalidation over
// an ODP range, as long as its walk of 131072 page table entries, and
// with several under way at once A's mm never stops invalidating, so the
// release's removal of its MMU notifier (ib_umem_odp_release(),
// mmu_interval_notifier_remove()) waits until they stop, as DESIGN's
// premise of an owner that keeps its mm invalidating. (Nothing an
// unprivileged user can do holds one invalidation open, deterministically:
// sroce's notifier takes only the umem's mutex, which no one holds across
// a fault, and no call of mm's waits for anything of the user's between
// an invalidation's start and end. Hence a storm, and tries.) Nothing
// allocates once set up: a task that wanted A's mmap lock for writing
// would wait behind the stalled fault, the storm's calls, which take it
// for reading, behind that task, and A's mm would stop invalidating.
// "post I": posting TID (the poster's thread), try I's SEND; "dereg I":
// dereg PID (try I's child, told to deregister); "kill I": killed STATUS
// (its wait status); "storm": storming CALLS ERRNO, once each thread made
// two calls more (ERRNO: the first that failed, if one did; then it is
// an error); "calm": calm CALLS, the storm stopped, no call under way;
// "posted MS": posted RET GOT BAD STRAY, as report_posted() says, of the
// last try's SEND.
int attacker_release(int fd, const char *devname, const std::string &file)
{
	ReleaseStall r;

	if (!r.setup(devname, file)) {
		say(fd, "error setting up the attacker");
		r.teardown();
		return 1;
	}
	say(fd, "ready %d", int(getpid()));
	commands(fd, [&](const char *cmd) {
		unsigned ms;
		int i = -1;
		int status = -1;

		if (sscanf(cmd, "post %d", &i) == 1) {
			bool ok = r.post_try(i);
			say(fd, ok ? "posting %d" : "error posting %d",
			    int(r.poster));
		} else if (sscanf(cmd, "dereg %d", &i) == 1) {
			bool ok = i >= 0 && i < kReleaseTries &&
				  r.children[i] > 0 && !r.told[i];
			if (ok)
				r.told[i] = write(r.go[i], "g", 1) == 1;
			say(fd, ok && r.told[i] ? "dereg %d" : "error dereg %d",
			    ok ? int(r.children[i]) : -1);
		} else if (sscanf(cmd, "kill %d", &i) == 1) {
			// Never kill(-1): the child, once.
			pid_t c = i >= 0 && i < kReleaseTries ? r.children[i] : -1;
			if (c > 0 && !kill(c, SIGKILL) &&
			    waitpid(c, &status, 0) == c)
				r.children[i] = -1;
			say(fd, c > 0 && r.children[i] < 0 ? "killed %d" :
							    "error killed %d",
			    status);
		} else if (!strcmp(cmd, "storm")) {
			bool on = r.start_storm(30000 * time_scale());
			say(fd, on ? "storming %ld %d" : "error storming %ld %d",
			    r.storm_calls(), r.storm_err.load());
		} else if (!strcmp(cmd, "calm")) {
			bool off = r.calm(30000 * time_scale());
			say(fd, off ? "calm %ld" : "error calm %ld",
			    r.storm_calls());
		} else if (sscanf(cmd, "posted %u", &ms) == 1) {
			r.report_posted(fd, ms);
		}
	});
	r.teardown();
	return failures ? 1 : 0;
}

namespace {

// The AnonHugePages of the mapping that holds @addr (/proc/self/smaps), in
// KiB: how much of it huge pages map (PMD-mapped); -1 if not found.
long anon_huge_kb(const void *addr)
{
	std::ifstream f("/proc/self/smaps");
	std::string line;
	const unsigned long a = uintptr_t(addr);
	bool in = false;

	while (std::getline(f, line)) {
		unsigned long lo, hi;

		if (sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= a && a < hi;
		else if (in && line.rfind("AnonHugePages:", 0) == 0)
			return atol(line.c_str() + strlen("AnonHugePages:"));
	}
	return -1;
}

// A buffer of one transparent huge page, for release_backlog_bound's
// orphan of a small MR over one (the MR pins the page, and with it the
// whole huge page): aligned to its size, MADV_HUGEPAGE (a huge page at the
// first touch whatever THP's "enabled" but "never", compacting memory for
// it as THP's "defrag" allows: by default it does), MADV_DONTFORK (the
// orphan's fork of its dereg neither copies it nor splits its mapping into
// small ones, so its AnonHugePages stays what it was), touched.
struct HugeBuf {
	uint8_t *map = nullptr, *data = nullptr;
	size_t size = 0;

	~HugeBuf()
	{
		if (map)
			munmap(map, 2 * size);
	}

	// Empty, or why there is no huge page here.
	std::string make()
	{
		std::string dir = "/sys/kernel/mm/transparent_hugepage/";
		std::string sz = tasks::slurp(dir + "hpage_pmd_size");
		std::string on = tasks::slurp(dir + "enabled");

		if (sz.empty() || on.empty())
			return "this kernel has no transparent huge pages (no " +
			       dir + ")";
		if (on.find("[never]") != std::string::npos)
			return "transparent huge pages are off (" + dir +
			       "enabled: never)";
		size = strtoul(sz.c_str(), nullptr, 10);
		void *m = mmap(nullptr, 2 * size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (!size || m == MAP_FAILED)
			return "mmap of twice " + sz + ": " + strerror(errno);
		map = static_cast<uint8_t *>(m);
		data = map + (size - uintptr_t(map) % size) % size;
		if (madvise(data, size, MADV_HUGEPAGE))
			return std::string("MADV_HUGEPAGE: ") + strerror(errno);
		CHECK(!madvise(data, size, MADV_DONTFORK), "MADV_DONTFORK: %s",
		      strerror(errno));
		memset(data, 0x11, size);
		long kb = anon_huge_kb(data);
		if (kb < long(size / 1024))
			return "no huge page for the buffer (AnonHugePages " +
			       std::to_string(kb) + " kB of " +
			       std::to_string(size / 1024) +
			       "): memory too fragmented";
		return "";
	}
};

} // namespace

// A2 (nobody, as A: one user) and V (root) for release_*: each orphans a
// pinned MR of its own (orphan.h), the test holding the access: a pair of
// QPs of its own (MTU 4096), an MR of 1 MiB over its own buffer
// (MADV_NOHUGEPAGE: 256 small pages, whatever THP's setting and the
// mappings beside it), a's stream of WRITEs into it and a forked child's
// dereg of it. "thp": thp KB [WHY], a buffer of one transparent huge page
// (HugeBuf) made, KB its AnonHugePages, or 0 and why there is none;
// "thpkb": thpkb KB, its AnonHugePages now; "orphan [thp]": held, or
// error: the MR registered (with "thp" a kChunk MR over the start of the
// huge page), the stream started and seen held (the test armed the hold:
// its first WRITE's access keeps the map, no WRITE completes); "dereg":
// dereg PID, the child that deregisters the MR forked; "kill": killed
// STATUS, the child SIGKILLed and reaped (its wait status), the stream
// stopped, the QPs back in RTS; "vmpin": vmpin KB, its pinned memory
// (its process's: it registered); "reg": reg ERRNO, a new MR over 64 KiB
// of its memory (0: registered, then deregistered); "bytes": bytes N,
// the bytes of the last orphaned MR's buffer that are neither its old one
// nor what the stream wrote there.
int orphaner(int fd, const char *devname, bool nobody)
{
	using namespace xfer::orphan;
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	// Room to pin the pair's buffers and the MRs (RLIMIT_MEMLOCK binds
	// a user without CAP_IPC_LOCK), raised while root.
	const rlimit lock = { 64 << 20, 64 << 20 };
	xfer::Pair p;
	xfer::Buf target(kLen), extra(kChunk);
	HugeBuf huge;
	uint8_t *orphaned = target.data();
	size_t orphaned_len = kLen;

	p.mtu = IBV_MTU_4096;
	CHECK(!setrlimit(RLIMIT_MEMLOCK, &lock), "RLIMIT_MEMLOCK: %s",
	      strerror(errno));
	CHECK(!madvise(target.whole().data(), target.whole().size(),
		       MADV_NOHUGEPAGE), "MADV_NOHUGEPAGE: %s", strerror(errno));
	if ((nobody && !become_nobody()) ||
	    !(p.ctx = open_device(devname)) || !xfer::setup(p) ||
	    xfer::port_counter(p, "release_queued") < 0) {
		CHECK(!p.ctx || xfer::port_counter(p, "release_queued") >= 0,
		      "%s counts no release_queued", devname);
		say(fd, "error setting up the orphaner");
		if (p.ctx) {
			xfer::teardown(p);
			ibv_close_device(p.ctx);
		}
		return 1;
	}
	memset(target.data(), 0x11, kLen);
	xfer::fill(p.a, 0, kChunk, 0x7e);
	say(fd, "ready %d", int(getpid()));
	std::unique_ptr<Round> round;
	commands(fd, [&](const char *cmd) {
		if (!strcmp(cmd, "orphan") || !strcmp(cmd, "orphan thp")) {
			bool thp = !strcmp(cmd, "orphan thp") && huge.data;
			orphaned = thp ? huge.data : target.data();
			orphaned_len = thp ? kChunk : kLen;
			round.reset();
			round = std::make_unique<Round>(p, [&] {
				return ibv_reg_mr_iova(p.b.pd, orphaned,
						       orphaned_len, kIova,
						       access);
			});
			bool held = round->ok() && round->held();
			if (!held)
				round.reset();
			say(fd, held ? "held" : "error the stream not held");
		} else if (!strcmp(cmd, "dereg")) {
			pid_t child = round ? round->dereg() : -1;
			say(fd, child > 0 ? "dereg %d" : "error dereg %d",
			    int(child));
		} else if (!strcmp(cmd, "kill")) {
			int status = round ? round->kill() : -1;
			round.reset();
			say(fd, "killed %d", status);
		} else if (!strcmp(cmd, "thp")) {
			std::string why = huge.make();
			say(fd, "thp %ld %s",
			    why.empty() ? anon_huge_kb(huge.data) : 0L,
			    why.c_str());
		} else if (!strcmp(cmd, "thpkb")) {
			say(fd, "thpkb %ld",
			    huge.data ? anon_huge_kb(huge.data) : -1L);
		} else if (!strcmp(cmd, "vmpin")) {
			say(fd, "vmpin %ld",
			    xfer::proc_kb("/proc/self/status", "VmPin:"));
		} else if (!strcmp(cmd, "reg")) {
			ibv_mr *mr = ibv_reg_mr(p.b.pd, extra.data(), kChunk,
						access);
			int err = mr ? 0 : errno;
			if (mr)
				CHECK(ibv_dereg_mr(mr) == 0, "dereg MR");
			say(fd, "reg %d", err);
		} else if (!strcmp(cmd, "bytes")) {
			say(fd, "bytes %zu",
			    stray_bytes(orphaned, orphaned_len, 0x11, p.a));
		}
	});
	round.reset();
	xfer::teardown(p);
	ibv_close_device(p.ctx);
	return failures ? 1 : 0;
}

} // namespace stall
