// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Orphaned pins: an ibv_dereg_mr() killed while an access to its MR is
// under way lets go of the MR's map without waiting for that access
// (sroce_map_wait()); the access's last put of the map then queues the
// pin's release on its user's own work item (sroce_pin_put_async(),
// sroce_kmem_release_queue()). The pages, their page array (kmem_bytes)
// and, for a dma-buf MR, the dma-buf attachment must still all come back,
// within seconds, to what they were before the MR. The access is one the
// test holds (orphan.h: sroce's hold_map in the debug kernel); a kernel
// without that hold has the tests skipped.
//
// The device counts each release queued (release_queued: with no window
// and no ODP MR in the process, only an orphaned map's pin queues one)
// and the pages of those waiting or running (release_backlog_pages, a
// level, back down once a release ended): orphan_pinned and orphan_dmabuf
// see the orphan and its release there. orphan_unload also needs the
// releases run once the device is gone, and so its counters: it sees
// both with two kprobe events (tracefs), whose hits kprobe_profile
// counts, sroce_kmem_release_queue() (a release queued) and
// sroce_pin_release_work() (the release run); a kernel without kprobe
// events skips it (tracefs is mounted by the case, tests/lib.sh's
// mount_tracefs).
#include "check.h"
#include "tracing.h"
#include "dmabuf.h"
#include "orphan.h"
#include "xfer.h"

#include <fstream>
#include <memory>
#include <sstream>

namespace xfer {
namespace {

using orphan::kChunk;
using orphan::kIova;
using orphan::kLen;
using orphan::within;

const char *const kGroup = "sroce_orphan";
// The kprobe events: a release queued, a release run.
const char *const kQueued = "queued";
const char *const kRun = "run";

// The two kprobe events, on and counting; or gone. skip() where the
// kernel has no kprobe events, or tracefs is not mounted.
class Probes {
public:
	Probes()
	{
		if (access((std::string(kTracing) + "/kprobe_events").c_str(),
			   W_OK)) {
			skip("no kprobe events (CONFIG_KPROBE_EVENTS, tracefs "
			     "at /sys/kernel/tracing): the releases run once "
			     "the device is gone, with its counters, cannot "
			     "be counted");
			return;
		}
		on_ = tracing_put("kprobe_events",
				  std::string("p:") + kGroup + "/" + kQueued +
					  " sroce_kmem_release_queue\n") &&
		      tracing_put("kprobe_events",
				  std::string("p:") + kGroup + "/" + kRun +
					  " sroce_pin_release_work\n") &&
		      tracing_put(std::string("events/") + kGroup + "/enable",
				  "1");
	}
	~Probes()
	{
		if (!on_)
			return;
		tracing_put(std::string("events/") + kGroup + "/enable", "0");
		for (const char *e : { kQueued, kRun })
			tracing_put("kprobe_events", std::string("-:") +
							     kGroup + "/" + e +
							     "\n");
	}
	bool on() const { return on_; }

	// Hits of event @name so far (kprobe_profile: "NAME HITS MISSES").
	static long hits(const char *name)
	{
		std::ifstream f(std::string(kTracing) + "/kprobe_profile");
		std::string line, n;
		long h;

		while (std::getline(f, line)) {
			std::istringstream in(line);
			if (in >> n >> h && n == name)
				return h;
		}
		return -1;
	}

private:
	bool on_ = false;
};

// orphan_unload: rmmod sroce at once, the process's context still open
// (the module_unload_live_context.sh shape): it must end in time, every
// release queued having run (unregistration waits for each, through its
// device reference). Then this process ends without its teardown: its
// objects went with the device (the case loads sroce again). Whether the
// release was still queued when rmmod began is said in a note: nothing
// holds it there.
[[noreturn]] void unload_now(long queued, long run)
{
	bool pending = Probes::hits(kRun) - run < Probes::hits(kQueued) - queued;
	pid_t pid = fork();
	if (pid == 0) {
		execlp("rmmod", "rmmod", "sroce", (char *)nullptr);
		_exit(127);
	}
	int status = -1;
	bool ended = within(30000 * time_scale(), [&] {
		return waitpid(pid, &status, WNOHANG) == pid;
	});
	CHECK(ended && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "rmmod sroce with a release queued: %s, status 0x%x",
	      ended ? "ended" : "still running", status);
	CHECK(Probes::hits(kRun) - run == Probes::hits(kQueued) - queued,
	      "after rmmod %ld releases queued, %ld run",
	      Probes::hits(kQueued) - queued, Probes::hits(kRun) - run);
	note(pending ? "rmmod began with the release still queued" :
		       "rmmod began after the release ran");
	for (const std::string &n : test_notes)
		printf("NOTE: orphan_unload: %s\n", n.c_str());
	if (failures)
		_exit(1);
	printf("orphan_unload ok\n");
	_exit(0);
}

// The test: an MR over @d's buffer (a dma-buf) or over b's own buffer
// (pinned), a's stream of WRITEs into it, whose first WRITE's access the
// test holds, and a dereg killed while it waits for that access
// (orphan.h's orphan_held()): release_queued +0 while it waits, +1 once
// the access let go (with @unload, the kprobe event's hits); then
// everything is back within 5 s: the release ran and ended
// (release_backlog_pages back), kmem_bytes, VmPin, the dma-bufs.
void orphan(Pair &p, bool dmabuf, bool unload = false)
{
	std::unique_ptr<Probes> probes;
	std::string why = orphan::hold_missing();
	if (!why.empty()) {
		skip(why);
		return;
	}
	if (unload) {
		probes = std::make_unique<Probes>();
		if (!probes->on())
			return;
	}
	std::unique_ptr<DmaBuf> d;
	if (dmabuf) {
		d = make_dmabuf(p, kLen);
		if (!d)
			return;
	}
	const long long kmem = port_counter(p, "kmem_bytes");
	const long pin = proc_kb("/proc/self/status", "VmPin:");
	const long bufs = dmabuf ? dmabuf_objects() : 0;
	const long long queued0 = port_counter(p, "release_queued");
	const long long backlog0 = port_counter(p, "release_backlog_pages");
	const long queued = unload ? Probes::hits(kQueued) : 0;
	const long run = unload ? Probes::hits(kRun) : 0;
	CHECK(kmem >= 0 && queued0 >= 0 && backlog0 >= 0 && queued >= 0 &&
	      run >= 0, "kmem_bytes %lld, release_queued %lld, "
	      "release_backlog_pages %lld, events queued %ld and run %ld (-1: "
	      "not read)", kmem, queued0, backlog0, queued, run);
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	Buf target(kLen);
	memset(target.data(), 0x11, kLen);
	fill(p.a, 0, kChunk, 0x7e);
	bool orphaned = orphan::orphan_held(
		p,
		[&] {
			return dmabuf ? ibv_reg_dmabuf_mr(p.b.pd, 0, kLen, kIova,
							  d->fd(), access) :
					ibv_reg_mr_iova(p.b.pd, target.data(),
							kLen, kIova, access);
		},
		[&] {
			return unload ? (long long)Probes::hits(kQueued) :
					port_counter(p, "release_queued");
		});
	if (!orphaned)
		return;
	if (unload) {
		unload_now(queued, run);
		return;
	}
	const long ms = 5000 * time_scale();
	CHECK(within(ms, [&] {
		      return port_counter(p, "release_backlog_pages") == backlog0;
	      }) && port_counter(p, "release_queued") == queued0 + 1,
	      "release_queued +%lld (expected +1, the orphaned pin), "
	      "release_backlog_pages %lld %ld ms after, %lld before (expected "
	      "back: the release ran and ended)",
	      port_counter(p, "release_queued") - queued0,
	      port_counter(p, "release_backlog_pages"), ms, backlog0);
	CHECK(within(ms, [&] { return port_counter(p, "kmem_bytes") == kmem; }),
	      "kmem_bytes %lld %ld ms after the orphan, %lld before the MR",
	      port_counter(p, "kmem_bytes"), ms, kmem);
	CHECK(within(ms, [&] {
		      return proc_kb("/proc/self/status", "VmPin:") == pin;
	      }),
	      "VmPin %ld kB %ld ms after the orphan, %ld kB before the MR",
	      proc_kb("/proc/self/status", "VmPin:"), ms, pin);
	if (dmabuf && bufs >= 0)
		CHECK(within(ms, [&] { return dmabuf_objects() == bufs; }),
		      "%ld dma-bufs %ld ms after the orphan, %ld before",
		      dmabuf_objects(), ms, bufs);
	// Every byte of the target is its old one or a WRITE's.
	if (!dmabuf) {
		size_t bad = orphan::stray_bytes(target, 0x11, p.a);
		CHECK(!bad, "%zu bytes of the MR's buffer are neither old "
		      "nor written", bad);
	}
}

void t_orphan_pinned(Pair &p)
{
	orphan(p, false);
}

void t_orphan_dmabuf(Pair &p)
{
	orphan(p, true);
}

void t_orphan_unload(Pair &p)
{
	orphan(p, false, true);
}

void mtu4096(Pair &p)
{
	p.mtu = IBV_MTU_4096;
}

const Test tests[] = {
	{ "orphan_pinned", t_orphan_pinned, mtu4096, false },
	{ "orphan_dmabuf", t_orphan_dmabuf, mtu4096, false },
	{ "orphan_unload", t_orphan_unload, mtu4096, false },
};

} // namespace

const std::span<const Test> orphan_tests = tests;

} // namespace xfer
