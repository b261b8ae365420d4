// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-stall: a process whose ODP page fault stalls, uninterruptibly and
// for as long as it likes, holds up only its own work: never another
// process's ibv_destroy_qp(), nor its ibv_post_send(). The stall is real:
// the attacker's ODP MR maps a file of a FUSE server (tests/src/stallfs.h)
// that holds the read of the page, as any user's own FUSE server may; its
// fault waits on the page's lock in D state, where no signal reaches it.
//
// Each test runs in its own processes: the victim V (root) and the
// attacker A (uid 65534 but in destroy_same_user) each open the device
// themselves; this process serves them commands, sees the stall happen
// (the server holds the read; the task that faults is in D state, its
// kernel stack in hmm_range_fault() under sroce), and checks what V gets.
// Every wait is bounded (SROCE_TIME_SCALE stretches the bounds): a call
// that does not return in time is a failure, said with its kernel stack;
// then the read is answered, and everything must end and go.
//
//   sroce-stall DEV DIR TEST     DIR: an empty folder to mount on (root)
//
// destroy_other_user: A's RC QP is connected to V's QPN; one
//   ibv_post_send() of A's posts a SEND (inline) and a SEND from the FUSE
//   page. The doorbell sends the first to V's QP, then faults on the
//   second. V's QP receives the first and V destroys it, both while A's
//   doorbell is stalled. (Before inline-hold, the doorbell had listed V's
//   QP, with a reference, to run it after its own run: V's receive and its
//   destroy waited for A's read.)
// destroy_same_user: the same with A a root process too (a container
//   sharing a uid): the doorbell's list is per process, not per user.
// doorbell_to_stalled_peer: V sends to A's QP, whose receive buffer is the
//   FUSE page: V's ibv_post_send() returns while A's QP's run waits in
//   the fault (in a worker), and V destroys its QP. Once the read is
//   answered, A's receive holds V's bytes. (Before: V's doorbell ran A's
//   QP itself and waited in A's fault.)
// destroy_wq_full: A fills the engine workqueue's 256 active items on CPU
//   0 with runs of its own QPs, each waiting in the fault (UD receives into
//   the FUSE page, sent by A from a second context), then sends V a packet
//   there: V's work item waits, inactive, behind A's. V destroys its QP:
//   the destroy drops the packet and takes the item off the queue itself.
//   (Before: the destroy waited for a worker to run the item.)
// dereg_odp_ahead_bound: A's 264 RC QPs' streams of READs, out of an MR
//   over 68 KiB of A's memory and the file after it, each would queue a
//   fault-ahead job for the file's page: A gets its bound of them, 16,
//   which wait in the fault, and the rest queue none (odp_ahead_refused).
//   V's own streams then queue V's jobs, which run at once beside A's
//   and fault V's ranges in; V's ibv_dereg_mr of one MR and ibv_rereg_mr
//   of the other return. The premise is read from the MRs' counts ("rdma
//   resource show mr -dd": ahead_queued, ahead_run) and the device's.
//   (Before the bound: A's 264 jobs filled ODP's fault-ahead workqueue,
//   256 active, and V's waited behind them until the read was answered;
//   before pending/inline-hold a queued job held an access to its map,
//   and V's dereg waited for it.)
// exit_odp_ahead_bound: the same, V killed instead: it exits.
#include "check.h"
#include "role.h"
#include "stall.h"
#include "stallfs.h"
#include "tasks.h"

#include <functional>
#include <string>
#include <vector>

namespace {

using tasks::in_odp_fault;
using tasks::slurp;
using tasks::stack_of;
using tasks::stalled_workers;
using tasks::stat_of;
using tasks::wait_until;
using tasks::workers_under;

// The engine's workqueue (per CPU): max_active 0 (WQ_DFL_ACTIVE)
const int kMaxActive = 256;
// The fault-ahead jobs a user may have queued or running on a device
// (SROCE_ODP_USER_AHEAD, kernel/sroce_odp.c)
const int kUserAhead = 16;

// Bounds, in seconds at SROCE_TIME_SCALE 1.
const long kSetupS = 60;	// a part's setup, or a step of it
const long kStallS = 30;	// the stall to show
const long kBoundS = 15;	// a call that must not wait for the stall
const long kAfterS = 60;	// what waited for it, once the read is answered
const long kRecvS = 5;		// a receive that must complete
const long kQuietS = 2;		// a receive that must not

long limit_ms(long s)
{
	return s * 1000 * time_scale();
}

// Task @pid waits in D state in an ODP fault of sroce's, under
// sroce_task_doorbell() (in its ibv_post_send()); else what it does.
bool doorbell_stalled(pid_t pid, std::string *what)
{
	char state = '?';
	unsigned long flags;
	std::string stack = stack_of(pid);

	stat_of(pid, &state, &flags);
	*what = std::string("state ") + state + ", stack " + stack;
	return state == 'D' && in_odp_fault(stack) &&
	       stack.find("sroce_task_doorbell") != std::string::npos;
}

long long port_counter(const char *dev, const char *name)
{
	std::string s = slurp(std::string("/sys/class/infiniband/") + dev +
			      "/ports/1/hw_counters/" + name);

	return s.empty() ? -1 : atoll(s.c_str());
}

// The port counters that say where a packet went (sent_pkts, for what a
// failure says).
struct Counts {
	long long rcvd, no_qp, rx_full, sent;

	explicit Counts(const char *dev)
		: rcvd(port_counter(dev, "rcvd_pkts")),
		  no_qp(port_counter(dev, "drop_no_qp")),
		  rx_full(port_counter(dev, "drop_rx_queue_full")),
		  sent(port_counter(dev, "sent_pkts"))
	{
	}

	// A packet was received since @before and none dropped for want
	// of its QP or of room.
	bool delivered_since(const Counts &before) const
	{
		return rcvd > before.rcvd && no_qp == before.no_qp &&
		       rx_full == before.rx_full;
	}
};

// A packet reached a QP since @before (counted received, none dropped for
// want of its QP or of room), seen within the bound: sroce counts a packet
// received once it is queued to its QP, after the QP's work is scheduled,
// so a receive can complete (and be seen) a moment before its count is.
// @detail, if given, says more on failure (the receiver's completion).
void expect_delivered(const char *dev, const Counts &before,
		      const char *what,
		      const std::function<std::string()> &detail = nullptr)
{
	Counts now(dev);
	bool seen = wait_until(limit_ms(kRecvS), [&] {
		now = Counts(dev);
		return now.delivered_since(before);
	});

	CHECK(seen, "%s: rcvd_pkts +%lld, drop_no_qp +%lld, drop_rx_queue_full "
	      "+%lld within %ld s, expected a packet received and none "
	      "dropped (rcvd_pkts %lld then %lld, sent_pkts %lld then %lld: "
	      "-1 is a counter not read); %s", what, now.rcvd - before.rcvd,
	      now.no_qp - before.no_qp, now.rx_full - before.rx_full,
	      kRecvS * time_scale(), before.rcvd, now.rcvd, before.sent,
	      now.sent, detail ? detail().c_str() : "");
}

// An ODP MR's fault-ahead jobs, as sroce_fill_res_mr_entry() counts them
// for the MR's current pin: queued (ahead_queued), and started (ahead_run:
// counted as a job starts faulting; a job that finds its map retired when
// its turn comes counts in the device's odp_jobs_retired instead, and one
// cancelled, when its stream's next message comes or its QP goes, in
// neither). -1: not shown.
struct Ahead {
	long long queued = -1, run = -1;

	// Queued and not started (nor cancelled, nor retired: see above).
	bool waits() const
	{
		return run >= 0 && queued > run;
	}

	std::string str() const
	{
		return std::to_string(queued) + "/" + std::to_string(run);
	}
};

// The ODP MRs of process @pid on @dev, as "rdma -j -dd resource show mr"
// lists them (root sees any user's counts: sroce_res_may_see_residency()),
// in the listing's order.
std::vector<Ahead> aheads_of(const char *dev, pid_t pid)
{
	std::vector<Ahead> v;

	for (const std::string &o : res_objects(dev, "mr", false)) {
		if (res_field(o, "pid") != pid ||
		    o.find("\"drv_kind\":\"odp\"") == std::string::npos)
			continue;
		v.push_back({ res_field(o, "drv_ahead_queued"),
			      res_field(o, "drv_ahead_run") });
	}
	return v;
}

// A's one ODP MR's counts (unread if there is none).
Ahead ahead_of(const char *dev, pid_t pid)
{
	std::vector<Ahead> v = aheads_of(dev, pid);

	return v.empty() ? Ahead() : v[0];
}

// V's: "queued/started" of each ODP MR, or "(no ODP MR)".
std::string str(const std::vector<Ahead> &v)
{
	std::string s;

	for (const Ahead &x : v)
		s += (s.empty() ? "" : ", ") + x.str();
	return s.empty() ? "(no ODP MR)" : s;
}

// A test's world: the file system, V and A. Whatever happened, it ends by
// answering the reads held, letting V and A end (each must, in time,
// with status 0) and unmounting.
struct Scene {
	const char *dev;
	std::string dir;
	StallFs fs;
	Role v, a;
	bool fuse_missing = false;

	Scene(const char *d, const char *mnt) : dev(d), dir(mnt) {}

	bool mount()
	{
		int err = fs.mount(dir, limit_ms(kSetupS));

		fuse_missing = err == ENOENT || err == ENODEV;
		CHECK(!err || fuse_missing, "mounting StallFs on %s: %s",
		      dir.c_str(), strerror(err));
		return !err;
	}

	bool start(Role &r, const char *who,
		   const std::function<int(int)> &fn, unsigned *id)
	{
		char ans[kLine];

		CHECK(role_start(r, fn), "starting %s: %s", who, strerror(errno));
		bool ok = r.pid > 0 && hear(r.fd, ans, limit_ms(kSetupS)) &&
			  sscanf(ans, "ready %u", id) == 1;
		CHECK(ok, "%s's setup: '%s'", who, ans);
		return ok;
	}

	// Tell @who (@r) @cmd; its answer in @ans within @ms. False (said)
	// if none came or it is an error.
	bool ask(Role &r, const char *who, const std::string &cmd, char *ans,
		 long ms)
	{
		bool ok = say(r.fd, "%s", cmd.c_str()) && hear(r.fd, ans, ms) &&
			  strncmp(ans, "error", 5);

		CHECK(ok, "%s, told '%s', answered '%s' within %ld ms", who,
		      cmd.c_str(), ans, ms);
		return ok;
	}

	bool connect(unsigned vqpn, unsigned aqpn)
	{
		char ans[kLine];

		return ask(v, "V", "connect " + std::to_string(aqpn), ans,
			   limit_ms(kSetupS)) &&
		       ask(a, "A", "connect " + std::to_string(vqpn), ans,
			   limit_ms(kSetupS));
	}

	// The stall as this process sees it: the server holds a read of the
	// file's first page, which every ODP access here starts in.
	bool read_held()
	{
		uint64_t off = 0;
		uint32_t len = 0;
		bool ok = fs.held_read(limit_ms(kStallS), &off, &len);

		CHECK(ok && off == 0 && len, "the FUSE server held no read of "
		      "the file's first page within %ld s (offset %llu, %u "
		      "bytes)", kStallS * time_scale(),
		      (unsigned long long)off, len);
		return ok && off == 0 && len;
	}

	// @r's next line within @ms is "@word MS RC": true (and RC checked
	// to be 0) if it came.
	bool returns(Role &r, const char *who, const char *word, long ms)
	{
		char ans[kLine];
		long took;
		int ret = -1;
		bool came = hear(r.fd, ans, ms) &&
			    !strncmp(ans, word, strlen(word)) &&
			    sscanf(ans + strlen(word), " %ld %d", &took, &ret) == 2;

		CHECK(!came || ret == 0, "%s: %s", who, strerror(ret));
		return came;
	}

	// Within the bound, A's @n packets since @before reached their QPs
	// (rcvd_pkts +@n, none dropped: sroce counts a packet once its QP's
	// run is scheduled, so @n runs of A's QPs were queued on the
	// engine's workqueue), and one at least of sroce's workers waits in
	// A's fault: the premise of destroy_wq_full, else said. Every run of
	// A's waits on the same held read, so with @n over kMaxActive the
	// queue has kMaxActive of A's runs active and the rest inactive,
	// and a run queued after them is inactive too. How many workers
	// took them is the workqueue's business, not a condition: on 6.1,
	// once making a worker takes over 10 ms (a TCG VM), the queue's
	// rescuer takes the active items that have no worker and runs them
	// one at a time, the first waiting in the fault (130 of 256 workers
	// were seen there once).
	bool engine_held(const Counts &before, int n)
	{
		std::string one;
		Counts now(dev);
		int workers = 0;
		bool held = wait_until(limit_ms(3 * kStallS), [&] {
			now = Counts(dev);
			workers = stalled_workers(&one);
			return now.rcvd - before.rcvd >= n && workers >= 1;
		});

		held = held && now.no_qp == before.no_qp &&
		       now.rx_full == before.rx_full;
		CHECK(held, "A's %d SENDs to its own QPs: rcvd_pkts +%lld, "
		      "drop_no_qp +%lld, drop_rx_queue_full +%lld, and %d of "
		      "sroce's workers wait in A's fault, within %ld s "
		      "(expected +%d, +0, +0 and one at least); one: %s. "
		      "Kernel threads: %s", n, now.rcvd - before.rcvd,
		      now.no_qp - before.no_qp, now.rx_full - before.rx_full,
		      workers, 3 * kStallS * time_scale(), n, one.c_str(),
		      tasks::kthread_census().c_str());
		return held;
	}

	// Within the bound, A's fault-ahead jobs are held to A's bound (the
	// premise of *_odp_ahead_bound), as A's ODP MR counts them ("rdma
	// resource show mr -dd", which shows root any user's counts) and the
	// device counts the rest: of A's @n streams, kUserAhead queued their
	// job (ahead_queued; ahead_run, a job counting as it starts, no more
	// than that), the others none (odp_ahead_refused +@n - kUserAhead
	// since @refused), and one at least of sroce's workers running @job
	// waits in D state in A's fault. A's jobs wait there until the read
	// is answered, each holding its count of A's: no other stream of A's
	// may queue one meanwhile. Else said, with where sroce's workers wait
	// and a census of the kernel threads. Of those in D state, some may
	// wait behind the fault where it holds A's memory: a fault holds its
	// process's mmap lock for reading while it waits for the page, and a
	// task that asks for it for writing meanwhile (khugepaged, an munmap,
	// a stack to grow) waits behind it, and every job that asks for it
	// for reading after that (ib_umem_odp_map_dma_and_lock()) waits in
	// down_read(), not in hmm_range_fault(), as long.
	bool a_jobs_bounded(int n, const char *job, long long refused)
	{
		tasks::Waiting w;
		Ahead c;
		long long now = -1;
		bool held = wait_until(limit_ms(3 * kStallS), [&] {
			c = ahead_of(dev, a.pid);
			now = port_counter(dev, "odp_ahead_refused");
			if (c.queued < kUserAhead || c.run < 1)
				return false;
			w = workers_under(job);
			return w.in_fault > 0;
		});

		held = held && c.queued == kUserAhead && c.run <= c.queued &&
		       refused >= 0 && now - refused == n - kUserAhead &&
		       w.in_fault > 0;
		if (!held)
			w = workers_under(job);
		CHECK(held, "A's fault-ahead jobs: %s (queued/started, of %d "
		      "streams; expected %d queued, A's bound), odp_ahead_refused "
		      "+%lld (expected +%d), and %d of sroce's workers in %s in "
		      "A's fault (expected one at least), within %ld s. "
		      "Workers in %s in D state: %d; they wait in: %s. "
		      "Workers in %s not in D state: %d. Tasks waiting to "
		      "write-lock an rwsem: %s. A: %s. One in the fault: %s. "
		      "Kernel threads: %s", c.str().c_str(), n, kUserAhead,
		      now - refused, n - kUserAhead, w.in_fault, job,
		      3 * kStallS * time_scale(), job, w.n, w.where().c_str(),
		      job, w.other, tasks::rwsem_writers().c_str(),
		      stack_of(a.pid).c_str(), w.fault_stack.c_str(),
		      tasks::kthread_census().c_str());
		return held;
	}

	// V's "destroy" within the bound; else the failure, with V's stack.
	bool destroy_in_time(const char *while_what)
	{
		bool ok = say(v.fd, "destroy") &&
			  returns(v, "V's ibv_destroy_qp", "destroyed",
				  limit_ms(kBoundS));

		CHECK(ok, "V's ibv_destroy_qp hung: not returned %ld s after it "
		      "was called, %s; V: %s", kBoundS * time_scale(),
		      while_what, stack_of(v.pid).c_str());
		return ok;
	}

	// After the read is answered, what was stuck must come: @r's next
	// line, "@word MS RC".
	void comes_after(Role &r, const char *who, const char *word)
	{
		CHECK(returns(r, who, word, limit_ms(kAfterS)), "%s: no '%s' "
		      "within %ld s after the read was answered; %s", who, word,
		      kAfterS * time_scale(), stack_of(r.pid).c_str());
	}

	~Scene()
	{
		fs.release();
		int va = v.pid > 0 ? role_end(v, limit_ms(kAfterS)) : 0;
		int aa = a.pid > 0 ? role_end(a, limit_ms(kAfterS)) : 0;
		CHECK(va == 0 && aa == 0, "V ended with %d, A with %d (-1: "
		      "still running %ld s after the read was answered)", va, aa,
		      kAfterS * time_scale());
		CHECK(fs.unmount(), "unmounting StallFs, or its server's end");
	}
};

// destroy_other_user, destroy_same_user.
void destroy_under_stall(Scene &s, bool nobody)
{
	unsigned vq, aq;
	char ans[kLine];
	std::string what;
	std::string file = s.fs.file();

	if (!s.start(s.v, "V", [&](int fd) {
		    return stall::victim(fd, s.dev, IBV_QPT_RC);
	    }, &vq) ||
	    !s.start(s.a, "A", [&](int fd) {
		    return stall::attacker_doorbell(fd, s.dev, file, nobody);
	    }, &aq) ||
	    !s.connect(vq, aq))
		return;
	Counts c0(s.dev);
	if (!s.ask(s.a, "A", "post", ans, limit_ms(kSetupS)) || !s.read_held())
		return;
	bool stalled = wait_until(limit_ms(kStallS), [&] {
		return doorbell_stalled(s.a.pid, &what);
	});
	CHECK(stalled, "A's doorbell is not waiting in the fault: %s; A "
	      "said '%s'", what.c_str(), hear(s.a.fd, ans, 0) ? ans : "");
	if (!stalled)
		return;
	// A's first SEND reached V's QP, and V's QP ran it, while A waits.
	s.ask(s.v, "V", "recv " + std::to_string(limit_ms(kRecvS)), ans,
	      limit_ms(kSetupS));
	CHECK(!strcmp(ans, "recv ok"), "V's receive of A's first SEND: '%s' "
	      "within %ld s (its QP's run waits for A's stalled doorbell?)",
	      ans, kRecvS * time_scale());
	expect_delivered(s.dev, c0, "A's first SEND", [&] {
		char wc[kLine], qps[64];
		bool ok = say(s.v.fd, "wc") && hear(s.v.fd, wc,
						    limit_ms(kSetupS));
		snprintf(qps, sizeof(qps), "; A's QP %#x, V's %#x", aq, vq);
		return std::string("V's completion (wc STATUS LEN QPN "
				   "SRC_QP): ") +
		       (ok ? wc : "(V did not say)") + qps;
	});
	CHECK(doorbell_stalled(s.a.pid, &what), "A stopped waiting: %s",
	      what.c_str());
	bool destroyed = s.destroy_in_time("while A's doorbell waits in its "
					   "fault");
	s.fs.release();
	s.comes_after(s.a, "A's ibv_post_send", "posted");
	if (!destroyed)
		s.comes_after(s.v, "V's ibv_destroy_qp", "destroyed");
}

// doorbell_to_stalled_peer.
void doorbell_to_stalled_peer(Scene &s)
{
	unsigned vq, aq;
	char ans[kLine];
	std::string one;
	std::string file = s.fs.file();

	if (!s.start(s.v, "V", [&](int fd) {
		    return stall::victim(fd, s.dev, IBV_QPT_RC);
	    }, &vq) ||
	    !s.start(s.a, "A", [&](int fd) {
		    return stall::attacker_receiver(fd, s.dev, file);
	    }, &aq) ||
	    !s.connect(vq, aq) ||
	    !s.ask(s.v, "V", "post", ans, limit_ms(kSetupS)))
		return;
	bool posted = s.returns(s.v, "V's ibv_post_send", "posted",
				limit_ms(kBoundS));
	CHECK(posted, "V's ibv_post_send hung: not returned %ld s after it "
	      "was called (its doorbell runs A's QP, which waits in A's "
	      "fault?); V: %s", kBoundS * time_scale(),
	      stack_of(s.v.pid).c_str());
	if (!s.read_held())
		return;
	if (posted) {
		bool seen = wait_until(limit_ms(kStallS), [&] {
			return stalled_workers(&one) >= 1;
		});
		CHECK(seen, "no worker of sroce waits in A's fault");
		s.destroy_in_time("while A's QP's run waits in A's fault");
	}
	s.fs.release();
	if (!posted)
		s.comes_after(s.v, "V's ibv_post_send", "posted");
	s.ask(s.a, "A", "check " + std::to_string(limit_ms(kAfterS)), ans,
	      limit_ms(kAfterS) + limit_ms(kSetupS));
	CHECK(!strcmp(ans, "recv ok"), "A's receive into the FUSE page, "
	      "once the read was answered: '%s'", ans);
}

// destroy_wq_full.
void destroy_wq_full(Scene &s)
{
	const int n = kMaxActive + 8;
	unsigned vq, na;
	char ans[kLine];
	std::string one;
	std::string file = s.fs.file();
	int workers = 0;

	if (!s.start(s.v, "V", [&](int fd) {
		    return stall::victim(fd, s.dev, IBV_QPT_UD);
	    }, &vq) ||
	    !s.start(s.a, "A", [&](int fd) {
		    return stall::attacker_flood(fd, s.dev, file, n);
	    }, &na))
		return;
	// A's sends to its other context's QPs only queue their work.
	long long inval = port_counter(s.dev, "odp_pages_invalidated");
	long long faults = port_counter(s.dev, "odp_page_faults");
	Counts f0(s.dev);
	bool flooded = say(s.a.fd, "flood") &&
		       s.returns(s.a, "A's SENDs", "flooded", limit_ms(kBoundS));
	CHECK(flooded, "A's ibv_post_send of SENDs to its QPs of another "
	      "context did not return in %ld s (its doorbell runs them "
	      "itself?); A: %s", kBoundS * time_scale(),
	      stack_of(s.a.pid).c_str());
	if (!flooded || !s.read_held() ||
	    !s.engine_held(f0, n))
		return;
	Counts c0(s.dev);
	if (!s.ask(s.a, "A", "send " + std::to_string(vq), ans,
		   limit_ms(kBoundS)))
		return;
	CHECK(!strcmp(ans, "sent 0"), "A's SEND to V: '%s'", ans);
	s.ask(s.v, "V", "recv " + std::to_string(limit_ms(kQuietS)), ans,
	      limit_ms(kSetupS));
	CHECK(!strcmp(ans, "recv none"), "V's receive: '%s' while its work "
	      "should wait behind A's (the workqueue was not full)", ans);
	expect_delivered(s.dev, c0, "A's SEND to V");
	workers = stalled_workers(&one);
	CHECK(workers >= 1, "no worker waits in A's fault now");
	bool destroyed = s.destroy_in_time("with its work item inactive "
					   "behind A's stalled ones");
	s.fs.release();
	if (!destroyed)
		s.comes_after(s.v, "V's ibv_destroy_qp", "destroyed");
	s.ask(s.a, "A", "recvd " + std::to_string(limit_ms(kAfterS)), ans,
	      limit_ms(kAfterS) + limit_ms(kSetupS));
	// "recvd GOT BAD STATUS:COUNT...": each status of those that came.
	int got = -1, bad = -1;
	bool read = sscanf(ans, "recvd %d %d", &got, &bad) == 2;
	CHECK(read && got == n && bad == 0, "A's %d receives once the read "
	      "was answered: '%s' (received, failed; then each completion "
	      "status, ibv_wc_status, and how many had it: 4 LOC_PROT_ERR is "
	      "a fault that failed); odp_pages_invalidated +%lld, "
	      "odp_page_faults +%lld since the flood", n, ans,
	      port_counter(s.dev, "odp_pages_invalidated") - inval,
	      port_counter(s.dev, "odp_page_faults") - faults);
}

// The device's counts of what fault-ahead jobs did (hw_counters): those
// that found their map retired when their turn came (odp_jobs_retired),
// the pages jobs faulted in (odp_pages_prefetched: only fault-ahead jobs
// and ibv_advise_mr() count there, a message's own faults do not), and the
// messages of a stream that queued no job past a user's bound or all
// users' (odp_ahead_refused).
struct JobCounts {
	long long retired, prefetched, refused;

	explicit JobCounts(const char *dev)
		: retired(port_counter(dev, "odp_jobs_retired")),
		  prefetched(port_counter(dev, "odp_pages_prefetched")),
		  refused(port_counter(dev, "odp_ahead_refused"))
	{
	}

	std::string str() const
	{
		return "odp_jobs_retired " + std::to_string(retired) +
		       ", odp_pages_prefetched " + std::to_string(prefetched) +
		       ", odp_ahead_refused " + std::to_string(refused);
	}
};

// dereg_odp_ahead_bound, exit_odp_ahead_bound.
//
// A's 264 streams, whose jobs wait in the fault, get kUserAhead jobs, the
// rest none (a_jobs_bounded()): so A holds that many workers, and V's
// streams then queue their jobs, which run at once and fault V's ranges
// in, all within the bound: V's MRs count each its job queued and
// started, V's 32 pages of those ranges are present, and the device
// counts them prefetched, no job retired and no stream of V's refused.
// V's ibv_dereg_mr of one MR and ibv_rereg_mr of the other (or V's kill)
// then return (V exits), as they did before the bound, when V's jobs
// waited in the queue behind A's (a queued job holds no access to its
// map). (Before the bound: A's jobs filled the queue's 256 active slots,
// V's jobs waited behind them until the read was answered, and so did
// every user's asynchronous ODP pin release, and with it its device's
// unregistration.)
void ahead_past_user_bound(Scene &s, bool exits)
{
	const int n = kMaxActive + 8, v_pages = 2 * 16;
	const char *job = "sroce_ahead_work";
	unsigned nv, na;
	char ans[kLine];
	std::string file = s.fs.file();

	if (!s.start(s.v, "V", [&](int fd) {
		    return stall::victim_ahead(fd, s.dev);
	    }, &nv) ||
	    !s.start(s.a, "A", [&](int fd) {
		    return stall::attacker_ahead(fd, s.dev, file, n);
	    }, &na))
		return;
	long long refused = port_counter(s.dev, "odp_ahead_refused");
	bool flooded = say(s.a.fd, "flood") &&
		       s.returns(s.a, "A's READs", "flooded", limit_ms(kSetupS));
	CHECK(flooded, "A's streams of READs did not complete in %ld s",
	      kSetupS * time_scale());
	if (!flooded || !s.read_held() || !s.a_jobs_bounded(n, job, refused))
		return;
	// V's streams: its responders' jobs run beside A's stalled ones.
	JobCounts c0(s.dev);
	if (!s.ask(s.v, "V", "stream", ans, limit_ms(kSetupS)))
		return;
	std::vector<Ahead> vm;
	JobCounts c1 = c0;
	bool ran = wait_until(limit_ms(kBoundS), [&] {
		vm = aheads_of(s.dev, s.v.pid);
		c1 = JobCounts(s.dev);
		bool each = vm.size() == 2;
		for (const Ahead &x : vm)
			each = each && x.queued == 1 && x.run == 1;
		return each && c1.prefetched - c0.prefetched >= v_pages &&
		       s.ask(s.v, "V", "resident", ans, limit_ms(kSetupS)) &&
		       !strcmp(ans, ("resident " +
				     std::to_string(v_pages)).c_str());
	});
	Ahead am = ahead_of(s.dev, s.a.pid);
	bool ok = ran && c0.retired >= 0 && c1.retired == c0.retired &&
		  c1.prefetched - c0.prefetched == v_pages &&
		  c1.refused == c0.refused && am.queued == kUserAhead;
	CHECK(ok, "V's fault-ahead jobs did not run beside A's stalled ones "
	      "within %ld s: V's ODP MRs' jobs (queued/started) %s, expected "
	      "2 MRs at 1/1; V's %s, expected %d pages present; since V's "
	      "streams %s -> %s, expected %d pages prefetched, nothing else "
	      "moved; A's %s of %d streams, expected %d queued",
	      kBoundS * time_scale(), str(vm).c_str(), ans, v_pages,
	      c0.str().c_str(), c1.str().c_str(), v_pages, am.str().c_str(),
	      n, kUserAhead);
	if (exits) {
		// At exit, uverbs deregisters V's MRs (newer than its QPs),
		// then destroys the QPs.
		kill(s.v.pid, SIGKILL);
		int status = role_wait(s.v, limit_ms(kBoundS));
		CHECK(status == 128 + SIGKILL, "V, killed beside A's stalled "
		      "fault-ahead jobs, had not exited %ld s later (status "
		      "%d); V: %s", kBoundS * time_scale(), status,
		      stack_of(s.v.pid).c_str());
		s.fs.release();
		if (status < 0)
			role_wait(s.v, limit_ms(kAfterS));
		close(s.v.fd);
		s.v = {};
		return;
	}
	bool deregd = say(s.v.fd, "dereg") &&
		      s.returns(s.v, "V's ibv_dereg_mr", "deregd",
				limit_ms(kBoundS));
	CHECK(deregd, "V's ibv_dereg_mr hung: not returned %ld s after it was "
	      "called, beside A's stalled fault-ahead jobs; V: %s",
	      kBoundS * time_scale(), stack_of(s.v.pid).c_str());
	bool reregd = deregd && say(s.v.fd, "rereg") &&
		      s.returns(s.v, "V's ibv_rereg_mr", "reregd",
				limit_ms(kBoundS));
	CHECK(!deregd || reregd, "V's ibv_rereg_mr hung: not returned %ld s "
	      "after it was called, beside A's stalled fault-ahead jobs; V: "
	      "%s", kBoundS * time_scale(), stack_of(s.v.pid).c_str());
	s.fs.release();
	if (!deregd)
		s.comes_after(s.v, "V's ibv_dereg_mr", "deregd");
	else if (!reregd)
		s.comes_after(s.v, "V's ibv_rereg_mr", "reregd");
}

struct Test {
	const char *name;
	void (*fn)(Scene &);
};

const Test tests[] = {
	{ "destroy_other_user", [](Scene &s) { destroy_under_stall(s, true); } },
	{ "destroy_same_user", [](Scene &s) { destroy_under_stall(s, false); } },
	{ "doorbell_to_stalled_peer", doorbell_to_stalled_peer },
	{ "destroy_wq_full", destroy_wq_full },
	{ "dereg_odp_ahead_bound",
	  [](Scene &s) { ahead_past_user_bound(s, false); } },
	{ "exit_odp_ahead_bound",
	  [](Scene &s) { ahead_past_user_bound(s, true); } },
};

} // namespace

int main(int argc, char **argv)
{
	const Test *t = nullptr;

	for (const Test &x : tests)
		if (argc == 4 && !strcmp(argv[3], x.name))
			t = &x;
	if (!t) {
		fprintf(stderr, "usage: sroce-stall DEV DIR TEST\nTEST is one "
			"of:");
		for (const Test &x : tests)
			fprintf(stderr, " %s", x.name);
		fputc('\n', stderr);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "sroce-stall mounts a FUSE file system and "
			"reads kernel stacks: run it as root\n");
		return 2;
	}
	bool fuse_missing;
	{
		Scene s(argv[1], argv[2]);

		fuse_missing = !s.mount() && s.fuse_missing;
		if (!fuse_missing && !failures)
			t->fn(s);
	}
	if (fuse_missing) {
		printf("SKIP: %s: this kernel has no FUSE (CONFIG_FUSE_FS)\n",
		       t->name);
		return 77;
	}
	if (failures)
		return 1;
	printf("%s ok\n", t->name);
	return 0;
}
