// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-import: ibv_import_device(3), ibv_import_pd(3), ibv_import_mr(3) and
// their unimport, as applications share a context: in one process (a dup'ed
// command fd) and across two (a forked child, whose credentials differ, so
// ib_uverbs refuses it write() commands). The child creates its own CQ and
// QP on the imported context and PD, and moves data with the imported MR
// as the local buffer and as the remote target; the owner checks the bytes.
//
//   sroce-import DEV
#include "check.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

const size_t kBuf = 64 * 1024;

// What the owner tells the child, and the child the owner.
struct Hello {
	uint32_t pd_handle, mr_handle, qpn;
	uint64_t addr; // the MR's address in the owner's address space
};

void put(int fd, const void *p, size_t n)
{
	CHECK(write(fd, p, n) == ssize_t(n), "pipe write: %s", strerror(errno));
}

bool get(int fd, void *p, size_t n)
{
	ssize_t r = read(fd, p, n);
	CHECK(r == ssize_t(n), "pipe read: %zd", r);
	return r == ssize_t(n);
}

ibv_qp *make_qp(ibv_pd *pd, ibv_cq *cq)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap = { 16, 16, 1, 1, 0 };
	return ibv_create_qp(pd, &ia);
}

bool connect_qp(ibv_context *ctx, ibv_qp *qp, uint32_t dqpn)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int ret = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	ibv_query_gid(ctx, 1, 1, &a.ah_attr.grh.dgid);
	ret = ret ?: ibv_modify_qp(qp, &a,
				   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = scaled_qp_timeout();
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	ret = ret ?: ibv_modify_qp(qp, &a,
				   IBV_QP_STATE | IBV_QP_SQ_PSN |
					   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY |
					   IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(ret == 0, "connecting QP 0x%x: %s", qp->qp_num, strerror(ret));
	return ret == 0;
}

// One work request on @qp; waits for its completion on @cq.
bool run_wr(ibv_qp *qp, ibv_cq *cq, ibv_wr_opcode op, uint64_t laddr,
	    uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
	    uint64_t id)
{
	ibv_sge sge = { laddr, len, lkey };
	ibv_send_wr wr = one_sge_wr(&sge, op, id), *bad;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	int ret = ibv_post_send(qp, &wr, &bad);
	CHECK(ret == 0, "post %d: %s", op, strerror(ret));
	if (ret)
		return false;
	ibv_wc wc{};
	for (long i = 0; i < 10000 * time_scale(); i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1) {
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == id,
			      "wr %llu: %s", (unsigned long long)wc.wr_id,
			      ibv_wc_status_str(wc.status));
			return wc.status == IBV_WC_SUCCESS;
		}
		usleep(1000);
	}
	CHECK(false, "no completion for wr %llu", (unsigned long long)id);
	return false;
}

// In one process: a dup'ed fd imports; bad handles and fds are refused.
void same_process(ibv_context *ctx, ibv_pd *pd, ibv_mr *mr)
{
	errno = 0;
	CHECK(!ibv_import_device(-1) && errno, "import of fd -1");
	int devnull = open("/dev/null", O_RDWR);
	errno = 0;
	CHECK(!ibv_import_device(devnull) && errno, "import of /dev/null");
	close(devnull);

	ibv_context *ctx2 = ibv_import_device(dup(ctx->cmd_fd));
	CHECK(ctx2, "ibv_import_device: %s", strerror(errno));
	if (!ctx2)
		return;
	CHECK(ctx2->device == ctx->device, "imported another device");
	errno = 0;
	CHECK(!ibv_import_pd(ctx2, 0x7fffff00) && errno,
	      "import of a PD handle that does not exist");
	errno = 0;
	CHECK(!ibv_import_pd(ctx2, mr->handle + 1000) && errno,
	      "import of a bad PD handle");
	ibv_pd *pd2 = ibv_import_pd(ctx2, pd->handle);
	CHECK(pd2 && pd2->handle == pd->handle && pd2->context == ctx2,
	      "ibv_import_pd: %s", strerror(errno));
	if (!pd2) {
		ibv_close_device(ctx2);
		return;
	}
	errno = 0;
	CHECK(!ibv_import_mr(pd2, 0x7fffff00) && errno,
	      "import of an MR handle that does not exist");
	ibv_mr *mr2 = ibv_import_mr(pd2, mr->handle);
	CHECK(mr2, "ibv_import_mr: %s", strerror(errno));
	if (mr2) {
		CHECK(mr2->lkey == mr->lkey && mr2->rkey == mr->rkey &&
			      mr2->length == mr->length && !mr2->addr &&
			      mr2->pd == pd2 && mr2->handle == mr->handle,
		      "imported MR: lkey 0x%x rkey 0x%x length %zu addr %p",
		      mr2->lkey, mr2->rkey, mr2->length, mr2->addr);
		ibv_unimport_mr(mr2);
	}
	ibv_unimport_pd(pd2);
	CHECK(ibv_close_device(ctx2) == 0, "close imported context");
	// The owner's objects are untouched by the unimports.
	ibv_pd *pd3 = ibv_alloc_pd(ctx);
	CHECK(pd3, "alloc PD after unimport");
	if (pd3)
		ibv_dealloc_pd(pd3);
}

// The child: everything through the imported context.
int child(int cmd_fd, int rfd, int wfd)
{
	Hello h{}, me{};
	if (!get(rfd, &h, sizeof(h)))
		return 1;
	ibv_context *ctx = ibv_import_device(cmd_fd);
	CHECK(ctx, "child: ibv_import_device: %s", strerror(errno));
	if (!ctx)
		return 1;
	ibv_pd *pd = ibv_import_pd(ctx, h.pd_handle);
	ibv_mr *mr = pd ? ibv_import_mr(pd, h.mr_handle) : nullptr;
	ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	ibv_qp *qp = pd && cq ? make_qp(pd, cq) : nullptr;
	CHECK(pd && mr && cq && qp, "child: pd %p mr %p cq %p qp %p: %s", pd,
	      mr, cq, qp, strerror(errno));
	me.qpn = qp ? qp->qp_num : 0;
	put(wfd, &me, sizeof(me));
	if (!qp || !connect_qp(ctx, qp, h.qpn))
		return 1;
	put(wfd, &me, sizeof(me)); // connected

	// The imported MR as the local buffer (WRITE from it, READ into it)
	// and, through our QP's responder, as the remote target of the
	// owner's WRITE (and this process's own WRITE).
	run_wr(qp, cq, IBV_WR_RDMA_WRITE, h.addr, 4096, mr->lkey, h.addr + 8192,
	       mr->rkey, 1);
	run_wr(qp, cq, IBV_WR_RDMA_READ, h.addr + 16384, 4096, mr->lkey, h.addr,
	       mr->rkey, 2);
	put(wfd, &me, sizeof(me)); // done: the owner writes to us now
	get(rfd, &h, sizeof(h));

	CHECK(ibv_destroy_qp(qp) == 0, "child: destroy QP");
	CHECK(ibv_destroy_cq(cq) == 0, "child: destroy CQ");
	ibv_unimport_mr(mr);
	ibv_unimport_pd(pd);
	CHECK(ibv_close_device(ctx) == 0, "child: close");
	return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sroce-import DEV\n");
		return 2;
	}
	ibv_context *ctx = open_device(argv[1]);
	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	auto *buf = static_cast<uint8_t *>(aligned_alloc(4096, kBuf));
	memset(buf, 0, kBuf);
	for (size_t i = 0; i < 4096; i++)
		buf[i] = uint8_t(i * 13 + 5);
	ibv_pd *pd = ibv_alloc_pd(ctx);
	ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, kBuf,
				     IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ)
			: nullptr;
	ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	ibv_qp *qp = pd && cq ? make_qp(pd, cq) : nullptr;
	CHECK(pd && mr && cq && qp, "owner setup: %s", strerror(errno));
	if (!qp)
		return 1;

	same_process(ctx, pd, mr);

	int to_child[2], to_owner[2];
	if (pipe(to_child) || pipe(to_owner))
		return 1;
	int child_fd = dup(ctx->cmd_fd);
	pid_t pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(to_owner[0]);
		_exit(child(child_fd, to_child[0], to_owner[1]));
	}
	close(child_fd);
	close(to_child[0]);
	close(to_owner[1]);

	Hello h{ pd->handle, mr->handle, qp->qp_num, uintptr_t(buf) }, c{};
	put(to_child[1], &h, sizeof(h));
	bool ok = get(to_owner[0], &c, sizeof(c)) && c.qpn &&
		  connect_qp(ctx, qp, c.qpn) && get(to_owner[0], &c, sizeof(c)) &&
		  get(to_owner[0], &c, sizeof(c));
	if (ok) {
		CHECK(!memcmp(buf + 8192, buf, 4096),
		      "the child's WRITE from the imported MR did not land");
		CHECK(!memcmp(buf + 16384, buf, 4096),
		      "the child's READ into the imported MR did not land");
		run_wr(qp, cq, IBV_WR_RDMA_WRITE, uintptr_t(buf), 4096,
		       mr->lkey, uintptr_t(buf) + 40960, mr->rkey, 3);
		CHECK(!memcmp(buf + 40960, buf, 4096),
		      "the owner's WRITE through the child's QP did not land");
	}
	put(to_child[1], &h, sizeof(h));
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child failed (status 0x%x)", status);

	CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg MR after the child unimported it");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD after the child unimported it");
	ibv_close_device(ctx);
	free(buf);
	if (!failures)
		printf("import ok\n");
	return failures ? 1 : 0;
}
