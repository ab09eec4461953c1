/* stats.c - per-process counters of what the engine carried. */
#include <string.h>
#include "internal.h"

static dfccl_stats_t stats;

#define STAT_ADD(field, v) __atomic_add_fetch(&(field), (v), __ATOMIC_RELAXED)

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

void dfccl_stats_get(dfccl_stats_t *out)
{
    uint64_t *dst = (uint64_t *)out, *src = (uint64_t *)&stats;
    for (size_t i = 0; i < sizeof(stats) / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
