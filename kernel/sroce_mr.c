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
#include <linux/highmem.h>
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

/* A new MR object, counted against max_mr; not yet in the memory table. */
static struct sroce_mr *sroce_mr_alloc(struct sroce_dev *sdev,
				       enum sroce_mr_type type, int access)
{
	struct sroce_mr *mr;

	if (atomic_inc_return(&sdev->num_mr) > SROCE_MAX_MR) {
		atomic_dec(&sdev->num_mr);
		return ERR_PTR(-ENOMEM);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		atomic_dec(&sdev->num_mr);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&mr->ref);
	mr->sdev = sdev;
	mr->type = type;
	mr->state = SROCE_MEM_VALID;
	mr->access = access;
	return mr;
}

/* Undo sroce_mr_alloc() for an MR that never got a key. */
static void sroce_mr_free_unkeyed(struct sroce_mr *mr)
{
	atomic_dec(&mr->sdev->num_mr);
	sroce_mr_put(mr);
}

/* Give @mr a key: a fresh table index and a random tag. */
static int sroce_mr_add_key(struct sroce_mr *mr)
{
	struct sroce_dev *sdev = mr->sdev;
	u32 index;
	int err;

	err = xa_alloc_cyclic(&sdev->mem_xa, &index, mr,
			      XA_LIMIT(1, SROCE_KEY_INDEX_MAX),
			      &sdev->mem_next, GFP_KERNEL);
	if (err < 0)
		return err;
	mr->ibmr.lkey = index << SROCE_KEY_TAG_BITS | get_random_u8();
	mr->ibmr.rkey = mr->ibmr.lkey;
	return 0;
}

struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr_map *map;
	struct sroce_mr *mr;
	int err;

	err = sroce_mr_check(start, length, iova, access);
	if (err)
		return ERR_PTR(err);
	mr = sroce_mr_alloc(sdev, SROCE_MR_USER, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	map = sroce_mr_map_pin(ibpd->device, start, length, iova, access);
	if (IS_ERR(map)) {
		err = PTR_ERR(map);
		goto err_free;
	}
	RCU_INIT_POINTER(mr->map, map);
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;

	err = sroce_mr_add_key(mr);
	if (err)
		goto err_free;
	return &mr->ibmr;

err_free:
	sroce_mr_free_unkeyed(mr);
	return ERR_PTR(err);
}

/**
 * sroce_get_dma_mr - the DMA MR of a kernel PD
 * @ibpd: the PD (ib_alloc_pd() asks for its local_dma_lkey)
 * @access: IB_ACCESS_* to grant
 *
 * The device uses virtual DMA (ib_uses_virt_dma()): a kernel consumer's DMA
 * addresses are kernel virtual addresses, and this MR covers all of them.
 * Only kernel PDs have one; a remote key for it exists only when the
 * consumer asked for IB_PD_UNSAFE_GLOBAL_RKEY.
 */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct sroce_mr *mr;
	int err;

	mr = sroce_mr_alloc(to_sdev(ibpd->device), SROCE_MR_DMA, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	/* Lookups see the PD from the moment the key exists. */
	mr->ibmr.pd = ibpd;
	err = sroce_mr_add_key(mr);
	if (err) {
		sroce_mr_free_unkeyed(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct sroce_dev *sdev = mr->sdev;

	xa_erase(&sdev->mem_xa, sroce_key_index(ibmr->lkey));
	WRITE_ONCE(mr->state, SROCE_MEM_FREE);
	sroce_mr_put(mr);
	atomic_dec(&sdev->num_mr);
	return 0;
}

/**
 * sroce_mr_get - resolve a key for an access; every lkey and rkey goes here
 * @sdev: the device
 * @pd: the PD the access is made in
 * @key: the lkey or rkey
 * @va: the first byte accessed
 * @len: bytes accessed (0 checks only the key, PD and access)
 * @access: IB_ACCESS_* bits that must *all* be granted (0: local read)
 *
 * Return: the MR with a reference held (sroce_mr_put() it), or
 * ERR_PTR(-ENOENT) for a key that names no valid MR (wrong tag, freed),
 * -EPERM for another PD, -EACCES for a missing access bit, -ERANGE for bytes
 * outside the MR (computed without overflow).
 */
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, struct ib_pd *pd,
			      u32 key, u64 va, u64 len, int access)
{
	struct sroce_mr *mr;
	u64 end, mr_end;
	int err;

	rcu_read_lock();
	mr = xa_load(&sdev->mem_xa, sroce_key_index(key));
	if (!mr || mr->ibmr.lkey != key || !kref_get_unless_zero(&mr->ref)) {
		rcu_read_unlock();
		return ERR_PTR(-ENOENT);
	}
	rcu_read_unlock();

	err = -ENOENT;
	if (READ_ONCE(mr->state) != SROCE_MEM_VALID)
		goto err_put;
	err = -EPERM;
	if (mr->ibmr.pd != pd)
		goto err_put;
	err = -EACCES;
	if ((mr->access & access) != access)
		goto err_put;
	err = -ERANGE;
	if (check_add_overflow(va, len, &end))
		goto err_put;
	if (mr->type == SROCE_MR_DMA)
		return mr;
	if (check_add_overflow(mr->ibmr.iova, mr->ibmr.length, &mr_end) ||
	    (len && (va < mr->ibmr.iova || end > mr_end)))
		goto err_put;
	return mr;

err_put:
	sroce_mr_put(mr);
	return ERR_PTR(err);
}

void sroce_mr_put(struct sroce_mr *mr)
{
	kref_put(&mr->ref, sroce_mr_release);
}

/**
 * sroce_mr_copy - copy between a buffer and an MR's memory
 * @mr: an MR from sroce_mr_get() whose range covers [va, va + len)
 * @va: the MR address
 * @buf: kernel buffer
 * @len: bytes
 * @to_mr: copy @buf into the MR (else the MR into @buf)
 */
void sroce_mr_copy(struct sroce_mr *mr, u64 va, void *buf, u64 len,
		   bool to_mr)
{
	struct sroce_mr_map *map;
	u64 off;

	if (mr->type == SROCE_MR_DMA) {
		void *addr = (void *)(uintptr_t)va;

		if (to_mr)
			memcpy(addr, buf, len);
		else
			memcpy(buf, addr, len);
		return;
	}

	rcu_read_lock();
	map = rcu_dereference(mr->map);
	kref_get(&map->ref);
	rcu_read_unlock();

	off = va - map->iova + map->offset;
	while (len) {
		struct page *page = map->pages[off >> PAGE_SHIFT];
		unsigned int in_page = offset_in_page(off);
		unsigned int n = min_t(u64, len, PAGE_SIZE - in_page);
		void *addr = kmap_local_page(page);

		if (to_mr)
			memcpy(addr + in_page, buf, n);
		else
			memcpy(buf, addr + in_page, n);
		kunmap_local(addr);
		buf += n;
		off += n;
		len -= n;
	}
	sroce_mr_map_put(map);
}

/* Serialises every atomic (and atomic write) of the machine's sroce devices. */
static DEFINE_SPINLOCK(sroce_atomic_lock);

/**
 * sroce_mr_atomic - an 8-byte atomic on an MR's memory
 * @mr: an MR from sroce_mr_get() covering the 8 aligned bytes at @va
 * @va: the address, 8-byte aligned
 * @compare_add: the value to compare with (CMP_SWAP) or to add
 * @swap: the value to store if equal (CMP_SWAP)
 * @cmp_swap: compare and swap (else fetch and add)
 *
 * Atomic with respect to every other sroce atomic on the machine.
 * Return: the original value.
 */
u64 sroce_mr_atomic(struct sroce_mr *mr, u64 va, u64 compare_add, u64 swap,
		    bool cmp_swap)
{
	u64 orig, val;

	spin_lock_bh(&sroce_atomic_lock);
	sroce_mr_copy(mr, va, &orig, sizeof(orig), false);
	if (cmp_swap)
		val = orig == compare_add ? swap : orig;
	else
		val = orig + compare_add;
	sroce_mr_copy(mr, va, &val, sizeof(val), true);
	spin_unlock_bh(&sroce_atomic_lock);
	return orig;
}

/**
 * sroce_mr_atomic_write - an RDMA Atomic Write's 8-byte store
 * @mr: an MR from sroce_mr_get() covering the 8 aligned bytes at @va
 * @va: the address, 8-byte aligned
 * @val: the bytes to store, in memory order
 *
 * No other sroce atomic sees the location half written.
 */
void sroce_mr_atomic_write(struct sroce_mr *mr, u64 va, u64 val)
{
	spin_lock_bh(&sroce_atomic_lock);
	sroce_mr_copy(mr, va, &val, sizeof(val), true);
	spin_unlock_bh(&sroce_atomic_lock);
}
