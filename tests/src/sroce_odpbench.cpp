// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-odpbench: what on-demand paging costs, for make bench. One RC pair
// on DEV (path MTU 4096) WRITEs into memory of the other side in 1 MiB
// requests, 8 in flight.
//
//   sroce-odpbench DEV
//
// Prints "NAME VALUE" lines (NA when the device refuses ODP):
//   odp_write_pinned    MB/s, WRITEs over 64 MiB of a pinned MR
//   odp_write_first     MB/s, the same into a new ODP MR over memory never
//                       touched: every page faulted in by the WRITEs
//   odp_write_warm      MB/s, the same ODP MR again, its pages present
//   odp_write_implicit  MB/s, first touch through an implicit ODP MR
//   odp_pin_64M         MB/s, ibv_reg_mr of 64 MiB never touched (pinning
//                       faults every page in)
//   odp_prefetch_64M    MB/s, ibv_advise_mr(PREFETCH_WRITE) of a new ODP MR
//                       over 64 MiB never touched
//   odp_munmap_1G       ms, munmap of 1 GiB an ODP MR has present (every
//                       page invalidated)
//   odp_munmap_1G_implicit  ms, the same through an implicit ODP MR
//   munmap_1G           ms, munmap of 1 GiB touched, no MR
// The bench table divides the ODP rows by their pinned counterparts.
#include "xfer.h"

#include <algorithm>
#include <chrono>

namespace {

using clk = std::chrono::steady_clock;
using xfer::Pair;

const size_t kSweep = size_t(64) << 20, kGiB = size_t(1) << 30;
const int kOdp = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_ON_DEMAND;

double secs_since(clk::time_point t0)
{
	return std::chrono::duration<double>(clk::now() - t0).count();
}

// a WRITEs its 1 MiB buffer over [dst, dst + kSweep) through @rkey.
// Return: MB/s, or -1 if a WRITE failed or the bytes did not land.
double sweep(Pair &p, uint8_t *dst, uint32_t rkey)
{
	const size_t n = kSweep / xfer::kBuf;
	size_t posted = 0, done = 0;
	auto t0 = clk::now();

	while (done < n) {
		while (posted < n && posted - done < 8) {
			if (xfer::post_send(p.a, IBV_WR_RDMA_WRITE, 0,
					    xfer::kBuf, posted,
					    uintptr_t(dst + posted * xfer::kBuf),
					    rkey))
				return -1;
			posted++;
		}
		ibv_wc wc;
		int k = ibv_poll_cq(p.a.cq, 1, &wc);
		if (k < 0 || (k == 1 && wc.status != IBV_WC_SUCCESS))
			return -1;
		done += k;
	}
	double s = secs_since(t0);
	if (memcmp(dst + kSweep - xfer::kBuf, p.a.buf.data(), xfer::kBuf))
		return -1;
	return kSweep / 1e6 / s;
}

uint8_t *fresh(size_t len)
{
	void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
}

// Milliseconds munmap of @m (@len bytes) takes.
double unmap_ms(uint8_t *m, size_t len)
{
	auto t0 = clk::now();
	munmap(m, len);
	return secs_since(t0) * 1e3;
}

// PREFETCH_WRITE of [m, m + len) through @mr. Return: seconds, or -1.
double prefetch(Pair &p, ibv_mr *mr, uint8_t *m, size_t len)
{
	auto t0 = clk::now();
	for (size_t off = 0; off < len; off += kGiB / 4) {
		ibv_sge sge = { uintptr_t(m + off),
				uint32_t(std::min(len - off, kGiB / 4)),
				mr->lkey };
		if (ibv_advise_mr(p.b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				  IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1))
			return -1;
	}
	return secs_since(t0);
}

// A new region of @len bytes, never touched, registered with @access;
// @f(m, mr) measures it. Then both go (munmap again is harmless if @f
// unmapped it). Return: what @f returned, or -1 if the device refused.
template <typename F> double on_new_mr(Pair &p, size_t len, int access, F f)
{
	uint8_t *m = fresh(len);
	ibv_mr *mr = m ? ibv_reg_mr(p.b.pd, m, len, access) : nullptr;
	double v = mr ? f(m, mr) : -1;

	if (mr)
		ibv_dereg_mr(mr);
	if (m)
		munmap(m, len);
	return v;
}

void run(Pair &p)
{
	for (size_t i = 0; i < xfer::kBuf; i++)
		p.a.buf[i] = uint8_t(i * 7 + 1);

	report("odp_write_pinned",
	       on_new_mr(p, kSweep, kOdp & ~IBV_ACCESS_ON_DEMAND,
			 [&](uint8_t *m, ibv_mr *mr) {
				 return sweep(p, m, mr->rkey);
			 }));
	double warm = -1;
	report("odp_write_first",
	       on_new_mr(p, kSweep, kOdp, [&](uint8_t *m, ibv_mr *mr) {
		       double first = sweep(p, m, mr->rkey);
		       warm = sweep(p, m, mr->rkey);
		       return first;
	       }));
	report("odp_write_warm", warm);

	ibv_mr *imp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kOdp);
	uint8_t *m = fresh(kSweep);
	report("odp_write_implicit", imp && m ? sweep(p, m, imp->rkey) : -1);
	if (m)
		munmap(m, kSweep);

	auto t0 = clk::now();
	report("odp_pin_64M",
	       on_new_mr(p, kSweep, IBV_ACCESS_LOCAL_WRITE,
			 [&](uint8_t *, ibv_mr *) {
				 return kSweep / 1e6 / secs_since(t0);
			 }));
	report("odp_prefetch_64M",
	       on_new_mr(p, kSweep, kOdp, [&](uint8_t *m, ibv_mr *mr) {
		       double s = prefetch(p, mr, m, kSweep);
		       return s > 0 ? kSweep / 1e6 / s : -1;
	       }));

	// Invalidation: munmap of 1 GiB an ODP MR has present, before the MR
	// is deregistered, so that munmap invalidates every page.
	report("odp_munmap_1G",
	       on_new_mr(p, kGiB, kOdp, [&](uint8_t *m, ibv_mr *mr) {
		       return prefetch(p, mr, m, kGiB) < 0 ? -1 :
							      unmap_ms(m, kGiB);
	       }));
	m = fresh(kGiB);
	double s = imp && m ? prefetch(p, imp, m, kGiB) : -1;
	report("odp_munmap_1G_implicit", s >= 0 ? unmap_ms(m, kGiB) : -1);
	if (s < 0 && m)
		munmap(m, kGiB);
	if (imp)
		ibv_dereg_mr(imp);

	m = fresh(kGiB);
	if (m)
		memset(m, 1, kGiB);
	report("munmap_1G", m ? unmap_ms(m, kGiB) : -1);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sroce-odpbench DEV\n");
		return 2;
	}
	Pair p;
	p.mtu = IBV_MTU_4096;
	p.ctx = open_device(argv[1]);
	if (!p.ctx) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	if (xfer::setup(p))
		run(p);
	xfer::teardown(p);
	ibv_close_device(p.ctx);
	return 0;
}
