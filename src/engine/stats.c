/* stats.c - per-process counters of what the engine carried. */
#include <string.h>
#include "engine/internal.h"

static dfccl_stats_t stats;
/* What the holder of the host scheduler's lock counts: one writer at a
 * time (a process has one context, dfccl.h, so one such lock), so a plain
 * store of the sum (readers load each counter whole) instead of an atomic
 * addition, which costs a small collective dearly. */
static dfccl_stats_t sched_stats;

#define STAT_ADD(field, v) __atomic_add_fetch(&(field), (v), __ATOMIC_RELAXED)
#define SCHED_ADD(field, v) \
    __atomic_store_n(&(field), __atomic_load_n(&(field), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

void dfccl_stats_add_posted(dfccl_coll_type_t type) { STAT_ADD(stats.posted[type], 1); }
void dfccl_stats_add_bytes(uint64_t bytes) { STAT_ADD(stats.bytes_sent, bytes); }
void dfccl_stats_add_comm(void) { STAT_ADD(stats.comms_created, 1); }
void dfccl_stats_add_net(void) { STAT_ADD(stats.net_collectives, 1); }
void dfccl_stats_add_net_bytes(uint64_t bytes) { STAT_ADD(stats.net_bytes_sent, bytes); }
void dfccl_stats_add_algorithm(unsigned algo)
{
    if (algo < sizeof(stats.by_algorithm) / sizeof(stats.by_algorithm[0]))
        STAT_ADD(stats.by_algorithm[algo], 1);
}

void dfccl_stats_add_completed(dfccl_coll_type_t type, dfccl_status_t status)
{
    if (status == DFCCL_OK) STAT_ADD(stats.completed[type], 1);
    else STAT_ADD(stats.failed, 1);
}

void dfccl_stats_add_finished(dfccl_coll_type_t type, dfccl_status_t status, uint64_t bytes)
{
    if (status == DFCCL_OK) SCHED_ADD(sched_stats.completed[type], 1);
    else SCHED_ADD(sched_stats.failed, 1);
    if (bytes > 0) SCHED_ADD(sched_stats.bytes_sent, bytes);
}

void dfccl_stats_add_ran(dfccl_coll_type_t type, unsigned algo, dfccl_status_t status,
                         uint64_t bytes)
{
    SCHED_ADD(sched_stats.posted[type], 1);
    if (algo < sizeof(sched_stats.by_algorithm) / sizeof(sched_stats.by_algorithm[0]))
        SCHED_ADD(sched_stats.by_algorithm[algo], 1);
    dfccl_stats_add_finished(type, status, bytes);
}

void dfccl_stats_get(dfccl_stats_t *out)
{
    uint64_t *dst = (uint64_t *)out, *src = (uint64_t *)&stats, *locked = (uint64_t *)&sched_stats;
    for (size_t i = 0; i < sizeof(stats) / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED) +
                 __atomic_load_n(&locked[i], __ATOMIC_RELAXED);
}
