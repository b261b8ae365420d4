/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: what differs between the kernels sroce builds for - Debian
 * bookworm's 6.1 and its 6.12 (also the PREEMPT_RT flavour) - each
 * difference once, under the kernel change that made it, and told apart by
 * a feature test (a macro the change added, the type of an op it changed),
 * not by the version: it holds for kernels with the change backported
 * (one exception, udmabuf's vmap below, changed no header at all).
 * The rest of the driver is written once, for one interface. (Two
 * differences live with their only user, beside the ops table in
 * sroce_verbs.c: the types of the create_cq and reg_user_mr_dmabuf ops.)
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/dma-buf.h>
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

/*
 * A dma-buf's kernel mapping is made under the buffer's reservation lock
 * since 6.2, whose dma_buf_vmap() asserts it and which added
 * dma_buf_vmap_unlocked() and dma_buf_vunmap_unlocked() to take it,
 * 56e5abba8c3e ("dma-buf: Add unlocked variant of vmapping functions");
 * 6.1's dma_buf_vmap() takes the buffer's own mutex. Kbuild defines
 * SROCE_HAVE_DMA_BUF_VMAP_UNLOCKED where dma-buf.h has them.
 */
static inline int sroce_dma_buf_vmap(struct dma_buf *dmabuf,
				     struct iosys_map *map)
{
#ifdef SROCE_HAVE_DMA_BUF_VMAP_UNLOCKED
	return dma_buf_vmap_unlocked(dmabuf, map);
#else
	return dma_buf_vmap(dmabuf, map);
#endif
}

static inline void sroce_dma_buf_vunmap(struct dma_buf *dmabuf,
					struct iosys_map *map)
{
#ifdef SROCE_HAVE_DMA_BUF_VMAP_UNLOCKED
	dma_buf_vunmap_unlocked(dmabuf, map);
#else
	dma_buf_vunmap(dmabuf, map);
#endif
}

/*
 * udmabuf's kernel mapping went through vmap_pfn() from 18d7de823b71
 * ("udmabuf: fix vmap_udmabuf error page set", 6.13, in 6.12.y from 6.12.2)
 * until its revert (6.12.48, 6.16.1): vmap_pfn() is for memory without
 * struct pages and refuses a udmabuf's with a WARN (vmap_pfn_apply()), so
 * every vmap of a udmabuf failed there, dma_buf_vmap() WARNing too. No
 * header changed with it, so no feature test can tell: Kbuild defines
 * SROCE_UDMABUF_VMAP_WARNS by the version, a bound that is wrong only
 * towards refusing.
 */
static inline bool sroce_udmabuf_vmap_warns(void)
{
#ifdef SROCE_UDMABUF_VMAP_WARNS
	return true;
#else
	return false;
#endif
}

#endif /* SROCE_COMPAT_H */
