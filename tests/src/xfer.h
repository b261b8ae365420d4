// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The harness of sroce-xfer's tests: two QPs of one device connected to
// each other (the packets loop back through sroce's RoCEv2 path), each
// with a CQ and a registered buffer, and what a test needs to post work,
// wait for completions and check the bytes that arrived.
#pragma once

#include "check.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace xfer {

inline const size_t kBuf = 1 << 20;
inline const size_t kGuardLen = 4096;

// A zeroed buffer between two guard pages, mapped and never registered: a
// byte that an access puts past either end of a registration of the whole
// buffer lands in a guard, where expect_untouched() sees it.
class Buf {
public:
	explicit Buf(size_t len) : len_(len)
	{
		void *m = mmap(nullptr, len + 2 * kGuardLen,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			perror("mmap of a test buffer");
			abort();
		}
		map_ = static_cast<uint8_t *>(m);
	}
	~Buf() { munmap(map_, len_ + 2 * kGuardLen); }
	Buf(const Buf &) = delete;
	Buf &operator=(const Buf &) = delete;

	uint8_t &operator[](size_t i) { return map_[kGuardLen + i]; }
	const uint8_t &operator[](size_t i) const
	{
		return map_[kGuardLen + i];
	}
	uint8_t *data() { return map_ + kGuardLen; }
	const uint8_t *data() const { return map_ + kGuardLen; }
	size_t size() const { return len_; }
	uint8_t *begin() { return data(); }
	uint8_t *end() { return data() + len_; }
	// The whole mapping: the guard before, the buffer, the guard after.
	std::span<uint8_t> whole() { return { map_, len_ + 2 * kGuardLen }; }
	std::span<const uint8_t> whole() const
	{
		return { map_, len_ + 2 * kGuardLen };
	}

private:
	uint8_t *map_ = nullptr;
	size_t len_;
};

// One side: a QP with its CQ and a registered buffer.
struct Side {
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	Buf buf{kBuf};
};

struct Pair {
	ibv_context *ctx = nullptr;
	ibv_qp_type type = IBV_QPT_RC;
	ibv_mtu mtu = IBV_MTU_1024;
	int rnr_retry = 7;
	uint32_t lost_peer = 0;	// a's peer QPN, if not b's (a peer that vanished)
	int timeout = scaled_qp_timeout();	// 14 at time scale 1
	int retry_cnt = 7;
	int remote_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t send_ops = 0;	// create with ibv_create_qp_ex and these ops
	int gid_index = 1;	// the source and destination GID of both QPs
	const char *arg = nullptr;	// the test's own argument, if any
	Side a, b;
};

inline bool setup_side(Pair &p, Side &s)
{
	s.pd = ibv_alloc_pd(p.ctx);
	s.cq = ibv_create_cq(p.ctx, 256, nullptr, nullptr, 0);
	s.mr = ibv_reg_mr(s.pd, s.buf.data(), s.buf.size(),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC);
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = s.cq;
	ia.qp_type = p.type;
	ia.cap = { 64, 64, 4, 4, 256 };
	if (s.pd && s.cq && !p.send_ops)
		s.qp = ibv_create_qp(s.pd, &ia);
	if (s.pd && s.cq && p.send_ops) {
		ibv_qp_init_attr_ex ix{};
		ix.send_cq = ix.recv_cq = s.cq;
		ix.qp_type = p.type;
		ix.cap = ia.cap;
		ix.comp_mask = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ix.pd = s.pd;
		ix.send_ops_flags = p.send_ops;
		s.qp = ibv_create_qp_ex(p.ctx, &ix);
	}
	CHECK(s.pd && s.cq && s.mr && s.qp, "setting up a QP: %s",
	      strerror(errno));
	return s.pd && s.cq && s.mr && s.qp;
}

// Take @qp from RESET to RTS, towards QP @dest of this device (GID
// @p.gid_index, 1 by default) whose packets start at PSN @rq_psn; its own
// start at its number * 7. With @rc, RC's attributes too (XRC takes them
// as well: ib_uverbs drops those a half has not); @timeout, @retry_cnt and
// @rnr_retry are RC's. Returns an errno.
inline int qp_to_rts(Pair &p, ibv_qp *qp, uint32_t dest, uint32_t rq_psn,
		     bool rc, int timeout, int retry_cnt, int rnr_retry)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = p.remote_access;
	int ret = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = p.mtu;
	a.dest_qp_num = dest;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 8;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = uint8_t(p.gid_index);
	a.ah_attr.grh.hop_limit = 64;
	ibv_query_gid(p.ctx, 1, p.gid_index, &a.ah_attr.grh.dgid);
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (rc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	ret = ret ?: ibv_modify_qp(qp, &a, mask);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = qp->qp_num * 7 & 0xffffff;
	a.timeout = uint8_t(timeout);
	a.retry_cnt = uint8_t(retry_cnt);
	a.rnr_retry = uint8_t(rnr_retry);
	a.max_rd_atomic = 8;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return ret ?: ibv_modify_qp(qp, &a, mask);
}

inline bool connect(Pair &p, Side &s, const Side &peer)
{
	uint32_t dest = &s == &p.a && p.lost_peer ? p.lost_peer :
						    peer.qp->qp_num;
	int ret = qp_to_rts(p, s.qp, dest, peer.qp->qp_num * 7 & 0xffffff,
			    p.type == IBV_QPT_RC, p.timeout, p.retry_cnt,
			    p.rnr_retry);
	CHECK(ret == 0, "connecting QP 0x%x: %s", s.qp->qp_num, strerror(ret));
	return ret == 0;
}

inline bool setup(Pair &p)
{
	return setup_side(p, p.a) && setup_side(p, p.b) &&
	       connect(p, p.a, p.b) && connect(p, p.b, p.a);
}

inline void teardown(Pair &p)
{
	for (Side *s : { &p.a, &p.b }) {
		if (s->qp)
			CHECK(ibv_destroy_qp(s->qp) == 0, "destroy QP");
		if (s->mr)
			CHECK(ibv_dereg_mr(s->mr) == 0, "dereg MR");
		if (s->cq)
			CHECK(ibv_destroy_cq(s->cq) == 0, "destroy CQ");
		if (s->pd)
			CHECK(ibv_dealloc_pd(s->pd) == 0, "dealloc PD");
	}
}

// A UD QP of side @s, in RTS, with Q_Key 0x1234; its completions go to
// @cq (the side's CQ if none); it takes its receives from @srq, if any.
inline ibv_qp *ud_qp(Side &s, ibv_cq *cq = nullptr, ibv_srq *srq = nullptr)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq ? cq : s.cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap = { 16, 16, 1, 1, 0 };
	ia.srq = srq;
	ibv_qp *qp = ibv_create_qp(s.pd, &ia);
	if (!qp)
		return nullptr;
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x1234;
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	CHECK(ret == 0, "UD QP to RTS: %s", strerror(ret));
	return qp;
}

// Waits up to 10 s (times time_scale()) for one completion on @s's CQ.
inline bool poll_one(Side &s, ibv_wc &wc)
{
	long limit = 10 * time_scale();

	for (long i = 0; i < 1000 * limit; i++) {
		int n = ibv_poll_cq(s.cq, 1, &wc);
		if (n == 1)
			return true;
		CHECK(n == 0, "ibv_poll_cq returned %d", n);
		usleep(1000);
	}
	CHECK(false, "no completion within %ld s on QP 0x%x", limit,
	      s.qp->qp_num);
	return false;
}

inline void fill(Side &s, size_t off, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		s.buf[off + i] = uint8_t(seed + i * 7 + (i >> 8));
}

inline bool same(const Side &x, size_t xo, const Side &y, size_t yo,
		 size_t len)
{
	return !memcmp(&x.buf[xo], &y.buf[yo], len);
}

inline int post_recv(Side &s, size_t off, uint32_t len, uint64_t id)
{
	ibv_sge sge = { uintptr_t(&s.buf[off]), len, s.mr->lkey };
	ibv_recv_wr wr{}, *bad;
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(s.qp, &wr, &bad);
}

inline int post_send(Side &s, ibv_wr_opcode op, size_t off, uint32_t len,
	      uint64_t id, uint64_t raddr = 0, uint32_t rkey = 0,
	      unsigned flags = IBV_SEND_SIGNALED, uint32_t lkey = 0)
{
	ibv_sge sge = { uintptr_t(&s.buf[off]), len, lkey ? lkey : s.mr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, op, id, flags), *bad;
	wr.imm_data = htonl(0x12345678);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(s.qp, &wr, &bad);
}

// An atomic (@op) from @s to @raddr/@rkey; the old value lands in the
// first 8 bytes of @s's buffer.
inline void post_atomic(Side &s, ibv_wr_opcode op, uint64_t id,
			uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
			uint64_t swap)
{
	ibv_sge sge = { uintptr_t(&s.buf[0]), 8, s.mr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	CHECK(ibv_post_send(s.qp, &wr, &bad) == 0, "post atomic");
}

// UC completes a send once it is sent, not once it landed: wait for it.
inline bool landed(const Side &x, size_t xo, const Side &y, size_t yo,
		   size_t len)
{
	for (int i = 0; i < 5000 && !same(x, xo, y, yo, len); i++)
		usleep(1000);
	return same(x, xo, y, yo, len);
}

inline uint64_t remote(const Side &s, size_t off)
{
	return uintptr_t(&s.buf[off]);
}

// A port counter of the pair's device (sysfs hw_counters), or -1.
inline long long port_counter(const Pair &p, const char *name)
{
	std::string path = std::string("/sys/class/infiniband/") +
			   ibv_get_device_name(p.ctx->device) +
			   "/ports/1/hw_counters/" + name;
	long long v = -1;
	if (FILE *f = fopen(path.c_str(), "r")) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

// ---- refusals: not a byte landed --------------------------------------

// Both sides' buffers, guards included, as a request that must be refused
// found them (arm_untouched()).
struct Untouched {
	std::vector<uint8_t> a, b;
};

// Fill both sides' whole mappings with patterns that differ from each
// other and from byte to byte (a's is any request's source), and keep
// them: expect_untouched() compares every byte after the request.
inline Untouched arm_untouched(Pair &p)
{
	Untouched u;
	int k = 0;

	for (Side *s : { &p.a, &p.b }) {
		std::span<uint8_t> w = s->buf.whole();
		for (size_t i = 0; i < w.size(); i++)
			w[i] = uint8_t(0x5a + 0x40 * k + i * 13 + (i >> 9));
		(k++ ? u.b : u.a).assign(w.begin(), w.end());
	}
	return u;
}

// After @what: both sides' mappings are as arm_untouched() left them, but
// for b's bytes [@free_off, @free_off + @free_len), which the request may
// have written (a receive buffer an error completion left undefined).
inline bool expect_untouched(const Pair &p, const Untouched &u,
			     const char *what, size_t free_off = 0,
			     size_t free_len = 0)
{
	bool ok = true;

	for (int k = 0; k < 2; k++) {
		std::span<const uint8_t> w = (k ? p.b : p.a).buf.whole();
		const std::vector<uint8_t> &want = k ? u.b : u.a;
		size_t changed = 0, first = 0;

		for (size_t i = 0; i < w.size(); i++) {
			size_t off = i - kGuardLen; // wraps before the buffer
			if (k && off >= free_off && off - free_off < free_len)
				continue;
			if (w[i] != want[i] && !changed++)
				first = i;
		}
		CHECK(!changed, "%s: %zu bytes of %c's buffer changed, the "
		      "first at offset %lld from its start", what, changed,
		      k ? 'b' : 'a', (long long)first - (long long)kGuardLen);
		ok = ok && !changed;
	}
	return ok;
}

// A completion with the given fields, else a failure that says which.
inline void expect_wc(Side &s, uint64_t id, ibv_wc_status status,
		      int opcode = -1, int64_t len = -1)
{
	ibv_wc wc{};
	if (!poll_one(s, wc))
		return;
	CHECK(wc.wr_id == id && wc.status == status,
	      "completion wr_id %llu status %s, expected wr_id %llu status %s",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	      (unsigned long long)id, ibv_wc_status_str(status));
	if (status == IBV_WC_SUCCESS && opcode >= 0)
		CHECK(wc.opcode == opcode, "opcode %d, expected %d", wc.opcode,
		      opcode);
	if (status == IBV_WC_SUCCESS && len >= 0)
		CHECK(wc.byte_len == uint32_t(len), "byte_len %u, expected %lld",
		      wc.byte_len, (long long)len);
	if (status == IBV_WC_SUCCESS)
		CHECK(wc.qp_num == s.qp->qp_num, "qp_num 0x%x", wc.qp_num);
}

inline void expect_eq_status(ibv_wc_status got, ibv_wc_status want,
			     const char *what)
{
	CHECK(got == want, "%s: status %s, expected %s", what,
	      ibv_wc_status_str(got), ibv_wc_status_str(want));
}

// RDMA WRITE of @len bytes from a's buffer to @raddr/@rkey; the status.
inline ibv_wc_status write_to(Pair &p, uint64_t raddr, uint32_t rkey,
			      uint32_t len, uint64_t id)
{
	ibv_wc wc{};
	CHECK(post_send(p.a, IBV_WR_RDMA_WRITE, 0, len, id, raddr, rkey) == 0,
	      "post write");
	if (!poll_one(p.a, wc))
		return IBV_WC_GENERAL_ERR;
	CHECK(wc.wr_id == id, "wr_id %llu", (unsigned long long)wc.wr_id);
	return wc.status;
}

// Post, on b's QP, the bind of type 2 window @mw with key @key to
// [addr, addr + len) of @mr (signaled, as @id).
inline int post_bind_mw(Pair &p, ibv_mw *mw, uint32_t key, ibv_mr *mr,
			uint64_t addr, size_t len, unsigned access,
			uint64_t id)
{
	ibv_send_wr wr{}, *bad;
	wr.wr_id = id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info = { mr, addr, len, access };
	return ibv_post_send(p.b.qp, &wr, &bad);
}

// After a failed WR both QPs are in error: back to RTS, as applications do.
inline void restate(Pair &p)
{
	for (Side *s : { &p.a, &p.b }) {
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_RESET;
		CHECK(ibv_modify_qp(s->qp, &a, IBV_QP_STATE) == 0, "to RESET");
		ibv_wc wc;
		while (ibv_poll_cq(s->cq, 1, &wc) > 0)
			;
	}
	connect(p, p.a, p.b);
	connect(p, p.b, p.a);
}

// a's RDMA @op (WRITE or READ, from or into a's buffer's start) of @len
// bytes at @raddr/@rkey must be refused with @want: it is, and not a byte
// of either side's buffer (guards included) changed; then both QPs are
// connected again.
inline void refused_rdma(Pair &p, ibv_wr_opcode op, uint64_t raddr,
			 uint32_t rkey, uint32_t len, uint64_t id,
			 ibv_wc_status want, const char *what)
{
	Untouched u = arm_untouched(p);
	ibv_wc wc{};

	CHECK(post_send(p.a, op, 0, len, id, raddr, rkey) == 0, "%s: post",
	      what);
	if (poll_one(p.a, wc))
		expect_eq_status(wc.status, want, what);
	expect_untouched(p, u, what);
	restate(p);
}

inline void refused_write(Pair &p, uint64_t raddr, uint32_t rkey,
			  uint32_t len, uint64_t id, ibv_wc_status want,
			  const char *what)
{
	refused_rdma(p, IBV_WR_RDMA_WRITE, raddr, rkey, len, id, want, what);
}

// Anonymous private memory, not yet touched.
inline uint8_t *map_anon(size_t len)
{
	void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	return m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
}

// Pages of [m, m + len) the CPU has now.
inline size_t resident(uint8_t *m, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	std::vector<unsigned char> vec((len + page - 1) / page);
	size_t n = 0;

	CHECK(mincore(m, len, vec.data()) == 0, "mincore: %s", strerror(errno));
	for (unsigned char v : vec)
		n += v & 1;
	return n;
}

// The value of @key ("VmPin:", "MemAvailable:") in a /proc file of
// "Key: N kB" lines, in KiB; -1 (and a failure) if there is none.
inline long proc_kb(const char *file, std::string_view key)
{
	std::ifstream f(file);
	std::string line;

	while (std::getline(f, line))
		if (line.rfind(key, 0) == 0)
			return atol(line.c_str() + key.size());
	CHECK(false, "no %.*s in %s", int(key.size()), key.data(), file);
	return -1;
}

// The memory the kernel could still give, in KiB.
inline long mem_available_kb()
{
	return proc_kb("/proc/meminfo", "MemAvailable:");
}

// Why the test could not run here (what it needs is missing, said in a
// sentence), or empty. run_test() then reports it as not run: "SKIP:",
// exit status 77, which tests/lib.sh and the runner count apart from a
// pass. The first reason given is kept.
inline std::string skip_reason;

inline void skip(const std::string &why)
{
	if (skip_reason.empty())
		skip_reason = why;
}

// What the test chose to run on, where the machine offers more than one
// way (which dma-buf exporter, say), each said once. run_test() prints
// them as "NOTE: NAME: text", whatever the outcome; tests/lib.sh's
// xfer_all passes them on to the runner's line for the case.
inline std::vector<std::string> test_notes;

inline void note(const std::string &text)
{
	for (const std::string &n : test_notes)
		if (n == text)
			return;
	test_notes.push_back(text);
}

// A test: its name, what it runs on a connected pair, what it changes in
// the pair before the pair is set up, and whether it also runs on UC.
struct Test {
	const char *name;
	void (*fn)(Pair &);
	void (*tweak)(Pair &);
	bool uc;	// also meaningful on UC
};

// The tests of one file (one feature), as sroce-xfer's main() finds them:
// each xfer_NAME.cpp has a table NAME_tests.
extern const std::span<const Test> ops_tests, errors_tests, rereg_tests,
	keys_tests, odp_tests, mw_tests, harden_tests, sec_tests, verbs_tests,
	dmabuf_tests, nullmr_tests, orphan_tests;

// A checker's usage line @what, then the tests it has, on stderr.
// Return: 2, its exit code.
inline int usage(const char *what, std::span<const Test> tests)
{
	fprintf(stderr, "usage: %s\nTEST is one of:", what);
	for (const Test &x : tests)
		fprintf(stderr, " %s", x.name);
	fputc('\n', stderr);
	return 2;
}

// Run the test called @name from @tables on a pair set up on device @dev
// (after the test's tweak): "NAME ok" and 0, or 1 with its failures said;
// 2 for a name no table has (or a test not for UC on UC); 77 with
// "SKIP: NAME: why" for a test that could not run here (skip()). Its
// notes (note()) come first.
inline int run_test(const char *dev, std::string_view name, Pair &p,
		    std::initializer_list<std::span<const Test>> tables)
{
	const Test *t = nullptr;

	for (std::span<const Test> table : tables)
		for (const Test &x : table)
			if (name == x.name)
				t = &x;
	if (!t || (p.type == IBV_QPT_UC && !t->uc)) {
		fprintf(stderr, "unknown test %.*s for this QP type\n",
			int(name.size()), name.data());
		return 2;
	}
	p.ctx = open_device(dev);
	if (!p.ctx) {
		fprintf(stderr, "cannot open %s\n", dev);
		return 1;
	}
	if (t->tweak)
		t->tweak(p);
	if (setup(p))
		t->fn(p);
	teardown(p);
	ibv_close_device(p.ctx);
	for (const std::string &n : test_notes)
		printf("NOTE: %s: %s\n", t->name, n.c_str());
	if (failures)
		return 1;
	if (!skip_reason.empty()) {
		printf("SKIP: %s: %s\n", t->name, skip_reason.c_str());
		return 77;
	}
	printf("%s ok\n", t->name);
	return 0;
}

} // namespace xfer
