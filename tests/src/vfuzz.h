// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-vfuzz's shared declarations: the random source, the log, the
// buffers with their canary pages, the pools of objects, the WRs posted,
// and struct Fuzz, which holds them all. sroce_vfuzz.cpp says what the
// fuzzer checks; it has the table of operations and the main loop.
#pragma once

#include "check.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

namespace vfuzz {

using ull = unsigned long long;

// ---- The run and its random source -----------------------------------------

// The command line, and how slow the kernel is (SROCE_TIME_SCALE).
struct Run {
	const char *dev = nullptr;
	uint64_t seed = 0, nops = 0;
	bool print = false;
	unsigned scale = 1;
};

inline Run g_run;

// splitmix64.
struct Rng {
	uint64_t s;

	uint64_t next()
	{
		uint64_t z = (s += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		return z ^ (z >> 31);
	}
	// 0 .. @n - 1 (0 if @n is 0).
	uint64_t below(uint64_t n) { return n ? next() % n : 0; }
	// True @p times in 100.
	bool pct(unsigned p) { return below(100) < p; }
	template <typename T, size_t N> T pick(const T (&a)[N])
	{
		return a[below(N)];
	}
};

// The stream of operation @n of the run seeded with @seed: what an
// operation draws does not shift what the next ones draw.
inline Rng op_rng(uint64_t seed, uint64_t n)
{
	Rng r{ seed };

	r.s = r.next() ^ (n * 0xd1342543de82ef95ULL);
	r.next();
	return r;
}

// ---- Names, and what is said (vfuzz_check.cpp) -----------------------------

std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string errname(int e);
std::string hex(const uint8_t *p, size_t n);
const char *status_name(int s);
const char *wr_op_name(int op);
const char *state_name(int s);
const char *qp_type_name(ibv_qp_type t);
void say(const std::string &s);

// An errno a verb may fail with: a real one; not 0, nor one of the
// kernel's internal codes (512 and up: ERESTARTSYS, ENOTSUPP, ...).
inline bool plausible(int e)
{
	return e > 0 && e <= EHWPOISON;
}

// ---- The log ---------------------------------------------------------------

const size_t kLogLines = 200;

// The last kLogLines operations, completions and events; each line said
// at once with --print. A child's lines begin with @prefix.
struct Log {
	std::array<std::string, kLogLines> ring;
	uint64_t n = 0;
	std::string prefix;

	void add(std::string line)
	{
		if (g_run.print) {
			printf("%s%s\n", prefix.c_str(), line.c_str());
			fflush(stdout);
		}
		ring[n++ % kLogLines] = std::move(line);
	}

	void dump() const
	{
		for (uint64_t i = n > kLogLines ? n - kLogLines : 0; i < n; i++)
			say(prefix + ring[i % kLogLines] + "\n");
	}
};

// ---- Memory ----------------------------------------------------------------

const uint64_t kKernelAddr = 0xffff888000000000ULL; // no process's memory
const size_t kHuge = 2 << 20;
inline size_t g_page;

struct BufSpec {
	const char *kind;
	size_t pages;	// of data, 4 KiB each
	bool shared;	// MAP_SHARED (else MAP_PRIVATE) anonymous
	bool odp_only;	// only ever registered with IBV_ACCESS_ON_DEMAND
	bool thp;	// 2 MiB aligned, MADV_HUGEPAGE
};

// A buffer: canary page, data pages, canary page, in one mapping.
struct Buf {
	BufSpec spec;
	uint8_t *data = nullptr;
	size_t len = 0;

	// The canary page before (@side 0) or after (1) the data.
	uint8_t *canary(int side) const
	{
		return side ? data + len : data - g_page;
	}
};

// ---- Objects ---------------------------------------------------------------

const int kSlots = 8;	// of each kind of object
const int kMaxSge = 8;	// SGEs a WR of ours can have
const int kMaxChain = 4;	// WRs one ibv_post_* can carry
const uint32_t kQkey = 0x1234;

template <typename T> struct Pool {
	std::array<T, kSlots> at{};

	// A random live slot for which @ok holds, or -1.
	template <typename Pred> int pick_if(Rng &r, Pred ok) const
	{
		int n = 0;

		for (const T &x : at)
			n += x.live() && ok(x);
		int k = r.below(n);
		for (int i = 0; i < kSlots; i++)
			if (at[i].live() && ok(at[i]) && !k--)
				return i;
		return -1;
	}
	int pick(Rng &r) const
	{
		return pick_if(r, [](const T &) { return true; });
	}
	// A random empty slot, or -1.
	int free_slot(Rng &r) const
	{
		int n = 0;

		for (const T &x : at)
			n += !x.live();
		int k = r.below(n);
		for (int i = 0; i < kSlots; i++)
			if (!at[i].live() && !k--)
				return i;
		return -1;
	}
};

struct Pd {
	ibv_pd *pd = nullptr;
	bool live() const { return pd; }
};

struct Cq {
	ibv_cq *cq = nullptr;
	ibv_cq_ex *ex = nullptr;	// made by ibv_create_cq_ex
	uint64_t wc_flags = 0;
	bool live() const { return cq; }
};

struct Xrcd {
	ibv_xrcd *xrcd = nullptr;
	bool live() const { return xrcd; }
};

struct Ah {
	ibv_ah *ah = nullptr;
	int pd = -1;
	bool live() const { return ah; }
};

struct Mr {
	ibv_mr *mr = nullptr;
	int pd = -1;
	int buf = -1;	// the buffer it was registered over, or -1
	uint64_t addr = 0, len = 0, iova = 0;
	int access = 0;
	bool implicit = false;	// registered over the whole address space
	bool live() const { return mr; }
};

struct Mw {
	ibv_mw *mw = nullptr;
	int pd = -1;
	uint32_t key = 0;	// the one its last bind gave it
	int mr = -1;		// the MR its last bind named, while there
	uint64_t addr = 0, len = 0;
	bool zero_based = false;
	unsigned access = 0;
	bool live() const { return mw; }
};

struct Srq {
	ibv_srq *srq = nullptr;
	uint32_t serial = 0;
	bool xrc = false;
	bool dying = false;	// destroyed, its CQ not yet drained
	int pd = -1, cq = -1, xrcd = -1;
	uint32_t srqn = 0, max_sge = 0;
	std::deque<uint64_t> ids;	// receives posted, not completed
	bool live() const { return srq; }
};

struct Qp {
	ibv_qp *qp = nullptr;
	ibv_qp_ex *ex = nullptr;	// made with send_ops_flags
	uint32_t serial = 0, qpn = 0;
	bool dying = false;	// destroyed, its CQs not yet drained
	ibv_qp_type type = IBV_QPT_RC;
	int pd = -1, scq = -1, rcq = -1, srq = -1, xrcd = -1;
	ibv_qp_cap cap{};
	uint64_t send_ops = 0;
	ibv_qp_state state = IBV_QPS_RESET;	// the last we moved it to
	uint32_t peer = 0;	// the serial of the QP op_exchange connected
				// it to, until it moves (or changes) again
	std::deque<uint64_t> sq, rq;	// WRs posted, not completed
	bool live() const { return qp; }
};

// A posted WR, until it completes or can no longer.
enum class Queue : uint8_t { Send, Recv, Srq };

struct Wr {
	Queue queue;
	int slot;		// of its QP, or SRQ
	uint32_t serial;	// of that QP or SRQ
	int opcode;		// a send's ibv_wr_opcode
	uint64_t room;		// a receive's bytes, all its SGEs
};

// A completion, from ibv_poll_cq or an extended CQ.
struct Wc {
	uint64_t wr_id;
	int status, opcode;
	uint32_t qp_num, byte_len;
	bool has_qpn, has_len;
};

// A key a request names, and where the addresses it is for are.
struct Target {
	uint32_t key = 0;
	uint64_t base = 0, len = 0;
	bool implicit = false;	// may name an implicit ODP MR
	std::string name;
};

// What an MR is registered over: a slice of a buffer's data, or -1 and
// memory it cannot be.
struct Region {
	uint64_t addr = 0, len = 0;
	int buf = -1;
};

// What a bind gives a window.
struct Bind {
	int mr = -1;
	uint64_t addr = 0, len = 0;
	unsigned access = 0;
};

// What the two ends of a connection agree on: the PSN each sends from
// and expects, the MTU, how many READs and atomics may be in flight.
struct Link {
	uint32_t sq_psn, rq_psn;
	ibv_mtu mtu;
	uint8_t rd_atomic;
};

// The outcome of an operation.
struct Res {
	enum Kind { Ok, Err, Skip } kind;
	int err;
};

inline Res ok() { return { Res::Ok, 0 }; }
inline Res skip() { return { Res::Skip, 0 }; }
inline Res err(int e) { return { Res::Err, e }; }

struct Fuzz;
using OpFn = Res (*)(Fuzz &, Rng &);

struct Op {
	const char *name;
	unsigned weight;
	OpFn fn;
};

// ---- The fuzzer's state ----------------------------------------------------

// Everything one process's run holds: its context, buffers, pools and the
// WRs that may still complete; what it counts; its log.
struct Fuzz {
	Fuzz(uint64_t s, std::string w, bool c)
		: seed(s), who(std::move(w)), child(c)
	{
		log.prefix = who;
	}

	uint64_t seed;
	std::string who;	// "" or the child's prefix to what it says
	bool child;
	ibv_context *ctx = nullptr;
	ibv_context *ictx = nullptr;	// imported from ctx's command fd
	bool ictx_tried = false;
	ibv_gid gid[2] = {};		// port 1's GIDs 0 and 1
	uint32_t serials = 0;

	std::vector<Buf> bufs;
	std::vector<uint8_t> canaries;	// what the canary pages hold
	uint8_t *hole = nullptr;	// PROT_NONE
	size_t hole_len = 0;

	Pool<Pd> pds;
	Pool<Cq> cqs;
	Pool<Xrcd> xrcds;
	Pool<Ah> ahs;
	Pool<Mr> mrs;
	Pool<Mw> mws;
	Pool<Srq> srqs;
	Pool<Qp> qps;
	std::array<uint32_t, 64> stale{};	// keys that named something
	uint64_t nstale = 0;

	std::unordered_map<uint64_t, Wr> wrs;	// may still complete
	std::unordered_map<uint64_t, const char *> gone; // may not: why
	std::deque<uint64_t> gone_order;
	uint64_t next_wr = 1;

	Log log;
	uint64_t opno = 0;
	const char *opname = "setup";
	bool in_op = false;
	std::string args;
	std::vector<std::string> during;	// the op's completions, events

	uint64_t n_ops = 0, n_ok = 0, n_err = 0, n_skip = 0, n_wc = 0;
	std::map<int, uint64_t> by_status, by_errno;
	std::map<std::string, uint64_t> by_op;
	std::vector<pid_t> children;

	// The run (sroce_vfuzz.cpp)
	bool open();
	void step(uint64_t n);
	void run(const Op &op, Rng &r, uint64_t n);
	void teardown();
	void check_leaks();
	void summary() const;

	// Checks (vfuzz_check.cpp)
	[[noreturn]] void fail(const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));
	void arg(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	void note(std::string line);
	Res ptr(const void *p, const char *call);
	Res ret(int r, const char *call);
	void check_canaries();
	void canary_changed(size_t b, int side);
	void reap();
	int drain(int c, bool ex);
	int drain_ex(int c);
	int cq_pending(int c) const;
	void completion(int c, const Wc &wc);
	void qp_completion(int c, const Wr &w, const Wc &wc);
	void srq_completion(int c, const Wr &w, const Wc &wc);
	void check_opcode(const Wr &w, const Wc &wc);
	void events();
	void check_event(const ibv_async_event &ev);

	// WRs (vfuzz_check.cpp)
	uint64_t new_wr_id() { return next_wr++; }
	void track(Queue q, int slot, uint64_t id, int opcode, uint64_t room);
	void retire(uint64_t id, const char *why);
	void qp_reset(int s);
	void qp_moved(int s, ibv_qp_state state);
	void qp_gone(int s);
	void srq_gone(int s);

	// Users of an object: what keeps it from being destroyed.
	int pd_users(int p) const;
	int cq_users(int c) const;
	int srq_users(int s) const;
	int xrcd_users(int x) const;
	int mr_windows(int m) const;

	// Arguments (vfuzz_args.cpp)
	bool map_memory();
	int pick_buf(Rng &r, bool odp_only_too) const;
	Region slice(Rng &r, int b) const;
	Region reg_region(Rng &r) const;
	bool touches_canary(uint64_t a, uint64_t len) const;
	bool may_name(const Target &t, uint64_t a, uint64_t len) const;
	bool implicit_key(uint32_t key) const;
	void forget_key(uint32_t key);
	Target buf_target(Rng &r) const;
	Target mr_target(Rng &r, int m, bool rkey) const;
	Target mw_target(int w) const;
	Target pick_key(Rng &r, bool remote) const;
	uint64_t data_addr(Rng &r, uint64_t len, bool align8) const;
	uint64_t pick_addr(Rng &r, const Target &t, uint64_t len,
			   bool align8) const;
	ibv_sge local_sge(Rng &r, uint32_t want) const;
	ibv_sge inline_sge(Rng &r) const;
	Bind bind_args(Rng &r, int pd) const;
	void rebind(int w, const Bind &b, uint32_t key);
	void fill_ah(Rng &r, ibv_ah_attr &a, bool valid) const;
	int pick_qp(Rng &r, bool send) const;
	uint32_t peer_qpn(Rng &r, int s) const;
	ibv_qp_state query_state(int s);
	bool import_ctx();
	std::string fmt_addr(uint64_t a) const;
	std::string fmt_key(uint32_t k) const;
	std::string fmt_sges(const ibv_sge *sge, int n) const;
};

inline Fuzz *g_fuzz;	// for the SIGALRM handler

// How many of the @n WRs at @first a post that returned @ret queued: all
// before @bad (all of them if it is NULL: only the doorbell failed).
template <typename W>
int posted(Fuzz &f, int ret, const W *bad, const W *first, int n,
	   const char *call)
{
	if (!ret || !bad)
		return n;
	for (int i = 0; i < n; i++)
		if (bad == &first[i])
			return i;
	f.fail("%s returned %d with bad_wr pointing at none of its WRs", call,
	       ret);
}

// ---- Arguments (vfuzz_args.cpp) --------------------------------------------

uint64_t pick_len(Rng &r, uint64_t span);
bool within(uint64_t a, uint64_t len, uint64_t base, uint64_t n);
int mr_access(Rng &r);
unsigned mw_access(Rng &r);
unsigned qp_access(Rng &r);
unsigned send_flags(Rng &r);
bool queued(int ret);

// ---- The operations --------------------------------------------------------

// PDs, XRC domains, MRs, windows, AHs, device queries (vfuzz_ops_mem.cpp)
Res op_alloc_pd(Fuzz &f, Rng &r);
Res op_dealloc_pd(Fuzz &f, Rng &r);
Res op_open_xrcd(Fuzz &f, Rng &r);
Res op_close_xrcd(Fuzz &f, Rng &r);
Res op_reg_mr(Fuzz &f, Rng &r);
Res op_reg_mr_iova(Fuzz &f, Rng &r);
Res op_reg_mr_implicit(Fuzz &f, Rng &r);
Res op_dereg_mr(Fuzz &f, Rng &r);
Res op_rereg_mr(Fuzz &f, Rng &r);
Res op_advise_mr(Fuzz &f, Rng &r);
Res op_import_mr(Fuzz &f, Rng &r);
Res op_alloc_mw(Fuzz &f, Rng &r);
Res op_dealloc_mw(Fuzz &f, Rng &r);
Res op_bind_mw(Fuzz &f, Rng &r);
Res op_create_ah(Fuzz &f, Rng &r);
Res op_destroy_ah(Fuzz &f, Rng &r);
Res op_query_device(Fuzz &f, Rng &r);

// CQs, SRQs, QPs, posting and polling (vfuzz_ops_queue.cpp)
Res op_create_cq(Fuzz &f, Rng &r);
Res op_destroy_cq(Fuzz &f, Rng &r);
Res op_resize_cq(Fuzz &f, Rng &r);
Res op_req_notify_cq(Fuzz &f, Rng &r);
Res op_poll_cq(Fuzz &f, Rng &r);
Res op_create_srq(Fuzz &f, Rng &r);
Res op_destroy_srq(Fuzz &f, Rng &r);
Res op_modify_srq(Fuzz &f, Rng &r);
Res op_query_srq(Fuzz &f, Rng &r);
Res op_post_srq_recv(Fuzz &f, Rng &r);
Res op_create_qp(Fuzz &f, Rng &r);
Res op_destroy_qp(Fuzz &f, Rng &r);
Res op_connect_qp(Fuzz &f, Rng &r);
Res op_modify_qp(Fuzz &f, Rng &r);
Res op_query_qp(Fuzz &f, Rng &r);
Res op_post_send(Fuzz &f, Rng &r);
Res op_post_send_ex(Fuzz &f, Rng &r);
Res op_post_recv(Fuzz &f, Rng &r);
int connect_qp(Fuzz &f, Rng &r, int s, uint32_t peer, const Link *l);

// Valid traffic between QPs connected to each other (vfuzz_ops_data.cpp)
Res op_exchange(Fuzz &f, Rng &r);

// A forked child (sroce_vfuzz.cpp)
Res op_fork_child(Fuzz &f, Rng &r);

} // namespace vfuzz
