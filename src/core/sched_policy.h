/*
 * sched_policy.h - the scheduling policy, written once for both backends: the host
 * daemon thread (daemon.c) and every block of the GPU daemon kernel
 * (src/kernels/daemon_kernel.cu) decide with these functions.
 *
 * - A global order every rank computes alike: priority (higher first), then
 *   the communicator's key, then the collective's sequence number on it.
 * - The first runnable collective in that order (the head) may wait for its
 *   peers budget_head_ns per turn; the others their own adaptive budget.
 * - A turn that moved data doubles a collective's budget (stickiness), one
 *   that did not halves it, within [budget_min_ns, budget_max_ns].
 */
#ifndef DFCCL_SCHED_POLICY_H
#define DFCCL_SCHED_POLICY_H

#include <stdint.h>
#include "core/portable.h"

typedef struct dfccl_sched_key {
    int32_t  priority;
    uint64_t comm_key;
    uint64_t seq;
} dfccl_sched_key_t;

typedef struct dfccl_sched_budgets {
    uint64_t head_ns;
    uint64_t initial_ns;
    uint64_t min_ns;
    uint64_t max_ns;
} dfccl_sched_budgets_t;

/* 1 when a comes before b in the global order. */
DFCCL_INLINE DFCCL_HD int dfccl_sched_before(const dfccl_sched_key_t *a, const dfccl_sched_key_t *b)
{
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->comm_key != b->comm_key) return a->comm_key < b->comm_key;
    return a->seq < b->seq;
}

/* The wait a collective may spend in this turn. */
DFCCL_INLINE DFCCL_HD uint64_t dfccl_sched_turn_budget(const dfccl_sched_budgets_t *b,
                                                       uint64_t budget_ns, int is_head)
{
    return is_head && budget_ns < b->head_ns ? b->head_ns : budget_ns;
}

/* A collective's budget after a turn that did (or did not) move data. */
DFCCL_INLINE DFCCL_HD uint64_t dfccl_sched_adapt(const dfccl_sched_budgets_t *b, uint64_t budget_ns,
                                                 int progressed)
{
    uint64_t next = progressed ? 2 * budget_ns : budget_ns / 2;
    return next < b->min_ns ? b->min_ns : next > b->max_ns ? b->max_ns : next;
}

#endif
