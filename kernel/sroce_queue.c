// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: rings shared with user space.
 *
 * A user ring's memory belongs to its mmap entry: destroying the queue
 * removes the entry, and sroce_mmap_free() vfree()s the memory once no
 * mmap() is looking the entry up. A process that still has the ring
 * mapped keeps its pages: each mapping holds a reference to every page
 * (vm_insert_page()), so the pages are freed with its last mapping, and
 * it never sees memory put to another use. The memory is charged to the
 * memory cgroup of the process that made the queue, and a failure to get
 * it is that process's ENOMEM, not a warning in the kernel log
 * (vmalloc_user() has neither, so sroce_mmap() maps the pages itself).
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce_compat.h"
#include "sroce_queue.h"

static inline struct sroce_mmap_entry *
to_smmap(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct sroce_mmap_entry, rdma);
}

/**
 * sroce_ring_bytes - the memory of a ring
 * @num_slots: number of slots, a power of two
 * @slot_size: bytes per slot
 *
 * Return: its bytes (whole pages), or 0 for a bad geometry.
 */
size_t sroce_ring_bytes(u32 num_slots, u32 slot_size)
{
	size_t bytes;

	if (!num_slots || !is_power_of_2(num_slots) || !slot_size)
		return 0;
	if (check_mul_overflow((size_t)num_slots, (size_t)slot_size, &bytes) ||
	    check_add_overflow(bytes, (size_t)SROCE_RING_SLOTS_OFFSET, &bytes))
		return 0;
	return PAGE_ALIGN(bytes);
}

/**
 * sroce_ring_init - allocate a ring
 * @ring: the ring to set up
 * @uctx: the user context that will mmap it, or NULL for a kernel ring
 * @num_slots: number of slots, a power of two
 * @slot_size: bytes per slot
 * @gfp: GFP_KERNEL_ACCOUNT for a ring a process sized (charged to its
 *       memory cgroup), else GFP_KERNEL
 *
 * Return: 0, -EINVAL for a bad geometry, or -ENOMEM.
 */
int sroce_ring_init(struct sroce_ring *ring, struct ib_ucontext *uctx,
		    u32 num_slots, u32 slot_size, gfp_t gfp)
{
	size_t bytes = sroce_ring_bytes(num_slots, slot_size);
	void *buf;
	int err;

	if (!bytes)
		return -EINVAL;
	buf = __vmalloc(bytes, gfp | __GFP_ZERO | __GFP_NOWARN);
	if (!buf)
		return -ENOMEM;

	ring->hdr = buf;
	ring->slots = buf + SROCE_RING_SLOTS_OFFSET;
	ring->num_slots = num_slots;
	ring->slot_size = slot_size;
	ring->length = bytes;
	ring->mmap = NULL;
	if (!uctx)
		return 0;

	ring->mmap = kzalloc(sizeof(*ring->mmap), gfp);
	if (!ring->mmap) {
		err = -ENOMEM;
		goto err_free;
	}
	ring->mmap->buf = buf;
	err = rdma_user_mmap_entry_insert(uctx, &ring->mmap->rdma, bytes);
	if (err)
		goto err_free_entry;
	return 0;

err_free_entry:
	kfree(ring->mmap);
	ring->mmap = NULL;
err_free:
	vfree(buf);
	return err;
}

/* The ring is no longer used by the kernel. */
void sroce_ring_release(struct sroce_ring *ring)
{
	if (ring->mmap)
		rdma_user_mmap_entry_remove(&ring->mmap->rdma);
	else
		vfree(ring->hdr);
	ring->hdr = NULL;
	ring->slots = NULL;
	ring->mmap = NULL;
}

/* Describe a user ring for its create response. */
void sroce_ring_geom(const struct sroce_ring *ring,
		     struct sroce_ring_geom *geom)
{
	geom->mmap_offset = rdma_user_mmap_get_offset(&ring->mmap->rdma);
	geom->mmap_length = ring->length;
	geom->num_slots = ring->num_slots;
	geom->slot_size = ring->slot_size;
}

/*
 * Map a ring's pages, as remap_vmalloc_range() would for memory from
 * vmalloc_user(): each page referenced by the mapping (the memory may be
 * freed before it is unmapped: see the top of this file), a mapping that
 * neither grows with mremap() nor goes into a core dump.
 */
int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	unsigned long off;
	void *buf;
	int err = 0;

	/* The length must match the entry's; ib_core checks that. */
	entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!entry)
		return -EINVAL;
	buf = to_smmap(entry)->buf;
	if (vma->vm_end - vma->vm_start != entry->npages << PAGE_SHIFT)
		err = -EINVAL;
	for (off = 0; !err && off < vma->vm_end - vma->vm_start;
	     off += PAGE_SIZE)
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(buf + off));
	if (!err)
		sroce_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	rdma_user_mmap_entry_put(entry);
	return err;
}

void sroce_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct sroce_mmap_entry *e = to_smmap(entry);

	vfree(e->buf);
	kfree(e);
}
