// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-vfuzz: a stateful, seeded verbs fuzzer. A random source seeded
// with SEED picks NOPS operations from a weighted table (kOps, below):
// create and destroy every kind of object (PDs, CQs, XRC domains, MRs,
// type 1 and 2 windows, AHs, SRQs, QPs of every type), register and
// re-register memory with any access flags, advise and import MRs, bind
// windows, move QPs between states, post WRs of every opcode with keys and
// addresses at and past the edges of what they name, post receives, poll,
// query. Each acts on small pools of the objects earlier ones made; every
// QP is connected to itself or to another pooled QP, so all traffic loops
// back through sroce. Among them, bursts of valid WRITE, READ, SEND and
// atomic WRs between RC or UC QPs connected to each other, so that data
// moves. Now and then a forked child does the same on a context of its
// own and exits with work in flight.
//
// What must hold, checked after every operation:
//  - a verb succeeds, or fails with a real errno (1..EHWPOISON: never 0,
//    nor a kernel-internal code such as ENOTSUPP): a pointer-returning one
//    returns NULL with errno set, an int-returning one a positive errno;
//  - an object in use (a PD with MRs, windows, QPs, SRQs or AHs in it, a
//    CQ a QP or SRQ completes in, an SRQ a QP takes from, an XRC domain
//    with SRQs or QPs) cannot be destroyed;
//  - a completion names a WR posted on that queue and not completed yet,
//    arrives in the CQ that queue completes in, in the order the queue's
//    WRs were posted, with a status libibverbs knows and, if successful,
//    the opcode of what was posted (a receive: no more bytes than it had
//    room for); none comes for a WR of a QP that went to RESET, nor (once
//    the CQs held at the time are drained) for one of a destroyed QP;
//  - every async event names a live object of ours;
//  - the canary pages hold what they held: every buffer the fuzzer may
//    register is mapped as [canary page][data pages][canary page]. The
//    canaries are never registered, never covered by a window, and only
//    ever named by a request the kernel must refuse (past the end of an MR
//    or window); a request through an implicit ODP MR, which covers them,
//    never names them. A changed byte is a write outside every
//    registration;
//  - an imported MR has the keys (and length) of the MR it imports;
//  - at the end everything can be destroyed, and rdma resource lists no
//    object of this process or of its children.
//
// On a failure: the last 200 operations and completions, what failed, and
// the command that repeats the run. Which operations run, and with what
// random arguments, depends on SEED and NOPS only (each operation draws
// from a random stream of its own); what the kernel answers may still vary
// with timing: whether a WR had completed, or a QP gone to error, when a
// later operation ran.
//
// Where things are: this file has the table of operations, the main loop,
// the child and the teardown; vfuzz.h the state (struct Fuzz and the
// records of the objects it pools); vfuzz_check.cpp the checks and the
// WRs that may still complete; vfuzz_args.cpp the buffers and every
// argument an operation draws (keys, addresses, lengths, flags);
// vfuzz_ops_mem.cpp and vfuzz_ops_queue.cpp the operations, and
// vfuzz_ops_data.cpp the valid traffic.
//
//   sroce-vfuzz DEV SEED NOPS [--print]
#include "vfuzz.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

namespace vfuzz {

// ---- The operations --------------------------------------------------------

// The operations, and how often each runs (weights in 1/10).
const Op kOps[] = {
	{ "alloc_pd", 20, op_alloc_pd },
	{ "dealloc_pd", 10, op_dealloc_pd },
	{ "create_cq", 20, op_create_cq },
	{ "destroy_cq", 10, op_destroy_cq },
	{ "resize_cq", 10, op_resize_cq },
	{ "req_notify_cq", 10, op_req_notify_cq },
	{ "poll_cq", 60, op_poll_cq },
	{ "open_xrcd", 10, op_open_xrcd },
	{ "close_xrcd", 10, op_close_xrcd },
	{ "reg_mr", 50, op_reg_mr },
	{ "reg_mr_iova", 20, op_reg_mr_iova },
	{ "reg_mr_implicit", 10, op_reg_mr_implicit },
	{ "rereg_mr", 30, op_rereg_mr },
	{ "dereg_mr", 30, op_dereg_mr },
	{ "advise_mr", 20, op_advise_mr },
	{ "import_mr", 10, op_import_mr },
	{ "alloc_mw", 30, op_alloc_mw },
	{ "dealloc_mw", 15, op_dealloc_mw },
	{ "bind_mw", 40, op_bind_mw },
	{ "create_ah", 20, op_create_ah },
	{ "destroy_ah", 10, op_destroy_ah },
	{ "create_srq", 20, op_create_srq },
	{ "destroy_srq", 10, op_destroy_srq },
	{ "modify_srq", 10, op_modify_srq },
	{ "query_srq", 5, op_query_srq },
	{ "post_srq_recv", 40, op_post_srq_recv },
	{ "create_qp", 40, op_create_qp },
	{ "destroy_qp", 20, op_destroy_qp },
	{ "connect_qp", 50, op_connect_qp },
	{ "modify_qp", 40, op_modify_qp },
	{ "query_qp", 10, op_query_qp },
	{ "post_send", 140, op_post_send },
	{ "post_send_ex", 50, op_post_send_ex },
	{ "post_recv", 70, op_post_recv },
	{ "exchange", 100, op_exchange },
	{ "query_device", 10, op_query_device },
	{ "fork_child", 2, op_fork_child },
};

// The first operations of a run (a child's too), whatever the seed: a
// few objects of each kind, QPs connected and receives posted, so that
// traffic starts at once. Their arguments are random all the same.
const OpFn kWarmup[] = {
	op_alloc_pd, op_alloc_pd, op_create_cq, op_create_cq, op_open_xrcd,
	op_reg_mr, op_reg_mr, op_reg_mr_implicit, op_alloc_mw, op_alloc_mw,
	op_create_srq, op_create_srq, op_create_ah, op_create_qp,
	op_create_qp, op_create_qp, op_create_qp, op_connect_qp,
	op_connect_qp, op_connect_qp, op_connect_qp, op_post_recv,
	op_post_recv, op_post_srq_recv, op_exchange, op_exchange,
};

// Operation @n: a warm-up one, else one by weight (never a child's child).
static const Op &pick_op(Rng &r, bool child, uint64_t n)
{
	unsigned total = 0;

	for (const Op &op : kOps)
		if (n < std::size(kWarmup) && op.fn == kWarmup[n])
			return op;

	for (const Op &op : kOps)
		total += child && op.fn == op_fork_child ? 0 : op.weight;
	unsigned k = r.below(total);
	for (const Op &op : kOps) {
		unsigned w = child && op.fn == op_fork_child ? 0 : op.weight;
		if (k < w)
			return op;
		k -= w;
	}
	return kOps[0];
}

// ---- A child ---------------------------------------------------------------

const uint64_t kChildOps = 150, kChildBurst = 16;
const unsigned kOpSeconds = 60;	// an op that takes longer hangs

static int run_child(uint64_t seed, uint64_t parent_op);

// Waits for child @pid up to 50 s (times SROCE_TIME_SCALE): less than
// the time an op may take (kOpSeconds), so that this says what happened.
static bool wait_child(pid_t pid, int &status)
{
	for (unsigned ms = 0; ms < 50000 * g_run.scale; ms += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return false;
}

// A forked child runs ops of its own (its own context, memory and seed),
// then exits with WRs in flight and every object still there: the kernel
// tears the context down.
Res op_fork_child(Fuzz &f, Rng &r)
{
	if (f.child)
		return skip();
	uint64_t seed = r.next();
	f.arg("seed %#llx", ull(seed));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return f.ret(errno, "fork");
	if (!pid)
		_exit(run_child(seed, f.opno));
	f.children.push_back(pid);
	int status = 0;
	if (!wait_child(pid, status))
		f.fail("child %d (seed %#llx) did not exit", pid, ull(seed));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		f.fail("child %d (seed %#llx) failed: wait status %#x", pid,
		       ull(seed), status);
	return ok();
}

// ---- The run ---------------------------------------------------------------

bool Fuzz::open()
{
	ctx = open_device(g_run.dev);
	if (!ctx) {
		fprintf(stderr, "%scannot open %s\n", who.c_str(), g_run.dev);
		return false;
	}
	int fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		perror("async fd");
		return false;
	}
	if (ibv_query_gid(ctx, 1, 0, &gid[0]) ||
	    ibv_query_gid(ctx, 1, 1, &gid[1])) {
		fprintf(stderr, "%s%s: no GID 0 and 1 on port 1\n", who.c_str(),
			g_run.dev);
		return false;
	}
	return map_memory();
}

void Fuzz::step(uint64_t n)
{
	Rng r = op_rng(seed, n);

	run(pick_op(r, child, n), r, n);
}

// Runs @op as op @n, logs it, then checks what must hold after any op.
void Fuzz::run(const Op &op, Rng &r, uint64_t n)
{
	opno = n;
	opname = op.name;
	args.clear();
	in_op = true;
	alarm(kOpSeconds * g_run.scale);
	Res res = op.fn(*this, r);
	alarm(0);
	in_op = false;
	n_ops++;
	by_op[op.name]++;
	std::string result = "ok";
	if (res.kind == Res::Ok)
		n_ok++;
	if (res.kind == Res::Skip) {
		n_skip++;
		result = "skip";
	}
	if (res.kind == Res::Err) {
		n_err++;
		by_errno[res.err]++;
		result = errname(res.err);
	}
	log.add(strf("#%llu %s%s -> %s", ull(n), op.name, args.c_str(),
		     result.c_str()));
	for (std::string &line : during)
		log.add(std::move(line));
	during.clear();
	reap();
	events();
	check_canaries();
}

// Destroys everything, in an order that works: QPs, windows, then MRs
// (none has a window left), AHs, SRQs, CQs, XRC domains, PDs, contexts.
// Each must go.
void Fuzz::teardown()
{
	opname = "teardown";
	opno = n_ops;
	reap();
	for (int s = 0; s < kSlots; s++) {
		if (!qps.at[s].live())
			continue;
		int ret = ibv_destroy_qp(qps.at[s].qp);
		if (ret)
			fail("ibv_destroy_qp(qp%d): %s", s,
			     errname(ret).c_str());
		qp_gone(s);
	}
	for (int s = 0; s < kSlots; s++)
		if (mws.at[s].live() && ibv_dealloc_mw(mws.at[s].mw))
			fail("ibv_dealloc_mw(mw%d) failed", s);
	for (int s = 0; s < kSlots; s++) {
		int ret = mrs.at[s].live() ? ibv_dereg_mr(mrs.at[s].mr) : 0;
		if (ret)
			fail("ibv_dereg_mr(mr%d) with no window left: %s", s,
			     errname(ret).c_str());
	}
	for (int s = 0; s < kSlots; s++)
		if (ahs.at[s].live() && ibv_destroy_ah(ahs.at[s].ah))
			fail("ibv_destroy_ah(ah%d) failed", s);
	for (int s = 0; s < kSlots; s++) {
		if (!srqs.at[s].live())
			continue;
		int ret = ibv_destroy_srq(srqs.at[s].srq);
		if (ret)
			fail("ibv_destroy_srq(srq%d) with no QP left: %s", s,
			     errname(ret).c_str());
		srq_gone(s);
	}
	for (int s = 0; s < kSlots; s++) {
		int ret = cqs.at[s].live() ? ibv_destroy_cq(cqs.at[s].cq) : 0;
		if (ret)
			fail("ibv_destroy_cq(cq%d) with no QP left: %s", s,
			     errname(ret).c_str());
		cqs.at[s] = {};
	}
	for (int s = 0; s < kSlots; s++) {
		ibv_xrcd *x = xrcds.at[s].xrcd;
		int ret = x ? ibv_close_xrcd(x) : 0;
		if (ret)
			fail("ibv_close_xrcd(xrcd%d) with nothing in it: %s", s,
			     errname(ret).c_str());
	}
	for (int s = 0; s < kSlots; s++) {
		int ret = pds.at[s].live() ? ibv_dealloc_pd(pds.at[s].pd) : 0;
		if (ret)
			fail("ibv_dealloc_pd(pd%d) with nothing in it: %s", s,
			     errname(ret).c_str());
	}
	events();
	if (ictx && ibv_close_device(ictx))
		fail("closing the imported context failed");
	if (ibv_close_device(ctx))
		fail("ibv_close_device failed");
	check_canaries();
}

// How many objects of @pids `rdma -j resource show TYPE` lists for the
// device; -1 if rdma would not say.
static int count_objects(const char *type, const std::vector<pid_t> &pids,
		  std::string &out)
{
	bool qp = !strcmp(type, "qp");
	std::string cmd = strf("rdma -j resource show %s %s %s%s 2>/dev/null",
			       type, qp ? "link" : "dev", g_run.dev,
			       qp ? "/1" : "");
	FILE *p = popen(cmd.c_str(), "r");
	char buf[4096];
	size_t n;

	if (!p)
		return -1;
	out.clear();
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	if (pclose(p))
		return -1;
	int count = 0;
	for (size_t at = out.find("\"pid\":"); at != std::string::npos;
	     at = out.find("\"pid\":", at + 1)) {
		pid_t pid = atoi(out.c_str() + at + 6);
		count += std::find(pids.begin(), pids.end(), pid) != pids.end();
	}
	return count;
}

// No object of this process or its children is left on the device.
void Fuzz::check_leaks()
{
	static const char *const types[] = { "pd", "mr",  "cq",
					     "qp", "srq", "ctx" };
	std::vector<pid_t> pids = children;
	std::string out;

	pids.push_back(getpid());
	for (const char *type : types) {
		int n = count_objects(type, pids, out);
		if (n < 0)
			printf("note: rdma resource show %s failed: not "
			       "checked\n", type);
		if (n > 0)
			fail("rdma resource show %s lists %d objects of this "
			     "process or its children after teardown: %.2000s",
			     type, n, out.c_str());
	}
}

void Fuzz::summary() const
{
	std::string st, er, ops;
	auto ok_wc = by_status.find(IBV_WC_SUCCESS);

	for (const auto &[s, n] : by_status)
		st += strf("%s%s %llu", st.empty() ? "" : ", ", status_name(s),
			   ull(n));
	for (const auto &[e, n] : by_errno)
		er += strf("%s%s %llu", er.empty() ? "" : ", ",
			   errname(e).c_str(), ull(n));
	for (const auto &[o, n] : by_op)
		ops += strf("%s%s %llu", ops.empty() ? "" : ", ", o.c_str(),
			    ull(n));
	printf("%llu ops, %llu ok, %llu errno, %llu skipped, %llu completions, "
	       "%llu successful (by status: %s), %zu children\n", ull(n_ops),
	       ull(n_ok), ull(n_err), ull(n_skip), ull(n_wc),
	       ull(ok_wc != by_status.end() ? ok_wc->second : 0), st.c_str(),
	       children.size());
	printf("errnos: %s\n", er.empty() ? "none" : er.c_str());
	printf("ops: %s\n", ops.c_str());
}

// The child of op @parent_op: its own context, memory and ops; then a
// burst of sends, and exit with everything in place.
static int run_child(uint64_t seed, uint64_t parent_op)
{
	auto *c = new Fuzz(seed, strf("child of op #%llu: ", ull(parent_op)),
			   true);

	g_fuzz = c;
	if (!c->open())
		return 1;
	for (uint64_t i = 0; i < kChildOps; i++)
		c->step(i);
	static const Op burst = { "post_send", 1, op_post_send };
	for (uint64_t i = 0; i < kChildBurst; i++) {
		Rng r = op_rng(seed, kChildOps + i);
		c->run(burst, r, kChildOps + i);
	}
	c->check_canaries();
	fflush(stdout);
	return 0;
}

static void on_alarm(int)
{
	Fuzz *f = g_fuzz;

	f->log.dump();
	say(strf("%sFAIL: op #%llu %s%s did not return within %u s\n",
		 f->who.c_str(), ull(f->opno), f->opname, f->args.c_str(),
		 kOpSeconds * g_run.scale));
	say(strf("reproduce: sroce-vfuzz %s %llu %llu\n", g_run.dev,
		 ull(g_run.seed), ull(g_run.nops)));
	_exit(1);
}

} // namespace vfuzz

// Without address space randomisation (executing itself again once), so
// that a seed's buffers, and so every address it names and what lies
// there, are the same from one run to the next. Else as it is.
static void no_aslr(char **argv)
{
	int p = personality(0xffffffff);

	if (p < 0 || (p & ADDR_NO_RANDOMIZE) ||
	    personality(p | ADDR_NO_RANDOMIZE) < 0)
		return;
	execv("/proc/self/exe", argv);
}

static int usage()
{
	fprintf(stderr, "usage: sroce-vfuzz DEV SEED NOPS [--print]\n");
	return 2;
}

int main(int argc, char **argv)
{
	using namespace vfuzz;
	char *end;

	if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--print")))
		return usage();
	g_run.dev = argv[1];
	g_run.seed = strtoull(argv[2], &end, 0);
	if (*end)
		return usage();
	g_run.nops = strtoull(argv[3], &end, 0);
	if (*end)
		return usage();
	g_run.print = argc == 5;
	no_aslr(argv);
	const char *scale = getenv("SROCE_TIME_SCALE");
	g_run.scale = scale && atoi(scale) > 1 ? atoi(scale) : 1;
	g_page = sysconf(_SC_PAGESIZE);
	signal(SIGALRM, on_alarm);

	auto *f = new Fuzz(g_run.seed, "", false);
	g_fuzz = f;
	if (!f->open())
		return 1;
	for (uint64_t i = 0; i < g_run.nops; i++)
		f->step(i);
	alarm(kOpSeconds * g_run.scale);
	f->teardown();
	f->check_leaks();
	alarm(0);
	f->summary();
	return 0;
}
