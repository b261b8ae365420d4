// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The ibv_wr_* API (ibv_qp_ex): wr_start takes the send lock; each wr_<op>
// call begins a WQE in the SQ ring and the wr_set_* calls fill it in, with
// the send path's helpers (qp.cpp); wr_complete publishes the batch (none
// of it after an error), wr_abort drops it.
#include "sroce.h"

#include <cstring>

namespace sroce {
namespace {

qp *from_ex(ibv_qp_ex *x)
{
	return reinterpret_cast<qp *>(x);
}

// Begin the next WQE of a wr_start batch, or nullptr after an error.
sroce_send_wqe *ex_new(ibv_qp_ex *x, ibv_wr_opcode opcode)
{
	qp *q = from_ex(x);

	if (q->ex_err)
		return nullptr;
	if (q->ex_cur) {
		q->sq_prod++;
		q->ex_cur = false;
	}
	if (!can_send(q) || !opcode_allowed(q->vqp.qp.qp_type, opcode)) {
		q->ex_err = EINVAL;
		return nullptr;
	}
	if (ring_full(q->sq, q->sq_prod)) {
		q->ex_err = ENOMEM;
		return nullptr;
	}
	q->ex_cur = true;
	return wqe_begin(q, opcode, x->wr_id, x->wr_flags);
}

// The WQE being built, or nullptr.
sroce_send_wqe *ex_cur(ibv_qp_ex *x)
{
	qp *q = from_ex(x);

	if (q->ex_err || !q->ex_cur)
		return nullptr;
	return static_cast<sroce_send_wqe *>(q->sq.slot(q->sq_prod));
}

void ex_fail(ibv_qp_ex *x, int err)
{
	if (err && !from_ex(x)->ex_err)
		from_ex(x)->ex_err = err;
}

void ex_start(ibv_qp_ex *x) noexcept
{
	qp *q = from_ex(x);

	pthread_spin_lock(&q->sq_lock);
	q->ex_start = q->sq_prod;
	q->ex_cur = false;
	q->ex_err = 0;
}

int ex_complete(ibv_qp_ex *x) noexcept
{
	qp *q = from_ex(x);
	int err = q->ex_err;

	if (q->ex_cur)
		q->sq_prod++;
	q->ex_cur = false;
	if (err) {
		q->sq_prod = q->ex_start;
		pthread_spin_unlock(&q->sq_lock);
		return err;
	}
	return publish_sends(q, q->ex_start);
}

void ex_abort(ibv_qp_ex *x) noexcept
{
	qp *q = from_ex(x);

	q->sq_prod = q->ex_start;
	q->ex_cur = false;
	pthread_spin_unlock(&q->sq_lock);
}

void ex_send(ibv_qp_ex *x) noexcept
{
	ex_new(x, IBV_WR_SEND);
}

void ex_send_imm(ibv_qp_ex *x, __be32 imm) noexcept
{
	if (sroce_send_wqe *w = ex_new(x, IBV_WR_SEND_WITH_IMM))
		w->ex = imm;
}

void ex_send_inv(ibv_qp_ex *x, uint32_t rkey) noexcept
{
	if (sroce_send_wqe *w = ex_new(x, IBV_WR_SEND_WITH_INV))
		w->ex = rkey;
}

void ex_rdma(ibv_qp_ex *x, ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
	     __be32 imm)
{
	if (sroce_send_wqe *w = ex_new(x, op)) {
		w->wr.rdma.remote_addr = addr;
		w->wr.rdma.rkey = rkey;
		w->ex = imm;
	}
}

void ex_rdma_write(ibv_qp_ex *x, uint32_t rkey, uint64_t addr) noexcept
{
	ex_rdma(x, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

void ex_rdma_write_imm(ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
		       __be32 imm) noexcept
{
	ex_rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

void ex_rdma_read(ibv_qp_ex *x, uint32_t rkey, uint64_t addr) noexcept
{
	ex_rdma(x, IBV_WR_RDMA_READ, rkey, addr, 0);
}

void ex_atomic(ibv_qp_ex *x, ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
	       uint64_t compare_add, uint64_t swap)
{
	if (sroce_send_wqe *w = ex_new(x, op)) {
		w->wr.atomic.remote_addr = addr;
		w->wr.atomic.rkey = rkey;
		w->wr.atomic.compare_add = compare_add;
		w->wr.atomic.swap = swap;
	}
}

void ex_cmp_swp(ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t compare,
		uint64_t swap) noexcept
{
	ex_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

void ex_fetch_add(ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
		  uint64_t add) noexcept
{
	ex_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

void ex_atomic_write(ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
		     const void *data) noexcept
{
	if (sroce_send_wqe *w = ex_new(x, IBV_WR_ATOMIC_WRITE)) {
		w->wr.atomic.remote_addr = addr;
		w->wr.atomic.rkey = rkey;
		memcpy(&w->wr.atomic.swap, data, sizeof(w->wr.atomic.swap));
	}
}

void ex_bind_mw(ibv_qp_ex *x, ibv_mw *mw, uint32_t rkey,
		const ibv_mw_bind_info *info) noexcept
{
	if (!mw || mw->type != IBV_MW_TYPE_2) {
		ex_fail(x, EINVAL);
		return;
	}
	if (sroce_send_wqe *w = ex_new(x, IBV_WR_BIND_MW))
		wqe_set_bind(w, mw, rkey, *info);
}

void ex_local_inv(ibv_qp_ex *x, uint32_t rkey) noexcept
{
	if (sroce_send_wqe *w = ex_new(x, IBV_WR_LOCAL_INV))
		w->ex = rkey;
}

void ex_set_ud_addr(ibv_qp_ex *x, ibv_ah *ibah, uint32_t remote_qpn,
		    uint32_t remote_qkey) noexcept
{
	if (sroce_send_wqe *w = ex_cur(x)) {
		if (ibah)
			wqe_set_ud(w, ibah, remote_qpn, remote_qkey);
		else
			ex_fail(x, EINVAL);
	}
}

void ex_set_xrc_srqn(ibv_qp_ex *x, uint32_t remote_srqn) noexcept
{
	if (sroce_send_wqe *w = ex_cur(x))
		w->xrc_srqn = remote_srqn;
}

void ex_set_sge(ibv_qp_ex *x, uint32_t lkey, uint64_t addr,
		uint32_t length) noexcept
{
	ibv_sge sge = { addr, length, lkey };

	if (sroce_send_wqe *w = ex_cur(x))
		ex_fail(x, wqe_set_sges(from_ex(x), w, &sge, 1));
}

void ex_set_sge_list(ibv_qp_ex *x, size_t n, const ibv_sge *list) noexcept
{
	if (sroce_send_wqe *w = ex_cur(x))
		ex_fail(x, wqe_set_sges(from_ex(x), w, list, n));
}

void ex_set_inline_data(ibv_qp_ex *x, void *addr, size_t length) noexcept
{
	ibv_data_buf buf = { addr, length };

	if (sroce_send_wqe *w = ex_cur(x))
		ex_fail(x, wqe_set_inline(
				   from_ex(x), w, &buf, 1,
				   [](const ibv_data_buf &b) { return b.addr; },
				   [](const ibv_data_buf &b) { return b.length; }));
}

void ex_set_inline_data_list(ibv_qp_ex *x, size_t n,
			     const ibv_data_buf *list) noexcept
{
	if (sroce_send_wqe *w = ex_cur(x))
		ex_fail(x, wqe_set_inline(
				   from_ex(x), w, list, n,
				   [](const ibv_data_buf &b) { return b.addr; },
				   [](const ibv_data_buf &b) { return b.length; }));
}

} // namespace

// The ibv_wr_* operations a QP type supports.
uint64_t supported_send_ops(ibv_qp_type type)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

	if (type == IBV_QPT_RC || type == IBV_QPT_UC ||
	    type == IBV_QPT_XRC_SEND)
		ops |= IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	if (type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND)
		ops |= IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_ATOMIC_WRITE |
		       IBV_QP_EX_WITH_SEND_WITH_INV;
	return ops;
}

void set_ex_ops(qp *q)
{
	ibv_qp_ex &x = q->vqp.qp_ex;

	x.wr_start = ex_start;
	x.wr_complete = ex_complete;
	x.wr_abort = ex_abort;
	x.wr_send = ex_send;
	x.wr_send_imm = ex_send_imm;
	x.wr_send_inv = ex_send_inv;
	x.wr_rdma_write = ex_rdma_write;
	x.wr_rdma_write_imm = ex_rdma_write_imm;
	x.wr_rdma_read = ex_rdma_read;
	x.wr_atomic_cmp_swp = ex_cmp_swp;
	x.wr_atomic_fetch_add = ex_fetch_add;
	x.wr_atomic_write = ex_atomic_write;
	x.wr_bind_mw = ex_bind_mw;
	x.wr_local_inv = ex_local_inv;
	x.wr_set_ud_addr = ex_set_ud_addr;
	x.wr_set_xrc_srqn = ex_set_xrc_srqn;
	x.wr_set_sge = ex_set_sge;
	x.wr_set_sge_list = ex_set_sge_list;
	x.wr_set_inline_data = ex_set_inline_data;
	x.wr_set_inline_data_list = ex_set_inline_data_list;
	q->vqp.comp_mask |= VERBS_QP_EX;
}

} // namespace sroce
