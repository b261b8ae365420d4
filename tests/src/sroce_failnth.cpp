// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-failnth: every error path of every verb, taken once.
//
// For each verb the provider and sroce.ko implement, a sweep: with what the
// verb needs set up, the verb is called once for n = 1, 2, ... with the
// kernel's fault injection armed to fail the nth fault-injection point
// (slab or page allocation, copy from or to user memory) this thread
// reaches (/proc/thread-self/fail-nth; Documentation/fault-injection/
// fault-injection.rst), until a call ends before its nth point: then every
// point of the call has failed once.
//
// A call that fails says why (an errno), and leaves nothing behind: the
// objects "rdma resource show" lists on the device (this process's and the
// kernel's), and the users of this process's PDs and CQs (which count the
// windows, address handles, ... it does not list), are as before the call,
// and what the call was to change still works as before. A call that
// succeeds although a point failed (the kernel retried, or did without)
// has made something that works, and that is destroyed again.
//
// Posting work runs the QP engine in the doorbell's system call, and the
// packets' whole way through the loopback (requester, responder,
// completer) with it: a post's sweep fails each point of that way, and
// the WR must complete, well or in error, within a bound.
//
// Needs a kernel with CONFIG_FAULT_INJECTION, FAILSLAB, FAIL_PAGE_ALLOC and
// FAULT_INJECTION_USERCOPY, with the knobs tests/debug/failnth.sh sets.
//
//   sroce-failnth DEV [SWEEP...]
//   sroce-failnth --list
#include "tracing.h"
#include "xfer.h"

#include <algorithm>
#include <cctype>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <string>

namespace xfer {
namespace {

// ---- fault injection ------------------------------------------------------

// A sweep that has not ended after this many points fails.
const unsigned kMaxPoints = 2000;

// This thread's /proc/thread-self/fail-nth.
int fail_nth_fd = -1;

bool fail_nth_open()
{
	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	CHECK(fail_nth_fd >= 0, "/proc/thread-self/fail-nth: %s (not a "
	      "kernel with CONFIG_FAULT_INJECTION?)", strerror(errno));
	return fail_nth_fd >= 0;
}

// From now on, the @n-th fault-injection point this thread reaches fails.
bool fail_nth_arm(unsigned n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);
	ssize_t r = pwrite(fail_nth_fd, buf, len, 0);

	CHECK(r == len, "arming fail-nth with %u: %s", n, strerror(errno));
	return r == len;
}

// Disarms. Return: what was left of the count, 0 if the fault was
// injected, else how many points short of it the call ended. Reading and
// clearing copy to and from user memory, points themselves: a read that
// fails with EFAULT took the last one (1 was left), and a clearing write
// that fails with EFAULT took the last one and so cleared it too.
unsigned fail_nth_disarm()
{
	char buf[16] = {};
	ssize_t r = pread(fail_nth_fd, buf, sizeof(buf) - 1, 0);
	int err = errno;

	if (pwrite(fail_nth_fd, "0", 1, 0) != 1)
		CHECK(pwrite(fail_nth_fd, "0", 1, 0) == 1,
		      "clearing fail-nth: %s", strerror(errno));
	if (r >= 0)
		return unsigned(strtoul(buf, nullptr, 10));
	CHECK(err == EFAULT, "reading fail-nth back: %s", strerror(err));
	return 1;
}

// ---- ib_core's part of making an XRC target QP ---------------------------

// Linux 6.1's create_xrc_qp_user() (drivers/infiniband/core/verbs.c), which
// ib_create_qp_user() calls once the driver has made an XRC target QP,
// counts a use of the XRC domain, then keeps it if what follows fails
// (__ib_open_qp()'s allocation, the QP's xa_store() in the domain's
// table): the domain can never be closed, and ib_uverbs WARNs when the
// device file is closed. ib_core's bug, not sroce's; no application meets
// it unless the kernel fails those allocations. So that sweep injects no
// failure there: before each point it traces one creation without a
// failure (kprobe events on should_fail_ex(), which every point calls, on
// the return of the driver's create_qp and of ib_create_qp_user()), and
// skips the points between the two returns, and one either side for an
// allocation that comes and goes (an xarray's node).

const char *const kProbes[] = { "p:failnth/sf should_fail_ex",
				"r:failnth/drv sroce_create_qp",
				"r:failnth/core ib_create_qp_user" };

// The kprobe events on, for this process only; or (!@on) off and gone.
bool core_probes(bool on)
{
	bool ok = true;

	if (on) {
		for (const char *p : kProbes)
			ok = ok && tracing_put("kprobe_events", std::string(p) +
						"\n");
		// SROCE_FAILNTH_TRACE=1: each point's stack in the trace,
		// and the first creation's trace on stderr.
		if (ok && getenv("SROCE_FAILNTH_TRACE"))
			ok = tracing_put("events/failnth/sf/trigger",
					 "stacktrace");
		return ok && tracing_put("set_event_pid",
					 std::to_string(getpid()));
	}
	tracing_put("events/failnth/enable", "0");
	if (getenv("SROCE_FAILNTH_TRACE"))
		tracing_put("events/failnth/sf/trigger", "!stacktrace");
	tracing_put("set_event_pid", "");
	for (const char *p : kProbes) {
		std::string name = strchr(p, ':') + 1;

		tracing_put("kprobe_events", "-:" + name.substr(0,
				name.find(' ')) + "\n");
	}
	return true;
}

// The points one call of @call reaches between the driver's create_qp
// returning and ib_create_qp_user() returning: [first, last], or
// first > last for none; first is 0 if the trace did not show them.
struct Span {
	unsigned first = 0, last = 0;
};

template <typename Call> Span core_span(Call call)
{
	Span sp;
	unsigned n = 0;
	bool drv = false, core = false;
	char line[512];

	if (!tracing_put("trace", "") ||
	    !tracing_put("events/failnth/enable", "1"))
		return sp;
	call();
	tracing_put("events/failnth/enable", "0");
	FILE *f = fopen((std::string(kTracing) + "/trace").c_str(), "re");
	static bool dump = getenv("SROCE_FAILNTH_TRACE");
	while (f && fgets(line, sizeof(line), f)) {
		if (dump)
			fputs(line, stderr);
		// "  comm-pid  [cpu] flags  time: event: ..."; the flags'
		// third is h or s (or H) in an interrupt: not this thread's.
		const char *fl = strstr(line, "] ");
		if (line[0] == '#' || !fl || strlen(fl) < 5 ||
		    strchr("hsH", fl[4]))
			continue;
		if (strstr(line, " sf: "))
			n++;
		else if (strstr(line, " drv: "))
			drv = true, sp.first = n + 1;
		else if (strstr(line, " core: ") && drv) {
			sp.last = n;
			core = true;
			break;
		}
	}
	if (f)
		fclose(f);
	dump = false;
	if (!core)
		sp.first = 0;
	CHECK(sp.first, "no trace of the driver's create_qp and "
	      "ib_create_qp_user() in %s/trace", kTracing);
	return sp;
}

// ---- what "rdma resource show" lists --------------------------------------

// Per kind, this process's objects ("qp") and the kernel's ("qp kernel"),
// and the sum of the users of this process's PDs and CQs ("pd users");
// and what the process holds of them: its file descriptors ("fds") and
// its mappings of the device's queues ("queue mappings").
using Census = std::map<std::string, long>;

const char *const kKinds[] = { "pd", "mr", "cq", "srq", "ctx", "qp" };

// The rdma batch that lists them: one "resource show" per kind, each
// followed by "dev show DEV", whose one line ("IDX: DEV: node_type ...")
// marks where that kind's lines end. One rdma process for them all.
std::string census_batch(const std::string &dev)
{
	std::string b;

	for (std::string k : kKinds) {
		b += k == "qp" ? "resource show qp link " + dev + "/1\n" :
				 "resource show " + k + " dev " + dev + "\n";
		b += "dev show " + dev + "\n";
	}
	return b;
}

// Count one object's line ("dev DEV ... users N pid P comm C ...").
void census_line(Census &c, const std::string &kind, const char *line)
{
	static const std::string mine = " pid " + std::to_string(getpid()) +
					 " ";
	const char *users = strstr(line, " users ");

	if (strstr(line, mine.c_str())) {
		c[kind]++;
		if (users)
			c[kind + " users"] += atol(users + 7);
	} else if (!strstr(line, " pid ")) {
		c[kind + " kernel"]++;
	}
}

// Queue mappings the provider keeps of objects that are gone: ib_uverbs
// answered EFAULT to their destroy after it had destroyed them (it copies
// its answer last), so the provider, told the destroy failed, still holds
// the object and its rings. They go when the process exits.
long stale_mappings = 0;

// This process's mappings of the device's queues (mmaps of the device's
// command file), less the stale ones.
long queue_mappings()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	long n = -stale_mappings;

	while (std::getline(maps, line))
		if (line.find("/dev/infiniband/") != std::string::npos)
			n++;
	return n;
}

// This process's file descriptors and queue mappings.
void census_own(Census &c)
{
	DIR *d = opendir("/proc/self/fd");

	while (d && readdir(d))
		c["fds"]++;
	if (d)
		closedir(d);
	c["queue mappings"] = queue_mappings();
	if (!c["queue mappings"])
		c.erase("queue mappings");
}

// The device's objects now, as rdma lists them from the batch file
// @batch, and what the process holds of them; {"census failed": 1} if
// rdma did not list them all.
Census census(const std::string &dev, const std::string &batch)
{
	std::string cmd = "rdma -b " + batch;
	std::string marker = ": " + dev + ": ";
	Census c;
	size_t kind = 0;
	char line[4096];
	bool odd = false;

	census_own(c);
	FILE *f = popen(cmd.c_str(), "r");
	CHECK(f, "popen %s: %s", cmd.c_str(), strerror(errno));
	while (f && fgets(line, sizeof(line), f)) {
		bool object = !strncmp(line, "dev ", 4) ||
			      !strncmp(line, "link ", 5);

		if (isdigit((unsigned char)line[0]) &&
		    strstr(line, marker.c_str()))
			kind++;
		else if (kind < std::size(kKinds) && object)
			census_line(c, kKinds[kind], line);
		else
			odd = true;
	}
	int status = f ? pclose(f) : -1;
	bool ok = status == 0 && kind == std::size(kKinds) && !odd;
	CHECK(ok, "%s: exit status %d, %zu of %zu kinds listed%s", cmd.c_str(),
	      status, kind, std::size(kKinds), odd ? ", unexpected lines" : "");
	if (!ok)
		c["census failed"] = 1;
	return c;
}

// What differs: "qp 3 -> 4, pd users 5 -> 4".
std::string census_diff(const Census &was, const Census &now)
{
	std::map<std::string, std::pair<long, long>> all;
	std::string d;

	for (const auto &[k, v] : was)
		all[k].first = v;
	for (const auto &[k, v] : now)
		all[k].second = v;
	for (const auto &[k, v] : all)
		if (v.first != v.second)
			d += (d.empty() ? "" : ", ") + k + " " +
			     std::to_string(v.first) + " -> " +
			     std::to_string(v.second);
	return d;
}

// Has anything fewer than it had (an object, a PD's or CQ's users)?
bool census_fell(const Census &was, const Census &now)
{
	for (const auto &[k, v] : was) {
		auto it = now.find(k);
		if ((it == now.end() ? 0 : it->second) < v)
			return true;
	}
	return false;
}

bool census_rose(const Census &was, const Census &now)
{
	return census_fell(now, was);
}

// @c moved by what @to has more than @from.
Census census_shift(Census c, const Census &from, const Census &to)
{
	for (const auto &[k, v] : to)
		c[k] += v;
	for (const auto &[k, v] : from)
		c[k] -= v;
	std::erase_if(c, [](const auto &kv) { return kv.second == 0; });
	return c;
}

// ---- the fixture ----------------------------------------------------------

const int kRw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
const uint32_t kQkey = 0x1234;
const uint64_t kWrId = 0xfa11, kProbeId = 0x9be, kRecvId = 0x7ec;
const size_t kMemLen = 64 << 10;	// a pinned MR's memory
const size_t kOdpLen = 256 << 10;	// an ODP MR's memory
const size_t kChunkedLen = 32 << 20;	// over an ODP chunk (16 MiB)
const uint64_t kIovaBase = 0x7e5700000000ULL; // where an iova MR is seen
// Where things are in the pair's buffers (a.buf, b.buf: 1 MiB each).
const size_t kSrc = 0;			// a: a post's local bytes
const size_t kDst = 0;			// b: a post's remote bytes
const size_t kRecv = 16 << 10;		// b: where a SEND lands
const size_t kProbe = 32 << 10;		// both: a probe's bytes
const size_t kWin = 64 << 10;		// b: the windows' MR (64 KiB)
const size_t kScratch = 512 << 10;	// a: objects' own tests
const uint32_t kUdLen = 256, kGrh = 40;

// What every sweep may use, set up without fault injection.
struct Env {
	std::string dev, batch;
	ibv_context *ctx = nullptr;
	Pair p;			  // a <-> b, RC, connected
	ibv_gid gid{};		  // ours (index 1)
	ibv_cq *scq = nullptr;	  // completions of the objects' own tests
	ibv_ah *self = nullptr;	  // a's PD, to our own GID
	ibv_qp *ud = nullptr;	  // a's PD, UD in RTS, on scq
	ibv_pd *pd2 = nullptr;	  // a PD an MR moves from
	ibv_xrcd *xrcd = nullptr;
	ibv_mr *win = nullptr;	  // b's PD, bindable, over b.buf[kWin..]
	uint8_t *mem[2] = {};	  // pinned MRs' memory, kMemLen each
	uint8_t *odp = nullptr;	  // anonymous memory for ODP MRs
	uint8_t *big = nullptr;	  // kChunkedLen of it, never touched
	bool odp_ok = false, implicit_ok = false;
	int scale = 1;		  // SROCE_TIME_SCALE
};

Census census(const Env &e)
{
	return census(e.dev, e.batch);
}

// What an application sees of an MR.
struct MrSeen {
	uint32_t lkey, rkey;
	void *addr;
	size_t length;
	ibv_pd *pd;

	bool operator==(const MrSeen &) const = default;
};

MrSeen seen(const ibv_mr *mr)
{
	return { mr->lkey, mr->rkey, mr->addr, mr->length, mr->pd };
}

// What one sweep's hooks share.
struct Slot {
	const char *name = "";
	int arg = 0;		// the sweep's variant
	unsigned n = 0;		// the point armed to fail
	// A failed destroy took its object away all the same (the census
	// fell): it is neither used nor destroyed again.
	bool gone = false;
	int hangs = 0;		// WRs that did not complete
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_mr *mr = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_srq *srq = nullptr;
	ibv_xrcd *xrcd = nullptr;
	ibv_mw *mw = nullptr;
	ibv_ah *ah = nullptr;
	ibv_gid mgid{};
	bool attached = false;	// s.qp to s.mgid
	uint32_t rkey = 0;	// a window's key before the bind
	MrSeen was{};		// an MR before the rereg
	bool bad_is_wr = false; // a failed post set *bad_wr to the WR
	uint8_t *tgt = nullptr; // a post's remote bytes
	uint32_t tgt_rkey = 0;
	long mappings = 0;	// queue mappings prepare's object added
	std::map<std::string, int> notes; // what tolerated calls did
};

// ib_uverbs copies its answer to a rereg, a resize or a destroy after it
// made the change, so an EFAULT may come after the change was made; the
// note that counts them.
const char *const kMadeThenEfault = "made before ib_uverbs' EFAULT";

#define SCHECK(s, cond, fmt, ...)                                            \
	CHECK(cond, "%s, point %u: " fmt, (s).name,                          \
	      (s).n __VA_OPT__(, ) __VA_ARGS__)

// A sweep's result for a verb: 0, its errno, or kNoErrno for a failure
// that gave none.
const int kNoErrno = -1;

int ptr_result(const void *obj)
{
	return obj ? 0 : errno ? errno : kNoErrno;
}

int int_result(int ret)
{
	return !ret ? 0 : ret > 0 ? ret : errno ? errno : kNoErrno;
}

const char *err_name(int err)
{
	const char *s = err > 0 ? strerrorname_np(err) : nullptr;

	return s ? s : err == kNoErrno ? "no errno" : "?";
}

uint8_t next_seed()
{
	static uint8_t seed;

	return seed += 37;
}

size_t page_size()
{
	return size_t(sysconf(_SC_PAGESIZE));
}

// The memory forgets its pages: an ODP access must fault them in again.
void forget(uint8_t *m, size_t len)
{
	CHECK(madvise(m, len, MADV_DONTNEED) == 0, "madvise: %s",
	      strerror(errno));
}

// Waits up to 3 s (times SROCE_TIME_SCALE) for a completion on @cq.
bool wait_wc(const Env &e, ibv_cq *cq, ibv_wc &wc)
{
	for (int i = 0; i < 3000 * e.scale; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n)
			return n == 1;
		usleep(1000);
	}
	return false;
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return IBV_QPS_UNKNOWN;
	return a.qp_state;
}

// An address vector to our own GID.
ibv_ah_attr self_av(const Env &e)
{
	ibv_ah_attr a{};

	a.is_global = 1;
	a.port_num = 1;
	a.grh.dgid = e.gid;
	a.grh.sgid_index = 1;
	a.grh.hop_limit = 64;
	return a;
}

// The pair back to RTS from whatever state, and its engine idle: the runs
// the modifies scheduled are over, so that the next post's doorbell does
// the work in this thread.
void reconnect(Env &e)
{
	restate(e.p);
	usleep(2000 * e.scale);
}

// One RDMA operation of a's from a.buf[kSrc]; its status. A pair in
// error is connected again.
ibv_wc_status pair_rdma(Env &e, ibv_wr_opcode op, uint64_t raddr,
			uint32_t rkey, uint32_t len)
{
	ibv_wc wc{};

	CHECK(post_send(e.p.a, op, kSrc, len, kProbeId, raddr, rkey) == 0,
	      "post %d", op);
	if (!wait_wc(e, e.p.a.cq, wc)) {
		CHECK(false, "no completion of a's RDMA operation %d", op);
		reconnect(e);
		return IBV_WC_GENERAL_ERR;
	}
	if (wc.status != IBV_WC_SUCCESS)
		reconnect(e);
	return wc.status;
}

// a's RDMA WRITE of new bytes through @rkey to @raddr: its status, and
// whether they landed in @m (the same address, unless the MR is not at
// its own address).
ibv_wc_status write_key(Env &e, uint8_t *m, uint64_t raddr, uint32_t rkey,
			bool *landed)
{
	fill(e.p.a, kSrc, 4096, next_seed());
	ibv_wc_status st = pair_rdma(e, IBV_WR_RDMA_WRITE, raddr, rkey, 4096);
	*landed = st == IBV_WC_SUCCESS && !memcmp(m, &e.p.a.buf[kSrc], 4096);
	return st;
}

// a's RDMA WRITE through @rkey to @raddr lands in @m. Return: it did.
bool write_lands(Env &e, Slot &s, uint8_t *m, uint64_t raddr, uint32_t rkey,
		 const char *what)
{
	bool landed;
	ibv_wc_status st = write_key(e, m, raddr, rkey, &landed);

	SCHECK(s, landed, "%s: WRITE through rkey 0x%x: %s%s", what, rkey,
	       ibv_wc_status_str(st), st ? "" : ", bytes differ");
	return landed;
}

// a's RDMA WRITE through @rkey to @m is refused, and not a byte lands.
void write_refused(Env &e, Slot &s, uint8_t *m, uint32_t rkey,
		   const char *what)
{
	memset(m, 0xee, 4096);
	fill(e.p.a, kSrc, 4096, next_seed());
	ibv_wc_status st = pair_rdma(e, IBV_WR_RDMA_WRITE, uintptr_t(m), rkey,
				     4096);
	size_t kept = std::count(m, m + 4096, uint8_t(0xee));
	SCHECK(s, st == IBV_WC_REM_ACCESS_ERR && kept == 4096,
	       "%s: WRITE through rkey 0x%x: %s, %zu bytes landed, expected "
	       "%s and none", what, rkey, ibv_wc_status_str(st), 4096 - kept,
	       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
}

// a's RDMA WRITE through @rkey to @m lands whole. Return: it did; if it
// did not, not a byte landed (it is the caller's to check the refusal).
bool write_made(Env &e, Slot &s, uint8_t *m, uint32_t rkey)
{
	memset(m, 0xee, 4096);
	fill(e.p.a, kSrc, 4096, next_seed());
	ibv_wc_status st = pair_rdma(e, IBV_WR_RDMA_WRITE, uintptr_t(m), rkey,
				     4096);
	if (st == IBV_WC_SUCCESS && !memcmp(m, &e.p.a.buf[kSrc], 4096))
		return true;
	size_t kept = std::count(m, m + 4096, uint8_t(0xee));
	SCHECK(s, kept == 4096, "WRITE through rkey 0x%x: %s, %zu bytes "
	       "landed, expected all or none", rkey, ibv_wc_status_str(st),
	       4096 - kept);
	return false;
}

// Take @qp one state on: to INIT, RTR or RTS, connected (RTR) to QP @dest
// of this device, with the attributes its type needs. Return: its errno.
int qp_step(const Env &e, ibv_qp *qp, ibv_qp_state to, uint32_t dest)
{
	bool ud = qp->qp_type == IBV_QPT_UD, uc = qp->qp_type == IBV_QPT_UC;
	ibv_qp_attr a{};
	int mask = IBV_QP_STATE;

	a.qp_state = to;
	if (to == IBV_QPS_INIT) {
		a.port_num = 1;
		a.qkey = kQkey;
		a.qp_access_flags = kRw | IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			(ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	} else if (to == IBV_QPS_RTR && !ud) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dest;
		a.rq_psn = dest * 7 & 0xffffff;
		a.ah_attr = self_av(e);
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (!uc)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
	} else if (to == IBV_QPS_RTS) {
		a.sq_psn = qp->qp_num * 7 & 0xffffff;
		a.timeout = uint8_t(e.p.timeout);
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_SQ_PSN;
		if (!ud && !uc)
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

// @qp from its state to RTS, connected to itself.
bool qp_to_rts(const Env &e, ibv_qp *qp)
{
	int ret = 0;

	for (ibv_qp_state to : { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS })
		if (!ret && qp_state(qp) < to)
			ret = qp_step(e, qp, to, qp->qp_num);
	CHECK(ret == 0, "QP 0x%x to RTS: %s", qp->qp_num, strerror(ret));
	return ret == 0;
}

// UD: @tx sends kUdLen bytes through @ah to QP @dqpn (with kQkey), and
// @rx receives them; both complete on @cq. All of a's PD.
void ud_send(Env &e, Slot &s, ibv_qp *tx, ibv_qp *rx, ibv_cq *cq,
	     ibv_ah *ah, uint32_t dqpn, const char *what)
{
	uint8_t *src = &e.p.a.buf[kScratch];
	uint8_t *dst = &e.p.a.buf[kScratch + (128 << 10)];
	ibv_sge rsge = { uintptr_t(dst), kUdLen + kGrh, e.p.a.mr->lkey };
	ibv_sge ssge = { uintptr_t(src), kUdLen, e.p.a.mr->lkey };
	ibv_recv_wr rwr{}, *rbad;
	ibv_send_wr swr = one_sge_wr(&ssge, IBV_WR_SEND, kWrId), *sbad;

	fill(e.p.a, kScratch, kUdLen, next_seed());
	memset(dst, 0, kUdLen + kGrh);
	rwr.wr_id = kRecvId;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	swr.wr.ud = { ah, dqpn, kQkey };
	SCHECK(s, ibv_post_recv(rx, &rwr, &rbad) == 0, "%s: post_recv", what);
	SCHECK(s, ibv_post_send(tx, &swr, &sbad) == 0, "%s: post_send", what);
	for (int i = 0; i < 2; i++) {
		ibv_wc wc{};
		bool got = wait_wc(e, cq, wc);
		SCHECK(s, got && wc.status == IBV_WC_SUCCESS,
		       "%s: completion %d of 2: %s", what, i + 1,
		       got ? ibv_wc_status_str(wc.status) : "none");
		if (got && wc.wr_id == kRecvId)
			SCHECK(s, wc.byte_len == kUdLen + kGrh &&
				   !memcmp(dst + kGrh, src, kUdLen),
			       "%s: %u bytes received, or they differ", what,
			       wc.byte_len);
	}
}

// An RC or UC QP of a's PD connected to itself WRITEs within a's buffer.
void rc_self_write(Env &e, Slot &s, ibv_qp *qp)
{
	size_t dst = kScratch + (64 << 10);
	ibv_sge sge = { remote(e.p.a, kScratch), 4096, e.p.a.mr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_RDMA_WRITE, kWrId), *bad;
	ibv_wc wc{};

	fill(e.p.a, kScratch, 4096, next_seed());
	memset(&e.p.a.buf[dst], 0, 4096);
	wr.wr.rdma = { remote(e.p.a, dst), e.p.a.mr->rkey };
	SCHECK(s, ibv_post_send(qp, &wr, &bad) == 0, "post WRITE");
	bool got = wait_wc(e, e.scq, wc);
	SCHECK(s, got && wc.status == IBV_WC_SUCCESS &&
			  landed(e.p.a, dst, e.p.a, kScratch, 4096),
	       "QP 0x%x WRITE to itself: %s", qp->qp_num,
	       got ? ibv_wc_status_str(wc.status) : "no completion");
}

// A QP works: connected to itself it moves data (XRC halves, which need
// each other: it goes to INIT).
void qp_works(Env &e, Slot &s, ibv_qp *qp)
{
	if (qp->qp_type == IBV_QPT_XRC_SEND ||
	    qp->qp_type == IBV_QPT_XRC_RECV) {
		int ret = qp_step(e, qp, IBV_QPS_INIT, 0);
		SCHECK(s, ret == 0, "XRC QP to INIT: %s", strerror(ret));
		return;
	}
	if (!qp_to_rts(e, qp))
		return;
	if (qp->qp_type == IBV_QPT_UD)
		ud_send(e, s, qp, qp, e.scq, e.self, qp->qp_num, "UD QP");
	else
		rc_self_write(e, s, qp);
}

// A CQ works: a UD QP on it sends to itself, and both completions come.
void cq_works(Env &e, Slot &s, ibv_cq *cq)
{
	ibv_qp *qp = ud_qp(e.p.a, cq);

	SCHECK(s, qp, "a UD QP on the CQ: %s", strerror(errno));
	if (!qp)
		return;
	ud_send(e, s, qp, qp, cq, e.self, qp->qp_num, "through the CQ");
	SCHECK(s, ibv_destroy_qp(qp) == 0, "destroy the CQ's UD QP");
}

// ---- the fixture's setup --------------------------------------------------

// Can the device register ODP MRs (and implicit ones) RC can write to?
void query_odp(Env &e)
{
	ibv_device_attr_ex a{};

	if (ibv_query_device_ex(e.ctx, nullptr, &a))
		return;
	e.odp_ok = (a.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
		   (a.odp_caps.per_transport_caps.rc_odp_caps &
		    IBV_ODP_SUPPORT_WRITE);
	e.implicit_ok = e.odp_ok &&
			(a.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
}

bool env_memory(Env &e)
{
	for (uint8_t *&m : e.mem) {
		m = static_cast<uint8_t *>(aligned_alloc(4096, kMemLen));
		if (m)
			memset(m, 0, kMemLen);
	}
	e.odp = map_anon(kOdpLen);
	e.big = map_anon(kChunkedLen);
	return e.mem[0] && e.mem[1] && e.odp && e.big;
}

bool env_objects(Env &e)
{
	ibv_ah_attr av = self_av(e);
	ibv_xrcd_init_attr xa{};

	e.scq = ibv_create_cq(e.ctx, 256, nullptr, nullptr, 0);
	e.self = ibv_create_ah(e.p.a.pd, &av);
	e.ud = e.scq ? ud_qp(e.p.a, e.scq) : nullptr;
	e.pd2 = ibv_alloc_pd(e.ctx);
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	e.xrcd = ibv_open_xrcd(e.ctx, &xa);
	e.win = ibv_reg_mr(e.p.b.pd, &e.p.b.buf[kWin], 64 << 10,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(e.scq && e.self && e.ud && e.pd2 && e.xrcd && e.win,
	      "setting up: cq %p ah %p ud %p pd %p xrcd %p mr %p: %s", e.scq,
	      e.self, e.ud, e.pd2, e.xrcd, e.win, strerror(errno));
	return e.scq && e.self && e.ud && e.pd2 && e.xrcd && e.win;
}

// The batch file census() gives rdma.
bool env_batch(Env &e)
{
	char path[] = "/tmp/sroce-failnth.XXXXXX";
	int fd = mkstemp(path);
	std::string b = census_batch(e.dev);

	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		return false;
	bool ok = write(fd, b.data(), b.size()) == ssize_t(b.size());
	close(fd);
	e.batch = path;
	CHECK(ok, "writing %s", path);
	return ok;
}

bool env_setup(Env &e)
{
	const char *scale = getenv("SROCE_TIME_SCALE");

	e.scale = std::max(1, scale ? atoi(scale) : 1);
	e.ctx = open_device(e.dev.c_str());
	CHECK(e.ctx, "cannot open %s", e.dev.c_str());
	if (!e.ctx || !env_memory(e))
		return false;
	e.p.ctx = e.ctx;
	if (!setup(e.p))
		return false;
	CHECK(ibv_query_gid(e.ctx, 1, 1, &e.gid) == 0, "query GID 1");
	query_odp(e);
	return env_objects(e);
}

void env_teardown(Env &e)
{
	if (e.win)
		CHECK(ibv_dereg_mr(e.win) == 0, "dereg the windows' MR (a "
		      "window is still bound to it?)");
	if (e.xrcd)
		CHECK(ibv_close_xrcd(e.xrcd) == 0, "close XRCD");
	if (e.ud)
		CHECK(ibv_destroy_qp(e.ud) == 0, "destroy UD QP");
	if (e.self)
		CHECK(ibv_destroy_ah(e.self) == 0, "destroy AH");
	if (e.pd2)
		CHECK(ibv_dealloc_pd(e.pd2) == 0, "dealloc PD");
	if (e.scq)
		CHECK(ibv_destroy_cq(e.scq) == 0, "destroy CQ");
	if (e.ctx)
		teardown(e.p);
	if (e.ctx)
		CHECK(ibv_close_device(e.ctx) == 0, "close device");
	for (uint8_t *m : e.mem)
		free(m);
	if (e.odp)
		munmap(e.odp, kOdpLen);
	if (e.big)
		munmap(e.big, kChunkedLen);
}

// ---- sweeps: context and PDs ----------------------------------------------

int call_open_device(Env &e, Slot &s)
{
	errno = 0;
	s.ctx = ibv_open_device(e.ctx->device);
	return ptr_result(s.ctx);
}

// A PD works: an MR registers in it.
void pd_works(Env &e, Slot &s, ibv_pd *pd)
{
	ibv_mr *mr = ibv_reg_mr(pd, e.mem[0], 4096, IBV_ACCESS_LOCAL_WRITE);

	SCHECK(s, mr, "an MR in the PD: %s", strerror(errno));
	if (mr)
		SCHECK(s, ibv_dereg_mr(mr) == 0, "dereg the PD's MR");
}

void check_open_device(Env &e, Slot &s, bool)
{
	ibv_pd *pd = ibv_alloc_pd(s.ctx);

	SCHECK(s, pd, "a PD in the new context: %s", strerror(errno));
	if (pd) {
		pd_works(e, s, pd);
		SCHECK(s, ibv_dealloc_pd(pd) == 0, "dealloc the PD");
	}
}

void undo_open_device(Env &, Slot &s)
{
	if (s.ctx)
		SCHECK(s, ibv_close_device(s.ctx) == 0, "close the context");
	s.ctx = nullptr;
}

int call_alloc_pd(Env &e, Slot &s)
{
	errno = 0;
	s.pd = ibv_alloc_pd(e.ctx);
	return ptr_result(s.pd);
}

void check_pd(Env &e, Slot &s, bool)
{
	pd_works(e, s, s.pd);
}

void undo_pd(Env &, Slot &s)
{
	if (s.pd && !s.gone)
		SCHECK(s, ibv_dealloc_pd(s.pd) == 0, "dealloc PD");
	s.pd = nullptr;
}

bool prep_pd(Env &e, Slot &s)
{
	s.pd = ibv_alloc_pd(e.ctx);
	return s.pd;
}

int call_dealloc_pd(Env &, Slot &s)
{
	int ret = ibv_dealloc_pd(s.pd);

	if (!ret)
		s.pd = nullptr;
	return int_result(ret);
}

// A destroy that failed left the object as it was (unless it took it
// away all the same: s.gone, which the census reported).
void failed_pd(Env &e, Slot &s, int)
{
	if (!s.gone)
		pd_works(e, s, s.pd);
}

int call_import_pd(Env &e, Slot &s)
{
	errno = 0;
	s.pd = ibv_import_pd(e.ctx, e.p.b.pd->handle);
	return ptr_result(s.pd);
}

void check_import_pd(Env &e, Slot &s, bool)
{
	SCHECK(s, s.pd->handle == e.p.b.pd->handle && s.pd->context == e.ctx,
	       "imported PD: handle %u context %p, expected %u %p",
	       s.pd->handle, s.pd->context, e.p.b.pd->handle, e.ctx);
}

void undo_import_pd(Env &, Slot &s)
{
	if (s.pd)
		ibv_unimport_pd(s.pd);
	s.pd = nullptr;
}

// ---- sweeps: memory regions -----------------------------------------------

enum MrKind { kPinned, kIova, kOdp, kOdpChunked, kImplicit };

// A new MR of b's PD of kind @kind (with kRw access), not faulted in.
ibv_mr *new_mr(Env &e, int kind)
{
	ibv_pd *pd = e.p.b.pd;

	switch (kind) {
	case kPinned:
		return ibv_reg_mr(pd, e.mem[0], kMemLen, kRw);
	case kIova:
		return ibv_reg_mr_iova(pd, e.mem[0], kMemLen, kIovaBase, kRw);
	case kOdp:
		forget(e.odp, kOdpLen);
		return ibv_reg_mr(pd, e.odp, kOdpLen,
				  kRw | IBV_ACCESS_ON_DEMAND);
	case kOdpChunked:
		return ibv_reg_mr(pd, e.big, kChunkedLen,
				  kRw | IBV_ACCESS_ON_DEMAND);
	default:
		forget(e.odp, kOdpLen);
		return ibv_reg_mr(pd, nullptr, SIZE_MAX,
				  kRw | IBV_ACCESS_ON_DEMAND);
	}
}

// Where a WRITE into an MR of kind @kind lands, and the address it names.
struct MrTarget {
	uint8_t *m;
	uint64_t raddr;
};

MrTarget mr_target(const Env &e, int kind)
{
	switch (kind) {
	case kPinned:
		return { e.mem[0] + 4096, uintptr_t(e.mem[0] + 4096) };
	case kIova:
		return { e.mem[0] + 4096, kIovaBase + 4096 };
	case kOdpChunked: // in the second chunk
		return { e.big + (20 << 20), uintptr_t(e.big + (20 << 20)) };
	default:
		return { e.odp + 8192, uintptr_t(e.odp + 8192) };
	}
}

// Can the device register ODP MRs of kind @kind that RC writes to? If
// not, the sweep says it is skipped.
bool odp_usable(const Env &e, const Slot &s, int kind)
{
	bool ok = kind == kImplicit ? e.implicit_ok : e.odp_ok;

	if (!ok)
		printf("%s: skipped: the device has no %sODP for RC WRITE\n",
		       s.name, kind == kImplicit ? "implicit " : "");
	return ok;
}

bool setup_odp(Env &e, Slot &s)
{
	return odp_usable(e, s, s.arg);
}

int call_reg_mr(Env &e, Slot &s)
{
	errno = 0;
	s.mr = new_mr(e, s.arg);
	return ptr_result(s.mr);
}

void mr_works(Env &e, Slot &s, ibv_mr *mr)
{
	MrTarget t = mr_target(e, s.arg);

	write_lands(e, s, t.m, t.raddr, mr->rkey, "the MR");
}

void check_mr(Env &e, Slot &s, bool)
{
	mr_works(e, s, s.mr);
}

void undo_mr(Env &, Slot &s)
{
	if (s.mr && !s.gone)
		SCHECK(s, ibv_dereg_mr(s.mr) == 0, "dereg MR");
	s.mr = nullptr;
}

bool prep_mr(Env &e, Slot &s)
{
	s.mr = new_mr(e, s.arg);
	CHECK(s.mr, "%s: reg MR: %s", s.name, strerror(errno));
	return s.mr;
}

int call_dereg_mr(Env &, Slot &s)
{
	int ret = ibv_dereg_mr(s.mr);

	if (!ret)
		s.mr = nullptr;
	return int_result(ret);
}

void failed_mr(Env &e, Slot &s, int)
{
	if (!s.gone)
		mr_works(e, s, s.mr);
}

// A null MR of a's PD (ibv_alloc_null_mr).
int call_alloc_null_mr(Env &e, Slot &s)
{
	errno = 0;
	s.mr = ibv_alloc_null_mr(e.p.a.pd);
	return ptr_result(s.mr);
}

// It works: a WRITE out of it carries zeroes into b's probe bytes (that
// its key is no rkey, sroce-xfer's null_remote shows).
void check_null_mr(Env &e, Slot &s, bool)
{
	uint8_t *m = &e.p.b.buf[kProbe];
	ibv_wc wc{};

	memset(m, 0xee, 4096);
	SCHECK(s, post_send(e.p.a, IBV_WR_RDMA_WRITE, kSrc, 4096, kProbeId,
			    uintptr_t(m), e.p.b.mr->rkey, IBV_SEND_SIGNALED,
			    s.mr->lkey) == 0, "post a WRITE from the null MR");
	if (!wait_wc(e, e.p.a.cq, wc)) {
		SCHECK(s, false, "no completion of the WRITE from the null MR");
		reconnect(e);
		return;
	}
	SCHECK(s, wc.status == IBV_WC_SUCCESS &&
			  std::count(m, m + 4096, uint8_t(0)) == 4096,
	       "WRITE from the null MR: %s, not 4096 zeroes",
	       ibv_wc_status_str(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		reconnect(e);
}

enum Rereg { kTrans, kAccess, kPd };

// A fresh MR over mem[0]: read-only for a change of access, in pd2 for a
// change of PD.
bool prep_rereg(Env &e, Slot &s)
{
	ibv_pd *pd = s.arg == kPd ? e.pd2 : e.p.b.pd;
	int access = s.arg == kAccess ? IBV_ACCESS_REMOTE_READ : kRw;

	s.mr = ibv_reg_mr(pd, e.mem[0], kMemLen, access);
	CHECK(s.mr, "%s: reg MR: %s", s.name, strerror(errno));
	if (s.mr)
		s.was = seen(s.mr);
	return s.mr;
}

int call_rereg(Env &e, Slot &s)
{
	errno = 0;
	switch (s.arg) {
	case kTrans:
		return int_result(ibv_rereg_mr(s.mr,
					       IBV_REREG_MR_CHANGE_TRANSLATION,
					       nullptr, e.mem[1], kMemLen, 0));
	case kAccess:
		return int_result(ibv_rereg_mr(s.mr, IBV_REREG_MR_CHANGE_ACCESS,
					       nullptr, nullptr, 0, kRw));
	default:
		return int_result(ibv_rereg_mr(s.mr, IBV_REREG_MR_CHANGE_PD,
					       e.p.b.pd, nullptr, 0, 0));
	}
}

// After a failed rereg the MR is the one it was: same keys, range and PD
// to the application, and the kernel still translates, grants and
// refuses as before. Or, the rereg failing with EFAULT, the kernel made
// the whole change (kMadeThenEfault), never a part of it.
void failed_rereg(Env &e, Slot &s, int err)
{
	uint8_t *old = e.mem[0] + 4096;
	const char *what = s.arg == kAccess ? "read-only after a failed rereg" :
			   "still in the other PD after a failed rereg";

	SCHECK(s, seen(s.mr) == s.was, "the failed rereg changed the "
	       "MR's keys, address, length or PD");
	if (s.arg == kTrans) {
		uint8_t *m = e.mem[1] + 4096;
		bool kept, moved = false;

		write_key(e, old, uintptr_t(old), s.mr->rkey, &kept);
		if (!kept)
			write_key(e, m, uintptr_t(m), s.mr->rkey, &moved);
		if (moved && err == EFAULT) {
			s.notes[kMadeThenEfault]++;
			return;
		}
		SCHECK(s, kept, "the old range after a failed rereg: WRITE "
		       "through rkey 0x%x did not land", s.mr->rkey);
		SCHECK(s, !moved, "the rereg failed (%s), yet the MR "
		       "translates the new range: the kernel made the change",
		       err_name(err));
		return;
	}
	if (err == EFAULT && write_made(e, s, old, s.mr->rkey)) {
		s.notes[kMadeThenEfault]++;
		return;
	}
	write_refused(e, s, old, s.mr->rkey, what);
	if (s.arg == kAccess) {
		ibv_wc_status st = pair_rdma(e, IBV_WR_RDMA_READ,
					     uintptr_t(old), s.mr->rkey, 4096);
		SCHECK(s, st == IBV_WC_SUCCESS, "READ after a failed rereg: "
		       "%s", ibv_wc_status_str(st));
	}
}

void check_rereg(Env &e, Slot &s, bool)
{
	uint8_t *m = (s.arg == kTrans ? e.mem[1] : e.mem[0]) + 4096;

	SCHECK(s, s.arg != kTrans || s.mr->addr == e.mem[1],
	       "the MR's address after CHANGE_TRANSLATION: %p", s.mr->addr);
	SCHECK(s, s.arg != kPd || s.mr->pd == e.p.b.pd,
	       "the MR's PD after CHANGE_PD");
	write_lands(e, s, m, uintptr_t(m), s.mr->rkey, "after the rereg");
}

int call_advise(Env &e, Slot &s)
{
	ibv_sge sge = { uintptr_t(e.odp), uint32_t(kOdpLen), s.mr->lkey };

	return int_result(ibv_advise_mr(e.p.b.pd,
					IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
}

void check_advise(Env &e, Slot &s, bool)
{
	size_t in = resident(e.odp, kOdpLen), all = kOdpLen / page_size();

	SCHECK(s, in == all, "%zu of %zu pages present after the prefetch",
	       in, all);
	mr_works(e, s, s.mr);
}

void failed_advise(Env &e, Slot &s, int)
{
	mr_works(e, s, s.mr);
}

int call_import_mr(Env &e, Slot &s)
{
	errno = 0;
	s.mr = ibv_import_mr(e.p.b.pd, e.p.b.mr->handle);
	return ptr_result(s.mr);
}

void check_import_mr(Env &e, Slot &s, bool)
{
	uint8_t *m = &e.p.b.buf[kDst + 8192];

	SCHECK(s, s.mr->lkey == e.p.b.mr->lkey && s.mr->rkey == e.p.b.mr->rkey,
	       "imported keys 0x%x 0x%x, expected 0x%x 0x%x", s.mr->lkey,
	       s.mr->rkey, e.p.b.mr->lkey, e.p.b.mr->rkey);
	write_lands(e, s, m, uintptr_t(m), s.mr->rkey, "the imported MR");
}

void undo_import_mr(Env &, Slot &s)
{
	if (s.mr)
		ibv_unimport_mr(s.mr);
	s.mr = nullptr;
}

// ---- sweeps: CQs ----------------------------------------------------------

int call_create_cq(Env &e, Slot &s)
{
	errno = 0;
	s.cq = ibv_create_cq(e.ctx, 16, nullptr, nullptr, 0);
	return ptr_result(s.cq);
}

int call_create_cq_ex(Env &e, Slot &s)
{
	ibv_cq_init_attr_ex a{};

	a.cqe = 16;
	a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
	errno = 0;
	ibv_cq_ex *cq = ibv_create_cq_ex(e.ctx, &a);
	s.cq = cq ? ibv_cq_ex_to_cq(cq) : nullptr;
	return ptr_result(s.cq);
}

void check_cq(Env &e, Slot &s, bool)
{
	cq_works(e, s, s.cq);
}

void undo_cq(Env &, Slot &s)
{
	if (s.cq && !s.gone)
		SCHECK(s, ibv_destroy_cq(s.cq) == 0, "destroy CQ");
	s.cq = nullptr;
}

bool prep_cq(Env &e, Slot &s)
{
	s.cq = ibv_create_cq(e.ctx, 16, nullptr, nullptr, 0);
	CHECK(s.cq, "%s: create CQ: %s", s.name, strerror(errno));
	return s.cq;
}

int call_resize_cq(Env &, Slot &s)
{
	return int_result(ibv_resize_cq(s.cq, 300));
}

void check_resize_cq(Env &e, Slot &s, bool)
{
	SCHECK(s, s.cq->cqe >= 300, "cqe %d after resizing to 300",
	       s.cq->cqe);
	cq_works(e, s, s.cq);
}

// A CQ whose resize or destroy failed still polls and completes.
void failed_cq(Env &e, Slot &s, int)
{
	ibv_wc wc;

	if (s.gone)
		return;
	SCHECK(s, ibv_poll_cq(s.cq, 1, &wc) == 0, "poll after the failed "
	       "call: the CQ lost its ring");
	cq_works(e, s, s.cq);
}

int call_destroy_cq(Env &, Slot &s)
{
	int ret = ibv_destroy_cq(s.cq);

	if (!ret)
		s.cq = nullptr;
	return int_result(ret);
}

int call_poll_cq(Env &e, Slot &)
{
	ibv_wc wc;

	return ibv_poll_cq(e.scq, 1, &wc) >= 0 ? 0 : kNoErrno;
}

int call_req_notify_cq(Env &e, Slot &)
{
	return int_result(ibv_req_notify_cq(e.scq, 0));
}

// ---- sweeps: QPs ----------------------------------------------------------

enum QpKind { kRc, kRcEx, kRcSrq, kUc, kUd, kXrcSend, kXrcRecv };

// The attributes of a new QP of kind @kind: a's PD, on scq.
ibv_qp_init_attr_ex qp_attr(const Env &e, const Slot &s, int kind)
{
	ibv_qp_init_attr_ex ia{};

	ia.send_cq = ia.recv_cq = e.scq;
	ia.cap = { 16, 16, 1, 1, 0 };
	ia.qp_type = kind == kUc ? IBV_QPT_UC : kind == kUd ? IBV_QPT_UD :
		     kind == kXrcSend ? IBV_QPT_XRC_SEND :
		     kind == kXrcRecv ? IBV_QPT_XRC_RECV : IBV_QPT_RC;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = e.p.a.pd;
	if (kind == kRcSrq || kind == kXrcSend) {
		ia.srq = kind == kRcSrq ? s.srq : nullptr;
		ia.cap.max_recv_wr = ia.cap.max_recv_sge = 0;
	}
	if (kind == kXrcRecv) {
		ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		ia.xrcd = e.xrcd;
	}
	return ia;
}

// A new QP: ibv_create_qp, or ibv_create_qp_ex for the XRC halves and
// kRcEx (ib_uverbs' other command).
ibv_qp *new_qp(Env &e, Slot &s, int kind)
{
	ibv_qp_init_attr_ex ia = qp_attr(e, s, kind);
	ibv_qp_init_attr a{};

	if (kind == kRcEx || kind == kXrcSend || kind == kXrcRecv)
		return ibv_create_qp_ex(e.ctx, &ia);
	a.send_cq = ia.send_cq;
	a.recv_cq = ia.recv_cq;
	a.srq = ia.srq;
	a.cap = ia.cap;
	a.qp_type = ia.qp_type;
	return ibv_create_qp(ia.pd, &a);
}

bool setup_qp(Env &e, Slot &s)
{
	ibv_srq_init_attr a{};

	if (s.arg != kRcSrq)
		return true;
	a.attr = { 16, 1, 0 };
	s.srq = ibv_create_srq(e.p.a.pd, &a);
	CHECK(s.srq, "%s: create SRQ: %s", s.name, strerror(errno));
	return s.srq;
}

void teardown_qp(Env &, Slot &s)
{
	if (s.srq)
		CHECK(ibv_destroy_srq(s.srq) == 0, "%s: destroy SRQ", s.name);
	s.srq = nullptr;
}

int call_create_qp(Env &e, Slot &s)
{
	errno = 0;
	s.qp = new_qp(e, s, s.arg);
	return ptr_result(s.qp);
}

void check_qp(Env &e, Slot &s, bool)
{
	qp_works(e, s, s.qp);
}

void undo_qp(Env &, Slot &s)
{
	if (s.qp && !s.gone)
		SCHECK(s, ibv_destroy_qp(s.qp) == 0, "destroy QP");
	s.qp = nullptr;
}

// A new RC QP, brought up to the state before s.arg's (RESET to destroy).
bool prep_qp(Env &e, Slot &s)
{
	int ret = 0;

	s.qp = new_qp(e, s, kRc);
	CHECK(s.qp, "%s: create QP: %s", s.name, strerror(errno));
	for (int to = IBV_QPS_INIT; s.qp && !ret && to < s.arg; to++)
		ret = qp_step(e, s.qp, ibv_qp_state(to), s.qp->qp_num);
	CHECK(!ret, "%s: QP to state %d: %s", s.name, s.arg - 1,
	      strerror(ret));
	return s.qp && !ret;
}

int call_modify_qp(Env &e, Slot &s)
{
	return int_result(qp_step(e, s.qp, ibv_qp_state(s.arg),
				  s.qp->qp_num));
}

void check_modify_qp(Env &e, Slot &s, bool)
{
	ibv_qp_state st = qp_state(s.qp);

	SCHECK(s, int(st) == s.arg, "state %d after the modify, expected %d",
	       st, s.arg);
	if (st == IBV_QPS_RTS)
		rc_self_write(e, s, s.qp);
}

void failed_modify_qp(Env &e, Slot &s, int)
{
	ibv_qp_state st = qp_state(s.qp);

	SCHECK(s, int(st) == s.arg - 1, "state %d after the failed modify, "
	       "expected %d", st, s.arg - 1);
	if (int(st) == s.arg - 1)
		qp_works(e, s, s.qp);
}

int call_destroy_qp(Env &, Slot &s)
{
	int ret = ibv_destroy_qp(s.qp);

	if (!ret)
		s.qp = nullptr;
	return int_result(ret);
}

void failed_destroy_qp(Env &e, Slot &s, int)
{
	if (!s.gone)
		qp_works(e, s, s.qp);
}

// ---- sweeps: SRQs and XRC domains -----------------------------------------

// A basic SRQ of a's PD, or (@xrcd) an XRC SRQ of that domain on scq.
ibv_srq *new_srq(Env &e, ibv_xrcd *xrcd)
{
	ibv_srq_init_attr_ex a{};

	a.attr = { 16, 1, 0 };
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_BASIC;
	a.pd = e.p.a.pd;
	if (xrcd) {
		a.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		a.srq_type = IBV_SRQT_XRC;
		a.xrcd = xrcd;
		a.cq = e.scq;
		return ibv_create_srq_ex(e.ctx, &a);
	}
	ibv_srq_init_attr b{};
	b.attr = a.attr;
	return ibv_create_srq(e.p.a.pd, &b);
}

// An SRQ works: it answers queries, takes a receive WR, and an XRC SRQ
// has a number.
void srq_works(Env &e, Slot &s, ibv_srq *srq, bool xrc)
{
	ibv_srq_attr a{};
	ibv_sge sge = { remote(e.p.a, kScratch), 64, e.p.a.mr->lkey };
	ibv_recv_wr wr{}, *bad;
	uint32_t num = 0;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	SCHECK(s, ibv_query_srq(srq, &a) == 0 && a.max_wr >= 16,
	       "query SRQ: max_wr %u", a.max_wr);
	SCHECK(s, ibv_post_srq_recv(srq, &wr, &bad) == 0, "post to SRQ");
	if (xrc)
		SCHECK(s, ibv_get_srq_num(srq, &num) == 0 && num,
		       "XRC SRQ number %u", num);
}

int call_create_srq(Env &e, Slot &s)
{
	errno = 0;
	s.srq = new_srq(e, s.arg ? e.xrcd : nullptr);
	return ptr_result(s.srq);
}

void check_srq(Env &e, Slot &s, bool)
{
	srq_works(e, s, s.srq, s.arg);
}

void undo_srq(Env &, Slot &s)
{
	if (s.srq && !s.gone)
		SCHECK(s, ibv_destroy_srq(s.srq) == 0, "destroy SRQ");
	s.srq = nullptr;
}

bool prep_srq(Env &e, Slot &s)
{
	s.srq = new_srq(e, nullptr);
	CHECK(s.srq, "%s: create SRQ: %s", s.name, strerror(errno));
	return s.srq;
}

int call_destroy_srq(Env &, Slot &s)
{
	int ret = ibv_destroy_srq(s.srq);

	if (!ret)
		s.srq = nullptr;
	return int_result(ret);
}

void failed_srq(Env &e, Slot &s, int)
{
	if (!s.gone)
		srq_works(e, s, s.srq, false);
}

ibv_xrcd *new_xrcd(Env &e)
{
	ibv_xrcd_init_attr a{};

	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = -1;
	a.oflags = O_CREAT;
	return ibv_open_xrcd(e.ctx, &a);
}

// An XRC domain works: an XRC SRQ is made in it.
void xrcd_works(Env &e, Slot &s, ibv_xrcd *xrcd)
{
	ibv_srq *srq = new_srq(e, xrcd);

	SCHECK(s, srq, "an XRC SRQ in the domain: %s", strerror(errno));
	if (srq)
		SCHECK(s, ibv_destroy_srq(srq) == 0, "destroy the XRC SRQ");
}

int call_open_xrcd(Env &e, Slot &s)
{
	errno = 0;
	s.xrcd = new_xrcd(e);
	return ptr_result(s.xrcd);
}

void check_xrcd(Env &e, Slot &s, bool)
{
	xrcd_works(e, s, s.xrcd);
}

void undo_xrcd(Env &, Slot &s)
{
	if (s.xrcd)
		SCHECK(s, ibv_close_xrcd(s.xrcd) == 0, "close XRCD");
	s.xrcd = nullptr;
}

bool prep_xrcd(Env &e, Slot &s)
{
	s.xrcd = new_xrcd(e);
	CHECK(s.xrcd, "%s: open XRCD: %s", s.name, strerror(errno));
	return s.xrcd;
}

int call_close_xrcd(Env &, Slot &s)
{
	int ret = ibv_close_xrcd(s.xrcd);

	if (!ret)
		s.xrcd = nullptr;
	return int_result(ret);
}

void failed_xrcd(Env &e, Slot &s, int)
{
	xrcd_works(e, s, s.xrcd);
}

// ---- sweeps: memory windows -----------------------------------------------

// Post, on b's QP, the bind of window @mw (key @key) to b.buf[kWin..] for
// remote write: ibv_bind_mw for type 1, a BIND_MW WR for type 2.
// Return: its errno; s.bad_is_wr for a WR refused.
int post_bind(Env &e, Slot &s, ibv_mw *mw, uint32_t key)
{
	ibv_mw_bind_info info = { e.win, remote(e.p.b, kWin), 4096,
				  IBV_ACCESS_REMOTE_WRITE };

	if (mw->type == IBV_MW_TYPE_1) {
		ibv_mw_bind b{};
		b.wr_id = kWrId;
		b.send_flags = IBV_SEND_SIGNALED;
		b.bind_info = info;
		return int_result(ibv_bind_mw(e.p.b.qp, mw, &b));
	}
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = kWrId;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw = { mw, key, info };
	int ret = ibv_post_send(e.p.b.qp, &wr, &bad);
	s.bad_is_wr = bad == &wr;
	return int_result(ret);
}

// The bind of @mw completed: its new key grants the WRITE.
bool bind_done(Env &e, Slot &s, ibv_mw *mw, uint32_t key)
{
	ibv_wc wc{};
	bool got = wait_wc(e, e.p.b.cq, wc);

	SCHECK(s, got && wc.wr_id == kWrId && wc.status == IBV_WC_SUCCESS,
	       "bind: %s", got ? ibv_wc_status_str(wc.status) :
				 "no completion");
	if (!got || wc.status != IBV_WC_SUCCESS) {
		reconnect(e);
		return false;
	}
	mw->rkey = key; // the application's to keep for a type 2 window
	write_lands(e, s, &e.p.b.buf[kWin], remote(e.p.b, kWin), mw->rkey,
		    "the window");
	return true;
}

// A window works: bound, it grants access (and it stays bound).
void mw_works(Env &e, Slot &s, ibv_mw *mw)
{
	uint32_t key = ibv_inc_rkey(mw->rkey);

	SCHECK(s, post_bind(e, s, mw, key) == 0, "post the bind");
	bind_done(e, s, mw, key);
}

int call_alloc_mw(Env &e, Slot &s)
{
	errno = 0;
	s.mw = ibv_alloc_mw(e.p.b.pd, ibv_mw_type(s.arg));
	return ptr_result(s.mw);
}

void check_mw(Env &e, Slot &s, bool)
{
	mw_works(e, s, s.mw);
}

void undo_mw(Env &, Slot &s)
{
	if (s.mw && !s.gone)
		SCHECK(s, ibv_dealloc_mw(s.mw) == 0, "dealloc MW");
	s.mw = nullptr;
}

// A window of type s.arg, and for the dealloc sweep bound (a dealloc
// unbinds).
bool prep_mw(Env &e, Slot &s, bool bound)
{
	s.mw = ibv_alloc_mw(e.p.b.pd, ibv_mw_type(s.arg));
	CHECK(s.mw, "%s: alloc MW: %s", s.name, strerror(errno));
	if (s.mw && bound)
		mw_works(e, s, s.mw);
	s.rkey = s.mw ? s.mw->rkey : 0;
	return s.mw;
}

bool prep_mw_bound(Env &e, Slot &s)
{
	return prep_mw(e, s, true);
}

bool prep_mw_unbound(Env &e, Slot &s)
{
	return prep_mw(e, s, false);
}

int call_dealloc_mw(Env &, Slot &s)
{
	int ret = ibv_dealloc_mw(s.mw);

	if (!ret)
		s.mw = nullptr;
	return int_result(ret);
}

void failed_dealloc_mw(Env &e, Slot &s, int)
{
	if (!s.gone)
		write_lands(e, s, &e.p.b.buf[kWin], remote(e.p.b, kWin),
			    s.mw->rkey, "the window after a failed dealloc");
}

int call_bind(Env &e, Slot &s)
{
	return post_bind(e, s, s.mw, ibv_inc_rkey(s.rkey));
}

// The bind completes, well (the key grants access) or, with a fault
// injected, with MW_BIND_ERR (the window keeps its old key).
void check_bind(Env &e, Slot &s, bool injected)
{
	ibv_wc wc{};
	bool got = wait_wc(e, e.p.b.cq, wc);

	s.hangs += !got;
	SCHECK(s, got && wc.wr_id == kWrId, "bind: %s",
	       got ? "completion of another WR" : "no completion");
	if (!got || wc.wr_id != kWrId)
		return;
	if (wc.status == IBV_WC_SUCCESS) {
		s.mw->rkey = ibv_inc_rkey(s.rkey);
		write_lands(e, s, &e.p.b.buf[kWin], remote(e.p.b, kWin),
			    s.mw->rkey, "the bound window");
		return;
	}
	SCHECK(s, injected && wc.status == IBV_WC_MW_BIND_ERR,
	       "bind: %s%s", ibv_wc_status_str(wc.status),
	       injected ? "" : " with no fault injected");
	s.notes[std::string(ibv_wc_status_str(wc.status)) + " completions"]++;
	s.mw->rkey = s.rkey;
}

// After a failed post, a probe WR (an 8-byte WRITE to the peer) completes,
// and the failed WR does not: it was not posted.
void no_stray(Env &e, Slot &s, Side &side, const Side &peer)
{
	ibv_sge sge = { remote(side, kProbe), 8, side.mr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, IBV_WR_RDMA_WRITE, kProbeId), *bad;
	ibv_wc wc{};

	wr.wr.rdma = { remote(peer, kProbe), peer.mr->rkey };
	SCHECK(s, ibv_post_send(side.qp, &wr, &bad) == 0, "post the probe "
	       "after a failed post");
	while (wait_wc(e, side.cq, wc)) {
		if (wc.wr_id == kProbeId)
			return;
		SCHECK(s, false, "the post failed, yet its WR was posted: it "
		       "completed (wr_id 0x%llx, %s)",
		       (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
	}
	SCHECK(s, false, "no completion of the probe after a failed post");
}

void failed_bind(Env &e, Slot &s, int)
{
	SCHECK(s, s.mw->rkey == s.rkey, "the failed bind changed the "
	       "window's key 0x%x to 0x%x", s.rkey, s.mw->rkey);
	SCHECK(s, s.mw->type == IBV_MW_TYPE_1 || s.bad_is_wr,
	       "*bad_wr is not the WR that failed");
	no_stray(e, s, e.p.b, e.p.a);
}

void undo_bind(Env &e, Slot &s)
{
	undo_mw(e, s);
	reconnect(e);
}

// ---- sweeps: address handles and multicast --------------------------------

int call_create_ah(Env &e, Slot &s)
{
	ibv_ah_attr a = self_av(e);

	errno = 0;
	s.ah = ibv_create_ah(e.p.a.pd, &a);
	return ptr_result(s.ah);
}

void check_ah(Env &e, Slot &s, bool)
{
	ud_send(e, s, e.ud, e.ud, e.scq, s.ah, e.ud->qp_num, "through the AH");
}

void undo_ah(Env &, Slot &s)
{
	if (s.ah && !s.gone)
		SCHECK(s, ibv_destroy_ah(s.ah) == 0, "destroy AH");
	s.ah = nullptr;
}

bool prep_ah(Env &e, Slot &s)
{
	ibv_ah_attr a = self_av(e);

	s.ah = ibv_create_ah(e.p.a.pd, &a);
	CHECK(s.ah, "%s: create AH: %s", s.name, strerror(errno));
	return s.ah;
}

int call_destroy_ah(Env &, Slot &s)
{
	int ret = ibv_destroy_ah(s.ah);

	if (!ret)
		s.ah = nullptr;
	return int_result(ret);
}

void failed_ah(Env &e, Slot &s, int)
{
	if (!s.gone)
		check_ah(e, s, false);
}

// A member UD QP, the group 239.1.2.4, and an AH of a's PD to it.
bool setup_mcast(Env &e, Slot &s)
{
	ibv_ah_attr a = self_av(e);

	s.mgid.raw[10] = s.mgid.raw[11] = 0xff;
	s.mgid.raw[12] = 239;
	s.mgid.raw[13] = 1;
	s.mgid.raw[14] = 2;
	s.mgid.raw[15] = 4;
	a.grh.dgid = s.mgid;
	a.grh.hop_limit = 1;
	s.qp = ud_qp(e.p.a, e.scq);
	s.ah = ibv_create_ah(e.p.a.pd, &a);
	CHECK(s.qp && s.ah, "%s: UD QP and multicast AH: %s", s.name,
	      strerror(errno));
	return s.qp && s.ah;
}

void teardown_mcast(Env &, Slot &s)
{
	if (s.ah)
		CHECK(ibv_destroy_ah(s.ah) == 0, "%s: destroy AH", s.name);
	if (s.qp)
		CHECK(ibv_destroy_qp(s.qp) == 0, "%s: destroy QP", s.name);
}

// The member receives what is sent to the group.
void mcast_works(Env &e, Slot &s)
{
	ud_send(e, s, e.ud, s.qp, e.scq, s.ah, 0xffffff, "to the group");
}

int call_attach(Env &, Slot &s)
{
	int ret = ibv_attach_mcast(s.qp, &s.mgid, 0);

	s.attached = !ret;
	return int_result(ret);
}

void check_attach(Env &e, Slot &s, bool)
{
	mcast_works(e, s);
}

// A failed attach attached nothing: detaching is EINVAL.
void failed_attach(Env &, Slot &s, int)
{
	int ret = ibv_detach_mcast(s.qp, &s.mgid, 0);

	SCHECK(s, ret == EINVAL, "detach after the failed attach: %s, "
	       "expected EINVAL (not attached)", strerror(ret));
}

void undo_attach(Env &, Slot &s)
{
	if (s.attached)
		SCHECK(s, ibv_detach_mcast(s.qp, &s.mgid, 0) == 0, "detach");
	s.attached = false;
}

bool prep_attach(Env &, Slot &s)
{
	int ret = ibv_attach_mcast(s.qp, &s.mgid, 0);

	CHECK(ret == 0, "%s: attach: %s", s.name, strerror(ret));
	s.attached = !ret;
	return s.attached;
}

int call_detach(Env &, Slot &s)
{
	int ret = ibv_detach_mcast(s.qp, &s.mgid, 0);

	s.attached = ret != 0;
	return int_result(ret);
}

void failed_detach(Env &e, Slot &s, int)
{
	mcast_works(e, s);
}

// ---- sweeps: posting work -------------------------------------------------

struct PostOp {
	ibv_wr_opcode op;
	uint32_t len;	// three packets at MTU 1024, or an atomic's 8
};

const PostOp kPostOps[] = {
	{ IBV_WR_RDMA_WRITE, 3000 },
	{ IBV_WR_RDMA_READ, 3000 },
	{ IBV_WR_SEND, 3000 },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, 8 },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, 8 },
};
enum { kWrite, kRead, kSend, kCmpSwp, kFetchAdd };
const uint64_t kOld = 0x1122334455667788ULL, kNew = 0x0badc0ffee0ddf00ULL;

// Posts land in b's buffer through b's MR.
bool setup_post(Env &e, Slot &s)
{
	s.tgt = &e.p.b.buf[kDst];
	s.tgt_rkey = e.p.b.mr->rkey;
	return true;
}

// WRITEs land in ODP memory (explicit, or implicit) through an ODP MR:
// the responder faults the pages in, in the doorbell's system call.
bool setup_post_odp(Env &e, Slot &s, int kind)
{
	if (!odp_usable(e, s, kind))
		return false;
	s.mr = new_mr(e, kind);
	CHECK(s.mr, "%s: reg ODP MR: %s", s.name, strerror(errno));
	s.tgt = e.odp + 4096;
	s.tgt_rkey = s.mr ? s.mr->rkey : 0;
	return s.mr;
}

bool setup_post_explicit(Env &e, Slot &s)
{
	return setup_post_odp(e, s, kOdp);
}

bool setup_post_implicit(Env &e, Slot &s)
{
	return setup_post_odp(e, s, kImplicit);
}

void teardown_post(Env &e, Slot &s)
{
	undo_mr(e, s);
}

// The bytes each side starts with; b's receive for a SEND.
bool prep_post(Env &e, Slot &s)
{
	const PostOp &o = kPostOps[s.arg];

	fill(e.p.a, kSrc, o.len, next_seed());
	if (s.mr)
		forget(e.odp, kOdpLen);
	else
		memset(s.tgt, 0, o.len);
	if (s.arg == kRead)
		fill(e.p.b, kDst, o.len, next_seed());
	if (s.arg == kRead || s.arg >= kCmpSwp)
		memset(&e.p.a.buf[kSrc], 0, o.len);
	if (s.arg >= kCmpSwp)
		memcpy(s.tgt, &kOld, 8);
	if (s.arg == kSend)
		return post_recv(e.p.b, kRecv, o.len, kRecvId) == 0;
	return true;
}

int call_post(Env &e, Slot &s)
{
	const PostOp &o = kPostOps[s.arg];
	ibv_sge sge = { remote(e.p.a, kSrc), o.len, e.p.a.mr->lkey };
	ibv_send_wr wr = one_sge_wr(&sge, o.op, kWrId), *bad = nullptr;

	if (s.arg >= kCmpSwp)
		wr.wr.atomic = { uintptr_t(s.tgt),
				 s.arg == kCmpSwp ? kOld : 1, kNew,
				 s.tgt_rkey };
	else
		wr.wr.rdma = { uintptr_t(s.tgt), s.tgt_rkey };
	int ret = ibv_post_send(e.p.a.qp, &wr, &bad);
	s.bad_is_wr = bad == &wr;
	return int_result(ret);
}

// The bytes a completed post moved are where they belong.
void post_landed(Env &e, Slot &s)
{
	const PostOp &o = kPostOps[s.arg];
	const uint8_t *src = &e.p.a.buf[kSrc];
	uint64_t old, now;

	memcpy(&old, src, 8);
	memcpy(&now, s.tgt, 8);
	switch (s.arg) {
	case kWrite:
		SCHECK(s, !memcmp(s.tgt, src, o.len), "WRITE: bytes differ");
		break;
	case kRead:
		SCHECK(s, !memcmp(s.tgt, src, o.len), "READ: bytes differ");
		break;
	case kSend: {
		ibv_wc wc{};
		bool got = wait_wc(e, e.p.b.cq, wc);
		SCHECK(s, got && wc.status == IBV_WC_SUCCESS &&
				  wc.byte_len == o.len &&
				  !memcmp(&e.p.b.buf[kRecv], src, o.len),
		       "SEND: the receive: %s, %u bytes, or they differ",
		       got ? ibv_wc_status_str(wc.status) : "none",
		       wc.byte_len);
		break;
	}
	default:
		SCHECK(s, old == kOld && now == (s.arg == kCmpSwp ? kNew :
								     kOld + 1),
		       "atomic: returned 0x%llx, left 0x%llx",
		       (unsigned long long)old, (unsigned long long)now);
	}
}

// The WR completes within the bound: well (its bytes moved) or, with a
// fault injected, in error.
void check_post(Env &e, Slot &s, bool injected)
{
	ibv_wc wc{};

	if (!wait_wc(e, e.p.a.cq, wc)) {
		s.hangs++;
		SCHECK(s, false, "the post returned 0 but the WR did not "
		       "complete within %d s (QP state %d)", 3 * e.scale,
		       qp_state(e.p.a.qp));
		return;
	}
	SCHECK(s, wc.wr_id == kWrId, "completion of wr_id 0x%llx",
	       (unsigned long long)wc.wr_id);
	if (wc.status == IBV_WC_SUCCESS) {
		post_landed(e, s);
		return;
	}
	SCHECK(s, injected, "%s completion with no fault injected",
	       ibv_wc_status_str(wc.status));
	s.notes[std::string(ibv_wc_status_str(wc.status)) + " completions"]++;
}

void failed_post(Env &e, Slot &s, int)
{
	SCHECK(s, s.bad_is_wr, "*bad_wr is not the WR that failed");
	no_stray(e, s, e.p.a, e.p.b);
}

void undo_post(Env &e, Slot &)
{
	reconnect(e);
}

// ---- the sweeps -----------------------------------------------------------

// A verb's sweep: @setup once; then per point @prepare, the armed @call,
// and @check (it succeeded) or @failed (it did not), then @undo; and
// @teardown once. Hooks may be null.
struct Sweep {
	const char *name;
	int arg;				// Slot::arg, the variant
	bool (*setup)(Env &, Slot &);
	bool (*prepare)(Env &, Slot &);
	int (*call)(Env &, Slot &);		// 0 or the errno
	void (*check)(Env &, Slot &, bool injected);
	void (*failed)(Env &, Slot &, int err);
	void (*undo)(Env &, Slot &);
	void (*teardown)(Env &, Slot &);
	bool user_only;	  // may enter no kernel: no point to fail
	bool no_objects;  // makes or frees none: census only at the end
	bool answers_after; // ib_uverbs answers after the change (EFAULT)
	bool xrc_target;    // skips ib_core's create_xrc_qp_user()
};

const Sweep kSweeps[] = {
	{ .name = "open_device", .call = call_open_device,
	  .check = check_open_device, .undo = undo_open_device },
	{ .name = "alloc_pd", .call = call_alloc_pd, .check = check_pd,
	  .undo = undo_pd },
	{ .name = "dealloc_pd", .prepare = prep_pd, .call = call_dealloc_pd,
	  .failed = failed_pd, .undo = undo_pd },
	{ .name = "import_pd", .call = call_import_pd,
	  .check = check_import_pd, .undo = undo_import_pd },
	{ .name = "reg_mr", .arg = kPinned, .call = call_reg_mr,
	  .check = check_mr, .undo = undo_mr },
	{ .name = "reg_mr_iova", .arg = kIova, .call = call_reg_mr,
	  .check = check_mr, .undo = undo_mr },
	{ .name = "reg_mr_odp", .arg = kOdp, .setup = setup_odp,
	  .call = call_reg_mr, .check = check_mr, .undo = undo_mr },
	{ .name = "reg_mr_odp_chunked", .arg = kOdpChunked,
	  .setup = setup_odp, .call = call_reg_mr, .check = check_mr,
	  .undo = undo_mr },
	{ .name = "reg_mr_implicit", .arg = kImplicit, .setup = setup_odp,
	  .call = call_reg_mr, .check = check_mr, .undo = undo_mr },
	{ .name = "dereg_mr", .arg = kPinned, .prepare = prep_mr,
	  .call = call_dereg_mr, .failed = failed_mr, .undo = undo_mr },
	{ .name = "dereg_mr_odp", .arg = kOdp, .setup = setup_odp,
	  .prepare = prep_mr, .call = call_dereg_mr, .failed = failed_mr,
	  .undo = undo_mr },
	{ .name = "rereg_mr_translation", .arg = kTrans,
	  .prepare = prep_rereg, .call = call_rereg, .check = check_rereg,
	  .failed = failed_rereg, .undo = undo_mr },
	{ .name = "rereg_mr_access", .arg = kAccess, .prepare = prep_rereg,
	  .call = call_rereg, .check = check_rereg, .failed = failed_rereg,
	  .undo = undo_mr },
	{ .name = "rereg_mr_pd", .arg = kPd, .prepare = prep_rereg,
	  .call = call_rereg, .check = check_rereg, .failed = failed_rereg,
	  .undo = undo_mr },
	{ .name = "advise_mr", .arg = kOdp, .setup = setup_odp,
	  .prepare = prep_mr, .call = call_advise, .check = check_advise,
	  .failed = failed_advise, .undo = undo_mr },
	{ .name = "advise_mr_implicit", .arg = kImplicit, .setup = setup_odp,
	  .prepare = prep_mr, .call = call_advise, .check = check_advise,
	  .failed = failed_advise, .undo = undo_mr },
	{ .name = "alloc_null_mr", .call = call_alloc_null_mr,
	  .check = check_null_mr, .undo = undo_mr },
	{ .name = "import_mr", .call = call_import_mr,
	  .check = check_import_mr, .undo = undo_import_mr },
	{ .name = "create_cq", .call = call_create_cq, .check = check_cq,
	  .undo = undo_cq },
	{ .name = "create_cq_ex", .call = call_create_cq_ex,
	  .check = check_cq, .undo = undo_cq },
	{ .name = "resize_cq", .prepare = prep_cq, .call = call_resize_cq,
	  .check = check_resize_cq, .failed = failed_cq, .undo = undo_cq },
	{ .name = "destroy_cq", .prepare = prep_cq, .call = call_destroy_cq,
	  .failed = failed_cq, .undo = undo_cq, .answers_after = true },
	{ .name = "poll_cq", .call = call_poll_cq, .user_only = true,
	  .no_objects = true },
	{ .name = "req_notify_cq", .call = call_req_notify_cq,
	  .user_only = true, .no_objects = true },
	{ .name = "create_qp_rc", .arg = kRc, .call = call_create_qp,
	  .check = check_qp, .undo = undo_qp },
	{ .name = "create_qp_ex_rc", .arg = kRcEx, .call = call_create_qp,
	  .check = check_qp, .undo = undo_qp },
	{ .name = "create_qp_rc_srq", .arg = kRcSrq, .setup = setup_qp,
	  .call = call_create_qp, .check = check_qp, .undo = undo_qp,
	  .teardown = teardown_qp },
	{ .name = "create_qp_uc", .arg = kUc, .call = call_create_qp,
	  .check = check_qp, .undo = undo_qp },
	{ .name = "create_qp_ud", .arg = kUd, .call = call_create_qp,
	  .check = check_qp, .undo = undo_qp },
	{ .name = "create_qp_xrc_send", .arg = kXrcSend,
	  .call = call_create_qp, .check = check_qp, .undo = undo_qp },
	{ .name = "create_qp_xrc_recv", .arg = kXrcRecv,
	  .call = call_create_qp, .check = check_qp, .undo = undo_qp,
	  .xrc_target = true },
	{ .name = "modify_qp_init", .arg = IBV_QPS_INIT, .prepare = prep_qp,
	  .call = call_modify_qp, .check = check_modify_qp,
	  .failed = failed_modify_qp, .undo = undo_qp },
	{ .name = "modify_qp_rtr", .arg = IBV_QPS_RTR, .prepare = prep_qp,
	  .call = call_modify_qp, .check = check_modify_qp,
	  .failed = failed_modify_qp, .undo = undo_qp },
	{ .name = "modify_qp_rts", .arg = IBV_QPS_RTS, .prepare = prep_qp,
	  .call = call_modify_qp, .check = check_modify_qp,
	  .failed = failed_modify_qp, .undo = undo_qp },
	{ .name = "destroy_qp", .arg = IBV_QPS_RESET, .prepare = prep_qp,
	  .call = call_destroy_qp, .failed = failed_destroy_qp,
	  .undo = undo_qp, .answers_after = true },
	{ .name = "create_srq", .call = call_create_srq, .check = check_srq,
	  .undo = undo_srq },
	{ .name = "create_srq_xrc", .arg = 1, .call = call_create_srq,
	  .check = check_srq, .undo = undo_srq },
	{ .name = "destroy_srq", .prepare = prep_srq, .call = call_destroy_srq,
	  .failed = failed_srq, .undo = undo_srq, .answers_after = true },
	{ .name = "open_xrcd", .call = call_open_xrcd, .check = check_xrcd,
	  .undo = undo_xrcd },
	{ .name = "close_xrcd", .prepare = prep_xrcd, .call = call_close_xrcd,
	  .failed = failed_xrcd, .undo = undo_xrcd },
	{ .name = "alloc_mw_type1", .arg = IBV_MW_TYPE_1,
	  .call = call_alloc_mw, .check = check_mw, .undo = undo_mw },
	{ .name = "alloc_mw_type2", .arg = IBV_MW_TYPE_2,
	  .call = call_alloc_mw, .check = check_mw, .undo = undo_mw },
	{ .name = "dealloc_mw", .arg = IBV_MW_TYPE_1, .prepare = prep_mw_bound,
	  .call = call_dealloc_mw, .failed = failed_dealloc_mw,
	  .undo = undo_mw },
	{ .name = "bind_mw", .arg = IBV_MW_TYPE_1, .prepare = prep_mw_unbound,
	  .call = call_bind, .check = check_bind, .failed = failed_bind,
	  .undo = undo_bind },
	{ .name = "post_bind_mw_type2", .arg = IBV_MW_TYPE_2,
	  .prepare = prep_mw_unbound, .call = call_bind, .check = check_bind,
	  .failed = failed_bind, .undo = undo_bind },
	{ .name = "create_ah", .call = call_create_ah, .check = check_ah,
	  .undo = undo_ah },
	{ .name = "destroy_ah", .prepare = prep_ah, .call = call_destroy_ah,
	  .failed = failed_ah, .undo = undo_ah },
	{ .name = "attach_mcast", .setup = setup_mcast, .call = call_attach,
	  .check = check_attach, .failed = failed_attach,
	  .undo = undo_attach, .teardown = teardown_mcast },
	{ .name = "detach_mcast", .setup = setup_mcast, .prepare = prep_attach,
	  .call = call_detach, .failed = failed_detach, .undo = undo_attach,
	  .teardown = teardown_mcast },
	{ .name = "post_write", .arg = kWrite, .setup = setup_post,
	  .prepare = prep_post, .call = call_post, .check = check_post,
	  .failed = failed_post, .undo = undo_post, .no_objects = true },
	{ .name = "post_read", .arg = kRead, .setup = setup_post,
	  .prepare = prep_post, .call = call_post, .check = check_post,
	  .failed = failed_post, .undo = undo_post, .no_objects = true },
	{ .name = "post_send", .arg = kSend, .setup = setup_post,
	  .prepare = prep_post, .call = call_post, .check = check_post,
	  .failed = failed_post, .undo = undo_post, .no_objects = true },
	{ .name = "post_cmp_swp", .arg = kCmpSwp, .setup = setup_post,
	  .prepare = prep_post, .call = call_post, .check = check_post,
	  .failed = failed_post, .undo = undo_post, .no_objects = true },
	{ .name = "post_fetch_add", .arg = kFetchAdd, .setup = setup_post,
	  .prepare = prep_post, .call = call_post, .check = check_post,
	  .failed = failed_post, .undo = undo_post, .no_objects = true },
	{ .name = "post_write_odp", .setup = setup_post_explicit,
	  .prepare = prep_post, .call = call_post, .check = check_post,
	  .failed = failed_post, .undo = undo_post, .teardown = teardown_post,
	  .no_objects = true },
	{ .name = "post_write_implicit", .setup = setup_post_implicit,
	  .prepare = prep_post, .call = call_post, .check = check_post,
	  .failed = failed_post, .undo = undo_post, .teardown = teardown_post,
	  .no_objects = true },
};

// ---- running a sweep ------------------------------------------------------

// A sweep's count: points failed and what the calls said.
struct Tally {
	unsigned points = 0;	// of the call that ended the sweep
	unsigned failed = 0;	// calls that failed, a point injected
	unsigned tolerated = 0;	// calls that succeeded all the same
	bool ended = false;	// by a call that reached fewer points
	unsigned last = 0;	// the last point armed
	std::map<int, int> errnos;
};

// The objects before the call (@ready, after prepare) and after each call
// is undone (@base): a call that leaves them otherwise is reported once,
// and both move on with it.
struct Baseline {
	Census base, ready;
	bool have_ready = false;
};

void rebase(Env &e, Baseline &b)
{
	Census now = census(e);

	b.ready = census_shift(b.ready, b.base, now);
	b.base = now;
}

// The call failed: with a fault injected, for a reason (an errno), and
// with nothing left of it.
void point_failed(Env &e, const Sweep &sw, Slot &s, Baseline &b, Tally &t,
		  int err, bool injected)
{
	t.errnos[err]++;
	t.failed += injected;
	SCHECK(s, injected, "failed (%s) with no fault injected",
	       err_name(err));
	SCHECK(s, err > 0, "failed without an errno");
	Census now = sw.no_objects ? b.ready : census(e);
	std::string d = census_diff(b.ready, now);
	// A destroy made before ib_uverbs' EFAULT: the object is gone, its
	// mappings are not (they are counted stale from now on).
	bool made = err == EFAULT && sw.answers_after && s.mappings > 0 &&
		    census_fell(b.ready, now) && !census_rose(b.ready, now) &&
		    now["queue mappings"] == b.ready["queue mappings"];
	if (made) {
		s.notes[kMadeThenEfault]++;
		stale_mappings += s.mappings;
	}
	SCHECK(s, d.empty() || made, "after the failed call (%s): %s",
	       err_name(err), d.c_str());
	s.gone = census_fell(b.ready, now);
	if (sw.failed)
		sw.failed(e, s, err);
	if (sw.undo)
		sw.undo(e, s);
	if (!d.empty())
		rebase(e, b);
}

// The call succeeded: what it made works, and undone it leaves nothing.
void point_passed(Env &e, const Sweep &sw, Slot &s, Baseline &b, Tally &t,
		  bool injected)
{
	t.tolerated += injected;
	if (sw.check)
		sw.check(e, s, injected);
	if (sw.undo)
		sw.undo(e, s);
	if (sw.no_objects)
		return;
	Census now = census(e);
	std::string d = census_diff(b.base, now);
	SCHECK(s, d.empty(), "after the call%s and its undoing: %s",
	       injected ? " that tolerated the fault" : "", d.c_str());
	if (!d.empty())
		rebase(e, b);
}

// One call, armed to fail at point @n. Return: false to stop the sweep.
bool sweep_point(Env &e, const Sweep &sw, Slot &s, Baseline &b, Tally &t,
		 unsigned n)
{
	s.n = t.last = n;
	s.gone = false;
	if (sw.xrc_target) {
		Span sp = core_span([&] {
			if (!sw.call(e, s))
				sw.undo(e, s);
		});
		if (!sp.first)
			return false;
		if (n + 1 >= sp.first && n <= sp.last + 1) {
			s.notes["points in ib_core's create_xrc_qp_user() "
				"not failed (" + std::to_string(sp.first) +
				"-" + std::to_string(sp.last) + ")"]++;
			return true;
		}
	}
	s.mappings = -queue_mappings();
	if (sw.prepare && !sw.prepare(e, s))
		return false;
	s.mappings += queue_mappings();
	if (!b.have_ready) {
		b.ready = sw.no_objects ? Census() : census(e);
		b.have_ready = true;
	}
	if (!fail_nth_arm(n))
		return false;
	int err = sw.call(e, s);
	unsigned left = fail_nth_disarm();
	bool injected = left == 0;

	if (err)
		point_failed(e, sw, s, b, t, err, injected);
	else
		point_passed(e, sw, s, b, t, injected);
	if (injected)
		return true;
	t.ended = !err;
	t.points = n - left;
	return false;
}

void print_tally(const Sweep &sw, const Slot &s, const Tally &t)
{
	std::string errs, notes;

	for (const auto &[err, k] : t.errnos)
		errs += (errs.empty() ? "" : ", ") +
			std::string(err_name(err)) + " " + std::to_string(k);
	for (const auto &[what, k] : s.notes)
		notes += "; " + what + " " + std::to_string(k);
	if (!t.ended)
		notes += "; STOPPED at point " + std::to_string(t.last);
	else if (!t.points)
		notes += " (the call does not enter the kernel)";
	printf("%s: %u points: %u failed%s%s%s, %u tolerated%s\n", sw.name,
	       t.points, t.failed, errs.empty() ? "" : " (", errs.c_str(),
	       errs.empty() ? "" : ")", t.tolerated, notes.c_str());
	fflush(stdout);
}

// Run one sweep; the objects must be as they were before its setup.
void run_sweep(Env &e, const Sweep &sw)
{
	Slot s;
	Tally t;
	Baseline b;
	int before = failures;

	s.name = sw.name;
	s.arg = sw.arg;
	Census start = census(e);
	if (sw.setup && !sw.setup(e, s))
		return;
	b.base = sw.no_objects ? Census() : census(e);
	if (sw.xrc_target && !core_probes(true)) {
		core_probes(false);
		return;
	}
	for (unsigned n = 1; n <= kMaxPoints; n++)
		if (!sweep_point(e, sw, s, b, t, n) || s.hangs >= 2 ||
		    failures - before >= 10)
			break;
	CHECK(t.ended || failures > before, "%s: no call ended before its "
	      "point within %u points", sw.name, kMaxPoints);
	CHECK(!t.ended || t.points || sw.user_only, "%s: the call reached "
	      "no fault-injection point: it did not enter the kernel",
	      sw.name);
	if (sw.xrc_target)
		core_probes(false);
	if (sw.teardown)
		sw.teardown(e, s);
	std::string d = census_diff(start, census(e));
	CHECK(d.empty(), "%s: after the sweep: %s", sw.name, d.c_str());
	print_tally(sw, s, t);
}

int list_sweeps()
{
	for (const Sweep &sw : kSweeps)
		printf("%s\n", sw.name);
	return 0;
}

// The sweeps named on the command line (all without names); nullptr
// entries for names no sweep has.
std::vector<const Sweep *> chosen(int argc, char **argv)
{
	std::vector<const Sweep *> v;

	for (const Sweep &sw : kSweeps)
		if (argc < 3)
			v.push_back(&sw);
	for (int i = 2; i < argc; i++) {
		const Sweep *found = nullptr;
		for (const Sweep &sw : kSweeps)
			if (!strcmp(argv[i], sw.name))
				found = &sw;
		CHECK(found, "no sweep %s (--list)", argv[i]);
		v.push_back(found);
	}
	return v;
}

// Every sweep on device @dev, then everything destroyed: none of this
// process's objects is left, and the kernel's are as they were.
int run(const char *dev, const std::vector<const Sweep *> &sweeps)
{
	Env e;

	e.dev = dev;
	if (!fail_nth_open() || !env_batch(e))
		return 1;
	Census start = census(e);
	if (failures) {
		unlink(e.batch.c_str());
		return 1;
	}
	if (env_setup(e))
		for (const Sweep *sw : sweeps)
			if (sw)
				run_sweep(e, *sw);
	env_teardown(e);
	Census end = census(e);
	// Stale mappings hold the context until the process exits.
	if (stale_mappings && end["ctx"] == start["ctx"] + 1) {
		printf("%ld stale queue mappings hold the context until exit\n",
		       stale_mappings);
		end["ctx"]--;
	}
	std::erase_if(end, [](const auto &kv) { return kv.second == 0; });
	std::string d = census_diff(start, end);
	CHECK(d.empty(), "after closing the device: %s", d.c_str());
	unlink(e.batch.c_str());
	if (!failures)
		printf("failnth ok\n");
	return failures ? 1 : 0;
}

} // namespace
} // namespace xfer

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--list"))
		return xfer::list_sweeps();
	if (argc < 2) {
		fprintf(stderr, "usage: sroce-failnth DEV [SWEEP...]\n"
			"       sroce-failnth --list\n");
		return 2;
	}
	return xfer::run(argv[1], xfer::chosen(argc, argv));
}
