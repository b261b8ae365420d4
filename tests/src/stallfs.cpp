// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// StallFs (stallfs.h): the server, and the test's side of it. The server
// answers what the kernel asks of a file system of one regular file (INIT,
// LOOKUP, GETATTR, OPEN, READ, WRITE, FLUSH, RELEASE...) at once, but a
// READ of the file, which it holds while the test says so and reports to
// the test as "read OFFSET LENGTH"; told "release", it answers them and
// every read after ("released"); told "hold", it drops the file's cached
// pages and holds reads again ("holding ERRNO"). Protocol:
// include/uapi/linux/fuse.h.
#include "stallfs.h"

#include <algorithm>
#include <cinttypes>
#include <fcntl.h>
#include <linux/fuse.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <thread>
#include <vector>

namespace {

const uint64_t kFileNode = 2;
const uint32_t kMaxWrite = 64 * 1024;
// The longest request: a WRITE's headers and max_write bytes (the kernel
// refuses a read(2) of /dev/fuse into less, or into less than 8 KiB).
const size_t kRequestMax = kMaxWrite + 4096;
const uint64_t kValidS = 3600;	// how long the kernel may keep names, attributes

struct Held {
	uint64_t unique, off;
	uint32_t len;
};

// One thread answers the kernel's requests and the test's lines; the
// drop of the file's pages (hold) runs in a second one, as the kernel
// takes each page's lock for it, and a read in flight holds its page's
// lock until this thread has answered it.
class Server {
public:
	Server(int dev, int ctl) : dev_(dev), ctl_(ctl) {}
	~Server();
	int run();

private:
	bool from_test();
	void answer_held();
	void start_drop();
	void drop_ended();
	void request(const fuse_in_header &in, const uint8_t *arg, size_t len);
	void reply(uint64_t unique, int error, const void *p = nullptr,
		   size_t n = 0);
	void reply_init(const fuse_in_header &in, const fuse_init_in &ii);
	void reply_lookup(const fuse_in_header &in, const char *name);
	void reply_attr(const fuse_in_header &in);
	void read(const fuse_in_header &in, const fuse_read_in &r);
	void answer_read(const Held &h);
	int drop_pages();

	int dev_, ctl_;
	bool hold_ = true;
	std::vector<Held> held_;
	std::vector<uint8_t> data_;
	// The drop under way: its thread, which writes its errno to
	// dropped_[1] as it ends.
	std::thread dropper_;
	int dropped_[2] = { -1, -1 };
};

Server::~Server()
{
	// Ended with a drop under way (the test went): it goes with the
	// process, and keeps its pipe till then.
	if (dropper_.joinable()) {
		dropper_.detach();
		return;
	}
	for (int fd : dropped_)
		if (fd >= 0)
			close(fd);
}

void fill_attr(uint64_t node, fuse_attr &a)
{
	bool root = node == FUSE_ROOT_ID;

	a = {};
	a.ino = node;
	a.mode = root ? S_IFDIR | 0755 : S_IFREG | 0666;
	a.nlink = root ? 2 : 1;
	a.size = root ? 0 : StallFs::kLen;
	a.blocks = a.size / 512;
	a.blksize = 4096;
}

int Server::run()
{
	std::vector<uint8_t> buf(kRequestMax);

	for (;;) {
		pollfd p[3] = { { dev_, POLLIN, 0 }, { ctl_, POLLIN, 0 },
				{ dropped_[0], POLLIN, 0 } };

		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		// The test has gone: so do we, and the kernel aborts the
		// connection (the reads held fail).
		if (p[1].revents && !from_test())
			return 0;
		if (p[2].revents)
			drop_ended();
		// Unmounted.
		if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			return 0;
		if (!(p[0].revents & POLLIN))
			continue;
		ssize_t n = ::read(dev_, buf.data(), buf.size());
		if (n < 0 && (errno == ENODEV || errno == ECONNABORTED))
			return 0;
		if (n < 0 && (errno == EINTR || errno == EAGAIN ||
			      errno == ENOENT))
			continue;
		if (n < ssize_t(sizeof(fuse_in_header)))
			return 1;
		fuse_in_header in;
		memcpy(&in, buf.data(), sizeof(in));
		request(in, buf.data() + sizeof(in), size_t(n) - sizeof(in));
	}
}

// A line from the test: "release", or "hold". False when the test has
// gone.
bool Server::from_test()
{
	char line[kLine];

	if (!hear(ctl_, line, 1000))
		return false;
	if (!strcmp(line, "release")) {
		hold_ = false;
		answer_held();
		say(ctl_, "released");
	} else if (!strcmp(line, "hold")) {
		start_drop();
	}
	return true;
}

void Server::answer_held()
{
	for (const Held &h : held_)
		answer_read(h);
	held_.clear();
}

// Drop the file's pages in a thread of its own, answering the reads held
// and every read until the drop has ended (drop_ended()): the kernel
// takes each page's lock to drop it, and a read of the page in flight
// holds it until it is answered. A read answered meanwhile may leave its
// page cached again, which a test sees: its next access does not wait.
void Server::start_drop()
{
	if (dropper_.joinable()) {
		say(ctl_, "holding %d", EBUSY);
		return;
	}
	if (dropped_[0] < 0 && pipe2(dropped_, O_CLOEXEC)) {
		say(ctl_, "holding %d", errno);
		return;
	}
	hold_ = false;
	answer_held();
	dropper_ = std::thread([this] {
		int err = drop_pages();
		ssize_t n = ::write(dropped_[1], &err, sizeof(err));

		(void)n;	// a pipe of our own: it takes 4 bytes
	});
}

// The drop ended: hold every read from now on, and tell the test.
void Server::drop_ended()
{
	int err = EIO;

	if (::read(dropped_[0], &err, sizeof(err)) != sizeof(err))
		err = EIO;
	dropper_.join();
	hold_ = true;
	say(ctl_, "holding %d", err);
}

// Drop the file's pages from the page cache, and so from every mapping
// of them: the kernel invalidates them (invalidate_inode_pages2_range())
// while the write is under way. 0, or an errno.
int Server::drop_pages()
{
	struct {
		fuse_out_header h;
		fuse_notify_inval_inode_out o;
	} n{};

	static_assert(sizeof(n) == sizeof(n.h) + sizeof(n.o), "no padding");
	n.h.len = sizeof(n);
	n.h.error = FUSE_NOTIFY_INVAL_INODE;	// unique 0: a notification
	n.o.ino = kFileNode;
	n.o.off = 0;
	n.o.len = 0;	// to the end
	return ::write(dev_, &n, sizeof(n)) == ssize_t(sizeof(n)) ? 0 : errno;
}

template <typename T> T arg_as(const uint8_t *arg, size_t len)
{
	T t{};

	memcpy(&t, arg, std::min(sizeof(t), len));
	return t;
}

void Server::request(const fuse_in_header &in, const uint8_t *arg,
		     size_t len)
{
	switch (in.opcode) {
	case FUSE_INIT:
		reply_init(in, arg_as<fuse_init_in>(arg, len));
		break;
	case FUSE_LOOKUP:
		if (len && !arg[len - 1])
			reply_lookup(in, reinterpret_cast<const char *>(arg));
		else
			reply(in.unique, -EINVAL);
		break;
	case FUSE_GETATTR:
	case FUSE_SETATTR:
		reply_attr(in);
		break;
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		fuse_open_out o{};
		o.fh = in.nodeid;
		reply(in.unique, 0, &o, sizeof(o));
		break;
	}
	case FUSE_READ:
		read(in, arg_as<fuse_read_in>(arg, len));
		break;
	case FUSE_WRITE: {
		fuse_write_out o{};
		o.size = arg_as<fuse_write_in>(arg, len).size;
		reply(in.unique, 0, &o, sizeof(o));
		break;
	}
	case FUSE_STATFS: {
		fuse_statfs_out o{};
		o.st.bsize = o.st.frsize = 4096;
		o.st.namelen = 255;
		reply(in.unique, 0, &o, sizeof(o));
		break;
	}
	case FUSE_READDIR:	// no entries
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_FSYNC:
	case FUSE_ACCESS:
	case FUSE_DESTROY:
		reply(in.unique, 0);
		break;
	case FUSE_FORGET:	// never answered
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		break;
	default:
		reply(in.unique, -ENOSYS);
		break;
	}
}

void Server::reply(uint64_t unique, int error, const void *p, size_t n)
{
	fuse_out_header h{};
	iovec iov[2] = { { &h, sizeof(h) }, { const_cast<void *>(p), n } };

	h.len = uint32_t(sizeof(h) + n);
	h.error = error;
	h.unique = unique;
	// ENOENT: the request was interrupted, or the connection aborted.
	if (writev(dev_, iov, n ? 2 : 1) < 0 && errno != ENOENT)
		fprintf(stderr, "stallfs: answer to request %" PRIu64 ": %s\n",
			unique, strerror(errno));
}

void Server::reply_init(const fuse_in_header &in, const fuse_init_in &ii)
{
	fuse_init_out o{};

	if (ii.major != FUSE_KERNEL_VERSION) {
		reply(in.unique, -EPROTO);
		return;
	}
	o.major = FUSE_KERNEL_VERSION;
	o.minor = std::min<uint32_t>(ii.minor, FUSE_KERNEL_MINOR_VERSION);
	o.max_readahead = ii.max_readahead;
	// Reads ahead in the background: a page fault then waits on the
	// page's lock (D state), not in the request's interruptible wait.
	o.flags = ii.flags & FUSE_ASYNC_READ;
	o.max_background = 16;
	o.congestion_threshold = 12;
	o.max_write = kMaxWrite;
	o.time_gran = 1;
	reply(in.unique, 0, &o, sizeof(o));
}

void Server::reply_lookup(const fuse_in_header &in, const char *name)
{
	fuse_entry_out o{};

	if (in.nodeid != FUSE_ROOT_ID || strcmp(name, StallFs::kName)) {
		reply(in.unique, -ENOENT);
		return;
	}
	o.nodeid = kFileNode;
	o.generation = 1;
	o.entry_valid = o.attr_valid = kValidS;
	fill_attr(kFileNode, o.attr);
	reply(in.unique, 0, &o, sizeof(o));
}

void Server::reply_attr(const fuse_in_header &in)
{
	fuse_attr_out o{};

	if (in.nodeid != FUSE_ROOT_ID && in.nodeid != kFileNode) {
		reply(in.unique, -ENOENT);
		return;
	}
	o.attr_valid = kValidS;
	fill_attr(in.nodeid, o.attr);
	reply(in.unique, 0, &o, sizeof(o));
}

void Server::read(const fuse_in_header &in, const fuse_read_in &r)
{
	Held h = { in.unique, r.offset, r.size };

	if (!hold_ || in.nodeid != kFileNode) {
		answer_read(h);
		return;
	}
	held_.push_back(h);
	say(ctl_, "read %" PRIu64 " %u", h.off, h.len);
}

void Server::answer_read(const Held &h)
{
	size_t n = h.off < StallFs::kLen ?
			   std::min<uint64_t>(h.len, StallFs::kLen - h.off) :
			   0;

	data_.resize(n);
	for (size_t i = 0; i < n; i++)
		data_[i] = StallFs::byte_at(h.off + i);
	reply(h.unique, 0, data_.data(), n);
}

// The server's process: open /dev/fuse, mount, say "mounted" (or "error
// ERRNO") and serve until unmounted or the test goes.
int serve(int ctl, const std::string &dir)
{
	int dev = open("/dev/fuse", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	char opts[128];

	if (dev < 0) {
		say(ctl, "error %d", errno);
		return 1;
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40755,user_id=0,group_id=0,allow_other", dev);
	if (mount("stallfs", dir.c_str(), "fuse", MS_NOSUID | MS_NODEV,
		  opts)) {
		say(ctl, "error %d", errno);
		return 1;
	}
	say(ctl, "mounted");
	return Server(dev, ctl).run();
}

} // namespace

int StallFs::mount(const std::string &dir, long ms)
{
	char line[kLine];
	int err;

	dir_ = dir;
	if (!role_start(server_, [&](int ctl) { return serve(ctl, dir); }))
		return errno;
	if (!hear(server_.fd, line, ms)) {
		role_end(server_, 1000);
		return ETIMEDOUT;
	}
	if (sscanf(line, "error %d", &err) == 1) {
		role_end(server_, ms);
		return err;
	}
	mounted_ = !strcmp(line, "mounted");
	if (!mounted_)
		return EPROTO;
	// The connection's name in fusectl: the superblock's device number,
	// as the kernel writes it (MKDEV(), not the C library's encoding).
	struct stat st;
	if (!stat(dir_.c_str(), &st))
		conn_ = std::to_string((uint64_t(major(st.st_dev)) << 20) |
				       minor(st.st_dev));
	return 0;
}

bool StallFs::held_read(long ms, uint64_t *off, uint32_t *len)
{
	char line[kLine];
	long end = now_ms() + ms;
	bool heard;

	// What a release not waited for said comes first.
	do
		heard = server_.fd >= 0 &&
			hear(server_.fd, line, std::max(1L, end - now_ms()));
	while (heard && !strcmp(line, "released"));
	return heard &&
	       sscanf(line, "read %" SCNu64 " %" SCNu32, off, len) == 2;
}

bool StallFs::release(long ms)
{
	char line[kLine];
	long end = now_ms() + ms;

	if (server_.fd < 0 || !say(server_.fd, "release"))
		return false;
	// The lines of reads held, not heard yet, come first.
	while (ms > 0 && hear(server_.fd, line, std::max(1L, end - now_ms())))
		if (!strcmp(line, "released"))
			return true;
	return ms <= 0;
}

int StallFs::hold(long ms)
{
	char line[kLine];
	long end = now_ms() + ms;
	int err;

	if (server_.fd < 0 || !say(server_.fd, "hold"))
		return EPIPE;
	// The lines of reads held before, answered since, come first.
	while (hear(server_.fd, line, std::max(1L, end - now_ms())))
		if (sscanf(line, "holding %d", &err) == 1)
			return err;
	return ETIMEDOUT;
}

// fusectl's folder, where each FUSE connection has its own, named after
// its superblock's device (fs/fuse/control.c, 6.1 and 6.12).
const char *const kFuseCtl = "/sys/fs/fuse/connections";

int StallFs::abort()
{
	std::string file = std::string(kFuseCtl) + "/" + conn_ + "/abort";
	bool ours = false;
	int err = 0;

	if (conn_.empty())
		return ENOENT;
	// Not mounted where no one did (the test VM's init): mounted for
	// the write, and unmounted again.
	if (access(file.c_str(), W_OK) &&
	    !::mount("fusectl", kFuseCtl, "fusectl", 0, nullptr))
		ours = true;
	int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (ours)
		umount2(kFuseCtl, MNT_DETACH);
	return err;
}

bool StallFs::unmount(long ms)
{
	bool ok = true;

	// Whatever the server does (stuck, or gone while a drop of its
	// thread waits in the kernel), nothing waits for it any more.
	if (mounted_ && abort())
		ok = false;
	// Busy (a process still has the file): detached, gone when it goes.
	if (mounted_ && umount2(dir_.c_str(), 0) &&
	    umount2(dir_.c_str(), MNT_DETACH))
		ok = false;
	mounted_ = false;
	conn_.clear();
	if (server_.pid >= 0 && role_end(server_, ms) != 0)
		ok = false;
	return ok;
}
