// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: memory regions.
 *
 * An MR owns one entry of the device's memory table (sdev->mem_xa), whose
 * index is the upper 24 bits of its key; the lower 8 bits are random per
 * registration. Indices are allocated cyclically, so a key's index is not
 * handed out again right after deregistration, and a stale key from a
 * previous owner finds either nothing or an object whose tag differs.
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "sroce.h"

static struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

static void sroce_mr_map_release(struct kref *ref)
{
	struct sroce_mr_map *map = container_of(ref, struct sroce_mr_map, ref);

	ib_umem_release(map->umem);
	kvfree(map->pages);
	kfree(map);
}

static void sroce_mr_map_put(struct sroce_mr_map *map)
{
	if (map)
		kref_put(&map->ref, sroce_mr_map_release);
}

/* Pin [start, start + length) and describe it as seen at @iova. */
static struct sroce_mr_map *sroce_mr_map_pin(struct ib_device *ibdev,
					     u64 start, u64 length, u64 iova,
					     int access)
{
	struct sroce_mr_map *map;
	struct sg_page_iter it;
	unsigned long i = 0;
	int err;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	kref_init(&map->ref);

	map->umem = ib_umem_get(ibdev, start, length, access);
	if (IS_ERR(map->umem)) {
		err = PTR_ERR(map->umem);
		kfree(map);
		return ERR_PTR(err);
	}
	map->iova = iova;
	map->length = length;
	map->offset = offset_in_page(start);
	map->npages = ib_umem_num_pages(map->umem);
	map->pages = kvmalloc_array(map->npages, sizeof(*map->pages),
				    GFP_KERNEL);
	if (!map->pages) {
		ib_umem_release(map->umem);
		kfree(map);
		return ERR_PTR(-ENOMEM);
	}
	for_each_sgtable_page(&map->umem->sgt_append.sgt, &it, 0) {
		if (WARN_ON_ONCE(i >= map->npages))
			break;
		map->pages[i++] = sg_page_iter_page(&it);
	}
	return map;
}

static void sroce_mr_release(struct kref *ref)
{
	struct sroce_mr *mr = container_of(ref, struct sroce_mr, ref);

	sroce_mr_map_put(rcu_dereference_protected(mr->map, true));
	kfree_rcu(mr, rcu);
}

/* Check the registration request; ib_core has checked the access bits. */
static int sroce_mr_check(u64 start, u64 length, u64 iova, int access)
{
	u64 end;

	if (!length || length > SROCE_MAX_MR_SIZE)
		return -EINVAL;
	if (check_add_overflow(start, length, &end) ||
	    check_add_overflow(iova, length, &end))
		return -EINVAL;
	/* Windows and on-demand paging come later. */
	if (access & (IB_ACCESS_MW_BIND | IB_ACCESS_ON_DEMAND))
		return -EOPNOTSUPP;
	return 0;
}

struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr_map *map;
	struct sroce_mr *mr;
	u32 index;
	int err;

	err = sroce_mr_check(start, length, iova, access);
	if (err)
		return ERR_PTR(err);
	if (atomic_inc_return(&sdev->num_mr) > SROCE_MAX_MR) {
		err = -ENOMEM;
		goto err_count;
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		err = -ENOMEM;
		goto err_count;
	}
	map = sroce_mr_map_pin(ibpd->device, start, length, iova, access);
	if (IS_ERR(map)) {
		err = PTR_ERR(map);
		goto err_free;
	}

	kref_init(&mr->ref);
	mr->sdev = sdev;
	mr->state = SROCE_MEM_VALID;
	mr->access = access;
	RCU_INIT_POINTER(mr->map, map);
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;

	err = xa_alloc_cyclic(&sdev->mem_xa, &index, mr,
			      XA_LIMIT(1, SROCE_KEY_INDEX_MAX),
			      &sdev->mem_next, GFP_KERNEL);
	if (err < 0)
		goto err_map;
	mr->ibmr.lkey = index << SROCE_KEY_TAG_BITS | get_random_u8();
	mr->ibmr.rkey = mr->ibmr.lkey;
	return &mr->ibmr;

err_map:
	sroce_mr_map_put(map);
err_free:
	kfree(mr);
err_count:
	atomic_dec(&sdev->num_mr);
	return ERR_PTR(err);
}

int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct sroce_dev *sdev = mr->sdev;

	xa_erase(&sdev->mem_xa, sroce_key_index(ibmr->lkey));
	WRITE_ONCE(mr->state, SROCE_MEM_FREE);
	kref_put(&mr->ref, sroce_mr_release);
	atomic_dec(&sdev->num_mr);
	return 0;
}
