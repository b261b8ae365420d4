// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of key hardening: keys cannot be guessed from other
// keys, a stale rkey reaches nothing, an MR at the top of the iova space does
// not wrap, a 1 GiB MR carries traffic.
#include "xfer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace xfer {
namespace {

// Fraction, in percent, of @n events counted @k times.
double percent(size_t k, size_t n)
{
	return n ? 100.0 * double(k) / double(n) : 0;
}

// What a sequence of keys tells about the next one: nothing. No key twice,
// each of the 32 bits set about half the time, each index bit flipping
// between consecutive keys about half the time (a counter flips its low bit
// every time and its high bits never), and no difference between
// consecutive keys repeating more than chance allows (one in 2^24 per
// pair of differences). Bounds are 10 standard deviations wide.
void check_random_keys(const std::vector<uint32_t> &keys, const char *what)
{
	const size_t n = keys.size();
	const double spread = 10 * 50 / std::sqrt(double(n));
	std::set<uint32_t> seen;
	size_t dup = 0;
	for (uint32_t k : keys)
		dup += !seen.insert(k).second;
	CHECK(dup == 0, "%s: %zu of %zu keys handed out twice", what, dup, n);
	CHECK(std::find(keys.begin(), keys.end(), 0u) == keys.end(),
	      "%s: a key of 0", what);
	for (int bit = 0; bit < 32; bit++) {
		size_t set = 0, flips = 0;
		for (size_t i = 0; i < n; i++) {
			set += keys[i] >> bit & 1;
			if (i)
				flips += (keys[i] ^ keys[i - 1]) >> bit & 1;
		}
		double f = percent(set, n);
		CHECK(std::abs(f - 50) <= spread,
		      "%s: key bit %d set in %.1f%% of %zu keys", what, bit, f,
		      n);
		f = percent(flips, n - 1);
		CHECK(bit < 8 || std::abs(f - 50) <= spread,
		      "%s: index bit %d flips in %.1f%% of consecutive keys",
		      what, bit - 8, f);
	}
	std::map<uint32_t, size_t> deltas;
	size_t repeats = 0;
	for (size_t i = 1; i < n; i++)
		repeats += deltas[(keys[i] >> 8) - (keys[i - 1] >> 8)]++ > 0;
	// Expected n^2 / 2^25 (about 3 for 10^4 keys).
	size_t bound = 20 + n * n / (size_t(1) << 22);
	CHECK(repeats <= bound,
	      "%s: %zu index differences of consecutive keys repeat (at most "
	      "%zu by chance)", what, repeats, bound);
}

// Keys are unpredictable: 10^4 registrations (each deregistered before the
// next, as churn does) and 2,000 windows get keys with no relation between
// them; lkey == rkey. Keys of deregistered MRs, written through at the
// memory registered again, are refused and write nothing.
void t_keys_unpredictable(Pair &p)
{
	uint8_t *mem = &p.b.buf[8192];
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	std::vector<uint32_t> keys;
	for (int i = 0; i < 10000; i++) {
		ibv_mr *mr = ibv_reg_mr(p.b.pd, mem, 4096, access);
		CHECK(mr, "reg #%d: %s", i, strerror(errno));
		if (!mr)
			return;
		CHECK(mr->lkey == mr->rkey, "lkey 0x%x, rkey 0x%x", mr->lkey,
		      mr->rkey);
		keys.push_back(mr->rkey);
		CHECK(ibv_dereg_mr(mr) == 0, "dereg #%d", i);
	}
	check_random_keys(keys, "MRs");

	std::vector<ibv_mw *> mws;
	std::vector<uint32_t> mw_keys;
	for (int i = 0; i < 2000; i++) {
		ibv_mw *mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2);
		CHECK(mw, "alloc_mw #%d: %s", i, strerror(errno));
		if (!mw)
			break;
		mws.push_back(mw);
		mw_keys.push_back(mw->rkey);
	}
	check_random_keys(mw_keys, "windows");
	for (ibv_mw *mw : mws)
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");

	ibv_mr *fresh = ibv_reg_mr(p.b.pd, mem, 4096, access);
	CHECK(fresh, "reg: %s", strerror(errno));
	if (!fresh)
		return;
	memset(mem, 0, 4096);
	fill(p.a, 0, 4096, 7);
	for (size_t i = 0; i < keys.size(); i += keys.size() / 16) {
		expect_eq_status(write_to(p, uintptr_t(mem), keys[i], 4096,
					  100 + i),
				 IBV_WC_REM_ACCESS_ERR,
				 "write with a deregistered MR's key");
		restate(p);
	}
	CHECK(std::all_of(mem, mem + 4096, [](uint8_t b) { return !b; }),
	      "a deregistered MR's key wrote into the memory registered again");
	expect_eq_status(write_to(p, uintptr_t(mem), fresh->rkey, 4096, 99),
			 IBV_WC_SUCCESS, "write with the new key");
	CHECK(!memcmp(mem, &p.a.buf[0], 4096), "data differs");
	CHECK(ibv_dereg_mr(fresh) == 0, "dereg");
}

// A key from a deregistered MR does not reach the memory registered again
// by its next owner: REM_ACCESS_ERR, not a byte written.
void t_stale_rkey(Pair &p)
{
	uint8_t *mem = &p.b.buf[8192];
	ibv_mr *old = ibv_reg_mr(p.b.pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE |
						      IBV_ACCESS_REMOTE_WRITE);
	CHECK(old, "reg: %s", strerror(errno));
	if (!old)
		return;
	uint32_t stale = old->rkey;
	CHECK(ibv_dereg_mr(old) == 0, "dereg");
	ibv_mr *fresh = ibv_reg_mr(p.b.pd, mem, 4096,
				   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE);
	CHECK(fresh && fresh->rkey != stale, "new key 0x%x, stale 0x%x",
	      fresh ? fresh->rkey : 0, stale);
	memset(mem, 0, 4096);
	fill(p.a, 0, 4096, 6);
	expect_eq_status(write_to(p, uintptr_t(mem), stale, 4096, 80),
			 IBV_WC_REM_ACCESS_ERR, "write with a stale rkey");
	for (int i = 0; i < 4096; i++)
		if (mem[i]) {
			CHECK(false, "stale rkey wrote byte %d", i);
			break;
		}
	if (fresh)
		CHECK(ibv_dereg_mr(fresh) == 0, "dereg");
}

// An MR whose iova range ends at 2^64 - 1: its last bytes are reachable,
// nothing wraps around, and addresses near 2^64 are refused elsewhere.
void t_mr_top_iova(Pair &p)
{
	const uint64_t len = 8192, iova = UINT64_MAX - len + 1;
	// The iova's offset in its page is the address's (ib_uverbs checks).
	auto *mem = static_cast<uint8_t *>(mmap(nullptr, len,
						PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS,
						-1, 0));
	ibv_mr *mr = ibv_reg_mr_iova(p.b.pd, mem, len, iova,
				     IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr, "reg at the top of the iova space: %s", strerror(errno));
	if (!mr)
		return;
	fill(p.a, 0, 64, 12);
	expect_eq_status(write_to(p, UINT64_MAX - 63, mr->rkey, 64, 81),
			 IBV_WC_SUCCESS, "write to the last 64 bytes");
	CHECK(!memcmp(mem + len - 64, &p.a.buf[0], 64), "data differs");
	// Refused: not a byte of the iova MR's memory changes either.
	std::vector<uint8_t> was(mem, mem + len);
	refused_write(p, UINT64_MAX - 31, mr->rkey, 64, 82,
		      IBV_WC_REM_ACCESS_ERR, "write wrapping past 2^64");
	refused_write(p, 0, mr->rkey, 64, 83, IBV_WC_REM_ACCESS_ERR,
		      "write at iova 0");
	refused_write(p, UINT64_MAX - 10, p.b.mr->rkey, 64, 84,
		      IBV_WC_REM_ACCESS_ERR, "ordinary MR, address near 2^64");
	CHECK(!memcmp(mem, was.data(), len), "a refused write changed the "
	      "memory of the MR at the top of the iova space");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	munmap(mem, len);
}

// A 1 GiB MR carries traffic at its start, middle and end.
void t_big_mr(Pair &p)
{
	const size_t len = size_t(1) << 30;
	auto *mem = static_cast<uint8_t *>(mmap(nullptr, len,
						PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS,
						-1, 0));
	CHECK(mem != MAP_FAILED, "mmap 1 GiB");
	if (mem == MAP_FAILED)
		return;
	ibv_mr *mr = ibv_reg_mr(p.b.pd, mem, len,
				IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "reg 1 GiB: %s", strerror(errno));
	if (mr) {
		uint64_t id = 90;
		for (size_t off : { size_t(0), len / 2 - 1000,
				    len - 65536 }) {
			fill(p.a, 0, 65536, uint8_t(off >> 20));
			expect_eq_status(write_to(p, uintptr_t(mem + off),
						  mr->rkey, 65536, id++),
					 IBV_WC_SUCCESS, "write into 1 GiB");
			CHECK(!memcmp(mem + off, &p.a.buf[0], 65536),
			      "data at offset %zu differs", off);
		}
		CHECK(ibv_dereg_mr(mr) == 0, "dereg 1 GiB");
	}
	munmap(mem, len);
}

const Test tests[] = {
	{ "keys_unpredictable", t_keys_unpredictable, nullptr, false },
	{ "stale_rkey", t_stale_rkey, nullptr, false },
	{ "mr_top_iova", t_mr_top_iova, nullptr, false },
	{ "big_mr", t_big_mr, nullptr, false },
};

} // namespace

const std::span<const Test> keys_tests(tests);

} // namespace xfer
