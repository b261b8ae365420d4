// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// A forked process that plays one part of a test (an attacker, a victim, a
// file server), and the socket the test talks to it over, a line at a
// time. Every wait of the test's side has a limit: a part that is stuck in
// the kernel never holds the test up past it. A part is killed when the
// test process ends (PR_SET_PDEATHSIG), and holds no file of the test's
// but its own socket (a part's EOF is its test's end).
//
// No line is longer than kLine; say() and hear() allocate nothing, so a
// part may use them while its process's memory map is locked by a stalled
// page fault (brk and mmap would wait for it).
#pragma once

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

inline const size_t kLine = 256;

struct Role {
	pid_t pid = -1;
	int fd = -1;	// the test's end of the socket
};

// Milliseconds on the monotonic clock.
inline long now_ms()
{
	timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// Fork a part that runs @fn with its socket (descriptor 3) and exits with
// what @fn returns. Returns false (errno set) if it could not be started.
inline bool role_start(Role &r, const std::function<int(int)> &fn)
{
	int sv[2];
	pid_t parent = getpid();

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return false;
	fflush(nullptr);	// nothing buffered is written twice
	r.pid = fork();
	if (r.pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return false;
	}
	if (r.pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		if (dup2(sv[1], 3) != 3)
			_exit(1);
		close_range(4, ~0U, 0);
		int status = fn(3);
		fflush(nullptr);
		_exit(status);
	}
	close(sv[1]);
	r.fd = sv[0];
	return true;
}

// Send a line (without its newline, which this adds). False if it could
// not be sent whole.
__attribute__((format(printf, 2, 3)))
inline bool say(int fd, const char *fmt, ...)
{
	char line[kLine + 1];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(line, kLine, fmt, ap);
	va_end(ap);
	if (n < 0 || size_t(n) >= kLine)
		return false;
	line[n++] = '\n';
	return send(fd, line, n, MSG_NOSIGNAL) == n;
}

// Whether @fd has something to read (or its end) before @end, a time of
// now_ms() (-1: no limit). False on time out or error.
inline bool readable_by(int fd, long end)
{
	for (;;) {
		pollfd p = { fd, POLLIN, 0 };
		long left = end < 0 ? -1 : end - now_ms();

		if (end >= 0 && left <= 0)
			return false;
		int k = poll(&p, 1, int(left));
		if (k < 0 && errno == EINTR)
			continue;
		return k > 0;
	}
}

// The next line from @fd, without its newline, into @line (kLine bytes),
// within @ms milliseconds (-1: no limit). False on time out, end of file
// or error; @line then holds what came of the line.
inline bool hear(int fd, char *line, long ms)
{
	long end = ms < 0 ? -1 : now_ms() + ms;
	size_t n = 0;

	line[0] = 0;
	while (n < kLine - 1) {
		if (!readable_by(fd, end))
			return false;
		char c;
		if (read(fd, &c, 1) != 1)
			return false;
		if (c == '\n')
			return true;
		line[n++] = c;
		line[n] = 0;
	}
	return false;
}

// A part's exit status, once it has exited, within @ms milliseconds; -1
// if it is still running then (it is left running, not killed).
inline int role_wait(Role &r, long ms)
{
	long end = now_ms() + ms;
	int status;

	while (r.pid >= 0) {
		pid_t p = waitpid(r.pid, &status, WNOHANG);
		if (p == r.pid) {
			r.pid = -1;
			return WIFEXITED(status) ? WEXITSTATUS(status) :
						   128 + WTERMSIG(status);
		}
		if (p < 0 || now_ms() >= end)
			break;
		usleep(10000);
	}
	return -1;
}

// A part's exit status, once it has exited, within @ms milliseconds (its
// socket closed first: a part waiting for a command ends). -1 if it is
// still running then: it is killed, and left (a task in D state cannot
// be waited for).
inline int role_end(Role &r, long ms)
{
	int status;

	if (r.pid < 0)
		return -1;
	if (r.fd >= 0)
		close(r.fd);
	r.fd = -1;
	status = role_wait(r, ms);
	if (status < 0 && r.pid >= 0) {
		kill(r.pid, SIGKILL);
		r.pid = -1;
	}
	return status;
}
