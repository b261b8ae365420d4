/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * sroce: soft RoCEv2 RDMA device.
 *
 * Every header of the driver but the engine's (sroce_task.h) at once, for
 * the files that still include it: the limits (sroce_param.h), the objects
 * (sroce_verbs.h), the calls between files (sroce_loc.h), memory
 * (sroce_mem_api.h).
 */
#ifndef SROCE_H
#define SROCE_H

#include "sroce_hdr.h"
#include "sroce_loc.h"
#include "sroce_mem_api.h"
#include "sroce_param.h"
#include "sroce_queue.h"
#include "sroce_verbs.h"

#endif /* SROCE_H */
