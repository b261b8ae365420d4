/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: rings shared with user space (see struct sroce_ring_hdr in the uAPI
 * header for the protocol).
 */
#ifndef SROCE_QUEUE_H
#define SROCE_QUEUE_H

#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

/* An mmap()able area of a user context; freed when unmapped and removed. */
struct sroce_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *buf;		/* vmalloc_user() memory */
};

/**
 * struct sroce_ring - a ring and its geometry
 * @hdr: the shared header, at the start of the area
 * @slots: the first slot
 * @num_slots: a power of two
 * @slot_size: bytes per slot
 * @length: bytes of the whole area (page multiple)
 * @mmap: the user mapping's entry, NULL for a kernel-only ring
 *
 * The geometry is fixed at creation and lives only here: the kernel never
 * reads it back from shared memory.
 */
struct sroce_ring {
	struct sroce_ring_hdr *hdr;
	void *slots;
	u32 num_slots;
	u32 slot_size;
	size_t length;
	struct sroce_mmap_entry *mmap;
};

size_t sroce_ring_bytes(u32 num_slots, u32 slot_size);
int sroce_ring_init(struct sroce_ring *ring, struct ib_ucontext *uctx,
		    u32 num_slots, u32 slot_size, gfp_t gfp);
void sroce_ring_release(struct sroce_ring *ring);
void sroce_ring_geom(const struct sroce_ring *ring,
		     struct sroce_ring_geom *geom);

static inline void *sroce_ring_slot(const struct sroce_ring *ring, u32 index)
{
	return ring->slots + (size_t)(index & (ring->num_slots - 1)) *
			     ring->slot_size;
}

/*
 * The other side's index: an acquire load, so that the slots it published
 * (or released) before storing it are seen.
 */
static inline u32 sroce_ring_load_prod(const struct sroce_ring *ring)
{
	/* acquire: pairs with the producer's release of @prod */
	return smp_load_acquire(&ring->hdr->prod);
}

static inline u32 sroce_ring_load_cons(const struct sroce_ring *ring)
{
	/* acquire: pairs with the consumer's release of @cons */
	return smp_load_acquire(&ring->hdr->cons);
}

/* Our index: a release store, after the slots it covers are written/read. */
static inline void sroce_ring_store_prod(struct sroce_ring *ring, u32 prod)
{
	/* release: the slots are written before @prod covers them */
	smp_store_release(&ring->hdr->prod, prod);
}

static inline void sroce_ring_store_cons(struct sroce_ring *ring, u32 cons)
{
	/* release: the slots are read before @cons frees them */
	smp_store_release(&ring->hdr->cons, cons);
}

int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void sroce_mmap_free(struct rdma_user_mmap_entry *entry);

#endif /* SROCE_QUEUE_H */
