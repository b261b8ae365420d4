// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The parts of sroce-stall's tests (stall_parts.cpp): the victim and the
// attackers, each a process of its own (role.h) with its own uverbs
// context, told what to do by the test a line at a time. Each says
// "ready ID" once set up (or "error ..."), then answers the commands its
// comment lists, and cleans up and exits (0: no failure) when the test
// closes its socket.
#pragma once

#include <infiniband/verbs.h>
#include <string>

namespace stall {

// How many times release_*'s A may make its ODP release wait
// (attacker_release()): a try whose release runs through a moment its
// mm was not invalidating is followed by another, up to this many.
inline const int kReleaseTries = 3;

int victim(int fd, const char *dev, ibv_qp_type type);
int attacker_doorbell(int fd, const char *dev, const std::string &file,
		      bool nobody);
int attacker_receiver(int fd, const char *dev, const std::string &file);
int attacker_flood(int fd, const char *dev, const std::string &file, int n,
		   const char *dev2 = nullptr);
int attacker_own(int fd, const char *dev);
int victim_ahead(int fd, const char *dev);
int attacker_ahead(int fd, const char *dev, const std::string &file, int n);
int attacker_release(int fd, const char *dev, const std::string &file);
int orphaner(int fd, const char *dev, bool nobody);

} // namespace stall
