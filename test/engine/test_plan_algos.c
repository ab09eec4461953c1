/*
 * test_plan_algos.c - the engine's programs across nodes: the flat ring in
 * node order, the hierarchical allreduce and recursive doubling, on 2 to 9
 * ranks spread over 1 to 3 nodes (evenly and not), run by the executor core
 * over exactly the connections dfccl_plan_send_peers sets up, every output
 * element checked (sim_plans.c). Each topology that gets a wrong result is
 * summed up at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_plans.h"

#define MAX_RANKS 9

typedef struct algo_arg {
    dfccl_algo_t algo;
    dfccl_topo_t topo;
    int          node[MAX_RANKS], local[MAX_RANKS], order[MAX_RANKS], pos[MAX_RANKS];
} algo_arg_t;

static dfccl_status_t build_algo(void *arg, const dfccl_plan_call_t *call, int rank,
                                 dfccl_plan_t *plan)
{
    const algo_arg_t *a = arg;
    return dfccl_plan_build(a->algo, call, &a->topo, rank, plan);
}

static int algo_peers(void *arg, int rank, int *peers, int max)
{
    const algo_arg_t *a = arg;
    return dfccl_plan_send_peers(&a->topo, rank, peers, max);
}

/* Node of each rank: in blocks, round robin, or rank 0 alone on node 0. */
static void layout(int n, int k, int kind, int *node)
{
    for (int r = 0; r < n; r++) {
        if (kind == 0) node[r] = r * k / n;
        else if (kind == 1) node[r] = r % k;
        else node[r] = r == 0 ? 0 : 1 + (r - 1) % (k - 1);
    }
}

static void set_topo(algo_arg_t *a, int n)
{
    int nnodes, uniform;

    dfccl_topo_derive(n, a->node, a->local, a->order, a->pos, &nnodes, &uniform);
    a->topo = (dfccl_topo_t){ n, nnodes, a->node, a->local, a->order, a->pos, uniform };
}

typedef struct tally {
    unsigned long checked;
    int cases, wrong, skipped;
} tally_t;

static const struct { dfccl_dtype_t dtype; dfccl_op_t op; } kinds[] = {
    { DFCCL_INT32, DFCCL_OP_SUM }, { DFCCL_DOUBLE, DFCCL_OP_MAX }, { DFCCL_UINT8, DFCCL_OP_BXOR },
    { DFCCL_FLOAT, DFCCL_OP_PROD }, { DFCCL_INT64, DFCCL_OP_MIN },
};
static const size_t counts[] = { 0, 1, 7, 33, 1001 };
static const uint32_t slot_counts[] = { 2, 3 };

/* Every call one algorithm may serve on one topology; returns the wrong ones. */
static int run_topology(algo_arg_t *a, int n, tally_t *t)
{
    sim_plan_source_t src = { build_algo, algo_peers, a, dfccl_plan_max_steps(n),
                              dfccl_algo_name(a->algo), 0, 0 };
    size_t rs_counts[MAX_RANKS];
    int wrong = 0;

    for (int type = 0; type < DFCCL_COLL_TYPE_COUNT; type++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int in_place = 0; in_place < 2; in_place++)
                for (size_t s = 0; s < sizeof(slot_counts) / sizeof(slot_counts[0]); s++)
                    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
                        sim_plan_case_t pc = { (dfccl_coll_type_t)type, n, counts[c], NULL, in_place,
                                               kinds[k].dtype, kinds[k].op, slot_counts[s],
                                               (unsigned)(t->cases + 1) };
                        if (type == DFCCL_COLL_ALLGATHER) pc.op = DFCCL_OP_NONE;
                        if (type == DFCCL_COLL_REDUCE_SCATTER) {
                            for (int r = 0; r < n; r++) rs_counts[r] = (counts[c] + (size_t)r * 3) % (counts[c] + 1);
                            pc.counts = rs_counts;
                        }
                        switch (sim_plan_run(&src, &pc, &t->checked)) {
                        case SIM_PLAN_RIGHT: t->cases++; break;
                        case SIM_PLAN_WRONG: t->cases++; t->wrong++; wrong++; break;
                        case SIM_PLAN_UNSUPPORTED: t->skipped++; break;
                        }
                    }
    return wrong;
}

int main(void)
{
    tally_t t = { 0 };
    char summary[4096];
    size_t used = 0;

    summary[0] = '\0';
    for (int n = 2; n <= MAX_RANKS; n++)
        for (int k = 1; k <= 3 && k <= n; k++)
            for (int kind = 0; kind < 3; kind++) {
                algo_arg_t a;
                if (kind == 2 && k < 2) continue;
                layout(n, k, kind, a.node);
                if (kind > 0) {   /* the same spread as an earlier layout: once is enough */
                    int prev[MAX_RANKS], same = 0;
                    for (int e = 0; e < kind && !same; e++) {
                        layout(n, k, e, prev);
                        same = memcmp(prev, a.node, sizeof(int) * (size_t)n) == 0;
                    }
                    if (same) continue;
                }
                set_topo(&a, n);
                for (int algo = 0; algo < DFCCL_ALGO_COUNT; algo++) {
                    int wrong;
                    /* on one node the engine never takes the hierarchical
                     * algorithm, and its connections are not made */
                    if (algo == DFCCL_ALGO_HIER && a.topo.nnodes == 1) continue;
                    a.algo = (dfccl_algo_t)algo;
                    if ((wrong = run_topology(&a, n, &t)) == 0 || used >= sizeof(summary) - 200) continue;
                    used += (size_t)snprintf(summary + used, sizeof(summary) - used,
                                             "  %s on %d ranks, nodes", dfccl_algo_name(a.algo), n);
                    for (int r = 0; r < n; r++)
                        used += (size_t)snprintf(summary + used, sizeof(summary) - used, "%s%d",
                                                 r ? "," : " ", a.node[r]);
                    used += (size_t)snprintf(summary + used, sizeof(summary) - used,
                                             " (%s): %d calls wrong\n",
                                             a.topo.uniform ? "uniform" : "uneven", wrong);
                }
            }
    if (t.wrong) fprintf(stderr, "test_plan_algos: wrong results on\n%s", summary);
    printf("test_plan_algos: %d calls, %lu elements checked, %d not served\n", t.cases, t.checked,
           t.skipped);
    printf("test_plan_algos: %d passed, %d failed\n", t.cases - t.wrong, t.wrong);
    return t.wrong ? 1 : 0;
}
