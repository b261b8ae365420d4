// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Queue pairs: posting writes WQEs into rings shared with the kernel;
// ibv_post_recv never enters the kernel, ibv_post_send rings the doorbell
// only when the kernel is not already working on the queue.
#include "sroce.h"

#include <cstring>
#include <new>
#include <sys/ioctl.h>

#include <rdma/rdma_user_ioctl_cmds.h>

namespace sroce {
namespace {

// Asks the kernel to look at the QP's rings (SROCE_METHOD_QP_DOORBELL).
int ring_doorbell(qp *q) noexcept
{
	// The header ends in a flexible array of attributes: one here.
	with_drv_data<ib_uverbs_ioctl_hdr, ib_uverbs_attr> req{};
	ib_uverbs_ioctl_hdr *hdr = req.core();

	hdr->length = sizeof(req);
	hdr->object_id = UVERBS_OBJECT_QP;
	hdr->method_id = SROCE_METHOD_QP_DOORBELL;
	hdr->num_attrs = 1;
	hdr->driver_id = 0; // RDMA_DRIVER_UNKNOWN
	req.drv.attr_id = SROCE_ATTR_DOORBELL_QP_HANDLE;
	req.drv.data = q->vqp.qp.handle;
	if (ioctl(q->vqp.qp.context->cmd_fd, RDMA_VERBS_IOCTL, hdr))
		return errno;
	return 0;
}

uint32_t qp_state(const qp *q)
{
	return shared(q->sq.hdr()->qp_state).load(std::memory_order_acquire);
}

bool ring_full(const ring &r, uint32_t prod)
{
	uint32_t cons =
		shared(r.hdr()->cons).load(std::memory_order_acquire);
	return prod - cons >= r.num_slots;
}

// Checks one send WR against the QP; 0 or the errno to return.
int check_send_wr(const qp *q, const ibv_send_wr *wr) noexcept
{
	ibv_qp_type type = q->vqp.qp.qp_type;

	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (type == IBV_QPT_UD)
			return EINVAL;
		break;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
		if (type != IBV_QPT_RC)
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	if (wr->num_sge < 0)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM &&
		    wr->opcode != IBV_WR_RDMA_WRITE &&
		    wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
			return EINVAL;
		uint64_t total = 0;
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > q->cap.max_inline_data)
			return EINVAL;
	} else if (uint32_t(wr->num_sge) > q->cap.max_send_sge) {
		return EINVAL;
	}
	return 0;
}

void write_send_wqe(const ibv_send_wr *wr, sroce_send_wqe *wqe,
		    ibv_qp_type type) noexcept
{
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	if (wr->opcode == IBV_WR_SEND_WITH_INV)
		wqe->ex = wr->invalidate_rkey;
	else
		wqe->ex = wr->imm_data;

	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.swap = wr->wr.atomic.swap;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	default:
		break;
	}
	if (type == IBV_QPT_UD) {
		wqe->wr.ud.ah_num = reinterpret_cast<ah *>(wr->wr.ud.ah)->ah_num;
		wqe->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
	}

	char *payload = reinterpret_cast<char *>(wqe + 1);
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint32_t off = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			const ibv_sge &sge = wr->sg_list[i];
			memcpy(payload + off,
			       reinterpret_cast<const void *>(uintptr_t(sge.addr)),
			       sge.length);
			off += sge.length;
		}
		wqe->inline_len = off;
		return;
	}
	auto *sges = reinterpret_cast<sroce_sge *>(payload);
	for (int i = 0; i < wr->num_sge; i++)
		sges[i] = { wr->sg_list[i].addr, wr->sg_list[i].length,
			    wr->sg_list[i].lkey };
	wqe->num_sge = wr->num_sge;
}

} // namespace

ibv_qp *create_qp(ibv_pd *ibpd, ibv_qp_init_attr *attr) noexcept
{
	auto *q = new (std::nothrow) qp{};
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}
	pthread_spin_init(&q->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&q->rq_lock, PTHREAD_PROCESS_PRIVATE);

	struct ibv_create_qp cmd{};
	with_drv_data<ib_uverbs_create_qp_resp, sroce_create_qp_resp> resp{};
	int ret = ibv_cmd_create_qp(ibpd, &q->vqp.qp, attr, &cmd, sizeof(cmd),
				    resp.core(), sizeof(resp));
	if (ret) {
		errno = ret;
		goto err_free;
	}
	if (!q->sq.attach(ibpd->context->cmd_fd, resp.drv.sq,
			  sizeof(sroce_send_wqe)) ||
	    !q->rq.attach(ibpd->context->cmd_fd, resp.drv.rq,
			  sizeof(sroce_recv_wqe))) {
		int saved = errno;
		ibv_cmd_destroy_qp(&q->vqp.qp);
		errno = saved;
		goto err_free;
	}
	q->cap = attr->cap;
	return &q->vqp.qp;

err_free:
	pthread_spin_destroy(&q->rq_lock);
	pthread_spin_destroy(&q->sq_lock);
	delete q;
	return nullptr;
}

int destroy_qp(ibv_qp *ibqp) noexcept
{
	int ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	qp *q = to_qp(ibqp);
	pthread_spin_destroy(&q->rq_lock);
	pthread_spin_destroy(&q->sq_lock);
	delete q;
	return 0;
}

int modify_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int attr_mask) noexcept
{
	struct ibv_modify_qp cmd{};

	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

int query_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int attr_mask,
	     ibv_qp_init_attr *init_attr) noexcept
{
	struct ibv_query_qp cmd{};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int post_send(ibv_qp *ibqp, ibv_send_wr *wr, ibv_send_wr **bad_wr) noexcept
{
	qp *q = to_qp(ibqp);
	int ret = 0;

	pthread_spin_lock(&q->sq_lock);
	uint32_t start = q->sq_prod;
	uint32_t state = qp_state(q);
	for (; wr; wr = wr->next) {
		if (state == IBV_QPS_RESET || state == IBV_QPS_INIT ||
		    state == IBV_QPS_RTR) {
			ret = EINVAL;
			break;
		}
		ret = check_send_wr(q, wr);
		if (ret)
			break;
		if (ring_full(q->sq, q->sq_prod)) {
			ret = ENOMEM;
			break;
		}
		write_send_wqe(wr,
			       static_cast<sroce_send_wqe *>(
				       q->sq.slot(q->sq_prod)),
			       ibqp->qp_type);
		q->sq_prod++;
	}
	bool doorbell = false;
	if (q->sq_prod != start) {
		// Publish, then see whether the kernel will find the WRs by
		// itself (it clears kernel_active before its last look).
		sroce_ring_hdr *hdr = q->sq.hdr();
		shared(hdr->prod).store(q->sq_prod, std::memory_order_seq_cst);
		doorbell = !shared(hdr->kernel_active)
				    .load(std::memory_order_seq_cst);
	}
	pthread_spin_unlock(&q->sq_lock);

	if (doorbell) {
		int db = ring_doorbell(q);
		if (!ret)
			ret = db;
	}
	if (ret)
		*bad_wr = wr;
	return ret;
}

int post_recv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept
{
	qp *q = to_qp(ibqp);
	int ret = 0;

	pthread_spin_lock(&q->rq_lock);
	uint32_t start = q->rq_prod;
	if (qp_state(q) == IBV_QPS_RESET)
		ret = EINVAL;
	for (; wr && !ret; wr = wr->next) {
		if (wr->num_sge < 0 ||
		    uint32_t(wr->num_sge) > q->cap.max_recv_sge) {
			ret = EINVAL;
			break;
		}
		if (ring_full(q->rq, q->rq_prod)) {
			ret = ENOMEM;
			break;
		}
		auto *wqe = static_cast<sroce_recv_wqe *>(q->rq.slot(q->rq_prod));
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->reserved = 0;
		auto *sges = reinterpret_cast<sroce_sge *>(wqe + 1);
		for (int i = 0; i < wr->num_sge; i++)
			sges[i] = { wr->sg_list[i].addr, wr->sg_list[i].length,
				    wr->sg_list[i].lkey };
		q->rq_prod++;
	}
	bool flush = false;
	if (q->rq_prod != start) {
		sroce_ring_hdr *hdr = q->rq.hdr();
		shared(hdr->prod).store(q->rq_prod, std::memory_order_seq_cst);
		flush = shared(hdr->flush).load(std::memory_order_seq_cst);
	}
	pthread_spin_unlock(&q->rq_lock);

	// In the error state the kernel must see the WR to flush it.
	if (flush) {
		int db = ring_doorbell(q);
		if (!ret)
			ret = db;
	}
	if (ret)
		*bad_wr = wr;
	return ret;
}

} // namespace sroce
