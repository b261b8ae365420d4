// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: rings shared with user space.
 *
 * A user ring's memory belongs to its mmap entry: destroying the queue
 * removes the entry, and the memory is freed by sroce_mmap_free() once the
 * last mapping of it is gone, so an application that still has the ring
 * mapped never sees freed memory.
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce_queue.h"

static inline struct sroce_mmap_entry *
to_smmap(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct sroce_mmap_entry, rdma);
}

/**
 * sroce_ring_init - allocate a ring
 * @ring: the ring to set up
 * @uctx: the user context that will mmap it, or NULL for a kernel ring
 * @num_slots: number of slots, a power of two
 * @slot_size: bytes per slot
 *
 * Return: 0, -EINVAL for a bad geometry, or -ENOMEM.
 */
int sroce_ring_init(struct sroce_ring *ring, struct ib_ucontext *uctx,
		    u32 num_slots, u32 slot_size)
{
	size_t bytes;
	void *buf;
	int err;

	if (!num_slots || !is_power_of_2(num_slots) || !slot_size)
		return -EINVAL;
	if (check_mul_overflow((size_t)num_slots, (size_t)slot_size, &bytes) ||
	    check_add_overflow(bytes, (size_t)SROCE_RING_SLOTS_OFFSET, &bytes))
		return -EINVAL;
	bytes = PAGE_ALIGN(bytes);

	buf = uctx ? vmalloc_user(bytes) : vzalloc(bytes);
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

	ring->mmap = kzalloc(sizeof(*ring->mmap), GFP_KERNEL);
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

int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	int err;

	/* The length must match the entry's; ib_core checks that. */
	entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!entry)
		return -EINVAL;
	err = remap_vmalloc_range(vma, to_smmap(entry)->buf, 0);
	rdma_user_mmap_entry_put(entry);
	return err;
}

void sroce_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct sroce_mmap_entry *e = to_smmap(entry);

	vfree(e->buf);
	kfree(e);
}
