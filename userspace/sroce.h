// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// libsroce: the libibverbs provider for sroce devices.
//
// Every entry point libibverbs calls is a noexcept function returning an
// errno-style code (or NULL with errno set); nothing throws across the C ABI.
#pragma once

#include "verbs_abi.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <rdma/rdma_user_ioctl_cmds.h>

#include <rdma/sroce-abi.h>

namespace sroce {

struct device {
	verbs_device vdev; // must be first: libibverbs owns the ibv_device
	uint32_t abi_version;
};

struct context {
	verbs_context vctx; // libibverbs allocates us around this member
};

struct td {
	ibv_td ibtd;
	std::atomic<int> users{0}; // parent domains using it
};

// A PD, or a parent domain: a provider object that stands for its
// contained PD (same kernel handle) and carries a thread domain and the
// application's pd_context.
struct pd {
	ibv_pd ibpd;
	pd *parent_of = nullptr; // the contained PD, for a parent domain
	td *thread_domain = nullptr;
	void *pd_context = nullptr;
};

// An mmap()ed area of the command fd, unmapped when it goes out of scope.
class mapping {
public:
	mapping() = default;
	mapping(int fd, uint64_t offset, size_t length) noexcept
	{
		void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, off_t(offset));
		if (p != MAP_FAILED) {
			addr_ = p;
			length_ = length;
		}
	}
	~mapping() { reset(); }
	mapping(const mapping &) = delete;
	mapping &operator=(const mapping &) = delete;
	mapping(mapping &&o) noexcept { *this = static_cast<mapping &&>(o); }
	mapping &operator=(mapping &&o) noexcept
	{
		if (this != &o) {
			reset();
			addr_ = o.addr_;
			length_ = o.length_;
			o.addr_ = nullptr;
			o.length_ = 0;
		}
		return *this;
	}
	// munmap() can fail for want of memory (the kernel may allocate to
	// unmap): tried again, so the mapping is not left behind.
	void reset() noexcept
	{
		for (int tries = 0; addr_ && tries < 3; tries++)
			if (!munmap(addr_, length_) || errno != ENOMEM)
				break;
		addr_ = nullptr;
		length_ = 0;
	}
	explicit operator bool() const { return addr_; }
	char *get() const { return static_cast<char *>(addr_); }

private:
	void *addr_ = nullptr;
	size_t length_ = 0;
};

// A ring shared with the kernel (see struct sroce_ring_hdr).
struct ring {
	mapping map;
	uint32_t num_slots = 0;
	uint32_t slot_size = 0;

	// Maps the ring the kernel described, whose slots must hold at least
	// @min_slot bytes; false with errno set if it cannot.
	bool attach(int cmd_fd, const sroce_ring_geom &g,
		    size_t min_slot) noexcept
	{
		if (!g.num_slots || (g.num_slots & (g.num_slots - 1)) ||
		    g.slot_size < min_slot ||
		    g.mmap_length < SROCE_RING_SLOTS_OFFSET +
					    uint64_t(g.num_slots) * g.slot_size) {
			errno = EPROTO;
			return false;
		}
		mapping m(cmd_fd, g.mmap_offset, g.mmap_length);
		if (!m)
			return false;
		map = static_cast<mapping &&>(m);
		num_slots = g.num_slots;
		slot_size = g.slot_size;
		return true;
	}

	sroce_ring_hdr *hdr() const
	{
		return reinterpret_cast<sroce_ring_hdr *>(map.get());
	}
	void *slot(uint32_t index) const
	{
		return map.get() + SROCE_RING_SLOTS_OFFSET +
		       size_t(index & (num_slots - 1)) * slot_size;
	}
};

// Our view of a word of shared memory that the other side also uses.
inline std::atomic_ref<uint32_t> shared(uint32_t &word)
{
	return std::atomic_ref<uint32_t>(word);
}

struct cq {
	verbs_cq vcq;
	pthread_spinlock_t lock; // serialises pollers and resize
	ring r;
	uint32_t cons = 0; // our consumer index; published to r.hdr()->cons
	// Extended polling: the entry start_poll/next_poll returned.
	const sroce_cqe *cur = nullptr;
	bool single_threaded = false; // no lock between start and end_poll
};

// Receive WQEs posted into a ring (a QP's RQ or an SRQ).
struct recv_queue {
	pthread_spinlock_t lock; // serialises posters; protects prod
	ring r;
	uint32_t prod = 0;
	uint32_t max_sge = 0;
};

struct srq {
	verbs_srq vsrq;
	recv_queue rq;
};

struct ah {
	ibv_ah ibah;
	uint32_t ah_num; // names the AH in UD send WQEs
};

struct qp {
	verbs_qp vqp;
	pthread_spinlock_t sq_lock; // serialises senders; protects sq_prod
	ring sq;
	uint32_t sq_prod = 0;
	recv_queue rq; // unmapped when the QP uses an SRQ
	ibv_qp_cap cap{};
	// The ibv_wr_* API, between wr_start and wr_complete/wr_abort:
	uint64_t send_ops = 0;	 // IBV_QP_EX_WITH_* allowed
	uint32_t ex_start = 0;	 // sq_prod at wr_start
	bool ex_cur = false;	 // slot(sq_prod) holds the WQE being built
	int ex_err = 0;		 // first error; wr_complete reports it
};

// An attribute of a uverbs ioctl method: an object handle, or a pointer to
// @len bytes of input or output.
inline ib_uverbs_attr idr_attr(uint16_t id, uint32_t handle)
{
	ib_uverbs_attr a{};
	a.attr_id = id;
	a.data = handle;
	return a;
}

inline ib_uverbs_attr ptr_attr(uint16_t id, const void *ptr, uint16_t len)
{
	ib_uverbs_attr a{};
	a.attr_id = id;
	a.len = len;
	a.data = uintptr_t(ptr);
	return a;
}

// Calls uverbs ioctl method @method of @object with @attrs. These work on a
// command fd from any process that holds it (write() commands do not).
// Return: 0 or an errno.
template <size_t N>
int call_method(int cmd_fd, uint16_t object, uint16_t method,
		const std::array<ib_uverbs_attr, N> &attrs) noexcept
{
	// The header ends in a flexible array of attributes.
	with_drv_data<ib_uverbs_ioctl_hdr, std::array<ib_uverbs_attr, N>> req{};
	ib_uverbs_ioctl_hdr *hdr = req.core();

	hdr->length = sizeof(req);
	hdr->object_id = object;
	hdr->method_id = method;
	hdr->num_attrs = N;
	hdr->driver_id = 0; // RDMA_DRIVER_UNKNOWN
	req.drv = attrs;
	if (ioctl(cmd_fd, RDMA_VERBS_IOCTL, hdr))
		return errno;
	return 0;
}

inline context *to_ctx(ibv_context *ibctx)
{
	return reinterpret_cast<context *>(
		reinterpret_cast<char *>(ibctx) - offsetof(context, vctx) -
		offsetof(verbs_context, context));
}

inline pd *to_pd(ibv_pd *ibpd)
{
	return reinterpret_cast<pd *>(ibpd);
}

inline cq *to_cq(ibv_cq *ibcq)
{
	return reinterpret_cast<cq *>(ibcq);
}

inline srq *to_srq(ibv_srq *ibsrq)
{
	return reinterpret_cast<srq *>(ibsrq);
}

inline qp *to_qp(ibv_qp *ibqp)
{
	return reinterpret_cast<qp *>(ibqp);
}

// qp.cpp
ibv_qp *create_qp(ibv_pd *ibpd, ibv_qp_init_attr *attr) noexcept;
ibv_qp *create_qp_ex(ibv_context *ibctx, ibv_qp_init_attr_ex *attr) noexcept;
int modify_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int attr_mask) noexcept;
int query_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int attr_mask,
	     ibv_qp_init_attr *init_attr) noexcept;
int destroy_qp(ibv_qp *ibqp) noexcept;
ibv_qp *open_qp(ibv_context *ibctx, ibv_qp_open_attr *attr) noexcept;
int bind_mw(ibv_qp *ibqp, ibv_mw *mw, ibv_mw_bind *mw_bind) noexcept;
int post_send(ibv_qp *ibqp, ibv_send_wr *wr, ibv_send_wr **bad_wr) noexcept;
int post_recv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept;
// The send path, shared by ibv_post_send and ibv_bind_mw (qp.cpp) and the
// ibv_wr_* API (qp_wr.cpp). WQEs are written and published under the QP's
// sq_lock, which publish_sends() releases.
bool can_send(const qp *q);
bool ring_full(const ring &r, uint32_t prod);
bool opcode_allowed(ibv_qp_type type, ibv_wr_opcode opcode);
int publish_sends(qp *q, uint32_t start) noexcept;
sroce_send_wqe *wqe_begin(qp *q, ibv_wr_opcode opcode, uint64_t wr_id,
			  unsigned int flags) noexcept;
int wqe_set_sges(const qp *q, sroce_send_wqe *wqe, const ibv_sge *sg,
		 size_t n) noexcept;
void wqe_set_ud(sroce_send_wqe *wqe, ibv_ah *ibah, uint32_t remote_qpn,
		uint32_t remote_qkey) noexcept;
void wqe_set_bind(sroce_send_wqe *wqe, const ibv_mw *mw, uint32_t new_key,
		  const ibv_mw_bind_info &info) noexcept;
// Inline data follows the header, copied now. Return: 0 or EINVAL.
template <typename Buf, typename Addr, typename Len>
int wqe_set_inline(const qp *q, sroce_send_wqe *wqe, const Buf *bufs,
		   size_t n, Addr addr_of, Len len_of) noexcept
{
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += len_of(bufs[i]);
	if (total > q->cap.max_inline_data)
		return EINVAL;
	char *dst = reinterpret_cast<char *>(wqe + 1);
	for (size_t i = 0; i < n; i++) {
		memcpy(dst, addr_of(bufs[i]), len_of(bufs[i]));
		dst += len_of(bufs[i]);
	}
	wqe->inline_len = total;
	wqe->num_sge = 0;
	wqe->send_flags |= IBV_SEND_INLINE;
	return 0;
}

// qp_wr.cpp: the ibv_wr_* API
uint64_t supported_send_ops(ibv_qp_type type);
// Installs the ibv_wr_* operations in @q's ibv_qp_ex.
void set_ex_ops(qp *q);

// srq.cpp
ibv_srq *create_srq(ibv_pd *ibpd, ibv_srq_init_attr *attr) noexcept;
ibv_srq *create_srq_ex(ibv_context *ibctx,
		       ibv_srq_init_attr_ex *attr) noexcept;
int get_srq_num(ibv_srq *ibsrq, uint32_t *srq_num) noexcept;
int modify_srq(ibv_srq *ibsrq, ibv_srq_attr *attr, int mask) noexcept;
int query_srq(ibv_srq *ibsrq, ibv_srq_attr *attr) noexcept;
int destroy_srq(ibv_srq *ibsrq) noexcept;
int post_srq_recv(ibv_srq *ibsrq, ibv_recv_wr *wr,
		  ibv_recv_wr **bad_wr) noexcept;
// Post @wr into @q; returns 0 or the errno, *bad_wr set on failure.
int post_recv_wrs(recv_queue &q, ibv_recv_wr *wr, ibv_recv_wr **bad_wr,
		  bool *published) noexcept;

// cq.cpp
ibv_cq *create_cq(ibv_context *ibctx, int cqe, ibv_comp_channel *channel,
		  int comp_vector) noexcept;
int destroy_cq(ibv_cq *ibcq) noexcept;
int resize_cq(ibv_cq *ibcq, int cqe) noexcept;
int poll_cq(ibv_cq *ibcq, int num_entries, ibv_wc *wc) noexcept;
ibv_cq_ex *create_cq_ex(ibv_context *ibctx, ibv_cq_init_attr_ex *attr) noexcept;
int req_notify_cq(ibv_cq *ibcq, int solicited_only) noexcept;
void cq_clean(ibv_cq *ibcq, uint32_t qpn) noexcept;

// pd.cpp: protection domains, memory regions, address handles
ibv_pd *alloc_pd(ibv_context *ibctx) noexcept;
ibv_pd *alloc_parent_domain(ibv_context *ibctx,
			    ibv_parent_domain_init_attr *attr) noexcept;
ibv_td *alloc_td(ibv_context *ibctx, ibv_td_init_attr *attr) noexcept;
int dealloc_td(ibv_td *ibtd) noexcept;
int dealloc_pd(ibv_pd *ibpd) noexcept;
ibv_mr *reg_mr(ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
	       int access) noexcept;
ibv_mr *reg_dmabuf_mr(ibv_pd *ibpd, uint64_t offset, size_t length,
		      uint64_t iova, int fd, int access) noexcept;
ibv_mr *alloc_null_mr(ibv_pd *ibpd) noexcept;
int rereg_mr(verbs_mr *vmr, int flags, ibv_pd *pd, void *addr, size_t length,
	     int access) noexcept;
int dereg_mr(verbs_mr *vmr) noexcept;
int advise_mr(ibv_pd *pd, ibv_advise_mr_advice advice, uint32_t flags,
	      ibv_sge *sg_list, uint32_t num_sge) noexcept;
ibv_ah *create_ah(ibv_pd *ibpd, ibv_ah_attr *attr) noexcept;
ibv_xrcd *open_xrcd(ibv_context *ibctx, ibv_xrcd_init_attr *attr) noexcept;
ibv_mw *alloc_mw(ibv_pd *ibpd, ibv_mw_type type) noexcept;
int dealloc_mw(ibv_mw *mw) noexcept;
ibv_pd *import_pd(ibv_context *ibctx, uint32_t handle) noexcept;
void unimport_pd(ibv_pd *ibpd) noexcept;
ibv_mr *import_mr(ibv_pd *ibpd, uint32_t handle) noexcept;
void unimport_mr(ibv_mr *ibmr) noexcept;
int close_xrcd(ibv_xrcd *ibxrcd) noexcept;
int destroy_ah(ibv_ah *ibah) noexcept;

} // namespace sroce
