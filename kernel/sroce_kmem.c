// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: the kernel memory processes make sroce allocate for them, counted
 * and bounded.
 *
 * What a process sizes itself - a queue's ring and a QP's state for each
 * of its WQEs (up to some 35 MiB for the largest QP), the page lists of an
 * ODP MR's chunks (up to 16 MiB an MR) - is charged to the device and to
 * the user the process ran as when it opened the device, and refused with
 * ENOMEM past either bound: max_kmem_mb for everyone on a device,
 * max_user_kmem_mb for one user on all devices together (module
 * parameters, changeable at any time; 0 is half and a quarter of RAM). A
 * kernel consumer's objects are counted on the device but never refused.
 * The memory is also charged to the process's memory cgroup where sroce
 * allocates it (GFP_KERNEL_ACCOUNT; ib_core allocates an ODP range's page
 * lists uncharged).
 *
 * A ring is counted while its queue lives: a process that keeps one mapped
 * after its queue is destroyed (or a CQ's old ring after a resize) keeps
 * its pages, in its own address space, its RSS and its memory cgroup,
 * until it unmaps them (sroce_queue.c).
 *
 * The device's total is the "kmem_bytes" counter ("rdma statistic"), each
 * refusal counts in "kmem_refused", and each QP, CQ and MR shows its own
 * bytes as "kmem" in "rdma resource show ... -dd".
 *
 * Each device's record of a user points to the user's one record for all
 * devices (struct sroce_user), which counts the jobs the user's memory has
 * queued or running on a workqueue the users share, by kind (an ODP
 * range's faults that an access could not wait for; the faults ahead of
 * its QPs' streams, sroce_odp.c), so that one user's stalled jobs cannot
 * take every worker, however many devices it uses: sroce_kmem_job_start(),
 * sroce_kmem_job_end(). And it holds the user's own workqueue, which its
 * QPs' runs on every device share with no other user's, made with its
 * first QP and charged to it: sroce_kmem_wq_get(), sroce_kmem_wq_put().
 * It also counts the user's kernel memory on every device, which
 * max_user_kmem_mb bounds: a user of several devices has no more than a
 * user of one. Each device's record counts its own share too, which it
 * gives back.
 *
 * And it runs the releases of the user's objects that may wait for as long
 * as the user likes (an orphaned pin's, sroce_pin_put_async()), in turn,
 * by one work item of its own: sroce_kmem_release_queue(). A user that
 * stalls one of its releases holds one worker and its own later releases,
 * never another user's. What the stalled release and those waiting
 * behind it hold (pinned pages, a dma-buf: memory in no process's RSS,
 * where the OOM killer does not look) is bounded per user,
 * max_user_release_mb (a module parameter, changeable at any time; 0 is a
 * quarter of RAM): a user whose releases waiting or running hold that
 * much gets no new MR of user memory, ENOMEM, until they ran
 * (sroce_kmem_release_room()), so that one stalled release cannot have an
 * unbounded backlog piled up behind it. Each device counts its objects'
 * releases queued ("release_queued"), the pages of those still waiting or
 * running ("release_backlog_pages") and the registrations refused
 * ("release_backlog_refused").
 *
 * Lock order: sroce_users_lock, a device's kmem_lock and a user's lock
 * are each taken with no other of them held (never one under another); a
 * user's release_lock may be taken under any lock, in any context, and no
 * lock is taken under it. A user's work item runs each release with no
 * lock of sroce's held (the release takes the page's lock, the umem's
 * mutex, a dma-buf's reservation, then kmem_lock and sroce_users_lock in
 * turn). Every unregistration of a device waits for the work items, of
 * any user, that have a release of one of its objects queued: each queued
 * release holds its device (sroce_pin_put_async()), and
 * ib_unregister_device() waits for every reference; each item runs its
 * user's earlier releases first, of any device. So no lock that a release
 * takes may be held across ib_unregister_device() (rdma link delete, the
 * network device's removal, a network namespace's teardown or move,
 * module unload), nor across sroce_kmem_exit(), which waits for the items
 * to end. None is: sroce_newlink() holds sroce_newlink_lock across the
 * unregistration of a device whose network device went meanwhile, and no
 * release takes it.
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/user_namespace.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "sroce_kmem.h"
#include "sroce.h"

static unsigned int max_kmem_mb;
module_param(max_kmem_mb, uint, 0644);
MODULE_PARM_DESC(max_kmem_mb,
		 "Kernel memory (MiB) the processes on a device may make sroce allocate: rings, QP state, ODP page lists (0: half of RAM)");

static unsigned int max_user_kmem_mb;
module_param(max_user_kmem_mb, uint, 0644);
MODULE_PARM_DESC(max_user_kmem_mb,
		 "The same for one user's processes on all devices together (0: a quarter of RAM)");

static unsigned int max_user_release_mb;
module_param(max_user_release_mb, uint, 0644);
MODULE_PARM_DESC(max_user_release_mb,
		 "Memory (MiB) one user's objects whose releases wait in its queue or run may hold, on all devices together: pinned pages, dma-bufs; at it the user's new MRs are refused (0: a quarter of RAM)");

/**
 * struct sroce_user - what one user holds on every device
 * @ref: the user's records on the devices (struct sroce_kmem_user), one
 *       for each device its processes have open or hold objects of
 * @uid: the user (sroce_kmem_uid())
 * @bytes: charged to the user now, on every device (max_user_kmem_mb)
 * @jobs: jobs of the user's memory queued or running, on every device, by
 *        kind (sroce_kmem_job_start())
 * @lock: serialises making, holding and destroying @wq; taken with no
 *        other lock of sroce's held
 * @wq: the user's own workqueue, "sroce_user_UID", or NULL; under @lock
 * @wq_holders: the records that hold @wq, each while it has a QP on its
 *              device (sroce_kmem_wq_get()); under @lock
 * @release_lock: protects @releases, @release_pages and @releasing;
 *                interrupts off, the innermost lock (nothing is taken
 *                under it)
 * @releases: the releases of the user's objects that wait for
 *            @release_work, oldest first (struct sroce_kmem_release)
 * @release_pages: the pages the objects of @releases hold, and the object
 *                 whose release @release_work runs until it ended: the
 *                 sum of their struct sroce_kmem_release.pages; at
 *                 max_user_release_mb the user gets no new MR
 *                 (sroce_kmem_release_room())
 * @releasing: @release_work is queued or running; it then holds a
 *             reference to the user, given back once it found @releases
 *             empty, so that the record outlives every release queued
 * @release_work: runs @releases in turn, on sroce_release_wq
 *
 * One per user, not per (user, device): a user's stalled runs hold at most
 * its queue's max_active workers on each CPU, its stalled ODP jobs at most
 * its bound of each kind, and its objects at most max_user_kmem_mb of
 * kernel memory, however many devices it uses; and its stalled releases
 * one worker, and only its own releases.
 */
struct sroce_user {
	struct kref ref;
	kuid_t uid;
	atomic64_t bytes;
	atomic_t jobs[SROCE_JOB_KINDS];
	struct mutex lock; /* see above */
	struct workqueue_struct *wq;
	unsigned int wq_holders;
	spinlock_t release_lock; /* see above */
	struct list_head releases;
	unsigned long release_pages;
	bool releasing;
	struct work_struct release_work;
};

/*
 * The users' releases that may wait for their users (sroce_pin_put_async():
 * an ODP range's release waits for an invalidation of its owner's mm under
 * way, which the owner can keep going; a pinned range's, on 6.1, locks a
 * writable pin's clean pages to dirty them, and the owner can keep one
 * locked: a write fault of its FUSE file's shared mapping waits for the
 * file's writeback with the page locked). Each user's run one after the
 * other, by the user's own work item (struct sroce_user), and the users'
 * items side by side, WQ_UNBOUND_MAX_ACTIVE at once: a user that stalls a
 * release holds one worker, and its own later releases with it, never
 * another user's. A queued release holds its object's device, whose
 * unregistration (rdma link delete, its network device's removal or
 * network namespace's teardown, module unload) so waits for the releases
 * of that device's objects, each behind its own user's earlier releases
 * only (of any device): a stalled user holds up the unregistration of the
 * devices where it has a release queued, no other. As many users as the
 * queue's max_active, each stalling a release, would have the next user's
 * wait inactive: users are made by an administrator (sroce_kmem_uid()).
 * Not WQ_MEM_RECLAIM: nothing that reclaims memory waits for a release
 * (it frees memory, but only an object that no one waited for to its end
 * leaves one here), and a rescuer on 6.1 would take every release queued
 * behind one so waiting (see sroce_odp_wq).
 */
static struct workqueue_struct *sroce_release_wq;

static void sroce_user_run_releases(struct work_struct *work);

/*
 * Kernel consumers' objects (no user record: ku NULL) queue their releases
 * here, a record of their own that is never freed (its reference is the
 * module's) nor in sroce_users.
 */
static struct sroce_user sroce_kernel_user = {
	.ref = KREF_INIT(1),
	.lock = __MUTEX_INITIALIZER(sroce_kernel_user.lock),
	.release_lock = __SPIN_LOCK_UNLOCKED(sroce_kernel_user.release_lock),
	.releases = LIST_HEAD_INIT(sroce_kernel_user.releases),
	.release_work = __WORK_INITIALIZER(sroce_kernel_user.release_work,
					   sroce_user_run_releases),
};

/*
 * The users, by uid in the initial namespace (the key of each device's
 * table too). sroce_users_lock serialises adding and removing entries:
 * never under a device's kmem_lock, and no lock is taken under it. Empty
 * once every device is gone.
 */
static DEFINE_XARRAY(sroce_users);
static DEFINE_MUTEX(sroce_users_lock);

/**
 * struct sroce_kmem_user - what one user's processes hold on a device
 * @ref: the user's contexts, and the objects charged to it (some outlive
 *       their context: an ODP pin, an XRC target QP)
 * @user: the user on every device (a reference, for this record's life)
 * @bytes: charged to the user on @sdev now (its share of @user's bytes,
 *         given back by @sdev's objects)
 * @sdev: the device, whose table of users holds this one
 * @wq: the user's own workqueue, or NULL (sroce_kmem_wq_get()), held in
 *      @user while not NULL; under @sdev's kmem_lock
 * @wq_users: the objects that hold @wq (its user's QPs on @sdev); under
 *            @sdev's kmem_lock
 */
struct sroce_kmem_user {
	struct kref ref;
	struct sroce_user *user;
	atomic64_t bytes;
	struct sroce_dev *sdev;
	struct workqueue_struct *wq;
	unsigned int wq_users;
};

/* @uid's record for every device, made if it has none: a reference. */
static struct sroce_user *sroce_user_get(kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	struct sroce_user *user, *new;

	new = kzalloc(sizeof(*new), GFP_KERNEL_ACCOUNT);
	if (!new)
		return NULL;
	kref_init(&new->ref);
	new->uid = uid;
	atomic64_set(&new->bytes, 0);
	mutex_init(&new->lock);
	spin_lock_init(&new->release_lock);
	INIT_LIST_HEAD(&new->releases);
	INIT_WORK(&new->release_work, sroce_user_run_releases);

	mutex_lock(&sroce_users_lock);
	user = xa_load(&sroce_users, key);
	if (user)
		kref_get(&user->ref);
	else if (!xa_err(xa_store(&sroce_users, key, new, GFP_KERNEL_ACCOUNT)))
		user = new;
	mutex_unlock(&sroce_users_lock);
	if (user != new)
		kfree(new);
	return user;
}

/*
 * The user's last record went, on the last device, and its release work
 * ended: sroce_users_lock held. Its QPs went before (each held its
 * record), and with the last its queue.
 */
static void sroce_user_release(struct kref *ref)
{
	struct sroce_user *user = container_of(ref, struct sroce_user, ref);
	int i;

	WARN_ON(atomic64_read(&user->bytes));
	for (i = 0; i < SROCE_JOB_KINDS; i++)
		WARN_ON(atomic_read(&user->jobs[i]));
	WARN_ON(user->wq || user->wq_holders);
	WARN_ON(user->releasing || !list_empty(&user->releases) ||
		user->release_pages);
	xa_erase(&sroce_users, from_kuid(&init_user_ns, user->uid));
	mutex_destroy(&user->lock);
	kfree(user);
}

static void sroce_user_put(struct sroce_user *user)
{
	if (kref_put_mutex(&user->ref, sroce_user_release, &sroce_users_lock))
		mutex_unlock(&sroce_users_lock);
}

/*
 * Run one release that @user's work item took off the list. Its pages
 * stay in the user's count and its device's until it ended, so that one
 * that stalls is counted while it does (sroce_kmem_release_room()); then
 * they leave both, and the device reference the release held goes last:
 * after it only this work item runs the module's code, which
 * sroce_kmem_exit() waits for. @rel->fn frees @rel.
 */
static void sroce_user_run_release(struct sroce_user *user,
				   struct sroce_kmem_release *rel)
{
	struct sroce_dev *sdev = rel->sdev;
	unsigned long pages = rel->pages, flags;

	rel->fn(rel);
	spin_lock_irqsave(&user->release_lock, flags);
	user->release_pages -= pages;
	spin_unlock_irqrestore(&user->release_lock, flags);
	sroce_count_sub(sdev, SROCE_CNT_RELEASE_BACKLOG_PAGES, pages);
	ib_device_put(&sdev->ibdev);
}

/*
 * Run @user's releases, oldest first, until none is left, then give back
 * the reference its queueing took: the last one frees the record, and
 * this work item with it (nothing touches it after; the workqueue does
 * not once this function has returned). A release queued meanwhile, once
 * @releasing is false, queues the item again, with a reference of its own.
 */
static void sroce_user_run_releases(struct work_struct *work)
{
	struct sroce_user *user = container_of(work, struct sroce_user,
					       release_work);
	struct sroce_kmem_release *rel;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&user->release_lock, flags);
		rel = list_first_entry_or_null(&user->releases,
					       struct sroce_kmem_release,
					       entry);
		if (rel)
			list_del(&rel->entry);
		else
			user->releasing = false;
		spin_unlock_irqrestore(&user->release_lock, flags);
		if (!rel)
			break;
		sroce_user_run_release(user, rel);
		cond_resched();
	}
	sroce_user_put(user);
}

/**
 * sroce_kmem_release_queue - have a user's object released by the user's
 *                            own work item, after its earlier releases
 * @sdev: the object's device; the caller's reference to it
 *        (ib_device_try_get()) is the release's, which the work item
 *        gives back once the release ran
 * @ku: the object's user, held by the object until its release, or NULL
 *      for a kernel consumer's object
 * @rel: the release, in the object; @rel->fn and @rel->pages set (raised
 *       to 1 if 0)
 *
 * For a release that may wait for as long as its user likes, where nothing
 * may wait for it (struct sroce_user, sroce_release_wq): the user's
 * releases run one after the other, so that one stalled holds one worker,
 * and the user's own later releases, never another user's. The record
 * outlives them (the work item holds it while it has releases to run).
 * Until @rel->fn has returned (waiting in the list, then running),
 * @rel->pages count in the user's backlog (sroce_kmem_release_room()) and
 * in @sdev's release_backlog_pages. Any context.
 */
void sroce_kmem_release_queue(struct sroce_dev *sdev,
			      struct sroce_kmem_user *ku,
			      struct sroce_kmem_release *rel)
{
	/* Held by @ku, or by the running work item while @releasing. */
	struct sroce_user *user = ku ? ku->user : &sroce_kernel_user;
	unsigned long flags;
	bool queue;

	rel->sdev = sdev;
	/*
	 * At least a page: the object itself (a pin, an ODP range's umem)
	 * is kernel memory too, so that the bound also bounds how many wait.
	 */
	rel->pages = max(rel->pages, 1UL);
	sroce_count(sdev, SROCE_CNT_RELEASE_QUEUED);
	spin_lock_irqsave(&user->release_lock, flags);
	/* Counted before the item can take it off and subtract. */
	user->release_pages += rel->pages;
	sroce_count_add(sdev, SROCE_CNT_RELEASE_BACKLOG_PAGES, rel->pages);
	list_add_tail(&rel->entry, &user->releases);
	queue = !user->releasing;
	if (queue) {
		user->releasing = true;
		kref_get(&user->ref);
	}
	spin_unlock_irqrestore(&user->release_lock, flags);
	/* Past the unlock @rel may be freed already, but @user is held. */
	if (queue)
		queue_work(sroce_release_wq, &user->release_work);
}

/* @mb MiB, or for 0 RAM >> @ram_shift. */
static u64 sroce_kmem_bound(unsigned int mb, unsigned int ram_shift)
{
	if (mb)
		return (u64)mb << 20;
	return ((u64)totalram_pages() << PAGE_SHIFT) >> ram_shift;
}

/**
 * sroce_kmem_release_room - may a user have a new object whose release
 *                           may wait (an MR's pin)?
 * @sdev: the device the object would be on
 * @ku: the user, or NULL for a kernel consumer, never refused
 *
 * Not while the releases of the user's objects that wait in its list, and
 * the one its work item runs, hold max_user_release_mb, on every device
 * together: one release the user stalls holds all of its later ones
 * (sroce_kmem_release_queue()), and their memory is in no process's RSS
 * while they wait, so the OOM killer does not see it. Each release counts
 * what its object holds, at least a page, so the bound is on the number
 * of releases too. While one stalls nothing leaves the count, and past
 * the bound the user adds to it only the pins it held when it reached the
 * bound (which its processes could hold anyway while they lived: as much
 * as their RLIMIT_MEMLOCK, their memory cgroup's dma-bufs, or for root
 * and CAP_IPC_LOCK no limit), never more with time. Any context.
 * Return: 0, or -ENOMEM (counted in release_backlog_refused), as for a
 * pin past RLIMIT_MEMLOCK or past max_user_kmem_mb.
 */
int sroce_kmem_release_room(struct sroce_dev *sdev, struct sroce_kmem_user *ku)
{
	u64 bound = sroce_kmem_bound(READ_ONCE(max_user_release_mb), 2) >>
		    PAGE_SHIFT;
	unsigned long flags, pages;

	if (!ku)
		return 0;
	spin_lock_irqsave(&ku->user->release_lock, flags);
	pages = ku->user->release_pages;
	spin_unlock_irqrestore(&ku->user->release_lock, flags);
	if (pages < bound)
		return 0;
	sroce_count(sdev, SROCE_CNT_RELEASE_BACKLOG_REFUSED);
	sroce_dbg_dev(sdev, "uid %u's MR refused: its releases hold %lu pages of %llu\n",
		      from_kuid(&init_user_ns, ku->user->uid), pages, bound);
	return -ENOMEM;
}

void sroce_kmem_init(struct sroce_dev *sdev)
{
	xa_init(&sdev->kmem_users);
	mutex_init(&sdev->kmem_lock);
}

/*
 * All objects and contexts are gone before the device (ib_core): so is
 * every charge, every user, and every release of its objects queued (each
 * held the device).
 */
void sroce_kmem_fini(struct sroce_dev *sdev)
{
	WARN_ON(atomic64_read(&sdev->counters[SROCE_CNT_KMEM_BYTES]));
	WARN_ON(atomic64_read(&sdev->counters[SROCE_CNT_RELEASE_BACKLOG_PAGES]));
	WARN_ON(!xa_empty(&sdev->kmem_users));
	xa_destroy(&sdev->kmem_users);
	mutex_destroy(&sdev->kmem_lock);
}

/*
 * A user namespace root made whose root is host root (systemd's
 * PrivateUsers=, unshare -r run by root): a sandbox, not a container. A
 * namespace maps kuid 0 only if its parent does, so sandboxes are, in
 * practice, the outermost levels of a process's chain of namespaces.
 */
static bool sroce_ns_host_root(struct user_namespace *ns)
{
	return uid_eq(ns->owner, GLOBAL_ROOT_UID) &&
	       uid_eq(make_kuid(ns, 0), GLOBAL_ROOT_UID);
}

/*
 * The user a process is charged as: one that only an administrator can
 * multiply. Its effective uid; in a user namespace a user made, that user,
 * so that the uids the namespace maps (from the user's subordinate ids)
 * are not each a user with a bound of its own. In one root made (a
 * container), the uid its root is mapped to: the container's root may
 * become any uid it maps, thousands of them, and is one user however many
 * it takes; the containers do not share root's bound. A container that
 * maps no root: the process's effective uid.
 *
 * Sandboxes (sroce_ns_host_root()) count as no namespace at all: the rule
 * is applied to the outermost namespace that is none. So a sandbox's own
 * processes are the uids they are mapped to, as outside (a service account
 * sandboxed there does not take root's bounds and queue; its root is host
 * root, which may be any user anyway), and a user's rootless container
 * made inside one is that user, as it would be outside.
 */
static kuid_t sroce_kmem_uid(void)
{
	struct user_namespace *ns, *top = NULL;
	kuid_t root;

	for (ns = current_user_ns(); ns != &init_user_ns; ns = ns->parent)
		if (!sroce_ns_host_root(ns))
			top = ns;
	if (!top)
		return current_euid();
	if (!uid_eq(top->owner, GLOBAL_ROOT_UID))
		return top->owner;
	root = make_kuid(top, 0);
	return uid_valid(root) ? root : current_euid();
}

/**
 * sroce_kmem_user_get - the current process's user on @sdev
 * @sdev: the device
 *
 * For a context being opened, or an object ib_core makes for the process
 * as a kernel one (an XRC target QP). Process context.
 * Return: a reference (sroce_kmem_user_put()), or ERR_PTR(-ENOMEM).
 */
struct sroce_kmem_user *sroce_kmem_user_get(struct sroce_dev *sdev)
{
	kuid_t uid = sroce_kmem_uid();
	unsigned long key = from_kuid(&init_user_ns, uid);
	struct sroce_kmem_user *ku, *new;
	int err;

	new = kzalloc(sizeof(*new), GFP_KERNEL_ACCOUNT);
	if (!new)
		return ERR_PTR(-ENOMEM);
	/* Before the device's lock: sroce_users_lock is never taken under it. */
	new->user = sroce_user_get(uid);
	if (!new->user) {
		kfree(new);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&new->ref);
	atomic64_set(&new->bytes, 0);
	new->sdev = sdev;

	mutex_lock(&sdev->kmem_lock);
	ku = xa_load(&sdev->kmem_users, key);
	if (ku) {
		kref_get(&ku->ref);
	} else {
		err = xa_err(xa_store(&sdev->kmem_users, key, new,
				      GFP_KERNEL_ACCOUNT));
		ku = err ? ERR_PTR(err) : new;
	}
	mutex_unlock(&sdev->kmem_lock);
	if (ku != new) {
		sroce_user_put(new->user);
		kfree(new);
	}
	return ku;
}

/* Another reference to @ku, which the caller holds one of. */
struct sroce_kmem_user *sroce_kmem_user_hold(struct sroce_kmem_user *ku)
{
	if (ku)
		kref_get(&ku->ref);
	return ku;
}

/*
 * The last reference went: @ku->sdev's kmem_lock held. Out of the
 * device's table; sroce_kmem_user_put() frees it.
 */
static void sroce_kmem_user_release(struct kref *ref)
{
	struct sroce_kmem_user *ku = container_of(ref, struct sroce_kmem_user,
						  ref);

	WARN_ON(atomic64_read(&ku->bytes));
	WARN_ON(ku->wq || ku->wq_users);
	xa_erase(&ku->sdev->kmem_users,
		 from_kuid(&init_user_ns, ku->user->uid));
}

/*
 * Drop a reference; the last takes the user out of @sdev's table, and
 * gives back its reference to the user's record for every device, after
 * the device's lock. Process context (the last one takes mutexes).
 */
void sroce_kmem_user_put(struct sroce_dev *sdev, struct sroce_kmem_user *ku)
{
	if (!ku || !kref_put_mutex(&ku->ref, sroce_kmem_user_release,
				   &sdev->kmem_lock))
		return;
	mutex_unlock(&sdev->kmem_lock);
	sroce_user_put(ku->user);
	kfree(ku);
}

/* Add @n to @v if the sum stays within @bound. */
static bool sroce_kmem_add_within(atomic64_t *v, u64 n, u64 bound)
{
	s64 old = atomic64_read(v);

	do {
		if ((u64)old + n > bound)
			return false;
	} while (!atomic64_try_cmpxchg(v, &old, old + n));
	return true;
}

/**
 * sroce_kmem_charge - count memory made for a user's object
 * @sdev: the device
 * @ku: the object's user, or NULL for a kernel consumer's
 * @bytes: the memory
 *
 * Counted on the device, on the user's record there, and on the user's
 * record for every device, which max_user_kmem_mb bounds.
 *
 * Any context.
 * Return: 0, or -ENOMEM past the device's or the user's bound (a kernel
 * consumer's memory is counted, never refused).
 */
int sroce_kmem_charge(struct sroce_dev *sdev, struct sroce_kmem_user *ku,
		      size_t bytes)
{
	atomic64_t *dev = &sdev->counters[SROCE_CNT_KMEM_BYTES];

	if (!ku) {
		atomic64_add(bytes, dev);
		return 0;
	}
	if (!sroce_kmem_add_within(dev, bytes,
				   sroce_kmem_bound(READ_ONCE(max_kmem_mb), 1)))
		goto refused;
	if (!sroce_kmem_add_within(&ku->user->bytes, bytes,
				   sroce_kmem_bound(READ_ONCE(max_user_kmem_mb),
						    2))) {
		atomic64_sub(bytes, dev);
		goto refused;
	}
	atomic64_add(bytes, &ku->bytes);
	return 0;

refused:
	sroce_count(sdev, SROCE_CNT_KMEM_REFUSED);
	sroce_dbg_dev(sdev, "%zu bytes for uid %u refused: %lld on the device, %lld the user's\n",
		      bytes, from_kuid(&init_user_ns, ku->user->uid),
		      atomic64_read(dev), atomic64_read(&ku->user->bytes));
	return -ENOMEM;
}

/**
 * sroce_kmem_start - an object's memory will be charged to @ku
 * @k: the object's record
 * @ku: the user (the object takes a reference), or NULL for a kernel
 *      consumer's object
 */
void sroce_kmem_start(struct sroce_kmem *k, struct sroce_kmem_user *ku)
{
	k->ku = sroce_kmem_user_hold(ku);
	atomic_long_set(&k->bytes, 0);
}

/* The object is gone: give back all it charged. Process context. */
void sroce_kmem_end(struct sroce_dev *sdev, struct sroce_kmem *k)
{
	sroce_kmem_uncharge(sdev, k->ku, atomic_long_xchg(&k->bytes, 0));
	sroce_kmem_user_put(sdev, k->ku);
	k->ku = NULL;
}

/* Give back what sroce_kmem_charge() counted. Any context. */
void sroce_kmem_uncharge(struct sroce_dev *sdev, struct sroce_kmem_user *ku,
			 size_t bytes)
{
	atomic64_sub(bytes, &sdev->counters[SROCE_CNT_KMEM_BYTES]);
	if (ku) {
		atomic64_sub(bytes, &ku->bytes);
		atomic64_sub(bytes, &ku->user->bytes);
	}
}

/**
 * sroce_kmem_job_start - count a job of @ku's memory, within a bound
 * @ku: the user whose memory the job works on (the caller holds a
 *      reference to an object charged to it), or NULL for a kernel
 *      consumer's, never bounded
 * @kind: the job's kind, counted apart from the others
 * @max: how many of that kind the user may have queued or running, on
 *       every device together
 *
 * Any context.
 * Return: true if counted (sroce_kmem_job_end() when the job is done),
 * false if the user has @max already.
 */
bool sroce_kmem_job_start(struct sroce_kmem_user *ku,
			  enum sroce_kmem_job kind, unsigned int max)
{
	return !ku || atomic_add_unless(&ku->user->jobs[kind], 1, max);
}

/* A job sroce_kmem_job_start() counted is done. Any context. */
void sroce_kmem_job_end(struct sroce_kmem_user *ku, enum sroce_kmem_job kind)
{
	if (ku)
		atomic_dec(&ku->user->jobs[kind]);
}

/*
 * @user's queue, made if it has none: held until sroce_user_wq_put(). Under
 * the user's own lock, which no other user's QPs wait for: alloc_workqueue()
 * takes the workqueue code's wq_pool_mutex (on 6.12 the CPU hotplug lock
 * too), and a user's first QP holds up only the user's own.
 */
static struct workqueue_struct *sroce_user_wq_get(struct sroce_user *user,
						  unsigned int flags,
						  int max_active)
{
	struct workqueue_struct *wq;

	mutex_lock(&user->lock);
	if (!user->wq)
		user->wq = alloc_workqueue("sroce_user_%u", flags, max_active,
					   from_kuid(&init_user_ns, user->uid));
	wq = user->wq;
	if (wq)
		user->wq_holders++;
	mutex_unlock(&user->lock);
	return wq;
}

/*
 * Give @user's queue back; the last holder destroys it, after the lock.
 * Every holder has seen that no QP of its own is left to queue on it
 * (sroce_kmem_wq_put()), so the last one destroys an idle queue: from a
 * QP's destroy, never from a work item of the queue. A first QP meanwhile
 * makes a new one, of the same name.
 */
static void sroce_user_wq_put(struct sroce_user *user)
{
	struct workqueue_struct *wq = NULL;

	mutex_lock(&user->lock);
	if (!WARN_ON(!user->wq_holders) && !--user->wq_holders) {
		wq = user->wq;
		user->wq = NULL;
	}
	mutex_unlock(&user->lock);
	if (wq)
		destroy_workqueue(wq);
}

/**
 * sroce_kmem_load - create the users' release workqueue, at module load
 *
 * Return: 0, or -ENOMEM. sroce_kmem_exit() undoes it.
 */
int sroce_kmem_load(void)
{
	sroce_release_wq = alloc_workqueue("sroce_release", WQ_UNBOUND,
					   WQ_UNBOUND_MAX_ACTIVE);
	return sroce_release_wq ? 0 : -ENOMEM;
}

/**
 * sroce_kmem_exit - at module unload (or a failed load): no user is left
 *
 * Every device is gone, which waited for every queued release of its
 * objects (each holds its device, and gives it back last). The users' work
 * items may still be running to their end: destroying their queue waits
 * for them, and so for their users' last references. Then every record of
 * a user is gone. A user left would be a reference lost: WARN, and destroy
 * its queue all the same (its items run the module's code), with the
 * entry.
 */
void sroce_kmem_exit(void)
{
	struct sroce_user *user;
	unsigned long key;

	destroy_workqueue(sroce_release_wq);
	WARN_ON(sroce_kernel_user.releasing || sroce_kernel_user.release_pages);
	WARN_ON(!xa_empty(&sroce_users));
	xa_for_each(&sroce_users, key, user) {
		if (user->wq)
			destroy_workqueue(user->wq);
		kfree(user);
	}
	xa_destroy(&sroce_users);
}

/*
 * What a user's workqueue costs, charged to the user: its part on each
 * possible CPU (the kernel's struct pool_workqueue, 256-byte aligned), and
 * the queue itself with its name. Not charged to a memory cgroup: the
 * kernel allocates it without __GFP_ACCOUNT. The queue is one for all
 * devices, but charged on each device where the user has a QP, so that
 * each device's record gives back what it took (against the user's bound
 * on all devices, once for each: a bound from above, a few KiB a CPU).
 */
static size_t sroce_kmem_wq_bytes(void)
{
	return (num_possible_cpus() + 4) * 256;
}

/**
 * sroce_kmem_wq_get - the user's own workqueue, made if it has none
 * @sdev: the device
 * @ku: the user (the caller holds a reference)
 * @flags: the queue's flags, if it is made (alloc_workqueue())
 * @max_active: and its max_active
 *
 * The queue is named "sroce_user_" and the user's uid (a worker running
 * one of its items shows it in its /proc/PID/comm). It is the user's on
 * every device (struct sroce_user): made when the user has none,
 * charged to the user and the device when it has none on @sdev (refused
 * past either's bound), and gone once the last holder on the last device
 * gave it back. Process context.
 * Return: the queue, held until sroce_kmem_wq_put(); NULL if it could not
 * be made (no memory, or past a bound: kmem_refused counts that).
 */
struct workqueue_struct *sroce_kmem_wq_get(struct sroce_dev *sdev,
					   struct sroce_kmem_user *ku,
					   unsigned int flags, int max_active)
{
	struct workqueue_struct *wq, *extra;

	mutex_lock(&sdev->kmem_lock);
	wq = ku->wq;
	if (wq)
		ku->wq_users++;
	mutex_unlock(&sdev->kmem_lock);
	if (wq)
		return wq;

	/*
	 * The user's first QP on @sdev: charge it the queue and take a hold,
	 * the device's lock dropped, then let the first to come back publish
	 * its hold. A create, or the last destroy, may have come meanwhile:
	 * holds taken at once are holds of the same queue.
	 */
	if (sroce_kmem_charge(sdev, ku, sroce_kmem_wq_bytes()))
		return NULL;
	extra = sroce_user_wq_get(ku->user, flags, max_active);
	if (!extra)
		goto uncharge;
	mutex_lock(&sdev->kmem_lock);
	if (!ku->wq)
		swap(ku->wq, extra);
	wq = ku->wq;
	ku->wq_users++;
	mutex_unlock(&sdev->kmem_lock);
	if (!extra)
		return wq;
	sroce_user_wq_put(ku->user);
uncharge:
	sroce_kmem_uncharge(sdev, ku, sroce_kmem_wq_bytes());
	return wq;
}

/**
 * sroce_kmem_wq_put - give back what sroce_kmem_wq_get() gave
 * @sdev: the device
 * @ku: the user (the caller holds a reference)
 *
 * The last holder on @sdev gives the user's queue back, and the last on
 * every device destroys it, which waits for every item on it: each holder
 * must have seen that nothing of its own is queued there or running, nor
 * can be again. Process context, never a work item of this queue, nor
 * under a lock its items take.
 */
void sroce_kmem_wq_put(struct sroce_dev *sdev, struct sroce_kmem_user *ku)
{
	struct workqueue_struct *wq = NULL;

	mutex_lock(&sdev->kmem_lock);
	if (!--ku->wq_users) {
		wq = ku->wq;
		ku->wq = NULL;
	}
	mutex_unlock(&sdev->kmem_lock);
	if (!wq)
		return;
	sroce_user_wq_put(ku->user);
	sroce_kmem_uncharge(sdev, ku, sroce_kmem_wq_bytes());
}
