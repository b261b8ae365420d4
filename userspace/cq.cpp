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

} // namespace

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
	if (!ret) {
		// The kernel moved what we had not polled to the start of
		// the new ring.
		c->r = ring{};
		c->cons = 0;
		if (!c->r.attach(ibcq->context->cmd_fd, resp.drv.ring,
			      sizeof(sroce_cqe)))
			ret = errno;
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
