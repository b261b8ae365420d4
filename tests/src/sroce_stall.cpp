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
// dereg_odp_wq_full: A fills ODP's fault-ahead workqueue (unbound, 256
//   active) with jobs of its own QPs' streams of READs, each waiting in the
//   fault of the file's page (an MR over 68 KiB of A's memory and the
//   file after it); V's own streams then queue V's jobs behind them,
//   inactive. V's ibv_dereg_mr of one MR and ibv_rereg_mr of the other
//   return; once the read is answered V's jobs run, find their MRs'
//   translations retired (odp_jobs_retired) and fault nothing in. (Before:
//   a queued job held an access to its map, and the dereg waited for it.)
// exit_odp_wq_full: the same, V killed instead: it exits, though uverbs
//   deregisters its MRs before its QPs, and at exit the wait of a dereg
//   cannot be killed (SIGKILL is dequeued by then).
#include "check.h"
#include "role.h"
#include "stall.h"
#include "stallfs.h"
#include "tasks.h"

#include <functional>
#include <string>

namespace {

using tasks::in_odp_fault;
using tasks::slurp;
using tasks::stack_of;
using tasks::stalled_workers;
using tasks::stat_of;
using tasks::wait_until;
using tasks::workers_under;

// The engine's workqueue (per CPU) and ODP's fault-ahead workqueue
// (unbound; one NUMA node in the VM): max_active 0 (WQ_DFL_ACTIVE)
const int kMaxActive = 256;

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

	// Within the bound, kMaxActive of sroce's workers wait in A's fault,
	// filling @queue: else said.
	bool fills(const char *queue)
	{
		std::string one;
		int workers = 0;
		bool full = wait_until(limit_ms(3 * kStallS), [&] {
			workers = stalled_workers(&one);
			return workers >= kMaxActive;
		});

		CHECK(full, "%d of sroce's workers wait in A's fault, not the "
		      "%d that fill %s; one: %s", workers, kMaxActive, queue,
		      one.c_str());
		return full;
	}

	// Within the bound, kMaxActive of sroce's workers running work
	// function @job wait in D state, filling @queue, at least one of them
	// in A's fault: else said, with where they wait. The others wait
	// behind the fault where it holds A's memory: a fault holds its
	// process's mmap lock for reading while it waits for the page, and a
	// task that asks for it for writing meanwhile (khugepaged, an
	// munmap, a stack to grow) waits behind it, and every job that asks
	// for it for reading after that (ib_umem_odp_map_dma_and_lock())
	// waits in down_read(), not in hmm_range_fault(), as long.
	bool fills_with(const char *queue, const char *job)
	{
		tasks::Waiting w;
		bool full = wait_until(limit_ms(3 * kStallS), [&] {
			w = workers_under(job);
			return w.n >= kMaxActive && w.in_fault > 0;
		});

		CHECK(full, "%d of sroce's workers in %s wait in D state, %d of "
		      "them in A's fault: expected the %d that fill %s, and "
		      "one at least in the fault. They wait in: %s. Workers "
		      "in %s not in D state: %d. Tasks waiting to write-lock "
		      "an rwsem: %s. A: %s. One in the fault: %s. Kernel "
		      "threads: %s", w.n, job,
		      w.in_fault, kMaxActive, queue, w.where().c_str(), job,
		      w.other, tasks::rwsem_writers().c_str(),
		      stack_of(a.pid).c_str(), w.fault_stack.c_str(),
		      tasks::kthread_census().c_str());
		return full;
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
	bool flooded = say(s.a.fd, "flood") &&
		       s.returns(s.a, "A's SENDs", "flooded", limit_ms(kBoundS));
	CHECK(flooded, "A's ibv_post_send of SENDs to its QPs of another "
	      "context did not return in %ld s (its doorbell runs them "
	      "itself?); A: %s", kBoundS * time_scale(),
	      stack_of(s.a.pid).c_str());
	if (!flooded || !s.read_held() ||
	    !s.fills("the engine's workqueue on CPU 0"))
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
	CHECK(workers >= kMaxActive, "only %d workers wait in A's fault now",
	      workers);
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

// dereg_odp_wq_full, exit_odp_wq_full.
void ahead_behind_full_queue(Scene &s, bool exits)
{
	const int n = kMaxActive + 8;
	const char *job = "sroce_ahead_work";
	unsigned nv, na;
	char ans[kLine];
	std::string file = s.fs.file();
	long long retired = port_counter(s.dev, "odp_jobs_retired");

	if (!s.start(s.v, "V", [&](int fd) {
		    return stall::victim_ahead(fd, s.dev);
	    }, &nv) ||
	    !s.start(s.a, "A", [&](int fd) {
		    return stall::attacker_ahead(fd, s.dev, file, n);
	    }, &na))
		return;
	bool flooded = say(s.a.fd, "flood") &&
		       s.returns(s.a, "A's READs", "flooded", limit_ms(kSetupS));
	CHECK(flooded, "A's streams of READs did not complete in %ld s",
	      kSetupS * time_scale());
	if (!flooded || !s.read_held() ||
	    !s.fills_with("the fault-ahead workqueue", job))
		return;
	// A second more: any job the queue would still start has started.
	timespec settle = { time_scale(), 0 };
	nanosleep(&settle, nullptr);
	tasks::Waiting w = workers_under(job);
	int workers = w.n + w.other;
	CHECK(workers < n, "all %d of A's fault-ahead jobs run at once: the "
	      "queue is not full (max_active above %d?); they wait in: %s",
	      workers, kMaxActive, w.where().c_str());
	// V's streams: its responders' jobs wait, inactive, behind A's.
	if (workers >= n ||
	    !s.ask(s.v, "V", "stream", ans, limit_ms(kSetupS)) ||
	    !s.ask(s.v, "V", "resident", ans, limit_ms(kSetupS)))
		return;
	CHECK(!strcmp(ans, "resident 0"), "V's fault-ahead jobs ran (%s): "
	      "they were not queued behind A's", ans);
	if (exits) {
		// At exit, uverbs deregisters V's MRs (newer than its QPs)
		// before it destroys the QPs whose jobs are queued.
		kill(s.v.pid, SIGKILL);
		int status = role_wait(s.v, limit_ms(kBoundS));
		CHECK(status == 128 + SIGKILL, "V, killed with its MRs' jobs "
		      "queued behind A's stalled ones, had not exited %ld s "
		      "later (status %d); V: %s", kBoundS * time_scale(),
		      status, stack_of(s.v.pid).c_str());
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
	      "called, its MR's job queued behind A's stalled ones; V: %s",
	      kBoundS * time_scale(), stack_of(s.v.pid).c_str());
	bool reregd = deregd && say(s.v.fd, "rereg") &&
		      s.returns(s.v, "V's ibv_rereg_mr", "reregd",
				limit_ms(kBoundS));
	CHECK(!deregd || reregd, "V's ibv_rereg_mr hung: not returned %ld s "
	      "after it was called, its MR's job queued behind A's stalled "
	      "ones; V: %s", kBoundS * time_scale(),
	      stack_of(s.v.pid).c_str());
	s.fs.release();
	if (!deregd)
		s.comes_after(s.v, "V's ibv_dereg_mr", "deregd");
	else if (!reregd)
		s.comes_after(s.v, "V's ibv_rereg_mr", "reregd");
	// V's two jobs ran at last, found their translations retired and
	// faulted nothing in.
	long long now = -1;
	bool ran = wait_until(limit_ms(kAfterS), [&] {
		now = port_counter(s.dev, "odp_jobs_retired");
		return retired >= 0 && now >= retired + 2;
	});
	CHECK(ran && now == retired + 2, "odp_jobs_retired %lld, then %lld: "
	      "expected V's 2 jobs to find their MRs' translations retired",
	      retired, now);
	if (s.ask(s.v, "V", "resident", ans, limit_ms(kSetupS)))
		CHECK(!strcmp(ans, "resident 0"), "V's jobs faulted memory of "
		      "a deregistered or re-registered MR in: %s", ans);
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
	{ "dereg_odp_wq_full",
	  [](Scene &s) { ahead_behind_full_queue(s, false); } },
	{ "exit_odp_wq_full",
	  [](Scene &s) { ahead_behind_full_queue(s, true); } },
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
