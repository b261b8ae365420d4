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
#include <initializer_list>
#include <map>
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

// A task's name (/proc/PID/comm, without the newline).
inline std::string comm_of(pid_t pid)
{
	std::string s = slurp("/proc/" + std::to_string(pid) + "/comm");

	if (!s.empty() && s.back() == '\n')
		s.pop_back();
	return s;
}

// Is a kernel thread of name @comm a workqueue's rescuer? On 6.1 it is
// named after its queue ("sroce_kernel"); on 6.12 "kworker/R-" and its
// queue's name, cut to 15 characters ("kworker/R-sroce"). A worker is
// "kworker/CPU:ID" or "kworker/uPOOL:ID" (then what it runs or ran last).
inline bool is_rescuer(const std::string &comm)
{
	return comm.rfind("kworker/", 0) != 0 ||
	       comm.rfind("kworker/R-", 0) == 0;
}

// The workqueue whose work item a worker of name @comm runs now, or "":
// while a worker runs an item, its /proc/PID/comm is its own name, "+"
// and the item's queue's name ("kworker/0:1H+sroce_user_65534": the
// kernel's wq_worker_comm(), 6.1 and 6.12 alike; "-" and the name once
// the item ended). A queue's name has no "+".
inline std::string queue_running(const std::string &comm)
{
	size_t plus = comm.rfind('+');

	return plus == std::string::npos ? "" : comm.substr(plus + 1);
}

// @queues (queue_running()'s, counted) on one line:
// "sroce_user_65534: 16".
inline std::string queues_str(const std::map<std::string, int> &queues)
{
	std::string s;

	for (const auto &[q, k] : queues)
		s += (s.empty() ? "" : ", ") + (q.empty() ? "(none)" : q) +
		     ": " + std::to_string(k);
	return s.empty() ? "(no thread)" : s;
}

// Each kernel thread in D state: @fn(its pid, its kernel stack on one
// line).
inline void each_kthread_in_d(
	const std::function<void(pid_t, const std::string &)> &fn)
{
	DIR *d = opendir("/proc");

	while (dirent *e = d ? readdir(d) : nullptr) {
		pid_t pid = atoi(e->d_name);
		char state;
		unsigned long flags;

		if (pid > 0 && stat_of(pid, &state, &flags) && state == 'D' &&
		    (flags & kPfKthread))
			fn(pid, stack_of(pid));
	}
	if (d)
		closedir(d);
}

// Kernel threads (sroce's workers) waiting in D state in an ODP fault of
// sroce's, under function @frame if given: how many; one's stack in @one;
// the names of those that are a workqueue's rescuer added to @rescuers,
// if given, each with a space after it; and, in @queues if given, how
// many run an item of which workqueue (queue_running()).
inline int stalled_workers(std::string *one, const char *frame = nullptr,
			   std::string *rescuers = nullptr,
			   std::map<std::string, int> *queues = nullptr)
{
	int n = 0;

	each_kthread_in_d([&](pid_t pid, const std::string &stack) {
		if (!in_odp_fault(stack) ||
		    (frame && stack.find(frame) == std::string::npos))
			return;
		if (n++ == 0)
			*one = stack;
		std::string name = rescuers || queues ? comm_of(pid) : "";
		if (rescuers && is_rescuer(name))
			*rescuers += name + " ";
		if (queues)
			(*queues)[queue_running(name)]++;
	});
	return n;
}

// The first @n functions of a kernel stack as /proc/PID/stack gives it
// ("[<0>] name+0x1/0x2 [module]" a line), innermost first, "<"-joined.
inline std::string stack_top(const std::string &raw, int n)
{
	std::string top;
	size_t at = 0;

	for (int i = 0; i < n && at < raw.size(); i++) {
		size_t end = raw.find('\n', at);
		std::string line = raw.substr(at, end == std::string::npos ?
						  std::string::npos : end - at);
		size_t b = line.find("] ");
		size_t e = line.find('+');
		if (b != std::string::npos && e != std::string::npos && e > b)
			top += (top.empty() ? "" : "<") + line.substr(b + 2, e - b - 2);
		if (end == std::string::npos)
			break;
		at = end + 1;
	}
	return top;
}

// sroce's kernel threads running work function @frame (a worker whose
// stack has it): those in D state, how many of them in an ODP fault of
// sroce's (hmm_range_fault()), the others (running, or sleeping
// interruptibly), where each of those in D state waits (the innermost
// frames of its stack, counted), and which workqueue's item each of those
// runs (queue_running(), counted).
struct Waiting {
	int n = 0;		// in D state
	int in_fault = 0;	// of them, in an ODP fault
	int other = 0;		// not in D state
	std::string fault_stack;	// one in the fault, on one line
	std::map<std::string, int> at;
	std::map<std::string, int> queues;

	std::string where() const
	{
		std::string s;

		for (const auto &[top, k] : at)
			s += (s.empty() ? "" : ", ") + std::to_string(k) + " in " +
			     top;
		return s.empty() ? "(none)" : s;
	}
};

inline Waiting workers_under(const char *frame)
{
	DIR *d = opendir("/proc");
	Waiting w;

	while (dirent *e = d ? readdir(d) : nullptr) {
		pid_t pid = atoi(e->d_name);
		char state;
		unsigned long flags;

		if (pid <= 0 || !stat_of(pid, &state, &flags) ||
		    !(flags & kPfKthread))
			continue;
		std::string raw = slurp("/proc/" + std::to_string(pid) +
					"/stack");
		if (raw.find(frame) == std::string::npos ||
		    raw.find("[sroce]") == std::string::npos)
			continue;
		if (state != 'D') {
			w.other++;
			continue;
		}
		w.n++;
		w.at[stack_top(raw, 3)]++;
		w.queues[queue_running(comm_of(pid))]++;
		if (in_odp_fault(raw) && w.in_fault++ == 0)
			w.fault_stack = stack_of(pid);
	}
	if (d)
		closedir(d);
	return w;
}

// Kernel threads in D state whose kernel stack has every one of @frames:
// how many; one's stack, on one line, in @one; and, in @queues if given,
// how many run an item of which workqueue (queue_running()).
inline int kthreads_in(std::initializer_list<const char *> frames,
		       std::string *one,
		       std::map<std::string, int> *queues = nullptr)
{
	int n = 0;

	each_kthread_in_d([&](pid_t pid, const std::string &stack) {
		for (const char *f : frames)
			if (stack.find(f) == std::string::npos)
				return;
		if (n++ == 0)
			*one = stack;
		if (queues)
			(*queues)[queue_running(comm_of(pid))]++;
	});
	return n;
}

// Every kernel thread, by state letter and, for those not sleeping
// interruptibly, the innermost frames of its stack: "N kthreads; S: 12,
// D: 64 (64 in a<b<c), R: 1 (...)": where the workers that are not in a
// fault are, when fewer than expected are.
inline std::string kthread_census()
{
	DIR *d = opendir("/proc");
	std::map<char, int> by_state;
	std::map<std::string, int> at;
	int n = 0;

	while (dirent *e = d ? readdir(d) : nullptr) {
		pid_t pid = atoi(e->d_name);
		char state;
		unsigned long flags;

		if (pid <= 0 || !stat_of(pid, &state, &flags) ||
		    !(flags & kPfKthread))
			continue;
		n++;
		by_state[state]++;
		if (state == 'S' || state == 'I')
			continue;
		std::string raw = slurp("/proc/" + std::to_string(pid) +
					"/stack");
		at[std::string(1, state) + ":" + stack_top(raw, 4)]++;
	}
	if (d)
		closedir(d);
	std::string s = std::to_string(n) + " kthreads;";
	for (const auto &[st, k] : by_state)
		s += " " + std::string(1, st) + ": " + std::to_string(k);
	s += "; not sleeping, where:";
	for (const auto &[top, k] : at)
		s += " " + std::to_string(k) + " " + top + ";";
	return s;
}

// Every thread of process @pid, by state letter and the innermost frames
// of its kernel stack ("(user)" for one running in user space): "3
// threads; R: 1 in (user); S: 2 in a<b<c": where a process's threads
// were when something they should hold did not hold.
inline std::string thread_census(pid_t pid)
{
	std::string dir = "/proc/" + std::to_string(pid) + "/task";
	DIR *d = opendir(dir.c_str());
	std::map<std::string, int> at;
	int n = 0;

	while (dirent *e = d ? readdir(d) : nullptr) {
		pid_t tid = atoi(e->d_name);
		std::string s = tid > 0 ? slurp(dir + "/" + e->d_name + "/stat") :
					  "";
		size_t paren = s.rfind(')');
		if (paren == std::string::npos || paren + 2 >= s.size())
			continue;
		n++;
		std::string top = stack_top(slurp(dir + "/" + e->d_name +
						  "/stack"), 3);
		at[std::string(1, s[paren + 2]) + " in " +
		   (top.empty() ? "(user)" : top)]++;
	}
	if (d)
		closedir(d);
	std::string s = std::to_string(n) + " threads";
	for (const auto &[where, k] : at)
		s += "; " + std::to_string(k) + " " + where;
	return s;
}

// Tasks in D state waiting to take an rwsem for writing (a process's mmap
// lock, say, behind readers stalled in a fault), at most @max of them:
// "PID (COMM): stack" each, or "(none)".
inline std::string rwsem_writers(int max = 4)
{
	DIR *d = opendir("/proc");
	std::string s;
	int n = 0;

	while (dirent *e = d ? readdir(d) : nullptr) {
		pid_t pid = atoi(e->d_name);
		char state;
		unsigned long flags;

		if (pid <= 0 || !stat_of(pid, &state, &flags) || state != 'D')
			continue;
		std::string stack = stack_of(pid);
		if (stack.find("down_write") == std::string::npos)
			continue;
		if (n++ < max) {
			std::string comm = slurp("/proc/" +
						 std::to_string(pid) + "/comm");
			if (!comm.empty() && comm.back() == '\n')
				comm.pop_back();
			s += (s.empty() ? "" : "; ") + std::to_string(pid) +
			     " (" + comm + "): " + stack;
		}
	}
	if (d)
		closedir(d);
	if (n > max)
		s += "; and " + std::to_string(n - max) + " more";
	return s.empty() ? "(none)" : s;
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
