/* plan_build.h - what the plan builders share (plan.c, plan_algos.c, and
 * src/engine/plan_file_build.c for the chunk split). */
#ifndef DFCCL_PLAN_BUILD_H
#define DFCCL_PLAN_BUILD_H

#include <stdlib.h>
#include "core/plan.h"

/* Groups up to this size are built on the stack. */
#define PLAN_GROUP_MAX 64

/* Ranks of a ring in ring order; this rank is ranks[i]. */
typedef struct plan_group {
    const int *ranks;
    int        m;
    int        i;
} plan_group_t;

/* Appends a step; a peer of -1: no receive / no send. */
void plan_push(dfccl_plan_t *b, int recv_peer, int send_peer, int reduce,
               dfccl_buf_t src_buf, uint64_t src_off,
               dfccl_buf_t dst_buf, uint64_t dst_off, uint64_t count);
/* Block c of parts near-equal blocks of [base, base + len). */
void plan_split(uint64_t base, uint64_t len, int parts, int c, uint64_t *off, uint64_t *n);

void plan_ring_reduce_scatter(dfccl_plan_t *b, const plan_group_t *g, dfccl_buf_t src,
                              const uint64_t *src_off, const uint64_t *len,
                              dfccl_buf_t dst, uint64_t dst_off);
void plan_ring_allgather(dfccl_plan_t *b, const plan_group_t *g, dfccl_buf_t own_src,
                         uint64_t own_src_off, const uint64_t *off, const uint64_t *len);
void plan_ring_allreduce(dfccl_plan_t *b, const plan_group_t *g, dfccl_buf_t src,
                         uint64_t base, uint64_t len);

dfccl_status_t plan_hierarchical(const dfccl_plan_call_t *call, const dfccl_topo_t *t, int rank,
                                 dfccl_plan_t *b);
dfccl_status_t plan_recursive_doubling(const dfccl_plan_call_t *call, const dfccl_topo_t *t,
                                       int rank, dfccl_plan_t *b);

#endif
