/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: memory objects (MRs, and later windows) and their translations.
 * See "Memory keys and translation" in Documentation/sroce.md.
 */
#ifndef SROCE_MR_H
#define SROCE_MR_H

#include <linux/kref.h>
#include <linux/mutex.h>
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
 * struct sroce_pin - pinned user pages
 * @ref: held by each map that translates through them
 * @umem: the pinned memory (umem->address, ->length: the user range)
 * @offset: the range's offset within its first page
 * @npages: entries of @pages
 * @pages: every page of the range, in order
 */
struct sroce_pin {
	struct kref ref;
	struct ib_umem *umem;
	unsigned int offset;
	unsigned long npages;
	struct page **pages;
};

/* What a map's addresses are. */
enum sroce_map_type {
	SROCE_MAP_USER,		/* pinned user memory, through @pin */
	SROCE_MAP_DMA,		/* a kernel PD's DMA MR: every kernel address */
};

/**
 * struct sroce_map - everything an access through an MR's key needs, as
 *                    one immutable snapshot
 * @ref: held by the MR while it is the MR's map, and by each request using
 *       it; a request sees one map from start to end, never a mix
 * @rcu: the map's memory outlives lookups that found it under RCU
 * @type: what the addresses are
 * @pd: the PD the key is valid in
 * @access: IB_ACCESS_* granted
 * @iova: the first byte's address as seen by the MR's users
 * @length: bytes
 * @pin: SROCE_MAP_USER: the pages
 *
 * A map never changes: ibv_rereg_mr publishes a new one (sharing the pin
 * when the translation stays) and drops the MR's reference on the old one.
 */
struct sroce_map {
	struct kref ref;
	struct rcu_head rcu;
	enum sroce_map_type type;
	struct ib_pd *pd;
	int access;
	u64 iova;
	u64 length;
	struct sroce_pin *pin;
};

enum sroce_mem_state {
	SROCE_MEM_VALID,
	SROCE_MEM_FREE,
};

/**
 * struct sroce_mr - a memory region
 * @ibmr: ib_core's MR (lkey, rkey, pd, iova, length)
 * @sdev: the device whose memory table holds @ibmr.lkey
 * @state: VALID while registered
 * @lock: serialises rereg and dereg, which replace @map
 * @map: the current translation (RCU-published, replaced as a whole)
 * @rcu: frees the MR after lookups under RCU are done with it
 */
struct sroce_mr {
	struct ib_mr ibmr;
	struct sroce_dev *sdev;
	enum sroce_mem_state state;
	struct mutex lock; /* see above */
	struct sroce_map __rcu *map;
	struct rcu_head rcu;
};

struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata);
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct sroce_map *sroce_mem_get(struct sroce_dev *sdev, struct ib_pd *pd,
				u32 key, u64 va, u64 len, int access);
void sroce_map_put(struct sroce_map *map);
void sroce_map_copy(struct sroce_map *map, u64 va, void *buf, u64 len,
		    bool to_mem);
u64 sroce_map_atomic(struct sroce_map *map, u64 va, u64 compare_add,
		     u64 swap, bool cmp_swap);
void sroce_map_atomic_write(struct sroce_map *map, u64 va, u64 val);

#endif /* SROCE_MR_H */
