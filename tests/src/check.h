// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// What every sroce test program shares: CHECK(), which counts a failure and
// says what was expected and what came back, and opening a device by name.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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
