/*
 * test_gpu_plan_files.c - plan files on the GPU side (plan_files.h), without
 * a GPU: every valid plan of test/plans on simulated ranks in several node
 * shapes. Per case: the plans' peers become connections on channel 0 at
 * both ends (the sender's send index and the receiver's receive index of a
 * FIFO meet; one on every channel at one end is one at the other); a peer
 * on the same node is mapped and watched, and both ends place its FIFO at
 * the same offset of the receiver's region; each rank's image is copied
 * to another address (as the upload to device memory does), pointed at
 * there as the kernel's admission does (gpu_plan_image_point), and run by
 * the dependency-driven executor a slice at a time in a random
 * interleaving of ranks; every output element is checked. Also: a table
 * overflow is refused alike for every rank, naming the rank. Plan files
 * named as arguments run too (the planner's: test/planner/gpu_plans.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/host/exec_host.h"
#include "backends/gpu/plan_files.h"
#include "core/exec_cpu.h"
#include "backends/gpu/gpu_shared.h"
#include "sim_ranks.h"

#define MAX_RANKS 8
#define SLOT_BYTES 64
#define NSLOTS 4

static int failures, cases;

#define EXPECT(cond, ...)                                          \
    do {                                                           \
        if (!(cond)) {                                             \
            if (failures++ < 25) {                                 \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                      \
                fprintf(stderr, "\n");                             \
            }                                                      \
        }                                                          \
    } while (0)

typedef struct sim {
    const dfccl_plan_file_t *pf;
    int                n, in_place;
    dfccl_coll_type_t  type;
    dfccl_dtype_t      dtype;
    dfccl_op_t         op;
    size_t             count, esize, in_elems, out_elems;
    int                node[MAX_RANKS], local[MAX_RANKS], order[MAX_RANKS], pos[MAX_RANKS];
    dfccl_topo_t       topo;
    gpu_plan_peers_t   peers;
    gpu_conn_plan_t    conn[MAX_RANKS];
    void              *image[MAX_RANKS];   /* the copies the executors run */
    unsigned char     *send[MAX_RANKS], *recv[MAX_RANKS];
    dfccl_fifo_t       recv_fifo[MAX_RANKS][GPU_CONN0_MAX], send_fifo[MAX_RANKS][GPU_CONN0_MAX];
    dfccl_fifo_ctrl_t  ctrl[MAX_RANKS][GPU_CONN0_MAX];
    unsigned char     *slots;
    dfccl_exec_t       exec[MAX_RANKS];
} sim_t;

static const char *plans_dir(void)
{
    static char dir[4096];
    const char *top = getenv("top_srcdir");
    snprintf(dir, sizeof(dir), "%s/test/plans", top != NULL ? top : ".");
    return dir;
}

/* Channel 0's FIFOs as the table holds them: q's send connection k is p's
 * receive connection for q. */
static int connect(sim_t *s)
{
    size_t fifo = (size_t)NSLOTS * SLOT_BYTES, at = 0;

    s->slots = calloc((size_t)s->n * GPU_CONN0_MAX, fifo);
    if (s->slots == NULL) return -1;
    memset(s->recv_fifo, 0, sizeof(s->recv_fifo));
    memset(s->send_fifo, 0, sizeof(s->send_fifo));
    memset(s->ctrl, 0, sizeof(s->ctrl));
    for (int q = 0; q < s->n; q++)
        for (int k = 0; k < s->conn[q].nsend; k++, at++) {
            int p = s->conn[q].send_peer[k], kr = gpu_conn_plan_recv_index(&s->conn[p], q);
            if (kr < 0 || (k < s->conn[q].nsend_all) != (kr < s->conn[p].nrecv_all)) return -1;
            dfccl_fifo_t f = { &s->ctrl[q][k], (char *)s->slots + at * fifo, SLOT_BYTES, NSLOTS,
                               p, 0, NULL };
            s->send_fifo[q][k] = f;
            f.peer = q;
            s->recv_fifo[p][kr] = f;
        }
    return 0;
}

/* On one node, a plan's connection is mapped and watched, and both ends
 * find its FIFO at one offset of the receiver's region. */
static void check_on_node(sim_t *s, const gpu_plan_peers_t *senders)
{
    for (int q = 0; q < s->n; q++)
        for (int i = s->peers.send_at[q]; i < s->peers.send_at[q + 1]; i++) {
            int p = s->peers.send[i];
            if (s->node[p] != s->node[q]) continue;
            EXPECT(gpu_conn_plan_maps(&s->conn[q], s->node, q, p), "%s: rank %d does not map"
                   " rank %d's region", dfccl_plan_file_name(s->pf), q, p);
            EXPECT(gpu_conn_plan_waits_on(&s->conn[p], s->node, p, q), "%s: rank %d does not"
                   " watch rank %d", dfccl_plan_file_name(s->pf), p, q);
            /* the sender's view of the receiver's list and the receiver's own */
            int k = gpu_plan_peers_recv_index(senders, p, q);
            EXPECT(k >= 0 && gpu_conn_plan_fifo_at(s->n, 3, 1000, 256, k) ==
                   (size_t)gpu_conn_inbox_bytes(s->n, 256) + (3 + (size_t)k) * 1024,
                   "%s: rank %d's FIFO in rank %d's region", dfccl_plan_file_name(s->pf), q, p);
        }
}

static void fill(sim_t *s, int r)
{
    size_t at = s->type == DFCCL_COLL_ALLGATHER ? (size_t)r * s->count : 0;

    memset(s->recv[r], 0xA5, s->out_elems * s->esize);
    sim_fill_input(s->send[r], s->in_elems, s->dtype, s->op, r,
                   s->type == DFCCL_COLL_ALLGATHER ? at : 0);
    if (s->in_place) memcpy(s->recv[r] + at * s->esize, s->send[r], s->in_elems * s->esize);
}

/* Rank r's image, copied elsewhere and pointed at as admission does. */
static int admit(sim_t *s, int r, const gpu_plan_image_t *img)
{
    dfccl_exec_t *x = &s->exec[r];

    if ((s->image[r] = malloc(img->bytes)) == NULL) return -1;
    memcpy(s->image[r], img->mem, img->bytes);
    memset(img->mem, 0x5A, img->bytes);   /* nothing may still point into the original */
    memset(x, 0, sizeof(*x));
    x->nsteps = img->nsteps;
    gpu_plan_image_point(x, s->image[r], img->more_at, img->deps_at, img->graph_at);
    x->part = 0;
    x->nparts = 1;
    x->chunk_elems = dfccl_plan_chunk_elems(SLOT_BYTES, NSLOTS, s->esize);
    x->slice_elems = SLOT_BYTES / s->esize;
    x->sendbuf = s->in_place ? NULL : (char *)s->send[r];
    x->recvbuf = (char *)s->recv[r];
    x->esize = s->esize;
    x->dtype = s->dtype;
    x->op = s->op;
    x->recv_fifo = s->recv_fifo[r];
    x->send_fifo = s->send_fifo[r];
    return 0;
}

static int run(sim_t *s, unsigned seed)
{
    int left = s->n, stuck = 0;

    srand(seed);
    while (left > 0) {
        dfccl_exec_t *x = &s->exec[rand() % s->n];
        if (dfccl_graph_done(x)) continue;
        if (dfccl_exec_host_advance(x, 1) != DFCCL_EXEC_BLOCKED) {
            stuck = 0;
            left = 0;
            for (int r = 0; r < s->n; r++) left += !dfccl_graph_done(&s->exec[r]);
            continue;
        }
        if (++stuck > 64 * s->n) return -1;
    }
    return 0;
}

static void check_outputs(sim_t *s, const char *what)
{
    unsigned char want[8];

    for (int r = 0; r < s->n; r++) {
        size_t lo = s->type == DFCCL_COLL_REDUCE_SCATTER ? (size_t)r * s->count : 0;
        size_t len = s->type == DFCCL_COLL_REDUCE_SCATTER ? s->count : s->out_elems;
        for (size_t k = 0; k < len; k++) {
            if (s->type == DFCCL_COLL_ALLGATHER)
                sim_fill_input(want, 1, s->dtype, s->op, (int)((lo + k) / s->count), lo + k);
            else
                sim_expected(want, s->dtype, s->op, s->n, lo + k);
            if (memcmp(s->recv[r] + k * s->esize, want, s->esize) != 0) {
                EXPECT(0, "%s: rank %d element %zu wrong", what, r, k);
                return;
            }
        }
    }
}

static void one(sim_t *s, const gpu_plan_peers_t *senders, const char *shape, unsigned seed)
{
    size_t counts[MAX_RANKS];
    dfccl_plan_call_t call = { s->type, s->in_place, s->count,
                               s->type == DFCCL_COLL_REDUCE_SCATTER ? counts : NULL };
    char what[256];
    int ok = 1;

    snprintf(what, sizeof(what), "%s on %s, count %zu, %s, in place %d",
             dfccl_plan_file_name(s->pf), shape, s->count, dfccl_dtype_name(s->dtype), s->in_place);
    for (int r = 0; r < s->n; r++) counts[r] = s->count;
    s->esize = dfccl_dtype_size(s->dtype);
    s->in_elems = s->type == DFCCL_COLL_REDUCE_SCATTER ? s->count * (size_t)s->n : s->count;
    s->out_elems = s->type == DFCCL_COLL_ALLGATHER ? s->count * (size_t)s->n : s->in_elems;
    for (int r = 0; r < s->n && ok; r++) {
        gpu_plan_image_t img;
        dfccl_status_t st = gpu_plan_image_make(s->pf, &s->conn[r], &call, r, s->esize,
                                                dfccl_plan_chunk_elems(SLOT_BYTES, NSLOTS, s->esize),
                                                &img);
        if (st == DFCCL_ERR_UNSUPPORTED) return;   /* e.g. not in place */
        s->send[r] = malloc(s->in_elems * s->esize + 1);
        s->recv[r] = malloc(s->out_elems * s->esize + 1);
        ok = st == DFCCL_OK && s->send[r] && s->recv[r];
        EXPECT(ok, "%s: rank %d's image: status %d", what, r, (int)st);
        if (!ok) break;
        if (r == 0) cases++;
        ok = admit(s, r, &img) == 0;
        gpu_plan_image_free(&img);
    }
    if (ok) {
        ok = connect(s) == 0;
        EXPECT(ok, "%s: connections do not meet", what);
    }
    if (ok) {
        check_on_node(s, senders);
        for (int r = 0; r < s->n; r++) fill(s, r);
        ok = run(s, seed) == 0;
        EXPECT(ok, "%s: deadlock", what);
    }
    if (ok) check_outputs(s, what);
    for (int r = 0; r < s->n; r++) {
        free(s->image[r]);
        free(s->send[r]);
        free(s->recv[r]);
        s->image[r] = NULL;
        s->send[r] = s->recv[r] = NULL;
    }
    free(s->slots);
    s->slots = NULL;
}

/* Node shapes: 0 one node, 1 a node per rank, 2 nodes of 2. */
static const char *shape_of(int k, int n, int *node)
{
    static const char *names[] = { "one node", "a node per rank", "nodes of 2" };
    for (int r = 0; r < n; r++) node[r] = k == 0 ? 0 : k == 1 ? r : r / 2;
    return names[k];
}

static void plan_cases(sim_t *s, unsigned *seed)
{
    static const size_t counts[] = { 1, 7, 100, 1000 };
    static const dfccl_dtype_t dtypes[] = { DFCCL_DOUBLE, DFCCL_INT32, DFCCL_INT8, DFCCL_UINT16 };
    const dfccl_plan_file_t *one_plan[1] = { s->pf };
    gpu_plan_peers_t senders;

    s->n = dfccl_plan_file_ranks(s->pf);
    s->type = dfccl_plan_file_type(s->pf);
    s->op = s->type == DFCCL_COLL_ALLGATHER ? DFCCL_OP_NONE : DFCCL_OP_SUM;
    if (s->n > MAX_RANKS || gpu_plan_peers_make(one_plan, 1, s->n, &s->peers) != DFCCL_OK ||
        gpu_plan_peers_make(one_plan, 1, s->n, &senders) != DFCCL_OK) {
        EXPECT(0, "%s: its peers", dfccl_plan_file_name(s->pf));
        return;
    }
    for (int shape = 0; shape < 3; shape++) {
        const char *name = shape_of(shape, s->n, s->node);
        char why[160];
        s->topo = (dfccl_topo_t){ s->n, 1, s->node, s->local, s->order, s->pos, 1 };
        dfccl_topo_derive(s->n, s->node, s->local, s->order, s->pos, &s->topo.nnodes,
                          &s->topo.uniform);
        for (unsigned wants = 0; wants < 4; wants++) {
            EXPECT(gpu_conn_plan_files_fit(&s->topo, wants, &s->peers, why, sizeof(why)),
                   "%s on %s: does not fit: %s", dfccl_plan_file_name(s->pf), name, why);
            for (int r = 0; r < s->n; r++)
                gpu_conn_plan_make(&s->topo, r, wants, &s->peers, &s->conn[r]);
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
                for (int in_place = 0; in_place < 2; in_place++) {
                    s->count = counts[ci];
                    s->in_place = in_place;
                    s->dtype = dtypes[(ci + wants + (unsigned)in_place) % 4];
                    one(s, &senders, name, (*seed)++);
                }
        }
    }
    gpu_plan_peers_free(&s->peers);
    gpu_plan_peers_free(&senders);
}

/* A rank with more plan peers than channel 0 holds: refused for all. */
static void check_overflow(void)
{
    enum { N = 24 };
    int node[N], local[N], order[N], pos[N], at[N + 1], list[N], rat[N + 1], rlist[N];
    gpu_plan_peers_t pp = { N, at, list, rat, rlist };
    dfccl_topo_t t = { N, 1, node, local, order, pos, 1 };
    char why[160] = "";

    /* rank 0 sends to every other rank; each of them receives from rank 0 */
    at[0] = rat[0] = rat[1] = 0;
    for (int r = 0; r < N; r++) {
        node[r] = r / 4;
        at[r + 1] = N - 1;
        if (r > 0) rat[r + 1] = r;
        if (r > 0) list[r - 1] = r;
        if (r > 0) rlist[r - 1] = 0;
    }
    dfccl_topo_derive(N, node, local, order, pos, &t.nnodes, &t.uniform);
    EXPECT(!gpu_conn_plan_files_fit(&t, 0, &pp, why, sizeof(why)) && strstr(why, "rank 0"),
           "23 plan peers of rank 0 were taken (%s)", why);
}

/* Loads and runs one plan file (path). */
static void plan_file_cases(sim_t *s, const char *path, unsigned *seed)
{
    char why[512];
    dfccl_plan_file_t *pf = NULL;

    if (dfccl_plan_file_load(path, &pf, why, sizeof(why)) != DFCCL_OK) {
        EXPECT(0, "%s does not load: %s", path, why);
        return;
    }
    s->pf = pf;
    plan_cases(s, seed);
    dfccl_plan_file_free(pf);
}

/* Arguments: further plan files (the planner's, test/planner/gpu_plans.sh),
 * run after those of test/plans. */
int main(int argc, char **argv)
{
    static const char *files[] = { "allreduce_1.json", "allreduce_pair_2.json",
                                   "allreduce_relay_2.json", "ring_allreduce_4.json",
                                   "ring_reduce_scatter_4.json", "allgather_direct_4.json",
                                   "allgather_recv_first_4.json" };
    sim_t *s = calloc(1, sizeof(*s));
    unsigned seed = 1;

    if (s == NULL) return 1;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", plans_dir(), files[i]);
        plan_file_cases(s, path, &seed);
    }
    for (int i = 1; i < argc; i++) plan_file_cases(s, argv[i], &seed);
    check_overflow();
    free(s);
    printf("test_gpu_plan_files: %d cases, %d failed\n", cases, failures);
    return failures || cases == 0 ? 1 : 0;
}
