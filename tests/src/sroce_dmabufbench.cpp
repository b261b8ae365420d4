// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-dmabufbench: what a dma-buf MR costs against a pinned MR, for make
// bench (issue 38). One RC pair on DEV (path MTU 4096, its two QPs
// connected to each other: the packets loop back) WRITEs from a's 1 MiB
// buffer over the whole of a 32 MiB MR of b's, 16 requests in flight, in
// 64 KiB and in 1 MiB requests: into a dma-buf MR, and into a pinned MR of
// ordinary memory of the same size, alternating, 5 times each. Every
// sweep's bytes are checked through the owner's mapping of the target.
//
//   sroce-dmabufbench DEV
//
// The dma-buf is a udmabuf over a sealed memfd; where sroce cannot map one
// (6.1's udmabuf has no kernel mapping; see sroce.md, "dma-buf MRs"), a
// buffer of the system heap (/dev/dma_heap/system). Prints "NAME VALUE"
// lines:
//   dmabuf_exporter       udmabuf or system, the exporter measured; none
//                         when no dma-buf could be registered
//   dmabuf_why TEXT       a sentence: why udmabuf was not used, why no
//                         dma-buf was, or why a figure is NA
//   dmabuf_write_SIZE     MB/s (2^20 bytes a second, as perftest counts
//                         them) into the dma-buf MR, the median of 5
//   dmabuf_pinned_SIZE    MB/s into the pinned MR, the median of 5
// for SIZE 65536 and 1048576; NA where not measured (dmabuf_why says why).
#include "dmabuf.h"
#include "xfer.h"

#include <algorithm>
#include <chrono>
#include <memory>

namespace {

using clk = std::chrono::steady_clock;
using xfer::Pair;

const size_t kLen = size_t(32) << 20;	// udmabuf allows 64 MiB by default
const size_t kInFlight = 16;
const int kReps = 5;
const double kMinSecs = 0.25;	// of WRITEs in one measurement, at least
const int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

void why(const std::string &text)
{
	printf("dmabuf_why %s\n", text.c_str());
	fflush(stdout);
}

// An MR of b's to WRITE into: its iova, its rkey, and the owner's mapping
// of its bytes.
struct Target {
	ibv_mr *mr = nullptr;
	uint64_t iova = 0;
	uint8_t *map = nullptr;
};

// a WRITEs [0, kLen) of @t in requests of @len bytes, request i from a's
// buffer at (i * len) mod kBuf, filled first with a pattern of @seed.
// Return: the seconds the WRITEs took, or -1 (and why()) if one failed or
// the bytes that landed are not a's.
double sweep(Pair &p, const Target &t, size_t len, uint8_t seed)
{
	const size_t n = kLen / len;
	const auto patience = std::chrono::seconds(10 * time_scale());
	size_t posted = 0, done = 0;

	xfer::fill(p.a, 0, xfer::kBuf, seed);
	auto t0 = clk::now(), last = t0;
	while (done < n) {
		while (posted < n && posted - done < kInFlight) {
			size_t off = posted * len;
			if (xfer::post_send(p.a, IBV_WR_RDMA_WRITE,
					    off % xfer::kBuf, uint32_t(len),
					    posted, t.iova + off,
					    t.mr->rkey)) {
				why(std::string("post of a WRITE: ") +
				    strerror(errno));
				return -1;
			}
			posted++;
		}
		ibv_wc wc;
		int k = ibv_poll_cq(p.a.cq, 1, &wc);
		if (k < 0) {
			why("ibv_poll_cq failed");
			return -1;
		}
		if (k == 1 && wc.status != IBV_WC_SUCCESS) {
			why(std::string("a WRITE completed with ") +
			    ibv_wc_status_str(wc.status));
			return -1;
		}
		if (k == 1) {
			last = clk::now();
		} else if (clk::now() - last > patience) {
			why("no WRITE completed within " +
			    std::to_string(patience.count()) + " s");
			return -1;
		}
		done += k;
	}
	double secs = std::chrono::duration<double>(clk::now() - t0).count();
	for (size_t off = 0; off < kLen; off += xfer::kBuf) {
		if (memcmp(t.map + off, p.a.buf.data(), xfer::kBuf)) {
			why("the bytes a WRITE sweep left differ from a's, the "
			    "first MiB that does at offset " +
			    std::to_string(off));
			return -1;
		}
	}
	return secs;
}

// Sweeps of @t in @len requests for kMinSecs at least (two at least).
// Return: MB/s (2^20 bytes a second), or -1 if a sweep failed.
double bandwidth(Pair &p, const Target &t, size_t len, uint8_t &seed)
{
	double secs = 0;
	size_t sweeps = 0;

	while (sweeps < 2 || secs < kMinSecs) {
		double s = sweep(p, t, len, seed++);
		if (s < 0) {
			xfer::restate(p);
			return -1;
		}
		secs += s;
		sweeps++;
	}
	return double(sweeps * kLen) / (1 << 20) / secs;
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

// The dma-buf to measure: a udmabuf if sroce maps one here, else a system
// heap buffer; its MR in @t. Return: the exporter's name, or nullptr after
// why() said why there is none.
const char *dmabuf_target(Pair &p, std::unique_ptr<xfer::UDmaBuf> &u,
			  std::unique_ptr<xfer::HeapBuf> &h, Target &t)
{
	u = std::make_unique<xfer::UDmaBuf>(kLen);
	if (u->fd() >= 0) {
		t.mr = ibv_reg_dmabuf_mr(p.b.pd, 0, kLen, uintptr_t(u->map()),
					 u->fd(), kAccess);
		if (t.mr) {
			t.iova = uintptr_t(u->map());
			t.map = u->map();
			return "udmabuf";
		}
		int err = errno;
		why(std::string("udmabuf not used: ibv_reg_dmabuf_mr: ") +
		    strerror(err) +
		    (err == EOPNOTSUPP ?
			     " (sroce maps no udmabuf on this kernel, see "
			     "sroce.md, dma-buf MRs)" :
			     ""));
	} else {
		why("udmabuf not used: " + u->why());
	}
	u.reset();
	h = std::make_unique<xfer::HeapBuf>(kLen);
	if (!h->map()) {
		why("system heap not used: " + h->why());
		h.reset();
		return nullptr;
	}
	t.mr = ibv_reg_dmabuf_mr(p.b.pd, 0, kLen, uintptr_t(h->map()),
				 h->fd(), kAccess);
	if (!t.mr) {
		why(std::string("system heap not used: ibv_reg_dmabuf_mr: ") +
		    strerror(errno));
		h.reset();
		return nullptr;
	}
	t.iova = uintptr_t(h->map());
	t.map = h->map();
	return "system";
}

// Ordinary memory, every page present, registered (pinned) as @t's MR.
bool pinned_target(Pair &p, Target &t)
{
	void *m = mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (m == MAP_FAILED) {
		why(std::string("mmap of the pinned MR's memory: ") +
		    strerror(errno));
		return false;
	}
	t.map = static_cast<uint8_t *>(m);
	t.iova = uintptr_t(m);
	t.mr = ibv_reg_mr(p.b.pd, m, kLen, kAccess);
	if (!t.mr)
		why(std::string("ibv_reg_mr of the pinned MR: ") +
		    strerror(errno));
	return t.mr;
}

// For each size, kReps measurements of each MR, alternating (the one
// measured first alternating too), and their medians; NA for an MR that
// is missing or a measurement that failed.
void run(Pair &p, const Target &dmabuf, const Target &pinned)
{
	uint8_t seed = 1;

	for (size_t len : { size_t(64) << 10, size_t(1) << 20 }) {
		std::vector<double> d, q;
		bool d_ok = dmabuf.mr, q_ok = pinned.mr;

		for (int i = 0; i < kReps && (d_ok || q_ok); i++) {
			for (int k = 0; k < 2; k++) {
				// the dma-buf MR first when i is even
				bool dm = (k == 0) == (i % 2 == 0);
				bool &ok = dm ? d_ok : q_ok;
				double v = ok ? bandwidth(p, dm ? dmabuf : pinned,
							  len, seed) :
						-1;
				ok = ok && v >= 0;
				(dm ? d : q).push_back(v);
			}
		}
		std::string n = std::to_string(len);
		report(("dmabuf_write_" + n).c_str(), d_ok ? median(d) : -1);
		report(("dmabuf_pinned_" + n).c_str(), q_ok ? median(q) : -1);
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sroce-dmabufbench DEV\n");
		return 2;
	}
	Pair p;
	p.mtu = IBV_MTU_4096;
	p.ctx = open_device(argv[1]);
	if (!p.ctx) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	std::unique_ptr<xfer::UDmaBuf> u;
	std::unique_ptr<xfer::HeapBuf> h;
	Target dmabuf, pinned;
	if (xfer::setup(p)) {
		const char *exporter = dmabuf_target(p, u, h, dmabuf);
		printf("dmabuf_exporter %s\n", exporter ? exporter : "none");
		if (exporter)
			pinned_target(p, pinned);
		run(p, dmabuf, pinned);
	}
	for (Target *t : { &dmabuf, &pinned })
		if (t->mr)
			ibv_dereg_mr(t->mr);
	if (pinned.map)
		munmap(pinned.map, kLen);
	u.reset();
	h.reset();
	xfer::teardown(p);
	ibv_close_device(p.ctx);
	return failures ? 1 : 0;
}
