// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: memory windows.
 *
 * A window is an entry of the memory table like an MR's (see sroce_mr.c),
 * with its own key index; its tag is the consumer's byte, changed by every
 * bind. While bound, its map is a view of part of the MR's pages with the
 * window's own range and access, so the one lookup (sroce_mem_get()) checks
 * window keys exactly as MR keys, plus: windows are remote keys only, and a
 * type 2 window works only through the QP that bound it.
 *
 *   alloc --> INVALID --bind--> VALID --LOCAL_INV / SEND_WITH_INV (type 2),
 *                ^                |     bind with length 0 (type 1)
 *                +----------------+
 *   type 1 may be bound again while VALID; dealloc from any state.
 */
#include <linux/overflow.h>
#include <linux/slab.h>

#include "sroce_mem.h"
#include "sroce_mem_api.h"
#include "sroce.h"

static struct sroce_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct sroce_mw, ibmw);
}

int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mw *mw = to_smw(ibmw);
	struct sroce_mw_ent *ent;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	if (atomic_inc_return(&sdev->num_mw) > SROCE_MAX_MW) {
		err = -ENOMEM;
		goto err_count;
	}
	ent = kzalloc(sizeof(*ent), GFP_KERNEL);
	if (!ent) {
		err = -ENOMEM;
		goto err_count;
	}
	ent->mem.kind = SROCE_MEM_MW;
	ent->mem.state = SROCE_MEM_INVALID;
	spin_lock_init(&ent->lock);
	ent->type = ibmw->type;
	ent->pd = ibmw->pd;
	err = sroce_mem_add_key(sdev, &ent->mem);
	if (err)
		goto err_free;
	ibmw->rkey = ent->mem.key;
	mw->ent = ent;
	return 0;

err_free:
	kfree(ent);
err_count:
	atomic_dec(&sdev->num_mw);
	return err;
}

/*
 * Make the window unbound; its lock held. Returns the map to drop and sets
 * *@mr to the MR it was bound to, whose count of windows to drop, both
 * after the lock (dropping a map may unpin pages) and after the old map's
 * last access where the caller waits for it (the MR cannot be
 * deregistered or re-registered until then: sroce_mw_put_bound()).
 */
static struct sroce_map *sroce_mw_unbind(struct sroce_mw_ent *ent,
					 struct sroce_mr **mr)
{
	struct sroce_map *old;

	lockdep_assert_held(&ent->lock);
	WRITE_ONCE(ent->mem.state, SROCE_MEM_INVALID);
	old = rcu_replace_pointer(ent->mem.map, NULL,
				  lockdep_is_held(&ent->lock));
	*mr = ent->mr;
	ent->mr = NULL;
	WRITE_ONCE(ent->qpn, 0);
	return old;
}

/*
 * Let go of what an unbind took from a window: its map (@retire: once no
 * access uses it, in process context; the engine never waits, since an
 * access may be held up by an ODP fault for as long as a user likes, so
 * after a rebind or an invalidation an access that found the old map may
 * still finish, the MR's pages pinned by that map), then its MR's count of
 * bound windows.
 *
 * Without a retirement the map is left as a killed retirement leaves one
 * (sroce_map_wait()): orphaned, since its last access may be any QP's, in
 * another context's engine, which must not wait for a pin's release
 * (sroce_pin_put_async()); and retired, so that a job that kept it faults
 * nothing through a window that no longer is (sroce_map_use_kept()).
 * Both are set before the put, whose release orders them before the last.
 */
static void sroce_mw_put_bound(struct sroce_map *old, struct sroce_mr *mr,
			       bool retire)
{
	if (old && retire) {
		sroce_map_retire(old);
	} else if (old) {
		sroce_map_orphan(old);
		sroce_map_put(old);
	}
	if (mr)
		atomic_dec(&mr->num_mw);
}

int sroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mw_ent *ent = to_smw(ibmw)->ent;
	struct sroce_map *old;
	struct sroce_mr *mr;

	sroce_mem_del(sdev, &ent->mem);
	spin_lock_bh(&ent->lock);
	old = sroce_mw_unbind(ent, &mr);
	WRITE_ONCE(ent->mem.state, SROCE_MEM_FREE);
	spin_unlock_bh(&ent->lock);
	/* No access through the window is under way when this returns. */
	sroce_mw_put_bound(old, mr, true);
	kfree_rcu(ent, rcu);
	atomic_dec(&sdev->num_mw);
	return 0;
}

/*
 * The window whose table index @key has, under RCU. A bind names its
 * window by any key it had (the provider knows the one from allocation or
 * the last type 1 bind); invalidation must give the current key.
 *
 * Callers take the entry's lock with spin_lock_bh() before they leave the
 * RCU read-side section, and may use the entry until spin_unlock_bh():
 * sroce_dealloc_mw() frees it with kfree_rcu() after erasing it from the
 * table, and a region with bottom halves disabled is itself an RCU reader
 * that grace period waits for (Documentation/RCU/whatisRCU.rst), so the
 * entry stays allocated until the caller unlocks it. If sroce_dealloc_mw()
 * took the lock first, the caller finds the entry SROCE_MEM_FREE.
 */
static struct sroce_mw_ent *sroce_mw_find(struct sroce_dev *sdev, u32 key)
{
	struct sroce_mem *mem = sroce_mem_find(sdev, key);

	if (!mem || mem->kind != SROCE_MEM_MW)
		return NULL;
	return container_of(mem, struct sroce_mw_ent, mem);
}

/*
 * Why window @ent may not take bind @b from a QP of @pd (NULL: it may).
 * Under the window's lock.
 */
static const char *sroce_mw_bind_refused(struct sroce_mw_ent *ent,
					 struct ib_pd *pd,
					 const struct sroce_bind *b)
{
	lockdep_assert_held(&ent->lock);
	if (READ_ONCE(ent->mem.state) == SROCE_MEM_FREE)
		return "no such window";
	/* C10-72 */
	if (ent->pd != pd)
		return "the window is another PD's";
	/* o10-37.2.40: a type 2 window is invalidated, not bound empty. */
	if (ent->type == IB_MW_TYPE_2 && !b->length)
		return "a type 2 window's bind of length 0";
	/* o10-37.2.30 */
	if (ent->type == IB_MW_TYPE_2 && ent->mem.state != SROCE_MEM_INVALID)
		return "a type 2 window still bound";
	return NULL;
}

/**
 * sroce_mw_bind - execute a bind WQE (IBV_WR_BIND_MW, or ibv_bind_mw())
 * @sdev: the device
 * @pd: the PD of the QP that posted it
 * @qpn: that QP
 * @b: what to bind (the window by its table index: the bind's PD check
 *     is what guards it)
 *
 * The checks of the IB spec, each named at its line (IBTA volume 1,
 * chapter 10): window and MR in the QP's PD, the MR allows binding, the
 * range inside the MR, remote write or atomic only if the MR allows local
 * write, QP-bound windows for type 2 only, a type 2 window free before it
 * is bound. A type 1 bind of length 0 unbinds. Either type may be
 * zero-based: ibv_bind_mw(3) offers IBV_ACCESS_ZERO_BASED for type 1 too,
 * where the spec (o10-36.2.2) and rdma_rxe and mlx5 refuse it. The window
 * takes @b->new_key.
 *
 * Return: 0; -EINVAL for a bind the checks refuse, or -ENOMEM without
 * memory for the window's map (either way the WQE completes with
 * IB_WC_MW_BIND_ERR).
 */
int sroce_mw_bind(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
		  const struct sroce_bind *b)
{
	const int remote = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_REMOTE_ATOMIC;
	struct sroce_map *mr_map = NULL, *map = NULL, *old = NULL;
	struct sroce_mr *mr = NULL, *old_mr = NULL;
	struct sroce_mw_ent *ent;
	bool zero_based = b->access & IB_ZERO_BASED;
	const char *why;
	int err = -EINVAL;

	/* The consumer changes the key's tag only, never its index. */
	why = "the new key names another window";
	if (sroce_key_index(b->new_key) != sroce_key_index(b->mw_key))
		goto out;
	/*
	 * Local write may be asked for; a window grants remote access only
	 * (a window's key is an R_Key, never an L_Key).
	 */
	why = "access flags";
	if (b->access & ~(remote | IB_ACCESS_LOCAL_WRITE | IB_ZERO_BASED))
		goto out;
	if (b->length) {
		/* C10-73, C10-75: checked by sroce_mr_bind_get(). */
		mr_map = sroce_mr_bind_get(sdev, pd, b->mr_lkey, b->addr,
					   b->length, &mr);
		why = "the MR's key, PD, bind access or range";
		if (IS_ERR(mr_map)) {
			err = PTR_ERR(mr_map);
			mr_map = NULL;
			goto out;
		}
		/* C10-74 */
		why = "remote write or atomic, and the MR has no local write";
		if ((b->access & (IB_ACCESS_REMOTE_WRITE |
				  IB_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr_map->access & IB_ACCESS_LOCAL_WRITE))
			goto out;
		err = -ENOMEM;
		why = "no memory";
		map = sroce_map_window(mr_map, pd, b->access & remote,
				       zero_based ? 0 : b->addr, b->addr,
				       b->length);
		if (!map)
			goto out;
		map->key = b->new_key;
	}

	err = -EINVAL;
	why = "no such window";
	rcu_read_lock();
	ent = sroce_mw_find(sdev, b->mw_key);
	if (!ent) {
		rcu_read_unlock();
		goto out;
	}
	/* Held from here, the lock keeps ent allocated: sroce_mw_find(). */
	spin_lock_bh(&ent->lock);
	rcu_read_unlock();
	why = sroce_mw_bind_refused(ent, pd, b);
	if (!why) {
		old = sroce_mw_unbind(ent, &old_mr);
		WRITE_ONCE(ent->mem.key, b->new_key);
		if (map) {
			rcu_assign_pointer(ent->mem.map, map);
			ent->mr = mr;
			WRITE_ONCE(ent->qpn,
				   ent->type == IB_MW_TYPE_2 ? qpn : 0);
			/* release: map, key, QP seen before the state */
			smp_store_release(&ent->mem.state, SROCE_MEM_VALID);
			map = NULL;
			mr = NULL;
		}
		err = 0;
	}
	spin_unlock_bh(&ent->lock);
out:
	if (err)
		sroce_dbg_mw(sdev, b->mw_key, "bind refused: %s\n", why);
	sroce_mw_put_bound(old, old_mr, false);
	if (map)
		sroce_map_put(map);
	if (mr_map)
		sroce_map_put(mr_map);
	if (mr)
		atomic_dec(&mr->num_mw);
	return err;
}

/**
 * sroce_mw_invalidate - invalidate a bound type 2 window
 * @sdev: the device
 * @pd: the PD of the QP (IB_WR_LOCAL_INV) or of the receiving QP
 *      (SEND_WITH_INV)
 * @qpn: that QP, which must be the one the window is bound through
 * @key: the window's current key
 *
 * Return: 0, or -EINVAL for a key that names no type 2 window of @pd
 * bound through @qpn.
 */
int sroce_mw_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
			u32 key)
{
	struct sroce_map *old = NULL;
	struct sroce_mr *old_mr = NULL;
	struct sroce_mw_ent *ent;
	int err = -EINVAL;

	rcu_read_lock();
	ent = sroce_mw_find(sdev, key);
	if (!ent) {
		rcu_read_unlock();
		sroce_dbg_mw(sdev, key, "invalidation refused: no such window\n");
		return -EINVAL;
	}
	/* Held from here, the lock keeps ent allocated: sroce_mw_find(). */
	spin_lock_bh(&ent->lock);
	rcu_read_unlock();
	/*
	 * o10-37.2.26: never a type 1 window. A type 2 window only by its
	 * current key, through the QP it is bound to, in its PD.
	 */
	if (ent->type == IB_MW_TYPE_2 && ent->pd == pd && ent->qpn == qpn &&
	    READ_ONCE(ent->mem.key) == key &&
	    ent->mem.state == SROCE_MEM_VALID) {
		old = sroce_mw_unbind(ent, &old_mr);
		err = 0;
	}
	spin_unlock_bh(&ent->lock);
	if (err)
		sroce_dbg_mw(sdev, key, "invalidation of key %#x through qp#%u refused\n",
			     key, qpn);
	sroce_mw_put_bound(old, old_mr, false);
	return err;
}
