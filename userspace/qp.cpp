// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Queue pairs: posting writes WQEs into rings shared with the kernel;
// ibv_post_recv never enters the kernel, ibv_post_send (and ibv_wr_complete)
// ring the doorbell only when the kernel is not already working on the queue.
// The ibv_wr_* API (qp_wr.cpp) builds its WQEs with the send path's helpers
// here.
#include "sroce.h"

#include <cstring>
#include <new>

static_assert(SROCE_WR_ATOMIC_WRITE == IBV_WR_ATOMIC_WRITE);
static_assert(SROCE_WC_ATOMIC_WRITE == IBV_WC_ATOMIC_WRITE);

namespace sroce {
namespace {

// Asks the kernel to look at the QP's rings (SROCE_METHOD_QP_DOORBELL).
// The WQEs are in the ring already, so they are posted whatever this says:
// a failure the kernel may not repeat is tried again. Those are ENOMEM,
// EINTR, EAGAIN, and EFAULT (the only memory the call reads is this
// frame's, so a fault copying it is not the caller's doing).
int ring_doorbell(qp *q) noexcept
{
	int ret = 0;

	for (int tries = 0; tries < 3; tries++) {
		ret = call_method(q->vqp.qp.context->cmd_fd, UVERBS_OBJECT_QP,
				  SROCE_METHOD_QP_DOORBELL,
				  std::array{ idr_attr(
					  SROCE_ATTR_DOORBELL_QP_HANDLE,
					  q->vqp.qp.handle) });
		if (ret != ENOMEM && ret != EINTR && ret != EAGAIN &&
		    ret != EFAULT)
			break;
	}
	return ret;
}

// ibv_modify_qp through SROCE_METHOD_QP_MODIFY: the MODIFY_QP command's
// attributes, for a process that imported the context (write() commands
// are the opener's only).
int modify_qp_ioctl(ibv_qp *ibqp, const ibv_qp_attr *attr,
		    int attr_mask) noexcept
{
	ib_uverbs_modify_qp cmd{};
	const ibv_ah_attr &ah = attr->ah_attr;

	memcpy(cmd.dest.dgid, ah.grh.dgid.raw, sizeof(cmd.dest.dgid));
	cmd.dest.flow_label = ah.grh.flow_label;
	cmd.dest.dlid = ah.dlid;
	cmd.dest.sgid_index = ah.grh.sgid_index;
	cmd.dest.hop_limit = ah.grh.hop_limit;
	cmd.dest.traffic_class = ah.grh.traffic_class;
	cmd.dest.sl = ah.sl;
	cmd.dest.src_path_bits = ah.src_path_bits;
	cmd.dest.static_rate = ah.static_rate;
	cmd.dest.is_global = ah.is_global;
	cmd.dest.port_num = ah.port_num;
	cmd.qp_handle = ibqp->handle;
	cmd.attr_mask = attr_mask;
	cmd.qkey = attr->qkey;
	cmd.rq_psn = attr->rq_psn;
	cmd.sq_psn = attr->sq_psn;
	cmd.dest_qp_num = attr->dest_qp_num;
	cmd.qp_access_flags = attr->qp_access_flags;
	cmd.pkey_index = attr->pkey_index;
	cmd.alt_pkey_index = attr->alt_pkey_index;
	cmd.qp_state = attr->qp_state;
	cmd.cur_qp_state = attr->cur_qp_state;
	cmd.path_mtu = attr->path_mtu;
	cmd.path_mig_state = attr->path_mig_state;
	cmd.en_sqd_async_notify = attr->en_sqd_async_notify;
	cmd.max_rd_atomic = attr->max_rd_atomic;
	cmd.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	cmd.min_rnr_timer = attr->min_rnr_timer;
	cmd.port_num = attr->port_num;
	cmd.timeout = attr->timeout;
	cmd.retry_cnt = attr->retry_cnt;
	cmd.rnr_retry = attr->rnr_retry;
	return call_method(ibqp->context->cmd_fd, UVERBS_OBJECT_QP,
			   SROCE_METHOD_QP_MODIFY,
			   std::array{ idr_attr(SROCE_ATTR_MODIFY_QP_HANDLE,
						ibqp->handle),
				       ptr_attr(SROCE_ATTR_MODIFY_QP_CMD, &cmd,
						sizeof(cmd)) });
}

uint32_t qp_state(const qp *q)
{
	return shared(q->sq.hdr()->qp_state).load(std::memory_order_acquire);
}

} // namespace

// Sends may be posted in RTS, SQD, SQE and ERR (where they are flushed),
// on a QP with a send queue (not an XRC receive QP).
bool can_send(const qp *q)
{
	if (!q->sq.map)
		return false;
	uint32_t state = qp_state(q);

	return state != IBV_QPS_RESET && state != IBV_QPS_INIT &&
	       state != IBV_QPS_RTR;
}

bool ring_full(const ring &r, uint32_t prod)
{
	uint32_t cons =
		shared(r.hdr()->cons).load(std::memory_order_acquire);
	return prod - cons >= r.num_slots;
}

// May a QP of @type post @opcode?
bool opcode_allowed(ibv_qp_type type, ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type == IBV_QPT_RC || type == IBV_QPT_UC ||
		       type == IBV_QPT_XRC_SEND;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_ATOMIC_WRITE: // only through ibv_wr_atomic_write()
		return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return type == IBV_QPT_RC || type == IBV_QPT_UC ||
		       type == IBV_QPT_XRC_SEND;
	default:
		return false;
	}
}

// Publish the WQEs written since @start and ring the doorbell if needed.
int publish_sends(qp *q, uint32_t start) noexcept
{
	bool doorbell = false;

	if (q->sq_prod != start) {
		// Publish, then see whether the kernel will find the WQEs by
		// itself (it clears kernel_active before its last look).
		sroce_ring_hdr *hdr = q->sq.hdr();
		shared(hdr->prod).store(q->sq_prod, std::memory_order_seq_cst);
		doorbell = !shared(hdr->kernel_active)
				    .load(std::memory_order_seq_cst);
	}
	pthread_spin_unlock(&q->sq_lock);
	return doorbell ? ring_doorbell(q) : 0;
}

// A new WQE at the SQ's producer slot, its header set and the rest zero.
sroce_send_wqe *wqe_begin(qp *q, ibv_wr_opcode opcode, uint64_t wr_id,
			  unsigned int flags) noexcept
{
	auto *wqe = static_cast<sroce_send_wqe *>(q->sq.slot(q->sq_prod));

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr_id;
	wqe->opcode = opcode;
	wqe->send_flags = flags;
	return wqe;
}

// SGEs follow the header. Return: 0 or EINVAL if there are too many.
int wqe_set_sges(const qp *q, sroce_send_wqe *wqe, const ibv_sge *sg,
		 size_t n) noexcept
{
	if (n > q->cap.max_send_sge)
		return EINVAL;
	auto *sges = reinterpret_cast<sroce_sge *>(wqe + 1);
	for (size_t i = 0; i < n; i++)
		sges[i] = { sg[i].addr, sg[i].length, sg[i].lkey };
	wqe->num_sge = n;
	wqe->inline_len = 0;
	wqe->send_flags &= ~IBV_SEND_INLINE;
	return 0;
}

void wqe_set_ud(sroce_send_wqe *wqe, ibv_ah *ibah, uint32_t remote_qpn,
		uint32_t remote_qkey) noexcept
{
	wqe->wr.ud.ah_num = reinterpret_cast<ah *>(ibah)->ah_num;
	wqe->wr.ud.remote_qpn = remote_qpn;
	wqe->wr.ud.remote_qkey = remote_qkey;
}

// A window bind: the window, its new key and what it covers.
void wqe_set_bind(sroce_send_wqe *wqe, const ibv_mw *mw, uint32_t new_key,
		  const ibv_mw_bind_info &info) noexcept
{
	wqe->ex = new_key;
	wqe->wr.bind.mw_key = mw->rkey;
	wqe->wr.bind.mr_lkey = info.mr ? info.mr->lkey : 0;
	wqe->wr.bind.addr = info.addr;
	wqe->wr.bind.length = info.mr ? info.length : 0;
	wqe->wr.bind.access = info.mw_access_flags;
}

namespace {

// One ibv_send_wr into a WQE. Return: 0 or the errno to report.
int write_send_wr(qp *q, const ibv_send_wr *wr) noexcept
{
	ibv_qp_type type = q->vqp.qp.qp_type;

	// ibv_send_wr has no field for an atomic write's data.
	if (!opcode_allowed(type, wr->opcode) || wr->num_sge < 0 ||
	    wr->opcode == IBV_WR_ATOMIC_WRITE)
		return EINVAL;
	if (type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	if (inl && wr->opcode != IBV_WR_SEND &&
	    wr->opcode != IBV_WR_SEND_WITH_IMM &&
	    wr->opcode != IBV_WR_RDMA_WRITE &&
	    wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
		return EINVAL;

	sroce_send_wqe *wqe = wqe_begin(q, wr->opcode, wr->wr_id,
					wr->send_flags);
	if (wr->opcode == IBV_WR_BIND_MW) {
		if (!wr->bind_mw.mw || wr->bind_mw.mw->type != IBV_MW_TYPE_2)
			return EINVAL;
		wqe_set_bind(wqe, wr->bind_mw.mw, wr->bind_mw.rkey,
			     wr->bind_mw.bind_info);
		return 0;
	}
	if (wr->opcode == IBV_WR_LOCAL_INV) {
		wqe->ex = wr->invalidate_rkey;
		return 0;
	}
	wqe->ex = wr->opcode == IBV_WR_SEND_WITH_INV ? wr->invalidate_rkey :
						       wr->imm_data;
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
	if (type == IBV_QPT_UD)
		wqe_set_ud(wqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
			   wr->wr.ud.remote_qkey);
	if (type == IBV_QPT_XRC_SEND)
		wqe->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if (inl)
		return wqe_set_inline(
			q, wqe, wr->sg_list, wr->num_sge,
			[](const ibv_sge &s) {
				return reinterpret_cast<const void *>(
					uintptr_t(s.addr));
			},
			[](const ibv_sge &s) { return size_t(s.length); });
	return wqe_set_sges(q, wqe, wr->sg_list, wr->num_sge);
}

// Map the rings the kernel described for a QP it created.
bool attach_rings(qp *q, int cmd_fd, const sroce_create_qp_resp &r) noexcept
{
	if (!q->sq.attach(cmd_fd, r.sq, sizeof(sroce_send_wqe)) ||
	    (r.rq.num_slots &&
	     !q->rq.r.attach(cmd_fd, r.rq, sizeof(sroce_recv_wqe)))) {
		int saved = errno;
		ibv_cmd_destroy_qp(&q->vqp.qp);
		errno = saved;
		return false;
	}
	return true;
}

qp *new_qp() noexcept
{
	auto *q = new (std::nothrow) qp{};
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}
	pthread_spin_init(&q->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&q->rq.lock, PTHREAD_PROCESS_PRIVATE);
	return q;
}

void free_qp(qp *q) noexcept
{
	pthread_spin_destroy(&q->rq.lock);
	pthread_spin_destroy(&q->sq_lock);
	delete q;
}

} // namespace

ibv_qp *create_qp(ibv_pd *ibpd, ibv_qp_init_attr *attr) noexcept
{
	qp *q = new_qp();
	if (!q)
		return nullptr;

	struct ibv_create_qp cmd{};
	with_drv_data<ib_uverbs_create_qp_resp, sroce_create_qp_resp> resp{};
	int ret = ibv_cmd_create_qp(ibpd, &q->vqp.qp, attr, &cmd, sizeof(cmd),
				    resp.core(), sizeof(resp));
	if (ret)
		errno = ret;
	if (ret || !attach_rings(q, ibpd->context->cmd_fd, resp.drv)) {
		free_qp(q);
		return nullptr;
	}
	q->cap = attr->cap;
	q->rq.max_sge = attr->cap.max_recv_sge;
	return &q->vqp.qp;
}

ibv_qp *create_qp_ex(ibv_context *ibctx, ibv_qp_init_attr_ex *attr) noexcept
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	// An XRC receive QP belongs to an XRC domain, every other QP to a PD.
	bool xrc_recv = attr->qp_type == IBV_QPT_XRC_RECV;

	if (!(attr->comp_mask &
	      (xrc_recv ? IBV_QP_INIT_ATTR_XRCD : IBV_QP_INIT_ATTR_PD))) {
		errno = EINVAL;
		return nullptr;
	}
	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~supported_send_ops(attr->qp_type)))) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	qp *q = new_qp();
	if (!q)
		return nullptr;

	// Create flags are all zero here: the command need not carry them.
	ibv_qp_init_attr_ex kattr = *attr;
	kattr.comp_mask &= ~uint32_t(IBV_QP_INIT_ATTR_CREATE_FLAGS);
	struct ibv_create_qp cmd{};
	with_drv_data<ib_uverbs_create_qp_resp, sroce_create_qp_resp> resp{};
	int ret = ibv_cmd_create_qp_ex(ibctx, &q->vqp, &kattr, &cmd,
				       sizeof(cmd), resp.core(), sizeof(resp));
	attr->cap = kattr.cap;
	if (ret)
		errno = ret;
	// The kernel makes an XRC receive QP for the domain: no rings.
	if (ret || (!xrc_recv && !attach_rings(q, ibctx->cmd_fd, resp.drv))) {
		free_qp(q);
		return nullptr;
	}
	q->cap = attr->cap;
	q->rq.max_sge = attr->cap.max_recv_sge;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		q->send_ops = attr->send_ops_flags;
		set_ex_ops(q);
	}
	return &q->vqp.qp;
}

// ibv_bind_mw(): a type 1 window bound (length 0: unbound) by a WQE on
// @ibqp; the window's new key is its key with the next tag.
int bind_mw(ibv_qp *ibqp, ibv_mw *mw, ibv_mw_bind *mw_bind) noexcept
{
	qp *q = to_qp(ibqp);
	const ibv_mw_bind_info &info = mw_bind->bind_info;

	if (mw->type != IBV_MW_TYPE_1 || (info.length && !info.mr) ||
	    !opcode_allowed(ibqp->qp_type, IBV_WR_BIND_MW))
		return EINVAL;
	uint32_t new_key = ibv_inc_rkey(mw->rkey);

	pthread_spin_lock(&q->sq_lock);
	uint32_t start = q->sq_prod;
	int ret = 0;
	if (!can_send(q))
		ret = EINVAL;
	else if (ring_full(q->sq, q->sq_prod))
		ret = ENOMEM;
	if (!ret) {
		sroce_send_wqe *wqe = wqe_begin(q, IBV_WR_BIND_MW,
						mw_bind->wr_id,
						mw_bind->send_flags);
		wqe_set_bind(wqe, mw, new_key, info);
		q->sq_prod++;
	}
	int db = publish_sends(q, start);
	if (ret)
		return ret;
	if (db)
		return db;
	mw->rkey = new_key;
	return 0;
}

// Another process's XRC receive QP, by number, in a shared XRC domain.
ibv_qp *open_qp(ibv_context *ibctx, ibv_qp_open_attr *attr) noexcept
{
	qp *q = new_qp();
	if (!q)
		return nullptr;

	struct ibv_open_qp cmd{};
	ib_uverbs_create_qp_resp resp{};
	int ret = ibv_cmd_open_qp(ibctx, &q->vqp, sizeof(q->vqp), attr, &cmd,
				  sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		errno = ret;
		free_qp(q);
		return nullptr;
	}
	return &q->vqp.qp;
}

int destroy_qp(ibv_qp *ibqp) noexcept
{
	int ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	free_qp(to_qp(ibqp));
	return 0;
}

int modify_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int attr_mask) noexcept
{
	struct ibv_modify_qp cmd{};
	int ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));

	// An imported context: write() is the opening process's only.
	if (ret == EACCES)
		ret = modify_qp_ioctl(ibqp, attr, attr_mask);

	// In RESET the QP's earlier completions are gone (flushes included).
	if (!ret && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET) {
		if (ibqp->recv_cq)
			cq_clean(ibqp->recv_cq, ibqp->qp_num);
		if (ibqp->send_cq && ibqp->send_cq != ibqp->recv_cq)
			cq_clean(ibqp->send_cq, ibqp->qp_num);
	}
	return ret;
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
	if (!can_send(q))
		ret = EINVAL;
	for (; wr && !ret; wr = wr->next) {
		if (ring_full(q->sq, q->sq_prod)) {
			ret = ENOMEM;
			break;
		}
		ret = write_send_wr(q, wr);
		if (ret)
			break;
		q->sq_prod++;
	}
	int db = publish_sends(q, start);
	if (!ret)
		ret = db;
	if (ret)
		*bad_wr = wr;
	return ret;
}

int post_recv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept
{
	qp *q = to_qp(ibqp);
	bool published;

	// No receive queue of its own (SRQ), or not yet usable (RESET).
	if (!q->rq.r.map || qp_state(q) == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	int ret = post_recv_wrs(q->rq, wr, bad_wr, &published);

	// In the error state the kernel must see the WR to flush it.
	if (published &&
	    shared(q->rq.r.hdr()->flush).load(std::memory_order_seq_cst)) {
		int db = ring_doorbell(q);
		if (!ret)
			ret = db;
	}
	return ret;
}

} // namespace sroce
