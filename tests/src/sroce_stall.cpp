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
//   sroce-stall DEV DIR TEST [DEV2]   DIR: an empty folder to mount on
//                                     (root); DEV2: two_devices_one_queue's
//                                     second device
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
//   the fault (in a worker, of sroce_user_65534, the engine's queue for
//   A's QPs: the worker's name says so), and V destroys its QP. Once the
//   read is answered, A's receive holds V's bytes. (Before: V's doorbell
//   ran A's QP itself and waited in A's fault.)
// destroy_wq_full: A fills its engine workqueue's 16 active items on CPU
//   0 with runs of its own QPs, each waiting in the fault (UD receives into
//   the FUSE page, sent by A from a second context): 24 runs queued, 16
//   workers of A's queue waiting in D state, the other 8 runs inactive.
//   Then A sends V a packet there: V's QP runs on V's own queue and
//   receives it at once. A sends a packet to a QP of A2, another process
//   of A's user, whose receive is in pinned memory: that run waits,
//   inactive, behind A's 16 (one queue per user, not per context nor
//   per process), and still no more than 16 of A's workers wait. A2
//   destroys that QP: the destroy drops the packet and takes the item off
//   the queue itself. (A QP of A's own process could not be destroyed
//   before the stall ends, whatever the queues: its destroy's munmap() of
//   the rings waits for A's mmap lock, which A's stalled faults hold.)
//   Every worker of A's runs in D state runs an item of sroce_user_65534
//   (its name says so), and no thread in the fault is a workqueue's
//   rescuer: users' queues have none. (Before: all users' QPs shared one
//   queue, sroce_user, and V's run waited inactive behind A's until the
//   read was answered; before that, the destroy of a QP whose item was
//   inactive waited for a worker to run it; and while users' QPs shared
//   the WQ_MEM_RECLAIM queue with kernel QPs, its rescuer could take A's
//   runs and stall.)
// two_devices_one_queue: A's queue is one for every device. A fills it
//   on CPU 0 as in destroy_wq_full, its 24 QPs on DEV, then sends from a
//   context on DEV2 to a QP of its own there, in another context, whose
//   receive is in pinned memory: its run waits, inactive, behind A's 16
//   stalled ones on DEV (with a queue per device it would run at once),
//   and runs once the read is answered. Then A destroys its QPs on DEV,
//   and its QP on DEV2 still receives a SEND (the queue, which DEV2's
//   record holds, was not destroyed with DEV's last hold); then those on
//   DEV2, so that DEV2's record gives the queue's last hold back and
//   destroys it; A's next QP, on DEV2, makes a new
//   queue and receives a SEND at once.
// odp_ahead_bound: A's 264 RC QPs' streams of READs, out of an MR over 68
//   KiB of A's memory and the file after it, each would queue a
//   fault-ahead job for the file's page: A gets its bound of them, 16,
//   which wait in the fault, and the rest queue none (odp_ahead_refused).
//   V's own streams then queue V's jobs, which run at once beside A's and
//   fault V's ranges in. Then A's counts come back: once the read is
//   answered A's jobs end and the device's odp_ahead_held is back to 0;
//   the server holds reads again, and A's 264 streams get 16 jobs again,
//   the rest none. The premise is read from the MRs' counts ("rdma
//   resource show mr -dd": ahead_queued, ahead_run) and the device's.
//   (Before the bound: A's 264 jobs filled ODP's fault-ahead workqueue,
//   256 active, and V's waited behind them until the read was answered.)
// dereg_odp_ahead_queued: sroce_odp runs 8 jobs at once (its max_active,
//   which root may set: the test sets it, and sets it back whatever
//   happens). A's 16 streams get 16 jobs, of which 8 start and wait in
//   the fault, and the other 8 wait inactive behind them; V's streams
//   then queue V's jobs behind those. V's ibv_dereg_mr of one MR and
//   ibv_rereg_mr of the other return while V's jobs still wait; once the
//   read is answered they run, find their MRs' translations retired
//   (odp_jobs_retired +2) and fault nothing in. The premise is read from
//   the counts: A's MR counts 16 jobs queued, 8 started; right before
//   V's call and again once it returned, each ODP MR V still has counts
//   its job queued, not started, and the device counts no job retired
//   and no page prefetched since V's streams, V's 2 jobs still holding
//   their counts (odp_ahead_held). (Before pending/inline-hold a queued
//   job held an access to its map, and V's dereg waited for it.)
// exit_odp_ahead_queued: the same, V killed instead: it exits, though
//   uverbs deregisters its MRs before its QPs (newest first: V makes its
//   MRs last), and at exit the wait of a
//   dereg cannot be killed (SIGKILL is dequeued by then). Its QPs'
//   destroy took its jobs off the queue: odp_ahead_held down by 2, no
//   job retired, no page prefetched, then and once A's jobs all ran.
// release_isolation: A's user's release work item waits in one release:
//   A's ODP MR over the FUSE page is orphaned (a child's dereg, waiting
//   for the access of A's SEND stalled in the fault, killed), A's threads
//   keep A's mm invalidating (madvise(MADV_FREE) over an ODP range of
//   A's, each call a walk of 512 MiB of page tables that map the zero
//   page), and once the read is answered the MR's release waits in
//   mmu_interval_notifier_remove(), the premise, seen in the worker's
//   stack, still 1 s later; a release that ran through a gap in the
//   storm is followed by another try, with another MR, up to 3 (no
//   invalidation can be held open for sure: a storm it is). It counts
//   one page (release_backlog_pages 1) while it waits.
//   A pinned MR that A2, another process of A's uid, orphans (orphan.h:
//   a dereg killed while it waits for an access the test holds) waits
//   behind it: A2's VmPin stays up and the device counts its pages
//   waiting. V's orphaned MR is released at once (V's VmPin back). Once
//   A's storm stops, every release runs and the backlog is 0. The
//   orphans share one deadline, 60 s unscaled, so that A's release waits
//   in D state well under the hung-task detector's 120 s. Where the
//   kernel has no such hold (Debian's: no fault injection) the test is not
//   run (77): nothing else keeps a pinned MR's map in use for a kill to
//   meet. (Before, rounds of a kill racing a stream's copies, which on
//   6.1 under TCG never met one in 300.)
//   (Before engine-peruser-v5 A2's release ran at once; before v7 A's
//   release counted nothing while it ran.)
// release_backlog_bound: the same with max_user_release_mb 1 (the test
//   sets it, and back), A2's orphan a 64 KiB MR over a transparent huge
//   page (its AnonHugePages checked before and after), which holds, and
//   counts, the huge page's 512 pages: past A's user's bound, and its
//   next ibv_reg_mr fails with ENOMEM (release_backlog_refused +1), while
//   V's succeeds; once released, A2 registers again. Without a huge page
//   A2 orphans 1 MiB instead and the test reports itself not run (77).
//   (Before engine-peruser-v6 it succeeded: nothing bounded what waits;
//   before v7 the MR counted 16 pages.)
#include "check.h"
#include "orphan.h"
#include "role.h"
#include "stall.h"
#include "stallfs.h"
#include "tasks.h"

#include <algorithm>
#include <fcntl.h>
#include <functional>
#include <map>
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

// The engine's workqueue for A's QPs (per CPU; each user has its own,
// sroce_user_UID, and A is uid 65534): its name, and its max_active
// (SROCE_USER_WQ_ACTIVE, kernel/sroce_task.c)
const char *const kUserQueue = "sroce_user_65534";
const int kMaxActive = 16;
// The frame a QP's run in a worker shows: the work function,
// sroce_qp_work(), tail-calls sroce_qp_run() (a jmp, no frame of its own
// on the stack). Workers are kernel threads; a doorbell's run, in a
// process, shows it too.
const char *const kRunFrame = "sroce_qp_run";
// The fault-ahead jobs a user may have queued or running on all devices
// (SROCE_ODP_USER_AHEAD, kernel/sroce_odp.c)
const int kUserAhead = 16;
// A's streams in odp_ahead_bound, far more than its bound: as many as
// filled sroce_odp's 256 active slots before the bound.
const int kAheadStreams = 264;
// ODP's fault-ahead workqueue, sroce_odp, is WQ_SYSFS: root may set how
// many of its jobs run at once (Documentation/sroce.md, "Fault-ahead").
const char *const kOdpMaxActive =
	"/sys/bus/workqueue/devices/sroce_odp/max_active";
// ... which *_odp_ahead_queued set to 8, WQ_DFL_MIN_ACTIVE: from 6.9 a
// lower value would also lower the queue's min_active until sroce is
// reloaded. One NUMA node (the VM): 8 at once in all, on 6.1 (each node's
// pool_workqueue) and 6.12 (a node's share, at least min_active) alike.
const int kQueueActive = 8;
static_assert(kQueueActive < kUserAhead,
	      "A's jobs past the first kQueueActive must wait inactive");

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
// neither); and the pages they (or ibv_advise_mr()) made present
// (pages_prefetched). -1: not shown.
struct Ahead {
	long long queued = -1, run = -1, prefetched = -1;

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
			      res_field(o, "drv_ahead_run"),
			      res_field(o, "drv_pages_prefetched") });
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

// The device's counts of what fault-ahead jobs did (hw_counters): those
// that found their map retired when their turn came (odp_jobs_retired),
// the pages jobs faulted in (odp_pages_prefetched: only fault-ahead jobs
// and ibv_advise_mr() count there, a message's own faults do not), the
// messages of a stream that queued no job past a user's bound or all
// users' (odp_ahead_refused), and the jobs queued or running now, each
// holding its count of its user's and all users' (odp_ahead_held, a
// level: back down when they end or are cancelled).
struct JobCounts {
	long long retired, prefetched, refused, held;

	explicit JobCounts(const char *dev)
		: retired(port_counter(dev, "odp_jobs_retired")),
		  prefetched(port_counter(dev, "odp_pages_prefetched")),
		  refused(port_counter(dev, "odp_ahead_refused")),
		  held(port_counter(dev, "odp_ahead_held"))
	{
	}

	std::string str() const
	{
		return "odp_jobs_retired " + std::to_string(retired) +
		       ", odp_pages_prefetched " + std::to_string(prefetched) +
		       ", odp_ahead_refused " + std::to_string(refused) +
		       ", odp_ahead_held " + std::to_string(held);
	}
};

// A number in a sysfs file set for a test, and set back when this goes,
// whatever happened (odp_stall_isolation.sh sets it back too, should the
// test be killed): sroce_odp's max_active, a module parameter of
// sroce's. @missing says why the file may be missing.
class Setting {
public:
	Setting(const char *path, const char *missing)
		: path_(path), missing_(missing)
	{
	}
	Setting(const Setting &) = delete;
	Setting &operator=(const Setting &) = delete;

	// To @n, read back. False (said) if it could not be.
	bool set(int n)
	{
		int err = 0;

		was_ = get();
		bool ok = was_ >= 0 && put(n, &err) && get() == n;
		CHECK(ok, "setting %s to %d: %s (it was %d, now %d; -1: no such "
		      "file: %s)", path_, n, strerror(err), was_, get(),
		      missing_);
		return ok;
	}

	~Setting()
	{
		int err = 0;

		if (was_ < 0)
			return;
		bool ok = put(was_, &err) && get() == was_;
		CHECK(ok, "setting %s back to %d: %s (now %d)", path_, was_,
		      strerror(err), get());
	}

private:
	int get() const
	{
		std::string v = slurp(path_);

		return v.empty() ? -1 : atoi(v.c_str());
	}

	bool put(int n, int *err) const
	{
		std::string v = std::to_string(n);
		int fd = open(path_, O_WRONLY);
		bool ok = fd >= 0 &&
			  write(fd, v.data(), v.size()) == ssize_t(v.size());

		*err = ok ? 0 : errno;
		if (fd >= 0)
			close(fd);
		return ok;
	}

	const char *path_;
	const char *missing_;
	int was_ = -1;
};

// A test's world: the file system, V and A (and A2, another process of
// A's user, in destroy_wq_full and release_*). Whatever happened, it ends by
// answering the reads held (or, if the server does not, aborting its
// connection), letting V and A end (each must, in time, with status 0)
// and unmounting (which aborts the connection first, in case).
struct Scene {
	const char *dev;
	const char *dev2;	// a second device, or nullptr
	std::string dir;
	StallFs fs;
	Role v, a, a2;
	bool fuse_missing = false;
	// the device's ODP counts before A's flood (a_flood_stalls())
	long long flood_inval = -1, flood_faults = -1;

	Scene(const char *d, const char *d2, const char *mnt)
		: dev(d), dev2(d2), dir(mnt)
	{
	}

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
	// run is scheduled, so @n runs of A's QPs were queued on A's
	// engine workqueue), and one at least of sroce's workers waits in
	// A's fault: the premise of destroy_wq_full, else said. Every run of
	// A's waits on the same held read, so with @n over kMaxActive A's
	// queue has kMaxActive of A's runs active and the rest inactive,
	// and a run of A's queued after them is inactive too. How many
	// workers took them is the workqueue's business, not a condition
	// here: the pool makes them one at a time, a few a second in a TCG
	// VM (a_queue_full() waits for them). (When the
	// engine's one queue had a rescuer, on 6.1 the rescuer, sent once
	// making a worker took over 10 ms, took every active item that had
	// no worker and ran them one at a time, the first waiting in the
	// fault: 130 of 256 workers were seen there once.)
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

	// Every worker waiting in A's fault in a QP's run (kRunFrame; not an
	// ODP job's) runs an item of sroce_user_65534, the engine's queue
	// for A's QPs, which its name shows (tasks::queue_running()), one at
	// least: A's QPs run there, as the queue is chosen at create for whom
	// the QP is made (sroce_task_qp_init()), never sroce_kernel, the
	// kernel QPs' WQ_MEM_RECLAIM queue, nor another user's (nor
	// "sroce_user", the one queue of all users' QPs before). Else said,
	// @when.
	bool on_user_queue(const char *when)
	{
		std::map<std::string, int> queues;
		std::string one;
		int n = stalled_workers(&one, kRunFrame, nullptr, &queues);
		bool ok = n >= 1 && queues.size() == 1 &&
			  queues.count(kUserQueue);

		CHECK(ok, "%s: the %d workers in A's fault under %s run items "
		      "of %s; expected all of %s (the engine's queue for A's "
		      "QPs). One: %s", when, n, kRunFrame,
		      tasks::queues_str(queues).c_str(), kUserQueue,
		      one.c_str());
		return ok;
	}

	// Within @ms, exactly kMaxActive of sroce's workers in D state run
	// A's QPs (kRunFrame, an item of kUserQueue each, one at least in
	// A's fault), and no other worker of kRunFrame is in D state:
	// A's queue has on CPU 0 its max_active of A's runs, each with a
	// worker of its own, waiting for the held read (a run that waits
	// behind the fault for A's mmap lock waits as long), and no more, the
	// rest of A's runs inactive. Until then, an item queued on CPU 0 after
	// A's, of any queue, would wait for the pool to make workers for A's
	// (one at a time, a few a second in a TCG VM): a worker for each of
	// A's is the premise of "V's run gets one at once". Else said, @when.
	bool a_queue_full(const char *when, long ms)
	{
		tasks::Waiting w;
		bool full = wait_until(ms, [&] {
			w = workers_under(kRunFrame);
			return w.n >= kMaxActive;
		});

		full = full && w.n == kMaxActive && w.in_fault >= 1 &&
		       w.queues.size() == 1 && w.queues.count(kUserQueue) &&
		       w.queues.at(kUserQueue) == kMaxActive;
		CHECK(full, "%s: %d of sroce's workers in D state under %s "
		      "(%d in A's fault), running items of %s, within %ld s; "
		      "expected exactly %d, all of %s (the max_active of A's "
		      "queue on CPU 0; more: A's runs past it ran). They wait "
		      "in: %s. Not in D state: %d. One in the fault: %s. Kernel "
		      "threads: %s", when, w.n, kRunFrame, w.in_fault,
		      tasks::queues_str(w.queues).c_str(), ms / 1000,
		      kMaxActive, kUserQueue, w.where().c_str(), w.other,
		      w.fault_stack.c_str(), tasks::kthread_census().c_str());
		return full;
	}

	// A, attacker_flood() with @n QPs (and its own QP on @own_dev, if
	// given), starts; its SENDs to its @n QPs ("flood", which only queue
	// their work: they are of another context) return in time, and those
	// QPs' runs wait in A's fault, filling A's queue on CPU 0
	// (engine_held(), a_queue_full()): the premise of destroy_wq_full and
	// two_devices_one_queue. Else said.
	bool a_flood_stalls(int n, const char *own_dev = nullptr)
	{
		std::string file = fs.file();
		unsigned na;

		if (!start(a, "A", [&](int fd) {
			    return stall::attacker_flood(fd, dev, file, n,
							 own_dev);
		    }, &na))
			return false;
		flood_inval = port_counter(dev, "odp_pages_invalidated");
		flood_faults = port_counter(dev, "odp_page_faults");
		Counts f0(dev);
		bool flooded = say(a.fd, "flood") &&
			       returns(a, "A's SENDs", "flooded",
				       limit_ms(kBoundS));

		CHECK(flooded, "A's ibv_post_send of SENDs to its QPs of "
		      "another context did not return in %ld s (its doorbell "
		      "runs them itself?); A: %s", kBoundS * time_scale(),
		      stack_of(a.pid).c_str());
		return flooded && read_held() && engine_held(f0, n) &&
		       a_queue_full("A's runs in the fault",
				    limit_ms(3 * kStallS));
	}

	// Once the read is answered, all of A's @n flooded receives complete
	// well; else said, with the device's ODP counts since the flood.
	void a_flood_received(int n)
	{
		char ans[kLine];

		ask(a, "A", "recvd " + std::to_string(limit_ms(kAfterS)), ans,
		    limit_ms(kAfterS) + limit_ms(kSetupS));
		// "recvd GOT BAD STATUS:COUNT...": each status of those that
		// came.
		int got = -1, bad = -1;
		bool read = sscanf(ans, "recvd %d %d", &got, &bad) == 2;
		CHECK(read && got == n && bad == 0, "A's %d receives once the "
		      "read was answered: '%s' (received, failed; then each "
		      "completion status, ibv_wc_status, and how many had it: "
		      "4 LOC_PROT_ERR is a fault that failed); "
		      "odp_pages_invalidated +%lld, odp_page_faults +%lld "
		      "since the flood", n, ans,
		      port_counter(dev, "odp_pages_invalidated") - flood_inval,
		      port_counter(dev, "odp_page_faults") - flood_faults);
	}

	// A's streams of READs ("flood"): all completed in time, else said.
	bool a_streams(const char *round)
	{
		bool flooded = say(a.fd, "flood") &&
			       returns(a, "A's READs", "flooded",
				       limit_ms(kSetupS));

		CHECK(flooded, "A's streams of READs%s did not complete in "
		      "%ld s", round, kSetupS * time_scale());
		return flooded;
	}

	// Within the bound, A's fault-ahead jobs are held as they must be
	// (the premise of the *_odp_ahead_* tests), as A's ODP MR counts them
	// ("rdma resource show mr -dd", which shows root any user's counts)
	// since @a0 and the device counts the rest since @before: of A's @n
	// streams, up to A's bound (kUserAhead) queued their job
	// (ahead_queued, and odp_ahead_held as many up), the others none
	// (odp_ahead_refused); of those jobs exactly @active started
	// (ahead_run, a job counting as it starts) if the queue's max_active
	// was set to @active, else (0) one at least and no more than were
	// queued; and one at least of sroce's workers running @job waits in D
	// state in A's fault. A's jobs wait there until the read is answered,
	// each holding its count of A's: no other stream of A's may queue one
	// meanwhile, and no job queued after @active stalled ones may start.
	// Else said, with where sroce's workers wait and a census of the
	// kernel threads. Of those in D state, some may wait behind the fault
	// where it holds A's memory: a fault holds its process's mmap lock
	// for reading while it waits for the page, and a task that asks for
	// it for writing meanwhile (khugepaged, an munmap, a stack to grow)
	// waits behind it, and every job that asks for it for reading after
	// that (ib_umem_odp_map_dma_and_lock()) waits in down_read(), not in
	// hmm_range_fault(), as long.
	bool a_jobs_held(int n, const char *job, const JobCounts &before,
			 const Ahead &a0, int active)
	{
		const long long admitted = std::min(n, kUserAhead);
		const long long queued = a0.queued + admitted;
		const long long run_min = a0.run + (active ? active : 1);
		tasks::Waiting w;
		Ahead c;
		JobCounts now = before;
		bool held = wait_until(limit_ms(3 * kStallS), [&] {
			c = ahead_of(dev, a.pid);
			now = JobCounts(dev);
			if (c.queued < queued || c.run < run_min)
				return false;
			w = workers_under(job);
			return w.in_fault > 0;
		});
		std::string started = active ?
			"exactly " + std::to_string(run_min) + " started: the "
			"queue runs " + std::to_string(active) + " at once" :
			"one to all of them started";

		held = held && c.queued == queued &&
		       (active ? c.run == run_min : c.run <= c.queued) &&
		       before.refused >= 0 &&
		       now.refused - before.refused == n - admitted &&
		       before.held >= 0 && now.held - before.held == admitted &&
		       w.in_fault > 0;
		if (!held)
			w = workers_under(job);
		CHECK(held, "A's fault-ahead jobs: %s (queued/started, of %d "
		      "streams, from %s; expected %lld queued, %s), "
		      "odp_ahead_refused +%lld and odp_ahead_held +%lld "
		      "(expected +%lld and +%lld), and %d of sroce's workers in "
		      "%s in A's fault (expected one at least), within %ld s. "
		      "Workers in %s in D state: %d; they wait in: %s. "
		      "Workers in %s not in D state: %d. Tasks waiting to "
		      "write-lock an rwsem: %s. A: %s. One in the fault: %s. "
		      "Kernel threads: %s", c.str().c_str(), n,
		      a0.str().c_str(), queued, started.c_str(),
		      now.refused - before.refused, now.held - before.held,
		      n - admitted, admitted, w.in_fault, job,
		      3 * kStallS * time_scale(), job, w.n, w.where().c_str(),
		      job, w.other, tasks::rwsem_writers().c_str(),
		      stack_of(a.pid).c_str(), w.fault_stack.c_str(),
		      tasks::kthread_census().c_str());
		return held;
	}

	// Within the bound once the read is answered, every job of A's has
	// run and ended, @when: A's MR counts as many started as queued, and
	// the device's odp_ahead_held is back to @before's, the level before
	// A's streams (each job gave its counts back: the level drops after
	// A's count and all users'). Else said.
	bool a_jobs_ended(const JobCounts &before, const char *when)
	{
		Ahead c;
		JobCounts now = before;
		bool ended = wait_until(limit_ms(kAfterS), [&] {
			c = ahead_of(dev, a.pid);
			now = JobCounts(dev);
			return c.queued > 0 && c.run == c.queued &&
			       now.held == before.held;
		});

		CHECK(ended, "%s: A's fault-ahead jobs %s (queued/started), "
		      "odp_ahead_held %lld, %ld s after the read was answered; "
		      "expected all started and ended, odp_ahead_held back to "
		      "%lld (a count not given back?). Workers in "
		      "sroce_ahead_work: %s", when, c.str().c_str(), now.held,
		      kAfterS * time_scale(), before.held,
		      workers_under("sroce_ahead_work").where().c_str());
		return ended;
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
		// A server that does not answer (stuck) fails the test, and
		// its connection is aborted: the reads held fail, and every
		// task waiting for one goes on.
		bool released = fs.release(limit_ms(kBoundS));
		CHECK(released, "StallFs's server did not answer the reads it "
		      "held within %ld s: its connection aborted",
		      kBoundS * time_scale());
		if (!released)
			fs.abort();
		int va = v.pid > 0 ? role_end(v, limit_ms(kAfterS)) : 0;
		int aa = a.pid > 0 ? role_end(a, limit_ms(kAfterS)) : 0;
		int a2a = a2.pid > 0 ? role_end(a2, limit_ms(kAfterS)) : 0;
		CHECK(va == 0 && aa == 0 && a2a == 0, "V ended with %d, A with "
		      "%d, A2 with %d (-1: still running %ld s after the read "
		      "was answered)", va, aa, a2a, kAfterS * time_scale());
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
		if (seen)
			s.on_user_queue("A's QP's run");
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
	unsigned vq, oq;
	char ans[kLine];
	std::string one;
	int workers = 0;

	if (!s.start(s.v, "V", [&](int fd) {
		    return stall::victim(fd, s.dev, IBV_QPT_UD);
	    }, &vq) ||
	    !s.start(s.a2, "A2", [&](int fd) {
		    return stall::attacker_own(fd, s.dev);
	    }, &oq) ||
	    !s.a_flood_stalls(n))
		return;
	// V's QP runs on V's own queue: a worker takes it at once.
	Counts c0(s.dev);
	if (!s.ask(s.a, "A", "send " + std::to_string(vq), ans,
		   limit_ms(kBoundS)))
		return;
	CHECK(!strcmp(ans, "sent 0"), "A's SEND to V: '%s'", ans);
	s.ask(s.v, "V", "recv " + std::to_string(limit_ms(kRecvS)), ans,
	      limit_ms(kSetupS));
	CHECK(!strcmp(ans, "recv ok"), "V's receive of A's SEND: '%s' within "
	      "%ld s, expected ok: V's QP's run waits, inactive, behind A's "
	      "stalled ones (one workqueue for both users' QPs?)", ans,
	      kRecvS * time_scale());
	expect_delivered(s.dev, c0, "A's SEND to V");
	// The run of A2's QP (A's user's other process), queued after A's
	// stalled ones on A's user's queue, waits inactive behind them,
	// though it would need no fault: its context and its process are not
	// theirs, but its user is.
	Counts c1(s.dev);
	if (!s.ask(s.a, "A", "send " + std::to_string(oq), ans,
		   limit_ms(kBoundS)))
		return;
	CHECK(!strcmp(ans, "sent 0"), "A's SEND to A2's QP: '%s'", ans);
	expect_delivered(s.dev, c1, "A's SEND to A2's QP");
	s.ask(s.a2, "A2", "recv " + std::to_string(limit_ms(kQuietS)), ans,
	      limit_ms(kSetupS));
	CHECK(!strcmp(ans, "recv none"), "A2's QP's receive into pinned "
	      "memory: '%s' while its run should wait, inactive, behind A's "
	      "%d stalled ones (A's user's workqueue was not full? a queue "
	      "per context, or per process?)", ans, kMaxActive);
	if (!s.a_queue_full("once V received and A sent to A2's QP", 0))
		return;
	std::string rescuers;
	workers = stalled_workers(&one, nullptr, &rescuers);
	CHECK(workers >= 1, "no worker waits in A's fault now");
	CHECK(rescuers.empty(), "a workqueue's rescuer waits in A's fault: "
	      "%s(of %d threads there; expected none: the engine runs users' "
	      "QPs on queues without one, and a rescuer that runs one of "
	      "A's runs serves no other item until A's stall ends); one: %s",
	      rescuers.c_str(), workers, one.c_str());
	s.on_user_queue("A's runs, A's workqueue full");
	// The destroy of A2's QP, whose work item is inactive behind A's,
	// drops the packet and takes the item off the queue, needing no
	// worker. (In A's own process it would wait for A's stall all the
	// same, whatever the queue: libsroce's destroy unmaps the QP's rings,
	// and munmap() waits for A's mmap lock, which each of A's stalled
	// faults holds for reading.)
	bool destroyed = say(s.a2.fd, "destroy") &&
			 s.returns(s.a2, "A2's ibv_destroy_qp of its QP",
				   "destroyed", limit_ms(kBoundS));
	CHECK(destroyed, "A2's ibv_destroy_qp of its QP hung: not returned %ld "
	      "s after it was called, its work item inactive behind A's "
	      "stalled ones on their user's queue; A2: %s",
	      kBoundS * time_scale(), stack_of(s.a2.pid).c_str());
	s.fs.release();
	if (!destroyed)
		s.comes_after(s.a2, "A2's ibv_destroy_qp of its QP",
			      "destroyed");
	s.a_flood_received(n);
}

// two_devices_one_queue.
void two_devices_one_queue(Scene &s)
{
	const int n = kMaxActive + 8;
	char ans[kLine];

	if (!s.a_flood_stalls(n, s.dev2))
		return;
	// A's QP on the second device, queued after A's stalled runs on
	// CPU 0, waits inactive behind them on A's one queue.
	Counts c1(s.dev2);
	if (!s.ask(s.a, "A", "own", ans, limit_ms(kBoundS)))
		return;
	CHECK(!strcmp(ans, "sent 0"), "A's SEND to its QP on %s: '%s'",
	      s.dev2, ans);
	expect_delivered(s.dev2, c1, "A's SEND to its QP on the second device");
	s.ask(s.a, "A", "ownrecv " + std::to_string(limit_ms(kQuietS)), ans,
	      limit_ms(kSetupS));
	CHECK(!strcmp(ans, "recv none"), "A's QP on %s, its receive into "
	      "pinned memory: '%s' while its run should wait, inactive, "
	      "behind A's %d stalled ones on %s (a queue per device?)",
	      s.dev2, ans, kMaxActive, s.dev);
	s.a_queue_full("once A sent to its QP on the second device", 0);
	s.fs.release();
	s.a_flood_received(n);
	s.ask(s.a, "A", "ownrecv " + std::to_string(limit_ms(kAfterS)), ans,
	      limit_ms(kAfterS) + limit_ms(kSetupS));
	CHECK(!strcmp(ans, "recv ok"), "A's QP on %s, once the read was "
	      "answered: '%s'", s.dev2, ans);
	// A's QPs on the first device go first. The second device's record
	// still holds the queue: A's QP there runs on it (a queue destroyed
	// with the first device's last hold would leave it a freed queue:
	// no receive, or KASAN's report).
	bool destroyed = say(s.a.fd, "destroyfirst") &&
			 s.returns(s.a, "A's ibv_destroy_qp of its QPs on the "
				   "first device", "destroyed",
				   limit_ms(kBoundS));
	CHECK(destroyed, "A's ibv_destroy_qp of its QPs on %s did not all "
	      "return within %ld s; A: %s", s.dev, kBoundS * time_scale(),
	      stack_of(s.a.pid).c_str());
	if (!destroyed)
		return;
	s.ask(s.a, "A", "ownagain " + std::to_string(limit_ms(kRecvS)), ans,
	      limit_ms(kRecvS) + limit_ms(kSetupS));
	CHECK(!strcmp(ans, "again ok"), "A's QP on %s once A's QPs on %s "
	      "went: '%s', expected its receive of a SEND within %ld s",
	      s.dev2, s.dev, ans, kRecvS * time_scale());
	// Then those on the second: its record gives the queue's last hold
	// back, and the queue is destroyed. A's next QP makes a new one,
	// which runs.
	destroyed = say(s.a.fd, "destroyall") &&
		    s.returns(s.a, "A's ibv_destroy_qp of every QP",
			      "destroyed", limit_ms(kBoundS));
	CHECK(destroyed, "A's ibv_destroy_qp of its QPs did not all return "
	      "within %ld s; A: %s", kBoundS * time_scale(),
	      stack_of(s.a.pid).c_str());
	if (!destroyed)
		return;
	s.ask(s.a, "A", "fresh " + std::to_string(limit_ms(kRecvS)), ans,
	      limit_ms(kSetupS));
	CHECK(!strcmp(ans, "fresh ok"), "A's first QP after all went, on %s: "
	      "'%s', expected its receive of a SEND within %ld s", s.dev2, ans,
	      kRecvS * time_scale());
}

// The device's level of fault-ahead jobs before a test's: 0, as no other
// test runs and a test's jobs end with its QPs. Else said.
JobCounts jobs_at_start(const char *dev)
{
	JobCounts j(dev);

	CHECK(j.held == 0, "odp_ahead_held %lld before the test, expected 0 "
	      "(-1: no such counter): a fault-ahead job of another process "
	      "queued or running, or a count that was not given back",
	      j.held);
	return j;
}

// odp_ahead_bound.
//
// A's 264 streams, whose jobs wait in the fault, get kUserAhead jobs, the
// rest none (a_jobs_held()): so A holds that many workers, and V's
// streams then queue their jobs, which run at once and fault V's ranges
// in, all within the bound: V's MRs count each its job queued and
// started, V's 32 pages of those ranges are present, the device counts
// them prefetched and their counts given back (odp_ahead_held back to
// A's), no job retired and no stream of V's refused. (Before the bound:
// A's jobs filled the queue's 256 active slots, V's jobs waited behind
// them until the read was answered, and so did every user's asynchronous
// ODP pin release, and with it its device's unregistration.)
//
// Then A's counts come back. Once the read is answered, A's jobs end and
// odp_ahead_held is back to where it was (a_jobs_ended()); the server
// holds reads again, its file's pages dropped, and A's 264 streams again
// get exactly kUserAhead jobs, which wait in the fault, and the rest none.
// A count of A's that a job did not give back would leave A fewer jobs
// and refuse more streams; a job that never gives its counts back (no
// sroce_ahead_unhold()) would leave odp_ahead_held up, as the counts and
// the level are taken and dropped together (sroce_ahead_hold(),
// sroce_ahead_unhold()). The level is no witness of the count of all
// users' alone: a lost decrement of it, or an extra increment, shows
// only in the module's WARN at unload (sroce_odp_exit()).
void ahead_user_bound(Scene &s)
{
	const int n = kAheadStreams, v_pages = 2 * 16;
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
	JobCounts j0 = jobs_at_start(s.dev);
	if (!s.a_streams("") || !s.read_held() ||
	    !s.a_jobs_held(n, job, j0, { 0, 0, 0 }, 0))
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
		       c1.held == c0.held &&
		       s.ask(s.v, "V", "resident", ans, limit_ms(kSetupS)) &&
		       !strcmp(ans, ("resident " +
				     std::to_string(v_pages)).c_str());
	});
	Ahead am = ahead_of(s.dev, s.a.pid);
	bool ok = ran && c0.retired >= 0 && c1.retired == c0.retired &&
		  c1.prefetched - c0.prefetched == v_pages &&
		  c1.refused == c0.refused && c1.held == c0.held &&
		  am.queued == kUserAhead;
	CHECK(ok, "V's fault-ahead jobs did not run beside A's stalled ones "
	      "within %ld s: V's ODP MRs' jobs (queued/started) %s, expected "
	      "2 MRs at 1/1; V's %s, expected %d pages present; since V's "
	      "streams %s -> %s, expected %d pages prefetched, V's jobs' "
	      "counts given back, nothing else moved; A's %s of %d streams, "
	      "expected %d queued", kBoundS * time_scale(), str(vm).c_str(),
	      ans, v_pages, c0.str().c_str(), c1.str().c_str(), v_pages,
	      am.str().c_str(), n, kUserAhead);
	// A's counts come back once its jobs end.
	s.fs.release();
	if (!s.a_jobs_ended(j0, "once the read was answered"))
		return;
	Ahead a1 = ahead_of(s.dev, s.a.pid);
	int err = s.fs.hold(limit_ms(kSetupS));
	CHECK(!err, "StallFs, told to hold reads again: %s", strerror(err));
	if (err)
		return;
	JobCounts j1(s.dev);
	if (!s.a_streams(" (again)") || !s.read_held())
		return;
	s.a_jobs_held(n, job, j1, a1, 0);
}

// dereg_odp_ahead_queued, exit_odp_ahead_queued.
//
// sroce_odp runs kQueueActive jobs at once for the test (Setting).
// A's kUserAhead streams, whose jobs wait in the fault, get a job each;
// kQueueActive of them start, the rest wait inactive behind them
// (a_jobs_held()), and V's jobs, queued after, wait there too, as long
// as the read is held. V's ibv_dereg_mr of one MR and ibv_rereg_mr of the
// other (or V's kill) return (V exits) within the bound all the same: a
// queued job keeps its map without an access (sroce_map_keep()), so no
// retirement waits for it. V's jobs "wait" when V's MR counts each
// queued and not started, the device counts no job retired and no page
// prefetched since V's streams began (so none was dequeued to find its
// map retired, nor ran: A's jobs, the only others, wait in the fault
// before they count a page), and V's 2 jobs still hold their counts
// (odp_ahead_held), checked right before V's call and again once it
// returned. Once V's MR is gone (deregistered; at exit all of them) only
// the device's counts remain. Then the read is answered and every job
// runs: V's, if still queued, find their translations retired
// (odp_jobs_retired +2: sroce_map_use_kept() refuses a retired map) and
// fault nothing in (V's pages of those ranges absent, nothing prefetched
// but A's). At exit V's QPs' destroy took V's jobs off the queue instead
// (sroce_ahead_stop()): their counts were given back at once and nothing
// is retired. Had a queued job held an access (before pending/inline-hold,
// or sroce_map_keep() made a reference), the dereg would have waited for
// it, so for A's read: killably, and at exit unkillably.
void ahead_queued(Scene &s, bool exits)
{
	const int n = kUserAhead;
	const char *job = "sroce_ahead_work";
	unsigned nv, na;
	char ans[kLine];
	std::string file = s.fs.file();
	Setting limit(kOdpMaxActive, "sroce_odp not WQ_SYSFS?");

	if (!limit.set(kQueueActive) ||
	    !s.start(s.v, "V", [&](int fd) {
		    return stall::victim_ahead(fd, s.dev);
	    }, &nv) ||
	    !s.start(s.a, "A", [&](int fd) {
		    return stall::attacker_ahead(fd, s.dev, file, n);
	    }, &na))
		return;
	JobCounts j0 = jobs_at_start(s.dev);
	if (!s.a_streams("") || !s.read_held() ||
	    !s.a_jobs_held(n, job, j0, { 0, 0, 0 }, kQueueActive))
		return;
	// V's streams: its responders' jobs queue behind A's, not started.
	JobCounts c0(s.dev);
	Ahead a0 = ahead_of(s.dev, s.a.pid);
	if (!s.ask(s.v, "V", "stream", ans, limit_ms(kSetupS)))
		return;
	// V's jobs wait, @when: each of the @nmr ODP MRs V has then counts
	// its one job queued, not started; since V's streams no job was
	// retired nor page prefetched, and @held of V's jobs hold their
	// counts; A's jobs still kQueueActive started.
	auto v_waits = [&](const char *when, size_t nmr, int held) {
		std::vector<Ahead> vm;
		if (nmr)
			vm = aheads_of(s.dev, s.v.pid);
		Ahead am = ahead_of(s.dev, s.a.pid);
		JobCounts now(s.dev);
		bool each = vm.size() == nmr;
		for (const Ahead &x : vm)
			each = each && x.queued == 1 && x.waits();
		bool ok = each && c0.retired >= 0 &&
			  now.retired == c0.retired && c0.prefetched >= 0 &&
			  now.prefetched == c0.prefetched &&
			  now.held - c0.held == held && am.queued == n &&
			  am.run == kQueueActive;
		CHECK(ok, "%s: V's fault-ahead jobs do not wait behind A's: "
		      "V's ODP MRs' jobs (queued/started) %s, expected %zu "
		      "MRs at 1/0; since V's streams %s -> %s, expected no "
		      "job retired, no page prefetched, odp_ahead_held +%d; "
		      "A's %s, expected %d/%d", when, str(vm).c_str(), nmr,
		      c0.str().c_str(), now.str().c_str(), held,
		      am.str().c_str(), n, kQueueActive);
		return ok;
	};
	// Once every job ran: V's @retired found their maps retired, and no
	// job of V's prefetched a page (the device's count past A's MR's).
	auto v_faulted_nothing = [&](int retired) {
		Ahead am = ahead_of(s.dev, s.a.pid);
		JobCounts now(s.dev);
		long long v_pf = now.prefetched - c0.prefetched -
				 (am.prefetched - a0.prefetched);
		CHECK(now.retired - c0.retired == retired && v_pf == 0 &&
		      a0.prefetched >= 0 && am.prefetched >= 0,
		      "once every job ran: since V's streams %s -> %s, A's "
		      "MR's pages_prefetched %lld -> %lld: expected %d of V's "
		      "jobs retired, none of V's pages prefetched (%lld)",
		      c0.str().c_str(), now.str().c_str(), a0.prefetched,
		      am.prefetched, retired, v_pf);
	};
	if (exits) {
		if (!v_waits("before V is killed", 2, 2))
			return;
		// At exit, uverbs deregisters V's MRs before it destroys
		// the QPs whose jobs are queued; the destroys take the jobs
		// off the queue (sroce_ahead_stop()). That order is what
		// makes this test of the MRs' deregistration: it holds as
		// V makes its MRs after its QPs (victim_ahead(): the
		// Streams' QPs, then the MRs), and uverbs destroys a
		// context's objects newest first (rdma_alloc_commit_uobject()
		// list_add()s each at the head of ufile->uobjects,
		// __uverbs_cleanup_ufile() walks it from the head: 6.1 and
		// 6.12 drivers/infiniband/core/rdma_core.c:651 and :896).
		// Nothing here sees it: were the QPs destroyed first, their
		// jobs would be cancelled before any dereg, and this would
		// pass whatever a queued job holds; dereg_odp_ahead_queued
		// shows the property itself, whatever the order at exit.
		kill(s.v.pid, SIGKILL);
		int status = role_wait(s.v, limit_ms(kBoundS));
		CHECK(status == 128 + SIGKILL, "V, killed with its MRs' jobs "
		      "queued behind A's stalled ones, had not exited %ld s "
		      "later (status %d); V: %s", kBoundS * time_scale(),
		      status, stack_of(s.v.pid).c_str());
		// Its MRs went with it: only the device's counts are left,
		// and its jobs' counts came back with its QPs.
		if (status == 128 + SIGKILL)
			v_waits("once V exited", 0, 0);
		s.fs.release();
		if (status < 0)
			role_wait(s.v, limit_ms(kAfterS));
		close(s.v.fd);
		s.v = {};
		if (status == 128 + SIGKILL &&
		    s.a_jobs_ended(j0, "once V exited"))
			v_faulted_nothing(0);
		return;
	}
	if (!v_waits("before V's ibv_dereg_mr", 2, 2))
		return;
	bool deregd = say(s.v.fd, "dereg") &&
		      s.returns(s.v, "V's ibv_dereg_mr", "deregd",
				limit_ms(kBoundS));
	CHECK(deregd, "V's ibv_dereg_mr hung: not returned %ld s after it was "
	      "called, its MR's job queued behind A's stalled ones; V: %s",
	      kBoundS * time_scale(), stack_of(s.v.pid).c_str());
	// The MR is gone; V's other MR, its job queued with the first's,
	// still counts its own, and the device's counts have not moved.
	if (deregd)
		v_waits("once V's ibv_dereg_mr returned", 1, 2);
	bool reregd = deregd && say(s.v.fd, "rereg") &&
		      s.returns(s.v, "V's ibv_rereg_mr", "reregd",
				limit_ms(kBoundS));
	CHECK(!deregd || reregd, "V's ibv_rereg_mr hung: not returned %ld s "
	      "after it was called, its MR's job queued behind A's stalled "
	      "ones; V: %s", kBoundS * time_scale(),
	      stack_of(s.v.pid).c_str());
	// An access-only change keeps an ODP MR's pin, whose counts these
	// are (sroce_pin_for_access()): its job still counts, not started.
	if (reregd)
		v_waits("once V's ibv_rereg_mr returned", 1, 2);
	s.fs.release();
	if (!deregd)
		s.comes_after(s.v, "V's ibv_dereg_mr", "deregd");
	else if (!reregd)
		s.comes_after(s.v, "V's ibv_rereg_mr", "reregd");
	if (!deregd || !reregd || !s.a_jobs_ended(j0, "after V's calls"))
		return;
	// V's two jobs ran at last, found their translations retired and
	// faulted nothing in: the re-registered MR still counts its job
	// queued, not started, and none of V's pages are present.
	v_faulted_nothing(2);
	std::vector<Ahead> vm = aheads_of(s.dev, s.v.pid);
	CHECK(vm.size() == 1 && vm[0].queued == 1 && vm[0].run == 0 &&
	      vm[0].prefetched == 0, "V's re-registered MR, once its job "
	      "ran: %s (queued/started), %lld pages prefetched; expected "
	      "1/0, none", str(vm).c_str(),
	      vm.empty() ? -1 : vm[0].prefetched);
	if (s.ask(s.v, "V", "resident", ans, limit_ms(kSetupS)))
		CHECK(!strcmp(ans, "resident 0"), "V's jobs faulted memory of "
		      "a deregistered or re-registered MR in: %s", ans);
}

// ---- release_isolation, release_backlog_bound ----

// A release work item's function, and where an ODP range's release waits
// while its owner's mm invalidates; the queue of the items.
const char *const kReleaseFrame = "sroce_user_run_releases";
const char *const kRemoveFrame = "mmu_interval_notifier_remove";
const char *const kReleaseQueue = "sroce_release";
const char *const kReleaseMb =
	"/sys/module/sroce/parameters/max_user_release_mb";
// How long the orphans of a killed dereg (orphan.h) may take, A2's and
// V's together, unscaled, from the moment A's release was seen waiting:
// it waits in D state until A's storm stops, and the kernel's hung-task
// detector reports a task in D state for 120 s (hung_task_timeout_secs:
// 120 on the debug kernel too, where SROCE_TIME_SCALE is 4 and each
// orphan's own waits are four times as long). One deadline for all,
// which the orphans' waits keep too, rather than the detector's timeout
// raised for the test: it stays on for every other task, and for the
// worker should the drain not end its wait. What may follow the orphans
// while the release waits (kQuietS scaled, 8 s on the debug kernel, and
// the asks) keeps the worker's D state under some 75 s on the passing
// path.
const long kOrphansS = 60;
// The pinned memory of an orphaned MR of the orphaners' (1 MiB), and of
// one over a huge page (orphan.h's kChunk, 64 KiB), in KiB.
const long kOrphanKb = (1 << 20) / 1024;
const long kThpOrphanKb = 64;

// The device's counts of releases (hw_counters): queued, the pages of
// those still waiting in their user's list (a level), the MRs refused
// for it; and kmem refusals, which must not count those.
struct ReleaseCounts {
	long long queued, backlog, refused, kmem_refused;

	explicit ReleaseCounts(const char *dev)
		: queued(port_counter(dev, "release_queued")),
		  backlog(port_counter(dev, "release_backlog_pages")),
		  refused(port_counter(dev, "release_backlog_refused")),
		  kmem_refused(port_counter(dev, "kmem_refused"))
	{
	}

	std::string str() const
	{
		return "release_queued " + std::to_string(queued) +
		       ", release_backlog_pages " + std::to_string(backlog) +
		       ", release_backlog_refused " + std::to_string(refused) +
		       ", kmem_refused " + std::to_string(kmem_refused);
	}
};

// A's release waits where A's invalidations hold it: how many kernel
// threads in D state are in mmu_interval_notifier_remove() under a user's
// release work item; one's stack in @one, and the queue of the item each
// runs in @queues (sroce_release, for all).
int releases_held(std::string *one, std::map<std::string, int> *queues)
{
	queues->clear();
	return tasks::kthreads_in({ kReleaseFrame, kRemoveFrame }, one,
				  queues);
}

bool release_held_alone(std::string *one)
{
	std::map<std::string, int> q;

	return releases_held(one, &q) == 1 && q.count(kReleaseQueue);
}

// @who's VmPin, in KiB (-1: not said).
long vmpin_of(Scene &s, Role &r, const char *who)
{
	char ans[kLine];
	long kb = -1;

	if (s.ask(r, who, "vmpin", ans, limit_ms(kSetupS)))
		sscanf(ans, "vmpin %ld", &kb);
	return kb;
}

// @who's orphan of its MR (the MR over its huge page if @thp) through the
// test's hold (orphan.h), by @end (now_ms()), the deadline the orphaners
// share: the hold armed, @who's stream into its MR seen held and the
// hold taken (hold_map 0), then @who's child's
// ibv_dereg_mr() of the MR waiting for the held access (its stack in
// sroce_map_retire_held() under sroce_dereg_mr()), no release queued
// meanwhile; the child SIGKILLed there; then, within kRecvS, exactly one
// release queued since (release_queued +1: the access let go of the
// orphaned map). True if so; else said.
bool orphans(Scene &s, Role &r, const char *who, long end, bool thp)
{
	using xfer::orphan::Hold;
	char ans[kLine] = "";
	std::string stack;
	int child = -1, status = -1;
	auto left = [&](long secs) {
		return std::max(0L, std::min(end - now_ms(), limit_ms(secs)));
	};
	ReleaseCounts c0(s.dev);
	Hold h;

	if (!h.ok())
		return false;
	bool held = s.ask(r, who, thp ? "orphan thp" : "orphan", ans,
			  left(kSetupS)) &&
		    !strcmp(ans, "held");
	CHECK(held, "%s's orphan: '%s', expected its stream into its MR%s "
	      "held", who, ans, thp ? " over its huge page" : "");
	if (!held)
		return false;
	// The access is held (the hold taken) before the dereg begins.
	bool taken = wait_until(left(kStallS), Hold::taken);
	CHECK(taken, "%s's stream is held, but no access took the hold "
	      "within %ld s (%s not 0)", who, kStallS * time_scale(),
	      xfer::orphan::kHoldAttr);
	bool started = taken && s.ask(r, who, "dereg", ans, left(kSetupS)) &&
		       sscanf(ans, "dereg %d", &child) == 1 && child > 0;
	CHECK(!taken || started, "%s's dereg: '%s', expected 'dereg PID'",
	      who, ans);
	bool waits = started && wait_until(left(kStallS), [&] {
		stack = stack_of(child);
		return xfer::orphan::in_dereg_wait(stack);
	});
	ReleaseCounts c1(s.dev);
	CHECK(!started || (waits && c1.queued == c0.queued), "%s's child's "
	      "ibv_dereg_mr of its MR: %s; %s, %s before; expected the dereg "
	      "waiting in sroce_map_retire_held() under sroce_dereg_mr() for "
	      "the held access within %ld s (of the %ld s that all orphans "
	      "have from the moment A's release was seen waiting), no "
	      "release queued", who, stack.c_str(), c1.str().c_str(),
	      c0.str().c_str(), kStallS * time_scale(), kOrphansS);
	// Killed whatever was seen, so that the hold lets go (or, without
	// a child, the stream stopped: the hold keeps it up to 60 s).
	if (s.ask(r, who, "kill", ans, limit_ms(kSetupS) + 60000))
		sscanf(ans, "killed %d", &status);
	CHECK(!started || xfer::orphan::killed(status), "%s's child, killed "
	      "in its dereg: '%s' (a wait status), expected killed by "
	      "SIGKILL", who, ans);
	if (failures)
		return false;
	ReleaseCounts c2 = c1;
	bool queued = wait_until(limit_ms(kRecvS), [&] {
		c2 = ReleaseCounts(s.dev);
		return c2.queued > c0.queued;
	});
	CHECK(queued && c2.queued == c0.queued + 1, "%s's orphaned MR, its "
	      "dereg killed: %s within %ld s, %s before; expected "
	      "release_queued +1 (the held access let go of the orphaned "
	      "map, its put queued the release)", who, c2.str().c_str(),
	      kRecvS * time_scale(), c0.str().c_str());
	return !failures;
}

// A2's buffer of one transparent huge page, for release_backlog_bound
// (stall::orphaner()'s "thp"): its AnonHugePages in KiB, or 0 and why
// there is none in @why (-1: A2 did not say).
long a2_huge_page(Scene &s, std::string *why)
{
	char ans[kLine] = "";
	long kb = -1;
	int n = 0;

	if (s.ask(s.a2, "A2", "thp", ans, limit_ms(kSetupS)))
		sscanf(ans, "thp %ld %n", &kb, &n);
	*why = n ? ans + n : std::string("A2 said '") + ans + "'";
	return kb;
}

// @who's "reg": ibv_reg_mr's errno (0: registered), or -1.
int reg_errno(Scene &s, Role &r, const char *who)
{
	char ans[kLine];
	int err = -1;

	if (s.ask(r, who, "reg", ans, limit_ms(kSetupS)))
		sscanf(ans, "reg %d", &err);
	return err;
}

// What became of a try at A's waiting release (a_release_try()).
enum class Try { held, through, failed };

// How long a release seen waiting must go on waiting before a try counts
// it held, unscaled: a release that slips through a gap in A's storm at
// once (the storm's calls may leave one, they do not take turns) is
// caught here, while another try can still be made, rather than by the
// checks after.
const long kHeldMs = 1000;

// Try @i (from 0) at the premise: A's ODP range's release waits in
// mmu_interval_notifier_remove() on A's user's work item, A's mm kept
// invalidating by A's storm. After the first try the storm is calmed and
// the server holds reads again (the file's page dropped from the page
// cache and A's mapping).
// A's SEND of the FUSE page out of the try's MR waits in the fault, its
// access holding the MR's map; the try's child's dereg of that MR waits
// for it and is killed there; the storm runs; then the read is answered,
// and the access's last put queues the release (release_queued +1 since
// @c0, the counts before the try), which waits, alone, and still kHeldMs
// later (held); or ends without a wait or after a short one
// (release_backlog_pages back to @c0's, no thread in the removal): the
// release ran through a moment when A's mm was not invalidating
// (through, with where A's threads were and the tasks waiting to
// write-lock an rwsem in @why). Else failed, said. Either way A's SEND
// then completes, every byte the file's.
Try a_release_try(Scene &s, int i, const ReleaseCounts &c0, std::string *why)
{
	char ans[kLine], storm[kLine] = "";
	std::string what, one;
	const std::string n = std::to_string(i);
	int poster = 0, child = 0, status = -1;

	// A later try: the storm calm first, as the file's pages dropped
	// invalidate the try's MR, and an access's mmu_interval_read_begin()
	// would wait for the storm's invalidation under way then to end.
	if (i > 0) {
		if (!s.ask(s.a, "A", "calm", ans, limit_ms(kSetupS)))
			return Try::failed;
		int err = s.fs.hold(limit_ms(kSetupS));
		CHECK(!err, "try %d: the FUSE server holding reads again: %s",
		      i + 1, strerror(err));
		if (err)
			return Try::failed;
	}
	if (!s.ask(s.a, "A", "post " + n, ans, limit_ms(kSetupS)) ||
	    sscanf(ans, "posting %d", &poster) != 1 || !s.read_held())
		return Try::failed;
	bool stalled = wait_until(limit_ms(kStallS), [&] {
		return doorbell_stalled(poster, &what);
	});
	CHECK(stalled, "try %d: A's SEND's doorbell is not waiting in the "
	      "fault: %s", i + 1, what.c_str());
	if (!stalled || !s.ask(s.a, "A", "dereg " + n, ans, limit_ms(kSetupS)) ||
	    sscanf(ans, "dereg %d", &child) != 1)
		return Try::failed;
	bool waits = wait_until(limit_ms(kStallS), [&] {
		what = stack_of(child);
		return what.find("sroce_dereg_mr") != std::string::npos;
	});
	CHECK(waits, "try %d: A's child's ibv_dereg_mr of the ODP MR does not "
	      "wait for the access in the fault: %s", i + 1, what.c_str());
	if (!waits || !s.ask(s.a, "A", "kill " + n, ans, limit_ms(kBoundS)))
		return Try::failed;
	sscanf(ans, "killed %d", &status);
	ReleaseCounts c1(s.dev);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
	      c1.queued == c0.queued, "try %d: A's child, killed in its "
	      "dereg: '%s' (a wait status), expected killed by SIGKILL; "
	      "release_queued +%lld, expected +0 (the access in the fault "
	      "holds the map)", i + 1, ans, c1.queued - c0.queued);
	if (failures || !s.ask(s.a, "A", "storm", storm,
			       limit_ms(kSetupS) + 30000 * time_scale()))
		return Try::failed;
	s.fs.release();
	ReleaseCounts c2 = c1;
	std::map<std::string, int> queues;
	int held = 0;
	bool seen = wait_until(limit_ms(kStallS), [&] {
		c2 = ReleaseCounts(s.dev);
		held = releases_held(&one, &queues);
		return c2.queued > c0.queued &&
		       (held > 0 || c2.backlog == c0.backlog);
	});
	// Seen waiting: still waiting, alone, kHeldMs later.
	bool kept = seen && held > 0 &&
		    !wait_until(kHeldMs, [&] {
			    return !release_held_alone(&one);
		    });
	Try t = kept ? Try::held : seen ? Try::through : Try::failed;
	if (t == Try::through) {
		// Where A's threads were, as soon as can be; then the release
		// ends, before another try counts from here.
		*why = "try " + std::to_string(i + 1) + ": A's threads: " +
		       tasks::thread_census(s.a.pid) + "; tasks waiting to "
		       "write-lock an rwsem: " + tasks::rwsem_writers() +
		       "; A's storm: '" + storm + "'";
		bool ended = wait_until(limit_ms(kAfterS), [&] {
			c2 = ReleaseCounts(s.dev);
			return !releases_held(&one, &queues) &&
			       c2.backlog == c0.backlog;
		});
		CHECK(ended, "try %d: A's release, gone through a gap in A's "
		      "storm, has not ended %ld s later: %s; %d threads in %s "
		      "(one: %s)", i + 1, kAfterS * time_scale(),
		      c2.str().c_str(), releases_held(&one, &queues),
		      kRemoveFrame, one.c_str());
	}
	held = releases_held(&one, &queues);
	c2 = ReleaseCounts(s.dev);
	CHECK(t != Try::failed && c2.queued == c0.queued + 1,
	      "try %d: A's orphaned ODP MR, once the read was answered: "
	      "release_queued +%lld (expected +1), and %d kernel threads in "
	      "D state in %s under %s, running items of %s, within %ld s "
	      "(expected one, of %s, A's storm keeping its mm invalidating; "
	      "or, the release gone through, release_backlog_pages back to "
	      "%lld: %s). One: %s. A's storm: '%s'. Kernel threads: %s",
	      i + 1, c2.queued - c0.queued, held, kRemoveFrame, kReleaseFrame,
	      tasks::queues_str(queues).c_str(), kStallS * time_scale(),
	      kReleaseQueue, c0.backlog, c2.str().c_str(), one.c_str(), storm,
	      tasks::kthread_census().c_str());
	s.ask(s.a, "A", "posted " + std::to_string(limit_ms(kAfterS)), ans,
	      limit_ms(kAfterS) + limit_ms(kSetupS));
	CHECK(!strcmp(ans, "posted 0 2 0 0"), "try %d: A's SEND of the FUSE "
	      "page once the read was answered: '%s' (posted RET GOT BAD "
	      "STRAY: expected posted, both completions, none failed, every "
	      "byte the file's)", i + 1, ans);
	return failures ? Try::failed : t;
}

// The premise (a_release_try()), in up to stall::kReleaseTries tries: a
// try whose release ran through a gap in A's storm is followed by
// another, with the next of A's MRs; none held, and the test fails (the
// trigger did not happen), saying where A's threads were each time. Once
// one held, @c0 is the counts before that try. Else said.
bool a_release_held(Scene &s, ReleaseCounts &c0)
{
	std::string whys;

	for (int i = 0; i < stall::kReleaseTries; i++) {
		ReleaseCounts before(s.dev);
		std::string why;
		Try t = a_release_try(s, i, before, &why);

		if (t == Try::failed)
			return false;
		if (t == Try::held) {
			c0 = before;
			return true;
		}
		whys += why + ". ";
	}
	CHECK(false, "A's orphaned ODP MR's release did not wait in %s in %d "
	      "tries: each ran through a moment when A's storm left its mm "
	      "not invalidating, the trigger did not happen. %s", kRemoveFrame,
	      stall::kReleaseTries, whys.c_str());
	return false;
}

// Once A's storm is calm, A's release ends and those queued behind it
// run: no thread waits in the removal, the device's backlog is back to
// 0, A2's pinned memory back to @a2_pin0, every byte of its orphaned MR's
// buffer its old one or written. Else said.
void a_releases_drain(Scene &s, const ReleaseCounts &before, long a2_pin0)
{
	char ans[kLine];
	std::string one;
	std::map<std::string, int> queues;
	ReleaseCounts c = before;
	long pin = -1;
	int n = 0;

	if (!s.ask(s.a, "A", "calm", ans, limit_ms(kSetupS)))
		return;
	bool drained = wait_until(limit_ms(kAfterS), [&] {
		c = ReleaseCounts(s.dev);
		n = releases_held(&one, &queues);
		pin = vmpin_of(s, s.a2, "A2");
		return !n && c.backlog == 0 && pin == a2_pin0;
	});
	CHECK(drained && c.queued == before.queued, "%ld s after A's storm "
	      "stopped: %d threads still in %s (one: %s), %s, A2's VmPin %ld "
	      "kB; expected none, release_backlog_pages 0, no release "
	      "queued since (%lld), VmPin %ld kB as before its orphan",
	      kAfterS * time_scale(), n, kRemoveFrame, one.c_str(),
	      c.str().c_str(), pin, before.queued, a2_pin0);
	s.ask(s.a2, "A2", "bytes", ans, limit_ms(kSetupS));
	CHECK(!strcmp(ans, "bytes 0"), "A2's orphaned MR's buffer, once "
	      "released: '%s' (bytes neither old nor written)", ans);
}

// Why a test did not run all it should here (what the machine lacks),
// or empty: main() then reports it as not run, never as passed.
std::string not_run;

// release_isolation: A's ODP release waits (a_release_held()), counted as
// one page while it does (a release counts a page at least, and until it
// ended); a pinned MR that A2, another process of A's user, orphans then
// waits behind it, its pages pinned and counted, while V's orphaned MR
// is released at once.
// release_backlog_bound: max_user_release_mb 1 (256 pages); A2's orphan
// is a 64 KiB MR over a transparent huge page, counted as the huge page,
// 512 pages: A's user's next ibv_reg_mr fails with ENOMEM
// (release_backlog_refused +1, kmem_refused +0) and V's succeeds; once
// A's storm stops the backlog drains and A2 registers again. Where A2
// gets no huge page (THP off or missing, memory too fragmented), its
// orphan is the 1 MiB MR instead, and the test, whatever it found, is
// not run (why said), never passed. Before engine-peruser-v6 nothing
// counted or bounded the backlog: A2's registration succeeded; before v7
// the MR counted 16 pages, and A's running release none.
void release_stall(Scene &s, bool bound)
{
	std::string file = s.fs.file(), one, why;
	char ans[kLine];
	unsigned id;
	Setting mb(kReleaseMb, "sroce without max_user_release_mb");
	const long long small = (1 << 20) / sysconf(_SC_PAGESIZE);
	long huge_kb = 0;

	// A2's and V's orphans need the test's hold of an access: checked
	// before any stall.
	why = xfer::orphan::hold_missing();
	if (!why.empty()) {
		not_run = "the orphans of pinned MRs: " + why;
		return;
	}
	if (bound && !mb.set(1))
		return;
	ReleaseCounts c0(s.dev);
	CHECK(c0.queued >= 0 && c0.backlog == 0 && c0.refused >= 0 &&
	      c0.kmem_refused >= 0, "before the test: %s (-1: no such "
	      "counter); expected release_backlog_pages 0",
	      c0.str().c_str());
	if (failures ||
	    !s.start(s.a, "A", [&](int fd) {
		    return stall::attacker_release(fd, s.dev, file);
	    }, &id) ||
	    !s.start(s.a2, "A2", [&](int fd) {
		    return stall::orphaner(fd, s.dev, true);
	    }, &id) ||
	    !s.start(s.v, "V", [&](int fd) {
		    return stall::orphaner(fd, s.dev, false);
	    }, &id))
		return;
	// The premise of the huge-page orphan, before any stall: A2's buffer
	// is mapped by one huge page.
	if (bound) {
		huge_kb = a2_huge_page(s, &why);
		if (failures)
			return;
		if (huge_kb <= 0)
			not_run = "A2's orphan over a huge page: " + why;
	}
	const bool thp = huge_kb > 0;
	// What A2's orphaned MR holds: 256 small pages, or the huge page.
	const long long pages = thp ? huge_kb * 1024 / sysconf(_SC_PAGESIZE) :
				      small;
	const long orphan_kb = thp ? kThpOrphanKb : kOrphanKb;
	if (!a_release_held(s, c0))
		return;
	const long end = now_ms() + kOrphansS * 1000;
	// A's ODP release pins nothing but counts a page, as every release
	// does at least, and while it runs, until it ended.
	ReleaseCounts ch(s.dev);
	CHECK(ch.backlog == 1, "A's ODP release, waiting in %s: %s; expected "
	      "release_backlog_pages 1 (a release counts a page at least, "
	      "and until it ended)", kRemoveFrame, ch.str().c_str());
	// A2's orphaned MR waits behind A's release: its pages stay pinned
	// (A2's VmPin: it registered) and count in the backlog, all of the
	// huge page's for the MR over one.
	const long a2_pin0 = vmpin_of(s, s.a2, "A2");
	if (!orphans(s, s.a2, "A2", end, thp))
		return;
	ReleaseCounts c1(s.dev);
	usleep(limit_ms(kQuietS) * 1000);
	ReleaseCounts c2(s.dev);
	long a2_pin = vmpin_of(s, s.a2, "A2");
	CHECK(c1.queued == c0.queued + 2 && c1.backlog == 1 + pages &&
	      c2.backlog == 1 + pages && a2_pin == a2_pin0 + orphan_kb &&
	      release_held_alone(&one), "A2's orphaned MR (%ld kB%s) behind "
	      "A's waiting release: %s, then %ld s later %s; A2's VmPin %ld "
	      "kB, %ld before its orphan; A's release %s; expected "
	      "release_queued +2, release_backlog_pages %lld both times "
	      "(A's 1 and the %lld pages A2's MR holds), VmPin +%ld kB, A's "
	      "release still waiting (one: %s)", orphan_kb,
	      thp ? " over a huge page" : "", c1.str().c_str(),
	      kQuietS * time_scale(), c2.str().c_str(), a2_pin, a2_pin0,
	      release_held_alone(&one) ? "still waiting" : "gone",
	      1 + pages, pages, orphan_kb, one.c_str());
	if (thp) {
		long kb = -1;

		if (s.ask(s.a2, "A2", "thpkb", ans, limit_ms(kSetupS)))
			sscanf(ans, "thpkb %ld", &kb);
		CHECK(kb == huge_kb, "A2's buffer, its MR over it orphaned: "
		      "AnonHugePages %ld kB; expected %ld, the huge page "
		      "whole", kb, huge_kb);
	}
	if (!bound) {
		// V's orphaned MR is released at once, beside A's: its pages
		// leave the backlog once its release ended, after its VmPin.
		const long v_pin0 = vmpin_of(s, s.v, "V");
		if (!orphans(s, s.v, "V", end, false))
			return;
		ReleaseCounts c3 = c2;
		long v_pin = -1;
		bool released = wait_until(limit_ms(kRecvS), [&] {
			v_pin = vmpin_of(s, s.v, "V");
			c3 = ReleaseCounts(s.dev);
			return v_pin == v_pin0 && c3.backlog == 1 + pages;
		});
		CHECK(released && c3.queued == c0.queued + 3, "V's orphaned "
		      "MR, while A's release waits: V's VmPin %ld kB within "
		      "%ld s, %ld before; %s; expected VmPin back, "
		      "release_queued +3, release_backlog_pages %lld (A's and "
		      "A2's alone)", v_pin, kRecvS * time_scale(), v_pin0,
		      c3.str().c_str(), 1 + pages);
		s.ask(s.v, "V", "bytes", ans, limit_ms(kSetupS));
		CHECK(!strcmp(ans, "bytes 0"), "V's orphaned MR's buffer: '%s' "
		      "(bytes neither old nor written)", ans);
		a2_pin = vmpin_of(s, s.a2, "A2");
		CHECK(a2_pin == a2_pin0 + kOrphanKb && release_held_alone(&one),
		      "once V's release ran: A2's VmPin %ld kB, A's release %s; "
		      "expected %ld kB, still waiting (one: %s)", a2_pin,
		      release_held_alone(&one) ? "waits" : "gone",
		      a2_pin0 + kOrphanKb, one.c_str());
		// Under the bound (a quarter of RAM), A's user registers.
		int err = reg_errno(s, s.a2, "A2");
		CHECK(err == 0, "A2's ibv_reg_mr under the bound: %s",
		      err < 0 ? "not said" : strerror(err));
	} else {
		// At the bound, A's user's next registration is refused, V's
		// is not.
		int a_err = reg_errno(s, s.a2, "A2");
		ReleaseCounts c3(s.dev);
		int v_err = reg_errno(s, s.v, "V");
		ReleaseCounts c4(s.dev);
		CHECK(a_err == ENOMEM && c3.refused == c0.refused + 1 &&
		      c3.kmem_refused == c0.kmem_refused, "A2's ibv_reg_mr "
		      "with its user's releases at the bound (%lld pages): "
		      "%s, %s; expected ENOMEM, release_backlog_refused +1, "
		      "kmem_refused +0", 1 + pages,
		      a_err < 0 ? "not said" : strerror(a_err),
		      c3.str().c_str());
		CHECK(v_err == 0 && c4.refused == c3.refused, "V's ibv_reg_mr "
		      "while A's user is at its bound: %s, "
		      "release_backlog_refused +%lld; expected it registered, "
		      "+0", v_err < 0 ? "not said" : strerror(v_err),
		      c4.refused - c3.refused);
	}
	a_releases_drain(s, ReleaseCounts(s.dev), a2_pin0);
	if (bound) {
		ReleaseCounts c5(s.dev);
		int err = reg_errno(s, s.a2, "A2");
		CHECK(err == 0 && ReleaseCounts(s.dev).refused == c5.refused,
		      "A2's ibv_reg_mr once its user's releases ran: %s; "
		      "expected it registered",
		      err < 0 ? "not said" : strerror(err));
	}
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
	{ "two_devices_one_queue", two_devices_one_queue },
	{ "odp_ahead_bound", ahead_user_bound },
	{ "dereg_odp_ahead_queued", [](Scene &s) { ahead_queued(s, false); } },
	{ "exit_odp_ahead_queued", [](Scene &s) { ahead_queued(s, true); } },
	{ "release_isolation", [](Scene &s) { release_stall(s, false); } },
	{ "release_backlog_bound", [](Scene &s) { release_stall(s, true); } },
};

} // namespace

int main(int argc, char **argv)
{
	const Test *t = nullptr;

	for (const Test &x : tests)
		if ((argc == 4 || argc == 5) && !strcmp(argv[3], x.name))
			t = &x;
	if (t && (t->fn == two_devices_one_queue) != (argc == 5))
		t = nullptr;
	if (!t) {
		fprintf(stderr, "usage: sroce-stall DEV DIR TEST [DEV2]\nDEV2 "
			"for two_devices_one_queue alone. TEST is one of:");
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
		Scene s(argv[1], argc == 5 ? argv[4] : nullptr, argv[2]);

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
	if (!not_run.empty()) {
		printf("SKIP: %s: %s\n", t->name, not_run.c_str());
		return 77;
	}
	printf("%s ok\n", t->name);
	return 0;
}
