// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// An orphaned pin, made on purpose: an ibv_dereg_mr() killed while an
// access to its MR is under way lets go of the MR's map without waiting
// for that access (sroce_map_wait()), and the access's last put queues
// the pin's release on its user's own work item (sroce_pin_put_async(),
// sroce_kmem_release_queue()). Rounds of an MR of b's, a's stream of
// RDMA WRITEs into it and a forked child's dereg of it, SIGKILLed as it
// starts, until one round queued a release: the caller says how it sees
// that (a count that grows). For sroce-xfer's orphan_* tests and
// sroce-stall's release_* tests.
#pragma once

#include "check.h"
#include "xfer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <functional>
#include <sys/wait.h>
#include <thread>

namespace xfer::orphan {

// Where the MR is seen, its bytes, and the WRITEs' size: a's buffer's
// first kChunk bytes, to kChunk-aligned offsets of the MR (an MR of
// kChunk or less: its length, to its start).
inline const uint64_t kIova = 0x5b000000000ULL;
inline const size_t kLen = 1 << 20;
inline const size_t kChunk = 64 * 1024;
// Rounds of a killed dereg at most, before the caller is told that none
// orphaned the MR's map (a failure: the trigger did not happen).
inline const int kRounds = 300;

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

// A forked child deregisters @mr (the parent's, on the shared uverbs fd)
// and the parent SIGKILLs it as it starts: the dereg is killed at some
// point of its wait for the stream's accesses, or not at all (it ended
// first, or had not begun). Either way @mr is gone after.
inline void killed_dereg(ibv_mr *mr, int round)
{
	int go[2];

	if (pipe2(go, O_CLOEXEC)) {
		CHECK(false, "pipe: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char c = 'g';
		if (write(go[1], &c, 1) != 1)
			_exit(2);
		_exit(ibv_dereg_mr(mr) ? 1 : 0);
	}
	close(go[1]);
	char c;
	bool started = read(go[0], &c, 1) == 1;
	close(go[0]);
	// Spread the kill over the dereg's wait: 0 to 127 us later.
	for (int i = 0, n = (round * 37) % 128; i < n; i += 8)
		usleep(8);
	kill(pid, SIGKILL);
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid && started,
	      "the dereg's child: %s", strerror(errno));
	// The parent's copy of the ibv_mr: deregistered here if the child
	// was killed before its dereg began; else the kernel refuses the
	// handle, and the copy, which libibverbs frees only on success,
	// leaks.
	(void)ibv_dereg_mr(mr);
}

// Rounds of an MR that @reg makes (kLen bytes seen at kIova, or kChunk
// or less, remote write granted), a's stream of WRITEs into it and a
// killed dereg, until @queued, a count of releases queued, grew in a
// round: read once the round's QPs were back to RTS (moving to RESET
// waits for their runs, so the access that dropped the map last is
// done). Returns that round (from 0); or -1, said, if a round failed or
// none grew the count in kRounds, or in @ms if not -1 (the trigger did
// not happen). @ms bounds the rounds' waits too: a round under way at
// its end stops waiting for its WRITEs, and only kills its dereg.
inline int orphan_rounds(Pair &p, const std::function<ibv_mr *()> &reg,
			 const std::function<long long()> &queued,
			 long ms = -1)
{
	using clock = std::chrono::steady_clock;
	auto end = clock::now() + std::chrono::milliseconds(ms);
	auto left_ms = [&] {
		return std::chrono::duration_cast<std::chrono::milliseconds>(
			       end - clock::now())
			.count();
	};
	int round = 0;

	for (; round < kRounds && !failures && (ms < 0 || left_ms() > 0);
	     round++) {
		ibv_mr *mr = reg();
		CHECK(mr, "round %d: registering the MR: %s", round,
		      strerror(errno));
		if (!mr)
			return -1;
		long long before = queued();
		{
			Stream s(p, mr->rkey, mr->length);
			long wait = 5000 * time_scale();
			within(ms < 0 ? wait : std::min(wait, left_ms()),
			       [&] { return s.done >= 16 || s.error; });
			CHECK(s.done >= 16 || (ms >= 0 && left_ms() <= 0 &&
					       !s.error),
			      "round %d: %ld WRITEs done, %s", round,
			      s.done.load(),
			      ibv_wc_status_str(ibv_wc_status(s.error.load())));
			killed_dereg(mr, round);
		}
		restate(p);
		if (queued() > before)
			return round;
	}
	CHECK(failures, "no killed dereg of %d (in %ld ms at most; -1: no "
	      "limit) left its map to an access (no release queued): the "
	      "trigger did not happen", round, ms);
	return -1;
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
