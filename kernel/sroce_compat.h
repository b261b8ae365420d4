/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: what differs between the kernels sroce builds for - Debian
 * bookworm's 6.1 and its 6.12 (also the PREEMPT_RT flavour) - each
 * difference once, under the kernel change that made it, and told apart by
 * a feature test (a macro the change added, the type of an op it changed),
 * not by the version: it holds for kernels with the change backported.
 * The rest of the driver is written once, for one interface.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/ipv6.h>
#include <linux/mm.h>
#include <net/inet_sock.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce_loc.h"

/*
 * ib_device_ops.create_cq takes the uverbs attribute bundle instead of the
 * driver's udata since 6.11, dd6d7f8574d7 ("RDMA: Pass entire uverbs attr
 * bundle to create cq function"); the udata is the bundle's driver_udata,
 * and a kernel CQ (ib_alloc_cq(), ib_create_cq()) gets no bundle.
 * sroce_create_cq() keeps the udata form; the ops table takes
 * SROCE_CREATE_CQ, which is sroce_create_cq() where the op has its type
 * and sroce_create_cq_bundle() where it does not.
 */
static inline int sroce_create_cq_bundle(struct ib_cq *ibcq,
					 const struct ib_cq_init_attr *attr,
					 struct uverbs_attr_bundle *attrs)
{
	return sroce_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}

#define SROCE_CREATE_CQ							\
	__builtin_choose_expr(						\
		__same_type(((const struct ib_device_ops *)NULL)->create_cq, \
			    &sroce_create_cq),				\
		sroce_create_cq, sroce_create_cq_bundle)

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
