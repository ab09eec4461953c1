/*
 * locality.h - where this process runs, from hwloc: its NUMA node, so
 * that the ranks of a node can be ordered by NUMA node (fewer crossings
 * in a ring) and memory the process works through (its network links'
 * FIFOs) is placed near it.
 */
#ifndef DFCCL_LOCALITY_H
#define DFCCL_LOCALITY_H

#include <stddef.h>

/* Logical index of the NUMA node this process's CPUs belong to (where it
 * is bound, else where it runs now); -1 when unknown or not one. */
int dfccl_locality_numa(void);
/* bytes (64-byte aligned) bound to this process's NUMA node where hwloc
 * can, else ordinary memory; NULL when out of memory. */
void *dfccl_locality_alloc(size_t bytes);
void dfccl_locality_free(void *addr, size_t bytes);

#endif
