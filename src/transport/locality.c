/* locality.c - locality.h with hwloc; the topology is loaded once. */
#include <hwloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "transport/locality.h"
#include "util/log.h"

static pthread_once_t locality_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t locality_topo;
static int locality_ok;
static int locality_numa = -1;
static hwloc_nodeset_t locality_nodeset;

/* The NUMA node that holds all of set's CPUs, or -1. */
static int numa_of(hwloc_const_cpuset_t set)
{
    hwloc_obj_t obj = NULL;
    int found = -1;

    while ((obj = hwloc_get_next_obj_by_type(locality_topo, HWLOC_OBJ_NUMANODE, obj)) != NULL)
        if (hwloc_bitmap_isincluded(set, obj->cpuset)) {
            found = (int)obj->logical_index;
            hwloc_bitmap_copy(locality_nodeset, obj->nodeset);
            break;
        }
    return found;
}

static void locality_load(void)
{
    hwloc_cpuset_t set;

    if (hwloc_topology_init(&locality_topo) != 0) return;
    if (hwloc_topology_load(locality_topo) != 0) {
        hwloc_topology_destroy(locality_topo);
        return;
    }
    locality_ok = 1;
    locality_nodeset = hwloc_bitmap_alloc();
    set = hwloc_bitmap_alloc();
    if (set == NULL || locality_nodeset == NULL) return;
    /* bound: the binding says where it stays; unbound: where it runs now */
    if (hwloc_get_cpubind(locality_topo, set, HWLOC_CPUBIND_PROCESS) == 0 &&
        !hwloc_bitmap_isequal(set, hwloc_topology_get_complete_cpuset(locality_topo)))
        locality_numa = numa_of(set);
    if (locality_numa < 0 && hwloc_get_last_cpu_location(locality_topo, set, HWLOC_CPUBIND_THREAD) == 0)
        locality_numa = numa_of(set);
    hwloc_bitmap_free(set);
    dfccl_debug("locality: NUMA node %d of %d", locality_numa,
                hwloc_get_nbobjs_by_type(locality_topo, HWLOC_OBJ_NUMANODE));
}

int dfccl_locality_numa(void)
{
    pthread_once(&locality_once, locality_load);
    return locality_numa;
}

void *dfccl_locality_alloc(size_t bytes)
{
    void *mem;

    pthread_once(&locality_once, locality_load);
    /* one NUMA node only: nothing to choose. Not strict: where binding is
     * refused hwloc still allocates (page-aligned), so NULL is out of memory. */
    if (locality_ok && locality_numa >= 0 &&
        hwloc_get_nbobjs_by_type(locality_topo, HWLOC_OBJ_NUMANODE) > 1)
        mem = hwloc_alloc_membind(locality_topo, bytes, locality_nodeset, HWLOC_MEMBIND_BIND,
                                  HWLOC_MEMBIND_BYNODESET);
    else
        mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    /* zeroed, as callers keep request tables in it that are scanned whole
     * (a link closed before all its receives were posted); the first touch
     * also places the pages where the binding asks */
    if (mem != NULL) memset(mem, 0, bytes);
    return mem;
}

void dfccl_locality_free(void *addr, size_t bytes)
{
    if (addr == NULL) return;
    if (locality_ok && locality_numa >= 0 &&
        hwloc_get_nbobjs_by_type(locality_topo, HWLOC_OBJ_NUMANODE) > 1)
        hwloc_free(locality_topo, addr, bytes);
    else
        free(addr);
}
