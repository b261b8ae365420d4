// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * sroce: device and link management.
 *
 * "rdma link add NAME type sroce netdev DEV" creates one sroce_dev bound to
 * DEV.  The device lives until "rdma link delete", until DEV disappears or
 * until the module is unloaded; ib_core calls sroce_dealloc_driver() once,
 * whichever comes first, and that is where a device leaves our list.
 *
 * Network namespaces: a device sends and receives in the namespace its DEV
 * is in when the link is added (the UDP sockets of sroce_net.c).  If DEV
 * later leaves that namespace, or the namespace is deleted, DEV's
 * NETDEV_UNREGISTER deletes the link.  Which namespaces see the device is
 * ib_core's business ("rdma system set netns shared|exclusive"; in exclusive
 * mode "rdma dev set NAME netns NS" moves it).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>

#include "sroce_loc.h"
#include "sroce_mem_api.h"
#include "sroce_task.h"
#include "sroce.h"

MODULE_AUTHOR("sroce developers");
MODULE_DESCRIPTION("Soft RoCEv2 RDMA device");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("sroce");
/* Applications reach us through ib_uverbs; load it with us (no udev here). */
MODULE_SOFTDEP("pre: ib_uverbs");

/*
 * sroce_dev_list holds every registered device, protected by sroce_dev_lock.
 * A device is added once ib_register_device() has succeeded and removed by
 * sroce_dealloc_driver().  sroce_dev_lock is never held while taking
 * rtnl_lock, so the netdev notifier (which runs under rtnl) may take it.
 */
static LIST_HEAD(sroce_dev_list);
static DEFINE_MUTEX(sroce_dev_lock);

/* Serialises link creation, so that a netdev is never bound twice. */
static DEFINE_MUTEX(sroce_newlink_lock);

/**
 * sroce_dev_get_by_netdev - find the device bound to a net_device
 * @ndev: the net_device
 *
 * Return: the device with an ib_device reference held (release it with
 * ib_device_put()), or NULL if none is bound to @ndev or it is going away.
 */
struct sroce_dev *sroce_dev_get_by_netdev(struct net_device *ndev)
{
	struct sroce_dev *sdev, *found = NULL;

	mutex_lock(&sroce_dev_lock);
	list_for_each_entry(sdev, &sroce_dev_list, list) {
		if (sdev->ndev == ndev) {
			if (ib_device_try_get(&sdev->ibdev))
				found = sdev;
			break;
		}
	}
	mutex_unlock(&sroce_dev_lock);
	return found;
}

static bool sroce_netdev_bound(struct net_device *ndev)
{
	struct sroce_dev *sdev;
	bool bound = false;

	mutex_lock(&sroce_dev_lock);
	list_for_each_entry(sdev, &sroce_dev_list, list)
		bound |= sdev->ndev == ndev;
	mutex_unlock(&sroce_dev_lock);
	return bound;
}

enum ib_port_state sroce_netdev_port_state(struct net_device *ndev)
{
	return sroce_ndev_active(ndev) ? IB_PORT_ACTIVE : IB_PORT_DOWN;
}

/**
 * sroce_port_update - follow the net_device's state
 * @sdev: the device
 *
 * Sets the port ACTIVE when the net_device is up with carrier and DOWN
 * otherwise, and reports each change with IB_EVENT_PORT_ACTIVE or
 * IB_EVENT_PORT_ERR.
 */
void sroce_port_update(struct sroce_dev *sdev)
{
	enum ib_port_state state = sroce_netdev_port_state(sdev->ndev);
	struct ib_event ev = {
		.device = &sdev->ibdev,
		.element.port_num = SROCE_PORT,
	};

	mutex_lock(&sdev->state_lock);
	if (state == sdev->port_state) {
		mutex_unlock(&sdev->state_lock);
		return;
	}
	sdev->port_state = state;
	ev.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
					     IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
	mutex_unlock(&sdev->state_lock);
}

/*
 * Each table has its own lock class: the QP table's lock is taken in
 * softirq context (packets find their QP there), the memory table's only in
 * process context, and lockdep must not take one for the other (xarrays
 * initialised in one place would otherwise share a class).
 */
static struct lock_class_key sroce_mem_xa_key, sroce_qp_xa_key,
			     sroce_srq_xa_key, sroce_ah_xa_key;

static void sroce_xa_init(struct xarray *xa, gfp_t flags,
			  struct lock_class_key *key)
{
	xa_init_flags(xa, flags);
	lockdep_set_class(&xa->xa_lock, key);
}

static int sroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct sroce_dev *sdev;
	bool gone;
	int err;

	if (ndev->type != ARPHRD_ETHER || is_vlan_dev(ndev)) {
		pr_err("%s is not an Ethernet device\n", ndev->name);
		return -EINVAL;
	}

	mutex_lock(&sroce_newlink_lock);
	if (sroce_netdev_bound(ndev)) {
		pr_err("%s already has an sroce device\n", ndev->name);
		err = -EEXIST;
		goto out_unlock;
	}

	sdev = ib_alloc_device(sroce_dev, ibdev);
	if (!sdev) {
		err = -ENOMEM;
		goto out_unlock;
	}
	sdev->ndev = ndev;
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);
	INIT_LIST_HEAD(&sdev->list);
	mutex_init(&sdev->state_lock);
	sroce_xa_init(&sdev->mem_xa, 0, &sroce_mem_xa_key);
	/*
	 * Numbers come from xa_alloc_cyclic_irq(): the flag makes the xarray
	 * enable interrupts again when it drops its lock to allocate.
	 */
	sroce_xa_init(&sdev->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ,
		      &sroce_qp_xa_key);
	sroce_xa_init(&sdev->srq_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ,
		      &sroce_srq_xa_key);
	sroce_xa_init(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ,
		      &sroce_ah_xa_key);
	spin_lock_init(&sdev->mcast_lock);
	INIT_LIST_HEAD(&sdev->mcast_groups);
	sroce_kmem_init(sdev);
	sdev->port_state = sroce_netdev_port_state(ndev);

	err = sroce_net_attach(sdev);
	if (!err)
		err = sroce_register_device(sdev, ibdev_name);
	if (err) {
		ib_dealloc_device(&sdev->ibdev);
		goto out_unlock;
	}

	/*
	 * The netdev notifier unregisters our device when @ndev goes away, but
	 * only once the device is on the list.  Under rtnl, @ndev is either
	 * still registered (its NETDEV_UNREGISTER is yet to come and will find
	 * us) or already unregistering, in which case we undo the link here.
	 */
	rtnl_lock();
	gone = ndev->reg_state != NETREG_REGISTERED;
	if (!gone) {
		mutex_lock(&sroce_dev_lock);
		list_add_tail(&sdev->list, &sroce_dev_list);
		mutex_unlock(&sroce_dev_lock);
	}
	rtnl_unlock();

	if (gone) {
		ib_unregister_device(&sdev->ibdev);
		err = -ENODEV;
	}
out_unlock:
	mutex_unlock(&sroce_newlink_lock);
	return err;
}

static struct rdma_link_ops sroce_link_ops = {
	.type = "sroce",
	.newlink = sroce_newlink,
};

/* Called by ib_core exactly once, when the device is being freed. */
void sroce_dealloc_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	mutex_lock(&sroce_dev_lock);
	list_del_init(&sdev->list);
	mutex_unlock(&sroce_dev_lock);
	sroce_net_detach(sdev);
	netdev_put(sdev->ndev, &sdev->ndev_tracker);
	mutex_destroy(&sdev->state_lock);
	WARN_ON(!xa_empty(&sdev->mem_xa));
	xa_destroy(&sdev->mem_xa);
	sroce_key_exit(sdev);
	WARN_ON(!xa_empty(&sdev->qp_xa));
	xa_destroy(&sdev->qp_xa);
	WARN_ON(!xa_empty(&sdev->srq_xa));
	xa_destroy(&sdev->srq_xa);
	WARN_ON(!list_empty(&sdev->mcast_groups));
	WARN_ON(!xa_empty(&sdev->ah_xa));
	xa_destroy(&sdev->ah_xa);
	sroce_kmem_fini(sdev);
}

static int sroce_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct sroce_dev *sdev;

	switch (event) {
	case NETDEV_UNREGISTER:
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		break;
	default:
		return NOTIFY_DONE;
	}

	sdev = sroce_dev_get_by_netdev(ndev);
	if (!sdev)
		return NOTIFY_DONE;

	if (event == NETDEV_UNREGISTER)
		ib_unregister_device_queued(&sdev->ibdev);
	else
		sroce_port_update(sdev);

	ib_device_put(&sdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block sroce_netdev_notifier = {
	.notifier_call = sroce_netdev_event,
};

/* Unregister every device; waits for unregistrations already under way. */
static void sroce_unregister_all(void)
{
	struct sroce_dev *sdev;

	for (;;) {
		mutex_lock(&sroce_dev_lock);
		sdev = list_first_entry_or_null(&sroce_dev_list,
						struct sroce_dev, list);
		if (sdev)
			get_device(&sdev->ibdev.dev);
		mutex_unlock(&sroce_dev_lock);
		if (!sdev)
			return;

		ib_unregister_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
	}
}

static int __init sroce_init(void)
{
	int err;

	sroce_hdr_init();
	err = sroce_kmem_load();
	if (err)
		return err;
	err = sroce_task_init();
	if (err)
		goto err_kmem;
	err = sroce_odp_init();
	if (err)
		goto err_task;
	err = sroce_net_init();
	if (err)
		goto err_odp;
	err = register_netdevice_notifier(&sroce_netdev_notifier);
	if (err)
		goto err_net;

	sroce_mem_debugfs_init();
	rdma_link_register(&sroce_link_ops);
	return 0;

err_net:
	sroce_net_exit();
err_odp:
	sroce_odp_exit();
err_task:
	sroce_task_exit();
err_kmem:
	sroce_kmem_exit();
	return err;
}

static void __exit sroce_exit(void)
{
	rdma_link_unregister(&sroce_link_ops);
	sroce_unregister_all();
	unregister_netdevice_notifier(&sroce_netdev_notifier);
	sroce_mem_debugfs_exit();
	sroce_net_exit();
	sroce_odp_exit();
	sroce_task_exit();
	sroce_kmem_exit();
}

module_init(sroce_init);
module_exit(sroce_exit);
