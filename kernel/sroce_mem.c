// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: access to memory through its keys.
 *
 * Every lkey and rkey, an MR's or a window's, is resolved by
 * sroce_mem_get() into the key's current struct sroce_map, with a
 * reference; the access then copies (sroce_map_copy()) or does its atomic
 * (sroce_map_atomic(), sroce_map_atomic_write()) through that one map and
 * drops it (sroce_map_put()). Maps never change once published: MRs
 * (sroce_mr.c) and windows (sroce_mw.c) replace theirs as a whole. An ODP
 * map's pages are faulted in as the access goes (sroce_odp.c). The keys
 * themselves are handed out here too (sroce_mem_add_key()). A list of
 * SGEs is copied key by key (sroce_copy_sges()).
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "sroce_mem.h"
#include "sroce_mem_api.h"
#include "sroce.h"

static void sroce_map_release(struct kref *ref)
{
	struct sroce_map *map = container_of(ref, struct sroce_map, ref);

	/*
	 * A map whose retirement stopped waiting may be dropped last by an
	 * access of any QP, under that QP's lock: a pin's release, which
	 * may wait for its owner (an ODP range's for the MMU notifier of its
	 * owner's process, a pinned range's for its page's lock), is not
	 * for that QP to wait for.
	 */
	if (READ_ONCE(map->orphaned))
		sroce_pin_put_async(map->pin);
	else
		sroce_pin_put(map->pin);
	sroce_map_unkeep(map);
}

/**
 * sroce_map_keep - keep a map for a job that waits in a queue to use it
 * @map: a map the caller holds (an access)
 *
 * Keeps the map's memory only, not its pages, and is no access: a
 * retirement does not wait for it. A job may wait in a queue behind any
 * user's work (a workqueue's active items can all be stalled in faults
 * of one user's memory), and a deregistration that waited for it would
 * wait as long as that user likes, unkillably at process exit (whose
 * SIGKILL is dequeued by then). When its turn comes the job uses the map
 * only through sroce_map_use_kept(). Drop with sroce_map_unkeep().
 */
void sroce_map_keep(struct sroce_map *map)
{
	refcount_inc(&map->kept);
}

/**
 * sroce_map_use_kept - become an access of a map kept for a job
 * @map: a map sroce_map_keep() kept
 *
 * Return: true, the caller then holding an access (sroce_map_put() it),
 * as sroce_mem_get() gives one; false if the map has gone, or a
 * retirement has begun to wait for it (its MR deregistered or
 * re-registered, its window deallocated): then the job leaves it alone.
 * Either a retirement sees this access and waits for it, or this sees the
 * retirement (the same pairing as sroce_mem_get()'s).
 */
bool sroce_map_use_kept(struct sroce_map *map)
{
	if (!kref_get_unless_zero(&map->ref))
		return false;
	/* Counted before the flag is read: pairs with sroce_map_wait(). */
	smp_mb__after_atomic();
	if (READ_ONCE(map->retired)) {
		sroce_map_put(map);
		return false;
	}
	return true;
}

/**
 * sroce_map_unkeep - drop what sroce_map_keep() took
 * @map: the map
 *
 * Any context. The last reference frees the map, after an RCU grace
 * period (lookups find maps under RCU).
 */
void sroce_map_unkeep(struct sroce_map *map)
{
	if (refcount_dec_and_test(&map->kept))
		kfree_rcu(map, rcu);
}

/* Drop a reference from sroce_mem_get(); process context. */
void sroce_map_put(struct sroce_map *map)
{
	kref_put(&map->ref, sroce_map_release);
}

/*
 * Waiting for a map's accesses to end. The map's one count holds the
 * accesses (a reference each: a packet's copy, an atomic, a prefetch, an
 * ODP job while it runs), the MR's reference while it publishes the map
 * (struct sroce_map.published), and SROCE_MAP_WAITER for each waiter: a
 * thread that waits for the accesses counts only its own kind, so two of
 * them (a dereg and an invalidation of one map) never wait for each other.
 * A job waiting in a queue is no access (sroce_map_keep()).
 */
/*
 * Past any count of accesses (one per thread at most, but for an advice's
 * SGEs, 4095 a call) and still room for 127 waiters in a refcount_t.
 */
#define SROCE_MAP_WAITER	BIT(24)

static void sroce_map_wait(struct sroce_map *map);

/*
 * Become a waiter of @map, which the caller knows is alive (a reference
 * held, or published under its MR's lock).
 */
static void sroce_map_hold(struct sroce_map *map)
{
	refcount_add(SROCE_MAP_WAITER, &map->ref.refcount);
}

static void sroce_map_unhold(struct sroce_map *map)
{
	if (refcount_sub_and_test(SROCE_MAP_WAITER, &map->ref.refcount))
		sroce_map_release(&map->ref);
}

/**
 * sroce_map_retire - drop the reference to a map that no key publishes any
 *                    more, once nothing else uses it
 * @map: the map, unpublished before the call (its key's state made invalid
 *       or free, or another map published in its place)
 *
 * Waits until every access that found @map is done: a packet's copy, an
 * atomic, a prefetch, an ODP job's fault of at most 4 MiB while the job
 * runs (one still queued does not count, and will not use @map:
 * sroce_map_use_kept()). None holds a map across packets. When it returns
 * no byte moves through @map, and none will: a lookup racing with it is
 * either counted here or sees the map unpublished (sroce_mem_get()).
 * Process context only, never the engine: an ODP access may wait on its
 * fault without bound (a FUSE file's), and so would this.
 */
void sroce_map_retire(struct sroce_map *map)
{
	sroce_map_hold(map);
	sroce_map_put(map);
	sroce_map_wait(map);
	sroce_map_unhold(map);
}

/**
 * sroce_map_orphan - mark a map let go of without a retirement
 * @map: the map, unpublished, which the caller holds and then puts
 *
 * For an unbind in the engine, which cannot wait for the accesses that
 * found the map: whichever of them drops it last releases the pin from a
 * work item (struct sroce_map.orphaned), and a job that kept the map
 * leaves it alone (struct sroce_map.retired). The caller's put orders
 * both before the last one.
 */
void sroce_map_orphan(struct sroce_map *map)
{
	WRITE_ONCE(map->retired, true);
	WRITE_ONCE(map->orphaned, true);
}

/**
 * sroce_map_hold_live - become a waiter of a map found under RCU
 * @map: the map (an invalidated fast registration's, which its MR may
 *       still publish)
 *
 * Under rcu_read_lock(). Then sroce_map_retire_held().
 * Return: false if @map was already being freed (nothing to wait for).
 */
bool sroce_map_hold_live(struct sroce_map *map)
{
	return refcount_add_not_zero(SROCE_MAP_WAITER, &map->ref.refcount);
}

/**
 * sroce_map_hold_old - become a waiter of the map an MR is about to
 *                      replace or let go of, under the MR's lock
 * @map: the map
 *
 * Then sroce_map_retire_held() after the MR dropped it.
 */
void sroce_map_hold_old(struct sroce_map *map)
{
	sroce_map_hold(map);
}

/**
 * sroce_map_retire_held - wait until no access uses a map the caller
 *                         waits on, then let go of it
 * @map: the map, unpublished or its key made invalid
 *
 * As sroce_map_retire(), for a map sroce_map_hold_old() or
 * sroce_map_hold_live() held.
 */
void sroce_map_retire_held(struct sroce_map *map)
{
	sroce_map_wait(map);
	sroce_map_unhold(map);
}

/* Whether any access uses @map (beyond its waiters and its MR). */
static bool sroce_map_in_use(struct sroce_map *map)
{
	unsigned int refs = refcount_read(&map->ref.refcount);

	/*
	 * The count first: an MR that let go of the map since was counted,
	 * which only makes this wait once more (it clears published, then
	 * drops its reference: sroce_mr_publish()).
	 */
	smp_rmb();
	return refs % SROCE_MAP_WAITER > READ_ONCE(map->published);
}

/*
 * Wait until no access uses @map. For user memory a process being killed
 * stops waiting: an ODP access may wait on its fault for as long as the
 * memory's owner likes, and the pin, which the map holds until its last
 * user drops it, keeps every page alive. But not a process that exits:
 * its SIGKILL was dequeued before exit_task_work() releases its uverbs
 * file, and a dying process takes no new signal, so there this wait is
 * as long as the accesses are. Hence what it waits for: only accesses
 * under way, each of which waits on nothing but faults of the map's own
 * memory (a packet's copy or atomic in the memory's own QP's engine, an
 * advice its own process made, an ODP job faulting that memory in); never
 * a job waiting in a queue behind other users' work, which keeps the map
 * without counting (sroce_map_keep()) and, seeing @map->retired, leaves
 * it alone. Kernel memory (a fast registration, a DMA MR) is the
 * consumer's to free once this returns: that wait is never cut short (its
 * accesses copy kernel memory and never wait).
 */
static void sroce_map_wait(struct sroce_map *map)
{
	bool killable = map->type == SROCE_MAP_USER;

	/* Jobs that kept the map no longer use it: sroce_map_use_kept(). */
	WRITE_ONCE(map->retired, true);
	/*
	 * Unpublished, and retired, before the users are counted: see
	 * sroce_mem_get() and sroce_map_use_kept().
	 */
	smp_mb();
	while (sroce_map_in_use(map) &&
	       !(killable && fatal_signal_pending(current)))
		usleep_range(20, 100);
	/*
	 * Killed with accesses still under way: the last of them lets go of
	 * the map, wherever it runs (struct sroce_map.orphaned). Set before
	 * the waiter's reference goes, which orders it before the last put.
	 */
	if (sroce_map_in_use(map))
		WRITE_ONCE(map->orphaned, true);
}

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
/*
 * A test's hold of an access. An access to pinned memory (or a dma-buf's)
 * holds its map for one packet's copy, microseconds, and waits for nothing
 * while it does: no user can hold it for longer, and a retirement killed
 * while one is under way, which orphans the map, is a race a test would
 * wait for in vain. In a kernel built for fault injection (the debug
 * kernel; not Debian's), root arms a hold by writing 1 to
 * /sys/kernel/debug/sroce/hold_map (0600): the next access that asks takes
 * it (the file reads 0 again) and keeps its map until a retirement gave up
 * waiting for it. Only 1 arms; any access of any user takes the hold, so a
 * test that arms it runs alone.
 *
 * Not the kernel's fault attributes nor fail_function: their should_fail()
 * first obeys the calling task's /proc/self/fail-nth, which any user sets
 * for its own threads, and a doorbell runs the responder in the user's
 * task; and fail_function draws its random number in its probe's int3
 * handler, which lockdep counts as NMI context (the crng's lock there is a
 * lockdep report).
 */

/* How long a test's hold keeps its map at most. */
#define SROCE_TEST_HOLD_MS	(60 * MSEC_PER_SEC)

static atomic_t sroce_hold_armed = ATOMIC_INIT(0);
static struct dentry *sroce_debugfs;

/**
 * sroce_mem_debugfs_init - sroce's debugfs directory, with the test's hold
 *
 * Nothing fails if debugfs does not have it: a test then finds no hold.
 */
void sroce_mem_debugfs_init(void)
{
	sroce_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_atomic_t("hold_map", 0600, sroce_debugfs,
				&sroce_hold_armed);
}

/**
 * sroce_mem_debugfs_exit - sroce's debugfs directory removed
 *
 * After every device is gone: no access can be in sroce_map_test_hold().
 */
void sroce_mem_debugfs_exit(void)
{
	debugfs_remove_recursive(sroce_debugfs);
}

/**
 * sroce_map_test_hold - keep an access's map for a test that asks so
 * @map: a map from sroce_mem_get(), held by a caller that may wait (a QP
 *       that may wait for its memory's faults, sroce_resp_fault())
 *
 * Where root armed the hold (hold_map 1, tests/src/orphan.h), the first
 * access to user memory to get here takes it and keeps @map until a
 * retirement stopped waiting for it (its process killed: @map->orphaned),
 * SROCE_TEST_HOLD_MS passed or the task running it is killed, then goes
 * on as any access that outlived its map's retirement. Process context.
 */
void sroce_map_test_hold(struct sroce_map *map)
{
	unsigned long end;

	/* A read first: no packet writes the shared word while unarmed. */
	if (map->type != SROCE_MAP_USER ||
	    atomic_read(&sroce_hold_armed) != 1 ||
	    atomic_cmpxchg(&sroce_hold_armed, 1, 0) != 1)
		return;
	end = jiffies + msecs_to_jiffies(SROCE_TEST_HOLD_MS);
	while (!READ_ONCE(map->orphaned) && time_before(jiffies, end) &&
	       !fatal_signal_pending(current))
		msleep(20);
}
#endif /* CONFIG_FAULT_INJECTION_DEBUG_FS */

/**
 * sroce_map_id - a map's identity, unique among the maps ever made
 * @map: a map from sroce_mem_get()
 *
 * A message of several packets, which looks its key up for each, compares
 * the identity of the map each packet found with its first packet's.
 * Return: the identity (struct sroce_map.id).
 */
u64 sroce_map_id(const struct sroce_map *map)
{
	return map->id;
}

/* Map identities (struct sroce_map.id), never reused. */
static atomic64_t sroce_map_ids = ATOMIC64_INIT(0);

/**
 * sroce_map_alloc - a new map, with one reference (the caller's)
 * @type: what its addresses are
 * @pd: the PD its key will be valid in
 * @access: IB_ACCESS_* it grants
 * @iova: its first byte's address (and its base)
 * @length: its bytes
 * @pin: SROCE_MAP_USER: the pages; on success the map owns the caller's
 *       reference
 * @npages: SROCE_MAP_FAST: room for this many page addresses, else 0
 *
 * A map with room for @npages page addresses (SROCE_MAP_FAST). Its key is
 * 0 until the caller sets it, before it publishes the map.
 * Return: the map, or NULL.
 */
struct sroce_map *sroce_map_alloc(enum sroce_map_type type, struct ib_pd *pd,
				  int access, u64 iova, u64 length,
				  struct sroce_pin *pin, u32 npages)
{
	struct sroce_map *map;

	map = kzalloc(struct_size(map, pages, npages), GFP_KERNEL);
	if (!map)
		return NULL;
	kref_init(&map->ref);
	refcount_set(&map->kept, 1);
	map->id = atomic64_inc_return(&sroce_map_ids);
	map->type = type;
	map->pd = pd;
	map->access = access;
	map->iova = iova;
	map->length = length;
	map->base = iova;
	map->pin = pin;
	return map;
}

/**
 * sroce_map_window - a window's view of part of an MR's map
 * @mr_map: the MR's user map, covering [addr, addr + length)
 * @pd: the window's PD
 * @access: what the window grants
 * @iova: where the window's first byte is seen (0 when zero-based)
 * @addr: where in the MR's address space the window starts
 * @length: bytes
 *
 * Return: the map, sharing the MR's pinned pages, or NULL.
 */
struct sroce_map *sroce_map_window(const struct sroce_map *mr_map,
				   struct ib_pd *pd, int access, u64 iova,
				   u64 addr, u64 length)
{
	struct sroce_map *map;

	map = sroce_map_alloc(SROCE_MAP_USER, pd, access, iova, length,
			      mr_map->pin, 0);
	if (!map)
		return NULL;
	kref_get(&mr_map->pin->ref);
	map->base = iova - addr + mr_map->base;
	map->window = true;
	return map;
}

/*
 * Key indices are drawn at random from the 2^24 there are (at most 1 in 8
 * of them in use, SROCE_MAX_MR + SROCE_MAX_MW), skipping those handed out
 * since the used set was last renewed (sdev->key_used). The set is renewed
 * when half of the indices are in it, keeping only those in use: a freed
 * index is not handed out again for at least 2^23 - 2^21 registrations,
 * and then only by chance. A draw succeeds at least half the time.
 */
#define SROCE_KEY_INDICES	BIT(SROCE_KEY_INDEX_BITS)
#define SROCE_KEY_RENEW		(SROCE_KEY_INDICES / 2)
#define SROCE_KEY_TRIES		128
static_assert(SROCE_MAX_MR + SROCE_MAX_MW <= SROCE_KEY_INDICES / 8);

/**
 * sroce_key_init - set up a device's key allocation
 * @sdev: the device, before any key is handed out
 *
 * Return: 0 or -ENOMEM. sroce_key_exit() undoes it.
 */
int sroce_key_init(struct sroce_dev *sdev)
{
	sdev->key_used = bitmap_zalloc(SROCE_KEY_INDICES, GFP_KERNEL);
	if (!sdev->key_used)
		return -ENOMEM;
	mutex_init(&sdev->key_lock);
	return 0;
}

/**
 * sroce_key_exit - free what sroce_key_init() set up
 * @sdev: the device, its memory table empty; sroce_key_init() may have
 *        failed or not run (key_used NULL)
 */
void sroce_key_exit(struct sroce_dev *sdev)
{
	if (!sdev->key_used)
		return;
	mutex_destroy(&sdev->key_lock);
	bitmap_free(sdev->key_used);
}

/* Forget the indices freed since the last renewal. Under key_lock. */
static void sroce_key_renew(struct sroce_dev *sdev)
{
	struct sroce_mem *mem;
	unsigned long index;

	lockdep_assert_held(&sdev->key_lock);
	bitmap_zero(sdev->key_used, SROCE_KEY_INDICES);
	sdev->key_nused = 0;
	/* An entry being deleted may stay marked: that only skips it. */
	xa_for_each(&sdev->mem_xa, index, mem) {
		__set_bit(index, sdev->key_used);
		sdev->key_nused++;
	}
}

/**
 * sroce_mem_add_key - put a memory table entry in the table, with a new key
 * @sdev: the device
 * @mem: an MR's or a window's entry, not in the table yet, whose key is 0
 *
 * The entry gets a random index not handed out since the last renewal
 * (see SROCE_KEY_RENEW) and a random tag; its key is set before it is
 * stored, so a lookup never sees an entry without its key. No index is 0,
 * so no key is 0 (a key some consumers leave unset). May sleep.
 * Return: 0, or -ENOMEM.
 */
int sroce_mem_add_key(struct sroce_dev *sdev, struct sroce_mem *mem)
{
	u32 index;
	int tries, err;

	mutex_lock(&sdev->key_lock);
	if (sdev->key_nused >= SROCE_KEY_RENEW)
		sroce_key_renew(sdev);
	for (tries = 0; tries < SROCE_KEY_TRIES; tries++) {
		index = get_random_u32() & (SROCE_KEY_INDICES - 1);
		if (index && !test_bit(index, sdev->key_used))
			break;
	}
	/* Odds of running out of tries: 2^-128. */
	if (tries == SROCE_KEY_TRIES) {
		err = -ENOMEM;
		goto out;
	}
	WRITE_ONCE(mem->key, index << SROCE_KEY_TAG_BITS | get_random_u8());
	/* Every index in the table is marked: this one is free. */
	err = xa_insert(&sdev->mem_xa, index, mem, GFP_KERNEL);
	if (err)
		goto out;
	__set_bit(index, sdev->key_used);
	sdev->key_nused++;
out:
	mutex_unlock(&sdev->key_lock);
	return err;
}

/**
 * sroce_mem_find - the memory table entry with a key's index
 * @sdev: the device
 * @key: the key
 *
 * Under rcu_read_lock() or the owner's lock. The caller compares the
 * entry's key with @key: the tag may differ.
 * Return: the entry, or NULL.
 */
struct sroce_mem *sroce_mem_find(struct sroce_dev *sdev, u32 key)
{
	return xa_load(&sdev->mem_xa, sroce_key_index(key));
}

/**
 * sroce_mem_del - take an entry out of the memory table
 * @sdev: the device
 * @mem: an entry sroce_mem_add_key() stored
 */
void sroce_mem_del(struct sroce_dev *sdev, struct sroce_mem *mem)
{
	xa_erase(&sdev->mem_xa, sroce_key_index(mem->key));
}

/*
 * Windows are for remote access only (a window's key is an R_Key, never an
 * L_Key), and a type 2 window only through the QP it was bound by (its
 * type 2B binding to a QP; IBTA volume 1, chapter 10, memory windows).
 */
static bool sroce_mem_reachable(struct sroce_mem *mem, u32 qpn)
{
	struct sroce_mw_ent *ent;
	u32 bound;

	if (mem->kind != SROCE_MEM_MW)
		return true;
	ent = container_of(mem, struct sroce_mw_ent, mem);
	bound = READ_ONCE(ent->qpn);
	return qpn && (!bound || bound == qpn);
}

/*
 * Count (remote accesses) and trace (a debug line) an access sroce_mem_get()
 * refuses with @err; -ESTALE is a key whose index names an entry of
 * another tag.
 */
static void sroce_mem_refused(struct sroce_dev *sdev, u32 qpn, u32 key,
			      u64 va, u64 len, int access, int err)
{
	static const struct {
		enum sroce_counter counter;
		const char *why;
	} refusals[] = {
		{ SROCE_CNT_RKEY_INVALID, "no valid MR or window has it" },
		{ SROCE_CNT_RKEY_STALE_TAG, "stale tag" },
		{ SROCE_CNT_RKEY_ACCESS, "another PD's" },
		{ SROCE_CNT_RKEY_ACCESS, "access not granted" },
		{ SROCE_CNT_RKEY_RANGE, "out of range" },
	};
	unsigned int r = err == -ENOENT ? 0 : err == -ESTALE ? 1 :
			 err == -EPERM ? 2 : err == -EACCES ? 3 : 4;

	if (qpn) {
		sroce_drop(sdev, refusals[r].counter,
			   "qp#%u: rkey %#x refused (access %#x, %#llx+%#llx): %s\n",
			   qpn, key, access, va, len, refusals[r].why);
	} else {
		sroce_dbg_dev(sdev, "lkey %#x refused (access %#x, %#llx+%#llx): %s\n",
			      key, access, va, len, refusals[r].why);
	}
}

/**
 * sroce_mem_get - resolve a key for an access; every lkey and rkey goes here
 * @sdev: the device
 * @pd: the PD the access is made in
 * @qpn: for an rkey, the QP the request came in through; 0 for an lkey
 * @key: the lkey or rkey
 * @va: the first byte accessed
 * @len: bytes accessed (0 checks only the key, PD and access)
 * @access: IB_ACCESS_* bits that must *all* be granted (0: local read)
 *
 * Return: the key's current map with a reference held (sroce_map_put() it):
 * everything the access then does goes through that one map. Or
 * ERR_PTR(-ENOENT) for a key that names no valid MR or window it may be
 * used as (wrong tag, freed, a window as an lkey or through another QP, a
 * null MR's as an rkey),
 * -EPERM for another PD, -EACCES for a missing access bit, -ERANGE for bytes
 * outside the key's range (computed without overflow).
 */
struct sroce_map *sroce_mem_get(struct sroce_dev *sdev, struct ib_pd *pd,
				u32 qpn, u32 key, u64 va, u64 len, int access)
{
	struct sroce_map *map;
	struct sroce_mem *mem;
	u64 last, map_last;
	bool stale;
	int err;

	/*
	 * The rules of IBTA volume 1, chapter 10, for an L_Key or R_Key: the
	 * whole key (index and tag) names a valid MR or bound window, in the
	 * PD of the QP (or SGE list) that uses it, which grants every access
	 * asked, over every byte accessed.
	 */
again:
	map = NULL;
	rcu_read_lock();
	mem = sroce_mem_find(sdev, key);
	/* acquire: pairs with the release that made a registration valid */
	if (mem && smp_load_acquire(&mem->state) == SROCE_MEM_VALID &&
	    READ_ONCE(mem->key) == key && sroce_mem_reachable(mem, qpn)) {
		map = rcu_dereference(mem->map);
		/* Its last reference gone: replaced meanwhile, or going. */
		if (map && !kref_get_unless_zero(&map->ref)) {
			rcu_read_unlock();
			goto again;
		}
		/*
		 * Counted as a user before the state and the map are read
		 * again: whoever unpublishes a map (deregistration, unbind,
		 * invalidation, re-registration) either waits for this
		 * access or makes it look again here (it writes the state or
		 * the map, then counts users: sroce_map_retire()). And a map
		 * is only good for the key it was published under.
		 */
		smp_mb__after_atomic();
		/* acquire: a later registration's map is read with its state */
		if (map && smp_load_acquire(&mem->state) == SROCE_MEM_VALID &&
		    rcu_access_pointer(mem->map) != map) {
			/* Re-registered meanwhile: the new map, then. */
			rcu_read_unlock();
			sroce_map_put(map);
			goto again;
		}
		/*
		 * acquire: the window's QP read again is its binding's,
		 * which an invalidation and rebind may have changed since
		 */
		if (map && (smp_load_acquire(&mem->state) != SROCE_MEM_VALID ||
			    map->key != key || READ_ONCE(mem->key) != key ||
			    !sroce_mem_reachable(mem, qpn))) {
			rcu_read_unlock();
			err = -ENOENT;
			goto err_put;
		}
	}
	/* Whether it is a stale tag: counted apart, seen as any other key */
	stale = !map && mem && READ_ONCE(mem->key) != key;
	rcu_read_unlock();
	err = stale ? -ESTALE : -ENOENT;
	if (!map)
		goto err;

	/* A null MR's key is an L_Key only (ibv_alloc_null_mr(3)). */
	err = -ENOENT;
	if (qpn && map->type == SROCE_MAP_NULL)
		goto err_put;
	/* The key's PD is the one the access is made in. */
	err = -EPERM;
	if (map->pd != pd)
		goto err_put;
	/* Every access asked is granted, not just one of them. */
	err = -EACCES;
	if ((map->access & access) != access)
		goto err_put;
	/*
	 * Every byte is within the key's range. Inclusive ends, so that a
	 * range may end at 2^64 - 1.
	 */
	err = -ERANGE;
	if (len && check_add_overflow(va, len - 1, &last))
		goto err_put;
	/* A DMA MR covers every kernel address, a null MR every address. */
	if (map->type == SROCE_MAP_DMA || map->type == SROCE_MAP_NULL)
		return map;
	if (len && (!map->length ||
		    check_add_overflow(map->iova, map->length - 1, &map_last) ||
		    va < map->iova || last > map_last))
		goto err_put;
	return map;

err_put:
	sroce_map_put(map);
err:
	sroce_mem_refused(sdev, qpn, key, va, len, access, err);
	return ERR_PTR(err == -ESTALE ? -ENOENT : err);
}

/**
 * sroce_copy_paged - copy between a buffer and contiguous kernel memory
 * @addr: the memory (an ODP page, a fast registration's page: either may
 *        be larger than PAGE_SIZE)
 * @buf: the buffer
 * @len: bytes
 * @to_mem: copy @buf into @addr (else @addr into @buf)
 *
 * A PAGE_SIZE piece at a time, as the pinned path copies: the compiler
 * copies a piece it knows is at most a page inline, 8 bytes a step, where
 * memcpy() of an unbounded length may copy a byte a step (ERMS), which
 * costs far more where it is emulated (QEMU TCG: warm ODP ran at 0.66x
 * the pinned path for that alone).
 */
void sroce_copy_paged(void *addr, void *buf, u64 len, bool to_mem)
{
	while (len) {
		unsigned int n = min_t(u64, len,
				       PAGE_SIZE - offset_in_page(addr));

		if (to_mem)
			memcpy(addr, buf, n);
		else
			memcpy(buf, addr, n);
		addr += n;
		buf += n;
		len -= n;
	}
}

/* A fast registration's pages are kernel memory, page_size each. */
static void sroce_fast_copy(struct sroce_map *map, u64 va, void *buf, u64 len,
			    bool to_mem)
{
	u64 psize = 1ULL << map->page_shift;
	u64 off = va - map->iova + map->first_offset;

	while (len) {
		u64 in_page = off & (psize - 1);
		u64 n = min(len, psize - in_page);
		void *addr = (void *)(uintptr_t)
			(map->pages[off >> map->page_shift] + in_page);

		sroce_copy_paged(addr, buf, n, to_mem);
		buf += n;
		off += n;
		len -= n;
	}
}

/**
 * sroce_map_copy - copy between a buffer and the memory a map translates
 * @map: a map from sroce_mem_get() whose range covers [va, va + len)
 * @va: the MR address
 * @buf: kernel buffer
 * @len: bytes
 * @to_mem: copy @buf into the memory (else the memory into @buf)
 * @fault: whether an ODP MR's missing pages are faulted in, and waited for
 *
 * May sleep (an ODP MR's pages are faulted in; with SROCE_NO_FAULT it
 * waits for no fault). A null MR's map discards what is copied into it
 * and gives zeroes.
 * Return: 0; or for an ODP MR, -EFAULT when its memory cannot be had
 * (nothing mapped there, or not writable for a write), -ENOMEM when a
 * child umem of its range cannot be allocated, and with SROCE_NO_FAULT
 * -EAGAIN when a page is not present (for the caller to have it faulted
 * in beside, sroce_map_fault_later()); some bytes may have been copied.
 */
int sroce_map_copy(struct sroce_map *map, u64 va, void *buf, u64 len,
		   bool to_mem, enum sroce_fault fault)
{
	struct sroce_pin *pin = map->pin;
	u64 off;

	if (map->type == SROCE_MAP_DMA) {
		void *addr = (void *)(uintptr_t)va;

		if (to_mem)
			memcpy(addr, buf, len);
		else
			memcpy(buf, addr, len);
		return 0;
	}
	if (map->type == SROCE_MAP_FAST) {
		sroce_fast_copy(map, va, buf, len, to_mem);
		return 0;
	}
	/* A null MR: writes go nowhere, reads give zeroes. */
	if (map->type == SROCE_MAP_NULL) {
		if (!to_mem)
			memset(buf, 0, len);
		return 0;
	}
	if (pin->odp)
		return sroce_odp_copy(map, va, buf, len, to_mem, fault);

	off = va - map->base + pin->offset;
	/* A dma-buf's range is contiguous in its kernel mapping. */
	if (pin->vaddr) {
		sroce_copy_paged(pin->vaddr + off, buf, len, to_mem);
		return 0;
	}
	while (len) {
		struct page *page = pin->pages[off >> PAGE_SHIFT];
		unsigned int in_page = offset_in_page(off);
		unsigned int n = min_t(u64, len, PAGE_SIZE - in_page);
		void *addr = kmap_local_page(page);

		if (to_mem)
			memcpy(addr + in_page, buf, n);
		else
			memcpy(buf, addr + in_page, n);
		kunmap_local(addr);
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * Each SGE's part of [offset, offset + len) of an SGE list, through its
 * lkey's map (held for the call), to @fn, in order, until @fn fails.
 * Return: 0; -ERANGE if the list is shorter than @offset + @len; -EACCES
 * if an lkey does not grant @access (wrong key, PD, access or bounds); or
 * @fn's error.
 */
static int sroce_sges_each(struct sroce_dev *sdev, struct ib_pd *pd,
			   const struct sroce_sge *sge, u32 nsge, u32 offset,
			   u64 len, int access,
			   int (*fn)(struct sroce_map *map, u64 va, u32 n,
				     void *arg),
			   void *arg)
{
	int err;
	u32 i;

	for (i = 0; i < nsge && len; i++) {
		u32 slen = sge[i].length, n;
		struct sroce_map *map;

		if (offset >= slen) {
			offset -= slen;
			continue;
		}
		n = min_t(u64, slen - offset, len);
		map = sroce_mem_get(sdev, pd, 0, sge[i].lkey,
				    sge[i].addr + offset, n, access);
		if (IS_ERR(map))
			return -EACCES;
		err = fn(map, sge[i].addr + offset, n, arg);
		sroce_map_put(map);
		if (err)
			return err;
		len -= n;
		offset = 0;
	}
	return len ? -ERANGE : 0;
}

/* A copy through an SGE list: where in the buffer it is, and how. */
struct sroce_sges_copy {
	void *buf;
	bool to_mem;
	enum sroce_fault fault;
};

static int sroce_sge_copy(struct sroce_map *map, u64 va, u32 n, void *arg)
{
	struct sroce_sges_copy *c = arg;
	int err = sroce_map_copy(map, va, c->buf, n, c->to_mem, c->fault);

	/* ODP memory not present now, or not to be had (not writable) */
	if (err)
		return err == -EAGAIN ? err : -EACCES;
	c->buf += n;
	return 0;
}

/**
 * sroce_copy_sges - copy between a buffer and an SGE list
 * @sdev: the device
 * @pd: the PD the SGEs' lkeys must be in
 * @sge: the SGEs
 * @nsge: how many
 * @offset: where in the list's bytes to start
 * @buf: kernel buffer
 * @len: bytes
 * @to_mem: into the SGEs' memory (needs local write access)
 * @fault: whether ODP pages are faulted in (sroce_map_copy())
 *
 * Return: 0, -ERANGE if the list is shorter than @offset + @len, -EACCES
 * if an lkey does not grant the access (wrong key, PD, access or bounds)
 * or its ODP memory cannot be had, or with SROCE_NO_FAULT -EAGAIN when an
 * ODP page is not present (sroce_sges_fault_later() has it faulted in
 * beside; the copy may be made again then).
 */
int sroce_copy_sges(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sge, u32 nsge, u32 offset, void *buf,
		    u32 len, bool to_mem, enum sroce_fault fault)
{
	struct sroce_sges_copy c = { .buf = buf, .to_mem = to_mem,
				     .fault = fault };

	return sroce_sges_each(sdev, pd, sge, nsge, offset, len,
			       to_mem ? IB_ACCESS_LOCAL_WRITE : 0,
			       sroce_sge_copy, &c);
}

static int sroce_sge_fault_later(struct sroce_map *map, u64 va, u32 n,
				 void *write)
{
	sroce_map_fault_later(map, va, n, *(bool *)write);
	return 0;
}

/**
 * sroce_sges_fault_later - have an SGE list's ODP memory faulted in beside
 * @sdev: the device
 * @pd: the PD the SGEs' lkeys must be in
 * @sge: the SGEs
 * @nsge: how many
 * @offset: where in the list's bytes to start
 * @len: bytes from there that the message needs, no more (to the list's
 *       end if it is shorter), of which SROCE_ODP_LATER_MAX at most
 * @to_mem: for writing into the SGEs' memory
 *
 * After sroce_copy_sges() with SROCE_NO_FAULT returned -EAGAIN: each
 * SGE's part of the bytes goes to its ODP range's job
 * (sroce_map_fault_later()), so that the copy made again finds them
 * present. Stops at an lkey the copy would refuse (the copy will fail
 * there). May sleep.
 */
void sroce_sges_fault_later(struct sroce_dev *sdev, struct ib_pd *pd,
			    const struct sroce_sge *sge, u32 nsge, u32 offset,
			    u64 len, bool to_mem)
{
	sroce_sges_each(sdev, pd, sge, nsge, offset,
			min_t(u64, len, SROCE_ODP_LATER_MAX),
			to_mem ? IB_ACCESS_LOCAL_WRITE : 0,
			sroce_sge_fault_later, &to_mem);
}

/*
 * Where @va, an address of @map, falls within its page of memory, modulo
 * the page size: the alignment of the byte actually touched. The address a
 * request names says nothing of it: a zero-based window's 0 may be any byte
 * of a page, and a fast registration's iova need not share its pages'
 * offsets. Every page a map translates through is at least 8-byte aligned
 * (pinned and ODP pages are whole pages, a dma-buf's kernel mapping
 * starts at a page; a fast registration's page addresses are aligned to
 * its page size, ib_sg_to_pages()).
 */
static u64 sroce_map_mem_offset(const struct sroce_map *map, u64 va)
{
	switch (map->type) {
	case SROCE_MAP_DMA:
	case SROCE_MAP_NULL:
		return va;
	case SROCE_MAP_FAST:
		return va - map->iova + map->first_offset;
	default:
		return va - map->base + map->pin->offset;
	}
}

/* Serialises every atomic (and atomic write) of the machine's sroce devices. */
static DEFINE_SPINLOCK(sroce_atomic_lock);

/*
 * The 8 aligned bytes at @va: read into @old (if not NULL), then @op
 * computes what to store (if @op is NULL, *@new is stored as is).
 */
static int sroce_map_rmw(struct sroce_map *map, u64 va, u64 *old,
			 u64 (*op)(u64 old, u64 a, u64 b), u64 a, u64 b,
			 const u64 *new, enum sroce_fault fault)
{
	bool odp = map->type == SROCE_MAP_USER && map->pin->odp;
	struct ib_umem_odp *locked = NULL;
	void *addr = NULL;
	u64 orig = 0, val;

	/*
	 * The 8 bytes must be aligned where they are in memory, not only at
	 * the address the request named: then they never span a page (an
	 * ODP lock holds one page only), and no CPU store tears them.
	 */
	if (sroce_map_mem_offset(map, va) & (sizeof(u64) - 1))
		return -EINVAL;
	/* No atomic reaches a null MR (an lkey only); none ever should. */
	if (WARN_ON_ONCE(map->type == SROCE_MAP_NULL))
		return -EINVAL;
	/* ODP: the page is faulted in and held before the spinlock. */
	if (odp) {
		addr = sroce_odp_lock(map, va, sizeof(u64), true, fault,
				      &locked);
		if (IS_ERR(addr))
			return PTR_ERR(addr);
	}
	spin_lock_bh(&sroce_atomic_lock);
	if (odp)
		memcpy(&orig, addr, sizeof(orig));
	else if (op)
		sroce_map_copy(map, va, &orig, sizeof(orig), false,
			       SROCE_FAULT);
	val = op ? op(orig, a, b) : *new;
	if (odp)
		memcpy(addr, &val, sizeof(val));
	else
		sroce_map_copy(map, va, &val, sizeof(val), true, SROCE_FAULT);
	spin_unlock_bh(&sroce_atomic_lock);
	if (odp)
		sroce_odp_unlock(map, locked);
	if (old)
		*old = orig;
	return 0;
}

static u64 sroce_op_cmp_swap(u64 old, u64 compare, u64 swap)
{
	return old == compare ? swap : old;
}

static u64 sroce_op_fetch_add(u64 old, u64 add, u64 unused)
{
	return old + add;
}

/**
 * sroce_map_atomic - an 8-byte atomic on the memory a map translates
 * @map: a map from sroce_mem_get() covering the 8 aligned bytes at @va
 * @va: the address, 8-byte aligned
 * @compare_add: the value to compare with (CMP_SWAP) or to add
 * @swap: the value to store if equal (CMP_SWAP)
 * @cmp_swap: compare and swap (else fetch and add)
 * @orig: set to the original value
 * @fault: whether an ODP MR's page is faulted in (sroce_map_copy())
 *
 * Atomic with respect to every other sroce atomic on the machine.
 * Return: 0; -EINVAL when the 8 bytes are not aligned in memory (whatever
 * @va's alignment); or for an ODP MR -EFAULT (its page cannot be had),
 * -ENOMEM (a child umem of its range cannot be allocated) or -EAGAIN (not
 * present, SROCE_NO_FAULT: sroce_map_fault_later() for its 8 bytes);
 * nothing done on error.
 */
int sroce_map_atomic(struct sroce_map *map, u64 va, u64 compare_add,
		     u64 swap, bool cmp_swap, u64 *orig, enum sroce_fault fault)
{
	return sroce_map_rmw(map, va, orig,
			     cmp_swap ? sroce_op_cmp_swap : sroce_op_fetch_add,
			     compare_add, swap, NULL, fault);
}

/**
 * sroce_map_atomic_write - an RDMA Atomic Write's 8-byte store
 * @map: a map from sroce_mem_get() covering the 8 aligned bytes at @va
 * @va: the address, 8-byte aligned
 * @val: the bytes to store, in memory order
 * @fault: whether an ODP MR's page is faulted in (sroce_map_copy())
 *
 * No other sroce atomic sees the location half written.
 * Return: as sroce_map_atomic().
 */
int sroce_map_atomic_write(struct sroce_map *map, u64 va, u64 val,
			   enum sroce_fault fault)
{
	return sroce_map_rmw(map, va, NULL, NULL, 0, 0, &val, fault);
}
