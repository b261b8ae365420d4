/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: what differs between the kernels sroce builds for - Debian
 * bookworm's 6.1 and its 6.12 (also the PREEMPT_RT flavour) - each
 * difference once, under the kernel change that made it, and told apart by
 * a feature test (a macro the change added, the type of an op it changed),
 * not by the version: it holds for kernels with the change backported.
 * The rest of the driver is written once, for one interface. (One
 * difference lives with its only user: the create_cq op's type, beside
 * the ops table in sroce_verbs.c.)
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/ipv6.h>
#include <linux/mm.h>
#include <net/inet_sock.h>

/*
 * Turns off the multicast loop of kernel UDP socket @sock (IPv4, and IPv6 too
 * when @ipv6). The flags left their bit fields for bits of
 * inet_sock.inet_flags, set by the macros tested here: IPv4's in 6.6,
 * b09bde5c3554 ("inet: move inet->mc_loop to inet->inet_frags"), IPv6's in
 * 6.7, d986f52124e0 ("ipv6: lockless IPV6_MULTICAST_LOOP implementation").
 */
static inline void sroce_sock_mc_loop_off(struct socket *sock, bool ipv6)
{
#ifdef inet_clear_bit
	inet_clear_bit(MC_LOOP, sock->sk);
#else
	inet_sk(sock->sk)->mc_loop = 0;
#endif
	if (!ipv6)
		return;
#ifdef inet6_clear_bit
	inet6_clear_bit(MC6_LOOP, sock->sk);
#else
	inet6_sk(sock->sk)->mc_loop = 0;
#endif
}

/*
 * A VMA's flags are set through vm_flags_set() since 6.3, bc292ab00f6c
 * ("mm: introduce vma->vm_flags wrapper functions"), which made vm_flags
 * read-only; Kbuild defines SROCE_HAVE_VM_FLAGS_SET where the kernel's
 * mm.h has it. Called by an mmap handler (mmap_lock held for writing).
 */
static inline void sroce_vm_flags_set(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
#ifdef SROCE_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#endif /* SROCE_COMPAT_H */
