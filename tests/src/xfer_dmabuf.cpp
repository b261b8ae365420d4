// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer tests of dma-buf MRs (ibv_reg_dmabuf_mr(3)): a dma-buf of an
// exporter sroce maps here is registered on b's side; RDMA into it and out
// of it is read back through its owner's own mapping of the same pages,
// every byte of the buffer compared with what must be there. The owner
// closes its fds while the MR lives, deregisters under traffic, registers
// a thousand times; every errno ibv_reg_dmabuf_mr(3) and ib_core promise.
// The exporter of these data tests (make_dmabuf(), which each notes) is a
// udmabuf over a sealed memfd where sroce maps udmabuf, else a buffer of
// the dma-heaps system heap (6.1's udmabuf gives the kernel no mapping);
// the test's ARG may name one ("udmabuf" or "system"). The system heap
// carries RDMA in a test of its own too. Refused with EOPNOTSUPP: a
// udmabuf where the kernel's udmabuf gives no mapping sroce can use, a
// udmabuf over a huge page, a buffer of an exporter sroce does not map
// (vgem's, through DRM PRIME). A test whose exporter, huge page or vgem
// the kernel lacks says why and is not run (skip()).
#include "dmabuf.h"
#include "xfer.h"

#include <atomic>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <memory>
#include <rdma/ib_user_verbs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <thread>

namespace xfer {
namespace {

const int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
const long kPage = 4096;
// Where b's dma-buf MRs are seen by default: any page-aligned iova will do.
const uint64_t kIova = 0x5a000000000ULL;

} // namespace

// Why sroce maps no udmabuf on the running kernel, or "" where it does:
// the kernels that Kbuild and sroce_compat.h tell by their version
// (sroce.md, "dma-buf MRs and null MRs"), stated here on their own, so
// that a kernel where sroce refuses udmabuf it should map fails the tests
// rather than moving them to the system heap.
std::string udmabuf_unmapped_why()
{
	utsname u{};
	int ma = 0, mi = 0, sub = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d.%d", &ma, &mi, &sub) < 2)
		return "";
	const long v = ma * 1000000L + mi * 1000L + sub;
	// 7ae2e684854c, "udmabuf: add vmap and vunmap methods to udmabuf_ops"
	if (v < 6002000)
		return "udmabuf before 6.2 gives the kernel no mapping of "
		       "its buffers, which sroce's CPU copies need";
	if ((v >= 6012002 && v < 6012048) || (v >= 6013000 && v < 6016001))
		return "udmabuf's kernel mapping fails with a WARN on 6.12.2 "
		       "to 6.12.47 and 6.13 to 6.16.0 (vmap_pfn()), so sroce "
		       "refuses udmabuf there";
	return "";
}

// A dma-buf of @len bytes for the data tests, of the exporter the test's
// ARG names ("udmabuf" or "system"), else a udmabuf where sroce maps one
// (/dev/udmabuf, and udmabuf_unmapped_why()) and a buffer of the system
// heap where it does not; the exporter, and why, noted. nullptr after
// skip() where the kernel has no such exporter, or after a failure where
// it has and the buffer could not be made.
std::unique_ptr<DmaBuf> make_dmabuf(Pair &p, size_t len)
{
	const std::string asked = p.arg ? p.arg : "";
	const std::string no_udmabuf =
		access("/dev/udmabuf", F_OK) ?
			"no /dev/udmabuf: this kernel has no CONFIG_UDMABUF" :
			udmabuf_unmapped_why();

	if (!asked.empty() && asked != "udmabuf" && asked != "system") {
		CHECK(false, "ARG \"%s\": the exporter is udmabuf or system",
		      asked.c_str());
		return nullptr;
	}
	if (asked != "system" && no_udmabuf.empty()) {
		auto d = std::make_unique<UDmaBuf>(len);
		CHECK(d->fd() >= 0, "no udmabuf: %s", d->why().c_str());
		if (d->fd() < 0)
			return nullptr;
		note("exporter udmabuf");
		return d;
	}
	if (asked == "udmabuf") {
		skip("udmabuf asked for: " + no_udmabuf);
		return nullptr;
	}
	auto h = std::make_unique<HeapBuf>(len);
	if (h->map()) {
		note(asked.empty() ? "exporter system (not udmabuf: " +
					     no_udmabuf + ")" :
				     "exporter system (asked for)");
		return h;
	}
	if (h->why().rfind("no /dev/dma_heap", 0) != 0)
		CHECK(false, "no system heap buffer: %s", h->why().c_str());
	else if (asked.empty())
		skip("no dma-buf exporter sroce maps here: " + no_udmabuf +
		     "; " + h->why());
	else
		skip(h->why());
	return nullptr;
}

namespace {

// ibv_reg_dmabuf_mr() of a range of @d (or of the dma-buf @fd of @d's
// exporter), which must work: make_dmabuf() chose an exporter sroce maps.
ibv_mr *reg(ibv_pd *pd, DmaBuf &d, uint64_t offset, size_t len,
	    uint64_t iova, int access, int fd = -1)
{
	ibv_mr *mr = ibv_reg_dmabuf_mr(pd, offset, len, iova,
				       fd >= 0 ? fd : d.fd(), access);
	CHECK(mr, "ibv_reg_dmabuf_mr of a %s buffer (offset %llu, length "
	      "%zu, iova 0x%llx, access 0x%x): %s", d.exporter(),
	      (unsigned long long)offset, len, (unsigned long long)iova,
	      access, strerror(errno));
	return mr;
}

// Fill @m[0, len) with a pattern of its own (@seed), different from byte
// to byte.
void pattern(uint8_t *m, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		m[i] = uint8_t(seed + i * 29 + (i >> 11));
}

// The whole buffer, as its owner's mapping @m shows it, is @want.
bool expect_bytes(const uint8_t *m, const std::vector<uint8_t> &want,
		  const char *what)
{
	size_t changed = 0, first = 0;

	for (size_t i = 0; i < want.size(); i++)
		if (m[i] != want[i] && !changed++)
			first = i;
	CHECK(!changed, "%s: %zu bytes of the dma-buf differ from what must "
	      "be there, the first at offset %zu (0x%02x, expected 0x%02x)",
	      what, changed, first, m[first], want[first]);
	return !changed;
}

// The whole dma-buf, as its owner's mapping shows it, is @want.
bool expect_buf(DmaBuf &d, const std::vector<uint8_t> &want,
		const char *what)
{
	return expect_bytes(d.map(), want, what);
}

// Post on @s's QP one WR of @op with one SGE [@laddr, @laddr + @len) of
// @lkey, at @raddr of @rkey; its status.
ibv_wc_status post_one(Side &s, ibv_wr_opcode op, uint64_t laddr,
		       uint32_t len, uint32_t lkey, uint64_t raddr,
		       uint32_t rkey, uint64_t id)
{
	ibv_sge sge = { laddr, len, lkey };
	ibv_send_wr wr = one_sge_wr(&sge, op, id), *bad;
	ibv_wc wc{};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK(ibv_post_send(s.qp, &wr, &bad) == 0, "post: %s",
	      strerror(errno));
	if (!poll_one(s, wc))
		return IBV_WC_GENERAL_ERR;
	CHECK(wc.wr_id == id, "wr_id %llu, expected %llu",
	      (unsigned long long)wc.wr_id, (unsigned long long)id);
	return wc.status;
}

// Post on @s's QP a receive of one SGE.
void post_recv_sge(Side &s, uint64_t addr, uint32_t len, uint32_t lkey,
		   uint64_t id)
{
	ibv_sge sge = { addr, len, lkey };
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CHECK(ibv_post_recv(s.qp, &wr, &bad) == 0, "post recv");
}

// The 8 bytes at @m.
uint64_t u64_at(const uint8_t *m)
{
	uint64_t v;

	memcpy(&v, m, sizeof(v));
	return v;
}

// An atomic from a at @raddr of @rkey: its status, the old value in a's
// buffer's first 8 bytes.
ibv_wc_status atomic_to(Pair &p, ibv_wr_opcode op, uint64_t raddr,
			uint32_t rkey, uint64_t cmp_add, uint64_t swap,
			uint64_t id)
{
	ibv_wc wc{};

	post_atomic(p.a, op, id, raddr, rkey, cmp_add, swap);
	if (!poll_one(p.a, wc))
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

} // namespace

// How many dma-bufs the kernel has ("Total N objects" of debugfs'
// dma_buf/bufinfo), or -1 where that cannot be read.
long dmabuf_objects()
{
	std::ifstream f("/sys/kernel/debug/dma_buf/bufinfo");
	std::string line;
	long n = -1;

	while (std::getline(f, line))
		if (line.rfind("Total ", 0) == 0)
			n = atol(line.c_str() + 6);
	return n;
}

namespace {

// The kernel mappings of @exporter's buffers there are now
// (/proc/vmallocinfo): udmabuf's are vm_map_ram() areas, the system
// heap's are vmap()s called from system_heap_do_vmap() (named by their
// caller); -1 where that cannot be read.
long kernel_mappings(const char *exporter)
{
	const char *mark = strcmp(exporter, "udmabuf") ? "system_heap" :
							 "vm_map_ram";
	std::ifstream f("/proc/vmallocinfo");
	std::string line;
	long n = 0;

	if (!f)
		return -1;
	while (std::getline(f, line))
		n += line.find(mark) != std::string::npos;
	return n;
}

// This process's MRs on the pair's device, as "rdma resource" lists them.
size_t my_mrs(Pair &p)
{
	return res_objects(ibv_get_device_name(p.ctx->device), "mr").size();
}

// This process's MR of @len bytes, as "rdma -j -dd resource show mr"
// lists it (one flat JSON object), or "".
std::string mr_object(Pair &p, uint64_t len)
{
	for (const std::string &o :
	     res_objects(ibv_get_device_name(p.ctx->device), "mr"))
		if (res_field(o, "mrlen") == (long long)len)
			return o;
	return "";
}

// Its string driver attribute @key ("drv_KEY":"VALUE"), or "".
std::string mr_attr(Pair &p, uint64_t len, const char *key)
{
	std::string o = mr_object(p, len);
	std::string k = std::string("\"drv_") + key + "\":\"";
	size_t at = o.find(k);

	if (at == std::string::npos)
		return "";
	at += k.size();
	return o.substr(at, o.find('"', at) - at);
}

// Its number driver attribute @key, or -1.
long long mr_num_attr(Pair &p, uint64_t len, const char *key)
{
	return res_field(mr_object(p, len), (std::string("drv_") + key).c_str());
}

// WRITE, READ and the atomics into and out of a dma-buf MR, read back
// through the owner's mapping: the whole buffer checked after each, and
// a's buffer too where a READ or an atomic lands. The MR as a local SGE:
// a SEND's and a WRITE's source, a READ's and a receive's target.
void t_dmabuf_rdma(Pair &p)
{
	const size_t len = 256 * 1024;
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	pattern(d->map(), len, 0x31);
	std::vector<uint8_t> want(d->map(), d->map() + len);
	ibv_mr *mr = reg(p.b.pd, *d, 0, len, kIova, kAll);
	if (!mr)
		return;
	CHECK(mr->length == len && mr->addr == nullptr,
	      "ibv_mr: length %zu addr %p", mr->length, mr->addr);

	// WRITEs: one packet, then 100 KiB across pages at an odd address.
	struct {
		size_t off, n;
	} writes[] = { { 12345, 3000 }, { 4093, 100 * 1024 }, { 0, 1 },
		       { len - 1, 1 } };
	for (auto w : writes) {
		fill(p.a, 0, w.n, uint8_t(w.off));
		expect_eq_status(write_to(p, kIova + w.off, mr->rkey,
					  uint32_t(w.n), 1),
				 IBV_WC_SUCCESS, "WRITE into the dma-buf");
		memcpy(&want[w.off], &p.a.buf[0], w.n);
		expect_buf(*d, want, "after a WRITE");
	}
	// READs out of it, into a's buffer.
	for (auto r : writes) {
		memset(&p.a.buf[8192], 0, r.n);
		expect_eq_status(post_one(p.a, IBV_WR_RDMA_READ,
					  uintptr_t(&p.a.buf[8192]),
					  uint32_t(r.n), p.a.mr->lkey,
					  kIova + r.off, mr->rkey, 2),
				 IBV_WC_SUCCESS, "READ from the dma-buf");
		CHECK(!memcmp(&p.a.buf[8192], &want[r.off], r.n),
		      "READ of %zu bytes at %zu: bytes differ", r.n, r.off);
	}
	// Atomics at 8-byte aligned addresses.
	uint64_t old = u64_at(&want[64]);
	expect_eq_status(atomic_to(p, IBV_WR_ATOMIC_FETCH_AND_ADD, kIova + 64,
				   mr->rkey, 5, 0, 3),
			 IBV_WC_SUCCESS, "fetch and add");
	CHECK(u64_at(&p.a.buf[0]) == old, "fetched 0x%llx, expected 0x%llx",
	      (unsigned long long)u64_at(&p.a.buf[0]),
	      (unsigned long long)old);
	old += 5;
	memcpy(&want[64], &old, 8);
	expect_eq_status(atomic_to(p, IBV_WR_ATOMIC_CMP_AND_SWP, kIova + 64,
				   mr->rkey, old, 0x1122334455667788ULL, 4),
			 IBV_WC_SUCCESS, "compare and swap");
	CHECK(u64_at(&p.a.buf[0]) == old, "compare and swap fetched 0x%llx",
	      (unsigned long long)u64_at(&p.a.buf[0]));
	old = 0x1122334455667788ULL;
	memcpy(&want[64], &old, 8);
	expect_eq_status(atomic_to(p, IBV_WR_ATOMIC_CMP_AND_SWP, kIova + 64,
				   mr->rkey, 1, 2, 5),
			 IBV_WC_SUCCESS, "compare and swap that fails");
	CHECK(u64_at(&p.a.buf[0]) == old, "failed compare and swap fetched "
	      "0x%llx", (unsigned long long)u64_at(&p.a.buf[0]));
	expect_buf(*d, want, "after the atomics");

	// Past the end: refused, not a byte of either side changed.
	refused_write(p, kIova + len - 100, mr->rkey, 200, 6,
		      IBV_WC_REM_ACCESS_ERR, "WRITE past the dma-buf MR");
	refused_rdma(p, IBV_WR_RDMA_READ, kIova - 8, mr->rkey, 16, 7,
		     IBV_WC_REM_ACCESS_ERR, "READ before the dma-buf MR");
	expect_buf(*d, want, "after the refused requests");

	// The dma-buf MR as b's local SGEs: a receive lands in it...
	fill(p.a, 0, 4000, 0x77);
	post_recv_sge(p.b, kIova + 1000, 4000, mr->lkey, 8);
	CHECK(post_send(p.a, IBV_WR_SEND, 0, 4000, 9) == 0, "post send");
	expect_wc(p.a, 9, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(p.b, 8, IBV_WC_SUCCESS, IBV_WC_RECV, 4000);
	memcpy(&want[1000], &p.a.buf[0], 4000);
	expect_buf(*d, want, "after a receive into it");
	// ... a SEND and a WRITE come out of it ...
	memset(&p.a.buf[0], 0, 70000);
	CHECK(post_recv(p.a, 0, 70000, 10) == 0, "post recv");
	expect_eq_status(post_one(p.b, IBV_WR_SEND, kIova + 7, 70000,
				  mr->lkey, 0, 0, 11),
			 IBV_WC_SUCCESS, "SEND from the dma-buf");
	expect_wc(p.a, 10, IBV_WC_SUCCESS, IBV_WC_RECV, 70000);
	CHECK(!memcmp(&p.a.buf[0], &want[7], 70000), "SENT bytes differ");
	memset(&p.a.buf[100000], 0, 5000);
	expect_eq_status(post_one(p.b, IBV_WR_RDMA_WRITE, kIova + 50001, 5000,
				  mr->lkey, remote(p.a, 100000),
				  p.a.mr->rkey, 12),
			 IBV_WC_SUCCESS, "WRITE from the dma-buf");
	CHECK(!memcmp(&p.a.buf[100000], &want[50001], 5000),
	      "WRITTEN bytes differ");
	// ... and a READ's response lands in it.
	fill(p.a, 200000, 9000, 0x5c);
	expect_eq_status(post_one(p.b, IBV_WR_RDMA_READ, kIova + 30000, 9000,
				  mr->lkey, remote(p.a, 200000),
				  p.a.mr->rkey, 13),
			 IBV_WC_SUCCESS, "READ into the dma-buf");
	memcpy(&want[30000], &p.a.buf[200000], 9000);
	expect_buf(*d, want, "after a READ into it");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s", strerror(errno));
	expect_buf(*d, want, "after the dereg");
}

// A range that starts inside a page, seen at a small iova (the same offset
// in its page, as ib_core requires): its first and last bytes take
// WRITEs, atomics are aligned where the bytes are, one byte before or
// after is refused.
void t_dmabuf_offset(Pair &p)
{
	const size_t len = 64 * 1024, off = 2 * kPage + 104, n = 10000;
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	pattern(d->map(), len, 0x42);
	std::vector<uint8_t> want(d->map(), d->map() + len);
	const uint64_t iova = 104;
	ibv_mr *mr = reg(p.b.pd, *d, off, n, iova, kAll);
	if (!mr)
		return;
	fill(p.a, 0, n, 0x19);
	expect_eq_status(write_to(p, iova, mr->rkey, uint32_t(n), 1),
			 IBV_WC_SUCCESS, "WRITE of the whole range");
	memcpy(&want[off], &p.a.buf[0], n);
	expect_buf(*d, want, "after the WRITE of the whole range");
	uint64_t old = u64_at(&want[off + 8]);
	expect_eq_status(atomic_to(p, IBV_WR_ATOMIC_FETCH_AND_ADD, iova + 8,
				   mr->rkey, 1, 0, 2),
			 IBV_WC_SUCCESS, "fetch and add in the range");
	CHECK(u64_at(&p.a.buf[0]) == old, "fetched 0x%llx, expected 0x%llx",
	      (unsigned long long)u64_at(&p.a.buf[0]),
	      (unsigned long long)old);
	old++;
	memcpy(&want[off + 8], &old, 8);
	expect_buf(*d, want, "after the atomic");
	refused_write(p, iova - 1, mr->rkey, 2, 3, IBV_WC_REM_ACCESS_ERR,
		      "WRITE from a byte before the range");
	refused_write(p, iova + n - 1, mr->rkey, 2, 4, IBV_WC_REM_ACCESS_ERR,
		      "WRITE past the range's end");
	expect_buf(*d, want, "after the refused WRITEs");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s", strerror(errno));
}

// The owner closes every fd it has (the dma-buf's; a udmabuf's memfd
// too), then unmaps its own mapping (the memfd's, or the system heap's
// mmap of the dma-buf, which held the buffer too): the MR alone holds the
// buffer, traffic still lands, seen through the owner's mapping while
// there is one and by a READ of the whole buffer after; the dereg frees
// it (debugfs' count of dma-bufs).
void t_dmabuf_close_fd(Pair &p)
{
	const size_t len = 64 * 1024;
	long before = dmabuf_objects();
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	pattern(d->map(), len, 0x13);
	std::vector<uint8_t> want(d->map(), d->map() + len);
	ibv_mr *mr = reg(p.b.pd, *d, 0, len, kIova, kAll);
	if (!mr)
		return;
	d->close_fds();
	fill(p.a, 0, 2000, 0x66);
	expect_eq_status(write_to(p, kIova + 100, mr->rkey, 2000, 1),
			 IBV_WC_SUCCESS, "WRITE after the fd was closed");
	memcpy(&want[100], &p.a.buf[0], 2000);
	expect_buf(*d, want, "after the fds were closed");
	// Nothing of the owner's left: the MR alone keeps the pages.
	d->unmap();
	fill(p.a, 0, 3000, 0x29);
	expect_eq_status(write_to(p, kIova + 40000, mr->rkey, 3000, 2),
			 IBV_WC_SUCCESS, "WRITE with the buffer unmapped");
	memcpy(&want[40000], &p.a.buf[0], 3000);
	memset(&p.a.buf[100000], 0, len);
	expect_eq_status(post_one(p.a, IBV_WR_RDMA_READ,
				  uintptr_t(&p.a.buf[100000]), uint32_t(len),
				  p.a.mr->lkey, kIova, mr->rkey, 3),
			 IBV_WC_SUCCESS, "READ of the whole buffer");
	CHECK(!memcmp(&p.a.buf[100000], want.data(), len),
	      "the buffer read back differs");
	if (before >= 0)
		CHECK(dmabuf_objects() == before + 1,
		      "%ld dma-bufs while the MR holds one, %ld before",
		      dmabuf_objects(), before);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s", strerror(errno));
	if (before >= 0)
		CHECK(dmabuf_objects() == before,
		      "%ld dma-bufs after the dereg, %ld before: the MR's "
		      "reference was not dropped", dmabuf_objects(), before);
	else
		fprintf(stderr, "note: no debugfs dma_buf/bufinfo: the "
			"buffer's release was not counted\n");
}

// a streams RDMA @op (64 KiB each, up to 16 outstanding) at b's dma-buf MR
// from another thread while this one deregisters it: the dereg returns 0
// at once, the stream ends with a remote access error (nothing hangs),
// and every byte of the buffer is either its old one or one a WRITE
// carried.
void dereg_under(Pair &p, ibv_wr_opcode op)
{
	const size_t len = 1024 * 1024, chunk = 64 * 1024;
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	pattern(d->map(), len, 0x24);
	std::vector<uint8_t> old(d->map(), d->map() + len);
	ibv_mr *mr = reg(p.b.pd, *d, 0, len, kIova, kAll);
	if (!mr)
		return;
	fill(p.a, 0, chunk, 0x90);
	std::atomic<long> done{ 0 };
	std::atomic<int> error{ IBV_WC_SUCCESS };
	uint32_t rkey = mr->rkey;
	std::thread t([&] {
		long posted = 0, polled = 0;
		long limit = 200000 * time_scale();
		for (long spin = 0; spin < limit && error == IBV_WC_SUCCESS;
		     spin++) {
			while (posted - polled < 16) {
				size_t at = size_t(posted % 16) * chunk;
				ibv_sge sge = { op == IBV_WR_RDMA_WRITE ?
							uintptr_t(&p.a.buf[0]) :
							uintptr_t(&p.a.buf[at]),
						uint32_t(chunk), p.a.mr->lkey };
				ibv_send_wr wr = one_sge_wr(&sge, op, 1), *bad;
				wr.wr.rdma.remote_addr = kIova + at;
				wr.wr.rdma.rkey = rkey;
				if (ibv_post_send(p.a.qp, &wr, &bad))
					break;
				posted++;
			}
			ibv_wc wc[16];
			int n = ibv_poll_cq(p.a.cq, 16, wc);
			for (int i = 0; i < n; i++) {
				if (wc[i].status != IBV_WC_SUCCESS) {
					error = wc[i].status;
					break;
				}
				done++;
			}
			polled += n;
			if (!n)
				usleep(100);
		}
	});
	for (int i = 0; i < 10000 * time_scale() && done < 40; i++)
		usleep(1000);
	CHECK(done >= 40, "only %ld requests done before the dereg",
	      done.load());
	CHECK(ibv_dereg_mr(mr) == 0, "dereg under traffic: %s",
	      strerror(errno));
	t.join();
	CHECK(error == IBV_WC_REM_ACCESS_ERR,
	      "the stream ended with %s, expected a remote access error",
	      ibv_wc_status_str(ibv_wc_status(error.load())));
	size_t bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += d->map()[i] != old[i] &&
		       d->map()[i] != p.a.buf[i % chunk];
	CHECK(!bad, "%zu bytes of the buffer are neither old nor written",
	      bad);
	restate(p);
}

void t_dmabuf_dereg_inflight(Pair &p)
{
	dereg_under(p, IBV_WR_RDMA_WRITE);
	if (skip_reason.empty())
		dereg_under(p, IBV_WR_RDMA_READ);
}

// 10^3 registrations and deregistrations, each of a new dma-buf whose fd
// the owner closes while it is registered (every 100th carries a WRITE and
// a READ, seen through the owner's mapping): afterwards as many dma-bufs,
// kernel mappings of the exporter's, MRs and sroce kernel memory as
// before, and the memory available back within 16 MiB. A udmabuf's new
// dma-buf is another of the same memfd pages; the system heap makes a
// buffer per dma-buf, so there each cycle's is a new buffer, which the
// dereg frees (its owner's mapping gone first).
void t_dmabuf_cycles(Pair &p)
{
	const size_t len = 1024 * 1024;
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	auto *u = dynamic_cast<UDmaBuf *>(d.get());
	pattern(d->map(), len, 0x55);
	// One registration first: it must work at all, and its kernel
	// mapping be where the cycles count them.
	long areas = kernel_mappings(d->exporter());
	ibv_mr *mr = reg(p.b.pd, *d, 0, len, kIova, kAll);
	if (!mr)
		return;
	CHECK(areas < 0 || kernel_mappings(d->exporter()) > areas,
	      "%ld kernel mappings of %s buffers with an MR, %ld before",
	      kernel_mappings(d->exporter()), d->exporter(), areas);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	long bufs = dmabuf_objects();
	areas = kernel_mappings(d->exporter());
	long long kmem = port_counter(p, "kmem_bytes");
	size_t mrs = my_mrs(p);
	long avail = mem_available_kb();
	int i;

	for (i = 0; i < 1000 && !failures; i++) {
		// This cycle's dma-buf: its fd, and where its owner sees it.
		std::unique_ptr<HeapBuf> h;
		uint8_t *bytes = d->map();
		int fd;
		if (u) {
			fd = u->another();
			CHECK(fd >= 0, "udmabuf %d: %s", i, u->why().c_str());
		} else {
			h = std::make_unique<HeapBuf>(len);
			CHECK(h->map(), "system heap buffer %d: %s", i,
			      h->why().c_str());
			fd = h->map() ? h->fd() : -1;
			bytes = h->map();
		}
		if (fd < 0)
			break;
		uint64_t iova = kIova + uint64_t(i) * len;
		mr = reg(p.b.pd, *d, 0, len, iova, kAll, fd);
		if (h)
			h->close_fd();
		else
			close(fd);
		if (!mr)
			break;
		if (i % 100 == 0) {
			fill(p.a, 0, 8192, uint8_t(i));
			expect_eq_status(write_to(p, iova + 4096 * (i / 100),
						  mr->rkey, 8192, 1),
					 IBV_WC_SUCCESS, "WRITE");
			CHECK(!memcmp(bytes + 4096 * (i / 100), &p.a.buf[0],
				      8192),
			      "cycle %d: written bytes differ", i);
			expect_eq_status(post_one(p.a, IBV_WR_RDMA_READ,
						  uintptr_t(&p.a.buf[65536]),
						  8192, p.a.mr->lkey,
						  iova, mr->rkey, 2),
					 IBV_WC_SUCCESS, "READ");
			CHECK(!memcmp(bytes, &p.a.buf[65536], 8192),
			      "cycle %d: read bytes differ", i);
		}
		if (h)
			h->unmap();
		CHECK(ibv_dereg_mr(mr) == 0, "dereg %d: %s", i,
		      strerror(errno));
	}
	CHECK(i == 1000, "%d cycles", i);
	CHECK(bufs < 0 || dmabuf_objects() == bufs,
	      "%ld dma-bufs after the cycles, %ld before", dmabuf_objects(),
	      bufs);
	// Other kernel users may map a few meanwhile; a leak is 1000.
	CHECK(areas < 0 || kernel_mappings(d->exporter()) <= areas + 4,
	      "%ld kernel mappings of %s buffers after the cycles, %ld "
	      "before", kernel_mappings(d->exporter()), d->exporter(), areas);
	CHECK(port_counter(p, "kmem_bytes") == kmem,
	      "kmem_bytes %lld after the cycles, %lld before",
	      port_counter(p, "kmem_bytes"), kmem);
	CHECK(my_mrs(p) == mrs, "%zu MRs after the cycles, %zu before",
	      my_mrs(p), mrs);
	long now = mem_available_kb();
	CHECK(now > avail - 16 * 1024,
	      "MemAvailable %ld kB after the cycles, %ld kB before", now,
	      avail);
	if (bufs < 0 || areas < 0)
		fprintf(stderr, "note: dma-bufs (%ld) or kernel mappings "
			"(%ld) could not be counted\n", bufs, areas);
}

// ibv_reg_dmabuf_mr() refused: nullptr with errno @want, and no MR.
void expect_refused(ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
		    int fd, int access, int want, const char *what)
{
	errno = 0;
	ibv_mr *mr = ibv_reg_dmabuf_mr(pd, offset, len, iova, fd, access);
	CHECK(!mr && errno == want, "%s: %s (errno %s), expected %s", what,
	      mr ? "registered" : "refused", strerror(errno),
	      strerror(want));
	if (mr)
		ibv_dereg_mr(mr);
}

// File descriptors that are no dma-buf: EBADF for one not open, EINVAL
// for any other file (dma_buf_get()), as ib_core's own dma-buf umems give.
// Needs no exporter.
void t_dmabuf_badfd(Pair &p)
{
	size_t mrs = my_mrs(p);
	int closed = open("/dev/null", O_RDONLY);
	close(closed);
	expect_refused(p.b.pd, 0, 4096, 0, -1, kAll, EBADF, "fd -1");
	expect_refused(p.b.pd, 0, 4096, 0, closed, kAll, EBADF,
		       "a closed fd");
	int memfd = memfd_create("not-a-dmabuf", 0);
	CHECK(memfd >= 0 && ftruncate(memfd, 65536) == 0, "memfd");
	expect_refused(p.b.pd, 0, 4096, 0, memfd, kAll, EINVAL,
		       "a memfd (not a dma-buf)");
	close(memfd);
	expect_refused(p.b.pd, 0, 4096, 0, p.ctx->cmd_fd, kAll, EINVAL,
		       "the verbs command fd");
	CHECK(my_mrs(p) == mrs, "%zu MRs after the refusals, %zu before",
	      my_mrs(p), mrs);
}

// Ranges and access a dma-buf MR refuses, each EINVAL (ib_core's checks
// and sroce's, as ib_umem_dmabuf_get() would answer), all made before the
// buffer is mapped: nothing registered and no reference to the buffer
// left (debugfs' count of dma-bufs). Then a good registration: it works.
// (A udmabuf where sroce maps none: dmabuf_udmabuf_kernel.)
void t_dmabuf_errors(Pair &p)
{
	const size_t len = 64 * 1024;
	long before = dmabuf_objects();
	size_t mrs = my_mrs(p);
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	struct {
		uint64_t offset;
		size_t len;
		uint64_t iova;
		int access;
		const char *what;
	} bad[] = {
		{ 0, len + 1, 0, kAll, "one byte past the end" },
		{ kPage, len, kPage, kAll, "a page past the end" },
		{ len, 1, 0, kAll, "at the end" },
		{ 0, 0, 0, kAll, "0 bytes" },
		{ ~0ULL & ~uint64_t(kPage - 1), 2 * kPage, 0, kAll,
		  "an offset that wraps" },
		{ 0, kPage, 1, kAll, "iova at another offset in its page" },
		{ 0, 2 * kPage, ~0ULL & ~uint64_t(kPage - 1), kAll,
		  "an iova range that wraps" },
		{ 0, len, 0, kAll | IBV_ACCESS_MW_BIND, "IBV_ACCESS_MW_BIND" },
		{ 0, len, 0, kAll | IBV_ACCESS_ON_DEMAND,
		  "IBV_ACCESS_ON_DEMAND" },
		{ 0, len, 0, kAll | IBV_ACCESS_ZERO_BASED,
		  "IBV_ACCESS_ZERO_BASED" },
		{ 0, len, 0, kAll | IBV_ACCESS_HUGETLB, "IBV_ACCESS_HUGETLB" },
		{ 0, len, 0, IBV_ACCESS_REMOTE_WRITE,
		  "remote write without local write" },
		{ 0, len, 0, IBV_ACCESS_REMOTE_ATOMIC,
		  "remote atomic without local write" },
		{ 0, len, 0, kAll | (1 << 29), "an unknown access bit" },
	};
	for (auto b : bad)
		expect_refused(p.b.pd, b.offset, b.len, b.iova, d->fd(),
			       b.access, EINVAL, b.what);
	ibv_mr *mr = reg(p.b.pd, *d, 0, len, kIova, kAll);
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s", strerror(errno));
	CHECK(my_mrs(p) == mrs, "%zu MRs after the refusals, %zu before",
	      my_mrs(p), mrs);
	d.reset();
	CHECK(before < 0 || dmabuf_objects() == before,
	      "%ld dma-bufs after the refusals and the close, %ld before",
	      dmabuf_objects(), before);
}

// A system heap buffer as an MR: WRITE, READ and an atomic through it, read
// back through the owner's mapping with the whole buffer compared; "rdma
// resource" names its exporter "system" and its 20 pages; the MR keeps the
// buffer once the owner closed its fd, the dereg lets it go. Runs wherever
// the system heap is (also on 6.1, whose system heap has a kernel
// mapping).
void t_dmabuf_heap(Pair &p)
{
	const size_t len = 20 * kPage;
	long before = dmabuf_objects();
	auto h = std::make_unique<HeapBuf>(len);

	if (!h->map()) {
		if (h->why().rfind("no /dev/dma_heap", 0) == 0)
			skip(h->why());
		else
			CHECK(false, "no system heap buffer: %s",
			      h->why().c_str());
		return;
	}
	pattern(h->map(), len, 0x5d);
	std::vector<uint8_t> want(h->map(), h->map() + len);
	ibv_mr *mr = ibv_reg_dmabuf_mr(p.b.pd, 0, len, kIova, h->fd(), kAll);
	CHECK(mr, "ibv_reg_dmabuf_mr of a system heap buffer: %s",
	      strerror(errno));
	if (!mr)
		return;
	std::string exporter = mr_attr(p, len, "exporter");
	CHECK(exporter == "system", "exporter \"%s\", expected \"system\"",
	      exporter.c_str());
	CHECK(mr_num_attr(p, len, "pages_mapped") == len / kPage,
	      "pages_mapped %lld, expected %ld",
	      mr_num_attr(p, len, "pages_mapped"), long(len / kPage));
	h->close_fd();
	fill(p.a, 0, 50000, 0x2b);
	expect_eq_status(write_to(p, kIova + 4093, mr->rkey, 50000, 1),
			 IBV_WC_SUCCESS, "WRITE into the system heap buffer");
	memcpy(&want[4093], &p.a.buf[0], 50000);
	expect_bytes(h->map(), want, "after a WRITE");
	memset(&p.a.buf[100000], 0, len);
	expect_eq_status(post_one(p.a, IBV_WR_RDMA_READ,
				  uintptr_t(&p.a.buf[100000]), uint32_t(len),
				  p.a.mr->lkey, kIova, mr->rkey, 2),
			 IBV_WC_SUCCESS, "READ of the whole buffer");
	CHECK(!memcmp(&p.a.buf[100000], want.data(), len),
	      "the buffer read back differs");
	uint64_t old = u64_at(&want[len - 8]);
	expect_eq_status(atomic_to(p, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   kIova + len - 8, mr->rkey, 3, 0, 3),
			 IBV_WC_SUCCESS, "fetch and add in the last 8 bytes");
	CHECK(u64_at(&p.a.buf[0]) == old, "fetched 0x%llx, expected 0x%llx",
	      (unsigned long long)u64_at(&p.a.buf[0]),
	      (unsigned long long)old);
	old += 3;
	memcpy(&want[len - 8], &old, 8);
	expect_bytes(h->map(), want, "after the atomic");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s", strerror(errno));
	h.reset();
	CHECK(before < 0 || dmabuf_objects() == before,
	      "%ld dma-bufs after the dereg and the close, %ld before",
	      dmabuf_objects(), before);
}

// The few declarations of DRM's uAPI (include/uapi/drm/drm.h and
// drm_mode.h, stable since 3.x) that finding vgem and exporting one of its
// buffers needs; the tests' machines have no libdrm headers.
namespace drm {
struct version {
	int version_major, version_minor, version_patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};
struct create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};
struct prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};
static_assert(sizeof(version) == 64 && sizeof(create_dumb) == 32 &&
	      sizeof(prime_handle) == 12);
const unsigned long kVersion = _IOWR('d', 0x00, version);
const unsigned long kPrimeHandleToFd = _IOWR('d', 0x2d, prime_handle);
const unsigned long kCreateDumb = _IOWR('d', 0xb2, create_dumb);
} // namespace drm

// vgem's DRM device (the case loads the module where there is one), or -1.
int open_vgem()
{
	for (int i = 0; i < 16; i++) {
		std::string path = "/dev/dri/card" + std::to_string(i);
		int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		char name[16] = {};
		drm::version v{};
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!ioctl(fd, drm::kVersion, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

// A buffer of an exporter sroce does not map: vgem's, exported through DRM
// PRIME (exporter "drm", drm_gem_prime_export()'s name for all it makes,
// here over shmem pages that vgem does pin: sroce cannot tell). Refused
// with EOPNOTSUPP before anything is mapped or charged, whatever the
// access; a bad range on it is still EINVAL (checked first); no MR, no
// kernel memory, no dma-buf left behind. Needs vgem (CONFIG_DRM_VGEM).
void t_dmabuf_unlisted(Pair &p)
{
	long before = dmabuf_objects();
	long long kmem = port_counter(p, "kmem_bytes");
	size_t mrs = my_mrs(p);
	int drm_fd = open_vgem();

	if (drm_fd < 0) {
		skip("no vgem DRM device (CONFIG_DRM_VGEM), the exporter sroce "
		     "does not map that these tests can make");
		return;
	}
	drm::create_dumb c{};
	c.width = 128;
	c.height = 128;
	c.bpp = 32;
	drm::prime_handle h{};
	CHECK(!ioctl(drm_fd, drm::kCreateDumb, &c),
	      "vgem CREATE_DUMB: %s", strerror(errno));
	h.handle = c.handle;
	h.flags = O_RDWR | O_CLOEXEC;
	h.fd = -1;
	CHECK(!ioctl(drm_fd, drm::kPrimeHandleToFd, &h),
	      "vgem PRIME_HANDLE_TO_FD: %s", strerror(errno));
	if (h.fd >= 0) {
		const size_t len = c.size;
		expect_refused(p.b.pd, 0, len, kIova, h.fd, kAll, EOPNOTSUPP,
			       "a vgem buffer");
		expect_refused(p.b.pd, kPage, kPage, kIova, h.fd,
			       IBV_ACCESS_REMOTE_READ, EOPNOTSUPP,
			       "a page of a vgem buffer, read-only");
		expect_refused(p.b.pd, 0, len + 1, kIova, h.fd, kAll, EINVAL,
			       "one byte past the end of a vgem buffer");
		close(h.fd);
	}
	close(drm_fd);
	CHECK(my_mrs(p) == mrs, "%zu MRs after the refusals, %zu before",
	      my_mrs(p), mrs);
	CHECK(port_counter(p, "kmem_bytes") == kmem,
	      "kmem_bytes %lld after the refusals, %lld before",
	      port_counter(p, "kmem_bytes"), kmem);
	CHECK(before < 0 || dmabuf_objects() == before,
	      "%ld dma-bufs after the refusals and the close, %ld before",
	      dmabuf_objects(), before);
}

// A udmabuf over a huge page (a hugetlbfs memfd: one large folio) is
// refused with EOPNOTSUPP, the whole page and one 4 KiB page of it: 6.12's
// udmabuf maps every page of a folio as its first (from 6.12.48 on), so
// sroce maps no udmabuf over huge pages anywhere. Where sroce maps no
// udmabuf at all (udmabuf_unmapped_why(): 6.1) that refusal comes first
// (dmabuf_udmabuf_kernel), and this test checks only that it holds over a
// huge page too. Needs /dev/udmabuf and a free huge page (the case adds
// one to the pool).
void t_dmabuf_hugetlb(Pair &p)
{
	size_t mrs = my_mrs(p);
	int memfd = memfd_create("sroce-huge", MFD_HUGETLB | MFD_ALLOW_SEALING |
						       MFD_CLOEXEC);
	struct stat st{};

	if (memfd < 0) {
		skip(std::string("no hugetlbfs memfd: ") + strerror(errno));
		return;
	}
	CHECK(!fstat(memfd, &st), "fstat of the memfd: %s", strerror(errno));
	const size_t len = size_t(st.st_blksize);
	if (ftruncate(memfd, off_t(len)) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) ||
	    fallocate(memfd, 0, 0, off_t(len))) {
		skip(std::string("no free huge page for a memfd: ") +
		     strerror(errno));
		close(memfd);
		return;
	}
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		skip("no /dev/udmabuf: this kernel has no CONFIG_UDMABUF");
		close(memfd);
		return;
	}
	udmabuf_create c{};
	c.memfd = uint32_t(memfd);
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.size = len;
	int fd = ioctl(dev, UDMABUF_CREATE, &c);
	CHECK(fd >= 0, "UDMABUF_CREATE over a huge page: %s", strerror(errno));
	if (fd >= 0) {
		expect_refused(p.b.pd, 0, len, kIova, fd, kAll, EOPNOTSUPP,
			       "a udmabuf over a huge page");
		expect_refused(p.b.pd, 2 * kPage, kPage, kIova, fd, kAll,
			       EOPNOTSUPP, "one 4 KiB page of a huge page");
		close(fd);
	}
	close(dev);
	close(memfd);
	CHECK(my_mrs(p) == mrs, "%zu MRs after the refusals, %zu before",
	      my_mrs(p), mrs);
}

// sroce maps udmabuf on the kernels whose udmabuf gives it a mapping it can
// use, and only there (udmabuf_unmapped_why(), by the version). Where not
// (6.1: the debug kernel of make check-debug), a udmabuf is refused with
// EOPNOTSUPP before anything is mapped or charged, whatever the range and
// access, a bad range still EINVAL (checked first); where it does (6.12),
// a good registration works. Either way nothing is left behind: no MR,
// sroce's kernel memory and the count of dma-bufs as before. Needs
// /dev/udmabuf.
void t_dmabuf_udmabuf_kernel(Pair &p)
{
	const size_t len = 64 * 1024;
	const std::string why = udmabuf_unmapped_why();
	long before = dmabuf_objects();
	long long kmem = port_counter(p, "kmem_bytes");
	size_t mrs = my_mrs(p);
	auto d = std::make_unique<UDmaBuf>(len);

	if (d->fd() < 0) {
		if (d->why().rfind("no /dev/udmabuf", 0) == 0)
			skip(d->why());
		else
			CHECK(false, "no udmabuf: %s", d->why().c_str());
		return;
	}
	if (why.empty()) {
		note("sroce maps this kernel's udmabuf");
		ibv_mr *mr = reg(p.b.pd, *d, 0, len, kIova, kAll);
		if (mr)
			CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s",
			      strerror(errno));
	} else {
		note("udmabuf refused: " + why);
		expect_refused(p.b.pd, 0, len, kIova, d->fd(), kAll,
			       EOPNOTSUPP, "a udmabuf");
		expect_refused(p.b.pd, kPage + 100, kPage, 100, d->fd(),
			       IBV_ACCESS_REMOTE_READ, EOPNOTSUPP,
			       "a range inside a udmabuf, read-only");
		expect_refused(p.b.pd, 0, len + 1, kIova, d->fd(), kAll, EINVAL,
			       "one byte past the end of a udmabuf");
	}
	CHECK(my_mrs(p) == mrs, "%zu MRs afterwards, %zu before", my_mrs(p),
	      mrs);
	CHECK(port_counter(p, "kmem_bytes") == kmem,
	      "kmem_bytes %lld afterwards, %lld before",
	      port_counter(p, "kmem_bytes"), kmem);
	d.reset();
	CHECK(before < 0 || dmabuf_objects() == before,
	      "%ld dma-bufs after the close, %ld before", dmabuf_objects(),
	      before);
}

// A raw REREG_MR command (ib_uverbs write()): libibverbs never sends one
// for a dma-buf MR, a process can. Returns 0 or the errno.
int raw_rereg(Pair &p, ibv_mr *mr, uint32_t flags, uint64_t start,
	      uint64_t length, ibv_pd *pd, int access)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_rereg_mr cmd;
	} req{};
	ib_uverbs_rereg_mr_resp resp{};

	req.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = uintptr_t(&resp);
	req.cmd.mr_handle = mr->handle;
	req.cmd.flags = flags;
	req.cmd.start = start;
	req.cmd.length = length;
	req.cmd.hca_va = start;
	req.cmd.pd_handle = pd ? pd->handle : 0;
	req.cmd.access_flags = uint32_t(access);
	if (write(p.ctx->cmd_fd, &req, sizeof(req)) == ssize_t(sizeof(req)))
		return resp.lkey == mr->lkey && resp.rkey == mr->rkey ? 0 :
									 -1;
	return errno;
}

// ibv_rereg_mr(3) refuses a dma-buf MR (libibverbs: IBV_REREG_MR_ERR_INPUT,
// EINVAL). The kernel, through a raw command: access and PD change in
// place, the keys stay; no new translation (EOPNOTSUPP); no access a
// dma-buf MR cannot grant (EINVAL).
void t_dmabuf_rereg(Pair &p)
{
	const size_t len = 64 * 1024;
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ;
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	pattern(d->map(), len, 0x71);
	std::vector<uint8_t> want(d->map(), d->map() + len);
	ibv_mr *mr = reg(p.b.pd, *d, 0, len, kIova, rw);
	if (!mr)
		return;
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr,
			   0, IBV_ACCESS_LOCAL_WRITE) ==
			      IBV_REREG_MR_ERR_INPUT &&
		      errno == EINVAL,
	      "ibv_rereg_mr of a dma-buf MR: errno %s", strerror(errno));

	int err = raw_rereg(p, mr, IBV_REREG_MR_CHANGE_ACCESS, 0, 0, nullptr,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(err == 0, "rereg to read-only: %s", strerror(err));
	refused_write(p, kIova, mr->rkey, 100, 1, IBV_WC_REM_ACCESS_ERR,
		      "WRITE after remote write was taken away");
	expect_buf(*d, want, "after the refused WRITE");
	expect_eq_status(post_one(p.a, IBV_WR_RDMA_READ,
				  uintptr_t(&p.a.buf[0]), 4096, p.a.mr->lkey,
				  kIova + 4096, mr->rkey, 2),
			 IBV_WC_SUCCESS, "READ after the rereg");
	CHECK(!memcmp(&p.a.buf[0], &want[4096], 4096), "READ bytes differ");

	err = raw_rereg(p, mr, IBV_REREG_MR_CHANGE_ACCESS, 0, 0, nullptr,
			rw | IBV_ACCESS_MW_BIND);
	CHECK(err == EINVAL, "rereg adding MW_BIND: %s", strerror(err));
	err = raw_rereg(p, mr, IBV_REREG_MR_CHANGE_ACCESS, 0, 0, nullptr,
			rw | IBV_ACCESS_ON_DEMAND);
	CHECK(err == EINVAL, "rereg adding ON_DEMAND: %s", strerror(err));
	err = raw_rereg(p, mr, IBV_REREG_MR_CHANGE_TRANSLATION, uintptr_t(p.b.buf.data()),
			kPage, nullptr, 0);
	CHECK(err == EOPNOTSUPP, "rereg with a new translation: %s",
	      strerror(err));
	// PD: to a's, where b's QP cannot use it; back, with write again.
	err = raw_rereg(p, mr, IBV_REREG_MR_CHANGE_PD, 0, 0, p.a.pd, 0);
	CHECK(err == 0, "rereg to another PD: %s", strerror(err));
	refused_rdma(p, IBV_WR_RDMA_READ, kIova, mr->rkey, 64, 3,
		     IBV_WC_REM_ACCESS_ERR, "READ through another PD's QP");
	err = raw_rereg(p, mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, 0, 0,
			p.b.pd, rw);
	CHECK(err == 0, "rereg back: %s", strerror(err));
	fill(p.a, 0, 3000, 0x3e);
	expect_eq_status(write_to(p, kIova + 333, mr->rkey, 3000, 4),
			 IBV_WC_SUCCESS, "WRITE after the rereg back");
	memcpy(&want[333], &p.a.buf[0], 3000);
	expect_buf(*d, want, "after the WRITE");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s", strerror(errno));
}

// "rdma resource show mr": a dma-buf MR says so (kind dmabuf, its
// exporter, udmabuf or system, the pages of the whole buffer, which the
// kernel maps whatever the range, and their page table entries' 8 bytes
// each as its kmem), also once its fd is closed; gone after the dereg.
void t_dmabuf_res(Pair &p)
{
	const size_t len = 64 * 1024, n = 3 * kPage;
	auto d = make_dmabuf(p, len);
	if (!d)
		return;
	ibv_mr *mr = reg(p.b.pd, *d, kPage + 100, n, 100, kAll);
	if (!mr)
		return;
	d->close_fd();
	std::string kind = mr_attr(p, n, "kind"),
		    exporter = mr_attr(p, n, "exporter"),
		    odp = mr_attr(p, n, "odp");
	CHECK(kind == "dmabuf" && exporter == d->exporter() && odp == "no",
	      "kind \"%s\", exporter \"%s\" (expected \"%s\"), odp \"%s\"",
	      kind.c_str(), exporter.c_str(), d->exporter(), odp.c_str());
	// The range spans 4 pages; the kernel maps all 16 of the buffer.
	long long pages = mr_num_attr(p, n, "pages_mapped");
	CHECK(pages == len / kPage, "pages_mapped %lld, expected %ld", pages,
	      long(len / kPage));
	CHECK(mr_num_attr(p, n, "kmem") == 8 * (long long)(len / kPage),
	      "kmem %lld, expected %ld", mr_num_attr(p, n, "kmem"),
	      long(8 * (len / kPage)));
	CHECK(ibv_dereg_mr(mr) == 0, "dereg: %s", strerror(errno));
	CHECK(mr_attr(p, n, "kind").empty(), "the MR is still listed");
}

const Test tests[] = {
	{ "dmabuf_rdma", t_dmabuf_rdma, nullptr, false },
	{ "dmabuf_offset", t_dmabuf_offset, nullptr, false },
	{ "dmabuf_close_fd", t_dmabuf_close_fd, nullptr, false },
	{ "dmabuf_dereg_inflight", t_dmabuf_dereg_inflight, nullptr, false },
	{ "dmabuf_cycles", t_dmabuf_cycles, nullptr, false },
	{ "dmabuf_badfd", t_dmabuf_badfd, nullptr, false },
	{ "dmabuf_errors", t_dmabuf_errors, nullptr, false },
	{ "dmabuf_rereg", t_dmabuf_rereg, nullptr, false },
	{ "dmabuf_res", t_dmabuf_res, nullptr, false },
	{ "dmabuf_heap", t_dmabuf_heap, nullptr, false },
	{ "dmabuf_unlisted", t_dmabuf_unlisted, nullptr, false },
	{ "dmabuf_hugetlb", t_dmabuf_hugetlb, nullptr, false },
	{ "dmabuf_udmabuf_kernel", t_dmabuf_udmabuf_kernel, nullptr, false },
};

} // namespace

const std::span<const Test> dmabuf_tests = tests;

} // namespace xfer
