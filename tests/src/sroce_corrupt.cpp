// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-corrupt: an application that scribbles on the rings it shares with
// the kernel must get error completions, an error state or an error event,
// never a kernel fault. This test reaches the provider's ring structures
// (userspace/sroce.h) the way a buggy application's stray stores would.
//
//   sroce-corrupt DEV sq_index|wqe|cq_index|xrc_doorbell|xrc_post_send|
//                     qp_modify_method|cq_resize_resp
#include "../../userspace/sroce.h"
#include "check.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <poll.h>
#include <string_view>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/rdma_user_ioctl_cmds.h>

namespace {

// The doorbell as the provider rings it (SROCE_METHOD_QP_DOORBELL).
int doorbell(ibv_qp *qp)
{
	with_drv_data<ib_uverbs_ioctl_hdr, ib_uverbs_attr> req{};
	req.core()->length = sizeof(req);
	req.core()->object_id = UVERBS_OBJECT_QP;
	req.core()->method_id = SROCE_METHOD_QP_DOORBELL;
	req.core()->num_attrs = 1;
	req.drv.attr_id = SROCE_ATTR_DOORBELL_QP_HANDLE;
	req.drv.data = qp->handle;
	return ioctl(qp->context->cmd_fd, RDMA_VERBS_IOCTL, req.core());
}

ibv_qp_state state_of(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	return a.qp_state;
}

// An RC QP connected to itself, in RTS.
ibv_qp *self_qp(ibv_context *ctx, ibv_pd *pd, ibv_cq *cq)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap = { 8, 8, 1, 1, 0 };
	ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp)
		return nullptr;
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	ibv_query_gid(ctx, 1, 1, &a.ah_attr.grh.dgid);
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
						   IBV_QP_PATH_MTU |
						   IBV_QP_DEST_QPN |
						   IBV_QP_RQ_PSN |
						   IBV_QP_MAX_DEST_RD_ATOMIC |
						   IBV_QP_MIN_RNR_TIMER);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = scaled_qp_timeout();
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 1;
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
						   IBV_QP_RETRY_CNT |
						   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						   IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(ret == 0, "QP to RTS: %s", strerror(ret));
	return qp;
}

bool wait_wc(ibv_cq *cq, ibv_wc &wc)
{
	for (int i = 0; i < 5000; i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			return true;
		usleep(1000);
	}
	return false;
}

// A producer index no WQE could have reached: the QP goes to error.
void t_sq_index(ibv_context *, ibv_pd *, ibv_cq *, ibv_qp *qp)
{
	sroce::qp *q = sroce::to_qp(qp);
	q->sq.hdr()->prod = q->sq_prod + 123457;
	q->sq.hdr()->kernel_active = 0;
	CHECK(doorbell(qp) == 0, "doorbell: %s", strerror(errno));
	for (int i = 0; i < 1000 && state_of(qp) != IBV_QPS_ERR; i++)
		usleep(1000);
	CHECK(state_of(qp) == IBV_QPS_ERR, "QP state %d after a bad index",
	      state_of(qp));
}

// A WQE with an unknown opcode and too many SGEs: LOC_QP_OP_ERR.
void t_wqe(ibv_context *, ibv_pd *, ibv_cq *cq, ibv_qp *qp)
{
	sroce::qp *q = sroce::to_qp(qp);
	auto *wqe = static_cast<sroce_send_wqe *>(q->sq.slot(q->sq_prod));
	memset(wqe, 0xa5, q->sq.slot_size);
	wqe->wr_id = 4242;
	wqe->opcode = 99;
	wqe->send_flags = IBV_SEND_SIGNALED;
	wqe->num_sge = 1000;
	q->sq_prod++;
	q->sq.hdr()->prod = q->sq_prod;
	CHECK(doorbell(qp) == 0, "doorbell: %s", strerror(errno));
	ibv_wc wc{};
	bool got = wait_wc(cq, wc);
	CHECK(got, "no completion for a bad WQE");
	if (got)
		CHECK(wc.wr_id == 4242 && wc.status == IBV_WC_LOC_QP_OP_ERR,
		      "wr_id %llu status %s", (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
	CHECK(state_of(qp) == IBV_QPS_ERR, "QP state %d", state_of(qp));
}

// A consumer index on the CQ no poller could have published: CQ error.
void t_cq_index(ibv_context *ctx, ibv_pd *pd, ibv_cq *cq, ibv_qp *qp)
{
	sroce::cq *c = sroce::to_cq(cq);
	c->r.hdr()->cons = c->cons + 777777;

	static char buf[64];
	ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ibv_sge sge = { uintptr_t(buf), 8, mr ? mr->lkey : 0 };
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = uintptr_t(buf);
	wr.wr.rdma.rkey = mr ? mr->rkey : 0;
	CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post");

	bool got = false;
	for (int i = 0; i < 50 && !got; i++) {
		pollfd pfd = { ctx->async_fd, POLLIN, 0 };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ibv_async_event ev;
		if (ibv_get_async_event(ctx, &ev))
			break;
		got = ev.event_type == IBV_EVENT_CQ_ERR;
		ibv_ack_async_event(&ev);
	}
	CHECK(got, "no IBV_EVENT_CQ_ERR for a corrupt CQ consumer index");
	if (mr)
		ibv_dereg_mr(mr);
}

// @use(qp) on an XRC receive QP of a new XRCD (ib_core's share of a target
// QP, with no rings), then both torn down, each step checked.
void with_xrc_recv_qp(ibv_context *ctx, const std::function<void(ibv_qp *)> &use)
{
	ibv_xrcd_init_attr xa{};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	ibv_xrcd *xrcd = ibv_open_xrcd(ctx, &xa);
	CHECK(xrcd, "open XRCD: %s", strerror(errno));
	if (!xrcd)
		return;
	ibv_qp_init_attr_ex ia{};
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = xrcd;
	ibv_qp *qp = ibv_create_qp_ex(ctx, &ia);
	CHECK(qp, "create XRC_RECV QP: %s", strerror(errno));
	if (qp) {
		use(qp);
		CHECK(ibv_destroy_qp(qp) == 0, "destroy XRC_RECV QP");
	}
	CHECK(ibv_close_xrcd(xrcd) == 0, "close XRCD");
}

// The driver's doorbell method given an XRC receive QP (ib_core's share of
// a target QP, with no rings): refused with EINVAL, the kernel untouched.
void t_xrc_doorbell(ibv_context *ctx, ibv_pd *, ibv_cq *, ibv_qp *)
{
	with_xrc_recv_qp(ctx, [](ibv_qp *qp) {
		int ret = doorbell(qp);
		CHECK(ret == -1 && errno == EINVAL,
		      "doorbell on an XRC receive QP: %d (%s), expected EINVAL",
		      ret, strerror(errno));
	});
}

// ib_uverbs' write command POST_SEND (libibverbs' ibv_cmd_post_send(),
// which sroce's provider never calls: it fills the send ring itself) given
// an XRC receive QP: not offered (EOPNOTSUPP), the WR handed back. ib_core
// makes the target QP as a kernel QP, with no ring mapped, so were the
// command enabled (the device's uverbs_cmd_mask, as rxe and siw set it)
// uverbs would hand sroce_post_send() the process's WRs, inline data at its
// addresses included, for a QP with no send CQ: the command must stay off,
// or sroce_post_send() refuse such QPs first. An inline SEND and a plain one.
extern "C" int ibv_cmd_post_send(ibv_qp *ibqp, ibv_send_wr *wr,
				 ibv_send_wr **bad_wr);

void t_xrc_post_send(ibv_context *ctx, ibv_pd *, ibv_cq *, ibv_qp *)
{
	with_xrc_recv_qp(ctx, [](ibv_qp *qp) {
		static char data[64] = "inline from a user address";
		for (unsigned flags : { unsigned(IBV_SEND_INLINE), 0U }) {
			ibv_sge sge{ uintptr_t(data), sizeof(data), 0 };
			ibv_send_wr wr{}, *bad = nullptr;
			wr.wr_id = 7;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = flags | IBV_SEND_SIGNALED;
			int ret = ibv_cmd_post_send(qp, &wr, &bad);
			CHECK(ret == EOPNOTSUPP && bad == &wr, "POST_SEND "
			      "(write command) of a%s SEND on an XRC receive "
			      "QP: %d (%s), bad_wr %s, expected EOPNOTSUPP and "
			      "the WR", flags ? "n inline" : "", ret,
			      strerror(ret), bad == &wr ? "the WR" : "not the WR");
		}
	});
}

// SROCE_METHOD_QP_MODIFY (the modify an importing process uses) makes the
// checks ib_uverbs' own modify makes: a state past ERR is EINVAL, a
// privileged Q_Key (high bit) is EPERM; the QP is left as it was, and a
// good modify through it works.
int modify_method(ibv_qp *qp, ib_uverbs_modify_qp cmd)
{
	using namespace sroce;

	cmd.qp_handle = qp->handle;
	return call_method(qp->context->cmd_fd, UVERBS_OBJECT_QP,
			   SROCE_METHOD_QP_MODIFY,
			   std::array{ idr_attr(SROCE_ATTR_MODIFY_QP_HANDLE,
						qp->handle),
				       ptr_attr(SROCE_ATTR_MODIFY_QP_CMD, &cmd,
						sizeof(cmd)) });
}

void t_qp_modify_method(ibv_context *, ibv_pd *pd, ibv_cq *cq, ibv_qp *)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap = { 1, 1, 1, 1, 0 };
	ibv_qp *qp = ibv_create_qp(pd, &ia);
	CHECK(qp, "create UD QP: %s", strerror(errno));
	if (!qp)
		return;
	ib_uverbs_modify_qp cmd{};
	cmd.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			IBV_QP_QKEY;
	cmd.qp_state = IBV_QPS_INIT;
	cmd.port_num = 1;
	cmd.qkey = 0x80000011;
	int ret = modify_method(qp, cmd);
	CHECK(ret == EPERM, "privileged Q_Key: %d (%s), expected EPERM", ret,
	      strerror(ret));
	cmd.qkey = 0x11;
	cmd.qp_state = IBV_QPS_ERR + 1;
	ret = modify_method(qp, cmd);
	CHECK(ret == EINVAL, "state %d: %d (%s), expected EINVAL",
	      cmd.qp_state, ret, strerror(ret));
	CHECK(state_of(qp) == IBV_QPS_RESET, "QP state %d after refused "
	      "modifies", state_of(qp));
	cmd.qp_state = IBV_QPS_INIT;
	ret = modify_method(qp, cmd);
	CHECK(ret == 0, "a good modify: %s", strerror(ret));
	ibv_qp_attr a{};
	ibv_qp_init_attr qa{};
	ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY, &qa);
	CHECK(a.qp_state == IBV_QPS_INIT && a.qkey == 0x11,
	      "state %d qkey %#x after a good modify", a.qp_state, a.qkey);
	CHECK(ibv_destroy_qp(qp) == 0, "destroy UD QP");
}

// A signaled self-WRITE of 8 bytes; true once its completion is polled.
bool self_write(ibv_pd *pd, ibv_cq *cq, ibv_qp *qp, uint64_t wr_id)
{
	static char buf[64];
	ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
						      IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr, "reg MR: %s", strerror(errno));
	if (!mr)
		return false;
	ibv_sge sge = { uintptr_t(buf), 8, mr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = uintptr_t(buf + 32);
	wr.wr.rdma.rkey = mr->rkey;
	ibv_wc wc{};
	bool got = ibv_post_send(qp, &wr, &bad) == 0 && wait_wc(cq, wc);
	CHECK(got, "no completion for WRITE %llu", (unsigned long long)wr_id);
	if (got)
		CHECK(wc.wr_id == wr_id && wc.status == IBV_WC_SUCCESS,
		      "WRITE %llu: wr_id %llu status %s",
		      (unsigned long long)wr_id, (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
	ibv_dereg_mr(mr);
	return got;
}

// ib_uverbs' resize command as libibverbs writes it, with the response
// buffer at @resp and @out_words of room there.
int resize_write(ibv_cq *cq, int cqe, void *resp, uint16_t out_words)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_resize_cq cmd;
	} req{};
	req.hdr.command = IB_USER_VERBS_CMD_RESIZE_CQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = out_words;
	req.cmd.response = uintptr_t(resp);
	req.cmd.cq_handle = cq->handle;
	req.cmd.cqe = cqe;
	return write(cq->context->cmd_fd, &req, sizeof(req)) == sizeof(req) ?
		       0 : errno;
}

// A resize whose response has no room for the new ring's geometry (EINVAL),
// or whose geometry lands on memory the process cannot write (EFAULT),
// leaves the CQ on the ring its provider has mapped: completions after it
// are still polled, and a good resize then works.
void t_cq_resize_resp(ibv_context *, ibv_pd *pd, ibv_cq *cq, ibv_qp *qp)
{
	const uint16_t core_words = sizeof(ib_uverbs_resize_cq_resp) / 4;
	const uint16_t all_words = core_words +
				   sizeof(sroce_create_cq_resp) / 4;
	long page = sysconf(_SC_PAGESIZE);

	ibv_qp_attr a{};
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_ACCESS_FLAGS) == 0,
	      "QP to remote write: %s", strerror(errno));
	CHECK(self_write(pd, cq, qp, 1), "the CQ works before");
	ib_uverbs_resize_cq_resp core{};
	int ret = resize_write(cq, 64, &core, core_words);
	CHECK(ret == EINVAL, "resize with no room for the ring: %d (%s), "
	      "expected EINVAL", ret, strerror(ret));
	CHECK(self_write(pd, cq, qp, 2), "the CQ lost a completion after a "
	      "resize refused with EINVAL");

	// The core response fits in the last bytes of a writable page; the
	// driver's part falls on a page the process cannot write.
	auto *two = static_cast<char *>(mmap(nullptr, 2 * page,
					     PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS, -1,
					     0));
	CHECK(two != MAP_FAILED, "mmap: %s", strerror(errno));
	if (two == MAP_FAILED)
		return;
	CHECK(mprotect(two + page, page, PROT_READ) == 0, "mprotect: %s",
	      strerror(errno));
	ret = resize_write(cq, 64, two + page - sizeof(core), all_words);
	CHECK(ret == EFAULT, "resize with its ring geometry on a read-only "
	      "page: %d (%s), expected EFAULT", ret, strerror(ret));
	CHECK(self_write(pd, cq, qp, 3), "the CQ lost a completion after a "
	      "resize refused with EFAULT");
	munmap(two, 2 * page);

	ret = ibv_resize_cq(cq, 64);
	CHECK(ret == 0 && cq->cqe >= 64, "a good resize: %d (%s), cqe %d",
	      ret, strerror(ret), cq->cqe);
	CHECK(self_write(pd, cq, qp, 4), "the CQ works after a good resize");
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sroce-corrupt DEV sq_index|wqe|cq_index|"
				"xrc_doorbell|qp_modify_method|"
				"cq_resize_resp\n");
		return 2;
	}
	std::string_view t = argv[2];
	auto fn = t == "sq_index"	  ? t_sq_index :
		  t == "wqe"		  ? t_wqe :
		  t == "cq_index"	  ? t_cq_index :
		  t == "xrc_doorbell"	  ? t_xrc_doorbell :
		  t == "xrc_post_send"	  ? t_xrc_post_send :
		  t == "qp_modify_method" ? t_qp_modify_method :
		  t == "cq_resize_resp"	  ? t_cq_resize_resp : nullptr;
	if (!fn)
		return 2;

	ibv_context *ctx = open_device(argv[1]);
	if (!ctx)
		return 1;
	ibv_pd *pd = ibv_alloc_pd(ctx);
	ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	ibv_qp *qp = pd && cq ? self_qp(ctx, pd, cq) : nullptr;
	if (qp)
		fn(ctx, pd, cq, qp);
	else
		failures++;
	// Everything still tears down.
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
	if (cq)
		CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	if (pd)
		CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
	ibv_close_device(ctx);
	if (!failures)
		printf("%s ok\n", argv[2]);
	return failures ? 1 : 0;
}
