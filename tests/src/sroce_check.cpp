// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-check: verbs-level checks used by the test cases in tests/cases.
// Each subcommand opens the device through libibverbs exactly as an
// application would, checks what it promises, prints what it found, and
// exits 0 only if every check held. Failures say what was expected and what
// came back.
//
//   sroce-check attrs DEV            device/port attributes and invariants
//   sroce-check port DEV             "state=N active_mtu=N phys_state=N"
//   sroce-check gids DEV             one line per valid GID: "IDX GID TYPE"
//   sroce-check events DEV N SECS    wait for N async events, print them
//   sroce-check pds DEV NCTX NPD     NPD PDs in each of NCTX contexts
//   sroce-check limit DEV KIND N     max_pd, max_cq, max_ah, max_srq,
//                                    max_mcast_grp, max_mcast_qp_attach
//                                    (KIND pd|cq|ah|srq|mcast|attach) exact
//                                    and enforced (ENOMEM); N of them held
//                                    by the kernel already
//   sroce-check cq DEV               CQ create/resize/arm/channel and errnos
//   sroce-check mr DEV               MR keys, errnos, read-only, 1 GiB
//   sroce-check qp DEV               QP limits, state machine, attributes,
//                                    posting rules, flush in the error state
//   sroce-check hold DEV NPD         hold a context, NPD PDs, a CQ, an MR, a QP
//                                    until the device goes away (DEVICE_FATAL)
//   sroce-check kmem DEV [DEV2]      the kernel memory bounds: per user (on
//                                    both devices together), per device,
//                                    counted and reported (root; sets the
//                                    module's parameters)
#include "check.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <set>
#include <sys/mman.h>
#include <sys/mount.h>
#include <span>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Owns an open device context.
class Context {
public:
	explicit Context(const char *name) : ctx_(open_device(name))
	{
		if (!ctx_)
			fprintf(stderr, "cannot open %s: %s\n", name,
				strerror(errno));
	}
	~Context()
	{
		if (ctx_ && ibv_close_device(ctx_))
			fprintf(stderr, "ibv_close_device: %s\n",
				strerror(errno));
	}
	Context(const Context &) = delete;
	Context &operator=(const Context &) = delete;
	Context(Context &&o) noexcept : ctx_(o.ctx_) { o.ctx_ = nullptr; }

	ibv_context *get() const { return ctx_; }
	explicit operator bool() const { return ctx_; }

private:
	ibv_context *ctx_ = nullptr;
};

const char *gid_type_name(ibv_gid_type t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCEv1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCEv2";
	}
	return "?";
}

int cmd_attrs(const char *dev)
{
	Context ctx(dev);
	if (!ctx)
		return 1;

	ibv_device_attr_ex ax{};
	int ret = ibv_query_device_ex(ctx.get(), nullptr, &ax);
	CHECK(ret == 0, "ibv_query_device_ex returned %d", ret);
	const ibv_device_attr &a = ax.orig_attr;
	CHECK(!strcmp(a.fw_ver, "0.1.0"), "fw_ver \"%s\"", a.fw_ver);
	CHECK(a.vendor_id == 0xffffff, "vendor_id 0x%x", a.vendor_id);
	CHECK(a.phys_port_cnt == 1, "phys_port_cnt %u", a.phys_port_cnt);
	CHECK(a.node_guid != 0, "node_guid is 0");
	CHECK(a.sys_image_guid == a.node_guid, "sys_image_guid differs");
	CHECK(a.max_pd == 65536, "max_pd %d", a.max_pd);
	CHECK(a.max_pkeys == 1, "max_pkeys %u", a.max_pkeys);
	CHECK(a.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT,
	      "PORT_ACTIVE_EVENT not advertised (flags 0x%x)",
	      a.device_cap_flags);

	// On-demand paging: exactly what a test proves (a kernel without
	// ODP: nothing). RC: tests/cases/mr_odp.sh and rdma-core's test_odp
	// (SRQ); UC: odp_write_recv; UD: test_odp_ud_traffic; XRC:
	// test_odp_xrc_traffic.
	const ibv_odp_caps &o = ax.odp_caps;
	if (o.general_caps & IBV_ODP_SUPPORT) {
		CHECK(o.general_caps == (IBV_ODP_SUPPORT |
					 IBV_ODP_SUPPORT_IMPLICIT),
		      "odp general_caps 0x%llx",
		      (unsigned long long)o.general_caps);
		const uint32_t sr = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
		const uint32_t rc = sr | IBV_ODP_SUPPORT_WRITE |
				    IBV_ODP_SUPPORT_READ |
				    IBV_ODP_SUPPORT_ATOMIC |
				    IBV_ODP_SUPPORT_SRQ_RECV;
		const uint32_t xrc = IBV_ODP_SUPPORT_SEND |
				     IBV_ODP_SUPPORT_SRQ_RECV;
		CHECK(o.per_transport_caps.rc_odp_caps == rc,
		      "rc_odp_caps 0x%x", o.per_transport_caps.rc_odp_caps);
		CHECK(o.per_transport_caps.uc_odp_caps ==
			      (sr | IBV_ODP_SUPPORT_WRITE),
		      "uc_odp_caps 0x%x", o.per_transport_caps.uc_odp_caps);
		CHECK(o.per_transport_caps.ud_odp_caps == sr,
		      "ud_odp_caps 0x%x", o.per_transport_caps.ud_odp_caps);
		CHECK(ax.xrc_odp_caps == xrc, "xrc_odp_caps 0x%x",
		      ax.xrc_odp_caps);
	} else {
		CHECK(!o.general_caps && !o.per_transport_caps.rc_odp_caps &&
			      !o.per_transport_caps.uc_odp_caps &&
			      !o.per_transport_caps.ud_odp_caps &&
			      !ax.xrc_odp_caps,
		      "ODP capabilities without IBV_ODP_SUPPORT");
	}

	ibv_port_attr p{};
	ret = ibv_query_port(ctx.get(), 1, &p);
	CHECK(ret == 0, "ibv_query_port(1) returned %d", ret);
	CHECK(p.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer %u",
	      p.link_layer);
	CHECK(p.max_mtu == IBV_MTU_4096, "max_mtu %d", p.max_mtu);
	CHECK(p.gid_tbl_len == 1024, "gid_tbl_len %d", p.gid_tbl_len);
	CHECK(p.pkey_tbl_len == 1, "pkey_tbl_len %u", p.pkey_tbl_len);
	CHECK(p.lid == 0, "lid %u on RoCE", p.lid);

	ret = ibv_query_port(ctx.get(), 2, &p);
	CHECK(ret != 0, "ibv_query_port(2) succeeded on a one-port device");

	uint16_t pkey = 0;
	ret = ibv_query_pkey(ctx.get(), 1, 0, &pkey);
	CHECK(ret == 0 && pkey == htons(0xffff), "pkey[0] ret %d value 0x%x",
	      ret, ntohs(pkey));
	ret = ibv_query_pkey(ctx.get(), 1, 1, &pkey);
	CHECK(ret != 0, "pkey[1] exists in a one-entry table");

	ibv_gid_entry e{};
	ret = ibv_query_gid_ex(ctx.get(), 1, 0, &e, 0);
	CHECK(ret == 0, "gid[0] query returned %d", ret);
	CHECK(e.gid_type == IBV_GID_TYPE_ROCE_V2, "gid[0] type %u", e.gid_type);
	printf("fw_ver=%s node_guid=%016llx\n", a.fw_ver,
	       (unsigned long long)be64toh(a.node_guid));
	return failures ? 1 : 0;
}

int cmd_port(const char *dev)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	ibv_port_attr p{};
	int ret = ibv_query_port(ctx.get(), 1, &p);
	CHECK(ret == 0, "ibv_query_port returned %d", ret);
	printf("state=%d active_mtu=%d phys_state=%u\n", p.state, p.active_mtu,
	       p.phys_state);
	return failures ? 1 : 0;
}

int cmd_gids(const char *dev)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	std::vector<ibv_gid_entry> table(1024);
	ssize_t n = ibv_query_gid_table(ctx.get(), table.data(), table.size(),
					0);
	CHECK(n >= 0, "ibv_query_gid_table returned %zd (errno %d)", n, errno);
	for (ssize_t i = 0; i < n; i++) {
		char buf[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, table[i].gid.raw, buf, sizeof(buf));
		printf("%u %s %s\n", table[i].gid_index, buf,
		       gid_type_name(ibv_gid_type(table[i].gid_type)));
	}
	return failures ? 1 : 0;
}

int cmd_events(const char *dev, int count, int secs)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < count; i++) {
		ibv_async_event ev;
		if (!next_async_event(ctx.get(), secs * 1000, &ev))
			return 1;
		printf("event %s port %d\n", ibv_event_type_str(ev.event_type),
		       ev.element.port_num);
		fflush(stdout);
	}
	return 0;
}

int cmd_pds(const char *dev, int nctx, int npd)
{
	std::vector<Context> ctxs;
	std::vector<ibv_pd *> pds;
	for (int c = 0; c < nctx; c++) {
		ctxs.emplace_back(dev);
		if (!ctxs.back())
			return 1;
		for (int i = 0; i < npd; i++) {
			ibv_pd *pd = ibv_alloc_pd(ctxs.back().get());
			CHECK(pd, "ibv_alloc_pd #%d in context %d: %s", i, c,
			      strerror(errno));
			if (!pd)
				break;
			CHECK(pd->context == ctxs.back().get(),
			      "PD bound to the wrong context");
			pds.push_back(pd);
		}
	}
	for (size_t i = 0; i < pds.size(); i++)
		for (size_t j = i + 1; j < pds.size(); j++)
			if (pds[i]->context == pds[j]->context)
				CHECK(pds[i]->handle != pds[j]->handle,
				      "two PDs share handle %u",
				      pds[i]->handle);
	for (ibv_pd *pd : pds) {
		int ret = ibv_dealloc_pd(pd);
		CHECK(ret == 0, "ibv_dealloc_pd returned %d", ret);
	}
	printf("allocated %zu PDs in %d contexts\n", pds.size(), nctx);
	return failures ? 1 : 0;
}

// Allocates objects until the device refuses: it must refuse with ENOMEM at
// exactly @limit (what query_device reported), and allocate again once one
// is freed.
template <typename Alloc, typename Release>
int check_limit(const char *what, int limit, Alloc alloc, Release release)
{
	using obj = decltype(alloc());
	std::vector<obj> objs;
	obj o;
	while (objs.size() <= size_t(limit) && (o = alloc()))
		objs.push_back(o);
	int err = errno;
	CHECK(objs.size() == size_t(limit), "created %zu %ss, limit %d",
	      objs.size(), what, limit);
	CHECK(err == ENOMEM, "%s past the limit: errno %d (%s), expected ENOMEM",
	      what, err, strerror(err));
	if (!objs.empty()) {
		CHECK(release(objs.back()) == 0, "freeing a %s", what);
		objs.pop_back();
		o = alloc();
		CHECK(o, "no %s after freeing one: %s", what, strerror(errno));
		if (o)
			objs.push_back(o);
	}
	for (obj x : objs)
		CHECK(release(x) == 0, "freeing a %s", what);
	printf("%s limit %d enforced\n", what, limit);
	return failures ? 1 : 0;
}

// max_ah: AHs to this port's own GID.
int limit_ah(ibv_context *c, int limit)
{
	ibv_pd *pd = ibv_alloc_pd(c);
	if (!pd)
		return 1;
	ibv_ah_attr aa{};
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	CHECK(ibv_query_gid(c, 1, 1, &aa.grh.dgid) == 0, "query GID 1");
	int ret = check_limit("AH", limit,
			      [pd, &aa] { return ibv_create_ah(pd, &aa); },
			      [](ibv_ah *ah) { return ibv_destroy_ah(ah); });
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
	return ret;
}

// The multicast group ff0e::@n (n from 1).
ibv_gid mcast_gid(uint32_t n)
{
	ibv_gid g{};
	g.raw[0] = 0xff;
	g.raw[1] = 0x0e;
	memcpy(&g.raw[12], &n, 4);
	return g;
}

// max_mcast_grp (@groups: one UD QP attached to that many groups) or
// max_mcast_qp_attach (that many UD QPs attached to one group).
int limit_mcast(ibv_context *c, ibv_pd *pd, int limit, bool groups)
{
	ibv_cq *cq = ibv_create_cq(c, 1, nullptr, nullptr, 0);
	if (!cq)
		return 1;
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap = { 1, 1, 1, 1, 0 };
	ibv_qp *qp = groups ? ibv_create_qp(pd, &ia) : nullptr;
	CHECK(!groups || qp, "UD QP: %s", strerror(errno));
	if (groups && !qp) {
		ibv_destroy_cq(cq);
		return 1;
	}
	uint32_t next = 0;
	int ret;

	if (groups) {
		// An object is a group's number, 1 on.
		ret = check_limit(
			"multicast group", limit,
			[qp, &next]() -> uintptr_t {
				ibv_gid g = mcast_gid(++next);
				int err = ibv_attach_mcast(qp, &g, 0);
				errno = err;
				return err ? 0 : next;
			},
			[qp](uintptr_t n) {
				ibv_gid g = mcast_gid(uint32_t(n));
				return ibv_detach_mcast(qp, &g, 0);
			});
		CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
	} else {
		ibv_gid g = mcast_gid(1);
		ret = check_limit(
			"QP attached to a group", limit,
			[pd, &ia, &g]() -> ibv_qp * {
				ibv_qp *q = ibv_create_qp(pd, &ia);
				int err = q ? ibv_attach_mcast(q, &g, 0) : errno;
				if (q && err) {
					ibv_destroy_qp(q);
					q = nullptr;
				}
				errno = err;
				return q;
			},
			[&g](ibv_qp *q) {
				return ibv_detach_mcast(q, &g, 0) ?:
					       ibv_destroy_qp(q);
			});
	}
	CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	return ret;
}

// @in_use: objects of that kind the kernel already holds on the device
// (ib_mad's PD and CQ), which count against the same limit.
int cmd_limit(const char *dev, std::string_view kind, int in_use)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	ibv_context *c = ctx.get();
	ibv_device_attr a{};
	if (ibv_query_device(c, &a))
		return 1;
	if (kind == "pd")
		return check_limit("PD", a.max_pd - in_use,
				   [c] { return ibv_alloc_pd(c); },
				   [](ibv_pd *pd) { return ibv_dealloc_pd(pd); });
	if (kind == "cq")
		return check_limit(
			"CQ", a.max_cq - in_use,
			[c] { return ibv_create_cq(c, 1, nullptr, nullptr, 0); },
			[](ibv_cq *cq) { return ibv_destroy_cq(cq); });
	if (kind == "ah")
		return limit_ah(c, a.max_ah - in_use);
	if (kind != "srq" && kind != "mcast" && kind != "attach") {
		fprintf(stderr, "limit: unknown kind\n");
		return 2;
	}
	ibv_pd *pd = ibv_alloc_pd(c);
	if (!pd)
		return 1;
	int ret;
	if (kind == "srq")
		ret = check_limit(
			"SRQ", a.max_srq - in_use,
			[pd] {
				ibv_srq_init_attr sa{};
				sa.attr.max_wr = 1;
				sa.attr.max_sge = 1;
				return ibv_create_srq(pd, &sa);
			},
			[](ibv_srq *srq) { return ibv_destroy_srq(srq); });
	else
		ret = limit_mcast(c, pd, kind == "mcast" ?
			a.max_mcast_grp - in_use : a.max_mcast_qp_attach,
			kind == "mcast");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
	return failures ? 1 : ret;
}

// "rdma resource show cq" lists @cq, this process's only CQ on @dev, with
// its size and @users QP references.
void expect_res_cq(const char *dev, const ibv_cq *cq, int users,
		   const char *what)
{
	std::vector<std::string> objs = res_objects(dev, "cq");
	CHECK(objs.size() == 1, "%s: %zu CQs of this process listed, expected "
	      "1", what, objs.size());
	if (objs.size() != 1)
		return;
	CHECK(res_field(objs[0], "cqe") == cq->cqe &&
		      res_field(objs[0], "users") == users,
	      "%s: listed as %s, expected cqe %d users %d", what,
	      objs[0].c_str(), cq->cqe, users);
}

// CQ creation, limits, resize, arming and completion channels.
int cmd_cq(const char *dev)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	ibv_device_attr a{};
	if (ibv_query_device(ctx.get(), &a))
		return 1;
	CHECK(a.max_cq > 0 && a.max_cqe > 0, "max_cq %d max_cqe %d", a.max_cq,
	      a.max_cqe);

	for (int want : { 1, 2, 3, 100, 4096, a.max_cqe }) {
		ibv_cq *cq = ibv_create_cq(ctx.get(), want, nullptr, nullptr, 0);
		CHECK(cq, "ibv_create_cq(%d): %s", want, strerror(errno));
		if (!cq)
			continue;
		CHECK(cq->cqe >= want, "asked for %d CQEs, got %d", want,
		      cq->cqe);
		ibv_wc wc[4];
		CHECK(ibv_poll_cq(cq, 4, wc) == 0, "new CQ is not empty");
		CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq(0)");
		CHECK(ibv_req_notify_cq(cq, 1) == 0, "req_notify_cq(1)");
		CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
	}

	for (int bad : { 0, -1, a.max_cqe + 1 }) {
		errno = 0;
		ibv_cq *cq = ibv_create_cq(ctx.get(), bad, nullptr, nullptr, 0);
		CHECK(!cq && errno == EINVAL, "ibv_create_cq(%d): %p errno %d",
		      bad, (void *)cq, errno);
		if (cq)
			ibv_destroy_cq(cq);
	}
	errno = 0;
	ibv_cq *bad = ibv_create_cq(ctx.get(), 16, nullptr, nullptr,
				    ctx.get()->num_comp_vectors);
	CHECK(!bad && errno == EINVAL, "comp_vector out of range: errno %d",
	      errno);

	// "rdma resource show cq" shows what the CQ is: its size, and the
	// QPs that use it (a QP's send and receive CQ count once each).
	ibv_cq *cq = ibv_create_cq(ctx.get(), 16, nullptr, nullptr, 0);
	CHECK(cq, "ibv_create_cq(16): %s", strerror(errno));
	if (cq) {
		expect_res_cq(dev, cq, 0, "a new CQ");
		ibv_pd *pd = ibv_alloc_pd(ctx.get());
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_UD;
		ia.cap = { 1, 1, 1, 1, 0 };
		ibv_qp *qp = pd ? ibv_create_qp(pd, &ia) : nullptr;
		CHECK(qp, "UD QP: %s", strerror(errno));
		for (int want : { 1000, 8, a.max_cqe, 1 }) {
			int ret = ibv_resize_cq(cq, want);
			CHECK(ret == 0 && cq->cqe >= want,
			      "resize to %d: ret %d cqe %d", want, ret, cq->cqe);
			ibv_wc wc;
			CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "resized CQ not empty");
			expect_res_cq(dev, cq, qp ? 2 : 0, "a resized CQ");
		}
		if (qp)
			CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
		if (pd)
			CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
		expect_res_cq(dev, cq, 0, "a CQ whose QP is gone");
		CHECK(ibv_resize_cq(cq, a.max_cqe + 1) == EINVAL,
		      "resize past max_cqe accepted");
		CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
	}

	ibv_comp_channel *ch = ibv_create_comp_channel(ctx.get());
	CHECK(ch, "ibv_create_comp_channel: %s", strerror(errno));
	if (ch) {
		cq = ibv_create_cq(ctx.get(), 8, nullptr, ch, 0);
		CHECK(cq && cq->channel == ch, "CQ on a channel: %s",
		      strerror(errno));
		if (cq) {
			CHECK(ibv_req_notify_cq(cq, 0) == 0, "arm");
			pollfd pfd = { ch->fd, POLLIN, 0 };
			CHECK(poll(&pfd, 1, 100) == 0,
			      "event on a CQ that got no completion");
			CHECK(ibv_destroy_cq(cq) == 0, "destroy");
		}
		CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy channel");
	}
	printf("cq checks done\n");
	return failures ? 1 : 0;
}

// Counts the MRs `rdma resource` shows for @dev.
int rdma_resource_mrs(const char *dev)
{
	std::string cmd = std::string("rdma resource show mr dev ") + dev;
	FILE *f = popen(cmd.c_str(), "r");
	if (!f)
		return -1;
	int n = 0;
	char line[512];
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "lkey") != nullptr;
	pclose(f);
	return n;
}

// ibv_reg_mr/ibv_dereg_mr: keys, the man page's errnos, and a 1 GiB MR.
int cmd_mr(const char *dev)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	ibv_pd *pd = ibv_alloc_pd(ctx.get());
	if (!pd)
		return 1;
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	const size_t len = 64 * 1024;
	char *buf = static_cast<char *>(mmap(nullptr, len, PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	CHECK(buf != MAP_FAILED, "mmap");

	// Keys: lkey == rkey; a new registration never gets a recent key.
	std::set<uint32_t> keys, tags;
	uint32_t prev_index = 0;
	for (int i = 0; i < 64; i++) {
		ibv_mr *mr = ibv_reg_mr(pd, buf, len, rw);
		CHECK(mr, "ibv_reg_mr #%d: %s", i, strerror(errno));
		if (!mr)
			break;
		CHECK(mr->lkey == mr->rkey, "lkey 0x%x rkey 0x%x", mr->lkey,
		      mr->rkey);
		CHECK(mr->addr == buf && mr->length == len && mr->pd == pd,
		      "mr addr %p length %zu", mr->addr, mr->length);
		CHECK(keys.insert(mr->lkey).second, "key 0x%x handed out twice",
		      mr->lkey);
		CHECK((mr->lkey >> 8) != prev_index,
		      "key index 0x%x reused right after dereg", mr->lkey >> 8);
		prev_index = mr->lkey >> 8;
		tags.insert(mr->lkey & 0xff);
		CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	}
	CHECK(tags.size() > 1, "64 registrations, all with key tag 0x%x",
	      *tags.begin());

	// iova differs from the address.
	ibv_mr *mr = ibv_reg_mr_iova(pd, buf, len, 0x1000000000ULL, rw);
	CHECK(mr, "ibv_reg_mr_iova: %s", strerror(errno));
	int held = rdma_resource_mrs(ibv_get_device_name(ctx.get()->device));
	CHECK(held == 1, "rdma resource shows %d MRs, expected 1", held);
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");

	struct {
		const char *what;
		void *addr;
		size_t len;
		int access;
		int err;
	} bad[] = {
		{ "remote write without local write", buf, len,
		  IBV_ACCESS_REMOTE_WRITE, EINVAL },
		{ "remote atomic without local write", buf, len,
		  IBV_ACCESS_REMOTE_ATOMIC, EINVAL },
		{ "an unknown access bit", buf, len, 1 << 14, EINVAL },
		{ "length 0", buf, 0, rw, EINVAL },
	};
	for (auto &b : bad) {
		errno = 0;
		ibv_mr *m = ibv_reg_mr(pd, b.addr, b.len, b.access);
		CHECK(!m && errno == b.err, "%s: %p errno %d, expected %d",
		      b.what, (void *)m, errno, b.err);
		if (m)
			ibv_dereg_mr(m);
	}

	// Unmapped memory: EFAULT.
	char *hole = static_cast<char *>(mmap(nullptr, len, PROT_NONE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	munmap(hole, len);
	errno = 0;
	mr = ibv_reg_mr(pd, hole, len, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EFAULT, "unmapped: %p errno %d", (void *)mr,
	      errno);

	// Read-only memory registers for reading only.
	char *ro = static_cast<char *>(mmap(nullptr, len, PROT_READ,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	errno = 0;
	mr = ibv_reg_mr(pd, ro, len, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EFAULT, "writable MR on read-only pages: %p "
	      "errno %d", (void *)mr, errno);
	mr = ibv_reg_mr(pd, ro, len, IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "read-only MR on read-only pages: %s", strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	munmap(ro, len);

	// A 1 GiB MR.
	const size_t big = 1UL << 30;
	char *huge = static_cast<char *>(mmap(nullptr, big, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	CHECK(huge != MAP_FAILED, "mmap 1 GiB");
	if (huge != MAP_FAILED) {
		mr = ibv_reg_mr(pd, huge, big, rw);
		CHECK(mr && mr->length == big, "1 GiB MR: %s", strerror(errno));
		if (mr)
			CHECK(ibv_dereg_mr(mr) == 0, "dereg 1 GiB");
		munmap(huge, big);
	}

	munmap(buf, len);
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
	printf("mr checks done\n");
	return failures ? 1 : 0;
}

// Polls @cq until @n completions arrived or 5 s passed.
std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n)
{
	std::vector<ibv_wc> got;
	for (int tries = 0; got.size() < n && tries < 5000; tries++) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, 16, wc);
		if (k < 0) {
			fprintf(stderr, "FAIL: ibv_poll_cq returned %d\n", k);
			failures++;
			break;
		}
		got.insert(got.end(), wc, wc + k);
		if (!k)
			usleep(1000);
	}
	return got;
}

int modify(ibv_qp *qp, ibv_qp_attr a, int mask)
{
	return ibv_modify_qp(qp, &a, mask);
}

ibv_qp_attr init_attr()
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return a;
}
const int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS;

// RTR towards @dqpn at our own GID @gid_index.
ibv_qp_attr rtr_attr(uint32_t dqpn, int gid_index, ibv_context *ctx)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	ibv_query_gid(ctx, 1, gid_index, &a.ah_attr.grh.dgid);
	return a;
}
const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

ibv_qp_attr rts_attr()
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = scaled_qp_timeout();
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x654321;
	a.max_rd_atomic = 4;
	return a;
}
const int rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

// An attribute of a modify the device refuses: what it is, how a good
// modify becomes it, the mask bits it adds, the errno it gets.
struct BadAttr {
	const char *what;
	void (*spoil)(ibv_qp_attr &a, const ibv_device_attr &da);
	int mask;
	int err;
};

std::span<const BadAttr> bad_init_attrs()
{
	static const BadAttr bad[] = {
		{ "port 2", [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.port_num = 2; }, 0, EINVAL },
		{ "pkey_index 1 (the table has 1 entry)",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.pkey_index = 1; }, 0, EINVAL },
		{ "an access flag no QP has",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.qp_access_flags |= 1 << 12; }, 0, EINVAL },
		{ "a current state (RTS) the QP is not in",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.cur_qp_state = IBV_QPS_RTS; },
		  IBV_QP_CUR_STATE, EINVAL },
	};
	return bad;
}

std::span<const BadAttr> bad_rtr_attrs(const ibv_device_attr &)
{
	static const BadAttr bad[] = {
		{ "path_mtu 6", [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.path_mtu = ibv_mtu(6); }, 0, EINVAL },
		{ "path_mtu 0", [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.path_mtu = ibv_mtu(0); }, 0, EINVAL },
		{ "max_dest_rd_atomic past max_qp_rd_atom",
		  [](ibv_qp_attr &a, const ibv_device_attr &da) {
			  a.max_dest_rd_atomic = da.max_qp_rd_atom + 1; }, 0,
		  EINVAL },
		{ "min_rnr_timer 32", [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.min_rnr_timer = 32; }, 0, EINVAL },
		{ "dest_qp_num of 25 bits",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.dest_qp_num = 1 << 24; }, 0, EINVAL },
		{ "dest_qp_num 0xffffff (multicast)",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.dest_qp_num = 0xffffff; }, 0, EINVAL },
		{ "an empty GID entry (255)",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.ah_attr.grh.sgid_index = 255; }, 0, ENODATA },
		{ "an AV without a GRH (RoCE needs one)",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.ah_attr.is_global = 0; }, 0, EINVAL },
		{ "an AV through port 2",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.ah_attr.port_num = 2; }, 0, EINVAL },
	};
	return bad;
}

std::span<const BadAttr> bad_rts_attrs(const ibv_device_attr &)
{
	static const BadAttr bad[] = {
		{ "timeout 32", [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.timeout = 32; }, 0, EINVAL },
		{ "retry_cnt 8", [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.retry_cnt = 8; }, 0, EINVAL },
		{ "rnr_retry 8", [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.rnr_retry = 8; }, 0, EINVAL },
		{ "max_rd_atomic past max_qp_init_rd_atom",
		  [](ibv_qp_attr &a, const ibv_device_attr &da) {
			  a.max_rd_atomic = da.max_qp_init_rd_atom + 1; }, 0,
		  EINVAL },
		{ "an alternate path (no APM)",
		  [](ibv_qp_attr &a, const ibv_device_attr &) {
			  a.alt_ah_attr = a.ah_attr;
			  a.alt_ah_attr.is_global = 1;
			  a.alt_ah_attr.port_num = 1;
			  a.alt_ah_attr.grh.sgid_index = 1;
			  a.alt_ah_attr.grh.hop_limit = 64;
			  a.alt_port_num = 1;
			  a.alt_timeout = 14; },
		  IBV_QP_ALT_PATH, EINVAL },
	};
	return bad;
}

// A modify with the good attributes @good (@mask) but for @b: refused with
// @b's errno, and the QP still in @state.
void refused_modify(ibv_qp *qp, const BadAttr &b, ibv_qp_attr good, int mask,
		    ibv_qp_state state)
{
	ibv_device_attr da{};
	CHECK(ibv_query_device(qp->context, &da) == 0, "query_device");
	b.spoil(good, da);
	int ret = modify(qp, good, mask | b.mask);
	CHECK(ret == b.err, "%s: modify returned %d (%s), expected %s", b.what,
	      ret, strerror(ret), strerror(b.err));
	ibv_qp_attr q{};
	ibv_qp_init_attr qi{};
	CHECK(ibv_query_qp(qp, &q, IBV_QP_STATE, &qi) == 0 &&
		      q.qp_state == state,
	      "%s: the QP went from state %d to %d", b.what, state,
	      q.qp_state);
}

// QP creation limits, the state machine, attributes, posting rules and
// flushing in the error state.
int cmd_qp(const char *dev)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	ibv_context *c = ctx.get();
	ibv_device_attr da{};
	if (ibv_query_device(c, &da))
		return 1;
	CHECK(da.max_qp > 0 && da.max_qp_wr > 0, "max_qp %d max_qp_wr %d",
	      da.max_qp, da.max_qp_wr);
	ibv_pd *pd = ibv_alloc_pd(c);
	ibv_comp_channel *ch = ibv_create_comp_channel(c);
	ibv_cq *scq = ibv_create_cq(c, 64, nullptr, nullptr, 0);
	ibv_cq *rcq = ibv_create_cq(c, 64, nullptr, ch, 0);
	if (!pd || !ch || !scq || !rcq)
		return 1;

	ibv_qp_init_attr ia{};
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap = { 16, 16, 2, 2, 64 };

	// Caps beyond the device's limits.
	struct {
		const char *what;
		ibv_qp_cap cap;
	} bad_caps[] = {
		{ "max_send_wr", { uint32_t(da.max_qp_wr) + 1, 1, 1, 1, 0 } },
		{ "max_recv_wr", { 1, uint32_t(da.max_qp_wr) + 1, 1, 1, 0 } },
		{ "max_send_sge", { 1, 1, uint32_t(da.max_sge) + 1, 1, 0 } },
		{ "max_recv_sge", { 1, 1, 1, uint32_t(da.max_sge) + 1, 0 } },
		{ "max_inline_data", { 1, 1, 1, 1, 1 << 20 } },
	};
	for (auto &b : bad_caps) {
		ibv_qp_init_attr x = ia;
		x.cap = b.cap;
		errno = 0;
		ibv_qp *q = ibv_create_qp(pd, &x);
		CHECK(!q && errno == EINVAL, "%s past the limit: %p errno %d",
		      b.what, (void *)q, errno);
		if (q)
			ibv_destroy_qp(q);
	}

	for (ibv_qp_type t : { IBV_QPT_UC, IBV_QPT_UD }) {
		ibv_qp_init_attr x = ia;
		x.qp_type = t;
		ibv_qp *q = ibv_create_qp(pd, &x);
		CHECK(q, "create QP type %d: %s", t, strerror(errno));
		if (q)
			CHECK(ibv_destroy_qp(q) == 0, "destroy QP type %d", t);
	}

	ibv_qp_init_attr got = ia;
	ibv_qp *qp = ibv_create_qp(pd, &got);
	CHECK(qp, "ibv_create_qp(RC): %s", strerror(errno));
	if (!qp)
		return 1;
	CHECK(qp->qp_num >= 16 && qp->qp_num <= 0xffffff, "qp_num 0x%x",
	      qp->qp_num);
	CHECK(got.cap.max_send_wr >= 16 && got.cap.max_recv_wr >= 16 &&
		      got.cap.max_send_sge >= 2 && got.cap.max_recv_sge >= 2 &&
		      got.cap.max_inline_data >= 64,
	      "caps %u/%u/%u/%u/%u", got.cap.max_send_wr, got.cap.max_recv_wr,
	      got.cap.max_send_sge, got.cap.max_recv_sge,
	      got.cap.max_inline_data);

	// Posting in RESET fails at once.
	char buf[64] = {};
	ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ibv_sge sge = { uintptr_t(buf), sizeof(buf), mr ? mr->lkey : 0 };
	ibv_recv_wr rwr{}, *bad_r = nullptr;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	ibv_send_wr swr{}, *bad_s = nullptr;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	CHECK(ibv_post_recv(qp, &rwr, &bad_r) == EINVAL && bad_r == &rwr,
	      "post_recv in RESET");
	CHECK(ibv_post_send(qp, &swr, &bad_s) == EINVAL && bad_s == &swr,
	      "post_send in RESET");

	// Transitions the spec does not allow, and bad attributes: each
	// refused with its errno, the QP left in the state it was in.
	CHECK(modify(qp, rts_attr(), rts_mask) == EINVAL, "RESET->RTS allowed");
	CHECK(modify(qp, init_attr(), IBV_QP_STATE) == EINVAL,
	      "RESET->INIT without its required attributes");
	for (const BadAttr &b : bad_init_attrs())
		refused_modify(qp, b, init_attr(), init_mask, IBV_QPS_RESET);
	CHECK(modify(qp, init_attr(), init_mask) == 0, "RESET->INIT");
	CHECK(ibv_post_send(qp, &swr, &bad_s) == EINVAL, "post_send in INIT");

	CHECK(modify(qp, rtr_attr(qp->qp_num, 1, c), IBV_QP_STATE) == EINVAL,
	      "INIT->RTR without its required attributes");
	for (const BadAttr &b : bad_rtr_attrs(da))
		refused_modify(qp, b, rtr_attr(qp->qp_num, 1, c), rtr_mask,
			       IBV_QPS_INIT);
	CHECK(modify(qp, rtr_attr(qp->qp_num, 1, c), rtr_mask) == 0,
	      "INIT->RTR: %s", strerror(errno));
	for (const BadAttr &b : bad_rts_attrs(da))
		refused_modify(qp, b, rts_attr(), rts_mask, IBV_QPS_RTR);
	CHECK(modify(qp, rts_attr(), rts_mask) == 0, "RTR->RTS");
	ibv_qp_attr a;

	ibv_qp_attr q{};
	ibv_qp_init_attr qi{};
	CHECK(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_CAP, &qi) == 0,
	      "ibv_query_qp");
	CHECK(q.qp_state == IBV_QPS_RTS && q.sq_psn == 0x654321 &&
		      q.rq_psn == 0x123456 && q.dest_qp_num == qp->qp_num &&
		      q.path_mtu == IBV_MTU_1024 &&
		      q.timeout == scaled_qp_timeout() && q.retry_cnt == 7 && q.max_rd_atomic == 4 &&
		      q.max_dest_rd_atomic == 4 && q.min_rnr_timer == 12 &&
		      q.ah_attr.is_global && q.ah_attr.grh.sgid_index == 1 &&
		      q.ah_attr.grh.hop_limit == 64,
	      "query_qp: state %d sq_psn 0x%x rq_psn 0x%x dqpn 0x%x mtu %d",
	      q.qp_state, q.sq_psn, q.rq_psn, q.dest_qp_num, q.path_mtu);
	CHECK(qi.qp_type == IBV_QPT_RC && qi.cap.max_send_wr ==
		      got.cap.max_send_wr && qi.send_cq == scq && qi.recv_cq == rcq,
	      "query_qp init attributes");

	// SQD drains at once and says so when asked.
	a = {};
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	CHECK(modify(qp, a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0,
	      "RTS->SQD");
	ibv_async_event ev;
	if (next_async_event(c, 5000, &ev))
		CHECK(ev.event_type == IBV_EVENT_SQ_DRAINED &&
			      ev.element.qp == qp,
		      "event %s", ibv_event_type_str(ev.event_type));
	CHECK(modify(qp, rts_attr(), IBV_QP_STATE) == 0, "SQD->RTS");

	// Error state: everything posted completes with WR_FLUSH_ERR, in
	// order, and the armed receive CQ raises its event.
	for (uint64_t id = 1; id <= 3; id++) {
		rwr.wr_id = id;
		CHECK(ibv_post_recv(qp, &rwr, &bad_r) == 0, "post_recv in RTS");
	}
	CHECK(ibv_req_notify_cq(rcq, 0) == 0, "arm");
	a = {};
	a.qp_state = IBV_QPS_ERR;
	CHECK(modify(qp, a, IBV_QP_STATE) == 0, "RTS->ERR");
	auto wcs = poll_n(rcq, 3);
	CHECK(wcs.size() == 3, "%zu flushed receives, expected 3", wcs.size());
	for (size_t i = 0; i < wcs.size(); i++)
		CHECK(wcs[i].wr_id == i + 1 && wcs[i].status == IBV_WC_WR_FLUSH_ERR &&
			      wcs[i].qp_num == qp->qp_num,
		      "flushed receive %zu: wr_id %llu status %s", i,
		      (unsigned long long)wcs[i].wr_id,
		      ibv_wc_status_str(wcs[i].status));
	pollfd pfd = { ch->fd, POLLIN, 0 };
	CHECK(poll(&pfd, 1, 5000) == 1, "no completion event");
	ibv_cq *ev_cq;
	void *ev_ctx;
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0) {
		CHECK(ev_cq == rcq, "event for the wrong CQ");
		ibv_ack_cq_events(ev_cq, 1);
	}

	swr.wr_id = 7;
	ibv_send_wr swr2 = swr;
	swr2.wr_id = 8;
	swr.next = &swr2;
	CHECK(ibv_post_send(qp, &swr, &bad_s) == 0, "post_send in ERR");
	swr.next = nullptr;
	wcs = poll_n(scq, 2);
	CHECK(wcs.size() == 2 && wcs[0].wr_id == 7 && wcs[1].wr_id == 8 &&
		      wcs[0].status == IBV_WC_WR_FLUSH_ERR &&
		      wcs[1].status == IBV_WC_WR_FLUSH_ERR,
	      "%zu flushed sends", wcs.size());
	rwr.wr_id = 9;
	CHECK(ibv_post_recv(qp, &rwr, &bad_r) == 0, "post_recv in ERR");
	wcs = poll_n(rcq, 1);
	CHECK(wcs.size() == 1 && wcs[0].wr_id == 9 &&
		      wcs[0].status == IBV_WC_WR_FLUSH_ERR,
	      "receive posted in ERR not flushed");

	// Back to RESET, and on again.
	a = {};
	a.qp_state = IBV_QPS_RESET;
	CHECK(modify(qp, a, IBV_QP_STATE) == 0, "ERR->RESET");
	CHECK(ibv_post_recv(qp, &rwr, &bad_r) == EINVAL, "post_recv in RESET");
	CHECK(modify(qp, init_attr(), init_mask) == 0, "RESET->INIT again");

	CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp");
	if (mr)
		ibv_dereg_mr(mr);
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0, "CQs");
	ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
	printf("qp checks done\n");
	return failures ? 1 : 0;
}

int cmd_hold(const char *dev, int npd)
{
	Context ctx(dev);
	if (!ctx)
		return 1;
	std::vector<ibv_pd *> pds;
	for (int i = 0; i < npd; i++) {
		ibv_pd *pd = ibv_alloc_pd(ctx.get());
		CHECK(pd, "ibv_alloc_pd: %s", strerror(errno));
		if (pd)
			pds.push_back(pd);
	}
	// A CQ and an MR too: the device's removal must take them all.
	static char buf[8192];
	ibv_cq *cq = ibv_create_cq(ctx.get(), 16, nullptr, nullptr, 0);
	CHECK(cq, "ibv_create_cq: %s", strerror(errno));
	ibv_mr *mr = pds.empty() ? nullptr :
		ibv_reg_mr(pds[0], buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "ibv_reg_mr: %s", strerror(errno));
	ibv_qp *qp = nullptr;
	if (cq && !pds.empty()) {
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap = { 4, 4, 1, 1, 0 };
		qp = ibv_create_qp(pds[0], &ia);
		CHECK(qp, "ibv_create_qp: %s", strerror(errno));
		if (qp)
			CHECK(modify(qp, init_attr(), init_mask) == 0, "INIT");
	}
	printf("ready\n");
	fflush(stdout);

	ibv_async_event ev;
	do {
		if (!next_async_event(ctx.get(), 60000, &ev))
			return 1;
	} while (ev.event_type != IBV_EVENT_DEVICE_FATAL);
	printf("fatal\n");
	// The objects are gone in the kernel; destroying them must still
	// succeed so that applications can clean up.
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp after removal");
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr after removal");
	if (cq)
		CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq after removal");
	for (ibv_pd *pd : pds) {
		int ret = ibv_dealloc_pd(pd);
		CHECK(ret == 0, "ibv_dealloc_pd after removal returned %d", ret);
	}
	return failures ? 1 : 0;
}

// ---- kernel memory bounds (sroce_kmem.c) ----------------------------------

// Port counter @name of @dev (sysfs hw_counters, read afresh), or -1.
long long hw_counter(const char *dev, const char *name)
{
	std::string path = std::string("/sys/class/infiniband/") + dev +
			   "/ports/1/hw_counters/" + name;
	long long v = -1;

	usleep(50000); // past the counters' cache lifespan (10 ms)
	if (FILE *f = fopen(path.c_str(), "r")) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

bool set_param(const char *name, long long mb)
{
	std::string path = std::string("/sys/module/sroce/parameters/") + name;
	FILE *f = fopen(path.c_str(), "w");
	bool ok = f && fprintf(f, "%lld\n", mb) > 0;

	if (f)
		ok = fclose(f) == 0 && ok;
	CHECK(ok, "write %lld to %s: %s", mb, path.c_str(), strerror(errno));
	return ok;
}

// The sum of "kmem" of this process's CQs on @dev, as
// "rdma resource show cq" shows them; -1 if it shows none.
long long res_cq_kmem(const char *dev)
{
	long long sum = -1;

	for (const std::string &obj : res_objects(dev, "cq")) {
		long long v = res_field(obj, "drv_kmem");
		if (v >= 0)
			sum = (sum < 0 ? 0 : sum) + v;
	}
	return sum;
}

// CQs of @cqe entries in a new context on @dev until one is refused or
// @want are made; the CQs made (0 on failure). The refused one must fail
// with ENOMEM and leave the device's kernel memory as it was.
std::vector<ibv_cq *> cqs_until_refused(ibv_context *c, const char *dev,
					int want, const char *who)
{
	std::vector<ibv_cq *> cqs;

	for (int i = 0; i <= want; i++) {
		long long before = hw_counter(dev, "kmem_bytes");
		ibv_cq *cq = ibv_create_cq(c, 32768, nullptr, nullptr, 0);
		if (cq) {
			cqs.push_back(cq);
			continue;
		}
		CHECK(errno == ENOMEM, "%s: CQ %d refused with %s, expected "
		      "ENOMEM", who, i + 1, strerror(errno));
		CHECK(hw_counter(dev, "kmem_bytes") == before, "%s: the "
		      "refused CQ changed kmem_bytes", who);
		break;
	}
	CHECK(int(cqs.size()) == want, "%s: %zu CQs made before one was "
	      "refused, expected %d", who, cqs.size(), want);
	return cqs;
}

// Write @text to @path; false (said) if it could not be.
bool write_file(const std::string &path, const char *text)
{
	int fd = open(path.c_str(), O_WRONLY);
	ssize_t len = ssize_t(strlen(text));
	bool ok = fd >= 0 && write(fd, text, size_t(len)) == len;

	CHECK(ok, "writing '%s' to %s: %s", text, path.c_str(),
	      strerror(errno));
	if (fd >= 0)
		close(fd);
	return ok;
}

// In a user namespace, as its root and then with effective uid 1: as
// root, @root_cqs of cmd_kmem()'s CQs; then, in a context opened as uid 1,
// CQs until one is refused, of which @one_cqs must have been made. 0 if
// all went as it must.
int ns_cqs(const char *dev, int root_cqs, int one_cqs, const char *who)
{
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0)) {
		perror("becoming root of the user namespace");
		return 2;
	}
	Context root(dev);
	if (!root)
		return 1;
	std::vector<ibv_cq *> cqs;
	for (int i = 0; i < root_cqs; i++) {
		ibv_cq *q = ibv_create_cq(root.get(), 32768, nullptr, nullptr, 0);
		CHECK(q, "%s's root: a CQ: %s", who, strerror(errno));
		if (q)
			cqs.push_back(q);
	}
	if (setresuid(-1, 1, -1)) {
		CHECK(false, "%s: seteuid 1: %s", who, strerror(errno));
	} else {
		std::string one_who = std::string(who) + "'s uid 1, its root "
				      "holding " + std::to_string(root_cqs) +
				      " CQs";
		Context one(dev);
		std::vector<ibv_cq *> more;
		if (one)
			more = cqs_until_refused(one.get(), dev, one_cqs,
						 one_who.c_str());
		for (ibv_cq *q : more)
			CHECK(ibv_destroy_cq(q) == 0, "destroy CQ");
	}
	for (ibv_cq *q : cqs)
		CHECK(ibv_destroy_cq(q) == 0, "destroy CQ");
	return failures ? 1 : 0;
}

// The exit status of a process of a kmem test that could not run here (a
// user namespace refused for a reason of the machine's): it said why,
// "SKIP: why", and cmd_kmem() then ends with it too, never as a pass.
const int kSkip = 77;

// What became of a test in a user namespace (in_user_ns()).
enum class Ns { ok, failed, skipped };

// A number in a file of /proc/sys, or -1 if it has none.
long sysctl_value(const char *path)
{
	long v = -1;

	if (FILE *f = fopen(path, "r")) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

// The mount and inode of the directory @fd (AT_FDCWD with @path "/": the
// root), or false.
bool mount_and_inode(int fd, const char *path, uint64_t *mnt, uint64_t *ino)
{
	struct statx st;

	if (statx(fd, path, AT_EMPTY_PATH, STATX_MNT_ID | STATX_INO, &st) ||
	    !(st.stx_mask & STATX_MNT_ID))
		return false;
	*mnt = st.stx_mnt_id;
	*ino = st.stx_ino;
	return true;
}

// The kernel refuses a new user namespace to a chrooted task, EPERM
// (unshare(2), user_namespaces(7): create_user_ns() checks
// current_chrooted(): is the task's root its mount namespace's root?),
// and every test in the VM runs chrooted into the host's root
// (scripts/guest/initramfs-init: the 9p mount on the initramfs's
// /newroot). So before it makes one, as root, a process of the kmem tests
// takes the same tree as the root of a mount namespace of its own:
// unshare(CLONE_NEWNS); setns() into that namespace, which sets the
// task's root to the namespace's root (the initramfs's, and whatever is
// mounted on it: the copy of what the task may not see from its chroot);
// every mount made private, so that nothing leaks to the namespace it
// came from; a recursive clone of its old root (open_tree()) mounted on
// the namespace's root; its root and working directory that clone. Then
// the namespace's root, followed down through what is mounted on it, is
// the task's root: not chrooted. (pivot_root(2) would not do: it puts the
// new root where the old one was mounted, /newroot, not on the
// namespace's root.) Where the task was not chrooted (the namespace's
// root is its root already, or a namespace's root made this way before,
// as in a process of the sandbox), it only has a mount namespace of its
// own. The caller's caps are needed: CAP_SYS_ADMIN and CAP_SYS_CHROOT in
// its user namespace. False, said, if a step failed.
bool leave_chroot()
{
	int root = -1, ns = -1, tree = -1;
	uint64_t mnt, ino, ns_mnt, ns_ino;
	bool ok = false;

	if (unshare(CLONE_NEWNS)) {
		CHECK(false, "leaving the chroot: unshare(CLONE_NEWNS): %s",
		      strerror(errno));
		return false;
	}
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (root < 0 || ns < 0 || !mount_and_inode(root, "", &mnt, &ino)) {
		CHECK(false, "leaving the chroot: its root, /proc/self/ns/mnt: "
		      "%s", strerror(errno));
		goto out;
	}
	if (setns(ns, CLONE_NEWNS) ||
	    mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
	    !mount_and_inode(AT_FDCWD, "/", &ns_mnt, &ns_ino)) {
		CHECK(false, "leaving the chroot: setns() into its own mount "
		      "namespace, every mount private: %s", strerror(errno));
		goto out;
	}
	if (ns_mnt == mnt && ns_ino == ino) {
		ok = true;	/* not chrooted: setns() left it where it was */
		goto out;
	}
	tree = open_tree(root, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
				   AT_RECURSIVE | AT_EMPTY_PATH);
	ok = tree >= 0 &&
	     move_mount(tree, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) == 0 &&
	     fchdir(tree) == 0 && chroot(".") == 0 && chdir("/") == 0;
	CHECK(ok, "leaving the chroot: its root cloned and mounted on its "
	      "mount namespace's root: %s", strerror(errno));
out:
	for (int fd : { root, ns, tree })
		if (fd >= 0)
			close(fd);
	return ok;
}

// unshare(CLONE_NEWUSER): true if made. Else, when the machine does not
// let this task have one (no user namespaces in the kernel, a sysctl
// that forbids them, their limit reached), false with why in @skip; for
// any other reason (a chroot left, say), false, said as a failure.
bool new_user_ns(std::string *skip)
{
	if (!unshare(CLONE_NEWUSER))
		return true;
	int err = errno;
	long unpriv = sysctl_value("/proc/sys/kernel/unprivileged_userns_clone");
	long apparmor =
		sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	long max = sysctl_value("/proc/sys/user/max_user_namespaces");

	if (err == EINVAL)
		*skip = "this kernel has no user namespaces (CONFIG_USER_NS)";
	else if (err == ENOSPC)
		*skip = "no user namespace to be had: user.max_user_namespaces "
			"is " + std::to_string(max) + " (or the limit of a "
			"namespace above is reached)";
	else if (err == EPERM && geteuid() && unpriv == 0)
		*skip = "uid " + std::to_string(geteuid()) + " may not make a "
			"user namespace: kernel.unprivileged_userns_clone is 0";
	else if (err == EPERM && geteuid() && apparmor == 1)
		*skip = "uid " + std::to_string(geteuid()) + " may not make a "
			"user namespace: "
			"kernel.apparmor_restrict_unprivileged_userns is 1";
	else
		CHECK(false, "unsharing a user namespace as uid %u: %s "
		      "(kernel.unprivileged_userns_clone %ld, "
		      "user.max_user_namespaces %ld; -1: no such sysctl)",
		      geteuid(), strerror(err), unpriv, max);
	return false;
}

// @body run in a child of ours that became uid @uid (unless -1) and then
// unshared a user namespace, whose uid and gid maps this process wrote
// (@map: as root writes a container's, or newuidmap, setuid root, a
// user's). Before it drops its privileges the child leaves the chroot the
// tests run in (leave_chroot()). Ns::ok if the child exited 0; skipped
// if the machine gave it no user namespace (the child said "SKIP: why"),
// or @body returned kSkip; else failed, said, with @who. The child's
// status counts its own failures, not those of ours it was forked with.
// Each process closes the pipe ends it does not use, so that a child that
// dies before it unshared is an EOF here, said as such, not a read that
// never ends.
Ns in_user_ns(const char *map, int uid, const char *who,
	      const std::function<int()> &body)
{
	int ready[2], go[2];

	if (pipe(ready)) {
		CHECK(false, "pipe: %s", strerror(errno));
		return Ns::failed;
	}
	if (pipe(go)) {
		CHECK(false, "pipe: %s", strerror(errno));
		close(ready[0]);
		close(ready[1]);
		return Ns::failed;
	}
	fflush(nullptr);
	pid_t pid = fork();
	if (pid == 0) {
		std::string skip;
		char c = 0;

		failures = 0;	// its own, not those of ours it was forked with
		close(ready[0]);
		close(go[1]);
		bool in = leave_chroot() &&
			  (uid < 0 || (!setgroups(0, nullptr) &&
				       !setresgid(uid, uid, uid) &&
				       !setresuid(uid, uid, uid))) &&
			  new_user_ns(&skip) &&
			  write(ready[1], "u", 1) == 1 &&
			  read(go[0], &c, 1) == 1 && c == 'm';
		if (!skip.empty()) {
			printf("SKIP: %s\n", skip.c_str());
			fflush(stdout);
			_exit(kSkip);
		}
		if (!in) {
			fprintf(stderr, "%s's first process, uid %d: no user "
				"namespace made and mapped (last error: %s)\n",
				who, uid, strerror(errno));
			_exit(2);
		}
		_exit(body());
	}
	close(ready[1]);
	close(go[0]);
	char c = 0;
	std::string proc = "/proc/" + std::to_string(pid);
	ssize_t got = pid > 0 ? read(ready[0], &c, 1) : -1;
	bool mapped = got == 1 && c == 'u' &&
		      write_file(proc + "/uid_map", map) &&
		      write_file(proc + "/gid_map", map);
	// A child dead since it wrote has closed its end: the write fails
	// (EPIPE; SIGPIPE is ignored for it), and its status says more.
	sighandler_t pipe_was = signal(SIGPIPE, SIG_IGN);
	bool told = got == 0 ||
		    (pid > 0 && write(go[1], mapped ? "m" : "x", 1) == 1);
	CHECK(told, "telling %s's first process to go on: %s", who,
	      strerror(errno));
	signal(SIGPIPE, pipe_was);
	int status = -1;
	bool ended = pid > 0 && waitpid(pid, &status, 0) == pid &&
		     WIFEXITED(status);
	close(ready[0]);
	close(go[1]);
	if (ended && WEXITSTATUS(status) == kSkip)
		return Ns::skipped;
	bool ok = ended && WEXITSTATUS(status) == 0;
	if (got == 0)
		CHECK(false, "%s's first process died before it unshared a "
		      "user namespace (status 0x%x)", who, status);
	else
		CHECK(ok, "%s's processes failed (status 0x%x)", who, status);
	return ok ? Ns::ok : Ns::failed;
}

// A user namespace root made (as a container's), its uids 0 and 1 mapped
// to 200000 and 200001: its root makes 2 of the CQs of cmd_kmem(), then
// its uid 1 gets one more, the bound's last, and the next is refused: the
// container is one user, the uid its root is mapped to, whatever uid its
// processes take (sroce_kmem_uid()). With each uid a user of its own, uid
// 1 would get 3. The device's bound must leave room for 4.
Ns container_is_one_user(const char *dev)
{
	return in_user_ns("0 200000 2\n", -1, "the container", [&] {
		return ns_cqs(dev, 2, 1, "the container");
	});
}

// A sandbox root made (as systemd's PrivateUsers=: its root host root,
// its uid 1 mapped to 200001) is no container: its uids are their own
// users, as outside. Its root makes 2 CQs, charged to host root (this
// process, which holds none now); its uid 1 gets 3 more, a bound of its
// own, and the next is refused. Counted as a container, uid 1 would share
// root's bound and get 1.
Ns sandbox_uids_are_their_own(const char *dev)
{
	return in_user_ns("0 0 1\n1 200001 1\n", -1, "the sandbox", [&] {
		return ns_cqs(dev, 2, 3, "the sandbox");
	});
}

// A user's rootless container inside a sandbox root made that maps every
// uid to itself (as systemd's PrivateUsers=full, or unshare
// --map-users=0:0:4294967295): the sandbox's uid 65534 unshares the
// container's namespace, and the sandbox's root maps the container's uids
// 0 and 1 to 200000 and 200001, as newuidmap, setuid root, would map a
// user's subordinate uids. The container is one user, uid 65534 that made
// it, as it would be outside a sandbox: its root makes 2 CQs, its uid 1
// gets one more, and the next is refused. Judged by the sandbox (the
// outermost namespace), each of the container's uids would be its own
// user, and uid 1 would get 3. Where uid 65534 may not make a user
// namespace (kernel.unprivileged_userns_clone 0), skipped.
Ns sandboxed_container_is_its_owner(const char *dev)
{
	const char *who = "the container in the sandbox";

	return in_user_ns("0 0 4294967295\n", -1, "the sandbox", [&] {
		if (setresgid(0, 0, 0) || setresuid(0, 0, 0)) {
			perror("becoming root of the sandbox");
			return 2;
		}
		Ns r = in_user_ns("0 200000 2\n", 65534, who, [&] {
			return ns_cqs(dev, 2, 1, who);
		});
		return r == Ns::skipped ? kSkip : failures ? 1 : 0;
	});
}

// @body run in a child of ours that became uid and gid 65534; true if it
// exited 0 (its own failures counted, not ours), else said, with @who.
bool as_nobody(const char *who, const std::function<int()> &body)
{
	fflush(nullptr);
	pid_t pid = fork();
	if (pid == 0) {
		failures = 0;	// its own, not those of ours it was forked with
		if (setgid(65534) || setuid(65534)) {
			perror("setuid 65534");
			_exit(2);
		}
		_exit(body());
	}
	int status = -1;
	bool ok = pid > 0 && waitpid(pid, &status, 0) == pid &&
		  WIFEXITED(status) && WEXITSTATUS(status) == 0;
	CHECK(ok, "%s failed (status 0x%x)", who, status);
	return ok;
}

// One user's bound is for all devices together: uid 65534 makes 2 of the
// CQs of cmd_kmem() on @dev, then on @dev2 gets one more, the bound's
// last, and the next is refused there (kmem_refused +1 on @dev2, none on
// @dev). With a bound per (user, device) it would get 3 on @dev2. The
// device's bounds must leave room for 3 on each.
void one_user_on_two_devices(const char *dev, const char *dev2)
{
	const char *who = "uid 65534 holding 2 CQs on another device";
	long long refused = hw_counter(dev, "kmem_refused");
	long long refused2 = hw_counter(dev2, "kmem_refused");
	long long base2 = hw_counter(dev2, "kmem_bytes");

	CHECK(refused2 >= 0 && base2 >= 0, "no kmem_refused or kmem_bytes "
	      "counter on %s", dev2);
	as_nobody("the process of uid 65534 on two devices", [&] {
		Context one(dev), two(dev2);
		if (!one || !two)
			return 1;
		std::vector<ibv_cq *> cqs;
		for (int i = 0; i < 2; i++) {
			ibv_cq *q = ibv_create_cq(one.get(), 32768, nullptr,
						  nullptr, 0);
			CHECK(q, "uid 65534: CQ %d on %s: %s", i + 1, dev,
			      strerror(errno));
			if (q)
				cqs.push_back(q);
		}
		std::vector<ibv_cq *> more = cqs_until_refused(two.get(), dev2,
							       1, who);
		for (ibv_cq *q : more)
			CHECK(ibv_destroy_cq(q) == 0, "destroy CQ");
		for (ibv_cq *q : cqs)
			CHECK(ibv_destroy_cq(q) == 0, "destroy CQ");
		return failures ? 1 : 0;
	});
	CHECK(hw_counter(dev, "kmem_refused") == refused &&
		      hw_counter(dev2, "kmem_refused") == refused2 + 1,
	      "kmem_refused grew by %lld on %s and %lld on %s, expected 0 "
	      "and 1", hw_counter(dev, "kmem_refused") - refused, dev,
	      hw_counter(dev2, "kmem_refused") - refused2, dev2);
	CHECK(hw_counter(dev2, "kmem_bytes") == base2, "kmem_bytes %lld on "
	      "%s after uid 65534's CQs went, %lld before",
	      hw_counter(dev2, "kmem_bytes"), dev2, base2);
}

// As root: this process's CQs of 2 MiB are bounded by max_user_kmem_mb (8:
// the fourth is refused), a process of another user (uid 65534) has a
// bound of its own but shares the device's (set so that its second CQ is
// the last that fits), a container's uids share one
// (container_is_one_user()), a sandbox's uids have each their own
// (sandbox_uids_are_their_own()), and a user's container in a sandbox is
// that user (sandboxed_container_is_its_owner()), and, given a second
// device @dev2, a user's bound is one for both (one_user_on_two_devices());
// each refusal counts in kmem_refused, kmem_bytes and "rdma resource"'s
// kmem tell what the CQs hold, and all of it goes with them. The case
// saves and restores the parameters. Where the machine gives a test's
// process no user namespace (in_user_ns()), that test says "SKIP: why"
// and this ends with kSkip once the others passed: not run, never passed.
int cmd_kmem(const char *dev, const char *dev2)
{
	long long base = hw_counter(dev, "kmem_bytes");
	long long refused = hw_counter(dev, "kmem_refused");

	CHECK(base >= 0 && refused >= 0, "no kmem_bytes or kmem_refused "
	      "counter on %s", dev);
	if (!set_param("max_kmem_mb", 0) || !set_param("max_user_kmem_mb", 8))
		return 1;
	Context ctx(dev);
	if (!ctx || failures)
		return 1;
	std::vector<ibv_cq *> mine = cqs_until_refused(ctx.get(), dev, 3,
						       "root, user bound 8 MiB");
	long long held = res_cq_kmem(dev);
	long long now = hw_counter(dev, "kmem_bytes");
	CHECK(held > (3 << 20) * 2 && now == base + held, "root's 3 CQs: "
	      "rdma resource shows %lld bytes of kmem, kmem_bytes grew by "
	      "%lld", held, now - base);
	CHECK(hw_counter(dev, "kmem_refused") == refused + 1, "kmem_refused "
	      "grew by %lld, expected 1", hw_counter(dev, "kmem_refused") -
	      refused);
	// A QP and an SRQ of the largest queues do not fit in what is left:
	// ENOMEM, counted, nothing charged.
	ibv_pd *pd = ibv_alloc_pd(ctx.get());
	CHECK(pd && !mine.empty(), "PD: %s", strerror(errno));
	if (pd && !mine.empty()) {
		ibv_device_attr da{};
		CHECK(ibv_query_device(ctx.get(), &da) == 0, "query_device");
		ibv_qp_init_attr qa{};
		qa.send_cq = qa.recv_cq = mine[0];
		qa.qp_type = IBV_QPT_RC;
		qa.cap = { uint32_t(da.max_qp_wr), uint32_t(da.max_qp_wr),
			   uint32_t(da.max_sge), uint32_t(da.max_sge), 0 };
		errno = 0;
		ibv_qp *qp = ibv_create_qp(pd, &qa);
		CHECK(!qp && errno == ENOMEM, "the largest QP past the user's "
		      "bound: %p, %s", (void *)qp, strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = uint32_t(da.max_srq_wr);
		sa.attr.max_sge = uint32_t(da.max_srq_sge);
		errno = 0;
		ibv_srq *srq = ibv_create_srq(pd, &sa);
		CHECK(!srq && errno == ENOMEM, "the largest SRQ past the "
		      "user's bound: %p, %s", (void *)srq, strerror(errno));
		if (srq)
			ibv_destroy_srq(srq);
		CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
	}
	CHECK(hw_counter(dev, "kmem_refused") == refused + 3 &&
		      hw_counter(dev, "kmem_bytes") == now,
	      "after the refused QP and SRQ: kmem_refused grew by %lld "
	      "(expected 3), kmem_bytes by %lld (expected 0)",
	      hw_counter(dev, "kmem_refused") - refused,
	      hw_counter(dev, "kmem_bytes") - now);
	refused += 2;

	// The device's bound: room for two more such CQs, not three.
	long long one = held / 3;
	set_param("max_kmem_mb", (now + 2 * one + (1 << 20) - 1) >> 20);
	as_nobody("the process of uid 65534", [&] {
		Context other(dev);
		if (!other)
			return 1;
		std::vector<ibv_cq *> cqs = cqs_until_refused(other.get(), dev,
							      2, "uid 65534");
		for (ibv_cq *cq : cqs)
			CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
		return failures ? 1 : 0;
	});
	CHECK(hw_counter(dev, "kmem_refused") == refused + 2, "kmem_refused "
	      "grew by %lld, expected 2", hw_counter(dev, "kmem_refused") -
	      refused);
	CHECK(hw_counter(dev, "kmem_bytes") == now, "kmem_bytes %lld after "
	      "uid 65534's CQs went, %lld before they came",
	      hw_counter(dev, "kmem_bytes"), now);
	for (ibv_cq *cq : mine)
		CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	CHECK(hw_counter(dev, "kmem_bytes") == base, "kmem_bytes %lld after "
	      "every CQ went, %lld before", hw_counter(dev, "kmem_bytes"),
	      base);

	// A container's uids: one user; a sandbox's: each its own; a
	// container in a sandbox: one user, its owner.
	set_param("max_kmem_mb", 0);
	const struct {
		const char *who;
		Ns (*fn)(const char *);
	} nss[] = {
		{ "the container", container_is_one_user },
		{ "the sandbox", sandbox_uids_are_their_own },
		{ "the container in the sandbox",
		  sandboxed_container_is_its_owner },
	};
	bool skipped = false;
	for (const auto &ns : nss) {
		refused = hw_counter(dev, "kmem_refused");
		if (ns.fn(dev) == Ns::skipped) {
			skipped = true;
			continue;
		}
		CHECK(hw_counter(dev, "kmem_refused") == refused + 1,
		      "kmem_refused grew by %lld in %s, expected 1",
		      hw_counter(dev, "kmem_refused") - refused, ns.who);
		CHECK(hw_counter(dev, "kmem_bytes") == base, "kmem_bytes "
		      "%lld after %s's CQs went, %lld before",
		      hw_counter(dev, "kmem_bytes"), ns.who, base);
	}
	if (dev2) {
		one_user_on_two_devices(dev, dev2);
		CHECK(hw_counter(dev, "kmem_bytes") == base, "kmem_bytes %lld "
		      "on %s after uid 65534's CQs went, %lld before",
		      hw_counter(dev, "kmem_bytes"), dev, base);
	}
	if (failures)
		return 1;
	if (skipped)
		return kSkip;	// each process that could not said why
	printf("kmem: user, container, sandbox%s and device bounds "
	       "enforced, %lld bytes a CQ\n", dev2 ? ", two-device" : "", one);
	return 0;
}

int usage()
{
	fprintf(stderr, "usage: sroce-check attrs|port|gids|events|pds|limit|cq|mr|qp|hold|kmem "
			"DEV [ARGS]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	std::string_view cmd = argv[1];
	const char *dev = argv[2];
	auto num = [&](int i) { return i < argc ? atoi(argv[i]) : -1; };

	if (cmd == "attrs")
		return cmd_attrs(dev);
	if (cmd == "port")
		return cmd_port(dev);
	if (cmd == "gids")
		return cmd_gids(dev);
	if (cmd == "events" && argc == 5)
		return cmd_events(dev, num(3), num(4));
	if (cmd == "pds" && argc == 5)
		return cmd_pds(dev, num(3), num(4));
	if (cmd == "qp")
		return cmd_qp(dev);
	if (cmd == "mr")
		return cmd_mr(dev);
	if (cmd == "cq")
		return cmd_cq(dev);
	if (cmd == "limit" && argc == 5)
		return cmd_limit(dev, argv[3], num(4));
	if (cmd == "hold" && argc == 4)
		return cmd_hold(dev, num(3));
	if (cmd == "kmem" && argc <= 4)
		return cmd_kmem(dev, argc == 4 ? argv[3] : nullptr);
	return usage();
}
