/*
 * test_gpu_plans.c - the GPU side's programs (conn_plan.h,
 * gpu_conn_plan_program: the ring node by node, and the hierarchical
 * allreduce across nodes) run as the daemon kernel runs them, without a
 * GPU: on every simulated rank and channel, the chain executor (exec.h, as
 * the kernel's ring path) moves its part of every step, over that channel's
 * FIFOs, one per connection each way as the ranks' connection plans number
 * them (the sender's send index and the receiver's receive index of one
 * FIFO must meet; the latency algorithm's partners on channel 0 alone).
 * Allreduce runs with the hierarchical algorithm's connections, with the
 * latency algorithm's (recursive doubling among the nodes), and with both
 * (auto: the latency algorithm for the small counts). Ranks and channels are stepped a slice at a time in a
 * random interleaving; a sweep in which nothing moves is a deadlock. Every
 * output element is checked, in many node shapes, sizes, element types,
 * in place and not, with 1 to 3 channels and 2 or 4 slots per FIFO.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/host/exec_host.h"
#include "backends/gpu/conn_plan.h"
#include "core/plan.h"
#include "sim_ranks.h"

#define MAX_RANKS 16
#define MAX_PARTS 3
#define SLOT_BYTES 64   /* tiny slots: many slices and rounds */

static int failures, cases, hier_cases, rd_cases;

typedef struct sim {
    int               n, nparts;
    unsigned          wants;          /* GPU_CONN_WANT_* */
    dfccl_coll_type_t type;
    int               in_place;
    int               vector_parts;   /* the parts cut from the vector (as collective.c) */
    dfccl_dtype_t     dtype;
    dfccl_op_t        op;
    uint32_t          nslots;
    size_t            count, esize, counts[MAX_RANKS], displ[MAX_RANKS + 1], in_elems, out_elems;
    dfccl_topo_t      topo;
    int               local[MAX_RANKS], order[MAX_RANKS], pos[MAX_RANKS];
    gpu_conn_plan_t   plan[MAX_RANKS];
    dfccl_step_t     *steps[MAX_RANKS];
    uint32_t          nsteps[MAX_RANKS];
    unsigned char    *send[MAX_RANKS], *recv[MAX_RANKS];
    /* [rank][channel][connection], as the kernel's table holds them */
    dfccl_fifo_t      recv_fifo[MAX_RANKS][MAX_PARTS][GPU_CONN0_MAX];
    dfccl_fifo_t      send_fifo[MAX_RANKS][MAX_PARTS][GPU_CONN0_MAX];
    dfccl_fifo_ctrl_t ctrl[MAX_RANKS][MAX_PARTS][GPU_CONN0_MAX];   /* at the sender */
    unsigned char    *slots;
    dfccl_exec_t      exec[MAX_RANKS][MAX_PARTS];
} sim_t;

static void say(const sim_t *s, const char *shape, int rank, const char *what)
{
    if (failures++ < 25)
        fprintf(stderr, "FAIL %s: %s n=%d shape %s count=%zu in_place=%d %s nparts=%d nslots=%u"
                        " hier=%d rd=%d rank %d\n", what, dfccl_coll_type_name(s->type), s->n,
                shape, s->count, s->in_place, dfccl_dtype_name(s->dtype), s->nparts, s->nslots,
                s->plan[0].hier, s->plan[0].rd, rank);
}

/* FIFO (q, channel c, send connection k) lives at q's peer, which receives
 * it at its own index for q; a connection on every channel at one end is
 * one at the other. */
static int connect(sim_t *s)
{
    size_t fifo = (size_t)s->nslots * SLOT_BYTES, at = 0;

    s->slots = calloc((size_t)s->n * MAX_PARTS * GPU_CONN0_MAX, fifo);
    if (s->slots == NULL) return -1;
    memset(s->recv_fifo, 0, sizeof(s->recv_fifo));
    memset(s->send_fifo, 0, sizeof(s->send_fifo));
    memset(s->ctrl, 0, sizeof(s->ctrl));
    for (int q = 0; q < s->n; q++)
        for (int k = 0; k < s->plan[q].nsend; k++) {
            int p = s->plan[q].send_peer[k], kr = gpu_conn_plan_recv_index(&s->plan[p], q);
            int every = k < s->plan[q].nsend_all;
            if (kr < 0 || every != (kr < s->plan[p].nrecv_all)) return -1;
            for (int c = 0; c < (every ? s->nparts : 1); c++, at++) {
                dfccl_fifo_t f = { &s->ctrl[q][c][k], (char *)s->slots + at * fifo, SLOT_BYTES,
                                   s->nslots, p, 0, NULL };
                s->send_fifo[q][c][k] = f;
                f.peer = q;
                s->recv_fifo[p][c][kr] = f;
            }
        }
    return 0;
}

static void fill(sim_t *s, int r)
{
    size_t at = s->type == DFCCL_COLL_ALLGATHER ? (size_t)r * s->count : 0;

    memset(s->recv[r], 0xA5, s->out_elems * s->esize);
    if (s->type == DFCCL_COLL_ALLGATHER)
        sim_fill_input(s->send[r], s->count, s->dtype, s->op, r, at);
    else
        sim_fill_input(s->send[r], s->in_elems, s->dtype, s->op, r, 0);
    if (s->in_place) memcpy(s->recv[r] + at * s->esize, s->send[r], s->in_elems * s->esize);
}

/* What the kernel's admission sets (gpu_admission.cuh), on the host. */
static void init_exec(sim_t *s, int r, int c)
{
    dfccl_exec_t *x = &s->exec[r][c];

    memset(x, 0, sizeof(*x));
    x->steps = s->steps[r];
    x->nsteps = s->nsteps[r];
    x->part = (uint32_t)c;
    x->nparts = (uint32_t)s->nparts;
    x->chunk_elems = dfccl_plan_chunk_elems(SLOT_BYTES, s->nslots, s->esize);
    x->slice_elems = SLOT_BYTES / s->esize;
    x->sendbuf = s->in_place ? NULL : (char *)s->send[r];
    x->recvbuf = (char *)s->recv[r];
    x->esize = s->esize;
    x->dtype = s->dtype;
    x->op = s->op;
    x->recv_fifo = s->recv_fifo[r][c];
    x->send_fifo = s->send_fifo[r][c];
    if (s->vector_parts) dfccl_exec_cut_vector(x, s->count);
    x->nrounds = dfccl_exec_part_rounds(x);
}

static int all_done(sim_t *s)
{
    for (int r = 0; r < s->n; r++)
        for (int c = 0; c < s->nparts; c++)
            if (!dfccl_exec_done(&s->exec[r][c])) return 0;
    return 1;
}

static int run(sim_t *s, const char *shape, unsigned seed)
{
    int units = s->n * s->nparts, stuck = 0;

    srand(seed);
    while (!all_done(s)) {
        int u = rand() % units, moved = 0;
        dfccl_exec_t *x = &s->exec[u / s->nparts][u % s->nparts];
        if (dfccl_exec_done(x)) continue;
        if (dfccl_exec_host_advance(x, 1) != DFCCL_EXEC_BLOCKED) {
            stuck = 0;
            continue;
        }
        if (++stuck < 4 * units) continue;
        for (int v = 0; v < units; v++) {
            dfccl_exec_t *y = &s->exec[v / s->nparts][v % s->nparts];
            if (!dfccl_exec_done(y) && dfccl_exec_host_advance(y, 1) != DFCCL_EXEC_BLOCKED)
                moved = 1;
        }
        if (!moved) {
            say(s, shape, u / s->nparts, "deadlock");
            return -1;
        }
        stuck = 0;
    }
    return 0;
}

static int check_outputs(sim_t *s, const char *shape)
{
    unsigned char want[8];

    for (int r = 0; r < s->n; r++) {
        size_t lo = s->type == DFCCL_COLL_REDUCE_SCATTER ? s->displ[r] : 0;
        size_t len = s->type == DFCCL_COLL_REDUCE_SCATTER ? s->counts[r] : s->out_elems;
        for (size_t k = 0; k < len; k++) {
            if (s->type == DFCCL_COLL_ALLGATHER)
                sim_fill_input(want, 1, s->dtype, s->op, (int)((lo + k) / s->count), lo + k);
            else
                sim_expected(want, s->dtype, s->op, s->n, lo + k);
            if (memcmp(s->recv[r] + k * s->esize, want, s->esize) != 0) {
                say(s, shape, r, "wrong value");
                return -1;
            }
        }
    }
    return 0;
}

static void one(sim_t *s, const int *node, const char *shape, unsigned seed)
{
    dfccl_plan_call_t call = { s->type, s->in_place, s->count,
                               s->type == DFCCL_COLL_REDUCE_SCATTER ? s->counts : NULL };
    dfccl_algo_t algo;
    int ok = 1;

    cases++;
    s->esize = dfccl_dtype_size(s->dtype);
    s->displ[0] = 0;
    for (int r = 0; r < s->n; r++) {
        s->counts[r] = s->type == DFCCL_COLL_REDUCE_SCATTER ? s->count + (size_t)(r % 3) : s->count;
        s->displ[r + 1] = s->displ[r] + s->counts[r];
    }
    s->in_elems = s->type == DFCCL_COLL_REDUCE_SCATTER ? s->displ[s->n] : s->count;
    s->out_elems = s->type == DFCCL_COLL_ALLREDUCE ? s->count
                 : s->type == DFCCL_COLL_ALLGATHER ? s->count * (size_t)s->n : s->displ[s->n];
    s->topo = (dfccl_topo_t){ s->n, 1, node, s->local, s->order, s->pos, 1 };
    dfccl_topo_derive(s->n, node, s->local, s->order, s->pos, &s->topo.nnodes, &s->topo.uniform);
    for (int r = 0; r < s->n; r++) gpu_conn_plan_make(&s->topo, r, s->wants, NULL, &s->plan[r]);
    /* as collective.c chooses */
    /* with both (auto): the latency algorithm for the small counts */
    algo = s->type != DFCCL_COLL_ALLREDUCE ? DFCCL_ALGO_RING
         : s->plan[0].hier && !(s->plan[0].rd && s->count <= 7) ? DFCCL_ALGO_HIER
         : s->plan[0].rd ? DFCCL_ALGO_RD : DFCCL_ALGO_RING;
    hier_cases += algo == DFCCL_ALGO_HIER;
    rd_cases += algo == DFCCL_ALGO_RD;
    s->vector_parts = algo == DFCCL_ALGO_HIER;
    if (!dfccl_plan_parts_allowed(s->type, s->in_place, s->counts, s->n) || algo == DFCCL_ALGO_RD)
        s->nparts = 1;
    for (int r = 0; r < s->n && ok; r++) {
        uint64_t max_block;
        s->steps[r] = calloc(dfccl_plan_max_steps(s->n), sizeof(dfccl_step_t));
        s->send[r] = malloc(s->in_elems * s->esize + 1);
        s->recv[r] = malloc(s->out_elems * s->esize + 1);
        if (s->steps[r] == NULL || s->send[r] == NULL || s->recv[r] == NULL ||
            gpu_conn_plan_program(&s->plan[r], &s->topo, r, algo, &call, s->steps[r],
                                  &s->nsteps[r], &max_block) != DFCCL_OK) {
            say(s, shape, r, "program");
            ok = 0;
        }
    }
    if (ok && connect(s) != 0) {
        say(s, shape, -1, "connections do not meet");
        ok = 0;
    }
    for (int r = 0; r < s->n && ok; r++) {
        fill(s, r);
        for (int c = 0; c < s->nparts; c++) init_exec(s, r, c);
    }
    if (ok && run(s, shape, seed) == 0) check_outputs(s, shape);
    for (int r = 0; r < s->n; r++) {
        free(s->steps[r]);
        free(s->send[r]);
        free(s->recv[r]);
        s->steps[r] = NULL;
        s->send[r] = s->recv[r] = NULL;
    }
    free(s->slots);
    s->slots = NULL;
}

/* Node shapes of n ranks: labels numbered by first rank. */
static const char *shape_of(int k, int n, int *node)
{
    static const char *names[] = { "one node", "nodes of 2", "nodes of 4", "2 round-robin",
                                   "3 round-robin", "uneven" };
    int map[MAX_RANKS], next = 0;

    for (int i = 0; i < MAX_RANKS; i++) map[i] = -1;
    for (int r = 0; r < n; r++) {
        int label = k == 0 ? 0 : k == 1 ? r / 2 : k == 2 ? r / 4 : k == 3 ? r % 2
                  : k == 4 ? r % 3 : (r < n / 2 ? 0 : 1 + r % 2);
        if (map[label] < 0) map[label] = next++;
        node[r] = map[label];
    }
    return names[k];
}

int main(void)
{
    static const int sizes[] = { 1, 2, 3, 4, 6, 8, 9, 12, 16 };
    static const size_t counts[] = { 1, 7, 100, 1000 };
    static const dfccl_coll_type_t types[] = { DFCCL_COLL_ALLREDUCE, DFCCL_COLL_ALLGATHER,
                                               DFCCL_COLL_REDUCE_SCATTER };
    static const dfccl_dtype_t dtypes[] = { DFCCL_DOUBLE, DFCCL_INT32, DFCCL_INT64, DFCCL_INT8,
                                            DFCCL_UINT16 };
    static const dfccl_op_t ops[] = { DFCCL_OP_SUM, DFCCL_OP_MAX, DFCCL_OP_SUM };
    sim_t *s = calloc(1, sizeof(*s));
    unsigned seed = 1;

    if (s == NULL) return 1;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (int shape = 0; shape < 6; shape++) {
            int node[MAX_RANKS];
            const char *name = shape_of(shape, sizes[si], node);
            for (int tt = 0; tt < 5; tt++)
                for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
                    for (int in_place = 0; in_place < 2; in_place++) {
                        /* 3: allreduce again, with the latency algorithm;
                         * 4: with both algorithms' connections (auto) */
                        int t = tt % 3;
                        s->wants = tt < 3 ? GPU_CONN_WANT_HIER : tt == 3 ? GPU_CONN_WANT_RD
                                 : GPU_CONN_WANT_HIER | GPU_CONN_WANT_RD;
                        s->n = sizes[si];
                        s->type = types[t];
                        s->dtype = dtypes[(t + ci + (size_t)in_place * 3) % 5];
                        s->op = ops[t];
                        s->count = counts[ci];
                        s->in_place = in_place;
                        s->nparts = 1 + (int)((ci + (size_t)in_place) % MAX_PARTS);
                        s->nslots = ci % 2 ? 2 : 4;
                        one(s, node, name, seed++);
                    }
        }
    free(s);
    if (hier_cases == 0 || rd_cases == 0) {
        fprintf(stderr, "FAIL no case ran the hierarchical allreduce or the latency algorithm\n");
        failures++;
    }
    printf("test_gpu_plans: %d passed, %d failed (%d hierarchical, %d recursive doubling among"
           " nodes)\n", cases - (failures > cases ? cases : failures), failures, hier_cases,
           rd_cases);
    return failures ? 1 : 0;
}
