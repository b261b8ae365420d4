// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Completion queues: the kernel produces struct sroce_cqe into a ring we
// map; polling and arming never enter the kernel.
#include "sroce.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

namespace sroce {
namespace {

void to_wc(const sroce_cqe &e, ibv_wc &wc)
{
	wc.wr_id = e.wr_id;
	wc.status = ibv_wc_status(e.status);
	wc.opcode = ibv_wc_opcode(e.opcode);
	wc.vendor_err = e.vendor_err;
	wc.byte_len = e.byte_len;
	wc.imm_data = e.ex;
	wc.qp_num = e.qp_num;
	wc.src_qp = e.src_qp;
	wc.wc_flags = e.wc_flags;
	wc.pkey_index = e.pkey_index;
	wc.slid = e.slid;
	wc.sl = e.sl;
	wc.dlid_path_bits = e.dlid_path_bits;
}

cq *to_cq_ex(ibv_cq_ex *cx)
{
	return reinterpret_cast<cq *>(cx);
}

// Extended polling (ibv_start_poll & co): the lock is held from a
// successful start_poll to end_poll, as libibverbs allows.
bool load_current(cq *c)
{
	uint32_t prod =
		shared(c->r.hdr()->prod).load(std::memory_order_acquire);
	if (c->cons == prod) {
		c->cur = nullptr;
		return false;
	}
	c->cur = static_cast<const sroce_cqe *>(c->r.slot(c->cons));
	c->vcq.cq_ex.wr_id = c->cur->wr_id;
	c->vcq.cq_ex.status = ibv_wc_status(c->cur->status);
	return true;
}

int start_poll(ibv_cq_ex *cx, ibv_poll_cq_attr *attr) noexcept
{
	cq *c = to_cq_ex(cx);

	if (attr->comp_mask)
		return EINVAL;
	if (!c->single_threaded)
		pthread_spin_lock(&c->lock);
	if (c->r.map && load_current(c))
		return 0;
	if (!c->single_threaded)
		pthread_spin_unlock(&c->lock);
	return ENOENT;
}

int next_poll(ibv_cq_ex *cx) noexcept
{
	cq *c = to_cq_ex(cx);

	c->cons++;
	return load_current(c) ? 0 : ENOENT;
}

void end_poll(ibv_cq_ex *cx) noexcept
{
	cq *c = to_cq_ex(cx);

	// The entry last returned is consumed too.
	if (c->cur)
		c->cons++;
	c->cur = nullptr;
	shared(c->r.hdr()->cons).store(c->cons, std::memory_order_release);
	if (!c->single_threaded)
		pthread_spin_unlock(&c->lock);
}

// read_* of the extended CQ: one field of the current entry, as type T.
template <typename T, auto Field> T read_field(ibv_cq_ex *cx) noexcept
{
	return T(to_cq_ex(cx)->cur->*Field);
}

// The completion fields an extended CQ can report.
constexpr uint64_t supported_wc_flags =
	IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
	IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
	IBV_WC_EX_WITH_DLID_PATH_BITS;

} // namespace

// A QP went to RESET: its completions not yet polled go away, as on
// hardware. Entries are moved towards the producer end over the removed
// ones and the consumer index skips the gap; the kernel only writes past
// the producer index, so it is never disturbed.
void cq_clean(ibv_cq *ibcq, uint32_t qpn) noexcept
{
	cq *c = to_cq(ibcq);

	pthread_spin_lock(&c->lock);
	uint32_t prod =
		shared(c->r.hdr()->prod).load(std::memory_order_acquire);
	uint32_t removed = 0;
	if (prod - c->cons <= c->r.num_slots) {
		for (uint32_t i = prod; i != c->cons;) {
			i--;
			auto *e = static_cast<sroce_cqe *>(c->r.slot(i));
			if (e->qp_num == qpn)
				removed++;
			else if (removed)
				memcpy(c->r.slot(i + removed), e, sizeof(*e));
		}
	}
	if (removed) {
		c->cons += removed;
		shared(c->r.hdr()->cons)
			.store(c->cons, std::memory_order_release);
	}
	pthread_spin_unlock(&c->lock);
}

ibv_cq *create_cq(ibv_context *ibctx, int cqe, ibv_comp_channel *channel,
		  int comp_vector) noexcept
{
	auto *c = new (std::nothrow) cq{};
	if (!c) {
		errno = ENOMEM;
		return nullptr;
	}
	pthread_spin_init(&c->lock, PTHREAD_PROCESS_PRIVATE);

	struct ibv_create_cq cmd{};
	with_drv_data<ib_uverbs_create_cq_resp, sroce_create_cq_resp> resp{};
	int ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector,
				    &c->vcq.cq, &cmd, sizeof(cmd), resp.core(),
				    sizeof(resp));
	if (ret) {
		pthread_spin_destroy(&c->lock);
		delete c;
		errno = ret;
		return nullptr;
	}
	if (!c->r.attach(ibctx->cmd_fd, resp.drv.ring, sizeof(sroce_cqe))) {
		int saved = errno;
		ibv_cmd_destroy_cq(&c->vcq.cq);
		pthread_spin_destroy(&c->lock);
		delete c;
		errno = saved;
		return nullptr;
	}
	return &c->vcq.cq;
}

ibv_cq_ex *create_cq_ex(ibv_context *ibctx, ibv_cq_init_attr_ex *attr) noexcept
{
	if (attr->wc_flags & ~supported_wc_flags) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	if (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					IBV_CQ_INIT_ATTR_MASK_PD) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	auto *c = new (std::nothrow) cq{};
	if (!c) {
		errno = ENOMEM;
		return nullptr;
	}
	pthread_spin_init(&c->lock, PTHREAD_PROCESS_PRIVATE);
	c->single_threaded = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
			     (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED);

	struct ibv_create_cq_ex cmd{};
	with_drv_data<ib_uverbs_ex_create_cq_resp, sroce_create_cq_resp> resp{};
	int ret = ibv_cmd_create_cq_ex(ibctx, attr, &c->vcq, &cmd, sizeof(cmd),
				       resp.core(), sizeof(resp), 0);
	if (ret) {
		errno = ret;
		goto err_free;
	}
	if (!c->r.attach(ibctx->cmd_fd, resp.drv.ring, sizeof(sroce_cqe))) {
		int saved = errno;
		ibv_cmd_destroy_cq(&c->vcq.cq);
		errno = saved;
		goto err_free;
	}

	{
		ibv_cq_ex &cx = c->vcq.cq_ex;

		cx.start_poll = start_poll;
		cx.next_poll = next_poll;
		cx.end_poll = end_poll;
		cx.read_opcode = read_field<ibv_wc_opcode, &sroce_cqe::opcode>;
		cx.read_vendor_err = read_field<uint32_t, &sroce_cqe::vendor_err>;
		cx.read_wc_flags = read_field<unsigned int, &sroce_cqe::wc_flags>;
		if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
			cx.read_byte_len =
				read_field<uint32_t, &sroce_cqe::byte_len>;
		if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
			cx.read_imm_data = read_field<__be32, &sroce_cqe::ex>;
		if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
			cx.read_qp_num = read_field<uint32_t, &sroce_cqe::qp_num>;
		if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
			cx.read_src_qp = read_field<uint32_t, &sroce_cqe::src_qp>;
		if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
			cx.read_slid = read_field<uint32_t, &sroce_cqe::slid>;
		if (attr->wc_flags & IBV_WC_EX_WITH_SL)
			cx.read_sl = read_field<uint8_t, &sroce_cqe::sl>;
		if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
			cx.read_dlid_path_bits =
				read_field<uint8_t, &sroce_cqe::dlid_path_bits>;
	}
	return &c->vcq.cq_ex;

err_free:
	pthread_spin_destroy(&c->lock);
	delete c;
	return nullptr;
}

int destroy_cq(ibv_cq *ibcq) noexcept
{
	int ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	cq *c = to_cq(ibcq);
	pthread_spin_destroy(&c->lock);
	delete c;
	return 0;
}

int resize_cq(ibv_cq *ibcq, int cqe) noexcept
{
	cq *c = to_cq(ibcq);
	struct ibv_resize_cq cmd{};
	with_drv_data<ib_uverbs_resize_cq_resp, sroce_create_cq_resp> resp{};

	pthread_spin_lock(&c->lock);
	int ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), resp.core(),
				    sizeof(resp));
	// The kernel describes the new ring before it makes the change, and
	// ib_uverbs copies its own part of the answer after: EFAULT with the
	// ring described means the CQ has the new ring.
	if (ret == EFAULT && resp.drv.ring.num_slots) {
		ibcq->cqe = int(resp.drv.ring.num_slots);
		ret = 0;
	}
	if (!ret) {
		// The kernel moved what we had not polled to the start of
		// the new ring; the old one is no longer written. A ring we
		// cannot map leaves the CQ unusable (poll_cq fails).
		ring r;
		for (int tries = 0; tries < 3; tries++) {
			if (r.attach(ibcq->context->cmd_fd, resp.drv.ring,
				     sizeof(sroce_cqe)))
				break;
			ret = errno;
			if (ret != ENOMEM && ret != EAGAIN && ret != EINTR)
				break;
		}
		if (r.map)
			ret = 0;
		c->r = static_cast<ring &&>(r);
		c->cons = 0;
	}
	pthread_spin_unlock(&c->lock);
	return ret;
}

int poll_cq(ibv_cq *ibcq, int num_entries, ibv_wc *wc) noexcept
{
	cq *c = to_cq(ibcq);
	int n = 0;

	pthread_spin_lock(&c->lock);
	if (!c->r.map) {
		pthread_spin_unlock(&c->lock);
		return -1;
	}
	sroce_ring_hdr *hdr = c->r.hdr();
	uint32_t prod = shared(hdr->prod).load(std::memory_order_acquire);
	while (n < num_entries && c->cons != prod) {
		to_wc(*static_cast<const sroce_cqe *>(c->r.slot(c->cons)),
		      wc[n++]);
		c->cons++;
	}
	if (n)
		shared(hdr->cons).store(c->cons, std::memory_order_release);
	pthread_spin_unlock(&c->lock);
	return n;
}

int req_notify_cq(ibv_cq *ibcq, int solicited_only) noexcept
{
	cq *c = to_cq(ibcq);
	uint32_t want = solicited_only ? SROCE_CQ_NOTIFY_SOLICITED :
					 SROCE_CQ_NOTIFY_NEXT;

	pthread_spin_lock(&c->lock);
	if (!c->r.map) {
		pthread_spin_unlock(&c->lock);
		return EIO;
	}
	// Only ever raise the request: NEXT already covers SOLICITED.
	auto notify = shared(c->r.hdr()->notify);
	uint32_t cur = notify.load(std::memory_order_relaxed);
	while (cur < want &&
	       !notify.compare_exchange_weak(cur, want,
					     std::memory_order_acq_rel))
		;
	pthread_spin_unlock(&c->lock);
	return 0;
}

} // namespace sroce
