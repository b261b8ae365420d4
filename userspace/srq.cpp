// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Shared receive queues, and posting receive WQEs into any receive ring.
#include "sroce.h"

#include <new>

namespace sroce {

int post_recv_wrs(recv_queue &q, ibv_recv_wr *wr, ibv_recv_wr **bad_wr,
		  bool *published) noexcept
{
	int ret = 0;

	pthread_spin_lock(&q.lock);
	uint32_t start = q.prod;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || uint32_t(wr->num_sge) > q.max_sge) {
			ret = EINVAL;
			break;
		}
		uint32_t cons = shared(q.r.hdr()->cons)
					.load(std::memory_order_acquire);
		if (q.prod - cons >= q.r.num_slots) {
			ret = ENOMEM;
			break;
		}
		auto *wqe = static_cast<sroce_recv_wqe *>(q.r.slot(q.prod));
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->reserved = 0;
		auto *sges = reinterpret_cast<sroce_sge *>(wqe + 1);
		for (int i = 0; i < wr->num_sge; i++)
			sges[i] = { wr->sg_list[i].addr, wr->sg_list[i].length,
				    wr->sg_list[i].lkey };
		q.prod++;
	}
	*published = q.prod != start;
	if (*published)
		shared(q.r.hdr()->prod).store(q.prod, std::memory_order_seq_cst);
	pthread_spin_unlock(&q.lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

namespace {

srq *new_srq() noexcept
{
	auto *s = new (std::nothrow) srq{};
	if (!s) {
		errno = ENOMEM;
		return nullptr;
	}
	pthread_spin_init(&s->rq.lock, PTHREAD_PROCESS_PRIVATE);
	return s;
}

void free_srq(srq *s) noexcept
{
	pthread_spin_destroy(&s->rq.lock);
	delete s;
}

// After the create command (ret): map the ring, or undo and fail.
ibv_srq *finish_srq(srq *s, int ret, int cmd_fd,
		    const sroce_create_srq_resp &drv, uint32_t max_sge) noexcept
{
	if (ret) {
		errno = ret;
		free_srq(s);
		return nullptr;
	}
	if (!s->rq.r.attach(cmd_fd, drv.ring, sizeof(sroce_recv_wqe))) {
		int saved = errno;
		ibv_cmd_destroy_srq(&s->vsrq.srq);
		free_srq(s);
		errno = saved;
		return nullptr;
	}
	s->rq.max_sge = max_sge;
	return &s->vsrq.srq;
}

} // namespace

ibv_srq *create_srq(ibv_pd *ibpd, ibv_srq_init_attr *attr) noexcept
{
	srq *s = new_srq();
	if (!s)
		return nullptr;

	struct ibv_create_srq cmd{};
	with_drv_data<ib_uverbs_create_srq_resp, sroce_create_srq_resp> resp{};
	int ret = ibv_cmd_create_srq(ibpd, &s->vsrq.srq, attr, &cmd,
				     sizeof(cmd), resp.core(), sizeof(resp));
	return finish_srq(s, ret, ibpd->context->cmd_fd, resp.drv,
			  attr->attr.max_sge);
}

// Basic and XRC SRQs (an XRC SRQ has a number, an XRC domain and a CQ).
ibv_srq *create_srq_ex(ibv_context *ibctx,
		       ibv_srq_init_attr_ex *attr) noexcept
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;

	if (attr->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type != IBV_SRQT_BASIC &&
	    attr->srq_type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	srq *s = new_srq();
	if (!s)
		return nullptr;

	struct ibv_create_xsrq cmd{};
	with_drv_data<ib_uverbs_create_srq_resp, sroce_create_srq_resp> resp{};
	int ret = ibv_cmd_create_srq_ex(ibctx, &s->vsrq, attr, &cmd,
					sizeof(cmd), resp.core(), sizeof(resp));
	return finish_srq(s, ret, ibctx->cmd_fd, resp.drv, attr->attr.max_sge);
}

int get_srq_num(ibv_srq *ibsrq, uint32_t *srq_num) noexcept
{
	srq *s = to_srq(ibsrq);

	if (s->vsrq.srq_type != IBV_SRQT_XRC)
		return EOPNOTSUPP;
	*srq_num = s->vsrq.srq_num;
	return 0;
}

int modify_srq(ibv_srq *ibsrq, ibv_srq_attr *attr, int mask) noexcept
{
	struct ibv_modify_srq cmd{};

	return ibv_cmd_modify_srq(ibsrq, attr, mask, &cmd, sizeof(cmd));
}

int query_srq(ibv_srq *ibsrq, ibv_srq_attr *attr) noexcept
{
	struct ibv_query_srq cmd{};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int destroy_srq(ibv_srq *ibsrq) noexcept
{
	int ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	free_srq(to_srq(ibsrq));
	return 0;
}

int post_srq_recv(ibv_srq *ibsrq, ibv_recv_wr *wr,
		  ibv_recv_wr **bad_wr) noexcept
{
	bool published;

	return post_recv_wrs(to_srq(ibsrq)->rq, wr, bad_wr, &published);
}

} // namespace sroce
