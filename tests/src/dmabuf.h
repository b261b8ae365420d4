// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The dma-bufs sroce maps, as a test or a bench makes them: a udmabuf over
// a sealed memfd (UDmaBuf) and a buffer of the dma-heaps system heap
// (HeapBuf), both a DmaBuf: the dma-buf fd, its owner's own mapping of the
// pages and, when it could not be made, a sentence saying why (why()).
// sroce-xfer's dma-buf tests and sroce-dmabufbench use them.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <memory>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace xfer {

// A dma-buf as its owner has it: the dma-buf fd and the owner's own
// mapping of its bytes, which is how the owner reads what RDMA put there;
// the exporter's name as the buffer's exp_name gives it ("rdma resource"
// shows it as the MR's exporter); and, when it could not be made, a
// sentence saying why (why()).
class DmaBuf {
public:
	virtual ~DmaBuf()
	{
		close_fd();
		unmap();
	}
	DmaBuf(const DmaBuf &) = delete;
	DmaBuf &operator=(const DmaBuf &) = delete;

	virtual const char *exporter() const = 0;
	// Made, or why not (empty when it was).
	const std::string &why() const { return why_; }
	int fd() const { return fd_; }
	uint8_t *map() { return map_; }
	size_t size() const { return len_; }

	// The owner lets go of what it has: the dma-buf fd; every fd it has
	// (close_fds(): udmabuf's memfd too); its mapping.
	void close_fd()
	{
		if (fd_ >= 0)
			close(fd_);
		fd_ = -1;
	}
	virtual void close_fds() { close_fd(); }
	void unmap()
	{
		if (map_)
			munmap(map_, len_);
		map_ = nullptr;
	}

protected:
	explicit DmaBuf(size_t len) : len_(len) {}

	size_t len_;
	int fd_ = -1;
	uint8_t *map_ = nullptr;
	std::string why_;
};

// A udmabuf over a sealed memfd (udmabuf needs F_SEAL_SHRINK): the
// owner's mapping is the memfd's, of the same pages.
class UDmaBuf : public DmaBuf {
public:
	explicit UDmaBuf(size_t len) : DmaBuf(len)
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
	~UDmaBuf() override { close_memfd(); }

	const char *exporter() const override { return "udmabuf"; }

	// Another dma-buf of the same pages (a new fd), or -1.
	int another()
	{
		int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
		if (dev < 0) {
			why_ = errno == ENOENT ?
				       "no /dev/udmabuf: this kernel has no "
				       "CONFIG_UDMABUF" :
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
	void close_fds() override
	{
		close_fd();
		close_memfd();
	}
	void close_memfd()
	{
		if (memfd_ >= 0)
			close(memfd_);
		memfd_ = -1;
	}

private:
	int memfd_ = -1;
};

// A buffer of the dma-heaps system heap (/dev/dma_heap/system): the
// owner's mapping is an mmap() of the dma-buf itself.
class HeapBuf : public DmaBuf {
public:
	explicit HeapBuf(size_t len) : DmaBuf(len)
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

	const char *exporter() const override { return "system"; }
};

struct Pair;

// sroce-xfer's (xfer_dmabuf.cpp): a dma-buf of @len bytes of an exporter
// sroce maps, chosen by the kernel (or the pair's ARG), or nullptr after
// skip() or a failure; and how many dma-bufs the kernel has (debugfs'
// dma_buf/bufinfo), or -1.
std::unique_ptr<DmaBuf> make_dmabuf(Pair &p, size_t len);
long dmabuf_objects();

} // namespace xfer
