/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: memory objects (MRs and windows) and their translations, private
 * to the memory files: sroce_mem.c, sroce_mr.c, sroce_odp.c, sroce_mw.c.
 * sroce_verbs.c includes it too, for the device ops: the memory verbs,
 * struct sroce_mw's size, and what query_device reports of memory. The
 * rest of the driver sees sroce_mem_api.h.
 * See "Memory keys and translation" in Documentation/sroce.md.
 */
#ifndef SROCE_MEM_H
#define SROCE_MEM_H

#include <linux/iosys-map.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "sroce_kmem.h"
#include "sroce_mem_api.h"
#include "sroce_param.h"

struct dma_buf;
struct sroce_dev;

/*
 * A dma-buf's memory as MR backing (sroce_dmabuf.c), built when the kernel
 * has dma-bufs: without it the reg_user_mr_dmabuf op fails with EOPNOTSUPP
 * (the stubs below), as ib_core answers a device without the op.
 */
#if IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
#define SROCE_DMABUF 1
#else
#define SROCE_DMABUF 0
#endif

/*
 * Keys: a 24-bit index, then an 8-bit tag (random, or for a window the
 * consumer's, ibv_inc_rkey()). The index is the entry's position in the
 * memory table, drawn at random (sroce_mem_add_key()), not a counter a
 * peer could count through: all 32 bits of a key are unpredictable, two
 * keys tell nothing of each other, and a freed key's index is not handed
 * out again for at least 2^23 - 2^21 registrations.
 */
#define SROCE_KEY_TAG_BITS	8
#define SROCE_KEY_INDEX_BITS	(32 - SROCE_KEY_TAG_BITS)

static inline u32 sroce_key_index(u32 key)
{
	return key >> SROCE_KEY_TAG_BITS;
}

/*
 * Debug lines of an MR or a window of @sdev (see sroce_dbg_dev()), named
 * by the table index of @key, which every key the object has had shares:
 * mr#N, mw#N.
 */
#define sroce_dbg_mr(sdev, key, fmt, ...) \
	ibdev_dbg(&(sdev)->ibdev, "mr#%u: " fmt, sroce_key_index(key), \
		  ##__VA_ARGS__)

#define sroce_dbg_mw(sdev, key, fmt, ...) \
	ibdev_dbg(&(sdev)->ibdev, "mw#%u: " fmt, sroce_key_index(key), \
		  ##__VA_ARGS__)

/* Ranges an ODP range's later job holds queued (struct sroce_odp_later). */
#define SROCE_ODP_LATER_RANGES	4
/* Pages whose faults it could not make that it remembers. */
#define SROCE_ODP_LATER_NOTES	4
/*
 * Bytes it faults in for one range at most: the rest of a longer message
 * waits for the access that finds it missing.
 */
#define SROCE_ODP_LATER_MAX	SZ_4M

/**
 * struct sroce_odp_range - bytes an access that could not wait needs
 * @map: the access's map, kept (sroce_map_keep()), not an access: the job
 *       uses it only while it faults the range in, if the map has not
 *       been retired meanwhile (sroce_map_use_kept())
 * @va: the first byte, an address of @map
 * @len: bytes, at most SROCE_ODP_LATER_MAX
 * @write: faulted in for writing
 */
struct sroce_odp_range {
	struct sroce_map *map;
	u64 va;
	u64 len;
	bool write;
};

/**
 * struct sroce_odp_note - a page an ODP range's later job could not have
 * @page: its user address >> PAGE_SHIFT
 * @when: when the job found so (jiffies, 64 bits: never seen valid again
 *        after a wrap): the note expires SROCE_ODP_NOTE_TTL later
 * @write: for writing (else for reading)
 * @set: the note holds a page
 */
struct sroce_odp_note {
	unsigned long page;
	u64 when;
	bool write;
	bool set;
};

/**
 * struct sroce_odp_later - an ODP range's job for accesses that could not
 *                          wait: it faults in the bytes they name
 * @work: the job, on a workqueue of such jobs (sroce_odp.c)
 * @lock: protects the fields below (process context)
 * @busy: the job is queued or running; it then holds the pin, the device,
 *        and a count of its user's jobs (sroce_kmem_job_start()), but no
 *        access to any map: a queued job holds up no retirement
 * @nranges: entries of @ranges
 * @ranges: what to fault in, in the order the accesses asked
 * @next_note: the entry of @notes to fill next (the oldest)
 * @notes: pages the job could not fault in (nothing mapped there, not
 *         writable for a write), by access kind: an access of that kind
 *         that finds such a page missing fails as a faulting access would
 *         have, rather than wait again, and takes the note; a note also
 *         goes when a job faults its page in for that kind after all, or,
 *         the oldest, for a new one
 */
struct sroce_odp_later {
	struct work_struct work;
	spinlock_t lock; /* see above */
	bool busy;
	unsigned int nranges;
	struct sroce_odp_range ranges[SROCE_ODP_LATER_RANGES];
	unsigned int next_note;
	struct sroce_odp_note notes[SROCE_ODP_LATER_NOTES];
};

/**
 * struct sroce_pin - what a user MR's addresses reach: pinned user pages,
 *                    an on-demand paging range, or a dma-buf's memory
 * @ref: held by each map that translates through them
 * @ibdev: the device whose MRs use it
 * @umem: the pinned memory (umem->address, ->length: the user range); NULL
 *        for a dma-buf
 * @odp: an ODP MR's range (IB_ACCESS_ON_DEMAND; then @umem is its umem and
 *       @pages is NULL): nothing is pinned, pages are faulted in when an
 *       access needs them and dropped when the MMU notifier invalidates them
 * @implicit: implicit ODP (the whole address space)
 * @chunked: an ODP range reached through children (implicit ODP, and an
 *           explicit range of more than one chunk): @odp is an implicit
 *           root whose umem address and length are the range, and
 *           @children holds a child umem per SROCE_ODP_CHILD_SHIFT chunk
 *           an access reached, for chunks where the process has memory
 *           mapped, at most SROCE_ODP_MAX_CHILDREN of them; so a range's
 *           page lists cost the kernel only for chunks in use. The pin
 *           holds the root's mm (mmgrab()), which ib_core's root does not
 * @children: chunk index -> struct ib_umem_odp
 * @child_rwsem: held for reading by each access through a child, for
 *               writing to make or free one (so none is freed under an
 *               access)
 * @nchildren: entries of @children
 * @evict_next: the chunk index from which to look for a child to free when
 *              no child is idle
 * @dmabuf: a dma-buf MR's buffer (a reference: the buffer lives while the
 *          pin does, whatever its owner closes); then @umem and @odp are
 *          NULL and @vaddr is where the range is
 * @vmap: the dma-buf's kernel mapping (dma_buf_vmap()), held with CPU
 *        access begun (dma_buf_begin_cpu_access()) until the pin goes
 * @vaddr: a dma-buf's range: the kernel address of its first page
 * @dmabuf_offset: a dma-buf's range: its first byte's offset in the buffer
 * @offset: the range's offset within its first page
 * @npages: entries of @pages (a dma-buf: the pages of its kernel mapping,
 *          which is of the whole buffer)
 * @pages: every page of the range, in order (NULL for ODP and dma-buf)
 * @held: a pinned range's pages of memory held: all of each folio a page
 *        of @pages is in (a transparent huge page's 512, a hugetlb page's
 *        512 or 262144), which no part of is freed while one of its pages
 *        is pinned; fixed when the range is pinned (sroce_pin_fill())
 * @faults: ODP: pages the data path faulted in (an access found its page
 *          missing, or not writable for a write)
 * @invalidated: ODP: mapped pages the MMU notifier took away
 * @prefetched: ODP: pages ibv_advise_mr() made present, and those a
 *              stream's fault-ahead made present for its next message
 * @ahead_queued: ODP: fault-ahead jobs queued for the range
 * @ahead_run: ODP: those of them that ran (the others were cancelled, or
 *             found their map retired when their turn came)
 * @later: ODP: faulting in, beside, what an access that may not wait
 *         found missing (SROCE_NO_FAULT)
 * @release: releases the pin from its user's work item when its last
 *           reference went where nothing may wait for that
 *           (sroce_pin_put_async())
 * @kmem: the kernel memory its user made for it, charged: @pages, an ODP
 *        range's page lists (its children's as they come and go), the
 *        page tables of a dma-buf's kernel mapping
 *
 * The ODP counts are of this pin: a re-registration with a new translation
 * starts them anew ("rdma resource show mr", sroce_fill_res_mr_entry()).
 */
struct sroce_pin {
	struct kref ref;
	struct ib_device *ibdev;
	struct ib_umem *umem;
	struct ib_umem_odp *odp;
	bool implicit;
	bool chunked;
	struct xarray children;
	struct rw_semaphore child_rwsem; /* see above */
	unsigned int nchildren;
	unsigned long evict_next;
	struct dma_buf *dmabuf;
	struct iosys_map vmap;
	void *vaddr;
	u64 dmabuf_offset;
	unsigned int offset;
	unsigned long npages;
	struct page **pages;
	unsigned long held;
	atomic64_t faults;
	atomic64_t invalidated;
	atomic64_t prefetched;
	atomic64_t ahead_queued;
	atomic64_t ahead_run;
	struct sroce_odp_later later;
	struct sroce_kmem_release release;
	struct sroce_kmem kmem;
};

/* Pages a fast-registration MR may map (max_fast_reg_page_list_len). */
#define SROCE_MAX_FAST_REG_PAGES 512

/* What a map's addresses are. */
enum sroce_map_type {
	SROCE_MAP_USER,		/* pinned user memory, through @pin */
	SROCE_MAP_DMA,		/* a kernel PD's DMA MR: every kernel address */
	SROCE_MAP_FAST,		/* a fast registration: kernel pages, @pages */
	SROCE_MAP_NULL,		/* a null MR: writes discarded, reads zero */
};

/**
 * struct sroce_map - everything an access through an MR's key needs, as
 *                    one immutable snapshot
 * @ref: held by the MR while it is the MR's map, and by each access using
 *       it (a request sees one map from start to end, never a mix); its
 *       last put lets go of @pin. Never held by a job waiting in a queue:
 *       a retirement waits for everything @ref counts (sroce_map_wait())
 * @kept: the map's memory: one for @ref while it is above zero, and one
 *        for each job that waits in a queue to use the map
 *        (sroce_map_keep()); the last frees the map
 * @rcu: the map's memory outlives lookups that found it under RCU
 * @id: unique among maps ever made: a message of several packets, which
 *      looks its key up for each, must find the map its first packet found
 * @key: the key the map was published under; a lookup by another key (an
 *       older key of a fast-registration MR or of a window) never gets it
 * @type: what the addresses are
 * @pd: the PD the key is valid in
 * @access: IB_ACCESS_* granted
 * @iova: the first byte's address as seen by the key's users
 * @length: bytes (@iova and @length bound every access)
 * @base: the address that translates to the start of @pin's range: @iova
 *        for an MR; for a window over part of an MR, @iova less the
 *        window's offset into the MR
 * @pin: SROCE_MAP_USER: the pages (pinned, ODP or a dma-buf's)
 * @window: a window's view of an MR's map (sroce_map_window())
 * @published: an MR's map, while the MR publishes it (and holds a
 *             reference for that): one of the fields that change,
 *             under the MR's lock (sroce_mr_publish())
 * @orphaned: set by a retirement that stopped waiting for the map's
 *            accesses (its process killed, sroce_map_wait()), or by a
 *            window's unbind in the engine (sroce_map_orphan()), so that
 *            whichever access drops the map last, in some QP's engine
 *            perhaps, lets go of the pin from a work item
 *            (sroce_pin_put_async())
 * @retired: set when a retirement begins to wait (sroce_map_wait()), or
 *           by a window's unbind (sroce_map_orphan()): a job that kept the
 *           map then does not use it (sroce_map_use_kept())
 * @page_shift: SROCE_MAP_FAST: log2 of the page size
 * @first_offset: SROCE_MAP_FAST: @iova's offset within the first page
 * @npages: SROCE_MAP_FAST: entries of @pages
 * @pages: SROCE_MAP_FAST: each page's kernel address (virtual DMA), the
 *         first holding @iova
 *
 * A map never changes (but for @published, @orphaned and @retired):
 * ibv_rereg_mr publishes a new one (sharing the pin when the translation
 * stays) and drops the MR's reference on the old one.
 */
struct sroce_map {
	struct kref ref;
	refcount_t kept;
	struct rcu_head rcu;
	u64 id;
	u32 key;
	enum sroce_map_type type;
	struct ib_pd *pd;
	int access;
	u64 iova;
	u64 length;
	u64 base;
	struct sroce_pin *pin;
	bool window;
	bool published;
	bool orphaned;
	bool retired;
	unsigned int page_shift;
	unsigned int first_offset;
	u32 npages;
	u64 pages[];
};

enum sroce_mem_state {
	SROCE_MEM_VALID,
	SROCE_MEM_INVALID,	/* a fast-registration MR not registered */
	SROCE_MEM_FREE,
};

/* What a memory table entry is. */
enum sroce_mem_kind {
	SROCE_MEM_MR,
	SROCE_MEM_MW,
};

/**
 * struct sroce_mem - an entry of the device's memory table (sdev->mem_xa):
 *                    what every key names
 * @kind: what contains it
 * @key: the key lookups match: for an MR its lkey, or for a
 *       fast-registration MR the key its last IB_WR_REG_MR gave it
 *       (consumers change ibmr.lkey/rkey before they post it)
 * @state: VALID while keys may be used
 * @map: the current translation (RCU-published, replaced as a whole)
 *
 * The containing object is freed after an RCU grace period, so a lookup
 * under rcu_read_lock() may read these fields and take a map reference.
 */
struct sroce_mem {
	enum sroce_mem_kind kind;
	u32 key;
	enum sroce_mem_state state;
	struct sroce_map __rcu *map;
};

/**
 * struct sroce_mr - a memory region
 * @ibmr: ib_core's MR (lkey, rkey, pd, iova, length)
 * @sdev: the device whose memory table holds @mem
 * @mem: its memory table entry (key, state, map)
 * @lock: serialises what replaces @mem.map (registration, rereg, fast
 *        registration, dereg) and a bind's look at it
 * @rcu: frees the MR after lookups under RCU are done with it
 * @fast_pages: fast-registration MRs: the page list ops.map_mr_sg builds
 * @fast_npages: its entries
 * @fast_max: its room
 * @fast_offset: the mapped list's offset into its first page
 * @num_mw: windows bound to it (it cannot be deregistered or re-registered
 *          while there are any)
 * @nrereg: successful re-registrations, under @lock
 */
struct sroce_mr {
	struct ib_mr ibmr;
	struct sroce_dev *sdev;
	struct sroce_mem mem;
	struct mutex lock; /* see above */
	struct rcu_head rcu;
	u64 *fast_pages;
	u32 fast_npages;
	u32 fast_max;
	unsigned int fast_offset;
	atomic_t num_mw;
	unsigned int nrereg;
};

/**
 * struct sroce_mw_ent - a memory window's table entry
 * @mem: key, state (VALID while bound), map (a view of the bound MR)
 * @lock: serialises bind, invalidation and deallocation
 * @type: IB_MW_TYPE_1 or IB_MW_TYPE_2
 * @pd: the window's PD
 * @qpn: type 2 while bound: the only QP its key works through
 * @mr: the MR it is bound to, or NULL
 * @rcu: lookups under RCU may still read the entry after deallocation
 *
 * Apart from struct ib_mw, which ib_core frees without an RCU grace period.
 */
struct sroce_mw_ent {
	struct sroce_mem mem;
	spinlock_t lock; /* see above */
	enum ib_mw_type type;
	struct ib_pd *pd;
	u32 qpn;
	struct sroce_mr *mr;
	struct rcu_head rcu;
};

struct sroce_mw {
	struct ib_mw ibmw;
	struct sroce_mw_ent *ent;
};

/* Implicit ODP: the whole address space, seen at its own addresses. */
static inline bool sroce_odp_is_implicit(u64 start, u64 length, int access)
{
	return (access & IB_ACCESS_ON_DEMAND) && !start && length == U64_MAX;
}

/* sroce_mem.c */
int sroce_mem_add_key(struct sroce_dev *sdev, struct sroce_mem *mem);
struct sroce_mem *sroce_mem_find(struct sroce_dev *sdev, u32 key);
void sroce_mem_del(struct sroce_dev *sdev, struct sroce_mem *mem);
void sroce_copy_paged(void *addr, void *buf, u64 len, bool to_mem);
void sroce_map_retire(struct sroce_map *map);
void sroce_map_orphan(struct sroce_map *map);
bool sroce_map_hold_live(struct sroce_map *map);
void sroce_map_hold_old(struct sroce_map *map);
void sroce_map_retire_held(struct sroce_map *map);
void sroce_map_keep(struct sroce_map *map);
bool sroce_map_use_kept(struct sroce_map *map);
void sroce_map_unkeep(struct sroce_map *map);
struct sroce_map *sroce_map_alloc(enum sroce_map_type type, struct ib_pd *pd,
				  int access, u64 iova, u64 length,
				  struct sroce_pin *pin, u32 npages);
struct sroce_map *sroce_map_window(const struct sroce_map *mr_map,
				   struct ib_pd *pd, int access, u64 iova,
				   u64 addr, u64 length);

/* sroce_mr.c */
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *sroce_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access, struct ib_udata *udata);
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata);
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct sroce_map *sroce_mr_bind_get(struct sroce_dev *sdev, struct ib_pd *pd,
				    u32 lkey, u64 addr, u64 length,
				    struct sroce_mr **mrp);
struct sroce_pin *sroce_pin_alloc(struct ib_device *ibdev,
				  struct sroce_kmem_user *ku);
void sroce_pin_free(struct sroce_pin *pin);
void sroce_pin_put(struct sroce_pin *pin);
void sroce_pin_put_async(struct sroce_pin *pin);
int sroce_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

/* sroce_mw.c */
int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int sroce_dealloc_mw(struct ib_mw *ibmw);
int sroce_mw_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
			u32 key);

/* sroce_dmabuf.c */
#if SROCE_DMABUF
struct sroce_pin *sroce_dmabuf_get(struct ib_device *ibdev, u64 offset,
				   u64 length, int fd, int access,
				   struct sroce_kmem_user *ku);
void sroce_dmabuf_release(struct sroce_pin *pin);
int sroce_dmabuf_pin_access(const struct sroce_pin *pin, int access);
const char *sroce_dmabuf_exporter(const struct sroce_pin *pin);
#else
/* Without dma-bufs no registration makes a dma-buf pin. */
static inline struct sroce_pin *sroce_dmabuf_get(struct ib_device *ibdev,
						 u64 offset, u64 length,
						 int fd, int access,
						 struct sroce_kmem_user *ku)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline void sroce_dmabuf_release(struct sroce_pin *pin)
{
}

static inline int sroce_dmabuf_pin_access(const struct sroce_pin *pin,
					  int access)
{
	return -EOPNOTSUPP;
}

static inline const char *sroce_dmabuf_exporter(const struct sroce_pin *pin)
{
	return "";
}
#endif /* SROCE_DMABUF */

/* sroce_odp.c */
#if SROCE_ODP
struct sroce_pin *sroce_odp_get(struct ib_device *ibdev, u64 start,
				u64 length, int access,
				struct sroce_kmem_user *ku);
void *sroce_odp_lock(struct sroce_map *map, u64 va, u64 len, bool write,
		     enum sroce_fault fault, struct ib_umem_odp **locked);
void sroce_odp_unlock(struct sroce_map *map, struct ib_umem_odp *odp);
int sroce_odp_copy(struct sroce_map *map, u64 va, void *buf, u64 len,
		   bool to_mem, enum sroce_fault fault);
u64 sroce_odp_pages_mapped(struct sroce_pin *pin);
int sroce_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);
#else
/*
 * Without ODP, registration and advice fail; no pin is an ODP range, so
 * the copy paths never call the others.
 */
static inline struct sroce_pin *sroce_odp_get(struct ib_device *ibdev,
					      u64 start, u64 length,
					      int access,
					      struct sroce_kmem_user *ku)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline void *sroce_odp_lock(struct sroce_map *map, u64 va, u64 len,
				   bool write, enum sroce_fault fault,
				   struct ib_umem_odp **locked)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline void sroce_odp_unlock(struct sroce_map *map,
				    struct ib_umem_odp *odp)
{
}

static inline int sroce_odp_copy(struct sroce_map *map, u64 va, void *buf,
				 u64 len, bool to_mem, enum sroce_fault fault)
{
	return -EOPNOTSUPP;
}

static inline u64 sroce_odp_pages_mapped(struct sroce_pin *pin)
{
	return 0;
}

static inline int sroce_advise_mr(struct ib_pd *pd,
				  enum ib_uverbs_advise_mr_advice advice,
				  u32 flags, struct ib_sge *sg_list,
				  u32 num_sge,
				  struct uverbs_attr_bundle *attrs)
{
	return -EOPNOTSUPP;
}
#endif /* SROCE_ODP */

#endif /* SROCE_MEM_H */
