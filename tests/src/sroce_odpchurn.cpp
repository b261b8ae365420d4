// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-odpchurn: an on-demand paging MR of b's while b's process changes
// the memory under it and a's RDMA WRITEs keep arriving: MADV_DONTNEED,
// mremap (a fresh mapping swapped in; the pages moved away), munmap and new
// pages mapped in their place, fork followed by a copy-on-write in the
// parent, and the same through an implicit ODP MR, each WRITE across one
// of its 16 MiB chunks. Every WRITE lands in the page the process sees now,
// or is refused; never in a page the process no longer has.
//
// Every 8-byte word a WRITE carries names the WRITE and the word it is
// meant for, so a word found anywhere says where it came from. The pages
// the process gives up stay reachable where the test can (a second mapping
// of shared memory, the address mremap moved them to, the forked child's
// copy): no WRITE posted after the change returned may show up there.
#include "xfer.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <sys/wait.h>
#include <thread>

namespace xfer {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const size_t kPage = size_t(sysconf(_SC_PAGESIZE));
const int kOdpAccess = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// A word of b's memory: [tag:8][number:32][word:24], where "word" is its
// index from the start of the target, the place it belongs.
enum Tag : uint64_t {
	kWrite = 0xa5,	// the bytes of WRITE <number>
	kMarker = 0x4d,	// by the CPU in fresh mapping <number>
	kCpu = 0xc3,	// the parent's store after fork round <number>
};

uint64_t word(Tag tag, uint64_t n, size_t w)
{
	return uint64_t(tag) << 56 | (n & 0xffffffff) << 24 | (w & 0xffffff);
}

uint64_t tag_of(uint64_t v) { return v >> 56; }
uint64_t num_of(uint64_t v) { return v >> 24 & 0xffffffff; }
size_t at_of(uint64_t v) { return v & 0xffffff; }

uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

// What word @v, found at word @w, is.
std::string describe(uint64_t v, size_t w)
{
	char s[128];
	char where[48] = "";

	if (at_of(v) != w)
		snprintf(where, sizeof(where), ", meant for +%#zx",
			 at_of(v) * 8);
	if (!v)
		return "0 (a fresh page's)";
	if (tag_of(v) == kWrite)
		snprintf(s, sizeof(s), "bytes of WRITE %llu%s",
			 (unsigned long long)num_of(v), where);
	else if (tag_of(v) == kMarker)
		snprintf(s, sizeof(s), "the marker of mapping %llu%s",
			 (unsigned long long)num_of(v), where);
	else if (tag_of(v) == kCpu)
		snprintf(s, sizeof(s), "the CPU store of fork round %llu%s",
			 (unsigned long long)num_of(v), where);
	else
		snprintf(s, sizeof(s), "%#018llx (nobody's bytes)",
			 (unsigned long long)v);
	return s;
}

// What a page that was dropped or replaced may hold in place of a WRITE's
// bytes: zeros, or the marker a fresh mapping was filled with.
bool fresh_word(uint64_t v, size_t w)
{
	return !v || (tag_of(v) == kMarker && at_of(v) == w);
}

// The memory a's WRITEs go to: [base, base + len) through @rkey.
struct Target {
	uint8_t *base;
	size_t len;
	uint32_t rkey;

	size_t pages() const { return len / kPage; }
};

// A range of the target, in bytes from its start (multiples of 8).
struct Range {
	size_t off, len;

	bool has(size_t w) const { return w * 8 >= off && w * 8 < off + len; }
};

using Pick = std::function<Range()>;

// What the thread that changes b's memory and the writer share.
struct Churn {
	explicit Churn(size_t pages) : begun(pages), ended(pages), gone(pages)
	{
	}

	// Per page, the memory operations begun on it and ended: a WRITE
	// whose page saw none from its post to its check is there whole.
	std::vector<std::atomic<uint64_t>> begun, ended;
	std::atomic<uint64_t> next_id{ 1 };	// the id of the next WRITE
	std::atomic<size_t> cur_page{ 0 };	// the last one's first page
	std::atomic<bool> stop{ false };	// the thread is to stop
	std::atomic<bool> done{ false };	// the thread has no more to do
	std::mutex lock;	// the writer's reads against munmap
	std::vector<bool> gone;	// under lock: pages unmapped
	uint64_t cut = 0;	// under lock: next_id when munmap returned
	std::string err;	// the thread's first failure (read after join)
	unsigned ops = 0;	// operations done (read after join)

	void begin(size_t pg, size_t n)
	{
		for (size_t i = pg; i < pg + n; i++)
			begun[i]++;
	}

	void end(size_t pg, size_t n)
	{
		for (size_t i = pg; i < pg + n; i++)
			ended[i]++;
	}

	// Waits until WRITE @id got its id: false if told to stop, or after
	// 20 s (the writer is stuck; it says why).
	bool wait_id(uint64_t id)
	{
		auto until = Clock::now() + 20s;

		while (next_id < id) {
			if (stop || Clock::now() > until)
				return false;
			usleep(100);
		}
		return true;
	}

	// Waits until the operations begun on page @pg so far have ended:
	// false after 20 s.
	bool wait_ended(size_t pg)
	{
		auto until = Clock::now() + 20s;
		uint64_t n = begun[pg];

		while (ended[pg] < n) {
			if (Clock::now() > until)
				return false;
			std::this_thread::yield();
		}
		return true;
	}

	void fail(const char *what)
	{
		if (err.empty())
			err = std::string(what) + ": " + strerror(errno);
	}
};

// a's side of the test: WRITEs into the target, one at a time, each
// checked in b's memory once it completed, and the model of what the
// target holds after them.
struct Writer {
	Writer(Pair &p_, Target t_, Churn &c_, const char *op_,
	       bool excused_ = true)
		: p(p_), t(t_), c(c_), op(op_), excused(excused_),
		  expect(t_.len / 8), seen(t_.pages())
	{
	}

	Pair &p;
	Target t;
	Churn &c;
	const char *op;	// what changes the memory, for messages
	bool excused;	// an overlapping operation excuses fresh words
	std::vector<uint64_t> expect;	// per word, after the WRITEs
	std::vector<uint64_t> seen;	// per page, ended[] at the last
	uint64_t last_id = 0;
	unsigned writes = 0;	// completed
	unsigned fresh = 0;	// checked whole in a page changed since
	size_t split = 0;	// words checked whole before this offset
	size_t below = 0, above = 0;	// and from it on

	ibv_wc_status write(Range r);
	void check(uint64_t id, Range r, const std::vector<uint64_t> &e0);
};

// WRITE @r of the target from a's buffer, wait for its completion, and if
// it succeeded, check what b's process sees of it now: its bytes, all of
// them if no operation on the page began between the post and the check;
// else each word its own or a fresh page's, never another WRITE's.
ibv_wc_status Writer::write(Range r)
{
	uint64_t id = c.next_id.fetch_add(1);
	size_t first = r.off / kPage, last = (r.off + r.len - 1) / kPage;
	std::vector<uint64_t> e0;
	ibv_wc wc{};

	last_id = id;
	c.cur_page = first;
	for (size_t i = 0; i < r.len; i += 8)
		put64(&p.a.buf[i], word(kWrite, id, (r.off + i) / 8));
	for (size_t pg = first; pg <= last; pg++)
		e0.push_back(c.ended[pg]);
	std::atomic_thread_fence(std::memory_order_seq_cst);
	int ret = post_send(p.a, IBV_WR_RDMA_WRITE, 0, uint32_t(r.len), id,
			    uintptr_t(t.base + r.off), t.rkey);
	CHECK(ret == 0, "post WRITE %llu: %s", (unsigned long long)id,
	      strerror(ret));
	if (ret || !poll_one(p.a, wc))
		return IBV_WC_GENERAL_ERR;
	CHECK(wc.wr_id == id, "completion of wr_id %llu, expected %llu",
	      (unsigned long long)wc.wr_id, (unsigned long long)id);
	if (wc.status != IBV_WC_SUCCESS)
		return wc.status;
	writes++;
	for (size_t i = 0; i < r.len; i += 8)
		expect[(r.off + i) / 8] = word(kWrite, id, (r.off + i) / 8);
	check(id, r, e0);
	return IBV_WC_SUCCESS;
}

void Writer::check(uint64_t id, Range r, const std::vector<uint64_t> &e0)
{
	size_t first = r.off / kPage, last = (r.off + r.len - 1) / kPage;
	std::lock_guard<std::mutex> g(c.lock);
	bool changed = false;

	for (size_t pg = first; pg <= last; pg++) {
		size_t lo = std::max(r.off, pg * kPage);
		size_t hi = std::min(r.off + r.len, (pg + 1) * kPage);
		uint64_t before = e0[pg - first];

		if (c.gone[pg]) {
			CHECK(id < c.cut, "WRITE %llu into page %zu completed, "
			      "but munmap of the page returned before it was "
			      "posted (WRITEs from %llu on)",
			      (unsigned long long)id, pg,
			      (unsigned long long)c.cut);
			continue;
		}
		// A change of the page still in progress may have cleared its
		// page table entry, run the MMU notifier and not yet flushed
		// the TLB (zap_page_range() does that last): this CPU could
		// still read the page being taken away while the WRITE's last
		// bytes went to the new one. Read once the changes begun on
		// the page have returned, as the process would.
		if (!c.wait_ended(pg)) {
			CHECK(false, "a %s of page %zu did not return within "
			      "20 s", op, pg);
			return;
		}
		std::vector<uint8_t> now(t.base + lo, t.base + hi);
		std::atomic_thread_fence(std::memory_order_seq_cst);
		bool strict = !excused || c.begun[pg] == before;
		size_t bad = 0, at = 0;
		uint64_t got = 0;
		char why[96];

		changed |= strict && before > seen[pg];
		seen[pg] = before;
		for (size_t i = 0; i < now.size(); i += 8) {
			size_t w = (lo + i) / 8;
			uint64_t v = get64(&now[i]);

			if (v == word(kWrite, id, w) ||
			    (!strict && fresh_word(v, w)))
				continue;
			if (!bad++) {
				at = w;
				got = v;
			}
		}
		if (strict)
			(lo < split ? below : above) += now.size() / 8;
		if (!excused)
			snprintf(why, sizeof(why), "(a %s takes no byte away)",
				 op);
		else if (strict)
			snprintf(why, sizeof(why), "(no %s of the page began "
				 "between the post and this read)", op);
		else
			snprintf(why, sizeof(why), "or a fresh page's (a %s of "
				 "the page overlapped)", op);
		CHECK(!bad, "WRITE %llu (%zu bytes at +%#zx): at +%#zx b's "
		      "process sees %s, expected the WRITE's bytes %s; %zu of "
		      "the %zu words in page %zu wrong",
		      (unsigned long long)id, r.len, r.off, at * 8,
		      describe(got, at).c_str(), why, bad, now.size() / 8, pg);
		if (bad)
			return;
	}
	fresh += changed;
}

// WRITEs chosen by @pick until @enough() or a failure; each must succeed.
void write_until(Writer &w, const Pick &pick,
		 const std::function<bool()> &enough)
{
	while (!failures && !enough()) {
		Range r = pick();
		ibv_wc_status st = w.write(r);

		CHECK(st == IBV_WC_SUCCESS, "WRITE %llu (%zu bytes at +%#zx) "
		      "while a %s changed the memory under it: status %s, "
		      "expected success (all of its memory is mapped)",
		      (unsigned long long)w.last_id, r.len, r.off, w.op,
		      ibv_wc_status_str(st));
	}
}

// The target, or the part outside pages [lo, hi), holds what the WRITEs
// put there; a word of @allowed may hold WRITE @id's bytes instead (and
// is taken to hold them from now on).
void check_model(Writer &w, const char *what, size_t lo = 0, size_t hi = 0,
		 Range allowed = {}, uint64_t id = 0)
{
	size_t bad = 0, at = 0;
	uint64_t got = 0;

	for (size_t i = 0; i < w.t.len / 8; i++) {
		if (i * 8 / kPage >= lo && i * 8 / kPage < hi)
			continue;
		uint64_t v = get64(w.t.base + i * 8);

		if (v != w.expect[i] && allowed.has(i) &&
		    v == word(kWrite, id, i))
			w.expect[i] = v;
		if (v != w.expect[i] && !bad++) {
			at = i;
			got = v;
		}
	}
	CHECK(!bad, "%s: at +%#zx b's process sees %s, expected %s; %zu words "
	      "wrong", what, at * 8, describe(got, at).c_str(),
	      describe(w.expect[at], at).c_str(), bad);
}

// One WRITE of the whole target with nothing changing the memory: it lands,
// and all of the target holds what the WRITEs put there.
void write_all(Writer &w, const char *what)
{
	ibv_wc_status st = w.write({ 0, w.t.len });

	CHECK(st == IBV_WC_SUCCESS, "%s: WRITE of all %zu bytes: status %s",
	      what, w.t.len, ibv_wc_status_str(st));
	check_model(w, what);
}

// Pages the process gave up, seen through @view (the layout of the target
// from @from on): each word holds what it held, or bytes of a WRITE posted
// before @cut, before the change (@what) returned; never a later one's.
void check_old(const uint8_t *view, size_t from, size_t len, uint64_t cut,
	       const char *what)
{
	size_t bad = 0, at = 0;
	uint64_t got = 0;

	for (size_t i = 0; i < len / 8; i++) {
		size_t w = from / 8 + i;
		uint64_t v = get64(view + i * 8);

		bool before = tag_of(v) == kWrite && at_of(v) == w &&
			      num_of(v) < cut;

		if (fresh_word(v, w) || before)
			continue;
		if (!bad++) {
			at = w;
			got = v;
		}
	}
	CHECK(!bad, "%s: at +%#zx they hold %s; only bytes of WRITEs before "
	      "%llu, posted before the change returned, may be there; %zu "
	      "words wrong", what, at * 8, describe(got, at).c_str(),
	      (unsigned long long)cut, bad);
}

// Both QPs back to RTS after a refused WRITE put them in error, their CQs
// empty.
bool reconnect(Pair &p)
{
	ibv_qp_attr reset{};
	int ret = 0;

	reset.qp_state = IBV_QPS_RESET;
	for (Side *s : { &p.a, &p.b }) {
		ret = ret ?: ibv_modify_qp(s->qp, &reset, IBV_QP_STATE);
		ibv_wc wc;
		while (ibv_poll_cq(s->cq, 1, &wc) > 0)
			;
	}
	CHECK(ret == 0, "reset the QPs: %s", strerror(ret));
	return ret == 0 && connect(p, p.a, p.b) && connect(p, p.b, p.a);
}

// The operation a churn thread does on b's memory, with its random source;
// false when it has nothing more to do (or failed: Churn::fail).
using Op = std::function<bool(std::minstd_rand &)>;

// a's WRITEs (@pick) for about @secs while a thread does @op to b's
// memory, paced by the WRITEs (0 to @gap more WRITEs, then up to 1 ms) so
// that some operations fall in the middle of a WRITE and some between two.
// It runs on until 10 WRITEs were checked whole in a page changed since
// the previous WRITE of it (3 * @secs at most). Then, with nothing
// changing, a WRITE of all the target lands whole.
void churn_phase(Writer &w, const Pick &pick, const Op &op, unsigned gap,
		 int secs)
{
	Churn &c = w.c;
	auto t1 = Clock::now() + std::chrono::seconds(secs);
	auto t3 = Clock::now() + std::chrono::seconds(3 * secs);
	std::thread th([&] {
		std::minstd_rand rng(7);

		while (c.wait_id(c.next_id + rng() % (gap + 1))) {
			usleep(rng() % 1000);
			if (!op(rng))
				break;
			c.ops++;
		}
		c.done = true;
	});

	write_until(w, pick, [&] {
		auto now = Clock::now();
		return c.done || (now > t1 && w.fresh >= 10) || now > t3;
	});
	c.stop = true;
	th.join();
	CHECK(c.err.empty(), "%s", c.err.c_str());
	if (failures)
		return;
	CHECK(w.fresh > 0, "no WRITE went into a page changed by a %s since "
	      "the previous WRITE of it with nothing changing it meanwhile "
	      "(%u operations, %u WRITEs): the test proved nothing", w.op,
	      c.ops, w.writes);
	write_all(w, "a WRITE of everything once the churn stopped");
}

// One page of the target, anywhere in it; one or two pages from an offset
// in a page.
Range one_or_two_pages(std::minstd_rand &rng, size_t pages)
{
	size_t pg = rng() % pages;
	size_t off = pg * kPage + 8 * (rng() % (kPage / 8));
	size_t len = 8 + 8 * (rng() % (2 * kPage / 8));

	if (rng() % 2)
		return { pg * kPage, kPage };
	return { off, std::min(len, pages * kPage - off) };
}

// MADV_DONTNEED of one or two pages: the page a WRITE is going to (or just
// went to) every other time, else any.
bool dontneed(Churn &c, Target t, size_t near, size_t span,
	      std::minstd_rand &rng)
{
	size_t pg = rng() % 2 ? c.cur_page.load() : rng() % t.pages();
	size_t n = 1 + rng() % 2;

	if (rng() % 4 == 0)
		pg = near + rng() % span;
	n = std::min(n, t.pages() - pg);
	c.begin(pg, n);
	int ret = madvise(t.base + pg * kPage, n * kPage, MADV_DONTNEED);
	c.end(pg, n);
	if (ret)
		c.fail("madvise(MADV_DONTNEED)");
	return !ret;
}

// MADV_DONTNEED of pages of b's ODP MR while a writes into them (one or
// two pages, from anywhere in a page). A page dropped goes back to zeros;
// a WRITE after it lands in the page the process sees. After each WRITE
// b's process reads the page (once a DONTNEED of it under way returned:
// Writer::check()): its bytes, all of them if no DONTNEED of the
// page began between the post and the read; else each word its bytes or
// zero (dropped after they landed), never an earlier WRITE's. At the end,
// with no DONTNEED, a WRITE of all the MR lands whole.
void t_churn_dontneed(Pair &p)
{
	const size_t pages = 16, len = pages * kPage;
	uint8_t *m = map_anon(len);
	ibv_mr *mr = m ? ibv_reg_mr(p.b.pd, m, len, kOdpAccess) : nullptr;

	CHECK(mr, "reg ODP MR: %s", strerror(errno));
	if (mr) {
		Churn c(pages);
		Writer w(p, { m, len, mr->rkey }, c, "MADV_DONTNEED");
		std::minstd_rand rng(1);

		churn_phase(w, [&] { return one_or_two_pages(rng, pages); },
			    [&](std::minstd_rand &r) {
				    return dontneed(c, w.t, 0, pages, r);
			    }, 2, 3);
		CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
	}
	if (m)
		munmap(m, len);
}

// Pages b's process gave up (their view), and the first WRITE posted after
// that.
struct Old {
	uint8_t *view;
	uint64_t cut;
};

// A MAP_SHARED anonymous mapping of @len bytes filled with the marker of
// mapping @n, and a second mapping of the same pages (mremap of size 0)
// in @alias; nullptr if either failed (Churn::fail).
uint8_t *shared_marked(Churn &c, size_t len, uint64_t n, uint8_t *&alias)
{
	void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		c.fail("mmap(MAP_SHARED | MAP_ANONYMOUS)");
		return nullptr;
	}
	auto *b = static_cast<uint8_t *>(m);
	for (size_t i = 0; i < len; i += 8)
		put64(b + i, word(kMarker, n, i / 8));
	void *a = mremap(m, 0, len, MREMAP_MAYMOVE);
	if (a == MAP_FAILED) {
		c.fail("mremap of size 0 (a second mapping of shared memory)");
		munmap(m, len);
		return nullptr;
	}
	alias = static_cast<uint8_t *>(a);
	return b;
}

const size_t kMaxOld = 128;

// The swap: fresh shared mappings, each filled with its marker, moved
// over the MR's pages with mremap(MREMAP_MAYMOVE | MREMAP_FIXED) (the old
// mapping is unmapped in the same call), the old pages kept through a
// second mapping of them.
void mremap_swap(Pair &p)
{
	const size_t pages = 16, len = pages * kPage;
	Churn c(pages);
	std::vector<Old> old(1);
	uint8_t *a = shared_marked(c, len, 0, old[0].view);
	ibv_mr *mr = a ? ibv_reg_mr(p.b.pd, a, len, kOdpAccess) : nullptr;

	CHECK(a, "%s", c.err.c_str());
	CHECK(!a || mr, "reg ODP MR on shared memory: %s", strerror(errno));
	if (mr) {
		Writer w(p, { a, len, mr->rkey }, c, "mremap");
		std::minstd_rand rng(2);
		auto swap = [&](std::minstd_rand &) {
			uint8_t *alias = nullptr, *n = nullptr;

			if (old.size() > kMaxOld)
				return false;
			n = shared_marked(c, len, old.size(), alias);
			if (!n)
				return false;
			c.begin(0, pages);
			void *r = mremap(n, len, len,
					 MREMAP_MAYMOVE | MREMAP_FIXED, a);
			c.end(0, pages);
			if (r != a) {
				c.fail("mremap(MREMAP_MAYMOVE | MREMAP_FIXED) "
				       "over the MR's pages");
				munmap(n, len);
				munmap(alias, len);
				return false;
			}
			old.back().cut = c.next_id;
			old.push_back({ alias, UINT64_MAX });
			return true;
		};

		churn_phase(w, [&] { return one_or_two_pages(rng, pages); },
			    swap, 4, 2);
		for (size_t i = 0; i + 1 < old.size(); i++) {
			char what[128];

			snprintf(what, sizeof(what), "the pages of mapping %zu "
				 "after mremap moved mapping %zu over them", i,
				 i + 1);
			check_old(old[i].view, 0, len, old[i].cut, what);
		}
		CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
	}
	for (Old &o : old)
		if (o.view)
			munmap(o.view, len);
	if (a)
		munmap(a, len);
}

// The move: the MR's pages moved away to another address with
// mremap(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP), which leaves
// the MR's range mapped with no pages (zeros on the next access). The old
// pages stay where they went.
void mremap_move(Pair &p)
{
	const size_t pages = 16, len = pages * kPage;
	Churn c(pages);
	std::vector<Old> old;
	uint8_t *a = map_anon(len);
	ibv_mr *mr = a ? ibv_reg_mr(p.b.pd, a, len, kOdpAccess) : nullptr;

	CHECK(mr, "reg ODP MR: %s", strerror(errno));
	if (mr) {
		Writer w(p, { a, len, mr->rkey }, c, "mremap");
		std::minstd_rand rng(3);
		auto move = [&](std::minstd_rand &) {
			if (old.size() >= kMaxOld)
				return false;
			void *to = mmap(nullptr, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (to == MAP_FAILED) {
				c.fail("mmap");
				return false;
			}
			c.begin(0, pages);
			void *r = mremap(a, len, len, MREMAP_MAYMOVE |
					 MREMAP_FIXED | MREMAP_DONTUNMAP, to);
			c.end(0, pages);
			if (r != to) {
				c.fail("mremap(MREMAP_DONTUNMAP) of private "
				       "anonymous memory (Linux 5.7 or later)");
				munmap(to, len);
				return false;
			}
			old.push_back({ static_cast<uint8_t *>(to),
					c.next_id });
			return true;
		};

		churn_phase(w, [&] { return one_or_two_pages(rng, pages); },
			    move, 4, 2);
		for (size_t i = 0; i < old.size(); i++) {
			char what[128];

			snprintf(what, sizeof(what), "the MR's pages moved "
				 "away by mremap %zu", i + 1);
			check_old(old[i].view, 0, len, old[i].cut, what);
		}
		CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
	}
	for (Old &o : old)
		munmap(o.view, len);
	if (a)
		munmap(a, len);
}

// mremap of b's ODP MR's pages while a writes into them, two ways: a fresh
// shared mapping, filled with a marker, moved over them (MREMAP_MAYMOVE |
// MREMAP_FIXED; the old pages stay reachable through a second mapping of
// them), and the pages moved away to another address (MREMAP_DONTUNMAP:
// the MR's range stays mapped, with no pages). After each WRITE b's
// process reads its bytes: all of them if no mremap began between the post
// and the read; else each word its bytes, the marker or zero. No WRITE
// posted after an mremap returned leaves a byte in the pages it took away;
// at the end a WRITE of all the MR lands whole in the pages there now.
void t_churn_mremap(Pair &p)
{
	mremap_swap(p);
	if (!failures)
		mremap_move(p);
}

// The part of a target a munmap round unmaps: pages [lo, hi), shared
// memory kept reachable through a second mapping, or private memory.
struct Hole {
	size_t lo, hi;
	bool shared;
};

// The hole made a mapping of its own (MAP_FIXED); if shared, its second
// mapping returned in @alias. False (and a failure) if mmap failed.
bool map_hole(Target t, Hole h, uint8_t *&alias)
{
	uint8_t *at = t.base + h.lo * kPage;
	size_t len = (h.hi - h.lo) * kPage;
	int flags = h.shared ? MAP_SHARED : MAP_PRIVATE;
	void *m = mmap(at, len, PROT_READ | PROT_WRITE,
		       flags | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	CHECK(m == at, "mmap(MAP_FIXED) of pages %zu-%zu: %s", h.lo, h.hi - 1,
	      strerror(errno));
	if (m != at || !h.shared)
		return m == at;
	void *a = mremap(at, 0, len, MREMAP_MAYMOVE);
	CHECK(a != MAP_FAILED, "mremap of size 0: %s", strerror(errno));
	alias = a == MAP_FAILED ? nullptr : static_cast<uint8_t *>(a);
	return alias;
}

// The first refusal of a munmap round: WRITE @id (@r) with status @st,
// pages [h.lo, h.hi) being unmapped (@begun: munmaps begun on them when it
// completed). It is a remote access error of a WRITE into the hole, and no
// byte of it lands outside its range. Then a WRITE into the hole only is
// refused too and changes nothing. False if the QPs could not be
// reconnected.
bool check_refusal(Pair &p, Writer &w, Hole h, ibv_wc_status st, Range r,
		   uint64_t id, uint64_t begun)
{
	Range hole{ h.lo * kPage, (h.hi - h.lo) * kPage };
	char what[128];

	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE %llu (%zu bytes at +%#zx) "
	      "during munmap of pages %zu-%zu: status %s, expected %s",
	      (unsigned long long)id, r.len, r.off, h.lo, h.hi - 1,
	      ibv_wc_status_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	bool in_hole = r.off < hole.off + hole.len && r.off + r.len > hole.off;

	CHECK(begun && in_hole, "WRITE %llu (%zu bytes at +%#zx) refused, but "
	      "pages %zu-%zu, the only ones unmapped, %s",
	      (unsigned long long)id, r.len, r.off, h.lo, h.hi - 1,
	      begun ? "are not in its range" : "were not yet");
	snprintf(what, sizeof(what), "the pages left mapped after WRITE %llu "
		 "was refused", (unsigned long long)id);
	check_model(w, what, h.lo, h.hi, r, id);
	if (!reconnect(p))
		return false;

	st = w.write(hole);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE %llu into the unmapped "
	      "pages %zu-%zu only: status %s, expected %s",
	      (unsigned long long)w.last_id, h.lo, h.hi - 1,
	      ibv_wc_status_str(st), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	snprintf(what, sizeof(what), "the pages left mapped after WRITE %llu "
		 "into the unmapped ones only", (unsigned long long)w.last_id);
	check_model(w, what, h.lo, h.hi);
	return reconnect(p);
}

// New private pages mapped (MAP_FIXED) where the hole was, the first half
// of them filled with a marker by the CPU, the rest never touched: a WRITE
// of all the target lands whole (the MR faults the new pages in).
void remap_hole(Writer &w, Hole h)
{
	uint8_t *at = w.t.base + h.lo * kPage;
	size_t len = (h.hi - h.lo) * kPage, first = h.lo * kPage / 8;
	void *m = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	CHECK(m == at, "mmap(MAP_FIXED) at the hole: %s", strerror(errno));
	if (m != at)
		return;
	for (size_t i = 0; i < len / 8; i++) {
		bool touched = i < len / 16;

		w.expect[first + i] = touched ? word(kMarker, 1, first + i) : 0;
		if (touched)
			put64(at + i * 8, w.expect[first + i]);
	}
	{
		std::lock_guard<std::mutex> g(w.c.lock);
		for (size_t pg = h.lo; pg < h.hi; pg++)
			w.c.gone[pg] = false;
	}
	check_model(w, "the target with new pages at the hole, before a WRITE",
		    h.lo + (h.hi - h.lo) / 2, h.hi);
	write_all(w, "a WRITE of everything once new pages were mapped at the "
		  "hole");
}

// One munmap round on @t (through its MR): the writer WRITEs (@pick)
// while a thread unmaps the hole. WRITEs into it posted after munmap
// returned are refused with a remote access error; the writer stops at
// the first refusal (check_refusal()). Then new pages at the hole take a
// WRITE (remap_hole()). At the end, the unmapped pages (if shared, through
// their second mapping) hold no byte of a WRITE posted after munmap
// returned.
void munmap_round(Pair &p, Target t, Hole h, const Pick &pick,
		  unsigned seed)
{
	uint8_t *hole = t.base + h.lo * kPage, *alias = nullptr;
	size_t hlen = (h.hi - h.lo) * kPage;
	Churn c(t.pages());
	Writer w(p, t, c, "munmap");
	Range refused{};
	uint64_t begun = 0;
	ibv_wc_status st = IBV_WC_SUCCESS;

	// A fresh target: zeros, the hole a mapping of its own.
	void *m = mmap(t.base, t.len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(m == t.base, "mmap(MAP_FIXED) of the target: %s",
	      strerror(errno));
	if (m != t.base || !map_hole(t, h, alias))
		return;
	std::thread th([&] {
		std::minstd_rand rng(seed);

		if (!c.wait_id(2 + rng() % (4 * (h.hi - h.lo))))
			return;
		usleep(rng() % 1500);
		std::lock_guard<std::mutex> g(c.lock);
		c.begin(h.lo, h.hi - h.lo);
		if (munmap(hole, hlen))
			c.fail("munmap");
		for (size_t pg = h.lo; pg < h.hi; pg++)
			c.gone[pg] = true;
		c.end(h.lo, h.hi - h.lo);
		c.cut = c.next_id;
		c.ops++;
	});
	auto until = Clock::now() + 20s;
	while (!failures) {
		Range r = pick();

		st = w.write(r);
		if (st != IBV_WC_SUCCESS) {
			begun = c.begun[h.lo];
			refused = r;
			break;
		}
		std::lock_guard<std::mutex> g(c.lock);
		CHECK(!c.gone[h.lo] || w.last_id < c.cut + 4 * t.pages(),
		      "WRITEs %llu to %llu, posted after munmap of pages "
		      "%zu-%zu returned: none refused",
		      (unsigned long long)c.cut, (unsigned long long)w.last_id,
		      h.lo, h.hi - 1);
		CHECK(Clock::now() < until, "no munmap within 20 s");
	}
	c.stop = true;
	th.join();
	CHECK(c.err.empty(), "%s", c.err.c_str());
	if (!failures && check_refusal(p, w, h, st, refused, w.last_id, begun))
		remap_hole(w, h);
	if (alias && c.ops) {
		char what[128];

		snprintf(what, sizeof(what), "the unmapped pages %zu-%zu (seen "
			 "through their second mapping)", h.lo, h.hi - 1);
		check_old(alias, h.lo * kPage, hlen, c.cut, what);
	}
	if (alias)
		munmap(alias, hlen);
}

// munmap of part of b's ODP MR while a writes into it, 4 times: the hole
// in the middle, at the MR's start, at its end, in the middle again; twice
// in private memory, twice in shared memory whose pages stay reachable
// through a second mapping. A WRITE (one page) into the hole posted after
// munmap returned is refused with IBV_WC_REM_ACCESS_ERR, never completes
// successfully; none outside the hole is refused. The pages left mapped
// hold what the completed WRITEs put there; a refused one leaves no byte
// outside its own range, and none in the unmapped pages. A WRITE into the
// hole only is refused and changes nothing. After mmap(MAP_FIXED) of new
// pages at the hole, a WRITE of all the MR lands whole: the MR faults the
// new pages in.
void t_churn_munmap(Pair &p)
{
	const size_t pages = 16, len = pages * kPage;
	const Hole holes[] = { { 4, 12, false }, { 0, 4, true },
			       { 12, 16, false }, { 6, 10, true } };
	uint8_t *m = map_anon(len);
	ibv_mr *mr = m ? ibv_reg_mr(p.b.pd, m, len, kOdpAccess) : nullptr;
	std::minstd_rand rng(4);

	CHECK(mr, "reg ODP MR: %s", strerror(errno));
	for (size_t i = 0; mr && i < std::size(holes) && !failures; i++)
		munmap_round(p, { m, len, mr->rkey }, holes[i], [&] {
			return Range{ rng() % pages * kPage, kPage };
		}, unsigned(10 + i));
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
	if (m)
		munmap(m, len);
}

// What a fork round leaves for the checks: the WRITEs before fork()
// returned and before the parent's stores, the parent's page words before
// them, the child's copy of the MR's pages as it saw them at the end.
struct ForkRound {
	uint64_t cut_fork = 0, cut_cow = 0;
	std::vector<uint64_t> before;
	std::vector<uint8_t> child;
	bool waited = false;
	int status = -1;
};

// Forks; the child waits for a byte on @go, copies the MR's pages as it
// sees them to @snap (shared memory), answers on @done and exits. The
// parent stores to the first word of every page (copy-on-write), lets a
// WRITE 2 * pages more times, then has the child take its copy.
void fork_round(Churn &c, Target t, unsigned n, ForkRound &r,
		std::minstd_rand &rng)
{
	int go[2], done[2];
	void *snap = mmap(nullptr, t.len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (snap == MAP_FAILED || pipe(go) || pipe(done)) {
		c.fail("mmap or pipe");
		return;
	}
	c.wait_id(c.next_id + 1 + rng() % t.pages());
	usleep(rng() % 1000);
	pid_t pid = fork();
	if (pid == 0) {
		char x;

		close(go[1]);
		close(done[0]);
		if (read(go[0], &x, 1) == 1)
			memcpy(snap, t.base, t.len);
		_exit(write(done[1], "x", 1) == 1 ? 0 : 1);
	}
	r.cut_fork = c.next_id;
	if (pid < 0)
		c.fail("fork");
	for (size_t pg = 0; pg < t.pages(); pg++) {
		std::atomic_ref<uint64_t> w0(
			*reinterpret_cast<uint64_t *>(t.base + pg * kPage));

		r.before.push_back(w0.load());
		w0.store(word(kCpu, n, pg * kPage / 8));
	}
	r.cut_cow = c.next_id;
	r.waited = c.wait_id(r.cut_cow + 2 * t.pages());
	char x = 0;
	if (pid > 0 && write(go[1], "x", 1) == 1 && read(done[0], &x, 1) == 1)
		r.child.assign(static_cast<uint8_t *>(snap),
			       static_cast<uint8_t *>(snap) + t.len);
	// Closed first: a child still waiting on @go ends.
	for (int fd : { go[0], go[1], done[0], done[1] })
		close(fd);
	if (pid > 0)
		waitpid(pid, &r.status, 0);
	munmap(snap, t.len);
}

// fork of b's process while a writes into b's ODP MR (private memory), 4
// times; after each fork the parent stores to the first word of every
// page of the MR (copy on write: the parent gets its own pages) while the
// WRITEs go on. The WRITEs, each of one page from its byte 64 on, land in
// the parent's pages whole, fork or not: b's process reads them right
// after each completion, and at the end its pages hold the last WRITEs and
// its own stores. The child's copy, taken 2 * 16 WRITEs after the
// parent's stores, holds none of the bytes of a WRITE posted after fork()
// returned, nor the parent's stores. The child uses no verbs (ib_uverbs
// refuses a forked child).
void t_churn_fork_cow(Pair &p)
{
	const size_t pages = 16, len = pages * kPage;
	const unsigned rounds = 4;
	uint8_t *m = map_anon(len);
	ibv_mr *mr = m ? ibv_reg_mr(p.b.pd, m, len, kOdpAccess) : nullptr;

	CHECK(mr, "reg ODP MR: %s", strerror(errno));
	if (!mr) {
		if (m)
			munmap(m, len);
		return;
	}
	Churn c(pages);
	Writer w(p, { m, len, mr->rkey }, c, "fork", false);
	std::vector<ForkRound> fr(rounds);
	std::minstd_rand rng(5);
	std::thread th([&] {
		std::minstd_rand r(6);

		for (unsigned i = 0; i < rounds && !c.stop && c.err.empty();
		     i++)
			fork_round(c, w.t, i + 1, fr[i], r);
		c.done = true;
	});
	auto until = Clock::now() + 60s;
	write_until(w, [&] {
		return Range{ rng() % pages * kPage + 64, kPage - 64 };
	}, [&] { return c.done || Clock::now() > until; });
	c.stop = true;
	th.join();
	CHECK(c.err.empty(), "%s", c.err.c_str());
	for (unsigned i = 0; i < rounds && !failures; i++) {
		ForkRound &r = fr[i];
		char what[128];

		CHECK(r.waited, "fork round %u: no %zu WRITEs after the "
		      "parent's stores", i + 1, 2 * pages);
		CHECK(WIFEXITED(r.status) && !WEXITSTATUS(r.status) &&
		      r.child.size() == len, "fork round %u: the child did not "
		      "report its copy (wait status %#x)", i + 1, r.status);
		if (r.child.size() != len)
			continue;
		for (size_t pg = 0; pg < pages; pg++) {
			uint64_t v = get64(&r.child[pg * kPage]);

			CHECK(v == r.before[pg], "fork round %u: the child "
			      "sees %s at +%#zx, expected %s, what the parent "
			      "had there before its store after fork()", i + 1,
			      describe(v, pg * kPage / 8).c_str(), pg * kPage,
			      describe(r.before[pg], pg * kPage / 8).c_str());
			put64(&r.child[pg * kPage], 0);
		}
		snprintf(what, sizeof(what), "fork round %u: the child's copy "
			 "of the MR's pages (fork() returned before WRITE "
			 "%llu)", i + 1, (unsigned long long)r.cut_fork);
		check_old(r.child.data(), 0, len, r.cut_fork, what);
	}
	// The parent's own stores stay, and WRITEs around them land.
	for (size_t pg = 0; pg < pages; pg++)
		w.expect[pg * kPage / 8] = word(kCpu, rounds, pg * kPage / 8);
	for (size_t pg = 0; pg < pages && !failures; pg++) {
		ibv_wc_status st = w.write({ pg * kPage + 64, kPage - 64 });

		CHECK(st == IBV_WC_SUCCESS, "WRITE into page %zu after the "
		      "forks: status %s", pg, ibv_wc_status_str(st));
	}
	if (!failures)
		check_model(w, "the parent's pages after the forks");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg ODP MR");
	munmap(m, len);
}

// A WRITE into the 32 pages around a chunk boundary (at page 16) that
// crosses it: 16 pages less up to 63 words, from an offset in pages 1-15.
Range across(std::minstd_rand &rng)
{
	size_t off = (1 + rng() % 15) * kPage + 8 * (rng() % (kPage / 8));

	return { off, 16 * kPage - 8 * (rng() % 64) };
}

// The same through an implicit ODP MR (one rkey for the whole address
// space, 16 MiB chunks): 32 pages around a chunk boundary of a 64 MiB
// private mapping, each WRITE across the boundary (16 pages, from an
// offset in a page). MADV_DONTNEED of pages on both sides, a quarter of
// the time of the 4 pages at the boundary, with the same checks as
// churn_dontneed; words on both sides of the boundary checked whole. Then
// 2 munmap rounds as in churn_munmap with the hole across the boundary
// (pages 14-17 private, 15-16 shared).
void t_churn_implicit(Pair &p)
{
	const size_t chunk = 16 << 20, big = 64 << 20, pages = 32;
	ibv_mr *imp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kOdpAccess);
	uint8_t *m = imp ? map_anon(big) : nullptr;

	CHECK(imp, "reg implicit ODP MR: %s", strerror(errno));
	if (m) {
		uintptr_t edge = (uintptr_t(m) + 2 * chunk - 1) & ~(chunk - 1);
		Target t{ reinterpret_cast<uint8_t *>(edge) - 16 * kPage,
			  pages * kPage, imp->rkey };
		std::minstd_rand rng(8);
		Churn c(pages);
		Writer w(p, t, c, "MADV_DONTNEED");

		w.split = 16 * kPage;
		churn_phase(w, [&] { return across(rng); },
			    [&](std::minstd_rand &r) {
				    return dontneed(c, t, 14, 4, r);
			    }, 2, 2);
		CHECK(failures || (w.below && w.above), "words checked whole "
		      "below the chunk boundary: %zu, above it: %zu", w.below,
		      w.above);
		const Hole holes[] = { { 14, 18, false }, { 15, 17, true } };
		for (size_t i = 0; i < std::size(holes) && !failures; i++)
			munmap_round(p, t, holes[i],
				     [&] { return across(rng); },
				     unsigned(20 + i));
		munmap(m, big);
	}
	if (imp)
		CHECK(ibv_dereg_mr(imp) == 0, "dereg implicit ODP MR");
}

const Test tests[] = {
	{ "churn_dontneed", t_churn_dontneed, nullptr, false },
	{ "churn_mremap", t_churn_mremap, nullptr, false },
	{ "churn_munmap", t_churn_munmap, nullptr, false },
	{ "churn_fork_cow", t_churn_fork_cow, nullptr, false },
	{ "churn_implicit", t_churn_implicit, nullptr, false },
};

} // namespace
} // namespace xfer

using namespace xfer;

int main(int argc, char **argv)
{
	int ret = 0;

	if (argc != 3)
		return usage("sroce-odpchurn DEV TEST|all", tests);
	if (std::string_view(argv[2]) != "all") {
		Pair p;

		return run_test(argv[1], argv[2], p, { tests });
	}
	for (const Test &x : tests) {
		Pair p;

		failures = 0;
		if (run_test(argv[1], x.name, p, { tests })) {
			printf("%s FAIL\n", x.name);
			ret = 1;
		}
		fflush(stdout);
	}
	return ret;
}
