// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-memcpy: one thread's memory copy bandwidth, for make bench: a limit
// for a software RDMA device, which copies each byte twice (into a packet
// at the sender, out of it at the receiver), whatever its device.
//
//   sroce-memcpy
//
// Prints "memcpy_1M VALUE": memcpy() of 1 MiB pieces, from a 64 MiB buffer
// into another (larger than any cache, as the bench's transfers are), for
// at least a second; VALUE in MB/s as perftest counts them (2^20 bytes a
// second), or NA when the buffers cannot be had or the copy is wrong.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>

namespace {

using clk = std::chrono::steady_clock;

const size_t kPiece = size_t(1) << 20;
const size_t kBuf = size_t(64) << 20;

uint8_t *map(size_t len)
{
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
}

// One pass: the whole of @src into @dst, a piece at a time. The empty asm
// says that @dst is read after each copy, so none is left out.
void pass(uint8_t *dst, const uint8_t *src)
{
	for (size_t off = 0; off < kBuf; off += kPiece) {
		memcpy(dst + off, src + off, kPiece);
		asm volatile("" : : "r"(dst + off) : "memory");
	}
}

} // namespace

int main(int argc, char **)
{
	if (argc != 1) {
		fprintf(stderr, "usage: sroce-memcpy\n");
		return 2;
	}
	uint8_t *src = map(kBuf), *dst = map(kBuf);
	if (!src || !dst) {
		printf("memcpy_1M NA\n");
		return 1;
	}
	// Every page present and written before the clock starts.
	memset(src, 0xa5, kBuf);
	memset(dst, 0, kBuf);
	pass(dst, src);

	auto start = clk::now();
	size_t passes = 0;
	double secs;
	do {
		pass(dst, src);
		passes++;
		secs = std::chrono::duration<double>(clk::now() - start).count();
	} while (passes < 4 || secs < 1.0);

	if (memcmp(dst, src, kBuf)) {
		printf("memcpy_1M NA\n");
		return 1;
	}
	printf("memcpy_1M %.2f\n", double(passes * kBuf) / kPiece / secs);
	munmap(dst, kBuf);
	munmap(src, kBuf);
	return 0;
}
