// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: memory regions.
 *
 * An MR owns one entry of the device's memory table (sdev->mem_xa), found
 * by the upper 24 bits of its key, drawn at random (sroce_mem_add_key());
 * the lower 8 bits are random per registration (a fast-registration MR
 * takes the consumer's at each IB_WR_REG_MR). A stale key from a previous
 * owner finds nothing for at least 2^23 - 2^21 registrations.
 *
 * What a key grants (PD, access, range) and the translation to pages are
 * one immutable struct sroce_map, published by RCU. Re-registration builds
 * a new map and swaps it in: a lookup sees the whole old map or the whole
 * new one, and the old pages stay pinned until the last request using them
 * is done.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/rdma_netlink.h>

#include "sroce_mem.h"
#include "sroce_mem_api.h"
#include "sroce.h"

static struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

/**
 * sroce_pin_alloc - a new pin, with one reference, charged to a user
 * @ibdev: the device
 * @ku: the user its kernel memory is charged to (the pin takes a
 *      reference), or NULL for a kernel consumer's pin
 *
 * Every pin of user memory starts here (pinned, ODP, a dma-buf's), and so
 * every registration and re-registration that makes one: refused while
 * the releases of the user's pins that wait in its queue or run hold its
 * bound
 * (sroce_kmem_release_room()), since each new pin may join them. The
 * caller fills the pin in, and frees it on failure with sroce_kmem_end()
 * and kfree(). Process context.
 * Return: the pin, or ERR_PTR(-ENOMEM).
 */
struct sroce_pin *sroce_pin_alloc(struct ib_device *ibdev,
				  struct sroce_kmem_user *ku)
{
	struct sroce_pin *pin;
	int err;

	err = sroce_kmem_release_room(to_sdev(ibdev), ku);
	if (err)
		return ERR_PTR(err);
	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		return ERR_PTR(-ENOMEM);
	kref_init(&pin->ref);
	pin->ibdev = ibdev;
	sroce_kmem_start(&pin->kmem, ku);
	return pin;
}

/**
 * sroce_pin_free - release a pin's pages and free it
 * @pin: the pin, whose last reference is gone
 *
 * Unpins the pages, releases an ODP range's umems (removing their MMU
 * notifiers, which waits for an invalidation under way) or lets go of a
 * dma-buf, and gives back its charge. Process context.
 */
void sroce_pin_free(struct sroce_pin *pin)
{
	struct sroce_dev *sdev = to_sdev(pin->ibdev);
	struct mm_struct *grabbed = NULL;

	if (pin->chunked) {
		struct ib_umem_odp *child;
		unsigned long idx;

		xa_for_each(&pin->children, idx, child)
			ib_umem_odp_release(child);
		xa_destroy(&pin->children);
		grabbed = pin->umem->owning_mm;
	}
	if (pin->dmabuf)
		sroce_dmabuf_release(pin);
	else if (pin->odp)
		ib_umem_odp_release(pin->odp);
	else
		ib_umem_release(pin->umem);
	if (grabbed)
		mmdrop(grabbed);
	kvfree(pin->pages);
	sroce_kmem_end(sdev, &pin->kmem);
	kfree(pin);
}

static void sroce_pin_release(struct kref *ref)
{
	sroce_pin_free(container_of(ref, struct sroce_pin, ref));
}

/**
 * sroce_pin_put - drop a reference on a pin
 * @pin: the pin, or NULL
 *
 * The last reference releases the pages (unpins them, releases an ODP
 * range's umems, or lets go of a dma-buf). Process context.
 */
void sroce_pin_put(struct sroce_pin *pin)
{
	if (pin)
		kref_put(&pin->ref, sroce_pin_release);
}

/*
 * Release a pin whose last reference went where nothing may wait, on its
 * user's work item; the work item gives the pin's device, held, back
 * after it (sroce_kmem_release_queue()).
 */
static void sroce_pin_release_work(struct sroce_kmem_release *rel)
{
	sroce_pin_free(container_of(rel, struct sroce_pin, release));
}

/*
 * The last reference of a pin went: queue its release on its user's work
 * item, holding the device (whose unregistration waits for it) until it
 * ran, or release it here if the device is being unregistered (then no QP
 * runs to be held up). What it holds until then counts in its user's
 * backlog: the whole folios its pinned pages are in, or the pages of its
 * dma-buf (all of the buffer's, which the pin holds); an ODP range pins
 * none, and counts one page for its own memory, as every release counts at
 * least one (sroce_kmem_release_queue()).
 */
static void sroce_pin_release_async(struct kref *ref)
{
	struct sroce_pin *pin = container_of(ref, struct sroce_pin, ref);

	if (!ib_device_try_get(pin->ibdev)) {
		sroce_pin_free(pin);
		return;
	}
	pin->release.fn = sroce_pin_release_work;
	/*
	 * A pinned range: the whole folios it holds, and never less than
	 * its pages, whose kernel memory (ib_core's scatterlist, the page
	 * array) grows with them even when they are all one page (the
	 * zero page of a read-only pin, one page mapped again and again).
	 */
	pin->release.pages = pin->odp ? 0 :
			     pin->dmabuf ? pin->npages :
			     max(pin->held, pin->npages);
	sroce_kmem_release_queue(to_sdev(pin->ibdev), pin->kmem.ku,
				 &pin->release);
}

/**
 * sroce_pin_put_async - drop a reference on a pin where nothing may wait
 *                       for its release
 * @pin: the pin, or NULL
 *
 * A pin's release may wait for as long as its owner likes: an ODP range's
 * removes its umems' MMU notifiers, which waits for an invalidation of the
 * owner's mm under way (the owner's madvise and munmap calls that
 * overlap); a pinned range's unpins its pages, which on 6.1 locks a
 * writable pin's clean page (set_page_dirty_lock()), and the owner can
 * keep that page locked (its FUSE file's write fault waiting for
 * writeback). The last reference of an MR whose deregistration was killed
 * while an access held its map goes wherever that access runs, in another
 * user's QP's engine perhaps (an XRC target's, struct sroce_map.orphaned),
 * or in an ODP job on a queue that bounds its stalled jobs: every such
 * pin, whatever its kind and however sroce was built, is released by its
 * user's own work item, after that user's earlier releases and beside
 * other users' (sroce_kmem_release_queue()). Process context.
 */
void sroce_pin_put_async(struct sroce_pin *pin)
{
	if (pin)
		kref_put(&pin->ref, sroce_pin_release_async);
}

/*
 * Fill a pinned range's page array from its umem, and count in @pin->held
 * the memory the pin holds: all of each folio a pinned page is in, since
 * no page of a folio is freed, nor the folio split, while one of its pages
 * is pinned. A 4 KiB MR over a transparent huge page holds its 2 MiB. A
 * folio's pages come one after the other, so each folio counts once; one
 * seen again after another counts again (more than is held, never less).
 * What a pinned range holds does not change while it is pinned.
 */
static void sroce_pin_fill(struct sroce_pin *pin)
{
	struct folio *last = NULL;
	struct sg_page_iter it;
	unsigned long i = 0;

	for_each_sgtable_page(&pin->umem->sgt_append.sgt, &it, 0) {
		struct page *page = sg_page_iter_page(&it);

		if (WARN_ON_ONCE(i >= pin->npages))
			break;
		pin->pages[i++] = page;
		if (page_folio(page) != last) {
			last = page_folio(page);
			pin->held += folio_nr_pages(last);
		}
	}
}

/*
 * Pin [start, start + length), writable if @access needs it: pages pinned
 * for reading only (perhaps the shared zero page, or pages still to be
 * copied on write) are never written through the MR. With
 * IB_ACCESS_ON_DEMAND nothing is pinned (sroce_odp_get()). The kernel
 * memory the pin needs is charged to @ku (sroce_kmem.c): its array of
 * pages (the pages themselves count against the process's
 * RLIMIT_MEMLOCK, ib_umem_get()).
 */
static struct sroce_pin *sroce_pin_get(struct ib_device *ibdev, u64 start,
				       u64 length, int access,
				       struct sroce_kmem_user *ku)
{
	struct sroce_pin *pin;
	int err;

	if (access & IB_ACCESS_ON_DEMAND)
		return sroce_odp_get(ibdev, start, length, access, ku);
	pin = sroce_pin_alloc(ibdev, ku);
	if (IS_ERR(pin))
		return pin;

	pin->umem = ib_umem_get(ibdev, start, length, access);
	if (IS_ERR(pin->umem)) {
		err = PTR_ERR(pin->umem);
		goto err_pin;
	}
	pin->offset = offset_in_page(start);
	pin->npages = ib_umem_num_pages(pin->umem);
	err = sroce_kmem_add(to_sdev(ibdev), &pin->kmem,
			     array_size(pin->npages, sizeof(*pin->pages)));
	if (!err) {
		/*
		 * A user's size: past INT_MAX bytes (a 1 TiB MR) kvmalloc()
		 * WARNs unless told not to; it is an ENOMEM like any other.
		 */
		pin->pages = kvmalloc_array(pin->npages, sizeof(*pin->pages),
					    GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!pin->pages)
			err = -ENOMEM;
	}
	if (err) {
		ib_umem_release(pin->umem);
		goto err_pin;
	}
	sroce_pin_fill(pin);
	return pin;

err_pin:
	sroce_kmem_end(to_sdev(ibdev), &pin->kmem);
	kfree(pin);
	return ERR_PTR(err);
}

/* The MR's current map; its mutex held. */
static struct sroce_map *sroce_mr_map(struct sroce_mr *mr)
{
	return rcu_dereference_protected(mr->mem.map, lockdep_is_held(&mr->lock));
}

/* Make @map the MR's translation and drop the MR's reference on the old. */
static void sroce_mr_publish(struct sroce_mr *mr, struct sroce_map *map)
{
	struct sroce_map *old = sroce_mr_map(mr);

	if (map)
		WRITE_ONCE(map->published, true);
	rcu_assign_pointer(mr->mem.map, map);
	if (old) {
		/* Cleared before the reference goes: sroce_map_in_use(). */
		WRITE_ONCE(old->published, false);
		sroce_map_put(old);
	}
}

/* Check a registration's range; ib_core has checked the access bits. */
static int sroce_mr_check(u64 start, u64 length, u64 iova, int access)
{
	u64 end;

	/* Implicit ODP: the whole address space, seen at its own addresses. */
	if (sroce_odp_is_implicit(start, length, access))
		return iova ? -EINVAL : 0;
	if (!length || length > SROCE_MAX_MR_SIZE)
		return -EINVAL;
	/* Inclusive ends: an iova range may end at 2^64 - 1. */
	if (check_add_overflow(start, length - 1, &end) ||
	    check_add_overflow(iova, length - 1, &end))
		return -EINVAL;
	return 0;
}

/* A new MR object, counted against max_mr; not yet in the memory table. */
static struct sroce_mr *sroce_mr_alloc(struct sroce_dev *sdev)
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
	mr->sdev = sdev;
	mr->mem.kind = SROCE_MEM_MR;
	mr->mem.state = SROCE_MEM_VALID;
	mutex_init(&mr->lock);
	return mr;
}

/* Free an MR that never got a key (or whose key is gone). */
static void sroce_mr_free(struct sroce_mr *mr)
{
	mutex_lock(&mr->lock);
	sroce_mr_publish(mr, NULL);
	mutex_unlock(&mr->lock);
	mutex_destroy(&mr->lock);
	atomic_dec(&mr->sdev->num_mr);
	kfree(mr->fast_pages);
	kfree_rcu(mr, rcu);
}

/* Give @mr a key (sroce_mem_add_key()), its lkey and rkey alike. */
static int sroce_mr_add_key(struct sroce_mr *mr)
{
	int err;

	err = sroce_mem_add_key(mr->sdev, &mr->mem);
	if (err)
		return err;
	mr->ibmr.lkey = mr->mem.key;
	mr->ibmr.rkey = mr->mem.key;
	return 0;
}

/* A new MR whose first map is @map (consumed), with a key. */
static struct ib_mr *sroce_mr_create(struct sroce_dev *sdev,
				     struct sroce_map *map)
{
	struct sroce_mr *mr = sroce_mr_alloc(sdev);
	int err;

	if (IS_ERR(mr)) {
		sroce_map_put(map);
		return ERR_CAST(mr);
	}
	/* Lookups see the PD from the moment the key exists. */
	mr->ibmr.pd = map->pd;
	mr->ibmr.iova = map->iova;
	mr->ibmr.length = map->length;
	err = sroce_mr_add_key(mr);
	if (err) {
		sroce_map_put(map);
		sroce_mr_free(mr);
		return ERR_PTR(err);
	}
	/* Until now lookups by the key found no map. */
	map->key = mr->mem.key;
	mutex_lock(&mr->lock);
	sroce_mr_publish(mr, map);
	mutex_unlock(&mr->lock);
	return &mr->ibmr;
}

/*
 * What REG_MR's driver data asks (struct sroce_reg_mr_cmd): its flags, 0
 * without any. A longer command than ours is refused unless what we do not
 * know of it is zero.
 */
static int sroce_reg_mr_flags(struct ib_udata *udata, u32 *flags)
{
	struct sroce_reg_mr_cmd cmd;
	int err;

	*flags = 0;
	if (!udata || !udata->inlen)
		return 0;
	if (udata->inlen < sizeof(cmd))
		return -EINVAL;
	if (udata->inlen > sizeof(cmd) &&
	    !ib_is_udata_cleared(udata, sizeof(cmd),
				 udata->inlen - sizeof(cmd)))
		return -EOPNOTSUPP;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if ((cmd.flags & ~SROCE_REG_MR_NULL) || cmd.reserved)
		return -EOPNOTSUPP;
	*flags = cmd.flags;
	return 0;
}

/*
 * A null MR (ibv_alloc_null_mr(3)): an lkey whose writes are discarded
 * and whose reads give zeroes, over every address; no rkey (the key
 * refuses remote access: sroce_mem_get()). The command names no memory:
 * start and iova 0, the largest length, local write or nothing asked.
 */
static struct ib_mr *sroce_reg_null_mr(struct ib_pd *ibpd, u64 start,
				       u64 length, u64 iova, int access)
{
	struct sroce_map *map;
	struct ib_mr *ibmr;

	if (start || iova || length != U64_MAX ||
	    (access & ~IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EINVAL);
	map = sroce_map_alloc(SROCE_MAP_NULL, ibpd, IB_ACCESS_LOCAL_WRITE, 0,
			      U64_MAX, NULL, 0);
	if (!map)
		return ERR_PTR(-ENOMEM);
	ibmr = sroce_mr_create(to_sdev(ibpd->device), map);
	if (!IS_ERR(ibmr))
		ibmr->rkey = 0;
	return ibmr;
}

/**
 * sroce_reg_user_mr - register user memory, or make a null MR
 * @ibpd: the PD
 * @start: the memory's user address (implicit ODP: 0)
 * @length: its bytes (implicit ODP: U64_MAX)
 * @iova: where its first byte is seen
 * @access: IB_ACCESS_*
 * @udata: REG_MR's driver data: SROCE_REG_MR_NULL asks for a null MR;
 *         NULL for a kernel consumer (ib_reg_user_mr())
 *
 * ODP is for users' MRs only. A kernel consumer's QPs run on the kernel
 * QPs' WQ_MEM_RECLAIM queue (sroce_task.c), and an ODP MR follows its
 * range's mappings, whatever they become after the registration: a page
 * of its process's FUSE file would have such a QP's run wait in that
 * file's server's fault, for as long as the process likes. So
 * IB_ACCESS_ON_DEMAND without @udata is refused, as by a device without
 * ODP (RDS asks it, for a socket user's buffer that cannot be pinned).
 *
 * Return: the MR, or an ERR_PTR: -EINVAL for a bad range or null MR
 * command, -EOPNOTSUPP for driver data we do not know or a kernel
 * consumer's ODP, or the pinning's or ODP's error.
 */
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct sroce_pin *pin;
	struct sroce_map *map;
	u32 flags;
	int err;

	err = sroce_reg_mr_flags(udata, &flags);
	if (err)
		return ERR_PTR(err);
	if (flags & SROCE_REG_MR_NULL)
		return sroce_reg_null_mr(ibpd, start, length, iova, access);
	if ((access & IB_ACCESS_ON_DEMAND) && !udata)
		return ERR_PTR(-EOPNOTSUPP);
	err = sroce_mr_check(start, length, iova, access);
	if (err)
		return ERR_PTR(err);
	pin = sroce_pin_get(ibpd->device, start, length, access,
			    sroce_udata_kmem_user(udata));
	if (IS_ERR(pin))
		return ERR_CAST(pin);
	map = sroce_map_alloc(SROCE_MAP_USER, ibpd, access, iova, length, pin,
			      0);
	if (!map) {
		sroce_pin_put(pin);
		return ERR_PTR(-ENOMEM);
	}
	return sroce_mr_create(to_sdev(ibpd->device), map);
}

/**
 * sroce_reg_user_mr_dmabuf - register a dma-buf's memory
 *                            (ibv_reg_dmabuf_mr())
 * @ibpd: the PD
 * @offset: the range's first byte in the buffer
 * @length: its bytes
 * @iova: where its first byte is seen (at @offset's offset in a page:
 *        ib_core checks it)
 * @fd: the dma-buf's file descriptor, in the caller's process
 * @access: IB_ACCESS_* (ib_core lets local write, remote read, write and
 *          atomic, and relaxed ordering through)
 * @udata: the caller's
 *
 * The MR's map translates through a dma-buf pin (sroce_dmabuf.c): the MR
 * holds the buffer and its kernel mapping until it is deregistered, so
 * its owner may close the fd (and every other reference it has) at once.
 * Return: the MR; or ERR_PTR(-EBADF) for an @fd that is not open, -EINVAL
 * for one that is not a dma-buf, a range of 0 bytes, past the buffer's end
 * or wrapping the iova space, or access a dma-buf MR cannot grant,
 * -EACCES for write access to a buffer opened read-only, -EOPNOTSUPP for
 * an exporter sroce does not map (any but udmabuf and the system heap,
 * sroce_dmabuf.c) or that gives the kernel no mapping, and a udmabuf over
 * huge pages, -ENOMEM.
 */
struct ib_mr *sroce_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access, struct ib_udata *udata)
{
	struct sroce_pin *pin;
	struct sroce_map *map;
	int err;

	/* Never implicit ODP: sroce_dmabuf_get() refuses ON_DEMAND. */
	err = sroce_mr_check(offset, length, iova,
			     access & ~IB_ACCESS_ON_DEMAND);
	if (err)
		return ERR_PTR(err);
	pin = sroce_dmabuf_get(ibpd->device, offset, length, fd, access,
			       sroce_udata_kmem_user(udata));
	if (IS_ERR(pin))
		return ERR_CAST(pin);
	map = sroce_map_alloc(SROCE_MAP_USER, ibpd, access, iova, length, pin,
			      0);
	if (!map) {
		sroce_pin_put(pin);
		return ERR_PTR(-ENOMEM);
	}
	return sroce_mr_create(to_sdev(ibpd->device), map);
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
 *
 * Return: the MR; or ERR_PTR(-ENOMEM) at max_mr or without memory, or
 * ERR_PTR(-EBUSY) when every key index is in use.
 */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct sroce_map *map;

	map = sroce_map_alloc(SROCE_MAP_DMA, ibpd, access, 0, U64_MAX, NULL, 0);
	if (!map)
		return ERR_PTR(-ENOMEM);
	return sroce_mr_create(to_sdev(ibpd->device), map);
}

/**
 * sroce_alloc_mr - a fast-registration MR for a kernel consumer
 * @ibpd: its PD
 * @type: IB_MR_TYPE_MEM_REG only
 * @max_num_sg: pages it may map
 *
 * It starts invalid: IB_WR_REG_MR (after ops.map_mr_sg) makes it valid
 * with the key the consumer chose (same index, its own tag byte);
 * IB_WR_LOCAL_INV or a remote SEND_WITH_INV make it invalid again.
 *
 * Return: the MR; or ERR_PTR(-EINVAL) for another @type, or @max_num_sg 0
 * or above SROCE_MAX_FAST_REG_PAGES; ERR_PTR(-ENOMEM) at max_mr or without
 * memory; ERR_PTR(-EBUSY) when every key index is in use.
 */
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EINVAL);
	if (!max_num_sg || max_num_sg > SROCE_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);
	mr = sroce_mr_alloc(sdev);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->mem.state = SROCE_MEM_INVALID;
	mr->fast_max = max_num_sg;
	mr->fast_pages = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	mr->ibmr.pd = ibpd;
	err = mr->fast_pages ? sroce_mr_add_key(mr) : -ENOMEM;
	if (err) {
		sroce_mr_free(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int sroce_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct sroce_mr *mr = to_smr(ibmr);

	if (mr->fast_npages == mr->fast_max)
		return -ENOMEM;
	mr->fast_pages[mr->fast_npages++] = addr;
	return 0;
}

/* ops.map_mr_sg: the page list the next IB_WR_REG_MR registers. */
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct sroce_mr *mr = to_smr(ibmr);
	int n;

	mr->fast_npages = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, sroce_set_page);
	mr->fast_offset = ibmr->iova & (ibmr->page_size - 1);
	return n;
}

/**
 * sroce_mr_fast_reg - execute an IB_WR_REG_MR
 * @sdev: the device
 * @pd: the PD of the QP that posted it
 * @ibmr: the MR, from ops.alloc_mr, in @pd and invalid
 * @key: its new key (the MR's index, any tag)
 * @access: IB_ACCESS_* to grant
 *
 * Registers the page list of the last ops.map_mr_sg as it stands now.
 * Return: 0 or -EINVAL.
 */
int sroce_mr_fast_reg(struct sroce_dev *sdev, struct ib_pd *pd,
		      struct ib_mr *ibmr, u32 key, int access)
{
	struct sroce_mr *mr = to_smr(ibmr);
	unsigned int shift;
	struct sroce_map *map;
	u64 span;
	int err = -EINVAL;

	if (ibmr->device != &sdev->ibdev || ibmr->type != IB_MR_TYPE_MEM_REG ||
	    ibmr->pd != pd || sroce_key_index(key) != sroce_key_index(mr->mem.key)) {
		sroce_dbg_dev(sdev,
			      "REG_MR refused: key %#x is not a fast-registration MR's of the PD\n",
			      key);
		return -EINVAL;
	}
	if (!is_power_of_2(ibmr->page_size) || ibmr->page_size < 512) {
		sroce_dbg_mr(sdev, key, "REG_MR refused: page size %u\n",
			     ibmr->page_size);
		return -EINVAL;
	}
	shift = ilog2(ibmr->page_size);

	mutex_lock(&mr->lock);
	if (READ_ONCE(mr->mem.state) != SROCE_MEM_INVALID) {
		sroce_dbg_mr(sdev, key, "REG_MR refused: the MR is valid\n");
		goto out;
	}
	/* The list must cover the registered range. */
	if (check_add_overflow((u64)mr->fast_offset, ibmr->length, &span) ||
	    span > ((u64)mr->fast_npages << shift)) {
		sroce_dbg_mr(sdev, key, "REG_MR refused: %u pages do not cover %#llx+%#llx\n",
			     mr->fast_npages, (u64)mr->fast_offset,
			     ibmr->length);
		goto out;
	}
	err = -ENOMEM;
	map = sroce_map_alloc(SROCE_MAP_FAST, pd, access, ibmr->iova,
			      ibmr->length, NULL, mr->fast_npages);
	if (!map)
		goto out;
	map->page_shift = shift;
	map->first_offset = mr->fast_offset;
	map->npages = mr->fast_npages;
	memcpy(map->pages, mr->fast_pages, mr->fast_npages * sizeof(u64));
	map->key = key;
	sroce_mr_publish(mr, map);
	WRITE_ONCE(mr->mem.key, key);
	/* release: the map and key are seen before the valid state */
	smp_store_release(&mr->mem.state, SROCE_MEM_VALID);
	err = 0;
out:
	mutex_unlock(&mr->lock);
	return err;
}

/**
 * sroce_mr_invalidate - IB_WR_LOCAL_INV, or a SEND_WITH_INV's IETH
 * @sdev: the device
 * @pd: the PD of the QP
 * @qpn: the QP (that posted the LOCAL_INV or received the SEND_WITH_INV)
 * @key: the key to invalidate: a valid fast-registration MR's, or a type 2
 *       window's bound through @qpn, in @pd
 *
 * Later requests do not find the MR, and it returns once those that had
 * found it are done.
 * Return: 0, or -EINVAL if @key names no such MR.
 */
int sroce_mr_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
			u32 key)
{
	struct sroce_map *map = NULL;
	struct sroce_mem *mem;
	struct sroce_mr *mr;
	int err = -EINVAL;

	rcu_read_lock();
	mem = sroce_mem_find(sdev, key);
	if (mem && mem->kind == SROCE_MEM_MW) {
		rcu_read_unlock();
		return sroce_mw_invalidate(sdev, pd, qpn, key);
	}
	mr = mem && mem->kind == SROCE_MEM_MR ?
		     container_of(mem, struct sroce_mr, mem) : NULL;
	if (mr && READ_ONCE(mr->mem.key) == key &&
	    mr->ibmr.type == IB_MR_TYPE_MEM_REG && mr->ibmr.pd == pd &&
	    cmpxchg(&mr->mem.state, SROCE_MEM_VALID, SROCE_MEM_INVALID) ==
		    SROCE_MEM_VALID) {
		err = 0;
		map = rcu_dereference(mr->mem.map);
		/*
		 * Only the registration this key made: a REG_MR may have
		 * followed at once (the consumer's race, not a peer's).
		 */
		if (map && (map->key != key || !sroce_map_hold_live(map)))
			map = NULL;
	}
	rcu_read_unlock();
	if (err)
		sroce_dbg_mr(sdev, key, "invalidation of key %#x through qp#%u refused\n",
			     key, qpn);
	/*
	 * The consumer frees the pages once the invalidation completes: no
	 * access may still be copying. A fast registration's accesses copy
	 * kernel memory and never wait, so the engine may wait for them.
	 * A dereg waiting on the same map at the same time is a waiter too:
	 * neither counts the other (sroce_map_hold_live()).
	 */
	if (map)
		sroce_map_retire_held(map);
	return err;
}

/*
 * The pages of an access-only change: the same pin, unless the new access
 * writes and the pages were pinned for reading only; then the same range is
 * pinned again for writing (which fails for memory the process cannot
 * write, e.g. mapped read-only). A dma-buf's pin stays, if the buffer
 * allows the access.
 */
static struct sroce_pin *sroce_pin_for_access(struct ib_device *ibdev,
					      struct sroce_pin *pin,
					      int access)
{
	if (pin->dmabuf) {
		int err = sroce_dmabuf_pin_access(pin, access);

		if (err)
			return ERR_PTR(err);
		kref_get(&pin->ref);
		return pin;
	}
	/* ODP faults each access in for what it needs. */
	if (pin->implicit && !(access & IB_ACCESS_ON_DEMAND))
		return ERR_PTR(-EINVAL);
	if (!!(access & IB_ACCESS_ON_DEMAND) != !!pin->odp ||
	    (!pin->odp && ib_access_writable(access) && !pin->umem->writable))
		return sroce_pin_get(ibdev, pin->umem->address,
				     pin->umem->length, access, pin->kmem.ku);
	kref_get(&pin->ref);
	return pin;
}

/**
 * sroce_rereg_user_mr - change an MR's translation, PD or access in place
 * @ibmr: the MR
 * @flags: IB_MR_REREG_TRANS, IB_MR_REREG_PD, IB_MR_REREG_ACCESS
 * @start: new user address (TRANS)
 * @length: new length (TRANS)
 * @iova: new iova (TRANS)
 * @access: new access (ACCESS)
 * @pd: new PD (PD)
 * @udata: unused
 *
 * Everything is built first (a new range is pinned before the old one is
 * released); on failure the MR is unchanged. The new map replaces the old
 * one at once, so keys never change: requests that found the old map
 * finish with it, later ones use the new, and this returns once the old
 * one's last access is done (as deregistration does). A dma-buf MR keeps
 * its buffer: its PD and access may change (within what a dma-buf MR may
 * grant), not its translation.
 *
 * Return: NULL (the MR was changed in place) or an ERR_PTR: -EBUSY while
 * windows are bound, -EINVAL for an MR that is not user memory (a null
 * MR), a bad range or access, -EOPNOTSUPP for a new translation of a
 * dma-buf MR, -EACCES for write access to a dma-buf opened read-only, or
 * the pinning's error.
 */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct sroce_map *old, *map;
	struct sroce_pin *pin;
	int err;

	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);

	mutex_lock(&mr->lock);
	old = sroce_mr_map(mr);
	err = -EBUSY;
	if (atomic_read(&mr->num_mw)) {
		sroce_dbg_mr(mr->sdev, mr->mem.key, "rereg refused: windows are bound\n");
		goto out;
	}
	err = -EINVAL;
	if (old->type != SROCE_MAP_USER)
		goto out;
	/* A dma-buf MR's translation is its buffer: no user range for it. */
	err = -EOPNOTSUPP;
	if (old->pin->dmabuf && (flags & IB_MR_REREG_TRANS))
		goto out;
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	if (!(flags & IB_MR_REREG_PD))
		pd = old->pd;
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->pin->dmabuf ? old->pin->dmabuf_offset :
					   old->pin->umem->address;
		length = old->length;
		iova = old->iova;
	}
	err = sroce_mr_check(start, length, iova, access);
	if (err)
		goto out;

	if (flags & IB_MR_REREG_TRANS)
		pin = sroce_pin_get(ibmr->device, start, length, access,
				    old->pin->kmem.ku);
	else
		pin = sroce_pin_for_access(ibmr->device, old->pin, access);
	if (IS_ERR(pin)) {
		err = PTR_ERR(pin);
		goto out;
	}
	map = sroce_map_alloc(SROCE_MAP_USER, pd, access, iova, length, pin, 0);
	if (!map) {
		sroce_pin_put(pin);
		err = -ENOMEM;
		goto out;
	}
	map->key = mr->mem.key;
	/* Held until no access uses it: see below. */
	sroce_map_hold_old(old);
	sroce_mr_publish(mr, map);
	mr->nrereg++;
	err = 0;
out:
	mutex_unlock(&mr->lock);
	if (err)
		return ERR_PTR(err);
	/*
	 * Nothing moves through the old translation once this returns: the
	 * caller may unmap the old memory, or count on the new access.
	 */
	sroce_map_retire_held(old);
	return NULL;
}

/*
 * May the one asking see how an ODP MR's owner uses its memory (which
 * pages are present, faulted, invalidated)? ib_core shows every MR to
 * everyone in the PID namespace and hides the keys from those without
 * CAP_NET_ADMIN; residency is hidden the same way, but from the owner's
 * own user, who could watch the process anyway.
 */
static bool sroce_res_may_see_residency(const struct ib_mr *ibmr)
{
	struct task_struct *task = ibmr->res.task;

	return capable(CAP_NET_ADMIN) ||
	       (task && uid_eq(task_euid(task), current_euid()));
}

/* What an MR's map is, as "rdma resource show mr" names it. */
static const char *sroce_mr_kind(const struct sroce_map *map)
{
	if (!map)
		return "none";
	switch (map->type) {
	case SROCE_MAP_USER:
		return map->pin->dmabuf ? "dmabuf" : map->pin->odp ? "odp" :
								     "pinned";
	case SROCE_MAP_DMA:
		return "dma";
	case SROCE_MAP_FAST:
		return "fast";
	case SROCE_MAP_NULL:
		return "null";
	}
	return "none";
}

/**
 * sroce_fill_res_mr_entry - what "rdma resource show mr" adds for an MR
 * @msg: the netlink message
 * @ibmr: the MR
 *
 * Driver attributes (shown with -dd): kind (pinned, odp, dmabuf, null,
 * dma, fast, or none for a fast-registration MR never registered); odp
 * (no, explicit or implicit); for a dma-buf MR its exporter ("udmabuf",
 * "system"); for user memory pages_mapped (pinned pages, a dma-buf's pages:
 * its kernel mapping is of the whole buffer, or ODP pages present now);
 * for ODP page_faults, pages_invalidated, pages_prefetched, ahead_queued
 * and ahead_run (of the current translation: see struct sroce_pin); rereg
 * (successful re-registrations) and windows (bound now). An ODP MR's
 * pages_mapped and counts are shown only to CAP_NET_ADMIN and the owner's
 * user (sroce_res_may_see_residency()).
 * Return: 0, or -EMSGSIZE when @msg is full.
 */
int sroce_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct sroce_map *map;
	struct sroce_pin *pin;
	struct nlattr *table;
	const char *odp;
	int err = -EMSGSIZE;

	/* Driver attributes are a table of their own (rdma -dd prints it). */
	table = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	mutex_lock(&mr->lock);
	map = sroce_mr_map(mr);
	pin = map && map->type == SROCE_MAP_USER ? map->pin : NULL;
	odp = !pin || !pin->odp ? "no" : pin->implicit ? "implicit" :
						   "explicit";
	if (rdma_nl_put_driver_string(msg, "kind", sroce_mr_kind(map)) ||
	    rdma_nl_put_driver_string(msg, "odp", odp))
		goto out;
	if (pin && pin->dmabuf &&
	    rdma_nl_put_driver_string(msg, "exporter",
				      sroce_dmabuf_exporter(pin)))
		goto out;
	if (pin && pin->odp && !sroce_res_may_see_residency(ibmr))
		pin = NULL;
	if (pin && rdma_nl_put_driver_u64(msg, "pages_mapped", pin->odp ?
					  sroce_odp_pages_mapped(pin) :
					  pin->npages))
		goto out;
	/* Its kernel memory (sroce_kmem.c): an ODP range's grows with use. */
	if (pin && rdma_nl_put_driver_u64(msg, "kmem",
					  atomic_long_read(&pin->kmem.bytes)))
		goto out;
	if (pin && pin->odp &&
	    (rdma_nl_put_driver_u64(msg, "page_faults",
				    atomic64_read(&pin->faults)) ||
	     rdma_nl_put_driver_u64(msg, "pages_invalidated",
				    atomic64_read(&pin->invalidated)) ||
	     rdma_nl_put_driver_u64(msg, "pages_prefetched",
				    atomic64_read(&pin->prefetched)) ||
	     rdma_nl_put_driver_u64(msg, "ahead_queued",
				    atomic64_read(&pin->ahead_queued)) ||
	     rdma_nl_put_driver_u64(msg, "ahead_run",
				    atomic64_read(&pin->ahead_run))))
		goto out;
	if (rdma_nl_put_driver_u32(msg, "rereg", mr->nrereg) ||
	    rdma_nl_put_driver_u32(msg, "windows", atomic_read(&mr->num_mw)))
		goto out;
	err = 0;
out:
	mutex_unlock(&mr->lock);
	if (err)
		nla_nest_cancel(msg, table);
	else
		nla_nest_end(msg, table);
	return err;
}

/**
 * sroce_dereg_mr - deregister an MR
 * @ibmr: the MR
 * @udata: unused
 *
 * When it returns, no access through the MR's keys is under way or can
 * start: the key is gone and every access that found it has finished.
 * Return: 0, or -EBUSY while windows are bound to the MR.
 */
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct sroce_map *map;

	/* Not while windows are bound to it; none can bind from now on. */
	if (atomic_cmpxchg(&mr->num_mw, 0, -1) != 0) {
		sroce_dbg_mr(mr->sdev, ibmr->lkey, "dereg refused: windows are bound\n");
		return -EBUSY;
	}

	sroce_mem_del(mr->sdev, &mr->mem);
	WRITE_ONCE(mr->mem.state, SROCE_MEM_FREE);
	/* The state is seen before the users are counted: see sroce_mem_get() */
	smp_mb();
	mutex_lock(&mr->lock);
	map = sroce_mr_map(mr);
	if (map)
		sroce_map_hold_old(map);
	mutex_unlock(&mr->lock);
	sroce_mr_free(mr);
	if (map)
		sroce_map_retire_held(map);
	return 0;
}

/**
 * sroce_mr_bind_get - the MR a window bind names, counted as bound
 * @sdev: the device
 * @pd: the bind's PD
 * @lkey: the MR's key
 * @addr: the window's first byte in the MR
 * @length: its bytes
 * @mrp: set to the MR, whose window count (num_mw) is raised: it cannot be
 *       deregistered or re-registered until the caller lowers it again
 *
 * The key, PD, bind access and range are checked before the MR is
 * counted, so a bind that fails them (another PD's, say) never makes the
 * owner's dereg or rereg fail with EBUSY; and the map returned is the MR's
 * current one, never one a concurrent rereg replaced.
 * Return: the MR's map (a reference), or ERR_PTR(-EINVAL).
 */
struct sroce_map *sroce_mr_bind_get(struct sroce_dev *sdev, struct ib_pd *pd,
				    u32 lkey, u64 addr, u64 length,
				    struct sroce_mr **mrp)
{
	struct sroce_map *map;
	struct sroce_mem *mem;
	struct sroce_mr *mr = NULL;

	/*
	 * The MR's key, in the bind's PD, with bind access (C10-73), the
	 * window's range inside the MR (C10-75).
	 */
	map = sroce_mem_get(sdev, pd, 0, lkey, addr, length,
			    IB_ACCESS_MW_BIND);
	if (IS_ERR(map))
		return ERR_PTR(-EINVAL);
	rcu_read_lock();
	mem = sroce_mem_find(sdev, lkey);
	if (map->type == SROCE_MAP_USER && mem && mem->kind == SROCE_MEM_MR) {
		mr = container_of(mem, struct sroce_mr, mem);
		/* Negative once dereg has begun. */
		if (!atomic_inc_unless_negative(&mr->num_mw))
			mr = NULL;
	}
	rcu_read_unlock();
	if (!mr) {
		sroce_dbg_mr(sdev, lkey, "bind refused: not a user MR, or being deregistered\n");
		sroce_map_put(map);
		return ERR_PTR(-EINVAL);
	}
	/*
	 * Counted, the MR cannot go away. A rereg that checked the count
	 * before we raised it has published its map by the time we hold the
	 * lock: bind to what the key grants now.
	 */
	mutex_lock(&mr->lock);
	if (sroce_mr_map(mr) != map) {
		sroce_map_put(map);
		map = sroce_mem_get(sdev, pd, 0, lkey, addr, length,
				    IB_ACCESS_MW_BIND);
		if (!IS_ERR(map) && sroce_mr_map(mr) != map) {
			sroce_map_put(map);
			map = ERR_PTR(-EINVAL);
		}
	}
	mutex_unlock(&mr->lock);
	if (IS_ERR(map)) {
		sroce_dbg_mr(sdev, lkey, "bind refused: the MR changed under it\n");
		atomic_dec(&mr->num_mw);
		return ERR_PTR(-EINVAL);
	}
	*mrp = mr;
	return map;
}
