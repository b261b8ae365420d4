// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// What /proc shows of tasks stalled in the kernel: a task's state and
// flags, its kernel stack, and how many of sroce's workers wait in an ODP
// fault. A test of what a stalled fault holds up (tests/src/stallfs.h)
// sees the stall this way before it judges: a fault of the FUSE file
// waits in D state, its stack in hmm_range_fault() under sroce. Reading
// kernel stacks needs root.
#pragma once

#include "role.h"

#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <string>
#include <unistd.h>

namespace tasks {

inline const unsigned long kPfKthread = 0x00200000;	// PF_KTHREAD

inline std::string slurp(const std::string &path)
{
	std::string s;
	char buf[4096];
	int fd = open(path.c_str(), O_RDONLY);
	ssize_t n;

	while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		s.append(buf, size_t(n));
	if (fd >= 0)
		close(fd);
	return s;
}

// A task's state letter and flags (/proc/PID/stat), or false.
inline bool stat_of(pid_t pid, char *state, unsigned long *flags)
{
	std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
	size_t paren = s.rfind(')');

	return paren != std::string::npos &&
	       sscanf(s.c_str() + paren + 1, " %c %*d %*d %*d %*d %*d %lu",
		      state, flags) == 2;
}

// A task's kernel stack on one line.
inline std::string stack_of(pid_t pid)
{
	std::string s = slurp("/proc/" + std::to_string(pid) + "/stack");

	for (char &c : s)
		if (c == '\n')
			c = ' ';
	return s.empty() ? "(no stack)" : s;
}

// A kernel stack in an ODP fault of sroce's.
inline bool in_odp_fault(const std::string &stack)
{
	return stack.find("hmm_range_fault") != std::string::npos &&
	       stack.find("[sroce]") != std::string::npos;
}

// Kernel threads (sroce's workers) waiting in D state in an ODP fault of
// sroce's, under function @frame if given: how many; one's stack in @one.
inline int stalled_workers(std::string *one, const char *frame = nullptr)
{
	DIR *d = opendir("/proc");
	int n = 0;

	while (dirent *e = d ? readdir(d) : nullptr) {
		pid_t pid = atoi(e->d_name);
		char state;
		unsigned long flags;

		if (pid <= 0 || !stat_of(pid, &state, &flags) ||
		    state != 'D' || !(flags & kPfKthread))
			continue;
		std::string stack = stack_of(pid);
		if (in_odp_fault(stack) &&
		    (!frame || stack.find(frame) != std::string::npos) &&
		    n++ == 0)
			*one = stack;
	}
	if (d)
		closedir(d);
	return n;
}

// Until @ms for @done().
inline bool wait_until(long ms, const std::function<bool()> &done)
{
	long end = now_ms() + ms;

	while (!done()) {
		if (now_ms() >= end)
			return false;
		usleep(20000);
	}
	return true;
}

} // namespace tasks
