// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// What every sroce test program shares: CHECK(), which counts a failure and
// says what was expected and what came back, and opening a device by name.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>
#include <unistd.h>
#include <vector>

inline int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, \
				#cond);                                        \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

// How much slower this machine answers than the one the tests' time limits
// were set on: SROCE_TIME_SCALE (1, or a power of two: 4 on the debug
// kernel), as tests/lib.sh's tmo() reads it. Every limit is multiplied by it.
inline long time_scale()
{
	const char *s = getenv("SROCE_TIME_SCALE");
	long v = s ? atol(s) : 1;

	return v > 0 ? v : 1;
}

// An RC transport timeout (4.096 us * 2^t) of 14 (67 ms), one more per
// doubling of time_scale() (tests/lib.sh's qp_timeout() the same).
inline uint8_t scaled_qp_timeout(uint8_t t = 14)
{
	for (long s = time_scale(); s > 1 && t < 20; s /= 2)
		t++;
	return t;
}

// A bench's result line for make bench: "NAME VALUE", or "NAME NA" when
// @v is negative (not measured: refused or failed).
inline void report(const char *name, double v)
{
	if (v < 0)
		printf("%s NA\n", name);
	else
		printf("%s %.1f\n", name, v);
	fflush(stdout);
}

// A send WR of one SGE; the caller adds what its opcode needs.
inline ibv_send_wr one_sge_wr(ibv_sge *sge, ibv_wr_opcode op, uint64_t id,
			      unsigned flags = IBV_SEND_SIGNALED)
{
	ibv_send_wr wr{};

	wr.wr_id = id;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	return wr;
}

// Waits up to @ms for the next async event of @ctx and acks it. Returns
// false (and says why) if none came.
inline bool next_async_event(ibv_context *ctx, int ms, ibv_async_event *out)
{
	pollfd pfd = { ctx->async_fd, POLLIN, 0 };

	if (poll(&pfd, 1, ms) <= 0) {
		fprintf(stderr, "FAIL: no async event within %d ms\n", ms);
		return false;
	}
	if (ibv_get_async_event(ctx, out)) {
		fprintf(stderr, "FAIL: ibv_get_async_event: %s\n",
			strerror(errno));
		return false;
	}
	ibv_ack_async_event(out);
	return true;
}

// An async event of @ctx is waiting to be read.
inline bool async_event_pending(ibv_context *ctx)
{
	pollfd pfd = { ctx->async_fd, POLLIN, 0 };

	return poll(&pfd, 1, 0) == 1;
}

// The objects of kind @what ("qp", "cq", "mr") on device @dev, as
// "rdma -j -dd resource show WHAT dev DEV" lists them: each one flat JSON
// object, as text (driver attributes are "drv_"-prefixed there). Only
// this process's, if @mine. Empty, and a failure, if rdma fails.
inline std::vector<std::string> res_objects(const char *dev, const char *what,
					    bool mine = true)
{
	// QPs are filtered by link, the others by device.
	std::string cmd = std::string("rdma -j -dd resource show ") + what +
			  (strcmp(what, "qp") ? " dev " : " link ") + dev +
			  (strcmp(what, "qp") ? "" : "/1");
	std::string pid = "\"pid\":" + std::to_string(getpid()) + ",";
	std::string out;
	std::vector<std::string> objs;
	char buf[4096];
	size_t n;
	FILE *f = popen(cmd.c_str(), "r");

	while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		out.append(buf, n);
	int status = f ? pclose(f) : -1;
	CHECK(status == 0, "%s: status %d", cmd.c_str(), status);
	for (size_t at = out.find('{'); at != std::string::npos;
	     at = out.find('{', at + 1)) {
		std::string obj = out.substr(at, out.find('}', at) - at + 1);
		if (!mine || obj.find(pid) != std::string::npos)
			objs.push_back(obj);
	}
	return objs;
}

// The number @key ("cqe", "drv_kmem") of such an object, or -1 if it has
// none.
inline long long res_field(const std::string &obj, const char *key)
{
	std::string k = std::string("\"") + key + "\":";
	size_t at = obj.find(k);

	return at == std::string::npos ? -1 : atoll(obj.c_str() + at + k.size());
}

// Opens the RDMA device called @name, or returns nullptr.
inline ibv_context *open_device(const char *name)
{
	ibv_context *ctx = nullptr;
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);

	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}
