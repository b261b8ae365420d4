/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: the kernel memory processes make sroce allocate for them, counted
 * per device and per user and bounded, the jobs their memory has queued on
 * a shared workqueue, bounded per user, each user's own workqueue, and
 * the releases of its objects that may wait for it, run in turn by a work
 * item of the user's own, the memory they hold bounded per user
 * (sroce_kmem.c).
 */
#ifndef SROCE_KMEM_H
#define SROCE_KMEM_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/types.h>

struct sroce_dev;
struct sroce_kmem_user;
struct workqueue_struct;

/**
 * struct sroce_kmem - what an object has charged
 * @ku: its user (a reference), or NULL for a kernel consumer's object
 * @bytes: charged now (a CQ's two resizes may run at once)
 */
struct sroce_kmem {
	struct sroce_kmem_user *ku;
	atomic_long_t bytes;
};

int sroce_kmem_load(void);
void sroce_kmem_init(struct sroce_dev *sdev);
void sroce_kmem_fini(struct sroce_dev *sdev);
void sroce_kmem_exit(void);
struct sroce_kmem_user *sroce_kmem_user_get(struct sroce_dev *sdev);
struct sroce_kmem_user *sroce_kmem_user_hold(struct sroce_kmem_user *ku);
void sroce_kmem_user_put(struct sroce_dev *sdev, struct sroce_kmem_user *ku);
int sroce_kmem_charge(struct sroce_dev *sdev, struct sroce_kmem_user *ku,
		      size_t bytes);
void sroce_kmem_uncharge(struct sroce_dev *sdev, struct sroce_kmem_user *ku,
			 size_t bytes);

void sroce_kmem_start(struct sroce_kmem *k, struct sroce_kmem_user *ku);
void sroce_kmem_end(struct sroce_dev *sdev, struct sroce_kmem *k);

/* The jobs a user's count bounds, each kind on its own (sroce_odp.c). */
enum sroce_kmem_job {
	SROCE_JOB_LATER,	/* faulting in what an access could not wait for */
	SROCE_JOB_AHEAD,	/* faulting in ahead of a stream of messages */
	SROCE_JOB_KINDS,
};

bool sroce_kmem_job_start(struct sroce_kmem_user *ku,
			  enum sroce_kmem_job kind, unsigned int max);
void sroce_kmem_job_end(struct sroce_kmem_user *ku, enum sroce_kmem_job kind);

/* The user's own workqueue, held by its QPs (sroce_task.c). */
struct workqueue_struct *sroce_kmem_wq_get(struct sroce_dev *sdev,
					   struct sroce_kmem_user *ku,
					   unsigned int flags, int max_active);
void sroce_kmem_wq_put(struct sroce_dev *sdev, struct sroce_kmem_user *ku);

/**
 * struct sroce_kmem_release - the release of a user's object that may wait
 *                             for as long as the user likes
 * @entry: in the user's list of releases waiting for its work item
 * @fn: releases the object, and with it this; run by the user's work item,
 *      after the user's earlier releases, with no lock of sroce's held
 * @pages: the pages of memory the object holds until it is released
 *         (the whole folios of pinned pages, a dma-buf's; at least one,
 *         which an ODP range's counts for its own memory), counted against its user's
 *         max_user_release_mb while the release waits in the list and
 *         while @fn runs
 * @sdev: the object's device, held for the release until @fn ended
 *        (sroce_kmem_release_queue() sets it; the work item puts it)
 */
struct sroce_kmem_release {
	struct list_head entry;
	void (*fn)(struct sroce_kmem_release *rel);
	unsigned long pages;
	struct sroce_dev *sdev;
};

void sroce_kmem_release_queue(struct sroce_dev *sdev,
			      struct sroce_kmem_user *ku,
			      struct sroce_kmem_release *rel);
int sroce_kmem_release_room(struct sroce_dev *sdev,
			    struct sroce_kmem_user *ku);

/* Charge @bytes more to @k's user; 0 or -ENOMEM. */
static inline int sroce_kmem_add(struct sroce_dev *sdev, struct sroce_kmem *k,
				 size_t bytes)
{
	int err = sroce_kmem_charge(sdev, k->ku, bytes);

	if (!err)
		atomic_long_add(bytes, &k->bytes);
	return err;
}

/* Give back @bytes of what @k charged. */
static inline void sroce_kmem_sub(struct sroce_dev *sdev, struct sroce_kmem *k,
				  size_t bytes)
{
	sroce_kmem_uncharge(sdev, k->ku, bytes);
	atomic_long_sub(bytes, &k->bytes);
}

#endif /* SROCE_KMEM_H */
