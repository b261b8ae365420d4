// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-mrbench: memory registration speed, for make bench (any device, so
// that rdma_rxe can be measured the same way).
//
//   sroce-mrbench DEV
//
// Prints "NAME VALUE" lines, VALUE in operations per second (NA when the
// device refuses the operation):
//   reg_dereg_SIZE      ibv_reg_mr + ibv_dereg_mr of SIZE bytes, 4 KiB..1 GiB
//   rereg_access_1G     ibv_rereg_mr(CHANGE_ACCESS) of a 1 GiB MR
//   rereg_pd_1G         ibv_rereg_mr(CHANGE_PD) of a 1 GiB MR
//   rereg_trans_256M    ibv_rereg_mr(CHANGE_TRANSLATION), 256 MiB each way
//   dereg_reg_256M      what rereg_trans_256M replaces
#include "check.h"

#include <chrono>
#include <cstdint>
#include <sys/mman.h>

namespace {

using clk = std::chrono::steady_clock;

const int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ;

// Runs @op until @min_iters and 0.5 s are done; ops per second, or -1 if
// an operation failed.
template <typename Op> double rate(int min_iters, Op op)
{
	auto start = clk::now();
	int n = 0;
	double secs;
	do {
		if (!op())
			return -1;
		n++;
		secs = std::chrono::duration<double>(clk::now() - start).count();
	} while (n < min_iters || secs < 0.5);
	return n / secs;
}

uint8_t *map(size_t len)
{
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sroce-mrbench DEV\n");
		return 2;
	}
	ibv_context *ctx = open_device(argv[1]);
	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	ibv_pd *pd = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
	const size_t gib = size_t(1) << 30;
	uint8_t *big = map(gib);
	if (!pd || !pd2 || !big) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}

	for (size_t len : { size_t(4096), size_t(65536), size_t(1) << 20,
			    size_t(64) << 20, gib }) {
		char name[64];
		snprintf(name, sizeof(name), "reg_dereg_%zu", len);
		report(name, rate(len >= gib ? 3 : 20, [&] {
			       ibv_mr *mr = ibv_reg_mr(pd, big, len, kAccess);
			       return mr && !ibv_dereg_mr(mr);
		       }));
	}

	ibv_mr *mr = ibv_reg_mr(pd, big, gib, kAccess);
	bool flip = false;
	report("rereg_access_1G", !mr ? -1 : rate(20, [&] {
		       flip = !flip;
		       return !ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS,
					    nullptr, nullptr, 0,
					    flip ? IBV_ACCESS_LOCAL_WRITE :
						   kAccess);
	       }));
	report("rereg_pd_1G", !mr ? -1 : rate(20, [&] {
		       flip = !flip;
		       return !ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD,
					    flip ? pd2 : pd, nullptr, 0, 0);
	       }));
	if (mr)
		ibv_dereg_mr(mr);

	const size_t quarter = gib / 4;
	mr = ibv_reg_mr(pd, big, quarter, kAccess);
	report("rereg_trans_256M", !mr ? -1 : rate(5, [&] {
		       flip = !flip;
		       return !ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION,
					    nullptr, big + (flip ? quarter : 0),
					    quarter, 0);
	       }));
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(pd, big, quarter, kAccess);
	report("dereg_reg_256M", !mr ? -1 : rate(5, [&] {
		       flip = !flip;
		       if (ibv_dereg_mr(mr))
			       return false;
		       mr = ibv_reg_mr(pd, big + (flip ? quarter : 0), quarter,
				       kAccess);
		       return mr != nullptr;
	       }));
	if (mr)
		ibv_dereg_mr(mr);
	munmap(big, gib);
	ibv_dealloc_pd(pd2);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
