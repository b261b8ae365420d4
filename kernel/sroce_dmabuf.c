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
 * So a dma-buf pin holds, from registration until its last map is gone: a
 * reference on the dma-buf (the owner may close every fd of it: the buffer
 * and the exporter's pages live on), its kernel mapping, and CPU access
 * begun for both directions. An exporter keeps a mapped buffer where the
 * mapping points until dma_buf_vunmap(), so nothing moves under an access
 * and there is nothing to invalidate (no attachment, no move_notify); a
 * deregistration waits for the accesses under way (sroce_map_retire())
 * before the mapping goes. Copies and atomics then go through the mapping
 * as through a pinned MR's pages (sroce_map_copy()), the engine's
 * accesses included; the engine holds CPU access on the buffer the whole
 * time, as a NIC holds a pinned dma-buf MR mapped, so other devices'
 * access to it is the application's to order.
 */
#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/slab.h>

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
 * Map @pin's dma-buf into the kernel and begin CPU access. Only memory the
 * CPU reaches with plain loads and stores: not an exporter's I/O memory
 * (a device's BAR), where every access would need the I/O accessors.
 */
static int sroce_dmabuf_map(struct sroce_pin *pin)
{
	struct dma_buf *dmabuf = pin->dmabuf;
	int err;

	/* No kernel mapping to be had (6.1's udmabuf has no vmap). */
	if (!dmabuf->ops->vmap)
		return -EOPNOTSUPP;
	err = sroce_dma_buf_vmap(dmabuf, &pin->vmap);
	if (err)
		return err;
	err = -EOPNOTSUPP;
	if (pin->vmap.is_iomem)
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
 * @ku: the user the pin's kernel memory is charged to (the kernel
 *      mapping's page tables)
 *
 * The pin holds the buffer (its own reference: @fd may be closed at once),
 * its kernel mapping and CPU access until its last reference goes
 * (sroce_dmabuf_release()).
 * Return: the pin; or ERR_PTR(-EBADF) for an @fd that is not open, -EINVAL
 * for one that is not a dma-buf, a range past the buffer's end or access a
 * dma-buf MR cannot grant, -EACCES for write access to a buffer opened
 * read-only, -EOPNOTSUPP for an exporter that gives the kernel no mapping
 * or maps I/O memory, -ENOMEM, or the exporter's error (CPU access may be
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
	err = -ENOMEM;
	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		goto err_put;
	kref_init(&pin->ref);
	pin->ibdev = ibdev;
	sroce_kmem_start(&pin->kmem, ku);
	pin->dmabuf = dmabuf;
	pin->dmabuf_offset = offset;
	pin->offset = offset_in_page(offset);
	pin->npages = DIV_ROUND_UP_ULL(pin->offset + length, PAGE_SIZE);
	/* The kernel mapping's page table entries, 8 bytes a page. */
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
 * Return: the exporter's name ("udmabuf"), for "rdma resource show mr".
 */
const char *sroce_dmabuf_exporter(const struct sroce_pin *pin)
{
	return pin->dmabuf->exp_name ?: "unknown";
}
