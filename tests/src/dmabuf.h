// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The dma-bufs sroce maps, as a test or a bench makes them: a udmabuf over
// a sealed memfd (UDmaBuf) and a buffer of the dma-heaps system heap
// (HeapBuf), each with its owner's own mapping of the pages and, when it
// could not be made, a sentence saying why (why()). sroce-xfer's dma-buf
// tests and sroce-dmabufbench use them.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace xfer {

// A udmabuf over a sealed memfd (udmabuf needs F_SEAL_SHRINK): the dma-buf
// fd, and the memfd's own shared mapping of the same pages, which is how
// the owner reads what RDMA put there.
class UDmaBuf {
public:
	explicit UDmaBuf(size_t len) : len_(len)
	{
		memfd_ = memfd_create("sroce-dmabuf", MFD_ALLOW_SEALING);
		if (memfd_ < 0 || ftruncate(memfd_, off_t(len)) ||
		    fcntl(memfd_, F_ADD_SEALS, F_SEAL_SHRINK)) {
			why_ = std::string("memfd: ") + strerror(errno);
			return;
		}
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, memfd_, 0);
		if (m == MAP_FAILED) {
			why_ = std::string("mmap of the memfd: ") +
			       strerror(errno);
			return;
		}
		map_ = static_cast<uint8_t *>(m);
		fd_ = another();
	}
	~UDmaBuf()
	{
		close_fd();
		close_memfd();
		unmap();
	}
	UDmaBuf(const UDmaBuf &) = delete;
	UDmaBuf &operator=(const UDmaBuf &) = delete;

	// Made, or why not (empty when it was).
	const std::string &why() const { return why_; }
	int fd() const { return fd_; }
	uint8_t *map() { return map_; }
	size_t size() const { return len_; }

	// Another dma-buf of the same pages (a new fd), or -1.
	int another()
	{
		int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
		if (dev < 0) {
			why_ = errno == ENOENT ?
				       "no /dev/udmabuf: this kernel has no "
				       "CONFIG_UDMABUF, the exporter these "
				       "tests use" :
				       std::string("/dev/udmabuf: ") +
					       strerror(errno);
			return -1;
		}
		udmabuf_create c{};
		c.memfd = uint32_t(memfd_);
		c.flags = UDMABUF_FLAGS_CLOEXEC;
		c.size = len_;
		int fd = ioctl(dev, UDMABUF_CREATE, &c);
		if (fd < 0)
			why_ = std::string("UDMABUF_CREATE: ") +
			       strerror(errno);
		close(dev);
		return fd;
	}
	// The owner lets go of what it has: the dma-buf fd, the memfd, the
	// mapping.
	void close_fd()
	{
		if (fd_ >= 0)
			close(fd_);
		fd_ = -1;
	}
	void close_memfd()
	{
		if (memfd_ >= 0)
			close(memfd_);
		memfd_ = -1;
	}
	void unmap()
	{
		if (map_)
			munmap(map_, len_);
		map_ = nullptr;
	}

private:
	size_t len_;
	int memfd_ = -1;
	int fd_ = -1;
	uint8_t *map_ = nullptr;
	std::string why_;
};

// A buffer of the dma-heaps system heap (/dev/dma_heap/system), the other
// exporter sroce maps: the dma-buf fd, and the owner's own mapping of it
// (mmap() of the dma-buf).
class HeapBuf {
public:
	explicit HeapBuf(size_t len) : len_(len)
	{
		int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
		if (heap < 0) {
			why_ = errno == ENOENT ?
				       "no /dev/dma_heap/system: this kernel "
				       "has no CONFIG_DMABUF_HEAPS_SYSTEM" :
				       std::string("/dev/dma_heap/system: ") +
					       strerror(errno);
			return;
		}
		dma_heap_allocation_data a{};
		a.len = len;
		a.fd_flags = O_RDWR | O_CLOEXEC;
		if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a))
			why_ = std::string("DMA_HEAP_IOCTL_ALLOC: ") +
			       strerror(errno);
		else
			fd_ = int(a.fd);
		close(heap);
		if (fd_ < 0)
			return;
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd_, 0);
		if (m == MAP_FAILED)
			why_ = std::string("mmap of the dma-buf: ") +
			       strerror(errno);
		else
			map_ = static_cast<uint8_t *>(m);
	}
	~HeapBuf()
	{
		close_fd();
		if (map_)
			munmap(map_, len_);
	}
	HeapBuf(const HeapBuf &) = delete;
	HeapBuf &operator=(const HeapBuf &) = delete;

	// Made, or why not (empty when it was).
	const std::string &why() const { return why_; }
	int fd() const { return fd_; }
	uint8_t *map() { return map_; }
	void close_fd()
	{
		if (fd_ >= 0)
			close(fd_);
		fd_ = -1;
	}

private:
	size_t len_;
	int fd_ = -1;
	uint8_t *map_ = nullptr;
	std::string why_;
};

} // namespace xfer
