// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// StallFs: a FUSE file system of one file whose server holds every read,
// unanswered, until the test releases it. A page fault on a MAP_SHARED
// mapping of the file then waits in D state for as long as the test likes,
// which is what any user's own FUSE server can do to a fault it serves:
// the kernel reads the page ahead in the background and the fault waits
// on the page's lock, uninterruptibly when it cannot retry (an ODP fault:
// hmm_range_fault() asks handle_mm_fault() for neither
// FAULT_FLAG_ALLOW_RETRY nor FAULT_FLAG_KILLABLE). userfaultfd cannot do
// this: without FAULT_FLAG_ALLOW_RETRY, handle_userfault() gives SIGBUS.
//
// The server speaks /dev/fuse itself (no libfuse, no fusermount): a forked
// process (tests/src/role.h), root, that mounts the file system with
// mount(2). When the test process ends, so does the server, and the
// kernel aborts the connection: no read stays held past the test. The
// test aborts the connection itself (fusectl's abort) before it unmounts,
// or when the server does not answer: a server that is stuck holds no
// read, nor a task waiting for one, past the test either.
#pragma once

#include "role.h"

#include <cstddef>
#include <cstdint>
#include <string>

class StallFs {
public:
	static constexpr const char *kName = "f";
	static constexpr size_t kLen = 64 * 1024;

	// The byte at @off of the file, as an answered read gives it.
	static uint8_t byte_at(uint64_t off)
	{
		return uint8_t(off * 31 + 7 + (off >> 12));
	}

	StallFs() = default;
	StallFs(const StallFs &) = delete;
	StallFs &operator=(const StallFs &) = delete;
	~StallFs() { unmount(); }

	// Mount on the empty folder @dir within @ms: 0, or an errno (ENOENT
	// or ENODEV: this kernel has no FUSE).
	int mount(const std::string &dir, long ms);
	std::string file() const { return dir_ + "/" + kName; }
	// A read the server is holding, reported within @ms (each once):
	// its offset and length. False if none came.
	bool held_read(long ms, uint64_t *off, uint32_t *len);
	// Answer the reads held, and every read from now on. False if the
	// server could not be told, or with @ms if it did not say within
	// @ms that it did (it is stuck: abort()).
	bool release(long ms = 0);
	// Hold every read from now on again, as from the mount, once the
	// file's pages are dropped from the page cache and from every
	// mapping of them (FUSE_NOTIFY_INVAL_INODE): the next access to one
	// reads it again, and waits. The reads held are answered first, and
	// so is every read until the pages are dropped (the kernel drops a
	// page under its lock, which a read in flight holds until it is
	// answered): meant for when none is in flight, as a page read
	// meanwhile may stay cached. Within @ms: 0, or an errno (the
	// server's write of the notification, or ETIMEDOUT).
	int hold(long ms);
	// Abort the connection (/sys/fs/fuse/connections/N/abort; fusectl
	// mounted for it if it is not): every request in flight fails, the
	// reads held among them, and so do those after. 0, or an errno.
	int abort();
	// Abort the connection, unmount and wait for the server to end
	// (@ms). False if any failed.
	bool unmount(long ms = 10000);

private:
	std::string dir_;
	std::string conn_;	// the connection's folder in fusectl
	Role server_;
	bool mounted_ = false;
};
