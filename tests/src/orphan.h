// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// An orphaned pin, made on purpose: an ibv_dereg_mr() killed while an
// access to its MR is under way lets go of the MR's map without waiting
// for that access (sroce_map_wait()), and the access's last put queues
// the pin's release on its user's own work item (sroce_pin_put_async(),
// sroce_kmem_release_queue()). For sroce-xfer's orphan_* tests and
// sroce-stall's release_* tests.
//
// An access to pinned memory (or to a dma-buf's) holds its map for one
// packet's copy and waits for nothing meanwhile: sroce takes every SGE's
// map for its own copy only, and no job, retry or RNR wait holds one, so
// nothing an unprivileged user controls keeps a pinned map in use for
// longer, and a killed dereg that meets such a copy is a race (none in 300
// rounds on 6.1 under TCG). So the access is held for the test: root arms
// sroce's hold_map in the debug kernel's debugfs (Hold),
// and the next access a responder makes where it may wait (an RC or UC
// QP's RDMA WRITE or READ packet) keeps its map until a retirement gave up
// waiting for it (sroce_map_test_hold()). One round then does it: an MR,
// a's stream of RDMA WRITEs into it, whose first WRITE's access the hold
// keeps (Round::held(): no WRITE completes), a forked child's dereg of
// the MR seen waiting for that access (its stack, in_dereg_wait()), no
// release queued meanwhile; the child SIGKILLed; then the access lets
// go, and its put queues the release. A kernel without the hold (Debian's:
// no CONFIG_FAULT_INJECTION_DEBUG_FS) has the tests skipped, with why
// (hold_missing()), never passed.
#pragma once

#include "check.h"
#include "tasks.h"
#include "xfer.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <memory>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <thread>

namespace xfer::orphan {

// Where the MR is seen, its bytes, and the WRITEs' size: a's buffer's
// first kChunk bytes, to kChunk-aligned offsets of the MR (an MR of
// kChunk or less: its length, to its start).
inline const uint64_t kIova = 0x5b000000000ULL;
inline const size_t kLen = 1 << 20;
inline const size_t kChunk = 64 * 1024;

// ---- The test's hold of an access ----

// sroce's switch for the hold (debugfs, root's; only in a kernel built
// for fault injection, CONFIG_FAULT_INJECTION_DEBUG_FS): 1 arms a hold,
// which the next access that asks takes (0 again).
inline const char *const kHoldAttr = "/sys/kernel/debug/sroce/hold_map";

// Write @text to kHoldAttr; false, errno kept, if it could not be written
// whole.
inline bool attr_put(const std::string &text)
{
	int fd = open(kHoldAttr, O_WRONLY | O_TRUNC | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, text.data(), text.size()) ==
				     ssize_t(text.size());
	int err = errno;

	if (fd >= 0)
		close(fd);
	errno = err;
	return ok;
}

// Why the test's hold of an access cannot be had here, in a sentence, or
// empty. Needs root (debugfs).
inline std::string hold_missing()
{
	const std::string why = ": no test can hold an access to a pinned "
				"MR's map here, and none can be had without: "
				"each holds it for one packet's copy, which a "
				"killed dereg almost never meets";

	const long debugfs_magic = 0x64626720;
	struct statfs fs;

	if (!access(kHoldAttr, F_OK))
		return "";
	if (access("/sys/module/sroce", F_OK))
		return std::string("no ") + kHoldAttr + " (sroce not loaded)" +
		       why;
	if (statfs("/sys/kernel/debug", &fs) || fs.f_type != debugfs_magic)
		return std::string("no ") + kHoldAttr + " (debugfs not "
		       "mounted)" + why;
	return std::string("no ") + kHoldAttr + " (a kernel without "
	       "CONFIG_FAULT_INJECTION_DEBUG_FS, as Debian's; the debug "
	       "kernel has it)" + why;
}

// The hold, armed while this lives: hold_map 1, so that the next
// responder access that may wait takes it and keeps its map; then,
// whatever happened, disarmed (0). Needs root; ok() says whether it is
// armed, failures said.
class Hold {
public:
	Hold()
	{
		ok_ = attr_put("1");
		CHECK(ok_, "arming the hold (%s): %s", kHoldAttr,
		      strerror(errno));
	}
	~Hold() { disarm(); }
	Hold(const Hold &) = delete;
	Hold &operator=(const Hold &) = delete;

	bool ok() const { return ok_; }

	// Whether an access took the hold (hold_map back to 0), and holds
	// its map.
	static bool taken()
	{
		std::ifstream f(kHoldAttr);
		long armed = -1;

		return f >> armed && armed == 0;
	}

	// No hold armed (none there is fine).
	static void disarm() { attr_put("0"); }

private:
	bool ok_ = false;
};

// a's WRITEs (kChunk bytes each, or @len if less; 16 outstanding) into
// @rkey's @len bytes, from a thread, until one fails or @stop: the
// responder's accesses to the MR.
class Stream {
public:
	Stream(Pair &p, uint32_t rkey, size_t len = kLen)
		: chunk_(std::min(len, kChunk)), slots_(len / chunk_),
		  t_([this, &p, rkey] { run(p, rkey); })
	{
	}
	~Stream()
	{
		stop = true;
		t_.join();
	}
	std::atomic<bool> stop{ false };
	std::atomic<long> tried{ 0 };	// ibv_post_send() calls begun
	std::atomic<long> done{ 0 };
	std::atomic<int> error{ IBV_WC_SUCCESS };

private:
	void run(Pair &p, uint32_t rkey)
	{
		long posted = 0, polled = 0;

		while (!stop && error == IBV_WC_SUCCESS) {
			while (posted - polled < 16) {
				size_t at = size_t(posted % slots_) * chunk_;
				ibv_sge sge = { uintptr_t(&p.a.buf[0]),
						uint32_t(chunk_), p.a.mr->lkey };
				ibv_send_wr wr = one_sge_wr(&sge,
							    IBV_WR_RDMA_WRITE,
							    1),
					    *bad;
				wr.wr.rdma.remote_addr = kIova + at;
				wr.wr.rdma.rkey = rkey;
				tried++;
				if (ibv_post_send(p.a.qp, &wr, &bad))
					break;
				posted++;
			}
			ibv_wc wc[16];
			int n = ibv_poll_cq(p.a.cq, 16, wc);
			for (int i = 0; i < n; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					error = wc[i].status;
				else
					done++;
			}
			polled += n;
			if (!n)
				usleep(50);
		}
	}

	const size_t chunk_, slots_;
	std::thread t_;
};

// Whether @done became true within @ms (polled every 10 ms).
inline bool within(long ms, const std::function<bool()> &done)
{
	for (long t = 0; t < ms; t += 10) {
		if (done())
			return true;
		usleep(10000);
	}
	return done();
}

// Whether kernel stack @stack is a dereg's waiting for its map's accesses:
// sroce_dereg_mr() under it, in sroce_map_retire_held() (the caller of
// sroce_map_wait(), which the compiler may inline there).
inline bool in_dereg_wait(const std::string &stack)
{
	return stack.find("sroce_dereg_mr") != std::string::npos &&
	       stack.find("sroce_map_retire_held") != std::string::npos;
}

// How long a held stream is watched for a completion that would say the
// hold is not its (none comes while it is), unscaled.
inline const long kStreamHeldMs = 300;

// One round: an MR that @reg makes (kLen bytes seen at kIova, or kChunk or
// less, remote write granted) and a's stream of WRITEs into it, with a
// Hold armed before it (by this process or, for a part of sroce-stall,
// by the test's); then a forked child's dereg of the MR, and its kill. When
// it goes, the child is killed if it still lives, the stream stopped, the
// MR's handle let go of, and the QPs back in RTS.
class Round {
public:
	Round(Pair &p, const std::function<ibv_mr *()> &reg)
		: p_(p), mr_(reg())
	{
		CHECK(mr_, "registering the MR: %s", strerror(errno));
		if (mr_)
			s_ = std::make_unique<Stream>(p, mr_->rkey,
						      mr_->length);
	}
	~Round()
	{
		if (child_ > 0)
			kill();
		s_.reset();
		// The parent's copy of the ibv_mr: deregistered here if no
		// child deregistered it; else the kernel refuses the
		// handle, and the copy, which libibverbs frees only on
		// success, leaks.
		if (mr_)
			(void)ibv_dereg_mr(mr_);
		restate(p_);
	}
	Round(const Round &) = delete;
	Round &operator=(const Round &) = delete;

	bool ok() const { return s_ != nullptr; }

	// Whether the stream's first WRITE is held (the hold's access): a
	// WRITE posted and, kStreamHeldMs later, none completed nor failed.
	// Else said (what came back) and false.
	bool held()
	{
		if (!s_)
			return false;
		within(kStreamHeldMs * time_scale(), [&] {
			return s_->done > 0 || s_->error;
		});
		bool held = s_->tried > 0 && !s_->done && !s_->error;
		CHECK(held, "the stream into the MR is not held: %ld WRITEs "
		      "tried, %ld completed %ld ms after it began, %s (the "
		      "hold kept none of its accesses)", s_->tried.load(),
		      s_->done.load(), kStreamHeldMs * time_scale(),
		      ibv_wc_status_str(ibv_wc_status(s_->error.load())));
		return held;
	}

	// Fork the child that deregisters the MR, through the parent's
	// uverbs file: its pid, or -1 (said).
	pid_t dereg()
	{
		fflush(nullptr);
		child_ = fork();
		if (child_ == 0)
			_exit(ibv_dereg_mr(mr_) ? 1 : 0);
		CHECK(child_ > 0, "fork: %s", strerror(errno));
		return child_;
	}

	// SIGKILL the child and reap it: its wait status (-1: none).
	int kill()
	{
		int status = -1;

		if (child_ > 0 && !::kill(child_, SIGKILL) &&
		    waitpid(child_, &status, 0) != child_)
			status = -1;
		child_ = -1;
		return status;
	}

private:
	Pair &p_;
	ibv_mr *mr_;
	std::unique_ptr<Stream> s_;
	pid_t child_ = -1;
};

// Whether wait status @status is a death by SIGKILL.
inline bool killed(int status)
{
	return status != -1 && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGKILL;
}

// The orphan, in this process (root: it arms the hold and reads the
// child's stack): a Round of an MR that @reg makes, whose stream's first
// WRITE the hold keeps; the child's dereg seen waiting for it, @queued
// (a count of releases queued) unchanged meanwhile; the child killed
// there; then, within 5 s, @queued +1 (the access let go, and its put
// queued the release). True if so; else said, or skipped where there is
// no hold (hold_missing()).
inline bool orphan_held(Pair &p, const std::function<ibv_mr *()> &reg,
			const std::function<long long()> &queued)
{
	std::string why = hold_missing(), stack;

	if (!why.empty()) {
		skip(why);
		return false;
	}
	Hold h;
	if (!h.ok())
		return false;
	const long long before = queued();
	const long ms = 5000 * time_scale();
	Round r(p, reg);
	if (!r.ok() || !r.held())
		return false;
	// The access is held (the hold taken) before the dereg begins.
	CHECK(within(ms, Hold::taken), "the stream is held, but no access "
	      "took the hold within %ld ms (%s not 0)", ms, kHoldAttr);
	if (failures)
		return false;
	pid_t child = r.dereg();
	if (child < 0)
		return false;
	bool waits = within(ms, [&] {
		stack = tasks::stack_of(child);
		return in_dereg_wait(stack);
	});
	CHECK(waits && queued() == before, "the child's ibv_dereg_mr of the "
	      "MR, within %ld ms: %s; releases queued +%lld; expected it "
	      "waiting in sroce_map_retire_held() under sroce_dereg_mr() for "
	      "the held access, none queued", ms, stack.c_str(),
	      queued() - before);
	if (failures)
		return false;
	int status = r.kill();
	CHECK(killed(status), "the child, killed in its dereg: wait status "
	      "%#x, expected killed by SIGKILL", status);
	bool grew = within(ms, [&] { return queued() > before; });
	CHECK(grew && queued() == before + 1, "releases queued +%lld within "
	      "%ld ms of the kill; expected +1: the held access let go of the "
	      "orphaned map, its put queued the pin's release",
	      queued() - before, ms);
	return !failures;
}

// Bytes of @target's @len, the MR's buffer (first filled with @old), that
// are neither @old nor what a's stream writes there (a's buffer's byte at
// the same offset in its kChunk).
inline size_t stray_bytes(const uint8_t *target, size_t len, uint8_t old,
			  const Side &a)
{
	size_t bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += target[i] != old && target[i] != a.buf[i % kChunk];
	return bad;
}

inline size_t stray_bytes(const Buf &target, uint8_t old, const Side &a)
{
	return stray_bytes(target.data(), target.size(), old, a);
}

} // namespace xfer::orphan
