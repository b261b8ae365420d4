/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: memory objects (MRs, and later windows) and their translations.
 * See "Memory keys and translation" in Documentation/sroce.md.
 */
#ifndef SROCE_MR_H
#define SROCE_MR_H

#include <linux/kref.h>
#include <linux/rcupdate.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

struct sroce_dev;

/* Keys: a 24-bit index into the device's memory table, then an 8-bit tag. */
#define SROCE_KEY_TAG_BITS	8
#define SROCE_KEY_INDEX_MAX	((1U << (32 - SROCE_KEY_TAG_BITS)) - 1)

static inline u32 sroce_key_index(u32 key)
{
	return key >> SROCE_KEY_TAG_BITS;
}

/**
 * struct sroce_mr_map - a translation from iova to pages, replaced as a whole
 * @ref: held by the MR while it is the MR's map, and by each request using it
 * @umem: the pinned user memory
 * @iova: the first byte's address as seen by the MR's users
 * @length: bytes
 * @offset: @iova's offset within the first page
 * @npages: entries of @pages
 * @pages: every page of the range, in order
 */
struct sroce_mr_map {
	struct kref ref;
	struct ib_umem *umem;
	u64 iova;
	u64 length;
	unsigned int offset;
	unsigned long npages;
	struct page **pages;
};

/* What an MR's addresses are. */
enum sroce_mr_type {
	SROCE_MR_USER,		/* pinned user memory, through @map */
	SROCE_MR_DMA,		/* a kernel PD's DMA MR: every kernel address */
};

enum sroce_mem_state {
	SROCE_MEM_VALID,
	SROCE_MEM_FREE,
};

/**
 * struct sroce_mr - a memory region
 * @ibmr: ib_core's MR (lkey, rkey, pd, iova, length)
 * @sdev: the device whose memory table holds @ibmr.lkey
 * @ref: held by the memory table entry and by each lookup
 * @type: what its addresses are
 * @state: VALID while registered
 * @access: IB_ACCESS_* granted
 * @map: the current translation (RCU-published)
 * @rcu: frees the MR after lookups under RCU are done with it
 */
struct sroce_mr {
	struct ib_mr ibmr;
	struct sroce_dev *sdev;
	struct kref ref;
	enum sroce_mr_type type;
	enum sroce_mem_state state;
	int access;
	struct sroce_mr_map __rcu *map;
	struct rcu_head rcu;
};

struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, struct ib_pd *pd,
			      u32 key, u64 va, u64 len, int access);
void sroce_mr_put(struct sroce_mr *mr);
void sroce_mr_copy(struct sroce_mr *mr, u64 va, void *buf, u64 len,
		   bool to_mr);
u64 sroce_mr_atomic(struct sroce_mr *mr, u64 va, u64 compare_add, u64 swap,
		    bool cmp_swap);
void sroce_mr_atomic_write(struct sroce_mr *mr, u64 va, u64 val);

#endif /* SROCE_MR_H */
