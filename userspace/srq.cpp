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

ibv_srq *create_srq(ibv_pd *ibpd, ibv_srq_init_attr *attr) noexcept
{
	auto *s = new (std::nothrow) srq{};
	if (!s) {
		errno = ENOMEM;
		return nullptr;
	}
	pthread_spin_init(&s->rq.lock, PTHREAD_PROCESS_PRIVATE);

	struct ibv_create_srq cmd{};
	with_drv_data<ib_uverbs_create_srq_resp, sroce_create_srq_resp> resp{};
	int ret = ibv_cmd_create_srq(ibpd, &s->vsrq.srq, attr, &cmd,
				     sizeof(cmd), resp.core(), sizeof(resp));
	if (ret) {
		errno = ret;
		goto err_free;
	}
	if (!s->rq.r.attach(ibpd->context->cmd_fd, resp.drv.ring,
			    sizeof(sroce_recv_wqe))) {
		int saved = errno;
		ibv_cmd_destroy_srq(&s->vsrq.srq);
		errno = saved;
		goto err_free;
	}
	s->rq.max_sge = attr->attr.max_sge;
	return &s->vsrq.srq;

err_free:
	pthread_spin_destroy(&s->rq.lock);
	delete s;
	return nullptr;
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
	srq *s = to_srq(ibsrq);
	pthread_spin_destroy(&s->rq.lock);
	delete s;
	return 0;
}

int post_srq_recv(ibv_srq *ibsrq, ibv_recv_wr *wr,
		  ibv_recv_wr **bad_wr) noexcept
{
	bool published;

	return post_recv_wrs(to_srq(ibsrq)->rq, wr, bad_wr, &published);
}

} // namespace sroce
