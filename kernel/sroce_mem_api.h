/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: what the rest of the driver sees of memory (MRs and windows).
 *
 * A key is looked up into a map, an opaque handle to what the key grants
 * and how it translates, held until the access is done; copies and
 * atomics go through it. The objects themselves are private to the memory
 * files (sroce_mem.h). See "Memory keys and translation" in
 * Documentation/sroce.md.
 */
#ifndef SROCE_MEM_API_H
#define SROCE_MEM_API_H

#include <linux/types.h>
#include <linux/workqueue.h>

/*
 * On-demand paging (IB_ACCESS_ON_DEMAND, sroce_odp.c) is built only when
 * the kernel has it (Kbuild tests the same condition); SROCE_TEST_NO_ODP
 * (make SROCE_NO_ODP=1) builds as if it had not, to check that ODP stays
 * optional. The code asks SROCE_ODP only: without it the device does not
 * offer ODP (so ib_core refuses ODP registrations), the stubs below and
 * in sroce_mem.h do nothing or fail, and no map has an ODP pin.
 */
#if IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING) && \
	!defined(SROCE_TEST_NO_ODP)
#define SROCE_ODP 1
#else
#define SROCE_ODP 0
#endif

struct ib_device;
struct ib_mr;
struct ib_pd;
struct sroce_dev;
struct sroce_kmem_user;
struct sroce_sge;

/* A key's translation, as a lookup found it (sroce_mem.h). */
struct sroce_map;

/**
 * struct sroce_ahead_job - one job faulting in ahead of a stream
 * @work: the job, on the ODP workqueue (sroce_odp.c)
 * @map: the job's map, set from its queueing until its run is done with
 *       the job's fields (NULL: the slot is free): kept
 *       (sroce_map_keep()), not held, so that no retirement waits for a
 *       job still queued
 * @ibdev: the device of the QP whose responder this is
 * @ku: the QP's user (a reference the QP holds until its destroy), whose
 *      count of fault-ahead jobs the job holds while its @map is set
 *      (sroce_kmem_job_start()), or NULL for a kernel consumer's QP
 * @va: the job's first byte
 * @len: its bytes
 * @write: it faults for writing
 */
struct sroce_ahead_job {
	struct work_struct work;
	struct sroce_map *map;
	struct ib_device *ibdev;
	struct sroce_kmem_user *ku;
	u64 va;
	u64 len;
	bool write;
};

/*
 * Jobs a direction of a responder may have: one still running when the
 * next message comes is not waited for, and the next goes to another.
 */
#define SROCE_AHEAD_JOBS	2

/**
 * struct sroce_ahead - faulting in ahead of a stream of messages
 * @job: the jobs faulting in the pages the next message of a stream will
 *       reach
 * @map_id: the map the last message went through (sroce_map_id())
 * @msg_end: where the last message ended
 *
 * One per direction of a responder (the WRITEs it takes, the READs it
 * answers), under the QP's lock but for a job's fields, which the data
 * path writes only while that job's @map is NULL (not queued, and a run
 * of it done with them).
 */
struct sroce_ahead {
	struct sroce_ahead_job job[SROCE_AHEAD_JOBS];
	u64 map_id;
	u64 msg_end;
};

/*
 * Whether an access may wait for ODP pages to be faulted in. A fault waits
 * for as long as the memory's owner likes (a page of its FUSE file waits,
 * uninterruptibly, for the file's server): an access may wait only where
 * nothing but that owner waits for it in turn.
 */
enum sroce_fault {
	SROCE_FAULT,		/* fault in what is missing, and wait */
	SROCE_NO_FAULT,		/* take only pages present now: else
				 * -EAGAIN, and the caller names what its
				 * message needs to a job that faults it
				 * in beside (sroce_map_fault_later()),
				 * waited for by no QP
				 */
};

/* A window bind, as a send WQE carries it. */
struct sroce_bind {
	u32 mw_key;	/* a key of the window (its index counts) */
	u32 new_key;	/* same index, the consumer's new tag */
	u32 mr_lkey;
	int access;	/* remote access bits, IB_ZERO_BASED */
	u64 addr;
	u64 length;
};

/* sroce_mem.c */
int sroce_key_init(struct sroce_dev *sdev);
void sroce_key_exit(struct sroce_dev *sdev);
struct sroce_map *sroce_mem_get(struct sroce_dev *sdev, struct ib_pd *pd,
				u32 qpn, u32 key, u64 va, u64 len, int access);
u64 sroce_map_id(const struct sroce_map *map);
void sroce_map_put(struct sroce_map *map);
int sroce_map_copy(struct sroce_map *map, u64 va, void *buf, u64 len,
		   bool to_mem, enum sroce_fault fault);
int sroce_copy_sges(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sge, u32 nsge, u32 offset, void *buf,
		    u32 len, bool to_mem, enum sroce_fault fault);
int sroce_map_atomic(struct sroce_map *map, u64 va, u64 compare_add,
		     u64 swap, bool cmp_swap, u64 *orig, enum sroce_fault fault);
int sroce_map_atomic_write(struct sroce_map *map, u64 va, u64 val,
			   enum sroce_fault fault);
void sroce_sges_fault_later(struct sroce_dev *sdev, struct ib_pd *pd,
			    const struct sroce_sge *sge, u32 nsge, u32 offset,
			    u64 len, bool to_mem);

/*
 * A test's hold of an access (sroce_map_test_hold()), only in a kernel built
 * for fault injection; sroce's debugfs directory holds it.
 */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
void sroce_mem_debugfs_init(void);
void sroce_mem_debugfs_exit(void);
void sroce_map_test_hold(struct sroce_map *map);
#else
static inline void sroce_mem_debugfs_init(void)
{
}

static inline void sroce_mem_debugfs_exit(void)
{
}

static inline void sroce_map_test_hold(struct sroce_map *map)
{
}
#endif

/*
 * sroce_odp.c: faulting ahead of a responder's stream of messages, and
 * beside accesses that cannot wait
 */
#if SROCE_ODP
int sroce_odp_init(void);
void sroce_odp_exit(void);
void sroce_ahead_init(struct sroce_ahead *ahead, struct ib_device *ibdev,
		      struct sroce_kmem_user *ku);
void sroce_ahead_reset(struct sroce_ahead *ahead);
void sroce_ahead_stop(struct sroce_ahead *ahead);
void sroce_map_fault_ahead(struct sroce_ahead *ahead, struct sroce_map *map,
			   u64 va, u64 len, bool write);
void sroce_map_fault_later(struct sroce_map *map, u64 va, u64 len,
			   bool write);
#else
/* Without ODP no map is an ODP range: there is nothing to fault ahead. */
static inline int sroce_odp_init(void)
{
	return 0;
}

static inline void sroce_odp_exit(void)
{
}

static inline void sroce_ahead_init(struct sroce_ahead *ahead,
				    struct ib_device *ibdev,
				    struct sroce_kmem_user *ku)
{
}

static inline void sroce_ahead_reset(struct sroce_ahead *ahead)
{
}

static inline void sroce_ahead_stop(struct sroce_ahead *ahead)
{
}

static inline void sroce_map_fault_ahead(struct sroce_ahead *ahead,
					 struct sroce_map *map, u64 va,
					 u64 len, bool write)
{
}

/* Nor any access that cannot wait for its memory. */
static inline void sroce_map_fault_later(struct sroce_map *map, u64 va,
					 u64 len, bool write)
{
}
#endif /* SROCE_ODP */

/* sroce_mr.c: local operations of the send queue */
int sroce_mr_fast_reg(struct sroce_dev *sdev, struct ib_pd *pd,
		      struct ib_mr *ibmr, u32 key, int access);
int sroce_mr_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
			u32 key);

/* sroce_mw.c */
int sroce_mw_bind(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
		  const struct sroce_bind *b);

#endif /* SROCE_MEM_API_H */
