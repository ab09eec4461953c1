/*
 * test_plan.c - the ring plans and the executor core, all ranks in one
 * process over in-memory FIFOs, stepped one slice at a time in a random
 * interleaving. Every step gives up whenever its peer is not ready and is
 * resumed later, so this also checks that a collective preempted at any
 * slice boundary completes correctly. With PARTS > 1 every rank runs the
 * collective as several executors over FIFOs of their own, each moving its
 * part of every step, interleaved at random: the GPU's channels. The ranks
 * sit on simulated nodes of several shapes (numbered round-robin, in blocks,
 * unevenly): the ring runs node by node whatever the numbering, and on
 * communicators of up to 4,096 ranks its order is checked alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/host/exec_host.h"
#include "sim_ranks.h"

#define MAX_RANKS 9
#define MAX_RANKS_BIG 4096
#define SLOT_BYTES 64   /* tiny slots: many slices, many preemption points */
static uint32_t NSLOTS = 2;  /* varied by main: 2 (the least that works) to 8 */
#define MAX_NSLOTS 8
#define MAX_PARTS 3
static uint32_t PARTS = 1;   /* varied by main: 1 or MAX_PARTS */

typedef struct sim_rank_state {
    dfccl_step_t  steps[2 * MAX_RANKS + 1];
    dfccl_exec_t  exec[MAX_PARTS];
    unsigned char *send, *recv;
} sim_rank_state_t;

static int failures, checks;

static void report(const char *what, dfccl_coll_type_t type, int n, size_t count, int in_place,
                   dfccl_dtype_t dt, dfccl_op_t op, int rank, size_t index)
{
    if (failures++ < 20)
        fprintf(stderr, "FAIL %s: %s n=%d count=%zu in_place=%d %s %s rank %d index %zu\n", what,
                dfccl_coll_type_name(type), n, count, in_place, dfccl_dtype_name(dt),
                dfccl_op_name(op), rank, index);
}

/* Runs one collective on n simulated ranks and checks every output element. */
static void run_case(dfccl_coll_type_t type, int n, const int *node, size_t count, int in_place,
                     dfccl_dtype_t dt, dfccl_op_t op, unsigned seed)
{
    size_t esize = dfccl_dtype_size(dt), counts[MAX_RANKS], displ[MAX_RANKS + 1], in_elems, out_elems;
    dfccl_fifo_ctrl_t ctrl[MAX_RANKS][MAX_PARTS];
    unsigned char *slots = calloc((size_t)n * MAX_PARTS * MAX_NSLOTS, SLOT_BYTES);
    dfccl_fifo_t recv_fifo[MAX_RANKS][MAX_PARTS], send_fifo[MAX_RANKS][MAX_PARTS];
    sim_rank_state_t st[MAX_RANKS];
    unsigned char expect[8];
    int done = 0, r, nexec;
    uint32_t parts, p;

    memset(ctrl, 0, sizeof(ctrl));
    displ[0] = 0;
    for (r = 0; r < n; r++) {
        counts[r] = type == DFCCL_COLL_REDUCE_SCATTER ? (count + (size_t)r * 3) % (count + 1) : count;
        displ[r + 1] = displ[r] + counts[r];
    }
    parts = dfccl_plan_parts_allowed(type, in_place, counts, n) ? PARTS : 1;
    nexec = n * (int)parts;
    in_elems  = type == DFCCL_COLL_ALLREDUCE ? count
              : type == DFCCL_COLL_ALLGATHER ? count : displ[n];
    out_elems = type == DFCCL_COLL_ALLREDUCE ? count
              : type == DFCCL_COLL_ALLGATHER ? count * (size_t)n : displ[n];
    for (r = 0; r < n; r++) {
        /* FIFO (r, p) lives at rank r and carries part p from the ring's previous rank */
        int prev, next;
        dfccl_plan_ring_peers(n, node, r, &prev, &next);
        for (p = 0; p < parts; p++) {
            size_t mine = ((size_t)r * MAX_PARTS + p) * NSLOTS, theirs = ((size_t)next * MAX_PARTS + p) * NSLOTS;
            recv_fifo[r][p] = (dfccl_fifo_t){ &ctrl[r][p], (char *)slots + mine * SLOT_BYTES,
                                              SLOT_BYTES, NSLOTS, prev, 0 };
            send_fifo[r][p] = (dfccl_fifo_t){ &ctrl[next][p], (char *)slots + theirs * SLOT_BYTES,
                                              SLOT_BYTES, NSLOTS, next, 0 };
        }
        st[r].send = malloc(in_elems * esize + 1);
        st[r].recv = malloc(out_elems * esize + 1);
        memset(st[r].recv, 0xA5, out_elems * esize);   /* poison */
        if (type == DFCCL_COLL_ALLGATHER)
            sim_fill_input(st[r].send, count, dt, op, r, (size_t)r * count);
        else
            sim_fill_input(st[r].send, in_elems, dt, op, r, 0);
        if (in_place) {
            size_t at = type == DFCCL_COLL_ALLGATHER ? (size_t)r * count : 0;
            memcpy(st[r].recv + at * esize, st[r].send, in_elems * esize);
        }
        uint64_t max_block;
        uint32_t nsteps;
        if (dfccl_plan_ring(type, r, n, node, in_place, count, counts, st[r].steps, &nsteps,
                            &max_block)) {
            report("plan", type, n, count, in_place, dt, op, r, 0);
            goto out;
        }
        for (p = 0; p < parts; p++) {
            dfccl_exec_t *x = &st[r].exec[p];
            memset(x, 0, sizeof(*x));
            x->steps = st[r].steps;
            x->nsteps = nsteps;
            x->sendbuf = in_place ? NULL : (char *)st[r].send;
            x->recvbuf = (char *)st[r].recv;
            x->esize = esize;
            x->slice_elems = SLOT_BYTES / esize;
            x->chunk_elems = dfccl_plan_chunk_elems(SLOT_BYTES, NSLOTS, esize);
            x->part = p;
            x->nparts = parts;
            x->nrounds = parts == 1 ? (max_block + x->chunk_elems - 1) / x->chunk_elems
                                    : dfccl_exec_part_rounds(x);
            x->dtype = dt;
            x->op = op;
            x->recv_fifo = &recv_fifo[r][p];
            x->send_fifo = &send_fifo[r][p];
        }
    }
    /* random interleaving, one slice per turn */
    srand(seed);
    int stuck_turns = 0;
    while (done < nexec) {
        done = 0;
        for (r = 0; r < n; r++)
            for (p = 0; p < parts; p++) done += dfccl_exec_done(&st[r].exec[p]);
        if (done == nexec) break;
        int e = rand() % nexec;
        dfccl_exec_t *x = &st[e / (int)parts].exec[e % (int)parts];
        r = e / (int)parts;
        if (dfccl_exec_done(x)) continue;
        if (dfccl_exec_host_advance(x, 1) == DFCCL_EXEC_BLOCKED) {
            if (++stuck_turns > 1000 * nexec) {
                report("deadlock", type, n, count, in_place, dt, op, r, x->step);
                goto out;
            }
        } else {
            stuck_turns = 0;
        }
    }
    for (r = 0; r < n; r++) {
        size_t k, lo = 0, len = out_elems;
        if (type == DFCCL_COLL_REDUCE_SCATTER) { lo = displ[r]; len = counts[r]; }
        for (k = 0; k < len; k++) {
            const unsigned char *got = st[r].recv + k * esize;
            size_t index = lo + k;
            if (type == DFCCL_COLL_ALLGATHER) {
                sim_fill_input(expect, 1, dt, op, (int)(index / count), index);
            } else {
                sim_expected(expect, dt, op, n, index);
            }
            checks++;
            if (memcmp(got, expect, esize) != 0) {
                report("value", type, n, count, in_place, dt, op, r, index);
                break;
            }
        }
        /* MPI's in-place reduce-scatter leaves the rest of the buffer as the
         * caller wrote it */
        if (type == DFCCL_COLL_REDUCE_SCATTER && in_place) {
            for (k = counts[r]; k < displ[n]; k++) {
                checks++;
                if (memcmp(st[r].recv + k * esize, st[r].send + k * esize, esize) != 0) {
                    report("input kept", type, n, count, in_place, dt, op, r, k);
                    break;
                }
            }
        }
    }
out:
    for (r = 0; r < n; r++) { free(st[r].send); free(st[r].recv); }
    free(slots);
}

/* Node shape k of n ranks (numbered from 0 by first rank), or NULL (one
 * node) for k 0: round-robin over 2 and 3 nodes, blocks of 2, and uneven
 * nodes in mixed order. */
#define NSHAPES 5
static const int *node_shape(int k, int n, int *node)
{
    int label[MAX_RANKS_BIG], map[MAX_RANKS_BIG], next = 0;

    if (k == 0) return NULL;
    for (int r = 0; r < n; r++) {
        label[r] = k == 1 ? r % 2 : k == 2 ? r % 3 : k == 3 ? r / 2 : (r * r + 3 * r) % 4;
        map[r] = -1;
    }
    for (int r = 0; r < n; r++) {
        if (map[label[r]] < 0) map[label[r]] = next++;
        node[r] = map[label[r]];
    }
    return node;
}

/* The ring on up to 4,096 ranks in many node shapes: one cycle through every
 * rank, each node's ranks one after the other (so the ring crosses nodes once
 * a node), and the plan's length and blocks as the ring's. */
static int check_ring_order(void)
{
    static const int sizes[] = { 1, 2, 3, 31, 32, 33, 40, 64, 100, 257, 1024, 4096 };
    static int node[MAX_RANKS_BIG], seen[MAX_RANKS_BIG];
    static dfccl_step_t steps[2 * MAX_RANKS_BIG + 1];
    int bad = 0, cases = 0;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int k = 0; k < NSHAPES + 2; k++) {
            int n = sizes[i], nnodes = 1, crossings = 0, r = 0;
            const int *nd;
            if (k < NSHAPES) {
                nd = node_shape(k, n, node);
            } else {   /* nodes of 8 and of 5 ranks, numbered round-robin across them */
                int per = k == NSHAPES ? 8 : 5, groups = (n + per - 1) / per;
                for (int q = 0; q < n; q++) node[q] = q % groups;
                nd = node;
            }
            for (int q = 0; nd != NULL && q < n; q++)
                if (nd[q] + 1 > nnodes) nnodes = nd[q] + 1;
            memset(seen, 0, sizeof(int) * (size_t)n);
            for (int hop = 0; hop < n; hop++) {
                int prev, next, back, fwd;
                dfccl_plan_ring_peers(n, nd, r, &prev, &next);
                dfccl_plan_ring_peers(n, nd, next, &back, &fwd);
                if (seen[r]++ || back != r || next < 0 || next >= n) { bad++; break; }
                if (nd != NULL && nd[next] != nd[r]) crossings++;
                r = next;
            }
            if (r != 0 || crossings != (nnodes > 1 ? nnodes : 0)) bad++;
            /* the plan of the rank in the middle: an out-of-place allreduce's
             * copy of its input, then 2 (n - 1) steps */
            uint32_t nsteps = 0;
            uint64_t max_block = 0;
            size_t count = (size_t)n * 3 + 1;
            if (dfccl_plan_ring(DFCCL_COLL_ALLREDUCE, n / 2, n, nd, 0, count, NULL, steps, &nsteps,
                                &max_block) != DFCCL_OK ||
                nsteps != 2u * (uint32_t)(n - 1) + 1u ||
                max_block != (count + (size_t)n - 1) / (size_t)n)
                bad++;
            cases++;
            if (bad) {
                fprintf(stderr, "FAIL ring order: %d ranks, shape %d\n", n, k);
                return -1;
            }
        }
    checks += cases;
    return cases;
}

int main(void)
{
    static const size_t counts[] = { 0, 1, 2, 7, 33, 100 };
    unsigned seed = 1;
    int cases = 0, node[MAX_RANKS_BIG];

    int order_cases = check_ring_order();
    if (order_cases < 0) failures++;
    else cases += order_cases;
    static const uint32_t slot_counts[] = { 2, 3, 8 };
    for (PARTS = 1; PARTS <= MAX_PARTS; PARTS += MAX_PARTS - 1)
    for (int n = 1; n <= MAX_RANKS; n++)
      for (int shape = 0; shape < NSHAPES; shape++)
      for (size_t sc = 0; sc < sizeof(slot_counts) / sizeof(slot_counts[0]); sc++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int in_place = 0; in_place < 2; in_place++) {
                const int *nd = node_shape(shape, n, node);
                /* the one-node cases at every slot count; the node shapes (the
                 * ring's order alone differs) at the fewest slots */
                if (shape > 0 && (sc > 0 || n < 3)) continue;
                NSLOTS = slot_counts[sc];
                for (int dt = 0; dt < DFCCL_DTYPE_COUNT; dt++) {
                    run_case(DFCCL_COLL_ALLGATHER, n, nd, counts[c], in_place, (dfccl_dtype_t)dt,
                             DFCCL_OP_NONE, seed++);
                    cases++;
                    for (int op = 0; op < DFCCL_OP_COUNT; op++) {
                        if (!dfccl_op_supported((dfccl_op_t)op, (dfccl_dtype_t)dt)) continue;
                        run_case(DFCCL_COLL_ALLREDUCE, n, nd, counts[c], in_place,
                                 (dfccl_dtype_t)dt, (dfccl_op_t)op, seed++);
                        run_case(DFCCL_COLL_REDUCE_SCATTER, n, nd, counts[c], in_place,
                                 (dfccl_dtype_t)dt, (dfccl_op_t)op, seed++);
                        cases += 2;
                    }
                }
            }
    printf("test_plan: %d cases, %d elements checked\n", cases, checks);
    printf("test_plan: %d passed, %d failed\n", cases - failures, failures);
    return failures ? 1 : 0;
}
