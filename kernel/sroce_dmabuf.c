// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: a dma-buf's memory as the backing of an MR (ibv_reg_dmabuf_mr()).
 *
 * sroce moves bytes with the CPU, so it needs the buffer in the kernel's
 * address space, not DMA addresses. ib_core's dma-buf umems
 * (ib_umem_dmabuf_get(), _get_pinned()) attach the buffer to the device's
 * dma_device, which a virtual-DMA device has not (dma_buf_dynamic_attach()
 * refuses a NULL device with a WARN), and an attachment maps the buffer for
 * a device's DMA: its scatterlist holds DMA addresses, and importers may
 * not touch its pages. The dma-buf way for the CPU is the kernel mapping,
 * dma_buf_vmap(), inside dma_buf_begin_cpu_access() and
 * dma_buf_end_cpu_access() ("CPU access" in drivers/dma-buf/dma-buf.c).
 *
 * A kernel mapping stays valid only as long as the exporter keeps the
 * pages where it points, and dma_buf_vmap() does not promise that by
 * itself: DRM's PRIME export of a TTM object (drm_gem_ttm_vmap(), nouveau,
 * radeon) maps without pinning, because importers attach first and the
 * attachment pins; sroce never attaches, so TTM could move or swap the
 * object out and leave the mapping on freed pages. So sroce maps only the
 * buffers of exporters whose pages stay put from allocation to release
 * (sroce_dmabuf_exporter_ok()): udmabuf (the memfd's pages, held from
 * UDMABUF_CREATE on) and the dma-heaps system heap (pages allocated at
 * DMA_HEAP_IOCTL_ALLOC, never moved); every other exporter gets
 * EOPNOTSUPP before anything is mapped.
 *
 * A dma-buf pin holds, from registration until its last map is gone: a
 * reference on the dma-buf (the owner may close every fd of it: the buffer
 * and the exporter's pages live on), its kernel mapping, and CPU access
 * begun for both directions. Copies and atomics then go through the
 * mapping as through a pinned MR's pages (sroce_map_copy()), the engine's
 * accesses included; there is nothing to invalidate (no attachment, no
 * move_notify), and a deregistration waits for the accesses under way
 * (sroce_map_retire()) before the mapping goes. The engine holds CPU
 * access on the buffer the whole time, as a NIC holds a pinned dma-buf MR
 * mapped, so other devices' access to it is the application's to order.
 */
#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "sroce_compat.h"
#include "sroce_mem.h"
#include "sroce.h"

MODULE_IMPORT_NS(DMA_BUF);

/*
 * What a dma-buf MR may grant: what ib_core lets a dma-buf registration ask
 * for (UVERBS_METHOD_REG_DMABUF_MR, the same on 6.1 and 6.12). No window
 * bind (IB_ACCESS_MW_BIND), no on-demand paging.
 */
#define SROCE_DMABUF_ACCESS	(IB_ACCESS_LOCAL_WRITE |		\
				 IB_ACCESS_REMOTE_READ |		\
				 IB_ACCESS_REMOTE_WRITE |		\
				 IB_ACCESS_REMOTE_ATOMIC |		\
				 IB_ACCESS_RELAXED_ORDERING)

/*
 * May @access be granted on @dmabuf? Only what a dma-buf MR can grant, and
 * write access only through a file opened for writing: a dma-buf fd is
 * read-only when its exporter made it so (a DRM PRIME fd without DRM_RDWR),
 * and mmap() of it refuses PROT_WRITE; neither a receive nor a peer writes
 * through an MR where its owner could not.
 */
static int sroce_dmabuf_access_ok(struct dma_buf *dmabuf, int access)
{
	if (access & ~SROCE_DMABUF_ACCESS)
		return -EINVAL;
	if (ib_access_writable(access) && !(dmabuf->file->f_mode & FMODE_WRITE))
		return -EACCES;
	return 0;
}

/**
 * sroce_dmabuf_pin_access - may a dma-buf pin's MR grant other access
 * @pin: a dma-buf pin
 * @access: IB_ACCESS_* of a re-registration
 *
 * Return: 0; -EINVAL for access a dma-buf MR cannot grant (windows,
 * on-demand paging), -EACCES for write access to a buffer opened read-only.
 */
int sroce_dmabuf_pin_access(const struct sroce_pin *pin, int access)
{
	return sroce_dmabuf_access_ok(pin->dmabuf, access);
}

/*
 * The exporters whose buffers keep their pages from allocation to release,
 * so that a kernel mapping of one stays right for as long as sroce holds
 * the buffer: each by its dma_buf.exp_name and the module it is built as,
 * where it is not built in (both are, as Kconfig bools, in 6.1 and 6.12).
 * The name alone is a string any exporter may pick; with the module it is
 * the one exporter. Not the CMA heaps: one is named after its CMA area
 * ("reserved" for the default one, a device tree node's name otherwise),
 * which says nothing of who exports, and none is built in the kernels
 * sroce builds for.
 */
static const struct sroce_dmabuf_exporter {
	const char *name;
	const char *module;
} sroce_dmabuf_exporters[] = {
	/* udmabuf.c: the memfd's pages, held from UDMABUF_CREATE on */
	{ "udmabuf", "udmabuf" },
	/* heaps/system_heap.c: pages of its own, allocated once */
	{ "system", "system_heap" },
};

/* Is @dmabuf's exporter one of sroce_dmabuf_exporters[]? */
static bool sroce_dmabuf_listed(const struct dma_buf *dmabuf)
{
	const char *module = dmabuf->owner ? module_name(dmabuf->owner) : NULL;
	const struct sroce_dmabuf_exporter *e;
	unsigned int i;

	if (!dmabuf->exp_name)
		return false;
	for (i = 0; i < ARRAY_SIZE(sroce_dmabuf_exporters); i++) {
		e = &sroce_dmabuf_exporters[i];
		if (!strcmp(dmabuf->exp_name, e->name) &&
		    (!module || !strcmp(module, e->module)))
			return true;
	}
	return false;
}

static bool sroce_dmabuf_is_udmabuf(const struct dma_buf *dmabuf)
{
	return !strcmp(dmabuf->exp_name, "udmabuf");
}

/*
 * May sroce map @dmabuf? Only a listed exporter's buffer (above), and only
 * where that exporter has a kernel mapping to give, one that does not
 * fail with a WARN (not udmabuf where sroce_udmabuf_vmap_warns()). Decided
 * before anything is mapped, so no other exporter's vmap is ever called:
 * dma_buf_vmap() WARNs on any failure of the exporter's, and a listed
 * one's fails only for want of memory (sroce_dmabuf_map()).
 */
static int sroce_dmabuf_exporter_ok(const struct dma_buf *dmabuf)
{
	if (!sroce_dmabuf_listed(dmabuf))
		return -EOPNOTSUPP;
	/* 6.1's udmabuf has no vmap. */
	if (!dmabuf->ops->vmap)
		return -EOPNOTSUPP;
	if (sroce_udmabuf_vmap_warns() && sroce_dmabuf_is_udmabuf(dmabuf))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * Does the kernel mapping of @pin's udmabuf show a page of a large folio
 * (a hugetlbfs page, a shmem THP)? 6.12's vmap_udmabuf() maps the first
 * page of each folio for every page of it (from 6.12.48 on, as before
 * 6.12.2): every 4 KiB of a huge page would show its first 4 KiB. A kernel
 * with "udmabuf: fix vmap missed offset page" maps them right, but from
 * here it cannot be told from one without, so a udmabuf over huge pages is
 * not mapped at all. The pages stay as they are (udmabuf holds them), so
 * one look at registration is enough.
 */
static bool sroce_dmabuf_maps_large_folio(const struct sroce_pin *pin)
{
	size_t off;

	for (off = 0; off < pin->dmabuf->size; off += PAGE_SIZE) {
		struct page *page = vmalloc_to_page(pin->vmap.vaddr + off);

		if (!page || folio_test_large(page_folio(page)))
			return true;
		cond_resched();
	}
	return false;
}

/*
 * Map @pin's dma-buf into the kernel and begin CPU access. Only memory the
 * CPU reaches with plain loads and stores: not an exporter's I/O memory
 * (a device's BAR), where every access would need the I/O accessors. A
 * task being killed maps nothing: vmalloc() gives up on a fatal signal,
 * and the exporter's vmap would fail with a WARN (the signal may still
 * come between here and there).
 */
static int sroce_dmabuf_map(struct sroce_pin *pin)
{
	struct dma_buf *dmabuf = pin->dmabuf;
	int err;

	if (fatal_signal_pending(current))
		return -EINTR;
	err = sroce_dma_buf_vmap(dmabuf, &pin->vmap);
	if (err)
		return err;
	err = -EOPNOTSUPP;
	if (pin->vmap.is_iomem)
		goto err_vunmap;
	if (sroce_dmabuf_is_udmabuf(dmabuf) &&
	    sroce_dmabuf_maps_large_folio(pin))
		goto err_vunmap;
	err = dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL);
	if (err)
		goto err_vunmap;
	pin->vaddr = pin->vmap.vaddr + (pin->dmabuf_offset - pin->offset);
	return 0;

err_vunmap:
	sroce_dma_buf_vunmap(dmabuf, &pin->vmap);
	return err;
}

/**
 * sroce_dmabuf_get - a dma-buf's range as a pin, mapped for the CPU
 * @ibdev: the device
 * @offset: the range's first byte in the buffer
 * @length: its bytes, not 0 (sroce_mr_check())
 * @fd: the dma-buf's file descriptor, in the caller's process
 * @access: IB_ACCESS_* of the registration
 * @ku: the user the pin's kernel memory is charged to (the page tables
 *      of the kernel mapping, which is of the whole buffer)
 *
 * The pin holds the buffer (its own reference: @fd may be closed at once),
 * its kernel mapping and CPU access until its last reference goes
 * (sroce_dmabuf_release()).
 * Return: the pin; or ERR_PTR(-EBADF) for an @fd that is not open, -EINVAL
 * for one that is not a dma-buf, a range past the buffer's end or access a
 * dma-buf MR cannot grant, -EACCES for write access to a buffer opened
 * read-only, -EOPNOTSUPP for an exporter not known to keep its pages in
 * place (sroce_dmabuf_exporter_ok()), one that gives the kernel no mapping
 * or maps I/O memory, and a udmabuf over huge pages, -ENOMEM, -EINTR for a
 * task being killed, or the exporter's error (CPU access may be
 * interrupted by a signal: -EINTR, -ERESTARTSYS).
 */
struct sroce_pin *sroce_dmabuf_get(struct ib_device *ibdev, u64 offset,
				   u64 length, int fd, int access,
				   struct sroce_kmem_user *ku)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct dma_buf *dmabuf;
	struct sroce_pin *pin;
	u64 end;
	int err;

	/* ERR_PTR(-EBADF), or -EINVAL for a file that is not a dma-buf */
	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return ERR_CAST(dmabuf);
	err = -EINVAL;
	if (check_add_overflow(offset, length, &end) || end > dmabuf->size)
		goto err_put;
	err = sroce_dmabuf_access_ok(dmabuf, access);
	if (err)
		goto err_put;
	err = sroce_dmabuf_exporter_ok(dmabuf);
	if (err)
		goto err_put;
	pin = sroce_pin_alloc(ibdev, ku);
	if (IS_ERR(pin)) {
		err = PTR_ERR(pin);
		goto err_put;
	}
	pin->dmabuf = dmabuf;
	pin->dmabuf_offset = offset;
	pin->offset = offset_in_page(offset);
	/*
	 * The kernel maps the whole buffer, whatever part of it the MR
	 * covers: its page table entries, 8 bytes a page.
	 */
	pin->npages = DIV_ROUND_UP_ULL(dmabuf->size, PAGE_SIZE);
	err = sroce_kmem_add(sdev, &pin->kmem,
			     array_size(pin->npages, sizeof(u64)));
	if (err)
		goto err_pin;
	err = sroce_dmabuf_map(pin);
	if (err)
		goto err_pin;
	return pin;

err_pin:
	sroce_kmem_end(sdev, &pin->kmem);
	kfree(pin);
err_put:
	dma_buf_put(dmabuf);
	return ERR_PTR(err);
}

/**
 * sroce_dmabuf_release - let go of a dma-buf pin's buffer
 * @pin: the pin, whose last reference is gone (sroce_pin_put())
 *
 * Ends CPU access, unmaps the buffer and drops the pin's reference on it:
 * the exporter frees it if nobody else holds it. Process context (the
 * exporter may take the buffer's reservation lock). The pin's own memory
 * is the caller's to free.
 */
void sroce_dmabuf_release(struct sroce_pin *pin)
{
	int err;

	err = dma_buf_end_cpu_access(pin->dmabuf, DMA_BIDIRECTIONAL);
	if (err)
		sroce_dbg_dev(to_sdev(pin->ibdev),
			      "dma-buf %s: end of CPU access: %d\n",
			      pin->dmabuf->exp_name, err);
	sroce_dma_buf_vunmap(pin->dmabuf, &pin->vmap);
	dma_buf_put(pin->dmabuf);
}

/**
 * sroce_dmabuf_exporter - who exported a dma-buf pin's buffer
 * @pin: a dma-buf pin
 *
 * Return: the exporter's name ("udmabuf" or "system"), for "rdma resource
 * show mr".
 */
const char *sroce_dmabuf_exporter(const struct sroce_pin *pin)
{
	return pin->dmabuf->exp_name ?: "unknown";
}
