// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// tracefs, for the tests that trace the kernel with kprobe events
// (sroce-failnth's sweep, sroce-xfer's orphan_* tests).
#pragma once

#include "check.h"

#include <fcntl.h>
#include <string>

const char *const kTracing = "/sys/kernel/tracing";

// Write @text to tracefs file @file (appended to kprobe_events).
inline bool tracing_put(const std::string &file, const std::string &text)
{
	std::string path = std::string(kTracing) + "/" + file;
	int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC |
				    (file == "kprobe_events" ? O_APPEND : O_TRUNC));
	bool ok = fd >= 0 && write(fd, text.data(), text.size()) ==
				     ssize_t(text.size());

	CHECK(ok, "%s: %s", path.c_str(), strerror(errno));
	if (fd >= 0)
		close(fd);
	return ok;
}
