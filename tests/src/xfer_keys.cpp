// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of key hardening: a stale rkey reaches nothing, an MR at
// the top of the iova space does not wrap, a 1 GiB MR carries traffic.
#include "xfer.h"

namespace xfer {
namespace {

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
	expect_eq_status(write_to(p, UINT64_MAX - 31, mr->rkey, 64, 82),
			 IBV_WC_REM_ACCESS_ERR, "write wrapping past 2^64");
	restate(p);
	expect_eq_status(write_to(p, 0, mr->rkey, 16, 83),
			 IBV_WC_REM_ACCESS_ERR, "write at iova 0");
	restate(p);
	expect_eq_status(write_to(p, UINT64_MAX - 10, p.b.mr->rkey, 64, 84),
			 IBV_WC_REM_ACCESS_ERR, "ordinary MR, address near 2^64");
	restate(p);
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
	{ "stale_rkey", t_stale_rkey, nullptr, false },
	{ "mr_top_iova", t_mr_top_iova, nullptr, false },
	{ "big_mr", t_big_mr, nullptr, false },
};

} // namespace

const std::span<const Test> keys_tests(tests);

} // namespace xfer
