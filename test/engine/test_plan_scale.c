/*
 * test_plan_scale.c - the built-in programs on simulated communicators of up
 * to 4,096 ranks in many node shapes, checked without moving data (the
 * small ones move data in test_plan and test_plan_algos):
 *   - every rank's program fits dfccl_plan_max_steps;
 *   - it sends only to the peers dfccl_plan_send_peers sets up, and those
 *     stay few (ring, hierarchy and recursive doubling: at most
 *     3 + log2(ranks)), so a rank's connections grow with its algorithms'
 *     peers, not with the communicator;
 *   - each connection's sends and receives match: the blocks rank a sends
 *     to rank b, in program order, are the blocks b receives from a, in
 *     its program order (what the executor's FIFOs need of both ends);
 *   - the flat ring enters each node once (one crossing a node).
 * Each pair's two sides are folded into hashes, so memory stays per rank.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/plan.h"
#include "node_shapes.h"

#define MAX_PEERS 64

typedef struct pair_sum {
    uint64_t key;          /* (from << 32 | to) + 1; 0: free */
    uint64_t sent, got;    /* folded block lengths, in program order */
    uint64_t nsent, ngot;
} pair_sum_t;

typedef struct pair_table {
    pair_sum_t *slot;
    size_t      cap;
} pair_table_t;

static int failures, cases;

static uint64_t fold(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static pair_sum_t *pair_at(pair_table_t *t, int from, int to)
{
    uint64_t key = ((uint64_t)(uint32_t)from << 32 | (uint32_t)to) + 1;
    size_t i = (size_t)(fold(0, key) % t->cap);

    while (t->slot[i].key != 0 && t->slot[i].key != key) i = (i + 1) % t->cap;
    t->slot[i].key = key;
    return &t->slot[i];
}

static void fail(const char *what, const char *algo, const char *coll, int n, int shape, int rank)
{
    if (failures++ < 20)
        fprintf(stderr, "FAIL %s: %s %s on %d ranks, shape %d, rank %d\n", what, algo, coll, n,
                shape, rank);
}


static int log2_ceil(int n)
{
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

static void check_one(dfccl_algo_t algo, dfccl_coll_type_t type, int n, int shape,
                      const dfccl_topo_t *topo, dfccl_plan_t *plan, const size_t *counts)
{
    const char *an = dfccl_algo_name(algo), *cn = dfccl_coll_type_name(type);
    dfccl_plan_call_t call = { type, 0, (size_t)n * 2 + 3, type == DFCCL_COLL_REDUCE_SCATTER ? counts : NULL };
    pair_table_t t = { NULL, (size_t)n * MAX_PEERS * 2 + 1 };
    int peers[MAX_PEERS], crossings = 0, served = 1;

    if (type == DFCCL_COLL_ALLGATHER) call.count = 3;
    t.slot = calloc(t.cap, sizeof(pair_sum_t));
    if (t.slot == NULL) { fail("memory", an, cn, n, shape, -1); return; }
    for (int r = 0; r < n && served; r++) {
        int np = dfccl_plan_send_peers(topo, r, peers, MAX_PEERS);
        dfccl_status_t st = dfccl_plan_build(algo, &call, topo, r, plan);
        if (st == DFCCL_ERR_UNSUPPORTED && r == 0) { served = 0; break; }
        if (st != DFCCL_OK) { fail("build", an, cn, n, shape, r); break; }
        if (np < 0 || np > 3 + log2_ceil(n)) fail("too many peers", an, cn, n, shape, r);
        if (plan->nsteps > dfccl_plan_max_steps(n)) fail("too many steps", an, cn, n, shape, r);
        int first_send = 1;
        for (uint32_t i = 0; i < plan->nsteps; i++) {
            const dfccl_step_t *s = &plan->steps[i];
            for (uint32_t k = 0; k < s->send; k++) {
                int to = k == 0 ? plan->peers[i].send : plan->more_peers[s->more_at + k - 1];
                int known = 0;
                for (int q = 0; q < np; q++) known |= peers[q] == to;
                if (!known) { fail("send to a peer not set up", an, cn, n, shape, r); break; }
                pair_sum_t *p = pair_at(&t, r, to);
                p->sent = fold(p->sent, s->count);
                p->nsent++;
                if (algo == DFCCL_ALGO_RING && first_send && topo->node[to] != topo->node[r])
                    crossings++;
                first_send = 0;
            }
            if (s->recv) {
                pair_sum_t *p = pair_at(&t, plan->peers[i].recv, r);
                p->got = fold(p->got, s->count);
                p->ngot++;
            }
        }
    }
    for (size_t i = 0; served && i < t.cap; i++) {
        const pair_sum_t *p = &t.slot[i];
        if (p->key != 0 && (p->sent != p->got || p->nsent != p->ngot)) {
            fail("a connection's two ends differ", an, cn, n, shape, (int)((p->key - 1) >> 32));
            break;
        }
    }
    /* every rank's first send goes to its next rank: one crossing a node */
    if (served && algo == DFCCL_ALGO_RING && n > 1 &&
        crossings != (topo->nnodes > 1 ? topo->nnodes : 0))
        fail("ring crossings", an, cn, n, shape, -1);
    if (served) cases++;
    free(t.slot);
}

int main(void)
{
    static const int sizes[] = { 2, 7, 16, 33, 64, 100, 257, 1024, 4096 };

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int n = sizes[si];
        int *node = malloc(sizeof(int) * (size_t)n), *local = malloc(sizeof(int) * (size_t)n);
        int *order = malloc(sizeof(int) * (size_t)n), *pos = malloc(sizeof(int) * (size_t)n);
        size_t *counts = malloc(sizeof(size_t) * (size_t)n);
        uint32_t cap = dfccl_plan_max_steps(n);
        dfccl_plan_t plan = { .steps = malloc(sizeof(dfccl_step_t) * cap),
                              .peers = malloc(sizeof(dfccl_step_peers_t) * cap), .cap = cap };

        if (!node || !local || !order || !pos || !counts || !plan.steps || !plan.peers) {
            fprintf(stderr, "test_plan_scale: out of memory\n");
            return 1;
        }
        for (int r = 0; r < n; r++) counts[r] = (size_t)(r % 3);
        for (int shape = 0; shape < NODE_SHAPES; shape++) {
            /* 4,096 ranks: the round-robin and the uneven shapes */
            if (n > 1024 && shape != 2 && shape != 4) continue;
            dfccl_topo_t topo = { n, 0, node, local, order, pos, 0 };
            node_shape(shape, n, node);
            dfccl_topo_derive(n, node, local, order, pos, &topo.nnodes, &topo.uniform);
            /* allreduce on every size; allgather and reduce-scatter (rings
             * too) up to 1,024 ranks: time goes with the square of the ranks */
            check_one(DFCCL_ALGO_RING, DFCCL_COLL_ALLREDUCE, n, shape, &topo, &plan, counts);
            check_one(DFCCL_ALGO_HIER, DFCCL_COLL_ALLREDUCE, n, shape, &topo, &plan, counts);
            check_one(DFCCL_ALGO_RD, DFCCL_COLL_ALLREDUCE, n, shape, &topo, &plan, counts);
            if (n <= 1024) {
                check_one(DFCCL_ALGO_RING, DFCCL_COLL_ALLGATHER, n, shape, &topo, &plan, counts);
                check_one(DFCCL_ALGO_RING, DFCCL_COLL_REDUCE_SCATTER, n, shape, &topo, &plan,
                          counts);
            }
        }
        free(node); free(local); free(order); free(pos); free(counts);
        free(plan.steps); free(plan.peers);
    }
    printf("test_plan_scale: %d passed, %d failed\n", cases - (failures > cases ? cases : failures),
           failures);
    return failures ? 1 : 0;
}
