// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: on-demand paging (ODP) MRs.
 *
 * An ODP MR pins nothing: its struct sroce_pin holds an ib_umem_odp, every
 * access faults in the page it needs and holds the umem's mutex while it
 * uses the page, and the MMU interval notifier takes the same mutex to
 * drop the pages the CPU no longer maps. Implicit ODP, and explicit ranges
 * longer than a chunk, are reached through a child umem per chunk, made on
 * first use. ibv_advise_mr() prefetches.
 */
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/userfaultfd_k.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce_mem.h"
#include "sroce_mem_api.h"
#include "sroce.h"

/*
 * The CPU's page tables changed under an ODP range: forget the pages, so
 * that the next access faults them in again.
 */
static bool sroce_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);
	struct sroce_pin *pin;
	int gone;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	gone = odp->npages;
	ib_umem_odp_unmap_dma_pages(odp, max_t(u64, ib_umem_start(odp),
					       range->start),
				    min_t(u64, ib_umem_end(odp), range->end));
	gone -= odp->npages;
	/* Set once the umem is made: none mapped before that. */
	pin = odp->private;
	mutex_unlock(&odp->umem_mutex);
	if (pin && gone > 0) {
		atomic64_add(gone, &pin->invalidated);
		sroce_count_add(to_sdev(odp->umem.ibdev),
				SROCE_CNT_ODP_INVALIDATED, gone);
	}
	return true;
}

static const struct mmu_interval_notifier_ops sroce_odp_ops = {
	.invalidate = sroce_odp_invalidate,
};

static void sroce_odp_later_work(struct work_struct *work);
static bool sroce_odp_note_take(struct sroce_pin *pin, u64 uva, bool write);

/* A chunked ODP range: a child umem covers each chunk of this size. */
#define SROCE_ODP_CHILD_SHIFT	24

/*
 * Children a chunked ODP MR keeps at most (4 GiB of chunks, about 16 MiB
 * of page lists in ib_core): a peer that sweeps the address space with the
 * MR's rkey cannot make the kernel allocate without bound.
 */
#define SROCE_ODP_MAX_CHILDREN	256

/*
 * The kernel memory of an ODP umem of @len bytes: ib_core's lists of its
 * pages' pfns and DMA addresses, 16 bytes a page (charged, sroce_kmem.c).
 */
static size_t sroce_odp_list_bytes(u64 len)
{
	return (size_t)(DIV_ROUND_UP_ULL(len, PAGE_SIZE) + 1) * 2 * sizeof(u64);
}

/*
 * An ODP range reached through children, made per chunk on first use:
 * implicit ODP, and explicit ranges longer than a chunk (ib_core's page
 * lists for a whole explicit range cost 16 bytes a page up front: 4 GiB
 * for the largest MR). Huge-page ranges too: ib_core sizes one of their
 * lists in base pages all the same (2 GiB for the largest MR). Children
 * map base pages, so such a range's IB_ACCESS_HUGETLB is a hint not
 * taken (it needs no huge pages behind it then).
 */
static bool sroce_odp_is_chunked(u64 start, u64 length, int access)
{
	return sroce_odp_is_implicit(start, length, access) ||
	       length > BIT_ULL(SROCE_ODP_CHILD_SHIFT);
}

/**
 * sroce_odp_get - an ODP range: nothing pinned now (IB_ACCESS_ON_DEMAND)
 * @ibdev: the device
 * @start: the range's user address
 * @length: its bytes (implicit ODP: @start 0 and @length U64_MAX)
 * @access: IB_ACCESS_* of the registration, IB_ACCESS_ON_DEMAND among them
 * @ku: the user the range's kernel memory is charged to: its page lists,
 *      a chunked range's as its children come and go
 *
 * Return: the pin, reached through children for implicit ODP and for a
 * range longer than a chunk; or ERR_PTR(-ENOMEM), or ib_core's error.
 */
struct sroce_pin *sroce_odp_get(struct ib_device *ibdev, u64 start,
				u64 length, int access,
				struct sroce_kmem_user *ku)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct ib_umem_odp *odp;
	struct sroce_pin *pin;
	int err;

	pin = sroce_pin_alloc(ibdev, ku);
	if (IS_ERR(pin))
		return pin;
	INIT_WORK(&pin->later.work, sroce_odp_later_work);
	spin_lock_init(&pin->later.lock);
	if (sroce_odp_is_chunked(start, length, access)) {
		/* ib_core's implicit roots take no huge-page hint. */
		odp = ib_umem_odp_alloc_implicit(ibdev,
						 access & ~IB_ACCESS_HUGETLB);
		if (IS_ERR(odp)) {
			err = PTR_ERR(odp);
			goto err_pin;
		}
		/*
		 * ib_core's implicit root does not hold its mm (only the
		 * children do, through their notifiers): hold it here, so
		 * that looking at the owner's mappings before any child
		 * exists never finds it freed.
		 */
		mmgrab(odp->umem.owning_mm);
		/*
		 * ib_core keeps no range in an implicit root (its children
		 * have theirs): it holds the range here, where the pinned
		 * and explicit ranges have theirs.
		 */
		odp->umem.address = start;
		odp->umem.length = length;
		pin->implicit = sroce_odp_is_implicit(start, length, access);
		pin->chunked = true;
		xa_init(&pin->children);
		init_rwsem(&pin->child_rwsem);
		odp->private = pin;
		pin->odp = odp;
		pin->umem = &odp->umem;
		pin->offset = offset_in_page(start);
		return pin;
	}
	err = sroce_kmem_add(sdev, &pin->kmem, sroce_odp_list_bytes(length));
	if (err)
		goto err_pin;
	odp = ib_umem_odp_get(ibdev, start, length, access, &sroce_odp_ops);
	if (IS_ERR(odp)) {
		err = PTR_ERR(odp);
		goto err_pin;
	}
	mutex_lock(&odp->umem_mutex);
	odp->private = pin;
	mutex_unlock(&odp->umem_mutex);
	pin->odp = odp;
	pin->umem = &odp->umem;
	pin->offset = offset_in_page(start);
	return pin;

err_pin:
	sroce_kmem_end(sdev, &pin->kmem);
	kfree(pin);
	return ERR_PTR(err);
}

/* The user address of @va, an address of @map, whose pin is an ODP range. */
static inline u64 sroce_odp_uva(const struct sroce_map *map, u64 va)
{
	return map->pin->umem->address + (va - map->base);
}

/*
 * Has the process that owns @root anything mapped in [start, start + len)?
 * Only then does a chunked ODP MR make a child for it: addresses past its
 * user space, or where it has no mapping, cost the kernel nothing.
 */
static bool sroce_odp_mapped(struct ib_umem_odp *root, u64 start, u64 len)
{
	struct mm_struct *mm = root->umem.owning_mm;
	bool mapped;

	if (start >= mm->task_size)
		return false;
	if (!mmget_not_zero(mm))
		return false;
	mmap_read_lock(mm);
	mapped = !!find_vma_intersection(mm, start, start + len);
	mmap_read_unlock(mm);
	mmput(mm);
	return mapped;
}

/*
 * Free a child to make room for another: one with no page mapped if there
 * is one, else the next one in turn from @pin->evict_next. Its pages are
 * faulted in again if an access needs them. @pin->child_rwsem held for
 * writing: no access is using any child.
 */
static void sroce_odp_evict(struct sroce_pin *pin)
{
	struct ib_umem_odp *child, *victim = NULL;
	unsigned long idx;

	lockdep_assert_held_write(&pin->child_rwsem);
	xa_for_each(&pin->children, idx, child) {
		if (!READ_ONCE(child->npages)) {
			victim = child;
			break;
		}
	}
	if (!victim) {
		idx = pin->evict_next;
		victim = xa_find(&pin->children, &idx, ULONG_MAX, XA_PRESENT);
		if (!victim) {
			idx = 0;
			victim = xa_find(&pin->children, &idx, ULONG_MAX,
					 XA_PRESENT);
		}
		pin->evict_next = idx + 1;
	}
	if (WARN_ON_ONCE(!victim))
		return;
	xa_erase(&pin->children, ib_umem_start(victim) >> SROCE_ODP_CHILD_SHIFT);
	pin->nchildren--;
	sroce_kmem_sub(to_sdev(pin->umem->ibdev), &pin->kmem,
		       sroce_odp_list_bytes(ib_umem_end(victim) -
					    ib_umem_start(victim)));
	ib_umem_odp_release(victim);
}

/*
 * Make the child of chunk @idx: the part of the chunk in the range, whole
 * pages. @pin->child_rwsem held for writing.
 */
static struct ib_umem_odp *sroce_odp_add_child(struct sroce_pin *pin,
					       unsigned long idx)
{
	/* Inclusive ends: the implicit range reaches 2^64 - 1. */
	u64 first = max_t(u64, (u64)idx << SROCE_ODP_CHILD_SHIFT,
			  PAGE_ALIGN_DOWN(pin->umem->address));
	u64 last = min_t(u64, ((u64)idx << SROCE_ODP_CHILD_SHIFT) +
				      BIT_ULL(SROCE_ODP_CHILD_SHIFT) - 1,
			 (pin->umem->address + pin->umem->length - 1) |
				 (PAGE_SIZE - 1));
	struct sroce_dev *sdev = to_sdev(pin->umem->ibdev);
	size_t bytes = sroce_odp_list_bytes(last - first + 1);
	struct ib_umem_odp *child;
	int err;

	lockdep_assert_held_write(&pin->child_rwsem);
	if (!sroce_odp_mapped(pin->odp, first, last - first + 1))
		return ERR_PTR(-EFAULT);
	if (pin->nchildren >= SROCE_ODP_MAX_CHILDREN)
		sroce_odp_evict(pin);
	/*
	 * Its page lists, charged to the MR's user. Refused past a bound (the
	 * device's may be others' doing): the range makes room from its own
	 * children before it fails the access.
	 */
	err = sroce_kmem_add(sdev, &pin->kmem, bytes);
	while (err && pin->nchildren) {
		sroce_odp_evict(pin);
		err = sroce_kmem_add(sdev, &pin->kmem, bytes);
	}
	if (err)
		return ERR_PTR(err);
	child = ib_umem_odp_alloc_child(pin->odp, first, last - first + 1,
					&sroce_odp_ops);
	if (IS_ERR(child)) {
		sroce_kmem_sub(sdev, &pin->kmem, bytes);
		return child;
	}
	mutex_lock(&child->umem_mutex);
	child->private = pin;
	mutex_unlock(&child->umem_mutex);
	err = xa_err(xa_store(&pin->children, idx, child, GFP_KERNEL));
	if (err) {
		ib_umem_odp_release(child);
		sroce_kmem_sub(sdev, &pin->kmem, bytes);
		return ERR_PTR(err);
	}
	pin->nchildren++;
	return child;
}

/*
 * The umem that covers @uva, for an access: an ODP MR's own, or for a
 * chunked range (implicit ODP, an explicit range longer than a chunk) the
 * child of @uva's chunk, made on first use (it may sleep). For a chunked
 * range it returns with @pin->child_rwsem held for reading, so that the
 * child is not freed under the access: release it with
 * sroce_odp_put_umem().
 */
static struct ib_umem_odp *sroce_odp_get_umem(struct sroce_pin *pin, u64 uva)
{
	unsigned long idx = uva >> SROCE_ODP_CHILD_SHIFT;
	struct ib_umem_odp *child;

	if (!pin->chunked)
		return pin->odp;
	down_read(&pin->child_rwsem);
	child = xa_load(&pin->children, idx);
	if (child)
		return child;
	up_read(&pin->child_rwsem);

	down_write(&pin->child_rwsem);
	child = xa_load(&pin->children, idx);
	if (!child)
		child = sroce_odp_add_child(pin, idx);
	downgrade_write(&pin->child_rwsem);
	if (IS_ERR(child)) {
		up_read(&pin->child_rwsem);
		sroce_dbg_dev(to_sdev(pin->umem->ibdev),
			      "no child umem for user address %#llx (%ld)\n",
			      uva, PTR_ERR(child));
	}
	return child;
}

/*
 * As sroce_odp_get_umem(), for an access that may not wait: a chunked
 * range's child only if it is there and @pin->child_rwsem is free for
 * reading now. A child is made, or freed to make room, under the rwsem
 * held for writing, and making one may wait for the process's mmap lock
 * (sroce_odp_mapped()), which its own stalled faults may hold; accesses
 * through children hold the rwsem for reading across their faults.
 * Return: the umem, or ERR_PTR(-EAGAIN).
 */
static struct ib_umem_odp *sroce_odp_try_umem(struct sroce_pin *pin, u64 uva)
{
	struct ib_umem_odp *child;

	if (!pin->chunked)
		return pin->odp;
	if (!down_read_trylock(&pin->child_rwsem))
		return ERR_PTR(-EAGAIN);
	child = xa_load(&pin->children, uva >> SROCE_ODP_CHILD_SHIFT);
	if (child)
		return child;
	up_read(&pin->child_rwsem);
	return ERR_PTR(-EAGAIN);
}

static void sroce_odp_put_umem(struct sroce_pin *pin)
{
	if (pin->chunked)
		up_read(&pin->child_rwsem);
}

/*
 * Tries of ib_umem_odp_map_dma_and_lock() that end in -EBUSY before an
 * access fails (sroce_odp_map()).
 */
#define SROCE_ODP_BUSY_TRIES	8

/*
 * ib_umem_odp_map_dma_and_lock() of [uva, uva + len) of @odp, for @bits,
 * faulting if @fault. ib_core tries its walk again after an invalidation
 * of the range (-EBUSY) only within HMM_RANGE_DEFAULT_TIMEOUT of the
 * call's start, and a fault that waited longer than that for its page
 * (the owner's FUSE server holding the read, I/O, memory pressure) has
 * spent the budget before its walk ends: the first invalidation met after
 * the wait (the page written back, reclaimed, migrated) fails the access,
 * a receive WQE completes in error, though the page can be had. Called
 * again, the walk finds what the wait brought in and has a budget of its
 * own: up to SROCE_ODP_BUSY_TRIES calls, unless the task is being killed.
 * Return: as ib_umem_odp_map_dma_and_lock() (the umem_mutex held on
 * success).
 */
static int sroce_odp_map(struct ib_umem_odp *odp, u64 uva, u64 len,
			 u64 bits, bool fault)
{
	int tries = SROCE_ODP_BUSY_TRIES;
	int ret;

	do {
		ret = ib_umem_odp_map_dma_and_lock(odp, uva, len, bits, fault);
	} while (ret == -EBUSY && --tries && !fatal_signal_pending(current));
	return ret;
}

/**
 * sroce_odp_lock - fault in and hold the page of an ODP map's access
 * @map: a map whose pin is an ODP range
 * @va: the first byte, an address of @map
 * @len: bytes, within one page
 * @write: the access writes
 * @fault: whether a page that is not present is faulted in and waited for
 * @locked: set to the umem whose umem_mutex is held
 *
 * An ODP range: fault in (for writing if @write) the page that holds
 * [va, va + len), which must not cross a page, and return its kernel
 * address with the range's umem_mutex held, so that no invalidation takes
 * the page away until sroce_odp_unlock(). With SROCE_NO_FAULT only a page
 * present now is taken: for one that is not, the caller has a job fault it
 * in beside (sroce_map_fault_later()), and may try again later. Then
 * nothing here waits for the process (its mmap lock, its faults): only
 * for the umem_mutex, which no one holds across a fault.
 *
 * Return: the kernel address of @va; ERR_PTR(-EINVAL) when the bytes
 * cross a page; ERR_PTR(-EFAULT) when the page cannot be had (not mapped,
 * not writable for a write, or its process has exited; with
 * SROCE_NO_FAULT: a job found so for this kind of access, and noted it);
 * ERR_PTR(-ENOMEM) when a chunked range's child umem for @va's chunk
 * cannot be allocated; or with SROCE_NO_FAULT ERR_PTR(-EAGAIN) when the
 * page is not present.
 */
void *sroce_odp_lock(struct sroce_map *map, u64 va, u64 len, bool write,
		     enum sroce_fault fault, struct ib_umem_odp **locked)
{
	u64 uva = sroce_odp_uva(map, va);
	u64 bits = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	struct ib_umem_odp *odp;
	dma_addr_t dma;
	size_t idx;
	u64 psize;

	if (fault == SROCE_NO_FAULT) {
		odp = sroce_odp_try_umem(map->pin, uva);
		if (IS_ERR(odp))
			goto later;
	} else {
		odp = sroce_odp_get_umem(map->pin, uva);
		if (IS_ERR(odp))
			return ERR_CAST(odp);
	}
	/* One page (of the umem's size) is held: the bytes must lie in it. */
	psize = BIT_ULL(odp->page_shift);
	if ((uva & (psize - 1)) + len > psize) {
		sroce_odp_put_umem(map->pin);
		return ERR_PTR(-EINVAL);
	}
	idx = (uva - ib_umem_start(odp)) >> odp->page_shift;
	*locked = odp;

	/*
	 * Present with the access needed: invalidations clear dma_list under
	 * the mutex, so an entry seen under it stays good while it is held.
	 */
	mutex_lock(&odp->umem_mutex);
	dma = odp->dma_list[idx];
	if ((dma & bits) != bits) {
		mutex_unlock(&odp->umem_mutex);
		if (fault == SROCE_NO_FAULT) {
			sroce_odp_put_umem(map->pin);
			goto later;
		}
		if (sroce_odp_map(odp, uva, len, bits, true) < 0)
			goto fault;
		dma = odp->dma_list[idx];
		if ((dma & bits) != bits) {
			mutex_unlock(&odp->umem_mutex);
			goto fault;
		}
		atomic64_inc(&map->pin->faults);
		sroce_count(to_sdev(odp->umem.ibdev), SROCE_CNT_ODP_FAULTS);
	}
	/* Virtual DMA: the "DMA address" is the page's kernel address. */
	return (void *)(uintptr_t)(dma & ODP_DMA_ADDR_MASK) +
	       (uva & (BIT_ULL(odp->page_shift) - 1));
fault:
	sroce_odp_put_umem(map->pin);
refused:
	sroce_dbg_dev(to_sdev(map->pin->umem->ibdev),
		      "key %#x: page of %#llx not had for %s\n", map->key, va,
		      write ? "writing" : "reading");
	return ERR_PTR(-EFAULT);
later:
	if (sroce_odp_note_take(map->pin, uva, write))
		goto refused;
	return ERR_PTR(-EAGAIN);
}

/**
 * sroce_odp_unlock - end an access sroce_odp_lock() began
 * @map: its map
 * @odp: the umem sroce_odp_lock() set in *@locked
 */
void sroce_odp_unlock(struct sroce_map *map, struct ib_umem_odp *odp)
{
	mutex_unlock(&odp->umem_mutex);
	sroce_odp_put_umem(map->pin);
}

/**
 * sroce_odp_copy - sroce_map_copy() for a map whose pin is an ODP range
 * @map: a map from sroce_mem_get() whose range covers [va, va + len)
 * @va: the MR address
 * @buf: kernel buffer
 * @len: bytes
 * @to_mem: copy @buf into the memory (else the memory into @buf)
 * @fault: whether pages that are not present are faulted in
 *
 * Page by page, each faulted in and held only for its copy.
 * Return: 0; or -EFAULT when a page cannot be had, -ENOMEM when a chunk's
 * child umem cannot be allocated, -EAGAIN when a page is not present and
 * may not be faulted in (as sroce_odp_lock()); some bytes may have been
 * copied.
 */
int sroce_odp_copy(struct sroce_map *map, u64 va, void *buf, u64 len,
		   bool to_mem, enum sroce_fault fault)
{
	u64 psize = BIT_ULL(map->pin->odp->page_shift);

	while (len) {
		u64 uva = sroce_odp_uva(map, va);
		u64 n = min(len, psize - (uva & (psize - 1)));
		struct ib_umem_odp *odp;
		void *addr = sroce_odp_lock(map, va, n, to_mem, fault, &odp);

		if (IS_ERR(addr))
			return PTR_ERR(addr);
		sroce_copy_paged(addr, buf, n, to_mem);
		sroce_odp_unlock(map, odp);
		va += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/**
 * sroce_odp_pages_mapped - pages an ODP range has present now
 * @pin: an ODP pin
 *
 * Return: the pages of its umem, or of all its children, that an access
 * could use without a fault.
 */
u64 sroce_odp_pages_mapped(struct sroce_pin *pin)
{
	struct ib_umem_odp *child;
	unsigned long idx;
	u64 n = 0;

	if (!pin->chunked)
		return READ_ONCE(pin->odp->npages);
	down_read(&pin->child_rwsem);
	xa_for_each(&pin->children, idx, child)
		n += READ_ONCE(child->npages);
	up_read(&pin->child_rwsem);
	return n;
}

/* Pages of @odp's [uva, uva + len) present with @bits; its mutex held. */
static unsigned int sroce_odp_present(struct ib_umem_odp *odp, u64 uva,
				      u64 len, u64 bits)
{
	size_t idx = (uva - ib_umem_start(odp)) >> odp->page_shift;
	size_t end = (uva + len - 1 - ib_umem_start(odp)) >> odp->page_shift;
	unsigned int n = 0;

	lockdep_assert_held(&odp->umem_mutex);
	for (; idx <= end; idx++)
		n += (odp->dma_list[idx] & bits) == bits;
	return n;
}

/* Bytes faulted in (or looked up) per call, so no lock is held for long. */
#define SROCE_PREFETCH_CHUNK	SZ_2M

/*
 * Fault in [uva, uva + len) of one umem, not crossing a prefetch chunk.
 * Return: the bytes it covers (clipped to its umem), or 0 if it failed.
 */
static u64 sroce_odp_fault_chunk(struct sroce_map *map, u64 uva, u64 len,
				 u64 bits, bool speculative)
{
	unsigned int before, after, pages;
	struct ib_umem_odp *odp;

	odp = sroce_odp_get_umem(map->pin, uva);
	if (IS_ERR(odp))
		return 0;
	/* A child covers one chunk: clip to it. */
	len = min_t(u64, len, ib_umem_end(odp) - uva);
	pages = ((uva + len - 1) >> odp->page_shift) -
		(uva >> odp->page_shift) + 1;
	mutex_lock(&odp->umem_mutex);
	before = sroce_odp_present(odp, uva, len, bits);
	mutex_unlock(&odp->umem_mutex);
	if (before == pages)
		goto out;
	if (sroce_odp_map(odp, uva, len, bits, true) < 0) {
		len = 0;
		goto out;
	}
	after = sroce_odp_present(odp, uva, len, bits);
	mutex_unlock(&odp->umem_mutex);
	if (after > before) {
		atomic64_add(after - before, speculative ?
			     &map->pin->prefetched : &map->pin->faults);
		sroce_count_add(to_sdev(odp->umem.ibdev), speculative ?
				SROCE_CNT_ODP_PREFETCHED : SROCE_CNT_ODP_FAULTS,
				after - before);
	}
out:
	sroce_odp_put_umem(map->pin);
	return len;
}

/**
 * sroce_odp_fault_ahead - fault in the start of a range of an ODP map
 * @map: a map whose pin is an ODP range covering [va, va + len)
 * @va: the first byte
 * @len: bytes; only the first 2 MiB of them are faulted
 * @write: fault for writing
 * @speculative: for a message still to come, not one being copied
 *
 * The pages that become present count as page faults, as the copies'
 * faults do, or as prefetched if @speculative; pages already there cost
 * one look under the mutex.
 * Return: the bytes from @va it covered, 0 if it could not fault them.
 */
static u64 sroce_odp_fault_ahead(struct sroce_map *map, u64 va, u64 len,
				 bool write, bool speculative)
{
	u64 uva = sroce_odp_uva(map, va);
	u64 bits = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	u64 done = 0;

	len = min_t(u64, len, SROCE_PREFETCH_CHUNK);
	while (done < len) {
		u64 n = min_t(u64, len - done, SROCE_PREFETCH_CHUNK -
				   ((uva + done) & (SROCE_PREFETCH_CHUNK - 1)));

		n = sroce_odp_fault_chunk(map, uva + done, n, bits,
					  speculative);
		if (!n)
			break;
		done += n;
	}
	return done;
}

/**
 * sroce_odp_private_len - how much of a range is private anonymous memory
 * @map: a map whose pin is an ODP range covering [va, va + len)
 * @va: the first byte
 * @len: bytes
 *
 * Where a speculative fault-in may go without a consumer naming the
 * memory (implicit ODP): a page of a private anonymous mapping that no
 * one has touched is a page of zeroes either way, so faulting it in
 * early changes nothing the process or anyone else can see. A file,
 * memory shared with another process, and memory whose faults a
 * userfaultfd handles are left alone. Only a snapshot: the mapping may
 * change once the mmap lock is dropped, so the caller asks again before
 * each step. May sleep.
 *
 * Return: the bytes from @va that lie in one such mapping of the range's
 * process (0 if @va is in none, or the process has exited).
 */
static u64 sroce_odp_private_len(struct sroce_map *map, u64 va, u64 len)
{
	u64 uva = sroce_odp_uva(map, va);
	struct mm_struct *mm = map->pin->umem->owning_mm;
	struct vm_area_struct *vma;
	u64 n = 0;

	if (!mmget_not_zero(mm))
		return 0;
	mmap_read_lock(mm);
	vma = vma_lookup(mm, uva);
	if (vma && vma_is_anonymous(vma) && !(vma->vm_flags & VM_SHARED) &&
	    !userfaultfd_armed(vma))
		n = min(len, vma->vm_end - uva);
	mmap_read_unlock(mm);
	mmput(mm);
	return n;
}

/*
 * Fault-ahead jobs run here, beside the engine and on any CPU (the
 * releases of pins run on their users' own work items, sroce_kmem.c).
 *
 * Neither ODP queue is WQ_MEM_RECLAIM. A job faults in a user's memory,
 * and may wait in that fault for as long as the memory's owner likes (a
 * page of its FUSE file waits for the file's server): no rescuer could
 * promise it progress under memory pressure, and nothing that reclaims
 * memory waits for it. ODP MRs are users' memory, reached by users' QPs
 * only: a kernel consumer gets none (sroce_reg_user_mr()), so the kernel
 * ULPs that write pages out (NVMe-oF, NFS over RDMA, SRP, iSER), whose
 * QPs the engine serves from a WQ_MEM_RECLAIM queue, queue no job. Nor
 * does the engine wait for a job (a stream's next message cancels its
 * job if it has not started and leaves it to finish if it has;
 * sroce_map_fault_ahead()).
 * The MMU notifier takes only the umem_mutex, which no job holds across a
 * fault. And a rescuer hurt: on kernels before e5a30c303b07 (6.1 among
 * them) the rescuer, sent when making a worker took over 10 ms, moved
 * every item of the queue waiting for a worker onto its own list and ran
 * them one by one, so the first job stalled in a user's fault held every
 * other user's queued jobs with it, however many workers the pool made
 * meanwhile. Without one, an item waits for a worker only while the pool
 * makes them (one at a time, never stopping while items wait; once a
 * second while memory is short), never behind a stalled job.
 *
 * A user whose memory stalls its faults (its FUSE file) stalls its jobs,
 * each holding a worker: up to SROCE_AHEAD_JOBS per direction of each of
 * its QPs' responders. So a user has at most SROCE_ODP_USER_AHEAD of them
 * queued or running on all devices together (counted as a QP's user,
 * sroce_kmem_job_start()), and all users of all devices
 * together at most SROCE_ODP_AHEAD_JOBS, a quarter of the queue's
 * max_active (WQ_UNBOUND_MAX_ACTIVE, 512 or more): past either, a stream's
 * message queues no job and its next message faults its pages itself, as
 * it goes (odp_ahead_refused). A job admitted then finds a worker, never
 * waiting inactive behind stalled ones: on 6.1 max_active bounds each NUMA
 * node's jobs on its own, and from 6.9 the kernel shares it out between
 * the nodes by their CPUs, a quarter or more each on up to four nodes of
 * as many CPUs. Stalled jobs of SROCE_ODP_AHEAD_JOBS /
 * SROCE_ODP_USER_AHEAD users, 8, still keep every other
 * user's fault-ahead out (their messages fault as they go, as without
 * it) until their stalls end; that many stalled kworkers is the most all
 * users can make through fault-ahead.
 *
 * WQ_SYSFS, as ib_core's ib-comp-unb-wq and the writeback queue: root
 * may tune it in /sys/bus/workqueue/devices/sroce_odp (max_active, nice,
 * cpumask). With max_active below SROCE_ODP_AHEAD_JOBS, admitted jobs may
 * wait inactive behind stalled ones: their prefetch comes late, nothing
 * worse, as no retirement waits for a queued job (sroce_map_keep()) and a
 * QP's destroy takes its jobs off the queue without a worker
 * (sroce_ahead_stop()). tests/src/sroce_stall.cpp sets it to 8, so that a
 * victim's jobs stay queued behind an attacker's 8 stalled ones while the
 * victim deregisters or exits. From 6.9 a value below 8 also lowers the
 * queue's min_active (the least share of max_active a NUMA node gets, 8)
 * until the module is reloaded: writing max_active back does not raise it.
 */
static struct workqueue_struct *sroce_odp_wq;

#define SROCE_ODP_USER_AHEAD	16
#define SROCE_ODP_AHEAD_JOBS	128

/* Fault-ahead jobs queued or running, of every user and device. */
static atomic_t sroce_odp_ahead_jobs = ATOMIC_INIT(0);

/*
 * The jobs of accesses that could not wait (struct sroce_odp_later), which
 * no engine waits for, on a queue of their own: they are the only way an
 * XRC receive QP's ODP access makes progress, and a user whose memory
 * stalls its faults (its FUSE file) stalls its jobs. So a user has at most
 * SROCE_ODP_USER_LATER of them queued or running on all devices together
 * (sroce_kmem_job_start(); past that its accesses stay
 * RNR NAKed until one ends), and the queue runs as many at once as an
 * unbound queue may, WQ_UNBOUND_MAX_ACTIVE: one user cannot take every
 * worker from the others' jobs, nor from the QPs' fault-ahead jobs.
 *
 * A user is a kuid that only an administrator can multiply (a container
 * root made is one, sroce_kmem_uid()), but there may be many. So the jobs
 * of all users of all devices are also bounded together, at
 * SROCE_ODP_LATER_JOBS, the queue's max_active (only these jobs run on
 * it): past that every access
 * that would queue one is refused as past its user's bound (RNR NAKed,
 * odp_later_refused), and a job admitted finds a worker, never waiting
 * inactive behind stalled ones (on one NUMA node; from 6.9 the limit is
 * shared out between nodes), nor in a rescuer's list behind one (the
 * queue has no rescuer: see sroce_odp_wq). Many users' stalled jobs can
 * still hold the others' off this way: max_active / SROCE_ODP_USER_LATER
 * of them, 32 users (on 6.1 from 128 CPUs on, 4 x CPUs / 16).
 */
static struct workqueue_struct *sroce_odp_later_wq;

#define SROCE_ODP_USER_LATER	16
#define SROCE_ODP_LATER_JOBS	WQ_UNBOUND_MAX_ACTIVE

/* Later-jobs queued or running, of every user and device. */
static atomic_t sroce_odp_later_jobs = ATOMIC_INIT(0);

/**
 * sroce_odp_init - create the ODP workqueues, at module load
 *
 * Return: 0, or -ENOMEM.
 */
int sroce_odp_init(void)
{
	/* Not WQ_MEM_RECLAIM; WQ_SYSFS for root: see sroce_odp_wq. */
	sroce_odp_wq = alloc_workqueue("sroce_odp", WQ_UNBOUND | WQ_SYSFS,
				       WQ_UNBOUND_MAX_ACTIVE);
	if (!sroce_odp_wq)
		return -ENOMEM;
	sroce_odp_later_wq = alloc_workqueue("sroce_odp_later", WQ_UNBOUND,
					     WQ_UNBOUND_MAX_ACTIVE);
	if (!sroce_odp_later_wq)
		goto err_later;
	return 0;

err_later:
	destroy_workqueue(sroce_odp_wq);
	return -ENOMEM;
}

/*
 * At module unload (or a failed load): every device is unregistered, which
 * waited for every job (a QP's fault-ahead jobs, for its QP's destroy; a
 * range's later job, which holds its device): each gave its count of all
 * users' jobs back. A pin's release runs on its user's work item
 * (sroce_kmem_exit() waits for those).
 */
void sroce_odp_exit(void)
{
	WARN_ON(atomic_read(&sroce_odp_ahead_jobs));
	WARN_ON(atomic_read(&sroce_odp_later_jobs));
	destroy_workqueue(sroce_odp_later_wq);
	destroy_workqueue(sroce_odp_wq);
}

/* Fault in a fault-ahead job's range of @map, an access the job holds. */
static void sroce_ahead_fault(struct sroce_map *map, u64 va, u64 len,
			      bool write)
{
	atomic64_inc(&map->pin->ahead_run);
	while (len) {
		u64 n = len;

		/* Implicit ODP: only as far as private memory goes, now. */
		if (map->pin->implicit)
			n = sroce_odp_private_len(map, va, n);
		if (n)
			n = sroce_odp_fault_ahead(map, va, n, write, true);
		if (!n)
			break;
		va += n;
		len -= n;
		cond_resched();
	}
}

/*
 * What a queued fault-ahead job holds, from its queueing until its run is
 * done or it is cancelled: a count of its QP's user's jobs, within
 * SROCE_ODP_USER_AHEAD, and of all users', within SROCE_ODP_AHEAD_JOBS.
 * The device shows how many of its jobs hold them (odp_ahead_held), so
 * that a count not given back shows.
 * Return: false (nothing held; odp_ahead_refused) past either bound.
 */
static bool sroce_ahead_hold(struct sroce_ahead_job *job)
{
	struct sroce_dev *sdev = to_sdev(job->ibdev);

	/* The user's own bound first: a user at it takes no slot of the others. */
	if (!sroce_kmem_job_start(job->ku, SROCE_JOB_AHEAD,
				  SROCE_ODP_USER_AHEAD))
		goto refused;
	if (atomic_add_unless(&sroce_odp_ahead_jobs, 1, SROCE_ODP_AHEAD_JOBS)) {
		sroce_count(sdev, SROCE_CNT_ODP_AHEAD_HELD);
		return true;
	}
	sroce_kmem_job_end(job->ku, SROCE_JOB_AHEAD);
refused:
	sroce_count(sdev, SROCE_CNT_ODP_AHEAD_REFUSED);
	return false;
}

/* Drop what sroce_ahead_hold() took. */
static void sroce_ahead_unhold(struct sroce_ahead_job *job)
{
	atomic_dec(&sroce_odp_ahead_jobs);
	sroce_kmem_job_end(job->ku, SROCE_JOB_AHEAD);
	/* The level last: once it shows the job gone, its counts are free. */
	smp_mb__before_atomic();
	atomic64_dec(&to_sdev(job->ibdev)->counters[SROCE_CNT_ODP_AHEAD_HELD]);
}

/*
 * Fault a job's range in, beside the engine, unless its map was retired
 * while the job waited in the queue; then drop the job's counts, free its
 * slot and let go of the map.
 */
static void sroce_ahead_work(struct work_struct *work)
{
	struct sroce_ahead_job *job = container_of(work,
						   struct sroce_ahead_job,
						   work);
	struct sroce_map *map = job->map;

	if (sroce_map_use_kept(map)) {
		sroce_ahead_fault(map, job->va, job->len, job->write);
		sroce_map_put(map);
	} else {
		sroce_count(to_sdev(job->ibdev), SROCE_CNT_ODP_JOBS_RETIRED);
	}
	sroce_ahead_unhold(job);
	/*
	 * The last touch of the job's fields: from here the data path may
	 * fill them and queue the job again (sroce_map_fault_ahead()), and
	 * the workqueue runs that after this returns.
	 */
	smp_store_release(&job->map, NULL);
	sroce_map_unkeep(map);
}

/*
 * Fault in the pages of [uva, uva + len) of @map's ODP range that can be
 * had: a piece that fails is faulted in again page by page, up to the
 * page that cannot be had.
 * Return: the bytes from @uva faulted in, all of @len or up to that page.
 */
static u64 sroce_odp_fault_pages(struct sroce_map *map, u64 uva, u64 len,
				 u64 bits)
{
	u64 done = 0;

	while (done < len) {
		u64 n = min_t(u64, len - done,
			      PAGE_SIZE - offset_in_page(uva + done));

		if (!sroce_odp_fault_chunk(map, uva + done, n, bits, false))
			break;
		done += n;
		cond_resched();
	}
	return done;
}

/*
 * Fault in [va, va + len) of @map's ODP range, as an access's faults
 * would have: the pages count as faults.
 * Return: the bytes from @va faulted in: all of @len, or up to the first
 * page that cannot be had (nothing mapped there, not writable for a
 * write, no child umem for its chunk).
 */
static u64 sroce_odp_fault_range(struct sroce_map *map, u64 va, u64 len,
				 bool write)
{
	u64 uva = sroce_odp_uva(map, va);
	u64 bits = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	u64 done = 0;

	while (done < len) {
		u64 at = uva + done;
		u64 n = min_t(u64, len - done, SROCE_PREFETCH_CHUNK -
				   (at & (SROCE_PREFETCH_CHUNK - 1)));
		u64 got = sroce_odp_fault_chunk(map, at, n, bits, false);

		if (!got) {
			got = sroce_odp_fault_pages(map, at, n, bits);
			if (got < n)
				return done + got;
		}
		done += got;
		cond_resched();
	}
	return done;
}

/*
 * How long a note lasts (jiffies). The access that queued the job comes
 * again within its requester's RNR timer (at most 655 ms), or a READ
 * within its QP's wait (at most 256 jiffies, sroce_resp.c), so this is
 * ample for it; and a note of a page that could not be had then must not
 * fail another access long after, the page mapped since (mapping it fires
 * no MMU notifier).
 */
#define SROCE_ODP_NOTE_TTL	(2 * HZ + 256)

/* Does @note say @page cannot be had for @write, and is it still valid? */
static bool sroce_odp_note_is(const struct sroce_odp_note *note,
			      unsigned long page, bool write)
{
	return note->set && note->page == page && note->write == write &&
	       time_before64(get_jiffies_64(), note->when + SROCE_ODP_NOTE_TTL);
}

/*
 * Note that the job could not fault in @uva's page for @write: the
 * access that finds it missing within SROCE_ODP_NOTE_TTL fails
 * (sroce_odp_note_take()). The oldest note makes room. @later->lock held.
 */
static void sroce_odp_note_add(struct sroce_odp_later *later, u64 uva,
			       bool write)
{
	unsigned long page = uva >> PAGE_SHIFT;
	struct sroce_odp_note *note;
	unsigned int i;

	lockdep_assert_held(&later->lock);
	for (i = 0; i < SROCE_ODP_LATER_NOTES; i++) {
		note = &later->notes[i];
		if (sroce_odp_note_is(note, page, write)) {
			note->when = get_jiffies_64();
			return;
		}
	}
	note = &later->notes[later->next_note];
	later->next_note = (later->next_note + 1) % SROCE_ODP_LATER_NOTES;
	*note = (struct sroce_odp_note){ .page = page, .when = get_jiffies_64(),
					 .write = write, .set = true };
}

/*
 * The job faulted in the @len > 0 bytes at @uva for @write (so for
 * reading too): the notes of their pages for that are stale.
 * @later->lock held.
 */
static void sroce_odp_notes_clear(struct sroce_odp_later *later, u64 uva,
				  u64 len, bool write)
{
	unsigned long first = uva >> PAGE_SHIFT;
	unsigned long last = (uva + len - 1) >> PAGE_SHIFT;
	unsigned int i;

	lockdep_assert_held(&later->lock);
	for (i = 0; i < SROCE_ODP_LATER_NOTES; i++) {
		struct sroce_odp_note *note = &later->notes[i];

		if (note->set && note->page >= first && note->page <= last &&
		    (write || !note->write))
			note->set = false;
	}
}

/*
 * Did a job of @pin find, less than SROCE_ODP_NOTE_TTL ago, that the page
 * of user address @uva cannot be had for @write? Then the access that
 * found it missing fails, once: the note is taken. An expired note is
 * ignored: the access queues a job of its own, which finds out again.
 */
static bool sroce_odp_note_take(struct sroce_pin *pin, u64 uva, bool write)
{
	struct sroce_odp_later *later = &pin->later;
	unsigned long page = uva >> PAGE_SHIFT;
	bool taken = false;
	unsigned int i;

	spin_lock(&later->lock);
	for (i = 0; i < SROCE_ODP_LATER_NOTES; i++) {
		struct sroce_odp_note *note = &later->notes[i];

		if (sroce_odp_note_is(note, page, write)) {
			note->set = false;
			taken = true;
			break;
		}
	}
	spin_unlock(&later->lock);
	return taken;
}

/* Fault in one range a job took, and note what could not be had. */
static void sroce_odp_later_range(struct sroce_odp_later *later,
				  const struct sroce_odp_range *r)
{
	u64 uva = sroce_odp_uva(r->map, r->va);
	u64 done = sroce_odp_fault_range(r->map, r->va, r->len, r->write);

	spin_lock(&later->lock);
	if (done)
		sroce_odp_notes_clear(later, uva, done, r->write);
	if (done < r->len)
		sroce_odp_note_add(later, uva + done, r->write);
	spin_unlock(&later->lock);
}

/*
 * A range's later job: fault in the ranges accesses queued, in turn, each
 * through its map if that was not retired meanwhile (then nothing of it),
 * dropping the map when done with it, until none is left. Then let the
 * next job be queued, and drop the user's count, the pin and, last, the
 * device. The pin's last reference queues its release (which may wait as
 * long as its owner likes, sroce_pin_put_async()), not run it here after
 * the counts that bound this queue's stalled jobs were given back; the
 * release frees this job with the pin: nothing touches them after.
 */
static void sroce_odp_later_work(struct work_struct *work)
{
	struct sroce_odp_later *later = container_of(work,
						     struct sroce_odp_later,
						     work);
	struct sroce_pin *pin = container_of(later, struct sroce_pin, later);
	struct ib_device *ibdev = pin->ibdev;
	struct sroce_odp_range r;

	for (;;) {
		spin_lock(&later->lock);
		if (!later->nranges) {
			later->busy = false;
			spin_unlock(&later->lock);
			break;
		}
		r = later->ranges[0];
		later->nranges--;
		memmove(later->ranges, later->ranges + 1,
			later->nranges * sizeof(r));
		spin_unlock(&later->lock);
		if (sroce_map_use_kept(r.map)) {
			sroce_odp_later_range(later, &r);
			sroce_map_put(r.map);
		} else {
			sroce_count(to_sdev(ibdev), SROCE_CNT_ODP_JOBS_RETIRED);
		}
		sroce_map_unkeep(r.map);
		cond_resched();
	}
	atomic_dec(&sroce_odp_later_jobs);
	sroce_kmem_job_end(pin->kmem.ku, SROCE_JOB_LATER);
	sroce_pin_put_async(pin);
	ib_device_put(ibdev);
}

/*
 * What a queued job holds: a count of all jobs, within SROCE_ODP_LATER_JOBS,
 * and of its user's, within SROCE_ODP_USER_LATER; the device, so that its
 * unregistration waits for the job (see sroce_map_fault_later()); the pin.
 * @pin->later.lock held.
 * Return: false (nothing held) past either bound, or once the device is
 * being unregistered.
 */
static bool sroce_odp_later_hold(struct sroce_pin *pin)
{
	lockdep_assert_held(&pin->later.lock);
	/* The user's own bound first: a user at it takes no slot of the others. */
	if (!sroce_kmem_job_start(pin->kmem.ku, SROCE_JOB_LATER,
				  SROCE_ODP_USER_LATER))
		goto refused;
	if (!atomic_add_unless(&sroce_odp_later_jobs, 1, SROCE_ODP_LATER_JOBS))
		goto unuser;
	if (!ib_device_try_get(pin->ibdev)) {
		atomic_dec(&sroce_odp_later_jobs);
		sroce_kmem_job_end(pin->kmem.ku, SROCE_JOB_LATER);
		return false;
	}
	kref_get(&pin->ref);
	return true;

unuser:
	sroce_kmem_job_end(pin->kmem.ku, SROCE_JOB_LATER);
refused:
	sroce_count(to_sdev(pin->ibdev), SROCE_CNT_ODP_LATER_REFUSED);
	return false;
}

/**
 * sroce_map_fault_later - have what an access that could not wait needs
 *                         faulted in beside
 * @map: the access's map, from sroce_mem_get(), covering [va, va + len)
 * @va: the first byte the access, made again, will need
 * @len: bytes from @va that its message still needs, no more: they are
 *       faulted in for writing if @write (at most SROCE_ODP_LATER_MAX)
 * @write: for writing
 *
 * After an access with SROCE_NO_FAULT found @map's ODP memory missing
 * (-EAGAIN), the caller names what its message needs from there: the rest
 * of a WRITE or of a READ, an atomic's 8 bytes, the rest of a receive
 * WQE's buffers (sroce_sges_fault_later()). Any other map needs nothing.
 *
 * The range goes to its pin's job (struct sroce_odp_later), queued on its
 * workqueue unless it is already, for which it keeps the map: no access,
 * so a retirement does not wait for a job still queued (sroce_map_keep()).
 * The job faults in each range it has, in turn, through its map unless
 * that was retired meanwhile: the access made again finds its pages
 * present, or fails if the job found its page cannot be had (the notes).
 * Nothing is queued when a queued range covers this one, when
 * SROCE_ODP_LATER_RANGES are queued, when the memory's user has
 * SROCE_ODP_USER_LATER jobs queued or running (so a user whose memory
 * stalls its faults takes at most that many of the queue's workers), when
 * all users have SROCE_ODP_LATER_JOBS, or
 * when the device is being unregistered: the access, made again, asks
 * again. No QP waits for the job: the map's retirement does while the job
 * faults the map's range in (its MR's deregistration or re-registration
 * waits for every access under way), never while it waits in the queue;
 * and so does the device's unregistration: the job holds the device
 * (ib_device_try_get()), which ib_core waits for after the last user
 * object has gone (a deregistration leaves a queued job, or a running
 * one if it was killed, its pin and umem behind). A job stalled in its
 * memory's fault stalls that
 * unregistration with it, as a QP stalled in its own fault does: the
 * memory's owner ends it (its FUSE server answers, or dies), or an
 * administrator (aborting the FUSE connection, /sys/fs/fuse/connections/
 * N/abort, fails the fault). Process context.
 */
void sroce_map_fault_later(struct sroce_map *map, u64 va, u64 len,
			   bool write)
{
	struct sroce_odp_later *later;
	struct sroce_odp_range *r;
	bool queue = false;
	unsigned int i;

	if (map->type != SROCE_MAP_USER || !map->pin->odp || !len)
		return;
	later = &map->pin->later;
	len = min_t(u64, len, SROCE_ODP_LATER_MAX);
	spin_lock(&later->lock);
	for (i = 0; i < later->nranges; i++) {
		r = &later->ranges[i];
		if (r->map == map && va >= r->va && va - r->va < r->len &&
		    len <= r->len - (va - r->va) && (r->write || !write))
			goto out;
	}
	if (later->nranges == SROCE_ODP_LATER_RANGES)
		goto out;
	if (!later->busy) {
		if (!sroce_odp_later_hold(map->pin))
			goto out;
		later->busy = true;
		queue = true;
	}
	sroce_map_keep(map);
	later->ranges[later->nranges++] = (struct sroce_odp_range){
		.map = map, .va = va, .len = len, .write = write };
out:
	spin_unlock(&later->lock);
	if (!queue)
		return;
	sroce_count(to_sdev(map->pin->ibdev), SROCE_CNT_ODP_LATER_JOBS);
	sroce_dbg_dev(to_sdev(map->pin->ibdev),
		      "key %#x: %#llx+%#llx not present, faulted in beside\n",
		      map->key, va, len);
	queue_work(sroce_odp_later_wq, &later->work);
}

/**
 * sroce_ahead_init - set up a responder's faulting ahead
 * @ahead: it, zeroed
 * @ibdev: the device of its QP
 * @ku: the QP's user, whose count of jobs bounds them; NULL for a kernel
 *      consumer's QP
 */
void sroce_ahead_init(struct sroce_ahead *ahead, struct ib_device *ibdev,
		      struct sroce_kmem_user *ku)
{
	int i;

	for (i = 0; i < SROCE_AHEAD_JOBS; i++) {
		INIT_WORK(&ahead->job[i].work, sroce_ahead_work);
		ahead->job[i].ibdev = ibdev;
		ahead->job[i].ku = ku;
	}
}

/**
 * sroce_ahead_reset - forget the stream (the QP's messages start anew)
 * @ahead: it, under the QP's lock
 *
 * Any context; a job queued goes on and drops its own map.
 */
void sroce_ahead_reset(struct sroce_ahead *ahead)
{
	ahead->map_id = 0;
	ahead->msg_end = 0;
}

/**
 * sroce_ahead_stop - cancel a responder's faulting ahead, for good
 * @ahead: it; the QP's engine does not run any more
 *
 * For the QP's destroy, which frees the jobs: waits for those running
 * (the QP's own memory's faults); lets go of the map of a job that did
 * not run (taken off the queue without a worker, however full the queue
 * is). A job that ran cleared its map itself. Process context: a user's
 * system call, its uverbs file's release, a device's unregistration, or
 * for a kernel QP its ULP's; never the engine.
 */
void sroce_ahead_stop(struct sroce_ahead *ahead)
{
	int i;

	for (i = 0; i < SROCE_AHEAD_JOBS; i++) {
		struct sroce_ahead_job *job = &ahead->job[i];

		if (cancel_work_sync(&job->work)) {
			sroce_ahead_unhold(job);
			sroce_map_unkeep(job->map);
			job->map = NULL;
		}
	}
	sroce_ahead_reset(ahead);
}

/*
 * A speculative job: the next message, as long as this one but at most
 * SROCE_AHEAD_MAX, for messages of SROCE_AHEAD_MIN or more (a small one
 * has few pages to fault, fewer than a job costs).
 */
#define SROCE_AHEAD_MIN		SZ_64K
#define SROCE_AHEAD_MAX		SZ_4M

/**
 * sroce_map_fault_ahead - make present what a message, and the next, reach
 * @ahead: the responder's state for this direction, under the QP's lock
 * @map: a map from sroce_mem_get() whose range covers [va, va + len)
 * @va: the message's first byte
 * @len: its bytes
 * @write: the message writes
 *
 * For an ODP map, at a message's first packet: fault in the first 2 MiB
 * of the message now, with one fault instead of one per page. Then, if
 * the message continues the last one through the same map (a stream), is
 * at least SROCE_AHEAD_MIN long, and the map is an MR's ODP range (not a
 * window, whose invalidation does not wait for its users), queue a job
 * that faults in, beside the engine while this message is copied, the
 * range the next message of the stream would reach, clipped to the map;
 * those pages count as prefetched, the rest as faults. The job keeps the
 * map but holds no access while it waits in the queue (sroce_map_keep()),
 * where other users' stalled jobs may keep it for long: a deregistration
 * or re-registration does not wait for it, and it does nothing once its
 * turn comes (odp_jobs_retired). The MR counts the jobs queued and those
 * that ran (struct sroce_pin). Through implicit
 * ODP, where the consumer named no memory, the job goes only as far as
 * the range is private anonymous memory (sroce_odp_private_len()).
 * Anything else needs nothing. Only a hint: what cannot be had is faulted
 * (or refused) by the copies as usual.
 *
 * A job of the last message that has not started is cancelled (this
 * message's first 2 MiB are faulted in here, the rest by its copies). One
 * under way is never waited for: the engine must not wait for a job,
 * which may wait in its fault for as long as the memory's owner likes
 * (sroce_odp_wq). It runs on, beside this message's faults of the same
 * pages (a page both make present counts as a fault and as prefetched),
 * and the new job takes another slot of @ahead; with every slot's job
 * still running, this message queues none (odp_ahead_busy). Nor does it
 * when the QP's user has SROCE_ODP_USER_AHEAD jobs queued or running on
 * all devices, or all users SROCE_ODP_AHEAD_JOBS (odp_ahead_refused; see
 * sroce_odp_wq): a user whose memory stalls its jobs' faults holds that
 * many workers, no more.
 * May sleep (the faults).
 */
void sroce_map_fault_ahead(struct sroce_ahead *ahead, struct sroce_map *map,
			   u64 va, u64 len, bool write)
{
	u64 end = va + len, map_end = map->iova + map->length;
	struct sroce_ahead_job *job = NULL;
	bool stream;
	int i;

	if (map->type != SROCE_MAP_USER || !map->pin->odp || !len)
		return;
	for (i = 0; i < SROCE_AHEAD_JOBS; i++) {
		struct sroce_ahead_job *j = &ahead->job[i];

		/*
		 * Not started: it will not run, its counts and map are ours
		 * to drop.
		 */
		if (cancel_work(&j->work)) {
			sroce_ahead_unhold(j);
			sroce_map_unkeep(j->map);
			j->map = NULL;
		}
		/*
		 * Free once no run of it needs its fields: pairs with the
		 * release in sroce_ahead_work().
		 */
		if (!job && !smp_load_acquire(&j->map))
			job = j;
	}
	stream = ahead->map_id == sroce_map_id(map) && ahead->msg_end == va;
	ahead->map_id = sroce_map_id(map);
	ahead->msg_end = end;
	sroce_odp_fault_ahead(map, va, len, write, false);
	if (!stream || len < SROCE_AHEAD_MIN || map->window || end >= map_end)
		return;
	if (!job) {
		sroce_count(to_sdev(map->pin->ibdev), SROCE_CNT_ODP_AHEAD_BUSY);
		return;
	}
	if (!sroce_ahead_hold(job))
		return;
	sroce_map_keep(map);
	job->map = map;
	job->va = end;
	job->len = min3(len, map_end - end, (u64)SROCE_AHEAD_MAX);
	job->write = write;
	atomic64_inc(&map->pin->ahead_queued);
	queue_work(sroce_odp_wq, &job->work);
}

/* Does @key name a memory window (rather than an MR or nothing)? */
static bool sroce_key_is_mw(struct sroce_dev *sdev, u32 key)
{
	struct sroce_mem *mem;
	bool mw;

	rcu_read_lock();
	mem = sroce_mem_find(sdev, key);
	mw = mem && mem->kind == SROCE_MEM_MW && READ_ONCE(mem->key) == key;
	rcu_read_unlock();
	return mw;
}

/*
 * Make an ODP range's pages present for the engine: faulted in (for
 * writing if @write), or with @fault false only those the CPU has now.
 */
static int sroce_odp_prefetch(struct sroce_map *map, u64 va, u64 len,
			      bool write, bool fault)
{
	u64 uva = sroce_odp_uva(map, va);
	u64 bits = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);

	while (len) {
		u64 n = min_t(u64, len, SROCE_PREFETCH_CHUNK -
				       (uva & (SROCE_PREFETCH_CHUNK - 1)));
		struct ib_umem_odp *odp = sroce_odp_get_umem(map->pin, uva);
		unsigned int before, after;
		int ret;

		if (IS_ERR(odp))
			return -EFAULT;
		mutex_lock(&odp->umem_mutex);
		before = sroce_odp_present(odp, uva, n, bits);
		mutex_unlock(&odp->umem_mutex);
		ret = sroce_odp_map(odp, uva, n, bits, fault);
		if (ret >= 0) {
			/* What became present (NO_FAULT skips what is not). */
			after = sroce_odp_present(odp, uva, n, bits);
			mutex_unlock(&odp->umem_mutex);
			if (after > before) {
				atomic64_add(after - before,
					     &map->pin->prefetched);
				sroce_count_add(to_sdev(odp->umem.ibdev),
						SROCE_CNT_ODP_PREFETCHED,
						after - before);
			}
		}
		sroce_odp_put_umem(map->pin);
		if (ret < 0) {
			sroce_dbg_dev(to_sdev(map->pin->umem->ibdev),
				      "key %#x: prefetch of user address %#llx+%#llx failed (%d)\n",
				      map->key, uva, n, ret);
			return -EFAULT;
		}
		uva += n;
		len -= n;
		/* A range may be 2^40 bytes: a process killed stops here. */
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

/**
 * sroce_advise_mr - ibv_advise_mr(): prefetch ranges of ODP MRs
 * @pd: the PD the lkeys must be in
 * @advice: PREFETCH (readable), PREFETCH_WRITE (writable) or
 *          PREFETCH_NO_FAULT (what the CPU has mapped now, nothing faulted)
 * @flags: IB_UVERBS_ADVISE_MR_FLAG_FLUSH (ib_uverbs refuses others); the
 *         work is always done before returning, so it is always honoured
 * @sg_list: the ranges, by lkey
 * @num_sge: how many
 * @attrs: unused
 *
 * Every SGE is checked before anything is done.
 * Return: 0; -EOPNOTSUPP for another advice; -ENOENT for an lkey that names
 * no MR (or one that is not ODP); -EINVAL for a memory window's key;
 * -EPERM for an MR of another PD, or PREFETCH_WRITE of an MR without local
 * write; -EFAULT for a range outside its MR, or memory that cannot be
 * faulted in; -ENOMEM when no memory is left for the list of maps;
 * -EINTR when the process is killed before it is done.
 */
int sroce_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct sroce_dev *sdev = to_sdev(pd->device);
	bool write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	struct sroce_map **maps;
	int err = 0;
	u32 i;

	switch (advice) {
	case IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH:
	case IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE:
	case IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT:
		break;
	default:
		return -EOPNOTSUPP;
	}
	maps = kcalloc(num_sge, sizeof(*maps), GFP_KERNEL);
	if (!maps)
		return -ENOMEM;
	for (i = 0; i < num_sge; i++) {
		struct sroce_map *map;

		map = sroce_mem_get(sdev, pd, 0, sg_list[i].lkey,
				    sg_list[i].addr, sg_list[i].length,
				    write ? IB_ACCESS_LOCAL_WRITE : 0);
		if (IS_ERR(map)) {
			switch (PTR_ERR(map)) {
			case -ENOENT:
				err = sroce_key_is_mw(sdev, sg_list[i].lkey) ?
					      -EINVAL : -ENOENT;
				break;
			case -ERANGE:
				err = -EFAULT;
				break;
			default: /* -EPERM: PD, -EACCES: not writable */
				err = -EPERM;
				break;
			}
			goto out;
		}
		maps[i] = map;
		if (map->type != SROCE_MAP_USER || !map->pin->odp) {
			err = -ENOENT;
			goto out;
		}
	}
	for (i = 0; i < num_sge && !err; i++)
		if (sg_list[i].length)
			err = sroce_odp_prefetch(maps[i], sg_list[i].addr,
						 sg_list[i].length, write,
						 fault);
out:
	for (i = 0; i < num_sge; i++)
		if (maps[i])
			sroce_map_put(maps[i]);
	kfree(maps);
	return err;
}
