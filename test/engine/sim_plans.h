/*
 * sim_plans.h - any plan (built-in algorithm or plan file) run by the
 * executor core on all ranks of one process, each rank with one FIFO per
 * (peer, direction) its plans use, stepped a slice at a time in a random
 * interleaving; every output element checked against a reference.
 */
#ifndef DFCCL_SIM_PLANS_H
#define DFCCL_SIM_PLANS_H

#include <stddef.h>
#include <stdint.h>
#include "core/plan.h"

#define SIM_PLANS_MAX_RANKS 16

/* Where the programs come from. */
typedef struct sim_plan_source {
    /* rank's program for the call into plan (capacity plan->cap) */
    dfccl_status_t (*build)(void *arg, const dfccl_plan_call_t *call, int rank, dfccl_plan_t *plan);
    /* the ranks rank sends to, sorted: its connections (at most max) */
    int (*send_peers)(void *arg, int rank, int *peers, int max);
    void       *arg;
    uint32_t    max_steps;
    const char *label;   /* names the source in failure lines */
    uint32_t    max_more, max_deps;   /* room for the programs' lists (plan.h) */
} sim_plan_source_t;

typedef struct sim_plan_case {
    dfccl_coll_type_t type;
    int               n;
    size_t            count;     /* allreduce: elements; else per rank */
    const size_t     *counts;    /* reduce-scatter: per rank, or NULL: count each */
    int               in_place;
    dfccl_dtype_t     dtype;
    dfccl_op_t        op;
    uint32_t          nslots;    /* FIFO slots (2 or more) */
    unsigned          seed;
} sim_plan_case_t;

typedef enum {
    SIM_PLAN_RIGHT = 0,
    SIM_PLAN_WRONG = 1,         /* printed to stderr */
    SIM_PLAN_UNSUPPORTED = 2    /* the source does not serve the call */
} sim_plan_result_t;

/* Runs one call; adds the elements checked to *checked. */
sim_plan_result_t sim_plan_run(const sim_plan_source_t *src, const sim_plan_case_t *c,
                               unsigned long *checked);
/* Failure lines printed over all calls: at most this many. */
void sim_plan_quiet_after(int max_lines);

#endif
